"""`configbags serve --ranks 2`: a change made over HTTP reaches every rank (each rank's
epoch and config hash in /server_info), a dead rank is named in a 503 and nothing is
applied (the group is degraded: reads are rank 0's, changes refused), and SIGTERM still
exits 0."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_server import ADMIN_KEY, Server, auth

import configbags.generated.accessors  # noqa: F401  (registers the process context)

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
        (worker,) = server.workers()
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
        read = c.get("/config/weight_version")  # stalled until its process is gone: 503, or rank 0's value
        assert read.status_code == 503 or read.json()["value"] == "default", read.text

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
        assert explained["degraded"]["ranks"] == [1]
        assert c.get("/config/weight_version").json()["value"] == "default"  # the hung PATCH: nothing applied
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

    (worker,) = server.workers()
    argv = Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
    host, _, port = argv[argv.index(b"--init-addr") + 1].decode().rpartition(":")
    # in a process of its own: what connects to it never uses up the door's descriptors
    assert listening(server.store_host()) == [(host, int(port))]
    # nothing but the HTTP door listens in its process: no torch transport (gloo's listener
    # keeps every connection any local process makes), no store
    assert listening(server.proc.pid) == [("127.0.0.1", server.port)]
    assert listening(worker) == []
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


# -- forged values in the rank store ---------------------------------------------------------


def _store_of(server: Server) -> tuple[str, int, int]:
    """The rank store's host and port, from the worker's command line, and the worker's pid."""
    (worker,) = server.workers()
    argv = Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
    host, _, port = argv[argv.index(b"--init-addr") + 1].decode().rpartition(":")
    return host, int(port), worker


@contextlib.contextmanager
def _two_ranks_and_their_store() -> Iterator[tuple[Server, Any, int]]:
    """A 2-rank server (rank timeout 1 s), the raw store another local process would reach
    (keys under `configbags/`) and the worker's pid; the server is stopped after."""
    from datetime import timedelta

    from torch._C._distributed_c10d import PrefixStore, TCPStore

    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, "--rank-timeout", "1",
                 start_timeout=240)
    try:
        host, port, worker = _store_of(srv)
        raw = PrefixStore("configbags", TCPStore(host, port, None, False, timedelta(seconds=10),
                                                 wait_for_workers=False))
        yield srv, raw, worker
    finally:
        srv.stop()


def _forge_override(store: object, value: str) -> None:
    """A whole override as rank 0 would post it, for the worker's next operation (op 1) and
    its next collective (seq 3: publish and seal came first): proposal, decision, op."""
    import json

    from configbags.generated.registry import REGISTRY

    entry = {"epoch": 2, "source": "http:forged", "leaf": "weight_version",
             "namespace": REGISTRY.leaves["weight_version"].namespace, "old": "default", "new": value,
             "wall_time": 0.0}
    proposal = {"ok": True, "base": 1, "source": "http:forged", "entries": [entry]}
    store.set("ctx/3/override/proposal", json.dumps(proposal))  # type: ignore[attr-defined]
    store.set("ctx/3/override/decision", "commit")  # type: ignore[attr-defined]
    store.set("serve/op/1", "override")  # type: ignore[attr-defined]


def test_a_forged_unsigned_override_in_the_store_is_applied_by_no_rank(server: Server) -> None:
    from datetime import timedelta

    from torch._C._distributed_c10d import PrefixStore, TCPStore

    host, port, _ = _store_of(server)
    foreign = TCPStore(host, port, None, False, timedelta(seconds=10), wait_for_workers=False)
    _forge_override(PrefixStore("configbags", foreign), "FORGED")
    with httpx.Client(base_url=server.url, timeout=30) as c:
        end = time.monotonic() + 60
        while "did not sign" not in server.output() and time.monotonic() < end:
            time.sleep(0.1)
        assert "under 'serve/op/1'" in server.output() and "did not sign" in server.output()
        assert c.get("/health").status_code == 200
        info = c.get("/server_info")  # a consistency check: every rank's values agree
        assert info.status_code == 200, info.text
        assert info.json()["resolved"]["weight_version"] != "FORGED"
        assert {r["epoch"] for r in info.json()["ranks"]} == {1}
        assert c.get("/config/weight_version").json()["value"] != "FORGED"
    assert server.terminate() == 0


