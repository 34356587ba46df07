"""`configbags lint` over Helm values: every `--word` of an argument list under the
chart's keys is checked (a list of only mistyped flags too) unless its command names
another program."""

from __future__ import annotations

from pathlib import Path

import pytest

from configbags.evolve import lint
from configbags.evolve.view import SchemaView, load_view

BUNDLED = Path(__file__).resolve().parents[1] / "schema"


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return load_view(BUNDLED, cache=False)


def _found(path: Path, view: SchemaView) -> list[tuple[int, str, str]]:
    return [(f.line, f.rule, f.subject) for f in lint.lint([path], view)]


@pytest.mark.parametrize(("values", "line"), [
    ('args: ["--tp-sise", "5"]\n', 1),
    ("extraArgs:\n  - --tp-sise\n  - \"6\"\n", 2),
    ('server:\n  extraArgs: ["--tp-sise=8"]\n', 2),
    ("engine:\n  args: [--enable-torch-compil]\n", 2),
    ('server:\n  command: [python3, -m, sglang.launch_server]\n  args: ["--tp-sise", "5"]\n', 3),
    ('server:\n  command: [/bin/sh, -c]\n  args: ["python -m sglang.launch_server --tp-sise 5"]\n', 3),
    ('server:\n  args: [--model-path, m]\n  extraArgs: [--tp-sise, "5"]\n', 3),
])
def test_helm_argument_lists_are_checked_whatever_flags_they_hold(tmp_path: Path, view: SchemaView,
                                                                  values: str, line: int) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(values)
    [(at, rule, subject)] = _found(path, view)
    assert (at, rule) == (line, "lint-unknown") and subject in {"--tp-sise", "--enable-torch-compil"}


@pytest.mark.parametrize("values", [
    "sidecar:\n  command: [envoy]\n  args: [--config-path, /etc/envoy.yaml, --log-levle, info]\n",
    "proxy:\n  command: envoy\n  extraArgs: [--concurrency, '2']\n",
    "extraContainers:\n  - name: proxy\n    image: envoyproxy/envoy\n    args: [--config-path, /etc/e.yaml]\n",
    "metrics:\n  command: [node_exporter, --collector.cpu]\n",
])
def test_helm_lists_of_another_program_stay_alone(tmp_path: Path, view: SchemaView, values: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(values)
    assert _found(path, view) == []
