"""The KV pool configurator: reads config only through the generated accessors (or a
runner's view), plans with `planner.plan_kv`, writes its load-time decisions back through
the context, and allocates the pools.

Write-backs are `load_time` overrides with one source tag per decision (e.g.
`kv_pool.resolve_kv_cache_dtype`), so `server_info()` shows who resolved what while the raw
record keeps the operator's input. Only decisions that change a value are written, so a
reconfigure after `seal()` (e.g. after a runtime override of the draft-token count) writes
nothing and is allowed; the planner reads its own earlier write-backs as input and lands on
the same plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from generated.accessors import (
    ConfigView,
    get_context,
    get_exec,
    get_memory,
    get_model,
    get_parallel,
    get_schedule,
    get_spec,
)
from runtime.context import OverrideEntry
from runtime.kvcache.model_shape import ModelShape
from runtime.kvcache.planner import DeviceMemory, KvPlan, PlanSettings, plan_kv

if TYPE_CHECKING:  # torch only where pools are allocated
    import torch

    from runtime.kvcache.pools import KvPools


def read_settings(view: ConfigView | None = None) -> PlanSettings:
    """The leaves the plan needs, from the process bags or from a runner's view (a draft
    runner passes its own view, so its overlay never leaks into the target's plan)."""
    par = view.parallel if view else get_parallel()
    sch = view.schedule if view else get_schedule()
    mod = view.model if view else get_model()
    spec = view.spec if view else get_spec()
    exe = view.exec if view else get_exec()
    mem = view.memory if view else get_memory()
    return PlanSettings(
        tp_size=par.tp_size,
        attn_tp_size=par.attn_tp_size,
        attn_dp_size=par.attn_dp_size,
        attn_dcp_size=par.attn_dcp_size,
        pp_size=par.pp_size,
        dtype=mod.dtype,
        kv_cache_dtype=mod.kv_cache_dtype,
        context_length=mod.context_length,
        page_size=sch.page_size,
        mem_fraction_static=sch.mem_fraction_static,
        max_total_tokens=sch.max_total_tokens,
        max_running_requests=sch.max_running_requests,
        swa_full_tokens_ratio=sch.swa_full_tokens_ratio,  # never None: the context applies fallbacks
        disable_hybrid_swa_memory=sch.disable_hybrid_swa_memory,
        max_mamba_cache_size=sch.max_mamba_cache_size,
        mamba_full_memory_ratio=sch.mamba_full_memory_ratio,
        mamba_ssm_dtype=exe.mamba.mamba_ssm_dtype,
        disable_radix_cache=mem.disable_radix_cache,
        enable_mamba_extra_buffer=exe.mamba.enable_mamba_extra_buffer,
        disable_overlap_schedule=sch.disable_overlap_schedule,
        attention_backend=exe.kernel.attention_backend,
        speculative_algorithm=spec.speculative_algorithm,
        speculative_num_steps=spec.speculative_num_steps,
        speculative_eagle_topk=spec.speculative_eagle_topk,
        speculative_num_draft_tokens=spec.speculative_num_draft_tokens,
        max_speculative_num_draft_tokens=spec.max_speculative_num_draft_tokens,
        speculative_draft_kv_cache_dtype=spec.speculative_draft_kv_cache_dtype,
    )


def write_back(plan: KvPlan) -> tuple[OverrideEntry, ...]:
    """Record the plan's load-time decisions in the process context, one override per
    source tag, skipping values the context already holds."""
    ctx = get_context()
    entries: list[OverrideEntry] = []
    for decision in plan.decisions:
        if getattr(plan.settings, decision.leaf) == decision.value:
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

    def plan(self, view: ConfigView | None = None) -> KvPlan:
        """The plan under the current config; no side effects."""
        return plan_kv(self.shape, read_settings(view), self.memory)

    def configure(self) -> KvPlan:
        """Plan from the process bags and write the load-time decisions back; the returned
        plan is what a reconfigure (which reads those write-backs) reproduces."""
        plan = self.plan()
        write_back(plan)
        return plan

    def allocate(self, plan: KvPlan, device: str | torch.device = "cpu") -> KvPools:
        from runtime.kvcache.pools import allocate

        return allocate(plan, device)
