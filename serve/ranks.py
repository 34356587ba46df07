"""`configbags serve --ranks N`: this process is rank 0 of a group and starts N-1 worker
processes (ranks 1..N-1) that adopt its config; an HTTP change is applied on every rank
through `configbags.runtime.dist` (one override broadcast, same entries and epoch). The
ranks share the rendezvous store alone: no torch process group is formed, so no transport
listens in the door's process (gloo's listener keeps every connection any local process
makes to it, and enough of them would use up the door's descriptors).

The group's collectives must be entered by every rank in the same order, but a worker
cannot know when an operator will call. So rank 0 posts each operation under a numbered
key of the rendezvous store (`serve/op/<n>`: override, check or stop) before entering
it; workers wait for the next key in short slices (noticing a vanished server in between)
and then enter the same collective. A worker that died is seen from its process handle,
so a request fails at once with 503 naming it instead of waiting for a timeout.

A worker that is alive but does not answer (stopped, or hung) is seen too: each worker
beats (`serve/beat/<rank>`, its wall clock, from a thread of its own) and records every
operation it finished (`serve/done/<rank>`). A worker whose beat is older than the rank
timeout, or that has not finished an operation posted more than a timeout ago, is stalled:
/health says so, and requests fail at once with 503 naming it, nothing applied. Every
collective runs through the store (`configbags.runtime.dist`), so a stalled worker that is
continued finishes the operations it missed on its own, in step again, and the group is
back in service as soon as it beats (no transport collective is left for it to hang in).

Each worker also posts what it holds after every operation (`serve/state/<rank>`: epoch,
config hash and a digest of every resolved value, runtime leaves included, which the
config hash leaves out), and rank 0 compares it with its own whenever no operation is in
flight: a worker that holds another config is diverged, and /health names it (503).

A worker still stalled after three rank timeouts leaves the group, through the library's
`DistributedContext.leave` (the one that also makes a worker leave after three missed
collectives): it is recorded in the store, rank 0 ends its process (so it can never come
back with a stale config) and logs it, and from then on the group is degraded, as it is when a worker exits by itself: /health answers 503
`rank_left` naming it, reads are served from rank 0's own config (each gone rank shown as
left, with why), and changes are refused naming it, since they need every rank. A restart
brings the group back.

The store lives in a process of its own (`configbags.serve.storehost`: what connects to it
never uses up the door's descriptors, and torch's messages from it are logged at a bounded
rate). It listens on 127.0.0.1 only, on a port the kernel picks, and everything the ranks
post is signed with a secret made for this launch (handed to the workers in their
environment, never on the command line) and the launch's identity: a value some other
local process writes into the store is refused and logged, naming the key, never obeyed.
Rank 0 keeps the newest beat, finished operation and state each worker signed, so one
of its older values written again (a replay) is passed over too. Beats and finished
counts also come down a pipe rank 0 made for each worker (`--beat-fd`), which no other
process can write: rank 0 judges silence by it, so what is written over the store's keys
(a replay that rank 0 never sees replaced included) never ends a worker that beats.

A store whose process is stopped or hung would hold every call to it until it runs again
(torch 2.13's client ignores its timeout on a peer that stops answering; its calls
release the GIL while they wait, but list_keys holds it, which would freeze the whole
door). So the door never asks it without a bound: `store_stalled()` asks it nothing (the
process's state, and whether the monitor's last look came back within the rank timeout);
every call of the monitor, the sweep and the reads goes through a `BoundedStore` (a
thread of its own per client, abandoned past half the rank timeout: StoreStalledError,
503 `store_stalled`), and the keys are listed by the store's process, down its pipe;
every route that asks the rank group runs off the event loop with a deadline; a change
is given up past its deadline, or as soon as the store is named stalled, through a
`Ticket`, which the source rank asks just before it commits, so a store that runs again
aborts what the door already answered 503 for. Once the store process is gone, the monitor
and the sweep end and nothing more is written to it: each call to a dead store would make
torch's client print a native stack trace to the door's stderr.

Run as `python -m configbags.serve.ranks ...` for one worker rank.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import math
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from configbags.packages import load_context
from configbags.runtime.cmdline import print_stderr
from configbags.runtime.context import Context, OverrideEntry
from configbags.runtime.dist import Layout
from configbags.runtime.errors import ConfigError, DistributedConfigError, LayoutError
from configbags.runtime.leaftypes import jsonable
from configbags.runtime.resolve import NO_FACTS, Facts
from configbags.serve.storehost import BoundedStore, StoreHost, StoreStalledError

if TYPE_CHECKING:
    from configbags.runtime import dist

JOIN_KEY = "configbags/join/{}"  # a worker's join nonce, which the library posts on the raw store
OP_KEY = "serve/op/{}"
BEAT_KEY = "serve/beat/{}"  # a worker's wall clock, every BEAT_S
DONE_KEY = "serve/done/{}"  # the last operation a worker finished
STATE_KEY = "serve/state/{}"  # what a worker holds after it: epoch, config hash, digest of values
SECRET_ENV = "CONFIGBAGS_RANK_SECRET"  # the launch's secret, to the workers (argv is public)
JOIN_TIMEOUT_S = 120.0  # workers import torch before they join: slow on a loaded machine
POLL_S = 1.0  # how often an idle worker checks that the server is still there
BEAT_S = 0.5
FOREIGN_S = 0.05  # how soon a worker looks again past an operation rank 0 did not sign (its own
# post replaces it, and rank 0 is waiting for this worker in the collective it posted)
REPLAY_LAG_S = 4 * BEAT_S  # a signed store beat this far behind the pipe's was written back, not posted
OURS = "configbags/"  # the prefix of every key the ranks read or write (beside torch's own)
SWEEP_LOG_S = 10.0
LEAVE_AFTER = 3  # a worker stalled this many rank timeouts (or missed collectives) leaves the
# group (a stall named at one timeout has two more to be continued and catch up)

log = logging.getLogger("configbags.serve.ranks")


class Ticket:
    """One change the door waits for, up to its deadline. The door abandons it when the
    deadline passes; the rank thread asks `commit()` just before it commits: an abandoned
    change is aborted on every rank, so a store that runs again never applies what the door
    already answered 503 for. `abandon()` is False once the commit was sent (too late to
    refuse: the outcome then rests with the store)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "open"

    def commit(self) -> bool:
        with self._lock:
            if self._state == "abandoned":
                return False
            self._state = "committing"
            return True

    @property
    def abandoned(self) -> bool:
        return self._state == "abandoned"

    def abandon(self) -> bool:
        with self._lock:
            if self._state == "committing":
                return False
            self._state = "abandoned"
            return True


