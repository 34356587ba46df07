"""`configbags lint` reads a command substitution's body as commands (`evolve.shellwords`):
a `)` ending a `case` pattern, in a comment or in a here-document closes nothing, so the
flags after `$(case ...)` and `$(# ...)` are checked; a process substitution (`<(cmd)`)
is one word of unknown value (a path). An array expansion lint cannot resolve, quoted
(`"${A[@]}"`, `"${A[*]}"`) or not, is `lint-unchecked`, never passed without a word; an
array changed in a way lint does not follow is no longer resolved."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lint_case import LAUNCH, bundled_view, found_in

from configbags.evolve.shellwords import shell_words
from configbags.evolve.view import SchemaView


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()


def _found(tmp_path: Path, view: SchemaView, body: str) -> list[tuple[int, str, str]]:
    return found_in(tmp_path / "run.sh", "#!/bin/bash\n" + body + "\n", view)


BODIES = [  # each once closed the substitution early (or swallowed it): the typo after it passed
    "--api-key $(case x in x) echo k;; esac) --tp-sise 2",
    "--api-key $(case $K in (a|b) cat /a;; *) cat /b;; esac) --tp-sise 2",
    "--api-key $(case x in x) echo $(case y in y) echo k;; esac);; esac) --tp-sise 2",
    "--api-key $(case x in x) (echo k);; esac) --tp-sise 2",
    "--api-key $(echo case) --tp-sise 2",
    "--api-key $(# comment )\n) --tp-sise 2",
    "--api-key $(cat /k # a ) here\n) --tp-sise 2",
    "--api-key $(cat <<X\n)\nX\n) --tp-sise 2",
    "--api-key $(cat <<-'X'\n\t)\n\tX\n) --tp-sise 2",
    '--api-key "$(cat "/k)")" --tp-sise 2',
    "--served-model-name ${NAME:-$(echo '}')} --tp-sise 2",
    "--config <(echo x) --tp-sise 2",
    "--config <(case x in x) echo y;; esac) --tp-sise 2",
]


@pytest.mark.parametrize("args", BODIES)
def test_the_flags_after_a_substitutions_body_are_checked(tmp_path: Path, view: SchemaView, args: str) -> None:
    found = _found(tmp_path, view, f"{LAUNCH} {args}")
    assert [(rule, subject) for _, rule, subject in found] == [("lint-unknown", "--tp-sise")]


@pytest.mark.parametrize("args", [
    "--config <(echo x) --tp-size 2", "--api-key <(cat /k) --tp-size <(echo 2)",
    "--api-key $(case x in x) echo k;; esac) --tp-size 2",
])
def test_a_process_substitution_is_one_word_of_unknown_value(tmp_path: Path, view: SchemaView, args: str) -> None:
    """No false refusal: `<(echo x)` is no two stray words, nor a key with a space in it."""
    assert _found(tmp_path, view, f"{LAUNCH} {args}") == []


@pytest.mark.parametrize(("text", "words"), [
    ("a $(case x in x) b;; esac) c", ["a", "$(case x in x) b;; esac)", "c"]),
    ("a <(b c) >(d) e<(f)", ["a", "<(b c)", ">(d)", "e<(f)"]),
    ("a $(b # )\n) c", ["a", "$(b # )\n)", "c"]),
])
def test_shell_words_keep_a_substitutions_body_whole(text: str, words: list[str]) -> None:
    assert [w.text for w in shell_words(text)] == words


@pytest.mark.parametrize("text", ["a $(case x in x) b;; )", "a $(b # )", "a $(cat <<X\n)\n)", "a <(b"])
def test_a_body_left_open_reads_on_like_an_open_quote(text: str) -> None:
    with pytest.raises(ValueError):
        shell_words(text)


def test_a_case_left_open_in_a_substitution_is_unreadable_not_passed(tmp_path: Path, view: SchemaView) -> None:
    assert [rule for _, rule, _ in _found(tmp_path, view, f"{LAUNCH} --api-key $(case x in x) b;; ) --tp-sise 2")] \
        == ["lint-unreadable"]


@pytest.mark.parametrize(("body", "subject"), [
    (f'{LAUNCH} "${{ARGS[@]}}"', '"${ARGS[@]}"'),
    (f'{LAUNCH} "${{ARGS[*]}}"', '"${ARGS[*]}"'),
    (f'{LAUNCH} "${{ARGS[@]:1}}"', '"${ARGS[@]}"'),
    (f'ARGS=(--tp-size 2)\nread -ra ARGS <<< "$X"\n{LAUNCH} "${{ARGS[@]}}"', '"${ARGS[@]}"'),
    (f'ARGS=(--tp-size 2)\nif [ -n "$X" ]; then ARGS+=(--tp-sise 3); fi\n{LAUNCH} "${{ARGS[@]}}"', '"${ARGS[@]}"'),
    (f'ARGS=(--tp-size 2)\nARGS[1]=3\n{LAUNCH} "${{ARGS[@]}}"', '"${ARGS[@]}"'),
    (f'ARGS+=(--tp-size 2)\n{LAUNCH} "${{ARGS[@]}}"', '"${ARGS[@]}"'),
    (f'ARGS=(--tp-size 2)\n{LAUNCH} "${{ARGS[*]}}"', '"${ARGS[*]}"'),
])
def test_an_array_lint_cannot_resolve_is_unchecked(tmp_path: Path, view: SchemaView, body: str,
                                                    subject: str) -> None:
    found = _found(tmp_path, view, body)
    assert [(rule, shown) for _, rule, shown in found] == [("lint-unchecked", subject)]
    assert found[0][0] == body.count("\n") + 2


def test_an_array_assigned_here_is_its_words_and_the_flags_after_an_unknown_one_are_checked(
        tmp_path: Path, view: SchemaView) -> None:
    body = (f'ARGS=(--model-path m --tp-sise 3)\npython -m sglang.launch_server "${{ARGS[@]}}"\n'
            f'{LAUNCH} "${{EXTRA[@]}}" --tp-sise 4\n{LAUNCH} --api-key "${{KEYS[*]}}" --tp-size 2 "$@"')
    assert _found(tmp_path, view, body) == [(2, "lint-unknown", "--tp-sise"), (4, "lint-unchecked", '"${EXTRA[@]}"'),
                                            (4, "lint-unknown", "--tp-sise")]


def test_a_body_nested_past_the_recursion_limit_is_unreadable_not_a_crash(tmp_path: Path, view: SchemaView) -> None:
    deep = "$( " * 3000 + ")" * 3000
    # the limit pinned: another test's library in the same worker may have raised it past 3000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        found = _found(tmp_path, view, f"{LAUNCH} --api-key {deep} --tp-sise 2")
    finally:
        sys.setrecursionlimit(limit)
    assert [(line, rule) for line, rule, _ in found] == [(2, "lint-unreadable")]
