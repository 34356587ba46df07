"""The scan cache: per-file results keyed by a hash of the file's bytes, in one JSON file
(`.configbags-cache/ratchet-scan.json`).

JSON rather than pickle: loading a cache must never run code. And nothing in it is
trusted as is, since any CI cache step can restore it from elsewhere: the file must have
this scanner's version and settings key and the expected shape, and each entry carries a
seal over its content digest and result, so an edited entry (reads emptied, say) no longer
matches. Entries are looked up by the digest of the bytes read now, so an entry never
stands for other content. On any doubt the whole cache is discarded and the tree is
scanned afresh: a cache can make a scan faster, never different. (The seal catches
stale, truncated and hand-edited caches, not one forged with this code in hand: where the
cache comes from someone untrusted, run `ratchet check --no-cache`.)"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from configbags.migrate.scanmodel import SCANNER_VERSION, FileScan, ScanSettings
from configbags.runtime.project import CACHE_DIR

CACHE_FORMAT = 2
_DIGEST_CHARS = 32  # blake2b, 16 bytes, hex


def default_cache_path(project: Path) -> Path:
    return project / CACHE_DIR / "ratchet-scan.json"


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=_DIGEST_CHARS // 2).hexdigest()


def _seal(key: str, digest: str, entry: Mapping[str, Any]) -> str:
    body = json.dumps([key, digest, entry["r"], entry["v"], entry["p"], entry["g"]], separators=(",", ":"))
    return hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


class ScanCache:
    def __init__(self, path: Path | None, settings: ScanSettings) -> None:
        self.path = path
        self.key = settings.analysis_key()
        self.entries: dict[str, FileScan] = {}
        self.used: set[str] = set()
        self.added = False  # a result was put that the file does not hold yet
        self.discarded: str | None = None  # why a cache file present was not used
        if path is not None and path.is_file():
            try:
                self.entries = self._load(json.loads(path.read_bytes()))
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                self.discarded = f"{type(exc).__name__}: {exc}"
                self.entries = {}

    def _load(self, raw: Any) -> dict[str, FileScan]:
        if not isinstance(raw, dict) or raw.get("format") != CACHE_FORMAT:
            raise ValueError("not a cache of this format")
        if raw.get("version") != SCANNER_VERSION or raw.get("key") != self.key:
            raise ValueError("written by another scanner version or settings")
        files = raw["files"]
        if not isinstance(files, dict):
            raise ValueError("files is not a mapping")
        entries: dict[str, FileScan] = {}
        for digest, entry in files.items():
            if not (isinstance(digest, str) and len(digest) == _DIGEST_CHARS and isinstance(entry, dict)):
                raise ValueError("malformed entry")
            if entry.get("s") != _seal(self.key, digest, entry):
                raise ValueError(f"entry {digest} does not match its seal")
            entries[digest] = FileScan(
                reads=_rows(entry["r"], 9),
                violations=_rows(entry["v"], 6),
                problem=_optional_str(entry["p"]),
                generated=_bool(entry["g"]),
            )
        return entries

    def get(self, digest: str) -> FileScan | None:
        found = self.entries.get(digest)
        if found is not None:
            self.used.add(digest)
        return found

    def put(self, digest: str, result: FileScan) -> None:
        self.entries[digest] = result
        self.used.add(digest)
        self.added = True

    def save(self) -> None:
        # Unchanged (every entry used, none added): a warm check writes nothing.
        if self.path is None or (not self.added and self.used == self.entries.keys()):
            return
        files: dict[str, dict[str, Any]] = {}
        for digest, e in sorted(self.entries.items()):
            if digest not in self.used:
                continue  # drop results for content that no longer exists
            entry: dict[str, Any] = {
                "r": [list(r) for r in e.reads],
                "v": [list(v) for v in e.violations],
                "p": e.problem,
                "g": e.generated,
            }
            entry["s"] = _seal(self.key, digest, entry)
            files[digest] = entry
        document = {"format": CACHE_FORMAT, "version": SCANNER_VERSION, "key": self.key, "files": files}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass  # a cache that cannot be written only costs speed next time


def _rows(value: Any, width: int) -> tuple[tuple[Any, ...], ...]:
    if not isinstance(value, list) or not all(isinstance(row, list) and len(row) == width for row in value):
        raise ValueError("malformed rows")
    for row in value:
        if not {type(cell) for cell in row} <= _CELL_TYPES:  # exact types: a bool is no int here
            raise ValueError("malformed row")
    return tuple(tuple(row) for row in value)


_CELL_TYPES = {str, int}


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("malformed problem")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("malformed flag")
    return value
