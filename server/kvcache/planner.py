"""The KV pool plan as pure arithmetic: model shape + resolved settings + device memory in,
a frozen `KvPlan` out. No torch and no config context here, so it is cheap (the plan
command and tests call it directly) and every number can be checked by hand.

`plan_kv` reads as its steps: resolve the load-time values it sizes, size the speculative
headroom, the per-layer geometry and the weights, then the budget (under
mem_fraction_static), the tokens, the mamba slots, the requests, and finally the tensors
and the budget record. The SGLang functions each step follows, and where the plan
deliberately differs, are in docs/PLAN.md; in short:

- weights shard evenly over tp x pp ranks; draft weights are the target's average decoder
  layer times the draft layer count;
- EAGLE-like drafts (EAGLE, EAGLE3, NEXTN, ...) have the geometry of one target attention
  layer; NGRAM has no draft model and so no draft KV;
- mamba/linear state shards over the attention TP width like the attention heads;
- the KV padding page, req_to_token and the speculative buffers are paid from the slack,
  as in SGLang; the mamba padding slot is paid inside the mamba share, as in SGLang;
- the multimodal encoder reserve is zero (text-only planning).

What the hardware and the model decide (the default mem_fraction_static, the page size an
attention backend forces, Gemma-2's full sliding-window pool) the planner does not decide
again: the schema's rules resolve those leaves at publish (schema/rules.yaml) and the plan
reads them as given. It writes back only what it sizes or reads off the model: the
`auto` dtypes, the context length, the request cap and the mamba slots.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

from configbags.server.kvcache.allocation_sizing import (
    DecodeGeometry,
    get_alloc_len_per_decode,
    get_alloc_reserve_per_decode,
    get_req_to_token_extra_context_len,
)
from configbags.server.kvcache.defaults import (
    GiB,
    default_max_running_requests,
    mamba_slots_per_request,
)
from configbags.server.kvcache.errors import (
    BudgetError,
    ContextTooLongError,
    DoesNotFitError,
    KvPlanError,
    SettingsError,
)
from configbags.server.kvcache.mamba import MambaGeometry, mamba_geometry
from configbags.server.kvcache.messages import (
    Request,
    budget_message,
    context_message,
    gib,
    memory_fix,
    requests_fix,
    swa_fix,
)
from configbags.server.kvcache.model_shape import DTYPE_BYTES, ModelShape
from configbags.server.kvcache.records import (
    Budget,
    Cell,
    Concurrency,
    Decision,
    KvPlan,
    MambaSlots,
    PoolTensor,
    SpecSizing,
    StagePlan,
)
from configbags.server.kvcache.settings import (
    KV_DTYPES,
    DeviceMemory,
    PlanSettings,
    WrittenLeaf,
    resolve_kv_dtype,
    resolve_model_dtype,
)
from configbags.server.kvcache.sizing import (
    Sizer,
    Sizing,
    StageSizing,
    ceil_to,
    exact,
    min_mem_fraction_static,
    stage_layers,
    stages_of,
)
from configbags.server.kvcache.tensors import kv_tensors, mamba_tensors, spec_buffers
from configbags.server.kvcache.validate import validate_settings
from configbags.server.rules import reserved_memory_bytes

# Which SGLang the plan models (docs/PLAN.md): one snapshot of SGLang's main branch, the
# newest whose sizing code could be read, named by its commit.
SGLANG_NAME = "SGLang main @ 003fca80"
SGLANG_VERSION = (
    f"{SGLANG_NAME} (mem_cache/kv_cache_configurator.py, model_executor/pool_configurator.py, "
    "arg_groups/memory_hook.py, arg_groups/overrides.py; after v0.5.3)"
)

_T = TypeVar("_T")

# Draft algorithms without a draft model, hence without draft KV layers.
_MODEL_FREE_DRAFTS = frozenset({"NGRAM", "LOOKAHEAD"})
# req_to_token holds each request's KV slot indices as int32: no pool holds more tokens
TOKEN_INDEX_MAX = 2**31 - 1


@attrs.define
class _Log:
    """What a plan says besides its numbers: write-backs, notes, warnings, differences."""

    decisions: list[Decision] = attrs.Factory(list)
    notes: list[str] = attrs.Factory(list)
    warnings: list[str] = attrs.Factory(list)
    differences: list[str] = attrs.Factory(list)

    def decide(self, source: str, leaf: WrittenLeaf, value: object) -> None:
        self.decisions.append(Decision(source, leaf, value))


@attrs.frozen
class _Resolved:
    """The load-time values, resolved."""

    dtype: str
    kv_choice: str
    kv: tuple[str, str]  # (logical, storage)
    draft_kv: tuple[str, str]
    page: int
    ctx: int
    mfs: float
    split_swa: bool
    activation_reserve: int


@attrs.frozen
class _Geometry:
    """Per-layer bytes per token and the draft layer count."""

    kv_heads: int
    per_layer: int
    per_layer_draft: int
    draft_layers: int
    mamba: MambaGeometry | None


def plan_kv(
    shape: ModelShape,
    settings: PlanSettings,
    memory: DeviceMemory,
    *,
    require_full_context: bool = False,
    workload_tokens: int | None = None,
) -> KvPlan:
    """Plan the pools. A context longer than the pool caps the request length, as SGLang
    does (with a warning); `require_full_context` makes that a ContextTooLongError.
    `workload_tokens` (prompt + output of one request) is what a refusal's hint sizes for
    when the full context is not required."""
    validate_settings(shape, settings)
    log = _Log(warnings=list(shape.warnings))
    resolved = _resolve(shape, settings, memory, log)
    spec = _spec_sizing(settings, resolved.page)
    geometry = _geometry(shape, settings, resolved, spec)
    sizer = _sizer(shape, settings, memory, resolved, geometry, spec, log)
    request = Request(resolved.ctx, workload_tokens, require_full_context)
    sizing, binding = _size_budget(sizer, resolved, request)
    tokens = _tokens(sizer, binding, resolved, log, request)
    swa_tokens = _swa_tokens(sizer, binding, tokens, resolved.mfs)
    mamba = _mamba(sizing, binding, settings, log)
    max_reqs = _requests(sizer, binding, tokens, resolved, mamba, log, request)
    return _assemble(shape, settings, memory, resolved, spec, geometry, sizer, sizing, binding,
                     tokens, swa_tokens, mamba, max_reqs, log)


def concurrency(plan: KvPlan, request_tokens: int) -> Concurrency:
    """How many requests of `request_tokens` (prompt + output) the pools hold at once, as
    vLLM's "maximum concurrency for N tokens per request": the full pool over the page-
    rounded request, the SWA pool over the window each running request holds, the mamba
    pool over the slots a request holds, and the request cap; the least binds. A request
    longer than max_req_len fits 0 times: SGLang refuses it, and the reason says what to set."""
    if request_tokens > plan.max_req_len:
        return Concurrency(request_tokens, 0, "max_req_len", _too_long(plan, request_tokens))
    page = plan.page_size
    need = ceil_to(max(1, request_tokens), page)
    limits = [("kv tokens", plan.max_total_num_tokens // need)]
    if plan.swa_tokens is not None:
        hold = plan.swa_per_request or (plan.sliding_window or 0) + page
        window = ceil_to(min(request_tokens, hold), page)
        limits.append(("swa tokens", plan.swa_tokens // max(window, page)))
    if plan.mamba_slots is not None and plan.mamba_slots_per_request:
        limits.append(("mamba slots", plan.mamba_slots // plan.mamba_slots_per_request))
    limits.append(("max_running_requests", plan.max_running_requests))
    binds, requests = min(limits, key=lambda item: item[1])
    return Concurrency(request_tokens=request_tokens, requests=requests, binds=binds, limits=tuple(limits))


def _too_long(plan: KvPlan, request_tokens: int) -> str:
    head = (f"a request of {request_tokens:,} tokens is longer than max_req_len "
            f"{plan.max_req_len:,}, which SGLang refuses")
    trained = plan.trained_context_length
    if trained is not None and request_tokens >= trained:
        return (f"{head}: the model was trained for {trained:,} tokens (max_position_embeddings); "
                "shorten the requests")
    if plan.max_req_len < plan.context_length - 1:
        # SGLang admits min(context, pool) - 1 tokens: the pool must hold one more than the request
        need = ceil_to(request_tokens + 1, plan.page_size)
        memory = min(st.tokens_fit for st in plan.stages if st.tokens_fit >= 0)
        if plan.settings.max_total_tokens is not None and plan.max_total_num_tokens < memory and need <= memory:
            return (f"{head}: max_total_tokens={plan.settings.max_total_tokens} caps the KV pool at "
                    f"{plan.max_total_num_tokens:,} tokens; raise --max-total-tokens to at least {need}")
        return (f"{head}: the KV pool holds {plan.max_total_num_tokens:,} tokens; raise "
                "--mem-fraction-static or --tp-size, or use --kv-cache-dtype fp8_e4m3")
    return f"{head}: the context is {plan.context_length:,}; set --context-length {request_tokens + 1}"


# --- steps ------------------------------------------------------------------------------


def _decided(value: _T | None, leaf: str, fix: str) -> _T:
    """A leaf the schema's rules or fallbacks decide; the planner never guesses it."""
    if value is None:
        raise SettingsError(f"{leaf} is unresolved: no operator value, rule or schema fallback set it; {fix}")
    return value


