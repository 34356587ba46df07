"""`configbags plan`, round twenty-three. Finding 1: `--dump-config` writes one
configuration's resolved config, so with a comparison (a comma list) or `--fit` it is
refused with the flags, exit 2, before anything is planned or written (it was the last
point evaluated, silently, and every `--fit` launch line repeated it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.generated.accessors import get_context
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = MODELS / "llama-3.1-8b.json"
FIT = ["--fit", "--workload", "8000:1000", "--concurrency", "64"]


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    with get_context().restoring():
        yield


# -- finding 1: --dump-config with a comparison or --fit ---------------------------------------
@pytest.mark.parametrize("lists", [
    pytest.param(["--gpu", "H100,H200", "--tp-size", "1,2"], id="comparison"),
    pytest.param(["--gpu", "H200", "--tp-size", "1,2"], id="tp-list"),
    pytest.param(["--gpu", "H100,H200", "--tp-size", "1,2", *FIT], id="fit"),
    pytest.param(["--gpu", "H200", "--tp-size", "1", *FIT], id="fit-one-candidate"),
])
@pytest.mark.parametrize("json_out", [False, True])
def test_a_dump_with_a_comparison_or_fit_is_refused_and_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], lists: list[str], json_out: bool) -> None:
    dump = tmp_path / "d.yaml"
    argv = ["--model-config", str(LLAMA), *lists, "--dump-config", str(dump), *(["--json"] if json_out else [])]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "--dump-config" in err and "one configuration" in err, err
    assert not dump.exists()
    if json_out:
        assert json.loads(out)["error"]["flag"] == "--dump-config"
    else:
        assert "launch:" not in out and out == ""


def test_a_dump_of_one_plan_is_still_that_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "d.yaml"
    assert main(["--model-config", str(LLAMA), "--gpu", "H200", "--tp-size", "1", "--dump-config", str(dump)]) == 0
    text = dump.read_text()
    assert "tp_size: 1\n" in text and "mem_fraction_static: 0.907\n" in text, text


def test_fit_launch_lines_without_a_dump_are_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model-config", str(LLAMA), "--gpu", "H200", "--tp-size", "1", *FIT]) == 0
    assert "launch: --tp-size 1 --mem-fraction-static 0.907 --max-running-requests 64" in capsys.readouterr().out
