"""Round sixteen: a leaf given twice on the command line (`--tp-size 2 --tp-size 4`, a flag
and its alias `--tensor-parallel-size 4`, `--x --no-x`) kept the last value in silence,
while every other layer says when one value replaces another; and lint found nothing on
such a line. The server warns once per process, lint reports `lint-repeated`; a secret's
flag twice stays refused."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from lint_case import LAUNCH, bundled_view, found_in

from configbags.generated.server_args import ServerArgs
from configbags.runtime import record as record_module
from configbags.runtime.errors import RecordError


@pytest.fixture(autouse=True)
def _fresh(caplog: pytest.LogCaptureFixture) -> object:
    record_module._warned.clear()
    caplog.set_level(logging.WARNING, logger="configbags")
    yield
    record_module._warned.clear()


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "times on the command line" in r.getMessage()]


@pytest.mark.parametrize(("flags", "leaf", "message"), [
    (["--tp-size", "2", "--tp-size", "4"], "tp_size", "tp_size is given 2 times on the command line "
                                                      "(--tp-size, --tp-size): the last wins, 4"),
    (["--tp-size", "2", "--tensor-parallel-size=4"], "tp_size", "(--tp-size, --tensor-parallel-size): the last wins, 4"),
    (["--disable-radix-cache", "--no-disable-radix-cache"], "disable_radix_cache", "the last wins, False"),
])
def test_a_leaf_given_twice_warns_naming_both_spellings_and_the_value_kept(
        caplog: pytest.LogCaptureFixture, flags: list[str], leaf: str, message: str) -> None:
    record = ServerArgs.from_cli(["--model-path", "m", *flags])
    record_again = ServerArgs.from_cli(["--model-path", "m", *flags])
    assert getattr(record, leaf) == getattr(record_again, leaf)
    [line] = said(caplog)  # once per process
    assert message in line, line


def test_a_leaf_given_once_and_a_flag_inside_a_value_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    ServerArgs.from_cli(["--model-path", "m", "--tp-size", "2", "--weight-version=--tp-size"])
    assert said(caplog) == []


def test_a_secret_given_twice_stays_refused() -> None:
    with pytest.raises((RecordError, SystemExit)):
        ServerArgs.from_cli(["--model-path", "m", "--api-key", "k1-abcdef", "--api-key", "k2-abcdef"])


def test_lint_reports_a_leaf_given_twice_in_one_launch_line(tmp_path: Path) -> None:
    text = f"{LAUNCH} --tp-size 2 --tensor-parallel-size 4 --disable-radix-cache --no-disable-radix-cache\n"
    findings = found_in(tmp_path / "run.sh", text, bundled_view())
    assert sorted((rule, subject) for _, rule, subject in findings) == [
        ("lint-repeated", "--no-disable-radix-cache"), ("lint-repeated", "--tensor-parallel-size")], findings
    assert found_in(tmp_path / "once.sh", f"{LAUNCH} --tp-size 2\n", bundled_view()) == []
    # round seventeen: the same flag twice, on one line
    twice = found_in(tmp_path / "twice.sh", f"{LAUNCH} --tp-size 2 --tp-size 4 --page-size 16 --page-size 32\n",
                     bundled_view())
    assert sorted(subject for _, rule, subject in twice if rule == "lint-repeated") == ["--page-size", "--tp-size"]


@pytest.mark.parametrize(("typed", "hint"), [("--tp", "'--tp-size'"), ("--dp", "'--dp-size'"),
                                             ("--tp-sise", "'--tp-size'")])
def test_a_short_spelling_is_pointed_at_the_flags_it_begins(typed: str, hint: str) -> None:
    """Round eighteen: SGLang's short `--tp`, `--dp`, `--pp` got "did you mean '--ep'?",
    the alias of another leaf (ep_size): following the hint set the wrong size."""
    import argparse

    from configbags.runtime.cmdline import unrecognized

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    message = unrecognized(parser, [typed])
    assert f"(did you mean {hint}" in message and "'--ep'" not in message, message
