"""Leaf metadata the context needs at run time. The generated `registry.py` builds one
`Registry` from the schema; everything here is generic over schemas."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import attrs

from configbags.runtime.fleet import FleetSpec
from configbags.runtime.leaftypes import (
    REDACTED as REDACTED,  # re-exported: where readers look for it
)
from configbags.runtime.leaftypes import Policy, TypeSpec
from configbags.runtime.spelling import Claim, flag_of, leaf_spellings

# REDACTED (configbags.runtime.leaftypes) is what every readback, log line, error message,
# config dump and doc page prints instead of a secret leaf's value.


@attrs.frozen
class Renamed:
    """An old spelling of a leaf: its old name (config-file key), flag and env variable.
    Using it warns once per spelling; once the schema version reaches `remove_in` it is an
    error that names the replacement."""

    name: str
    flag: str | None = None
    env: str | None = None
    since: str | None = None
    remove_in: str | None = None


@attrs.frozen
class Deprecation:
    """A deprecated leaf: setting it warns once per spelling; from `remove_in` on it fails."""

    since: str
    use: str | None = None  # the leaf to set instead
    remove_in: str | None = None


def _default_flags(spec: LeafSpec) -> tuple[str, ...]:
    return (flag_of(spec.name),)


def _default_hash(spec: LeafSpec) -> bool:
    return spec.policy is not Policy.RUNTIME and spec.kind is None and not spec.secret


@attrs.frozen(kw_only=True)
class LeafSpec:
    """One leaf: the one record of it, which the generator builds from the schema (and
    checks), the generated registry prints and the runtime reads. Every field past `help`
    has the value most leaves share, and the generated registry spells out only the fields
    that differ, so a new leaf property is a field here and a line where the generator
    reads the schema (configbags.codegen.model)."""

    name: str
    namespace: str
    type: TypeSpec
    owner: str  # the role that resolves it and may override it
    help: str = ""
    default: Any = None  # canonical (lists as tuples); None for a required leaf
    required: bool = False
    has_fallback: bool = False
    fallback: Any = None  # what replaces None when resolved (only with `default: null`)
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    policy: Policy = Policy.STARTUP
    capacity: str | None = None  # the leaf that bounds a runtime-tunable one
    # primary first; `()`: no flag (`cli: false`), set by config file or environment only
    flags: tuple[str, ...] = attrs.field(default=attrs.Factory(_default_flags, takes_self=True))
    suppress_help: bool = False  # the flag works but --help does not list it
    # argparse's `const`: the value the bare flag stands for (`has_const` tells a declared
    # `const: null` from none); with nargs "?" the flag also takes a value, with 0 never
    has_const: bool = False
    const: Any = None
    nargs: str | int | None = None  # "+"/"*" for lists, "?"/0 with a const; None: the type's own
    writers: tuple[str, ...] = ()  # roles besides the owner that may override it (schema `writers:`)
    env: str | None = None  # the environment variable that sets it (layer `env`)
    secret: bool = False  # redacted everywhere it is shown, never hashed
    renamed_from: tuple[Renamed, ...] = ()
    deprecated: Deprecation | None = None
    kind: str | None = None  # `memory` or `capacity`: sizing, not semantics (not hashed)
    metric: bool = False  # exported as a gauge on /metrics (schema `metric: true`)
    # a json leaf's declared inner structure (configbags.runtime.nested): dotted flags, checked
    structure: Mapping[str, Any] | None = None
    # whether it feeds the config hash; unless the schema says, only what can neither change
    # at runtime, size buffers nor be secret
    hash: bool = attrs.field(default=attrs.Factory(_default_hash, takes_self=True))

    @property
    def spellings(self) -> Claim:
        """Every spelling of this leaf on the command line (configbags.runtime.spelling)."""
        return leaf_spellings(self.name, {"flag": self.flags[0], "aliases": self.flags[1:]} if self.flags else False,
                              renamed=[(r.name, r.flag) for r in self.renamed_from],
                              negatable=self.type.base == "bool")

    def shown(self, value: Any) -> Any:
        """The value as it may be printed: secrets (when set) become REDACTED."""
        return redacted(self, value)


def redacted(spec: LeafSpec | None, value: Any) -> Any:
    """The one redaction rule: a set secret leaf prints as REDACTED, anything else as is.
    server_info, explain, logs, the config dump, error messages and CONFIG.md all use it."""
    if spec is not None and spec.secret and value is not None:
        return REDACTED
    return value


def secret_repr(value: Any) -> str:
    """How a generated class's `repr()` shows a secret field (attrs' `repr=`): whether it is
    set, never its value, so a logged bag, record or snapshot keeps the key out of the log."""
    return "None" if value is None else REDACTED


@attrs.frozen
class Condition:
    """One test of a rule's `when:` on a fact (`gpu.memory_bytes`, `model.architectures`,
    `model.config.<field>`) or on another leaf's value."""

    subject: str
    op: str  # eq ne in not_in contains gte gt lte lt present
    operand: Any


