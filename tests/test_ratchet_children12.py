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
