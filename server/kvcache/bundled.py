"""Settings for a caller that plans without a config context (tests, benchmarks, tools):
the leaves the bundled schema's rules and fallbacks decide, decided by them.

The planner decides none of those leaves itself (the default mem_fraction_static, the page
size an attention backend forces, Gemma-2's full sliding-window pool: schema/rules.yaml),
so a pure caller runs the same rule pass publish runs, with the device's and the model's
facts, instead of a copy of the rules."""

from __future__ import annotations

from typing import Any

import attrs

from configbags.generated.registry import REGISTRY
from configbags.runtime.resolve import Facts, GpuFacts, Layer, ModelFacts, Origin, resolve
from configbags.server.kvcache.model_shape import ModelShape
from configbags.server.kvcache.settings import DeviceMemory, PlanSettings

# A value the caller gave counts as operator input, as a `ServerArgs(...)` built in code
# does: a rule keeps off it unless the rule is forced.
_GIVEN = Origin(Layer.CLI, "PlanSettings(...)")


def with_bundled_rules(settings: PlanSettings, shape: ModelShape, memory: DeviceMemory) -> PlanSettings:
    """`settings` with every leaf the bundled schema's rules or fallbacks decide resolved
    as publish resolves it: a field that differs from its schema default is operator
    input; the others take what the rules make of the device's total memory
    (`memory.capacity`) and the model's architectures, then the schema fallbacks. Derived
    fields the rules do not move (attn_tp_size, ...) stay as given; one whose inputs a rule
    moved (enable_mamba_extra_buffer, from the resolved mamba strategy) is recomputed."""
    leaves = REGISTRY.leaves
    fields = {f.name for f in attrs.fields(PlanSettings)}
    given = {name: getattr(settings, name) for name in fields if name in leaves}
    values: dict[str, Any] = {name: spec.default for name, spec in leaves.items()}
    values.update(given)
    origins = {name: _GIVEN for name, value in given.items() if value != leaves[name].default}
    facts = Facts(GpuFacts(memory_bytes=memory.capacity, sm=memory.sm), ModelFacts(shape.architectures, shape.config))
    resolved = resolve(REGISTRY, values, origins, facts).values
    for name, fallback in REGISTRY.fallbacks.items():
        if resolved[name] is None:
            resolved[name] = fallback
    out = {n: resolved[n] for n, v in given.items() if resolved[n] != v}
    # a derived field follows its inputs, as the context recomputes it: the mamba extra
    # buffers follow the resolved strategy
    # (a pure caller's given value of such a field does not survive, as a published one would
    # not); one with inputs PlanSettings does not carry (attn_dp_size from dp_size) stays
    # as given unless a rule moved one of them
    for name, spec in REGISTRY.derived.items():
        if name in fields and (set(spec.inputs) <= fields or any(i in out for i in spec.inputs)):
            value = spec.fn(*(resolved[i] for i in spec.inputs))
            if value != getattr(settings, name):
                out[name] = value
    return attrs.evolve(settings, **out)


__all__ = ["with_bundled_rules"]
