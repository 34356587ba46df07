"""Second getters of the record's home module (excluded from the scan; its source is read
only for what it offers importers, configbags.migrate.flows.HomeFacts).

A function there gives the record to every importer when it returns what the raw accessor
returns, in any of the shapes an engine writes it: a holder of the record, a call of the raw
accessor or of another such getter (decorated or not: `@functools.lru_cache def
get_args(): return get_server_args()`, or a method: `ServerArgs.instance()`), a copy of any
of these (`copy.deepcopy(_GLOBAL_SERVER_ARGS)`, `dataclasses.replace(...)`), whose fields
are the published values, or a cast of one (`typing.cast(ServerArgs, _G)`: the value
itself). A function returning the record dict (`return global_server_args_dict`, or a
module-level name bound to it) gives the dict.

The holders are where the home keeps the record: what the raw accessor returns, and
wherever a function stores the record (the setter's parameter, `set_global_server_args(a)`,
or one annotated as the record, or one stored where the record is): a global bound under
`global`; a slot of a module dict (`_STATE["args"] = a`, read `_STATE["args"]` or
`_STATE.get("args")`); an attribute of a module-level class or object (`ServerArgs._instance
= a` or `cls._instance = a` in its classmethod, a `threading.local()`'s `_LOCAL.args = a`, a
`SimpleNamespace`'s `STATE.args = a`, `setattr(...)`, read by `getattr(...)` too); a
`ContextVar` it `.set(a)`s, read by `.get()`. Importers read the holders directly as well
(`STATE.args.page_size`, `SERVER_ARGS_VAR.get().page_size`: HomeGetters.holders and the
`.get` getters). The home's other globals, attributes and variables are not the record.

A function returning a dict view of the record (`dataclasses.asdict(_G)`, `vars(_G)`,
`MappingProxyType(vars(_G))`) gives the record dict too. Besides globals (`globals()["ARGS"]
= a` among them), slots and attributes, the setter keeps the record in a module object it
hands it to by a method (`PUBLISHED.append(a)`, `STATE.update(args=a)`, `_BOX.put(a)`, read
back by `_BOX.get()`: a slot of that object), and a module `__getattr__` giving the record
makes the names it shows holders.

The home is not scanned, so what its code reads off the record for a caller is charged
to the call site (HomeReads): a function reaching the record and giving something else (a
leaf, `get_page_size()`; the record in a container, a `yield`, a call: `*`), a function or
method handed the record (`page_of(rec)`: what it reads off that parameter), a method of the
record class called on it (`rec.describe()`: what it reads off `self`), and a module object
keeping the record where importers' reads of it are not followed (`SLOT[0]`: `*`). A home
class other than the record is a facade: its instances read what its members (its home
bases' too) read, and its members giving the record are getters (`CFG.get`) or, as
properties, holders (`CFG.args`); an alias, a container or a factory of a facade, a leaf
reader or a getter reads what it holds (`CFG2 = CFG`, `GETTERS = {"port": get_port}`,
`def get_cfg(): return Cfg()`, a local or lazy singleton it returns, a slot), a container
also what is put in it later (`GETTERS["port"] = get_port`, a registry decorator), and a
class attribute is a subclass's and an instance's too (`Sub.cfg`, `Holder().cfg`). What a
home function or a facade's property setter writes on the record is a write at each use
(`set_port(1)`) or assignment (`facade.port = 1`): leaves marked WRITES_ON_USE or
WRITES_ON_STORE among the reads.

Deny by default: a value that is the record on one branch only (`a if c else None`, `a or
b`) counts, and a slot read by a key the code does not show counts where any slot of that
dict holds the record.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from configbags.migrate.holders import dotted_name
from configbags.migrate.scanmodel import WRITES_ON_STORE, WRITES_ON_USE, ScanSettings

# calls returning a copy of their first argument, whose fields are the argument's
_COPIES = frozenset({
    "copy.copy", "copy.deepcopy", "copy", "deepcopy", "dataclasses.replace", "replace", "copy.replace", "attrs.evolve",
})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Slot = tuple[str, str | None]  # (module dict, literal key or None for a key not shown)
Attr = tuple[str, str | None]  # (module-level object as dotted, attribute or None for one not shown)
# calls giving a mapping of the record's fields (its `__dict__` or a copy, a read-only view)
_DICT_VIEWS = frozenset({
    "dataclasses.asdict", "asdict", "attrs.asdict", "vars", "dict", "types.MappingProxyType", "MappingProxyType",
})
# `typing.cast(T, x)` is x at run time (`from typing import cast`, `import typing as t`)
_CASTS = frozenset({"cast", "typing.cast", "t.cast", "typing_extensions.cast"})
# calls giving the module itself by its name (`importlib.import_module(__name__)`)
_SELF_IMPORTS = frozenset({"sys.modules.get", "importlib.import_module", "import_module"})
# wrappers of a function whose calls return what it returns (`staticmethod(get_args)` of an alias,
# `functools.lru_cache(maxsize=None)(get_server_args)`), and `functools.partial`
_WRAPPERS = frozenset({
    "staticmethod", "functools.cache", "cache", "functools.lru_cache", "lru_cache",
})
_PARTIALS = frozenset({"functools.partial", "partial"})
# decorators (or class-body wrappers, `args = property(_g)`) making a method an attribute:
# what it returns is what the attribute is
_PROPERTIES = frozenset({"property", "cached_property", "functools.cached_property"})


def _setter(name: str, attributes: tuple[str, ...]) -> bool:
    """Is `name` the setter publishing the record (`set_global_server_args`,
    `set_server_args`, `set_global_server_args_for_scheduler`)? Its parameter is the record."""
    return any(re.fullmatch(rf"set_(global_)?{re.escape(attribute)}(_\w+)?", name) for attribute in attributes)


@attrs.frozen
class HomeGetters:
    """A home module's functions giving the record (methods by qualname, `ServerArgs.instance`,
    and `VAR.get` of a context variable holding it) or the record dict, its module-level
    names bound to the dict, and its holders of the record as importers spell them
    (`_GLOBAL_SERVER_ARGS`, `STATE.args`, `ServerArgs._instance`)."""

    record: frozenset[str]
    dicts: frozenset[str]
    dict_names: frozenset[str]
    holders: frozenset[str] = frozenset()
    reads: HomeReads | None = None


@attrs.frozen
class HomeReads:
    """What the home's code reads off the record for its callers (the home is not scanned,
    so a read there is charged to the call site): `reads`, (name, leaf) of a function
    reaching a holder (`def get_page_size(): return _G.page_size`) or of a module name
    keeping the record where importers' reads of it are not followed (`SLOT[0]`,
    `PUBLISHED[-1]`, `_BOX`: leaf `*`); `params`, (function, position, parameter, leaf) of
    what a function reads off a parameter handed the record (`page_of(sa)`,
    `PortArgs.init_new(server_args)`; position -1 for a keyword-only one); `methods`,
    (method, leaf) of the record class's own methods (`def describe(self)`). A leaf is
    `*` where the body hands the record on (into a container, a call, a `yield`, a
    return of a function that is no getter) or reads it dynamically."""

    reads: frozenset[tuple[str, str]] = frozenset()
    params: frozenset[tuple[str, int, str, str]] = frozenset()
    methods: frozenset[tuple[str, str]] = frozenset()


def _key(expr: ast.expr) -> str | None:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def _globals_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and dotted_name(expr.func) == "globals" and not expr.args


def _self_module(expr: ast.expr) -> bool:
    """Is `expr` the home module itself (`sys.modules[__name__]`, `sys.modules.get(__name__)`,
    `importlib.import_module(__name__)`)? Its attributes are the module's globals."""
    if isinstance(expr, ast.Subscript):
        return dotted_name(expr.value) == "sys.modules" and isinstance(expr.slice, ast.Name) and expr.slice.id == "__name__"
    return (
        isinstance(expr, ast.Call) and dotted_name(expr.func) in _SELF_IMPORTS and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Name) and expr.args[0].id == "__name__"
    )


