"""Stage 2: the schema model. Turns validated YAML into frozen records and runs every
cross-file check, collecting all errors before giving up (so one run reports them all)."""

from __future__ import annotations

import importlib
import inspect
import keyword
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from configbags.codegen.errors import SchemaError, SchemaInvalid
from configbags.codegen.fleet import Fleet, build_fleet
from configbags.codegen.load import META_DIR, Marked, SourceFile, plain, read_yaml
from configbags.runtime.errors import LeafValueError
from configbags.runtime.fleet import CONFIG_ROUTES
from configbags.runtime.gcpause import gc_paused
from configbags.runtime.leaftypes import (
    Policy,
    TypeSpec,
    check_bounds,
    closest,
    jsonable,
    short_repr,
)
from configbags.runtime.registry import TEST_ROLE, Deprecation, LeafSpec, Renamed
from configbags.runtime.spelling import clashes, leaf_spellings, version_key

# Names the generated ServerArgs uses (its methods, --config, `self` in the attrs __init__,
# and the names its class body reads: attrs, dict, list, tuple); a leaf may not take them.
RESERVED = frozenset(
    {"config", "from_cli", "from_cli_args", "from_dict", "from_file", "to_dict", "add_cli_args",
     "replace", "attrs", "self", "dict", "list", "tuple",
     # the decorators and builtins the generated class bodies use after the fields
     "classmethod", "staticmethod", "property", "object", "type", "super", "int", "float",
     "bool", "str", "Any", "_input"}
)
# Names the generated modules import or define at module level; a bag class (from a
# namespace: `any` -> `Any`) of the same name would shadow them.
RESERVED_CLASSES = frozenset(
    {"Any", "Mapping", "Sequence", "Path", "NamedTuple", "Policy", "TypeSpec", "Registry",
     "ServerArgs", "Context", "ProcessView", "RunnerView", "ProcessConfigView", "ConfigView",
     "AllowEntry", "AuditRecord"}
)
# Top-level namespaces become accessors (`get_<name>`), view slots and runner-view
# properties; these would shadow `get_context()`, `get_server_args()` or view attributes.
RESERVED_NAMESPACES = frozenset({"context", "server_args", "config", "bag", "name", "overlay"})
CONDITION_OPS = ("eq", "ne", "in", "not_in", "contains", "gte", "gt", "lte", "lt", "present")
DEFAULT_MIN_FILES = 5  # a ratchet scan reading fewer files than this is taken as broken


def _is_fact(subject: str) -> bool:
    return subject.partition(".")[0] in ("gpu", "model")


def rule_leaf_name(spec: Marked) -> str:
    return str(spec["leaf"])


def fn_problem(path: str, inputs: tuple[str, ...]) -> tuple[str, str, str] | None:
    """What is wrong with `fn: module:function` for a derived value or a rule given these
    inputs, as (message, fix, property), or None: the module must import, the function
    exist, and its signature take the inputs positionally (a builtin without one is
    trusted; its arity shows at publish)."""
    module_name, _, attr = path.partition(":")
    fix = "point `fn` at an importable module:function"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # whatever importing it raises, the schema cannot use it
        return f"fn {path!r}: cannot import module {module_name!r}: {exc}", fix, "fn"
    fn: Callable[..., Any] | None = getattr(module, attr, None)
    if not callable(fn):
        return f"fn {path!r}: module {module_name!r} has no function {attr!r}", fix, "fn"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*inputs)
    except TypeError as exc:
        return (f"fn {path!r} cannot take the {len(inputs)} declared input(s) ({', '.join(inputs)}): {exc}",
                "make `inputs` match the function's positional parameters", "inputs")
    return None


def class_name(path: str) -> str:
    """The bag class of a namespace: `exec.kernel` -> `ExecKernel`."""
    return "".join(part.title().replace("_", "") for part in path.split("."))


@attrs.frozen
class Where:
    file: str
    line: int


@attrs.frozen
class Place:
    """Where a leaf is declared: the line of its name and of each property it writes."""

    where: Where
    lines: Mapping[str, int]  # property (`cli.const` for nested ones) -> line

    def at(self, prop: str) -> Where:
        """Where a property is written (falls back to the leaf's name)."""
        return Where(self.where.file, self.lines.get(prop, self.where.line))


@attrs.frozen
class Condition:
    subject: str
    op: str
    operand: Any


@attrs.frozen
class Rule:
    id: str
    leaf: str
    layer: str  # hardware | model
    when: tuple[Condition, ...]
    has_value: bool
    value: Any
    fn: str | None
    inputs: tuple[str, ...]
    force: str | None
    help: str
    where: Where
    ordered: str | None = None  # why its place in the file is deliberate (a rule cycle gen then accepts)


@attrs.frozen
class Preset:
    name: str
    help: str
    values: dict[str, Any]
    where: Where