def test_a_rank_whose_config_diverged_makes_health_503_naming_it(server: Server) -> None:
    """Divergence as it would look if a write were ever obeyed (here: signed with the
    launch's secret, read from the worker's environment, for the launch's identity, from the
    ranks' join nonces): rank 1 holds a runtime value rank 0 does not, which the config hash
    leaves out; /health must not say ok."""
    from datetime import timedelta

    from torch._C._distributed_c10d import PrefixStore, TCPStore

    from configbags.runtime.dist import SignedStore
    from configbags.runtime.dist._rendezvous import identity

    host, port, worker = _store_of(server)
    environ = dict(v.split(b"=", 1) for v in Path(f"/proc/{worker}/environ").read_bytes().split(b"\0") if b"=" in v)
    secret = environ[b"CONFIGBAGS_RANK_SECRET"]
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        foreign = TCPStore(host, port, None, False, timedelta(seconds=10), wait_for_workers=False)
        launch = SignedStore(PrefixStore("configbags", foreign), secret)
        run = identity([launch.get(f"join/{r}") for r in range(2)])
        _forge_override(launch.over(launch.inner, run=run), "DIVERGED")
        end = time.monotonic() + 60
        health = c.get("/health")
        while health.status_code == 200 and time.monotonic() < end:
            time.sleep(0.1)
            health = c.get("/health")
        assert health.status_code == 503 and health.json()["error"] == "rank_diverged", health.text
        assert health.json()["ranks"] == [1] and "diverged on rank 1" in health.json()["message"]
        assert "DIVERGED" not in health.text  # digests, never values, on the unauthenticated route
        assert c.get("/config/weight_version").status_code == 503
        assert c.get("/config/contracts").status_code == 503
    assert server.terminate() == 0


def test_a_layout_that_cannot_fit_the_group_is_refused_before_any_worker_starts(config_scope: object) -> None:
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.errors import LayoutError
    from configbags.serve.ranks import RankGroup

    group = RankGroup(config_scope, "configbags.generated", 3, timeout=3)  # type: ignore[arg-type]
    try:
        with pytest.raises(LayoutError, match=r"tp_size\*pp_size=1\*1=1 ranks, but the group has 3"):
            group.start(ServerArgs(model_path="m", tp_size=1), role="launcher")
        assert group.procs == []  # no worker was started (and waited on) for nothing
    finally:
        group.stop(grace_s=0.5)


def _survives_tampering(c: httpx.Client, worker: int, tamper: Callable[[], object], every_s: float = 0.05,
                        for_s: float = 5.0) -> None:
    """Tamper with the worker's store keys for longer than 3 x the rank timeout (when a
    silent worker leaves): it is still alive and in the group, and /health is 200 again once
    the tampering stops."""
    end = time.monotonic() + for_s
    while time.monotonic() < end:
        tamper()
        time.sleep(every_s)
    os.kill(worker, 0)  # still alive
    assert "rank_left" not in c.get("/health").text
    end = time.monotonic() + 10
    while c.get("/health").status_code != 200 and time.monotonic() < end:
        time.sleep(0.1)
    assert c.get("/health").status_code == 200


def test_a_forger_writing_over_a_workers_count_ends_no_healthy_worker() -> None:
    """Another local process writes over the worker's finished-operation count after a
    PATCH, again and again: the values are refused (unsigned), the worker is reported, never
    ended for a silence a forger made; once the writes stop, its next beat heals the count."""
    with _two_ranks_and_their_store() as (srv, raw, worker):
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            leaves = {"source": "ops", "leaves": {"weight_version": "v2"}}
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
            _survives_tampering(c, worker, lambda: raw.set("serve/done/1", "00" * 64 + ":999"))
            leaves = {"source": "ops", "leaves": {"weight_version": "v3"}}
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
        assert srv.terminate() == 0


