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
    fields (attn_tp_size, ...) stay as given."""
    leaves = REGISTRY.leaves
    given = {f.name: getattr(settings, f.name) for f in attrs.fields(PlanSettings) if f.name in leaves}
    values: dict[str, Any] = {name: spec.default for name, spec in leaves.items()}
    values.update(given)
    origins = {name: _GIVEN for name, value in given.items() if value != leaves[name].default}
    facts = Facts(GpuFacts(memory_bytes=memory.capacity), ModelFacts(shape.architectures))
    resolved = resolve(REGISTRY, values, origins, facts).values
    for name, fallback in REGISTRY.fallbacks.items():
        if resolved[name] is None:
            resolved[name] = fallback
    return attrs.evolve(settings, **{n: resolved[n] for n, v in given.items() if resolved[n] != v})


__all__ = ["with_bundled_rules"]
