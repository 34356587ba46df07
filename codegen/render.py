"""Stage 3: the render model. Every spelling a template prints (Python name, class name,
type hint, default expression, CLI flags and argparse arguments, docstring and Markdown
text) is computed here, once, from the schema model; templates only loop and print.

Escaping happens here, once per target: Python literals via `repr`, docstrings via
`docstring()`, argparse help via `%` doubling, Markdown via `md()`. Schema text therefore
never reaches generated code except inside a literal that `repr` or `docstring` built."""

from __future__ import annotations

import json
import sys
from typing import Any

import attrs

from configbags.codegen.model import (
    AllowEntry,
    Derived,
    Leaf,
    Namespace,
    Preset,
    Role,
    Rule,
    Schema,
    class_name,
)
from configbags.runtime.generated_api import API_VERSION
from configbags.runtime.leaftypes import Policy, TypeSpec, jsonable
from configbags.runtime.nested import structure_schema
from configbags.runtime.record import RENAMED_DEST
from configbags.runtime.registry import REDACTED, LeafSpec, accessor_expression
from configbags.runtime.spelling import flag_of

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


def _literal(value: Any) -> str:
    if isinstance(value, str):
        text = repr(value)
        # repr picks single quotes unless the text holds one; black prefers double quotes
        # wherever that needs no more escapes (both spell the same string)
        return f'"{text[1:-1]}"' if text[0] == "'" and '"' not in value else text
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


@attrs.frozen
class Kwarg:
    key: str
    value: str  # a Python expression


@attrs.frozen
class BagAttribute:
    name: str
    hint: str
    doc: str  # docstring literal


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
    field_names: str  # a tuple literal, for the registry
    rank_names: str  # a tuple literal


@attrs.frozen
class AccessorFunction:
    namespace: str
    function: str
    class_name: str
    doc: str


@attrs.frozen
class OldFlag:
    """An old (renamed_from) flag: registered hidden, so using it warns or, once removed,
    fails with a message naming the new flag rather than argparse's 'unrecognized'."""

    flags: str
    cli_kwargs: tuple[Kwarg, ...]


@attrs.frozen
class EnvRow:
    md_name: str
    md_leaf: str
    md_type: str
    md_default: str
    md_help: str


@attrs.frozen
class RuleRow:
    args: tuple[Kwarg, ...]  # RuleSpec(...) arguments
    md_id: str
    md_leaf: str
    md_layer: str
    md_when: str
    md_then: str
    md_help: str


@attrs.frozen
class PresetRow:
    name: str
    args: tuple[Kwarg, ...]
    md_name: str
    md_help: str
    md_values: str


@attrs.frozen
class LeafSpellings:
    name: str
    namespace: str
    hint: str
    required: bool
    default_expr: str  # what follows `=` in the ServerArgs class body
    doc: str
    spec_args: tuple[Kwarg, ...]  # LeafSpec(...) arguments
    has_cli: bool
    flags: str  # comma-separated literals
    cli_kwargs: tuple[Kwarg, ...]
    old_flags: tuple[OldFlag, ...]
    # CONFIG.md cells
    md_flags: str
    md_type: str
    md_default: str
    md_policy: str
    md_owner: str
    md_help: str
    md_hash: str


@attrs.frozen
class DerivedSpellings:
    name: str
    spec_args: tuple[Kwarg, ...]
    md_type: str
    md_help: str
    md_inputs: str
    md_pinned: str


@attrs.frozen
class NamespaceSection:
    """One namespace's CLI group and CONFIG.md section."""

    path: str
    title: str  # literal
    doc_literal: str
    md_path: str
    md_doc: str
    accessor: str
    leaves: tuple[LeafSpellings, ...]
    derived: tuple[DerivedSpellings, ...]
    has_derived: bool


@attrs.frozen
class RoleRow:
    name: str
    literal: str
    reads: str  # frozenset literal
    audits: tuple[tuple[Kwarg, ...], ...]
    md_name: str
    md_doc: str
    md_cells: tuple[str, ...]  # one per top-level namespace
    md_audits: str


