"""A shell command's words as the shell splits them before it expands anything: `shlex`
for the quoting and the operators, with each expansion (`$NAME`, `${...}`, `$(...)`,
`$((...))`, a backquoted command) kept whole inside its word, spaces and parentheses
within it too, as the shell keeps it: `--api-key $(cat /run/key) --tp-size 2` is four
words. shlex alone would cut `$(cat /run/key)` at its space and at `(`, ending the
command there.

Each word also says whether it holds an expansion written outside quotes: the shell
splits the value of such an expansion into any number of words at run time, so what the
word stands for is known only then (`$ARGS`)."""

from __future__ import annotations

import re
import shlex

import attrs

_OPEN = {"(": ")", "{": "}"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = frozenset("@*#?$!-0123456789")  # `$@`, `$1`, `$?`: the script's own arguments and status
_WORD_START = frozenset(" \t\n;&|()<>")


@attrs.frozen
class Word:
    text: str  # as written, quotes removed
    splits: str = ""  # the first expansion outside quotes, shown without its value (`$ARGS`, `$(...)`); "" none


@attrs.frozen
class _Expansion:
    text: str
    shown: str  # "" for one whose value is one word (`$((1+1))`) or the script's own arguments (`$@`)


def _skip_quoted(text: str, i: int) -> int:
    """The index after the quoted string, backquoted command or escape starting at `i`."""
    quote = text[i]
    if quote == "\\":
        return i + 2
    j = i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" and quote != "'" else 1
    if j >= len(text):
        raise ValueError("no closing quotation")  # shlex's word: the caller reads the next line
    return j + 1


def _closing(text: str, i: int) -> int:
    """The index after the `)` or `}` closing the bracket at `i`, quotes and nested
    brackets inside it skipped."""
    close, depth, j = _OPEN[text[i]], 1, i + 1
    while j < len(text):
        c = text[j]
        if c in "\\'\"`":
            j = _skip_quoted(text, j)
            continue
        if c == text[i]:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError("no closing bracket")


def _expansion(text: str, i: int, quoted: bool) -> tuple[_Expansion, int] | None:
    """The expansion starting with the `$` or backquote at `i`, and the index after it."""
    if text[i] == "`":
        end = _skip_quoted(text, i)
        return _Expansion(text[i:end], "" if quoted else "$(...)"), end
    nxt = text[i + 1:i + 2]
    if nxt in _OPEN:
        end = _closing(text, i + 1)
        body = text[i:end]
        if body.startswith("$(("):
            return _Expansion(body, ""), end  # arithmetic: a number
        if nxt == "(":
            return _Expansion(body, "" if quoted else "$(...)"), end
        name = _NAME.match(text, i + 2)
        return _Expansion(body, "" if quoted or name is None else f"${name.group()}"), end
    if nxt and nxt in _SPECIAL:
        return _Expansion(text[i:i + 2], ""), i + 2
    name = _NAME.match(text, i + 1)
    if name is None:
        return None  # a lone `$`, or `$'...'`: no expansion
    return _Expansion(text[i:name.end()], "" if quoted else f"${name.group()}"), name.end()


def _masked(text: str) -> tuple[str, str, list[_Expansion]]:
    """`text` with each expansion replaced by `mark N mark` (a character absent from the
    text), the mark, and the expansions in order. Raises ValueError for a quote or an
    expansion left open (it continues on the next line)."""
    mark = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)
    out: list[str] = []
    found: list[_Expansion] = []
    quoted = False  # inside double quotes
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" or (c == "'" and not quoted):
            end = _skip_quoted(text, i)
        elif c == '"':
            quoted, end = not quoted, i + 1
        elif c == "#" and not quoted and (i == 0 or text[i - 1] in _WORD_START):
            end = text.find("\n", i)  # a comment: nothing in it expands
            end = len(text) if end < 0 else end
        elif c in "$`" and (expansion := _expansion(text, i, quoted)) is not None:
            found.append(expansion[0])
            out.append(f"{mark}{len(found) - 1}{mark}")
            i = expansion[1]
            continue
        else:
            end = i + 1
        out.append(text[i:end])
        i = end
    if quoted:
        raise ValueError("no closing quotation")
    return "".join(out), mark, found


def shell_words(text: str) -> list[Word]:
    """The words and operators (`;`, `&&`, `|`, ...) of shell text, comments left out.
    Raises ValueError for a quote or expansion left open, as shlex does."""
    masked, mark, found = _masked(text)
    lexer = shlex.shlex(masked, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    placeholder = re.compile(f"{mark}([0-9]+){mark}")
    words = []
    for word in lexer:
        used = [found[int(m.group(1))] for m in placeholder.finditer(word)]
        text_of = placeholder.sub(lambda m: found[int(m.group(1))].text, word)
        words.append(Word(text_of, next((e.shown for e in used if e.shown), "")))
    return words
