"""A usage error for words the parser does not take names the unknown flags only, with a
did-you-mean, and never echoes a value: after a mistyped secret flag (`--api_key S`) the
next word is the secret."""

from __future__ import annotations

import argparse

import pytest

from configbags.generated.server_args import ServerArgs
from configbags.runtime.cmdline import UsageErrors

SECRET = "s3cret-key-9f2e"


@pytest.mark.parametrize(("argv", "named"), [
    (["--api_key", SECRET], "--api_key (did you mean '--api-key'?)"),
    (["--api-keys", SECRET], "--api-keys (did you mean '--api-key'?)"),
    ([f"--apikey={SECRET}"], "--apikey (did you mean '--api-key'?)"),
    (["--api_key", f"-{SECRET}"], "--api_key (did you mean '--api-key'?)"),
    ([SECRET], "1 word not taken by any flag"),
])
def test_an_unknown_flag_is_named_and_its_value_never_shown(
        capsys: pytest.CaptureFixture[str], argv: list[str], named: str) -> None:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", *argv], environ={})
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert named in err and SECRET not in err


def test_a_command_parser_names_unknown_flags_the_same_way(capsys: pytest.CaptureFixture[str]) -> None:
    parser = UsageErrors(prog="configbags demo", allow_abbrev=False)
    parser.add_argument("--schema")
    parser.add_argument("--hidden", help=argparse.SUPPRESS)
    with pytest.raises(SystemExit):
        parser.parse_args(["--shema", SECRET, "--hidden-x=value-7", "-q"])
    err = capsys.readouterr().err
    assert "unrecognized flags --shema (did you mean '--schema'?), --hidden-x, -q; 1 word not taken" in err
    assert SECRET not in err and "value-7" not in err
    assert parser.parse_args(["--schema", "s"]).schema == "s"


@pytest.mark.parametrize("word", ["1_000", "٣", "１２", " 0x", "1e3"])
def test_a_tool_flags_numbers_follow_the_server_flags_grammar(capsys: pytest.CaptureFixture[str], word: str) -> None:
    """`serve --ranks`, `ratchet check --jobs` and the like: what a server flag refuses."""
    parser = UsageErrors(prog="tool")
    parser.add_argument("--count", type=int)
    parser.add_argument("--share", type=float)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--count", word])
    assert info.value.code == 2 and "argument --count" in capsys.readouterr().err
    assert parser.parse_args(["--count", "0x10", "--share", "1e-3"]) == argparse.Namespace(count=16, share=0.001)


@pytest.mark.parametrize("jobs", ["0", "-1", "65", "100000", "3000000000", "99999999999999999999"])
def test_ratchet_jobs_is_bounded_before_any_worker_starts(capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    """A pool of 100000 processes floods the machine, one past a C int is a traceback in
    multiprocessing, and 0 or -1 mean nothing: each is a usage error naming the flag."""
    from configbags.migrate.cli import main as ratchet

    with pytest.raises(SystemExit) as info:
        ratchet(["scan", "--jobs", jobs])
    assert info.value.code == 2 and "argument --jobs" in capsys.readouterr().err
