"""The standard library's resolvers of dotted names, read as the import routes they are.

`pkgutil.resolve_name("a.b:c")`, `pkgutil.resolve_name("a.b.c")` and `pydoc.locate("a.b.c")`
import a module and fetch attributes of it: they are `__import__("a.b", fromlist=["c"]).c`
(a plugin loader's spelling of `from a.b import c`). Where the call spells the name (a
literal, or a module constant bound once to one), `desugar` puts that import route in the
tree in the resolver call's place, and shows its spelling on the call's line of the search
text, so every analysis (record, doors, reflection, the project pass) judges it as it judges
`importlib.import_module("a.b").c`: the record's getter, a context, the dist state, the
record dict, `os.environ` and `os.getenv` reached so are read as such. A resolver given a
name the module does not spell is left as it is: configbags.migrate.reflection reports it
`$?`, like `importlib.import_module(name)`.

Two more resolvers are read the same way:

- a project helper that resolves a qualname it is given (`def resolve_obj_by_qualname(q):
  m, a = q.rsplit(".", 1); return getattr(importlib.import_module(m), a)`, a plugin table
  `mod, name = PLUGINS[kind]`): its body is read once into a spec of what it returns in
  terms of its parameters (helper_specs), which the project pass hands to the modules
  importing it (FlowInput.constants, shape HELPER_SHAPE); a call spelling its arguments
  is the import route the spec gives with them. The helper's own `import_module(m)`
  stays `$?` for the calls that spell nothing;
- a pickle the module spells (`pickle.loads(b"cos\ngetenv\n...")`): its opcodes, read
  with pickletools and never run, build the expression they stand for (a GLOBAL is an
  import route, a REDUCE a call); where they do more, what it imports is handed to a
  callable no module defines, so it escapes there.

And, the general rule behind them: a string that spells a door's dotted name (`a.b.c`,
`a.b:c`, `ext://a.b.c`, a PyYAML `!!python/` tag; DoorNames) is the import it names,
whatever takes it (door_names: an entry point's `EntryPoint(..., "a.b:c", ...).load()`,
`logging.config`'s `ext://`, uvicorn's `import_from_string`, pydantic's `ImportString`,
`mock.patch`); `u.find_class("a.b", "c")` is `from a.b import c`; a string annotation
that calls (`x: "Literal[get_server_args().tp_size]"`) is the code it spells
(string_annotations), which `typing.get_type_hints` runs.

A code string a library runs in a Python child it starts (PYTHON_CODE_RUNNERS: execnet's
`gw.remote_exec(code)`) is that child, `subprocess.run([sys.executable, "-c", code])`
(python_children), judged by the child-process rules as a `python -c` program is.

Only a file whose text shows a resolver's name (`resolve_name`, `locate`, an importer's,
`pickle`, `dill`, `find_class`), quotes a door's word, shows a calling
string annotation, or imports a helper is walked.
"""

from __future__ import annotations

import ast
import base64
import json
import pickletools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from configbags.migrate.holders import dotted_name
from configbags.migrate.scanmodel import ScanSettings

# the resolvers, by the module that defines them
RESOLVERS = frozenset({"pkgutil.resolve_name", "pydoc.locate"})
_WORDS = ("resolve_name", "locate")


def desugar(
    tree: ast.Module, text: str, imported: Iterable[tuple[str, str, str]] = (), settings: ScanSettings | None = None
) -> str:
    """Replace in `tree` (in place) each resolver call that spells its name, and each call
    of a resolver helper (the module's own, or one of `imported`: FlowInput.constants)
    that spells what it resolves, by the import route it stands for; then each string that
    spells a door's dotted name (`"ext://os.environ"`, given `settings`: door_names);
    return `text` with those routes' spelling added at the end of their lines (the lines
    stay the parser's)."""
    text = _desugar_resolvers(tree, text, imported)
    text = python_children(tree, text)
    text = string_annotations(tree, text, settings.raw_accessor if settings is not None else "")
    return door_names(tree, text, settings) if settings is not None else text


def _desugar_resolvers(tree: ast.Module, text: str, imported: Iterable[tuple[str, str, str]]) -> str:
    helpers = {spelled: json.loads(value) for spelled, shape, value in imported if shape == HELPER_SHAPE}
    words = any(word in text for word in _HELPER_WORDS)
    pickled = any(word in text for word in _PICKLE_WORDS)
    finder = "find_class" in text
    if not helpers and not words and not pickled and not finder:
        return text
    nodes = list(ast.walk(tree))
    names = _local_names(nodes, RESOLVERS) if any(word in text for word in _WORDS) else {}
    if words:
        helpers.update(_helpers(tree, nodes))
    unpicklers = _local_names(nodes, _LOADS | _LOAD | _UNPICKLERS) if pickled else {}
    if not names and not helpers and not unpicklers and not finder:
        return text
    constants = _constants(tree, nodes)
    added: dict[int, list[str]] = {}

    def routed(expr: object, parent: ast.AST, field: str) -> ast.expr | None:
        route = (
            _route(expr, names, constants) or _helper_route(expr, helpers, constants)
            or _pickle_route(expr, unpicklers, constants) or (_find_class_route(expr, constants) if finder else None)
        )
        if route is not None:
            added.setdefault(route.lineno, []).append(ast.unparse(route))
        return route

    _replace(nodes, routed)
    return _spelled_lines(text, added)


# Libraries that run a code string in a Python child process they start, by the method
# that runs it (on any receiver, in a module importing the library) -> the library:
# `execnet.makegateway("popen").remote_exec("import os; channel.send(os.environ[...])")`
# (pytest-xdist's transport). The call is the child it starts: python_children.
PYTHON_CODE_RUNNERS = {"remote_exec": "execnet"}


