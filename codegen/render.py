"""Stage 3: the render models, one per output file (each file's template prints its own
small model, built by its own step: `FILES`). Every spelling a template prints (Python
name, class name, type hint, default expression, the leaf records' arguments, docstring and
Markdown text) is computed here, once, from the schema model; templates only loop and print.

Escaping happens here, once per target: Python literals via `repr`, docstrings via
`docstring()`, Markdown via `md()` (argparse help is the runtime's, from the record:
configbags.runtime.cliflags). Schema text therefore
never reaches generated code except inside a literal that `repr` or `docstring` built."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Callable
from typing import Any

import attrs

from configbags.codegen.blackpieces import black_string
from configbags.codegen.fleet import fleet_imports, fleet_literal
from configbags.codegen.model import AllowEntry, Derived, Namespace, Rule, Schema, class_name
from configbags.runtime.cliflags import bare_flag, deprecation_note, shown_default
from configbags.runtime.fleet import apply_class
from configbags.runtime.generated_api import API_VERSION
from configbags.runtime.leaftypes import TypeSpec, jsonable
from configbags.runtime.nested import structure_schema
from configbags.runtime.registry import LeafSpec, accessor_expression

# The one runtime module generated code imports (its names and their version: API_VERSION).
FACE = "configbags.runtime.generated_api"

HINTS = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "list[int]": "tuple[int, ...]",
    "list[str]": "tuple[str, ...]",
    "json": "Any",
}
JSON_SCALARS = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}


def docstring(text: str) -> str:
    """A triple-quoted literal whose value is exactly `text`, whatever it contains."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(
        c if c == "\n" or c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in body
    )
    return f'"""{body}"""'


def md(text: Any) -> str:
    """Text for a Markdown table cell."""
    s = str(text)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("`", "\\`")):
        s = s.replace(a, b)
    return s.replace("\r", "").replace("\n", "<br>")


def py(value: Any) -> str:
    """A Python literal (lists become tuples: bags and records are immutable), quoted as
    black quotes it, so black's first pass changes little and its second pass is cheap."""
    return _literal(tuple(value) if isinstance(value, list) else value)


# black's line length (blackpieces.BLACK_MODE), for literals printed as black prints them.
LINE_LENGTH = 88