@attrs.frozen
class RuleSpec:
    """A declared rule: when every condition holds, `leaf` takes `value` (or what `fn`
    returns for `inputs`; None means no opinion) at layer `hardware` or `model`. Operator
    input (preset, config file, env, CLI) wins unless the rule says `force` (its reason)."""

    id: str
    leaf: str
    layer: str
    when: tuple[Condition, ...]
    value: Any
    fn: Callable[..., Any] | None
    inputs: tuple[str, ...]
    force: str | None
    help: str
    where: str  # file:line of its declaration


@attrs.frozen
class PresetSpec:
    name: str
    help: str
    values: Mapping[str, Any]


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
    doc: str = ""  # its schema `doc` (the namespace's --help group says it)


TEST_ROLE = "test"  # the one role a schema may give `write_any` (the generator refuses it on others)


@attrs.frozen
class RoleSpec:
    name: str
    reads: frozenset[str]
    write_any: bool


def accessor_expression(namespace: str, name: str) -> str:
    """How code reads a leaf: `accessor_expression("exec.kernel", "attention_backend")` is
    `cfg.exec.kernel.attention_backend`, the generated accessors module's `cfg` (slot loads,
    about as cheap as a legacy `server_args.x`; a `get_exec().kernel...` call costs several
    times that). One spelling for the generator, the ratchet's messages and fixes, and
    run-time errors."""
    return ".".join(["cfg", namespace, name] if name else ["cfg", namespace])


def _ancestors(path: str) -> tuple[str, ...]:
    parts = path.split(".")
    return tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))


_CASCADES_KEPT = 4096  # distinct sets of overridden leaves remembered per registry


class Cascade(NamedTuple):
    """What a change of some leaves sets off, each in the order it must run."""

    recompute: tuple[str, ...]  # derived values (not pinned), inputs before dependents
    rebuild: tuple[str, ...]  # namespace paths, children before parents
    restamp: bool  # a rebuilt namespace has ranks
    slots: tuple[str, ...]  # the rebuilt top-level namespaces: the accessor slots to refill


