"""What the code's types say is the raw record, for the alias analysis
(configbags.migrate.aliases), per module:

- annotations that denote the record (`ServerArgs`, `S.ServerArgs`, `"S.ServerArgs"`,
  `Optional[...]`, `Union[int, "S.ServerArgs"]`, `ServerArgs | None`, `Annotated`, `Final`,
  `ClassVar`, `type[...]`) and containers of it (`list[ServerArgs]`, `tuple[...]`,
  `dict[str, ServerArgs]`, `Sequence`, `Iterable`, any other generic holding it), strings
  parsed at any depth;
- the module's own names for the class or such an annotation: a type alias
  (`Rec = S.ServerArgs`, `Rec: TypeAlias = "ServerArgs"`, `type Rec = ...`, `Recs =
  list[ServerArgs]`), a `TypeVar` bound to it, a `NewType` of it, and a subclass (`class
  Sub(S.ServerArgs)`, and subclasses of that), whose instances are the record;
- `typing.cast(ServerArgs, x)` and `cast("S.ServerArgs", x)` under any alias of typing or
  cast (`import typing as t`, `from typing import cast as c`, `c = typing.cast`);
- `isinstance(x, ServerArgs)` (or a tuple holding it): wherever it is tested, `x` may be
  the record (flow-insensitive like every binding here, so `assert isinstance(...)` and an
  early `if not isinstance(...): return` narrow too).

The pre-pass walks statements only (never expressions outside the few it looks at), so
it costs little beside the parse."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from configbags.migrate.scanmodel import Reach

RECORD = "record"  # the annotation is the record (or may be: Optional, Union)
ELEMENTS = "elements"  # a container whose elements (items, values, iteration) are the record

# Wrappers whose arguments are the annotation itself (Union: any of them; Annotated: the first).
_SAME = frozenset({
    "Optional", "Union", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly", "type", "Type", "InitVar",
})
# Generics that never hold a value of their arguments' types.
_NO_VALUES = frozenset({"Literal", "Callable", "TypeGuard", "TypeIs"})
_TYPING_MODULES = frozenset({"typing", "typing_extensions"})
# Methods and callables that give an element of a container, or the container again.
_ELEMENT_METHODS = frozenset({"get", "pop", "popleft", "popitem", "setdefault", "__getitem__"})
_SAME_CONTAINER_METHODS = frozenset({"values", "copy"})
_SAME_CONTAINER_CALLS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"})
_MAX_DEPTH = 16  # how deep a string annotation's own strings are parsed


class Held(ast.expr):
    """A synthetic value the code shows to be the record: a cast, an isinstance test. The
    alias analysis binds names to it; it reaches the record with origin "held"."""

    _fields = ()

    def __init__(self, via: str) -> None:
        super().__init__()
        self.via = via


class RecordTypes:
    """The module's names for the record's type (see the module docstring), found once per
    module before the alias analysis runs."""

    def __init__(self, tree: ast.Module, class_names: Iterable[str]) -> None:
        self.class_names: set[str] = set(class_names)  # the class, its aliases and subclasses
        self.element_aliases: set[str] = set()  # names of container annotations (`Recs = list[...]`)
        self.cast_names: set[str] = set()  # names bound to typing.cast
        self.typing_modules: set[str] = set()  # names bound to typing / typing_extensions
        # functions and methods annotated to return the record or a container of it, by name
        self.returns: dict[str, str] = {}
        # functions annotated `-> TypeGuard[ServerArgs]` (or TypeIs): their argument is the
        # record where they return true, like isinstance's
        self.guards: set[str] = set()
        statements = list(_statements(tree.body))
        self._imports(statements)
        # a fixpoint: `A = S.ServerArgs; B = Optional[A]; class C(B)`, in any order
        while self._aliases(statements):
            pass

    def names(self) -> frozenset[str]:
        """The names whose mentions the alias analysis must walk."""
        return frozenset(self.class_names | self.element_aliases | self.returns.keys() | self.guards)

    # ---- the pre-pass

    def _imports(self, statements: list[ast.stmt]) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name in _TYPING_MODULES:
                        self.typing_modules.add(alias.asname or alias.name)
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name == "cast" and stmt.module in _TYPING_MODULES and stmt.level == 0:
                        self.cast_names.add(alias.asname or "cast")
                    elif alias.name in self.class_names:
                        self.class_names.add(alias.asname or alias.name)  # `import ServerArgs as SA`

    def _aliases(self, statements: list[ast.stmt]) -> bool:
        """One round over the bindings; True when a name was added."""
        before = self._found()
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(stmt)
                continue
            if isinstance(stmt, ast.ClassDef):
                if any(self.annotation(base) == RECORD for base in stmt.bases):
                    self.class_names.add(stmt.name)  # a subclass: its instances are the record
                continue
            target: ast.expr | None = None
            value: ast.expr | None = None
            declared = False
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign):
                target, value = stmt.target, stmt.value
                declared = _last_name(stmt.annotation) == "TypeAlias"
            elif type(stmt).__name__ == "TypeAlias":  # `type Rec = ServerArgs` (3.12)
                target, value, declared = getattr(stmt, "name", None), getattr(stmt, "value", None), True
            if not isinstance(target, ast.Name) or value is None:
                continue
            name = target.id
            if self._is_cast(value) or (isinstance(value, ast.Name) and value.id in self.cast_names):
                if not isinstance(value, ast.Call):
                    self.cast_names.add(name)  # `c = typing.cast`
                continue
            if isinstance(value, ast.Name) and value.id in self.typing_modules:
                self.typing_modules.add(name)  # `t = typing`
                continue
            kind = self._alias_kind(value, declared)
            if kind == RECORD:
                self.class_names.add(name)
            elif kind == ELEMENTS:
                self.element_aliases.add(name)
        return self._found() != before

    def _function(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self._guards_record(stmt.returns):
            self.guards.add(stmt.name)
            return
        kind = self.annotation(stmt.returns)
        if kind is not None and self.returns.get(stmt.name) != RECORD:
            self.returns[stmt.name] = kind  # `def load() -> ServerArgs`

    def _guards_record(self, returns: ast.expr | None) -> bool:
        """Is a return annotation `TypeGuard[ServerArgs]` (or `TypeIs[...]`)?"""
        return (
            isinstance(returns, ast.Subscript)
            and _last_name(returns.value) in ("TypeGuard", "TypeIs")
            and self.annotation(returns.slice) == RECORD
        )

    def _found(self) -> tuple[object, ...]:
        sets = (self.class_names, self.element_aliases, self.cast_names, self.typing_modules, self.guards)
        return (tuple(sorted(self.returns.items())), *(len(found) for found in sets))

    def _alias_kind(self, value: ast.expr, declared: bool) -> str | None:
        if isinstance(value, ast.Call):
            func = _last_name(value.func)
            if func == "TypeVar":
                bounds = [k.value for k in value.keywords if k.arg == "bound"] + value.args[1:]
                return RECORD if any(self.annotation(bound) == RECORD for bound in bounds) else None
            if func == "NewType" and len(value.args) == 2:
                return RECORD if self.annotation(value.args[1]) == RECORD else None
            return None
        if isinstance(value, ast.Tuple):
            # `RECORDS = (ServerArgs, Other)`, for isinstance: a tuple of classes holding it
            return RECORD if any(self.annotation(element) == RECORD for element in value.elts) else None
        if isinstance(value, ast.Constant) and not declared:
            return None  # a plain string is a string, unless declared a TypeAlias
        return self.annotation(value)

    # ---- annotations

    def annotation(self, node: ast.expr | None, depth: int = 0) -> str | None:
        """RECORD, ELEMENTS or None: what a value annotated `node` is."""
        if node is None or depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            text = node.value
            # most strings name no type of interest: only those that may are parsed
            if not isinstance(text, str) or not any(
                name in text for names in (self.class_names, self.element_aliases) for name in names
            ):
                return None
            try:
                parsed = ast.parse(text.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            return self.annotation(parsed, depth + 1)
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _last_name(node)
            if name in self.class_names:
                return RECORD
            return ELEMENTS if name in self.element_aliases else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _join(self.annotation(node.left, depth + 1), self.annotation(node.right, depth + 1))
        if isinstance(node, ast.Subscript):
            generic = _last_name(node.value)
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if generic in _NO_VALUES:
                return None
            if generic == "Annotated":
                return self.annotation(args[0], depth + 1) if args else None
            kinds = [self.annotation(arg, depth + 1) for arg in args]
            if generic in _SAME:
                found: str | None = None
                for kind in kinds:
                    found = _join(found, kind)
                return found
            return ELEMENTS if any(kinds) else None
        if isinstance(node, (ast.Tuple, ast.List)):  # `Callable[[ServerArgs], int]`'s arguments
            return None
        return None

    # ---- expressions

    def _is_cast(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.cast_names
        return (
            isinstance(expr, ast.Attribute)
            and expr.attr == "cast"
            and isinstance(expr.value, ast.Name)
            and expr.value.id in self.typing_modules
        )

    def cast(self, call: ast.Call) -> str | None:
        """RECORD or ELEMENTS when `call` casts to the record or a container of it."""
        if not self._is_cast(call.func):
            return None
        typ = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "typ"), None)
        return self.annotation(typ)

    def narrowed(self, call: ast.Call) -> ast.expr | None:
        """The expression `isinstance(x, ServerArgs)` (or a tuple of classes holding it) tests."""
        func = call.func
        if _last_name(func) in self.guards and call.args and not isinstance(call.args[0], ast.Starred):
            return call.args[0]  # `is_args(x)`, annotated `-> TypeGuard[ServerArgs]`
        builtin = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "builtins"
        if _last_name(func) != "isinstance" or not (isinstance(func, ast.Name) or builtin) or len(call.args) != 2:
            return None
        classes = call.args[1]
        options = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        if any(self.annotation(option) == RECORD for option in options):
            return call.args[0]
        return None

    def narrowed_compare(self, node: ast.Compare) -> ast.expr | None:
        """The expression `type(x) is ServerArgs` (or `==`) tests."""
        left = node.left
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.Eq))
            and isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "type"
            and len(left.args) == 1
            and self.annotation(node.comparators[0]) == RECORD
        ):
            return left.args[0]
        return None

    def matches_record(self, pattern: ast.pattern) -> bool:
        """Does a case pattern match only the record at its top (`ServerArgs()`, under `|`
        or `as`)?"""
        if isinstance(pattern, ast.MatchClass):
            return self.annotation(pattern.cls) == RECORD
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            return self.matches_record(pattern.pattern)
        if isinstance(pattern, ast.MatchOr):
            return bool(pattern.patterns) and all(self.matches_record(p) for p in pattern.patterns)
        return False

    def returned(self, call: ast.Call) -> str | None:
        """RECORD or ELEMENTS when `call` calls a function (or a `self.` method) of the
        module annotated to return it."""
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return self.returns.get(name) if name is not None else None

    def element_source(self, expr: ast.expr) -> ast.expr | None:
        """For an expression that may give an element of a container (`xs[0]`, `xs.get(k)`,
        `next(xs)`), the container expression; else None."""
        if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, ast.Slice):
            return expr.value
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in _ELEMENT_METHODS:
                return func.value
            if isinstance(func, ast.Name) and func.id == "next" and expr.args:
                return expr.args[0]
        return None

    def same_container(self, expr: ast.expr) -> ast.expr | None:
        """For `xs.values()`, `list(xs)`, `sorted(xs)`, `xs[1:]`: the container `xs`."""
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Slice):
            return expr.value
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in _SAME_CONTAINER_METHODS and not expr.args:
                return func.value
            if isinstance(func, ast.Name) and func.id in _SAME_CONTAINER_CALLS and len(expr.args) == 1:
                return expr.args[0]
        return None


def loop_element(iterable: ast.expr) -> ast.expr:
    """What a loop target takes from `iterable` (not a literal), as an expression the alias
    analysis can judge: `xs[0]` for `for a in xs`, a pair for `xs.items()` and
    `enumerate(xs)` (so `for k, v in xs.items()` binds v to an element)."""
    func = iterable.func if isinstance(iterable, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "items" and isinstance(iterable, ast.Call) and not iterable.args:
        pair_of: ast.expr = func.value
    elif isinstance(func, ast.Name) and func.id == "enumerate" and isinstance(iterable, ast.Call) and iterable.args:
        pair_of = iterable.args[0]
    else:
        return _located(ast.Subscript(value=iterable, slice=ast.Constant(0), ctx=ast.Load()), iterable)
    element = _located(ast.Subscript(value=pair_of, slice=ast.Constant(0), ctx=ast.Load()), iterable)
    return _located(ast.Tuple(elts=[_located(ast.Constant(None), iterable), element], ctx=ast.Load()), iterable)


def _located(node: ast.expr, like: ast.expr) -> ast.expr:
    return ast.copy_location(node, like)


def _join(a: str | None, b: str | None) -> str | None:
    if RECORD in (a, b):
        return RECORD
    return a or b


def _last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, at any depth (function and class bodies too)."""
    pending = list(reversed(body))
    while pending:
        stmt = pending.pop()
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                pending.extend(reversed(block))
        for handler in getattr(stmt, "handlers", ()):
            pending.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", ()):
            pending.extend(reversed(case.body))


