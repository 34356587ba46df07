"""Round twenty-two's server findings 3, 4 and 6: a `--config` or `--watch` file name that
is not UTF-8 is refused at start naming the flag (it would become every leaf's source, and
no readback could carry it); the watcher's `file:FILE` source passes the door's source rule
whatever the path (long, or holding a newline), so a change is applied, and two long paths
keep two sources; a key the start-up rule refuses names where it came from (the config
file and key, or the `_FILE` variable and its file)."""

from __future__ import annotations

import argparse
import copy
import os
from pathlib import Path
from typing import Any

import pytest

import configbags.generated.accessors  # noqa: F401  (registers the process context)
from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError
from configbags.runtime.record import origins_of
from configbags.runtime.testing import published

pytest.importorskip("fastapi")

from configbags.serve.door import check_keys, source_problem
from configbags.serve.watch import ConfigWatcher, WatchedDoor, watch_source

SERVE = ["--package", "configbags.generated", "--model-path", "/m", "--api-key", "readk"]


# -- finding 3: a file name that is not UTF-8 -------------------------------------------------
@pytest.mark.parametrize("flag", ["--config", "--watch"])
def test_a_file_name_that_is_not_utf8_is_refused_at_start_naming_the_flag(
        flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.serve.cli import main

    name = os.fsdecode(b"c\xff.yaml")  # what Python makes of the byte: a lone surrogate
    path = tmp_path / name
    path.write_text("page_size: 16\n")
    with pytest.raises(SystemExit) as exited:
        main([*SERVE, flag, str(path)])
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert flag in err and "not UTF-8" in err and "\\udcff" in err and "Traceback" not in err


def test_a_non_ascii_utf8_file_name_still_sets_its_leaves(tmp_path: Path) -> None:
    path = tmp_path / "réglages.yaml"
    path.write_text("page_size: 16\n")
    record = ServerArgs.from_cli(["--model-path", "/m", "--config", str(path)])
    assert record.page_size == 16
    assert origins_of(record, REGISTRY.leaves)["page_size"].source == str(path)


# -- finding 4: the watcher's source passes the door's rule ------------------------------------
LONG = Path("cm") / ("d" * 120) / ("e" * 100) / "w.yaml"


@pytest.mark.parametrize("path", [LONG, Path("w\nx.yaml"), Path("w\u2028\x1b[2Jx.yaml"), Path("/" + "f" * 300)])
def test_the_watch_source_passes_the_doors_rule_whatever_the_path(path: Path) -> None:
    source = watch_source(path)
    assert source.startswith("file:") and source_problem(source) is None, source
    assert "\n" not in source and "\x1b" not in source


def test_two_long_watched_paths_keep_two_sources_and_a_short_one_is_as_given() -> None:
    other = Path(str(LONG).replace("d" * 120, "d" * 119 + "x"))
    assert watch_source(LONG) != watch_source(other)
    assert watch_source(LONG) == watch_source(LONG)  # stable: one file, one source across restarts
    assert watch_source(LONG).endswith(watch_source(LONG)[-12:]) and "w.yaml" in watch_source(LONG)
    assert watch_source(Path("/etc/config/config.yaml")) == "file:/etc/config/config.yaml"


@pytest.mark.parametrize("relative", [str(LONG), "w\nx.yaml"])
def test_a_change_of_a_watched_file_with_a_long_or_newline_path_is_applied(
        relative: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    file = Path(relative)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("weight_version: v1\n")
    flags = ["--model-path", "/models/m", "--config", str(file)]
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    ServerArgs.add_cli_args(parser)
    namespace = parser.parse_args(flags)
    with published(ServerArgs.from_cli(flags), role="launcher") as ctx:
        ctx.seal()
        door = WatchedDoor(ctx)
        watcher = ConfigWatcher(door, file, lambda: ServerArgs.from_cli_args(copy.copy(namespace)), in_place_quiet=0)
        door.watcher = watcher
        file.write_text("weight_version: v2\n")
        stat = os.stat(file)
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # seen as changed at once
        for _ in range(3):
            if watcher.poll():
                break
        assert watcher.status()["error"] is None, watcher.status()["error"]
        assert ctx.state.values["weight_version"] == "v2"


# -- finding 6: a refused key names where it came from ------------------------------------------
def _refusal(argv: list[str], environ: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("SGLANG_API_KEY", "SGLANG_API_KEY_FILE", "SGLANG_ADMIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    record: Any = ServerArgs.from_cli(["--model-path", "/m", *argv])
    with pytest.raises(ConfigError) as info:
        check_keys(REGISTRY, record.to_dict(), origins_of(record, REGISTRY.leaves), os.environ)
    return str(info.value)


def test_a_refused_key_from_a_config_file_names_the_file_and_its_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text('api_key: "k-1\\n"\n')
    message = _refusal(["--config", str(conf)], {}, monkeypatch)
    assert str(conf) in message and "key api_key" in message and "surrounding whitespace" in message
    assert "--api-key" not in message and "k-1" not in message


def test_a_refused_key_from_a_file_variable_names_the_variable_and_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keyfile = tmp_path / "keyfile"
    keyfile.write_text("k-1\n\n")
    message = _refusal([], {"SGLANG_API_KEY_FILE": str(keyfile)}, monkeypatch)
    assert "$SGLANG_API_KEY_FILE" in message and str(keyfile) in message and "surrounding whitespace" in message
    assert "--api-key" not in message and "k-1" not in message


@pytest.mark.parametrize(("argv", "environ", "named"), [
    (["--api-key", " k-1"], {}, "--api-key"),
    ([], {"SGLANG_API_KEY": "k-1 "}, "$SGLANG_API_KEY"),
])
def test_a_refused_key_from_a_flag_or_its_variable_names_that_flag_or_variable(
        argv: list[str], environ: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(argv, environ, monkeypatch)
    assert f"serving.api_key ({named})" in message and "k-1" not in message


def test_a_refused_key_with_no_origin_known_still_names_the_flag_and_variable() -> None:
    with pytest.raises(ConfigError, match=r"serving\.api_key \(--api-key / \$SGLANG_API_KEY\)"):
        check_keys(REGISTRY, {"api_key": "k-1\n"})


def test_serve_names_the_config_file_of_a_refused_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from configbags.serve.cli import main

    for name in ("SGLANG_API_KEY", "SGLANG_API_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "conf.yaml"
    conf.write_text('api_key: "k-1\\n"\n')
    assert main(["--package", "configbags.generated", "--model-path", "/m", "--config", str(conf)]) == 2
    err = capsys.readouterr().err
    assert str(conf) in err and "key api_key" in err and "k-1" not in err
