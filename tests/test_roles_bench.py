"""bench/bench_roles.py runs and prints one line per mode (figures only: no timed assertions
in tests; run the bench itself for the numbers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # runs a bench script
def test_bench_roles_runs_every_mode() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_roles.py"), "--iterations", "2000", "--repeat", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for mode in ("off", "record", "enforce"):
        assert any(line.startswith(f"{mode} ") and line.count(" ns") == 2 for line in lines), proc.stdout
