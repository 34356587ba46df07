"""`configbags matrix` with a hostile shapes file: the golden file it names is written only
where a file may be written (never over the shapes file or a shape's model config, never
into a FIFO, a device or a folder), and a shape's GPU facts are checked as `explain`'s own
flags check them. Each refusal is exit 2 naming the file, and nothing is lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from configbags.evolve import matrix
from configbags.runtime.errors import ConfigError

MODELS = Path(__file__).resolve().parent.parent / "models"
HEAD = "package: configbags.generated\n"
SHAPE = "shapes:\n  a: {argv: [--model-path, /m]}\n"


def _shapes(folder: Path, golden: str, name: str = "matrix.yaml", shapes: str = SHAPE) -> Path:
    path = folder / name
    path.write_text(f"{HEAD}golden: {golden}\n{shapes}")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in its own process: a write that blocks (a FIFO) fails the test by its
    timeout instead of hanging the run."""
    return subprocess.run([sys.executable, "-m", "configbags", "matrix", *args], capture_output=True,
                          text=True, timeout=60, check=False)


# -- the golden file: where --write may write, and what --check reads ----------------------
def test_a_golden_naming_the_shapes_file_is_refused_and_the_shapes_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "matrix.yaml")
    before = path.read_bytes()
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "is the shapes file" in err and str(path) in err and "golden:" in err, err
    assert path.read_bytes() == before


def test_a_golden_naming_the_shapes_file_by_another_spelling_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sub").mkdir()
    path = _shapes(tmp_path, "sub/../matrix.yaml")
    before = path.read_bytes()
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    assert "is the shapes file" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_a_golden_naming_a_shapes_model_config_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "llama.json"
    model.write_bytes((MODELS / "llama-3.1-8b.json").read_bytes())
    path = _shapes(tmp_path, "llama.json", shapes="shapes:\n  a: {argv: [--model-path, /m], model: llama.json}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "model config of shape 'a'" in err and "golden:" in err, err
    assert model.read_bytes() == (MODELS / "llama-3.1-8b.json").read_bytes()


@pytest.mark.parametrize("argv", ["[--model-path, /m, --config, {cfg}]", "[--model-path, /m, '--config={cfg}']"])
def test_a_golden_naming_a_shapes_config_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: str) -> None:
    """(round twenty-one, finding 2) a config file a shape passes with --config is an input too."""
    config = tmp_path / "cfg.yaml"
    config.write_text("tp_size: 2\n")
    path = _shapes(tmp_path, str(config), shapes=f"shapes:\n  a: {{argv: {argv.format(cfg=config)}}}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    assert "a --config file of shape 'a'" in capsys.readouterr().err
    assert config.read_text() == "tp_size: 2\n"


def test_a_fifo_golden_is_refused_by_write_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.jsonl")
    path = _shapes(tmp_path, "fifo.jsonl")
    done = _run("--shapes", str(path), "--write")
    assert done.returncode == 2, done.stderr
    assert "fifo.jsonl" in done.stderr and "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_a_fifo_golden_is_named_a_fifo_by_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "fifo.jsonl")
    path = _shapes(tmp_path, "fifo.jsonl")
    assert matrix.main(["--shapes", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "fifo.jsonl is not a regular file (a FIFO)" in err and "does not exist" not in err, err


def test_a_folder_golden_is_refused_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, ".")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    assert "it is a folder" in capsys.readouterr().err


def test_a_golden_linked_to_a_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    path = _shapes(tmp_path, "zero.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    assert "zero.jsonl" in capsys.readouterr().err


def test_a_golden_that_is_no_file_name_is_refused(tmp_path: Path) -> None:
    path = _shapes(tmp_path, "5")
    with pytest.raises(ConfigError, match=r"`golden` is a file name"):
        matrix.read_shapes(path)
    assert not (tmp_path / "5").exists()


def test_a_plain_golden_is_written_and_checked_green(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: a golden of its own name is written whole, then --check is green."""
    path = _shapes(tmp_path, "golden.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    assert "wrote" in capsys.readouterr().out
    cells = matrix.loads((tmp_path / "golden.jsonl").read_text(), "golden")
    assert cells and all(c["shape"] == "a" for c in cells)
    assert matrix.main(["--shapes", str(path), "--check"]) == 0
    assert "resolution matches" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.jsonl", "matrix.yaml"]  # no temporary left


# -- a shape's GPU facts ------------------------------------------------------------------
def _gpu_shape(tmp_path: Path, gpu: str) -> Path:
    return _shapes(tmp_path, "g.jsonl", shapes=f"shapes:\n  a:\n    argv: [--model-path, /m]\n"
                                               f"    model: {MODELS / 'gpt-oss-20b.json'}\n    gpu: {gpu}\n")


@pytest.mark.parametrize("sm", ["-5", "9.5", "true", "0", "100000000000000000000", "x", '"9x"', "[90]"])
def test_a_gpu_sm_explain_would_refuse_is_refused(tmp_path: Path, sm: str) -> None:
    path = _gpu_shape(tmp_path, f"{{name: X, memory: 80GiB, sm: {sm}}}")
    with pytest.raises(ConfigError, match=r"shape 'a': gpu sm: .*major\*10\+minor, 10 to 999") as info:
        matrix.read_shapes(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(("gpu", "message"), [
    ("{name: X, memory: 0, sm: 90}", r"shape 'a': gpu memory: .*must be positive"),
    ("{name: X, memory: true, sm: 90}", r"shape 'a': gpu memory: .*is not a size"),
    ("{name: [X], memory: 80GiB, sm: 90}", r"shape 'a': gpu name is text"),
])
def test_other_gpu_facts_of_the_wrong_kind_are_refused(tmp_path: Path, gpu: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        matrix.read_shapes(_gpu_shape(tmp_path, gpu))


@pytest.mark.parametrize(("sm", "memory"), [("90", "80GiB"), ('"90"', "85899345920"), ("100", '"80 GiB"')])
def test_a_gpu_sm_explain_takes_is_taken_as_the_number(tmp_path: Path, sm: str, memory: str) -> None:
    """The quiet twin: what `--gpu-sm` and `--gpu-memory` take, the shape takes, as numbers."""
    [shape] = matrix.read_shapes(_gpu_shape(tmp_path, f"{{name: X, memory: {memory}, sm: {sm}}}")).shapes
    assert shape.gpu is not None and shape.gpu.sm == int(sm.strip('"')) and shape.gpu.memory_bytes == 80 << 30


def test_a_quoted_sm_resolves_as_the_number_not_as_a_rule_error(tmp_path: Path) -> None:
    [shape] = matrix.read_shapes(_gpu_shape(tmp_path, '{name: X, memory: 80GiB, sm: "90"}')).shapes
    from configbags.packages import named_context

    cells = matrix.resolve(named_context("configbags.generated"), [shape])
    assert not any("error" in c for c in cells), [c for c in cells if "error" in c]


# -- shape names in what --check prints -----------------------------------------------------
def test_a_shape_name_with_control_characters_is_printed_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = '"a\\nFAKE LINE \\x1b[31mred"'
    path = _shapes(tmp_path, "n.jsonl", shapes=f"shapes:\n  {name}: {{argv: [--model-path, /m]}}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    path.write_text(path.read_text().replace("/m]", '/m, --tp-size, "2"]'))
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "FAKE LINE" in out
    assert all(line.startswith("a\\nFAKE LINE \\x1b[31mred ") for line in out.splitlines()), out
