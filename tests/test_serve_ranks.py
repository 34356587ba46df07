"""`configbags serve --ranks 2`: a change made over HTTP reaches every rank (each rank's
epoch and config hash in /server_info), a dead rank is named in a 503 and nothing is
applied (the group is degraded: reads are rank 0's, changes refused), and SIGTERM still
exits 0."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_server import ADMIN_KEY, Server, auth

pytest.importorskip("fastapi")
pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # a server with spawned ranks, and a rank timeout

ADMIN = auth(ADMIN_KEY)


@pytest.fixture
def server() -> Iterator[Server]:
    # two processes import torch on a shared machine: give the start room
    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, start_timeout=240)
    try:
        yield srv
    finally:
        srv.stop()


def test_a_patch_reaches_every_rank_and_an_unreachable_rank_is_named(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        before = c.get("/server_info").json()
        assert [r["rank"] for r in before["ranks"]] == [0, 1]
        assert {r["epoch"] for r in before["ranks"]} == {before["epoch"]}
        assert {r["config_hash"] for r in before["ranks"]} == {before["config_hash"]}
        assert c.get("/health").json()["ranks"] == 2

        response = c.patch("/config", json={"source": "ops", "leaves": {"speculative_accept_threshold_acc": 0.5}},
                           headers=ADMIN)
        assert response.status_code == 200, response.text
        assert response.json()["epoch"] == before["epoch"] + 1
        after = c.get("/server_info").json()
        assert [r["epoch"] for r in after["ranks"]] == [before["epoch"] + 1] * 2
        hashes = {r["config_hash"] for r in after["ranks"]}
        # every rank agrees; a runtime leaf is not a compile-cache factor, so the hash stays
        assert hashes == {after["config_hash"]} == {before["config_hash"]}

        # refused on the source rank means refused everywhere, and the ranks stay in step
        refused = c.patch("/config", json={"source": "ops", "leaves": {"tp_size": 4}}, headers=ADMIN)
        assert refused.status_code == 403
        assert [r["epoch"] for r in c.get("/server_info").json()["ranks"]] == [after["epoch"]] * 2

        # a rank alive but silent: named once --rank-timeout (3 s) passes, nothing applied
        (worker,) = server.children()
        os.kill(worker, signal.SIGSTOP)
        try:
            started = time.monotonic()
            hung = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "v2"}}, headers=ADMIN)
            waited = time.monotonic() - started
        finally:
            os.kill(worker, signal.SIGKILL)
        assert hung.status_code == 503, hung.text
        assert hung.json()["ranks"] == [1] and "within 3 s" in hung.json()["message"]
        assert waited < 30  # the rank timeout, not the minutes-long join timeout
        assert c.get("/config/weight_version").json()["value"] == "default"

        # a rank that exited left the group: named from its process once it is gone (a
        # killed process takes a moment to end; until then it is a stalled one)
        deadline = time.monotonic() + 30
        while c.get("/health").json().get("error") != "rank_left" and time.monotonic() < deadline:
            time.sleep(0.1)
        health = c.get("/health")
        assert health.status_code == 503 and health.json()["ranks"] == [1]
        dead = c.patch("/config", json={"source": "ops", "leaves": {"speculative_accept_threshold_acc": 0.25}},
                       headers=ADMIN)
        assert dead.status_code == 503, dead.text
        body = dead.json()
        assert body["error"] == "rank_unreachable" and body["ranks"] == [1] and "rank(s) 1" in body["message"]
        assert "nothing was applied" in body["message"] and "left the group" in body["message"]
        # the group is degraded: reads are rank 0's own, the gone rank shown with why
        info = c.get("/server_info")
        assert info.status_code == 200 and info.json()["degraded"]["ranks"] == [1], info.text
        assert "exited" in info.json()["ranks"][1]["left"]
        assert health.json()["error"] == "rank_left" and health.json()["status"] == "degraded"
        explained = c.get("/config/speculative_accept_threshold_acc").json()  # rank 0's own view
        assert explained["value"] == 0.5 and len(explained["overrides"]) == 1
    assert server.terminate() == 0


def test_ranks_that_do_not_match_the_layout_exit_2_naming_the_fix() -> None:
    import subprocess
    import sys

    from serve_server import REPO, free_port

    done = subprocess.run(
        [sys.executable, "-m", "configbags", "serve", "--ranks", "2", "--model-path", "m", "--port", str(free_port())],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the group has 2" in done.stderr and "--tp-size 2" in done.stderr


def test_the_rank_store_is_loopback_only_and_refuses_a_foreign_write(server: Server) -> None:
    from datetime import timedelta

    from test_dist_store import listening
    from torch._C._distributed_c10d import TCPStore

    (worker,) = server.children()
    argv = Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
    host, _, port = argv[argv.index(b"--init-addr") + 1].decode().rpartition(":")
    assert (host, int(port)) in listening(server.proc.pid)
    assert all(addr == "127.0.0.1" for addr, _ in listening(server.proc.pid))
    assert b"CONFIGBAGS_RANK_SECRET" not in b"".join(argv)  # handed over in the environment
    # another local process writes `stop` under the worker's next operations: refused, named
    foreign = TCPStore(host, int(port), None, False, timedelta(seconds=10), wait_for_workers=False)
    for op in range(1, 50):
        foreign.set(f"configbags/serve/op/{op}", "stop")
    with httpx.Client(base_url=server.url, timeout=30) as c:
        end = time.monotonic() + 60
        while "did not sign" not in server.output() and time.monotonic() < end:
            time.sleep(0.1)
        assert "under 'serve/op/" in server.output() and "did not sign" in server.output()
        assert c.get("/health").status_code == 200  # the worker did not obey
        patched = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "signed"}}, headers=ADMIN)
        assert patched.status_code == 200, patched.text
        info = c.get("/server_info").json()
        assert [r["epoch"] for r in info["ranks"]] == [patched.json()["epoch"]] * 2
    assert server.terminate() == 0
