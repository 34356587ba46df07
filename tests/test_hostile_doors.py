"""The command line, environment and config-file doors against the rest of the hostile
attack: text that is no text (lone surrogates, undecodable argv and environment bytes),
rule functions that raise, numbers outside the one grammar, unbounded sizes, empty or
repeated flags, sources and values of the wrong kind, rule cycles, and a plan with no room
left for activations. Each is refused typed, naming the leaf, flag, variable or rule; the
command line exits 2 without a traceback."""

from __future__ import annotations

import enum
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from genutil import copy_case, generate
from hostile.corpus import HANG_S
from hostile.strategies import PROFILE
from hypothesis import given
from hypothesis import strategies as st

from configbags.cli import main as cli_main
from configbags.generated.accessors import get_context
from configbags.generated.registry import LEAVES, REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError, LeafValueError, RecordError, RuleFunctionError
from configbags.runtime.leaftypes import TypeSpec, float_from_text, int_from_text
from configbags.runtime.record import parse_env
from configbags.runtime.resolve import Facts, GpuFacts, rule_cycles

REPO = Path(__file__).resolve().parent.parent


def _exit_2(argv: list[str], capsys: pytest.CaptureFixture[str], environ: dict[str, str] | None = None) -> str:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(argv, environ={} if environ is None else environ)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# -- text is text (item 14, at the CLI, env and file doors) -----------------------------------

