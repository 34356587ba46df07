"""`configbags matrix` with a hostile shapes file, round twenty-one: a golden name from the
file reaches every message escaped (finding 2); a mistyped `role:` and a shape's model
config that is no model config are refused before any shape is resolved, never recorded
as error cells that `--check` keeps green (finding 6); and a shape's argv that asks for
`--dump-config`, in any spelling the record's parser reads as that flag, is refused up
front, so the matrix writes no file but its golden (finding 8). Each refusal is exit 2
naming the shapes file, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genutil import copy_case, generate

from configbags.evolve import matrix

MODELS = Path(__file__).resolve().parent.parent / "models"
HEAD = "package: configbags.generated\n"
SHAPE = "shapes:\n  a: {argv: [--model-path, /m]}\n"


def _shapes(folder: Path, body: str, golden: str = "g.jsonl") -> Path:
    path = folder / "matrix.yaml"
    path.write_text(f"{HEAD}golden: {json.dumps(golden)}\n{body}")
    return path


def _one_line(text: str) -> str:
    """The message, asserted to be one line free of control characters (no forged line)."""
    assert text.count("\n") == 1 and text.endswith("\n"), text
    assert not any(ord(c) < 32 for c in text[:-1]), text
    return text


# -- finding 2: the golden name, as the shapes file gives it, escaped in every message ---------
def test_a_golden_name_with_a_newline_is_printed_escaped_by_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, SHAPE, golden="a\nFAKE: ok.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    out = _one_line(capsys.readouterr().out)
    assert "wrote " in out and "a\\nFAKE: ok.jsonl (1 shapes" in out, out
    assert (tmp_path / "a\nFAKE: ok.jsonl").is_file()  # the name is the file's: only its display is escaped


def test_a_golden_name_with_an_escape_is_printed_escaped_by_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, SHAPE, golden="g\x1b[31m.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--check"]) == 0
    err = _one_line(capsys.readouterr().err)
    assert "resolution matches" in err and "g\\x1b[31m.jsonl" in err, err


def test_a_missing_golden_with_a_newline_is_named_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, SHAPE, golden="x\nFAKE.jsonl")
    assert matrix.main(["--shapes", str(path), "--check"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "x\\nFAKE.jsonl does not exist" in err, err


def test_a_golden_in_a_missing_folder_with_a_newline_is_named_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, SHAPE, golden="d\nFAKE/g.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "d\\nFAKE" in err and "does not exist" in err, err


def test_a_plain_golden_name_is_printed_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, SHAPE, golden="plain-golden.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    assert f"wrote {tmp_path / 'plain-golden.jsonl'} (1 shapes" in capsys.readouterr().out


# -- finding 6: the shapes file's role and a shape's model, checked before any shape resolves --
@pytest.mark.parametrize("mode", ["--write", "--check", None])
def test_a_mistyped_role_of_the_shapes_file_is_refused_up_front(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str | None) -> None:
    path = _shapes(tmp_path, "role: launchr\nshapes:\n  a: {argv: [--model-path, /m]}\n"
                             "  b: {argv: [--model-path, /m, --tp-size, '2']}\n")
    assert matrix.main(["--shapes", str(path), *([mode] if mode else [])]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = _one_line(captured.err)
    assert str(path) in err and "'launchr'" in err and "did you mean 'launcher'?" in err, err
    assert not (tmp_path / "g.jsonl").exists()


def test_a_mistyped_role_of_one_shape_is_refused_naming_the_shape(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "shapes:\n  a: {argv: [--model-path, /m]}\n  b: {argv: [--model-path, /m], role: wroker}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "shape 'b'" in err and "'wroker'" in err and "did you mean 'worker'?" in err, err
    assert not (tmp_path / "g.jsonl").exists()


@pytest.mark.parametrize("role", ["[launcher]", "null", "7"])
def test_a_role_that_is_no_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], role: str) -> None:
    path = _shapes(tmp_path, f"role: {role}\n{SHAPE}")
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    assert "`role`" in capsys.readouterr().err
    assert not (tmp_path / "g.jsonl").exists()


def test_a_role_of_the_schema_is_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "role: worker\nshapes:\n  a: {argv: [--model-path, /m]}\n"
                             "  b: {argv: [--model-path, /m], role: scheduler}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0, capsys.readouterr().err
    cells = matrix.loads((tmp_path / "g.jsonl").read_text(), "g.jsonl")
    assert {c["shape"] for c in cells} == {"a", "b"} and not any("error" in c for c in cells)


@pytest.mark.parametrize(("text", "why"), [
    ("{not json", "bad.json:1"),
    ('{"architectures": ["\\ud800"]}', "surrogate"),
    ('{"architectures": "LlamaForCausalLM"}', "architectures"),
    ("[1, 2]", "not a JSON object"),
])
@pytest.mark.parametrize("mode", ["--write", "--check"])
def test_a_model_config_that_cannot_be_read_is_refused_up_front(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str, mode: str) -> None:
    (tmp_path / "bad.json").write_text(text)
    path = _shapes(tmp_path, "shapes:\n  a: {argv: [--model-path, /m], model: bad.json}\n")
    assert matrix.main(["--shapes", str(path), mode]) == 2
    err = _one_line(capsys.readouterr().err)
    assert str(path) in err and "shape 'a'" in err and "'bad.json'" in err and why in err, err
    assert not (tmp_path / "g.jsonl").exists()


def test_a_model_config_that_reads_is_resolved_with_its_facts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "llama.json").write_bytes((MODELS / "llama-3.1-8b.json").read_bytes())
    path = _shapes(tmp_path, "shapes:\n  a: {argv: [--model-path, /m], model: llama.json}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0, capsys.readouterr().err
    cells = matrix.loads((tmp_path / "g.jsonl").read_text(), "g.jsonl")
    assert len(cells) > 1 and not any("error" in c for c in cells)


# -- finding 8: a shape's --dump-config is refused, so matrix writes nothing but its golden ----
@pytest.mark.parametrize("argv", ["[--model-path, /m, --dump-config, {out}]", "[--model-path, /m, '--dump-config={out}']"])
def test_a_dump_over_the_shapes_file_is_refused_and_the_shapes_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(f"{HEAD}golden: g.jsonl\nshapes:\n  a: {{argv: {argv.format(out=path)}}}\n")
    before = path.read_bytes()
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert str(path) in err and "shape 'a'" in err and "--dump-config" in err and "without writing" in err, err
    assert path.read_bytes() == before
    assert not (tmp_path / "g.jsonl").exists()


@pytest.mark.parametrize("mode", ["--check", "--write", None])
def test_a_dump_to_a_side_file_is_refused_and_never_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str | None) -> None:
    monkeypatch.chdir(tmp_path)  # where a relative dump would land
    path = _shapes(tmp_path, "shapes:\n  ok: {argv: [--model-path, /m]}\n"
                             "  a: {argv: [--model-path, /m, --dump-config, side.yaml]}\n")
    (tmp_path / "g.jsonl").write_text("")
    assert matrix.main(["--shapes", str(path), *([mode] if mode else [])]) == 2
    assert "shape 'a'" in capsys.readouterr().err
    assert not (tmp_path / "side.yaml").exists()
    assert (tmp_path / "g.jsonl").read_text() == ""


def test_a_prefix_the_parser_refuses_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated package takes no abbreviations: `--dump-c` is the shape's usage error."""
    monkeypatch.chdir(tmp_path)  # where a relative dump would land
    path = _shapes(tmp_path, "shapes:\n  a: {argv: [--model-path, /m, --dump-c, side.yaml]}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    cells = matrix.loads((tmp_path / "g.jsonl").read_text(), "g.jsonl")
    assert len(cells) == 1 and "--dump-c" in cells[0]["error"], cells
    assert not (tmp_path / "side.yaml").exists()


def test_a_value_that_reads_like_the_flag_is_a_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "shapes:\n  a: {argv: ['--model-path=--dump-config']}\n")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0, capsys.readouterr().err
    cells = matrix.loads((tmp_path / "g.jsonl").read_text(), "g.jsonl")
    assert {"shape": "a", "leaf": "model_path", "value": "--dump-config", "layer": "cli",
            "source": "--model-path"} in cells, [c for c in cells if c.get("leaf") == "model_path"]


