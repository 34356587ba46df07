"""`configbags plan --fit`: the inverse question. Given a workload (prompt and output tokens
of one request) and a concurrency N, which configurations (GPU x TP size x KV dtype) hold
N such requests at once, and with which flags?

Each candidate is planned as SGLang would run it with `--max-running-requests N` (so the
scheduler admits N); it fits when every pool holds N requests of that size. A fitting
entry names the binding pool, its headroom over N, and the exact flags to launch with;
planning `configbags plan` with those flags and `--workload` reports N held at once. A
failing entry names what does not fit and by how much. Entries are sorted cheapest first:
fewest GPUs, then the smaller device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from configbags.server.kvcache.planner import GiB, KvPlan, concurrency
from configbags.server.kvcache.sizing import ceil_to

# Round a context length that must shrink up to this, so the flag reads as an operator's.
_CONTEXT_STEP = 1024


@attrs.frozen
class Candidate:
    """One configuration to try."""

    model: str
    gpu: str | None
    gpu_bytes: int
    tp_size: int
    kv_cache_dtype: str | None  # None: the server flags' own


@attrs.frozen
class FitEntry:
    """What one candidate holds at the workload, and how to launch it."""

    candidate: Candidate
    fits: bool
    requests: int  # requests of the workload the pools hold at once (before the cap N)
    binds: str  # the pool that binds first ("kv tokens", "swa tokens", "mamba slots", ...)
    headroom: int  # requests beyond N (negative: short by that many)
    reason: str  # what binds and by how much (or why the candidate is refused)
    flags: tuple[str, ...] = ()  # the server flags to launch with
    mem_fraction_static: float | None = None
    context_length: int | None = None

    @property
    def gpus(self) -> int:
        return self.candidate.tp_size

    def as_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=True)
        out["gpus"] = self.gpus
        out["launch"] = " ".join(self.flags)
        return out


def context_for(isl: int, osl: int) -> int:
    """The shortest context (rounded up to 1024 tokens) whose max_req_len admits one request
    of `isl + osl` tokens (SGLang's max_req_len is the context minus 1)."""
    return ceil_to(isl + osl + 1, _CONTEXT_STEP)


def needs_shorter_context(plan: KvPlan, isl: int, osl: int) -> bool:
    """The model's full context would cap requests below the workload, or its request
    table would overrun the slack: launch with a context just long enough."""
    return plan.max_req_len < isl + osl or plan.budget.from_slack > plan.budget.slack


def entry(candidate: Candidate, plan: KvPlan, isl: int, osl: int, n: int, context: int | None,
          given: Sequence[str] = ()) -> FitEntry:
    """Judge one planned candidate: the least pool (the cap N aside) against N. `given`:
    the operator's own server flags, which the launch line repeats."""
    load = concurrency(plan, isl + osl)
    flags = [f"--tp-size {candidate.tp_size}", f"--mem-fraction-static {plan.mem_fraction_static}",
             f"--max-running-requests {n}"]
    if context is not None:
        flags.append(f"--context-length {context}")
    if candidate.kv_cache_dtype is not None:
        flags.append(f"--kv-cache-dtype {candidate.kv_cache_dtype}")
    flags += _without(given, {f.split()[0] for f in flags})
    if load.reason is not None:  # longer than the pool admits
        return FitEntry(candidate, False, 0, load.binds, -n, load.reason, tuple(flags),
                        plan.mem_fraction_static, plan.context_length)
    pools = [(name, held) for name, held in load.limits if name != "max_running_requests"]
    binds, held = min(pools, key=lambda item: item[1])
    if plan.max_running_requests < n:  # SGLang lowers the cap to what the pools can index
        binds, held = "max_running_requests", min(held, plan.max_running_requests)
    fits = held >= n
    reason = _shortfall(plan, binds, held, n, isl + osl) if not fits else (
        f"{binds} hold {held:,} requests: {held - n:,} ({(held - n) / n:.0%}) beyond {n:,}")
    return FitEntry(candidate, fits, held, binds, held - n, reason, tuple(flags),
                    plan.mem_fraction_static, plan.context_length)


def _without(given: Sequence[str], set_here: set[str]) -> list[str]:
    """The operator's flags less those the launch line sets itself (each takes one value)."""
    out: list[str] = []
    skip = False
    for arg in given:
        if skip:
            skip = False
        elif arg.split("=")[0] in set_here:
            skip = "=" not in arg
        else:
            out.append(arg)
    return out


def _shortfall(plan: KvPlan, binds: str, held: int, n: int, request_tokens: int) -> str:
    short = n - held
    if binds == "kv tokens":
        need = ceil_to(request_tokens, plan.page_size) * n
        gib = (need - plan.max_total_num_tokens) * float(plan.cell.bytes_per_token) / GiB
        return (f"kv tokens hold {held:,} of {n:,} requests: short by {short:,} requests "
                f"({need - plan.max_total_num_tokens:,} tokens, {gib:.2f} GiB per rank)")
    if binds == "swa tokens" and plan.swa_tokens is not None:
        return f"the SWA pool ({plan.swa_tokens:,} tokens) holds {held:,} of {n:,} requests: short by {short:,}"
    if binds == "mamba slots" and plan.mamba_slots is not None:
        per = plan.mamba_slots_per_request or 1
        return (f"the mamba pool ({plan.mamba_slots:,} slots, {per} per request) holds {held:,} of {n:,} "
                f"requests: short by {short * per:,} slots")
    return f"{binds} admits {held:,} of {n:,} requests: short by {short:,}"


def refused(candidate: Candidate, reason: str, n: int) -> FitEntry:
    return FitEntry(candidate, False, 0, "refused", -n, reason)


def ranked(entries: Sequence[FitEntry]) -> list[FitEntry]:
    """Fitting entries first, cheapest (fewest GPUs, then the smaller device) first; then
    the failing ones in the same order."""
    return sorted(entries, key=lambda e: (not e.fits, e.gpus, e.candidate.gpu_bytes, -e.headroom))


def render(entries: Sequence[FitEntry], isl: int, osl: int, n: int, header: str) -> str:
    """The fit as a table that fits a terminal: one line per candidate, reasons wrapped at
    word boundaries under it."""
    import textwrap

    fits = [e for e in entries if e.fits]
    lines = [header, "", f"holding {n:,} concurrent requests of {isl:,} + {osl:,} tokens: "
             f"{len(fits)} of {len(entries)} configurations fit", "",
             f"{'':3}{'model':<19} {'gpu':<9} {'gpus':>4} {'kv':<9} {'held':>8} {'headroom':>9}  binds"]
    for e in entries:
        c = e.candidate
        mark = "ok" if e.fits else "no"
        lines.append(f"{mark:<3}{c.model[:19]:<19} {c.gpu or '-':<9} {e.gpus:>4} {c.kv_cache_dtype or '-':<9} "
                     f"{e.requests:>8,} {e.headroom:>+9,}  {e.binds}")
        body = f"launch: {' '.join(e.flags)}" if e.fits else e.reason
        lines += textwrap.wrap(body, width=96, initial_indent="    ", subsequent_indent="      ",
                               break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)
