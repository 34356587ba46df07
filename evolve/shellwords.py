"""A shell command's words as the shell splits them before it expands anything: `shlex`
for the quoting and the operators, with each expansion (`$NAME`, `${...}`, `$(...)`,
`$((...))`, a backquoted command) kept whole inside its word, spaces and parentheses
within it too, as the shell keeps it: `--api-key $(cat /run/key) --tp-size 2` is four
words. shlex alone would cut `$(cat /run/key)` at its space and at `(`, ending the
command there.

A command substitution's body is read as commands, so a `)` in a comment, in a
here-document or ending a `case` pattern closes nothing: `$(case $m in a) echo k;; esac)`
is one word. A process substitution (`<(cmd)`, `>(cmd)`) is one word too: a path the shell
picks at run time.

Each word also says whether it holds an expansion written outside quotes: the shell
splits the value of such an expansion into any number of words at run time, so what the
word stands for is known only then (`$ARGS`). A quoted array expansion (`"${ARGS[@]}"`)
is said too: it is a word per element of the array."""

from __future__ import annotations

import re
import shlex

import attrs

_OPEN = {"(": ")", "{": "}"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = frozenset("@*#?$!-0123456789")  # `$@`, `$1`, `$?`: the script's own arguments and status
_WORD_START = frozenset(" \t\n;&|()<>")
# `${A[@]}`, `${A[*]}` and the like (`${A[@]:1}`, `${!A[@]}`), not `${#A[@]}` (a count)
_ARRAY_EXPANSION = re.compile(r"\$\{!?([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]")


@attrs.frozen
class Word:
    text: str  # as written, quotes removed
    splits: str = ""  # the first expansion outside quotes, shown without its value (`$ARGS`, `$(...)`); "" none
    # False for a word holding a process substitution (`<(cmd)`): a path the shell picks at run time
    known: bool = True
    # the commands the shell runs to make the word: the bodies of its command and process
    # substitutions (`$(cmd)`, a backquoted one, `<(cmd)`), as written
    commands: tuple[str, ...] = ()


@attrs.frozen
class _Expansion:
    text: str
    shown: str  # "" for one whose value is one word (`$((1+1))`) or the script's own arguments (`$@`)
    literal: bool = False  # an ANSI-C quoted string's text (`$'a b'`): no expansion, its value known here
    command: str | None = None  # a command or process substitution's body: what the shell runs


def _skip_quoted(text: str, i: int) -> int:
    """The index after the quoted string, backquoted command or escape starting at `i`;
    in double quotes a `$(...)` or `${...}` is skipped whole (quotes inside it are its own)."""
    quote = text[i]
    if quote == "\\":
        return i + 2
    ansi_c = quote == "'" and text[i - 1:i] == "$"  # `$'it\'s'`: a backslash escapes the quote
    j = i + 1
    while j < len(text) and text[j] != quote:
        if quote == '"' and text[j] == "$" and text[j + 1:j + 2] in _OPEN:
            j = _closing(text, j + 1)
            continue
        j += 2 if text[j] == "\\" and (quote != "'" or ansi_c) else 1
    if j >= len(text):
        raise ValueError("no closing quotation")  # shlex's word: the caller reads the next line
    return j + 1


def _closing(text: str, i: int) -> int:
    """The index after the `)` or `}` closing the bracket at `i` (after `$`, `<` or `>`),
    quotes and expansions inside it skipped. A command substitution's body is read as
    commands (`_command_end`); `${...}` and `$((...))` count their brackets."""
    if text[i] == "(" and not text.startswith("((", i):
        return _command_end(text, i)
    close, depth, j = _OPEN[text[i]], 1, i + 1
    while j < len(text):
        c = text[j]
        if c in "\\'\"`":
            j = _skip_quoted(text, j)
            continue
        if c == "$" and text[j + 1:j + 2] in _OPEN:
            j = _closing(text, j + 1)
            continue
        if c == text[i]:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError("no closing bracket")


_OPERATOR = re.compile(r";;&|;;|;&|&&|\|\||\|&|[;&|]")
_HEREDOC = re.compile(r"<<(-?)[ \t]*")
# words after which the next word starts a command (where `case` and `esac` are words of the shell)
_LEADING = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{", "time"})


def _command_end(text: str, i: int) -> int:
    """The index after the `)` closing the commands that start with the `(` at `i` (a
    command substitution, a process substitution or a subshell), read as the shell reads
    them: a comment runs to the end of its line, a here-document's lines are its own, and
    in `case WORD in PATTERN) ...;; esac` a pattern's `)` closes nothing. Raises ValueError
    where the commands are left open (the caller reads the next line) or a `case` is left
    open at the `)`, which the shell refuses too."""
    cases: list[str] = []  # each open case: "head" (before `in`), "pattern" or "body"
    heredocs: list[tuple[str, bool]] = []  # (delimiter, tabs stripped) waiting for the next newline
    command = True  # the next word starts a command
    j = i + 1
    while j < len(text):
        c = text[j]
        if c in " \t":
            j += 1
        elif c == "\n":
            j = _heredoc_bodies(text, j + 1, heredocs)
            heredocs = []
            command = True
        elif c == "#":
            j = text.find("\n", j)  # a comment: its `)` closes nothing
            if j < 0:
                raise ValueError("no closing bracket")
        elif (op := _OPERATOR.match(text, j)) is not None:
            if op.group() in (";;", ";&", ";;&") and cases and cases[-1] == "body":
                cases[-1] = "pattern"
            command = not (cases and cases[-1] == "pattern" and op.group() == "|")
            j = op.end()
        elif c == "(" and cases and cases[-1] == "pattern" and command:
            j, command = j + 1, False  # a pattern's optional `(`
        elif c == "(":
            j, command = _command_end(text, j), False  # a subshell
        elif c == ")":
            if not cases:
                return j + 1
            if cases[-1] != "pattern":
                raise ValueError("a case left open")
            cases[-1], command, j = "body", True, j + 1
        elif (heredoc := _HEREDOC.match(text, j)) is not None and not text.startswith("<<<", j):
            end = _word_end(text, heredoc.end())
            delimiter = re.sub(r"[\\'\"]", "", text[heredoc.end():end])
            heredocs.append((delimiter, heredoc.group(1) == "-"))
            j = end
        elif c in "<>":
            # a process substitution, or a redirection (its word follows)
            j, command = (_command_end(text, j + 1), False) if text[j + 1:j + 2] == "(" else (j + 1, command)
        else:
            end = _word_end(text, j)
            command, j = _case_word(cases, text[j:end], command), end
    raise ValueError("no closing bracket")


def _case_word(cases: list[str], word: str, command: bool) -> bool:
    """Follow `case WORD in ... esac` over one word (`cases` changed in place); whether the
    next word starts a command."""
    state = cases[-1] if cases else ""
    if command and word == "case":
        cases.append("head")
    elif state == "head" and word == "in":
        cases[-1] = "pattern"
        return True  # a pattern's optional `(` may follow
    elif word == "esac" and (state == "pattern" or (state == "body" and command)):
        cases.pop()
    return command and word in _LEADING


def _word_end(text: str, j: int) -> int:
    """The index after the word starting at `j`: quotes and expansions in it skipped."""
    while j < len(text) and text[j] not in _WORD_START:
        if text[j] in "\\'\"`":
            j = _skip_quoted(text, j)
        elif text[j] == "$" and text[j + 1:j + 2] in _OPEN:
            j = _closing(text, j + 1)
        else:
            j += 1
    return j


def _heredoc_bodies(text: str, j: int, heredocs: list[tuple[str, bool]]) -> int:
    """The index after the here-documents that start at `j`, each up to its delimiter line."""
    for delimiter, strip in heredocs:
        while True:
            end = text.find("\n", j)
            if end < 0:
                raise ValueError("a here-document left open")
            line = text[j:end]
            j = end + 1
            if (line.lstrip("\t") if strip else line) == delimiter:
                break
    return j


def _expansion(text: str, i: int, quoted: bool) -> tuple[_Expansion, int] | None:
    """The expansion starting with the `$`, backquote, `<(` or `>(` at `i`, and the index
    after it."""
    if text[i] == "`":
        end = _skip_quoted(text, i)
        return _Expansion(text[i:end], "" if quoted else "$(...)", command=text[i + 1:end - 1]), end
    nxt = text[i + 1:i + 2]
    if text[i] in "<>":
        end = _command_end(text, i + 1)
        # a process substitution: one word, a path
        return _Expansion(text[i:end], "", command=text[i + 2:end - 1]), end
    if nxt in _OPEN:
        end = _closing(text, i + 1)
        body = text[i:end]
        if body.startswith("$(("):
            return _Expansion(body, ""), end  # arithmetic: a number
        if nxt == "(":
            return _Expansion(body, "" if quoted else "$(...)", command=body[2:-1]), end
        if (array := _ARRAY_EXPANSION.match(body)) is not None:
            # each element a word (`[@]`; `[*]` unquoted) or all of them in one (`"${A[*]}"`)
            return _Expansion(body, f'"${{{array.group(1)}[{array.group(2)}]}}"' if quoted
                              else f"${array.group(1)}"), end
        name = _NAME.match(text, i + 2)
        return _Expansion(body, "" if quoted or name is None else f"${name.group()}"), end
    if nxt and nxt in _SPECIAL:
        return _Expansion(text[i:i + 2], ""), i + 2
    name = _NAME.match(text, i + 1)
    if name is None:
        return None  # a lone `$`, or `$'...'`: no expansion
    return _Expansion(text[i:name.end()], "" if quoted else f"${name.group()}"), name.end()


# `>`, `2>&1`, `&>>`, `<<<`, `<<-` ...: the operator of a redirection (its word follows)
_REDIRECTION = re.compile(r"&>>?|>>|>&|>\||<<<|<<-?|<>|<&|[<>]")


def _redirection(text: str, i: int, out: list[str]) -> int | None:
    """The index after the redirection whose operator starts at `i` (outside quotes), its
    word included (`> /dev/null`, `2>&1`, `> >(tee log)`), or None where none starts there.
    A file descriptor's digits before it, when they are all of their word so far (`2>`,
    never `a2>`), are its own: taken back from `out`, one piece per character."""
    found = _REDIRECTION.match(text, i)
    if found is None or text[i + 1:i + 2] == "(" or (text[i] == "&" and text[i + 1:i + 2] != ">"):
        return None  # a process substitution `<(cmd)`, or `&` alone (an operator)
    digits = len(text[:i]) - len(text[:i].rstrip("0123456789"))
    start = i - digits
    if digits and (start == 0 or text[start - 1] in _WORD_START) and text[start - 2:start - 1] != "\\" \
            and "".join(out[-digits:]) == text[start:i]:
        del out[-digits:]
    j = found.end()
    while j < len(text) and text[j] in " \t":
        j += 1
    if text[j:j + 2] in ("<(", ">("):
        return _command_end(text, j + 1)
    return _word_end(text, j)


def _ansi_c(text: str, i: int) -> tuple[str, int]:
    """The text of the ANSI-C quoted string `$'...'` starting at `i` as bash decodes it
    (`\\n`, `\\x41`, `\\101`, `\\u00e9`, `\\cA`, `\\'`), and the index after it."""
    end = _skip_quoted(text, i + 1)
    return _ANSI_C_ESCAPE.sub(_ansi_c_escape, text[i + 2:end - 1]), end


_ANSI_C_ESCAPE = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
                            r"|U([0-9A-Fa-f]{1,8})|c(.)|)", re.DOTALL)
_ANSI_C_LETTERS = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v"}


def _ansi_c_escape(found: re.Match[str]) -> str:
    letter, octal, hexa, short, long, control = found.groups()
    if letter is not None:
        return _ANSI_C_LETTERS.get(letter, letter)
    if control is not None:  # `\cA`: control-A; `\c?`: DEL
        return chr(ord(control.upper()) ^ 0x40) if control != "?" else "\x7f"
    code = next((int(v, b) for v, b in ((octal, 8), (hexa, 16), (short, 16), (long, 16)) if v is not None), None)
    if code is None:
        return found.group()  # a backslash before anything else stays, as bash keeps it
    return chr(code & 0xFF if octal is not None else code) if code <= 0x10FFFF else found.group()


def _masked(text: str, redirections: bool = False) -> tuple[str, str, list[_Expansion]]:
    """`text` with each expansion replaced by `mark N mark` (a character absent from the
    text), the mark, and the expansions in order; an ANSI-C quoted string (`$'a\\tb'`) is
    one too, of its literal text; with `redirections`, each redirection is left out (a
    space). Raises ValueError for a quote or an expansion left open (it continues on the
    next line)."""
    mark = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)
    out: list[str] = []
    found: list[_Expansion] = []
    quoted = False  # inside double quotes
    i = 0
    while i < len(text):
        c = text[i]
        if c == "$" and text[i + 1:i + 2] == "'" and not quoted:
            literal, i = _ansi_c(text, i)
            found.append(_Expansion(literal, "", literal=True))
            out.append(f"{mark}{len(found) - 1}{mark}")
            continue
        if redirections and c in "<>&" and not quoted and (after := _redirection(text, i, out)) is not None:
            out.append(" ")  # the command never sees it; it ends the word before it
            i = after
            continue
        if c == "\\" or (c == "'" and not quoted):
            end = _skip_quoted(text, i)
        elif c == '"':
            quoted, end = not quoted, i + 1
        elif c == "#" and not quoted and (i == 0 or text[i - 1] in _WORD_START):
            end = text.find("\n", i)  # a comment: nothing in it expands
            end = len(text) if end < 0 else end
        elif (c in "$`" or (c in "<>" and text[i + 1:i + 2] == "(" and not quoted)) \
                and (expansion := _expansion(text, i, quoted)) is not None:
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


def shell_words(text: str, *, redirections: bool = False) -> list[Word]:
    """The words and operators (`;`, `&&`, `|`, ...) of shell text, comments left out;
    with `redirections` (text a shell runs), without its redirections (`2>&1`, `> log`),
    which the shell takes before it runs the command. Raises ValueError for a quote or
    expansion left open, as shlex does, and for one nested past Python's recursion limit
    (read as never closed, never a crash)."""
    try:
        masked, mark, found = _masked(text, redirections)
    except RecursionError:
        raise ValueError("nested too deep") from None
    lexer = shlex.shlex(masked, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    placeholder = re.compile(f"{mark}([0-9]+){mark}")
    words = []
    for word in lexer:
        used = [found[int(m.group(1))] for m in placeholder.finditer(word)]
        text_of = placeholder.sub(lambda m: found[int(m.group(1))].text, word)
        words.append(Word(text_of, next((e.shown for e in used if e.shown), ""),
                          not any(e.text.startswith(("<(", ">(")) and not e.literal for e in used),
                          tuple(e.command for e in used if e.command is not None)))
    return words