@pytest.fixture
def legacy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A generated package whose command line expands unique prefixes (`cli: {abbreviations:
    legacy}`), as a legacy parser with `allow_abbrev` did."""
    schema = copy_case("tiny", tmp_path)
    (schema / "settings.yaml").write_text('version: "1"\ncli: {abbreviations: legacy}\n')
    name = "matrix21_legacy_tiny"
    assert generate(schema, tmp_path / "pkgroot" / name) == 0
    monkeypatch.syspath_prepend(str(tmp_path / "pkgroot"))
    monkeypatch.chdir(tmp_path)  # where a relative dump would land
    return name


@pytest.mark.parametrize("word", ["--dump-c", "--dump-con=side.yaml", "--dump"])
def test_a_prefix_a_legacy_parser_expands_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], legacy_package: str, word: str) -> None:
    argv = [word] if "=" in word else [word, "side.yaml"]
    path = tmp_path / "matrix.yaml"
    path.write_text(f"package: {legacy_package}\ngolden: g.jsonl\nrole: boss\nshapes:\n"
                    f"  a: {{argv: {json.dumps(['--name', 'x', *argv])}}}\n")
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert "shape 'a'" in err and word.partition("=")[0] in err and "--dump-config" in err, err
    assert not (tmp_path / "side.yaml").exists() and not (tmp_path / "g.jsonl").exists()


def test_a_legacy_prefix_of_another_flag_is_resolved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], legacy_package: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(f"package: {legacy_package}\ngolden: g.jsonl\nrole: boss\nshapes:\n"
                    f"  a: {{argv: [--name, x, --lan, '3']}}\n")
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--write"]) == 0, capsys.readouterr().err
    cells = matrix.loads((tmp_path / "g.jsonl").read_text(), "g.jsonl")
    assert {"shape": "a", "leaf": "width", "value": 3, "layer": "cli", "source": "--width"} in cells, cells
