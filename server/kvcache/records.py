"""The frozen records a plan is made of: the budget, the cell, the tensors, the plan."""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from configbags.server.kvcache.model_shape import DTYPE_BYTES
from configbags.server.kvcache.settings import PlanSettings, WrittenLeaf


@attrs.frozen
class Decision:
    """A load-time value the configurator resolved, to be written back through the context.
    The planner decides only leaves that are unset (or `auto`), so a reconfigure that reads
    its own write-backs decides nothing."""

    source: str
    leaf: WrittenLeaf
    value: object


@attrs.frozen
class PoolTensor:
    """`count` tensors of one shape (e.g. one per layer)."""

    name: str
    count: int
    shape: tuple[int, ...]
    dtype: str  # logical dtype
    storage_dtype: str  # what torch allocates

    @property
    def nbytes(self) -> int:
        return self.count * math.prod(self.shape) * DTYPE_BYTES[self.storage_dtype]


@attrs.frozen
class Budget:
    """Bytes on one rank (of the binding pipeline stage), SGLang semantics:
    `pre = weights + draft_weights + slack + multimodal_reserve + mamba (state, padding slot,
    speculative states) + kv_budget`. Every allocated byte is on one line: token rows, mamba
    rows and speculative states in the budget; the KV padding page, req_to_token and the
    speculative buffers in the slack, as in SGLang."""

    pre: int  # free before weights
    weights: int  # target weights on this rank
    draft_weights: int
    avail: int  # free after weights
    slack: int  # pre * (1 - mem_fraction_static): activations, graphs, padding, tables
    activation_reserve: int  # what SGLang's default mem_fraction_static keeps for that
    multimodal_reserve: int
    mamba_state: int  # mamba slots on this stage
    mamba_padding: int  # the pool's padding slot (row 0)
    mamba_spec_states: int  # intermediate SSM/conv states for speculative verify
    kv_budget: int  # rest: what KV may use
    kv_bytes: int  # what the token slots use (<= kv_budget; short by page rounding)
    kv_padding: int  # slot-0 pages, paid from slack
    req_to_token: int  # paid from slack
    spec_buffers: int  # paid from slack

    @property
    def kv_utilization(self) -> float:
        return self.kv_bytes / self.kv_budget if self.kv_budget > 0 else 0.0

    @property
    def rest(self) -> int:
        """What the KV and mamba pools may take: after weights, slack and reserves."""
        return self.avail - self.slack - self.multimodal_reserve

    @property
    def in_budget(self) -> int:
        return self.kv_bytes + self.mamba_state + self.mamba_padding + self.mamba_spec_states

    @property
    def from_slack(self) -> int:
        return self.kv_padding + self.req_to_token + self.spec_buffers

    @property
    def allocated(self) -> int:
        return self.in_budget + self.from_slack

    @property
    def headroom(self) -> int:
        """Slack left for activations and CUDA graphs once the tables are allocated."""
        return self.slack - self.from_slack


@attrs.frozen
class Cell:
    """Bytes per token of the KV pools on the binding stage."""

    per_layer_full: int  # one full (or MLA) layer
    per_layer_swa: int  # one sliding layer (0 without a separate SWA pool)
    full_layers: int  # full/MLA layers sized at full length (SWA layers too when not split)
    swa_layers: int  # layers in the SWA pool
    draft_layers: int
    per_layer_draft: int
    swa_ratio: Fraction | None  # r, when the SWA pool is split by ratio
    swa_fixed_tokens: int | None = None  # the SWA pool sized from the request cap instead

    @property
    def full_bytes(self) -> int:
        """Bytes per token of the pools sized at full length (target and draft)."""
        return self.per_layer_full * self.full_layers + self.per_layer_draft * self.draft_layers

    @property
    def swa_fixed_bytes(self) -> int:
        """Bytes of an SWA pool sized from the request cap (0 otherwise)."""
        return (self.swa_fixed_tokens or 0) * self.per_layer_swa * self.swa_layers

    @property
    def bytes_per_token(self) -> Fraction:
        if self.swa_ratio is None:
            return Fraction(self.full_bytes)
        return self.full_bytes + self.swa_ratio * self.per_layer_swa * self.swa_layers


