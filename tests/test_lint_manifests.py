"""`configbags lint` over Helm values and Kubernetes objects holding config files: every
`--word` of an argument list under the chart's keys is checked (a list of only mistyped
flags too) unless its command names another program; config files in a Secret
(`stringData`, base64 `data`) and in a `List` (`kubectl get -o yaml`) are linted like
ConfigMap entries, a Secret's values never shown."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from lint_case import bundled_view, found

from configbags.evolve import lint
from configbags.evolve.view import SchemaView


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()



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
    [(at, rule, subject)] = found(path, view)
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
    assert found(path, view) == []


SECRET = ("apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\ntype: Opaque\n{body}")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_config_files_in_a_secret_are_linted(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "secret.yaml"
    engine = _b64("max_running_requests: 8\nmodel_pth: m\n")
    path.write_text(SECRET.format(body=(
        'stringData:\n  config.yaml: "tp_sise: 4\\napi_key: \\" SEKSTR1\\""\n'
        "  server.yaml: |\n    tp_size: 2\n    page_sise: 3\n"
        f"data:\n  engine.yaml: {engine}\n"
        f"  notes.txt: {_b64('tp_sise: 1')}\n  broken.yaml: '!!!'\n")))
    assert sorted(found(path, view)) == [
        (6, "lint-bad-value", "api_key"), (6, "lint-unknown", "tp_sise"), (9, "lint-unknown", "page_sise"),
        (11, "lint-unknown", "model_pth"), (13, "lint-unreadable", path.as_posix())]


@pytest.mark.parametrize("fmt", ["table", "json", "github", "sarif"])
def test_a_secrets_values_are_never_shown(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(SECRET.format(body=(
        "stringData:\n  config.yaml: |\n    tp_size: SEKINT1\n    log_level: SEKCHOICE2\n    api_key: ' SEKSP3'\n"
        f"data:\n  b.yaml: {_b64('page_size: SEKB64')}\n  c.yaml: U0VLUkFX\n")))
    assert lint.main([str(path), "--no-cache", "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert "SEK" not in out and "tp_size" in out and "page_size" in out


def test_the_same_entry_in_a_configmap_shows_its_value(tmp_path: Path, view: SchemaView) -> None:
    """What a Secret hides, a ConfigMap's finding says (the value is no secret there)."""
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  config.yaml: 'tp_size: many'\n"
                    f"binaryData:\n  b.yaml: {_b64('page_sise: 2')}\n")
    found = lint.lint([path], view)
    assert sorted((f.line, f.subject) for f in found) == [(5, "tp_size"), (7, "page_sise")]
    assert any("'many'" in f.message for f in found)


def test_configmaps_and_secrets_in_a_list_are_linted(tmp_path: Path, view: SchemaView) -> None:
    """`kubectl get configmaps,secrets -o yaml` writes one `List` (the API a `ConfigMapList`)."""
    path = tmp_path / "dump.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    config.yaml: \"tp_sise: 5\"\n"
        f"- apiVersion: v1\n  kind: Secret\n  metadata: {{name: s}}\n  data:\n    config.yaml: {_b64('page_sise: 1')}\n"
        "- apiVersion: v1\n  kind: ConfigMapList\n  items:\n  - kind: ConfigMap\n    data:\n"
        "      server.yaml: |\n        max_bach: 2\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  spec:\n    template:\n      spec:\n        containers:\n"
        "        - name: e\n          image: i\n          command: [python, -m, sglang.launch_server]\n"
        "          args: [--prot, '1']\n")
    assert sorted(found(path, view)) == [(8, "lint-unknown", "tp_sise"), (13, "lint-unknown", "page_sise"),
                                          (20, "lint-unknown", "max_bach"), (30, "lint-unknown", "--prot")]


POD_ENV = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: s
    image: i
    command: [python, -m, sglang.launch_server, --model-path, m]
    env:
    - {name: SGLANG_API_KEY_FILE, value: /run/secrets/k}
    - {name: SGLANG_ADMIN_API_KEY_FILE, value: ""}
    - {name: SGLANG_API_TOKEN, value: SEKRET1}
    - {name: sglang_api_key, value: SEKRET2}
    - {name: SGLANG_API_KEY_FILES, value: /k}
"""


def test_a_secrets_file_variable_is_the_servers_and_its_lookalikes_are_refused(tmp_path: Path,
                                                                                view: SchemaView) -> None:
    # the server reads SGLANG_API_KEY_FILE's file, refuses an empty path, and refuses to
    # start with a variable close to a secret's (ignored, it would leave the key unset)
    path = tmp_path / "pod.yaml"
    path.write_text(POD_ENV)
    findings = lint.lint([path], view)
    assert [(f.line, f.rule, f.subject) for f in findings] == [
        (11, "lint-bad-value", "SGLANG_ADMIN_API_KEY_FILE"), (12, "lint-unknown", "SGLANG_API_TOKEN"),
        (13, "lint-unknown", "sglang_api_key"), (14, "lint-unknown", "SGLANG_API_KEY_FILES")]
    assert "rename it to SGLANG_API_KEY" in findings[2].fix and "SEKRET" not in repr(findings)


TEMPLATE = """\
apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: t}
objects:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
  data:
    config.yaml: "tp_sise: 2\\n"
- apiVersion: v1
  kind: List
  items:
  - kind: Secret
    stringData:
      server.yml: "page_sise: 1\\n"
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec:
    containers:
    - {name: a, image: i, command: [python, -m, sglang.launch_server, --prot, "1"]}