@attrs.frozen
class AllowlistEntry:
    args: tuple[Kwarg, ...]


def export_order(name: str) -> tuple[int, str]:
    """isort-style order for __all__: CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@attrs.frozen
class RenderModel:
    header_sources: tuple[str, ...]
    schema_folder: str  # the schema folder's name, as the header prints it
    regen: str
    regen_literal: str  # the regenerate command as a Python literal (the API check's advice)
    api_version: int  # the runtime API (configbags.runtime.generated_api) the code is written for
    init_imports: str
    accessors_imports: str
    import_name: str  # the generated package's own import name (docstrings)
    bags: tuple[BagClass, ...]  # children first
    top_bags: tuple[NestedBag, ...]
    accessors: tuple[AccessorFunction, ...]
    groups: tuple[NamespaceSection, ...]
    registry_imports: str
    accessor_exports: tuple[str, ...]
    view_slots: tuple[str, ...]
    bags_imports: str  # the import block of bags.py, in isort sections
    server_args_imports: str
    bag_exports: tuple[str, ...]
    derived_order: tuple[DerivedSpellings, ...]
    roles: tuple[RoleRow, ...]
    write_any_roles: tuple[str, ...]  # literals
    top_namespaces: tuple[str, ...]
    md_namespace_header: str
    md_namespace_rule: str
    ratchet_roots: str
    ratchet_excludes: str
    raw_accessor: str
    record_class: str
    record_attributes: str
    min_files: int
    allowlist: tuple[AllowlistEntry, ...]
    record_dicts: str
    resolution: str
    writes: tuple[AllowlistEntry, ...]
    override_policies: tuple[Kwarg, ...]  # leaf -> its override policy
    env_leaves: tuple[Kwarg, ...]  # declared environment variable -> its leaf
    accessor_exprs: tuple[Kwarg, ...]
    leaf_count: int
    rules: tuple[RuleRow, ...]
    presets: tuple[PresetRow, ...]
    preset_names: str  # tuple literal
    env_rows: tuple[EnvRow, ...]
    md_env_prefix: str
    schema_version: str  # literal
    env_prefix: str  # literal
    legacy_abbreviations: bool = False  # the registry keeps argparse's prefix matching
    has_bare_flags: bool = False  # a flag with a const or nargs "*": CONFIG.md says what bare means


def build(schema: Schema, regen: str, import_name: str) -> RenderModel:
    derived_all = {d.name: _derived(d) for d in schema.derived}
    groups = tuple(_group(ns, derived_all) for ns in schema.namespaces)
    top = schema.top_level
    return RenderModel(
        header_sources=schema.sources,
        schema_folder=schema.name,
        regen=regen,
        regen_literal=py(regen),
        api_version=API_VERSION,
        init_imports=import_block([f"from {FACE} import require_api"]),
        accessors_imports=import_block(
            ["from collections.abc import Mapping", "from typing import Any"],
            [f"from {FACE} import Context, Facts, ProcessView, RunnerView"],
            ["from . import bags, registry", "from .server_args import ServerArgs"],
        ),
        import_name=import_name,
        bags=tuple(_bag(schema, ns) for ns in sorted(schema.namespaces, key=lambda n: (-n.path.count("."), n.path))),
        top_bags=tuple(NestedBag(p, class_name(p), p) for p in top),
        accessors=tuple(
            AccessorFunction(p, f"get_{p}", class_name(p), docstring(_accessor_doc(ns)))
            for ns in schema.namespaces if (p := ns.path) in top
        ),
        groups=groups,
        registry_imports=_registry_imports(
            {d.fn.partition(":")[0] for d in schema.derived} | {r.fn.partition(":")[0] for r in schema.rules if r.fn},
            sorted(
                {"DerivedSpec", "LeafSpec", "NamespaceSpec", "PresetSpec", "Registry", "RoleSpec", "RuleSpec",
                 "TypeSpec"}
                | ({"Policy"} if any(x.policy is not Policy.STARTUP for x in schema.leaves) else set())
                | ({"Condition"} if any(r.when for r in schema.rules) else set())
                | ({"Deprecation"} if any(x.deprecated for x in schema.leaves) else set())
                | ({"Renamed"} if any(x.renamed_from for x in schema.leaves) else set())
            ),
        ),
        accessor_exports=tuple(sorted(
            [*(f"get_{t}" for t in top), "ConfigView", "ProcessConfigView", "cfg", "get_context",
             "get_server_args", "publish", "runner_view"], key=export_order)),
        view_slots=tuple(sorted([*top, "server_args"])),
        bags_imports=import_block(
            ["from typing import Any"] if any(x.type.base == "json" for x in schema.values) else [],
            ["import attrs",
             *([f"from {FACE} import unstamped_rank"] if any(ns.ranks for ns in schema.namespaces) else [])],
        ),
        server_args_imports=import_block(
            ["import argparse", "from collections.abc import Mapping, Sequence", "from pathlib import Path",
             "from typing import Any"],
            ["import attrs",
             f"from {FACE} import " + ", ".join([
                 "Layer", "add_config_flag",
                 *(["json_value"] if any(leaf.type.base == "json" and leaf.cli is not None
                                         for leaf in schema.leaves) else []),
                 "leaf_converters", "load_config_file", "record_from_cli", "record_from_cli_args",
                 "record_from_dict", "record_to_dict", "replace_record"])],
            ["from .registry import LEAVES, REGISTRY"],
        ),
        bag_exports=tuple(sorted([*(class_name(ns.path) for ns in schema.namespaces), "Config"], key=export_order)),
        derived_order=tuple(derived_all[n] for n in schema.derived_order),
        roles=tuple(_role(r, top) for r in schema.roles),
        write_any_roles=tuple(py(r.name) for r in schema.roles if r.write_any),
        top_namespaces=top,
        md_namespace_header="| role | " + " | ".join(f"`{md(t)}`" for t in top) + " | audits |",
        md_namespace_rule="|---|" + "---|" * len(top) + "---|",
        ratchet_roots=py(tuple(schema.ratchet.roots)),
        ratchet_excludes=py(tuple(schema.ratchet.excludes)),
        raw_accessor=py(schema.ratchet.raw_accessor),
        record_class=py(schema.ratchet.record_class),
        record_attributes=py(tuple(schema.ratchet.record_attributes)),
        min_files=schema.ratchet.min_files,
        allowlist=tuple(_allow(e) for e in schema.ratchet.allowlist),
        record_dicts=py(tuple(schema.ratchet.record_dicts)),
        resolution=py(tuple(schema.ratchet.resolution)),
        writes=tuple(_allow(e) for e in schema.ratchet.writes),
        override_policies=tuple(
            Kwarg(py(leaf.name), py(leaf.policy.value)) for leaf in sorted(schema.leaves, key=lambda x: x.name)
        ),
        env_leaves=tuple(Kwarg(py(env), py(leaf)) for env, leaf in schema.env_leaves.items()),
        accessor_exprs=tuple(
            Kwarg(py(x.name), py(accessor_expression(x.namespace, x.name)))
            for x in sorted(schema.values, key=lambda x: x.name)
        ),
        leaf_count=len(schema.leaves),
        rules=tuple(_rule(r, schema) for r in schema.rules),
        presets=tuple(_preset(p) for p in schema.presets),
        preset_names=py(tuple(p.name for p in schema.presets)),
        env_rows=tuple(_env_row(leaf, env, old) for leaf in sorted(schema.leaves, key=lambda x: x.env or "")
                       for env, old in ((leaf.env, None), *((r.env, r.name) for r in leaf.renamed_from))
                       if env),
        md_env_prefix=md(schema.settings.env_prefix or ""),
        schema_version=py(schema.settings.version),
        env_prefix=py(schema.settings.env_prefix),
        legacy_abbreviations=schema.settings.abbreviations == "legacy",
        has_bare_flags=any(_bare_flag(leaf) for leaf in schema.leaves),
    )


def _env_row(leaf: Leaf, env: str, old: str | None) -> EnvRow:
    note = f" **Deprecated** old name; use `{md(leaf.env or leaf.name)}`." if old else ""
    return EnvRow(f"`{md(env)}`", f"`{md(leaf.name)}`", f"`{md(leaf.type)}`",
                  f"`{md(_shown_default(leaf))}`", md(leaf.help) + note)


def _rule(rule: Rule, schema: Schema) -> RuleRow:
    module, _, function = (rule.fn or "").partition(":")
    then = f"`{md(rule.fn)}({', '.join(rule.inputs)})`" if rule.fn else f"`{md(json.dumps(rule.value))}`"
    when = "; ".join(
        md(f"{c.subject} {c.op} {json.dumps(c.operand)}") for c in rule.when
    ) or "always"
    return RuleRow(
        args=(
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
        ),
        md_id=md(rule.id),
        md_leaf=md(rule.leaf),
        md_layer=rule.layer,
        md_when=when,
        md_then=then + (f" **forced:** {md(rule.force)}" if rule.force else ""),
        md_help=md(rule.help),
    )


def _frozen(value: Any) -> Any:
    """Lists as tuples, so generated rule operands are immutable literals."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _preset(preset: Preset) -> PresetRow:
    return PresetRow(
        name=preset.name,
        args=(Kwarg("name", py(preset.name)), Kwarg("help", py(preset.help)),
              Kwarg("values", py(preset.values))),
        md_name=md(preset.name),
        md_help=md(preset.help),
        md_values=", ".join(f"`{md(k)}={md(json.dumps(v))}`" for k, v in preset.values.items()),
    )


