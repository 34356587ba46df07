"""The door's calls to the ranks' store are bounded: torch 2.13's client ignores its own
timeout once the store stops answering (measured: check, get, compare_set, multi_get, wait,
add, delete_key and num_keys wait on a stopped store for as long as it stays stopped, and
list_keys holds the GIL while it does), so each call of a `BoundedStore` answers
StoreStalledError at its deadline while the rest of the process keeps running, and the
keys are listed by the store's own process."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("torch")

from torch._C._distributed_c10d import TCPStore

from configbags.runtime.dist import connect_store, listen
from configbags.serve.storehost import BoundedStore, StoreHost, StoreStalledError

pytestmark = pytest.mark.slow  # a store process that imports torch, and deadlines waited out

DEADLINE_S = 0.5
SLACK_S = 1.5  # a loaded machine: a deadline's answer may come this much later
CALLS: dict[str, Callable[[Any], Any]] = {
    "check": lambda s: s.check(["k"]),
    "get": lambda s: s.get("k"),
    "compare_set": lambda s: s.compare_set("c", "", "w"),
    "multi_get": lambda s: s.multi_get(["k"]),
    "wait": lambda s: s.wait(["k"], timedelta(seconds=DEADLINE_S)),
    "add": lambda s: s.add("n", 1),
    "delete_key": lambda s: s.delete_key("gone"),
    "num_keys": lambda s: s.num_keys(),
    "list_keys": lambda s: s.list_keys(),
}


class Ticker:
    """A thread that counts while the GIL is free: a call that held it would stop the count."""

    def __init__(self) -> None:
        self.ticks = 0
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._halt.wait(0.01):
            self.ticks += 1

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(timeout=5)


@pytest.fixture
def store_host() -> Iterator[tuple[StoreHost, str]]:
    listener = listen()
    addr = f"127.0.0.1:{listener.getsockname()[1]}"
    host = StoreHost.start(listener, dict(os.environ))
    try:
        host.wait_ready(180)  # the process imports torch first
        yield host, addr
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)
        host.stop(grace_s=2)


def _answers_at_deadline(call: Callable[[], Any]) -> float:
    started = time.monotonic()
    with pytest.raises(StoreStalledError, match="stopped or hung"):
        call()
    return time.monotonic() - started


def test_every_call_to_a_stopped_store_answers_at_its_deadline_and_the_process_runs_on(
        store_host: tuple[StoreHost, str]) -> None:
    host, addr = store_host
    clients = {name: BoundedStore.connect(lambda: connect_store(addr, is_master=False, timeout=2), DEADLINE_S,
                                          host=host) for name in CALLS}
    first = clients["check"]
    first.set("k", "v")
    assert first.get("k") == b"v" and "k" in first.list_keys()
    os.kill(host.proc.pid, signal.SIGSTOP)
    ticker = Ticker()
    started = time.monotonic()
    for name, call in CALLS.items():
        waited = _answers_at_deadline(lambda c=clients[name], f=call: f(c))  # type: ignore[misc]
        assert DEADLINE_S * 0.9 <= waited < DEADLINE_S + SLACK_S, (name, waited)
    # the client whose call is still inside the store answers at once: its connection is in use
    assert _answers_at_deadline(lambda: first.get("k")) < SLACK_S
    elapsed = time.monotonic() - started
    ticker.stop()
    assert ticker.ticks > elapsed * 100 / 4, (ticker.ticks, elapsed)  # the GIL was free the whole time

    os.kill(host.proc.pid, signal.SIGCONT)
    end = time.monotonic() + 30
    while True:  # the stuck calls come back, and with them their clients
        try:
            assert first.get("k") == b"v" and "k" in first.list_keys()  # a late listing is passed over
            break
        except StoreStalledError:
            assert time.monotonic() < end, "the store did not answer again after SIGCONT"
            time.sleep(0.1)


def test_a_port_that_accepts_and_never_answers_is_bounded_too() -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
    ticker = Ticker()
    try:
        started = time.monotonic()
        waited = _answers_at_deadline(lambda: BoundedStore.connect(
            lambda: TCPStore("127.0.0.1", port, None, False, timedelta(seconds=2), wait_for_workers=False),
            DEADLINE_S))
        assert DEADLINE_S * 0.9 <= waited < DEADLINE_S + SLACK_S, waited
        elapsed = time.monotonic() - started
        ticker.stop()
        assert ticker.ticks > elapsed * 100 / 4, (ticker.ticks, elapsed)
    finally:
        for sock in (*accepted, silent):
            sock.close()  # the stuck connect sees the end of its connection and returns
