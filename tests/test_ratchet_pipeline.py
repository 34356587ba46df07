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

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.cli import main as ratchet_main
from configbags.migrate.clicheck import cli_check, read_corpus
from configbags.migrate.importer import main as import_main
from configbags.migrate.scan import ScanSettings, scan_tree

FIXTURE = Path(__file__).parent / "fixtures" / "legacy_engine"


def _engine_tests(root: Path, *only: str) -> subprocess.CompletedProcess[str]:
    """The engine's own tests (or only the named ones) in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(root / "pytest.ini"), "--rootdir", str(root), *only],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_the_fixture_is_a_real_legacy_engine() -> None:
    files = list((FIXTURE / "legacy_engine").glob("*.py"))
    assert len(files) >= 14
    settings = ScanSettings(
        roots=("legacy_engine",), excludes=("legacy_engine/server_args.py",),
        record_dicts=("global_server_args_dict",),
    )
    result = scan_tree(FIXTURE, settings)
    assert len(result.reads) >= 40
    assert {"accessor", "alias", "parameter", "attribute", "self_alias", "record_dict", "class"} <= {
        r.via for r in result.reads
    }
    # the model adjustment and the draft worker write the record
    assert {(v.file, v.function) for v in result.violations} == {
        ("legacy_engine/model_config.py", "adjust_for_model"),
        ("legacy_engine/draft_worker.py", "DraftWorker.run"),
    }
    assert not result.problems


def _ratchet_ok(schema: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = ratchet_main(["check", "--schema", str(schema)])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _ruff_clean(files: list[Path]) -> None:
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run(
        [str(ruff), "check", "--isolated", "--no-cache", "--select", "F401,F841,I001", "--config",
         "lint.isort.known-first-party=['legacy_engine', 'configbags']", *map(str, files)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.slow
def test_import_gen_init_fix_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "engine"
    shutil.copytree(FIXTURE, root)
    before = _engine_tests(root)
    assert before.returncode == 0, before.stdout + before.stderr
    package = root / "legacy_engine"

    schema = root / "schema"
    source = package / "server_args.py"
    mapping = ["--mapping", str(root / "mapping.yaml"), "--engine-root", str(package)]
    assert import_main([f"{source}:ServerArgs", "--out", str(schema), *mapping]) == 0
    assert "imported with override: startup" not in capsys.readouterr().err  # every written leaf is loosened
    # the shipped mapping carries the proposal's policies: the leaves the engine writes
    # after parsing are load_time, owned by the writing module's role
    kernel = schema / "namespaces" / "exec.kernel.yaml"
    leaves = {
        **yaml.safe_load(kernel.read_text())["leaves"],
        **yaml.safe_load((schema / "namespaces" / "schedule.yaml").read_text())["leaves"],
    }
    assert {name: (leaves[name]["override"], leaves[name]["owner"]) for name in ("attention_backend", "page_size")} == {
        "attention_backend": ("load_time", "draft_worker"), "page_size": ("load_time", "model_config"),
    }
    assert {"draft_worker", "model_config"} <= set(yaml.safe_load((schema / "roles.yaml").read_text())["roles"])
    assert leaves["sampling_backend"]["override"] == "startup"
    generated = package / "config_bags"
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    init = [
        "init", "--schema", str(schema), "--root", str(package),
        "--exclude", "legacy_engine/server_args.py",
        "--record-dict", "global_server_args_dict",
        "--resolution", "legacy_engine/model_config.py:adjust_for_model",
    ]
    assert ratchet_main(init) == 0
    capsys.readouterr()
    ratchet = yaml.safe_load((schema / "ratchet.yaml").read_text())
    assert len(ratchet["allowlist"]) >= 40 and {e["reason"] for e in ratchet["allowlist"]} == {"baseline"}
    # the draft worker's writes are a baseline; the model adjustment is the resolution phase
    assert {(e["file"], e["leaf"]) for e in ratchet["writes"]} == {("legacy_engine/draft_worker.py", "attention_backend")}
    _ratchet_ok(schema, capsys)  # green right after init
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    capsys.readouterr()
    assert ratchet_main(["check", "--schema", str(schema), "--generated", "legacy_engine.config_bags"]) == 0

    accessors_module = "legacy_engine.config_bags.accessors"
    fix = ["fix", "--schema", str(schema), "--accessors-module", accessors_module]
    # First pass: reads of the fetched process record are rewritten; held records
    # (parameters, self.server_args) are refused, each with the reason.
    assert ratchet_main(fix) == 0
    _ratchet_ok(schema, capsys)
    first = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    held = [e for e in first if "--rewrite-parameters" in e["reason"]]
    assert {e["file"] for e in held} >= {"legacy_engine/scheduler.py", "legacy_engine/kv_cache.py"}
    assert not any(e["file"] == "legacy_engine/model_runner.py" for e in first)  # all fetched

    # This engine has one record per process, so the user says so and fix does the rest.
    assert ratchet_main([*fix, "--rewrite-parameters"]) == 0
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    _ratchet_ok(schema, capsys)
    # ... but never inside the resolution phase, which runs before publish: there an
    # accessor raises NotPublishedError in a fresh process (or, after an earlier publish in
    # the same one, reads page_size 1 where the adjustment makes it 64)
    assert "server_args.page_size == 1" in (package / "model_config.py").read_text()
    alone = _engine_tests(root, "checks/check_engine.py::test_model_specific_adjustment")
    assert alone.returncode == 0, alone.stdout + alone.stderr

    # Writes into overrides: the draft worker mutates its record and restores it, which no
    # process-wide override may replace, even with the leaf tunable at runtime and the held
    # record vouched for; it stays raw, and its writes entry says why.
    text = kernel.read_text()
    start = text.index("  attention_backend:")
    end = text.index("override: load_time", start)
    assert end < text.index("  sampling_backend:")  # attention_backend's own policy
    kernel.write_text(text[:end] + "override: runtime" + text[end + len("override: load_time"):])
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    draft = (package / "draft_worker.py").read_text()
    assert ratchet_main([*fix, "--rewrite-parameters", "--rewrite-writes"]) == 0
    out = capsys.readouterr().out
    assert (package / "draft_worker.py").read_text() == draft
    assert "get_context().override" not in out
    assert "skipped 'attention_backend': mutate-then-restore in DraftWorker.run" in out
    writes = yaml.safe_load((schema / "ratchet.yaml").read_text())["writes"]
    assert [(e["function"], e["reason"].split(":")[:2]) for e in writes] == [
        ("DraftWorker.run", ["fix refused", " mutate-then-restore in DraftWorker.run"]),
    ]
    assert gen_main(["--schema", str(schema), "--out", str(generated)]) == 0
    _ratchet_ok(schema, capsys)

    reasons = {(e["file"], e["function"], e["leaf"]): e["reason"] for e in
               yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]}
    written = "fix refused: `attention_backend` is written outside the resolution phase (legacy_engine/draft_worker.py:"
    # the draft worker's own reads, and every other read of the leaf it writes, stay raw
    assert reasons[("legacy_engine/draft_worker.py", "DraftWorker.kernels", "attention_backend")].startswith(written)
    assert reasons[("legacy_engine/attention.py", "select_backend", "attention_backend")].startswith(written)
    assert reasons[("legacy_engine/sampling.py", "uses_triton", "attention_backend")].startswith(
        "fix refused: reads a dict copy of the record")
    assert reasons[("legacy_engine/device.py", "is_first_gpu", "base_gpu_id")].startswith(
        "fix refused: reads the record class's default")
    # page_size is written only by the resolution phase, whose result is published: rewritten
    assert ("legacy_engine/draft_worker.py", "DraftWorker.kernels", "page_size") not in reasons
    # the resolution phase's own reads stay raw, and say why
    assert reasons[("legacy_engine/model_config.py", "adjust_for_model", "page_size")].startswith(
        "fix refused: the resolution phase runs before publish; it reads the record it resolves")
    assert all(reason.startswith("fix refused: ") for reason in reasons.values())

    scheduler = (package / "scheduler.py").read_text()
    assert "return tokens * cfg.parallel.tp_size  # per-rank budget\n" in scheduler
    assert "        # The comment on this line must survive the rewrite.\n" in scheduler
    _ruff_clean(sorted(package.glob("*.py")))

    after = _engine_tests(root)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "17 passed" in after.stdout
    assert gen_main(["--schema", str(schema), "--out", str(generated), "--check"]) == 0


def test_the_cli_check_finds_no_difference_on_the_corpus(tmp_path: Path) -> None:
    root = tmp_path / "engine"
    shutil.copytree(FIXTURE, root)
    schema = root / "schema"
    mapping = ["--mapping", str(root / "mapping.yaml")]
    assert import_main([f"{root / 'legacy_engine' / 'server_args.py'}:ServerArgs", "--out", str(schema), *mapping]) == 0
    assert gen_main(["--schema", str(schema), "--out", str(root / "legacy_engine" / "config_bags")]) == 0
    corpus = (root / "cli_corpus.txt").read_text()
    report = cli_check("legacy_engine.server_args:ServerArgs", "legacy_engine.config_bags", corpus, path=[root])
    assert report.lines >= 30
    assert report.differences == (), report.render()
    assert {"tp_size", "cuda_graph_bs", "max_queued_requests", "model_path", "speculative_algorithm",
            "lora_paths"} <= set(report.compared_leaves)
    # bare flags are in the corpus: a const flag alone and a nargs="*" list flag with no values
    lines = {" ".join(argv) for _, argv in read_corpus(corpus)}
    assert {"--model-path m --speculative-algorithm", "--model-path m --lora-paths"} <= lines
    # a changed meaning is found: the generated default of one leaf edited by hand
    namespace = schema / "namespaces" / "serving.yaml"
    namespace.write_text(namespace.read_text().replace("default: 30000", "default: 30001"))
    assert gen_main(["--schema", str(schema), "--out", str(tmp_path / "other" / "config_bags")]) == 0
    (tmp_path / "other" / "__init__.py").write_text("")
    changed = cli_check("legacy_engine.server_args:ServerArgs", "other.config_bags", corpus, path=[root, tmp_path])
    assert {d.leaf for d in changed.differences} == {"port"}
    assert len(changed.differences) == 33  # every accepted line (35) but the two that set --port
