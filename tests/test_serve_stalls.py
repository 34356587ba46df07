"""`configbags serve --ranks 2` after a stalled worker: a worker stopped (SIGSTOP) during
a read or a PATCH is named in a 503, /health says it is stalled while it is, and once
continued (SIGCONT) the group is back in service: reads answer 200 and a PATCH reaches
both ranks. Every wait is bounded; none is a speed assertion."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from serve_server import ADMIN_KEY, Server, auth

pytest.importorskip("fastapi")
pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # a server with a spawned rank, and rank timeouts

ADMIN = auth(ADMIN_KEY)
BOUND_S = 60.0  # far above the 3 s rank timeout: a bound on the loops, not a target


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, start_timeout=240)
    try:
        yield srv
    finally:
        srv.stop()


def _until(check: Callable[[], httpx.Response], status: int) -> httpx.Response:
    end = time.monotonic() + BOUND_S
    while True:
        response = check()
        if response.status_code == status or time.monotonic() > end:
            return response
        time.sleep(0.1)


def _stopped(server: Server) -> int:
    (worker,) = server.children()
    os.kill(worker, signal.SIGSTOP)
    return worker


def _back_in_service(c: httpx.Client) -> None:
    info = _until(lambda: c.get("/server_info"), 200)
    assert info.status_code == 200, info.text
    assert c.get("/health").status_code == 200
    ranks = info.json()["ranks"]
    assert [r["epoch"] for r in ranks] == [info.json()["epoch"]] * 2


def test_a_worker_stopped_during_a_read_is_named_and_the_group_recovers(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        worker = _stopped(server)
        try:
            read = c.get("/server_info")
            assert read.status_code == 503 and read.json()["ranks"] == [1], read.text
            health = _until(lambda: c.get("/health"), 503)  # the truth, while it is stopped
            assert health.status_code == 503 and health.json()["error"] == "rank_stalled", health.text
            assert health.json()["ranks"] == [1] and "rank 1" in health.json()["message"]
            again = c.get("/server_info")
            assert again.status_code == 503 and "stalled" in again.json()["message"]
        finally:
            os.kill(worker, signal.SIGCONT)
        _back_in_service(c)
        patched = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "after-read"}}, headers=ADMIN)
        assert patched.status_code == 200, patched.text
        assert {r["epoch"] for r in c.get("/server_info").json()["ranks"]} == {patched.json()["epoch"]}


def test_a_worker_stopped_during_a_patch_is_named_nothing_applied_and_the_group_recovers(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        _back_in_service(c)
        before = c.get("/config/weight_version").json()["value"]
        worker = _stopped(server)
        try:
            hung = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "during-stop"}},
                           headers=ADMIN)
            assert hung.status_code == 503 and hung.json()["ranks"] == [1], hung.text
            assert "nothing was applied" in hung.json()["message"]
        finally:
            os.kill(worker, signal.SIGCONT)
        _back_in_service(c)
        assert c.get("/config/weight_version").json()["value"] == before
        patched = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "after-patch"}},
                          headers=ADMIN)
        assert patched.status_code == 200, patched.text
        assert c.get("/config/weight_version").json()["value"] == "after-patch"
        assert server.terminate() == 0
