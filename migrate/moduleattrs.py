"""Names a module's own `__getattr__` serves (PEP 562), read where they are imported.

`from envs import SGLANG_PAGE_SIZE` looks the name up on the module, and where the module
does not bind it, Python calls the module's `__getattr__("SGLANG_PAGE_SIZE")`: the import
statement itself runs the dispatch (a vLLM-style table's, a prefix dispatcher's) and reads
what it reads. `from envs import *` does the same for each name `__all__` lists that the
module does not bind (without `__all__` a star import takes the bound names alone).

- The module (dispatch_facts): where it binds `__getattr__` at module level, one row
  among its constants (FlowFacts.constants, shape MODULE_DISPATCH) with the names it
  surely binds when it runs (a def, a class, an assignment, an import; in a block only
  where every branch binds it, never under `if TYPE_CHECKING:`) and its `__all__`
  (the literal names, or unknown where it is computed).
- The project pass (configbags.migrate.flows) tells each importer what its from-imports
  of such a module read (FlowInput.served_imports: ServedModule.leaves): a declared
  variable's name is read as `envs.NAME` is; the table's entry of that key; what the
  dispatch reads by its parameter (a helper's key template: `os.environ.get("SGLANG_" +
  name)`); what its body reads otherwise. A name the module binds reads nothing. Deny by
  default: a name not shown (a computed `__all__`) is what the dispatch reads of any
  name, `$?` where a declared variable could be it; a declared name imported from a
  module the scan does not read is read by its spelling.
- The importer (served_reads) reports each at the import, in the function holding it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from configbags.migrate.doors import _bound_at_module
from configbags.migrate.envkeys import declared_reads, patterns, template_of
from configbags.migrate.scanmodel import ENV_UNRESOLVED, env_subject

# The shape of a module's dispatch row among its constants (FlowFacts.constants): the
# value is JSON, {"bound": [names], "all": [names] | "?" | null}
MODULE_DISPATCH = "module_dispatch"
# The shape of a table's dispatch imported under a name (`from envs import __getattr__
# as get`), among an importer's constants (FlowInput.constants): the table's value
ENV_DISPATCH = "env_dispatch"
DISPATCH = "__getattr__"
_UNKNOWN_ALL = "?"
_ALL = "__all__"
_LIST_METHODS = frozenset({"append", "extend"})
FORM = "env_import"


def dispatch_facts(tree: ast.Module, text: str) -> list[tuple[str, str, str]]:
    """The module's dispatch row, where it binds `__getattr__` at module level."""
    if DISPATCH not in text or not any(DISPATCH in _bound_at_module(stmt) for stmt in tree.body):
        return []
    bound = _surely_bound(tree.body) - _deleted(tree.body)
    value = {"bound": sorted(bound), "all": _all_names(tree.body)}
    return [(DISPATCH, MODULE_DISPATCH, json.dumps(value, separators=(",", ":")))]


def _surely_bound(body: Sequence[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        names |= _statement_binds(stmt)
    return names


def _statement_binds(stmt: ast.stmt) -> set[str]:
    """The names `stmt` binds whenever it runs to its end."""
    if isinstance(stmt, ast.If):
        checking = _type_checking(stmt.test)
        if checking is not None:
            # only type checkers run `if TYPE_CHECKING:`
            return _surely_bound(stmt.orelse if checking else stmt.body)
        return _surely_bound(stmt.body) & _surely_bound(stmt.orelse)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return _try_binds(stmt)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = {n for item in stmt.items if item.optional_vars is not None for n in _stored(item.optional_vars)}
        return targets | _surely_bound(stmt.body)
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Match, ast.Delete)):
        return set()  # a loop may not run, a case not match
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return set()  # `NAME: int` declares, binds nothing
    return {name for name in _bound_at_module(stmt) if name != "*"}


def _try_binds(stmt: Any) -> set[str]:
    """A try block's (or `try: ... except* ...`): its body's and else's where every
    handler binds them too, and its finally's."""
    names = _surely_bound(stmt.body) | _surely_bound(stmt.orelse)
    for handler in stmt.handlers:
        names &= _surely_bound(handler.body)
    return names | _surely_bound(stmt.finalbody)


def _type_checking(test: ast.expr) -> bool | None:
    """True for `TYPE_CHECKING` (or `typing.TYPE_CHECKING`), False for its negation."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    spelled = inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(inner, ast.Attribute) else ""
    return (not negated) if spelled == "TYPE_CHECKING" else None


def _stored(target: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _deleted(body: Sequence[ast.stmt]) -> set[str]:
    return {t.id for stmt in body if isinstance(stmt, ast.Delete) for t in stmt.targets if isinstance(t, ast.Name)}


def _all_names(body: Sequence[ast.stmt]) -> list[str] | str | None:
    """The names `__all__` lists: None where the module binds none, "?" where it is
    bound or extended by anything but literal strings."""
    names: list[str] = []
    found = False
    for stmt in _module_statements(body):
        value: ast.expr | None = None
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if not any(isinstance(t, ast.Name) and t.id == _ALL for t in targets):
                if any(_ALL in _stored(t) for t in targets):
                    return _UNKNOWN_ALL  # `__all__, x = ...`
                continue
            value = stmt.value
        elif (call := _extends_all(stmt)) is not None:
            # (`append` adds one string, wrapped by _literal_strings; `extend` a list)
            value = call.args[0] if len(call.args) == 1 and not call.keywords else None
        elif _ALL in _bound_at_module(stmt):
            return _UNKNOWN_ALL  # `from m import __all__`, a loop over it
        else:
            continue
        found = True
        literal = _literal_strings(value)
        if literal is None:
            return _UNKNOWN_ALL
        names += literal
    return names if found else None


def _module_statements(body: Sequence[ast.stmt]) -> Iterable[ast.stmt]:
    """The module's statements, those in its blocks too (not in defs or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or type(stmt).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody"):
                yield from _module_statements(getattr(stmt, block, ()))
            for handler in getattr(stmt, "handlers", ()):
                yield from _module_statements(handler.body)


