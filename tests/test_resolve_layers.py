"""Resolution with provenance on the `layers` case schema: each layer's precedence, rules
on facts, force, presets, env variables, deprecations, several config files, the config
dump and --help=KEYWORD."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest
from genutil import CASES, import_generated

from configbags.codegen.emit import emit
from configbags.codegen.model import load_schema
from configbags.codegen.write import write_tree
from configbags.runtime import record as record_module
from configbags.runtime.context._process import CONTEXTS as _CONTEXTS
from configbags.runtime.errors import ConfigError, RecordError
from configbags.runtime.record import origins_of
from configbags.runtime.resolve import Facts, GpuFacts, ModelFacts, resolve

GiB = 1 << 30
H100 = Facts(GpuFacts("H100", 80 * GiB, 90))
BIG = Facts(GpuFacts("B200", 180 * GiB, 100))
TINY_MODEL = ModelFacts(("TinyForCausalLM",))


@pytest.fixture(scope="module")
def mods(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    out = tmp_path_factory.mktemp("layers") / "expected"
    write_tree(out, emit(load_schema(CASES / "layers" / "schema"), "make gen"))
    modules = import_generated(out)
    yield modules
    # Unregister it, so code that finds "the" context of this process is not left guessing.
    _CONTEXTS.pop(modules["accessors"].__package__, None)


@pytest.fixture
def ctx(mods: dict[str, ModuleType]) -> Iterator[Any]:
    context = mods["accessors"].get_context()
    with context.restoring(test=True):
        yield context


@pytest.fixture(autouse=True)
def fresh_warnings() -> Iterator[None]:
    """Deprecations warn once per spelling per process; each test starts afresh."""
    record_module._warned.clear()
    yield
    record_module._warned.clear()


def cli(mods: dict[str, ModuleType], *argv: str, env: dict[str, str] | None = None) -> Any:
    return mods["server_args"].ServerArgs.from_cli(["--name", "n", *argv], environ=env or {})


def from_env(server_args: Any, env: dict[str, str], *argv: str) -> Any:
    """A record from `argv` and `env`, a refusal raised as the RecordError (from_cli exits)."""
    import argparse

    parser = argparse.ArgumentParser()
    server_args.add_cli_args(parser)
    return server_args.from_cli_args(parser.parse_args(list(argv)), environ=env)


def test_each_layer_wins_over_the_ones_below(mods: dict[str, ModuleType], ctx: Any, tmp_path: Path) -> None:
    """ratio: default < hardware rule < model rule < preset-free operator layers; width:
    default < preset < config file < env < CLI; then load_time and runtime overrides."""
    conf = tmp_path / "c.yaml"
    conf.write_text("width: 5\nratio: 0.7\n")
    steps: list[tuple[list[str], dict[str, str], Facts | None, str, Any, str]] = [
        ([], {}, None, "ratio", 0.9, "default"),  # fallback of the schema default
        ([], {}, BIG, "ratio", 0.5, "hardware"),
        ([], {}, Facts(BIG.gpu, TINY_MODEL), "ratio", 0.25, "model"),
        (["--config", str(conf)], {}, Facts(BIG.gpu, TINY_MODEL), "ratio", 0.7, "config_file"),
        (["--preset", "wide"], {}, None, "width", 8, "preset"),
        (["--preset", "wide", "--config", str(conf)], {}, None, "width", 5, "config_file"),
        (["--preset", "wide", "--config", str(conf)], {"TINY_WIDTH": "6"}, None, "width", 6, "env"),
        (["--preset", "wide", "--config", str(conf), "--width", "7"], {"TINY_WIDTH": "6"}, None, "width", 7, "cli"),
    ]
    for argv, env, facts, leaf, value, layer in steps:
        ctx.publish(cli(mods, *argv, env=env), role="boss", facts=facts or Facts())
        explained = ctx.explain(leaf)
        assert (explained["resolved"], explained["layer"]) == (value, layer), (argv, env, facts)
        assert ctx.server_info()["layers"][leaf]["layer"] == layer
    ctx.publish(cli(mods), role="test", facts=BIG)
    ctx.override("loader", ratio=0.6)
    assert ctx.explain("ratio")["layer"] == "load_time"
    ctx.override("tuner", verbose=True)
    assert ctx.explain("verbose")["layer"] == "runtime"
    assert ctx.explain("verbose")["source"].startswith("override from 'tuner' at epoch ")


def test_rules_name_themselves_and_explain_why_others_did_not_apply(mods: dict[str, ModuleType], ctx: Any) -> None:
    ctx.publish(cli(mods), role="boss", facts=H100)
    info = ctx.explain("block")
    assert (info["resolved"], info["rule"]) == (8192, "block_by_gpu_memory")
    assert "schema/rules.yaml:" in info["source"]
    verdicts = {v["rule"]: v for v in info["rules"]}
    assert verdicts["block_by_gpu_memory"]["applied"]
    assert "is false" in verdicts["block_for_backend_b"]["why"]
    ratio = {v["rule"]: v["why"] for v in ctx.explain("ratio")["rules"]}
    assert "is false" in ratio["ratio_on_big_gpus"]
    assert "no fact model.architectures given" in ratio["ratio_for_tiny_models"]


def test_without_facts_rules_do_not_apply_and_explain_says_so(mods: dict[str, ModuleType], ctx: Any) -> None:
    ctx.publish(cli(mods), role="boss")
    info = ctx.explain("block")
    assert (info["resolved"], info["layer"]) == (None, "default")
    assert info["note"] == "no facts were given at publish, so the rules that test them did not apply: block_by_gpu_memory"
    assert "no fact gpu.memory_bytes given" in info["rules"][0]["why"]


def test_without_facts_a_rule_that_tests_only_leaves_applies(mods: dict[str, ModuleType], ctx: Any) -> None:
    ctx.publish(cli(mods, "--backend", "b"), role="boss")
    info = ctx.explain("block")
    assert (info["resolved"], info["layer"], info["rule"]) == (64, "hardware", "block_for_backend_b")
    assert info["note"].endswith("did not apply: block_by_gpu_memory")  # only the rule that needs one


def test_operator_input_wins_over_rules(mods: dict[str, ModuleType], ctx: Any) -> None:
    ctx.publish(cli(mods, "--block", "4"), role="boss", facts=H100)
    info = ctx.explain("block")
    assert (info["resolved"], info["layer"], info["source"]) == (4, "cli", "--block")
    assert "operator input wins" in info["rules"][0]["why"]


def test_force_wins_over_the_operator_and_warns_naming_both(
    mods: dict[str, ModuleType], ctx: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="configbags"):
        ctx.publish(cli(mods, "--backend", "b", "--block", "4"), role="boss", facts=H100)
    info = ctx.explain("block")
    assert (info["resolved"], info["rule"]) == (64, "block_for_backend_b")
    assert info["origin"]["forced_over"] == {"layer": "cli", "source": "--block"}
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "forces core.block=64 over 4 from --block" in warning
    assert "backend b only runs 64-token blocks" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="configbags"):  # the operator agrees: no warning
        ctx.publish(cli(mods, "--backend", "b", "--block", "64"), role="boss", facts=H100)
    assert not [r for r in caplog.records if "forces" in r.getMessage()]


def test_preset_loses_to_anything_explicit(mods: dict[str, ModuleType], ctx: Any) -> None:
    ctx.publish(cli(mods, "--preset", "wide", "--no-loud"), role="boss")
    assert (ctx.explain("width")["layer"], ctx.explain("width")["source"]) == ("preset", "preset wide")
    assert (ctx.state.values["loud"], ctx.explain("loud")["layer"]) == (False, "cli")


@pytest.mark.parametrize(
    ("var", "text", "leaf", "value"),
    [
        ("TINY_WIDTH", "12", "width", 12),
        ("TINY_LOUD", "yes", "loud", True),
        ("TINY_LOUD", "0", "loud", False),
        ("TINY_ITEMS", "4, 8", "items", (4, 8)),
        ("TINY_ITEMS", "[16]", "items", (16,)),
        ("TINY_EXTRA", '{"a": [1]}', "extra", {"a": [1]}),
        ("TINY_EXTRA", "none", "extra", None),
        ("TINY_HOME", "/data", "home", "/data"),  # an env-only leaf
    ],
)
def test_env_values_parse_by_type(mods: dict[str, ModuleType], var: str, text: str, leaf: str, value: Any) -> None:
    record = cli(mods, env={var: text})
    assert json.dumps(getattr(record, leaf), default=dict) == json.dumps(value, default=dict)
    assert origins_of(record, mods["registry"].LEAVES)[leaf].source == f"${var}"


@pytest.mark.parametrize(("var", "text"), [("TINY_WIDTH", "two"), ("TINY_LOUD", "maybe"),
                                           ("TINY_WIDTH", "0"), ("TINY_EXTRA", "{bad")])
def test_env_errors_name_the_variable(mods: dict[str, ModuleType], var: str, text: str) -> None:
    with pytest.raises(RecordError, match=var):
        mods["server_args"].ServerArgs.from_cli_args(_ns(mods, ["--name", "n"]), environ={var: text})


def _ns(mods: dict[str, ModuleType], argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    mods["server_args"].ServerArgs.add_cli_args(parser)
    return parser.parse_args(argv)


def test_unknown_env_under_the_prefix_warns_with_did_you_mean(
    mods: dict[str, ModuleType], caplog: pytest.LogCaptureFixture
) -> None:
    env = {"TINY_WIDHT": "3", "TINY_SERVICE_HOST": "10.0.0.1", "TINY_PORT_8000_TCP_ADDR": "10.0.0.1",
           "TINY_SERVICE_PORT_HTTP": "80", "TINY_PORT": "tcp://10.0.0.1:80", "OTHER_THING": "1"}
    with caplog.at_level(logging.WARNING, logger="configbags"):
        cli(mods, env=env)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages  # Kubernetes service variables and other prefixes pass
    assert "TINY_WIDHT is not a known setting (did you mean 'TINY_WIDTH'?)" in messages[0]


def test_deprecated_spellings_warn_once_each_from_cli_file_and_env(
    mods: dict[str, ModuleType], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text("lanes: 3\n")
    with caplog.at_level(logging.WARNING, logger="configbags"):
        for _ in range(2):
            assert cli(mods, "--lanes", "4").width == 4
            assert cli(mods, "--config", str(conf)).width == 3
            assert cli(mods, "--old-knob", "1").old_knob == 1
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3, messages  # one per spelling: --lanes, the file key lanes, --old-knob
    assert "--lanes is deprecated; use --width instead" in messages[0]
    assert f"{conf}: lanes is deprecated; use width instead" in messages[1]
    assert "--old-knob is deprecated since 1.5, removed in 3.0; use --width instead" in messages[2]


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--breadth", "3"], {}, "--breadth was removed in 2.0; use --width instead"),
        ([], {"TINY_BREADTH": "3"}, "$TINY_BREADTH was removed in 2.0; use $TINY_WIDTH instead"),
        (["--gone-knob", "1"], {}, "--gone-knob was removed in 2.0 (deprecated since 1.0); use --width instead"),
    ],
)
def test_removed_spellings_fail_naming_the_replacement(
    mods: dict[str, ModuleType], argv: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(RecordError) as exc:
        mods["server_args"].ServerArgs.from_cli_args(_ns(mods, ["--name", "n", *argv]), environ=env)
    assert message in str(exc.value)
    with pytest.raises(RecordError, match="breadth was removed in 2.0; use width"):
        mods["server_args"].ServerArgs.from_dict({"name": "n", "breadth": 3})


def test_config_files_layer_in_order_and_warn_per_overridden_key(
    mods: dict[str, ModuleType], ctx: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.json"
    a.write_text("width: 3\nloud: true\n")
    b.write_text('{"width": 4, "loud": true}')
    with caplog.at_level(logging.WARNING, logger="configbags"):
        record = cli(mods, "--config", str(a), "--config", str(b))
    assert (record.width, record.loud) == (4, True)
    assert origins_of(record, mods["registry"].LEAVES)["width"].source == str(b)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [f"config file {b} overrides width=3 from {a} with 4"]  # loud agrees: silent


def test_dump_config_reproduces_the_run(mods: dict[str, ModuleType], ctx: Any, tmp_path: Path) -> None:
    dump = tmp_path / "resolved.yaml"
    record = cli(mods, "--preset", "wide", "--backend", "b", "--token", "s3cret", "--dump-config", str(dump),
                 env={"TINY_ITEMS": "5,6"})
    ctx.publish(record, role="boss", facts=Facts(BIG.gpu, TINY_MODEL))
    first = (dict(ctx.state.values), ctx.config_hash())
    text = dump.read_text()
    assert "s3cret" not in text and "token" in text  # named in the comment as left out
    # On a machine without facts, the dump alone gives the same values (rules included).
    ctx.publish(cli(mods, "--config", str(dump), "--token", "s3cret"), role="boss", facts=Facts())
    assert (dict(ctx.state.values), ctx.config_hash()) == first
    assert ctx.explain("ratio")["layer"] == "config_file"


def test_help_keyword_and_group(mods: dict[str, ModuleType], capsys: pytest.CaptureFixture[str]) -> None:
    server_args = mods["server_args"].ServerArgs
    for argv, present, absent in (
        (["--help=block"], ["--block"], ["--width", "--loud", "--backend"]),
        (["--help=core"], ["--width", "--block", "--loud"], ["--config"]),
        (["--help=nothing-like-this"], ["no flag matches", "groups: core"], ["--width"]),
    ):
        with pytest.raises(SystemExit):
            server_args.from_cli(argv, environ={})
        out = capsys.readouterr().out
        for text in present:
            assert text in out, (argv, text)
        for text in absent:
            assert text not in out, (argv, text)


def test_a_bad_rule_function_answer_names_the_rule(mods: dict[str, ModuleType]) -> None:
    registry = mods["registry"].REGISTRY
    rule = attrs.evolve(registry.rules[0], fn=lambda memory: 0)  # below block's min of 1
    broken = attrs.evolve(registry, rules=(rule,))
    values = {n: s.default for n, s in registry.leaves.items()}
    with pytest.raises(ConfigError, match=r"rule block_by_gpu_memory \(schema/rules.yaml:2\) gave core.block"):
        resolve(broken, values, {}, H100)


@pytest.mark.parametrize("typo", ["SGLANG_API_KEYY", "SGLANG_APIKEY", "SGLANG_ADMIN_API_KEYS"])
def test_a_mistyped_secret_variable_is_refused_naming_it_never_its_value(typo: str) -> None:
    """Ignored, a typo of a secret's variable would leave the secret unset (an api key:
    reads open to anyone) behind a warning; the same typo as a flag is refused."""
    import argparse

    from configbags.generated.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    with pytest.raises(RecordError) as refused:
        ServerArgs.from_cli_args(parser.parse_args(["--model-path", "m"]), environ={typo: "SEKRET-ENV-1"})
    assert f"environment variable {typo} is not a known setting, and is close to SGLANG_" in str(refused.value)
    assert "the variable of the secret" in str(refused.value) and "SEKRET-ENV-1" not in str(refused.value)


def test_a_typo_close_to_no_secret_is_still_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    import argparse

    from configbags.generated.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    with caplog.at_level(logging.WARNING, logger="configbags"):
        ServerArgs.from_cli_args(parser.parse_args(["--model-path", "m"]), environ={"SGLANG_TP_SIZEE": "2"})
    warned = [r.getMessage() for r in caplog.records if "SGLANG_TP_SIZEE is not a known setting" in r.getMessage()]
    # compared without the prefix every name shares: nothing is close (SGLANG_API_KEY is not)
    assert warned and "did you mean" not in warned[0]


@pytest.mark.parametrize(("variable", "near"), [
    ("TINY_TOKEN_FILES", "TINY_TOKEN_FILE"),  # the did-you-mean: a secret's _FILE form
    ("TINY_TOKENS", "TINY_TOKEN"),
    ("tiny_token", "TINY_TOKEN"),  # the secret's variable in another case
    ("Tiny_Token_File", "TINY_TOKEN_FILE"),
])
def test_a_variable_that_looks_meant_for_a_secret_fails_closed(mods: dict[str, ModuleType], variable: str,
                                                                near: str) -> None:
    """Derived from the schema's secret leaves (here the case schema's `token`): ignored,
    each would start the server with the secret unset behind a warning."""
    with pytest.raises(RecordError) as refused:
        from_env(mods["server_args"].ServerArgs, {variable: "SEKRET-ENV-2"}, "--name", "n")
    message = str(refused.value)
    assert f"environment variable {variable} " in message and f"rename it to {near}" in message
    assert "the secret core.token" in message and "SEKRET-ENV-2" not in message


@pytest.mark.parametrize(("variable", "near"), [
    ("SGLANG_API_TOKEN", "SGLANG_API_KEY"),  # a did-you-mean that names the secret's variable
    ("SGLANG_ADMIN_TOKEN", "SGLANG_ADMIN_API_KEY"),
    ("sglang_api_key", "SGLANG_API_KEY"),
    ("SGLANG_API_KEY_FILES", "SGLANG_API_KEY_FILE"),
])
def test_a_lookalike_of_the_api_key_fails_closed(variable: str, near: str) -> None:
    from configbags.generated.server_args import ServerArgs

    with pytest.raises(RecordError, match=f"rename it to {near} ") as refused:
        from_env(ServerArgs, {variable: "SEKRET-ENV-3"}, "--model-path", "m")
    assert "SEKRET-ENV-3" not in str(refused.value)


def test_a_secret_variable_may_name_a_file_holding_it(mods: dict[str, ModuleType], ctx: Any,
                                                      tmp_path: Path) -> None:
    """TINY_TOKEN_FILE=/run/secrets/t, the Docker and Kubernetes way: read through the one
    bounded file reader, one trailing newline stripped."""
    (tmp_path / "t").write_text("s3cret-from-file\n")
    record = cli(mods, env={"TINY_TOKEN_FILE": str(tmp_path / "t")})
    assert record.token == "s3cret-from-file"
    assert origins_of(record, mods["registry"].LEAVES)["token"].source == "$TINY_TOKEN_FILE"
    (tmp_path / "crlf").write_text("s3cret\r\n\n")  # one newline only: the other is the key's
    assert cli(mods, env={"TINY_TOKEN_FILE": str(tmp_path / "crlf")}).token == "s3cret\r\n"


def test_a_secret_file_variable_is_refused_naming_the_file_never_its_text(mods: dict[str, ModuleType],
                                                                          tmp_path: Path) -> None:
    import os

    key = tmp_path / "key"
    key.write_text("SEKRET-FILE-4\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # read, it would block the start for ever
    (tmp_path / "empty").write_text("\n")
    for env, expected in (
        ({"TINY_TOKEN_FILE": str(key), "TINY_TOKEN": "SEKRET-ENV-4"}, "TINY_TOKEN and TINY_TOKEN_FILE are both set"),
        ({"TINY_TOKEN_FILE": str(tmp_path / "missing")}, f"cannot read '{tmp_path / 'missing'}'"),
        ({"TINY_TOKEN_FILE": str(fifo)}, f"{fifo} is not a regular file (a FIFO)"),
        ({"TINY_TOKEN_FILE": str(tmp_path)}, "is not a regular file (a folder)"),
        ({"TINY_TOKEN_FILE": " "}, "TINY_TOKEN_FILE is set but empty"),
        ({"TINY_TOKEN_FILE": str(tmp_path / "empty")}, "TINY_TOKEN_FILE names for the secret core.token, is empty"),
    ):
        with pytest.raises(RecordError) as refused:
            from_env(mods["server_args"].ServerArgs, env, "--name", "n")
        assert expected in str(refused.value), env
        assert "SEKRET" not in str(refused.value)