def _namespace(expr: ast.expr) -> bool:
    """Is `expr` the module's globals as a dict (`globals()`, `vars(sys.modules[__name__])`,
    `sys.modules[__name__].__dict__`)?"""
    if isinstance(expr, ast.Attribute):
        return expr.attr == "__dict__" and _self_module(expr.value)
    if isinstance(expr, ast.Call) and dotted_name(expr.func) == "vars":
        return len(expr.args) == 1 and _self_module(expr.args[0])
    return _globals_call(expr)


def _global_spelled(expr: ast.expr) -> str | None:
    """The global `expr` reads through the module itself (`globals()["_G"]`,
    `globals().get("_G")`, `getattr(sys.modules[__name__], "_G")`,
    `sys.modules[__name__]._G`): its name, "" for a name the code does not show, or None
    (not such a spelling)."""
    if isinstance(expr, ast.Attribute) and _self_module(expr.value):
        return expr.attr
    if isinstance(expr, ast.Subscript) and _namespace(expr.value):
        return _key(expr.slice) or ""
    if isinstance(expr, ast.Call) and expr.args:
        if dotted_name(expr.func) == "getattr" and len(expr.args) >= 2 and _self_module(expr.args[0]):
            return _key(expr.args[1]) or ""
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" and _namespace(expr.func.value):
            return _key(expr.args[0]) or ""
    return None


def _functions_named(value: ast.expr) -> list[ast.expr]:
    """What a module- or class-level binding makes its name as a function: the functions
    (or lambdas) `value` is, through the wrappers keeping what they call
    (`staticmethod(f)`, `functools.lru_cache(maxsize=None)(f)`, `functools.partial(f)`) and
    branches (`f if c else g`: deny by default, either)."""
    if isinstance(value, ast.IfExp):
        return [*_functions_named(value.body), *_functions_named(value.orelse)]
    if isinstance(value, ast.BoolOp):
        return [found for each in value.values for found in _functions_named(each)]
    if isinstance(value, ast.Call) and value.args:
        func = value.func
        name = dotted_name(func.func) if isinstance(func, ast.Call) else dotted_name(func)
        if name in _PARTIALS or (name in _WRAPPERS and len(value.args) == 1):
            return _functions_named(value.args[0])
        return []
    return [value] if isinstance(value, (ast.Name, ast.Attribute, ast.Lambda)) else []


def _as_function(name: str, lam: ast.Lambda) -> ast.FunctionDef:
    """A lambda bound to a name (`current = lambda: _G`) as the `def` it is."""
    function = ast.FunctionDef(name, lam.args, [ast.Return(lam.body)], [], None)
    return ast.copy_location(function, lam)


def _bindings(body: Sequence[ast.stmt]) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of each plain binding in a module or class body (`a = b`, `a: T = b`,
    `a, b = c, d`)."""
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            yield node.target.id, node.value
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and (
                    len(target.elts) == len(node.value.elts)
                ):
                    for part, value in zip(target.elts, node.value.elts, strict=True):
                        if isinstance(part, ast.Name):
                            yield part.id, value


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
    """What a home function's body shows, walked once: its assignments and the calls it
    makes as statements (`VAR.set(a)`, `setattr(...)`; nested functions and classes left
    out), every value it returns (theirs too: deny by default), the names it declares
    global, and its parameters (those annotated as the record apart). A method knows its
    class and the parameter naming it or its instance (`cls`, `self`; none when static)."""

    assigns: tuple[ast.Assign, ...]
    calls: tuple[ast.Call, ...]
    returns: tuple[ast.expr | None, ...]
    declared: frozenset[str]
    parameters: frozenset[str]
    annotated: frozenset[str]
    first: str | None  # the first positional parameter (the setter's record)
    owner: str | None = None  # the class of a method
    this: str | None = None  # its `cls` or `self`
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    # the parameters a caller's positional arguments fill (a classmethod's `cls` apart)
    positional: tuple[str, ...] = ()
    kind: str = "function"  # "function", "static", "class" or "instance" (a method)
    prop: bool = False  # a property (`@property`, `cached_property`, `property(_g)`)
    setter: bool = False  # a property's setter or deleter (`@port.setter`)

    @classmethod
    def of(
        cls, function: ast.FunctionDef | ast.AsyncFunctionDef, record_class: str, owner: str | None = None,
        wrapper: str | None = None,
    ) -> _Body:
        assigns: list[ast.Assign] = []
        calls: list[ast.Call] = []
        returns: list[ast.expr | None] = []
        declared: set[str] = set()
        for node, own in _walk(function):
            if isinstance(node, ast.Return):
                returns.append(node.value)
            elif own and isinstance(node, ast.Assign):
                assigns.append(node)
                if isinstance(node.value, ast.Call):
                    calls.append(node.value)  # `token = VAR.set(a)`
            elif own and isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                calls.append(node.value)
            elif own and isinstance(node, ast.Global):
                declared.update(node.names)
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        every = [*positional, *arguments.kwonlyargs]
        # (`url = classmethod(_url)` in a class body wraps the function as a decorator does)
        decorators = {dotted_name(d) for d in function.decorator_list} | ({wrapper} if wrapper else set())
        static = "staticmethod" in decorators
        this = positional[0].arg if owner is not None and positional and not static else None
        first = next((arg.arg for arg in positional if arg.arg != this), None)
        kind = "function" if owner is None else "static" if static else "class" if "classmethod" in decorators else "instance"
        filled = tuple(arg.arg for arg in positional)[1 if kind == "class" else 0 :]
        return cls(
            tuple(assigns), tuple(calls), tuple(returns), frozenset(declared),
            frozenset(arg.arg for arg in every),
            frozenset(arg.arg for arg in every if arg.annotation is not None and record_class in ast.unparse(arg.annotation)),
            first, owner, this, function, filled, kind, owner is not None and bool(decorators & _PROPERTIES),
            owner is not None and any(d.endswith((".setter", ".deleter")) for d in decorators),
        )


def _bound_function(
    value: ast.expr, functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], name: str,
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str | None] | None:
    """The function `value` binds as the method `name` (`_url`, `classmethod(_cp)`,
    `staticmethod(_g)`, a lambda: `staticmethod(lambda: _G)`, a property's getter:
    `property(lambda self: _G)`) and the wrapper it is bound through, or None. `functions`
    are the module's, and in a class body those defined above in it (`fetch = get`)."""
    wrapper = None
    if isinstance(value, ast.Call):
        wrapper = dotted_name(value.func)
        if wrapper in _PROPERTIES:
            getter = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "fget"), None)
            if getter is None:
                return None
            value = getter
        elif wrapper in ("classmethod", "staticmethod") and len(value.args) == 1 and not value.keywords:
            value = value.args[0]
        else:
            return None
    if isinstance(value, ast.Lambda):
        return _as_function(name, value), wrapper
    if isinstance(value, ast.Name) and value.id in functions:
        return functions[value.id], wrapper
    return None


