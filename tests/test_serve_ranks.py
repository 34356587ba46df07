"""`configbags serve --ranks 2`: a change made over HTTP reaches every rank (each rank's
epoch and config hash in /server_info), a dead rank is named in a 503 and nothing is
applied, and SIGTERM still exits 0."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

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

        # a rank that exited: named at once, from its process
        deadline = time.monotonic() + 10
        while c.get("/health").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        health = c.get("/health")
        assert health.status_code == 503 and health.json()["ranks"] == [1]
        dead = c.patch("/config", json={"source": "ops", "leaves": {"speculative_accept_threshold_acc": 0.25}},
                       headers=ADMIN)
        assert dead.status_code == 503, dead.text
        body = dead.json()
        assert body["error"] == "rank_unreachable" and body["ranks"] == [1] and "rank(s) 1" in body["message"]
        assert "nothing was applied" in body["message"]
        info = c.get("/server_info")
        assert info.status_code == 503 and info.json()["ranks"] == [1]
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
