"""`configbags lint`'s one YAML reading for every format: aliases are the anchored node,
merge keys (`<<`) are read as compose, Helm and kubectl read them, each finding at the
anchored text's line and once however often it is used; a config file keeps `<<` as
the server does (a key); an alias bomb is refused, never expanded. Kubernetes manifests
written as JSON are manifests, found in a folder or named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lint_case import bundled_view, found

from configbags.evolve import lint
from configbags.evolve.view import SchemaView
from configbags.runtime import limits, yamlsafe


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()



COMPOSE = """\
x-env: &env
  SGLANG_TP_SISE: "2"
  SGLANG_API_KEY: ""
x-svc: &svc
  image: sglang
  environment: *env
  command: python -m sglang.launch_server --model-path m --tp-sise 1
services:
  prefill:
    <<: *svc
  decode:
    <<: *svc
    environment:
      <<: *env
      SGLANG_LOG_LEVEL: debug
"""


def test_a_compose_service_merged_from_an_extension_field_is_linted(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE)
    assert found(path, view) == [(2, "lint-unknown", "SGLANG_TP_SISE"), (3, "lint-bad-value", "SGLANG_API_KEY"),
                                  (7, "lint-unknown", "--tp-sise")]


def test_a_services_own_keys_win_over_merged_ones(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "compose.yaml"
    path.write_text("x-a: &a\n  command: python -m sglang.launch_server --tp-sise 1\n"
                    "x-b: &b\n  command: python -m sglang.launch_server --tp-siz 2\n"
                    "services:\n  s:\n    <<: [*b, *a]\n  t:\n    <<: *a\n"
                    "    command: python -m sglang.launch_server --tp-size 3\n")
    # s takes b's command (the first merged wins); t's own command replaces a's
    assert found(path, view) == [(4, "lint-unknown", "--tp-siz")]


@pytest.mark.parametrize("values", [
    'base: &x ["--model-path", "m", "--tp-sise", "1"]\nargs: *x\n',
    "common: &c\n  args: [--model-path, m, --tp-sise, '1']\nprefill:\n  <<: *c\ndecode:\n  <<: *c\n",
])
def test_helm_arguments_through_an_alias_or_a_merge_are_linted_once(tmp_path: Path, view: SchemaView,
                                                                     values: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(values)
    assert [(rule, subject) for _, rule, subject in found(path, view)] == [("lint-unknown", "--tp-sise")]


def test_a_kubernetes_container_merged_from_a_base_is_linted(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "dep.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
                    "  - name: a\n    image: i\n    env: [{name: SGLANG_TP_SISE, value: '1'}]\n"
                    "    command: &cmd [python, -m, sglang.launch_server]\n"
                    "  - <<: {name: b, image: i, command: *cmd}\n    args: [--tp-siz, '2']\n")
    assert found(path, view) == [(8, "lint-unknown", "SGLANG_TP_SISE"), (11, "lint-unknown", "--tp-siz")]


def test_a_config_file_keeps_the_merge_key_as_the_server_reads_it(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "engine.yaml"
    path.write_text("<<: {tp_size: 4}\npage_size: 8\n")
    assert found(path, view) == [(1, "lint-unknown", "<<")]


def test_an_alias_bomb_is_refused_not_expanded(tmp_path: Path, view: SchemaView) -> None:
    lines = ['a0: &a0 ["--tp-sise", "1", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "values.yaml"
    path.write_text("\n".join(lines) + "\nargs: *a9\n")
    [finding] = lint.lint([path], view)
    assert (finding.rule, finding.line) == ("lint-unreadable", 6) and "alias bomb" in finding.message


def test_only_the_copies_aliases_make_count_against_the_node_limit(tmp_path: Path, view: SchemaView,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    small = limits.Limits(nodes=50)
    monkeypatch.setattr(yamlsafe, "LIMITS", small)
    monkeypatch.setattr(limits, "LIMITS", small)
    written = tmp_path / "big" / "values.yaml"  # 60 nodes written out: the file's size bounds them
    written.parent.mkdir()
    written.write_text("".join(f"k{i}: v\n" for i in range(29)) + "args: [--tp-sise, '1']\n")
    assert found(written, view) == [(30, "lint-unknown", "--tp-sise")]
    copied = tmp_path / "copied" / "values.yaml"  # 4 written, 60 more copied by aliases
    copied.parent.mkdir()
    copied.write_text("a: &a [--tp-sise, '1']\n" + "".join(f"b{i}: *a\n" for i in range(30)))
    [finding] = lint.lint([copied], view)
    assert finding.rule == "lint-unreadable" and "aliases" in finding.message


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
       "spec": {"containers": [{"name": "a", "image": "i", "command": [
           "python", "-m", "sglang.launch_server", "--model-path", "m", "--tp-sise", "6"]}]}}


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("document", [POD, {"apiVersion": "v1", "kind": "List", "items": [POD]},
                                      {"kind": "List", "items": [POD]}])
def test_a_kubernetes_manifest_written_as_json_is_a_manifest(tmp_path: Path, view: SchemaView, named: bool,
                                                             document: dict[str, object]) -> None:
    (tmp_path / "f").mkdir()
    path = tmp_path / "f" / "pod.json"
    path.write_text(json.dumps(document, indent=1) + "\n")
    findings = found(path if named else tmp_path, view)
    assert [(rule, subject) for _, rule, subject in findings] == [("lint-unknown", "--tp-sise")]


def test_a_configmap_written_as_json_lints_its_entries_not_its_kind(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "cm.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                "data": {"engine.yaml": "tp_sise: 1\n"}}))
    assert [(rule, subject) for _, rule, subject in found(path, view)] == [("lint-unknown", "tp_sise")]
