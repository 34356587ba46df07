"""Leaf metadata the context needs at run time. The generated `registry.py` builds one
`Registry` from the schema; everything here is generic over schemas."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from configbags.runtime.leaftypes import Policy, TypeSpec


@attrs.frozen
class LeafSpec:
    name: str
    namespace: str
    type: TypeSpec
    default: Any
    required: bool
    has_fallback: bool
    fallback: Any
    choices: tuple[Any, ...] | None
    minimum: float | None
    maximum: float | None
    owner: str
    policy: Policy
    hash: bool
    capacity: str | None
    flags: tuple[str, ...]
    writers: tuple[str, ...] = ()  # roles besides the owner that may override it (schema `writers:`)


@attrs.frozen
class DerivedSpec:
    name: str
    namespace: str
    type: TypeSpec
    fn: Callable[..., Any]
    inputs: tuple[str, ...]
    pinned: bool
    hash: bool


@attrs.frozen
class NamespaceSpec:
    path: str
    bag: type
    fields: tuple[str, ...]  # leaves and derived values, in bag order
    children: tuple[tuple[str, str], ...]  # (attribute, child namespace path)
    ranks: tuple[str, ...] = ()  # stamped at publish, never config


@attrs.frozen
class RoleSpec:
    name: str
    reads: frozenset[str]
    write_any: bool


def accessor_expression(namespace: str, name: str) -> str:
    """How code reads a leaf: `accessor_expression("exec.kernel", "attention_backend")` is
    `get_exec().kernel.attention_backend`. One spelling for the generator, the ratchet's
    messages and fixes, and run-time errors."""
    top, *rest = namespace.split(".")
    return ".".join([f"get_{top}()", *rest, name])


def _ancestors(path: str) -> tuple[str, ...]:
    parts = path.split(".")
    return tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))


@attrs.frozen
class Registry:
    """Everything the context knows about a schema, plus indexes computed once."""

    leaves: Mapping[str, LeafSpec]
    derived: Mapping[str, DerivedSpec]  # inputs before dependents
    namespaces: Mapping[str, NamespaceSpec]  # parents after children (build order)
    roles: Mapping[str, RoleSpec]
    top_level: tuple[str, ...]
    # leaf or derived name -> the derived values to recompute when it changes, in order
    dependents: Mapping[str, tuple[str, ...]] = attrs.field(init=False)
    # leaf or derived name -> its namespace and every ancestor, innermost first
    rebuild: Mapping[str, tuple[str, ...]] = attrs.field(init=False)
    hashed: tuple[str, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        order = list(self.derived)
        deps: dict[str, tuple[str, ...]] = {}
        for name in (*self.leaves, *self.derived):
            affected = {name}
            for d in order:
                if affected.intersection(self.derived[d].inputs):
                    affected.add(d)
            deps[name] = tuple(d for d in order if d in affected and d != name)
        object.__setattr__(self, "dependents", deps)
        where = {**{n: s.namespace for n, s in self.leaves.items()},
                 **{n: s.namespace for n, s in self.derived.items()}}
        object.__setattr__(self, "rebuild", {n: _ancestors(ns) for n, ns in where.items()})
        hashed = [n for n, s in self.leaves.items() if s.hash]
        hashed += [n for n, d in self.derived.items() if d.hash]
        object.__setattr__(self, "hashed", tuple(sorted(hashed)))

    def may_write(self, role: str, leaf: LeafSpec) -> bool:
        """Whether `role` may override `leaf`, its policy aside: the owner, a role the leaf
        names in `writers`, or a `write_any` role (tests). The one owner rule: the context
        enforces it, and the HTTP config API derives its writable leaves from it."""
        spec = self.roles.get(role)
        return role == leaf.owner or role in leaf.writers or bool(spec and spec.write_any)

    def writable_by(self, role: str) -> tuple[LeafSpec, ...]:
        """The leaves `role` may override after publish (not `startup`), in schema order."""
        return tuple(s for s in self.leaves.values() if s.policy is not Policy.STARTUP and self.may_write(role, s))

    def namespace_of(self, name: str) -> str:
        spec = self.leaves.get(name) or self.derived.get(name)
        return spec.namespace if spec else "?"

    def accessor_of(self, name: str) -> str:
        """How code should read a leaf: `get_exec().kernel.attention_backend`."""
        return accessor_expression(self.namespace_of(name), name)
