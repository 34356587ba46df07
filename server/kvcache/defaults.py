"""The sizing defaults SGLang derives from the hardware and the model, as plain functions.

They are the one place these rules live: the planner falls back on them when a leaf is
unresolved (None) and writes the result back, and hardware/model resolution rules may
call the very same functions to decide a leaf earlier, in which case the planner simply
reads the decided value. Each docstring names the SGLang function it follows; the version
is the one `docs/PLAN.md` states (SGLang v0.5.x, `python/sglang/srt/server_args.py` and
`mem_cache/kv_cache_configurator.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

GiB = 1 << 30
MiB = 1 << 20

# Attention backends that only work with one page size (SGLang forces these).
_BACKEND_PAGE_SIZE: Mapping[str, int] = {"flashmla": 64, "trtllm_mla": 64}

# Architectures whose sliding-window layers SGLang sizes at full length because its
# hybrid SWA pool does not support them.
_FULL_ATTENTION_ARCHITECTURES = frozenset({"Gemma2ForCausalLM"})

# Slots a running request holds in the mamba pool (SGLang's mamba "ratio").
_MAMBA_SLOTS_WITH_RADIX_CACHE = 3
_MAMBA_EXTRA_BUFFER_OVERLAP = 2
_MAMBA_EXTRA_BUFFER_OVERLAP_LAZY = 1
_MAMBA_EXTRA_BUFFER_NO_OVERLAP = 1


def reserved_memory_bytes(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    speculative_algorithm: str | None = None,
    dp_attention: bool = False,
) -> int:
    """Memory SGLang keeps out of `mem_fraction_static` for activations, CUDA graphs and
    metadata (`ServerArgs._handle_gpu_memory_settings`): by GPU size, `2.8 + tp*pp/10` GiB
    below 35 GiB, `9.5 + tp*pp/2` below 90 GiB, `12 + tp*pp/2` below 160 GiB and 32 GiB
    above; plus 6 GiB for a STANDALONE draft or 2 GiB for any other draft, plus 4 GiB for
    DP attention. The arguments are positional too, so a schema rule can pass its inputs
    in order (capacity, tp_size, pp_size, speculative_algorithm, enable_dp_attention)."""
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
    if dp_attention:
        reserved_gib += 4
    return round(reserved_gib * GiB)


def default_mem_fraction_static(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    speculative_algorithm: str | None = None,
    dp_attention: bool = False,
) -> float:
    """SGLang's default `mem_fraction_static` (`ServerArgs._handle_gpu_memory_settings`):
    `round((gpu_mem - reserved) / gpu_mem, 3)` with `reserved_memory_bytes`."""
    reserved = reserved_memory_bytes(
        gpu_memory_bytes,
        tp_size,
        pp_size,
        speculative_algorithm=speculative_algorithm,
        dp_attention=dp_attention,
    )
    return round((gpu_memory_bytes - reserved) / gpu_memory_bytes, 3)


def forces_full_attention(architectures: Iterable[str]) -> bool:
    """True when SGLang turns on `disable_hybrid_swa_memory` for the model, so every
    sliding-window layer is sized at full length (`ServerArgs._handle_model_specific_adjustments`:
    Gemma-2, both in the August 2025 release and since)."""
    return any(a in _FULL_ATTENTION_ARCHITECTURES for a in architectures)


def forced_page_size(attention_backend: str | None) -> int | None:
    """The page size an attention backend only works with (`ServerArgs._handle_attention_backend_compatibility`:
    flashmla and trtllm_mla need 64), or None when any page size works."""
    return _BACKEND_PAGE_SIZE.get(attention_backend or "")


def default_max_running_requests(tokens: int, context_length: int) -> int:
    """`clamp(int(tokens / context_length * 512), 2048, 4096)`, never above `tokens // 2`
    (`KVCacheConfigurator.resolve_max_num_reqs`)."""
    return min(max(tokens * 512 // context_length, 2048), 4096, tokens // 2)


def mamba_slots_per_request(
    *,
    disable_radix_cache: bool,
    extra_buffer: bool,
    extra_buffer_lazy: bool,
    disable_overlap_schedule: bool,
) -> int:
    """Mamba pool slots one running request holds (`KVCacheConfigurator._calculate_mamba_ratio`):
    1 without the radix cache; else 3, plus the extra-buffer ping-pong slots: 2 with
    overlap scheduling (1 when they are filled lazily) and 1 without."""
    if disable_radix_cache:
        return 1
    slots = _MAMBA_SLOTS_WITH_RADIX_CACHE
    if extra_buffer:
        if disable_overlap_schedule:
            slots += _MAMBA_EXTRA_BUFFER_NO_OVERLAP
        elif extra_buffer_lazy:
            slots += _MAMBA_EXTRA_BUFFER_OVERLAP_LAZY
        else:
            slots += _MAMBA_EXTRA_BUFFER_OVERLAP
    return slots


def extra_groups_for_head_shards(n_groups: int, tp_size: int) -> int:
    """Mamba-2 B/C groups added so that every head shard holds the groups its heads use
    (`mamba_utils.extra_groups_for_head_shards`): none when the groups divide evenly,
    else `tp_size - n_groups`."""
    if n_groups % tp_size == 0:
        return 0
    return tp_size - n_groups


__all__ = [
    "default_max_running_requests",
    "default_mem_fraction_static",
    "extra_groups_for_head_shards",
    "forced_page_size",
    "forces_full_attention",
    "mamba_slots_per_request",
    "reserved_memory_bytes",
]
