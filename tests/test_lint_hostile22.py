"""`configbags lint` with hostile files and flags, round twenty-two: file names, ConfigMap
entry keys and variable names reach the table (and lint's errors) inert, never as a forged
line (finding 4); a leaf given by its old and its new name in one config file, launch line
or set of variables fails lint, as the server refuses it (finding 5); with `--target`, a
file or suffix-less ConfigMap entry whose keys the target lost is still linted as a config
file (finding 11); an empty, blank or malformed `--launcher` is a usage error, and one that
matches no launch line is said so (finding 12)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from lint_case import BUNDLED, LAUNCH

from configbags.evolve import lint

FIXTURE_SCHEMA = Path(__file__).resolve().parent / "fixtures" / "evolve" / "lint" / "schema"


def _lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = lint.main([*args, "--schema", str(BUNDLED), "--no-cache"])
    out, err = capsys.readouterr()
    return code, out, err


def _no_forged_line(text: str) -> None:
    """Every line is lint's own: none starts a workflow command, none holds a control character."""
    for line in text.splitlines():
        assert not line.startswith("::"), text
        assert not any(ord(c) < 32 or ord(c) == 127 for c in line), text


# -- finding 4: names from files reach the table inert -------------------------------------
def test_a_file_name_with_newlines_is_one_escaped_table_cell(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a\n::error file=README.md,line=1::forged\nz.sh").write_text(
        "#!/bin/sh\npython -m sglang.launch_server --tp-sise 2\n")
    (tmp_path / "c\x1b[31mx.yaml").write_text("tp_size: 2\nmodel_path: m\ntp_sise: 2\n")
    code, out, _ = _lint(capsys, str(tmp_path))
    assert code == 1
    _no_forged_line(out)
    assert "a\\n::error file=README.md,line=1::forged\\nz.sh:2" in out, out
    assert "c\\x1b[31mx.yaml:3" in out, out
    assert out.count("\n") == 4, out  # the title, two findings, the counts


