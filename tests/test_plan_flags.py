"""`configbags plan`'s own flags: ints in the one int grammar (as the record's int flags),
one JSON object on stdout for any failure under --json, and "does not fit" hints that pass
when applied."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configbags.generated.accessors import get_context
from configbags.server import plan as plan_module
from configbags.server.plan import main, parse_bytes

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = str(MODELS / "llama-3.1-8b.json")


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    with get_context().restoring():
        yield


def _record_int_type() -> Any:
    """The function argparse applies to the value of the record's int flag
    `--max-total-tokens` (the parser's registered `int` type)."""
    parser = argparse.ArgumentParser(add_help=False)
    record_type = get_context().record_type
    assert record_type is not None
    record_type.add_cli_args(parser)
    action = next(a for a in parser._actions if "--max-total-tokens" in a.option_strings)
    return parser._registry_get("type", action.type, action.type)


RECORD_INT = _record_int_type()


def record_int(text: str) -> int | None:
    """What the record's int flag makes of `text` (None: refused, as argparse would)."""
    try:
        return int(RECORD_INT(text))
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return None


def plan_ints(text: str) -> dict[str, int | None]:
    """What each int-taking plan flag makes of `text` as one entry (None: refused)."""
    out: dict[str, int | None] = {}
    for name, parse, pick in (("tp", plan_module.parse_int_list, lambda v: v[0]),
                              ("concurrency", plan_module.parse_positive, lambda v: v),
                              ("workload in", plan_module.parse_workload, lambda v: v[0]),
                              ("workload out", lambda t: plan_module.parse_workload(f"1:{t}"), lambda v: v[1])):
        try:
            out[name] = pick(parse(f"{text}:1" if name == "workload in" else text))
        except argparse.ArgumentTypeError:
            out[name] = None
    return out


# (the plan flag's range) each int plan flag takes the record's ints in its range, no others
RANGES = {"tp": (1, 4096), "concurrency": (1, 999_999_999), "workload in": (0, 999_999_999),
          "workload out": (0, 999_999_999)}

INT_ALPHABET = st.sampled_from([*"0123456789_+- \t\u00a0xXoObB", "\u0661", "\u0663", "\uff11", "\u00b2", "a", "f"])


@settings(max_examples=300, deadline=None)
@given(st.text(INT_ALPHABET, max_size=8) | st.integers(-10, 10**10).map(str) | st.integers(0, 4096).map(hex))
def test_a_plan_int_flag_takes_what_the_record_int_flags_take(text: str) -> None:
    expected = record_int(text)
    for name, value in plan_ints(text).items():
        low, high = RANGES[name]
        want = expected if expected is not None and low <= expected <= high else None
        assert value == want, (name, text)


@pytest.mark.parametrize(("flags", "words"), [
    (["--tp-size", "1_0"], "argument --tp-size: '1_0' is not an integer"),
    (["--tp-size", "1,\u0662"], "argument --tp-size: entry '\u0662' of '1,\u0662' is not an integer"),
    (["--tp-size", "2,99999"], "argument --tp-size: entry '99999' of '2,99999'"),
    (["--concurrency", "\u0663"], "argument --concurrency: '\u0663' is not an integer"),
    (["--concurrency", "1_000"], "argument --concurrency: '1_000' is not an integer"),
    (["--workload", "1_000:5"], "argument --workload: IN '1_000' of '1_000:5' is not an integer"),
    (["--workload", "10:\u0665"], "argument --workload: OUT '\u0665' of '10:\u0665' is not an integer"),
    (["--device-memory", "8_0GiB"], "argument --device-memory: '8_0GiB' is not a size"),
    (["--device-memory", "\u0668\u0660GiB"], "argument --device-memory: '\u0668\u0660GiB' is not a size"),
    (["--weight-bytes", "16\u00a0GiB"], "argument --weight-bytes: '16\\xa0GiB' is not a size"),
])
def test_plan_int_and_size_flags_refuse_what_the_one_grammar_refuses(
    flags: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--model-config", LLAMA, "--device-memory", "80GiB", "--fit", *flags])
    assert exc.value.code == 2
    assert words in capsys.readouterr().err


def test_hex_and_signed_ints_are_taken_as_the_record_takes_them() -> None:
    assert plan_module.parse_int_list("0x2,+4, 8") == [2, 4, 8]
    assert plan_module.parse_positive("0o10") == 8
    assert plan_module.parse_workload(" 0x10 : 010 ") == (16, 10)
    assert parse_bytes("0080GiB") == 80 << 30


# --- --json on failure: one JSON object on stdout, the message on stderr too ----------------

JSON_FAILURES = {
    # a wrong input found after parsing (mem_fraction_static has no share on 1 GiB)
    "unresolved": (["--device-memory", "1GiB", "--tp-size", "1", "--page-size", "16"], 2, "SettingsError", {}),
    # does not fit (exit 1)
    "does not fit": (["--device-memory", "80GiB", "--page-size", "16", "--max-total-tokens", "1"], 1, "ContextTooLongError", {}),
    # a usage error of a plan flag, and of a server flag
    "plan flag": (["--device-memory", "80GiB", "--tp-size", "1_0"], 2, "UsageError", {"flag": "--tp-size"}),
    "server flag": (["--device-memory", "80GiB", "--page-size", "x"], 2, "UsageError", {"flag": "--page-size"}),
    "unknown flag": (["--device-memory", "80GiB", "--no-such-flag"], 2, "UsageError", {}),
    # the model file
    "model file": (["--device-memory", "80GiB", "--model-config", "missing.json"], 2, None, {"flag": "--model-config"}),
    "fit": (["--device-memory", "80GiB", "--fit"], 2, "ConfigError", {}),
}


@pytest.mark.parametrize("case", sorted(JSON_FAILURES))
def test_a_failure_under_json_prints_one_json_object(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    flags, status, kind, where = JSON_FAILURES[case]
    argv = ["--model-config", LLAMA, *flags, "--json"]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == status
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]  # exactly one object: json.loads refuses more
    assert "configbags plan: error:" in captured.err
    assert error["message"] and error["message"] in captured.err
    assert error["exit_status"] == status
    if kind is not None:
        assert error["type"] == kind
    for key, value in where.items():
        assert error[key] == value


def test_the_json_failure_of_the_command_line_goes_through_configbags(capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.cli import main as configbags

    assert configbags(["plan", "--model-config", LLAMA, "--device-memory", "1GiB", "--page-size", "16",
                       "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "SettingsError" and "mem_fraction_static is unresolved" in error["message"]


def test_a_chart_without_matplotlib_under_json_is_the_one_object(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_matplotlib(*_: object) -> None:
        raise ImportError("matplotlib")

    monkeypatch.setattr(plan_module, "draw_chart", no_matplotlib)
    argv = ["--model-config", LLAMA, "--device-memory", "80GiB", "--chart", str(tmp_path / "c.png"), "--json"]
    assert main(argv) == 2
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["error", "sglang"] and out["error"]["flag"] == "--chart"


# --- "does not fit": every hint is a value that passes when applied ---------------------

BASE = ["--model-config", LLAMA, "--device-memory", "80GiB", "--page-size", "16"]
DOES_NOT_FIT = {
    # the tester's case: the operator's cap leaves less than a page; the request is the context
    "cap below a page": ([*BASE, "--max-total-tokens", "1"], "context_length=131072"),
    # ... the request is the workload's IN+OUT, not the context
    "cap below a page, workload": ([*BASE, "--max-total-tokens", "1", "--workload", "2000:500"], "2,500 tokens"),
    # ... the request is the given context
    "cap below a page, context": ([*BASE, "--max-total-tokens", "15", "--context-length", "1000"],
                                  "context_length=1000"),
    # a page of one token: the pool holds 1 token, which runs no request
    "cap of one token, page 1": (["--model-config", LLAMA, "--device-memory", "80GiB", "--max-total-tokens", "1"],
                                 "context_length=131072"),
    # --require-full-context and a cap under the context (a page-unaligned one)
    "full context over the cap": ([*BASE, "--max-total-tokens", "50001", "--require-full-context"],
                                  "context_length=131072"),
    "full context over the cap, workload": ([*BASE, "--max-total-tokens", "50001", "--require-full-context",
                                             "--workload", "1000:100"], "context_length=131072"),
    # memory binds
    "full context over memory": (["--model-config", LLAMA, "--device-memory", "24GiB", "--page-size", "16",
                                  "--require-full-context"], "context_length=131072"),
    # memory binds under the operator's fraction: the fraction that fits, alone or with the cap raised
    "full context over the fraction": ([*BASE, "--mem-fraction-static", "0.3", "--require-full-context"],
                                       "context_length=131072"),
    "full context over the fraction and the cap": ([*BASE, "--mem-fraction-static", "0.3", "--require-full-context",
                                                   "--max-total-tokens", "1000"], "context_length=131072"),
    "context over the fraction, workload": ([*BASE, "--mem-fraction-static", "0.3", "--require-full-context",
                                             "--context-length", "100000", "--workload", "3000:1000"],
                                            "context_length=100000"),
    # no KV budget at the operator's fraction, and the cap under the request too
    "budget under the cap": ([*BASE, "--mem-fraction-static", "0.01", "--max-total-tokens", "1"],
                             "context_length=131072"),
    "budget under the cap, workload": ([*BASE, "--mem-fraction-static", "0.01", "--max-total-tokens", "1",
                                        "--workload", "2000:500"], "2,500 tokens"),
    # memory and the cap both bind, and no fraction keeps the reserve
    "full context over memory and the cap": (["--model-config", LLAMA, "--device-memory", "24GiB", "--page-size",
                                              "16", "--require-full-context", "--max-total-tokens", "1000"],
                                             "context_length=131072"),
}

# "raise --flag to at least N", "set --flag N", "and --flag to at least N"
_HINT = re.compile(r"(--[a-z][a-z-]*) (?:to at least )?([0-9][0-9.]*)")


def hints(message: str) -> list[dict[str, str]]:
    """The ways out a refusal offers: each `; `-, `, or `- or `(`-separated clause's flags
    and values (a clause may set several: `... to at least X and --b to at least Y`)."""
    ways = [dict(_HINT.findall(clause)) for clause in re.split(r";|,? or |\(", message)]
    return [way for way in ways if way]


def applied(argv: list[str], way: dict[str, str]) -> list[str]:
    out = list(argv)
    for flag, value in way.items():
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out += [flag, value]
    return out


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", sorted(DOES_NOT_FIT))
def test_every_hint_of_a_does_not_fit_error_passes_when_applied(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, request = DOES_NOT_FIT[case]
    code, out = run_json(argv, capsys)
    assert code == 1, out
    message = out["error"]["message"]
    assert request in message, message
    ways = hints(message)
    assert ways, message
    if "--max-total-tokens" in argv and "no mem_fraction_static" not in message:  # a way that raises the cap
        assert any("--max-total-tokens" in way for way in ways), message
    runs = [applied(argv, way) for way in ways]
    if "leave --max-total-tokens out" in message:
        at = argv.index("--max-total-tokens")
        runs.append(argv[:at] + argv[at + 2:])
    for run in runs:
        with get_context().restoring():
            code, out = run_json(run, capsys)
        assert code == 0, (run, message, out.get("error"))
        if "--workload" in argv:  # the workload is held, not only planned
            assert out["concurrency"]["requests"] >= 1, (run, message)


def test_the_hints_of_a_capped_plan_pass_when_applied(capsys: pytest.CaptureFixture[str]) -> None:
    """A plan that passes but holds no request of the workload (the operator's cap under
    it) and warns of the capped context: each hint, applied, holds it."""
    argv = [*BASE, "--max-total-tokens", "100", "--workload", "2000:500"]
    code, out = run_json(argv, capsys)
    assert code == 0 and out["concurrency"]["requests"] == 0
    reason = out["concurrency"]["reason"]
    assert "raise --max-total-tokens to at least 2512" in reason, reason
    for way in hints(reason):
        with get_context().restoring():
            code, held = run_json(applied(argv, way), capsys)
        assert code == 0 and held["concurrency"]["requests"] >= 1, (way, reason)
    [warning] = [w for w in out["plan"]["warnings"] if "requests are capped" in w]
    for way in hints(warning):
        with get_context().restoring():
            code, full = run_json([*applied(argv, way), "--require-full-context"], capsys)
        assert code == 0 and full["plan"]["max_req_len"] == full["plan"]["context_length"] - 1, (way, warning)


# --- the other refusals' hints: the SWA pool, the mamba slots, --allocate -----------------

OTHER_REFUSALS = {
    # the SWA pool under one window of gpt-oss (128 tokens): a ratio that holds it, or one pool
    "swa pool under a window": ([str(MODELS / "gpt-oss-20b.json"), "--device-memory", "40GiB",
                                 "--swa-full-tokens-ratio", "0.00001"], "cannot hold one window"),
    # ... under the operator's cap, where the ratio must be far larger
    "swa pool under a window, capped": ([str(MODELS / "gpt-oss-20b.json"), "--device-memory", "40GiB",
                                         "--swa-full-tokens-ratio", "0.00001", "--max-total-tokens", "1000"],
                                        "cannot hold one window"),
    # fewer mamba slots than one request holds
    "mamba slots under a request": ([str(MODELS / "qwen3-next-80b-a3b.json"), "--device-memory", "80GiB",
                                     "--tp-size", "4", "--max-mamba-cache-size", "1"], "mamba slots"),
    # --allocate cpu of more than any host has
    "allocate over the host": ([LLAMA, "--device-memory", "800GiB", "--allocate", "cpu"], "--allocate cpu needs"),
}
# "pass --flag" (a switch) and "use --flag word" (a choice), beside the numbers of `_HINT`
_SWITCH = re.compile(r"pass (--[a-z][a-z-]*)")
_CHOICE = re.compile(r"use (--allocate) ([a-z]+)")


def other_hints(message: str) -> list[dict[str, str | None]]:
    ways: list[dict[str, str | None]] = []
    for clause in re.split(r";|,? or |\(", message):
        way: dict[str, str | None] = {**dict(_HINT.findall(clause)), **dict(_CHOICE.findall(clause))}
        way.update(dict.fromkeys(_SWITCH.findall(clause)))
        if way:
            ways.append(way)
    return ways


@pytest.mark.parametrize("case", sorted(OTHER_REFUSALS))
def test_every_hint_of_another_refusal_passes_when_applied(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, said = OTHER_REFUSALS[case]
    argv = ["--model-config", *argv]
    code, out = run_json(argv, capsys)
    assert code == 1, out
    message = out["error"]["message"]
    assert said in message, message
    assert not re.search(r"raise --[a-z-]+(?![a-z-])(?! to at least)", message), message  # every raise says how far
    ways = other_hints(message)
    assert ways, message
    for way in ways:
        run = applied(argv, {flag: value for flag, value in way.items() if value is not None})
        run += [flag for flag, value in way.items() if value is None and flag not in run]
        with get_context().restoring():
            code, out = run_json(run, capsys)
        assert code == 0, (run, message, out.get("error"))
