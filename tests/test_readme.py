"""The README's code blocks, run: they print what the README says they print.

Every fenced block is claimed by one test here (a block nobody claims fails
`test_every_block_is_run`):
- the python blocks of the tour run in one fresh process, in order; a line `expr  # 8 ...`
  whose comment starts with a Python literal asserts that `expr` is that value;
- the engine block (`configbags init`, `configbags gen`, then its python block) runs in a new
  project, as a new user would;
- the yaml leaf of step 3 is appended to a copy of the schema and generated;
- each `.venv/bin/configbags ...` command runs, and the `# ...` lines under it are the lines
  it prints (`...` stands for anything);
- the `configbags serve` transcript runs against a real server: each curl, then the JSON under
  it (`{...}` is any value, `...` in an object any other keys, `...` in a string any text)."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from genutil import REPO

README = REPO / "README.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)\s*$")


@attrs.frozen
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based

    @property
    def where(self) -> str:
        return f"README.md:{self.line}"


def blocks() -> list[Block]:
    found, lines = [], README.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = textwrap.dedent("\n".join(line[len(opening["indent"]):] for line in lines[i + 1:end]))
        found.append(Block(opening["lang"], body + "\n", i + 1))
        i = end + 1
    return found


BLOCKS = blocks()


def _claimed(block: Block) -> str:
    """Which test runs `block` (or why none does)."""
    if block.lang == "python":
        return "engine" if "myengine" in block.text else "tour"
    if block.lang == "yaml":
        return "new leaf"
    if "configbags init" in block.text:
        return "engine"
    if "$ configbags serve" in block.text:
        return "serve"
    if ".venv/bin/configbags" in block.text:
        return "commands"
    if all(line.startswith("make ") for line in block.text.splitlines()):
        return "not run: the make targets are what CI runs"
    return ""


def test_every_block_is_run() -> None:
    unclaimed = [b.where for b in BLOCKS if not _claimed(b)]
    assert not unclaimed, f"README blocks no test runs: {unclaimed}; claim them in tests/test_readme.py"
    assert {_claimed(b) for b in BLOCKS} >= {"tour", "engine", "new leaf", "serve", "commands"}


# -- python --------------------------------------------------------------------------------------

def _literal_comment(comment: str) -> tuple[bool, Any]:
    word = comment.lstrip("#").split(maxsplit=1)[0].rstrip(",;:") if comment.strip("# ") else ""
    try:
        return True, ast.literal_eval(word)
    except (ValueError, SyntaxError):
        return False, None


def checked(source: str, where: str) -> str:
    """`source` with each expression line whose comment starts with a literal turned into an
    assertion that the expression has that value."""
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and node.lineno == node.end_lineno and node.lineno in comments:
            is_literal, value = _literal_comment(comments[node.lineno])
            if is_literal:
                expr = ast.get_source_segment(source, node)
                message = f"{where}: {expr} is not {value!r} as the README says"
                lines[node.lineno - 1] = f"_got = {expr}\nassert _got == {value!r}, ({message!r}, _got)"
    return "\n".join(lines) + "\n"


def test_checked_turns_literal_comments_into_assertions() -> None:
    source = "x = 3\nx  # 3, an int\nx + 1  # the next one\nx  # 4\n"
    out = checked(source, "t")
    assert out.count("assert") == 2
    with pytest.raises(AssertionError, match="t: x is not 4"):
        exec(out, {})


def _run_python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False, env={**os.environ, **env})


def test_the_tour_runs_and_reads_what_it_says(tmp_path: Path) -> None:
    tour = [b for b in BLOCKS if _claimed(b) == "tour"]
    assert len(tour) >= 2
    code = "".join(checked(b.text, b.where) for b in tour)
    assert "assert _got ==" in code  # `cfg.parallel.tp_size  # 8` is checked, not only run
    done = _run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new project where the README's engine commands ran (all but `pip install`)."""
    cwd = root = tmp_path_factory.mktemp("engine")
    (block,) = (b for b in BLOCKS if _claimed(b) == "engine" and b.lang == "sh")
    for line in block.text.splitlines():
        argv = shlex.split(line, comments=True)
        if argv[:2] == ["pip", "install"]:
            continue  # this checkout's venv has configbags[gen] already
        if argv[0] == "cd":  # "a project with a pyproject.toml"
            cwd = root / argv[1]
            (cwd / argv[1]).mkdir(parents=True)  # "... and its package"
            (cwd / argv[1] / "__init__.py").write_text("")
            (cwd / "pyproject.toml").write_text(f'[project]\nname = "{argv[1]}"\nversion = "0.1"\n')
            continue
        assert argv[0] == "configbags", f"{block.where}: a command this test does not know: {line}"
        done = subprocess.run([str(BIN / "configbags"), *argv[1:]], cwd=cwd, capture_output=True,
                              text=True, timeout=180, check=False)
        assert done.returncode == 0, f"{block.where}: {line}\n{done.stderr}"
    return cwd


