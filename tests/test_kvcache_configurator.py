"""The configurator through the published context: it reads the accessors, writes its
load-time decisions back as tagged overrides, reconfigures consistently, takes one
draft-token bound, and allocates exactly the planned bytes."""

from __future__ import annotations

import inspect
import itertools
import re
from pathlib import Path

import attrs
import pytest

from configbags.generated.accessors import get_model, get_parallel, get_schedule, runner_view
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import CapacityError, PolicyError
from configbags.runtime.resolve import Facts, GpuFacts, ModelFacts
from configbags.runtime.testing import published
from configbags.server.kvcache.configurator import KvCacheConfigurator, read_settings
from configbags.server.kvcache.model_shape import load_model_shape
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings
from configbags.server.kvcache.seam import SEAM, SeamError, config_of, seam_table
from configbags.server.kvcache.settings import WRITTEN_LEAVES

MODELS = Path(__file__).resolve().parent.parent / "models"
GiB = 1073741824


def configurator(model: str, pre: int, weights: int | None = None) -> KvCacheConfigurator:
    return KvCacheConfigurator(load_model_shape(MODELS / f"{model}.json"), DeviceMemory(pre, weights))


def args(**leaves: object) -> ServerArgs:
    return ServerArgs(model_path="m", **leaves)


def on_device(record: ServerArgs, memory: int = 80 * GiB, *, role: str = "worker",
              model: str | None = None) -> published:
    """Publish as the engine does on a device of `memory` bytes (and, given, the model's
    architectures): the rules derive what the hardware and model decide (the default
    mem_fraction_static, Gemma-2's full SWA pool) from those facts; the planner reads it."""
    architectures = load_model_shape(MODELS / f"{model}.json").architectures if model else ()
    return published(record, role=role, facts=Facts(GpuFacts(memory_bytes=memory), ModelFacts(architectures)))


def test_write_backs_are_tagged_load_time_overrides() -> None:
    with on_device(args()) as ctx:
        plan = configurator("llama-3.1-8b", 80 * GiB).configure()
        # Same numbers as the hand-derived llama8b-tp1-defaults case.
        assert plan.max_total_num_tokens == 425348
        info = ctx.server_info()
        written = {(o["source"], o["leaf"], o["new"]) for o in info["overrides"]}
        assert written == {
            ("kv_pool.resolve_dtype", "dtype", "bfloat16"),
            ("kv_pool.resolve_kv_cache_dtype", "kv_cache_dtype", "bf16"),
            ("kv_pool.resolve_context_length", "context_length", 131072),
            ("kv_pool.default_max_running_requests", "max_running_requests", 2048),
        }
        # What the rules decided is theirs, not a write-back: the planner read it as given.
        assert info["layers"]["mem_fraction_static"]["rule"] == "mem_fraction_static_from_gpu_memory"
        assert info["resolved"]["mem_fraction_static"] == plan.mem_fraction_static == 0.836
        # The raw record keeps the operator's input; readers see the resolved value.
        assert info["record"]["kv_cache_dtype"] == "auto"
        assert info["record"]["max_running_requests"] is None
        assert info["resolved"]["kv_cache_dtype"] == "bf16"
        assert get_model().kv_cache_dtype == "bf16"
        assert get_schedule().max_running_requests == 2048


def test_operator_values_are_not_overwritten() -> None:
    given = args(kv_cache_dtype="fp8_e4m3", page_size=16, mem_fraction_static=0.85, context_length=8192)
    with published(given, role="worker") as ctx:
        configurator("llama-3.1-8b", 80 * GiB).configure()
        leaves = {o["leaf"] for o in ctx.server_info()["overrides"]}
        assert leaves == {"dtype", "max_running_requests"}


def test_mamba_cache_size_written_from_the_state_budget() -> None:
    # Hand-derived in test_kvcache_plan (qwen3next-tp4-mamba-budget): 799 slots.
    with published(args(tp_size=4, mem_fraction_static=0.88), role="worker") as ctx:
        plan = configurator("qwen3-next-80b-a3b", 80 * GiB, 40 * GiB).configure()
        assert plan.mamba_slots == 799
        assert ctx.explain("max_mamba_cache_size")["overrides"][0]["source"] == "mamba_pool.memory_budget"
        assert get_schedule().max_mamba_cache_size == 799
        assert ctx.server_info()["record"]["max_mamba_cache_size"] is None