def _resolve(shape: ModelShape, s: PlanSettings, memory: DeviceMemory, log: _Log) -> _Resolved:
    """Load-time values: each one the planner resolves becomes a write-back; the leaves the
    rules decide (page size, mem_fraction_static, hybrid SWA memory) are read as given."""
    dtype = resolve_model_dtype(s.dtype, shape)
    if s.dtype == "auto":
        log.decide("kv_pool.resolve_dtype", "dtype", dtype)
    kv_choice, kv_dtype, kv_storage = resolve_kv_dtype(s.kv_cache_dtype, dtype, shape)
    if s.kv_cache_dtype == "auto":
        log.decide("kv_pool.resolve_kv_cache_dtype", "kv_cache_dtype", kv_choice)
    draft = (kv_dtype, kv_storage)
    if s.speculative_draft_kv_cache_dtype not in (None, "auto"):
        _, *pair = resolve_kv_dtype(s.speculative_draft_kv_cache_dtype, dtype, shape)
        draft = (pair[0], pair[1])
    page = _decided(s.page_size, "page_size",
                    "pass --page-size, or give the leaf `fallback: 1` (SGLang's default) in its namespace file")
    ctx = s.context_length
    if ctx is None:
        ctx = shape.context_length
        log.decide("kv_pool.resolve_context_length", "context_length", ctx)
    elif ctx > shape.context_length:
        raise KvPlanError(
            f"context_length={ctx} exceeds the {shape.context_length} tokens {shape.source} "
            "was trained for (max_position_embeddings); lower --context-length"
        )
    dp_attention = s.enable_dp_attention or s.attn_dp_size > 1
    # The reserve SGLang's default fraction keeps, reported beside the budget (the same
    # function as the rule that derives mem_fraction_static).
    reserve = reserved_memory_bytes(memory.capacity, s.tp_size, s.pp_size,
                                    chunked_prefill_size=s.chunked_prefill_size,
                                    cuda_graph_max_bs_decode=s.cuda_graph_max_bs_decode,
                                    enable_dp_attention=dp_attention, dp_size=s.attn_dp_size,
                                    disable_cuda_graph=s.disable_cuda_graph,
                                    disable_decode_cuda_graph=s.disable_decode_cuda_graph)
    if s.mem_fraction_static is None and reserve >= memory.capacity:
        # the rule had the device's memory, and SGLang's reserve leaves nothing of it: the rule
        # gives no share, and asking for GPU facts would send the operator after what they gave
        raise SettingsError(
            f"mem_fraction_static is unresolved: the reserve SGLang keeps out of it for activations and "
            f"CUDA graphs, {gib(reserve)} (chunked_prefill_size {s.chunked_prefill_size}, "
            f"cuda_graph_max_bs_decode {s.cuda_graph_max_bs_decode}, tp_size {s.tp_size}, pp_size {s.pp_size}), "
            f"is not below the device's {gib(memory.capacity)} ({memory.source}), so the rule "
            "mem_fraction_static_from_gpu_memory gives no share; lower --chunked-prefill-size or "
            "--cuda-graph-max-bs-decode, or pass --mem-fraction-static"
        )
    mfs = _decided(
        s.mem_fraction_static, "mem_fraction_static",
        "pass --mem-fraction-static, or publish with GPU facts (Facts(GpuFacts(memory_bytes=...))) "
        "so a rule such as mem_fraction_static_from_gpu_memory derives it",
    )
    split_swa = shape.is_hybrid_swa and not s.disable_hybrid_swa_memory
    if shape.is_hybrid_swa and not split_swa:
        log.notes.append("disable_hybrid_swa_memory: every sliding-window layer is sized at full length")
    return _Resolved(dtype, kv_choice, (kv_dtype, kv_storage), draft, page, ctx, mfs, split_swa, reserve)


