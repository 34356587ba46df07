"""The plan against SGLang's own sizing, recomputed here independently: each expected
number comes from the SGLang formula named in the comment (written out below as small
reference functions in SGLang's float arithmetic), not from the plan's output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from configbags.generated.registry import LEAVES
from configbags.server.kvcache import planner
from configbags.server.kvcache.bundled import with_bundled_rules
from configbags.server.kvcache.defaults import (
    extra_groups_for_head_shards,
    mamba_slots_per_request,
)
from configbags.server.kvcache.gpus import gpu_preset
from configbags.server.kvcache.model_shape import ModelShape, load_model_shape
from configbags.server.kvcache.planner import (
    DeviceMemory,
    KvPlan,
    PlanSettings,
    concurrency,
)
from configbags.server.rules import mem_fraction_static, reserved_memory_bytes

MODELS = Path(__file__).resolve().parent.parent / "models"
GiB = 1 << 30
MiB = 1 << 20


def shape(name: str) -> ModelShape:
    return load_model_shape(MODELS / f"{name}.json")


def settings(**leaves: Any) -> PlanSettings:
    fallbacks = {n: LEAVES[n].fallback for n in ("swa_full_tokens_ratio", "mamba_full_memory_ratio")}
    if "tp_size" in leaves:
        leaves.setdefault("attn_tp_size", leaves["tp_size"])
    return PlanSettings(**{**fallbacks, **leaves})

def plan_kv(model: ModelShape, settings_: PlanSettings, memory: DeviceMemory, **kw: Any) -> KvPlan:
    """The planner on `settings_` as the bundled server resolves them: the leaves its rules
    and fallbacks decide (mem_fraction_static, page_size, disable_hybrid_swa_memory) come
    from schema/rules.yaml with this device's and model's facts, as at publish."""
    return planner.plan_kv(model, with_bundled_rules(settings_, model, memory), memory, **kw)



# --- SGLang's arithmetic, restated ------------------------------------------------------------


def sglang_rest_gb(pre: int, weights: int, mfs: float) -> float:
    """ModelRunner.profile_max_num_token: avail - total * (1 - mfs), in GB."""
    return (pre - weights) / GiB - pre / GiB * (1 - mfs)


def sglang_tokens(rest_gb: float, cell: int, page: int = 1) -> int:
    """int(rest * (1 << 30)) // cell_size, aligned down to the page."""
    return int(rest_gb * GiB) // cell // page * page