def import_block(*sections: list[str]) -> str:
    """Import lines, one isort section per argument (stdlib, third party, first party,
    relative), empty sections dropped: generated code imports nothing it does not use.
    configbags counts as third party, as it is in the engine that imports the generated
    package (configbags' own repo ignores I001 for its generated files)."""
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def _registry_imports(derive_modules: set[str], runtime_names: list[str]) -> str:
    """Derived and rule functions' modules (the stdlib, configbags as third party, or the
    engine's own), then what the registry uses from the runtime."""
    stdlib = sorted(m for m in derive_modules if m.split(".")[0] in sys.stdlib_module_names)
    ours = sorted(m for m in derive_modules if m.split(".")[0] == "configbags")
    engine = sorted(derive_modules.difference(stdlib, ours))
    return import_block(
        [f"import {m}" for m in stdlib],
        [*(f"import {m}" for m in ours),
         f"from {FACE} import {', '.join(runtime_names)}"],
        [f"import {m}" for m in engine],
        ["from . import bags", "from .role_audit import ROLE_NAMESPACE_SETS, ROLE_WRITE_ANY"],
    )


def _allow(entry: AllowEntry) -> AllowlistEntry:
    return AllowlistEntry(tuple(Kwarg(k, py(getattr(entry, k))) for k in ("file", "function", "leaf", "reason")))


