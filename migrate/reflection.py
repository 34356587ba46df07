"""Reads the other analyses cannot resolve, by class: reflection, private parts, and the
environment reached another way. Each is reported as a read, so the check fails on it
unless an allowlist entry explains it (the rule for anything the scanner cannot resolve).

- Reflection (leaf `$?`, via `reflection`): `__getattribute__`, `__getstate__`,
  `__reduce__`/`__reduce_ex__` and `__call__` of the raw accessor or a context function;
  `inspect.getattr_static`, `operator.methodcaller`, `string.Formatter`, `eval`, `exec`,
  `compile`, `globals`, `locals`, and the standard library's runners of code strings
  (profilers, pdb, code's interpreters, timeit given a string) (called or passed on);
  `vars(M)` and `M.__dict__` of
  anything imported (or `vars()`), `sys.modules` with a name the module does not spell;
  a fetcher (`getattr`, `attrgetter`, an importer, a getter made by attrgetter) passed as
  a value (`functools.reduce(getattr, ...)`, `map(getattr, ...)`, `partial(attrgetter(...))`)
  instead of called or bound to a name; a `str.format` template whose fields reach an
  attribute or an item (`"{0.tp_size}".format(rec)`); a descriptor's `__get__` called by
  hand, and a frame's variables (`f_locals`, `f_globals`, `inspect.getargvalues`).
- Routes to a module the other analyses follow by its own name: `sys.modules["M"]`,
  `vars(M)["a"]`, `M.__dict__["a"]`, `getattr(M, "a")`, and `os` reached through another
  module (`subprocess.os`, `shutil.os`, `from subprocess import os`). What they reach is
  judged as the module itself: a context's `.state` (`Context.state`), `state_dict`
  (`dist.state_dict`), an environment read.
- `os`, `configbags.runtime.dist` or an accessors module handed on as a value inside the
  module (configbags.migrate.modvalues): a parameter of a function the module calls with it
  (`def g(m): m.environ[...]` called `g(os)`: by the function it is read in), an element of
  a container literal (`MODS = {"os": os}; MODS["os"]`, `for m in [os]`, the element a
  constant key picks) and a function returning it (`def _os(): return os; _os().environ`)
  are the module, judged as above.
- Private parts (never API): a `_`-prefixed attribute or imported name of the record's
  module (the one the file takes the raw accessor or record class from, or one named like
  the record or a record attribute: `server_args`), a generated
  `accessors` module or a `configbags.runtime` module (`S._GLOBAL_SERVER_ARGS`,
  `from ...accessors import _context`), reported `$?` (via `private`); a private
  attribute of a config context (`get_context()._state`, `getattr(ctx, "_state")`) is a
  readback, `Context.state`.
- The environment in bytes and by expansion: `os.environb`, `os.getenvb`,
  `posix.environ`/`nt.environ`, and `os.path.expandvars`/`posixpath.expandvars`/
  `ntpath.expandvars`, whose literal template names the variables (`$NAME`, `${NAME}`,
  `%NAME%`); a name or template the module does not show is `$?`.
- C's environment array (`environ`, `__environ`, `_environ`, `_wenviron`), reached through
  ctypes or cffi: a C type's `in_dll(library, "environ")` (or by a name the module does
  not spell), the symbol as a loaded library's attribute (`ctypes.CDLL(None).environ`):
  every variable, `$?` (form environ_whole).
- Carriers (read by leaf, via `carrier`, origin `wrapped`): the raw record carried by a
  lambda called (`f = lambda: get_server_args(); f().tp_size`), a parameter defaulting to
  the raw accessor (`def f(a=get_server_args): a().tp_size`), an element of a container
  literal (`[rec][0].tp_size`, `{"r": rec}["r"].tp_size`), and a simple `str.format`
  field of the record (`"{0.tp_size}".format(rec)`, via `format_field`).

Only the statements whose lines show a trigger word (_TRIGGER_WORDS), or mention a name
bound to something followed here, are walked; a function's body is read for bindings only
where it holds such a line or names a context function.

- In any module, whatever it mentions (code_string, import_by_name, environ_glob): a code
  string the module does not spell run by `exec`/`eval`/`compile` or the standard
  library's runners (_STRING_RUNNERS: code's interpreters, the profilers, pdb, timeit),
  a YAML document it does not spell loaded by an unsafe PyYAML loader, an import by a
  name it does not spell (`importlib.import_module(qualname)`, `__import__(name)`,
  `pkgutil.resolve_name(name)`, `pydoc.locate(name)`; a resolver given a spelled name is
  the import route it stands for by then: configbags.migrate.resolvers), and a glob
  pattern matching a process's environment file (`glob.glob("/proc/self/envi*")`).
- A module's namespace whole: `vars(M)`, `M.__dict__`, `inspect.getmembers(M)`.

Names resolve flow-insensitively, as far as the module's own imports and simple
assignments show (a may-alias: any binding counts). In a file that mentions none of the
record, the accessors, configbags or the environment, only the lines showing the words of
the any-module reads (_ANYWHERE_WORDS) are walked, for those reads alone.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import fnmatch
import functools
import importlib.util
import re
import string
import sys
from collections.abc import Iterator
from typing import Any

from configbags.migrate.aliases import lines_of, relative_module, statement_span
from configbags.migrate.childenv import C_GETENV, PROCESS_MODULES, handed_to_child, is_child_process
from configbags.migrate.holders import literal_names
from configbags.migrate.modvalues import ModuleFlows, module_flows
from configbags.migrate.modvalues import elements as literal_elements
from configbags.migrate.resolvers import NAMED_BY_A_STRING, RESOLVERS
from configbags.migrate.scanmodel import (
    CONTEXT_READBACK_METHODS,
    ENTRY_GROUPS,
    ENV_UNRESOLVED,
    PREFIXED_IMPORT,
    STATE_DICT_READBACK,
    STATE_READBACK,
    ScanSettings,
    env_subject,
)
from configbags.migrate.scopes import INERT_NODES, Visitor, signature_annotations
from configbags.migrate.searchtext import occurrences

_CONTEXT = "<context>"
# the raw record, where it was reached through a carrier the record analysis does not
# follow (a lambda called, a container literal indexed, a parameter's default)
_RECORD = "<record>"
_DIST = "configbags.runtime.dist"
_STATE_DICT = f"{_DIST}.state_dict"
# the same state serialised: the whole record and every namespace, past role scoping
_EXPORT_STATE = f"{_DIST}.export_state"
_CONTEXT_FUNCTIONS = frozenset({"get_context", "process_context"})
_NOT_CONFIG = frozenset({"multiprocessing", "multiprocess"})
# timeit runs its statement and setup: a code string, or a callable (`timeit(lambda: f())`)
_TIMERS = frozenset({"timeit.Timer", "timeit.timeit", "timeit.repeat"})
# Classes whose instances run a code string (`cProfile.Profile().run("...")`): what a call of
# one gives is `<class>()`, whose methods below run code
_CODE_RUNNER_CLASSES = frozenset({"cProfile.Profile", "profile.Profile", "pdb.Pdb", "bdb.Bdb", "trace.Trace"})
_CODE_RUNNER_METHODS = ("run", "runctx", "runeval")
# The standard library's runners of a code string: the profilers, the debugger, the
# interactive interpreters (the classes, whose `runsource`/`runcode`/`push` run it), timeit,
# and the methods of the runner classes' instances. Like `exec`, in any module.
_STRING_RUNNERS = frozenset({
    "cProfile.run", "cProfile.runctx", "profile.run", "profile.runctx", "pdb.run", "pdb.runeval", "pdb.runctx",
    "code.InteractiveInterpreter", "code.InteractiveConsole", "code.interact", "code.compile_command",
    "codeop.compile_command", *_TIMERS,
    *(f"{cls}().{method}" for cls in _CODE_RUNNER_CLASSES for method in _CODE_RUNNER_METHODS),
})
# callables (and classes) that read attributes by a name in a string, or run strings as code
_REFLECTORS = frozenset({
    "inspect.getattr_static", "operator.methodcaller", "string.Formatter", "builtins.eval",
    "builtins.exec", "builtins.compile", "builtins.globals", "builtins.locals", "builtins.breakpoint",
    # every live object, found by what it is rather than by a name (`gc.get_objects()`)
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    # a module by one of its objects (`inspect.getmodule(os.getcwd).environ`)
    "inspect.getmodule",
    # run a file or module by a path the scanner does not read as source
    "runpy.run_path", "runpy.run_module",
    # load a file as a module by its path, whatever its name (`site_hooks.conf`):
    # `SourceFileLoader(name, path).load_module()`, `spec_from_file_location` + exec_module
    *(f"importlib.{home}.{loader}" for home in ("machinery", "_bootstrap_external")
      for loader in ("SourceFileLoader", "SourcelessFileLoader", "ExtensionFileLoader")),
    "importlib.util.spec_from_file_location",
    # run a code string: the profilers, the debugger, the interactive interpreters, timeit
    *_STRING_RUNNERS,
    # an object from its address (`ctypes.cast(id(rec), ctypes.py_object).value`), or
    # CPython's own C API (`ctypes.pythonapi.PyObject_GetAttr`)
    "ctypes.py_object", "ctypes.pythonapi", "_ctypes.PyObj_FromPtr",
    # a frame's variables by name (`inspect.getargvalues(frame).locals`)
    "inspect.getargvalues",
})
# attributes that read an object's state by a name the code need not spell: a descriptor
# called by hand (`type(cfg).server_args.__get__(cfg)`), a frame's variables
# (`sys._getframe(1).f_locals["a"]`, `inspect.currentframe().f_back.f_globals`)
_REFLECTIVE_ATTRS = frozenset({
    "__getattribute__", "__getstate__", "__reduce__", "__reduce_ex__", "__get__", "f_locals", "f_globals",
    # a function's module globals and closure cells by name (`get_server_args.__globals__["_ARGS"]`)
    "__globals__", "__closure__",
})
# fetchers: fine when called (the door and record analyses read the call) or bound to a
# name (an alias they follow); passed as a value, what they fetch is out of sight
_FETCHERS = frozenset({
    "builtins.getattr", "builtins.hasattr", "operator.attrgetter", "builtins.__import__",
    "importlib.import_module", "importlib.__import__", *RESOLVERS,
})
_GETTER = "<getter>"  # what operator.attrgetter(...) returns
_MAX_NAMES = 16  # the spellings `_names` follows for one attribute name
# what an attribute fetched by a name the module does not spell may be the environment of
_ENVIRON_HOLDERS = frozenset({"os", "posix", "nt", "os.environ", "os.environb"})
_IMPORTERS = frozenset({"importlib.import_module", "builtins.__import__", "importlib.__import__"})
# what imports by a name it is given (configbags.migrate.resolvers: those given a name the
# module spells are import routes by then)
_BY_NAME = _IMPORTERS | RESOLVERS
# what runs a code string it is given
_CODE_RUNNERS = frozenset({"builtins.exec", "builtins.eval", "builtins.compile"})
# a module's namespace taken whole, like `vars(M)`
_NAMESPACE_READERS = frozenset({"builtins.vars", "inspect.getmembers", "inspect.getmembers_static"})
# Words of the reads reported in ANY module, whatever it mentions: the scanner cannot read
# the code a string holds, nor know the module a name built at run time imports (a plugin
# loader's `exec(open(path).read())`, `importlib.import_module(qualname)`), so the module
# need not mention anything config-related for them to reach the record
_ANYWHERE_WORDS = (
    "exec", "eval", "compile", "import_module", "__import__", "resolve_name", "locate",
    # a plugin loader's `ep.load()` of `importlib.metadata.entry_points(...)` (_entry_via)
    "entry_points", ".load()",
    # the code string runners (_STRING_RUNNERS)
    "timeit", "Interactive", "interact", "compile_command", "Profile", "profile", "pdb", "Pdb", "Bdb", "Trace",
    # a process's environment file found by a pattern (`glob.glob("/proc/self/envi*")`)
    "glob",
    # PyYAML's unsafe loaders, which call what a document's tags name (_YAML_UNSAFE)
    "unsafe_load", "full_load", "Loader",
    # the launcher's module (`import __main__`, `sys.modules["__main__"]`): whatever script
    # runs, so no module the scanner can name
    "__main__",
)
_ANYWHERE_FORMS = frozenset({"code_string", "import_by_name", "environ_glob", "main_module"})
# what lists the files a pattern matches: glob's, and a path's method
# PyYAML's loaders that construct what a document's `!!python/...` tags name: importing
# and calling any callable, so a document the module does not spell is code it runs
_YAML_UNSAFE = frozenset({"yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.full_load", "yaml.full_load_all"})
_YAML_LOADS = frozenset({"yaml.load", "yaml.load_all"})
_YAML_UNSAFE_LOADERS = frozenset({"Loader", "UnsafeLoader", "FullLoader", "CLoader", "CUnsafeLoader", "CFullLoader"})
# calls that give a callable, not a code string (timeit's statement)
_CALLABLE_MAKERS = frozenset({"partial", "partialmethod", "attrgetter", "itemgetter", "methodcaller"})
_GLOBS = frozenset({"glob.glob", "glob.iglob", "glob.glob0", "glob.glob1"})
_GLOB_METHODS = frozenset({"glob", "rglob", "iglob"})
# a process's environment file, for the patterns that may match it, part by part
_ENVIRON_FILES = (("", "proc", "self", "environ"), ("", "proc", "1", "environ"), ("", "proc", "thread-self", "environ"))
# names a module's import may be relative to: its own package (`f"{__package__}.x"`)
_OWN_NAMES = frozenset({"__package__", "__name__"})
# calls that return a module they name or are given
_MODULE_ROUTES = _IMPORTERS | {"sys.modules.get", "importlib.reload"}
# the environment, and its bytes twins: paths that read it
_ENV_PATHS = frozenset({"os.environ", "os.getenv", "os.environb", "os.getenvb"})
_ENV_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__"})
# ... and the libraries that expand a template from the environment as they do: distutils'
# `subst_vars` and sysconfig's (`{NAME}`), python-dotenv's interpolation (`${NAME:-16}`)
_DOTENV = frozenset({"dotenv.dotenv_values", "dotenv.main.dotenv_values", "dotenv.load_dotenv", "dotenv.main.load_dotenv"})
_EXPANDERS = frozenset({
    "os.path.expandvars", "posixpath.expandvars", "ntpath.expandvars", "distutils.util.subst_vars",
    "setuptools._distutils.util.subst_vars", "sysconfig._subst_vars", *_DOTENV,
})
_EXPANDED = re.compile(r"\$(\w+)|\$\{(\w+)[^}]*\}|%([^%]+)%")
_BRACED = re.compile(r"\{(\w+)\}")  # sysconfig's template
# what the other analyses already follow by the module's own name: reported here only when
# reached another way
_DIRECT = frozenset({"os.environ", "os.getenv"})
_CONTEXT_WORDS = ("get_context", "process_context")
# What a ctypes call returns (a loaded library, `ctypes.CDLL(None)`), as a path its
# attributes extend: `ctypes._lib.getenv` is C's getenv
_C_LIBRARY = "ctypes._lib"
# the modules whose calls load C libraries (or make what loads them)
_C_FFI = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})


# What may be done to a C function without calling it or handing it on: declaring its
# prototype (`get.restype = ctypes.c_char_p`)
_C_PROTOTYPE_ATTRS = frozenset({"restype", "argtypes", "errcheck"})


def _c_getenv(path: str) -> bool:
    """Is `path` C's getenv (or a twin) reached through ctypes?"""
    return path.split(".")[0] in _C_FFI and path.rsplit(".", 1)[-1] in C_GETENV