def python_children(tree: ast.Module, text: str) -> str:
    """Replace in `tree` (in place) each call of a PYTHON_CODE_RUNNERS method by the
    child process it starts, `subprocess.run([sys.executable, "-c", code])` (as an import
    route, `__import__("subprocess").run(...)`, the receiver kept beside it), so the
    analyses judge its code string as a `python -c` child's (configbags.migrate.childenv);
    return `text` with that spelling added at the end of the call's line."""
    methods = {method for method, library in PYTHON_CODE_RUNNERS.items() if method in text and library in text}
    if not methods:
        return text
    nodes = list(ast.walk(tree))
    libraries = {
        alias.name.partition(".")[0] for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    } | {
        (node.module or "").partition(".")[0] for node in nodes if isinstance(node, ast.ImportFrom) and not node.level
    }
    methods = {method for method in methods if PYTHON_CODE_RUNNERS[method] in libraries}
    added: dict[int, list[str]] = {}

    def routed(expr: object, parent: ast.AST, field: str) -> ast.expr | None:
        if not (
            isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in methods
            and len(expr.args) == 1 and not isinstance(expr.args[0], ast.Starred)
        ):
            return None
        executable = ast.Attribute(value=_import_call("sys"), attr="executable", ctx=ast.Load())
        child = ast.Call(
            func=ast.Attribute(value=_import_call("subprocess"), attr="run", ctx=ast.Load()),
            args=[ast.List(elts=[executable, ast.Constant("-c"), expr.args[0]], ctx=ast.Load())], keywords=[],
        )
        kept = ast.Subscript(
            value=ast.Tuple(elts=[expr.func.value, child], ctx=ast.Load()), slice=ast.Constant(1), ctx=ast.Load(),
        )
        ast.fix_missing_locations(ast.copy_location(kept, expr))  # (the call's own parts keep theirs)
        added.setdefault(expr.lineno, []).append(ast.unparse(child))
        return kept

    _replace(nodes, routed)
    return _spelled_lines(text, added)


def _import_call(module: str) -> ast.Call:
    return ast.Call(func=ast.Name(id="__import__", ctx=ast.Load()), args=[ast.Constant(module)], keywords=[])


def _replace(nodes: list[ast.AST], routed: Callable[[object, ast.AST, str], ast.expr | None]) -> None:
    """Put in each node's place what `routed` gives for it (given its parent and field)."""
    for node in nodes:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    route = routed(item, node, field)
                    if route is not None:
                        value[index] = route
            else:
                route = routed(value, node, field)
                if route is not None:
                    setattr(node, field, route)


def _spelled_lines(text: str, added: dict[int, list[str]]) -> str:
    """`text` with each line's added spellings at its end."""
    if not added:
        return text
    lines = text.split("\n")
    for line, spellings in added.items():
        if 0 < line <= len(lines):
            lines[line - 1] += " " + " ".join(spellings)
    return "\n".join(lines)


def _local_names(nodes: list[ast.AST], wanted: frozenset[str]) -> dict[str, str]:
    """The dotted local spellings of the `wanted` callables ("module.attr"): `pkgutil.resolve_name`,
    `pk.resolve_name` after `import pkgutil as pk`, `load_obj` after `from pkgutil import
    resolve_name as load_obj`, a name bound to one of those, wherever the module binds them
    (a may-alias)."""
    homes = {path.rpartition(".")[0] for path in wanted}
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in homes:
                    for path in wanted:
                        home, _, attr = path.rpartition(".")
                        if home == alias.name:
                            found[f"{alias.asname or alias.name}.{attr}"] = path
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in homes:
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                if path in wanted:
                    found[alias.asname or alias.name] = path
    for _ in range(4):  # `R = pkgutil.resolve_name`, `R2 = R`
        more = {
            target.id: found[dotted_name(node.value)]
            for node in nodes if isinstance(node, ast.Assign) and dotted_name(node.value) in found
            for target in node.targets if isinstance(target, ast.Name) and target.id not in found
        }
        if not more:
            break
        found.update(more)
    return found


def _constants(tree: ast.Module, nodes: list[ast.AST]) -> dict[str, Literal]:
    """Module-level names bound once, to a literal, and never bound again anywhere in the
    module: a string (`ARGS_HOOK = "a.b:c"`), bytes, or a table of strings (a tuple, a
    list, a dict with string keys: `PLUGINS = {"args": ("a.b", "c")}`)."""
    literal: dict[str, Literal] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            value = _literal(stmt.value)
            if value is not None:
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(target, ast.Name):
                        literal[target.id] = value
    if not literal:
        return {}
    bindings: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bindings[node.id] = bindings.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            bindings[node.arg] = bindings.get(node.arg, 0) + 2
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bindings[name] = bindings.get(name, 0) + 2
    return {name: value for name, value in literal.items() if bindings.get(name) == 1}


# what a module constant may be here: a string, bytes, or a table of strings
Literal = str | bytes | list[Any] | dict[str, Any]


def _literal(expr: ast.expr) -> Literal | None:
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, (str, bytes)) else None
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = [_literal(e) for e in expr.elts]
        return None if any(isinstance(i, bytes) or i is None for i in items) else items
    if isinstance(expr, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in expr.keys]
        values = [_literal(v) for v in expr.values]
        if any(k is None for k in keys) or any(isinstance(v, bytes) or v is None for v in values):
            return None
        return {str(k): v for k, v in zip(keys, values, strict=True)}
    return None


def _route(expr: object, names: dict[str, str], constants: dict[str, Literal]) -> ast.expr | None:
    """The import route a resolver call stands for, where the call spells the name."""
    if not isinstance(expr, ast.Call) or names.get(dotted_name(expr.func)) is None:
        return None
    resolver = names[dotted_name(expr.func)]
    allowed = 1 if resolver == "pkgutil.resolve_name" else 2  # pydoc.locate(path, forceload=0)
    if not expr.args or len(expr.args) > allowed or any(isinstance(a, ast.Starred) for a in expr.args):
        return None
    if any(k.arg != "forceload" for k in expr.keywords) or (expr.keywords and allowed == 1):
        return None
    first = expr.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        name = first.value
    elif isinstance(first, ast.Name) and isinstance(constants.get(first.id), str):
        name = str(constants[first.id])
    else:
        return None
    module, attributes = _split(name, resolver)
    if module is None:
        return None
    return import_route(module, attributes, expr)


