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

from configbags.codegen.model import AllowEntry, Derived, Leaf, Namespace, Role, Schema, class_name
from configbags.runtime.leaftypes import TypeSpec, jsonable
from configbags.runtime.registry import accessor_expression

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
    """A Python literal (lists become tuples: bags and records are immutable)."""
    if isinstance(value, list):
        value = tuple(value)
    return repr(value)


def hint(t: TypeSpec) -> str:
    h = HINTS[t.base]
    return f"{h} | None" if t.optional and h != "Any" else h


@attrs.frozen
class Kwarg:
    key: str
    value: str  # a Python expression


@attrs.frozen
class RField:
    name: str
    hint: str
    doc: str  # docstring literal


@attrs.frozen
class RChild:
    attr: str
    class_name: str
    path: str


@attrs.frozen
class RBag:
    path: str
    class_name: str
    doc: str
    fields: tuple[RField, ...]
    children: tuple[RChild, ...]
    ranks: tuple[RField, ...]
    field_names: str  # a tuple literal, for the registry
    rank_names: str  # a tuple literal


@attrs.frozen
class RAccessor:
    namespace: str
    function: str
    class_name: str
    doc: str


@attrs.frozen
class RLeaf:
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
    # CONFIG.md cells
    md_flags: str
    md_type: str
    md_default: str
    md_policy: str
    md_owner: str
    md_help: str
    md_hash: str


@attrs.frozen
class RDerived:
    name: str
    spec_args: tuple[Kwarg, ...]
    md_type: str
    md_help: str
    md_inputs: str
    md_pinned: str


@attrs.frozen
class RGroup:
    """One namespace's CLI group and CONFIG.md section."""

    path: str
    title: str  # literal
    doc_literal: str
    md_path: str
    md_doc: str
    accessor: str
    leaves: tuple[RLeaf, ...]
    derived: tuple[RDerived, ...]
    has_derived: bool


@attrs.frozen
class RRole:
    name: str
    literal: str
    reads: str  # frozenset literal
    audits: tuple[tuple[Kwarg, ...], ...]
    md_name: str
    md_doc: str
    md_cells: tuple[str, ...]  # one per top-level namespace
    md_audits: str


@attrs.frozen
class RAllow:
    args: tuple[Kwarg, ...]


