"""One parser per deployment format, each with the format's own library: `shlex` for shell
and for shell-form Dockerfile lines, `ast` for Python, PyYAML's composer (multi-document,
with line marks) for YAML, Kubernetes manifests, Helm values and compose files, `json`
for JSON and exec-form Dockerfile lines. No regular expression reads YAML.

Each parser turns a file into what the linter checks, each item at its line:
`Command`s (a program's words and its arguments: launch lines or container args),
`EnvVar`s and `ConfigEntry`s (keys of a config mapping)."""

from __future__ import annotations

import ast
import base64
import binascii
import fnmatch
import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from configbags.evolve.shellwords import shell_words
from configbags.evolve.wrappers import is_assignment, unwrap
from configbags.runtime.errors import YamlError
from configbags.runtime.yamlsafe import (
    StrictLoader,
    json_named,
    load_json,
    load_text,
    measure_yaml,
    read_text_limited,
)

# A launch line is a command whose program words (the words before its first `--flag`)
# match one of these: engines' launch modules (`python -m sglang.launch_server ...`).
DEFAULT_LAUNCHERS = ("*launch_server*",)
# Helm values keys whose mapping is a config file's content, and whose lists are arguments
CONFIG_KEYS = frozenset({"config", "serverArgs", "engineArgs", "engineConfig", "serverConfig"})
ARG_KEYS = ("args", "extraArgs")  # after the mapping's `command`, in this order
ENV_KEYS = frozenset({"env", "extraEnv"})


@attrs.frozen
class Token:
    text: str
    line: int
    dynamic: bool = False  # a shell variable, template or computed element: its value is unknown
    # an expansion the shell splits into words known only at run time (`$ARGS` unquoted, a
    # Python `*args`), shown without its value; "" for a word that stays one word
    splits: str = ""
    # the shell commands run to make the word (`$(cmd)`, backquotes: evolve.shellwords.Word)
    commands: tuple[str, ...] = ()


@attrs.frozen
class Command:
    program: tuple[Token, ...]  # the words before the first flag
    args: tuple[Token, ...]
    # a launch by its program words, or arguments given without a program (container args
    # run by the image's entrypoint), linted when they hold a flag the schema knows
    launch: bool
    # every word is given together: False for Python argv built in steps some of which are
    # in a branch or a loop (its words are checked, not the line as the server parses it)
    whole: bool = True
    # the launcher globs its program words match (lint notes a --launcher that matched none)
    launchers: tuple[str, ...] = ()


@attrs.frozen
class EnvVar:
    name: str
    value: str | None  # None: not known here (from a secret, a field ref, a variable)
    line: int


@attrs.frozen
class ConfigEntry:
    key: str
    value: Any
    line: int
    known_value: bool = True  # False: a template or other text that only becomes a value later
    part: str = ""  # the config file within the linted file it is read with ("": the file; a ConfigMap holds several)
    secret: bool = False  # held in a Kubernetes Secret: its value is never shown


@attrs.frozen
class Unnamed:
    """A ConfigMap entry whose key has no config-file suffix (`server-config`) and whose text
    is a YAML mapping: which entry a pod mounts as which file, and whether it is a --config
    file, is not in the ConfigMap (nor always in the files linted), so lint reads it as a
    config file when it looks like one (`entries`, and what the server's reader `refused`
    in it), and names it otherwise."""

    key: str
    field: str  # `data` or `binaryData`
    line: int
    entries: tuple[ConfigEntry, ...]
    refused: tuple[tuple[str, int], ...]


@attrs.frozen
class Parsed:
    format: str
    commands: tuple[Command, ...] = ()
    env: tuple[EnvVar, ...] = ()
    config: tuple[ConfigEntry, ...] = ()
    # (problem, line) for each config text the server's own reader (`yamlsafe.load_text`)
    # refuses though it composes here: a `%YAML 1.1` directive, two documents, a duplicate key
    refused: tuple[tuple[str, int], ...] = ()
    unnamed: tuple[Unnamed, ...] = ()


