"""A server's JSON reply is outside input like any file: its bytes are counted while it
streams (a server, or something posing as one, cannot make the client hold more than the
file limit), the text goes through the one bounded reader (nesting, nodes, digits), and
the whole exchange has one deadline (`--timeout`): httpx bounds each read on its own, so
without it a reply trickling in a byte at a time would never end."""

from __future__ import annotations

import argparse
import asyncio
import math
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import attrs
import httpx

from configbags.runtime.errors import ConfigError
from configbags.runtime.limits import LIMITS, over
from configbags.runtime.yamlsafe import load_json


class ReplyError(ConfigError):
    """A reply that is too large, not UTF-8 or not JSON within the limits."""


class NoAnswer(ConfigError):
    """No complete answer within the deadline."""


MAX_TIMEOUT_S = 600.0


_SHOWN_PREFIX = re.compile(r"^(?:https?:)?/*", re.IGNORECASE)


def shown_url(url: str) -> str:
    """`url` as a message may print it: a password or token in its user part
    (`http://u:PW@host`) never reaches a log. Whatever the text's shape (`http:/u:PW@h`,
    `u:PW@h`, `//u:PW@h`, `https:u:PW@h`: refused as URLs, and shown in the refusal),
    everything before its last `@` is masked but a leading http(s) scheme and slashes."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if sep and "@" in authority:
        return f"{scheme}://***@{authority.rpartition('@')[2]}{slash}{path}"
    if "@" not in url:
        return url
    prefix = _SHOWN_PREFIX.match(url)
    kept = prefix.group() if prefix else ""
    return f"{kept}***@{url.rpartition('@')[2]}"


def url_problem(url: str) -> str | None:
    """What makes `url` no server base URL a request could go to, or None: not http(s), a
    query or fragment (the door's paths are appended to the URL: they would be swallowed),
    a port that is not a number from 1 to 65535, an unclosed `[`, a host name that is not
    valid IDNA, no host. Checked before any request, so each is one line of bad usage (exit
    2), never a traceback from the socket layer."""
    if not url.startswith(("http://", "https://")):
        return "is not an http(s) URL"
    if "?" in url or "#" in url:
        return "has a query or fragment (`?`, `#`)"
    try:
        parsed = httpx.URL(url)
        host, port = parsed.host, parsed.port
    except (httpx.InvalidURL, ValueError) as exc:  # idna's errors are ValueErrors (UnicodeError)
        said = str(exc).replace(url, shown_url(url))
        return f"cannot be read as a URL ({type(exc).__name__}: {said})"
    if not host:
        return "names no host"
    if port is not None and not 0 < port <= 65535:
        return f"has port {port}, not one from 1 to 65535"
    return None


def check_url(url: str, where: str, keys: str = "--api-key or $CONFIGBAGS_API_KEY") -> None:
    """Refuse (ConfigError, naming `where` and the URL with its user part masked) a URL
    `url_problem` finds wrong, or one with a user part: httpx would send `user:pass@` as
    basic auth in place of the `Bearer` key (the door takes no other), so the key given
    would be dropped without a word. `keys` names the options that give the key instead."""
    why = url_problem(url)
    if why is not None:
        raise ConfigError(f"{where}: {shown_url(url)!r} {why}; give a server's base URL, e.g. http://10.0.0.7:30000")
    if "@" in url.partition("://")[2].partition("/")[0]:
        raise ConfigError(f"{where}: {shown_url(url)!r} has a user part (user:password@): the door takes no "
                          f"password in the URL, and it would be sent in place of the key; give the URL without "
                          f"it and the key with {keys}")


def http_failure(exc: httpx.HTTPError, url: str, secrets: Iterable[str | None] = ()) -> str:
    """An httpx error as a message may show it. A protocol error (`httpx.ProtocolError`:
    LocalProtocolError, RemoteProtocolError) quotes what it refused, which may be a header
    the request carried with its key (`Illegal header value b'Bearer K\\n'`): only its kind
    is shown. Any other error's text is shown with the URL's user part masked and every key
    in `secrets` cut out (what the text may quote is not ours to trust)."""
    kind = type(exc).__name__
    if isinstance(exc, httpx.LocalProtocolError):
        return f"{kind}: the request could not be sent as HTTP (its text, which may quote a header, is withheld)"
    if isinstance(exc, httpx.ProtocolError):
        return f"{kind}: the answer was not HTTP this client can read (its text is withheld)"
    said = str(exc).replace(url, shown_url(url))
    for secret in secrets:
        if secret:
            said = said.replace(secret, "<redacted>").replace(repr(secret.encode(errors="replace"))[2:-1],
                                                              "<redacted>")
    return f"{kind}: {said}"


def timeout_seconds(text: str) -> float:
    """`--timeout`'s value: seconds, more than 0 and at most MAX_TIMEOUT_S."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, more than 0 and at most {MAX_TIMEOUT_S:g}")
    return value


def _cap(size: int, what: str) -> None:
    if size > LIMITS.file_bytes:
        raise ReplyError(f"{what}: the reply is over {over('file_bytes', 'bytes')}")


def _parse(raw: bytes, what: str) -> Any:
    try:
        return load_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ReplyError(f"{what}: the reply is not UTF-8 text") from None
    except ConfigError as exc:
        raise ReplyError(f"{what}: the reply is not JSON configbags can read: {exc}") from None


def _gather(chunks: Iterator[bytes], what: str) -> bytes:
    body = bytearray()
    for chunk in chunks:
        body += chunk
        _cap(len(body), what)
    return bytes(body)


def read_json(response: httpx.Response, what: str) -> Any:
    """The JSON of a streamed reply (`client.stream(...)`), bounded while it arrives."""
    return _parse(_gather(response.iter_bytes(), what), what)


async def read_json_async(response: httpx.Response, what: str) -> Any:
    body = bytearray()
    chunks: AsyncIterator[bytes] = response.aiter_bytes()
    async for chunk in chunks:
        body += chunk
        _cap(len(body), what)
    return _parse(bytes(body), what)


@attrs.frozen
class Answer:
    status: int
    body: Any  # the reply's JSON; None when it is not readable (see `error`)
    error: ReplyError | None = None


async def _exchange(method: str, url: str, what: str, timeout: float, headers: Mapping[str, str],
                    payload: Any) -> Answer:
    async with (httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as client,
                client.stream(method, url, headers=dict(headers), json=payload) as response):
        try:
            return Answer(response.status_code, await read_json_async(response, what))
        except ReplyError as exc:
            return Answer(response.status_code, None, exc)


def exchange(method: str, url: str, *, what: str, timeout: float, headers: Mapping[str, str] | None = None,
             payload: Any = None) -> Answer:
    """One request and its whole JSON reply within `timeout` seconds in all (NoAnswer,
    naming `what`, past it); a connection that fails raises httpx.HTTPError. A URL the
    CLIs would refuse (a user part, which httpx would send in place of the key) is refused
    here too, for library callers (ConfigError), before anything is sent."""
    check_url(url, what)
    try:
        return asyncio.run(asyncio.wait_for(_exchange(method, url, what, timeout, headers or {}, payload), timeout))
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise NoAnswer(f"{what}: no complete answer within {timeout:g} s (--timeout)") from None
