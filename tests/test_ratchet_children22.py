"""Round twenty-two's child-command findings of the read ratchet (an outside attack).
Finding 8 (precision): a command handed to a run helper reads what the same command
launched directly reads: nothing for a variable it only sets, unsets or mentions (`env
NAME=16 cmd`, `docker run -e NAME=16`, `export NAME=16`, `env -u NAME`, echo text).
Finding 3: `executable=` through a run helper (`**kw`, a parameter handed on) and as a
conditional is the program judged. Finding 4: a command list edited in place is rebuilt
as edited, `$?` where the edit is not followed. Finding 6: a script under the roots that
runs the project's module by `-m` (after a `cd`) reads through the module's file. The
twins beside each read nothing, or still read."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from ratchet_case import ENV_SETTINGS, fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"
HEAD = (
    "import os, shutil, subprocess, sys\nfrom pkg.runh import sh2, sh3\n"
    "HERE = os.path.dirname(os.path.abspath(__file__))\nROOT = os.path.dirname(HERE)\n"
    "def sh(cmd, **kw):\n    return subprocess.run(cmd, **kw)\n"
)
READER_TEXT = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
RUNH = (
    "import subprocess\ndef sh2(cmd, **kw):\n    return subprocess.run(cmd, **kw)\n"
    "def sh3(*argv, exe=None):\n    return subprocess.run(list(argv), executable=exe)\n"
)


def _result(tmp_path: Path, line: str, extra: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    body = "def f(script=None, flag=None):\n" + textwrap.indent(line.replace(" ;; ", "\n"), "    ") + "\n"
    return scan_pkg(tmp_path, {"user.py": HEAD + body, "runh.py": RUNH, **(extra or {})}, ENV_SETTINGS)


def _leaves(tmp_path: Path, line: str, extra: dict[str, str] | None = None) -> set[str]:
    result = _result(tmp_path, line, extra)
    assert fails(result), (line, result.reads)
    return {leaf for _, _, leaf in read_keys(result)}


def _quiet(tmp_path: Path, line: str, extra: dict[str, str] | None = None) -> None:
    result = _result(tmp_path, line, extra)
    assert not fails(result), (line, result.reads)


# ---- finding 8: a run helper's command only setting or mentioning a variable

HELPER_SETS = [
    "sh2(['docker', 'run', '-e', 'SGLANG_PAGE_SIZE=16', 'img'])",  # 2
    "sh(['docker', 'run', '-e', 'SGLANG_PAGE_SIZE=16', 'img'])",  # 3
    "sh2(['echo', 'set SGLANG_PAGE_SIZE to tune'], stdout=subprocess.PIPE)",  # 5
    "sh2(\"SGLANG_PAGE_SIZE=16 python3 -c 'print(1)'\", shell=True)",  # 7
    "sh2(['env', 'SGLANG_PAGE_SIZE=16', 'true'])",  # 9
    "sh3('env', 'SGLANG_PAGE_SIZE=16', 'true')",  # 10
    "sh2(['sh', '-c', 'export SGLANG_PAGE_SIZE=16; true'])",  # 12
    "sh2(['mpirun', '-x', 'SGLANG_PAGE_SIZE=16', 'true'])",  # 13
    "sh2(['env', '-u', 'SGLANG_PAGE_SIZE', 'true'])",  # 14
    "sh2(['env', 'SGLANG_PAGE_SIZE=16', sys.executable, '-m', 'worker'])",
    "cmd = ['env', 'SGLANG_PAGE_SIZE=16', 'true'] ;; sh2(cmd)",
    "sh2(['env', 'SGLANG_PAGE_SIZE=16', 'true'] if flag else ['true'])",
]


@pytest.mark.parametrize("line", HELPER_SETS)
def test_a_command_a_helper_runs_that_only_sets_a_variable_reads_nothing(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)


HELPER_READS = [
    "sh2(['printenv', 'SGLANG_PAGE_SIZE'])",
    "sh2(['env', 'SGLANG_PAGE_SIZE=16', 'printenv', 'SGLANG_PAGE_SIZE'])",
    "sh2(['sh', '-c', 'export SGLANG_PAGE_SIZE=16; echo $SGLANG_PAGE_SIZE'])",
    "sh2(['env', 'SGLANG_PAGE_SIZE=16', 'true'] if flag else ['printenv', 'SGLANG_PAGE_SIZE'])",
    "sh2(['echo', 'SGLANG_PAGE_SIZE', str(flag)] + [flag])",
]


@pytest.mark.parametrize("line", HELPER_READS)
def test_a_command_a_helper_runs_that_reads_a_variable_is_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


# ---- finding 3: `executable=` through a run helper, and as a conditional

EXECUTABLE_WHOLE = [
    "sh2(['true'], executable='env')",  # 9
    "sh(['true'], executable='env')",  # 10
    "sh3('true', exe='env')",  # 11
    "sh2(['true'], executable='env' if flag else None)",  # 22
    "subprocess.run(['true'], executable='env' if flag else None)",
    "subprocess.run(['true'], executable=None if flag else '/usr/bin/env')",
]


@pytest.mark.parametrize("line", EXECUTABLE_WHOLE)
def test_an_executable_named_through_a_helper_or_a_branch_is_judged(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "sh2(['true', 'SGLANG_PAGE_SIZE'], executable='printenv')",  # 8
    "subprocess.run(['true', 'SGLANG_PAGE_SIZE'], executable='printenv' if flag else None)",
])
def test_an_executable_reading_a_named_variable_is_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "sh2(['env'], executable='true')",
    "sh2(['worker', '--port', '1'], executable=shutil.which('nvidia-smi'))",
    "subprocess.run(['ls'], executable='/bin/ls' if flag else None)",
    "sh3('ls', '-l', exe='/bin/ls')",
    "sh3('ls', '-l')",
])
def test_an_executable_that_reads_nothing_through_a_helper_stays_quiet(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)


# ---- finding 4: a command list edited in place

EDITED = [
    "cmd = ['true', 'SGLANG_PAGE_SIZE'] ;; cmd[0] = 'printenv' ;; subprocess.run(cmd)",  # 33
    "cmd = ['printenv', 'X', 'SGLANG_PAGE_SIZE'] ;; del cmd[1] ;; subprocess.run(cmd)",
    "cmd = ['true', 'SGLANG_PAGE_SIZE'] ;; cmd[0] = 'printenv' ;; sh2(cmd)",
    "cmd = ['true', 'SGLANG_PAGE_SIZE'] ;; cmd[-2] = 'printenv' ;; subprocess.run(cmd)",
]


@pytest.mark.parametrize("line", EDITED)
def test_a_command_edited_in_place_is_judged_as_edited(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, line), line


EDITED_WHOLE = [
    "cmd = ['true'] ;; cmd[0] = 'env' ;; subprocess.run(cmd)",  # 31
    "cmd = ['env', 'true'] ;; cmd.pop() ;; subprocess.run(cmd)",  # 34
    "cmd = ['env', 'true'] ;; del cmd[1] ;; subprocess.run(cmd)",  # 35
    "cmd = ['env', 'true'] ;; cmd.remove('true') ;; subprocess.run(cmd)",  # 36
    "cmd = ['env', 'true'] ;; cmd.pop(1) ;; subprocess.run(cmd)",
    "cmd = ['true'] ;; cmd[0] = 'env' ;; sh2(cmd)",  # 29
    "cmd = ['true'] ;; cmd[0] = 'env' if script else 'true' ;; subprocess.run(cmd)",
    # not followed: not shown
    "cmd = ['true', 'x'] ;; cmd[len(cmd) - 2] = 'env' ;; subprocess.run(cmd)",
    "cmd = ['true', 'env'] ;; cmd.reverse() ;; subprocess.run(cmd)",
    "cmd = ['env', 'true'] ;; cmd.remove(script) ;; subprocess.run(cmd)",
    "cmd = ['true', 'x'] ;; cmd[:1] = ['env'] ;; subprocess.run(cmd)",
]


@pytest.mark.parametrize("line", EDITED_WHOLE)
def test_a_command_edited_to_dump_the_environment_or_not_followed_is_unresolved(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, line), line


@pytest.mark.parametrize("line", [
    "cmd = ['ls', '-l'] ;; cmd[0] = 'true' ;; subprocess.run(cmd)",
    "cmd = ['ls', '-l', 'x'] ;; cmd.pop() ;; subprocess.run(cmd)",
    "cmd = ['ls'] ;; cmd[0] = shutil.which(cmd[0]) ;; subprocess.run(cmd)",
    "cmd = ['ls', '-l'] ;; subprocess.run(cmd) ;; cmd[0] = 'git' ;; subprocess.run(cmd)",
    "cmd = [sys.executable, '-c', 'print(1)'] ;; cmd.insert(1, '-u') ;; subprocess.run(cmd)",
])
def test_a_command_edited_to_read_nothing_stays_quiet(tmp_path: Path, line: str) -> None:
    _quiet(tmp_path, line)


# ---- finding 6: a script under the roots running `python3 -m MOD` after a cd

LINES_MODULE = [
    'cd "$(dirname "$0")/../.." && python3 -m tools.dump',  # 2
    'cd "$(dirname "$0")/../.."\npython3 -m tools.dump',  # 7
    'cd "$(dirname "$0")/../.." && exec python3 -u -m tools.dump "$@"',  # 6
    'cd "$(dirname "$0")/../.." && python3 -m tools.pkg',  # 5
    'cd "$(dirname "$0")/../.." && python3 -m runpy tools.dump',  # 4
    'cd "$(dirname "$0")/../.." && torchrun --nproc_per_node 1 -m tools.dump',  # 10
    'cd "$(dirname "$0")/../.." && PYTHONPATH=. python3 -m tools.dump',  # 11
    'PYTHONPATH="$(dirname "$0")/../.." python3 -m tools.dump',  # 12
    'cd "$(dirname "$0")/../.." && "${PYTHON:-python3}" -m tools.dump',  # 13
    'python3 -m tools.dump',  # 1 (the project's folder, where a child starts unless told)
    'cd "$(dirname "$0")/../.." && python3 -m cProfile tools/dump.py',  # 9 (a control)
    'python3 "$(dirname "$0")/../../tools/dump.py"',  # 3 (a control)
]
TOOLS = {"tools/__init__.py": "", "tools/dump.py": READER_TEXT, "tools/pkg/__init__.py": "",
         "tools/pkg/__main__.py": READER_TEXT, "tools/quiet.py": "print('hello')\n"}


def _script_result(tmp_path: Path, line: str):  # type: ignore[no-untyped-def]
    for name, text in TOOLS.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    user = "import os, subprocess\nHERE = os.path.dirname(os.path.abspath(__file__))\n" \
        "def f():\n    return subprocess.run(['sh', os.path.join(HERE, 'scripts', 'launch.sh')])\n"
    return scan_pkg(tmp_path, {"user.py": user, "scripts/launch.sh": "#!/bin/sh\n" + line + "\n"}, ENV_SETTINGS)


@pytest.mark.parametrize("line", LINES_MODULE)
def test_a_script_running_a_module_of_the_project_reads_through_it(tmp_path: Path, line: str) -> None:
    result = _script_result(tmp_path, line)
    assert fails(result), result.reads
    assert PAGE in {leaf for file, _, leaf in read_keys(result) if file == "pkg/scripts/launch.sh"}, result.reads


@pytest.mark.parametrize("line", [
    'cd "$(dirname "$0")/../.." && python3 -m tools.quiet',
    'cd "$(dirname "$0")/../.." && python3 -m pip --version',
    'cd "$(dirname "$0")/../.." && python3 -m http.server',
])
def test_a_script_running_a_quiet_or_foreign_module_reads_nothing(tmp_path: Path, line: str) -> None:
    result = _script_result(tmp_path, line)
    assert not fails(result), result.reads
