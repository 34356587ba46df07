"""black's output for a generated module, computed piece by piece through a memo.

Why: black is linear in the text, an engine-sized schema generates modules of tens of
thousands of lines, and a one-leaf edit changes a handful of them. black's output for a
module is, but for the blank lines between statements, its output for each statement on
its own; and inside a bracketed literal that black explodes one element per line (a
trailing comma after two or more elements) it is its output for each element on its own.
So a module is cut at such seams, each piece goes through black in a small stand-in
context of the same depth (the real enclosing kinds and a plain statement before it, or
marker elements after literal elements), and the results are spliced back.

The blank lines at a seam are black's rules, restated here only for seams where they are
simple: two (nested: one) around a function or class, and the writer's own count, capped at
two (nested: one), between plain statements. Nowhere else is a module cut: a shape these
rules do not cover only makes a piece bigger, and a splice that does not land where
expected formats the module whole.

black passes over a text twice when its first pass changes it, so the stand-ins carry
the blank lines black prints after them, and the renderer prints what it knows runs long
(field-name tuples, imports) as black prints it: a piece black finds in its own shape
costs it one pass. An element of a literal that is provably in black's shape (simple
expressions, laid out as black lays them out: `_in_black_shape`) costs it none: a
generated table's elements are printed so, and black is asked only about the rest.

Every black call goes through a memo keyed by its exact input text, so a piece seen before
(in this run or, with a `formatcache.FormatCache`, an earlier one) costs a look-up.
tests/test_gen_speed_cache.py holds the result equal to `black.format_str` on the whole
module, byte for byte."""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import black
from black.mode import TargetVersion
from black.numerics import normalize_numeric_literal
from black.parsing import InvalidInput
from black.strings import (
    normalize_string_prefix,
    normalize_string_quotes,
    normalize_unicode_escape_sequences,
    str_width,
)
from blib2to3.pgen2 import token  # type: ignore[import-untyped]  # black's own parser, untyped
from blib2to3.pytree import Leaf  # type: ignore[import-untyped]

# Explicit mode, so a user's [tool.black] section can never change generated output.
BLACK_MODE = black.Mode(target_versions={TargetVersion.PY310}, line_length=88)

_INDENT = "    "
_MARK = "__configbags_piece_"
# Cut a run of statements (or of literal elements) before one whose text hashes to 0 mod
# this, so pieces hold a few statements each and an edit moves no cut but its own.
_CUT_EVERY = 16
_BIG = 2000  # characters: a statement this long is a piece of its own anyway
_FULL = 12000  # characters: a piece this long takes no more (so pieces stay small)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass, ast.Delete, ast.Return,
           ast.Raise, ast.Assert, ast.Global, ast.Nonlocal, ast.Break, ast.Continue)
_DISPLAYS = {ast.Dict: "{}", ast.Set: "{}", ast.List: "[]", ast.Tuple: "()"}


class Memo(Protocol):
    def get(self, digest: str) -> str | None: ...
    def put(self, digest: str, formatted: str) -> None: ...
    def depends(self, digest: str, on: list[str]) -> None:
        """The entry `digest` was made from the entries `on` (a module's from its pieces'):
        a memo that drops unused entries keeps those while it keeps this one."""