def held(context: Context[Any]) -> str:
    """What a rank holds, in a few bytes that differ whenever its config does: the epoch,
    the config hash, and a digest of every resolved value (runtime leaves included)."""
    state = context.state
    values = json.dumps({k: jsonable(v) for k, v in state.values.items()}, sort_keys=True, default=repr)
    digest = hashlib.sha256(values.encode()).hexdigest()[:16]
    return f"epoch={state.epoch} config_hash={context.config_hash()} values={digest}"


class RankGroup:
    """Rank 0's side: the worker processes and the distributed context over all ranks.
    The door calls its operations from one thread; `stalled`, `gone` and the monitor
    thread share what they read under a lock."""

    def __init__(self, context: Context[Any], package: str, world_size: int, *, timeout: float) -> None:
        if world_size < 2:
            raise DistributedConfigError(f"--ranks {world_size}: a rank group needs at least 2 ranks")
        self.context = context
        self.package = package
        self.world_size = world_size
        self.timeout = timeout
        self.procs: list[subprocess.Popen[bytes]] = []
        self.dctx: dist.DistributedContext | None = None
        self.addr = ""
        self._op = 0
        self._posted: dict[int, float] = {}  # operation -> when it was posted (monotonic)
        self._left: dict[int, str] = {}  # rank -> why it left the group
        self._beats: dict[int, float] = {}  # rank -> its newest beat that this launch signed
        self._done: dict[int, int] = {}  # rank -> the newest operation it said it finished
        # rank -> the read end of the worker's beat pipe, and when rank 0 last read a beat from
        # it: no other process can write there, so a silence seen on it is the worker's own
        self._pipes: dict[int, int] = {}
        self._heard: dict[int, float] = {}
        self._seen_keys: set[str] = set()  # store keys a worker posted (none is ever removed by it)
        self._removed: set[str] = set()  # those seen removed or replayed since (logged once each)
        # A client of its own for stalled(): the rank thread's client can be inside a wait
        # (which holds it) while /health asks on the event loop.
        self._watch: Any = None
        self._watch_lock = threading.Lock()
        self._halt = threading.Event()
        self._monitor: threading.Thread | None = None
        self._sweeping: threading.Thread | None = None
        # held by the rank thread through each operation: what ranks hold is compared only
        # between operations, never while one is half done
        self._busy = threading.Lock()
        self._diverged: dict[int, str] = {}
        # the store's keys as rank 0 found them once the group was up (torch's process-group
        # keys, the joins, posted unsigned): the sweep leaves these
        self._sweeper: Any = None  # a raw client: it lists and removes what the others do not read
        self._expected: set[str] = set()
        self._swept: dict[str, int] = {}  # what was removed since the last log line -> how many
        self._swept_logged = -math.inf
        self._store: StoreHost | None = None
        self._store_seen = math.inf  # when the monitor last finished a look through the store

    def start(self, record: Any, *, role: str, facts: Facts | None = None) -> None:
        """Start the workers, join the group, publish `record` (with the model's `facts`) on
        every rank and seal.
        The workers start before this process imports torch, so the imports (seconds each)
        overlap: the store's socket is bound first (loopback, a port the kernel picks), and
        a worker that connects early waits in its backlog. A layout that cannot fit the
        group is refused before any worker starts."""
        self._check_layout(record)
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.addr = f"127.0.0.1:{listener.getsockname()[1]}"
        # never the door's: what connects to the store uses up that process's descriptors;
        # its torch log is its own (its warnings of a bad client are counted, StoreHost)
        self._store = StoreHost.start(listener, dict(os.environ))
        # the door's torch C++ log (a store read timing out while a worker stalls: `[c10d]
        # waitForInput ...`) would reach serve's log raw, unescaped and at every poll; the
        # door says what happened to the rank itself. Read when torch is imported, below.
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
        secret = secrets.token_hex(32)
        env = {**os.environ, SECRET_ENV: secret,
               # an idle worker's waits time out every POLL_S, which c10d logs as a warning
               "TORCH_CPP_LOG_LEVEL": os.environ["TORCH_CPP_LOG_LEVEL"]}
        for rank in range(1, self.world_size):
            reader, writer = os.pipe()
            os.set_blocking(reader, False)
            self._pipes[rank] = reader
            try:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "configbags.serve.ranks", "--package", self.package,
                     "--rank", str(rank), "--world-size", str(self.world_size), "--init-addr", self.addr,
                     "--parent", str(os.getpid()), "--beat-fd", str(writer)],
                    stdin=subprocess.DEVNULL, env=env, pass_fds=(writer,),
                ))
            finally:
                os.close(writer)
        from configbags.runtime import dist

        self._store.wait_ready(JOIN_TIMEOUT_S)
        store = dist.connect_store(self.addr, is_master=False, timeout=JOIN_TIMEOUT_S)
        self._await_workers(store)
        # every worker reached the store: the rest of the join is round trips
        # no torch process group: every collective runs through the store, and gloo's listener
        # would keep every connection any local process makes to it, in the door's process
        dctx = dist.init_distributed(0, self.world_size, store=store, timeout=self.timeout, process_group=False,
                                     context=self.context, secret=secret.encode(), leave_after=LEAVE_AFTER)
        dctx.timeout = self.timeout  # joined: from here a silent rank is named after `timeout`
        self.dctx = dctx
        # every call the door's threads make to the store is bounded (never the rank thread's
        # collectives: a change is given up at its deadline through its Ticket instead)
        self._watch = BoundedStore.connect(lambda: dctx.client(self.addr), self.call_deadline_s, host=self._store)
        dctx.publish(record, role=role, facts=facts)
        dctx.seal()
        self._sweeper = BoundedStore.connect(lambda: dist.connect_store(self.addr, is_master=False,
                                                                        timeout=self.timeout),
                                             self.call_deadline_s, host=self._store)
        if hasattr(self._sweeper.client, "list_keys"):  # torch 2.6 and later
            self._expected = set(self._sweeper.list_keys())
        else:
            self._sweeper = None
            log.warning("this torch cannot list the rendezvous store's keys: what another local process writes "
                        "into it is not removed (torch 2.6 or later sweeps it)")
        self._store_seen = time.monotonic()
        self._monitor = threading.Thread(target=self._watch_ranks, name="configbags-rank-monitor", daemon=True)
        self._monitor.start()
        if self._sweeper is not None:
            self._sweeping = threading.Thread(target=self._sweep_store, name="configbags-store-sweep", daemon=True)
            self._sweeping.start()

    @property
    def call_deadline_s(self) -> float:
        """How long one call of the door's threads to the store may take: half of /health's
        deadline, so a caller that first waits on the lock held through one such call
        still answers in time."""
        return max(self.timeout, 1.0) / 2

    def _await_workers(self, store: Any) -> None:
        """Wait until every worker has posted its join (it imports torch first: seconds),
        naming at once a worker that exits before it, and one stopped (SIGSTOP) for longer
        than the rank timeout, instead of waiting out the join timeout in silence."""
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        pending = dict(enumerate(self.procs, start=1))
        stopped_since: dict[int, float] = {}
        while pending:
            now = time.monotonic()
            for rank, proc in list(pending.items()):
                if store.check([JOIN_KEY.format(rank)]):
                    del pending[rank]
                elif (code := proc.poll()) is not None:
                    how = f"killed by signal {-code}" if code < 0 else f"status {code}: its output above says why"
                    raise DistributedConfigError(f"start: worker rank {rank} exited ({how}) before it joined "
                                                 f"the group")
                elif _stopped(proc.pid):
                    since = stopped_since.setdefault(rank, now)
                    if now - since > self.timeout:
                        raise DistributedConfigError(
                            f"start: worker rank {rank} (pid {proc.pid}) is stopped (SIGSTOP) and did not join "
                            f"within the rank timeout ({self.timeout:g} s)")
                else:
                    stopped_since.pop(rank, None)
            if pending and now > deadline:
                raise DistributedConfigError(
                    f"start: worker rank(s) {', '.join(map(str, pending))} did not join within "
                    f"{JOIN_TIMEOUT_S:g} s (still importing on a loaded machine, or hung)")
            time.sleep(0.05)

    def _check_layout(self, record: Any) -> None:
        """The parallel sizes `record` resolves to lay out exactly this group's ranks (the
        publish checks it again on every rank; this only saves starting workers for nothing)."""
        values, _ = self.context.builder.resolve_record(record, NO_FACTS, None)
        layout = Layout.from_values(values)
        if layout.world_size != self.world_size:
            raise LayoutError(
                f"the config lays out tp_size*pp_size={layout.tp_size}*{layout.pp_size}="
                f"{layout.world_size} ranks, but the group has {self.world_size}"
            )

    def _watch_ranks(self) -> None:
        """Look at the workers every beat, so a stalled one leaves on time (and says so in
        the log) even when no one asks; ends with stop()."""
        while not self._halt.wait(BEAT_S):
            if self._store_gone():
                self.gone()  # every rank leaves with it, logged once; nothing is asked of the store after
                return
            if self._store_stopped():
                continue  # a call would stay inside the stopped store (and its client with it)
            if self._look():
                self._store_seen = time.monotonic()

    def _look(self) -> bool:
        """One look at the workers; False when the store did not answer it in time (once that
        lasts a rank timeout, store_stalled() names it)."""
        try:
            self.stalled()
            self.diverged()
        except StoreStalledError:
            return False
        except Exception:  # a look that fails otherwise is retried at the next beat
            log.debug("a look at the rank group failed", exc_info=True)
        return True

    def _store_gone(self) -> bool:
        return self._store is not None and self._store.exited() is not None

    def _store_stopped(self) -> bool:
        host = self._store
        return host is not None and host.exited() is None and _stopped(host.proc.pid)

    def store_stalled(self) -> str | None:
        """Why the rendezvous store's process is alive but not answering (stopped, or the
        monitor's look through it has not come back within the rank timeout), or None. Asks
        nothing of the store and takes no lock: a call to a stopped store never returns
        until it runs again (torch's client timeout does not cover it)."""
        host = self._store
        if host is None or self.dctx is None or host.exited() is not None:
            return None  # not started yet, or gone: gone() names it
        if _stopped(host.proc.pid):
            return f"the rendezvous store (pid {host.proc.pid}) is stopped (SIGSTOP)"
        quiet = time.monotonic() - self._store_seen
        if quiet > max(self.timeout, 3 * BEAT_S):
            return f"the rendezvous store (pid {host.proc.pid}) has not answered for {quiet:.1f} s (hung?)"
        return None

    def _sweep_store(self) -> None:
        """Sweep the store every beat, on a thread of its own (a key removed between the
        listing and the read makes that read wait out the store's timeout: never the
        monitor's), until stop()."""
        while not self._halt.wait(BEAT_S):
            if self._store_gone():
                return  # each call to a dead store would write a native stack trace into the log
            if self._store_stopped():
                continue  # as in _watch_ranks
            with contextlib.suppress(Exception):  # a sweep that fails is retried at the next beat
                self.sweep()

    def sweep(self) -> None:
        """Bound what the rendezvous store holds (any local process that finds its port can
        write into it, and its process keeps it all): a key outside configbags' prefix
        that was not there when the group came up (torch writes its keys while the process
        group forms, never after) is removed; a value under the prefix that this launch did
        not sign is replaced by an empty one, atomically (compare-and-set on exactly its
        bytes: a rank's own post is never lost), so its bytes are freed and the ranks still
        pass over it as foreign. Each is logged, naming the key escaped (and an emptied
        value's size), at most one line per SWEEP_LOG_S with the count of the rest."""
        from configbags.runtime.dist import SignedStore

        store, signer = self._sweeper, getattr(self._watch, "client", None)  # the signer under its bounds
        if store is None or not isinstance(signer, SignedStore):
            return
        keys = [k for k in store.list_keys() if k not in self._expected]
        ours = [k for k in keys if k.startswith(OURS)]
        for key in keys:
            # removed unread: reading it only to say its size would hold its bytes here too
            if not key.startswith(OURS) and store.delete_key(key):
                self._note_swept(f"removed key {key!a}")
        for key in ours:
            if not store.check([key]):
                continue  # removed since the listing (a collective's spent key)
            name = key[len(OURS):]
            data = bytes(store.get(key))
            if not data:
                continue  # already emptied: a name, no value
            if signer.verifies(name, data):
                continue
            with contextlib.suppress(Exception):  # replaced meanwhile (by a rank's post): left as is
                if bytes(store.compare_set(key, cast(str, data), "")) == b"":
                    self._note_swept(f"emptied key {key!a} ({len(data)} bytes, not signed by this launch)")
        self._flush_swept()

    def _note_swept(self, what: str) -> None:
        if not self._swept and time.monotonic() - self._swept_logged >= SWEEP_LOG_S:
            self._swept_logged = time.monotonic()
            log.warning("the rendezvous store: %s: another local process wrote it; more are counted (one line "
                        "every %g s)", what, SWEEP_LOG_S)
            return
        self._swept[what] = self._swept.get(what, 0) + 1

    def _flush_swept(self, *, every: bool = False) -> None:
        if self._swept and (every or time.monotonic() - self._swept_logged >= SWEEP_LOG_S):
            last = next(reversed(self._swept))
            log.warning("the rendezvous store: %d more keys another local process wrote were removed or emptied, "
                        "the last: %s", sum(self._swept.values()), last)
            self._swept.clear()
            self._swept_logged = time.monotonic()

    def dead(self) -> list[int]:
        """Worker ranks whose process has exited (by itself, or ended on leaving)."""
        return [rank for rank, proc in enumerate(self.procs, start=1) if proc.poll() is not None]

    def gone(self) -> dict[int, str]:
        """Worker ranks that left the group, each with why: exited, ended after a stall
        longer than LEAVE_AFTER rank timeouts, or made to leave by the distributed context
        after LEAVE_AFTER missed collectives (then ended here). They never come back until a
        restart."""
        with self._watch_lock:
            host = self._store if self.dctx is not None else None
            code = host.exited() if host is not None else None
            if host is not None and code is not None:  # every rank's store went with it: none can go on
                for rank in range(1, self.world_size):
                    if rank not in self._left:
                        self._end(rank, f"lost the rendezvous store, whose process (pid {host.proc.pid}) exited "
                                        f"with code {code}")
            for rank in self.dead():
                if rank not in self._left:
                    code = self.procs[rank - 1].returncode
                    self._leave(rank, f"exited with code {code}" if code is not None else "exited")
            for rank, why in list(self.dctx.left.items()) if self.dctx is not None else ():
                if rank not in self._left:
                    self._end(rank, why)
            return dict(sorted(self._left.items()))

    def _leave(self, rank: int, why: str) -> None:
        """Record that `rank` left (the caller holds the lock), in the store too (the
        distributed context refuses every collective from here, naming it), and say it once."""
        self._left[rank] = why
        # recorded in the store unless it is gone (torch's client would log a native trace)
        if self.dctx is not None and not self._store_gone():
            with contextlib.suppress(Exception):  # the store closes with this process at shutdown
                self.dctx.leave(rank, why, store=self._watch)
        log.warning("rank %d of %d: the group is degraded: reads are served from rank 0's config, changes "
                    "are refused until the server is restarted", rank, self.world_size)

    def stalled(self) -> dict[int, str]:
        """Worker ranks alive but not answering, each with what was seen: a beat older than
        the rank timeout, or an operation left unfinished for longer than it. One stalled
        for LEAVE_AFTER timeouts leaves the group here: its process is ended."""
        if self._watch is None:
            return {}
        wait = max(self.timeout, 3 * BEAT_S)
        found: dict[int, str] = {}
        gone = self.gone()
        with self._watch_lock:
            seen = {rank: (self._beat(rank), self._finished(rank))
                    for rank in range(1, self.world_size) if rank not in gone}
            for rank, (beat, done) in seen.items():
                silent = time.time() - beat if beat is not None else 0.0
                posted = self._posted.get(done + 1)
                late = time.monotonic() - posted if posted is not None else 0.0
                # beat and count come through the worker's pipe too, which no other process
                # writes: what another one writes over its store keys never makes it silent
                if silent > LEAVE_AFTER * wait:
                    self._end(rank, f"silent for {silent:.1f} s (stopped or hung), over {LEAVE_AFTER:g} x the "
                                    f"rank timeout")
                elif late > LEAVE_AFTER * self.timeout:
                    self._end(rank, f"did not finish operation {done + 1} in {late:.1f} s (hung), over "
                                    f"{LEAVE_AFTER:g} x the rank timeout")
                elif silent > wait:
                    found[rank] = f"silent for {silent:.1f} s (stopped or hung)"
                elif late > self.timeout:
                    found[rank] = f"has not finished operation {done + 1} after {late:.1f} s (hung?)"
            # operations every worker finished need no post time any more
            for op in [op for op in self._posted if op <= min((d for _, d in seen.values()), default=0)]:
                del self._posted[op]
        return found

    def diverged(self) -> dict[int, str]:
        """Worker ranks (still in the group) whose posted config differs from rank 0's, each
        with what it holds. Compared only between operations; while one is in flight, the
        last comparison stands. A worker behind on operations is left to stalled()."""
        if not self._busy.acquire(blocking=False):
            with self._watch_lock:
                return dict(self._diverged)
        try:
            own = held(self.context)
            gone = self.gone()
            found: dict[int, str] = {}
            with self._watch_lock:
                for rank in range(1, self.world_size):
                    done = self._finished(rank)
                    if rank in gone or done < self._op:
                        continue
                    op, _, theirs = (self._read(STATE_KEY.format(rank), rank) or "").partition(" ")
                    if op == f"op={done}" and theirs != own:  # an older state (a replay) is passed over
                        found[rank] = f"holds {theirs}, rank 0 holds {own}"
                if found and found != self._diverged:
                    log.error("config diverged: %s", "; ".join(f"rank {r} {why}" for r, why in found.items()))
                self._diverged = found
            return dict(found)
        finally:
            self._busy.release()

    def _end(self, rank: int, why: str) -> None:
        """A stalled worker leaves: end its process (a stopped one too), so it can never
        resume with a config the group moved past (the caller holds the lock)."""
        proc = self.procs[rank - 1]
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        self._leave(rank, f"{why}; its process (pid {proc.pid}) was ended")

    def _beat(self, rank: int) -> float | None:
        """When the rank last beat: the newer of what rank 0 last read from its pipe and the
        newest beat this launch signed in the store (a foreign one is refused and logged by
        the store; an older one written again, or one falling behind the pipe's, is a replay:
        logged, and passed over)."""
        heard = self._hear(rank)
        value = self._read(BEAT_KEY.format(rank), rank)
        if value is not None:
            posted = float(value)
            if posted < self._beats.get(rank, 0.0) or (heard is not None and posted < heard - REPLAY_LAG_S):
                self._replayed(BEAT_KEY.format(rank), rank)
            self._beats[rank] = max(posted, self._beats.get(rank, 0.0))
        seen = [t for t in (heard, self._beats.get(rank)) if t is not None]
        return max(seen) if seen else None

    def _hear(self, rank: int) -> float | None:
        """Read what the worker wrote to its beat pipe since the last look (one line per beat:
        the last operation it finished); returns when a beat was last read."""
        fd = self._pipes.get(rank)
        if fd is not None:
            with contextlib.suppress(BlockingIOError, OSError):  # nothing new; or the worker is gone
                lines = os.read(fd, 1 << 16).split(b"\n")
                if lines != [b""]:
                    self._heard[rank] = time.time()
                    counts = [int(line) for line in lines if line.isdigit()]
                    if counts:
                        self._done[rank] = max(max(counts), self._done.get(rank, 0))
        return self._heard.get(rank)

    def _replayed(self, key: str, rank: int) -> None:
        """A signed value older than one already seen under `key`: a worker's beats and
        counts only grow, so another process wrote an old one back (a replay). Like a
        forgery, it never makes a healthy rank look silent: its beats also come through its pipe."""
        if key not in self._removed:
            self._removed.add(key)
            log.warning("an older value of store key %s of rank %d was written back by another process (a replay); "
                        "refused: rank %d is judged by the beats it sends rank 0 over its own pipe", key, rank, rank)

    def _finished(self, rank: int) -> int:
        """The newest operation the rank said it finished (an older count written again is
        passed over, as for beats)."""
        value = self._read(DONE_KEY.format(rank), rank)
        if value is not None and int(value) < self._done.get(rank, 0):
            self._replayed(DONE_KEY.format(rank), rank)
        self._done[rank] = max(int(value or 0), self._done.get(rank, 0))
        return self._done[rank]

    def _read(self, key: str, rank: int) -> str | None:
        from configbags.runtime.dist import ForeignWriteError

        store = self._watch
        try:
            if store.check([key]):
                self._seen_keys.add(key)
                value: str = store.get(key).decode()
                return value
            # a worker never removes what it posted: another local process does (it never
            # makes a healthy rank look silent: the pipe's beats are the worker's own)
            if key in self._seen_keys and key not in self._removed:
                self._removed.add(key)
                log.warning("store key %s of rank %d was removed by another process; rank %d is not ended "
                            "for what that hides", key, rank, rank)
            return None
        except ForeignWriteError:
            return None  # logged, naming the key, by the store
        except StoreStalledError:
            raise  # the caller answers 503 naming the store
        except Exception:  # the store closes with this process (shutdown): nothing to tell
            return None

    def _post(self, op: str) -> dist.DistributedContext:
        from configbags.runtime.dist import RankLeftError

        store = self.store_stalled()  # first: it asks the store nothing (gone() waits on its lock)
        if store is not None:
            raise StoreStalledError(f"{store}; every rank's change goes through it, so nothing was applied on "
                                    f"any rank; continue it (SIGCONT) or restart the server")
        gone = self.gone()
        if gone:
            raise RankLeftError(
                f"rank(s) {', '.join(map(str, gone))} of {self.world_size} left the group "
                f"({'; '.join(f'rank {r} {why}' for r, why in gone.items())}); a change needs every rank, so "
                f"nothing was applied on any rank; restart the server to bring the group back"
            )
        stalled = self.stalled()
        if stalled:
            raise DistributedConfigError(
                f"rank(s) {', '.join(map(str, stalled))} of {self.world_size} stalled: "
                f"{'; '.join(f'rank {r} {why}' for r, why in stalled.items())}; nothing was applied on any "
                f"rank, and requests are refused until it answers again (it catches up by itself) or, "
                f"after {LEAVE_AFTER:g} x the rank timeout, leaves the group"
            )
        return self._send(op)

    def _send(self, op: str) -> dist.DistributedContext:
        assert self.dctx is not None, "start() first"
        self._op += 1
        with self._watch_lock:
            self._posted[self._op] = time.monotonic()
        self.dctx.store.set(OP_KEY.format(self._op), op)
        return self.dctx

    def override(self, source: str, leaves: dict[str, Any], ticket: Ticket | None = None) -> tuple[OverrideEntry, ...]:
        """Apply `leaves` as the operator on every rank (the caller holds acting_as off:
        this sets it for the source rank, where policy and owner are checked); aborted
        everywhere if `ticket` was abandoned before the commit."""
        from configbags.serve.door import OPERATOR

        with self._busy:
            if ticket is not None and ticket.abandoned:  # given up while it queued: never posted
                raise StoreStalledError("the change was given up before it began; nothing was applied on any rank")
            dctx = self._post("override")
            dctx.gate = ticket.commit if ticket is not None else None
            try:
                with self.context.acting_as(OPERATOR):
                    return dctx.override(source, **leaves)
            finally:
                dctx.gate = None

    def check(self) -> list[tuple[str, int, str]]:
        """Every rank's (config_hash, epoch, digest of all values), or DistributedConfigError
        naming the ranks that differ or did not answer."""
        with self._busy:
            return self._post("check").check_consistency()

    def stop(self, grace_s: float = 5.0) -> None:
        """Tell the workers that are left to exit, wait `grace_s`, then kill what is left."""
        self._halt.set()
        for thread in (self._monitor, self._sweeping):
            if thread is not None:
                thread.join(timeout=5)
        self._flush_swept(every=True)
        if self.dctx is not None and len(self.dead()) < len(self.procs):
            # a worker or the store may be gone by now: killing below covers it
            with contextlib.suppress(ConfigError, RuntimeError, OSError):
                self._send("stop")
        deadline = time.monotonic() + grace_s
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for fd in self._pipes.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._pipes.clear()
        if self._store is not None:  # last: the workers' stop goes through it
            self._store.stop(grace_s)


