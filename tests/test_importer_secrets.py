"""`configbags import-dataclass` and fields named like a credential (`api_key`,
`hf_token`, `db_password`, `client_secret`): imported as `secret: true` leaves (redacted
wherever shown, never hashed) with a warning naming the field, or, where the schema could
not hold it as a secret (a default key, a non-text type), a warning saying how to mark it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from configbags.codegen.model import load_schema
from configbags.migrate.importer import import_dataclass, main

SOURCE = textwrap.dedent(
    '''\
    from dataclasses import dataclass
    from typing import Optional


    @dataclass
    class ServerArgs:
        model_path: str = "m"
        api_key: Optional[str] = None
        hf_token: Optional[str] = None
        db_password: str | None = None
        client_secret: Optional[str] = None
        admin_key: Optional[str] = None
        max_tokens: int = 16
        tokenizer_path: Optional[str] = None
        api_key_file: Optional[str] = None
        ssl_keyfile: Optional[str] = None
        sort_key: Optional[str] = None
        service_token: str = "changeme"
    '''
)
MARKED = {"api_key", "hf_token", "db_password", "client_secret", "admin_key"}


@pytest.fixture(scope="module")
def result() -> tuple[dict[str, dict[str, object]], list[str]]:
    imported = import_dataclass(SOURCE, "ServerArgs", {})
    flat = {name: spec for ns in imported.leaves.values() for name, spec in ns.items()}
    return flat, list(imported.warnings)


def test_credential_fields_are_imported_as_secrets(result: tuple[dict[str, dict[str, object]], list[str]]) -> None:
    leaves, warnings = result
    assert {name for name, spec in leaves.items() if spec.get("secret")} == MARKED
    for name in MARKED:
        assert any(f": {name}: marked `secret: true`" in w for w in warnings), name


def test_other_fields_stay_plain_and_a_default_key_is_warned_about(
        result: tuple[dict[str, dict[str, object]], list[str]]) -> None:
    leaves, warnings = result
    for name in ("max_tokens", "tokenizer_path", "api_key_file", "ssl_keyfile", "sort_key", "model_path"):
        assert "secret" not in leaves[name], name
        assert not any(f": {name}:" in w and "secret" in w for w in warnings), name
    # a credential with a default value cannot be a secret leaf (it must default to null): told how
    assert "secret" not in leaves["service_token"]
    [told] = [w for w in warnings if ": service_token:" in w]
    assert "secret: true" in told and "default: null" in told and "changeme" not in told


def test_the_schema_written_generates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "server_args.py"
    source.write_text(SOURCE)
    out = tmp_path / "schema"
    assert main([f"{source}:ServerArgs", "--out", str(out)]) == 0
    assert "api_key: marked `secret: true`" in capsys.readouterr().err
    schema = load_schema(out)
    assert {leaf.name for leaf in schema.leaves if leaf.secret} == MARKED
