"""Round nine's open false passes of the read ratchet about child processes (an outside
attack): a script under the root run through a wrapper the scanner did not unwrap (S7:
`timeout`, `nice -n`, `setsid`, `flock`, `taskset -c`, `ionice`, `chrt`, `env -u`, `sh -c
"cd HERE && ./x.sh"`), and the precision that ordinary wrappers of other programs keep."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS, read_keys, scan_pkg

from configbags.migrate.check import check

PAGE = "$SGLANG_PAGE_SIZE"
SHOW = "#!/bin/sh\necho \"$SGLANG_PAGE_SIZE\"\n"
HERE = "import os, subprocess, sys\nfrom pathlib import Path\nHERE = Path(__file__).parent\nSCRIPT = str(HERE / 'scripts' / 'show.sh')\n"


def _run(command: str) -> str:
    return HERE + f"def f():\n    return subprocess.run({command}, capture_output=True).stdout\n"


def _reads(tmp_path: Path, command: str, files: dict[str, str] | None = None) -> set[str]:
    result = scan_pkg(tmp_path, {"user.py": _run(command), "scripts/show.sh": SHOW, **(files or {})})
    return {leaf for file, _, leaf in read_keys(result) if file == "pkg/user.py"}


# ---- S7: a wrapper between the launcher and the script


@pytest.mark.parametrize("command", [
    "['timeout', '10', 'sh', SCRIPT]",
    "['timeout', '30', SCRIPT]",
    "['nice', '-n', '5', 'bash', SCRIPT]",
    "['setsid', 'sh', SCRIPT]",
    "['flock', '/tmp/x.lock', 'sh', SCRIPT]",
    "['flock', '-w', '5', '/tmp/x.lock', SCRIPT]",
    "['taskset', '-c', '0', 'sh', SCRIPT]",
    "['ionice', '-c', '3', 'sh', SCRIPT]",
    "['chrt', '-o', '0', 'sh', SCRIPT]",
    "['env', '-u', 'FOO', 'sh', SCRIPT]",
    "['sh', '-c', f'cd {HERE} && ./scripts/show.sh']",
])
def test_a_script_run_through_a_wrapper_is_read(tmp_path: Path, command: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": _run(command), "scripts/show.sh": SHOW})
    assert {PAGE, "$?"} & {leaf for file, _, leaf in read_keys(result) if file == "pkg/user.py"}, result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


@pytest.mark.parametrize("command", [
    "['timeout', '10', 'ls', '-l']",
    "['nice', '-n', '5', 'true']",
    "['flock', '/tmp/x.lock', 'echo', 'hi']",
    "['taskset', '-c', '0', 'nproc']",
    "['ionice', '-c', '3', 'sync']",
    "['chrt', '-o', '0', 'true']",
    "['env', '-u', 'FOO', 'date']",
    "['sh', '-c', f'cd {HERE} && ls']",
])
def test_a_wrapper_of_another_program_reads_nothing(tmp_path: Path, command: str) -> None:
    assert not _reads(tmp_path, command)


# ---- S6b: the script spelled in a shell's command line, or fed on standard input


@pytest.mark.parametrize("command", [
    "['sh', '-c', f'{HERE}/scripts/show.sh']",
    "['sh', '-c', f'exec {HERE}/scripts/show.sh']",
    "['sh', '-c', f'cat {HERE}/scripts/show.sh | sh']",
    "['sh', '-c', f'sh < {HERE}/scripts/show.sh']",
    "['bash', '-c', f'source {HERE}/scripts/env.sh && echo $PAGE']",
    "['bash', '-c', f'. {HERE}/scripts/env.sh; echo $PAGE']",
])
def test_a_script_in_a_shell_line_or_on_stdin_is_read(tmp_path: Path, command: str) -> None:
    env = {"scripts/env.sh": "PAGE=$SGLANG_PAGE_SIZE\n"}
    assert _reads(tmp_path, command, env) & {PAGE, "$?"}


@pytest.mark.parametrize("command", [
    "['sh', '-c', f'cat {HERE}/scripts/notes.txt | grep page']",
    "['sh', '-c', f'wc -l < {HERE}/scripts/notes.txt']",
])
def test_a_file_fed_to_another_program_reads_nothing(tmp_path: Path, command: str) -> None:
    assert not _reads(tmp_path, command, {"scripts/notes.txt": "SGLANG_PAGE_SIZE is the page size\n"})


@pytest.mark.parametrize(("command", "setup"), [
    ("['sh'], stdin=open(SCRIPT)", ""),
    ("['sh'], stdin=fh", "    fh = open(HERE / 'scripts' / 'show.sh')\n"),
    ("[sys.executable, '-'], stdin=fh", "    fh = open(HERE / 'tools' / 'page.txt')\n"),
    ("[sys.executable, '-'], input=(HERE / 'tools' / 'page.txt').read_text()", ""),
])
def test_a_file_opened_as_a_readers_stdin_is_run(tmp_path: Path, command: str, setup: str) -> None:
    user = HERE + f"def f():\n{setup}    return subprocess.run({command}, capture_output=True).stdout\n"
    page = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
    result = scan_pkg(tmp_path, {"user.py": user, "scripts/show.sh": SHOW, "tools/page.txt": page})
    assert {PAGE, "$?"} & {leaf for _, _, leaf in read_keys(result)}, result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


def test_a_file_opened_as_another_programs_stdin_reads_nothing(tmp_path: Path) -> None:
    assert not _reads(tmp_path, "['wc', '-l'], stdin=open(SCRIPT)")


# ---- S6: a file under the root run by an interpreter of another language, or a program not judged


@pytest.mark.parametrize(("command", "file", "text"), [
    ("['awk', '-f', HERE / 'scripts' / 'page.awk']", "scripts/page.awk", 'BEGIN { print ENVIRON["SGLANG_PAGE_SIZE"] }\n'),
    ("['perl', HERE / 'scripts' / 'page.pl']", "scripts/page.pl", 'print $ENV{"SGLANG_PAGE_SIZE"};\n'),
    ("['jq', '-n', '-f', HERE / 'scripts' / 'page.jq']", "scripts/page.jq", "env.SGLANG_PAGE_SIZE\n"),
    ("['cmake', '-P', HERE / 'cmake' / 'page.cmake']", "cmake/page.cmake", "message($ENV{SGLANG_PAGE_SIZE})\n"),
    ("['tclsh', HERE / 'scripts' / 'page.tcl']", "scripts/page.tcl", "puts $env(SGLANG_PAGE_SIZE)\n"),
    ("['node', HERE / 'scripts' / 'page.js']", "scripts/page.js", "console.log(process.env.SGLANG_PAGE_SIZE)\n"),
    ("['envsubst'], stdin=open(HERE / 'conf' / 'engine.tmpl')", "conf/engine.tmpl", "page_size: ${SGLANG_PAGE_SIZE}\n"),
    ("['envsubst'], input=(HERE / 'conf' / 'engine.tmpl').read_text()", "conf/engine.tmpl", "page_size: ${SGLANG_PAGE_SIZE}\n"),
    ("['sh', '-c', f'envsubst < {HERE}/conf/engine.tmpl']", "conf/engine.tmpl", "page_size: ${SGLANG_PAGE_SIZE}\n"),
    ("['bash', '-c', 'echo $PAGE'], env={**os.environ, 'BASH_ENV': str(HERE / 'scripts' / 'env.sh')}",
     "scripts/env.sh", "PAGE=$SGLANG_PAGE_SIZE\n"),
    ("['sometool', '--config', HERE / 'conf' / 'tool.cfg']", "conf/tool.cfg", "mode = fast\n"),
    ("['jq', '-n', 'env | with_entries(select(.key | startswith(\"SGLANG\")))']", "conf/x", ""),
])
def test_a_file_run_by_another_interpreter_is_read(tmp_path: Path, command: str, file: str, text: str) -> None:
    assert _reads(tmp_path, command, {file: text}) & {PAGE, "$?"}


@pytest.mark.parametrize(("command", "file", "text"), [
    ("['awk', '-f', HERE / 'scripts' / 'sum.awk', 'data.txt']", "scripts/sum.awk", "{ s += $1 } END { print s }\n"),
    ("['cat', HERE / 'conf' / 'tool.cfg']", "conf/tool.cfg", "mode = fast\n"),
    ("['sometool', '--out', HERE / 'out' / 'result.json']", "conf/x", ""),
    ("['perl', '-e', 'print 1']", "conf/x", ""),
    ("['torchrun', '--nproc-per-node', '2', HERE / 'train.py']", "train.py", "print('train')\n"),
])
def test_a_file_that_reads_no_variable_stays_silent(tmp_path: Path, command: str, file: str, text: str) -> None:
    assert not _reads(tmp_path, command, {file: text})


# ---- S3: anyio's launchers


@pytest.mark.parametrize("body", [
    "import anyio\nasync def f():\n    return await anyio.run_process('echo $SGLANG_PAGE_SIZE')\n",
    "from anyio import open_process\nasync def f():\n    return await open_process(['sh', '-c', 'echo $SGLANG_PAGE_SIZE'])\n",
])
def test_anyios_launchers_are_read(tmp_path: Path, body: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": body})
    assert PAGE in {leaf for _, _, leaf in read_keys(result)}, result.reads


def test_anyios_launcher_of_another_command_reads_nothing(tmp_path: Path) -> None:
    result = scan_pkg(tmp_path, {"user.py": "import anyio\nasync def f():\n    return await anyio.run_process(['ls', '-l'])\n"})
    assert not read_keys(result)


# ---- S2: libraries that expand `${NAME}` from the environment


@pytest.mark.parametrize(("body", "expected"), [
    ("import io, dotenv\ndef f():\n    return dotenv.dotenv_values(stream=io.StringIO('PAGE=${SGLANG_PAGE_SIZE}'))\n", PAGE),
    ("from pathlib import Path\nfrom dotenv import dotenv_values\nHERE = Path(__file__).parent\n"
     "def f():\n    return dotenv_values(HERE / 'conf' / 'engine.env')\n", "$?"),
    ("from distutils.util import subst_vars\ndef f():\n    return subst_vars('$SGLANG_PAGE_SIZE', {})\n", PAGE),
    ("import sysconfig\ndef f():\n    return sysconfig._subst_vars('{SGLANG_PAGE_SIZE}', {})\n", PAGE),
])
def test_a_library_expanding_a_template_from_the_environment_is_read(tmp_path: Path, body: str, expected: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": body})
    assert expected in {leaf for _, _, leaf in read_keys(result)}, result.reads


@pytest.mark.parametrize("body", [
    "from dotenv import load_dotenv\nload_dotenv()\n",
    "import dotenv\ndef f():\n    return dotenv.dotenv_values('x.env', interpolate=False)\n",
    "import sysconfig\ndef f():\n    return sysconfig._subst_vars('{base}/lib', {'base': '/usr'})\n",
])
def test_a_template_naming_no_variable_stays_silent(tmp_path: Path, body: str) -> None:
    assert not read_keys(scan_pkg(tmp_path, {"user.py": body}))


@pytest.mark.parametrize("code", [
    "f\"exec(open('{HERE}/tools/page.txt').read())\"",
    "f\"import runpy; runpy.run_path('{HERE}/tools/page.txt')\"",
])
def test_a_file_a_python_c_child_executes_is_scanned(tmp_path: Path, code: str) -> None:
    page = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
    result = scan_pkg(tmp_path, {"user.py": _run(f"[sys.executable, '-c', {code}]"), "tools/page.txt": page})
    assert ("pkg/tools/page.txt", "<module>", PAGE) in read_keys(result), result.reads


@pytest.mark.parametrize("command", [
    "['timeout', '5', 'env']",
    "['nice', '-n', '5', 'sh', '-c', 'env | sort']",
    "['timeout', '60', 'sh'], input='printenv SGLANG_PAGE_SIZE'",
])
def test_a_wrapped_dump_or_stdin_program_is_read(tmp_path: Path, command: str) -> None:
    assert _reads(tmp_path, command) & {PAGE, "$?"}
