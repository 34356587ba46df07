"""Launch lines as people type them, collected from a tree: the engine's docs, scripts,
tests and deployment files (`cli-check --harvest DIR`, `import-dataclass --harvest DIR`).

A launch line is a command that runs one of the `launchers`: a module run with `-m`
(`python -m myengine.launch_server` for the launcher `myengine`), a command word by its
file name (`myengine-serve`), or a run of words (`vllm serve`). Its argv is every word
after the launcher, up to a shell operator. Lines are found in

- Markdown: fenced code blocks (a `$ ` prompt is dropped), backslash continuations joined;
- shell scripts (`*.sh`, `*.bash`): the same, outside comments;
- Python: string literals that spell a command, and lists of string literals
  (`subprocess.run(["python", "-m", "myengine.launch", "--tp", "2"])`);
- YAML: string scalars, and lists of strings (a Kubernetes `command:`/`args:` pair is
  joined when `args:` follows a launcher `command:`).

Words the shell would expand (`$TP`, `${MODEL}`) are kept as written: both parsers see
the same text. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import yaml

from configbags.runtime.cmdline import Progress

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".configbags-cache", "build", "dist"}
_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "1>", "&>"}
_FENCE = re.compile(r"^\s*(```|~~~)")
_MAX_BYTES = 2_000_000


@attrs.frozen
class Launch:
    file: str  # relative to the harvested root
    line: int
    argv: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def harvest(root: Path, launchers: Sequence[str], progress: Progress | None = None) -> list[Launch]:
    """Every launch line under `root`, in file order; the same argv once (its first place).
    `progress(files read, files to read)` after each file."""
    found: list[Launch] = []
    seen: set[tuple[str, ...]] = set()
    files = list(_files(root))
    for done, path in enumerate(files, start=1):
        if progress is not None:
            progress(done, len(files))
        rel = path.relative_to(root).as_posix()
        try:
            if path.stat().st_size > _MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line, words in _commands(path.suffix.lower(), text):
            argv = _after_launcher(words, launchers)
            if argv is not None and argv not in seen:
                seen.add(argv)
                found.append(Launch(rel, line, argv))
    return found


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if any(part in _SKIP_DIRS for part in path.relative_to(root).parts[:-1]):
            continue
        if path.is_file() and path.suffix.lower() in (".md", ".markdown", ".sh", ".bash", ".py", ".yaml", ".yml"):
            yield path


def _commands(suffix: str, text: str) -> Iterator[tuple[int, list[str]]]:
    if suffix in (".md", ".markdown"):
        yield from _markdown(text)
    elif suffix in (".sh", ".bash"):
        yield from _shell(text.splitlines(), 1)
    elif suffix == ".py":
        yield from _python(text)
    else:
        yield from _yaml(text)


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: not a command line
        return None


def _shell(lines: Sequence[str], first: int) -> Iterator[tuple[int, list[str]]]:
    """Commands of shell lines (continuations joined), numbered from `first`."""
    pending: list[str] = []
    start = first
    for number, raw in enumerate(lines, start=first):
        line = raw.strip()
        if not pending:
            start = number
            line = line.removeprefix("$ ")
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        words = _split(" ".join(pending))
        pending = []
        if words:
            yield start, words


def _markdown(text: str) -> Iterator[tuple[int, list[str]]]:
    lines = text.splitlines()
    block: list[str] = []
    start = 0
    inside = False
    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            if inside:
                yield from _shell(block, start)
                block = []
            inside, start = not inside, number + 1
        elif inside:
            block.append(line)
        elif line.lstrip().startswith("$ ") or "`" in line:
            for code in re.findall(r"`([^`]+)`", line) or [line]:
                words = _split(code.strip().removeprefix("$ "))
                if words:
                    yield number, words


def _python(text: str) -> Iterator[tuple[int, list[str]]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value:
            for offset, words in _shell(node.value.splitlines(), 0):
                yield node.lineno + offset, words
        elif isinstance(node, (ast.List, ast.Tuple)) and any(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
        ):
            # `[sys.executable, "-m", "myengine.launch", ...]`: a computed word stays as written
            yield node.lineno, [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str)
                                else ast.unparse(e) for e in node.elts]


def _yaml(text: str) -> Iterator[tuple[int, list[str]]]:
    try:
        root = yaml.compose_all(text, Loader=yaml.SafeLoader)
        documents = list(root)
    except yaml.YAMLError:
        return
    for document in documents:
        if document is not None:
            yield from _yaml_node(document)


def _yaml_node(node: yaml.Node) -> Iterator[tuple[int, list[str]]]:
    if isinstance(node, yaml.ScalarNode) and isinstance(node.value, str) and " " in node.value:
        for offset, words in _shell(node.value.splitlines(), 0):
            yield node.start_mark.line + 1 + offset, words
    elif isinstance(node, yaml.SequenceNode):
        items = node.value
        if items and all(isinstance(i, yaml.ScalarNode) for i in items):
            yield node.start_mark.line + 1, [str(i.value) for i in items]
        for item in items:
            if not isinstance(item, yaml.ScalarNode):
                yield from _yaml_node(item)
    elif isinstance(node, yaml.MappingNode):
        values = {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        command, args = values.get("command"), values.get("args")
        joined = isinstance(command, yaml.SequenceNode) and isinstance(args, yaml.SequenceNode)
        if isinstance(command, yaml.SequenceNode) and isinstance(args, yaml.SequenceNode):
            words = [str(i.value) for i in [*command.value, *args.value] if isinstance(i, yaml.ScalarNode)]
            yield command.start_mark.line + 1, words
        for _, value in node.value:
            if not (joined and value in (command, args)):
                yield from _yaml_node(value)


def _after_launcher(words: Sequence[str], launchers: Sequence[str]) -> tuple[str, ...] | None:
    """The argv after the first launcher word (a word containing a launcher, or a run of
    words spelling it: `myengine serve`), up to a shell operator; None without one."""
    for index in range(len(words)):
        for launcher in launchers:
            parts = launcher.split()
            if len(parts) == 1 and _runs(words, index, launcher):
                end = index + 1
            elif len(parts) > 1 and list(words[index:index + len(parts)]) == parts:
                end = index + len(parts)
            else:
                continue
            argv: list[str] = []
            for word in words[end:]:
                if word in _OPERATORS:
                    break
                argv.append(word)
            return tuple(argv)
    return None


def _runs(words: Sequence[str], index: int, launcher: str) -> bool:
    """Whether words[index] runs `launcher`: `-m launcher[.module]`, or the command word
    itself (first, after `VAR=value` assignments or `exec`), by its file name."""
    word = words[index]
    if index > 0 and words[index - 1] == "-m":
        return word == launcher or word.startswith(launcher + ".")
    before = [w for w in words[:index] if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w) and w not in ("exec", "sudo")]
    return not before and word.rsplit("/", 1)[-1] == launcher
