"""The environment read outside Python, where the module spells it: the command of a child
process (`subprocess.run(["sh", "-c", "echo $SGLANG_PAGE_SIZE"])`, `os.system("...
${SGLANG_PAGE_SIZE}")`, every launcher of LAUNCHERS, which says where each takes its
command) whose literal text names a declared variable, and C's `getenv` called through
ctypes (configbags.migrate.reflection follows the library objects). The program a shell or
Python child reads on its standard input (stdin_reader) is judged as its `-c` script.

A command names a variable when the variable's name occurs in it as a whole word, however
the child reads it (`$NAME`, `${NAME}`, `%NAME%`, `printenv NAME`, `python -c
"...environ['NAME']..."`), as written or after a shell's quote removal (`NA''ME`, words_of). The literal text is every string or bytes literal in the
command's arguments (list and tuple elements, each side of a `+`, the literal parts of an
f-string, the arguments and receiver of a call in it: `textwrap.dedent(...)`, `"...".strip()`)
and what the names in it are bound to one step away (module constants and top-level lists,
a dict constant subscripted literally, a class attribute or `self.cmd` its methods assign,
a parameter's default, another module's constant: configbags.migrate.doors.ModuleStrings),
but never the child's environment: the
`env=` keyword and mapping arguments (`os.execve(path, args, {"NAME": "1"})`) set
variables, they do not read them. A child whose `env=` is a mapping literal with no `**`
spread has those variables alone: the names its command spells are not the process's. A
variable the command only sets, unsets or mentions (an assignment's name, `unset NAME`,
`env -u NAME`, a word an argv's `echo` prints: Mentions) is not read. A command the module
does not show (a parameter, a template from elsewhere, `shell=True` with a name) is not
reported: that would flag every child process.

A child that runs a file (a shell's script, an interpreter's Python file, make's Makefile,
a program by its path) is read through the file: child_files says which files a command
(each the module may compose, configbags.migrate.childargv) runs, as path specs the module's analysis keeps (FlowFacts.children), and
configbags.migrate.childfiles reads them where the tree's scan knows their place; a file
the module writes itself and runs (ModuleWrites) is judged by the texts it writes there.
A file's text given as the command (`["sh", "-c", SCRIPT.read_text()]`, `os.system(fh.read())`:
READ_MARK) runs the file as that kind of code, and a relative path is also in every folder
the module changes into (changed_folders; ANY_FOLDER for one it does not show).

A child that prints the whole environment back reads every variable (prints_environment;
the command judged is each the module may compose, rebuilt by configbags.migrate.childargv,
and each a run helper's callers hand it, configbags.migrate.flows):
`env`/`printenv` with no name, `export -p`, `declare -x`, a bare `set`, `ps e`, a read of
`/proc/.../environ` (a glob that may match it too), as the command `env` or a wrapper
(`exec`, `nohup`) runs, or any simple command of a shell's script (shell_commands: the
command position as the shell finds it, after reserved words, `if ...; then env; fi`, and
through an expansion whose literal value the script or the argv after a `-c` script
shows, `exec "$@"`, `cmd=env; $cmd`, an alias; one whose value is not shown, `$(echo env)`,
is NOT_JUDGED, deny by default), another interpreter's program reaching it whole
(uses_environment_whole), and a Python child whose `-c` code, or `-m timeit` statements,
use the environment whole. So does a shell child reading a variable by a name it builds
(`eval`, `${!name}`, `printenv "$0$1"`, `declare -n`): the names are not in its text."""

from __future__ import annotations

import ast
import fnmatch
import getopt
import itertools
import posixpath
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

from configbags.evolve.wrappers import SHELLS as WRAPPING_SHELLS
from configbags.evolve.wrappers import WRAPPERS, Wrapper, shell_options, unwrap

# The launchers of a child process (dotted paths, as the door analysis resolves them under
# any alias; the prefixes name families), each with where its command is:
#   command  the first argument, or the keyword args/cmd/command: an argv or a command line
#   exec     (path, arg0, args...) or (path, argv[, env]): os.exec*, a libc exec* through ctypes
#   spawn    (mode, path, ...), then as exec: os.spawn*
#   argv     (path, argv, ...): os.posix_spawn*, multiprocessing's spawnv_passfds
#   program  (program, *args): asyncio.create_subprocess_exec
#   loop     (protocol_factory, cmd): an event loop's subprocess_shell
#   loop_exec (protocol_factory, program, *args): an event loop's subprocess_exec
# C's launchers reached through ctypes or cffi (`ctypes.CDLL(None).system(b"...")`) are
# `<ffi>._lib.<name>` (C_LIBRARY), as the door analysis gives a loaded library's functions.
C_FFI = ("ctypes", "_ctypes", "cffi", "_cffi_backend")
C_LIBRARY = "_lib"
_C_LAUNCHERS = (("system", "command"), ("popen", "command"), ("exec", "exec"))
# an event loop's own launchers, known by the method's name on any receiver
LOOP_LAUNCHERS = {"subprocess_shell": "asyncio.AbstractEventLoop.subprocess_shell",
                  "subprocess_exec": "asyncio.AbstractEventLoop.subprocess_exec"}
LAUNCHERS: tuple[tuple[str, str], ...] = (
    ("asyncio.create_subprocess_exec", "program"), ("asyncio.subprocess.create_subprocess_exec", "program"),
    ("asyncio.AbstractEventLoop.subprocess_shell", "loop"), ("asyncio.AbstractEventLoop.subprocess_exec", "loop_exec"),
    ("subprocess.", "command"), ("asyncio.create_subprocess_", "command"), ("asyncio.subprocess.", "command"),
    ("os.posix_spawn", "argv"), ("os.exec", "exec"), ("os.spawn", "spawn"), ("os.system", "command"),
    ("os.popen", "command"), ("pty.spawn", "command"),
    ("distutils.spawn.spawn", "command"), ("setuptools._distutils.spawn.spawn", "command"),
    ("multiprocessing.util.spawnv_passfds", "argv"), ("_posixsubprocess.fork_exec", "command"),
    ("anyio.run_process", "command"), ("anyio.open_process", "command"),  # (the async stack FastAPI runs on)
    *((f"{ffi}.{C_LIBRARY}.{name}", shape) for ffi in C_FFI for name, shape in _C_LAUNCHERS),
)
CHILD_PROCESS_PREFIXES = tuple(prefix for prefix, _ in LAUNCHERS)
# The words a module must show for one to be called (a gate, substring tests).
CHILD_PROCESS_WORDS = ("subprocess", "system", "popen", "exec", "spawn", "_process")
# Names whose statements the door analysis walks, besides the launchers' own: a loaded C
# library (`libc = ctypes.CDLL(None)`), and what writes a child's standard input
CHILD_PROCESS_NAMES = frozenset({
    "CDLL", "PyDLL", "WinDLL", "OleDLL", "LoadLibrary", "cdll", "dlopen", "communicate", "stdin",
    "spawnv_passfds", "fork_exec", *LOOP_LAUNCHERS,
})
# Keyword arguments that are no part of the command (`input=`, the child's standard input,
# is judged as the program of a child that reads one there: stdin_program).
_NOT_COMMAND = frozenset({"env", "cwd", "stdin", "stdout", "stderr", "encoding", "errors", "executable"})
# str methods a command word may be spelled through (`"sglang_page_size".upper()`)
_CASE_METHODS = frozenset({"upper", "lower", "casefold", "swapcase", "title", "capitalize", "strip"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# C's readers of the environment, as ctypes reaches them from a loaded library.
C_GETENV = frozenset({"getenv", "secure_getenv", "_wgetenv", "getenv_s", "_wgetenv_s", "_dupenv_s"})


def is_child_process(path: str) -> bool:
    return path.startswith(CHILD_PROCESS_PREFIXES)


def launcher_shape(path: str) -> str | None:
    """Where the command of the launcher `path` is (LAUNCHERS), None for no launcher."""
    return next((shape for prefix, shape in LAUNCHERS if path.startswith(prefix)), None)


Argv = list[ast.expr | None]


def launcher_commands(path: str, args: Sequence[ast.expr], keywords: Sequence[ast.keyword]) -> list[ast.expr | Argv]:
    """What the launcher `path` called with `args` runs: an argv (word expressions, None
    for one not shown, a starred one for the words it splices in) or an expression giving
    a command line or an argv."""
    given = next((k.value for k in keywords if k.arg == "executable"), None)
    found: list[ast.expr | Argv] = []
    for program in executables(given):  # (`executable="env" if debug else None`: either runs)
        found += _launched(path, args, keywords, program)
    return found


def executables(given: ast.expr | None) -> list[ast.expr | None]:
    """The programs an `executable=` value may name: each branch of a conditional
    expression, None for the default (argv[0] runs)."""
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return [None]
    if isinstance(given, ast.IfExp):
        return executables(given.body) + executables(given.orelse)
    return [given]


def _launched(path: str, args: Sequence[ast.expr], keywords: Sequence[ast.keyword], program: ast.expr | None) -> list[ast.expr | Argv]:
    shape = launcher_shape(path)
    if shape in ("program", "loop_exec"):
        words: Argv = list(args) if shape == "program" else list(args[1:])
        if not words:
            return []
        if program is None:
            return [words]
        # (`executable=` reaches the Popen these start: the program, argv[0] a name)
        first = words[0]
        return [[program, _after_first(first.value), *words[1:]] if isinstance(first, ast.Starred) else [program, *words[1:]]]
    if shape == "loop":
        return [args[1]] if len(args) > 1 else []
    if shape in ("exec", "spawn", "argv"):
        return list(_exec_argv(shape, path, args))
    if shape == "command":
        command = args[0] if args else next((k.value for k in keywords if k.arg in ("args", "cmd", "command")), None)
        if command is None:
            return []
        return [command] if program is None else _with_program(path, command, program, keywords)
    return []


def _with_program(path: str, command: ast.expr, program: ast.expr, keywords: Sequence[ast.keyword]) -> list[ast.expr | Argv]:
    """The argv run where `executable=` names the program (`Popen(["name", X],
    executable="printenv")`): POSIX runs it with the command's words after the first (that
    one is its argv[0], a process name); with a shell it is the shell, given `-c` and the
    line (or the argv's words: the script, then its `$0`...). Both where `shell=` is not a
    constant."""
    shell = next((k.value for k in keywords if k.arg == "shell"), None)
    if path.endswith("_shell"):
        shells = [True]
    elif shell is None or isinstance(shell, ast.Constant):
        shells = [shell is not None and bool(shell.value)]
    else:
        shells = [False, True]
    words = list(command.elts) if isinstance(command, (ast.List, ast.Tuple)) else None
    found: list[ast.expr | Argv] = []
    for under_shell in shells:
        if under_shell:
            flag = ast.copy_location(ast.Constant("-c"), command)
            found.append([program, flag, *(words if words is not None else [command])])
        elif words is not None:
            found.append([program, *words[1:]])
        elif isinstance(command, (ast.Constant, ast.JoinedStr)):
            found.append([program])  # (a command line with no shell is argv[0] alone)
        else:
            found.append([program, _after_first(command)])
    return found


def _exec_argv(shape: str, path: str, args: Sequence[ast.expr]) -> list[Argv]:
    """The argv of `os.exec*`, `os.spawn*` and `os.posix_spawn*` as the call spells it: the
    program's path, then the arguments after argv[0] (`os.execl(path, arg0, *args)`,
    `os.execv(path, [arg0, *args])`, `os.spawnl(mode, path, ...)`), a trailing
    environment mapping (the `e` forms) left out."""
    suffix = "v" if shape == "argv" else path.rpartition("spawn" if shape == "spawn" else "exec")[2]
    offset = 1 if shape == "spawn" else 0
    if len(args) <= offset:
        return []
    program: ast.expr | None = args[offset]
    if "l" in suffix:
        rest = list(args[offset + 2 : len(args) - 1 if "e" in suffix else len(args)])
        return [[program, *rest]]
    vector = args[offset + 1] if len(args) > offset + 1 else None
    if isinstance(vector, (ast.List, ast.Tuple)):
        return [[program, *(None if isinstance(e, ast.Starred) else e for e in vector.elts[1:])]]
    return [[program, _after_first(vector)]] if vector is not None else []


def _after_first(command: ast.expr) -> ast.Starred:
    """`*command[1:]`: the words of a composed argv after its argv[0], as the module
    composes them (configbags.migrate.childargv rebuilds the slice)."""
    one = ast.copy_location(ast.Constant(1), command)
    rest = ast.copy_location(ast.Subscript(value=command, slice=ast.Slice(lower=one), ctx=ast.Load()), command)
    return ast.copy_location(ast.Starred(value=rest, ctx=ast.Load()), command)


# The modules whose Process classes start a child process (`multiprocessing.Process`,
# `multiprocessing.get_context("spawn").Process`, torch's copy)
PROCESS_MODULES = frozenset({"multiprocessing", "multiprocess", "torch"})


def handed_to_child(call: ast.Call, launcher: bool) -> list[ast.expr]:
    """What `call` hands straight to a child process it starts: a launcher's (`launcher`)
    arguments, an argv's elements and the values of its `env=` mapping; else (a Process)
    the elements of `args=` and the values of `kwargs=`. A value the child is given so is
    the child's, not read here (`Process(target=main, args=(export_state(),))`)."""
    if launcher:
        given = [*call.args, *(k.value for k in call.keywords)]
    else:
        given = [k.value for k in call.keywords if k.arg in ("args", "kwargs")]
    handed: list[ast.expr] = []
    for expr in given:
        if isinstance(expr, (ast.List, ast.Tuple)):
            handed.extend(expr.elts)
        elif isinstance(expr, ast.Dict):
            handed.extend(expr.values)
        else:
            handed.append(expr)
    return handed


def command_arguments(call: ast.Call) -> list[ast.expr]:
    """The arguments of a child-process call that may be (part of) its command."""
    return [*call.args, *(k.value for k in call.keywords if k.arg not in _NOT_COMMAND)]


def command_fragments(
    command: Sequence[ast.expr],
    constant: Callable[[ast.expr], str | None],
    scope: ast.AST,
    module: ast.Module | None = None,
    bound: Callable[[ast.expr], Sequence[tuple[ast.expr | None, Sequence[ast.AST]]] | None] | None = None,
) -> Iterator[tuple[ast.expr, str]]:
    """(node, literal text) for each piece of the command `call` shows. `constant` gives
    the string a name or expression evaluates to where the module shows it (a module
    constant, a concatenation), else None; a name bound in `scope` (the function or module
    around the call) gives what any of its bindings there shows (`cmd = [...]`, `cmd +=`),
    and so does one the `module`'s top level binds (`NAMES = [...]`, then `*NAMES`). A call
    inside the command shows its arguments and its receiver (`textwrap.dedent(script)`,
    `"...".strip()`, `shlex.join([...])`)."""
    pending: list[ast.expr] = list(command)
    followed: set[str] = set()
    visited: set[int] = set()  # (a value reached twice, by its name and one step, is one spelling)
    while pending:
        expr = pending.pop()
        if id(expr) in visited:
            continue
        visited.add(id(expr))
        if isinstance(expr, ast.Name) and expr.id not in followed:
            followed.add(expr.id)
            pending.extend(_bound_values(scope, expr.id))
            if module is not None and module is not scope:
                pending.extend(_top_level_values(module, expr.id))
        if bound is not None:
            pending.extend(_one_step(expr, bound, followed))
        if isinstance(expr, (ast.Dict, ast.DictComp)):
            continue  # an environment mapping for the child (os.execve's third argument)
        folded = constant(expr)
        if folded is not None:
            yield expr, folded
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, bytes):
                yield expr, expr.value.decode("utf-8", "surrogateescape")
        elif isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            pending.extend(expr.elts)
        elif isinstance(expr, ast.Starred):
            pending.append(expr.value)
        elif isinstance(expr, ast.BinOp):
            pending.extend((expr.left, expr.right))
        elif isinstance(expr, ast.JoinedStr):
            # the literal parts, and the names formatted in (`f"echo ${var}"`)
            pending.extend(part.value if isinstance(part, ast.FormattedValue) else part for part in expr.values)
        elif isinstance(expr, ast.Call):
            yield from _call_parts(expr, constant, pending)


def _call_parts(expr: ast.Call, constant: Callable[[ast.expr], str | None], pending: list[ast.expr]) -> Iterator[tuple[ast.expr, str]]:
    """A call inside a command: its receiver and arguments are pieces of it (`"sh -c 'echo
    $X'".split()`, `" ".join([...])`), and a literal's case changed is its text
    (`"sglang_page_size".upper()`)."""
    if isinstance(expr.func, ast.Attribute):
        pending.append(expr.func.value)
        receiver = constant(expr.func.value) if expr.func.attr in _CASE_METHODS and not expr.args else None
        if receiver is not None:
            yield expr, getattr(receiver, expr.func.attr)()
    pending.extend(arg.value if isinstance(arg, ast.Starred) else arg for arg in expr.args)


def _one_step(
    expr: ast.expr,
    bound: Callable[[ast.expr], Sequence[tuple[ast.expr | None, Sequence[ast.AST]]] | None],
    followed: set[str],
) -> list[ast.expr]:
    """What `expr` is bound to one step further, where the resolver shows it
    (configbags.migrate.doors.ModuleStrings): a parameter's default, `self.CMD`,
    `CMDS["page"]`; each expression once."""
    if not isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)):
        return []
    key = ast.dump(expr)
    if key in followed:
        return []
    followed.add(key)
    return [value for value, _ in bound(expr) or () if value is not None]


