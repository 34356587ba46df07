"""Round twenty's hostile `golden:` of a matrix shapes file (an outside attack, finding 3):
`--write` refuses, before it resolves anything, a golden that is the shapes file itself (it
would replace the shapes), a folder, a FIFO (the write would block) or a link to a device,
and `--check` reads the golden with the one reader, which refuses a FIFO at once. Each is an
error naming the file, exit 2, and the shapes file is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from configbags.evolve import matrix

SHAPES = "package: configbags.generated\ngolden: {golden}\nshapes:\n  a: {{argv: [--model-path, /m]}}\n"


def _shapes(tmp_path: Path, golden: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(SHAPES.format(golden=golden))
    return path


@pytest.mark.parametrize(("golden", "make", "words"), [
    ("matrix.yaml", None, "is the shapes file itself"),
    ("self-link.yaml", lambda p: p.symlink_to("matrix.yaml"), "is the shapes file itself"),
    ("fifo.jsonl", lambda p: os.mkfifo(p), "not a regular file"),
    ("zero.jsonl", lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
    (".", None, "it is a folder"),
])
def test_write_refuses_a_golden_it_would_lose_something_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], golden: str, make: object, words: str
) -> None:
    path = _shapes(tmp_path, golden)
    if callable(make):
        make(tmp_path / golden)
    before = path.read_text()
    assert matrix.main(["--shapes", str(path), "--write"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    assert path.read_text() == before


def test_check_refuses_a_fifo_golden_without_waiting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "fifo.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    assert matrix.main(["--shapes", str(path), "--check"]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err


def test_a_golden_of_its_own_is_written_and_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _shapes(tmp_path, "golden.jsonl")
    assert matrix.main(["--shapes", str(path), "--write"]) == 0
    assert matrix.main(["--shapes", str(path), "--check"]) == 0
    assert f"wrote {tmp_path / 'golden.jsonl'}" in capsys.readouterr().out
