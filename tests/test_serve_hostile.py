"""The HTTP door under hostile input: a lone surrogate is refused naming the leaf with
nothing applied, a readback renders whatever string reached the state, keys no client
could send are refused at start-up naming the reason (never the key), an empty or
none-like secret in a higher layer never turns auth off, and the start-up line says what
is protected."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile.strategies import PROFILE
from hypothesis import given
from hypothesis import strategies as st
from serve_server import REPO, free_port

import configbags.generated.accessors  # noqa: F401  (registers the process context)
from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, LeafValueError
from configbags.runtime.testing import published

pytest.importorskip("fastapi")

from configbags.serve.app import Readback, create_app
from configbags.serve.door import Door, DoorError, check_keys, parse_patch, protection

ADMIN_KEY = "admin-key-3c9d"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


class Client:
    """The app in this process, through httpx's ASGI transport (no server, no port)."""

    def __init__(self, app: Any) -> None:
        self._transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=self._transport, base_url="http://door") as c:
                return await c.request(method, path, **kwargs)

        return asyncio.run(go())

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", path, **kwargs)


@pytest.fixture
def client(config_scope: Context[Any]) -> Client:
    config_scope.publish(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher")
    config_scope.seal()
    return Client(create_app(Door(config_scope)))


# -- text is text -------------------------------------------------------------------------

def test_a_patch_of_a_lone_surrogate_is_refused_naming_the_leaf_and_nothing_is_applied(client: Client) -> None:
    before = client.get("/server_info").json()["epoch"]
    body = b'{"source": "ops", "leaves": {"weight_version": "\\udc80", "chunked_prefill_size": 4096}}'
    response = client.patch("/config", content=body, headers={**ADMIN, "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["leaf"] == "weight_version" and "lone surrogate" in response.json()["message"]
    after = client.get("/server_info")
    assert after.status_code == 200 and after.json()["epoch"] == before
    assert after.json()["resolved"]["chunked_prefill_size"] != 4096  # all or none
    assert client.get("/config/weight_version").status_code == 200


def test_a_surrogate_deep_in_a_value_or_a_key_is_refused_too() -> None:
    body = json.dumps({"source": "ops", "leaves": {"x": {"a": [{"\udc80": 1}]}}}).encode()
    with pytest.raises(DoorError) as info:
        parse_patch(body)
    assert info.value.status == 400 and info.value.leaf == "x"


def test_a_readback_renders_any_string_that_reached_the_state(client: Client, config_scope: Context[Any]) -> None:
    rendered = Readback({"v": "a\udc80b", "ok": "é"}).body
    assert json.loads(rendered) == {"v": "a\udc80b", "ok": "é"}  # the same JSON value, \u-escaped
    scope = config_scope.scoped("planted", weight_version="\udc80")
    try:
        scope.__enter__()
    except LeafValueError:
        pytest.skip("the value doors refuse lone surrogates, so none can reach the state")
    try:
        for path in ("/server_info", "/config/weight_version"):
            response = client.get(path)
            assert response.status_code == 200, (path, response.text)
    finally:
        scope.__exit__(None, None, None)
    assert client.get("/server_info").status_code == 200


# -- keys that could never match -------------------------------------------------------------

@pytest.mark.parametrize(("key", "reason"), [
    ("", "is empty"),
    ("ключ-доступа", "non-ASCII"),
    ("key\udcff\udcfe", "not valid UTF-8"),
    (" padded-key", "surrounding whitespace"),
    ("padded-key\t", "surrounding whitespace"),
    ("SEKRET9 --tp-size=2", "holds whitespace"),  # flags written as one word: the key took the next flag
    ("read key with inner spaces", "holds whitespace"),
    ("ctrl\x01key", "control characters"),
])
@pytest.mark.parametrize("leaf", ["api_key", "admin_api_key"])
def test_a_key_no_client_could_send_is_refused_naming_the_reason(leaf: str, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_keys(REGISTRY, {leaf: key})
    message = str(info.value)
    assert reason in message and f"serving.{leaf}" in message and f"--{leaf.replace('_', '-')}" in message
    assert not key or key not in message  # never echoed


def test_one_key_for_reading_and_changing_is_refused_never_echoed() -> None:
    with pytest.raises(ConfigError, match="api_key and admin_api_key are the same key") as info:
        check_keys(REGISTRY, {"api_key": "shared-SEKRET", "admin_api_key": "shared-SEKRET"})
    assert "SEKRET" not in str(info.value)


def test_usable_keys_pass() -> None:
    check_keys(REGISTRY, {"api_key": "read-key_0d2e~+/=", "admin_api_key": None})


@pytest.mark.slow  # starts `configbags serve`, which exits before it listens
@pytest.mark.parametrize(("env", "argv", "reason"), [
    ({}, ["--api-key", "ключ"], "non-ASCII"),
    ({b"SGLANG_API_KEY": b"k\xffey"}, [], "SGLANG_API_KEY"),
    ({}, ["--api-key", "same-key", "--admin-api-key", "same-key"], "are the same key"),
    # a client's variable (fleet check, rollout) given to the server: it would start open
    ({b"CONFIGBAGS_API_KEY": b"SEKRET-c1"}, [], "give the key to the server as --api-key or $SGLANG_API_KEY"),
    ({b"CONFIGBAGS_ADMIN_KEY": b"SEKRET-c2"}, ["--api-key", "read-key-1"],
     "give the key to the server as --admin-api-key or $SGLANG_ADMIN_API_KEY"),
    # ignored, each would start with reads open (attack nine #5)
    ({b"SGLANG_API_TOKEN": b"SEKRET"}, [], "is close to SGLANG_API_KEY, the variable of the secret"),
    ({b"sglang_api_key": b"SEKRET"}, [], "differs only in case from SGLANG_API_KEY"),
    ({b"SGLANG_API_KEY_FILE": b"/nonexistent/k"}, [], "cannot read '/nonexistent/k', the file of the secret"),
])
def test_serve_refuses_an_unusable_key_at_start_up_with_exit_2(
        env: dict[bytes, bytes], argv: list[str], reason: str) -> None:
    environ = {**os.environb, **env}
    done = subprocess.run(
        [sys.executable, "-m", "configbags", "serve", "--model-path", "m", "--port", str(free_port()), *argv],
        cwd=REPO, env=environ, capture_output=True, timeout=120,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert reason in stderr and "Traceback" not in stderr and "SEKRET" not in stderr


@pytest.mark.parametrize(("environ", "values", "said"), [
    ({"CONFIGBAGS_API_KEY": "SEKRET-c3"}, {}, "$CONFIGBAGS_API_KEY is set in this server's environment"),
    ({"CONFIGBAGS_API_KEY": ""}, {"admin_api_key": ADMIN_KEY}, "its own serving.api_key is not set"),
    ({"CONFIGBAGS_ADMIN_KEY": "SEKRET-c3"}, {"api_key": "read-key-1"}, "--admin-api-key or $SGLANG_ADMIN_API_KEY"),
    ({"CONFIGBAGS_API_KEY": "SEKRET-c3"}, {"api_key": "read-key-1"}, None),  # the server has its own: no mix-up
    ({"CONFIGBAGS_ADMIN_KEY": "x"}, {"admin_api_key": ADMIN_KEY}, None),
    ({"SGLANG_API_KEY": "read-key-1"}, {}, None),
])
def test_a_clients_key_variable_on_a_server_without_its_own_key_is_refused(
        environ: dict[str, str], values: dict[str, Any], said: str | None) -> None:
    from configbags.serve.door import check_client_variables

    if said is None:
        check_client_variables(REGISTRY, values, environ)
        return
    with pytest.raises(ConfigError) as info:
        check_client_variables(REGISTRY, values, environ)
    assert said in str(info.value) and "SEKRET" not in str(info.value)


# -- auth cannot be turned off by accident ----------------------------------------------------

@pytest.mark.parametrize("value", ["", "none", "null", " NULL "])
@pytest.mark.parametrize(("leaf", "variable"), [("api_key", "SGLANG_API_KEY"), ("admin_api_key", "SGLANG_ADMIN_API_KEY")])
def test_an_empty_or_none_like_secret_in_the_environment_never_unsets_the_config_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], leaf: str, variable: str, value: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"{leaf}: file-key-0d2e\n")
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", "--config", str(config)], environ={variable: value})
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert f"environment variable {variable} is empty or none-like" in err and str(config) in err
    assert "file-key-0d2e" not in err


def test_an_empty_flag_never_unsets_the_environments_secret(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", "--api-key", ""], environ={"SGLANG_API_KEY": "env-key-77aa"})
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--api-key is empty or none-like" in err and "SGLANG_API_KEY" in err


@pytest.mark.parametrize("value", ["", "None", "NULL", "  "])
def test_an_empty_secret_variable_is_refused_even_with_nothing_below(
        capsys: pytest.CaptureFixture[str], value: str) -> None:
    """An empty Kubernetes secret (`SGLANG_API_KEY=`) must not start a server whose key is
    off: a secret is left off by leaving its variable unset."""
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m"], environ={"SGLANG_API_KEY": value})
    err = capsys.readouterr().err
    assert info.value.code == 2 and "SGLANG_API_KEY is set but empty or none-like" in err
    assert ServerArgs.from_cli(["--model-path", "m"], environ={}).api_key is None
    real = ServerArgs.from_cli(["--model-path", "m"], environ={"SGLANG_API_KEY": "env-key-77aa"})
    assert real.api_key == "env-key-77aa"


@pytest.mark.parametrize("later", ["api_key: null\n", "api_key: ~\n", '{"api_key": null}'])
def test_a_later_config_file_never_unsets_an_earlier_files_secret(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], later: str) -> None:
    first, second = tmp_path / "keys.yaml", tmp_path / ("k2.json" if later.startswith("{") else "k2.yaml")
    first.write_text("api_key: file-key-0d2e\n")
    second.write_text(later)
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", "--config", str(first), "--config", str(second)], environ={})
    err = capsys.readouterr().err
    assert info.value.code == 2 and "empty or none-like" in err and str(first) in err
    assert "file-key-0d2e" not in err


def test_the_start_up_line_says_what_is_protected() -> None:
    assert protection({}) == "reads are OPEN to anyone (no --api-key); changes are disabled (no --admin-api-key)"
    assert protection({"api_key": "a", "admin_api_key": "b"}) == (
        "reads need the api key (or the admin key); changes need the admin key")
    assert protection({"admin_api_key": "b"}).startswith("reads are OPEN")


# -- the property (joins `make fuzz`) -----------------------------------------------------------

# any text, lone surrogates included (hypothesis leaves them out of st.text by default)
ANY_TEXT = st.text(alphabet=st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
                   max_size=30)


@PROFILE
@given(value=ANY_TEXT, also=st.one_of(st.none(), ANY_TEXT))
def test_any_text_patch_is_applied_or_refused_and_every_readback_still_answers(value: str, also: str | None) -> None:
    with published(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher") as ctx:
        ctx.seal()
        _patch_property(ctx, value, also)


def _patch_property(ctx: Context[Any], value: str, also: str | None) -> None:
    client = Client(create_app(Door(ctx)))
    before = ctx.epoch
    leaves: dict[str, Any] = {"weight_version": value}
    if also is not None:
        leaves[also] = 1  # as a leaf name too
    body = json.dumps({"source": "fuzz", "leaves": leaves}).encode()  # ASCII: surrogates as \u escapes
    response = client.patch("/config", content=body, headers={**ADMIN, "content-type": "application/json"})
    assert response.status_code in (200, 400, 403, 409), response.text  # a refusal, never a 500
    if response.status_code != 200:
        assert ctx.epoch == before  # nothing applied
    for path in ("/server_info", "/config/weight_version", "/health"):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize(("value", "code"), [(None, "key_unset"), ("", "unusable_key"), (" x", "unusable_key"),
                                             ("k\u00e9", "unusable_key"), ("a\u0001b", "unusable_key")])
@pytest.mark.parametrize("leaf", ["api_key", "admin_api_key"])
def test_a_patch_never_unsets_a_key_nor_sets_one_no_client_could_send(
        config_scope: Context[Any], leaf: str, value: str | None, code: str) -> None:
    """A schema that lets the operator write a key (`writers: [operator]`) must not let a
    PATCH turn the door's protection off, nor set a key the start-up checks refuse."""
    config_scope.publish(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher")
    door = Door(config_scope)
    epoch = config_scope.epoch
    with pytest.raises(DoorError) as info:
        door.patch("t", {leaf: value})
    assert (info.value.status, info.value.code, info.value.leaf) == (400, code, leaf)
    assert config_scope.epoch == epoch


@pytest.mark.parametrize(("leaf", "value"), [("api_key", ADMIN_KEY), ("admin_api_key", "read-key-7f1e")])
def test_a_patch_never_makes_the_read_key_the_admin_key(config_scope: Context[Any], leaf: str, value: str) -> None:
    config_scope.publish(ServerArgs(model_path="m", api_key="read-key-7f1e", admin_api_key=ADMIN_KEY), role="launcher")
    door = Door(config_scope)
    epoch = config_scope.epoch
    with pytest.raises(DoorError, match="are the same key") as info:
        door.patch("t", {leaf: value})
    assert (info.value.status, info.value.code) == (400, "unusable_key") and config_scope.epoch == epoch


# -- round three: NUL bytes, huge integers, the role named -----------------------------------

def test_a_patch_of_a_nul_byte_is_refused_naming_the_leaf(client: Client) -> None:
    before = client.get("/server_info").json()["epoch"]
    response = client.patch("/config", json={"source": "ops", "leaves": {"weight_version": "v\x001"}}, headers=ADMIN)
    assert response.status_code == 400 and response.json()["leaf"] == "weight_version", response.text
    assert "NUL character" in response.json()["message"]
    assert client.get("/server_info").json()["epoch"] == before


@PROFILE
@given(digits=st.integers(min_value=101, max_value=6000), negative=st.booleans(),
       nested=st.booleans())
def test_a_patch_of_a_huge_integer_is_refused_naming_the_leaf_and_the_bound(
        digits: int, negative: bool, nested: bool) -> None:
    number = ("-" if negative else "") + "9" * digits
    leaf, value = ("json_model_override_args", f'{{"a": [{number}]}}') if nested else ("chunked_prefill_size", number)
    body = f'{{"source": "ops", "leaves": {{"{leaf}": {value}}}}}'.encode()
    with pytest.raises(DoorError) as refused:
        parse_patch(body)
    assert refused.value.status == 400 and refused.value.leaf == leaf
    assert f"{digits} digits" in refused.value.message and "CONFIGBAGS_LIMIT_INT_DIGITS" in refused.value.message
    assert "Exceeds the limit" not in refused.value.message  # Python's own words, naming neither


def test_a_refused_patch_names_the_role_acting_not_the_one_that_published(client: Client) -> None:
    for leaves in ({"chunked_prefill_size": -5}, {"weight_version": 5}):
        response = client.patch("/config", json={"source": "ops", "leaves": leaves}, headers=ADMIN)
        assert response.status_code == 400, response.text
        message = response.json()["message"]
        assert "in role 'operator'" in message and "launcher" not in message, message


@pytest.mark.parametrize("ranks", ["0", "-1", "65", "1000"])
def test_a_rank_count_outside_its_bounds_exits_2_before_any_process_starts(
        ranks: str, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.serve.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", "--ranks", ranks, "--tp-size", ranks, "--model-path", "m"])
    assert exited.value.code == 2 and "--ranks must be from 1 to 64" in capsys.readouterr().err


@pytest.mark.parametrize("timeout", ["1e308", "1e10", "86401", "0", "nan"])
def test_a_rank_timeout_outside_its_bounds_exits_2_naming_the_flag(
        timeout: str, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.serve.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", "--ranks", "2", "--tp-size", "2", "--rank-timeout", timeout,
              "--model-path", "m"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--rank-timeout" in err and "Traceback" not in err


def test_more_connections_than_the_descriptor_limit_allows_exit_2_naming_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Past the descriptor limit every accept fails (round nine's #7): a cap above it is
    refused at start, naming what the limit leaves room for."""
    import resource

    import configbags.serve.cli as serve_cli
    from configbags.serve.cli import main

    def listening(*args: object, **kw: object) -> None:
        raise AssertionError("serve went on to listen")

    monkeypatch.setattr(resource, "getrlimit", lambda which: (1280, 1280))
    monkeypatch.setattr(serve_cli, "bind", listening)  # a regression fails here, never serves
    with pytest.raises(SystemExit) as exited:
        main(["--package", "configbags.generated", "--max-connections", "30000", "--model-path", "m"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--max-connections 30000 is more than this process can open" in err
    assert "room for 1024" in err and "Traceback" not in err


def test_a_package_with_a_leaf_named_like_a_door_route_is_refused_at_start() -> None:
    """GET /config/contracts answers the contracts document: a leaf of that name (the
    generator refuses one; a package built otherwise) would have no explain over HTTP."""
    import attrs

    from configbags.generated.accessors import get_context

    spec = REGISTRY.leaves["weight_version"]
    registry = attrs.evolve(REGISTRY, leaves={**REGISTRY.leaves, "contracts": attrs.evolve(spec, name="contracts")})
    ctx: Context[Any] = Context(registry, get_context().view, record_type=ServerArgs)
    with pytest.raises(ConfigError, match="leaf 'contracts' is named like the door's route GET /config/contracts"):
        Door(ctx)


# -- one credential, one route ----------------------------------------------------------------

READ_KEY = "read-key-5e1a"


@pytest.fixture
def keyed(config_scope: Context[Any]) -> Client:
    config_scope.publish(ServerArgs(model_path="m", api_key=READ_KEY, admin_api_key=ADMIN_KEY), role="launcher")
    config_scope.seal()
    return Client(create_app(Door(config_scope)))


@pytest.mark.parametrize(("method", "path"), [("PATCH", "/config"), ("GET", "/server_info"),
                                              ("GET", "/config/weight_version"), ("GET", "/metrics"),
                                              ("GET", "/config/contracts")])
@pytest.mark.parametrize("order", ["admin first", "read first"])
def test_two_authorization_headers_are_a_400_whichever_comes_first(
        keyed: Client, method: str, path: str, order: str) -> None:
    """RFC 9110 allows one: taking the first let the door and a proxy that reads the last
    see different credentials (`Bearer admin` then `Bearer read` changed the config)."""
    keys = [f"Bearer {ADMIN_KEY}", f"Bearer {READ_KEY}"]
    headers = [("Authorization", k) for k in (keys if order == "admin first" else keys[::-1])]
    before = keyed.get("/server_info", headers=ADMIN).json()["epoch"]
    body = json.dumps({"source": "ops", "leaves": {"weight_version": "v9"}}).encode()
    response = keyed.request(method, path, headers=[*headers, ("content-type", "application/json")],
                             content=body if method == "PATCH" else None)
    assert response.status_code == 400 and response.json()["error"] == "duplicate_authorization", response.text
    assert ADMIN_KEY not in response.text and READ_KEY not in response.text
    assert keyed.get("/server_info", headers=ADMIN).json()["epoch"] == before
    # one header, either key, is still read as before
    assert keyed.get(path if method == "GET" else "/server_info", headers={"Authorization": keys[1]}).status_code == 200


@pytest.mark.parametrize("path", ["/health/", "/metrics/", "/server_info/", "/config/weight_version/", "/config/",
                                  "/openapi.json/"])
def test_a_trailing_slash_is_a_404_never_a_redirect_built_from_the_host_header(keyed: Client, path: str) -> None:
    """Starlette's slash redirect answered without a key, its Location taken from the
    client's Host header (`Host: evil.example:1` -> `http://evil.example:1/health`)."""
    response = keyed.get(path, headers={"Host": "evil.example:1"})
    assert response.status_code == 404 and "location" not in response.headers, (response.status_code, response.headers)
    assert "evil.example" not in response.text