def named_variables(text: str, declared: frozenset[str]) -> list[str]:
    """The declared variables `text` names as whole words, sorted."""
    return sorted(declared.intersection(words_of(text)))


def spellings(text: str, declared: frozenset[str]) -> Counter[str]:
    """How many times `text` names each declared variable as a whole word."""
    return Counter({word: count for word, count in words_of(text).items() if word in declared})


# The characters a shell's quote removal takes out of a word (`SGLANG_PAGE''_SIZE`,
# `"SGLANG_PAGE"_SIZE`, `SGLANG_PAGE\_SIZE` are the name)
_QUOTES = re.compile(r"""['"\\]""")


def words_of(text: str) -> Counter[str]:
    """The identifiers `text` spells as whole words, counted: as written, or once the
    quotes and backslashes a shell removes are gone (the more of the two, by word)."""
    written = Counter(_WORD.findall(text))
    unquoted = _QUOTES.sub("", text)
    return written if unquoted == text else written | Counter(_WORD.findall(unquoted))


def _top_level_values(module: ast.Module, name: str) -> list[ast.expr]:
    """What the module's top-level assignments bind `name` to."""
    found: list[ast.expr] = []
    for stmt in module.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found.append(value)
    return found


def _bound_values(scope: ast.AST, name: str) -> list[ast.expr]:
    """The values `name` is bound to by assignments inside `scope` (any of them: a
    may-binding, as everywhere in the scanner), and what `name.append(...)` adds."""
    found: list[ast.expr] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found.append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                found.append(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "insert")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
        ):
            found.extend(node.args)
    return found


# ---- a child that prints the whole environment back

# A word of a command the module does not show (a parameter, a call): None.
Word = str | None
# The program a word names, spelled as a path or not (`/usr/bin/env`, `python3.11`); Python's
# interpreters by every name (`graalpy`, `jython`, `pyston`, the `py` launcher: `py -3.12`)
_PYTHON = re.compile(r"(?:python|pypy|graalpy|jython|pyston)[\d.]*|py")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
# Commands (and shell builtins) that print every variable when given no name
_DUMPERS = frozenset({"env", "printenv", "export", "declare", "typeset", "set"})
# (Commands that run the command after their options, `exec env`, `nohup printenv`, `timeout
# 5 sh`, are the process wrappers of configbags.evolve.wrappers: _wrapped.)
# env's options that take a value, and those that empty the child's environment
_ENV_VALUED = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
_ENV_EMPTIED = frozenset({"-i", "-", "--ignore-environment"})
# python's options that take a value (`-W ignore`, `-X dev`)
_PYTHON_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Shell operators that end a simple command; a redirection (`>`, `2>&1`) takes a target
_REDIRECTION = re.compile(r"[0-9]*[<>&][<>&|]*")
_OPERATORS = ";|&()\n"
# Interpreters whose inline program reaches the environment whole by these words (awk's
# ENVIRON array, perl's %ENV, node's process.env, ruby's ENV): a declared variable's name
# need not appear (`for (k in ENVIRON) if (k ~ /^SGLANG_/) print ENVIRON[k]`)
_WHOLE_ENV_WORDS = {
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk", "busybox"), ("ENVIRON",)),
    "perl": ("%ENV", "keys(%ENV", "each(%ENV", "$ENV{$", "$ENV{ $"),  # (or a key held in a variable)
    "node": ("process.env",), "nodejs": ("process.env",), "deno": ("Deno.env",),
    "ruby": ("ENV.", "ENV[", "ENV.each", "ENV.keys"),
    "jq": ("$ENV", "env |", "env|", "env.", "env[", "env)"),
    "cmake": ("$ENV{${", "$ENV{$<"),  # (a name held in a variable or built by a generator expression)
    # Tcl's env array: listed, searched, or an element by a name held in a variable
    **dict.fromkeys(("tclsh", "wish", "expect"), (
        "array get env", "array names env", "parray env", "array startsearch env", "env($", "::env($", "dict get [array",
    )),
}
# ... or is, as the whole inline program (`jq -n env`: the environment as an object)
_WHOLE_ENV_PROGRAMS = {"jq": ("env",)}
# The process's environment read as a file (`/proc/self/environ`, `/proc/$$/environ`),
# through /dev/fd too (a link to /proc/self/fd: `/dev/fd/../environ`)
_PROC_ENVIRON = re.compile(r"(?:/proc/|/dev/fd/|/dev/std(?:in|out|err)/)\S*environ")
# ... or by a shell glob that may match it (`cat /proc/self/env*`, `/proc/$$/e?viron`)
_PROC_WORD = re.compile(r"/proc/[^\s;|&()<>'\"]*")
_PROC_ENVIRON_FILES = ("/proc/self/environ", "/proc/1/environ", "/proc/thread-self/environ", "/proc/self/task/1/environ")
_SHELL_EXPANSION = re.compile(r"\$(?:\{[^}]*\}|[$!#?@*\w-]+)")
# perl's environment hash in any spelling: `%ENV`, `$main::ENV{...}`, `$::ENV{...}`, the
# symbolic `${"ENV"}{...}`, the glob `*ENV`; an element by a literal key (`$ENV{HOME}`) is a
# read of that name, any other use reaches the hash whole (`$ENV{"SGLANG_PAGE"."_SIZE"}`)
_PERL_ENV = re.compile(
    r"""([$%@*])\s*(?:\{\s*(["']?)(?:main)?(?:::)?ENV\2\s*\}|(?:main)?(?:::)?ENV\b)"""
    r"""(\s*\{\s*(?:\w+|"\w+"|'\w+')\s*\})?"""
)
# node's `process.env` spelled otherwise: `process["env"]`, `process?.env`, destructured
# (`const {env} = process`, `const { env: e } = require("process")`, `import { env } from "node:process"`)
_NODE_ENV = re.compile(
    r"""\bprocess\s*(?:\?\.\s*)?\[\s*(["'`])env\1\s*\]|\bprocess\s*\?\.\s*env\b"""
    r"""|\{(?:[^{}]|\{[^{}]*\})*\benv\b(?:[^{}]|\{[^{}]*\})*\}\s*(?:=\s*(?:(?:globalThis|global|window)\s*\??\.\s*)?process\b"""
    r"""|=\s*require\(\s*["'](?:node:)?process["']|from\s*["'](?:node:)?process["'])"""
    r"""|require\(\s*["'](?:node:)?process["']\s*\)\s*\??\.\s*env\b"""
)
# ps's options that take a value in the next word (`-o args=`, `-p PID`, BSD's `o FORMAT`)
_PS_VALUED = frozenset({
    "-C", "-G", "-U", "-g", "-p", "-q", "-s", "-t", "-u", "-o", "-O", "-k", "--format", "--pid", "--ppid",
    "--sort", "--cols", "--columns", "--rows", "--width", "--user", "--group", "--tty", "o", "O", "p", "U", "t", "k",
})
# Shell builtins that make a reference to a variable by its name (`declare -n`)
_NAMEREF_DECLARERS = frozenset({"declare", "typeset", "local"})
# Shell words that list or expand variables by a prefix (`${!SGLANG_*}`, `compgen -e`)
_PREFIX_EXPANSIONS = ("${!",)
_LISTERS = frozenset({"compgen"})


def is_shell(name: str) -> bool:
    return name in _SHELLS


def is_python(name: str) -> bool:
    return _PYTHON.fullmatch(name) is not None


def whole_environment_marks(interpreter: str) -> tuple[str, ...]:
    """The words by which an interpreter's program reaches the environment whole."""
    return _WHOLE_ENV_WORDS.get(interpreter, ())


def uses_environment_whole(interpreter: str, text: str) -> bool:
    """Does an interpreter's program reach the environment whole: one of its marks
    (whole_environment_marks), perl's hash in any spelling other than an element by a
    literal key (_PERL_ENV), node's `process.env` by another spelling (_NODE_ENV)?"""
    if any(mark in text for mark in whole_environment_marks(interpreter)):
        return True
    if interpreter == "perl":
        return any(sigil in "%*" or not key for sigil, _, key in _PERL_ENV.findall(text))
    if interpreter in ("node", "nodejs"):
        return _NODE_ENV.search(text) is not None
    return False


# The environment of a process, as Linux shows it in a file (`/proc/self/environ`,
# `/proc/thread-self/environ`, `/proc/<pid>/environ`, a task's), in a path's text where `*`
# (or a `%d`, a `{}` field) stands for a part the module does not show.
ENVIRON_FILE = re.compile(r"/+proc/+[^/\s'\"]+(?:/+task/+[^/\s'\"]+)?/+environ(?!\w)")
# Links into /proc a path may go through: /dev/fd is /proc/self/fd, the standard streams
# are descriptors there
_PROC_LINKS = re.compile(r"/+dev/+(fd|stdin|stdout|stderr)(?=/|$)")
_STREAMS = {"fd": "", "stdin": "/0", "stdout": "/1", "stderr": "/2"}


def names_environ_file(text: str) -> bool:
    """Does a path's text (`*` for a part not shown) name a process's environment file
    (ENVIRON_FILE): as spelled, normalised (`/proc/self/../self/environ`), through /dev/fd,
    or with a `..` under /proc (`/proc/self/fd/3/../environ`: after a descriptor's link,
    `..` is the folder of what it is, not shown)?"""
    linked = _PROC_LINKS.sub(lambda m: "/proc/self/fd" + _STREAMS[m.group(1)], text)
    if ENVIRON_FILE.search(linked):
        return True
    normal = posixpath.normpath(linked)
    if ENVIRON_FILE.search(normal):
        return True
    return "/proc/" in linked and ".." in linked.split("/") and normal.rpartition("/")[2] == "environ"


