"""`fleet check` without servers: the servers file and URL arguments, and the comparison of
readings (schema skew between servers, a contract nobody binds)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from configbags.fleet.check import (
    EXIT_BROKEN,
    EXIT_UNREACHABLE,
    Reading,
    Target,
    compare,
    exit_code,
    parse_targets,
)
from configbags.runtime.errors import ConfigError


def test_urls_roles_and_a_servers_file_with_keys_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = tmp_path / "fleet.yaml"
    servers.write_text("servers:\n  - {url: 'http://d:1', role: decode, key_env: DECODE_KEY}\n"
                       "  - {url: 'http://r:1'}\n")
    monkeypatch.setenv("DECODE_KEY", "k-decode")
    targets = parse_targets(["http://p:1", "prefill=http://p:2"], servers, "k-all")
    assert targets == [Target("http://p:1", None, "k-all"), Target("http://p:2", "prefill", "k-all"),
                       Target("http://d:1", "decode", "k-decode"), Target("http://r:1", None, "k-all")]
    assert "k-decode" not in repr(targets)  # keys stay out of reprs and logs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("servers:\n  - {url: 'http://d:1', key_env: NOT_SET_ANYWHERE_1}\n", "NOT_SET_ANYWHERE_1 (key_env) is not set"),
        ("servers:\n  - {url: 'http://d:1', rol: decode}\n", "unknown key(s) rol"),
        ("servers:\n  - {role: decode}\n", "servers[0] needs a `url:` string"),
        ("servers: {a: 1}\n", "expected `servers:` with a list"),
        ("servers:\n  - {url: 'ftp://d:1'}\n", "is not an http(s) URL"),
        ("servers: [\n", "cannot read the servers file"),
    ],
)
def test_a_bad_servers_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    servers = tmp_path / "fleet.yaml"
    servers.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_targets([], servers, None)


def contracts(role: str, fingerprint: str, members: tuple[str, ...] = ("page_size",),
              version: str = "0.5") -> dict[str, Any]:
    return {"role": role, "schema_version": version, "contracts": {"routing": {
        "roles": ["router", "engine"], "fingerprint": fingerprint, "help": "h",
        "members": {m: {"value": 1, "layer": "default", "source": "schema default"} for m in members}}}}


def test_servers_on_different_schemas_are_a_failure_not_a_guess() -> None:
    readings = [Reading(Target("http://a:1"), contracts("router", "f1")),
                Reading(Target("http://b:1"), contracts("engine", "f2", ("page_size", "block_size"), "0.6"))]
    findings = compare(readings)
    assert [(f.kind, f.contract) for f in findings] == [("definition", "routing")]
    assert "schema versions 0.5, 0.6" in findings[0].message
    assert exit_code(readings, findings) == EXIT_BROKEN


def test_an_unreadable_server_is_exit_3_when_nothing_else_is_broken() -> None:
    readings = [Reading(Target("http://a:1"), contracts("router", "f1")),
                Reading(Target("http://b:1"), contracts("engine", "f1")),
                Reading(Target("http://c:1"), error="no answer within 2 s")]
    findings = compare(readings)
    assert [(f.kind, f.contract) for f in findings] == [("ok", "routing")]
    assert exit_code(readings, findings) == EXIT_UNREACHABLE


def kv(role: str, roles: Sequence[str] | None = ("prefill", "decode"), fingerprint: str = "f1") -> dict[str, Any]:
    """A readback whose kv_transfer contract binds `roles` (None: not declared at all)."""
    body: dict[str, Any] = {"role": role, "schema_version": "0.5", "contracts": {}}
    if roles is not None:
        body["contracts"]["kv_transfer"] = {"roles": list(roles), "fingerprint": fingerprint, "help": "h",
                                            "members": {"kv_cache_dtype": {"value": "auto", "layer": "default"}}}
    return body


@pytest.mark.parametrize(("decode", "how"), [
    (kv("decode", None), "does not declare it"),  # an older schema, or a fork without contracts.yaml
    ({"role": "decode", "schema_version": "0.5", "contracts": {}}, "does not declare it"),
    (kv("decode", []), "declares it for roles (none) only"),
    (kv("decode", ["prefill"]), "declares it for roles prefill only"),
])
def test_a_server_of_a_bound_role_that_does_not_declare_the_contract_fails(decode: dict[str, Any], how: str) -> None:
    readings = [Reading(Target("http://p:1"), kv("prefill")), Reading(Target("http://d:1", "decode"), decode)]
    findings = compare(readings)
    [found] = [f for f in findings if f.contract == "kv_transfer"]
    assert found.kind == "definition" and found.fails
    assert f"kv_transfer: http://d:1 (decode) {how}, but http://p:1 (prefill) binds decode servers" in found.message
    assert exit_code(readings, findings) == EXIT_BROKEN


def test_a_contract_binding_one_server_read_fails_unless_allowed_by_name() -> None:
    """A decode server started with --deployment-role engine reports engine: kv_transfer then
    binds the prefill server alone, and nothing is compared."""
    readings = [Reading(Target("http://p:1"), kv("prefill")), Reading(Target("http://d:1"), kv("engine"))]
    findings = compare(readings)
    [found] = [f for f in findings if f.contract == "kv_transfer"]
    assert found.kind == "alone" and "binds http://p:1 (prefill), but no other server read is of roles decode, " \
        "prefill" in found.message and "--allow-unchecked kv_transfer" in found.message
    assert exit_code(readings, findings) == EXIT_BROKEN
    allowed = compare(readings, allow_unchecked={"kv_transfer"})
    assert [(f.kind, f.contract) for f in allowed] == [("unchecked", "kv_transfer")]
    assert exit_code(readings, allowed) == 0
    # its partner may be among the servers not read: retry, not "fix the config"
    unread = [*readings, Reading(Target("http://d:2"), error="no complete answer within 2 s")]
    assert exit_code(unread, compare(unread)) == EXIT_UNREACHABLE


def test_a_contract_no_server_read_binds_stays_a_note() -> None:
    readings = [Reading(Target("http://a:1"), kv("router")), Reading(Target("http://b:1"), kv("engine"))]
    findings = compare(readings)
    assert [(f.kind, f.contract) for f in findings] == [("unchecked", "kv_transfer")]
    assert exit_code(readings, findings) == 0
