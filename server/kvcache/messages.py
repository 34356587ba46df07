"""Error messages of the plan: each says what binds (the operator's max_total_tokens or
memory; with pp > 1, which stage) and the value that would work.

A suggested mem_fraction_static is the smallest (in 1/1000) at which one request of the
full context fits, found by re-running the plan's own sizing (`Sizer`), and never one that
leaves less slack than SGLang's activation and CUDA-graph reserve; the `rest > 0` bound
SGLang's own message gives is added, as it alone can leave a pool of a few hundred tokens.
"""

from __future__ import annotations

from fractions import Fraction

from configbags.server.kvcache.defaults import GiB
from configbags.server.kvcache.sizing import (
    Sizer,
    Sizing,
    StageSizing,
    ceil_to,
    min_mem_fraction_static,
)


def gib(n: int | Fraction) -> str:
    return f"{float(n) / GiB:.2f} GiB"


def memory_fix(sizer: Sizer, stage: StageSizing, ctx: int) -> str:
    """How to free enough memory for one request of `ctx` tokens: the mem_fraction_static
    that does it while keeping SGLang's reserve, or why none does."""
    safe = sizer.max_safe_fraction()
    fit = sizer.min_fraction_for(ctx, safe)
    if fit is not None:
        return f"raise --mem-fraction-static to at least {fit} to fit one request of context_length={ctx}"
    reserve = f"keeping SGLang's {gib(sizer.activation_reserve)} activation and CUDA-graph reserve"
    unsafe = sizer.min_fraction_for(ctx)
    if unsafe is not None:
        return (
            f"no mem_fraction_static up to {float(safe)} ({reserve}) fits one request of "
            f"context_length={ctx}; {unsafe} would, with only {gib(sizer.pre * (1 - Fraction(str(unsafe))))} "
            "left for activations; raise --tp-size, use --kv-cache-dtype fp8_e4m3, or lower --context-length"
        )
    # At 1.0 (no slack at all) the stage keeps its whole avail; say how far that is short.
    best = sizer.size(Fraction(1)).stages[stage.plan.rank]
    return (
        f"no mem_fraction_static fits one request of context_length={ctx}: it needs "
        f"{gib(sizer.one_request_bytes(best, ctx))} of KV{stage.where(sizer.settings.pp_size)}, "
        f"and at most {gib(max(0, best.plan.kv_budget))} is left after the weights even at "
        "1.0; raise --tp-size, use --kv-cache-dtype fp8_e4m3, or lower --context-length"
    )


def budget_message(sizer: Sizer, sizing: Sizing, short: StageSizing, mfs: float, ctx: int) -> str:
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
    return f"{head}; {memory_fix(sizer, short, ctx)} ({positive} only makes the KV budget positive)"


def context_message(sizer: Sizer, binding: StageSizing, tokens: int, mfs: float, ctx: int) -> str:
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
            f"{fit}); raise --max-total-tokens to at least {ceil_to(ctx, page)}{shorter}"
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
    capped = f" (max_total_tokens={cap} caps it too)" if cap is not None and cap < ctx else ""
    return f"{head}: {largest}{capped}; {memory_fix(sizer, binding, ctx)}"
