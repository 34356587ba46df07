"""`configbags serve --watch FILE` against the kubelet's exact update sequence, replayed on
local files: a new timestamped folder, the `..data` link swapped onto it by one rename, the
old folder removed. A runtime change is applied (source file:FILE), a startup change is
refused as "restart required", and a malformed or half-written file changes nothing."""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from serve_server import API_KEY, Server

from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.testing import published
from configbags.serve.watch import ConfigWatcher, WatchedDoor


class ConfigMap:
    """A mounted ConfigMap folder, updated the way the kubelet's atomic writer does it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        self.file = root / "config.yaml"
        self.version = 0
        self.current: Path | None = None

    def publish(self, text: str) -> None:
        self.version += 1
        stamp = self.root / f"..2026_12_01_12_00_{self.version:02d}.{self.version:09d}"
        stamp.mkdir()
        (stamp / "config.yaml").write_text(text)
        os.symlink(stamp.name, self.root / "..data_tmp")
        os.rename(self.root / "..data_tmp", self.root / "..data")  # the one atomic step
        if self.current is not None:
            shutil.rmtree(self.current)
        self.current = stamp
        if not self.file.is_symlink():
            os.symlink("..data/config.yaml", self.file)


BASE = "speculative_accept_threshold_acc: 1.0\nweight_version: v1\nschedule_policy: fcfs\n"


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[ConfigMap, ConfigWatcher, Context[Any]]]:
    assert get_context  # the bundled package's context is the one `published` finds
    cm = ConfigMap(tmp_path / "config")
    cm.publish(BASE)
    with watching_server(cm, []) as (watcher, ctx):
        yield cm, watcher, ctx


@contextlib.contextmanager
def watching_server(cm: ConfigMap, flags: list[str]) -> Iterator[tuple[ConfigWatcher, Context[Any]]]:
    """A sealed server started with `flags` and following the ConfigMap's file."""
    flags = ["--model-path", "/models/m", "--config", str(cm.file), *flags]
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    ServerArgs.add_cli_args(parser)
    namespace = parser.parse_args(flags)
    with published(ServerArgs.from_cli(flags), role="launcher") as ctx:
        ctx.seal()
        door = WatchedDoor(ctx)
        # in-place writes read at once here (their quiet period has a test of its own)
        door.watcher = ConfigWatcher(door, cm.file, lambda: ServerArgs.from_cli_args(copy.copy(namespace)),
                                     in_place_quiet=0)
        yield door.watcher, ctx


def settle(watcher: ConfigWatcher) -> None:
    """Poll as the watcher's thread would, until it has read the change (at most 3 polls:
    one to see it, one to see it hold)."""
    for _ in range(3):
        if watcher.poll():
            return
    raise AssertionError("the watcher did not read the change within 3 polls")


