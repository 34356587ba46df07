"""The environment read outside Python, where the module spells it: the command of a child
process (`subprocess.run(["sh", "-c", "echo $SGLANG_PAGE_SIZE"])`, `os.system("...
${SGLANG_PAGE_SIZE}")`, every launcher of LAUNCHERS, which says where each takes its
command) whose literal text names a declared variable, and C's `getenv` called through
ctypes (configbags.migrate.reflection follows the library objects). The program a shell or
Python child reads on its standard input (stdin_reader) is judged as its `-c` script.

A command names a variable when the variable's name occurs in it as a whole word, however
the child reads it (`$NAME`, `${NAME}`, `%NAME%`, `printenv NAME`, `python -c
"...environ['NAME']..."`). The literal text is every string or bytes literal in the
command's arguments (list and tuple elements, each side of a `+`, the literal parts of an
f-string, the arguments and receiver of a call in it: `textwrap.dedent(...)`, `"...".strip()`)
and what the names in it are bound to one step away (module constants and top-level lists,
a dict constant subscripted literally, a class attribute or `self.cmd` its methods assign,
a parameter's default, another module's constant: configbags.migrate.doors.ModuleStrings),
but never the child's environment: the
`env=` keyword and mapping arguments (`os.execve(path, args, {"NAME": "1"})`) set
variables, they do not read them. A command the module does not show (a parameter, a
template from elsewhere, `shell=True` with a name) is not reported: that would flag every
child process.

A child that runs a file (a shell's script, an interpreter's Python file, make's Makefile,
a program by its path) is read through the file: child_files says which files a command
runs, as path specs the module's analysis keeps (FlowFacts.children), and
configbags.migrate.childfiles reads them where the tree's scan knows their place.

A child that prints the whole environment back reads every variable (prints_environment):
`env`/`printenv` with no name, `export -p`, `declare -x`, a bare `set`, `ps e`, a read of
`/proc/.../environ`, as the command `env` or a wrapper (`exec`, `nohup`) runs, or any
simple command of a shell's script (shell_commands), and a Python child whose `-c` code
uses the environment whole. So does a shell child reading a variable by a name it builds
(`eval`, `${!name}`, `printenv "$0$1"`, `declare -n`): the names are not in its text."""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence

from configbags.evolve.wrappers import SHELLS as WRAPPING_SHELLS
from configbags.evolve.wrappers import WRAPPERS, Wrapper, unwrap

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
    for one not shown) or an expression giving a command line or an argv."""
    shape = launcher_shape(path)
    if shape == "program":
        return [list(args)]
    if shape == "loop_exec":
        return [list(args[1:])] if len(args) > 1 else []
    if shape == "loop":
        return [args[1]] if len(args) > 1 else []
    if shape in ("exec", "spawn", "argv"):
        return list(_exec_argv(shape, path, args))
    if shape == "command":
        command = args[0] if args else next((k.value for k in keywords if k.arg in ("args", "cmd", "command")), None)
        return [command] if command is not None else []
    return []


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
    return [[program, None]] if vector is not None else []


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
    while pending:
        expr = pending.pop()
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
    return sorted(declared.intersection(_WORD.findall(text)))


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
# The program a word names, spelled as a path or not (`/usr/bin/env`, `python3.11`)
_PYTHON = re.compile(r"(?:python|pypy)[\d.]*")
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
}
# ... or is, as the whole inline program (`jq -n env`: the environment as an object)
_WHOLE_ENV_PROGRAMS = {"jq": ("env",)}
# The process's environment read as a file (`/proc/self/environ`, `/proc/$$/environ`)
_PROC_ENVIRON = re.compile(r"/proc/\S*environ")
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
    name = program_name(words[0])
    rest = list(words[1:])
    if _builds_a_name(name, rest) or (name == "ps" and _ps_prints(rest)):
        return True
    inner = _wrapped(words)
    if inner is not None:  # `timeout 5 env`, `nice -n 5 sh -c 'env'`
        if isinstance(inner, str):
            return shell_prints_environment(inner, python_reads_whole, depth + 1)
        return prints_environment(inner, python_reads_whole, depth + 1)
    if name == "env":
        return _env_prints(rest, python_reads_whole, depth)
    if name in _SHELLS:
        for index, word in enumerate(rest):
            if word is None or not word.startswith("-") or word.startswith("--"):
                return False  # `bash script.sh`: a script the module does not show
            if "c" in word[1:] and index + 1 < len(rest):
                script = rest[index + 1]
                return script is not None and shell_prints_environment(script, python_reads_whole, depth + 1)
        return False
    if _PYTHON.fullmatch(name):
        return _python_prints(rest, python_reads_whole)
    if name in _WHOLE_ENV_WORDS:
        marks, programs = _WHOLE_ENV_WORDS[name], _WHOLE_ENV_PROGRAMS.get(name, ())
        return any(word is not None and (word in programs or any(m in word for m in marks)) for word in rest)
    if name in _LISTERS:
        return any(word is not None and word.startswith("-") and ("e" in word or "v" in word) for word in rest)
    options = [word for word in rest if word is not None and word.startswith("-")]
    if name not in _DUMPERS or len(options) < len(rest):
        return False  # a name to print, an assignment, or a word not shown
    if name == "set":
        return not options  # `set -e` sets options; `set` alone lists every variable
    # `printenv -0`, `export -p`, `declare -x`, `declare -p`, `typeset -x`
    return name in ("printenv", "export") or all(set(word[1:]) <= set("xpr") for word in options)


def _builds_a_name(name: str, rest: list[Word]) -> bool:
    """Does the command read a variable by a name it builds at run time: `eval` (`eval
    "echo \\$$0$1"`), `printenv "$0$1"`, `declare -n v="$1"` (a reference by name)? Or
    read the process's environment as a file (`cat /proc/self/environ`)?"""
    if name == "eval" or any(word is not None and _PROC_ENVIRON.search(word) for word in rest):
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
    """`python [OPTION]... -c CODE`: the code uses the environment whole."""
    while rest:
        word = rest.pop(0)
        if word is None or not word.startswith("-") or word == "-m":
            return False
        if word in _PYTHON_VALUED:
            if rest:
                rest.pop(0)
        elif word.endswith("c") and not word.startswith("--"):
            return bool(rest) and rest[0] is not None and python_reads_whole(rest[0])
    return False


