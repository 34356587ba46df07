"""`configbags lint` with hostile launch lines, round twenty-three: a shell's redirections
are no words of the command (finding 6); a shell's `-c` script runs the words after its
`$0` where it says `"$@"` (finding 7); `declare -x`, `typeset -x`, `local -x` and
`export --` export what they assign (finding 8); ANSI-C quoting `$'...'` is literal text
(finding 9); Python's varargs launchers and its other environment spellings (`|=`,
`dict(os.environ, K=V)`) are read (finding 10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_case import BUNDLED, LAUNCH, bundled_view, found_in

from configbags.evolve import lint
from configbags.evolve.shellwords import shell_words

UNKNOWN = [(2, "lint-unknown", "--tp-sise")]
BAD_LEVEL = [(2, "lint-bad-value", "SGLANG_LOG_LEVEL")]


def _script(tmp_path: Path, line: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / "run.sh", f"#!/bin/bash\n{line}\n", bundled_view())


# -- finding 6: redirections ---------------------------------------------------------------
@pytest.mark.parametrize("redirect", [
    "2>&1", ">log 2>&1", "> /dev/null", "&> log", "&>>log", "2>&1 | tee log", ">>log", "2> err.log",
    "</dev/null", "<<< x", "1>&2", "2>&-", ">| log", "> >(tee log)", '>"$LOG" 2>&1', "> $(date).log",
])
def test_a_redirection_is_no_word_of_the_launch_line(tmp_path: Path, redirect: str) -> None:
    assert _script(tmp_path, f"{LAUNCH} --tp-size 2 {redirect}") == []
    if "|" not in redirect:
        assert _script(tmp_path, f"{LAUNCH} {redirect} --tp-sise 2") == UNKNOWN


@pytest.mark.parametrize("line", [f">log {LAUNCH} --tp-size 2", f"2>&1 {LAUNCH} --tp-size 2",
                                  f"{LAUNCH} --tp-size=2>log", f"exec {LAUNCH} --tp-size 2 2>&1"])
def test_a_redirection_before_or_inside_a_word_is_left_out(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == []


def test_a_digit_redirection_takes_the_flags_value_away(tmp_path: Path) -> None:
    """`--tp-size 2>/dev/null`: the shell gives the server `--tp-size` with no value."""
    assert _script(tmp_path, f"{LAUNCH} --tp-size 2>/dev/null") == [(2, "lint-bad-value", "--tp-size")]


@pytest.mark.parametrize("line", [f"{LAUNCH} --tp-size 2 '2>&1'", f'{LAUNCH} --tp-size 2 "> log"',
                                  f"{LAUNCH} --tp-size 2 \\> log"])
def test_a_quoted_redirection_is_a_word(tmp_path: Path, line: str) -> None:
    assert [f[1] for f in _script(tmp_path, line)] == ["lint-refused"]


def test_a_redirection_in_a_shells_script_in_a_manifest(tmp_path: Path) -> None:
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: s\n    image: img\n"
        '    command: ["/bin/sh", "-c"]\n'
        '    args: ["python3 -m sglang.launch_server --model-path m --tp-size 2 2>&1 | tee /log"]\n')
    assert found_in(tmp_path / "pod.yaml", manifest, bundled_view()) == []


def test_shell_words_keep_redirections_unless_asked() -> None:
    """Compose's `command:` string is split shell-like, never run by a shell: its words stay."""
    assert [w.text for w in shell_words("a 2>&1 b")] == ["a", "2", ">&", "1", "b"]
    assert [w.text for w in shell_words("a 2>&1 b > x c", redirections=True)] == ["a", "b", "c"]


# -- finding 7: `sh -c 'exec "$@"' ARG0 CMD...` --------------------------------------------
@pytest.mark.parametrize("line", [
    f"""sh -c 'exec "$@"' _ {LAUNCH} --tp-sise 2""",
    f"""bash -c 'echo start; exec "$@"' -- {LAUNCH} --tp-sise 2""",
    f"""sh -c 'exec "${{@}}"' _ {LAUNCH} --tp-sise 2""",
    """sh -c 'python -m sglang.launch_server "$@"' _ --model-path m --tp-sise 2""",
    f"""tini -- sh -c 'exec "$@"' sh {LAUNCH} --tp-sise 2""",
])
def test_a_shell_scripts_arguments_are_its_dollar_at(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == UNKNOWN


def test_a_shell_script_without_arguments_has_an_empty_dollar_at(tmp_path: Path) -> None:
    assert _script(tmp_path, """sh -c 'python -m sglang.launch_server --model-path m "$@"'""") == []
    assert _script(tmp_path, """sh -c 'python -m sglang.launch_server --model-path m --tp-size "$@"' _""") \
        == [(2, "lint-bad-value", "--tp-size")]


def test_a_container_running_its_args_through_dollar_at(tmp_path: Path) -> None:
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: t\n    image: img\n"
        '    command: ["/bin/sh", "-c", "exec \\"$@\\"", "--"]\n'
        '    args: ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp-sise", "2"]\n')
    assert found_in(tmp_path / "pod.yaml", manifest, bundled_view()) == [(9, "lint-unknown", "--tp-sise")]


