"""Each place the plan still differs from the SGLang it names (docs/PLAN.md, "Where it
still differs"), held by a test: the difference is what the plan does, stated so it can
fail when the behaviour changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from configbags.generated.registry import LEAVES
from configbags.server.kvcache import planner
from configbags.server.kvcache.bundled import with_bundled_rules
from configbags.server.kvcache.errors import SettingsError
from configbags.server.kvcache.gpus import gpu_preset
from configbags.server.kvcache.model_shape import load_model_shape
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings
from configbags.server.rules import speculative_eagle_topk

MODELS = Path(__file__).resolve().parent.parent / "models"
GiB = 1 << 30


def plan(model: str, memory: DeviceMemory, **leaves: Any) -> KvPlan:
    shape = load_model_shape(MODELS / f"{model}.json")
    fallbacks = {n: LEAVES[n].fallback for n in ("swa_full_tokens_ratio", "mamba_full_memory_ratio")}
    if "tp_size" in leaves:
        leaves.setdefault("attn_tp_size", leaves["tp_size"])
    settings = PlanSettings(**{**fallbacks, **leaves})
    return planner.plan_kv(shape, with_bundled_rules(settings, shape, memory), memory)


def test_memory_is_taken_as_given() -> None:
    # a preset's whole capacity is the pre-load free memory: no CUDA context is taken off
    h100 = gpu_preset("H100")
    p = plan("llama-3.1-8b", DeviceMemory(h100.memory_bytes, capacity_bytes=h100.memory_bytes, sm=h100.sm),
             context_length=8192)
    assert p.budget.pre == 81559 << 20


def test_weights_are_estimated_unless_measured() -> None:
    estimated = plan("llama-3.1-8b", DeviceMemory(80 * GiB), context_length=8192)
    assert any("weights are estimated" in n for n in estimated.notes)
    measured = plan("llama-3.1-8b", DeviceMemory(80 * GiB, weight_bytes=15 * GiB), context_length=8192)
    assert measured.budget.weights == 15 * GiB and not any("estimated" in n for n in measured.notes)


def test_text_only_and_block_scaled_kv_refused() -> None:
    p = plan("llama-3.1-8b", DeviceMemory(80 * GiB), context_length=8192)
    assert p.budget.multimodal_reserve == 0
    with pytest.raises(SettingsError, match="block-scaled"):
        plan("llama-3.1-8b", DeviceMemory(80 * GiB), kv_cache_dtype="nvfp4")


def test_pipeline_stages_of_a_mamba_hybrid_are_sized_each_from_its_own_layers() -> None:
    # Nemotron-H over 4 stages holds 14, 13, 13 and 14 mamba layers: each stage has its own slots
    p = plan("nemotron-h-56b", DeviceMemory(141 * GiB, weight_bytes=30 * GiB), tp_size=4, pp_size=4,
             mem_fraction_static=0.88)
    slots = [st.mamba_slots for st in p.stages]
    assert len(set(slots)) == 2  # SGLang gives every stage the count of the 14-layer share


def test_prefill_cuda_graphs_are_not_reserved_for() -> None:
    # SGLang keeps prefill CUDA graphs off by default; the default fraction has no prefill term
    p = plan("llama-3.1-8b", DeviceMemory(81559 << 20, capacity_bytes=81559 << 20, sm=90), context_length=8192)
    assert p.budget.activation_reserve == 13440 << 20


def test_speculative_defaults_fill_one_leaf_at_a_time() -> None:
    # given top-k 4 (SGLang's own choice for Llama) alone, the rules still fill steps and draft
    # tokens; SGLang chooses only when none of the three is given
    assert speculative_eagle_topk(("LlamaForCausalLM",), "EAGLE", None, None, None) == 4
    p = plan("llama-3.1-8b", DeviceMemory(80 * GiB), speculative_algorithm="EAGLE",
             speculative_draft_model_path="draft", speculative_eagle_topk=4, context_length=8192)
    assert (p.spec.num_steps, p.spec.max_draft_tokens) == (5, 8)


def test_swa_chunk_cap_with_speculation_and_no_overlap_takes_one_decode_allocation() -> None:
    # SWAChunkCapPoolConfigurator, spec-v1 (overlap off): per request window 128 + 128 x 4
    # draft tokens + page 1 + one decode allocation (steps 3 x topk 1 -> max(3, 4) = 4 tokens)
    # = 645; 32 requests + 1 chunk of 8192 + 1 page
    p = plan("gpt-oss-20b", DeviceMemory(141 * GiB, weight_bytes=13751518848), mem_fraction_static=0.88,
             disable_radix_cache=True, max_running_requests=32, chunked_prefill_size=8192,
             disable_overlap_schedule=True, speculative_algorithm="EAGLE3", speculative_draft_model_path="draft",
             speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4,
             max_speculative_num_draft_tokens=4)
    assert p.swa_per_request == 128 + 128 * 4 + 1 + 4
    assert p.swa_tokens == 645 * 32 + 8192 + 1