def test_reconfigure_after_seal_writes_nothing_and_agrees() -> None:
    with published(args(tp_size=4, mem_fraction_static=0.88), role="worker") as ctx:
        c = configurator("qwen3-next-80b-a3b", 80 * GiB, 40 * GiB)
        first = c.configure()
        ctx.seal()
        epoch = ctx.epoch
        again = c.configure()  # reads its own write-backs as input
        assert ctx.epoch == epoch
        assert (again.max_total_num_tokens, again.mamba_slots, again.max_running_requests) == (
            first.max_total_num_tokens,
            first.mamba_slots,
            first.max_running_requests,
        )
        assert again.pools == first.pools
        assert again.decisions == ()


def test_a_new_decision_after_seal_is_refused() -> None:
    with on_device(args()) as ctx:
        ctx.seal()
        with pytest.raises(PolicyError, match="sealed"):
            configurator("llama-3.1-8b", 80 * GiB).configure()


def test_write_backs_need_the_worker_role() -> None:
    # Checked for every decision before the first is written: nothing is half written back.
    with on_device(args(), role="scheduler") as ctx:
        with pytest.raises(SeamError) as refused:
            configurator("llama-3.1-8b", 80 * GiB).configure()
        assert ctx.server_info()["overrides"] == []
    message = str(refused.value)
    for leaf in ("dtype", "kv_cache_dtype", "context_length", "max_running_requests"):
        assert f"{leaf} (owner worker, override load_time) is written back at load time by role scheduler" in message
    assert "page_size" not in message and "mem_fraction_static" not in message  # the rules decide them
    assert "or run the configurator in role worker" in message


SPEC = {
    "speculative_algorithm": "EAGLE",
    "speculative_draft_model_path": "draft",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 4,
    "speculative_num_draft_tokens": 8,
    "tp_size": 2,
    "page_size": 16,
    "kv_cache_dtype": "fp8_e4m3",
    "mem_fraction_static": 0.85,
}


def _consistent(plan_obj: KvPlan) -> None:
    d = plan_obj.spec.max_draft_tokens
    # The row headroom and every speculative buffer take the same bound D.
    assert plan_obj.spec.extra_context_len >= 4 + d
    assert plan_obj.req_to_token_shape[1] == plan_obj.context_length + plan_obj.spec.extra_context_len
    for buf in plan_obj.spec_buffers:
        if buf.name != "out_cache_loc":
            assert buf.shape[1] == d
        else:
            assert buf.shape == (plan_obj.max_running_requests * plan_obj.spec.alloc_reserve_per_decode,)


def test_runtime_draft_token_override_within_capacity_keeps_sizes() -> None:
    with published(args(**SPEC), role="worker") as ctx:
        c = configurator("llama-3.1-8b", 80 * GiB, 8030261248)
        before = c.configure()
        ctx.seal()
        assert before.spec.max_draft_tokens == 8
        _consistent(before)
        # Adaptive speculation (the scheduler's runtime leaf) lowers the active count.
        with ctx.scoped("adaptive_spec", speculative_num_draft_tokens=5):
            after = c.configure()
            assert read_settings().speculative_num_draft_tokens == 5
        _consistent(after)
        assert after.spec.max_draft_tokens == 8  # pinned at publish
        assert after.spec == attrs.evolve(before.spec, active_draft_tokens=5)
        assert (after.req_to_token_shape, after.spec_buffers, after.pools) == (
            before.req_to_token_shape,
            before.spec_buffers,
            before.pools,
        )
        # Hand-derived (test_kvcache_plan, llama8b-tp2-page16-fp8-eagle): extra 271, D 8.
        assert after.req_to_token_shape == (4097, 131072 + 271)


def test_draft_token_override_above_capacity_is_refused() -> None:
    # The scheduler's adaptive change, modelled in-process: scopes skip the owner check but
    # not the capacity check.
    with (
        published(args(**SPEC), role="worker") as ctx,
        pytest.raises(CapacityError, match="max_speculative_num_draft_tokens=8"),
        ctx.scoped("adaptive_spec", speculative_num_draft_tokens=9),
    ):
        pass
    with published(args(**SPEC), role="test") as ctx:  # a role that may write any leaf
        with pytest.raises(CapacityError):
            ctx.override("adaptive_spec", speculative_num_draft_tokens=9)
        assert ctx.override("adaptive_spec", speculative_num_draft_tokens=6)


