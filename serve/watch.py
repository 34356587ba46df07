"""`configbags serve --watch FILE`: follow a config file as Kubernetes updates a mounted
ConfigMap, and apply what a running server can apply.

The kubelet never writes the file in place: it writes a new timestamped folder beside the
old one, points the `..data` link at it in one rename, then removes the old folder; the
mounted `FILE` is a link through `..data`. So the watcher polls the resolved path and its
stat (inode, ctime, mtime, size) and a digest of its bytes: the link swap changes the
resolved path, an in-place edit the stat or the digest. Neither the ctime (the kernel's,
never settable by the writer) nor the digest can be put back by a writer, so an edit that
keeps the size and restores the mtime (`touch -r`) is still seen, even within one clock
tick. Only a regular file is read for the digest, opened without blocking and bounded
(`LIMITS.file_bytes`): a FIFO or a device is never read here, and the rebuild refuses it.
A change is read once the signature has held for two polls in a row, and only if it holds
across the read. A file replaced whole (the link swap, or a writer's rename over it) is
complete when it appears; a file written in place (the same inode) may be caught between
two writes, so it is read only once it has also been quiet for `IN_PLACE_QUIET_S` (write
a watched file by rename to have it read at the next poll). An empty file (0 bytes, as a
writer truncating it leaves it) is never read as "no settings": it is reported, and the
config in force stays (write `{}` to mean no settings).

The new record is built from the server's own flags exactly as at start (CLI flags still
win over the file), over the start-time contents of the other `--config` files: those are
read once, at start (`StartFiles`), so an edit or removal of one never rides in with the
watched file's next change. Against the record the server runs with:

- `live` differences (runtime leaves the operator may write; `runtime.fleet.route`) are
  applied through the door's path for PATCH, on every rank, all or none, with the source
  `file:FILE`; the rank work runs on the door's rank thread, in order with HTTP requests;
- every other difference (startup; load_time, fixed once the server is sealed; runtime
  leaves only their owner writes; a live value above its capacity on the running server,
  which the door would refuse while a restart sizes it again, as rollout plans it) is not
  applied: it is listed as restart required, in
  `server_info()`, `/health` details and `configbags_restart_required`, until a restart
  (or until the file says the running value again);
- a file that does not parse or validate (malformed, half-written, a bad value, a key the
  start-up key rule of `configbags.runtime.keys` refuses, as a restart would) changes
  nothing; the error is reported in the same places until a good file arrives.

A leaf whose value stays but whose layer moves (the file drops a key a preset or a lower
file gives the same value) is read back with the layer that gives it now (`moved()`).

Every loop is bounded: one poll per interval, until `stop()`. A watcher whose thread ends
for any reason but `stop()` says so in the log and on /health (503 `watch_stopped`): the
server no longer follows its file, and a restart brings the watcher back."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from configbags.runtime.cmdline import inert
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, YamlError
from configbags.runtime.fleet import ApplyClass, above_capacity, route
from configbags.runtime.leaftypes import jsonable
from configbags.runtime.limits import LIMITS
from configbags.runtime.record import load_config_file, origins_of
from configbags.runtime.resolve import DEFAULT_ORIGIN, Layer, Origin
from configbags.runtime.yamlsafe import file_kind, load_file
from configbags.serve.door import MAX_SOURCE_CHARS, Door, DoorError, check_keys, redact

log = logging.getLogger("configbags.serve.watch")

DEFAULT_INTERVAL_S = 0.1
IN_PLACE_QUIET_S = 1.0  # how long a file written in place must hold before it is read
RETRY_S = 1.0  # how often a change refused for a passing reason (a rank stalled: 503) is tried again
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.05, 3600.0  # --watch-interval: no busy loop, no poll never due
Signature = tuple[str, int, int, int, int, str]


# The digest of something no config can be read from: `NOT_A_FILE` and what it is instead.
NOT_A_FILE = "not-a-file:"
_PSEUDO = "a pseudo-file (its size says 0 bytes but it holds data, as in /proc or /sys)"


def signature(path: Path) -> Signature | None:
    """(resolved path, inode, ctime ns, mtime ns, size, digest of the bytes) of what `path`
    leads to now, or None if it leads nowhere. The digest is `NOT_A_FILE` and what it is
    for anything but a regular file (a socket, a FIFO, a /proc file), and "" for one it
    cannot read or that is over the size limit."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    digest = _digest(real) if stat.S_ISREG(st.st_mode) else NOT_A_FILE + file_kind(st.st_mode)
    return (real, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size, digest)