# C's environment array, a variable of the C library (`extern char **environ`, glibc's
# `__environ`, Windows' `_environ`/`_wenviron`): whatever reaches it holds every variable
_C_ENVIRON = frozenset({"environ", "__environ", "_environ", "_wenviron"})


def _c_symbol_fetcher(path: str) -> bool:
    """Is `path` ctypes' `in_dll` of a C type (`ctypes.POINTER(ctypes.c_char_p).in_dll`),
    which gives the variable of a library it is named?"""
    return path.split(".")[0] in _C_FFI and path.endswith(".in_dll")


def _c_environ(path: str) -> bool:
    """Is `path` C's environment array as an attribute of a loaded library
    (`ctypes.CDLL(None).environ`, cffi's `ffi.dlopen(None).environ`)?"""
    parent, _, name = path.rpartition(".")
    return parent == _C_LIBRARY and name in _C_ENVIRON


_FOLLOWED = _REFLECTORS | _FETCHERS | _ENV_PATHS | _EXPANDERS | {f"{cls}()" for cls in _CODE_RUNNER_CLASSES}


def _gate_words(settings: ScanSettings) -> tuple[str, ...]:
    return (settings.raw_accessor, settings.record_class, *settings.record_attributes, *settings.record_dicts,
            "accessors", "configbags", "get_context", "process_context", "environ", "getenv", "in_dll", "expandvars", "subst_vars", "dotenv", "runpy", "FileLoader", "spec_from_file_location")


# `os` (posix, nt) named as a module: where the text also fetches by name, the name may
# spell `environ` or `getenv` in pieces (`getattr(os, "env" + X)`), no gate word shown
_OS_MODULE = re.compile(r"\b(?:os|posix|nt)\b")
_BY_NAME_WORDS = ("getattr", "attrgetter", "vars", "__dict__", "getmembers")


def _fetches_from_os(text: str) -> bool:
    return any(word in text for word in _BY_NAME_WORDS) and _OS_MODULE.search(text) is not None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


_NO_CUT = sys.maxsize  # no lookup was cut short


class _Value:
    """What an expression may be: dotted paths, each with whether it was reached by a
    route the other analyses do not follow (a hop)."""

    __slots__ = ("paths",)

    def __init__(self, paths: dict[str, bool] | None = None) -> None:
        self.paths: dict[str, bool] = paths or {}

    def add(self, path: str, hop: bool) -> None:
        self.paths[path] = self.paths.get(path, False) or hop

    def extend(self, other: _Value, suffix: str = "", hop: bool = False) -> None:
        for path, hopped in other.paths.items():
            if path.startswith("<") and suffix:
                continue
            self.add(_normal(path + suffix) if suffix else path, hopped or hop or _normal(path + suffix) != path + suffix)


# What another module's attribute of these names is: `os` itself (`subprocess.os`, the
# standard library's private aliases `tempfile._os`, `importlib._bootstrap_external._os`),
# posix or nt (`x.posix.environ`), and `os.environ` (`mod.environ`, a name imported from os)
_OS_ALIASES = {"os": "os", "_os": "os", "posix": "posix", "nt": "nt", "environ": "os.environ"}


def _normal(path: str) -> str:
    """`subprocess.os.environ` and `tempfile._os.environ` are `os.environ`; `posix.environ`
    is the bytes environment."""
    parts = path.split(".")
    alias = next((index for index, part in enumerate(parts[1:], 1) if part in _OS_ALIASES), None)
    # (`os.environ` and `posix.environ` are themselves; `os.path.os.environ` is `os.environ`)
    if alias is not None and not (alias == 1 and parts[0] in ("os", "posix", "nt")):
        parts = [*_OS_ALIASES[parts[alias]].split("."), *parts[alias + 1:]]
    if parts[0] in ("posix", "nt") and len(parts) > 1 and parts[1] == "environ":
        parts = ["os", "environb" if parts[0] == "posix" else "environ", *parts[2:]]
    return ".".join(parts)


