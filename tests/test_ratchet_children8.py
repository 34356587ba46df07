"""Round eight's open false passes of the read ratchet about child processes (an outside
attack): a child reading a variable by a name the whole-word test does not see, or dumping
the environment (R6a), the standard library's launchers the list missed (R6b), a program
fed to a shell or Python child on its standard input (R6c); and the documented state
hand-off to a child, which is no readback (P1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import asyncio, ctypes, os, subprocess, sys\nfrom subprocess import PIPE\n"


def _reads(tmp_path: Path, body: str) -> set[str]:
    result = scan_pkg(tmp_path, {"user.py": HEAD + body})
    return {leaf for file, _, leaf in read_keys(result) if file == "pkg/user.py"}


# ---- R6a: a name the child builds, a dump the list missed


@pytest.mark.parametrize("body", [
    "def f():\n    return subprocess.check_output(['printenv', 'sglang_page_size'.upper()])\n",
    "def f():\n    return subprocess.run([sys.executable, '-c', \"import os; print(os.environ['SGLANG_PAGE' + '_SIZE'])\"])\n",
])
def test_a_name_spelled_through_a_transformation_is_read(tmp_path: Path, body: str) -> None:
    assert _reads(tmp_path, body) & {PAGE, "$?"}


@pytest.mark.parametrize("command", [
    """['sh', '-c', 'printenv "$0$1"', 'SGLANG_PAGE', '_SIZE']""",
    """['sh', '-c', 'eval "echo \\\\$$0$1"', 'SGLANG_PAGE', '_SIZE']""",
    """['bash', '-c', 'declare -n v="$0$1"; echo "$v"', 'SGLANG_PAGE', '_SIZE']""",
    """['sh', '-c', 'echo "$(printenv "$0$1")"', 'SGLANG_PAGE', '_SIZE']""",
    """['perl', '-e', 'print $ENV{$ARGV[0] . $ARGV[1]}', 'SGLANG_PAGE', '_SIZE']""",
    """['ps', 'eww', '-o', 'args=', '-p', str(os.getpid())]""",
    """'ps e -p $$', shell=True""",
])
def test_a_child_building_the_name_or_dumping_the_environment_is_unresolved(tmp_path: Path, command: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + f"def f():\n    return subprocess.run({command})\n"})
    assert ("pkg/user.py", "f", "$?") in read_keys(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("command", [
    "['git', 'status']",
    "['ps', '-ef']",
    "['ps', '-o', 'pid,etime', '-C', 'sleep']",
    "['ps', 'aux']",
    "['sh', '-c', 'echo $0', 'hello']",
    "['printenv', 'HOME']",
    """['sh', '-c', 'echo "$(date)" "$(printenv HOME)"']""",
    """['perl', '-e', 'print $ENV{HOME}']""",
    "'make -C build && echo done', shell=True",
    "['cat', '/proc/self/status']",
])
def test_ordinary_children_read_nothing(tmp_path: Path, command: str) -> None:
    assert _reads(tmp_path, f"def f():\n    return subprocess.run({command})\n") == set()


# ---- R6b: the standard library's other launchers


@pytest.mark.parametrize("body", [
    "from distutils.spawn import spawn\ndef f():\n    spawn(['sh', '-c', 'echo $SGLANG_PAGE_SIZE'])\n",
    "import distutils.spawn\ndef f():\n    distutils.spawn.spawn(['printenv', 'SGLANG_PAGE_SIZE'])\n",
    "async def f(P):\n    loop = asyncio.get_running_loop()\n    await loop.subprocess_shell(P, 'echo $SGLANG_PAGE_SIZE')\n",
    "async def f(P):\n    await asyncio.get_event_loop().subprocess_exec(P, 'printenv', 'SGLANG_PAGE_SIZE')\n",
    "def f():\n    ctypes.CDLL(None).system(b'echo $SGLANG_PAGE_SIZE')\n",
    "def f():\n    libc = ctypes.CDLL('libc.so.6')\n    return libc.popen(b'printenv SGLANG_PAGE_SIZE', b'r')\n",
    "LIBC = ctypes.cdll.LoadLibrary(None)\ndef f():\n    LIBC.execlp(b'sh', b'sh', b'-c', b'echo $SGLANG_PAGE_SIZE', None)\n",
    "import multiprocessing.util\ndef f():\n"
    "    multiprocessing.util.spawnv_passfds('/bin/sh', ['sh', '-c', 'echo $SGLANG_PAGE_SIZE'], ())\n",
    "import _posixsubprocess\ndef f(*rest):\n    _posixsubprocess.fork_exec(['printenv', 'SGLANG_PAGE_SIZE'], *rest)\n",
])
def test_the_standard_librarys_other_launchers_read_what_their_command_names(tmp_path: Path, body: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + body})
    assert ("pkg/user.py", "f", PAGE) in read_keys(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("body", [
    "from distutils.spawn import spawn\ndef f():\n    spawn(['env'])\n",
    "def f():\n    ctypes.CDLL(None).system(b'env | grep SGLANG')\n",
    "async def f(loop, P):\n    await loop.subprocess_exec(P, 'printenv')\n",
])
def test_a_dump_by_another_launcher_is_unresolved(tmp_path: Path, body: str) -> None:
    assert "$?" in _reads(tmp_path, body)


def test_other_launchers_with_ordinary_commands_read_nothing(tmp_path: Path) -> None:
    body = (
        "from distutils.spawn import spawn\n"
        "def f(loop, P):\n"
        "    spawn(['git', 'status'])\n"
        "    ctypes.CDLL(None).system(b'nvidia-smi')\n"
        "    return loop.subprocess_exec(P, 'git', 'status')\n"
    )
    assert _reads(tmp_path, body) == set()


# ---- R6c: the program on a child's standard input


@pytest.mark.parametrize(("body", "leaf"), [
    ("def f():\n    p = subprocess.Popen(['sh'], stdin=PIPE, stdout=PIPE, text=True)\n"
     "    return p.communicate('printenv SGLANG_PAGE_SIZE\\n')\n", PAGE),
    ("def f():\n    p = subprocess.Popen(['bash', '-s'], stdin=PIPE)\n    p.stdin.write(b'env | sort')\n", "$?"),
    ("def f():\n    code = \"import os; print(os.environ['SGLANG_PAGE' + '_SIZE'])\"\n"
     "    return subprocess.run([sys.executable, '-'], input=code, capture_output=True, text=True)\n", "$?"),
    ("def f():\n    return subprocess.run(['bash'], input='v=SGLANG_PAGE; v=${v}_SIZE; echo \"${!v}\"')\n", "$?"),
    ("def f():\n    return subprocess.check_output(['python3'], input=b'import os; print(dict(os.environ))')\n", "$?"),
    ("def f(script):\n    return subprocess.run(['sh'], input=script)\n", "$?"),
    ("def f():\n    with subprocess.Popen(['sh'], stdin=PIPE) as p:\n        p.communicate(b'printenv SGLANG_PAGE_SIZE')\n", PAGE),
    ("async def f():\n    proc = await asyncio.create_subprocess_exec('sh', stdin=PIPE)\n"
     "    await proc.communicate(b'echo $SGLANG_PAGE_SIZE')\n", PAGE),
])
def test_a_program_on_a_childs_stdin_is_judged_as_its_script(tmp_path: Path, body: str, leaf: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + body})
    assert ("pkg/user.py", "f", leaf) in read_keys(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("body", [
    "def f():\n    return subprocess.Popen(['grep', 'x'], stdin=PIPE).communicate(b'data')\n",
    "def f(data):\n    p = subprocess.Popen(['gzip'], stdin=PIPE)\n    p.stdin.write(data)\n    return p.communicate()\n",
    "def f(data):\n    with subprocess.Popen(['gzip'], stdin=PIPE) as p:\n        p.communicate(data)\n",
    "def f():\n    return subprocess.run(['sh'], input='echo hi')\n",
    "def f():\n    return subprocess.run([sys.executable, '-'], input='print(1)')\n",
    "def f(data):\n    return subprocess.run(['sh', 'tools/x.sh'], input=data)\n",
    "def f(data):\n    return subprocess.run(['sh', '-c', 'wc -l'], input=data)\n",
])
def test_data_on_a_childs_stdin_reads_nothing(tmp_path: Path, body: str) -> None:
    assert _reads(tmp_path, body) == set()


# ---- P1: export_state() handed straight to a child is the documented hand-off

STATE = "import multiprocessing, threading, json, logging\nfrom configbags.runtime.dist import export_state\n"


@pytest.mark.parametrize("handoff", [
    "multiprocessing.get_context('spawn').Process(target=child_main, args=(export_state(),)).start()",
    "multiprocessing.Process(target=child_main, args=[export_state()], daemon=True).start()",
    "subprocess.run([sys.executable, '-m', 'pkg.worker', export_state()])",
    "subprocess.Popen([sys.executable, '-m', 'pkg.worker'], env={**os.environ, 'STATE': export_state()})",
    "subprocess.run([sys.executable, '-m', 'pkg.worker'], input=export_state(), text=True)",
])
def test_the_state_handed_straight_to_a_child_is_no_readback(tmp_path: Path, handoff: str) -> None:
    body = HEAD + STATE + f"def child_main(state):\n    pass\ndef launch():\n    {handoff}\n"
    result = scan_pkg(tmp_path, {"user.py": body})
    assert not {key for key in read_keys(result) if key[2] == "dist.state_dict"}, result.reads


@pytest.mark.parametrize("use", [
    "print(export_state())",
    "logging.info(export_state())",
    "return json.loads(export_state())['record']",
    "state = export_state(); multiprocessing.Process(target=child_main, args=(state,)).start()",
    "threading.Thread(target=child_main, args=(export_state(),)).start()",
    "subprocess.run(['echo', json.loads(export_state())['record']])",
])
def test_a_state_export_read_in_the_process_stays_a_readback(tmp_path: Path, use: str) -> None:
    body = HEAD + STATE + f"def child_main(state):\n    pass\ndef launch():\n    {use}\n"
    result = scan_pkg(tmp_path, {"user.py": body})
    assert ("pkg/user.py", "launch", "dist.state_dict") in read_keys(result), result.reads
    assert fails(result)
