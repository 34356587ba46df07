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

Only a file whose text shows a resolver's name (`resolve_name`, `locate`) is walked.
"""

from __future__ import annotations

import ast

from configbags.migrate.holders import dotted_name

# the resolvers, by the module that defines them
RESOLVERS = frozenset({"pkgutil.resolve_name", "pydoc.locate"})
_WORDS = ("resolve_name", "locate")


def desugar(tree: ast.Module, text: str) -> str:
    """Replace in `tree` (in place) each resolver call that spells its name by the import
    route it stands for; return `text` with that route's spelling added at the end of the
    call's line (the lines stay the parser's)."""
    if not any(word in text for word in _WORDS):
        return text
    nodes = list(ast.walk(tree))
    names = _resolver_names(nodes)
    if not names:
        return text
    constants = _constants(tree, nodes)
    added: dict[int, list[str]] = {}
    for node in nodes:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    route = _route(item, names, constants)
                    if route is not None:
                        value[index] = route
                        added.setdefault(route.lineno, []).append(ast.unparse(route))
            else:
                route = _route(value, names, constants)
                if route is not None:
                    setattr(node, field, route)
                    added.setdefault(route.lineno, []).append(ast.unparse(route))
    if not added:
        return text
    lines = text.split("\n")
    for line, spellings in added.items():
        if 0 < line <= len(lines):
            lines[line - 1] += " " + " ".join(spellings)
    return "\n".join(lines)


def _resolver_names(nodes: list[ast.AST]) -> dict[str, str]:
    """The dotted local spellings of the resolvers (`pkgutil.resolve_name`, `pk.resolve_name`
    after `import pkgutil as pk`, `load_obj` after `from pkgutil import resolve_name as
    load_obj`, a name bound to one of those), wherever the module binds them (a may-alias)."""
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = alias.name
                if module in ("pkgutil", "pydoc"):
                    for resolver in RESOLVERS:
                        home, _, attr = resolver.partition(".")
                        if home == module:
                            found[f"{alias.asname or module}.{attr}"] = resolver
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ("pkgutil", "pydoc"):
            for alias in node.names:
                resolver = f"{node.module}.{alias.name}"
                if resolver in RESOLVERS:
                    found[alias.asname or alias.name] = resolver
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


def _constants(tree: ast.Module, nodes: list[ast.AST]) -> dict[str, str]:
    """Module-level names bound once, to a string literal, and never bound again anywhere
    in the module (`ARGS_HOOK = "a.b:c"`)."""
    literal = {
        target.id: node.value.value
        for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)
    }
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


def _route(expr: object, names: dict[str, str], constants: dict[str, str]) -> ast.expr | None:
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
    elif isinstance(first, ast.Name) and first.id in constants:
        name = constants[first.id]
    else:
        return None
    module, attributes = _split(name, resolver)
    if module is None:
        return None
    fromlist: list[ast.expr] = [ast.Constant(attributes[0])] if attributes else []
    route: ast.expr = ast.Call(
        func=ast.Name(id="__import__", ctx=ast.Load()),
        args=[ast.Constant(module)],
        keywords=[ast.keyword(arg="fromlist", value=ast.List(elts=fromlist, ctx=ast.Load()))] if fromlist else [],
    )
    for attribute in attributes:
        route = ast.Attribute(value=route, attr=attribute, ctx=ast.Load())
    for node in ast.walk(route):
        ast.copy_location(node, expr)
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


