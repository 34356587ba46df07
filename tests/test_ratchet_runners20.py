"""Round twenty's false passes of the read ratchet through a Python child run as `python -m
RUNNER FILE` (an outside attack, finding 8): `torch.distributed.run` and `.launch` (torchrun's
own spelling), `cProfile`, `profile`, `trace` and `pdb` run the file they are given, which is
read as `python FILE` is, through the runner's options; a runner's own `-m MODULE`, and
`python -m MODULE` of a module in the project (outside the roots too: `scripts.run`), read
that module's file. A file the module does not show is `$?`, and so is a file under the root
handed to a module that is neither a known runner nor the project's (deny by default, as
`torchrun FILE` is). Twins that read nothing: `python -m pip install x`, `python -m
http.server`, a module that reads nothing, a data file handed to `json.tool`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"
HEAD = (
    "import os, pathlib, subprocess, sys\nHERE = pathlib.Path(__file__).parent\n"
    "T = HERE / 'tools' / 'dump.txt'\nS = HERE.parent / 'scripts' / 'run.py'\nQ = HERE / 'tools' / 'quiet.txt'\n"
)
READER = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
QUIET_TEXT = "print('hello')\n"
OUTSIDE = {
    "scripts/__init__.py": "",
    "scripts/run.py": READER,
    "scripts/tool/__init__.py": "",
    "scripts/tool/__main__.py": READER,
    "scripts/quiet.py": QUIET_TEXT,
}
INSIDE = {"tools/dump.txt": READER, "tools/quiet.txt": QUIET_TEXT, "tools/data.json": "{}\n", "tools/req.txt": "x\n"}


def _result(tmp_path: Path, body: str):  # type: ignore[no-untyped-def]
    for name, text in OUTSIDE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return scan_pkg(tmp_path, {"user.py": HEAD + textwrap.dedent(body), **INSIDE})


def _leaves(tmp_path: Path, body: str) -> set[str]:
    result = _result(tmp_path, body)
    assert fails(result), result.reads
    return {leaf for _, _, leaf in read_keys(result)}


def _f(line: str) -> str:
    return f"def f(script=None):\n    {line}\n"


RUN = [
    "subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=1', str(S)])",
    "subprocess.run(['python3', '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--nnodes', '1', str(T)])",
    "subprocess.run(['python3', '-m', 'torch.distributed.run', '--standalone', '-r3', str(T), '--tp', '2'])",
    "subprocess.run(['python3', '-m', 'torch.distributed.launch', '--use_env', str(T)])",
    "subprocess.run(['python3', '-m', 'cProfile', '-o', '/tmp/prof.out', str(S)])",
    "subprocess.run(['python3', '-m', 'cProfile', '-s', 'cumtime', str(T)])",
    "subprocess.run(['python3', '-u', '-m', 'cProfile', str(T)])",
    "subprocess.run(['python3', '-m', 'profile', str(T)])",
    "subprocess.run(['python3', '-m', 'trace', '--count', str(T)])",
    "subprocess.run(['python3', '-m', 'trace', '--trace', '-C', '/tmp/cov', str(T)])",
    "subprocess.run(['python3', '-m', 'pdb', '-c', 'continue', str(T)])",
    "subprocess.run(f'python3 -m cProfile {T}', shell=True)",
    # a module of the project, outside the roots, where the child starts in the project
    "subprocess.run(['python3', '-m', 'scripts.run'], cwd=HERE.parent)",
    "subprocess.run(['python3', '-m', 'scripts.run'])",
    "subprocess.run(['python3', '-m', 'scripts.tool'], cwd=HERE.parent)",
    "subprocess.run(['python3', '-m', 'cProfile', '-m', 'scripts.run'], cwd=HERE.parent)",
    "subprocess.run(['python3', '-m', 'torch.distributed.run', '-m', 'scripts.run'], cwd=HERE.parent)",
]


@pytest.mark.parametrize("line", RUN)
def test_the_file_a_runner_module_runs_is_read(tmp_path: Path, line: str) -> None:
    assert PAGE in _leaves(tmp_path, _f(line)), line


UNSHOWN = [
    "subprocess.run(['python3', '-m', 'torch.distributed.run', '--nproc_per_node=1', script])",
    "subprocess.run(['python3', '-m', 'cProfile', sys.argv[1]])",
    "subprocess.run(['python3', '-m', 'cProfile', '-m', script])",
    # a module neither a known runner nor the project's, given a file under the root
    "subprocess.run(['python3', '-m', 'torch.utils.bottleneck', str(T)])",
    "subprocess.run(['python3', '-m', 'debugpy', '--listen', '5678', str(Q)])",
]


@pytest.mark.parametrize("line", UNSHOWN)
def test_a_file_a_runner_module_runs_that_is_not_shown_is_unresolved(tmp_path: Path, line: str) -> None:
    assert UNRESOLVED in _leaves(tmp_path, _f(line)), line


QUIET = [
    "subprocess.run(['python3', '-m', 'pip', 'install', 'x'])",
    "subprocess.run([sys.executable, '-m', 'pip', 'install', '-r', str(HERE / 'tools' / 'req.txt')])",
    "subprocess.run(['python3', '-m', 'http.server', '8000'])",
    "subprocess.run(['python3', '-m', 'http.server', '8000'], cwd=HERE)",
    "subprocess.run(['python3', '-m', 'http.server'], cwd=script)",
    "subprocess.run(['python3', '-m', 'json.tool', str(HERE / 'tools' / 'data.json')])",
    "subprocess.run(['python3', '-m', 'cProfile', str(Q)])",
    "subprocess.run(['python3', '-m', 'torch.distributed.run', '--nproc_per_node', '2', str(Q), str(T)])",
    "subprocess.run(['python3', '-m', 'scripts.quiet'], cwd=HERE.parent)",
    "subprocess.run(['python3', '-m', 'scripts.run'], cwd='/tmp')",
]


@pytest.mark.parametrize("line", QUIET)
def test_a_module_run_that_runs_no_reading_file_reads_nothing(tmp_path: Path, line: str) -> None:
    result = _result(tmp_path, _f(line))
    assert not fails(result), result.reads


def test_a_module_of_the_roots_run_by_name_is_read_in_its_own_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tool.py").write_text(READER)
    result = _result(tmp_path, _f("subprocess.run(['python3', '-m', 'pkg.tool'])"))
    assert ("pkg/tool.py", "<module>", PAGE) in read_keys(result)
