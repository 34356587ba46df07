"""The values an engine's source spells, computed by AST without importing the engine.

A default or a `choices=` is often not a literal: `10 * 1000 * 1000`, a module constant
(`DEFAULT_PORT`), its subscript (`SIZES[0]`, `LIMITS["tokens"]`), `[*BACKENDS.keys()]`, or
a field of a config dataclass in another module (`ModelConfig.max_model_len`,
`get_field(CacheConfig, "block_size")`). `Evaluator` computes each of them the way Python
would, following `import` statements to the engine's other modules by path
(`ModuleIndex`), and answers `MISSING` (never a guess) for anything else: a call it does
not know, a name bound at run time, an import that leaves the engine.
"""

from __future__ import annotations

import ast
import math
import operator
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no value: the expression is not a constant the importer can compute

# Well-known constants an engine uses as big-int sentinels: they stay ints, never null.
SENTINELS = {"sys.maxsize": sys.maxsize, "math.inf": math.inf, "float('inf')": math.inf,
             'float("inf")': math.inf}
_DEPTH = 24  # imports followed within one value: deeper is a cycle or not worth following

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert,
}
_FIELD_FACTORIES: dict[str, Any] = {"list": [], "dict": {}, "tuple": [], "set": []}


@attrs.frozen
class ClassRef:
    """A class found in an engine module (the value of a name that denotes it)."""

    module: Module
    node: ast.ClassDef

    @property
    def name(self) -> str:
        return self.node.name


@attrs.frozen
class ModuleRef:
    """An engine module bound to a name (`import vllm.config as config`)."""

    module: Module


@attrs.define(eq=False)
class Module:
    """One parsed engine module: its dotted name (None outside any package), its names."""

    path: Path
    tree: ast.Module
    name: str | None
    index: ModuleIndex
    _constants: dict[str, Any] | None = None

    def classes(self) -> dict[str, ast.ClassDef]:
        return {s.name: s for s in self.tree.body if isinstance(s, ast.ClassDef)}

    def imported(self, local: str) -> tuple[str, str | None] | None:
        """(absolute module, attribute or None for the module itself) that `local` names."""
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                base = self._absolute(stmt.module, stmt.level)
                for alias in stmt.names:
                    if (alias.asname or alias.name) == local and base is not None:
                        return base, alias.name
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname == local:
                        return alias.name, None
                    if alias.asname is None and alias.name.split(".")[0] == local:
                        return local, None
        return None

    def _absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        if self.name is None:
            return None
        package = self.name.split(".")
        if self.path.name != "__init__.py":
            package = package[:-1]
        if level > 1:
            package = package[: len(package) - (level - 1)]
        return ".".join([*package, *([module] if module else [])]) or None

    def constants(self) -> dict[str, Any]:
        """Module-level names bound once to a computable value, in source order."""
        if self._constants is None:
            self._constants = {}
            evaluator = Evaluator(self)
            for stmt in self.tree.body:
                target: ast.expr | None = None
                value: ast.expr | None = None
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target, value = stmt.targets[0], stmt.value
                elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                    target, value = stmt.target, stmt.value
                if isinstance(target, ast.Name) and value is not None:
                    computed = evaluator.value(value)
                    if computed is not MISSING:
                        self._constants[target.id] = computed
        return self._constants


@attrs.define
class ModuleIndex:
    """The engine's modules by dotted name, found by path under `roots` (the folders that
    hold its top-level packages), each parsed once. Nothing is imported."""

    roots: tuple[Path, ...]
    _parsed: dict[Path, Module | None] = attrs.field(factory=dict)

    @classmethod
    def around(cls, source: Path, *extra: Path) -> ModuleIndex:
        """An index for the engine `source` belongs to: the folder above its outermost
        package (and that folder's `src/`), plus `extra` roots."""
        folder = source.resolve().parent
        while (folder / "__init__.py").is_file() and folder != folder.parent:
            folder = folder.parent
        roots = [folder, *(p.resolve() for p in extra)]
        return cls(tuple(dict.fromkeys(r for r in roots if r.is_dir())))

    def module_name(self, path: Path) -> str | None:
        path = path.resolve()
        for root in self.roots:
            if path.is_relative_to(root):
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts and parts[-1] == "__init__":
                    parts.pop()
                return ".".join(parts) or None
        return None

    def load(self, path: Path) -> Module | None:
        path = path.resolve()
        if path not in self._parsed:
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                self._parsed[path] = None
            else:
                self._parsed[path] = Module(path, tree, self.module_name(path), self)
        return self._parsed[path]

    def find(self, dotted: str) -> Module | None:
        parts = dotted.split(".")
        for root in self.roots:
            for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
                if candidate.is_file():
                    return self.load(candidate)
        return None


