"""Round three's false passes of the read ratchet: the scanner reads files as Python does
(line breaks, encodings, identifiers), sees the spellings that went unseen, names what it
skips, never trusts a forged cache, and reports an unreadable root without a traceback."""

from __future__ import annotations

from hostile.ratchet import ENV_VARS, executed_reads, source_files
from hostile.strategies import PROFILE
from hypothesis import given

from configbags.migrate.scan import ScanSettings, scan_source

SETTINGS = ScanSettings(roots=("src",), env_vars=ENV_VARS)
RAW = "from configbags.generated.accessors import get_server_args\n"


def _reported(data: bytes, settings: ScanSettings = SETTINGS) -> set[tuple[str, int]]:
    result = scan_source(data, settings)
    assert result.problem is None, result.problem
    return {(leaf, line) for _, leaf, line, *_ in result.reads}


# ---- 1. the line model and the encoding are Python's


def test_a_lone_cr_in_a_comment_ends_the_line_as_in_python() -> None:
    data = (RAW + "# harmless comment\rx = get_server_args().tp_size\n").encode()
    assert executed_reads(data) == {("tp_size", 3)}
    assert _reported(data) == {("tp_size", 3)}


def test_a_cr_only_file_is_read_line_by_line() -> None:
    data = (RAW + "\n\ndef f():\n    return get_server_args().page_size\nf()\n").replace("\n", "\r").encode()
    assert executed_reads(data) == {("page_size", 5)}
    assert _reported(data) == {("page_size", 5)}


def test_unicode_escape_cannot_hide_a_line_break() -> None:
    # one raw line, a comment to the eye; decoded, the `\x0a` is a line break
    data = b"# coding: unicode_escape\n# nothing here\\x0ax = get_server_args().tp_size\n"
    assert executed_reads(data) == {("tp_size", 3)}
    assert _reported(data) == {("tp_size", 3)}


def test_a_declared_encoding_and_a_bom_are_decoded() -> None:
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\nx = get_server_args().tp_size\n".encode("latin-1")
    assert _reported(latin) == {("tp_size", 3)}
    bom = "\ufeff# caf\xe9\u2028\x0c\x1c\nx = get_server_args().tp_size\n".encode()
    assert _reported(bom) == {("tp_size", 2)}


def test_characters_python_does_not_break_at_keep_the_lines() -> None:
    # str.splitlines breaks at each of these, Python's tokenizer at none
    data = "# \x0b \x0c \x1c \x1d \x1e \x85 \u2028 \u2029\n\x0cx = get_server_args().tp_size\n".encode()
    assert executed_reads(data) == {("tp_size", 2)}
    assert _reported(data) == {("tp_size", 2)}


def test_an_nfkc_spelling_of_the_accessor_is_the_accessor() -> None:
    data = "x = \uff47et_server_args().tp_size\n".encode()
    assert executed_reads(data) == {("tp_size", 1)}
    assert _reported(data) == {("tp_size", 1)}


def test_a_conflicting_bom_and_declaration_is_unreadable() -> None:
    data = b"\xef\xbb\xbf# coding: latin-1\nx = 1\n"
    assert executed_reads(data) is None
    assert scan_source(data, SETTINGS).problem is not None


@PROFILE
@given(source_files())
def test_every_read_python_performs_is_reported(data: bytes) -> None:
    """For any file: what executing it reads is reported, at its line, or the file is
    reported unreadable (only where Python refuses it too)."""
    executed = executed_reads(data)
    result = scan_source(data, SETTINGS)
    if executed is None:
        return  # Python refuses it: nothing runs (and the scanner may refuse it too)
    assert result.problem is None, f"Python compiles it, the scanner says: {result.problem}"
    reported = {(leaf, line) for _, leaf, line, *_ in result.reads}
    for leaf, line in executed:
        dynamic = ("$?" if leaf.startswith("$") else "*", line)
        assert (leaf, line) in reported or dynamic in reported, (leaf, line, reported)
    # (a file may read nothing: a line break escaped under unicode_escape is no line break)
