"""What one server tells its fleet about itself, generic over schemas: the schema's
contracts (named groups of values that must be equal across the servers of given
deployment roles) and their fingerprints, the leaf naming this server's deployment role,
the leaves exported as metrics, and each leaf's apply class.

A fingerprint is computed from resolved values only, so two servers agree on a contract
exactly when every member resolved to the same value on both, whatever layer set it. The
generator refuses secret members, and a secret could never enter one anyway: `member_values`
skips secret leaves (one rule, `LeafSpec.secret`)."""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from configbags.runtime.leaftypes import Policy, jsonable

if TYPE_CHECKING:
    from configbags.runtime.context._records import State
    from configbags.runtime.registry import Registry
    from configbags.runtime.resolve import Origin

FACT_HEADS = ("gpu", "model")  # a contract member under these names a fact, not a leaf


class ApplyClass(str, enum.Enum):
    """How a change to a leaf reaches a running server, derived from its override policy:
    `live` (runtime: a PATCH applies it), `reload` (load_time: fixed once the model is
    loaded, so it needs the model loaded again), `restart` (startup: a new process)."""

    LIVE = "live"
    RELOAD = "reload"
    RESTART = "restart"

    def __str__(self) -> str:
        return self.value


_APPLY = {Policy.RUNTIME: ApplyClass.LIVE, Policy.LOAD_TIME: ApplyClass.RELOAD, Policy.STARTUP: ApplyClass.RESTART}
APPLY_REASONS = {
    ApplyClass.LIVE: "policy runtime: may change while the server runs",
    ApplyClass.RELOAD: "policy load_time: fixed once the model is loaded (the server is sealed)",
    ApplyClass.RESTART: "policy startup: fixed at publish",
}


def apply_class(policy: Policy) -> ApplyClass:
    """The one mapping from override policy to apply class (JSON Schema, OpenAPI, rollout,
    the watched file)."""
    return _APPLY[policy]


OPERATOR = "operator"  # the role HTTP changes are checked as (configbags serve's door)
CONTRACTS_ROUTE = "contracts"  # GET /config/contracts: the door's contracts readback
# what GET /config/<name> serves besides leaves: the generator refuses a leaf of such a
# name, which that route would shadow (its explain unreachable over HTTP)
CONFIG_ROUTES = frozenset({CONTRACTS_ROUTE})


def route(registry: Registry, leaf: str, writer: str = OPERATOR) -> tuple[ApplyClass, str]:
    """How a change to `leaf` reaches a running, sealed server when `writer` makes it: LIVE
    only if the leaf is runtime and `writer` may write it (`Registry.may_write`, the rule the
    context enforces) outside a test scope (`Registry.tests_only`), so a LIVE change is
    exactly what a PATCH accepts; else RELOAD or RESTART, with the reason. `configbags rollout` and `serve --watch` route alike."""
    spec = registry.leaves[leaf]
    klass = apply_class(spec.policy)
    if klass is ApplyClass.LIVE and registry.tests_only(writer):
        return ApplyClass.RESTART, (f"policy runtime, but role {writer} has `write_any` (for tests only), so the "
                                    f"server refuses its every change; a restart applies it")
    if klass is ApplyClass.LIVE and not registry.may_write(writer, spec):
        return ApplyClass.RESTART, (f"policy runtime, but only {spec.owner} may change it while the server "
                                    f"runs (its schema `writers:` does not name {writer}); a restart applies it")
    if klass is ApplyClass.RELOAD:
        return klass, APPLY_REASONS[klass] + "; a restart (or a model reload) applies it"
    if klass is ApplyClass.RESTART:
        return klass, APPLY_REASONS[klass] + "; a restart applies it"
    return klass, APPLY_REASONS[klass]


def above_capacity(registry: Registry, leaf: str, value: Any, running: Mapping[str, Any]) -> str | None:
    """Why a live change of `leaf` to `value` waits for a restart: the value is above its
    capacity on the running server (`running`: its resolved values, derived ones too, sized
    at publish), so the door would refuse it (409), while a restart sizes the capacity again
    from the new config. None when it is within (or has no capacity). `configbags rollout`
    and `serve --watch` split a change alike: its other live leaves apply now."""
    capacity = registry.leaves[leaf].capacity
    bound = running.get(capacity) if capacity is not None else None
    if bound is None or value is None or not value > bound:
        return None
    return (f"above its capacity {capacity}={bound!r} on the running server (the door refuses it: 409); a restart "
            f"sizes it again from the new config")