"""


def test_config_files_in_an_openshift_templates_objects_are_linted(tmp_path: Path, view: SchemaView) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    assert sorted(found(path, view)) == [(9, "lint-unknown", "tp_sise"), (15, "lint-unknown", "page_sise"),
                                          (21, "lint-unknown", "--prot")]


@pytest.mark.parametrize("name", ["config.YAML", "server.Yml", "cfg.JSON"])
def test_an_entry_named_in_any_case_is_a_config_file(tmp_path: Path, view: SchemaView, name: str) -> None:
    """serve reads `--config x.YAML` as YAML (the suffix in any case), so a mounted entry so named is one."""
    path = tmp_path / "secret.yaml"
    value = '"{\\"tp_sise\\": 2}"' if name.endswith("JSON") else '"tp_sise: 2\\n"'
    path.write_text(f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\nstringData:\n  {name}: {value}\n")
    assert found(path, view) == [(5, "lint-unknown", "tp_sise")]


@pytest.mark.parametrize(("values", "expected"), [
    ('extraArgs: "--tp-sise 2"\n', [(1, "lint-unknown", "--tp-sise")]),
    ('server:\n  args: "--model-path m --tp-sise 2 --enable-metrics"\n', [(2, "lint-unknown", "--tp-sise")]),
    ('server:\n  args: [--model-path, m]\n  extraArgs: "--tp-size 2 extra"\n', [(3, "lint-refused", "launch line")]),
    ("extraArgs: |\n  --tp-size 2\n  --enable-torch-compil\n", [(1, "lint-unknown", "--enable-torch-compil")]),
    ('extraArgs: "--tp-size $TP"\n', []),
    ("extraArgs: \"--tp-size 2 'open\"\n", [(1, "lint-unreadable", None)]),
])
def test_helm_arguments_written_as_one_string_are_shell_words(tmp_path: Path, view: SchemaView, values: str,
                                                               expected: list[tuple[int, str, str | None]]) -> None:
    """A chart giving `{{ .Values.extraArgs }}` to a shell (or `splitList " "`) splits the string into words."""
    path = tmp_path / "values.yaml"
    path.write_text(values)
    assert [(line, rule, subject if expected and expected[0][2] is not None else None)
            for line, rule, subject in found(path, view)] == expected


def test_a_configmap_entry_without_a_suffix_is_linted_when_it_holds_the_schemas_keys(
        tmp_path: Path, view: SchemaView) -> None:
    """`server-config` mounted as a --config file (`items: [{key: server-config, path:
    config.yaml}]`): which entry a pod mounts as which file is not in the ConfigMap, so an
    entry whose text is a mapping of mostly the schema's keys is linted as a config file,
    and another mapping is named as not linted (info), never skipped unsaid. A text that is no
    mapping (a script, an environment value) is no config file the server would read."""
    path = tmp_path / "cm.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n"
        "  server-config: |\n    tp_size: 2\n    page_sise: 16\n    max_running_requests: many\n"  # lines 5-8
        "  start.sh: |\n    exec python -m x\n"  # 9: no mapping
        "  SGLANG_TP_SIZE: '2'\n"  # 11: an environment value (envFrom)
        "  logging: |\n    version: 1\n    handlers: {}\n"  # 12: a mapping of other keys
        f"binaryData:\n  engine: {_b64('tp_sise: 4')}\n")  # 16: base64 of a mapping of no schema key
    assert sorted(found(path, view)) == [(7, "lint-unknown", "page_sise"), (8, "lint-bad-value", "max_running_requests"),
                                         (12, "lint-skipped", "logging"), (16, "lint-skipped", "engine")]
    messages = {f.subject: f.message for f in lint.lint([path], view) if f.rule == "lint-skipped"}
    assert "0 of the 2 keys" in messages["logging"] and "under `binaryData`" in messages["engine"]


def test_a_secrets_entries_without_a_suffix_stay_unread_and_unnamed(tmp_path: Path, view: SchemaView) -> None:
    """A Secret's suffix-less entries are keys and certificates (`api-key`, `tls.crt`): never
    read as config files, nor named."""
    path = tmp_path / "s.yaml"
    path.write_text(f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\ndata:\n  api-key: {_b64('tp_sise: 1')}\n"
                    "stringData:\n  token: 'page_sise: 2'\n")
    assert found(path, view) == []


@pytest.mark.parametrize("text", ["", "# nothing\n", "null\n"])
def test_a_config_file_or_configmap_entry_that_says_nothing_is_refused(tmp_path: Path, view: SchemaView,
                                                                       text: str) -> None:
    """Round eighteen: the server refuses a config file holding no document; lint said
    nothing of it, named or as a ConfigMap entry."""
    named = tmp_path / "config.yaml"
    named.write_text(text)
    assert [rule for _, rule, _ in found(named, view)] == ["lint-unreadable"]
    cm = tmp_path / "cm.yaml"
    cm.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata:\n  config.yaml: {text.strip()!r}\n")
    assert [rule for _, rule, _ in found(cm, view)] == ["lint-unreadable"]


def test_a_configmap_literal_block_names_the_manifest_lines(tmp_path: Path, view: SchemaView) -> None:
    """A key given twice in an embedded literal block: the finding and the line of the first
    one it names are both the manifest's lines, not the embedded text's."""
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  config.yaml: |\n"
                    "    tp_size: 2\n    page_size: 16\n    tp_size: 4\n")
    unreadable = [f for f in lint.lint([path], view) if f.rule == "lint-unreadable"]
    assert [f.line for f in unreadable] == [8], unreadable
    assert "first on line 6" in unreadable[0].message, unreadable[0].message
