"""`configbags plan --chart`: a name the chart cannot be written as (a suffix matplotlib
does not write, no suffix: it would write another file than the one named) and a
comparison (which has no chart) are refused with the flags, exit 2, before any planning
and with the one JSON object under --json; a chart that is drawn is written where named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.generated.accessors import get_context
from configbags.server import plan as plan_module
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = str(MODELS / "llama-3.1-8b.json")
ONE = ["--model-config", LLAMA, "--gpu", "H100"]


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    with get_context().restoring():
        yield


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 2, (out, err)
    assert "Traceback" not in err
    return out, err


@pytest.mark.parametrize("name", ["out.json", "out.txt", "out.png.bak"])
def test_a_chart_suffix_matplotlib_does_not_write_is_refused_with_the_flags(
        tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _refused([*ONE, "--chart", str(tmp_path / name)], capsys)
    assert "--chart" in err and ".png, .svg, .pdf" in err, err
    assert "max_total_num_tokens" not in out  # refused before the plan was printed
    assert list(tmp_path.iterdir()) == []


def test_a_refused_chart_suffix_under_json_is_the_one_json_object(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _refused([*ONE, "--chart", str(tmp_path / "out.json"), "--json"], capsys)
    error = json.loads(out)["error"]
    assert error["flag"] == "--chart" and error["exit_status"] == 2 and ".png" in error["message"]


def test_a_chart_name_without_a_suffix_is_refused_not_written_elsewhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = _refused([*ONE, "--chart", str(tmp_path / "noext")], capsys)
    assert "noext" in err and "suffix" in err, err
    assert list(tmp_path.iterdir()) == []  # no noext.png beside it


@pytest.mark.parametrize("lists", [["--gpu", "H100,H200"], ["--gpu", "H100", "--tp-size", "1,2"],
                                   ["--model-config", f"{LLAMA},{MODELS / 'qwen2.5-7b.json'}", "--gpu", "H100"]])
def test_a_comparison_with_a_chart_is_refused_naming_why(
        tmp_path: Path, lists: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", LLAMA, *lists, "--chart", str(tmp_path / "cmp.png")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "--chart draws one plan" in err and "--fit" in err, err
    assert out == "" and list(tmp_path.iterdir()) == []
    assert main([*argv, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["flag"] == "--chart" and error["exit_status"] == 2


def test_a_chart_that_cannot_be_saved_late_is_a_clean_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plan_module, "draw_chart", full)
    assert main([*ONE, "--chart", str(tmp_path / "c.png"), "--json"]) == 2
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert error["flag"] == "--chart" and "No space left on device" in error["message"]
    assert "Traceback" not in err


@pytest.mark.parametrize(("name", "magic"), [("plan.png", b"\x89PNG\r\n\x1a\n"), ("plan.SVG", b"<?xml"),
                                             ("plan.pdf", b"%PDF")])
def test_a_chart_is_written_where_named(tmp_path: Path, name: str, magic: bytes,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: each suffix named is written, as that file and that format."""
    pytest.importorskip("matplotlib")
    chart = tmp_path / name
    assert main([*ONE, "--chart", str(chart)]) == 0
    assert chart.read_bytes().startswith(magic)
    assert f"chart written to {chart}" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == [name]