@attrs.frozen
class Settings:
    version: str = "0"
    env_prefix: str | None = None
    abbreviations: str = "off"  # settings.yaml `cli: {abbreviations: legacy}` keeps argparse's prefixes


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
    leaves: tuple[LeafSpec, ...]
    derived: tuple[Derived, ...]
    ranks: tuple[Rank, ...]
    where: Where

    @property
    def values(self) -> tuple[LeafSpec | Derived, ...]:
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
    reads: int | None = None  # how many reads it allows; None: any number


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
    rules: tuple[Rule, ...] = ()  # hardware rules first, then model rules, in file order
    presets: tuple[Preset, ...] = ()
    settings: Settings = Settings()
    fleet: Fleet = attrs.field(factory=Fleet)  # contracts.yaml and the metric leaves

    @property
    def leaves(self) -> tuple[LeafSpec, ...]:
        return tuple(leaf for ns in self.namespaces for leaf in ns.leaves)

    @property
    def derived(self) -> tuple[Derived, ...]:
        return tuple(d for ns in self.namespaces for d in ns.derived)

    @property
    def values(self) -> tuple[LeafSpec | Derived, ...]:
        return tuple(x for ns in self.namespaces for x in ns.values)

    @property
    def top_level(self) -> tuple[str, ...]:
        return tuple(ns.path for ns in self.namespaces if "." not in ns.path)

    @property
    def env_leaves(self) -> dict[str, str]:
        """Every declared environment variable, a leaf's `env:` and its old names', -> the
        leaf, sorted: the variables whose raw reads the read ratchet holds."""
        bound = {
            env: leaf.name
            for leaf in self.leaves
            for env in (leaf.env, *(old.env for old in leaf.renamed_from))
            if env
        }
        return dict(sorted(bound.items()))

    def children(self, path: str) -> tuple[Namespace, ...]:
        return tuple(ns for ns in self.namespaces if ns.parent == path)


def load_schema(schema_dir: Path) -> Schema:
    """Load, validate and check a schema folder; raise SchemaInvalid with every error."""
    with gc_paused():
        return _Builder(Path(schema_dir)).build()


