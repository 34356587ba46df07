"""A field's Python annotation as a schema type, in named steps: parse a string annotation,
take `Annotated` off (configbags.migrate.annotated), resolve a type alias or an `Enum`
through the engine's modules, split `None` off a union (`X | None`, `Optional[X]`), then
read the base: a scalar, a `Literal` (with its choices), an `Enum` (its values as
choices), or a list of int or str. What has no schema type becomes `json`, and `lossy`
says so when the annotation meant something narrower (`int | str`, `list[float]`).
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

from configbags.migrate.annotated import unwrap
from configbags.migrate.astvalues import MISSING, ClassRef, Evaluator, Module

_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
_LISTS = {"List", "list", "Sequence", "Tuple", "tuple", "Set", "set", "FrozenSet", "frozenset"}
_JSON = {"dict", "Dict", "Mapping", "Any", "object", "MutableMapping", "json"}
_ENUM_BASES = {"Enum", "StrEnum", "IntEnum", "str", "int"}
_ALIAS_DEPTH = 8


@attrs.frozen
class SchemaType:
    type: str  # the schema's spelling: "optional list[int]"
    choices: list[Any] | None = None
    lossy: str | None = None  # why `json` is narrower in the source, when it is
    structure: dict[str, Any] | None = None  # a config dataclass's fields, for a json leaf


def name_of(node: ast.expr | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def schema_type(annotation: ast.expr | None, module: Module | None = None) -> SchemaType:
    """The schema type of a field annotation, read in the module that declares it."""
    node, _ = unwrap(annotation)
    if node is None:
        return SchemaType("json")
    optional, located, members = _split_optional(*_resolve_alias(node, module))
    base = _union(members, module) if located is None else _base(*located)
    optional = optional or base.type.startswith("optional ")
    text = base.type.removeprefix("optional ")
    return SchemaType(("optional " if optional else "") + text, base.choices, base.lossy, base.structure)


_Where = tuple[ast.expr, "Module | None"]  # an expression and the module to read it in


def _alias_value(stmt: ast.stmt, name: str) -> ast.expr | None:
    """What `stmt` binds `name` to, when it binds it to a type expression."""
    target: Any = None
    value: Any = None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign):
        target, value = stmt.target, stmt.value
    elif type(stmt).__name__ == "TypeAlias":  # `type X = ...` (3.12)
        target, value = getattr(stmt, "name", None), getattr(stmt, "value", None)
    if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.expr) and _looks_like_type(value):
        return value
    return None


def _resolve_alias(node: ast.expr, module: Module | None, depth: int = 0) -> _Where:
    """A bare name bound at module level to a type (`TokenizerMode = Literal[...]`,
    `Dtype: TypeAlias = ...`), here or in the module it is imported from, is replaced by
    what it is bound to."""
    if module is None or not isinstance(node, ast.Name) or depth > _ALIAS_DEPTH or node.id in _SCALARS:
        return node, module
    for stmt in module.tree.body:
        value = _alias_value(stmt, node.id)
        if value is not None:
            return _resolve_alias(unwrap(value)[0] or value, module, depth + 1)
    imported = module.imported(node.id)
    if imported is not None and imported[1] is not None:
        other = module.index.find(imported[0])
        if other is not None and other is not module:
            resolved, where = _resolve_alias(ast.Name(imported[1]), other, depth + 1)
            if not (isinstance(resolved, ast.Name) and resolved.id == imported[1]):
                return resolved, where
    return node, module


def _looks_like_type(node: ast.expr) -> bool:
    if not isinstance(node, (ast.Subscript, ast.BinOp, ast.Name, ast.Attribute)):
        return False
    text = ast.unparse(node)
    return any(word in text for word in ("Literal", "Optional", "Union", "|", "list", "List", "int", "str",
                                          "float", "bool", "dict", "Dict", "Annotated", "tuple", "Tuple"))


def _split_optional(node: ast.expr, module: Module | None) -> tuple[bool, _Where | None, list[ast.expr]]:
    """(has None, the one other member or None when there are several, the members then)."""
    optional = False
    while True:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Subscript) and name_of(node.value) in ("Optional", "Union"):
            inner = node.slice
            parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
            if name_of(node.value) == "Optional":
                parts.append(ast.Constant(None))
        else:
            return optional, (node, module), []
        parts = [unwrap(p)[0] or p for p in parts]
        rest = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        optional = optional or len(rest) < len(parts)
        if len(rest) != 1:
            return optional, None, rest
        node, module = _resolve_alias(rest[0], module)


def _union(members: list[ast.expr], module: Module | None) -> SchemaType:
    """A union of several types: strings of any kind (`str | Literal["auto"]`, a str Enum)
    are a str; ints and floats a float; anything else has no schema type but json."""
    bases = {_base(*_resolve_alias(m, module)).type for m in members}
    if bases == {"str"}:
        return SchemaType("str")
    if bases <= {"int", "float"}:
        return SchemaType("float")
    shown = " | ".join(ast.unparse(m) for m in members)
    return SchemaType("json", lossy=f"the union `{shown}` has no schema type")


def _base(node: ast.expr, module: Module | None) -> SchemaType:
    name = name_of(node)
    if name in _SCALARS and not isinstance(node, ast.Subscript):
        return SchemaType(_SCALARS[name])
    if isinstance(node, ast.Subscript) and name_of(node.value) == "Literal":
        return _literal(node)
    if isinstance(node, ast.Subscript) and name_of(node.value) in _LISTS:
        return _list(node, module)
    if name in _JSON or (isinstance(node, ast.Subscript) and name_of(node.value) in _JSON):
        return SchemaType("json")
    enum = _enum(node, module)
    if enum is not None:
        return enum
    structure = dataclass_structure(node, module)
    if structure is not None:
        return SchemaType("json", structure=structure)
    return SchemaType("json", lossy=f"the type `{ast.unparse(node)}` has no schema type")


def _literal(node: ast.Subscript) -> SchemaType:
    inner = node.slice
    elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    values = [e.value for e in elements if isinstance(e, ast.Constant)]
    prefix = ""
    if None in values:  # Literal["a", None] is Optional[Literal["a"]]
        values = [v for v in values if v is not None]
        prefix = "optional "
    kinds = {type(v) for v in values}
    base = "str" if kinds == {str} else "int" if kinds == {int} else "json"
    lossy = f"the Literal {values!r} mixes types" if base == "json" else None
    return SchemaType(prefix + base, values, lossy)


def _list(node: ast.Subscript, module: Module | None) -> SchemaType:
    inner = node.slice
    first = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
    first, module = _resolve_alias(unwrap(first)[0] or first, module)
    element = name_of(first)
    if element in ("int", "str") and not isinstance(first, ast.Subscript):
        return SchemaType(f"list[{element}]")
    if isinstance(first, ast.Subscript) and name_of(first.value) == "Literal":
        literal = _literal(first)
        if literal.type in ("str", "int"):
            return SchemaType(f"list[{literal.type}]", literal.choices)
    return SchemaType("json", lossy=f"a list of `{ast.unparse(first)}` has no schema type (lists hold int or str)")


def _enum(node: ast.expr, module: Module | None) -> SchemaType | None:
    """An Enum class of the engine: its values, as choices of a str or int leaf."""
    if module is None or not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    ref = Evaluator(module).value(node)
    if not isinstance(ref, ClassRef) or not {name_of(b) for b in ref.node.bases} & _ENUM_BASES:
        return None
    evaluator = Evaluator(ref.module)
    values: list[Any] = []
    for stmt in ref.node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = evaluator.value(stmt.value)
            if value is MISSING:
                return None
            values.append(value)
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return SchemaType("str", values)
    if kinds == {int}:
        return SchemaType("int", values)
    return None


def dataclass_structure(node: ast.expr, module: Module | None, depth: int = 0) -> dict[str, Any] | None:
    """A config dataclass of the engine (`compilation_config: CompilationConfig`) as a json
    leaf's structure: each field's schema type, a nested dataclass as a nested structure;
    None when it is no dataclass or a field has no schema type."""
    if module is None or depth > 4 or not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    ref = Evaluator(module).value(node)
    if not isinstance(ref, ClassRef) or not any("dataclass" in ast.unparse(d) for d in ref.node.decorator_list):
        return None
    structure: dict[str, Any] = {}
    for stmt in ref.node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if stmt.target.id.startswith("_") or "ClassVar" in ast.unparse(stmt.annotation):
            continue
        inner, _ = unwrap(stmt.annotation)
        nested = dataclass_structure(inner, ref.module, depth + 1) if inner is not None else None
        if nested is not None:
            structure[stmt.target.id] = nested
            continue
        found = schema_type(stmt.annotation, ref.module)
        if found.lossy:
            return None
        structure[stmt.target.id] = found.type
    return structure or None
