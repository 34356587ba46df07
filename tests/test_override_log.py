"""The override log is bounded: past twice `OverrideLog.HISTORY` entries it folds the older
ones into each leaf's last entry, a count per (leaf, source kind) and a folded total. What
is in force and why, the counters, a re-publish's replay, scopes and state transfer all
come out as they would from the whole history."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from configbags.generated.accessors import get_schedule
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context, OverrideEntry, OverrideLog
from configbags.runtime.dist import export_state, import_state
from configbags.serve.door import Door
from configbags.serve.metrics import ConfigCollector, exposition, metrics_registry

HISTORY = 8


@pytest.fixture(autouse=True)
def small_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OverrideLog, "HISTORY", HISTORY)


@pytest.fixture
def ctx(config_scope: Context[Any]) -> Context[Any]:
    return config_scope.publish(ServerArgs(model_path="m"), role="test")


def _entry(i: int, leaf: str, source: str = "http:x") -> OverrideEntry:
    return OverrideEntry(i, source, leaf, "schedule", i - 1, i, float(i))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True), max_size=60))
def test_folding_keeps_each_leafs_last_entry_the_counts_and_the_order(calls: list[list[str]]) -> None:
    log, whole = OverrideLog(), []
    for i, leaves in enumerate(calls, start=1):
        entries = [_entry(i, leaf, "http:x" if i % 2 else "file:/c.yaml") for leaf in leaves]
        log, whole = log + entries, whole + entries
        assert len(log) <= 2 * HISTORY + len("abcd")  # bounded, however long it runs
    assert log.appended == len(whole)
    assert log.folded + len(log) - log.standing_count == len(whole)
    counts: dict[tuple[str, str], int] = {}
    for e in whole:
        counts[e.leaf, e.source.partition(":")[0]] = counts.get((e.leaf, e.source.partition(":")[0]), 0) + 1
    assert log.tally() == counts
    kept = list(log)
    assert {e.leaf: e for e in kept} == {e.leaf: e for e in whole}  # each leaf's last entry survives
    position = {id(e): n for n, e in enumerate(whole)}
    assert [position[id(e)] for e in kept] == sorted(position[id(e)] for e in kept)  # in order


def test_since_sees_through_a_fold() -> None:
    old = OverrideLog() + [_entry(i, "a") for i in range(1, 2 * HISTORY)]
    more, other = (_entry(100, "b"), _entry(100, "c")), (_entry(1, "a"),)
    new = old + more  # over 2 x HISTORY: folds
    assert new.folded > 0
    assert new.since(old) == more
    assert (OverrideLog() + other).since(old) is None  # another log


def test_a_long_running_server_keeps_what_is_in_force(ctx: Context[Any]) -> None:
    ctx.override("http:first", chunked_prefill_size=1024)  # early, then never again
    for n in range(1, 200):
        ctx.override(f"http:tuner-{n % 3}", max_running_requests=n)
    info = ctx.server_info()
    assert len(info["overrides"]) <= 2 * HISTORY + 2
    assert info["overrides_folded"] == 200 - (len(info["overrides"]) - ctx.state.log.standing_count)
    assert "'http:first'" in info["layers"]["chunked_prefill_size"]["source"]
    assert [o["new"] for o in ctx.explain("chunked_prefill_size")["overrides"]] == [1024]
    assert info["resolved"]["max_running_requests"] == 199

    families = {f.name: f for f in text_string_to_metric_families(exposition(metrics_registry(ConfigCollector(Door(ctx)))).decode())}
    counted = {s.labels["leaf"]: s.value for s in families["configbags_config_overrides"].samples
               if s.name.endswith("_total")}
    assert counted == {"chunked_prefill_size": 1, "max_running_requests": 199}  # never goes back

    ctx.publish(ServerArgs(model_path="m", tp_size=2), role="test")  # re-publish replays
    assert get_schedule().max_running_requests == 199
    assert get_schedule().chunked_prefill_size == 1024


def test_state_transfer_carries_the_folded_summary(ctx: Context[Any]) -> None:
    for n in range(1, 60):
        ctx.override("http:tuner", max_running_requests=n)
    state, text = ctx.state, export_state(ctx)
    ctx.publish(ServerArgs(model_path="other"), role="test")  # clobber, then restore
    import_state(text, ctx)
    log = ctx.state.log
    assert log == state.log
    assert (log.folded, log.standing_count, log.tally()) == (state.log.folded, state.log.standing_count,
                                                             state.log.tally())
    assert export_state(ctx) == text
