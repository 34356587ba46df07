"""State transfer to child processes (export_state / from_state) and the rank arithmetic."""

from __future__ import annotations

import itertools
import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dist_workers
import pytest

from configbags.generated.accessors import get_context, get_parallel, get_schedule, publish
from configbags.generated.server_args import ServerArgs
from configbags.runtime.dist import (
    FORMAT_VERSION,
    Layout,
    compute_ranks,
    export_state,
    from_state,
    group_ranks,
    import_state,
    state_dict,
)
from configbags.runtime.errors import DistributedConfigError, RankNotStampedError


@pytest.fixture
def parent() -> Iterator[Any]:
    """A published parent with overrides across a re-publish and a seal."""
    ctx = get_context()
    with ctx.restoring():
        publish(ServerArgs(model_path="m", tp_size=2, enable_dp_attention=True, dp_size=2),
                role="scheduler")
        ctx.override("tune", chunked_prefill_size=1024, dp_size=1)
        ctx.override("tune", chunked_prefill_size=2048)
        publish(ServerArgs(model_path="m2", tp_size=2, enable_dp_attention=True, dp_size=2),
                role="scheduler")  # replays the log: epochs no longer follow the entry count
        ctx.seal()
        ctx.override("adapt", pp_max_micro_batch_size=8, disaggregation_mode="decode")
        yield ctx


def _info(ctx: Any) -> str:
    return json.dumps(ctx.server_info(), sort_keys=True)


@pytest.mark.slow
def test_spawned_child_sees_parent_overrides(parent: Any, tmp_path: Path) -> None:
    out = tmp_path / "child.json"
    proc = multiprocessing.get_context("spawn").Process(
        target=dist_workers.child, args=(export_state(parent), str(out)))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    got = json.loads(out.read_text())
    assert json.dumps(got["server_info"], sort_keys=True) == _info(parent)
    assert got["hash"] == parent.config_hash()
    assert (got["epoch"], got["sealed"], got["role"]) == (parent.epoch, True, "scheduler")
    assert got["chunked_prefill_size"] == 2048 == get_schedule().chunked_prefill_size
    assert got["entry_epochs"] == [e.epoch for e in parent.state.log]


def test_round_trip_in_process_is_exact(parent: Any) -> None:
    text, info, state = export_state(parent), _info(parent), parent.state
    parent.publish(ServerArgs(model_path="other"), role="worker")  # clobber, then restore
    from_state(text)
    assert _info(parent) == info
    assert parent.state.record == state.record
    assert parent.state.log == state.log  # entries equal field by field, tuples restored
    assert (parent.epoch, parent.sealed, parent.role) == (state.epoch, state.sealed, state.role)
    assert dict(parent.state.values) == dict(state.values)
    assert export_state(parent) == text  # stable text


def test_format_is_versioned_json(parent: Any) -> None:
    data = json.loads(export_state(parent))
    assert data["format"] == "configbags.state"
    assert data["version"] == FORMAT_VERSION
    assert set(data) == {"format", "version", "role", "epoch", "sealed", "ranks", "record", "log",
                         "config_hash", "resolution"}
    assert set(data["log"][0]) == {"epoch", "source", "leaf", "namespace", "old", "new",
                                   "wall_time"}
    with pytest.raises(DistributedConfigError, match="format version 99"):
        import_state({**data, "version": 99})
    with pytest.raises(DistributedConfigError, match="not an exported configbags state"):
        import_state({**data, "format": "other"})


def test_import_checks_the_hash_and_the_leaves(parent: Any) -> None:
    data = state_dict(parent)
    with pytest.raises(DistributedConfigError, match="resolves to config_hash"):
        import_state({**data, "config_hash": "0" * 16})
    bad_log = [{**data["log"][0], "leaf": "no_such_leaf"}]
    with pytest.raises(DistributedConfigError, match="no_such_leaf"):
        import_state({**data, "log": bad_log})


def test_child_may_take_another_role_and_its_own_ranks(parent: Any) -> None:
    ranks = compute_ranks(1, tp_size=2, attn_dp_size=2)
    import_state(export_state(parent), role="worker", ranks=ranks)
    assert parent.role == "worker"
    assert get_parallel().attn_dp_rank == 1
    assert get_parallel().tp_rank == 1


def test_unstamped_rank_explains(parent: Any) -> None:
    with pytest.raises(RankNotStampedError, match="never stamped"):
        _ = get_parallel().tp_rank


def test_republish_after_import_replays_the_log(parent: Any) -> None:
    from_state(export_state(parent))
    publish(ServerArgs(model_path="m3"), role="scheduler")
    assert get_schedule().chunked_prefill_size == 2048


# -- rank arithmetic ------------------------------------------------------------------------

