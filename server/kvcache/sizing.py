"""The part of the plan that depends on mem_fraction_static, as a function of it: the plan
sizes once with the operator's value, and an error sizes again to find the value that
would work, with the very same arithmetic (no second formula to drift).

Semantics follow SGLang's `ModelRunner.profile_max_num_token` and the pool configurators:
`rest = avail - pre * (1 - mem_fraction_static) - multimodal_reserve`; the mamba pool takes
its share of the rest first (`mamba.size_mamba_slots`), the KV cell divides the remainder.
Fractions given as decimals (0.88) are exact decimals (`Fraction(str(x))`), so a plan equals
the hand calculation to the byte instead of drifting by one binary-float ulp at a page
boundary.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from configbags.server.kvcache.defaults import default_max_running_requests
from configbags.server.kvcache.errors import SettingsError
from configbags.server.kvcache.mamba import size_mamba_slots
from configbags.server.kvcache.model_shape import LayerKind, ModelShape
from configbags.server.kvcache.records import Cell, MambaSlots, StagePlan
from configbags.server.kvcache.settings import PlanSettings


def exact(x: float) -> Fraction:
    return Fraction(str(x))


def ceil_to(n: int, page: int) -> int:
    return -(-n // page) * page


def stage_layers(num_layers: int, pp_size: int) -> list[tuple[int, int]]:
    """SGLang's partition (`get_pp_indices`): equal slices, the last takes the remainder."""
    if pp_size > num_layers:
        raise SettingsError(f"pp_size={pp_size} exceeds the model's {num_layers} layers")
    per = num_layers // pp_size
    return [(r * per, num_layers if r == pp_size - 1 else (r + 1) * per) for r in range(pp_size)]


@attrs.frozen
class StageSizing:
    """One pipeline stage under one mem_fraction_static (before any check)."""

    plan: StagePlan  # kv_budget = rest - mamba; may be <= 0 here
    avail: int  # pre - weights - draft weights on this stage
    weights: int
    draft_weights: int
    mamba: MambaSlots | None
    linear_layers: int

    @property
    def mamba_bytes(self) -> int:
        return 0 if self.mamba is None else self.mamba.total_bytes

    @property
    def per_token(self) -> Fraction:
        return self.plan.cell.bytes_per_token

    def where(self, pp_size: int) -> str:
        if pp_size == 1:
            return ""
        start, end = self.plan.layers
        return f" on pipeline stage pp_rank={self.plan.rank} of {pp_size} (layers {start}-{end - 1})"


@attrs.frozen
class Sizing:
    """Every stage under one mem_fraction_static."""

    slack: int
    stages: tuple[StageSizing, ...]

    def short(self) -> StageSizing | None:
        """The binding stage of a budget at or below zero: the least budget, then the most
        bytes per token (stages with equal budgets: the one with more layers)."""
        short = [st for st in self.stages if st.plan.kv_budget <= 0]
        return min(short, key=lambda st: (st.plan.kv_budget, -st.per_token)) if short else None

    def binding(self) -> StageSizing | None:
        """The stage with the fewest token slots (None: no stage keeps a KV cache)."""
        sized = [st for st in self.stages if st.plan.tokens_fit >= 0]
        return min(sized, key=lambda st: st.plan.tokens_fit) if sized else None

    def mamba_slots(self) -> int | None:
        slots = [st.plan.mamba_slots for st in self.stages if st.plan.mamba_slots is not None]
        return min(slots) if slots else None


@attrs.frozen
class StageLayers:
    """Layer counts of one pipeline stage, by what each keeps."""

    rank: int
    start: int
    end: int
    attention: int  # full and MLA layers
    sliding: int
    linear: int


def stages_of(shape: ModelShape, pp_size: int) -> tuple[StageLayers, ...]:
    out = []
    for rank, (start, end) in enumerate(stage_layers(shape.num_layers, pp_size)):
        kinds = shape.layer_kinds[start:end]
        out.append(StageLayers(
            rank, start, end,
            attention=shape.count(LayerKind.FULL, kinds) + shape.count(LayerKind.MLA, kinds),
            sliding=shape.count(LayerKind.SLIDING, kinds),
            linear=shape.count(LayerKind.LINEAR, kinds),
        ))
    return tuple(out)