def import_route(module: str, attributes: Sequence[str], at: ast.AST) -> ast.expr:
    """`__import__(module, fromlist=[...]).a.b`: the module itself (a fromlist makes
    `__import__` give it, not its top package), then its attributes; placed at `at`."""
    fromlist: list[ast.expr] = [ast.Constant(attributes[0] if attributes else "*")]
    route: ast.expr = ast.Call(
        func=ast.Name(id="__import__", ctx=ast.Load()),
        args=[ast.Constant(module)],
        keywords=[ast.keyword(arg="fromlist", value=ast.List(elts=fromlist, ctx=ast.Load()))],
    )
    for attribute in attributes:
        route = ast.Attribute(value=route, attr=attribute, ctx=ast.Load())
    for node in ast.walk(route):
        ast.copy_location(node, at)
    return route


def _split(name: str, resolver: str) -> tuple[str | None, list[str]]:
    """(module, attributes) a resolver's name spells: `a.b:c.d` is a.b then c, d (the
    colon form is pkgutil's only); `a.b.c` is a.b then c (the same dotted path, whichever
    part Python finds to be the module)."""
    if ":" in name and resolver == "pkgutil.resolve_name":
        module, _, rest = name.partition(":")
        attributes = rest.split(".") if rest else []
    else:
        module, _, last = name.rpartition(".")
        module, attributes = (module, [last]) if module else (last, [])
    parts = [*module.split("."), *attributes]
    if not all(part.isidentifier() for part in parts):
        return None, []
    return module, attributes




# ---- a project helper that resolves a qualname it is given

# The shape of a helper's row among a module's constants (FlowFacts.constants), which the
# project pass hands to the modules importing it (FlowInput.constants); the value is the
# helper's spec, as JSON: its parameters, and what it returns in terms of them (Sym)
HELPER_SHAPE = "resolver"
_IMPORTERS = frozenset({"importlib.import_module", "importlib.__import__", "builtins.__import__"})
_HELPER_WORDS = ("import_module", "__import__", "resolve_name", "locate")
# What a helper's value is, as JSON lists headed by their kind: ["arg", parameter],
# ["str", text], ["lit", table], ["split", sym, sep, maxsplit, from_right, index, count],
# ["partition", sym, sep, from_right, index], ["index", sym, index, count],
# ["item", sym, key sym], and the routes: ["mod", sym] (import_module), ["top", sym]
# (`__import__` without a fromlist), ["resolve", resolver, sym], ["attr", route, sym]
Sym = list[Any]
_ROUTES = frozenset({"mod", "top", "resolve", "attr"})


def helper_specs(tree: ast.Module, text: str) -> list[tuple[str, str, str]]:
    """The module's resolver helpers, as FlowFacts.constants rows (name, HELPER_SHAPE,
    spec): module-level functions whose value is an import route built from a parameter
    (`def resolve_obj_by_qualname(q): m, a = q.rsplit(".", 1); return
    getattr(importlib.import_module(m), a)`, `def load(kind): mod, name = PLUGINS[kind];
    ...`). Only a file showing an importer's name is read."""
    if not any(word in text for word in _HELPER_WORDS):
        return []
    helpers = _helpers(tree, list(ast.walk(tree)))
    return [(name, HELPER_SHAPE, json.dumps(spec, separators=(",", ":"))) for name, spec in sorted(helpers.items())]


