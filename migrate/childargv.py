"""A child's command rebuilt from the Python expressions that compose it, for the judge
of what the child reads (configbags.migrate.childenv: the variables it names,
prints_environment, stdin_reader, child_files: one model for every rule).

The judge wants the words of an argv or the text of a command line. A launch rarely spells
them as one literal: launchers build the command (`prefix = ["numactl", ...] if numa else
[]; run(prefix + ["env"])`), pass it through helpers and format it for a shell. Each
expression here gives every command it may be (a may-analysis, as the scanner's
bindings are), taking:

- both branches of a conditional expression and every operand of `or`/`and`;
- list and string concatenation (`+`), a starred constant (`[*PFX, "env"]`), `list(x)`,
  a slice with constant bounds (`cmd[1:]`);
- a name by each of its bindings (ModuleStrings.bound: a local, a module or imported
  constant, a parameter's default, `self.X`), a local list grown by `+=`, `.append`,
  `.extend` and `.insert` with what it grows by, in the order the function spells it; the
  value of an assignment expression (`cmd := [...]`);
- command lines made for a shell: `shlex.join`, `" ".join`, `str.format`, `%`, and the
  words `shlex.split`/`.split()` make of one.

A command is a tuple of words (an argv; None for a word not shown), a str (a command
line), or None where nothing is shown (a parameter without a default, a call)."""

from __future__ import annotations

import ast
import functools
import itertools
import shlex
from collections.abc import Callable, Sequence

Word = str | None
Command = tuple[Word, ...] | str | None
# (Calls whose dotted path a resolver gives: shlex's, to tell `shlex.join(argv)` from `x.join`.)
Kinds = Callable[[ast.expr], frozenset[str]]
# (what an edit of a local list does to one command it may be: the commands after it)
Edit = Callable[[Command], "list[Command]"]
Bound = Callable[[ast.expr, Sequence[ast.AST]], "list[tuple[ast.expr | None, Sequence[ast.AST]]] | None"]

# How many commands one expression may stand for before the rest are not judged (a
# conditional in each of a dozen words is no launcher's shape)
MAX_COMMANDS = 32
_MAX_DEPTH = 12


