"""A schema read at a git revision (`diff --against REV`, `diff REV1 REV2`, `lint --target
REV`) that holds a symlink: a link leading out of the revision's folder (an absolute
path, `/dev/zero`, `../../../outside.yaml`) is a typed error, exit 2, naming the revision
and the link, and nothing outside the revision is read; a relative link to a file inside
the folder is followed, as it is in a working schema folder."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from configbags.evolve import diff, lint, revisions
from configbags.runtime.errors import ConfigError

SCHEMA = Path(__file__).parent / "fixtures" / "evolve" / "lint" / "schema"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path, link: str | None) -> tuple[Path, str]:
    """A project whose schema at the returned commit holds `namespaces/evil.yaml -> link`,
    and whose working tree (the next commit) does not."""
    repo = tmp_path / "repo"
    shutil.copytree(SCHEMA, repo / "schema")
    (repo / "pyproject.toml").write_text("[tool.configbags]\nschema = \"schema\"\n")
    (repo / "launch.sh").write_text("python -m e.launch_server --model-path m\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    if link is not None:
        (repo / "schema" / "namespaces" / "evil.yaml").symlink_to(link)
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "link")
    rev = _git(repo, "rev-parse", "HEAD")
    if link is not None:
        _git(repo, "rm", "-q", "schema/namespaces/evil.yaml")
        _git(repo, "commit", "-qm", "clean")
    return repo, rev


COMMANDS: dict[str, Callable[[str], int]] = {
    "diff --against": lambda rev: diff.main([f"--against={rev}", "--no-cache"]),
    "diff REV HEAD": lambda rev: diff.main([rev, "HEAD", "--no-cache"]),
    "diff HEAD REV": lambda rev: diff.main(["HEAD", rev, "--no-cache"]),
    "lint --target": lambda rev: lint.main(["launch.sh", "--schema", "schema", "--no-cache", f"--target={rev}"]),
}


@pytest.mark.parametrize("link", ["/dev/zero", "/etc/passwd", "../../../outside.yaml", "../../pyproject.toml"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_link_out_of_the_revisions_schema_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], link: str,
        command: str) -> None:
    repo, rev = _repo(tmp_path, link)
    (tmp_path / "outside.yaml").write_text("serving: {}\n")
    monkeypatch.chdir(repo)
    assert COMMANDS[command](rev) == 2
    err = capsys.readouterr().err
    assert f"{rev}:schema/namespaces/evil.yaml is a symlink to {link!r}" in err, err
    assert "outside" in err and "Traceback" not in err


def test_the_error_is_typed_and_leaves_no_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, rev = _repo(tmp_path, "/dev/zero")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(ConfigError, match=r"is a symlink to '/dev/zero'"), revisions.checkout(rev, repo / "schema"):
        pass
    assert not list(tmp_path.glob("configbags-rev-*"))


def test_a_link_to_a_file_inside_the_revisions_schema_is_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The quiet twin: a namespace file kept in a subfolder and linked where the schema
    looks for it reads at the revision as the plain file does, so nothing changed."""
    repo, _ = _repo(tmp_path, None)
    namespaces = repo / "schema" / "namespaces"
    (repo / "schema" / "common").mkdir()
    shutil.move(namespaces / "serving.yaml", repo / "schema" / "common" / "serving.yaml")
    (namespaces / "serving.yaml").symlink_to("../common/serving.yaml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "linked")
    rev = _git(repo, "rev-parse", "HEAD")
    (namespaces / "serving.yaml").unlink()
    shutil.move(repo / "schema" / "common" / "serving.yaml", namespaces / "serving.yaml")
    monkeypatch.chdir(repo)
    capsys.readouterr()
    assert diff.main([f"--against={rev}", "--no-cache"]) == 0, capsys.readouterr().err
    with revisions.checkout(rev, repo / "schema") as side:
        assert (side.folder / "namespaces" / "serving.yaml").read_text() == (namespaces / "serving.yaml").read_text()
