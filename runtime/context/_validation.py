"""Override validation: every leaf of a change is checked before anything is built, so an
override applies whole or not at all."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

from configbags.runtime.context._install import RoleScoping
from configbags.runtime.context._records import State
from configbags.runtime.errors import (
    CapacityError,
    LeafValueError,
    OwnerError,
    PolicyError,
    UnknownLeafError,
)
from configbags.runtime.leaftypes import (
    NONE_LIKE_SECRET,
    Policy,
    check_bounds,
    closest,
    is_text,
    none_like,
    short_repr,
)
from configbags.runtime.registry import REDACTED, LeafSpec, Registry


class OverrideValidator:
    """Checks a batch of leaf values before anything is built: known leaf, type and range,
    then (for overrides) policy and owner, and every capacity bound. Raises the refusal
    that names the leaf, its policy and owner, and the fix."""

    def __init__(self, registry: Registry, scoping: RoleScoping,
                 writer: contextvars.ContextVar[str | None]) -> None:
        self.registry = registry
        self._scoping = scoping
        self._writer = writer  # the role overrides are checked as, when not the process's own

    def validate(
        self, state: State, leaves: Mapping[str, Any], *, source: str, check_policy: bool
    ) -> dict[str, Any]:
        reg = self.registry
        check_source(source)
        coerced: dict[str, Any] = {}
        for name, value in leaves.items():
            spec = reg.leaves.get(name)
            if spec is None:
                if name in reg.derived:
                    d = reg.derived[name]
                    raise PolicyError(
                        f"{d.namespace}.{name} is derived from {', '.join(d.inputs)} and cannot be "
                        f"overridden; override its inputs instead"
                    )
                raise UnknownLeafError(
                    f"override from {source!r}: {name!r} is not a config leaf"
                    f"{closest(name, reg.leaves)}"
                )
            try:
                new = spec.type.coerce(value)
                check_bounds(new, choices=spec.choices, minimum=spec.minimum, maximum=spec.maximum)
            except LeafValueError as exc:
                why = REDACTED + " is not valid" if spec.secret else str(exc)
                raise LeafValueError(
                    f"override of {spec.namespace}.{name} (policy {spec.policy}, owner "
                    f"{spec.owner}) from {source!r} in role {self.acting(state)!r}: {why}; give a value "
                    f"of type {spec.type} within the declared choices/range"
                ) from None
            if spec.secret and isinstance(new, str) and none_like(new):
                raise LeafValueError(f"override of {spec.namespace}.{name} from {source!r}: the value {NONE_LIKE_SECRET}")
            if spec.secret and new is None and state.values.get(name) is not None:
                # an override is the highest layer, and a null there never unsets a secret a
                # lower layer set (as an empty variable over a flag's key is refused)
                raise LeafValueError(
                    f"override of {spec.namespace}.{name} from {source!r}: null would unset the secret a lower "
                    f"layer set, and a null in a higher layer never unsets one; to turn it off, take it out of "
                    f"the layer that sets it (and restart), or give another value")
            if check_policy:
                self.check_policy(state, spec, source)
            coerced[name] = new
        for name, new in coerced.items():
            self.check_capacity(state, reg.leaves[name], new, coerced)
        return coerced

    def acting(self, state: State) -> str:
        """The role a change is checked as: the one acted as (the HTTP door's `operator`),
        else the process's own. Refusals name it, not the role that published."""
        return self._writer.get() or state.role

    def check_policy(self, state: State, spec: LeafSpec, source: str) -> None:
        if spec.policy is Policy.STARTUP:
            raise PolicyError(
                f"override of {where(spec)} from {source!r} refused: startup leaves are fixed at publish; "
                f"set it in the operator input ({'/'.join(spec.flags) or 'config file'}) instead"
            )
        if spec.policy is Policy.LOAD_TIME and state.sealed:
            raise PolicyError(
                f"override of {where(spec)} from {source!r} refused: the context was sealed at the end of "
                f"model load; resolve it before seal() or declare it `override: runtime`"
            )
        writer = self._writer.get()
        if not self.registry.may_write(writer or state.role, spec):
            who = f"it is written as role {writer!r}" if writer else f"this process has role {state.role!r}"
            allowed = f"the owner role {spec.owner!r}" + "".join(f" or writer {w!r}" for w in spec.writers)
            raise OwnerError(
                f"override of {where(spec)} from {source!r} refused: {who}, and only {allowed} may "
                f"write it; do it in the {spec.owner} process, or name the role in the leaf's "
                f"`writers:` in the schema"
            )

    def check_capacity(self, state: State, spec: LeafSpec, new: Any, batch: Mapping[str, Any]) -> None:
        if spec.capacity is None or new is None:
            return
        bound = batch.get(spec.capacity, state.values.get(spec.capacity))
        if bound is not None and new > bound:
            where = self.registry.namespace_of(spec.capacity)
            shown = f"={self.registry.shown(spec.capacity, bound)!r}"  # a secret bound never shows
            if spec.capacity not in batch:  # the caller gave it: no news to them
                top = where.partition(".")[0]
                if self._scoping.mode == "enforce" and top not in self._scoping.readable(state.role):
                    # The message must not reveal a namespace the role may not read.
                    shown = f" (its value is in namespace {top!r}, which role {state.role!r} may not read)"
                else:
                    self._scoping.admit(state, top, f"capacity check of {spec.name}")
            raise CapacityError(
                f"override of {spec.namespace}.{spec.name}={new!r} (policy {spec.policy}, owner "
                f"{spec.owner}, role {self.acting(state)!r}) refused: above its capacity "
                f"{where}.{spec.capacity}{shown}, which "
                f"sized buffers at publish; {self.capacity_hint(spec.capacity)}"
            )

    def capacity_hint(self, capacity: str) -> str:
        derived = self.registry.derived.get(capacity)
        if derived is None:
            flags = self.registry.leaves[capacity].flags
            return f"raise {capacity} at startup ({flags[0] if flags else 'config file'})"
        inputs = [self.registry.leaves[i] for i in derived.inputs if i in self.registry.leaves]
        named = ", ".join(s.flags[0] if s.flags else s.name for s in inputs)
        return f"it is derived at publish from its inputs; raise them at startup ({named})"


def where(spec: LeafSpec) -> str:
    """A leaf as refusals name it (built only when a refusal is raised)."""
    return f"{spec.namespace}.{spec.name} (policy {spec.policy.value}, owner {spec.owner})"


def check_source(source: object) -> None:
    """An override's source is what the log, server_info and explain show as who changed
    the value: a short line of text (None or a dict would be logged as given)."""
    if not isinstance(source, str) or not source.strip() or len(source) > 200 or not is_text(source) \
            or any(c in source for c in "\r\n"):
        raise LeafValueError(
            f"an override's source must be a line of text naming who changes the config (e.g. "
            f"'kv_pool.resolve'), not {short_repr(source)}"
        )
