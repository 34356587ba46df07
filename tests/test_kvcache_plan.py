"""The pure plan arithmetic against numbers derived by hand from SGLang's sizing (docs/PLAN.md).

Every expected value below is a literal; the comment above each case shows the arithmetic
(GiB = 1073741824; 80 GiB = 85899345920). Decimal fractions are exact decimals: slack at
mem_fraction_static 0.88 is floor(pre * 12 / 100). Weights are either given (as a measured
size would be) or the hand-counted parameters times the dtype size.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configbags.generated.registry import LEAVES
from configbags.server.kvcache import planner
from configbags.server.kvcache.bundled import with_bundled_rules
from configbags.server.kvcache.errors import (
    BudgetError,
    ContextTooLongError,
    DoesNotFitError,
    KvPlanError,
    SettingsError,
)
from configbags.server.kvcache.model_shape import ModelShape, load_model_shape
from configbags.server.kvcache.planner import (
    DeviceMemory,
    KvPlan,
    PlanSettings,
    default_max_running_requests,
    min_mem_fraction_static,
)
from configbags.server.kvcache.validate import validate_parallel

MODELS = Path(__file__).resolve().parent.parent / "models"
GiB = 1073741824
_SHAPES: dict[str, ModelShape] = {}


def shape(name: str) -> ModelShape:
    if name not in _SHAPES:
        _SHAPES[name] = load_model_shape(MODELS / f"{name}.json")
    return _SHAPES[name]


def plan_settings(**leaves: Any) -> PlanSettings:
    """PlanSettings as the accessors would return them: the leaves whose schema fallback the
    context applies take it from the generated registry (the one source of those values)."""
    fallbacks = {n: LEAVES[n].fallback for n in ("swa_full_tokens_ratio", "mamba_full_memory_ratio")}
    return PlanSettings(**{**fallbacks, **leaves})

def plan_kv(model: ModelShape, settings_: PlanSettings, memory: DeviceMemory, **kw: Any) -> KvPlan:
    """The planner on `settings_` as the bundled server resolves them: the leaves its rules
    and fallbacks decide (mem_fraction_static, page_size, disable_hybrid_swa_memory) come
    from schema/rules.yaml with this device's and model's facts, as at publish."""
    return planner.plan_kv(model, with_bundled_rules(settings_, model, memory), memory, **kw)



def tp(n: int, **kw: Any) -> dict[str, Any]:
    return {"tp_size": n, "attn_tp_size": n, **kw}


@attrs.frozen
class Case:
    id: str
    model: str
    settings: PlanSettings
    memory: DeviceMemory
    cell: float  # bytes per token on the binding stage
    kv_budget: int
    tokens: int
    max_running_requests: int
    req_to_token: tuple[int, int]
    pools: dict[str, tuple[int, tuple[int, ...], str]]  # name -> (count, shape, storage dtype)
    swa_tokens: int | None = None
    mamba_slots: int | None = None


CASES = [
    # llama-3.1-8b, tp 1, everything defaulted. Weights: 8,030,261,248 params (hand count:
    # 2 x 128256 x 4096 embeddings + 32 x 218,112,000 per layer + 4096 final norm) x 2 B.
    # mfs default from 81920 MiB (handle_gpu_memory_settings): chunk 8192, decode graph
    # batch 256 at tp 1; reserved = 512 + 8192 x 1.5 + 1 x 1 / 8 x 1024 + 256 x 2 = 13440 MiB
    # (above the 10 GiB floor) -> round((81920 - 13440) / 81920, 3) = 0.836
    # slack = floor(85899345920 * 0.164) = 14087492730
    # rest = 85899345920 - 16060522496 - 14087492730 = 55751330694
    # cell = 8 kv heads x (128 + 128) x 32 layers x 2 B = 131072
    # tokens = 55751330694 // 131072 = 425348 (page 1)
    # requests = clamp(425348 * 512 // 131072 = 1661, 2048, 4096) = 2048
    # req_to_token = (2048 + 1, 131072 + 4)
    Case(
        "llama8b-tp1-defaults",
        "llama-3.1-8b",
        plan_settings(),
        DeviceMemory(80 * GiB),
        cell=131072,
        kv_budget=55751330694,
        tokens=425348,
        max_running_requests=2048,
        req_to_token=(2049, 131076),
        pools={"k": (32, (425349, 8, 128), "bfloat16"), "v": (32, (425349, 8, 128), "bfloat16")},
    ),
    # llama-3.1-8b, tp 2, page 16, fp8_e4m3, mfs 0.85, EAGLE steps 3 topk 4 draft tokens 8.
    # weights given 8030261248 per rank; draft weights: one average decoder layer
    # 218,112,000 params x 2 B / 2 ranks = 218112000.
    # slack = 85899345920 * 15 / 100 = 12884901888
    # rest = 85899345920 - 8030261248 - 218112000 - 12884901888 = 64766070784
    # cell = 4 heads x 256 x 1 B x (32 + 1 draft layer) = 33792
    # tokens = 64766070784 // 33792 = 1916609 -> page 16 -> 1916608
    # requests = clamp(1916608 * 512 // 131072 = 7486) = 4096
    # D = 8; alloc_page 16, topk 4: ceil_pages = (15 + 3 + 15) // 16 = 2,
    #   len = max(2 * 16 * 4, 8) = 128, reserve 256, extra = max(4 + 8, 256 + 15) = 271
    Case(
        "llama8b-tp2-page16-fp8-eagle",
        "llama-3.1-8b",
        plan_settings(
            **tp(2),
            page_size=16,
            kv_cache_dtype="fp8_e4m3",
            mem_fraction_static=0.85,
            speculative_algorithm="EAGLE",
            speculative_draft_model_path="draft",
            speculative_num_steps=3,
            speculative_eagle_topk=4,
            speculative_num_draft_tokens=8,
            max_speculative_num_draft_tokens=8,
        ),
        DeviceMemory(80 * GiB, weight_bytes=8030261248),
        cell=33792,
        kv_budget=64766070784,
        tokens=1916608,
        max_running_requests=4096,
        req_to_token=(4097, 131072 + 271),
        pools={
            "k": (32, (1916624, 4, 128), "uint8"),
            "v": (32, (1916624, 4, 128), "uint8"),
            "draft_k": (1, (1916624, 4, 128), "uint8"),
            "draft_v": (1, (1916624, 4, 128), "uint8"),
        },
    ),
    # llama-3.1-8b AWQ (4-bit, group 128, zero points), tp 1 on 24 GiB, mfs 0.88, ctx 32768.
    # Weights: embeddings 2 x 128256 x 4096 = 1,050,673,152 params and the norms (32 x 2 x 4096
    #   + 4096 = 266,240) x 2 B (float16) = 2101878784; the decoder's linears 32 x 217,849,856 =
    #   6,971,195,392 params x (4/8 + (16 + 4) / (8 x 128)) B = 3625975808; total 5727854592
    #   (~5.7 GB, the checkpoint's size).
    # slack = floor(25769803776 x 0.12) = 3092376453; rest = 25769803776 - 5727854592 - 3092376453
    #   = 16949572731; cell = 8 x 256 x 32 x 2 (float16 KV) = 131072; tokens = 129314
    # requests = clamp(129314 * 512 // 32768 = 2020) = 2048
    Case(
        "llama8b-awq-tp1-24gib",
        "llama-3.1-8b-awq",
        plan_settings(mem_fraction_static=0.88, context_length=32768),
        DeviceMemory(24 * GiB),
        cell=131072,
        kv_budget=16949572731,
        tokens=129314,
        max_running_requests=2048,
        req_to_token=(2049, 32772),
        pools={"k": (32, (129315, 8, 128), "float16"), "v": (32, (129315, 8, 128), "float16")},
    ),
    # The same at tp 2 with fp8 KV and page 16: the linears and embeddings split, the norms
    #   (532480 B) whole on each rank: (5727854592 - 532480) / 2 + 532480 = 2864193536;
    # rest = 25769803776 - 2864193536 - 3092376453 = 19813233787; cell = 4 x 256 x 32 x 1 = 32768;
    # tokens = 604652 -> page 16 -> 604640; requests = clamp(604640 * 512 // 32768 = 9447) = 4096
    Case(
        "llama8b-awq-tp2-fp8-page16",
        "llama-3.1-8b-awq",
        plan_settings(**tp(2), mem_fraction_static=0.88, context_length=32768, kv_cache_dtype="fp8_e4m3",
                      page_size=16),
        DeviceMemory(24 * GiB),
        cell=32768,
        kv_budget=19813233787,
        tokens=604640,
        max_running_requests=4096,
        req_to_token=(4097, 32772),
        pools={"k": (32, (604656, 4, 128), "uint8"), "v": (32, (604656, 4, 128), "uint8")},
    ),
    # llama-3.1-70b, tp 8. Weights: 70,553,706,496 params x 2 B over 8 ranks, but the norms
    # (80 x 2 x 8192 + 8192 params = 2,629,632 B) whole on each: 17640734720.
    # mfs 0.81: slack = floor(85899345920 * 0.19) = 16320875724
    # rest = 85899345920 - 17640734720 - 16320875724 = 51937735476
    # cell = max(1, 8 // 8) head x 256 x 80 layers x 2 B = 40960
    # tokens = 51937735476 // 40960 = 1268011; requests = clamp(4953) = 4096
    Case(
        "llama70b-tp8",
        "llama-3.1-70b",
        plan_settings(**tp(8), mem_fraction_static=0.81),
        DeviceMemory(80 * GiB),
        cell=40960,
        kv_budget=51937735476,
        tokens=1268011,
        max_running_requests=4096,
        req_to_token=(4097, 131076),
        pools={"k": (80, (1268012, 1, 128), "bfloat16"), "v": (80, (1268012, 1, 128), "bfloat16")},
    ),
    # llama-3.1-70b, tp 4 x pp 2 (40 layers a stage), page 64, fp8_e5m2, mfs 0.9, 35 GiB weights.
    # slack = 85899345920 / 10 = 8589934592; rest = 85899345920 - 37580963840 - 8589934592
    #   = 39728447488
    # cell = 2 heads x 256 x 40 layers x 1 B = 20480
    # tokens = 39728447488 // 20480 = 1939865 -> page 64 -> 1939840
    # requests = clamp(1939840 * 512 // 8192) = 4096; rows = 1939840 + 64
    Case(
        "llama70b-tp4-pp2-page64-fp8e5m2",
        "llama-3.1-70b",
        plan_settings(
            **tp(4),
            pp_size=2,
            page_size=64,
            kv_cache_dtype="fp8_e5m2",
            mem_fraction_static=0.9,
            context_length=8192,
        ),
        DeviceMemory(80 * GiB, weight_bytes=35 * GiB),
        cell=20480,
        kv_budget=39728447488,
        tokens=1939840,
        max_running_requests=4096,
        req_to_token=(4097, 8196),
        pools={"k": (40, (1939904, 2, 128), "uint8"), "v": (40, (1939904, 2, 128), "uint8")},
    ),
    # qwen2.5-7b, tp 1 on 24 GiB (25769803776). Weights 7,615,616,512 params (with q/k/v
    # biases) x 2 B = 15231233024. slack = floor(25769803776 * 0.12) = 3092376453
    # rest = 25769803776 - 15231233024 - 3092376453 = 7446194299
    # cell = 4 x 256 x 28 x 2 = 57344; tokens = 7446194299 // 57344 = 129851
    # requests = clamp(129851 * 512 // 32768 = 2028) = 2048 (<= 129851 // 2)
    Case(
        "qwen7b-tp1-24gib",
        "qwen2.5-7b",
        plan_settings(mem_fraction_static=0.88),
        DeviceMemory(24 * GiB),
        cell=57344,
        kv_budget=7446194299,
        tokens=129851,
        max_running_requests=2048,
        req_to_token=(2049, 32772),
        pools={"k": (28, (129852, 4, 128), "bfloat16"), "v": (28, (129852, 4, 128), "bfloat16")},
    ),
    # qwen2.5-7b, tp 8 with DP attention 2 (attention TP 4), page 32, max_total_tokens 100010,
    # operator max_running_requests 512, 2 GiB weights, mfs 0.88.
    # rest = 85899345920 - 2147483648 - 10307921510 = 73443940762
    # cell = 4 // 4 = 1 head x 256 x 28 x 2 = 14336; fit = 73443940762 // 14336 // 32 * 32
    #   = 5123040; capped: 100010 // 32 * 32 = 100000; requests = 512 // 2 DP shards = 256
    Case(
        "qwen7b-tp8-dpattn2-cap",
        "qwen2.5-7b",
        plan_settings(
            tp_size=8,
            attn_tp_size=4,
            attn_dp_size=2,
            page_size=32,
            max_total_tokens=100010,
            max_running_requests=512,
            mem_fraction_static=0.88,
        ),
        DeviceMemory(80 * GiB, weight_bytes=2 * GiB),
        cell=14336,
        kv_budget=73443940762,
        tokens=100000,
        max_running_requests=256,
        req_to_token=(257, 32772),
        pools={"k": (28, (100032, 1, 128), "bfloat16"), "v": (28, (100032, 1, 128), "bfloat16")},
    ),
    # qwen2.5-0.5b, tp 1 on 4 GiB (4294967296). Weights 494,032,768 params (tied embeddings)
    # x 2 B = 988065536. slack = floor(4294967296 * 0.12) = 515396075
    # rest = 4294967296 - 988065536 - 515396075 = 2791505685
    # cell = 2 x 128 x 24 x 2 = 12288; tokens = 2791505685 // 12288 = 227173
    # requests = clamp(227173 * 512 // 32768 = 3549) = 3549
    Case(
        "qwen05b-tp1-4gib",
        "qwen2.5-0.5b",
        plan_settings(mem_fraction_static=0.88),
        DeviceMemory(4 * GiB),
        cell=12288,
        kv_budget=2791505685,
        tokens=227173,
        max_running_requests=3549,
        req_to_token=(3550, 32772),
        pools={"k": (24, (227174, 2, 64), "bfloat16"), "v": (24, (227174, 2, 64), "bfloat16")},
    ),
    # qwen2.5-0.5b, tp 2, mfs 0.88, page 4, fp8_e4m3, NGRAM (no draft model: no draft layers) with D = 8.
    # weights: the norms (24 x 2 x 896 + 896 params = 87808 B) whole on each rank, the rest
    #   split: (988065536 - 87808) / 2 + 87808 = 494076672;
    # rest = 4294967296 - 494076672 - 515396075 = 3285494549
    # cell = 1 head x 128 x 24 x 1 B = 3072; tokens = 3285494549 // 3072 // 4 * 4 = 1069496
    # requests = 4096; topk 1: len = max(1 * 1, 8) = 8, reserve 16,
    #   extra = max(4 + 8, 16 + 4 - 1) = 19
    Case(
        "qwen05b-tp2-page4-fp8-ngram",
        "qwen2.5-0.5b",
        plan_settings(
            **tp(2),
            page_size=4,
            mem_fraction_static=0.88,
            kv_cache_dtype="fp8_e4m3",
            speculative_algorithm="NGRAM",
            speculative_num_draft_tokens=8,
            max_speculative_num_draft_tokens=8,
        ),
        DeviceMemory(4 * GiB),
        cell=3072,
        kv_budget=3285494549,
        tokens=1069496,
        max_running_requests=4096,
        req_to_token=(4097, 32768 + 19),
        pools={"k": (24, (1069500, 1, 64), "uint8"), "v": (24, (1069500, 1, 64), "uint8")},
    ),
    # mistral-7b-v0.1: a window on every layer is sized as full attention (SGLang does too).
    # Weights 7,241,732,096 x 2 = 14483464192; rest = 85899345920 - 14483464192 - 10307921510
    #   = 61107960218; cell = 8 x 256 x 32 x 2 = 131072; tokens = 466216; requests = 4096
    Case(
        "mistral-tp1",
        "mistral-7b-v0.1",
        plan_settings(mem_fraction_static=0.88),
        DeviceMemory(80 * GiB),
        cell=131072,
        kv_budget=61107960218,
        tokens=466216,
        max_running_requests=4096,
        req_to_token=(4097, 32772),
        pools={"k": (32, (466217, 8, 128), "bfloat16"), "v": (32, (466217, 8, 128), "bfloat16")},
    ),
    # mistral, tp 4, page 16, mfs 0.8, fp8_e4m3, 4 GiB weights.
    # slack = 85899345920 * 20 / 100 = 17179869184; rest = 85899345920 - 4294967296 - 17179869184
    #   = 64424509440 = 60 GiB; cell = 2 x 256 x 32 x 1 = 16384 -> tokens 3932160 exactly
    Case(
        "mistral-tp4-page16-fp8",
        "mistral-7b-v0.1",
        plan_settings(**tp(4), page_size=16, mem_fraction_static=0.8, kv_cache_dtype="fp8_e4m3"),
        DeviceMemory(80 * GiB, weight_bytes=4 * GiB),
        cell=16384,
        kv_budget=64424509440,
        tokens=3932160,
        max_running_requests=4096,
        req_to_token=(4097, 32772),
        pools={"k": (32, (3932176, 2, 128), "uint8"), "v": (32, (3932176, 2, 128), "uint8")},
    ),
    # gemma-2-9b, tp 1 on 40 GiB (42949672960): float32 checkpoint runs in bfloat16.
    # Weights 9,241,705,984 params x 2 = 18483411968; slack = floor(42949672960 * 0.12)
    #   = 5153960755; rest = 42949672960 - 18483411968 - 5153960755 = 19312300237
    # SGLang forces disable_hybrid_swa_memory for Gemma2ForCausalLM
    # (ServerArgs._handle_model_specific_adjustments): all 42 layers at full length.
    # cell = 8 x 512 x 2 x 42 = 344064; tokens = 19312300237 // 344064 = 56129
    # requests = clamp(56129 * 512 // 8192 = 3508) = 3508
    Case(
        "gemma2-tp1-forced-full",
        "gemma-2-9b",
        plan_settings(mem_fraction_static=0.88),
        DeviceMemory(40 * GiB),
        cell=344064,
        kv_budget=19312300237,
        tokens=56129,
        max_running_requests=3508,
        req_to_token=(3509, 8196),
        pools={"k": (42, (56130, 8, 256), "bfloat16"), "v": (42, (56130, 8, 256), "bfloat16")},
    ),
    # gemma-2-9b, tp 2, mfs 0.88, --disable-hybrid-swa-memory: all 42 layers at full length.
    # weights: the norms (42 x 4 x 3584 + 3584 params = 1211392 B) whole on each rank, the rest
    #   split: (18483411968 - 1211392) / 2 + 1211392 = 9242311680;
    # rest = 42949672960 - 9242311680 - 5153960755 = 28553400525
    # cell = 4 x 512 x 2 x 42 = 172032; tokens = 165977; requests = 4096
    Case(
        "gemma2-tp2-no-swa-split",
        "gemma-2-9b",
        plan_settings(**tp(2), mem_fraction_static=0.88, disable_hybrid_swa_memory=True),
        DeviceMemory(40 * GiB),
        cell=172032,
        kv_budget=28553400525,
        tokens=165977,
        max_running_requests=4096,
        req_to_token=(4097, 8196),
        pools={"k": (42, (165978, 4, 256), "bfloat16"), "v": (42, (165978, 4, 256), "bfloat16")},
    ),
    # gpt-oss-20b, tp 1, 14 GiB weights, swa_full_tokens_ratio 0.5; layers alternate 12/12.
    # rest = 85899345920 - 15032385536 - 10307921510 = 60559038874
    # per layer 8 x 128 x 2 = 2048; cell = 2048 x 12 + 0.5 x 2048 x 12 = 36864
    # full = 60559038874 // 36864 = 1642769; swa = floor(1642769 / 2) = 821384
    Case(
        "gptoss-tp1-ratio05",
        "gpt-oss-20b",
        plan_settings(swa_full_tokens_ratio=0.5, mem_fraction_static=0.88),
        DeviceMemory(80 * GiB, weight_bytes=14 * GiB),
        cell=36864,
        kv_budget=60559038874,
        tokens=1642769,
        swa_tokens=821384,
        max_running_requests=4096,
        req_to_token=(4097, 131076),
        pools={
            "k": (12, (1642770, 8, 64), "bfloat16"),
            "v": (12, (1642770, 8, 64), "bfloat16"),
            "k_swa": (12, (821385, 8, 64), "bfloat16"),
            "v_swa": (12, (821385, 8, 64), "bfloat16"),
        },
    ),
    # gpt-oss-20b, tp 8, page 16, mfs 0.85, EAGLE3 steps 3 topk 1 draft tokens 4 (one draft
    # full layer), r 0.8, weights 2 GiB + draft 100 MiB.
    # rest = 85899345920 - 2147483648 - 104857600 - 12884901888 = 70762102784
    # per layer 1 x 128 x 2 = 256; cell = 256 x (12 + 1) + 0.8 x 256 x 12 = 5785.6
    # full = floor(70762102784 / 5785.6) = 12230728 -> page 16 -> 12230720
    # swa = floor(12230720 x 0.8) = 9784576 (already a page multiple)
    # topk 1: len = max(3, 4) = 4, reserve 8, extra = max(4 + 4, 8 + 15) = 23
    Case(
        "gptoss-tp8-page16-eagle3",
        "gpt-oss-20b",
        plan_settings(
            **tp(8),
            page_size=16,
            mem_fraction_static=0.85,
            speculative_algorithm="EAGLE3",
            speculative_draft_model_path="draft",
            speculative_num_steps=3,
            speculative_eagle_topk=1,
            speculative_num_draft_tokens=4,
            max_speculative_num_draft_tokens=4,
        ),
        DeviceMemory(80 * GiB, weight_bytes=2 * GiB, draft_weight_bytes=100 * 1048576),
        cell=5785.6,
        kv_budget=70762102784,
        tokens=12230720,
        swa_tokens=9784576,
        max_running_requests=4096,
        req_to_token=(4097, 131072 + 23),
        pools={
            "k": (12, (12230736, 1, 64), "bfloat16"),
            "v": (12, (12230736, 1, 64), "bfloat16"),
            "k_swa": (12, (9784592, 1, 64), "bfloat16"),
            "v_swa": (12, (9784592, 1, 64), "bfloat16"),
            "draft_k": (1, (12230736, 1, 64), "bfloat16"),
            "draft_v": (1, (12230736, 1, 64), "bfloat16"),
        },
    ),
    # deepseek-v3, tp 8 on 140 GiB (150323855360), 84 GiB weights, mfs 0.9, bf16 KV.
    # slack = 15032385536; rest = 150323855360 - 90194313216 - 15032385536 = 45097156608
    # MLA cell = (512 + 64) x 61 x 2 = 70272 (one latent per token, not divided by tp)
    # tokens = 45097156608 // 70272 = 641751; requests = clamp(641751*512//163840 = 2005) = 2048
    Case(
        "dsv3-tp8-mla",
        "deepseek-v3",
        plan_settings(**tp(8), mem_fraction_static=0.9),
        DeviceMemory(140 * GiB, weight_bytes=84 * GiB),
        cell=70272,
        kv_budget=45097156608,
        tokens=641751,
        max_running_requests=2048,
        req_to_token=(2049, 163844),
        pools={"kv": (61, (641752, 1, 576), "bfloat16")},
    ),
    # deepseek-v3, NEXTN (num_nextn_predict_layers = 1 draft layer), fp8 KV, flashmla backend
    # (page size resolves to 64), steps 3 topk 1 draft tokens 4, ctx 32768, draft 2 GiB.
    # rest = 150323855360 - 90194313216 - 2147483648 - 15032385536 = 42949672960
    # cell = 576 x (61 + 1) x 1 = 35712; tokens = 42949672960 // 35712 = 1202667 -> 1202624
    # len = max(3, 4) = 4, reserve 8, extra = max(8, 8 + 63) = 71
    Case(
        "dsv3-tp8-nextn-fp8-flashmla",
        "deepseek-v3",
        plan_settings(
            **tp(8),
            mem_fraction_static=0.9,
            kv_cache_dtype="fp8_e4m3",
            attention_backend="flashmla",
            context_length=32768,
            speculative_algorithm="NEXTN",
            speculative_num_steps=3,
            speculative_eagle_topk=1,
            speculative_num_draft_tokens=4,
            max_speculative_num_draft_tokens=4,
        ),
        DeviceMemory(140 * GiB, weight_bytes=84 * GiB, draft_weight_bytes=2 * GiB),
        cell=35712,
        kv_budget=42949672960,
        tokens=1202624,
        max_running_requests=4096,
        req_to_token=(4097, 32768 + 71),
        pools={
            "kv": (61, (1202688, 1, 576), "uint8"),
            "draft_kv": (1, (1202688, 1, 576), "uint8"),
        },
    ),
    # deepseek-v2-lite, tp 1, 80 GiB, weights 31412968448 (15.7B params x 2 B), mfs 0.88.
    # rest = 85899345920 - 31412968448 - 10307921510 = 44178455962
    # cell = 576 x 27 x 2 = 31104; tokens = 1420346; requests = clamp(4438) = 4096
    Case(
        "v2lite-tp1",
        "deepseek-v2-lite",
        plan_settings(mem_fraction_static=0.88),
        DeviceMemory(80 * GiB, weight_bytes=31412968448),
        cell=31104,
        kv_budget=44178455962,
        tokens=1420346,
        max_running_requests=4096,
        req_to_token=(4097, 163844),
        pools={"kv": (27, (1420347, 1, 576), "bfloat16")},
    ),
    # deepseek-v2-lite, tp 2 (the latent is replicated, not split), page 64, fp8, ctx 16384.
    # rest = 85899345920 - 15706484224 - 10307921510 = 59884940186
    # cell = 576 x 27 x 1 = 15552; tokens = 3850626 -> page 64 -> 3850624
    Case(
        "v2lite-tp2-page64-fp8",
        "deepseek-v2-lite",
        plan_settings(
            **tp(2),
            mem_fraction_static=0.88,
            page_size=64,
            kv_cache_dtype="fp8_e4m3",
            context_length=16384,
        ),
        DeviceMemory(80 * GiB, weight_bytes=15706484224),
        cell=15552,
        kv_budget=59884940186,
        tokens=3850624,
        max_running_requests=4096,
        req_to_token=(4097, 16388),
        pools={"kv": (27, (3850688, 1, 576), "uint8")},
    ),
    # qwen3-next-80b-a3b, tp 4, 40 GiB weights: 12 full-attention + 36 gated-delta-net layers.
    # rest = 85899345920 - 42949672960 - 10307921510 = 32641751450
    # per slot: 36 x (conv 8192/4 x 3 x 2 B + temporal 32/4 x 128 x 128 x 4 B (float32))
    #   = 36 x (12288 + 524288) = 19316736
    # the share B = 32641751450 x 0.9 / 1.9 = 15461882265.79 holds the slots and the padding
    # slot: slots = (B - 19316736) // 19316736 = 799
    # KV rest = 32641751450 - (799 + 1 padding slot) x 19316736 = 17188362650
    # cell = 1 head (2 // 4 replicated) x 512 x 2 x 12 = 12288; tokens = 1398792
    # auto strategy with overlap on: extra_buffer, 3 + 2 slots per request
    # requests = min(clamp(1398792 * 512 // 262144 = 2732), 799 slots // 5 per request) = 159
    Case(
        "qwen3next-tp4-mamba-budget",
        "qwen3-next-80b-a3b",
        plan_settings(**tp(4), mem_fraction_static=0.88),
        DeviceMemory(80 * GiB, weight_bytes=40 * GiB),
        cell=12288,
        kv_budget=17188362650,
        tokens=1398792,
        mamba_slots=799,
        max_running_requests=159,
        req_to_token=(160, 262148),
        pools={
            "k": (12, (1398793, 1, 256), "bfloat16"),
            "v": (12, (1398793, 1, 256), "bfloat16"),
            "mamba_conv": (1, (36, 800, 2048, 3), "bfloat16"),
            "mamba_temporal": (1, (36, 800, 8, 128, 128), "float32"),
        },
    ),
    # qwen3-next, tp 8, operator max_mamba_cache_size 600, radix cache off (1 slot per
    # request), bfloat16 SSM state, ctx 32768, 20 GiB weights.
    # rest = 85899345920 - 21474836480 - 10307921510 = 54116587930
    # per slot: 36 x (1024 x 3 x 2 + 4 x 128 x 128 x 2) = 36 x 137216 = 4939776
    # KV rest = 54116587930 - (600 + 1) x 4939776 = 51147782554; tokens = // 12288 = 4162417
    # requests = min(4096, 600 // 1) = 600
    Case(
        "qwen3next-tp8-mamba600-noradix",
        "qwen3-next-80b-a3b",
        plan_settings(
            **tp(8),
            mem_fraction_static=0.88,
            max_mamba_cache_size=600,
            disable_radix_cache=True,
            mamba_ssm_dtype="bfloat16",
            context_length=32768,
        ),
        DeviceMemory(80 * GiB, weight_bytes=20 * GiB),
        cell=12288,
        kv_budget=51147782554,
        tokens=4162417,
        mamba_slots=600,
        max_running_requests=600,
        req_to_token=(601, 32772),
        pools={
            "k": (12, (4162418, 1, 256), "bfloat16"),
            "v": (12, (4162418, 1, 256), "bfloat16"),
            "mamba_conv": (1, (36, 601, 1024, 3), "bfloat16"),
            "mamba_temporal": (1, (36, 601, 4, 128, 128), "bfloat16"),
        },
    ),
    # nemotron-h-56b, tp 8, 14 GiB weights: 54 mamba-2 + 10 attention + 54 MLP-only layers;
    # extra-buffer strategy with overlap: 3 + 2 slots per request.
    # rest = 85899345920 - 15032385536 - 10307921510 = 60559038874
    # conv_dim = 256 x 64 + 2 x 8 x 256 = 20480
    # per slot: 54 x (20480/8 x 3 x 2 + 256/8 x 64 x 256 x 4) = 54 x 2112512 = 114075648
    # share B = 60559038874 x 9 / 19 = 28685860519.26; slots = (B - 114075648) // 114075648 = 250
    # KV rest = 60559038874 - (250 + 1) x 114075648 = 31926051226
    # cell = 1 x 256 x 2 x 10 = 5120; tokens = 6235556; requests = min(4096, 250 // 5) = 50
    Case(
        "nemotronh-tp8-extra-buffer",
        "nemotron-h-56b",
        plan_settings(**tp(8), mem_fraction_static=0.88),
        DeviceMemory(80 * GiB, weight_bytes=14 * GiB),
        cell=5120,
        kv_budget=31926051226,
        tokens=6235556,
        mamba_slots=250,
        max_running_requests=50,
        req_to_token=(51, 8196),
        pools={
            "k": (10, (6235557, 1, 128), "bfloat16"),
            "v": (10, (6235557, 1, 128), "bfloat16"),
            "mamba_conv": (1, (54, 251, 2560, 3), "bfloat16"),
            "mamba_temporal": (1, (54, 251, 32, 64, 256), "float32"),
        },
    ),
    # nemotron-h-56b, tp 4, page 16, fp8 KV, mamba_full_memory_ratio 0.5, 28 GiB weights.
    # rest = 85899345920 - 30064771072 - 10307921510 = 45526653338
    # per slot: 54 x (5120 x 3 x 2 + 64 x 64 x 256 x 4) = 54 x 4225024 = 228151296
    # share B = 45526653338 / 3 = 15175551112.67; slots = (B - 228151296) // 228151296 = 65
    # KV rest = 45526653338 - (65 + 1) x 228151296 = 30468667802
    # cell = 2 x 256 x 1 x 10 = 5120; tokens = 5950911 -> page 16 -> 5950896
    # auto with page 16 (and overlap on): extra_buffer, requests = min(4096, 65 // 5) = 13
    Case(
        "nemotronh-tp4-page16-fp8-ratio05",
        "nemotron-h-56b",
        plan_settings(
            **tp(4),
            mem_fraction_static=0.88,
            page_size=16,
            kv_cache_dtype="fp8_e4m3",
            mamba_full_memory_ratio=0.5,
        ),
        DeviceMemory(80 * GiB, weight_bytes=28 * GiB),
        cell=5120,
        kv_budget=30468667802,
        tokens=5950896,
        mamba_slots=65,
        max_running_requests=13,
        req_to_token=(14, 8196),
        pools={
            "k": (10, (5950912, 2, 128), "uint8"),
            "v": (10, (5950912, 2, 128), "uint8"),
            "mamba_conv": (1, (54, 66, 5120, 3), "bfloat16"),
            "mamba_temporal": (1, (54, 66, 64, 64, 256), "float32"),
        },
    ),
]


CASE = {case.id: case for case in CASES}


def plan_strict(model: ModelShape, settings_: PlanSettings, memory: DeviceMemory) -> KvPlan:
    """A plan that refuses a context it cannot hold instead of capping requests."""
    return plan_kv(model, settings_, memory, require_full_context=True)


def run(case: Case) -> KvPlan:
    return plan_kv(shape(case.model), case.settings, case.memory)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_plan_matches_hand_derivation(case: Case) -> None:
    plan = run(case)
    assert float(plan.cell.bytes_per_token) == case.cell
    assert plan.budget.kv_budget == case.kv_budget
    assert plan.max_total_num_tokens == case.tokens
    assert plan.swa_tokens == case.swa_tokens
    assert plan.mamba_slots == case.mamba_slots
    assert plan.max_running_requests == case.max_running_requests
    assert plan.req_to_token_shape == case.req_to_token
    assert {p.name: (p.count, p.shape, p.storage_dtype) for p in plan.pools} == case.pools


def test_every_bundled_model_has_two_cases() -> None:
    per_model: dict[str, int] = {}
    for case in CASES:
        per_model[case.model] = per_model.get(case.model, 0) + 1
    bundled = {p.stem for p in MODELS.glob("*.json")}
    assert set(per_model) == bundled
    assert min(per_model.values()) >= 2


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kv_uses_the_budget_short_only_by_page_rounding(case: Case) -> None:
    plan = run(case)
    if case.settings.max_total_tokens is not None:
        return  # an operator cap leaves budget unused on purpose
    assert plan.budget.kv_bytes <= plan.budget.kv_budget
    assert plan.budget.kv_utilization >= 0.999
    # Every KV tensor byte is on a budget line: the token rows (in the budget) or the
    # dummy page (in the slack); counted from the tensors, not from the budget's formula.
    kv_tensor_bytes = sum(p.nbytes for p in plan.pools if not p.name.startswith("mamba_"))
    assert kv_tensor_bytes == plan.budget.kv_bytes + plan.budget.kv_padding
    if case.swa_tokens is None:
        assert plan.budget.kv_padding == plan.page_size * case.cell


def test_llama8b_weight_estimate_and_the_write_backs_are_only_what_the_plan_sizes() -> None:
    plan = run(CASE["llama8b-tp1-defaults"])
    # 8,030,261,248 params x 2 B (the published Llama-3.1-8B parameter count)
    assert plan.budget.weights == 16060522496
    assert plan.budget.slack == 14087492730  # 80 GiB x (1 - 0.836)
    # mem_fraction_static (rule mem_fraction_static_from_gpu_memory) and page_size (schema
    # fallback) are decided before the plan; the planner writes back only its own values.
    assert (plan.mem_fraction_static, plan.page_size) == (0.836, 1)
    assert {d.leaf: d.value for d in plan.decisions} == {
        "dtype": "bfloat16",
        "kv_cache_dtype": "bf16",
        "context_length": 131072,
        "max_running_requests": 2048,
    }
    assert {d.source for d in plan.decisions} >= {"kv_pool.resolve_kv_cache_dtype"}


def test_draft_weights_are_one_average_layer_per_rank() -> None:
    # llama-3.1-8b EAGLE at tp 2: (8,030,261,248 - 1,050,677,248 embedding params) x 2 B / 32
    # layers / 2 ranks = 218,112,000
    plan = plan_kv(
        shape("llama-3.1-8b"),
        attrs.evolve(CASE["llama8b-tp2-page16-fp8-eagle"].settings),
        DeviceMemory(80 * GiB, weight_bytes=8030261248),
    )
    assert plan.budget.draft_weights == 218112000


def test_speculative_sizes_share_one_bound() -> None:
    plan = run(CASE["llama8b-tp2-page16-fp8-eagle"])  # D = 8
    assert plan.spec.max_draft_tokens == 8
    assert plan.spec.alloc_len_per_decode == 128
    assert plan.spec.alloc_reserve_per_decode == 256
    assert plan.spec.extra_context_len == 271
    buffers = {b.name: b.shape for b in plan.spec_buffers}
    assert buffers == {
        "draft_token_ids": (4096, 8),
        "draft_positions": (4096, 8),
        "retrieve_index": (4096, 8),
        "tree_mask": (4096, 8, 8),
        "out_cache_loc": (4096 * 256,),
    }


def test_active_draft_count_below_the_bound_changes_nothing() -> None:
    base = CASE["llama8b-tp2-page16-fp8-eagle"].settings
    lowered = attrs.evolve(base, speculative_num_draft_tokens=5)
    a, b = run(CASE["llama8b-tp2-page16-fp8-eagle"]), plan_kv(shape("llama-3.1-8b"), lowered, CASE["llama8b-tp2-page16-fp8-eagle"].memory)
    assert b.spec.max_draft_tokens == 8
    assert (a.req_to_token_shape, a.spec_buffers, a.pools) == (b.req_to_token_shape, b.spec_buffers, b.pools)


def test_active_draft_count_without_speculation_does_not_widen_rows() -> None:
    # Speculation off: the resolved bound is 0, so an active count the operator left in the
    # flags sizes nothing (it used to widen every row to ctx + 4 + 8).
    plan = plan_kv(shape("llama-3.1-8b"), plan_settings(speculative_num_draft_tokens=8), DeviceMemory(80 * GiB))
    assert plan.spec.max_draft_tokens == 0
    assert plan.req_to_token_shape == (2049, 131076)
    assert plan.spec_buffers == ()


def test_active_draft_count_above_the_bound_is_refused() -> None:
    # The context never lets this happen (capacity check); a pure caller is told, not obeyed.
    over = attrs.evolve(CASE["llama8b-tp2-page16-fp8-eagle"].settings, speculative_num_draft_tokens=9)
    with pytest.raises(KvPlanError, match="max_speculative_num_draft_tokens=8"):
        plan_kv(shape("llama-3.1-8b"), over, CASE["llama8b-tp2-page16-fp8-eagle"].memory)


def test_no_speculation_has_no_buffers_and_four_spare_columns() -> None:
    plan = run(CASE["llama8b-tp1-defaults"])
    assert plan.spec_buffers == ()
    assert plan.spec.extra_context_len == 4
    assert plan.spec.alloc_len_per_decode == 1


def test_gemma_float32_checkpoint_runs_in_bfloat16() -> None:
    # dtype auto: float32 checkpoints run (and cache KV) in bfloat16; both are written back.
    plan = run(CASE["gemma2-tp1-forced-full"])
    assert plan.dtype == "bfloat16"
    assert plan.kv_cache_dtype == "bf16"
    assert (plan.decision("dtype"), plan.decision("kv_cache_dtype")) == ("bfloat16", "bf16")
    assert plan.budget.weights == 18483411968  # 9,241,705,984 params x 2 B


def test_float16_checkpoint_resolves_kv_cache_dtype_float16() -> None:
    fp16 = attrs.evolve(shape("llama-3.1-8b"), torch_dtype="float16")
    plan = plan_kv(fp16, plan_settings(), DeviceMemory(80 * GiB))
    assert (plan.dtype, plan.kv_dtype) == ("float16", "float16")
    assert plan.decision("kv_cache_dtype") == "float16"  # a choice of the leaf: written back
    assert plan.notes == ("weights are estimated from the model config (pass --weight-bytes to use a measured size)",)
    assert plan.cell.bytes_per_token == 131072  # same 2 bytes as bf16
    # An explicit float16 is taken as given, with nothing to write back.
    given = plan_kv(shape("llama-3.1-8b"), plan_settings(kv_cache_dtype="float16"), DeviceMemory(80 * GiB))
    assert given.pools[0].storage_dtype == "float16"
    with pytest.raises(KeyError):
        given.decision("kv_cache_dtype")


def test_float32_model_with_auto_kv_is_refused_clearly() -> None:
    # kv_cache_dtype has no float32 choice, so `auto` could not be written back: the operator
    # is asked to pick a KV dtype rather than have server_info() say `auto` over float32 pools.
    with pytest.raises(KvPlanError, match="--kv-cache-dtype"):
        plan_kv(shape("gemma-2-9b"), plan_settings(dtype="float32"), DeviceMemory(80 * GiB))
    plan = plan_kv(shape("gemma-2-9b"), plan_settings(dtype="float32", kv_cache_dtype="bf16", context_length=4096),
                   DeviceMemory(80 * GiB))
    assert (plan.dtype, plan.kv_dtype) == ("float32", "bfloat16")


def test_flashmla_page_64_is_the_rules_not_a_write_back() -> None:
    plan = run(CASE["dsv3-tp8-nextn-fp8-flashmla"])
    assert plan.page_size == 64  # rule page_size_flashmla, applied by with_bundled_rules
    with pytest.raises(KeyError):
        plan.decision("page_size")


@pytest.mark.parametrize("backend", ["flashmla", "cutlass_mla", "trtllm_mla", "trtllm_mha"])
def test_the_planner_decides_no_page_size_of_its_own(backend: str) -> None:
    # It used to fall back on a table of its own (flashmla 64, trtllm_mla 64) that had
    # drifted from the rules; an unresolved page size is now refused, naming the fix.
    unresolved = plan_settings(attention_backend=backend, mem_fraction_static=0.88)
    with pytest.raises(SettingsError, match=r"page_size is unresolved.*--page-size.*fallback: 1"):
        planner.plan_kv(shape("deepseek-v2-lite"), unresolved, DeviceMemory(80 * GiB))
    # and a page size given to a pure caller is read as given, whatever the backend
    given = planner.plan_kv(shape("deepseek-v2-lite"), attrs.evolve(unresolved, page_size=16), DeviceMemory(80 * GiB))
    assert given.page_size == 16


def test_the_planner_derives_no_mem_fraction_static_of_its_own() -> None:
    with pytest.raises(SettingsError, match=r"mem_fraction_static is unresolved.*--mem-fraction-static.*GPU facts"):
        planner.plan_kv(shape("llama-3.1-8b"), plan_settings(page_size=1), DeviceMemory(80 * GiB))


def test_gemma2_full_swa_pool_is_the_rules_not_the_planners() -> None:
    # Without the rule's decision (a pure caller passing the leaf as False) the planner
    # splits Gemma-2's pools as for any sliding-window model: it keeps no architecture list.
    split = planner.plan_kv(shape("gemma-2-9b"), plan_settings(page_size=1, mem_fraction_static=0.88,
                                                               context_length=4096), DeviceMemory(80 * GiB))
    assert split.swa_tokens is not None
    full = plan_kv(shape("gemma-2-9b"), plan_settings(mem_fraction_static=0.88, context_length=4096),
                   DeviceMemory(80 * GiB))
    assert full.swa_tokens is None and full.settings.disable_hybrid_swa_memory


def test_mamba_slots_become_a_decision_only_when_sized_from_memory() -> None:
    assert run(CASE["qwen3next-tp4-mamba-budget"]).decision("max_mamba_cache_size") == 799
    with pytest.raises(KeyError):
        run(CASE["qwen3next-tp8-mamba600-noradix"]).decision("max_mamba_cache_size")


def test_pipeline_stages_split_layers_evenly_last_takes_remainder() -> None:
    # 61 layers over pp 2: [0, 30) and [30, 61); the last stage has more layers, so it binds.
    plan = plan_kv(
        shape("deepseek-v3"),
        plan_settings(**tp(8), pp_size=2, mem_fraction_static=0.9),
        DeviceMemory(140 * GiB, weight_bytes=42 * GiB),
    )
    assert [s.layers for s in plan.stages] == [(0, 30), (30, 61)]
    assert plan.binding_stage == 1
    assert plan.pools[0].count == 31
    # rest = 150323855360 - 45097156608 - 15032385536 = 90194313216
    # tokens = 90194313216 // (576 x 31 x 2 = 35712) = 2525602
    assert plan.max_total_num_tokens == 2525602


# --- errors ------------------------------------------------------------------------------


def test_budget_error_names_the_mem_fraction_static_that_fits_one_request() -> None:
    # llama-3.1-70b at tp 2: weights (141,107,412,992 - 2,629,632 B of norms) / 2 + the norms
    # whole on each rank = 70555025408 per rank.
    # avail = 85899345920 - 70555025408 = 15344320512; mfs 0.8 leaves slack 17179869184 > avail.
    # A positive budget: ceil((1 - 15344320512 / 85899345920) x 1000) / 1000 = ceil(821.37) = 0.822.
    # One request of 32768 tokens: cell = 4 heads x 256 x 80 layers x 2 B = 163840, so rest must
    # be >= 32768 x 163840 = 5368709120, slack <= 15344320512 - 5368709120 = 9975611392:
    #   0.884: slack = floor(pre x 0.116) = 9964324126, rest 5379996386, 32836 tokens (fits)
    #   0.883: slack = floor(pre x 0.117) = 10050223472, rest 5294097040, 32312 tokens (short)
    # But 0.884 leaves 9.28 GiB of slack, under the 512 + 8192 x 1.5 + 2 / 8 x 1024 + 256 x 2
    # = 13568 MiB (13.25 GiB) SGLang reserves on an 80 GiB device at tp 2
    # (handle_gpu_memory_settings): the largest fraction that keeps it is
    # floor((1 - 13568 / 81920) x 1000) / 1000 = 0.834, so no suggestion is "safe".
    llama70 = shape("llama-3.1-70b")
    with pytest.raises(BudgetError) as err:
        plan_kv(llama70, plan_settings(**tp(2), mem_fraction_static=0.8, context_length=32768), DeviceMemory(80 * GiB))
    msg = str(err.value)
    assert "no mem_fraction_static up to 0.834 (keeping SGLang's 13.25 GiB activation" in msg
    assert "0.884 would, with only 9.28 GiB left for activations" in msg
    assert "0.822 only makes the KV budget positive" in msg
    fits = plan_kv(llama70, plan_settings(**tp(2), mem_fraction_static=0.884, context_length=32768),
                   DeviceMemory(80 * GiB))
    assert fits.max_total_num_tokens == 32836
    with pytest.raises(ContextTooLongError, match="largest context that fits is 32312"):
        plan_strict(llama70, plan_settings(**tp(2), mem_fraction_static=0.883, context_length=32768),
                DeviceMemory(80 * GiB))


def test_budget_error_when_no_fraction_fits_the_full_context() -> None:
    # At the full 131072 context one request needs 131072 x 163840 B =
    # 20 GiB, more than the 14.29 GiB left after the weights even at mem_fraction_static 1.0;
    # the old message suggested 0.822, which led straight to a 339-token pool.
    with pytest.raises(BudgetError) as err:
        plan_kv(shape("llama-3.1-70b"), plan_settings(**tp(2), mem_fraction_static=0.8), DeviceMemory(80 * GiB))
    msg = str(err.value)
    assert "no mem_fraction_static fits one request of context_length=131072" in msg
    assert "needs 20.00 GiB" in msg and "at most 14.29 GiB" in msg
    assert "0.822 only makes the KV budget positive" in msg


def test_budget_error_when_weights_exceed_the_device() -> None:
    with pytest.raises(BudgetError, match="no mem_fraction_static is enough"):
        plan_kv(shape("llama-3.1-70b"), plan_settings(), DeviceMemory(80 * GiB))


def test_min_mem_fraction_static_boundary() -> None:
    assert min_mem_fraction_static(avail=50, pre=100) == 0.501  # 0.5 leaves exactly 0
    assert min_mem_fraction_static(avail=15344320512, pre=85899345920) == 0.822


def test_context_too_long_names_the_largest_context_that_fits() -> None:
    # llama-3.1-8b on 24 GiB (24576 MiB: chunk 4096, decode graph batch 48 at tp 1): reserved
    # 512 + 4096 x 1.5 + 128 + 48 x 2 = 6880 MiB, no floor below 60 GiB; default mfs
    # round((24576 - 6880) / 24576, 3) = 0.72 (handle_gpu_memory_settings);
    # slack = floor(25769803776 x 0.28) = 7215545057,
    # rest = 25769803776 - 16060522496 - 7215545057 = 2493736223,
    # tokens = 2493736223 // 131072 = 19025 < 131072. No mem_fraction_static fits 131072
    # tokens (16 GiB of KV; 8.07 GiB are left after the weights).
    with pytest.raises(ContextTooLongError, match=r"largest context that fits is 19025") as err:
        plan_strict(shape("llama-3.1-8b"), plan_settings(), DeviceMemory(24 * GiB))
    assert "no mem_fraction_static fits one request of context_length=131072" in str(err.value)
    plan = plan_kv(shape("llama-3.1-8b"), plan_settings(context_length=19025), DeviceMemory(24 * GiB))
    assert plan.max_total_num_tokens == 19025


def test_a_context_that_does_not_fit_caps_requests_as_sglang_does() -> None:
    # Same 24 GiB: SGLang runs with max_req_len = min(context_len, max_total_num_tokens) - 1
    # (Scheduler.init_memory_pool_and_cache) = 19024 and warns; the plan does the same.
    plan = plan_kv(shape("llama-3.1-8b"), plan_settings(), DeviceMemory(24 * GiB))
    assert (plan.max_total_num_tokens, plan.max_req_len, plan.context_capped) == (19025, 19024, True)
    assert any("requests are capped at 19024 tokens" in w for w in plan.warnings)


def test_context_error_suggests_the_fraction_that_fits() -> None:
    # llama-3.1-70b tp 2, 32768 tokens, mfs 0.85: slack = pre x 0.15 = 12884901888,
    # rest = 15344320512 - 12884901888 = 2459418624, tokens = 2459418624 // 163840 = 15011;
    # 0.884 fits (see the budget error test above).
    with pytest.raises(ContextTooLongError) as err:
        plan_strict(shape("llama-3.1-70b"), plan_settings(**tp(2), mem_fraction_static=0.85, context_length=32768),
                DeviceMemory(80 * GiB))
    assert "largest context that fits is 15011 (set --context-length 15011)" in str(err.value)
    assert "0.884 would, with only 9.28 GiB left for activations" in str(err.value)
    # On a larger device the same fraction keeps SGLang's reserve, so it is suggested:
    # 94 GiB at tp 2 reserves 13568 MiB (13.25 GiB); 0.884 leaves 10.9 GiB... not enough either,
    # hence a measured 70B weight share that leaves room: 60 GiB of weights on 94 GiB.
    with pytest.raises(ContextTooLongError) as err:
        plan_strict(shape("llama-3.1-70b"), plan_settings(**tp(2), mem_fraction_static=0.65, context_length=32768),
                    DeviceMemory(94 * GiB, weight_bytes=60 * GiB))
    # One request needs 5 GiB of KV: slack <= 94 - 60 - 5 = 29 GiB -> mfs >= 1 - 29/94 = 0.6915 -> 0.692
    assert "raise --mem-fraction-static to at least 0.692" in str(err.value)


def test_context_error_never_suggests_a_zero_context() -> None:
    # mfs 0.822 leaves rest = 15344320512 - floor(pre x 0.178) = 54236939 B = 331 tokens at page 1;
    # at page 512 not one page fits, so there is no context to suggest, only memory.
    with pytest.raises(ContextTooLongError) as err:
        plan_strict(shape("llama-3.1-70b"), plan_settings(**tp(2), mem_fraction_static=0.822, page_size=512,
                                                      context_length=4096), DeviceMemory(80 * GiB))
    msg = str(err.value)
    assert "--context-length 0" not in msg
    assert "not one page of 512 tokens fits" in msg
    # 4096 tokens need 671088640 B: slack <= 14673231872 = pre x 0.17082..., so 0.830
    assert re.search(r"raise --mem-fraction-static to at least 0\.83\b", msg)


def test_context_error_names_max_total_tokens_when_it_caps_the_pool() -> None:
    # 454184 tokens fit in memory; the operator cap of 1000 is what is short of 4096.
    with pytest.raises(ContextTooLongError) as err:
        plan_strict(shape("llama-3.1-8b"), plan_settings(max_total_tokens=1000, context_length=4096),
                DeviceMemory(80 * GiB))
    msg = str(err.value)
    assert "max_total_tokens=1000 caps the KV pool at 1000 tokens" in msg
    assert ("raise --max-total-tokens to at least 4096 to hold one request of context_length=4096, "
            "or set --context-length 1000, or leave --max-total-tokens out") in msg
    assert "mem-fraction-static" not in msg and "tp-size" not in msg
    # A cap below one page leaves no context to suggest.
    with pytest.raises(ContextTooLongError) as err:
        plan_strict(shape("llama-3.1-8b"), plan_settings(max_total_tokens=10, page_size=16, context_length=4096),
                DeviceMemory(80 * GiB))
    assert "--context-length 0" not in str(err.value)
    assert "raise --max-total-tokens to at least 4096" in str(err.value)


def test_pipeline_errors_name_the_binding_stage() -> None:
    # deepseek-v3 at pp 2: stage 1 holds layers 30-60 (31 layers), so it binds.
    # 50 GiB, 42 GiB weights, mfs 0.9: rest = 53687091200 - 45097156608 - 5368709120 = 3221225472,
    # stage 1 tokens = 3221225472 // (576 x 31 x 2 = 35712) = 90200 < 163840.
    with pytest.raises(ContextTooLongError, match=r"pipeline stage pp_rank=1 of 2 \(layers 30-60\)") as err:
        plan_strict(shape("deepseek-v3"), plan_settings(**tp(8), pp_size=2, mem_fraction_static=0.9),
                DeviceMemory(50 * GiB, weight_bytes=42 * GiB))
    assert "largest context that fits is 90200" in str(err.value)
    # 45 GiB: slack 4.5 GiB + 42 GiB of weights leave nothing on either stage; the one with
    # more layers per token is named.
    with pytest.raises(BudgetError, match=r"pipeline stage pp_rank=1 of 2 \(layers 30-60\)"):
        plan_kv(shape("deepseek-v3"), plan_settings(**tp(8), pp_size=2, mem_fraction_static=0.9),
                DeviceMemory(45 * GiB, weight_bytes=42 * GiB))


def test_context_above_the_model_limit_is_refused() -> None:
    with pytest.raises(KvPlanError, match="exceeds the 32768 tokens"):
        plan_kv(shape("mistral-7b-v0.1"), plan_settings(context_length=65536), DeviceMemory(80 * GiB))


def test_swa_pool_must_hold_a_window() -> None:
    # gpt-oss window 128: full ~1.9M tokens x 0.00005 = ~95 SWA tokens < 128 + 1
    with pytest.raises(KvPlanError, match="window of 128 tokens"):
        plan_kv(
            shape("gpt-oss-20b"),
            plan_settings(swa_full_tokens_ratio=0.00005),
            DeviceMemory(80 * GiB, weight_bytes=14 * GiB),
        )


def test_block_scaled_kv_dtypes_are_refused_clearly() -> None:
    with pytest.raises(KvPlanError, match="block-scaled"):
        plan_kv(shape("llama-3.1-8b"), plan_settings(kv_cache_dtype="nvfp4"), DeviceMemory(80 * GiB))


def test_default_request_rule() -> None:
    assert default_max_running_requests(454184, 131072) == 2048  # 1774 clamped up
    assert default_max_running_requests(10_000_000, 8192) == 4096  # clamped down
    assert default_max_running_requests(3000, 8) == 1500  # never above tokens // 2


# --- properties ----------------------------------------------------------------------------

_MODELS = sorted(p.stem for p in MODELS.glob("*.json"))


def _valid_tp(model: str) -> list[int]:
    """The TP sizes every head count of the model shards evenly over."""
    valid = []
    for size in (1, 2, 4, 8, 16):
        try:
            validate_parallel(shape(model), size)
        except SettingsError:
            continue
        valid.append(size)
    return valid


@st.composite
def _model_and_tp(draw: st.DrawFn) -> tuple[str, int]:
    model = draw(st.sampled_from(_MODELS))
    return model, draw(st.sampled_from(_valid_tp(model)))


def test_budget_is_used_up_to_page_rounding() -> None:
    outcomes: Counter[str] = Counter()

    @settings(max_examples=150, deadline=None, database=None)
    @given(
        model_tp=_model_and_tp(),
        page=st.sampled_from([1, 16, 64]),
        kv=st.sampled_from(["auto", "fp8_e4m3"]),
        mfs=st.integers(700, 950).map(lambda m: m / 1000),
        pre_gib=st.integers(24, 192),
    )
    def check(model_tp: tuple[str, int], page: int, kv: str, mfs: float, pre_gib: int) -> None:
        model, tp_size = model_tp
        settings_ = plan_settings(**tp(tp_size), page_size=page, kv_cache_dtype=kv, mem_fraction_static=mfs,
                                  context_length=4096)
        try:
            plan = plan_kv(shape(model), settings_, DeviceMemory(pre_gib * GiB, weight_bytes=8 * GiB))
        except DoesNotFitError:
            outcomes["does not fit"] += 1  # budget or SWA-window refusals, tested above
            return
        outcomes["planned"] += 1
        b, cell = plan.budget, plan.cell
        assert b.kv_budget - b.kv_bytes >= 0
        # Short by less than one page of tokens; an SWA split rounds its pool down by another
        # page: rest - full_tokens x cell < page x cell, and swa_tokens > full_tokens x r - page.
        swa = cell.per_layer_swa * cell.swa_layers
        rounding = page * (cell.full_bytes + 2 * swa) + cell.full_bytes + swa
        assert b.kv_budget - b.kv_bytes < rounding
        if b.kv_budget >= 1000 * rounding:  # budgets of realistic size: rounding is < 0.1%
            assert b.kv_utilization >= 0.999

    check()
    # 8 GiB of weights on 24-192 GiB fits nearly always; a test whose every draw is refused
    # would check nothing, so the refusals are counted and bounded.
    assert outcomes["planned"] >= 100, outcomes
    assert outcomes["does not fit"] <= outcomes["planned"] // 4, outcomes


def test_allocations_stay_within_the_budget_and_every_row_is_accounted_for() -> None:
    """For any valid model and settings: what the pools allocate in the budget is at most
    the budget, every tensor row is one the plan counts (tokens + a page, slots + a padding
    slot, requests x D), and all of it together fits the device."""
    outcomes: Counter[str] = Counter()

    @settings(max_examples=200, deadline=None, database=None)
    @given(
        model_tp=_model_and_tp(),
        page=st.sampled_from([1, 16, 64]),
        kv=st.sampled_from(["auto", "fp8_e4m3"]),
        mfs=st.one_of(st.none(), st.integers(700, 950).map(lambda m: m / 1000)),
        pre_gib=st.integers(24, 200),
        weight_gib=st.one_of(st.none(), st.integers(1, 40)),
        ctx=st.sampled_from([2048, 4096, 8192]),
        spec=st.sampled_from([None, ("EAGLE", 3, 1, 4), ("NEXTN", 3, 1, 4), ("EAGLE", 2, 4, 8), ("NGRAM", 1, 1, 8)]),
        radix_off=st.booleans(),
        strategy=st.sampled_from(["auto", "extra_buffer", "extra_buffer_lazy"]),
        mrr=st.one_of(st.none(), st.integers(1, 512)),
        cap=st.one_of(st.none(), st.integers(1, 2_000_000)),
        pp=st.sampled_from([1, 1, 2]),
    )
    def check(model_tp: tuple[str, int], page: int, kv: str, mfs: float | None, pre_gib: int,
              weight_gib: int | None, ctx: int, spec: tuple[str, int, int, int] | None, radix_off: bool,
              strategy: str, mrr: int | None, cap: int | None, pp: int) -> None:
        model, tp_size = model_tp
        spec_leaves: dict[str, Any] = {}
        if spec is not None:
            algo, steps, topk, d = spec
            spec_leaves = {"speculative_algorithm": algo, "speculative_num_steps": steps,
                           "speculative_eagle_topk": topk, "speculative_num_draft_tokens": d,
                           "max_speculative_num_draft_tokens": d}
            if algo != "NGRAM":  # the drafting algorithms need a draft model (or built-in MTP)
                spec_leaves["speculative_draft_model_path"] = "draft"
            if shape(model).linear is not None and mrr is None:
                mrr = 64  # SGLang sizes a hybrid's intermediate mamba states from the request cap
        settings_ = plan_settings(
            **tp(tp_size), page_size=page, kv_cache_dtype=kv, mem_fraction_static=mfs, context_length=ctx,
            disable_radix_cache=radix_off, mamba_radix_cache_strategy=strategy, max_running_requests=mrr,
            max_total_tokens=cap, pp_size=pp, **spec_leaves,
        )
        weights = None if weight_gib is None else weight_gib * GiB
        try:
            plan = plan_kv(shape(model), settings_, DeviceMemory(pre_gib * GiB, weight_bytes=weights))
        except DoesNotFitError:
            outcomes["does not fit"] += 1
            return
        outcomes["planned"] += 1
        b = plan.budget
        assert b.in_budget <= b.rest
        # Rows, from the tensors: KV pools hold tokens + one page (SWA: swa_tokens + a page),
        # mamba pools slots + the padding slot, speculative states requests x D.
        tokens, page_ = plan.max_total_num_tokens, plan.page_size
        for p in plan.pools:
            if p.name.startswith("mamba_spec"):
                assert p.shape[2] == plan.spec.max_draft_tokens
            elif p.name.startswith("mamba_"):
                assert p.shape[1] == plan.mamba_slots + 1
            elif p.name.endswith("_swa"):
                assert p.shape[0] == plan.swa_tokens + page_
            else:
                assert p.shape[0] == tokens + page_
        tensors = plan.pool_bytes + plan.req_to_token_bytes + sum(t.nbytes for t in plan.spec_buffers)
        assert tensors == b.allocated  # every byte allocated is on a budget line
        if b.from_slack <= b.slack:
            assert b.allocated <= b.avail - b.multimodal_reserve
        else:
            outcomes["tables exceed the slack"] += 1
            assert any("tables" in w for w in plan.warnings)

    check()
    assert outcomes["planned"] >= 100, outcomes
    assert outcomes["tables exceed the slack"] <= outcomes["planned"] // 10, outcomes


def test_auto_kv_dtype_follows_a_declared_fp8_kv_quantization() -> None:
    quantized = attrs.evolve(shape("llama-3.1-8b"), kv_quant_dtype="fp8_e4m3")
    plan = plan_kv(quantized, plan_settings(), DeviceMemory(80 * GiB))
    assert plan.decision("kv_cache_dtype") == "fp8_e4m3"
    # cell = 8 x 256 x 32 x 1 B = 65536, half of the bf16 cell
    assert plan.cell.bytes_per_token == 65536
    assert plan.pools[0].storage_dtype == "uint8"


def test_draft_pool_takes_its_own_kv_dtype() -> None:
    # llama-3.1-8b tp 1, bf16 target, fp8 draft: cell = 8 x 256 x 2 B x 32 + 8 x 256 x 1 B x 1
    #   = 131072 + 2048 = 133120
    settings_ = plan_settings(
        speculative_algorithm="EAGLE",
        speculative_draft_model_path="draft",
        speculative_num_draft_tokens=4,
        max_speculative_num_draft_tokens=4,
        speculative_draft_kv_cache_dtype="fp8_e4m3",
        context_length=8192,
    )
    plan = plan_kv(shape("llama-3.1-8b"), settings_, DeviceMemory(80 * GiB))
    assert plan.cell.bytes_per_token == 133120
    pools = {p.name: p.storage_dtype for p in plan.pools}
    assert pools == {"k": "bfloat16", "v": "bfloat16", "draft_k": "uint8", "draft_v": "uint8"}
