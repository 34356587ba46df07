"""Round ten's child processes (an outside attack): a script's text run as the command
(`["sh", "-c", SCRIPT.read_text()]`, `os.system(fh.read())`: T2), a program looked up at
run time (`[shutil.which("bash"), SCRIPT]`: T3), relative paths after the module's own
`os.chdir` (T4), `xargs sh` and `script -qc` (T5), and the precision of a compiler given a
source under the root (PR4). Each case has its twin beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import os, pathlib, shutil, subprocess, sys, tempfile\nHERE = pathlib.Path(__file__).parent\n"
SHOW = {"scripts/show.sh": '#!/bin/sh\necho "$SGLANG_PAGE_SIZE"\n'}
HELLO = {"scripts/show.sh": "#!/bin/sh\necho hello\n"}
TOOL = {"scripts/tool.txt": "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"}


def _result(tmp_path: Path, body: str, files: dict[str, str]):  # type: ignore[no-untyped-def]
    return scan_pkg(tmp_path, {"user.py": HEAD + body, **files})


def _reads(tmp_path: Path, body: str, files: dict[str, str]) -> set[str]:
    return {leaf for file, _, leaf in read_keys(_result(tmp_path, body, files)) if file == "pkg/user.py"}


def _f(line: str) -> str:
    return f"def f():\n    {line}\n"


# ---- T2: a script's text run as the command

SCRIPT = "SCRIPT = HERE / 'scripts' / 'show.sh'\n"
OPENED = "def f():\n    with open(os.path.join(os.path.dirname(__file__), 'scripts', 'show.sh')) as fh:\n        "


@pytest.mark.parametrize("body", [
    _f("return subprocess.check_output(['sh', '-c', (HERE / 'scripts' / 'show.sh').read_text()])"),
    SCRIPT + "def f():\n    with open(SCRIPT) as fh:\n        body = fh.read()\n"
    "    return subprocess.run(['bash', '-c', body])\n",
    SCRIPT + _f("return subprocess.check_output(SCRIPT.read_text(), shell=True)"),
    OPENED + "return os.system(fh.read())\n",
    OPENED + "return os.popen(fh.read()).read()\n",
    OPENED + "cmd = fh.read()\n        return os.system(cmd)\n",
    SCRIPT + _f("return subprocess.run(['timeout', '5', 'sh', '-ec', SCRIPT.read_bytes()])"),
])
def test_a_scripts_text_run_as_the_command_is_read_through_the_script(tmp_path: Path, body: str) -> None:
    assert PAGE in _reads(tmp_path, body, SHOW)


def test_a_python_files_text_run_as_dash_c_is_scanned_as_python(tmp_path: Path) -> None:
    body = "TOOL = HERE / 'scripts' / 'tool.txt'\n" + _f("return subprocess.run([sys.executable, '-c', TOOL.read_text()])")
    result = _result(tmp_path, body, TOOL)
    assert ("pkg/scripts/tool.txt", "<module>", PAGE) in read_keys(result), result.reads


def test_a_text_read_from_a_file_not_shown_is_unresolved(tmp_path: Path) -> None:
    result = _result(tmp_path, "def f(p):\n    return subprocess.run(['sh', '-c', pathlib.Path(p).read_text()])\n", {})
    assert ("pkg/user.py", "f", "$?") in read_keys(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("body", [
    SCRIPT + _f("return subprocess.check_output(['sh', '-c', SCRIPT.read_text()])"),
    SCRIPT + _f("return subprocess.check_output(['cat', SCRIPT.read_text()])"),  # (a word, not run)
    "def f(cmd):\n    return subprocess.run(['sh', '-c', cmd])\n",  # a command built elsewhere: as before
])
def test_a_harmless_scripts_text_reads_nothing(tmp_path: Path, body: str) -> None:
    assert not fails(_result(tmp_path, body, HELLO))


# ---- T3: a program looked up at run time


@pytest.mark.parametrize("body", [
    SCRIPT + _f("return subprocess.check_output([shutil.which('bash'), str(SCRIPT)])"),
    SCRIPT + _f("return subprocess.check_output([os.environ.get('SHELL', '/bin/sh'), str(SCRIPT)])"),
    SCRIPT + "def f(program):\n    return subprocess.check_output([program, str(SCRIPT)])\n",
])
def test_a_script_given_to_a_program_found_at_run_time_is_reported(tmp_path: Path, body: str) -> None:
    result = _result(tmp_path, body, SHOW)
    assert {PAGE, "$?"} & {leaf for file, _, leaf in read_keys(result) if file == "pkg/user.py"}, result.reads
    assert fails(result)


def test_a_program_found_by_which_is_the_program_it_names(tmp_path: Path) -> None:
    body = SCRIPT + _f("return subprocess.check_output([shutil.which('sh'), str(SCRIPT)])")
    assert PAGE in _reads(tmp_path, body, SHOW)
    assert not fails(_result(tmp_path / "b", body, HELLO))


# ---- T4: the module's own os.chdir, then a relative path


@pytest.mark.parametrize("body", [
    _f("os.chdir(os.path.dirname(os.path.abspath(__file__)))\n    return subprocess.check_output(['sh', 'scripts/show.sh'])"),
    "D = os.path.dirname(os.path.abspath(__file__))\n"
    + _f("os.chdir(os.path.join(D, 'scripts'))\n    return subprocess.check_output('./show.sh', shell=True)"),
    "def setup():\n    os.chdir(HERE / 'scripts')\n" + _f("return subprocess.run(['bash', 'show.sh'])"),
])
def test_a_relative_path_after_the_modules_chdir_is_resolved_there(tmp_path: Path, body: str) -> None:
    assert PAGE in _reads(tmp_path, body, SHOW)


def test_a_relative_path_after_a_chdir_not_shown_is_unresolved_where_it_may_name_a_file(tmp_path: Path) -> None:
    body = "def f(d):\n    os.chdir(d)\n    return subprocess.run(['sh', 'scripts/show.sh'])\n"
    result = _result(tmp_path, body, HELLO)
    assert ("pkg/user.py", "f", "$?") in read_keys(result), result.reads
    # a relative path that names no file under the root is left alone, as without chdir
    other = "def f(d):\n    os.chdir(d)\n    return subprocess.run(['sh', 'tools/launch.sh'])\n"
    assert not fails(_result(tmp_path / "b", other, HELLO))
    # nor is a module of the tree run by Python: its reads are reported in it
    module = "def f(d):\n    os.chdir(d)\n    return subprocess.run([sys.executable, 'user.py'])\n"
    assert not fails(_result(tmp_path / "c", module, HELLO))
    # nor is `make` alone where the tree holds no Makefile; one that does is not known
    make = "def f(d):\n    os.chdir(d)\n    return subprocess.run(['make', 'all'])\n"
    assert not fails(_result(tmp_path / "d", make, HELLO))
    assert fails(_result(tmp_path / "e", make, {"build/Makefile": "all:\n\techo hi\n"}))


def test_without_chdir_a_relative_path_is_the_projects(tmp_path: Path) -> None:
    # (at the call: the script's own reads are reported in it, run or not)
    assert not _reads(tmp_path, _f("return subprocess.run(['sh', 'scripts/show.sh'])"), SHOW)


# ---- T5: xargs and script(1)


@pytest.mark.parametrize("body", [
    SCRIPT + _f("return subprocess.check_output(['xargs', 'sh'], input=str(SCRIPT), text=True)"),
    SCRIPT + _f("return subprocess.check_output(['script', '-qc', f'sh {SCRIPT}', '/dev/null'])"),
    SCRIPT + _f("return subprocess.check_output(['xargs', '-n', '1', 'sh', str(SCRIPT)])"),
])
def test_a_script_run_through_xargs_or_script_is_read(tmp_path: Path, body: str) -> None:
    assert PAGE in _reads(tmp_path, body, SHOW)


@pytest.mark.parametrize("body", [
    SCRIPT + _f("return subprocess.check_output(['xargs', 'sh'], input=str(SCRIPT), text=True)"),
    _f("return subprocess.check_output(['xargs', 'rm', '-f'], input='a b', text=True)"),  # (input: words, not a program)
    _f("return subprocess.check_output(['script', '-q', '/dev/null'])"),  # a login shell, no command of the line
])
def test_xargs_and_script_running_nothing_of_ours_read_nothing(tmp_path: Path, body: str) -> None:
    assert not fails(_result(tmp_path, body, HELLO))


# ---- PR4: a compiler reads its sources as data

KERNEL = {"kernels/k.c": "int k(void){return 1;}\n"}


@pytest.mark.parametrize("compiler", ["gcc", "g++", "cc", "c++", "clang", "clang++", "nvcc", "hipcc"])
def test_a_compiler_given_a_source_under_the_root_reads_nothing(tmp_path: Path, compiler: str) -> None:
    body = _f(f"return subprocess.run(['{compiler}', '-c', '-o', tempfile.mktemp(), str(HERE / 'kernels' / 'k.c')])")
    assert not fails(_result(tmp_path, body, KERNEL))


def test_cmake_running_a_script_is_still_judged(tmp_path: Path) -> None:
    files = {"kernels/build.cmake": 'message("$ENV{SGLANG_PAGE_SIZE}")\n'}
    body = _f("return subprocess.run(['cmake', '-P', str(HERE / 'kernels' / 'build.cmake')])")
    assert PAGE in _reads(tmp_path, body, files)
