"""`configbags rollout`, round twenty-three: values are compared as the server tells them
apart (its config hash and a contract's fingerprint), type by type, never with Python's
`==`, where `1 == True == 1.0`: a json leaf's `{"x": 1}` going to `{"x": true}` or
`{"x": 1.0}` is a listed change, from config files and from saved readbacks alike. The
quiet twin: the same value on both sides is still no change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_rollout_hostile20 import SERVER_FLAGS, run

from configbags.fleet.rollout import EXIT_OK, plan
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.testing import published
from configbags.serve.door import Door

JSON_LEAF = "json_model_override_args"


def config(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(f"{JSON_LEAF}: {text}\n")
    return path


@pytest.mark.parametrize(("old", "new"), [
    ('{"x": 1}', '{"x": true}'),
    ('{"x": 1}', '{"x": 1.0}'),
    ('{"x": true}', '{"x": 1.0}'),
    ('{"x": [0]}', '{"x": [false]}'),
])
def test_a_json_leaf_changing_type_is_a_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str) -> None:
    code, out, err = run(capsys, str(config(tmp_path, "old.yaml", old)), str(config(tmp_path, "new.yaml", new)),
                         *SERVER_FLAGS)
    assert code == EXIT_OK, out + err
    assert "no change" not in out
    assert f"{JSON_LEAF}: {json.dumps(json.loads(old))} -> {json.dumps(json.loads(new))}" in out, out


def test_the_same_json_value_is_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(config(tmp_path, "old.yaml", '{"x": 1, "y": [1.5]}')),
                         str(config(tmp_path, "new.yaml", '{"y": [1.5], "x": 1}')), *SERVER_FLAGS)
    assert code == EXIT_OK and "rollout: no change" in out, out + err


def _readback(tmp_path: Path, name: str, value: str) -> Path:
    assert get_context  # the generated package is loaded, so `published` finds its context
    record = ServerArgs.from_cli(["--model-path", "/models/m", f"--{JSON_LEAF.replace('_', '-')}", value])
    with published(record, role="launcher") as ctx:
        info = Door(ctx).server_info()
    path = tmp_path / name
    path.write_text(json.dumps(info))
    return path


def test_saved_readbacks_whose_json_leaf_changes_type_plan_the_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _readback(tmp_path, "old.json", '{"x": 1}'), _readback(tmp_path, "new.json", '{"x": true}')
    code, out, err = run(capsys, str(old), str(new))
    assert code == EXIT_OK, out + err
    assert f'{JSON_LEAF}: {{"x": 1}} -> {{"x": true}}' in out, out


def test_plan_tells_types_apart_as_the_config_hash_does() -> None:
    registry = get_context().registry
    same = {leaf: spec.default for leaf, spec in registry.leaves.items()}
    for value in (True, 1.0):
        result = plan(registry, {**same, JSON_LEAF: {"x": 1}}, {**same, JSON_LEAF: {"x": value}})
        assert [c.leaf for c in result.changes] == [JSON_LEAF]
    assert plan(registry, {**same, JSON_LEAF: {"x": 1}}, {**same, JSON_LEAF: {"x": 1}}).changes == ()