# -- finding 8: the other exporting builtins -----------------------------------------------
@pytest.mark.parametrize("line", [
    "declare -x SGLANG_LOG_LEVEL=bogus", "typeset -x SGLANG_LOG_LEVEL=bogus", "export -- SGLANG_LOG_LEVEL=bogus",
    "declare -rx SGLANG_LOG_LEVEL=bogus", "declare -x -i N=1 SGLANG_LOG_LEVEL=bogus", "local -x SGLANG_LOG_LEVEL=bogus",
    "export A SGLANG_LOG_LEVEL=bogus", "export SGLANG_LOG_LEVEL=bogus",
])
def test_every_exporting_builtin_is_read(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == BAD_LEVEL


@pytest.mark.parametrize("line", ["declare SGLANG_LOG_LEVEL=bogus", "declare +x SGLANG_LOG_LEVEL=bogus",
                                  "export -n SGLANG_LOG_LEVEL=bogus", "declare -p SGLANG_LOG_LEVEL"])
def test_a_declaration_that_exports_nothing_sets_no_variable(tmp_path: Path, line: str) -> None:
    assert _script(tmp_path, line) == []


# -- finding 9: ANSI-C quoting -------------------------------------------------------------
@pytest.mark.parametrize(("value", "why"), [("$'a b'", "whitespace"), ("$'a\\nb'", "whitespace"),
                                            ("$'a\\x01b'", "control characters"), ("$'a\\cAb'", "control characters"),
                                            ("x$'\\ty'", "whitespace")])
def test_an_ansi_c_quoted_key_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str,
                                         why: str) -> None:
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{LAUNCH} --api-key={value}\n")
    assert lint.main([str(tmp_path / "run.sh"), "--schema", str(BUNDLED), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "run.sh:2  --api-key" in out and "lint-bad-value" in out and f"holds {why}" in out, out


@pytest.mark.parametrize(("text", "word"), [
    ("$'a b'", "a b"), ("$'a\\nb'", "a\nb"), ("$'it\\'s'", "it's"), ("$'\\x41\\101\\u00e9\\U0001F600'", "AA\u00e9\U0001F600"),
    ("$'a\\\\nb'", "a\\nb"), ("$'\\e[0m'", "\x1b[0m"), ("$'\\q'", "\\q"), ("\"$'x'\"", "$'x'"), ("a$'b'c", "abc"),
    ("$'\\cA\\c?'", "\x01\x7f"), ("$'\\\"'", '"'),
])
def test_shell_words_read_ansi_c_quoting_as_bash_does(text: str, word: str) -> None:
    assert [(w.text, w.splits) for w in shell_words(text)] == [(word, "")]


def test_an_ansi_c_quoted_value_is_checked_like_any_literal(tmp_path: Path) -> None:
    assert _script(tmp_path, f"{LAUNCH} --tp-size $'two'") == [(2, "lint-bad-value", "--tp-size")]
    assert _script(tmp_path, f"{LAUNCH} $'--tp-sise' 2") == UNKNOWN


def test_an_unclosed_ansi_c_quote_continues_on_the_next_line(tmp_path: Path) -> None:
    assert _script(tmp_path, f"{LAUNCH} --api-key=$'a\\'\nb' --tp-sise 2") \
        == [(2, "lint-bad-value", "--api-key"), *UNKNOWN]


# -- finding 10: Python ---------------------------------------------------------------------
def _python(tmp_path: Path, line: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / "x.py", f"import asyncio, os, subprocess, sys\n{line}\n", bundled_view())


ARGV = '"python", "-m", "sglang.launch_server", "--model-path", "m", "--tp-sise", "2"'


@pytest.mark.parametrize("line", [
    f"asyncio.create_subprocess_exec({ARGV})",
    f"asyncio.create_subprocess_exec({ARGV}, stdout=None)",
    f"loop.subprocess_exec(Protocol, {ARGV})",
    f'os.execlp("python", {ARGV})', f'os.execl("/usr/bin/python", {ARGV})',
    f'os.execle("/usr/bin/python", {ARGV}, {{}})', f'os.spawnlp(os.P_WAIT, "python", {ARGV})',
    f'os.spawnle(os.P_NOWAIT, "/usr/bin/python", {ARGV}, dict(os.environ))',
])
def test_an_argv_given_as_varargs_is_a_launch_line(tmp_path: Path, line: str) -> None:
    assert _python(tmp_path, line) == UNKNOWN


@pytest.mark.parametrize("line", [
    'os.environ |= {"SGLANG_LOG_LEVEL": "bogus"}',
    'subprocess.run(["python", "-m", "sglang.launch_server"], env=dict(os.environ, SGLANG_LOG_LEVEL="bogus"))',
    'subprocess.run(["python", "-m", "sglang.launch_server"], env=os.environ | {"SGLANG_LOG_LEVEL": "bogus"})',
    'subprocess.run(["python", "-m", "sglang.launch_server"], env=dict({"SGLANG_LOG_LEVEL": "bogus"}))',
    'os.environ.update(dict(SGLANG_LOG_LEVEL="bogus"))',
    'os.execle("/usr/bin/python", "python", "-m", "sglang.launch_server", {"SGLANG_LOG_LEVEL": "bogus"})',
])
def test_every_spelling_of_an_environment_mapping_is_read(tmp_path: Path, line: str) -> None:
    assert _python(tmp_path, line) == BAD_LEVEL