def relative_environ(text: str) -> bool:
    """Is a path's text relative (neither `/` nor a part not shown first) and its file
    named `environ` (`environ`, `./environ`, `self/environ`)?"""
    return bool(text) and text[0] not in "/*~$" and posixpath.normpath(text).rpartition("/")[2] == "environ"


def environ_in_folders(text: str, folders: Sequence[str]) -> bool:
    """Does a relative path name a process's environment file in any of the `folders` (path
    specs, as changed_folders gives them: a folder not shown, ANY_FOLDER or "", may be under
    /proc, and so may one relative to where the process started that climbs out of it or
    passes a `proc`)? A file named `environ` in another folder is not the environment."""
    if not relative_environ(text):
        return False
    for folder in folders:
        if folder.startswith("/"):
            if names_environ_file(f"{folder}/{text}"):
                return True
        elif not folder or folder.startswith(ANY_FOLDER):
            return True
        else:  # `@cwd/build`, `@file/..`
            parts = posixpath.normpath(folder.partition("/")[2] or ".").split("/")
            if "proc" in parts or (folder.startswith("@cwd") and ".." in parts):
                return True
    return False


# A word of a command or program naming `environ` by a relative path (`cat environ`,
# `< self/environ`, `open("environ")`)
_RELATIVE_ENVIRON = re.compile(r"""(?:^|(?<=[\s'"`;|&()<>=,]))((?:\.{1,2}/|[^\s'"`;|&()<>=,/$*]+/)*environ)(?![\w.-])""")
# A shell's change of folder, and the launchers' options that start a command in one
# (`cd DIR`, `pushd DIR`, `env -C DIR`, `env --chdir=DIR`, `sudo -D DIR`, `mpirun -wdir DIR`)
_CHANGES_INTO = re.compile(
    r"""(?:(?:^|(?<=[\s;|&()`{]))(?:cd|pushd)\s+(?:-[LPe@]+\s+)*|(?<!\S)(?:-C\s*|-D\s*|--chdir[=\s]\s*|--?w?dir[=\s]\s*))"""
    r"""((?:"[^"]*"|'[^']*'|[^\s;|&()`<>])+)"""
)


def command_reads_environ_file(texts: Sequence[str], folders: Sequence[str]) -> bool:
    """Does a command's text (its words, a shell's script, an inline program) name the
    environment file by a relative path in a folder its child starts in (`folders`) or
    one it changes into (`cd /proc/self && cat environ`; `cd "$1"`: a folder not shown)?"""
    candidates = [text for text in texts if "environ" in text]
    if not candidates:
        return False
    found = list(folders)
    for text in texts:
        for match in _CHANGES_INTO.finditer(text):
            target = match.group(1).replace('"', "").replace("'", "")
            if any(mark in target for mark in "$`*?[~") or target.startswith(NOT_SHOWN_MARK):
                found.append(ANY_FOLDER)
            elif target.startswith("/"):
                found.append(target)
            else:
                found += [f"{folder}/{target}" for folder in found if folder.startswith("/")]
                found.append(f"@cwd/{target}")
    return any(
        environ_in_folders(match.group(1), found) for text in candidates for match in _RELATIVE_ENVIRON.finditer(text)
    )


def _globs_environ(word: str) -> bool:
    """Is the word a glob (`*`, `?`, `[...]`, an expansion standing for any text) that may
    match the process's environment file (`/proc/self/env*`)?"""
    if "/proc/" not in word or not any(ch in word for ch in "*?["):
        return False
    pattern = _SHELL_EXPANSION.sub("*", word[word.index("/proc/") :])
    return any(fnmatch.fnmatchcase(path, pattern) for path in _PROC_ENVIRON_FILES)


def program_name(word: str) -> str:
    """The program a command word names, without its folder (`/usr/bin/env` is env)."""
    return re.split(r"[/\\]", word.strip())[-1].lower().removesuffix(".exe")


def prints_environment(words: Sequence[Word], python_reads_whole: Callable[[str], bool], depth: int = 0) -> bool:
    """Does a child run with the argv `words` print (or hand back) the whole environment
    it inherits? `env` or `printenv` with no name (options and `NAME=value` assignments
    aside), `export -p`, `declare -x`, `set` alone, the same as the command `env` runs
    or a shell's `-c` script holds, and a Python child whose `-c` code uses the
    environment whole (`python_reads_whole`). A word the module does not show ends the
    analysis: the command is not known (the doc's rule for commands built elsewhere), so
    `env FOO=1 cmd` and `["env", *args]` read nothing here. `env -i` empties the child's
    environment first."""
    if not words or words[0] is None or depth > 8:
        return False
    if words[0] == NOT_JUDGED:
        return True  # a command the script does not show (`$(echo env)`): deny by default
    name = program_name(words[0])
    rest = list(words[1:])
    if _builds_a_name(name, rest) or (name == "ps" and _ps_prints(rest)) or _programs_print(words, python_reads_whole, depth):
        return True
    inner = _wrapped(words)
    if inner is not None:  # `timeout 5 env`, `nice -n 5 sh -c 'env'`, `mpirun -np 2 env`
        if isinstance(inner, str):
            return shell_prints_environment(inner, python_reads_whole, depth + 1)
        return prints_environment(inner, python_reads_whole, depth + 1)
    if name == "env":
        return _env_prints(rest, python_reads_whole, depth)
    if name in _SHELLS:
        index, letters = shell_options(rest)
        if "c" not in letters or index >= len(rest):
            return False  # `bash script.sh`: a script the module does not show
        script = rest[index]
        # (the words after the script are its `$0`, `$1`...: `sh -c 'exec "$@"' sh env`)
        return script is not None and shell_prints_environment(script, python_reads_whole, depth + 1, rest[index + 1 :])
    if _PYTHON.fullmatch(name):
        return _python_prints(rest, python_reads_whole)
    if name in ("find", "git", "gdb"):
        return _runner_prints(name, rest, python_reads_whole, depth)
    if name in _WHOLE_ENV_WORDS:
        programs = _WHOLE_ENV_PROGRAMS.get(name, ())
        return any(
            word is not None and (word in programs or program_prints_environment(name, word, python_reads_whole, depth))
            for word in rest
        )
    if name in _LISTERS:
        return any(word is not None and word.startswith("-") and ("e" in word or "v" in word) for word in rest)
    options = [word for word in rest if word is not None and word.startswith("-")]
    if name not in _DUMPERS or len(options) < len(rest):
        return False  # a name to print, an assignment, or a word not shown
    if name == "set":
        return not options  # `set -e` sets options; `set` alone lists every variable
    # `printenv -0`, `export -p`, `declare -x`, `declare -p`, `typeset -x`
    return name in ("printenv", "export") or all(set(word[1:]) <= set("xpr") for word in options)


def program_prints_environment(
    interpreter: str, text: str, python_reads_whole: Callable[[str], bool], depth: int = 0
) -> bool:
    """Does another interpreter's program reach the environment whole (uses_environment_whole),
    or start a child that does: a command it runs (perl's `qx(env)`, backticks, `system`,
    `exec`, a piped `open`; node's `child_process.execSync("env")`, `spawnSync`; awk's
    `system("env")`, `"env" | getline`; Tcl's `exec env`) judged as a shell command, and
    one it builds (`system("printenv " . $n)`) not known: deny by default?"""
    if uses_environment_whole(interpreter, text):
        return True
    return any(
        command is None or shell_prints_environment(command, python_reads_whole, depth + 1)
        or stdin_reader(_split(command)) is not None  # (`print x | "sh"`: the program it is fed)
        for command in started_commands(interpreter, text)
    )


# A string literal of perl, node or awk: its quote and text (escapes kept)
_STRING = r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)"""
_PERL_RUNS = re.compile(r"\b(?:system|exec|readpipe)\b\s*\(?\s*")
_PERL_QX = re.compile(r"\bqx\s*([^\w\s])")
_PERL_OPEN = re.compile(r"\bopen\s*\(?\s*(?:my\s+)?[$\w:]+\s*,\s*")
_NODE_RUNS = re.compile(r"\b(exec|execSync|execFile|execFileSync|spawn|spawnSync)\s*\(\s*")
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(\s*")
_AWK_PIPES = re.compile(r"""("(?:[^"\\]|\\.)*"|[A-Za-z_]\w*|\))\s*\|&?\s*getline|\|&?\s*("(?:[^"\\]|\\.)*"|[A-Za-z_]\w*)""")
_TCL_RUNS = re.compile(r"""\bexec\s+([^\]\n;]*)|\bopen\s+"?\|([^"\]\n;]*)""")
_CLOSING = {"(": ")", "{": "}", "[": "]", "<": ">"}
# What makes a literal's text built at run time: perl's and node's interpolation
_INTERPOLATES = {"perl": re.compile(r"[$@]\w|[$@]\{"), "node": re.compile(r"\$\{")}


def _literal(text: str, at: int, interpreter: str) -> tuple[str | None, int]:
    """The string literal at `text[at]` (None: not a literal, or one that interpolates)
    and the index after it."""
    while at < len(text) and text[at].isspace():
        at += 1
    found = re.compile(_STRING).match(text, at)
    if found is None:
        return None, at
    quote, body = found.group()[0], found.group()[1:-1]
    pattern = _INTERPOLATES.get(interpreter)
    if pattern is not None and quote != "'" and pattern.search(body):
        return None, found.end()
    return body.replace('\\"', '"').replace("\\'", "'"), found.end()


def _literals_then(text: str, at: int, interpreter: str, end: str) -> str | None:
    """The literals of a list `"a", "b"` from `text[at]` up to `end`, as one shell command
    (each word quoted); None where one is not a literal."""
    words: list[str] = []
    while True:
        word, at = _literal(text, at, interpreter)
        if word is None:
            return None
        words.append(word)
        rest = text[at:].lstrip()
        if not rest.startswith(","):
            break
        at = len(text) - len(rest) + 1
        at += len(text[at:]) - len(text[at:].lstrip())
        if text[at:].startswith(end):
            break
    return shlex.join(words)


def started_commands(interpreter: str, text: str) -> list[str | None]:
    """The shell commands an inline program of perl, ruby, node, awk or Tcl starts (a
    command it builds: None)."""
    if interpreter in ("perl", "ruby"):
        return _perl_commands(text)
    commands: list[str | None] = []
    if interpreter in ("node", "nodejs") and "child_process" in text:
        for found in _NODE_RUNS.finditer(text):
            command, at = _literal(text, found.end(), "node")
            rest = text[at:].lstrip()
            if command is not None and found.group(1).startswith(("spawn", "execFile")) and rest.startswith(","):
                args = rest[1:].lstrip()
                if args.startswith("["):
                    listed = _literals_then(args, 1 + len(args[1:]) - len(args[1:].lstrip()), "node", "]")
                    command = None if listed is None and args[1:].lstrip()[:1] != "]" else f"{command} {listed or ''}"
            commands.append(command)
    elif interpreter in _WHOLE_ENV_WORDS and "ENVIRON" in _WHOLE_ENV_WORDS[interpreter]:  # awk
        for found in _AWK_SYSTEM.finditer(text):
            command, at = _literal(text, found.end(), "awk")
            commands.append(command if command is not None and text[at:].lstrip().startswith(")") else None)
        for found in _AWK_PIPES.finditer(text):
            word = found.group(1) or found.group(2)
            commands.append(word[1:-1] if word.startswith('"') and text[found.end():].lstrip()[:1] != '"' else None)
    elif interpreter in ("tclsh", "wish", "expect"):
        for found in _TCL_RUNS.finditer(text):
            body = found.group(1) if found.group(1) is not None else found.group(2)
            commands.append(None if "$" in body or "[" in body else body)
    return commands


def _runner_prints(name: str, rest: list[Word], python_reads_whole: Callable[[str], bool], depth: int) -> bool:
    """find's `-exec CMD ;`, git's `!` aliases (`git -c alias.e=!env e`), gdb's commands."""
    if name == "find":
        return any(prints_environment(command, python_reads_whole, depth + 1) for command in _found_commands(rest))
    if name == "git":
        return any(
            shell_prints_environment(script, python_reads_whole, depth + 1) for script in _git_alias_scripts(rest)
        )
    return _gdb_prints(rest, python_reads_whole, depth)


def _perl_commands(text: str) -> list[str | None]:
    """The commands perl's (or ruby's) backticks, `qx`, `system`, `exec` and piped `open` run."""
    commands: list[str | None] = list(re.findall(r"`([^`]*)`", text))
    for found in _PERL_QX.finditer(text):
        opening = found.group(1)
        close = text.find(_CLOSING.get(opening, opening), found.end())
        body = text[found.end() : close] if close >= 0 else None
        interpolates = opening != "'" and body is not None and _INTERPOLATES["perl"].search(body)
        commands.append(None if body is None or interpolates else body)
    for found in _PERL_RUNS.finditer(text):
        commands.append(_literals_then(text, found.end(), "perl", ")"))
    for found in _PERL_OPEN.finditer(text):
        mode, at = _literal(text, found.end(), "perl")
        if mode in ("-|", "|-"):
            rest = text[at:].lstrip()
            commands.append(_literals_then(text, len(text) - len(rest) + 1, "perl", ")") if rest.startswith(",") else None)
        elif mode is None or mode.strip().startswith("|") or mode.strip().endswith("|"):
            commands.append(mode.strip().strip("|") if mode else None)
    return commands