def test_runner_view_plans_without_touching_the_process_bags() -> None:
    with published(args(page_size=16, mem_fraction_static=0.88), role="worker"):
        c = configurator("llama-3.1-8b", 80 * GiB)
        draft = runner_view("draft", kv_cache_dtype="fp8_e4m3")
        draft_plan = c.plan(draft)
        target_plan = c.plan()
        assert draft_plan.kv_cache_dtype == "fp8_e4m3"
        assert target_plan.kv_cache_dtype == "bf16"
        assert get_model().kv_cache_dtype == "auto"  # plan() has no side effects
        # Half the bytes per token: twice the tokens (up to page rounding).
        assert draft_plan.cell.bytes_per_token * 2 == target_plan.cell.bytes_per_token


@pytest.mark.parametrize(
    ("model", "leaves", "pre", "weights"),
    [
        ("llama-3.1-8b", {"tp_size": 8, "speculative_algorithm": "EAGLE", "speculative_num_steps": 2,
                          "speculative_draft_model_path": "draft"}, 80 * GiB, None),
        ("gemma-2-9b", {"tp_size": 2}, 40 * GiB, None),
        ("gpt-oss-20b", {"tp_size": 8, "page_size": 16}, 80 * GiB, None),
        ("deepseek-v3", {"tp_size": 8, "kv_cache_dtype": "fp8_e4m3"}, 140 * GiB, 84 * GiB),
        ("qwen3-next-80b-a3b", {"tp_size": 4}, 80 * GiB, 40 * GiB),
        ("nemotron-h-56b", {"tp_size": 8}, 80 * GiB, 14 * GiB),
    ],
)
def test_meta_allocation_bytes_equal_the_plan(model: str, leaves: dict[str, object], pre: int, weights: int | None) -> None:
    with on_device(args(**leaves), pre, model=model):
        c = configurator(model, pre, weights)
        plan = c.configure()
        pools = c.allocate(plan, "meta")
        assert pools.pool_bytes == plan.pool_bytes
        assert pools.spec_buffer_bytes == plan.budget.spec_buffers
        assert tuple(pools.req_to_token.shape) == plan.req_to_token_shape
        assert pools.req_to_token.numel() * 4 == plan.budget.req_to_token
        for spec in plan.pools:
            group = pools.pools[spec.name]
            assert len(group) == spec.count
            assert all(tuple(t.shape) == spec.shape for t in group)
        # The token slots fill the KV budget; the padding page comes from the slack.
        assert plan.budget.kv_bytes + plan.budget.kv_padding + plan.budget.mamba_state <= plan.pool_bytes
        assert plan.budget.kv_utilization >= 0.999


def test_cpu_allocation_of_a_small_plan() -> None:
    import torch

    given = args(mem_fraction_static=0.88, context_length=4096)
    with published(given, role="worker"):
        c = configurator("qwen2.5-0.5b", 2 * GiB)
        plan = c.configure()
        pools = c.allocate(plan, "cpu")
        assert pools.pool_bytes == plan.pool_bytes
        assert pools.pools["k"][0].device == torch.device("cpu")
        assert pools.pools["k"][0].dtype == torch.bfloat16
        # One backing buffer: views do not overlap, each padded to the alignment at most.
        views = [t for group in pools.pools.values() for t in group]
        views += [pools.req_to_token, *pools.spec_buffers.values()]
        spans = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in views)
        assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))
        total = sum(e - b for b, e in spans)
        assert total <= pools.backing.numel() < total + 512 * len(views)
        pools.pools["k"][0].fill_(1.0)
        pools.pools["k"][1].fill_(2.0)
        assert pools.pools["k"][0].max().item() == 1.0


def test_fp8_pools_are_stored_as_uint8() -> None:
    import torch

    with on_device(args(kv_cache_dtype="fp8_e4m3", tp_size=8)):
        c = configurator("llama-3.1-8b", 80 * GiB)
        pools = c.allocate(c.configure(), "meta")
        assert pools.pools["k"][0].dtype == torch.uint8


def test_meta_allocation_of_70b_at_tp8_gives_a_pool_per_layer() -> None:
    # How fast this is (the bar is well under a second) is bench/bench_plan.py's to measure.
    with on_device(args(tp_size=8)):
        c = configurator("llama-3.1-70b", 80 * GiB)
        pools = c.allocate(c.configure(), "meta")
        assert len(pools.pools["k"]) == len(pools.pools["v"]) == 80
        assert all(pool.is_meta for pool in pools.pools["k"])


