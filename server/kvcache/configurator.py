"""The KV pool configurator: reads the config it needs through the typed seam
(`seam.KvConfig`) from a context (or a runner's view) of any generated package whose schema
declares those leaves, plans with `planner.plan_kv`, writes its load-time decisions back
through the context, and allocates the pools.

`settings_from` is every config read the plan makes: attribute reads on the seam's
Protocols, which mypy checks (and checks the bundled package against). A schema is checked
against the seam once, when its context is first read: one SeamError names each missing
leaf and the namespace to declare it in; an optional leaf it lacks reads its default.

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
from configbags.server.kvcache import seam
from configbags.server.kvcache.model_shape import ModelShape
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings, plan_kv
from configbags.server.kvcache.seam import KvConfig

if TYPE_CHECKING:  # torch only where pools are allocated
    import torch

    from configbags.server.kvcache.pools import KvPools

ConfigSource = Context[Any] | RunnerView


def settings_from(config: KvConfig) -> PlanSettings:
    """Every leaf the plan reads, each a typed attribute read of the seam. Each namespace is
    fetched once (for a context, one role-scoped `bag()` call)."""
    parallel, model, schedule, memory, spec = config.parallel, config.model, config.schedule, config.memory, config.spec
    kernel, mamba, graph, moe = config.exec.kernel, config.exec.mamba, config.exec.graph, config.exec.moe
    attn_dp_size, attn_tp_size = parallel.attn_dp_size, parallel.attn_tp_size
    return PlanSettings(
        tp_size=parallel.tp_size,
        # a schema without attention TP of its own: attention spans the TP ranks of its DP group
        attn_tp_size=parallel.tp_size // attn_dp_size if attn_tp_size is None else attn_tp_size,
        attn_dp_size=attn_dp_size,
        attn_dcp_size=parallel.attn_dcp_size,
        pp_size=parallel.pp_size,
        enable_dp_attention=parallel.enable_dp_attention,
        ep_size=parallel.ep_size,
        ep_num_redundant_experts=moe.ep_num_redundant_experts,
        dtype=model.dtype,
        kv_cache_dtype=model.kv_cache_dtype,
        context_length=model.context_length,
        page_size=schedule.page_size,
        mem_fraction_static=schedule.mem_fraction_static,
        swa_full_tokens_ratio=schedule.swa_full_tokens_ratio,
        mamba_full_memory_ratio=schedule.mamba_full_memory_ratio,
        max_total_tokens=schedule.max_total_tokens,
        max_running_requests=schedule.max_running_requests,
        disable_hybrid_swa_memory=schedule.disable_hybrid_swa_memory,
        max_mamba_cache_size=schedule.max_mamba_cache_size,
        disable_overlap_schedule=schedule.disable_overlap_schedule,
        chunked_prefill_size=schedule.chunked_prefill_size,
        cuda_graph_max_bs_decode=graph.cuda_graph_max_bs_decode,
        disable_cuda_graph=graph.disable_cuda_graph,
        disable_decode_cuda_graph=graph.disable_decode_cuda_graph,
        disable_radix_cache=memory.disable_radix_cache,
        mamba_ssm_dtype=mamba.mamba_ssm_dtype,
        mamba_radix_cache_strategy=mamba.mamba_radix_cache_strategy,
        enable_mamba_extra_buffer=mamba.enable_mamba_extra_buffer,
        enable_mamba_extra_buffer_lazy=mamba.enable_mamba_extra_buffer_lazy,
        attention_backend=kernel.attention_backend,
        speculative_algorithm=spec.speculative_algorithm,
        speculative_num_steps=spec.speculative_num_steps,
        speculative_eagle_topk=spec.speculative_eagle_topk,
        speculative_num_draft_tokens=spec.speculative_num_draft_tokens,
        max_speculative_num_draft_tokens=spec.max_speculative_num_draft_tokens,
        speculative_draft_kv_cache_dtype=spec.speculative_draft_kv_cache_dtype,
        speculative_draft_model_path=spec.speculative_draft_model_path,
    )


def read_settings(source: ConfigSource | None = None) -> PlanSettings:
    """The plan's settings from a context's bags or a runner's view (a draft runner passes
    its own view, so its overlay never leaks into the target's plan). Each read goes
    through `bag()`, so role scoping applies as it does to the accessors."""
    return settings_from(seam.config_of(source if source is not None else process_context()))


def write_back(plan: KvPlan, context: Context[Any] | None = None) -> tuple[OverrideEntry, ...]:
    """Record the plan's load-time decisions in the context, one override per source tag,
    skipping values the context already holds and leaves its schema does not declare. The
    role's right to write them is checked first, for all of them at once (one SeamError)."""
    ctx = context if context is not None else process_context()
    was = plan.settings.written()
    changes = [d for d in plan.decisions if was[d.leaf] != d.value and d.leaf in ctx.registry.leaves]
    if changes:
        seam.check(ctx.registry, role=ctx.role, writes=[d.leaf for d in changes])
    entries: list[OverrideEntry] = []
    for decision in changes:
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
    workload_tokens: int | None = None  # one request's prompt + output: what a refusal's hint sizes for

    def _context(self) -> Context[Any]:
        return self.context if self.context is not None else process_context()

    def plan(self, view: RunnerView | None = None) -> KvPlan:
        """The plan under the current config (or a runner's view of it); no side effects."""
        settings = read_settings(view if view is not None else self._context())
        return plan_kv(self.shape, settings, self.memory, require_full_context=self.require_full_context,
                       workload_tokens=self.workload_tokens)

    def configure(self) -> KvPlan:
        """Plan from the process bags and write the load-time decisions back; the returned
        plan is what a reconfigure (which reads those write-backs) reproduces."""
        plan = self.plan()
        write_back(plan, self._context())
        return plan

    def allocate(self, plan: KvPlan, device: str | torch.device = "cpu") -> KvPools:
        from configbags.server.kvcache.pools import allocate

        return allocate(plan, device)