def test_a_process_removing_a_workers_keys_ends_no_healthy_worker() -> None:
    """Another local process deletes the worker's beat and state keys, again and again: a
    worker never removes what it posted, so what vanished is tampering, reported (logged
    once per key), never a silence that ends a healthy worker."""
    with _two_ranks_and_their_store() as (srv, raw, worker):
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            _survives_tampering(c, worker, lambda: [raw.delete_key(k) for k in ("serve/beat/1", "serve/state/1")])
            leaves = {"source": "ops", "leaves": {"weight_version": "v3"}}
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
        assert srv.terminate() == 0
        assert "serve/beat/1 of rank 1 was removed by another process" in srv.output()


def test_a_process_replaying_a_workers_signed_beat_ends_no_healthy_worker() -> None:
    """Another local process reads the worker's own signed beat and writes those bytes back
    again and again: validly signed, but older than what rank 0 saw, so a replay, never a
    silence that ends a healthy worker."""
    with _two_ranks_and_their_store() as (srv, raw, worker):
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            old = raw.get("serve/beat/1")
            time.sleep(0.5)  # rank 0 sees a newer beat first
            _survives_tampering(c, worker, lambda: raw.set("serve/beat/1", old), every_s=0.02)
        assert srv.terminate() == 0
        assert "serve/beat/1 of rank 1 was written back by another process (a replay)" in srv.output()


def test_a_replay_of_the_beat_and_state_read_once_ends_no_healthy_worker() -> None:
    """The attack's spelling: the worker's signed beat and state are read once and written
    back at once, every 20 ms, so rank 0 may never see a newer beat in the store: the
    worker's beats also reach rank 0 through its own pipe, so the store's stale beat is a
    replay (logged), never a silence that ends it."""
    with _two_ranks_and_their_store() as (srv, raw, worker):
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            beat, state = raw.get("serve/beat/1"), raw.get("serve/state/1")

            def replay() -> None:
                raw.set("serve/beat/1", beat)
                raw.set("serve/state/1", state)

            _survives_tampering(c, worker, replay, every_s=0.01, for_s=8)
            leaves = {"source": "ops", "leaves": {"weight_version": "v2"}}
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
        assert srv.terminate() == 0
        assert "serve/beat/1 of rank 1 was written back by another process (a replay)" in srv.output()
        assert "left the group" not in srv.output()


def test_what_another_process_writes_into_the_store_is_removed_and_logged() -> None:
    """Keys outside configbags' prefix appear after the group formed: removed; a value
    under the prefix that this launch did not sign: emptied (its bytes freed); both logged
    (one line, then a count), naming the key escaped; the group goes on serving."""
    from datetime import timedelta

    from torch._C._distributed_c10d import TCPStore

    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, "--rank-timeout", "1",
                 start_timeout=240)
    try:
        host, port, _ = _store_of(srv)
        raw = TCPStore(host, port, None, False, timedelta(seconds=10), wait_for_workers=False)
        junk = [f"junk/{i}" for i in range(5)] + ["junk/\nconfigbags WARNING forged"]
        for key in junk:
            raw.set(key, b"x" * (1 << 20))
        raw.set("configbags/junk", b"y" * (1 << 20))
        end = time.monotonic() + 30
        while time.monotonic() < end and (set(junk) & set(raw.list_keys()) or raw.get("configbags/junk")):
            time.sleep(0.1)
        assert not set(junk) & set(raw.list_keys())
        assert raw.get("configbags/junk") == b""
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            leaves = {"source": "ops", "leaves": {"weight_version": "v2"}}
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
        assert srv.terminate() == 0
        out = srv.output()
        assert re.search(r"the rendezvous store: (removed key 'junk/.*'|emptied key 'configbags/junk' "
                         r"\(1048576 bytes, not signed by this launch\)): another local process wrote it", out), out
        assert "more keys another local process wrote were removed or emptied" in out
        assert "forged" not in out.replace("'junk/\\nconfigbags WARNING forged'", "")  # escaped, never a line
    finally:
        srv.stop()