def _extends_all(stmt: ast.stmt) -> ast.Call | None:
    """The call of `__all__.append("X")`, `__all__.extend([...])`."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    listed = (
        isinstance(func, ast.Attribute) and func.attr in _LIST_METHODS
        and isinstance(func.value, ast.Name) and func.value.id == _ALL
    )
    return call if listed else None


def _literal_strings(value: ast.expr | None) -> list[str] | None:
    """The strings a literal list or tuple (or one string) holds, None for anything else."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value.value]
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    found = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found if len(found) == len(value.elts) else None


@attrs.frozen
class ServedModule:
    """What a module's `__getattr__` reads of the name it is asked: its table's entries
    (key -> leaves), the key templates of its parameter (envkeys), the leaves its body
    reads otherwise; and what the module binds and lists in `__all__`."""

    bound: frozenset[str]
    all_names: tuple[str, ...] | None  # None: no `__all__`
    all_known: bool
    entries: dict[str, list[str]] = attrs.field(factory=dict)
    templates: tuple[Any, ...] = ()
    body: frozenset[str] = frozenset()

    @classmethod
    def from_row(cls, value: str, **found: Any) -> ServedModule:
        facts = json.loads(value)
        listed = facts.get("all")
        return cls(
            bound=frozenset(facts.get("bound", ())),
            all_names=None if listed is None or listed == _UNKNOWN_ALL else tuple(listed),
            all_known=listed != _UNKNOWN_ALL,
            **found,
        )

    def imported(self, name: str, declared: frozenset[str]) -> set[str]:
        """The leaves `from module import name` (or `*`) reads."""
        if name != "*":
            return set() if name in self.bound else self.leaves(name, declared)
        if not self.all_known:
            return self.leaves(None, declared)
        return {leaf for listed in self.all_names or () if listed not in self.bound for leaf in self.leaves(listed, declared)}

    def leaves(self, name: str | None, declared: frozenset[str]) -> set[str]:
        """What `__getattr__(name)` reads (None: a name not shown)."""
        found: set[str] = set()
        if name is not None and name in declared:
            found.add(env_subject(name))  # as `envs.NAME` is, whatever serves it
        if name is None:
            found.update(leaf for leaves in self.entries.values() for leaf in leaves)
        else:
            found.update(self.entries.get(name, ()))
        for template in self.templates:
            read, unresolved = declared_reads(patterns(template, None if name is None else frozenset({name})), declared)
            found.update(env_subject(variable) for variable in read)
            if unresolved:
                found.add(ENV_UNRESOLVED)
        # (where the dispatch reads by its parameter, its own `$?` is that read, above)
        found.update(leaf for leaf in self.body if leaf != ENV_UNRESOLVED or not self.templates)
        return found


def dispatch_templates(helper_rows: Iterable[tuple[str, str]]) -> tuple[Any, ...]:
    """The key templates of `__getattr__`'s first parameter, of a module's helper rows
    ((qualname, "position|parameter|use"): flows._Project._helpers_of)."""
    found: list[Any] = []
    for qualname, tail in helper_rows:
        position, _, use = tail.split("|", 2)
        template = template_of(use) if qualname == DISPATCH and position == "0" else None
        if template is not None:
            found.append(template)
    return tuple(found)


def dispatch_body(reads: Iterable[tuple[Any, ...]]) -> frozenset[str]:
    """The environment leaves a module's reads (FileScan.reads) have in `__getattr__`."""
    return frozenset(
        str(row[1]) for row in reads
        if (row[0] == DISPATCH or str(row[0]).startswith(DISPATCH + ".")) and row[6] == "environ"
    )


def served_reads(tree: ast.Module, served: Iterable[tuple[int, str, str, str]]) -> list[tuple[Any, ...]]:
    """The reads at the module's from-imports the project pass found served by another
    module's `__getattr__` (FlowInput.served_imports: (level, module, name, leaf))."""
    wanted: dict[tuple[int, str, str], list[str]] = {}
    for level, module, name, leaf in served:
        wanted.setdefault((level, module, name), []).append(leaf)
    if not wanted:
        return []
    rows: list[tuple[Any, ...]] = []
    for qualname, node in _imports_from(tree.body, ()):
        for alias in node.names:
            for leaf in sorted(wanted.get((node.level, node.module or "", alias.name), ())):
                rows.append((
                    ".".join(qualname) or "<module>", leaf, alias.lineno, alias.col_offset,
                    alias.end_lineno or alias.lineno, alias.end_col_offset or alias.col_offset, "environ", FORM, "held",
                ))
    return rows


def _imports_from(body: Sequence[ast.AST], qualname: tuple[str, ...]) -> Iterable[tuple[tuple[str, ...], ast.ImportFrom]]:
    """Every `from ... import` under `body`, with the qualname of the scope holding it."""
    for node in body:
        if isinstance(node, ast.ImportFrom):
            yield qualname, node
            continue
        inner = (*qualname, node.name) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else qualname
        yield from _imports_from([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt | ast.excepthandler | ast.match_case)], inner)
