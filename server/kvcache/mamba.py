"""The recurrent-state pool of mamba / linear-attention hybrids: the per-rank state shapes
and the slot count, as SGLang's `Mamba2StateShape.create` and
`KVCacheConfigurator._handle_max_mamba_cache` compute them."""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from configbags.server.kvcache.defaults import extra_groups_for_head_shards
from configbags.server.kvcache.model_shape import DTYPE_BYTES, LinearStateShape
from configbags.server.kvcache.records import MambaSlots
from configbags.server.kvcache.settings import PlanSettings


@attrs.frozen
class MambaGeometry:
    """One linear layer's state for one slot on one attention-TP rank."""

    conv: tuple[int, int]  # (conv channels on this rank, conv_kernel - 1)
    temporal: tuple[int, int, int]  # (heads on this rank, head_dim, state_size)
    conv_dtype: str
    ssm_dtype: str

    @property
    def layer_bytes(self) -> int:
        return (
            math.prod(self.conv) * DTYPE_BYTES[self.conv_dtype]
            + math.prod(self.temporal) * DTYPE_BYTES[self.ssm_dtype]
        )


def mamba_geometry(
    linear: LinearStateShape, tp_size: int, conv_dtype: str, ssm_dtype: str
) -> MambaGeometry:
    """Shard the state over attention TP. Mamba-2 groups that do not divide evenly are
    replicated so every head shard holds the groups its heads read
    (`extra_groups_for_head_shards`), which widens the conv state."""
    conv_dim = linear.conv_dim
    if linear.kind == "mamba2":
        groups = linear.n_groups + extra_groups_for_head_shards(linear.n_groups, tp_size)
        conv_dim = linear.num_heads * linear.head_dim + 2 * groups * linear.state_size
    return MambaGeometry(
        conv=(conv_dim // tp_size, linear.conv_kernel - 1),
        temporal=(linear.num_heads // tp_size, linear.head_dim, linear.state_size),
        conv_dtype=conv_dtype,
        ssm_dtype=ssm_dtype,
    )


def size_mamba_slots(
    rest: int,
    per_slot: int,
    settings: PlanSettings,
    *,
    slots_per_request: int,
    draft_tokens: int,
) -> MambaSlots:
    """Slots of the mamba pool (`KVCacheConfigurator._handle_max_mamba_cache`). The pool
    holds `slots + 1` rows (one padding slot), and with speculative decoding intermediate
    states of `D` draft tokens for `spec_requests + 1` rows; the padding rows are budgeted:

    - an operator's `max_mamba_cache_size`, per attention-DP shard, with intermediate
      states for `min(max_running_requests, slots // slots_per_request)` requests;
    - else, with the radix cache off and `max_running_requests` set, one slot per request
      (and intermediate states for each);
    - else the share `B = rest * r / (1 + r)` (r = mamba_full_memory_ratio) holds slots
      and padding: `slots = (B - per_slot) // per_slot`, or with speculation
      `slots = (B - per_slot * (1 + D)) // (per_slot * (1 + D / slots_per_request))`.

    Speculation needs `max_running_requests` here (SGLang asserts it); the planner's
    validation refuses it without one before sizing."""
    s = settings
    dp = s.attn_dp_size
    cap = None if s.max_running_requests is None else s.max_running_requests // dp
    d = draft_tokens
    if s.max_mamba_cache_size is not None:
        slots = s.max_mamba_cache_size // dp
        spec_requests = _capped(cap, slots // slots_per_request) if d else 0
    elif s.disable_radix_cache and cap is not None:
        slots = cap
        spec_requests = slots if d else 0
    else:
        r = Fraction(str(s.mamba_full_memory_ratio))
        budget = rest * r / (1 + r)
        if d:
            slots = math.floor((budget - per_slot * (1 + d)) / (per_slot * (1 + Fraction(d, slots_per_request))))
            spec_requests = _capped(cap, max(slots, 0) // slots_per_request)
        else:
            slots, spec_requests = math.floor((budget - per_slot) / per_slot), 0
    return MambaSlots(slots=max(slots, 0), spec_requests=spec_requests, per_slot=per_slot, draft_tokens=d)


def _capped(cap: int | None, bound: int) -> int:
    return bound if cap is None else min(cap, bound)
