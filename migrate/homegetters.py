"""Second getters of the record's home module (excluded from the scan; its source is read
only for what it offers importers, configbags.migrate.flows.HomeFacts).

A function there gives the record to every importer when it returns what the raw accessor
returns, in any of the shapes an engine writes it: the global the raw accessor returns, or
one a function binds to the record under `global`; a slot of a module dict the setter
stores the record in (`_STATE["args"] = a`, then `return _STATE["args"]` or
`_STATE.get("args")`); a call of the raw accessor or of another such getter (decorated or
not: `@functools.lru_cache def get_args(): return get_server_args()`); a copy of any of
these (`copy.deepcopy(_GLOBAL_SERVER_ARGS)`, `dataclasses.replace(...)`), whose fields are
the published values. A function returning the record dict (`return
global_server_args_dict`, or a module-level name bound to it) gives the dict.

Deny by default: a value that is the record on one branch only (`a if c else None`, `a or
b`) counts, and a slot read by a key the code does not show counts where any slot of that
dict holds the record.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import attrs

from configbags.migrate.doors import dotted_name
from configbags.migrate.scanmodel import ScanSettings

# calls returning a copy of their first argument, whose fields are the argument's
_COPIES = frozenset({"copy.copy", "copy.deepcopy", "copy", "deepcopy", "dataclasses.replace", "replace", "attrs.evolve"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Slot = tuple[str, str | None]  # (module dict, literal key or None for a key not shown)


@attrs.frozen
class HomeGetters:
    """A home module's functions giving the record or the record dict, and its module-level
    names bound to the dict."""

    record: frozenset[str]
    dicts: frozenset[str]
    dict_names: frozenset[str]


def _key(expr: ast.expr) -> str | None:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def _walk(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement of `function`'s body at any depth (returns, assignments and `global`
    are statements: expressions need no walk), with whether it is the function's own (not
    inside a nested function or class)."""
    stack: list[tuple[ast.stmt, bool]] = [(node, True) for node in function.body]
    while stack:
        node, own = stack.pop()
        yield node, own
        inner = own and not isinstance(node, (*_FUNCTIONS, ast.ClassDef))
        for field in ("body", "orelse", "finalbody"):
            stack.extend((child, inner) for child in getattr(node, field, ()))
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            stack.extend((child, inner) for child in part.body)


@attrs.frozen
class _Body:
    """What a home function's body shows, walked once: its assignments (nested functions
    and classes left out), every value it returns (theirs too: deny by default), the
    names it declares global, and its parameters (those annotated as the record apart)."""

    assigns: tuple[ast.Assign, ...]
    returns: tuple[ast.expr | None, ...]
    declared: frozenset[str]
    parameters: frozenset[str]
    annotated: frozenset[str]

    @classmethod
    def of(cls, function: ast.FunctionDef | ast.AsyncFunctionDef, record_class: str) -> _Body:
        assigns: list[ast.Assign] = []
        returns: list[ast.expr | None] = []
        declared: set[str] = set()
        for node, own in _walk(function):
            if isinstance(node, ast.Return):
                returns.append(node.value)
            elif own and isinstance(node, ast.Assign):
                assigns.append(node)
            elif own and isinstance(node, ast.Global):
                declared.update(node.names)
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        return cls(
            tuple(assigns), tuple(returns), frozenset(declared),
            frozenset(arg.arg for arg in every),
            frozenset(arg.arg for arg in every if arg.annotation is not None and record_class in ast.unparse(arg.annotation)),
        )


