"""The KV pool plan as pure arithmetic: model shape + resolved settings + device memory in,
a frozen `KvPlan` out. No torch and no config context here, so it is cheap (the plan
command and tests call it directly) and every number can be checked by hand.

Semantics follow `reference/KV_SIZING.md` (SGLang's): `mem_fraction_static` is the share of
the memory free before weights load that weights plus KV may take; what is left of it after
the weights is the KV budget. Fractions given as decimals (0.88, 0.8, 0.9) are used as exact
decimals (`Fraction(str(x))`), so a plan equals the hand calculation to the byte instead of
drifting by one binary-float ulp at a page boundary.

Simplifications (each says so where it is made, and the tests pin it):
- weights shard evenly over tp x pp ranks; draft weights are the target's average decoder
  layer times the draft layer count;
- EAGLE-like drafts (EAGLE, EAGLE3, NEXTN, ...) have the geometry of one target attention
  layer; NGRAM has no draft model and so no draft KV;
- mamba/linear state shards over the attention TP width like the attention heads;
- padding rows (KV slot 0 page, mamba slot 0, req_to_token row 0) and the req_to_token
  and speculative buffers are paid from the slack, not from the KV budget, as in SGLang;
- the multimodal encoder reserve is zero (text-only planning).

Errors say what binds (the operator's max_total_tokens or memory; with pp > 1, which
stage) and the value that would work. The mem_fraction_static they suggest is the smallest
(in 1/1000) at which one request of the full context fits, found by re-running this very
sizing (`_Sizer`), not by a second formula; the reference's `rest > 0` bound is also given,
as it alone can still leave a pool of a few hundred tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import attrs

from configbags.runtime.kvcache.allocation_sizing import (
    DecodeGeometry,
    get_alloc_len_per_decode,
    get_alloc_reserve_per_decode,
    get_req_to_token_extra_context_len,
)
from configbags.runtime.kvcache.errors import BudgetError, ContextTooLongError, KvPlanError
from configbags.runtime.kvcache.model_shape import DTYPE_BYTES, LayerKind, ModelShape

GiB = 1 << 30

# kv_cache_dtype choice -> (logical dtype, storage dtype). fp8 is stored as uint8, as SGLang
# does, so that index_put/copy work on every backend; the bytes are the same.
KV_DTYPES: Mapping[str, tuple[str, str]] = {
    "bf16": ("bfloat16", "bfloat16"),
    "bfloat16": ("bfloat16", "bfloat16"),
    "float16": ("float16", "float16"),
    "float32": ("float32", "float32"),
    "fp8_e4m3": ("float8_e4m3fn", "uint8"),
    "fp8_e5m2": ("float8_e5m2", "uint8"),
}
# Block-scaled formats need per-block scale pools whose layout is kernel specific; the
# planner refuses them rather than guess (see the module's known gaps).
_UNSUPPORTED_KV_DTYPES = ("mxfp8", "nvfp4", "fp4_mx_block16")

# model.dtype choices -> the dtype name used in plans.
_MODEL_DTYPES: Mapping[str, str] = {
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "float32": "float32",
}
# The kv_cache_dtype choice an `auto` resolves to, by logical KV dtype: the value written
# back through the context, so server_info() names the dtype the pools really hold. Every
# dtype `auto` can reach is here except float32 (a model run with --dtype float32), which
# the leaf's choices cannot name; that case is refused with a fix (resolve_kv_dtype).
_KV_CHOICE_FOR: Mapping[str, str] = {
    "bfloat16": "bf16",
    "float16": "float16",
    "float8_e4m3fn": "fp8_e4m3",
}

# Attention backends that only work with one page size (SGLang forces these).
_BACKEND_PAGE_SIZE: Mapping[str, int] = {"flashmla": 64, "trtllm_mla": 64}

# Draft algorithms without a draft model, hence without draft KV layers.
_MODEL_FREE_DRAFTS = frozenset({"NGRAM", "LOOKAHEAD"})


@attrs.frozen(kw_only=True)
class PlanSettings:
    """The config leaves the plan reads, as the accessors return them (None = unresolved,
    i.e. a load-time value the planner resolves and writes back).

    The two ratios are required and never None: the context applies their schema fallbacks
    before any reader sees them, so the planner keeps no copy of those values. A caller
    without a context (tests, tools) takes them from `configbags.generated.registry.LEAVES[leaf].fallback`.
    """

    swa_full_tokens_ratio: float
    mamba_full_memory_ratio: float
    tp_size: int = 1
    attn_tp_size: int = 1
    attn_dp_size: int = 1
    attn_dcp_size: int = 1
    pp_size: int = 1
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    context_length: int | None = None
    page_size: int | None = None
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    max_running_requests: int | None = None
    disable_hybrid_swa_memory: bool = False
    max_mamba_cache_size: int | None = None
    mamba_ssm_dtype: str | None = None
    disable_radix_cache: bool = False
    enable_mamba_extra_buffer: bool = False
    disable_overlap_schedule: bool = False
    attention_backend: str | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None  # the active count; sizes nothing
    max_speculative_num_draft_tokens: int = 0  # the resolved bound D; sizes everything
    speculative_draft_kv_cache_dtype: str | None = None


@attrs.frozen
class DeviceMemory:
    """`pre`: free bytes before weights load. `weight_bytes` / `draft_weight_bytes`: the
    measured target / draft weights per rank, or None to estimate them from the model config."""

    pre_bytes: int
    weight_bytes: int | None = None
    draft_weight_bytes: int | None = None
    source: str = "--device-memory"


@attrs.frozen
class Decision:
    """A load-time value the configurator resolved, to be written back through the context."""

    source: str
    leaf: str
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
    """Bytes on one rank (of the binding pipeline stage), SGLang semantics."""

    pre: int  # free before weights
    weights: int  # target weights on this rank
    draft_weights: int
    avail: int  # free after weights
    slack: int  # pre * (1 - mem_fraction_static): activations, graphs, padding, tables
    multimodal_reserve: int
    mamba_state: int  # taken from the budget for mamba slots (padding slot excluded)
    kv_budget: int  # rest: what KV may use
    kv_bytes: int  # what the token slots use (<= kv_budget; short by page rounding)
    kv_padding: int  # slot-0 pages, paid from slack
    req_to_token: int  # paid from slack
    spec_buffers: int  # paid from slack

    @property
    def kv_utilization(self) -> float:
        return self.kv_bytes / self.kv_budget if self.kv_budget else 0.0


@attrs.frozen
class Cell:
    """Bytes per token of the KV pools on the binding stage."""

    per_layer_full: int  # one full (or MLA) layer
    per_layer_swa: int  # one sliding layer (0 without a separate SWA pool)
    full_layers: int  # full/MLA layers sized at full length (SWA layers too when not split)
    swa_layers: int  # layers in the SWA pool
    draft_layers: int
    per_layer_draft: int
    swa_ratio: Fraction | None  # r, when the SWA pool is split

    @property
    def bytes_per_token(self) -> Fraction:
        full = self.per_layer_full * self.full_layers + self.per_layer_draft * self.draft_layers
        if self.swa_ratio is None:
            return Fraction(full)
        return full + self.swa_ratio * self.per_layer_swa * self.swa_layers


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
class StagePlan:
    rank: int
    layers: tuple[int, int]  # [start, end) of decoder layers on this stage
    cell: Cell
    kv_budget: int
    tokens_fit: int  # before the min over stages and the operator cap
    mamba_slots: int | None


@attrs.frozen
class KvPlan:
    model: str
    settings: PlanSettings  # as read (the operator's view plus earlier write-backs)
    dtype: str
    kv_cache_dtype: str  # resolved choice name (e.g. "bf16")
    kv_dtype: str  # logical element dtype
    page_size: int
    context_length: int
    mem_fraction_static: float
    budget: Budget
    cell: Cell
    stages: tuple[StagePlan, ...]
    binding_stage: int
    max_total_num_tokens: int  # full-attention token slots
    swa_tokens: int | None  # SWA pool slots when split
    mamba_slots: int | None
    mamba_slots_per_request: int | None
    max_running_requests: int  # per attention-DP shard
    req_to_token_shape: tuple[int, int]
    spec: SpecSizing
    pools: tuple[PoolTensor, ...]  # KV + mamba state of the binding stage
    spec_buffers: tuple[PoolTensor, ...]
    decisions: tuple[Decision, ...]
    notes: tuple[str, ...]

    @property
    def pool_bytes(self) -> int:
        return sum(p.nbytes for p in self.pools)

    @property
    def req_to_token_bytes(self) -> int:
        rows, cols = self.req_to_token_shape
        return rows * cols * DTYPE_BYTES["int32"]

    def decision(self, leaf: str) -> object:
        for d in self.decisions:
            if d.leaf == leaf:
                return d.value
        raise KeyError(leaf)


def default_mem_fraction_static(tp_size: int) -> float:
    """SGLang's classic default when the operator gives none: wider TP leaves less room for
    weights + KV because each rank's communication buffers and graphs grow. (Newer SGLang
    derives it from the GPU size and the CUDA-graph batch sizes; this rule is the stable
    part and is what this planner documents.)"""
    if tp_size >= 16:
        return 0.79
    if tp_size >= 8:
        return 0.81
    if tp_size >= 4:
        return 0.85
    if tp_size >= 2:
        return 0.87
    return 0.88


def default_max_running_requests(tokens: int, context_length: int) -> int:
    """clamp(tokens / ctx * 512, 2048, 4096), never above tokens // 2 (reference)."""
    return min(max(int(tokens * 512 // context_length), 2048), 4096, tokens // 2)


def min_mem_fraction_static(avail: int, pre: int) -> float:
    """The smallest mem_fraction_static (in 1/1000) with `avail - pre * (1 - mfs) > 0`."""
    need = (1 - Fraction(avail, pre)) * 1000
    milli = math.ceil(need)
    if milli == need:  # exactly on the boundary the budget is 0, still not enough
        milli += 1
    return milli / 1000


def resolve_model_dtype(dtype: str, shape: ModelShape) -> str:
    """`auto` follows the checkpoint, except float32 checkpoints run in bfloat16 (SGLang
    and vLLM downcast them; they pick float16 for non-Gemma models, the same 2 bytes)."""
    if dtype == "auto":
        return "bfloat16" if shape.torch_dtype == "float32" else shape.torch_dtype
    try:
        return _MODEL_DTYPES[dtype]
    except KeyError:
        raise KvPlanError(
            f"dtype {dtype!r} is not one of {sorted(_MODEL_DTYPES)} or auto"
        ) from None


def resolve_kv_dtype(
    kv_cache_dtype: str, model_dtype: str, shape: ModelShape
) -> tuple[str, str, str]:
    """-> (choice name, logical dtype, storage dtype). `auto` takes the FP8 KV quantization
    the checkpoint declares, else the model dtype, and names it with a choice of the leaf
    (bfloat16 -> bf16, float16 -> float16, float8_e4m3fn -> fp8_e4m3) so the configurator can
    write it back. A float32 checkpoint under dtype auto runs, and caches KV, in bfloat16
    (`resolve_model_dtype`); only an explicit --dtype float32 reaches float32 KV, which
    the leaf cannot name, so that one asks for an explicit --kv-cache-dtype."""
    if kv_cache_dtype in _UNSUPPORTED_KV_DTYPES:
        raise KvPlanError(
            f"kv_cache_dtype={kv_cache_dtype} is block-scaled; the planner sizes "
            f"{', '.join(sorted(KV_DTYPES))} (use fp8_e4m3 for an 8-bit estimate)"
        )
    if kv_cache_dtype == "auto":
        choice = shape.kv_quant_dtype or model_dtype
        logical, storage = KV_DTYPES[choice]
        if logical not in _KV_CHOICE_FOR:
            raise KvPlanError(
                f"kv_cache_dtype=auto would store the KV cache in {logical} (the model dtype), "
                "which kv_cache_dtype cannot name, so the resolved value could not be written "
                "back; pass --kv-cache-dtype bf16 (or float16, fp8_e4m3) explicitly"
            )
        return _KV_CHOICE_FOR[logical], logical, storage
    if kv_cache_dtype not in KV_DTYPES:
        raise KvPlanError(f"kv_cache_dtype {kv_cache_dtype!r} is not one of {sorted(KV_DTYPES)}")
    logical, storage = KV_DTYPES[kv_cache_dtype]
    return kv_cache_dtype, logical, storage


def stage_layers(num_layers: int, pp_size: int) -> list[tuple[int, int]]:
    """SGLang's partition: equal slices, the last stage takes the remainder."""
    if pp_size > num_layers:
        raise KvPlanError(f"pp_size={pp_size} exceeds the model's {num_layers} layers")
    per = num_layers // pp_size
    return [(r * per, num_layers if r == pp_size - 1 else (r + 1) * per) for r in range(pp_size)]


def _exact(x: float) -> Fraction:
    return Fraction(str(x))


def _ceil_to(n: int, page: int) -> int:
    return -(-n // page) * page


@attrs.frozen
class _StageSizing:
    """One pipeline stage under one mem_fraction_static (before any check)."""

    plan: StagePlan  # kv_budget = rest - mamba state; may be <= 0 here
    avail: int  # pre - weights - draft weights on this stage
    weights: int
    draft_weights: int
    mamba_bytes: int

    @property
    def per_token(self) -> Fraction:
        return self.plan.cell.bytes_per_token

    def where(self, pp_size: int) -> str:
        if pp_size == 1:
            return ""
        start, end = self.plan.layers
        return f" on pipeline stage pp_rank={self.plan.rank} of {pp_size} (layers {start}-{end - 1})"


@attrs.frozen
class _Sizing:
    """Every stage under one mem_fraction_static."""

    slack: int
    stages: tuple[_StageSizing, ...]

    def short(self) -> _StageSizing | None:
        """The binding stage of a budget at or below zero: the least budget, then the most
        bytes per token (stages with equal budgets: the one with more layers)."""
        short = [st for st in self.stages if st.plan.kv_budget <= 0]
        return min(short, key=lambda st: (st.plan.kv_budget, -st.per_token)) if short else None

    def binding(self) -> _StageSizing | None:
        """The stage with the fewest token slots (None: no stage keeps a KV cache)."""
        sized = [st for st in self.stages if st.plan.tokens_fit >= 0]
        return min(sized, key=lambda st: st.plan.tokens_fit) if sized else None

    def mamba_slots(self) -> int | None:
        slots = [st.plan.mamba_slots for st in self.stages if st.plan.mamba_slots is not None]
        return min(slots) if slots else None


@attrs.frozen
class _Sizer:
    """The part of the plan that depends on mem_fraction_static, as a function of it: the
    plan sizes once with the operator's value, and an error sizes again to find the value
    that would work, with the very same arithmetic (no second formula to drift)."""

    shape: ModelShape
    settings: PlanSettings
    pre: int
    weights: int
    draft_weights: int
    draft_layers: int
    per_layer: int
    per_layer_draft: int
    split_swa: bool
    swa_r: Fraction
    mamba_r: Fraction
    slot_bytes_per_layer: int
    page: int
    mm_reserve: int = 0  # text-only planning (module docstring)

    def size(self, mfs: Fraction) -> _Sizing:
        s, shape, page = self.settings, self.shape, self.page
        slack = math.floor(self.pre * (1 - mfs))
        stages: list[_StageSizing] = []
        for rank, (start, end) in enumerate(stage_layers(shape.num_layers, s.pp_size)):
            kinds = shape.layer_kinds[start:end]
            last = rank == s.pp_size - 1
            stage_draft = self.draft_layers if last else 0
            stage_draft_weights = self.draft_weights if last else 0
            avail = self.pre - self.weights - stage_draft_weights
            rest = avail - slack - self.mm_reserve
            full = shape.count(LayerKind.FULL, kinds) + shape.count(LayerKind.MLA, kinds)
            sliding = shape.count(LayerKind.SLIDING, kinds)
            if not self.split_swa:
                full, sliding = full + sliding, 0
            linear_layers = shape.count(LayerKind.LINEAR, kinds)
            mamba_bytes, slots = 0, None
            if linear_layers:
                bps = linear_layers * self.slot_bytes_per_layer
                if s.max_mamba_cache_size is not None:
                    slots = s.max_mamba_cache_size
                else:
                    # The state budget is r / (1 + r) of the rest (r = mamba_full_memory_ratio).
                    slots = max(0, math.floor(rest * self.mamba_r / (1 + self.mamba_r))) // bps
                mamba_bytes = slots * bps
            kv_budget = rest - mamba_bytes
            cell = Cell(
                per_layer_full=self.per_layer,
                per_layer_swa=self.per_layer if self.split_swa else 0,
                full_layers=full,
                swa_layers=sliding,
                draft_layers=stage_draft,
                per_layer_draft=self.per_layer_draft,
                swa_ratio=self.swa_r if self.split_swa else None,
            )
            per_token = cell.bytes_per_token
            fit = -1  # no KV layer on this stage
            if per_token:
                fit = math.floor(kv_budget / per_token) // page * page if kv_budget > 0 else 0
            stages.append(
                _StageSizing(
                    StagePlan(rank, (start, end), cell, kv_budget, fit, slots),
                    avail,
                    self.weights,
                    stage_draft_weights,
                    mamba_bytes,
                )
            )
        return _Sizing(slack, tuple(stages))

    def per_request_slots(self) -> int:
        """Mamba slots one running request holds: its own state, plus (with the radix cache)
        about two cached checkpoints, plus ping-pong buffers under the extra-buffer strategy."""
        s = self.settings
        slots = 1 if s.disable_radix_cache else 3
        if s.enable_mamba_extra_buffer:
            slots += 1 if s.disable_overlap_schedule else 2
        return slots

    def fits_one_request(self, sizing: _Sizing, ctx: int) -> bool:
        """Memory holds one request of `ctx` tokens (the operator's max_total_tokens aside):
        every stage has a budget, the pool has `ctx` slots, the SWA pool a window, and the
        mamba pool one request's slots."""
        binding = sizing.binding()
        if sizing.short() is not None or binding is None:
            return False
        tokens = binding.plan.tokens_fit
        if tokens < ctx or default_max_running_requests(tokens, ctx) < 1:
            return False
        ratio = binding.plan.cell.swa_ratio
        if ratio is not None:
            swa = math.floor(tokens * ratio) // self.page * self.page
            if not (self.shape.sliding_window or 0) + self.page < swa:
                return False
        slots = sizing.mamba_slots()
        return slots is None or slots >= self.per_request_slots()

    def min_fraction_for(self, ctx: int) -> float | None:
        """The smallest mem_fraction_static (in 1/1000) whose plan holds one request of `ctx`
        tokens, or None when not even 1.0 does. Every quantity grows with the fraction (less
        slack: more rest, more tokens, more mamba slots), so a bisection finds it."""
        if not self.fits_one_request(self.size(Fraction(1)), ctx):
            return None
        lo, hi = 0, 1000  # fits at hi; not known at lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fits_one_request(self.size(Fraction(mid, 1000)), ctx):
                hi = mid
            else:
                lo = mid
        return hi / 1000

    def one_request_bytes(self, stage: _StageSizing, ctx: int) -> Fraction:
        """KV bytes one request of `ctx` tokens takes on `stage` (page-rounded)."""
        return _ceil_to(ctx, self.page) * stage.per_token


def plan_kv(
    shape: ModelShape, settings: PlanSettings, memory: DeviceMemory
) -> KvPlan:
    s = settings
    decisions: list[Decision] = []
    notes: list[str] = []

    # --- load-time resolutions (each becomes a write-back) --------------------------------
    dtype = resolve_model_dtype(s.dtype, shape)
    if s.dtype == "auto":
        decisions.append(Decision("kv_pool.resolve_dtype", "dtype", dtype))
    kv_choice, kv_dtype, kv_storage = resolve_kv_dtype(s.kv_cache_dtype, dtype, shape)
    if s.kv_cache_dtype == "auto":
        decisions.append(Decision("kv_pool.resolve_kv_cache_dtype", "kv_cache_dtype", kv_choice))
    page = s.page_size
    if page is None:
        page = _BACKEND_PAGE_SIZE.get(s.attention_backend or "", 1)
        decisions.append(Decision("kv_pool.resolve_page_size", "page_size", page))
    ctx = s.context_length
    if ctx is None:
        ctx = shape.context_length
        decisions.append(Decision("kv_pool.resolve_context_length", "context_length", ctx))
    elif ctx > shape.context_length:
        raise KvPlanError(
            f"context_length={ctx} exceeds the {shape.context_length} tokens {shape.source} "
            "was trained for (max_position_embeddings); lower --context-length"
        )
    mfs = s.mem_fraction_static
    if mfs is None:
        mfs = default_mem_fraction_static(s.tp_size)
        decisions.append(
            Decision("kv_pool.default_mem_fraction_static", "mem_fraction_static", mfs)
        )

    # --- speculative sizing: one bound D for headroom and buffers -------------------------
    spec_on = s.speculative_algorithm is not None
    # D is the resolved bound (max_speculative_num_draft_tokens, pinned at publish; 0 without
    # a draft algorithm). The active count never sizes anything: with speculation off it is
    # ignored, and with it on the context's capacity check keeps it <= D. A pure caller that
    # breaks that is refused instead of silently getting rows the buffers disagree with.
    bound = s.max_speculative_num_draft_tokens
    active = s.speculative_num_draft_tokens
    if spec_on and active is not None and active > bound:
        raise KvPlanError(
            f"speculative_num_draft_tokens={active} exceeds its capacity "
            f"max_speculative_num_draft_tokens={bound}; the sizes take the bound, so the "
            "active count must stay within it"
        )
    # The alloc-length formula itself needs the draft steps and branching; unset means one
    # step and one branch (the geometry's neutral values). They do not feed D.
    geometry = DecodeGeometry(spec_on, page, s.attn_dcp_size)
    if spec_on:
        geometry = attrs.evolve(
            geometry,
            num_steps=s.speculative_num_steps or geometry.num_steps,
            eagle_topk=s.speculative_eagle_topk or geometry.eagle_topk,
        )
    spec = SpecSizing(
        enabled=spec_on,
        algorithm=s.speculative_algorithm,
        num_steps=geometry.num_steps,
        eagle_topk=geometry.eagle_topk,
        active_draft_tokens=active,
        max_draft_tokens=bound,
        alloc_len_per_decode=get_alloc_len_per_decode(geometry, max_draft_tokens=bound),
        alloc_reserve_per_decode=get_alloc_reserve_per_decode(geometry, max_draft_tokens=bound),
        extra_context_len=get_req_to_token_extra_context_len(geometry, max_draft_tokens=bound),
    )
    draft_layers = 0
    if spec_on and (s.speculative_algorithm or "").upper() not in _MODEL_FREE_DRAFTS:
        draft_layers = shape.num_nextn_predict_layers or 1

    # --- geometry per layer ---------------------------------------------------------------
    tpa = s.attn_tp_size
    kv_bytes = DTYPE_BYTES[kv_storage]
    kv_heads = max(1, shape.num_key_value_heads // tpa)  # replicated below one head per rank
    if shape.mla is not None:
        latent = shape.mla.kv_lora_rank + shape.mla.qk_rope_head_dim
        per_layer = latent * kv_bytes  # one latent per token, shared by every head and rank
    else:
        per_layer = kv_heads * (shape.head_dim + shape.v_head_dim) * kv_bytes
    draft_dtype, draft_storage = kv_dtype, kv_storage
    if s.speculative_draft_kv_cache_dtype not in (None, "auto"):
        draft_choice = s.speculative_draft_kv_cache_dtype or ""
        _, draft_dtype, draft_storage = resolve_kv_dtype(draft_choice, dtype, shape)
    per_layer_draft = per_layer // kv_bytes * DTYPE_BYTES[draft_storage]
    split_swa = shape.is_hybrid_swa and not s.disable_hybrid_swa_memory

    # --- weights --------------------------------------------------------------------------
    dtype_b = DTYPE_BYTES[dtype]
    ranks = s.tp_size * s.pp_size
    if memory.weight_bytes is not None:
        weights = memory.weight_bytes
    else:
        weights = -(-shape.weights.bytes(dtype_b) // ranks)
        notes.append(
            "weights are estimated from the model config (pass --weight-bytes to use a measured size)"
        )
    layer_bytes = shape.weights.bytes(dtype_b) - shape.weights.embedding_params * dtype_b
    draft_weights = -(-draft_layers * layer_bytes // (shape.num_layers * s.tp_size))
    if memory.draft_weight_bytes is not None:
        draft_weights = memory.draft_weight_bytes if draft_layers else 0

    # --- mamba state geometry ---------------------------------------------------------------
    linear = shape.linear
    conv_dtype, ssm_dtype = dtype, (
        s.mamba_ssm_dtype or (linear.ssm_dtype if linear else None) or "float32"
    )
    slot_bytes_per_layer = 0
    if linear is not None:
        conv = (linear.conv_dim // tpa) * (linear.conv_kernel - 1) * DTYPE_BYTES[conv_dtype]
        temporal = (
            (linear.num_heads // tpa) * linear.head_dim * linear.state_size * DTYPE_BYTES[ssm_dtype]
        )
        slot_bytes_per_layer = conv + temporal

    # --- per stage: budget, mamba state, tokens that fit ----------------------------------
    sizer = _Sizer(
        shape=shape,
        settings=s,
        pre=memory.pre_bytes,
        weights=weights,
        draft_weights=draft_weights,
        draft_layers=draft_layers,
        per_layer=per_layer,
        per_layer_draft=per_layer_draft,
        split_swa=split_swa,
        swa_r=_exact(s.swa_full_tokens_ratio),
        mamba_r=_exact(s.mamba_full_memory_ratio),
        slot_bytes_per_layer=slot_bytes_per_layer,
        page=page,
    )
    sizing = sizer.size(_exact(mfs))
    short = sizing.short()
    if short is not None:
        raise BudgetError(_budget_message(sizer, sizing, short, mfs, ctx))
    found = sizing.binding()
    if found is None:
        raise KvPlanError(f"{shape.source}: no layer keeps a KV cache; nothing to plan")
    binding = found.plan
    fit = binding.tokens_fit
    tokens = fit
    if s.max_total_tokens is not None and s.max_total_tokens < tokens:
        tokens = s.max_total_tokens // page * page
        notes.append(f"max_total_tokens={s.max_total_tokens} caps the pool")
    if ctx > tokens:
        raise ContextTooLongError(_context_message(sizer, found, tokens, mfs, ctx))
    swa_tokens = None
    if binding.cell.swa_ratio is not None:
        swa_tokens = math.floor(tokens * binding.cell.swa_ratio) // page * page
        window = shape.sliding_window or 0
        if not window + page < swa_tokens:
            raise KvPlanError(
                f"the SWA pool ({swa_tokens} tokens = {tokens} x swa_full_tokens_ratio "
                f"{float(binding.cell.swa_ratio)}) cannot hold one window of {window} tokens plus a "
                "page; raise --swa-full-tokens-ratio or pass --disable-hybrid-swa-memory"
            )
    mamba_slots = sizing.mamba_slots()
    if mamba_slots is not None and s.max_mamba_cache_size is None:
        decisions.append(Decision("mamba_pool.memory_budget", "max_mamba_cache_size", mamba_slots))

    # --- requests ---------------------------------------------------------------------------
    per_request_slots = None
    if s.max_running_requests is not None:
        max_reqs = max(1, s.max_running_requests // s.attn_dp_size)
    else:
        max_reqs = default_max_running_requests(tokens, ctx)
    if mamba_slots is not None:
        per_request_slots = sizer.per_request_slots()
        max_reqs = min(max_reqs, mamba_slots // per_request_slots)
    if max_reqs < 1:
        if s.max_mamba_cache_size is not None and mamba_slots is not None:
            fix = f"raise --max-mamba-cache-size to at least {per_request_slots}"
        else:
            fix = _memory_fix(sizer, found, ctx)
        raise KvPlanError(
            f"the pools hold {tokens} tokens and {mamba_slots} mamba slots: not one request "
            f"can run; {fix}"
        )
    if s.max_running_requests is None:
        # Written back as the total over attention-DP shards, so a reconfigure that reads it
        # (value // attn_dp_size) lands on the same per-shard count.
        decisions.append(
            Decision(
                "kv_pool.default_max_running_requests",
                "max_running_requests",
                max_reqs * s.attn_dp_size,
            )
        )

    # --- tensors ----------------------------------------------------------------------------
    pools = _pool_tensors(
        shape,
        binding.cell,
        tokens,
        swa_tokens,
        page,
        kv_heads,
        (kv_dtype, kv_storage),
        (draft_dtype, draft_storage),
    )
    rank_start, rank_end = binding.layers
    linear_here = shape.count(LayerKind.LINEAR, shape.layer_kinds[rank_start:rank_end])
    if linear is not None and mamba_slots is not None and linear_here:
        pools += (
            PoolTensor(
                "mamba_conv",
                1,
                (linear_here, mamba_slots + 1, linear.conv_dim // tpa, linear.conv_kernel - 1),
                conv_dtype,
                conv_dtype,
            ),
            PoolTensor(
                "mamba_temporal",
                1,
                (
                    linear_here,
                    mamba_slots + 1,
                    linear.num_heads // tpa,
                    linear.head_dim,
                    linear.state_size,
                ),
                ssm_dtype,
                ssm_dtype,
            ),
        )
    spec_buffers: tuple[PoolTensor, ...] = ()
    if spec_on and bound > 0:
        d = bound
        spec_buffers = (
            PoolTensor("draft_token_ids", 1, (max_reqs, d), "int64", "int64"),
            PoolTensor("draft_positions", 1, (max_reqs, d), "int64", "int64"),
            PoolTensor("retrieve_index", 1, (max_reqs, d), "int64", "int64"),
            PoolTensor("tree_mask", 1, (max_reqs, d, d), "bool", "bool"),
            PoolTensor(
                "out_cache_loc", 1, (max_reqs * spec.alloc_reserve_per_decode,), "int64", "int64"
            ),
        )
    req_shape = (max_reqs + 1, ctx + spec.extra_context_len)

    full_bytes = (
        binding.cell.per_layer_full * binding.cell.full_layers
        + binding.cell.per_layer_draft * binding.cell.draft_layers
    )
    kv_used = tokens * full_bytes
    if swa_tokens is not None:
        kv_used += swa_tokens * binding.cell.per_layer_swa * binding.cell.swa_layers
    kv_pool_bytes = sum(p.nbytes for p in pools if not p.name.startswith("mamba_"))
    budget = Budget(
        pre=memory.pre_bytes,
        weights=found.weights,
        draft_weights=found.draft_weights,
        avail=found.avail,
        slack=sizing.slack,
        multimodal_reserve=sizer.mm_reserve,
        mamba_state=(mamba_slots or 0) * linear_here * slot_bytes_per_layer,
        kv_budget=binding.kv_budget,
        kv_bytes=kv_used,
        kv_padding=kv_pool_bytes - kv_used,
        req_to_token=req_shape[0] * req_shape[1] * DTYPE_BYTES["int32"],
        spec_buffers=sum(p.nbytes for p in spec_buffers),
    )
    return KvPlan(
        model=shape.name,
        settings=settings,
        dtype=dtype,
        kv_cache_dtype=kv_choice,
        kv_dtype=kv_dtype,
        page_size=page,
        context_length=ctx,
        mem_fraction_static=mfs,
        budget=budget,
        cell=binding.cell,
        stages=tuple(st.plan for st in sizing.stages),
        binding_stage=binding.rank,
        max_total_num_tokens=tokens,
        swa_tokens=swa_tokens,
        mamba_slots=mamba_slots,
        mamba_slots_per_request=per_request_slots,
        max_running_requests=max_reqs,
        req_to_token_shape=req_shape,
        spec=spec,
        pools=pools,
        spec_buffers=spec_buffers,
        decisions=tuple(decisions),
        notes=tuple(notes),
    )


# --- error messages: each says what binds and the value that would work ----------------------


def _memory_fix(sizer: _Sizer, stage: _StageSizing, ctx: int) -> str:
    """How to free enough memory for one request of `ctx` tokens: the mem_fraction_static
    that does it (sized with the plan's own arithmetic), or why none does."""
    fit = sizer.min_fraction_for(ctx)
    if fit is not None:
        return f"raise --mem-fraction-static to at least {fit} to fit one request of context_length={ctx}"
    # At 1.0 (no slack at all) the stage keeps its whole avail; say how far that is short.
    best = sizer.size(Fraction(1)).stages[stage.plan.rank]
    return (
        f"no mem_fraction_static fits one request of context_length={ctx}: it needs "
        f"{_gib(sizer.one_request_bytes(best, ctx))} of KV{stage.where(sizer.settings.pp_size)}, "
        f"and at most {_gib(max(0, best.plan.kv_budget))} is left after the weights even at "
        "1.0; raise --tp-size, use --kv-cache-dtype fp8_e4m3, or lower --context-length"
    )


def _budget_message(
    sizer: _Sizer, sizing: _Sizing, short: _StageSizing, mfs: float, ctx: int
) -> str:
    s = sizer.settings
    # The fraction at which every stage's budget turns positive (SGLang's hint); a fixed
    # mamba pool (operator's max_mamba_cache_size) is taken off first, a sized one shrinks.
    fixed_mamba = s.max_mamba_cache_size is not None
    positive = max(
        min_mem_fraction_static(
            st.avail - sizer.mm_reserve - (st.mamba_bytes if fixed_mamba else 0), sizer.pre
        )
        for st in sizing.stages
    )
    head = (
        f"no memory left for the KV cache{short.where(s.pp_size)}: pre-load free "
        f"{_gib(sizer.pre)}, weights {_gib(short.weights + short.draft_weights)}, slack "
        f"{_gib(sizing.slack)} (1 - mem_fraction_static={mfs})"
        + (f", mamba state {_gib(short.mamba_bytes)}" if short.mamba_bytes else "")
        + f" leave {_gib(short.plan.kv_budget)}"
    )
    if positive > 1:
        return (
            f"{head}; no mem_fraction_static is enough: the weights alone fill the device; "
            "raise --tp-size (or --pp-size) or use a larger device"
        )
    return f"{head}; {_memory_fix(sizer, short, ctx)} ({positive} only makes the KV budget positive)"


def _context_message(
    sizer: _Sizer, binding: _StageSizing, tokens: int, mfs: float, ctx: int
) -> str:
    s, page = sizer.settings, sizer.page
    fit = binding.plan.tokens_fit  # what memory holds, before the operator's cap
    cap = s.max_total_tokens
    head = f"one request of context_length={ctx} does not fit"
    # Only a positive context is ever suggested: a pool below one page has none to offer.
    shorter = f" or set --context-length {tokens}" if tokens > 0 else ""
    if fit >= ctx and cap is not None:
        # Memory is not the limit, the operator's cap is: say so, and no memory advice.
        return (
            f"{head}: max_total_tokens={cap} caps the KV pool at {tokens} tokens (memory holds "
            f"{fit}); raise --max-total-tokens to at least {_ceil_to(ctx, page)}{shorter}"
        )
    where = binding.where(s.pp_size)
    if tokens > 0:
        largest = (
            f"the KV pool{where} holds {tokens} tokens at mem_fraction_static={mfs}; the "
            f"largest context that fits is {tokens} (set --context-length {tokens})"
        )
    else:
        largest = (
            f"the KV pool{where} holds {fit} tokens at mem_fraction_static={mfs}: not one "
            f"page of {page} tokens fits"
        )
    capped = (
        f" (max_total_tokens={cap} caps it too)" if cap is not None and cap < ctx else ""
    )
    return f"{head}: {largest}{capped}; {_memory_fix(sizer, binding, ctx)}"


def _pool_tensors(
    shape: ModelShape,
    cell: Cell,
    tokens: int,
    swa_tokens: int | None,
    page: int,
    kv_heads: int,
    kv: tuple[str, str],
    draft: tuple[str, str],
) -> tuple[PoolTensor, ...]:
    """Per-layer KV tensors; every pool has `tokens + page` rows because slot 0's page is a
    dummy that padded tokens write into."""
    rows = tokens + page
    out: list[PoolTensor] = []
    (kv_dtype, kv_storage), (draft_dtype, draft_storage) = kv, draft
    if shape.mla is not None:
        latent = shape.mla.kv_lora_rank + shape.mla.qk_rope_head_dim
        out.append(PoolTensor("kv", cell.full_layers, (rows, 1, latent), kv_dtype, kv_storage))
        if cell.draft_layers:
            out.append(
                PoolTensor(
                    "draft_kv", cell.draft_layers, (rows, 1, latent), draft_dtype, draft_storage
                )
            )
        return tuple(out)
    k_row, v_row = (kv_heads, shape.head_dim), (kv_heads, shape.v_head_dim)
    if cell.full_layers:
        out.append(PoolTensor("k", cell.full_layers, (rows, *k_row), kv_dtype, kv_storage))
        out.append(PoolTensor("v", cell.full_layers, (rows, *v_row), kv_dtype, kv_storage))
    if swa_tokens is not None and cell.swa_layers:
        swa_rows = swa_tokens + page
        out.append(PoolTensor("k_swa", cell.swa_layers, (swa_rows, *k_row), kv_dtype, kv_storage))
        out.append(PoolTensor("v_swa", cell.swa_layers, (swa_rows, *v_row), kv_dtype, kv_storage))
    if cell.draft_layers:
        out.append(
            PoolTensor("draft_k", cell.draft_layers, (rows, *k_row), draft_dtype, draft_storage)
        )
        out.append(
            PoolTensor("draft_v", cell.draft_layers, (rows, *v_row), draft_dtype, draft_storage)
        )
    return tuple(out)


def _gib(n: int | Fraction) -> str:
    return f"{float(n) / GiB:.2f} GiB"
