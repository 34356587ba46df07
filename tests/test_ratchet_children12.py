"""Round eleven's child processes (an outside attack): a shell's option clusters whose
last letter takes a value (`bash -euo pipefail SCRIPT`: U9), build tools given a folder
(`cmake -S DIR`, `ninja -C DIR`, `npm run` in one: U1), psutil's copy of a process's
environment (U2), a `-c` program running the file its argv names (U4), a folder's scripts
run by `run-parts` or `find -exec` (U6), `logging.config.fileConfig` (U8), and the
precision of children that only set a variable for a remote or containerised child
(PR1) or `os.environ.setdefault` as a statement (PR2). Each case has its twin beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import os, pathlib, subprocess, sys, tempfile\nHERE = pathlib.Path(__file__).parent\n"
SCRIPT = "SCRIPT = HERE / 'scripts' / 'show.sh'\n"
SHOW = {"scripts/show.sh": 'echo "$SGLANG_PAGE_SIZE"\n'}
HELLO = {"scripts/show.sh": "echo hello\n"}


def _result(tmp_path: Path, body: str, files: dict[str, str]):  # type: ignore[no-untyped-def]
    return scan_pkg(tmp_path, {"user.py": HEAD + body, **files})


def _reads(tmp_path: Path, body: str, files: dict[str, str]) -> set[str]:
    return {leaf for file, _, leaf in read_keys(_result(tmp_path, body, files)) if file == "pkg/user.py"}


def _f(line: str) -> str:
    return f"def f():\n    {line}\n"


# ---- U9: a shell's option grammar


@pytest.mark.parametrize("line", [
    "subprocess.check_output(['bash', '-euo', 'pipefail', str(SCRIPT)])",
    "subprocess.check_output(['bash', '-eo', 'pipefail', str(SCRIPT)])",
    "subprocess.check_output(['bash', '-xo', 'nounset', str(SCRIPT)])",
    "subprocess.check_output(['bash', '-eO', 'extglob', str(SCRIPT)])",
    "subprocess.check_output(['bash', '-oe', 'pipefail', str(SCRIPT)])",  # (each `o` takes the next word)
    "subprocess.check_output(['bash', '-', str(SCRIPT)])",  # (`-` ends the options)
    "subprocess.check_output(f'bash -euo pipefail {SCRIPT}', shell=True)",
    "subprocess.check_output('bash -o errexit -o nounset ' + str(SCRIPT), shell=True)",
    "subprocess.check_output(['sh', '-c', 'bash -euo pipefail ' + str(SCRIPT)])",
])
def test_a_script_after_a_shells_valued_option_cluster_is_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _reads(tmp_path, SCRIPT + _f(line), SHOW)


@pytest.mark.parametrize("line", [
    "subprocess.check_output(['bash', '-euo', 'pipefail', str(SCRIPT)])",
    "subprocess.check_output('bash -o errexit -o nounset ' + str(SCRIPT), shell=True)",
])
def test_a_harmless_script_after_an_option_cluster_reads_nothing(tmp_path: Path, line: str) -> None:
    assert not fails(_result(tmp_path, SCRIPT + _f(line), HELLO))


def test_a_dash_c_script_after_a_valued_option_is_judged(tmp_path: Path) -> None:
    assert "$?" in _reads(tmp_path, _f("subprocess.check_output(['bash', '-o', 'pipefail', '-c', 'env'])"), {})
    assert not fails(_result(tmp_path, _f("subprocess.check_output(['bash', '-euo', 'pipefail', '-c', 'true'])"), {}))


# ---- U1: build tools given a folder, or started in one

KERNELS = {"kernels/CMakeLists.txt": 'project(k NONE)\nmessage(STATUS "page=$ENV{SGLANG_PAGE_SIZE}")\n'}
QUIET_KERNELS = {"kernels/CMakeLists.txt": "project(k NONE)\n"}
NINJA = {"nbuild/build.ninja": "rule show\n  command = sh -c 'echo page=$$SGLANG_PAGE_SIZE'\nbuild always: show\n"}
UI = {"ui/package.json": '{"name": "ui", "scripts": {"show": "echo $SGLANG_PAGE_SIZE"}}'}


@pytest.mark.parametrize(("line", "files"), [
    ("subprocess.check_output(['cmake', '-S', str(HERE / 'kernels'), '-B', tempfile.mkdtemp()])", KERNELS),
    ("subprocess.check_output(['cmake', os.path.join(HERE, 'kernels')], cwd=tempfile.mkdtemp())", KERNELS),
    ("subprocess.check_output(f'cd {tempfile.mkdtemp()} && cmake {HERE}/kernels', shell=True)", KERNELS),
    ("subprocess.check_output(['cmake', '-B', tempfile.mkdtemp()], cwd=HERE / 'kernels')", KERNELS),
    ("subprocess.check_output(f'cd {HERE}/kernels/build && cmake ..', shell=True)", KERNELS),
    ("subprocess.check_output(['cmake', '-S', HERE / 'kernels', '-B', 'build', '-G', 'Ninja'])", {
        "kernels/CMakeLists.txt": "project(k NONE)\nadd_subdirectory(sub)\n",
        "kernels/sub/CMakeLists.txt": 'message("$ENV{SGLANG_PAGE_SIZE}")\n'}),
    ("subprocess.check_output(['ninja', '-C', os.path.join(HERE, 'nbuild'), '-v'])", NINJA),
    ("subprocess.check_output(['ninja', '-f', 'build.ninja'], cwd=HERE / 'nbuild')", NINJA),
    ("subprocess.check_output(['npm', 'run', '-s', 'show'], cwd=HERE / 'ui')", UI),
    ("subprocess.check_output(['npm', '--prefix', HERE / 'ui', 'run', 'show'])", UI),
])
def test_a_build_tool_reads_its_folders_build_file(tmp_path: Path, line: str, files: dict[str, str]) -> None:
    assert PAGE in _reads(tmp_path, _f(line), files)


@pytest.mark.parametrize(("line", "files"), [
    ("subprocess.check_output(['cmake', '-S', str(HERE / 'kernels'), '-B', tempfile.mkdtemp()])", QUIET_KERNELS),
    ("subprocess.check_output(['cmake', '--build', tempfile.mkdtemp(), '-j'])", KERNELS),
    ("subprocess.check_output(['npm', 'run', 'show'], cwd=HERE / 'ui')", {"ui/package.json": '{"scripts": {"show": "echo hi"}}'}),
    ("subprocess.check_output(['ninja', '-C', 'out'])", NINJA),  # (no such folder in the project)
])
def test_a_build_tool_whose_files_read_nothing_reads_nothing(tmp_path: Path, line: str, files: dict[str, str]) -> None:
    assert not fails(_result(tmp_path, _f(line), files))


def test_a_build_folder_not_shown_is_unresolved(tmp_path: Path) -> None:
    assert "$?" in _reads(tmp_path, "def f(src):\n    subprocess.run(['cmake', '-S', src, '-B', 'b'])\n", {})
    assert "$?" in _reads(tmp_path, _f("subprocess.run(['cmake', '-S', HERE / 'missing'])"), {})


# ---- U2: psutil's copy of a process's environment


@pytest.mark.parametrize("line", [
    "return psutil.Process().environ().get('SGLANG_PAGE_SIZE')",
    "return psutil.Process(os.getpid()).environ()['SGLANG_PAGE_SIZE']",
    "return psutil.Process(os.getppid()).environ().get('SGLANG_PAGE_SIZE')",
    "return psutil.Process().as_dict(attrs=['environ'])['environ']['SGLANG_PAGE_SIZE']",
    "return psutil.Process().as_dict()['environ']['SGLANG_PAGE_SIZE']",
    "return [p.info['environ'] for p in psutil.process_iter(['pid', 'environ'])]",
])
def test_psutils_environ_is_the_whole_environment(tmp_path: Path, line: str) -> None:
    assert "$?" in _reads(tmp_path, "import psutil\n" + _f(line), {})


@pytest.mark.parametrize("line", [
    "return psutil.Process().as_dict(attrs=['pid', 'name'])",
    "return [p.info for p in psutil.process_iter(['pid', 'cmdline'])]",
    "return psutil.Process().memory_info().rss",
])
def test_psutils_other_process_facts_read_nothing(tmp_path: Path, line: str) -> None:
    assert not fails(_result(tmp_path, "import psutil\n" + _f(line), {}))


# ---- PR2: os.environ.setdefault as a statement


def test_setdefault_as_a_statement_is_a_write(tmp_path: Path) -> None:
    assert not fails(_result(tmp_path, _f("os.environ.setdefault('SGLANG_PAGE_SIZE', '16')"), {}))


@pytest.mark.parametrize("line", [
    "return os.environ.setdefault('SGLANG_PAGE_SIZE', '16')",
    "page = os.environ.setdefault('SGLANG_PAGE_SIZE', '16')",
    "os.environ.setdefault('SGLANG_PAGE_SIZE', '16').upper()",
])
def test_setdefault_whose_value_is_used_reads(tmp_path: Path, line: str) -> None:
    assert PAGE in _reads(tmp_path, _f(line), {})


# ---- PR1: a variable only set for a remote or containerised child


@pytest.mark.parametrize("line", [
    "return subprocess.run(['docker', 'run', '--rm', '-e', f'SGLANG_PAGE_SIZE={n}', img, 'python', '-m', 'x'])",
    "return subprocess.run(['docker', 'run', f'--env=SGLANG_PAGE_SIZE={n}', img])",
    "cmd = ['mpirun', '-np', '2', '-x', 'SGLANG_PAGE_SIZE=16', '-x', 'NCCL_DEBUG', sys.executable, '-m', 'x']\n"
    "    return subprocess.Popen(cmd)",
    "return subprocess.Popen(['mpirun', '-np', '2', '--env', 'SGLANG_PAGE_SIZE', str(n), sys.executable])",
    "return subprocess.Popen(['mpiexec', '-genv', 'SGLANG_PAGE_SIZE', '16', sys.executable])",
    "return subprocess.run(['srun', f'--export=ALL,SGLANG_PAGE_SIZE={n}', 'python', '-m', 'x'])",
    "return subprocess.run(['ssh', img, f'SGLANG_PAGE_SIZE={n} python -m x'])",
    "return subprocess.run(['ssh', '-p', '22', img, 'export', 'SGLANG_PAGE_SIZE=16;', 'python'])",
    "return subprocess.run(['kubectl', 'set', 'env', 'deployment/engine', f'SGLANG_PAGE_SIZE={n}'])",
    "return subprocess.run(['kubectl', 'set', 'env', 'deployment/engine', 'SGLANG_PAGE_SIZE-'])",
])
def test_a_value_set_for_a_remote_child_reads_nothing(tmp_path: Path, line: str) -> None:
    assert not fails(_result(tmp_path, f"def f(img, n):\n    {line}\n", {}))


@pytest.mark.parametrize("line", [
    "return subprocess.run(['docker', 'run', '-e', 'SGLANG_PAGE_SIZE', img])",  # (ours, handed on)
    "return subprocess.run(['docker', 'run', '-e', 'X=$SGLANG_PAGE_SIZE', img])",
    "return subprocess.Popen(['mpirun', '-x', 'SGLANG_PAGE_SIZE', sys.executable])",
    "return subprocess.run(['srun', '--export=ALL,SGLANG_PAGE_SIZE', 'python'])",
    "return subprocess.run(['ssh', img, 'echo $SGLANG_PAGE_SIZE'])",
    "return subprocess.run(['docker', 'run', img, 'SGLANG_PAGE_SIZE=1'])",  # (the container's command's word)
    "return subprocess.run(['docker', 'run', n, 'SGLANG_PAGE_SIZE=1', img])",  # (a word not shown is no option)
    "return subprocess.run(['kubectl', 'exec', img, '--', 'printenv', 'SGLANG_PAGE_SIZE'])",
])
def test_a_variable_handed_on_or_read_for_a_remote_child_is_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _reads(tmp_path, f"def f(img, n):\n    {line}\n", {})


# ---- U4: a `-c` program running the file its argv names

TOOL = {"scripts/tool.txt": "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"}


@pytest.mark.parametrize("code", [
    "import runpy,sys; runpy.run_path(sys.argv[1])",
    "import sys; exec(open(sys.argv[1]).read())",
    "import sys; exec(compile(open(sys.argv[-1]).read(), 'x', 'exec'))",
])
def test_a_dash_c_program_runs_the_file_its_argv_names(tmp_path: Path, code: str) -> None:
    body = _f(f"return subprocess.check_output([sys.executable, '-c', {code!r}, str(HERE / 'scripts' / 'tool.txt')])")
    assert ("pkg/scripts/tool.txt", "<module>", PAGE) in read_keys(_result(tmp_path, body, TOOL))


def test_a_dash_c_program_printing_its_argv_runs_nothing(tmp_path: Path) -> None:
    body = _f("return subprocess.check_output([sys.executable, '-c', 'import sys; print(sys.argv[1])', "
              "str(HERE / 'scripts' / 'tool.txt')])")
    assert not fails(_result(tmp_path, body, TOOL))


# ---- U6: a folder's scripts run one by one

HOOKS = {"hooks/10-show": '#!/bin/sh\necho "$SGLANG_PAGE_SIZE"\n', "hooks/00-hello": "#!/bin/sh\necho hello\n"}
QUIET_HOOKS = {"hooks/00-hello": "#!/bin/sh\necho hello\n"}


@pytest.mark.parametrize("line", [
    "subprocess.check_output(['run-parts', os.path.join(HERE, 'hooks')])",
    "subprocess.check_output(['run-parts', '--exit-on-error', '-a', 'x', HERE / 'hooks'])",
    "subprocess.check_output(['find', os.path.join(HERE, 'hooks'), '-type', 'f', '-exec', 'sh', '{}', ';'])",
    "subprocess.check_output(['find', HERE, '-name', '*-show', '-exec', '{}', ';'])",
    "subprocess.check_output(['find', '.', '-type', 'f', '-execdir', 'bash', '{}', '+'], cwd=HERE / 'hooks')",
    "subprocess.check_output(f'run-parts {HERE}/hooks', shell=True)",
])
def test_a_folders_scripts_run_one_by_one_are_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _reads(tmp_path, _f(line), HOOKS)


@pytest.mark.parametrize(("line", "files"), [
    ("subprocess.check_output(['run-parts', os.path.join(HERE, 'hooks')])", QUIET_HOOKS),
    ("subprocess.check_output(['run-parts', '--test', os.path.join(HERE, 'hooks')])", HOOKS),
    ("subprocess.check_output(['find', os.path.join(HERE, 'hooks'), '-exec', 'cat', '{}', ';'])", HOOKS),
    ("subprocess.check_output(['find', os.path.join(HERE, 'hooks'), '-name', '*.pyc', '-delete'])", HOOKS),
])
def test_a_folder_whose_files_run_nothing_of_ours_reads_nothing(tmp_path: Path, line: str, files: dict[str, str]) -> None:
    # (at the call: a hook script's own reads are reported in it, run or not)
    assert not _reads(tmp_path, _f(line), files)


def test_a_folder_run_by_a_path_not_shown_is_unresolved(tmp_path: Path) -> None:
    assert "$?" in _reads(tmp_path, "def f(d):\n    subprocess.run(['run-parts', d])\n", {})


# ---- U8: logging.config.fileConfig, whose args= are eval'd

INI = ("[loggers]\nkeys=root\n[handlers]\nkeys=buf\n[formatters]\nkeys=\n[logger_root]\nlevel=INFO\nhandlers=buf\n"
       "[handler_buf]\nclass=handlers.BufferingHandler\n")
LOG_HEAD = "import logging.config\n"


@pytest.mark.parametrize(("line", "args"), [
    ("logging.config.fileConfig(HERE / 'conf' / 'logging.ini')", "args=(int(os.environ.get('SGLANG_PAGE_SIZE', '16')),)"),
    ("logging.config.fileConfig(os.path.join(HERE, 'conf', 'logging.ini'), disable_existing_loggers=False)",
     "args=(16,)\nkwargs={'x': os.environ['SGLANG_PAGE_SIZE']}"),
])
def test_a_logging_config_files_eval_d_args_are_read(tmp_path: Path, line: str, args: str) -> None:
    assert PAGE in _reads(tmp_path, LOG_HEAD + _f(line), {"conf/logging.ini": INI + args + "\n"})


def test_a_logging_config_file_using_the_environment_whole_is_unresolved(tmp_path: Path) -> None:
    files = {"conf/logging.ini": INI + "args=(os.environ,)\n"}
    assert "$?" in _reads(tmp_path, LOG_HEAD + _f("logging.config.fileConfig(HERE / 'conf' / 'logging.ini')"), files)


def test_a_logging_config_file_not_shown_is_unresolved(tmp_path: Path) -> None:
    assert "$?" in _reads(tmp_path, LOG_HEAD + "def f(path):\n    logging.config.fileConfig(path)\n", {})


def test_a_plain_logging_config_file_reads_nothing(tmp_path: Path) -> None:
    files = {"conf/logging.ini": INI + "args=(16,)\n"}
    assert not fails(_result(tmp_path, LOG_HEAD + _f("logging.config.fileConfig(HERE / 'conf' / 'logging.ini')"), files))
