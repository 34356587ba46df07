"""The project pass: the read ratchet follows values between modules and functions.

Each file's analysis (configbags.migrate.scan) reads one module. What crosses a module or
function boundary it records as facts (configbags.migrate.scanmodel.FlowFacts): its
imports, the signatures of its functions, which module-level names return the record, a
config context or the environment when called (fetchers), which hold the record
(holders), where the record is handed to a callable (passes), which parameters are used
as an environment variable's name or a child's command, its instances (`ENV = Env()`)
and its string constants that name a declared variable. This pass resolves the imports by module name (a file's module name follows its
path and the `__init__.py` chain; relative imports too), tells each module what its
imports are (configbags.migrate.scanmodel.FlowInput) and which of its parameters receive
the record (arguments mapped onto parameters as Python binds them: a classmethod's `cls`,
a method's `self` bound or, called through its class, passed; a decorated function as
what its decorators return, a class through its metaclass's `__call__`: _Project.through;
a function whose name its scope binds again as none known, unless only to a wrapper of
itself that runs it as it is, `run = torch.compile(run)`: _rebound_defs),
and analyses again the modules whose input changed, until nothing changes.
Then it reports, at the call site (keyed to the caller's file and function):

- the record handed to a callable it cannot resolve to a function of a scanned module
  (a method of an object, a third-party function, a parameter, a nested function): leaf
  `*`, via "escape", form "escapes_call" (the record escapes where no analysis follows);
  callables that provably read nothing (isinstance, id, type, len, ...), a child process,
  and the functions of the record's own home module (excluded from the scan, where the
  record is set) are exempt;
- the record handed to a function that reads it whole or dynamically (a read of `*` in
  that function, allowlisted there or not): leaf `*`, via "helper";
- a function whose call gives the record handed to a decorator that is no function of a
  scanned module (`@describe.register`), or one whose body does not show what it gives or
  keeps the function besides returning it (`PROVIDERS[name] = fn`: _keeps): leaf `*`, via
  "escape", form "escapes_fetcher"; a context's getter so, a `Context.state` readback;
- a declared variable's name passed to a parameter the callee uses as an environment key:
  leaf `$NAME`, via "environ", form "env_helper"; `$?` where the module does not show the
  name passed (deny by default). The callables each module may spell are told to it
  (FlowInput.env_helpers) and the reads found where it calls them (_Uses), with the names
  resolved by the door analysis's resolver (configbags.migrate.doors.ModuleStrings), which
  is also told the other modules' constants the module imports (FlowInput.constants).

A read found through another module is at most "held" (configbags.migrate.scanmodel.
ORIGINS), so `ratchet fix` never rewrites it.

The per-file results stay path-free: a result computed with a FlowInput is cached under
the file's digest and the input's key (configbags.migrate.scancache), so a warm check
(no file changed) analyses nothing again.
"""

from __future__ import annotations

import ast
import bisect
import posixpath
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from configbags.migrate import holders
from configbags.migrate.aliases import (
    BUILDS_NOTHING,
    FUNCTION_ROUTES,
    READS_NOTHING,
    bare_mentions,
    built_origin,
    decorated_passes,
    dotted,
    lines_of,
    mention_lines,
    mentions,
    parsed_parser,
    relative_module,
    spelled_module,
    statement_span,
)
from configbags.migrate.childargv import (
    Command,
    CommandRebuilder,
    command_texts,
    imported_names,
    opaque_command,
    parameters,
    program_shown,
)
from configbags.migrate.childenv import (
    CHILD_PROCESS_PREFIXES,
    MODULE_ARGUMENT,
    PYTHON_MODULE,
    child_files,
    command_fragments,
    command_reads,
    executables,
    named_variables,
    shell_prints_environment,
    stdin_reader,
)
from configbags.migrate.doors import (
    CLASS_BINDS,
    CLASS_BINDS_UNKNOWN,
    CLASS_LOADS,
    KEYWORD_MARK,
    KWARG_MARK,
    VARARG_MARK,
    ModuleStrings,
    command_dumps,
    python_reads_whole,
)
from configbags.migrate.doors import RESOLVER_SCOPES as _RESOLVER_SCOPES
from configbags.migrate.envkeys import (
    ARG,
    UNKNOWN,
    KeyCompiler,
    Template,
    declared_reads,
    depends,
    patterns,
    substitute,
    template_of,
    use_of,
)
from configbags.migrate.envsources import (
    ELEMENT,
    ENV_TABLE,
    annotated_instances,
    carried_helpers,
    dispatches,
    table_entries,
    table_key,
    table_use,
)
from configbags.migrate.homegetters import HomeReads, home_getters, imported_bases
from configbags.migrate.moduleattrs import (
    DISPATCH,
    ENV_DISPATCH,
    MODULE_DISPATCH,
    ServedModule,
    dispatch_body,
    dispatch_facts,
    dispatch_templates,
)
from configbags.migrate.recordkinds import record_kind
from configbags.migrate.resolvers import helper_specs
from configbags.migrate.scanmodel import (
    CONTEXT_READBACK_METHODS,
    DECORATED,
    ENV_UNRESOLVED,
    HOOK,
    PREFIXED_IMPORT,
    STATE_DICT_READBACK,
    STATE_READBACK,
    FileScan,
    FlowFacts,
    FlowInput,
    ScanSettings,
    env_subject,
)
from configbags.migrate.scopes import globals_declared, module_statements

# The constants' shapes of class attribute bindings (doors.ModuleStrings.class_rows)
_CLASS_SHAPES = frozenset({CLASS_BINDS, CLASS_BINDS_UNKNOWN, CLASS_LOADS})
# More rounds than this and the pass stops, reporting a problem (a check fails).
MAX_ROUNDS = 64
# the subclasses followed for one `self.method(...)` call's overrides, at most
_MAX_SUBCLASSES = 256
_CONTEXT_FETCHES = frozenset({"get_context", "process_context"})
_ENV_KEY_READS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__"})
# how deep a copy of the environment is looked into (`dict(ChainMap({}, os.environ))`)
_MAX_COPY_DEPTH = 4
# the runtime's readbacks of the whole state (configbags.runtime.dist), which a project
# module may re-export: any use of one in an importer is a readback
_STATE_READBACKS = frozenset({"state_dict", "export_state"})


# What an importer of a door module by way of another module reads through it, by kind:
# `from pkg.compat import os; os.environ[...]`, `compat.dist.state_dict()`
_DOOR_MODULE_ATTRS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "os": (("environ_holder", ("environ",)), ("environ_getter", ("getenv",))),
    "configbags.runtime.dist": (("readback", ("state_dict", "export_state")),),
}


def _state_home(module: str) -> bool:
    """configbags.runtime.dist, or a private module behind it (`dist._state`)."""
    parts = module.split(".")
    return parts[:3] == ["configbags", "runtime", "dist"] and all(p.startswith("_") for p in parts[3:])

# ---- per-file facts (cheap: only statements whose lines mention a word are walked)


def _mentioned(statements: Iterable[ast.stmt], lines: list[int]) -> Iterator[ast.stmt]:
    """Every statement, at any depth, whose lines mention one of the words of `lines`."""
    for node in statements:
        if not mentions(lines, statement_span(node)):
            continue
        yield node
        for field in _STATEMENT_LISTS:
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                for item in inner:
                    if isinstance(item, ast.stmt):
                        yield from _mentioned([item], lines)
                    elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                        yield from _mentioned(item.body, lines)


def _is_record_param(arg: ast.arg, settings: ScanSettings, annotated: bool = True) -> bool:
    """Does the analysis take `arg` as the record by itself (annotated as the record
    class, or unannotated and named like a record attribute)? `annotated`: whether the
    module mentions the record class at all."""
    if arg.annotation is None:
        return arg.arg in settings.record_attributes
    if not annotated:
        return False
    annotation: ast.expr = arg.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return settings.record_class in annotation.value
    return any(
        (isinstance(sub, ast.Name) and sub.id == settings.record_class)
        or (isinstance(sub, ast.Attribute) and sub.attr == settings.record_class)
        for sub in ast.walk(annotation)
    )


def _signature(
    qualname: str, args: ast.arguments, settings: ScanSettings, *, bound: bool, body: str, annotated: bool,
    unbound: bool = False, decorators: tuple[str, ...] = (),
) -> tuple[Any, ...]:
    """A signature row. `bound`: the first positional parameter is bound by the call
    (`self` of a method called on an instance, `cls` of a classmethod called any way, the
    `self` of a class's `__init__`); `unbound`: a plain method, whose `self` is the first
    argument when it is called through its class (`Worker.tp(w, rec)`)."""
    positional = [*args.posonlyargs, *args.args][1 if bound else 0 :]
    record = [a.arg for a in (*positional, *args.kwonlyargs) if _is_record_param(a, settings, annotated)]
    star = int(args.vararg is not None or args.kwarg is not None)
    return (
        qualname, tuple(a.arg for a in positional), tuple(a.arg for a in args.kwonlyargs), tuple(record), star, body,
        int(unbound), decorators,
    )


# Decorators whose result, called, runs the function with the arguments as given (or that
# make it a method, judged as one): a call of the decorated function is followed into its
# body. Any other decides what the call runs (configbags.migrate.flows._Project.through).
ARGUMENT_TRANSPARENT = frozenset({
    "cache", "lru_cache", "wraps", "staticmethod", "classmethod", "property", "cached_property", "abstractmethod",
    "override", "overload", "final", "no_type_check", "contextmanager", "asynccontextmanager", "total_ordering",
    "dataclass", "runtime_checkable", "unique", "define", "frozen", "mutable", "no_grad", "inference_mode",
    "enable_grad", "compile",  # torch.compile: as `run = torch.compile(run)` (BEHAVIOUR_KEEPING)
})
# A method row's first route where the call binds its `self` or `cls`
BINDS = "^"
# A route's prefix for a decorator named like a well-known pass-through (ARGUMENT_TRANSPARENT)
TRANSPARENT = "~"
# A class row's last route: the metaclass as spelled (`metaclass:Registered`)
METACLASS = "metaclass:"
# What a decorator row (`deco()`, signatures) says where the decorator returns the
# function as it is, or a wrapper that only forwards `*args, **kwargs` to it
AS_IS = "="
# A decorator row's last route where the decorator keeps the function it is given, or what
# a call of it gives, anywhere besides its return (`PROVIDERS[name] = fn`, `RESULTS[k] =
# fn()`): a function giving the record or a context escapes there (_decorated_read); a
# call of the decorated function is followed as the other routes say
KEEPS = "!"
# What a decorator may hand the function it is given and keep nothing of it: tests of it,
# and the helpers that copy its metadata onto a wrapper (`functools.wraps(fn)`)
_KEEP_NOTHING = frozenset({
    "isinstance", "issubclass", "id", "type", "callable", "str", "repr", "wraps", "update_wrapper",
    "iscoroutinefunction", "isasyncgenfunction", "isgeneratorfunction", "signature",
})


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[str, ...]:
    """The decorators that decide what a call of `node` runs, outermost first, as spelled
    (`deco`, `mod.deco`; a factory's call `retry()`; "?" where not a dotted name)."""
    found: list[str] = []
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        name = dotted(call.func if call is not None else decorator)
        spelled = (name or "?") + ("()" if call is not None and name else "")
        # one of the well-known pass-throughs, unless a scanned module defines it (a
        # project's own `cache` is judged by its body): TRANSPARENT-marked
        found.append(TRANSPARENT + spelled if name.rpartition(".")[2] in ARGUMENT_TRANSPARENT else spelled)
    return tuple(found)


def _method_routes(node: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> tuple[str, ...]:
    """A method's decorator routes, led by BINDS where a call binds its first parameter
    (`self`, `cls`): the wrapper a decorator returns receives it first."""
    routes = _decorators(node)
    return (BINDS, *routes) if routes and kind != "static" else routes


def _wrapper_rows(
    node: ast.FunctionDef | ast.AsyncFunctionDef, settings: ScanSettings, annotated: bool, prefix: str = "", depth: int = 0,
) -> list[tuple[Any, ...]]:
    """Rows for what calling the decorator `node` gives, where its body shows it: `deco()`
    for a nested function or class it returns (a wrapper: its parameters, its body), or
    AS_IS where it returns its argument or a wrapper forwarding `*args, **kwargs` to it;
    `deco()()` likewise for a decorator factory's decorator."""
    qualname = f"{prefix}{node.name}"
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    nested = {
        item.name: item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    # cheap first: only a function defining one in its own body, or returning its first
    # parameter at its top level, can be such a decorator
    if not params or not (nested or any(
        isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and stmt.value.id == params[0]
        for stmt in node.body
    )):
        return []
    found: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    unknown = False  # a return of anything else: what a call gives is not shown
    keeps = (KEEPS,) if _keeps(node, params[0]) else ()
    for stmt in _own_statements(node.body):
        if not isinstance(stmt, ast.Return):
            continue
        name = stmt.value.id if isinstance(stmt.value, ast.Name) else ""
        inner = nested.get(name)
        if name and name == params[0]:
            found[f"{qualname}()"].add((f"{qualname}()", (), (), (), 1, "", 0, (AS_IS, *keeps)))
        elif isinstance(inner, ast.ClassDef):
            init = next((
                item for item in inner.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and item.name == "__init__"
            ), None)
            body = f"{qualname}.{name}.__init__"
            found[f"{qualname}()"].add(
                _signature(f"{qualname}()", init.args, settings, bound=True, body=body, annotated=annotated,
                           decorators=keeps)
                if init is not None else (f"{qualname}()", (), (), (), 1, body, 0, keeps)
            )
        elif inner is not None:
            found[f"{qualname}()"].add(
                (f"{qualname}()", (), (), (), 1, "", 0, (AS_IS, *keeps)) if _forwards(inner, params[0]) else _signature(
                    f"{qualname}()", inner.args, settings, bound=False, body=f"{qualname}.{name}", annotated=annotated,
                    decorators=(*_decorators(inner), *keeps),
                )
            )
            if depth == 0:
                # a factory (`def retry(n): def deco(fn): ...; return deco`): `retry()()`
                for row in _wrapper_rows(inner, settings, annotated, f"{qualname}.", depth + 1):
                    if row[0] == f"{qualname}.{name}()":
                        found[f"{qualname}()()"].add((f"{qualname}()()", *row[1:]))
        else:
            unknown = True
    rows: list[tuple[Any, ...]] = []
    for call, outcomes in found.items():
        if unknown or len(outcomes) > 1:
            # several results, or one not shown: no route the scanner can follow ("?")
            rows.append((call, (), (), (), 1, "", 0, ("?",)))
        else:
            rows.extend(outcomes)
    return rows


def _keeps(decorator: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> bool:
    """Does `decorator` keep the function it is given (its parameter `param`), or what a
    call of it gives, anywhere but its return: stored, put in a container, handed to a
    callable (`PROVIDERS[name] = fn`, `REG.append(fn)`, `RESULTS[fn.__name__] = fn()`)? A
    function or class it defines counts as the function (`REG[k] = wrapper`). Its
    attributes read (`fn.__name__`), a test of it (`callable(fn)`, `fn is None`), its
    metadata copied (`@functools.wraps(fn)`), and a call's result returned or dropped
    (`return fn(*args, **kwargs)`, `result = fn(); return result`) keep nothing."""
    parents: dict[int, ast.AST] = {}
    carriers = {param}
    for sub in ast.walk(decorator):
        for child in ast.iter_child_nodes(sub):
            parents[id(child)] = sub
        if sub is not decorator and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            carriers.add(sub.name)
    return any(
        isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in carriers
        and _kept(sub, parents, function=True)
        for sub in ast.walk(decorator)
    )


def _kept(node: ast.expr, parents: Mapping[int, ast.AST], *, function: bool, depth: int = 0) -> bool:
    """Is `node` (the decorated function, or what a call of it gave) kept where it is used?"""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Await):
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, (ast.Return, ast.Expr, ast.Compare)):
        return False  # returned as it is, dropped, or compared (`fn is None`)
    if function:
        if isinstance(parent, ast.Attribute):
            return parent.attr in FUNCTION_ROUTES  # `fn.__name__`; `fn.__wrapped__` is another route to it
        if isinstance(parent, ast.FormattedValue):
            return False
        if isinstance(parent, ast.Call) and parent.func is node:
            return _kept(parent, parents, function=False, depth=depth)
        return not (isinstance(parent, ast.Call) and dotted(parent.func).rpartition(".")[2] in _KEEP_NOTHING)
    if isinstance(parent, ast.Assign) and parent.value is node and depth < 4 and all(
        isinstance(target, ast.Name) for target in parent.targets
    ):
        # `result = fn(*args, **kwargs)`: kept where the name it is bound to is
        names = {target.id for target in parent.targets if isinstance(target, ast.Name)}
        scope = parents.get(id(parent))
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents.get(id(scope))
        return scope is None or any(
            isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in names
            and _kept(sub, parents, function=False, depth=depth + 1)
            for sub in ast.walk(scope)
        )
    return True


def _forwards(wrapper: ast.FunctionDef | ast.AsyncFunctionDef, function: str) -> bool:
    """Does `wrapper` take only `*args, **kwargs` and use them only to call `function`
    with them as they are (`return fn(*args, **kwargs)`)?"""
    args = wrapper.args
    if args.posonlyargs or args.args or args.kwonlyargs or (args.vararg is None and args.kwarg is None):
        return False
    names = {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    forwarded: set[int] = set()
    for sub in ast.walk(wrapper):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == function:
            forwarded.update(id(a.value) for a in sub.args if isinstance(a, ast.Starred))
            forwarded.update(id(k.value) for k in sub.keywords if k.arg is None)
    return all(
        id(sub) in forwarded for sub in ast.walk(wrapper) if isinstance(sub, ast.Name) and sub.id in names
    )


def _method_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """"static", "class" or "plain": which first parameter, if any, a call binds."""
    names = {dotted(d).rpartition(".")[2] for d in node.decorator_list}
    if "staticmethod" in names or node.name == "__new__":
        return "static"
    # `__init_subclass__` and `__class_getitem__` are classmethods without saying so
    if "classmethod" in names or node.name in ("__init_subclass__", "__class_getitem__"):
        return "class"
    return "plain"


def _signatures(
    tree: ast.Module, settings: ScanSettings, annotated: bool, declares_globals: bool = True,
) -> list[tuple[Any, ...]]:
    """(qualname, positional, keyword-only, record parameters, star, body) of each
    module-level function and class (a class's are its `__init__`'s, without self; a
    class without one takes star) and each method (without self: called as self.m).
    (`declares_globals` False: the module's text spells no `global`, _rebound_defs.)"""
    rows: list[tuple[Any, ...]] = []
    imported: dict[str, str] | None = None  # the module's imports, where a class may need them
    attributes = frozenset(settings.record_attributes)
    wrappers = _ScopeImports(tree)
    rebound = _rebound_defs(tree.body, wrappers, declares_globals)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in rebound:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            rows.append(_signature(
                node.name, node.args, settings, bound=False, body=node.name, annotated=annotated,
                decorators=_decorators(node),
            ))
            rows += _wrapper_rows(node, settings, annotated)
        elif isinstance(node, ast.ClassDef):
            init = None
            rebound_methods = _rebound_defs(node.body, wrappers.within(node), declares_globals)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name not in rebound_methods:
                    qualname = f"{node.name}.{item.name}"
                    kind = _method_kind(item)
                    rows.append(_signature(
                        qualname, item.args, settings, bound=kind != "static", body=qualname, annotated=annotated,
                        unbound=kind == "plain", decorators=_method_routes(item, kind),
                    ))
                    if item.name == "__init__":
                        init = item
            decorators = _decorators(node)
            metaclass = next((dotted(k.value) for k in node.keywords if k.arg == "metaclass"), None)
            if metaclass is not None:
                # `Worker(rec)` calls the metaclass's `__call__` first (`type.__call__` runs
                # `__init__`); so does `isinstance(x, Worker)` its `__instancecheck__`
                decorators += (f"{METACLASS}{metaclass or '?'}",)
            generated = None
            if init is None and node.decorator_list:
                imported = _module_imports(tree) if imported is None else imported
                generated = holders.generated_init(node, imported, attributes)
            if init is not None:
                rows.append(_signature(
                    node.name, init.args, settings, bound=True, body=f"{node.name}.__init__", annotated=annotated,
                    decorators=decorators,
                ))
            elif generated is not None:
                # a dataclass's (attrs') `__init__`: each argument stored on its field, so one
                # handed to a field that only holds the record is a store of `self.server_args`
                # (the holder rules follow it); any other escapes (holders.generated_init)
                rows.append((
                    node.name, *generated, (), 0, f"{node.name}.__init__", 0,
                    tuple(TRANSPARENT + d.removeprefix(TRANSPARENT) for d in decorators),
                ))
            else:
                rows.append((node.name, (), (), (), 1, f"{node.name}.__init__", 0, decorators))
    return rows


# Wrappers (by the dotted name the module imports them as) whose result, called, runs the
# function they are given with the arguments as given: `run = torch.compile(run)`, `run =
# functools.lru_cache(maxsize=8)(run)`, `run = torch.no_grad()(run)` leave `run` its def
# (_rebound_defs)
BEHAVIOUR_KEEPING = frozenset({
    "torch.compile", "functools.lru_cache", "functools.cache", "torch.no_grad", "torch.inference_mode",
    "torch.enable_grad",
})


def _rebound_defs(
    body: list[ast.stmt], imported: Callable[[], Mapping[str, str]], declares_globals: bool = True,
) -> set[str]:
    """The names of `body`'s own defs that a statement of the same scope other than a def
    also binds (`def run(sa): ...` then `run = _fast`, `run = wrap(run)`, an import or a
    class of the name, a `def` of it in an `if`, `global run` in a function): a call of
    the name may run another function than the def, so the def's signature is left out
    and a record handed to the name escapes. (Plain defs repeated, `@overload` stubs, keep
    the last one, as Python does.) A rebinding of the name to a wrapper of BEHAVIOUR_KEEPING
    around it, spelled through the scope's imports (`imported()`: _ScopeImports), keeps
    the def: `run = torch.compile(run)` runs it (_rewrap). Where the caller knows the
    module's text spells no `global` (`declares_globals` False), no function is walked for
    one: the keyword is spelled in ASCII or not at all."""
    defs = {node.name for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not defs:
        return set()

    def bound(imports: Mapping[str, str]) -> set[str]:
        found: set[str] = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found |= globals_declared(node) if declares_globals else set()
            else:
                found |= _names_bound(node, imports, declares_globals)
        return found

    # cheap first: the imports only where a def's name is bound again
    rebound = defs & bound({})
    return defs & bound(imported()) if rebound else rebound


def _names_bound(node: ast.AST, imported: Mapping[str, str], declares_globals: bool = True) -> set[str]:
    """The names a statement binds in its own scope (not inside the functions, classes
    and lambdas it holds, whose own names it binds), but a name rewrapped (_rewrap)."""
    found: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name) and not isinstance(item.ctx, ast.Load):
            found.add(item.id)
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).partition(".")[0] for alias in item.names}
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(item.name)
            found |= globals_declared(item) if declares_globals else set()
            continue
        elif isinstance(item, ast.ExceptHandler) and item.name:
            found.add(item.name)
        elif isinstance(item, ast.Assign) and _rewrap(item, imported):
            stack.append(item.value)  # its target the function it was; a walrus in it binds
            continue
        if not isinstance(item, ast.Lambda):
            stack.extend(ast.iter_child_nodes(item))
    return found


