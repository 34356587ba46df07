"""Round nine's child processes, the read ratchet's last open cases (an outside attack): a
launch script the module writes at run time to a spelled path and then runs (S4), and the
precision of children that cannot read the process's variables: an `env=` mapping literal
(P1, P2), `os.environ.pop(NAME, None)` as a statement (P3), and children that only set,
unset or mention a variable (P4). Each precision case has its sound twin beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import os, pathlib, subprocess, sys, tempfile\nHERE = pathlib.Path(__file__).parent\n"


def _reads(tmp_path: Path, body: str, files: dict[str, str] | None = None) -> set[str]:
    result = scan_pkg(tmp_path, {"user.py": HEAD + body, **(files or {})})
    return {leaf for file, _, leaf in read_keys(result) if file == "pkg/user.py"}


def _run(command: str) -> str:
    return f"def f():\n    return subprocess.run({command}, capture_output=True, text=True).stdout\n"


# ---- S4: a script the module writes, then runs by the same path


TEMPLATE = 'TEMPLATE = """#!/bin/sh\necho "page=$SGLANG_PAGE_SIZE"\n"""\n'
HARMLESS = 'TEMPLATE = """#!/bin/sh\necho started\n"""\n'


@pytest.mark.parametrize("body", [
    # the attack's file: pathlib's write_text, the program run by its path
    TEMPLATE + "def f():\n    p = pathlib.Path('/tmp/x/n67.sh'); p.write_text(TEMPLATE); p.chmod(0o755)\n"
    "    return subprocess.check_output([str(p)], text=True)\n",
    TEMPLATE + "def f():\n    p = pathlib.Path('/tmp/x/n67.sh')\n    p.write_text(TEMPLATE)\n"
    "    return subprocess.check_output(['sh', p], text=True)\n",
    TEMPLATE + "SCRIPT = '/tmp/x/n67.sh'\ndef f():\n    with open(SCRIPT, 'w') as fh:\n        fh.write(TEMPLATE)\n"
    "    return subprocess.check_output(['bash', SCRIPT], text=True)\n",
    TEMPLATE + "def write():\n    pathlib.Path('/tmp/x/n67.sh').write_text(TEMPLATE)\n"
    "def f():\n    return subprocess.check_output(['sh', '/tmp/x/n67.sh'], text=True)\n",
    TEMPLATE + "def f():\n    p = HERE / 'gen' / 'n67.sh'\n    p.write_text(TEMPLATE)\n"
    "    return subprocess.check_output(['sh', p], text=True)\n",
])
def test_a_script_the_module_writes_is_read_through_its_text(tmp_path: Path, body: str) -> None:
    assert PAGE in _reads(tmp_path, body)


