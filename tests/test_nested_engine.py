"""A nested config leaf end to end, on tests/fixtures/nested_engine: a record that holds a
sub-config dataclass (`compilation_config: CompilationConfig`), set on the command line as
JSON or by dotted sub-keys through the engine's own parser (`--compilation-config.level 3`,
as vLLM's FlexibleArgumentParser takes it). It is imported with a `structure:`, generated,
cli-checked with 0 differences on its corpus, held by the ratchet and fixed: fix moves the
plain reads and refuses the sub-config's, whose by-hand move the ratchet then follows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.cli import main as ratchet_main
from configbags.migrate.clicheck import cli_check
from configbags.migrate.clicheck import main as cli_check_main
from configbags.migrate.importer import main as import_main

FIXTURE = Path(__file__).parent / "fixtures" / "nested_engine"
LEGACY = "nested_engine.engine_args:EngineArgs"
PARSER = "nested_engine.arg_utils:FlexibleArgumentParser"
PACKAGE = "nested_engine.config_bags"


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "engine"
    shutil.copytree(FIXTURE, root)
    monkeypatch.chdir(root)
    yield root
    for name in [m for m in sys.modules if m.startswith("nested_engine")]:
        del sys.modules[name]


def _run(root: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_a_sub_config_imported_generated_checked_held_and_fixed(
    engine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # import: the sub-config becomes a json leaf with its structure; its JSON reader is no loss
    assert import_main(["nested_engine/engine_args.py:EngineArgs", "--out", "schema"]) == 0
    err = capsys.readouterr().err
    assert "lost:" not in err and "`CompilationConfig.from_cli` builds the config dataclass from JSON" in err
    leaf = yaml.safe_load((engine / "schema" / "namespaces" / "legacy.yaml").read_text())["leaves"][
        "compilation_config"]
    assert (leaf["type"], leaf["default"]) == ("json", {})
    assert leaf["structure"] == {
        "level": "int", "backend": "str", "custom_ops": "list[str]", "cudagraph_sizes": "optional list[int]",
        "pass_config": {"enable_fusion": "bool", "threads": "optional int"},
    }
    assert gen_main(["--schema", "schema", "--out", "nested_engine/config_bags"]) == 0
    capsys.readouterr()

    # cli-check through the engine's own parser: the whole value, dotted keys and both mean the same
    check = ["--legacy", LEGACY, "--package", PACKAGE, "--corpus", "cli_corpus.txt", "--import-engine"]
    assert cli_check_main([*check, "--parser", PARSER]) == 0
    out = capsys.readouterr().out
    assert "cli-check ok: 10 command lines, 4 leaves compared, 0 differences" in out
    assert "builds a sub-config dataclass; compared as the generated dict" in out
    # a plain argparse parser refuses the dotted keys: reported, with the fix
    assert cli_check_main(check) == 1
    assert "hint: the legacy side refused dotted sub-keys" in capsys.readouterr().out
    # a value the legacy sub-config took unchecked, and the structure refuses, is a difference
    report = cli_check(LEGACY, PACKAGE, "--compilation-config.level 5x\n--compilation-config.level 3\n",
                       parser=PARSER)
    assert [(d.line, d.leaf, d.legacy) for d in report.differences] == [(1, "<parse>", "accepted")]

    # held by the ratchet, and fixed: the plain reads move, the sub-config's stay with the reason
    assert ratchet_main(["init", "--schema", "schema", "--root", "nested_engine",
                         "--exclude", "nested_engine/engine_args.py"]) == 0
    assert gen_main(["--schema", "schema", "--out", "nested_engine/config_bags"]) == 0
    assert ratchet_main(["check", "--schema", "schema"]) == 0
    assert ratchet_main(["fix", "--schema", "schema", "--accessors-module", f"{PACKAGE}.accessors"]) == 0
    assert "ratchet fix: rewrote 3 reads in 1 files; skipped 2" in capsys.readouterr().out
    worker = engine / "nested_engine" / "worker.py"
    text = worker.read_text()
    assert "return cfg.legacy.tensor_parallel_size" in text
    assert "get_server_args().compilation_config.level" in text  # never `cfg.legacy.compilation_config.level`
    allowlist = yaml.safe_load((engine / "schema" / "ratchet.yaml").read_text())["allowlist"]
    assert {e["function"] for e in allowlist} == {"compile_level", "fused"}
    assert all("json leaf with a structure" in e["reason"] for e in allowlist)
    assert ratchet_main(["check", "--schema", "schema"]) == 0

    # the move by hand: the config built from the dict; the ratchet's list shrinks after it
    worker.write_text(
        text.replace("from nested_engine.engine_args import get_server_args\n",
                     "from nested_engine.config import CompilationConfig\n")
        .replace("get_server_args().compilation_config",
                 "CompilationConfig.from_dict(cfg.legacy.compilation_config)")
    )
    capsys.readouterr()
    assert ratchet_main(["check", "--schema", "schema"]) == 1  # the two entries are stale now
    assert ratchet_main(["update", "--schema", "schema"]) == 0
    assert ratchet_main(["check", "--schema", "schema"]) == 0
    argv = ["-tp", "2", "--compilation-config.level", "3", "--compilation-config.pass_config.enable_fusion", "true"]
    migrated = _run(engine, (
        f"from {PACKAGE}.accessors import publish\n"
        f"from {PACKAGE}.server_args import ServerArgs\n"
        "from nested_engine import worker\n"
        f"publish(ServerArgs.from_cli({argv!r}), role='launcher')\n"
        "print(worker.world_size(), worker.compile_level(), worker.fused())"
    ))
    legacy = _run(engine, (
        "from nested_engine.engine_args import parse\n"
        f"args = parse({argv!r})\n"
        "print(args.tensor_parallel_size, args.compilation_config.level, args.compilation_config.pass_config.enable_fusion)"
    ))
    assert migrated == legacy == "2 3 True"
