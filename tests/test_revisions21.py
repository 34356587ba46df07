"""Revisions and names, round twenty-one: `diff --against REV` reads the revision even where
a folder has the same name; a positional side naming both a folder and a revision is
refused as ambiguous; schema errors at a revision name `REV:PATH`, never the temporary
folder; a schema file's name reaches the terminal inert; `explain LEAF FLAGS -- SERVER
FLAGS` takes the server flags after `--`."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from configbags import explain
from configbags.evolve import diff, lint
from configbags.runtime.cmdline import unrecognized

SCHEMA = Path(__file__).parent / "fixtures" / "evolve" / "lint" / "schema"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(SCHEMA, repo / "schema")
    (repo / "pyproject.toml").write_text("[tool.configbags]\nschema = \"schema\"\n")
    (repo / "launch.sh").write_text("python -m e.launch_server --model-path m\n")
    _git(repo, "init", "-q")
    _commit(repo, "base")
    return repo


def _drops_an_alias(tmp_path: Path, branch: str) -> Path:
    """A project whose commit under `branch` has the flag alias `--listen-port`, and whose
    working tree (HEAD) dropped it: a breaking change."""
    repo = _project(tmp_path)
    _git(repo, "branch", branch)
    serving = repo / "schema" / "namespaces" / "serving.yaml"
    serving.write_text(serving.read_text().replace("aliases: [--listen-port]", "aliases: []"))
    _commit(repo, "drop the alias")
    return repo


@pytest.mark.parametrize("branch", ["schema", "release"])
def test_against_reads_the_revision_when_a_folder_has_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], branch: str) -> None:
    repo = _drops_an_alias(tmp_path, branch)
    if branch != "schema":  # a folder beside the branch, holding the working schema
        shutil.copytree(repo / "schema", repo / branch)
    monkeypatch.chdir(repo)
    assert diff.main(["--against", branch, "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "flag-removed" in out and "--listen-port" in out and f"{branch}:schema" in out, out


def test_a_positional_side_that_is_both_a_folder_and_a_revision_is_ambiguous(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _drops_an_alias(tmp_path, "schema")
    monkeypatch.chdir(repo)
    assert diff.main(["schema", "HEAD", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "OLD 'schema' is both a folder and a git revision" in err and "./schema" in err, err
    # each spelled so it names one thing, the command runs
    assert diff.main(["refs/heads/schema", "HEAD", "--no-cache"]) == 1
    assert "flag-removed" in capsys.readouterr().out
    assert diff.main(["./schema", "HEAD", "--no-cache"]) == 0  # the working folder: the same schema
    assert "flag-removed" not in capsys.readouterr().out


def test_a_folder_that_is_no_revision_is_still_a_side(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path)
    shutil.copytree(repo / "schema", tmp_path / "old")
    monkeypatch.chdir(repo)
    assert diff.main([str(tmp_path / "old"), "--no-cache"]) == 0
    assert "breaking" not in capsys.readouterr().out


def test_against_a_folder_that_is_no_revision_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path)
    shutil.copytree(repo / "schema", repo / "old")
    monkeypatch.chdir(repo)
    assert diff.main(["--against", "old", "--no-cache"]) == 2
    assert "--against 'old' is not a git revision" in capsys.readouterr().err


COMMANDS = {
    "diff --against": lambda rev: diff.main([f"--against={rev}", "--no-cache"]),
    "diff REV HEAD": lambda rev: diff.main([rev, "HEAD", "--no-cache"]),
    "lint --target": lambda rev: lint.main(["launch.sh", "--schema", "schema", "--no-cache", f"--target={rev}"]),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_schema_errors_at_a_revision_name_the_revision_not_the_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str) -> None:
    repo = _project(tmp_path)
    (repo / "schema" / "namespaces" / "alias.yaml").symlink_to("serving.yaml")  # a second file for one namespace
    rev = _commit(repo, "alias")
    _git(repo, "rm", "-q", "schema/namespaces/alias.yaml")
    _commit(repo, "clean")
    monkeypatch.chdir(repo)
    assert COMMANDS[command](rev) == 2
    err = capsys.readouterr().err
    assert f"{rev}:schema/namespaces/alias.yaml:1: file declares namespace 'serving'" in err, err
    assert "configbags-rev-" not in err


FORGED = "a\n::error file=README.md,line=1::forged\n::stop-commands::x\n\x1b[31mz.yaml"


@pytest.mark.parametrize("where", ["revision", "working tree"])
def test_a_schema_file_name_cannot_forge_a_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str) -> None:
    repo = _project(tmp_path)
    (repo / "schema" / "namespaces" / FORGED).write_text("x")
    rev = _commit(repo, "forged name")
    if where == "revision":
        _git(repo, "rm", "-q", f"schema/namespaces/{FORGED}")
        _commit(repo, "clean")
        argv = ["--against", rev, "--format", "github", "--no-cache"]
    else:
        argv = ["--against", "HEAD~1", "--format", "github", "--no-cache"]
    monkeypatch.chdir(repo)
    assert diff.main(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and not any(line.startswith("::") for line in err.splitlines()), err
    assert r"a\n::error file=README.md,line=1::forged\n::stop-commands::x\n\x1b[31mz.yaml:1:" in err, err


def test_a_schema_that_is_a_file_at_the_revision_is_named_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _project(tmp_path)
    shutil.move(repo / "schema", tmp_path / "kept")
    (repo / "schema").write_text("x\n")
    rev = _commit(repo, "schema a file")
    (repo / "schema").unlink()
    shutil.move(tmp_path / "kept", repo / "schema")
    _commit(repo, "back")
    monkeypatch.chdir(repo)
    assert diff.main(["--against", rev, "--no-cache"]) == 2
    assert f"{rev}:schema is a file, not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("before", [[], ["--gpu-sm", "90"], ["--gpu-memory", "80GiB"]])
def test_explain_takes_the_server_flags_after_a_double_dash(
        capsys: pytest.CaptureFixture[str], before: list[str]) -> None:
    argv = ["--package", "configbags.generated", "tp_size", *before, "--", "--model-path", "/m", "--tp-size", "2"]
    assert explain.main(argv) == 0, capsys.readouterr().err
    assert "parallel.tp_size = 2" in capsys.readouterr().out


def test_a_known_flag_after_a_double_dash_is_not_suggested_as_itself() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--model-path")
    _, left = parser.parse_known_args(["--", "--model-path", "/m", "--modl-path", "x"])
    message = unrecognized(parser, left)
    assert "--model-path (after a '--', which ends the flags" in message, message
    assert "--modl-path (did you mean '--model-path'?)" in message, message
