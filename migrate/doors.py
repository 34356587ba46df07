"""Reads that go around the accessors without touching the raw record ("doors"), found so
the ratchet can hold them to the allowlist like raw record reads:

- a raw read of an environment variable the schema declares (a leaf's `env:`, or an old
  name of it under `renamed_from`): `os.environ["NAME"]`, `os.environ.get("NAME")`,
  `os.environ.setdefault("NAME", ...)`, `os.environ.pop("NAME", ...)`, `os.getenv("NAME")`,
  `"NAME" in os.environ` (or `os.environ.keys()`), a copy's `os.environ.copy()["NAME"]` and
  `dict(os.environ)["NAME"]`, also through `from os import environ` / `getenv` / `*`,
  `import os as o`, `getattr(os, "environ")` and aliases (`env = os.environ`, `get =
  os.environ.get`), wherever Python evaluates them, a function's signature annotations
  too (they run with the `def`; under `from __future__ import annotations`,
  `typing.get_type_hints` runs them). The bytes environment, `os` reached through another
  module or a namespace dict, and expandvars are configbags.migrate.reflection's.
  A copy of the environment (_ENV_COPIERS, `{**os.environ}`, `|`, `.copy()`, of its
  `items()` too) is read like it. Any other use of an environment value (the environment,
  a copy, its pairs, one of its readers) is a use of it whole: iterated, passed to a
  function, returned or stored, it may read any variable, so it is reported as `$?`
  (form environ_whole). Only what reads nothing here is exempt: a child process's
  environment (_ENV_CHILD_PROCESS), `len`/`bool`/`isinstance`, a truth test, `is`, a
  binding to a name (whose uses are judged in turn), and writes.
  Also what reads a declared variable for the module: an attribute named like one
  (`envs.SGLANG_PAGE_SIZE.get()`, a descriptor per variable), a command-line library's
  `envvar=` / `auto_envvar_prefix=` (also stored: `ctx.auto_envvar_prefix = ...`), wsgiref's
  copy `BaseHandler.os_environ` / `read_environ()`, a `del` whose KeyError is caught, and a child's command naming one (childenv).
  The environment is one layer of the leaf; its accessor has the value resolved over all
  of them. Reported with leaf `$NAME`; an undeclared name is not reported, a name the
  module does not show (ModuleStrings, below, resolves what it does) is `$?`.
- an operator readback: `.state` of a config context (`get_context().state`, `ctx.state`
  after `ctx = get_context()`, and likewise `process_context`, the accessors' `publish`,
  `import_state`, `from_state`, `publish_distributed`, and what entering one of its scopes
  gives: `with ctx.scoped() as c`, `stack.enter_context(scoped_override(...))`,
  `S.__enter__()`) and
  `configbags.runtime.dist.state_dict`, also through `from configbags.runtime.dist import *`
  and a star import of `configbags.runtime`, `configbags.runtime.context` or an `accessors`
  module (which bind `get_context`, `process_context`, `publish`); fetched by name
  (`getattr(get_context(), "state")`, `attrgetter("state.values")(ctx)`, a name built at
  run time on a context); and through a module `importlib.import_module` or `__import__`
  returns, where the call spells its name. Both hold every namespace and bypass role scoping,
  so role code does not read through them. Reported with leaf `Context.state` or
  `dist.state_dict`.

A receiver counts only where the module's own imports and assignments show what it is:
`self.state`, a parameter's `.state`, torch's `model.state_dict()` and the stdlib's
`multiprocessing.get_context()` are never reported. A name is a may-alias: it is a door
when ANY binding of it in the scope it resolves to is one (flow-insensitive: `env = {}` in
one branch or after the read does not clear `env = os.environ` in another), and each use
is reported by the kinds that fit it (a name bound to `os.environ` and to `os.getenv` is
read as the environment by `env["NAME"]` and as a getter by `env("NAME")`, once per use).
A name bound only to things that are no door stays unreported, and a binding in an inner
scope (a parameter) hides the outer ones, as in Python.

The same pass resolves the fetchers (`getattr`, `hasattr`, `setattr`, `delattr`,
`operator.attrgetter` and getters it made, importers), by the may-alias rule, and hands
each fetching call to the record analysis (DoorScan.fetched), so `ga = getattr`,
`builtins.getattr` and a getter stored at module level are one mechanism for both.

Speed: a file that mentions no trigger word is not walked at all (substring tests), and
otherwise only statements whose lines mention a name of interest (or an import) are,
growing the names and starting again when an alias is found, as the record analysis does.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from configbags.migrate import holders
from configbags.migrate.aliases import (
    bare_mentions,
    lines_of,
    mention_lines,
    mentions,
    starts_child,
    statement_span,
)
from configbags.migrate.childargv import (
    Command,
    CommandRebuilder,
    imported_names,
    opaque_command,
    parameters,
    program_shown,
)
from configbags.migrate.childenv import (
    ARGUMENT_FEEDERS,
    C_FFI,
    C_LIBRARY,
    CHILD_PROCESS_NAMES,
    CHILD_PROCESS_PREFIXES,
    CHILD_PROCESS_WORDS,
    LOOP_LAUNCHERS,
    MODULE_ARGUMENT,
    NOT_SHOWN_MARK,
    PATH_MARK,
    PYTHON_MODULE,
    READ_MARK,
    ChildFile,
    Mentions,
    ModuleWrites,
    argv_mentions,
    changed_folders,
    child_files,
    command_arguments,
    command_fragments,
    command_reads,
    command_reads_environ_file,
    environ_in_folders,
    launcher_commands,
    literal_spec,
    named_variables,
    names_environ_file,
    plain_dump,
    prints_environment,
    program_name,
    program_prints_environment,
    rebased,
    relative_environ,
    run_by,
    script_files,
    script_mentions,
    shell_prints_environment,
    spellings,
    stdin_reader,
    text_reads,
)
from configbags.migrate.envkeys import KeyCompiler, Pattern, declared_reads, fits, patterns
from configbags.migrate.holders import dotted_name
from configbags.migrate.scanmodel import (
    CONTEXT_READBACK_METHODS,
    ENV_UNRESOLVED,
    STATE_DICT_READBACK,
    STATE_READBACK,
    ScanSettings,
    env_subject,
)
from configbags.migrate.scopes import (
    Fetch,
    Scope,
    ScopeBinder,
    ScopeReader,
    Scopes,
    StatementWalker,
    fetched_chain,
    globals_declared,
    landed,
    signature_annotations,
    unpacked,
)

# What an expression is, as a "kind": the dotted path of what it names (`os.environ`,
# `configbags.runtime.dist.state_dict`), or _CONTEXT for a config context object.
_CONTEXT = "<context>"
# An object of configbags' runtime that is no context but holds one: what a context's
# attributes and methods give (`get_context().installer`), a runner view, what
# `publish_legacy` returns; its `.context` or private `._context` is the context.
_RUNTIME = "<configbags object>"
_RUNTIME_SOURCES = frozenset({"publish_legacy", "runner_view"})
# configbags.runtime.context._process.CONTEXTS: each package's process context, by name
_REGISTRY = "<contexts>"
# A scope whose entering gives a config context (`ctx.scoped()`, `ctx.restoring()`,
# `contextlib.nullcontext(ctx)`, the runtime's test helpers): `with S as c`,
# `S.__enter__()`, `stack.enter_context(S)` give the context
_SCOPE = "<context scope>"
# The runtime's callables that make such a scope
_SCOPE_SOURCES = frozenset({
    "configbags.runtime.testing.scoped_override", "configbags.runtime.testing.published",
    "configbags.runtime.context.Restoring",
})
# What enters a scope and gives what it yields: its own methods, and an ExitStack's
_ENTER_METHODS = frozenset({"__enter__", "__aenter__"})
_STACK_ENTERS = frozenset({"enter_context", "enter_async_context"})
_NULL_CONTEXT = "contextlib.nullcontext"
# The runtime's pytest fixtures that hand a test the context (configbags.runtime.testing):
# a parameter of that name is it
_CONTEXT_FIXTURES = frozenset({"config_scope"})
_SCOPE_KIND = frozenset({_SCOPE})
# What a context's two-phase and plain overrides give back: a prepared change (its
# `.state` and `.base` are whole states, a `Context.state` readback), its log entries
# (`ctx.override(...)`, `prepared.entries`) and one entry (an element of those), whose
# `.old` and `.new` are published values read back by no role's door
_PREPARED = "<context prepared change>"
_ENTRIES = "<context override entries>"
_ENTRY = "<context override entry>"
_PREPARES = frozenset({"prepare_override", "prepare_entries"})
_PREPARED_STATES = frozenset({"state", "base"})
_ENTRY_VALUES = frozenset({"old", "new"})
_HELD_CONTEXT = frozenset({_CONTEXT, _SCOPE})
_ENVIRON = "os.environ"
# callables that read one variable: path -> the form reported
_ENV_GETTERS = {
    "os.environ.get": "environ_get",
    "os.getenv": "getenv",
    "os.environ.pop": "environ_pop",
    "os.environ.setdefault": "environ_setdefault",
    "os.environ.__getitem__": "environ_subscript",
    "os.environ.__contains__": "environ_in",
}
# calls that return the environment's contents (a copy, or its keys): read like it;
# wsgiref's `read_environ()` is a copy of it (R16-13)
_ENV_VIEWS = frozenset({"os.environ.copy", "os.environ.keys", "wsgiref.handlers.read_environ"})
# calls that return its pairs or values: a mapping again only through a copier (`dict(...)`)
_ENV_ITEMS = "<environ items>"
_ENV_ITEM_VIEWS = frozenset({"os.environ.items", "os.environ.values"})
# callables that copy a mapping given whole (or its pairs): a copy of the environment is
# read like it
_ENV_COPIERS = frozenset({
    "builtins.dict", "collections.ChainMap", "collections.OrderedDict", "collections.UserDict",
    "collections.defaultdict", "copy.copy", "copy.deepcopy", "types.MappingProxyType",
})
# what an attribute of the environment may be without the environment being used whole:
# its key readers and views above, and its writers
_ENV_METHODS = frozenset({
    "get", "pop", "setdefault", "copy", "keys", "items", "values", "__getitem__", "__contains__",
    "update", "clear", "__setitem__", "__delitem__", "putenv", "unsetenv",
})
# callables the environment may be handed to whole without being read here: they give it
# to a child process (`subprocess.run(cmd, env=os.environ.copy())`), or only count it
# A dispatcher's own keywords, never the launcher's it runs (`Process(target=..., daemon=True)`)
_DISPATCH_KEYWORDS = frozenset({"target", "args", "kwargs", "daemon", "name", "group"})
_ENV_CHILD_PROCESS = CHILD_PROCESS_PREFIXES
# a library ctypes (or cffi) loads, whose functions a call of it gives (`ctypes.CDLL(None).system`)
_C_LIBRARIES = tuple(f"{ffi}.{C_LIBRARY}" for ffi in C_FFI)
# what writes a child's standard input: `proc.communicate(text)`, `proc.stdin.write(text)`
_STDIN_WRITERS = frozenset({"write", "writelines"})
_PATCH_DICT = frozenset({"unittest.mock.patch.dict", "mock.patch.dict"})
_ENV_HARMLESS = frozenset({
    "builtins.len", "builtins.bool", "builtins.isinstance",
    # `with mock.patch.dict(os.environ, {...})` writes variables and restores them
    *_PATCH_DICT,
})
# `mock.patch.dict(os.environ, ...)` itself: entering or starting it gives the
# environment back (`with ... as env`, `patcher.start()`)
_ENV_PATCH = "<environ patch>"
_PATCH_ENTERS = frozenset({f"{_ENV_PATCH}.{method}" for method in ("__enter__", "__aenter__", "start")})
_NO_KINDS: frozenset[str] = frozenset()
# Field declarations whose factory gives an instance attribute its value
_FIELD_FACTORIES = frozenset({
    "dataclasses.field", "attrs.field", "attr.ib", "attr.attrib", "attr.field", "attrs.Factory", "attr.Factory",
})
_ENVIRON_KIND = frozenset({_ENVIRON})
# Other libraries' names for the environment itself: starlette's `config.environ` wraps
# `os.environ` (its reads read it)
_ENVIRON_ALIASES = ("starlette.config.environ",)
# wsgiref's handlers keep a copy of it made at import, `BaseHandler.os_environ` (and every
# handler class's, inherited): read like it (R16-13)
_WSGIREF = "wsgiref.handlers"
_WSGIREF_COPY = "os_environ"
# starlette's `Config()`: a getter of one variable when called (`config("NAME", cast=int)`)
# or asked `.get("NAME")`, its key after the `env_prefix=` it is given: the kind is the
# mark and the prefix (`?` where the module does not show it)
_STARLETTE_CONFIG = "starlette.config.Config"
_CONFIG_MARK = "<starlette config>"


def _canonical(path: str) -> str:
    """`path` with another library's name for the environment spelled as `os.environ`."""
    for alias in _ENVIRON_ALIASES:
        if path == alias or path.startswith(alias + "."):
            return _ENVIRON + path[len(alias):]
    if path.startswith(_WSGIREF + "."):
        parts = path.split(".")
        if _WSGIREF_COPY in parts[2:4]:
            return ".".join([_ENVIRON, *parts[parts.index(_WSGIREF_COPY, 2) + 1:]])
    return path
_DIST = "configbags.runtime.dist"
_STATE_DICT = f"{_DIST}.state_dict"
_DIST_CONTEXTS = frozenset({f"{_DIST}.import_state", f"{_DIST}.from_state", f"{_DIST}.publish_distributed"})
_CONTEXT_FUNCTIONS = frozenset({"get_context", "process_context"})
# the stdlib's (and torch's copy of it) get_context returns a process-start method
_NOT_CONFIG = frozenset({"multiprocessing", "multiprocess"})
# What `from MODULE import *` binds that the scanner follows (environb is not followed).
# the private modules behind the public ones (`dist._state` holds `state_dict`): importing
# a door from its own module opens the same door
_PRIVATE_HOMES = {"configbags.runtime.dist.": _DIST, "configbags.runtime.context.": "configbags.runtime.context"}


def _public(module: str) -> str:
    """`module`, or the public module of the private one it is (`dist._state` -> `dist`)."""
    for prefix, public in _PRIVATE_HOMES.items():
        if module.startswith(prefix + "_"):
            return public
    return module


_STAR_DIST = ("state_dict", "import_state", "from_state", "publish_distributed")
_STAR_CONTEXT = ("get_context", "process_context", "publish")
_STAR_OS = ("environ", "getenv")
_STAR_FETCHERS = {
    "operator": ("attrgetter",),
    "importlib": ("import_module", "__import__"),
    "builtins": ("getattr", "hasattr", "setattr", "delattr", "__import__"),
}

# Builtins the analysis follows: a name that no scope binds is the builtin (so `ga =
# getattr`, `builtins.getattr` and `from builtins import getattr as g` are one callable).
_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr", "__import__", "dict", "len", "bool", "isinstance", "vars"})
# Fetchers (configbags.migrate.scopes.Fetch): calls that read attributes by name.
_GETATTRS = {
    "builtins.getattr": "getattr",
    "builtins.hasattr": "hasattr",
    "builtins.setattr": "setattr",
    "builtins.delattr": "delattr",
}
_ATTRGETTER = "operator.attrgetter"
# The kind of an attrgetter itself: the mark, then its paths, space-separated, `?` for a
# name built at run time (`<attrgetter> tp_size state.values`).
_GETTER_MARK = "<attrgetter>"
# Callables that import a module by name: what they return is that module.
_IMPORTERS = frozenset({"importlib.import_module", "builtins.__import__", "importlib.__import__"})
_BUILTIN_KINDS = {name: frozenset({"builtins." + name}) for name in _BUILTINS}
_FETCH_WORDS = ("getattr", "hasattr", "setattr", "delattr", "attrgetter", "import_module", "__import__")

