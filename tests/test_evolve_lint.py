"""`configbags lint`: a fixture per format (tests/fixtures/evolve/lint/files), each with
unknown, deprecated, removed and bad-value cases, and beside it `<file>.expect`, one
`LINE RULE SUBJECT` per finding the linter must report there, and nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from configbags.evolve import lint
from configbags.evolve.formats import format_of, parse_file, yaml_documents
from configbags.evolve.view import SchemaView, load_view

HERE = Path(__file__).parent / "fixtures" / "evolve" / "lint"
SCHEMA = HERE / "schema"
FILES = HERE / "files"
FIXTURES = sorted(p for p in FILES.rglob("*") if p.is_file() and p.suffix != ".expect")
FORMATS = {"launch.sh": "shell", "launch.py": "python", "engine-config.yaml": "yaml", "engine-config.json": "json",
           "manifests.yaml": "yaml", "values.yaml": "helm-values", "Dockerfile": "dockerfile",
           "docker-compose.yml": "compose"}


def _expected(path: Path) -> set[tuple[int, str, str]]:
    rows = Path(f"{path}.expect").read_text().split("\n")
    return {(int(line), rule, subject) for line, rule, subject in (r.split(" ", 2) for r in rows if r.strip())}


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return load_view(SCHEMA, cache=False)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_each_format_reports_exactly_its_cases(path: Path, view: SchemaView) -> None:
    found = {(f.line, f.rule, f.subject) for f in lint.lint([path], view)}
    assert found == _expected(path)
    kinds = {rule for _, rule, _ in found}
    # (and a removed old name beside the current one is also refused as given twice)
    assert kinds >= {"lint-unknown", "lint-deprecated", "lint-removed", "lint-bad-value"}, (
        "each fixture carries one case of every kind")
    assert all(f.file == path.as_posix() for f in lint.lint([path], view))


def test_the_fixtures_cover_every_format() -> None:
    assert {p.name: format_of(p, p.read_text()) for p in FIXTURES} == FORMATS
    assert {parse_file(p).format for p in FIXTURES} == {  # type: ignore[union-attr]
        "shell", "python", "config", "json", "kubernetes", "helm-values", "dockerfile", "compose"}


def test_the_messages_name_the_replacement_the_release_and_the_close_spelling(view: SchemaView) -> None:
    by = {(f.rule, f.subject): f for f in lint.lint([FILES / "launch.sh"], view)}
    assert "did you mean '--port'?" in by["lint-unknown", "--prot"].message
    deprecated = by["lint-deprecated", "--model-alias"]
    assert "stops working in 2.0" in deprecated.message and deprecated.fix == "write --served-name"
    removed = by["lint-removed", "--http-port"]
    assert "removed in 1.0" in removed.message and removed.fix == "write --port"
    assert "'verbose' is not one of the choices" in by["lint-bad-value", "--log-level"].message


def test_all_documents_of_a_manifest_are_read() -> None:
    docs = list(yaml_documents((FILES / "manifests.yaml").read_text()))
    assert [d.get("kind").text for d in docs] == [  # type: ignore[union-attr]
        "Deployment", "StatefulSet", "Job", "InferenceService", "ConfigMap"]


def test_other_programs_and_unknown_values_are_left_alone(tmp_path: Path, view: SchemaView) -> None:
    script = tmp_path / "run.sh"
    script.write_text('echo --prot\ngrep --max-bach x\n'
                      'python -m x.launch_server --port "$PORT" --max-batch ${N} --model-path m\n')
    assert lint.lint([script], view) == []


def test_a_broken_file_is_one_finding_at_its_line(tmp_path: Path, view: SchemaView) -> None:
    bad = tmp_path / "engine.yaml"
    bad.write_text("port: 2000\nlog_level: [unclosed\n")
    [finding] = lint.lint([bad], view)
    assert finding.rule == "lint-unreadable" and finding.line == 3


def test_the_command_exit_code_and_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert lint.main([str(FILES / "engine-config.yaml"), "--schema", str(SCHEMA), "--no-cache", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == "1.0"
    # http_port beside port: the old and the current name of one leaf, which the config reader refuses
    assert {f["rule"] for f in data["findings"]} == {"lint-unknown", "lint-deprecated", "lint-removed",
                                                       "lint-bad-value", "lint-unreadable"}
    clean = [str(FILES / "engine-config.yaml"), "--schema", str(SCHEMA), "--no-cache", "--fail-on", "never"]
    assert lint.main(clean) == 0
    capsys.readouterr()
    monkeypatch.setenv("GITHUB_WORKSPACE", str(FILES.parent))
    assert lint.main([str(FILES / "Dockerfile"), "--schema", str(SCHEMA), "--no-cache", "--format", "github"]) == 1
    assert f"::error file={FILES.name}/Dockerfile,line=5,title=lint-unknown" in capsys.readouterr().out


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


def test_target_lints_against_a_future_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The release at `--target` drops --stats-every and raises port's minimum: the user
    learns it from today's launch line before upgrading."""
    repo = tmp_path / "repo"
    shutil.copytree(SCHEMA, repo / "schema")
    _git(repo, "init", "-q")
    serving = repo / "schema" / "namespaces" / "serving.yaml"
    today = serving.read_text()
    future = today.replace("    min: 1024\n", "    min: 2048\n")
    start = future.index("  stats_every:\n")
    future = future[:start] + future[future.index("derived:"):]
    serving.write_text(future)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "next release")
    _git(repo, "tag", "v2")
    serving.write_text(today)
    launch = tmp_path / "launch.sh"
    launch.write_text("python -m e.launch_server --model-path m --port 1500 --stats-every 5\n")
    monkeypatch.chdir(repo)
    assert lint.main([str(launch), "--schema", "schema", "--no-cache", "--fail-on", "never"]) == 0
    assert "no findings" in capsys.readouterr().out
    assert lint.main([str(launch), "--schema", "schema", "--no-cache", "--target", "v2", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "v2:schema"
    assert {(f["rule"], f["subject"]) for f in data["findings"]} == {
        ("lint-bad-value", "--port"), ("lint-removed", "--stats-every")}


@pytest.mark.parametrize("text", [
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nmax_batch: [*e, *e, *e, *e, *e]\n"
    "engine:\n  args: [*e, *e, *e]\n",
    "max_batch: &r [*r]\n",
    "? [a, b]\n: 1\n",
    "max_batch: !!python/object:os.system x\n",
    "port: 1e999999\nlog_level: \"\\ud800\"\n",
])
def test_hostile_yaml_is_a_finding_never_a_crash(tmp_path: Path, view: SchemaView, text: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    for finding in lint.lint([path], view):
        assert finding.file == path.as_posix() and finding.line >= 1


def test_hostile_python_and_shell_are_findings(tmp_path: Path, view: SchemaView) -> None:
    deep = tmp_path / "deep.py"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    nul = tmp_path / "nul.py"
    nul.write_bytes(b"x = 1\x00\n")
    quote = tmp_path / "quote.sh"
    quote.write_text("python -m a.launch_server --port '30000\n")
    found = {Path(f.file).name: f.rule for f in lint.lint([deep, nul, quote], view)}
    assert found == {"deep.py": "lint-unreadable", "nul.py": "lint-unreadable", "quote.sh": "lint-unreadable"}


def test_a_folder_walk_skips_yaml_that_is_no_config_and_chart_templates(tmp_path: Path, view: SchemaView) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {test: {runs-on: ubuntu}}\n")
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: engine\nversion: 1.0.0\n")
    (chart / "templates" / "deployment.yaml").write_text("{{- if .Values.enabled }}\nkind: Deployment\n{{- end }}\n")
    (chart / "values.yaml").write_text("engine:\n  args: [--port, '2000', --prot, '1']\n")
    (tmp_path / "engine.yaml").write_text("port: 2000\nmax_bach: 3\n")  # half known: a config file with a typo
    found = {(Path(f.file).relative_to(tmp_path).as_posix(), f.subject) for f in lint.lint([tmp_path], view)}
    assert found == {("chart/values.yaml", "--prot"), ("engine.yaml", "max_bach")}
    named = lint.lint([tmp_path / ".github" / "workflows" / "ci.yml"], view)  # named: read as a config file
    assert {f.subject for f in named} == {"on", "jobs"}


def test_python_runs_a_shell_script_through_bash_c(tmp_path: Path, view: SchemaView) -> None:
    script = tmp_path / "run.py"
    script.write_text('import subprocess\nsubprocess.run(\n    ["bash", "-c", "APP_PORT=1 python -m e.launch_server --prot 2"])\n')
    found = {(f.line, f.rule, f.subject) for f in lint.lint([script], view)}
    assert found == {(3, "lint-bad-value", "APP_PORT"), (3, "lint-unknown", "--prot")}


def test_flags_that_may_stand_alone_and_flags_that_need_a_value(tmp_path: Path, view: SchemaView) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python -m e.launch_server --warmup-steps --tags --old-knob --no-old-knob --queue-timeout\n"
                      "python -m e.launch_server --warmup-steps 3 --tags a b --max-batch 4 --old-knob=1\n")
    found = {(f.line, f.rule, f.subject) for f in lint.lint([script], view) if f.rule != "lint-deprecated"}
    assert found == {(1, "lint-bad-value", "--queue-timeout"), (2, "lint-bad-value", "--old-knob"),
                     (1, "lint-repeated", "--no-old-knob")}  # the bool and its twin: the last wins


def test_templates_and_format_fields_are_unknown_values_but_json_is_checked(tmp_path: Path) -> None:
    bundled = load_view(Path(__file__).parent.parent / "schema", cache=False)
    script = tmp_path / "launch.py"
    script.write_text('CMD = "python -m e.launch_server --tp-size {tp} --page-size {{ page }} --port $PORT"\n'
                      "ARGS = ['python', '-m', 'e.launch_server', '--json-model-override-args', '{\"a\": ']\n")
    assert [(f.line, f.subject) for f in lint.lint([script], bundled)] == [(2, "--json-model-override-args")]


DEEP_BUT_VALID = {  # each parses, and ast.unparse recurses once per level on it
    "attributes": lambda n: "x = a" + ".b" * n + "()\n",
    "calls": lambda n: "subprocess.run(['python', '-m', 'sglang.launch_server'])\nf" + "()" * n + "\n",
    "sums": lambda n: "subprocess.run([" + "+".join(["'a'"] * n) + "])\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP_BUT_VALID))
def test_a_valid_file_too_deep_to_unparse_is_a_finding_never_a_traceback(
        tmp_path: Path, view: SchemaView, shape: str) -> None:
    import sys
    import threading

    path = tmp_path / "deep.py"
    path.write_text(DEEP_BUT_VALID[shape](900))
    found = lint.lint([path], view)
    assert [f.rule for f in found if f.rule == "lint-unreadable"] in ([], ["lint-unreadable"])
    # and on a thread, under a lower recursion limit, where any depth can be too deep
    out: list[object] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        worker = threading.Thread(target=lambda: out.append(_lint_or_exception(path, view)))
        worker.start()
        worker.join(timeout=60)
    finally:
        sys.setrecursionlimit(limit)
    (result,) = out
    assert isinstance(result, list), result
    (finding,) = [f for f in result if f.rule == "lint-unreadable"]
    assert finding.file == path.as_posix() and "nests too deeply" in finding.message


def _lint_or_exception(path: Path, view: SchemaView) -> object:
    try:
        return lint.lint([path], view)
    except BaseException as exc:  # the thing this test must never see
        return exc


def test_lint_refuses_what_the_server_refuses_numbers_and_secrets(tmp_path: Path) -> None:
    """A green lint means the launch parses: the one number grammar, and the secret rules
    every door applies (a none-like value, the flag twice), never echoing the secret."""
    bundled = load_view(Path(__file__).resolve().parents[1] / "schema", cache=False)
    launch = tmp_path / "launch.sh"
    launch.write_text("python -m sglang.launch_server --model-path m --tp-size 1_0 --page-size \u0663 "
                      "--mem-fraction-static 0.5_0 --api-key SEKRET-1 --api-key SEKRET-2\n"
                      "SGLANG_API_KEY=none python -m sglang.launch_server --model-path m\n")
    config = tmp_path / "server.yaml"
    config.write_text("api_key: none\n")
    found = {(f.file.rsplit("/", 1)[1], f.line, f.subject, f.rule) for f in lint.lint([launch, config], bundled)}
    assert {("launch.sh", 1, "--tp-size", "lint-bad-value"), ("launch.sh", 1, "--page-size", "lint-bad-value"),
            ("launch.sh", 1, "--mem-fraction-static", "lint-bad-value"), ("launch.sh", 1, "--api-key", "lint-bad-value"),
            ("launch.sh", 2, "SGLANG_API_KEY", "lint-bad-value"), ("server.yaml", 1, "api_key", "lint-bad-value")} <= found
    assert not any("SEKRET" in f.message for f in lint.lint([launch, config], bundled))
    config.write_text("api_key: null\n")  # as the server does: a key is left off by leaving it out
    assert [(f.subject, f.rule) for f in lint.lint([config], bundled)] == [("api_key", "lint-bad-value")]


def test_lint_applies_the_doors_key_rule_and_the_config_loaders_reader(tmp_path: Path) -> None:
    """What `configbags serve` refuses at start fails lint too, by the same rules: a key no
    client can send (`runtime.keys.unusable`), the read key given as the admin key
    (`same_key`), and a config file the loader's reader (`yamlsafe.load_text`) refuses."""
    from configbags.generated.registry import REGISTRY
    from configbags.runtime.errors import ConfigError
    from configbags.serve.door import check_keys

    bundled = load_view(Path(__file__).resolve().parents[1] / "schema", cache=False)
    launch = tmp_path / "b.sh"
    launch.write_text('#!/bin/sh\npython -m sglang.launch_server --model-path m --api-key " k"\n'
                      "python -m sglang.launch_server --model-path m --api-key=a --admin-api-key=a\n"
                      "python -m sglang.launch_server --model-path m --api-key=a --admin-api-key=b\n")
    y11 = tmp_path / "y11.yaml"
    y11.write_text("%YAML 1.1\n---\ntp_size: 010\n")
    twice = tmp_path / "twice.yaml"
    twice.write_text("tp_size: 1\n---\ntp_size: 2\n")
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n"
                        '  server.yaml: |\n    admin_api_key: " x"\n'
                        "  keys.yaml: |\n    api_key: same-1\n    admin_api_key: same-1\n"
                        "  apart.yaml: |\n    api_key: k-1\n  apart2.yaml: |\n    admin_api_key: k-1\n")
    found = {(f.file.rsplit("/", 1)[1], f.line, f.rule) for f in lint.lint([launch, y11, twice, manifest], bundled)}
    assert found == {("b.sh", 2, "lint-bad-value"), ("b.sh", 3, "lint-bad-value"), ("y11.yaml", 1, "lint-unreadable"),
                     ("twice.yaml", 2, "lint-unreadable"), ("cm.yaml", 6, "lint-bad-value"),
                     ("cm.yaml", 9, "lint-bad-value")}
    messages = "\n".join(f.message for f in lint.lint([launch, y11, manifest], bundled))
    assert "surrounding whitespace" in messages and "are the same key" in messages and "%YAML 1.1" in messages
    for values in ({"api_key": " k"}, {"api_key": "a", "admin_api_key": "a"}, {"admin_api_key": " x"}):
        with pytest.raises(ConfigError):  # the door refuses each, as lint does
            check_keys(REGISTRY, values)
    # a YAML file found in a folder that is no config file is not held to the loader's reader
    workflow = tmp_path / "ci" / "workflow.yaml"
    workflow.parent.mkdir()
    workflow.write_text("%YAML 1.1\n---\non: push\njobs: {}\n")
    assert lint.lint([workflow.parent], bundled) == []


def test_launch_lines_the_server_refuses_fail_as_its_parser_refuses_them(tmp_path: Path) -> None:
    """Each line's flags are all known and well typed, yet the server's own parser refuses
    it: lint parses it with that parser, in shell and Kubernetes args alike."""
    bundled = load_view(Path(__file__).parent.parent / "schema", cache=False)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n"
                      "python -m sglang.launch_server --model-path m --enable-dp-attention true\n"
                      "python -m sglang.launch_server --model-path m --tp-size 2 extra\n"
                      "python -m sglang.launch_server --model-path m --preset low-latency --preset high-throughput\n"
                      "python -m sglang.launch_server --model-path m -p 30000\n"
                      "python -m sglang.launch_server --model-path m --tp-size 2 --enable-dp-attention\n"
                      "python -m sglang.launch_server --model-path $M --tp-size $TP $EXTRA\n")
    found = [(f.line, f.rule) for f in lint.lint([script], bundled)]
    assert found == [(2, "lint-refused"), (3, "lint-refused"), (4, "lint-refused"), (5, "lint-refused"),
                     (7, "lint-unchecked")]  # $EXTRA: words known only at run time, said as such
    by_line = {f.line: f.message for f in lint.lint([script], bundled)}
    assert "1 word not taken by any flag" in by_line[2] and "true" not in by_line[2]  # a value is never echoed
    assert "--preset given twice" in by_line[4]
    assert "unrecognized flag -p" in by_line[5]
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n"
                   "    command: [python, -m, sglang.launch_server]\n"
                   "    args: [--model-path, m, --enable-dp-attention, \"true\"]\n")
    [refused] = lint.lint([pod], bundled)
    assert (refused.rule, refused.line) == ("lint-refused", 8)


def test_a_folder_nested_past_the_recursion_limit_is_walked(tmp_path: Path, view: SchemaView) -> None:
    import sys

    deep = tmp_path / "deepd"
    folder = deep
    folder.mkdir()
    for _ in range(1300):  # os.walk recursed once per level (the path stays within PATH_MAX)
        folder = folder / "a"
        folder.mkdir()
    (folder / "run.sh").write_text("#!/bin/sh\npython -m e.launch_server --prot 2\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        [found] = lint.lint([deep], view)
    finally:
        sys.setrecursionlimit(limit)
        # removed level by level: pytest's own clean-up of old tmp folders (shutil.rmtree)
        # recurses once per level and would fail a later session past the limit
        (folder / "run.sh").unlink()
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent
    assert (found.rule, found.subject, found.line) == ("lint-unknown", "--prot", 2)


def test_a_folder_that_cannot_be_listed_is_a_finding(tmp_path: Path, view: SchemaView,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locked").mkdir()
    real = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(lint.os, "scandir", scandir)
    [found] = lint.lint([tmp_path], view)
    assert found.rule == "lint-unreadable" and "cannot list the folder: Permission denied" in found.message
