"""Stage 2: the schema model. Turns validated YAML into frozen records and runs every
cross-file check, collecting all errors before giving up (so one run reports them all)."""

from __future__ import annotations

import importlib
import keyword
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from configbags.codegen.errors import SchemaError, SchemaInvalid
from configbags.codegen.load import META_DIR, Marked, SourceFile, plain, read_yaml
from configbags.runtime.errors import LeafValueError
from configbags.runtime.leaftypes import TypeSpec, check_bounds

# Names the generated ServerArgs uses (its methods, --config, `self` in the attrs __init__,
# and the names its class body reads: attrs, dict, list, tuple); a leaf may not take them.
RESERVED = frozenset(
    {"config", "from_cli", "from_cli_args", "from_dict", "from_file", "to_dict", "add_cli_args",
     "replace", "attrs", "self", "dict", "list", "tuple"}
)
# Top-level namespaces become accessors (`get_<name>`), view slots and runner-view
# properties; these would shadow `get_context()`, `get_server_args()` or view attributes.
RESERVED_NAMESPACES = frozenset({"context", "server_args", "config", "bag", "name", "overlay"})
RESERVED_FLAGS = frozenset({"--config", "--help"})
DEFAULT_MIN_FILES = 5  # a ratchet scan reading fewer files than this is taken as broken


def flag_spellings(flags: tuple[str, ...], type_: TypeSpec) -> tuple[str, ...]:
    """Every command-line spelling a leaf with these flags takes: a bool leaf (optional or
    not) gets a --no- twin of each flag from BooleanOptionalAction. The one rule, shared
    with the importer (configbags.migrate.importer)."""
    if type_.base == "bool":
        return flags + tuple("--no-" + f[2:] for f in flags)
    return flags


def class_name(path: str) -> str:
    """The bag class of a namespace: `exec.kernel` -> `ExecKernel`."""
    return "".join(part.title().replace("_", "") for part in path.split("."))


@attrs.frozen
class Where:
    file: str
    line: int


@attrs.frozen
class Cli:
    flags: tuple[str, ...]  # primary first
    suppress_help: bool


@attrs.frozen
class Leaf:
    name: str
    namespace: str
    type: TypeSpec
    required: bool
    default: Any
    has_fallback: bool
    fallback: Any
    help: str
    cli: Cli | None
    choices: tuple[Any, ...] | None
    minimum: float | None
    maximum: float | None
    owner: str
    policy: str
    hash: bool
    capacity: str | None
    deprecated: str | None
    where: Where  # the line of the leaf's name
    lines: dict[str, int] = attrs.field(factory=dict, eq=False, repr=False)  # property -> line

    def at(self, prop: str) -> Where:
        """Where a property of this leaf is written (falls back to the leaf's name)."""
        return Where(self.where.file, self.lines.get(prop, self.where.line))


@attrs.frozen
class Derived:
    name: str
    namespace: str
    type: TypeSpec
    fn: str
    inputs: tuple[str, ...]
    help: str
    pinned: bool
    hash: bool
    where: Where


@attrs.frozen
class Rank:
    name: str
    help: str
    where: Where


@attrs.frozen
class Namespace:
    path: str
    doc: str
    leaves: tuple[Leaf, ...]
    derived: tuple[Derived, ...]
    ranks: tuple[Rank, ...]
    where: Where

    @property
    def values(self) -> tuple[Leaf | Derived, ...]:
        """Everything a bag of this namespace holds as a field, in bag order."""
        return (*self.leaves, *self.derived)

    @property
    def parent(self) -> str | None:
        return self.path.rpartition(".")[0] or None

    @property
    def attr(self) -> str:
        return self.path.rpartition(".")[2]


@attrs.frozen
class Audit:
    date: str
    workload: str
    observed: tuple[str, ...]
    uncovered: tuple[str, ...]
    decision: str


@attrs.frozen
class Role:
    name: str
    doc: str
    reads_all: bool
    reads: tuple[str, ...]  # top-level namespaces, sorted; every one when reads_all
    write_any: bool
    audits: tuple[Audit, ...]


@attrs.frozen
class AllowEntry:
    file: str
    function: str
    leaf: str
    reason: str