def _digest(real: str) -> str:
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    try:
        st = os.fstat(fd)  # what was opened, not what the path held a moment before
        if not stat.S_ISREG(st.st_mode):
            return NOT_A_FILE + file_kind(st.st_mode)
        if st.st_size > LIMITS.file_bytes:
            return ""
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(LIMITS.file_bytes + 1)
        if data is None:  # nothing to read without blocking (a /proc file like kmsg)
            return NOT_A_FILE + _PSEUDO
        # a /proc file says 0 bytes and holds data that changes at every read: it would
        # never hold still long enough to be read, nor to be reported
        return NOT_A_FILE + _PSEUDO if data and st.st_size == 0 else hashlib.sha256(data).hexdigest()
    except OSError:
        return ""
    finally:
        os.close(fd)


SAYS_NOTHING = ("holds no settings (blank, only comments, or a null document: a template that rendered "
                "nothing?); write {} to mean no settings")


def says_nothing(path: Path) -> bool:
    """Does the file to follow hold no document at all (serve's check at start, so the
    refusal names --watch; each later change is refused by the config reader itself)?
    Applied, it would be "no settings" and every live leaf it set would go back to its
    default in silence; `{}` says that. A file that does not parse says something: its
    error is the record's to report."""
    try:
        return load_file(Path(path)) is None
    except (YamlError, OSError):
        return False


class StartFiles:
    """The `--config` files a watching server does not follow, as they read at start: the
    watched file is read afresh at each change, every other file once, so a reload layers
    the watched file over what the server started with, never over a later edit of another
    file (nor fails because one was removed since). `load` is the reader that
    `record_from_cli_args` takes."""

    def __init__(self, schema_path: Path, watched: Path) -> None:
        self.schema_path = schema_path
        self.watched = Path(os.path.abspath(watched))  # (however either flag spells it; links kept: a ConfigMap's swap)
        self._contents: dict[Path, Mapping[str, Any]] = {}

    def load(self, path: Path) -> Mapping[str, Any]:
        path = Path(path)
        if Path(os.path.abspath(path)) == self.watched:
            return load_config_file(path, self.schema_path)
        if path not in self._contents:
            self._contents[path] = load_config_file(path, self.schema_path)
        return self._contents[path]

    def read(self, paths: Sequence[str | Path]) -> None:
        """Read the files not followed now (at start), once."""
        for path in paths:
            self.load(Path(path))


SOURCE_PREFIX = "file:"
_SOURCE_DIGEST_CHARS = 12


def watch_source(path: Path) -> str:
    """The override source of a change read from the watched file: `file:` and the path,
    made to pass the door's source rule whatever the path is (a hostPath mount can be long;
    a name can hold a newline), or no change could ever be applied: control characters and
    separators escaped, and a path too long kept as its end (the file's name) with a digest
    of the whole path, so two long paths never share a source and a restart keeps it."""
    shown = inert(str(path))
    source = SOURCE_PREFIX + shown
    if len(source) <= MAX_SOURCE_CHARS:
        return source
    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:_SOURCE_DIGEST_CHARS]
    keep = MAX_SOURCE_CHARS - len(SOURCE_PREFIX) - len("...") - len("#") - len(digest)
    return f"{SOURCE_PREFIX}...{shown[-keep:]}#{digest}"