def worker(package: str, rank: int, world_size: int, init_addr: str, parent: int, secret: bytes,
           beat_fd: int | None = None) -> int:
    """One worker rank: adopt the config from rank 0, then follow its operations."""
    from configbags.runtime import dist

    context = load_context(package)
    dctx = dist.init_distributed(rank, world_size, init_addr=init_addr, process_group=False,
                                 timeout=JOIN_TIMEOUT_S, context=context, secret=secret)
    store = dctx.store
    # liveness goes through a client of its own (the main one may be inside a long wait)
    beat = dctx.client(init_addr)
    finished = [0]  # the last operation this worker finished, which every beat posts again
    threading.Thread(target=_beat, args=(beat, rank, finished, beat_fd), daemon=True, name="configbags-beat").start()
    dctx.publish()
    dctx.seal()
    beat.set(STATE_KEY.format(rank), f"op=0 {held(context)}")
    op = 0
    while True:
        op += 1
        what = _next_op(store, OP_KEY.format(op), parent)
        if what is None:
            return 0
        try:
            if what == "override":
                dctx.override("")  # the source rank's leaves and entries count
            elif what == "check":
                dctx.check_consistency()
            elif what == "stop":
                return 0
        except dist.RankLeftError as exc:
            print_stderr(f"configbags serve rank {rank}: {exc}")
            return 1
        except ConfigError:
            pass  # raised on rank 0 too, which answers the request; nothing changed here
        # before DONE (rank 0 reads them the other way), and naming the operation, so an
        # older state written again is not taken for this one
        beat.set(STATE_KEY.format(rank), f"op={op} {held(context)}")
        beat.set(DONE_KEY.format(rank), str(op))
        finished[0] = op


