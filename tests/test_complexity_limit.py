"""`make lint` refuses a function past mccabe complexity 15 (ruff's C901, set in
pyproject.toml), anywhere in the repository: such a function is written as named steps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _branchy(branches: int) -> str:
    """A function of complexity `branches + 1`."""
    arms = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(branches))
    return f"def branchy(x: int) -> int:\n{arms}    return -1\n"


def _lint(source: str, as_file: str) -> subprocess.CompletedProcess[str]:
    # From stdin, as if the file were `as_file`: the repository's config and per-file rules
    # apply, and nothing is written into the checkout.
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "--stdin-filename", as_file, "-"],
                          cwd=REPO, input=source, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("as_file", ["runtime/probe.py", "evolve/probe.py", "tests/test_probe.py", "bench/probe.py"])
def test_a_function_past_15_fails_lint(as_file: str) -> None:
    result = _lint(_branchy(16), as_file)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "C901 `branchy` is too complex (17 > 15)" in result.stdout


def test_a_function_at_15_passes_lint() -> None:
    result = _lint(_branchy(14), "runtime/probe.py")
    assert result.returncode == 0, result.stdout + result.stderr