def _layouts() -> Iterator[Layout]:
    for tp, pp in itertools.product((1, 2, 4, 8), (1, 2, 3)):
        for a_dp, a_cp, m_ep, m_dp in itertools.product((1, 2, 4), (1, 2), (1, 2, 4), (1, 2)):
            if tp % (a_dp * a_cp) or tp % (m_ep * m_dp):
                continue
            yield Layout(tp_size=tp, pp_size=pp, attn_dp_size=a_dp, attn_cp_size=a_cp,
                         moe_ep_size=m_ep, moe_dp_size=m_dp)


RANK_OF_GROUP = dist_workers.RANK_OF_GROUP


@pytest.mark.parametrize("layout", list(_layouts()), ids=repr)
def test_stamped_rank_is_the_index_in_its_group(layout: Layout) -> None:
    groups = group_ranks(layout)
    for lists in groups.values():
        # each axis partitions the world
        assert sorted(itertools.chain.from_iterable(lists)) == list(range(layout.world_size))
    for w in range(layout.world_size):
        ranks = compute_ranks(w, layout)
        assert ranks["world_rank"] == w == layout.tp_size * ranks["pp_rank"] + ranks["tp_rank"]
        for name, lists in groups.items():
            (members,) = [g for g in lists if w in g]
            # torch numbers a group's ranks in sorted order of their world ranks
            assert sorted(members).index(w) == ranks[RANK_OF_GROUP[name]], (name, w)


def test_sglang_formulas() -> None:
    # attention DP: attn_tp_rank = tp_rank % attn_tp_size, attn_dp_rank = tp_rank // attn_tp_size
    lay = Layout(tp_size=8, pp_size=2, attn_dp_size=4)
    for w in range(16):
        r = compute_ranks(w, lay)
        assert r["attn_tp_rank"] == r["tp_rank"] % 2
        assert r["attn_dp_rank"] == r["tp_rank"] // 2
    # MoE: moe_tp innermost, moe_ep_rank = tp_rank // moe_tp_size
    lay = Layout(tp_size=8, moe_ep_size=4)
    assert [compute_ranks(w, lay)["moe_ep_rank"] for w in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_layout_from_published_parallel_bag(parent: Any) -> None:
    lay = Layout.from_values(get_parallel())
    assert (lay.tp_size, lay.attn_dp_size, lay.attn_tp_size) == (2, 1, 2)  # dp_size overridden to 1


@pytest.mark.parametrize(("sizes", "match"), [
    ({"tp_size": 2, "attn_dp_size": 4}, "attention groups"),
    ({"tp_size": 4, "moe_ep_size": 2, "moe_tp_size": 4}, "MoE groups"),
])
def test_layouts_that_do_not_tile_are_refused(sizes: dict[str, int], match: str) -> None:
    with pytest.raises(DistributedConfigError, match=match):
        compute_ranks(0, **sizes)


def test_rank_outside_the_launch_is_refused() -> None:
    with pytest.raises(DistributedConfigError, match="outside the launch"):
        compute_ranks(4, tp_size=2, pp_size=2)


def test_runtime_resize_restamps_ranks(config_scope: Any) -> None:
    """An elastic resize (dp_size is a runtime leaf) re-stamps the ranks from the rank
    function, so no rank read after it contradicts the sizes next to it."""
    import functools

    from configbags.generated.accessors import get_parallel
    from configbags.runtime.dist import compute_ranks, stamp_ranks

    record = ServerArgs(model_path="m", tp_size=8, dp_size=2, enable_dp_attention=True)
    ctx = config_scope.publish(record, role="scheduler", ranks=functools.partial(stamp_ranks, 5))
    assert (get_parallel().attn_dp_rank, get_parallel().attn_tp_rank) == (1, 1)
    ctx.override("elastic_ep", dp_size=4)
    expected = compute_ranks(5, tp_size=8, attn_dp_size=4, attn_tp_size=2)
    par = get_parallel()
    assert (par.attn_dp_size, par.attn_tp_size) == (4, 2)
    assert (par.attn_dp_rank, par.attn_tp_rank, par.world_rank) == (
        expected["attn_dp_rank"], expected["attn_tp_rank"], 5)
    assert ctx.state.ranks == compute_ranks(5, tp_size=8, attn_dp_size=4, attn_tp_size=2)


def test_error_kinds_map_to_their_classes() -> None:
    from configbags.runtime.dist._propagate import _error_class
    from configbags.runtime.errors import CapacityError, ConfigError
    from configbags.server.kvcache.errors import BudgetError, ContextTooLongError

    assert _error_class("CapacityError") is CapacityError
    assert _error_class("DistributedConfigError") is DistributedConfigError
    assert _error_class("BudgetError") is BudgetError  # the KV configurator's errors too
    assert _error_class("ContextTooLongError") is ContextTooLongError
    assert _error_class("SomeoneElsesError") is ConfigError  # unknown here: the base class
    assert _error_class("RuntimeError") is ConfigError  # never a non-config class