def test_connections_to_the_rank_store_never_take_the_door_down() -> None:
    """More idle connections to the store's port than the server's whole descriptor limit
    (lowered to 256 here): /health and PATCH still answer, the door holds none of them, and
    its accept loop never fails for want of descriptors (attack nine #6)."""
    import socket

    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, start_timeout=240, max_files=256)
    held: list[socket.socket] = []
    try:
        host, port, _ = _store_of(srv)
        for _ in range(400):
            held.append(socket.create_connection((host, port), timeout=10))
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            for version in ("flooded-1", "flooded-2"):
                assert c.get("/health").status_code == 200
                leaves = {"source": "ops", "leaves": {"weight_version": version}}
                assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
        assert len(os.listdir(f"/proc/{srv.proc.pid}/fd")) < 100
        for sock in held:
            sock.close()
        assert srv.terminate() == 0
        assert "cannot accept connections" not in srv.output()
    finally:
        for sock in held:
            sock.close()
        srv.stop()


def test_torch_messages_from_the_rank_store_are_logged_at_a_bounded_rate() -> None:
    """A key over torch's 8192-byte limit, from any local process, makes torch's store warn
    with an 18-line native stack trace per request: logged as one line, the rest counted
    (attack nine #2)."""
    from datetime import timedelta

    from torch._C._distributed_c10d import TCPStore

    with _two_ranks_and_their_store() as (srv, _, _):
        host, port, _ = _store_of(srv)
        for _ in range(40):
            with contextlib.suppress(Exception):  # the store drops the connection
                TCPStore(host, port, None, False, timedelta(seconds=5), wait_for_workers=False).set("k" * 9000, b"")
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200
        assert srv.terminate() == 0
        out = srv.output()
        lines = [line for line in out.splitlines() if "Invalid string size" in line]
        assert "frame #" not in out and "Exception raised from" not in out, out[-3000:]
        assert 2 <= len(lines) <= 4, lines  # the first, then a count per 10 s and at the end
        assert lines[0].endswith("(native stack traces left out; more are counted: one line every 10 s)")
        counted = sum(int(m) for m in re.findall(r"the rendezvous store \(torch\): (\d+) more messages", out))
        assert counted >= 30, out[-3000:]


def test_a_store_process_that_dies_leaves_the_group_degraded_naming_it(server: Server) -> None:
    store = server.store_host()
    os.kill(store, signal.SIGKILL)
    with httpx.Client(base_url=server.url, timeout=30) as c:
        end = time.monotonic() + 60
        while (health := c.get("/health")).status_code == 200 and time.monotonic() < end:
            time.sleep(0.2)
        assert health.status_code == 503 and health.json()["error"] == "rank_left", health.text
        assert f"lost the rendezvous store, whose process (pid {store}) exited with code -9" in health.text
        leaves = {"source": "ops", "leaves": {"weight_version": "v2"}}
        assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 503
        # torch's client writes a native stack trace per call to the dead store: a call in
        # flight when it died may write one, and nothing is asked of the store after
        traces = server.output().count("sendBytes failed")
        time.sleep(3)
        assert server.output().count("sendBytes failed") == traces <= 2, server.output()[-3000:]
    assert server.terminate() == 0


def _stop(pid: int) -> None:
    """SIGSTOP `pid` and wait (bounded) until the kernel shows it stopped: the signal is
    delivered asynchronously, and on a loaded machine a request sent at once could still
    find the process running."""
    from configbags.serve.ranks import _stopped

    os.kill(pid, signal.SIGSTOP)
    end = time.monotonic() + 10
    while not _stopped(pid) and time.monotonic() < end:
        time.sleep(0.01)


