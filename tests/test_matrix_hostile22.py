"""`configbags matrix` with a hostile shapes file, round twenty-two: `--write` refuses a
golden that is the file a shape's secret `NAME_FILE` variable (`SGLANG_API_KEY_FILE`)
names, by any name of it, as it refuses the shapes file, a model and a `--config`
(finding 1); and an argv word or env value that YAML read as a number, null or a bool is
refused naming the shape and the word, never recorded as Python's text of it (`1.10` as
"1.1", `null` as "None"; finding 10). Each refusal is exit 2 naming the shapes file, and
nothing is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from configbags.evolve import matrix

HEAD = "package: configbags.generated\n"
KEY = "sekretkey1"


def _shapes(folder: Path, body: str, golden: str = "g.jsonl") -> Path:
    path = folder / "matrix.yaml"
    path.write_text(f"{HEAD}golden: {json.dumps(golden)}\nshapes:\n{body}")
    return path


# -- finding 1: the file a shape's secret NAME_FILE names is no golden -----------------------
@pytest.mark.parametrize("spelling", ["key.txt", "./key.txt", "{abs}", "link.txt", "hard.txt"])
def test_a_golden_that_is_a_shapes_secret_file_is_refused_and_the_key_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    monkeypatch.chdir(tmp_path)  # the record reads the variable's path as the server would: from here
    key = tmp_path / "key.txt"
    key.write_text(KEY)
    (tmp_path / "link.txt").symlink_to(key)
    os.link(key, tmp_path / "hard.txt")
    env_path = str(key) if spelling == "{abs}" else "key.txt"
    golden = spelling.replace("{abs}", str(key))
    path = _shapes(tmp_path, f"  a:\n    argv: [--model-path, /m]\n    env: {{SGLANG_API_KEY_FILE: {env_path}}}\n",
                   golden=golden)
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "$SGLANG_API_KEY_FILE" in err and "shape 'a'" in err and "golden" in err, err
    assert KEY not in err
    assert key.read_text() == KEY


def test_a_golden_beside_a_shapes_secret_file_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: a key file of its own and a golden of its own; the key is redacted."""
    monkeypatch.chdir(tmp_path)
    key = tmp_path / "key.txt"
    key.write_text(KEY)
    path = _shapes(tmp_path, "  a:\n    argv: [--model-path, /m]\n    env: {SGLANG_API_KEY_FILE: key.txt}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    assert key.read_text() == KEY
    assert KEY not in (tmp_path / "g.jsonl").read_text()
    assert matrix.main(["--shapes", str(path), "--check"]) == 0


# -- finding 10: a word YAML read as no text is refused, naming the shape and its index -----
@pytest.mark.parametrize(("word", "shown"), [("1.10", "1.1"), ("1e3", "1000.0"), ("null", "None"),
                                             ("true", "True"), ("8", "8")])
@pytest.mark.parametrize("mode", ["--write", "--check", None])
def test_an_argv_word_yaml_reads_as_no_text_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str, shown: str, mode: str | None) -> None:
    path = _shapes(tmp_path, f"  a:\n    argv: [--model-path, /m, --weight-version, {word}]\n")
    assert matrix.main(["--shapes", str(path), *([mode] if mode else [])]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "shape 'a'" in err and "argv[3]" in err and "quote it" in err, err
    assert shown in err, err
    assert not (tmp_path / "g.jsonl").exists()


@pytest.mark.parametrize("value", ["null", "1.10", "false", "64"])
def test_an_env_value_yaml_reads_as_no_text_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    path = _shapes(tmp_path, f"  a:\n    argv: [--model-path, /m]\n    env: {{SGLANG_LOG_LEVEL: {value}}}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "shape 'a'" in err and "SGLANG_LOG_LEVEL" in err and "quote it" in err, err
    assert not (tmp_path / "g.jsonl").exists()


def test_quoted_words_keep_their_exact_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: quoted, each word reaches the record as written."""
    path = _shapes(tmp_path, '  a:\n    argv: [--model-path, "null", --weight-version, "1.10", --tokenizer-path, '
                             '"1e3", --tp-size, "2"]\n    env: {SGLANG_LOG_LEVEL: "debug"}\n')
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    cells = {c["leaf"]: c["value"] for c in map(json.loads, (tmp_path / "g.jsonl").read_text().splitlines())}
    assert cells["model_path"] == "null" and cells["weight_version"] == "1.10" and cells["tokenizer_path"] == "1e3"
    assert cells["tp_size"] == 2