def _accessor_doc(ns: Namespace) -> str:
    return f"The current `{ns.path}` bag of this process. {ns.doc}"


def _resolved_hint(x: Leaf | Derived) -> str:
    """A bag holds resolved values: a leaf with a fallback is never None there, even though
    the operator may leave it unset in the record."""
    if isinstance(x, Leaf) and x.has_fallback:
        return hint(TypeSpec(x.type.base, optional=False))
    return hint(x.type)


def _bag(schema: Schema, ns: Namespace) -> BagClass:
    fields = tuple(BagAttribute(x.name, _resolved_hint(x), docstring(x.help)) for x in ns.values)
    return BagClass(
        path=ns.path,
        class_name=class_name(ns.path),
        doc=docstring(ns.doc),
        fields=fields,
        children=tuple(NestedBag(c.attr, class_name(c.path), c.path) for c in schema.children(ns.path)),
        ranks=tuple(BagAttribute(r.name, "int", docstring(r.help)) for r in ns.ranks),
        field_names=py(tuple(f.name for f in fields)),
        rank_names=py(tuple(r.name for r in ns.ranks)),
    )


def _default_expr(leaf: Leaf) -> str:
    value = jsonable(leaf.type.coerce(leaf.default))  # json leaves coerce to frozen views
    if isinstance(value, (dict, list)) and leaf.type.base == "json":
        # A mutable JSON default gets a fresh copy per record.
        factory = ("dict" if isinstance(value, dict) else "list") if not value else f"lambda: {value!r}"
        return f"attrs.field(factory={factory})"
    return py(value)


