"""Round sixteen's child processes (an outside attack): a shell decides the command
position after reserved words and inside compound commands (`if ...; then env; fi`, `{ env;
}`, `! env`, a function's body, `$(echo env)`: family 3), removes quotes before a name is a
name (`printenv SGLANG_PAGE''_SIZE`: 4), expands a glob that may name `/proc/self/environ`
(5), and runs the command an expansion gives (`exec "$@"` with the argv words after a `-c`
script, `"$0"`, `set --`, `cmd=env; $cmd`, an alias: 15); other interpreters spell the
environment in more ways (perl's `$main::ENV`, `$::ENV`, `${"ENV"}`; node's `process["env"]`,
`const {env} = process`: 6), and `python -m timeit` runs its statements as Python code (7).
Each rule has code that reads nothing beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import os, pathlib, subprocess, sys\nHERE = pathlib.Path(__file__).parent\n"


def _result(tmp_path: Path, line: str, files: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return scan_pkg(tmp_path, {"user.py": HEAD + f"def f():\n    {line}\n", **(files or {})})


def _reads(tmp_path: Path, line: str, files: dict[str, str] | None = None) -> set[str]:
    return {leaf for file, _, leaf in read_keys(_result(tmp_path, line, files)) if file == "pkg/user.py"}


def _sh(script: str, *args: str) -> str:
    return f"subprocess.run({['sh', '-c', script, *args]!r}, capture_output=True)"


# ---- 3: the command position after reserved words and inside compound commands


@pytest.mark.parametrize("script", [
    "{ env; }",
    "if true; then env; fi",
    "if false; then :; else env; fi",
    "if false; then :; elif env; then :; fi",
    "! env",
    "while env; do break; done",
    "until env; do :; done",
    "for x in 1; do env | sort; done",
    "f() { env; }; f",
    "function f { env; }; f",
    "$(echo env)",
    "`echo env`",
    "if [ -n \"$DEBUG_ENV\" ]; then env | sort; fi",
])
def test_env_inside_a_compound_command_reads_the_environment(tmp_path: Path, script: str) -> None:
    assert "$?" in _reads(tmp_path, _sh(script))


@pytest.mark.parametrize("script", [
    "if [ -n \"$DEBUG_ENV\" ]; then echo hi; fi",
    "{ echo hi; }",
    "while true; do break; done",
    "f() { echo env; }; f",
    "x=$(date); echo $x",
    "$(which python3) -c 'print(1)'",
    "if true; then echo if then env; fi",
])
def test_a_compound_command_without_an_env_read_reads_nothing(tmp_path: Path, script: str) -> None:
    assert not fails(_result(tmp_path, _sh(script)))


LAUNCH = "subprocess.run(['sh', os.path.join(HERE, 'scripts', 'launch.sh')], capture_output=True)"


def test_a_one_line_if_in_a_script_file_dumping_env_reads_it(tmp_path: Path) -> None:
    files = {"scripts/launch.sh": '#!/bin/sh\nif [ -n "$DEBUG_ENV" ]; then env | sort; fi\necho launched\n'}
    assert "$?" in _reads(tmp_path, LAUNCH, files)


def test_a_one_line_if_in_a_script_file_echoing_reads_nothing(tmp_path: Path) -> None:
    files = {"scripts/launch.sh": '#!/bin/sh\nif [ -n "$DEBUG_ENV" ]; then echo debug; fi\necho launched\n'}
    assert not fails(_result(tmp_path, LAUNCH, files))


# ---- 4: quote removal in a variable's name


@pytest.mark.parametrize("script", [
    "printenv SGLANG_PAGE''_SIZE",
    'printenv "SGLANG_PAGE"_SIZE',
    "printenv SGLANG_PAGE\\_SIZE",
    "printenv 'SGLANG_'PAGE_SIZE",
])
def test_a_name_spelled_with_quotes_is_read(tmp_path: Path, script: str) -> None:
    assert PAGE in _reads(tmp_path, _sh(script))


@pytest.mark.parametrize("line", [
    _sh("export SGLANG_PAGE''_SIZE=16; echo hi"),
    "subprocess.run(['echo', \"SGLANG_PAGE''_SIZE\"], capture_output=True)",
    _sh("printenv 'SGLANG_PAGE' '_SIZE'"),
])
def test_a_quoted_name_only_set_or_mentioned_is_not_read(tmp_path: Path, line: str) -> None:
    assert PAGE not in _reads(tmp_path, line)


# ---- 5: a shell glob that may name the environment file


@pytest.mark.parametrize("script", [
    "cat /proc/self/env*",
    "cat /proc/self/e?viron",
    "cat /proc/$$/env[i]ron",
    "tr '\\0' '\\n' < /proc/self/envi*",
])
def test_a_glob_on_the_environment_file_reads_it(tmp_path: Path, script: str) -> None:
    assert "$?" in _reads(tmp_path, _sh(script))


@pytest.mark.parametrize("script", ["cat /proc/self/stat*", "ls /proc/self/fd/*", "cat /proc/cpu*"])
def test_a_glob_on_other_proc_files_reads_nothing(tmp_path: Path, script: str) -> None:
    assert not fails(_result(tmp_path, _sh(script)))


# ---- 6: other interpreters' spellings of the environment


@pytest.mark.parametrize("argv", [
    ["perl", "-e", 'print $main::ENV{"SGLANG_PAGE"."_SIZE"}'],
    ["perl", "-e", 'print $::ENV{"SGLANG_PAGE"."_SIZE"}'],
    ["perl", "-e", 'print ${"ENV"}{"SGLANG_PAGE"."_SIZE"}'],
    ["perl", "-e", 'print $ENV{"SGLANG_PAGE"."_SIZE"}'],
    ["perl", "-e", "print join ',', %main::ENV"],
    ["node", "-e", 'console.log(process["env"]["SGLANG_PAGE"+"_SIZE"])'],
    ["node", "-e", "console.log(process['env']['SGLANG_PAGE'+'_SIZE'])"],
    ["node", "-e", 'const {env}=process; console.log(env["SGLANG_PAGE"+"_SIZE"])'],
    ["node", "-e", 'const { env: e } = process; console.log(e["SGLANG_PAGE"+"_SIZE"])'],
    ["node", "-e", 'const {argv, env} = require("process"); console.log(env["SGLANG_PAGE"+"_SIZE"])'],
    ["node", "-e", "const {env: {SGLANG_PAGE_SIZE: page}} = process; console.log(page)"],
    ["node", "-e", 'import { env } from "node:process"; console.log(env["SGLANG_PAGE"+"_SIZE"])'],
])
def test_another_interpreters_environment_spelling_reads_it(tmp_path: Path, argv: list[str]) -> None:
    assert "$?" in _reads(tmp_path, f"subprocess.run({argv!r}, capture_output=True)")


@pytest.mark.parametrize("argv", [
    ["perl", "-e", "print $ENV{HOME}"],
    ["perl", "-e", 'print $main::ENV{"HOME"}'],
    ["perl", "-e", "my %h = (a => 1); print $main::x, $h{a}"],
    ["node", "-e", "const {argv} = process; console.log(argv)"],
    ["node", "-e", 'console.log(process["argv"])'],
])
def test_another_interpreters_code_without_the_environment_reads_nothing(tmp_path: Path, argv: list[str]) -> None:
    assert not fails(_result(tmp_path, f"subprocess.run({argv!r}, capture_output=True)"))


def test_a_perl_file_with_a_symbolic_env_reads_it(tmp_path: Path) -> None:
    line = "subprocess.run(['perl', str(HERE / 'tools' / 'show.pl')], capture_output=True)"
    files = {"tools/show.pl": 'print ${"ENV"}{"SGLANG_PAGE" . "_SIZE"};\n'}
    assert "$?" in _reads(tmp_path, line, files)
    assert not fails(_result(tmp_path, line, {"tools/show.pl": 'print "hi\\n";\n'}))


# ---- 7: `python -m timeit` runs its statements as Python code


@pytest.mark.parametrize("argv", [
    ["python3", "-m", "timeit", "-n1", "-r1", "import os;print(os.environ['SGLANG_PAGE'+'_SIZE'])"],
    ["python3", "-m", "timeit", "-s", "import os", "print(dict(os.environ))"],
    ["python3", "-m", "timeit", "--setup=import os; print(os.environ)", "pass"],
    ["python3", "-mtimeit", "import os; print(os.environ.copy())"],
])
def test_timeit_statements_are_judged_as_python(tmp_path: Path, argv: list[str]) -> None:
    assert "$?" in _reads(tmp_path, f"subprocess.run({argv!r}, capture_output=True)")


@pytest.mark.parametrize("argv", [
    ["python3", "-m", "timeit", "1+1"],
    ["python3", "-m", "timeit", "-n", "5", "-s", "import os", "os.getpid()"],
    ["python3", "-m", "json.tool", "import os; print(os.environ)"],
])
def test_timeit_statements_without_the_environment_read_nothing(tmp_path: Path, argv: list[str]) -> None:
    assert "$?" not in _reads(tmp_path, f"subprocess.run({argv!r}, capture_output=True)")


# ---- 15: a command word that comes from an expansion


@pytest.mark.parametrize("line", [
    _sh('cd / && exec "$@"', "sh", "env"),
    _sh('exec "$@"', "sh", "printenv"),
    _sh('"$0"', "env"),
    _sh('"$1"', "sh", "env"),
    _sh('set -- env; "$@"'),
    _sh("cmd=env; $cmd"),
    _sh('cmd="env -0"; $cmd'),
    _sh("cmd=env; ${cmd}"),
    _sh('export cmd=env; "$cmd"'),
    _sh("cmd=$(command -v env); $cmd"),  # (a value not shown: the command is not known)
    _sh('run=${RUNNER:-env}; $run'),
    "subprocess.run(['bash', '-O', 'expand_aliases', '-c', 'alias e=env\\ne'], capture_output=True)",
    _sh("alias e='env -0'; e"),
])
def test_a_command_word_from_an_expansion_is_resolved(tmp_path: Path, line: str) -> None:
    assert "$?" in _reads(tmp_path, line)


@pytest.mark.parametrize("line", [
    _sh('cd / && exec "$@"', "sh", "python3", "-c", "print(1)"),
    _sh('"$0"', "echo"),
    _sh('set -- a b; echo "$@"'),
    _sh("cmd=true; $cmd"),
    _sh("alias ll='ls -l'; ll"),
    _sh("$PYTHON -c 'print(1)'"),
    _sh('PY=${PYTHON:-python3}; $PY -c "print(1)"'),
    _sh('exec "$@"'),
    "subprocess.run(['sh', '-c', 'exec \"$@\"', 'sh', *sys.argv[1:]], capture_output=True)",
])
def test_a_command_word_from_a_harmless_expansion_reads_nothing(tmp_path: Path, line: str) -> None:
    assert not fails(_result(tmp_path, line))