def test_a_stopped_store_process_is_named_in_503s_and_nothing_is_applied_late() -> None:
    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, "--rank-timeout", "1",
                 start_timeout=240)
    try:
        store = srv.store_host()
        leaves = {"source": "ops", "leaves": {"weight_version": "late"}}
        # a client that waits this long without an answer fails the test (on a store that stays stopped)
        with httpx.Client(base_url=srv.url, timeout=20) as c:
            epoch = c.get("/health").json()["epoch"]
            _stop(store)
            try:
                health = c.get("/health")
                assert health.status_code == 503 and health.json()["error"] == "store_stalled", health.text
                assert f"rendezvous store (pid {store})" in health.text
                patch = c.patch("/config", json=leaves, headers=ADMIN)
                assert patch.status_code == 503 and patch.json()["error"] == "store_stalled", patch.text
                assert "nothing was applied" in patch.text
            finally:
                os.kill(store, signal.SIGCONT)
            end = time.monotonic() + 60
            while (health := c.get("/health")).status_code != 200 and time.monotonic() < end:
                time.sleep(0.2)
            assert health.json()["epoch"] == epoch, health.text  # the refused PATCH was never applied
            assert c.get("/config/weight_version").json()["value"] != "late"
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
            assert c.get("/health").json()["epoch"] == epoch + 1
        # the given-up change's end was the 503 already: no traceback of it in the log
        assert "Future exception was never retrieved" not in srv.output(), srv.output()[-3000:]
    finally:
        srv.stop()


def test_a_store_stopped_during_a_patch_leaves_every_route_answering_and_nothing_applied() -> None:
    """The PATCH is in flight (its worker is stopped, so the collective waits on the store)
    when the store is stopped too: every route still answers within the rank timeout (none
    queues behind the stuck change or a lock it holds), and the change is never applied."""
    import concurrent.futures

    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, "--rank-timeout", "1",
                 start_timeout=240)
    try:
        store, (worker,) = srv.store_host(), srv.workers()
        leaves = {"source": "ops", "leaves": {"weight_version": "late"}}
        # a route that waits this long without an answer fails the test (both stay stopped)
        with httpx.Client(base_url=srv.url, timeout=10) as c, concurrent.futures.ThreadPoolExecutor(1) as pool:
            epoch = c.get("/health").json()["epoch"]
            os.kill(worker, signal.SIGSTOP)
            try:
                in_flight = pool.submit(c.patch, "/config", json=leaves, headers=ADMIN)
                time.sleep(0.3)  # rank 0 posted the change and waits on the worker through the store
                _stop(store)
                try:
                    for path in ("/health", "/server_info", "/config/weight_version", "/config/contracts"):
                        started = time.monotonic()
                        answer = c.get(path, headers=ADMIN)
                        assert answer.status_code == 503, (path, answer.text)
                        assert time.monotonic() - started < 5, path  # the rank timeout (1 s), and slack
                        assert answer.json()["error"] in ("store_stalled", "rank_stalled"), (path, answer.text)
                    assert c.get("/metrics", headers=ADMIN).status_code == 200
                    patch = in_flight.result(timeout=10)
                    assert patch.status_code == 503 and patch.json()["error"] == "store_stalled", patch.text
                    assert "nothing was applied" in patch.text
                    assert c.get("/health").json()["error"] == "store_stalled"
                finally:
                    os.kill(store, signal.SIGCONT)
            finally:
                os.kill(worker, signal.SIGCONT)
            end = time.monotonic() + 60
            while (health := c.get("/health")).status_code != 200 and time.monotonic() < end:
                time.sleep(0.2)
            assert health.json()["epoch"] == epoch, health.text  # the given-up PATCH was never applied
            assert c.get("/config/weight_version", headers=ADMIN).json()["value"] != "late"
    finally:
        srv.stop()