# Keywords of command-line libraries (click, typer) that take an option from the
# environment: `envvar="NAME"` (or a list of names), and a prefix that names one variable
# per option (`auto_envvar_prefix="SGLANG"`: SGLANG_<OPTION>)
_ENVVAR_KEYWORDS = frozenset({"envvar", "auto_envvar_prefix"})
_AUTO_PREFIX = "auto_envvar_prefix"
# The shape of a row among a module's constants (FlowFacts.constants) for a list constant
# that is no constant: bound again in its module or changed in place there (`NAMES =
# load()`, `NAMES.append(name)`). Its importers' loops over it take these elements and
# others not shown; no other use of it is told them.
OPEN_SHAPE = "open_list"
# A name of which nothing is shown, as a pattern (configbags.migrate.envkeys)
_ANY_NAME: Pattern = ("", "", True)
# What a descriptor of one variable (`envs.SGLANG_PAGE_SIZE`, named like it) may be asked
# without reading it: its writers
_DESCRIPTOR_WRITERS = frozenset({"set", "clear", "unset", "override", "__set__", "__delete__"})
# A file can only open a door if it mentions one of these.
_ENV_WORDS = ("environ", "getenv")
_CONTEXT_WORDS = (
    "get_context", "process_context", "publish", "import_state", "from_state", "runner_view", "CONTEXTS", "scoped_override",
    "config_scope",
)
# Words of the environment's other readers (psutil's `as_dict`, `process_iter`; `environ`
# is an environment word already) and of a config file whose values are eval'd
_OTHER_READER_WORDS = ("as_dict", "process_iter", "fileConfig")
# Words of a path to a process's environment file whose name the module builds of parts
# (`f"/proc/{pid}/{'env' + 'iron'}"`, `"/dev/fd/../env" + "iron"`): the file's folder, in
# the text (_PROC_TEXTS) and as the words of the lines walked
_PROC_TEXTS = ("/proc", "/fd")
_PROC_WORDS = ("proc", "fd")
# Names of interest before any alias is known; `import` makes every import statement (and
# whatever block holds it) visited, so a module's names are always known.
_BASE_NAMES = frozenset(
    {"import", "environ", "getenv", "state_dict", "import_state", "from_state", "publish_distributed", "publish"}
    # what holds a context in a private part, or hands one back (see _RUNTIME), and the
    # runtime's test helpers
    | {"publish_legacy", "runner_view", "CONTEXTS", "_context", "scoped_override", "published"}
    | _CONTEXT_FIXTURES
    # an object's attributes by name (`vars(self)[name]`), where it holds a context
    | {"vars", "__dict__"}
    | _CONTEXT_FUNCTIONS
    | set(_FETCH_WORDS)
    # child processes: their commands may name a declared variable (configbags.migrate.childenv)
    | {"subprocess", "system", "popen", "spawn", "create_subprocess_shell", "create_subprocess_exec"}
    | {f"{family}{suffix}" for family in ("exec", "spawn") for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    | {"posix_spawn", "posix_spawnp"}
    | CHILD_PROCESS_NAMES
    # psutil's copies of a process's environment, a config file of eval'd Python
    | set(_OTHER_READER_WORDS)
    | set(_PROC_WORDS)
    # a readback method kept in a name unbound (`INFO = Context.server_info`)
    | set(CONTEXT_READBACK_METHODS)
)


def _is_context_source(path: str | None) -> bool:
    """Does calling what `path` names return a config context?"""
    if path is None or path == _CONTEXT:
        return False
    parts = path.split(".")
    if parts[-1] in _CONTEXT_FUNCTIONS:
        return not _NOT_CONFIG.intersection(parts)
    if path in _DIST_CONTEXTS:
        return True
    # `publish` is a common name: only the generated accessors' (or configbags') counts
    return parts[-1] == "publish" and len(parts) > 1 and (parts[-2] == "accessors" or parts[0] == "configbags")


def _derived(path: str) -> str | None:
    """What a dotted path names besides itself: a context held privately by a configbags
    module (`accessors._context`), the contexts registry, or None."""
    parts = path.split(".")
    ours = parts[0] == "configbags" or (len(parts) > 1 and parts[-2] == "accessors")
    if not ours:
        return None
    if parts[-1] == "_context":
        return _CONTEXT
    if parts[-1] == "CONTEXTS":
        return _REGISTRY
    if parts[-1] in ("cfg", "_view"):
        return _RUNTIME  # the generated process view
    return None


def _runtime_source(path: str) -> bool:
    parts = path.split(".")
    return parts[-1] in _RUNTIME_SOURCES and (parts[0] == "configbags" or (len(parts) > 1 and parts[-2] == "accessors"))


# Modules whose attributes are doors: a name bound to one is followed where it is used bare
_DOOR_MODULES = frozenset({"os", "posix", "nt", "importlib", "operator", "builtins", "subprocess"})


def _door_module(path: str) -> bool:
    return (
        path in _DOOR_MODULES or path == _DIST or path.startswith(("configbags.runtime", "configbags.generated"))
        or path.rpartition(".")[2] == "accessors"
    )


def _is_door(kind: str) -> bool:
    """Is a name bound to this worth following (an alias of a door, or of a fetcher)?"""
    return (
        kind in (_CONTEXT, _ENVIRON, _STATE_DICT, _ENV_ITEMS, _RUNTIME, _REGISTRY, _SCOPE, _ENV_PATCH)
        or kind in _SCOPE_SOURCES
        or kind in _ENV_GETTERS
        or kind in _ENV_VIEWS
        or kind in _ENV_ITEM_VIEWS
        or kind in _GETATTRS
        or kind in _IMPORTERS
        or kind == _ATTRGETTER
        or _is_context_source(kind)
        # where the environment may go whole (`P = subprocess.Popen; P(cmd, env=env)`)
        or kind == "subprocess"
        # (wsgiref's handlers module and classes hold a copy of the environment)
        or kind == _WSGIREF
        or kind.startswith((_WSGIREF + ".", _GETTER_MARK, _CONFIG_MARK, *_ENV_CHILD_PROCESS, *_C_LIBRARIES))
        or kind.rpartition(".")[2] in CONTEXT_READBACK_METHODS
        or kind in (_PREPARED, _ENTRIES, _ENTRY)
    )


def _reads_environ(kind: str) -> bool:
    """Does a value of this kind read the environment when it is used whole (iterated,
    passed on, returned)? The environment, a copy, its pairs, and its bound readers."""
    return kind in (_ENVIRON, _ENV_ITEMS) or kind in _ENV_GETTERS or kind in _ENV_VIEWS or kind in _ENV_ITEM_VIEWS


def _scrub_records(statements: Sequence[ast.stmt], key: str, pops: Sequence[ast.Call]) -> bool:
    """Does a scrub's loop body (DoorScan's _Reader._scrub) do anything besides deleting
    the variables its key tests pick: a statement other than `del`, a dropped pop, `pass`,
    `continue`, and an `if` holding only those (its test, on the key, was judged a filter
    by `_scrub_use`: evaluated alone it records nothing)?"""
    for stmt in statements:
        if isinstance(stmt, (ast.Delete, ast.Pass, ast.Continue)):
            continue
        if isinstance(stmt, ast.Expr) and any(stmt.value is pop for pop in pops):
            continue
        if isinstance(stmt, ast.If):
            if _scrub_records([*stmt.body, *stmt.orelse], key, pops):
                return True
            continue
        return True
    return False


def _scrub_filters(statements: Sequence[ast.stmt], key: str) -> frozenset[Pattern] | None:
    """The names a scrub's `if` tests on its key let through (any of them), or None where
    the body records something under no such test."""
    picked: set[Pattern] = set()
    for stmt in statements:
        if isinstance(stmt, ast.If):
            found = _name_filter(stmt.test, key)
            if found is not None:
                picked |= found
                continue
        if not isinstance(stmt, (ast.Delete, ast.Pass, ast.Continue, ast.Expr)):
            return None
    return frozenset(picked)


def _catches_missing_key(caught: ast.expr | None) -> bool:
    """Does an `except` clause of this type catch a KeyError: a bare `except:`, a builtin
    KeyError derives (`LookupError`, `Exception`), or a name that is no builtin exception
    (`except ERRORS:`: it may be)?"""
    if caught is None:
        return True
    for name in caught.elts if isinstance(caught, ast.Tuple) else [caught]:
        builtin = getattr(builtins, dotted_name(name).removeprefix("builtins."), None)
        if not (isinstance(builtin, type) and issubclass(builtin, BaseException)) or issubclass(KeyError, builtin):
            return True
    return False


def _same_scope_nodes(statements: Sequence[ast.stmt]) -> Iterable[ast.AST]:
    """Every node of the statements, but not inside a function or class they define."""
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _envvar_prefix_store(target: ast.expr) -> bool:
    """Does the assignment target set click's prefix other than as a keyword (R16-10): a
    settings dict filled by subscript (`SETTINGS["auto_envvar_prefix"] = ...`,
    `cli.context_settings[...] = ...`), or a context's attribute (`ctx.auto_envvar_prefix =
    ...`)? Judged like the keyword, on any receiver: the name is click's own."""
    if isinstance(target, ast.Subscript):
        return _literal(target.slice) == _AUTO_PREFIX
    return isinstance(target, ast.Attribute) and target.attr == _AUTO_PREFIX


def _envvar_prefix_set(call: ast.Call) -> ast.expr | None:
    """The prefix a call sets as click's (R16-10): `setattr(ctx, "auto_envvar_prefix", P)`,
    `SETTINGS.setdefault("auto_envvar_prefix", P)`, `SETTINGS.__setitem__(...)`; else None."""
    func, args = call.func, call.args
    if isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 and _literal(args[1]) == _AUTO_PREFIX:
        return args[2]
    if (
        isinstance(func, ast.Attribute) and func.attr in ("setdefault", "__setitem__") and len(args) == 2
        and _literal(args[0]) == _AUTO_PREFIX
    ):
        return args[1]
    return None


def _literal(expr: ast.expr | None) -> str | None:
    """The string `expr` spells without any name: a literal, or a concatenation (`+`,
    an f-string) of literals; else None."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _literal(expr.left), _literal(expr.right)
        return None if left is None or right is None else left + right
    if isinstance(expr, ast.JoinedStr):
        parts: list[str] = []
        for part in expr.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion not in (-1, ord("s")) or part.format_spec is not None:
                    return None
                part = part.value
            value = _literal(part)
            if value is None:
                return None
            parts.append(value)
        return "".join(parts)
    return None


def _namespace_of(expr: ast.expr, kind: Callable[[ast.expr], frozenset[str]]) -> ast.expr | None:
    """The object whose attribute namespace `expr` is (`vars(x)`, `x.__dict__`), or None."""
    if isinstance(expr, ast.Attribute) and expr.attr == "__dict__":
        return expr.value
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords and "builtins.vars" in kind(expr.func):
        return expr.args[0]
    return None


def _getter_kind(call: ast.Call) -> str:
    """The kind of `operator.attrgetter(...)` itself, its paths spelled in it."""
    parts = []
    for arg in call.args:
        value = _literal(arg) if not isinstance(arg, ast.Starred) else None
        parts.append(value if value and " " not in value else "?")
    if call.keywords or not call.args or any(isinstance(arg, ast.Starred) for arg in call.args):
        parts.append("?")
    return " ".join((_GETTER_MARK, *parts))


def _getter_paths(kind: str) -> tuple[tuple[str, ...] | None, ...]:
    return tuple(None if part == "?" else tuple(part.split(".")) for part in kind.split(" ")[1:])


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _imported_module(call: ast.Call, importers: frozenset[str]) -> str | None:
    """The module an importer call returns, where the call spells its name out:
    `import_module("a.b")` is a.b (relative to a spelled `package`), `__import__("a.b")`
    is a, unless a `fromlist` is given (then a.b)."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    name = _literal(_argument(call, 0, "name"))
    if not name:
        return None
    if "importlib.import_module" in importers:
        if name.startswith("."):
            package = _literal(_argument(call, 1, "package"))
            dots = len(name) - len(name.lstrip("."))
            if not package or package.count(".") < dots - 1:
                return None
            base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
            name = f"{base}.{name[dots:]}" if name[dots:] else base
        return _public(name)
    level = _argument(call, 4, "level")
    if level is not None and not (isinstance(level, ast.Constant) and level.value == 0):
        return None  # a relative __import__: never configbags as seen from an engine
    fromlist = _argument(call, 3, "fromlist")
    empty = fromlist is None or (
        isinstance(fromlist, ast.Constant) and not fromlist.value
    ) or (isinstance(fromlist, (ast.List, ast.Tuple)) and not fromlist.elts)
    return name.split(".")[0] if empty else _public(name)


class _Imported(NamedTuple):
    path: str  # the dotted path an import binds the name to


_Value = ast.expr | _Imported | None  # None: bound to something that is no door


# Callables that join their arguments into a path
_PATH_JOINERS = frozenset({
    "os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath",
})
# Callables (and methods of a path) that give the path they are given, as a path spec sees it
_PATH_SAME = frozenset({
    "os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "builtins.str", "pathlib.Path",
    "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath", "posixpath.abspath", "posixpath.realpath",
})
_PATH_METHODS_SAME = frozenset({"resolve", "absolute", "expanduser", "as_posix"})


# Variables naming a file a shell child runs before its command (bash's BASH_ENV, sh's ENV)
_STARTUP_FILES = frozenset({"BASH_ENV", "ENV"})
# Marks a word of a rebuilt command that is a path the module builds and shows no text
# of (`os.path.join(HERE, "run.py")`): the mark, then its path spec (_file_word_at)
_PATH_WORD = "\3"


def _joined(base: str, part: str) -> str:
    """A path spec joined with a literal part (an absolute part replaces it)."""
    return part if part.startswith("/") else f"{base}/{part}"

# A config context's own methods that make a scope handing back the context it is called
# on: `with ctx.scoped() as c`, `with get_context().restoring() as c`.
_CONTEXT_SCOPES = frozenset({"scoped", "restoring"})


class _Element(ast.expr):
    """What a loop over `iterable` binds its target to: one element of it."""

    _fields = ()

    def __init__(self, iterable: ast.expr) -> None:
        super().__init__()
        self.iterable = iterable


class _Scope(Scope):
    __slots__ = ("bindings",)

    def __init__(self, kind: str, qualname: str, parent: _Scope | None) -> None:
        super().__init__(kind, qualname, parent)
        # name -> every binding landing in this scope: (value, the scope the value is
        # evaluated in); filled by _Doors.settle() once the binder is done
        self.bindings: dict[str, list[tuple[_Value, _Scope]]] = {}


class _Doors(Scopes[_Scope]):
    """One module's scopes and bindings, and what its expressions are."""

    def __init__(self, lines: list[int]) -> None:
        super().__init__(_Scope("module", "<module>", None))
        self.lines = lines  # lines that mention a name of interest, sorted
        self.written: list[tuple[str, _Value, _Scope]] = []  # each binding, where it is written
        # parameter defaults: (parameter, default, the function's scope, where it is evaluated)
        self.defaults: list[tuple[str, ast.expr, _Scope, _Scope]] = []
        self.kept: dict[int, list[ast.AST]] = {}  # id(statement list) -> the ones walked
        self._names: dict[tuple[int, str], frozenset[str]] = {}  # memo of name kinds
        self._active: set[tuple[int, str]] = set()  # names whose kinds are being found
        self._cycles = 0  # how often a name was met again while its kinds were found
        # id(call) -> what it fetches by name, for every fetching call the reader walked:
        # the record analysis reads them as the attribute chains they are
        self.fetched: dict[int, tuple[Fetch, ...]] = {}
        # (class qualname, attribute) -> what its methods assign to `self.<attribute>`
        self.self_attrs: dict[tuple[str, str], list[tuple[_Value, _Scope]]] = {}
        self.classes: dict[str, _Scope] = {}  # module-level class name -> its scope
        self.class_bases: dict[str, frozenset[str]] = {}  # class qualname -> its bases, as spelled
        self.class_scopes: dict[str, _Scope] = {}  # class qualname -> its scope
        # attribute names a class body binds or its methods assign on self (settle()):
        # any other attribute of an unknown base is nothing, found without a walk
        self.held_attrs: frozenset[str] = frozenset()
        # id(scope) -> the module or function opening it: a name's bindings on lines the
        # pruned walk skipped (`a = Admin()`) are read there (holders.instance_values)
        self.nodes: dict[int, ast.AST] = {}

    def _class_of(self, expr: ast.expr, scope: _Scope) -> _Scope | None:
        """The class scope `expr` names: a module-level class by name (`A.CTX`), or the
        class of a method's `self` (`self.CTX`)."""
        owner = self.method_class(expr, scope)
        if owner is not None:
            return self.class_scopes.get(owner)
        if isinstance(expr, ast.Name) and self.visible(expr.id, scope) is self.module:
            return self.classes.get(expr.id)
        return None

    def _held_attribute(self, expr: ast.Attribute, scope: _Scope) -> frozenset[str]:
        """What `self.x`, `cls.x` or `A.x` holds where the class shows it: an attribute its
        methods assign (`self.ctx = get_context()`), or one its body binds (`CTX = ...`),
        in the class or a base of the module (`class B(A)` reading A's `self.ctx`)."""
        if expr.attr not in self.held_attrs:
            return _NO_KINDS
        found: set[str] = set()
        owner = self.method_class(expr.value, scope) or self._instance_of(expr.value, scope)
        for cls_name in self._lineage(owner) if owner is not None else ():
            for value, where in self.self_attrs.get((cls_name, expr.attr), ()):
                if isinstance(value, ast.expr):
                    found.update(self.kind(value, where))
        cls = self._class_of(expr.value, scope)
        for name in self._lineage(cls.qualname) if cls is not None else ():
            inherited = self.class_scopes.get(name)
            if inherited is not None and expr.attr in inherited.bindings:
                found.update(self._bound_kind(expr.attr, inherited, inherited.bindings[expr.attr]))
        return frozenset(found)

    def _lineage(self, qualname: str) -> list[str]:
        """The class and its bases among the module's classes, nearest first."""
        found = [qualname]
        for name in found:
            if len(found) > 16:
                break
            found += [base for base in self.class_bases.get(name, ()) if base in self.class_scopes and base not in found]
        return found

    def _instance_of(self, expr: ast.expr, scope: _Scope, seen: int = 0) -> str | None:
        """The module-level class `expr` is an instance of, where the code shows it:
        `Admin()`, or a name bound only to such a call (`a = Admin()`): `Admin().ctx` is
        what Admin's methods assign to `self.ctx`."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in self.classes:
            return expr.func.id if self.visible(expr.func.id, scope) is self.module else None
        if not isinstance(expr, ast.Name) or seen > 4:
            return None
        # the nearest function (or the module) whose code binds the name, walked or not
        current: _Scope | None = scope
        while current is not None:
            node = self.nodes.get(id(current)) if current.kind in ("module", "function") else None
            values = holders.instance_values(node, expr.id) if node is not None else []
            if values or current.kind == "module":
                found = {self._instance_of(value, current, seen + 1) if value is not None else None for value in values}
                return found.pop() if len(found) == 1 else None
            current = self.module if expr.id in current.globals else current.parent
        return None

    def settle(self) -> None:
        """Hand each binding to the scope it lands in (`global`, `nonlocal`)."""
        for name, value, where in self.written:
            self.binding_scope(name, where).bindings.setdefault(name, []).append((value, where))
        for name, value, scope, outer in self.defaults:
            scope.bindings.setdefault(name, []).append((value, outer))
        self.held_attrs = frozenset(
            {attr for _, attr in self.self_attrs}
            | {name for cls in self.class_scopes.values() for name in cls.bindings}
        )

    def kind(self, expr: ast.expr, scope: _Scope) -> frozenset[str]:
        """What `expr` may evaluate to, as far as the module shows: the dotted paths it may
        name, and _CONTEXT; empty for anything else, or unknown."""
        if isinstance(expr, ast.Name):
            return self.name_kind(expr.id, scope)
        if isinstance(expr, ast.Attribute):
            return self._attribute_kind(expr, scope)
        if isinstance(expr, ast.Call):
            return self._call_kind(expr, scope)
        if isinstance(expr, (ast.NamedExpr, ast.Await)):
            return self.kind(expr.value, scope)
        if isinstance(expr, (ast.Subscript, _Element)):
            return self._item_kind(expr, scope)
        if isinstance(expr, ast.Dict):
            # `{**os.environ, "X": "1"}` is a copy of the environment
            unpacked = (value for key, value in zip(expr.keys, expr.values, strict=True) if key is None)
            return _ENVIRON_KIND if any(_ENVIRON in self.kind(value, scope) for value in unpacked) else _NO_KINDS
        if isinstance(expr, ast.BinOp):
            # `os.environ | {...}` and `{...} | os.environ` too
            if isinstance(expr.op, ast.BitOr) and (
                _ENVIRON in self.kind(expr.left, scope) or _ENVIRON in self.kind(expr.right, scope)
            ):
                return _ENVIRON_KIND
            return _NO_KINDS
        # `context or get_context()`: a branch that is a door makes the value one
        branches: list[ast.expr] = []
        if isinstance(expr, ast.IfExp):
            branches = [expr.body, expr.orelse]
        elif isinstance(expr, ast.BoolOp):
            branches = list(expr.values)
        found: frozenset[str] = _NO_KINDS
        for branch in branches:
            found |= self.kind(branch, scope)
        return found

    def _item_kind(self, expr: ast.Subscript | _Element, scope: _Scope) -> frozenset[str]:
        """An item of a container: `CONTEXTS["pkg.config_bags"]` is a context,
        `ctx.override(...)[0]` (and a loop's element of it) a log entry, `vars(self)["ctx"]`
        the attribute by its name."""
        if isinstance(expr, _Element):
            return frozenset({_ENTRY}) if _ENTRIES in self.kind(expr.iterable, scope) else _NO_KINDS
        container = self.kind(expr.value, scope)
        if _REGISTRY in container:
            return frozenset({_CONTEXT})
        if _ENTRIES in container:
            return frozenset({_ENTRY})
        owner = _namespace_of(expr.value, lambda e: self.kind(e, scope))
        key = _literal(expr.slice)
        if owner is not None and key is not None:
            return self.kind(fetched_chain(owner, (key,), expr), scope)
        return _NO_KINDS

    def holds_context(self, expr: ast.expr, scope: _Scope) -> bool:
        """Is `expr` a method's `self` (or a class) whose class holds a config context in
        some attribute (`self.ctx = get_context()`, `CTX = get_context()`)?"""
        owner = self.method_class(expr, scope)
        cls = self._class_of(expr, scope)
        for (holder, _), values in self.self_attrs.items():
            if holder == owner and any(isinstance(v, ast.expr) and _CONTEXT in self.kind(v, where) for v, where in values):
                return True
        return cls is not None and any(_CONTEXT in self._bound_kind(name, cls, values) for name, values in cls.bindings.items())

    def _makes_context(self, field: ast.Call, func: frozenset[str], scope: _Scope) -> bool:
        """`ctx: object = field(default_factory=lambda: get_context())`: does the
        instance attribute a field declaration makes hold a config context?"""
        factory = next((k.value for k in field.keywords if k.arg in ("default_factory", "factory")), None)
        if factory is None and field.args and func & {"attrs.Factory", "attr.Factory"}:
            factory = field.args[0]
        if isinstance(factory, ast.Lambda):
            return _CONTEXT in self.kind(factory.body, self.scope_of.get(id(factory), scope))
        return factory is not None and any(_is_context_source(path) for path in self.kind(factory, scope))

    def _attribute_kind(self, expr: ast.Attribute, scope: _Scope) -> frozenset[str]:
        base = self.kind(expr.value, scope)
        if expr.attr == "entries" and _PREPARED in base:
            return frozenset({_ENTRIES})
        if not base:
            return self._held_attribute(expr, scope)
        paths = {
            _canonical(f"{path}.{expr.attr}") for path in base if not path.startswith(("<context", "<configbags", "<contexts"))
        }
        found = paths | {d for d in map(_derived, paths) if d is not None}
        if _CONTEXT in base or _RUNTIME in base:
            # `get_context().installer._context`, `publish_legacy(...).context`
            found.add(_CONTEXT if expr.attr in ("_context", "context") else _RUNTIME)
        return frozenset(found)

    def entered(self, call: ast.Call, scope: _Scope) -> bool:
        """Does `call` enter a context's scope, giving the context: `S.__enter__()`,
        `await S.__aenter__()` (what `with S as c` binds), `stack.enter_context(S)`,
        `await stack.enter_async_context(S)`?"""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in _ENTER_METHODS and not call.args:
            return _SCOPE in self.kind(func.value, scope)
        if func.attr in _STACK_ENTERS and len(call.args) == 1 and not isinstance(call.args[0], ast.Starred):
            return _SCOPE in self.kind(call.args[0], scope)
        return False

    def _makes_scope(self, expr: ast.Call, func: frozenset[str], scope: _Scope) -> bool:
        """`ctx.scoped(...)`, `ctx.restoring()`, `scoped_override(...)`, `published(rec)`,
        `contextlib.nullcontext(ctx)`: a scope whose entering gives a config context."""
        if not func.isdisjoint(_SCOPE_SOURCES):
            return True
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in _CONTEXT_SCOPES and (
            _CONTEXT in self.kind(expr.func.value, scope)
        ):
            return True
        given = _argument(expr, 0, "enter_result") if _NULL_CONTEXT in func else None
        return given is not None and _CONTEXT in self.kind(given, scope)

    def _configbags_kinds(self, expr: ast.Call, func: frozenset[str], scope: _Scope) -> set[str]:
        """What a call of `func` gives of configbags' runtime: a context, a scope of one,
        an object holding one."""
        found: set[str] = set()
        if self._makes_scope(expr, func, scope):
            found.add(_SCOPE)
        if any(_is_context_source(path) for path in func):
            found.add(_CONTEXT)
        if _RUNTIME in func or _CONTEXT in func or any(_runtime_source(path) for path in func):
            found.add(_RUNTIME)  # `get_context().runner_view(...)`, `publish_legacy(...)`
        if any(path.endswith(".CONTEXTS.get") and _derived(path[: -len(".get")]) == _REGISTRY for path in func):
            found.add(_CONTEXT)
        if not func.isdisjoint(_FIELD_FACTORIES) and self._makes_context(expr, func, scope):
            found.add(_CONTEXT)
        return found

    def _call_kind(self, expr: ast.Call, scope: _Scope) -> frozenset[str]:
        if self.entered(expr, scope):
            return frozenset({_CONTEXT})
        method = expr.func.attr if isinstance(expr.func, ast.Attribute) else ""
        if (method in _PREPARES or method == "override") and isinstance(expr.func, ast.Attribute) and (
            _CONTEXT in self.kind(expr.func.value, scope)
        ):  # `ctx.prepare_override(...)`, `ctx.override(...)`: what the change gives back
            return frozenset({_PREPARED if method in _PREPARES else _ENTRIES})
        func = self.kind(expr.func, scope)
        if not func:
            return _NO_KINDS
        found = self._configbags_kinds(expr, func, scope)
        found.update(f"{root}.{C_LIBRARY}" for root in {path.split(".")[0] for path in func} & set(C_FFI))
        found.update(self._environ_kinds(expr, func, scope))
        if _ATTRGETTER in func:
            found.add(_getter_kind(expr))
        importers = func & _IMPORTERS
        if importers:
            module = _imported_module(expr, importers)
            if module is not None:
                found.add(module)
        for fetch in self.fetches(expr, scope, func):
            path = fetch.value_path()
            if path is not None:
                # `getattr(os, "environ")` is `os.environ`
                found.update(self.kind(fetched_chain(fetch.target, path, expr), scope))
        return frozenset(found)

    def _environ_kinds(self, expr: ast.Call, func: frozenset[str], scope: _Scope) -> set[str]:
        """What a call gives of the environment: a view or copy of it, a patch of it (and
        what entering the patch gives back), a settings object reading it."""
        found: set[str] = set()
        bare = not expr.args and not expr.keywords
        if not func.isdisjoint(_PATCH_DICT) and self._patches_environ(expr, scope):
            found.add(_ENV_PATCH)
        if _STARLETTE_CONFIG in func:
            config = self._starlette_config(expr, scope)
            if config is not None:
                found.add(config)
        if bare and not func.isdisjoint(_PATCH_ENTERS):
            found.add(_ENVIRON)  # `patcher.start()`, what `with mock.patch.dict(os.environ) as env` binds
        if bare and not func.isdisjoint(_ENV_VIEWS):
            found.add(_ENVIRON)  # `os.environ.copy()`, `os.environ.keys()`
        if bare and not func.isdisjoint(_ENV_ITEM_VIEWS):
            found.add(_ENV_ITEMS)  # `os.environ.items()`
        if not func.isdisjoint(_ENV_COPIERS) and self.copies_environ(expr, scope):
            found.add(_ENVIRON)  # `dict(os.environ)`, `ChainMap(os.environ)`, `dict(os.environ.items())`
        return found

    def _starlette_config(self, call: ast.Call, scope: _Scope) -> str | None:
        """The kind of `Config(...)`: a getter of the environment with its prefix, unless
        it is given another mapping (`environ={...}`) to read."""
        given = next((k.value for k in call.keywords if k.arg == "environ"), call.args[1] if len(call.args) > 1 else None)
        if given is not None and _ENVIRON not in self.kind(given, scope):
            return None
        prefix = next((k.value for k in call.keywords if k.arg == "env_prefix"), call.args[2] if len(call.args) > 2 else None)
        text = "" if prefix is None else _literal(prefix)
        return f"{_CONFIG_MARK}{'?' if text is None or '.' in text else text}"  # (a `.` starts an attribute)

    def _patches_environ(self, call: ast.Call, scope: _Scope) -> bool:
        """Is `mock.patch.dict(...)` given the environment (or its dotted name)?"""
        target = _argument(call, 0, "in_dict")
        if target is None or isinstance(target, ast.Starred):
            return False
        return _literal(target) in ("os.environ", "posix.environ") or _ENVIRON in self.kind(target, scope)

    def copies_environ(self, call: ast.Call, scope: _Scope) -> bool:
        """Does this copier call copy the environment (or its pairs)?"""
        for arg in call.args:
            if not isinstance(arg, ast.Starred) and not self.kind(arg, scope).isdisjoint((_ENVIRON, _ENV_ITEMS)):
                return True
        return any(k.arg is None and _ENVIRON in self.kind(k.value, scope) for k in call.keywords)

    def fetches(
        self, call: ast.Call, scope: _Scope, func: frozenset[str] | None = None,
        constant: Callable[[ast.expr], str | None] | None = None,
    ) -> tuple[Fetch, ...]:
        """What `call` fetches by name, for each fetcher its callee may be: `getattr(x,
        "a")` under any alias, and an attrgetter (`operator.attrgetter("a")(x)`, or one
        stored in a name first)."""
        if func is None:
            func = self.kind(call.func, scope)
        args = call.args
        if not func or any(isinstance(arg, ast.Starred) for arg in args):
            return ()
        found: list[Fetch] = []
        for path in func:
            form = _GETATTRS.get(path)
            if form is not None and len(args) >= 2:
                name = _literal(args[1])
                if name is None and constant is not None:
                    name = constant(args[1])  # `getattr(x, ATTR)` with a module constant ATTR
                if form == "getattr" and len(args) > 2:
                    form = "getattr_default"
                found.append(Fetch(args[0], ((name,) if name is not None else None,), form))
            elif path.startswith(_GETTER_MARK) and len(args) == 1 and not call.keywords:
                found.append(Fetch(args[0], _getter_paths(path), "attrgetter"))
        return tuple(found)

    def name_kind(self, name: str, scope: _Scope) -> frozenset[str]:
        """The kinds of `name` read in `scope`: those of every binding of it in the scope
        that binds it. A may-alias: one binding to a door makes the name one, whatever
        the others bind."""
        holder = self.visible(name, scope)
        if holder is None:
            # a builtin (or an unfollowed star import)
            return _BUILTIN_KINDS.get(name, _NO_KINDS)
        values = holder.bindings.get(name)
        if not values:
            return _NO_KINDS  # a binding not walked
        return self._bound_kind(name, holder, values)

    def _bound_kind(self, name: str, scope: _Scope, values: list[tuple[_Value, _Scope]]) -> frozenset[str]:
        key = (id(scope), name)
        found = self._names.get(key)
        if found is not None:
            return found
        if key in self._active:
            # `a = b; b = a`: the cycle adds nothing to what `a` gets elsewhere, but a name
            # met inside it only knows part of its kinds, so that is not remembered
            self._cycles += 1
            return _NO_KINDS
        self._active.add(key)
        cycles = self._cycles
        kinds: set[str] = set()
        for value, where in values:
            if isinstance(value, _Imported):
                kinds.add(_canonical(value.path))
                derived = _derived(value.path)
                if derived is not None:
                    kinds.add(derived)
            elif value is not None:
                kinds.update(self.kind(value, where))
        self._active.discard(key)
        result = frozenset(kinds)
        if self._cycles == cycles or not self._active:
            self._names[key] = result
        return result

    def alias_names(self) -> set[str]:
        """Names bound to a door somewhere (and `self.` attributes holding one):
        statements mentioning them must be walked."""
        names = {
            name
            for scope in self.scopes
            for name, values in scope.bindings.items()
            if any(_is_door(kind) for kind in self._bound_kind(name, scope, values))
        }
        for (_, attr), values in self.self_attrs.items():
            if any(isinstance(v, ast.expr) and any(map(_is_door, self.kind(v, where))) for v, where in values):
                names.add(attr)
        return names


def _mentioning(statements: Sequence[ast.AST], lines: list[int]) -> list[ast.AST]:
    """The statements to walk: those whose lines mention a name of interest (`lines`,
    sorted), `global` and `nonlocal`, and anything that is not a statement."""
    kept: list[ast.AST] = []
    count = len(lines)
    index = 0
    for node in statements:
        if not isinstance(node, ast.stmt) or isinstance(node, (ast.Global, ast.Nonlocal)):
            kept.append(node)
            continue
        start, end = statement_span(node)
        # statements come in line order, so the search never goes back
        index = bisect.bisect_left(lines, start, index)
        if index < count and lines[index] <= end:
            kept.append(node)
        elif index == count:
            # nothing later mentions a name; a `global` there cannot concern an earlier
            # mention (compiling that is an error)
            break
    return kept


class _Pruned(StatementWalker):
    """Visits only statements whose lines mention a name of interest (and `global` and
    `nonlocal`, which change what a binding elsewhere binds)."""

    d: _Doors
    scope: _Scope

    def visit_statements(self, statements: Sequence[ast.AST]) -> None:
        # The binder and the reader walk the same statements: pick them once per list.
        # Only the tree's own lists come here, so their ids stay theirs while it lives.
        kept = self.d.kept.get(id(statements))
        if kept is None:
            kept = self.d.kept[id(statements)] = _mentioning(statements, self.d.lines)
        for node in kept:
            self.visit(node)


class _Binder(_Pruned, ScopeBinder[_Scope]):
    """Pass 1: scopes and every binding in the walked statements."""

    def __init__(self, doors: _Doors) -> None:
        self.d = self.scopes = doors
        self.scope = doors.module

    def new_scope(self, kind: str, qualname: str, parent: _Scope) -> _Scope:
        scope = _Scope(kind, qualname, parent)
        if kind == "class":
            self.d.class_scopes[qualname] = scope
            if parent is self.d.module:
                self.d.classes[qualname] = scope
        return scope

    def bind_name(self, name: str, value: ast.expr | None, forced: str | None = None,
                  scope: _Scope | None = None) -> None:
        self._add(name, value, scope)

    def opened_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, in_class: bool) -> None:
        self.d.nodes[id(scope)] = node
        positional = [*node.args.posonlyargs, *node.args.args]
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
        if in_class and positional and not static:
            scope.self_name = positional[0].arg

    def bind_attribute(self, target: ast.Attribute, value: ast.expr | None) -> None:
        # `self.ctx = get_context()`: read back as `self.ctx.state` in the class's methods
        owner = self.d.method_class(target.value, self.scope)
        if owner is not None:
            self.d.self_attrs.setdefault((owner, target.attr), []).append((value, self.scope))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.d.class_bases[self.scope.child_prefix() + node.name] = _bases(node)
        super().visit_ClassDef(node)

    def bind_params(self, scope: _Scope, args: ast.arguments) -> None:
        # `def f(ctx=get_context())`: the default is the parameter's value unless a caller
        # passes another (evaluated where the function is defined)
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        defaulted = {arg.arg for arg, _ in pairs}
        outer = scope.parent or scope
        for arg, default in pairs:
            self.d.defaults.append((arg.arg, default, scope, outer))
            super().bind_name(arg.arg, None, scope=scope)
        extras = [extra for extra in (args.vararg, args.kwarg) if extra is not None]
        for param in (*positional, *args.kwonlyargs, *extras):
            if param.arg in _CONTEXT_FIXTURES and param.arg not in defaulted:
                # `def test_x(config_scope)`: pytest hands the test the context
                self._add(param.arg, _Imported(_CONTEXT), scope)
            elif param.arg not in defaulted:
                self.bind_name(param.arg, None, scope=scope)

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        if isinstance(target, ast.Name) and not isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            # `for entry in ctx.override(...)`: each element of what it iterates
            self.bind(target, ast.copy_location(_Element(iterable), iterable))
            return
        super().bind_loop(target, iterable)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        # `with S as c` binds what `S.__enter__()` gives (`__aenter__`, awaited): the
        # context, where S is a context's scope (`ctx.scoped()`, `scoped_override(...)`)
        enter = "__aenter__" if isinstance(node, ast.AsyncWith) else "__enter__"
        for item in node.items:
            if item.optional_vars is not None:
                entered = ast.Call(ast.Attribute(item.context_expr, enter, ast.Load()), [], [])
                self.bind(item.optional_vars, ast.copy_location(entered, item.context_expr))
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def _add(self, name: str, value: _Value, scope: _Scope | None = None) -> None:
        where = scope or self.scope
        self.d.written.append((name, value, where))
        super().bind_name(name, None, scope=where)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._add(alias.asname, _Imported(_public(alias.name)))
            else:  # `import os.path` binds `os`
                root = alias.name.split(".")[0]
                self._add(root, _Imported(root))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self._star(node)
                continue
            # a relative import is never configbags or os, as seen from an engine
            value = _Imported(f"{_public(node.module)}.{alias.name}") if node.level == 0 and node.module else None
            self._add(alias.asname or alias.name, value)

    def _star(self, node: ast.ImportFrom) -> None:
        """`from MODULE import *` binds, of the names followed, those MODULE has."""
        module = _public(node.module) if node.level == 0 and node.module else None
        if module is None:
            return
        if module == "os":
            names: Sequence[str] = _STAR_OS
        elif module == _DIST:
            names = _STAR_DIST
        elif module in ("configbags.runtime", "configbags.runtime.context") or module.split(".")[-1] == "accessors":
            names = _STAR_CONTEXT
        elif module in _STAR_FETCHERS:
            names = _STAR_FETCHERS[module]
        else:
            return
        for name in names:
            self._add(name, _Imported(f"{module}.{name}"))


def _line_parts(expr: ast.expr) -> list[ast.expr]:
    """The parts a command line is built of: an f-string's literal and formatted values,
    each side of a `+` in turn."""
    if isinstance(expr, ast.JoinedStr):
        return [part.value if isinstance(part, ast.FormattedValue) else part for part in expr.values]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return [*_line_parts(expr.left), *_line_parts(expr.right)]
    return [expr]


# Loaders of a config file whose values are Python they eval (a `[handler_x]`'s `args=`)
_CODE_CONFIG_LOADERS = frozenset({"logging.config.fileConfig"})
# psutil's readers of a process's information, the environment among it
_PROCESS_INFO = frozenset({"environ", "as_dict", "process_iter"})


class _Reader(_Pruned, ScopeReader[_Scope]):
    """Pass 2: with every binding known, report the doors opened."""

    def __init__(self, doors: _Doors, declared: frozenset[str], strings: ModuleStrings) -> None:
        self.d = self.scopes = doors
        self.scope = doors.module
        self.declared = declared
        self.strings = strings
        self.reads: list[tuple[Any, ...]] = []
        # (function, parameter): parameters used as (part of) a child's command
        self.command_params: set[tuple[str, str]] = set()
        # (function, line, col, end_line, end_col, kind, path spec): the files its child
        # processes run (FlowFacts.children, configbags.migrate.childenv.child_files)
        self.children: list[tuple[Any, ...]] = []
        # the files the module writes, with the texts it writes there (built when a child
        # runs a file the module names: ModuleWrites)
        self._writes: ModuleWrites | None = None
        self._chdirs: list[str] | None = None  # the folders the module changes into
        self._imported: frozenset[str] | None = None  # the names the module imports (_not_shown)
        self._psutil: bool | None = None  # does the module import psutil
        # ids of `os.environ.pop(NAME, default)` calls whose value is dropped: writes
        self.dropped_pops: set[int] = set()
        # ids of augmented assignment targets (`os.environ[NAME] += ...`): read, then written
        self.augmented: set[int] = set()
        # the scope-opening nodes around the walk, innermost last: a name one of them binds
        # is no module constant there
        self.enclosing: list[ast.AST] = []
        # ids of the contexts registry's uses that pick one context (`CONTEXTS[name]`,
        # `CONTEXTS.get(name)`): that context is judged where it goes
        self.registry_read: set[int] = set()
        # ids of `holder.NAME` (a declared variable's name) only written through
        # (`envs.SGLANG_PAGE_SIZE.set(...)`)
        self.written: set[int] = set()
        # ids of the expressions whose use of the environment the node around them
        # accounts for (a key read, a copy, a binding, a child process): any other use of
        # an environment value is whole, and unresolved (see visit)
        self.consumed: set[int] = set()
        # ids of the parts of a path to an environment file already reported whole
        self.paths_seen: set[int] = set()

    def visit(self, node: ast.AST) -> None:
        if (
            self.declared
            and isinstance(node, _ENV_CARRIERS)
            and id(node) not in self.consumed
            and isinstance(getattr(node, "ctx", _LOAD), ast.Load)
            and any(_reads_environ(kind) for kind in self.d.kind(node, self.scope))
        ):
            # `for k, v in os.environ.items()`, `f(os.environ)`, `return env`: every
            # variable may be read, by a name no code here spells
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and id(node) not in self.consumed
            and isinstance(node.ctx, ast.Load)
            and any(_is_context_source(kind) for kind in self.d.kind(node, self.scope))
        ):
            # `functools.cache(get_context)`, `{"ctx": get_context}`: the getter handed on,
            # not called nor renamed; whoever calls it later may read the state back
            self._report(node, STATE_READBACK, "readback", "context_escape")
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and id(node) not in self.registry_read
            and isinstance(node.ctx, ast.Load)
            and _REGISTRY in self.d.kind(node, self.scope)
        ):
            # `CONTEXTS.values()`, `f(CONTEXTS)`: every package's context, handed on whole
            self._report(node, STATE_READBACK, "readback", "context_escape")
        super().visit(node)

    def _consume(self, *nodes: ast.AST | None) -> None:
        self.consumed.update(id(node) for node in nodes if node is not None)

    # ---- the uses that account for the environment value they are given

    def _consume_bound(self, target: ast.expr, value: ast.expr) -> None:
        """A value bound to a name is an alias, whose own uses are judged; so are the
        parts of a literal unpacked pairwise (`a, env = 1, os.environ`), as the binder
        pairs them. A part bound to anything else (an attribute, a starred target) is not."""
        if isinstance(target, ast.Name):
            self._consume(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            self._consume(value)
            for sub_target, sub_value in unpacked(target.elts, value.elts):
                self._consume_bound(sub_target, sub_value)

    def _consume_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        # `for env in (os.environ,)` binds each element in turn (ScopeBinder.bind_loop);
        # `for h.ctx in [get_context()]` stores each (_context_stored)
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            self._consume(iterable)
            for element in iterable.elts:
                self._consume_bound(target, element)
                self._context_stored(target, element.value if isinstance(element, ast.Starred) else element)

    def visit_Assign(self, node: ast.Assign) -> None:
        # a value also stored elsewhere (`self.env = env = os.environ`) is not only an alias
        if len(node.targets) == 1 or all(isinstance(target, ast.Name) for target in node.targets):
            self._consume_bound(node.targets[0], node.value)
        for target in node.targets:
            self._context_stored(target, node.value)
            if self.declared and _envvar_prefix_store(target):
                self._envvar(node.value, _AUTO_PREFIX)
        self.generic_visit(node)

    def _context_stored(self, target: ast.expr, value: ast.expr) -> None:
        """`holder.ctx = ctx`, `d["ctx"] = ctx`: read back by any name, anywhere; so is
        each part of an unpacking landing there (`h.ctx, n = get_context(), 1`, as the
        binder pairs them) or in a starred target's list."""
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)):
                pairs, rest = landed(target.elts, value.elts)
                for sub_target, sub_value in pairs:
                    self._context_stored(sub_target, sub_value)
                for element in rest:
                    self._context_escape(element)
        elif isinstance(target, ast.Subscript) or (
            isinstance(target, ast.Attribute) and self.d.method_class(target.value, self.scope) is None
        ):
            self._context_escape(value)

    # ---- a config context where no analysis follows it: an unresolved readback

    def _context_escape(self, node: ast.expr | None, kinds: frozenset[str] = _HELD_CONTEXT) -> None:
        """A context, or a scope whose entering gives one, where no analysis follows it:
        whoever gets it may read the state back."""
        if node is not None and not kinds.isdisjoint(self.d.kind(node, self.scope)):
            self._report(node, STATE_READBACK, "readback", "context_escape")

    def visit_Return(self, node: ast.Return) -> None:
        # a method returning a context: its callers read it by the method's name (a module
        # function returning one is followed: configbags.migrate.flows); a scope returned
        # by any function is entered by its callers, where no analysis follows it; so is a
        # nested function's (`def make(): def g(): return get_context(); return g`), handed
        # out by its factory under no name
        if self.scope.kind == "function":
            parent = self.scope.parent
            nested = parent is not None and parent.kind == "function"
            held = self.scope.self_name is not None or nested
            self._context_escape(node.value, _HELD_CONTEXT if held else _SCOPE_KIND)
        self.generic_visit(node)

    def _yielded(self, node: ast.Yield | ast.YieldFrom) -> None:
        self._context_escape(node.value)
        self.generic_visit(node)

    visit_Yield = _yielded
    visit_YieldFrom = _yielded

    def _container(self, node: ast.Tuple | ast.List | ast.Set) -> None:
        if id(node) not in self.consumed and isinstance(getattr(node, "ctx", _LOAD), ast.Load):
            for element in node.elts:
                self._context_escape(element.value if isinstance(element, ast.Starred) else element)
            self._lambdas_escape(*node.elts)
        self.generic_visit(node)

    visit_Tuple = _container
    visit_List = _container
    visit_Set = _container

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._consume_bound(node.target, node.value)
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._consume_loop(node.target, node.iter)
        if self.declared and id(node.iter) not in self.consumed:
            self._scrub(node)
        self.generic_visit(node)

    def _scrub(self, node: ast.For | ast.AsyncFor) -> None:
        """`for k in list(os.environ): if k.startswith("SGLANG_"): del os.environ[k]`: the
        environment's keys walked only to delete variables (`del E[k]`, `E.pop(k)` as a
        statement), the key tested against literals only (`k.startswith("P_")`, `k ==
        "X"`): no value is read. Any other use of the key (`os.environ[k]`, `.get(k)`,
        `print(k)`), a key rebound, or a walk of `.items()`/`.values()` is the
        environment used whole. A scrub that does anything besides deleting (`had =
        True`, a log line) tells which variables were set (R16-14): it reads the declared
        ones its tests let through, as a filtered walk does, or `$?` with no such test."""
        walked = node.iter
        if (
            isinstance(walked, ast.Call) and len(walked.args) == 1 and not walked.keywords
            and not isinstance(walked.args[0], ast.Starred)
            and isinstance(walked.func, ast.Name) and walked.func.id in ("list", "tuple", "sorted", "set")
            and not self._callee(walked)  # (the builtin, not a name the module binds)
        ):
            walked = walked.args[0]  # a snapshot: deleting while walking the environment raises
        if not isinstance(node.target, ast.Name) or not self.d.kind(walked, self.scope) & _ENVIRON_KIND:
            return
        key = node.target.id
        parents = {id(child): parent for statement in (*node.body, *node.orelse)
                   for parent in ast.walk(statement) for child in ast.iter_child_nodes(parent)}
        pops: list[ast.Call] = []
        for statement in (*node.body, *node.orelse):
            for sub in ast.walk(statement):
                if isinstance(sub, ast.Name) and sub.id == key:
                    pop = self._scrub_use(sub, key, parents)
                    if pop is False:
                        return
                    if isinstance(pop, ast.Call):
                        pops.append(pop)
        self._consume(node.iter, walked)
        self.dropped_pops.update(id(pop) for pop in pops)
        if _scrub_records([*node.body, *node.orelse], key, pops):
            picked = _scrub_filters([*node.body, *node.orelse], key)
            if picked is None:
                self._report(node.iter, ENV_UNRESOLVED, "environ", "environ_whole")
                return
            for name in sorted(name for name in self.declared if any(fits(pattern, name) for pattern in picked)):
                self._report(node.iter, env_subject(name), "environ", "environ_filtered")

    def _scrub_use(self, name: ast.Name, key: str, parents: dict[int, ast.AST]) -> ast.Call | bool:
        """How a scrub's loop uses its key (_scrub): the pop it drives (a call), another
        use that reads no value (True), or one that may (False)."""
        parent = parents.get(id(name))
        if not isinstance(name.ctx, ast.Load):
            return False
        if isinstance(parent, ast.Subscript) and parent.slice is name and isinstance(parent.ctx, ast.Del):
            return bool(self.d.kind(parent.value, self.scope) & _ENVIRON_KIND)  # `del os.environ[k]`
        if isinstance(parent, ast.Call) and parent.args[:1] == [name] and len(parent.args) <= 2 and not parent.keywords:
            dropped = isinstance(parents.get(id(parent)), ast.Expr)
            return parent if dropped and "os.environ.pop" in self._callee(parent) else False
        if isinstance(parent, ast.Attribute) and parent.attr in ("startswith", "endswith"):
            parent = parents.get(id(parent))
        return isinstance(parent, (ast.Call, ast.Compare)) and _name_filter(parent, key) is not None

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._consume_loop(node.target, node.iter)
        if self.declared and id(node.iter) not in self.consumed:
            self._filtered_environ(node)
        self.generic_visit(node)

    def _filtered_environ(self, node: ast.comprehension) -> None:
        """`{k: v for k, v in os.environ.items() if k.startswith("NCCL_")}`: the
        environment walked for the names a literal prefix or suffix (or a name) picks
        reads those of them declared, and nothing where none is (envkeys.fits)."""
        kinds = self.d.kind(node.iter, self.scope)
        target = node.target
        if kinds & _ENVIRON_KIND and isinstance(target, ast.Name):
            key = target.id  # `for k in os.environ`, `os.environ.keys()`
        elif _ENV_ITEMS in kinds and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute) and (
            node.iter.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2
            and isinstance(target.elts[0], ast.Name)
        ):
            key = target.elts[0].id
        else:
            return
        picked: frozenset[Pattern] | None = None
        for test in node.ifs:
            found = _name_filter(test, key)
            if found is not None:
                picked = found if picked is None else frozenset(a for a in picked if any(_meet(a, b) for b in found))
            elif self._drops_declared(test, key):
                # `if not k.startswith("SGLANG_")`: every declared variable left out, so the
                # copy holds none (a test leaving one in stays a use of it whole)
                self._consume(node.iter)
                return
        if picked is None:
            return
        self._consume(node.iter)
        for name in sorted(name for name in self.declared if any(fits(pattern, name) for pattern in picked)):
            self._report(node.iter, env_subject(name), "environ", "environ_filtered")

    def _drops_declared(self, test: ast.expr, key: str) -> bool:
        """Is `test` `not F` of a literal name filter F (_name_filter) that every declared
        variable fits?"""
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            return False
        found = _name_filter(test.operand, key)
        return found is not None and all(any(fits(pattern, name) for pattern in found) for name in self.declared)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._consume(node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.augmented.add(id(node.target))
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        self._consume(node.value)  # evaluated, never read
        value = node.value
        if (
            isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords
            and not any(isinstance(arg, ast.Starred) for arg in value.args)
            and self._callee(value) & {"os.environ.pop", "os.environ.setdefault"}
        ):
            # `os.environ.pop(NAME, None)` and `os.environ.setdefault(NAME, "16")` as a
            # statement: the value dropped, no KeyError where it is unset; a write, as `del`
            # and item assignment are (a pop with no default reads its presence)
            self.dropped_pops.add(id(value))
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        if self.declared and any(_catches_missing_key(handler.type) for handler in node.handlers):
            # `try: del os.environ["NAME"] except KeyError:`: which way it goes tells set
            # from unset, as `"NAME" in os.environ` does (R16-14); a `del` not guarded so
            # is a write
            for sub in _same_scope_nodes(node.body):
                if isinstance(sub, ast.Delete):
                    for target in sub.targets:
                        if isinstance(target, ast.Subscript) and _ENVIRON in self.d.kind(target.value, self.scope):
                            self._env(target, target.slice, "environ_del")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # (`except*`: the same fields)

    def visit_If(self, node: ast.If | ast.While) -> None:
        self._consume(node.test)  # `if os.environ:` asks whether it is empty
        self.generic_visit(node)

    visit_While = visit_If

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._consume(node.test, node.body, node.orelse)  # the value is judged where it goes
        self._lambdas_escape(node.body, node.orelse)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._consume(*node.values)
        self._lambdas_escape(*node.values)
        self.generic_visit(node)

    def _lambdas_escape(self, *nodes: ast.expr | None) -> None:
        """`(lambda: get_context()) if flag else ...`, `{"ctx": lambda: get_context()}`: a
        lambda giving a context (or the environment) picked at run time or kept in a
        container is called later under a name no analysis follows."""
        for node in nodes:
            if isinstance(node, ast.Lambda):
                kinds = self.d.kind(node.body, self.d.scope_of.get(id(node), self.scope))
                if not kinds.isdisjoint(_HELD_CONTEXT):
                    self._report(node, STATE_READBACK, "readback", "context_escape")
                elif any(map(_reads_environ, kinds)):
                    self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._consume(node.operand)
        self.generic_visit(node)

    def _context_passed(self, node: ast.Call, callee: frozenset[str]) -> None:
        """A config context handed to a callable (`read(get_context())`, `pool.submit(fn,
        ctx)`) may be read back there, where no analysis follows it: deny by default.
        Exempt: what provably reads nothing (`isinstance`, `len`), and the readbacks and
        `vars(ctx)` reported as such."""
        if not callee.isdisjoint(_ENV_HARMLESS) or "builtins.vars" in callee or _STATE_DICT in callee:
            return  # (`state_dict(ctx)` is that readback)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in CONTEXT_READBACK_METHODS:
            return  # `Context.server_info(ctx)`: that readback
        if _NULL_CONTEXT in callee or (isinstance(func, ast.Attribute) and func.attr in _STACK_ENTERS):
            return  # `nullcontext(ctx)`, `stack.enter_context(scope)`: judged where they go
        for arg in (*node.args, *(k.value for k in node.keywords)):
            self._context_escape(arg.value if isinstance(arg, ast.Starred) else arg)

    def _envvar(self, value: ast.expr, keyword: str) -> None:
        """`click.option(..., envvar="NAME")` (or a list of names), `auto_envvar_prefix=
        "SGLANG"` (every declared variable under the prefix, one per option): the library
        reads them. A name or prefix the module does not show is `$?`."""
        if isinstance(value, ast.Constant) and value.value is None:
            return
        elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        for element in elements:
            names = self.strings.values(element, self.enclosing)
            if names is None:
                self._report(element, ENV_UNRESOLVED, "environ", "envvar_option")
                continue
            for name in sorted(names):
                if keyword == "envvar":
                    covered = {name} & self.declared
                else:
                    covered = {declared for declared in self.declared if declared.startswith(name.upper() + "_")}
                for variable in sorted(covered):
                    self._report(element, env_subject(variable), "environ", "envvar_option")

    def visit_Dict(self, node: ast.Dict) -> None:
        if self.declared:
            # `context_settings={"auto_envvar_prefix": "SGLANG"}`
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in _ENVVAR_KEYWORDS:
                    self._envvar(value, str(key.value))
        # `{**os.environ}`: a copy, judged where it goes
        self._consume(*(value for key, value in zip(node.keys, node.values, strict=True) if key is None))
        for value in node.values:
            self._context_escape(value)
        self._lambdas_escape(*node.values)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitOr):
            self._consume(node.left, node.right)
        elif isinstance(node.op, (ast.Add, ast.Mod, ast.Div)):
            self._proc_environ(node)  # `"/proc/%d/environ" % pid`, `Path("/proc/self") / "environ"`
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._proc_environ(node)  # `f"/proc/{pid}/environ"`
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # `open("/proc/self/environ")`: the process's environment, read as a file
        if isinstance(node.value, (str, bytes)) and id(node) not in self.paths_seen:
            self._proc_environ(node)

    def _proc_environ(self, node: ast.expr) -> None:
        """A path to a process's environment file, however the module builds it (a
        literal, `+`, `%`, an f-string, `/` of pathlib, `os.path.join`, `Path(...)`,
        `.joinpath`, a name bound to part of it): the environment read whole. Reported once,
        at the outermost expression building it."""
        if not self.declared or id(node) in self.paths_seen:
            return
        # (the name may be built of any parts: `f"/proc/{pid}/{'env' + 'iron'}"`)
        text = self._path_text(node)
        if "environ" not in text:
            return
        # a relative path is the file in each folder the module changes into
        # (`os.chdir("/proc/self"); open("environ")`)
        if names_environ_file(text) or environ_in_folders(text, self._changed_folders()):
            self._path_reported(node)

    def _path_reported(self, node: ast.expr) -> None:
        self.paths_seen.update(id(sub) for sub in ast.walk(node))
        self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _relative_to_descriptor(self, node: ast.Call) -> None:
        """`os.open("environ", flags, dir_fd=fd)`, `os.stat(name, dir_fd=fd)`: a relative
        path is in the folder a descriptor is, which the module does not show here (`fd =
        os.open("/proc/self", ...)`): a file named `environ` may be the environment."""
        given = next((k.value for k in node.keywords if k.arg == "dir_fd"), None)
        if given is None or (isinstance(given, ast.Constant) and given.value is None):
            return
        path = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("path", "src")), None)
        if path is not None and id(path) not in self.paths_seen and relative_environ(self._path_text(path)):
            self._path_reported(path)

    def _joined_path(self, call: ast.Call, callee: frozenset[str]) -> None:
        if self.declared and self._path_parts(call, callee) is not None:
            self._proc_environ(call)  # `os.path.join("/proc", "self", "environ")`

    def _path_text(self, expr: ast.expr, depth: int = 0) -> str:
        """The text a path expression spells, `*` for a part the module does not show."""
        if isinstance(expr, ast.Constant):
            value = expr.value
            return value if isinstance(value, str) else value.decode("latin-1") if isinstance(value, bytes) else "*"
        if isinstance(expr, ast.JoinedStr):
            return "".join(
                self._path_text(part.value if isinstance(part, ast.FormattedValue) else part, depth) for part in expr.values
            )
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mod, ast.Div)):
            if isinstance(expr.op, ast.Mod):
                return self._path_text(expr.left, depth)  # its `%d` stands for what is formatted in
            separator = "/" if isinstance(expr.op, ast.Div) else ""
            return self._path_text(expr.left, depth) + separator + self._path_text(expr.right, depth)
        if isinstance(expr, ast.Call):
            parts = self._path_parts(expr)
            if parts is not None:
                return "/".join(self._path_text(part, depth) for part in parts)
        value = self.strings.value(expr, self.enclosing)
        if value is not None:
            return value
        bound = self.strings.bound(expr, self.enclosing) if depth < 3 else None
        if bound is not None and len(bound) == 1 and bound[0][0] is not None:
            return self._path_text(bound[0][0], depth + 1)  # `base = f"/proc/{pid}"; base + "/environ"`
        return "*"

    def _path_parts(self, call: ast.Call, callee: frozenset[str] | None = None) -> list[ast.expr] | None:
        """The parts a call joins into a path (`os.path.join(a, b)`, `Path(a, b)`,
        `p.joinpath(b)`, `"/".join([a, b])`), or None."""
        func = call.func
        if any(isinstance(arg, ast.Starred) for arg in call.args):
            return None
        if isinstance(func, ast.Attribute) and func.attr == "joinpath":
            return [func.value, *call.args]
        if isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant) and (
            func.value.value == "/" and len(call.args) == 1 and isinstance(call.args[0], (ast.List, ast.Tuple))
        ):
            return list(call.args[0].elts)
        if not (self.d.kind(func, self.scope) if callee is None else callee).isdisjoint(_PATH_JOINERS):
            return list(call.args)
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # decorators, defaults and the signature's annotations are attributed to the
        # function. The annotations run when the `def` does (`def g(x:
        # os.environ.get("X"))`); under `from __future__ import annotations` they are
        # strings that `typing.get_type_hints` runs, as a calling string annotation is
        # (configbags.migrate.resolvers.string_annotations): read either way
        outer = self.scope
        self.scope = self.d.scope_of.get(id(node), outer)
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults, *signature_annotations(node)]:
            if expr is not None:
                self.visit(expr)
        self.enclosing.append(node)
        self.visit_statements(node.body)
        self.enclosing.pop()
        self.scope = outer

    def _enter(self, node: ast.AST) -> None:
        self.enclosing.append(node)
        super()._enter(node)
        self.enclosing.pop()

    visit_ClassDef = _enter
    visit_Lambda = _enter
    visit_ListComp = _enter
    visit_SetComp = _enter
    visit_GeneratorExp = _enter
    visit_DictComp = _enter

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        pass  # the binder took what imports bind; nothing in one is a read

    visit_ImportFrom = visit_Import

    def _report(self, node: ast.expr, leaf: str, via: str, form: str) -> None:
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        self.reads.append((self.scope.qualname, leaf, node.lineno, node.col_offset, end_line, end_col, via, form, "process"))

    def _env(self, node: ast.expr, key: ast.expr | None, form: str) -> None:
        names = self.strings.values(key, self.enclosing) if key is not None else None
        if names is None:
            # `os.environ[name]`, `os.getenv(PREFIX + part)`: it may read a declared
            # variable, unless the parts the module shows rule every one out
            # (`f"NCCL_{name}"`: configbags.migrate.envkeys)
            found = patterns(KeyCompiler(self.strings, None, None).compile(key, self.enclosing), None) if key is not None else None
            read, unresolved = declared_reads(found, self.declared) if found is not None else ([], True)
            if unresolved:  # (the one `$?` stands for the names it may also give)
                self._report(node, ENV_UNRESOLVED, "environ", form)
                return
            for name in read:
                self._report(node, env_subject(name), "environ", form)  # `NAMES.get(kind)`
            return
        for name in sorted(names & self.declared):
            self._report(node, env_subject(name), "environ", form)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._consume(node.value)
        self.registry_read.add(id(node.value))
        owner = _namespace_of(node.value, lambda e: self.d.kind(e, self.scope))
        if owner is not None and _literal(node.slice) is None and self.d.holds_context(owner, self.scope):
            # `vars(self)[name]` on an object holding a context: it may be the context
            self._report(node, STATE_READBACK, "readback", "state")
        # a store or del changes the environment; only reads are held to the allowlist,
        # `os.environ[NAME] += ...` among them (a KeyError where NAME is unset)
        if self.declared and (isinstance(node.ctx, ast.Load) or id(node) in self.augmented) and (
            _ENVIRON in self.d.kind(node.value, self.scope)
        ):
            self._env(node, node.slice, "environ_subscript")
        self.generic_visit(node)

    def _callee(self, node: ast.Call) -> frozenset[str]:
        callee = self.d.kind(node.func, self.scope)
        if not callee and isinstance(node.func, ast.Attribute) and node.func.attr in LOOP_LAUNCHERS:
            return frozenset({LOOP_LAUNCHERS[node.func.attr]})  # `loop.subprocess_shell(P, cmd)`, on any loop
        return callee

    def visit_Call(self, node: ast.Call) -> None:
        callee = self._callee(node)
        self._consume(node.func)
        self._joined_path(node, callee)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _DESCRIPTOR_WRITERS and isinstance(func.value, (ast.Attribute, ast.Call)):
            # `envs.X.set(1)`, `getattr(envs, n).set(1)`: the descriptor written, not read
            self.written.add(id(func.value))
        if isinstance(func, ast.Attribute) and func.attr == "get":
            self.registry_read.add(id(func.value))
        fetching = bool(self.d.fetched.get(id(node))) or not callee.isdisjoint(_GETATTRS) or _ATTRGETTER in callee
        if not fetching and not any(path.startswith(_GETTER_MARK) for path in callee):
            self._context_passed(node, callee)
        if self.declared:
            for keyword in node.keywords:
                if keyword.arg in _ENVVAR_KEYWORDS:
                    self._envvar(keyword.value, keyword.arg)
            prefix = _envvar_prefix_set(node)
            if prefix is not None:
                self._envvar(prefix, _AUTO_PREFIX)
        if "builtins.vars" in callee and node.args and _CONTEXT in self.d.kind(node.args[0], self.scope):
            self._report(node, STATE_READBACK, "readback", "state")  # `vars(ctx)["_state"]`
        func = node.func
        # `INFO = Context.server_info; INFO(ctx)`: the unbound method kept in a name
        kept = sorted({path.rpartition(".")[2] for path in callee} & set(CONTEXT_READBACK_METHODS))
        method = func.attr if isinstance(func, ast.Attribute) and func.attr in CONTEXT_READBACK_METHODS else (
            kept[0] if kept and isinstance(func, ast.Name) else None
        )
        if (
            method is not None
            and node.args
            and (not isinstance(func, ast.Attribute) or _CONTEXT not in self.d.kind(func.value, self.scope))
            and _CONTEXT in self.d.kind(node.args[0], self.scope)
        ):
            # `Context.server_info(ctx)`: the method called unbound, on the context it is given
            self._report(node, f"Context.{method}", "readback", method)
        # what the reader records is what the record analysis reads: here a name may be a
        # module constant (`getattr(self, ATTR)`), known where the enclosing scopes are
        fetches = self.d.fetches(node, self.scope, callee, lambda expr: self.strings.value(expr, self.enclosing))
        if fetches:
            self.d.fetched[id(node)] = fetches
            for fetch in fetches:
                self._fetch(node, fetch)
        if self.declared:
            self._other_readers(node, callee)
            self._relative_to_descriptor(node)
            if node.args or node.keywords:
                self._env_call(node, callee)
            self._consume_arguments(node, callee, fetches)
            if any(path.startswith(_ENV_CHILD_PROCESS) for path in callee):
                self._child_command(node, callee)
            else:
                self._launcher_handed_on(node)
                self._stdin_written(node)
                self._partial_launch(node)
        self.generic_visit(node)

    def _partial_launch(self, node: ast.Call) -> None:
        """`RUN = functools.partial(subprocess.run, capture_output=True)`, then `RUN(["env"])`:
        the launcher called with the partial's arguments, then the call's."""
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        for value, _ in self.strings.bound(node.func, self.enclosing) or ():
            if (
                isinstance(value, ast.Call) and value.args and self._is_launcher(value.args[0])
                and "functools.partial" in self.d.kind(value.func, self.scope)
            ):
                launched = self._called_at(node, value.args[0], [*value.args[1:], *node.args], [*value.keywords, *node.keywords])
                self._child_command(launched, self.d.kind(value.args[0], self.scope))
                return

    def _process_environ(self, node: ast.Call, func: ast.Attribute) -> None:
        """A process's environment as psutil reads it (`/proc/<pid>/environ`): `.environ()`
        on any object (`psutil.Process().environ()`, its parent's), and, where the module
        imports psutil, `as_dict` and `process_iter` asking for it (`attrs=["environ"]`)
        or for every attribute (no `attrs`, an empty or a list not shown): read whole."""
        if func.attr == "environ":
            whole = not node.args and not node.keywords
        else:
            given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "attrs"), None)
            names = [self._word(e) for e in given.elts] if isinstance(given, (ast.List, ast.Tuple, ast.Set)) else None
            if names is not None and names and None not in names:
                whole = "environ" in names
            else:
                whole = (given is not None or func.attr == "as_dict") and self._imports_psutil()
        if whole:
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _other_readers(self, node: ast.Call, callee: frozenset[str]) -> None:
        """psutil's copy of a process's environment, and a config file of eval'd Python."""
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PROCESS_INFO:
            self._process_environ(node, node.func)
        if callee & _CODE_CONFIG_LOADERS:
            self._code_config(node)

    def _code_config(self, node: ast.Call) -> None:
        """`logging.config.fileConfig(FILE)`: its handlers' `args=` and `kwargs=` are
        Python, eval'd; the file is judged where the tree's scan finds it (kind "logini",
        configbags.migrate.childfiles), `$?` where the module does not show it (a
        parameter, an open file, a parser)."""
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "fname"), None)
        spec = self._path_spec(given) if given is not None else None
        if spec is None:
            self._report(node, ENV_UNRESOLVED, "environ", "child_file")
            return
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        self.children.append((self.scope.qualname, node.lineno, node.col_offset, end_line, end_col, "logini", spec))

    def _imports_psutil(self) -> bool:
        if self._psutil is None:
            self._psutil = any(
                (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "psutil" for a in n.names))
                or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "psutil")
                for n in ast.walk(self.strings.tree)
            )
        return self._psutil

    def _env_call(self, node: ast.Call, callee: frozenset[str]) -> None:
        """A call of one of the environment's getters (`os.getenv("NAME")`), or of a
        settings object read by key."""
        # a name bound to two getters is reported once, by the first form in order
        forms = sorted(_ENV_GETTERS[path] for path in callee if path in _ENV_GETTERS)
        if not forms:
            self._config_read(node, callee)
        elif id(node) not in self.dropped_pops:  # (a pop whose value is dropped writes)
            key = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "key"), None)
            self._env(node, key, forms[0])

    def _config_read(self, node: ast.Call, callee: frozenset[str]) -> None:
        """`config("NAME", cast=int)`, `config.get("NAME")` of a starlette `Config()`: a
        read of its prefix and the key."""
        prefixes = sorted(
            prefix for prefix, dot, attr in (path.removeprefix(_CONFIG_MARK).partition(".") for path in callee
                                             if path.startswith(_CONFIG_MARK))
            if not dot or attr == "get"
        )
        if not prefixes or isinstance(node.args[0] if node.args else None, ast.Starred):
            return
        key = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "key"), None)
        prefix = prefixes[0]
        if key is None or prefix == "?":
            self._report(node, ENV_UNRESOLVED, "environ", "settings_field")
        else:
            built = ast.BinOp(ast.Constant(prefix), ast.Add(), key) if prefix else key
            self._env(node, built, "settings_field")

    def _launcher_handed_on(self, node: ast.Call) -> None:
        """A child-process launcher handed to a dispatcher with its command as the
        arguments that follow it (`asyncio.to_thread(subprocess.run, "echo $X",
        shell=True)`, `loop.run_in_executor(None, subprocess.check_output, [...])`,
        `functools.partial(...)`, `Process(target=os.system, args=(...,))`): the command is
        read as if the launcher were called there."""
        for index, arg in enumerate(node.args):
            if self._is_launcher(arg):
                keywords = [k for k in node.keywords if k.arg not in _DISPATCH_KEYWORDS]
                launched = self._called_at(node, arg, node.args[index + 1 :], keywords)
                self._child_command(launched, self.d.kind(arg, self.scope))
                return
        target = next((k.value for k in node.keywords if k.arg == "target"), None)
        if target is not None and self._is_launcher(target):
            given = next((k.value for k in node.keywords if k.arg == "args"), None)
            args = list(given.elts) if isinstance(given, (ast.Tuple, ast.List)) else []
            self._child_command(self._called_at(node, target, args, []), self.d.kind(target, self.scope))

    def _is_launcher(self, expr: ast.expr) -> bool:
        return not isinstance(expr, ast.Call) and any(
            path.startswith(_ENV_CHILD_PROCESS) for path in self.d.kind(expr, self.scope)
        )

    @staticmethod
    def _called_at(node: ast.Call, launcher: ast.expr, args: Sequence[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
        return ast.copy_location(ast.Call(func=launcher, args=list(args), keywords=keywords), node)

    def _child_command(self, node: ast.Call, callee: frozenset[str]) -> None:
        """A child process whose command the module spells, naming a declared variable,
        reads it (configbags.migrate.childenv)."""
        named: set[str] = set()
        scope = next(
            (n for n in reversed(self.enclosing) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))),
            self.strings.tree,
        )
        enclosing = list(self.enclosing)
        arguments = command_arguments(node)
        spelled: Counter[str] = Counter()  # (how often: each spelling must be accounted for)
        texts: list[str] = []
        for _, text in command_fragments(
            arguments, lambda expr: self.strings.value(expr, enclosing), scope, self.strings.tree,
            lambda expr: self.strings.bound(expr, enclosing),
        ):
            texts.append(text)
            named.update(named_variables(text, self.declared))
            spelled.update(spellings(text, self.declared))
        # (`def sh(*argv, exe=None): run(list(argv), executable=exe)`: the program its
        # callers name runs, judged as a command of its own there)
        self._command_params(scope, [*arguments, *(k.value for k in node.keywords if k.arg == "executable")])
        commands = self._child_commands(node, callee)
        rebuilt = self._rebuilt(node, callee)
        for command in rebuilt:
            # a name in a command composed (either branch of `[...] if debug else [...]`,
            # `cmd or [...]`, a list grown): each command the launch may run names it,
            # unless that command only sets or mentions it (`["echo", "NAME=1"] if c else []`)
            named.update(command_reads(command, self.declared))
        isolated = self._isolated(node)
        if isolated:
            named.clear()  # its variables are those `env=` spells, their values read where computed
        elif named:
            named -= self._silent(node, commands, named, spelled)
        for name in sorted(named):
            self._report(node, env_subject(name), "environ", "child_process")
        dumps = [command for command in commands if self._prints_environment(command)]
        if dumps and not (isolated and all(plain_dump([self._word(e) for e in self._argv(c)]) for c in dumps)):
            # `subprocess.check_output(["env", "-0"])`, `os.system("env | grep X")`, a
            # Python child dumping `os.environ`: the child prints every variable back
            # (its own only, where `env=` spells them all: `["env"], env={"A": "1"}`)
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
        elif command_dumps(rebuilt, self._python_reads_whole, isolated):
            # the same, of a command composed (`["env"] if debug else ["true"]`, `prefix +
            # ["env"]`, `"{} | sort".format(TOOL)`): childargv rebuilds each it may be
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
        elif command_reads_environ_file(texts, self._child_folders(node)):
            # `["cat", "environ"], cwd="/proc/self"`: a relative path, in the child's folder
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
        elif self._not_shown(node, callee, scope, rebuilt):
            self._report(node, ENV_UNRESOLVED, "environ", "child_command")
        given = next((k.value for k in node.keywords if k.arg == "input"), None)
        if given is not None:
            self._stdin_program(node, commands, given, named=False, rebuilt=rebuilt)
        self._files_run(node, callee, commands)

    def _command_params(self, scope: ast.AST, arguments: Sequence[ast.expr]) -> None:
        """`def sh(cmd): subprocess.run(cmd, shell=True)`: its callers hand the command
        over (configbags.migrate.flows reads what they pass)."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or self.scope.kind != "function":
            return
        params = {a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)}
        # `def run(*argv): subprocess.run(list(argv))`: the arguments from there on
        # (VARARG_MARK), as a tuple
        rest = scope.args.vararg.arg if scope.args.vararg is not None else None
        for expr in arguments:
            for sub in ast.walk(expr):
                if isinstance(sub, ast.Name) and sub.id in params:
                    self.command_params.add((self.scope.qualname, sub.id))
                elif isinstance(sub, ast.Name) and sub.id == rest:
                    self.command_params.add((self.scope.qualname, VARARG_MARK + sub.id))

    @staticmethod
    def _isolated(node: ast.Call) -> bool:
        """Is the child's environment a mapping literal with no `**` spread (`env={"A":
        "1"}`)? Then it has the variables the code spells there and no other: the process's
        reach it only through the values, read by Python's rules where they are computed."""
        given = next((k.value for k in node.keywords if k.arg == "env"), None)
        return isinstance(given, ast.Dict) and all(key is not None for key in given.keys)

    def _silent(
        self, node: ast.Call, commands: Sequence[ast.expr | list[ast.expr | None]], named: set[str], spelled: Counter[str]
    ) -> set[str]:
        """The names the child only sets, unsets or mentions (childenv.Mentions), where
        the module shows its every command and the command's words account for every
        spelling of the name in the call (not one in `input=`, say); none for a child
        whose output goes to a file or another child (`stdout=fh`: what it prints may run)."""
        output = next((k.value for k in node.keywords if k.arg == "stdout"), None)
        if output is not None and not (isinstance(output, ast.Constant) and output.value is None) and not (
            self.d.kind(output, self.scope) & {"subprocess.PIPE", "subprocess.DEVNULL"}
        ):
            return set()
        mentions = Mentions()
        for command in commands:
            if isinstance(command, ast.Name):  # `cmd = ["mpirun", "-x", "NAME=16", ...]; Popen(cmd)`
                function = next((n for n in reversed(self.enclosing) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
                if function is not None and command.id in changed_in_place(ast.walk(function)):
                    return set()  # (`cmd[0] = "printenv"`: not the literal's words that run)
                bound = self.strings.bound(command, self.enclosing) or ()
                if len(bound) == 1 and isinstance(bound[0][0], (ast.List, ast.Tuple)):
                    command = bound[0][0]
            words = command if isinstance(command, list) else (
                [None if isinstance(e, ast.Starred) else e for e in command.elts]
                if isinstance(command, (ast.List, ast.Tuple)) else None
            )
            found: Mentions | None = None
            if words is not None:
                texts = [self._mention_word(e) for e in words]
                shown = [t for t in texts if t is not None]
                found = argv_mentions(shown) if len(shown) == len(texts) else None
            elif not isinstance(command, list):
                script = self._mention_word(command)
                found = script_mentions(script) if script is not None else None
            if found is None:
                return set()
            mentions.merge(found)
        return mentions.silent(named, spelled)

    def _mention_word(self, expr: ast.expr | None) -> str | None:
        """A word or command line for Mentions: its text, where a part formatted or added
        in, or the whole word, is not shown a mark no name can be part of (`f"SGLANG_PAGE_SIZE={n}"`
        sets the variable to a value; `f"{x}SGLANG_PAGE_SIZE=1"` is no assignment; a word
        not shown is no option, so what it might have made quiet stays loud)."""
        word = self._word(expr)
        if word is not None or expr is None:
            return word
        if not isinstance(expr, (ast.JoinedStr, ast.BinOp)):
            return NOT_SHOWN_MARK  # (`str(n)`: a word, a value no name is spelled in)
        parts: list[str] = []
        for part in _line_parts(expr):
            if isinstance(part, (ast.List, ast.Tuple, ast.ListComp, ast.Starred)):
                return None
            text = self.strings.value(part, self.enclosing)
            parts.append(text if text is not None else NOT_SHOWN_MARK)
        return "".join(parts)

    def _stdin_written(self, node: ast.Call) -> None:
        """`proc.communicate(text)`, `proc.stdin.write(text)` on a child the module starts
        (`proc = subprocess.Popen(["sh"], stdin=PIPE)`, `await asyncio.create_subprocess_exec
        (...)`): the text is the program of a child reading one there (_stdin_program)."""
        func = node.func
        if not isinstance(func, ast.Attribute) or not node.args:
            return
        if func.attr == "communicate":
            proc: ast.expr = func.value
        elif func.attr in _STDIN_WRITERS and isinstance(func.value, ast.Attribute) and func.value.attr == "stdin":
            proc = func.value.value
        else:
            return
        for value in self._started(proc):
            started = value.value if isinstance(value, ast.Await) else value
            if isinstance(started, ast.Call):
                callee = frozenset(p for p in self.d.kind(started.func, self.scope) if p.startswith(_ENV_CHILD_PROCESS))
                if callee:
                    commands, rebuilt = self._child_commands(started, callee), self._rebuilt(started, callee)
                    self._stdin_program(node, commands, node.args[0], named=True, rebuilt=rebuilt)

    def _started(self, proc: ast.expr) -> list[ast.expr]:
        """What `proc` is bound to: by an assignment, or as a `with` statement's target
        (`with subprocess.Popen([...], stdin=PIPE) as p`)."""
        values = [value for value, _ in self.strings.bound(proc, self.enclosing) or () if value is not None]
        if isinstance(proc, ast.Name) and self.enclosing:
            for node in ast.walk(self.enclosing[-1]):
                if isinstance(node, (ast.With, ast.AsyncWith)):
                    values += [
                        item.context_expr for item in node.items
                        if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == proc.id
                    ]
        return values

    def _stdin_program(
        self, node: ast.Call, commands: Sequence[ast.expr | list[ast.expr | None]], given: ast.expr, named: bool,
        rebuilt: Sequence[Command] = (),
    ) -> None:
        """The text a shell or a Python interpreter reads on its standard input is its
        program (`Popen(["sh"], stdin=PIPE).communicate("printenv NAME")`, `run([sys.executable,
        "-"], input=code)`), judged as a `-c` script is: the declared names it spells (`named`:
        the `input=` keyword's are the command's already), whole-environment dumps and names it
        builds, and `$?` where the module does not show the text."""
        readers = {stdin_reader([self._word(e) for e in words]) for words in map(self._argv, commands)}
        readers |= {stdin_reader(list(c)) for c in rebuilt if isinstance(c, tuple)}
        readers.discard(None)
        if not readers:
            return
        text = self._word(given) if not isinstance(given, ast.JoinedStr) else None
        if text is None:
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
            return
        if named:
            for name in named_variables(text, self.declared):
                self._report(node, env_subject(name), "environ", "child_process")
        whole = (
            ("shell" in readers and shell_prints_environment(text, self._python_reads_whole))
            or ("python" in readers and self._python_reads_whole(text))
            or ("make" in readers and text_reads("make", "", text, self.declared, self._python_reads_whole)[1])
            or any(
                program_prints_environment(reader[len("other:") :], text, self._python_reads_whole)
                for reader in readers if reader is not None and reader.startswith("other:")
            )
        )
        if whole:
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _argv(self, command: ast.expr | list[ast.expr | None]) -> list[ast.expr | None]:
        """A command's words where it spells them as an argv (`["sh", "-s"]`) or a
        single word (`"bash"`); else one word not shown."""
        if isinstance(command, list):
            return [None if isinstance(e, ast.Starred) else e for e in command]
        if isinstance(command, (ast.List, ast.Tuple)):
            return [None if isinstance(e, ast.Starred) else e for e in command.elts]
        text = self._word(command)
        return [command] if text is not None and text.strip() and " " not in text.strip() else [None]

    def _files_run(self, node: ast.Call, callee: frozenset[str], commands: Sequence[ast.expr | list[ast.expr | None]]) -> None:
        """The files the child runs (a script, a Makefile, a Python file, a program named
        by its path): kept for the scan of the tree, which reads them
        (configbags.migrate.childfiles); one the module does not show is `$?` here. Each
        command the launch may run is judged, as the module composes it (childargv: a
        list grown by `.append`, `[sys.executable] + argv`, either branch of a conditional)."""
        found: set[ChildFile] = set()
        rebuilt = self._rebuilt(node, callee, self._file_word_at)
        fed = next((k.value for k in node.keywords if k.arg == "input"), None)
        fed_word = self._file_word_at(fed, self.enclosing) if fed is not None else None
        # a relative folder is in the project's, or in any the module changes into
        for cwd in self._child_folders(node):
            for command in rebuilt:
                found.update(self._rebuilt_files(command, cwd))
                program = command[0] if isinstance(command, tuple) and command else None
                if fed is not None and program is not None and program_name(program) in ARGUMENT_FEEDERS:
                    assert isinstance(command, tuple)
                    found.update(self._rebuilt_files((*command, fed_word), cwd))  # `["xargs", "sh"], input=str(SCRIPT)`
            found.update(self._fed_file(node, commands, cwd, rebuilt))
            environment = next((k.value for k in node.keywords if k.arg == "env"), None)
            if isinstance(environment, ast.Dict):  # `env={"BASH_ENV": FILE}`: a shell child runs FILE first
                for key, value in zip(environment.keys, environment.values, strict=True):
                    name = self._word(key) if key is not None else None
                    spec = self._path_spec(value) if name in _STARTUP_FILES else None
                    if spec is not None:
                        found.add(("shell", rebased(spec, cwd)))
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        for kind, spec in sorted(found):
            if spec:
                self.children.append((self.scope.qualname, node.lineno, node.col_offset, end_line, end_col, kind, spec))
                self._written_run(node, kind, spec)
            else:
                self._report(node, ENV_UNRESOLVED, "environ", "child_file")

    def _child_folders(self, node: ast.Call) -> list[str]:
        """The folders a child may start in, as path specs: its `cwd=` ("" where the module
        does not show it), or the process's, relative to any folder the module changes into."""
        given = next((k.value for k in node.keywords if k.arg == "cwd"), None)
        start = "@cwd" if given is None else self._path_spec(given) or ""
        return list(dict.fromkeys(rebased(start, folder) for folder in ["@cwd", *self._changed_folders()]))

    def _changed_folders(self) -> list[str]:
        """The folders the module changes into (childenv.changed_folders), once."""
        if self._chdirs is None:
            # (built once, where a child runs files: one walk of the module)
            self._chdirs = changed_folders(self.strings.tree, self._path_spec, lambda expr: self.d.kind(expr, self.d.module))
        return self._chdirs

    def _written_run(self, node: ast.Call, kind: str, spec: str) -> None:
        """A file the module itself writes, run by the same path (a launch script written
        at run time, `p.write_text(TEMPLATE); run([str(p)])`), wherever it lies: judged by
        the texts written there (childenv.ModuleWrites), `$?` where one is not shown."""
        if self._writes is None:
            self._writes = ModuleWrites(
                self.strings.tree, self._path_spec, self.strings.value, lambda expr: self.d.kind(expr, self.d.module)
            )
        specs = [f"{spec}/{name}" for name in ("GNUmakefile", "makefile", "Makefile")] if kind == "make_dir" else [spec]
        if kind == PYTHON_MODULE:
            specs = [f"{spec}.py", f"{spec}/__main__.py"]
        texts = [text for each in specs for text in self._writes.texts.get(each, [])]
        if not texts:
            return
        if kind == PYTHON_MODULE:
            kind = "python"
        if kind == "opaque" or kind.startswith(MODULE_ARGUMENT) or None in texts:
            self._report(node, ENV_UNRESOLVED, "environ", "child_file")
            return
        shown = [text or "" for text in texts]
        for text in [*shown, "".join(shown)] if len(shown) > 1 else shown:  # (each write, and all appended)
            interpreter = kind.partition(":")[2]
            run = kind.partition(":")[0] if kind != "make_dir" else "make"
            if run == "program":
                run, interpreter = run_by(text.encode("utf-8", "surrogateescape"))
            if run == "binary":
                self._report(node, ENV_UNRESOLVED, "environ", "child_file")
                continue
            names, whole = text_reads(run, interpreter, text, self.declared, self._python_reads_whole)
            for name in names:
                self._report(node, env_subject(name), "environ", "child_written")
            if whole:
                self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _fed_file(
        self, node: ast.Call, commands: Sequence[ast.expr | list[ast.expr | None]], cwd: str, rebuilt: Sequence[Command]
    ) -> list[ChildFile]:
        """A file opened as the standard input of a child that reads its program there
        (`run(["sh"], stdin=open(SCRIPT))`, `with open(F) as fh: run([sys.executable, "-"],
        stdin=fh)`, `input=Path(F).read_text()`): the child runs the file."""
        fed: list[str | None] = []
        for keyword in node.keywords:
            if keyword.arg in ("stdin", "input"):
                values = [keyword.value]
                if isinstance(keyword.value, ast.Name):
                    values += self._started(keyword.value)
                fed += [self._opened(value, keyword.arg == "input") for value in values]
        if not any(spec is not None for spec in fed):
            return []
        readers = {stdin_reader([self._word(e) for e in words]) for words in map(self._argv, commands)}
        readers |= {stdin_reader(list(c)) for c in rebuilt if isinstance(c, tuple)}  # (composed: `["sh"] if c else [...]`)
        return [
            (reader, rebased(spec, cwd)) for reader in readers if reader is not None for spec in fed if spec is not None
        ]

    def _opened(self, expr: ast.expr, read: bool) -> str | None:
        """The path spec of the file `expr` opens (`open(F)`, `Path(F).open()`), or, where
        `read`, whose text it reads (`open(F).read()`, `Path(F).read_text()`)."""
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        if read:
            if isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes") and not expr.args:
                return self._path_spec(func.value)
            if isinstance(func, ast.Attribute) and func.attr == "read" and not expr.args:
                return self._opened(func.value, read=False)
            return None
        if isinstance(func, ast.Name) and func.id == "open" and expr.args:
            return self._path_spec(expr.args[0])
        if isinstance(func, ast.Attribute) and func.attr == "open" and not expr.args:
            return self._path_spec(func.value)
        return None

    @staticmethod
    def _rebuilt_files(command: Command, cwd: str) -> list[ChildFile]:
        """The files a rebuilt command runs (childenv.child_files, script_files): a word
        that is a path the module builds (_PATH_WORD) is no text, only its spec."""
        if isinstance(command, str):
            return script_files(command, cwd)
        if command is None:
            return []
        words = [None if w is not None and w.startswith(_PATH_WORD) else w for w in command]
        specs = [
            None if w is None else w[len(_PATH_WORD) :] if w.startswith(_PATH_WORD) else literal_spec(w) for w in command
        ]
        return child_files(words, specs, cwd)

    def _file_word_at(self, expr: ast.expr, scopes: Sequence[ast.AST]) -> str | None:
        """A word of a command, for the files it runs: its text (_command_word: an
        f-string's with a path formatted in kept as its spec, a file's text as READ_MARK
        and the file), else the path the module builds (`os.path.join(HERE, "x.py")`), as
        _PATH_WORD and its spec."""
        word = self._word_at(expr, scopes)
        if word is None:
            word = self._command_word(expr)
        if word is not None:
            return word
        spec = self._path_spec(expr, scopes)
        return _PATH_WORD + spec if spec is not None else None

    def _command_word(self, expr: ast.expr | None) -> str | None:
        """A word of an argv, for the files it runs: its text; an f-string's with a path
        formatted in kept as its spec; a file's text as READ_MARK and the file."""
        if isinstance(expr, ast.JoinedStr):
            return self._command_line(expr)
        word = self._word(expr)
        if word is None and isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self._command_line(expr)  # `["sh", "-c", "bash -e " + str(SCRIPT)]`
        read = self._read_file(expr) if word is None and expr is not None else None
        return READ_MARK + read if read is not None else word

    def _read_file(self, expr: ast.expr, depth: int = 0) -> str | None:
        """The path spec of the file whose text `expr` is (`SCRIPT.read_text()`,
        `open(F).read()`, `fh.read()` on the handle `with open(F) as fh` gives, a name
        bound to one of these): "" for a file the module does not show, None where `expr`
        reads no file."""
        if isinstance(expr, ast.Name):
            bound = [v for v, _ in self.strings.bound(expr, self.enclosing) or () if v is not None] if depth < 2 else []
            return next((spec for spec in (self._read_file(v, depth + 1) for v in bound) if spec is not None), None)
        if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
            return None
        func = expr.func
        if func.attr in ("read_text", "read_bytes"):
            return self._path_spec(func.value) or ""
        if func.attr != "read" or expr.args:
            return None
        handles = self._started(func.value) if isinstance(func.value, ast.Name) else [func.value]
        for handle in handles:
            if isinstance(handle, ast.Call) and (
                (isinstance(handle.func, ast.Name) and handle.func.id == "open")
                or (isinstance(handle.func, ast.Attribute) and handle.func.attr == "open")
            ):
                return self._opened(handle, read=False) or ""
        return None

    def _command_line(self, command: ast.JoinedStr | ast.BinOp) -> str | None:
        """The text of a command line built of parts (an f-string, or strings joined by
        `+`), a path put in kept as its spec (`f"sh {HERE}/show.sh"`, `"sh " + str(SCRIPT)`),
        a value not shown as a word no file can be (`$?`); None for no string (`argv + [x]`)."""
        parts: list[str] = []
        for value in _line_parts(command):
            if isinstance(value, (ast.List, ast.Tuple, ast.ListComp, ast.Starred)):
                return None
            text = self.strings.value(value, self.enclosing)
            if text is None and not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                spec = self._path_spec(value)
                text = PATH_MARK + spec if spec is not None else "$?"
            parts.append(text or "")
        return "".join(parts)

    def _path_spec(self, expr: ast.expr, enclosing: Sequence[ast.AST] | None = None, depth: int = 0) -> str | None:
        """The file `expr` names, as a path spec (configbags.migrate.childenv.child_files):
        a literal, `__file__`, and what `os.path` and `pathlib` make of them
        (`os.path.join(os.path.dirname(__file__), "x")`, `Path(__file__).parent / "x"`,
        `HERE / "x"` with `HERE` bound so); None where the module does not show it."""
        scopes = self.enclosing if enclosing is None else enclosing
        if depth > _MAX_STRING_DEPTH:
            return None
        text = self.strings.value(expr, scopes)
        if text is not None:
            return literal_spec(text)
        if isinstance(expr, ast.Name) and expr.id == "__file__":
            return "@file"
        step = functools.partial(self._path_spec, enclosing=scopes, depth=depth + 1)
        if isinstance(expr, ast.Attribute) and expr.attr == "parent":
            inner = step(expr.value)
            return None if inner is None else inner + "/.."
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.Add)):
            left = step(expr.left)
            right = self.strings.value(expr.right, scopes)
            if left is None or right is None:
                return None
            return _joined(left, right) if isinstance(expr.op, ast.Div) else left + right
        if isinstance(expr, ast.JoinedStr) and expr.values and isinstance(expr.values[0], ast.FormattedValue):
            # `f"{HERE}/scripts/x.sh"`: a path, then literal text
            head = step(expr.values[0].value)
            tail = [self.strings.value(part, scopes) for part in expr.values[1:]]
            return None if head is None or any(t is None for t in tail) else head + "".join(t or "" for t in tail)
        if isinstance(expr, ast.Call) and not any(isinstance(a, ast.Starred) for a in expr.args):
            return self._path_call(expr, step, scopes)
        if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)):
            bound = self.strings.bound(expr, scopes)
            values = [(v, s) for v, s in bound or () if v is not None]
            if len(values) == 1 and len(bound or ()) == 1:
                return self._path_spec(values[0][0], values[0][1], depth + 1)
        return None

    def _path_call(self, expr: ast.Call, step: Callable[[ast.expr], str | None], scopes: Sequence[ast.AST]) -> str | None:
        paths = self.d.kind(expr.func, self.scope)
        args = expr.args
        receiver = expr.func.value if isinstance(expr.func, ast.Attribute) and not paths else None
        method = expr.func.attr if isinstance(expr.func, ast.Attribute) else ""
        if (paths & _PATH_SAME or dotted_name(expr.func) == "str") and len(args) == 1:
            return step(args[0])  # `Path(p)`, `os.path.abspath(p)`, `str(p)`
        if receiver is not None and method in _PATH_METHODS_SAME and not args:
            return step(receiver)  # `p.resolve()`
        if paths & {"os.path.dirname", "posixpath.dirname"} and len(args) == 1:
            inner = step(args[0])
            return None if inner is None else inner + "/.."
        if paths & _PATH_JOINERS and args:
            base, rest = step(args[0]), args[1:]  # `os.path.join(HERE, "x")`, `Path(HERE, "x")`
        elif receiver is not None and method in ("joinpath", "with_name"):
            base, rest = step(receiver), args  # `p.joinpath("x")`, `p.with_name("x")`
            if base is not None and method == "with_name":
                base += "/.."
        else:
            return None
        for part in rest:
            text = self.strings.value(part, scopes)
            if base is None or text is None:
                return None
            base = _joined(base, text)
        return base

    def _child_commands(self, node: ast.Call, callee: frozenset[str]) -> list[ast.expr | list[ast.expr | None]]:
        """What a child-process call runs, as the module spells it: an argv (a list of
        word expressions, None for one not shown) or an expression giving a command line
        (a shell's, or a list of words), where each launcher has it
        (configbags.migrate.childenv.LAUNCHERS)."""
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            return []
        paths = sorted(path for path in callee if path.startswith(_ENV_CHILD_PROCESS))
        return [command for path in paths for command in launcher_commands(path, node.args, node.keywords)]

    def _not_shown(self, node: ast.Call, callee: frozenset[str], scope: ast.AST, rebuilt: Sequence[Command]) -> bool:
        """Deny by default: a launch whose command the module shows no value of, its
        program not even (`subprocess.run(self.build_cmd())`, `cmd = make(); run(cmd)`),
        that is no parameter of the function around it (its callers hand the command over:
        flows judges it there) nor another module's constant, may run anything."""
        if program_shown(rebuilt):
            return False
        if self._imported is None:
            self._imported = imported_names(self.strings.tree)
        params = parameters(scope)
        for path in sorted(path for path in callee if path.startswith(_ENV_CHILD_PROCESS)):
            for command in launcher_commands(path, node.args, node.keywords):
                head = command[0] if isinstance(command, list) and command else command
                if isinstance(head, ast.expr) and opaque_command(head, params, self._imported):
                    return True
        return False

    def _rebuilt(
        self, node: ast.Call, callee: frozenset[str], word: Callable[[ast.expr, Sequence[ast.AST]], str | None] | None = None
    ) -> list[Command]:
        """Every command the launch may run, rebuilt from how the module composes it
        (configbags.migrate.childargv), starred arguments too (`create_subprocess_exec(*cmd)`);
        each word as `word` gives it (_word_at: its text)."""
        rebuilder = CommandRebuilder(word or self._word_at, self.strings.bound, lambda expr: self.d.kind(expr, self.scope))
        found: list[Command] = []
        for path in sorted(path for path in callee if path.startswith(_ENV_CHILD_PROCESS)):
            for command in launcher_commands(path, node.args, node.keywords):
                if isinstance(command, list):
                    found += rebuilder.argvs(command, self.enclosing)
                else:
                    found += rebuilder.commands(command, self.enclosing)
        return found

    def _word_at(self, expr: ast.expr, scopes: Sequence[ast.AST]) -> str | None:
        """_word, inside the `scopes` a binding is evaluated in."""
        if isinstance(expr, ast.Attribute) and "sys.executable" in self.d.kind(expr, self.scope):
            return "python"
        if isinstance(expr, ast.Constant) and isinstance(expr.value, bytes):
            return expr.value.decode("utf-8", "surrogateescape")
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and "shutil.which" in self.d.kind(expr.func, self.scope):
            return self._word_at(expr.args[0], scopes)  # `shutil.which("bash")`: the program it names
        return self.strings.value(expr, scopes)

    def _prints_environment(self, command: ast.expr | list[ast.expr | None], depth: int = 0) -> bool:
        """Does the child print the whole environment back (configbags.migrate.childenv)?
        A name is followed to what the module binds it to (`DUMP = ["env"]`)."""
        if isinstance(command, list):
            return prints_environment([self._word(e) for e in self._argv(command)], self._python_reads_whole)
        if isinstance(command, (ast.List, ast.Tuple)):
            words = [None if isinstance(e, ast.Starred) else e for e in command.elts]
            return prints_environment([self._word(e) for e in words], self._python_reads_whole)
        if isinstance(command, ast.Call) and isinstance(command.func, ast.Attribute) and command.func.attr == "split":
            # `"env -0".split()`, `shlex.split(CMD)`: the words of a command line
            shlex_split = command.args and "shlex.split" in self.d.kind(command.func, self.scope)
            command = command.args[0] if shlex_split else command.func.value
        script = self._word(command)
        if script is not None:
            return shell_prints_environment(script, self._python_reads_whole)
        bound = self.strings.bound(command, self.enclosing) if depth < 2 else None
        return any(value is not None and self._prints_environment(value, depth + 1) for value, _ in bound or ())

    def _word(self, expr: ast.expr | None) -> str | None:
        """The text of one word or command line, where the module shows it (`sys.executable`
        is a Python interpreter)."""
        if expr is None:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, bytes):
            return expr.value.decode("utf-8", "surrogateescape")
        if isinstance(expr, ast.Attribute) and "sys.executable" in self.d.kind(expr, self.scope):
            return "python"
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and "shutil.which" in self.d.kind(expr.func, self.scope):
            return self._word(expr.args[0])  # `shutil.which("bash")`: the program it names
        return self.strings.value(expr, self.enclosing)

    def _python_reads_whole(self, code: str) -> bool:
        return python_reads_whole(code, self.declared)

    def _consume_arguments(self, node: ast.Call, callee: frozenset[str], fetches: tuple[Fetch, ...]) -> None:
        """The arguments whose use of the environment the call accounts for."""
        if not callee.isdisjoint(_ENV_COPIERS) or not callee.isdisjoint(_ENV_HARMLESS) or any(
            starts_child(path) for path in callee  # (`CompletedProcess(os.environ, 0)` starts nothing)
        ):
            # a copy is judged where it goes; a child process's environment is its own
            self._consume(*node.args, *(k.value for k in node.keywords))
            self._consume(*(arg.value for arg in node.args if isinstance(arg, ast.Starred)))
        for fetch in fetches:
            # `getattr(os.environ, "get")` is `os.environ.get`, judged where it goes
            if fetch.form != "setattr" and all(p is not None and p[0] in _ENV_METHODS for p in fetch.paths):
                self._consume(fetch.target)

    def _fetch(self, node: ast.Call, fetch: Fetch) -> None:
        """Readbacks by name: `getattr(get_context(), "state")`, `attrgetter("state.values")
        (ctx)`, `getattr(dist, "state_dict")`; a name built at run time may be either."""
        if fetch.form not in ("getattr", "getattr_default", "attrgetter"):
            return
        for path in fetch.paths:
            if path is None:
                kinds = self.d.kind(fetch.target, self.scope)
                if _CONTEXT in kinds or self.d.holds_context(fetch.target, self.scope):
                    # `getattr(self, attr)` on an object holding a context may be it
                    self._report(node, STATE_READBACK, "readback", "state")
                elif _DIST in kinds:
                    self._report(node, STATE_DICT_READBACK, "readback", "state_dict")
                if fetch.form != "attrgetter" and self.declared and id(node) not in self.written:
                    self._fetched_by_name(node, node.args[1])
                continue
            expr = fetch.target
            for attr in path:
                chained = fetched_chain(expr, (attr,), node)
                if attr == "state" and _CONTEXT in self.d.kind(expr, self.scope):
                    self._report(node, STATE_READBACK, "readback", "state")
                elif attr in CONTEXT_READBACK_METHODS and _CONTEXT in self.d.kind(expr, self.scope):
                    self._report(node, f"Context.{attr}", "readback", attr)
                elif attr == "state_dict" and _STATE_DICT in self.d.kind(chained, self.scope):
                    self._report(node, STATE_DICT_READBACK, "readback", "state_dict")
                elif attr in self.declared and id(node) not in self.written:
                    # `getattr(envs, "SGLANG_PAGE_SIZE")`: as `envs.SGLANG_PAGE_SIZE`
                    self._report(node, env_subject(attr), "environ", "env_attribute")
                expr = chained

    def _fetched_by_name(self, node: ast.Call, name: ast.expr) -> None:
        """`getattr(envs, n)` with a name of several values (a loop over a constant,
        `for n in NAMES`): as `envs.NAME` for each declared variable among them. Where the
        name may also be one the module does not show, it is `$?` if the parts shown
        leave a declared variable possible (`for n in NAMES: n = n.lower()`, `"SGLANG_" +
        n`); a name wholly unknown on an object not known (`getattr(obj, attr)`) is not
        reported, as no declared variable's name is in sight."""
        names = self.strings.values(name, self.enclosing)
        if names is not None:
            for variable in sorted(names & self.declared):
                self._report(node, env_subject(variable), "environ", "env_attribute")
            return
        found = patterns(KeyCompiler(self.strings, None, None).compile(name, self.enclosing), None)
        shown = found - {_ANY_NAME}
        read, partly = declared_reads(shown, self.declared)
        if partly or (read and _ANY_NAME in found):
            self._report(node, ENV_UNRESOLVED, "environ", "env_attribute")
            return
        for variable in read:
            self._report(node, env_subject(variable), "environ", "env_attribute")

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                self._consume(right)
                if self.declared and _ENVIRON in self.d.kind(right, self.scope):
                    self._env(node, left, "environ_in")
            elif isinstance(op, (ast.Is, ast.IsNot)):
                self._consume(left, right)
            left = right
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _ENV_METHODS:
            self._consume(node.value)
        if node.attr in self.declared and (isinstance(node.ctx, ast.Load) or id(node) in self.augmented) and (
            id(node) not in self.written
        ):
            # `envs.SGLANG_PAGE_SIZE.get()`: an object holding one variable's reader (or
            # value) under the variable's name, as SGLang's environ module does (and
            # `ENV.SGLANG_PAGE_SIZE += "x"`, which loads it first)
            self._report(node, env_subject(node.attr), "environ", "env_attribute")
        if isinstance(node.ctx, ast.Load):
            if node.attr == "__dict__" and _CONTEXT in self.d.kind(node.value, self.scope):
                # `ctx.__dict__["_state"]`: its private parts, the state among them
                self._report(node, STATE_READBACK, "readback", "state")
            elif node.attr == "state" and _CONTEXT in self.d.kind(node.value, self.scope):
                self._report(node, STATE_READBACK, "readback", "state")
            elif node.attr in _PREPARED_STATES and _PREPARED in self.d.kind(node.value, self.scope):
                # `ctx.prepare_override(...).state`: the whole next (and `.base`, current) state
                self._report(node, STATE_READBACK, "readback", "prepared_state")
            elif node.attr in _ENTRY_VALUES and _ENTRY in self.d.kind(node.value, self.scope):
                # `ctx.override(...)[0].old`: the published value before the change
                self._report(node, STATE_READBACK, "readback", "override_entry")
            elif node.attr in CONTEXT_READBACK_METHODS and _CONTEXT in self.d.kind(node.value, self.scope):
                # `ctx.server_info()["record"]["tp_size"]`: the readbacks parsed back hold
                # every namespace, as `.state` does
                self._report(node, f"Context.{node.attr}", "readback", node.attr)
            elif node.attr == "state_dict" and _STATE_DICT in self.d.kind(node, self.scope):
                self._report(node, STATE_DICT_READBACK, "readback", "state_dict")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # `from configbags.runtime.dist import state_dict [as name]`, called or passed on
        if isinstance(node.ctx, ast.Load) and _STATE_DICT in self.d.name_kind(node.id, self.scope):
            self._report(node, STATE_DICT_READBACK, "readback", "state_dict")


def _name_filter(test: ast.expr, key: str) -> frozenset[Pattern] | None:
    """The names a comprehension's test lets through, as patterns, where it tests the
    key `key` against literals only: `k.startswith("P_")` (or a tuple of prefixes),
    `k.endswith(...)`, `k == "X"`, `k in ("X", "Y")`, and `and` of such (each narrows);
    None for any other test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        parts = [_name_filter(value, key) for value in test.values]
        known = [part for part in parts if part is not None]
        if not known:
            return None
        narrowed = known[0]
        for part in known[1:]:
            narrowed = frozenset(a for a in narrowed if any(_meet(a, b) for b in part))
        return narrowed
    if (
        isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in ("startswith", "endswith")
        and isinstance(test.func.value, ast.Name) and test.func.value.id == key and len(test.args) == 1 and not test.keywords
    ):
        arg = test.args[0]
        elements = arg.elts if isinstance(arg, ast.Tuple) else [arg]
        texts = [_literal(element) for element in elements]
        if any(text is None for text in texts):
            return None
        start = test.func.attr == "startswith"
        return frozenset((text, "", True) if start else ("", text, True) for text in texts if text is not None)
    if (
        isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == key and len(test.ops) == 1
    ):
        op, right = test.ops[0], test.comparators[0]
        picks: list[ast.expr] | None = None
        if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            picks = right.elts
        elif isinstance(op, ast.Eq):
            picks = [right]
        texts = [_literal(element) for element in picks] if picks is not None else [None]
        if any(text is None for text in texts):
            return None
        return frozenset((text, "", False) for text in texts if text is not None)
    return None


def _meet(a: Pattern, b: Pattern) -> bool:
    """Could one name fit both patterns (for narrowing by `and`)? Approximate: yes unless
    their literal parts conflict."""
    if not a[2] and not b[2]:
        return a[0] == b[0]
    if not a[2]:
        return fits(b, a[0])
    if not b[2]:
        return fits(a, b[0])
    return (a[0].startswith(b[0]) or b[0].startswith(a[0])) and (a[1].endswith(b[1]) or b[1].endswith(a[1]))


# the expressions whose value may be the environment (or a copy, its pairs, a reader)
_ENV_CARRIERS = (ast.Name, ast.Attribute, ast.Call, ast.Dict, ast.BinOp)
_LOAD = ast.Load()


def _may_open_a_door(text: str, declared: frozenset[str], mentioned: frozenset[str]) -> bool:
    """Could this file open a door at all? Substring tests, at memchr speed: most files
    mention none of the words, and are never walked. An environment read is walked
    whatever names the file spells: a name may be built (`PREFIX + "TP_SIZE"`, an escape
    in the literal), so no spelling of it need occur in the text. (`state` may be a
    string, or no word at all: `getattr(get_context(), name)`.)"""
    # (a context stored where no analysis follows it is reported too, so any word of one
    # is enough)
    if any(word in text for word in _CONTEXT_WORDS):
        return True
    if "state_dict" in text or ("state" in text and "configbags" in text):
        return True
    return bool(declared) and (
        bool(mentioned) or any(word in text for word in (*_ENV_WORDS, *CHILD_PROCESS_WORDS, *_OTHER_READER_WORDS, *_PROC_TEXTS, "envvar", "starlette"))
    )


def _may_fetch(text: str) -> bool:
    return any(word in text for word in _FETCH_WORDS)


class DoorScan:
    """The door analysis of one module, run at most once and only when asked: for its
    reads (where the file may open a door) or for the fetching calls the record analysis
    needs resolved (configbags.migrate.aliases)."""

    def __init__(
        self, tree: ast.Module, text: str, settings: ScanSettings, imported: Iterable[tuple[str, str, str]] = ()
    ) -> None:
        self.tree = tree
        self.text = text
        self.declared = _declared_set(settings.env_vars)
        self.may_fetch = _may_fetch(text)
        # the declared variables the text spells (one substring test each, once)
        self.mentioned = frozenset(name for name in self.declared if name in text)
        imported = tuple(imported)
        # and those another module's constant spells, imported here (`from pkg.names
        # import NAMES`, then `for n in NAMES: getattr(envs, n)`)
        told = frozenset(
            name for name in self.declared if any(name in value for _, shape, value in imported if shape in ("str", "list", OPEN_SHAPE))
        )
        self.may_open = _may_open_a_door(text, self.declared, self.mentioned | told)
        self.strings = ModuleStrings(tree, imported, text)
        self._result: tuple[list[tuple[Any, ...]], dict[int, tuple[Fetch, ...]], set[tuple[str, str]]] | None = None
        self._children: list[tuple[Any, ...]] = []
        self._bare_names: dict[str, bool] = {}

    def _run(self) -> tuple[list[tuple[Any, ...]], dict[int, tuple[Fetch, ...]], set[tuple[str, str]]]:
        if self._result is None:
            names = _BASE_NAMES
            if self.declared:
                # an attribute named like a declared variable (`envs.SGLANG_PAGE_SIZE`) and
                # a library reading one for an option (`envvar=`)
                names = names | self.mentioned | _ENVVAR_KEYWORDS
                if "starlette" in self.text:
                    names = names | {"Config"}
            lines = set(mention_lines(self.text, names))
            strings = self.strings
            # Rounds until the names of interest stop growing (see configbags.migrate.aliases);
            # each name's mentions are searched for once
            while True:
                doors = _Doors(sorted(lines))
                doors.nodes[id(doors.module)] = self.tree
                _Binder(doors).visit_statements(self.tree.body)
                doors.settle()
                new = (doors.alias_names() | self._modules_used_bare(doors) | self._partial_names()) - names
                if not new:
                    break
                names |= new
                lines.update(mention_lines(self.text, new))
            reader = _Reader(doors, self.declared, strings)
            reader.visit_statements(self.tree.body)
            self._children = sorted(set(reader.children))
            self._result = (reader.reads, doors.fetched, reader.command_params)
        return self._result

    def _partial_names(self) -> set[str]:
        """Names bound to a `partial(...)` (`RUN = functools.partial(subprocess.run, ...)`):
        their calls may launch a child (_Reader._partial_launch), so their lines are walked."""
        if "partial" not in self.text:
            return set()
        return {
            target.id
            for node in ast.walk(self.tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and dotted_name(node.value.func).rpartition(".")[2] == "partial"
            for target in node.targets if isinstance(target, ast.Name)
        }

    def _modules_used_bare(self, doors: _Doors) -> set[str]:
        """Names bound to a module that holds a door, where the text uses one bare (`_os =
        os`, `m = mod or os`, `D = dist`, `importlib.reload(os)`): the statements that bind
        or hand on the module must be walked, so that it is that module wherever it goes."""
        modules = {name for name, value, _ in doors.written if isinstance(value, _Imported) and _door_module(value.path)}
        return {name for name in modules if self._bare(name)}

    def _bare(self, name: str) -> bool:
        """Does the text mention `name` bare, as a value (aliases.bare_mentions)?"""
        known = self._bare_names.get(name)
        if known is None:
            known = self._bare_names[name] = bool(bare_mentions(self.text, (name,)))
        return known

    def reads(self) -> list[tuple[Any, ...]]:
        """The environment reads and operator readbacks, as read rows: (function, leaf,
        line, col, end_line, end_col, via, form, origin). A file that mentions no door's
        word has none, whether or not the analysis ran for its fetches."""
        return self._run()[0] if self.may_open else []

    def command_params(self) -> set[tuple[str, str]]:
        """(function, parameter): the parameters its child processes run as a command."""
        return self._run()[2] if self.may_open else set()

    def children(self) -> list[tuple[Any, ...]]:
        """The files its child processes run (FlowFacts.children)."""
        if not self.may_open:
            return []
        self._run()
        return self._children

    def fetched(self) -> Mapping[int, tuple[Fetch, ...]]:
        """id(call) -> what it fetches by name, for every fetching call in the module."""
        return self._run()[1] if self.may_fetch else {}


@functools.lru_cache(maxsize=8)
def _declared_set(env_vars: tuple[str, ...]) -> frozenset[str]:
    return frozenset(env_vars)


# How deep a name's value is followed (`A = B + "_X"`, `B = C`, ...).
_MAX_STRING_DEPTH = 8


# The scope nodes the resolver is told about, around an expression (outermost first)
RESOLVER_SCOPES = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp,
)
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Base classes whose members are their values where a str is wanted (`os.environ[E.X]`)
_STR_ENUM_BASES = frozenset({"str", "StrEnum", "enum.StrEnum"})
# FlowFacts.constants / FlowInput.constants shapes: what a module binds a class attribute
# to (`Cls.attr`: its class body, `self.attr = ...` in its methods, `Cls.attr = ...`;
# `Cls.*name` a class keyword, `Cls.**` an unpacked one), value NUL-separated strings;
# the `?` shape where the module does not show the value
CLASS_BINDS = "class_binds"
CLASS_BINDS_UNKNOWN = "class_binds?"
# and the attributes a module's methods read through `self` or `cls` (NUL-separated)
CLASS_LOADS = "class_loads"
_SELF_LOADS = re.compile(r"\b(?:self|cls)\.([A-Za-z_]\w*)")
KEYWORD_MARK = "*"
_ENUM_BASES = frozenset({"Enum", "enum.Enum", "IntEnum", "enum.IntEnum", "Flag", "enum.Flag", *_STR_ENUM_BASES})
# One name's bindings in one scope: each value, None for a binding whose value is unknown
_Bound = list[ast.expr | None]