def test_a_runtime_change_is_applied_with_the_file_as_source(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    cm, watcher, ctx = watched
    cm.publish(BASE.replace("1.0", "0.5").replace("v1", "v2"))
    assert not watcher.poll()  # seen once: not read until it holds
    settle(watcher)
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.5
    assert ctx.state.values["weight_version"] == "v2"
    assert {e.source for e in ctx.state.log} == {f"file:{cm.file}"}
    assert watcher.status()["last_applied"]["leaves"] == ["speculative_accept_threshold_acc", "weight_version"]
    assert not watcher.poll()  # nothing new


def test_a_startup_change_is_restart_required_not_applied(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    cm, watcher, ctx = watched
    door = watcher.door
    assert isinstance(door, WatchedDoor)
    epoch = ctx.epoch
    cm.publish(BASE.replace("fcfs", "lpm") + "kv_cache_dtype: fp8_e4m3\n")
    settle(watcher)
    assert ctx.epoch == epoch and ctx.state.values["schedule_policy"] == "fcfs"
    info = door.server_info()
    assert info["restart_required"] == ["kv_cache_dtype", "schedule_policy"]
    pending = info["watch"]["restart_required"]
    assert pending["schedule_policy"] == {"running": "fcfs", "file": "lpm", "apply_class": "restart",
                                          "why": "policy startup: fixed at publish; a restart applies it"}
    assert pending["kv_cache_dtype"]["apply_class"] == "reload"  # load_time, and the server is sealed
    health = door.health()  # no key: says a restart is pending, never the file, leaves or values
    assert health["status"] == "ok" and health["details"]["restart_required"] == 2
    assert health["details"]["message"].startswith("restart required: 2 leaves changed in the watched file")
    assert str(cm.file) not in json.dumps(health) and "schedule_policy" not in json.dumps(health)
    # the file says the running value again: nothing is pending any more
    cm.publish(BASE)
    settle(watcher)
    assert door.server_info()["restart_required"] == []


def test_a_value_above_its_running_capacity_waits_for_a_restart_and_the_rest_applies(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    """As rollout plans it: the door would refuse the capacity-bound value (409), and with
    it the whole change, while a restart with the file starts fine (it sizes the capacity
    again); so the leaf is restart required, saying why, and the file's other live leaves
    apply (the file is not one serve would refuse at start)."""
    from configbags.fleet.rollout import plan

    cm, watcher, ctx = watched
    door = watcher.door
    assert isinstance(door, WatchedDoor)
    bound = ctx.state.values["max_speculative_num_draft_tokens"]
    new = BASE.replace("v1", "v2") + f"speculative_num_draft_tokens: {bound + 8}\n"
    cm.publish(new)
    settle(watcher)
    assert ctx.state.values["weight_version"] == "v2"
    assert ctx.state.values["speculative_num_draft_tokens"] != bound + 8
    status = watcher.status()
    assert status["error"] is None and status["last_applied"]["leaves"] == ["weight_version"]
    pending = door.server_info()["watch"]["restart_required"]
    assert list(pending) == ["speculative_num_draft_tokens"]
    why = pending["speculative_num_draft_tokens"]
    assert why["file"] == bound + 8 and why["apply_class"] == "restart"
    assert f"above its capacity max_speculative_num_draft_tokens={bound!r}" in why["why"]
    # rollout's plan of the same two files says the same, leaf by leaf
    old_values, new_values = yaml.safe_load(BASE), yaml.safe_load(new)
    routes = {c.leaf: (c.route, c.why) for c in plan(ctx.registry, old_values, new_values, ctx.state.values).changes}
    assert routes == {"weight_version": ("live", routes["weight_version"][1]),
                      "speculative_num_draft_tokens": ("restart", why["why"])}
    # the file back within its capacity: nothing waits any more
    cm.publish(BASE.replace("v1", "v2"))
    settle(watcher)
    assert door.server_info()["restart_required"] == []


def test_a_malformed_or_half_written_file_changes_nothing(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    cm, watcher, ctx = watched
    state = ctx.state
    cm.publish("speculative_accept_threshold_acc: 0.3\nschedule_policy: [\n")  # malformed YAML
    settle(watcher)
    assert ctx.state is state
    error = watcher.status()["error"]
    assert f"{cm.file}" in error and "nothing was changed" in error
    cm.publish("speculative_accept_threshold_acc: 7.5\n")  # parses, but the value is out of range
    settle(watcher)
    assert ctx.state is state and "speculative_accept_threshold_acc" in watcher.status()["error"]
    assert isinstance(watcher.door, WatchedDoor)
    health = watcher.door.health()  # no key: that the file failed, not where or with what
    assert health["details"]["watch_error"] is True and "could not be applied" in health["details"]["message"]
    assert str(cm.file) not in json.dumps(health) and "7.5" not in json.dumps(health)
    # half-written in place: the write stops mid-line
    assert cm.current is not None
    (cm.current / "config.yaml").write_text("speculative_accept_threshold_acc: 0.3\nweight_ver")
    settle(watcher)
    assert ctx.state is state and watcher.status()["error"] is not None
    # the rest of the write lands: applied, and the error is gone
    (cm.current / "config.yaml").write_text("speculative_accept_threshold_acc: 0.3\nweight_version: v1\n")
    settle(watcher)
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.3
    assert watcher.status()["error"] is None


def test_a_file_written_in_place_is_read_only_once_quiet_and_never_when_empty(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    """A writer that truncates the file, then writes it in pieces with pauses between: the
    empty file and the first piece are never applied; the whole file is, once quiet."""
    cm, watcher, ctx = watched
    watcher.in_place_quiet = 0.4
    assert cm.current is not None
    target = cm.current / "config.yaml"
    state = ctx.state

    def polls_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            watcher.poll()
            time.sleep(0.02)

    target.write_text("")  # truncated: a 0-byte file is never "no settings"
    polls_for(0.6)
    assert ctx.state is state and "is empty" in watcher.status()["error"]
    target.write_text("speculative_accept_threshold_acc: 0.")  # the first piece: parses, as 0.0
    polls_for(0.2)  # a pause shorter than the quiet period
    assert ctx.state is state
    target.write_text(BASE.replace("1.0", "0.75"))  # the rest of the write lands
    polls_for(0.6)
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.75
    assert watcher.status()["error"] is None


def test_a_change_refused_while_a_rank_is_stalled_is_applied_once_the_group_is_back(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A ConfigMap is written once: a change the group could not take for a passing reason
    (503, a rank stalled) must not be lost when the rank comes back."""
    from configbags.serve import watch as watch_module
    from configbags.serve.door import DoorError

    cm, watcher, ctx = watched
    real = watcher._apply_live
    stalled = [True]

    def apply_live(leaves: dict[str, Any]) -> dict[str, Any]:
        if stalled[0]:
            raise DoorError(503, "rank_stalled", "rank 1 of 2 stalled: silent for 2.5 s", "retry", ranks=(1,))
        return real(leaves)

    monkeypatch.setattr(watcher, "_apply_live", apply_live)
    monkeypatch.setattr(watch_module, "RETRY_S", 0.0)
    watcher.interval = 0.01
    cm.publish(BASE.replace("1.0", "0.5"))
    settle(watcher)
    assert "rank_stalled" in watcher.status()["error"] and "tried again" in watcher.status()["error"]
    assert ctx.state.values["speculative_accept_threshold_acc"] == 1.0
    stalled[0] = False  # the rank is back: the same file, unchanged, is applied at the next poll
    time.sleep(0.05)
    assert watcher.poll()
    assert ctx.state.values["speculative_accept_threshold_acc"] == 0.5 and watcher.status()["error"] is None
    assert not watcher.poll()  # and once only


def test_a_tagged_secret_in_the_file_is_refused_once_and_never_shown(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], caplog: pytest.LogCaptureFixture) -> None:
    cm, watcher, ctx = watched
    state = ctx.state
    cm.publish(BASE + "api_key: !!float SEKRET90\n")
    settle(watcher)
    assert ctx.state is state and "!!float" in watcher.status()["error"]
    for _ in range(5):  # the same file again: nothing new to read, nothing logged again
        assert not watcher.poll()
    shown = json.dumps(watcher.status()) + caplog.text
    assert "SEKRET90" not in shown.upper() and caplog.text.count("!!float") == 1


@pytest.mark.parametrize(("keys", "said"), [
    ("api_key: |\n  SEKRET92\n", "serving.api_key (key api_key of the config file {file}) has surrounding whitespace"),
    ('api_key: "SEKRET92 x"\n', "serving.api_key (key api_key of the config file {file}) holds whitespace"),
    ("api_key: SEKRET92\nadmin_api_key: SEKRET92\n", "api_key and admin_api_key are the same key"),
])
def test_a_file_whose_keys_serve_refuses_at_start_changes_nothing(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], caplog: pytest.LogCaptureFixture,
        keys: str, said: str) -> None:
    """A key a restart would refuse (exit 2: a crash loop) is no "restart required": the
    file is refused whole, its live leaves too, and watch.error says why, never the key."""
    cm, watcher, ctx = watched
    door = watcher.door
    assert isinstance(door, WatchedDoor)
    state = ctx.state
    cm.publish(BASE.replace("v1", "v2") + keys)
    settle(watcher)
    assert ctx.state is state and ctx.state.values["weight_version"] == "v1"
    error = watcher.status()["error"]
    said = said.replace("{file}", str(cm.file))  # the key's file is named: the one to fix
    assert error.startswith(f"{cm.file}: a restart would refuse this file: ") and said in error, error
    assert "nothing was changed" in error and door.server_info()["restart_required"] == []
    assert door.health()["details"]["watch_error"] is True
    assert "SEKRET92" not in json.dumps(watcher.status()) + caplog.text
    cm.publish(BASE.replace("v1", "v2") + "api_key: SEKRET92\n")  # a key serve takes: shown as restart required
    settle(watcher)
    assert ctx.state.values["weight_version"] == "v2" and watcher.status()["error"] is None
    assert door.server_info()["restart_required"] == ["api_key"]


def test_a_rebuild_that_fails_unexpectedly_is_reported_once_by_type_only(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], caplog: pytest.LogCaptureFixture) -> None:
    cm, watcher, ctx = watched
    state = ctx.state

    def broken() -> Any:
        raise ValueError("'SEKRET91' is not what it seems")

    watcher.rebuild = broken
    cm.publish(BASE.replace("v1", "v2"))
    settle(watcher)
    for _ in range(5):
        assert not watcher.poll()
    error = watcher.status()["error"]
    assert ctx.state is state and "ValueError" in error and "nothing was changed" in error
    assert "SEKRET91" not in json.dumps(watcher.status()) and caplog.text.count("ValueError") == 1
    assert "SEKRET91" not in "".join(r.getMessage() for r in caplog.records if r.levelno > 10)


@pytest.mark.slow
def test_a_served_watch_applies_on_every_rank_and_shows_restart_required(tmp_path: Path) -> None:
    cm = ConfigMap(tmp_path / "config")
    cm.publish(BASE)
    server = Server("--ranks", "2", "--tp-size", "2", "--api-key", API_KEY, "--watch", str(cm.file))
    headers = {"Authorization": f"Bearer {API_KEY}"}

    def info() -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{server.url}/server_info", headers=headers, timeout=30).json()
        return body

    def wait_for(test: Any) -> dict[str, Any]:
        deadline = time.monotonic() + 30  # bounded: a broken watcher fails, it does not hang
        while time.monotonic() < deadline:
            body = info()
            if test(body):
                return body
            time.sleep(0.05)
        raise AssertionError(f"not seen within 30 s: {body}")

    try:
        cm.publish(BASE.replace("1.0", "0.5"))
        body = wait_for(lambda b: b["resolved"]["speculative_accept_threshold_acc"] == 0.5)
        assert body["overrides"][-1]["source"] == f"file:{cm.file}"
        assert [(r["rank"], r["epoch"]) for r in body["ranks"]] == [(0, 2), (1, 2)]
        cm.publish(BASE.replace("1.0", "0.5").replace("fcfs", "lpm"))
        body = wait_for(lambda b: b["restart_required"] == ["schedule_policy"])
        assert body["resolved"]["schedule_policy"] == "fcfs" and body["epoch"] == 2
        health = httpx.get(f"{server.url}/health", timeout=30).json()
        assert health["details"]["restart_required"] == 1 and str(cm.file) not in json.dumps(health)
        text = httpx.get(f"{server.url}/metrics", headers=headers, timeout=30).text
        restart = [s for f in text_string_to_metric_families(text) if f.name == "configbags_restart_required"
                   for s in f.samples]
        assert [(s.labels, s.value) for s in restart] == [({"leaf": "schedule_policy"}, 1.0)]
        cm.publish("schedule_policy: [\n")
        body = wait_for(lambda b: b["watch"]["error"] is not None)
        assert body["epoch"] == 2 and body["resolved"]["speculative_accept_threshold_acc"] == 0.5
        assert server.proc.poll() is None
    finally:
        server.stop()


def test_an_in_place_edit_that_keeps_size_and_mtime_is_still_read(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]]) -> None:
    cm, watcher, ctx = watched
    assert cm.current is not None
    target = cm.current / "config.yaml"
    before = os.stat(target)
    edited = BASE.replace("v1", "v9")  # same size
    assert len(edited) == len(BASE)
    target.write_text(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -r` the old file
    assert os.stat(target).st_size == before.st_size and os.stat(target).st_mtime_ns == before.st_mtime_ns
    settle(watcher)
    assert ctx.state.values["weight_version"] == "v9"


@pytest.mark.parametrize("bad", ["malformed", "folder", "missing"])
def test_health_never_says_applied_when_nothing_of_the_change_was(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], bad: str) -> None:
    cm, watcher, ctx = watched
    state = ctx.state
    assert cm.current is not None
    target = cm.current / "config.yaml"
    if bad == "malformed":
        target.write_text("weight_version: [\n")
    elif bad == "folder":
        target.unlink()
        target.mkdir()
    else:
        target.unlink()
    for _ in range(3):
        watcher.poll()
    assert ctx.state is state and watcher.status()["error"] is not None
    assert isinstance(watcher.door, WatchedDoor)
    message = watcher.door.health()["details"]["message"]
    assert "is applied" not in message and "could not be applied" in message and "unchanged" in message


def test_a_watcher_thread_that_dies_shows_on_health_and_in_the_log(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], caplog: pytest.LogCaptureFixture) -> None:
    from configbags.serve.door import DoorError

    _, watcher, _ = watched
    assert isinstance(watcher.door, WatchedDoor)
    assert watcher.door.health()["status"] == "ok"
    watcher.interval = float("inf")  # what --watch-interval inf gave: the thread's wait overflows
    watcher.start()
    assert watcher._thread is not None
    watcher._thread.join(timeout=30)
    assert not watcher._thread.is_alive()
    with pytest.raises(DoorError) as refused:
        watcher.door.health()
    assert refused.value.status == 503 and refused.value.code == "watch_stopped"
    assert any(r.levelname == "ERROR" and "watcher" in r.getMessage() and "OverflowError" in r.getMessage()
               for r in caplog.records)
    watcher.stop()


@pytest.mark.parametrize("interval", ["inf", "1e308", "nan", "1e-9", "0", "-1", "3601"])
def test_a_watch_interval_outside_its_bounds_exits_2_naming_the_flag(
        interval: str, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.serve.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", "--watch", "c.yaml", "--watch-interval", interval,
              "--model-path", "m"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--watch-interval" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["socket", "fifo", "proc"])
def test_a_watched_path_that_becomes_no_regular_file_is_reported_as_such(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket, a FIFO or a link to a /proc file where the config was: nothing is applied,
    and the report says what the path leads to (never "applied", never "empty")."""
    import socket

    cm, watcher, ctx = watched
    state = ctx.state
    assert cm.current is not None
    target = cm.current / "config.yaml"
    target.unlink()
    holder = None
    if kind == "socket":
        holder = socket.socket(socket.AF_UNIX)
        monkeypatch.chdir(target.parent)  # a socket's path has a length limit: bind it by its name
        holder.bind(target.name)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        os.symlink("/proc/self/status", target)
    try:
        settle(watcher)
        error = watcher.status()["error"]
        assert ctx.state is state
        assert error is not None and "is not a regular file" in error and "nothing was changed" in error, error
        assert "empty" not in error
        assert isinstance(watcher.door, WatchedDoor)
        assert watcher.door.health()["details"]["watch_error"] is True
    finally:
        if holder is not None:
            holder.close()


@pytest.mark.parametrize(("flags", "said"), [
    (["--watch", "{a}", "--watch", "{b}"], "--watch given twice"),
    (["--watch", "{empty}"], "the file is empty (0 bytes)"),
    (["--ranks", "2", "--tp-size", "2", "--rank-timeout", "1e-9"], "give at least 0.1 seconds"),
    (["--watch", "/proc/self/status"], "not a regular file (a pseudo-file"),
    (["--watch", ""], "--watch needs a file name"),
    (["--watch", "{a}", "--watch-interval", "nan"], "give between 0.05 and 3600 seconds"),
    (["--watch", "{a}", "--watch-interval", "1e400"], "give between 0.05 and 3600 seconds"),
    (["--max-body-bytes", "99999999999999999999"], "--max-body-bytes must be from 1 to"),
    # the dump would replace the watched file without its keys: the next start would be open
    (["--watch", "{a}", "--dump-config", "{a}"], "--dump-config {a} is the --config file {a}"),
])
def test_serve_refuses_what_it_would_silently_follow_wrong(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str) -> None:
    """Two watched files (the first was silently dropped), an empty one at start (the
    server ran on defaults while /health said the file was applied), a rank timeout no
    rank can meet (a torch traceback)."""
    from configbags.serve.cli import main

    files = {"a": tmp_path / "a.yaml", "b": tmp_path / "b.yaml", "empty": tmp_path / "empty.yaml"}
    files["a"].write_text("weight_version: a\n")
    files["b"].write_text("weight_version: b\n")
    files["empty"].write_text("")
    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", *[f.format(**files) for f in flags], "--model-path", "m"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said.format(**files) in err and "Traceback" not in err
    assert files["a"].read_text() == "weight_version: a\n"


def test_a_change_refused_because_a_rank_left_is_not_retried_forever(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank that left comes back only with a restart: the watcher says so once instead of
    trying (and logging) again every second for ever."""
    from types import SimpleNamespace

    from configbags.serve import watch as watch_module
    from configbags.serve.door import DoorError

    cm, watcher, _ = watched
    attempts = []

    def apply_live(leaves: dict[str, Any]) -> dict[str, Any]:
        attempts.append(leaves)
        raise DoorError(503, "rank_unreachable", "rank(s) 1 of 2 left the group", "restart", ranks=(1,))

    monkeypatch.setattr(watcher, "_apply_live", apply_live)
    monkeypatch.setattr(watcher.door, "ranks", SimpleNamespace(gone=lambda: {1: "ended"}))
    monkeypatch.setattr(watch_module, "RETRY_S", 0.0)
    watcher.interval = 0.01
    cm.publish(BASE.replace("1.0", "0.5"))
    settle(watcher)
    error = watcher.status()["error"]
    assert "a rank left the group, so changes wait for a restart" in error and "tried again" not in error
    for _ in range(5):
        time.sleep(0.02)
        assert not watcher.poll()
    assert len(attempts) == 1


def test_the_watched_path_is_logged_escaped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The path is a ConfigMap key's name, outside text: a newline or an ESC in it never
    reaches the log raw (a forged line, a terminal escape); server_info keeps it as JSON."""
    import logging

    path = tmp_path / "a\nconfigbags WARNING FORGED \x1b[31mred.yaml"
    path.write_text("weight_version: a\n")
    flags = ["--model-path", "/models/m", "--config", str(path)]
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    ServerArgs.add_cli_args(parser)
    namespace = parser.parse_args(flags)
    with published(ServerArgs.from_cli(flags), role="launcher") as ctx:
        ctx.seal()
        door = WatchedDoor(ctx)
        watcher = ConfigWatcher(door, path, lambda: ServerArgs.from_cli_args(copy.copy(namespace)), in_place_quiet=0)
        door.watcher = watcher
        path.write_text("weight_version: [1\n")
        with caplog.at_level(logging.WARNING, logger="configbags"):
            settle(watcher)
        assert watcher.status()["error"] is not None and "\n" in watcher.status()["error"]  # JSON keeps it
    lines = [r.getMessage() for r in caplog.records if "cannot read config file" in r.getMessage()]
    assert lines, [r.getMessage() for r in caplog.records]
    assert all("\n" not in line and "\x1b" not in line for line in lines)
    assert "a\\nconfigbags WARNING FORGED \\x1b[31mred.yaml" in lines[0]


@pytest.mark.parametrize("text", ["null\n", "\n", "# rendered nothing\n", "---\n", "~\n"])
def test_a_file_that_says_nothing_changes_nothing(
        watched: tuple[ConfigMap, ConfigWatcher, Context[Any]], text: str) -> None:
    """Round sixteen: a template rendering an unset value (`null`), a blank line or only
    comments was applied as "no settings", and every live leaf the file had set went back
    to its default in silence, while a 0-byte file was refused. It is refused the same way:
    `{}` says "no settings"."""
    cm, watcher, ctx = watched
    cm.publish(BASE.replace("1.0", "0.5"))
    settle(watcher)
    state = ctx.state
    cm.publish(text)
    settle(watcher)
    assert ctx.state is state and ctx.state.values["speculative_accept_threshold_acc"] == 0.5
    error = watcher.status()["error"]
    assert "holds no settings" in error and "write {} to mean no settings" in error, error
    assert isinstance(watcher.door, WatchedDoor) and watcher.door.health()["details"]["watch_error"] is True
    cm.publish("{}\n")  # said so: applied
    settle(watcher)
    assert watcher.status()["error"] is None
    assert ctx.state.values["speculative_accept_threshold_acc"] == 1.0  # the default again


def test_serve_refuses_to_follow_a_file_that_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.serve.cli import main

    nothing = tmp_path / "config.yaml"
    nothing.write_text("null\n")
    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", "--watch", str(nothing), "--model-path", "m"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"--watch {nothing}: the file holds no settings" in err and "Traceback" not in err


@pytest.mark.parametrize("spelling", ["same", "link"])
def test_serve_refuses_a_config_file_that_is_the_watched_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    """Round sixteen: `--config F --watch F` (or a link to F) started, and a key F dropped
    later kept its start-time value from the --config copy, read back as that file's."""
    from configbags.serve.cli import main

    watched = tmp_path / "cfg.yaml"
    watched.write_text("weight_version: v1\n")
    config = watched
    if spelling == "link":
        config = tmp_path / "alias.yaml"
        config.symlink_to(watched.name)
    argv = ["--package", "configbags.generated", "--config", str(config), "--watch", str(watched), "--model-path", "m"]
    assert main(argv) == 2  # before any socket is bound
    err = capsys.readouterr().err
    assert f"--config {config} is the watched file --watch {watched}" in err and "Traceback" not in err


def test_serve_warns_for_its_own_flag_given_twice(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Round seventeen: `--ranks 2 --ranks 1` kept the last in silence, while a server flag
    given twice warns; so does serve's own now (the last wins, as argparse has it)."""
    from configbags.runtime import record as record_module
    from configbags.serve.cli import _parser

    record_module._warned.clear()
    with caplog.at_level(logging.WARNING, logger="configbags"):
        args, _ = _parser(None).parse_known_args(["--rank-timeout", "3", "--rank-timeout", "1", "--max-body-bytes",
                                                  "100"])
    assert args.rank_timeout == 1.0 and args.max_body_bytes == 100
    assert [r.getMessage() for r in caplog.records] == ["--rank-timeout is given twice (3.0, then 1.0): the last wins, 1.0"]
    record_module._warned.clear()
