"""Scopes and threads: a leaf scope's exit sets back only what its own thread changed and
keeps what other threads committed meanwhile (or refuses, naming it); the epoch never goes
back. And `acting_as` a role that writes every leaf only inside a test scope."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hostile.strategies import PROFILE
from hypothesis import given
from hypothesis import strategies as st

from configbags.generated.accessors import get_context, get_schedule, get_spec
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import OwnerError, RoleError, ScopeError
from configbags.runtime.testing import published


@pytest.fixture
def ctx(config_scope: Context[Any], record: ServerArgs) -> Context[Any]:
    return config_scope.publish(record, role="test")


def _in_thread(fn: Any) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and not errors, errors


def test_another_threads_override_survives_a_scope_exit_and_the_epoch_goes_on(ctx: Context[Any]) -> None:
    start = ctx.epoch
    with ctx.scoped("mine", max_running_requests=7):
        _in_thread(lambda: ctx.override("other", chunked_prefill_size=1024))
        other_epoch = ctx.epoch
    assert get_schedule().chunked_prefill_size == 1024  # the other thread's change is kept
    assert get_schedule().max_running_requests == ServerArgs(model_path="m").max_running_requests
    assert ctx.epoch > other_epoch > start
    history = [(e.source, e.leaf) for e in ctx.state.log]
    assert ("other", "chunked_prefill_size") in history and ("mine (restored)", "max_running_requests") in history


def test_a_leaf_both_threads_changed_keeps_the_other_threads_value_with_a_warning(
        ctx: Context[Any], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "configbags"), ctx.scoped("mine", chunked_prefill_size=512):
        _in_thread(lambda: ctx.override("other", chunked_prefill_size=2048))
        ctx.override("mine-again", chunked_prefill_size=256)  # this thread wrote it last
    assert get_schedule().chunked_prefill_size == 2048
    assert "chunked_prefill_size was changed by another thread" in caplog.text
    assert "from 'other'" in caplog.text


def test_a_scope_whose_thread_republished_refuses_naming_the_other_change(ctx: Context[Any], record: ServerArgs) -> None:
    refused = pytest.raises(ScopeError, match=r"chunked_prefill_size from 'other'.*nothing was restored")
    with refused, ctx.scoped("mine", max_running_requests=7):
        ctx.publish(record.replace(tp_size=2), role="test")
        _in_thread(lambda: ctx.override("other", chunked_prefill_size=1024))
    assert get_schedule().chunked_prefill_size == 1024  # nothing discarded


def test_one_thread_alone_gets_its_entry_state_back(ctx: Context[Any]) -> None:
    state = ctx.state
    with ctx.scoped("mine", max_running_requests=7):
        ctx.override("same-thread", chunked_prefill_size=1024)
    after = ctx.state
    assert (dict(after.values), list(after.log)) == (dict(state.values), list(state.log))
    assert after.epoch > state.epoch + 1  # epochs count on: 2 changes, then the restore


def test_concurrent_overriders_keep_every_change_and_epochs_only_grow(ctx: Context[Any]) -> None:
    """Two writer threads override their own leaf, once inside each scope this thread opens
    on a third leaf (a barrier puts the commits inside the scope), while a watcher samples
    the epoch. Every writer's last value is in force at the end, the scope's leaf is back,
    and no sample ever saw the epoch go down."""
    writers = {"chunked_prefill_size": [1024 + i for i in range(40)],
               "speculative_accept_threshold_acc": [round(0.01 * i, 2) for i in range(1, 41)]}
    rounds = 40
    barrier = threading.Barrier(3, timeout=30)
    done = threading.Event()
    epochs: list[int] = []
    errors: list[BaseException] = []

    def write(leaf: str, values: list[Any]) -> None:
        try:
            for v in values:
                barrier.wait()  # the scope is open
                ctx.override(f"writer-{leaf}", **{leaf: v})
                barrier.wait()  # committed; the scope may close
        except BaseException as exc:
            errors.append(exc)

    def watch() -> None:
        while not done.is_set():
            epochs.append(ctx.epoch)

    threads = [threading.Thread(target=write, args=item) for item in writers.items()]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for t in threads:
        t.start()
    try:
        for i in range(rounds):
            with ctx.scoped("scope", max_running_requests=i + 1):
                barrier.wait()
                barrier.wait()
    finally:
        done.set()
        for t in (*threads, watcher):
            t.join(timeout=30)
    assert not errors, errors
    assert get_schedule().chunked_prefill_size == writers["chunked_prefill_size"][-1]
    assert get_spec().speculative_accept_threshold_acc == writers["speculative_accept_threshold_acc"][-1]
    assert get_schedule().max_running_requests == ServerArgs(model_path="m").max_running_requests
    assert len(epochs) > 1 and epochs == sorted(epochs), "the epoch went back"
    writes = [e for e in ctx.state.log if e.source.startswith("writer-")]
    assert len(writes) == 2 * rounds  # not one of them discarded


# -- acting_as ------------------------------------------------------------------------------

def test_acting_as_test_is_refused_outside_a_test_scope(record: ServerArgs) -> None:
    ctx = get_context()
    with ctx.restoring():  # a production scope (explain and plan use it), not a test scope
        ctx.publish(record, role="scheduler")
        with pytest.raises(RoleError, match=r"acting_as\('test'\).*for tests only"):
            ctx.acting_as("test")
        with pytest.raises(RoleError, match="unknown role"):
            ctx.acting_as("root")
        with ctx.acting_as("operator"), pytest.raises(OwnerError):
            ctx.override("x", dp_size=2)  # operator is no writer of it
        block = None
        with ctx.scoped("t"):
            block = ctx.acting_as("test")  # admitted here...
        with pytest.raises(RoleError, match="for tests only"):
            block.__enter__()  # ...but not entered after the test scope closed


def test_acting_as_test_works_inside_a_test_scope(ctx: Context[Any], record: ServerArgs) -> None:
    ctx.publish(record, role="launcher")
    with ctx.acting_as("test"):
        ctx.override("t", chunked_prefill_size=1024)
    assert get_schedule().chunked_prefill_size == 1024


# -- scopes out of order, asyncio tasks, an empty scope, another thread ----------------------

ACC, SINGLE = "speculative_accept_threshold_acc", "speculative_accept_threshold_single"


def _acc_single(ctx: Context[Any]) -> tuple[float, float]:
    return ctx.state.values[ACC], ctx.state.values[SINGLE]


def test_a_scope_closed_before_one_entered_after_it_is_refused_naming_it(ctx: Context[Any]) -> None:
    start = _acc_single(ctx)
    a = ctx.scoped("a", **{ACC: 0.1})
    b = ctx.scoped("b", **{SINGLE: 0.2})
    a.__enter__()
    b.__enter__()
    with pytest.raises(ScopeError, match=r"scope 'a' closed while 'b', entered after it .* nothing was restored"):
        a.__exit__(None, None, None)
    assert _acc_single(ctx) == (0.1, 0.2)  # b's change was not undone under it
    b.__exit__(None, None, None)
    assert ctx.state.values[SINGLE] == start[1]


def test_interleaved_asyncio_tasks_each_restore_their_own_scope(ctx: Context[Any]) -> None:
    import asyncio

    start = _acc_single(ctx)

    async def task(name: str, leaf: str, value: float, before: float, inside: float) -> None:
        await asyncio.sleep(before)
        with ctx.scoped(name, **{leaf: value}):
            await asyncio.sleep(inside)

    async def both() -> None:  # t1 closes while t2's scope is open, t2 closes last
        await asyncio.gather(task("t1", ACC, 0.3, 0, 0.02), task("t2", SINGLE, 0.4, 0.01, 0.03))

    asyncio.run(both())
    assert _acc_single(ctx) == start


@contextlib.contextmanager
def _scope_open_in_another_thread(ctx: Context[Any]) -> Iterator[None]:
    """`ctx.scoped("A")` (no leaves) held open by another thread for the block."""
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with ctx.scoped("A"):
            entered.set()
            assert leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert entered.wait(10)
        yield
    finally:
        leave.set()
        thread.join(timeout=10)


@pytest.mark.parametrize("first_out", ["inner", "outer"])
def test_two_threads_scoping_one_leaf_leave_nothing_behind_in_either_exit_order(
        ctx: Context[Any], first_out: str) -> None:
    start = ctx.state.values[ACC]
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))

    def outer() -> None:
        with ctx.scoped("A", **{ACC: 0.3}):
            a_in.set()
            assert b_in.wait(10)
            if first_out == "inner":
                assert b_out.wait(10)
        a_out.set()

    def inner() -> None:
        assert a_in.wait(10)
        with ctx.scoped("B", **{ACC: 0.4}):
            b_in.set()
            if first_out == "outer":
                assert a_out.wait(10)
        b_out.set()

    threads = [threading.Thread(target=outer), threading.Thread(target=inner)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert ctx.state.values[ACC] == start  # neither closed scope's value survives


def test_a_scope_refused_for_closing_out_of_order_closes_later_and_restores(ctx: Context[Any]) -> None:
    start = ctx.state.values[ACC]
    a, b = ctx.scoped("a", **{ACC: 0.5}), ctx.scoped("b", **{ACC: 0.6})
    a.__enter__()
    b.__enter__()
    with pytest.raises(ScopeError, match="'a' closes, restoring, as soon as the inner scopes are closed"):
        a.__exit__(None, None, None)
    assert ctx.state.values[ACC] == 0.6  # nothing restored yet
    b.__exit__(None, None, None)  # and with it `a`, whose exit came first (a `with` never calls it again)
    assert ctx.state.values[ACC] == start
    with pytest.raises(ScopeError, match="is not open"):
        a.__exit__(None, None, None)


def test_acting_as_test_is_refused_in_a_task_while_another_task_holds_the_scope(record: ServerArgs) -> None:
    import asyncio

    ctx = get_context()

    async def both() -> None:
        entered, done = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            with ctx.scoped("h", **{ACC: 0.13}):
                entered.set()
                await done.wait()

        holder = asyncio.create_task(hold())
        await entered.wait()
        try:
            with pytest.raises(RoleError, match="open a test scope in this thread"):
                ctx.acting_as("test")
        finally:
            done.set()
            await holder

    async def inside() -> None:  # a scope entered outside the loop admits the loop's tasks
        with ctx.acting_as("test"):
            ctx.override("t", weight_version="fine")

    with ctx.restoring():
        ctx.publish(record, role="scheduler")
        asyncio.run(both())
        with ctx.scoped("outer"):
            asyncio.run(inside())


def test_a_scope_without_leaves_keeps_another_threads_override(ctx: Context[Any]) -> None:
    with _scope_open_in_another_thread(ctx):
        ctx.override("main-thread", **{ACC: 0.42})
    assert ctx.state.values[ACC] == 0.42


def test_acting_as_test_is_refused_in_a_thread_without_a_test_scope(record: ServerArgs) -> None:
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(record, role="scheduler")
        with _scope_open_in_another_thread(ctx), pytest.raises(RoleError, match="open a test scope in this thread"):
            ctx.acting_as("test")


# -- the property (joins `make fuzz`) -----------------------------------------------------------

TUNABLE = {"chunked_prefill_size": st.integers(1, 1 << 16), "max_running_requests": st.integers(1, 512),
           "speculative_accept_threshold_acc": st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9])}


@PROFILE
@given(data=st.data(), scope_leaves=st.sets(st.sampled_from(sorted(TUNABLE)), min_size=1, max_size=2),
       steps=st.lists(st.tuples(st.booleans(), st.sampled_from(sorted(TUNABLE))), max_size=8))
def test_a_scope_exit_sets_back_only_its_threads_leaves_and_the_epoch_never_goes_back(
        record: ServerArgs, data: st.DataObject, scope_leaves: set[str], steps: list[tuple[bool, str]]) -> None:
    """A leaf scope, then overrides from its own thread (mine) and from another (theirs) in
    any order, then the exit: each leaf another thread set keeps that thread's last value,
    each leaf only this thread set is back at its entry value, the rest is untouched, and
    no step ever lowered the epoch."""
    with published(record, role="test") as ctx:  # one example's log is not the next one's
        _scope_property(ctx, data, scope_leaves, steps)


def _scope_property(ctx: Context[Any], data: st.DataObject, scope_leaves: set[str],
                    steps: list[tuple[bool, str]]) -> None:
    entry = dict(ctx.state.values)
    epochs = [ctx.epoch]
    theirs: dict[str, Any] = {}
    with ctx.scoped("prop", **{n: data.draw(TUNABLE[n], label=n) for n in sorted(scope_leaves)}):
        epochs.append(ctx.epoch)
        for other, leaf in steps:
            value = data.draw(TUNABLE[leaf], label=leaf)
            if other:
                if ctx.state.values[leaf] != value:  # an override to the value in force commits nothing
                    theirs[leaf] = value
                _in_thread(lambda leaf=leaf, value=value: ctx.override("theirs", **{leaf: value}))
            else:
                ctx.override("mine", **{leaf: value})
            epochs.append(ctx.epoch)
    epochs.append(ctx.epoch)
    assert epochs == sorted(epochs)
    values = ctx.state.values
    for leaf in TUNABLE:
        assert values[leaf] == theirs.get(leaf, entry[leaf]), leaf


def test_a_with_block_left_while_a_generator_holds_an_inner_scope_restores_when_the_generator_closes(
        ctx: Context[Any]) -> None:
    """Round sixteen: the `with` statement's exit was refused (an inner scope, entered by a
    suspended generator, was open), and since a `with` never calls its exit again the
    outer override stayed in force for good. It now closes once the inner scope has."""
    start = ctx.state.values[ACC]

    def held() -> Iterator[int]:
        with ctx.scoped("inner", **{ACC: 0.2}):
            yield 1

    generator = held()
    with pytest.raises(ScopeError, match="'outer' closes, restoring"), ctx.scoped("outer", **{ACC: 0.5}):
        next(generator)
    assert ctx.state.values[ACC] == 0.2
    generator.close()  # the inner scope exits, then the outer one
    assert ctx.state.values[ACC] == start


def test_publishing_as_the_role_that_writes_every_leaf_needs_a_test_scope(record: ServerArgs) -> None:
    """Round sixteen: `publish(record, role="test")` outside any test scope was taken, and
    the process then wrote every leaf, other owners' and load_time ones included. It is
    admitted as `acting_as("test")` is: only inside a test scope of this thread."""
    ctx = get_context()
    with ctx.restoring():  # a block scope, but no test scope
        with pytest.raises(RoleError, match=r"publish\('test'\): role 'test' may write every leaf"):
            ctx.publish(record, role="test")
        ctx.publish(record, role="launcher")  # the process's own role: fine
    with ctx.restoring(test=True):
        ctx.publish(record, role="test")


def test_acting_as_test_left_open_ends_with_its_test_scope(record: ServerArgs) -> None:
    """Round seventeen: `acting_as("test")` entered inside a test scope and never exited
    kept writing every leaf after the scope closed, outside any test scope. Each write
    now checks the scope is still open."""
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(record, role="launcher")
        with ctx.restoring(test=True):
            block = ctx.acting_as("test")
            block.__enter__()  # never exited
            ctx.override("t", page_size=32)  # inside the test scope: admitted
        with pytest.raises(RoleError, match=r"acting_as\('test'\).*for tests only"):
            ctx.override("t", page_size=64)
        block.__exit__(None, None, None)
