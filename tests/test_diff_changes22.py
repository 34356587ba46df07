"""`diff --changes-md FILE`, round twenty-two: the file is read within the input limits
and written whole; a FIFO, a device or a folder is refused before anything is loaded, and
a file the diff reads (a schema file, the allow file, by any name) is never written into."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from configbags.evolve import diff
from configbags.runtime import limits, yamlsafe
from configbags.runtime.limits import Limits

SCHEMA = Path(__file__).parent / "fixtures" / "evolve" / "lint" / "schema"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose working schema changes a default since the tag v1."""
    repo = tmp_path / "repo"
    shutil.copytree(SCHEMA, repo / "schema")
    (repo / "pyproject.toml").write_text("[tool.configbags]\nschema = \"schema\"\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "v1")
    _git(repo, "tag", "v1")
    serving = repo / "schema" / "namespaces" / "serving.yaml"
    serving.write_text(serving.read_text().replace("default: 30000", "default: 30001"))
    monkeypatch.chdir(repo)
    return repo


def _run(*extra: str) -> int:
    return diff.main(["--against", "v1", "--fail-on", "never", "--no-cache", *extra])


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_changes_file_that_is_no_regular_file_is_refused_at_once(
        repo: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    target = {"fifo": repo / "ff", "device": Path("/dev/zero"), "folder": repo / "docs"}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    assert _run("--changes-md", str(target)) == 2  # a FIFO would block: this returning is the test
    err = capsys.readouterr().err
    assert f"--changes-md {target}: cannot be written" in err and "Traceback" not in err, err


@pytest.mark.parametrize("how", ["path", "symlink", "hardlink"])
@pytest.mark.parametrize("which", ["schema file", "allow file"])
def test_a_file_the_diff_reads_is_never_written_into(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, which: str) -> None:
    allow = repo / "allow.yaml"
    allow.write_text("allow: []\n")
    read = repo / "schema" / "namespaces" / "serving.yaml" if which == "schema file" else allow
    before = read.read_bytes()
    target = read
    if how == "symlink":
        target = tmp_path / "CONFIG.md"
        target.symlink_to(read)
    elif how == "hardlink":
        target = tmp_path / "CONFIG.md"
        os.link(read, target)
    assert _run("--allow", str(allow), "--changes-md", str(target)) == 2
    assert "a file this diff reads" in capsys.readouterr().err
    assert read.read_bytes() == before


def test_a_changes_file_over_the_size_limit_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    small = Limits(file_bytes=20_000)  # above every schema file, below the notes
    monkeypatch.setattr(yamlsafe, "LIMITS", small)
    monkeypatch.setattr(limits, "LIMITS", small)  # the refusal names the limit in force
    big = repo / "CONFIG.md"
    big.write_text("x" * 30_000)
    assert _run("--changes-md", str(big)) == 2
    assert "is 30000 bytes, over" in capsys.readouterr().err and big.read_text() == "x" * 30_000


def test_a_markdown_file_gets_its_section_and_keeps_the_rest(repo: Path) -> None:
    """The twin: a release's CONFIG.md, new or kept, gets the section."""
    notes = repo / "CONFIG.md"
    notes.write_text("# Config\n\nHand-written.\n")
    assert _run("--changes-md", str(notes)) == 0
    text = notes.read_text()
    assert text.startswith("# Config\n\nHand-written.\n") and "## Changes since v1" in text and "port" in text
    fresh = repo / "NEW.md"
    assert _run("--changes-md", str(fresh)) == 0
    assert "## Changes since v1" in fresh.read_text()
