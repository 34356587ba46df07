"""The rule functions of the bundled server schema (schema/rules.yaml names them). Plain
typed functions of the rule's declared inputs; returning None means "no opinion" (the
leaf keeps its lower layer). Each docstring names the SGLang code it follows."""

from __future__ import annotations

from configbags.server.kvcache.defaults import default_mem_fraction_static

GiB = 1 << 30
# SGLang compares GPU memory in MiB against these tier bounds (exclusive upper bounds).
_TIERS_GIB = (20, 35, 60, 90, 160)


def _tier(gpu_memory_bytes: int) -> int:
    """The index of the memory tier: 0 (< 20 GiB: T4, 4080) ... 5 (>= 160 GiB: B200, MI300)."""
    for i, bound in enumerate(_TIERS_GIB):
        if gpu_memory_bytes < bound * GiB:
            return i
    return len(_TIERS_GIB)


def mem_fraction_static(
    gpu_memory_bytes: int,
    tp_size: int,
    pp_size: int,
    speculative_algorithm: str | None,
    enable_dp_attention: bool,
) -> float:
    """Share of GPU memory for weights plus the KV pool, after reserving room for
    activations and CUDA graphs: `(gpu_mem - reserved) / gpu_mem`, rounded to three
    decimals, with SGLang's reservation by GPU size (12 GiB + tp*pp/2 GiB on 90-160 GiB
    devices such as the H200, plus 2 GiB with speculative decoding and 4 GiB with DP
    attention; see `reserved_memory_bytes`). The KV planner sizes with the same function,
    so the rule and the plan cannot disagree. Follows SGLang's
    `ServerArgs._handle_gpu_memory_settings` (python/sglang/srt/server_args.py)."""
    fraction = default_mem_fraction_static(
        gpu_memory_bytes, tp_size, pp_size, speculative_algorithm, enable_dp_attention
    )
    return min(max(fraction, 0.05), 0.95)  # a usable fraction even on a very small device


def chunked_prefill_size(gpu_memory_bytes: int) -> int:
    """Tokens per prefill chunk by GPU memory tier: 2k below 35 GiB, 4k below 60 GiB, 8k
    below 160 GiB, 16k above. SGLang's `ServerArgs._handle_gpu_memory_settings`."""
    return (2048, 2048, 4096, 8192, 8192, 16384)[_tier(gpu_memory_bytes)]


def cuda_graph_max_bs(gpu_memory_bytes: int, tp_size: int) -> int:
    """Largest decode batch captured as a CUDA graph by GPU memory tier and TP size: 8
    below 20 GiB; 24/80 below 35 GiB; 32/160 below 60 GiB; 256/512 below 160 GiB (TP < 4 /
    TP >= 4); 512 above. SGLang's `ServerArgs._handle_gpu_memory_settings`."""
    small, large = ((8, 8), (24, 80), (32, 160), (256, 512), (256, 512), (512, 512))[_tier(gpu_memory_bytes)]
    return small if tp_size < 4 else large


def trtllm_mha_page_size(page_size: int | None) -> int | None:
    """trtllm_mha runs pages of 16, 32 or 64 tokens: keep one of those, else use 64.
    SGLang's `ServerArgs._handle_attention_backend_compatibility` (trtllm_mha branch)."""
    return None if page_size in (16, 32, 64) else 64