def mamba2_per_slot(layers: int, heads: int, head_dim: int, groups: int, state: int, kernel: int,
                    tp: int, conv_b: int = 2, ssm_b: int = 4) -> int:
    """Mamba2StateShape.create: groups replicated to the TP width when they do not divide it;
    conv (conv_dim / tp, kernel - 1), temporal (heads / tp, head_dim, state)."""
    g = groups + (0 if groups % tp == 0 else tp - groups)
    conv_dim = heads * head_dim + 2 * g * state
    return layers * ((conv_dim // tp) * (kernel - 1) * conv_b + (heads // tp) * head_dim * state * ssm_b)


# --- 1. Gemma-2 is sized at full length --------------------------------------------------------


def test_gemma2_has_no_separate_swa_pool_as_in_sglang() -> None:
    # ServerArgs._handle_model_specific_adjustments sets disable_hybrid_swa_memory for
    # Gemma2ForCausalLM, so all 42 layers are full: cell = 8 x (256 + 256) x 42 x 2 = 344064.
    # The rule gemma2_full_swa_memory decides it; the planner only reads the leaf.
    pre = 141 * GiB
    assert with_bundled_rules(settings(), shape("gemma-2-9b"), DeviceMemory(pre)).disable_hybrid_swa_memory
    assert not with_bundled_rules(settings(), shape("gpt-oss-20b"), DeviceMemory(pre)).disable_hybrid_swa_memory
    plan = plan_kv(shape("gemma-2-9b"), settings(mem_fraction_static=0.88, page_size=1), DeviceMemory(pre))
    expected = sglang_tokens(sglang_rest_gb(pre, plan.budget.weights, 0.88), 8 * 512 * 42 * 2)
    assert expected == 333503  # the figure SGLang reports
    assert plan.max_total_num_tokens == expected
    assert plan.swa_tokens is None
    assert {p.name for p in plan.pools} == {"k", "v"}


# --- 2. Radix cache off with a request cap: one slot per request ----------------------------


def test_mamba_slots_follow_the_request_cap_without_radix_cache() -> None:
    # KVCacheConfigurator._handle_max_mamba_cache: disable_radix_cache and max_running_requests
    # -> max_mamba_cache_size = max_running_requests // attn_dp; no ratio split.
    pre, mfs = 141 * GiB, 0.81
    s = settings(tp_size=8, disable_radix_cache=True, max_running_requests=64, mem_fraction_static=mfs)
    plan = plan_kv(shape("nemotron-h-56b"), s, DeviceMemory(pre))
    per_slot = mamba2_per_slot(54, 256, 64, 8, 256, 4, tp=8)
    rest_gb = sglang_rest_gb(pre, plan.budget.weights, mfs) - 64 * per_slot / GiB
    cell = 1 * 256 * 2 * 10  # 8 KV heads / tp 8, (128 + 128), bf16, 10 attention layers
    assert sglang_tokens(rest_gb, cell) == 19775414  # SGLang's figure
    assert plan.mamba_slots == 64 and plan.max_running_requests == 64
    # The plan pays one padding slot more (item 6 below, a stated difference).
    assert plan.max_total_num_tokens == int(rest_gb * GiB - per_slot) // cell


# --- 3. Mamba-2 groups are replicated across head shards ---------------------------------------


def test_mamba2_groups_are_replicated_to_the_tp_width() -> None:
    # mamba_utils.extra_groups_for_head_shards: 8 groups at tp 16 -> 8 more; conv_dim =
    # 256 x 64 + 2 x 16 x 256 = 24576, / 16 = 1536 channels per rank.
    assert extra_groups_for_head_shards(8, 16) == 8 and extra_groups_for_head_shards(8, 8) == 0
    plan = plan_kv(shape("nemotron-h-56b"), settings(tp_size=16, mem_fraction_static=0.88),
                   DeviceMemory(141 * GiB))
    conv = next(p for p in plan.pools if p.name == "mamba_conv")
    assert conv.shape[2:] == (1536, 3)


# --- 4. Speculative decoding on a mamba hybrid reserves intermediate states --------------------


def test_speculative_mamba_hybrid_reserves_intermediate_states() -> None:
    # KVCacheConfigurator._handle_max_mamba_cache with speculation: budget = rest * r / (1 + r);
    # slots = budget // (per_req * (1 + D / ratio)); reserve per_req * min(mrr, slots // ratio) * D.
    pre, mfs, d = 141 * GiB, 0.85, 4
    s = settings(tp_size=4, mem_fraction_static=mfs, speculative_algorithm="NEXTN", speculative_num_steps=3,
                 speculative_eagle_topk=1, speculative_num_draft_tokens=d, max_speculative_num_draft_tokens=d,
                 max_running_requests=256)
    plan = plan_kv(shape("qwen3-next-80b-a3b"), s, DeviceMemory(pre))
    # Qwen3-Next GDN at tp 4: 36 layers x (conv 8192 / 4 x 3 x 2 B + 32 / 4 x 128 x 128 x 4 B)
    per_req = 36 * (2048 * 3 * 2 + 8 * 128 * 128 * 4)
    rest_gb = sglang_rest_gb(pre, plan.budget.weights + plan.budget.draft_weights, mfs)
    budget_bytes = rest_gb * 0.9 / 1.9 * GiB
    slots = int(budget_bytes // (per_req * (1 + d / 3)))
    reserve = per_req * min(256, slots // 3) * d
    assert plan.mamba_slots == slots
    assert plan.budget.mamba_spec_states == reserve
    # tokens: the KV cell is one KV head (2 // 4 replicated) x 512 x 2 B x (12 + 1 NEXTN layer)
    left = rest_gb * GiB - slots * per_req - reserve - per_req  # minus the padding slot (item 6)
    assert plan.max_total_num_tokens == int(left) // (512 * 2 * 13)
    names = {p.name: p.shape for p in plan.pools}
    assert names["mamba_spec_temporal"][:3] == (36, min(256, slots // 3), d)


# --- 5. extra_buffer_lazy with overlap: 3 + 1 slots ---------------------------------------------


@pytest.mark.parametrize(
    ("radix_off", "extra", "lazy", "no_overlap", "slots"),
    [
        (True, False, False, False, 1),  # no radix cache: the request's own state
        (False, False, False, False, 3),
        (False, True, False, False, 5),  # extra_buffer with overlap: 3 + 2
        (False, True, True, False, 4),  # extra_buffer_lazy with overlap: 3 + 1
        (False, True, False, True, 4),  # extra_buffer without overlap: 3 + 1
    ],
)
def test_mamba_slots_per_request(radix_off: bool, extra: bool, lazy: bool, no_overlap: bool, slots: int) -> None:
    # KVCacheConfigurator._calculate_mamba_ratio
    assert mamba_slots_per_request(disable_radix_cache=radix_off, extra_buffer=extra, extra_buffer_lazy=lazy,
                                   disable_overlap_schedule=no_overlap) == slots
    s = settings(tp_size=8, mem_fraction_static=0.88, disable_radix_cache=radix_off,
                 enable_mamba_extra_buffer=extra, enable_mamba_extra_buffer_lazy=lazy,
                 disable_overlap_schedule=no_overlap)
    plan = plan_kv(shape("nemotron-h-56b"), s, DeviceMemory(80 * GiB, weight_bytes=14 * GiB))
    assert plan.mamba_slots_per_request == slots
    assert plan.mamba_slots is not None
    assert plan.max_running_requests == min(4096, plan.mamba_slots // slots)


# --- 6. The mamba padding slot is in the budget ------------------------------------------------


def test_mamba_padding_slot_is_budgeted() -> None:
    # Nemotron-H at tp 1: one slot is 54 x (20480 x 3 x 2 + 256 x 64 x 256 x 4) = 912605184 B
    # (0.85 GiB). SGLang budgets `slots` but allocates `slots + 1` rows, overspending by one slot.
    pre = 141 * GiB
    plan = plan_kv(shape("nemotron-h-56b"), settings(mem_fraction_static=0.88, context_length=8192),
                   DeviceMemory(pre, weight_bytes=60 * GiB))
    per_slot = mamba2_per_slot(54, 256, 64, 8, 256, 4, tp=1)
    assert per_slot == 912605184
    assert plan.mamba_slots is not None
    mamba_bytes = sum(p.nbytes for p in plan.pools if p.name.startswith("mamba_"))
    assert mamba_bytes == (plan.mamba_slots + 1) * per_slot
    kv_bytes = sum(p.nbytes for p in plan.pools if not p.name.startswith("mamba_"))
    rest = plan.budget.rest
    # Token rows plus every mamba row fit the rest (the KV padding page is the slack's).
    assert kv_bytes - plan.budget.kv_padding + mamba_bytes <= rest
    assert any("padding slot" in d for d in plan.differences)


# --- defaults from the GPU ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "tp", "spec", "dp", "reserved_gib"),
    [
        ("L40S", 2, None, False, 9.5 + 1),  # 46068 MiB: between 35 and 90 GiB
        ("H100", 1, None, False, 9.5 + 0.5),
        ("H100", 8, "EAGLE", False, 9.5 + 4 + 2),
        ("H200", 8, None, True, 12 + 4 + 4),
        ("B200", 4, "STANDALONE", False, 32 + 6),
    ],
)
def test_default_mem_fraction_static_from_gpu_memory(
    gpu: str, tp: int, spec: str | None, dp: bool, reserved_gib: float
) -> None:
    # ServerArgs._handle_gpu_memory_settings: round((gpu_mem - reserved) / gpu_mem, 3), MiB.
    mem = gpu_preset(gpu).memory_bytes
    mib = mem / MiB
    expected = round((mib - reserved_gib * 1024) / mib, 3)
    assert mem_fraction_static(mem, tp, 1, speculative_algorithm=spec, enable_dp_attention=dp) == expected
    assert reserved_memory_bytes(mem, tp, 1, speculative_algorithm=spec, enable_dp_attention=dp) == round(reserved_gib * GiB)


def test_the_activation_reserve_is_its_own_budget_line() -> None:
    plan = plan_kv(shape("llama-3.1-8b"), settings(context_length=8192), DeviceMemory(80 * GiB))
    assert plan.budget.activation_reserve == 10 * GiB  # 9.5 + 1 x 1 / 2 GiB on an 80 GiB device
    assert plan.mem_fraction_static == 0.875 == round((81920 - 10240) / 81920, 3)
    assert plan.budget.slack == plan.budget.activation_reserve  # 80 GiB x 0.125, exactly
    # Tables are allocated from that slack; what is left is the headroom for activations:
    # requests clamp(450907 x 512 // 8192, 2048, 4096) = 4096, so req_to_token is
    # 4097 x (8192 + 4) x 4 B = 134316048, and the KV padding page one 131072-byte token.
    assert plan.max_running_requests == 4096
    assert plan.budget.headroom == 10737418240 - 134316048 - 131072


def test_a_fraction_that_eats_the_reserve_is_warned_about() -> None:
    plan = plan_kv(shape("llama-3.1-8b"), settings(context_length=8192, mem_fraction_static=0.95),
                   DeviceMemory(80 * GiB))
    assert any("SGLang reserves 10.00 GiB" in w for w in plan.warnings)


# --- concurrency ------------------------------------------------------------------------------


def test_concurrency_at_a_workload() -> None:
    # vLLM's "maximum concurrency for N tokens per request": tokens // page-rounded N.
    plan = plan_kv(shape("llama-3.1-8b"), settings(page_size=16, context_length=8192), DeviceMemory(80 * GiB))
    load = concurrency(plan, 2000 + 500)
    assert load.requests == plan.max_total_num_tokens // 2512 and load.binds == "kv tokens"
    tiny = concurrency(plan, 1)  # one-token requests: the request cap binds
    assert (tiny.requests, tiny.binds) == (plan.max_running_requests, "max_running_requests")


def test_concurrency_on_a_sliding_window_model_counts_windows() -> None:
    plan = plan_kv(shape("gpt-oss-20b"), settings(mem_fraction_static=0.88), DeviceMemory(80 * GiB, weight_bytes=14 * GiB))
    assert plan.swa_tokens is not None
    load = concurrency(plan, 100_000)
    # Each request holds at most window + page SWA tokens: the full pool binds long requests.
    assert load.requests == min(plan.max_total_num_tokens // 100_000, plan.swa_tokens // (128 + 1))


def test_a_small_device_reserves_little() -> None:
    # Under 35 GiB: 2.8 + tp x pp / 10 GiB; 24 GiB at tp 1 -> round((24576 - 2969.6) / 24576, 3)
    assert mem_fraction_static(24 * GiB) == round((24576 - 2.9 * 1024) / 24576, 3) == 0.879


def test_quantized_awq_8b_is_sized_from_its_quantization_config() -> None:
    # AWQ 4-bit, group 128 with zero points: 4/8 + (16 + 4) / (8 x 128) B per decoder weight;
    # embeddings stay float16. The plan used to count 14.96 GiB (every weight at 2 B).
    plan = plan_kv(shape("llama-3.1-8b-awq"), settings(context_length=8192), DeviceMemory(24 * GiB))
    assert plan.budget.weights == 2 * 1050677248 + 6979584000 * 532 // 1024
    assert round(plan.budget.weights / 1e9, 1) == 5.7
    assert any("awq quantized" in n for n in plan.notes)
