"""The record class's kind, where its home makes it a NamedTuple or a pydantic model.

Such a class inherits methods the home does not spell (the tuple protocol, pydantic's
model API) that hand over the record's fields: the scanner reads them by these tables
(configbags.migrate.aliases), as it reads a dataclass's `replace` and `_asdict`. A
NamedTuple's fields are in the order the home declares them, so a subscript by a constant
index reads that field.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from configbags.migrate.holders import dotted_name

NAMEDTUPLE = "namedtuple"
PYDANTIC = "pydantic"

_NAMEDTUPLE_BASES = frozenset({"NamedTuple", "typing.NamedTuple", "typing_extensions.NamedTuple"})
_NAMEDTUPLE_FACTORIES = frozenset({"namedtuple", "collections.namedtuple", *_NAMEDTUPLE_BASES})
_PYDANTIC_BASES = frozenset({
    "BaseModel", "pydantic.BaseModel", "pydantic.main.BaseModel", "pydantic.v1.BaseModel", "pydantic.v1.main.BaseModel",
})

# methods handing over every field when called by name (`rec.model_dump()`, `rec.index(v)`)
WHOLE_METHODS: dict[str, frozenset[str]] = {
    NAMEDTUPLE: frozenset({"index", "count", "__iter__", "__getitem__", "__contains__", "__reversed__"}),
    PYDANTIC: frozenset({
        "model_dump", "model_dump_json", "dict", "json", "__iter__", "__repr_args__", "__rich_repr__",
    }),
}
# methods Python calls for syntax on the record (`rec[i]`, `for x in rec`, `x in rec`,
# `rec + t`, `rec * 2`): every field (a subscript by a constant index apart: positions)
DUNDERS: dict[str, frozenset[str]] = {
    NAMEDTUPLE: frozenset({
        "__iter__", "__getitem__", "__contains__", "__reversed__", "__add__", "__radd__", "__mul__", "__rmul__",
    }),
    PYDANTIC: frozenset({"__iter__"}),
}
# a copy with some fields changed (`rec._replace(port=1)`, `rec.model_copy(update=...)`):
# reads like the record, as dataclasses.replace does
REPLACES: dict[str, frozenset[str]] = {
    NAMEDTUPLE: frozenset({"_replace"}),
    PYDANTIC: frozenset({"model_copy", "copy"}),
}
# a record rebuilt from another's values (`type(rec).model_validate(rec.model_dump())`)
FROM_VALUES: dict[str, frozenset[str]] = {
    NAMEDTUPLE: frozenset({"_make"}),
    PYDANTIC: frozenset({"model_validate", "model_construct", "parse_obj", "construct", "validate"}),
}
TO_VALUES: dict[str, frozenset[str]] = {PYDANTIC: frozenset({"model_dump", "dict"})}


def _class_fields(node: ast.ClassDef) -> tuple[str, ...]:
    """The annotated fields of a class body, in order (`ClassVar` ones are no field)."""
    return tuple(
        item.target.id for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and "ClassVar" not in ast.unparse(item.annotation)
    )


def _factory_fields(call: ast.Call) -> tuple[str, ...]:
    """The fields of `namedtuple("R", ["a", "b"])`, `namedtuple("R", "a b")`,
    `NamedTuple("R", [("a", int)])`; () where they are not literal."""
    spec = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg in ("field_names", "fields")), None)
    if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
        return tuple(spec.value.replace(",", " ").split())
    if isinstance(spec, (ast.List, ast.Tuple)):
        names = []
        for element in spec.elts:
            if isinstance(element, (ast.Tuple, ast.List)) and element.elts:
                element = element.elts[0]
            if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                return ()
            names.append(element.value)
        return tuple(names)
    return ()


def record_kind(tree: ast.Module, record_class: str) -> tuple[str, tuple[str, ...]]:
    """(kind, fields in order) of the record class as its home defines it: a NamedTuple
    (a `class R(NamedTuple)` or a `namedtuple(...)` binding) or a pydantic model, through
    the home's own base classes too; ("", ()) for any other class."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and any(isinstance(t, ast.Name) and t.id == record_class for t in node.targets)
            and dotted_name(node.value.func) in _NAMEDTUPLE_FACTORIES
        ):
            return NAMEDTUPLE, _factory_fields(node.value)

    def kind_of(name: str, seen: frozenset[str]) -> tuple[str, tuple[str, ...]]:
        node = classes.get(name)
        if node is None or name in seen:
            return "", ()
        for base in node.bases:
            spelled = dotted_name(base)
            if spelled in _NAMEDTUPLE_BASES:
                return NAMEDTUPLE, _class_fields(node)
            if spelled in _PYDANTIC_BASES:
                return PYDANTIC, _class_fields(node)
            kind, fields = kind_of(spelled, seen | {name})
            if kind:
                return kind, (*fields, *(f for f in _class_fields(node) if f not in fields))
        return "", ()

    return kind_of(record_class, frozenset())


def positions(index: ast.expr, fields: Sequence[str]) -> list[str] | None:
    """The fields a subscript of a NamedTuple record by `index` reads: one for a constant
    index (`rec[3]`, `rec[-1]`), those of a slice of constant bounds (`rec[1:3]`); None
    where the index is not known (every field)."""

    def constant(expr: ast.expr | None) -> int | None:
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            inner = constant(expr.operand)
            return -inner if inner is not None else None
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return expr.value
        return None

    if not fields:
        return None
    if isinstance(index, ast.Slice):
        bounds = [constant(part) if part is not None else 0 for part in (index.lower, index.upper, index.step)]
        if any(bound is None for bound in bounds):
            return None
        chosen = slice(
            constant(index.lower) if index.lower is not None else None,
            constant(index.upper) if index.upper is not None else None,
            constant(index.step) if index.step is not None else None,
        )
        if chosen.step == 0:
            return []
        return list(fields[chosen])
    at = constant(index)
    if at is None or not -len(fields) <= at < len(fields):
        return None
    return [fields[at]]


# bases whose inherited protocol (item access, iteration, their own copies and dumps) the
# scanner does not model: a record deriving from one is said so, not passed
_UNMODELLED = frozenset({
    "dict", "list", "tuple", "set", "frozenset", "str", "bytes",
    "Mapping", "MutableMapping", "Sequence", "UserDict", "UserList", "OrderedDict", "defaultdict",
    "collections.UserDict", "collections.UserList", "collections.OrderedDict", "collections.defaultdict",
    "collections.abc.Mapping", "collections.abc.MutableMapping", "collections.abc.Sequence",
    "typing.Mapping", "typing.MutableMapping", "typing.Sequence",
    "TypedDict", "typing.TypedDict", "typing_extensions.TypedDict",
    "SimpleNamespace", "types.SimpleNamespace", "Namespace", "argparse.Namespace",
    "Struct", "msgspec.Struct", "DictConfig", "omegaconf.DictConfig", "Box", "box.Box", "EasyDict", "easydict.EasyDict",
})


def unmodelled_base(tree: ast.Module, record_class: str) -> str | None:
    """The base the record class derives from (through the home's own classes) whose
    inherited protocol the scanner does not model (`class ServerArgs(dict)`, `TypedDict`,
    `msgspec.Struct`), or None."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def walk(name: str, seen: frozenset[str]) -> str | None:
        node = classes.get(name)
        if node is None or name in seen:
            return None
        for base in node.bases:
            spelled = dotted_name(base.value if isinstance(base, ast.Subscript) else base)
            if spelled in _UNMODELLED and spelled not in classes:
                return spelled
            found = walk(spelled, seen | {name})
            if found is not None:
                return found
        return None

    return walk(record_class, frozenset())
