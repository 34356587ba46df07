"""SGLang's sizing formulas the KV planner applies, as plain functions: the request cap a
pool of a given size gets, the mamba slots one request holds, the extra Mamba-2 groups.
Each docstring names the SGLang function it follows; the version is the one
`docs/PLAN.md` states (SGLang v0.5.x, `python/sglang/srt/server_args.py` and
`mem_cache/kv_cache_configurator.py`).

What the hardware and the model decide about the config (the default mem_fraction_static,
the page size an attention backend forces, Gemma-2's full sliding-window pool) is not here:
those are the bundled schema's rules (schema/rules.yaml, configbags.server.rules), which
resolve at publish; the planner reads the values they resolved.
"""

from __future__ import annotations

GiB = 1 << 30

# Slots a running request holds in the mamba pool (SGLang's mamba "ratio").
_MAMBA_SLOTS_WITH_RADIX_CACHE = 3
_MAMBA_EXTRA_BUFFER_OVERLAP = 2
_MAMBA_EXTRA_BUFFER_OVERLAP_LAZY = 1
_MAMBA_EXTRA_BUFFER_NO_OVERLAP = 1


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
    "extra_groups_for_head_shards",
    "mamba_slots_per_request",
]