@attrs.frozen
class ContractSpec:
    """A named group of values (`members`: leaves, derived values or facts such as
    `model.config.vocab_size`) that every server whose deployment role is in `roles` must
    resolve alike."""

    name: str
    help: str
    roles: tuple[str, ...]
    members: tuple[str, ...]
    where: str  # file:line of its declaration


@attrs.frozen
class FleetSpec:
    """The schema's fleet declarations: `role_leaf` names the leaf whose resolved value is a
    server's deployment role. The leaves exported as gauges are the records' own
    (`LeafSpec.metric`, listed as `Registry.metrics`)."""

    role_leaf: str | None = None
    contracts: tuple[ContractSpec, ...] = ()


def is_fact(member: str) -> bool:
    return member.partition(".")[0] in FACT_HEADS


def member_values(registry: Registry, state: State, contract: ContractSpec) -> dict[str, Any]:
    """Each member's resolved value, as plain JSON data (a fact the server does not have is
    None; a secret never appears)."""
    out: dict[str, Any] = {}
    for member in contract.members:
        spec = registry.leaves.get(member)
        if spec is not None and spec.secret:
            continue
        if is_fact(member):
            out[member] = jsonable(state.facts.lookup(member)[1])
        else:
            out[member] = jsonable(state.values.get(member))
    return out


def fingerprint(contract: ContractSpec, values: Mapping[str, Any]) -> str:
    """A short stable digest of the contract's name, members and their values."""
    text = json.dumps([contract.name, [[m, values.get(m)] for m in contract.members]],
                      sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def server_role(registry: Registry, state: State) -> str | None:
    leaf = registry.fleet.role_leaf
    value = state.values.get(leaf) if leaf is not None else None
    return None if value is None else str(value)


def fingerprints(registry: Registry, state: State) -> dict[str, Any]:
    """What server_info() shows: this server's deployment role and each contract's
    fingerprint, with the roles it binds and whether this server's role is among them."""
    role = server_role(registry, state)
    return {
        "role": role,
        "contracts": {
            c.name: {"fingerprint": fingerprint(c, member_values(registry, state, c)),
                     "roles": list(c.roles), "binds": role in c.roles}
            for c in registry.fleet.contracts
        },
    }


def contracts_readback(registry: Registry, state: State, origins: Mapping[str, Origin]) -> dict[str, Any]:
    """What `GET /config/contracts` serves: the role, and per contract its fingerprint and
    every member's value with its provenance (layer, source and rule), so a fleet check can
    say which layer set each side of a disagreement."""
    role = server_role(registry, state)
    contracts: dict[str, Any] = {}
    for c in registry.fleet.contracts:
        values = member_values(registry, state, c)
        contracts[c.name] = {
            "help": c.help,
            "roles": list(c.roles),
            "binds": role in c.roles,
            "where": c.where,
            "fingerprint": fingerprint(c, values),
            "members": {m: {"value": v, **_provenance(registry, m, origins, state)} for m, v in values.items()},
        }
    role_leaf = registry.fleet.role_leaf
    return {
        "role": role,
        "role_leaf": role_leaf,
        "role_origin": _provenance(registry, role_leaf, origins, state) if role_leaf else None,
        "schema_version": registry.schema_version,
        "contracts": contracts,
    }


def _provenance(registry: Registry, member: str, origins: Mapping[str, Origin], state: State) -> dict[str, Any]:
    if is_fact(member):
        return {"layer": "fact", "source": f"the {member.partition('.')[0]} facts the server was published with"}
    derived = registry.derived.get(member)
    if derived is not None:
        # each input with its value and where that came from: a disagreement of the derived
        # value is fixed at an input (`dtype float16 from --dtype`)
        inputs = []
        for name in derived.inputs:
            spec = registry.leaves.get(name)
            value = jsonable(spec.shown(state.values.get(name)) if spec is not None else state.values.get(name))
            given = origins.get(name)
            source = "derived" if name in registry.derived else given.source if given is not None else "schema default"
            inputs.append(f"{name}={value!r} from {source}")
        return {"layer": "derived", "source": f"derived from {', '.join(inputs)}"}
    origin = origins.get(member)
    return origin.as_dict() if origin is not None else {"layer": "default", "source": "schema default"}