def _helpers(tree: ast.Module, nodes: list[ast.AST]) -> dict[str, dict[str, Any]]:
    importers = {"__import__": "builtins.__import__", **_local_names(nodes, _IMPORTERS)}
    resolvers = _local_names(nodes, RESOLVERS)
    constants = _constants(tree, nodes)
    found: dict[str, dict[str, Any]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            spec = _HelperReader(stmt, importers, resolvers, constants).spec()
            if spec is not None:
                found[stmt.name] = spec
            else:
                found.pop(stmt.name, None)
    return found


class _HelperReader:
    """What a function returns, in terms of its parameters, where its body shows it in
    straight-line assignments (a `try` or `with` body too): any other statement makes
    the names it binds unknown."""

    def __init__(
        self, function: ast.FunctionDef, importers: dict[str, str], resolvers: dict[str, str],
        constants: dict[str, Literal],
    ) -> None:
        self.function = function
        args = function.args
        self.params = [a.arg for a in (*args.posonlyargs, *args.args)]
        self.keywords = [a.arg for a in args.kwonlyargs]
        self.env: dict[str, Sym | None] = {name: ["arg", name] for name in (*self.params, *self.keywords)}
        self.importers = importers
        self.resolvers = resolvers
        self.constants = constants

    def spec(self) -> dict[str, Any] | None:
        value = self._body(self.function.body)
        if value is None or value[0] not in _ROUTES or '["arg",' not in json.dumps(value):
            return None
        return {"params": self.params, "keywords": self.keywords, "value": value}

    def _body(self, body: list[ast.stmt]) -> Sym | None:
        for stmt in body:
            if isinstance(stmt, ast.Return):
                return self._value(stmt.value) if stmt.value is not None else None
            if isinstance(stmt, (ast.Try, ast.With)):
                value = self._body(stmt.body)
                if value is not None:
                    return value
                # what the handlers, `else`, `finally` or `as` bind is no longer known
                others: list[ast.AST] = (
                    [*stmt.handlers, *stmt.orelse, *stmt.finalbody] if isinstance(stmt, ast.Try) else list(stmt.items)
                )
                self._forget(others)
                continue
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self._assign(target, stmt.value)
                continue
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._assign(stmt.target, stmt.value)
                continue
            self._forget([stmt])
        return None

    def _forget(self, nodes: list[ast.AST]) -> None:
        for node in (sub for top in nodes for sub in ast.walk(top)):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.env[node.id] = None

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = self._value(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts):
            parts = self._unpack(value, len(target.elts))
            for index, name in enumerate(target.elts):
                assert isinstance(name, ast.Name)
                self.env[name.id] = parts[index] if parts is not None else None
        else:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    self.env[node.id] = None

    def _unpack(self, value: ast.expr, count: int) -> list[Sym | None] | None:
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == count:
            return [self._value(e) for e in value.elts]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            method, receiver = value.func.attr, self._value(value.func.value)
            args = [_text(a) for a in value.args]
            keywords = {k.arg: k.value for k in value.keywords}
            if receiver is not None and method in ("split", "rsplit") and len(args) <= 2:
                sep = args[0] if args else None
                limit = args[1] if len(args) > 1 else _text(keywords["maxsplit"]) if "maxsplit" in keywords else "-1"
                if limit is None or not limit.lstrip("-").isdigit() or (args and sep is None):
                    return None
                right = method == "rsplit"
                return [["split", receiver, sep, int(limit), right, i, count] for i in range(count)]
            if receiver is not None and method in ("partition", "rpartition") and count == 3 and len(args) == 1:
                if args[0] is None:
                    return None
                return [["partition", receiver, args[0], method == "rpartition", i] for i in range(3)]
        whole = self._value(value)
        return None if whole is None else [["index", whole, i, count] for i in range(count)]

    def _value(self, expr: ast.expr) -> Sym | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return ["str", expr.value]
        if isinstance(expr, ast.Name):
            if expr.id in self.env:
                return self.env[expr.id]
            constant = self.constants.get(expr.id)
            if isinstance(constant, str):
                return ["str", constant]
            return ["lit", constant] if isinstance(constant, (list, dict)) else None
        if isinstance(expr, ast.Subscript):
            base, key = self._value(expr.value), self._value(expr.slice)
            return ["item", base, key] if base is not None and key is not None else None
        if isinstance(expr, ast.Attribute):
            base = self._value(expr.value)
            return ["attr", base, ["str", expr.attr]] if base is not None and base[0] in _ROUTES else None
        if not isinstance(expr, ast.Call) or any(isinstance(a, ast.Starred) for a in expr.args):
            return None
        called = dotted_name(expr.func)
        first = self._value(expr.args[0]) if expr.args else None
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" and len(expr.args) == 1:
            base = self._value(expr.func.value)  # `PLUGINS.get(kind)`
            return ["item", base, first] if base is not None and first is not None else None
        if first is None:
            return None
        if self.importers.get(called) == "importlib.import_module":
            return ["mod", first] if len(expr.args) == 1 and not expr.keywords else None
        if called in self.importers:
            fromlist = _argument(expr, 3, "fromlist")
            full = isinstance(fromlist, (ast.List, ast.Tuple)) and bool(fromlist.elts)
            return ["mod" if full else "top", first]
        if called in self.resolvers:
            return ["resolve", self.resolvers[called], first]
        if called == "getattr" and "getattr" not in self.env and len(expr.args) in (2, 3):
            attribute = self._value(expr.args[1])
            return ["attr", first, attribute] if first[0] in _ROUTES and attribute is not None else None
        return None


def _text(expr: ast.expr) -> str | None:
    """A literal string or integer argument, as text."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, int)) and not isinstance(expr.value, bool):
        return str(expr.value)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _text(expr.operand)
        return None if inner is None else f"-{inner}"
    return None


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _helper_route(
    expr: object, helpers: dict[str, dict[str, Any]], constants: dict[str, Literal]
) -> ast.expr | None:
    """The import route a call of a resolver helper stands for, where the call spells
    what the helper needs (literals, module constants)."""
    if not isinstance(expr, ast.Call) or not helpers:
        return None
    spec = helpers.get(dotted_name(expr.func))
    if spec is None or any(isinstance(a, ast.Starred) for a in expr.args) or any(k.arg is None for k in expr.keywords):
        return None
    params: list[str] = spec["params"]
    if len(expr.args) > len(params):
        return None
    given: dict[str, ast.expr] = dict(zip(params, expr.args, strict=False))
    given.update({str(k.arg): k.value for k in expr.keywords})
    args: dict[str, Literal] = {}
    for name, value in given.items():
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            args[name] = value.value
        elif isinstance(value, ast.Name) and value.id in constants:
            args[name] = constants[value.id]
    found = _evaluate(spec["value"], args)
    if not isinstance(found, tuple):
        return None
    module, attributes = found
    return import_route(module, attributes, expr)


def _evaluate(sym: Any, args: dict[str, Literal], depth: int = 0) -> Any:
    """What a helper's Sym is with these arguments: a string, a table, a route
    (module, attributes), or None where it cannot be told."""
    if not isinstance(sym, list) or not sym or depth > 32:
        return None
    kind, rest = sym[0], sym[1:]
    if kind == "arg":
        return args.get(rest[0])
    if kind in ("str", "lit"):
        return rest[0]
    inner = _evaluate(rest[0], args, depth + 1) if kind != "resolve" else _evaluate(rest[1], args, depth + 1)
    if kind == "split" and isinstance(inner, str):
        sep, limit, right, index, count = rest[1:]
        parts = inner.rsplit(sep, limit) if right else inner.split(sep, limit)
        return parts[index] if len(parts) == count else None
    if kind == "partition" and isinstance(inner, str) and rest[1]:
        return (inner.rpartition(rest[1]) if rest[2] else inner.partition(rest[1]))[rest[3]]
    if kind == "index" and isinstance(inner, list):
        return inner[rest[1]] if len(inner) == rest[2] else None
    if kind == "item":
        key = _evaluate(rest[1], args, depth + 1)
        if isinstance(inner, dict) and isinstance(key, str):
            return inner.get(key)
        return None
    if kind in ("mod", "top") and isinstance(inner, str) and all(p.isidentifier() for p in inner.split(".")):
        return (inner if kind == "mod" else inner.partition(".")[0], [])
    if kind == "resolve" and isinstance(inner, str):
        module, attributes = _split(inner, rest[0])
        return None if module is None else (module, attributes)
    if kind == "attr" and isinstance(inner, tuple):
        attribute = _evaluate(rest[1], args, depth + 1)
        if isinstance(attribute, str) and attribute.isidentifier():
            return (inner[0], [*inner[1], attribute])
    return None


# ---- a pickle the module spells: its GLOBAL opcodes are imports, its REDUCE calls

# The unpicklers, by the module that defines them: what `loads` takes, what `load` takes
# a file of (`io.BytesIO(b"...")`), and the class whose `.load()` does the same
_LOADS = frozenset({"pickle.loads", "_pickle.loads", "cloudpickle.loads", "dill.loads"})
_LOAD = frozenset({"pickle.load", "_pickle.load", "cloudpickle.load", "dill.load"})
_UNPICKLERS = frozenset({"pickle.Unpickler", "_pickle.Unpickler", "dill.Unpickler"})
_PICKLE_WORDS = ("pickle", "dill")
# A callable no module defines: what the pickle hands its objects to where its opcodes
# do more than build values and call what they import (BUILD's `__setstate__`, an opcode
# not followed); whatever it is handed escapes there
_UNPICKLED = "__unpickled__"
_PICKLE_CONSTANTS = frozenset({
    "STRING", "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
})
_PICKLE_SINGLETONS: dict[str, object] = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}


def _pickle_route(expr: object, unpicklers: dict[str, str], constants: dict[str, Literal]) -> ast.expr | None:
    """What an unpickling of bytes the module spells stands for, where the pickle imports
    anything (a GLOBAL or STACK_GLOBAL opcode): the expression its opcodes build (read
    with pickletools, never run)."""
    if not isinstance(expr, ast.Call) or not unpicklers:
        return None
    func, data = expr.func, None
    kind = unpicklers.get(dotted_name(func))
    if kind in _LOADS and len(expr.args) == 1:
        data = expr.args[0]
    elif kind in _LOAD and len(expr.args) == 1:
        data = _file_bytes(expr.args[0])
    elif (
        isinstance(func, ast.Attribute) and func.attr == "load" and isinstance(func.value, ast.Call)
        and unpicklers.get(dotted_name(func.value.func)) in _UNPICKLERS and func.value.args
    ):
        data = _file_bytes(func.value.args[0])  # `Unpickler(io.BytesIO(b"...")).load()`
    blob = _bytes(data, constants) if data is not None else None
    if blob is None:
        return None
    built = _unpickled(blob, expr)
    if built is not None:
        for node in ast.walk(built):
            ast.copy_location(node, expr)
    return built


def _file_bytes(expr: ast.expr) -> ast.expr | None:
    """`io.BytesIO(DATA)`: DATA."""
    if isinstance(expr, ast.Call) and dotted_name(expr.func).rpartition(".")[2] == "BytesIO" and len(expr.args) == 1:
        return expr.args[0]
    return None


def _bytes(expr: ast.expr, constants: dict[str, Literal]) -> bytes | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, bytes):
        return expr.value
    if isinstance(expr, ast.Name) and isinstance(constants.get(expr.id), bytes):
        found = constants[expr.id]
        assert isinstance(found, bytes)
        return found
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant):
        text = expr.args[0].value
        try:
            if dotted_name(expr.func) == "bytes.fromhex" and isinstance(text, str):
                return bytes.fromhex(text)
            if dotted_name(expr.func) == "base64.b64decode" and isinstance(text, (str, bytes)):
                return base64.b64decode(text, validate=True)
        except ValueError:
            return None
    return None


def _unpickled(blob: bytes, at: ast.AST) -> ast.expr | None:
    """The expression a pickle's opcodes build, where they import anything; where they do
    more than build values and call (REDUCE, NEWOBJ), everything imported and every
    string is handed to _UNPICKLED instead."""
    try:
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(blob)]
    except Exception:  # a truncated or foreign pickle: pickletools raises what it meets
        return None
    machine = _Opcodes(at)
    try:
        for name, arg in ops:
            machine.run(name, arg)
    except (IndexError, ValueError, KeyError, TypeError):
        machine.result = None
    if not machine.imported:
        return None
    result = machine.result
    if result is None or any(node is machine.mark for node in ast.walk(result)):
        return _handed(*machine.imported, *machine.strings)
    return result


def _handed(*args: ast.expr) -> ast.expr:
    return ast.Call(func=ast.Name(id=_UNPICKLED, ctx=ast.Load()), args=list(args), keywords=[])


class _Opcodes:
    """A pickle's stack machine, over expressions (pickletools' opcode names); an opcode
    not followed raises ValueError."""

    _COUNTS: ClassVar[dict[str, int]] = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
    _IGNORED = frozenset({"PROTO", "FRAME"})

    def __init__(self, at: ast.AST) -> None:
        self.at = at
        self.mark: ast.expr = ast.Name(id="<mark>", ctx=ast.Load())
        self.stack: list[ast.expr] = []
        self.memo: dict[int, ast.expr] = {}
        self.imported: list[ast.expr] = []
        self.strings: list[ast.expr] = []
        self.result: ast.expr | None = None

    def run(self, name: str, arg: Any) -> None:
        stack = self.stack
        if name in _PICKLE_CONSTANTS or name in _PICKLE_SINGLETONS:
            value = _PICKLE_SINGLETONS.get(name, arg)
            if not isinstance(value, (str, bytes, bool, int, float)) and value is not None:
                raise ValueError("not a constant")
            stack.append(ast.Constant(value))
            if isinstance(value, str):
                self.strings.append(ast.Constant(value))
        elif name in ("GLOBAL", "STACK_GLOBAL", "INST"):
            self._global(name, arg)
            if name == "INST":  # `mod name` called with what follows the mark
                func = stack.pop()
                stack.append(ast.Call(func=func, args=self._to_mark(), keywords=[]))
        elif name == "OBJ":
            items = self._to_mark()
            stack.append(ast.Call(func=items[0], args=items[1:], keywords=[]))
        elif name == "STOP":
            self.result = stack.pop()
        elif name == "MARK":
            stack.append(self.mark)
        elif name in ("REDUCE", "NEWOBJ"):
            args, func = stack.pop(), stack.pop()
            if not isinstance(args, ast.Tuple):
                raise ValueError("arguments not a tuple")
            stack.append(ast.Call(func=func, args=list(args.elts), keywords=[]))
        elif name == "BUILD":
            state = stack.pop()
            stack.append(_handed(stack.pop(), state))  # `__setstate__`, whatever it does
        elif name not in self._IGNORED and not self._stack_op(name, arg):
            self._container(name)

    def _stack_op(self, name: str, arg: Any) -> bool:
        """The opcodes that only move what is built: the memo, POP, DUP."""
        stack = self.stack
        if name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            self.memo[len(self.memo) if name == "MEMOIZE" else int(arg)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(self.memo[int(arg)])
        elif name == "DUP":
            stack.append(stack[-1])
        elif name == "POP":
            stack.pop()
        elif name == "POP_MARK":
            self._to_mark()
        else:
            return False
        return True

    def _global(self, name: str, arg: Any) -> None:
        if name in ("GLOBAL", "INST"):
            module, _, qualname = str(arg).partition(" ")
        else:
            attribute, home = self.stack.pop(), self.stack.pop()
            if not (isinstance(attribute, ast.Constant) and isinstance(home, ast.Constant)):
                raise ValueError("a global not spelled")
            module, qualname = str(home.value), str(attribute.value)
        if not all(part.isidentifier() for part in (*module.split("."), *qualname.split("."))):
            raise ValueError("not a dotted name")
        route = import_route(module, qualname.split("."), self.at)
        self.imported.append(route)
        self.stack.append(route)

    def _container(self, name: str) -> None:
        stack = self.stack
        if name in ("EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
            count = self._COUNTS.get(name)
            items = self._to_mark() if count is None else [stack.pop() for _ in range(count)][::-1]
            stack.append(ast.Tuple(elts=items, ctx=ast.Load()))
        elif name in ("EMPTY_LIST", "LIST"):
            stack.append(ast.List(elts=[] if name == "EMPTY_LIST" else self._to_mark(), ctx=ast.Load()))
        elif name in ("EMPTY_DICT", "DICT"):
            pairs = [] if name == "EMPTY_DICT" else self._to_mark()
            stack.append(ast.Dict(keys=list(pairs[0::2]), values=list(pairs[1::2])))
        elif name in ("EMPTY_SET", "FROZENSET"):
            items = [] if name == "EMPTY_SET" else self._to_mark()
            stack.append(ast.Set(elts=items) if name == "EMPTY_SET" else ast.Call(
                func=ast.Name(id="frozenset", ctx=ast.Load()), args=[ast.Tuple(elts=items, ctx=ast.Load())], keywords=[],
            ))
        elif name in ("APPEND", "APPENDS", "ADDITEMS", "SETITEM", "SETITEMS"):
            items = [stack.pop()] if name == "APPEND" else [stack.pop(), stack.pop()][::-1] if name == "SETITEM" else (
                self._to_mark()
            )
            target = stack[-1]
            if isinstance(target, (ast.List, ast.Set)) and name in ("APPEND", "APPENDS", "ADDITEMS"):
                target.elts.extend(items)
            elif isinstance(target, ast.Dict) and name in ("SETITEM", "SETITEMS"):
                target.keys.extend(items[0::2])
                target.values.extend(items[1::2])
            else:
                raise ValueError(f"{name} on no container of its kind")
        else:
            raise ValueError(f"opcode {name} not followed")

    def _to_mark(self) -> list[ast.expr]:
        index = max((i for i, item in enumerate(self.stack) if item is self.mark), default=-1)
        if index < 0:
            raise IndexError("no mark")
        items = self.stack[index + 1 :]
        del self.stack[index:]
        return items


# ---- `Unpickler.find_class("a.b", "c")`: the import a pickle's GLOBAL makes


def _find_class_route(expr: object, constants: dict[str, Literal]) -> ast.expr | None:
    """`u.find_class("a.b", "c")`, on any unpickler (a subclass's override too): a.b's c."""
    if not (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "find_class"
        and len(expr.args) == 2 and not expr.keywords
    ):
        return None
    module, name = (_spelled_text(arg, constants) for arg in expr.args)
    if module is None or name is None:
        return None
    parts = [*module.split("."), *name.split(".")]
    if not all(part.isidentifier() for part in parts):
        return None
    return import_route(module, name.split("."), expr)


# ---- a string that spells a door's dotted name, whatever takes it

# A door's dotted name, in the spellings loaders take: `a.b.c`, `a.b:c` (entry points,
# uvicorn, jinja2, pkgutil), `ext://a.b.c` (logging.config's dictConfig), and PyYAML's
# tags that import (`!!python/name:a.b.c`, `!!python/object/apply:a.b.c [args]`)
_EXT = "ext://"
_YAML_TAG = re.compile(r"!!python/(name|module|object|object/new|object/apply):([\w.]+)(?:\s*\[([^\]\[]*)\])?")
_YAML_ARG = re.compile(r"^[\w./-]+$")
# the environment, as a dotted path of os (and its aliases: configbags.migrate.reflection)
_ENV_NAMES = frozenset({"environ", "getenv", "environb", "getenvb"})
_OS_NAMES = frozenset({"os", "_os", "posix", "nt"})
_CONTEXT_GETTERS = frozenset({"get_context", "process_context"})
# `sys.modules` looked up by a module's name: judged as that module already
_MODULE_TABLE = frozenset({"sys.modules.get", "sys.modules.pop", "sys.modules.setdefault"})
# callables whose string arguments are attribute paths, never imports (`attrgetter("a.b")`)
_ATTRIBUTE_PATHS = frozenset({"attrgetter", "getattr", "hasattr", "setattr", "delattr", "methodcaller", "object"})
# a patch of the dict a string names: the door analysis reads `patch.dict("os.environ")`
# itself (writing variables reads none; what entering it gives is the environment)
_PATCHES_BY_NAME = frozenset({"patch.dict", "mock.patch.dict", "unittest.mock.patch.dict"})


def door_names(tree: ast.Module, text: str, settings: ScanSettings) -> str:
    """Put an import route in the place of each string that spells a door's dotted name
    (DoorNames.door), wherever a value goes: an argument of any call (`import_from_string(
    "a.server_args:get_server_args")`, `EntryPoint(value=...)`, `mock.patch(...)`), an
    element of a container there (`DictConfigurator({"env": "ext://os.environ"})`), a
    value a function binds or returns; a module constant (or a table of them) keeps its
    string and the routes it spells are handed, on its line, to a callable no module
    defines, so that what they name is judged there (escapes, `$?`). A string that
    merely mentions a door (a docstring, a log message, a comparison, an attribute path
    given to getattr or attrgetter) is left alone. Only a file whose text quotes such a
    name is walked."""
    doors = DoorNames(settings)
    if not doors.quoted(text):
        return text
    nodes = list(ast.walk(tree))
    constants = _constants(tree, nodes)
    added: dict[int, list[str]] = {}
    module_level = {id(stmt.value) for stmt in tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign))}
    # the importers' own names (`load = importlib.import_module`): their calls are judged
    # by what they spell already (configbags.migrate.reflection)
    importers = {*_local_names(nodes, _IMPORTERS | RESOLVERS), "__import__", *_MODULE_TABLE}

    def routed(expr: object, parent: ast.AST, field: str) -> ast.expr | None:
        if not isinstance(expr, ast.expr) or id(expr) in module_level or not _value_place(parent, field):
            return None
        if isinstance(parent, ast.Call) and (
            _last(parent.func) in _ATTRIBUTE_PATHS or dotted_name(parent.func) in importers | _PATCHES_BY_NAME
        ):
            return None
        spelled = _spelled_text(expr, constants)
        route = doors.route(spelled, expr) if spelled is not None else doors.partly(expr, constants)
        if route is not None:
            added.setdefault(route.lineno, []).append(ast.unparse(route))
        return route

    _replace(nodes, routed)
    # a module constant spelling one: handed on where it is bound
    for index in range(len(tree.body) - 1, -1, -1):
        stmt = tree.body[index]
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        routes = [r for r in (doors.route(s, stmt) for s in _strings_in(stmt.value)) if r is not None]
        if routes:
            handed = ast.Expr(value=ast.Call(func=ast.Name(id=NAMED_BY_A_STRING, ctx=ast.Load()), args=routes, keywords=[]))
            for node in ast.walk(handed):
                ast.copy_location(node, stmt)
            tree.body.insert(index + 1, handed)
            added.setdefault(stmt.lineno, []).append(ast.unparse(handed))
    return _spelled_lines(text, added)


# A callable no module defines: what a module constant spelling a door's name is handed to
NAMED_BY_A_STRING = "__named_by_a_string__"


def _value_place(parent: ast.AST, field: str) -> bool:
    """Is an expression in this place a value handed on or kept (not a docstring, a
    comparison's operand, an f-string's part, a subscript's key, a pattern)?"""
    if isinstance(parent, ast.Call):
        return field == "args"
    if isinstance(parent, ast.keyword):
        return True
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        return field == "elts"
    if isinstance(parent, ast.Dict):
        return field == "values"
    return isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return, ast.NamedExpr, ast.Yield)) and field == "value"


