"""The one Python scope model under the scanner's two analyses (the record's aliases in
configbags.migrate.aliases, environment reads and readbacks in configbags.migrate.doors):
scopes, what binds a name in them, where a binding lands and which binding a read sees,
by Python's rules. Each analysis hangs its own facts on the scopes (a subclass of
`Scope`) and says what a binding means (`ScopeBinder.bind_name`); the rules are here once:

- a function, lambda, class and comprehension each open a scope; a class body does not
  enclose its methods; decorators, defaults, bases and a signature's annotations
  (signature_annotations) are evaluated outside;
- `global` sends a binding to the module, `nonlocal` to the nearest enclosing function
  that binds the name, and a walrus in a comprehension to the enclosing scope (PEP 572);
- a read sees the nearest scope that binds the name (builtins and star imports aside);
- what binds: assignment targets (unpacked pairwise where both sides are literal),
  `for` over a literal (each element in turn), `with ... as`, `def`, `class`, parameters,
  imports, `except ... as`, match captures; `+=` and `del` bind to nothing provable.

Also the walker both analyses build on: `StatementWalker` hands every statement list to
one method, where an analysis picks the statements worth walking; and `Fetch`, a call that
reads attributes by name (`getattr(x, "a")`, `operator.attrgetter("a.b")(x)`), which the
door analysis resolves through these scopes (aliases of getattr and attrgetter, stored
getters) for both analyses to read as the attribute chain it is (`fetched_chain`)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Self


class Fetch(NamedTuple):
    """A call that reads (or writes) attributes of `target` by name, with getattr,
    hasattr, setattr or delattr, or an `operator.attrgetter`, under any alias."""

    target: ast.expr
    # each attribute path read (`attrgetter("a.b", "c")`: ("a", "b") and ("c",)); None
    # where the name is built at run time
    paths: tuple[tuple[str, ...] | None, ...]
    form: str  # getattr, getattr_default, hasattr, attrgetter, setattr, delattr

    def value_path(self) -> tuple[str, ...] | None:
        """The one attribute path whose value the call returns (`getattr(x, "a")` is
        `x.a`), or None (a tuple of several, a bool, a write, a name built at run time)."""
        if self.form in ("getattr", "getattr_default", "attrgetter") and len(self.paths) == 1:
            return self.paths[0]
        return None


def fetched_chain(target: ast.expr, path: Sequence[str], like: ast.expr) -> ast.expr:
    """`target.a.b` for the path ("a", "b"), placed where `like` is: what a fetch of that
    path evaluates to, for an analysis to judge like the attribute it spells."""
    expr = target
    for attr in path:
        expr = ast.Attribute(value=expr, attr=attr, ctx=ast.Load())
        ast.copy_location(expr, like)
    return expr


class Visitor(ast.NodeVisitor):
    """ast.NodeVisitor, dispatching by a table of each class's methods by node type:
    NodeVisitor's `visit` builds the method's name and looks it up anew for every node,
    and the scanner's walkers visit hundreds of thousands of nodes in a cold scan."""

    _methods: ClassVar[dict[type[ast.AST], Callable[[Any, Any], Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}  # each class its own: a subclass may define other visit_ methods

    def visit(self, node: ast.AST) -> Any:
        method = self._methods.get(node.__class__)
        if method is None:
            cls = type(self)
            method = cls._methods[node.__class__] = getattr(cls, "visit_" + node.__class__.__name__, cls.generic_visit)
        return method(self, node)


# Nodes that hold nothing and that no walker here visits for itself: a name's context
# (`Load`, `Store`), an operator. Every name, attribute and operation has one: skipping
# them spares about a seventh of a walk's visits.
INERT_NODES = frozenset(
    cls for base in (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop) for cls in base.__subclasses__()
)


class StatementWalker(Visitor):
    """A visitor that hands every list of statements to `visit_statements`, where a
    subclass picks the statements worth walking (the scanner's passes skip most of a file)."""

    def visit_statements(self, statements: Sequence[ast.AST]) -> None:
        for node in statements:
            self.visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # ast.NodeVisitor's own visit_Constant looks for deprecated visit_Num & co. on
        # every constant; a constant holds nothing to visit
        pass

    def generic_visit(self, node: ast.AST) -> None:
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self.visit_statements(value)
                else:
                    for item in value:
                        if isinstance(item, ast.AST) and item.__class__ not in INERT_NODES:
                            self.visit(item)
            elif isinstance(value, ast.AST) and value.__class__ not in INERT_NODES:
                self.visit(value)


class Scope:
    __slots__ = ("bound", "globals", "kind", "nonlocals", "parent", "qualname", "self_name")

    def __init__(self, kind: str, qualname: str, parent: Self | None) -> None:
        self.kind = kind  # module, class, function, lambda, comprehension
        self.qualname = qualname
        self.parent = parent
        self.bound: set[str] = set()  # names a binding here writes (before global/nonlocal)
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.self_name: str | None = None  # a method's first parameter (`self`, `cls`)

    def child_prefix(self) -> str:
        return "" if self.kind == "module" else self.qualname + "."


S = TypeVar("S", bound=Scope)


class Scopes(Generic[S]):
    """One module's scopes, as a binder opens them, and Python's rules over them."""

    def __init__(self, module: S) -> None:
        self.module = module
        self.scopes: list[S] = [module]
        self.scope_of: dict[int, S] = {}  # id(scope-opening node) -> scope

    def visible(self, name: str, scope: S) -> S | None:
        """The scope whose binding of `name` a read in `scope` sees: the nearest that
        binds it (class bodies do not enclose their methods; `global` means the module's,
        bound there or not), or None (a builtin, an unfollowed star import, unknown)."""
        current: S | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent  # class bodies do not enclose their methods
                continue
            first = False
            if name in current.globals:
                return self.module
            if name in current.bound and name not in current.nonlocals:
                return current
            current = current.parent
        return None

    def binding_scope(self, name: str, scope: S) -> S:
        """The scope a binding of `name` written in `scope` lands in. Asked once every
        binding is known, so a `nonlocal` finds an enclosing binding written after it."""
        if name in scope.globals:
            return self.module
        if name in scope.nonlocals:
            current = scope.parent
            while current is not None and current.kind != "module":
                if current.kind == "function" and name in current.bound:
                    return current
                current = current.parent
        return scope

    def unbound(self, name: str) -> bool:
        """Whether no scope of the module binds `name` (so a read of it is the builtin)."""
        return not any(name in scope.bound for scope in self.scopes)

    def method_class(self, expr: ast.expr, scope: S) -> str | None:
        """The qualname of the class whose method's `self` (or `cls`) `expr` is, or None."""
        if not isinstance(expr, ast.Name):
            return None
        current: Scope | None = scope
        while current is not None and current.kind != "module":
            if current.kind == "function" and current.self_name == expr.id:
                parent = current.parent
                return parent.qualname if parent is not None and parent.kind == "class" else None
            if expr.id in current.bound:
                return None
            current = current.parent
        return None


_GLOBALS_MEMO = "_configbags_globals_declared"


def globals_declared(node: ast.AST) -> frozenset[str]:
    """The names a `global` statement anywhere inside `node` declares. Kept on the node:
    the analyses ask it of the same functions (and the module) once per statement list
    they judge, and each answer would be a walk of the whole function."""
    found: frozenset[str] | None = node.__dict__.get(_GLOBALS_MEMO)
    if found is not None:
        return found
    names: set[str] = set()
    pending = list(ast.iter_child_nodes(node))
    while pending:
        item = pending.pop()
        if isinstance(item, ast.Global):
            names.update(item.names)
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names |= globals_declared(item)  # each function's own answer, kept: every node is walked once
        else:
            pending.extend(ast.iter_child_nodes(item))
    found = frozenset(names)
    setattr(node, _GLOBALS_MEMO, found)
    return found


def signature_annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The annotations of a function's parameters (`*args` and `**kw` too) and return,
    which the `def` evaluates where it runs (`def g(x: os.environ.get("X"))`)."""
    args = node.args
    params = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
    found = [param.annotation for param in params if param is not None and param.annotation is not None]
    return found + ([node.returns] if node.returns is not None else [])


def module_statements(statements: Sequence[ast.stmt]) -> list[ast.stmt]:
    """The statements a module's (or class's) body runs at its own level: those in its
    compound statements too (`try:` and its handlers, `else:` and `finally:`, both arms
    of an `if`, a `with` block, a loop's, a `match` case's), never a def's or class's own.
    What `try: def ctx(): ...` / `except ImportError: def ctx(): ...` binds is as much the
    module's as a plain def is."""
    found: list[ast.stmt] = []
    for stmt in statements:
        found.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for item in getattr(stmt, field, None) or ():
                if isinstance(item, ast.stmt):
                    found += module_statements([item])
                elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                    found += module_statements(item.body)
    return found


def unpacked(targets: Sequence[ast.expr], values: Sequence[ast.expr]) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs whose positions are certain in `targets = values`.

    Positions are known from the left up to the first starred element on either side, and
    likewise from the right; a starred target takes a list, never what a value is, so it
    is bound (shadowing) but never an alias. With no starred element, the lengths must
    match (otherwise the assignment raises)."""
    starred = any(isinstance(x, ast.Starred) for x in (*targets, *values))
    if not starred:
        return list(zip(targets, values, strict=True)) if len(targets) == len(values) else []
    pairs: list[tuple[ast.expr, ast.expr]] = []
    left = 0
    while (
        left < len(targets)
        and left < len(values)
        and not isinstance(targets[left], ast.Starred)
        and not isinstance(values[left], ast.Starred)
    ):
        pairs.append((targets[left], values[left]))
        left += 1
    right = 1
    while (
        right <= len(targets) - left
        and right <= len(values) - left
        and not isinstance(targets[-right], ast.Starred)
        and not isinstance(values[-right], ast.Starred)
    ):
        pairs.append((targets[-right], values[-right]))
        right += 1
    return pairs


def landed(targets: Sequence[ast.expr], values: Sequence[ast.expr]) -> tuple[
    list[tuple[ast.expr, ast.expr]], list[ast.expr]
]:
    """Where `targets = values` lands each value: the (target, value) pairs `unpacked`
    finds, and the values no target takes alone (they land in a starred target's list, or
    where positions are uncertain), a starred value as the iterable it unpacks."""
    pairs = unpacked(targets, values)
    paired = {id(value) for _, value in pairs}
    rest = [value.value if isinstance(value, ast.Starred) else value for value in values if id(value) not in paired]
    return pairs, rest


class ScopeBinder(StatementWalker, Generic[S]):
    """Pass 1 of an analysis: open the scopes of the walked statements and hand every
    binding to `bind_name`, with the value bound (None when nothing provable: a
    parameter, `+=`, `del`, `except ... as`, a loop over a non-literal, ...) and an origin
    `forced` on top of the value's (a subclass's `with`). Subclasses give `new_scope` and
    `bind_name`, and override the visits whose bindings mean more to them."""

    scopes: Scopes[S]
    scope: S

    def new_scope(self, kind: str, qualname: str, parent: S) -> S:
        raise NotImplementedError

    def bind_name(self, name: str, value: ast.expr | None, forced: str | None = None, scope: S | None = None) -> None:
        """`name` is bound, in `scope` (the current one by default), to `value`. A
        subclass records the binding and calls this, which marks the name bound."""
        where = scope or self.scope
        where.bound.add(name)
        if name in where.globals:
            self.scopes.module.bound.add(name)

    def bind_params(self, scope: S, args: ast.arguments) -> None:
        """The parameters are bound, to whatever a caller passes."""
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                self.bind_name(arg.arg, None, scope=scope)

    def bind_attribute(self, target: ast.Attribute, value: ast.expr | None) -> None:
        """An attribute is assigned (`self.x = value`): no name is bound."""

    def opened_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: S, in_class: bool) -> None:
        """A function's scope is open, its parameters not yet bound."""

    # ---- scopes

    def _open(self, node: ast.AST, kind: str, name: str | None) -> S:
        qualname = self.scope.child_prefix() + name if name else self.scope.qualname
        scope = self.new_scope(kind, qualname, self.scope)
        self.scopes.scopes.append(scope)
        self.scopes.scope_of[id(node)] = scope
        return scope

    def _visit_in(self, scope: S, nodes: Sequence[ast.AST]) -> None:
        outer, self.scope = self.scope, scope
        self.visit_statements(nodes)
        self.scope = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults, *signature_annotations(node)]:
            if expr is not None:
                self.visit(expr)
        self.bind_name(node.name, None)  # `def sa(): ...` rebinds sa
        in_class = self.scope.kind == "class"
        scope = self._open(node, "function", node.name)
        self.opened_function(node, scope, in_class)
        self.bind_params(scope, node.args)
        self._visit_in(scope, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expr in [*node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self.visit(expr)
        scope = self._open(node, "lambda", None)
        self.bind_params(scope, node.args)
        outer, self.scope = self.scope, scope
        self.visit(node.body)  # an expression: never a statement list to pick from
        self.scope = outer

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self.bind_name(node.name, None)
        self._visit_in(self._open(node, "class", node.name), node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        outer, self.scope = self.scope, self._open(node, "comprehension", None)
        self.generic_visit(node)
        self.scope = outer

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.nonlocals.update(node.names)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.scope.bound.add(node.id)

    # ---- bindings

    def bind(self, target: ast.expr, value: ast.expr | None, forced: str | None = None) -> None:
        """`target` is bound to `value` (None: unknown). Every name in the target gets a
        binding, so one that is not provable (an unpacked call, a starred target) is a
        binding to nothing rather than none at all."""
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value, forced)
        elif isinstance(target, (ast.Tuple, ast.List)):
            paired: set[int] = set()
            if isinstance(value, (ast.Tuple, ast.List)):
                for sub_target, sub_value in unpacked(target.elts, value.elts):
                    paired.add(id(sub_target))
                    self.bind(sub_target, sub_value, forced)
            for sub_target in target.elts:
                if id(sub_target) not in paired:
                    self.bind(sub_target, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None)  # a starred target takes a list
        elif isinstance(target, ast.Attribute):
            self.bind_attribute(target, value)

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        # `for sa in (get_server_args(),)`: over a literal, the target takes each element
        # in turn, so bind it to every one (flow-insensitively, like any other binding).
        # Over anything else (or a starred element) the target takes unknown values.
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            for element in iterable.elts:
                self.bind(target, None if isinstance(element, ast.Starred) else element)
        else:
            self.bind(target, None)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.bind_loop(node.target, node.iter)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.bind_loop(node.target, node.iter)
        self.generic_visit(node)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        # what `__enter__` returns is not provably anything
        for item in node.items:
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.bind(target, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:  # a bare `x: T` makes x local, binding nothing
            self.bind(node.target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        # `sa += x` binds sa to `sa.__iadd__(x)`: not provably what sa was
        self.bind(node.target, None)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        # after `del sa`, a read raises NameError
        for target in node.targets:
            self.bind(target, None)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # A walrus in a comprehension binds in the enclosing function (PEP 572).
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        self.bind_name(node.target.id, node.value, scope=scope)
        self.visit(node.value)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bind_name(node.name, None)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.bind_name(node.name, None)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.bind_name(node.name, None)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.bind_name(node.rest, None)
        self.generic_visit(node)


class ScopeReader(StatementWalker, Generic[S]):
    """Pass 2 of an analysis: walk the same statements in the scopes the binder opened."""

    scopes: Scopes[S]
    scope: S

    def _enter(self, node: ast.AST) -> None:
        outer = self.scope
        self.scope = self.scopes.scope_of.get(id(node), outer)
        self.generic_visit(node)
        self.scope = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._enter(node)  # decorators and defaults are attributed to the function

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = _enter
    visit_Lambda = _enter
    visit_ListComp = _enter
    visit_SetComp = _enter
    visit_GeneratorExp = _enter
    visit_DictComp = _enter
