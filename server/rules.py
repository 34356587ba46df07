"""The rule functions of the bundled server schema (schema/rules.yaml names them). Plain
typed functions of the rule's declared inputs; returning None means "no opinion" (the
leaf keeps its lower layer). Each docstring names the SGLang code it follows.

These rules are the one place the server's hardware and model decisions live: the KV
planner reads the values they resolved and decides none of them again (docs/PLAN.md)."""

from __future__ import annotations

GiB = 1 << 30
MiB = 1 << 20
# SGLang compares GPU memory in MiB against these tier bounds (exclusive upper bounds).
_TIERS_GIB = (20, 35, 60, 90, 160)


def _tier(gpu_memory_bytes: int) -> int:
    """The index of the memory tier: 0 (< 20 GiB: T4, 4080) ... 5 (>= 160 GiB: B200, MI300)."""
    for i, bound in enumerate(_TIERS_GIB):
        if gpu_memory_bytes < bound * GiB:
            return i
    return len(_TIERS_GIB)


def reserved_memory_bytes(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    speculative_algorithm: str | None = None,
    enable_dp_attention: bool = False,
) -> int:
    """Memory SGLang keeps out of `mem_fraction_static` for activations, CUDA graphs and
    metadata (`ServerArgs._handle_gpu_memory_settings`): by GPU size, `2.8 + tp*pp/10` GiB
    below 35 GiB, `9.5 + tp*pp/2` below 90 GiB, `12 + tp*pp/2` below 160 GiB and 32 GiB
    above; plus 6 GiB for a STANDALONE draft or 2 GiB for any other draft, plus 4 GiB for
    DP attention. The KV planner reports the same reserve beside the budget."""
    gpu_mib = gpu_memory_bytes / MiB  # SGLang compares the capacity in MiB
    parallel = tp_size * pp_size
    if gpu_mib < 35 * 1024:
        reserved_gib = 2.8 + parallel / 10
    elif gpu_mib < 90 * 1024:
        reserved_gib = 9.5 + parallel / 2
    elif gpu_mib < 160 * 1024:
        reserved_gib = 12 + parallel / 2
    else:
        reserved_gib = 32
    if speculative_algorithm is not None:
        reserved_gib += 6 if speculative_algorithm.upper() == "STANDALONE" else 2
    if enable_dp_attention:
        reserved_gib += 4
    return round(reserved_gib * GiB)


def mem_fraction_static(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    speculative_algorithm: str | None = None,
    enable_dp_attention: bool = False,
) -> float:
    """Share of GPU memory for weights plus the KV pool, after reserving room for
    activations and CUDA graphs: `round((gpu_mem - reserved) / gpu_mem, 3)` with
    `reserved_memory_bytes` (12 GiB + tp*pp/2 GiB on 90-160 GiB devices such as the H200,
    ...), kept within [0.05, 0.95] so a very small device still gets a usable fraction.
    The parameters after the memory have defaults, so a schema without pipeline or
    speculative leaves may list fewer inputs. Follows SGLang's
    `ServerArgs._handle_gpu_memory_settings` (python/sglang/srt/server_args.py)."""
    reserved = reserved_memory_bytes(
        gpu_memory_bytes, tp_size, pp_size, speculative_algorithm, enable_dp_attention
    )
    fraction = round((gpu_memory_bytes - reserved) / gpu_memory_bytes, 3)
    return min(max(fraction, 0.05), 0.95)


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


def trtllm_mla_page_size(page_size: int | None) -> int | None:
    """trtllm_mla runs pages of 32 or 64 tokens: keep one of those, else use 64 (an unset
    page size included). SGLang's `ServerArgs._handle_attention_backend_compatibility`
    (trtllm_mla branch)."""
    return None if page_size in (32, 64) else 64


def trtllm_mha_page_size(page_size: int | None) -> int | None:
    """trtllm_mha runs pages of 16, 32 or 64 tokens: keep one of those, else use 64 (an
    unset page size included). SGLang's `ServerArgs._handle_attention_backend_compatibility`
    (trtllm_mha branch)."""
    return None if page_size in (16, 32, 64) else 64
