"""Round twenty's `plan --chart` defects (an outside attack, surface finding 6): a name whose
suffix matplotlib cannot draw (`out.json`, `out.txt`, no suffix) is refused with the flags,
before anything is planned, as one JSON object under `--json`; a comparison (a comma list)
with `--chart` is refused naming the lists, rather than drawing nothing without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.server.plan import main

LLAMA = str(Path(__file__).resolve().parent.parent / "models" / "llama-3.1-8b.json")


def _status(argv: list[str]) -> int:
    """The exit status, whether main returns it or a usage error exits with it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("name", ["out.json", "out.txt", "noext", "out.png.bak"])
def test_a_chart_name_matplotlib_cannot_draw_is_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    argv = ["--model-config", LLAMA, "--gpu", "H100", "--chart", str(tmp_path / name), "--json"]
    assert _status(argv) == 2
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert error["flag"] == "--chart" and ".png" in error["message"], error
    assert "Traceback" not in err and not (tmp_path / name).exists()


def test_a_comparison_with_a_chart_is_refused_naming_the_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", LLAMA, "--gpu", "H100,H200", "--chart", str(tmp_path / "cmp.png")]
    assert main(argv) == 2
    assert "--gpu (2)" in capsys.readouterr().err
    assert not (tmp_path / "cmp.png").exists()


@pytest.mark.slow  # draws with matplotlib
def test_an_svg_chart_is_drawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    svg = tmp_path / "plan.SVG"
    assert main(["--model-config", LLAMA, "--gpu", "H100", "--chart", str(svg)]) == 0
    assert svg.read_bytes().lstrip().startswith(b"<?xml")
    assert f"chart written to {svg}" in capsys.readouterr().out
