"""The environment read outside Python, where the module spells it: the command of a child
process (`subprocess.run(["sh", "-c", "echo $SGLANG_PAGE_SIZE"])`, `os.system("...
${SGLANG_PAGE_SIZE}")`, `os.popen`, `os.exec*`, `os.spawn*`, `asyncio.create_subprocess_*`)
whose literal text names a declared variable, and C's `getenv` called through ctypes
(configbags.migrate.reflection follows the library objects).

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
child process."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence

# Callables that start a child process from a command (dotted paths, as the door analysis
# resolves them under any alias); the prefixes name families.
CHILD_PROCESS_PREFIXES = (
    "subprocess.", "asyncio.create_subprocess_", "asyncio.subprocess.", "os.exec", "os.spawn", "os.posix_spawn",
    "os.system", "os.popen", "pty.spawn",
)
# The words a module must show for one to be called (a gate, substring tests).
CHILD_PROCESS_WORDS = ("subprocess", "system", "popen", "exec", "spawn")
# Keyword arguments that are no part of the command.
_NOT_COMMAND = frozenset({"env", "cwd", "stdin", "stdout", "stderr", "encoding", "errors", "executable"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# C's readers of the environment, as ctypes reaches them from a loaded library.
C_GETENV = frozenset({"getenv", "secure_getenv", "_wgetenv", "getenv_s", "_wgetenv_s", "_dupenv_s"})


def is_child_process(path: str) -> bool:
    return path.startswith(CHILD_PROCESS_PREFIXES)


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
            if isinstance(expr.func, ast.Attribute):
                pending.append(expr.func.value)  # `"sh -c 'echo $X'".split()`, `" ".join([...])`
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