def _cli_kwargs(leaf: Leaf) -> tuple[Kwarg, ...]:
    t = leaf.type
    cli = leaf.cli
    kw = [Kwarg("dest", py(leaf.name))]
    takes_value = True
    if cli is not None and cli.has_const and cli.nargs == 0:
        # the flag alone, never with a value: argparse's store_const
        kw += [Kwarg("action", py("store_const")), Kwarg("const", py(t.coerce(cli.const)))]
        takes_value = False
    elif t.base == "bool":
        kw.append(Kwarg("action", "argparse.BooleanOptionalAction"))
        takes_value = False
    elif t.base in ("int", "float", "str"):
        kw.append(Kwarg("type", t.base))
        if cli is not None and cli.has_const:
            # the bare flag stands for const (argparse converts only a str const, so the
            # literal is the leaf's own type already)
            kw += [Kwarg("nargs", py("?")), Kwarg("const", py(t.coerce(cli.const)))]
    elif t.item is not None:
        kw += [Kwarg("type", t.item.base), Kwarg("nargs", py(cli.nargs if cli and cli.nargs else "+"))]
    else:
        kw.append(Kwarg("type", "json_value"))
    if leaf.choices is not None and takes_value:
        kw.append(Kwarg("choices", py(list(leaf.choices))))
    kw.append(Kwarg("default", "argparse.SUPPRESS"))  # unset flags must not mask --config
    if cli is not None and cli.suppress_help:
        kw.append(Kwarg("help", "argparse.SUPPRESS"))
    else:
        kw.append(Kwarg("help", py(_cli_help(leaf))))
    if takes_value:
        kw.append(Kwarg("metavar", py(leaf.name.upper())))
    return tuple(kw)


def _old_cli_kwargs(leaf: Leaf, old: str) -> tuple[Kwarg, ...]:
    kw = [Kwarg("dest", py(RENAMED_DEST + old)) if k.key == "dest" else k for k in _cli_kwargs(leaf)]
    return tuple(Kwarg("help", "argparse.SUPPRESS") if k.key == "help" else k for k in kw)


def _cli_help(leaf: Leaf) -> str:
    default = "required" if leaf.required else f"default: {_shown_default(leaf)}"
    if leaf.choices is not None and leaf.type.base != "bool":
        default += "; one of: " + ", ".join(map(str, leaf.choices))
    extra = f"; unset falls back to {leaf.fallback!r}" if leaf.has_fallback else ""
    extra += f"; {_bare_flag(leaf)}" if _bare_flag(leaf) else ""
    policy = {Policy.STARTUP: "", Policy.LOAD_TIME: "; may be resolved at load time",
              Policy.RUNTIME: "; tunable at runtime"}
    deprecated = f" DEPRECATED: {_deprecation(leaf)}" if leaf.deprecated else ""
    env = f"; env {leaf.env}" if leaf.env else ""
    text = f"{leaf.help}{deprecated} ({default}{extra}{policy[leaf.policy]}{env})"
    return text.replace("%", "%%")  # argparse formats help with %