@attrs.frozen
class Sizer:
    """Everything but mem_fraction_static, fixed: `size(mfs)` plans every stage."""

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
    mamba_layer_bytes: int  # one linear layer's state for one slot on this rank
    slots_per_request: int
    spec_draft_tokens: int  # D of the mamba intermediate states (0 without speculation)
    page: int
    activation_reserve: int  # SGLang's reserve; suggestions never eat into it
    stages: tuple[StageLayers, ...]  # counted once; every size() reuses them
    mm_reserve: int = 0  # text-only planning
    swa_cap: int | None = None  # SWA tokens sized from the request cap (SWAChunkCapPoolConfigurator)
    swa_per_request: int | None = None  # SWA tokens one running request holds at most

    def size(self, mfs: Fraction) -> Sizing:
        slack = math.floor(self.pre * (1 - mfs))
        return Sizing(slack, tuple(self._stage(stage, slack) for stage in self.stages))

    def _stage(self, layers: StageLayers, slack: int) -> StageSizing:
        rank, start, end = layers.rank, layers.start, layers.end
        last = rank == self.settings.pp_size - 1
        draft_weights = self.draft_weights if last else 0
        avail = self.pre - self.weights - draft_weights
        rest = avail - slack - self.mm_reserve
        full, sliding = layers.attention, layers.sliding
        if not self.split_swa:
            full, sliding = full + sliding, 0
        linear_layers = layers.linear
        mamba = None
        if linear_layers:
            mamba = size_mamba_slots(
                rest,
                linear_layers * self.mamba_layer_bytes,
                self.settings,
                slots_per_request=self.slots_per_request,
                draft_tokens=self.spec_draft_tokens,
            )
        kv_budget = rest - (0 if mamba is None else mamba.total_bytes)
        capped = self.split_swa and self.swa_cap is not None and full > 0
        cell = Cell(
            per_layer_full=self.per_layer,
            per_layer_swa=self.per_layer if self.split_swa else 0,
            full_layers=full,
            swa_layers=sliding,
            draft_layers=self.draft_layers if last else 0,
            per_layer_draft=self.per_layer_draft,
            swa_ratio=self.swa_r if self.split_swa and not capped else None,
            swa_fixed_tokens=ceil_to(self.swa_cap, self.page) if capped and self.swa_cap is not None else None,
        )
        per_token = cell.bytes_per_token
        fit = -1  # no KV layer on this stage
        if per_token:
            left = kv_budget - cell.swa_fixed_bytes  # the capped SWA pool is taken off first
            fit = math.floor(left / per_token) // self.page * self.page if left > 0 else 0
        slots = None if mamba is None else mamba.slots
        return StageSizing(
            StagePlan(rank, (start, end), cell, kv_budget, fit, slots),
            avail,
            self.weights,
            draft_weights,
            mamba,
            linear_layers,
        )

    def swa_tokens(self, tokens: int) -> int:
        return math.floor(tokens * self.swa_r) // self.page * self.page

    def window_fits(self, swa_tokens: int) -> bool:
        """SGLang's floor for one request in the SWA pool: `window + page < swa_tokens`."""
        return (self.shape.sliding_window or 0) + self.page < swa_tokens

    def fits_one_request(self, sizing: Sizing, ctx: int) -> bool:
        """Memory holds one request of `ctx` tokens (the operator's max_total_tokens aside):
        every stage has a budget, the pool has `ctx` slots, the SWA pool a window, and the
        mamba pool one request's slots."""
        binding = sizing.binding()
        if sizing.short() is not None or binding is None:
            return False
        tokens = binding.plan.tokens_fit
        if tokens < ctx or default_max_running_requests(tokens, ctx) < 1:
            return False
        if binding.plan.cell.swa_ratio is not None and not self.window_fits(self.swa_tokens(tokens)):
            return False
        slots = sizing.mamba_slots()
        return slots is None or slots >= self.slots_per_request

    def max_safe_fraction(self) -> Fraction:
        """The largest mem_fraction_static (in 1/1000) whose slack still holds SGLang's
        activation and CUDA-graph reserve: a suggestion never goes above it."""
        return Fraction(math.floor((1 - Fraction(self.activation_reserve, self.pre)) * 1000), 1000)

    def min_fraction_for(self, ctx: int, ceiling: Fraction = Fraction(1)) -> float | None:
        """The smallest mem_fraction_static (in 1/1000, at most `ceiling`) whose plan holds
        one request of `ctx` tokens, or None when not even the ceiling does. Every quantity
        grows with the fraction (less slack: more rest, more tokens, more mamba slots), so
        a bisection finds it."""
        hi = math.floor(ceiling * 1000)
        if hi <= 0 or not self.fits_one_request(self.size(Fraction(hi, 1000)), ctx):
            return None
        lo = 0  # fits at hi; not known at lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fits_one_request(self.size(Fraction(mid, 1000)), ctx):
                hi = mid
            else:
                lo = mid
        return hi / 1000

    def one_request_bytes(self, stage: StageSizing, ctx: int) -> Fraction:
        """KV bytes one request of `ctx` tokens takes on `stage` (page-rounded)."""
        return ceil_to(ctx, self.page) * stage.per_token


def min_mem_fraction_static(avail: int, pre: int) -> float:
    """The smallest mem_fraction_static (in 1/1000) with `avail - pre * (1 - mfs) > 0`."""
    need = (1 - Fraction(avail, pre)) * 1000
    milli = math.ceil(need)
    if milli == need:  # exactly on the boundary the budget is 0, still not enough
        milli += 1
    return milli / 1000
