"""The schema's fleet declarations, read and checked: `contracts.yaml` (the values servers
of a deployment must agree on, and the leaf naming a server's role) and the leaves marked
`metric: true`. Separate from the rest of the model so the fleet's rules live in one place;
`model.py` calls `build_fleet` once every namespace is known."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs

from configbags.runtime.fleet import is_fact
from configbags.runtime.leaftypes import closest

if TYPE_CHECKING:
    from configbags.codegen.load import Marked, SourceFile
    from configbags.codegen.model import Derived, Where
    from configbags.runtime.registry import LeafSpec

    ErrorFn = Callable[[Where, str, "str | None", "str | None"], None]


@attrs.frozen
class Contract:
    name: str
    help: str
    roles: tuple[str, ...]
    members: tuple[str, ...]
    where: Where


@attrs.frozen
class Fleet:
    role_leaf: str | None = None
    contracts: tuple[Contract, ...] = ()


def build_fleet(src: SourceFile | None, leaves: Mapping[str, LeafSpec], derived: Mapping[str, Derived],
                error: ErrorFn, place: Callable[[LeafSpec, str], Where]) -> Fleet:
    """The fleet model, reporting through `error(where, message, leaf, hint)`: a metric
    leaf must be numeric and not secret; a contract's members must be leaves, derived
    values or facts, never secret; its roles must be choices of `role_leaf`. `place(leaf,
    prop)` is where a leaf's property is written."""
    _check_metrics(leaves, error, place)
    if src is None or not src.intact:
        return Fleet()
    role_leaf = src.data.get("role_leaf")
    roles = _roles(src, role_leaf, leaves, error) if role_leaf is not None else None
    contracts = tuple(_contract(src, name, spec, leaves, derived, role_leaf, roles, error)
                      for name, spec in src.data["contracts"].items()
                      if name not in src.broken)  # a broken one's shape is wrong (reported)
    return Fleet(role_leaf, contracts)


def _check_metrics(leaves: Mapping[str, LeafSpec], error: ErrorFn, place: Callable[[LeafSpec, str], Where]
                   ) -> None:
    """A leaf marked `metric: true` (its record's `metric`, the one list of the gauges)
    must be able to be one: numeric or bool, not secret."""
    for leaf in leaves.values():
        if not leaf.metric:
            continue
        if not leaf.type.numeric and leaf.type.base != "bool":
            error(place(leaf, "metric"), f"metric: true needs a numeric or bool leaf, not {leaf.type}", leaf.name,
                  "drop `metric: true` (a gauge holds a number; free text would be unbounded labels)")
        elif leaf.secret:
            error(place(leaf, "metric"), "a secret leaf cannot be a metric", leaf.name, "drop `metric: true`")


def _roles(src: SourceFile, role_leaf: str, leaves: Mapping[str, LeafSpec], error: ErrorFn
           ) -> tuple[str, ...] | None:
    """The deployment roles: the choices of `role_leaf`, which must be a str leaf with
    `choices`, not secret (None when it is not)."""
    from configbags.codegen.model import Where

    where = Where(src.display, src.data.line_of("role_leaf"))
    role_spec = leaves.get(role_leaf)
    if role_spec is None:
        error(where, f"role_leaf {role_leaf!r} is not a leaf{closest(role_leaf, leaves)}", None,
              "name the str leaf that holds a server's deployment role")
    elif (role_spec.type.base != "str" or role_spec.type.item is not None or role_spec.choices is None
          or role_spec.secret):
        error(where, f"role_leaf {role_leaf!r} must be a str leaf with `choices` (the roles), not secret",
              role_leaf, "give the leaf `type: str` and `choices:` naming the deployment roles")
    else:
        return tuple(str(c) for c in role_spec.choices)
    return None


def _contract(src: SourceFile, name: str, spec: Marked, leaves: Mapping[str, LeafSpec],
              derived: Mapping[str, Derived], role_leaf: str | None, roles: tuple[str, ...] | None,
              error: ErrorFn) -> Contract:
    """One contract, its members and roles checked."""
    from configbags.codegen.model import Where

    members = tuple(spec["leaves"])
    at = Where(src.display, spec.line_of("leaves"))
    for member in members:
        _check_member(name, member, at, leaves, derived, error)
    for role in spec["roles"]:
        if roles is not None and role not in roles:
            error(Where(src.display, spec.line_of("roles")),
                  f"contract {name}: role {role!r} is not a choice of {role_leaf}{closest(role, roles)}",
                  None, f"use the roles {role_leaf} allows: {', '.join(roles)}")
    return Contract(name, spec["help"], tuple(spec["roles"]), members,
                    Where(src.display, src.data["contracts"].line_of(name)))


def _check_member(name: str, member: str, at: Where, leaves: Mapping[str, LeafSpec],
                  derived: Mapping[str, Derived], error: ErrorFn) -> None:
    """A contract member is a fact, a derived value or a leaf that is not secret."""
    if is_fact(member):
        return
    found = leaves.get(member)
    if found is None and member not in derived:
        error(at, f"contract {name}: {member!r} is not a leaf or derived value"
              f"{closest(member, {**leaves, **derived})}", member,
              "name a leaf of schema/namespaces/, a derived value, or a fact (model.config.<field>)")
    elif found is not None and found.secret:
        error(at, f"contract {name}: leaf {member!r} is secret; its value must never leave the "
              f"server, not even as a fingerprint", member, f"remove {member!r} from the contract")


def fleet_literal(fleet: Fleet) -> str:
    """The registry's `FleetSpec(...)` expression."""
    from configbags.codegen.render import py

    contracts = "".join(
        f"ContractSpec({py(c.name)}, {py(c.help)}, {py(c.roles)}, {py(c.members)}, "
        f"{py(f'{c.where.file}:{c.where.line}')}), "
        for c in fleet.contracts
    )
    return f"FleetSpec(role_leaf={py(fleet.role_leaf)}, contracts=({contracts}))"


def fleet_imports(fleet: Fleet) -> set[str]:
    """The runtime names `fleet_literal` uses."""
    return {"FleetSpec", *(["ContractSpec"] if fleet.contracts else [])}
