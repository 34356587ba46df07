"""RuntimeContext: publish, overrides with provenance, derived values, one readback,
re-publish, scopes, runner views, thread safety, config hash, and the seed scenarios."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from configbags.generated.accessors import (
    get_context,
    get_model,
    get_parallel,
    get_schedule,
    get_server_args,
    get_spec,
    runner_view,
)
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import (
    CapacityError,
    ConfigError,
    LeafValueError,
    NotPublishedError,
    OwnerError,
    PolicyError,
    RoleError,
    UnknownLeafError,
)
from configbags.runtime.testing import published, scoped_override

SPEC = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4}


@pytest.fixture
def ctx(config_scope: Context[Any], record: ServerArgs) -> Context[Any]:
    return config_scope.publish(record, role="test")


def test_accessors_before_publish_name_themselves() -> None:
    with get_context().restoring():
        get_context()._install(None)
        with pytest.raises(NotPublishedError, match=r"get_parallel\(\) was called before publish"):
            get_parallel()
        with pytest.raises(NotPublishedError, match=r"get_server_args\(\)"):
            get_server_args()
        with pytest.raises(NotPublishedError):
            get_context().override("x", tp_size=2)


def test_publish_resolves_fallbacks_derived_and_pins(config_scope: Context[Any]) -> None:
    record = ServerArgs(model_path="m", tp_size=8, dp_size=2, enable_dp_attention=True, **SPEC)
    config_scope.publish(record, role="launcher")
    assert get_schedule().swa_full_tokens_ratio == 0.8  # fallback
    assert record.swa_full_tokens_ratio is None  # the record keeps the operator's input
    assert (get_parallel().attn_dp_size, get_parallel().attn_tp_size) == (2, 4)
    assert get_spec().max_speculative_num_draft_tokens == 4
    assert get_server_args() is record


def test_unknown_role_is_refused(config_scope: Context[Any], record: ServerArgs) -> None:
    with pytest.raises(RoleError, match="unknown role.*did you mean 'worker'"):
        config_scope.publish(record, role="wroker")


@pytest.mark.parametrize(
    ("leaves", "error", "message"),
    [
        ({"tp_sise": 2}, UnknownLeafError, "did you mean 'tp_size'"),
        ({"attn_tp_size": 2}, PolicyError, "derived from tp_size, attn_dp_size, attn_cp_size"),
        ({"max_running_requests": "many"}, LeafValueError, "schedule.max_running_requests \\(policy load_time, owner worker\\).*is not of type optional int"),
        ({"mem_fraction_static": 1.5}, LeafValueError, "above the maximum 1.0"),
        ({"schedule_policy": "fastest"}, LeafValueError, "not one of the choices"),
    ],
)
def test_override_validation(ctx: Context[Any], leaves: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ctx.override("test", **leaves)


def test_policies(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker")
    with pytest.raises(PolicyError, match=r"parallel.tp_size \(policy startup, owner launcher\).*--tp-size"):
        ctx.override("x", tp_size=2)
    ctx.override("loader", kv_cache_dtype="bf16")  # load_time, owner worker, before seal
    ctx.seal()
    with pytest.raises(PolicyError, match="sealed at the end of model load"):
        ctx.override("loader", kv_cache_dtype="fp8_e4m3")
    with pytest.raises(OwnerError, match="role 'worker'.*only the owner role 'scheduler'"):
        ctx.override("x", speculative_accept_threshold_acc=0.5)


def test_acting_as_checks_the_writer_role_not_the_process_role(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="launcher")
    with ctx.acting_as("operator"):
        # schema: speculative_accept_threshold_acc names `writers: [operator]`; dp_size does not
        (entry,) = ctx.override("http", speculative_accept_threshold_acc=0.5)
        with pytest.raises(OwnerError, match="written as role 'operator', and only the owner role 'scheduler' may write"):
            ctx.override("http", dp_size=2)
        with pytest.raises(PolicyError, match="startup leaves are fixed"):
            ctx.override("http", tp_size=2)
    assert entry.new == 0.5 and get_spec().speculative_accept_threshold_acc == 0.5
    # outside the block the process role (launcher, not a writer) counts again
    with pytest.raises(OwnerError, match="this process has role 'launcher'"):
        ctx.override("x", speculative_accept_threshold_acc=0.6)
    with pytest.raises(RoleError, match="unknown role"):
        ctx.acting_as("operater")


def test_republish_keeps_overrides_the_new_role_may_write_as_a_writer(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="operator")
    ctx.override("http", speculative_accept_threshold_acc=0.5)  # operator is a writer
    ctx.override("http", weight_version="v2")
    ctx.publish(record, role="operator")
    assert ctx.republish_report is not None and not ctx.republish_report.dropped
    assert get_spec().speculative_accept_threshold_acc == 0.5
    ctx.publish(record, role="launcher")  # neither owner nor writer: dropped, with the reason
    dropped = {d.entry.leaf: d.reason for d in ctx.republish_report.dropped}
    assert set(dropped) == {"speculative_accept_threshold_acc", "weight_version"}
    assert "now publishes as 'launcher'" in dropped["weight_version"]


def test_acting_as_holds_for_its_own_thread_only(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="launcher")
    errors: list[BaseException] = []

    def other() -> None:
        try:
            ctx.override("x", speculative_accept_threshold_acc=0.6)
        except OwnerError as exc:
            errors.append(exc)

    with ctx.acting_as("operator"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=10)
    assert len(errors) == 1 and "role 'launcher'" in str(errors[0])


def test_runtime_override_allowed_after_seal(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="scheduler")
    ctx.seal()
    ctx.override("set_internal_state", speculative_accept_threshold_acc=0.5)
    assert get_spec().speculative_accept_threshold_acc == 0.5


def test_all_or_nothing(ctx: Context[Any]) -> None:
    before = ctx.state
    with pytest.raises(LeafValueError):
        ctx.override("x", max_running_requests=64, mem_fraction_static=2.0)
    assert ctx.state is before
    assert get_schedule().max_running_requests is None


def test_log_epoch_and_record(ctx: Context[Any], record: ServerArgs) -> None:
    epoch = ctx.epoch
    entries = ctx.override("tuner", max_running_requests=64, chunked_prefill_size=512)
    assert {e.epoch for e in entries} == {epoch + 1}
    assert ctx.epoch == epoch + 1
    e = entries[0]
    assert (e.source, e.leaf, e.namespace, e.old, e.new) == ("tuner", "max_running_requests", "schedule", None, 64)
    assert e.wall_time > 0
    assert ctx.override("tuner", max_running_requests=64) == ()  # no change, no entry, same epoch
    assert ctx.epoch == epoch + 1
    assert get_server_args().max_running_requests is None
    assert record.max_running_requests is None


def test_derived_recomputed_on_input_override(config_scope: Context[Any]) -> None:
    ctx = config_scope.publish(ServerArgs(model_path="m", tp_size=8, dp_size=2, enable_dp_attention=True),
                               role="scheduler")
    ctx.override("elastic_ep", dp_size=4)
    assert (get_parallel().attn_dp_size, get_parallel().attn_tp_size) == (4, 2)
    assert ctx.server_info()["resolved"]["attn_tp_size"] == 2


def test_seed_a_draft_tokens_bound(config_scope: Context[Any]) -> None:
    ctx = config_scope.publish(ServerArgs(model_path="m", **SPEC), role="scheduler")
    ctx.override("adaptive_spec", speculative_num_draft_tokens=2)
    assert get_spec().speculative_num_draft_tokens == 2
    assert get_spec().max_speculative_num_draft_tokens == 4  # pinned: never shrinks
    with pytest.raises(CapacityError, match="above its capacity spec.max_speculative_num_draft_tokens=4"):
        ctx.override("adaptive_spec", speculative_num_draft_tokens=5)


def test_seed_b_kv_cache_dtype_at_load_time(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker")
    ctx.override("ModelRunner.configure_kv_cache_dtype", kv_cache_dtype="fp8_e4m3")
    assert get_model().kv_cache_dtype == "fp8_e4m3"
    assert get_server_args().kv_cache_dtype == "auto"
    info = ctx.server_info()
    assert info["record"]["kv_cache_dtype"] == "auto"
    assert info["resolved"]["kv_cache_dtype"] == "fp8_e4m3"


def test_seed_c_and_d_server_info_and_republish(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="scheduler")
    ctx.override("set_internal_state", speculative_accept_threshold_single=0.3, pp_max_micro_batch_size=8)
    info = ctx.server_info()
    assert [(o["leaf"], o["new"], o["source"]) for o in info["overrides"]] == [
        ("speculative_accept_threshold_single", 0.3, "set_internal_state"),
        ("pp_max_micro_batch_size", 8, "set_internal_state"),
    ]
    assert info["resolved"]["pp_max_micro_batch_size"] == 8
    assert info["record"]["pp_max_micro_batch_size"] is None
    # (d) re-publish a new record: the overrides are replayed, and a moot one is reported
    ctx.publish(record.replace(pp_max_micro_batch_size=8, tp_size=2), role="scheduler")
    assert get_spec().speculative_accept_threshold_single == 0.3
    assert get_parallel().tp_size == 2
    report = ctx.republish_report
    assert report is not None
    assert [e.leaf for e in report.replayed] == ["speculative_accept_threshold_single"]
    assert [e.leaf for e in report.subsumed] == ["pp_max_micro_batch_size"]
    assert report.dropped == ()


def test_republish_reports_override_that_no_longer_fits(config_scope: Context[Any]) -> None:
    ctx = config_scope.publish(ServerArgs(model_path="m", **SPEC), role="scheduler")
    ctx.override("adaptive_spec", speculative_num_draft_tokens=3)
    ctx.publish(ServerArgs(model_path="m", **{**SPEC, "speculative_num_draft_tokens": 2}), role="scheduler")
    report = ctx.republish_report
    assert report is not None
    assert not report.replayed
    assert "capacity" in report.dropped[0].reason
    assert get_spec().speculative_num_draft_tokens == 2


def test_seed_e_scope_restores_even_after_exception(ctx: Context[Any]) -> None:
    state = ctx.state
    with pytest.raises(RuntimeError), scoped_override(max_running_requests=7, tp_size=4):
        assert get_parallel().tp_size == 4
        assert get_schedule().max_running_requests == 7
        raise RuntimeError("boom")
    after = ctx.state  # the saved config again, at the next epoch (epochs never go back)
    assert (after.record, dict(after.values), list(after.log)) == (state.record, dict(state.values), list(state.log))
    assert after.epoch == state.epoch + 2
    assert get_parallel().tp_size == 1


def test_scopes_nest(ctx: Context[Any]) -> None:
    with scoped_override(tp_size=2):
        with scoped_override(tp_size=4, page_size=16):
            assert (get_parallel().tp_size, get_schedule().page_size) == (4, 16)
        assert (get_parallel().tp_size, get_schedule().page_size) == (2, 1)  # its schema fallback
    assert get_parallel().tp_size == 1


def test_published_scope_restores_unpublished_state(record: ServerArgs) -> None:
    ctx = get_context()
    with ctx.restoring():
        ctx._install(None)
        with published(record, role="worker"):
            assert get_parallel().tp_size == 1
        with pytest.raises(NotPublishedError):
            get_parallel()


def test_garbage_collection_cannot_unpublish(ctx: Context[Any]) -> None:
    state = ctx.state
    scope = scoped_override(tp_size=2)
    scope.__enter__()
    del scope
    gc.collect()
    assert get_parallel().tp_size == 2  # still in force: only an explicit exit restores
    ctx._install(state)


def test_runner_view_overlays_without_leaking(ctx: Context[Any]) -> None:
    draft = runner_view("draft", kv_cache_dtype="fp8_e4m3", tp_size=1)
    with scoped_override(tp_size=2):
        assert draft.model.kv_cache_dtype == "fp8_e4m3"
        assert get_model().kv_cache_dtype == "auto"  # target readers never see the draft's dtype
        ctx.override("loader", context_length=4096)
        assert draft.model.context_length == 4096  # follows process overrides it does not overlay
        assert draft.parallel.tp_size == 1
        assert get_parallel().tp_size == 2
        assert draft.parallel.attn_tp_size == 1  # derived values follow the overlay
    with pytest.raises(LeafValueError):
        runner_view("draft", kv_cache_dtype="fp3")


def _race(ctx: Context[Any], read_pair: Any, leaves: tuple[str, str], rounds: int) -> list[tuple[Any, Any]]:
    """Two readers compare a pair of values while a writer overrides both leaves together
    to the same value; returns every pair a reader saw disagree."""
    stop = threading.Event()
    torn: list[tuple[Any, Any]] = []

    def reader() -> None:
        while not stop.is_set():
            a, b = read_pair()
            if a != b:
                torn.append((a, b))

    with scoped_override(**dict.fromkeys(leaves, 1)):
        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for i in range(2, rounds):
            ctx.override("writer", **dict.fromkeys(leaves, i))
        stop.set()
        for t in threads:
            t.join()
    return torn


def test_readers_never_see_half_applied_override(ctx: Context[Any]) -> None:
    def read_pair() -> tuple[Any, Any]:
        bag = get_schedule()
        return bag.max_running_requests, bag.chunked_prefill_size

    assert not _race(ctx, read_pair, ("max_running_requests", "chunked_prefill_size"), 400)


def test_concurrent_overrides_are_serialized(ctx: Context[Any]) -> None:
    start = ctx.epoch

    def writer(k: int) -> None:
        for i in range(50):
            ctx.override(f"w{k}", max_running_requests=1000 * k + i + 1)

    with scoped_override():
        threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        epochs = [e.epoch for e in ctx.state.log]
        assert epochs == list(range(start + 1, start + 201))
        assert ctx.epoch == start + 200


def test_config_hash(ctx: Context[Any]) -> None:
    h = ctx.config_hash()
    with scoped_override(tp_size=2):
        assert ctx.config_hash() != h  # hashed leaf
    with scoped_override(port=31000, log_level="debug"):
        assert ctx.config_hash() == h  # hash: false leaves
    assert ctx.config_hash() == h


def test_explain_shows_every_layer(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker")
    ctx.override("kv_pool", kv_cache_dtype="bf16")
    info = ctx.explain("kv_cache_dtype")
    assert info["record"] == "auto"
    assert info["resolved"] == "bf16"
    assert info["accessor"] == "cfg.model.kv_cache_dtype"
    assert [o["source"] for o in info["overrides"]] == ["kv_pool"]


def test_every_error_is_a_config_error() -> None:
    """Every exception class the errors modules define, found there rather than listed."""
    import inspect

    from configbags.runtime import errors
    from configbags.server.kvcache import errors as kv_errors

    found = [
        cls for module in (errors, kv_errors) for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == module.__name__
    ]
    assert len(found) >= 8
    for cls in found:
        assert cls is ConfigError or issubclass(cls, ConfigError), cls


def test_override_to_none_of_a_fallback_leaf_in_force_is_no_change(ctx: Context[Any]) -> None:
    epoch = ctx.epoch
    with scoped_override(swa_full_tokens_ratio=None):
        assert ctx.epoch == epoch and get_schedule().swa_full_tokens_ratio == 0.8
    with scoped_override(swa_full_tokens_ratio=0.8):
        assert ctx.epoch == epoch and not ctx.state.log


def test_republish_keeps_the_seal(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker")
    ctx.seal()
    ctx.publish(record.replace(tp_size=2), role="worker")
    assert ctx.sealed
    with pytest.raises(PolicyError, match="sealed"):
        ctx.override("late", max_running_requests=32)


def test_republish_under_another_role_drops_overrides_it_does_not_own(config_scope: Context[Any],
                                                                      record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker")
    ctx.override("kv_pool", kv_cache_dtype="bf16")
    ctx.publish(record, role="detokenizer")
    report = ctx.republish_report
    assert report is not None and not report.replayed
    assert "owned by 'worker'" in report.dropped[0].reason
    assert get_model().kv_cache_dtype == "auto"


def test_snapshot_is_one_moment_across_namespaces(ctx: Context[Any]) -> None:
    def read_pair() -> tuple[Any, Any]:
        bags = ctx.snapshot()
        return bags["parallel"].pp_max_micro_batch_size, bags["schedule"].chunked_prefill_size

    assert not _race(ctx, read_pair, ("pp_max_micro_batch_size", "chunked_prefill_size"), 300)


def test_capacity_error_names_the_inputs_of_a_derived_capacity(config_scope: Context[Any]) -> None:
    ctx = config_scope.publish(ServerArgs(model_path="m", **SPEC), role="scheduler")
    with pytest.raises(CapacityError, match=r"derived at publish from its inputs; raise them at startup \(.*--speculative-num-draft-tokens"):
        ctx.override("adaptive_spec", speculative_num_draft_tokens=9)


def test_json_values_are_private_copies(ctx: Context[Any]) -> None:
    extra = {"a": 1}
    with scoped_override(hicache_storage_backend_extra_config=extra):
        h = ctx.config_hash()
        extra["a"] = 2
        assert get_context().bag("memory").hicache_storage_backend_extra_config == {"a": 1}
        assert ctx.state.log and list(ctx.state.log)[-1].new == {"a": 1}
        assert ctx.config_hash() == h


def test_republish_does_not_revive_an_undone_override(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="scheduler")
    ctx.override("tuner", speculative_accept_threshold_acc=0.5)
    ctx.override("tuner", speculative_accept_threshold_acc=1.0)  # back to the record's value
    ctx.publish(record, role="scheduler")
    assert get_spec().speculative_accept_threshold_acc == 1.0
    report = ctx.republish_report
    assert report is not None and [e.new for e in report.replayed] == [0.5, 1.0]


def test_republish_keeps_the_stamped_ranks(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="worker", ranks={"world_rank": 0, "tp_rank": 0})
    ctx.publish(record.replace(max_running_requests=8), role="worker")
    assert get_parallel().tp_rank == 0


def test_bag_and_snapshot(ctx: Context[Any]) -> None:
    with pytest.raises(UnknownLeafError, match=r"bag\('exec.kernal'\): no such namespace \(did you mean 'exec.kernel'\?\)"):
        ctx.bag("exec.kernal")
    snap = ctx.snapshot()
    assert snap["exec.kernel"] is get_context().bag("exec.kernel")
    with pytest.raises(TypeError):
        snap["memory"] = None  # type: ignore[index]


def test_json_values_are_frozen_for_readers(config_scope: Context[Any]) -> None:
    record = ServerArgs.from_cli(["--model-path", "m", "--hicache-storage-backend-extra-config", '{"a": [1]}'])
    ctx = config_scope.publish(record, role="test")
    h = ctx.config_hash()
    value = get_context().bag("memory").hicache_storage_backend_extra_config
    with pytest.raises(TypeError):
        value["a"] = 999
    assert ctx.server_info()["record"]["hicache_storage_backend_extra_config"] == {"a": [1]}
    assert ctx.config_hash() == h
    with pytest.raises(LeafValueError, match="not a finite number"):
        ctx.override("x", json_model_override_args={"a": float("nan")})
