"""Error messages of the plan: each says what binds (the operator's max_total_tokens or
memory; with pp > 1, which stage) and the value that would work.

A suggested mem_fraction_static is the smallest (in 1/1000) at which one request of the
full context fits, found by re-running the plan's own sizing (`Sizer`), and never one that
leaves less slack than SGLang's activation and CUDA-graph reserve; the `rest > 0` bound
SGLang's own message gives is added, as it alone can leave a pool of a few hundred tokens.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from configbags.server.kvcache.defaults import GiB
from configbags.server.kvcache.sizing import (
    Sizer,
    Sizing,
    StageSizing,
    ceil_to,
    exact,
    min_mem_fraction_static,
)


def gib(n: int | Fraction) -> str:
    return f"{float(n) / GiB:.2f} GiB"


def memory_fix(sizer: Sizer, stage: StageSizing, ctx: int, also: str = "", what: str | None = None) -> str:
    """How to free enough memory for a pool of `ctx` tokens (`what`: the request that needs
    it, by default one of that context length): the mem_fraction_static that does it while
    keeping SGLang's reserve, or why none does. `also`: what else must change with it (an
    operator's max_total_tokens under the request)."""
    safe = sizer.max_safe_fraction()
    fit = sizer.min_fraction_for(ctx, safe)
    what = what or f"one request of context_length={ctx}"
    if fit is not None:
        return f"raise --mem-fraction-static to at least {fit}{also} to fit {what}"
    reserve = f"keeping SGLang's {gib(sizer.activation_reserve)} activation and CUDA-graph reserve"
    unsafe = sizer.min_fraction_for(ctx)
    if unsafe is not None:
        # not offered as a `--flag value` to apply: it eats into the reserve
        cap = f" (with max_total_tokens raised to {also.rpartition(' ')[2]})" if also else ""
        return (
            f"no mem_fraction_static up to {float(safe)} ({reserve}) fits {what}; {unsafe} would{cap}, with only "
            f"{gib(sizer.pre * (1 - Fraction(str(unsafe))))} left for activations; raise --tp-size, use "
            "--kv-cache-dtype fp8_e4m3, or lower --context-length"
        )
    # At 1.0 (no slack at all) the stage keeps its whole avail; say how far that is short.
    best = sizer.size(Fraction(1)).stages[stage.plan.rank]
    return (
        f"no mem_fraction_static fits {what}: it needs "
        f"{gib(sizer.one_request_bytes(best, ctx))} of KV{stage.where(sizer.settings.pp_size)}, "
        f"and at most {gib(max(0, best.plan.kv_budget))} is left after the weights even at "
        "1.0; raise --tp-size, use --kv-cache-dtype fp8_e4m3, or lower --context-length"
    )


def _pool_tokens(sizer: Sizer, mfs: float) -> int:
    """The full pool the plan would size: what memory holds under the operator's cap."""
    binding = sizer.size(exact(mfs)).binding()
    tokens = 0 if binding is None else binding.plan.tokens_fit
    cap = sizer.settings.max_total_tokens
    return cap // sizer.page * sizer.page if cap is not None and cap < tokens else tokens


def swa_fix(sizer: Sizer, mfs: float) -> str:
    """The ways out of an SWA pool under one window: the smallest swa_full_tokens_ratio (in
    1/1000) whose pool holds it, re-sized as the plan sizes it (a larger ratio takes memory
    from the full pool, so the SWA pool grows less than the ratio), and one pool for every
    layer where memory holds a page of it; each a value that passes when applied."""

    def holds(thousandths: int) -> bool:
        resized = attrs.evolve(sizer, swa_r=Fraction(thousandths, 1000))
        return resized.window_fits(resized.swa_tokens(_pool_tokens(resized, mfs)))

    ways = []
    if holds(1000):  # the SWA pool grows with the ratio: the smallest that holds is found by halving
        low, high = 0, 1000  # holds(high), not holds(low)
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if holds(mid) else (mid, high)
        ways.append(f"raise --swa-full-tokens-ratio to at least {high / 1000:g}")
    if _pool_tokens(attrs.evolve(sizer, split_swa=False), mfs) >= max(sizer.page, 2):
        ways.append("pass --disable-hybrid-swa-memory (one pool for every layer)")
    return " or ".join(ways) or ("no swa_full_tokens_ratio holds it; raise --tp-size, use --kv-cache-dtype "
                                 "fp8_e4m3, or use a larger device")


