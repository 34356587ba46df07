"""`configbags matrix --check` against a hostile golden, round twenty-three: a cell whose
value has another type than the resolved one (`1` and `true` or `1.0`, equal to Python) is
a changed cell, exit 1 (finding 3); a golden holding two cells for one shape and leaf, in
either order or twice the same, is refused naming both lines, exit 2, never decided by line
order (finding 4); and a line that is no matrix cell (no `value`, a list, null, a key of
another type, a key no cell has) is refused naming the file and line, exit 2, never a
traceback (finding 5). The quiet twin: the golden `--write` wrote still matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.evolve import matrix

SHAPES = "golden: g.jsonl\nshapes:\n  b:\n    argv: [--model-path, /models/llama]\n"
ARGS = ("--package", "configbags.generated")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The golden lines `--write` writes for one bare shape."""
    folder = tmp_path_factory.mktemp("written")
    (folder / "m.yaml").write_text(SHAPES)
    assert matrix.main(["--shapes", str(folder / "m.yaml"), *ARGS, "--write"]) == 0
    return (folder / "g.jsonl").read_text().splitlines()


def check(tmp_path: Path, lines: list[str]) -> int:
    (tmp_path / "m.yaml").write_text(SHAPES)
    (tmp_path / "g.jsonl").write_text("".join(line + "\n" for line in lines))
    return matrix.main(["--shapes", str(tmp_path / "m.yaml"), *ARGS, "--check"])


def at(lines: list[str], leaf: str) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line).get("leaf") == leaf)


def edited(lines: list[str], leaf: str, **change: object) -> list[str]:
    out = list(lines)
    i = at(out, leaf)
    out[i] = json.dumps({**json.loads(out[i]), **change}, sort_keys=True)
    return out


def test_the_written_golden_matches(tmp_path: Path, written: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert check(tmp_path, written) == 0
    assert "resolution matches" in capsys.readouterr().err


# -- finding 3: a value of another type is a changed cell --------------------------------------
@pytest.mark.parametrize("value", [True, 1.0, "1", [1]])
def test_a_golden_value_of_another_type_is_a_changed_cell(
        tmp_path: Path, written: list[str], capsys: pytest.CaptureFixture[str], value: object) -> None:
    assert json.loads(written[at(written, "attn_cp_size")])["value"] == 1
    assert check(tmp_path, edited(written, "attn_cp_size", value=value)) == 1
    out = capsys.readouterr().out
    assert f"b attn_cp_size: {json.dumps(value)} [default] -> 1 [default]" in out, out


# -- finding 4: two cells for one shape and leaf -----------------------------------------------
@pytest.mark.parametrize("where", ["first", "last", "twice"])
def test_a_golden_with_two_cells_for_one_leaf_is_refused_naming_both_lines(
        tmp_path: Path, written: list[str], capsys: pytest.CaptureFixture[str], where: str) -> None:
    good = written[at(written, "attn_cp_size")]
    wrong = json.dumps({"layer": "cli", "leaf": "attn_cp_size", "shape": "b", "value": 99,
                        "source": "--attn-cp-size"}, sort_keys=True)
    lines = {"first": [wrong, *written], "last": [*written, wrong], "twice": [*written, good]}[where]
    assert check(tmp_path, lines) == 2
    err = capsys.readouterr().err
    first = min(i for i, line in enumerate(lines) if json.loads(line).get("leaf") == "attn_cp_size") + 1
    second = max(i for i, line in enumerate(lines) if json.loads(line).get("leaf") == "attn_cp_size") + 1
    assert f"g.jsonl:{second}: a second cell for b attn_cp_size (the first at line {first})" in err, err
    assert "configbags matrix --write" in err and "Traceback" not in err


def test_a_golden_with_two_error_cells_for_one_shape_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    error = json.dumps({"error": "SystemExit", "shape": "b"})
    assert check(tmp_path, [error, error]) == 2
    assert "g.jsonl:2: a second cell for b (shape) (the first at line 1)" in capsys.readouterr().err


# -- finding 5: a line that is no matrix cell --------------------------------------------------
@pytest.mark.parametrize(("line", "why"), [
    ('{"layer": "default", "leaf": "admin_api_key", "shape": "b"}', 'no "value"'),
    ("[1]", "a list, not an object"),
    ("null", "null, not an object"),
    ('"x"', "a string, not an object"),
    ("{}", 'no "shape", "leaf", "value", "layer"'),
    ('{"shape": 5, "leaf": "admin_api_key", "value": null, "layer": "default"}', '"shape" is a number, not a string'),
    ('{"shape": "b", "leaf": ["x"], "value": null, "layer": "default"}', '"leaf" is a list, not a string'),
    ('{"shape": "b", "leaf": "admin_api_key", "value": null, "layer": 7}', '"layer" is a number, not a string'),
    ('{"shape": "b", "leaf": "admin_api_key", "value": null, "layer": "default", "extra": 1}', 'a key no cell has: '
                                                                                              '"extra"'),
    ('{"shape": "b", "error": 3}', '"error" is a number, not a string'),
    ('{"shape": "b", "error": "x", "value": 1}', 'a key no error cell has: "value"'),
])
def test_a_line_that_is_no_matrix_cell_is_refused_naming_the_line(
        tmp_path: Path, written: list[str], capsys: pytest.CaptureFixture[str], line: str, why: str) -> None:
    assert check(tmp_path, [line, *written[1:]]) == 2
    err = capsys.readouterr().err
    assert f"g.jsonl:1: not a matrix cell ({why}); regenerate with `configbags matrix --write`" in err, err
    assert "Traceback" not in err


def test_a_forced_rule_cell_shows_what_it_was_forced_over(written: list[str]) -> None:
    """Two cells apart only in `forced_over` read apart in the change line."""
    cell = {"shape": "b", "leaf": "x", "value": 1, "layer": "rule", "rule": "r1"}
    (line,) = matrix.changes([cell], [{**cell, "forced_over": "--x"}])
    left, right = line.split(" -> ")
    assert left.partition(": ")[2] != right, line
