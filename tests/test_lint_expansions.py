"""`configbags lint` reads a launch line's words as the shell splits them before it
expands anything (`evolve.shellwords`): a command substitution, `${...}` or backquoted
command is one word, spaces inside it too, so the flags after it are still checked; an
unquoted expansion standing alone, which becomes words known only at run time, is said
to be unchecked (`lint-unchecked`), never passed without a word; no value is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lint_case import LAUNCH, bundled_view, found_in

from configbags.evolve import lint
from configbags.evolve.shellwords import shell_words
from configbags.evolve.view import SchemaView


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()


def _found(tmp_path: Path, view: SchemaView, body: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / "run.sh", "#!/bin/sh\n" + body + "\n", view)


HIDING = [  # each expansion once stood for the rest of the line: the typo after it passed
    "--api-key $(cat /run/secrets/key) --tp-sise 20", "--tokenizer-path $(cat /m) --tp-sise 30",
    "--api-key $(cat \"/a b\" | tr -d ' ') --tp-sise 2", "--api-key `cat /k` --tp-sise 2",
    "--api-key $(cat $(ls /k)) --tp-sise 2", "--served-model-name ${NAME:-a b} --tp-sise 2",
    "--api-key=$(cat /k) --tp-sise 2", "--tp-sise=$TP", "--tp-sise=${TP:-2}", "--tp-sise={tp}",
    "--api-key $(cat /k) \\\n  --tp-sise 2", "--api-key $(cat\n/k) --tp-sise 2",
]


@pytest.mark.parametrize("args", HIDING)
def test_the_flags_after_an_expansion_are_checked(tmp_path: Path, view: SchemaView, args: str) -> None:
    found = _found(tmp_path, view, f"{LAUNCH} {args}")
    assert [(rule, subject) for _, rule, subject in found] == [("lint-unknown", "--tp-sise")]


@pytest.mark.parametrize("args", [
    "--api-key $(cat /k) --tp-size 2", "--tokenizer-path `cat /m` --tp-size 2", "--tp-size=$TP",
    "--page-size=${P:-8}", "--api-key \"$(cat /k)\" --tp-size $((1+1))", "--tp-size 2 # $(not closed",
])
def test_an_expansion_as_a_flags_value_is_one_unknown_value(tmp_path: Path, view: SchemaView, args: str) -> None:
    """No false refusal: a substitution's words (`/m\\``) are no stray words, and an
    expansion after `=` is the flag's value of any type."""
    assert _found(tmp_path, view, f"{LAUNCH} {args}") == []


@pytest.mark.parametrize(("body", "subject"), [
    ('ARGS="--tp-sise 13"; python -m sglang.launch_server $ARGS', "$ARGS"),
    (f"{LAUNCH} $EXTRA --tp-size 2", "$EXTRA"), (f"{LAUNCH} --tp-size 2 ${{EXTRA:-}}", "$EXTRA"),
    (f"{LAUNCH} $(cat /etc/flags)", "$(...)"), (f"{LAUNCH} --enable-metrics $MORE", "$MORE"),
])
def test_an_unquoted_expansion_standing_alone_is_said_to_be_unchecked(tmp_path: Path, view: SchemaView,
                                                                       body: str, subject: str) -> None:
    [(line, rule, shown)] = _found(tmp_path, view, body)
    assert (line, rule, shown) == (2, "lint-unchecked", subject)


@pytest.mark.parametrize("args", ['"$ARGS"', '"$@"', "$@", "$*", '"${ARGS}"'])
def test_a_quoted_expansion_or_the_scripts_own_arguments_are_left_alone(tmp_path: Path, view: SchemaView,
                                                                        args: str) -> None:
    assert _found(tmp_path, view, f"exec {LAUNCH} {args}") == []


def test_a_python_starred_argv_is_unchecked_too(tmp_path: Path, view: SchemaView) -> None:
    script = tmp_path / "run.py"
    script.write_text("import subprocess\nsubprocess.run(['python', '-m', 'sglang.launch_server', *extra,\n"
                      "                '--tp-sise', '2'])\n")
    assert [(f.line, f.rule, f.subject) for f in lint.lint([script], view)] == [
        (2, "lint-unchecked", "*extra"), (3, "lint-unknown", "--tp-sise")]


@pytest.mark.parametrize("fmt", ["table", "json", "github", "sarif"])
def test_no_output_format_shows_what_an_expansion_holds(tmp_path: Path, fmt: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "a.sh"
    script.write_text(f"#!/bin/sh\n{LAUNCH} --api-key $(printf %s SEKRET1) --tp-sise 2\n"
                      f"{LAUNCH} $(echo --api-key SEKRET2) ${{K:-SEKRET3}}\n")
    assert lint.main([str(script), "--no-cache", "--format", fmt, "--fail-on", "info"]) == 1
    out = capsys.readouterr().out
    assert "SEKRET" not in out and "--tp-sise" in out and "lint-unchecked" in out


def test_the_json_report_of_a_hidden_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "a.sh"
    script.write_text(f"#!/bin/sh\n{LAUNCH} --api-key $(cat /k) --tp-sise 20\n")
    assert lint.main([str(script), "--no-cache", "--json", "--fail-on", "info"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["rule"], finding["subject"], finding["line"]) == ("lint-unknown", "--tp-sise", 2)


@pytest.mark.parametrize(("text", "words"), [
    ("a $(b c) d", [("a", ""), ("$(b c)", "$(...)"), ("d", "")]),
    ('a "$(b c)" `d e`', [("a", ""), ("$(b c)", ""), ("`d e`", "$(...)")]),
    ("x${A:-1 2}y $((1 + 2)) $B '$C' \\$D", [("x${A:-1 2}y", "$A"), ("$((1 + 2))", ""), ("$B", "$B"), ("$C", ""),
                                               ("$D", "")]),
    ("K=$(a; b) c && d # $(e", [("K=$(a; b)", "$(...)"), ("c", ""), ("&&", ""), ("d", "")]),
])
def test_shell_words_keep_each_expansion_whole(text: str, words: list[tuple[str, str]]) -> None:
    assert [(w.text, w.splits) for w in shell_words(text)] == words


@pytest.mark.parametrize("text", ["a $(b", "a `b", "a ${b", 'a "$(b)', "a $(b 'c)"])
def test_an_expansion_left_open_reads_on_like_an_open_quote(text: str) -> None:
    with pytest.raises(ValueError):
        shell_words(text)


def test_an_expansion_never_closed_is_a_finding_that_shows_no_text(tmp_path: Path, view: SchemaView) -> None:
    (tmp_path / "Dockerfile").write_text("FROM x\nCMD python -m sglang.launch_server --api-key SEKRET4 $(oops\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  s:\n    image: i\n    command: \"python -m sglang.launch_server --api-key SEKRET5 'open\"\n")
    (tmp_path / "run.sh").write_text(f"#!/bin/sh\n{LAUNCH} --api-key SEKRET6 `oops\n")
    found = lint.lint([tmp_path], view)
    assert sorted((Path(f.file).name, f.line, f.rule) for f in found) == [
        ("Dockerfile", 2, "lint-unreadable"), ("compose.yaml", 4, "lint-unreadable"), ("run.sh", 2, "lint-unreadable")]
    assert not any("SEKRET" in f.message for f in found)
