"""A load-time warning (a later --config file overriding an earlier one's key, a deprecated
spelling, an unknown variable) is printed once per start, also by the commands that layer
the same files more than once: explain (again with a placeholder model path), plan (once per
model and TP size), and serve --watch (again at each change of the watched file)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
import pytest
from serve_server import API_KEY, Server
from test_serve_watch import ConfigMap, settle
from test_serve_watch_layers import watching

from configbags.cli import main as configbags
from configbags.generated.accessors import get_context
from configbags.runtime import record as record_module

MODELS = Path(__file__).resolve().parent.parent / "models"


@pytest.fixture(autouse=True)
def _fresh(caplog: pytest.LogCaptureFixture) -> object:
    record_module._warned.clear()
    caplog.set_level(logging.WARNING, logger="configbags")
    with get_context().restoring():
        yield
    record_module._warned.clear()


def two_files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("weight_version: fromA\n")
    b.write_text("weight_version: fromB\n")
    return a, b


def overrides(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if " overrides " in r.getMessage()]


def test_explain_with_a_placeholder_model_path_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_files(tmp_path)
    assert configbags(["explain", "weight_version", "--config", str(a), "--config", str(b)]) == 0
    assert overrides(caplog) == [f"config file {b} overrides weight_version='fromA' from {a} with 'fromB'"]


def test_plan_over_several_models_and_tp_sizes_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_files(tmp_path)
    models = f"{MODELS / 'llama-3.1-8b.json'},{MODELS / 'llama-3.1-70b.json'}"
    assert configbags(["plan", "--model-config", models, "--device-memory", "80GiB", "--tp-size", "1,2,4",
                       "--config", str(a), "--config", str(b)]) == 0
    assert len(overrides(caplog)) == 1


def test_serve_watch_warns_at_start_and_again_only_for_a_new_override(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"weight_version": "fromA"}))
    cm = ConfigMap(tmp_path / "config")
    cm.publish("weight_version: fromB\nspeculative_accept_threshold_acc: 0.7\n")
    for door, ctx in watching(tmp_path, ["--config", str(a)], cm.file):
        assert len(overrides(caplog)) == 1
        cm.publish("weight_version: fromB\nspeculative_accept_threshold_acc: 0.8\n")  # the same override
        settle(door.watcher)  # type: ignore[arg-type]
        assert ctx.state.values["speculative_accept_threshold_acc"] == 0.8
        assert len(overrides(caplog)) == 1
        cm.publish("weight_version: fromC\nspeculative_accept_threshold_acc: 0.8\n")  # a new one: news
        settle(door.watcher)  # type: ignore[arg-type]
        assert overrides(caplog)[1:] == [f"config file {cm.file} overrides weight_version='fromA' from {a} "
                                         f"with 'fromC'"]


def test_deprecated_and_unknown_variable_warnings_print_once_in_plan(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_NOT_A_SETTING_AT_ALL", "1")
    assert configbags(["plan", "--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "80GiB",
                       "--tp-size", "1,2"]) == 0
    unknown = [r for r in caplog.records if "SGLANG_NOT_A_SETTING_AT_ALL" in r.getMessage()]
    assert len(unknown) == 1


def test_a_forced_rule_warns_once_in_plan_over_several_points(
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """A rule forcing the operator's --page-size resolves again for each model and TP size."""
    assert configbags(["plan", "--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "80GiB",
                       "--tp-size", "1,2,4", "--attention-backend", "trtllm_mha", "--page-size", "8"]) == 0
    forced = [r.getMessage() for r in caplog.records if " forces " in r.getMessage()]
    assert forced == ["rule page_size_trtllm_mha forces schedule.page_size=64 over 8 from --page-size (cli): "
                      "TensorRT-LLM MHA kernels run 16-, 32- or 64-token pages only"]


@pytest.mark.slow
def test_a_served_watch_over_two_ranks_warns_once_through_a_reload(tmp_path: Path) -> None:
    """The real command: `serve --ranks 2 --config A --watch B`, B overriding A, then B
    edited keeping the override: one warning in the whole output."""
    a = tmp_path / "a.yaml"
    a.write_text("weight_version: fromA\n")
    cm = ConfigMap(tmp_path / "config")
    cm.publish("weight_version: fromB\nspeculative_accept_threshold_acc: 0.7\n")
    server = Server("--ranks", "2", "--tp-size", "2", "--api-key", API_KEY, "--config", str(a), "--watch", str(cm.file))
    try:
        cm.publish("weight_version: fromB\nspeculative_accept_threshold_acc: 0.5\n")
        deadline = time.monotonic() + 30  # bounded: a reload not seen fails, it does not hang
        while time.monotonic() < deadline:
            body = httpx.get(f"{server.url}/server_info", headers={"Authorization": f"Bearer {API_KEY}"},
                             timeout=30).json()
            if body["resolved"]["speculative_accept_threshold_acc"] == 0.5:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the reload was not seen within 30 s")
        assert server.terminate() == 0
        output = server.output()
        assert output.count(" overrides weight_version=") == 1, output
    finally:
        server.stop()


def test_a_flag_or_variable_over_a_lower_operator_layer_warns_once_redacting_secrets(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Round fifteen: a flag over a file or a variable, and a variable over a file, hid the
    lower value without a word (a key rotated in the file never applied); now each is one
    warning, secrets redacted. An equal value loses nothing and says nothing."""
    config = tmp_path / "c.yaml"
    config.write_text("api_key: fileKEYnew1\nlog_level: warning\nweight_version: same\n")
    monkeypatch.setenv("SGLANG_API_KEY", "envKEYold1")
    monkeypatch.setenv("SGLANG_LOG_LEVEL", "debug")
    argv = ["explain", "log_level", "--model-path", "m", "--config", str(config), "--log-level", "error",
            "--weight-version", "same"]
    for _ in range(2):  # explain builds the record more than once; a second start says nothing new
        assert configbags(argv) == 0
    said = overrides(caplog)
    assert said == [
        f"environment variable $SGLANG_LOG_LEVEL overrides log_level='warning' from config file {config} with 'debug'",
        f"environment variable $SGLANG_API_KEY overrides api_key='<redacted>' from config file {config} "
        "with '<redacted>'",
        "flag --log-level overrides log_level='debug' from environment variable $SGLANG_LOG_LEVEL with 'error'",
    ], said
    assert not any("KEY" in line.replace("_KEY", "") for line in said)
    assert "fileKEYnew1" not in caplog.text and "envKEYold1" not in caplog.text
