"""Multi-rank config over torch.distributed (gloo, localhost, 2 and 4 spawned ranks)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import dist_workers
import pytest
from torch._C._distributed_c10d import TCPStore

pytestmark = pytest.mark.slow  # spawned ranks, some waiting out a timeout


@pytest.fixture
def store_port() -> Any:
    # The test process hosts the rendezvous store on a free port (port 0): no port race, and
    # it outlives a rank that dies.
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    yield store.port
    del store


def _read(outdir: Path, name: str, ranks: range) -> list[Any]:
    return [json.loads((outdir / f"{name}-{r}.json").read_text()) for r in ranks]


@pytest.mark.parametrize("world", [2, 4])
def test_publish_override_divergence_and_groups(world: int, store_port: int, tmp_path: Path) -> None:
    dist_workers.start(dist_workers.scenario, (world, store_port, str(tmp_path)), world)
    seen = _read(tmp_path, "scenario", range(world))
    ref = seen[0]
    # every rank: the same server_info (record, log with epochs and times, resolved), hash, epoch
    for rank, s in enumerate(seen):
        assert s["after_overrides"] == ref["after_overrides"], rank
        assert (s["hash"], s["epoch"], s["seen"]) == (ref["hash"], ref["epoch"], 512)
        assert s["refused"] == "PolicyError"
        assert f"rank(s) {world - 1} of {world}" in s["divergence"]
        assert s["healed"] is True
    log = ref["after_overrides"]["overrides"]
    assert [(e["leaf"], e["new"]) for e in log] == [
        ("chunked_prefill_size", 1024), ("chunked_prefill_size", 2048),
        ("chunked_prefill_size", 4096), ("chunked_prefill_size", 512), ("dp_size", 2),
    ]
    assert [e["epoch"] for e in log] == [ref["published_epoch"] + i for i in (1, 2, 3, 4, 4)]
    # every layout: the stamped ranks differ across ranks the way the layout says
    for i, _fields in enumerate(dist_workers.LAYOUTS[world]):
        coords = {tuple(sorted(s["layouts"][i].items())) for s in seen}
        assert len(coords) == world  # no two ranks share every coordinate


@pytest.mark.parametrize("world", [2, 4])
def test_rank_that_never_joins_is_named(world: int, store_port: int, tmp_path: Path) -> None:
    dist_workers.start(dist_workers.never_joins, (world, store_port, str(tmp_path)), world - 1)
    for msg in _read(tmp_path, "never", range(world - 1)):
        assert f"join: rank(s) {world - 1} of {world} did not arrive within 2 s" in msg


def test_rank_that_dies_is_named(store_port: int, tmp_path: Path) -> None:
    world = 4
    dist_workers.start(dist_workers.dies, (world, store_port, str(tmp_path)), world)
    for got in _read(tmp_path, "dies", range(world - 1)):
        assert f"rank(s) {world - 1} of {world} did not acknowledge within 2 s" in got["error"]
        assert "override" in got["error"]
        assert got["epoch_kept"] is True


def test_republish_report_and_source_failures_reach_every_rank(store_port: int, tmp_path: Path) -> None:
    world = 2
    dist_workers.start(dist_workers.failures, (world, store_port, str(tmp_path)), world)
    for rank, got in enumerate(_read(tmp_path, "failures", range(world))):
        assert got["first_report_none"] is True, rank  # nothing to replay on a first publish
        # The source's re-publish report, on the DistributedContext and the context alike.
        expected = {"replayed": ["chunked_prefill_size"], "dropped": [["speculative_num_draft_tokens", True]]}
        assert got["reports"] == [expected, expected], rank
        assert got["values"] == [1024, 2], rank
        assert got["epoch_kept"] is True
        crash, kv_error = got["override_crash"], got["override_kv_error"]
        if rank == 0:  # the source re-raises its own exception
            assert got["publish_crash"]["type"] == "AttributeError"
            assert (crash["type"], crash["message"]) == ("RuntimeError", "boom")
            assert (kv_error["type"], kv_error["message"]) == ("BudgetError", "no KV left")
            continue
        # followers: promptly (well inside the group timeout) and naming the source rank
        for failed in (got["publish_crash"], crash):
            assert failed["type"] == "DistributedConfigError"
            assert "failed on rank 0 (the source rank)" in failed["message"]
            assert failed["seconds"] < dist_workers.FAILURE_TIMEOUT / 2
        assert "with AttributeError" in got["publish_crash"]["message"]
        assert "with RuntimeError: boom" in crash["message"]
        # a refusal keeps its class on every rank, KV configurator errors included
        assert kv_error["type"] == "BudgetError"
        assert "override refused on rank 0" in kv_error["message"]
