"""A model config.json count written through a float (`"max_position_embeddings": 131072.0`)
is the count it spells, as transformers reads it; a fraction is still refused, naming the
field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configbags.server.kvcache.errors import ModelConfigError
from configbags.server.kvcache.model_shape import model_shape_from_dict

LLAMA = json.loads((Path(__file__).resolve().parent.parent / "models" / "llama-3.1-8b.json").read_text())


def test_a_whole_number_float_is_the_count_it_spells() -> None:
    floats = {**LLAMA, "max_position_embeddings": 131072.0, "hidden_size": 4096.0, "num_key_value_heads": 8.0}
    assert model_shape_from_dict(floats, source="f.json") == model_shape_from_dict(LLAMA, source="f.json")


@pytest.mark.parametrize(("value", "why"), [
    (131072.5, "not a whole number"), (-8.0, "positive"), (1e300, "at most"), (True, "not a bool"),
])
def test_a_fraction_or_an_out_of_range_float_is_still_refused(value: object, why: str) -> None:
    with pytest.raises(ModelConfigError, match=f"f.json: max_position_embeddings is .*{why}"):
        model_shape_from_dict({**LLAMA, "max_position_embeddings": value}, source="f.json")
