"""`configbags lint` over launch argv built in steps: a Python list started as a literal
and grown with `+=`, `.extend`, `.append` or `+` of literals is one launch line, a spread
`*args` of such a list is its words, `"...".split()`/`shlex.split("...")` of a literal
is its words; a bash array assigned literally and given as `"${ARGS[@]}"` is its words.
An f-string's field is one word of unknown value, never a missing one. Anything else
stays as it was (`lint-unchecked` where words cannot be placed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_case import bundled_view, found_in

from configbags.evolve.view import SchemaView

LAUNCH = '["python", "-m", "sglang.launch_server", "--model-path", "m"]'


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()


def _found(tmp_path: Path, view: SchemaView, name: str, body: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / name, body, view)


@pytest.mark.parametrize("body", [
    f'cmd = {LAUNCH}\ncmd += ["--tp-sise", "2"]\nsubprocess.run(cmd)\n',
    f'cmd = {LAUNCH}\ncmd.extend(["--tp-sise", "2"])\nsubprocess.run(cmd)\n',
    f'cmd = {LAUNCH}\ncmd = cmd + ["--tp-sise", "2"]\n',
    f'def main():\n    cmd = {LAUNCH}\n    if debug:\n        cmd += ["--log-level", "debug"]\n'
    f'    cmd.append("--tp-sise")\n    return cmd\n',
    'args = ["--model-path", "m"]\nargs += ["--tp-sise", "2"]\n'
    'subprocess.run(["python", "-m", "sglang.launch_server", *args])\n',
    'subprocess.run(["python", "-m", "sglang.launch_server"]\n               + ["--tp-sise", "2"])\n',
    'cmd = "python -m sglang.launch_server --model-path m".split() + ["--tp-sise", "2"]\n',
    'cmd = shlex.split("python -m sglang.launch_server") + ["--model-path", "m", "--tp-sise", "2"]\n',
])
def test_an_argv_built_in_steps_is_one_launch_line(tmp_path: Path, view: SchemaView, body: str) -> None:
    assert [(rule, subject) for _, rule, subject in _found(tmp_path, view, "launch.py", body)] == [
        ("lint-unknown", "--tp-sise")]


def test_a_step_in_a_branch_is_not_a_flag_given_twice(tmp_path: Path, view: SchemaView) -> None:
    body = (f'cmd = {LAUNCH}\nif big:\n    cmd += ["--api-key", "k1"]\nelse:\n    cmd += ["--api-key", "k2"]\n'
            f'ok = {LAUNCH}\nok += ["--api-key", "k1"]\nok += ["--api-key", "k2"]\n')
    # both branches cannot run together; the straight line gives the secret twice
    assert _found(tmp_path, view, "launch.py", body) == [(8, "lint-bad-value", "--api-key")]


def test_a_list_changed_otherwise_or_grown_by_unknown_words_stays_as_it_was(tmp_path: Path,
                                                                               view: SchemaView) -> None:
    body = (f'cmd = {LAUNCH}\ncmd.insert(1, "-u")\ncmd += ["--tp-sise", "2"]\n'
            f'two = {LAUNCH}\ntwo += extra\n')
    assert _found(tmp_path, view, "launch.py", body) == [(5, "lint-unchecked", "*extra")]


@pytest.mark.parametrize("body", [
    'subprocess.run(f"python -m sglang.launch_server --model-path {m} --tp-sise {tp}", shell=True)\n',
    'subprocess.run(["bash", "-c", f"python -m sglang.launch_server --model-path {m} --tp-sise 1"])\n',
    'subprocess.run(["python", "-m", "sglang.launch_server", f"--model-path={m}", f"--tp-sise={n}"])\n',
])
def test_an_f_string_field_is_a_value_never_a_missing_one(tmp_path: Path, view: SchemaView, body: str) -> None:
    assert _found(tmp_path, view, "launch.py", body) == [(1, "lint-unknown", "--tp-sise")]


def test_an_f_string_field_as_a_flags_value_passes(tmp_path: Path, view: SchemaView) -> None:
    body = 'subprocess.run(["python", "-m", "sglang.launch_server", "--model-path", f"{m}", "--tp-size", f"{n}"])\n'
    assert _found(tmp_path, view, "launch.py", body) == []


def test_environment_updates_are_checked(tmp_path: Path, view: SchemaView) -> None:
    body = 'os.environ.update(SGLANG_TP_SISE="2")\nos.environ.update({"SGLANG_TP_SISE": "2"})\nos.putenv("SGLANG_TP_SISE", "3")\n'
    assert [line for line, _, _ in _found(tmp_path, view, "launch.py", body)] == [1, 2, 3]


@pytest.mark.parametrize(("body", "line"), [
    ('ARGS=(--model-path m --tp-sise 3)\npython -m sglang.launch_server "${ARGS[@]}"\n', 1),
    ('declare -a ARGS=(\n  --model-path m\n  --tp-sise 3\n)\npython -m sglang.launch_server "${ARGS[@]}"\n', 3),
    ('ARGS=(--model-path m)\nARGS+=(--tp-sise 3)\nexec python -m sglang.launch_server "${ARGS[@]}"\n', 2),
])
def test_a_bash_array_given_quoted_is_its_words(tmp_path: Path, view: SchemaView, body: str, line: int) -> None:
    assert _found(tmp_path, view, "launch.sh", body) == [(line, "lint-unknown", "--tp-sise")]


def test_an_array_never_closed_is_unreadable_and_subshells_stay_commands(tmp_path: Path, view: SchemaView) -> None:
    assert [rule for _, rule, _ in _found(tmp_path, view, "a.sh", "ARGS=(--tp-size 2\n")] == ["lint-unreadable"]
    assert _found(tmp_path, view, "b.sh", "(cd /srv && python -m sglang.launch_server --tp-sise 2)\n") == [
        (1, "lint-unknown", "--tp-sise")]


def test_a_part_grown_after_use_is_a_line_of_its_own_and_a_list_added_to_itself_ends(tmp_path: Path,
                                                                                      view: SchemaView) -> None:
    body = ('base = ["python", "-m", "sglang.launch_server", "--model-path"]\ncmd = base + ["m"]\n'
            f'b2 = {LAUNCH}\nc2 = b2 + ["--port", "1"]\nb2 += ["--tp-sise", "2"]\n'
            f'c3 = {LAUNCH}\nc3 += c3\n')
    # base alone lacks its value, but only as a part of cmd; c3 twice is what the server is given
    assert _found(tmp_path, view, "launch.py", body) == [(5, "lint-unknown", "--tp-sise"),
                                                         (6, "lint-refused", "launch line")]