class FormatError(Exception):
    """A file that does not parse as its format: the message and the line."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


_FORMAT_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_.]*(?:![rsa])?(?::[^{}]*)?\}")  # `{tp}`, `{n:03d}`: not JSON


def dynamic(text: str) -> bool:
    """Text whose value is only known later: a shell or compose variable (`$X`), a command
    substitution (`$(cat /k)`, backquotes), a Helm or Jinja template (`{{ .Values.x }}`), a
    Python format field or brace expansion (`{tp}`)."""
    return "$" in text or "`" in text or "{{" in text or _FORMAT_FIELD.search(text) is not None


def command_of(tokens: Sequence[Token], launchers: Sequence[str], *, bare_args: bool = False) -> Command:
    """Split tokens into program words and arguments; `bare_args`: the tokens are only
    arguments (a container's args under an image's entrypoint). A launch line's program is
    the fewest words a launcher glob matches (`python -m sglang.launch_server`): the words
    after them are the server's, a short option or an expansion (`$ARGS`) before the first
    `--flag` too."""
    if bare_args:
        return Command((), tuple(tokens), launch=False)
    split = next((i for i, t in enumerate(tokens) if t.text.startswith("--")), len(tokens))
    words = [t.text for t in tokens[:split]]
    for end in range(1, split + 1):
        program = " ".join(words[:end])
        if matched := tuple(p for p in launchers if fnmatch.fnmatchcase(program, p)):
            return Command(tuple(tokens[:end]), tuple(tokens[end:]), launch=True, launchers=matched)
    return Command(tuple(tokens[:split]), tuple(tokens[split:]), launch=False)


# -- shell -------------------------------------------------------------------------------
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
_UNCLOSED = ("a quote or an expansion (`$(`, `${`, a backquote) is never closed in this shell command (its text "
             "not shown, as it may hold a secret)")


def _shell_words(text: str, line: int) -> list[str]:
    return [t.text for t in _shell_tokens(text, line)]


def _shell_tokens(text: str, line: int, *, redirections: bool = False) -> list[Token]:
    """One line of shell text (a compose `command:` string, a Dockerfile's shell form): its
    words (and operators) as tokens at `line`; `redirections`: a shell runs it (a
    Dockerfile's shell form), so its redirections are no words of the command."""
    try:
        words = shell_words(text, redirections=redirections)
    except ValueError:
        raise FormatError(_UNCLOSED, line) from None
    return [Token(w.text, line, dynamic(w.text) or not w.known, w.splits, w.commands) for w in words]


def shell_tokens(text: str, first_line: int = 1) -> Iterator[list[Token]]:
    """Simple commands of a shell script, each as tokens with their physical lines: a
    command continues over lines ending in a backslash; `;`, `&&`, `|`... separate them."""
    lines = text.splitlines()
    i = 0
    current: list[Token] = []
    array: list[Token] | None = None  # inside `NAME=( ... )`: its words, the first `NAME=(`
    while i < len(lines):
        start = i
        chunk = lines[i]
        while True:  # a quoted string may span lines: read on until it closes
            try:
                words = shell_words(chunk.removesuffix("\\"), redirections=True)
                break
            except ValueError:
                if i + 1 >= len(lines):
                    raise FormatError(_UNCLOSED, first_line + start) from None
                i += 1
                chunk += "\n" + lines[i]
        for word in words:
            token = Token(word.text, first_line + start, dynamic(word.text) or not word.known, word.splits,
                          word.commands)
            if array is not None:  # an array's words, over lines, up to its `)`
                if word.text == ")":
                    yield array
                    array = None
                else:
                    array.append(token)
            elif word.text == "(" and current and _ARRAY.fullmatch(current[-1].text) \
                    and all(t.text in _DECLARE or t.text.startswith("-") for t in current[:-1]):
                array, current = [attrs.evolve(current[-1], text=current[-1].text + "(")], []
            elif word.text in _OPERATORS:
                if current:
                    yield current
                current = []
            else:
                current.append(token)
        if not chunk.endswith("\\") and current and array is None:
            yield current
            current = []
        i += 1
    if current:
        yield current
    if array is not None:
        raise FormatError("an array assignment `NAME=(` is never closed with `)`", array[0].line)


# `NAME=(words...)` and `NAME+=(...)`, after `declare -a`, `local` and the like
_ARRAY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_DECLARE = frozenset({"declare", "typeset", "local", "readonly", "export"})
_SPREAD = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}")
# a change to an array other than `NAME=(...)`/`NAME+=(...)` as a command of its own: an
# element (`A[2]=x`), a word (`A+=x`), one in a branch (`then A+=(...)`), or filled by a command
_ARRAY_CHANGE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?\+?=")
_ARRAY_FILLERS = frozenset({"read", "mapfile", "readarray", "unset", "declare", "typeset", "local", "eval"})


def _spread(tokens: Sequence[Token], arrays: dict[str, list[Token]],
            arguments: Sequence[Token] | None = None) -> list[Token]:
    """A command's words with each quoted `"${NAME[@]}"` of an array assigned above as the
    array's words, as the shell gives them (one word each), and each `$@` as the script's
    `arguments` where they are known. Any other use of an array stays as it is (unquoted,
    the shell splits each word again)."""
    out: list[Token] = []
    for token in tokens:
        match = _SPREAD.fullmatch(token.text)
        if token.text in ("$@", "${@}") and arguments is not None:
            # `"$@"`: one word per argument; unquoted, the shell splits each again, which
            # changes nothing for the words of an argv
            out += arguments
        elif match is not None and token.splits == f'"{token.text}"' and match.group(1) in arrays:
            out += arrays[match.group(1)]
        else:
            out.append(token)
    return out


def _forget_changed(tokens: Sequence[Token], arrays: dict[str, list[Token]]) -> None:
    """Drop the arrays this command changes in a way not followed: their words are no
    longer known, so a later `"${NAME[@]}"` is unchecked, never read as the old words."""
    filled = any(t.text in _ARRAY_FILLERS for t in tokens)
    for token in tokens:
        changed = _ARRAY_CHANGE.match(token.text)
        if changed is not None:
            arrays.pop(changed.group(1), None)
        elif filled:
            arrays.pop(token.text, None)


def parse_shell(text: str, launchers: Sequence[str], first_line: int = 1,
                arguments: Sequence[Token] | None = None) -> Parsed:
    """A shell script's launch lines and variables; `arguments`: its own arguments (`$@`),
    where they are known (a shell's `-c` script: the words after its `$0`)."""
    commands: list[Command] = []
    env: list[EnvVar] = []
    arrays: dict[str, list[Token]] = {}  # bash arrays assigned so far, by name
    for tokens in shell_tokens(text, first_line):
        for token in tokens:  # `OUT=$(python -m sglang.launch_server ...)`, backquotes: run too
            for body in token.commands:
                commands += parse_shell(body, launchers, token.line).commands
        if tokens[0].text.endswith("=("):  # `ARGS=(--tp-size 2)`, `ARGS+=(...)`
            name, plus, _ = tokens[0].text.partition("+")
            name = name.removesuffix("=(")
            if not plus:
                arrays[name] = list(tokens[1:])
            elif name in arrays:  # grown from words known here; else it stays unknown
                arrays[name] += tokens[1:]
            continue
        tokens = _spread(tokens, arrays, arguments)
        _forget_changed(tokens, arrays)
        if not tokens:
            continue
        exported = _exported(tokens)
        if exported is not None:  # `export NAME=value ...`, `declare -x NAME=value`: assignments alone
            env += [_env_var(t) for t in exported if is_assignment(t.text)]
            continue
        words, script, assigned = _unwrapped(tokens, launchers)
        env += assigned
        if script is not None:
            commands += script.commands
            env += script.env
        elif words:
            commands.append(command_of(words, launchers))
    return Parsed("shell", tuple(c for c in commands if c.launch), tuple(env))


# bash's builtins that declare variables, and the option letter that exports them too ("": always)
_EXPORTING = {"export": "", "declare": "x", "typeset": "x", "local": "x"}


def _exported(tokens: Sequence[Token]) -> list[Token] | None:
    """The words a declaring builtin (`export`, `declare -x`, `typeset -rx`, `local -x`,
    options ended by `--`) exports, its NAME=value words among them; [] for a declaration
    that exports nothing (`declare A=1`, `declare +x`, `export -n`, `export -f`); None
    for any other command."""
    letter = _EXPORTING.get(tokens[0].text)
    if letter is None:
        return None
    i = 1
    given: set[str] = set()  # the letters of `-` options (set), and of `+` ones (unset)
    taken: set[str] = set()
    while i < len(tokens) and len(tokens[i].text) > 1 and tokens[i].text[0] in "-+" and not tokens[i].dynamic:
        i += 1
        if tokens[i - 1].text == "--":
            break
        (given if tokens[i - 1].text[0] == "-" else taken).update(tokens[i - 1].text[1:])
    exports = (not letter or letter in given) and letter not in taken and not given & {"n", "f"}
    return list(tokens[i:]) if exports else []


def _env_var(token: Token) -> EnvVar:
    """A NAME=value word as the variable it sets (its value unknown where it expands)."""
    name, _, value = token.text.partition("=")
    return EnvVar(name, None if dynamic(value) else value, token.line)


def _unwrapped(tokens: Sequence[Token], launchers: Sequence[str]) -> tuple[Sequence[Token], Parsed | None,
                                                                              list[EnvVar]]:
    """What a command's words run past its wrappers (`nohup`, `env -i`, `tini --`, `timeout 5`,
    `kubectl exec POD --`: `evolve.wrappers`): the words of the command run, the script a
    shell runs (`sh -c`, `bash -lc`, `su -c`: parsed, its launch lines), and the
    variables the line sets (`A=1 cmd`, `env A=1 cmd`)."""
    found = unwrap([t.text for t in tokens], torch_launcher=True)
    env = [_env_var(tokens[i]) for i in found.assigned]
    if found.script is None:
        return tokens[found.start:], None, env
    at, script = found.script
    arguments = tokens[found.arguments:] if found.arguments is not None else None
    return tokens[found.start:], parse_shell(script, launchers, tokens[at].line, arguments), env


# -- Python ------------------------------------------------------------------------------
def parse_python(text: str, launchers: Sequence[str]) -> Parsed:
    """Launch lines in Python: argv lists (`subprocess.run([...])`, `ServerArgs.from_cli([...])`)
    and command strings; environment writes (`os.environ[...] = ...`, `env={...}`)."""
    tree = _python_tree(text)
    found = _PythonFinds(launchers)
    node: ast.AST = tree
    try:
        # Argv lists built in steps first, then argv lists and environment writes: a list
        # or a string already read is not read again on its own.
        for node in ast.walk(tree):
            if isinstance(node, _SCOPES):
                found.built(node)
        for node in ast.walk(tree):
            found.visit(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                found.format_string(node)
            elif isinstance(node, ast.Constant):
                found.command_string(node)
    except RecursionError:
        # ast.unparse recurses once per level: an expression the parser took (a chain of a
        # thousand attributes) can still be too deep to write back, here or on a thread
        # with less stack; the file is reported, never a traceback
        line = getattr(node, "lineno", 1)
        raise FormatError(f"an expression on line {line} nests too deeply to read (Python's recursion "
                          f"limit); split it up", line) from None
    commands = sorted(found.commands, key=lambda c: (c.args or c.program or (Token("", 0),))[0].line)
    return Parsed("python", tuple(commands), tuple(found.env))


def _python_tree(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise FormatError(f"Python syntax error: {exc.msg}", exc.lineno or 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, nesting past the parser's stack
        raise FormatError(f"the Python parser refuses the file: {type(exc).__name__}: {exc}") from None


@attrs.define
class _PythonFinds:
    """What one Python file holds, gathered node by node in `ast.walk` order."""

    launchers: Sequence[str]
    commands: list[Command] = attrs.Factory(list)
    env: list[EnvVar] = attrs.Factory(list)
    in_lists: set[int] = attrs.Factory(set)  # ids of the elements of argv lists already read
    chained: set[int] = attrs.Factory(set)  # ids of the `+` expressions already read, whole

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, (ast.List, ast.Tuple, ast.BinOp)) and id(node) not in self.in_lists \
                and id(node) not in self.chained:
            if isinstance(node, ast.BinOp):  # the whole `a + b + c` once, never each of its parts again
                stack: list[ast.expr] = [node]
                while stack:
                    if isinstance(part := stack.pop(), ast.BinOp):
                        self.chained.add(id(part))
                        stack += [part.left, part.right]
            read = _argv_words(node, {})
            if read is not None and self.argv(read.tokens, node.lineno):
                self.in_lists.update(read.nodes)
        elif isinstance(node, ast.Assign):
            self.assign(node)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr) \
                and ast.unparse(node.target).endswith("environ"):
            self.env += _mapping_env(node.value)  # `os.environ |= {...}`

    def built(self, scope: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """Argv lists a scope builds in steps, read as one launch line each: a literal list
        (`cmd = [...]`, `[...] + [...]`, `"...".split()`, `shlex.split("...")`) and what its
        own statements add to it (`cmd += [...]`, `cmd.extend([...])`, `cmd.append(x)`, `cmd
        = cmd + [...]`), and lists that spread it (`[..., *cmd]`). A step inside a branch or
        a loop may not run: its words are checked, but not the line as the server's parser
        would take it (a flag in both branches of an `if` is not given twice). A list
        changed any other way (`cmd.insert`, `cmd[0] = ...`, `del cmd[...]`) is not followed."""
        builds: dict[str, _Built] = {}
        done: list[_Built] = []  # lists no longer named, and lists that spread one built here
        used: set[int] = set()  # the lists whose words another took so far
        changed = _changed_otherwise(scope)
        for stmt, depth in _statements(scope.body, 0):
            step = _step(stmt)
            if step is not None and step[0] in builds:
                build = builds[step[0]]
                read = _argv_words(step[1], builds)
                if read is None:
                    build.tokens.append(_unknown_words(step[1], stmt.lineno))
                else:
                    build.add(read)
                    used.update(id(p) for p in read.parts)
                build.whole = build.whole and depth == build.depth
                build.own = build.own or id(build) in used  # words no list that took it holds
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                read = _argv_words(stmt.value, builds)
                if name in builds:
                    done.append(builds.pop(name))
                if read is not None and name not in changed:
                    builds[name] = attrs.evolve(read, depth=depth, line=stmt.value.lineno)
                    used.update(id(p) for p in read.parts)
                    continue
            spread = self.spread(stmt, builds)
            used.update(id(p) for b in spread for p in b.parts)
            done += spread
        self.emit([*done, *builds.values()])

    def emit(self, builds: list[_Built]) -> None:
        """Each built list that is a launch line, a list only used as a part of others
        (`base` in `cmd = base + [...]`) only when none of them is one."""
        parts = {id(p) for b in builds for p in b.parts if not p.own}
        read: set[int] = set()
        for build in sorted(builds, key=lambda b: id(b) in parts):
            if id(build) in read or not self.argv(build.tokens, build.line, whole=build.whole):
                continue
            stack = [build]
            while stack:
                done = stack.pop()
                if id(done) not in read:  # `cmd += cmd` makes a list a part of itself
                    read.add(id(done))
                    self.in_lists.update(done.nodes)
                    stack += [p for p in done.parts if not p.own]

    def spread(self, stmt: ast.stmt, builds: Mapping[str, _Built]) -> list[_Built]:
        """Lists in a statement that spread a list built here (`[..., *args]`)."""
        if not builds or isinstance(stmt, _SCOPES) or _blocks(stmt):
            return []
        out = []
        for node in ast.walk(stmt):
            if isinstance(node, (ast.List, ast.Tuple)) and any(
                    isinstance(e, ast.Starred) and isinstance(e.value, ast.Name) and e.value.id in builds
                    for e in node.elts) and (read := _argv_words(node, builds)) is not None:
                out.append(attrs.evolve(read, line=node.lineno))
        return out

    def call(self, node: ast.Call) -> None:
        """`ServerArgs.from_cli([...])`, an argv given word by word (`os.execlp(...)`),
        `env={...}`, `os.environ.setdefault(K, V)`, `os.environ.update(...)` and
        `os.putenv(K, V)`."""
        func = ast.unparse(node.func)
        if func.endswith("from_cli") and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            self.commands.append(Command((), tuple(_list_tokens(node.args[0])), True))
            self.in_lists.update(id(e) for e in node.args[0].elts)
        self.varargs(node, func.rpartition(".")[2])
        for kw in node.keywords:
            if kw.arg == "env":
                self.env += _mapping_env(kw.value)
        if func.endswith(("environ.setdefault", "putenv")) and len(node.args) == 2:
            self.env += _pair_env(node.args[0], node.args[1])
        if func.endswith("environ.update"):  # `update({K: V})`, `update(K=V)`
            self.env += [e for arg in node.args[:1] for e in _mapping_env(arg)]
            self.env += _keyword_env(node.keywords)

    def varargs(self, node: ast.Call, name: str) -> None:
        """A call given its argv word by word (`asyncio.create_subprocess_exec("python",
        "-m", ...)`, `os.execlp(file, "python", ...)`), read as an argv list; an `os.*e`
        function's last argument is the child's environment."""
        first, environment = _VARARGS.get(name, (None, False))
        if first is None or any(isinstance(a, ast.Starred) for a in node.args[:first]):
            return
        words = node.args[first:len(node.args) - environment]
        read = _argv_words(ast.copy_location(ast.Tuple(words, ast.Load()), node), {})
        if read is not None and self.argv(read.tokens, node.lineno):
            self.in_lists.update(read.nodes)
        if environment and len(node.args) > first:
            self.env += _mapping_env(node.args[-1])

    def argv(self, tokens: list[Token], line: int, *, whole: bool = True) -> bool:
        """A list of words that is a launch line, or a shell's `-c` script holding some:
        whether it is (its nodes are then read)."""
        if not tokens or all(t.dynamic for t in tokens):
            return False
        words, nested, assigned = _unwrapped(tokens, self.launchers)  # ["bash", "-c", "python -m ... --flag"]
        command = command_of(words, self.launchers)
        if nested is not None:
            self.commands += nested.commands
            self.env += [*assigned, *nested.env]
        elif command.launch:
            self.commands.append(attrs.evolve(command, whole=whole))
            self.env += assigned
        else:
            return False
        return True

    def assign(self, node: ast.Assign) -> None:
        """`os.environ[K] = V`."""
        for target in node.targets:
            if isinstance(target, ast.Subscript) and ast.unparse(target.value).endswith("environ"):
                self.env += _pair_env(target.slice, node.value)

    def format_string(self, node: ast.JoinedStr) -> None:
        """An f-string naming a launcher: a shell command whose every field (`{m}`) is
        one word of a value known only at run time, never a missing one."""
        parts = [v for v in node.values if isinstance(v, ast.Constant)]
        if id(node) in self.in_lists:
            self.in_lists.update(id(p) for p in parts)
            return
        text = _format_text(node)
        if any(fnmatch.fnmatchcase(text, f"*{p.strip('*')}*") for p in self.launchers):
            self.in_lists.update(id(p) for p in parts)
            self.command_string(ast.Constant(text, lineno=node.lineno))

    def command_string(self, node: ast.Constant) -> None:
        """A string naming a launcher, outside the argv lists already read: a shell command."""
        if not (isinstance(node.value, str) and id(node) not in self.in_lists
                and any(fnmatch.fnmatchcase(node.value, f"*{p.strip('*')}*") for p in self.launchers)):
            return
        try:
            parsed = parse_shell(node.value, self.launchers, node.lineno)
        except FormatError:
            return  # a string that mentions the launcher but is no command
        self.commands += parsed.commands
        self.env += parsed.env


def _list_tokens(node: ast.List | ast.Tuple) -> list[Token]:
    return [t for element in node.elts for t in _element_tokens(element, {})]


def _element_tokens(element: ast.expr, builds: Mapping[str, _Built], parts: list[_Built] | None = None) -> list[Token]:
    """One element of an argv list as words: a literal, the words of a list built here
    that it spreads (`*args`, added to `parts`), or a word (or, spread, words) known only
    at run time."""
    if isinstance(element, ast.Constant) and isinstance(element.value, (str, int, float)):
        return [Token(str(element.value), element.lineno)]
    if isinstance(element, ast.Starred):  # `*args`: any number of words
        if isinstance(element.value, ast.Name) and element.value.id in builds and parts is not None:
            parts.append(builds[element.value.id])
            return list(builds[element.value.id].tokens)
        shown = f"*{element.value.id}" if isinstance(element.value, ast.Name) else "*(...)"
        return [Token(ast.unparse(element), element.lineno, dynamic=True, splits=shown)]
    if isinstance(element, ast.JoinedStr):  # f"--model-path={m}": the flag is known, its value is not
        return [Token(_format_text(element), element.lineno, dynamic=True)]
    return [Token(ast.unparse(element), element.lineno, dynamic=True)]


# a format field in an f-string read as shell text: one word whose value is unknown here
_FIELD = "{_}"


def _format_text(node: ast.JoinedStr) -> str:
    """An f-string's text with each field as `{_}` (a Python format field: `dynamic`)."""
    return "".join(str(v.value) if isinstance(v, ast.Constant) else _FIELD for v in node.values)
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@attrs.define
class _Built:
    """The words of a literal argv expression or of a list a scope builds in steps: the
    literal nodes they came from, the lists built here whose words it took, the block
    depth of its start, and whether every step is at that depth (and every part whole)."""

    tokens: list[Token]
    nodes: set[int]
    parts: list[_Built]
    depth: int = 0
    line: int = 0
    whole: bool = True
    own: bool = False  # grown after another list took its words: a launch line of its own too

    def add(self, other: _Built) -> None:
        self.tokens += other.tokens
        self.nodes |= other.nodes
        self.parts += other.parts
        self.whole = self.whole and other.whole


def _argv_words(node: ast.expr, builds: Mapping[str, _Built]) -> _Built | None:
    """The words of a literal argv expression: a list or tuple (spreading lists built
    here), `+` of such, a list built here by name, `"...".split()` and `shlex.split("...")`
    of a literal; None for anything else."""
    if isinstance(node, (ast.List, ast.Tuple)):
        parts: list[_Built] = []
        tokens = [t for e in node.elts for t in _element_tokens(e, builds, parts)]
        return _Built(tokens, {id(node), *map(id, node.elts)}, parts, whole=all(p.whole for p in parts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        # the right side first: a chain of `+` on strings or numbers stops at once
        right = _argv_words(node.right, builds)
        left = _argv_words(node.left, builds) if right is not None else None
        if left is None or right is None:
            return None
        left.add(right)
        left.nodes.add(id(node))
        return left
    if isinstance(node, ast.Name) and node.id in builds:
        part = builds[node.id]
        return _Built(list(part.tokens), set(), [part], whole=part.whole)
    if isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Attribute):
        func, args = node.func, node.args
        if func.attr == "split" and not args and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str):
            return _Built([Token(w, node.lineno) for w in func.value.value.split()], {id(node), id(func.value)}, [])
        if ast.unparse(func) == "shlex.split" and len(args) == 1 and isinstance(args[0], ast.Constant) \
                and isinstance(args[0].value, str):
            try:
                words = shlex.split(args[0].value)
            except ValueError:
                return None
            return _Built([Token(w, node.lineno, dynamic(w)) for w in words], {id(node), id(args[0])}, [])
    return None


def _step(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, what it adds) for a step that adds words to a list named `name`: `name +=
    X`, `name.extend(X)`, `name.append(x)` (as `[x]`), `name = name + X`."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    if isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call) and isinstance(call.func, ast.Attribute) \
            and isinstance(call.func.value, ast.Name) and len(call.args) == 1 and not call.keywords:
        if call.func.attr == "extend":
            return call.func.value.id, call.args[0]
        if call.func.attr == "append":
            return call.func.value.id, ast.copy_location(ast.List([call.args[0]], ast.Load()), call.args[0])
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and isinstance(stmt.value, ast.BinOp) and isinstance(stmt.value.left, ast.Name) \
            and stmt.value.left.id == stmt.targets[0].id:
        return stmt.targets[0].id, stmt.value.right
    return None


def _unknown_words(added: ast.expr, line: int) -> Token:
    """What a step adds that is no literal (`cmd += extra`): words known only at run time."""
    shown = f"*{added.id}" if isinstance(added, ast.Name) else "*(...)"
    return Token(ast.unparse(added), line, dynamic=True, splits=shown)


def _statements(body: Sequence[ast.stmt], depth: int) -> Iterator[tuple[ast.stmt, int]]:
    """A scope's statements in order with their block depth, into branches, loops, `with`
    and `try` blocks, never into a function or class (a scope of its own)."""
    stack: list[tuple[Sequence[ast.stmt], int, int]] = [(body, depth, 0)]
    while stack:
        stmts, level, i = stack.pop()
        if i >= len(stmts):
            continue
        stmt = stmts[i]
        stack.append((stmts, level, i + 1))
        yield stmt, level
        if not isinstance(stmt, _SCOPES):
            stack += [(b, level + 1, 0) for b in reversed(_blocks(stmt))]


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of statements a compound statement holds (`if`, loops, `with`, `try`,
    `match`); none for a simple one."""
    blocks: list[list[ast.stmt]] = [getattr(stmt, f, None) or [] for f in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(stmt, "handlers", [])] + [c.body for c in getattr(stmt, "cases", [])]
    return [b for b in blocks if b]


def _changed_otherwise(scope: ast.AST) -> set[str]:
    """Names of lists a scope changes other than by adding to their end (`cmd.insert`,
    `cmd.remove`, `cmd[0] = ...`, `del cmd[1]`): their words are not followed."""
    out: set[str] = set()
    for node in ast.walk(scope):
        changes = (isinstance(node, ast.Attribute) and node.attr in _CHANGES) or (
            isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)))
        if changes and isinstance(value := getattr(node, "value", None), ast.Name):
            out.add(value.id)
    return out


_CHANGES = frozenset({"insert", "remove", "pop", "clear", "reverse", "sort", "__setitem__", "__delitem__", "__iadd__"})


def _pair_env(key: ast.expr, value: ast.expr) -> list[EnvVar]:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return []
    text = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
    return [EnvVar(key.value, text, key.lineno)]


def _dict_env(node: ast.Dict) -> list[EnvVar]:
    out = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is not None:
            out += _pair_env(key, value)
    return out


def _keyword_env(keywords: Sequence[ast.keyword]) -> list[EnvVar]:
    """`K=V` keywords (`update(K=V)`, `dict(os.environ, K=V)`) as variables."""
    return [e for kw in keywords if kw.arg is not None
            for e in _pair_env(ast.copy_location(ast.Constant(kw.arg), kw.value), kw.value)]


def _mapping_env(node: ast.expr) -> list[EnvVar]:
    """The variables an environment mapping written out sets: `{K: V, **os.environ}`,
    `dict(os.environ, K=V)`, `dict({K: V})`, `os.environ | {K: V}` (each side)."""
    if isinstance(node, ast.Dict):
        return _dict_env(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _mapping_env(node.left) + _mapping_env(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [e for arg in node.args[:1] for e in _mapping_env(arg)] + _keyword_env(node.keywords)
    return []


# calls given an argv word by word: (the index of its first word, whether an environment follows it)
_VARARGS: dict[str, tuple[int, bool]] = {
    "create_subprocess_exec": (0, False), "subprocess_exec": (1, False),  # asyncio's, a loop's (protocol first)
    "execl": (1, False), "execlp": (1, False), "execle": (1, True), "execlpe": (1, True),  # os's: path first
    "spawnl": (2, False), "spawnlp": (2, False), "spawnle": (2, True), "spawnlpe": (2, True),  # mode, path
}


# -- YAML with line marks ----------------------------------------------------------------
class Marked:
    """A composed YAML node, read lazily: `line`, and for mappings `items()` as
    (key, key line, child), for sequences the children, for scalars `value`.

    An alias is the node its anchor names (the composer shares it), so every use reads the
    anchored words, at the anchor's lines. `merging()` reads merge keys as the deployment
    tools do (compose, Helm and kubectl read YAML 1.1's `<<: *base`, `<<: [*a, *b]`): a
    mapping's own keys first, then each merged mapping's in order, the first of a key
    winning. A config file is read without them, as the server reads it (`<<` is a key)."""

    __slots__ = ("_loader", "merge", "node")

    def __init__(self, loader: StrictLoader, node: yaml.Node, merge: bool = False) -> None:
        self._loader = loader
        self.node = node
        self.merge = merge

    def merging(self) -> Marked:
        return Marked(self._loader, self.node, merge=True)

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    @property
    def is_map(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    @property
    def is_scalar(self) -> bool:
        return isinstance(self.node, yaml.ScalarNode)

    def items(self) -> Iterator[tuple[str, int, Marked]]:
        if not self.is_map:
            return
        seen: set[str] = set()
        for key, value in self._entries():
            if isinstance(key, yaml.ScalarNode) and not (self.merge and str(key.value) in seen):
                seen.add(str(key.value))
                yield str(key.value), int(key.start_mark.line) + 1, Marked(self._loader, value, self.merge)

    def _entries(self) -> Iterator[tuple[yaml.Node, yaml.Node]]:
        """The mapping's entries, and with `merge` those of the mappings its `<<` keys
        merge, depth first in precedence order, each merged mapping once (the reader's
        event pass bounds them: aliases count against its node limit)."""
        if not self.merge:
            yield from self.node.value
            return
        done: set[int] = set()
        stack: list[yaml.Node] = [self.node]
        while stack:
            node = stack.pop()
            if not isinstance(node, yaml.MappingNode) or id(node) in done:
                continue
            done.add(id(node))
            merged: list[yaml.Node] = []
            for key, value in node.value:
                if _is_merge_key(key):
                    merged += value.value if isinstance(value, yaml.SequenceNode) else [value]
                else:
                    yield key, value
            stack += reversed(merged)

    def get(self, key: str) -> Marked | None:
        return next((v for k, _, v in self.items() if k == key), None)

    def children(self) -> list[Marked]:
        return [Marked(self._loader, n, self.merge) for n in self.node.value] if self.is_seq else []

    @property
    def value(self) -> Any:
        """The node as a Python value (YAML 1.2 core scalars, as config files read)."""
        return self._loader.construct_object(self.node, deep=True)

    @property
    def text(self) -> str | None:
        """A scalar's text as written (what a flag or variable receives)."""
        return str(self.node.value) if self.is_scalar else None


def _is_merge_key(node: yaml.Node) -> bool:
    """A plain `<<` key (a quoted "<<" is a key like any other)."""
    return isinstance(node, yaml.ScalarNode) and node.value == "<<" and not node.style  # libyaml: "" for plain


def yaml_documents(text: str) -> Iterator[Marked]:
    """Every document of a YAML stream, composed with line marks; a syntax error is a
    FormatError at its line, and so is a stream over the reader's limits (measured from
    its events first, aliases expanded in the count: an alias bomb is refused, never
    expanded)."""
    try:
        measure_yaml(text)
    except YamlError as exc:
        raise FormatError(f"YAML error: {exc.problem}", exc.line or 1) from None
    loader = StrictLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                yield Marked(loader, node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise FormatError(f"YAML error: {exc.problem or exc}", mark.line + 1 if mark else 1) from None
    except yaml.YAMLError as exc:
        raise FormatError(f"YAML error: {exc}") from None


def _scalar_tokens(node: Marked) -> list[Token]:
    """A YAML list of arguments (`args: [--tp-size, "2"]`) as tokens."""
    out = []
    for child in node.children():
        text = child.text
        if text is None:  # a mapping or list where a word belongs: nothing to check (and never expanded)
            out.append(Token(f"<a YAML {'mapping' if child.is_map else 'list'}>", child.line, dynamic=True))
        else:
            out.append(Token(text, child.line, dynamic(text)))
    return out


def _env_list(node: Marked) -> list[EnvVar]:
    """Kubernetes `env: [{name, value | valueFrom}]`, compose's `["NAME=value"]` or a
    mapping `{NAME: value}`."""
    out = []
    if node.is_map:
        for key, line, child in node.items():
            text = child.text
            out.append(EnvVar(key, None if text is None or dynamic(text) else text, line))
        return out
    for child in node.children():
        if child.is_map:
            name = child.get("name")
            value = child.get("value")
            if name is not None and name.text:
                text = value.text if value is not None else None
                out.append(EnvVar(name.text, None if text is None or dynamic(text) else text, name.line))
        elif child.text is not None and "=" in child.text:
            var, _, value_text = child.text.partition("=")
            out.append(EnvVar(var, None if dynamic(value_text) else value_text, child.line))
    return out


def _container(node: Marked, launchers: Sequence[str]) -> tuple[list[Command], list[EnvVar]]:
    """A container (or anything shaped like one: a custom resource's predictor, a compose
    service): `command`/`entrypoint` and `args`, and `env`/`environment`."""
    program: list[Token] = []
    for key in ("entrypoint", "command"):  # compose runs its entrypoint with its command as arguments
        part = node.get(key)
        if part is not None:
            program += _tokens_of(part)
    args_node = node.get("args")
    args = _tokens_of(args_node) if args_node is not None else []
    env: list[EnvVar] = []
    for key in ("env", "environment"):
        part = node.get(key)
        if part is not None:
            env += _env_list(part)
    commands: list[Command] = []
    tokens = [*program, *args]
    if tokens:
        words, nested, assigned = _unwrapped(tokens, launchers)
        env += assigned
        if nested is not None:
            commands += nested.commands
            env += nested.env
        elif program or len(words) < len(tokens):
            commands.append(command_of(words, launchers))
        else:
            commands.append(command_of(args, launchers, bare_args=True))
    return commands, env


def _tokens_of(node: Marked) -> list[Token]:
    """A command as a list, or as one string (compose's `command: python -m x --flag`)."""
    if node.is_seq:
        return _scalar_tokens(node)
    if node.text is not None:
        return _shell_tokens(node.text, node.line)
    return []


def _walk(node: Marked) -> Iterator[tuple[str | None, Marked]]:
    """Every node with the key it sits under, depth first, each shared node once."""
    seen: set[int] = set()
    stack: list[tuple[str | None, Marked]] = [(None, node)]
    while stack:
        key, current = stack.pop()
        if id(current.node) in seen:
            continue
        seen.add(id(current.node))
        yield key, current
        if current.is_map:
            stack += reversed([(k, v) for k, _, v in current.items()])
        elif current.is_seq:
            stack += reversed([(None, c) for c in current.children()])


def _config_entries(node: Marked, part: str = "") -> list[ConfigEntry]:
    out = []
    for key, line, child in node.items():
        text = child.text
        out.append(ConfigEntry(key, child.value, line, known_value=not (text is not None and dynamic(text)), part=part))
    return out


def _loader_refusal(text: str, name: str, offset: int = 0) -> tuple[str, int] | None:
    """Why the server's config-file reader refuses `text` (a file named `name`), at the
    line counted from `offset`; None when it reads it."""
    try:
        data = load_text(text, name)
    except YamlError as exc:
        return exc.problem, (exc.line or 1) + offset
    if data is None:  # as runtime.record.load_config_file refuses it
        return "the config file holds no settings (empty, only comments, or a null document); write {} to mean " \
               "no settings", 1 + offset
    return None


def parse_kubernetes(docs: list[Marked], launchers: Sequence[str]) -> Parsed:
    """Every container of every document (Deployments, StatefulSets, Jobs, pod templates
    anywhere in a custom resource) and anything else with container-shaped `args`."""
    commands: list[Command] = []
    env: list[EnvVar] = []
    config: list[ConfigEntry] = []
    refused: list[tuple[str, int]] = []
    unnamed: list[Unnamed] = []
    for doc in (d.merging() for d in docs):
        for obj in _objects(doc):
            found, why, others = _config_files(obj)
            config += found
            refused += why
            unnamed += others
        for _, node in _walk(doc):
            if node.is_map and any(node.get(k) is not None for k in ("args", "command", "env")) and (
                    node.get("image") is not None or node.get("args") is not None):
                found_commands, found_env = _container(node, launchers)
                commands += found_commands
                env += found_env
    return Parsed("kubernetes", tuple(commands), tuple(env), tuple(config), tuple(refused), tuple(unnamed))


def _objects(doc: Marked) -> Iterator[Marked]:
    """A document's Kubernetes objects: the document, or the items of a `List` (what
    `kubectl get ... -o yaml` writes; `ConfigMapList` and the like from the API), or the
    `objects` of an OpenShift `Template` (what `oc process` creates), nested ones too."""
    stack = [doc]
    while stack:
        obj = stack.pop()
        kind = obj.get("kind") if obj.is_map else None
        kind_text = (kind.text or "") if kind is not None else ""
        items = obj.get("items") if kind_text.endswith("List") else obj.get("objects") if kind_text == "Template" \
            else None
        if items is not None and items.is_seq:
            stack += reversed(items.children())
        else:
            yield obj


# (the kind, its key of config texts, whether they are base64, whether they are secret)
_CONFIG_TEXTS = (("ConfigMap", "data", False, False), ("ConfigMap", "binaryData", True, False),
                 ("Secret", "stringData", False, True), ("Secret", "data", True, True))


def _config_files(obj: Marked) -> tuple[list[ConfigEntry], list[tuple[str, int]], list[Unnamed]]:
    """A ConfigMap's or Secret's entries named *.yaml/*.yml/*.json (in any case), read as config files
    (each entry a `part` of its own), and what the server's reader refuses in them; and a
    ConfigMap's other entries that hold a YAML mapping, for lint to take or name (`Unnamed`;
    any other text, an environment value or a script, is no config file the server would
    read; a Secret's are keys and certificates). A base64 entry (a Secret's `data`, a
    ConfigMap's `binaryData`) is decoded first. A Secret's values are never shown."""
    kind = obj.get("kind") if obj.is_map else None
    out: list[ConfigEntry] = []
    refused: list[tuple[str, int]] = []
    unnamed: list[Unnamed] = []
    for of_kind, field, encoded, secret in _CONFIG_TEXTS:
        texts = obj.get(field) if kind is not None and kind.text == of_kind else None
        for key, line, child in texts.items() if texts is not None and texts.is_map else ():
            named = json_named(key) or Path(key).suffix.lower() in (".yaml", ".yml")  # as serve reads it
            if child.text is None or not (named or of_kind == "ConfigMap"):
                continue
            text = _decoded(child.text) if encoded else child.text
            if text is None:
                if named:
                    refused.append((f"the {of_kind} entry {key!r} under `{field}` is not base64 of UTF-8 text (its "
                                    f"value not shown)", line))
                continue
            # a literal block's lines are the file's, from the line after its key; a quoted,
            # folded or decoded text's lines are not: its findings are at the key's line
            # (read behind as many blank lines, so the reader's own messages, `first on line
            # N`, count the file's lines too)
            literal = not encoded and getattr(child.node, "style", None) == "|"
            shifted = "\n" * child.line + text if literal else text
            found, why = _config_text(shifted, key, f"{obj.line}:{field}:{key}", secret)
            found = [attrs.evolve(e, line=e.line if literal else line) for e in found]
            why = [(problem, at if literal else line) for problem, at in why]
            if named:
                out += found
                refused += why
            elif found:
                unnamed.append(Unnamed(key, field, line, tuple(found), tuple(why)))
    return out, refused, unnamed


def _decoded(text: str) -> str | None:
    """A Kubernetes base64 value's text; None when it is not base64 of UTF-8 text."""
    try:
        return base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _config_text(text: str, name: str, part: str, secret: bool) -> tuple[list[ConfigEntry], list[tuple[str, int]]]:
    """The keys of one embedded config file (lines its own), and what the server's reader
    refuses in it."""
    refusal = _loader_refusal(text, name)
    refused = [refusal] if refusal is not None else []
    try:
        docs = list(yaml_documents(text))
    except FormatError as exc:
        return [], refused or [(str(exc), exc.line)]
    return [attrs.evolve(e, secret=secret) for d in docs if d.is_map for e in _config_entries(d, part)], refused


def parse_compose(doc: Marked, launchers: Sequence[str]) -> Parsed:
    commands: list[Command] = []
    env: list[EnvVar] = []
    services = doc.merging().get("services")
    for _, _, service in services.items() if services is not None else ():
        found_commands, found_env = _container(service, launchers)
        commands += found_commands
        env += found_env
    return Parsed("compose", tuple(commands), tuple(env))


def parse_helm_values(docs: list[Marked], launchers: Sequence[str]) -> Parsed:
    """Helm values: argument lists under `args`/`extraArgs`/`command`, env lists under
    `env`/`extraEnv`, config mappings under `config`/`serverArgs`/`engineArgs`/..., at
    any depth."""
    commands: list[Command] = []
    env: list[EnvVar] = []
    config: list[ConfigEntry] = []
    for doc in (d.merging() for d in docs):
        for key, node in _walk(doc):
            if node.is_map:
                # an item of a list is a container of its own (`extraContainers: [{image, args}]`)
                container = key is None and node.node is not doc.node
                found_commands, found_env = _helm_arguments(node, launchers, container=container)
                commands += found_commands
                env += found_env
            if key in ENV_KEYS and (node.is_seq or node.is_map):
                env += _env_list(node)
            elif key in CONFIG_KEYS and node.is_map:
                config += _config_entries(node)
    return Parsed("helm-values", tuple(commands), tuple(env), tuple(config))


def _helm_arguments(node: Marked, launchers: Sequence[str], *,
                    container: bool) -> tuple[list[Command], list[EnvVar]]:
    """A Helm values mapping's `command` with its `args` and `extraArgs` lists, as the
    chart's template puts them together. Lists of flags without a command are the
    arguments of the chart's own server: every `--word` is checked, a list of only
    mistyped flags too. A command naming another program, or a `container` (an item of a
    list: a sidecar's) without a command, leaves its lists alone unless they hold a flag
    the schema knows, as Kubernetes container arguments are."""
    part = node.get("command")
    program = _tokens_of(part) if part is not None and (part.is_seq or part.is_scalar) else []
    args: list[Token] = []
    for key in ARG_KEYS:
        part = node.get(key)
        if part is not None and (part.is_seq or part.text is not None):
            # one string (`extraArgs: "--tp-size 2"`) is shell words, as a chart's `{{ .Values.extraArgs }}` gives it
            args += _tokens_of(part)
    if not program:
        if not args:
            return [], []
        bare = args[0].text.startswith("--")
        return [Command((), tuple(args), launch=not container) if bare else command_of(args, launchers)], []
    words, nested, assigned = _unwrapped([*program, *args], launchers)
    if nested is not None:
        return list(nested.commands), [*assigned, *nested.env]
    return [command_of(words, launchers)], assigned


def parse_config(docs: list[Marked]) -> Parsed:
    config: list[ConfigEntry] = []
    for doc in docs:
        if doc.is_map:
            config += _config_entries(doc)
    return Parsed("config", config=tuple(config))


# -- Dockerfile --------------------------------------------------------------------------
def _instructions(text: str) -> Iterator[tuple[str, str, int]]:
    """(INSTRUCTION, arguments, line): continuation lines (a trailing `\\`) joined,
    comments and blank lines inside a continuation skipped."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        start = i
        i += 1
        if not line or line.startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            nxt = lines[i].strip()
            i += 1
            if nxt.startswith("#") or not nxt:
                continue
            line = line[:-1] + " " + nxt
        word, _, rest = line.partition(" ")
        yield word.upper(), rest.strip(), start + 1


def _exec_or_shell(rest: str, line: int) -> list[Token]:
    if rest.startswith("["):
        try:
            words = json.loads(rest)
        except ValueError:
            words = None
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            return [Token(w, line, dynamic(w)) for w in words]
    return _shell_tokens(rest, line, redirections=True)  # run by `/bin/sh -c`


def parse_dockerfile(text: str, launchers: Sequence[str]) -> Parsed:
    commands: list[Command] = []
    env: list[EnvVar] = []
    entrypoint: list[Token] = []
    cmd: list[Token] = []
    for word, rest, line in _instructions(text):
        if word == "FROM":  # a new stage: its own entrypoint and command
            if entrypoint or cmd:
                commands.append(_docker_launch(entrypoint, cmd, launchers))
            entrypoint, cmd = [], []
        elif word == "ENV":
            words = _shell_words(rest, line)
            if words and "=" not in words[0]:  # the legacy `ENV NAME value` form
                env.append(EnvVar(words[0], " ".join(words[1:]), line))
            else:
                for w in words:
                    name, _, value = w.partition("=")
                    env.append(EnvVar(name, None if dynamic(value) else value, line))
        elif word == "ENTRYPOINT":
            entrypoint = _exec_or_shell(rest, line)
        elif word == "CMD":
            cmd = _exec_or_shell(rest, line)
        elif word == "RUN":
            parsed = parse_shell(rest, launchers, line)
            commands += parsed.commands
    if entrypoint or cmd:
        commands.append(_docker_launch(entrypoint, cmd, launchers))
    return Parsed("dockerfile", tuple(commands), tuple(env))


def _docker_launch(entrypoint: list[Token], cmd: list[Token], launchers: Sequence[str]) -> Command:
    tokens = [*entrypoint, *cmd]
    words, nested, _ = _unwrapped(tokens, launchers)
    if nested is not None and nested.commands:
        return nested.commands[0]
    if not entrypoint and cmd and cmd[0].text.startswith("--"):
        return command_of(cmd, launchers, bare_args=True)
    return command_of(words, launchers)


# -- which format a file is --------------------------------------------------------------
def _is_compose(path: Path) -> bool:
    name = path.name.lower()
    return name.startswith(("docker-compose", "compose")) and path.suffix in (".yaml", ".yml")


def _is_helm_values(path: Path) -> bool:
    return path.name.startswith("values") and path.suffix in (".yaml", ".yml")


def _is_dockerfile(path: Path) -> bool:
    name = path.name
    return name == "Dockerfile" or name.startswith("Dockerfile.") or name.endswith(".Dockerfile") or name == "Containerfile"


def _in_chart_templates(path: Path) -> bool:
    """A Helm chart's templates (Go templates, not YAML until rendered): the chart's
    values file is what the linter reads."""
    parts = path.absolute().parts
    if "templates" not in parts:
        return False
    chart = Path(*parts[: len(parts) - 1 - parts[::-1].index("templates")])
    return (chart / "Chart.yaml").is_file()


def format_of(path: Path, text: str) -> str | None:
    """The format of a file, by name and, for YAML, by its documents' shape; None for a
    file the linter does not read."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".tpl") and _in_chart_templates(path):
        return None
    if _is_dockerfile(path):
        return "dockerfile"
    if suffix in (".sh", ".bash") or text.startswith(("#!/bin/sh", "#!/bin/bash", "#!/usr/bin/env bash",
                                                       "#!/usr/bin/env sh")):
        return "shell"
    if suffix == ".py":
        return "python"
    if json_named(path):  # (`.json` itself too, as the server reads it)
        return "json"
    if suffix in (".yaml", ".yml"):
        if _is_compose(path):
            return "compose"
        if _is_helm_values(path):
            return "helm-values"
        return "yaml"
    return None


def _is_manifest(doc: Marked) -> bool:
    """A Kubernetes object by its content, in YAML or JSON alike: `apiVersion` and `kind`
    at the top level, or a `kind: List` (what `kubectl get -o yaml|json` writes)."""
    kind = doc.get("kind") if doc.is_map else None
    return kind is not None and (doc.get("apiVersion") is not None or kind.text == "List")


def parse_file(path: Path, launchers: Sequence[str] = DEFAULT_LAUNCHERS) -> Parsed | None:
    """Parse one file by its format (None: not a format the linter reads). Raises
    FormatError for a file that does not parse, OSError/YamlError for one that cannot be read."""
    text = read_text_limited(path)
    fmt = format_of(path, text)
    if fmt is None:
        return None
    if fmt == "shell":
        return parse_shell(text, launchers)
    if fmt == "python":
        return parse_python(text, launchers)
    if fmt == "dockerfile":
        return parse_dockerfile(text, launchers)
    if fmt == "json":
        try:
            load_json(text)  # JSON's own rules (and limits) first; lines from the YAML composer
        except YamlError as exc:
            raise FormatError(f"JSON error: {exc.problem}", exc.line or 1) from None
        docs = list(yaml_documents(text))
        if any(_is_manifest(d) for d in docs):  # `kubectl apply -f pod.json`, `kubectl get -o json`
            return parse_kubernetes(docs, launchers)
        return attrs.evolve(parse_config(docs), format="json")
    docs = list(yaml_documents(text))
    if fmt == "compose":
        return parse_compose(docs[0], launchers) if docs else Parsed("compose")
    if fmt == "helm-values":
        return parse_helm_values(docs, launchers)
    if any(_is_manifest(d) for d in docs):
        return parse_kubernetes(docs, launchers)
    if docs and docs[0].is_map and docs[0].get("services") is not None:
        return parse_compose(docs[0], launchers)
    refused = _loader_refusal(text, path.name)
    return attrs.evolve(parse_config(docs), refused=(refused,) if refused else ())