@attrs.frozen
class Registry:
    """Everything the context knows about a schema, plus indexes computed once."""

    leaves: Mapping[str, LeafSpec]
    derived: Mapping[str, DerivedSpec]  # inputs before dependents
    namespaces: Mapping[str, NamespaceSpec]  # parents after children (build order)
    roles: Mapping[str, RoleSpec]
    top_level: tuple[str, ...]
    rules: tuple[RuleSpec, ...] = ()  # hardware rules first, then model rules, in file order
    presets: Mapping[str, PresetSpec] = attrs.field(factory=dict)
    schema_version: str = "0"
    env_prefix: str | None = None  # unknown variables under it are warned about
    abbreviations: str = "off"  # "legacy": the CLI expands unique prefixes of flags, with a warning
    fleet: FleetSpec = attrs.field(factory=FleetSpec)  # contracts, the deployment-role leaf
    # leaf or derived name -> the derived values to recompute when it changes, in order
    dependents: Mapping[str, tuple[str, ...]] = attrs.field(init=False)
    # leaf or derived name -> its namespace and every ancestor, innermost first
    rebuild: Mapping[str, tuple[str, ...]] = attrs.field(init=False)
    hashed: tuple[str, ...] = attrs.field(init=False)
    rules_by_leaf: Mapping[str, tuple[RuleSpec, ...]] = attrs.field(init=False)
    env_names: Mapping[str, str] = attrs.field(init=False)  # every bound variable (old ones too) -> leaf
    renamed: Mapping[str, tuple[str, Renamed]] = attrs.field(init=False)  # old name -> (leaf, spelling)
    fallbacks: Mapping[str, Any] = attrs.field(init=False)  # leaf -> the value that replaces None
    metrics: tuple[str, ...] = attrs.field(init=False)  # the leaves marked `metric`, in schema order
    # frozenset of changed names -> its Cascade; filled as overrides meet new sets of leaves
    _cascades: dict[frozenset[str], Cascade] = attrs.field(init=False, factory=dict, eq=False)

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
        hashed = [n for n, s in self.leaves.items() if s.hash and not s.secret]
        hashed += [n for n, d in self.derived.items() if d.hash]
        object.__setattr__(self, "hashed", tuple(sorted(hashed)))
        rules: dict[str, tuple[RuleSpec, ...]] = {}
        for rule in self.rules:
            rules[rule.leaf] = (*rules.get(rule.leaf, ()), rule)
        object.__setattr__(self, "rules_by_leaf", rules)
        env = {s.env: n for n, s in self.leaves.items() if s.env}
        spellings: dict[str, tuple[str, Renamed]] = {}
        for n, s in self.leaves.items():
            for old in s.renamed_from:
                spellings[old.name] = (n, old)
                if old.env:
                    env[old.env] = n
        object.__setattr__(self, "env_names", env)
        object.__setattr__(self, "fallbacks", {n: s.fallback for n, s in self.leaves.items() if s.has_fallback})
        object.__setattr__(self, "renamed", spellings)
        object.__setattr__(self, "metrics", tuple(n for n, s in self.leaves.items() if s.metric))

    def cascade(self, names: Iterable[str]) -> Cascade:
        """The derived values to recompute and the namespaces to rebuild when `names` change
        (memoised: an override pays for a dict lookup, not for walking the schema)."""
        key = frozenset(names)
        found = self._cascades.get(key)
        if found is None:
            touched = set(key).union(*(self.dependents[n] for n in key))
            spaces = {ns for n in touched for ns in self.rebuild[n]}
            rebuild = tuple(p for p in self.namespaces if p in spaces)
            found = Cascade(
                recompute=tuple(d for d, spec in self.derived.items() if d in touched and not spec.pinned),
                rebuild=rebuild,
                restamp=any(self.namespaces[p].ranks for p in rebuild),
                slots=tuple(p for p in self.top_level if p in spaces),
            )
            if len(self._cascades) < _CASCADES_KEPT:  # sets of leaves come from callers: bounded
                self._cascades[key] = found
        return found

    def shown(self, name: str, value: Any) -> Any:
        """`value` of leaf `name` as it may be printed (secrets redacted)."""
        return redacted(self.leaves.get(name), value)

    def may_write(self, role: str, leaf: LeafSpec) -> bool:
        """Whether `role` may override `leaf`, its policy aside: the owner, a role the leaf
        names in `writers`, or a `write_any` role (tests). The one owner rule: the context
        enforces it, and the HTTP config API derives its writable leaves from it."""
        spec = self.roles.get(role)
        return role == leaf.owner or role in leaf.writers or bool(spec and spec.write_any)

    def tests_only(self, role: str) -> bool:
        """Whether `role` writes every leaf (`write_any`) and so is admitted only inside a
        test scope (`Context.acting_as`): outside one, its every change is refused, whatever
        `owner` and `writers` say."""
        spec = self.roles.get(role)
        return bool(spec and spec.write_any)

    def writable_by(self, role: str) -> tuple[LeafSpec, ...]:
        """The leaves `role` may override after publish (not `startup`), in schema order."""
        return tuple(s for s in self.leaves.values() if s.policy is not Policy.STARTUP and self.may_write(role, s))

    def namespace_of(self, name: str) -> str:
        spec = self.leaves.get(name) or self.derived.get(name)
        return spec.namespace if spec else "?"

    def accessor_of(self, name: str) -> str:
        """How code should read a leaf: `cfg.exec.kernel.attention_backend`."""
        return accessor_expression(self.namespace_of(name), name)