class DictMemo:
    """A memo for one run only."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def get(self, digest: str) -> str | None:
        return self.entries.get(digest)

    def put(self, digest: str, formatted: str) -> None:
        self.entries[digest] = formatted

    def depends(self, digest: str, on: list[str]) -> None:
        pass


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class _NoSeam(Exception):
    """A formatted piece did not have the shape the splice expects."""


class Module:
    """One module's text, parsed once for both uses: the texts its pass hands black
    (planned ahead, so a caller can format them in parallel) and the pass itself."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.key = digest(source)

    @functools.cached_property
    def body(self) -> list[ast.stmt] | None:
        """Its statements; None where the module is formatted whole (unsafe to cut,
        unparsable: black then gives its own answer or its error, or empty)."""
        try:
            tree = None if _unsafe(self.source) else ast.parse(self.source)
        except (SyntaxError, ValueError):
            return None
        return tree.body if tree is not None and tree.body else None

    def black_inputs(self) -> list[str]:
        """The texts `format` hands to black, in order, found without running black
        (every one follows from the source alone). A module that does not split as
        planned costs its own black run then; the output is the same."""
        if self.body is None:
            return [self.source]
        return _Splitter(self.source, DictMemo()).module_inputs(self.body)

    def format(self, memo: Memo) -> str:
        """Exactly `black.format_str(source, mode=BLACK_MODE)`. The whole module's result
        is memoised too, so an unchanged module is not even parsed."""
        found = memo.get(self.key)
        if found is None:
            pieces = _Touched(memo)
            found = self._pieces(pieces)
            memo.put(self.key, found)
            memo.depends(self.key, sorted(pieces.touched - {self.key}))
        return found

    def _pieces(self, memo: Memo) -> str:
        if self.body is None:
            return _black(self.source, memo)
        try:
            return _Splitter(self.source, memo).module(self.body)
        except (_NoSeam, InvalidInput):
            return _black(self.source, memo)  # the whole module: black's own answer, or its error


def format_module(source: str, memo: Memo) -> str:
    """Exactly `black.format_str(source, mode=BLACK_MODE)`, piece by piece through `memo`."""
    return Module(source).format(memo)


def black_inputs(source: str) -> list[str]:
    """The texts `format_module(source, ...)` hands to black (see `Module.black_inputs`)."""
    return Module(source).black_inputs()


class _Touched:
    """A memo passing through to another, noting every entry looked up or made."""

    def __init__(self, memo: Memo) -> None:
        self.memo = memo
        self.touched: set[str] = set()

    def get(self, digest: str) -> str | None:
        self.touched.add(digest)
        return self.memo.get(digest)

    def put(self, digest: str, formatted: str) -> None:
        self.touched.add(digest)
        self.memo.put(digest, formatted)

    def depends(self, digest: str, on: list[str]) -> None:
        self.memo.depends(digest, on)


def _black(text: str, memo: Memo) -> str:
    key = digest(text)
    found = memo.get(key)
    if found is None:
        found = black.format_str(text, mode=BLACK_MODE)
        memo.put(key, found)
    return found


def _unsafe(source: str) -> bool:
    """Text whose formatting reaches across statements (fmt: directives, form feeds) or
    whose lines ast and this module might count differently."""
    return any(s in source for s in ("\r", "\f", "\v", "fmt:", "fmt :", "yapf:", _MARK))


@dataclass
class _Run:
    stmts: list[ast.stmt]
    gap: int  # blank lines black prints before it