def export_order(name: str) -> tuple[int, str]:
    """isort-style order for __all__: CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@attrs.frozen
class RenderModel:
    header_sources: tuple[str, ...]
    regen: str
    bags: tuple[RBag, ...]  # children first
    top_bags: tuple[RChild, ...]
    accessors: tuple[RAccessor, ...]
    groups: tuple[RGroup, ...]
    derived_imports: str  # `import x` lines for derived functions, in isort sections
    accessor_exports: tuple[str, ...]
    view_slots: tuple[str, ...]
    bags_use_any: bool  # json leaves are typed Any
    bag_exports: tuple[str, ...]
    derived_order: tuple[RDerived, ...]
    roles: tuple[RRole, ...]
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
    allowlist: tuple[RAllow, ...]
    record_dicts: str
    resolution: str
    writes: tuple[RAllow, ...]
    override_policies: tuple[Kwarg, ...]  # leaf -> its override policy
    accessor_exprs: tuple[Kwarg, ...]
    leaf_count: int


def build(schema: Schema, regen: str) -> RenderModel:
    derived_all = {d.name: _derived(d) for d in schema.derived}
    groups = tuple(_group(ns, derived_all) for ns in schema.namespaces)
    top = schema.top_level
    return RenderModel(
        header_sources=schema.sources,
        regen=regen,
        bags=tuple(_bag(schema, ns) for ns in sorted(schema.namespaces, key=lambda n: (-n.path.count("."), n.path))),
        top_bags=tuple(RChild(p, class_name(p), p) for p in top),
        accessors=tuple(
            RAccessor(p, f"get_{p}", class_name(p), docstring(_accessor_doc(ns)))
            for ns in schema.namespaces if (p := ns.path) in top
        ),
        groups=groups,
        derived_imports=_derived_imports({d.fn.partition(":")[0] for d in schema.derived}),
        accessor_exports=tuple(sorted(
            [*(f"get_{t}" for t in top), "ConfigView", "ProcessConfigView", "get_context",
             "get_server_args", "publish", "runner_view"], key=export_order)),
        view_slots=tuple(sorted([*top, "server_args"])),
        bags_use_any=any(x.type.base == "json" for x in schema.values),
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
            Kwarg(py(leaf.name), py(leaf.policy)) for leaf in sorted(schema.leaves, key=lambda x: x.name)
        ),
        accessor_exprs=tuple(
            Kwarg(py(x.name), py(accessor_expression(x.namespace, x.name)))
            for x in sorted(schema.values, key=lambda x: x.name)
        ),
        leaf_count=len(schema.leaves),
    )


def _allow(entry: AllowEntry) -> RAllow:
    return RAllow(tuple(Kwarg(k, py(getattr(entry, k))) for k in ("file", "function", "leaf", "reason")))


def _derived_imports(modules: set[str]) -> str:
    stdlib = sorted(m for m in modules if m.split(".")[0] in sys.stdlib_module_names)
    other = sorted(modules.difference(stdlib))
    blocks = ["\n".join(f"import {m}" for m in block) for block in (stdlib, other) if block]
    return "\n\n".join(blocks)


def _accessor_doc(ns: Namespace) -> str:
    return f"The current `{ns.path}` bag of this process. {ns.doc}"


def _resolved_hint(x: Leaf | Derived) -> str:
    """A bag holds resolved values: a leaf with a fallback is never None there, even though
    the operator may leave it unset in the record."""
    if isinstance(x, Leaf) and x.has_fallback:
        return hint(TypeSpec(x.type.base, optional=False))
    return hint(x.type)


def _bag(schema: Schema, ns: Namespace) -> RBag:
    fields = tuple(RField(x.name, _resolved_hint(x), docstring(x.help)) for x in ns.values)
    return RBag(
        path=ns.path,
        class_name=class_name(ns.path),
        doc=docstring(ns.doc),
        fields=fields,
        children=tuple(RChild(c.attr, class_name(c.path), c.path) for c in schema.children(ns.path)),
        ranks=tuple(RField(r.name, "int", docstring(r.help)) for r in ns.ranks),
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
    kw = [Kwarg("dest", py(leaf.name))]
    if t.base == "bool":
        kw.append(Kwarg("action", "argparse.BooleanOptionalAction"))
    elif t.base in ("int", "float", "str"):
        kw.append(Kwarg("type", t.base))
    elif t.base in ("list[int]", "list[str]"):
        kw += [Kwarg("type", "int" if t.base == "list[int]" else "str"), Kwarg("nargs", py("+"))]
    else:
        kw.append(Kwarg("type", "json_value"))
    if leaf.choices is not None and t.base != "bool":
        kw.append(Kwarg("choices", py(list(leaf.choices))))
    kw.append(Kwarg("default", "argparse.SUPPRESS"))  # unset flags must not mask --config
    if leaf.cli is not None and leaf.cli.suppress_help:
        kw.append(Kwarg("help", "argparse.SUPPRESS"))
    else:
        kw.append(Kwarg("help", py(_cli_help(leaf))))
    if t.base not in ("bool",):
        kw.append(Kwarg("metavar", py(leaf.name.upper())))
    return tuple(kw)


def _cli_help(leaf: Leaf) -> str:
    default = "required" if leaf.required else f"default: {_shown_default(leaf)}"
    if leaf.choices is not None and leaf.type.base != "bool":
        default += "; one of: " + ", ".join(map(str, leaf.choices))
    extra = f"; unset falls back to {leaf.fallback!r}" if leaf.has_fallback else ""
    policy = {"startup": "", "load_time": "; may be resolved at load time", "runtime": "; tunable at runtime"}
    deprecated = f" DEPRECATED: {leaf.deprecated}" if leaf.deprecated else ""
    text = f"{leaf.help}{deprecated} ({default}{extra}{policy[leaf.policy]})"
    return text.replace("%", "%%")  # argparse formats help with %


def _shown_default(leaf: Leaf) -> str:
    if leaf.default is None:
        return "None"
    if isinstance(leaf.default, (list, dict)):
        return json.dumps(leaf.default)
    return repr(leaf.default) if isinstance(leaf.default, str) else str(leaf.default)


def _leaf(leaf: Leaf) -> RLeaf:
    t = leaf.type
    spec = (
        Kwarg("name", py(leaf.name)),
        Kwarg("namespace", py(leaf.namespace)),
        Kwarg("type", f"TypeSpec({t.base!r}, {t.optional!r})"),
        Kwarg("default", "None" if leaf.required else py(jsonable(t.coerce(leaf.default)))),
        Kwarg("required", py(leaf.required)),
        Kwarg("has_fallback", py(leaf.has_fallback)),
        Kwarg("fallback", py(leaf.fallback)),
        Kwarg("choices", py(leaf.choices)),
        Kwarg("minimum", py(leaf.minimum)),
        Kwarg("maximum", py(leaf.maximum)),
        Kwarg("owner", py(leaf.owner)),
        Kwarg("policy", py(leaf.policy)),
        Kwarg("hash", py(leaf.hash)),
        Kwarg("capacity", py(leaf.capacity)),
        Kwarg("flags", py(leaf.cli.flags if leaf.cli else ())),
    )
    flags = leaf.cli.flags if leaf.cli else ()
    return RLeaf(
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
        md_flags="<br>".join(f"`{md(f)}`" for f in flags) or "(no flag)",
        md_type=f"`{md(t)}`",
        md_default="**required**" if leaf.required else f"`{md(_shown_default(leaf))}`"
        + (f" (fallback `{md(leaf.fallback)}`)" if leaf.has_fallback else ""),
        md_policy=leaf.policy + (f" (≤ `{md(leaf.capacity)}`)" if leaf.capacity else ""),
        md_owner=leaf.owner,
        md_help=md(leaf.help) + (f" **Deprecated:** {md(leaf.deprecated)}" if leaf.deprecated else ""),
        md_hash="yes" if leaf.hash else "no",
    )


def _derived(d: Derived) -> RDerived:
    module, _, function = d.fn.partition(":")
    return RDerived(
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


def _group(ns: Namespace, derived: dict[str, RDerived]) -> RGroup:
    return RGroup(
        path=ns.path,
        title=py(ns.path),
        doc_literal=py(ns.doc.replace("%", "%%")),
        md_path=md(ns.path),
        md_doc=md(ns.doc),
        accessor=accessor_expression(ns.path, "").rstrip("."),
        leaves=tuple(_leaf(leaf) for leaf in ns.leaves),
        derived=tuple(derived[d.name] for d in ns.derived),
        has_derived=bool(ns.derived),
    )


def _role(role: Role, top: tuple[str, ...]) -> RRole:
    return RRole(
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
        "$comment": f"Code generated by codegen from {schema.name}/. DO NOT EDIT. Regenerate: {regen}",
        "title": "ServerArgs config file",
        "type": "object",
        "additionalProperties": False,
        "properties": {leaf.name: _json_property(leaf) for leaf in schema.leaves},
    }


def _json_property(leaf: Leaf) -> dict[str, Any]:
    """One leaf's property, built fresh each time (no shared sub-dicts between leaves)."""
    base, optional = leaf.type.base, leaf.type.optional
    prop: dict[str, Any]
    if base in ("list[int]", "list[str]"):
        item: dict[str, Any] = {"type": "integer" if base == "list[int]" else "string"}
        prop = {"type": ["array", "null"] if optional else "array", "items": item}
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
    if not leaf.required:
        prop["default"] = leaf.default
    return prop
