"""`configbags serve --ranks 2` after a stalled worker: a worker stopped (SIGSTOP) during
a read or a PATCH is named in a 503, /health says it is stalled while it is, and once
continued (SIGCONT) the group is back in service: reads answer 200 and a PATCH reaches
both ranks. A worker that stays stopped leaves the group (its process ended) and the
server says so everywhere; one stopped inside the start-up publish fails the start naming
it, or joins when continued within the rank timeout. Every wait is bounded; none is a
speed assertion."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from serve_server import ADMIN_KEY, REPO, Server, auth, free_port

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
    (worker,) = server.workers()
    os.kill(worker, signal.SIGSTOP)
    return worker


def _back_in_service(c: httpx.Client) -> None:
    info = _until(lambda: c.get("/server_info"), 200)
    assert info.status_code == 200, info.text
    assert c.get("/health").status_code == 200
    ranks = info.json()["ranks"]
    assert [r["epoch"] for r in ranks] == [info.json()["epoch"]] * 2


def _fleet_check(url: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "configbags", "fleet", "check", url],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def _stalled_everywhere(c: httpx.Client, server: Server) -> None:
    """While rank 1 is stalled, every config read says so as /server_info does (503 naming
    it), /metrics stays 200 with a gauge for it, and a fleet check does not pass."""
    for path in ("/config/weight_version", "/config/contracts"):
        read = c.get(path)
        assert read.status_code == 503 and read.json()["ranks"] == [1], (path, read.text)
        assert read.json()["error"] == "rank_stalled" and "rank 1" in read.json()["message"]
    metrics = c.get("/metrics")
    assert metrics.status_code == 200 and 'configbags_rank_stalled{rank="1"} 1.0' in metrics.text
    code, out = _fleet_check(server.url)
    assert code != 0 and "rank 1" in out, out


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
            _stalled_everywhere(c, server)
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


# -- a worker that stays stopped leaves the group ------------------------------------------------


def _left(c: httpx.Client) -> httpx.Response:
    """/health once a rank has left (bounded: LEAVE_AFTER rank timeouts, far below BOUND_S)."""
    end = time.monotonic() + BOUND_S
    while True:
        health = c.get("/health")
        if health.json().get("error") == "rank_left" or time.monotonic() > end:
            return health
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _degraded_and_truthful(c: httpx.Client, server: Server, worker: int, value: str) -> None:
    """What a server whose rank 1 left says: /health 503 degraded naming it, reads served
    from rank 0 with rank 1 shown as left, changes refused naming it, the log says so."""
    health = _left(c)
    body = health.json()
    assert health.status_code == 503 and body["error"] == "rank_left", health.text
    assert body["status"] == "degraded" and body["ranks"] == [1] and "rank 1 left" in body["message"]
    assert "stopped or hung" in body["left"]["1"] and f"pid {worker}" in body["left"]["1"]
    assert _gone(worker)  # ended, so it can never resume with a stale config
    info = c.get("/server_info")
    assert info.status_code == 200, info.text
    assert info.json()["degraded"]["ranks"] == [1]
    rank0, rank1 = info.json()["ranks"]
    assert rank0["epoch"] == info.json()["epoch"] and "silent for" in rank1["left"]
    leaf = c.get("/config/weight_version")
    assert leaf.status_code == 200 and leaf.json()["value"] == value
    assert leaf.json()["degraded"]["ranks"] == [1], leaf.text
    contracts = c.get("/config/contracts")
    assert contracts.status_code == 503 and contracts.json()["error"] == "rank_left", contracts.text
    metrics = c.get("/metrics")
    assert metrics.status_code == 200 and 'configbags_rank_left{rank="1"} 1.0' in metrics.text
    assert 'configbags_rank_stalled{rank="1"}' not in metrics.text
    code, out = _fleet_check(server.url)
    assert code != 0 and "rank 1 left" in out, out
    refused = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "while-degraded"}},
                      headers=ADMIN)
    assert refused.status_code == 503 and refused.json()["ranks"] == [1], refused.text
    assert "left the group" in refused.json()["message"] and "nothing was applied" in refused.json()["message"]
    assert c.get("/config/weight_version").json()["value"] == value
    assert "rank 1 of 2 left the group" in server.output()
    assert "[c10d]" not in server.output()  # torch's own log of the stalled reads stays out
    assert server.terminate() == 0


@pytest.fixture
def lone_server() -> Iterator[Server]:
    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, start_timeout=240)
    try:
        yield srv
    finally:
        srv.stop()


def test_a_worker_that_stays_stopped_after_a_read_leaves_and_is_named(lone_server: Server) -> None:
    with httpx.Client(base_url=lone_server.url, timeout=30) as c:
        worker = _stopped(lone_server)
        read = c.get("/server_info")
        assert read.status_code == 503 and read.json()["ranks"] == [1], read.text
        _degraded_and_truthful(c, lone_server, worker, "default")


def test_a_worker_that_stays_stopped_after_a_patch_leaves_and_nothing_was_applied(lone_server: Server) -> None:
    with httpx.Client(base_url=lone_server.url, timeout=30) as c:
        worker = _stopped(lone_server)
        hung = c.patch("/config", json={"source": "ops", "leaves": {"weight_version": "during-stop"}},
                       headers=ADMIN)
        assert hung.status_code == 503 and hung.json()["ranks"] == [1], hung.text
        _degraded_and_truthful(c, lone_server, worker, "default")


# -- a worker stopped inside the start-up publish ------------------------------------------------

# Loaded by every Python process of the test's server (PYTHONPATH): in a worker rank, stop
# inside the publish, after writing the pid where the test finds it.
STALL_IN_PUBLISH = '''
import os, signal, sys
if "--rank" in sys.argv and os.environ.get("STALL_PIDFILE"):
    from configbags.runtime.dist import _propagate

    real = _propagate.DistributedContext._install_published

    def stalled(self, message):
        with open(os.environ["STALL_PIDFILE"] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(os.environ["STALL_PIDFILE"] + ".tmp", os.environ["STALL_PIDFILE"])
        os.kill(os.getpid(), signal.SIGSTOP)
        return real(self, message)

    _propagate.DistributedContext._install_published = stalled
'''


def _stall_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(STALL_IN_PUBLISH)
    return {"PYTHONPATH": str(tmp_path), "STALL_PIDFILE": str(tmp_path / "worker.pid")}


def test_a_worker_stopped_in_the_start_up_publish_fails_the_start_naming_it(tmp_path: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "configbags", "serve", "--ranks", "2", "--tp-size", "2", "--rank-timeout", "3",
         "--model-path", "m", "--port", str(port)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, **_stall_env(tmp_path)},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "rank(s) 1 of 2 did not install the published state within 3 s" in done.stderr
    assert "did not come up, so the server did not start" in done.stderr
    assert "--tp-size" not in done.stderr.rpartition("did not install")[2]  # no layout hint: not the cause
    assert _gone(int((tmp_path / "worker.pid").read_text()))


# In a worker rank, before it imports torch or joins: exit, or stop itself.
BEFORE_JOIN = '''
import os, signal, sys
if "--rank" in sys.argv and os.environ.get("WORKER_BEFORE_JOIN") == "exit":
    os._exit(7)
if "--rank" in sys.argv and os.environ.get("WORKER_BEFORE_JOIN") == "stop":
    os.kill(os.getpid(), signal.SIGSTOP)
'''


@pytest.mark.parametrize(("what", "named"), [("exit", "worker rank 1 exited (status 7"),
                                             ("stop", "worker rank 1 (pid ")])
def test_a_worker_that_exits_or_stops_before_it_joins_fails_the_start_at_once_naming_it(
        tmp_path: Path, what: str, named: str) -> None:
    (tmp_path / "sitecustomize.py").write_text(BEFORE_JOIN)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "configbags", "serve", "--ranks", "2", "--tp-size", "2", "--rank-timeout", "2",
         "--model-path", "m", "--port", str(free_port())],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "WORKER_BEFORE_JOIN": what},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert named in done.stderr and "did not come up, so the server did not start" in done.stderr
    assert time.monotonic() - start < 60  # named, not the 120 s join timeout waited out
    if what == "stop":
        assert "is stopped (SIGSTOP) and did not join within the rank timeout (2 s)" in done.stderr


def test_a_worker_continued_within_the_timeout_of_the_start_up_publish_joins(tmp_path: Path) -> None:
    pidfile = tmp_path / "worker.pid"
    resumed = threading.Event()

    def resume() -> None:
        end = time.monotonic() + BOUND_S * 4
        while not pidfile.exists() and time.monotonic() < end:
            time.sleep(0.05)
        if pidfile.exists():
            time.sleep(0.5)  # stopped for a while, well inside the 3 s rank timeout
            os.kill(int(pidfile.read_text()), signal.SIGCONT)
            resumed.set()

    helper = threading.Thread(target=resume, daemon=True)
    helper.start()
    srv = Server("--ranks", "2", "--tp-size", "2", start_timeout=240, env=_stall_env(tmp_path))
    try:
        assert resumed.is_set()
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            info = c.get("/server_info")
            assert info.status_code == 200 and len(info.json()["ranks"]) == 2, info.text
        assert srv.terminate() == 0
    finally:
        srv.stop()
        helper.join(timeout=10)