class _Splitter:
    def __init__(self, source: str, memo: Memo) -> None:
        parts = source.split("\n")
        if parts[-1] == "":
            parts.pop()
        self.lines = [part + "\n" for part in parts]
        self.memo = memo
        self.marks = 0

    def module(self, body: list[ast.stmt]) -> str:
        runs = self.runs(body, 0)
        out = []
        for i, run in enumerate(runs):
            start = 0 if i == 0 else _start(run.stmts[0])
            end = len(self.lines) if i == len(runs) - 1 else _end(run.stmts[-1])
            out.append("\n" * run.gap + self.unit(run.stmts, [], start, end))
        return "".join(out)

    def module_inputs(self, body: list[ast.stmt]) -> list[str]:
        """What `module` hands to black (the same walk, so the same marks)."""
        out = []
        runs = self.runs(body, 0)
        for i, run in enumerate(runs):
            start = 0 if i == 0 else _start(run.stmts[0])
            end = len(self.lines) if i == len(runs) - 1 else _end(run.stmts[-1])
            out += self.unit_inputs(run.stmts, [], start, end)
        return out

    def runs(self, body: Sequence[ast.stmt], depth: int) -> list[_Run]:
        """The block cut where black's blank lines are known and the content hash says so."""
        runs = [_Run([body[0]], 0)]
        size = 0
        for i in range(1, len(body)):
            prev, cur = body[i - 1], body[i]
            text = "".join(self.lines[_start(cur):_end(cur)])
            gap = None
            if i > 1 and _cut_before(text, size):  # never right after a block's first statement
                gap = self.gap(prev, cur, depth)
            if gap is None:
                runs[-1].stmts.append(cur)
                size += len(text)
            else:
                runs.append(_Run([cur], gap))
                size = len(text)
        return runs

    def gap(self, prev: ast.stmt, cur: ast.stmt, depth: int) -> int | None:
        between = self.lines[_end(prev):_start(cur)]
        if _end(prev) > _start(cur) or any(line.strip() for line in between):
            return None  # same line, or a comment between: black attaches it, keep together
        if not (_plain_or_def(prev) and _plain_or_def(cur)):
            return None
        if depth == 0 and (_is_string(prev) or _is_string(cur)):
            return None  # module docstring rules
        cap = 2 if depth == 0 else 1
        if isinstance(prev, _DEFS) or isinstance(cur, _DEFS):
            return cap
        return min(len(between), cap)

    def unit(self, stmts: list[ast.stmt], nest: list[ast.stmt], start: int, end: int) -> str:
        """black's output for lines[start:end] (the statements `stmts` inside `nest`)."""
        prefix = _nest_text(nest)
        parts: list[str] = []
        splices: list[_Splice] = []
        cursor = self.walk(stmts, nest, parts, splices, start)
        parts.extend(self.lines[cursor:end])
        out = _black(prefix + _gap_after_stand_in(nest, stmts[0]) + "".join(parts), self.memo)
        if not out.startswith(prefix):
            raise _NoSeam
        out = out[len(prefix):].lstrip("\n")
        for splice in splices:
            out = splice.apply(self, out)
        return out

    def unit_inputs(self, stmts: list[ast.stmt], nest: list[ast.stmt], start: int, end: int) -> list[str]:
        """What `unit` hands to black: its skeleton, then each splice's pieces."""
        parts: list[str] = []
        splices: list[_Splice] = []
        cursor = self.walk(stmts, nest, parts, splices, start)
        parts.extend(self.lines[cursor:end])
        out = [_nest_text(nest) + _gap_after_stand_in(nest, stmts[0]) + "".join(parts)]
        for splice in splices:
            out += splice.inputs(self)
        return out

    def walk(self, stmts: list[ast.stmt], nest: list[ast.stmt], parts: list[str],
             splices: list[_Splice], cursor: int) -> int:
        """Copy the statements' lines into `parts` up to where a piece is cut out, leaving a
        marker there; returns how far the lines are copied."""
        depth = len(nest)
        for stmt in stmts:
            literal = self.literal(stmt, depth) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if literal is not None:
                head, close, groups, is_dict = literal
                mark = self.mark()
                line = _INDENT * (depth + 1) + mark + (": 0,\n" if is_dict else ",\n")
                parts.extend(self.lines[cursor:head + 1])
                parts.append(line + line)
                parts.append(self.lines[close])
                splices.append(_Elements(line, nest, self.lines[head], self.lines[close], groups))
                cursor = close + 1
            elif isinstance(stmt, _DEFS) and _multiline(stmt) and self.indented(stmt.body, depth + 1):
                runs = self.runs(stmt.body, depth + 1)
                cursor = self.walk(runs[0].stmts, [*nest, stmt], parts, splices, cursor)
                if len(runs) > 1 and _ends_plain(stmt) and not self.comment_after(_end(stmt)):
                    parts.extend(self.lines[cursor:_end(runs[0].stmts[-1])])
                    line = _INDENT * (depth + 1) + self.mark() + " = 0\n"
                    parts.append(line)
                    splices.append(_Body(line, [*nest, stmt], runs[1:]))
                    cursor = _end(stmt)
                elif len(runs) > 1:
                    for run in runs[1:]:
                        cursor = self.walk(run.stmts, [*nest, stmt], parts, splices, cursor)
        return cursor

    def comment_after(self, end: int) -> bool:
        """A comment follows (black indents it by the next code, which a cut-out body
        would change)."""
        following = next((line for line in self.lines[end:] if line.strip()), "")
        return following.lstrip().startswith("#")

    def mark(self) -> str:
        self.marks += 1
        return f"{_MARK}{self.marks}__"

    def indented(self, body: list[ast.stmt], depth: int) -> bool:
        ind = _INDENT * depth
        return all(self.lines[_start(s)].startswith(ind) and not self.lines[_start(s)][len(ind)].isspace()
                   for s in body)

    def literal(self, stmt: ast.Assign | ast.AnnAssign, depth: int) -> tuple[int, int, list[_Group], bool] | None:
        """(head line, closing line, element groups, is a dict) of an assignment of a
        bracketed literal written one element per line with a trailing comma, which black
        explodes the same way (its elements `depth + 1` indents deep); None for any other
        shape. A run of elements already in black's shape (`_in_black_shape`) is a group
        of its own that black is not asked about."""
        value = stmt.value
        brackets = _DISPLAYS.get(type(value)) if value is not None else None
        if value is None or brackets is None or value.end_lineno is None:
            return None
        head, close = stmt.lineno - 1, value.end_lineno - 1
        head_line = self.lines[head].rstrip()
        if (stmt.end_lineno != value.end_lineno or value.lineno - 1 != head or close - head < 3
                or not head_line.endswith(brackets[0]) or len(head_line.encode()) - 1 != value.col_offset
                or self.lines[close].strip() != brackets[1]):
            return None
        spans: list[tuple[int, int, ast.expr, ast.expr]] = []
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values, strict=True):
                if key is None:
                    return None
                spans.append((key.lineno - 1, _end(item) - 1, key, item))
        else:
            assert isinstance(value, (ast.Set, ast.List, ast.Tuple))
            for item in value.elts:
                if isinstance(item, ast.Starred):
                    return None
                spans.append((item.lineno - 1, _end(item) - 1, item, item))
        expected = head + 1
        for first, last, start_node, end_node in spans:
            if (first != expected or self.lines[first].encode()[:start_node.col_offset].strip()
                    or self.lines[last].encode()[end_node.end_col_offset or 0:].strip() != b","):
                return None
            expected = last + 1
        if len(spans) < 2 or expected != close:
            return None
        is_dict = isinstance(value, ast.Dict)
        indent = _INDENT * (depth + 1)
        groups: list[_Group] = []
        for first, last, start_node, end_node in spans:
            text = "".join(self.lines[first:last + 1])
            lead = (start_node, ": ") if is_dict else None
            shaped = _in_black_shape(end_node, indent, lead, self.lines[first:last + 1])
            if not groups or groups[-1].shaped != shaped or (not shaped and _cut_before(text, len(groups[-1].text))):
                groups.append(_Group(text, shaped))
            else:
                groups[-1].text += text
        return head, close, groups, is_dict