@pytest.mark.parametrize("body", [
    "def f(text):\n    p = pathlib.Path('/tmp/x/n67.sh'); p.write_text(text)\n    return subprocess.run([str(p)])\n",
    "def f(text):\n    with open('/tmp/x/n67.sh', 'w') as fh:\n        print(text, file=fh)\n"
    "    return subprocess.run(['sh', '/tmp/x/n67.sh'])\n",
    "import shutil\ndef f(src):\n    shutil.copy(src, '/tmp/x/n67.sh')\n    return subprocess.run(['sh', '/tmp/x/n67.sh'])\n",
])
def test_a_script_written_with_a_text_not_shown_is_unresolved(tmp_path: Path, body: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + body})
    assert ("pkg/user.py", "f", "$?") in read_keys(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("body", [
    HARMLESS + "def f():\n    p = pathlib.Path('/tmp/x/n67.sh'); p.write_text(TEMPLATE)\n"
    "    return subprocess.check_output([str(p)], text=True)\n",
    # a program outside the project that the module never writes is someone else's
    TEMPLATE + "def f():\n    pathlib.Path('/tmp/x/other.sh').write_text(TEMPLATE)\n"
    "    return subprocess.check_output(['/usr/bin/tool', '--fast'], text=True)\n",
    "def f():\n    return subprocess.check_output(['sh', '/opt/tools/start.sh'], text=True)\n",
    # a file read, not written, by the same path
    "def f():\n    p = pathlib.Path('/tmp/x/n67.sh'); p.read_text()\n    return subprocess.run([str(p)])\n",
])
def test_a_program_the_module_does_not_write_with_a_name_stays_silent(tmp_path: Path, body: str) -> None:
    assert not _reads(tmp_path, body)


# ---- P1, P2: a child given a literal environment has only the variables the code spells


@pytest.mark.parametrize("command", [
    "['env'], env={'A': '1'}",
    "['printenv'], env={'PATH': '/usr/bin:/bin'}",
    "['env', '-0'], env={}",
    "['sh', '-c', 'echo $SGLANG_PAGE_SIZE'], env={'SGLANG_PAGE_SIZE': '8'}",
    "[sys.executable, '-c', \"import os; print(os.environ['SGLANG_PAGE_SIZE'])\"], env={'SGLANG_PAGE_SIZE': '8'}",
    "['printenv', 'SGLANG_PAGE_SIZE'], env={'PATH': '/usr/bin'}",
])
def test_a_child_given_a_literal_environment_reads_none_of_the_processs(tmp_path: Path, command: str) -> None:
    assert not _reads(tmp_path, _run(command))


@pytest.mark.parametrize(("command", "expected"), [
    ("['env']", "$?"),
    ("['env'], env={**os.environ, 'A': '1'}", "$?"),
    ("['env'], env=dict(os.environ)", "$?"),
    ("['env'], env=ENV", "$?"),
    ("['sh', '-c', 'echo $SGLANG_PAGE_SIZE'], env={**os.environ, 'SGLANG_PAGE_SIZE': '8'}", PAGE),
    ("['sh', '-c', 'echo $SGLANG_PAGE_SIZE'], env={'SGLANG_PAGE_SIZE': os.environ['SGLANG_PAGE_SIZE']}", PAGE),
    ("['sh', '-c', 'echo $SGLANG_PAGE_SIZE'], env={'SGLANG_PAGE_SIZE': os.getenv('SGLANG_PAGE_SIZE', '8')}", PAGE),
    # the parent's environment read through /proc or ps, whatever the child's own
    ("['sh', '-c', 'cat /proc/$PPID/environ'], env={'A': '1'}", "$?"),
    ("['ps', 'eww', '-p', str(os.getppid())], env={'A': '1'}", "$?"),
    ("['env', 'sh', '-c', 'cat /proc/$PPID/environ'], env={'A': '1'}", "$?"),
])
def test_a_child_given_the_processs_environment_still_reads_it(tmp_path: Path, command: str, expected: str) -> None:
    body = "ENV = os.environ.copy()\n" + _run(command)
    assert expected in _reads(tmp_path, body)


# ---- P3: a pop whose value is dropped is a write


def test_a_pop_as_a_statement_with_a_default_is_a_write(tmp_path: Path) -> None:
    body = "def f():\n    os.environ.pop('SGLANG_PAGE_SIZE', None)\n    return 1\n"
    assert not _reads(tmp_path, body)


@pytest.mark.parametrize("body", [
    "def f():\n    x = os.environ.pop('SGLANG_PAGE_SIZE', None)\n    return x\n",
    "def f():\n    return os.environ.pop('SGLANG_PAGE_SIZE', None)\n",
    "def f():\n    os.environ.pop('SGLANG_PAGE_SIZE')\n",  # (KeyError where it is not set)
    "def f():\n    print(os.environ.pop('SGLANG_PAGE_SIZE', None))\n",
])
def test_a_pop_whose_value_or_presence_is_used_is_a_read(tmp_path: Path, body: str) -> None:
    assert PAGE in _reads(tmp_path, body)


# ---- P4: children that only set, unset or mention a variable


@pytest.mark.parametrize(("command", "files"), [
    ("['sh', str(HERE / 'scripts' / 'launch.sh')]", {"scripts/launch.sh": "#!/bin/sh\nexport SGLANG_PAGE_SIZE=16\necho started\n"}),
    ("['sh', '-c', 'SGLANG_PAGE_SIZE=16 printenv HOME >/dev/null; echo ok']", {}),
    ("['env', 'SGLANG_PAGE_SIZE=16', 'true']", {}),
    ("['env', '-u', 'SGLANG_PAGE_SIZE', 'make']", {}),
    ("['echo', 'set SGLANG_PAGE_SIZE to change paging']", {}),
    ("['sh', '-c', 'unset SGLANG_PAGE_SIZE; echo ok']", {}),
    ("'SGLANG_PAGE_SIZE=16 python -m engine.serve', shell=True", {}),
    ("['bash', '-c', 'export SGLANG_PAGE_SIZE=16 OTHER=1 && exec ./serve']", {}),
])
def test_a_child_that_only_sets_unsets_or_mentions_a_variable_reads_nothing(
    tmp_path: Path, command: str, files: dict[str, str]
) -> None:
    assert not _reads(tmp_path, _run(command), files)


@pytest.mark.parametrize(("command", "files"), [
    ("['sh', '-c', 'SGLANG_PAGE_SIZE=16 true; echo $SGLANG_PAGE_SIZE']", {}),  # (the prefix sets it for `true` only)
    ("['sh', '-c', 'export SGLANG_PAGE_SIZE=${SGLANG_PAGE_SIZE:-16}']", {}),
    ("['sh', '-c', 'SGLANG_PAGE_SIZE=$SGLANG_PAGE_SIZE:x cmd']", {}),
    ("['sh', '-c', 'export SGLANG_PAGE_SIZE']", {}),
    ("['sh', '-c', 'echo SGLANG_PAGE_SIZE | sh']", {}),
    ("['sh', '-c', 'echo x > $SGLANG_PAGE_SIZE; unset SGLANG_PAGE_SIZE']", {}),
    ("['sh', '-c', 'echo a#$SGLANG_PAGE_SIZE; unset SGLANG_PAGE_SIZE']", {}),
    ("['env', 'SGLANG_PAGE_SIZE=16', 'printenv', 'SGLANG_PAGE_SIZE']", {}),
    ("['printenv', 'SGLANG_PAGE_SIZE']", {}),
    ("['mytool', '--var', 'SGLANG_PAGE_SIZE']", {}),
    ("['echo', 'printenv SGLANG_PAGE_SIZE'], stdout=open('/tmp/x/run.sh', 'w')", {}),
    ("[sys.executable, '-c', \"SGLANG_PAGE_SIZE = 16; print(os.environ['SGLANG_PAGE_SIZE'])\"]", {}),
    ("['sh', '-c', 'echo ok'], input='unset X; printenv SGLANG_PAGE_SIZE'", {}),
    ("['sh', '-c', 'unset SGLANG_PAGE_SIZE'], input='printenv SGLANG_PAGE_SIZE'", {}),
    ("['sh', str(HERE / 'scripts' / 'launch.sh')]",
     {"scripts/launch.sh": "#!/bin/sh\nexport SGLANG_PAGE_SIZE=16\necho $SGLANG_PAGE_SIZE\n"}),
    ("['sh', str(HERE / 'scripts' / 'launch.sh')]",
     {"scripts/launch.sh": "#!/bin/sh\n# SGLANG_PAGE_SIZE comes from the caller\nexport SGLANG_PAGE_SIZE=16\n"}),
])
def test_a_child_that_reads_the_variable_besides_setting_it_still_reads_it(
    tmp_path: Path, command: str, files: dict[str, str]
) -> None:
    assert _reads(tmp_path, _run(command), files) & {PAGE, "$?"}
