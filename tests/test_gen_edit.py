"""Editing one `help:` changes exactly the lines that carry that help text."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
from genutil import REPO

from configbags.codegen.emit import emit
from configbags.codegen.model import load_schema

REGEN = "configbags gen --schema schema --package configbags.generated --out generated"


@pytest.mark.slow  # generates the bundled schema twice
def test_one_help_edit_changes_only_its_lines(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(REPO / "schema", schema)
    path = schema / "namespaces" / "parallel.yaml"
    text = path.read_text()
    start = text.index("  tp_size:")
    old_line = next(line for line in text[start:].splitlines() if line.strip().startswith("help:"))
    new_help = "Tensor-parallel width, edited by the five-minute tour."
    path.write_text(text.replace(old_line, f"    help: {new_help}", 1))

    before = emit(load_schema(REPO / "schema"), REGEN, package="configbags.generated")
    after = emit(load_schema(schema), REGEN, package="configbags.generated")
    changed: dict[str, list[str]] = {}
    for name in before:
        diff = [
            line for line in difflib.unified_diff(before[name].splitlines(), after[name].splitlines(), lineterm="", n=0)
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
        ]
        if diff:
            changed[name] = diff
    # The docstrings in bags and ServerArgs, the leaf record's help (the registry's; --help
    # reads it there), the doc table and the JSON Schema.
    assert set(changed) == {"bags.py", "server_args.py", "registry.py", "CONFIG.md", "server_args.schema.json"}
    for name, lines in changed.items():
        added = [line for line in lines if line.startswith("+")]
        assert added and all("edited by the five-minute tour" in line for line in added), (name, lines)
    assert len(changed["server_args.py"]) == 2  # the docstring, - and + (no per-leaf argparse code)
    assert len(changed["registry.py"]) == 2  # the record's `help=`