@attrs.frozen
class Ratchet:
    roots: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    raw_accessor: str = "get_server_args"
    record_class: str = "ServerArgs"
    record_attributes: tuple[str, ...] = ("server_args",)
    min_files: int = DEFAULT_MIN_FILES
    allowlist: tuple[AllowEntry, ...] = ()
    record_dicts: tuple[str, ...] = ()  # dict copies of the record, read and written by key
    resolution: tuple[str, ...] = ()  # `FILE:QUALNAME` or `QUALNAME`: may write the record
    writes: tuple[AllowEntry, ...] = ()  # writes outside the resolution phase kept for now


@attrs.frozen
class Schema:
    name: str  # the schema folder's name, as headers print it
    sources: tuple[str, ...]
    namespaces: tuple[Namespace, ...]  # sorted by path
    roles: tuple[Role, ...]
    ratchet: Ratchet
    derived_order: tuple[str, ...]  # derived names, inputs before dependents

    @property
    def leaves(self) -> tuple[Leaf, ...]:
        return tuple(leaf for ns in self.namespaces for leaf in ns.leaves)

    @property
    def derived(self) -> tuple[Derived, ...]:
        return tuple(d for ns in self.namespaces for d in ns.derived)

    @property
    def values(self) -> tuple[Leaf | Derived, ...]:
        return tuple(x for ns in self.namespaces for x in ns.values)

    @property
    def top_level(self) -> tuple[str, ...]:
        return tuple(ns.path for ns in self.namespaces if "." not in ns.path)

    def children(self, path: str) -> tuple[Namespace, ...]:
        return tuple(ns for ns in self.namespaces if ns.parent == path)


def load_schema(schema_dir: Path) -> Schema:
    """Load, validate and check a schema folder; raise SchemaInvalid with every error."""
    return _Builder(Path(schema_dir)).build()