def _found_commands(rest: list[Word]) -> list[list[Word]]:
    """The commands `find ... -exec CMD {} ;` (`-execdir`, `-ok`, `-okdir`, `+`) runs."""
    commands: list[list[Word]] = []
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if word in _FIND_EXECS:
            end = next((j for j in range(index, len(rest)) if rest[j] in (";", "+")), len(rest))
            commands.append(rest[index:end])
            index = end + 1
    return commands


def _git_alias_scripts(rest: list[Word]) -> list[str]:
    """The shell commands of the `!` aliases `git -c alias.NAME=!CMD` defines."""
    scripts: list[str] = []
    for index, word in enumerate(rest):
        value = rest[index + 1] if word == "-c" and index + 1 < len(rest) else word[2:] if word and word.startswith("-c") else None
        key, eq, command = (value or "").partition("=")
        if eq and key.lower().startswith("alias.") and command.lstrip().startswith("!"):
            scripts.append(command.lstrip()[1:])
    return scripts


_GDB_COMMANDS = frozenset({"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex",
                           "-init-eval-command", "--init-eval-command"})
_GDB_SHOWS = re.compile(r"(?:show|info|sho|i)\s+env\w*\s*$")


def _programs_print(words: Sequence[Word], python_reads_whole: Callable[[str], bool], depth: int) -> bool:
    """`mpirun -np 1 a : -np 1 env`: each program an MPI launcher runs, with its own options
    (the one before its first `:` is also the command its wrapper runs)."""
    if program_name(words[0] or "") not in _MPI_LAUNCHERS or ":" not in words:
        return False
    at = words.index(":")
    return any(
        prints_environment([words[0], *part], python_reads_whole, depth + 1) for part in (words[1:at], words[at + 1 :])
    )


def _gdb_prints(rest: list[Word], python_reads_whole: Callable[[str], bool], depth: int) -> bool:
    """gdb's `-ex 'show environment'` prints the environment it holds for its program;
    `-ex 'shell CMD'` (`!CMD`) runs CMD; `--args CMD...` debugs CMD, run with it."""
    for index, word in enumerate(rest):
        if word == "--args":
            return prints_environment(rest[index + 1 :], python_reads_whole, depth + 1)
        name, eq, value = (word or "").partition("=")
        command = value if eq and name in _GDB_COMMANDS else rest[index + 1] if word in _GDB_COMMANDS and index + 1 < len(rest) else None
        if command is None:
            continue
        command = command.strip()
        if _GDB_SHOWS.match(command):
            return True
        shell = command[1:] if command.startswith("!") else command[6:] if command.startswith("shell ") else None
        if shell is not None and shell_prints_environment(shell, python_reads_whole, depth + 1):
            return True
    return False


def _builds_a_name(name: str, rest: list[Word]) -> bool:
    """Does the command read a variable by a name it builds at run time: `eval` (`eval
    "echo \\$$0$1"`), `printenv "$0$1"`, `declare -n v="$1"` (a reference by name)? Or
    read the process's environment as a file (`cat /proc/self/environ`)?"""
    if name == "eval" or any(word is not None and (_PROC_ENVIRON.search(word) or _globs_environ(word)) for word in rest):
        return True
    if name == "printenv":
        return any(word is not None and "$" in word for word in rest)
    return name in _NAMEREF_DECLARERS and any(word is not None and word.startswith("-") and "n" in word for word in rest)


def _ps_prints(rest: list[Word]) -> bool:
    """`ps` with the `e` option (BSD syntax, no dash: `ps eww`, `ps auxe`) shows each
    process's environment; `-e` (every process) and option values (`-o args=`, `-C sleep`)
    do not."""
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if word is None:
            continue
        if word in _PS_VALUED:
            index += 1
        elif not word.startswith("-") and word.isalpha() and "e" in word:
            return True
    return False


def _env_prints(rest: list[Word], python_reads_whole: Callable[[str], bool], depth: int) -> bool:
    """`env [OPTION]... [NAME=VALUE]... [COMMAND [ARG]...]`"""
    while rest:
        word = rest.pop(0)
        if word is None:
            return False
        if word in _ENV_EMPTIED:
            return False  # the child starts with no variable of ours
        if word == "--":
            break
        if word in ("-S", "--split-string") and rest and rest[0] is not None:
            return prints_environment([*_split(rest[0]), *rest[1:]], python_reads_whole, depth + 1)
        if word in _ENV_VALUED:
            if rest:
                rest.pop(0)
            continue
        if word.startswith("-"):
            continue  # `-0`, `--null`, `-v`, `-uHOME`
        rest.insert(0, word)
        break
    while rest and rest[0] is not None and _ASSIGNMENT.match(rest[0]):
        rest.pop(0)
    return not rest or prints_environment(rest, python_reads_whole, depth + 1)


def _python_prints(rest: list[Word], python_reads_whole: Callable[[str], bool]) -> bool:
    """`python [OPTION]... -c CODE`: the code uses the environment whole; so do the
    statements `-m timeit` runs (timeit_code)."""
    while rest:
        word = rest.pop(0)
        if word in ("-m", "-mtimeit"):
            code = timeit_code(rest if word == "-m" else ["timeit", *rest])
            return code is not None and python_reads_whole(code)
        if word is None or not word.startswith("-"):
            return False
        if word in _PYTHON_VALUED:
            if rest:
                rest.pop(0)
        elif word.endswith("c") and not word.startswith("--"):
            return bool(rest) and rest[0] is not None and python_reads_whole(rest[0])
    return False


# timeit's command line (`python -m timeit [-n N] [-r N] [-s S]... [STATEMENT]...`)
_TIMEIT_SHORT = "n:u:s:r:tcpvh"
_TIMEIT_LONG = ["number=", "setup=", "repeat=", "time", "clock", "process", "verbose", "unit=", "help"]


def timeit_code(words: Sequence[Word]) -> str | None:
    """The Python code `-m MODULE` words run where the module is timeit: its setups and
    statements, each a line, as a `-c` program is; None for another module, or words not shown."""
    if not words or words[0] != "timeit" or any(word is None for word in words):
        return None
    try:
        options, statements = getopt.getopt([str(word) for word in words[1:]], _TIMEIT_SHORT, _TIMEIT_LONG)
    except getopt.GetoptError:
        return None
    setups = [value for option, value in options if option in ("-s", "--setup")]
    return "\n".join([*setups, *statements])


def shell_prints_environment(
    script: str, python_reads_whole: Callable[[str], bool], depth: int = 0, args: Sequence[Word] | None = None
) -> bool:
    """Does any simple command of a shell script print the whole environment back
    (`env | grep X`, `cd /tmp && FOO=1 env > out`, `echo $(env)`, `export -p`, `if ...;
    then env; fi`), or reach variables by a prefix (`${!SGLANG_*}`, `compgen -e`), or run
    an inline program that walks the environment (awk's ENVIRON, perl's %ENV), or read
    the environment file by a glob (`cat /proc/self/env*`)? `args` are the words after a
    `-c` script (its `$0`, `$1`...; shell_commands)."""
    if any(mark in script for mark in _PREFIX_EXPANSIONS):
        return True  # `${!SGLANG_*}`, `${!name}`: variables by a prefix, or by a name held in another
    if _PROC_ENVIRON.search(script) or any(_globs_environ(word) for word in _PROC_WORD.findall(script)):
        return True
    if command_reads_environ_file([script], ()):
        return True  # `cd /proc/self && cat environ`
    if _SOURCED_PROCESS.search(script):
        return True  # `source <(echo env)`: a script another command prints, not shown
    # a command substitution quoted inside a word (`echo "$(printenv "$1")"`) is a script too
    scripts = [script, *(script[at.end() :] for at in re.finditer(r"\$\(", script) if '"' in script[: at.start()])]
    return any(
        prints_environment(command, python_reads_whole, depth)
        for text in scripts for command in shell_commands(text, args)
    )


def shell_commands(script: str, args: Sequence[Word] | None = None) -> list[list[Word]]:
    """The simple commands of a shell script, as words: split at `;`, `|`, `&&`, `||`,
    `&`, newlines, parentheses (`$(...)` too) and backquotes; leading `NAME=value`
    assignments, redirections (`> out`, `2>&1`) and the reserved words a command follows
    (`then env`, `{ env; }`, `! env`, `function f { env; }`) left out. A command word
    that is a command substitution (`$(echo env)`) is NOT_JUDGED; the words that are an
    expansion are the literal values the script shows (shell_expanded): `"$@"` and `$1`
    the argv words `args` after a `-c` script (`$0` first) or what `set --` gives, `$cmd`
    what `cmd=...` assigns, an alias what `alias NAME=...` makes it."""
    commands: list[list[Word]] = []
    current: list[Word] = []
    shown = ShellValues(args)
    named = False  # `function NAME`: the next word is the function's name
    tokens, exact = _split_exactly(_backquoted(script), punctuation=True)
    pending = iter(tokens)
    for token in pending:
        if _REDIRECTION.fullmatch(token) and any(ch in token for ch in "<>"):
            if current and (current[-1] or "").isdigit():
                current.pop()  # `2>&1`: the descriptor redirected
            next(pending, None)  # the redirection's target
        elif token == "(" and current == ["$"] and exact:
            commands.append([NOT_JUDGED])  # `$(echo env)`: the command is what another prints
            current = []
        elif token and all(ch in _OPERATORS for ch in token):
            commands.append(current)
            current, named = [], False
        elif not current and (token in _COMPOUND_WORDS or named or token == "function"):
            named = token == "function"
        elif not current and _ASSIGNMENT.match(token):
            shown.assign(token)
        elif not current and token.startswith("$(") and not _looks_up(_split(token[2:].rstrip(")"))):
            current.append(NOT_JUDGED)  # `"$(echo env)" -0`: quoted, one word
        else:
            current.append(token)
    commands.append(current)
    found = [command for command in commands if command]
    # `trap CMD SIGNAL...`: CMD is a script the shell runs on the signal (`trap env EXIT`)
    found += [
        inner for command in found[:] if command[0] == "trap" and len(command) > 2 and command[1] not in (None, "-", "--")
        and not str(command[1]).startswith("-") for inner in shell_commands(str(command[1]))
    ]
    for command in found:
        shown.note(command)
    # `$(which python3) -c ...`: a substitution that only looks a program up is that program's
    kept = [c for i, c in enumerate(found) if not (c == [NOT_JUDGED] and i + 1 < len(found) and _looks_up(found[i + 1]))]
    return [expanded for command in kept for expanded in shown.expanded(command)]