def _bare_flag(leaf: Leaf) -> str:
    """What the flag given alone means, when that is not the usual (a bool's True, or an
    error); empty otherwise. Shared by --help and CONFIG.md."""
    cli = leaf.cli
    if cli is None:
        return ""
    if cli.has_const:
        const = _shown(leaf.type.coerce(cli.const))
        return f"the flag alone sets {const}" if cli.nargs == 0 else f"the flag alone means {const}"
    if cli.nargs == "*":
        return "the flag alone gives an empty list"
    return ""


def _deprecation(leaf: Leaf) -> str:
    dep = leaf.deprecated
    if dep is None:
        return ""
    use = f"; use {dep.use}" if dep.use else ""
    until = f", removed in {dep.remove_in}" if dep.remove_in else ""
    return f"since {dep.since}{until}{use}."


def _shown_default(leaf: Leaf) -> str:
    if leaf.secret and leaf.default is not None:
        return REDACTED
    return _shown(leaf.default)


def _shown(value: Any) -> str:
    """A value as --help and CONFIG.md show it."""
    if value is None:
        return "None"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return repr(value) if isinstance(value, str) else str(value)


# LeafSpec's field defaults: the registry spells out only the fields where a leaf differs.
_LEAF_DEFAULTS = {f.name: f.default for f in attrs.fields(LeafSpec) if f.default is not attrs.NOTHING}


def _non_default(args: tuple[tuple[str, Any, str], ...], defaults: dict[str, Any]) -> tuple[Kwarg, ...]:
    """`key=expression` for each (key, value, expression) whose value is not the field's
    default (compared with its type, so 1 is not taken for True)."""
    return tuple(
        Kwarg(key, expr) for key, value, expr in args
        if key not in defaults or type(value) is not type(defaults[key]) or value != defaults[key]
    )


def _leaf(leaf: Leaf) -> LeafSpellings:
    t = leaf.type
    default = None if leaf.required else jsonable(t.coerce(leaf.default))
    spec = _non_default((
        ("name", leaf.name, py(leaf.name)),
        ("namespace", leaf.namespace, py(leaf.namespace)),
        ("type", t, f"TypeSpec({t.base!r}, {t.optional!r})"),
        ("owner", leaf.owner, py(leaf.owner)),
        ("default", default, py(default)),
        ("required", leaf.required, py(leaf.required)),
        ("has_fallback", leaf.has_fallback, py(leaf.has_fallback)),
        ("fallback", leaf.fallback, py(leaf.fallback)),
        ("choices", leaf.choices, py(leaf.choices)),
        ("minimum", leaf.minimum, py(leaf.minimum)),
        ("maximum", leaf.maximum, py(leaf.maximum)),
        ("policy", leaf.policy, f"Policy.{leaf.policy.name}"),
        ("hash", leaf.hash, py(leaf.hash)),
        ("capacity", leaf.capacity, py(leaf.capacity)),
        ("flags", tuple(leaf.cli.flags) if leaf.cli else (), py(leaf.cli.flags if leaf.cli else ())),
        ("writers", tuple(leaf.writers), py(leaf.writers)),
        ("env", leaf.env, py(leaf.env)),
        ("secret", leaf.secret, py(leaf.secret)),
        ("renamed_from", tuple(leaf.renamed_from), "(" + "".join(
            f"Renamed({py(r.name)}, {py(r.flag)}, {py(r.env)}, {py(r.since)}, {py(r.remove_in)}), "
            for r in leaf.renamed_from) + ")"),
        ("deprecated", leaf.deprecated, "None" if leaf.deprecated is None else
         f"Deprecation({py(leaf.deprecated.since)}, {py(leaf.deprecated.use)}, {py(leaf.deprecated.remove_in)})"),
        ("kind", leaf.kind, py(leaf.kind)),
    ), _LEAF_DEFAULTS)
    flags = leaf.cli.flags if leaf.cli else ()
    return LeafSpellings(
        name=leaf.name,
        namespace=leaf.namespace,
        hint=hint(t),
        required=leaf.required,
        default_expr="" if leaf.required else _default_expr(leaf),
        doc=docstring(leaf.help),
        spec_args=spec,
        has_cli=leaf.cli is not None,
        flags=", ".join(map(py, flags)),
        cli_kwargs=_cli_kwargs(leaf) if leaf.cli else (),
        old_flags=tuple(
            OldFlag(py(flag_of(r.name, r.flag)), _old_cli_kwargs(leaf, r.name))
            for r in leaf.renamed_from
        ),
        md_flags="<br>".join(f"`{md(f)}`" for f in flags) + (f" ({md(_bare_flag(leaf))})" if _bare_flag(leaf) else "")
        if flags else "(no flag)",
        md_type=f"`{md(t)}`",
        md_default="**required**" if leaf.required else f"`{md(_shown_default(leaf))}`"
        + (f" (fallback `{md(leaf.fallback)}`)" if leaf.has_fallback else ""),
        md_policy=leaf.policy.value + (f" (≤ `{md(leaf.capacity)}`)" if leaf.capacity else ""),
        md_owner=leaf.owner + "".join(f", {md(w)}" for w in leaf.writers),
        md_help=md(leaf.help) + (f" **Deprecated** {md(_deprecation(leaf))}" if leaf.deprecated else "")
        + (f" Env: `{md(leaf.env)}`." if leaf.env else "")
        + (" **Secret:** redacted wherever shown, never hashed." if leaf.secret else "")
        + (f" Old names: {', '.join(f'`{md(r.name)}`' for r in leaf.renamed_from)}." if leaf.renamed_from else ""),
        md_hash="yes" if leaf.hash else "no" + (f" ({leaf.kind})" if leaf.kind else ""),
    )


