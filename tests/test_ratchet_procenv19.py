"""Round nineteen's false passes of the read ratchet through the process's environment
read as the `/proc/.../environ` file by a path the check did not recognise (an outside
attack, finding 7): a path spelled through constants the module concatenates (`'env' +
'iron'` inside an f-string), a literal with `..` segments (`/proc/self/../self/environ`)
or through `/dev/fd` (a link to `/proc/self/fd`), a relative `environ` opened where the
module changes into `/proc` (or into a folder it does not spell) or through a `dir_fd=`,
a child whose `cwd=` or whose shell's `cd` is such a folder, and MPI's launchers (`mpirun
-np 1 env`), which run their command with the process's environment. Each is `$?`. The
twins read nothing: a file named `environ` outside `/proc`, `/proc/self/status`, a child
in another folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet, scan_env_pkg

UNRESOLVED = "$?"
# (no word of a child process: the file is walked for its path alone)
HEAD = "import os, contextlib, pathlib\n"
CHILD_HEAD = "import os, pathlib, subprocess, sys\n"


def _user(body: str, head: str = HEAD) -> dict[str, str]:
    return {"user.py": head + body}


PATHS = [
    # constants concatenated, inside an f-string or around it
    "def f():\n    return open(f\"/proc/{os.getpid()}/{'env' + 'iron'}\", 'rb').read()\n",
    "def f():\n    return open('/proc/self/' + 'env' + 'iron', 'rb').read()\n",
    "E = 'env' + 'iron'\ndef f():\n    return open(f'/proc/self/{E}', 'rb').read()\n",
    "E = 'environ'\ndef f():\n    return open('/proc/self/' + E, 'rb').read()\n",
    "def f():\n    return pathlib.Path('/proc/self', 'env' 'iron').read_bytes()\n",
    # `..` and `.` segments, normalised
    "def f():\n    return open('/proc/self/../self/environ', 'rb').read()\n",
    "def f():\n    return open('/proc/./1/environ', 'rb').read()\n",
    "def f():\n    return open('/proc/self/task/../environ', 'rb').read()\n",
    "def f(pid):\n    return open(f'/proc/{pid}/../self/environ', 'rb').read()\n",
    # /dev/fd is /proc/self/fd; `..` after a descriptor's link is its target's folder
    "def f():\n    return open('/dev/fd/../environ', 'rb').read()\n",
    "def f():\n    return open('/dev/fd/3/../environ', 'rb').read()\n",
    "def f():\n    return open('/proc/self/fd/3/../environ', 'rb').read()\n",
    "def f():\n    return open('/dev/stdin/../environ', 'rb').read()\n",
    # a relative path, where the module changes into /proc
    "def f():\n    os.chdir('/proc/self'); return open('environ', 'rb').read()\n",
    "def f():\n    with contextlib.chdir('/proc/self'):\n        return open('environ', 'rb').read()\n",
    "def f():\n    os.chdir('/proc'); return open('self/environ', 'rb').read()\n",
    "def f():\n    os.chdir('/proc/self')\n    return pathlib.Path('environ').read_bytes()\n",
    "def f():\n    os.chdir('/proc/self/task/1')\n\ndef g():\n    return open('./environ', 'rb').read()\n",
    # ... or into a folder it does not spell
    "def f(d):\n    os.chdir(d); return open('environ', 'rb').read()\n",
    "def f():\n    fd = os.open('/proc/self', os.O_RDONLY); os.fchdir(fd); return open('environ', 'rb').read()\n",
    # ... or relative to a folder's descriptor
    "def f():\n    fd = os.open('/proc/self', os.O_RDONLY)\n"
    "    return os.read(os.open('environ', os.O_RDONLY, dir_fd=fd), 1 << 20)\n",
    "def f(fd):\n    return os.stat('environ', dir_fd=fd)\n",
]


@pytest.mark.parametrize("body", PATHS)
def test_the_environment_file_by_a_path_it_did_not_recognise_is_unresolved(tmp_path: Path, body: str) -> None:
    assert UNRESOLVED in env_leaves(tmp_path, _user(body)), body


CHILDREN = [
    "['sh', '-c', 'cd /proc/self && cat environ']",
    "'cd /proc/self; cat environ', shell=True",
    "['bash', '-c', 'cd /proc && tr \"\\\\0\" \"\\\\n\" < self/environ']",
    "['sh', '-c', 'cd \"$1\" && cat environ', 'sh', '/proc/self']",
    "['sh', '-c', 'cat /dev/fd/../environ']",
    "['cat', '/dev/fd/../environ']",
    "['cat', 'environ'], cwd='/proc/self'",
    "['cat', 'self/environ'], cwd='/proc'",
    "['cat', 'environ'], cwd=pathlib.Path('/proc/self')",
    "['sh', '-c', 'cat environ'], cwd='/proc/self'",
    "['cat', 'environ'], cwd=sys.argv[1]",
    "['python3', '-c', 'print(open(\"environ\").read())'], cwd='/proc/self'",
    # MPI's launchers run their command with the process's environment
    "['mpirun', '-np', '1', 'env']",
    "['mpirun', '--allow-run-as-root', '-np', '2', '--mca', 'btl', 'self', 'env']",
    "['mpiexec', '-n', '1', '-genv', 'A', '1', 'printenv']",
    "['orterun', '-x', 'A=1', '--oversubscribe', 'sh', '-c', 'env']",
    "['prterun', '--map-by', 'core', 'env']",
    "['mpirun', '-np', '1', 'hostname', ':', '-np', '1', 'env']",
    "['/usr/bin/mpirun', '-np', '1', 'python3', '-c', 'import os; print(dict(os.environ))']",
]


@pytest.mark.parametrize("call", CHILDREN)
def test_a_child_reading_the_environment_file_or_printing_it_is_unresolved(tmp_path: Path, call: str) -> None:
    body = f"def f():\n    return subprocess.run({call}, capture_output=True).stdout\n"
    assert UNRESOLVED in env_leaves(tmp_path, _user(body, CHILD_HEAD)), call


def test_a_child_in_a_folder_the_module_changes_into_reads_there(tmp_path: Path) -> None:
    body = "def f():\n    os.chdir('/proc/self')\n    return subprocess.run(['cat', 'environ']).stdout\n"
    assert UNRESOLVED in env_leaves(tmp_path, _user(body, CHILD_HEAD))


QUIET = [
    "def f():\n    return open('environment.txt').read()\n",
    "def f():\n    return open('environ').read()\n",
    "def f():\n    os.chdir('/tmp'); return open('environ').read()\n",
    "def f():\n    with contextlib.chdir('/srv/app'):\n        return open('environ').read()\n",
    "def f():\n    os.chdir('/proc/self'); return open('status').read()\n",
    "def f():\n    return open('/proc/self/status').read()\n",
    "def f():\n    return open('/proc/self/../self/status').read()\n",
    "def f():\n    return open('/dev/fd/../status').read()\n",
    "def f():\n    return open(f\"/proc/{os.getpid()}/{'st' + 'atus'}\").read()\n",
    "def f():\n    return open('/srv/../etc/environ').read()\n",
    "def f(d):\n    os.chdir(d); return open('environment.txt').read()\n",
    "def f():\n    fd = os.open('/tmp', os.O_RDONLY)\n    return os.stat('status', dir_fd=fd)\n",
    "def f():\n    return getattr(os, 'sep'), 'env' + 'ironment'\n",
    "def f():\n    return subprocess.run(['cat', 'environ'], cwd='/tmp').stdout\n",
    "def f():\n    return subprocess.run(['cat', 'environ']).stdout\n",
    "def f():\n    return subprocess.run(['sh', '-c', 'cd /srv && cat environ']).stdout\n",
    "def f():\n    return subprocess.run(['sh', '-c', 'cd /proc/self && cat status']).stdout\n",
    "def f():\n    return subprocess.run(['cat', 'status'], cwd='/proc/self').stdout\n",
    "def f():\n    return subprocess.run(['mpirun', '-np', '2', 'python3', 'train.py']).stdout\n",
    "def f():\n    return subprocess.run(['mpirun', '-x', 'A=1', '-np', '2', 'hostname']).stdout\n",
]


@pytest.mark.parametrize("body", QUIET)
def test_a_path_that_is_not_the_environment_file_reads_nothing(tmp_path: Path, body: str) -> None:
    env_quiet(tmp_path, _user(body, CHILD_HEAD))


def test_the_environment_file_is_reported_once_where_the_path_is_built(tmp_path: Path) -> None:
    body = "def f():\n    return open('/proc/self/../self/environ', 'rb').read()\n"
    result = scan_env_pkg(tmp_path, _user(body))
    assert [(r.leaf, r.line, r.form) for r in result.reads if r.file == "pkg/user.py"] == [
        (UNRESOLVED, 3, "environ_whole")
    ]
