"""The read ratchet on this repository itself: CI fails on a new raw read, a stale entry,
a write to the record or a renamed accessor anywhere under schema/ratchet.yaml's roots."""

from __future__ import annotations

from pathlib import Path

from configbags.codegen.model import AllowEntry
from configbags.migrate.check import check
from configbags.migrate.scan import scan_tree
from configbags.migrate.settings import load_from_generated, load_from_schema

ROOT = Path(__file__).resolve().parent.parent


def _key(entry: AllowEntry) -> tuple[str, str, str, str]:
    # configbags.codegen.model.AllowEntry is an attrs record without ordering
    return (entry.file, entry.function, entry.leaf, entry.reason)


def test_the_repository_passes_its_read_ratchet() -> None:
    # cache=False: the inputs cache would be .configbags-cache/ in the checkout
    inputs = load_from_schema(ROOT / "schema", cache=False)
    result = scan_tree(inputs.project, inputs.settings)
    report = check(result, inputs.allowlist, inputs.accessors, min_files=inputs.min_files, roots=inputs.settings.roots)
    assert report.ok, report.render()


def test_the_generated_allowlist_says_the_same_as_the_schema() -> None:
    from_schema = load_from_schema(ROOT / "schema", cache=False)
    generated = load_from_generated(ROOT, "configbags.generated")
    assert generated.settings == from_schema.settings
    assert sorted(generated.allowlist, key=_key) == sorted(from_schema.allowlist, key=_key)
    assert generated.accessors == from_schema.accessors
    assert generated.env_leaves == from_schema.env_leaves
