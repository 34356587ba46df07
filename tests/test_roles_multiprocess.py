"""Acceptance for role scoping: a launcher spawns tokenizer, scheduler and detokenizer
processes (tests/roles_app.py, multiprocessing with the spawn context, so each child
imports with the inherited CONFIGBAGS_ROLE_NAMESPACES), each publishing with its role.

- record mode, through `configbags audit record -- ...`: the report shows each role's
  observed set, and the detokenizer's stray `get_schedule()` outside its declared set;
- enforce mode: the same run fails in the detokenizer only, with the documented message;
- off mode: the same run succeeds and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from configbags import audit
from configbags.runtime import roles

REPO = Path(__file__).resolve().parent.parent
APP = REPO / "tests" / "roles_app.py"
pytestmark = pytest.mark.slow  # a launcher and three spawned role processes per test


def run_app(mode: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGBAGS_")}
    env.update({roles.MODE_VAR: mode, roles.OUT_VAR: str(out)})
    return subprocess.run([sys.executable, str(APP)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_record_run_reports_each_roles_observed_set(tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reads.jsonl"
    status = audit.main(["record", "--out", str(out), "--", sys.executable, str(APP)])
    printed = capfd.readouterr().out  # the command's own output too
    assert status == 0, printed
    for role in ("tokenizer", "scheduler", "detokenizer"):
        assert f"{role}: ok" in printed

    text = audit.report([out], workload="roles_app: three roles", date="2026-08-07")
    observed = {
        "launcher": "{model, parallel}",
        "tokenizer": "{serving}",
        "scheduler": "{memory, parallel, schedule, spec}",
        "detokenizer": "{observability, schedule, serving}",
    }
    for role, seen in observed.items():
        block = text[text.index(f"\n{role} (1 process)"):]
        assert block.split("\n")[3] == f"  observed:  {seen}", block
    assert "  outside the declared set (enforce mode refuses): {schedule}" in text
    proposed = audit.load([out]).roles
    assert sorted(proposed) == ["detokenizer", "launcher", "scheduler", "tokenizer"]
    assert len({pid for r in proposed.values() for pid in r.pids}) == 4  # four processes


def test_enforce_run_fails_in_the_process_that_reads_outside_its_set(tmp_path: Path) -> None:
    proc = run_app("enforce", tmp_path / "unused.jsonl")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "tokenizer: ok",
        "scheduler: ok",
        "detokenizer: failed (exit code 1)",
    ]
    assert "Process detokenizer:" in proc.stderr  # multiprocessing names the failed process
    assert (
        "configbags.runtime.errors.RoleError: get_schedule(): role 'detokenizer' may not read namespace "
        "'schedule'; its declared set is {model, observability, serving}. Pass the value in "
        "from a role that owns it, or add 'schedule' to the role's `reads` in "
        "schema/roles.yaml (with an audit record) and run make gen"
    ) in proc.stderr
    assert proc.stderr.count("configbags.runtime.errors.RoleError:") == 1
    assert not (tmp_path / "unused.jsonl").exists()


def test_off_run_succeeds_and_records_nothing(tmp_path: Path) -> None:
    proc = run_app("off", tmp_path / "unused.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": ok") == 3
    assert not (tmp_path / "unused.jsonl").exists()