@pytest.mark.parametrize("value", ["\udc80", "a\udcff", "\ud800x"])
def test_a_lone_surrogate_on_the_command_line_is_refused_naming_the_leaf(value: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m", "--host", value], capsys)
    assert "serving.host (--host)" in err and "lone surrogate" in err, err


def test_undecodable_argv_and_environment_bytes_exit_2_naming_the_leaf(tmp_path: Path) -> None:
    # Python decodes argv and environment bytes that are not UTF-8 to lone surrogates.
    code = "from configbags.generated.server_args import ServerArgs; ServerArgs.from_cli()"
    argv = [os.fsencode(sys.executable), b"-c", code.encode(), b"--model-path", b"/m\xff"]
    done = subprocess.run(argv, capture_output=True, timeout=HANG_S)
    assert done.returncode == 2, done.stderr
    assert b"model.model_path (--model-path)" in done.stderr and b"Traceback" not in done.stderr
    env = {**os.environb, b"SGLANG_LOG_LEVEL": b"info\xff"}
    done = subprocess.run([*argv[:-1], b"/m"], capture_output=True, timeout=HANG_S, env=env)
    assert done.returncode == 2, done.stderr
    assert b"SGLANG_LOG_LEVEL" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_lone_surrogate_in_a_config_file_is_refused_naming_the_key(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"server{suffix}"
    # an escape is the only way a file can spell one: the text itself is UTF-8
    path.write_text('{"model_path": "/m", "json_model_override_args": {"k": "\\udc80"}}')
    # YAML's reader refuses the escape itself, naming the line; JSON's is refused with the leaf
    refusal = r"server.yaml:1: .*invalid Unicode" if suffix == ".yaml" else r"json_model_override_args.*lone surrogate"
    with pytest.raises(RecordError, match=refusal):
        ServerArgs.from_file(path)


def test_a_surrogate_in_an_environment_value_is_refused_naming_the_variable(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m"], capsys, environ={"SGLANG_LOG_LEVEL": "info\udcff"})
    assert "environment variable SGLANG_LOG_LEVEL" in err and "lone surrogate" in err, err


def test_a_lone_surrogate_in_a_json_key_or_an_override_is_refused() -> None:
    with pytest.raises(LeafValueError, match="lone surrogate"):
        TypeSpec.parse("json").coerce({"\udc80": 1})
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m"), role="scheduler")
        before = ctx.state
        with pytest.raises(ConfigError, match="lone surrogate"):
            ctx.override("fuzz", model_path="/m\udc80")
        assert ctx.state is before


# -- every error typed (item 17) ---------------------------------------------------------------

def test_a_rule_function_that_raises_is_a_typed_error_naming_the_rule() -> None:
    ctx = get_context()
    # the first rule (in rules order) that reads the device memory is the one that raises
    first = next(r for r in REGISTRY.rules if "gpu.memory_bytes" in r.inputs and r.fn is not None)
    assert first.fn is not None
    with ctx.restoring():
        with pytest.raises(RuleFunctionError, match=rf"rule {first.id} \(schema/rules.yaml:\d+\)"
                                                     rf": its function {first.fn.__name__} raised TypeError") as info:
            ctx.publish(ServerArgs(model_path="/m"), role="launcher", facts=Facts(GpuFacts("x", "lots", 90)))  # type: ignore[arg-type]
        assert "gpu.memory_bytes='lots'" in str(info.value)
        # explain re-evaluates a rule the operator's value kept from applying
        quiet: dict[str, Any] = {r.leaf: 1 for r in REGISTRY.rules if "gpu.memory_bytes" in r.inputs}
        quiet["mem_fraction_static"] = 0.5
        ctx.publish(ServerArgs(model_path="/m", **quiet), role="launcher",
                    facts=Facts(GpuFacts("x", "lots", 90)))  # type: ignore[arg-type]
        with pytest.raises(RuleFunctionError, match="rule mem_fraction_static_from_gpu_memory"):
            ctx.explain("mem_fraction_static")


def test_explain_exits_2_on_a_typed_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["explain", "tp_size", "--model-config", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "/dev/zero is not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize(("flags", "said"), [
    (["--gpu-memory", "80GiB", "--gpu-sm", "-1"], "--gpu-sm"),
    (["--gpu-memory", "80GiB", "--gpu-sm", "9999999999999999999999"], "--gpu-sm"),
    (["--gpu-memory", "80GiB", "--gpu-sm", "\u0669\u0660"], "--gpu-sm"),  # Arabic-Indic 90
    (["--gpu-memory", "99999PiB"], "more than 1 PiB"),
])
def test_explain_facts_out_of_any_range_exit_2_naming_the_flag(
        capsys: pytest.CaptureFixture[str], flags: list[str], said: str) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main(["explain", "attention_backend", *flags])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and said in err and "Traceback" not in err
    assert cli_main(["explain", "attention_backend", "--gpu-memory", "80GiB", "--gpu-sm", "90"]) == 0


# -- one number grammar (low items) ------------------------------------------------------------

INT_TEXTS = {"10": 10, "010": 10, "-1": -1, "+7": 7, "0x1F": 31, "0o17": 15, " 4 ": 4}
NOT_INTS = ["1_000", "٣", "１２", "1.0", "1e3", "", "0b11", "- 5", "0x", "--5", "5\x00"]


@pytest.mark.parametrize(("text", "value"), sorted(INT_TEXTS.items()))
def test_ints_read_alike_on_the_command_line_in_the_environment_and_in_files(
        text: str, value: int, tmp_path: Path) -> None:
    flag = f"--offload-group-size={text}"
    assert ServerArgs.from_cli(["--model-path", "/m", flag], environ={}).offload_group_size == value
    assert parse_env(LEAVES["offload_group_size"], "X", text) == value
    if text == text.strip():
        path = tmp_path / "server.yaml"
        path.write_text(f"model_path: /m\noffload_group_size: {text}\n")
        assert ServerArgs.from_file(path).offload_group_size == value


@pytest.mark.parametrize("text", NOT_INTS)
def test_what_a_config_file_does_not_read_as_an_int_the_command_line_refuses(
        text: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m", f"--offload-group-size={text}"], capsys)
    assert "argument --offload-group-size: invalid int value" in err, err
    with pytest.raises(RecordError, match="environment variable X"):
        parse_env(LEAVES["offload_group_size"], "X", text)


@PROFILE
@given(text=st.text(max_size=8))
def test_the_int_grammar_is_ascii_and_agrees_with_yaml(text: str) -> None:
    from configbags.runtime.yamlsafe import load_yaml

    try:
        value = int_from_text(text)
    except ValueError:
        return
    assert text.strip(" \t\r\n").isascii()
    if text == text.strip() and text and "\n" not in text:
        assert load_yaml(f"x: {text}") == {"x": value}


def test_floats_follow_the_same_grammar(capsys: pytest.CaptureFixture[str]) -> None:
    assert float_from_text("1e-3") == 0.001 and float_from_text("2") == 2.0
    for text in ["1_0.5", "١.٥", "infinity", "nan", "0x1p3"]:
        err = _exit_2(["--model-path", "/m", f"--watchdog-timeout={text}"], capsys)
        assert "invalid float value" in err, err


# -- bounds, choices, empty and repeated flags --------------------------------------------------

SIZING = ["chunked_prefill_size", "tp_size", "dp_size", "pp_size", "ep_size", "max_total_tokens",
          "max_running_requests", "context_length", "page_size", "max_prefill_tokens", "cuda_graph_max_bs_decode"]


def test_every_int_leaf_of_the_bundled_schema_is_bounded() -> None:
    unbounded = [n for n, s in LEAVES.items() if s.type.base in ("int", "float", "list[int]") and s.choices is None
                 and (s.minimum is None or s.maximum is None)]
    assert not unbounded


@pytest.mark.parametrize("leaf", SIZING)
@pytest.mark.parametrize("value", [-5, 10**99, 2**200])
def test_sizing_leaves_refuse_what_no_engine_can_hold(leaf: str, value: int) -> None:
    given: dict[str, Any] = {leaf: value}
    with pytest.raises(RecordError, match=leaf):
        ServerArgs(model_path="/m", **given)


def test_chunked_prefill_size_takes_minus_one_and_refuses_runtime_patches_out_of_range() -> None:
    assert ServerArgs(model_path="/m", chunked_prefill_size=-1).chunked_prefill_size == -1
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m"), role="scheduler")
        for value in (-5, 10**99):
            with pytest.raises(LeafValueError, match="chunked_prefill_size"):
                ctx.override("operator", chunked_prefill_size=value)


def test_an_empty_model_path_and_an_unknown_log_level_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert "model.model_path (--model-path): it is required" in _exit_2(["--model-path", ""], capsys)
    assert "model.model_path" in _exit_2(["--model-path", "   "], capsys)
    assert "invalid choice: 'loud'" in _exit_2(["--model-path", "/m", "--log-level", "loud"], capsys)
    assert ServerArgs.from_cli(["--model-path", "/m", "--log-level", "DEBUG"], environ={}).log_level == "DEBUG"
    assert "environment variable SGLANG_LOG_LEVEL" in _exit_2(["--model-path", "/m"], capsys,
                                                               environ={"SGLANG_LOG_LEVEL": "verbose"})


def test_a_preset_given_twice_exits_2_naming_both(capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m", "--preset", "low-latency", "--preset", "high-throughput"], capsys)
    assert "--preset given twice (low-latency, then high-throughput)" in err


# -- override sources and enum values ------------------------------------------------------------

@pytest.mark.parametrize("source", [None, {"a": 1}, "", "  ", "a\nforged log line", "x" * 201, "\udc80"])
def test_an_override_source_must_be_a_line_of_text(source: Any) -> None:
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m"), role="scheduler")
        before = ctx.state
        with pytest.raises(LeafValueError, match="an override's source must be a line of text"):
            ctx.override(source, disable_radix_cache=True)
        assert ctx.state is before


class Size(enum.IntEnum):
    TWO = 2


class Mode(str, enum.Enum):
    DECODE = "decode"

    def __str__(self) -> str:
        return "Mode.DECODE"


def test_enum_and_subclass_values_are_stored_as_plain_values() -> None:
    args = ServerArgs(model_path="/m", tp_size=Size.TWO, disaggregation_mode=Mode.DECODE,
                      json_model_override_args={Mode.DECODE: [Size.TWO]})
    assert type(args.tp_size) is int and args.tp_size == 2
    assert type(args.disaggregation_mode) is str and args.disaggregation_mode == "decode"
    (key, items), = args.json_model_override_args.items()
    assert type(key) is str and type(items[0]) is int
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(args, role="scheduler")
        (entry,) = ctx.override("operator", dp_size=Size.TWO)
        assert type(entry.new) is int and type(ctx.state.values["dp_size"]) is int


# -- rule cycles, and a plan with nothing left for activations -------------------------------------

def test_rule_cycles_are_warned_at_gen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rule_cycles([("r1", "a", ["b"]), ("r2", "b", ["a", "gpu.sm"]), ("r3", "c", ["c"])]) == [
        "rules r1, r2 set leaves that read one another (a, b): each sees the others' values as resolved so far, "
        "so their order in the rules file decides the result; if that order is deliberate, say why with "
        "`ordered:` on each of them, else have one of them read facts only"]
    # a cycle is accepted once every rule in it says why its order is deliberate; one is not enough
    assert rule_cycles([("r1", "a", ["b"]), ("r2", "b", ["a"])], ordered=["r1", "r2"]) == []
    assert len(rule_cycles([("r1", "a", ["b"]), ("r2", "b", ["a"])], ordered=["r1"])) == 1
    schema = copy_case("tiny", tmp_path)  # width (int) and ratio (optional float) are leaves of it
    (schema / "rules.yaml").write_text(
        "rules:\n"
        "  width_from_ratio:\n    leaf: width\n    fn: math:floor\n    inputs: [ratio]\n    help: w\n"
        "  ratio_from_width:\n    leaf: ratio\n    fn: math:sqrt\n    inputs: [width]\n    help: r\n")
    capsys.readouterr()
    assert generate(schema, tmp_path / "out") == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "warning: rules ratio_from_width, width_from_ratio set leaves that read one another (ratio, width)" in err
    (schema / "rules.yaml").write_text(
        "rules:\n"
        "  width_from_ratio:\n    leaf: width\n    fn: math:floor\n    inputs: [ratio]\n    help: w\n"
        "    ordered: the width follows an operator's ratio\n"
        "  ratio_from_width:\n    leaf: ratio\n    fn: math:sqrt\n    inputs: [width]\n    help: r\n"
        "    ordered: the ratio then follows the width\n")
    assert generate(schema, tmp_path / "out2") == 0, capsys.readouterr().err
    assert "read one another" not in capsys.readouterr().err


def test_plan_refuses_a_negative_activation_budget(tmp_path: Path) -> None:
    config = (REPO / "models" / "llama-3.1-8b.json").read_text()
    model = tmp_path / "config.json"
    # the most positions a model may declare (int32); 10**18 is refused as no real model's
    model.write_text(config.replace('"max_position_embeddings": 131072', '"max_position_embeddings": 2147483647'))
    assert "2147483647" in model.read_text()
    done = subprocess.run([sys.executable, "-m", "configbags", "plan", "--model-config", str(model),
                           "--device-memory", "80GiB", "--context-length", "2147483647"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "leaving nothing for activations" in done.stderr and "Traceback" not in done.stderr


# -- round three: NUL bytes, a zero memory fraction, empty --gpu entries ------------------------

NUL_TEXTS = ["\x00", "/m\x00", "a\x00b"]


@pytest.mark.parametrize("value", NUL_TEXTS)
def test_a_nul_byte_is_refused_at_every_door_naming_the_leaf(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m", "--host", value], capsys)
    assert "serving.host (--host)" in err and "NUL character" in err, err
    err = _exit_2(["--model-path", "/m"], capsys, environ={"SGLANG_LOG_LEVEL": f"info{value}"})
    assert "environment variable SGLANG_LOG_LEVEL" in err and "NUL character" in err, err
    for suffix, text in ((".json", '{"model_path": "/m", "host": "a\\u0000b"}'), (".yaml", 'model_path: /m\nhost: "a\\0b"\n')):
        path = tmp_path / f"server{suffix}"
        path.write_text(text)
        with pytest.raises(RecordError, match=r"serving\.host \(--host\): the string holds a NUL character"):
            ServerArgs.from_file(path)
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m"), role="scheduler")
        before = ctx.state
        with pytest.raises(LeafValueError, match=r"model\.model_path.*NUL character"):
            ctx.override("fuzz", model_path=value)
        assert ctx.state is before


@PROFILE
@given(head=st.text(max_size=6), tail=st.text(max_size=6))
def test_no_str_leaf_takes_a_nul_byte(head: str, tail: str) -> None:
    with pytest.raises(LeafValueError, match="NUL character"):
        TypeSpec.parse("str").coerce(f"{head}\x00{tail}")
    with pytest.raises(LeafValueError, match="NUL character"):
        TypeSpec.parse("json").coerce({"k": [f"{head}\x00{tail}"]})


@pytest.mark.parametrize("value", ["0", "0.0", "-0.5", "1.01"])
def test_mem_fraction_static_is_a_fraction_above_zero(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_2(["--model-path", "/m", "--mem-fraction-static", value], capsys)
    assert "schedule.mem_fraction_static (--mem-fraction-static)" in err, err
    assert ServerArgs.from_cli(["--model-path", "/m", "--mem-fraction-static", "1.0"],
                               environ={}).mem_fraction_static == 1.0


@pytest.mark.parametrize("gpus", ["H100,,H200", "H100,", ",H100", ",", ""])
def test_plan_refuses_an_empty_gpu_entry_naming_the_flag(gpus: str, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.server.plan import main as plan_main

    with pytest.raises(SystemExit) as exc:
        plan_main(["--model-config", str(REPO / "models" / "llama-3.1-8b.json"), "--gpu", gpus])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --gpu:" in err and "empty entry" in err and "Traceback" not in err, err