def test_fallback_leaves_reach_the_planner_resolved() -> None:
    # The context applies the schema's fallbacks (SGLang's 0.8 and 0.9, in
    # schema/namespaces/schedule.yaml); the planner keeps no copy of them.
    with published(args(), role="worker") as ctx:
        s = read_settings()
        assert (s.swa_full_tokens_ratio, s.mamba_full_memory_ratio) == (0.8, 0.9)
        record = ctx.server_info()["record"]
        assert (record["swa_full_tokens_ratio"], record["mamba_full_memory_ratio"]) == (None, None)
    with published(args(swa_full_tokens_ratio=0.5), role="worker"):
        assert read_settings().swa_full_tokens_ratio == 0.5


def test_float16_model_resolves_kv_cache_dtype_float16() -> None:
    fp16 = attrs.evolve(load_model_shape(MODELS / "llama-3.1-8b.json"), torch_dtype="float16")
    with on_device(args()) as ctx:
        plan = KvCacheConfigurator(fp16, DeviceMemory(80 * GiB)).configure()
        assert plan.kv_dtype == "float16"
        assert get_model().kv_cache_dtype == "float16"  # written back: a choice of the leaf
        assert get_model().dtype == "float16"
        assert ctx.server_info()["record"]["kv_cache_dtype"] == "auto"


# -- the typed seam ------------------------------------------------------------------------


@pytest.mark.slow  # runs mypy in a subprocess (13 s)
def test_no_config_read_is_any(tmp_path: Path) -> None:
    """mypy with --disallow-any-expr over the configurator: not one expression in
    `settings_from`, where every config read is, has a type involving Any."""
    from mypy import api as mypy_api

    from configbags.server.kvcache import configurator as module

    out, _, _ = mypy_api.run(["--strict", "--disallow-any-expr", "--no-incremental", "--follow-imports", "silent",
                              "--cache-dir", str(tmp_path / "cache"), "-m", module.__name__])
    lines, first = inspect.getsourcelines(module.settings_from)
    inside = [line for line in out.splitlines()
              if (m := re.match(r".*configurator\.py:(\d+): error", line)) and first <= int(m.group(1)) < first + len(lines)]
    assert "configurator.py" in out  # the check ran: the module's other code does handle Any contexts
    assert inside == []


def test_the_bundled_schema_is_read_as_its_own_bags() -> None:
    with published(args(tp_size=2), role="worker") as ctx:
        config = config_of(ctx)
        assert config.parallel is get_parallel() and config.exec.kernel is ctx.bag("exec").kernel
        draft = runner_view("draft", kv_cache_dtype="fp8_e4m3")
        assert config_of(draft).model is draft.model and config_of(draft).model.kv_cache_dtype == "fp8_e4m3"


def test_the_seam_defaults_are_plan_settings_defaults() -> None:
    # One default per optional leaf: a caller building PlanSettings by hand gets what a schema
    # without the leaf reads (attn_tp_size's None is "tp_size // attn_dp_size", 1 by default).
    fields = attrs.fields_dict(PlanSettings)
    optional = {leaf.name: leaf.default.value for leaf in SEAM if leaf.default is not None}
    assert optional.pop("attn_tp_size") is None and fields["attn_tp_size"].default == 1
    assert {name: fields[name].default for name in optional} == optional
    assert {leaf.name for leaf in SEAM} == set(fields)  # every setting is read through the seam


def test_every_write_back_is_a_written_leaf_of_the_seam() -> None:
    assert tuple(PlanSettings(swa_full_tokens_ratio=0.8, mamba_full_memory_ratio=0.9).written()) == WRITTEN_LEAVES
    assert set(WRITTEN_LEAVES) <= {leaf.name for leaf in SEAM}


def test_docs_show_the_seam() -> None:
    plan_md = (Path(__file__).resolve().parent.parent / "docs" / "PLAN.md").read_text()
    assert seam_table() in plan_md


ENFORCED = """
import json
from configbags.generated.accessors import publish
from configbags.generated.server_args import ServerArgs
from configbags.server.kvcache.configurator import read_settings
publish(ServerArgs(model_path="m"), role="detokenizer")
try:
    read_settings()
except Exception as exc:
    print(json.dumps([type(exc).__name__, str(exc)]))
"""


def test_reads_through_the_seam_are_role_scoped() -> None:
    from test_roles_modes import last_json, run_python

    kind, message = last_json(run_python(ENFORCED, mode="enforce"))
    assert kind == "RoleError" and "role 'detokenizer' may not read namespace 'parallel'" in message