# Loaded by every Python process of the test's server (PYTHONPATH): in the store's process,
# the store listens on a port of its own behind a relay on the door's socket, which stops
# relaying on SIGUSR1 (the store's process runs on, and answers nothing) and goes on at SIGUSR2.
HANG_STORE = '''
import select, signal, socket, sys, threading, time
if "--fd" in sys.argv:
    from configbags.runtime import dist

    real = dist.connect_store
    paused = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: paused.set())
    signal.signal(signal.SIGUSR2, lambda *_: paused.clear())

    def relay(client, upstream):
        other = {client: upstream, upstream: client}
        with client, upstream:
            while True:
                if paused.is_set():
                    time.sleep(0.05)
                    continue
                for sock in select.select(list(other), [], [], 0.05)[0]:
                    data = sock.recv(1 << 16)
                    if not data:
                        return
                    other[sock].sendall(data)

    def accept(listener, port):
        while True:
            client = listener.accept()[0]
            upstream = socket.create_connection(("127.0.0.1", port))
            threading.Thread(target=relay, args=(client, upstream), daemon=True).start()

    def connect_store(addr, *, is_master, timeout=60.0, listener=None):
        if listener is None:
            return real(addr, is_master=is_master, timeout=timeout)
        inner = dist.listen()
        port = inner.getsockname()[1]
        store = real(f"127.0.0.1:{port}", is_master=True, timeout=timeout, listener=inner)
        threading.Thread(target=accept, args=(listener, port), daemon=True).start()
        return store

    dist.connect_store = connect_store
'''


def test_a_store_alive_but_not_answering_is_named_everywhere_and_nothing_is_applied(tmp_path: Path) -> None:
    """Not stopped (its process runs: state S), only silent: every route answers within the
    rank timeout (before the fix the door froze whole: a store call held the GIL), a PATCH
    is refused with nothing applied, and once the store answers again the group is back."""
    (tmp_path / "sitecustomize.py").write_text(HANG_STORE)
    srv = Server("--ranks", "2", "--tp-size", "2", "--admin-api-key", ADMIN_KEY, "--rank-timeout", "1",
                 start_timeout=240, env={"PYTHONPATH": str(tmp_path)})
    try:
        store = srv.store_host()
        leaves = {"source": "ops", "leaves": {"weight_version": "late"}}
        with httpx.Client(base_url=srv.url, timeout=10) as c:  # a route that does not answer fails the test
            epoch = c.get("/health").json()["epoch"]
            os.kill(store, signal.SIGUSR1)
            try:
                time.sleep(0.2)
                assert Path(f"/proc/{store}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] not in (b"T", b"t")
                for path in ("/health", "/config/weight_version", "/config/contracts", "/server_info", "/health"):
                    started = time.monotonic()
                    answer = c.get(path, headers=ADMIN)
                    assert answer.status_code == 503 and answer.json()["error"] == "store_stalled", (path, answer.text)
                    assert f"rendezvous store (pid {store})" in answer.text, (path, answer.text)
                    assert time.monotonic() - started < 5, path  # the rank timeout (1 s), and slack
                assert c.get("/metrics", headers=ADMIN).status_code == 200
                patch = c.patch("/config", json=leaves, headers=ADMIN)
                assert patch.status_code == 503 and patch.json()["error"] == "store_stalled", patch.text
                assert "nothing was applied" in patch.text
            finally:
                os.kill(store, signal.SIGUSR2)
            end = time.monotonic() + 60
            while (health := c.get("/health")).status_code != 200 and time.monotonic() < end:
                time.sleep(0.2)
            assert health.json()["epoch"] == epoch, health.text
            assert c.get("/config/weight_version", headers=ADMIN).json()["value"] != "late"
            assert c.patch("/config", json=leaves, headers=ADMIN).status_code == 200
    finally:
        srv.stop()