class ConfigWatcher:
    """Polls `path`; `rebuild()` builds the record from the server's flags and the file
    (raising ConfigError on a bad file). `rank_thread` is the door's single rank thread,
    when it has ranks."""

    def __init__(self, door: Door, path: Path, rebuild: Callable[[], Any], *,
                 interval: float = DEFAULT_INTERVAL_S, rank_thread: ThreadPoolExecutor | None = None,
                 in_place_quiet: float = IN_PLACE_QUIET_S) -> None:
        self.door = door
        self.path = Path(path)
        self.source = watch_source(self.path)
        self.rebuild = rebuild
        self.interval = interval
        self.in_place_quiet = in_place_quiet
        self.rank_thread = rank_thread
        ctx: Context[Any] = door.context
        self.running = jsonable(ctx.state.record.to_dict())  # what the server was started with
        self.applied = dict(self.running)  # the live leaves as the file last set them
        self.published: Mapping[str, Origin] = dict(ctx.state.origins)  # where start put each value
        self._moved: dict[str, Origin] = {}  # leaves whose unchanged value another layer gives now
        self.seen = signature(self.path)
        self._candidate: Signature | None = None
        self._candidate_at = 0.0  # when the candidate signature was first seen (monotonic)
        # a file's change refused for a passing reason (503: a rank stalled or unreachable),
        # and when to try it again: a ConfigMap is not written twice, so the watcher retries
        self._retry: Mapping[str, Any] | None = None
        self._retry_origins: Mapping[str, Origin] | None = None
        self._retry_at = 0.0
        self._lock = threading.Lock()  # status is read by request threads
        self._status: dict[str, Any] = {"file": str(self.path), "error": None, "last_applied": None,
                                        "restart_required": {}, "hidden": self._hidden(self.published)}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._died: str | None = None  # why the thread ended, when it was not stop()

    # -- the loop ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="configbags-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 10 * self.interval))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    self.poll()
                except Exception as exc:  # the watcher must outlive any one bad poll; say why
                    log.exception("watching %s failed", inert(str(self.path)))
                    self._report(f"watching {self.path} failed: {type(exc).__name__}: {exc}")
        except BaseException as exc:  # anything that ends the loop but stop(): said, never silent
            why = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self._died = why
            log.error("the watcher of %s stopped (%s): file changes are no longer applied; restart the "
                      "server to follow the file again", inert(str(self.path)), inert(why))
            if not isinstance(exc, Exception):
                raise

    def stopped(self) -> str | None:
        """Why the watcher's thread ended while it should be running, or None while it runs
        (or was never started, or was stopped on purpose)."""
        with self._lock:
            died = self._died
        thread = self._thread
        if died is None and thread is not None and not thread.is_alive() and not self._stop.is_set():
            died = "the thread ended"
        return died

    def poll(self) -> bool:
        """One poll: True if a changed file was read (applied, or refused and reported)."""
        sig = signature(self.path)
        if sig == self.seen:
            self._candidate = None
            if self._retry is not None and time.monotonic() >= self._retry_at:
                self.apply(self._retry, self._retry_origins)
                return True
            return False
        if sig is None:
            self._report(f"{self.path} cannot be read (missing, or a link to nothing); the config "
                         f"in force is unchanged")
            self.seen = None
            return False
        if sig != self._candidate:
            self._candidate = sig  # wait one poll: a writer may still be writing
            self._candidate_at = time.monotonic()
            return False
        if sig[5].startswith(NOT_A_FILE):
            self.seen = sig
            self._report(f"{self.path} is not a regular file ({sig[5][len(NOT_A_FILE):]}); nothing was "
                         f"changed, the config in force stays")
            return True
        in_place = self.seen is not None and sig[:2] == self.seen[:2]  # same path, same inode
        if in_place and time.monotonic() - self._candidate_at < self.in_place_quiet:
            return False  # written in place: the writer may only be pausing between writes
        if sig[4] == 0:
            self.seen = sig
            self._report(f"{self.path} is empty (0 bytes: a writer truncating it?); nothing was changed, the "
                         f"config in force stays (write {{}} to mean no settings)")
            return True
        try:  # (a file holding no document is refused by the reader, runtime.record.load_config_file)
            record = self.rebuild()
            self._check_keys(record.to_dict(), origins_of(record, self.door.context.registry.leaves))
        except ConfigError as exc:
            if signature(self.path) == sig:
                self.seen = sig
                self._report(f"{exc}; nothing was changed, the config in force stays")
            return True
        except Exception as exc:
            # A failure that is not a config error is a defect, but of this version of the
            # file: reported once (the next poll would fail the same way), by its type only,
            # since its message may quote a value of the file, a secret among them.
            log.debug("rebuilding from %s failed", self.path, exc_info=True)
            if signature(self.path) == sig:
                self.seen = sig
                self._report(f"{self.path} could not be read ({type(exc).__name__}, a defect: please report "
                             f"it); nothing was changed, the config in force stays")
            return True
        if signature(self.path) != sig:
            return False  # changed while read: read it again once it holds
        self.seen = sig
        self._candidate = None
        self.apply(jsonable(record.to_dict()), origins_of(record, self.door.context.registry.leaves))
        return True

    def _check_keys(self, values: Mapping[str, Any], origins: Mapping[str, Origin]) -> None:
        """The start-up key rule (`check_keys`), on the file as a restart would read it: a key
        no client could send (a block scalar's trailing newline, a space in it), or a read key
        that is the admin key, would make the next start exit 2, so the file is refused whole
        now rather than shown as "restart required" with its live leaves applied."""
        try:
            check_keys(self.door.context.registry, values, origins, os.environ)
        except ConfigError as exc:
            raise ConfigError(f"{self.path}: a restart would refuse this file: {exc}") from None

    # -- one new record -------------------------------------------------------------------------
    def apply(self, new: Mapping[str, Any], origins: Mapping[str, Origin] | None = None) -> None:
        """Apply the record `new` (leaf -> value) that the rebuild made; `origins` are its
        layers, for the leaves whose value stays while the layer giving it moves."""
        registry = self.door.context.registry
        resolved = self.door.context.state.values  # the capacities as sized at publish
        live: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        for leaf, value in new.items():
            if leaf not in registry.leaves:
                continue
            klass, why = route(registry, leaf)
            if klass is ApplyClass.LIVE and value != self.applied.get(leaf):
                # above its running capacity, the door would refuse it (and the whole
                # change with it), while a restart sizes it again: it waits for one, as
                # rollout plans it, and the file's other live leaves apply
                over = above_capacity(registry, leaf, value, resolved)
                if over is None:
                    live[leaf] = value
                else:
                    shown = registry.leaves[leaf].shown
                    pending[leaf] = {"running": shown(resolved.get(leaf)), "file": shown(value),
                                     "apply_class": ApplyClass.RESTART.value, "why": over}
            elif klass is not ApplyClass.LIVE and value != self.running.get(leaf):
                shown = registry.leaves[leaf].shown
                pending[leaf] = {"running": shown(self.running.get(leaf)), "file": shown(value),
                                 "apply_class": klass.value, "why": why}
        error = None
        applied: dict[str, Any] | None = None
        self._retry = None
        if live:
            try:
                applied = self._apply_live(live)
            except DoorError as exc:
                error = f"{self.path}: the change was refused ({exc.code}): {exc.message}; nothing was applied"
                ranks = self.door.ranks
                if ranks is not None and ranks.gone():
                    # a rank that left comes back only with a restart: no retry would ever apply it
                    error += "; a rank left the group, so changes wait for a restart (the file is read again then)"
                elif exc.status == 503:  # the group is not in service now: try again shortly
                    self._retry, self._retry_at = new, time.monotonic() + max(RETRY_S, self.interval)
                    self._retry_origins = origins
                    error += f" yet; tried again every {max(RETRY_S, self.interval):g} s"
            except ConfigError as exc:
                error = f"{self.path}: the change was refused: {exc}; nothing was applied"
            else:
                self.applied.update(live)
        self._note_moved(new, origins, error)
        with self._lock:
            self._status["error"] = error
            self._status["restart_required"] = pending
            if applied is not None:
                self._status["last_applied"] = applied
        if pending:
            log.warning("%s changed leaves a running server cannot take (restart required): %s",
                        inert(str(self.path)), ", ".join(pending))
        if error:
            log.warning("%s", inert(error))

    def _apply_live(self, leaves: dict[str, Any]) -> dict[str, Any]:
        door = self.door

        def change() -> dict[str, Any]:
            try:
                with door._lock:
                    entries = door._apply(self.source, dict(leaves))
            except ConfigError as exc:
                raise door._refusal(exc, leaves) from None
            shown = redact({"overrides": [e.as_dict() for e in entries]}, door.secrets)["overrides"]
            return {"epoch": entries[0].epoch if entries else door.context.epoch, "time": time.time(),
                    "leaves": sorted(leaves), "entries": shown}

        if self.rank_thread is None:
            return change()
        # every rank must enter collectives in one order: run where HTTP requests run
        return self.rank_thread.submit(change).result()

    def _hidden(self, origins: Mapping[str, Origin]) -> dict[str, Any]:
        """Leaf -> the watched file's value of it that a flag or an environment variable
        hides (never in force, whatever the file says), and what gives the value instead:
        an edit of it applies nothing, and the readback says so rather than stay silent."""
        out = {}
        for leaf, origin in origins.items():
            for shadow in origin.shadows:
                if shadow.layer is Layer.CONFIG_FILE and shadow.source == str(self.path):
                    out[leaf] = {"file": shadow.value, "in_force_from": origin.source, "layer": origin.layer.value}
        return out

    def _note_moved(self, new: Mapping[str, Any], origins: Mapping[str, Origin] | None, error: str | None) -> None:
        """The leaves whose running value the file's change kept but that another layer gives
        now (a key the file dropped that a preset sets the same): no override is logged for
        them, so without this their readback would still name the file; and the file's
        leaves a flag or a variable hides now. A refused change moves nothing (the config
        in force stays)."""
        if error is not None or origins is None:
            return
        moved = {}
        for leaf, value in new.items():
            before = self.published.get(leaf, DEFAULT_ORIGIN)
            if before.rule is not None or value != self.running.get(leaf):
                continue  # a rule's value, or one the running server does not hold: its layer stays
            now = origins.get(leaf, DEFAULT_ORIGIN)
            if now != before:
                moved[leaf] = now
        hidden = self._hidden(origins)
        with self._lock:
            self._moved = moved
            self._status["hidden"] = hidden

    def moved(self) -> dict[str, Origin]:
        """Leaf -> the layer that gives its value now, where that is not the one publish
        recorded and no override has set the leaf since (an override's origin wins)."""
        overridden = {e.leaf for e in self.door.context.state.log}
        with self._lock:
            return {leaf: o for leaf, o in self._moved.items() if leaf not in overridden}

    # -- status ---------------------------------------------------------------------------------
    def _report(self, error: str) -> None:
        # the path (a ConfigMap key's name) and what a bad file made us say, escaped: no forged
        # log line, no terminal escape (server_info shows them as JSON)
        log.warning("%s", inert(error))
        with self._lock:
            self._status["error"] = error

    def status(self) -> dict[str, Any]:
        with self._lock:
            status = {**self._status, "restart_required": dict(self._status["restart_required"]),
                      "hidden": dict(self._status["hidden"])}
        if status["hidden"]:
            # an override since gives the value in force now, not the flag the file lost to
            now = self.door.context.origins()
            status["hidden"] = {
                leaf: {**entry, "in_force_from": now[leaf].source, "layer": now[leaf].layer.value} if leaf in now else entry
                for leaf, entry in status["hidden"].items()
            }
        return status

    def restart_required(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._status["restart_required"])