def test_an_unreadable_file_name_is_escaped_in_location_and_subject(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "u\nFAKE.json"
    bad.write_text("{\n")
    code, out, _ = _lint(capsys, str(bad))
    assert code == 1
    _no_forged_line(out)
    assert out.count("u\\nFAKE.json") == 2, out


def test_manifest_names_and_keys_are_escaped_in_subject_and_message(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        "    command: [python, -m, sglang.launch_server]\n    args: [--model-path, m]\n"
        '    env:\n    - {name: "SGLANG_X\\n::error::env", value: "1"}\n')
    (tmp_path / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  "skip\\n::warning::w": "foo: 1\\nbar: 2\\n"\n')
    code, out, _ = _lint(capsys, str(tmp_path))
    assert code == 1
    _no_forged_line(out)
    assert "SGLANG_X\\n::error::env  " in out and "unknown environment variable SGLANG_X\\n::error::env" in out, out
    assert "skip\\n::warning::w  " in out, out


def test_github_and_json_keep_their_own_encoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table's escaping is the table's: annotations encode a newline as %0A, JSON holds the name."""
    name = "a\nb.sh"
    (tmp_path / name).write_text("#!/bin/sh\npython -m sglang.launch_server --tp-sise 2\n")
    _, out, _ = _lint(capsys, str(tmp_path), "--format", "github")
    assert "a%0Ab.sh" in out and "a\\nb.sh" not in out, out
    _, out, _ = _lint(capsys, str(tmp_path), "--json")
    assert [f["file"] for f in json.loads(out)["findings"]] == [(tmp_path / name).as_posix()]


def test_plain_and_non_ascii_names_are_printed_as_they_are(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "déploiement.sh").write_text("#!/bin/sh\npython -m sglang.launch_server --tp-sise 2\n")
    code, out, _ = _lint(capsys, str(tmp_path))
    assert code == 1 and "déploiement.sh:2  --tp-sise  " in out, out


def test_a_missing_path_is_named_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _lint(capsys, str(tmp_path / "x\n::error::F\x1b[31m"))
    assert code == 2 and not out
    assert err.count("\n") == 1 and "x\\n::error::F\\x1b[31m" in err, err
    _no_forged_line(err)


# -- finding 5: an old and a new name of one leaf together fail, as the server refuses them -----
OLD, NEW = "cuda_graph_max_bs", "cuda_graph_max_bs_decode"


def test_a_config_file_with_the_old_and_the_new_key_fails(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(f"{OLD}: 8\n{NEW}: 16\n")
    code, out, _ = _lint(capsys, str(path), "--json")
    assert code == 1
    [refused] = [f for f in json.loads(out)["findings"] if f["severity"] == "breaking"]
    assert (refused["rule"], refused["line"], refused["subject"]) == ("lint-unreadable", 2, NEW)
    assert f"'{OLD}' (line 1) and '{NEW}' (line 2) both set '{NEW}'" in refused["message"]
    assert "the server refuses both" in refused["message"] and "keeps the last" not in out


def test_a_configmap_entry_with_the_old_and_the_new_key_fails(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\ndata:\n  a.yaml: |\n"
                    f"    {OLD}: 8\n    {NEW}: 16\n  b.yaml: |\n    {OLD}: 8\n  c.yaml: |\n    {NEW}: 8\n")
    code, out, _ = _lint(capsys, str(path), "--json")
    assert code == 1
    breaking = [(f["rule"], f["line"]) for f in json.loads(out)["findings"] if f["severity"] == "breaking"]
    assert breaking == [("lint-unreadable", 7)]  # b.yaml and c.yaml are files of their own


def test_a_launch_line_with_the_old_and_the_new_flag_is_refused(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --cuda-graph-max-bs 8 \\\n  --cuda-graph-max-bs-decode 16\n")
    code, out, _ = _lint(capsys, str(path), "--json")
    assert code == 1
    findings = json.loads(out)["findings"]
    [refused] = [f for f in findings if f["severity"] == "breaking"]
    assert (refused["rule"], refused["line"], refused["subject"]) == ("lint-refused", 3, "--cuda-graph-max-bs-decode")
    assert "--cuda-graph-max-bs (line 2)" in refused["message"] and "the server refuses both" in refused["message"]
    assert not [f for f in findings if f["rule"] == "lint-repeated"]


def test_the_same_flag_twice_is_still_the_last_value_warning(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --cuda-graph-max-bs-decode 8 --cuda-graph-max-bs-decode 16\n"
                    f"{LAUNCH} --cuda-graph-max-bs 8 --cuda-graph-max-bs 16\n")
    code, out, _ = _lint(capsys, str(path), "--json")
    assert code == 0
    rules = sorted((f["line"], f["rule"]) for f in json.loads(out)["findings"])
    assert rules == [(2, "lint-repeated"), (3, "lint-deprecated"), (3, "lint-repeated")]  # one finding per line


def test_an_old_key_alone_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(f"{OLD}: 8\n")
    code, out, _ = _lint(capsys, str(path), "--json")
    assert code == 0 and [f["rule"] for f in json.loads(out)["findings"]] == ["lint-deprecated"]


def test_the_old_and_the_new_variable_together_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture schema's `port` was `http_port`, variable APP_HTTP_PORT: the server's env
    reader refuses both set, as it refuses a secret's NAME and NAME_FILE."""
    path = tmp_path / "app.sh"
    path.write_text("#!/bin/sh\nexport APP_HTTP_PORT=8000\nexport APP_PORT=8001\n")
    code = lint.main([str(path), "--schema", str(FIXTURE_SCHEMA), "--no-cache", "--json"])
    assert code == 1
    both = [f for f in json.loads(capsys.readouterr().out)["findings"] if "both set" in f["message"]]
    assert [(f["rule"], f["line"], f["subject"]) for f in both] == [("lint-bad-value", 3, "APP_PORT")]
    assert "APP_HTTP_PORT" in both[0]["message"] and "the server refuses both" in both[0]["message"]


# -- a project whose next release (`v2`) renames queue_timeout and removes stats_every ---------
def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


@pytest.fixture
def upgrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repo whose working schema is the fixture's and whose tag v2 renames queue_timeout
    to wait_timeout and drops stats_every; the working folder is the repo."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE_SCHEMA, repo / "schema")
    _git(repo, "init", "-q")
    serving = repo / "schema" / "namespaces" / "serving.yaml"
    today = serving.read_text()
    future = today.replace("  queue_timeout:\n", "  wait_timeout:\n    renamed_from: [{name: queue_timeout}]\n")
    start = future.index("  stats_every:\n")
    future = future[:start] + future[future.index("  warmup_steps:\n"):]
    serving.write_text(future)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "next release")
    _git(repo, "tag", "v2")
    serving.write_text(today)
    monkeypatch.chdir(repo)
    return repo


def _target(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, list[tuple[str, str, int, str]]]:
    code = lint.main([*paths, "--schema", "schema", "--no-cache", "--target", "v2", "--json"])
    data = json.loads(capsys.readouterr().out)
    return code, [(f["rule"], f["file"], f["line"], f["subject"]) for f in data["findings"]]


def test_with_target_the_old_and_the_new_name_fail(upgrade: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (upgrade / "deploy").mkdir()
    (upgrade / "deploy" / "server.yaml").write_text("queue_timeout: 5\nwait_timeout: 6\n")
    (upgrade / "deploy" / "run.sh").write_text("#!/bin/sh\npython -m e.launch_server --queue-timeout 5 "
                                               "--wait-timeout 6\n")
    code, found = _target(capsys, "deploy")
    assert code == 1
    assert [f for f in found if f[0] in ("lint-refused", "lint-unreadable")] == [
        ("lint-refused", "deploy/run.sh", 2, "--wait-timeout"),
        ("lint-unreadable", "deploy/server.yaml", 2, "wait_timeout")]


# -- finding 11: with --target, a file whose keys the target lost is still a config file --------
def test_with_target_a_found_file_of_removed_keys_is_linted(upgrade: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (upgrade / "deploy").mkdir()
    (upgrade / "deploy" / "server.yaml").write_text("stats_every: 5\n")
    (upgrade / "deploy" / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  server-config: |\n    stats_every: 5\n')
    (upgrade / "deploy" / "ci.yml").write_text("on: push\njobs: {test: {runs-on: ubuntu}}\n")
    code, found = _target(capsys, "deploy")
    assert code == 1
    assert found == [("lint-removed", "deploy/cm.yaml", 6, "stats_every"),
                     ("lint-removed", "deploy/server.yaml", 1, "stats_every")]


def test_without_target_the_same_folder_is_clean(upgrade: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (upgrade / "deploy").mkdir()
    (upgrade / "deploy" / "server.yaml").write_text("stats_every: 5\n")
    (upgrade / "deploy" / "ci.yml").write_text("on: push\njobs: {test: {runs-on: ubuntu}}\n")
    assert lint.main(["deploy", "--schema", "schema", "--no-cache"]) == 0
    assert "no findings" in capsys.readouterr().out


def test_with_target_an_entry_of_other_keys_is_still_skipped(upgrade: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (upgrade / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  other: |\n    foo: 1\n    stats_every: 5\n'
        '    bar: 2\n')
    code, found = _target(capsys, "cm.yaml")
    assert code == 0 and found == [("lint-skipped", "cm.yaml", 5, "other")]


# -- finding 12: --launcher patterns -------------------------------------------------------
@pytest.mark.parametrize("pattern", ["", " ", "\t", "[", "*launch[_server"])
def test_an_empty_blank_or_malformed_launcher_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               pattern: str) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --tp-sise 2\n")
    with pytest.raises(SystemExit) as exit_:
        lint.main([str(path), "--schema", str(BUNDLED), "--no-cache", "--launcher", pattern])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert not out and "--launcher" in err, err
    _no_forged_line(err)


@pytest.mark.parametrize("pattern", ["*launch_server*", "*launch_[s]erver*", "python -m sglang.[!x]aunch_server"])
def test_a_well_formed_launcher_is_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: str) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --tp-sise 2\n")
    code, out, err = _lint(capsys, str(path), "--launcher", pattern)
    assert code == 1 and "--tp-sise" in out and not err, err


def test_a_launcher_that_matches_no_launch_line_is_said_so(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --tp-sise 2\n")
    code, out, err = _lint(capsys, str(path), "--launcher", "*vllm*", "--launcher", "*launch_server*")
    assert code == 1 and "--tp-sise" in out
    assert "--launcher '*vllm*' matched no launch line" in err and "launch_server" not in err, err
    code, out, err = _lint(capsys, str(path), "--launcher", "*vllm*")
    assert code == 0 and "no findings" in out and "--launcher '*vllm*' matched no launch line" in err, err


def test_json_and_another_format_together_are_a_usage_error(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/sh\n{LAUNCH} --tp-sise 2\n")
    with pytest.raises(SystemExit) as exit_:
        lint.main([str(path), "--schema", str(BUNDLED), "--json", "--format", "github"])
    assert exit_.value.code == 2 and "--json" in capsys.readouterr().err
    code, out, _ = _lint(capsys, str(path), "--json", "--format", "json")
    assert code == 1 and json.loads(out)["findings"]
