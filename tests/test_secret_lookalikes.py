"""An unknown variable that looks meant for a secret is refused at start, and reported by
lint, by one rule (`runtime.record.secret_lookalike`): another case, a did-you-mean that is
a secret's, a credential word beside a word of a secret's own variable, or nothing but
credential and file words. Real SGLang variables that merely hold such a word (KEY, TOKEN)
among others are only warned about."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from configbags.evolve import lint
from configbags.evolve.view import SchemaView, load_view
from configbags.runtime.errors import RecordError
from configbags.runtime.record import name_words, secret_lookalike

BUNDLED = Path(__file__).resolve().parents[1] / "schema"

# each would start the server with its secret unset (reads open) behind a warning
REFUSED = {
    "SGLANG_API_KEY_PATH": "SGLANG_API_KEY", "SGLANG_API_KEYFILE": "SGLANG_API_KEY",
    "SGLANG_APIKEY_FILE": "SGLANG_API_KEY", "SGLANG_API_KEY_SECRET": "SGLANG_API_KEY",
    "SGLANG_API_KEY__FILE": "SGLANG_API_KEY", "SGLANG_ADMIN_KEY_FILE": "SGLANG_ADMIN_API_KEY",
    "SGLANG_API_SECRET": "SGLANG_API_KEY", "SGLANG_AUTH_TOKEN": "SGLANG_API_KEY",
    "SGLANG_BEARER_TOKEN": "SGLANG_API_KEY", "SGLANG_ADMIN_TOKEN": "SGLANG_ADMIN_API_KEY",
    "SGLANG_TOKEN": "SGLANG_API_KEY", "SGLANG_PASSWORD": "SGLANG_API_KEY", "sglang_auth_token": "SGLANG_API_KEY",
    # a generic qualifier and a credential word (rule 5)
    "SGLANG_ACCESS_TOKEN": "SGLANG_API_KEY", "SGLANG_ACCESS_KEY": "SGLANG_API_KEY",
    "SGLANG_CLIENT_KEY": "SGLANG_API_KEY", "SGLANG_SERVER_TOKEN": "SGLANG_API_KEY",
    "SGLANG_SERVICE_SECRET_FILE": "SGLANG_API_KEY", "SGLANG_ACCESSTOKEN": "SGLANG_API_KEY",
    "SGLANG_MASTER_PASSWORD": "SGLANG_API_KEY",
    # round sixteen: other credential words, and the door's own words for its keys
    "SGLANG_API_PASS": "SGLANG_API_KEY", "SGLANG_API_PWD": "SGLANG_API_KEY", "SGLANG_API_JWT": "SGLANG_API_KEY",
    "SGLANG_READ_PASSWORD": "SGLANG_API_KEY", "SGLANG_OPERATOR_PASSWORD": "SGLANG_API_KEY",
    "SGLANG_JWT": "SGLANG_API_KEY", "SGLANG_ADMIN_PASSPHRASE": "SGLANG_ADMIN_API_KEY",
}
# variables of SGLang itself (python/sglang/srt/environ.py) with KEY or TOKEN among other
# words, a plural TOKENS, secrets of other services, Kubernetes service variables: warned only
WARNED = ["SGLANG_LOG_DECODE_GRAPH_KEY", "SGLANG_SIMULATE_ACC_TOKEN_MODE", "SGLANG_SYNC_TOKEN_IDS_ACROSS_TP",
          "SGLANG_INIT_NEW_TOKEN_RATIO", "SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE", "SGLANG_USE_AITER_FP8_PER_TOKEN",
          "SGLANG_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK", "SGLANG_MAX_THINK_TOKENS",
          "SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION", "SGLANG_HF_TOKEN", "SGLANG_S3_SECRET", "SGLANG_API_KEY_PORT",
          "SGLANG_API_SERVICE_HOST", "SGLANG_TP_SIZEE", "SGLANG_ACCESS_TOKEN_RATIO", "SGLANG_CLIENT_HF_TOKEN",
          "SGLANG_SERVER_KEY_CACHE", "SGLANG_PASS_THROUGH_ARGS", "SGLANG_READ_AHEAD_TOKENS", "SGLANG_PWD_DIR"]


def start(environ: dict[str, str]) -> None:
    from configbags.generated.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    ServerArgs.from_cli_args(parser.parse_args(["--model-path", "m"]), environ=environ)


@pytest.mark.parametrize(("variable", "secret"), REFUSED.items())
def test_a_lookalike_of_a_secret_variable_refuses_the_start(variable: str, secret: str) -> None:
    with pytest.raises(RecordError) as refused:
        start({variable: "SEKLOOK1"})
    message = str(refused.value)
    assert f"environment variable {variable} " in message and f"rename it to {secret}" in message
    assert "SEKLOOK1" not in message


@pytest.mark.parametrize("variable", WARNED)
def test_real_engine_variables_with_a_credential_like_word_only_warn(
        variable: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="configbags"):
        start({variable: "1"})
    if not variable.endswith(("_PORT", "_SERVICE_HOST")):
        assert any(f"{variable} is not a known setting" in r.getMessage() for r in caplog.records)


def test_the_word_rules_hold_where_the_did_you_mean_names_another_variable() -> None:
    """Decoys closer than the secret (by difflib) do not hide a credential word beside a
    secret's own word, or a name of nothing but credential words."""
    secrets = ["APP_API_KEY", "APP_API_KEY_FILE", "APP_ADMIN_API_KEY"]
    known = [*secrets, "APP_API_KEEP_PATH", "APP_AUTH_TOKEM", "APP_ADMIN_TOKEL"]
    assert secret_lookalike("APP_", "APP_API_KEY_PATH", known, secrets) == (
        "APP_API_KEY", "is not a known setting, and names a credential (KEY) with API, a word of APP_API_KEY")
    assert secret_lookalike("APP_", "APP_ADMIN_TOKEN", known, secrets)[0] == "APP_ADMIN_API_KEY"  # type: ignore[index]
    assert secret_lookalike("APP_", "APP_AUTH_TOKEN", known, secrets) == (
        "APP_API_KEY", "is not a known setting, and names nothing but a credential (AUTH/TOKEN), as APP_API_KEY does")
    assert secret_lookalike("APP_", "APP_DECODE_GRAPH_KEY", known, secrets) is None
    assert secret_lookalike("APP_", "OTHER_API_TOKEN", known, secrets) is None  # not under the prefix
    assert secret_lookalike("APP_", "APP_API_TOKEN", known, []) is None  # a schema without secrets


def test_words_split_only_where_both_halves_are_known_words() -> None:
    assert name_words("APIKEY__FILE", {"API"}) == ["API", "KEY", "FILE"]
    assert name_words("API_KEYFILE", {"API"}) == ["API", "KEY", "FILE"]
    assert name_words("MONKEY_AUTHTOKEN") == ["MONKEY", "AUTH", "TOKEN"]


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return load_view(BUNDLED, cache=False)


def test_lint_reports_what_the_server_refuses_by_the_same_rule(tmp_path: Path, view: SchemaView) -> None:
    names = [*REFUSED, *WARNED]
    env = "".join(f"    - {{name: {n}, value: SEKLOOK2}}\n" for n in names)
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: s\n"
                    "    image: i\n    command: [python, -m, sglang.launch_server, --model-path, m]\n    env:\n" + env)
    findings = lint.lint([path], view)
    refused = {f.subject for f in findings if "the server refuses to start with it" in f.message}
    assert refused == set(REFUSED)
    assert "SEKLOOK2" not in repr(findings)
    by_name = {f.subject: f for f in findings}
    assert by_name["SGLANG_AUTH_TOKEN"].fix == "rename it to SGLANG_API_KEY"
