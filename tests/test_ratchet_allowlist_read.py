"""ratchet.yaml's entry lists are read line by line (`settings.read_entry_lists`), not
through PyYAML, for a cold check's speed: the data must be exactly what PyYAML's C
loader reads, or the reader must step aside (None) and let the loader read the file."""

from __future__ import annotations

import yaml
from hostile.strategies import PROFILE
from hypothesis import example, given, settings
from hypothesis import strategies as st

from configbags.migrate.check import entry_flow
from configbags.migrate.settings import read_entry_lists

LOADER = yaml.CSafeLoader
HEAD = "# a comment\nscan:\n  roots: [tree]\n  raw_accessor: get_server_args\n"
# words YAML reads as something other than a string, or that need quoting, or not
_words = st.sampled_from([
    "yes", "No", "on", "null", "~", "1.5", "0x1F", "017", "1_000", "2020-01-01", ".inf", "<<", "=", "",
    "<module>", "$SGLANG_TP_SIZE", "tree/pkg0/mod0.py", "Worker.step_4", "a b", "a  b", "it's", 'say "x"',
    "key: value", "a, b", "#x", "x #y", "-x", ">x", "長さ", "back\\slash", "baseline", "tp_size",
])
_values = _words | st.text(st.sampled_from("ab $<>./-_: #'\"\\長"), max_size=12)
_entry = st.tuples(_values, _values, _values, _values).map(lambda e: "  - " + entry_flow(*e))
_noise = st.sampled_from([
    "", "  # between items", "# at the margin", "- {file: a, function: b, leaf: c, reason: d}",
    "  - {file: a, function: b, leaf: c, reason: d}  # trailing", "    - {file: a, function: b, leaf: c, reason: d}",
    "note: |", "  allowlist:", "allowlist:", "writes:", "writes: []", "other: \"multi", "allowlist: []", "---",
])


@st.composite
def _ratchet_file(draw: st.DrawFn) -> str:
    lines = [HEAD]
    for key in draw(st.permutations(["allowlist", "writes"])):
        lines.append(f"{key}:")
        for _ in range(draw(st.integers(0, 6))):
            lines.append(draw(_noise) if draw(st.integers(0, 5)) == 0 else draw(_entry))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@example(HEAD + "allowlist:\n  - {file: a.py, function: f, leaf: tp_size, reason: baseline}\nwrites:\n")
@example(HEAD + "note: |\n  x\nallowlist:\n  - {file: a.py, function: f, leaf: yes, reason: baseline}\n")
@example(HEAD + 'note: "abc\nallowlist:\n  - {file: a.py, function: f, leaf: x, reason: b}\n"\n')
@given(_ratchet_file())
@settings(PROFILE, max_examples=PROFILE.max_examples * 5, database=None)
def test_the_entry_lists_read_as_pyyaml_reads_them_or_not_at_all(text: str) -> None:
    fast = read_entry_lists(text, LOADER)
    if fast is None:
        return
    assert fast == yaml.load(text, Loader=LOADER)


def test_a_file_as_ratchet_init_writes_it_is_read_line_by_line() -> None:
    entries = [("tree/pkg0/mod0.py", "Worker0x1.step_4", "page_size", "baseline"),
               ("tree/m.py", "<module>", "$SGLANG_TP_SIZE", "baseline"),
               ("runtime/x.py", "f", "Context.state", "an operator readback: says why, with a colon")]
    text = HEAD + "writes: []\nallowlist:\n  # why each stays\n" + "".join(f"  - {entry_flow(*e)}\n" for e in entries)
    fast = read_entry_lists(text, LOADER)
    assert fast is not None and fast == yaml.load(text, Loader=LOADER)
    assert [tuple(e.values()) for e in fast["allowlist"]] == entries