def parse_module(source: str, path: Path | None = None, index: ModuleIndex | None = None) -> Module:
    """A Module for source text (at `path` when it has one, so its imports resolve)."""
    tree = ast.parse(source)
    if index is None:
        index = ModuleIndex.around(path) if path is not None else ModuleIndex(())
    name = index.module_name(path) if path is not None else None
    module = Module(path or Path("<source>"), tree, name, index)
    if path is not None:
        index._parsed[path.resolve()] = module
    return module


class Evaluator:
    """Computes expressions of one module (see the module docstring)."""

    def __init__(self, module: Module, depth: int = 0) -> None:
        self.module = module
        self.depth = depth

    def value(self, node: ast.expr | None) -> Any:
        if node is None or self.depth > _DEPTH:
            return MISSING
        text = ast.unparse(node)
        if text in SENTINELS:
            return SENTINELS[text]
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        handler = _HANDLERS.get(type(node))
        if handler is None:
            return MISSING
        try:
            result = handler(self, node)
        except (ArithmeticError, TypeError, ValueError, KeyError, IndexError, RecursionError):
            return MISSING
        return result

    # -- names, attributes, imports ---------------------------------------------------

    def name(self, node: ast.Name) -> Any:
        return self.resolve_name(node.id)

    def resolve_name(self, local: str) -> Any:
        module = self.module
        constants = module.constants()  # while they are being computed: those bound so far
        if local in constants:
            return constants[local]
        classes = module.classes()
        if local in classes:
            return ClassRef(module, classes[local])
        imported = module.imported(local)
        if imported is not None:
            return self._follow(*imported)
        return MISSING

    def _follow(self, dotted: str, attribute: str | None) -> Any:
        if attribute is None:
            target = self.module.index.find(dotted)
            return ModuleRef(target) if target is not None else MISSING
        submodule = self.module.index.find(f"{dotted}.{attribute}")
        if submodule is not None:
            return ModuleRef(submodule)
        target = self.module.index.find(dotted)
        if target is None or target is self.module:
            return MISSING
        return Evaluator(target, self.depth + 1).resolve_name(attribute)

    def attribute(self, node: ast.Attribute) -> Any:
        owner = self.value(node.value)
        if isinstance(owner, ClassRef):
            return class_default(owner, node.attr, self.depth + 1)
        if isinstance(owner, ModuleRef):
            found = Evaluator(owner.module, self.depth + 1).resolve_name(node.attr)
            if found is MISSING and owner.module.name is not None:  # `import a.b` then `a.b.X`
                submodule = owner.module.index.find(f"{owner.module.name}.{node.attr}")
                return ModuleRef(submodule) if submodule is not None else MISSING
            return found
        return MISSING

    # -- computed values -------------------------------------------------------------

    def binop(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        if left is MISSING or right is MISSING or type(node.op) not in _BINARY:
            return MISSING
        if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            return [*left, *right]
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 4096:
            return MISSING  # a constant is never that big; refuse rather than hang
        return _BINARY[type(node.op)](left, right)

    def unaryop(self, node: ast.UnaryOp) -> Any:
        operand = self.value(node.operand)
        return MISSING if operand is MISSING else _UNARY[type(node.op)](operand)

    def subscript(self, node: ast.Subscript) -> Any:
        container, key = self.value(node.value), self.value(node.slice)
        if container is MISSING or key is MISSING or not isinstance(container, (list, tuple, dict, str)):
            return MISSING
        return container[key]

    def sequence(self, node: ast.List | ast.Tuple | ast.Set) -> Any:
        items: list[Any] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):  # [*A, *B]
                inner = self.value(element.value)
                if not isinstance(inner, (list, tuple, dict, set)):
                    return MISSING
                items.extend(inner)
                continue
            item = self.value(element)
            if item is MISSING:
                return MISSING
            items.append(item)
        return items

    def dict_(self, node: ast.Dict) -> Any:
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            computed = self.value(value)
            if computed is MISSING:
                return MISSING
            if key is None:  # {**OTHER}
                if not isinstance(computed, dict):
                    return MISSING
                out.update(computed)
                continue
            name = self.value(key)
            if name is MISSING:
                return MISSING
            out[name] = computed
        return out

    def call(self, node: ast.Call) -> Any:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if isinstance(func, ast.Attribute) and name in ("keys", "values") and not node.args:
            inner = self.value(func.value)  # list(BACKENDS.keys())
            return list(getattr(inner, name)()) if isinstance(inner, dict) else MISSING
        if name == "get_field" and len(node.args) == 2:  # vLLM: get_field(CacheConfig, "block_size")
            owner, attribute = self.value(node.args[0]), self.value(node.args[1])
            if isinstance(owner, ClassRef) and isinstance(attribute, str):
                return class_default(owner, attribute, self.depth + 1)
            return MISSING
        if isinstance(func, ast.Name) and name in ("list", "tuple", "sorted", "set") and len(node.args) == 1:
            inner = self.value(node.args[0])
            if isinstance(inner, (list, tuple, set, dict)):
                values = list(inner)
                return sorted(values) if name in ("sorted", "set") else values
            return MISSING
        if isinstance(func, ast.Name) and name in ("int", "float", "str", "bool") and len(node.args) == 1:
            inner = self.value(node.args[0])
            if isinstance(inner, (int, float, str, bool)):
                return {"int": int, "float": float, "str": str, "bool": bool}[name](inner)
        return MISSING