class _Home:
    """The fixpoint over one home module's functions."""

    def __init__(self, tree: ast.Module, settings: ScanSettings) -> None:
        self.settings = settings
        self.functions = [node for node in tree.body if isinstance(node, _FUNCTIONS)]
        self.module_level = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))]
        # (a later definition of a name replaces an earlier one, as at import)
        self.bodies = {f.name: _Body.of(f, settings.record_class) for f in self.functions}
        raw = self.bodies.get(settings.raw_accessor)
        # the globals holding the record: those the raw accessor returns, to begin with
        self.globals: set[str] = {value.id for value in raw.returns if isinstance(value, ast.Name)} if raw else set()
        self.slots: set[Slot] = set()
        # annotated to return the record (`-> ServerArgs`), whatever the body shows
        self.getters: set[str] = {
            f.name for f in self.functions
            if f.name != settings.raw_accessor and f.returns is not None and settings.record_class in ast.unparse(f.returns)
        }
        self.dict_names: set[str] = set(settings.record_dicts)
        self.dict_getters: set[str] = set()

    def _slot(self, owner: ast.expr, key: ast.expr | None) -> bool:
        if not isinstance(owner, ast.Name):
            return False
        shown = _key(key) if key is not None else None
        if shown is None:
            return any(name == owner.id for name, _ in self.slots)
        return (owner.id, shown) in self.slots or (owner.id, None) in self.slots

    def gives_record(self, expr: ast.expr | None, local: set[str]) -> bool:
        if expr is None:
            return False
        if isinstance(expr, ast.Name):
            return expr.id in local or expr.id in self.globals
        if isinstance(expr, ast.Subscript):
            return self._slot(expr.value, expr.slice)
        if isinstance(expr, (ast.Await, ast.NamedExpr)):
            return self.gives_record(expr.value, local)
        if isinstance(expr, ast.IfExp):
            return self.gives_record(expr.body, local) or self.gives_record(expr.orelse, local)
        if isinstance(expr, ast.BoolOp):
            return any(self.gives_record(value, local) for value in expr.values)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "get":
            return self._slot(func.value, expr.args[0] if expr.args else None)
        if dotted_name(func) in _COPIES:
            return bool(expr.args) and self.gives_record(expr.args[0], local)
        return isinstance(func, ast.Name) and (func.id == self.settings.raw_accessor or func.id in self.getters)

    def gives_dict(self, expr: ast.expr | None, local: set[str]) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in local or expr.id in self.dict_names
        if isinstance(expr, (ast.Await, ast.NamedExpr)):
            return self.gives_dict(expr.value, local)
        if isinstance(expr, ast.IfExp):
            return self.gives_dict(expr.body, local) or self.gives_dict(expr.orelse, local)
        if isinstance(expr, ast.BoolOp):
            return any(self.gives_dict(value, local) for value in expr.values)
        return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in self.dict_getters

    def _record_parameters(self, body: _Body) -> set[str]:
        """Parameters annotated as the record, and those the function binds a record global
        to (`_GLOBAL_SERVER_ARGS = a` in the setter): what it stores is the record."""
        found = set(body.annotated)
        for node in body.assigns:
            if isinstance(node.value, ast.Name) and node.value.id in body.parameters and any(
                isinstance(target, ast.Name) and target.id in self.globals for target in node.targets
            ):
                found.add(node.value.id)
        return found

    def _locals(self, body: _Body) -> tuple[set[str], set[str]]:
        """(names bound to the record, names bound to the dict) in the function."""
        record: set[str] = set()
        dicts: set[str] = set()
        for _ in range(2):  # `a = get_server_args(); b = a`
            for node in body.assigns:
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in body.declared:
                        if self.gives_record(node.value, record):
                            record.add(target.id)
                        if self.gives_dict(node.value, dicts):
                            dicts.add(target.id)
        return record, dicts

    def _stores(self, body: _Body, record: set[str]) -> bool:
        """Record the globals and module dict slots the function binds to the record."""
        changed = False
        values = record | self._record_parameters(body)
        for node in body.assigns:
            if not self.gives_record(node.value, values):
                continue
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in body.declared and target.id not in self.globals:
                    self.globals.add(target.id)
                    changed = True
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    slot = (target.value.id, _key(target.slice))
                    if slot not in self.slots:
                        self.slots.add(slot)
                        changed = True
        return changed

    def _module_names(self) -> bool:
        changed = False
        for node in self.module_level:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id not in self.dict_names and self.gives_dict(node.value, set()):
                    self.dict_names.add(target.id)
                    changed = True
        return changed

    def _round(self) -> bool:
        changed = self._module_names()
        for name, body in self.bodies.items():
            record, dicts = self._locals(body)
            changed |= self._stores(body, record)
            if name == self.settings.raw_accessor:
                continue
            if name not in self.getters and any(self.gives_record(value, record) for value in body.returns):
                self.getters.add(name)
                changed = True
            if name not in self.dict_getters and any(self.gives_dict(value, dicts) for value in body.returns):
                self.dict_getters.add(name)
                changed = True
        return changed

    def settle(self) -> HomeGetters:
        while self._round():  # (the sets only grow, bounded by the module's names)
            pass
        return HomeGetters(
            frozenset(self.getters), frozenset(self.dict_getters), frozenset(self.dict_names - set(self.settings.record_dicts))
        )


def home_getters(tree: ast.Module, settings: ScanSettings) -> HomeGetters:
    """What `tree`, the record's home module, offers importers besides the raw accessor."""
    return _Home(tree, settings).settle()
