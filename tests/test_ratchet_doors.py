"""The ratchet's two doors around the accessors: raw environment reads of declared
variables, and operator readbacks (`Context.state`, `configbags.runtime.dist.state_dict`)
in role code. Scanner fixtures checked exactly against their markers."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.scan import ScanSettings, scan_source

DOORS = Path(__file__).parent / "fixtures" / "ratchet_doors"
ENV_LEAVES = {"SGLANG_PAGE_SIZE": "page_size", "SGLANG_KV_PAGE": "page_size", "SGLANG_LOG_LEVEL": "log_level"}
SETTINGS = ScanSettings(roots=("pkg",), env_vars=tuple(sorted(ENV_LEAVES)))
_MARKER = re.compile(r"#\s*read:(.*)$")


def _expected(text: str) -> set[tuple[int, str]]:
    found: set[tuple[int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER.search(line)
        if match:
            found.update((number, leaf.strip()) for leaf in match.group(1).split(","))
    return found


def _reported(data: bytes, settings: ScanSettings = SETTINGS) -> set[tuple[int, str]]:
    result = scan_source(data, settings)
    assert result.problem is None
    assert result.violations == ()
    return {(line, leaf) for _, leaf, line, *_ in result.reads}


@pytest.mark.parametrize("name", sorted(p.name for p in DOORS.glob("*.py")))
def test_door_fixture_is_reported_exactly(name: str) -> None:
    data = (DOORS / name).read_bytes()
    expected = _expected(data.decode())
    assert expected or name == "negatives.py", "a fixture without markers tests nothing"
    assert _reported(data) == expected


def test_undeclared_variables_are_not_reported() -> None:
    # the same reads, with no variable declared in the schema
    data = (DOORS / "env_reads.py").read_bytes()
    assert not any(leaf.startswith("$") for _, leaf in _reported(data, ScanSettings(roots=("pkg",))))


def test_rows_name_the_function_and_how_the_door_was_opened() -> None:
    source = textwrap.dedent("""\
        import os
        from configbags.generated.accessors import get_context

        class Runner:
            def level(self):
                return os.getenv("SGLANG_LOG_LEVEL")

        def dump():
            return get_context().state
        """)
    rows = scan_source(source.encode(), SETTINGS).reads
    assert [(fn, leaf, line, via, form) for fn, leaf, line, _, _, _, via, form, _ in rows] == [
        ("Runner.level", "$SGLANG_LOG_LEVEL", 6, "environ", "getenv"),
        ("dump", "Context.state", 9, "readback", "state"),
    ]
