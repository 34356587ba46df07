"""`configbags lint` with hostile launch lines, round twenty-four: a launch line inside a
command substitution (`OUT=$(...)`, backquotes) is linted (finding 11a), and so is one
run by torch's launcher (`torchrun`, `python -m torch.distributed.run`/`launch`, with
`-m MODULE` or a script: finding 11b)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_case import LAUNCH, bundled_view, found_in

from configbags.evolve.shellwords import shell_words

UNKNOWN = [(2, "lint-unknown", "--tp-sise")]


def _script(tmp_path: Path, line: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / "run.sh", f"#!/bin/bash\n{line}\n", bundled_view())


@pytest.mark.parametrize("line", [
    f"OUT=$({LAUNCH} --tp-sise 2)", f"echo $({LAUNCH} --tp-sise 2)", f'echo "$({LAUNCH} --tp-sise 2)"',
    f"echo `{LAUNCH} --tp-sise 2`", f"X=$(nohup {LAUNCH} --tp-sise 2 2>&1)",
    f"export PID=$(echo $({LAUNCH} --tp-sise 2))",
])
def test_a_launch_line_in_a_command_substitution_is_linted(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == UNKNOWN


@pytest.mark.parametrize("line", [f"echo '$({LAUNCH} --tp-sise 2)'", f"echo $(({LAUNCH.count(' ')} + 1))",
                                  f"OUT=$({LAUNCH} --tp-size 2)"])
def test_a_quoted_or_arithmetic_or_good_substitution_finds_nothing(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == []


def test_a_words_substitutions_are_its_commands() -> None:
    [word] = shell_words('"$(a b)`c`"x<(d e)')
    assert word.commands == ("a b", "c", "d e")
    assert shell_words("'$(a)'")[0].commands == ()


@pytest.mark.parametrize("launcher", [
    "torchrun --nproc-per-node 2 --standalone -m sglang.launch_server",
    "torchrun --nproc_per_node=2 --nnodes 1 --module sglang.launch_server",
    "/opt/venv/bin/torchrun --no-python sglang.launch_server",
    "python -m torch.distributed.run --nproc_per_node=2 -m sglang.launch_server",
    "python3 -u -m torch.distributed.launch --use-env --nproc_per_node 2 --module sglang.launch_server",
    "python3.11 -W ignore -um torch.distributed.run -m sglang.launch_server",
    "nohup torchrun --rdzv-backend c10d --rdzv-endpoint h:1 -m sglang.launch_server",
])
def test_a_launch_line_run_by_torchs_launcher_is_linted(tmp_path: Path, launcher: str) -> None:
    assert _script(tmp_path, f"{launcher} --model-path m --tp-sise 2") == UNKNOWN
    assert _script(tmp_path, f"{launcher} --model-path m --tp-size 2") == []


def test_torchrun_of_another_script_is_no_launch_line(tmp_path: Path) -> None:
    assert _script(tmp_path, "torchrun --nproc-per-node 2 train.py --tp-sise 2") == []