_HANDLERS: Mapping[type[ast.expr], Callable[[Evaluator, Any], Any]] = {
    ast.Name: Evaluator.name, ast.Attribute: Evaluator.attribute, ast.BinOp: Evaluator.binop,
    ast.UnaryOp: Evaluator.unaryop, ast.Subscript: Evaluator.subscript, ast.List: Evaluator.sequence,
    ast.Tuple: Evaluator.sequence, ast.Set: Evaluator.sequence, ast.Dict: Evaluator.dict_,
    ast.Call: Evaluator.call,
}


def class_fields(cls: ast.ClassDef) -> Iterator[tuple[int, ast.AnnAssign, str | None]]:
    """(index in the body, the field's statement, its attribute docstring) for each
    annotated field of a class body."""
    body = cls.body
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            following = body[index + 1] if index + 1 < len(body) else None
            doc = None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                doc = " ".join(following.value.value.split())
            yield index, stmt, doc


def field_default(value: ast.expr | None, evaluator: Evaluator) -> tuple[Any, str | None]:
    """(default, why it could not be computed) of a field whose right-hand side is `value`:
    MISSING and None when it has no default, MISSING and the source text when it is not
    computable. `field(default=...)` and `field(default_factory=...)` are seen through."""
    if value is None:
        return MISSING, None
    if isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field", "attrs.field",
                                                                    "attr.ib", "attrs.Factory"):
        keywords = {k.arg: k.value for k in value.keywords if k.arg}
        if "default" in keywords:
            value = keywords["default"]
        elif "default_factory" in keywords or "factory" in keywords:
            factory = keywords.get("default_factory") or keywords["factory"]
            made = _FIELD_FACTORIES.get(ast.unparse(factory), MISSING)
            if made is not MISSING:
                return type(made)(), None
            if isinstance(factory, ast.Lambda):
                made = evaluator.value(factory.body)
            elif isinstance(evaluator.value(factory), ClassRef):
                made = {}  # a config dataclass built with its own defaults: a json leaf's `{}`
            return made, None if made is not MISSING else f"default_factory={ast.unparse(factory)}"
        else:
            return MISSING, None
    computed = evaluator.value(value)
    return computed, None if computed is not MISSING else ast.unparse(value)


def class_default(ref: ClassRef, attribute: str, depth: int) -> Any:
    """The default of field `attribute` of a (config data)class, or of a class constant."""
    evaluator = Evaluator(ref.module, depth)
    for _, stmt, _ in class_fields(ref.node):
        if isinstance(stmt.target, ast.Name) and stmt.target.id == attribute:
            return field_default(stmt.value, evaluator)[0]
    for constant in ref.node.body:
        if (
            isinstance(constant, ast.Assign) and len(constant.targets) == 1
            and isinstance(constant.targets[0], ast.Name) and constant.targets[0].id == attribute
        ):
            return evaluator.value(constant.value)
    return MISSING


def field_of(ref: ClassRef, attribute: str) -> tuple[ast.AnnAssign, str | None] | None:
    """The statement and attribute docstring of one field of a class."""
    for _, stmt, doc in class_fields(ref.node):
        if isinstance(stmt.target, ast.Name) and stmt.target.id == attribute:
            return stmt, doc
    return None
