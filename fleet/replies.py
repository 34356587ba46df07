"""A server's JSON reply is outside input like any file: its bytes are counted while it
streams (a server, or something posing as one, cannot make the client hold more than the
file limit), the text goes through the one bounded reader (nesting, nodes, digits), and
the whole exchange has one deadline (`--timeout`): httpx bounds each read on its own, so
without it a reply trickling in a byte at a time would never end."""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import AsyncIterator, Iterator, Mapping
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


def shown_url(url: str) -> str:
    """`url` as a message may print it: a password or token in its user part
    (`http://u:PW@host`) never reaches a log."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}://***@{authority.rpartition('@')[2]}{slash}{path}"


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
    naming `what`, past it); a connection that fails raises httpx.HTTPError."""
    try:
        return asyncio.run(asyncio.wait_for(_exchange(method, url, what, timeout, headers or {}, payload), timeout))
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise NoAnswer(f"{what}: no complete answer within {timeout:g} s (--timeout)") from None
