"""A secret leaf never takes a none-like text (`none`, `Null`, `~`, `nil`, empty) as its
value, from any door: a flag, a config file, the environment, an override. Such a key
would be guessable (`Authorization: Bearer none`) and was most likely meant as "unset".
A secret flag given twice is refused, never silently the last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from serve_server import REPO, free_port

import configbags.generated.accessors as accessors
from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import LeafValueError, RecordError

NONE_WORDS = ["none", "Null", "NONE", "~", "nil", "", "  ", " None ", "<redacted>", " <REDACTED> "]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], environ: dict[str, str]) -> str:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", *argv], environ=environ)
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    return err


@pytest.mark.parametrize("word", NONE_WORDS)
@pytest.mark.parametrize("flag", ["--api-key", "--admin-api-key"])
def test_a_none_like_secret_flag_is_refused_naming_the_flag(
        capsys: pytest.CaptureFixture[str], flag: str, word: str) -> None:
    for argv in ([flag, word], [f"{flag}={word}"]):
        err = _refused(capsys, argv, {})
        assert f"{flag}: serving.{flag[2:].replace('-', '_')} is empty, a word for no value" in err


@pytest.mark.parametrize("word", NONE_WORDS)
@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_a_none_like_secret_in_a_config_file_is_refused_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str, suffix: str) -> None:
    config = tmp_path / f"serve.{suffix}"
    config.write_text(f'{{"api_key": "{word}"}}' if suffix == "json" else f'api_key: "{word}"\n')
    err = _refused(capsys, ["--config", str(config)], {})
    assert f"{config}: serving.api_key (--api-key) is empty, a word for no value" in err


@pytest.mark.parametrize("text", ["api_key:\n", "api_key: ~\n", "api_key: null\n", '{"api_key": null}'])
def test_a_null_secret_in_a_config_file_is_refused_with_nothing_below(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    """A template that rendered nothing (`api_key: {{ .Values.key }}` -> `api_key:`) would
    otherwise start a server whose reads are open, as an empty variable would."""
    config = tmp_path / ("serve.json" if text.startswith("{") else "serve.yaml")
    config.write_text(text)
    err = _refused(capsys, ["--config", str(config)], {})
    assert f"{config}: serving.api_key (--api-key) is empty, a word for no value" in err


@pytest.mark.parametrize("word", ["none", "nil", ""])
def test_a_none_like_secret_in_a_config_file_is_refused_when_a_flag_also_sets_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str) -> None:
    """The flag shadows the file's value, which must still not pass unseen: the same file
    alone is refused, and the environment's `none` is refused over a flag too."""
    config = tmp_path / "serve.yaml"
    config.write_text(f'admin_api_key: "{word}"\nlog_level: debug\n')
    err = _refused(capsys, ["--config", str(config), "--admin-api-key", "k-33cc"], {})
    assert f"{config}: serving.admin_api_key (--admin-api-key) is empty, a word for no value" in err
    assert "k-33cc" not in err


@pytest.mark.parametrize("word", ["~", "nil", "NIL", "none"])
def test_a_none_like_secret_variable_is_refused_naming_the_variable(
        capsys: pytest.CaptureFixture[str], word: str) -> None:
    err = _refused(capsys, [], {"SGLANG_ADMIN_API_KEY": word})
    assert "environment variable SGLANG_ADMIN_API_KEY" in err and "none-like" in err