@dataclass
class _Group:
    """Consecutive elements of a literal, formatted together; `shaped`: each is already
    in black's shape, so black is not asked."""

    text: str
    shaped: bool


class _Splice(Protocol):
    def apply(self, splitter: _Splitter, out: str) -> str: ...
    def inputs(self, splitter: _Splitter) -> list[str]: ...


@dataclass
class _Elements:
    """The elements of one literal, formatted a group at a time between its head line and a
    marker element, spliced over the two marker elements left in the skeleton."""

    line: str  # a marker element, as black prints it
    nest: list[ast.stmt]
    head: str
    close: str
    groups: list[_Group]

    def inputs(self, splitter: _Splitter) -> list[str]:
        prefix = _nest_text(self.nest) + self.head
        return [prefix + self.line + self.line + self.close,
                *(prefix + group.text + self.line + self.close for group in self.groups if not group.shaped)]

    def apply(self, splitter: _Splitter, out: str) -> str:
        at = _find_once(out, self.line + self.line)
        prefix = _nest_text(self.nest) + self.head
        frame = _black(prefix + self.line + self.line + self.close, splitter.memo)
        k = _find_once(frame, self.line + self.line)
        before, after = frame[:k], self.line + frame[k + 2 * len(self.line):]
        formatted = []
        for group in self.groups:
            if group.shaped:  # black's indentation of the elements is the marker's, found above
                formatted.append(group.text)
                continue
            text = _black(prefix + group.text + self.line + self.close, splitter.memo)
            if not (text.startswith(before) and text.endswith(after) and len(text) > len(before) + len(after)):
                raise _NoSeam
            formatted.append(text[len(before):len(text) - len(after)])
        return out[:at] + "".join(formatted) + out[at + 2 * len(self.line):]


