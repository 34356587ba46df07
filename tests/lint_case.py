"""The bundled schema's lint view, and findings as (line, rule, subject) tuples, for the
lint tests of one format or spelling each."""

from __future__ import annotations

import functools
from pathlib import Path

from configbags.evolve import lint
from configbags.evolve.view import SchemaView, load_view

BUNDLED = Path(__file__).resolve().parents[1] / "schema"
LAUNCH = "python -m sglang.launch_server --model-path m"


@functools.cache
def bundled_view() -> SchemaView:
    return load_view(BUNDLED, cache=False)


def found(path: Path, view: SchemaView) -> list[tuple[int, str, str]]:
    """What lint finds in `path` (a file or a folder)."""
    return [(f.line, f.rule, f.subject) for f in lint.lint([path], view)]


def found_in(path: Path, text: str, view: SchemaView) -> list[tuple[int, str, str]]:
    """`text` written to `path`, linted."""
    path.write_text(text)
    return found(path, view)
