"""Config files and the command line against hostile input: alias bombs refused fast,
YAML 1.2 numbers, duplicate keys, special files, and values beyond the input limits, each
a RecordError naming the file (or exit 2 naming the flag), never a traceback."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hostile.corpus import HANG_S, YAML_1_1_TRAPS, billion_laughs, deep_json_text

from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import RecordError, YamlError
from configbags.runtime.yamlsafe import load_json, load_yaml


def _config(tmp_path: Path, body: str, suffix: str = ".yaml") -> Path:
    path = tmp_path / f"server{suffix}"
    path.write_text("model_path: /m\n" + body if suffix == ".yaml" else body)
    return path


def test_billion_laughs_under_a_json_leaf_is_refused_fast(tmp_path: Path) -> None:
    path = _config(tmp_path, f"json_model_override_args: {{bomb: {billion_laughs()}}}\n")
    assert path.stat().st_size < 1000
    start = time.perf_counter()
    with pytest.raises(RecordError, match=r"server.yaml:\d+: cannot read config file: the document expands"):
        ServerArgs.from_file(path)
    assert time.perf_counter() - start < HANG_S


@pytest.mark.parametrize(("text", "value"), sorted(YAML_1_1_TRAPS.items()))
def test_yaml_1_1_traps_read_as_yaml_1_2(text: str, value: object) -> None:
    assert load_yaml(f"x: {text}\n") == {"x": value}


# Explicit tags on a value that is not what they say: one line naming the file and line,
# never a traceback, and never the value (a secret written with a tag, or unquoted after `!`).
@pytest.mark.parametrize(
    "tagged",
    ["!!float SEKRET44", "!!bool SEKRET60", "!!map SEKRET61", "!!float", "!!int SEKRET42", "!!null SEKRET70",
     "!SEKRET34 x", "!<SEKRET41> x", "!!python/object:os.system SEKRET", "!!seq SEKRET"],
)
def test_a_tagged_value_that_is_not_its_tag_is_refused_without_showing_it(tmp_path: Path, tagged: str) -> None:
    with pytest.raises(RecordError, match=r"server.yaml:2: cannot read config file: ") as caught:
        ServerArgs.from_file(_config(tmp_path, f"api_key: {tagged}\n"))
    assert "SEKRET" not in str(caught.value).upper().replace("SERVER", "")


@pytest.mark.parametrize(("tagged", "value"), [("!!str 12", "12"), ("!!float 1e3", 1000.0), ("!!int 0x10", 16),
                                               ("!!bool true", True), ("!!null ~", None), ("!!map {a: 1}", {"a": 1})])
def test_a_tag_that_fits_its_value_is_read(tagged: str, value: object) -> None:
    assert load_yaml(f"x: {tagged}\n") == {"x": value}


def test_tp_size_010_is_ten_and_1_20_is_not_80(tmp_path: Path) -> None:
    assert ServerArgs.from_file(_config(tmp_path, "tp_size: 010\n")).tp_size == 10
    with pytest.raises(RecordError, match=r"key tp_size: '1:20' is not of type 'integer'"):
        ServerArgs.from_file(_config(tmp_path, "tp_size: 1:20\n"))


def test_duplicate_keys_are_refused_naming_both_lines(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"server.yaml:3: cannot read config file: duplicate key 'tp_size' \(first on line 2\); keep one"):
        ServerArgs.from_file(_config(tmp_path, "tp_size: 2\ntp_size: 4\n"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("dp_size: " + "1" * 5000 + "\n", "an integer of 5000 digits is over the limit of 100"),
        ("json_model_override_args: {n: " + "1" * 101 + "}\n", "more than 100 digits"),  # sizes are bounded lower
        ("mem_fraction_static: " + str(2**2000) + "\n", "over the limit"),
        ("json_model_override_args: " + deep_json_text(900) + "\n", "nests deeper than 100"),
        ("json_model_override_args: " + deep_json_text(80) + "\n", "nests deeper than 64"),
        ("json_model_override_args: &a [*a]\n", "recursive alias"),
        ("json_model_override_args: !!python/object/apply:os.system ['true']\n", "a tag that is not JSON data"),
        ("json_model_override_args: {a: \x00}\n", "#x0000"),
    ],
    ids=["5000-digits", "101-digits", "2**2000-float", "900-deep", "80-deep", "recursive-alias", "python-tag", "nul"],
)
def test_values_beyond_the_limits_are_record_errors(tmp_path: Path, body: str, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(RecordError, match="server.yaml") as info:
        ServerArgs.from_file(_config(tmp_path, body))
    assert message in str(info.value)
    assert time.perf_counter() - start < HANG_S


def test_json_config_file_goes_through_the_same_limits(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"server.json: cannot read config file: nests deeper|the document nests deeper"):
        ServerArgs.from_file(_config(tmp_path, '{"model_path": "/m", "json_model_override_args": ' + deep_json_text(5000) + "}", ".json"))
    with pytest.raises(RecordError, match=r"server.json: .*over the limit of 100"):
        ServerArgs.from_file(_config(tmp_path, '{"model_path": "/m", "dp_size": ' + "1" * 5000 + "}", ".json"))


def test_a_fifo_or_device_config_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "server.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(RecordError, match="is not a regular file"):
        ServerArgs.from_file(fifo)
    with pytest.raises(RecordError, match="is not a regular file"):
        ServerArgs.from_file("/dev/zero")
    assert time.perf_counter() - start < HANG_S


@pytest.mark.parametrize("value", [deep_json_text(100_000), "1" * 5000, "[NaN]", '{"a": 1, "a": }'])
def test_cli_json_flag_beyond_the_limits_exits_2(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "/m", "--json-model-override-args", value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--json-model-override-args" in err
    assert "Traceback" not in err


def test_json_loader_limits() -> None:
    with pytest.raises(YamlError, match="nests deeper"):
        load_json(deep_json_text(900))
    assert load_json('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


def test_a_large_plain_document_is_not_called_an_alias_bomb() -> None:
    """The node limit names what made the document large: copies made by aliases, or
    plainly many keys."""
    plain = "".join(f"k{i}: {i}\n" for i in range(60_000))  # 120,000 nodes, no alias
    with pytest.raises(YamlError) as refused:
        load_yaml(plain)
    assert "has more than 100000 nodes (keys, values and items)" in str(refused.value)
    assert "alias" not in str(refused.value)
    with pytest.raises(YamlError, match=r"copies made by aliases \(an alias bomb\?\)"):
        load_yaml(billion_laughs())


def test_a_file_with_nothing_to_read_without_blocking_is_a_typed_refusal(tmp_path: Path) -> None:
    """/proc/kmsg says it is a regular file of 0 bytes, and a read that would block answers
    None: a typed error naming the file, never a TypeError."""
    import io

    from configbags.runtime.yamlsafe import _read_now, load_file

    class WouldBlock(io.RawIOBase):
        def read(self, size: int = -1) -> None:
            return None

    with pytest.raises(YamlError, match="has nothing to read now"):
        _read_now(WouldBlock(), 10, tmp_path / "kmsg")
    kmsg = Path("/proc/kmsg")
    if os.access(kmsg, os.R_OK):
        with pytest.raises((YamlError, OSError)):
            load_file(kmsg)


def test_a_document_that_declares_another_yaml_version_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`%YAML 1.1` says `010` is 8 and `yes` a bool; read by 1.2's rules it would silently
    mean something else to its author."""
    config = tmp_path / "c.yaml"
    for version, said in (("1.1", "declares %YAML 1.1, but config and schema files are read as YAML 1.2"),
                          ("1.0", "incompatible YAML document")):
        config.write_text(f"%YAML {version}\n---\ntp_size: 010\n")
        with pytest.raises(SystemExit) as exited:
            ServerArgs.from_cli(["--model-path", "m", "--config", str(config)], environ={})
        err = capsys.readouterr().err.replace("\n", " ")
        assert exited.value.code == 2 and f"{config}:1:" in err and said in err
    config.write_text("%YAML 1.1\n---\ntp_size: 010\n")
    with pytest.raises(YamlError, match="declares %YAML 1.1"):
        load_yaml(config.read_text())
    config.write_text("%YAML 1.2\n---\ntp_size: 010\n")
    assert ServerArgs.from_cli(["--model-path", "m", "--config", str(config)], environ={}).tp_size == 10
