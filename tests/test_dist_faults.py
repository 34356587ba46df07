"""Two-phase overrides across gloo ranks (3 and 4, localhost) with a rank SIGKILLed or
SIGSTOPped just before each phase, as follower and as source: no rank ever applies what
another did not, every live rank gets a DistributedConfigError naming the missing rank
(never a raw gloo error, never a healthy rank), within about two timeouts."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import dist_workers
import pytest
from torch._C._distributed_c10d import TCPStore

pytestmark = pytest.mark.slow  # ranks waiting out timeouts: most of the suite's time

SCENARIOS = list(dist_workers.FAULT_PHASES)
DEADLINE = 120.0


def _run(world: int, signame: str, scenarios: list[tuple[str, str]], tmp_path: Path) -> list[list[dict[str, Any]]]:
    """Spawn the ranks, continue a stopped victim once the others wrote their outcome, and
    return the outcomes per scenario and rank (None for a killed victim)."""
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    plan = [[victim, phase, 1000 + i] for i, (victim, phase) in enumerate(scenarios)]
    ranks = dist_workers.context()
    procs = [ranks.Process(target=dist_workers.faults,
                           args=(r, world, store.port, str(tmp_path), signame, plan)) for r in range(world)]
    for p in procs:
        p.start()
    results: list[list[dict[str, Any]]] = []
    end = time.monotonic() + DEADLINE
    try:
        for i, (victim, _phase) in enumerate(scenarios):
            victim_rank = 0 if victim == "source" else world - 1
            live = [r for r in range(world) if r != victim_rank]
            files = [tmp_path / f"fault{i}-{r}.json" for r in range(world)]
            while not all(files[r].exists() for r in live):
                assert time.monotonic() < end, f"scenario {i} did not finish"
                time.sleep(0.05)
            if signame == "SIGSTOP":
                pid = int((tmp_path / f"pid-{victim_rank}").read_text())
                os.kill(pid, signal.SIGCONT)
                while not files[victim_rank].exists():
                    assert time.monotonic() < end, f"continued victim of scenario {i} did not finish"
                    time.sleep(0.05)
            time.sleep(0.05)  # let the last writer finish its file
            results.append([json.loads(f.read_text()) if f.exists() else {"outcome": "dead"} for f in files])
        for p in procs:
            p.join(10)
    finally:
        dist_workers.reap(procs)
        del store
    return results


def _check(world: int, signame: str, scenario: tuple[str, str], new: int, got: list[dict[str, Any]]) -> None:
    victim, _phase = scenario
    victim_rank = 0 if victim == "source" else world - 1
    commits = dist_workers.FAULT_PHASES[scenario][1]
    ranks = [r for r in range(world) if signame == "SIGSTOP" or r != victim_rank]
    name = f"rank {victim_rank} (the source rank)" if victim == "source" else f"rank(s) {victim_rank} of {world}"
    for r in ranks:
        out = got[r]
        assert out["outcome"] != "raw", (scenario, r, out)
        if commits:
            assert out["outcome"] == "ok", (scenario, r, out)
            assert out["value"] == new, (scenario, r, out)
        else:
            assert out["outcome"] == "error", (scenario, r, out)
            assert out["type"] == "DistributedConfigError", (scenario, r, out)
            assert name in out["message"], (scenario, r, out)
            assert "nothing was applied on any rank" in out["message"], (scenario, r, out)
            assert out["value"] != new, (scenario, r, out)
            if r != victim_rank:  # named within about two timeouts (the victim was stopped)
                assert out["seconds"] < 2 * dist_workers.FAULT_TIMEOUT + 3, (scenario, r, out)
        # no partial apply: every rank holds the same value at the same epoch
        assert (out["value"], out["epoch"]) == (got[ranks[0]]["value"], got[ranks[0]]["epoch"]), (scenario, got)
    if signame == "SIGKILL":
        for r in ranks:  # the next override names the dead rank on every live rank
            second = got[r]["second"]
            assert second["outcome"] == "error" and second["type"] == "DistributedConfigError", (scenario, r, second)
            assert name in second["message"] or (victim == "source" and "rank 0" in second["message"]), second


@pytest.mark.parametrize("world", [3, 4])
def test_sigstop_at_every_phase(world: int, tmp_path: Path) -> None:
    results = _run(world, "SIGSTOP", SCENARIOS, tmp_path)
    for i, (scenario, got) in enumerate(zip(SCENARIOS, results, strict=True)):
        _check(world, "SIGSTOP", scenario, 1000 + i, got)
        applied = {g["value"] for g in got}
        assert len(applied) == 1, (scenario, got)


@pytest.mark.parametrize("world", [3, 4])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=["-".join(s) for s in SCENARIOS])
def test_sigkill_at_every_phase(world: int, scenario: tuple[str, str], tmp_path: Path) -> None:
    (got,) = _run(world, "SIGKILL", [scenario], tmp_path)
    _check(world, "SIGKILL", scenario, 1000, got)