def _rewrap(node: ast.Assign, imported: Mapping[str, str]) -> bool:
    """Is `node` `f = W(f, ...)` or `f = W(...)(f)` with W a wrapper of BEHAVIOUR_KEEPING
    as `imported` spells it (`import torch as T; f = T.compile(f, dynamic=True)`, `from
    functools import lru_cache; f = lru_cache(maxsize=8)(f)`)? A factory's own arguments
    are constants only: `torch.compile(g)(f)` calls the compiled `g`."""
    [target, *more] = node.targets
    call = node.value
    if more or not isinstance(target, ast.Name) or not isinstance(call, ast.Call) or not call.args:
        return False
    if not isinstance(call.args[0], ast.Name) or call.args[0].id != target.id or not imported:
        return False
    wrapper = call.func
    if isinstance(wrapper, ast.Call):
        if len(call.args) > 1 or call.keywords or not all(isinstance(a, ast.Constant) for a in wrapper.args):
            return False
        wrapper = wrapper.func
    parts: list[str] = []
    while isinstance(wrapper, ast.Attribute):
        parts.append(wrapper.attr)
        wrapper = wrapper.value
    # a name the scope imports, not a module spelled (`importlib.import_module("torch")`)
    if not isinstance(wrapper, ast.Name) or wrapper.id not in imported:
        return False
    return ".".join((imported[wrapper.id], *reversed(parts))) in BEHAVIOUR_KEEPING


class _ScopeImports:
    """The module's imports a scope's statements spell (_module_imports), less the names a
    function declares global (it may bind them); computed once, where asked."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.found: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        if self.found is None:
            declared = globals_declared(self.tree)
            self.found = {local: name for local, name in _module_imports(self.tree).items() if local not in declared}
        return self.found

    def within(self, cls: ast.ClassDef) -> Callable[[], dict[str, str]]:
        """Those of a class body, which its own names shadow (`torch = fake` in it)."""
        def imports() -> dict[str, str]:
            own = set().union(*(_names_bound(node, {}) for node in cls.body))
            return {local: name for local, name in self().items() if local not in own}
        return imports


def _rewrapped_functions(tree: ast.Module) -> set[int]:
    """The ids of the names a rewrap (_rewrap) hands its wrapper, in the module's scope
    and its classes' (`flag` in `flag = functools.cache(flag)`): the function bound back
    to its own name, whose calls are read where they are made, is not handed on."""
    imports = _ScopeImports(tree)
    found: set[int] = set()
    scopes: list[tuple[list[ast.stmt], Callable[[], Mapping[str, str]]]] = [(tree.body, imports)]
    scopes += [(node.body, imports.within(node)) for node in tree.body if isinstance(node, ast.ClassDef)]
    for body, imported in scopes:
        for stmt in _block_statements(body):
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and _rewrap(stmt, imported()):
                found.add(id(stmt.value.args[0]))
    return found


def _module_imports(tree: ast.Module) -> dict[str, str]:
    """The module's top-level names bound only by an absolute import -> the dotted name
    they import (`dc` -> `dataclasses` for `import dataclasses as dc`, `define` ->
    `attrs.define`)."""
    found: dict[str, str] = {}
    rebound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                found[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rebound.add(node.name)
        else:
            rebound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return {local: name for local, name in found.items() if local not in rebound}


def _imports(tree: ast.Module, text: str) -> list[tuple[Any, ...]]:
    lines = mention_lines(text, ("import",))
    rows: list[tuple[Any, ...]] = []
    for node in _mentioned(tree.body, lines) if lines else ():
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                rows.append((0, alias.name if alias.asname else alias.name.split(".")[0], "", local))
                if not alias.asname and "." in alias.name:
                    rows.append((0, alias.name, "", alias.name))  # `import a.b`: a.b.x is a.b's x
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                rows.append((node.level, node.module or "", alias.name, alias.asname or alias.name))
    # routes that spell the module's name: `importlib.import_module("a.b").x` is read as
    # `a.b.x` (configbags.migrate.aliases.dotted), `m = importlib.import_module("a.b")`
    # binds m like `import a.b as m`
    routes = mention_lines(text, ("import_module", "__import__", "modules"))
    for statement in _mentioned(tree.body, routes) if routes else ():
        for part in _own_nodes(statement):
            module = spelled_module(part) if isinstance(part, (ast.Call, ast.Subscript)) else None
            if module is None:
                continue
            rows += [(0, module, "", module), (0, module.split(".")[0], "", module.split(".")[0])]
            if isinstance(statement, ast.Assign) and statement.value is part:
                rows += [(0, module, "", t.id) for t in statement.targets if isinstance(t, ast.Name)]
    return rows + _module_bindings(tree, text, rows)


def _module_bindings(tree: ast.Module, text: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Names bound by assignment to an imported module or a name in it, read as imports
    (`H = pkg.h` is `import pkg.h as H`, `H2 = H` too, `m = mod or os` binds m to os as
    one of its values, `r = h.rec` is `from pkg.h import rec as r`), so a module is that
    module wherever it is used. Only assignments whose value spells such a name bare (no
    call, no index) are looked at."""
    imported: dict[str, tuple[int, str]] = {}  # local -> (level, the dotted module path it names)
    for level, module, name, local in rows:
        if name != "*":
            imported.setdefault(local, (level, f"{module}.{name}" if module and name else module or name))
    found: list[tuple[Any, ...]] = []
    names = set(imported)
    seen: set[int] = set()
    for _ in range(8):  # chains: `H2 = H`, `H3 = H2`
        lines = lines_of(text, bare_mentions(text, names)) if names else []
        assignments = [
            node for node in _mentioned(tree.body, lines)
            if isinstance(node, ast.Assign) and id(node) not in seen and all(isinstance(t, ast.Name) for t in node.targets)
        ]
        names = set()
        for node in assignments:
            for value in _branches(node.value):
                parts = dotted(value).split(".") if isinstance(value, (ast.Name, ast.Attribute)) else [""]
                known = imported.get(parts[0])
                if known is None:
                    continue
                seen.add(id(node))
                level, path = known
                path = ".".join(p for p in (path, *parts[1:]) if p)
                for target in node.targets:
                    assert isinstance(target, ast.Name)
                    found.append((level, path, "", target.id))
                    if target.id not in imported:
                        imported[target.id] = (level, path)
                        names.add(target.id)
        if not names:
            break
    return found


def _branches(value: ast.expr) -> list[ast.expr]:
    """The values an expression may be, branch by branch (`a or b`, `a if c else b`)."""
    if isinstance(value, ast.BoolOp):
        return [v for part in value.values for v in _branches(part)]
    if isinstance(value, ast.IfExp):
        return [*_branches(value.body), *_branches(value.orelse)]
    return [value]


