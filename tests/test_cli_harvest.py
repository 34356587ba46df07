"""Command lines as people type them: launch lines harvested from a tree's docs, scripts,
tests and manifests (tests/fixtures/abbrev_engine); the abbreviations the legacy parser
expanded, proposed as aliases or kept by `cli: {abbreviations: legacy}`; custom actions
and converters reported by the importer and by cli-check."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_importer_v3 import held_by_the_ratchet

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.clicheck import check_lines, harvested
from configbags.migrate.clicheck import main as cli_check_main
from configbags.migrate.harvest import harvest
from configbags.migrate.importer import main as import_main

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "abbrev_engine"
SPEC = "abbrev_engine.server_args:ServerArgs"


def test_launch_lines_are_harvested_from_markdown_shell_python_and_yaml() -> None:
    found = {(launch.where, " ".join(launch.argv)) for launch in harvest(FIXTURE, ["abbrev_engine"])}
    assert found == {
        ("docs/quickstart.md:6", "--model-path meta-llama/Llama-3.1-8B --tp 2"),
        ("docs/quickstart.md:12", "--model-path Qwen/Qwen2-7B --mem-frac 0.9 --trust-remote"),  # continuation
        ("docs/quickstart.md:16", "--model-path m --speculative-algo EAGLE --speculative-draft d"),  # inline
        ("scripts/bench.sh:3", "--model-path m --disable-radix --max-total-token 65536"),  # up to `&`
        ("scripts/bench.sh:4", "--model-path m --mem-fraction 0.8"),  # up to `|`
        ("checks/check_launch.py:6", "--model-path m --tp-size 4"),  # a list of strings
        ("checks/check_launch.py:7", "--model-path m --quantization-param-path kv.json"),
        ("deploy/server.yaml:8", "--model-path /models/llama --tp 8 --mem-frac 0.85"),  # command + args
    }


def _engine(tmp_path: Path) -> Path:
    root = tmp_path / "abbrev_engine"
    shutil.copytree(FIXTURE, root)
    return root


def _unload() -> None:
    for name in [m for m in sys.modules if m.startswith("abbrev_engine")]:
        del sys.modules[name]


@pytest.mark.slow
def test_abbreviations_become_aliases_and_actions_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _engine(tmp_path)
    monkeypatch.chdir(root)
    command = ["abbrev_engine/server_args.py:ServerArgs", "--out", "schema", "--harvest", "."]
    assert import_main(command) == 1  # a custom action and a None-like converter: listed, nothing written
    err = capsys.readouterr().err
    assert "lost: lora_paths: the custom action `LoRAPathAction` decides what --lora-paths stores" in err
    assert "lost: quantization_param_path: the type converter `nullable_str` turns 'None'-like" in err
    assert "tp_size: alias --tp added: the legacy parser expands it to --tp-size" in err
    assert import_main([*command, "--accept-loss"]) == 0
    capsys.readouterr()
    leaves: dict[str, Any] = {}
    for path in (root / "schema" / "namespaces").glob("*.yaml"):
        leaves.update(yaml.safe_load(path.read_text())["leaves"])
    assert {n: leaves[n]["cli"]["aliases"] for n in leaves if "aliases" in (leaves[n].get("cli") or {})} == {
        "tp_size": ["--tp"], "mem_fraction_static": ["--mem-frac", "--mem-fraction"],
        "trust_remote_code": ["--trust-remote"], "max_total_tokens": ["--max-total-token"],
        "disable_radix_cache": ["--disable-radix"], "speculative_algorithm": ["--speculative-algo"],
        "speculative_draft_model_path": ["--speculative-draft"],
    }
    assert leaves["lora_paths"]["type"] == "optional json"  # the action builds a dict: not a list
    assert gen_main(["--schema", "schema", "--out", "abbrev_engine/config_bags"]) == 0
    capsys.readouterr()
    try:
        check = ["--legacy", SPEC, "--package", "abbrev_engine.config_bags", "--harvest", ".", "--path", str(root),
                 "--import-engine"]
        assert cli_check_main(check) == 0, capsys.readouterr().out
        out = capsys.readouterr().out
        assert "cli-check ok: 8 command lines" in out and "0 differences" in out
        assert "note: abbreviation --tp of --tp-size: the generated parser takes it too" in out
        assert "note: --lora-paths (lora_paths): the custom action LoRAPathAction decides what it stores" in out
        assert "the type converter nullable_str turns 'None'-like strings into None" in out
        # a line that uses the conversion differs, and says where it is
        lines = [("notes.md:3", ["--model-path", "m", "--quantization-param-path", "None"])]
        report = check_lines(SPEC, "abbrev_engine.config_bags", lines, path=[root])
        assert [d.render() for d in report.differences] == [
            "notes.md:3: `--model-path m --quantization-param-path None`: quantization_param_path: legacy None, "
            "generated 'None'"]
    finally:
        _unload()
    held_by_the_ratchet(root, "abbrev_engine", capsys, "abbrev_engine/server_args.py")


@pytest.mark.slow
def test_a_schema_may_keep_legacy_prefix_matching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    root = _engine(tmp_path)
    monkeypatch.chdir(root)
    assert import_main(["abbrev_engine/server_args.py:ServerArgs", "--out", "schema", "--accept-loss"]) == 0
    (root / "schema" / "settings.yaml").write_text('version: "1"\ncli: {abbreviations: legacy}\n')
    assert gen_main(["--schema", "schema", "--out", "abbrev_engine/config_bags"]) == 0
    capsys.readouterr()
    sys.path.insert(0, str(root))
    try:
        corpus = harvested(root, SPEC, [])
        report = check_lines(SPEC, "abbrev_engine.config_bags", corpus, path=[root])
        assert report.differences == (), report.render()
        from abbrev_engine.config_bags.server_args import ServerArgs  # type: ignore[import-not-found]

        with caplog.at_level(logging.WARNING):
            record = ServerArgs.from_cli(["--model-path", "m", "--tp=2", "--mem-frac", "0.5"], environ={})
        assert (record.tp_size, record.mem_fraction_static) == (2, 0.5)
        assert "--tp is an abbreviation of --tp-size; spell it out" in caplog.text
        with pytest.raises(SystemExit):
            ServerArgs.from_cli(["--model-path", "m", "--speculative", "x"], environ={})
        assert ("--speculative is an abbreviation of several flags (--speculative-algorithm, "
                "--speculative-draft-model-path)") in capsys.readouterr().err
    finally:
        sys.path.remove(str(root))
        _unload()
