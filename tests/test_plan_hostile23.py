"""`configbags plan`, round twenty-three. Finding 1: `--dump-config` writes one
configuration's resolved config, so with a comparison (a comma list) or `--fit` it is
refused with the flags, exit 2, before anything is planned or written (it was the last
point evaluated, silently, and every `--fit` launch line repeated it). Finding 2: the model
path plan fills in for the schema's required `model_path` (it loads no weights) is a
placeholder, as explain's is: filled in only where no layer sets one (an operator's
`--model-path=X`, `--model X` or `--config` file is kept), read back as
`placeholder`, never `cli: --model-path`, and left out of a `--dump-config` (said in the
file's header and on stderr), so the dump passed back never makes it an operator value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.generated.accessors import get_context
from configbags.runtime.yamlsafe import load_yaml
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


# -- finding 2: plan's model-path stand-in is a placeholder ------------------------------------
def _server_info(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, object]:
    assert main(["--model-config", str(LLAMA), "--gpu", "H200", "--json", *flags]) == 0
    info: dict[str, object] = json.loads(capsys.readouterr().out)["server_info"]
    return info


def test_the_stand_in_reads_back_as_a_placeholder_not_the_operators_flag(capsys: pytest.CaptureFixture[str]) -> None:
    info = _server_info(capsys)
    layer = info["layers"]["model_path"]  # type: ignore[index]
    assert layer["layer"] == "placeholder" and "--model-path" not in layer["source"], layer
    assert "not an operator value" in layer["source"]
    assert info["placeholder"] == {"model_path": str(LLAMA)}


@pytest.mark.parametrize("given", [["--model-path=/srv/weights"], ["--model", "/srv/weights"],
                                   ["--config", "CONFIG"]])
def test_an_operators_model_path_from_any_layer_is_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("model_path: /srv/weights\n")
    info = _server_info(capsys, *(str(config) if word == "CONFIG" else word for word in given))
    assert info["record"]["model_path"] == "/srv/weights"  # type: ignore[index]
    assert info["layers"]["model_path"]["layer"] in ("cli", "config_file")  # type: ignore[index]
    assert "placeholder" not in info


@pytest.mark.parametrize("name", ["d.yaml", "d.json"])
def test_a_dump_leaves_the_stand_in_out_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, name: str) -> None:
    dump = tmp_path / name
    assert main(["--model-config", str(LLAMA), "--gpu", "H200", "--dump-config", str(dump)]) == 0
    text = dump.read_text()
    assert "model_path" not in (json.loads(text) if name.endswith(".json") else load_yaml(text))
    assert "tp_size" not in text and "mem_fraction_static" in text
    if name.endswith(".yaml"):
        assert "# Left out: model_path" in text
    assert any("without model_path" in record.getMessage() for record in caplog.records)


def test_a_dump_keeps_an_operators_model_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "d.yaml"
    assert main(["--model-config", str(LLAMA), "--gpu", "H200", "--model-path", "/srv/weights",
                 "--dump-config", str(dump)]) == 0
    assert "model_path: /srv/weights\n" in dump.read_text()
