"""`serve --config A --watch B`: A is read once, at start, like every --config file; a change
of B is layered over A's start-time contents (never over a later edit of A, nor refused because
A is gone). And a leaf whose value stays while the layer giving it moves (B drops a key a
preset sets the same) reads back with the layer that gives it now."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_server import API_KEY, Server
from test_serve_watch import ConfigMap, settle

from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.testing import published
from configbags.serve.cli import _rebuilder
from configbags.serve.watch import ConfigWatcher, WatchedDoor

A_START = {"weight_version": "fromA", "chunked_prefill_size": 1024}


def watching(tmp_path: Path, flags: list[str], watched: Path) -> Iterator[tuple[WatchedDoor, Context[Any]]]:
    """A sealed server started from `flags` (`--config watched` last, as serve adds it),
    following `watched` with serve's own rebuild."""
    assert get_context  # the bundled package's context is the one `published` finds
    flags = ["--model-path", "/models/m", *flags, "--config", str(watched)]
    with published(ServerArgs.from_cli(flags), role="launcher") as ctx:
        ctx.seal()
        door = WatchedDoor(ctx)
        door.watcher = ConfigWatcher(door, watched, _rebuilder(ctx, ServerArgs, flags, watched), in_place_quiet=0)
        yield door, ctx


@pytest.fixture
def config_and_watch(tmp_path: Path) -> Iterator[tuple[Path, ConfigMap, WatchedDoor, Context[Any]]]:
    a = tmp_path / "a.json"
    a.write_text(json.dumps(A_START))
    cm = ConfigMap(tmp_path / "config")
    cm.publish("speculative_accept_threshold_acc: 0.7\n")
    for door, ctx in watching(tmp_path, ["--config", str(a)], cm.file):
        yield a, cm, door, ctx


def test_an_edit_of_a_config_file_not_watched_never_rides_in_with_the_watched_change(
        config_and_watch: tuple[Path, ConfigMap, WatchedDoor, Context[Any]]) -> None:
    a, cm, door, ctx = config_and_watch
    a.write_text(json.dumps({"weight_version": "fromA2"}))  # drops chunked_prefill_size too
    cm.publish("speculative_accept_threshold_acc: 0.8\n")
    settle(door.watcher)  # type: ignore[arg-type]
    values = ctx.state.values
    assert values["speculative_accept_threshold_acc"] == 0.8
    assert (values["weight_version"], values["chunked_prefill_size"]) == ("fromA", 1024)
    assert [e.leaf for e in ctx.state.log] == ["speculative_accept_threshold_acc"]
    shown = door.explain("weight_version")
    assert (shown["layer"], shown["source"]) == ("config_file", str(a))
    assert door.watch_status()["error"] is None  # type: ignore[index]


def test_a_config_file_removed_or_spoiled_after_start_never_blocks_the_watched_file(
        config_and_watch: tuple[Path, ConfigMap, WatchedDoor, Context[Any]]) -> None:
    a, cm, door, ctx = config_and_watch
    a.unlink()
    cm.publish("speculative_accept_threshold_acc: 0.8\n")
    settle(door.watcher)  # type: ignore[arg-type]
    assert door.watch_status()["error"] is None  # type: ignore[index]
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.8
    a.write_text('{"weight_version": "fromA", "admin_api_key": "none"}')  # a value serve refuses
    cm.publish("speculative_accept_threshold_acc: 0.9\n")
    settle(door.watcher)  # type: ignore[arg-type]
    assert door.watch_status()["error"] is None  # type: ignore[index]
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.9


def test_a_key_the_watched_file_drops_reads_back_from_the_layer_that_gives_it_now(tmp_path: Path) -> None:
    cm = ConfigMap(tmp_path / "config")
    cm.publish("chunked_prefill_size: 2048\nweight_version: v1\n")  # 2048: the preset's value too
    for door, ctx in watching(tmp_path, ["--preset", "low-latency"], cm.file):
        assert door.explain("chunked_prefill_size")["source"] == str(cm.file)
        cm.publish("weight_version: v1\n")
        settle(door.watcher)  # type: ignore[arg-type]
        assert ctx.state.values["chunked_prefill_size"] == 2048
        shown = door.explain("chunked_prefill_size")
        assert (shown["layer"], shown["source"]) == ("preset", "preset low-latency")
        assert door.server_info()["layers"]["chunked_prefill_size"]["source"] == "preset low-latency"
        assert door.explain("weight_version")["source"] == str(cm.file)  # still the file's
        cm.publish("chunked_prefill_size: 2048\nweight_version: v1\n")  # the file says it again
        settle(door.watcher)  # type: ignore[arg-type]
        assert door.explain("chunked_prefill_size")["source"] == str(cm.file)


def test_a_served_watch_follows_only_its_file_not_the_other_config_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(A_START))
    b.write_text('{"speculative_accept_threshold_acc": 0.7}')
    server = Server("--api-key", API_KEY, "--config", str(a), "--watch", str(b), "--watch-interval", "0.05")
    try:
        a.write_text('{"weight_version": "fromA2"}')
        (tmp_path / "b.t").write_text('{"speculative_accept_threshold_acc": 0.8}')
        (tmp_path / "b.t").rename(b)
        headers = {"Authorization": f"Bearer {API_KEY}"}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            acc = httpx.get(f"{server.url}/config/speculative_accept_threshold_acc", headers=headers, timeout=5)
            if acc.json()["value"] == 0.8:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the watched change was not applied: {acc.json()}")
        for leaf, value in A_START.items():
            shown = httpx.get(f"{server.url}/config/{leaf}", headers=headers, timeout=5).json()
            assert (shown["value"], shown["layer"], shown["source"]) == (value, "config_file", str(a))
    finally:
        server.stop()


def test_the_watched_file_is_read_afresh_however_the_flags_spell_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--config /abs/b.json --watch b.json`: one file, so never held at its start contents
    from configbags.generated import server_args as record_module
    from configbags.serve.watch import StartFiles

    monkeypatch.chdir(tmp_path)
    watched = tmp_path / "b.json"
    watched.write_text(json.dumps({"speculative_accept_threshold_acc": 0.7}))
    files = StartFiles(Path(record_module.SCHEMA_PATH), Path("b.json"))
    files.read([str(watched)])
    watched.write_text(json.dumps({"speculative_accept_threshold_acc": 0.8}))
    assert files.load(Path("./b.json"))["speculative_accept_threshold_acc"] == 0.8
    assert files.load(watched)["speculative_accept_threshold_acc"] == 0.8