def _last(expr: ast.expr) -> str:
    return dotted_name(expr).rpartition(".")[2]


def _spelled_text(expr: ast.expr, constants: dict[str, Literal]) -> str | None:
    """The string an expression spells: a literal, a module constant, an f-string or `+`
    of those (`f"{PKG}.server_args:get_server_args"`)."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if isinstance(expr, ast.Name):
        value = constants.get(expr.id)
        return value if isinstance(value, str) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _spelled_text(expr.left, constants), _spelled_text(expr.right, constants)
        return None if left is None or right is None else left + right
    if isinstance(expr, ast.JoinedStr):
        parts: list[str] = []
        for part in expr.values:
            inner = part.value if isinstance(part, ast.FormattedValue) else part
            if isinstance(part, ast.FormattedValue) and (part.conversion != -1 or part.format_spec is not None):
                return None
            found = _spelled_text(inner, constants)
            if found is None:
                return None
            parts.append(found)
        return "".join(parts)
    return None


def _added(expr: ast.expr) -> list[ast.expr]:
    """The operands of a chain of `+`, left to right (`[expr]` for anything else)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return [*_added(expr.left), expr.right]
    return [expr]


def _strings_in(value: ast.expr) -> list[str]:
    """The strings of a literal (a table's values too)."""
    return [
        node.value for node in ast.walk(value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and not any(node is key for d in ast.walk(value) if isinstance(d, ast.Dict) for key in d.keys)
    ]


class DoorNames:
    """Which dotted names are doors: the environment (`os.environ`, `os.getenv`, through
    os's aliases), the record's getter, class or dict copies (by their names, in any
    module), a private name or context getter of the record's module (one named like the
    record or a record attribute: `server_args`), any name of a generated `accessors`
    module or of `configbags.runtime`, and a context getter anywhere."""

    def __init__(self, settings: ScanSettings) -> None:
        self.record = frozenset({settings.raw_accessor, settings.record_class, *settings.record_dicts} - {""})
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", settings.record_class).lower()
        self.record_modules = frozenset({*settings.record_attributes, snake} - {""})
        words = sorted({*self.record, *self.record_modules, *_ENV_NAMES, *_CONTEXT_GETTERS, "accessors", "configbags"})
        self._word = re.compile(r"(?:[.:]|(?<=[\"'/]))(?:" + "|".join(re.escape(w) for w in words) + r")")

    def quoted(self, text: str) -> bool:
        """Does the text quote something that may be a door's dotted name: a door's word
        after a `.`, `:`, `/` or a quote, inside a string on its line (an odd number of quotes before
        it; a cheap test, so a quote of another kind only costs a walk)?"""
        if _EXT in text:
            return True
        for match in self._word.finditer(text):
            line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
            if (line.count('"') + line.count("'")) % 2:
                return True
        return False

    def route(self, spelled: str, at: ast.AST) -> ast.expr | None:
        """The import route a string stands for, where it spells a door's dotted name."""
        text = spelled.strip()
        if "!!python/" in text:
            return self._yaml_route(text, at)
        if text.startswith(_EXT):
            text = text[len(_EXT):]
        split = self._split(text)
        if split is None or not self.door(*split):
            return None
        return import_route(*split, at)

    @staticmethod
    def _split(text: str) -> tuple[str, list[str]] | None:
        if ":" in text:
            module, _, rest = text.partition(":")
            attributes = rest.split(".") if rest else []
        else:
            module, _, last = text.rpartition(".")
            attributes = [last]
        if not module or not all(part.isidentifier() for part in (*module.split("."), *attributes)):
            return None
        return module, attributes

    def door(self, module: str, attributes: Sequence[str]) -> bool:
        parts = [*module.split("."), *attributes]
        for index, part in enumerate(parts):
            if part in _OS_NAMES and index + 1 < len(parts) and parts[index + 1] in _ENV_NAMES:
                return True  # `os.environ`, `tempfile._os.getenv`, `posix.environ`
        if not attributes:
            return False
        if attributes[0] in self.record or attributes[0] in _CONTEXT_GETTERS:
            return "multiprocessing" not in parts  # `multiprocessing.get_context` is no config context
        modules = module.split(".")
        if "accessors" in modules[1:] or module.startswith("configbags.runtime"):
            return True
        return modules[-1] in self.record_modules and len(modules) > 1 and attributes[0].startswith("_")

    def partly(self, expr: ast.expr, constants: dict[str, Literal]) -> ast.expr | None:
        """A name built at run time under a module holding doors, in a loader's spelling
        (`f"a.server_args:{name}"`, `f"pkg.accessors:get_{ns}"`, `"ext://os." + what`): an
        import by a name the module does not spell, `__import__(expr)`, which is `$?`
        (configbags.migrate.reflection)."""
        parts = expr.values if isinstance(expr, ast.JoinedStr) else _added(expr)
        prefix = ""
        for part in parts:
            found = _spelled_text(part, constants)
            if found is None:
                break
            prefix += found
        else:
            return None
        # `a.b:{name}` or `ext://a.b.{name}` only: a dotted `f"a.server_args.{x}"` is as
        # often a logger's name (a resolver given one is `$?` already)
        if prefix.startswith(_EXT):
            module = prefix[len(_EXT):].rpartition(".")[0]
        elif ":" in prefix:
            module = prefix.partition(":")[0]
        else:
            return None
        if not module or not all(p.isidentifier() for p in module.split(".")) or not self.holds_doors(module):
            return None
        route = ast.Call(func=ast.Name(id="__import__", ctx=ast.Load()), args=[expr], keywords=[])
        ast.copy_location(route, expr)
        ast.copy_location(route.func, expr)
        return route

    def holds_doors(self, module: str) -> bool:
        """Is `module` one whose names may be doors: os (or an alias of it), the record's
        module, a generated accessors module, the runtime's?"""
        modules = module.split(".")
        return (
            modules[-1] in _OS_NAMES or module.startswith("configbags.runtime") or "accessors" in modules[1:]
            or (len(modules) > 1 and modules[-1] in self.record_modules)
        )

    def _yaml_route(self, text: str, at: ast.AST) -> ast.expr | None:
        """What PyYAML's unsafe loaders build of a document's tags that import: the route
        (`!!python/name:`), called with its plain arguments (`!!python/object/apply:os.getenv
        [SGLANG_PAGE_SIZE]`); several, or one inside a document, are handed to NAMED_BY_A_STRING."""
        built: list[ast.expr] = []
        for match in _YAML_TAG.finditer(text):
            kind, name, args = match.groups()
            split = self._split(name) if kind != "module" else (name, [])
            if split is None or not self.door(*split):
                continue
            route = import_route(*split, at)
            if kind in ("object/apply", "object/new") and args is not None:
                items = [item.strip().strip("'\"") for item in args.split(",") if item.strip()]
                if all(_YAML_ARG.match(item) for item in items):
                    route = ast.Call(func=route, args=[ast.Constant(item) for item in items], keywords=[])
                    ast.copy_location(route, at)
                    for node in route.args:
                        ast.copy_location(node, at)
            built.append(route)
        if not built:
            return None
        if len(built) == 1 and text.startswith("!!python/"):
            return built[0]
        handed = ast.Call(func=ast.Name(id=NAMED_BY_A_STRING, ctx=ast.Load()), args=built, keywords=[])
        for node in (handed, handed.func):
            ast.copy_location(node, at)
        return handed


# ---- a string annotation that calls: code that `typing.get_type_hints` and
# `inspect.get_annotations(eval_str=True)` (and pydantic, FastAPI, typer) evaluate

# an annotation spelled as a string holding a call (`x: "get_server_args().tp_size"`)
_CALLING_ANNOTATION = re.compile(r"""(?::|->)\s*[rRuU]?["'][^"'\n]*\(""")


def string_annotations(tree: ast.Module, text: str, raw_accessor: str = "") -> str:
    """Put in the place of each string annotation that holds a call, or names the raw
    accessor or a context getter, the expression it spells (`def g(x:
    "Literal[get_server_args().tp_size]")`, `x: "get_server_args"`): whatever evaluates it
    runs that code or gets that getter, which every analysis then reads where the
    annotation is. A string naming a type (`"ServerArgs"`, `"Optional[Foo]"`) is left as
    it is (the types' analysis reads it). Only a file whose text shows such an annotation
    is walked."""
    getters = {*_CONTEXT_GETTERS, raw_accessor} - {""}
    if _CALLING_ANNOTATION.search(text) is None and not any(
        re.search(r"""(?::|->)\s*[rRuU]?["'][^"'\n]*\b""" + re.escape(getter), text) for getter in getters if getter in text
    ):
        return text
    added: dict[int, list[str]] = {}

    def parsed(annotation: ast.expr | None) -> ast.expr | None:
        if not (isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)):
            return None
        try:
            expr = ast.parse(annotation.value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if not any(
            isinstance(node, ast.Call) or (isinstance(node, ast.Name) and node.id in getters)
            or (isinstance(node, ast.Attribute) and node.attr in getters)
            for node in ast.walk(expr)
        ):
            return None
        for node in ast.walk(expr):
            ast.copy_location(node, annotation)
        added.setdefault(annotation.lineno, []).append(ast.unparse(expr))
        return expr

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = parsed(node.annotation) or node.annotation
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = parsed(node.returns) or node.returns
        elif isinstance(node, ast.AnnAssign):
            node.annotation = parsed(node.annotation) or node.annotation
    return _spelled_lines(text, added)
