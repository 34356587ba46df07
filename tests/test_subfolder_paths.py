"""Every command from a subfolder of the project: each relative path on a configbags command
line is relative to the project (the folder of the nearest pyproject.toml), never to the
working folder, so the commands of docs/MIGRATING.md run as written from anywhere in the
engine. Every step is a subprocess, as a user types it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from genutil import REPO, legacy_project

CONFIGBAGS = str(Path(sys.executable).parent / "configbags")


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([CONFIGBAGS, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    return legacy_project(tmp_path)


@pytest.mark.slow
def test_the_migration_runs_as_written_from_a_subfolder(engine: Path) -> None:
    sub = engine / "legacy_engine"  # the engine's own package: where a maintainer often stands
    ok(run(sub, "import-dataclass", "legacy_engine/server_args.py:ServerArgs", "--out", "schema",
           "--mapping", "mapping.yaml", "--engine-root", "legacy_engine"))
    assert (engine / "schema" / "namespaces").is_dir() and not (sub / "schema").exists()
    ok(run(sub, "gen", "--schema", "schema", "--out", "legacy_engine/config_bags"))
    assert (sub / "config_bags" / "accessors.py").is_file() and not (sub / "legacy_engine").exists()
    init = ok(run(sub, "ratchet", "init", "--schema", "schema", "--root", "legacy_engine",
                  "--exclude", "legacy_engine/server_args.py", "--record-dict", "global_server_args_dict",
                  "--resolution", "legacy_engine/model_config.py:adjust_for_model"))
    # the hint it prints is a project-relative command: it runs as printed from here too
    assert "`configbags gen --schema schema --out legacy_engine/config_bags`" in init
    ok(run(sub, "gen", "--schema", "schema", "--out", "legacy_engine/config_bags"))
    assert "ratchet ok" in ok(run(sub, "ratchet", "check", "--schema", "schema"))
    assert "ratchet ok" in ok(run(sub, "ratchet", "check"))  # the project's schema/, with no table naming it
    accessors = ["--accessors-module", "legacy_engine.config_bags.accessors"]
    assert "would rewrite" in ok(run(sub, "ratchet", "fix", "--schema", "schema", *accessors, "--dry-run"))
    ok(run(sub, "ratchet", "fix", "--schema", "schema", *accessors, "--only", "legacy_engine/model_runner.py"))
    assert "from legacy_engine.config_bags.accessors import cfg" in (sub / "model_runner.py").read_text()
    assert "ratchet ok" in ok(run(sub, "ratchet", "check", "--schema", "schema"))
    check = ["cli-check", "--legacy", "legacy_engine.server_args:ServerArgs", "--package",
             "legacy_engine.config_bags", "--corpus", "cli_corpus.txt", "--import-engine"]
    assert "cli-check ok: 42 command lines" in ok(run(sub, *check, "--path", "."))
    assert "cli-check ok: 42 command lines" in ok(run(sub, *check))  # the project's own package is found
    explain = ok(run(sub, "explain", "page_size", "--package", "legacy_engine.config_bags"))
    assert "schema default" in explain


@pytest.mark.slow
def test_a_legacy_side_that_cannot_import_is_one_line(engine: Path) -> None:
    sub = engine / "legacy_engine"
    done = run(sub, "cli-check", "--legacy", "nosuchengine.server_args:ServerArgs", "--package",
               "legacy_engine.config_bags", "--corpus", "cli_corpus.txt", "--path", ".", "--import-engine")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ModuleNotFoundError: No module named 'nosuchengine'" in lines[0] and "pass --path FOLDER" in lines[0]
    missing = run(sub, "cli-check", "--legacy", "legacy_engine.server_args:ServerArgs", "--package",
                  "legacy_engine.config_bags", "--corpus", "nope.txt", "--import-engine")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"configbags cli-check: {engine / 'nope.txt'}: No such file or directory; check the path (a relative "
        f"path is from the project: the folder of the nearest pyproject.toml, else the working folder)"]


@pytest.mark.slow
def test_plan_and_explain_take_project_paths_from_a_subfolder() -> None:
    docs = REPO / "docs"  # a subfolder of this project; both commands write nothing
    plan = ok(run(docs, "plan", "--model-config", "models/llama-3.1-8b.json", "--gpu", "H100"))
    assert "llama-3.1-8b" in plan
    explain = ok(run(docs, "explain", "page_size", "--model-config", "models/llama-3.1-8b.json"))
    assert "page_size" in explain


def test_a_path_is_relative_to_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from configbags.runtime.project import project_path, project_root

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert project_path("schema") == Path("schema")  # from the project itself: as typed
    monkeypatch.chdir(tmp_path / "a" / "b")
    assert project_root() == tmp_path.resolve()
    assert project_path("schema") == tmp_path.resolve() / "schema"
    assert project_path("/abs/x") == Path("/abs/x")
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)
    (tmp_path / "pyproject.toml").unlink()
    assert project_path("schema") == Path("schema")  # no project: the working folder


def test_the_yaml_gets_the_project_relative_paths(engine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ratchet init from a subfolder writes the same scan paths as from the project."""
    from configbags.migrate.cli import main as ratchet_main

    schema = engine / "schema"
    schema.mkdir()
    monkeypatch.chdir(engine / "checks")
    assert ratchet_main(["init", "--schema", "schema", "--root", "legacy_engine",
                         "--exclude", "legacy_engine/server_args.py"]) == 0
    scan = yaml.safe_load((schema / "ratchet.yaml").read_text())["scan"]
    assert scan["roots"] == ["legacy_engine"] and scan["excludes"] == ["legacy_engine/server_args.py"]