# `. <(...)`, `source <(...)`: the commands of a process's output
_SOURCED_PROCESS = re.compile(r"(?:^|[\s;&|({])(?:source|\.)\s+<\(")
# The reserved words a simple command may follow inside a compound command
# (`coproc env`: the command a coprocess runs)
_COMPOUND_WORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "coproc"})
# A word in a command's place the scanner cannot judge (a command substitution's output,
# a variable whose value the script does not show): the command is not known, and as for
# any program the scanner cannot judge, deny by default: it may print the environment
NOT_JUDGED = "$\3"
# A backquote that opens a command substitution where a command starts (`` `echo env` ``)
_COMMAND_START = re.compile(r"(?:^|[;&|(){}\n!]|\b(?:then|do|else|elif|if|while|until)\b)[ \t]*$")
# The programs that look a program up by its name (`$(which python3)`, `$(command -v sh)`)
_LOOKUPS = frozenset({"which", "command", "type", "whence"})
# An expansion that is a whole word: `$NAME`, `${NAME}`, `$1`, `"$@"` (quotes removed),
# `${NAME:-default}` (the default where NAME is not set)
_EXPANSION = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*|[0-9@*])|\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*])(?::?[-=]([^}$`]*))?\})")
_MAX_EXPANSIONS = 16  # the commands one command may stand for, its words' values combined


def _backquoted(script: str) -> str:
    """The script with each backquote a split point (` ; `), save one opening a command
    substitution where a command starts, which is `$(`."""
    if "`" not in script:
        return script
    parts = script.split("`")
    out = parts[0]
    for index, part in enumerate(parts[1:]):
        opening = index % 2 == 0 and _COMMAND_START.search(out) is not None
        out += (" $( " if opening else " ; ") + part
    return out


def _looks_up(command: Sequence[Word]) -> bool:
    return bool(command) and command[0] in _LOOKUPS and len(command) > 1


class ShellValues:
    """The literal values a shell script gives the words an expansion stands for: the
    positional words (`args`, `$0` first, as after a `-c` script; `set -- WORD...`), each
    variable's assignments (`cmd=env`, `export cmd=env`: any of them, a may-binding) and
    aliases (`alias e=env`)."""

    def __init__(self, args: Sequence[Word] | None) -> None:
        self.positional: list[list[Word]] = [list(args)] if args is not None else []
        self.values: dict[str, list[str]] = {}
        self.aliases: dict[str, list[str]] = {}

    def assign(self, word: str) -> None:
        name, _, value = word.partition("=")
        self.values.setdefault(name, []).append(value)

    def note(self, command: list[Word]) -> None:
        """The assignments, aliases and positional words a command makes."""
        program, rest = command[0], [w for w in command[1:] if w is not None]
        if program in _SETTERS:
            for word in rest:
                if _ASSIGNMENT.match(word):
                    self.assign(word)
        elif program == "alias":
            for word in rest:
                if _ASSIGNMENT.match(word):
                    name, _, value = word.partition("=")
                    self.aliases[name] = _split(value)
        elif program == "set" and rest and len(rest) == len(command) - 1:
            words = rest[rest.index("--") + 1 :] if "--" in rest else rest if not rest[0].startswith(("-", "+")) else None
            if words is not None:
                zero = self.positional[0][:1] if self.positional and self.positional[0] else ["sh"]
                self.positional.append([*zero, *words])

    def expanded(self, command: list[Word], depth: int = 0) -> list[list[Word]]:
        """The commands `command` stands for, its expansions put in (at most _MAX_EXPANSIONS)."""
        if command and command[0] in self.aliases and depth < 4:
            return self.expanded([*self.aliases[command[0]], *command[1:]], depth + 1)
        results: list[list[Word]] = [[]]
        for word in command:
            choices = self._word(word, 0)
            results = [[*done, *choice] for done in results for choice in choices][:_MAX_EXPANSIONS]
        return [result for result in results if result]

    def _word(self, word: Word, depth: int) -> list[list[Word]]:
        """What one word may expand to: its words for each value the script shows."""
        match = _EXPANSION.fullmatch(word) if word is not None else None
        if match is None or depth > 4:
            return [[word]]
        name = match.group(1) or match.group(2)
        default = match.group(3)
        if name in ("@", "*") or name.isdigit():
            if not self.positional:
                return [[word]]  # (a script file's argv: not shown)
            # (a word the module does not show stays the expansion: the command is not known)
            if name in ("@", "*"):
                return [argv[1:] if None not in argv[1:] else [word] for argv in self.positional]
            index = int(name)
            return [([argv[index]] if argv[index] is not None else [word]) if index < len(argv) else []
                    for argv in self.positional]
        if name not in self.values:
            # a variable the script does not set comes from the environment: a program the
            # scanner cannot judge is not reported (its default, `${PY:-python3}`, is judged)
            return [[word], list[Word](_split(default))] if default else [[word]]
        choices: list[list[Word]] = []
        for value in self.values[name]:
            if "$" not in value and "`" not in value:
                choices.append(list(_split(value)))
            elif _EXPANSION.fullmatch(value):
                choices.extend(self._word(value, depth + 1))
            else:
                choices.append([NOT_JUDGED])  # `cmd=$(...)`, `cmd="$a$b"`: the value is not shown
        return choices


def _split(text: str, punctuation: bool = False) -> list[str]:
    """Shell words, quotes removed; a script shlex cannot split (an open quote, as in a
    fragment) is split at blanks and operators."""
    return _split_exactly(text, punctuation)[0]


def _split_exactly(text: str, punctuation: bool = False) -> tuple[list[str], bool]:
    """_split's words, and whether shlex split them (not the fallback, where a word's
    quoted parts come apart: `"a"$(b)` is no command substitution in a command's place)."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=_OPERATORS + "<>" if punctuation else False)
        if punctuation:
            lexer.whitespace = " \t\r"  # a newline ends a command
        lexer.whitespace_split = True
        return list(lexer), True
    except ValueError:
        return re.findall(r"[;|&()<>\n]+|[^\s;|&()<>'\"]+", text), False


# ---- a child that only sets, unsets or mentions a variable

# Shell builtins that set the variables their `NAME=value` words name (`export NAME=16`),
# and the one that unsets the names it is given: neither reads the value the process has
_SETTERS = frozenset({"export", "readonly", "local", "declare", "typeset"})
_UNSETTERS = frozenset({"unset"})
# Reserved words a simple command may follow (`then NAME=16`)
_RESERVED = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
# Programs that only print or test the words they are given, never read a variable one
# names (`["echo", "set NAME to change paging"]`); judged so in an argv only, where
# nothing runs what they print (in a shell's script `echo NAME | sh` may)
_QUIET = frozenset({"echo", "printf", "true", "false", ":", "logger", "test", "["})
# What `env` unsets (`env -u NAME`), and its options that take a value read as a command
_ENV_UNSET = frozenset({"-u", "--unset"})


# A part of a word the module does not show, for Mentions: no name's character, so it is no
# part of a name and makes no word an assignment it starts (`f"SGLANG_PAGE_SIZE={n}"`)
NOT_SHOWN_MARK = "\2"
# Launchers of a remote or containerised child whose options give it a variable's value,
# never reading ours (`docker run -e NAME=16`): the option, and how it spells the variable:
#   one   NAME=VALUE in its value (`-e NAME=16`, `--env=NAME=16`); a bare NAME hands ours on
#   two   NAME, then VALUE (MPICH's `-genv NAME 16`)
#   list  NAME=VALUE items, comma-separated (`srun --export=ALL,NAME=16`); a bare NAME hands ours on
_CONTAINER_ENV = {"-e": "one", "--env": "one"}
_MPI_ENV = {"-x": "one", "-env": "two", "--env": "two", "-genv": "two", "--genv": "two"}
_SLURM_ENV = {"--export": "list"}
_MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "prterun", "oshrun", "mpiexec.hydra"})
_CHILD_SETTERS: dict[str, dict[str, str]] = {
    **dict.fromkeys(("docker", "podman", "nerdctl", "kubectl", "oc"), _CONTAINER_ENV),
    **dict.fromkeys(_MPI_LAUNCHERS, _MPI_ENV),
    **dict.fromkeys(("srun", "sbatch", "salloc"), _SLURM_ENV),
}
# ssh's options that take a value (the remote command is the words after the host, one
# command line for the remote shell)
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


class Mentions:
    """The identifiers a child's command spells, counted apart: `quiet`, where they only
    set, unset or mention a variable (an assignment's name, `export NAME=16`, `unset
    NAME`, `env NAME=16 cmd`, `env -u NAME`, a word `echo` is given in an argv), and
    `loud`, everywhere else (an expansion, an assignment's value, another program's word,
    a comment). A variable whose every occurrence is quiet is not read (silent)."""

    def __init__(self) -> None:
        self.quiet: Counter[str] = Counter()
        self.loud: Counter[str] = Counter()

    def add(self, text: str, quiet: bool) -> None:
        (self.quiet if quiet else self.loud).update(words_of(text))

    def merge(self, other: Mentions) -> None:
        self.quiet.update(other.quiet)
        self.loud.update(other.loud)

    def silent(self, names: Iterator[str] | Sequence[str] | set[str], spelled: Counter[str]) -> set[str]:
        """The names no child reads, of those the command's literal text spells
        `spelled[name]` times: every one of them quiet, none loud."""
        return {n for n in names if not self.loud[n] and self.quiet[n] and self.quiet[n] == spelled[n]}

    def command(self, words: Sequence[str], builtins: bool, argv: bool) -> None:
        """One simple command: leading assignments, then the program and its words
        (`builtins`: a shell's own commands, in a script; `argv`: an argv, whose
        quiet programs' words are mentions)."""
        index = 0
        while index < len(words) and (words[index] in _RESERVED if builtins else False):
            index += 1
        while builtins and index < len(words) and _ASSIGNMENT.match(words[index]):
            self._assignment(words[index])
            index += 1
        if index >= len(words):
            return
        program, rest = words[index], list(words[index + 1 :])
        self.add(program, quiet=False)
        name = program_name(program)
        if name == "env":
            self._env(rest, argv)
        elif builtins and name in _SETTERS:
            for word in rest:
                if _ASSIGNMENT.match(word):
                    self._assignment(word)
                else:
                    self.add(word, quiet=False)  # `export NAME` hands on the process's value
        elif builtins and name in _UNSETTERS:
            for word in rest:
                self.add(word, quiet=_WORD.fullmatch(word) is not None)
        elif argv and name in _QUIET:
            for word in rest:
                self.add(word, quiet=not any(mark in word for mark in "$`%\\"))
        elif name in _CHILD_SETTERS:
            self._child_setter(_CHILD_SETTERS[name], rest, kubectl=name in ("kubectl", "oc"))
        elif name == "ssh":
            self._ssh(rest)
        else:
            for word in rest:
                self.add(word, quiet=False)

    def _child_setter(self, options: Mapping[str, str], rest: list[str], kubectl: bool) -> None:
        """A launcher's words that give its remote or containerised child a value
        (_CHILD_SETTERS: `docker run -e NAME=16`, `mpirun -x NAME=16`, `srun
        --export=ALL,NAME=16`, `kubectl set env deploy/x NAME=16` or `NAME-`): the names are
        quiet, the values and every other word loud."""
        setting = kubectl and rest[:2] == ["set", "env"]
        pending = iter(rest)
        for word in pending:
            option, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
            shape = options.get(option)
            if shape is None:
                if setting and _ASSIGNMENT.match(word):
                    self._assignment(word)
                else:
                    self.add(word, quiet=setting and word.endswith("-") and _WORD.fullmatch(word[:-1]) is not None)
                continue
            self.add(option, quiet=False)
            value = inline if eq else next(pending, "")
            if shape == "two":
                self.add(value, quiet=_WORD.fullmatch(value) is not None)
                self.add(next(pending, ""), quiet=False)
                continue
            for item in value.split(",") if shape == "list" else [value]:
                if _ASSIGNMENT.match(item):
                    self._assignment(item)
                else:
                    self.add(item, quiet=False)  # `-e NAME`: our value handed on

    def _ssh(self, rest: list[str]) -> None:
        """`ssh [OPTION]... HOST [COMMAND...]`: the command is one line for the remote
        shell (`ssh host "NAME=16 python -m x"` sets NAME there), its mentions a script's."""
        index = 0
        while index < len(rest) and rest[index].startswith("-") and len(rest[index]) > 1:
            word = rest[index]
            self.add(word, quiet=False)
            index += 1
            if word == "--":
                break
            valued = next((j for j in range(1, len(word)) if word[j] in _SSH_VALUED), None)
            if valued is not None and valued == len(word) - 1 and index < len(rest):
                self.add(rest[index], quiet=False)
                index += 1
        if index < len(rest):
            self.add(rest[index], quiet=False)  # the host
        remote = " ".join(rest[index + 1 :])
        inner = script_mentions(remote) if remote else Mentions()
        if inner is None:
            self.add(remote, quiet=False)
        else:
            self.merge(inner)

    def _assignment(self, word: str) -> None:
        name, _, value = word.partition("=")
        self.add(name, quiet=True)
        self.add(value, quiet=False)  # `NAME=${NAME:-16}` reads it

    def _env(self, rest: list[str], argv: bool) -> None:
        """`env [OPTION]... [NAME=VALUE]... [COMMAND [ARG]...]`: what it unsets and
        sets is quiet, the command is judged in turn (a program, no shell builtin)."""
        while rest and rest[0].startswith("-") and rest[0] not in ("-", "--"):
            option = rest.pop(0)
            if option in _ENV_UNSET and rest:
                value = rest.pop(0)
                self.add(value, quiet=_WORD.fullmatch(value) is not None)
                continue
            unset = option.startswith("--unset=") or (option.startswith("-u") and not option.startswith("--"))
            if unset:
                value = option.partition("=")[2] if option.startswith("--") else option[2:]
                self.add(value, quiet=_WORD.fullmatch(value) is not None)
                continue
            self.add(option, quiet=False)
            if option in _ENV_VALUED and rest:
                self.add(rest.pop(0), quiet=False)  # `-S "..."`, `-C DIR`
        if rest and rest[0] == "--":
            rest.pop(0)
        while rest and _ASSIGNMENT.match(rest[0]):
            self._assignment(rest.pop(0))
        if rest:
            self.command(rest, builtins=False, argv=argv)


def script_mentions(script: str) -> Mentions | None:
    """The mentions of a shell script's simple commands (Mentions): every word, a
    comment's and a redirection's target too (loud); None where it cannot be split."""
    mentions = Mentions()
    try:
        lexer = shlex.shlex(script.replace("`", " ; "), posix=True, punctuation_chars=_OPERATORS + "<>")
        lexer.commenters = ""  # (`a#$NAME` is one word to a shell; a comment stays loud)
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    current: list[str] = []
    pending = iter(tokens)
    for token in pending:
        if token and all(ch in _OPERATORS + "<>" for ch in token):
            if any(ch in token for ch in "<>"):
                mentions.add(next(pending, ""), quiet=False)  # a redirection's target
                continue
            mentions.command(current, builtins=True, argv=False)
            current = []
        else:
            current.append(token)
    mentions.command(current, builtins=True, argv=False)
    return mentions


def argv_mentions(words: Sequence[str]) -> Mentions | None:
    """The mentions of a child's argv (every word shown): `env`'s assignments, a quiet
    program's words, a shell's `-c` script (script_mentions); None where a shell's
    script cannot be split."""
    mentions = Mentions()
    if not words:
        return mentions
    name = program_name(words[0])
    if name in _SHELLS:
        for index, word in enumerate(words):
            script = words[index + 1] if index + 1 < len(words) else None
            if index and word.startswith("-") and not word.startswith("--") and "c" in word[1:] and script is not None:
                inner = script_mentions(script)
                if inner is None:
                    return None
                mentions.merge(inner)
                for after in words[index + 2 :]:
                    mentions.add(after, quiet=False)  # `$0`, `$1`...: the script may read them
                return mentions
            mentions.add(word, quiet=False)
        return mentions
    mentions.command(list(words), builtins=False, argv=True)
    return mentions


def command_reads(command: tuple[str | None, ...] | str | None, declared: frozenset[str]) -> set[str]:
    """The declared variables one rebuilt command (an argv, None for a word not shown, or
    a command line) names and may read: those it only sets, unsets or mentions (Mentions,
    where every word is shown) left out. The same for a launch and a run helper's call."""
    if command is None:
        return set()
    texts = [command] if isinstance(command, str) else [w for w in command if w is not None]
    names = {name for text in texts for name in named_variables(text, declared)}
    if not names:
        return names
    found: Mentions | None = None
    if isinstance(command, str):
        found = script_mentions(command)
    elif None not in command:
        found = argv_mentions(texts)
    if found is None:
        return names
    spelled: Counter[str] = Counter()
    for text in texts:
        spelled.update(spellings(text, declared))
    return names - found.silent(names, spelled)

def plain_dump(words: Sequence[Word]) -> bool:
    """Is the argv `env` or `printenv` with nothing to run and no name (`["env"]`,
    `["printenv", "-0"]`, `["env", "A=1"]`): a dump of the child's own environment and
    nothing else (no `/proc`, no `ps`, no command)?"""
    if not words or any(word is None for word in words):
        return False
    name = program_name(words[0] or "")
    if name not in ("env", "printenv"):
        return False
    for word in words[1:]:
        assert word is not None
        if word in _ENV_VALUED or word in ("-", "--"):
            return False
        if not word.startswith("-") and not (name == "env" and _ASSIGNMENT.match(word)):
            return False
    return True


# ---- a child running a file: a shell script, a Makefile, a Python file, a program

# How a child runs the file a command names (the kinds of FlowFacts.children):
#   shell     a shell runs it as a script (`sh script.sh`, `bash -e script.sh`)
#   python    an interpreter runs it as Python, whatever its suffix (`[sys.executable, path]`)
#   make      make reads it as a Makefile (`make -f FILE`)
#   make_dir  make reads the Makefile of a folder (`make -C DIR`, or make in the folder)
#   program   it is the program: its first line (`#!/bin/sh`) says what runs it
# A file is a path spec: `@file` (the module's own file), `@here` (its folder), `@cwd`
# (the folder the child starts in, the project's unless `cwd=` says), each followed by
# `/`-separated parts, or an absolute path; "" for a file the module does not show.
ChildFile = tuple[str, str]  # (kind, path spec)
MAKES = frozenset({"make", "gmake", "gnumake", "bmake"})
# make's options that take a value in the next word (`-C DIR`, `-f FILE`, `-I DIR`)
_MAKE_VALUED = frozenset({"-C", "-f", "-I", "-o", "-W", "-O", "--directory", "--file", "--makefile", "--include-dir"})
# Programs that run their command with the words of their standard input after its own
# (`run(["xargs", "sh"], input=str(SCRIPT))` runs `sh SCRIPT`)
ARGUMENT_FEEDERS = frozenset({"xargs"})
# Programs that expand the variables their standard input names (a template on stdin)
_STDIN_TEMPLATES = frozenset({"envsubst"})
# Shell builtins that run a file in the shell itself (`. FILE`, `source FILE`)
_SOURCERS = frozenset({".", "source"})


def child_files(words: Sequence[Word], paths: Sequence[str | None], cwd: str = "@cwd", depth: int = 0) -> list[ChildFile]:
    """The files a child run with the argv `words` runs (their texts, None where the
    module does not show one), with `paths` the path spec each word gives (None where
    none): a shell's script, an interpreter's Python file, make's Makefile, a program
    named by a path. A script the module does not show is ("kind", ""); an inline
    script (`sh -c "..."`) is read for the commands it runs in turn."""
    if not words or depth > 8:
        return []
    program, rest, given = words[0], list(words[1:]), list(paths[1:])
    if program is None:
        spec = paths[0] if paths else None
        if spec is not None:
            return [("program", rebased(spec, cwd))]
        # a program found at run time (`os.environ.get("SHELL")`, a parameter) is judged
        # as an unknown wrapper is: what it does with the files it is given is not known
        return _opaque(given)
    name = program_name(program)
    if name in _SOURCERS:
        return [_file("shell", paths[1] if len(paths) > 1 else None, cwd)] if len(words) > 1 else []
    if name in WRAPPERS and name not in WRAPPING_SHELLS and not isinstance(WRAPPERS[name], Mapping):
        return _wrapped_files(words, paths, cwd, depth)
    if name in _SHELLS:
        return _shell_files(rest, given, cwd, depth)
    if _PYTHON.fullmatch(name):
        return _python_files(rest, given, cwd)
    if name in MAKES:
        return _make_files(rest, given, cwd)
    if name == "torchrun":  # (the console script of `python -m torch.distributed.run`)
        return _runner_files(_TORCH_RUN, rest, given, cwd)
    if name == "run-parts":
        return _run_parts(rest, given)
    if name == "find":
        return _found_runs(rest, given, cwd, depth)
    if name in BUILD_TOOLS and not (name == "cmake" and "-P" in rest):
        return _build_files(name, rest, given, cwd)
    if "/" in program or "\\" in program:
        spec = paths[0] if paths else None
        return [("program", rebased(spec, cwd) if spec is not None else "")]
    return _interpreted_files(name, rest, given, cwd)


# A folder's files run one by one: kind "each:KIND" (the files in it) or "tree:KIND" (the
# files under it, as `find` walks), each run as KIND (childfiles lists them)
_RUN_PARTS_VALUED = frozenset({"-u", "--umask", "-a", "--arg", "--regex"})
_RUN_PARTS_LISTING = frozenset({"--test", "--list"})  # (they print the names, run nothing)
_FIND_EXECS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FOUND = "@found"  # the path spec find puts for `{}`


def _run_parts(rest: list[Word], given: list[str | None]) -> list[ChildFile]:
    """`run-parts [OPTION]... DIR`: every file in DIR runs, as a program."""
    folder: str | None = None
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if word in _RUN_PARTS_LISTING:
            return []
        if word is not None and word.startswith("-"):
            index += 1 if word in _RUN_PARTS_VALUED else 0
            continue
        folder = given[index - 1] or ""
    return [("each:program", folder)] if folder is not None else []


def _found_runs(rest: list[Word], given: list[str | None], cwd: str, depth: int) -> list[ChildFile]:
    """`find [START]... EXPRESSION` with `-exec CMD {} ;` (`-execdir`, `-ok`): CMD runs
    with each file under the starting points (the folder it starts in where none is
    given); a file CMD runs otherwise (`-exec sh script.sh {} ;`) is its own."""
    index = 0
    while index < len(rest) and rest[index] in ("-H", "-L", "-P"):
        index += 1
    starts: list[str] = []
    while index < len(rest) and not (rest[index] or "").startswith(("-", "(", "!")):
        start = given[index]
        starts.append(rebased(start, cwd) if start else "")  # (a start not shown: "")
        index += 1
    starts = starts or [cwd]
    found: list[ChildFile] = []
    while index < len(rest):
        word = rest[index]
        index += 1
        if word not in _FIND_EXECS:
            continue
        end = next((j for j in range(index, len(rest)) if rest[j] in (";", "+")), len(rest))
        command, specs = rest[index:end], [_FOUND if w == "{}" else given[j] for j, w in enumerate(rest[index:end], index)]
        index = end + 1
        if command and command[0] == "{}":
            runs: list[ChildFile] = [("program", _FOUND)]
        else:
            runs = child_files(command, specs, cwd, depth + 1) if command else []
        for kind, spec in runs:
            found += [(f"tree:{kind}", start) for start in starts] if spec == _FOUND else [(kind, spec)]
    return found


# Build tools that run what a folder's build file says, by the file they read there
# (kind "build:TOOL", configbags.migrate.childfiles judges it): cmake's CMakeLists.txt
# (`$ENV{NAME}`, and the lists and .cmake files under it that it may take in), ninja's
# build.ninja (its rules' commands), the scripts of npm's, yarn's or pnpm's package.json
BUILD_TOOLS = {"cmake": "CMakeLists.txt", "ninja": "build.ninja", "npm": "package.json", "yarn": "package.json",
               "pnpm": "package.json"}
# their options that take the next word (`-B DIR`, `-j 8`); the folder's and the file's
_BUILD_VALUED = {
    "cmake": frozenset({"-S", "-H", "-B", "-G", "-T", "-A", "-D", "-U", "-C", "--preset", "--toolchain",
                        "--install-prefix", "--graphviz", "--log-level", "--log-context", "--trace-source",
                        "--trace-redirect", "--profiling-output", "--profiling-format", "--debug-find-pkg",
                        "--debug-find-var"}),
    "ninja": frozenset({"-C", "-f", "-j", "-k", "-l", "-d", "-t", "-w"}),
    "npm": frozenset({"--prefix", "-C", "--dir", "--cwd", "-w", "--workspace", "--filter", "-F"}),
}
_BUILD_FOLDER = {"cmake": frozenset({"-S", "-H"}), "ninja": frozenset({"-C"}),
                 "npm": frozenset({"--prefix", "-C", "--dir", "--cwd"})}
# cmake's modes that configure nothing (`cmake --build DIR` runs what a configure made)
_CMAKE_OTHER_MODES = frozenset({"--build", "--install", "-E", "--help", "--version", "--open", "--workflow"})
# cmake's options naming a script it runs first (`-C CACHE`, `--toolchain FILE`)
_CMAKE_SCRIPTS = frozenset({"-C", "--toolchain"})


def _build_files(name: str, rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """`cmake [-S DIR | DIR] [-B DIR]`, `ninja [-C DIR] [-f FILE]`, `npm run NAME` (in the
    folder it starts in, or `--prefix DIR`): the build file it reads, in the folder given
    (a relative one in the folder before) or the one it starts in; "" for a folder not shown."""
    valued = _BUILD_VALUED.get(name, _BUILD_VALUED["npm"])
    folder: str | None = cwd
    build_file: str | None = None
    found: list[ChildFile] = []
    index = 0
    while index < len(rest):
        word, spec = rest[index], given[index]
        index += 1
        if word is None or not word.startswith("-"):
            if name == "cmake":  # the source (or a build) folder; a target or a script's name else
                folder = rebased(spec, cwd) if spec else None
            continue
        if name == "cmake" and word in _CMAKE_OTHER_MODES:
            return found
        option, eq, inline = word.partition("=") if word.startswith("--") else (word[:2], "", word[2:])
        if option not in valued:
            continue
        if eq or inline:
            spec = literal_spec(inline)
        elif index < len(rest):
            spec, index = given[index], index + 1
        else:
            spec = None
        if option in _BUILD_FOLDER.get(name, _BUILD_FOLDER["npm"]):
            folder = rebased(spec, folder) if spec and folder else None
        elif name == "ninja" and option == "-f":
            build_file = spec or ""
        elif name == "cmake" and option in _CMAKE_SCRIPTS:
            found.append(_file("other:cmake", spec, cwd))
    if not folder:
        return [*found, ("build:" + name, "")]
    if build_file is not None:
        return [*found, ("build:" + name, rebased(build_file, folder) if build_file else "")]
    return [*found, ("build:" + name, f"{folder}/{BUILD_TOOLS[name]}")]


# Interpreters of other languages, by their program's name: the options whose value is the
# file they run (awk's `-f FILE`, `cmake -P FILE`), else () for the first operand (`perl
# FILE`); the file is judged by its words (and the marks of whole_environment_marks).
_INTERPRETERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), ("-f", "--file")),
    "jq": ("-f", "--from-file"), "cmake": ("-P",),
    **dict.fromkeys(("perl", "node", "nodejs", "ruby", "tclsh", "wish", "expect", "lua", "php", "rscript"), ()),
}
_INLINE_OPTIONS = frozenset({"-e", "-E", "-p", "--eval", "--print", "-c"})  # an inline program, no file
# Programs that read or move the files they are given as data, never run them
DATA_PROGRAMS = frozenset({
    "cat", "tac", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "wc", "sort", "uniq", "cut",
    "tr", "tee", "diff", "cmp", "comm", "file", "stat", "du", "ls", "cp", "mv", "rm", "ln", "install", "touch",
    "mkdir", "rmdir", "chmod", "chown", "chgrp", "tar", "gzip", "gunzip", "zcat", "xz", "zstd", "zip", "unzip",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "base64", "xxd", "od", "hexdump", "strings",
    "readlink", "realpath", "dirname", "basename", "test", "[", "echo", "printf", "rsync", "scp", "git",
    "sed", "patch", "dd", "truncate", "shred", "split", "csplit", "paste", "join", "nl", "fold", "fmt", "iconv",
    # compilers read their sources as data (the program they build is another child's file)
    "gcc", "g++", "cc", "c++", "clang", "clang++", "nvcc", "hipcc",
})


def _interpreted_files(name: str, rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """The file an interpreter of another language runs (`awk -f FILE`, `perl FILE`, `jq
    -n -f FILE`, `cmake -P FILE`, `node FILE`): ("other:NAME", spec), judged by its text;
    and, for a program the scanner cannot judge, each file it is given that the module
    places by `__file__` ("opaque", spec: `$?` where it is a file under the root). A
    program that reads its files as data (DATA_PROGRAMS) runs none."""
    if name in _INTERPRETERS:
        options = _INTERPRETERS[name]
        for index, word in enumerate(rest):
            if word is None:
                if not options:
                    return [_file("other:" + name, given[index], cwd)]
                continue
            if word in _INLINE_OPTIONS and not options:
                code = rest[index + 1] if index + 1 < len(rest) else None
                read = code is not None and code.startswith(READ_MARK)  # `perl -e F.read_text()`
                return [_file("other:" + name, (code or "")[len(READ_MARK) :], cwd)] if read else []
            if word in options or any(word.startswith(option + "=") for option in options if option.startswith("--")):
                value = word.partition("=")[2] if "=" in word else None
                spec = literal_spec(value) if value else (given[index + 1] if index + 1 < len(given) else None)
                return [_file("other:" + name, spec, cwd)]
            if not options and not word.startswith("-"):
                return [_file("other:" + name, given[index], cwd)]
        return []
    if name in DATA_PROGRAMS or name in _SHELLS or _PYTHON.fullmatch(name):
        return []
    return _opaque(given)


def _opaque(given: Sequence[str | None]) -> list[ChildFile]:
    """The files a program the scanner cannot judge is given that the module places by
    `__file__`: each is `$?` where it is a file under the root (childfiles)."""
    return [("opaque", spec) for spec in given if spec is not None and spec.startswith(("@file", "@here"))]


# What a word the module does not show stands for when a wrapper's words are walked: no
# option, no assignment (the walk works on text)
_NOT_SHOWN = "\0?"


def _env_command(rest: list[Word]) -> list[Word] | None:
    """The command `env` runs after its options and assignments; None where `-i` empties
    the child's environment first."""
    while rest and rest[0] is not None and (rest[0].startswith("-") or _ASSIGNMENT.match(rest[0])):
        if rest[0] in _ENV_EMPTIED:
            return None
        rest = rest[1:]
    return rest


def _wrapped(words: Sequence[Word]) -> list[Word] | str | None:
    """What a process wrapper other than `env` (whose `-i` empties the environment) runs:
    the words of its command, or its shell's script; None for no such wrapper."""
    name = program_name(words[0] or "")
    if name == "env" or name in WRAPPING_SHELLS or not isinstance(WRAPPERS.get(name), Wrapper):
        return None
    unwrapped = unwrap([_NOT_SHOWN if word is None else word for word in words])
    if unwrapped.script is not None:
        return unwrapped.script[1]
    return list(words[unwrapped.start :]) if 0 < unwrapped.start < len(words) else []


def _wrapped_files(words: Sequence[Word], paths: Sequence[str | None], cwd: str, depth: int) -> list[ChildFile]:
    """The files the command a process wrapper runs runs (`timeout 10 sh SCRIPT`, `nice
    -n 5 SCRIPT`, `flock LOCK sh SCRIPT`, `env -u FOO sh -c '...'`): the walk of the one
    wrapper table the launch lines use too (configbags.evolve.wrappers)."""
    unwrapped = unwrap([_NOT_SHOWN if word is None else word for word in words])
    if unwrapped.script is not None:
        return script_files(unwrapped.script[1], cwd, depth + 1)
    if unwrapped.start == 0 or unwrapped.start >= len(words):
        return []
    return child_files(words[unwrapped.start :], paths[unwrapped.start :], cwd, depth + 1)


def stdin_reader(words: Sequence[Word], depth: int = 0) -> str | None:
    """Does a child run with the argv `words` read its program on its standard input:
    "shell" (`sh`, `bash -s`, `sh -e`), "python" (`python`, `python -`), else None (a
    script or `-c` code named on the command line, another program, a word not shown)?"""
    if not words or words[0] is None or depth > 8:
        return None
    name = program_name(words[0])
    rest = list(words[1:])
    if name in ARGUMENT_FEEDERS:
        return None  # its standard input is its command's words, not a program
    inner = _wrapped(words)
    if isinstance(inner, list):  # `timeout 60 sh`, `flock LOCK python -`
        return stdin_reader(inner, depth + 1)
    if name == "env":
        command = _env_command(rest)
        return stdin_reader(command, depth + 1) if command is not None else None
    shell, python = name in _SHELLS, _PYTHON.fullmatch(name) is not None
    if not shell and not python:  # `envsubst`: every `$NAME` of its input is read; make's, perl's programs
        return "other:" + name if name in _STDIN_TEMPLATES else _other_stdin_reader(name, rest)
    if shell:
        index, letters = shell_options(rest)
        # `bash -s ARG...`: the script on stdin, then its arguments; else the script named
        return "shell" if "c" not in letters and ("s" in letters or index >= len(rest)) else None
    while rest:
        word = rest.pop(0)
        if word is None:
            return None
        if word in _PYTHON_VALUED:
            if rest:
                rest.pop(0)
        elif word == "-":
            return "python"
        elif word.startswith("-") and not word.startswith("--") and len(word) > 1:
            if word.endswith(("c", "m")):
                return None
        elif not word.startswith("--"):
            return None  # the script or file it runs
    return "python"


def _other_stdin_reader(name: str, rest: list[Word]) -> str | None:
    """`make -f -`: "make", the Makefile on stdin; `perl`, `tclsh`, `node -` with no inline
    program nor file named: "other:NAME", the program on stdin."""
    if name not in MAKES and (name not in _WHOLE_ENV_WORDS or _INTERPRETERS.get(name, ("",))):
        return None
    if name in MAKES:
        pairs = itertools.pairwise([*rest, None])  # each word and the one after it (`-f -`)
        fed = any(w in ("-f-", "--file=-", "--makefile=-") or (w in ("-f", "--file", "--makefile") and n == "-") for w, n in pairs)
        return "make" if fed else None
    named = [w for w in rest if w is None or w in _INLINE_OPTIONS or w == "-r" or not w.startswith("-")]
    return "other:" + name if not named or named == ["-"] else None


def rebased(spec: str, cwd: str) -> str:
    """`spec` with the child's folder put for `@cwd` ("" where that folder is not shown)."""
    if not spec.startswith("@cwd"):
        return spec
    return cwd + spec[len("@cwd") :] if cwd else ""


def _file(kind: str, spec: str | None, cwd: str) -> ChildFile:
    return (kind, rebased(spec, cwd) if spec else "")


def _shell_files(rest: list[Word], given: list[str | None], cwd: str, depth: int) -> list[ChildFile]:
    """`sh [OPTION]... SCRIPT [ARG]...`, or `sh -c SCRIPT`, whose commands are read in turn
    (the shell's own option grammar: `bash -euo pipefail SCRIPT`, evolve.wrappers.shell_options)."""
    index, letters = shell_options(rest)
    if "s" in letters or index >= len(rest):
        return []  # the script comes on its standard input
    if "c" in letters:
        script = rest[index]
        return script_files(script, cwd, depth + 1) if script is not None else []  # (a file's text too)
    return [_file("shell", given[index], cwd)]  # by a path the module builds, or a word not shown


def _python_files(rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """`python [OPTION]... FILE [ARG]...`; `-c CODE` runs no file named here (but the
    ones its code runs), `-m MODULE` the module's (module_files)."""
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            return [_file("python", given[index], cwd)]
        if word in _PYTHON_VALUED:
            index += 2
            continue
        if word == "-m" or (word.startswith("-") and not word.startswith("--") and word.endswith("m")):
            module = rest[index + 1] if index + 1 < len(rest) else None
            return module_files(module, rest[index + 2 :], given[index + 2 :], cwd) if module is not None else []
        if word.startswith("-") and not word.startswith("--") and word.endswith("c"):
            code = rest[index + 1] if index + 1 < len(rest) else None
            if code is not None and code.startswith(READ_MARK):  # `-c TOOL.read_text()`: the file's code
                return [_file("python", code[len(READ_MARK) :], cwd)]
            if code is None:
                return []
            # `-c "...runpy.run_path(sys.argv[1])" FILE`: the code runs a file its argv names
            handed = [_file("python", spec, cwd) for spec in given[index + 2 :]] if _RUNS_ARGV.search(code) else []
            return _executed_files(code, cwd) + handed
        if not word.startswith("-") or word == "-":
            return [] if word == "-" else [_file("python", given[index], cwd)]
        index += 1
    return []


class _Runner(NamedTuple):
    """How a module run by `python -m` that runs a Python file takes its words: its
    options, then the file (or, after a module option, a module), then the file's own."""

    valued: frozenset[str] = frozenset()  # its options that take the next word
    bare: frozenset[str] | None = None  # instead: the options that take none (every other takes one)
    module: frozenset[str] = frozenset()  # options that make the operand a module (`cProfile -m MOD`)
    program: frozenset[str] = frozenset()  # options that make it a program (`torchrun --no-python`)
    modules: bool = False  # its operand is always a module (`python -m runpy MOD`)

    def takes(self, option: str) -> bool:
        return option not in self.bare if self.bare is not None else option in self.valued


def _options(names: str) -> frozenset[str]:
    return frozenset(names.split())


# torchrun's parser (argparse, `_` and `-` both): nearly every option takes a value, so the
# ones that take none are listed
_TORCH_RUN = _Runner(
    bare=_options("-h --help --standalone -m --module --no_python --no-python --run_path --run-path --use_env "
                  "--use-env --virtual-local-rank --virtual_local_rank"),
    module=_options("-m --module"), program=_options("--no_python --no-python"),
)
_PROFILER = _Runner(_options("-o --outfile -s --sort"), module=_options("-m"))
# Modules that run the Python file (or module) their words name, in the process they start
RUNNER_MODULES: Mapping[str, _Runner] = {
    "torch.distributed.run": _TORCH_RUN, "torch.distributed.launch": _TORCH_RUN,
    "cProfile": _PROFILER, "profile": _PROFILER,
    "trace": _Runner(_options("-f --file -C --coverdir --ignore-module --ignore-dir"), module=_options("--module")),
    "pdb": _Runner(_options("-c --command"), module=_options("-m")),
    # (runpy's own `__main__`: the module its first word names, as `python -m MOD`)
    "runpy": _Runner(bare=frozenset(), modules=True),
}
# Modules that run no file of their words (they install, serve or read them as data)
_DATA_MODULES = frozenset({
    "pip", "venv", "ensurepip", "http.server", "json.tool", "compileall", "py_compile", "zipfile", "tarfile",
    "gzip", "base64", "site", "sysconfig", "dis", "tokenize", "ast", "pickletools", "webbrowser", "uuid",
})
# A module run by `python -m` whose file the tree's scan looks for (childfiles): its
# dotted path under the folder the child starts in; and the files handed to a module that
# is not the project's, judged as an unknown program's where it is none (its spec after `|`)
PYTHON_MODULE = "pymodule"
MODULE_ARGUMENT = "module_arg"


def module_files(module: str, rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """`python -m MODULE [ARG]...`: a runner module's file (RUNNER_MODULES); else the
    module's own file where the project has it (`python -m scripts.run` in the project's
    folder: ("pymodule", the dotted path as a path spec), judged by childfiles), and where it
    has none, the files handed to it that the module places by `__file__` are judged as an
    unknown program's are (deny by default, as `torchrun FILE`), unless it runs no file."""
    runner = RUNNER_MODULES.get(module)
    if runner is not None:
        return _runner_files(runner, rest, given, cwd)
    if any(module == data or module.startswith(data + ".") for data in _DATA_MODULES):
        return []
    path = module.replace(".", "/")
    # (a folder not shown, `cwd=workdir`: a module of that name anywhere under the project)
    spec = rebased(f"@cwd/{path}", cwd) if cwd else f"{ANY_FOLDER}/{path}"
    return [(PYTHON_MODULE, spec), *((f"{MODULE_ARGUMENT}|{spec}", file) for _, file in _opaque(given))]


def _runner_files(runner: _Runner, rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """The file (or module) a runner module runs, after its options: `$?` where the
    module does not show it."""
    index = 0
    as_module, as_program = runner.modules, False
    while index < len(rest) and not runner.modules:
        word = rest[index]
        if word is None or word == "-" or not word.startswith("-"):
            break
        index += 1
        if word == "--":
            break
        name, eq, _ = word.partition("=")
        as_module = as_module or name in runner.module
        as_program = as_program or name in runner.program
        attached = not word.startswith("--") and len(word) > 2  # `-r3`, `-o/tmp/x`: a short option's value
        if not eq and not attached and runner.takes(name):
            index += 1
    if index >= len(rest):
        return []  # (`-h`: runs nothing)
    if as_program:
        # `--no-python python3 S`: the program and its words are a command of their own
        return child_files(rest[index:], given[index:], cwd)
    if as_module:
        module = rest[index]
        return module_files(module, rest[index + 1 :], given[index + 1 :], cwd) if module is not None else [(PYTHON_MODULE, "")]
    return [_file("python", given[index], cwd)]


# `-c` code that runs code a word of its argv may name (`runpy.run_path(sys.argv[1])`,
# `exec(open(sys.argv[1]).read())`): each word after it is a Python file it may run
_RUNS_ARGV = re.compile(r"(?=[\s\S]*\bargv\b)[\s\S]*\b(?:exec|execfile|run_path|run_module|compile|import_module|__import__"
                        r"|spec_from_file_location|SourceFileLoader|load_source)\b")
# A file whose text `-c` code runs (`exec(open(FILE).read())`, `runpy.run_path(FILE)`)
_EXECUTED = re.compile(r"""(?:exec\(\s*open|run_path)\(\s*['"]([^'"]+)['"]""")


def _executed_files(code: str, cwd: str) -> list[ChildFile]:
    """The files a Python child's `-c` code runs as Python (`python -c "exec(open('{HERE}/x').read())"`)."""
    return [_file("python", literal_spec(path), cwd) for path in _EXECUTED.findall(code)]


def _make_files(rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """`make [-C DIR] [-f FILE]... [TARGET | NAME=VALUE]...`: the Makefiles it reads (a
    relative FILE is in DIR)."""
    folder = cwd
    files: list[str | None] = []
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            if given[index] is None:
                return [("make", "")]
            index += 1  # a target named by a path
            continue
        option, _, inline = word.partition("=") if word.startswith("--") else (word[:2], "", word[2:])
        value: str | None = None
        if option in _MAKE_VALUED and (inline or (word.startswith("--") and "=" in word)):
            value = literal_spec(inline)
        elif word in _MAKE_VALUED:
            index += 1
            value = given[index] if index < len(rest) else None
        index += 1
        if option in ("-C", "--directory"):
            folder = rebased(value, folder) if value else ""  # (a relative DIR is in the one before)
        elif option in ("-f", "--file", "--makefile"):
            files.append(value)
    if not folder:
        return [("make", "")]
    if not files:
        return [("make_dir", folder)]
    return [("make", rebased(spec, folder) if spec else "") for spec in files]


# Marks a path spec inside a command line (a path formatted into an f-string)
PATH_MARK = "\0"
# Marks a word or command line that is a file's text (`["sh", "-c", SCRIPT.read_text()]`,
# `os.system(fh.read())`): the mark, then the file's path spec ("" for one not shown); the
# child runs the file as the kind of code the word is (a shell's script, Python's `-c`)
READ_MARK = "\1"


def literal_spec(text: str) -> str | None:
    """The path spec a literal word gives: absolute, or relative to the child's folder
    (a word that starts with a spec, PATH_MARK first, is that spec)."""
    if text.startswith(PATH_MARK):
        return text[len(PATH_MARK) :]
    if not text or "$" in text or "`" in text:
        return None
    return text if text.startswith("/") else "@cwd/" + text


def _fed_files(script: str, cwd: str) -> list[ChildFile]:
    """The files a script's commands feed a shell or Python child on its standard input:
    `cat FILE | sh`, `sh < FILE`, `python - < FILE`; the child runs the file."""
    found: list[ChildFile] = []
    current: list[str] = []
    fed: str | None = None  # the file the command's standard input comes from
    printed: str | None = None  # the file the previous command of a pipe prints (`cat FILE |`)
    pending = iter(_split(script.replace("`", " ; "), punctuation=True))
    for token in pending:
        if token == "<":
            fed = next(pending, None)
            continue
        if _REDIRECTION.fullmatch(token) and ">" in token:
            next(pending, None)  # an output redirection's target
            continue
        if token and all(ch in _OPERATORS for ch in token):
            reader = stdin_reader(current) if current else None
            source = fed or (printed if fed is None else None)
            if reader is not None and source is not None:
                found.append(_file(reader, literal_spec(source), cwd))
            printed = current[1] if token == "|" and len(current) == 2 and current[0] == "cat" else None
            current, fed = [], None
            continue
        if not current and _ASSIGNMENT.match(token):
            continue
        current.append(token)
    reader = stdin_reader(current) if current else None
    source = fed or printed
    if reader is not None and source is not None:
        found.append(_file(reader, literal_spec(source), cwd))
    return found


def script_files(script: str, cwd: str = "@cwd", depth: int = 0) -> list[ChildFile]:
    """The files the simple commands of a shell script run (`bash tools/show.sh`, `make
    -C mk`, `python tools/dump.txt`): every word literal, relative to `cwd`; a word
    built from a variable (`bash $DIR/x.sh`) is a file not shown. A script that is a
    file's text (READ_MARK) runs that file."""
    if script.startswith(READ_MARK):
        return [_file("shell", script[len(READ_MARK) :], cwd)]
    found: list[ChildFile] = []
    folders = [cwd]  # a `cd DIR` adds the folder the commands after it may run in
    for command in shell_commands(script):
        if command[0] == "cd" and len(command) == 2:
            spec = literal_spec(command[1]) if command[1] is not None else None
            folders.append(rebased(spec, folders[-1]) if spec else "")
            continue
        specs = [literal_spec(w) if w is not None else None for w in command]
        for folder in dict.fromkeys(folders):
            found += child_files(command, specs, folder, depth)
    for folder in dict.fromkeys(folders):
        found += _fed_files(script, folder)
    return list(dict.fromkeys(found))


# ---- the text of a file a child runs, judged

# tools that run a script with Python from its shebang (`#!/usr/bin/env -S uv run --script`)
_PYTHON_RUNNERS = frozenset({
    "uv", "uvx", "pipx", "pdm", "poetry", "hatch", "rye", "pipenv", "pixi", "conda", "mamba", "micromamba",
})
# launchers that run their script argument with Python, and the subcommand that does
# (`#!/usr/bin/env -S torchrun --nproc_per_node=8`, `deepspeed`, `accelerate launch`);
# torchrun's `--no-python` runs it as a program instead
_PYTHON_LAUNCHERS: Mapping[str, str] = {"torchrun": "", "deepspeed": "", "accelerate": "launch"}
# what makes a Makefile hand every variable over (its names, or a shell's dump)
_MAKE_WHOLE = (".VARIABLES",)


def run_by(data: bytes) -> tuple[str, str]:
    """What runs a program file: (kind, interpreter) from its first line; a text file
    without one is run by a shell (as `os.system` or a shell's exec would), a file that is
    not text is "binary"."""
    if not data.startswith(b"#!"):
        head = data[:4096]
        return ("binary", "") if b"\0" in head or _undecodable(head) else ("shell", "")
    words = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    at = unwrap(words).start  # (the program its wrappers run: `env -S nice -n 5 torchrun`)
    name = program_name(words[at]) if at < len(words) else "sh" if not words else ""
    rest = words[at + 1 :]
    if name == "env":
        while rest and rest[0].startswith("-"):
            rest.pop(0)
        name = program_name(rest[0]) if rest else ""
    if is_shell(name):
        return "shell", name
    if is_python(name) or name in _PYTHON_RUNNERS or _launches_python(name, rest):
        return "python", name
    if name in MAKES:
        return "make", name
    return "other", name


def _launches_python(name: str, rest: list[str]) -> bool:
    """Does a launcher (_PYTHON_LAUNCHERS) given these words run its script with Python?"""
    subcommand = _PYTHON_LAUNCHERS.get(name)
    if subcommand is None or any(word in _TORCH_RUN.program for word in rest):
        return False
    return not subcommand or next((word for word in rest if not word.startswith("-")), "") == subcommand


def _undecodable(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # (a character cut at the end of the head is text)
    return False


def text_reads(
    kind: str, interpreter: str, text: str, declared: frozenset[str], python_reads_whole: Callable[[str], bool]
) -> tuple[list[str], bool]:
    """What a file's text run as `kind` reads: the declared variables it names as whole
    words (a shell's script: save those it only sets, unsets or mentions, Mentions), and
    whether it hands the whole environment back (`env`, `export -p`, `${!PREFIX*}`,
    make's `$(.VARIABLES)`, another language's marks, Python using it whole)."""
    names = named_variables(text, declared)
    if kind == "shell" and names:
        mentions = script_mentions(text)
        if mentions is not None:
            silent = mentions.silent(names, words_of(text))
            names = [name for name in names if name not in silent]
    if kind == "make":
        recipes = "\n".join(line.lstrip("\t@-+") for line in text.split("\n") if line.startswith("\t"))
        whole = any(mark in text for mark in _MAKE_WHOLE) or shell_prints_environment(recipes, python_reads_whole)
    elif kind == "other":
        whole = program_prints_environment(interpreter, text, python_reads_whole)
    elif kind == "python":
        whole = python_reads_whole(text)
    else:
        whole = shell_prints_environment(text, python_reads_whole)
    return names, whole


# ---- files the module writes: a launch script written at run time, then run

# Callables that put another file's bytes at the path given second (`shutil.copy(src, DST)`)
_COPIERS = frozenset({
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename", "os.replace", "os.link",
    "os.symlink", "urllib.request.urlretrieve",
})
_OPENERS = frozenset({"open", "io.open", "builtins.open", "codecs.open"})
# Path methods that put other bytes at the receiver, or at the path given
_LINKED_HERE = frozenset({"symlink_to", "hardlink_to"})
_MOVED_THERE = frozenset({"rename", "replace"})
Chain = list[ast.AST]


class ModuleWrites:
    """The files a module writes, by path spec (childenv.child_files' specs), each with
    the texts written to it: a literal or constant the module shows (`p.write_text(T)`,
    `p.write_bytes(b"...")`, `with open(P, "w") as fh: fh.write(T)`, `open(P, "w").write(T)`),
    None for one it does not (a parameter, `print(..., file=fh)`, the handle handed on, a
    copy or move of another file there, `os.open`). `spec(expr, chain)` is the path spec
    of an expression inside the scope nodes `chain`, `text(expr, chain)` its string, and
    `callee(expr)` the dotted paths a callable may be."""

    def __init__(
        self,
        tree: ast.Module,
        spec: Callable[[ast.expr, Chain], str | None],
        text: Callable[[ast.expr, Chain], str | None],
        callee: Callable[[ast.expr], frozenset[str]],
    ) -> None:
        self._spec, self._text, self._callee = spec, text, callee
        self.texts: dict[str, list[str | None]] = {}
        self._handled: set[int] = set()  # open calls whose writes a `with` or `.write` accounts for
        self._walk(tree, [])

    def _walk(self, node: ast.AST, chain: Chain) -> None:
        for child in ast.iter_child_nodes(node):
            inner = [*chain, child] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) else chain
            if isinstance(child, (ast.With, ast.AsyncWith)):
                self._with(child, chain)
            elif isinstance(child, ast.Call):
                self._call(child, chain)
            self._walk(child, inner)

    def _add(self, target: ast.expr | None, chain: Chain, text: str | None) -> None:
        spec = self._spec(target, chain) if target is not None else None
        if spec is not None:
            self.texts.setdefault(spec, []).append(text)

    def _data(self, expr: ast.expr | None, chain: Chain) -> str | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, bytes):
            return expr.value.decode("utf-8", "surrogateescape")
        return self._text(expr, chain) if expr is not None else None

    def _opened(self, call: ast.expr, chain: Chain) -> ast.expr | None:
        """The path an `open(P, mode)` or `P.open(mode)` call opens for writing (a mode
        with `w`, `a`, `x` or `+`, or one not shown); None for a read or no open."""
        if not isinstance(call, ast.Call):
            return None
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "open" and not (self._callee(func) & {"os.open", "io.open"}):
            target, mode = func.value, call.args[0] if call.args else None
        elif (isinstance(func, ast.Name) and func.id == "open") or self._callee(func) & _OPENERS:
            if not call.args:
                return None
            target, mode = call.args[0], call.args[1] if len(call.args) > 1 else None
        else:
            return None
        mode = mode or next((k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None:
            return None  # read
        shown = self._text(mode, chain)
        return target if shown is None or any(ch in shown for ch in "wax+") else None

    def _with(self, node: ast.With | ast.AsyncWith, chain: Chain) -> None:
        """`with open(P, "w") as fh:` whose body only calls `fh.write(T)`: the texts in order."""
        for item in node.items:
            target = self._opened(item.context_expr, chain)
            if target is None:
                continue
            self._handled.add(id(item.context_expr))
            handle = item.optional_vars
            if not isinstance(handle, ast.Name):
                self._add(target, chain, None)
                continue
            uses = [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == handle.id]
            writes = [
                n for stmt in node.body for n in ast.walk(stmt)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "write"
                and isinstance(n.func.value, ast.Name) and n.func.value.id == handle.id and len(n.args) == 1
            ]
            texts = [self._data(call.args[0], chain) for call in writes]
            whole = None if len(writes) != len(uses) or None in texts else "".join(t or "" for t in texts)
            self._add(target, chain, whole)

    def _call(self, call: ast.Call, chain: Chain) -> None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in ("write_text", "write_bytes"):
                data = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "data"), None)
                self._add(func.value, chain, self._data(data, chain))
                return
            opened = self._opened(func.value, chain) if func.attr == "write" else None
            if opened is not None:  # `open(P, "w").write(T)`
                self._handled.add(id(func.value))
                self._add(opened, chain, self._data(call.args[0], chain) if len(call.args) == 1 else None)
                return
            if func.attr in _LINKED_HERE:
                self._add(func.value, chain, None)
            elif func.attr in _MOVED_THERE and call.args:
                self._add(call.args[0], chain, None)
        callee = self._callee(func)
        if callee & _COPIERS and len(call.args) > 1:
            self._add(call.args[1], chain, None)
        elif "os.open" in callee and call.args:
            self._add(call.args[0], chain, None)
        elif id(call) not in self._handled:
            target = self._opened(call, chain)
            if target is not None:
                self._add(target, chain, None)  # a handle kept, handed on: what it writes is not shown


# ---- the folders a module changes into: a child it starts may start in any of them

# What changes the process's folder (`os.chdir(HERE)`, `with contextlib.chdir(D):`), and
# what changes it into the folder a descriptor is (`os.fchdir(fd)`: a folder not shown)
_CHDIRS = frozenset({"os.chdir", "contextlib.chdir", "posix.chdir"})
_FCHDIRS = frozenset({"os.fchdir", "posix.fchdir"})
# The folder a child starts in where the module changes into one it does not show: a
# relative path in it is `$?` where it may name a file under the root (childfiles)
ANY_FOLDER = "@any"


def changed_folders(
    tree: ast.Module, spec: Callable[[ast.expr, Chain], str | None], callee: Callable[[ast.expr], frozenset[str]]
) -> list[str]:
    """The folders the module changes into, anywhere in it (a may-change: the scanner does
    not follow the order of calls), as path specs (ANY_FOLDER for one it does not show):
    `spec(expr, chain)` is the path spec of an expression inside the scope nodes `chain`,
    `callee(expr)` the dotted paths a callable may be."""
    found: list[str] = []

    def walk(node: ast.AST, chain: Chain) -> None:
        for child in ast.iter_child_nodes(node):
            inner = [*chain, child] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) else chain
            if isinstance(child, ast.Call) and child.args:
                paths = callee(child.func)
                if paths & _CHDIRS:
                    found.append(spec(child.args[0], chain) or ANY_FOLDER)
                elif paths & _FCHDIRS:
                    found.append(ANY_FOLDER)
            walk(child, inner)

    walk(tree, [])
    return list(dict.fromkeys(found))