def shell_prints_environment(script: str, python_reads_whole: Callable[[str], bool], depth: int = 0) -> bool:
    """Does any simple command of a shell script print the whole environment back
    (`env | grep X`, `cd /tmp && FOO=1 env > out`, `echo $(env)`, `export -p`), or
    reach variables by a prefix (`${!SGLANG_*}`, `compgen -e`), or run an inline program
    that walks the environment (awk's ENVIRON, perl's %ENV)?"""
    if any(mark in script for mark in _PREFIX_EXPANSIONS):
        return True  # `${!SGLANG_*}`, `${!name}`: variables by a prefix, or by a name held in another
    if _PROC_ENVIRON.search(script):
        return True
    # a command substitution quoted inside a word (`echo "$(printenv "$1")"`) is a script too
    scripts = [script, *(script[at.end() :] for at in re.finditer(r"\$\(", script) if '"' in script[: at.start()])]
    return any(
        prints_environment(command, python_reads_whole, depth) for text in scripts for command in shell_commands(text)
    )


def shell_commands(script: str) -> list[list[Word]]:
    """The simple commands of a shell script, as words: split at `;`, `|`, `&&`, `||`,
    `&`, newlines, parentheses (`$(...)` too) and backquotes; leading `NAME=value`
    assignments and redirections (`> out`, `2>&1`) left out."""
    commands: list[list[Word]] = []
    current: list[Word] = []
    pending = iter(_split(script.replace("`", " ; "), punctuation=True))
    for token in pending:
        if _REDIRECTION.fullmatch(token) and any(ch in token for ch in "<>"):
            if current and (current[-1] or "").isdigit():
                current.pop()  # `2>&1`: the descriptor redirected
            next(pending, None)  # the redirection's target
        elif token and all(ch in _OPERATORS for ch in token):
            commands.append(current)
            current = []
        elif not current and _ASSIGNMENT.match(token):
            continue
        else:
            current.append(token)
    commands.append(current)
    return [command for command in commands if command]