def _stopped(pid: int) -> bool:
    """True while process `pid` is stopped (state T in /proc; False where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def _next_op(store: Any, key: str, parent: int) -> str | None:
    """Wait for rank 0's operation under `key`; None once the server is gone. A value rank 0
    did not sign (another process wrote it) is refused, logged by the store, and waited past:
    rank 0's own post replaces it."""
    from configbags.runtime.dist import ForeignWriteError

    while True:
        try:
            store.wait([key], timedelta(seconds=POLL_S))
            return str(store.get(key).decode())
        except ForeignWriteError:
            time.sleep(FOREIGN_S)
        except Exception:  # a timeout, or the store is gone with the server
            pass
        if os.getppid() != parent or not _store_alive(store, key):
            return None


def _beat(store: Any, rank: int, finished: list[int], fd: int | None) -> None:
    """Say this worker is alive, every BEAT_S, until the process ends (a stopped process
    stops beating: that is what rank 0 sees), and post again the last operation it
    finished, so one value another process writes over it is healed at the next beat. Both
    also go down the pipe rank 0 made for this worker, which no other process can write
    into (the store can be written by any local process, and replayed)."""
    if fd is not None:
        os.set_blocking(fd, False)  # rank 0 stopped: its pipe fills; a beat is skipped, never waited on
    with contextlib.suppress(Exception):  # the store went with the server: the worker exits too
        while True:
            store.set(BEAT_KEY.format(rank), f"{time.time():.3f}")
            if finished[0]:
                store.set(DONE_KEY.format(rank), str(finished[0]))
            if fd is not None:
                with contextlib.suppress(BlockingIOError):
                    os.write(fd, f"{finished[0]}\n".encode())
            time.sleep(BEAT_S)


def _store_alive(store: Any, key: str) -> bool:
    try:
        store.check([key])
    except Exception:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="configbags.serve.ranks", description="one worker rank of configbags serve")
    parser.add_argument("--package", required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--init-addr", required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--beat-fd", type=int, default=None, help="the pipe rank 0 reads this worker's beats from")
    args = parser.parse_args(argv)
    secret = os.environ.pop(SECRET_ENV, "")  # not handed on to anything this rank starts
    if not secret:
        print_stderr(f"configbags serve rank {args.rank}: no launch secret in ${SECRET_ENV}; worker ranks are "
                     f"started by `configbags serve --ranks N`, which hands them one")
        return 2
    try:
        return worker(args.package, args.rank, args.world_size, args.init_addr, args.parent, secret.encode(),
                      args.beat_fd)
    except ConfigError as exc:
        print_stderr(f"configbags serve rank {args.rank}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