# A command parameter that is a function's `*args` (command_params): "*" and its name
VARARG_MARK = "*"
KWARG_MARK = "**"  # (starts with VARARG_MARK: test it first)


def python_reads_whole(code: str, declared: frozenset[str]) -> bool:
    """Does Python code a child runs (`python -c CODE`) use the environment whole, or
    read a variable by a name it does not show? Its own door analysis says."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    settings = ScanSettings(env_vars=tuple(sorted(declared)))
    # a declared name the code builds (`os.environ['SGLANG_PAGE' + '_SIZE']`) is not
    # spelled in its text as the whole-word test wants: it is as unknown here
    spelled = {env_subject(name) for name in named_variables(code, declared)}
    return any(
        read[1] == ENV_UNRESOLVED or (read[6] == "environ" and read[1] not in spelled)
        for read in DoorScan(tree, code, settings).reads()
    )


def command_dumps(commands: Sequence[Command], python_whole: Callable[[str], bool], isolated: bool = False) -> bool:
    """Does any of the rebuilt `commands` print the whole environment back (childenv)?
    A plain dump of a child given only the variables `env=` spells (`isolated`) prints those."""
    for command in commands:
        if isinstance(command, tuple):
            if prints_environment(list(command), python_whole) and not (isolated and plain_dump(list(command))):
                return True
            if command and command[0] is None and _unknown_runs_a_dump(command, python_whole):
                return True
        elif isinstance(command, str) and shell_prints_environment(command, python_whole):
            return True
    return False


def _unknown_runs_a_dump(command: tuple[str | None, ...], python_whole: Callable[[str], bool]) -> bool:
    """A program the module does not show (`[TOOL, "-c", "env"]`, TOOL another module's name)
    given `-c` code that a shell or a Python would run as a dump: deny by default, as the
    program may well be either."""
    for flag, code in itertools.pairwise(command):
        if flag == "-c" and isinstance(code, str) and (shell_prints_environment(code, python_whole) or python_whole(code)):
            return True
    return False


class ModuleStrings:
    """The constant resolver of the door analysis, the project pass and child commands:
    what an expression evaluates to where the module plainly shows it, one step of
    bindings at a time. A literal, a concatenation (`+`, an f-string) of such, and:

    - a name, by every binding of it in the scope it resolves to (Python's rules, class
      bodies aside): a module constant (every top-level binding), a local (`name = "X"`,
      however many times: each value is possible), a parameter's default (`def f(name=
      "X")`), a loop or comprehension variable over a literal (`for n in ("A", "B")`)
      or over a constant the module shows (`for n in NAMES`, NAMES a tuple, list or set of
      such, here or imported): each element, handed to the loop variable alone, with an
      unknown one besides where NAMES is no constant (bound again, changed in place);
    - `C.X` of a module-level class's body (`Keys.PAGE`), `self.X` / `cls.X` in a method
      (its class's body, what the class's methods assign to `self.X`, and what the
      module stores as X on an instance from outside: `k.X = v`, `replace(k, X=v)`), and
      a str Enum's member (`E.X.value`, or `E.X` where E mixes in str);
    - a subscript of a dict, list or tuple literal by a literal key (`NAMES["page"]`).

    Anything else (a parameter without a default, a name imported from another module, a
    call, a binding the scope does not show) is unknown: None. A name whose bindings give
    several strings has several values (values()); value() is the one, or None."""

    def __init__(self, tree: ast.Module, imported: Iterable[tuple[str, str, str]] = (), text: str | None = None) -> None:
        self.tree = tree
        self.text = text  # the module's source, where known: its lines narrow the walks
        rows = tuple(imported)
        # other modules' constants the module imports, by the name it spells them with
        # (`from pkg.names import PAGE`, `names.PAGE`), as the project pass found them
        self.imported: dict[str, ast.expr] = {
            spelled: _constant_node(shape, value) for spelled, shape, value in rows if shape in ("str", "list")
        }
        # (class, attribute) -> what other modules bind it to: their subclasses of the
        # module's class, their class keywords, their `Class.attr = ...` (None: not shown);
        # class "": the module's own constant, `names.PAGE = ...` there (R16-8)
        self.outside: dict[tuple[str, str], list[ast.expr | None]] = {}
        for spelled, shape, value in rows:
            if shape in (CLASS_BINDS, CLASS_BINDS_UNKNOWN):
                owner, _, attr = spelled.rpartition(".")
                self.outside.setdefault((owner, attr), []).extend(
                    [ast.Constant(item) for item in value.split("\0")] if shape == CLASS_BINDS else [None]
                )
        self._subclasses: dict[int, list[ast.ClassDef]] = {}
        self._class_assigns: dict[str, dict[str, list[tuple[ast.expr | None, Sequence[ast.AST]]]]] | None = None
        self._on_self: dict[int, dict[str, list[tuple[ast.AST, ast.expr | None]]]] = {}  # id(class) -> ...
        self._bindings: dict[str, list[ast.expr | None]] | None = None
        self._scopes: dict[int, dict[str, _Bound]] = {}  # id(scope node) -> name -> values
        self._classes: dict[str, ast.ClassDef] | None = None
        self._self_attrs: dict[int, dict[str, _Bound]] = {}  # id(class) -> attr -> values
        self._changed: frozenset[str] | None = None
        self._stores: dict[str, list[tuple[str | None, ast.expr | None, Sequence[ast.AST]]]] | None = None
        # imported lists that are no constants, for loops over them alone (OPEN_SHAPE)
        self._imported_open: dict[str, ast.expr] = {
            spelled: _constant_node("list", value) for spelled, shape, value in rows if shape == OPEN_SHAPE
        }

    def _module_bindings(self) -> dict[str, list[ast.expr | None]]:
        if self._bindings is None:
            found: dict[str, list[ast.expr | None]] = {}
            declares = self.text is None or "global" in self.text  # (a keyword is spelled in ASCII)
            for stmt in self.tree.body:
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                            continue  # `Keys.PAGE = ...` binds the class's attribute (_assigned_on_class)
                        for name in _target_names(target):
                            value = stmt.value if isinstance(target, ast.Name) else None
                            found.setdefault(name, []).append(value)
                elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
                    value = stmt.value if isinstance(stmt, ast.AnnAssign) else None
                    if value is not None or isinstance(stmt, ast.AugAssign):
                        found.setdefault(stmt.target.id, []).append(value)
                elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                    # `for n in NAMES:` at the top level: n takes each element; a name the
                    # loop binds again (its body, `else`) is unknown besides
                    _bind_loop(found, stmt.target, stmt.iter)
                    for name in Counter(_bound_at_module(stmt, declares)) - Counter(_target_names(stmt.target)):
                        found.setdefault(name, []).append(None)
                else:
                    # any other top-level statement that binds a name (an import, a def, a
                    # loop, a block holding an assignment) makes its value unknown
                    for name in _bound_at_module(stmt, declares):
                        found.setdefault(name, []).append(None)
            # another module's `names.PAGE = ...` rebinds the constant too (R16-8)
            for (owner, name), values in self.outside.items():
                if not owner:
                    found.setdefault(name, []).extend(values)
            self._bindings = found
        return self._bindings

    def value(self, expr: ast.expr, enclosing: Sequence[ast.AST], depth: int = 0) -> str | None:
        """The one string `expr` evaluates to inside the `enclosing` scope nodes
        (outermost first), or None."""
        found = self.values(expr, enclosing, depth)
        return next(iter(found)) if found is not None and len(found) == 1 else None

    def values(self, expr: ast.expr, enclosing: Sequence[ast.AST], depth: int = 0) -> frozenset[str] | None:
        """Every string `expr` may evaluate to inside `enclosing`, or None (unknown)."""
        if depth > _MAX_STRING_DEPTH:
            return None
        if isinstance(expr, ast.Constant):
            return frozenset({expr.value}) if isinstance(expr.value, str) else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self.values(expr.left, enclosing, depth + 1)
            right = self.values(expr.right, enclosing, depth + 1) if left is not None else None
            if left is None or right is None or len(left) * len(right) > _MAX_VALUES:
                return None
            return frozenset(a + b for a in left for b in right)
        if isinstance(expr, ast.JoinedStr):
            joined: frozenset[str] = frozenset({""})
            for part in expr.values:
                if isinstance(part, ast.FormattedValue):
                    if part.conversion not in (-1, ord("s")) or part.format_spec is not None:
                        return None
                    piece = self.values(part.value, enclosing, depth + 1)
                else:
                    piece = self.values(part, enclosing, depth + 1)
                if piece is None or len(joined) * len(piece) > _MAX_VALUES:
                    return None
                joined = frozenset(a + b for a in joined for b in piece)
            return joined
        bound = self.bound(expr, enclosing)
        if bound is None:
            return None
        found: set[str] = set()
        for value, where in bound:
            if value is None:
                return None
            inner = self.values(value, where, depth + 1)
            if inner is None:
                return None
            found |= inner
        return frozenset(found) if found else None

    def bound(
        self, expr: ast.expr, enclosing: Sequence[ast.AST]
    ) -> list[tuple[ast.expr | None, Sequence[ast.AST]]] | None:
        """One step: the expressions `expr` (a name, an attribute of a class or of
        `self`, a literal subscript) is bound to, each with the scopes it is evaluated in;
        None where the module does not show them."""
        if isinstance(expr, ast.Name):
            return self._name(expr.id, enclosing)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, enclosing)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, enclosing)
        return None

    def _name(self, name: str, enclosing: Sequence[ast.AST]) -> list[tuple[ast.expr | None, Sequence[ast.AST]]] | None:
        for index in range(len(enclosing) - 1, -1, -1):
            node = enclosing[index]
            if isinstance(node, ast.ClassDef) and index != len(enclosing) - 1:
                continue  # a class body does not enclose its methods
            values = self._scope_bindings(node).get(name)
            if values is not None:
                outer = enclosing[:index]
                inside = enclosing[: index + 1]
                if isinstance(node, _COMPREHENSIONS):
                    # its first iterable is the outer scope's, a later one its own
                    first = node.generators[0].iter
                    return self._each_element(
                        [(v, outer if not isinstance(v, _EachOf) or v.iterable is first else inside) for v in values]
                    )
                # a parameter default is evaluated outside the function; all else inside
                return self._each_element(
                    [(v, outer if v is not None and _is_default(node, v) else inside) for v in values]
                )
        bindings = self._module_bindings()
        values = bindings.get(name)
        if name in self.imported and values is not None and len(values) == 1:
            return [(self.imported[name], ())]
        if not values or "*" in bindings:
            return None  # bound nowhere the module shows (a builtin), or by a star import
        return self._each_element([(v, ()) for v in values])

    def _each_element(self, bound: list[tuple[ast.expr | None, Sequence[ast.AST]]]) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """The bindings with a loop variable's (`for n in NAMES`) replaced by each
        element of its container, where it is a constant the module shows: here alone, so
        the elements are the loop variable's values and no other name's."""
        if not any(isinstance(value, _EachOf) for value, _ in bound):
            return bound
        found: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
        for value, where in bound:
            found.extend(self._elements(value.iterable, where) if isinstance(value, _EachOf) else [(value, where)])
        return found

    def _elements(
        self, container: ast.expr, enclosing: Sequence[ast.AST], depth: int = 0
    ) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """Each element of what `container` evaluates to: a literal tuple, list or set (or
        `frozenset(...)`, `sorted(...)` of one), or a name bound only to such constants,
        each binding followed (`NAMES = (...)`, `from pkg.names import NAMES`); an
        unknown element (None) for a binding the module does not show and for a list or
        set the module grows or changes in place (`NAMES.append(x)`, `NAMES[0] = x`)."""
        unwrapped = self._unwrapped(container)
        if depth > _MAX_STRING_DEPTH:
            return [(None, enclosing)]
        if isinstance(unwrapped, (ast.Tuple, ast.List, ast.Set)):
            literal: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
            for element in unwrapped.elts:
                # `(*BASE, "X")`: BASE's elements too
                literal.extend(
                    self._elements(element.value, enclosing, depth + 1) if isinstance(element, ast.Starred)
                    else [(element, enclosing)]
                )
            return literal
        if not isinstance(unwrapped, (ast.Name, ast.Attribute)):
            return [(None, enclosing)]
        opened = self._imported_open.get(dotted_name(unwrapped))
        if opened is not None:
            # another module's list that is no constant: its elements, and others
            return [(None, enclosing), *self._elements(opened, (), depth + 1)]
        bound = self.bound(unwrapped, enclosing)
        if not bound:
            return [(None, enclosing)]
        # a container changed in place holds its elements and others not shown
        found: list[tuple[ast.expr | None, Sequence[ast.AST]]] = (
            [(None, enclosing)] if dotted_name(unwrapped) in self._changed_in_place() else []
        )
        for value, where in bound:
            found.extend([(None, where)] if value is None else self._elements(value, where, depth + 1))
        return found

    def _unwrapped(self, container: ast.expr) -> ast.expr:
        """`frozenset(X)`, `tuple(X)`, `sorted(X)`, ...: X, whose elements they hold (the
        builtin, not a module's own function of that name)."""
        while (
            isinstance(container, ast.Call) and isinstance(container.func, ast.Name)
            and container.func.id in _SAME_ELEMENTS and len(container.args) == 1 and not container.keywords
            and not isinstance(container.args[0], ast.Starred) and container.func.id not in self._module_bindings()
        ):
            container = container.args[0]
        return container

    def _changed_in_place(self) -> frozenset[str]:
        """The names (and dotted names) whose value the module changes in place, anywhere
        in it: so a list constant grown elsewhere is no constant."""
        if self._changed is None:
            self._changed = changed_in_place(ast.walk(self.tree))
        return self._changed

    def exported(self, text: str, declared: frozenset[str]) -> list[tuple[str, str, str]]:
        """The module's constants other modules may import as an environment name or a
        command (FlowFacts.constants): a string literal, or a list or tuple of them,
        naming one of the `declared` variables (those the text spells), bound once at the
        top level. (Only those: each
        importer of one is analysed again, and an imported constant naming none reads
        nothing declared, or is `$?` where a name is wanted.) Cheap: only statements
        whose lines mention a candidate are looked at for other bindings."""
        if not declared:
            return []
        candidates: dict[str, tuple[str, str]] = {}
        for stmt in self.tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
                stmt.target if isinstance(stmt, ast.AnnAssign) else None
            )
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if not isinstance(target, ast.Name) or value is None:
                continue
            exportable = self._exportable(value, declared)
            if exportable is not None:
                # every exportable binding's names, where there are several (OPEN_SHAPE)
                earlier = candidates.get(target.id)
                candidates[target.id] = exportable if earlier is None else ("list", f"{earlier[1]}\0{exportable[1]}")
        if not candidates:
            return []
        lines = mention_lines(text, candidates)
        counts: dict[str, int] = dict.fromkeys(candidates, 0)
        changed: set[str] = set()
        for stmt in self.tree.body:
            if mentions(lines, statement_span(stmt)):
                for name in _bound_at_module(stmt):
                    if name in counts:
                        counts[name] += 1
                changed |= changed_in_place(ast.walk(stmt))
        rows = [(name, *candidates[name]) for name, count in counts.items() if count == 1]
        # a list bound again or changed in place holds other names besides: its
        # importers' loops over it are told so (and nothing else is)
        rows += [
            (name, OPEN_SHAPE, candidates[name][1]) for name, count in counts.items()
            if candidates[name][0] == "list" and (count > 1 or name in changed)
        ]
        return sorted(rows)

    def exported_commands(self) -> list[tuple[str, str, str]]:
        """The module's constants other modules may import as a child's command that prints
        the environment back (`TOOL = "env"`, `DUMP = ["env"]`; FlowFacts.constants), bound
        once at the top level, as exported() gives those naming a variable."""
        found: list[tuple[str, str, str]] = []
        bindings = self._module_bindings()
        for stmt in self.tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            items = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if not items or len(items) != len(elements) or len(bindings.get(name, ())) != 1 or sum(map(len, items)) > 4096:
                continue
            command: Command = items[0] if elements[0] is value else tuple(items)
            # (a Python child's code is judged where the argv is whole: not here, for speed)
            if command_dumps([command], lambda _code: False) or (isinstance(command, str) and prints_environment([command], lambda _code: False)):
                found.append((name, "str" if elements[0] is value else "list", "\0".join(items)))
        return found

    def _exportable(self, value: ast.expr, declared: frozenset[str]) -> tuple[str, str] | None:
        """(shape, value) of a string literal, or of a tuple, list or set of them
        (`frozenset({...})` too), naming a declared variable; else None."""
        container = self._unwrapped(value)
        elements = container.elts if isinstance(container, (ast.List, ast.Tuple, ast.Set)) else [value]
        items = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if not items or len(items) != len(elements) or not any(declared.intersection(_WORDS.findall(item)) for item in items):
            return None
        return ("str" if elements[0] is value else "list", "\0".join(items))

    def _scope_bindings(self, node: ast.AST) -> dict[str, _Bound]:
        """What a function, lambda, class body or comprehension binds, by name."""
        found = self._scopes.get(id(node))
        if found is not None:
            return found
        found = {}
        body: list[ast.AST] = []
        if isinstance(node, _FUNCTION_NODES):
            _bind_parameters(found, node.args)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _DEFAULTS_ATTRS & self._assigned_on_class(node.name).keys():
                # `page.__defaults__ = (...)` replaces the defaults (R16-8): not shown
                for param, default in _parameter_defaults(node.args):
                    if default is not None:
                        found[param].append(None)
            body = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        elif isinstance(node, ast.ClassDef):
            body = list(node.body)
        elif isinstance(node, _COMPREHENSIONS):
            for generator in node.generators:
                _bind_loop(found, generator.target, generator.iter)
        _bind_body(found, body)
        self._scopes[id(node)] = found
        return found

    def _class(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> ast.ClassDef | None:
        """The class `expr` names: a module-level class (`Keys`), or the class of the
        method whose `self` or `cls` it is."""
        owner = self._receiver_class(expr, enclosing)
        if owner is not None or not isinstance(expr, ast.Name):
            return owner
        if any(expr.id in self._scope_bindings(node) for node in enclosing if not isinstance(node, ast.ClassDef)):
            return None
        bindings = self._module_bindings().get(expr.id)
        cls = self._module_classes().get(expr.id)
        return cls if cls is not None and bindings is not None and len(bindings) == 1 else None

    def _receiver_class(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> ast.ClassDef | None:
        """The class whose method's `self` or `cls` `expr` is, or None."""
        if not isinstance(expr, ast.Name):
            return None
        for index in range(len(enclosing) - 1, 0, -1):
            node, owner = enclosing[index], enclosing[index - 1]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if isinstance(owner, ast.ClassDef):
                    positional = [*node.args.posonlyargs, *node.args.args]
                    is_static = any(dotted_name(d) == "staticmethod" for d in node.decorator_list)
                    if positional and not is_static and positional[0].arg == expr.id:
                        return owner
                break
        return None

    def _module_classes(self) -> dict[str, ast.ClassDef]:
        if self._classes is None:
            self._classes = {stmt.name: stmt for stmt in self.tree.body if isinstance(stmt, ast.ClassDef)}
        return self._classes

    def _attribute(self, expr: ast.Attribute, enclosing: Sequence[ast.AST]) -> list[tuple[ast.expr | None, Sequence[ast.AST]]] | None:
        spelled = dotted_name(expr)
        if spelled in self.imported and not any(
            spelled.partition(".")[0] in self._scope_bindings(node) for node in enclosing
        ):
            return [(self.imported[spelled], ())]  # `names.PAGE`, names another module
        if expr.attr == "value" and isinstance(expr.value, ast.Attribute):
            # `E.X.value`: the member's value, of an Enum
            cls = self._class(expr.value.value, enclosing)
            if cls is not None and _bases(cls) & _ENUM_BASES:
                return self._class_attribute(cls, expr.value.attr)
            return None
        cls = self._class(expr.value, enclosing)
        if cls is None:
            return None
        bases = _bases(cls)
        if bases & _ENUM_BASES and not bases & _STR_ENUM_BASES:
            return None  # a member, not its value
        # `self.X` / `cls.X` in a method is the class's or any subclass's X: each value the
        # hierarchy binds (R13-7: a base's `env_name = ""` overridden by its subclasses)
        hierarchy = self._receiver_class(expr.value, enclosing) is cls and not bases & _ENUM_BASES
        return self._class_attribute(cls, expr.attr, hierarchy=hierarchy)

    def _class_attribute(
        self, cls: ast.ClassDef, attr: str, *, hierarchy: bool = False,
    ) -> list[tuple[ast.expr | None, Sequence[ast.AST]]] | None:
        """What `cls.attr` is bound to: the class body, `self.attr = ...` in its methods,
        `Class.attr = ...` in the module, and what other modules bind it to. With
        `hierarchy` (read through `self` or `cls`), also each subclass's binding, the class
        keywords its `__init_subclass__` stores, and an ancestor's where the class binds
        none itself (a base no scanned module shows: None, not known)."""
        classes = [cls, *self.subclasses(cls)] if hierarchy else [cls]
        values: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
        for each in classes:
            values += self._own_bindings(each, attr)
        if hierarchy:
            values += self._keyword_bindings(classes, attr)
            values += self._instance_bindings(classes, attr)
            if not self._own_bindings(cls, attr, outside=False):
                values += self._ancestor_bindings(cls, attr, 0)
        return values or None

    def _own_bindings(
        self, cls: ast.ClassDef, attr: str, *, outside: bool = True,
    ) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """What the module (and, with `outside`, other modules) bind `cls.attr` to."""
        values: list[tuple[ast.expr | None, Sequence[ast.AST]]] = [
            (value, (cls,)) for value in self._scope_bindings(cls).get(attr, ())
        ]
        on_self = self._assigned_on_self(cls)
        for method, value in [*on_self.get(attr, ()), *on_self.get(ANY_ATTR, ())]:
            values.append((value, (cls, method)))
        values += self._assigned_on_class(cls.name).get(attr, [])
        if outside:
            values += [(value, ()) for value in self.outside.get((cls.name, attr), ())]
        return self._each_element(values)  # (a loop variable's: each element)

    def class_rows(self, text: str) -> list[tuple[str, str, str]]:
        """What the module binds class attributes to, for the module whose methods read
        them through `self` or `cls` (FlowFacts.constants, shapes CLASS_BINDS and
        CLASS_BINDS_UNKNOWN): each attribute of a class deriving another (its body,
        `self.attr = ...` in its methods, `Cls.attr = ...`), its class keywords, and
        `Name.attr = ...` at the top level on a name that is none of its classes (an
        imported class). The project pass hands each to the base's module."""
        rows: list[tuple[str, str, str]] = []
        classes = self._module_classes()
        self._assigned_on_class("", text)  # (fills the table, from the lines that spell one)
        for cls in classes.values():
            if not _bases(cls) - {"object", ""}:
                continue
            attrs = {
                name for item in cls.body if isinstance(item, (ast.Assign, ast.AnnAssign))
                for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
                for name in _target_names(target)
            } | (self._assigned_on_self(cls).keys() - {ANY_ATTR}) | self._assigned_on_class(cls.name).keys()
            found = [self._binds_row(f"{cls.name}.{attr}", self._own_bindings(cls, attr, outside=False)) for attr in sorted(attrs)]
            for keyword in cls.keywords:
                spelled = f"{cls.name}.{KEYWORD_MARK}{keyword.arg}" if keyword.arg else f"{cls.name}.{KEYWORD_MARK * 2}"
                found.append(self._binds_row(spelled, [(keyword.value if keyword.arg else None, ())]))
            rows += filter(None, found)
        for name, assigned in sorted((self._class_assigns or {}).items()):
            if name not in classes and name not in ("self", "cls"):
                rows += filter(None, (self._binds_row(f"{name}.{attr}", values) for attr, values in sorted(assigned.items())))
        # the attributes its methods read through `self` or `cls`: only a binding of one of
        # these can change what the module reads (the project pass hands it no other)
        loaded = sorted(set(_SELF_LOADS.findall(text))) if classes else []
        if loaded:
            rows.append(("", CLASS_LOADS, "\0".join(loaded)))
        return rows

    def _binds_row(self, spelled: str, bound: list[tuple[ast.expr | None, Sequence[ast.AST]]]) -> tuple[str, str, str] | None:
        found: set[str] = set()
        for value, where in bound:
            if isinstance(value, ast.Constant) and not isinstance(value.value, str):
                continue  # a number, None, a bool: no variable's name (a key of it raises)
            strings = self.values(value, where) if value is not None else None
            if strings is None or any("\0" in item for item in strings):
                return (spelled, CLASS_BINDS_UNKNOWN, "")
            found |= strings
        if not found and all(isinstance(value, ast.Constant) for value, _ in bound):
            return None  # only numbers and the like: nothing to hand on
        return (spelled, CLASS_BINDS, "\0".join(sorted(found))) if found else (spelled, CLASS_BINDS_UNKNOWN, "")

    def subclasses(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The module's classes deriving `cls`, at any depth (by the names of their bases)."""
        known = self._subclasses.get(id(cls))
        if known is None:
            known = []
            names = {cls.name}
            changed = True
            while changed:
                changed = False
                for other in self._module_classes().values():
                    if other is not cls and other not in known and _bases(other) & names:
                        known.append(other)
                        names.add(other.name)
                        changed = True
            self._subclasses[id(cls)] = known
        return known

    def _ancestor_bindings(self, cls: ast.ClassDef, attr: str, depth: int) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """`attr` as `cls` inherits it: from the module's base classes that bind it;
        a base of another module (or an ancestor too deep) may bind anything."""
        values: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
        for base in cls.bases:
            spelled = dotted_name(base)
            if spelled == "object":
                continue
            parent = self._module_classes().get(spelled)
            if parent is None or depth > _MAX_STRING_DEPTH:
                return [(None, ())]
            own = self._own_bindings(parent, attr)
            values += own or self._ancestor_bindings(parent, attr, depth + 1)
        return values

    def _keyword_bindings(self, classes: Sequence[ast.ClassDef], attr: str) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """`cls.attr = name` in an `__init_subclass__(cls, name=...)` of the hierarchy:
        what each subclass passes as its class keyword `name=` (an unpacked `**kw`: not
        known). The parameter's default is the hook's own binding."""
        hooks = [cls for cls in classes for item in cls.body if getattr(item, "name", "") == "__init_subclass__"]
        found: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
        for hook_class in hooks:
            for method, value in self._assigned_on_self(hook_class).get(attr, ()):
                if not (isinstance(method, ast.FunctionDef) and method.name == "__init_subclass__" and isinstance(value, ast.Name)):
                    continue
                for each in [hook_class, *self.subclasses(hook_class)]:
                    for keyword in each.keywords if each is not hook_class else ():
                        if keyword.arg == value.id:
                            found.append((keyword.value, ()))
                        elif keyword.arg is None:
                            found.append((None, ()))
                    found += [(v, ()) for v in self.outside.get((each.name, KEYWORD_MARK + value.id), ())]
                    found += [(v, ()) for v in self.outside.get((each.name, KEYWORD_MARK * 2), ())]
        return found

    def _assigned_on_class(self, name: str, text: str | None = None) -> dict[str, list[tuple[ast.expr | None, Sequence[ast.AST]]]]:
        """attr -> (value, scopes) of each `Name.attr = value` in the module: at the top
        level (judged there), or in a function or class (not followed: None). With the
        module's `text`, only the statements whose lines spell such an assignment are
        walked (the facts of every module ask for them)."""
        if self._class_assigns is None:
            text = text if text is not None else self.text
            statements: list[ast.stmt] = self.tree.body
            if text is not None:
                lines = lines_of(text, (m.start() for m in _CLASS_ASSIGN.finditer(text)))
                statements = [stmt for stmt in statements if mentions(lines, statement_span(stmt))]
            found: dict[str, dict[str, list[tuple[ast.expr | None, Sequence[ast.AST]]]]] = {}
            for stmt in statements:
                top = not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                for sub in ast.walk(stmt):
                    setter = _class_setattr(sub)
                    if setter is not None:
                        # `setattr(Keys, "PAGE", value)`, as `Keys.PAGE = value` (R16-8)
                        owner, attr, set_value = setter
                        found.setdefault(owner, {}).setdefault(attr, []).append((set_value if top else None, ()))
                        continue
                    if not isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                        continue
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    value = sub.value if isinstance(sub, (ast.Assign, ast.AnnAssign)) and top else None
                    for target in targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                            found.setdefault(target.value.id, {}).setdefault(target.attr, []).append((value, ()))
            self._class_assigns = found
        return self._class_assigns.get(name, {})

    def _assigned_on_self(self, cls: ast.ClassDef) -> dict[str, list[tuple[ast.AST, ast.expr | None]]]:
        """attr -> (method, value) of each `self.attr = value` in the class's methods, and
        of `setattr(self, "attr", value)` (`object.__setattr__` too); under ANY_ATTR
        (every attribute, value not shown) a `setattr` by a name not shown and a store
        through the instance's dict (`self.__dict__.update(kw)`, `vars(self)[k] = v`: R16-9).
        (Kept per class: each attribute read through `self` asks.)"""
        known = self._on_self.get(id(cls))
        if known is not None:
            return known
        found: dict[str, list[tuple[ast.AST, ast.expr | None]]] = {}
        self._on_self[id(cls)] = found
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            positional = [*method.args.posonlyargs, *method.args.args]
            if not positional:
                continue
            me = positional[0].arg
            for sub in ast.walk(method):
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(sub, ast.Assign):
                    targets, value = sub.targets, sub.value
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    targets, value = [sub.target], sub.value if isinstance(sub, ast.AnnAssign) else None
                for target in targets:
                    if _instance_dict_of(target) == me:
                        found.setdefault(ANY_ATTR, []).append((method, None))  # `self.__dict__ = kw`, `|= kw`
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                        found.setdefault(target.attr, []).append((method, value))
                    elif isinstance(target, ast.Subscript) and _instance_dict_of(target.value) == me:
                        found.setdefault(ANY_ATTR, []).append((method, None))
                setter = _attribute_setter(sub)
                if setter is not None and isinstance(setter[0], ast.Name) and setter[0].id == me:
                    found.setdefault(setter[1], []).append((method, setter[2]))
                elif (
                    isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in _DICT_WRITERS
                    and _instance_dict_of(sub.func.value) == me
                ):
                    found.setdefault(ANY_ATTR, []).append((method, None))
        return found

    def _instance_bindings(self, classes: Sequence[ast.ClassDef], attr: str) -> list[tuple[ast.expr | None, Sequence[ast.AST]]]:
        """What the module stores as `attr` on an instance of one of `classes` from outside
        its methods (R16-9): `k.attr = v`, `setattr(k, "attr", v)`, a copy made with it
        replaced (`dataclasses.replace(k, attr=v)`, `k._replace(attr=v)`). A receiver
        known to be an instance of another class does not count; one whose class is not
        shown (a parameter) does, except for a store of every attribute (`vars(args).
        update(d)`, `replace(k, **kw)`), which counts on an instance known to be one."""
        names = {cls.name for cls in classes}
        stores = self._instance_stores()
        return [
            (value, where) for owner, value, where in stores.get(attr, ()) if owner is None or owner in names
        ] + [(value, where) for owner, value, where in stores.get(ANY_ATTR, ()) if owner in names]

    def _instance_stores(self) -> dict[str, list[tuple[str | None, ast.expr | None, Sequence[ast.AST]]]]:
        """attr -> (class of the receiver where the module shows it, value, scopes) of each
        store on an instance outside its class's methods (_instance_bindings); ANY_ATTR
        for a store of every attribute (_instance_stores_of)."""
        if self._stores is not None:
            return self._stores
        stores: list[tuple[ast.expr, str, ast.expr | None, tuple[ast.AST, ...]]] = []
        # (a stack, not recursion: a long concatenation nests deep)
        pending: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(self.tree, ())]
        while pending:
            node, enclosing = pending.pop()
            stores += [(receiver, attr, value, enclosing) for receiver, attr, value in _instance_stores_of(node)]
            inner = (*enclosing, node) if isinstance(node, RESOLVER_SCOPES) else enclosing
            pending += [(child, inner) for child in ast.iter_child_nodes(node)]
        # Telling a receiver's class may ask for these stores again (`self.k.attr = v`, k an
        # attribute the stores bind): that asking sees each receiver as of a class not
        # shown, the rule for a parameter, rather than walk the module once more per store
        self._stores = {}
        for _, attr, value, enclosing in stores:
            self._stores.setdefault(attr, []).append((None, value, enclosing))
        found: dict[str, list[tuple[str | None, ast.expr | None, Sequence[ast.AST]]]] = {}
        for receiver, attr, value, enclosing in stores:
            if isinstance(receiver, ast.Name) and self._class(receiver, enclosing) is not None:
                continue  # `Keys.PAGE = v` on the class, `self.PAGE = v` in its method: their own rules
            found.setdefault(attr, []).append((self._instance_class(receiver, enclosing), value, enclosing))
        self._stores = found
        return found

    def _instance_class(self, receiver: ast.expr, enclosing: Sequence[ast.AST]) -> str | None:
        """The module class `receiver` is an instance of, where every binding of it shows
        one (`Knob()`, `k` bound to `Knob(...)`), else None."""
        bound = [(receiver, enclosing)] if isinstance(receiver, ast.Call) else (
            self.bound(receiver, enclosing) if isinstance(receiver, ast.Name) else None
        )
        made = {
            value.func.id for value, _ in bound or () if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        } & self._module_classes().keys()
        if not bound or len(made) != 1 or not all(isinstance(value, ast.Call) for value, _ in bound):
            return None
        return next(iter(made))

    def _subscript(self, expr: ast.Subscript, enclosing: Sequence[ast.AST]) -> list[tuple[ast.expr | None, Sequence[ast.AST]]] | None:
        key: object
        if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
            key = expr.slice.value
        else:
            key = self.value(expr.slice, enclosing)
            if key is None:
                return None
        containers = self.bound(expr.value, enclosing) if not isinstance(expr.value, (ast.Dict, ast.List, ast.Tuple)) else [(expr.value, enclosing)]
        if not containers:
            return None
        found: list[tuple[ast.expr | None, Sequence[ast.AST]]] = []
        for container, where in containers:
            if isinstance(container, ast.Dict) and isinstance(key, str):
                matched = [
                    value for name, value in zip(container.keys, container.values, strict=True)
                    if name is not None and self.value(name, where) == key
                ]
                if len(matched) != 1 or any(name is None for name in container.keys):
                    return None
                found.append((matched[0], where))
            elif isinstance(container, (ast.List, ast.Tuple)) and isinstance(key, int):
                if any(isinstance(e, ast.Starred) for e in container.elts) or not -len(container.elts) <= key < len(container.elts):
                    return None
                found.append((container.elts[key], where))
            else:
                return None
        return found


# How many values a concatenation of several-valued parts may have before it is unknown.
_MAX_VALUES = 64


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `Name.attr = ...` (not `self.` / `cls.`): a line that may bind a class attribute
_CLASS_ASSIGN = re.compile(
    r"(?<![\w.])(?!self\.|cls\.)[A-Za-z_]\w*\s*\.\s*\w+\s*(?::[^=\n]*)?(?:[-+*/%|&^@<>]{1,2})?=(?!=)|\bsetattr\s*\("
)


# The attribute key of a class's `_assigned_on_self` (and of `_instance_stores`) for a
# store that may set any attribute (`self.__dict__.update(kw)`)
ANY_ATTR = ""
# Methods that store into a dict: through an instance's `__dict__`, its attributes
_DICT_WRITERS = frozenset({"update", "setdefault", "__setitem__", "__ior__"})


def _instance_dict_owner(expr: ast.expr) -> ast.Name | None:
    """The name whose attribute dict `expr` is (`self.__dict__`, `vars(self)`), or None."""
    if isinstance(expr, ast.Attribute) and expr.attr == "__dict__" and isinstance(expr.value, ast.Name):
        return expr.value
    if (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "vars"
        and len(expr.args) == 1 and isinstance(expr.args[0], ast.Name) and not expr.keywords
    ):
        return expr.args[0]
    return None


def _instance_dict_of(expr: ast.expr) -> str | None:
    owner = _instance_dict_owner(expr)
    return owner.id if owner is not None else None


def _attribute_setter(node: ast.AST) -> tuple[ast.expr, str, ast.expr | None] | None:
    """(receiver, attribute, value) of `setattr(obj, "attr", value)`, of
    `object.__setattr__(obj, "attr", value)` (a frozen dataclass's own way) and of
    `obj.__setattr__("attr", value)`; an attribute not shown is ANY_ATTR, its value None."""
    if not isinstance(node, ast.Call) or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    spelled = dotted_name(node.func)
    if spelled in ("setattr", "object.__setattr__") and len(node.args) == 3:
        receiver, attr, value = node.args
    elif isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__" and len(node.args) == 2:
        receiver, (attr, value) = node.func.value, node.args
    else:
        return None
    if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
        return receiver, attr.value, value
    return receiver, ANY_ATTR, None


def _instance_stores_of(node: ast.AST) -> list[tuple[ast.expr, str, ast.expr | None]]:
    """(receiver, attribute, value) of each store on an attribute of an object that `node`
    makes: `k.attr = v`, `setattr(k, "attr", v)`, a copy with fields replaced; ANY_ATTR
    (value None) for a store through its dict (`vars(k).update(d)`, `k.__dict__[key] = v`)
    or a replacement by `**kw`."""
    found: list[tuple[ast.expr, str, ast.expr | None]] = []
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                found.append((target.value, target.attr, value))
            elif isinstance(target, ast.Subscript) and (owner := _instance_dict_owner(target.value)) is not None:
                found.append((owner, ANY_ATTR, None))
    elif isinstance(node, ast.Call):
        setter = _attribute_setter(node)
        if setter is not None:
            found.append(setter)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _DICT_WRITERS:
            owner = _instance_dict_owner(node.func.value)
            if owner is not None:
                found.append((owner, ANY_ATTR, None))
        replaced = _replaced(node)
        if replaced is not None:
            found += [(replaced, k.arg or ANY_ATTR, k.value if k.arg else None) for k in node.keywords]
    return found


def _replaced(node: ast.Call) -> ast.expr | None:
    """The instance a copy is made of with fields replaced by keyword:
    `dataclasses.replace(obj, name=...)` (`copy.replace` too), `obj._replace(name=...)`,
    `obj.__replace__(name=...)`."""
    if dotted_name(node.func) in ("dataclasses.replace", "replace", "copy.replace") and len(node.args) == 1:
        return node.args[0]
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("_replace", "__replace__") and not node.args:
        return node.func.value
    return None


def _class_setattr(node: ast.AST) -> tuple[str, str, ast.expr] | None:
    """(name, attribute, value) of `setattr(Name, "attr", value)` (not on `self` or
    `cls`), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"):
        return None
    if len(node.args) != 3 or node.keywords or not isinstance(node.args[0], ast.Name) or node.args[0].id in ("self", "cls"):
        return None
    attr = node.args[1]
    if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return None
    return node.args[0].id, attr.value, node.args[2]


def _constant_node(shape: str, value: str) -> ast.expr:
    if shape == "list":
        return ast.List(elts=[ast.Constant(item) for item in value.split("\0")], ctx=ast.Load())
    return ast.Constant(value)


def _bases(cls: ast.ClassDef) -> frozenset[str]:
    return frozenset(dotted_name(base) for base in cls.bases)


def _is_default(node: ast.AST, value: ast.expr) -> bool:
    args = getattr(node, "args", None)
    return isinstance(args, ast.arguments) and any(value is d for d in (*args.defaults, *args.kw_defaults))


# A function's attributes that replace its parameters' defaults
_DEFAULTS_ATTRS = frozenset({"__defaults__", "__kwdefaults__"})


def _parameter_defaults(args: ast.arguments) -> list[tuple[str, ast.expr | None]]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    return [
        (param.arg, default)
        for param, default in (*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True))
    ]


def _bind_parameters(found: dict[str, _Bound], args: ast.arguments) -> None:
    """Each parameter is bound to its default, if it has one (else to something unknown)."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for param, default in (*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)):
        found.setdefault(param.arg, []).append(default)
    for star in (args.vararg, args.kwarg):
        if star is not None:
            found.setdefault(star.arg, []).append(None)


def _bind_body(found: dict[str, _Bound], body: list[ast.AST]) -> None:
    """What the statements of one scope bind (not those of the scopes nested in it)."""
    pending = body
    while pending:
        sub = pending.pop()
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS)):
            if not isinstance(sub, ast.Lambda) and not isinstance(sub, _COMPREHENSIONS):
                found.setdefault(sub.name, []).append(None)
            # a nested scope's `nonlocal key; key = ...` and a comprehension's walrus bind
            # here (R16-8): a literal's value, else one not shown
            for name, value in _bound_from_inside(sub):
                found.setdefault(name, []).append(value)
            continue
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                _bind_target(found, target, sub.value)
        elif isinstance(sub, (ast.AnnAssign, ast.NamedExpr)) and isinstance(sub.target, ast.Name):
            if sub.value is not None:
                found.setdefault(sub.target.id, []).append(sub.value)
        elif isinstance(sub, (ast.For, ast.AsyncFor)):
            _bind_loop(found, sub.target, sub.iter)
        else:
            for name in _unknown_bindings(sub):
                found.setdefault(name, []).append(None)
        pending.extend(ast.iter_child_nodes(sub))


def _bound_from_inside(scope: ast.AST) -> list[tuple[str, ast.expr | None]]:
    """(name, value) of what a nested scope binds in the scope enclosing it: the names a
    nested function or class declares `nonlocal` (at any depth), and a comprehension's
    walrus targets. A string literal is kept (it means the same anywhere), any other
    value is None: it is evaluated in the inner scope."""
    nonlocal_names = {name for sub in ast.walk(scope) if isinstance(sub, ast.Nonlocal) for name in sub.names}
    found: list[tuple[str, ast.expr | None]] = []
    for sub in ast.walk(scope):
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(sub, ast.NamedExpr):
            if not isinstance(scope, _COMPREHENSIONS) and sub.target.id not in nonlocal_names:
                continue
            targets, value = [sub.target], sub.value
        elif nonlocal_names and isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            value = sub.value if not isinstance(sub, ast.AugAssign) and len(targets) == 1 else None
        elif nonlocal_names and isinstance(sub, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Delete)):
            targets = [sub.target] if isinstance(sub, (ast.For, ast.AsyncFor)) else (
                list(sub.targets) if isinstance(sub, ast.Delete)
                else [item.optional_vars for item in sub.items if item.optional_vars is not None]
            )
        for target in targets:
            for name in _target_names(target) if not isinstance(target, (ast.Attribute, ast.Subscript)) else ():
                if name in nonlocal_names or isinstance(sub, ast.NamedExpr):
                    kept = value if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str) else None
                    found.append((name, kept))
    return found


def _bind_target(found: dict[str, _Bound], target: ast.expr, value: ast.expr | None) -> None:
    """`name = value`, and literal unpacking pairwise (`a, b = "X", "Y"`); any other
    target binds its names to something unknown."""
    if isinstance(target, ast.Name):
        found.setdefault(target.id, []).append(value)
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and not any(
        isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)
    ) and len(target.elts) == len(value.elts):
        for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
            _bind_target(found, sub_target, sub_value)
    else:
        for name in _target_names(target):
            if not isinstance(target, (ast.Attribute, ast.Subscript)):
                found.setdefault(name, []).append(None)


def _bind_loop(found: dict[str, _Bound], target: ast.expr, iterable: ast.expr) -> None:
    """A loop variable over a literal takes each element in turn; over a name, an
    attribute, a call or a literal with a starred part (`for n in NAMES`, `sorted(NAMES)`,
    `(*NAMES, "X")`) each element of the constant it may be, resolved where the variable
    is asked about (ModuleStrings._elements); over anything else it is unknown."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)) and not any(isinstance(e, ast.Starred) for e in iterable.elts):
        for element in iterable.elts:
            _bind_target(found, target, element)
    elif isinstance(target, ast.Name) and isinstance(iterable, (ast.Name, ast.Attribute, ast.Call, ast.Tuple, ast.List, ast.Set)):
        found.setdefault(target.id, []).append(_EachOf(iterable))
    else:
        _bind_target(found, target, None)


class _EachOf(ast.expr):
    """A loop variable's binding over a container the loop does not spell (`for n in
    NAMES`): each element of what `iterable` evaluates to. Only the resolver's own
    bindings hold it; ModuleStrings.bound hands out the elements instead."""

    _fields = ("iterable",)
    iterable: ast.expr

    def __init__(self, iterable: ast.expr) -> None:
        super().__init__()
        self.iterable = iterable


# Builtins whose value holds the elements of their one argument (a loop over
# `sorted(NAMES)` takes NAMES's)
_SAME_ELEMENTS = frozenset({"frozenset", "set", "tuple", "list", "sorted", "reversed", "iter"})
# Methods that change a list or set in place
_IN_PLACE_CHANGERS = frozenset({
    "append", "extend", "insert", "add", "update", "__setitem__", "__iadd__", "__ior__",
    "intersection_update", "difference_update", "symmetric_difference_update",
})


def changed_in_place(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """The (dotted) names among `nodes` that are changed in place: `X.append(...)` and
    the other list and set changers, and `X[i] = ...` (or `del X[i]`)."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE_CHANGERS:
            found.add(dotted_name(node.func.value))
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            found.add(dotted_name(node.value))
    found.discard("")
    return frozenset(found)


def _unknown_bindings(stmt: ast.AST) -> list[str]:
    """The names a statement binds to values the resolver does not follow."""
    if isinstance(stmt, (ast.Global, ast.Nonlocal)):
        return list(stmt.names)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in stmt.names]
    if isinstance(stmt, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [stmt.name] if stmt.name else []
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [n for item in stmt.items if item.optional_vars is not None for n in _target_names(item.optional_vars)]
    if isinstance(stmt, ast.AugAssign):
        return _target_names(stmt.target) if isinstance(stmt.target, ast.Name) else []
    if isinstance(stmt, ast.Delete):
        return [n for target in stmt.targets if isinstance(target, ast.Name) for n in _target_names(target)]
    return []


def _target_names(target: ast.expr) -> list[str]:
    return [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]


def _binds(scope_node: ast.AST, name: str) -> bool:
    """Does anything inside `scope_node` (nested scopes too: erring towards "local") bind
    `name`?"""
    for node in ast.walk(scope_node):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name:
            return True
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
    return False


def _bound_at_module(stmt: ast.stmt, declares_globals: bool = True) -> list[str]:
    """The module-level names a top-level statement binds: a def's or class's name (and
    what a `global` inside it assigns, unless the caller knows the module's text spells no
    `global`: `declares_globals` False), and every target in a block, an import, a loop."""
    names: list[str] = []
    pending: list[ast.AST] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
            # its body is another scope, except for the names it declares global
            names.extend(sorted(globals_declared(node)) if declares_globals else ())
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # their own scopes; a walrus in a comprehension binds outside it
            names.extend(sub.target.id for sub in ast.walk(node) if isinstance(sub, ast.NamedExpr))
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.append(node.id)
        elif isinstance(node, ast.alias):
            names.append((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.append(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.append(node.rest)
        pending.extend(ast.iter_child_nodes(node))
    return names