@dataclass
class _Body:
    """A block's statements after its first run, formatted run by run in a stand-in block
    of the same depth, spliced over the marker statement left in the skeleton."""

    line: str
    nest: list[ast.stmt]
    runs: list[_Run]

    def inputs(self, splitter: _Splitter) -> list[str]:
        return [text for run in self.runs
                for text in splitter.unit_inputs(run.stmts, self.nest, _start(run.stmts[0]), _end(run.stmts[-1]))]

    def apply(self, splitter: _Splitter, out: str) -> str:
        at = _find_once(out, self.line)
        head = out[:at].rstrip("\n") + "\n"  # black's blank lines before the marker
        body = "".join("\n" * run.gap + splitter.unit(run.stmts, self.nest, _start(run.stmts[0]),
                                                         _end(run.stmts[-1]))
                       for run in self.runs)
        return head + body + out[at + len(self.line):]


def _cut_before(text: str, piece_so_far: int) -> bool:
    """Where the content says so (an edit moves no cut but its own), or the piece is full
    (which may move the following cuts, up to the next the content makes)."""
    return (len(text) > _BIG or piece_so_far + len(text) > _FULL
            or int(digest(text)[:8], 16) % _CUT_EVERY == 0)


def _find_once(text: str, needle: str) -> int:
    at = text.find(needle)
    if at <= 0 or text[at - 1] != "\n" or text.find(needle, at + 1) != -1:
        raise _NoSeam
    return at


def _nest_text(nest: list[ast.stmt]) -> str:
    """A stand-in for the enclosing blocks: their kinds, then a plain statement, so that
    what follows is at the same depth and not its block's first statement."""
    if not nest:
        return ""
    heads = {ast.ClassDef: "class _:", ast.FunctionDef: "def _():", ast.AsyncFunctionDef: "async def _():"}
    lines = [_INDENT * i + heads[type(block)] + "\n" for i, block in enumerate(nest)]
    return "".join(lines) + _INDENT * len(nest) + "_ = 0\n"


def _gap_after_stand_in(nest: list[ast.stmt], first: ast.stmt) -> str:
    """The blank line black prints between the stand-in's plain statement and a nested
    def or class (dropped from the output with the stand-in): written into the input, so
    that black finds the piece as it prints it and makes one pass over it, not two."""
    return "\n" if nest and isinstance(first, _DEFS) else ""


