"""`configbags gen` when the file system refuses the output (a file-size limit, a full
disk): one line naming the path and the reason, exit 2, and the output folder exactly as
it was."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from configbags.codegen.__main__ import main

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "tests" / "cases" / "tiny" / "schema"


def _gen(out: Path) -> list[str]:
    return ["--schema", str(SCHEMA), "--package", "genpkg", "--out", str(out), "--no-cache"]


def _tree(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _stale(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A generated folder with one file edited since, so the next gen rewrites it."""
    out = tmp_path / "k" / "genpkg"
    assert main(_gen(out)) == 0
    registry = out / "registry.py"
    registry.write_text(registry.read_text() + "# edited\n")
    return out, _tree(out)


def test_a_full_disk_is_one_line_naming_the_file_and_the_old_tree_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out, before = _stale(tmp_path)
    capsys.readouterr()
    real = Path.write_text

    def full(self: Path, *args: object, **kwargs: object) -> int:
        if self.parent.name.startswith(".genpkg.new-"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full)
    assert main(_gen(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{out}/" in err and "No space left on device" in err and "left as it was" in err
    assert _tree(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["genpkg"]  # no staging left behind


def test_a_file_size_limit_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out, before = _stale(tmp_path)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    done = subprocess.run([sys.executable, "-m", "configbags.codegen", *_gen(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, preexec_fn=limited)
    assert done.returncode == 2, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert _tree(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["genpkg"]  # no staging left behind


def test_a_format_cache_that_cannot_be_written_leaves_no_half_file(tmp_path: Path) -> None:
    out = tmp_path / "k" / "genpkg"

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    args = ["--schema", str(SCHEMA), "--package", "genpkg", "--out", str(out)]
    done = subprocess.run([sys.executable, "-m", "configbags.codegen", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, preexec_fn=limited)
    assert done.returncode == 2, done.stderr
    cache = out.parent / ".configbags-cache"
    assert not cache.is_dir() or not any(p.name.endswith(".tmp") for p in cache.iterdir())
