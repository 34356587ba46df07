"""The scan cache: per-file results keyed by a hash of the file's bytes, in one file
(`.configbags-cache/ratchet-scan.json`): a JSON header line, then the results as JSON.

JSON rather than pickle: loading a cache must never run code. And nothing in it is
trusted as is, since any CI cache step can restore it from elsewhere: the header must name
this scanner's version and settings key, and carry a seal over the results keyed by a
secret that never lies in the project (CACHE_KEY_VAR, or a random key made once per user
under the user's cache folder). A cache written elsewhere, or edited and resealed by
someone without the secret (results emptied, the seal recomputed with this very code),
does not match, and is discarded whole: the tree is scanned afresh. Entries are looked up
by the digest of the bytes read now, so an entry never stands for other content. So a cache
can make a scan faster, never different.

A warm check need not read a file at all: the cache also keeps each file's stat (device,
inode, size, and modification and change times in nanoseconds) with its digest, and a file
whose stat is unchanged is taken to hold the bytes it held. Any write to a file moves its
change time, which only the kernel sets (no user can set it back, as `touch` can the
modification time); a file changed within RACY_NS of the scan that recorded it is not
recorded (the clock's tick may hide a second change, as git's "racy" entries), so it is
read again next time.

Where no secret can be had (a read-only home), nothing is cached. On CI (`CI=true`) the
check uses no cache unless asked (`--cache`): a restored cache is input from elsewhere."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Any

import attrs

from configbags.migrate.scanmodel import SCANNER_VERSION, FileScan, FlowFacts, ScanSettings
from configbags.runtime.project import CACHE_DIR

CACHE_FORMAT = 5
_DIGEST_CHARS = 32  # blake2b, 16 bytes, hex
# A result analysed with a project input (configbags.migrate.flows) is keyed by the
# bytes' digest and the input's key: `DIGEST:KEY`, KEY 16 hex characters.
_INPUT_KEY_CHARS = 16
# A secret for the seal, e.g. from a CI secret store, instead of the per-user key file.
CACHE_KEY_VAR = "CONFIGBAGS_CACHE_KEY"
_KEY_FILE = "ratchet-cache-key"
# A file modified this close to the scan that saw it has its bytes read again next time.
RACY_NS = 2_000_000_000
_Stat = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns


def default_cache_path(project: Path) -> Path:
    return project / CACHE_DIR / "ratchet-scan.json"


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=_DIGEST_CHARS // 2).hexdigest()


def user_cache_folder() -> Path:
    """The user's configbags cache folder (XDG_CACHE_HOME, else ~/.cache): never a project's."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "configbags"


def cache_secret() -> bytes | None:
    """The key the cache's seal is made with: from CACHE_KEY_VAR, else the user's key file
    (made on first use, readable by the user only); None when neither can be had."""
    given = os.environ.get(CACHE_KEY_VAR)
    if given:
        return hashlib.blake2b(given.encode("utf-8", "surrogateescape"), digest_size=32).digest()
    path = user_cache_folder() / _KEY_FILE
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32))
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None  # another process won the race with a bad file, or no home: no cache


def seal(secret: bytes, purpose: str, body: bytes) -> str:
    """A keyed digest of `body` for one use (`purpose`): what a cache's reader checks."""
    sealed = hashlib.blake2b(key=secret, digest_size=16)
    sealed.update(purpose.encode() + b"\0")
    sealed.update(body)
    return sealed.hexdigest()


def _seal(secret: bytes, key: str, body: bytes) -> str:
    return seal(secret, f"ratchet-scan|{CACHE_FORMAT}|{SCANNER_VERSION}|{key}", body)