def _derived(d: Derived) -> DerivedSpellings:
    module, _, function = d.fn.partition(":")
    return DerivedSpellings(
        name=d.name,
        spec_args=(
            Kwarg("name", py(d.name)),
            Kwarg("namespace", py(d.namespace)),
            Kwarg("type", f"TypeSpec({d.type.base!r}, {d.type.optional!r})"),
            Kwarg("fn", f"{module}.{function}"),  # the registry imports each module whole
            Kwarg("inputs", py(d.inputs)),
            Kwarg("pinned", py(d.pinned)),
            Kwarg("hash", py(d.hash)),
        ),
        md_type=f"`{md(d.type)}`",
        md_help=md(d.help),
        md_inputs=", ".join(f"`{md(i)}`" for i in d.inputs),
        md_pinned="pinned at publish" if d.pinned else "recomputed on override",
    )


def _group(ns: Namespace, derived: dict[str, DerivedSpellings]) -> NamespaceSection:
    return NamespaceSection(
        path=ns.path,
        title=py(ns.path),
        doc_literal=py(ns.doc.replace("%", "%%")),
        md_path=md(ns.path),
        md_doc=md(ns.doc),
        accessor=accessor_expression(ns.path, ""),
        leaves=tuple(_leaf(leaf) for leaf in ns.leaves),
        derived=tuple(derived[d.name] for d in ns.derived),
        has_derived=bool(ns.derived),
    )


def _role(role: Role, top: tuple[str, ...]) -> RoleRow:
    return RoleRow(
        name=role.name,
        literal=py(role.name),
        reads=f"frozenset({py(tuple(role.reads))})",
        audits=tuple(
            tuple(Kwarg(k, py(getattr(a, k))) for k in ("date", "workload", "observed", "uncovered", "decision"))
            for a in role.audits
        ),
        md_name=md(role.name),
        md_doc=md(role.doc),
        md_cells=tuple("✓" if t in role.reads else "" for t in top),
        md_audits="<br>".join(
            md(f"{a.date}: {a.workload}; observed {{{', '.join(a.observed)}}}; decision: {a.decision}")
            for a in role.audits
        ),
    )


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


def _json_property(leaf: Leaf) -> dict[str, Any]:
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
    if leaf.deprecated is not None:
        prop["deprecated"] = True
    if not leaf.required:
        prop["default"] = leaf.default
    return prop
