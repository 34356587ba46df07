"""The JSON Schema the door publishes for one leaf of a PATCH body, for every type shape
(the bundled schema's operator leaves do not cover them all)."""

from __future__ import annotations

from typing import Any

import pytest

from configbags.runtime.leaftypes import Policy, TypeSpec
from configbags.runtime.registry import LeafSpec

pytest.importorskip("fastapi")

from configbags.serve.app import leaf_schema  # after the importorskip


def spec(type_: str, **kw: Any) -> LeafSpec:
    fields: dict[str, Any] = {
        "name": "x", "namespace": "ns", "type": TypeSpec.parse(type_), "default": None, "required": False,
        "has_fallback": False, "fallback": None, "choices": None, "minimum": None, "maximum": None,
        "owner": "scheduler", "policy": Policy.RUNTIME, "hash": True, "capacity": None, "flags": (),
        "writers": ("operator",),
    }
    fields.update(kw)
    return LeafSpec(**fields)


@pytest.mark.parametrize(
    ("leaf", "expected"),
    [
        (spec("int", minimum=1.0, maximum=8.0), {"type": "integer", "minimum": 1, "maximum": 8}),
        (spec("optional float", maximum=1.0), {"type": ["number", "null"], "maximum": 1.0}),
        (spec("optional str", choices=("a", "b")), {"type": ["string", "null"], "enum": ["a", "b", None]}),
        (spec("bool"), {"type": "boolean"}),
        (spec("optional list[int]", minimum=1.0, maximum=64.0),
         {"type": ["array", "null"], "items": {"type": "integer", "minimum": 1, "maximum": 64}}),
        (spec("list[str]", choices=("a", "b")), {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}),
        (spec("json"), {}),
        (spec("optional int", capacity="cap"), {"type": ["integer", "null"], "x-configbags-capacity": "cap"}),
    ],
)
def test_leaf_schema(leaf: LeafSpec, expected: dict[str, Any]) -> None:
    got = leaf_schema(leaf)
    description = got.pop("description")
    assert got.pop("x-configbags-apply") == "live"  # policy runtime
    assert got == expected
    assert description.startswith(f"ns.x ({leaf.type}; policy runtime; owner scheduler)")
    assert ("409 above it" in description) == (leaf.capacity is not None)