def _start(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = stmt.decorator_list if isinstance(stmt, _DEFS) else []
    return min([stmt.lineno, *(d.lineno for d in decorators)]) - 1


def _end(node: ast.stmt | ast.expr) -> int:
    end: int | None = node.end_lineno
    assert end is not None
    return end


def _multiline(stmt: ast.stmt) -> bool:
    return isinstance(stmt, _DEFS) and stmt.body[0].lineno > stmt.lineno


def _ends_plain(stmt: ast.stmt) -> bool:
    """Its last line is a plain statement's (black treats a line after a one-line stub
    `def f(): ...` differently)."""
    while not isinstance(stmt, _SIMPLE):
        if isinstance(stmt, _DEFS) and not _multiline(stmt):
            return False
        last = _last_statement(stmt)
        if last is None:
            return False
        stmt = last
    return True


def _last_statement(stmt: ast.stmt) -> ast.stmt | None:
    """The statement a compound statement's text ends with (its last clause's last)."""
    if isinstance(stmt, ast.Match):
        return stmt.cases[-1].body[-1] if stmt.cases else None
    for clause in ("finalbody", "orelse", "handlers", "body"):
        block = getattr(stmt, clause, None)
        if block:
            last = block[-1]
            return last.body[-1] if isinstance(last, ast.ExceptHandler) else last
    return None


def _plain_or_def(stmt: ast.stmt) -> bool:
    return isinstance(stmt, _SIMPLE) or (isinstance(stmt, _DEFS) and _ends_plain(stmt))


def _is_string(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and (
        isinstance(stmt.value, ast.JoinedStr)
        or (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, (str, bytes))))


# -- elements already in black's shape -----------------------------------------------------
#
# A generated table's elements (`"leaf": LeafSpec(name="leaf", ...),`, `"leaf": "runtime",`)
# are printed by the renderer as black prints them, and black gives them back unchanged;
# asking it costs most of a cold generation. An element is taken as it is when it equals
# this module's print of its expression tree in black's stable style, which covers only
# simple expressions (constants, names, attributes, calls, tuples, lists, dicts) and two
# layouts, both black's fixed points: the whole element on one line of at most
# `line_length` columns (black's `str_width`) with no magic trailing comma; or, where the
# source explodes a call or display of two or more items one item a line with a trailing
# comma (the magic comma keeps black's split), each item printed the same way one indent
# deeper. Only a lone string constant (after its keyword or key) may run past the limit:
# black has no bracket or delimiter to split it at. Every constant is printed as black
# normalises it (its own normalisers), so a source that spells one otherwise is no match. Anything else, a comment or an odd space
# included, does not match and goes through black. tests/test_gen_speed_cache.py holds the
# shortcut equal to black on hostile element values.

_LINE_LENGTH = BLACK_MODE.line_length


def _in_black_shape(node: ast.expr, indent: str, key: tuple[ast.expr, str] | None, lines: list[str]) -> bool:
    """Is `lines` (an element: `key: node,` or `node,`) exactly black's output for it?"""
    lead = ""
    if key is not None:
        key_text = _one_line(key[0])
        if key_text is None or key[0].lineno != node.lineno:
            return False
        lead = key_text + key[1]
    printed = _shape(node, indent, lead, ",")
    return printed is not None and len(printed) == len(lines) and all(
        p + "\n" == line for p, line in zip(printed, lines, strict=True))


def _shape(node: ast.expr, indent: str, lead: str, trail: str) -> list[str] | None:
    """black's lines for `lead + node + trail` at `indent`, laid out as the source lays
    out `node` (one line, or exploded with a magic trailing comma); None outside the cover."""
    if node.lineno == node.end_lineno:
        text = _one_line(node)
        if text is None:
            return None
        line = indent + lead + text + trail
        # Past the limit, black splits at a bracket or a delimiter; a string constant after
        # its keyword or key has neither, so black leaves that line as it is.
        fits = str_width(line) <= _LINE_LENGTH or (isinstance(node, ast.Constant) and isinstance(node.value, str))
        return [line] if fits else None
    parts = _exploded_parts(node)
    if parts is None:
        return None
    opener, items, closer = parts
    out = [indent + lead + opener]
    if str_width(out[0]) > _LINE_LENGTH:
        return None
    for item_lead, item in items:
        if isinstance(item_lead, ast.expr):
            key = _one_line(item_lead)
            if key is None or item_lead.lineno != item.lineno:
                return None
            item_lead = key + ": "
        inner = _shape(item, indent + _INDENT, item_lead, ",")
        if inner is None:
            return None
        out += inner
    out.append(indent + closer + trail)  # `),` at most an indent and two characters
    return out


def _exploded_parts(node: ast.expr) -> tuple[str, list[tuple[str | ast.expr, ast.expr]], str] | None:
    """(opening line's text, items each with its lead, closing bracket) of a call or display
    black keeps exploded: two or more items (one item's trailing comma is not magic in a
    call or tuple; lists and dicts are held to the same, which only sends them to black)."""
    items: list[tuple[str | ast.expr, ast.expr]]
    if isinstance(node, ast.Call):
        func = _callee(node.func)
        if func is None or any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            return None
        items = [*(("", a) for a in node.args), *((f"{k.arg}=", k.value) for k in node.keywords)]
        opener, closer = func + "(", ")"
    elif isinstance(node, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        items = [("", e) for e in node.elts]
        opener, closer = ("(", ")") if isinstance(node, ast.Tuple) else ("[", "]")
    elif isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            return None
        items = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
        opener, closer = "{", "}"
    else:
        return None
    return (opener, items, closer) if len(items) >= 2 else None


def _one_line(node: ast.expr) -> str | None:
    """`node` on one line as black prints it (no magic trailing comma); None outside the cover."""
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _callee(node)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) in (int, float)):
        number = _constant(node.operand.value)
        return None if number is None else "-" + number
    parts = _one_line_parts(node)
    if parts is None:
        return None
    opener, items, closer = parts
    texts = [_one_line(item) for item in items]
    if any(t is None for t in texts):
        return None
    if isinstance(node, ast.Dict):
        keys = [_one_line(k) for k in node.keys if k is not None]
        if len(keys) != len(node.keys) or any(k is None for k in keys):
            return None
        texts = [f"{k}: {v}" for k, v in zip(keys, texts, strict=True)]
    if isinstance(node, ast.Call):
        texts = [*texts[:len(node.args)],
                 *(f"{k.arg}={t}" for k, t in zip(node.keywords, texts[len(node.args):], strict=True))]
    body = ", ".join(t for t in texts if t is not None)
    return opener + body + ("," if isinstance(node, ast.Tuple) and len(texts) == 1 else "") + closer


