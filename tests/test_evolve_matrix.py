"""`configbags matrix`: the bundled server's shapes x leaves equal the committed golden
file, cover every rule and preset, and a deliberate rule change shows as changed cells
with both values and provenances."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from configbags.evolve import matrix
from configbags.packages import load_context
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
SHAPES = REPO / "schema" / matrix.SHAPES_FILE


@pytest.fixture(scope="module")
def bundled() -> Context[Any]:
    return load_context("configbags.generated")


def test_the_bundled_matrix_equals_its_golden_file(bundled: Context[Any]) -> None:
    shapes = matrix.read_shapes(SHAPES)
    cells = matrix.resolve(bundled, shapes.shapes)
    golden = matrix.loads(shapes.golden.read_text(), str(shapes.golden))
    changed = matrix.changes(golden, cells)
    assert not changed, ("resolution changed; if deliberate, run `configbags matrix --write`:\n"
                         + "\n".join(changed[:40]))
    assert matrix.dumps(cells) == shapes.golden.read_text(), "the golden file is written as dumps() writes it"


def test_the_bundled_shapes_cover_every_rule_and_preset(bundled: Context[Any]) -> None:
    shapes = matrix.read_shapes(SHAPES)
    assert len(shapes.shapes) >= 24
    cells = matrix.resolve(bundled, shapes.shapes)
    rules, presets = matrix.coverage(cells, shapes.shapes, [r.id for r in bundled.registry.rules],
                                     list(bundled.registry.presets))
    assert (rules, presets) == ([], []), (
        f"add shapes to {SHAPES.relative_to(REPO)} that trigger rules {rules} and use presets {presets}, then run "
        f"`configbags matrix --write`")
    leaves = {c["leaf"] for c in cells if "leaf" in c}
    assert leaves == set(bundled.registry.leaves) | set(bundled.registry.derived)
    assert {c["layer"] for c in cells if "layer" in c} >= {"default", "hardware", "model", "preset", "config_file",
                                                           "env", "cli", "derived"}
    assert sum("error" in c for c in cells) >= 3


def test_a_deliberate_rule_change_shows_as_a_matrix_diff(bundled: Context[Any]) -> None:
    """FlashMLA's page size rule says 32 instead of 64: exactly the cells it sets change,
    each printed with both values and both provenances."""
    shapes = matrix.read_shapes(SHAPES)
    before = matrix.resolve(bundled, shapes.shapes)
    rules = tuple(attrs.evolve(r, value=32) if r.id == "page_size_flashmla" else r for r in bundled.registry.rules)
    changed_ctx: Context[Any] = Context(attrs.evolve(bundled.registry, rules=rules), type(bundled.view)(),
                                        record_type=bundled.record_type)
    after = matrix.resolve(changed_ctx, shapes.shapes)
    changed = matrix.changes(before, after)
    assert changed == ["deepseek-v3-flashmla page_size: 64 [model rule page_size_flashmla over --page-size] -> "
                       "32 [model rule page_size_flashmla over --page-size]"]


def _shapes_file(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(f"""\
package: configbags.generated
golden: golden.jsonl
shapes:
  small:
    argv: [--model-path, /m, --tp-size, "2"{extra}]
    gpu: {{name: H100, memory: 80GiB, sm: 90}}
  from-config:
    argv: [--model-path, /m]
    config: {{max_running_requests: 8}}
""")
    return path


def test_check_fails_on_a_changed_cell_printing_both_sides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes_file(tmp_path)
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    assert matrix.main(["--shapes", str(path), "--check"]) == 0
    capsys.readouterr()
    _shapes_file(tmp_path, ', --chunked-prefill-size, "1024"')
    assert matrix.main(["--shapes", str(path), "--check"]) == 1
    out = capsys.readouterr().out.splitlines()
    # the chunk feeds SGLang's memory reserve, so the memory fraction's cell changes with it
    assert sorted(out) == ["small chunked_prefill_size: 8192 [hardware rule chunked_prefill_size_by_gpu_memory] -> "
                           "1024 [cli from --chunked-prefill-size]",
                           "small mem_fraction_static: 0.834 [hardware rule mem_fraction_static_from_gpu_memory] -> "
                           "0.875 [hardware rule mem_fraction_static_from_gpu_memory]"]
    config_cell = [line for line in (tmp_path / "golden.jsonl").read_text().splitlines() if "config_file" in line]
    assert config_cell == ['{"layer": "config_file", "leaf": "max_running_requests", "shape": "from-config", '
                           '"source": "$CONFIG/from-config.json", "value": 8}']


def test_against_a_revision_shows_what_a_change_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    path = _shapes_file(repo)
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "golden"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    shutil.copy(path, tmp_path / "kept.yaml")
    _shapes_file(repo, ', --tp-size, "4"')
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--against", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert "small tp_size: 2 [cli from --tp-size] -> 4 [cli from --tp-size]" in out
    assert "small mem_fraction_static:" in out  # the rule's input changed, so its answer did


def test_a_shapes_file_with_a_typo_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text("shapes:\n  a:\n    args: [--tp-size, '2']\n")
    with pytest.raises(ConfigError, match=r"shape 'a': unknown key\(s\) args; the keys are argv"):
        matrix.read_shapes(path)


@pytest.mark.parametrize(("shape", "message"), [
    ("gpu: {memory: lots}", r"shape 'a': gpu memory: 'lots' is not a size"),
    ("model: nope.json", r"shape 'a': model 'nope.json' is no file"),
    ("gpu: {name: x, cores: 3}", r"shape 'a': `gpu` takes name, memory"),
    ("argv: --tp-size 2", r"shape 'a': `argv` is a list"),
])
def test_a_bad_shape_is_refused_naming_it(tmp_path: Path, shape: str, message: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(f"shapes:\n  a:\n    {shape}\n")
    with pytest.raises(ConfigError, match=message):
        matrix.read_shapes(path)


def test_an_error_cell_holds_the_whole_reason_so_check_sees_it_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "matrix.yaml"
    text = ("package: configbags.generated\ngolden: golden.jsonl\nshapes:\n  s1: {argv: [--model-path, /m]}\n"
            "  s2: {argv: [--model-path, m, --api_key, SECRETM5]}\n")
    path.write_text(text)
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    [cell] = [c for c in matrix.loads((tmp_path / "golden.jsonl").read_text(), "golden") if c["shape"] == "s2"]
    assert "unrecognized flag --api_key (did you mean '--api-key'?)" in cell["error"]
    assert "SECRETM5" not in cell["error"]
    path.write_text(text.replace("--api_key, SECRETM5", "--tp-size, abc"))
    capsys.readouterr()
    assert matrix.main(["--shapes", str(path), "--check"]) == 1
    assert "s2 (shape): error: matrix: error: unrecognized flag --api_key" in capsys.readouterr().out
