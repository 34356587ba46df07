"""Round twenty-one's false passes of the read ratchet through a child's command as the
module composes it (an outside attack). Finding 3: a Python child whose argv is grown
(`.append`, `.extend`, `+=`), joined (`[exe] + rest`) or converted (`list((...))`,
`tuple([...])`) runs its file as the literal `[sys.executable, S]` does, and the file is
read; `python -m runpy MOD` runs the module; `-m torch.distributed.run --no-python python3
S` runs `python3 S`. Finding 7: either branch of a conditional expression, every operand of
`or`, a conditional prefix: a variable the command names (`printenv X`, `echo $X`) or a file
it runs is judged as without the conditional; an argv comprehension the scanner cannot
rebuild is `$?`. Finding 8: `executable=` replaces the program the argv names. Each read
case fails before its fix (configbags.migrate.childargv rebuilds every command, one model
for the names, the dumps and the files); the twins beside them read nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from ratchet_case import ENV_SETTINGS, fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"
HEAD = (
    "import asyncio, os, shutil, subprocess, sys\nHERE = os.path.dirname(os.path.abspath(__file__))\nROOT = os.path.dirname(HERE)\n"
    "S = os.path.join(HERE, '..', 'scripts', 'run.py')\nQ = os.path.join(HERE, '..', 'scripts', 'quiet.py')\n"
    "T = os.path.join(HERE, 'tools', 'dump.txt')\n"
)
READER = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
QUIET_TEXT = "print('hello')\n"
OUTSIDE = {"scripts/__init__.py": "", "scripts/run.py": READER, "scripts/quiet.py": QUIET_TEXT}
INSIDE = {"tools/dump.txt": READER, "tools/show.txt": "printenv SGLANG_PAGE_SIZE\n", "tools/hello.txt": "echo hello\n"}


def _result(tmp_path: Path, line: str, helpers: str = ""):  # type: ignore[no-untyped-def]
    for name, text in OUTSIDE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    body = "def f(script=None, cmd=None):\n" + textwrap.indent(line.replace("; ", "\n"), "    ") + "\n"
    return scan_pkg(tmp_path, {"user.py": HEAD + helpers + body, **INSIDE}, ENV_SETTINGS)


def _leaves(tmp_path: Path, line: str, helpers: str = "") -> set[str]:
    """Every leaf read, in any file (a file the child runs reports its reads in itself)."""
    result = _result(tmp_path, line, helpers)
    assert fails(result), result.reads
    return {leaf for _, _, leaf in read_keys(result)}


def _quiet(tmp_path: Path, line: str) -> None:
    result = _result(tmp_path, line)
    assert not fails(result), result.reads


# ---- finding 3: a Python child's argv composed, running a file

COMPOSED = [
    "argv = [sys.executable]; argv.extend([S]); subprocess.run(argv)",  # 36
    "argv = [sys.executable]; argv.append(S); subprocess.run(argv)",  # 46
    "argv = [sys.executable]; argv += [S]; subprocess.run(argv)",  # 47
    "argv = [S]; subprocess.run([sys.executable] + argv)",  # 37
    "subprocess.run([sys.executable] + ['-m', 'cProfile', S])",  # 40
    "argv = [sys.executable, '-m']; argv.extend(['cProfile', S]); subprocess.run(argv)",  # 2
    "argv = ['-m', 'cProfile', S]; subprocess.run([sys.executable] + argv)",  # 3
    "argv = [sys.executable]; argv.extend(['-u', S]); subprocess.run(argv)",  # 39
    "subprocess.run(list((sys.executable, S)))",  # 38
    "subprocess.run(list((sys.executable, '-m', 'cProfile', S)))",  # 35
    "subprocess.run(tuple([sys.executable, '-m', 'cProfile', S]))",  # 42
    "subprocess.run([sys.executable, '-m', 'cProfile', S][:])",  # 34
    "argv = [sys.executable]; argv.append(T); subprocess.Popen(argv).wait()",  # a Python file under the root
    "argv = ['-m', 'cProfile', S]; subprocess.run([sys.executable, *argv])",  # 4
    "argv = [sys.executable, '-u']; argv.insert(1, S); subprocess.run(argv)",
    "subprocess.run(argv := [sys.executable, S])",
    "subprocess.run([sys.executable, S], executable=None)",
    # os.exec* with the argv composed: its words after argv[0]
    "argv = [sys.executable]; argv.append('-m'); argv += ['cProfile', S]; os.execv(sys.executable, argv)",  # 1
    "argv = [sys.executable, '-m']; argv.extend(['cProfile', S]); os.execv(sys.executable, argv)",  # 41
    # runpy runs the module its first word names
    "subprocess.run([sys.executable, '-m', 'runpy', 'scripts.run'], cwd=ROOT)",  # 16
    "subprocess.run(['python3'] + ['-m', 'runpy', 'scripts.run'], cwd=ROOT)",  # 51
    # torchrun's `--no-python`: the program and its words are a command of their own
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--no-python', 'python3', S])",  # 60
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2',"
    " '--no-python', 'python3', S])",  # 55
]


@pytest.mark.parametrize("line", COMPOSED)
def test_a_composed_python_child_reads_through_its_file(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


COMPOSED_UNSHOWN = [
    "argv = [sys.executable]; argv.append(script); subprocess.run(argv)",
    "subprocess.run([sys.executable] + [sys.argv[1]])",
    "subprocess.run([sys.executable, '-m', 'runpy', script])",
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--no-python', 'python3', script])",
]


@pytest.mark.parametrize("line", COMPOSED_UNSHOWN)
def test_a_composed_python_child_running_a_file_not_shown_is_unresolved(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


COMPOSED_QUIET = [
    "argv = [sys.executable]; argv.extend(['-m', 'pip', 'install', 'x']); subprocess.run(argv)",
    "argv = [sys.executable]; argv.append(Q); subprocess.run(argv)",
    "subprocess.run([sys.executable] + ['-m', 'cProfile', Q])",
    "subprocess.run(list((sys.executable, '-m', 'http.server')))",
    "subprocess.run([sys.executable, '-m', 'runpy', 'scripts.quiet'], cwd=ROOT)",
    "subprocess.run([sys.executable, '-m', 'runpy', 'http.server'])",
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--no-python', 'python3', Q])",
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--no-python', 'nvidia-smi'])",
    "argv = [sys.executable, Q]; argv += ['--port', '8000']; subprocess.run(argv)",
    "argv = [sys.executable, Q]; argv.insert(1, '-u'); subprocess.run(argv)",
    "subprocess.run(argv := [sys.executable, Q])",
]


@pytest.mark.parametrize("line", COMPOSED_QUIET)
def test_a_composed_python_child_running_a_quiet_file_reads_nothing(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)


# ---- finding 7: a command in a branch of a conditional, an `or` operand, a conditional prefix

BRANCHES = [
    "subprocess.run(['printenv', 'SGLANG_PAGE_SIZE'] if S else ['true'])",  # 63
    "subprocess.run(['printenv', 'SGLANG_PAGE_SIZE'] if S else [])",  # 61
    "subprocess.run(['true'] if S else ['printenv', 'SGLANG_PAGE_SIZE'])",
    "debug = bool(S); subprocess.run(['printenv', 'SGLANG_PAGE_SIZE'] if debug else [])",  # 66
    "subprocess.run('echo $SGLANG_PAGE_SIZE' if S else 'true', shell=True)",  # 68
    "subprocess.run(cmd or ['printenv', 'SGLANG_PAGE_SIZE'])",  # 69
    "subprocess.run([sys.executable, S] if S else [])",  # 58
    "subprocess.run([sys.executable, '-m', 'cProfile', S] if S else [])",  # 50
    "subprocess.run(cmd or [sys.executable, S])",  # 70
    "prefix = ['nice'] if S else []; subprocess.run(prefix + [sys.executable, S])",  # 72
    "prefix = ['nice'] if S else []; subprocess.run(prefix + ['printenv', 'SGLANG_PAGE_SIZE'])",  # 71
    "argv = ['printenv', 'SGLANG_PAGE_SIZE'] if S else ['true']; subprocess.run(argv)",
    "subprocess.run(argv := ['printenv', 'SGLANG_PAGE_SIZE'])",
    "argv = ['printenv']; argv.insert(1, 'SGLANG_PAGE_SIZE'); subprocess.run(argv)",
    # a script fed on the standard input of a shell the conditional picks
    "subprocess.run(['sh'] if S else ['bash'], stdin=open(os.path.join(HERE, 'tools', 'show.txt')))",
    "subprocess.run((cmd or ['sh']) + ['-s'], stdin=open(os.path.join(HERE, 'tools', 'show.txt')))",
]


@pytest.mark.parametrize("line", BRANCHES)
def test_a_command_in_a_branch_is_judged_as_without_it(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "subprocess.run(['env'] if S else ['true'])",  # 64, the control
    "p = subprocess.Popen(['sh'] if S else ['true'], stdin=subprocess.PIPE); p.communicate(b'env')",
    "p = subprocess.Popen(['true'], executable='sh', stdin=subprocess.PIPE); p.communicate(b'env')",
])
def test_a_dump_in_a_branch_reads_the_environment_whole(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "subprocess.run([x for x in ('printenv', 'SGLANG_PAGE_SIZE')])",  # 73
    "subprocess.run(list(w for w in ('printenv', 'SGLANG_PAGE_SIZE')))",
])
def test_a_comprehension_argv_not_rebuilt_is_unresolved(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


BRANCHES_QUIET = [
    "subprocess.run(['nvidia-smi'] if S else ['true'])",
    "subprocess.run('echo hello' if S else 'true', shell=True)",
    "subprocess.run([sys.executable, Q] if S else [])",
    "subprocess.run(cmd or ['git', 'status'])",
    "prefix = ['nice'] if S else []; subprocess.run(prefix + [sys.executable, Q])",
    "subprocess.run(['sh'] if S else ['bash'], stdin=open(os.path.join(HERE, 'tools', 'hello.txt')))",
    # the function's callers hand the words over (judged at each call site)
    "subprocess.run([str(a) for a in cmd])",
    # a branch that only mentions or sets the variable, as without the branch
    "subprocess.run(['echo', 'SGLANG_PAGE_SIZE=1'] if S else [])",
    "subprocess.run(['env', 'SGLANG_PAGE_SIZE=1', 'true'] if S else ['true'])",
    "subprocess.run(cmd or 'SGLANG_PAGE_SIZE=1 true', shell=True)",
]


@pytest.mark.parametrize("line", BRANCHES_QUIET)
def test_a_harmless_command_in_a_branch_reads_nothing(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)


def test_a_branch_handed_to_a_run_helper_is_read(tmp_path: Path) -> None:
    helpers = "def sh(c):\n    return subprocess.run(c)\n"
    assert PAGE in _leaves(tmp_path, "sh(['printenv', 'SGLANG_PAGE_SIZE'] if S else [])", helpers)


# ---- finding 8: `executable=` is the program that runs

EXECUTABLE = [
    "subprocess.Popen(['true', 'SGLANG_PAGE_SIZE'], executable='printenv')",  # 84
    "argv = ['true', 'SGLANG_PAGE_SIZE']; subprocess.Popen(argv, executable='printenv')",
    "subprocess.run(['true', S], executable=sys.executable)",  # 87, read through the file
    "subprocess.run(['worker'] + [S], executable=sys.executable)",
    "subprocess.run('printenv SGLANG_PAGE_SIZE', shell=True, executable='/bin/bash')",
    "subprocess.Popen(args=['true', 'SGLANG_PAGE_SIZE'], executable='printenv')",
    "asyncio.run(asyncio.create_subprocess_exec('true', 'SGLANG_PAGE_SIZE', executable='printenv'))",
]


@pytest.mark.parametrize("line", EXECUTABLE)
def test_the_executable_keyword_is_the_program_judged(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "subprocess.run(['true'], executable='env')",  # 86
    "subprocess.run(['worker', 'A=1'], executable='/usr/bin/env')",
    "subprocess.run('worker', executable='env')",
    "subprocess.run('env', shell=True, executable='/bin/bash')",
])
def test_an_executable_that_prints_the_environment_reads_it_whole(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


EXECUTABLE_QUIET = [
    "subprocess.run(['printenv', 'SGLANG_PAGE_SIZE'], executable='true')",
    "subprocess.run(['env'], executable='/bin/true')",
    "subprocess.run(['sglang-worker', Q], executable=sys.executable)",
    "subprocess.run(['sglang-worker', '-m', 'http.server'], executable=sys.executable)",
    "subprocess.run('echo hello', shell=True, executable='/bin/bash')",
    "subprocess.run('echo hello', shell=True, executable=shutil.which('bash'))",
    "argv = ['worker', '--port', '1']; subprocess.Popen(argv, executable=shutil.which('nvidia-smi'))",
]


@pytest.mark.parametrize("line", EXECUTABLE_QUIET)
def test_an_executable_that_reads_nothing_stays_quiet(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)