# ---- what the alias analysis asks (configbags.migrate.aliases._Analysis is one of these)

_S = TypeVar("_S")


class TypedAnalysis(Protocol[_S]):
    types: RecordTypes
    elements: set[tuple[int, str]]  # (id(scope), name) of names holding containers of the record
    element_attrs: set[str]  # `self.` attributes holding them

    def reach(self, expr: ast.expr, scope: _S) -> Reach | None: ...

    def visible(self, name: str, scope: _S) -> _S | None: ...

    def _is_self(self, expr: ast.expr, scope: _S) -> bool: ...


def typed_reach(analysis: TypedAnalysis[_S], expr: ast.expr, scope: _S) -> Reach | None:
    """(via, origin) where the types show `expr` is the record: a Held value, a cast to it,
    an element of a container of it; else None (the alias analysis judges the rest)."""
    if isinstance(expr, Held):
        return (expr.via, "held")
    if isinstance(expr, ast.Call):
        if analysis.types.returned(expr) == RECORD and _own_callee(analysis, expr, scope):
            return ("wrapper", "held")  # `def load() -> ServerArgs`
        kind = analysis.types.cast(expr)
        if kind == RECORD:
            value = expr.args[1] if len(expr.args) > 1 else None
            found = analysis.reach(value, scope) if value is not None else None
            return found or ("cast", "held")
    source = analysis.types.element_source(expr)
    if source is not None and holds_elements(analysis, source, scope):
        # one of several records, maybe a draft runner's: `fix` leaves it to you, as it
        # does a record carried by a container literal
        return ("element", "wrapped")
    return None


def holds_elements(analysis: TypedAnalysis[_S], expr: ast.expr, scope: _S) -> bool:
    """Is `expr` a container whose elements are the record, as far as the types show?"""
    for _ in range(_MAX_DEPTH):
        same = analysis.types.same_container(expr)
        if same is None:
            break
        expr = same
    if isinstance(expr, ast.Name):
        holder = analysis.visible(expr.id, scope)
        return holder is not None and (id(holder), expr.id) in analysis.elements
    if isinstance(expr, ast.Attribute):
        return expr.attr in analysis.element_attrs and analysis._is_self(expr.value, scope)
    if isinstance(expr, ast.Call):
        if analysis.types.returned(expr) == ELEMENTS and _own_callee(analysis, expr, scope):
            return True
        return analysis.types.cast(expr) == ELEMENTS
    return False


def _own_callee(analysis: TypedAnalysis[_S], call: ast.Call, scope: _S) -> bool:
    """Is the callee the module's own function (a name) or a method of `self`?"""
    func = call.func
    return isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and analysis._is_self(func.value, scope))