def test_a_secret_flag_given_twice_is_refused_without_showing_either_value(
        capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--api-key", "k-11aa", "--api-key", "none"], ["--api-key", "k-11aa", "--api-key=k-22bb"]):
        err = _refused(capsys, argv, {})
        assert "--api-key given twice" in err and "k-11aa" not in err and "k-22bb" not in err
    assert ServerArgs.from_cli(["--model-path", "m", "--api-key", "k-11aa"], environ={}).api_key == "k-11aa"


def test_a_none_like_secret_is_refused_in_code_too() -> None:
    with pytest.raises(RecordError, match="serving.api_key .*is empty, a word for no value"):
        ServerArgs(model_path="m", api_key="none")
    assert ServerArgs(model_path="m", api_key=None).api_key is None


@pytest.mark.parametrize("word", ["none", "~", "NIL", "", "<redacted>"])
def test_a_none_like_override_of_a_runtime_secret_is_refused(word: str) -> None:
    leaves = dict(REGISTRY.leaves)
    leaves["weight_version"] = attrs.evolve(leaves["weight_version"], secret=True)
    context = Context(attrs.evolve(REGISTRY, leaves=leaves), type(accessors.get_context().view)(),
                      record_type=ServerArgs)
    context.publish(ServerArgs(model_path="m"), role="tokenizer")
    context.override("rotate", weight_version="real-key-5f")
    with pytest.raises(LeafValueError, match="weight_version from 'rotate': the value is empty, a word"):
        context.override("rotate", weight_version=word)
    assert context.state.values["weight_version"] == "real-key-5f"


def test_none_like_is_the_one_rule() -> None:
    from configbags.runtime.leaftypes import none_like

    assert all(none_like(w) for w in [*NONE_WORDS, None])
    assert not any(none_like(w) for w in ["nonce", "0", "false", "n", "-", "nil-key"])


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "env", "named"), [
    (["--api-key", "none"], {}, "--api-key: serving.api_key"),
    (["--admin-api-key", "none"], {}, "--admin-api-key: serving.admin_api_key"),
    ([], {"SGLANG_API_KEY": "~"}, "environment variable SGLANG_API_KEY"),
])
def test_serve_refuses_a_none_like_key_at_start_up_with_exit_2(
        argv: list[str], env: dict[str, str], named: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "configbags", "serve", "--package", "configbags.generated", "--model-path", "m",
         "--port", str(free_port()), *argv],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr


def test_a_secret_capacity_never_shows_in_a_readback_or_a_refusal() -> None:
    """gen refuses a secret capacity (test_gen_bad_schemas); should a registry hold one,
    neither the door's readback of the bounded leaf nor a 409 message shows its value."""
    from configbags.runtime.errors import CapacityError
    from configbags.serve.door import Door

    leaves = dict(REGISTRY.leaves)
    leaves["decode_log_interval"] = attrs.evolve(leaves["decode_log_interval"], secret=True, hash=False)
    leaves["speculative_num_draft_tokens"] = attrs.evolve(leaves["speculative_num_draft_tokens"],
                                                          capacity="decode_log_interval")
    context = Context(attrs.evolve(REGISTRY, leaves=leaves), type(accessors.get_context().view)(),
                      record_type=ServerArgs)
    context.publish(ServerArgs(model_path="m", decode_log_interval=432), role="launcher")
    info = Door(context).explain("speculative_num_draft_tokens")
    assert info["capacity"] == {"leaf": "decode_log_interval", "value": "<redacted>"}
    with pytest.raises(CapacityError) as refused, context.acting_as("scheduler"):
        context.override("tune", speculative_num_draft_tokens=1000)
    assert "432" not in str(refused.value) and "<redacted>" in str(refused.value)


def test_a_null_override_never_unsets_a_secret_a_lower_layer_set() -> None:
    """A runtime override is the highest layer, and a null there never unsets a secret a
    lower layer set (SCHEMA.md); through the door too, 400 naming the leaf, nothing changed."""
    from configbags.serve.door import Door, DoorError

    leaves = dict(REGISTRY.leaves)
    spec = leaves["weight_version"]
    leaves["weight_version"] = attrs.evolve(spec, secret=True, type=attrs.evolve(spec.type, optional=True))
    context = Context(attrs.evolve(REGISTRY, leaves=leaves), type(accessors.get_context().view)(),
                      record_type=ServerArgs)
    context.publish(ServerArgs(model_path="m", weight_version="real-key-5f"), role="tokenizer")
    with pytest.raises(LeafValueError, match="weight_version from 'rotate': null would unset the secret"):
        context.override("rotate", weight_version=None)
    with pytest.raises(DoorError) as refused:
        Door(context, None).patch("oncall", {"weight_version": None})
    assert refused.value.status == 400 and "weight_version" in str(refused.value.body())
    assert "real-key-5f" not in str(refused.value.body())
    assert context.state.values["weight_version"] == "real-key-5f"
    context.override("rotate", weight_version="next-key-6a")  # another value is still taken
    assert context.state.values["weight_version"] == "next-key-6a"
