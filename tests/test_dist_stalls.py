"""Ranks recover or leave, and say nothing secret: a rank stopped before or inside a
publish is named on the source, and once continued the group is back in step (the next
override and check succeed everywhere, never a raw gloo error); a rank that stays stopped
through `leave_after` collectives leaves, named, and from then on every collective refuses
at once on every rank, the one that left included when it comes back; a runtime secret
leaf changed through the group is redacted in every rank's log, at DEBUG."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import dist_workers
import pytest
from torch._C._distributed_c10d import TCPStore

pytestmark = pytest.mark.slow  # spawned ranks waiting out timeouts

DEADLINE = 120.0  # bounds every wait below; never an assertion about speed


def _spawn(target: Any, world: int, tmp_path: Path, store: TCPStore) -> list[Any]:
    ranks = dist_workers.context()
    procs = [ranks.Process(target=target, args=(r, world, store.port, str(tmp_path))) for r in range(world)]
    for p in procs:
        p.start()
    return procs


def _wait_for(paths: list[Path], end: float, what: str) -> None:
    while not all(p.exists() for p in paths):
        assert time.monotonic() < end, f"{what} did not finish"
        time.sleep(0.05)
    time.sleep(0.05)  # let the last writer finish its file


def test_a_rank_stopped_before_or_inside_a_publish_is_named_and_catches_up(tmp_path: Path) -> None:
    world, victim = 2, 1
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    procs = _spawn(dist_workers.publish_stalls, world, tmp_path, store)
    end = time.monotonic() + DEADLINE
    try:
        for i, (_method, where) in enumerate(dist_workers.PUBLISH_STALLS):
            files = [tmp_path / f"pstall{i}-{r}.json" for r in range(world)]
            _wait_for([f for r, f in enumerate(files) if r != victim], end, f"publish stall {i}")
            os.kill(int((tmp_path / f"pid-{victim}").read_text()), signal.SIGCONT)
            _wait_for(files, end, f"continued rank of publish stall {i}")
            got = [json.loads(f.read_text()) for f in files]
            source = got[0]
            assert source["outcome"] == "error" and source["type"] == "DistributedConfigError", (where, source)
            assert f"rank(s) {victim} of {world}" in source["message"], (where, source)
            assert all(g["outcome"] != "raw" for g in got), (where, got)
            after = [json.loads(f.read_text()) for f in _after(tmp_path, i, world, end)]
            assert [a["outcome"] for a in after] == ["ok"] * world, (where, after)
            assert {(a["value"], a["epoch"]) for a in after} == {(200 + i, after[0]["epoch"])}, (where, after)
        for p in procs:
            p.join(10)
    finally:
        dist_workers.reap(procs)
        del store


def _after(tmp_path: Path, i: int, world: int, end: float) -> list[Path]:
    files = [tmp_path / f"pstall{i}-after-{r}.json" for r in range(world)]
    _wait_for(files, end, f"the override after publish stall {i}")
    return files


def test_a_runtime_secret_changed_on_two_ranks_is_redacted_in_every_log_at_debug(tmp_path: Path) -> None:
    world = 2
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    procs = _spawn(dist_workers.secret_logs, world, tmp_path, store)
    try:
        _wait_for([tmp_path / f"secret-{r}.json" for r in range(world)], time.monotonic() + DEADLINE, "secret_logs")
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0] * world
    finally:
        dist_workers.reap(procs)
        del store
    for rank in range(world):
        text = (tmp_path / f"log-{rank}.txt").read_text()
        assert dist_workers.SECRET not in text, (rank, text)
        changes = [line for line in text.splitlines() if "config override [rotate] serving.weight_version" in line]
        assert len(changes) == 2 and all("'<redacted>' -> '<redacted>'" in line for line in changes), (rank, text)


def test_a_rank_that_stays_stopped_leaves_and_every_later_collective_refuses_at_once(tmp_path: Path) -> None:
    world, victim = 3, 2
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    procs = _spawn(dist_workers.leaves, world, tmp_path, store)
    end = time.monotonic() + DEADLINE
    try:
        files = [tmp_path / f"leave-{r}.json" for r in range(world)]
        _wait_for(files[:victim], end, "the live ranks")
        os.kill(int((tmp_path / f"pid-{victim}").read_text()), signal.SIGCONT)
        _wait_for(files, end, "the continued rank")
        got = [json.loads(f.read_text()) for f in files]
        for p in procs:
            p.join(10)
    finally:
        dist_workers.reap(procs)
        del store
    named = f"rank(s) {victim} of {world}"
    for rank in range(victim):
        first, second, *after = got[rank]
        # each of the first two names the stopped rank after the timeout; the second makes it leave
        for out in (first, second):
            assert out["outcome"] == "error" and out["type"] == "DistributedConfigError", (rank, out)
            assert named in out["message"], (rank, out)
        if rank == 0:  # the source decides it there; the followers learn it from its next post
            assert "left the group" in second["message"], (rank, second)
        for out in after:  # override, check, seal: refused at once, naming it, nothing applied
            assert out["outcome"] == "error" and out["type"] == "RankLeftError", (rank, out)
            assert named in out["message"] and "left the group" in out["message"], (rank, out)
        assert {(o["value"], o["epoch"]) for o in got[rank]} == {(got[0][0]["value"], got[0][0]["epoch"])}
        assert got[rank][0]["value"] not in (300, 301)
    (back,) = got[victim]
    assert back["outcome"] == "error" and back["type"] == "RankLeftError", back
    assert f"rank {victim} left the group" in back["message"] and "restart" in back["message"], back


def test_a_group_the_engine_made_itself_is_joined_through_its_store_signed(tmp_path: Path) -> None:
    """DistributedContext() over the default group's store: every key configbags wrote
    there is sealed for the launch (torch's own keys, outside the prefix, are not ours)."""
    world = 2
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    procs = _spawn(dist_workers.default_store, world, tmp_path, store)
    try:
        files = [tmp_path / f"default-{r}.json" for r in range(world)]
        _wait_for(files, time.monotonic() + DEADLINE, "default_store")
        for p in procs:
            p.join(30)
        assert [json.loads(f.read_text())["value"] for f in files] == [640] * world
        keys = store.list_keys()
        ours = [k for k in keys if "configbags/" in k]  # under the default group's own prefix
        assert any("configbags/ctx/" in k for k in ours), keys
        assert all(re.fullmatch(rb"s1\.[A-Za-z0-9+/]+={0,2}", store.get(k)) for k in ours), ours
    finally:
        dist_workers.reap(procs)
        del store
