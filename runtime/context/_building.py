"""Building States: resolving a record into values and bags, and the state after a set of
validated changes. Pure with respect to the process: nothing here is installed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from configbags.runtime.context._records import (
    OverrideEntry,
    OverrideLog,
    Ranks,
    State,
    origin_from,
    thaw,
)
from configbags.runtime.errors import LeafValueError
from configbags.runtime.leaftypes import short_repr
from configbags.runtime.record import origins_of, warn_once
from configbags.runtime.registry import DerivedSpec, LeafSpec, Registry
from configbags.runtime.resolve import NO_FACTS, Facts, Origin, resolve


class StateBuilder:
    """Builds States, never installs them: from a record (rules, fallbacks, derived values,
    bags, stamped ranks) and from validated changes (dependents recomputed, only touched
    bags rebuilt, ranks re-stamped)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def fresh(self, record: Any, role: str, ranks: Ranks | None, *, epoch: int, sealed: bool,
                     facts: Facts = NO_FACTS, resolution: Mapping[str, Any] | None = None) -> State:
        values, origins = self.resolve_record(record, facts, resolution)
        if ranks is None or isinstance(ranks, Mapping):
            rank_fn, stamped = None, dict(ranks or {})
        else:
            rank_fn, stamped = ranks, dict(ranks(values))
        return State(record=record, role=role, values=MappingProxyType(values),
                     bags=MappingProxyType(self.build_bags(values, stamped)), log=OverrideLog(),
                     epoch=epoch, sealed=sealed, ranks=MappingProxyType(stamped), rank_fn=rank_fn,
                     facts=facts, origins=MappingProxyType(dict(origins)))

    def apply(
        self, state: State, source: str, changes: Mapping[str, Any]
    ) -> tuple[State, tuple[OverrideEntry, ...]]:
        """Build (not install) the state after `changes`; a value that resolves to what is
        already in force (after fallbacks) is no change and logs nothing."""
        reg = self.registry
        changed = {
            n: v for n, v in changes.items()
            if (resolved := with_fallback(reg.leaves[n], v)) != state.values[n]
            or type(resolved) is not type(state.values[n])
        }
        if not changed:
            return state, ()
        epoch = state.epoch + 1
        now = time.time()
        entries = tuple(
            OverrideEntry(epoch, source, n, reg.leaves[n].namespace, state.values[n], v, now,
                          secret=reg.leaves[n].secret)
            for n, v in changed.items()
        )
        return self.advance(state, changed, state.log + entries, epoch), entries

    def advance(self, state: State, changed: Mapping[str, Any], log_: OverrideLog, epoch: int) -> State:
        values, bags, ranks = self.recompute(state, changed)
        if ranks is not state.ranks:
            ranks = MappingProxyType(dict(ranks))
        return State(record=state.record, role=state.role, values=MappingProxyType(values),
                     bags=MappingProxyType(bags), log=log_, epoch=epoch, sealed=state.sealed,
                     ranks=ranks, rank_fn=state.rank_fn,
                     facts=state.facts, origins=state.origins)

    def recompute(
        self, state: State, changed: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], Mapping[str, int]]:
        """New flat values, bags and ranks after `changed`: fallbacks re-applied, every
        dependent non-pinned derived value recomputed, only touched bags (and their parents)
        rebuilt, ranks re-stamped if their bag is rebuilt and they come from a function."""
        reg = self.registry
        cascade = reg.cascade(changed)
        values = thaw(state.values)
        for name, value in changed.items():
            values[name] = with_fallback(reg.leaves[name], value)
        for d in cascade.recompute:
            values[d] = derive(reg.derived[d], values)
        ranks = state.ranks
        if state.rank_fn is not None and cascade.restamp:
            ranks = dict(state.rank_fn(values))
        bags = thaw(state.bags)
        for path in cascade.rebuild:
            bags[path] = self.make_bag(path, values, bags, ranks)
        return values, bags, ranks

    def resolve_record(
        self, record: Any, facts: Facts, resolution: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], Mapping[str, Origin]]:
        """The record's values with the rules applied (or an exported resolution taken as
        is), then fallbacks and derived values; and the origin of each non-default value."""
        leaves = self.registry.leaves
        raw = {name: getattr(record, name) for name in leaves}
        if resolution is not None:
            origins: Mapping[str, Origin] = {
                n: origin_from(o) for n, o in resolution.get("origins", {}).items() if n in leaves
            }
            for name, value in resolution.get("rule_values", {}).items():
                raw[name] = leaves[name].type.coerce(value)
        else:
            done = resolve(self.registry, raw, origins_of(record, leaves), facts)
            origins = done.origins
            for warning in done.forced:  # once per process: plan resolves each model and TP size
                warn_once(warning, warning)
        values = raw
        for name, fallback in self.registry.fallbacks.items():
            if values[name] is None:
                values[name] = fallback
        for spec in self.registry.derived.values():
            values[spec.name] = derive(spec, values)
        return values, origins

    def build_bags(self, values: Mapping[str, Any], ranks: Mapping[str, int]) -> dict[str, Any]:
        bags: dict[str, Any] = {}
        for path in self.registry.namespaces:
            bags[path] = self.make_bag(path, values, bags, ranks)
        return bags

    def make_bag(self, path: str, values: Mapping[str, Any], bags: Mapping[str, Any],
                  ranks: Mapping[str, int]) -> Any:
        ns = self.registry.namespaces[path]
        kwargs = {f: values[f] for f in ns.fields}
        for attr, child in ns.children:
            kwargs[attr] = bags[child]
        bag = ns.bag(**kwargs)
        if ns.ranks and ranks:
            # Ranks are facts of this process, not config: stamped after construction; an
            # unstamped one raises from its property, saying what did not happen.
            object.__setattr__(bag, "_ranks", {r: ranks[r] for r in ns.ranks if r in ranks})
        return bag


def derive(spec: DerivedSpec, values: Mapping[str, Any]) -> Any:
    args = [values[i] for i in spec.inputs]
    try:
        value = spec.fn(*args)
    except Exception as exc:
        given = ", ".join(f"{i}={short_repr(a)}" for i, a in zip(spec.inputs, args, strict=True))
        if isinstance(exc, ValueError):  # the function refuses these inputs, and says why
            raise LeafValueError(
                f"derived value {spec.namespace}.{spec.name} refuses its inputs {given}: {exc}") from exc
        raise LeafValueError(
            f"derived value {spec.namespace}.{spec.name}: its function raised "
            f"{type(exc).__name__}: {exc} for inputs {given}; give inputs it accepts (or fix the "
            f"function)"
        ) from exc
    try:
        return spec.type.coerce(value)
    except LeafValueError as exc:
        raise LeafValueError(
            f"derived value {spec.namespace}.{spec.name}: {exc}; its function returned the wrong "
            f"type for inputs {', '.join(spec.inputs)} (fix the function or the declared type)"
        ) from None


def with_fallback(spec: LeafSpec, value: Any) -> Any:
    return spec.fallback if value is None and spec.has_fallback else value
