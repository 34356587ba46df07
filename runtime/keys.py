"""The HTTP door's two keys and the one rule for a key no client could use: `configbags
serve` applies it at start and to a PATCH of a key, `configbags rollout` to the NEW side,
`configbags lint` to launch lines and config files, so a key the server refuses fails
lint too, and the clients (`fleet check`, `rollout`) to every key they would send.
Messages never carry the key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

API_KEY_LEAF = "api_key"  # reads need this key when it is set
ADMIN_KEY_LEAF = "admin_api_key"  # PATCH needs this key; unset disables PATCH
KEY_LEAVES = (API_KEY_LEAF, ADMIN_KEY_LEAF)
# the variables configbags' clients (`fleet check`, `rollout`) send each key from: the
# server never reads them, so one set for a server is a mix-up that would leave it open
CLIENT_API_KEY_VAR, CLIENT_ADMIN_KEY_VAR = "CONFIGBAGS_API_KEY", "CONFIGBAGS_ADMIN_KEY"
CLIENT_KEY_VARIABLES = {CLIENT_API_KEY_VAR: API_KEY_LEAF, CLIENT_ADMIN_KEY_VAR: ADMIN_KEY_LEAF}

UNUSABLE_FIX = ("give a key of printable ASCII without spaces (e.g. `openssl rand -hex 32`), each flag its own "
                "word, or leave it unset to turn that protection off")
CLIENT_KEY_FIX = ("give the key exactly as the server was started with it: printable ASCII, one word, no trailing "
                  "newline (a key read from a file, `$(cat FILE)`, drops it; `echo -n` writes none)")
SAME_KEY = (f"{API_KEY_LEAF} and {ADMIN_KEY_LEAF} are the same key, so every client that may read could also "
            f"change the config")
SAME_KEY_FIX = "give the admin a key of its own (e.g. `openssl rand -hex 32`)"


def unusable(key: Any) -> str | None:
    """Why no request could ever carry `key` byte for byte in its bearer header (so every
    request would fail, or answer 500), or None for a usable key: not text, empty,
    undecodable bytes from the environment, non-ASCII (headers are read as latin-1),
    surrounding whitespace (the bearer token is stripped), inner whitespace (a bearer token
    is one word), control characters."""
    if not isinstance(key, str):
        return f"is a {type(key).__name__}, not text"
    if not key:
        return "is empty (an empty bearer token cannot be sent)"
    if any("\ud800" <= c <= "\udfff" for c in key):
        return "holds bytes that are not valid UTF-8 (an environment variable's raw bytes?)"
    if not key.isascii():
        return "holds non-ASCII characters (HTTP headers are read as latin-1)"
    if key != key.strip():
        return "has surrounding whitespace (the bearer token is stripped before it is compared)"
    if any(c.isspace() for c in key):
        # RFC 6750's b64token has no space; a key holding one is most often flags written as
        # one word (`--api-key=K --tp-size=2`), whose next flag the key swallowed
        return ("holds whitespace (a bearer token is one word; flags written as one word, `--api-key=K --tp-size=2`, "
                "make such a key of the next flag)")
    if not key.isprintable():
        return "holds control characters (they cannot be sent in a header)"
    return None


def client_key_problem(key: Any, origin: str) -> str | None:
    """Why a client (`fleet check`, `rollout`) must not send `key`, which it read from
    `origin` (a flag, a variable, a servers file's entry), or None: the same rule the
    server applies at start (`unusable`), checked before any request, so no HTTP library
    gets to quote the key in its refusal (`Illegal header value b'Bearer K\\n'`). The
    message names where the key came from, never the key."""
    why = unusable(key)
    return None if why is None else f"the key from {origin} {why}; no request could carry it. Fix: {CLIENT_KEY_FIX}"


def same_key(values: Mapping[str, Any]) -> bool:
    """Whether the read key and the admin key are one key (every reader could change the
    config)."""
    api = values.get(API_KEY_LEAF)
    return api is not None and api == values.get(ADMIN_KEY_LEAF)
