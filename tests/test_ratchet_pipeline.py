"""The migration end to end, on a copy of tests/fixtures/legacy_engine: import-dataclass,
gen, ratchet init, fix and check in turn. At the end the allowlist holds only what fix
refused, each with its reason, and the engine's own tests pass before and after."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codegen.__main__ import main as gen_main
from codegen.importer import main as import_main
from codegen.ratchet.cli import main as ratchet_main
from codegen.ratchet.scan import ScanSettings, scan_tree

FIXTURE = Path(__file__).parent / "fixtures" / "legacy_engine"


def _engine_tests(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(root / "pytest.ini"), "--rootdir", str(root)],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_the_fixture_is_a_real_legacy_engine() -> None:
    files = list((FIXTURE / "legacy_engine").glob("*.py"))
    assert len(files) >= 10
    settings = ScanSettings(roots=("legacy_engine",), excludes=("legacy_engine/server_args.py",))
    result = scan_tree(FIXTURE, settings)
    assert len(result.reads) >= 40
    assert {"accessor", "alias", "parameter", "attribute", "self_alias"} <= {r.via for r in result.reads}
    assert not result.violations and not result.problems


def test_import_gen_init_fix_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "engine"
    shutil.copytree(FIXTURE, root)
    before = _engine_tests(root)
    assert before.returncode == 0, before.stdout + before.stderr

    schema = root / "schema"
    source = root / "legacy_engine" / "server_args.py"
    assert import_main([f"{source}:ServerArgs", "--out", str(schema), "--mapping", str(root / "mapping.yaml")]) == 0
    assert gen_main(["--schema", str(schema), "--out", str(root / "legacy_engine" / "config_bags")]) == 0
    init = ["init", "--schema", str(schema), "--root", str(root / "legacy_engine")]
    assert ratchet_main([*init, "--exclude", "legacy_engine/server_args.py"]) == 0
    baseline = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert len(baseline) >= 40 and {e["reason"] for e in baseline} == {"baseline"}
    assert ratchet_main(["check", "--schema", str(schema)]) == 0

    accessors_module = "legacy_engine.config_bags.accessors"
    assert ratchet_main(["fix", "--schema", str(schema), "--accessors-module", accessors_module]) == 0
    assert ratchet_main(["check", "--schema", str(schema)]) == 0
    out = capsys.readouterr().out
    assert "ratchet ok: 11 files scanned, 4 raw reads at 4 (file, function, leaf) keys" in out

    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert [(e["file"], e["function"], e["leaf"], e["reason"]) for e in allowlist] == [
        ("legacy_engine/kv_cache.py", "knob", "*",
         "fix refused: dynamic getattr: the leaf name is only known at run time"),
        ("legacy_engine/launch.py", "launch", "url",
         "fix refused: `url` is not a config leaf; no accessor replaces it"),
        ("legacy_engine/lora_manager.py", "LoRAManager.snapshot", "*",
         "fix refused: reads the whole record (vars/asdict/__dict__); no single accessor replaces it"),
        ("legacy_engine/tokenizer_manager.py", "TokenizerManager.endpoint", "url",
         "fix refused: `url` is not a config leaf; no accessor replaces it"),
    ]
    scheduler = (root / "legacy_engine" / "scheduler.py").read_text()
    assert "return tokens * get_parallel().tp_size  # per-rank budget\n" in scheduler
    assert "        # The comment on this line must survive the rewrite.\n" in scheduler

    after = _engine_tests(root)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "11 passed" in after.stdout
    # the schema with the refused entries still generates, and the package stays current
    generated = root / "legacy_engine" / "config_bags"
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    assert gen_main(["--schema", str(schema), "--out", str(generated), "--check"]) == 0