class _Builder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.meta = META_DIR
        self.errors: list[SchemaError] = []
        # names whose declarations failed the meta-schema: already reported, so checks that
        # refer to them stay quiet instead of cascading
        self.broken: set[str] = set()
        self.unread = False  # a namespace file could not be read or has the wrong shape
        self.places: dict[tuple[str, str], Place] = {}  # (namespace, leaf) -> where it is written
        self.secrets: set[str] = set()  # the secret leaves (check_leaves fills it)

    def display(self, path: Path) -> str:
        return f"{self.root.name}/{path.relative_to(self.root).as_posix()}"

    def openable(self, display: str) -> str:
        """An error's file as the folder was given (`d/new/namespaces/x.yaml`, not the
        display's `new/namespaces/x.yaml`), so it opens from where the command ran; the
        display stays what generated headers name, the same on every machine."""
        head, _, rest = display.partition("/")
        return (self.root / rest).as_posix() if head == self.root.name and rest else display

    def error(self, where: Where, message: str, leaf: str | None = None, hint: str | None = None) -> None:
        self.errors.append(SchemaError(where.file, where.line, message, leaf, hint))

    def read(self, path: Path, meta: str) -> SourceFile | None:
        return read_yaml(path, self.display(path), self.meta, meta, self.errors)

    def read_whole(self, path: Path, meta: str) -> SourceFile | None:
        """A file used only if it is entirely valid (roles, ratchet)."""
        src = self.read(path, meta)
        return src if src is not None and src.intact and not src.broken else None

    # -- the whole folder ------------------------------------------------------------
    def build(self) -> Schema:
        files = sorted((self.root / "namespaces").glob("*.yaml"))
        if not files:
            self.errors.append(
                SchemaError(f"{self.root.name}/namespaces", 1, "no namespace files found",
                            hint="add schema/namespaces/<namespace>.yaml files")
            )
        namespaces = []
        for f in files:
            src = self.read(f, "namespace.schema.json")
            ns = self.namespace(src) if src is not None else None
            if ns is None:
                self.unread = True  # its names are unknown: don't call references to them wrong
            else:
                namespaces.append(ns)
        roles_src = self._required_file("roles.yaml", "roles.schema.json")
        ratchet_path = self.root / "ratchet.yaml"
        ratchet_src = self.read_whole(ratchet_path, "ratchet.schema.json") if ratchet_path.exists() else None
        namespaces.sort(key=lambda ns: ns.path)
        # a namespace whose file exists counts as known, valid or not (no follow-on errors)
        present_top = {f.stem for f in files if "." not in f.stem}
        roles = self.roles(roles_src, namespaces, present_top) if roles_src else ()
        # parents count as present when their file exists, valid or not (no follow-on errors)
        self.check_namespaces(namespaces, {f.stem for f in files})
        self.check_leaves(namespaces, {r.name for r in roles})
        order = self.check_derived(namespaces)
        ratchet = self.ratchet(ratchet_src) if ratchet_src else Ratchet()
        optional = {name: self._optional_file(name, meta) for name, meta in
                    (("settings.yaml", "settings.schema.json"), ("rules.yaml", "rules.schema.json"),
                     ("presets.yaml", "presets.schema.json"), ("contracts.yaml", "contracts.schema.json"))}
        settings_src = optional["settings.yaml"]
        settings = (Settings(settings_src.data["version"], settings_src.data.get("env_prefix"),
                             (settings_src.data.get("cli") or {}).get("abbreviations", "off"))
                    if settings_src else Settings())
        self.check_spellings(namespaces, settings)
        leaves = {leaf.name: leaf for ns in namespaces for leaf in ns.leaves}
        # A namespace file that did not validate would make every rule and preset naming
        # its leaves an error too: check them only against a complete set of leaves.
        complete = len(namespaces) == len(files)
        rules = self.rules(optional["rules.yaml"], leaves) if optional["rules.yaml"] and complete else ()
        presets = self.presets(optional["presets.yaml"], leaves) if optional["presets.yaml"] and complete else ()
        fleet = build_fleet(optional["contracts.yaml"] if complete else None, leaves,
                            {d.name: d for ns in namespaces for d in ns.derived},
                            lambda where, message, leaf, hint: self.error(where, message, leaf, hint), self.at)
        if self.errors:
            raise SchemaInvalid([attrs.evolve(e, file=self.openable(e.file)) for e in self.errors])
        paths = [*files, self.root / "roles.yaml"]
        if ratchet_src:
            paths.append(ratchet_path)
        paths += [self.root / name for name, src in optional.items() if src]
        sources = tuple(sorted(self.display(f) for f in paths))
        records = tuple(attrs.evolve(ns, leaves=tuple(map(self.canonical, ns.leaves))) for ns in namespaces)
        return Schema(self.root.name, sources, records, roles, ratchet, order, rules, presets, settings,
                      fleet)

    def _optional_file(self, name: str, meta: str) -> SourceFile | None:
        path = self.root / name
        return self.read(path, meta) if path.exists() else None

    def _required_file(self, name: str, meta: str) -> SourceFile | None:
        path = self.root / name
        if not path.exists():
            self.errors.append(SchemaError(self.display(path), 1, f"{name} is missing",
                                           hint=f"every schema folder needs {name}; see configbags/codegen/meta/{meta}"))
            return None
        return self.read_whole(path, meta)

    # -- one namespace file ----------------------------------------------------------
    def namespace(self, src: SourceFile) -> Namespace | None:
        if not src.intact:
            return None  # its shape is wrong (reported); the file still counts as present
        data = src.data
        self.broken.update(src.broken)
        path = data["namespace"]
        where = Where(src.display, data.line_of("namespace"))
        if src.path.stem != path:
            self.error(where, f"file declares namespace {path!r} but is named {src.path.name}",
                       hint=f"rename the file to {path}.yaml or fix `namespace:`")
        leaves = tuple(
            self.leaf(src, path, name, spec, data["leaves"].line_of(name))
            for name, spec in data["leaves"].items() if name not in src.broken
        )
        derived = tuple(
            self.derived_value(src, path, name, spec, data["derived"].line_of(name))
            for name, spec in data.get("derived", {}).items() if name not in src.broken
        )
        ranks = tuple(
            Rank(name, spec["help"], Where(src.display, spec.line))
            for name, spec in data.get("ranks", {}).items() if name not in src.broken
        )
        return Namespace(path, data["doc"], leaves, derived, ranks, where)

    def leaf(self, src: SourceFile, namespace: str, name: str, spec: Marked, line: int) -> LeafSpec:
        """The leaf's record as the schema writes it (its default not yet canonical: the
        checks report a bad one as written; `canonical` finishes the record)."""
        cli = spec.get("cli", {})
        renamed = tuple(Renamed(name=r) if isinstance(r, str) else Renamed(**plain(r))
                        for r in spec.get("renamed_from", ()))
        type_ = TypeSpec.parse(spec["type"])
        choices = spec.get("choices")
        policy = Policy(spec["override"])
        secret = bool(spec.get("secret", False))
        # nested `cli:` keys (const, nargs) by their own line, for errors
        lines = {**spec.key_lines, **({f"cli.{k}": v for k, v in cli.key_lines.items()}
                                      if isinstance(cli, Marked) else {})}
        place = self.places[(namespace, name)] = Place(Where(src.display, line), lines)
        if secret and spec.get("hash"):
            self.error(place.at("hash"), "a secret leaf cannot be hashed", name,
                       "drop `hash: true` (secrets never enter the config hash)")
        if secret and choices is not None:
            # argparse's "invalid choice: 'VALUE'" would print a mistyped key in clear, and
            # the listed choices would be the secret values themselves, in the schema and docs
            self.error(place.at("choices"), "a secret leaf cannot have choices: they would be its values, "
                       "in the schema and the docs", name, "drop `choices` (check the key where it is used)")
        return LeafSpec(
            name=name,
            namespace=namespace,
            type=type_,
            owner=spec["owner"],
            help=spec["help"],
            default=plain(spec.get("default")),
            required=bool(spec.get("required", False)),
            has_fallback="fallback" in spec,
            fallback=spec.get("fallback"),
            choices=tuple(plain(choices)) if choices is not None else None,
            minimum=spec.get("min"),
            maximum=spec.get("max"),
            policy=policy,
            capacity=spec.get("capacity"),
            flags=leaf_spellings(name, cli, negatable=type_.base == "bool").declared,
            suppress_help=cli is not False and bool(cli.get("suppress_help", False)),
            has_const=cli is not False and "const" in cli,
            const=None if cli is False else plain(cli.get("const")),
            nargs=None if cli is False else cli.get("nargs"),
            writers=tuple(spec.get("writers", ())),
            env=spec.get("env"),
            secret=secret,
            renamed_from=renamed,
            deprecated=Deprecation(**plain(spec["deprecated"])) if "deprecated" in spec else None,
            kind=spec.get("kind"),
            metric=bool(spec.get("metric", False)),
            structure=plain(spec["structure"]) if "structure" in spec else None,
            **({"hash": spec["hash"]} if "hash" in spec else {}),  # else the record's rule
        )

    @staticmethod
    def canonical(leaf: LeafSpec) -> LeafSpec:
        """The record with its default and const as the runtime holds them (both checked
        already): coerced to the type, lists as tuples; no default for a required leaf."""
        const = leaf.type.coerce(leaf.const) if leaf.has_const else None
        if leaf.required:
            return attrs.evolve(leaf, default=None, const=const)
        value = jsonable(leaf.type.coerce(leaf.default))  # json leaves coerce to frozen views
        return attrs.evolve(leaf, default=tuple(value) if isinstance(value, list) else value, const=const)

    def at(self, leaf: LeafSpec, prop: str = "") -> Where:
        """Where a property of `leaf` is written (its name's line when not written)."""
        return self.places[(leaf.namespace, leaf.name)].at(prop)

    def where(self, item: LeafSpec | Derived | Rank) -> Where:
        return self.at(item) if isinstance(item, LeafSpec) else item.where

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
            if cls in RESERVED_CLASSES:
                self.error(ns.where, f"namespace {ns.path!r} gets class name {cls}, which the generated "
                           f"code already uses", hint=f"rename it (reserved class names: "
                           f"{', '.join(sorted(RESERVED_CLASSES))})")
            elif cls in classes:
                self.error(ns.where, f"namespace {ns.path!r} gets class name {cls}, as does {classes[cls]}",
                           hint="rename one of the namespaces")
            classes.setdefault(cls, f"namespace {ns.path!r}")
            if ns.parent and ns.parent not in present:
                self.error(ns.where, f"namespace {ns.path!r} has no parent namespace file",
                           hint=f"add namespaces/{ns.parent}.yaml with a doc (it may have no leaves)")
            names: tuple[LeafSpec | Derived | Rank, ...] = (*ns.values, *ns.ranks)
            for item in names:
                if item.name in seen:
                    first = seen[item.name]
                    self.error(self.where(item), f"duplicate leaf name (first declared at {first.file}:{first.line})",
                               item.name, "leaf names are flat and globally unique; rename one")
                seen.setdefault(item.name, self.where(item))
                if item.name in sub_names:
                    self.error(self.where(item), "name collides with a sub-namespace of the same name", item.name,
                               "rename the leaf or the sub-namespace")
                if keyword.iskeyword(item.name) or item.name in RESERVED:
                    self.error(self.where(item), "name is a Python keyword or reserved by the generated code",
                               item.name, f"rename it (reserved: {', '.join(sorted(RESERVED))})")
                if item.name in CONFIG_ROUTES:
                    self.error(self.where(item), f"name is a route of the HTTP door: GET /config/{item.name} serves "
                               f"the door's own document, so this leaf's explain would be unreachable there",
                               item.name, f"rename it (taken under /config/: {', '.join(sorted(CONFIG_ROUTES))})")

    def check_leaves(self, namespaces: list[Namespace], roles: set[str]) -> None:
        numeric = {x.name: x.type.numeric for ns in namespaces for x in ns.values}
        self.secrets = {leaf.name for ns in namespaces for leaf in ns.leaves if leaf.secret}
        for ns in namespaces:
            for leaf in ns.leaves:
                self.check_leaf(leaf, roles, numeric)
                self.check_cli(leaf)
        self.check_flags([leaf for ns in namespaces for leaf in ns.leaves])

    def check_flags(self, leaves: list[LeafSpec]) -> None:
        """Each spelling on the command line (flags, aliases, old names' flags, a bool's
        --no- twins) names one leaf and none the parser keeps for itself; the rule of
        configbags.runtime.spelling, which the importer settles clashes by."""
        by_name = {leaf.name: leaf for leaf in leaves}
        reported: set[tuple[str, str]] = set()
        for clash in clashes(leaf.spellings for leaf in leaves):
            if (clash.leaf, clash.flag) in reported:
                continue
            reported.add((clash.leaf, clash.flag))
            leaf = by_name[clash.leaf]
            what, prop = ("old flag", "renamed_from") if clash.kind == "old" else ("CLI flag", "cli")
            if clash.holder is None:
                message, hint = f"{what} {clash.flag} is reserved", "pick another flag"
            elif clash.holder == leaf.name:
                # argparse takes it, but one spelling listed twice (an alias equal to the flag,
                # `--no-x` beside bool `--x`'s own twin) is a slip in the schema
                message = f"{what} {clash.flag} is spelled twice for this leaf"
                hint = "drop the duplicate (a bool flag gets its --no- twin by itself)"
            else:
                message = f"{what} {clash.flag} is also used by leaf {clash.holder!r}"
                hint = {"old": "give the old spelling its own `flag:`",
                        "alias": f"drop the alias or change it (leaf {clash.holder!r} keeps {clash.flag})"}.get(
                            clash.kind, "give one of the leaves another `flag:`")
            self.error(self.at(leaf, prop), message, leaf.name, hint)

    def check_leaf(self, leaf: LeafSpec, roles: set[str], numeric: dict[str, bool]) -> None:
        """One leaf's own declaration, step by step; values are checked only against
        bounds that make sense (else each would restate the bounds' error)."""
        self.check_writers(leaf, roles)
        self.check_choices(leaf)
        self.check_structure(leaf)
        if not self.check_bounds(leaf):
            return
        if not leaf.required:
            self._check_value(leaf, "default", leaf.default)
        self.check_fallback(leaf)
        self.check_capacity(leaf, numeric)

    def leaf_error(self, leaf: LeafSpec, prop: str, message: str, hint: str) -> None:
        """An error at the line where `leaf` writes `prop` (its name's line for "")."""
        self.error(self.at(leaf, prop), message, leaf.name, hint)

    def check_structure(self, leaf: LeafSpec) -> None:
        """A structure is on a json leaf, names schema types, and its default fits it."""
        if leaf.structure is None:
            return
        import jsonschema

        from configbags.runtime.nested import structure_schema

        if leaf.type.base != "json":
            self.leaf_error(leaf, "structure", f"a structure describes a json leaf, not a {leaf.type} one",
                            "remove `structure` or use type json")
            return
        try:
            schema = structure_schema(leaf.structure, optional=leaf.type.optional)
        except ValueError as exc:
            self.leaf_error(leaf, "structure", f"structure: {exc}",
                            "give each key a schema type (int, str, list[int], ...) or a mapping")
            return
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(leaf.default))
        if error is not None and not leaf.required:
            path = ".".join(str(p) for p in error.absolute_path)
            self.leaf_error(leaf, "default",
                            f"default {short_repr(leaf.default)} does not fit the structure{' at ' + path if path else ''}: "
                            f"{error.message}", "make the default fit the structure")

    def check_writers(self, leaf: LeafSpec, roles: set[str]) -> None:
        """The owner and writers are roles; a writer is not the owner and has something to write."""
        known = f"use one of {', '.join(sorted(roles))}"
        if roles and leaf.owner not in roles:
            self.leaf_error(leaf, "owner", f"owner {leaf.owner!r} is not a role in roles.yaml", known)
        for writer in leaf.writers:
            if roles and writer not in roles:
                self.leaf_error(leaf, "writers", f"writer {writer!r} is not a role in roles.yaml", known)
            elif writer == leaf.owner:
                self.leaf_error(leaf, "writers", f"writer {writer!r} is the owner, which always writes the leaf",
                                f"remove {writer!r} from `writers`")
        if leaf.writers and leaf.policy is Policy.STARTUP:
            self.leaf_error(leaf, "writers", "`writers` may override the leaf, but it is `override: startup` "
                            "(fixed at publish)", "make it load_time/runtime or remove `writers`")

    def check_choices(self, leaf: LeafSpec) -> None:
        if leaf.choices is None:
            return
        if leaf.type.base in ("bool", "json"):
            self.leaf_error(leaf, "choices", f"choices make no sense for type {leaf.type}", "remove `choices`")
            return
        item = leaf.type.item or TypeSpec(leaf.type.base, False)
        for choice in leaf.choices:
            try:
                item.coerce(choice)
            except LeafValueError as exc:
                self.leaf_error(leaf, "choices", f"choice {choice!r} does not fit the type: {exc}",
                                f"make every choice a {item}")

    def check_bounds(self, leaf: LeafSpec) -> bool:
        """min/max are finite numbers of a numeric leaf (or list of them), min <= max;
        False when values cannot be checked against them."""
        if leaf.minimum is None and leaf.maximum is None:
            return True
        if not (leaf.type.numeric or (leaf.type.item and leaf.type.item.numeric)):
            self.leaf_error(leaf, "type", f"min/max only apply to numeric types, not {leaf.type}",
                            "remove `min`/`max`")
            return False
        for prop, bound in (("min", leaf.minimum), ("max", leaf.maximum)):
            if bound is not None and not math.isfinite(bound):
                self.leaf_error(leaf, prop, f"{prop} {short_repr(bound)} is not a finite number", f"give a finite {prop} or none")
                return False
        if leaf.minimum is not None and leaf.maximum is not None and leaf.minimum > leaf.maximum:
            self.leaf_error(leaf, "max", f"min {leaf.minimum} is greater than max {leaf.maximum}", "swap or fix them")
        return True

    def check_fallback(self, leaf: LeafSpec) -> None:
        """A fallback replaces an unset (null) optional scalar with a value the leaf can hold."""
        if not leaf.has_fallback:
            return
        if leaf.secret:
            # the fallback would be a constant key, printed in CONFIG.md and --help, that the
            # door accepts while its start line says keys are required
            self.leaf_error(leaf, "fallback", "a secret leaf cannot have a fallback: its value would be a key "
                            "written in the schema, CONFIG.md and --help",
                            "drop `fallback` (an unset secret stays unset; give the key by flag, env or file)")
        elif leaf.default is not None:
            self.leaf_error(leaf, "fallback", "a fallback is only allowed with `default: null`",
                            "drop the fallback, or make the default null so the fallback applies when unset")
        elif not leaf.type.optional:
            self.leaf_error(leaf, "fallback", f"a fallback needs an optional type, not {leaf.type}",
                            f"use `type: optional {leaf.type.base}`")
        elif leaf.type.item is not None or leaf.type.base == "json":
            self.leaf_error(leaf, "fallback", "a fallback must be an immutable scalar",
                            "use a scalar type or drop the fallback")
        else:
            self._check_value(leaf, "fallback", leaf.fallback)

    def check_capacity(self, leaf: LeafSpec, numeric: dict[str, bool]) -> None:
        """A capacity names a numeric value that bounds this numeric, overridable leaf."""
        if leaf.capacity is None:
            return
        if leaf.capacity not in numeric:
            if not self._maybe_declared(leaf.capacity):  # else it may be declared where an error is reported
                self.leaf_error(leaf, "capacity", f"capacity {leaf.capacity!r} is not a leaf or derived value",
                                "name the leaf that bounds this one")
        elif not numeric[leaf.capacity]:
            self.leaf_error(leaf, "capacity", f"capacity {leaf.capacity!r} is not numeric",
                            "a capacity must be an int or float leaf")
        elif leaf.capacity in self.secrets:
            # the bound is shown with the leaf (GET /config/<leaf>, every 409 message), so
            # a secret capacity would print the secret to whoever may read the leaf
            self.leaf_error(leaf, "capacity", f"capacity {leaf.capacity!r} is a secret leaf: the bound is shown "
                            f"with {leaf.name!r} (its readback and every refusal above it)",
                            "bound it by a leaf that is not secret, or remove `capacity`")
        if not leaf.type.numeric:
            self.leaf_error(leaf, "capacity", f"only numeric leaves can have a capacity, not {leaf.type}",
                            "remove `capacity`")
        if leaf.policy is Policy.STARTUP:
            self.leaf_error(leaf, "capacity", "a capacity bounds overrides, but this leaf is `override: startup`",
                            "make it load_time/runtime or remove `capacity`")

    def _maybe_declared(self, name: str) -> bool:
        """Whether `name` may be declared in a part of the schema that failed to load (so
        an unknown-name error about it would only restate an error already reported)."""
        return self.unread or name in self.broken

    def _check_value(self, leaf: LeafSpec, what: str, value: Any, prop: str | None = None) -> None:
        try:
            value = leaf.type.coerce(value)
            check_bounds(value, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
        except LeafValueError as exc:
            self.error(self.at(leaf, prop or what), f"{what} {short_repr(value)} is invalid: {exc}", leaf.name,
                       f"make the {what} fit the type, choices and min/max")

    def check_cli(self, leaf: LeafSpec) -> None:
        """A flag's `nargs` and `const` mean what argparse makes of them, and the value the
        bare flag stands for is one the leaf can hold (argparse never checks a const)."""
        t = leaf.type

        def bad(message: str, hint: str, prop: str) -> None:
            self.error(self.at(leaf, prop), message, leaf.name, hint)

        if isinstance(leaf.nargs, float):  # JSON Schema's enum lets 0.0 pass as 0
            bad(f"nargs {leaf.nargs!r} is not an integer", "write `nargs: 0`", "cli.nargs")
        elif leaf.nargs is not None:
            if t.item is not None:
                if leaf.nargs not in ("+", "*"):
                    bad(f"nargs {leaf.nargs!r} does not fit a list leaf",
                        'use nargs "+" (one value or more; the default) or "*" (the bare flag gives an '
                        "empty list)", "cli.nargs")
            elif leaf.nargs in ("+", "*"):
                bad(f"nargs {leaf.nargs!r} takes several values, but the leaf is {t}",
                    "make the type a list, or drop `nargs`", "cli.nargs")
            elif not leaf.has_const:
                bad(f"nargs {leaf.nargs!r} lets the flag go without a value, but there is no `const` "
                    f"for the bare flag to stand for", "add `const:` (the bare flag's value) or drop `nargs`",
                    "cli.nargs")
        if not leaf.has_const:
            return
        if t.base == "bool":
            bad("const on a bool leaf: its flag is bare already (--flag, --no-flag)", "drop `const`", "cli.const")
        elif t.item is not None or t.base == "json":
            bad(f"const needs a scalar int, float or str leaf, not {t}",
                "drop `const`, or give the leaf a scalar type", "cli.const")
        elif leaf.secret:
            bad("a secret leaf cannot have a const: its value would be in the schema and the docs",
                "drop `const`", "cli.const")
        else:
            self._check_value(leaf, "const", leaf.const, "cli.const")

    def check_derived(self, namespaces: list[Namespace]) -> tuple[str, ...]:
        leaves = {leaf.name for ns in namespaces for leaf in ns.leaves}
        derived = {d.name: d for ns in namespaces for d in ns.derived}
        for d in derived.values():
            for name in d.inputs:
                if name not in leaves and name not in derived and not self._maybe_declared(name):
                    self.error(d.where, f"unknown derived input {name!r}", d.name,
                               "inputs must name leaves or other derived values")
            if problem := fn_problem(d.fn, d.inputs):
                self.error(d.where, problem[0], d.name, problem[1])
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
        self.check_derived_secrets(namespaces, derived, order)
        return tuple(order)

    def check_derived_secrets(self, namespaces: list[Namespace], derived: dict[str, Derived],
                              order: list[str]) -> None:
        """A derived value computed from a secret (or from a value that is) would be shown
        in clear by every readback and enter the config hash, an offline oracle for the key."""
        secrets = {leaf.name for ns in namespaces for leaf in ns.leaves if leaf.secret}
        for name in order:
            read = sorted(i for i in derived[name].inputs if i in secrets)
            if read:
                secrets.add(name)
                self.error(derived[name].where, f"derived value {name!r} reads the secret {', '.join(read)}",
                           name, "compute it without the secret: readbacks would show it in clear and the "
                                 "config hash would reveal it")

    def check_spellings(self, namespaces: list[Namespace], settings: Settings) -> None:
        """Env variables and old names: each spelling names one leaf; a secret has no value
        in the schema; a deprecation's `use` names a leaf. (A hashed secret is refused where
        the leaf is read, `leaf`.)"""
        leaves = {leaf.name: leaf for ns in namespaces for leaf in ns.leaves}
        envs: dict[str, str] = {}  # variable -> the leaf it was first bound to
        names: dict[str, str] = {}  # old name -> the leaf it was first given to
        for leaf in leaves.values():
            if leaf.secret and leaf.default is not None:
                self.leaf_error(leaf, "default", "a secret leaf must default to null",
                                "give it no value in the schema (`default: null`)")
            self.check_envs(leaf, envs, settings)
            self.check_old_names(leaf, leaves, names)
            self.check_deprecation(leaf, leaves)

    def check_envs(self, leaf: LeafSpec, envs: dict[str, str], settings: Settings) -> None:
        """Each variable (the leaf's and its old names') is bound to one leaf; the leaf's
        own is under the schema's prefix."""
        for env, prop in [(leaf.env, "env")] + [(r.env, "renamed_from") for r in leaf.renamed_from]:
            if env is None:
                continue
            if envs.setdefault(env, leaf.name) != leaf.name:
                self.leaf_error(leaf, prop, f"environment variable {env} is also bound to leaf {envs[env]!r}",
                                "bind each variable to one leaf")
        if settings.env_prefix and leaf.env and not leaf.env.startswith(settings.env_prefix):
            self.leaf_error(leaf, "env", f"environment variable {leaf.env} is not under the prefix "
                            f"{settings.env_prefix} (settings.yaml)", f"name it {settings.env_prefix}...")

    def check_old_names(self, leaf: LeafSpec, leaves: Mapping[str, LeafSpec], names: dict[str, str]) -> None:
        """An old name names no leaf and no other leaf's old name, and goes after it came."""
        for old in leaf.renamed_from:
            if old.name in leaves or old.name in names:
                other = old.name if old.name in leaves else names[old.name]
                self.leaf_error(leaf, "renamed_from", f"renamed_from {old.name!r} is also the name of leaf {other!r}",
                                "an old name must not name a leaf")
            names.setdefault(old.name, leaf.name)
            if old.since and old.remove_in and version_key(old.remove_in) <= version_key(old.since):
                self.leaf_error(leaf, "renamed_from", f"renamed_from {old.name!r}: remove_in {old.remove_in} is "
                                f"not after since {old.since}", "remove it in a later version")

    def check_deprecation(self, leaf: LeafSpec, leaves: Mapping[str, LeafSpec]) -> None:
        dep = leaf.deprecated
        if dep is None:
            return
        if dep.use is not None and (dep.use not in leaves or dep.use == leaf.name):
            self.leaf_error(leaf, "deprecated", f"deprecated.use {dep.use!r} is not another leaf"
                            f"{closest(dep.use, leaves)}", "name the leaf operators should set instead")
        if dep.remove_in is not None and version_key(dep.remove_in) <= version_key(dep.since):
            self.leaf_error(leaf, "deprecated", f"deprecated.remove_in {dep.remove_in} is not after since "
                            f"{dep.since}", "remove it in a later version")

    def rules(self, src: SourceFile, leaves: dict[str, LeafSpec]) -> tuple[Rule, ...]:
        rules = (self.rule(src, rid, spec, leaves) for rid, spec in src.data["rules"].items())
        out = [rule for rule in rules if rule is not None]
        return tuple(sorted(out, key=lambda r: r.layer != "hardware"))  # stable: file order within a layer

    def rule(self, src: SourceFile, rid: str, spec: Marked, leaves: dict[str, LeafSpec]) -> Rule | None:
        """One rule, step by step: the leaf it sets, its conditions, its inputs, its layer,
        its value (a constant that fits the leaf, or a function that takes the inputs)."""
        def bad(message: str, hint: str, prop: str = "") -> None:
            self.error(Where(src.display, spec.line_of(prop) if prop else spec.line), f"rule {rid}: {message}",
                       None, hint)

        leaf = leaves.get(spec["leaf"])
        if leaf is None:
            bad(f"unknown leaf {spec['leaf']!r}{closest(spec['leaf'], leaves)}", "name a leaf of the schema", "leaf")
            return None
        if leaf.secret:
            bad(f"leaf {leaf.name!r} is secret; rules cannot set secrets", "set secrets through env or CLI", "leaf")
        when = self._rule_conditions(spec, leaves, bad)
        inputs = tuple(spec.get("inputs", ()))
        read = sorted(name for name in [*inputs, *(c.subject for c in when)] if name in leaves and leaves[name].secret)
        if read:
            bad(f"reads the secret {', '.join(read)}; a rule's value is shown in clear and hashed",
                "decide it without the secret", "inputs" if set(read) & set(inputs) else "when")
        for name in inputs:
            if not _is_fact(name) and name not in leaves:
                bad(f"input {name!r} is neither a fact nor a leaf{closest(name, leaves)}", "list facts or leaves",
                    "inputs")
        layer = self._rule_layer(spec, [c.subject for c in when] + list(inputs), bad)
        self._rule_value(spec, leaf, inputs, bad)
        return Rule(rid, leaf.name, layer, when, "value" in spec, plain(spec.get("value")), spec.get("fn"),
                    inputs, spec.get("force"), spec["help"], Where(src.display, src.data["rules"].line_of(rid)),
                    spec.get("ordered"))

    @staticmethod
    def _rule_conditions(spec: Marked, leaves: dict[str, LeafSpec], bad: Callable[..., None]) -> tuple[Condition, ...]:
        """`when:` tests facts or other leaves (`subject: value` is `eq`)."""
        when = []
        for subject, test in spec.get("when", {}).items():
            if not _is_fact(subject) and subject not in leaves:
                bad(f"condition on {subject!r}: neither a fact (gpu.name, gpu.memory_bytes, gpu.sm, "
                    f"model.architectures, model.config.<field>) nor a leaf{closest(subject, leaves)}",
                    "test a fact or another leaf", "when")
            if subject == rule_leaf_name(spec):
                bad("a rule cannot test the leaf it sets", "test facts or other leaves", "when")
            op, operand = next(iter(test.items())) if isinstance(test, dict) else ("eq", test)
            when.append(Condition(subject, op, plain(operand)))
        return tuple(when)

    @staticmethod
    def _rule_layer(spec: Marked, subjects: list[str], bad: Callable[..., None]) -> str:
        """`model` when it reads a model fact (or says so), else `hardware`."""
        reads_model = any(x.startswith("model.") for x in subjects)
        layer: str = spec.get("layer") or ("model" if reads_model else "hardware")
        if layer == "hardware" and reads_model:
            bad("a hardware rule cannot test model facts", "declare `layer: model`", "layer")
        return layer

    @staticmethod
    def _rule_value(spec: Marked, leaf: LeafSpec, inputs: tuple[str, ...], bad: Callable[..., None]) -> None:
        fn = spec.get("fn")
        if fn is not None:
            if problem := fn_problem(fn, inputs):
                bad(*problem)
        elif inputs:
            bad("`inputs` only go with `fn`", "drop `inputs` or give a function", "inputs")
        else:
            try:
                value = leaf.type.coerce(plain(spec["value"]))
                check_bounds(value, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
            except LeafValueError as exc:
                bad(f"value {spec['value']!r} does not fit leaf {leaf.name!r}: {exc}",
                    f"give a {leaf.type} within its choices/range", "value")

    def presets(self, src: SourceFile, leaves: dict[str, LeafSpec]) -> tuple[Preset, ...]:
        out = []
        for name, spec in src.data["presets"].items():
            values = spec["values"]
            for key, value in values.items():
                where = Where(src.display, values.line_of(key))
                leaf = leaves.get(key)
                if leaf is None:
                    self.error(where, f"preset {name}: unknown leaf {key!r}{closest(key, leaves)}", None,
                               "presets set leaves of the schema")
                    continue
                if leaf.secret:
                    self.error(where, f"preset {name}: leaf {key!r} is secret", key, "presets cannot carry secrets")
                try:
                    coerced = leaf.type.coerce(plain(value))
                    check_bounds(coerced, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
                except LeafValueError as exc:
                    self.error(where, f"preset {name}: value {short_repr(value)} is invalid: {exc}", key,
                               f"give a {leaf.type} within its choices/range")
            out.append(Preset(name, spec["help"], plain(values), Where(src.display, spec.line)))
        return tuple(out)

    def roles(self, src: SourceFile, namespaces: list[Namespace], present: set[str]) -> tuple[Role, ...]:
        top = sorted(ns.path for ns in namespaces if "." not in ns.path)
        known = present.union(top)
        out = []
        for name, spec in src.data["roles"].items():
            reads_all = spec["reads"] == "all"
            reads = tuple(top) if reads_all else tuple(sorted(spec["reads"]))
            for ns in () if reads_all else reads:
                if ns not in known:
                    self.error(Where(src.display, spec.line_of("reads")), f"role {name!r} reads unknown namespace {ns!r}", None,
                               f"use top-level namespaces: {', '.join(top)}")
            audits = []
            for audit in spec.get("audits", ()):
                for ns in audit["observed"]:
                    if ns not in known:
                        self.error(Where(src.display, audit.line_of("observed")), f"audit of role {name!r} observed unknown "
                                   f"namespace {ns!r}", None, f"use top-level namespaces: {', '.join(top)}")
                audits.append(Audit(audit["date"], audit["workload"], tuple(sorted(audit["observed"])),
                                    tuple(audit["uncovered"]), audit["decision"]))
            write_any = bool(spec.get("write_any", False))
            if write_any and name != TEST_ROLE:
                # the context admits a write_any role only inside a test scope, so on any other
                # role it would not open writes but close them: every acting_as, the HTTP door's
                # PATCH included, is refused, while writers/owner say the role may write
                self.error(Where(src.display, spec.line_of("write_any")),
                           f"role {name!r} has `write_any: true`, which only the {TEST_ROLE!r} role may have", None,
                           f"remove `write_any` from role {name!r}; to let it change a leaf, name it in the leaf's "
                           f"`writers:` (or make it the `owner`)")
            out.append(Role(name, spec["doc"], reads_all, reads, write_any, tuple(audits)))
        return tuple(sorted(out, key=lambda r: r.name))

    def ratchet(self, src: SourceFile) -> Ratchet:
        scan = src.data["scan"]

        def entries(key: str) -> tuple[AllowEntry, ...]:
            made = [
                AllowEntry(e["file"], e["function"], e["leaf"], e["reason"], None if e.get("reads") is None else int(e["reads"]))
                for e in src.data.get(key, ())
            ]
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