@pytest.mark.slow  # generates and imports a package
def test_the_engine_block_generates_a_package_that_reads_what_it_says(engine: Path) -> None:
    assert (engine / "myengine" / "config" / "accessors.py").is_file()  # where the comment says
    (block,) = (b for b in BLOCKS if _claimed(b) == "engine" and b.lang == "python")
    done = _run_python(checked(block.text, block.where), engine, PYTHONPATH=str(engine))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # generates a schema in a subprocess
def test_the_new_leaf_of_step_3_generates_what_it_says(tmp_path: Path) -> None:
    import shutil

    (block,) = (b for b in BLOCKS if _claimed(b) == "new leaf")
    schema = tmp_path / "schema"
    shutil.copytree(REPO / "schema", schema)
    with (schema / "namespaces" / "schedule.yaml").open("a") as f:
        f.write("\n" + textwrap.indent(block.text, "  "))
    out = tmp_path / "out" / "readme_pkg"
    done = subprocess.run(
        [str(BIN / "configbags"), "gen", "--schema", str(schema), "--package", "readme_pkg", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    probe = (
        "import typing\n"
        "from readme_pkg.accessors import get_schedule, publish\n"
        "from readme_pkg.bags import Schedule\n"
        "from readme_pkg.server_args import ServerArgs\n"
        "publish(ServerArgs.from_cli(['--model-path', 'm', '--max-batch-wait-ms', '7']), role='scheduler')\n"
        "assert get_schedule().max_batch_wait_ms == 7\n"
        "assert typing.get_type_hints(Schedule)['max_batch_wait_ms'] == typing.Optional[int]\n"
    )
    used = _run_python(probe, tmp_path, PYTHONPATH=str(tmp_path / "out"))
    assert used.returncode == 0, used.stderr
    assert "max_batch_wait_ms" in (out / "CONFIG.md").read_text()


# -- commands with their output ------------------------------------------------------------------

@attrs.frozen
class Command:
    argv: list[str]
    expected: list[str]  # the `# ` lines under it
    where: str


def commands(block: Block) -> Iterator[Command]:
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        text, first = lines[i], i
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        expected = []
        while i < len(lines) and lines[i].startswith("# "):
            expected.append(lines[i][2:])
            i += 1
        yield Command(shlex.split(text, comments=True), expected, f"README.md:{block.line + 1 + first}")


def _pattern(line: str) -> str:
    pattern = ".*".join(map(re.escape, line.split("...")))
    return re.sub(r"(?:\\ )+", " +", pattern)  # re.escape writes a space as "\ "


def _shows(output: str, expected: list[str]) -> bool:
    """Does `output` hold the `expected` lines, in order (runs of spaces are any run)?"""
    out = iter(output.splitlines())
    return all(any(re.fullmatch(_pattern(e.strip()), o.strip()) for o in out) for e in expected)


def test_shows_matches_lines_in_order_with_ellipses() -> None:
    out = "a = 1   [x: y]\n  more\nb = 2\n"
    assert _shows(out, ["a = 1 [x: ...]", "b = 2"])
    assert not _shows(out, ["b = 2", "a = 1 [x: y]"])
    assert not _shows(out, ["a = 2 [x: ...]"])
    # a number shown is the number printed: no line of the README is taken on trust
    assert not _shows("schedule.mem_fraction_static = 0.869   [hardware: r]",
                      ["schedule.mem_fraction_static = 0.838 [hardware: ...]"])


# `plan` loads torch for its meta allocation: seconds a process, so those run in `make test` only
@pytest.mark.parametrize("command", [
    pytest.param(c, marks=[pytest.mark.slow] if c.argv[1] == "plan" else [])
    for b in BLOCKS if _claimed(b) == "commands" for c in commands(b)], ids=lambda c: " ".join(c.argv[1:3]))
def test_each_command_prints_what_the_readme_shows(command: Command) -> None:
    assert command.argv[0] == ".venv/bin/configbags", command.where
    done = subprocess.run([str(BIN / "configbags"), *command.argv[1:]], cwd=REPO, capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{command.where}: {done.stderr}"
    assert done.stdout.strip(), command.where
    assert _shows(done.stdout, command.expected), f"{command.where}: shows {command.expected}, prints:\n{done.stdout}"


# -- the serve transcript ------------------------------------------------------------------------

ANY, MORE = "\0any", "\0more"


def expected_json(text: str) -> Any:
    """The README's elided JSON as data: `{...}` becomes ANY, a `...` among an object's
    keys a MORE key; a `...` inside a string stays for `matches`."""
    out, in_string, i = [], False, 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(text[i:i + 2] if c == "\\" else c)
            i += 2 if c == "\\" else 1
            in_string = c != '"'
            continue
        if text.startswith("{...}", i):
            out.append(json.dumps(ANY))
            i += 5
        elif text.startswith("...", i):
            out.append(f"{json.dumps(MORE)}: null")
            i += 3
        else:
            out.append(c)
            in_string = c == '"'
            i += 1
    return json.loads("".join(out))


def matches(expected: Any, got: Any) -> bool:
    if expected == ANY:
        return True
    if isinstance(expected, dict):
        keys = expected.keys() - {MORE}
        if not isinstance(got, dict) or not (keys <= got.keys() if MORE in expected else keys == got.keys()):
            return False
        return all(matches(expected[k], got[k]) for k in keys)
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(matches, expected, got))
    if isinstance(expected, str) and "..." in expected:
        return isinstance(got, str) and re.fullmatch(".*".join(map(re.escape, expected.split("..."))), got, re.S) is not None
    return type(expected) is type(got) and expected == got


def test_matches_reads_the_readmes_elisions() -> None:
    shown = expected_json('{"a": {...}, "b": [{"c": 1, ...}], "m": "x (y,\\n z) ...", ...}')
    assert matches(shown, {"a": [1], "b": [{"c": 1, "d": 2}], "m": "x (y,\n z) and more", "e": 0})
    assert not matches(shown, {"a": 1, "b": [{"c": 2}], "m": "x (y,\n z)"})
    assert not matches(expected_json('{"c": 1}'), {"c": 1, "d": 2})
    assert not matches(expected_json('{"c": 1}'), {"c": 1.0})


@attrs.frozen
class Exchange:
    curl: list[str]
    shown: str
    where: str


def transcript(block: Block) -> tuple[list[str], list[Exchange]]:
    """The serve command's flags and each curl with the output shown under it."""
    lines, serve, exchanges = block.text.splitlines(), [], []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        text, first = lines[i][2:], i
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        shown = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(("$ ", "#")):
            shown.append(lines[i])
            i += 1
        argv = shlex.split(text.rstrip("& "))
        if argv[:2] == ["configbags", "serve"]:
            serve = argv[2:]
        else:
            exchanges.append(Exchange(argv, "".join(shown), f"README.md:{block.line + 1 + first}"))
    return serve, exchanges


def send(client: httpx.Client, curl: list[str]) -> httpx.Response:
    """A curl command line, sent as curl would send it."""
    assert curl[0] == "curl", curl
    method, headers, data, url = "GET", {}, None, None
    args = iter(curl[1:])
    for arg in args:
        if arg == "-s":
            continue
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            name, _, value = next(args).partition(": ")
            headers[name] = value
        elif arg == "-d":
            data = next(args)
            method = "POST" if method == "GET" else method
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")  # curl's
        else:
            assert url is None and arg.startswith("localhost:30000/"), arg
            url = arg[len("localhost:30000"):]
    assert url is not None, curl
    return client.request(method, url, headers=headers, content=data)


SERVE = next(b for b in BLOCKS if _claimed(b) == "serve")


@pytest.mark.slow  # a server process
def test_the_serve_transcript_answers_what_it_shows() -> None:
    pytest.importorskip("fastapi")
    from serve_server import Server

    flags, exchanges = transcript(SERVE)
    assert len(exchanges) >= 5
    server, wrong = Server(*flags), []
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for exchange in exchanges:  # in order: a PATCH changes what the next read shows
                got = send(client, exchange.curl).json()
                if not matches(expected_json(exchange.shown), got):
                    wrong.append(f"{exchange.where}: shows\n{exchange.shown}\nanswers\n{_short(got)}")
    finally:
        server.stop()
    assert not wrong, "\n\n".join(wrong)


def _short(got: Any) -> str:
    """The answer with its big objects elided, as the README would show it."""
    if isinstance(got, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {'{...}' if isinstance(v, dict) and len(v) > 8 else json.dumps(v)}"
                               for k, v in got.items()) + "}"
    return json.dumps(got)


def test_every_rule_the_docs_cite_is_at_the_line_they_give() -> None:
    """`rule ID (schema/rules.yaml:N)` in the README and docs/*.md names the line where the
    rule is declared, as explain prints it: a rules edit that moves one shows here."""
    rules = (REPO / "schema" / "rules.yaml").read_text(encoding="utf-8").splitlines()
    declared = {line.strip()[:-1]: n for n, line in enumerate(rules, 1)
                if line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":")}
    cited = [(doc.name, rule, int(line)) for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
             for rule, line in re.findall(r"rule (\w+) \(schema/rules\.yaml:(\d+)\)", doc.read_text(encoding="utf-8"))]
    assert cited
    wrong = [(doc, rule, line, declared.get(rule)) for doc, rule, line in cited if declared.get(rule) != line]
    assert not wrong, f"(doc, rule, cited line, declared line): {wrong}"
