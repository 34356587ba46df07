"""The generated ServerArgs command line and config files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from configbags.generated.registry import LEAVES
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import RecordError
from configbags.runtime.leaftypes import jsonable


def _help() -> str:
    parser = argparse.ArgumentParser(prog="server")
    ServerArgs.add_cli_args(parser)
    return parser.format_help()


def test_help_lists_every_cli_leaf_with_help_and_default() -> None:
    text = " ".join(_help().split())  # argparse wraps lines
    shown = [s for s in LEAVES.values() if s.flags]
    assert len(shown) >= 150
    for spec in shown:
        if spec.name == "forward_pass_metrics_ipc_name":  # suppress_help
            assert spec.flags[0] not in text
            continue
        assert spec.flags[0] in text, spec.name
        for alias in spec.flags[1:]:
            assert alias in text, alias
    assert "Tensor" in text
    assert "(default: 1" in text
    assert "--sampling-backend" not in text  # cli: false


def test_defaults_and_required() -> None:
    args = ServerArgs.from_cli(["--model-path", "m"])
    assert args.tp_size == 1
    assert args.kv_cache_dtype == "auto"
    assert args.watchdog_timeout == 300.0
    with pytest.raises(SystemExit):
        ServerArgs.from_cli([])


def test_alias_and_primary_flag_agree() -> None:
    a = ServerArgs.from_cli(["--model", "m", "--tensor-parallel-size", "4", "--ep", "2"])
    assert (a.model_path, a.tp_size, a.ep_size) == ("m", 4, 2)


@pytest.mark.parametrize(
    ("argv", "leaf", "expected"),
    [
        (["--tp-size", "8"], "tp_size", 8),  # int
        (["--watchdog-timeout", "12.5"], "watchdog_timeout", 12.5),  # float
        (["--enable-dp-attention"], "enable_dp_attention", True),  # bool
        (["--no-enable-dp-attention"], "enable_dp_attention", False),  # bool, negative
        (["--enable-lora"], "enable_lora", True),  # optional bool
        (["--schedule-policy", "lpm"], "schedule_policy", "lpm"),  # str with choices
        (["--dist-init-addr", "h:1"], "dist_init_addr", "h:1"),  # optional str
        (["--cuda-graph-bs-decode", "1", "2", "4"], "cuda_graph_bs_decode", (1, 2, 4)),  # list[int]
        (["--lora-target-modules", "q_proj", "v_proj"], "lora_target_modules", ("q_proj", "v_proj")),  # list[str]
        (["--json-model-override-args", '{"a": [1]}'], "json_model_override_args", {"a": [1]}),  # json
        (["--log-requests-level", "3"], "log_requests_level", 3),  # int with choices
    ],
)
def test_each_type_shape(argv: list[str], leaf: str, expected: object) -> None:
    args = ServerArgs.from_cli(["--model-path", "m", *argv])
    assert jsonable(getattr(args, leaf)) == jsonable(expected)


@pytest.mark.parametrize(
    "argv",
    [
        ["--schedule-policy", "fastest"],  # argparse enforces choices
        ["--tp-size", "two"],
        ["--log-requests-level", "7"],
        ["--json-model-override-args", "{not json"],
        ["--tp-size", "0"],  # below min: checked after parsing
    ],
)
def test_bad_values_are_rejected(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        ServerArgs.from_cli(["--model-path", "m", *argv])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_config_file_yaml_and_flag_precedence(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("model_path: /m\ntp_size: 4\npage_size: 16\nlora_target_modules: [q, k]\n")
    args = ServerArgs.from_cli(["--config", str(config), "--tp-size", "8"])
    assert (args.model_path, args.tp_size, args.page_size) == ("/m", 8, 16)
    assert args.lora_target_modules == ("q", "k")
    assert ServerArgs.from_file(config).tp_size == 4


def test_config_file_json(tmp_path: Path) -> None:
    config = tmp_path / "server.json"
    config.write_text(json.dumps({"model_path": "/m", "enable_dp_attention": True, "dp_size": 2}))
    assert ServerArgs.from_cli(["--config", str(config)]).enable_dp_attention is True


def test_config_file_unknown_key_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("model_path: /m\ntp_sise: 4\n")
    with pytest.raises(RecordError, match=r"server.yaml: unknown key 'tp_sise' \(did you mean 'tp_size'\?\)"):
        ServerArgs.from_file(config)


def test_config_file_bad_value_names_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("model_path: /m\nschedule_policy: fastest\n")
    with pytest.raises(RecordError, match=r"server.yaml: key schedule_policy: 'fastest' is not one of"):
        ServerArgs.from_file(config)


def test_record_is_frozen_and_validated() -> None:
    args = ServerArgs(model_path="m")
    with pytest.raises(AttributeError):
        args.tp_size = 2  # type: ignore[misc]
    with pytest.raises(RecordError, match="tp_size.*below the minimum"):
        ServerArgs(model_path="m", tp_size=0)
    assert args.replace(tp_size=2).tp_size == 2
    assert args.tp_size == 1
    assert ServerArgs.from_dict(args.to_dict()) == args


def test_config_file_with_a_non_string_key(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("model_path: /m\ntrue: 1\n")
    with pytest.raises(RecordError, match=r"server.yaml: key True is a bool, not a leaf name; quote it"):
        ServerArgs.from_file(config)
