"""Stage 2: the schema model. Turns validated YAML into frozen records and runs every
cross-file check, collecting all errors before giving up (so one run reports them all)."""

from __future__ import annotations

import importlib
import inspect
import keyword
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from configbags.codegen.errors import SchemaError, SchemaInvalid
from configbags.codegen.load import META_DIR, Marked, SourceFile, plain, read_yaml
from configbags.runtime.errors import LeafValueError
from configbags.runtime.leaftypes import Policy, TypeSpec, check_bounds, closest
from configbags.runtime.registry import Deprecation, Renamed
from configbags.runtime.spelling import Claim, clashes, flag_of, version_key

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


def _claim(leaf: Leaf) -> Claim:
    return Claim.of(leaf.name, leaf.cli.flags if leaf.cli is not None else (),
                    old=[flag_of(r.name, r.flag) for r in leaf.renamed_from], negatable=leaf.type.base == "bool")


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
class Cli:
    flags: tuple[str, ...]  # primary first
    suppress_help: bool
    # argparse's `const`: the value the bare flag stands for (`has_const` tells a written
    # `const: null` from none); with nargs "?" the flag also takes a value, with 0 never.
    has_const: bool = False
    const: Any = None
    # "+" or "*" for list leaves, "?" or 0 with a const; None: the type's own (a list
    # leaf takes "+", a scalar one value)
    nargs: str | int | None = None


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
    policy: Policy
    hash: bool
    capacity: str | None
    deprecated: Deprecation | None
    where: Where  # the line of the leaf's name
    writers: tuple[str, ...] = ()  # roles besides the owner that may override it
    env: str | None = None
    secret: bool = False
    kind: str | None = None
    renamed_from: tuple[Renamed, ...] = ()
    explicit_hash: bool | None = None  # `hash:` as written; `hash` is what follows from it
    structure: Any = None  # a json leaf's declared inner structure (configbags.runtime.nested)
    lines: dict[str, int] = attrs.field(factory=dict, eq=False, repr=False)  # property -> line

    def at(self, prop: str) -> Where:
        """Where a property of this leaf is written (falls back to the leaf's name)."""
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
    rules: tuple[Rule, ...] = ()  # hardware rules first, then model rules, in file order
    presets: tuple[Preset, ...] = ()
    settings: Settings = Settings()

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

    def display(self, path: Path) -> str:
        return f"{self.root.name}/{path.relative_to(self.root).as_posix()}"

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
                     ("presets.yaml", "presets.schema.json"))}
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
        if self.errors:
            raise SchemaInvalid(self.errors)
        paths = [*files, self.root / "roles.yaml"]
        if ratchet_src:
            paths.append(ratchet_path)
        paths += [self.root / name for name, src in optional.items() if src]
        sources = tuple(sorted(self.display(f) for f in paths))
        return Schema(self.root.name, sources, tuple(namespaces), roles, ratchet, order,
                      rules, presets, settings)

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

    def leaf(self, src: SourceFile, namespace: str, name: str, spec: Marked, line: int) -> Leaf:
        where = Where(src.display, line)
        type_ = TypeSpec.parse(spec["type"])
        cli_spec = spec.get("cli", {})
        cli = None
        if cli_spec is not False:
            flag = flag_of(name, cli_spec.get("flag"))
            cli = Cli((flag, *cli_spec.get("aliases", ())), bool(cli_spec.get("suppress_help", False)),
                      "const" in cli_spec, plain(cli_spec.get("const")), cli_spec.get("nargs"))
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
            policy=Policy(spec["override"]),
            # Hashed unless it can change at runtime, sizes buffers or is a secret; `hash:`
            # says otherwise explicitly. Capacity targets are marked in check_leaves.
            hash=spec.get("hash", Policy(spec["override"]) is not Policy.RUNTIME
                          and "kind" not in spec and not spec.get("secret", False)),
            capacity=spec.get("capacity"),
            deprecated=Deprecation(**plain(spec["deprecated"])) if "deprecated" in spec else None,
            where=where,
            writers=tuple(spec.get("writers", ())),
            # nested `cli:` keys (const, nargs) by their own line, for errors
            lines={**spec.key_lines, **({f"cli.{k}": v for k, v in cli_spec.key_lines.items()}
                                        if isinstance(cli_spec, Marked) else {})},
            env=spec.get("env"),
            secret=bool(spec.get("secret", False)),
            kind=spec.get("kind"),
            renamed_from=tuple(
                Renamed(name=r) if isinstance(r, str) else Renamed(**plain(r)) for r in spec.get("renamed_from", ())
            ),
            explicit_hash=spec.get("hash"),
            structure=plain(spec["structure"]) if "structure" in spec else None,
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
        for ns in namespaces:
            for leaf in ns.leaves:
                self.check_leaf(leaf, roles, numeric)
                self.check_cli(leaf)
        self.check_flags([leaf for ns in namespaces for leaf in ns.leaves])

    def check_flags(self, leaves: list[Leaf]) -> None:
        """Each spelling on the command line (flags, aliases, old names' flags, a bool's
        --no- twins) names one leaf and none the parser keeps for itself; the rule of
        configbags.runtime.spelling, which the importer settles clashes by."""
        by_name = {leaf.name: leaf for leaf in leaves}
        reported: set[tuple[str, str]] = set()
        for clash in clashes(_claim(leaf) for leaf in leaves):
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
            self.error(leaf.at(prop), message, leaf.name, hint)

    @staticmethod
    def check_structure(leaf: Leaf, bad: Callable[[str, str, str], None]) -> None:
        """A structure is on a json leaf, names schema types, and its default fits it."""
        import jsonschema

        from configbags.runtime.nested import structure_schema

        if leaf.type.base != "json":
            bad(f"a structure describes a json leaf, not a {leaf.type} one", "remove `structure` or use type json",
                "structure")
            return
        try:
            schema = structure_schema(leaf.structure, optional=leaf.type.optional)
        except ValueError as exc:
            bad(f"structure: {exc}", "give each key a schema type (int, str, list[int], ...) or a mapping",
                "structure")
            return
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(leaf.default))
        if error is not None and not leaf.required:
            path = ".".join(str(p) for p in error.absolute_path)
            bad(f"default {leaf.default!r} does not fit the structure{' at ' + path if path else ''}: {error.message}",
                "make the default fit the structure", "default")

    def check_leaf(self, leaf: Leaf, roles: set[str], numeric: dict[str, bool]) -> None:
        def bad(message: str, hint: str, prop: str = "") -> None:
            self.error(leaf.at(prop), message, leaf.name, hint)

        if roles and leaf.owner not in roles:
            bad(f"owner {leaf.owner!r} is not a role in roles.yaml", f"use one of {', '.join(sorted(roles))}", "owner")
        for writer in leaf.writers:
            if roles and writer not in roles:
                bad(f"writer {writer!r} is not a role in roles.yaml", f"use one of {', '.join(sorted(roles))}", "writers")
            elif writer == leaf.owner:
                bad(f"writer {writer!r} is the owner, which always writes the leaf", f"remove {writer!r} from `writers`",
                    "writers")
        if leaf.writers and leaf.policy is Policy.STARTUP:
            bad("`writers` may override the leaf, but it is `override: startup` (fixed at publish)",
                "make it load_time/runtime or remove `writers`", "writers")
        base = leaf.type.base
        if leaf.structure is not None:
            self.check_structure(leaf, bad)
        if leaf.choices is not None and base in ("bool", "json"):
            bad(f"choices make no sense for type {leaf.type}", "remove `choices`", "choices")
        elif leaf.choices is not None:
            item = leaf.type.item or TypeSpec(base, False)
            for choice in leaf.choices:
                try:
                    item.coerce(choice)
                except LeafValueError as exc:
                    bad(f"choice {choice!r} does not fit the type: {exc}", f"make every choice a {item}", "choices")
        if (leaf.minimum is not None or leaf.maximum is not None) and not (leaf.type.numeric or (leaf.type.item and leaf.type.item.numeric)):
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
            elif leaf.type.item is not None or base == "json":
                bad("a fallback must be an immutable scalar", "use a scalar type or drop the fallback", "fallback")
            else:
                self._check_value(leaf, "fallback", leaf.fallback)
        if leaf.capacity is not None:
            if self._maybe_declared(leaf.capacity) and leaf.capacity not in numeric:
                pass  # it may be declared where an error is already reported
            elif leaf.capacity not in numeric:
                bad(f"capacity {leaf.capacity!r} is not a leaf or derived value",
                    "name the leaf that bounds this one", "capacity")
            elif not numeric[leaf.capacity]:
                bad(f"capacity {leaf.capacity!r} is not numeric", "a capacity must be an int or float leaf",
                    "capacity")
            if not leaf.type.numeric:
                bad(f"only numeric leaves can have a capacity, not {leaf.type}", "remove `capacity`", "capacity")
            if leaf.policy is Policy.STARTUP:
                bad("a capacity bounds overrides, but this leaf is `override: startup`",
                    "make it load_time/runtime or remove `capacity`", "capacity")

    def _maybe_declared(self, name: str) -> bool:
        """Whether `name` may be declared in a part of the schema that failed to load (so
        an unknown-name error about it would only restate an error already reported)."""
        return self.unread or name in self.broken

    def _check_value(self, leaf: Leaf, what: str, value: Any, prop: str | None = None) -> None:
        try:
            value = leaf.type.coerce(value)
            check_bounds(value, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
        except LeafValueError as exc:
            self.error(leaf.at(prop or what), f"{what} {value!r} is invalid: {exc}", leaf.name,
                       f"make the {what} fit the type, choices and min/max")

    def check_cli(self, leaf: Leaf) -> None:
        """A flag's `nargs` and `const` mean what argparse makes of them, and the value the
        bare flag stands for is one the leaf can hold (argparse never checks a const)."""
        cli = leaf.cli
        if cli is None:
            return
        t = leaf.type

        def bad(message: str, hint: str, prop: str) -> None:
            self.error(leaf.at(prop), message, leaf.name, hint)

        if isinstance(cli.nargs, float):  # JSON Schema's enum lets 0.0 pass as 0
            bad(f"nargs {cli.nargs!r} is not an integer", "write `nargs: 0`", "cli.nargs")
        elif cli.nargs is not None:
            if t.item is not None:
                if cli.nargs not in ("+", "*"):
                    bad(f"nargs {cli.nargs!r} does not fit a list leaf",
                        'use nargs "+" (one value or more; the default) or "*" (the bare flag gives an '
                        "empty list)", "cli.nargs")
            elif cli.nargs in ("+", "*"):
                bad(f"nargs {cli.nargs!r} takes several values, but the leaf is {t}",
                    "make the type a list, or drop `nargs`", "cli.nargs")
            elif not cli.has_const:
                bad(f"nargs {cli.nargs!r} lets the flag go without a value, but there is no `const` "
                    f"for the bare flag to stand for", "add `const:` (the bare flag's value) or drop `nargs`",
                    "cli.nargs")
        if not cli.has_const:
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
            self._check_value(leaf, "const", cli.const, "cli.const")

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
        return tuple(order)

    def check_spellings(self, namespaces: list[Namespace], settings: Settings) -> None:
        """Env variables, old names and old flags: each spelling names one leaf; a secret is
        never hashed; a deprecation's `use` names a leaf."""
        leaves = {leaf.name: leaf for ns in namespaces for leaf in ns.leaves}
        envs: dict[str, str] = {}
        names: dict[str, str] = {}
        for leaf in leaves.values():
            def bad(message: str, hint: str, prop: str, leaf: Leaf = leaf) -> None:
                self.error(leaf.at(prop), message, leaf.name, hint)

            if leaf.secret and leaf.explicit_hash:
                bad("a secret leaf cannot be hashed", "drop `hash: true` (secrets never enter the config hash)", "hash")
            if leaf.secret and leaf.default is not None:
                bad("a secret leaf must default to null", "give it no value in the schema (`default: null`)", "default")
            spellings = [(leaf.env, "env")] + [(r.env, "renamed_from") for r in leaf.renamed_from]
            for env, prop in spellings:
                if env is None:
                    continue
                if env in envs and envs[env] != leaf.name:
                    bad(f"environment variable {env} is also bound to leaf {envs[env]!r}",
                        "bind each variable to one leaf", prop)
                envs.setdefault(env, leaf.name)
            for old in leaf.renamed_from:
                if old.name in leaves or old.name in names:
                    other = old.name if old.name in leaves else names[old.name]
                    bad(f"renamed_from {old.name!r} is also the name of leaf {other!r}",
                        "an old name must not name a leaf", "renamed_from")
                names.setdefault(old.name, leaf.name)
                if old.since and old.remove_in and version_key(old.remove_in) <= version_key(old.since):
                    bad(f"renamed_from {old.name!r}: remove_in {old.remove_in} is not after since {old.since}",
                        "remove it in a later version", "renamed_from")
            dep = leaf.deprecated
            if dep is not None:
                if dep.use is not None and (dep.use not in leaves or dep.use == leaf.name):
                    bad(f"deprecated.use {dep.use!r} is not another leaf{closest(dep.use, leaves)}",
                        "name the leaf operators should set instead", "deprecated")
                if dep.remove_in is not None and version_key(dep.remove_in) <= version_key(dep.since):
                    bad(f"deprecated.remove_in {dep.remove_in} is not after since {dep.since}",
                        "remove it in a later version", "deprecated")
            if settings.env_prefix and leaf.env and not leaf.env.startswith(settings.env_prefix):
                bad(f"environment variable {leaf.env} is not under the prefix {settings.env_prefix} "
                    f"(settings.yaml)", f"name it {settings.env_prefix}...", "env")

    def rules(self, src: SourceFile, leaves: dict[str, Leaf]) -> tuple[Rule, ...]:
        out: list[Rule] = []
        for rid, spec in src.data["rules"].items():
            where = Where(src.display, src.data["rules"].line_of(rid))

            def bad(message: str, hint: str, prop: str = "", spec: Marked = spec, rid: str = rid) -> None:
                self.error(Where(src.display, spec.line_of(prop) if prop else spec.line), f"rule {rid}: {message}",
                           None, hint)

            leaf = leaves.get(spec["leaf"])
            if leaf is None:
                bad(f"unknown leaf {spec['leaf']!r}{closest(spec['leaf'], leaves)}", "name a leaf of the schema", "leaf")
                continue
            if leaf.secret:
                bad(f"leaf {leaf.name!r} is secret; rules cannot set secrets", "set secrets through env or CLI", "leaf")
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
            inputs = tuple(spec.get("inputs", ()))
            for name in inputs:
                if not _is_fact(name) and name not in leaves:
                    bad(f"input {name!r} is neither a fact nor a leaf{closest(name, leaves)}",
                        "list facts or leaves", "inputs")
            subjects = [c.subject for c in when] + list(inputs)
            layer = spec.get("layer") or ("model" if any(x.startswith("model.") for x in subjects) else "hardware")
            if layer == "hardware" and any(x.startswith("model.") for x in subjects):
                bad("a hardware rule cannot test model facts", "declare `layer: model`", "layer")
            fn = spec.get("fn")
            if fn is not None:
                if problem := fn_problem(fn, inputs):
                    bad(*problem)
            elif inputs:
                bad("`inputs` only go with `fn`", "drop `inputs` or give a function", "inputs")
            elif leaf.name in leaves:
                try:
                    value = leaf.type.coerce(plain(spec["value"]))
                    check_bounds(value, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
                except LeafValueError as exc:
                    bad(f"value {spec['value']!r} does not fit leaf {leaf.name!r}: {exc}",
                        f"give a {leaf.type} within its choices/range", "value")
            out.append(Rule(rid, leaf.name, layer, tuple(when), "value" in spec, plain(spec.get("value")), fn,
                            inputs, spec.get("force"), spec["help"], where))
        return tuple(sorted(out, key=lambda r: r.layer != "hardware"))  # stable: file order within a layer

    def presets(self, src: SourceFile, leaves: dict[str, Leaf]) -> tuple[Preset, ...]:
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
                    self.error(where, f"preset {name}: value {value!r} is invalid: {exc}", key,
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