class CommandRebuilder:
    """`word(expr, scopes)` is the text of one word (the door analysis's: a constant,
    `sys.executable` as "python"); `bound` one step of bindings; `kinds` the dotted paths a
    call's function resolves to."""

    def __init__(self, word: Callable[[ast.expr, Sequence[ast.AST]], str | None], bound: Bound, kinds: Kinds) -> None:
        self._word = word
        self._bound = bound
        self._kinds = kinds

    def commands(self, expr: ast.expr, scopes: Sequence[ast.AST]) -> list[Command]:
        """Every command `expr` may be, once each, at most MAX_COMMANDS."""
        return list(dict.fromkeys(self._commands(expr, scopes, 0)))[:MAX_COMMANDS]

    def argvs(self, words: Sequence[ast.expr | None], scopes: Sequence[ast.AST]) -> list[Command]:
        """The argvs an argv of word expressions (a launcher's `program, *args`) may be."""
        return list(dict.fromkeys(self._sequence(list(words), scopes, 0)))[:MAX_COMMANDS]

    def _commands(self, expr: ast.expr, scopes: Sequence[ast.AST], depth: int) -> list[Command]:
        if depth > _MAX_DEPTH:
            return [None]
        step = depth + 1
        text = self._word(expr, scopes)
        if text is not None:
            return [text]
        if isinstance(expr, (ast.List, ast.Tuple)):
            return self._sequence(list(expr.elts), scopes, step)
        if isinstance(expr, ast.IfExp):
            return self._commands(expr.body, scopes, step) + self._commands(expr.orelse, scopes, step)
        if isinstance(expr, ast.NamedExpr):
            return self._commands(expr.value, scopes, step)  # `run(cmd := [...])`
        if isinstance(expr, ast.BoolOp):
            return [c for value in expr.values for c in self._commands(value, scopes, step)]
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left, right = self._commands(expr.left, scopes, step), self._commands(expr.right, scopes, step)
            return _capped(_added(a, b) for a, b in itertools.product(left, right))
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            return self._percent(expr, scopes, step)
        if isinstance(expr, ast.Call):
            return self._call(expr, scopes, step)
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Slice):
            return self._sliced(expr, expr.slice, scopes, step)
        if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)):
            bound = self._bound(expr, scopes)
            if not bound:
                return [None]
            found = [c for value, where in bound for c in (
                self._commands(value, where, step) if value is not None else [None]
            )]
            if isinstance(expr, ast.Name) and scopes:
                found = self._grown(expr, scopes, found, step)
            return _capped(found)
        return [None]

    def _sequence(self, elts: list[ast.expr | None], scopes: Sequence[ast.AST], depth: int) -> list[Command]:
        """A list of words: each element's texts, a starred element's argvs spliced in."""
        choices: list[list[tuple[Word, ...]]] = []
        for elt in elts:
            if elt is None:
                choices.append([(None,)])
            elif isinstance(elt, ast.Starred):
                inner = self._commands(elt.value, scopes, depth)
                choices.append([c if isinstance(c, tuple) else (None,) for c in inner])
            else:
                found = self._commands(elt, scopes, depth)
                choices.append([(c,) if isinstance(c, str) else (None,) for c in found])
        result: list[Command] = []
        for combination in itertools.product(*choices):
            result.append(tuple(word for words in combination for word in words))
            if len(result) >= MAX_COMMANDS:
                break
        return result

    def _sliced(self, expr: ast.Subscript, bounds: ast.Slice, scopes: Sequence[ast.AST], depth: int) -> list[Command]:
        """`cmd[1:]`, `argv[:]`: the words (or text) between constant bounds."""
        parts = [_index(part) for part in (bounds.lower, bounds.upper, bounds.step)]
        if any(part is False for part in parts) or parts[2] == 0:
            return [None]
        cut = slice(*parts)
        return [c[cut] if c is not None else None for c in self._commands(expr.value, scopes, depth)]

    def _grown(self, name: ast.Name, scopes: Sequence[ast.AST], found: list[Command], depth: int) -> list[Command]:
        """A local list grown in place (`cmd += ["-c", X]`, `cmd.append(X)`,
        `cmd.insert(1, X)`) or edited (`cmd[0] = X`, `del cmd[1]`, `cmd.pop()`,
        `cmd.remove(X)`): each argv bound, with what the function does to it, in the order
        it spells that. An edit the model cannot follow (`cmd[i] = X`, `cmd.sort()`) makes
        the command not shown: never judged as first written."""
        function = scopes[-1]
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return found
        # (where; its kind: "augmented" by `+=`, "grown", "edited"; what it does to one command)
        edits = [
            (where, kind, edit) for node in ast.walk(function)
            for where, kind, edit in self._edit(node, name.id, scopes, depth)
        ]
        augmented = sum(kind == "augmented" for _, kind, _ in edits)
        edited = any(kind == "edited" for _, kind, _ in edits)
        if not edits:
            return found
        # (each `cmd += [...]` is also a binding of no value shown: the growth stands for it)
        found = list(found)
        for _ in range(augmented):
            if None in found:
                found.remove(None)
        commands: list[Command] = [c for c in found if isinstance(c, tuple)] or [None]
        for _, _, edit in sorted(edits, key=lambda row: row[0]):
            commands = _capped(c for command in commands for c in edit(command))
        if edited and all(where < (name.lineno, name.col_offset) for where, _, _ in edits):
            return list(dict.fromkeys(commands))  # (edited before the launch: the edit runs)
        return list(dict.fromkeys([*found, *commands]))

    def _edit(self, node: ast.AST, name: str, scopes: Sequence[ast.AST], depth: int) -> list[tuple[tuple[int, int], str, Edit]]:
        """What `node` does to the list `name`, if anything (_grown)."""
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _names(node.target, name):
            return [(where, "augmented", self._growth(node.value, None, scopes, depth))]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _names(node.func.value, name):
            method, args = node.func.attr, node.args
            if method in ("append", "extend") and len(args) == 1:
                grown = ast.List(elts=[args[0]], ctx=ast.Load()) if method == "append" else args[0]
                return [(where, "grown", self._growth(grown, None, scopes, depth))]
            if method == "insert" and len(args) == 2:
                return [(where, "grown", self._growth(ast.List(elts=[args[1]], ctx=ast.Load()), _index(args[0]), scopes, depth))]
            if method == "pop" and len(args) <= 1:
                return [(where, "edited", functools.partial(_deleted, at=_index(args[0]) if args else -1))]
            if method == "remove" and len(args) == 1:
                return [(where, "edited", functools.partial(_removed, words=self._commands(args[0], scopes, depth)))]
            if method in _MUTATORS:
                return [(where, "edited", _not_followed)]
            return []
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            return []
        found: list[tuple[tuple[int, int], str, Edit]] = []
        for target in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
            if not (isinstance(target, ast.Subscript) and _names(target.value, name)):
                continue
            at = _index(target.slice) if not isinstance(target.slice, ast.Slice) else False
            if isinstance(node, ast.Delete):
                found.append((where, "edited", functools.partial(_deleted, at=at)))
            elif isinstance(node, ast.Assign):
                found.append((where, "edited", functools.partial(_replaced, at=at, words=self._commands(node.value, scopes, depth))))
            else:
                found.append((where, "edited", _not_followed))
        return found

    def _growth(self, value: ast.expr, at: int | bool | None, scopes: Sequence[ast.AST], depth: int) -> Callable[[Command], list[Command]]:
        added = self._commands(value, scopes, depth)
        return lambda command: [_inserted(command, words, at) for words in added]

    def _call(self, expr: ast.Call, scopes: Sequence[ast.AST], depth: int) -> list[Command]:
        func = expr.func
        kinds = self._kinds(func)
        args = expr.args
        if isinstance(func, ast.Name) and func.id in ("list", "tuple") and len(args) == 1:
            return self._commands(args[0], scopes, depth)
        if kinds & {"shlex.join"} and len(args) == 1:
            return [_shell_line(c) for c in self._commands(args[0], scopes, depth)]
        if kinds & {"shlex.split"} and len(args) == 1:
            return [_split(c) for c in self._commands(args[0], scopes, depth)]
        if not isinstance(func, ast.Attribute):
            return [None]
        receivers = self._commands(func.value, scopes, depth)
        if func.attr == "split" and not args:
            return [_split(c) for c in receivers]
        if func.attr == "join" and len(args) == 1:
            joined = self._commands(args[0], scopes, depth)
            return _capped(
                sep.join(c) if isinstance(sep, str) and isinstance(c, tuple) and None not in c else None  # type: ignore[arg-type]
                for sep, c in itertools.product(receivers, joined)
            )
        if func.attr == "format" and not expr.keywords:
            given = self._sequence(list(args), scopes, depth)
            return _capped(
                _formatted(template, values) for template, values in itertools.product(receivers, given)
            )
        return [None]

    def _percent(self, expr: ast.BinOp, scopes: Sequence[ast.AST], depth: int) -> list[Command]:
        templates = self._commands(expr.left, scopes, depth)
        right = expr.right
        given = self._sequence(list(right.elts), scopes, depth) if isinstance(right, ast.Tuple) else [
            (c,) if isinstance(c, str) else None for c in self._commands(right, scopes, depth)
        ]
        return _capped(
            _percented(template, values) for template, values in itertools.product(templates, given)
        )