def _one_line_parts(node: ast.expr) -> tuple[str, list[ast.expr], str] | None:
    if isinstance(node, ast.Call):
        func = _callee(node.func)
        if func is None or any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            return None
        return func + "(", [*node.args, *(k.value for k in node.keywords)], ")"
    if isinstance(node, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return ("(", node.elts, ")") if isinstance(node, ast.Tuple) else ("[", node.elts, "]")
    if isinstance(node, ast.Dict):
        return "{", node.values, "}"
    return None


def _callee(node: ast.expr) -> str | None:
    """A name or a dotted attribute of one."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _callee(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _constant(value: Any) -> str | None:
    """A constant as black prints the literal its repr spells (numbers lower-cased, strings
    in black's preferred quotes and escapes); None where black might print it otherwise."""
    key = (type(value), value)  # 1, 1.0 and True are equal, and spelled apart
    if key not in _CONSTANTS:
        if len(_CONSTANTS) >= _CONSTANTS_KEPT:  # a long-lived process generating many schemas
            _CONSTANTS.clear()
        _CONSTANTS[key] = _constant_text(value)
    return _CONSTANTS[key]


# An ast constant is hashable; a table repeats its names and values many times.
_CONSTANTS: dict[tuple[type[Any], Any], str | None] = {}
_CONSTANTS_KEPT = 1 << 17


def _constant_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        leaf = Leaf(token.NUMBER, repr(value))
        normalize_numeric_literal(leaf)
        return str(leaf.value)
    if isinstance(value, str):
        return _string_text(value)
    return None  # bytes, complex, Ellipsis: not in the cover


def black_string(value: str) -> str | None:
    """`value` as a string literal in black's preferred quotes, which black then prints as
    it is; None where black's normalisations would not settle (never seen)."""
    return _constant(value)


def _string_text(value: str) -> str | None:
    if value.isprintable() and not any(c in value for c in "'\"\\"):
        return f'"{value}"'  # nothing repr escapes (its test is isprintable): black's form at once
    text = repr(value)
    for _ in range(2):  # black's string normalisations, until they change nothing
        leaf = Leaf(token.STRING, text)
        normalize_unicode_escape_sequences(leaf)
        normalized = normalize_string_quotes(normalize_string_prefix(str(leaf.value), BLACK_MODE))
        if normalized == text:
            return text
        text = normalized
    return None