# What a line must show for one of the reads here to start on it: a reflective word, a
# fetcher, an environment word, a private name after a dot or in an import, a lambda, an
# index right after a literal (`[rec][0]`), or the raw accessor named without a call (a
# parameter default). Plain substrings: `str.find` is many times faster than a regex.
_TRIGGER_WORDS = (
    "__getattribute__", "__getstate__", "__reduce", "__call__", "__dict__", "getattr", "hasattr", "attrgetter",
    "__get__", "f_locals", "f_globals", "getargvalues",
    "methodcaller", "Formatter", "eval", "exec", "compile", "globals", "locals", "vars", "modules", "format",
    "import_module", "__import__", "reload", "FileLoader", "spec_from_file_location", "lambda", "export_state", "environ", "getenv", "in_dll", "expandvars", "subst_vars", "dotenv", "runpy", "._", "import _",
    ", _", ",_", ")[", "][", "}[",
    # a class pattern of a match statement fetches the attributes its keywords name
    "case ",
    # code strings run by the standard library (_REFLECTORS)
    "timeit", "Interactive", "interact", "compile_command", "Profile", "profile", "pdb", "Pdb", "Bdb", "Trace",
    "py_object", "pythonapi", "PyObj_FromPtr",
    # a module's namespace whole, a resolver of a dotted name the module does not spell
    "getmembers", "resolve_name", "locate", "entry_points", ".load()",
    # PyYAML's unsafe loaders, a glob of a process's environment file
    "unsafe_load", "full_load", "Loader", "glob", "__main__",
)


# A readback module's names: where one is imported, its reads handed on as a value
# (`g(dist)` then `m.state_dict()`, `g(acc)` then `m.get_context().state`) show no trigger
# word; the reader finds the lines through the names that carry it (_module_carriers)
_READBACK_MODULE_WORDS = ("accessors", "configbags.runtime")


class ReflectionScan:
    """The reads of one module no other analysis resolves. Only statements whose lines show
    a trigger (_TRIGGER_WORDS) are walked, in a file that mentions the record, the
    accessors, configbags or the environment at all."""

    def __init__(self, tree: ast.Module, text: str, settings: ScanSettings) -> None:
        self.tree = tree
        self.text = text
        self.settings = settings
        self.declared = frozenset(settings.env_vars)
        # (function, line, "write", leaf, text, origin) of the writes through a carrier of the
        # record (`[rec][0].port += 1`), found as reads() walks
        self.writes: list[tuple[Any, ...]] = []

    def reads(self) -> list[tuple[Any, ...]]:
        if not any(word and word in self.text for word in _gate_words(self.settings)) and not _fetches_from_os(self.text):
            return self._anywhere()
        lines = lines_of(self.text, _trigger_positions(self.text, self.settings.raw_accessor))
        if not lines and not any(word in self.text for word in _READBACK_MODULE_WORDS):
            return []
        reader = _Reader(self.tree, self.settings, self.declared, lines, entry_via=self._entry_via())
        reader.run(self.text)
        self.writes = reader.writes
        return reader.reads

    def _entry_via(self) -> str | None:
        """A plugin loader's via (_entry_via), where the text shows one (`entry_points` and
        a bare `.load()`): else None, and no `.load()` is judged here."""
        return _entry_via(self.tree) if "entry_points" in self.text and ".load()" in self.text else None

    def _anywhere(self) -> list[tuple[Any, ...]]:
        """In a module that mentions nothing config-related: a code string the module does
        not spell run (`exec(open(path).read())`), and an import by a name it does not
        spell (`importlib.import_module(qualname)`), walking only the lines that show the
        words (_ANYWHERE_WORDS)."""
        positions = [
            at for word in _ANYWHERE_WORDS if word in self.text
            for at in (m.start() for m in re.finditer(re.escape(word), self.text))
        ] + _main_aliases(self.text)
        if not positions:
            return []
        reader = _Reader(self.tree, self.settings, self.declared, lines_of(self.text, positions), anywhere=True,
                         entry_via=self._entry_via())
        reader.run(self.text)
        return [row for row in reader.reads if row[7] in _ANYWHERE_FORMS]


# the loaders of installed distributions' entry points, and where each takes its group
_ENTRY_LOADERS = {"entry_points": None, "iter_entry_points": 0}


def _entry_via(tree: ast.Module) -> str:
    """How a module's `ep.load()` is judged: ENTRY_GROUPS + its groups where every loader
    of entry points it calls is given a literal group (`entry_points(group="g")`,
    `entry_points().select(group="g")`, `entry_points()["g"]`, `iter_entry_points("g")`):
    the project pass clears it where the tree declares each (configbags.migrate.scan).
    Any other call (a group passed in, all groups) loads what distributions outside the
    roots may declare, which no scan sees: `$?` (via "reflection")."""
    groups: set[str] = set()
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _ENTRY_LOADERS:
            continue
        position = _ENTRY_LOADERS[name]
        group = next((k.value for k in node.keywords if k.arg == "group"), None)
        if group is None and position is not None and len(node.args) > position:
            group = node.args[position]
        if group is None and not node.args and not node.keywords:
            # `entry_points().select(group="g")`, `entry_points()["g"]`, `.get("g")`
            above = parents.get(id(node))
            if isinstance(above, ast.Subscript) and above.value is node:
                group = above.slice
            elif isinstance(above, ast.Attribute) and above.attr in ("select", "get"):
                call = parents.get(id(above))
                if isinstance(call, ast.Call) and call.func is above:
                    group = next((k.value for k in call.keywords if k.arg == "group"), None) or (
                        call.args[0] if call.args and above.attr == "get" else None
                    )
        spelled = _string(group) if group is not None else None
        if spelled is None or "," in spelled:
            return "reflection"
        groups.add(spelled)
    return ENTRY_GROUPS + ",".join(sorted(groups)) if groups else "reflection"


def _loads_entry_point(node: ast.Call) -> bool:
    """`X.load()`: an entry point's load, in a module that loads entry points."""
    return isinstance(node.func, ast.Attribute) and node.func.attr == "load" and not node.args and not node.keywords


_MAIN_ALIAS = re.compile(r"import\s+__main__\s+as\s+(\w+)")


def _main_aliases(text: str) -> list[int]:
    """Where a name `import __main__ as NAME` binds is used (`NAME.SERVER_ARGS`): lines
    that do not show the word `__main__` itself."""
    if "__main__" not in text:
        return []
    return [m.start() for alias in _MAIN_ALIAS.findall(text) for m in re.finditer(rf"\b{alias}\.", text)]


def _trigger_positions(text: str, raw_accessor: str) -> list[int]:
    found = [at for word in _TRIGGER_WORDS for at in occurrences(text, word)] + _main_aliases(text)
    start = text.find(raw_accessor) if raw_accessor else -1
    while start != -1:
        after = text[start + len(raw_accessor):start + len(raw_accessor) + 8].lstrip(" ")
        if not after.startswith("("):
            found.append(start)  # `a=get_server_args`, `f(get_server_args)`: not a call here
        start = text.find(raw_accessor, start + 1)
    return found


def _qualifiers(text: str, names: tuple[str, ...]) -> set[str]:
    """The dotted names spelled right before `.NAME` for each of `names` (`S` in
    `S.get_server_args`, `a.b` in `a.b.ServerArgs`)."""
    found: set[str] = set()
    for name in names:
        if not name:
            continue
        start = text.find("." + name)
        while start != -1:
            begin = start
            while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "._"):
                begin -= 1
            base = text[begin:start].strip(".")
            if base and not base[0].isdigit():
                found.add(base)
            start = text.find("." + name, start + 1)
    return found


