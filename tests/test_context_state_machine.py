"""Random sequences of publish, override, scope, seal and re-publish keep two invariants:
`resolved` is the override log folded onto the record (with fallbacks and derived values),
and a closed scope leaves the state exactly as it was."""

from __future__ import annotations

from typing import Any

from hostile.strategies import PROFILE
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from configbags.generated.accessors import get_context
from configbags.generated.registry import LEAVES, REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError

# Leaves a scheduler may override, with values inside and (for the last ones) outside range.
TUNABLE = {
    "chunked_prefill_size": st.one_of(st.none(), st.integers(1, 8192)),
    "speculative_accept_threshold_single": st.floats(0, 1),
    "speculative_accept_threshold_acc": st.floats(-1, 2),
    "pp_max_micro_batch_size": st.one_of(st.none(), st.integers(-2, 64)),
    "dp_size": st.integers(0, 8),
    "disaggregation_mode": st.sampled_from(["null", "prefill", "decode", "bogus"]),
    "disable_radix_cache": st.booleans(),
    "speculative_num_draft_tokens": st.one_of(st.none(), st.integers(1, 12)),
}
RECORD_CHOICES = st.fixed_dictionaries(
    {
        "tp_size": st.sampled_from([1, 2, 8]),
        "enable_dp_attention": st.booleans(),
        "dp_size": st.sampled_from([1, 2]),
        "speculative_num_draft_tokens": st.sampled_from([None, 4, 8]),
    }
)


def fold(record: ServerArgs, log: Any) -> dict[str, Any]:
    """The reference: a tiny reflective fold that does not use the context's code paths.
    Pinned values come from the record alone (computed at publish, never after)."""
    values = {name: getattr(record, name) for name in LEAVES}
    for entry in log:
        values[entry.leaf] = entry.new
    for name, spec in LEAVES.items():
        if values[name] is None and spec.has_fallback:
            values[name] = spec.fallback
    for name, d in REGISTRY.derived.items():
        values[name] = fold(record, ())[name] if d.pinned and log else d.fn(*[values[i] for i in d.inputs])
    return values


class ContextMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ctx = get_context()
        self.outer = self.ctx.restoring()
        self.outer.__enter__()
        self.scopes: list[tuple[Any, Any]] = []  # (scope, state at entry)
        self.ctx.publish(ServerArgs(model_path="m", speculative_algorithm="EAGLE"), role="scheduler")

    def teardown(self) -> None:
        while self.scopes:
            self.scopes.pop()[0].__exit__(None, None, None)
        self.outer.__exit__(None, None, None)

    @rule(choice=RECORD_CHOICES)
    def republish(self, choice: dict[str, Any]) -> None:
        record = ServerArgs(model_path="m", speculative_algorithm="EAGLE", **choice)
        before = self.ctx.state
        try:
            self.ctx.publish(record, role="scheduler")
        except ConfigError:  # a layout the derived values refuse (tp not divisible by dp)
            assert self.ctx.state is before  # all or nothing
            return
        report = self.ctx.republish_report
        if report is not None:
            assert all(d.reason for d in report.dropped)

    @rule(data=st.data(), names=st.sets(st.sampled_from(sorted(TUNABLE)), min_size=1, max_size=3))
    def override(self, data: st.DataObject, names: set[str]) -> None:
        leaves = {n: data.draw(TUNABLE[n], label=n) for n in sorted(names)}
        before = self.ctx.state
        try:
            self.ctx.override("machine", **leaves)
        except ConfigError:
            assert self.ctx.state is before  # all or nothing

    @rule()
    def seal(self) -> None:
        self.ctx.seal()

    @rule(value=st.integers(1, 64))
    def open_scope(self, value: int) -> None:
        entry_state = self.ctx.state
        scope = self.ctx.scoped("scope", max_running_requests=value, tp_size=value % 4 + 1)
        try:
            scope.__enter__()
        except ConfigError:  # a tp_size the layout refuses
            assert self.ctx.state is entry_state
            return
        self.scopes.append((scope, entry_state))

    @precondition(lambda self: bool(self.scopes))
    @rule()
    def close_scope(self) -> None:
        scope, entry_state = self.scopes.pop()
        before = self.ctx.epoch
        scope.__exit__(None, None, None)
        state = self.ctx.state  # the entry state again (one thread), at a later epoch
        assert (state.record, dict(state.values), list(state.log), state.sealed) == (
            entry_state.record, dict(entry_state.values), list(entry_state.log), entry_state.sealed)
        assert state.epoch >= before

    @invariant()
    def resolved_is_the_fold(self) -> None:
        state = self.ctx.state
        assert dict(state.values) == fold(state.record, state.log)
        assert self.ctx.server_info()["resolved"]["tp_size"] == state.values["tp_size"]

    @invariant()
    def epochs_are_monotonic(self) -> None:
        epochs = [e.epoch for e in self.ctx.state.log]
        assert epochs == sorted(epochs)
        assert all(e <= self.ctx.epoch for e in epochs)


# the hostile suite's profile: 40 runs in `make test`, 10 in `make quick`, thousands in `make fuzz`
ContextMachine.TestCase.settings = settings(PROFILE, stateful_step_count=25)
TestContextMachine = ContextMachine.TestCase
