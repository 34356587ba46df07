"""Where a module may be handed on as a value inside one source file, for the reflection
analysis (configbags.migrate.reflection) to follow `os`, `configbags.runtime.dist` or an
accessors module past a parameter, a container literal or a function's return:

- `def g(m): ...` called `g(os)` or `g(m=os)` (by the function's own name, not a method):
  the argument is what `m` may be inside `g`;
- `for m in MODS:` (or a comprehension's `for`): `m` is an element of what it iterates;
- `def _os(): return os`: a call of `_os` gives what it returns.

Only the shapes are gathered here; which values are modules is the reader's to judge
(names resolve there, flow-insensitively)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class ModuleFlows:
    # (function, parameter) -> the arguments the module's calls of the function hand it,
    # each with the function the call is in (None at module level), whose names it uses
    given: dict[tuple[str, str], list[tuple[str | None, ast.expr]]] = field(default_factory=dict)
    # loop (or comprehension) target -> what it iterates
    iterated: dict[str, list[ast.expr]] = field(default_factory=dict)
    # function -> the names and attributes it returns (`return os`)
    returned: dict[str, list[ast.expr]] = field(default_factory=dict)


def module_flows(tree: ast.Module) -> ModuleFlows:
    flows = ModuleFlows()
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    calls: list[tuple[ast.Call, str | None]] = []
    pending: list[tuple[ast.AST, str | None, bool]] = [(tree, None, False)]
    while pending:
        node, function, in_class = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not in_class:  # a method's call sites (`self.g(os)`) are not followed
                functions.setdefault(node.name, []).append(node)
            function = node.name
        elif isinstance(node, ast.Return) and function is not None and isinstance(node.value, (ast.Name, ast.Attribute)):
            flows.returned.setdefault(function, []).append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (node.args or node.keywords):
            calls.append((node, function))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
            flows.iterated.setdefault(node.target.id, []).append(node.iter)
        for child in ast.iter_child_nodes(node):
            pending.append((child, function, isinstance(node, ast.ClassDef)))
    for call, caller in calls:
        assert isinstance(call.func, ast.Name)
        for definition in functions.get(call.func.id, ()):
            positional = [*definition.args.posonlyargs, *definition.args.args]
            for index, argument in enumerate(call.args):
                if isinstance(argument, ast.Starred) or index >= len(positional):
                    break
                flows.given.setdefault((definition.name, positional[index].arg), []).append((caller, argument))
            named = {a.arg for a in (*definition.args.args, *definition.args.kwonlyargs)}
            for keyword in call.keywords:
                if keyword.arg in named:
                    flows.given.setdefault((definition.name, keyword.arg), []).append((caller, keyword.value))
    return flows


def elements(
    container: ast.expr, bound: Callable[[str], list[ast.expr | None]], key: ast.expr | None = None,
    iterating: bool = False, depth: int = 0,
) -> list[ast.expr]:
    """The elements of a container literal `container` is (or a name bound to one is):
    those a constant `key` picks (`MODS["os"]`, `MODS[0]`), all of them for a key the code
    does not show; iterated (`iterating`), a list's, tuple's or set's elements, and a dict's
    values only through `.values()` (a dict iterates its keys)."""
    if depth > 4:
        return []
    if isinstance(container, ast.Name):
        return [e for value in bound(container.id) if value is not None
                for e in elements(value, bound, key, iterating, depth + 1)]
    if (iterating and isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute)
            and container.func.attr == "values" and not container.args):
        return elements(container.func.value, bound, None, False, depth + 1)
    picked = key.value if isinstance(key, ast.Constant) else None
    if isinstance(container, ast.Dict):
        if iterating:
            return []
        if picked is None or any(k is None for k in container.keys):
            return list(container.values)
        return [v for k, v in zip(container.keys, container.values, strict=True)
                if not isinstance(k, ast.Constant) or k.value == picked]
    if isinstance(container, (ast.List, ast.Tuple, ast.Set)):
        items = [e for e in container.elts if not isinstance(e, ast.Starred)]
        if isinstance(picked, int) and not isinstance(picked, bool) and len(items) == len(container.elts):
            return [items[picked]] if -len(items) <= picked < len(items) else []
        return items
    return []
