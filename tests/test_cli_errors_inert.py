"""Every command's error line is inert: a file name or flag value the operator typed (or
a file or server quoted back) that holds an ANSI escape, a carriage return or another
control character is shown escaped, so an error can neither forge nor hide a line in a
terminal or a CI log. The message's own line breaks stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from configbags.cli import main
from configbags.runtime.cmdline import print_stderr

SCHEMA = Path(__file__).resolve().parents[1] / "schema"
HOSTILE = "bad\x1b[2K\rok: all clear\x07"


def _commands(folder: Path) -> list[list[str]]:
    name = str(folder / HOSTILE)
    return [
        ["matrix", "--check", "--shapes", name],
        ["plan", "--model-config", name],
        ["explain", "tp_size", "--package", "configbags.generated", "--config", name],
        ["diff", str(SCHEMA), str(SCHEMA), "--allow", name],
        ["rollout", name, name, "--package", "configbags.generated"],
        ["gen", "--schema", name, "--out", str(folder / "out"), "--check"],
        ["import-dataclass", f"{name}:ServerArgs", "--out", str(folder / "schema")],
        ["lint", "--package", "configbags.generated", "--launcher", HOSTILE, name],
    ]


@pytest.mark.parametrize("index", range(8))
def test_a_hostile_name_in_an_error_is_escaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], index: int) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _commands(tmp_path)[index]
    assert _exit_code(argv) != 0
    err = capsys.readouterr().err
    assert err.strip(), argv
    assert not any(c in err for c in "\x1b\r\x07"), (argv, err)
    assert r"\x1b[2K\rok: all clear\x07" in err, (argv, err)


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # an argparse refusal exits: it is still an error line
        return int(exc.code or 0)


def test_each_error_line_is_made_inert(capsys: pytest.CaptureFixture[str]) -> None:
    print_stderr("one: x\ntwo\x1b[0m\r", "\u2028three")
    assert capsys.readouterr().err == "one: x\ntwo\\x1b[0m\\r\n\\u2028three\n"


def test_a_line_break_in_a_name_forges_no_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert _exit_code(["matrix", "--check", "--shapes", "x\n::error::forged"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x\\n::error::forged" in err, err
