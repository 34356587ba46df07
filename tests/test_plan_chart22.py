"""`configbags plan --chart`, round twenty-two (finding 8): a chart path that is one of the
files the plan reads (its --model-config, a --config file, the file a secret's `NAME_FILE`
variable names), by any name of it, is refused with exit 2 before anything is planned or
written, as --dump-config is; a chart of its own is written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from configbags.generated.accessors import get_context
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = MODELS / "llama-3.1-8b.json"


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    with get_context().restoring():
        yield


def _spellings(tmp_path: Path, target: Path) -> dict[str, Path]:
    (tmp_path / "link.svg").symlink_to(target)
    os.link(target, tmp_path / "hard.svg")
    return {"same": target, "dotted": tmp_path / "." / target.name, "link": tmp_path / "link.svg",
            "hard": tmp_path / "hard.svg"}


@pytest.mark.parametrize("spelling", ["same", "dotted", "link", "hard"])
@pytest.mark.parametrize("json_out", [False, True])
def test_a_chart_over_the_model_config_is_refused_and_the_model_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str, json_out: bool) -> None:
    model = tmp_path / "m.svg"
    shutil.copy(LLAMA, model)
    chart = _spellings(tmp_path, model)[spelling]
    argv = ["--model-config", str(model), "--gpu", "H100", "--chart", str(chart), *(["--json"] if json_out else [])]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "--chart" in err and "--model-config" in err and "would replace it" in err, err
    assert model.read_bytes() == LLAMA.read_bytes()
    if json_out:
        assert json.loads(out)["error"]["flag"] == "--chart"


@pytest.mark.parametrize("spelling", ["same", "link", "hard"])
def test_a_chart_over_a_config_file_is_refused_and_the_file_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    config = tmp_path / "c.svg"
    config.write_text("tp_size: 1\n")
    chart = _spellings(tmp_path, config)[spelling]
    argv = ["--model-config", str(LLAMA), "--gpu", "H100", "--config", str(config), "--chart", str(chart)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--chart" in err and "--config file" in err, err
    assert config.read_text() == "tp_size: 1\n"


def test_a_chart_over_a_secret_file_is_refused_and_the_key_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "key.svg"
    key.write_text("sekretkey1")
    monkeypatch.setenv("SGLANG_API_KEY_FILE", str(key))
    assert main(["--model-config", str(LLAMA), "--gpu", "H100", "--chart", str(key)]) == 2
    err = capsys.readouterr().err
    assert "$SGLANG_API_KEY_FILE" in err and "sekretkey1" not in err, err
    assert key.read_text() == "sekretkey1"


def test_a_chart_of_its_own_beside_its_inputs_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: inputs named like charts, and a chart of its own."""
    pytest.importorskip("matplotlib")
    model, config, chart = tmp_path / "m.svg", tmp_path / "c.svg", tmp_path / "chart.svg"
    shutil.copy(LLAMA, model)
    config.write_text("tp_size: 1\n")
    assert main(["--model-config", str(model), "--gpu", "H100", "--config", str(config), "--chart", str(chart)]) == 0
    assert chart.read_bytes().startswith(b"<?xml")
    assert model.read_bytes() == LLAMA.read_bytes() and config.read_text() == "tp_size: 1\n"