def budget_message(sizer: Sizer, sizing: Sizing, short: StageSizing, mfs: float, request: Request) -> str:
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
        f"{gib(sizer.pre)}, weights {gib(short.weights + short.draft_weights)}, slack "
        f"{gib(sizing.slack)} (1 - mem_fraction_static={mfs})"
        + (f", mamba state {gib(short.mamba_bytes)}" if short.mamba_bytes else "")
        + f" leave {gib(short.plan.kv_budget)}"
    )
    if positive > 1:
        return (
            f"{head}; no mem_fraction_static is enough: the weights alone fill the device; "
            "raise --tp-size (or --pp-size) or use a larger device"
        )
    return f"{head}; {memory_fix(sizer, short, request.need, cap_also(s.max_total_tokens, request, sizer.page), request.text())} " \
           f"({positive} only makes the KV budget positive)"


@attrs.frozen
class Request:
    """The request a refusal is about: the full context (`--require-full-context`, or no
    workload given), else the workload's prompt + output; `need` is the pool it needs in
    tokens (SGLang admits at most `min(context, pool) - 1` tokens)."""

    ctx: int
    workload: int | None = None  # prompt + output tokens (plan --workload IN:OUT)
    full: bool = False  # --require-full-context: the full context must fit

    @property
    def need(self) -> int:
        if self.full or self.workload is None:
            return self.ctx
        return min(self.ctx, self.workload + 1)  # a workload over the context: the context

    def text(self) -> str:
        if self.full or self.workload is None:
            return f"one request of context_length={self.ctx}"
        return f"one request of {self.workload:,} tokens (--workload)"


def cap_fix(request: Request, page: int) -> str:
    """The max_total_tokens that holds the request: the pool is the cap rounded down to a page."""
    return f"raise --max-total-tokens to at least {ceil_to(request.need, page)} to hold {request.text()}"


def cap_also(cap: int | None, request: Request, page: int) -> str:
    """What a memory fix must add when the operator's max_total_tokens is under the request too."""
    need = ceil_to(request.need, page)
    return f" and --max-total-tokens to at least {need}" if cap is not None and cap // page * page < need else ""


def context_message(sizer: Sizer, binding: StageSizing, tokens: int, mfs: float, request: Request) -> str:
    """A pool under one page, or one under the full context with --require-full-context:
    what binds (the operator's max_total_tokens or memory) and each way out, each a value
    that passes when applied."""
    s, page, ctx = sizer.settings, sizer.page, request.ctx
    fit = binding.plan.tokens_fit  # what memory holds, before the operator's cap
    cap = s.max_total_tokens
    need = ceil_to(request.need, page)
    under_page = f", less than one page of {page}: no request can run" if tokens < page else ""
    head = "" if under_page else f"{request.text()} does not fit: "
    # A shorter context passes once the pool holds it and admits a request (2 tokens).
    shorter = f", or set --context-length {tokens}" if tokens >= max(page, 2) and tokens < ctx else ""
    if fit >= need and cap is not None:
        # Memory is not the limit, the operator's cap is: say so, and no memory advice.
        return (f"{head}max_total_tokens={cap} caps the KV pool at {tokens} tokens{under_page} (memory holds "
                f"{fit}); {cap_fix(request, page)}{shorter}, or leave --max-total-tokens out")
    if under_page:
        head = f"the KV pool holds {tokens} tokens{under_page}: "
    where = binding.where(s.pp_size)
    if tokens > 0:
        largest = f"the KV pool{where} holds {tokens} tokens at mem_fraction_static={mfs}" + (
            f"; the largest context that fits is {tokens} (set --context-length {tokens})" if shorter else "")
    else:
        largest = (
            f"the KV pool{where} holds {fit} tokens at mem_fraction_static={mfs}: not one "
            f"page of {page} tokens fits"
        )
    also = cap_also(cap, request, page)
    note = f" (max_total_tokens={cap} caps it too)" if also else ""
    return f"{head}{largest}{note}; {memory_fix(sizer, binding, request.need, also, request.text())}"


def requests_fix(sizer: Sizer, binding: StageSizing, tokens: int, request: Request) -> str:
    """Why a pool of `tokens` runs no request and the way out: the operator's cap, when it
    is what cut the pool, else memory."""
    cap = sizer.settings.max_total_tokens
    if cap is not None and tokens < binding.plan.tokens_fit:
        return (f"{cap_fix(request, sizer.page)} (max_total_tokens={cap} caps the pool; memory holds "
                f"{binding.plan.tokens_fit})")
    return memory_fix(sizer, binding, request.need, what=request.text())