class _Reader(Visitor):
    def __init__(
        self, tree: ast.Module, settings: ScanSettings, declared: frozenset[str], lines: list[int], anywhere: bool = False,
        entry_via: str | None = None,
    ) -> None:
        self.tree = tree
        self.anywhere = anywhere  # a module that mentions nothing config-related
        # the via of its plugin loaders' `ep.load()` (_entry_via); None: the module loads none
        self.entry_via = entry_via
        self.lines = lines  # the lines showing a trigger, sorted
        self.context_lines: list[int] = []  # the lines naming a context function
        self.settings = settings
        self.declared = declared
        self.reads: list[tuple[Any, ...]] = []
        self.writes: list[tuple[Any, ...]] = []
        self.qualname: list[str] = []
        self.parents: dict[int, ast.AST] = {}
        self.handed: set[int] = set()  # id(call): `export_state()` handed straight to a child
        self.imports: dict[str, set[str]] = {}
        self.assigned: dict[str, list[ast.expr | None]] = {}
        self.defaults: dict[str, list[ast.expr]] = {}  # parameter -> its defaults
        self.returns: dict[str, list[ast.expr]] = {}  # module function -> its returned values
        self.record_modules: set[str] = set()
        self.context_modules: set[str] = set()  # modules the file imports a context function from
        # a module named like the record (`server_args` for ServerArgs, or a record
        # attribute's name) is taken for its module too, imported or not
        self.record_module_names = frozenset({*settings.record_attributes, _snake(settings.record_class)})
        # the lookups under way, each with its depth: one asked again inside itself (`a = b;
        # b = a`) is cut short, answered empty, and `_low` keeps the shallowest such cut
        self._active: dict[str, int] = {}
        self._low = _NO_CUT
        # names' values and functions' context returns, kept where the answer is the module's
        # (`_memo`) or, where a parameter given a module was looked up, the function's it was
        # asked in (`_scoped_memo`, by qualname); never one a cut of a lookup begun before it
        # made (`_low`: it is that lookup's partial answer, not its own)
        self._memo: dict[str, _Value] = {}
        self._scoped_memo: dict[tuple[str, tuple[str, ...]], _Value] = {}
        self._context_memo: dict[str, bool] = {}
        self._scoped_context_memo: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._seen: set[tuple[int, str]] = set()
        # where a module may be handed on as a value (configbags.migrate.modvalues): gathered
        # only in a file importing one this follows that way (_module_value)
        self.flows = ModuleFlows()
        self._given_names: frozenset[str] = frozenset()
        self._modules_followed = False
        self._scoped = 0  # lookups of a parameter given a module: their answer is per function

    # ---- the module's names

    def run(self, text: str) -> None:
        self.context_lines = lines_of(text, [at for word in _CONTEXT_WORDS for at in occurrences(text, word)])
        self._collect(self.tree.body, None)
        if self._module_handed(text):
            self.flows = module_flows(self.tree)
            self._modules_followed = True
            self._settle_given(dict(self.flows.given))
        self._grow_lines(text)
        # `S.get_server_args()`: S is the record's module too
        for base in _qualifiers(text, (self.settings.raw_accessor, self.settings.record_class)):
            first, *rest = base.split(".")
            for path in self._name(first).paths:
                if not path.startswith("<"):
                    self.record_modules.add(".".join((path, *rest)))
        self.visit(self.tree)

    def _grow_lines(self, text: str) -> None:
        """Add the lines that mention a name bound on a trigger line, to a lambda, or as a
        parameter with a default (`m = sys.modules["os"]`, `f = lambda: ...`): its uses are
        where the read happens. Rounds until no name is added."""
        names: set[str] = set()
        for _ in range(8):
            found = {
                name for name, defaults in self.defaults.items()
                if any(_last_name(default) == self.settings.raw_accessor for default in defaults)
            } | {
                name for name, values in self.assigned.items()
                if any(value is not None and (isinstance(value, ast.Lambda) or (
                    self._on_trigger_line(value) and self._carries(value))) for value in values)
            }
            found |= self._module_carriers()
            # `def _ctx(): return get_context()`: its calls give a context
            found |= {name for name, returned in self.returns.items()
                      if any(_CONTEXT in self.value(value).paths for value in returned)}
            if found <= names:
                return
            names |= found
            pattern = re.compile(r"\b(?:" + "|".join(re.escape(name) for name in sorted(names)) + r")\b")
            mentions = [match.start() for match in pattern.finditer(text)]
            self.lines = sorted(set(self.lines) | set(lines_of(text, mentions)))

    def _module_handed(self, text: str) -> bool:
        """May the module hand one of the modules it imports (_module_import) on as a value:
        does the text show such a module's name, or an attribute chain from it, other than
        before a further `.`, a call or a subscript (`g(os)`, `[os]`, `return pkg.dist`), outside
        import lines? Most modules only use `os.x`, and gathering
        the flows (module_flows) would walk their whole tree for nothing."""
        names = [name for name, paths in self.imports.items() if any(map(self._module_import, paths))]
        if not names:
            return False
        # the name and any attribute chain after it (`configbags.runtime.dist`), then anything but
        # a further `.`, a call or a subscript: `os.getenv(...)` and `os.environ[...]` hand nothing on
        pattern = re.compile(
            r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")(?:\s*\.\s*[A-Za-z_]\w*)*+(?!\w)(?![ \t]*[.(\[])"
        )
        for match in pattern.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if not text[line_start:match.start()].lstrip().startswith(("import ", "from ")):
                return True
        return False

    def _module_import(self, path: str) -> bool:
        top = path.split(".")[0]
        return top in ("os", "posix", "nt", "configbags") or "accessors" in path or path in self.context_modules

    def _module_value(self, path: str) -> bool:
        """Is `path` a module followed when handed on as a value: `os` (posix, nt), the
        runtime's `dist` (or a package above it), an accessors module or one the file
        imports a context function from?"""
        return (
            path in ("os", "posix", "nt") or path == _DIST or _DIST.startswith(path + ".")
            or path.rpartition(".")[2] == "accessors" or path in self.context_modules
        )

    def _modules_of(self, exprs: list[ast.expr], found: _Value) -> None:
        """The modules (_module_value) any of `exprs` may be, as reached by a hop."""
        for expr in exprs:
            for path in self.value(expr).paths:
                if self._module_value(path):
                    found.add(path, True)

    def _holds_module(self, exprs: list[ast.expr]) -> bool:
        found = _Value()
        self._modules_of(exprs, found)
        return bool(found.paths)

    def _module_carriers(self) -> set[str]:
        """The names that may carry a module handed on as a value: a parameter given one,
        a loop's target over a container of one, a container literal holding one, a
        function returning one. Their mentions are where the reads through them are."""
        if not self._modules_followed:
            return set()
        names: set[str] = set()
        checks = [
            *((parameter, [e for _, e in given]) for (_, parameter), given in self.flows.given.items()),
            *self.flows.returned.items(),
            *((name, [e for value in values if value is not None for e in literal_elements(value, self._bound_values)])
              for name, values in self.assigned.items() if any(isinstance(v, (ast.Dict, ast.List, ast.Tuple, ast.Set))
                                                               for v in values)),
        ]
        names.update(name for name, exprs in checks if self._holds_module(exprs))
        names.update(name for name in self.flows.iterated if any(map(self._module_value, self._name(name).paths)))
        return names

    def _bound_values(self, name: str) -> list[ast.expr | None]:
        return self.assigned.get(name, [])

    def _settle_given(self, sites: dict[tuple[str, str], list[tuple[str | None, ast.expr]]]) -> None:
        """Keep, of the parameters some call hands an argument (`sites`: (function,
        parameter) -> (calling function, argument)), those that may be given a module, and
        look only those up by function (_given_value). The least such set, by rounds: each
        judges every site's arguments with the sites found so far (`g(os)` first, then
        `h(m)` inside g), afresh, until a round finds no new one; a cycle of functions
        handing a parameter round gives it nothing, as Python would."""
        self.flows.given = {}
        while True:
            self._forget()
            found = {site: given for site, given in sites.items() if self._gets_module(given)}
            if found.keys() == self.flows.given.keys():
                return
            self.flows.given = found
            self._given_names = frozenset(parameter for _, parameter in found)

    def _forget(self) -> None:
        """Drop the values kept so far: the sites given a module changed."""
        for memo in (self._memo, self._scoped_memo, self._context_memo, self._scoped_context_memo):
            memo.clear()

    def _gets_module(self, given: list[tuple[str | None, ast.expr]]) -> bool:
        """May any of these arguments be a module, each judged in its calling function?"""
        found = _Value()
        qualname = self.qualname
        try:
            for caller, argument in given:
                self.qualname = [caller] if caller is not None else []
                self._modules_of([argument], found)
        finally:
            self.qualname = qualname
        return bool(found.paths)

    def _given_value(self, key: str, found: _Value) -> None:
        """Inside `def g(m)` called `g(os)`: `m` may be os (by the function it is read in)."""
        self._scoped += 1
        for function in self.qualname:
            given = self.flows.given.get((function, key))
            site = f"<given> {function}.{key}"
            if given and site in self._active:
                self._cut(site)  # `def g(m): return g(m)` hands `m` to itself
            elif given:
                self._active[site] = len(self._active)
                qualname = self.qualname
                try:
                    for caller, argument in given:
                        # the argument's names are the calling function's (`h(m)` in g)
                        self.qualname = [caller] if caller is not None else []
                        self._modules_of([argument], found)
                finally:
                    self.qualname = qualname
                    del self._active[site]

    def _carries(self, expr: ast.expr) -> bool:
        """Is a name bound to this worth following: a route, a reflector, a fetcher, a
        context or record reached another way, the environment?"""
        return any(
            hop or path.startswith("<") or path in _FOLLOWED or path == "sys.modules" or _c_getenv(path)
            for path, hop in self.value(expr).paths.items()
        )

    @staticmethod
    def _spans(node: ast.stmt, lines: list[int]) -> bool:
        start, end = statement_span(node)
        index = bisect.bisect_left(lines, start)
        return index < len(lines) and lines[index] <= end

    def _on_trigger_line(self, expr: ast.expr) -> bool:
        index = bisect.bisect_left(self.lines, expr.lineno)
        return index < len(self.lines) and self.lines[index] <= (expr.end_lineno or expr.lineno)

    def _name(self, key: str) -> _Value:
        found = _Value()
        self._name_value(key, found)
        return found

    def _collect(self, statements: list[ast.stmt], function: str | None) -> None:
        """The module's imports and bindings, statement by statement (a name bound inside an
        expression, a walrus, is not seen: it only makes a builtin of that name look
        unshadowed). A function's body is read only where it holds a trigger line or
        mentions a context function (for what it returns): the names a read here uses are
        the module's or its own function's."""
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                self._spans(node, self.lines) or self._spans(node, self.context_lines)
            ):
                self._bound(node)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._imported(node)
                continue
            self._bound(node)
            if isinstance(node, ast.Return) and node.value is not None and function is not None:
                self.returns.setdefault(function, []).append(node.value)
            inner = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(node, ast.ClassDef):
                inner = None
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    self._collect(block, inner)
            for handler in getattr(node, "handlers", ()):
                self._collect(handler.body, inner)
            for case in getattr(node, "cases", ()):
                self._collect(case.body, inner)

    def _kept(self, statements: list[Any]) -> list[Any]:
        """The statements whose lines show a trigger (anything else is kept whole)."""
        kept = []
        for node in statements:
            if not isinstance(node, ast.stmt):
                kept.append(node)
                continue
            start, end = statement_span(node)
            index = bisect.bisect_left(self.lines, start)
            if index < len(self.lines) and self.lines[index] <= end:
                kept.append(node)
        return kept

    def generic_visit(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in self._kept(value):
                    if isinstance(item, ast.AST) and item.__class__ not in INERT_NODES:
                        self.parents[id(item)] = node
                        self.visit(item)
            elif isinstance(value, ast.AST) and value.__class__ not in INERT_NODES:
                self.parents[id(value)] = node
                self.visit(value)

    def _imported(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                self.imports.setdefault(name, set()).add(alias.name if alias.asname else name)
        elif node.level == 0 and node.module:
            for alias in node.names:
                if alias.name in (self.settings.raw_accessor, self.settings.record_class):
                    self.record_modules.add(node.module)
                elif alias.name in _CONTEXT_FUNCTIONS and not _NOT_CONFIG.intersection(node.module.split(".")):
                    self.context_modules.add(node.module)
                if alias.name != "*":
                    self.imports.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")

    def _bound(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
            self.assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(node)
        elif isinstance(node, ast.ClassDef):
            self.assigned.setdefault(node.name, []).append(None)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            self._shadowing(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.assigned.setdefault(node.name, []).append(None)
        self.returns.setdefault(node.name, [])
        arguments = node.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
            if arg is not None:
                self.assigned.setdefault(arg.arg, []).append(None)
        positional = [*node.args.posonlyargs, *node.args.args]
        pairs = [*zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults, strict=True),
                 *zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
        for arg, default in pairs:
            if default is not None:
                self.defaults.setdefault(arg.arg, []).append(default)

    def _shadowing(self, node: ast.stmt) -> None:
        # every other name a statement binds shadows a builtin of that name
        targets = [*getattr(node, "targets", ()), getattr(node, "target", None),
                   *(item.optional_vars for item in getattr(node, "items", ()))]
        for target in targets:
            if isinstance(target, ast.Name):
                self.assigned.setdefault(target.id, [])
            elif target is not None and not isinstance(target, (ast.Attribute, ast.Subscript)):
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        self.assigned.setdefault(sub.id, [])

    def value(self, expr: ast.expr) -> _Value:
        """What `expr` may be, as far as the module's imports and assignments show."""
        found = _Value()
        if isinstance(expr, ast.Name):
            self._name_value(expr.id, found)
            if expr.id in self._given_names:
                self._given_value(expr.id, found)
        elif isinstance(expr, ast.Attribute):
            found.extend(self.value(expr.value), "." + expr.attr)
        elif isinstance(expr, ast.Subscript):
            self._subscript_value(expr, found)
        elif isinstance(expr, ast.Call):
            self._call_value(expr, found)
        elif isinstance(expr, ast.NamedExpr):
            found.extend(self.value(expr.value))
        elif isinstance(expr, ast.Lambda):
            found.add("<lambda>", False)
        elif isinstance(expr, (ast.IfExp, ast.BoolOp)):
            for branch in [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else expr.values:
                found.extend(self.value(branch))
        return found

    def _name_value(self, key: str, found: _Value) -> None:
        # names are module-wide here (flow- and scope-insensitive), so one answer serves all
        here = (key, tuple(self.qualname))
        known = self._memo.get(key) or self._scoped_memo.get(here)
        if known is not None:
            found.extend(known)
            return
        if key in self._active:
            self._cut(key)
            return  # `a = b; b = a`
        outer, self._low = self._low, _NO_CUT
        depth, scoped = len(self._active), self._scoped
        mine = _Value()
        self._name_paths(key, mine)
        if self._low >= depth:  # (a cut of this lookup itself is what a fresh one makes)
            if self._scoped == scoped:
                self._memo[key] = mine
            else:
                self._scoped_memo[here] = mine
        self._low = min(outer, self._low)
        found.extend(mine)

    def _cut(self, key: str) -> None:
        self._low = min(self._low, self._active[key])

    def _name_paths(self, key: str, found: _Value) -> None:
        self._active[key] = len(self._active)
        try:
            for path in self.imports.get(key, ()):
                found.add(_normal(path), _normal(path) != path)
            for bound in self.assigned.get(key, ()):
                if bound is not None:
                    found.extend(self.value(bound))
            for default in self.defaults.get(key, ()):
                # `def f(a=get_server_args)`: the record analysis does not follow a default
                # that is the accessor itself (the door analysis follows the others)
                if _last_name(default) == self.settings.raw_accessor:
                    found.add(self.settings.raw_accessor, True)
                for path, hop in self.value(default).paths.items():
                    found.add(path, hop or path.split(".")[-1] == self.settings.raw_accessor)
            if key in self.returns:
                found.add("<def> " + key, False)
            # `for m in [os]:`, `for m in MODS.values():` (MODS a literal holding os)
            for iterable in self.flows.iterated.get(key, ()):
                self._modules_of(literal_elements(iterable, self._bound_values, iterating=True), found)
            if key not in self.imports and key not in self.assigned and hasattr(builtins, key):
                found.add("builtins." + key, False)
        finally:
            del self._active[key]

    def _subscript_value(self, expr: ast.Subscript, found: _Value) -> None:
        """`sys.modules["M"]` is M; `vars(M)["a"]` and `M.__dict__["a"]` are M.a."""
        if self._modules_followed:
            # `MODS = {"os": os}; MODS["os"]`: the module an element of a literal is
            self._modules_of(literal_elements(expr.value, self._bound_values, expr.slice), found)
        if isinstance(expr.value, (ast.List, ast.Tuple, ast.Dict)):
            # `[rec][0]`, `{"r": rec}["r"]`: an element of a literal is one of its elements
            elements = expr.value.values if isinstance(expr.value, ast.Dict) else expr.value.elts
            for element in elements:
                for kind in (_RECORD, _CONTEXT):
                    if kind in self.value(element).paths:
                        found.add(kind, True)
        key = _string(expr.slice)
        if key is None:
            return
        for path in self.value(expr.value).paths:
            if path == _C_LIBRARY:
                found.add(f"{path}.{key}", False)  # `libc["getenv"]`
            elif path == "sys.modules":
                found.add(_normal(key), True)
            elif path.endswith(".__dict__"):
                found.add(_normal(path[: -len(".__dict__")] + "." + key), True)
            elif path.startswith("<vars> "):
                found.add(_normal(path[len("<vars> "):] + "." + key), True)

    def _call_value(self, call: ast.Call, found: _Value) -> None:
        func = self.value(call.func)
        if any(path.split(".")[0] in _C_FFI for path in func.paths):
            _c_value(call, found)
        if _last_name(call.func) == self.settings.raw_accessor:
            found.add(_RECORD, False)
        for path, hop in func.paths.items():
            parts = path.split(".")
            if path in _CODE_RUNNER_CLASSES:
                found.add(f"{path}()", hop)  # `cProfile.Profile()`, whose `.run` runs a code string
            if parts[-1] == self.settings.raw_accessor:
                found.add(_RECORD, hop)
            if parts[-1] in _CONTEXT_FUNCTIONS and not _NOT_CONFIG.intersection(parts):
                found.add(_CONTEXT, hop)
            elif path == "operator.attrgetter":
                found.add(_GETTER, hop)
            elif path in (_GETTER, "builtins.getattr"):
                self._fetched_value(call, path, found)
            elif path in _MODULE_ROUTES:
                self._module_route(call, path, found)
            elif path == "builtins.vars" and len(call.args) == 1:
                for target in self.value(call.args[0]).paths:
                    found.add("<vars> " + target, True)
            elif path.startswith("<def> ") and path in self._active:
                self._cut(path)  # `def f(): return f()`
            elif path.startswith("<def> ") and self._returns_context(path):
                found.add(_CONTEXT, True)  # `def _ctx(): return get_context()`
            elif path.startswith("<def> ") and path[6:] in self.flows.returned:
                self._active[path] = len(self._active)  # `def _os(): return os`: a call gives the module
                try:
                    self._modules_of(self.flows.returned[path[6:]], found)
                finally:
                    del self._active[path]
        self._lambda_value(call, func, found)

    def _fetched_value(self, call: ast.Call, path: str, found: _Value) -> None:
        """`getattr(os, E)` and `attrgetter(E)(os)` are `os.<E>`, the name as `_names`
        spells it (a literal, a module constant, an f-string of those)."""
        if path == "builtins.getattr" and len(call.args) >= 2:
            name, subject = call.args[1], call.args[0]
        elif path == _GETTER and isinstance(call.func, ast.Call) and len(call.func.args) == 1 and call.args:
            name, subject = call.func.args[0], call.args[0]
        else:
            return
        for spelled in self._names(name) or ():
            found.extend(self.value(subject), "." + spelled, hop=True)

    def _module_route(self, call: ast.Call, path: str, found: _Value) -> None:
        """The module a call returns, where it spells it: `import_module("a.b")` (relative
        to a spelled `package`), `__import__("a.b")` (a), `sys.modules.get("a.b")` with a
        default or not, `importlib.reload(m)` (m)."""
        if not call.args:
            return
        if path == "importlib.reload":
            if len(call.args) == 1:
                found.extend(self.value(call.args[0]), hop=True)
            return
        # a module constant names it too (`M = "configbags.runtime.dist"; import_module(M)`)
        name = self._spelled(call.args[0])
        if name and path == "importlib.import_module":
            package = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "package"), None)
            name = relative_module(name, _string(package))
        if name:
            found.add(_normal(name if path != "builtins.__import__" and path != "importlib.__import__"
                              else name.split(".")[0]), True)

    def _returns_context(self, path: str) -> bool:
        here = (path, tuple(self.qualname))
        known = self._context_memo.get(path, self._scoped_context_memo.get(here))
        if known is not None:
            return known
        outer, self._low = self._low, _NO_CUT
        depth, scoped = len(self._active), self._scoped
        self._active[path] = depth
        try:
            answer = any(_CONTEXT in self.value(returned).paths for returned in self.returns[path[len("<def> "):]])
        finally:
            del self._active[path]
        # (a cut answer is part of the whole one: a context found is found)
        if answer or self._low >= depth:
            if self._scoped == scoped:
                self._context_memo[path] = answer
            else:
                self._scoped_context_memo[here] = answer
        self._low = min(outer, self._low)
        return answer

    def _lambda_value(self, call: ast.Call, func: _Value, found: _Value) -> None:
        """`(lambda: get_context())()`, `f = lambda: get_context(); f()`: a context."""
        if isinstance(call.func, ast.Lambda) or "<lambda>" in func.paths:
            bodies = [call.func] if isinstance(call.func, ast.Lambda) else [
                v for v in self.assigned.get(getattr(call.func, "id", ""), ()) if isinstance(v, ast.Lambda)
            ]
            for body in bodies:
                if isinstance(body, ast.Lambda):
                    inner = self.value(body.body).paths
                    for kind in (_RECORD, _CONTEXT):
                        if kind in inner:
                            found.add(kind, True)

    # ---- reporting

    def _report(self, node: ast.AST, leaf: str, via: str, form: str, origin: str = "process") -> None:
        if (id(node), leaf) in self._seen:
            return
        self._seen.add((id(node), leaf))
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        function = ".".join(self.qualname) or "<module>"
        self.reads.append((function, leaf, line, col, end_line, col if end_col is None else end_col, via, form,
                           origin))

    def _spelled(self, expr: ast.expr) -> str | None:
        """The string `expr` spells: a literal, or a name bound once, to one (`ATTR =
        "get_parallel"`); else None."""
        if isinstance(expr, ast.Name):
            values = self.assigned.get(expr.id, ())
            return _string(values[0]) if len(values) == 1 and values[0] is not None else None
        return _string(expr)

    def _names(self, expr: ast.expr, depth: int = 0) -> set[str] | None:
        """The attribute names `expr` may spell: `_spelled`, a name every binding of which
        spells one, `self.E` where `E` is bound so, a concatenation or an f-string of
        those, either branch of `a if c else b` or `a or b`; None where one part is not
        spelled. Capped: a name of more spellings is not spelled."""
        if depth > 8:
            return None
        spelled = self._spelled(expr)
        if spelled is not None:
            return {spelled}
        if isinstance(expr, (ast.Name, ast.Attribute)):
            values = self.assigned.get(expr.id if isinstance(expr, ast.Name) else expr.attr, ())
            if not values or None in values or len(values) > _MAX_NAMES:
                return None
            return self._union([value for value in values if value is not None], depth)
        if isinstance(expr, (ast.IfExp, ast.BoolOp)):
            return self._union([expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else expr.values, depth)
        parts: list[ast.expr]
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            parts = [expr.left, expr.right]
        elif isinstance(expr, ast.JoinedStr):
            parts = []
            for part in expr.values:
                if isinstance(part, ast.FormattedValue):
                    if part.conversion not in (-1, ord("s")) or part.format_spec is not None:
                        return None
                    part = part.value
                parts.append(part)
        else:
            return None
        names = {""}
        for part in parts:
            pieces = self._names(part, depth + 1)
            if pieces is None:
                return None
            names = {name + piece for name in names for piece in pieces}
            if len(names) > _MAX_NAMES:
                return None
        return names

    def _union(self, exprs: list[ast.expr], depth: int) -> set[str] | None:
        names: set[str] = set()
        for expr in exprs:
            found = self._names(expr, depth + 1)
            if found is None:
                return None
            names |= found
        return names if len(names) <= _MAX_NAMES else None

    def _names_module(self, call: ast.Call) -> bool:
        """Does an importer's call spell the name it imports: a literal, a module constant,
        or one relative to the module's own package (`f"{__package__}.server_args"`,
        `__package__ + ".h"`, `import_module(".h", __package__)`)?"""
        name = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("name", "path")), None)
        if name is None or any(isinstance(arg, ast.Starred) for arg in call.args):
            return False
        if self._spelled(name) is not None:
            return True
        pieces: list[ast.expr] = []
        pending = [name]
        while pending:
            part = pending.pop()
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
                pending += [part.left, part.right]
            elif isinstance(part, ast.JoinedStr):
                pending += part.values
            elif isinstance(part, ast.FormattedValue) and part.format_spec is None and part.conversion == -1:
                pending.append(part.value)
            else:
                pieces.append(part)
        return all(
            (isinstance(p, ast.Constant) and isinstance(p.value, str)) or (isinstance(p, ast.Name) and p.id in _OWN_NAMES)
            for p in pieces
        )

    def _holds_doors(self, module: str) -> bool:
        """Does `module` hold the raw accessor or a context function: the record's module
        (or one named like it), a generated `accessors` module, one the file imports a
        context function from?"""
        last = module.rpartition(".")[2]
        return (
            module in self.record_modules or module in self.context_modules
            or last == "accessors" or last in self.record_module_names
        )

    def _sensitive_module(self, path: str) -> bool:
        """Is `path` a private part of the record's module, an accessors module or the
        runtime (whose private submodules are its layout, not its state: the door
        analysis follows the readbacks they hold)?"""
        module = path.rsplit(".", 1)[0] if "." in path else path
        if module == "configbags.runtime" or module.startswith("configbags.runtime."):
            return not _runtime_module(path)
        last = module.split(".")[-1]
        return module in self.record_modules or last == "accessors" or last in self.record_module_names

    # ---- scopes

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        heads: list[ast.expr | None] = list(node.decorator_list)
        if not isinstance(node, ast.ClassDef):
            # the signature's annotations run with the `def` (`def g(x: os.environb[b"X"])`)
            heads += [*node.args.defaults, *node.args.kw_defaults, *signature_annotations(node)]
        else:
            heads += [*node.bases, *(k.value for k in node.keywords)]
        for expr in heads:
            if expr is not None:
                self.parents[id(expr)] = node
                self.visit(expr)
        self.qualname.append(node.name)
        for stmt in self._kept(node.body):
            self.parents[id(stmt)] = node
            self.visit(stmt)
        self.qualname.pop()

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level and node.module:
            # `from .accessors import _context` (inside the generated package, say): a private
            # part of the module it names, relative or not
            last = node.module.rpartition(".")[2]
            if (last == "accessors" or last in self.record_module_names) and any(_private(a.name) for a in node.names):
                self._report(node, ENV_UNRESOLVED, "private", "private")
        if node.level == 0 and node.module:
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                if _private(alias.name) and self._sensitive_module(path):
                    self._report(node, ENV_UNRESOLVED, "private", "private")
                if self.declared and _normal(path) in ("os.environb", "os.getenvb"):
                    self._report(node, ENV_UNRESOLVED, "environ", "environb")

    # ---- expressions

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._judge(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.attr in _REFLECTIVE_ATTRS:
                self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
            base = self.value(node.value)
            if "__main__" in base.paths and not (node.attr.startswith("__") and node.attr.endswith("__")):
                # `__main__.SERVER_ARGS`: a global of whichever script was launched, which
                # may hold the record or a context (its own `__file__`, `__spec__` are not)
                self._report(node, ENV_UNRESOLVED, "reflection", "main_module")
            callers = (self.settings.raw_accessor, *_CONTEXT_FUNCTIONS)
            if node.attr == "__call__" and (_last_name(node.value) in callers or any(
                p.split(".")[-1] in callers for p in base.paths
            )):
                self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
            if node.attr == "__dict__" and any(p not in (_CONTEXT, _GETTER, "<lambda>") for p in base.paths):
                self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
            if _private(node.attr):
                if _CONTEXT in base.paths:
                    self._report(node, STATE_READBACK, "readback", "state")
                elif any(self._sensitive_module(f"{p}.{node.attr}") for p in base.paths if not p.startswith("<")):
                    self._report(node, ENV_UNRESOLVED, "private", "private")
            if base.paths.get(_RECORD) and not node.attr.startswith("__"):
                # `f = lambda: get_server_args(); f().tp_size`, `[rec][0].tp_size`
                # origin wrapped: the fix cannot rewrite through the carrier
                self._report(node, node.attr, "carrier", "attribute", "wrapped")
            if node.attr == "state" and base.paths.get(_CONTEXT):
                self._report(node, STATE_READBACK, "readback", "state")  # a context reached another way
            self._judge(node)
        elif not node.attr.startswith("__") and self.value(node.value).paths.get(_RECORD):
            # `[rec][0].tp_size = 1`, `+= 1`: a write of the record the carrier holds
            text = ast.unparse(node) + (" = ..." if isinstance(node.ctx, ast.Store) else "")
            function = ".".join(self.qualname) or "<module>"
            self.writes.append((function, node.lineno, "write", node.attr, text[:80], "wrapped"))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Attribute) and not target.attr.startswith("__") and (
            self.value(target.value).paths.get(_RECORD)
        ):
            # `[rec][0].tp_size += 1`: read before it is written, as a load is (above)
            self._report(target, target.attr, "carrier", "augmented", "wrapped")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            base = self.value(node.value)
            if "sys.modules" in base.paths and _string(node.slice) is None:
                self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
            self._judge(node)
        self.generic_visit(node)

    def _entry_load(self, node: ast.Call) -> None:
        """`ep.load()` in a plugin loader: imports the object an entry point names, by a
        name no module spells (judged by its groups: _entry_via)."""
        if self.entry_via is not None and _loads_entry_point(node):
            self._report(node, ENV_UNRESOLVED, self.entry_via, "import_by_name")

    def visit_Call(self, node: ast.Call) -> None:
        func = self.value(node.func)
        paths = func.paths
        self._handed_state(node, paths)
        if _NAMESPACE_READERS.intersection(paths) and (not node.args or any(
            not p.startswith("<") for p in self.value(node.args[0]).paths
        )):
            # `vars(M)`, `inspect.getmembers(M)`: every name of M, by names in strings
            self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
        self._entry_load(node)
        if _BY_NAME.intersection(paths) and not self._names_module(node):
            # `import_module(f"pkg.models.{arch}")`: the project's files may rule it out
            prefix = _package_prefix(node) if set(paths) == {"importlib.import_module"} else None
            self._report(node, ENV_UNRESOLVED, PREFIXED_IMPORT + prefix if prefix else "reflection", "import_by_name")
        if self._unsafe_yaml(node, paths) or (self.anywhere and _CODE_RUNNERS.intersection(paths) and not (
            node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, (str, bytes))
        )):
            # elsewhere any code string is `$?` (_REFLECTORS); here a literal one shows it
            # mentions nothing config-related
            self._report(node, ENV_UNRESOLVED, "reflection", "code_string")
        # `getattr(accessors, f"get_{ns}")`, `operator.attrgetter(name)(accessors)`: by a
        # name the module does not spell, from a module holding the raw accessor or a
        # context getter: may be either
        built = (
            ("builtins.getattr" in paths and len(node.args) >= 2 and self._spelled(node.args[1]) is None)
            or (_GETTER in paths and isinstance(node.func, ast.Call) and any(self._spelled(a) is None for a in node.func.args))
        )
        if built and node.args and any(self._holds_doors(p) for p in self.value(node.args[0]).paths):
            self._report(node, ENV_UNRESOLVED, "reflection", "door_by_name")
        # `getattr(os, name)`: `os.environ`, `os.getenv` or `os.environ.get` for all the
        # module shows
        unspelled = (
            ("builtins.getattr" in paths and len(node.args) >= 2 and self._names(node.args[1]) is None)
            or (_GETTER in paths and isinstance(node.func, ast.Call) and any(self._names(a) is None for a in node.func.args))
        )
        if unspelled and node.args and _ENVIRON_HOLDERS.intersection(self.value(node.args[0]).paths):
            self._report(node, ENV_UNRESOLVED, "reflection", "env_by_name")
        if "builtins.getattr" in paths and len(node.args) >= 2:
            name = _string(node.args[1])
            if name is not None and _private(name):
                target = self.value(node.args[0]).paths
                if _CONTEXT in target:
                    self._report(node, STATE_READBACK, "readback", "state")
                elif any(self._sensitive_module(f"{p}.{name}") for p in target if not p.startswith("<")):
                    # `getattr(S, "_GLOBAL_SERVER_ARGS")` is `S._GLOBAL_SERVER_ARGS`
                    self._report(node, ENV_UNRESOLVED, "private", "private")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "format_map"):
            template = node.func.value
            if isinstance(template, ast.Constant) and isinstance(template.value, str):
                if _reaches_fields(template.value):
                    self._format_fields(node, template.value, node.args, node.keywords)
            elif "builtins.str" in self.value(template).paths and node.args and (
                _string(node.args[0]) is None or _reaches_fields(_string(node.args[0]) or "")
            ):
                self._report(node, ENV_UNRESOLVED, "reflection", "format")
        if self.declared:
            self._glob(node, paths)
            self._env_call(node, paths)
            self._c_call(node, paths)
        self._judge(node)
        self.generic_visit(node)

    def visit_Match(self, node: ast.Match) -> None:
        """`case object(state=s)` on a context is `ctx.state`, `case object(environ=e)` on
        `os` is `os.environ`: a keyword sub-pattern fetches the attribute it names."""
        subject = self.value(node.subject)
        for case in node.cases:
            pending: list[tuple[ast.pattern, _Value]] = [(case.pattern, subject)]
            while pending:
                pattern, value = pending.pop()
                if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
                    pending.append((pattern.pattern, value))
                elif isinstance(pattern, ast.MatchOr):
                    pending += [(p, value) for p in pattern.patterns]
                elif isinstance(pattern, ast.MatchClass):
                    for attr, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns, strict=True):
                        self._pattern_fetch(sub, value, attr)
                        inner = _Value()
                        inner.extend(value, "." + attr)
                        pending.append((sub, inner))
        self.generic_visit(node)

    def _pattern_fetch(self, node: ast.pattern, value: _Value, attr: str) -> None:
        if _CONTEXT in value.paths:
            if attr == "state" or _private(attr):
                self._report(node, STATE_READBACK, "readback", "state")
            elif attr in CONTEXT_READBACK_METHODS:
                self._report(node, f"Context.{attr}", "readback", attr)
        for path in value.paths:
            if path.startswith("<"):
                continue
            fetched = _normal(f"{path}.{attr}")
            if self.declared and fetched in _ENV_PATHS:
                # the environment (or a reader of it) bound to a name no analysis follows
                self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
            elif _private(attr) and self._sensitive_module(f"{path}.{attr}"):
                self._report(node, ENV_UNRESOLVED, "private", "private")

    def _format_fields(self, node: ast.Call, template: str, args: list[ast.expr], keywords: list[ast.keyword]) -> None:
        """`"{0.tp_size}".format(get_server_args())` reads tp_size; `"{a.state}".format(a=ctx)`
        is a readback; a field the scanner cannot pair with its argument is `$?`."""
        fields = _simple_fields(template)
        if fields is None or any(isinstance(arg, ast.Starred) for arg in args) or any(k.arg is None for k in keywords):
            self._report(node, ENV_UNRESOLVED, "reflection", "format")
            return
        named = {k.arg: k.value for k in keywords if k.arg is not None}
        for key, attr in fields:
            argument = args[int(key)] if key.isdigit() and int(key) < len(args) else named.get(key)
            kinds = self.value(argument).paths if argument is not None else {}
            if _RECORD in kinds:
                self._report(node, attr, "format_field", "format", "wrapped")
            elif _CONTEXT in kinds and (attr == "state" or _private(attr)):
                self._report(node, STATE_READBACK, "readback", "state")
            else:
                self._report(node, ENV_UNRESOLVED, "reflection", "format")

    def _handed_state(self, node: ast.Call, paths: dict[str, bool]) -> None:
        """`export_state()` handed straight to a child process (an argument, an argv's
        element, an `env=` value of a launcher; an element of a Process's `args=`) is the
        documented hand-off, which the child adopts: no readback here."""
        launcher = any(is_child_process(path) for path in paths)
        if not launcher and not self._starts_process(node.func):
            return
        for expr in handed_to_child(node, launcher):
            if isinstance(expr, ast.Call) and any(_is_export_state(path) for path in self.value(expr.func).paths):
                self.handed.add(id(expr))

    def _starts_process(self, func: ast.expr, depth: int = 0) -> bool:
        """Is `func` a Process class of multiprocessing (`multiprocessing.Process`,
        `mp.get_context("spawn").Process`, `ctx.Process` with `ctx` bound to one)?"""
        if depth == 0 and not (isinstance(func, ast.Attribute) and func.attr.endswith("Process")) and not (
            isinstance(func, ast.Name) and func.id.endswith("Process")
        ):
            return False
        if any(path.split(".")[0] in PROCESS_MODULES for path in self.value(func).paths):
            return True
        if depth > 3:
            return False
        if isinstance(func, ast.Attribute):
            return self._starts_process(func.value, depth + 1)
        if isinstance(func, ast.Call):
            return self._starts_process(func.func, depth + 1)
        if isinstance(func, ast.Name):
            return any(v is not None and self._starts_process(v, depth + 1) for v in self.assigned.get(func.id, ()))
        return False

    def _judge(self, node: ast.expr) -> None:
        """A reference to what the other analyses cannot follow."""
        found = self.value(node)
        parent = self.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        bound = isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and getattr(parent, "value", None) is node
        named = _bound_to_names(parent, node)
        for path, hop in found.paths.items():
            if path in ("builtins.globals", "builtins.locals") and called and _stored(self.parents, parent):
                continue  # `globals()[name] = value` writes a name
            if path in _TIMERS and called and not self._runs_code(parent):
                continue  # `timeit.timeit(lambda: work(), number=3)`
            if path in _STRING_RUNNERS and self.anywhere:
                # here a literal code string shows it mentions nothing config-related
                if not (called and isinstance(parent, ast.Call) and parent.args and _string(parent.args[0]) is not None):
                    self._report(node, ENV_UNRESOLVED, "reflection", "code_string")
            elif path in _REFLECTORS:
                self._report(node, ENV_UNRESOLVED, "reflection", "reflection")
            elif (path in _FETCHERS or path == _GETTER) and (hop or not (called or bound)) and not (
                path == _GETTER and isinstance(node, ast.Name)
            ):
                self._report(node, ENV_UNRESOLVED, "reflection", "fetcher_value")
            elif ((path == _STATE_DICT and hop) or _is_export_state(path)) and not (called and id(parent) in self.handed):
                self._report(node, STATE_DICT_READBACK, "readback", "state_dict")
            elif self.declared and path in _ENV_PATHS and (hop or path not in _DIRECT):
                self._env_use(node, path, parent)
            elif self.declared and _c_getenv(path) and not (called or named) and not (
                isinstance(parent, ast.Attribute) and parent.attr in _C_PROTOTYPE_ATTRS
            ):
                # `map(libc.getenv, names)`, `self.get = libc.getenv`: called where no
                # analysis follows it
                self._report(node, ENV_UNRESOLVED, "environ", "c_getenv")
            elif self.declared and (_c_environ(path) or (_c_symbol_fetcher(path) and not (called or named))):
                # `ctypes.cast(libc.environ, ...)`, `map(c_void_p.in_dll, ...)`
                self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")
            elif self.declared and path in _EXPANDERS and not called:
                self._report(node, ENV_UNRESOLVED, "environ", "expandvars")

    def _runs_code(self, call: ast.AST | None) -> bool:
        """Does a timeit call run a code string: is its statement or setup anything but a
        callable the module shows (a lambda, a function it defines, a method, a partial)?"""
        if not isinstance(call, ast.Call):
            return True
        given = [k.value for k in call.keywords if k.arg in ("stmt", "setup")] + call.args[:2]
        return any(not self._callable(expr) for expr in given)

    def _callable(self, expr: ast.expr) -> bool:
        if isinstance(expr, (ast.Lambda, ast.Attribute)):
            return True
        if isinstance(expr, ast.Call):
            # `partial(f, x)` makes a callable; what another call gives (`fh.read()`) may be code
            return _last_name(expr.func) in _CALLABLE_MAKERS
        if isinstance(expr, ast.Name):
            bound = self.assigned.get(expr.id, [])
            return expr.id in self.returns or (bool(bound) and all(isinstance(v, ast.Lambda) for v in bound))
        return False

    def _env_use(self, node: ast.expr, path: str, parent: ast.AST | None) -> None:
        """`os.environb[b"X"]`, `subprocess.os.environ.get("X")`, `os.getenvb(b"X")`."""
        key: ast.expr | None = None
        known = False
        if path in ("os.environ", "os.environb"):
            if isinstance(parent, ast.Subscript) and parent.value is node:
                key, known = parent.slice, True
            elif isinstance(parent, ast.Attribute) and parent.attr in _ENV_METHODS:
                call = self.parents.get(id(parent))
                if isinstance(call, ast.Call) and call.func is parent and call.args:
                    key, known = call.args[0], True
            elif isinstance(parent, ast.Attribute):
                return  # a method reached below judges itself (`environ.get` as a value)
            elif isinstance(parent, ast.Compare):
                if all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
                    return  # `os.environb is None` reads nothing
                key, known = parent.left, True
        elif isinstance(parent, ast.Call) and parent.func is node and parent.args:
            key, known = parent.args[0], True
        name = _string(key) if known and key is not None else None
        if name is None:
            self._report(node, ENV_UNRESOLVED, "environ", "environb" if path.endswith("b") else "environ_whole")
        elif name in self.declared:
            self._report(node, env_subject(name), "environ", "environb" if path.endswith("b") else "environ_subscript")

    def _c_call(self, node: ast.Call, paths: dict[str, bool]) -> None:
        """A call of C's getenv, or of a C type's `in_dll`, through ctypes."""
        if any(_c_getenv(path) for path in paths):
            self._c_getenv(node)
        if any(_c_symbol_fetcher(path) for path in paths):
            self._c_symbol(node)

    def _c_getenv(self, node: ast.Call) -> None:
        """C's getenv through ctypes: `ctypes.CDLL(None).getenv(b"NAME")` reads NAME, and
        so does `get(NAME)` after `get = libc.getenv` (a module constant NAME too)."""
        name = self._spelled(node.args[0]) if node.args else None
        if name is None:
            self._report(node, ENV_UNRESOLVED, "environ", "c_getenv")
        elif name in self.declared:
            self._report(node, env_subject(name), "environ", "c_getenv")

    def _c_symbol(self, node: ast.Call) -> None:
        """`ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")`: C's environment array,
        every variable in it (a module constant naming it too), `$?`; so is a symbol whose
        name the module does not spell. Another variable (`c_int.in_dll(libc, "opterr")`)
        reads nothing."""
        given = node.args[1] if len(node.args) == 2 and not isinstance(node.args[1], ast.Starred) else None
        name = self._spelled(given) if given is not None else None
        if name is None or name in _C_ENVIRON:
            self._report(node, ENV_UNRESOLVED, "environ", "environ_whole")

    def _unsafe_yaml(self, node: ast.Call, paths: dict[str, bool]) -> bool:
        """Does the call load a YAML document the module does not spell with a loader
        that imports and calls what its tags name (`yaml.unsafe_load(fh)`, `yaml.load(fh,
        Loader=yaml.UnsafeLoader)`, `yaml.Loader(fh).get_data()`)? A spelled document's
        tags are import routes by then (configbags.migrate.resolvers)."""
        if _YAML_UNSAFE.intersection(paths):
            unsafe = True
        elif _YAML_LOADS.intersection(paths):
            loader = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "Loader"), None)
            unsafe = loader is not None and _last_name(loader) in _YAML_UNSAFE_LOADERS
        else:
            unsafe = any(path.startswith("yaml.") and path.rpartition(".")[2] in _YAML_UNSAFE_LOADERS for path in paths)
        return unsafe and not (node.args and (isinstance(node.args[0], ast.Constant) or _import_route(node.args[0])))

    def _glob(self, node: ast.Call, paths: dict[str, bool]) -> None:
        """`glob.glob("/proc/self/envi*")`, `Path("/proc/self").glob("env*")`: the
        environment file, found by a pattern, is the environment read whole."""
        if _GLOBS.intersection(paths) and node.args:
            pattern = _string(node.args[0])
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _GLOB_METHODS and node.args:
            base, part = _string(node.func.value), _string(node.args[0])
            if isinstance(node.func.value, ast.Call) and node.func.value.args:
                base = _string(node.func.value.args[0])  # `Path("/proc/self")`
            pattern = f"{base}/{part}" if base is not None and part is not None else part
        else:
            return
        if pattern is not None and _matches_environ_file(pattern):
            self._report(node, ENV_UNRESOLVED, "environ", "environ_glob")

    def _env_call(self, node: ast.Call, paths: dict[str, bool]) -> None:
        if not _EXPANDERS.intersection(paths):
            return
        template = _string(node.args[0]) if node.args else None
        if _DOTENV.intersection(paths):
            if _dotenv_plain(node):
                return
            stream = next((k.value for k in node.keywords if k.arg == "stream"), None)
            # `stream=io.StringIO("PAGE=${NAME}")`; a file's (a path) is not shown here
            template = _string(stream.args[0]) if isinstance(stream, ast.Call) and stream.args else None
        if template is None:
            self._report(node, ENV_UNRESOLVED, "environ", "expandvars")
            return
        if "sysconfig._subst_vars" in paths:
            template = _EXPANDED.sub(" ", template) + " " + " ".join("$" + m for m in _BRACED.findall(template))
        for match in _EXPANDED.finditer(template):
            name = next(group for group in match.groups() if group is not None)
            if name in self.declared:
                self._report(node, env_subject(name), "environ", "expandvars")