# methods of a list, dict or set putting their arguments in it
_FILLING = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"})


def _filled(node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(container, value) of a statement putting a value in a module-level name's slot
    (`T[k] = v`, `T.update(k=v)`, `T.append(v)`, `T.setdefault(k, v)`)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                yield target.value.id, node.value
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _FILLING and isinstance(func.value, ast.Name):
            keyed = func.attr in ("insert", "setdefault", "__setitem__")
            for arg in call.args[1 if keyed else 0 :]:
                yield func.value.id, arg.value if isinstance(arg, ast.Starred) else arg
            for keyword in call.keywords:
                yield func.value.id, keyword.value


def _fills(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """What the module puts in its names' slots after binding them (a table of getters
    filled below its literal: `GETTERS = {}`, `GETTERS["port"] = get_port`), at module
    level or in a function. A function putting its parameter there (a registry
    decorator's `GETTERS[name] = fn`) puts there every module function it decorates
    (`@register("tp")`), deny by default."""
    found: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        for name, value in _filled(node):
            found.setdefault(name, []).append(value)
    functions = [node for node in tree.body if isinstance(node, _FUNCTIONS)]
    for function in functions:
        parameters: set[str] = set()
        local: set[str] = set()
        declared: set[str] = set()
        for inner in ast.walk(function):
            if isinstance(inner, (*_FUNCTIONS, ast.Lambda)):
                arguments = inner.args
                parameters.update(a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs])
            elif isinstance(inner, ast.Global):
                declared.update(inner.names)
            elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                local.add(inner.id)
        for inner in ast.walk(function):
            for name, value in _filled(inner):
                if name in parameters or (name in local and name not in declared):
                    continue  # (a container of the function's own)
                if isinstance(value, ast.Name) and value.id in parameters:
                    found.setdefault(name, []).extend(
                        ast.copy_location(ast.Name(each.name, ast.Load()), each) for each in functions
                        if any(dotted_name(d.func if isinstance(d, ast.Call) else d) == function.name for d in each.decorator_list)
                    )
                else:
                    found.setdefault(name, []).append(value)
    return found


_SETTER_MARK = "@setter"  # the qualname suffix of a property's setter (`Cfg.port@setter`)


def _bases(classes: dict[str, ast.ClassDef], name: str) -> list[str]:
    """The home's classes `name` derives from, nearest last (`_Root`, `_Base` for
    `ServerArgs(_Base)`, `_Base(_Root)`; of `S(A, B)`, B before A, as A overrides B), itself
    excluded."""
    found: list[str] = []
    stack = [name]
    while stack:
        node = classes.get(stack.pop())
        for base in node.bases if node is not None else []:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in found and base.id != name:
                found.insert(0, base.id)
                stack.append(base.id)
    return found


def _methods(
    tree: ast.Module, record_class: str, functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
) -> dict[str, _Body]:
    """The home's classes' methods by qualname: each `def` in a class body, a module function
    (`functions`, by name) or a lambda bound there (`url = _url`, `current = classmethod(_cp)`)
    or attached after the class (`ServerArgs.url = _url`), all of which Python calls as
    methods. The record class has
    its bases' methods too (`class ServerArgs(_Base)`): `self` in them is the record when
    called on it, and so has any other class (`class Cfg(_Base)`: a facade's members).
    A name bound in a class body to a `def` above it there is that method under a second
    name (`fetch = get`). (A later binding of a name replaces an earlier one, as at import;
    a class's own methods override its bases'.)"""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    bodies: dict[str, _Body] = {}

    def add(name: str, value: ast.stmt | ast.expr, as_owner: str, known: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> None:
        if isinstance(value, _FUNCTIONS):
            body = _Body.of(value, record_class, as_owner)
            # (a property's setter is kept beside its getter, not in its place)
            bodies[f"{as_owner}.{name}{_SETTER_MARK if body.setter else ''}"] = body
        elif isinstance(value, ast.expr) and (bound := _bound_function(value, known, name)) is not None:
            bodies[f"{as_owner}.{name}"] = _Body.of(bound[0], record_class, as_owner, bound[1])

    def members(node: ast.ClassDef, as_owner: str) -> None:
        known = dict(functions)  # (the class body's own defs shadow the module's)
        for item in node.body:
            if isinstance(item, _FUNCTIONS):
                add(item.name, item, as_owner, known)
                known[item.name] = item
            elif isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                add(item.targets[0].id, item.value, as_owner, known)

    for node in classes.values():
        for base in _bases(classes, node.name):
            members(classes[base], node.name)
        members(node, node.name)
    for item in tree.body:
        if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Attribute):
            target = item.targets[0]
            if isinstance(target.value, ast.Name) and target.value.id in classes:
                add(target.attr, item.value, target.value.id, functions)
    return bodies


class _Home:
    """The fixpoint over one home module's functions and its classes' methods."""

    def __init__(self, tree: ast.Module, settings: ScanSettings) -> None:
        self.settings = settings
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.aliases: dict[str, set[str]] = {}
        self.containers: dict[str, ast.expr] = {}
        self._module_bindings(tree)
        # what is put in a module container after its literal (`GETTERS["port"] = get_port`)
        self.fills: dict[str, list[ast.expr]] = _fills(tree)
        functions = {f.name: f for f in self.functions}
        class_aliases = self._class_bindings(tree, functions)
        self.module_level = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))]
        self._instance_names: dict[str, set[str]] | None = None
        self.classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        # (class, metaclass) of the classes the home makes with a metaclass of its own: the
        # class is an instance of it (`Args['port']` calls `Meta.__getitem__`)
        self.metaclassed = {
            (node.name, keyword.value.id) for node in tree.body if isinstance(node, ast.ClassDef)
            for keyword in node.keywords if keyword.arg == "metaclass" and isinstance(keyword.value, ast.Name)
        }
        # the module's own objects, whose attributes may hold the record (`STATE.args`)
        self.objects: set[str] = {node.name for node in tree.body if isinstance(node, ast.ClassDef)} | {
            target.id for node in self.module_level
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)
        }
        self.bodies = {f.name: _Body.of(f, settings.record_class) for f in self.functions}
        self.bodies.update(_methods(tree, settings.record_class, functions))
        for qualname, targets in class_aliases.items():  # (bound after any def of its name)
            self.aliases[qualname] = targets
            self.bodies.pop(qualname, None)
        # the holders of the record: the globals, module dict slots, attributes of the
        # module's objects and the context variables it is kept in
        self.globals: set[str] = set()
        self.slots: set[Slot] = set()
        self.attrs: set[Attr] = set()
        self.variables: set[str] = set()
        # annotated to return the record (`-> ServerArgs`), whatever the body shows (not a
        # method: `ServerArgs.from_cli(...) -> ServerArgs` builds one, as importers read it)
        self.getters: set[str] = {
            f.name for f in self.functions
            if f.name != settings.raw_accessor and f.returns is not None and settings.record_class in ast.unparse(f.returns)
        }
        self.dict_names: set[str] = set(settings.record_dicts)
        self.dict_getters: set[str] = set()
        # what the raw accessor returns is held, to begin with (the raw accessor an alias
        # too: `get_server_args = _get`)
        for raw in self._resolved(settings.raw_accessor):
            for value in raw.returns:
                self._seed(value, raw, set())

    def _module_bindings(self, tree: ast.Module) -> None:
        """The module's functions, aliases and containers. Second getters need not be a
        `def`: a name bound to a home function (`get_args = get_server_args`, wrapped or not)
        gives what its targets give, and a name bound to a lambda is a function of its own;
        a binding of another value that holds a function (`GETTERS = {"args": ...}`) is a
        container, whose every use is `*` where one gives the record. (A later binding of a
        name replaces an earlier one, as at import: `def get_args` after `get_args =
        get_server_args` is the def.)"""
        for node in tree.body:
            if isinstance(node, _FUNCTIONS):
                self._define(node)
            for name, bound in _bindings([node]):
                named = _functions_named(bound)
                if len(named) == 1 and isinstance(named[0], ast.Lambda):
                    self._define(_as_function(name, named[0]))
                elif named and not any(isinstance(each, ast.Lambda) for each in named):
                    self.functions = [f for f in self.functions if f.name != name]
                    self.aliases[name] = {dotted_name(each) for each in named}
                elif not isinstance(bound, (ast.Constant, ast.Name, ast.Attribute)):
                    self.containers[name] = bound

    def _class_bindings(
        self, tree: ast.Module, functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    ) -> dict[str, set[str]]:
        """The aliases by qualname of the classes' attributes bound to a getter in a shape
        _methods does not take as a method (`get = staticmethod(get_args)` of a module
        alias, `get = staticmethod(functools.cache(get_server_args))`), where no later
        binding replaces them; the classes' containers join the module's."""
        found: dict[str, set[str]] = {}
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        for node in classes.values():
            # a subclass has its home bases' class attributes (`class Sub(Holder)`: `Sub.cfg`),
            # its own binding of a name replacing theirs
            for source in [*(classes[base] for base in _bases(classes, node.name)), node]:
                known = dict(functions)
                for item in source.body:
                    if isinstance(item, _FUNCTIONS):
                        found.pop(f"{node.name}.{item.name}", None)
                        self.containers.pop(f"{node.name}.{item.name}", None)
                        known[item.name] = item
                    for name, bound in _bindings([item]):
                        qualname = f"{node.name}.{name}"
                        found.pop(qualname, None)
                        self.containers.pop(qualname, None)
                        named = _functions_named(bound)
                        if _bound_function(bound, known, name) is not None:
                            continue
                        if named and not any(isinstance(each, ast.Lambda) for each in named):
                            found[qualname] = {dotted_name(each) for each in named}
                        elif not named and not isinstance(bound, (ast.Constant, ast.Name, ast.Attribute)):
                            self.containers[qualname] = bound
        return found

    def _define(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A module-level function (a `def` or a lambda bound to a name) replaces an alias or
        function bound to its name before."""
        self.aliases.pop(function.name, None)
        self.functions = [f for f in self.functions if f.name != function.name] + [function]

    def _resolved(self, name: str) -> list[_Body]:
        """The bodies of the home functions `name` is, through aliases."""
        seen: set[str] = set()
        stack = [name]
        found: list[_Body] = []
        while stack:
            each = stack.pop()
            if each in seen:
                continue
            seen.add(each)
            body = self.bodies.get(each)
            if body is not None:
                found.append(body)
            stack.extend(self.aliases.get(each, ()))
        return found

    def _object(self, expr: ast.expr, body: _Body | None) -> str | None:
        """The module-level object `expr` spells, dotted (`STATE`, `STATE.ns`, `cls` or `self`
        in a method of ServerArgs: `ServerArgs`), or None (a local, a parameter)."""
        name = dotted_name(expr)
        head, dot, rest = name.partition(".")
        if body is not None and body.this is not None and head == body.this:
            return f"{body.owner}{dot}{rest}"
        if head in self.objects and not (body is not None and head in body.parameters):
            return name
        return None

    def _instance_attr(self, expr: ast.Attribute, body: _Body | None) -> bool:
        """`self.args` in a method of a home class an instance of which holds the record
        there (`cfg = Cfg()`, then `cfg.args = _G` in a function): `self` may be that one."""
        if body is None or body.this is None or body.owner is None or body.kind != "instance":
            return False
        if not (isinstance(expr.value, ast.Name) and expr.value.id == body.this):
            return False
        return any(self._attr(name, expr.attr) for name in self._instances().get(body.owner, ()))

    def _attr(self, owner: str | None, attribute: str | None) -> bool:
        if owner is None:
            return False
        if attribute is None:
            return any(name == owner for name, _ in self.attrs)
        return (owner, attribute) in self.attrs or (owner, None) in self.attrs

    def _seed(self, expr: ast.expr | None, body: _Body, seen: set[str]) -> None:
        """Take what the raw accessor returns as a holder (through branches, casts and the
        home's functions it calls, whose returns it gives)."""
        spelled = _global_spelled(expr) if expr is not None else None
        if spelled:
            self.globals.add(spelled)
        elif isinstance(expr, ast.Name):
            self.globals.add(expr.id)
        elif isinstance(expr, ast.Attribute):
            owner = self._object(expr.value, body)
            if owner is not None:
                self.attrs.add((owner, expr.attr))
        elif isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            self.slots.add((expr.value.id, _key(expr.slice)))
        elif isinstance(expr, (ast.Await, ast.NamedExpr)):
            self._seed(expr.value, body, seen)
        elif isinstance(expr, ast.IfExp):
            self._seed(expr.body, body, seen)
            self._seed(expr.orelse, body, seen)
        elif isinstance(expr, ast.BoolOp):
            for value in expr.values:
                self._seed(value, body, seen)
        elif isinstance(expr, ast.Call):
            self._seed_call(expr, body, seen)

    def _seed_call(self, call: ast.Call, body: _Body, seen: set[str]) -> None:
        func = call.func
        if dotted_name(func) in _CASTS and len(call.args) == 2:
            self._seed(call.args[1], body, seen)
        elif isinstance(func, ast.Attribute) and func.attr == "get":
            key = _key(call.args[0]) if call.args else None
            owner = self._object(func.value, body)
            if key is not None and isinstance(func.value, ast.Name):
                self.slots.add((func.value.id, key))  # `_STATE.get("args")`
            elif owner is not None:
                self.variables.add(owner)  # `VAR.get()`, `VAR.get(None)`
        elif dotted_name(func) == "getattr" and len(call.args) >= 2:
            owner = self._object(call.args[0], body)
            if owner is not None:
                self.attrs.add((owner, _key(call.args[1])))
        else:
            called = self._spelled(func, body)
            if called not in seen:  # `return ServerArgs.instance()`: what it returns
                seen.add(called)
                for inner in self._resolved(called):
                    for value in inner.returns:
                        self._seed(value, inner, seen)

    def _spelled(self, func: ast.expr, body: _Body | None) -> str:
        """A called home function or method by qualname (`cls.instance` in a method of
        ServerArgs is `ServerArgs.instance`)."""
        name = dotted_name(func)
        head, dot, rest = name.partition(".")
        if body is not None and body.this is not None and head == body.this and dot:
            return f"{body.owner}.{rest}"
        return name

    def _slot(self, owner: ast.expr, key: ast.expr | None) -> bool:
        if not isinstance(owner, ast.Name):
            return False
        shown = _key(key) if key is not None else None
        if shown is None:
            return any(name == owner.id for name, _ in self.slots)
        return (owner.id, shown) in self.slots or (owner.id, None) in self.slots

    def gives_record(self, expr: ast.expr | None, local: set[str], body: _Body | None = None) -> bool:
        if expr is None:
            return False
        spelled = _global_spelled(expr)
        if spelled is not None:  # (a name not shown: any global the record is kept in)
            return spelled in self.globals if spelled else bool(self.globals)
        if isinstance(expr, ast.Name):
            return expr.id in local or expr.id in self.globals
        if isinstance(expr, ast.Attribute):
            return self._attr(self._object(expr.value, body), expr.attr) or self._instance_attr(expr, body)
        if isinstance(expr, ast.Subscript):
            return self._slot(expr.value, expr.slice)
        if isinstance(expr, (ast.Await, ast.NamedExpr)):
            return self.gives_record(expr.value, local, body)
        if isinstance(expr, ast.IfExp):
            return self.gives_record(expr.body, local, body) or self.gives_record(expr.orelse, local, body)
        if isinstance(expr, ast.BoolOp):
            return any(self.gives_record(value, local, body) for value in expr.values)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "get":
            variable = self._object(func.value, body)
            return (variable is not None and variable in self.variables) or self._slot(func.value, expr.args[0] if expr.args else None)
        name = dotted_name(func)
        if name in _COPIES:
            return bool(expr.args) and self.gives_record(expr.args[0], local, body)
        if isinstance(func, ast.Attribute) and func.attr == "__replace__":
            return self.gives_record(func.value, local, body)  # `_G.__replace__(x=1)`: copy.replace's method
        if name in _CASTS:
            return len(expr.args) == 2 and self.gives_record(expr.args[1], local, body)
        if name == "getattr":
            return len(expr.args) >= 2 and self._attr(self._object(expr.args[0], body), _key(expr.args[1]))
        called = self._spelled(func, body)
        return called == self.settings.raw_accessor or called in self.getters

    def gives_dict(
        self, expr: ast.expr | None, local: set[str], record: set[str] | None = None, body: _Body | None = None,
    ) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in local or expr.id in self.dict_names
        if isinstance(expr, (ast.Await, ast.NamedExpr)):
            return self.gives_dict(expr.value, local, record, body)
        if isinstance(expr, ast.IfExp):
            return self.gives_dict(expr.body, local, record, body) or self.gives_dict(expr.orelse, local, record, body)
        if isinstance(expr, ast.BoolOp):
            return any(self.gives_dict(value, local, record, body) for value in expr.values)
        if not isinstance(expr, ast.Call):
            return False
        name = dotted_name(expr.func)
        if name in _DICT_VIEWS and expr.args:
            # `dataclasses.asdict(_G)`, `vars(_G)`, `MappingProxyType(vars(_G))`: the
            # record's fields by name, read by key like the record dict
            return self.gives_record(expr.args[0], record or set(), body) or self.gives_dict(
                expr.args[0], local, record, body
            )
        return isinstance(expr.func, ast.Name) and expr.func.id in self.dict_getters

    def _store_sites(self, body: _Body) -> Iterator[tuple[tuple[str, Any], ast.expr]]:
        """(holder, value) of each store the function makes: a global it declares, a module
        dict slot, an attribute of a module object (`cls._instance = a`, `setattr(STATE,
        "args", a)`), a context variable (`VAR.set(a)`)."""
        for node in body.assigns:
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in body.declared:
                    yield ("global", target.id), node.value
                elif isinstance(target, ast.Subscript) and _namespace(target.value) and _key(target.slice):
                    yield ("global", _key(target.slice)), node.value  # `globals()["ARGS"] = a`
                elif isinstance(target, ast.Attribute) and _self_module(target.value):
                    yield ("global", target.attr), node.value  # `sys.modules[__name__].ARGS = a`
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    yield ("slot", (target.value.id, _key(target.slice))), node.value
                elif isinstance(target, ast.Attribute) and (owner := self._object(target.value, body)) is not None:
                    yield ("attr", (owner, target.attr)), node.value
        yield from self._call_stores(body)

    def _call_stores(self, body: _Body) -> Iterator[tuple[tuple[str, Any], ast.expr]]:
        """(holder, value) of each store the function makes by a call (`VAR.set(a)`,
        `setattr(...)`, a module object's method)."""
        for call in body.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "set" and len(call.args) == 1:
                owner = self._object(func.value, body)
                if owner is not None:
                    yield ("variable", owner), call.args[0]
            elif dotted_name(func) == "setattr" and len(call.args) == 3 and _self_module(call.args[0]):
                if (key := _key(call.args[1])) is not None:
                    yield ("global", key), call.args[2]
            elif dotted_name(func) == "setattr" and len(call.args) == 3:
                owner = self._object(call.args[0], body)
                if owner is not None:
                    yield ("attr", (owner, _key(call.args[1]))), call.args[2]
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                func.value.id in self.objects and func.value.id not in body.parameters
            ):
                # any other method of a module object handed the record keeps it there, in
                # a slot: `PUBLISHED.append(a)`, `STATE.update(args=a)`, `_BOX.put(a)`
                # (read back by `_BOX.get()` or `PUBLISHED[-1]`)
                for keyword in call.keywords:
                    yield ("slot", (func.value.id, keyword.arg)), keyword.value
                shown = _key(call.args[0]) if func.attr in ("setdefault", "__setitem__") and call.args else None
                for arg in call.args:
                    yield ("slot", (func.value.id, shown)), arg.value if isinstance(arg, ast.Starred) else arg

    def _held(self, kind: str) -> set[Any]:
        held: dict[str, set[Any]] = {"global": self.globals, "slot": self.slots, "attr": self.attrs, "variable": self.variables}
        return held[kind]

    def _holds(self, holder: tuple[str, Any]) -> bool:
        return holder[1] in self._held(holder[0])

    def _add(self, holder: tuple[str, Any]) -> bool:
        if self._holds(holder):
            return False
        self._held(holder[0]).add(holder[1])
        return True

    def _record_parameters(self, body: _Body, name: str) -> set[str]:
        """Parameters annotated as the record, the setter's (`set_global_server_args(a)`), and
        those the function stores where the record is held (`_GLOBAL_SERVER_ARGS = a`):
        what it stores is the record."""
        found = set(body.annotated)
        if body.owner is None and body.first is not None and _setter(name, self.settings.record_attributes):
            found.add(body.first)
        for holder, value in self._store_sites(body):
            if isinstance(value, ast.Name) and value.id in body.parameters and self._holds(holder):
                found.add(value.id)
        return found

    def _locals(self, body: _Body) -> tuple[set[str], set[str]]:
        """(names bound to the record, names bound to the dict) in the function."""
        record: set[str] = set()
        dicts: set[str] = set()
        for _ in range(2):  # `a = get_server_args(); b = a`
            for node in body.assigns:
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in body.declared:
                        if self.gives_record(node.value, record, body):
                            record.add(target.id)
                        if self.gives_dict(node.value, dicts, record, body):
                            dicts.add(target.id)
        return record, dicts

    def _stores(self, name: str, body: _Body, record: set[str]) -> bool:
        """Record the holders the function stores the record in."""
        changed = False
        values = record | self._record_parameters(body, name)
        for holder, value in self._store_sites(body):
            if self.gives_record(value, values, body):
                changed |= self._add(holder)
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
        raw = self.settings.raw_accessor
        for alias, targets in self.aliases.items():
            if alias not in self.getters and any(each == raw or each in self.getters for each in targets):
                self.getters.add(alias)
                changed = True
            if alias not in self.dict_getters and targets & self.dict_getters:
                self.dict_getters.add(alias)
                changed = True
        for name, body in self.bodies.items():
            record, dicts = self._locals(body)
            changed |= self._stores(name, body, record)
            if name == self.settings.raw_accessor:
                continue
            if name not in self.getters and any(self.gives_record(value, record, body) for value in body.returns):
                self.getters.add(name)
                changed = True
            if name not in self.dict_getters and any(self.gives_dict(value, dicts, record, body) for value in body.returns):
                self.dict_getters.add(name)
                changed = True
        return self._facade_holders() or changed

    # ---- what the home's code reads off the record (HomeReads)

    def _is_record(self, node: ast.expr, roots: set[str], body: _Body) -> bool:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            return False
        return self.gives_record(node, roots, body)

    def _aliases(self, body: _Body, start: set[str]) -> set[str]:
        """`start` and the names the function binds to one of them (`b = sa`)."""
        found = set(start)
        for _ in range(2):
            for node in body.assigns:
                if self.gives_record(node.value, found, body):
                    found.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in body.declared)
        return found

    def leaves(self, body: _Body, roots: set[str]) -> set[str]:
        """The leaves `body` reads off the record (what the home holds, or `roots`): an
        attribute read by name is that leaf; a test (`is None`, `if a:`), a store in a
        holder or a binding to a name reads nothing; any other use (handed to a call, put
        in a container, returned, yielded, a method called) reads `*`."""
        function = body.function
        if function is None:
            return set()
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(function):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        stored = {id(value) for _, value in self._store_sites(body)}
        found: set[str] = set()
        for node in ast.walk(function):
            if not isinstance(node, ast.expr) or not self._is_record(node, roots, body):
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.expr) and self._is_record(parent, roots, body):
                continue  # a part of a larger one (`a or b`, `copy.copy(_G)`)
            found |= self._use(node, parent, parents, stored)
            if "*" in found:
                break
        return found

    def _use(self, node: ast.expr, parent: ast.AST | None, parents: dict[int, ast.AST], stored: set[int]) -> set[str]:
        if isinstance(parent, ast.Attribute):
            if not isinstance(parent.ctx, ast.Load):
                return set()  # a write, no read
            grand = parents.get(id(parent))
            if isinstance(grand, ast.Call) and grand.func is parent:
                return {"*"}  # `self.url()`: a method, reading what it likes
            return set() if parent.attr == "__class__" else {parent.attr}
        if isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            return set()
        if isinstance(parent, (ast.If, ast.While, ast.Assert)) and parent.test is node:
            return set()  # (a dataclass has no `__bool__`: truthiness reads nothing)
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            return set()
        if id(node) in stored or isinstance(parent, ast.Expr):
            return set()
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node and all(
            isinstance(target, ast.Name) for target in (parent.targets if isinstance(parent, ast.Assign) else [parent.target])
        ):
            return set()  # bound to a name, followed as an alias
        if isinstance(parent, ast.Call) and dotted_name(parent.func) == "isinstance":
            return set()
        if isinstance(parent, ast.Call) and dotted_name(parent.func) == "type" and len(parent.args) == 1:
            return set()  # `type(_G).__name__`: its class, as `_G.__class__`, no field
        return {"*"}

    def _getattr_names(self) -> set[str]:
        """The names a module `__getattr__` (PEP 562) serves that it shows (`if name ==
        "ARGS"`, `name in ("ARGS", "SA")`, a dict's keys), where it gives the record."""
        body = self.bodies.get("__getattr__")
        if body is None or body.function is None or "__getattr__" not in self.getters:
            return set()
        return {
            node.value for node in ast.walk(body.function)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier()
        }

    def _getattr_reads(self) -> set[tuple[str, str]]:
        """A module `__getattr__` (PEP 562) giving something other than the record reads,
        at each name it shows (`if name == "PORT": return _G.port`), what its body reads off
        the record (`S.PORT` reads `port`)."""
        body = self.bodies.get("__getattr__")
        if body is None or body.function is None or "__getattr__" in self.getters:
            return set()
        leaves = self.leaves(body, self._locals(body)[0])
        shown = {
            node.value for node in ast.walk(body.function)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier()
        }
        return {(name, leaf) for name in shown for leaf in leaves}

    def reads(self) -> HomeReads:
        raw = self.settings.raw_accessor
        reads: set[tuple[str, str]] = set()
        params: set[tuple[str, int, str, str]] = set()
        methods: set[tuple[str, str]] = set()
        setters: set[tuple[str, str]] = set()
        for name, body in self.bodies.items():
            function = body.function
            if function is None:
                continue
            if body.setter:
                # `facade.port = 1`: what the setter writes (and reads) off the record
                record, _ = self._locals(body)
                setters.update((name.removesuffix(_SETTER_MARK), leaf) for leaf in self.written(body, record))
                continue
            if name != raw and name not in self.getters and name not in self.dict_getters and name != "__getattr__":
                record, _ = self._locals(body)
                reads.update((name, leaf) for leaf in self.leaves(body, record))
                reads.update((name, WRITES_ON_USE + leaf) for leaf in self.written(body, record))
            if body.kind == "instance" and body.owner == self.settings.record_class and body.this is not None:
                # (dunders too: Python calls them for syntax, `rec[k]`, `len(rec)`, `with rec`)
                if not body.prop:
                    found = self.leaves(body, self._aliases(body, {body.this})) | _through_super(function)
                    methods.update((name.rpartition(".")[2], leaf) for leaf in found)
                continue
            arguments = function.args
            every = [*body.positional, *(arg.arg for arg in arguments.kwonlyargs)]
            for parameter in every:
                if parameter == body.this and body.kind == "class":
                    continue
                position = body.positional.index(parameter) if parameter in body.positional else -1
                found = self.leaves(body, self._aliases(body, {parameter}))
                params.update((name, position, parameter, leaf) for leaf in found)
        # module names keeping the record where an importer's read of them is not
        # followed (a slot by index or key, a box's method): any use of one reads `*`
        reads.update((owner, "*") for owner, _ in self.slots if owner in self.objects)
        reads |= self._facades(reads)
        self._spread(reads, params)
        # a class attribute is an instance's too (`Holder().cfg`, `Sub().cfg` of a base's)
        reads |= {
            (f"{head}().{rest}", leaf) for name, leaf in reads
            for head, _, rest in [name.partition(".")]
            if head in self.classes and rest and (name in self.containers or name in self.aliases)
        }
        reads |= self._getattr_reads()
        for cls, names in self._instances().items():
            reads.update(
                (f"{each}.{qualname.partition('.')[2]}", WRITES_ON_STORE + leaf) for qualname, leaf in setters
                if qualname.partition(".")[0] == cls for each in names
            )
        return HomeReads(frozenset(reads), frozenset(params), frozenset(methods))

    def written(self, body: _Body, roots: set[str]) -> set[str]:
        """The leaves `body` writes on the record (`_G.port = p`, `_G.port += 1`, `del
        _G.port`), the record a holder or one of `roots`: a write the caller makes, the home
        not being scanned."""
        if body.function is None:
            return set()
        return {
            node.attr for node in ast.walk(body.function)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
            and self.gives_record(node.value, roots, body)
        }

    def _spread(self, reads: set[tuple[str, str]], params: set[tuple[str, int, str, str]]) -> None:
        """An alias reads what its targets read (`page = get_page_size`, `cfg2 = cfg`, a
        bound method `port_of = cfg.port`), a container what the functions, facades and
        lambdas it keeps read (`GETTERS = {"port": get_port}`, `FACADES = [Cfg()]`), and a
        factory what the facade or function it returns reads (`def get_cfg(): return
        Cfg()`): any use of one is a use of what it holds. (`reads` and `params` grow.)"""
        raw = self.settings.raw_accessor
        instances = self._instances()
        of_instance = {name: cls for cls, names in instances.items() for name in names}
        spot = self._spot_leaves(reads)
        factories = [
            (name, body) for name, body in self.bodies.items()
            if body.owner is None and name not in self.getters and name not in self.dict_getters and name != raw
        ]
        for _ in range(len(self.aliases) + len(self.containers) + len(factories) + 1):
            before = len(reads) + len(params)
            by_name: dict[str, set[str]] = {}
            for name, leaf in reads:
                by_name.setdefault(name, set()).add(leaf)
            for alias, targets in self.aliases.items():
                if alias in self.getters or alias in self.dict_getters:
                    continue
                spelled = targets | {self._as_member(each, of_instance) for each in targets}
                reads.update((alias, leaf) for each in spelled for leaf in by_name.get(each, ()))
                params.update((alias, position, parameter, leaf) for name, position, parameter, leaf in list(params) if name in spelled)
            for name, value in self.containers.items():
                if name not in of_instance:
                    for each in [value, *self.fills.get(name, ())]:
                        reads.update((name, leaf) for leaf in self._kept(each, by_name, spot, of_instance))
            for name, body in factories:
                for returned in body.returns:
                    reads.update((name, leaf) for leaf in self._returned(returned, by_name, spot, of_instance, body))
            if len(reads) + len(params) == before:
                break

    def _instances(self) -> dict[str, set[str]]:
        """The module-level names bound to an instance of each home class other than the
        record's (`CFG = Cfg()`, `get_args = _Getter()`, an alias of one: `CFG2 = CFG`): a
        facade importers use. (The module's bindings only: found once.)"""
        if self._instance_names is None:
            self._instance_names = self._find_instances()
        return self._instance_names

    def _find_instances(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {name: set() for name in self.classes - {self.settings.record_class}}
        for name, value in _bindings(self.module_level):
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in found:
                found[value.func.id].add(name)
        for name, meta in self.metaclassed:
            if meta in found:
                found[meta].add(name)
        for _ in range(len(self.aliases)):
            grown = False
            for alias, targets in self.aliases.items():
                for names in found.values():
                    if alias not in names and targets & names:
                        names.add(alias)
                        grown = True
            if not grown:
                break
        return found

    def _members(self, cls: str, kinds: tuple[str, ...] = ("instance",)) -> dict[str, _Body]:
        """The methods of a home class by qualname (its bases' among them: _methods)."""
        return {name: body for name, body in self.bodies.items() if body.owner == cls and body.kind in kinds}

    def _facade_holders(self) -> bool:
        """The getters and holders a facade instance spells (`CFG.get` of `def get(self):
        return _G`; `get_args` of a `__call__` giving the record; `CFG.args` of a property
        giving it, where the record is held, read by leaf and written), as the fixpoint
        finds its members giving the record."""
        changed = False
        for cls, names in self._instances().items():
            for qualname, body in self._members(cls).items():
                if qualname not in self.getters:
                    continue
                method = qualname.rpartition(".")[2]
                if body.prop:
                    for each in names:
                        changed |= self._add(("attr", (each, method)))
                    continue
                spelled = set(names) if method == "__call__" else set() if method.startswith("__") else {
                    f"{each}.{method}" for each in names
                }
                if not spelled <= self.getters:
                    self.getters |= spelled
                    changed = True
        return changed

    def _facades(self, reads: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """What a home class other than the record gives through its instances (the home is
        not scanned, so its instance methods, properties and dunders are charged where an
        instance is used): (name, leaf) reads of the class's name and of each module-level
        instance, any use of which reads what those members read off the record (`*` where
        one gives the record by a dunder, `CFG[k]`, `CFG.x` through `__getattr__`). (The
        members giving the record by name are getters or holders: _facade_holders.)"""
        found: set[tuple[str, str]] = set()
        for cls, names in self._instances().items():
            members = self._members(cls)
            leaves = {leaf for name, leaf in reads if name in members}
            giving = members.keys() & self.getters
            if any(name.rpartition(".")[2].startswith("__") and not name.endswith(".__call__") for name in giving):
                leaves.add("*")  # `CFG[k]`, `CFG.port` through `__getattr__`: the record, by a dunder
            found.update((each, leaf) for each in names for leaf in leaves)
            # `Cfg().get()`: an instance made on the spot, by a spelling no getter names
            found.update((cls, leaf) for leaf in leaves | ({"*"} if giving else set()))
        return found

    def _spot_leaves(self, reads: set[tuple[str, str]]) -> dict[str, set[str]]:
        """What a use of each home class other than the record, or of an instance of it,
        reads where the code does not show which member it reaches (kept in a container,
        made by a factory): what any member reads, `*` where one gives the record or dict."""
        found: dict[str, set[str]] = {}
        for cls in self.classes - {self.settings.record_class}:
            members = self._members(cls, ("instance", "static", "class"))
            leaves = {leaf for name, leaf in reads if name in members}
            if members.keys() & (self.getters | self.dict_getters):
                leaves.add("*")
            found[cls] = leaves
        for name, meta in self.metaclassed:  # (a class is an instance of its metaclass)
            found.setdefault(name, set()).update(found.get(meta, ()))
        return found

    @staticmethod
    def _as_member(spelled: str, of_instance: dict[str, str]) -> str:
        """A method of a facade instance by its class's qualname (`cfg.port` is
        `Cfg.port`), anything else as spelled."""
        head, dot, rest = spelled.partition(".")
        return f"{of_instance[head]}.{rest}" if dot and head in of_instance else spelled

    def _kept(
        self, value: ast.expr, by_name: dict[str, set[str]], spot: dict[str, set[str]], of_instance: dict[str, str],
        body: _Body | None = None,
    ) -> set[str]:
        """What a value keeping home functions, facades or lambdas (held, not called nor
        used there: `Cfg().name()` keeps a name) reads where any of them is used: `*` for
        one giving the record or the dict (a getter, `lambda: _G`), the leaves a leaf reader,
        an alias or a bound method reads (`get_port`, `cfg.port`), what a facade class or
        instance, or one made there (`Cfg()`), reads (_spot_leaves). Names `body` binds or
        takes are its own."""
        giving = {self.settings.raw_accessor, *self.getters, *self.dict_getters}
        own = body.parameters | {t.id for node in body.assigns for t in node.targets if isinstance(t, ast.Name)} if body else set()
        used = {id(node.func) for node in ast.walk(value) if isinstance(node, ast.Call)}
        used |= {id(node.value) for node in ast.walk(value) if isinstance(node, ast.Attribute)}
        found: set[str] = set()
        for node in ast.walk(value):
            if isinstance(node, ast.Lambda):
                if self.gives_record(node.body, set()) or self.gives_dict(node.body, set()):
                    found.add("*")
                else:
                    found |= self.leaves(_Body.of(_as_function("<lambda>", node), self.settings.record_class), set())
                continue
            if id(node) in used:
                continue
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id in spot:
                found |= spot[root.func.id]  # `Cfg()`, `Cfg().get`: a facade made there
                continue
            name = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
            if not name or name.partition(".")[0] in own:
                continue
            if name in giving:
                found.add("*")
            found |= by_name.get(name, set()) | by_name.get(self._as_member(name, of_instance), set()) | spot.get(name, set())
            if name in of_instance:
                found |= spot.get(of_instance[name], set())
        return found

    def _returned(
        self, value: ast.expr | None, by_name: dict[str, set[str]], spot: dict[str, set[str]], of_instance: dict[str, str],
        body: _Body, seen: frozenset[str] = frozenset(),
    ) -> set[str]:
        """What a home function's returned value keeps (_kept) where it is a facade or a
        function handed out, not one's result: a name (`return cfg`, `return get_port`),
        a facade made there (`return Cfg()`), a container of them, either branch."""
        if isinstance(value, (ast.Await, ast.NamedExpr)):
            return self._returned(value.value, by_name, spot, of_instance, body, seen)
        if isinstance(value, ast.IfExp):
            return self._returned(value.body, by_name, spot, of_instance, body, seen) | self._returned(
                value.orelse, by_name, spot, of_instance, body, seen
            )
        if isinstance(value, ast.BoolOp):
            return {leaf for each in value.values for leaf in self._returned(each, by_name, spot, of_instance, body, seen)}
        if isinstance(value, ast.Call) and not (isinstance(value.func, ast.Name) and value.func.id in spot):
            return set()
        if isinstance(value, ast.Name) and value.id not in body.parameters and value.id not in seen:
            # a local (or a global the function binds, a lazy singleton) is what it binds it to
            # (`c = Cfg(); return c`, `if _ONE is None: _ONE = Cfg()`), and a global the
            # module's value (`return _ONE` where the module has `_ONE = Cfg()`, `cfg = Cfg()`)
            bound = [node.value for node in body.assigns for t in node.targets if isinstance(t, ast.Name) and t.id == value.id]
            found = {leaf for each in bound for leaf in self._returned(each, by_name, spot, of_instance, body, seen | {value.id})}
            if value.id in body.declared or not bound:
                found |= self._kept(value, by_name, spot, of_instance)
            return found
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id not in body.parameters:
            # `return FACADES["cfg"]`: what the container keeps (deny by default any slot),
            # not a slot keeping the record (a getter, where it gives it)
            kept = [self.containers[value.value.id]] if value.value.id in self.containers else []
            kept += self.fills.get(value.value.id, [])
            return {leaf for each in kept for leaf in self._kept(each, by_name, spot, of_instance)}
        if isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return self._kept(value, by_name, spot, of_instance, body)
        return set()

    def settle(self) -> HomeGetters:
        while self._round():  # (the sets only grow, bounded by the module's names)
            pass
        # (a global the home binds anywhere, `globals()["ARGS"] = a` too, is importable)
        holders = set(self.globals) | self._getattr_names()
        holders |= {f"{owner}.{attribute}" for owner, attribute in self.attrs if attribute is not None}
        return HomeGetters(
            frozenset(self.getters | {f"{variable}.get" for variable in self.variables}),
            frozenset(self.dict_getters), frozenset(self.dict_names - set(self.settings.record_dicts)),
            frozenset(holders), self.reads(),
        )


# what `super()` in a record method reaches that reads nothing off `self` by name
_SUPER_QUIET = frozenset({"__init__", "__post_init__", "__init_subclass__", "__class__"})


def _through_super(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """`*` where a record method reaches `self` through `super()` (`super().__getattribute__
    ("port")`, a base's method): a read no name shows; an initialiser reads nothing."""
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "super"
            and node.attr not in _SUPER_QUIET
        ):
            return {"*"}
    return set()


def imported_bases(tree: ast.Module, record_class: str) -> frozenset[tuple[int, str, str]]:
    """(level, module, name) of the classes the record class derives from (itself or
    through the home's own bases) that the home imports by name (`from eng.mixin import
    ArgsMixin`, `class ServerArgs(ArgsMixin)`): `self` in their methods is the record
    whenever one is called on it."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    imported = {
        alias.asname or alias.name: (node.level, node.module or "", alias.name)
        for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    found: set[tuple[int, str, str]] = set()
    for name in [record_class, *_bases(classes, record_class)]:
        node = classes.get(name)
        for base in node.bases if node is not None else []:
            if isinstance(base, ast.Name) and base.id not in classes and base.id in imported:
                found.add(imported[base.id])
    return frozenset(found)


def home_getters(tree: ast.Module, settings: ScanSettings) -> HomeGetters:
    """What `tree`, the record's home module, offers importers besides the raw accessor."""
    return _Home(tree, settings).settle()
