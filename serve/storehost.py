"""The rendezvous store of `configbags serve --ranks N`, in a process of its own.

torch's TCPStore keeps every client that connects, idle or not, and any local process can
connect to it. In the door's process those connections would use up the door's file
descriptors (20000 idle ones, and /health and PATCH answer nothing); here they use up this
process's, and the ranks' clients, all connected once the group is up, go on working (the
store's event loop sheds a connection it cannot take: libuv keeps a spare descriptor for
that). The door starts it on a listening socket bound before any rank starts and keeps
only clients of it.

What torch's store writes to stderr (a warning per malformed request, each with an
18-line native stack trace: a key over its 8192-byte limit, from any local process) comes
to the door down a pipe and is logged there at a bounded rate (`StoreOutput`): the first
message at once (its first line, escaped), the rest counted, one line per LOG_INTERVAL_S.

The store lives until the door closes this process's stdin (stop(), or the door's exit:
the kernel closes it then too), so it never outlives the server.

Run as `python -m configbags.serve.storehost --fd FD` by `StoreHost.start` only."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import logging
import math
import os
import queue
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from configbags.runtime.cmdline import print_stderr
from configbags.runtime.errors import DistributedConfigError

log = logging.getLogger("configbags.serve.ranks")

READY = b"ready\n"
LIST_KEYS = b"keys\n"  # the door's request for the store's keys, down the store process's stdin
LOG_INTERVAL_S = 10.0
LINE_BYTES = 4096  # a longer line is cut: what a client sends never makes a line grow here
SHOWN_CHARS = 200
# torch's C++ log records begin `[W1202 02:38:06.466620513 TCPStoreLibUvBackend.cpp:126] `
# (level, date, time, file:line: left out of the line logged); a native stack trace after
# one (`Exception raised from ... (most recent call first):`, `frame #0: ...`) continues it
_HEADER = re.compile(rb"^\[[A-Z]\d{4} \d\d:\d\d:\d\d\.\d+ [^\]]*\] ?")
_CONTINUED = re.compile(rb"^(\s|frame #\d+|Exception raised from |$)")


class StoreStalledError(DistributedConfigError):
    """The rendezvous store's process is alive but does not answer (stopped, or hung): every
    collective goes through it, so nothing can be applied until it answers again."""


# torch's client calls that talk to the store (each waits on it: torch 2.13 ignores the
# client's timeout once a store stops answering, but releases the GIL while it waits)
STORE_CALLS = frozenset({"add", "check", "compare_set", "delete_key", "get", "multi_get", "num_keys", "set", "wait"})


class BoundedStore:
    """A client of the rendezvous store whose calls each answer within `deadline_s`: each
    runs on a thread of this client's own, and one that is not back by then raises
    StoreStalledError (its thread is left to it). Until it comes back every call raises at
    once: the client's connection is inside it. `list_keys` holds the GIL while it waits,
    so it is never called here: it goes to the store process (`StoreHost.list_keys`).
    Anything else (a signer's `verifies`, `run`) is the client's own, asked directly."""

    def __init__(self, client: Any, deadline_s: float, *, host: StoreHost | None = None) -> None:
        self.client = client
        self.deadline_s = deadline_s
        self.host = host
        self._stuck: concurrent.futures.Future[Any] | None = None
        # a daemon thread, not an executor's: one stuck in a store that never answers again
        # must not hold the interpreter's exit
        self._calls: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], concurrent.futures.Future[Any]]]
        self._calls = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="configbags-store-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            call, args, future = self._calls.get()
            try:
                future.set_result(call(*args))
            except BaseException as exc:  # handed to the caller (if it still waits)
                future.set_exception(exc)

    @classmethod
    def connect(cls, connect: Callable[[], Any], deadline_s: float, *, host: StoreHost | None = None) -> BoundedStore:
        """A client made by `connect()`, bounded like its calls (torch's client constructor
        waits on the store's answer too)."""
        store = cls(None, deadline_s, host=host)
        store.client = store._bounded("connect", connect)()
        return store

    def __getattr__(self, name: str) -> Any:
        if name == "list_keys":
            return self._list_keys
        attr = getattr(self.client, name)
        return self._bounded(name, attr) if name in STORE_CALLS else attr

    def _bounded(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def bounded(*args: Any) -> Any:
            if self._stuck is not None and not self._stuck.done():
                raise StoreStalledError(f"{self.where} has not answered a call of over {self.deadline_s:g} s ago "
                                        f"yet (stopped or hung)")
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._calls.put((call, args, future))
            try:
                return future.result(timeout=self.deadline_s)
            except concurrent.futures.TimeoutError:
                self._stuck = future
                raise StoreStalledError(f"{self.where} did not answer {name} within {self.deadline_s:g} s "
                                        f"(stopped or hung)") from None
        return bounded

    @property
    def where(self) -> str:
        return "the rendezvous store" + (f" (pid {self.host.proc.pid})" if self.host is not None else "")

    def _list_keys(self) -> list[str]:
        if self.host is None:
            raise StoreStalledError("no store process to list the rendezvous store's keys")
        return self.host.list_keys(self.deadline_s)


class StoreOutput:
    """What the store process writes, as log lines at a bounded rate: each record (a line,
    with the lines that continue it folded in and left out) is one event; the first is
    logged at once, the ones after it counted and logged as one line with their number and
    the last of them once LOG_INTERVAL_S is over. Fed from one thread."""

    def __init__(self, interval: float = LOG_INTERVAL_S) -> None:
        self.interval = interval
        self._count = 0
        self._last = ""
        self._logged = -math.inf

    def line(self, raw: bytes) -> None:
        if _CONTINUED.match(raw):
            return  # a frame of the native stack trace after a record, or a blank line
        header = _HEADER.match(raw)
        text = raw[header.end():] if header else raw
        shown = ascii(text.rstrip(b"\r\n").decode("utf-8", "replace"))[1:-1]
        shown = shown if len(shown) <= SHOWN_CHARS else f"{shown[:SHOWN_CHARS]}..."
        if not self._count and time.monotonic() - self._logged >= self.interval:
            self._logged = time.monotonic()
            self._last = shown
            log.warning("the rendezvous store (torch): %s (native stack traces left out; more are counted: one "
                        "line every %g s)", shown, self.interval)
            return
        self._count += 1
        self._last = shown

    def flush(self, *, every: bool = False) -> None:
        """Log what was counted, once the interval is over (or at once with `every`)."""
        if self._count and (every or time.monotonic() - self._logged >= self.interval):
            log.warning("the rendezvous store (torch): %d more messages in the last %.0f s, the last: %s",
                        self._count, time.monotonic() - self._logged, self._last)
            self._count = 0
            self._logged = time.monotonic()

    def wait_s(self) -> float | None:
        """How long a reader may wait for more before a flush is due (None: no limit)."""
        return max(0.0, self._logged + self.interval - time.monotonic()) if self._count else None


class StoreHost:
    """The door's side: the store process, its readiness, and the thread that logs its
    output. The listening socket passes to the process; the door keeps no copy."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.output = StoreOutput()
        self._keys_lock = threading.Lock()
        self._asked = 0  # list_keys requests written, and replies read (a late one is passed over)
        self._answered = 0
        self._replies = b""
        self._relay = threading.Thread(target=self._relay_output, name="configbags-store-output", daemon=True)
        self._relay.start()

    @classmethod
    def start(cls, listener: socket.socket, env: dict[str, str]) -> StoreHost:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "configbags.serve.storehost", "--fd", str(listener.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, pass_fds=(listener.fileno(),))
        finally:
            listener.close()
        return cls(proc)

    def wait_ready(self, timeout: float) -> None:
        """Until the store listens (the process imports torch first: seconds), naming a
        process that exits before it, or one that takes longer than `timeout`."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                if os.read(fd, len(READY)) == READY:
                    return
                break  # closed (it exited) or something else: said below
            if self.proc.poll() is not None:
                break
        hung = self.proc.poll() is None
        self.stop()  # its output is logged before the error is raised
        if hung:
            raise DistributedConfigError(f"start: the rendezvous store (pid {self.proc.pid}) did not listen within "
                                         f"{timeout:g} s (still importing torch on a loaded machine, or hung)")
        raise DistributedConfigError(f"start: the rendezvous store (pid {self.proc.pid}) exited with code "
                                     f"{self.proc.returncode} before it listened (its output above says why)")

    def list_keys(self, timeout: float) -> list[str]:
        """The store's keys, listed by the store process itself (torch's client holds the
        GIL while it waits for them: from the door, a store that stops answering would
        freeze every thread); StoreStalledError if no answer comes within `timeout`."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        with self._keys_lock:
            deadline = time.monotonic() + timeout
            if self._answered == self._asked:  # else the last request is still unanswered: no new one
                self._asked += 1
                os.write(self.proc.stdin.fileno(), LIST_KEYS)
            fd = self.proc.stdout.fileno()
            while True:
                while b"\n" in self._replies:
                    line, _, self._replies = self._replies.partition(b"\n")
                    self._answered += 1
                    if self._answered == self._asked:
                        return list(json.loads(line))
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                    raise StoreStalledError(f"the rendezvous store (pid {self.proc.pid}) did not list its keys "
                                            f"within {timeout:g} s (stopped or hung)")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise StoreStalledError(f"the rendezvous store (pid {self.proc.pid}) closed its output")
                self._replies += chunk

    def exited(self) -> int | None:
        """The store process's exit code once it has exited (None while it runs)."""
        return self.proc.poll()

    def stop(self, grace_s: float = 5.0) -> None:
        """Close its stdin (it exits), wait `grace_s`, then kill it; log what was counted."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self._relay.join(timeout=5)
        self.output.flush(every=True)

    def _relay_output(self) -> None:
        """Read the store process's stderr to its end, a line at a time (a line longer than
        LINE_BYTES is cut there, the rest of it dropped), logging through `output`; flush
        when an interval is over, also while nothing more comes."""
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        pending, dropping = b"", False
        with contextlib.suppress(OSError, ValueError):  # closed under it at shutdown
            while True:
                ready, _, _ = select.select([fd], [], [], self.output.wait_s())
                chunk = os.read(fd, 1 << 16) if ready else None
                if chunk == b"":
                    if pending and not dropping:
                        self.output.line(pending)
                    return
                lines = (pending + (chunk or b"")).split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    if not dropping:
                        self.output.line(raw)
                    dropping = False
                if len(pending) > LINE_BYTES:
                    if not dropping:
                        self.output.line(pending[:LINE_BYTES])
                    pending, dropping = b"", True
                self.output.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="configbags.serve.storehost",
                                     description="the rendezvous store of configbags serve --ranks N")
    parser.add_argument("--fd", type=int, required=True, help="the listening socket the door bound")
    args = parser.parse_args(argv)
    try:
        from configbags.runtime import dist

        listener = socket.socket(fileno=args.fd)
        host, port = listener.getsockname()[:2]
        store = dist.connect_store(f"{host}:{port}", is_master=True, listener=listener)
        sys.stdout.buffer.write(READY)
        sys.stdout.flush()
        # until the door closes our stdin: at stop(), or when it exits (whatever ends it);
        # each line before that asks for the store's keys, answered as one JSON line
        for request in sys.stdin.buffer:
            if request == LIST_KEYS:
                sys.stdout.write(json.dumps(store.list_keys()) + "\n")
                sys.stdout.flush()
        del store
    except (OSError, DistributedConfigError) as exc:
        print_stderr(f"configbags serve store: {exc}")
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
