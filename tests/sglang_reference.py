"""SGLang's pre-sizing choices and pool sizing, restated from its source in its own
float arithmetic, reading config.json directly; shares no code with the planner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GiB = 1 << 30
MiB = 1 << 20
MODELS = Path(__file__).resolve().parent.parent / "models"

MAMBA_EXTRA_BUFFER_ARCHS = {"Qwen3NextForCausalLM", "NemotronHForCausalLM"}


def config(name: str) -> dict[str, Any]:
    return json.loads((MODELS / f"{name}.json").read_text())


def chunked_prefill(gpu_mib: float) -> int:
    # handle_gpu_memory_settings
    if gpu_mib < 20 * 1024:
        return 2048
    if gpu_mib < 60 * 1024:
        return 4096
    if gpu_mib < 160 * 1024:
        return 8192
    return 16384


def decode_graph_bs(gpu_mib: float, tp: int) -> int:
    if gpu_mib < 20 * 1024:
        return 8
    if gpu_mib < 35 * 1024:
        return 48 if tp < 4 else 160
    if gpu_mib < 60 * 1024:
        return 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 256 if tp < 4 else 512
    return 512


def default_mfs(gpu_mib: float, tp: int, pp: int = 1) -> float:
    # handle_gpu_memory_settings + reserve_for_graph_mb (decode graphs on, prefill graphs off)
    reserved = 512 + max(chunked_prefill(gpu_mib), 2048) * 1.5 + tp * pp / 8 * 1024
    reserved += decode_graph_bs(gpu_mib, tp) * 2
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def default_backend(arch: str, sm: int | None) -> str | None:
    # the per-architecture model overrides
    if sm is None:
        return None
    if arch == "DeepseekV3ForCausalLM" and sm == 100:
        return "trtllm_mla"
    if arch == "GptOssForCausalLM":
        return "trtllm_mha" if sm == 100 else ("fa3" if sm == 90 else "triton")
    if arch == "NemotronHForCausalLM" and sm == 100:
        return "trtllm_mha"
    return None


def backend_page(backend: str | None, page: int | None) -> int:
    # _handle_attention_backend_compatibility, then page_size defaults to 1
    if backend == "trtllm_mla" and page not in (32, 64):
        return 64
    if backend == "trtllm_mha" and page not in (16, 32, 64):
        return 64
    return 1 if page is None else page


def layers(c: dict[str, Any]) -> tuple[int, int, int]:
    """(full-attention, sliding, linear) layers as SGLang pools them."""
    n = c["num_hidden_layers"]
    if "hybrid_override_pattern" in c:
        p = c["hybrid_override_pattern"]
        return p.count("*"), 0, p.count("M")
    if "full_attention_interval" in c:
        full = n // c["full_attention_interval"]
        return full, 0, n - full
    if "layer_types" in c:
        t = c["layer_types"]
        return t.count("full_attention"), t.count("sliding_attention"), 0
    return n, 0, 0  # Gemma-2 (hybrid SWA memory disabled for it), Mistral, dense


def per_layer(c: dict[str, Any], tp: int, kv_bytes: int) -> int:
    if "kv_lora_rank" in c:
        return (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * kv_bytes
    heads = c["num_attention_heads"]
    hd = c.get("head_dim") or c["hidden_size"] // heads
    return max(1, c["num_key_value_heads"] // tp) * 2 * hd * kv_bytes


def mamba_per_req(c: dict[str, Any], tp: int) -> int:
    """mamba_cache_per_req: conv (bf16) + temporal (float32) of every linear layer."""
    _, _, lin = layers(c)
    if "mamba_num_heads" in c:
        h, d, g, s, k = (c["mamba_num_heads"], c["mamba_head_dim"], c["n_groups"],
                         c["ssm_state_size"], c["conv_kernel"])
        g = g if g % tp == 0 else tp  # extra groups so every head shard has its groups
        conv = (h * d + 2 * g * s) // tp * (k - 1) * 2
        temporal = h // tp * d * s * 4
    else:
        kh, kd, vh, vd, k = (c["linear_num_key_heads"], c["linear_key_head_dim"],
                             c["linear_num_value_heads"], c["linear_value_head_dim"],
                             c["linear_conv_kernel_dim"])
        conv = (2 * kh * kd + vh * vd) // tp * (k - 1) * 2
        temporal = vh // tp * kd * vd * 4
    return lin * (conv + temporal)


def mamba_ratio(radix_off: bool, strategy: str, overlap: bool) -> int:
    # _calculate_mamba_ratio
    if radix_off:
        return 1
    if strategy == "extra_buffer":
        return 3 + (2 if overlap else 1)
    if strategy == "extra_buffer_lazy":
        return 3 + 1
    return 3


def plan(name: str, *, pre: int, weights: int, tp: int, mfs: float | None = None,
         gpu_mib: float | None = None, sm: int | None = None, page: int | None = None,
         kv_bytes: int = 2, mrr: int | None = None, ctx: int | None = None,
         radix_off: bool = False, strategy: str = "auto", overlap: bool = True,
         mamba_cache: int | None = None, draft_tokens: int = 0, draft_layers: int = 0,
         swa_ratio: float = 0.8, mamba_ratio_mem: float = 0.9) -> dict[str, Any]:
    c = config(name)
    arch = c["architectures"][0]
    if mfs is None:
        mfs = default_mfs(gpu_mib if gpu_mib is not None else pre / MiB, tp)
    page = backend_page(default_backend(arch, sm), page)
    ctx = ctx or c["max_position_embeddings"]
    full, swa, lin = layers(c)
    if lin and not radix_off and strategy == "auto":  # _mamba_radix_cache_resolution
        strategy = "extra_buffer" if (overlap or page > 1) and arch in MAMBA_EXTRA_BUFFER_ARCHS else "no_buffer"
    # KVCacheConfigurator._profile_available_bytes, in GB floats
    rest = (pre - weights) / GiB - pre / GiB * (1 - mfs)
    out: dict[str, Any] = {"mfs": mfs, "page": page}
    ratio = None
    if lin:  # _handle_max_mamba_cache
        per = mamba_per_req(c, tp)
        ratio = mamba_ratio(radix_off, strategy, overlap)
        if mamba_cache is not None:
            k = mamba_cache
            if draft_tokens:
                rest -= per * (min(mrr, k // ratio) + 1) * draft_tokens / GiB
        elif radix_off and mrr is not None:
            k = mrr
            if draft_tokens:
                rest -= per * (k + 1) * draft_tokens / GiB
        else:
            budget = rest * mamba_ratio_mem / (1 + mamba_ratio_mem) * GiB
            if draft_tokens:
                k = int((budget - per * (1 + draft_tokens)) // (per * (1 + draft_tokens / ratio)))
                rest -= per * (min(mrr, k // ratio) + 1) * draft_tokens / GiB
            else:
                k = int((budget - per) // per)
        rest -= (k + 1) * per / GiB
        out["mamba_slots"] = k
    avail = int(rest * GiB)
    pl = per_layer(c, tp, kv_bytes)
    if swa:
        window = c["sliding_window"]
        if radix_off and mrr is not None:  # SWAChunkCapPoolConfigurator
            per_request = window + 128 * 1 + page + page
            cap = per_request * mrr + (2 if overlap else 1) * chunked_prefill(gpu_mib or pre / MiB) + page
            swa_tokens = -(-cap // page) * page
            tokens = int((avail - swa_tokens * pl * swa) // (pl * (full + draft_layers))) // page * page
        else:  # HybridSWAPoolConfigurator
            cell = pl * (full + draft_layers) + swa_ratio * pl * swa
            tokens = int(avail // cell) // page * page
            swa_tokens = int(tokens * swa_ratio) // page * page
        out["swa_tokens"] = swa_tokens
    else:
        cell = pl * (full + draft_layers)
        tokens = avail // cell // page * page
    out["tokens"] = tokens
    # resolve_max_num_reqs
    est = max(min(int(tokens / ctx * 512), 4096), 2048)
    reqs = min(mrr, tokens // 2) if mrr is not None else min(est, tokens // 2)
    if lin:
        reqs = min(reqs, out["mamba_slots"] // ratio)
    out["max_running_requests"] = reqs
    return out
