"""The plan against the SGLang it names (`planner.SGLANG_VERSION`), recomputed
independently: `sglang_reference` restates SGLang's pre-sizing choices and pool sizing in
SGLang's own float arithmetic, reading config.json itself and sharing no code with the
planner. Every expected number is a literal; each test checks the literal against the
reference (so a literal is SGLang's formula, not the planner's output) and the plan against
the literal.

The weights per rank are given (as SGLang measures them after loading): the sizing is what
is checked here, the weight estimate has its own tests (tests/test_kvcache_weights.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import sglang_reference as ref

from configbags.generated.registry import LEAVES
from configbags.server.kvcache import planner
from configbags.server.kvcache.bundled import with_bundled_rules
from configbags.server.kvcache.errors import SettingsError
from configbags.server.kvcache.gpus import gpu_preset
from configbags.server.kvcache.model_shape import ModelShape, load_model_shape
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings, concurrency
from configbags.server.rules import mem_fraction_static

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


def plan_kv(model: str, settings_: PlanSettings, memory: DeviceMemory) -> KvPlan:
    """The planner as the bundled server runs it: the rules decide what SGLang decides
    before sizing (mem_fraction_static, backend, page, mamba strategy), from the facts."""
    s = shape(model)
    return planner.plan_kv(s, with_bundled_rules(settings_, s, memory), memory)


def gpu_memory(gpu: str, weights: int) -> DeviceMemory:
    preset = gpu_preset(gpu)
    return DeviceMemory(preset.memory_bytes, weight_bytes=weights, capacity_bytes=preset.memory_bytes, sm=preset.sm)


def outcome(plan: KvPlan) -> dict[str, Any]:
    out: dict[str, Any] = {"mfs": plan.mem_fraction_static, "page": plan.page_size,
                           "tokens": plan.max_total_num_tokens, "max_running_requests": plan.max_running_requests}
    if plan.swa_tokens is not None:
        out["swa_tokens"] = plan.swa_tokens
    if plan.mamba_slots is not None:
        out["mamba_slots"] = plan.mamba_slots
    return out


# --- the 33 settings: 11 models x 3 setups ------------------------------------------------------
#
# A: the smallest TP the weights fit, --device-memory 141GiB, mfs 0.88, page 1.
# B: H200 (143771 MiB, SM90), the default mfs, page 16, fp8 KV, tp 8 (tp 2 / 4 for the Qwen2.5
#    models, whose 14 / 28 heads tp 8 does not divide).
# C: H100 (81559 MiB, SM90), page 64, mfs 0.85, --max-running-requests 256, context 32768
#    (8192 for the models trained for that), the smallest TP the weights fit.
# weights: bytes per rank for (A, B, C).


@attrs.frozen
class Model:
    name: str
    tp: tuple[int, int, int]
    weights: tuple[int, int, int]
    ctx_c: int = 32768


SETTINGS_MODELS = [
    Model("llama-3.1-8b", (1, 8, 1), (16060522496, 2007565312, 16060522496)),
    Model("llama-3.1-70b", (2, 8, 4), (70553706496, 17638426624, 35276853248)),
    Model("qwen2.5-0.5b", (1, 2, 1), (988065536, 494032768, 988065536)),
    Model("qwen2.5-7b", (1, 4, 1), (15231233024, 3807808256, 15231233024)),
    Model("mistral-7b-v0.1", (1, 8, 1), (14483464192, 1810433024, 14483464192)),
    Model("gemma-2-9b", (1, 8, 1), (18483411968, 2310426496, 18483411968), ctx_c=8192),
    Model("gpt-oss-20b", (1, 8, 1), (13751518848, 1718939856, 13751518848)),
    Model("deepseek-v2-lite", (1, 8, 1), (31412968448, 3926621056, 31412968448)),
    Model("deepseek-v3", (8, 8, 16), (84130394597, 84130394597, 42065197299)),
    Model("nemotron-h-56b", (1, 8, 2), (112648700928, 14081087616, 56324350464), ctx_c=8192),
    Model("qwen3-next-80b-a3b", (2, 8, 4), (79674391296, 19918597824, 39837195648)),
]
MODEL = {m.name: m for m in SETTINGS_MODELS}

EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    ("llama-3.1-8b", "A"): {"mfs": 0.88, "page": 1, "tokens": 893931, "max_running_requests": 3491},
    ("llama-3.1-8b", "B"): {"mfs": 0.897, "page": 16, "tokens": 16262144, "max_running_requests": 4096},
    ("llama-3.1-8b", "C"): {"mfs": 0.85, "page": 64, "tokens": 432064, "max_running_requests": 256},
    ("llama-3.1-70b", "A"): {"mfs": 0.88, "page": 1, "tokens": 382545, "max_running_requests": 2048},
    ("llama-3.1-70b", "B"): {"mfs": 0.897, "page": 16, "tokens": 5741632, "max_running_requests": 4096},
    ("llama-3.1-70b", "C"): {"mfs": 0.85, "page": 64, "tokens": 456704, "max_running_requests": 256},
    ("qwen2.5-0.5b", "A"): {"mfs": 0.88, "page": 1, "tokens": 10761866, "max_running_requests": 4096},
    ("qwen2.5-0.5b", "B"): {"mfs": 0.906, "page": 16, "tokens": 44300064, "max_running_requests": 4096},
    ("qwen2.5-0.5b", "C"): {"mfs": 0.85, "page": 64, "tokens": 5835328, "max_running_requests": 256},
    ("qwen2.5-7b", "A"): {"mfs": 0.88, "page": 1, "tokens": 2057733, "max_running_requests": 4096},
    ("qwen2.5-7b", "B"): {"mfs": 0.9, "page": 16, "tokens": 18397248, "max_running_requests": 4096},
    ("qwen2.5-7b", "C"): {"mfs": 0.85, "page": 64, "tokens": 1002048, "max_running_requests": 256},
    ("mistral-7b-v0.1", "A"): {"mfs": 0.88, "page": 1, "tokens": 905963, "max_running_requests": 4096},
    ("mistral-7b-v0.1", "B"): {"mfs": 0.897, "page": 16, "tokens": 16286208, "max_running_requests": 4096},
    ("mistral-7b-v0.1", "C"): {"mfs": 0.85, "page": 64, "tokens": 444096, "max_running_requests": 256},
    # Gemma-2: 333,503 tokens at A, every layer at full length
    ("gemma-2-9b", "A"): {"mfs": 0.88, "page": 1, "tokens": 333503, "max_running_requests": 4096},
    ("gemma-2-9b", "B"): {"mfs": 0.897, "page": 16, "tokens": 6181008, "max_running_requests": 4096},
    ("gemma-2-9b", "C"): {"mfs": 0.85, "page": 64, "tokens": 157504, "max_running_requests": 256},
    ("gpt-oss-20b", "A"): {"mfs": 0.88, "page": 1, "swa_tokens": 2160704, "tokens": 2700881,
                           "max_running_requests": 4096},
    ("gpt-oss-20b", "B"): {"mfs": 0.897, "page": 16, "swa_tokens": 38630816, "tokens": 48288528,
                           "max_running_requests": 4096},
    ("gpt-oss-20b", "C"): {"mfs": 0.85, "page": 64, "swa_tokens": 1065856, "tokens": 1332352,
                           "max_running_requests": 256},
    ("deepseek-v2-lite", "A"): {"mfs": 0.88, "page": 1, "tokens": 3273434, "max_running_requests": 4096},
    ("deepseek-v2-lite", "B"): {"mfs": 0.897, "page": 16, "tokens": 8442672, "max_running_requests": 4096},
    ("deepseek-v2-lite", "C"): {"mfs": 0.85, "page": 64, "tokens": 1327104, "max_running_requests": 256},
    ("deepseek-v3", "A"): {"mfs": 0.88, "page": 1, "tokens": 698706, "max_running_requests": 2183},
    ("deepseek-v3", "B"): {"mfs": 0.897, "page": 16, "tokens": 1454240, "max_running_requests": 4096},
    ("deepseek-v3", "C"): {"mfs": 0.85, "page": 64, "tokens": 435840, "max_running_requests": 256},
    # the mamba hybrids: auto resolves to extra_buffer (overlap on), 5 slots per request, and
    # the padding slot is budgeted inside the mamba share
    ("nemotron-h-56b", "A"): {"mfs": 0.88, "page": 1, "mamba_slots": 9, "tokens": 279666,
                              "max_running_requests": 1},
    ("nemotron-h-56b", "B"): {"mfs": 0.897, "page": 16, "mamba_slots": 502, "tokens": 24908560,
                              "max_running_requests": 100},
    ("nemotron-h-56b", "C"): {"mfs": 0.85, "page": 64, "mamba_slots": 15, "tokens": 442688,
                              "max_running_requests": 3},
    ("qwen3-next-80b-a3b", "A"): {"mfs": 0.88, "page": 1, "mamba_slots": 655, "tokens": 2295893,
                                  "max_running_requests": 131},
    ("qwen3-next-80b-a3b", "B"): {"mfs": 0.897, "page": 16, "mamba_slots": 5654, "tokens": 9877984,
                                  "max_running_requests": 1130},
    ("qwen3-next-80b-a3b", "C"): {"mfs": 0.85, "page": 64, "mamba_slots": 804, "tokens": 1408320,
                                  "max_running_requests": 160},
}


def reference(name: str, setup: str) -> dict[str, Any]:
    m = MODEL[name]
    if setup == "A":
        return ref.plan(name, pre=141 * GiB, weights=m.weights[0], tp=m.tp[0], mfs=0.88, page=1)
    if setup == "B":
        return ref.plan(name, pre=143771 * MiB, gpu_mib=143771, sm=90, weights=m.weights[1], tp=m.tp[1],
                        page=16, kv_bytes=1)
    return ref.plan(name, pre=81559 * MiB, gpu_mib=81559, sm=90, weights=m.weights[2], tp=m.tp[2], mfs=0.85,
                    page=64, mrr=256, ctx=m.ctx_c)


def planned(name: str, setup: str) -> KvPlan:
    m = MODEL[name]
    if setup == "A":
        return plan_kv(name, settings(tp_size=m.tp[0], mem_fraction_static=0.88, page_size=1),
                       DeviceMemory(141 * GiB, weight_bytes=m.weights[0]))
    if setup == "B":
        return plan_kv(name, settings(tp_size=m.tp[1], page_size=16, kv_cache_dtype="fp8_e4m3"),
                       gpu_memory("H200", m.weights[1]))
    return plan_kv(name, settings(tp_size=m.tp[2], page_size=64, mem_fraction_static=0.85, max_running_requests=256,
                                  context_length=m.ctx_c), gpu_memory("H100", m.weights[2]))


@pytest.mark.parametrize(("name", "setup"), sorted(EXPECTED), ids=lambda x: str(x))
def test_the_33_settings_are_sglangs(name: str, setup: str) -> None:
    assert reference(name, setup) == EXPECTED[name, setup]
    assert outcome(planned(name, setup)) == EXPECTED[name, setup]


def test_there_are_33_settings() -> None:
    assert len(EXPECTED) == 33 and len({n for n, _ in EXPECTED}) == 11


# --- the five mamba edge modes -------------------------------------------------------------------


def test_radix_off_with_a_request_cap_gives_one_slot_per_request() -> None:
    # _handle_max_mamba_cache: disable_radix_cache with max_running_requests -> slots = the cap
    expected = {"mfs": 0.81, "page": 1, "mamba_slots": 64, "tokens": 19753134, "max_running_requests": 64}
    assert ref.plan("nemotron-h-56b", pre=141 * GiB, weights=14081087616, tp=8, mfs=0.81, radix_off=True,
                    mrr=64) == expected
    plan = plan_kv("nemotron-h-56b", settings(tp_size=8, mem_fraction_static=0.81, disable_radix_cache=True,
                                              max_running_requests=64),
                   DeviceMemory(141 * GiB, weight_bytes=14081087616))
    assert outcome(plan) == expected
    assert plan.mamba_slots_per_request == 1


def test_mamba2_groups_are_replicated_to_the_tp_width() -> None:
    # extra_groups_for_head_shards: 8 groups at tp 16 -> 16; conv_dim = 256 x 64 + 2 x 16 x 256
    # = 24576, / 16 = 1536 channels per rank; one slot is 54 x (1536 x 3 x 2 + 16 x 64 x 256 x 4)
    assert ref.mamba_per_req(ref.config("nemotron-h-56b"), 16) == 54 * (1536 * 3 * 2 + 16 * 64 * 256 * 4)
    expected = {"mfs": 0.88, "page": 1, "mamba_slots": 1045, "tokens": 12976761, "max_running_requests": 209}
    assert ref.plan("nemotron-h-56b", pre=141 * GiB, weights=7040543808, tp=16, mfs=0.88) == expected
    plan = plan_kv("nemotron-h-56b", settings(tp_size=16, mem_fraction_static=0.88),
                   DeviceMemory(141 * GiB, weight_bytes=7040543808))
    assert outcome(plan) == expected
    conv = next(p for p in plan.pools if p.name == "mamba_conv")
    assert conv.shape[2:] == (1536, 3)


def test_speculative_states_have_a_padding_row() -> None:
    # Qwen3-Next at tp 4 with NEXTN 3/1/4 and 256 requests: the share holds
    # (K + 1) x per_req + (min(256, K // 5) + 1) x 4 x per_req; the intermediate pools have
    # one row more than the requests (HybridReqToTokenPool's padding row); K // 5 = 241 binds
    expected = {"mfs": 0.85, "page": 1, "mamba_slots": 1207, "tokens": 3516942, "max_running_requests": 241}
    got = ref.plan("qwen3-next-80b-a3b", pre=141 * GiB, weights=39837195648, tp=4, mfs=0.85, mrr=256,
                   draft_tokens=4, draft_layers=1)
    assert got == expected
    s = settings(tp_size=4, mem_fraction_static=0.85, max_running_requests=256, speculative_algorithm="NEXTN",
                 speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4,
                 max_speculative_num_draft_tokens=4)
    plan = plan_kv("qwen3-next-80b-a3b", s, DeviceMemory(141 * GiB, weight_bytes=39837195648, draft_weight_bytes=0))
    assert outcome(plan) == expected
    per_req = ref.mamba_per_req(ref.config("qwen3-next-80b-a3b"), 4)
    assert plan.budget.mamba_spec_states == (241 + 1) * 4 * per_req
    temporal = next(p for p in plan.pools if p.name == "mamba_spec_temporal")
    assert temporal.shape[:3] == (36, 242, 4)


def test_extra_buffer_lazy_holds_four_slots_per_request() -> None:
    # _calculate_mamba_ratio: 3 + 1 for extra_buffer_lazy with overlap on
    expected = {"mfs": 0.88, "page": 1, "mamba_slots": 491, "tokens": 12198815, "max_running_requests": 122}
    assert ref.plan("nemotron-h-56b", pre=143771 * MiB, weights=14081087616, tp=8, mfs=0.88,
                    strategy="extra_buffer_lazy") == expected
    plan = plan_kv("nemotron-h-56b", settings(tp_size=8, mem_fraction_static=0.88,
                                              mamba_radix_cache_strategy="extra_buffer_lazy"),
                   DeviceMemory(143771 * MiB, weight_bytes=14081087616))
    assert outcome(plan) == expected and plan.mamba_slots_per_request == 4


def test_the_padding_slot_is_inside_the_mamba_share() -> None:
    # Nemotron-H at tp 1: one slot is 54 x (20480 x 3 x 2 + 256 x 64 x 256 x 4) = 912605184 B.
    # slots = (share - per_slot) // per_slot and the pool is (slots + 1) x per_slot: the KV
    # budget is what is left of the rest after the share's slots and padding.
    per_slot = ref.mamba_per_req(ref.config("nemotron-h-56b"), 1)
    assert per_slot == 912605184
    expected = {"mfs": 0.88, "page": 1, "mamba_slots": 34, "tokens": 900004, "max_running_requests": 6}
    assert ref.plan("nemotron-h-56b", pre=141 * GiB, weights=60 * GiB, tp=1, mfs=0.88, ctx=8192) == expected
    plan = plan_kv("nemotron-h-56b", settings(mem_fraction_static=0.88, context_length=8192),
                   DeviceMemory(141 * GiB, weight_bytes=60 * GiB))
    assert outcome(plan) == expected
    mamba_bytes = sum(p.nbytes for p in plan.pools if p.name.startswith("mamba_"))
    assert mamba_bytes == (34 + 1) * per_slot == plan.budget.mamba_state + plan.budget.mamba_padding
    assert not plan.differences


# --- the listed cases ------------------------------------------------------------------------------


def test_gpt_oss_without_radix_cache_sizes_the_swa_pool_from_the_request_cap() -> None:
    # SWAChunkCapPoolConfigurator: per request window 128 + eviction interval 128 x 1 + page 1
    # + decode page 1 = 258; 64 x 258 + 2 chunks x 8192 (141 GiB: 8k chunks) + 1 = 32897 SWA
    # tokens, the rest of the budget to the full pool
    expected = {"mfs": 0.88, "page": 1, "swa_tokens": 32897, "tokens": 4828690, "max_running_requests": 64}
    assert ref.plan("gpt-oss-20b", pre=141 * GiB, weights=13751518848, tp=1, mfs=0.88, radix_off=True,
                    mrr=64) == expected
    s = settings(mem_fraction_static=0.88, disable_radix_cache=True, max_running_requests=64,
                 chunked_prefill_size=8192)
    plan = plan_kv("gpt-oss-20b", s, DeviceMemory(141 * GiB, weight_bytes=13751518848))
    assert outcome(plan) == expected
    # with the radix cache the ratio split gives the full pool 44% fewer tokens
    assert outcome(planned("gpt-oss-20b", "A"))["tokens"] == 2700881


@pytest.mark.parametrize(
    ("gpu", "tp", "expected"),
    [("H100", 1, 0.835), ("B200", 8, 0.852), ("L40S", 2, 0.849), ("H200", 8, 0.897), ("A100-40G", 1, 0.833)],
)
def test_default_mem_fraction_static_is_the_memory_hooks(gpu: str, tp: int, expected: float) -> None:
    # handle_gpu_memory_settings: 512 + 1.5 x chunk + tp x pp / 8 GiB + 2 x decode graph batch
    # (MiB), at least 10 GiB above 60 GiB
    mib = gpu_preset(gpu).memory_bytes / MiB
    assert ref.default_mfs(mib, tp) == expected
    assert mem_fraction_static(gpu_preset(gpu).memory_bytes, tp) == expected
    plan = plan_kv("llama-3.1-8b", settings(tp_size=tp, context_length=8192), gpu_memory(gpu, 16060522496 // tp))
    assert plan.mem_fraction_static == expected


@pytest.mark.parametrize(("name", "backend"), [("deepseek-v3", "trtllm_mla"), ("gpt-oss-20b", "trtllm_mha"),
                                               ("nemotron-h-56b", "trtllm_mha")])
def test_b200_default_backends_force_page_64(name: str, backend: str) -> None:
    # the model overrides pick a TensorRT-LLM backend on SM100 when none is given, and
    # _handle_attention_backend_compatibility gives it 64-token pages
    assert ref.default_backend(ref.config(name)["architectures"][0], 100) == backend
    weights = {"deepseek-v3": 84130394597, "gpt-oss-20b": 1718939856, "nemotron-h-56b": 14081087616}[name]
    s = settings(tp_size=8)
    plan = plan_kv(name, s, gpu_memory("B200", weights))
    assert plan.settings.attention_backend == backend and plan.page_size == 64
    # an explicit backend wins; on H200 (SM90) DeepSeek keeps page 1
    assert plan_kv(name, settings(tp_size=8, attention_backend="triton"), gpu_memory("B200", weights)).page_size == 1
    if name == "deepseek-v3":
        assert plan_kv(name, s, gpu_memory("H200", weights)).page_size == 1


def test_a_request_longer_than_the_context_fits_zero_times() -> None:
    # Llama-3.1-8B (context 131072, max_req_len 131071) at 200000:1000
    for gpu in ("H200", "H100"):
        plan = plan_kv("llama-3.1-8b", settings(), gpu_memory(gpu, 16060522496))
        load = concurrency(plan, 201000)
        assert (load.requests, load.binds) == (0, "max_req_len")
        assert load.reason is not None and "trained for 131,072 tokens" in load.reason
    # Mistral with --context-length 4096 at 4000:500
    plan = plan_kv("mistral-7b-v0.1", settings(context_length=4096), gpu_memory("H100", 14483464192))
    load = concurrency(plan, 4500)
    assert (load.requests, load.binds) == (0, "max_req_len")
    assert load.reason is not None and "set --context-length 4501" in load.reason
    assert concurrency(plan, 4095).requests > 0


def test_speculative_decoding_that_needs_a_draft_model_is_refused_without_one() -> None:
    with pytest.raises(SettingsError, match="needs a draft model.*--speculative-draft-model-path"):
        plan_kv("llama-3.1-8b", settings(speculative_algorithm="NEXTN"), gpu_memory("H100", 16060522496))
    # DeepSeek-V3 carries its MTP layer: NEXTN needs no draft model
    dsv3 = plan_kv("deepseek-v3", settings(tp_size=8, speculative_algorithm="NEXTN"), gpu_memory("H200", 84130394597))
    assert (dsv3.spec.num_steps, dsv3.spec.eagle_topk, dsv3.spec.max_draft_tokens) == (3, 1, 4)


def test_with_a_draft_model_sglangs_own_defaults_apply() -> None:
    # auto_choose_speculative_params: (5, 4, 8) for Llama
    s = settings(speculative_algorithm="NEXTN", speculative_draft_model_path="draft", context_length=8192)
    plan = plan_kv("llama-3.1-8b", s, gpu_memory("H100", 16060522496))
    assert (plan.spec.num_steps, plan.spec.eagle_topk, plan.spec.max_draft_tokens) == (5, 4, 8)


def test_concurrency_on_a_sliding_window_model_counts_each_requests_window() -> None:
    plan = planned("gpt-oss-20b", "A")
    assert plan.swa_tokens is not None
    # each running request holds its window, the eviction interval's tokens, a page and its
    # decode page: 128 + 128 + 1 + 1 = 258 SWA tokens
    assert plan.swa_per_request == 258
    load = concurrency(plan, 100_000)
    assert load.requests == min(plan.max_total_num_tokens // 100_000, plan.swa_tokens // 258, 4096)
    short = concurrency(plan, 200)  # shorter than the window: the request itself
    assert short.requests == min(plan.max_total_num_tokens // 200, plan.swa_tokens // 200, 4096)


def test_gemma2_full_length_is_the_rule() -> None:
    # ServerArgs._handle_model_specific_adjustments: Gemma2ForCausalLM disables hybrid SWA memory
    memory = DeviceMemory(141 * GiB)
    assert with_bundled_rules(settings(), shape("gemma-2-9b"), memory).disable_hybrid_swa_memory
    assert not with_bundled_rules(settings(), shape("gpt-oss-20b"), memory).disable_hybrid_swa_memory
    assert {p.name for p in planned("gemma-2-9b", "A").pools} == {"k", "v"}


def test_auto_mamba_strategy_is_no_buffer_without_overlap_at_page_1() -> None:
    # _mamba_radix_cache_resolution: no overlap and 1-token pages -> no_buffer (3 slots)
    s = settings(tp_size=8, mem_fraction_static=0.88, disable_overlap_schedule=True, page_size=1)
    plan = plan_kv("nemotron-h-56b", s, DeviceMemory(141 * GiB, weight_bytes=14081087616))
    assert plan.settings.mamba_radix_cache_strategy == "no_buffer" and plan.mamba_slots_per_request == 3
    paged = plan_kv("nemotron-h-56b", attrs.evolve(s, page_size=16), DeviceMemory(141 * GiB, weight_bytes=14081087616))
    assert paged.mamba_slots_per_request == 4  # extra_buffer without overlap: 3 + 1


def test_the_reported_reserve_is_the_one_the_fraction_kept() -> None:
    # an operator's decode graph batch of 8 on an H100: 512 + 8192 x 1.5 + 128 + 8 x 2 MiB
    plan = plan_kv("llama-3.1-8b", settings(context_length=8192, cuda_graph_max_bs_decode=8),
                   gpu_memory("H100", 16060522496))
    assert plan.budget.activation_reserve == 12944 * MiB
    assert plan.mem_fraction_static == round((81559 - 12944) / 81559, 3) == 0.841
    assert not any("SGLang reserves" in w for w in plan.warnings)