def _dotenv_plain(node: ast.Call) -> bool:
    """Does a python-dotenv call expand nothing from the environment: `load_dotenv()`
    alone (the project's own `.env`, found where it runs), or `interpolate=False`?"""
    interpolate = next((k.value for k in node.keywords if k.arg == "interpolate"), None)
    if isinstance(interpolate, ast.Constant) and interpolate.value is False:
        return True
    return not node.args and not node.keywords


def _package_prefix(call: ast.Call) -> str | None:
    """The literal prefix naming a package that an import's name is built on
    (`f"pkg.models.{arch}"`, `"pkg.models." + arch`: `pkg.models.`), or None."""
    if len(call.args) != 1 or call.keywords:
        return None
    names = literal_names(call.args[0])
    if not isinstance(names, tuple):
        return None
    package, dot, _ = names[0].rpartition(".")
    return names[0] if dot and all(part.isidentifier() for part in package.split(".")) else None


def _import_route(expr: ast.expr) -> bool:
    """Is `expr` what a spelled document's tags build (configbags.migrate.resolvers put
    their import routes in its place)?"""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("__import__", NAMED_BY_A_STRING)
        for node in ast.walk(expr)
    )


def _matches_environ_file(pattern: str) -> bool:
    """Does a glob pattern match a process's environment file, part by part
    (`/proc/self/envi*`, `/proc/[0-9]*/e*`)?"""
    parts = [part for index, part in enumerate(pattern.split("/")) if part or index == 0]
    return any(
        len(parts) == len(name) and all(fnmatch.fnmatchcase(real, part) for real, part in zip(name, parts, strict=True))
        for name in _ENVIRON_FILES
    )