def _index(part: ast.expr | None) -> int | bool | None:
    """A slice bound: None where absent, an int constant, else False (not shown)."""
    if part is None:
        return None
    if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.USub):
        inner = _index(part.operand)
        return -inner if isinstance(inner, int) and not isinstance(inner, bool) else False
    if isinstance(part, ast.Constant) and isinstance(part.value, int) and not isinstance(part.value, bool):
        return part.value
    return False


# (list methods that change a list in ways the model does not follow)
_MUTATORS = frozenset({"clear", "reverse", "sort", "__setitem__", "__delitem__", "__iadd__"})


def _not_followed(command: Command) -> list[Command]:
    return [None]


def _names(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _deleted(command: Command, at: int | bool | None) -> list[Command]:
    """`del cmd[at]`, `cmd.pop(at)`: None where the index is not shown or not in it."""
    if not isinstance(command, tuple) or not isinstance(at, int) or isinstance(at, bool) or not -len(command) <= at < len(command):
        return [None]
    at %= len(command)
    return [command[:at] + command[at + 1 :]]


def _replaced(command: Command, at: int | bool | None, words: Sequence[Command]) -> list[Command]:
    """`cmd[at] = X`: each word X may be put in place."""
    if not isinstance(command, tuple) or not isinstance(at, int) or isinstance(at, bool) or not -len(command) <= at < len(command):
        return [None]
    at %= len(command)
    return [(*command[:at], word if isinstance(word, str) else None, *command[at + 1 :]) for word in words]


def _removed(command: Command, words: Sequence[Command]) -> list[Command]:
    """`cmd.remove(X)`: the first word X left out (None where X or the words before it
    are not shown)."""
    found: list[Command] = []
    for word in words:
        if not isinstance(command, tuple) or not isinstance(word, str):
            found.append(None)
            continue
        for position, have in enumerate(command):
            if have is None:
                found.append(None)
                break
            if have == word:
                found.append(command[:position] + command[position + 1 :])
                break
        else:
            found.append(None)  # (ValueError at run time: nothing runs after it)
    return found


def _capped(commands: object) -> list[Command]:
    return list(itertools.islice(commands, MAX_COMMANDS))  # type: ignore[call-overload]


def _added(left: Command, right: Command) -> Command:
    if isinstance(left, tuple) and isinstance(right, tuple):
        return left + right
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    return None


def _inserted(command: Command, words: Command, at: int | bool | None) -> Command:
    """`command` with `words` added at its end (`at` None) or before index `at`; None where
    the index is not shown (False)."""
    if at is None:
        return _added(command, words)
    if at is False or not isinstance(command, tuple) or not isinstance(words, tuple):
        return None
    return command[:at] + words + command[at:]


def _shell_line(command: Command) -> Command:
    """`shlex.join(argv)`: the line a shell splits back into the argv."""
    if not isinstance(command, tuple):
        return None
    words = [w for w in command if w is not None]
    return " ".join(map(shlex.quote, words)) if len(words) == len(command) else None


def _split(command: Command) -> Command:
    if not isinstance(command, str):
        return None
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return None


def _formatted(template: Command, values: Command) -> Command:
    if not isinstance(template, str) or not isinstance(values, tuple) or None in values:
        return None
    try:
        return template.format(*values)
    except (IndexError, KeyError, ValueError, AttributeError):
        return None


def _percented(template: Command, values: Command) -> Command:
    if not isinstance(template, str) or not isinstance(values, tuple) or None in values:
        return None
    try:
        return template % values
    except (TypeError, ValueError, KeyError):
        return None


def command_texts(commands: Sequence[Command]) -> list[str]:
    """The text of every word (or command line) the rebuilt `commands` show: where a
    declared variable's name is spelled, whichever branch or growth spelled it."""
    texts: list[str] = []
    for command in commands:
        if isinstance(command, str):
            texts.append(command)
        elif command is not None:
            texts += [word for word in command if word is not None]
    return texts


def program_shown(commands: Sequence[Command]) -> bool:
    """Does any command rebuilt show at least its program (a command line, or an argv
    whose first word is known)? Where none does, the scanner cannot tell what runs."""
    return any(isinstance(c, str) or (isinstance(c, tuple) and bool(c) and c[0] is not None) for c in commands)


def opaque_command(expr: ast.expr, params: set[str], imported: frozenset[str]) -> bool:
    """Is `expr` a command the module gives no value of (a name, attribute, call or
    comprehension) that is not handed over by the function's callers (one of its `params`:
    judged at each call site) nor another module's constant (a root name bound by an
    import: judged by what that module exports, ModuleStrings.exported_commands)?"""
    if isinstance(expr, ast.Starred):
        expr = expr.value
    # (a comprehension's words are not rebuilt: `[x for x in ("printenv", NAME)]`)
    if not isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.ListComp, ast.GeneratorExp)):
        return False
    names = {sub.id for sub in ast.walk(expr) if isinstance(sub, ast.Name)}
    if names & params:
        return False
    root: ast.expr = expr
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    return not (isinstance(root, ast.Name) and root.id in imported)


@functools.lru_cache(maxsize=8)
def imported_names(tree: ast.Module) -> frozenset[str]:
    """The names the module binds by an import, anywhere in it (once a module, for the
    run helper calls of the project pass)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
    return frozenset(found)


def parameters(scope: ast.AST) -> set[str]:
    """The parameter names of a function (none for a module)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return set()
    args = scope.args
    # (a method's `self` hands over no command: `self.make_cmd()` is the module's own)
    return {
        a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
        if a is not None and a.arg not in ("self", "cls")
    }