def py_after(key: str, items: tuple[str, ...], indent: int) -> str:
    """`py(items)` as black prints it after `key=` on a line of `indent` spaces that ends in
    a comma: on that line where it fits, else one item a line. black formats the module
    either way; a piece it finds already so takes it one pass, not two (a namespace's
    field names run past the line on any engine)."""
    one = py(items)
    if len(items) < 2 or indent + len(key) + len(one) + 2 <= LINE_LENGTH:
        return one
    return "(\n" + "".join(f"{' ' * (indent + 4)}{py(item)},\n" for item in items) + " " * indent + ")"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        # repr picks single quotes unless the text holds one; black prefers double quotes
        # wherever that needs no more escapes (both spell the same string), and lower-case
        # escapes: its own spelling, so a table's element is taken without asking black
        return black_string(value) or repr(value)
    if isinstance(value, tuple):
        items = [_literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def hint(t: TypeSpec) -> str:
    h = HINTS[t.base]
    return f"{h} | None" if t.optional and h != "Any" else h


def literal(value: Any) -> str:
    """A registry value as a Python expression: an enum member by name, an attrs record
    (TypeSpec, Renamed, Deprecation) as a call with its fields in order, else `py`."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if attrs.has(type(value)):
        return f"{type(value).__name__}({', '.join(literal(getattr(value, f.name)) for f in attrs.fields(type(value)))})"
    if isinstance(value, tuple) and any(attrs.has(type(v)) for v in value):
        return "(" + "".join(f"{literal(v)}, " for v in value) + ")"
    return py(value)


def classes_in(value: Any) -> set[str]:
    """The runtime names `literal(value)` spells (for the registry's import line)."""
    if isinstance(value, enum.Enum):
        return {type(value).__name__}
    if attrs.has(type(value)):
        return {type(value).__name__}.union(*(classes_in(getattr(value, f.name)) for f in attrs.fields(type(value))))
    if isinstance(value, tuple):
        return set().union(*map(classes_in, value))
    return set()


@attrs.frozen
class Kwarg:
    key: str
    value: str  # a Python expression


@attrs.frozen
class Header:
    """What every generated file's header says: the source folder and files, how to regenerate."""

    schema_folder: str
    sources: tuple[str, ...]
    regen: str


# -- __init__.py ---------------------------------------------------------------------------

@attrs.frozen
class InitFile:
    header: Header
    imports: str
    api_version: int  # the runtime API (configbags.runtime.generated_api) the code is written for
    regen_literal: str  # the regenerate command as a Python literal (the API check's advice)


def init_file(schema: Schema, header: Header, import_name: str) -> InitFile:
    return InitFile(header, import_block([f"from {FACE} import require_api"]), API_VERSION, py(header.regen))


# -- bags.py -------------------------------------------------------------------------------

@attrs.frozen
class BagAttribute:
    name: str
    hint: str
    doc: str  # docstring literal
    field: str = ""  # what follows the hint: ` = attrs.field(repr=secret_repr)` for a secret


@attrs.frozen
class NestedBag:
    attr: str
    class_name: str
    path: str


@attrs.frozen
class BagClass:
    path: str
    class_name: str
    doc: str
    fields: tuple[BagAttribute, ...]
    children: tuple[NestedBag, ...]
    ranks: tuple[BagAttribute, ...]


@attrs.frozen
class BagsFile:
    header: Header
    imports: str  # in isort sections
    exports: tuple[str, ...]
    bags: tuple[BagClass, ...]  # children first
    top_bags: tuple[NestedBag, ...]


def bags_file(schema: Schema, header: Header, import_name: str) -> BagsFile:
    return BagsFile(
        header=header,
        imports=import_block(
            ["from typing import Any"] if any(x.type.base == "json" for x in schema.values) else [],
            ["import attrs", *([from_import(FACE, face)] if (face := _bags_face(schema)) else [])],
        ),
        exports=tuple(sorted([*(class_name(ns.path) for ns in schema.namespaces), "Config"], key=export_order)),
        bags=tuple(_bag(schema, ns) for ns in _children_first(schema)),
        top_bags=tuple(NestedBag(p, class_name(p), p) for p in schema.top_level),
    )


def _bags_face(schema: Schema) -> list[str]:
    """What bags.py takes from the runtime: only what its classes use."""
    return [*(["secret_repr"] if any(x.secret for x in schema.leaves) else []),
            *(["unstamped_rank"] if any(ns.ranks for ns in schema.namespaces) else [])]


def _children_first(schema: Schema) -> list[Namespace]:
    return sorted(schema.namespaces, key=lambda n: (-n.path.count("."), n.path))


def _resolved_hint(x: LeafSpec | Derived) -> str:
    """A bag holds resolved values: a leaf with a fallback is never None there, even though
    the operator may leave it unset in the record."""
    if isinstance(x, LeafSpec) and x.has_fallback:
        return hint(TypeSpec(x.type.base, optional=False))
    return hint(x.type)


def _bag(schema: Schema, ns: Namespace) -> BagClass:
    return BagClass(
        path=ns.path,
        class_name=class_name(ns.path),
        doc=docstring(ns.doc),
        fields=tuple(BagAttribute(x.name, _resolved_hint(x), docstring(x.help), _bag_field(x)) for x in ns.values),
        children=tuple(NestedBag(c.attr, class_name(c.path), c.path) for c in schema.children(ns.path)),
        ranks=tuple(BagAttribute(r.name, "int", docstring(r.help)) for r in ns.ranks),
    )


def _bag_field(x: LeafSpec | Derived) -> str:
    # repr() of a bag is what a log line or a traceback shows: a secret says only "set".
    return " = attrs.field(repr=secret_repr)" if isinstance(x, LeafSpec) and x.secret else ""


# -- registry.py ---------------------------------------------------------------------------

@attrs.frozen
class Row:
    """One `Name(key=value, ...)` entry of a registry table, keyed by `key` (a dict's) or not."""

    key: str
    args: tuple[Kwarg, ...]


@attrs.frozen
class NamespaceRow:
    path: str
    class_name: str
    doc: str  # literal
    field_names: str  # a tuple literal
    children: tuple[NestedBag, ...]
    rank_names: str  # a tuple literal


@attrs.frozen
class RegistryFile:
    header: Header
    imports: str
    leaves: tuple[Row, ...]  # LeafSpec(...), schema order
    derived: tuple[Row, ...]  # DerivedSpec(...), inputs before dependents
    namespaces: tuple[NamespaceRow, ...]  # children first
    rules: tuple[Row, ...]
    presets: tuple[Row, ...]
    top_namespaces: tuple[str, ...]
    schema_version: str  # literal
    env_prefix: str  # literal
    fleet: str  # the registry's FleetSpec expression (codegen/fleet.py)
    legacy_abbreviations: bool  # the registry keeps argparse's prefix matching


def registry_file(schema: Schema, header: Header, import_name: str) -> RegistryFile:
    derived = {d.name: d for d in schema.derived}
    leaves = tuple(Row(leaf.name, leaf_args(leaf)) for leaf in schema.leaves)
    # the runtime classes the printed fields spell (a default left out imports nothing)
    spelled = set().union(*(classes_in(getattr(leaf, kw.key)) for leaf, row in zip(schema.leaves, leaves, strict=True)
                            for kw in row.args))
    return RegistryFile(
        header=header,
        imports=_registry_imports(
            {d.fn.partition(":")[0] for d in schema.derived} | {r.fn.partition(":")[0] for r in schema.rules if r.fn},
            sorted({"DerivedSpec", "LeafSpec", "NamespaceSpec", "PresetSpec", "Registry", "RoleSpec", "RuleSpec",
                    "TypeSpec"} | spelled | ({"Condition"} if any(r.when for r in schema.rules) else set())
                   | fleet_imports(schema.fleet)),
        ),
        leaves=leaves,
        derived=tuple(_derived_row(derived[n]) for n in schema.derived_order),
        namespaces=tuple(
            NamespaceRow(ns.path, class_name(ns.path), py(ns.doc),
                         py_after("fields", tuple(x.name for x in ns.values), 8),
                         tuple(NestedBag(c.attr, class_name(c.path), c.path) for c in schema.children(ns.path)),
                         py_after("ranks", tuple(r.name for r in ns.ranks), 8))
            for ns in _children_first(schema)
        ),
        rules=tuple(_rule_row(r) for r in schema.rules),
        presets=tuple(Row(p.name, (Kwarg("name", py(p.name)), Kwarg("help", py(p.help)),
                                   Kwarg("values", py(p.values)))) for p in schema.presets),
        top_namespaces=schema.top_level,
        schema_version=py(schema.settings.version),
        env_prefix=py(schema.settings.env_prefix),
        fleet=fleet_literal(schema.fleet),
        legacy_abbreviations=schema.settings.abbreviations == "legacy",
    )


# The leaf record's fields, each printed only where a leaf's value is not the field's default.
_SHOWN = attrs.fields(LeafSpec)


def _field_default(field: attrs.Attribute[Any], record: Any) -> Any:
    """The value `record` would hold in `field` had it not been given (a factory's for it)."""
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return default.factory(record) if default.takes_self else default.factory()
    return default


def leaf_args(leaf: LeafSpec) -> tuple[Kwarg, ...]:
    """`LeafSpec(...)`'s arguments: every field without a default, and each other field
    whose value is not its default (compared with its type, so 1 is not taken for True)."""
    out = []
    for field in _SHOWN:
        value = getattr(leaf, field.name)
        default = _field_default(field, leaf)
        if default is attrs.NOTHING or type(value) is not type(default) or value != default:
            out.append(Kwarg(field.name, literal(value)))
    return tuple(out)


def _derived_row(d: Derived) -> Row:
    module, _, function = d.fn.partition(":")
    return Row(d.name, (
        Kwarg("name", py(d.name)),
        Kwarg("namespace", py(d.namespace)),
        Kwarg("type", literal(d.type)),
        Kwarg("fn", f"{module}.{function}"),  # the registry imports each module whole
        Kwarg("inputs", py(d.inputs)),
        Kwarg("pinned", py(d.pinned)),
        Kwarg("hash", py(d.hash)),
    ))


def _rule_row(rule: Rule) -> Row:
    module, _, function = (rule.fn or "").partition(":")
    return Row(rule.id, (
        Kwarg("id", py(rule.id)),
        Kwarg("leaf", py(rule.leaf)),
        Kwarg("layer", py(rule.layer)),
        Kwarg("when", "(" + "".join(f"Condition({py(c.subject)}, {py(c.op)}, {py(_frozen(c.operand))}), "
                                   for c in rule.when) + ")"),
        Kwarg("value", py(_frozen(rule.value))),
        Kwarg("fn", f"{module}.{function}" if rule.fn else "None"),
        Kwarg("inputs", py(rule.inputs)),
        Kwarg("force", py(rule.force)),
        Kwarg("help", py(rule.help)),
        Kwarg("where", py(f"{rule.where.file}:{rule.where.line}")),
    ))


def _frozen(value: Any) -> Any:
    """Lists as tuples, so generated rule operands are immutable literals."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _registry_imports(derive_modules: set[str], runtime_names: list[str]) -> str:
    """Derived and rule functions' modules (the stdlib, configbags as third party, or the
    engine's own), then what the registry uses from the runtime."""
    stdlib = sorted(m for m in derive_modules if m.split(".")[0] in sys.stdlib_module_names)
    ours = sorted(m for m in derive_modules if m.split(".")[0] == "configbags")
    engine = sorted(derive_modules.difference(stdlib, ours))
    return import_block(
        [f"import {m}" for m in stdlib],
        [*(f"import {m}" for m in ours),
         from_import(FACE, runtime_names)],
        [f"import {m}" for m in engine],
        ["from . import bags", "from .role_audit import ROLE_NAMESPACE_SETS, ROLE_WRITE_ANY"],
    )


# -- role_audit.py -------------------------------------------------------------------------

@attrs.frozen
class RoleRow:
    literal: str
    reads: str  # frozenset literal
    audits: tuple[tuple[Kwarg, ...], ...]


@attrs.frozen
class RoleAuditFile:
    header: Header
    roles: tuple[RoleRow, ...]
    write_any_roles: tuple[str, ...]  # literals


def role_audit_file(schema: Schema, header: Header, import_name: str) -> RoleAuditFile:
    return RoleAuditFile(
        header=header,
        roles=tuple(
            RoleRow(py(r.name), f"frozenset({py(tuple(r.reads))})", tuple(
                tuple(Kwarg(k, py(getattr(a, k))) for k in ("date", "workload", "observed", "uncovered", "decision"))
                for a in r.audits))
            for r in schema.roles
        ),
        write_any_roles=tuple(py(r.name) for r in schema.roles if r.write_any),
    )


# -- server_args.py ------------------------------------------------------------------------

@attrs.frozen
class RecordField:
    name: str
    hint: str
    required: bool
    default_expr: str  # what follows `=` in the ServerArgs class body
    doc: str  # docstring literal


@attrs.frozen
class ServerArgsFile:
    header: Header
    imports: str
    fields: tuple[RecordField, ...]
    preset_names: str  # tuple literal


def server_args_file(schema: Schema, header: Header, import_name: str) -> ServerArgsFile:
    return ServerArgsFile(
        header=header,
        imports=import_block(
            ["import argparse", "from collections.abc import Mapping, Sequence", "from pathlib import Path",
             "from typing import Any"],
            ["import attrs",
             from_import(FACE, [
                 "Layer", "add_config_flag", "add_leaf_arguments", "leaf_converters", "load_config_file",
                 "record_from_cli", "record_from_cli_args", "record_from_dict", "record_to_dict",
                 "replace_record"])],
            ["from .registry import LEAVES, REGISTRY"],
        ),
        fields=tuple(RecordField(leaf.name, hint(leaf.type), leaf.required,
                                 "" if leaf.required else _default_expr(leaf), docstring(leaf.help))
                     for leaf in schema.leaves),
        preset_names=py(tuple(p.name for p in schema.presets)),
    )


def _default_expr(leaf: LeafSpec) -> str:
    value = jsonable(leaf.default)
    if isinstance(value, (dict, list)) and leaf.type.base == "json":
        # A mutable JSON default gets a fresh copy per record.
        factory = ("dict" if isinstance(value, dict) else "list") if not value else f"lambda: {value!r}"
        return f"attrs.field(factory={factory})"
    return py(value)


# -- accessors.py --------------------------------------------------------------------------

@attrs.frozen
class AccessorFunction:
    namespace: str
    function: str
    class_name: str
    doc: str


@attrs.frozen
class AccessorsFile:
    header: Header
    imports: str
    import_name: str  # the generated package's own import name (docstrings)
    exports: tuple[str, ...]
    view_slots: tuple[str, ...]
    accessors: tuple[AccessorFunction, ...]


def accessors_file(schema: Schema, header: Header, import_name: str) -> AccessorsFile:
    top = schema.top_level
    return AccessorsFile(
        header=header,
        imports=import_block(
            ["from collections.abc import Mapping", "from typing import Any"],
            [f"from {FACE} import Context, Facts, ProcessView, RunnerView"],
            ["from . import bags, registry", "from .server_args import ServerArgs"],
        ),
        import_name=import_name,
        exports=tuple(sorted(
            [*(f"get_{t}" for t in top), "ConfigView", "ProcessConfigView", "cfg", "get_context",
             "get_server_args", "publish", "runner_view"], key=export_order)),
        view_slots=tuple(sorted([*top, "server_args"])),
        accessors=tuple(
            AccessorFunction(ns.path, f"get_{ns.path}", class_name(ns.path),
                             docstring(f"The current `{ns.path}` bag of this process. {ns.doc}"))
            for ns in schema.namespaces if ns.path in top
        ),
    )


# -- ratchet_allowlist.py ------------------------------------------------------------------

@attrs.frozen
class RatchetFile:
    header: Header
    roots: str  # literals, each
    excludes: str
    raw_accessor: str
    record_class: str
    record_attributes: str
    min_files: int
    record_dicts: str
    resolution: str
    allowlist: tuple[Row, ...]
    writes: tuple[Row, ...]
    override_policies: tuple[Kwarg, ...]  # leaf -> its override policy
    env_leaves: tuple[Kwarg, ...]  # declared environment variable -> its leaf
    accessor_exprs: tuple[Kwarg, ...]


def ratchet_file(schema: Schema, header: Header, import_name: str) -> RatchetFile:
    ratchet = schema.ratchet
    return RatchetFile(
        header=header,
        roots=py(ratchet.roots),
        excludes=py(ratchet.excludes),
        raw_accessor=py(ratchet.raw_accessor),
        record_class=py(ratchet.record_class),
        record_attributes=py(ratchet.record_attributes),
        min_files=ratchet.min_files,
        record_dicts=py(ratchet.record_dicts),
        resolution=py(ratchet.resolution),
        allowlist=tuple(_allow(e) for e in ratchet.allowlist),
        writes=tuple(_allow(e) for e in ratchet.writes),
        override_policies=tuple(
            Kwarg(py(leaf.name), py(leaf.policy.value)) for leaf in sorted(schema.leaves, key=lambda x: x.name)
        ),
        env_leaves=tuple(Kwarg(py(env), py(leaf)) for env, leaf in schema.env_leaves.items()),
        accessor_exprs=tuple(
            Kwarg(py(x.name), py(accessor_expression(x.namespace, x.name)))
            for x in sorted(schema.values, key=lambda x: x.name)
        ),
    )


def _allow(entry: AllowEntry) -> Row:
    fields = ("file", "function", "leaf", "reason") + (("reads",) if entry.reads is not None else ())
    return Row(entry.leaf, tuple(Kwarg(k, py(getattr(entry, k))) for k in fields))


# -- CONFIG.md -----------------------------------------------------------------------------

@attrs.frozen
class LeafDoc:
    name: str
    flags: str  # each cell already Markdown
    type: str
    default: str
    policy: str
    owner: str
    hash: str
    help: str


@attrs.frozen
class DerivedDoc:
    name: str
    type: str
    inputs: str
    pinned: str
    help: str


@attrs.frozen
class NamespaceDoc:
    path: str
    doc: str
    accessor: str
    leaves: tuple[LeafDoc, ...]
    derived: tuple[DerivedDoc, ...]


@attrs.frozen
class EnvDoc:
    name: str
    leaf: str
    type: str
    default: str
    help: str


@attrs.frozen
class PresetDoc:
    name: str
    values: str
    help: str


@attrs.frozen
class RuleDoc:
    id: str
    leaf: str
    layer: str
    when: str
    then: str
    help: str


@attrs.frozen
class ConfigDoc:
    header: Header
    leaf_count: int
    has_bare_flags: bool  # a flag with a const or nargs "*": the page says what bare means
    namespaces: tuple[NamespaceDoc, ...]
    env_prefix: str
    env: tuple[EnvDoc, ...]
    presets: tuple[PresetDoc, ...]
    rules: tuple[RuleDoc, ...]


def config_doc(schema: Schema, header: Header, import_name: str) -> ConfigDoc:
    return ConfigDoc(
        header=header,
        leaf_count=len(schema.leaves),
        has_bare_flags=any(bare_flag(leaf) for leaf in schema.leaves),
        namespaces=tuple(
            NamespaceDoc(md(ns.path), md(ns.doc), accessor_expression(ns.path, ""),
                         tuple(_leaf_doc(leaf) for leaf in ns.leaves), tuple(_derived_doc(d) for d in ns.derived))
            for ns in schema.namespaces
        ),
        env_prefix=md(schema.settings.env_prefix or ""),
        env=tuple(_env_doc(leaf, env, old) for leaf in sorted(schema.leaves, key=lambda x: x.env or "")
                  for env, old in ((leaf.env, None), *((r.env, r.name) for r in leaf.renamed_from)) if env),
        presets=tuple(
            PresetDoc(md(p.name), ", ".join(f"`{md(k)}={md(json.dumps(v))}`" for k, v in p.values.items()), md(p.help))
            for p in schema.presets
        ),
        rules=tuple(_rule_doc(r) for r in schema.rules),
    )


def _leaf_doc(leaf: LeafSpec) -> LeafDoc:
    bare = f" ({md(bare_flag(leaf))})" if bare_flag(leaf) else ""
    return LeafDoc(
        name=leaf.name,
        flags="<br>".join(f"`{md(f)}`" for f in leaf.flags) + bare if leaf.flags else "(no flag)",
        type=f"`{md(leaf.type)}`",
        default="**required**" if leaf.required else f"`{md(shown_default(leaf))}`"
        + (f" (fallback `{md(leaf.fallback)}`)" if leaf.has_fallback else ""),
        policy=leaf.policy.value + (f" (≤ `{md(leaf.capacity)}`)" if leaf.capacity else ""),
        owner=leaf.owner + "".join(f", {md(w)}" for w in leaf.writers),
        hash="yes" if leaf.hash else "no" + (f" ({leaf.kind})" if leaf.kind else ""),
        help=md(leaf.help) + (f" **Deprecated** {md(deprecation_note(leaf))}" if leaf.deprecated else "")
        + (f" Env: `{md(leaf.env)}`." if leaf.env else "")
        + (" **Secret:** redacted wherever shown, never hashed." if leaf.secret else "")
        + (f" Old names: {', '.join(f'`{md(r.name)}`' for r in leaf.renamed_from)}." if leaf.renamed_from else ""),
    )


def _derived_doc(d: Derived) -> DerivedDoc:
    return DerivedDoc(d.name, f"`{md(d.type)}`", ", ".join(f"`{md(i)}`" for i in d.inputs),
                      "pinned at publish" if d.pinned else "recomputed on override", md(d.help))


def _env_doc(leaf: LeafSpec, env: str, old: str | None) -> EnvDoc:
    note = f" **Deprecated** old name; use `{md(leaf.env or leaf.name)}`." if old else ""
    return EnvDoc(f"`{md(env)}`", f"`{md(leaf.name)}`", f"`{md(leaf.type)}`", f"`{md(shown_default(leaf))}`",
                  md(leaf.help) + note)


def _rule_doc(rule: Rule) -> RuleDoc:
    then = f"`{md(rule.fn)}({', '.join(rule.inputs)})`" if rule.fn else f"`{md(json.dumps(rule.value))}`"
    when = "; ".join(md(f"{c.subject} {c.op} {json.dumps(c.operand)}") for c in rule.when) or "always"
    return RuleDoc(md(rule.id), md(rule.leaf), rule.layer, when,
                   then + (f" **forced:** {md(rule.force)}" if rule.force else ""), md(rule.help))


# -- ROLES.md ------------------------------------------------------------------------------

@attrs.frozen
class RoleDoc:
    name: str
    doc: str
    cells: tuple[str, ...]  # one per top-level namespace
    audits: str


@attrs.frozen
class RolesDoc:
    header: Header
    table_header: str
    table_rule: str
    roles: tuple[RoleDoc, ...]


def roles_doc(schema: Schema, header: Header, import_name: str) -> RolesDoc:
    top = schema.top_level
    return RolesDoc(
        header=header,
        table_header="| role | " + " | ".join(f"`{md(t)}`" for t in top) + " | audits |",
        table_rule="|---|" + "---|" * len(top) + "---|",
        roles=tuple(
            RoleDoc(md(r.name), md(r.doc), tuple("✓" if t in r.reads else "" for t in top), "<br>".join(
                md(f"{a.date}: {a.workload}; observed {{{', '.join(a.observed)}}}; decision: {a.decision}")
                for a in r.audits))
            for r in schema.roles
        ),
    )


# -- every file ----------------------------------------------------------------------------

# Each output file (its template is `<name>.j2`) and the step that builds its model.
FILES: dict[str, Callable[[Schema, Header, str], Any]] = {
    "__init__.py": init_file,
    "bags.py": bags_file,
    "registry.py": registry_file,
    "role_audit.py": role_audit_file,
    "server_args.py": server_args_file,
    "accessors.py": accessors_file,
    "ratchet_allowlist.py": ratchet_file,
    "CONFIG.md": config_doc,
    "ROLES.md": roles_doc,
}


def build(schema: Schema, regen: str, import_name: str) -> dict[str, Any]:
    """Each output file's name -> the model its template prints."""
    header = Header(schema.name, schema.sources, regen)
    return {name: step(schema, header, import_name) for name, step in FILES.items()}


def export_order(name: str) -> tuple[int, str]:
    """isort-style order for __all__: CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def import_block(*sections: list[str]) -> str:
    """Import lines, one isort section per argument (stdlib, third party, first party,
    relative), empty sections dropped: generated code imports nothing it does not use.
    configbags counts as third party, as it is in the engine that imports the generated
    package (configbags' own repo ignores I001 for its generated files)."""
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def from_import(module: str, names: list[str]) -> str:
    """`from module import names` as black prints it: on one line where that fits, else
    one name a line (see `py_after`: black's input already in its shape costs one pass)."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= LINE_LENGTH:
        return line
    return f"from {module} import (\n" + "".join(f"    {name},\n" for name in names) + ")"


def config_file_schema(schema: Schema, regen: str) -> dict[str, Any]:
    """The JSON Schema of a `--config` file for ServerArgs (leaf names as keys)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"Code generated by `configbags gen` from the schema folder {schema.name}/. DO NOT EDIT. "
                    f"Regenerate: {regen}",
        "title": "ServerArgs config file",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **{leaf.name: _json_property(leaf) for leaf in schema.leaves},
            **{old.name: {**_json_property(leaf), "deprecated": True,
                          "description": f"Old name of {leaf.name}. {leaf.help}"}
               for leaf in schema.leaves for old in leaf.renamed_from},
        },
        # keys whose values an error message must not quote
        "x-secrets": sorted(leaf.name for leaf in schema.leaves if leaf.secret),
    }


def _json_property(leaf: LeafSpec) -> dict[str, Any]:
    """One leaf's property, built fresh each time (no shared sub-dicts between leaves)."""
    base, optional = leaf.type.base, leaf.type.optional
    prop: dict[str, Any]
    if leaf.type.item is not None:
        item: dict[str, Any] = {"type": JSON_SCALARS[leaf.type.item.base]}
        prop = {"type": ["array", "null"] if optional else "array", "items": item}
    elif base == "json" and leaf.structure is not None:
        prop = item = structure_schema(leaf.structure, optional=optional)
    elif base == "json":
        prop = item = {}
    else:
        prop = item = {"type": [JSON_SCALARS[base], "null"] if optional else JSON_SCALARS[base]}
    # choices and bounds constrain each item of a list, the value itself otherwise
    if leaf.choices is not None:
        item["enum"] = [*leaf.choices, *([None] if optional and item is prop else [])]
    if leaf.minimum is not None:
        item["minimum"] = leaf.minimum
    if leaf.maximum is not None:
        item["maximum"] = leaf.maximum
    prop["description"] = leaf.help
    prop["x-configbags-apply"] = apply_class(leaf.policy).value  # for orchestrators: live, reload, restart
    if leaf.deprecated is not None:
        prop["deprecated"] = True
    if not leaf.required:
        prop["default"] = leaf.default
    return prop
