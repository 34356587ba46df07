"""The generator against hostile schema files: every case is refused with file:line, the
leaf and a fix, nothing is written, and bombs are refused fast (no expansion)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from genutil import copy_case, generate, snapshot
from hostile.corpus import HANG_S, billion_laughs

CORE = "namespaces/core.yaml"
TUNE = "namespaces/core.tune.yaml"
DEEP = "[" * 900 + "]" * 900

# (id, file, old text, new text, where, leaf or None, message part)
CASES = [
    ("leaf-named-classmethod", CORE, "  verbose:\n", "  classmethod:\n", "core.yaml:31", "classmethod", "reserved"),
    ("leaf-named-staticmethod", CORE, "  verbose:\n", "  staticmethod:\n", "core.yaml:31", "staticmethod", "reserved"),
    ("leaf-named-property", CORE, "  verbose:\n", "  property:\n", "core.yaml:31", "property", "reserved"),
    ("nul-byte", CORE, "  verbose:\n", "  verb\x00ose:\n", "core.yaml:1", None, "#x0000"),
    ("5000-digit-default", CORE, "    default: 2\n", "    default: " + "9" * 5000 + "\n", "core.yaml:", None, "over the limit of 100"),
    ("99-digit-default-within-limits", CORE, "    default: 2\n", "    default: " + "9" * 99 + "\n", "core.yaml:", None, ""),
    ("bomb-json-default", TUNE, "  mode:\n", "  bomb:\n    type: json\n    default: " + billion_laughs() + "\n    help: x\n    owner: boss\n    override: startup\n  mode:\n", "core.tune.yaml:", None, "alias bomb"),
    ("bomb-in-choices", TUNE, "    choices: [fast, safe]\n", "    choices: " + billion_laughs() + "\n", "core.tune.yaml:", None, "alias bomb"),
    ("deep-json-default", TUNE, "  mode:\n", "  deep:\n    type: json\n    default: " + DEEP + "\n    help: x\n    owner: boss\n    override: startup\n  mode:\n", "core.tune.yaml:", None, "nests deeper"),
    ("65-deep-json-default", TUNE, "  mode:\n", "  deep:\n    type: json\n    default: " + "[" * 65 + "]" * 65 + "\n    help: x\n    owner: boss\n    override: startup\n  mode:\n", "core.tune.yaml:", "deep", "nests deeper than 64"),
    ("derived-arity", CORE, "    inputs: [width]\n", "    inputs: [width, ratio]\n", "core.yaml:40", "width_root", "cannot take the 2 declared input(s) (width, ratio)"),
    ("derived-arity-none", CORE, "    fn: math:isqrt\n", "    fn: platform:system\n", "core.yaml:40", "width_root", "cannot take the 1 declared input(s) (width)"),
    ("duplicate-key", CORE, "    default: 2\n", "    default: 2\n    default: 3\n", "core.yaml:7", None, "duplicate key 'default'"),
    ("yaml-1.1-octal-is-decimal", CORE, "    default: 2\n    min: 1\n", "    default: 010\n    min: 1\n    max: 9\n", "core.yaml:6", "width", "default 10 is invalid"),
]


def _mutate(schema: Path, file: str, old: str, new: str) -> None:
    path = schema / file
    text = path.read_text()
    assert old in text, f"fixture text {old!r} not found"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_schema_is_refused_fast_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, str, str, str, str, str | None, str]
) -> None:
    name, file, old, new, where, leaf, message = case
    schema = copy_case("tiny", tmp_path)
    out = tmp_path / "generated"
    assert generate(schema, out) == 0
    before = snapshot(out)
    capsys.readouterr()
    _mutate(schema, file, old, new)
    start = time.perf_counter()
    code = generate(schema, out)
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    if name == "99-digit-default-within-limits":
        assert code == 0, err  # 99 digits is within the limits: accepted (limits are not too tight)
        return
    assert code == 2, err
    assert "Traceback" not in err
    assert "nothing was written" in err
    lines = [line for line in err.splitlines() if where in line and message in line]
    assert lines, f"no error at {where} mentions {message!r}:\n{err}"
    if leaf is not None:
        assert any(f"leaf {leaf!r}" in line for line in lines), err
    assert snapshot(out) == before
    assert elapsed < HANG_S, f"{name} took {elapsed:.2f} s"


def test_namespace_any_would_shadow_typing_any(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    (schema / "namespaces" / "any.yaml").write_text("namespace: any\ndoc: Shadows typing.Any.\nleaves: {}\n")
    assert generate(schema, tmp_path / "generated") == 2
    err = capsys.readouterr().err
    assert "any.yaml:1: namespace 'any' gets class name Any, which the generated code already uses" in err


def test_schema_file_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    schema = copy_case("tiny", tmp_path)
    os.mkfifo(schema / "namespaces" / "zz.yaml")
    start = time.perf_counter()
    assert generate(schema, tmp_path / "generated") == 2
    assert time.perf_counter() - start < HANG_S
    assert "zz.yaml:1: cannot read file" in capsys.readouterr().err