class WatchedDoor(Door):
    """The door of a server that follows a config file: its readbacks say what the file
    changed that only a restart applies, and what went wrong with the file."""

    watcher: ConfigWatcher | None = None

    def watch_status(self) -> dict[str, Any] | None:
        return self.watcher.status() if self.watcher is not None else None

    def restart_required(self) -> dict[str, Any]:
        return self.watcher.restart_required() if self.watcher is not None else {}

    def server_info(self) -> dict[str, Any]:
        info = super().server_info()
        status = self.watch_status()
        if self.watcher is not None:
            for leaf, origin in self.watcher.moved().items():
                info["layers"][leaf] = origin.as_dict()
        if status is not None:
            info["watch"] = status
            info["restart_required"] = sorted(status["restart_required"])
        return info

    def explain(self, leaf: str) -> dict[str, Any]:
        """The door's /config/<leaf>, with the layer that gives the value now when the watched
        file's change moved it (`ConfigWatcher.moved`)."""
        info = super().explain(leaf)
        origin = self.watcher.moved().get(leaf) if self.watcher is not None else None
        if origin is not None:
            info.update(layer=origin.layer.value, source=origin.source, origin=origin.as_dict())
        return info

    def health(self) -> dict[str, Any]:
        """The door's /health, plus whether the watched file asks for a restart or could not
        be applied, in words that match that state; 503 `watch_stopped` when the watcher's
        thread ended. /health needs no key, so it says that much and no more: how many
        leaves, never the file's path, the leaves' names or values, or the error's text
        (which can quote them); /server_info, behind the read key, has all of it."""
        out = super().health()
        if self.watcher is None:
            return out
        died = self.watcher.stopped()
        if died is not None:
            raise DoorError(503, "watch_stopped",
                            "the config file watcher stopped: changes to the watched file are no longer "
                            "applied (the server log says why)",
                            "restart the server to follow the file again", extra={"status": "degraded"})
        status = self.watcher.status()
        pending = len(status["restart_required"])
        broken = status["error"] is not None
        said = []
        if broken:
            said.append("the watched file's last change could not be applied: nothing of it was, the "
                        "config in force is unchanged")
        if pending:
            said.append(f"restart required: {pending} {'leaf' if pending == 1 else 'leaves'} changed in the "
                        f"watched file")
        hidden = len(status["hidden"])
        if hidden:
            said.append(f"{hidden} {'leaf' if hidden == 1 else 'leaves'} of the watched file "
                        f"{'is' if hidden == 1 else 'are'} hidden by a flag or an environment variable (not in force)")
        message = "; ".join(said) or "the watched config file is applied"
        out["details"] = {"restart_required": pending, "watch_error": broken, "hidden": hidden,
                          "message": f"{message} (GET /server_info, with the read key, says which and why)"
                          if said else message}
        return out