def _split(text: str, punctuation: bool = False) -> list[str]:
    """Shell words, quotes removed; a script shlex cannot split (an open quote, as in a
    fragment) is split at blanks and operators."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=_OPERATORS + "<>" if punctuation else False)
        if punctuation:
            lexer.whitespace = " \t\r"  # a newline ends a command
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return re.findall(r"[;|&()<>\n]+|[^\s;|&()<>'\"]+", text)


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
# Programs that expand the variables their standard input names (a template on stdin)
_STDIN_TEMPLATES = frozenset({"envsubst"})
# Shell builtins that run a file in the shell itself (`. FILE`, `source FILE`)
_SOURCERS = frozenset({".", "source"})
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


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
        return [("program", spec)] if spec is not None else []
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
    if "/" in program or "\\" in program:
        spec = paths[0] if paths else None
        return [("program", rebased(spec, cwd) if spec is not None else "")]
    return _interpreted_files(name, rest, given, cwd)


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
                return []
            if word in options or any(word.startswith(option + "=") for option in options if option.startswith("--")):
                value = word.partition("=")[2] if "=" in word else None
                spec = literal_spec(value) if value else (given[index + 1] if index + 1 < len(given) else None)
                return [_file("other:" + name, spec, cwd)]
            if not options and not word.startswith("-"):
                return [_file("other:" + name, given[index], cwd)]
        return []
    if name in DATA_PROGRAMS or name in _SHELLS or _PYTHON.fullmatch(name):
        return []
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
    inner = _wrapped(words)
    if isinstance(inner, list):  # `timeout 60 sh`, `flock LOCK python -`
        return stdin_reader(inner, depth + 1)
    if name == "env":
        command = _env_command(rest)
        return stdin_reader(command, depth + 1) if command is not None else None
    shell, python = name in _SHELLS, _PYTHON.fullmatch(name) is not None
    if not shell and not python:  # `envsubst`: every `$NAME` of its input is read
        return "other:" + name if name in _STDIN_TEMPLATES else None
    valued = _SHELL_VALUED if shell else _PYTHON_VALUED
    while rest:
        word = rest.pop(0)
        if word is None:
            return None
        if word in valued:
            if rest:
                rest.pop(0)
        elif word == "-":
            return "python" if python else "shell"
        elif word.startswith(("-", "+")) and not word.startswith("--") and len(word) > 1:
            if "s" in word[1:] and shell:
                return "shell"  # `bash -s ARG...`: the script on stdin, then its arguments
            if word.endswith("c") or (python and word.endswith("m")):
                return None
        elif not word.startswith("--"):
            return None  # the script or file it runs
    return "python" if python else "shell"


def rebased(spec: str, cwd: str) -> str:
    """`spec` with the child's folder put for `@cwd` ("" where that folder is not shown)."""
    if not spec.startswith("@cwd"):
        return spec
    return cwd + spec[len("@cwd") :] if cwd else ""


def _file(kind: str, spec: str | None, cwd: str) -> ChildFile:
    return (kind, rebased(spec, cwd) if spec else "")


def _shell_files(rest: list[Word], given: list[str | None], cwd: str, depth: int) -> list[ChildFile]:
    """`sh [OPTION]... SCRIPT [ARG]...`, or `sh -c SCRIPT`, whose commands are read in turn."""
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:  # the script, by a path the module builds; or a word not shown
            return [_file("shell", given[index], cwd)]
        if word in _SHELL_VALUED:
            index += 2
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            script = rest[index + 1] if index + 1 < len(rest) else None
            return script_files(script, cwd, depth + 1) if script is not None else []
        if not word.startswith(("-", "+")) or word == "-":
            return [] if word == "-" else [_file("shell", given[index], cwd)]
        index += 1
    return []  # the script comes on its standard input


def _python_files(rest: list[Word], given: list[str | None], cwd: str) -> list[ChildFile]:
    """`python [OPTION]... FILE [ARG]...`; `-c CODE` and `-m MODULE` run no file named here."""
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            return [_file("python", given[index], cwd)]
        if word in _PYTHON_VALUED:
            index += 2
            continue
        if word == "-m" or (word.startswith("-") and not word.startswith("--") and word.endswith(("c", "m"))):
            code = rest[index + 1] if word.endswith("c") and index + 1 < len(rest) else None
            return _executed_files(code, cwd) if code is not None else []
        if not word.startswith("-") or word == "-":
            return [] if word == "-" else [_file("python", given[index], cwd)]
        index += 1
    return []


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
    built from a variable (`bash $DIR/x.sh`) is a file not shown."""
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
