"""Every revision flag (`lint --target`, `matrix --against`, `diff --against`, diff's sides)
goes through one check: text starting with `-` is refused, naming the flag, and never
reaches git as an option (`--output=FILE` would truncate FILE)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from configbags.evolve import diff, lint, matrix, revisions
from configbags.runtime.errors import ConfigError

SCHEMA = Path(__file__).parent / "fixtures" / "evolve" / "lint" / "schema"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(SCHEMA, repo / "schema")
    (repo / "pyproject.toml").write_text("[tool.configbags]\nschema = \"schema\"\n")
    (repo / "matrix.yaml").write_text("package: configbags.generated\ngolden: golden.jsonl\nshapes:\n"
                                      "  s: {argv: [--model-path, /m]}\n")
    (repo / "golden.jsonl").write_text("")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


@pytest.mark.parametrize("command", [
    lambda rev: lint.main(["launch.sh", "--schema", "schema", "--no-cache", f"--target={rev}"]),
    lambda rev: matrix.main(["--shapes", "matrix.yaml", f"--against={rev}"]),
    lambda rev: diff.main([f"--against={rev}", "--no-cache"]),
], ids=["lint --target", "matrix --against", "diff --against"])
def test_an_option_like_revision_is_refused_and_never_reaches_git(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: object) -> None:
    repo = _repo(tmp_path)
    (repo / "launch.sh").write_text("python -m e.launch_server --model-path m\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "m:schema").mkdir()
    (tmp_path / "m:schema" / "golden.jsonl").write_text("precious\n")
    monkeypatch.chdir(repo)
    for rev in (f"--output={victim}", f"--output={tmp_path / 'm'}", "--format=zip"):
        assert command(rev) == 2  # type: ignore[operator]
        err = capsys.readouterr().err
        assert "never starts with '-'" in err and ("--target" in err or "--against" in err)
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "m:schema" / "golden.jsonl").read_text() == "precious\n"


def test_a_revision_is_resolved_to_its_commit_before_git_sees_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()
    assert revisions.commit_of("HEAD", repo, "--target") == head
    with pytest.raises(ConfigError, match=r"--target '-HEAD': a revision never starts with '-'"):
        revisions.commit_of("-HEAD", repo, "--target")
    with pytest.raises(ConfigError, match=r"--against 'no-such' is not a git revision"):
        revisions.commit_of("no-such", repo, "--against")
