"""docs/MIGRATING.md's shell steps, run as written, in order, each line a subprocess of the
installed `configbags` (step 5's Python is run by tests/test_first_day.py). A block that
opens with `cp -r tests/fixtures/X /tmp/Y && cd /tmp/Y` works on its own copy of that
fixture; every other block on the engine the guide starts with. Every command must exit 0
(the guide shows no failing step)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from genutil import REPO

DOC = REPO / "docs" / "MIGRATING.md"
BIN = Path(sys.executable).parent
COPY = re.compile(r"^cp -r (tests/fixtures/\w+) (/tmp/\w+) && cd \2$")


def _blocks() -> list[tuple[int, list[str]]]:
    """(line, commands) of each ```sh block, backslash continuations joined."""
    found: list[tuple[int, list[str]]] = []
    for match in re.finditer(r"^```sh\n(.*?)^```", DOC.read_text(), re.S | re.M):
        line = DOC.read_text()[: match.start()].count("\n") + 1
        found.append((line, match.group(1).replace("\\\n", " ").strip().splitlines()))
    return found


def test_the_guide_has_its_steps() -> None:
    commands = [c for _, block in _blocks() for c in block]
    assert sum(c.startswith("configbags ") for c in commands) >= 15
    assert all(c.startswith(("configbags ", "cp -r ")) for c in commands), commands


@pytest.mark.slow
def test_every_shell_step_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    main: Path | None = None
    for line, commands in _blocks():
        cwd = main
        for command in commands:
            copy = COPY.match(command)
            if copy:
                cwd = tmp_path / Path(copy.group(2)).name
                shutil.copytree(REPO / copy.group(1), cwd)
                main = main or cwd
                continue
            assert cwd is not None, f"MIGRATING.md:{line}: a step before any engine is copied"
            done = subprocess.run(shlex.split(command, comments=True), cwd=cwd, env=env, capture_output=True,
                                  text=True, timeout=300, check=False)
            assert done.returncode == 0, f"MIGRATING.md:{line}: `{command}`\n{done.stdout}{done.stderr}"
