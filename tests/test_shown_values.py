"""Refusals quote the value they refuse through one helper (`short_repr`), which describes a
huge integer by its size instead of writing out hundreds of digits: a config.json's
`max_position_embeddings: 1e308` (read as a 309-digit count) or a dataclass default
`10**1000` is named, with its field, file and line, on one short line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.importer import ImportError_, import_dataclass
from configbags.runtime.leaftypes import SHOWN_CHARS, SHOWN_DIGITS, short_repr, shown_text
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"


@pytest.mark.parametrize(("value", "shown"), [
    (int(1e308), "an integer of 309 digits (about 1.0e+308)"),
    (10**1000, "an integer of 1001 digits (about 1.0e+1000)"),
    (-(10**1000) * 7, "an integer of 1001 digits (about -7.0e+1000)"),
    (10**SHOWN_DIGITS - 1, "9" * SHOWN_DIGITS),  # up to the limit, written out
    ([1, {"a": 10**5000}], "[1, {'a': an integer of 5001 digits (about 1.0e+5000)}]"),  # past Python's 4300
])
def test_a_huge_integer_is_described_by_its_size(value: object, shown: str) -> None:
    assert short_repr(value) == shown


def test_the_digit_count_is_exact_at_every_power_of_ten() -> None:
    for digits in range(SHOWN_DIGITS + 1, 400):
        assert short_repr(10 ** (digits - 1)).startswith(f"an integer of {digits} digits ")
        assert short_repr(10**digits - 1).startswith(f"an integer of {digits} digits (about 9.9e+")


def test_text_is_escaped_and_cut() -> None:
    assert shown_text("a\nb\x1b") == "a\\nb\\x1b"
    cut = shown_text("y" * 5000)
    assert cut == "y" * SHOWN_CHARS + "...(5000 characters)"


def test_plan_names_a_huge_context_length_without_its_309_digits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = json.loads((MODELS / "llama-3.1-8b.json").read_text())
    config["max_position_embeddings"] = 1e308
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["--model-config", str(path), "--device-memory", "80GiB"]) == 2
    err = capsys.readouterr().err
    assert "max_position_embeddings is 1e+308" in err, err
    assert "0" * 50 not in err and len(err) < 300


def test_import_dataclass_names_a_huge_default_without_its_1000_digits() -> None:
    source = textwrap.dedent("""\
        import dataclasses
        @dataclasses.dataclass
        class ServerArgs:
            model_path: str = "m"
            big: int = 10**1000
        """)
    with pytest.raises(ImportError_) as caught:
        import_dataclass(source, "ServerArgs", {})
    line = next(line for line in str(caught.value).splitlines() if ": big: " in line)
    assert "the field's default an integer of 1001 digits (about 1.0e+1000) does not fit" in line, line
    assert "0" * 50 not in line and len(line) < 400
