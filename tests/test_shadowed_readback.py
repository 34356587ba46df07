"""A lower operator layer's value that a higher one hides (a config file's under a variable
or a flag, an earlier file's under a later one) is not in force; besides the start-up
warning, the readbacks show it where an operator who edits it looks: `explain` lists it
under the value in force, the origin in /server_info and /config/<leaf> carries it (a
secret's redacted), and a followed (`--watch`) file says which of its leaves are hidden,
in /server_info's watch section and, as a count, in /health."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_serve_watch import BASE, ConfigMap, settle, watching_server

from configbags.cli import main as configbags
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime import record as record_module
from configbags.runtime.context._records import origin_from
from configbags.runtime.record import origins_of
from configbags.runtime.resolve import Layer
from configbags.runtime.testing import published
from configbags.serve.door import Door
from configbags.serve.watch import WatchedDoor


@pytest.fixture(autouse=True)
def _fresh() -> object:
    record_module._warned.clear()
    with get_context().restoring():
        yield
    record_module._warned.clear()


def test_explain_lists_every_hidden_value_under_the_one_in_force(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("log_level: info\n")
    second.write_text("log_level: warning\n")
    monkeypatch.setenv("SGLANG_LOG_LEVEL", "debug")
    argv = ["explain", "log_level", "--model-path", "m", "--config", str(first), "--config", str(second),
            "--log-level", "error"]
    assert configbags(argv) == 0
    out = capsys.readouterr().out
    hidden = [line.split(None, 2)[2] for line in out.splitlines() if line.startswith("  hidden value")]
    assert hidden == [f'"info" from {first} (config_file): not in force, the value above wins',
                      f'"warning" from {second} (config_file): not in force, the value above wins',
                      '"debug" from $SGLANG_LOG_LEVEL (env): not in force, the value above wins'], out
    assert configbags(["explain", "log_level", "--json", *argv[2:]]) == 0
    origin = json.loads(capsys.readouterr().out)["origin"]
    assert origin["source"] == "--log-level"
    assert [(s["layer"], s["value"]) for s in origin["shadows"]] == [
        ("config_file", "info"), ("config_file", "warning"), ("env", "debug")]


def test_an_equal_value_or_a_preset_hides_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("log_level: error\n")
    assert configbags(["explain", "log_level", "--model-path", "m", "--config", str(config),
                       "--log-level", "error"]) == 0
    assert "hidden value" not in capsys.readouterr().out
    record = ServerArgs.from_cli(["--model-path", "m", "--config", str(config), "--log-level", "error"])
    assert origins_of(record, get_context().registry.leaves)["log_level"].shadows == ()


def test_a_hidden_secret_is_redacted_in_every_readback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("api_key: fileKEYrotated1\n")
    monkeypatch.setenv("SGLANG_API_KEY", "envKEYold1")
    assert configbags(["explain", "api_key", "--model-path", "m", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert '"<redacted>" from ' + str(config) in out and "KEYrotated" not in out and "KEYold" not in out
    record = ServerArgs.from_cli(["--model-path", "m", "--config", str(config)])
    with published(record, role="launcher") as ctx:
        info = Door(ctx).server_info()
        text = json.dumps(info)
        assert "KEYrotated" not in text and "KEYold" not in text
        assert info["layers"]["api_key"]["shadows"] == [
            {"layer": "config_file", "source": str(config), "value": "<redacted>"}]


def test_the_hidden_values_cross_ranks_with_the_origin() -> None:
    """Ranks send origins as dicts: the shadows survive the trip."""
    record = ServerArgs.from_cli(["--model-path", "m", "--log-level", "error"])
    base = origins_of(record, get_context().registry.leaves)["log_level"]
    assert base.shadows == ()
    origin = origin_from({"layer": "cli", "source": "--log-level",
                          "shadows": [{"layer": "env", "source": "$SGLANG_LOG_LEVEL", "value": "debug"}]})
    assert origin.shadows[0].layer is Layer.ENV and origin_from(origin.as_dict()) == origin


def test_a_followed_file_says_which_of_its_leaves_a_flag_hides(tmp_path: Path) -> None:
    """serve --watch FILE --weight-version v9: the file's weight_version never applies. The
    watch section names it (with the value the file says now, and what wins), /health counts
    it without naming it, and once the file no longer sets it nothing is hidden."""
    cm = ConfigMap(tmp_path / "config")
    cm.publish(BASE)
    with watching_server(cm, ["--weight-version", "v9"]) as (watcher, ctx):
        door = watcher.door
        assert isinstance(door, WatchedDoor)
        hidden = {"weight_version": {"file": "v1", "in_force_from": "--weight-version", "layer": "cli"}}
        assert door.server_info()["watch"]["hidden"] == hidden  # from the start
        epoch = ctx.epoch
        cm.publish(BASE.replace("v1", "v2"))
        settle(watcher)
        assert ctx.epoch == epoch and ctx.state.values["weight_version"] == "v9"
        info: dict[str, Any] = door.server_info()
        assert info["watch"]["hidden"]["weight_version"]["file"] == "v2"
        assert info["layers"]["weight_version"]["shadows"][0]["value"] == "v2"
        health = door.health()
        assert health["status"] == "ok" and health["details"]["hidden"] == 1
        assert "1 leaf of the watched file is hidden by a flag" in health["details"]["message"]
        assert "weight_version" not in json.dumps(health) and "v2" not in json.dumps(health)
        cm.publish(BASE.replace("weight_version: v1\n", ""))
        settle(watcher)
        assert door.server_info()["watch"]["hidden"] == {} and door.health()["details"]["hidden"] == 0


def test_an_override_over_a_hidden_leaf_is_what_the_watch_section_names(tmp_path: Path) -> None:
    """serve --watch FILE --weight-version v9, then a PATCH: the value in force comes from the
    override now, and the watch section, /server_info's layers and /config/<leaf> say so
    while still listing the file's value it hides (round nineteen's finding)."""
    cm = ConfigMap(tmp_path / "config")
    cm.publish(BASE)
    with watching_server(cm, ["--weight-version", "v9"]) as (watcher, _ctx):
        door = watcher.door
        assert isinstance(door, WatchedDoor)
        door.patch("t", {"weight_version": "patched"})
        info: dict[str, Any] = door.server_info()
        assert info["resolved"]["weight_version"] == "patched"
        hidden = info["watch"]["hidden"]["weight_version"]
        layer = info["layers"]["weight_version"]
        assert hidden["file"] == "v1" and hidden["layer"] == layer["layer"] == "runtime"
        assert hidden["in_force_from"] == layer["source"] and "'http:t'" in layer["source"]
        assert layer["shadows"] == [{"layer": "config_file", "source": str(watcher.path), "value": "v1"}]
        cm.publish(BASE.replace("v1", "v3"))
        settle(watcher)
        info = door.server_info()
        assert info["watch"]["hidden"]["weight_version"]["file"] == "v3"
        assert info["watch"]["hidden"]["weight_version"]["layer"] == "runtime"
