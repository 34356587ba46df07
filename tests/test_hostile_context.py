"""The context's invariants under hostile use: a read-only State, an install order that
keeps readbacks no older than accessors, typed errors from runner views, capacity errors
that reveal nothing a role may not read, and record mode failing before it installs."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from hostile.corpus import BIG_FLOAT_INT, HUGE_INT, cyclic_dict, cyclic_list, deep_list
from test_roles_modes import last_json, run_python

from configbags.generated.accessors import get_schedule, runner_view
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import LeafValueError, UnknownLeafError


@pytest.fixture
def ctx(config_scope: Context[Any], record: ServerArgs) -> Context[Any]:
    return config_scope.publish(record, role="test")


# -- State is read-only ----------------------------------------------------------------------

def test_state_and_its_mappings_cannot_be_mutated(ctx: Context[Any]) -> None:
    state = ctx.state
    with pytest.raises(TypeError):
        state.values["tp_size"] = 64  # type: ignore[index]
    with pytest.raises(TypeError):
        state.bags["parallel"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        state.ranks["tp_rank"] = 3  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.epoch = 99  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.record.tp_size = 64
    ctx.override("tune", chunked_prefill_size=1024)
    with pytest.raises(TypeError):
        ctx.state.values["chunked_prefill_size"] = 1  # type: ignore[index]
    assert ctx.server_info()["resolved"]["tp_size"] == ctx.state.bags["parallel"].tp_size == 1


# -- install order: readbacks are never older than accessors --------------------------------

def _snapshot_lag(ctx: Context[Any], rounds: int) -> int:
    """Readers read the accessor, then `snapshot()` and `server_info()`, while a writer
    raises chunked_prefill_size step by step; returns how often a readback was older than
    the accessor read just before it."""
    stop = threading.Event()
    lagged = [0]

    def reader() -> None:
        while not stop.is_set():
            seen = get_schedule().chunked_prefill_size
            snap = ctx.snapshot()["schedule"].chunked_prefill_size
            info = ctx.server_info()["resolved"]["chunked_prefill_size"]
            if snap < seen or info < seen:
                lagged[0] += 1

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave as often as the interpreter allows
    try:
        ctx.override("writer", chunked_prefill_size=1)
        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for i in range(2, rounds):
            ctx.override("writer", chunked_prefill_size=i)
        stop.set()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    return lagged[0]


def test_snapshot_and_server_info_are_never_older_than_an_accessor(ctx: Context[Any]) -> None:
    assert _snapshot_lag(ctx, 1500) == 0


def test_the_lag_test_catches_an_install_that_fills_slots_first(
    ctx: Context[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above can fail: an install that fills the accessor slots before it sets
    the state (the order this code once had), with its window widened, is caught."""
    install = Context._install

    def slots_first(self: Context[Any], state: Any, slots: Any = None) -> None:
        previous = self._state
        install(self, state, slots)
        if state is None or previous is None:
            return
        self._state = previous  # the slots already show `state`; the readback does not yet
        time.sleep(0.0002)
        self._state = state

    monkeypatch.setattr(Context, "_install", slots_first)
    assert _snapshot_lag(ctx, 300) > 0


# -- typed errors and no change of state -------------------------------------------------------

def test_runner_view_unknown_path_is_a_typed_error(ctx: Context[Any]) -> None:
    view = runner_view("draft")
    with pytest.raises(UnknownLeafError, match=r"runner view 'draft': no namespace 'schedul' \(did you mean 'schedule'\?\)"):
        view.bag("schedul")


@pytest.mark.parametrize(
    ("leaf", "value", "message"),
    [
        ("dp_size", HUGE_INT, "more than 100 digits"),
        ("chunked_prefill_size", -HUGE_INT, "more than 100 digits"),
        ("mem_fraction_static", BIG_FLOAT_INT, "more than 100 digits"),
        ("json_model_override_args", deep_list(), "nests deeper than 64"),
        ("json_model_override_args", cyclic_list(), "cyclic"),
        ("json_model_override_args", cyclic_dict(), "cyclic"),
    ],
    ids=["huge-int", "huge-negative-int", "2**2000-float", "deep-json", "cyclic-list", "cyclic-dict"],
)
def test_hostile_override_values_are_refused_by_the_limits(
    ctx: Context[Any], leaf: str, value: Any, message: str
) -> None:
    spec = ctx.registry.leaves.get(leaf)
    if spec is None:
        pytest.skip(f"no leaf {leaf} in this schema")
    before = ctx.state
    with pytest.raises(LeafValueError, match=message) as info:
        ctx.scoped("hostile", **{leaf: value}).__enter__()
    assert leaf in str(info.value)
    assert ctx.state is before
    # everything that renders the state still works
    assert ctx.config_hash()
    ctx.server_info()


def test_derived_fn_that_raises_names_the_derived_leaf_and_inputs() -> None:
    from configbags.runtime.context._building import derive as _derive
    from configbags.runtime.leaftypes import TypeSpec
    from configbags.runtime.registry import DerivedSpec

    spec = DerivedSpec("ratio", "ns", TypeSpec("float", False), lambda a, b: a / b, ("x", "y"), False, True)
    with pytest.raises(LeafValueError, match=r"derived value ns.ratio: its function raised ZeroDivisionError: .* x=1, y=0"):
        _derive(spec, {"x": 1, "y": 0})
    arity = DerivedSpec("one", "ns", TypeSpec("int", False), lambda a: a, ("x", "y"), False, True)
    with pytest.raises(LeafValueError, match=r"derived value ns.one: its function raised TypeError"):
        _derive(arity, {"x": 1, "y": 0})


# -- role doors -------------------------------------------------------------------------------

CAPACITY_PROBE = """
    import json
    from configbags.generated.accessors import publish, get_context
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.errors import CapacityError
    ctx = get_context()
    publish(ServerArgs(model_path="m", speculative_algorithm="EAGLE", speculative_num_draft_tokens=4),
            role="detokenizer")
    try:
        ctx.runner_view("draft", speculative_num_draft_tokens=99)
    except CapacityError as exc:
        print(json.dumps(str(exc)))
"""


def test_runner_view_capacity_error_reveals_no_unreadable_namespace() -> None:
    message = last_json(run_python(CAPACITY_PROBE, mode="enforce"))
    assert "max_speculative_num_draft_tokens (its value is in namespace 'spec', which role 'detokenizer' may not read)" in message
    assert "=4" not in message


def test_runner_view_capacity_error_is_recorded_as_a_read(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    message = last_json(run_python(CAPACITY_PROBE, mode="record", out=out))
    assert "max_speculative_num_draft_tokens=4" in message
    assert '"namespace": "spec"' in out.read_text()


def test_record_mode_with_an_unwritable_output_fails_before_installing(tmp_path: Path) -> None:
    out = tmp_path / "missing-folder" / "reads.jsonl"
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_context
        from configbags.generated.server_args import ServerArgs
        from configbags.runtime.errors import RoleError
        try:
            publish(ServerArgs(model_path="m"), role="worker")
        except RoleError as exc:
            print(json.dumps([str(exc), get_context().published]))
        """, mode="record", out=out)
    message, published = last_json(proc)
    assert published is False
    assert "missing-folder/reads.jsonl" in message
    assert "CONFIGBAGS_ROLE_NAMESPACES_OUT" in message