def _spec_sizing(s: PlanSettings, page: int) -> SpecSizing:
    """One draft-token bound D sizes the row headroom and every speculative buffer. D is the
    resolved bound (max_speculative_num_draft_tokens, pinned at publish; 0 without a draft
    algorithm); the active count never sizes anything, and a pure caller whose active
    count exceeds D is refused instead of getting rows the buffers disagree with."""
    spec_on = s.speculative_algorithm is not None
    bound = s.max_speculative_num_draft_tokens
    active = s.speculative_num_draft_tokens
    if spec_on and active is not None and active > bound:
        raise KvPlanError(
            f"speculative_num_draft_tokens={active} exceeds its capacity "
            f"max_speculative_num_draft_tokens={bound}; the sizes take the bound, so the "
            "active count must stay within it"
        )
    # Unset steps/branching mean one step and one branch (the neutral values).
    geometry = DecodeGeometry(spec_on, page, s.attn_dcp_size)
    if spec_on:
        geometry = attrs.evolve(
            geometry,
            num_steps=s.speculative_num_steps or geometry.num_steps,
            eagle_topk=s.speculative_eagle_topk or geometry.eagle_topk,
        )
    return SpecSizing(
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


def _geometry(shape: ModelShape, s: PlanSettings, r: _Resolved, spec: SpecSizing) -> _Geometry:
    """Bytes per token of one layer (`get_cell_size_per_token`), and the mamba state shape."""
    kv_bytes = DTYPE_BYTES[r.kv[1]]
    kv_heads = max(1, shape.num_key_value_heads // s.attn_tp_size)  # replicated below one a rank
    if shape.mla is not None:
        per_layer = (shape.mla.kv_lora_rank + shape.mla.qk_rope_head_dim) * kv_bytes  # one latent
    else:
        per_layer = kv_heads * (shape.head_dim + shape.v_head_dim) * kv_bytes
    draft_layers = 0
    if spec.enabled and (s.speculative_algorithm or "").upper() not in _MODEL_FREE_DRAFTS:
        draft_layers = shape.num_nextn_predict_layers or 1
    mamba = None
    if shape.linear is not None:
        ssm = s.mamba_ssm_dtype or shape.linear.ssm_dtype or "float32"
        mamba = mamba_geometry(shape.linear, s.attn_tp_size, r.dtype, ssm)
    return _Geometry(kv_heads, per_layer, per_layer // kv_bytes * DTYPE_BYTES[r.draft_kv[1]],
                     draft_layers, mamba)


def _sizer(shape: ModelShape, s: PlanSettings, memory: DeviceMemory, r: _Resolved,
           g: _Geometry, spec: SpecSizing, log: _Log) -> Sizer:
    """Weights per rank (measured or estimated, quantization included) and everything else
    the budget needs but mem_fraction_static."""
    dtype_b = DTYPE_BYTES[r.dtype]
    if memory.weight_bytes is not None:
        weights = memory.weight_bytes
    else:
        weights = shape.weights.per_rank(dtype_b, s.tp_size, s.pp_size)
        quant = shape.weights.quant_method
        log.notes.append(
            "weights are estimated from the model config"
            + (f" ({quant} quantized)" if quant else "")
            + " (pass --weight-bytes to use a measured size)"
        )
    layer_bytes = shape.weights.decoder_bytes(dtype_b)
    draft_weights = -(-g.draft_layers * layer_bytes // (shape.num_layers * s.tp_size))
    if memory.draft_weight_bytes is not None:
        draft_weights = memory.draft_weight_bytes if g.draft_layers else 0
    slots_per_request = mamba_slots_per_request(
        disable_radix_cache=s.disable_radix_cache,
        extra_buffer=s.enable_mamba_extra_buffer,
        extra_buffer_lazy=s.enable_mamba_extra_buffer_lazy,
        disable_overlap_schedule=s.disable_overlap_schedule,
    )
    return Sizer(
        shape=shape,
        settings=s,
        pre=memory.pre_bytes,
        weights=weights,
        draft_weights=draft_weights,
        draft_layers=g.draft_layers,
        per_layer=g.per_layer,
        per_layer_draft=g.per_layer_draft,
        split_swa=r.split_swa,
        swa_r=exact(s.swa_full_tokens_ratio),
        mamba_layer_bytes=0 if g.mamba is None else g.mamba.layer_bytes,
        slots_per_request=slots_per_request,
        spec_draft_tokens=spec.max_draft_tokens if spec.enabled else 0,
        page=r.page,
        activation_reserve=r.activation_reserve,
        stages=stages_of(shape, s.pp_size),
        swa_cap=_swa_cap(shape, s, r, spec),
        swa_per_request=_swa_per_request(shape, s, r, spec),
    )


# Decode batches between SWA out-of-window evictions (SGLang's SGLANG_SWA_EVICTION_INTERVAL).
SWA_EVICTION_INTERVAL = 128


def _swa_per_request(shape: ModelShape, s: PlanSettings, r: _Resolved, spec: SpecSizing) -> int | None:
    """SWA tokens one running request holds at most (SGLang's per-request SWA bound): its
    window, `eviction_interval * draft_tokens` tokens not yet evicted, a page of padding
    and its decode allocation."""
    window = shape.sliding_window
    if not r.split_swa or window is None:
        return None
    page = r.page
    draft_tokens = s.speculative_num_draft_tokens or 1
    if not spec.enabled:
        decode_alloc = page
    elif s.disable_overlap_schedule:
        decode_alloc = spec.alloc_len_per_decode
    else:  # the overlap allocator keeps two decode allocations outstanding
        decode_alloc = 2 * spec.alloc_len_per_decode
    return window + SWA_EVICTION_INTERVAL * draft_tokens + page + decode_alloc


def _swa_cap(shape: ModelShape, s: PlanSettings, r: _Resolved, spec: SpecSizing) -> int | None:
    """SWA tokens from the request cap (`SWAChunkCapPoolConfigurator`), when the radix cache
    is off and max_running_requests and the chunked-prefill size are set: each running
    request's bound (`_swa_per_request`), plus the prefill chunks in flight and a page."""
    per_request = _swa_per_request(shape, s, r, spec)
    if (per_request is None or not s.disable_radix_cache or s.max_running_requests is None
            or s.chunked_prefill_size is None):
        return None
    chunks_in_flight = 1 if s.disable_overlap_schedule else 2
    return (per_request * (s.max_running_requests // s.attn_dp_size)
            + chunks_in_flight * s.chunked_prefill_size + r.page)


def _size_budget(sizer: Sizer, r: _Resolved, request: Request) -> tuple[Sizing, StageSizing]:
    """Every stage under the operator's mem_fraction_static; refuses a budget at or below zero."""
    sizing = sizer.size(exact(r.mfs))
    short = sizing.short()
    if short is not None:
        raise BudgetError(budget_message(sizer, sizing, short, r.mfs, request))
    binding = sizing.binding()
    if binding is None:
        raise KvPlanError(f"{sizer.shape.source}: no layer keeps a KV cache; nothing to plan")
    return sizing, binding


def _tokens(sizer: Sizer, binding: StageSizing, r: _Resolved, log: _Log, request: Request) -> int:
    """Token slots: what memory holds, under the operator's max_total_tokens. A context the
    pool cannot hold caps the request length, as SGLang's scheduler does
    (`max_req_len = min(context_len, max_total_num_tokens) - 1`)."""
    page = r.page
    tokens = binding.plan.tokens_fit
    cap = sizer.settings.max_total_tokens
    if cap is not None and cap < tokens:
        tokens = cap // page * page
        log.notes.append(f"max_total_tokens={cap} caps the pool")
    if tokens + page > TOKEN_INDEX_MAX:  # a tiny model on a big device; slot 0 pads, so + page
        tokens = (TOKEN_INDEX_MAX - page) // page * page
        log.notes.append(f"int32 token indices (req_to_token) cap the pool at {tokens:,} tokens")
    if tokens < page or (r.ctx > tokens and request.full):
        raise ContextTooLongError(context_message(sizer, binding, tokens, r.mfs, request))
    if r.ctx > tokens:
        memory_binds = binding.plan.tokens_fit < r.ctx
        fix = memory_fix(sizer, binding, r.ctx) if memory_binds else f"raise --max-total-tokens to at least {ceil_to(r.ctx, page)}"
        log.warnings.append(
            f"context_length={r.ctx} does not fit: requests are capped at {tokens - 1} tokens "
            f"(SGLang's max_req_len); to serve the full context, {fix} "
            "(--require-full-context makes this an error)"
        )
    return tokens


def _swa_tokens(sizer: Sizer, binding: StageSizing, tokens: int, mfs: float) -> int | None:
    """The SWA pool: a fixed size from the request cap (at most the full pool when an
    operator's max_total_tokens cut it), else `r` of the full pool, page-aligned, holding at
    least one window."""
    cell = binding.plan.cell
    if cell.swa_fixed_tokens is not None:
        fixed = cell.swa_fixed_tokens
        return fixed if tokens == binding.plan.tokens_fit else min(fixed, tokens)
    ratio = cell.swa_ratio
    if ratio is None:
        return None
    swa = sizer.swa_tokens(tokens)
    if not sizer.window_fits(swa):
        window = sizer.shape.sliding_window or 0
        raise DoesNotFitError(
            f"the SWA pool ({swa} tokens = {tokens} x swa_full_tokens_ratio {float(ratio)}) "
            f"cannot hold one window of {window} tokens plus a page; {swa_fix(sizer, mfs)}"
        )
    return swa


def _mamba(sizing: Sizing, binding: StageSizing, s: PlanSettings, log: _Log) -> MambaSlots | None:
    """The binding stage's mamba pool; slots sized from memory are written back."""
    slots = sizing.mamba_slots()
    if slots is None:
        return None
    if s.max_mamba_cache_size is None:
        # Written back as the total over attention-DP shards, as the leaf is read.
        log.decide("mamba_pool.memory_budget", "max_mamba_cache_size", slots * s.attn_dp_size)
    mamba = binding.mamba or next(st.mamba for st in sizing.stages if st.mamba is not None)
    assert mamba is not None
    return mamba


def _requests(sizer: Sizer, binding: StageSizing, tokens: int, r: _Resolved,
              mamba: MambaSlots | None, log: _Log, request: Request) -> int:
    """Running requests per attention-DP shard (`KVCacheConfigurator.resolve_max_num_reqs`):
    the operator's cap or the default rule, never above tokens // 2, and never above the
    mamba slots over the slots a request holds."""
    s = sizer.settings
    if s.max_running_requests is not None:
        max_reqs = min(s.max_running_requests // s.attn_dp_size, tokens // 2)
    else:
        max_reqs = default_max_running_requests(tokens, r.ctx)
    if mamba is not None:
        max_reqs = min(max_reqs, mamba.slots // sizer.slots_per_request)
    if max_reqs < 1:
        if s.max_mamba_cache_size is not None and mamba is not None:
            fix = f"raise --max-mamba-cache-size to at least {sizer.slots_per_request * s.attn_dp_size}"
        else:
            fix = requests_fix(sizer, binding, tokens, request)
        slots = "" if mamba is None else f" and {mamba.slots} mamba slots"
        raise DoesNotFitError(f"the pools hold {tokens} tokens{slots}: not one request can run; {fix}")
    if s.max_running_requests is None:
        # Written back as the total over attention-DP shards, so a reconfigure that reads it
        # (value // attn_dp_size) lands on the same per-shard count.
        log.decide("kv_pool.default_max_running_requests", "max_running_requests",
                   max_reqs * s.attn_dp_size)
    return max_reqs


def _assemble(shape: ModelShape, s: PlanSettings, memory: DeviceMemory, r: _Resolved,
              spec: SpecSizing, g: _Geometry, sizer: Sizer, sizing: Sizing,
              binding: StageSizing, tokens: int, swa_tokens: int | None,
              mamba: MambaSlots | None, max_reqs: int, log: _Log) -> KvPlan:
    """The tensors of the binding stage and the budget record that accounts for them."""
    cell = binding.plan.cell
    pools = kv_tensors(shape, cell, tokens, swa_tokens, r.page, g.kv_heads, r.kv, r.draft_kv)
    if mamba is not None and g.mamba is not None and binding.linear_layers:
        pools += mamba_tensors(g.mamba, binding.linear_layers, mamba)
    buffers: tuple[PoolTensor, ...] = ()
    if spec.enabled and spec.max_draft_tokens > 0:
        buffers = spec_buffers(max_reqs, spec.max_draft_tokens, spec.alloc_reserve_per_decode)
    req_shape = (max_reqs + 1, r.ctx + spec.extra_context_len)
    kv_used = tokens * cell.full_bytes
    if swa_tokens is not None:
        kv_used += swa_tokens * cell.per_layer_swa * cell.swa_layers
    # The slot-0 page of every KV pool: `page` rows of each pool's per-token bytes.
    kv_padding = r.page * (cell.full_bytes + (cell.per_layer_swa * cell.swa_layers if swa_tokens is not None else 0))
    stage_mamba = mamba if binding.linear_layers else None
    budget = Budget(
        pre=memory.pre_bytes,
        weights=binding.weights,
        draft_weights=binding.draft_weights,
        avail=binding.avail,
        slack=sizing.slack,
        activation_reserve=r.activation_reserve,
        multimodal_reserve=sizer.mm_reserve,
        mamba_state=0 if stage_mamba is None else stage_mamba.state_bytes,
        mamba_padding=0 if stage_mamba is None else stage_mamba.per_slot,
        mamba_spec_states=0 if stage_mamba is None else stage_mamba.spec_bytes,
        kv_budget=binding.plan.kv_budget,
        kv_bytes=kv_used,
        kv_padding=kv_padding,
        req_to_token=req_shape[0] * req_shape[1] * DTYPE_BYTES["int32"],
        spec_buffers=sum(p.nbytes for p in buffers),
    )
    # A default fraction is rounded to 1/1000, which may cut the reserve by that much.
    if budget.slack + memory.pre_bytes // 1000 < budget.activation_reserve:
        log.warnings.append(
            f"mem_fraction_static={r.mfs} leaves {gib(budget.slack)} for activations, CUDA graphs "
            f"and tables; SGLang reserves {gib(budget.activation_reserve)} on this device"
        )
    if budget.from_slack > budget.slack:
        log.warnings.append(
            f"the tables paid from the slack (req_to_token, KV padding, speculative buffers: "
            f"{gib(budget.from_slack)}) exceed it ({gib(budget.slack)}); lower "
            "--mem-fraction-static or --max-running-requests"
        )
    tokens_cap = min(r.ctx, tokens)
    if tokens_cap < 2:  # SGLang admits requests of at most max_req_len = this - 1 tokens
        raise KvPlanError(
            f"{shape.source}: context_length={r.ctx} leaves max_req_len {tokens_cap - 1}: no request could "
            f"be admitted; give a context of at least 2 tokens (--context-length, or the model's "
            f"max_position_embeddings)"
        )
    return KvPlan(
        model=shape.name,
        settings=s,
        dtype=r.dtype,
        kv_cache_dtype=r.kv_choice,
        kv_dtype=r.kv[0],
        page_size=r.page,
        context_length=r.ctx,
        max_req_len=tokens_cap - 1,
        mem_fraction_static=r.mfs,
        budget=budget,
        cell=cell,
        stages=tuple(st.plan for st in sizing.stages),
        binding_stage=binding.plan.rank,
        max_total_num_tokens=tokens,
        swa_tokens=swa_tokens,
        sliding_window=shape.sliding_window,
        mamba_slots=None if mamba is None else mamba.slots,
        mamba_slots_per_request=None if mamba is None else sizer.slots_per_request,
        max_running_requests=max_reqs,
        req_to_token_shape=req_shape,
        spec=spec,
        pools=pools,
        spec_buffers=buffers,
        decisions=tuple(log.decisions),
        notes=tuple(log.notes),
        warnings=tuple(log.warnings),
        differences=tuple(log.differences),
        trained_context_length=shape.context_length,
        swa_per_request=sizer.swa_per_request,
    )


__all__ = [
    "KV_DTYPES",
    "SGLANG_NAME",
    "SGLANG_VERSION",
    "Budget",
    "Cell",
    "Concurrency",
    "Decision",
    "DeviceMemory",
    "GiB",
    "KvPlan",
    "PlanSettings",
    "PoolTensor",
    "SpecSizing",
    "StagePlan",
    "concurrency",
    "default_max_running_requests",
    "min_mem_fraction_static",
    "plan_kv",
    "resolve_kv_dtype",
    "resolve_model_dtype",
    "stage_layers",
]