def _is_export_state(path: str) -> bool:
    """`configbags.runtime.dist.export_state`, also from the private module behind it
    (`configbags.runtime.dist._state.export_state`)."""
    if path == _EXPORT_STATE:
        return True
    parts = path.split(".")
    return (
        parts[:3] == ["configbags", "runtime", "dist"]
        and parts[-1] == "export_state"
        and all(part.startswith("_") for part in parts[3:-1])
    )


@functools.cache
def _runtime_module(path: str) -> bool:
    """Is `path` a module of the installed configbags.runtime package?"""
    if path.split(".")[:2] != ["configbags", "runtime"]:
        return False
    try:
        # imports the parent packages: the runtime's own, which the scanner imports anyway
        return importlib.util.find_spec(path) is not None
    except Exception:  # any failure to find it means it is no module of ours
        return False


def _c_value(call: ast.Call, found: _Value) -> None:
    """What a ctypes (or cffi) call gives: a loaded library (`ctypes.CDLL(None)`,
    `cdll.LoadLibrary(...)`, `cffi.FFI().dlopen(None)`), or C's getenv where a prototype
    is called with its name and library (`CFUNCTYPE(...)(("getenv", libc))`)."""
    found.add(_C_LIBRARY, False)
    named = call.args[0] if call.args else None
    if isinstance(named, ast.Tuple) and named.elts:
        name = _string(named.elts[0])
        if name in C_GETENV:
            found.add(f"{_C_LIBRARY}.{name}", False)