@attrs.frozen
class SpecSizing:
    """Every speculative size, from one draft-token bound `max_draft_tokens`."""

    enabled: bool
    algorithm: str | None
    num_steps: int
    eagle_topk: int
    active_draft_tokens: int | None
    max_draft_tokens: int
    alloc_len_per_decode: int
    alloc_reserve_per_decode: int
    extra_context_len: int


@attrs.frozen
class MambaSlots:
    """The mamba pool of one stage: slots, the requests whose speculative states are
    reserved, and the bytes of each."""

    slots: int
    spec_requests: int  # requests with intermediate states (0 without speculation)
    per_slot: int  # bytes of one slot over this stage's linear layers
    draft_tokens: int  # D of the intermediate states

    @property
    def state_bytes(self) -> int:
        return self.slots * self.per_slot

    @property
    def spec_rows(self) -> int:
        """Rows of the intermediate-state pools: one per request plus a padding row."""
        return self.spec_requests + 1 if self.draft_tokens else 0

    @property
    def spec_bytes(self) -> int:
        return self.spec_rows * self.draft_tokens * self.per_slot

    @property
    def total_bytes(self) -> int:
        # + one padding slot: the pool holds slots + 1 rows, budgeted in the mamba share
        return self.state_bytes + self.per_slot + self.spec_bytes


@attrs.frozen
class StagePlan:
    rank: int
    layers: tuple[int, int]  # [start, end) of decoder layers on this stage
    cell: Cell
    kv_budget: int
    tokens_fit: int  # before the min over stages and the operator cap
    mamba_slots: int | None


@attrs.frozen
class Concurrency:
    """How many requests of `request_tokens` fit at once, and what binds."""

    request_tokens: int
    requests: int
    binds: str  # "kv tokens", "swa tokens", "mamba slots", "max_running_requests" or "max_req_len"
    reason: str | None = None  # why none fits and what to set (requests == 0)
    limits: tuple[tuple[str, int], ...] = ()  # requests each pool (and the cap) holds


@attrs.frozen
class KvPlan:
    model: str
    settings: PlanSettings  # as read (the operator's view plus earlier write-backs)
    dtype: str
    kv_cache_dtype: str  # resolved choice name (e.g. "bf16")
    kv_dtype: str  # logical element dtype
    page_size: int
    context_length: int
    max_req_len: int  # longest request the pool admits (SGLang: min(ctx, tokens) - 1)
    mem_fraction_static: float
    budget: Budget
    cell: Cell
    stages: tuple[StagePlan, ...]
    binding_stage: int
    max_total_num_tokens: int  # full-attention token slots
    swa_tokens: int | None  # SWA pool slots when split
    sliding_window: int | None
    mamba_slots: int | None
    mamba_slots_per_request: int | None
    max_running_requests: int  # per attention-DP shard
    req_to_token_shape: tuple[int, int]
    spec: SpecSizing
    pools: tuple[PoolTensor, ...]  # KV + mamba state of the binding stage
    spec_buffers: tuple[PoolTensor, ...]
    decisions: tuple[Decision, ...]
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # what the operator should act on
    differences: tuple[str, ...] = ()  # where this plan deliberately differs from SGLang
    trained_context_length: int | None = None  # the model's max_position_embeddings
    swa_per_request: int | None = None  # SWA tokens one running request holds at most

    @property
    def pool_bytes(self) -> int:
        return sum(p.nbytes for p in self.pools)

    @property
    def req_to_token_bytes(self) -> int:
        rows, cols = self.req_to_token_shape
        return rows * cols * DTYPE_BYTES["int32"]

    @property
    def context_capped(self) -> bool:
        return self.max_req_len < self.context_length - 1

    def decision(self, leaf: str) -> object:
        for d in self.decisions:
            if d.leaf == leaf:
                return d.value
        raise KeyError(leaf)