class _Builder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.meta = META_DIR
        self.errors: list[SchemaError] = []

    def display(self, path: Path) -> str:
        return f"{self.root.name}/{path.relative_to(self.root).as_posix()}"

    def error(self, where: Where, message: str, leaf: str | None = None, hint: str | None = None) -> None:
        self.errors.append(SchemaError(where.file, where.line, message, leaf, hint))

    def read(self, path: Path, meta: str) -> SourceFile | None:
        return read_yaml(path, self.display(path), self.meta, meta, self.errors)

    # -- the whole folder ------------------------------------------------------------
    def build(self) -> Schema:
        files = sorted((self.root / "namespaces").glob("*.yaml"))
        if not files:
            self.errors.append(
                SchemaError(f"{self.root.name}/namespaces", 1, "no namespace files found",
                            hint="add schema/namespaces/<namespace>.yaml files")
            )
        namespaces = [ns for f in files if (src := self.read(f, "namespace.schema.json"))
                      and (ns := self.namespace(src))]
        roles_src = self._required_file("roles.yaml", "roles.schema.json")
        ratchet_path = self.root / "ratchet.yaml"
        ratchet_src = self.read(ratchet_path, "ratchet.schema.json") if ratchet_path.exists() else None
        namespaces.sort(key=lambda ns: ns.path)
        roles = self.roles(roles_src, namespaces) if roles_src else ()
        # parents count as present when their file exists, valid or not (no follow-on errors)
        self.check_namespaces(namespaces, {f.stem for f in files})
        self.check_leaves(namespaces, {r.name for r in roles})
        order = self.check_derived(namespaces)
        ratchet = self.ratchet(ratchet_src) if ratchet_src else Ratchet()
        if self.errors:
            raise SchemaInvalid(self.errors)
        sources = [self.display(f) for f in files] + [self.display(self.root / "roles.yaml")]
        if ratchet_src:
            sources.append(self.display(ratchet_path))
        return Schema(self.root.name, tuple(sorted(sources)), tuple(namespaces), roles, ratchet, order)

    def _required_file(self, name: str, meta: str) -> SourceFile | None:
        path = self.root / name
        if not path.exists():
            self.errors.append(SchemaError(self.display(path), 1, f"{name} is missing",
                                           hint=f"every schema folder needs {name}; see configbags/codegen/meta/{meta}"))
            return None
        return self.read(path, meta)

    # -- one namespace file ----------------------------------------------------------
    def namespace(self, src: SourceFile) -> Namespace | None:
        data = src.data
        path = data["namespace"]
        where = Where(src.display, data.line_of("namespace"))
        if src.path.stem != path:
            self.error(where, f"file declares namespace {path!r} but is named {src.path.name}",
                       hint=f"rename the file to {path}.yaml or fix `namespace:`")
        leaves = tuple(
            self.leaf(src, path, name, spec, data["leaves"].line_of(name))
            for name, spec in data["leaves"].items()
        )
        derived = tuple(
            self.derived_value(src, path, name, spec, data["derived"].line_of(name))
            for name, spec in data.get("derived", {}).items()
        )
        ranks = tuple(
            Rank(name, spec["help"], Where(src.display, spec.line)) for name, spec in data.get("ranks", {}).items()
        )
        return Namespace(path, data["doc"], leaves, derived, ranks, where)

    def leaf(self, src: SourceFile, namespace: str, name: str, spec: Marked, line: int) -> Leaf:
        where = Where(src.display, line)
        type_ = TypeSpec.parse(spec["type"])
        cli_spec = spec.get("cli", {})
        cli = None
        if cli_spec is not False:
            flag = cli_spec.get("flag", "--" + name.replace("_", "-"))
            cli = Cli((flag, *cli_spec.get("aliases", ())), bool(cli_spec.get("suppress_help", False)))
        choices = spec.get("choices")
        return Leaf(
            name=name,
            namespace=namespace,
            type=type_,
            required=bool(spec.get("required", False)),
            default=plain(spec.get("default")),
            has_fallback="fallback" in spec,
            fallback=spec.get("fallback"),
            help=spec["help"],
            cli=cli,
            choices=tuple(plain(choices)) if choices is not None else None,
            minimum=spec.get("min"),
            maximum=spec.get("max"),
            owner=spec["owner"],
            policy=spec["override"],
            hash=spec.get("hash", True),
            capacity=spec.get("capacity"),
            deprecated=spec.get("deprecated"),
            where=where,
            lines=dict(spec.key_lines),
        )

    def derived_value(self, src: SourceFile, namespace: str, name: str, spec: Marked, line: int) -> Derived:
        return Derived(
            name=name,
            namespace=namespace,
            type=TypeSpec.parse(spec["type"]),
            fn=spec["fn"],
            inputs=tuple(spec["inputs"]),
            help=spec["help"],
            pinned=spec.get("pin") == "publish",
            hash=spec.get("hash", True),
            where=Where(src.display, line),
        )

    # -- cross-file checks -----------------------------------------------------------
    def check_namespaces(self, namespaces: list[Namespace], present: set[str]) -> None:
        sub_names = {ns.attr for ns in namespaces if ns.parent}
        seen: dict[str, Where] = {}
        classes: dict[str, str] = {"Config": "the root bag"}
        for ns in namespaces:
            if not ns.parent and ns.path in RESERVED_NAMESPACES:
                self.error(ns.where, f"top-level namespace {ns.path!r} would shadow a generated name",
                           hint=f"rename it (reserved: {', '.join(sorted(RESERVED_NAMESPACES))})")
            bad_parts = [p for p in ns.path.split(".") if keyword.iskeyword(p)]
            if bad_parts:
                self.error(ns.where, f"namespace part {bad_parts[0]!r} is a Python keyword, so "
                           f"`{ns.path}` cannot be an attribute path", hint="rename the namespace")
            cls = class_name(ns.path)
            if cls in classes:
                self.error(ns.where, f"namespace {ns.path!r} gets class name {cls}, as does {classes[cls]}",
                           hint="rename one of the namespaces")
            classes.setdefault(cls, f"namespace {ns.path!r}")
            if ns.parent and ns.parent not in present:
                self.error(ns.where, f"namespace {ns.path!r} has no parent namespace file",
                           hint=f"add namespaces/{ns.parent}.yaml with a doc (it may have no leaves)")
            names: tuple[Leaf | Derived | Rank, ...] = (*ns.values, *ns.ranks)
            for item in names:
                if item.name in seen:
                    first = seen[item.name]
                    self.error(item.where, f"duplicate leaf name (first declared at {first.file}:{first.line})",
                               item.name, "leaf names are flat and globally unique; rename one")
                seen.setdefault(item.name, item.where)
                if item.name in sub_names:
                    self.error(item.where, "name collides with a sub-namespace of the same name", item.name,
                               "rename the leaf or the sub-namespace")
                if keyword.iskeyword(item.name) or item.name in RESERVED:
                    self.error(item.where, "name is a Python keyword or reserved by the generated code",
                               item.name, f"rename it (reserved: {', '.join(sorted(RESERVED))})")

    def check_leaves(self, namespaces: list[Namespace], roles: set[str]) -> None:
        numeric = {x.name: x.type.numeric for ns in namespaces for x in ns.values}
        flags: dict[str, str] = {}
        for ns in namespaces:
            for leaf in ns.leaves:
                self.check_leaf(leaf, roles, numeric)
                for flag in self._flag_spellings(leaf):
                    if flag in RESERVED_FLAGS:
                        self.error(leaf.where, f"CLI flag {flag} is reserved", leaf.name, "pick another flag")
                    elif flag in flags and flags[flag] != leaf.name:
                        self.error(leaf.where, f"CLI flag {flag} is also used by leaf {flags[flag]!r}",
                                   leaf.name, "give one of them another flag or alias")
                    flags.setdefault(flag, leaf.name)

    @staticmethod
    def _flag_spellings(leaf: Leaf) -> tuple[str, ...]:
        return flag_spellings(leaf.cli.flags, leaf.type) if leaf.cli is not None else ()

    def check_leaf(self, leaf: Leaf, roles: set[str], numeric: dict[str, bool]) -> None:
        def bad(message: str, hint: str, prop: str = "") -> None:
            self.error(leaf.at(prop), message, leaf.name, hint)

        if roles and leaf.owner not in roles:
            bad(f"owner {leaf.owner!r} is not a role in roles.yaml", f"use one of {', '.join(sorted(roles))}", "owner")
        base = leaf.type.base
        if leaf.choices is not None and base in ("bool", "json"):
            bad(f"choices make no sense for type {leaf.type}", "remove `choices`", "choices")
        elif leaf.choices is not None:
            item = TypeSpec("int" if base == "list[int]" else "str" if base == "list[str]" else base, False)
            for choice in leaf.choices:
                try:
                    item.coerce(choice)
                except LeafValueError as exc:
                    bad(f"choice {choice!r} does not fit the type: {exc}", f"make every choice a {item}", "choices")
        if (leaf.minimum is not None or leaf.maximum is not None) and base not in ("int", "float", "list[int]"):
            bad(f"min/max only apply to numeric types, not {leaf.type}", "remove `min`/`max`", "type")
            return  # value checks against nonsensical bounds would only add noise
        for prop, bound in (("min", leaf.minimum), ("max", leaf.maximum)):
            if bound is not None and not math.isfinite(bound):
                bad(f"{prop} {bound!r} is not a finite number", f"give a finite {prop} or none", prop)
                return
        if leaf.minimum is not None and leaf.maximum is not None and leaf.minimum > leaf.maximum:
            bad(f"min {leaf.minimum} is greater than max {leaf.maximum}", "swap or fix them", "max")
        if not leaf.required:
            self._check_value(leaf, "default", leaf.default)
        if leaf.has_fallback:
            if leaf.default is not None:
                bad("a fallback is only allowed with `default: null`",
                    "drop the fallback, or make the default null so the fallback applies when unset", "fallback")
            elif not leaf.type.optional:
                bad(f"a fallback needs an optional type, not {leaf.type}", f"use `type: optional {base}`",
                    "fallback")
            elif base in ("list[int]", "list[str]", "json"):
                bad("a fallback must be an immutable scalar", "use a scalar type or drop the fallback", "fallback")
            else:
                self._check_value(leaf, "fallback", leaf.fallback)
        if leaf.capacity is not None:
            if leaf.capacity not in numeric:
                bad(f"capacity {leaf.capacity!r} is not a leaf or derived value",
                    "name the leaf that bounds this one", "capacity")
            elif not numeric[leaf.capacity]:
                bad(f"capacity {leaf.capacity!r} is not numeric", "a capacity must be an int or float leaf",
                    "capacity")
            if not leaf.type.numeric:
                bad(f"only numeric leaves can have a capacity, not {leaf.type}", "remove `capacity`", "capacity")
            if leaf.policy == "startup":
                bad("a capacity bounds overrides, but this leaf is `override: startup`",
                    "make it load_time/runtime or remove `capacity`", "capacity")

    def _check_value(self, leaf: Leaf, what: str, value: Any) -> None:
        try:
            value = leaf.type.coerce(value)
            check_bounds(value, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
        except LeafValueError as exc:
            self.error(leaf.at(what), f"{what} {value!r} is invalid: {exc}", leaf.name,
                       f"make the {what} fit the type, choices and min/max")

    def check_derived(self, namespaces: list[Namespace]) -> tuple[str, ...]:
        leaves = {leaf.name for ns in namespaces for leaf in ns.leaves}
        derived = {d.name: d for ns in namespaces for d in ns.derived}
        for d in derived.values():
            for name in d.inputs:
                if name not in leaves and name not in derived:
                    self.error(d.where, f"unknown derived input {name!r}", d.name,
                               "inputs must name leaves or other derived values")
            self._check_fn(d)
        # Kahn's algorithm over derived->derived edges; a leftover means a cycle.
        order: list[str] = []
        pending = {name: {i for i in d.inputs if i in derived} for name, d in derived.items()}
        while ready := sorted(n for n, deps in pending.items() if not deps):
            for name in ready:
                order.append(name)
                del pending[name]
            for deps in pending.values():
                deps.difference_update(ready)
        for name in sorted(pending):
            self.error(derived[name].where, f"derived inputs form a cycle through {sorted(pending[name])}",
                       name, "break the cycle")
        return tuple(order)

    def _check_fn(self, d: Derived) -> None:
        module_name, _, attr = d.fn.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            self.error(d.where, f"fn {d.fn!r}: cannot import module {module_name!r}: {exc}", d.name,
                       "point `fn` at an importable module:function")
            return
        fn: Callable[..., Any] | None = getattr(module, attr, None)
        if not callable(fn):
            self.error(d.where, f"fn {d.fn!r}: module {module_name!r} has no function {attr!r}", d.name,
                       "point `fn` at an importable module:function")

    def roles(self, src: SourceFile, namespaces: list[Namespace]) -> tuple[Role, ...]:
        top = sorted(ns.path for ns in namespaces if "." not in ns.path)
        out = []
        for name, spec in src.data["roles"].items():
            reads_all = spec["reads"] == "all"
            reads = tuple(top) if reads_all else tuple(sorted(spec["reads"]))
            for ns in () if reads_all else reads:
                if ns not in top:
                    self.error(Where(src.display, spec.line_of("reads")), f"role {name!r} reads unknown namespace {ns!r}", None,
                               f"use top-level namespaces: {', '.join(top)}")
            audits = []
            for audit in spec.get("audits", ()):
                for ns in audit["observed"]:
                    if ns not in top:
                        self.error(Where(src.display, audit.line_of("observed")), f"audit of role {name!r} observed unknown "
                                   f"namespace {ns!r}", None, f"use top-level namespaces: {', '.join(top)}")
                audits.append(Audit(audit["date"], audit["workload"], tuple(sorted(audit["observed"])),
                                    tuple(audit["uncovered"]), audit["decision"]))
            out.append(Role(name, spec["doc"], reads_all, reads, bool(spec.get("write_any", False)),
                            tuple(audits)))
        return tuple(sorted(out, key=lambda r: r.name))

    def ratchet(self, src: SourceFile) -> Ratchet:
        scan = src.data["scan"]

        def entries(key: str) -> tuple[AllowEntry, ...]:
            made = [AllowEntry(e["file"], e["function"], e["leaf"], e["reason"]) for e in src.data.get(key, ())]
            return tuple(sorted(made, key=lambda e: (e.file, e.function, e.leaf)))

        return Ratchet(
            roots=tuple(scan["roots"]),
            excludes=tuple(scan.get("excludes", ())),
            raw_accessor=scan["raw_accessor"],
            record_class=scan["record_class"],
            record_attributes=tuple(scan["record_attributes"]),
            min_files=scan.get("min_files", DEFAULT_MIN_FILES),
            allowlist=entries("allowlist"),
            record_dicts=tuple(scan.get("record_dicts", ())),
            resolution=tuple(scan.get("resolution", ())),
            writes=entries("writes"),
        )
