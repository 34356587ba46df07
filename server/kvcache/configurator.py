"""The KV pool configurator: reads the leaves it needs from a config context (or a runner's
view) of any generated package whose schema declares them, plans with `planner.plan_kv`,
writes its load-time decisions back through the context, and allocates the pools.

`PlanSettings` is the typed view of the leaves it reads; they are found by name through
the context's registry, so the configurator works with the bundled server and with any
engine's schema alike (a leaf the schema lacks keeps its `PlanSettings` default, except
the few the plan cannot do without).

Write-backs are `load_time` overrides with one source tag per decision (e.g.
`kv_pool.resolve_kv_cache_dtype`), so `server_info()` shows who resolved what while the raw
record keeps the operator's input. Only decisions that change a value are written, so a
reconfigure after `seal()` (e.g. after a runtime override of the draft-token count) writes
nothing and is allowed; the planner reads its own earlier write-backs as input and lands on
the same plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from configbags.runtime.context import Context, OverrideEntry, RunnerView, process_context
from configbags.runtime.errors import UnknownLeafError
from configbags.runtime.registry import DerivedSpec, LeafSpec
from configbags.server.kvcache.model_shape import ModelShape
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings, plan_kv

if TYPE_CHECKING:  # torch only where pools are allocated
    import torch

    from configbags.server.kvcache.pools import KvPools

# Leaves without which no plan means anything; every other PlanSettings field has a default
# (the two ratios have schema fallbacks the planner deliberately keeps no copy of).
REQUIRED_LEAVES = (
    "tp_size",
    "page_size",
    "context_length",
    "mem_fraction_static",
    "kv_cache_dtype",
    "swa_full_tokens_ratio",
    "mamba_full_memory_ratio",
)

ConfigSource = Context[Any] | RunnerView


def read_settings(source: ConfigSource | None = None) -> PlanSettings:
    """The leaves the plan needs, from a context's bags or a runner's view (a draft runner
    passes its own view, so its overlay never leaks into the target's plan). Each read goes
    through `bag()`, so role scoping applies as it does to the accessors."""
    source = source if source is not None else process_context()
    registry = source.registry
    declared: dict[str, LeafSpec | DerivedSpec] = {**registry.leaves, **registry.derived}
    missing = [name for name in REQUIRED_LEAVES if name not in declared]
    if missing:
        raise UnknownLeafError(
            f"the KV configurator needs the leaves {', '.join(missing)}, which this schema does "
            f"not declare; add them to a namespace file and run configbags gen"
        )
    values = {
        f.name: getattr(source.bag(declared[f.name].namespace), f.name)
        for f in attrs.fields(PlanSettings)
        if f.name in declared
    }
    if "attn_tp_size" not in declared:  # a schema without attention DP: attention spans TP
        values["attn_tp_size"] = values["tp_size"] // values.get("attn_dp_size", 1)
    return PlanSettings(**values)


def write_back(plan: KvPlan, context: Context[Any] | None = None) -> tuple[OverrideEntry, ...]:
    """Record the plan's load-time decisions in the context, one override per source tag,
    skipping values the context already holds and leaves its schema does not declare."""
    ctx = context if context is not None else process_context()
    entries: list[OverrideEntry] = []
    for decision in plan.decisions:
        if getattr(plan.settings, decision.leaf) == decision.value:
            continue
        if decision.leaf not in ctx.registry.leaves:  # a smaller schema: nothing to record it in
            continue
        entries.extend(ctx.override(decision.source, **{decision.leaf: decision.value}))
    return tuple(entries)


@attrs.frozen
class KvCacheConfigurator:
    """Sizes and allocates the KV cache of one model on one rank.

    `memory.pre_bytes` is the free device memory before weights load; `memory.weight_bytes`
    the measured weights (None: estimated from the model config)."""

    shape: ModelShape
    memory: DeviceMemory
    context: Context[Any] | None = None  # default: this process's context
    require_full_context: bool = False  # refuse, rather than cap, a context that does not fit

    def _context(self) -> Context[Any]:
        return self.context if self.context is not None else process_context()

    def plan(self, view: RunnerView | None = None) -> KvPlan:
        """The plan under the current config (or a runner's view of it); no side effects."""
        settings = read_settings(view if view is not None else self._context())
        return plan_kv(self.shape, settings, self.memory, require_full_context=self.require_full_context)

    def configure(self) -> KvPlan:
        """Plan from the process bags and write the load-time decisions back; the returned
        plan is what a reconfigure (which reads those write-backs) reproduces."""
        plan = self.plan()
        write_back(plan, self._context())
        return plan

    def allocate(self, plan: KvPlan, device: str | torch.device = "cpu") -> KvPools:
        from configbags.server.kvcache.pools import allocate

        return allocate(plan, device)
