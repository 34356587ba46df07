"""`configbags rollout` (and the commands that share its `--`) against hostile input
(round 22): a readback whose `resolved` lacks a derived value (a capacity: planned as no
bound, the door then answers 409) or names one no schema has is refused naming the file or
URL and the JSON path, exit 2; a PATCH 200 whose `epoch` or `entries` are no door's answer
to the leaves sent is "may or may not have applied", exit 1; a `--dump-config` over the
model config of a side's `--model-path` is refused before anything is written; a usage
error around `--` names only words the operator gave, and a command's own flag after its
`--` as such. The quiet twins: a real readback still plans above-capacity changes as
restarts, a door's real answer (and `entries: []`) is still applied, a dump of its own path
beside a model folder is still written, and a server flag after `--` is still taken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_rollout_hostile21
from test_rollout_hostile20 import SERVER_FLAGS, run, saved_readback, yaml_file
from test_rollout_hostile21 import LIVE_LEAF, _files, edited_readback

from configbags import explain
from configbags.fleet.rollout import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    patch_answer_problem,
    plan,
    side_values,
)
from configbags.generated.accessors import get_context
from configbags.runtime.errors import ConfigError
from configbags.server import plan as plan_command

fixed = test_rollout_hostile21.fixed  # a server answering every request with a set status and body

CAPACITY = "max_speculative_num_draft_tokens"  # the derived capacity of speculative_num_draft_tokens
LLAMA = str(Path(__file__).resolve().parent.parent / "models" / "llama-3.1-8b.json")


# -- finding 2: a readback's `resolved` lacking a derived value -------------------------------
@pytest.mark.parametrize("side", ["OLD", "NEW"])
def test_a_readback_lacking_a_derived_capacity_is_refused_naming_the_file_and_path(
        side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = edited_readback(tmp_path, "nocap.json", lambda info: info["resolved"].pop(CAPACITY))
    spec = yaml_file(tmp_path, "spec.yaml", model_path="/models/m", tp_size=2, speculative_num_draft_tokens=8)
    old, new = (bad, spec) if side == "OLD" else (spec, bad)
    code, out, err = run(capsys, str(old), str(new), *SERVER_FLAGS)
    assert code == EXIT_USAGE, out + err
    assert f"configbags rollout: {bad}: resolved.{CAPACITY} (missing)" in err, err
    assert out == ""  # never planned as live


def test_a_readback_naming_an_unknown_resolved_value_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = edited_readback(tmp_path, "bogus.json", lambda info: info["resolved"].update({"bogus\nderived": 3}))
    base = yaml_file(tmp_path, "base.yaml", model_path="/models/m", tp_size=2)
    code, out, err = run(capsys, str(bad), str(base), *SERVER_FLAGS)
    assert code == EXIT_USAGE, out + err
    assert "resolved.bogus\\nderived: neither a leaf nor a derived value" in err, err
    assert "bogus\nderived" not in err


def test_a_served_readback_lacking_a_derived_capacity_is_refused_naming_the_url(tmp_path: Path, fixed: Any) -> None:
    info = json.loads(saved_readback(tmp_path).read_text())
    del info["resolved"][CAPACITY]
    fixed.body = json.dumps(info).encode()
    with pytest.raises(ConfigError, match=rf"127\.0\.0\.1.*resolved\.{CAPACITY} \(missing\)"):
        side_values(get_context(), fixed.url, [], None)


def test_a_real_readback_still_plans_an_above_capacity_change_as_a_restart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = edited_readback(tmp_path, "real.json", lambda info: None)
    spec = yaml_file(tmp_path, "spec.yaml", model_path="/models/m", tp_size=2, speculative_num_draft_tokens=8)
    code, out, err = run(capsys, str(real), str(spec), *SERVER_FLAGS)
    assert code == EXIT_OK, err
    assert f"speculative_num_draft_tokens: null -> 8  (above its capacity {CAPACITY}=" in out, out
    assert '"speculative_num_draft_tokens"' not in out  # not in the PATCH body


def test_a_capacity_in_the_same_patch_bounds_as_the_door_bounds_it() -> None:
    """The door checks a leaf against its capacity's value in the same PATCH when the PATCH
    sets it, else the running one: so does the plan (here a live leaf stands for a capacity)."""
    import attrs

    registry = get_context().registry
    bounded, bound = "speculative_num_draft_tokens", "chunked_prefill_size"
    schema = attrs.evolve(registry, leaves={**registry.leaves,
                                            bounded: attrs.evolve(registry.leaves[bounded], capacity=bound)})
    running = {bound: 16}
    lowered = plan(schema, {bound: 16}, {bound: 4, bounded: 8}, running)
    assert {c.leaf: c.route for c in lowered.changes} == {bound: "live", bounded: "restart"}  # 8 > the PATCH's 4
    raised = plan(schema, {bound: 16}, {bound: 32, bounded: 20}, running)
    assert {c.leaf: c.route for c in raised.changes} == {bound: "live", bounded: "live"}  # 20 <= the PATCH's 32


# -- finding 3: a PATCH 200 that is no door's answer to the leaves sent -----------------------
def _entry(leaf: str, new: Any, epoch: int = 3) -> dict[str, Any]:
    namespace = get_context().registry.leaves[leaf].namespace
    return {"epoch": epoch, "source": "http:rollout", "leaf": leaf, "namespace": namespace, "old": None, "new": new,
            "wall_time": 1.0}


SENT = {"weight_version": "v2", LIVE_LEAF: 0.5}  # what `_files`' base -> new sends
NO_DOOR_ANSWERS = {
    "entries-not-objects": {"epoch": 3, "entries": [1, 2]},
    "epoch-negative": {"epoch": -5, "entries": [_entry("weight_version", "v2", -5), _entry(LIVE_LEAF, 0.5, -5)]},
    "epoch-bool": {"epoch": True, "entries": []},
    "a-leaf-not-sent": {"epoch": 3, "entries": [_entry("port", 2)]},
    "another-value": {"epoch": 3, "entries": [_entry("weight_version", "v1"), _entry(LIVE_LEAF, 0.9)]},
    "a-leaf-twice": {"epoch": 3, "entries": [_entry("weight_version", "v2"), _entry("weight_version", "v2")]},
    "entry-of-another-epoch": {"epoch": 3, "entries": [_entry("weight_version", "v2", 2)]},
    "entry-lacking-a-key": {"epoch": 3, "entries": [{"leaf": "weight_version", "new": "v2"}]},
}


@pytest.mark.parametrize("case", sorted(NO_DOOR_ANSWERS))
def test_a_200_that_is_no_door_answer_to_this_patch_may_or_may_not_have_applied(
        case: str, tmp_path: Path, fixed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    fixed.body = json.dumps(NO_DOOR_ANSWERS[case]).encode()
    code, out, err = run(capsys, str(files["base"]), str(files["new"]), "--apply", fixed.url, "--admin-key",
                         "ak-test-1", "--timeout", "5", *SERVER_FLAGS)
    assert code == EXIT_REFUSED, out + err
    assert "applied to" not in out and "may or may not have applied" in out, out
    assert fixed.requests == ["PATCH /config"]


@pytest.mark.parametrize(("entries", "changed"), [
    ([_entry("weight_version", "v2"), _entry(LIVE_LEAF, 0.5)], 2),
    ([_entry(LIVE_LEAF, 0.5)], 1),  # weight_version was already v2 there: the door logs no entry for it
    ([], 0),  # nothing changed
])
def test_a_door_answer_to_this_patch_is_still_applied(
        entries: list[dict[str, Any]], changed: int, tmp_path: Path, fixed: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    fixed.body = json.dumps({"epoch": 3, "entries": entries}).encode()
    code, out, err = run(capsys, str(files["base"]), str(files["new"]), "--apply", fixed.url, "--admin-key",
                         "ak-test-1", "--timeout", "5", *SERVER_FLAGS)
    assert code == EXIT_OK, out + err
    assert f"applied to {fixed.url}: epoch 3, {changed} leaf/leaves changed" in out, out


def test_a_secret_leaf_entry_is_redacted_as_the_door_answers_it() -> None:
    answer = {"epoch": 1, "entries": [_entry("weight_version", "<redacted>", 1)]}
    assert patch_answer_problem(answer, {"weight_version": "v2"}, {"weight_version"}) is None
    assert patch_answer_problem(answer, {"weight_version": "v2"}) is not None


# -- finding 6: a dump over a side's model config ---------------------------------------------
def _model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mdir"
    folder.mkdir()
    (folder / "config.json").write_text(Path(LLAMA).read_text())
    return folder


@pytest.mark.parametrize("where", ["flag", "config-files"])
def test_a_dump_over_the_model_config_of_a_side_is_refused_before_anything_is_written(
        where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _model_folder(tmp_path)
    before = (folder / "config.json").read_bytes()
    model = "/models/m" if where == "flag" else str(folder)
    base = yaml_file(tmp_path, "base.yaml", model_path=model, tp_size=2)
    new = yaml_file(tmp_path, "new.yaml", model_path=model, tp_size=2, weight_version="v2")
    flags = ["--model-path", str(folder)] if where == "flag" else []
    code, out, err = run(capsys, str(base), str(new), "--", *flags, "--dump-config", str(folder / "config.json"))
    assert code == EXIT_USAGE, out + err
    assert "is the model config of" in err and "give the dump a path of its own" in err, err
    assert (folder / "config.json").read_bytes() == before
    assert out == ""


def test_a_dump_beside_a_model_folder_is_still_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _model_folder(tmp_path)
    base = yaml_file(tmp_path, "base.yaml", model_path=str(folder), tp_size=2)
    new = yaml_file(tmp_path, "new.yaml", model_path=str(folder), tp_size=2, weight_version="v2")
    dump = tmp_path / "dumped.yaml"
    code, out, err = run(capsys, str(base), str(new), "--", "--dump-config", str(dump))
    assert code == EXIT_OK, err
    assert "weight_version" in out and dump.read_text().startswith("# Resolved config")


# -- finding 9: usage errors around `--` ------------------------------------------------------
@pytest.fixture
def _restored() -> Any:
    with get_context().restoring():
        yield


@pytest.mark.usefixtures("_restored")
@pytest.mark.parametrize("after", [[], ["--tp-size", "2"]])
def test_plan_names_no_flag_the_operator_did_not_give(after: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        plan_command.main(["--model-config", LLAMA, "--gpu", "H100", "--", *after])
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert "--model-path" not in err, err
    if after:
        assert "--tp-size (after a '--', which ends the flags" in err, err


@pytest.mark.parametrize(("command", "flag", "value"), [("explain", "--model-config", LLAMA),
                                                        ("rollout", "--apply", "http://127.0.0.1:1")])
def test_a_commands_own_flag_after_its_double_dash_is_named_as_its_own(
        command: str, flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if command == "explain":
        with pytest.raises(SystemExit) as exited:
            explain.main(["--package", "configbags.generated", "tp_size", "--", "--model-path", "/m", flag, value])
        code, err = exited.value.code, capsys.readouterr().err
    else:
        files = _files(tmp_path)
        with pytest.raises(SystemExit) as exited:
            run(capsys, str(files["base"]), str(files["new"]), *SERVER_FLAGS, flag, value)
        code, err = exited.value.code, capsys.readouterr().err
    assert code == 2, err
    assert f"{flag} (configbags {command}'s own flag, given among the server flags after its '--': give it " \
           f"before the '--')" in err, err
    assert "did you mean" not in err


def test_a_server_flag_that_is_also_rollouts_after_the_double_dash_is_still_the_servers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    code, out, err = run(capsys, str(files["base"]), str(files["new"]), *SERVER_FLAGS, "--api-key", "server-key-1")
    assert code == EXIT_OK, err
    assert "weight_version" in out