def _own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement outside its inner statements."""
    for field in stmt._fields:
        if field in _STATEMENT_LISTS:
            continue
        value = getattr(stmt, field, None)
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST) and not isinstance(part, ast.stmt):
                yield from ast.walk(part)


def _environ_expr(expr: ast.expr) -> bool:
    name = dotted(expr)
    return name == "environ" or name.endswith(".environ")


# callables that copy (or layer, or wrap) a mapping given whole: `ChainMap({}, os.environ)`
_ENV_COPIERS = frozenset({"dict", "ChainMap", "OrderedDict", "UserDict", "defaultdict", "copy", "deepcopy", "MappingProxyType"})


def _returns_kind(value: ast.expr) -> str | None:
    """What a returned value is: a config context, the environment, or neither."""
    if isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] in _CONTEXT_FETCHES:
        return "context"
    return "environ" if _environ_copy(value) else None


def _environ_copy(value: ast.expr, depth: int = 0) -> bool:
    """Is `value` the environment, or a copy of it read like it: `os.environ.copy()`,
    `dict(os.environ)`, `ChainMap({}, os.environ)`, `MappingProxyType(os.environ)`,
    `copy.copy(os.environ)`, `{**os.environ}`, `d | os.environ`, `getattr(os,
    "environ")`, `os.environb`?"""
    if depth > _MAX_COPY_DEPTH:
        return False
    name = dotted(value)
    if _environ_expr(value) or name == "environb" or name.endswith(".environb"):
        return True
    if isinstance(value, ast.Dict):
        return any(key is None and _environ_copy(item, depth + 1) for key, item in zip(value.keys, value.values, strict=True))
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return _environ_copy(value.left, depth + 1) or _environ_copy(value.right, depth + 1)
    if not isinstance(value, ast.Call):
        return False
    func = dotted(value.func)
    if (func.endswith("environ.copy") or (depth and func.endswith("environ.items"))) and not value.args:
        return True  # (`dict(os.environ.items())`: its pairs, copied)
    if _fetched_name(value) in ("os.environ", "os.environb"):
        return True
    return func.rpartition(".")[2] in _ENV_COPIERS and (
        any(not isinstance(arg, ast.Starred) and _environ_copy(arg, depth + 1) for arg in value.args)
        or any(keyword.arg is None and _environ_copy(keyword.value, depth + 1) for keyword in value.keywords)
    )


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    # a def under a module-level `try`/`if`/`with` is the module's as much as a plain one
    for node in module_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
# Statements whose bodies define names in the scope they stand in (`try: from fast import
# get_env` / `except ImportError: def get_env(...)`)
_BLOCKS = (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try), ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)
_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _block_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body`, and those inside its try/if/with/loop blocks (their
    handlers and else parts too), which bind in the same scope."""
    for stmt in body:
        if not isinstance(stmt, _BLOCKS):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _block_statements(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _block_statements(handler.body)


def _lambda_def(stmt: ast.stmt) -> ast.FunctionDef | None:
    """`NAME = lambda name: ...` (or `staticmethod(lambda ...)`) as the def it stands for."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    value, decorators = stmt.value, []
    if isinstance(value, ast.Call) and dotted(value.func) in ("staticmethod", "classmethod") and len(value.args) == 1:
        decorators = [value.func]
        value = value.args[0]
    if not isinstance(value, ast.Lambda):
        return None
    made = ast.FunctionDef(
        name=stmt.targets[0].id, args=value.args, body=[ast.Return(value.body)], decorator_list=decorators, returns=None,
    )
    return ast.fix_missing_locations(ast.copy_location(made, value))


def _helper_functions(tree: ast.Module) -> Iterator[tuple[str, _Def]]:
    """The functions an environment helper may be: the module's and its classes'
    (_functions), those defined inside module-level try/if/with blocks, those nested in a
    function (`main._env`), and lambdas bound to a name at module level or in a class
    (`_env = lambda name: os.environ.get(name)`, as a def of that name)."""
    for stmt in _block_statements(tree.body):
        if isinstance(stmt, ast.ClassDef):
            for item in _block_statements(stmt.body):
                made = item if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else _lambda_def(item)
                if made is not None:
                    yield f"{stmt.name}.{made.name}", made
                    yield from _nested_functions(f"{stmt.name}.{made.name}", made)
            continue
        made = stmt if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else _lambda_def(stmt)
        if made is not None:
            yield made.name, made
            yield from _nested_functions(made.name, made)


def _nested_functions(qualname: str, function: _Def) -> Iterator[tuple[str, _Def]]:
    for stmt in _block_statements(function.body):
        made = stmt if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else _lambda_def(stmt)
        if made is not None:
            yield f"{qualname}.{made.name}", made
            yield from _nested_functions(f"{qualname}.{made.name}", made)


def _helper_signatures(
    tree: ast.Module, settings: ScanSettings, annotated: bool, wanted: set[str], known: set[str],
) -> list[tuple[Any, ...]]:
    """Signature rows of the helpers (`wanted`) _signatures has none for: those
    _helper_functions finds besides the module's plain defs."""
    classes = {node.name for node in _block_statements(tree.body) if isinstance(node, ast.ClassDef)}
    rows: list[tuple[Any, ...]] = []
    for qualname, function in _helper_functions(tree) if wanted - known else ():
        if qualname not in wanted or qualname in known:
            continue
        known.add(qualname)
        method = qualname.count(".") == 1 and qualname.partition(".")[0] in classes
        kind = _method_kind(function) if method else "static"
        rows.append(_signature(
            qualname, function.args, settings, bound=kind != "static", body=qualname, annotated=annotated,
            unbound=kind == "plain", decorators=_method_routes(function, kind) if method else _decorators(function),
        ))
    return rows


def _mentioned_nodes(statements: list[ast.stmt], lines: list[int]) -> Iterator[ast.AST]:
    """Every node of the statements on `lines`, each once: a compound statement's own
    parts (its test, its iterable, ...), and its inner statements only where mentioned."""
    for stmt in _mentioned(statements, lines):
        yield stmt
        yield from _own_nodes(stmt)


def _door_facts(
    tree: ast.Module, text: str, strings: ModuleStrings | None = None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(fetchers, env_params): module-level functions that return a context or the
    environment, and parameters an environment key is built from (configbags.migrate.
    envkeys: the use says how)."""
    lines = mention_lines(text, ("environ", "environb", "getenv", *_CONTEXT_FETCHES, *_STATE_READBACKS))
    fetchers: list[tuple[Any, ...]] = _private_imports(tree, text)
    env_params: list[tuple[Any, ...]] = []
    if not lines:
        return fetchers, env_params
    classes = {node.name: node for node in _block_statements(tree.body) if isinstance(node, ast.ClassDef)}
    for qualname, node in _helper_functions(tree):
        if not mentions(lines, statement_span(node)):
            continue
        keys: list[ast.expr] = []
        writes = _environ_writes_only(node)
        for sub in _mentioned_nodes(node.body, lines):
            if id(sub) in writes:
                continue  # `os.environ[name] = v`: the helper sets the name, its callers read nothing
            if isinstance(sub, ast.Return) and sub.value is not None and "." not in qualname:
                kind = _returns_kind(sub.value)
                if kind is not None:
                    fetchers.append((qualname, kind))
            elif isinstance(sub, ast.Return) and sub.value is not None and _returns_kind(sub.value) == "environ":
                fetchers += _environ_method(qualname, node, classes)
            elif isinstance(sub, ast.Subscript) and _environ_expr(sub.value):
                keys.append(sub.slice)
            elif isinstance(sub, ast.Call) and sub.args and not isinstance(sub.args[0], ast.Starred):
                func = sub.func
                if (isinstance(func, ast.Attribute) and func.attr in _ENV_KEY_READS and _environ_expr(func.value)) or (
                    dotted(func).rpartition(".")[2] == "getenv"
                ):
                    keys.append(sub.args[0])
            elif (
                isinstance(sub, ast.Compare)
                and any(isinstance(op, (ast.In, ast.NotIn)) for op in sub.ops)
                and any(map(_environ_expr, sub.comparators))
            ):
                keys.append(sub.left)
        if keys:
            owner = classes.get(qualname.partition(".")[0]) if qualname.count(".") == 1 else None
            env_params += _key_params(qualname, node, owner, keys, strings or ModuleStrings(tree))
    fetchers += _module_holders(tree, lines)
    fetchers += _class_holders(tree, lines)
    fetchers += _kept_doors(tree, text, lines)
    return sorted(set(fetchers)), sorted(set(env_params))


def _environ_writes_only(function: _Def) -> set[int]:
    """Ids of the function's environment spellings that only write: a subscript stored
    or deleted (`os.environ[name] = v`, `del os.environ[name]`; not `+=`, which reads
    first), and `pop(name, None)` / `setdefault(name, v)` as a statement (the value
    dropped, nothing raised where it is unset), as the direct spellings are judged."""
    found: set[int] = set()
    augmented = {id(n.target) for n in ast.walk(function) if isinstance(n, ast.AugAssign)}
    # (a `del` whose KeyError is caught tells set from unset: a read)
    augmented |= {
        id(target) for node in ast.walk(function) if isinstance(node, ast.Try) and node.handlers
        for stmt in node.body for sub in ast.walk(stmt) if isinstance(sub, ast.Delete) for target in sub.targets
    }
    for sub in ast.walk(function):
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.ctx, (ast.Store, ast.Del))
            and id(sub) not in augmented
            and _environ_expr(sub.value)
        ):
            found.add(id(sub))
        elif isinstance(sub, ast.Expr) and isinstance(sub.value, ast.Call):
            call = sub.value
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("pop", "setdefault")
                and _environ_expr(func.value)
                and len(call.args) == 2
                and not call.keywords
                and not any(isinstance(arg, ast.Starred) for arg in call.args)
            ):
                found.add(id(call))
    return found


def _environ_method(qualname: str, node: _Def, classes: Mapping[str, ast.ClassDef]) -> list[tuple[str, str]]:
    """A method of a module-level class returning the environment whole, as its
    importers spell what gives it: a property's attribute on an instance (`E().env`, an
    environment holder), a method's (`E().get`) and the instance's own `__call__`
    (`E()`), fetchers; on the module's instances and other carriers too
    (_carried_spellings)."""
    owner, _, method = qualname.partition(".")
    if owner not in classes or "." in method:
        return []
    decorators = {dotted(d).rpartition(".")[2] for d in node.decorator_list}
    if decorators & _PROPERTIES:
        return [(f"{owner}().{method}", "environ_holder")]
    if method == "__call__":
        return [(f"{owner}()", "environ")]
    if "staticmethod" in decorators:
        return [(f"{owner}.{method}", "environ"), (f"{owner}().{method}", "environ")]
    return [] if decorators else [(f"{owner}().{method}", "environ")]


def _method(owner: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    return next((item for item in owner.body if isinstance(item, ast.FunctionDef) and item.name == name), None) if owner else None


def _key_params(
    qualname: str, function: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef | None,
    keys: list[ast.expr], strings: ModuleStrings,
) -> list[tuple[str, str, str]]:
    """(function, parameter, use) of each parameter an environment key is built from in
    any way: the function's own, and for a method reading `self.X`, its class's
    `__init__` parameters stored there (`self.name = name`: `EnvInt("X")` passes the
    key). The use is the key's template about the parameter (configbags.migrate.envkeys)."""
    targets: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = [(qualname, function)]
    init = _method(owner, "__init__")
    # a descriptor named by its owner's class body (`page_size = EnvInt(16)`), SGLang's
    # knob shape: `__set_name__` takes the attribute's name, the key may be built of it
    for hook in (init, _method(owner, "__set_name__")):
        if owner is not None and hook is not None and hook is not function:
            targets.append((f"{owner.name}.{hook.name}", hook))
    enclosing: list[ast.AST] = [owner, function] if owner is not None else [function]
    found: list[tuple[Any, ...]] = []
    if owner is not None and _is_enum(owner):
        found += _member_keys(qualname, function, owner, keys, strings)
    if owner is not None and init is None:
        # a dataclass or NamedTuple: its generated `__init__` stores each field as given
        # (the row's fourth column: the field's position, FIELD_POSITION_UNKNOWN where a
        # base may put fields before it)
        for position, field in _init_fields(owner):
            compiler = KeyCompiler(strings, owner, field, field=True)
            templates = [t for t in (compiler.compile(key, enclosing) for key in keys) if depends(t)]
            if templates:
                use = use_of(templates[0] if len(templates) == 1 else ["|", *templates])
                found.append((f"{owner.name}.__init__", field, use, position))
    for target_name, target in targets:
        args = target.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if owner is not None and params and not any(dotted(d) == "staticmethod" for d in target.decorator_list):
            params = params[1:]  # `self` or `cls`
        collectors = [(VARARG_MARK, args.vararg), (KWARG_MARK, args.kwarg)]
        for mark, arg in [("", arg) for arg in params] + [(m, a) for m, a in collectors if a is not None]:
            compiler = KeyCompiler(strings, target, arg.arg)
            templates = [t for t in (compiler.compile(key, enclosing) for key in keys) if depends(t)]
            if templates:
                # several keys built from one parameter: a call reads each
                use = use_of(templates[0] if len(templates) == 1 else ["|", *templates])
                found.append((target_name, mark + arg.arg, use))
    return found


# `__set_name__(self, owner, name)` called through its class: where the name comes
_SET_NAME_POSITION = 2
# A generated `__init__`'s field whose position a base class decides (env_params' fourth column)
FIELD_POSITION_UNKNOWN = -2
# An Enum member's method reading its value (env_params' fourth column; the parameter
# column names the member, the use is the key it reads): `E.MEMBER.get()` reads it
MEMBER_POSITION = -3
_ENUM_CLASSES = frozenset({"Enum", "StrEnum", "IntEnum", "Flag", "IntFlag"})


def _is_enum(cls: ast.ClassDef) -> bool:
    return any(dotted(base).rpartition(".")[2] in _ENUM_CLASSES for base in cls.bases)


def _member_keys(
    qualname: str, function: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef, keys: list[ast.expr],
    strings: ModuleStrings,
) -> list[tuple[Any, ...]]:
    """(method, member, use, MEMBER_POSITION) for an Enum's method whose key is built from
    the member (`self.value`, `self.name`, `self` itself, which a str Enum's member is):
    each member hands its value to the method, as a constructor hands a knob its name,
    so the call `EnvVar.PAGE_SIZE.get()` reads `$SGLANG_PAGE_SIZE` (R13-8). A member
    whose value the module does not show makes the read `$?` there."""
    positional = [*function.args.posonlyargs, *function.args.args]
    if not positional or any(dotted(d) in ("staticmethod", "classmethod") for d in function.decorator_list):
        return []
    me = positional[0].arg
    # `os.environ.get(self)`: the member is the string (a str Enum), its value
    keys = [ast.Attribute(value=key, attr="value", ctx=ast.Load()) if isinstance(key, ast.Name) and key.id == me else key
            for key in keys]
    enclosing: list[ast.AST] = [owner, function]
    templates: dict[str, Template] = {}
    for part in ("value", "name"):
        compiler = KeyCompiler(strings, owner, part, field=True)
        built = [t for t in (compiler.compile(key, enclosing) for key in keys) if depends(t)]
        if built:
            templates[part] = built[0] if len(built) == 1 else ["|", *built]
    found: list[tuple[Any, ...]] = []
    for member, value in _members(owner):
        values = strings.values(value, [owner])
        given: dict[str, Template] = {"value": ["s", *sorted(values)] if values is not None else UNKNOWN, "name": ["s", member]}
        for part, template in templates.items():
            found.append((qualname, member, use_of(substitute(template, given[part])), MEMBER_POSITION))
    return found


def _members(cls: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """An Enum's members: the names its body binds once, plainly (not `_sunder_`)."""
    return [
        (item.targets[0].id, item.value) for item in cls.body
        if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name)
        and not item.targets[0].id.startswith("_")
    ]


_DATACLASS_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable"})
_NAMEDTUPLE_BASES = frozenset({"NamedTuple", "Generic"})


def _init_fields(owner: ast.ClassDef) -> list[tuple[int, str]]:
    """(position, name) of the parameters the generated `__init__` of a dataclass (attrs'
    `define` too) or NamedTuple takes: its annotated fields in order (-1: keyword-only),
    none for any other class."""
    decorators = [d.func if isinstance(d, ast.Call) else d for d in owner.decorator_list]
    bases = {dotted(base).rpartition(".")[2] for base in owner.bases}
    named_tuple = "NamedTuple" in bases
    if not named_tuple and not any(dotted(d).rpartition(".")[2] in _DATACLASS_DECORATORS for d in decorators):
        return []
    kw_only = any(
        isinstance(d, ast.Call) and any(k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                                        for k in d.keywords)
        for d in owner.decorator_list
    )
    # fields a base declares come first: the positions of these are not known
    inherited = bool(bases - _NAMEDTUPLE_BASES - {"object"})
    fields: list[tuple[int, str]] = []
    for item in owner.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        annotation = ast.unparse(item.annotation)
        if "ClassVar" in annotation:
            continue
        if "KW_ONLY" in annotation:
            kw_only = True
            continue
        value = item.value
        keywords = {k.arg: k.value for k in value.keywords} if isinstance(value, ast.Call) else {}
        given = keywords.get("init")
        if isinstance(given, ast.Constant) and given.value is False:
            continue
        only = keywords.get("kw_only")
        keyword = kw_only or (isinstance(only, ast.Constant) and only.value is True)
        position = -1 if keyword else FIELD_POSITION_UNKNOWN if inherited else len(fields)
        fields.append((position, item.target.id))
    return fields


def _own_statements(statements: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """A function's statements at any depth, not those of a function or class in it."""
    for node in statements:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in _STATEMENT_LISTS:
            for item in getattr(node, field, None) or ():
                if isinstance(item, ast.stmt):
                    yield from _own_statements([item])
                elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                    yield from _own_statements(item.body)


def _door_targets(node: ast.stmt) -> Iterator[tuple[str, str | None]]:
    """(name, kind) of each name an assignment binds: kind context or environ where the
    value is one (`c = get_context()`), else None."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        kind = _returns_kind(node.value)
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(target, ast.Name):
                yield target.id, kind


class _Kept(NamedTuple):
    """A function's own statements, the names it binds, those it declares global, and
    those it binds to a context or the environment (-> kind)."""

    statements: list[ast.stmt]
    bound: set[str]
    declared: set[str]
    doors: dict[str, str]

    @classmethod
    def of(cls, function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Kept:
        statements = list(_own_statements(function.body))
        kept = cls(statements, set(), {n for node in statements if isinstance(node, ast.Global) for n in node.names}, {})
        for node in statements:
            for name, kind in _door_targets(node):
                kept.bound.add(name)
                if kind is not None:
                    kept.doors[name] = kind
        return kept


def _kept_doors(tree: ast.Module, text: str, lines: list[int]) -> list[tuple[str, str]]:
    """A context or the environment kept in a name before it is handed out: a module
    function returning a name that it, the module or (under `global`) any function binds
    to one (`_CTX = get_context()` ... `return _CTX`: kind context or environ), and a
    module global a function binds to one under `global` (`g._CTX` of an importer:
    context_holder or environ_holder)."""
    held: dict[str, str] = {}  # module globals bound to a door -> its kind
    for node in tree.body:
        if mentions(lines, statement_span(node)):
            held.update((name, kind) for name, kind in _door_targets(node) if kind is not None)
    functions: dict[str, _Kept] = {}
    for qualname, function in _functions(tree):
        if mentions(lines, statement_span(function)):
            facts = functions[qualname] = _Kept.of(function)
            held.update((name, kind) for name, kind in facts.doors.items() if name in facts.declared)
    found = [(name, f"{kind}_holder") for name, kind in held.items()]
    # a function returning such a global need not mention a door itself (`def ctx():
    # return _CTX`, with `_CTX` set in `init()`)
    returning = mention_lines(text, held) if held else []
    for qualname, function in _functions(tree):
        if "." in qualname:
            continue
        kept = functions.get(qualname) or (_Kept.of(function) if mentions(returning, statement_span(function)) else None)
        if kept is None:
            continue
        for node in kept.statements:
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                name = node.value.id
                # a name the function binds is its own, unless declared global
                own = name in kept.bound and name not in kept.declared
                kind = kept.doors.get(name) if own else held.get(name)
                if kind is not None:
                    found.append((qualname, kind))
    return found


def _private_imports(tree: ast.Module, text: str) -> list[tuple[Any, ...]]:
    """(name, "private") of each private part of an accessors module that the module
    imports at its top level, relative or not, so hands on by that name (`from .accessors
    import _context as CTX`)."""
    if "accessors import" not in text:
        return []
    return [
        (alias.asname or alias.name, "private")
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").rpartition(".")[2] == "accessors"
        for alias in node.names
        if alias.name.startswith("_")
    ]


def _module_holders(tree: ast.Module, lines: list[int]) -> list[tuple[str, str]]:
    """Module-level names other modules may import for a context or the environment:
    `CTX = get_context()` (context_holder), `ENV = os.environ`, a copy of it (`SNAP =
    ChainMap({}, os.environ)`) or `from os import environ` (environ_holder), `ctx_of =
    get_context` (context: a fetcher), `from os import getenv`, `getenv = os.getenv` or
    `GET = os.environ.get` (environ_getter)."""
    found: list[tuple[str, str]] = []
    # (a binding under a module-level `try`/`if`/`with` counts: `try: CTX = get_context()`)
    for node in module_statements(tree.body):
        if not mentions(lines, statement_span(node)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "os" and node.level == 0:
            for alias in node.names:
                imported = {"environ": "environ_holder", "getenv": "environ_getter"}.get(alias.name)
                if imported is not None:
                    found.append((alias.asname or alias.name, imported))
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _state_home(node.module or ""):
            found += [(a.asname or a.name, "readback") for a in node.names if a.name in _STATE_READBACKS]
            continue
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        kind: str | None = None
        if isinstance(value, ast.Lambda) and not value.args.args:
            # `current_ctx = lambda: get_context()`: a function giving what its body is
            kind = _returns_kind(value.body)
        elif isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] in _CONTEXT_FETCHES:
            kind = "context_holder"
        elif _environ_copy(value):
            kind = "environ_holder"  # the environment, or a copy of it (`SNAP = {**os.environ}`)
        else:
            home, _, last = dotted(value).rpartition(".")
            kind = "context" if last in _CONTEXT_FETCHES else "environ_getter" if _environ_reader(value) else None
            if last in _STATE_READBACKS and home.rpartition(".")[2] == "dist":
                kind = "readback"  # `snap = dist.state_dict`
        if kind is not None:
            found += [(target.id, kind) for target in targets if isinstance(target, ast.Name)]
    return found


def _holder_classes(tree: ast.Module, text: str, settings: ScanSettings) -> list[tuple[str, str]]:
    """The module-level classes that hold the record in an attribute named like it (their
    methods assign `self.server_args`, or their body binds `server_args`, a dataclass
    field too), for their importers: "repr_holder" where the class's repr is generated
    from every field (a dataclass or attrs class without its own), else "holder_class"."""
    attributes = frozenset(settings.record_attributes)
    if not any(attribute in text for attribute in attributes):
        return []
    found: list[tuple[str, str]] = []
    lines = mention_lines(text, attributes)
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or not mentions(lines, statement_span(cls)):
            continue
        holds = False
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in attributes:
                holds = isinstance(node.value, ast.Name) and node.value.id == "self"
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in cls.body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                holds = any(isinstance(t, ast.Name) and t.id in attributes for t in targets)
            if holds:
                break
        if holds:
            facts = holders.class_facts(cls, attributes, settings.record_class)
            found += [(cls.name, kind) for kind in holders.holder_kinds(facts.shows, facts.compares)]
    return found


# The kinds of a module's own functions it is told of again (_Project.flow_input): what a
# call of them does to an argument, or gives (`fills:0`), is judged at its own calls too
_OWN_KINDS = ("fills:", "namespace:", "parser_fills:", "parses:")


def _positional(spelled: Mapping[str, set[str]], prefix: str) -> frozenset[str]:
    """"spelled|position" of each name spelled with a kind `<prefix><position>`."""
    return frozenset(
        f"{name}|{kind.removeprefix(prefix)}" for kind, names in spelled.items() if kind.startswith(prefix)
        for name in names
    )


def _parse_helpers(tree: ast.Module, text: str) -> list[tuple[str, str]]:
    """(function, "parses:<position>"): a module-level function returning the Namespace its
    positional parameter parses (`def parse(p, argv): return p.parse_args(argv)`,
    `return p.parse_known_args(argv)[0]`), so a call handed a parser `ServerArgs.add_cli_args`
    filled gives the config (configbags.migrate.aliases: _Analysis.parsed). Whether the
    parser is filled is the caller's to show; one no filler filled gives nothing."""
    if "parse_" not in text:
        return []
    found: list[tuple[str, str]] = []
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        parsed = {
            parser for node in ast.walk(function) if isinstance(node, ast.Return) and node.value is not None
            and (parser := parsed_parser(node.value)) is not None
        }
        found += [(function.name, f"parses:{i}") for i, param in enumerate(params) if param in parsed]
    return found


def _fillers(tree: ast.Module, text: str, settings: ScanSettings) -> list[tuple[str, str]]:
    """(function, "fills:<position>"): a module-level function storing a record attribute on
    its positional parameter (`def fill(ns): ns.server_args = get_server_args()`), so what
    a caller hands there holds the record afterwards."""
    attributes = frozenset(settings.record_attributes)
    if not any(attribute in text for attribute in attributes):
        return []
    found: list[tuple[str, str]] = []
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        stored = {
            node.value.id for node in ast.walk(function)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in attributes
            and isinstance(node.value, ast.Name)
        }
        found += [(function.name, f"fills:{i}") for i, param in enumerate(params) if param in stored]
    return found


# What a function reading its parameter's namespace whole must show on a line
# (_namespace_readers): a namespace reader's name, or a serialiser's (`json.dumps`, `safe_dump`)
_NAMESPACE_WORDS = re.compile(r"\b(?:vars|__dict__|asdict|astuple|getmembers|\w*dumps?)\b")


def _namespace_readers(tree: ast.Module, text: str) -> list[tuple[str, str]]:
    """(function, "namespace:<position>"): a module-level function reading the namespace of
    its positional parameter whole (`def dump_state(obj): return json.dumps(vars(obj))`,
    `obj.__dict__`, `dataclasses.asdict(obj)`, `pickle.dumps(obj)`), so a holder a caller
    hands there is read whole (configbags.migrate.holders)."""
    lines = lines_of(text, [match.start() for match in _NAMESPACE_WORDS.finditer(text)])
    if not lines:
        return []
    found: list[tuple[str, str]] = []
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not mentions(
            lines, statement_span(function)
        ):
            continue
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        whole: set[str] = set()
        for node in _mentioned_nodes(function.body, lines):
            owner = holders.namespace_of(node) if isinstance(node, (ast.Call, ast.Attribute)) else None
            if isinstance(owner, ast.Name):
                whole.add(owner.id)
            elif isinstance(node, ast.Call):
                name = dotted(node.func).rpartition(".")[2]
                if name in holders.NAMESPACE_READERS or name.endswith(holders.SERIALISERS):
                    whole.update(arg.id for arg in node.args if isinstance(arg, ast.Name))
        found += [(function.name, f"namespace:{i}") for i, param in enumerate(params) if param in whole]
    return found


def _held_kind(value: ast.expr) -> str | None:
    """What a class keeps in an attribute: a context (`get_context()`), the environment
    (`os.environ`, or a copy of it: `dict(os.environ)`, `ChainMap({}, os.environ)`) or one of its readers (`os.environ.get`, `os.getenv`), as a holder kind."""
    if isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] in _CONTEXT_FETCHES:
        return "context_holder"
    if _environ_copy(value):
        return "environ_holder"
    return "environ_getter" if _environ_reader(value) else None


def _environ_reader(value: ast.expr) -> bool:
    """Is `value` one of the environment's readers by key: `os.getenv`, `os.environ.get`?"""
    name = dotted(value)
    return name.endswith((".environ.get", "environ.get")) or name.rpartition(".")[2] == "getenv"


def _class_holders(tree: ast.Module, lines: list[int]) -> list[tuple[str, str]]:
    """What a module-level class keeps for its importers' code: a class attribute bound to
    a context or the environment (`class Doors: CTX = get_context()`, `env = os.environ`,
    `get = os.environ.get`), read as `Doors.CTX` or on an instance, `Doors().CTX`; and an
    attribute its methods set to one (`self.ctx = get_context()`), read as `Admin().ctx`
    (also on a name bound to `Admin()`, in a subclass as `self.ctx`: _Uses.spellings)."""
    found: list[tuple[str, str]] = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or not mentions(lines, statement_span(cls)):
            continue
        for node in cls.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                kind = _held_kind(node.value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if kind is not None:
                    names = [target.id for target in targets if isinstance(target, ast.Name)]
                    found += [(f"{cls.name}{way}.{name}", kind) for name in names for way in ("", "()")]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
                me = node.args.args[0].arg
                for sub in _assignments(node.body, lines):
                    if (kind := _held_kind(sub.value)) is not None:
                        found += [
                            (f"{cls.name}().{t.attr}", kind) for t in sub.targets
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me
                        ]
    # a subclass of the module's keeps what its bases keep (`class K2(K): pass`, `K2.get`)
    kept: dict[str, list[tuple[str, str]]] = {}
    for spelling, kind in found:
        kept.setdefault(re.split(r"[.(]", spelling, maxsplit=1)[0], []).append((spelling, kind))
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for base in map(dotted, cls.bases):
            for spelling, kind in list(kept.get(base, ())):
                inherited = (cls.name + spelling[len(base):], kind)
                kept.setdefault(cls.name, []).append(inherited)
                found.append(inherited)
    return found


def _assignments(body: list[ast.stmt], lines: list[int]) -> Iterator[ast.Assign]:
    """The assignment statements in `body`, at any depth, on the lines that mention a
    context or the environment (the others cannot bind one)."""
    for stmt in body:
        if not mentions(lines, statement_span(stmt)):
            continue
        if isinstance(stmt, ast.Assign):
            yield stmt
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                yield from _assignments(child.body, lines)
        for field in ("body", "orelse", "finalbody"):
            nested = getattr(stmt, field, None)
            if isinstance(nested, list) and nested and isinstance(nested[0], ast.stmt):
                yield from _assignments(nested, lines)


class _Walk(ast.NodeVisitor):
    """Visits the statements on `lines` (any depth) knowing the enclosing qualname and
    each node's parent."""

    def __init__(self, lines: list[int]) -> None:
        self.lines = lines
        self.qualname: list[str] = []
        self.parents: list[ast.AST] = []

    @property
    def function(self) -> str:
        return ".".join(self.qualname) or "<module>"

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt) and not mentions(self.lines, statement_span(node)):
            return
        named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.qualname.append(node.name)
        self.found(node)
        self.parents.append(node)
        self.generic_visit(node)
        self.parents.pop()
        if named:
            self.qualname.pop()

    def found(self, node: ast.AST) -> None:
        raise NotImplementedError


def _instances(tree: ast.Module) -> list[tuple[str, str]]:
    """(name, class): `ENV = Env()` at the top level, Env a class of the module."""
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    found: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            cls = dotted(node.value.func)
            if cls in classes:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [(target.id, cls) for target in targets if isinstance(target, ast.Name)]
    return found


# FlowFacts.instances: a row's second column where the name carries what a spelling of the
# module is (`ENV2 = ENV`: ("ENV2", "carries:ENV")), not an instance of a class
CARRIES = "carries:"
_MAX_CARRIER_DEPTH = 3
_PROPERTIES = frozenset({"property", "cached_property"})


def _carried_values(value: ast.expr | None, depth: int = 0) -> set[tuple[str, str]]:
    """(path, spelled): what `value` carries of what the module spells, under the path an
    importer reaches it by: `ENV` itself (path ""), an element of `[ENV]` or a value of
    `{"e": ENV}` (path "[]"), a call's result (`get_env()`, `E()`), `staticmethod(env)` as
    `env`; both branches of `a or b` and `a if c else b`."""
    if value is None or depth > _MAX_CARRIER_DEPTH:
        return set()
    found: set[tuple[str, str]] = set()
    for branch in _branches(value):
        if isinstance(branch, (ast.Name, ast.Attribute)) and dotted(branch):
            found.add(("", dotted(branch)))
        elif isinstance(branch, (ast.List, ast.Tuple, ast.Set)):
            for element in branch.elts:
                element = element.value if isinstance(element, ast.Starred) else element
                found |= {(ELEMENT + path, spelled) for path, spelled in _carried_values(element, depth + 1)}
        elif isinstance(branch, ast.Dict):
            for item in branch.values:
                found |= {(ELEMENT + path, spelled) for path, spelled in _carried_values(item, depth + 1)}
        elif isinstance(branch, ast.Subscript) and dotted(branch.value):
            found.add(("", dotted(branch.value) + ELEMENT))
        elif isinstance(branch, ast.Call) and dotted(branch.func) == "staticmethod" and len(branch.args) == 1:
            found |= _carried_values(branch.args[0], depth + 1)
        elif isinstance(branch, ast.Call) and dotted(branch.func):
            found.add(("", dotted(branch.func) + "()"))
    return found


def _own_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    """The values `function` itself returns (not its nested functions')."""
    pending: list[ast.stmt] = list(function.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            yield stmt.value
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in _STATEMENT_LISTS:
            for item in getattr(stmt, field, None) or ():
                pending += item.body if isinstance(item, (ast.ExceptHandler, ast.match_case)) else [item]


def _returned_values(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    """What `function` returns, a returned name also as what the function binds to it: a
    factory's local (`e = E(); return e`) or a lazy singleton's global (`_E = E()`)."""
    for value in _own_returns(function):
        yield value
        if isinstance(value, ast.Name):
            for sub in ast.walk(function):
                if isinstance(sub, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == value.id for t in sub.targets
                ):
                    yield sub.value


def _carriers(tree: ast.Module) -> list[tuple[str, str]]:
    """(spelling, CARRIES + spelled): what the module's names give an importer of what it
    spells, followed as the module's own carriers are (envsources.carried_helpers): a name
    bound to it (`ENV2 = ENV`, `get = ENV.get`, `ENVS = [ENV]`, `ENV = E()`), a function
    returning it (`get_env()`), a class attribute (`Outer.env`, `K.get` for `get =
    staticmethod(env)`, on an instance too: `Outer().env`), a property, method or
    `__call__` of a class returning it (`E().env`, `E().get()`, `E()()`). The project pass
    spells a helper (and what gives the environment) by each of them too
    (_carried_spellings)."""
    statements = module_statements(tree.body)
    functions = {node.name for node in statements if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    # (only what the module itself binds is spelled by a helper entry of its own)
    own = functions | {node.name for node in statements if isinstance(node, ast.ClassDef)} | {
        target.id for node in statements if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)
    }
    bound: list[tuple[str, set[tuple[str, str]]]] = []
    classes: dict[str, list[tuple[str, set[tuple[str, str]]]]] = {}
    for node in statements:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            values = _carried_values(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound += [(target.id, values) for target in targets if isinstance(target, ast.Name)]
            # a table filled after its literal (`HELPERS["env"] = env`): an element of it
            bound += [
                (target.value.id, {(ELEMENT + path, spelled) for path, spelled in values})
                for target in targets if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
            ]
        elif isinstance(node, ast.FunctionDef):
            bound.append((f"{node.name}()", {pair for value in _returned_values(node) for pair in _carried_values(value)}))
        elif isinstance(node, ast.ClassDef):
            own_entries = _class_carriers(node, functions)
            bound += own_entries
            classes[node.name] = own_entries
            # a subclass inherits its bases' class attributes (`Sub.env` for `Outer.env`)
            for base in node.bases:
                for spelling, values in classes.get(dotted(base), ()):
                    bound.append((node.name + spelling[len(dotted(base)):], values))
    return sorted({
        (spelling + path, CARRIES + spelled) for spelling, values in bound for path, spelled in values
        if spelled != spelling + path and re.split(r"[.(\[]", spelled, maxsplit=1)[0] in own
    })


def _class_carriers(node: ast.ClassDef, functions: set[str]) -> list[tuple[str, set[tuple[str, str]]]]:
    """(spelling, what it carries) of a class's attributes and of what its properties,
    methods and `__call__` return (_carriers)."""
    found: list[tuple[str, set[tuple[str, str]]]] = []
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)):
            values = _carried_values(item.value)
            # (a function of the module kept as a class attribute is a method of its
            # instances, called with the instance first: through the class only)
            plain = isinstance(item.value, ast.Name) and item.value.id in functions
            for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                if isinstance(target, ast.Name):
                    found += [(f"{node.name}{way}.{target.id}", values) for way in (("",) if plain else ("", "()"))]
        elif isinstance(item, ast.FunctionDef):
            decorators = {dotted(d).rpartition(".")[2] for d in item.decorator_list}
            values = {pair for value in _own_returns(item) for pair in _carried_values(value)}
            if decorators & _PROPERTIES:
                found.append((f"{node.name}().{item.name}", values))
            elif item.name == "__call__":
                found.append((f"{node.name}()()", values))
            elif "staticmethod" in decorators:
                found += [(f"{node.name}.{item.name}()", values), (f"{node.name}().{item.name}()", values)]
            elif not decorators:
                found.append((f"{node.name}().{item.name}()", values))
    return found


def base_facts(
    tree: ast.Module, text: str, settings: ScanSettings, command_params: Iterable[tuple[str, str]] = (),
    strings: ModuleStrings | None = None, mentioned: frozenset[str] | None = None,
) -> FlowFacts:
    """The facts of one module that need no other module: imports, signatures, the
    context and environment it returns, its parameters used as environment keys (and,
    from the door analysis, as child commands: `command_params`), and its instances.
    (What the record analysis adds: scan.scan_source.)"""
    strings = strings or ModuleStrings(tree, text=text)
    fetchers, env_params = _door_facts(tree, text, strings)
    if mentioned is None:
        mentioned = frozenset(name for name in settings.env_vars if name in text)
    env_params += sorted({(function, param, "command") for function, param in command_params})
    bases = tuple(
        (node.name, *filter(None, map(dotted, node.bases))) for node in tree.body if isinstance(node, ast.ClassDef)
    )
    fetchers += _holder_classes(tree, text, settings)
    fetchers += _fillers(tree, text, settings)
    fetchers += _namespace_readers(tree, text)
    fetchers += _parse_helpers(tree, text)
    declares_globals = "global" in text
    signatures = _signatures(tree, settings, settings.record_class in text, declares_globals)
    return FlowFacts(
        imports=tuple(_imports(tree, text)),
        bases=bases,
        signatures=(*signatures, *_helper_signatures(
            tree, settings, settings.record_class in text, {row[0] for row in env_params},
            {row[0] for row in signatures} | _rebound_defs(tree.body, _ScopeImports(tree), declares_globals),
        )),
        fetchers=tuple(fetchers),
        env_params=tuple(env_params),
        # (what carries a helper or the environment matters only where the module has one)
        instances=(*_instances(tree), *(_carriers(tree) if env_params or any(
            len(row) > 1 and str(row[1]).startswith("environ") for row in fetchers
        ) else ())),
        # environment names and commands, and resolver helpers (configbags.migrate.resolvers)
        constants=(
            *(strings.exported(text, mentioned) if mentioned else ()), *helper_specs(tree, text),
            # child commands that print the environment back, for the launches importing them
            *(strings.exported_commands() if settings.env_vars else ()),
            # the names its `__getattr__` serves (configbags.migrate.moduleattrs)
            *dispatch_facts(tree, text),
            # what it binds class attributes to, for a base's `self.attr` (_Project.class_bindings)
            *strings.class_rows(text),
        ),
    )


# Callables a helper object or class may be handed to without being asked a name: a field's
# factory (followed as the field: envsources.carried_helpers), a partial (judged where it
# is called), and what only formats it
_OBJECT_KEPT = frozenset({"field", "Factory", "partial", *holders.FORMATTERS, *holders.LOG_METHODS})


def _partial_helpers(tree: ast.Module, helpers: Mapping[str, list[tuple[int, str, str]]]) -> dict[str, list[tuple[int, str, str]]]:
    """Names bound to `functools.partial(helper, ...)`, at module level or in a function:
    helpers whose key or command parameters are the helper's not bound there, at
    positions shifted past the arguments given (`get_or_16 = partial(get_env,
    default="16")`, then `get_or_16("X")`)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    for stmt in ast.walk(tree):
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            continue
        value = stmt.value
        if not (isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] == "partial" and value.args):
            continue
        specs = helpers.get(dotted(value.args[0]))
        if not specs or any(isinstance(arg, ast.Starred) for arg in value.args) or any(k.arg is None for k in value.keywords):
            continue  # (a `*args` or `**kw` bound there: the helper handed on, judged so)
        given = len(value.args) - 1
        bound = {k.arg for k in value.keywords}
        left = [
            (position - given if position >= 0 else position, param, use)
            for position, param, use in specs if param not in bound and not 0 <= position < given
        ]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        found.update((target.id, left) for target in targets if isinstance(target, ast.Name) and left)
    return found


def _inherited_helpers(entries: Iterable[tuple[str, ...]], flow: FlowFacts) -> list[tuple[str, str]]:
    """The helper entries the module's classes inherit from a helper base (spelled in the
    module: its own class, or an imported one): the constructor where the class has no
    `__init__` of its own (`class EngineEnv(Env): pass`, a dataclass deriving a dataclass
    knob, whose base's fields come first), and the methods it does not define, on an
    instance made on the spot or kept in a module-level name (`ENV2 = EngineEnv()`)."""
    own = {row[0] for row in flow.signatures}
    instances = defaultdict(list)
    for name, cls in flow.instances:
        if not cls.startswith(CARRIES):
            instances[cls].append(name)
    known = {(entry[0], entry[1]) for entry in entries}
    found: list[tuple[str, str]] = []
    for _ in range(len(flow.bases)):  # a chain of subclasses, one step a round
        added = False
        for cls, *bases in flow.bases:
            for base in bases:
                for spelled, tail in sorted(known):
                    if spelled == base and f"{cls}.__init__" not in own:
                        new = [cls]
                    elif spelled.startswith(base + "().") and f"{cls}.{spelled[len(base) + 3:]}" not in own:
                        method = spelled[len(base) + 3:]
                        # (and `self.method` / `cls.method` in the subclass's own methods)
                        new = [
                            f"{cls}().{method}", f"self.{method}@{cls}",
                            *(f"{name}.{method}" for name in instances.get(cls, ())),
                        ]
                    elif spelled.startswith(base + ".") and f"{cls}.{spelled[len(base) + 1:]}" not in own:
                        new = [f"{cls}.{spelled[len(base) + 1:]}"]  # a static method through the class
                    else:
                        continue
                    for name in new:
                        if (name, tail) not in known:
                            known.add((name, tail))
                            found.append((name, tail))
                            added = True
        if not added:
            break
    return found


class _Uses(_Walk):
    """Uses of imported functions that return a config context or the environment (and
    of the module's own, and of names bound to either: `open_ctx = doors.ctx`)."""

    def __init__(
        self, lines: list[int], flows: FlowInput, declared: frozenset[str], strings: ModuleStrings,
        renamed: Mapping[str, str], renames: set[int], kept: Mapping[tuple[str, str], str],
    ) -> None:
        super().__init__(lines)
        self.flows = flows
        self.declared = declared
        self.strings = strings
        self.context = flows.context_fetchers | {name for name, kind in renamed.items() if kind == "context"}
        self.environ = flows.environ_fetchers | {name for name, kind in renamed.items() if kind == "environ"}
        self.renames = renames  # ids of the values bound by a rename (`e = env`): no escape
        self.renamed = renamed.keys()
        self.kept = kept  # (function, name) -> what the name holds (`c = ctx()`)
        self._bound: dict[int, set[str]] = {}  # id(function) -> the names it binds
        self.reads: list[tuple[Any, ...]] = []
        self.fetchers: list[tuple[str, str]] = []
        self._rewraps: set[int] | None = None  # _rewrapped_functions, where asked
        # the module's context and environment getters handed to a decorator (FlowFacts.passes)
        self.decorated: list[tuple[Any, ...]] = []
        # (function, parameter, use): the module's own parameters handed on to a helper's
        # key or command parameter, which make their function a helper in turn
        self.env_params: set[tuple[str, str, str]] = set()
        # spelled callable -> (position, parameter, use) of its key or command parameters
        self.helpers: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
        # spelled -> (key -> the leaves its entry reads, whether it is the module's own)
        self.tables: dict[str, tuple[dict[str, list[str]], bool]] = {}
        # spelled -> (key -> leaves): another module's table dispatch imported by name
        self.dispatchers: Mapping[str, dict[str, list[str]]] = {}
        for entry in flows.env_helpers:
            spelled, position, param, use = entry.split("|", 3)  # (a key template may hold `|`)
            self.helpers[spelled].append((int(position), param, use))
        self.helpers.update(_partial_helpers(strings.tree, self.helpers))
        # the methods of helper objects (`ENV.get`, `Env().get`): called on a carrier of one
        self.helper_methods = {spelled.rpartition(".")[2] for spelled in self.helpers if "." in spelled and "@" not in spelled}
        # the classes among them (`Env().get` spelled): a class is not its instances, so
        # `Env[...]` calls `__class_getitem__` (or its metaclass's), never `__getitem__`
        self.helper_classes = {spelled.partition("().")[0] for spelled in self.helpers if "()." in spelled}
        # the helper objects and classes by name (`ENV`, `Env`)
        self.helper_objects = {
            owner.removesuffix("()") for owner in (spelled.rpartition(".")[0] for spelled in self.helpers if "@" not in spelled)
            if owner
        }
        # and what carries one: a container of helpers (`ENVS` of `ENVS[]`), a function
        # giving one (`helper` of `helper()`)
        self.helper_objects |= {
            re.split(r"\(\)|\[\]", spelled, maxsplit=1)[0] for spelled in self.helpers
            if "@" not in spelled and (ELEMENT in spelled or "()" in spelled)
        } - {""}

    def _helper_object_handed(self, node: ast.Name | ast.Attribute) -> None:
        """A helper object or class handed to a callable (`worker(ENV)`, `register(Env)`):
        whoever gets it may call its method with any name, `$?`, unless the callee is a
        function or class of the module whose parameter carries it, which the calls in its
        body are read through (`def page(env: Env)`, envsources.carried_helpers)."""
        spelled = dotted(node)
        if spelled not in self.helper_objects or (isinstance(node, ast.Name) and self._local(node.id)):
            return
        parent = self.parents[-1] if self.parents else None
        keyword = parent if isinstance(parent, ast.keyword) else None
        if keyword is not None:
            at = next((i for i, p in enumerate(self.parents) if p is keyword), 0)
            parent = self.parents[at - 1] if at else None
        if not isinstance(parent, ast.Call) or parent.func is node:
            return
        callee = dotted(parent.func).rpartition(".")[2]
        if callee in _OBJECT_KEPT or callee in READS_NOTHING or self._carried_into(parent, node, keyword):
            return
        self._row(node, ENV_UNRESOLVED, "environ", "env_helper")

    def _carried_into(self, call: ast.Call, node: ast.expr, keyword: ast.keyword | None) -> bool:
        """Is `node`, an argument of `call`, a parameter of a function (or class) of the
        module that carries a helper by its annotation (`def page(env: Env)`)?"""
        name = dotted(call.func)
        target = next((n for n in self.strings.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                       and n.name == name), None)
        if isinstance(target, ast.ClassDef):
            target = next((n for n in target.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            skip = 1
        else:
            skip = 0
        if not isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        args = target.args
        positional = [*args.posonlyargs, *args.args][skip:]
        param = next((a for a in (*positional, *args.kwonlyargs) if keyword is not None and a.arg == keyword.arg), None)
        if keyword is None and node in call.args:
            index = call.args.index(node)
            param = positional[index] if index < len(positional) else None
        return param is not None and param.annotation is not None and any(
            spelled.removesuffix("()") in self.helper_objects for spelled in annotated_instances(param.annotation)
        )

    def _carried_helper_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """`self.env.get("X")`, `env.get("X")` with `env: Env`, `make_env().get("X")`: a
        helper object's method called on a carrier of it (envsources.carried_helpers)."""
        for spelled in sorted(carried_helpers(func.value, self.parents, self.strings.tree)):
            specs = self.helpers.get(f"{spelled}.{func.attr}")
            if specs:
                self._helper_call(node, node.args, node.keywords, specs)
                return

    def _row(self, node: ast.expr, leaf: str, via: str, form: str) -> None:
        self.reads.append((
            self.function, leaf, node.lineno, node.col_offset, node.end_lineno or node.lineno,
            node.end_col_offset or node.col_offset, via, form, "held",
        ))

    def found(self, node: ast.AST) -> None:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list
            and len(self.qualname) == 1 and node.name in self.context
        ):
            # `@register("ctx") def provide_ctx(): return get_context()`: the module's getter
            # handed to its decorator, as the record's are (configbags.migrate.aliases); the
            # environment returned under a decorator is used whole where it is returned
            self.decorated += decorated_passes(node, "<module>", "context")
        keyed = holders.keyed_attribute(node) if isinstance(node, (ast.Subscript, ast.Call)) else None
        if keyed is not None and (self.flows.context_holders or self.flows.environ_holders):
            # `vars(Admin())["ctx"]`: the attribute by its name
            self._held(keyed, self.parents[-1] if self.parents else None)
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            self._loaded(node)
        if self.helpers and isinstance(node, (ast.Subscript, ast.Compare)):
            self._syntax_helper_call(node)
        if not isinstance(node, ast.Call):
            return
        self._door_by_name(node)
        fetched = _fetched_name(node)
        if fetched:
            self._handed(node, fetched)  # `getattr(doors, "ctx")` as a value
        name = _fetched_name(node.func) or dotted(node.func) or _on_new_instance(node.func)
        parent = self.parents[-1] if self.parents else None
        self._helper_calls(node, name)
        self._named_by_owner(node, name, parent)
        if name in self.flows.environ_getters:
            key = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
            self._environ_key(node, key, "getenv")
            return
        if isinstance(parent, ast.Await) and len(self.parents) > 1:
            parent = self.parents[-2]  # `(await actx()).state`: an async fetcher, awaited
        if name in self.context and self._wrapped_getter(node, parent):
            return
        if isinstance(parent, ast.Return) and len(self.qualname) == 1:
            kind = "context" if name in self.context else "environ" if name in self.environ else None
            if kind is not None:
                self.fetchers.append((self.qualname[0], kind))
                return
        if name in self.context:
            self._context(parent, node)
        elif name in self.environ:
            self._environ(node, parent)

    def _named_by_owner(self, node: ast.Call, name: str, parent: ast.AST | None) -> None:
        """`page_size = EnvInt(16)` in a class body: Python calls the descriptor's
        `__set_name__` with the attribute's name, which its key may be built of (SGLang's
        knob shape, `self.name = "SGLANG_" + name.upper()`): read where it is declared."""
        scopes = self._scopes()
        if not (isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node
                and scopes and isinstance(scopes[-1], ast.ClassDef)):
            return
        specs = self.helpers.get(f"{self._helper_name(name)}.__set_name__")
        if not specs:
            return
        for target in parent.targets if isinstance(parent, ast.Assign) else [parent.target]:
            given = ast.copy_location(ast.Constant(target.id), target) if isinstance(target, ast.Name) else None
            for position, _, use in specs:
                # (the descriptor, its owner, the name: called through the class, the
                # name is the third argument; a key of the owner is not shown here)
                named = position == _SET_NAME_POSITION
                if named and template_of(use) == ARG:
                    continue  # the key is the attribute's name: read where that is loaded
                self._key_given(node, given if named else None, not named or given is None, scopes, use)

    def _helper_calls(self, node: ast.Call, name: str) -> None:
        """An environment helper called by its name, through `functools.partial`, or as a
        method of a carrier of its object."""
        helper = self._helper_name(name)
        own = self._own_class_helper(node.func) if isinstance(node.func, ast.Attribute) else None
        if helper in self.helpers:
            self._helper_call(node, node.args, node.keywords, self.helpers[helper])
        elif own is not None:
            self._helper_call(node, node.args, node.keywords, own)
        elif name.rpartition(".")[2] == "partial" and node.args and dotted(node.args[0]) in self.helpers:
            # `functools.partial(get_env, "X")`: the name is handed over now
            self._helper_call(node, node.args[1:], node.keywords, self.helpers[dotted(node.args[0])])
        elif name.rpartition(".")[2] == "partial" and node.args and (called := self._dunder_specs(node.args[0], "__call__")):
            # `functools.partial(ENV, "X")` of an instance whose `__call__` is the helper
            self._helper_call(node, node.args[1:], node.keywords, called)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in self.helper_methods:
            self._carried_helper_call(node, node.func)
        else:
            # `HELPERS[0]("X")`, `helper()("X")`, `h("X")` in `for h in HELPERS`: the
            # helper reached through a carrier; `env("X")` on an instance whose
            # `__call__` is the helper
            specs = self._carried_specs(node.func) or (
                self._dunder_specs(node.func, "__call__") if "__call__" in self.helper_methods else None
            )
            if specs:
                self._helper_call(node, node.args, node.keywords, specs)

    def _carried_specs(self, func: ast.expr) -> list[tuple[int, str, str]] | None:
        """The helper entries of a callable reached through a carrier of it (a container's
        element, a call's result, a local bound to either), not by its own name."""
        if not isinstance(func, (ast.Subscript, ast.Call, ast.Name)) or (isinstance(func, ast.Name) and not self._local(func.id)):
            return None
        for spelled in sorted(carried_helpers(func, self.parents, self.strings.tree)):
            if spelled in self.helpers:
                return self.helpers[spelled]
        return None

    def _syntax_helper_call(self, node: ast.Subscript | ast.Compare) -> None:
        """`ENV["X"]` and `"X" in ENV`: Python calls the object's `__getitem__` (a class's
        `__class_getitem__`) and `__contains__` with the key, so where that method is a
        helper the key is read here, as `ENV.get("X")` reads it."""
        found: list[tuple[ast.expr, str, ast.expr]] = []
        if isinstance(node, ast.Subscript):
            parent = self.parents[-1] if self.parents else None
            if isinstance(node.ctx, ast.Load) or (isinstance(parent, ast.AugAssign) and parent.target is node):
                # (`ENV["X"] += "x"` calls `__getitem__` before `__setitem__`)
                found.append((node.value, "__getitem__", node.slice))
        else:
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)):
                    found.append((right, "__contains__", left))
                left = right
        for receiver, method, key in found:
            specs = self._dunder_specs(receiver, method)
            if specs:
                call = ast.copy_location(ast.Call(func=receiver, args=[key], keywords=[]), node)
                self._helper_call(call, [key], [], specs)

    def _dunder_specs(self, receiver: ast.expr, method: str) -> list[tuple[int, str, str]] | None:
        """The helper entries of the dunder `method` Python calls on `receiver` (its
        spellings followed through carriers, envsources.carried_helpers): an instance's
        method, or for a class only `__class_getitem__`."""
        if isinstance(receiver, ast.Name) and receiver.id == "self" and self._enclosing_class() is not None:
            return self.helpers.get(self._helper_name(f"self.{method}"))
        if not isinstance(receiver, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            return None
        for spelled in sorted(carried_helpers(receiver, self.parents, self.strings.tree)):
            called = method
            if spelled in self.helper_classes:
                if method != "__getitem__":
                    continue
                called = "__class_getitem__"
            specs = self.helpers.get(f"{spelled}.{called}")
            if specs:
                return specs
        return None

    def _wrapped_getter(self, node: ast.Call, parent: ast.AST | None) -> bool:
        """A context getter's call made the body of another getter: a lambda bound to a
        module-level name (`current = lambda: provide_ctx()`) is a fetcher its importers
        call; any other lambda not called on the spot (`{"ctx": lambda: provide_ctx()}`) and
        a nested function returning it are the getter handed on, a `Context.state`
        readback there."""
        if isinstance(parent, ast.Lambda) and parent.body is node:
            outer = self.parents[-2] if len(self.parents) > 1 else None
            if isinstance(outer, ast.Call) and outer.func is parent:
                return False  # `(lambda: provide_ctx())()`: judged as the call
            if isinstance(outer, ast.Assign) and not self.qualname and not parent.args.args:
                self.fetchers += [(t.id, "context") for t in outer.targets if isinstance(t, ast.Name)]
                return True
            self._row(parent, STATE_READBACK, "readback", "context_escape")
            return True
        if isinstance(parent, ast.Return) and len(self.qualname) > 1:
            # `def make(): def g(): return provide_ctx(); return g`: handed out under no name
            scopes = [p for p in self.parents if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            if len(scopes) > 1 and not isinstance(scopes[-2], ast.ClassDef):
                self._row(node, STATE_READBACK, "readback", "context_escape")
                return True
        return False

    def _loaded(self, node: ast.Name | ast.Attribute) -> None:
        """A name or attribute used as a value: re-exported, held, handed on, returned."""
        self._reexported(node, dotted(node))
        self._held(node)
        self._handed(node, dotted(node))
        kept = self.kept.get((self.function, dotted(node)))
        if kept is not None and len(self.qualname) == 1 and isinstance(self.parents[-1], ast.Return):
            self.fetchers.append((self.qualname[0], kept))  # `c = ctx(); return c`
        if self.helpers:
            self._helper_handed_on(node)
            if self.helper_objects:
                self._helper_object_handed(node)
        if self.tables or self.dispatchers:
            self._table(node)
            self._dispatched(node)

    def _table(self, node: ast.Name | ast.Attribute) -> None:
        """A getter table used (configbags.migrate.envsources): the entries it reaches
        read their variables here."""
        table = self.tables.get(dotted(node))
        if table is None or (isinstance(node, ast.Name) and self._local(node.id)):
            return
        entries, own = table
        if own and len(self.qualname) == 1 and dispatches(self.qualname[0]):
            return  # the module's `__getattr__`: read where `envs.NAME` is loaded
        key = table_key(node, self.parents)
        keys = self.strings.values(key, self._scopes()) if key is not None else None
        found = table_use(node, self.parents, entries, keys)
        if found is not None:
            where, leaves = found
            for leaf in leaves:
                self._row(where, leaf, "environ", "env_table")

    def _dispatched(self, node: ast.Name | ast.Attribute) -> None:
        """A table module's `__getattr__` (the table's dispatch) used as a value: called,
        it reads the entry of the name it is given (`__getattr__("SGLANG_PAGE_SIZE")`),
        every entry where the name is not shown (vLLM's `for key in environment_variables:
        __getattr__(key)`); rewrapped in place (`__getattr__ = functools.cache(__getattr__)`)
        or asked about, it reads nothing; handed on in any other way, every entry."""
        owner, _, last = dotted(node).rpartition(".")
        imported = self.dispatchers.get(dotted(node))
        if (last != "__getattr__" and imported is None) or (isinstance(node, ast.Name) and self._local(node.id)):
            return
        if imported is None and not owner and len(self.qualname) == 1 and dispatches(self.qualname[0]):
            return  # the dispatch calling itself
        entries: dict[str, list[str]] = dict(imported or {})
        for spelled, (table, own) in self.tables.items() if imported is None else ():
            if spelled.rpartition(".")[0] == owner and own == (not owner):
                for key, leaves in table.items():
                    entries.setdefault(key, []).extend(leaves)
        if not entries:
            return
        parent = self.parents[-1] if self.parents else None
        where: ast.expr = node
        keys: frozenset[str] | None = None
        if isinstance(parent, ast.Call) and parent.func is node:
            where = parent
            given = parent.args[0] if parent.args and not isinstance(parent.args[0], ast.Starred) else None
            keys = self.strings.values(given, self._scopes()) if given is not None else None
        elif self._rewrapped(node, parent) or (
            isinstance(parent, ast.Attribute) and parent.attr in ("cache_clear", "cache_info")
        ) or (
            isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
            and parent.func.id in ("isinstance", "callable", "id", "type", "hasattr")
        ):
            return
        every = {leaf for leaves in entries.values() for leaf in leaves}
        for leaf in sorted(every if keys is None else {leaf for key in keys for leaf in entries.get(key, ())}):
            self._row(where, leaf, "environ", "env_table")

    def _rewrapped(self, node: ast.Name | ast.Attribute, parent: ast.AST | None) -> bool:
        """`__getattr__ = functools.cache(__getattr__)` (or `= __getattr__.__wrapped__`):
        the dispatch bound back to its own name, whose calls are read where made."""
        value: ast.AST | None = parent
        if (isinstance(parent, ast.Call) and node in parent.args and dotted(parent.func).rpartition(".")[2] in (
            "cache", "lru_cache", "wraps",
        )) or (isinstance(parent, ast.Attribute) and parent.attr == "__wrapped__"):
            value = parent
        else:
            return False
        around = self.parents[-2] if len(self.parents) > 1 else None
        return isinstance(around, ast.Assign) and around.value is value and all(
            dotted(target) == dotted(node) for target in around.targets
        )

    def _reexported(self, node: ast.Name | ast.Attribute, spelled: str) -> None:
        """A state readback or a private part of an accessors module that another module
        re-exports, used in any way (`snap()`, `dbg.export_state()`, `snap` handed on,
        `CTX.state` with CTX the accessors' `_context`); a local of that name is not it."""
        if spelled not in self.flows.state_getters and spelled not in self.flows.private_names:
            return
        if isinstance(node, ast.Name) and self._local(node.id):
            return
        if spelled in self.flows.state_getters:
            self._row(node, STATE_DICT_READBACK, "readback", "state_dict")
        else:
            self._row(node, ENV_UNRESOLVED, "private", "private")

    def _door_by_name(self, call: ast.Call) -> None:
        """`getattr(doors, name)` with a name built at run time, where `doors` is a module
        with a function giving a context or the environment: it may be that function."""
        if dotted(call.func) != "getattr" or len(call.args) < 2 or isinstance(call.args[1], ast.Constant):
            return
        module = dotted(call.args[0])
        if not module or any(spelled.startswith(module + ".") for spelled in self.flows.record_fetchers):
            return  # (a module with a function giving the record: the record analysis reports it)
        if any(spelled.startswith(module + ".") for spelled in (*self.context, *self.environ)):
            self._row(call, ENV_UNRESOLVED, "reflection", "door_by_name")

    def _handed(self, node: ast.expr, name: str) -> None:
        """A function giving a context or the environment handed on, not called nor
        renamed (`asyncio.to_thread(ctx)`, `{"ctx": ctx}`, `functools.cache(env)`):
        whoever calls it later reads it by a name no analysis follows."""
        parent = self.parents[-1] if self.parents else None
        if (isinstance(parent, ast.Call) and parent.func is node) or id(node) in self.renames:
            return
        if isinstance(parent, ast.Attribute) and parent.attr not in FUNCTION_ROUTES:
            return  # `ctx.cache_clear()`, `ctx.__name__`: the function's own attributes
        if isinstance(parent, ast.Call) and dotted(parent.func).rpartition(".")[2] in READS_NOTHING:
            return  # `callable(ctx)`
        kind = "context" if name in self.context else "environ" if name in self.environ else None
        if kind is None or (isinstance(node, ast.Name) and node.id not in self.renamed and self._local(node.id)):
            return
        if kind == "context":
            self._row(node, STATE_READBACK, "readback", "context_escape")
        else:
            self._row(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _local(self, name: str) -> bool:
        """Is `name` a parameter of an enclosing function, or bound in one (so not the
        module's function of that name)? Asked only where a use would be reported."""
        for node in self.parents:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                bound = self._bound.get(id(node))
                if bound is None:
                    args = node.args
                    # (a name the function declares `global` is the module's)
                    bound = self._bound[id(node)] = ({
                        a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a
                    } | {
                        sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load)
                    }) - {name for sub in ast.walk(node) if isinstance(sub, ast.Global) for name in sub.names}
                if name in bound:
                    return True
        return False

    def _scopes(self) -> list[ast.AST]:
        return [p for p in self.parents if isinstance(p, _RESOLVER_SCOPES)]

    def _helper_name(self, spelled: str) -> str:
        """How env_helpers names what `spelled` calls: `self.get` (or `cls.get`) in a
        method of Env is `self.get@Env`, and `cls(...)` there is `Env(...)`."""
        if self.qualname and "." not in spelled:
            # a function nested in the enclosing one (`def main(): def _env(name): ...`)
            first = 2 if self._enclosing_class() is not None else 1
            for depth in range(len(self.qualname), first - 1, -1):
                nested = ".".join((*self.qualname[:depth], spelled))
                if nested in self.helpers:
                    return nested
        if not self.qualname or self._enclosing_class() is None:
            return spelled
        if spelled.startswith(("self.", "cls.")):
            return f"self.{spelled.partition('.')[2]}@{self.qualname[0]}"
        return self.qualname[0] if spelled == "cls" else spelled

    def _enclosing_class(self) -> ast.ClassDef | None:
        """The module-level class whose method the walk is in."""
        top = self.parents[0] if self.parents else None
        return top if isinstance(top, ast.ClassDef) and self.qualname and top.name == self.qualname[0] else None

    def _own_class_helper(self, func: ast.Attribute) -> list[tuple[int, str, str]] | None:
        """`type(self).get(...)`, `self.__class__.get(...)` and `super().get(...)` in a
        method: the class's own (or its bases') helper method, as `self.get` is."""
        cls = self._enclosing_class()
        receiver = func.value
        if cls is None or not isinstance(receiver, (ast.Call, ast.Attribute)):
            return None
        if (isinstance(receiver, ast.Call) and dotted(receiver.func) == "type" and len(receiver.args) == 1) or (
            isinstance(receiver, ast.Attribute) and receiver.attr == "__class__"
        ):
            return self.helpers.get(f"self.{func.attr}@{cls.name}")
        if isinstance(receiver, ast.Call) and dotted(receiver.func) == "super":
            for base in filter(None, map(dotted, cls.bases)):
                for spelled in (f"self.{func.attr}@{base}", f"{base}().{func.attr}", f"{base}.{func.attr}"):
                    if spelled in self.helpers:
                        return self.helpers[spelled]
        return None

    def _helper_handed_on(self, node: ast.Name | ast.Attribute) -> None:
        """An environment helper handed on instead of called (`map(get_env, names)`):
        whoever calls it may pass any name."""
        name = self._helper_name(dotted(node))
        if name not in self.helpers or not any(template_of(use) is not None for _, _, use in self.helpers[name]):
            return
        parent = self.parents[-1] if self.parents else None
        if isinstance(parent, ast.Call) and (parent.func is node or (
            parent.args and parent.args[0] is node and dotted(parent.func).rpartition(".")[2] == "partial"
        )):
            return
        if isinstance(parent, ast.Attribute):
            return  # `get_env.__doc__`, or a longer name (judged as itself)
        if isinstance(parent, ast.ClassDef) and node in parent.bases and not any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__" for item in parent.body
        ):
            return  # a subclass taking its base's constructor: a helper in turn (_inherited_helpers)
        if self._rewraps is None:
            self._rewraps = _rewrapped_functions(self.strings.tree)
        if id(node) in self._rewraps:
            return  # `flag = functools.cache(flag)`: still the helper, its calls read where made
        self._row(node, ENV_UNRESOLVED, "environ", "env_helper")

    def _helper_call(
        self, call: ast.Call, args: Sequence[ast.expr], keywords: Sequence[ast.keyword], specs: list[tuple[int, str, str]]
    ) -> None:
        """A call of a function that uses its parameter as an environment key (or as a
        child's command): the name handed over is read here. Deny by default: a name the
        module does not show (a parameter, an import, a call) is `$?`."""
        positional: list[ast.expr] | None = []
        for arg in args:
            if positional is None:
                break
            if not isinstance(arg, ast.Starred):
                positional.append(arg)
            elif isinstance(arg.value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in arg.value.elts):
                positional.extend(arg.value.elts)  # `get_env(*("X",))`
            else:
                positional = None  # `get_env(*names)`: any name, at any position
        scopes = self._scopes()
        for position, param, use in specs:
            if position == MEMBER_POSITION:
                self._member_call(call, use)
                continue
            given: ast.expr | None = None
            unknown = positional is None
            if use == "command" and param.startswith(VARARG_MARK):
                # the arguments a `*argv` collects, as the tuple it is (unknown after a `*x`)
                elts = positional[position:] if positional is not None else [ast.Starred(ast.Name("?"), ast.Load())]
                given = ast.copy_location(ast.Tuple(elts=list(elts), ctx=ast.Load()), call)
                self._command(given, scopes, call, keywords)
                continue
            if use != "command" and param.startswith(VARARG_MARK):
                # `def env(*names)` keys each argument from its position on, `def env(**kw)`
                # any keyword's (unknown after a `*x` or a `**d`)
                if param.startswith(KWARG_MARK):
                    collected = [k.value for k in keywords if k.arg is not None]
                    unshown = any(k.arg is None for k in keywords)
                else:
                    collected = positional[position:] if positional is not None else []
                    unshown = positional is None
                for element in collected:
                    self._key_given(call, element, False, scopes, use)
                if unshown:
                    self._key_given(call, None, True, scopes, use)
                continue
            if positional is not None and 0 <= position < len(positional):
                given = positional[position]
            else:
                given = next((k.value for k in keywords if k.arg == param), None)
                unknown = unknown or (given is None and any(k.arg is None for k in keywords))
                # a field a base class places: any positional argument may be it
                unknown = unknown or (given is None and position == FIELD_POSITION_UNKNOWN and bool(args))
            self._handed_on(given, scopes, use)
            if use == "command":
                if given is not None:
                    self._command(given, scopes, call, keywords)
                continue
            self._key_given(call, given, unknown, scopes, use)

    def _key_given(self, call: ast.Call, given: ast.expr | None, unknown: bool, scopes: list[ast.AST], use: str) -> None:
        """The key a helper's call builds from the argument `given` (None: not given, or
        not shown where `unknown`)."""
        if given is None and not unknown:
            return  # the helper's own default
        template = template_of(use)
        if template is None:
            return
        # the names the key becomes with the argument given (envkeys: a prefix added,
        # a case changed, an alias table looked up); a pattern no declared variable
        # fits reads none, one some may fit is `$?`
        names = self.strings.values(given, scopes) if given is not None else None
        read, unresolved = declared_reads(patterns(template, names), self.declared)
        where = given if given is not None else call
        if unresolved:
            self._row(where, ENV_UNRESOLVED, "environ", "env_helper")
        for name in read:
            self._row(where, env_subject(name), "environ", "env_helper")

    def _member_call(self, call: ast.Call, use: str) -> None:
        """`EnvVar.PAGE_SIZE.get()`: the key the member's method makes of its value."""
        template = template_of(use)
        if template is None:
            return
        read, unresolved = declared_reads(patterns(template, None), self.declared)
        if unresolved:
            self._row(call, ENV_UNRESOLVED, "environ", "env_helper")
        for name in read:
            self._row(call, env_subject(name), "environ", "env_helper")

    def _handed_on(self, given: ast.expr | None, scopes: list[ast.AST], use: str) -> None:
        """`def page(name): return get_env(name)`: page takes the key (or command) too,
        and its callers are read like the helper's (through any chain of such); a key
        built from page's parameter (`get_env("PAGE_" + name)`) is the helper's key of
        what page builds (envkeys.substitute)."""
        function = next((n for n in reversed(scopes) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))), None)
        if given is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        args = function.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        if isinstance(given, ast.Name):
            if given.id in params:
                self.env_params.add((self.function, given.id, use))
            return
        template = template_of(use)
        if template is None:
            return
        for param in sorted(params & {sub.id for sub in ast.walk(given) if isinstance(sub, ast.Name)}):
            built = KeyCompiler(self.strings, function, param).compile(given, scopes)
            if depends(built):
                self.env_params.add((self.function, param, use_of(substitute(template, built))))

    def _command(self, given: ast.expr, scopes: list[ast.AST], call: ast.Call, keywords: Sequence[ast.keyword]) -> None:
        """A command handed to a function that runs it in a child: the declared names
        its literal text shows are read here (configbags.migrate.childenv), and so is
        every variable where a command it may be prints the environment back, or reads
        a program on its standard input (`input=`, passed on through the helper's `**kw`)
        that does, or names one (configbags.migrate.childargv rebuilds the command)."""
        scope = next((n for n in reversed(scopes) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))), self.strings.tree)
        spelled: set[str] = set()
        for _, text in command_fragments(
            [given], lambda expr: self.strings.value(expr, scopes), scope, self.strings.tree,
            lambda expr: self.strings.bound(expr, scopes),
        ):
            spelled.update(named_variables(text, self.declared))
        rebuilder = CommandRebuilder(self._command_word, self.strings.bound, lambda expr: frozenset({dotted(expr)}))
        commands = self._with_executable(rebuilder.commands(given, scopes), keywords, scopes)
        shown = {n for text in command_texts(commands) for n in named_variables(text, self.declared)}
        # each command it may run (either branch of a conditional, a list grown...) reads
        # what a launch of it would: not a name it only sets, unsets or mentions (`["env",
        # "NAME=16", ...]`, `docker run -e NAME=16`), unless its output goes to a file; a
        # name spelled where no command rebuilt shows it stays read
        named = spelled - shown
        for command in commands:
            named |= command_reads(command, self.declared) if self._output_back(keywords) else (
                {n for text in command_texts([command]) for n in named_variables(text, self.declared)}
            )
        for name in sorted(named):
            self._row(given, env_subject(name), "environ", "child_process")
        if not program_shown(commands) and opaque_command(given, parameters(scope), imported_names(self.strings.tree)):
            # deny by default: a command the caller does not show either (`run_cmd(build())`)
            self._row(given, ENV_UNRESOLVED, "environ", "child_command")
        def whole(code: str) -> bool:
            return python_reads_whole(code, self.declared)

        if command_dumps(commands, whole):
            self._row(given, ENV_UNRESOLVED, "environ", "environ_whole")
        if any(
            kind != PYTHON_MODULE and not kind.startswith(MODULE_ARGUMENT)
            for c in commands if isinstance(c, tuple) for kind, _ in child_files(list(c), [None] * len(c))
        ):
            # a file the handed command runs (`run_cmd(["bash", ROOT / "scripts/launch.sh"])`) is
            # judged where a launch itself names it (configbags.migrate.childfiles), never
            # through a helper: deny by default; a module by its name (`python -m pkg.serve`,
            # most often someone else's) is judged only where a launch names it
            self._row(given, ENV_UNRESOLVED, "environ", "child_file")
        fed = next((k.value for k in keywords if k.arg == "input"), None)
        readers = {stdin_reader(list(c)) for c in commands if isinstance(c, tuple)} - {None}
        if fed is None or not readers:
            return
        program = self.strings.value(fed, scopes)
        if program is None:
            self._row(fed, ENV_UNRESOLVED, "environ", "environ_whole")
            return
        for name in named_variables(program, self.declared):
            self._row(fed, env_subject(name), "environ", "child_process")
        if ("shell" in readers and shell_prints_environment(program, whole)) or ("python" in readers and whole(program)):
            self._row(fed, ENV_UNRESOLVED, "environ", "environ_whole")

    def _with_executable(self, commands: list[Command], keywords: Sequence[ast.keyword], scopes: list[ast.AST]) -> list[Command]:
        """The commands run where the caller names the program too (`sh(["true"],
        executable="env")`, passed on through the helper's `**kw`), as on a launch
        (childenv.launcher_commands): the program, given the argv's words after its first
        (a command line's shell, given `-c` and the line); each branch of a conditional."""
        given = next((k.value for k in keywords if k.arg == "executable"), None)
        if given is None:
            return commands
        shell = next((k.value for k in keywords if k.arg == "shell"), None)
        shells = [False, True] if shell is not None and not isinstance(shell, ast.Constant) else [shell is not None and bool(shell.value)]
        found: list[Command] = []
        for program in executables(given):
            if program is None:
                found += commands
                continue
            word = self._command_word(program, scopes)
            for command in commands:
                for under_shell in shells:
                    if command is None:
                        found.append(None)
                    elif under_shell:
                        found.append((word, "-c", command) if isinstance(command, str) else (word, "-c", *command))
                    else:
                        found.append((word, *command[1:]) if isinstance(command, tuple) else (word,))
        return found

    @staticmethod
    def _output_back(keywords: Sequence[ast.keyword]) -> bool:
        """Is the handed command's output not sent to a file (`stdout=fh`: what it prints
        may run)? As on a launch, only then may a name it only mentions read nothing."""
        output = next((k.value for k in keywords if k.arg == "stdout"), None)
        return output is None or (isinstance(output, ast.Constant) and output.value is None) or (
            dotted(output) in {"subprocess.PIPE", "subprocess.DEVNULL"}
        )

    def _command_word(self, expr: ast.expr, scopes: Sequence[ast.AST]) -> str | None:
        """A word of a handed command (`sys.executable` is a Python interpreter)."""
        if dotted(expr) == "sys.executable":
            return "python"
        return self.strings.value(expr, scopes)

    def _context(self, parent: ast.AST | None, node: ast.expr | None = None) -> None:
        if isinstance(parent, ast.Attribute) and parent.attr == "state":
            self._row(parent, STATE_READBACK, "readback", "state")
        elif isinstance(parent, ast.Attribute) and parent.attr in CONTEXT_READBACK_METHODS:
            self._row(parent, f"Context.{parent.attr}", "readback", parent.attr)
        elif node is not None and self._handed_to_call(parent, node):
            # `asyncio.run(actx())`, `await asyncio.gather(actx())`, `read(ctx)`: the callee
            # (the event loop, for an async getter's coroutine) gives it back or reads it
            self._row(node, STATE_READBACK, "readback", "context_escape")

    def _handed_to_call(self, parent: ast.AST | None, node: ast.expr) -> bool:
        """Is `node` an argument of a call (not its callee), other than of one that reads
        nothing of it (`callable(ctx)`)?"""
        if isinstance(parent, ast.keyword):
            at = next((i for i, p in enumerate(self.parents) if p is parent), 0)
            parent = self.parents[at - 1] if at else None
        if not isinstance(parent, ast.Call) or parent.func is node:
            return False
        return dotted(parent.func).rpartition(".")[2] not in READS_NOTHING

    def _held(self, node: ast.Name | ast.Attribute, parent: ast.AST | None = None) -> None:
        """`CTX.state`, `h.ENV["X"]`: a module-level holder of another module; and what a
        class of another module keeps (`Doors.CTX`, `Admin().ctx`, `self.ctx` in a
        subclass of Admin)."""
        name = dotted(node)
        parent = parent or (self.parents[-1] if self.parents else None)
        kept = self.kept.get((self.function, name)) or self.kept.get(("<module>", name))
        spelled = {name, *self.spellings(node)} if self.flows.context_holders or self.flows.environ_holders else {name}
        if not spelled.isdisjoint(self.flows.context_holders) or kept == "context":
            self._context(parent, node)
        elif not spelled.isdisjoint(self.flows.environ_holders) or kept == "environ":
            self._environ(node, parent)

    def spellings(self, node: ast.expr) -> set[str]:
        """How an attribute of an instance is spelled among another module's class
        holders: `Admin().ctx` for itself, for `a.ctx` where the function binds `a` only to
        `Admin()`, and for `self.ctx` (or `self.CTX`, `Admin.CTX` then too) in a method
        of a class whose base is `Admin`."""
        if not isinstance(node, ast.Attribute):
            return set()
        base = node.value
        if isinstance(base, ast.Call):
            maker = dotted(base.func)
            return {f"{maker}().{node.attr}"} if maker else set()
        if not isinstance(base, ast.Name):
            return set()
        function = next((p for p in reversed(self.parents) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if function is None:
            return set()
        at = self.parents.index(function)
        cls = self.parents[at - 1] if at else None
        if isinstance(cls, ast.ClassDef) and function.args.args and function.args.args[0].arg == base.id:
            bases = {dotted(b) for b in cls.bases} - {""}
            return {f"{b}().{node.attr}" for b in bases} | {f"{b}.{node.attr}" for b in bases}
        makers = {dotted(v.func) if isinstance(v, ast.Call) else "" for v in holders.instance_values(function, base.id)}
        return {f"{makers.pop()}().{node.attr}"} if len(makers) == 1 and "" not in makers else set()

    def _environ(self, node: ast.expr, parent: ast.AST | None) -> None:
        key: ast.expr | None = None
        form = "environ_whole"
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key, form = parent.slice, "environ_subscript"
        elif isinstance(parent, ast.Attribute) and parent.attr in _ENV_KEY_READS and len(self.parents) > 1:
            call = self.parents[-2]
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                key, form = call.args[0], "environ_get"
        elif isinstance(parent, ast.Compare) and node in parent.comparators:
            key, form = parent.left, "environ_in"
        elif self._handed_to_child_or_counted(node, parent):
            return
        self._environ_key(node, key, form)

    def _handed_to_child_or_counted(self, node: ast.expr, parent: ast.AST | None) -> bool:
        """Is the environment (or a copy of it) handed to a child process as its own
        (`subprocess.run(cmd, env=ENV)`), or only counted or tested (`len(ENV)`), as the
        door analysis lets `os.environ` be?"""
        if isinstance(parent, ast.keyword) and parent.arg == "env" and len(self.parents) > 1:
            call = self.parents[-2]
            return isinstance(call, ast.Call) and dotted(call.func).startswith(CHILD_PROCESS_PREFIXES)
        return isinstance(parent, ast.Call) and node in parent.args and dotted(parent.func) in ("len", "bool", "isinstance")

    def _environ_key(self, node: ast.expr, key: ast.expr | None, form: str) -> None:
        if key is None:
            self._row(node, ENV_UNRESOLVED, "environ", "environ_whole")
        else:
            # the name as the module shows it, or the parts it shows (envkeys)
            scopes = self._scopes()
            names = self.strings.values(key, scopes)
            if isinstance(key, ast.Constant) and isinstance(key.value, bytes):
                names = frozenset({key.value.decode("utf-8", "surrogateescape")})  # `os.environb[b"X"]`
            found = patterns(KeyCompiler(self.strings, None, None).compile(key, scopes), None) if names is None else (
                patterns(["s", *sorted(names)], None)
            )
            read, unresolved = declared_reads(found, self.declared)
            if unresolved:
                self._row(node, ENV_UNRESOLVED, "environ", form)
                return
            for name in read:
                self._row(node, env_subject(name), "environ", form)


def _fetched_name(expr: ast.expr) -> str:
    """`doors.ctx` for `getattr(doors, "ctx")`, else ""."""
    if not (isinstance(expr, ast.Call) and dotted(expr.func) == "getattr" and len(expr.args) == 2):
        return ""
    module, attr = dotted(expr.args[0]), expr.args[1]
    if module and isinstance(attr, ast.Constant) and isinstance(attr.value, str) and attr.value.isidentifier():
        return f"{module}.{attr.value}"
    return ""


def _helper_instances(flow: FlowFacts) -> dict[str, list[str]]:
    """class -> the module-level names bound to an instance of it (`ENV = Env()`), and
    the classes its metaclass makes, which are its instances too: `Env[k]` calls the
    metaclass's `__getitem__`, `Env.get(k)` its method."""
    instances: dict[str, list[str]] = defaultdict(list)
    for name, cls in flow.instances:
        if not cls.startswith(CARRIES):
            instances[cls].append(name)
    for row in flow.signatures:
        for route in row[7] if "." not in row[0] and len(row) > 7 else ():
            if route.startswith(METACLASS):
                instances[route[len(METACLASS):]].append(row[0])
    return instances


def _carried_spellings(names: Collection[str], flow: FlowFacts) -> list[tuple[str, str]]:
    """(spelling, name): the other spellings of the module's `names` (its helper entries,
    what gives the environment) its carriers give (_carriers): `ENV2.__getitem__` for
    `ENV.__getitem__` where `ENV2 = ENV`, `get_env().get` where `get_env()` returns `ENV`,
    `ENVS[].__call__` for `ENVS = [ENV]`, `OUT.env.__getitem__` through `OUT = Outer()`
    and `Outer().env` carrying `E()`, chains of them."""
    if not names:
        return []
    carriers = [(name, cls[len(CARRIES):]) for name, cls in flow.instances if cls.startswith(CARRIES)]
    carriers += [(name, f"{cls}()") for name, cls in flow.instances if not cls.startswith(CARRIES)]
    if not carriers:
        return []
    known = {name: name for name in names if "@" not in name}
    pending = list(known)
    for _ in range(_MAX_CARRIER_DEPTH + 1):  # (a chain of carriers, one step a round)
        grown: list[str] = []
        for name in pending:
            for spelling, spelled in carriers:
                rest = name[len(spelled):]
                if name.startswith(spelled) and (not rest or rest[0] in ".([") and spelling + rest not in known:
                    known[spelling + rest] = known[name]
                    grown.append(spelling + rest)
        pending = grown
    return [(spelling, name) for spelling, name in known.items() if spelling != name]


# The kinds of what gives the environment (FlowFacts.fetchers)
_ENVIRON_KINDS = frozenset({"environ", "environ_holder", "environ_getter"})
# Bases whose inherited lookups call `self[key]` (collections.abc, typing)
_MAPPING_BASES = frozenset({"Mapping", "MutableMapping"})
_MAPPING_LOOKUPS = ("get", "__contains__")
# The helper methods Python calls from syntax (`ENV[k]`, `k in ENV`, `env(k)`, `Env[k]`)
SYNTAX_DUNDERS = frozenset({"__getitem__", "__contains__", "__call__", "__class_getitem__"})


def _on_new_instance(func: ast.expr) -> str:
    """`Env().get` for a method called on an instance made on the spot, else ""."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        maker = dotted(func.value.func)
        return f"{maker}().{func.attr}" if maker else ""
    return ""


def use_facts(
    tree: ast.Module, text: str, settings: ScanSettings, flows: FlowInput, strings: ModuleStrings | None = None,
    own_tables: Iterable[tuple[str, str, str]] = (),
) -> tuple[list[tuple[Any, ...]], list[tuple[str, str]], list[tuple[str, str, str]], list[tuple[Any, ...]]]:
    """(reads, fetchers, env_params, passes): the reads through imported context and
    environment fetchers, environment helpers and getter tables (the module's own too:
    `own_tables`), the module-level functions that return what one of the fetchers
    returns, the parameters handed on to a helper's key or command, and the module's
    context and environment getters handed to a decorator (DECORATED passes)."""
    tables = {
        spelled: (table_entries(value), own)
        for rows, own in ((flows.constants, False), (own_tables, True))
        for spelled, shape, value in rows
        if shape == ENV_TABLE
    }
    # a table's dispatch imported under a name (`from envs import __getattr__ as get`)
    dispatchers: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for spelled, shape, value in flows.constants:
        if shape == ENV_DISPATCH:
            for key, leaves in table_entries(value).items():
                dispatchers[spelled].setdefault(key, []).extend(leaves)
    names = {
        part
        for spelled in (
            *flows.context_fetchers, *flows.environ_fetchers, *flows.context_holders, *flows.environ_holders,
            *flows.environ_getters, *(entry.partition("|")[0].partition("@")[0] for entry in flows.env_helpers),
            *flows.state_getters, *flows.private_names, *tables,
            # a table module's dispatch, called by name (`__getattr__("X")`: _Uses._dispatched)
            *(["__getattr__"] if tables else []), *dispatchers,
        )
        for part in spelled.replace("()", "").replace(ELEMENT, "").split(".")
    }
    if not names:
        return [], [], [], []
    if flows.env_helpers and "partial" in text:
        # `get_or_16 = functools.partial(get_env, default="16")`: its calls are the helper's
        spelled_helpers = {entry.partition("|")[0]: [(0, "", "")] for entry in flows.env_helpers}
        names |= set(_partial_helpers(tree, spelled_helpers))
    if flows.env_helpers and "cls(" in text:
        names.add("cls")  # `return cls(name, default)` in a classmethod factory: its class's constructor
    lines = mention_lines(text, names)
    renamed, kept, renames, exported = _renamed_fetchers(tree, text, lines, flows)
    if renamed or kept:
        lines = mention_lines(text, names | renamed.keys() | {name for _, name in kept})
    if any(
        entry.partition("|")[0].rpartition(".")[2] in SYNTAX_DUNDERS or ELEMENT in entry.partition("|")[0]
        for entry in flows.env_helpers
    ):
        # `env["X"]` where `env` carries the helper object (`self.env`, a local bound to
        # it) spells no name of it, nor `h("X")` in `for h in HELPERS`: every statement
        # may call its dunder, or the helper
        lines = list(range(1, text.count("\n") + 2))
    walk = _Uses(lines, flows, frozenset(settings.env_vars), strings or ModuleStrings(tree), renamed, renames, kept)
    walk.tables = tables
    walk.dispatchers = dispatchers
    for node in tree.body:
        walk.visit(node)
    return walk.reads, [*walk.fetchers, *exported], sorted(walk.env_params), walk.decorated


def _renamed_fetchers(
    tree: ast.Module, text: str, lines: list[int], flows: FlowInput
) -> tuple[dict[str, str], dict[tuple[str, str], str], set[int], list[tuple[str, str]]]:
    """What the module keeps in a name of what a function giving a context or the
    environment gives, flow-insensitively like the uses: names bound to such a function
    (`open_ctx = doors.ctx`, `e = env`, chains of them; outside class bodies, whose
    attributes are called as `self.x()`, by a name not followed), and names bound to its
    result (`c = ctx()`, by function: the module's serve every function). Returns (name ->
    kind, (function, name) -> kind of the result, ids of the values bound by a rename, the
    module-level names as fetchers and holders for importers)."""
    renamed: dict[str, str] = {}
    kept: dict[tuple[str, str], str] = {}
    renames: set[int] = set()
    exported: list[tuple[str, str]] = []

    def kind_of(spelled: str) -> str | None:
        if spelled in flows.context_fetchers or renamed.get(spelled) == "context":
            return "context"
        if spelled in flows.environ_fetchers or renamed.get(spelled) == "environ":
            return "environ"
        return None

    parts = {p for spelled in (*flows.context_fetchers, *flows.environ_fetchers) for p in spelled.split(".")}
    while True:
        grown = False
        for function, in_class, node in _bindings(tree.body, lines, ""):
            value = node.value.value if isinstance(node.value, ast.Await) else node.value
            called = isinstance(value, ast.Call) and not _fetched_name(value)  # (`getattr(doors, "ctx")`: a rename)
            func = value.func if called and isinstance(value, ast.Call) else value
            kind = kind_of(_fetched_name(func) or dotted(func))
            if kind is None or (in_class and not called):
                continue
            for target in node.targets:
                assert isinstance(target, ast.Name)
                if called:
                    if (function, target.id) not in kept:
                        kept[function, target.id] = kind
                        if function == "<module>":
                            exported.append((target.id, f"{kind}_holder"))
                    continue
                renames.add(id(node.value))
                if target.id not in renamed:
                    renamed[target.id] = kind
                    grown = True
                    if function == "<module>":
                        exported.append((target.id, kind))
        if not grown:
            return renamed, kept, renames, exported
        lines = mention_lines(text, {*renamed, *parts})


def _bindings(statements: Iterable[ast.stmt], lines: list[int], qualname: str, in_class: bool = False) -> Iterator[
    tuple[str, bool, ast.Assign]
]:
    """(function, in a class body, the assignment) of the assignments to names only, on
    `lines`, at any depth."""
    for node in statements:
        if not mentions(lines, statement_span(node)):
            continue
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            yield qualname or "<module>", in_class, node
        inner, inner_class = qualname, in_class
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{qualname}.{node.name}" if qualname else node.name
            inner_class = isinstance(node, ast.ClassDef)
        for field in _STATEMENT_LISTS:
            for item in getattr(node, field, None) or ():
                if isinstance(item, ast.stmt):
                    yield from _bindings([item], lines, inner, inner_class)
                elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                    yield from _bindings(item.body, lines, inner, inner_class)


# ---- the project pass


def module_names(files: Sequence[str]) -> dict[str, str]:
    """Module name -> file: by the `__init__.py` chain above each file, and also by its
    whole path (for namespace packages and roots given as packages' parents). Only a
    file an import loads has a name, as on Linux: one named `.py` exactly (`x.PY`, `x.pyw`
    or a `.pth` beside `x.py`, scanned as scripts, stand for no module), a package's
    `__init__.py` before a module of its name (`dup/__init__.py` before `dup.py`)."""
    importable = sorted(
        (f for f in files if f.endswith(".py")), key=lambda f: posixpath.basename(f) != "__init__.py"
    )
    inits = {posixpath.dirname(f) for f in importable if posixpath.basename(f) == "__init__.py"}
    names: dict[str, str] = {}
    extra: dict[str, str] = {}
    for rel in importable:
        folder, base = posixpath.split(rel)
        stem = base.rsplit(".", 1)[0]
        chain = [] if stem == "__init__" else [stem]
        parts = [p for p in folder.split("/") if p] + chain
        if stem == "__init__" or folder in inits:
            while folder and folder in inits:
                folder, package = posixpath.split(folder)
                chain.insert(0, package)
        if chain and all(p.isidentifier() for p in chain):
            names.setdefault(".".join(chain), rel)
        if parts and all(p.isidentifier() for p in parts):
            extra.setdefault(".".join(parts), rel)
    for name, rel in extra.items():
        names.setdefault(name, rel)
    return names


class _Project:
    """The module table and what each module exports, for one round."""

    def __init__(
        self, files: Sequence[str], results: Mapping[str, FileScan], settings: ScanSettings,
        home_facts: Mapping[str, HomeFacts] | None = None,
    ) -> None:
        self.results = results
        self.settings = settings
        self.home_facts = home_facts or {}
        self.modules = module_names(files)
        self.module_of: dict[str, str] = {}
        for name, rel in sorted(self.modules.items(), key=lambda item: -len(item[0])):
            self.module_of[rel] = name  # the shortest name wins: the one imports use
        self.kinds: dict[str, dict[str, set[str]]] = {}
        for rel, result in results.items():
            table: dict[str, set[str]] = defaultdict(set)
            for name, kind in result.flow.fetchers:
                table[name].add(kind)
            for name in result.flow.holders:
                table[name].add("holder")
            # what gives the environment, by its carriers' spellings too (`ENV2.get` for
            # `ENV.get` where `ENV2 = ENV`)
            environ = {name for name, kinds in table.items() if any(kind in _ENVIRON_KINDS for kind in kinds)}
            for spelling, name in _carried_spellings(environ, result.flow):
                table[spelling] |= table[name] & _ENVIRON_KINDS
            self.kinds[rel] = table
        self._defs: dict[str, dict[str, tuple[Any, ...]]] = {}
        self.sorted_modules = sorted(self.modules)
        # files whose callables take an environment key or a child's command
        self.helper_files = {rel for rel, result in results.items() if result.flow.env_params}
        self.constant_files = {rel for rel, result in results.items() if result.flow.constants}
        # modules whose `__getattr__` serves names they do not bind (configbags.migrate.moduleattrs)
        self.dispatch_files = {
            rel for rel in self.constant_files if any(row[1] == MODULE_DISPATCH for row in results[rel].flow.constants)
        }
        self._served: dict[str, ServedModule] = {}
        # files binding class attributes (doors.ModuleStrings.class_rows)
        self.class_files = sorted(
            rel for rel in self.constant_files if any(row[1] in _CLASS_SHAPES for row in results[rel].flow.constants)
        )
        self._class_rows: dict[str, frozenset[tuple[str, str, str]]] | None = None
        self._subclasses: dict[tuple[str, str], list[tuple[str, str]]] | None = None
        self._helper_rows: dict[str, list[tuple[str, str]]] = {}
        # the first part of every scanned module's name: an import of any other names a
        # module that is not scanned (the standard library, a third party)
        self.tops = {module.partition(".")[0] for module in self.modules}
        self._imports: dict[str, dict[str, tuple[str, str]]] = {}
        self._bound: dict[str, set[str]] = {}
        for rel in results:
            self._home_reexports(rel)
        # modules that export something (a fetcher, a holder, or a name they import)
        self.exporting = {
            module for module, rel in self.modules.items() if self.kinds[rel] or any(r[2] for r in results[rel].flow.imports)
        }

    def defs(self, rel: str) -> dict[str, tuple[Any, ...]]:
        """qualname -> signature row, of `rel`'s functions, classes and methods."""
        known = self._defs.get(rel)
        if known is None:
            known = self._defs[rel] = {row[0]: row for row in self.results[rel].flow.signatures}
        return known

    def under(self, target: str) -> list[str]:
        """`target` and its submodules, among the scanned modules."""
        start = bisect.bisect_left(self.sorted_modules, target)
        found: list[str] = []
        for module in self.sorted_modules[start:]:
            if module != target and not module.startswith(target + "."):
                if not module.startswith(target):
                    break
                continue
            found.append(module)
        return found

    def package(self, rel: str) -> str:
        module = self.module_of.get(rel, "")
        if posixpath.basename(rel).rsplit(".", 1)[0] == "__init__":
            return module
        return module.rpartition(".")[0]

    def absolute(self, rel: str, level: int, module: str) -> str:
        if not level:
            package = self.package(rel)
            if package and module.partition(".")[0] not in self.tops and not self._standard_in_package(rel, module):
                # `from h_b import rec` in a script beside h_b.py (run from its folder, or
                # that folder put on sys.path): no scanned module has that name, the
                # sibling does
                sibling = f"{package}.{module}"
                if sibling in self.modules or f"{package}.{module.partition('.')[0]}" in self.modules:
                    return sibling
            return module
        base = self.package(rel).split(".") if self.package(rel) else []
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join([*base, *([module] if module else [])])

    def _standard_in_package(self, rel: str, module: str) -> bool:
        """Is `import json` in a module of a regular package (its folder holds
        `__init__.py`) the standard library's? Python 3 imports absolutely: a sibling
        `json.py` is imported only by `from . import json`, or where the package's folder
        is itself on sys.path (a script run from it), which a package module is not."""
        top = module.partition(".")[0]
        folder = posixpath.dirname(rel)
        return top in sys.stdlib_module_names and posixpath.join(folder, "__init__.py") in self.results

    def local_imports(self, rel: str) -> dict[str, tuple[str, str]]:
        """local name -> ("mod", module) or ("sym", "module:name")."""
        known = self._imports.get(rel)
        if known is not None:
            return known
        table: dict[str, tuple[str, str]] = self._imports.setdefault(rel, {})
        stars: list[str] = []
        for level, module, name, local in self.results[rel].flow.imports:
            target = self.absolute(rel, level, module)
            if not name:
                table[local] = self._module_or_name(target)
            elif name == "*":
                stars.append(target)
            else:
                joined = f"{target}.{name}" if target else name
                table[local] = ("mod", joined) if joined in self.modules else ("sym", f"{target}:{name}")
        for target in stars:
            # `from m import *` binds m's public names (all of them: `__all__` is not read)
            other = self.modules.get(target)
            if other is None or other == rel:
                continue
            for name in self.bound_names(other):
                if not name.startswith("_"):
                    table.setdefault(name, ("sym", f"{target}:{name}"))
        return table

    def _module_behind(self, rel: str, name: str, depth: int = 0) -> str:
        """The module `rel`'s `name` is, where it is one the scan does not read (`import os`
        there, or imported from yet another module that does), else ""."""
        if depth > 8 or "." in name or name in self.defs(rel) or self.kinds[rel].get(name):
            return ""
        found = self.local_imports(rel).get(name)
        if found is None:
            return ""
        kind, target = found
        if kind == "mod":
            return "" if target in self.modules else target
        module, _, inner = target.partition(":")
        other = self.modules.get(module)
        return self._module_behind(other, inner, depth + 1) if other is not None else ""

    def _module_or_name(self, target: str) -> tuple[str, str]:
        """("mod", target) for a module, or ("sym", "module:name") where `target` is a name
        a scanned module binds (`r = pkg.h.rec` binds r to h's rec); a module that is not
        scanned (the record's home, excluded) stays a module, under its own name."""
        if target in self.modules:
            return "mod", target
        head = target.rpartition(".")[0]
        while head:
            rel = self.modules.get(head)
            if rel is not None:
                name = target[len(head) + 1 :]
                if name.partition(".")[0] in self.bound_names(rel) | self.defs(rel).keys():
                    return "sym", f"{head}:{name}"
                break
            head = head.rpartition(".")[0]
        return "mod", target

    def bound_names(self, rel: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """The module-level names of `rel` that carry something across modules: its
        functions and classes, its fetchers and holders, the names it imports, and those
        its own star imports bind in turn (`pkg/__init__.py: from .h import *` binds h's
        names, so `from pkg import *` does too), as Python binds them."""
        known = self._bound.get(rel)
        if known is not None:
            return known
        flow = self.results[rel].flow
        # (`deco()` rows are what a decorator factory returns, no name of the module)
        names = {row[0] for row in flow.signatures if "." not in row[0] and "(" not in row[0]}
        names |= {name for name in self.kinds[rel] if "." not in name and "(" not in name}
        names |= {row[3] for row in flow.imports if row[2] != "*" and "." not in row[3]}  # `import os` binds os
        for level, module, name, _ in flow.imports:
            other = self.modules.get(self.absolute(rel, level, module)) if name == "*" else None
            if other is not None and other != rel and other not in seen:
                names |= {n for n in self.bound_names(other, seen | {rel}) if not n.startswith("_")}
        if not seen:
            self._bound[rel] = names  # (inside a cycle a module knows only part of its names)
        return names

    def symbol(self, module: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """Where `module`'s `name` is defined, following re-exports: (file, name), or
        None when the module is not scanned."""
        rel = self.modules.get(module)
        if rel is None:
            return None
        head = name.split(".")[0]
        if depth < 8 and head not in self.defs(rel) and not self.kinds[rel].get(head):
            found = self.local_imports(rel).get(head)
            if found is not None and found[0] == "sym":
                target_module, _, target_name = found[1].partition(":")
                rest = name[len(head) :]
                return self.symbol(target_module, target_name + rest, depth + 1) or (rel, name)
        return rel, name

    def resolve(self, rel: str, spelled: str) -> tuple[str, str] | tuple[None, str]:
        """The definition a name spelled in `rel` refers to: (file, qualname), or (None,
        "module:name") for a name of a module that is not scanned, (None, "") unknown."""
        parts = spelled.split(".")
        head = parts[0]
        imports = self.local_imports(rel)
        if head in self.defs(rel) and head not in imports:
            return rel, spelled
        found = imports.get(head)
        if found is None:
            return None, ""
        kind, target = found
        rest = parts[1:]
        while kind == "mod" and rest and f"{target}.{rest[0]}" in self.modules:
            target = f"{target}.{rest.pop(0)}"
        if kind == "mod":
            if not rest:
                return None, ""
            module, name = target, ".".join(rest)
        else:
            module, _, name = target.partition(":")
            name = ".".join([name, *rest])
        site = self.symbol(module, name)
        return site if site is not None else (None, f"{module}:{name}")

    def kinds_of(self, rel: str, spelled: str) -> set[str]:
        site = self.resolve(rel, spelled)
        if site[0] is None:
            return set()
        return self.kinds[site[0]].get(site[1], set())

    def flow_input(self, rel: str, params: frozenset[tuple[str, str]]) -> FlowInput:
        """What `rel`'s imports are, by the names it spells them with."""
        spelled: dict[str, set[str]] = defaultdict(set)
        record = next((facts.kind for facts in self.home_facts.values() if facts.kind[0]), ("", ()))
        for local, (kind, target) in self.local_imports(rel).items():
            self._home_getters(local, kind, target, spelled)
            if target.partition(".")[0].partition(":")[0] not in self.tops:
                continue
            if kind == "sym":
                self._imported_name(rel, local, spelled)
                continue
            prefix = len(target)
            for module in self.under(target):
                if module not in self.exporting:
                    continue
                other = self.modules[module]
                dotted_prefix = local + module[prefix:]
                for name in self._exported(other):
                    for found in self.kinds_of(other, name) | self.kinds[other].get(name, set()):
                        spelled[found].add(f"{dotted_prefix}.{name}")
        for name, kinds in self.kinds[rel].items():
            # the module's own functions returning a context or the environment: their
            # uses are read here too (the record's own are the alias analysis's)
            for kind in kinds & {"context", "environ"}:
                spelled[kind].add(name)
            for kind in kinds:
                if kind.startswith(_OWN_KINDS) or kind == "parser":
                    spelled[kind].add(name)  # its own fillers, namespace readers and parsers too
        self._inherited_home_reads(rel, spelled)
        return FlowInput(
            record_fetchers=frozenset(spelled["record"]),
            record_holders=frozenset(spelled["holder"]),
            context_fetchers=frozenset(spelled["context"]),
            environ_fetchers=frozenset(spelled["environ"]),
            params=params,
            context_holders=frozenset(spelled["context_holder"]),
            environ_holders=frozenset(spelled["environ_holder"]),
            environ_getters=frozenset(spelled["environ_getter"]),
            env_helpers=self.env_helpers(rel),
            constants=self.imported_constants(rel) | self.class_bindings(rel),
            served_imports=self.served_imports(rel),
            state_getters=frozenset(spelled["readback"]),
            private_names=frozenset(spelled["private"]),
            holder_classes=frozenset(spelled["holder_class"] | spelled["repr_holder"] | spelled["eq_holder"]),
            repr_holders=frozenset(spelled["repr_holder"]),
            eq_holders=frozenset(spelled["eq_holder"]),
            stored_holders=frozenset(spelled["stored_holder"]),
            fillers=frozenset(
                f"{name}|{kind.partition(':')[2]}" for kind, names in spelled.items() if kind.startswith("fills:")
                for name in names
            ),
            namespace_readers=frozenset(
                f"{name}|{kind.partition(':')[2]}" for kind, names in spelled.items() if kind.startswith("namespace:")
                for name in names
            ),
            parser_fillers=_positional(spelled, "parser_fills:"),
            parser_givers=frozenset(spelled["parser"]),
            parse_helpers=_positional(spelled, "parses:"),
            record_dict_holders=frozenset(spelled["record_dict_holder"]),
            record_dict_fetchers=frozenset(spelled["record_dict"]),
            home_holders=frozenset(spelled["home_holder"]),
            home_reads=frozenset(
                (name, kind.partition(":")[2]) for kind, names in spelled.items() if kind.startswith("home_read:")
                for name in names
            ),
            # the record class's methods, called on the record wherever it is reached
            home_methods=frozenset(row for facts in self.home_facts.values() for row in facts.reads.methods),
            record_bases=self.record_bases(rel),
            record_kind=record[0],
            record_fields=record[1],
        )

    def _inherited_home_reads(self, rel: str, spelled: dict[str, set[str]]) -> None:
        """`rel`'s own subclasses of a home class (`class Mine(Holder)`) read what the class's
        attributes read (`Mine.cfg`, `Mine().cfg` as `Holder.cfg`), the attributes they bind
        themselves apart, and a subclass of a facade class what the class does."""
        flow = self.results[rel].flow
        own = {row[0] for row in flow.constants if len(row) > 1 and row[1] in (CLASS_BINDS, CLASS_BINDS_UNKNOWN)}
        own |= {row[0] for row in flow.signatures}
        reading = [names for kind, names in spelled.items() if kind.startswith("home_read:")]
        for _ in range(len(flow.bases)):  # a chain of subclasses, one step a round
            added = False
            for cls, *bases in flow.bases:
                for base, names in ((base, names) for base in bases for names in reading):
                    new = {cls} if base in names else set()
                    for name in names:
                        for way in (".", "()."):
                            rest = name[len(base) + len(way):] if name.startswith(base + way) else ""
                            if rest and f"{cls}.{rest.partition('.')[0]}" not in own:
                                new |= {f"{cls}.{rest}", f"{cls}().{rest}"}
                    added |= not new <= names
                    names |= new
            if not added:
                break

    def record_bases(self, rel: str) -> frozenset[str]:
        """`rel`'s classes the record class derives from, as its home imports them (a
        mixin, `from eng.mixin import ArgsMixin`; FlowInput.record_bases)."""
        here = self.module_of.get(rel)
        return frozenset(
            name for home, facts in self.home_facts.items() for level, module, name in facts.bases
            if relative_module("." * level + module, home.rpartition(".")[0]) == here
        )

    def imported_constants(self, rel: str) -> frozenset[tuple[str, str, str]]:
        """Other modules' constants `rel` imports (FlowInput.constants)."""
        if not self.constant_files:
            return frozenset()
        found: set[tuple[str, str, str]] = set()
        for local, (kind, target) in self.local_imports(rel).items():
            if kind == "sym":
                site = self.resolve(rel, local)
                if site[0] is not None and site[0] in self.constant_files:
                    found.update((local, shape, value) for name, shape, value in self.constant_rows(site[0]) if name == site[1])
                    found.update(self._dispatch_imported(local, (site[0], site[1])))
                continue
            for module in self.under(target):
                other = self.modules[module]
                if other in self.constant_files:
                    prefix = local + module[len(target) :]
                    found.update((f"{prefix}.{name}", shape, value) for name, shape, value in self.constant_rows(other))
        return frozenset(found)

    def _dispatch_imported(self, local: str, site: tuple[str, str]) -> list[tuple[str, str, str]]:
        """`from envs import __getattr__ as get`: the table's dispatch under a name of the
        importer, read where it is called (_Uses._dispatched)."""
        if site[1] != DISPATCH:
            return []
        return [(local, ENV_DISPATCH, value) for _, shape, value in self.constant_rows(site[0]) if shape == ENV_TABLE]

    def served_imports(self, rel: str) -> frozenset[tuple[int, str, str, str]]:
        """What `rel`'s from-imports read where another module's `__getattr__` serves
        the name (FlowInput.served_imports): a module that binds `__getattr__` and not
        the name; a declared variable's name from a module the scan does not read too."""
        declared = frozenset(self.settings.env_vars)
        found: set[tuple[int, str, str, str]] = set()
        for level, module, name, _ in self.results[rel].flow.imports:
            if not name or (not self.dispatch_files and name not in declared):
                continue
            target = self.absolute(rel, level, module)
            other = self.modules.get(target)
            if other is None:
                # (`import_module("a.b")` rows name no module part: `from a import b` only)
                leaves = {env_subject(name)} if name in declared and target else set()
            elif other in self.dispatch_files and other != rel:
                leaves = self.served_module(other).imported(name, declared)
            else:
                continue
            found.update((level, module, name, leaf) for leaf in leaves)
        return frozenset(found)

    def served_module(self, rel: str) -> ServedModule:
        """What `rel`'s `__getattr__` reads of the names it is asked."""
        known = self._served.get(rel)
        if known is None:
            rows = self.constant_rows(rel)
            entries: dict[str, list[str]] = {}
            for _, shape, value in rows:
                if shape == ENV_TABLE:
                    for key, leaves in table_entries(value).items():
                        entries.setdefault(key, []).extend(leaves)
            value = next(value for _, shape, value in rows if shape == MODULE_DISPATCH)
            known = self._served[rel] = ServedModule.from_row(
                value, entries=entries, templates=dispatch_templates(self._helpers_of(rel)),
                body=dispatch_body(self.results[rel].reads),
            )
        return known

    def constant_rows(self, rel: str) -> tuple[tuple[str, str, str], ...]:
        return tuple(
            (str(name), str(shape), str(value)) for name, shape, value in self.results[rel].flow.constants
            if shape not in _CLASS_SHAPES  # (for the class's module alone: class_bindings)
        )

    def class_bindings(self, rel: str) -> frozenset[tuple[str, str, str]]:
        """What other modules bind the attributes of `rel`'s classes to (FlowInput.
        constants, shapes CLASS_BINDS*): each subclass's own bindings and class keywords
        (at any depth of subclassing, through any module), and `Cls.attr = ...` on the
        imported class itself, so a base's `self.attr` reads every value (R13-7)."""
        if self._class_rows is None:
            self._class_rows = self._outside_class_rows()
        return self._class_rows.get(rel, frozenset())

    def _outside_class_rows(self) -> dict[str, frozenset[tuple[str, str, str]]]:
        bound: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)  # (file, class) -> rows
        parents: dict[tuple[str, str], list[tuple[str, str]]] = {}
        found: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
        loads: dict[str, set[str]] = defaultdict(set)  # file -> the attributes it reads through self / cls
        for rel in self.class_files:
            flow = self.results[rel].flow
            own = {row[0] for row in flow.bases}
            for cls, *bases in flow.bases:
                parents[(rel, cls)] = [site for base in bases if (site := self.resolve(rel, base))[0] is not None]
            for spelled, shape, value in flow.constants:
                if shape == CLASS_LOADS:
                    loads[rel].update(str(value).split("\0"))
                if shape not in (CLASS_BINDS, CLASS_BINDS_UNKNOWN):
                    continue
                owner, _, attr = str(spelled).rpartition(".")
                if owner in own:
                    bound[(rel, owner)].append((attr, shape, value))
                    continue
                module = self._scanned_module(rel, owner)
                if module is not None:
                    # `names.PAGE = ...` / `setattr(names, "PAGE", ...)` rebinds that module's
                    # constant (R16-8): handed to it under the bare name (ModuleStrings.outside)
                    if module != rel and self._may_matter(attr, shape, value, {attr}):
                        found[module].add((attr, shape, value))
                    continue
                site = self.resolve(rel, owner)  # `Knob.env_name = ...` on an imported class
                if site[0] is not None and site[0] != rel:
                    found[site[0]].add((f"{site[1]}.{attr}", shape, value))
        for (rel, cls), rows in bound.items():
            seen: set[tuple[str, str]] = set()
            pending = list(parents.get((rel, cls), ()))
            while pending:
                ancestor = pending.pop()
                if ancestor in seen:
                    continue
                seen.add(ancestor)
                pending += parents.get(ancestor, ())
                if ancestor[0] != rel:
                    found[ancestor[0]].update(
                        (f"{ancestor[1]}.{attr}", shape, value) for attr, shape, value in rows
                        if self._may_matter(attr, shape, value, loads[ancestor[0]])
                    )
        return {rel: frozenset(rows) for rel, rows in found.items()}

    def _scanned_module(self, rel: str, spelled: str) -> str | None:
        """The scanned module's file `rel`'s name `spelled` is (`import pkg.names as
        names`, `from pkg import names`), or None."""
        found = self.local_imports(rel).get(spelled)
        if found is None or found[0] != "mod":
            return None
        return self.modules.get(found[1])

    def _may_matter(self, attr: str, shape: str, value: str, loaded: set[str]) -> bool:
        """Can a subclass's binding change what its base's module reads? Only one of an
        attribute that module reads through `self` or `cls` (a class keyword: any), and a
        value shown only where it may be part of a declared variable's name, or the name
        part of it (case aside: `"page_size"`, `"echo $SGLANG_PAGE_SIZE"`). (Cheap: a
        base's module is analysed again for each it is handed.)"""
        if attr.startswith(KEYWORD_MARK):
            return True
        if attr not in loaded:
            return False
        if shape != CLASS_BINDS:
            return True
        declared = [name.upper() for name in self.settings.env_vars]
        return any(item.upper() in name or name in item.upper() for item in value.split("\0") for name in declared)

    def _helpers_of(self, rel: str) -> list[tuple[str, str]]:
        """(spelled in `rel`, entry tail "position|parameter|use") of `rel`'s own
        callables that use a parameter as an environment key or a child's command: its
        functions and classes by name, static methods as `Class.method`, and the methods
        of its instances (`ENV = Env()`: `ENV.get`)."""
        known = self._helper_rows.get(rel)
        if known is not None:
            return known
        flow = self.results[rel].flow
        uses: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        for function, param, use, *field in flow.env_params:
            # (a parameter may be a key and a command); a generated `__init__`'s field
            # comes with its position
            uses[function].append((param, use, *field))
        found: list[tuple[str, str]] = []
        if uses:
            instances = _helper_instances(flow)
            own = {row[0] for row in flow.signatures}
            mappings = {cls for cls, *bases in flow.bases if any(b.rpartition(".")[2] in _MAPPING_BASES for b in bases)}
            for row in flow.signatures:
                qualname, positional, kwonly, body = row[0], list(row[1]), row[2], row[5]
                # a plain method called through its class takes `self` first (a row's
                # seventh column, where the signatures say so)
                through_class = 1 if len(row) > 6 and row[6] else 0
                for param, use, *field in uses.get(body, ()):
                    owner, _, method = qualname.rpartition(".")
                    if field and field[0] == MEMBER_POSITION:
                        # an Enum member's method: `EnvVar.PAGE_SIZE.get()` reads the key it makes
                        found.append((f"{owner}.{param}.{method}", f"{MEMBER_POSITION}|{param}|{use}"))
                        continue
                    position = positional.index(param) if param in positional else field[0] if field else -1
                    if param.startswith(VARARG_MARK) and not param.startswith(KWARG_MARK):
                        position = len(positional)  # `def run(*argv)`: the arguments from there on
                    if position == -1 and param not in kwonly and not field and not param.startswith(KWARG_MARK):
                        continue  # `self`, or a parameter only the body names
                    shifted = position + through_class if position >= 0 else position
                    methods = [method]
                    if method == "__getitem__" and owner in mappings:
                        # a Mapping's inherited `get` and `__contains__` call `self[key]`
                        methods += [m for m in _MAPPING_LOOKUPS if f"{owner}.{m}" not in own]
                    for called in methods:
                        found.append((f"{owner}.{called}" if owner else qualname, f"{shifted}|{param}|{use}"))
                        for name in instances.get(owner, ()) if owner else ():
                            found.append((f"{name}.{called}", f"{position}|{param}|{use}"))
                        if owner:
                            # `self.get("X")` in the class's own methods (`@Class`: only there),
                            # and on an instance made on the spot, `Env().get("X")`
                            found.append((f"self.{called}@{owner}", f"{position}|{param}|{use}"))
                            found.append((f"{owner}().{called}", f"{position}|{param}|{use}"))
        found += _inherited_helpers(found, flow)
        tails: dict[str, list[str]] = defaultdict(list)
        for spelled, tail in found:
            tails[spelled].append(tail)
        found += [(spelling, tail) for spelling, name in _carried_spellings(tails, flow) for tail in tails[name]]
        self._helper_rows[rel] = found
        return found

    def env_helpers(self, rel: str) -> frozenset[str]:
        """The env_helpers entries of `rel` (configbags.migrate.scanmodel.FlowInput)."""
        if not self.helper_files:
            return frozenset()
        entries = {f"{spelled}|{tail}" for spelled, tail in self._helpers_of(rel)}
        for local, (kind, target) in self.local_imports(rel).items():
            # (another module's `self.` entries are its own classes')
            if kind == "sym":
                site = self.resolve(rel, local)
                if site[0] is None or site[0] not in self.helper_files:
                    continue
                for spelled, tail in self._helpers_of(site[0]):
                    if "@" in spelled:
                        continue
                    rest = spelled[len(site[1]):]
                    # (`ENV.get`, `E().get`, a factory's `get_env()`, a container's `ENVS[]`)
                    if spelled.startswith(site[1]) and (not rest or rest[0] in ".(["):
                        entries.add(f"{local}{rest}|{tail}")
                continue
            for module in self.under(target):
                other = self.modules[module]
                if other in self.helper_files:
                    prefix = local + module[len(target) :]
                    entries.update(f"{prefix}.{spelled}|{tail}" for spelled, tail in self._helpers_of(other) if "@" not in spelled)
        # the module's own subclasses of an imported helper class (`class EngineEnv(Env)`)
        imported = [tuple(entry.split("|", 1)) for entry in entries if "@" not in entry.partition("|")[0]]
        entries.update(f"{spelled}|{tail}" for spelled, tail in _inherited_helpers(imported, self.results[rel].flow))
        entries.update(self._overriding_helpers(rel))
        return frozenset(entries)

    def _overriding_helpers(self, rel: str) -> set[str]:
        """`self.read("X")` in a method of `rel`'s class `Base`: where a scanned subclass
        (in any module) overrides `read` with a helper, `self` may be one of its instances,
        so the call is that helper's (`self.read@Base` with the override's entry tail)."""
        entries: set[str] = set()
        for cls, *_ in self.results[rel].flow.bases:
            for where, sub in self.subclasses(rel, cls):
                if where not in self.helper_files:
                    continue
                marker = f"@{sub}"
                for spelled, tail in self._helpers_of(where):
                    if spelled.startswith("self.") and spelled.endswith(marker):
                        entries.add(f"{spelled[: -len(marker)]}@{cls}|{tail}")
        return entries

    def _home_getters(self, local: str, kind: str, target: str, spelled: dict[str, set[str]]) -> None:
        """`from pkg.server_args import get_global_server_args` (or `S.get_global_server_args`
        after `import pkg.server_args as S` or `from pkg import server_args as S`): a second
        getter of the record's home module gives the record, as the raw accessor does; one
        returning the record dict gives the dict, and a module-level name bound to it is the
        dict; a holder of the record is the record. Those under an imported name come with
        it (`from pkg.server_args import STATE`: `STATE.args`; `ServerArgs`:
        `ServerArgs.instance`)."""
        module, name = self._home_target(kind, target)
        facts = self.home_facts.get(module)
        if facts is None:
            return
        offered = [
            ("record", facts.getters), ("record_dict", facts.dict_getters),
            ("record_dict_holder", facts.dict_holders), ("home_holder", facts.holders),
        ]
        # what a home function or name reads off the record where it is used:
        # `get_page_size()` reads `page_size` (kind "home_read:page_size")
        offered += _home_reads(facts)
        for found, names in offered:
            if not name:
                spelled[found].update(f"{local}.{each}" for each in names)
                continue
            for each in names:
                if each == name or each.startswith((name + ".", name + "().")):
                    spelled[found].add(local + each[len(name) :])

    def _home_target(self, kind: str, target: str) -> tuple[str, str]:
        """(module, name) an import binds, name "" for a module: the home module where the
        import binds it by its package (`from pkg import server_args`) or through a scanned
        module's name bound to it (`compat.py: from pkg import server_args`, then `from
        pkg.compat import server_args`), and what a scanned module's imported name is."""
        for _ in range(8):  # (a chain of re-exports; a cycle ends here)
            if kind == "mod":
                return target, ""
            module, _, name = target.partition(":")
            if f"{module}.{name}" in self.home_facts:
                return f"{module}.{name}", ""
            rel = self.modules.get(module)
            found = self.local_imports(rel).get(name) if rel is not None and "." not in name else None
            if found is None:
                return module, name
            kind, target = found
        return "", ""

    def _home_reexports(self, rel: str) -> None:
        """`compat.py: from pkg.server_args import get_global_server_args` (or the record
        dict under another name, `global_server_args_dict as ARGS`, or the module, `from pkg
        import server_args as S`, or all of it, `*`): a door of the home module that a
        scanned module imports is the same door for that module's importers, as if the
        module defined it (`compat.S.get_global_server_args()` too)."""
        if not self.home_facts:
            return
        offered: dict[str, set[str]] = defaultdict(set)
        for local, (kind, target) in self.local_imports(rel).items():
            self._home_getters(local, kind, target, offered)
            module, name = self._home_target(kind, target)
            if module in self.home_facts and name in self.settings.record_dicts:
                offered["record_dict_holder"].add(local)
        for level, module, name, _ in self.results[rel].flow.imports:
            facts = self.home_facts.get(self.absolute(rel, level, module)) if name == "*" else None
            if facts is not None:  # `from pkg.server_args import *` binds its public names
                shown = [("record", facts.getters), ("record_dict", facts.dict_getters), ("home_holder", facts.holders)]
                for found, names in shown + _home_reads(facts):
                    offered[found].update(each for each in names if not each.startswith("_"))
                public = {*facts.dict_holders, *self.settings.record_dicts}
                offered["record_dict_holder"].update(each for each in public if not each.startswith("_"))
        for found, bound in offered.items():
            for name in bound:
                self.kinds[rel][name].add(found)

    def _imported_name(self, rel: str, local: str, spelled: dict[str, set[str]]) -> None:
        """What a name `rel` imports from a scanned module is (`from m import x as local`),
        added to `spelled` by kind."""
        for found in self.kinds_of(rel, local):
            spelled[found].add(local)
        site = self.resolve(rel, local)
        if site[0] is None:
            return
        for name, kinds in self.kinds[site[0]].items():
            if name.startswith((site[1] + ".", site[1] + "().")):  # `from m import R`: R.ARGS holds the record
                for found in kinds:
                    spelled[found].add(local + name[len(site[1]) :])
        # `from pkg.compat import os`: a door module another module imports
        for found, attributes in _DOOR_MODULE_ATTRS.get(self._module_behind(site[0], site[1]), ()):
            spelled[found].update(f"{local}.{attribute}" for attribute in attributes)

    def _exported(self, rel: str) -> set[str]:
        names = {name for name, kinds in self.kinds[rel].items() if kinds}
        names |= {row[3] for row in self.results[rel].flow.imports if row[2] not in ("", "*")}
        if any(row[2] == "*" for row in self.results[rel].flow.imports):
            names |= self.bound_names(rel)  # `import pkg; pkg.rec()` with `from .h import *` in pkg
        return names

    def callee(self, rel: str, spelled: str) -> tuple[str, tuple[Any, ...]] | str | None:
        """The function a call spelled in `rel` runs: (file, signature); or the name of a
        module not scanned ("module:name"); or None (nothing known)."""
        how, _, name = spelled.partition(":")
        if how == "self":
            row = self.defs(rel).get(name)
            return self.through(rel, row) if row is not None else self._through(self._inherited(rel, name))
        if how == "super":
            return self._through(self._inherited(rel, name))
        if how == "meta":
            # `isinstance(rec, C)`: `C`'s metaclass's `__instancecheck__`
            owner, _, method = name.rpartition(".")
            site = self.resolve(rel, owner)
            return self.metaclass_method(site[0], site[1], method) if site[0] is not None else None
        if how != "name" or not name:
            return None
        site = self.resolve(rel, name)
        if site[0] is None:
            return site[1] or None
        where, row = site[0], self.defs(site[0]).get(site[1])
        if row is None and "." in site[1]:
            # a method the class inherits from a scanned base (`Worker.tp`, the hooks
            # `Worker.__setattr__` and `Totals.__add__` Python looks up the same way)
            where, row = self._inherited(site[0], site[1]) or (where, None)
        if row is not None and row[6]:
            # a plain method called through its class (`Worker.tp(w, rec)`): the first
            # argument is its `self`, which the row leaves out
            row = (row[0], ("", *row[1]), *row[2:])
        # (called through its class, a plain method's wrapper takes every argument as given)
        return self.through(where, row, unbound=bool(row[6])) if row is not None else None

    def _subclass_index(self) -> dict[tuple[str, str], list[tuple[str, str]]]:
        """(file, class) -> the classes of scanned modules that name it as a base."""
        if self._subclasses is None:
            index: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
            for rel in sorted(self.results):
                for cls, *bases in self.results[rel].flow.bases:
                    for base in bases:
                        site = self.resolve(rel, base)
                        if site[0] is not None:
                            index[(site[0], site[1])].append((rel, cls))
            self._subclasses = dict(index)
        return self._subclasses

    def overrides(self, rel: str, spelled: str) -> list[tuple[str, tuple[Any, ...]]]:
        """What else a call `self.method(...)` (or `cls.method(...)`) spelled in a method of
        `Class` may run: the `method` of every scanned subclass of `Class` (in any module,
        at any depth) that defines its own, since `self` may be an instance of any of them.
        (A subclass no scanned module defines is not known here.)"""
        how, _, name = spelled.partition(":")
        owner, _, method = name.rpartition(".")
        if how != "self" or not owner:
            return []
        found: list[tuple[str, tuple[Any, ...]]] = []
        for where, cls in self.subclasses(rel, owner):
            row = self.defs(where).get(f"{cls}.{method}")
            target = self.through(where, row) if row is not None else None
            if target is not None:
                found.append(target)
        return found

    def subclasses(self, rel: str, cls: str) -> list[tuple[str, str]]:
        """(file, class) of every scanned subclass of `rel`'s `cls`, at any depth."""
        index = self._subclass_index()
        found: dict[tuple[str, str], None] = {}
        todo = list(index.get((rel, cls), ()))
        while todo and len(found) < _MAX_SUBCLASSES:
            site = todo.pop()
            if site not in found:
                found[site] = None
                todo.extend(index.get(site, ()))
        return list(found)

    def callees(self, rel: str, spelled: str) -> list[tuple[str, tuple[Any, ...]] | str | None]:
        """Every function a call spelled in `rel` may run: what `callee` says, then the
        overrides a call through `self`/`cls` dispatches to."""
        return [self.callee(rel, spelled), *self.overrides(rel, spelled)]

    def metaclass_method(self, rel: str, cls: str, method: str, depth: int = 0) -> tuple[str, tuple[Any, ...]] | None:
        """`method` of the metaclass of `rel`'s class `cls` (given by its class statement,
        or a scanned base's), where a scanned module defines it, called bound to the
        class (its first parameter left out)."""
        row = self.defs(rel).get(cls)
        route = next((r for r in row[7] if r.startswith(METACLASS)), None) if row is not None else None
        if route is not None:
            site = self.resolve(rel, route[len(METACLASS):])
            found = self.defs(site[0]).get(f"{site[1]}.{method}") if site[0] is not None else None
            return (site[0], found) if site[0] is not None and found is not None else None
        for bases in self.results[rel].flow.bases if depth < 8 else ():
            if bases[0] != cls:
                continue
            for base in bases[1:]:
                site = self.resolve(rel, base)
                found = self.metaclass_method(site[0], site[1], method, depth + 1) if site[0] is not None else None
                if found is not None:
                    return found
        return None

    def _through(self, found: tuple[str, tuple[Any, ...]] | None) -> tuple[str, tuple[Any, ...]] | None:
        return self.through(*found) if found is not None else None

    def through(
        self, rel: str, row: tuple[Any, ...], depth: int = 0, unbound: bool = False
    ) -> tuple[str, tuple[Any, ...]] | None:
        """What a call of the function (or class) of `row` runs under its decorators
        (outermost first, those that pass the arguments on as given left out): the
        function itself where each returns it as it is or forwards `*args, **kwargs` to
        it; else the wrapper the outermost one returns, where a scanned module's
        decorator shows it (`def with_tp(fn): def wrapper(args): ...; return wrapper`);
        else None: a decorator no scanned module defines (`functools.singledispatch`,
        whose registered implementations run), or one whose result is not shown."""
        decorators = row[7]
        binds = bool(decorators) and decorators[0] == BINDS and not unbound
        for decorator in decorators:
            if decorator in (BINDS, KEEPS):
                continue
            if decorator.startswith(METACLASS):
                break
            transparent = decorator.startswith(TRANSPARENT)
            decorator = decorator.removeprefix(TRANSPARENT)
            called = decorator.endswith("()")
            site = self.resolve(rel, decorator[:-2] if called else decorator)
            if transparent and (site[0] is None or site[1] not in self.defs(site[0])):
                continue  # `functools.cache`, `torch.no_grad()`: the arguments as given
            if site[0] is None or depth > 8:
                return None
            wrapper = self.defs(site[0]).get(f"{site[1]}(){'()' if called else ''}")
            if wrapper is None:
                return None
            if AS_IS not in wrapper[7]:
                if binds:  # `self.m(rec)`: the wrapper's first parameter takes `self`
                    wrapper = (wrapper[0], tuple(wrapper[1][1:]), *wrapper[2:])
                return self.through(site[0], wrapper, depth + 1)
        if row[5] == f"{row[0]}.__init__":
            # a class: a metaclass of a scanned module (its own or a base's) with its own
            # `__call__` runs first (`super().__call__` in it is `type`'s: an escape there)
            found = self.metaclass_method(rel, row[0], "__call__")
            if found is not None:
                return found
        return rel, row


    def _inherited(self, rel: str, name: str, depth: int = 0) -> tuple[str, tuple[Any, ...]] | None:
        """`Class.method` as the nearest base class of `Class` that defines it (only
        bases of scanned modules: any other is no function known here)."""
        owner, _, method = name.rpartition(".")
        for row in self.results[rel].flow.bases:
            if row[0] != owner:
                continue
            for base in row[1:]:
                site = self.resolve(rel, base)
                if site[0] is None or depth > 8:
                    continue
                found = self.defs(site[0]).get(f"{site[1]}.{method}")
                if found is not None:
                    return site[0], found
                deeper = self._inherited(site[0], f"{site[1]}.{method}", depth + 1)
                if deeper is not None:
                    return deeper
        return None


def _parameter(row: tuple[Any, ...], position: int, keyword: str) -> str | None:
    positional, kwonly = row[1], row[2]
    if 0 <= position < len(positional):
        # "": the `self` of a method called through its class, never followed there
        return str(positional[position]) or None
    if position == -1 and keyword and (keyword in positional or keyword in kwonly):
        return keyword
    return None


@attrs.frozen
class HomeFacts:
    """What the record's home module (excluded from the scan, read only here) offers its
    importers: the names it defines itself (its functions, classes and assignments, the
    only ones whose calls are the home's own business), and its functions that give the
    record (a second getter, `def get_global_server_args() -> ServerArgs: return
    _GLOBAL_SERVER_ARGS`, annotated as the record or returning what the raw accessor
    returns: configbags.migrate.homegetters), which are raw accessors for every importer
    (a method by qualname, `ServerArgs.instance`, a context variable's `VAR.get`), and
    those giving the record dict, read by key like the dict; and where it keeps the record
    (`STATE.args`, `ServerArgs._instance`), which its importers read directly too."""

    defined: frozenset[str]
    getters: frozenset[str]
    dict_getters: frozenset[str] = frozenset()  # functions returning the record dict
    dict_holders: frozenset[str] = frozenset()  # module-level names bound to it
    holders: frozenset[str] = frozenset()  # names (dotted) holding the record
    # what its code reads off the record for a caller (homegetters.HomeReads)
    reads: HomeReads = attrs.field(factory=HomeReads)
    # (level, module, name) of the imported classes the record class derives from
    bases: frozenset[tuple[int, str, str]] = frozenset()
    # the record class's kind and fields (configbags.migrate.recordkinds)
    kind: tuple[str, tuple[str, ...]] = ("", ())

    @classmethod
    def of(cls, source: bytes, settings: ScanSettings) -> HomeFacts | None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
        defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        defined |= {
            target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)
        }
        found = home_getters(tree, settings)
        # an unannotated `def prepare_server_args(argv): return ServerArgs.from_cli(argv)`
        built = {
            node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != settings.raw_accessor
            and _builds_record(node, settings.record_class)
        }
        return cls(
            frozenset(defined), found.record | built, found.dicts, found.dict_names, found.holders,
            found.reads or HomeReads(), imported_bases(tree, settings.record_class),
            record_kind(tree, settings.record_class),
        )


def _home_reads(facts: HomeFacts) -> list[tuple[str, frozenset[str]]]:
    """(kind, names) of the home's functions and names whose use reads a leaf."""
    by_leaf: dict[str, set[str]] = defaultdict(set)
    for name, leaf in facts.reads.reads:
        by_leaf[leaf].add(name)
    return [(f"home_read:{leaf}", frozenset(names)) for leaf, names in sorted(by_leaf.items())]


def _builds_record(function: ast.FunctionDef | ast.AsyncFunctionDef, record_class: str) -> bool:
    """Does `function` return a record it builds (`return ServerArgs.from_cli_args(ns)`, or
    a name bound to one: `sa = ServerArgs(**kw); return sa`), or the Namespace a parser it
    fills with `ServerArgs.add_cli_args(parser)` parses (`return parser.parse_args(argv)`,
    `parse_known_args(argv)[0]`)? The launcher's `prepare_server_args(argv)`: what it gives
    is the config, like a getter's."""
    filled = {
        arg.id for node in ast.walk(function) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in BUILDS_NOTHING and isinstance(node.func.value, ast.Name)
        and node.func.value.id == record_class
        for arg in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "parser")] if isinstance(arg, ast.Name)
    }

    def building(value: ast.expr | None) -> bool:
        if value is not None and filled and parsed_parser(value) in filled:
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == record_class:
            return True  # ServerArgs.from_cli(argv): a constructor reading the config
        # `ServerArgs()`, `ServerArgs(model_path="m")`: defaults and literals, no config
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name == record_class and built_origin(value) == "built"

    built = {
        target.id for node in ast.walk(function) if isinstance(node, ast.Assign) and building(node.value)
        for target in node.targets if isinstance(target, ast.Name)
    }
    return any(
        isinstance(node, ast.Return) and (building(node.value) or (isinstance(node.value, ast.Name) and node.value.id in built))
        for node in ast.walk(function)
    )


def home_modules(files: Sequence[str], results: Mapping[str, FileScan], settings: ScanSettings) -> set[str]:
    """The record's home modules the scanned files import (not scanned themselves), whose
    source the scan reads for HomeFacts: those they take the raw accessor or the record
    class from, and any named like the record (`legacy.server_args`)."""
    project = _Project(files, results, settings)
    named = {
        target for rel, result in results.items() for level, module, _, _ in result.flow.imports
        if (target := project.absolute(rel, level, module)) not in project.modules
        and target.rpartition(".")[2] in settings.record_attributes
    }
    # `from pkg import server_args`: the module itself imported by name from its package
    named |= {
        target for rel, result in results.items() for level, module, name, _ in result.flow.imports
        if name in settings.record_attributes and (target := f"{project.absolute(rel, level, module)}.{name}") not in project.modules
    }
    return _homes(project, settings) | named


def scanned_homes(files: Sequence[str], results: Mapping[str, FileScan], settings: ScanSettings) -> dict[str, str]:
    """Module -> file of the scanned modules that define the raw accessor: a home scanned
    with the rest (not excluded) offers its importers its second getters too, read from
    its source as an excluded home's are (`def get_global_server_args(): return _A`
    beside `def get_server_args(): return _A`)."""
    defining = {rel for rel, result in results.items() if (settings.raw_accessor, "record") in result.flow.fetchers}
    return {name: rel for name, rel in module_names(files).items() if rel in defining}


def _homes(project: _Project, settings: ScanSettings) -> set[str]:
    """Modules (not scanned) that files import the raw accessor or record class from."""
    homes: set[str] = set()
    for rel, result in project.results.items():
        for level, module, name, _ in result.flow.imports:
            if name in (settings.raw_accessor, settings.record_class):
                target = project.absolute(rel, level, module)
                if target not in project.modules:
                    homes.add(target)
    return homes


Rescan = Callable[[str, FlowInput], FileScan]


@attrs.frozen
class Outcome:
    sites: dict[str, list[tuple[Any, ...]]]  # file -> the reads found at its call sites
    problem: str | None  # set when the pass did not settle
    inputs: dict[str, FlowInput]  # file -> what it was told, where not nothing


def project_pass(
    files: Sequence[str], results: dict[str, FileScan], settings: ScanSettings, rescan: Rescan,
    homes: Mapping[str, bytes] | None = None,
) -> Outcome:
    """Run the pass over `results` (file -> its result with no input), re-analysing a
    file with its FlowInput through `rescan` until nothing changes; `results` then holds
    the final results."""
    inputs: dict[str, FlowInput] = {rel: FlowInput() for rel in results}
    # the record's home modules read (not scanned): module -> what they offer importers
    home_facts = {module: found for module, source in (homes or {}).items() if (found := HomeFacts.of(source, settings))}
    project = _Project(files, results, settings, home_facts)
    for _ in range(MAX_ROUNDS):
        params = _params(project)
        changed = False
        for rel in sorted(results):
            wanted = project.flow_input(rel, frozenset(params.get(rel, ())))
            if wanted != inputs[rel]:
                results[rel] = rescan(rel, wanted)
                inputs[rel] = wanted
                changed = True
        if not changed:
            break
        project = _Project(files, results, settings, home_facts)
    else:
        return Outcome(_call_site_reads(project, settings), f"the project pass did not settle in {MAX_ROUNDS} rounds", {})
    return Outcome(_call_site_reads(project, settings), None, {rel: found for rel, found in inputs.items() if found})


def _params(project: _Project) -> dict[str, set[tuple[str, str]]]:
    """file -> (function, parameter) that receive the record from some call site and do
    not already take it by annotation or name."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for rel, result in project.results.items():
        for _, callee, position, keyword, *_ in result.flow.passes:
            for target in project.callees(rel, callee):
                if not isinstance(target, tuple):
                    continue
                where, row = target
                param = _parameter(row, position, keyword)
                if param is not None and param not in row[3]:
                    found[where].add((row[5], param))
    return found


def _pass_read(
    target: tuple[str, tuple[Any, ...]] | str | None, position: int, keyword: str, whole: Mapping[str, set[str]],
    homes: set[str], home_facts: Mapping[str, HomeFacts] | None = None,
) -> tuple[str, str] | None:
    """(via, form) of the read at a call site handing the record to `target` (what
    _Project.callee says), or None where it reads nothing there."""
    if keyword == HOOK and not (isinstance(target, tuple) and _parameter(target[1], position, "")):
        return None  # the class defines no such hook: Python calls none
    if isinstance(target, tuple):
        where, row = target
        if row[5] in whole.get(where, ()):
            return ("helper", "passed_whole")
        if _parameter(row, position, keyword) is None:
            return ("escape", "escapes_call")
        return None
    if target is None or target.partition(":")[0] not in homes:
        return ("escape", "escapes_call")
    module, _, name = target.partition(":")
    facts = home_facts.get(module) if home_facts else None
    if facts is not None and name.partition(".")[0] not in facts.defined:
        # `from pkg.server_args import field`: a name the home only imports is not its own
        return ("escape", "escapes_call")
    return None


def _home_pass_reads(
    target: tuple[str, tuple[Any, ...]] | str | None, position: int, keyword: str,
    home_facts: Mapping[str, HomeFacts] | None,
) -> list[tuple[str, str, str]]:
    """(leaf, via, form) of what a home function handed the record reads off it there
    (`page_of(rec)`, `PortArgs.init_new(rec)`: homegetters.HomeReads.params); the home is
    not scanned, so its reads are the call site's."""
    if not isinstance(target, str) or not home_facts or keyword == HOOK:
        return []
    module, _, name = target.partition(":")
    facts = home_facts.get(module)
    if facts is None:
        return []
    return [
        (leaf, "home", "home_passed") for function, at, parameter, leaf in sorted(facts.reads.params)
        if function == name and ((position >= 0 and at == position) or (keyword and parameter == keyword))
    ]


def _call_site_reads(project: _Project, settings: ScanSettings) -> dict[str, list[tuple[Any, ...]]]:
    homes = _homes(project, settings)
    whole: dict[str, set[str]] = defaultdict(set)  # file -> functions that read `*`
    for rel, result in project.results.items():
        for row in result.reads:
            if row[1] == "*":
                whole[rel].add(row[0])
    reads: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for rel, result in project.results.items():
        for caller, callee, position, keyword, line, col, end_line, end_col in result.flow.passes:
            found_reads: list[tuple[str, str, str] | None]
            if position == DECORATED:
                found_reads = [_decorated_read(project, rel, callee, keyword, homes)]
            else:
                # (the callee's own read and each override's, once each)
                found_reads = []
                for target in project.callees(rel, callee):
                    pass_read = _pass_read(target, position, keyword, whole, homes, project.home_facts)
                    if pass_read is not None:
                        found_reads.append(("*", *pass_read))
                    found_reads.extend(_home_pass_reads(target, position, keyword, project.home_facts))
            for read in dict.fromkeys(found_reads):
                if read is not None:
                    leaf, via, form = read
                    reads[rel].append((caller, leaf, line, col, end_line, end_col, via, form, "held"))
    return reads


# What a function handed to a decorator that keeps it gives, by the kind a DECORATED pass
# names (its keyword, less a trailing "()"): (leaf, via, form) of the read at the decorator
_DECORATED_READS = {
    "": ("*", "escape", "escapes_fetcher"),
    "context": (STATE_READBACK, "readback", "context_escape"),
}


def _decorated_read(
    project: _Project, rel: str, callee: str, keyword: str, homes: set[str]
) -> tuple[str, str, str] | None:
    """(leaf, via, form) at a decorator handed a function giving the record or a context
    (a DECORATED pass; keyword: the kind, "()" added where the decorator is
    a call, `@register("args")`); None where what the decorator gives is the function as
    it is or a wrapper (a scanned module's decorator whose body shows it) and it keeps the
    function nowhere else, or a function of the record's home module. Any other decorator
    hands it to code that calls it under a name no analysis follows: a third party's, a
    class, a method of an object, one that stores it (`PROVIDERS[name] = fn`) or what it
    gives (`RESULTS[k] = fn()`)."""
    target = project.callee(rel, callee)
    if isinstance(target, tuple):
        where, row = target
        shown = project.defs(where).get(f"{row[0]}(){'()' if keyword.endswith('()') else ''}")
        if shown is not None and KEEPS not in shown[7] and "?" not in shown[7]:
            return None
    elif target is not None and target.partition(":")[0] in homes:
        return None
    return _DECORATED_READS.get(keyword.removesuffix("()"), _DECORATED_READS[""])


# ---- an import by a name with a literal package prefix (`import_module(f"pkg.models.{arch}")`)

# Modules whose names, bound in a module, reach the environment, the importer or every
# module (`os`, `sys.modules`, `importlib`, `gc`, a frame's globals), a config library, or
# configbags itself: a module binding one is a door for what imports it by a name
_DOOR_TOPS = frozenset({
    "os", "posix", "nt", "sys", "builtins", "importlib", "runpy", "pkgutil", "pydoc", "gc", "inspect", "ctypes",
    "subprocess", "__main__", "configbags", "dotenv", "environs", "decouple", "pydantic_settings", "omegaconf",
    "hydra", "configargparse", "jsonargparse", "click", "typer",
})
_DOOR_NAMES = frozenset({"get_context", "process_context", "environ", "getenv", "environb", "getenvb"})
# What shows in a file where code may add modules to a package by a name (a package's
# `__path__` extended, a module put in `sys.modules`)
_INJECT_WORDS = ("modules[", "modules.setdefault", "modules.update", "modules.__setitem__")
_PACKAGE_WORDS = ("__path__", *_INJECT_WORDS)


def prefixed_import_reads(
    reads: Sequence[Any], results: Mapping[str, FileScan], settings: ScanSettings,
    files_under: Callable[[str], Sequence[str]], text_of: Callable[[str], str],
) -> list[Any]:
    """The reads (configbags.migrate.scanmodel.Read) with each import by a name built on a
    literal package prefix (via PREFIXED_IMPORT + prefix, from
    configbags.migrate.reflection) judged: none where the prefix rules out every door,
    else the `$?` it is (via "reflection"). It rules them out where the prefix's package
    is a scanned package of the tree (its `__init__.py` scanned) whose folder holds only
    scanned modules (no file excluded, generated, compiled, nor one that extends a
    `__path__` or puts a module in `sys.modules`), and no module the prefix may name binds
    a door: a name of the record, a context or the environment (FlowFacts.fetchers,
    holders), an import of `os`, `sys`, `importlib` and the like (_DOOR_TOPS), of the
    record's home or an accessors module, of a getter, or of a module of the tree that
    does (or that is not scanned); and no module of the tree importing `sys` shows a
    write to `sys.modules`. `files_under(folder)` lists the files under a folder
    of the tree (project-relative), `text_of(rel)` a file's text."""
    if not any(read.via.startswith(PREFIXED_IMPORT) for read in reads):
        return list(reads)
    project = _Project(list(results), dict(results), settings)
    doors = _door_files(project, settings, home_modules(list(results), results, settings))
    # a module of the tree importing `sys` that may put a module in `sys.modules` under any name
    injected = any(
        any(row[1].partition(".")[0] == "sys" for row in result.flow.imports)
        and any(word in text_of(rel) for word in _INJECT_WORDS)
        for rel, result in results.items()
    )
    judged: dict[str, bool] = {} if not injected else dict.fromkeys(
        (read.via.removeprefix(PREFIXED_IMPORT) for read in reads), False
    )
    found: list[Any] = []
    for read in reads:
        if not read.via.startswith(PREFIXED_IMPORT):
            found.append(read)
            continue
        prefix = read.via.removeprefix(PREFIXED_IMPORT)
        if prefix not in judged:
            # (`=a.b|=c`: the modules a plugin loader's declared entry points name, each judged)
            judged[prefix] = all(
                _rules_out(part, project, doors, files_under, text_of) if not part.startswith("=")
                else _rules_out(part[1:] + ".", project, doors, files_under, text_of)
                and project.modules.get(part[1:]) not in doors
                for part in prefix.split("|")
            )
        if not judged[prefix]:
            found.append(read._replace(via="reflection"))
    return found


def _rules_out(
    prefix: str, project: _Project, doors: set[str], files_under: Callable[[str], Sequence[str]],
    text_of: Callable[[str], str],
) -> bool:
    """Does `prefix` (`pkg.models.`) name only modules of the tree that bind no door? Its
    package, or the nearest package above it, must be a scanned package of the tree (a
    regular one: a namespace package is found anywhere on the path), and every file where
    the rest of the name may be found a scanned module (or none at all: the import fails)."""
    parts = prefix.rpartition(".")[0].split(".")
    for size in range(len(parts), 0, -1):
        init = project.modules.get(".".join(parts[:size]))
        if init is not None and posixpath.basename(init) in ("__init__.py", "__init__.pyw"):
            break
    else:
        return False  # no package of the tree
    folder = posixpath.join(posixpath.dirname(init), *parts[size:])
    shown = [init, *files_under(folder), *(f"{folder}{s}" for s in (".py", ".pyw") if f"{folder}{s}" in project.results)]
    for rel in shown:
        suffix = posixpath.splitext(rel)[1].lower()
        if "/__pycache__/" in f"/{rel}":
            continue
        if suffix in (".py", ".pyw"):
            if rel not in project.results or any(word in text_of(rel) for word in _PACKAGE_WORDS):
                return False
        elif suffix in (".pyc", ".pyo", ".so", ".pyd"):
            return False  # a module the scan cannot read
    return not any(rel in doors for name, rel in project.modules.items() if name.startswith(prefix))


def _door_files(project: _Project, settings: ScanSettings, homes: set[str]) -> set[str]:
    """The scanned files whose namespace may hold a door (prefixed_import_reads), the
    modules they bind (and every module under those) counted: a fixpoint."""
    names = _DOOR_NAMES | {settings.raw_accessor, settings.record_class}
    doors: set[str] = set()
    needs: dict[str, set[str]] = {}
    for rel, result in project.results.items():
        flow = result.flow
        # (a parse helper gives the config only of a parser filled elsewhere: no door itself)
        own = any(not kind.startswith("parses:") for _, kind in flow.fetchers) or bool(flow.holders)
        bound: set[str] = set()
        for level, module, name, local in flow.imports:
            target = project.absolute(rel, level, module) if level else module
            full = f"{target}.{name}" if name and name != "*" else target
            own |= (
                target.partition(".")[0] in _DOOR_TOPS or name in names or target in homes or full in homes
                or target.rpartition(".")[2] == "accessors" or full.rpartition(".")[2] == "accessors"
            )
            # `import a.b` binds `a`: every module under it is reached by its attributes
            reached = local if not level and not name and local == module.partition(".")[0] else (
                full if full in project.modules else target
            )
            if reached.partition(".")[0] in project.tops:
                under = [f for m, f in project.modules.items() if m == reached or m.startswith(reached + ".")]
                own |= not under  # a module of the tree that is not scanned
                bound.update(under)
        if own:
            doors.add(rel)
        needs[rel] = bound
    grown = True
    while grown:
        grown = False
        for rel, bound in needs.items():
            if rel not in doors and not bound.isdisjoint(doors):
                doors.add(rel)
                grown = True
    return doors
