"""A server's JSON reply is outside input like any file: its bytes are counted while it
streams (a server, or something posing as one, cannot make the client hold more than the
file limit) and the text goes through the one bounded reader (nesting, nodes, digits)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from configbags.runtime.errors import ConfigError
from configbags.runtime.limits import LIMITS, over
from configbags.runtime.yamlsafe import load_json


class ReplyError(ConfigError):
    """A reply that is too large, not UTF-8 or not JSON within the limits."""


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