def _bound_to_names(parent: ast.AST | None, node: ast.expr) -> bool:
    """Is `node` the value bound to plain names only (an alias followed here), not stored in
    an attribute or by key?"""
    if isinstance(parent, ast.Assign):
        return parent.value is node and all(isinstance(target, ast.Name) for target in parent.targets)
    if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)):
        return parent.value is node and isinstance(parent.target, ast.Name)
    return False


def _stored(parents: dict[int, ast.AST], call: ast.AST | None) -> bool:
    subscript = parents.get(id(call)) if call is not None else None
    return isinstance(subscript, ast.Subscript) and subscript.value is call and not isinstance(subscript.ctx, ast.Load)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else None


def _string(expr: ast.expr | None) -> str | None:
    """A literal str (or bytes, decoded) the expression spells, else None."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            return expr.value
        if isinstance(expr.value, bytes):
            return expr.value.decode("utf-8", "surrogateescape")
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _string(expr.left), _string(expr.right)
        return None if left is None or right is None else left + right
    return None


def _simple_fields(template: str) -> list[tuple[str, str]] | None:
    """(argument, first attribute) of each field reaching an attribute (`{0.tp_size}`,
    `{a.state.values}`); None where a field indexes, nests or is unnumbered."""
    found: list[tuple[str, str]] = []
    try:
        for _, field, spec, _ in string.Formatter().parse(template):
            if field is None or "." not in field:
                if (field is not None and "[" in field) or (spec and "{" in spec):
                    return None
                continue
            key, _, rest = field.partition(".")
            if not key or "[" in field or (spec and "{" in spec):
                return None
            found.append((key, rest.split(".")[0]))
    except ValueError:
        return None
    return found


def _reaches_fields(template: str) -> bool:
    """Does a str.format template name an attribute or an item of an argument (or is it
    one the scanner cannot parse)?"""
    try:
        fields: Iterator[tuple[str, str | None, str | None, str | None]] = iter(string.Formatter().parse(template))
        for _, field, spec, _ in fields:
            if field and ("." in field or "[" in field):
                return True
            if spec and "{" in spec and _reaches_fields(spec):
                return True
    except ValueError:
        return True
    return False