class ScanCache:
    def __init__(self, path: Path | None, settings: ScanSettings, secret: bytes | None = None) -> None:
        self.secret = cache_secret() if secret is None else secret
        self.path = path if self.secret is not None else None
        self.key = settings.analysis_key()
        self.entries: dict[str, FileScan] = {}
        self.used: set[str] = set()
        self.stats: dict[str, tuple[_Stat, str]] = {}  # file -> (its stat, its digest)
        self.stats_kept: dict[str, tuple[_Stat, str]] = {}  # what the next save keeps
        self.started_ns = time.time_ns()
        self.added = False  # a result was put that the file does not hold yet
        # Each result's flow facts as stored (JSON text), decoded only when the project
        # pass runs: a warm check whose files are all unchanged reuses the pass's outcome.
        self.flow_texts: dict[str, str] = {}
        # the last project pass's outcome (configbags.migrate.flows), and the one to save
        self.project: dict[str, Any] | None = None
        self.project_kept: dict[str, Any] | None = None
        self.discarded: str | None = None  # why a cache file present was not used
        if self.path is not None and self.path.is_file():
            try:
                self.entries, self.stats = self._load(self.path.read_bytes())
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                self.discarded = f"{type(exc).__name__}: {exc}"
                self.entries, self.stats, self.flow_texts, self.project = {}, {}, {}, None

    def _load(self, data: bytes) -> tuple[dict[str, FileScan], dict[str, tuple[_Stat, str]]]:
        assert self.secret is not None
        head, newline, body = data.partition(b"\n")
        header = json.loads(head)
        if not newline or not isinstance(header, dict) or header.get("format") != CACHE_FORMAT:
            raise ValueError("not a cache of this format")
        if header.get("version") != SCANNER_VERSION or header.get("key") != self.key:
            raise ValueError("written by another scanner version or settings")
        if header.get("seal") != _seal(self.secret, self.key, body):
            raise ValueError("the results do not match their seal (written elsewhere, or edited)")
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError("not a mapping")
        files, stats = document["files"], document["stats"]
        if not isinstance(files, dict) or not isinstance(stats, dict):
            raise ValueError("files or stats is not a mapping")
        entries: dict[str, FileScan] = {}
        for digest, entry in files.items():
            if not (isinstance(digest, str) and len(digest) in _KEY_LENGTHS and isinstance(entry, dict)):
                raise ValueError("malformed entry")
            entries[digest] = FileScan(
                reads=_rows(entry["r"], 9),
                violations=_rows(entry["v"], 6),
                problem=_optional_str(entry["p"]),
                generated=_bool(entry["g"]),
            )
            if not isinstance(entry["f"], str):
                raise ValueError("malformed flow facts")
            self.flow_texts[digest] = entry["f"]
        known: dict[str, tuple[_Stat, str]] = {}
        for file, row in stats.items():
            if not (isinstance(row, list) and len(row) == 6 and all(type(x) is int for x in row[:5])):
                raise ValueError("malformed stat")
            if row[5] not in entries:
                raise ValueError("a stat of a digest with no result")
            known[str(file)] = ((row[0], row[1], row[2], row[3], row[4]), str(row[5]))
        project = document.get("project")
        if project is not None and not (isinstance(project, dict) and isinstance(project.get("key"), str)):
            raise ValueError("malformed project outcome")
        self.project = project
        return entries, known

    def unchanged(self, file: str, path: str) -> str | None:
        """The digest of `file`'s bytes when its stat is the one recorded with it (so it
        need not be read), else None."""
        known = self.stats.get(file)
        if known is None:
            return None
        try:
            info = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or _stat_of(info) != known[0]:
            return None
        self.stats_kept[file] = known
        return known[1]

    def saw(self, file: str, path: str, digest: str) -> None:
        """`file`, read now, has bytes with `digest`: record its stat, unless it changed
        so recently that another change in the same clock tick could hide."""
        try:
            info = os.stat(path)
        except OSError:
            return
        if stat.S_ISREG(info.st_mode) and max(info.st_mtime_ns, info.st_ctime_ns) < self.started_ns - RACY_NS:
            self.stats_kept[file] = (_stat_of(info), digest)

    def get(self, digest: str) -> FileScan | None:
        found = self.entries.get(digest)
        if found is not None:
            self.used.add(digest)
        return found

    def with_flow(self, digest: str, result: FileScan) -> FileScan:
        """`result` (served by get) with its flow facts decoded."""
        text = self.flow_texts.get(digest)
        if text is None:
            return result
        return attrs.evolve(result, flow=_flow(json.loads(text)))

    def may_run_children(self, digest: str) -> bool:
        """May the result's flow facts name files its child processes run (FlowFacts.
        children, their last field, not empty)? Told without decoding them."""
        text = self.flow_texts.get(digest)
        return text is None or not text.endswith("[]]")  # (whatever the separators)

    def project_outcome(self, key: str) -> tuple[dict[str, str], dict[str, list[tuple[Any, ...]]], str | None] | None:
        """The last project pass's outcome for the files and digests `key` stands for:
        (file -> the key of its input, file -> the reads at its call sites, a problem)."""
        found = self.project
        if found is None or found["key"] != key:
            return None
        inputs, sites, problem = found["inputs"], found["sites"], found["problem"]
        if not (isinstance(inputs, dict) and isinstance(sites, dict) and (problem is None or isinstance(problem, str))):
            raise ValueError("malformed project outcome")
        self.project_kept = found
        return inputs, {rel: list(_rows(rows, 9)) for rel, rows in sites.items()}, problem

    def keep_project(
        self, key: str, inputs: dict[str, str], sites: dict[str, list[tuple[Any, ...]]], problem: str | None
    ) -> None:
        self.project_kept = {
            "key": key, "inputs": inputs, "sites": {rel: [list(r) for r in rows] for rel, rows in sites.items()},
            "problem": problem,
        }

    def put(self, digest: str, result: FileScan) -> None:
        self.flow_texts.pop(digest, None)
        self.entries[digest] = result
        self.used.add(digest)
        self.added = True

    def save(self) -> None:
        # Unchanged (every entry used, none added): a warm check writes nothing.
        unchanged = (
            not self.added
            and self.used == self.entries.keys()
            and self.stats_kept == self.stats
            and self.project_kept == self.project
        )
        if self.path is None or self.secret is None or unchanged:
            return
        files = {
            digest: {
                "r": [list(r) for r in e.reads],
                "v": [list(v) for v in e.violations],
                "p": e.problem,
                "g": e.generated,
                "f": self.flow_texts.get(digest) or json.dumps(attrs.astuple(e.flow), separators=(",", ":")),
            }
            for digest, e in sorted(self.entries.items())
            if digest in self.used  # drop results for content that no longer exists
        }
        stats = {file: [*info, digest] for file, (info, digest) in sorted(self.stats_kept.items()) if digest in files}
        document: dict[str, Any] = {"files": files, "stats": stats}
        if self.project_kept is not None:
            document["project"] = self.project_kept
        body = json.dumps(document, separators=(",", ":")).encode()
        header = {
            "format": CACHE_FORMAT,
            "version": SCANNER_VERSION,
            "key": self.key,
            "seal": _seal(self.secret, self.key, body),
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(json.dumps(header).encode() + b"\n" + body)
            tmp.replace(self.path)
        except OSError:
            pass  # a cache that cannot be written only costs speed next time


def _stat_of(info: os.stat_result) -> _Stat:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _rows(value: Any, width: int) -> tuple[tuple[Any, ...], ...]:
    # The seal says this code wrote them; the shape is checked against a format drift
    # the version missed, not cell by cell (a warm check loads every row).
    if type(value) is not list or not all(type(row) is list and len(row) == width for row in value):
        raise ValueError("malformed rows")
    return tuple(map(tuple, value))


_KEY_LENGTHS = frozenset({_DIGEST_CHARS, _DIGEST_CHARS + 1 + _INPUT_KEY_CHARS})
# FlowFacts' fields and the width of their rows (0: a tuple of strings)
_FLOW_WIDTHS = (4, 8, -1, 2, 0, 8, 3, 2, 3, 7)  # -1: rows of any width


def _flow(value: Any) -> FlowFacts:
    # As for the rows: the seal says this code wrote them, the shape guards against a
    # format drift. A signature's parameter lists stay lists (only iterated and searched).
    if type(value) is not list or len(value) != len(_FLOW_WIDTHS):
        raise ValueError("malformed flow facts")
    parts: list[Any] = []
    for part, width in zip(value, _FLOW_WIDTHS, strict=True):
        if type(part) is not list:
            raise ValueError("malformed flow facts")
        if width > 0 and not all(type(row) is list and len(row) == width for row in part):
            raise ValueError("malformed flow facts")
        parts.append(tuple(part) if width == 0 else tuple(map(tuple, part)))
    return FlowFacts(*parts)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("malformed problem")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("malformed flag")
    return value
