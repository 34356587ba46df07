"""The format cache: black's output by a digest of its exact input, in one JSON file
(`.configbags-cache/gen-black.json` in the project that holds the output folder), so a
regeneration runs black only on the pieces of text that changed (see `blackpieces`).

The house pattern of the ratchet's scan cache (`configbags.migrate.scancache`): JSON, never
pickle; the file must carry this black's version and mode, and each entry a seal over its
digest and text, or the whole file is discarded. An entry is looked up by the digest of the
text about to be formatted, so it never stands for other input. A cache can make
generation faster, never different; where the cache file comes from someone untrusted
(a CI cache restored from a fork), run `configbags gen --no-cache`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

from configbags.codegen.blackpieces import BLACK_MODE
from configbags.runtime.project import CACHE_DIR, find_pyproject

CACHE_FORMAT = 2
_DIGEST_CHARS = 32


def default_cache_path(out: Path) -> Path:
    """In the project holding the output folder (beside its pyproject.toml, where the
    house .gitignore already names `/.configbags-cache/`), else beside the folder; never
    inside it, since generation replaces it whole."""
    pyproject = find_pyproject(out.resolve().parent)
    return (pyproject.parent if pyproject is not None else out.resolve().parent) / CACHE_DIR / "gen-black.json"


def black_key() -> str:
    """What black's output depends on besides its input: its version and the mode."""
    return f"black {version('black')} {BLACK_MODE!r}"


def _seal(key: str, digest: str, text: str) -> str:
    body = json.dumps([key, digest, text], separators=(",", ":"))
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class FormatCache:
    """A `blackpieces.Memo` backed by a file; `save()` keeps the entries this run used."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.key = black_key()
        self.entries: dict[str, str] = {}
        self.deps: dict[str, list[str]] = {}  # a module's entry -> its pieces' (kept with it)
        self.used: set[str] = set()
        self.added = False
        self.discarded: str | None = None  # why a cache file present was not used
        if path is not None and path.is_file():
            try:
                self.entries, self.deps = self._load(json.loads(path.read_bytes()))
            except (OSError, ValueError, TypeError, KeyError) as exc:
                self.discarded = f"{type(exc).__name__}: {exc}"
                self.entries, self.deps = {}, {}

    def _load(self, raw: Any) -> tuple[dict[str, str], dict[str, list[str]]]:
        if not isinstance(raw, dict) or raw.get("format") != CACHE_FORMAT:
            raise ValueError("not a cache of this format")
        if raw.get("key") != self.key:
            raise ValueError("written by another black version or mode")
        files = raw["entries"]
        if not isinstance(files, dict):
            raise ValueError("entries is not a mapping")
        entries: dict[str, str] = {}
        for digest, entry in files.items():
            if not (isinstance(digest, str) and len(digest) == _DIGEST_CHARS and isinstance(entry, list)
                    and len(entry) == 2 and all(isinstance(part, str) for part in entry)):
                raise ValueError("malformed entry")
            text, seal = entry
            if seal != _seal(self.key, digest, text):
                raise ValueError(f"entry {digest} does not match its seal")
            entries[digest] = text
        deps = raw["deps"]
        if not (isinstance(deps, dict) and all(
                isinstance(on, list) and all(isinstance(d, str) for d in on) for on in deps.values())):
            raise ValueError("malformed deps")
        return entries, deps

    def get(self, digest: str) -> str | None:
        found = self.entries.get(digest)
        if found is not None:
            self.used.add(digest)
            self.used.update(self.deps.get(digest, ()))
        return found

    def put(self, digest: str, formatted: str) -> None:
        self.entries[digest] = formatted
        self.used.add(digest)
        self.added = True

    def depends(self, digest: str, on: list[str]) -> None:
        if self.deps.get(digest) != on:
            self.deps[digest] = on
            self.added = True

    def merge(self, seen: dict[str, str], deps: dict[str, list[str]]) -> None:
        """What a worker process looked up or computed."""
        for digest, text in seen.items():
            if digest not in self.entries:
                self.added = True
            self.entries[digest] = text
            self.used.add(digest)
        for digest, on in deps.items():
            self.depends(digest, on)
            self.used.update(on)

    def save(self) -> None:
        # Unchanged (every entry used, none added): a warm run writes nothing.
        if self.path is None or (not self.added and self.used == self.entries.keys()):
            return
        kept = sorted(self.used & self.entries.keys())
        entries = {d: [self.entries[d], _seal(self.key, d, self.entries[d])] for d in kept}
        deps = {d: on for d, on in sorted(self.deps.items()) if d in entries}
        document = {"format": CACHE_FORMAT, "key": self.key, "entries": entries, "deps": deps}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:  # a cache that cannot be written only costs speed next time
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
