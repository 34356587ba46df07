"""Round twenty-three's server finding 3: a PATCH whose one Content-Type gives `charset`
twice (`application/json; charset=utf-8; charset=utf-16`) is ambiguous (RFC 9110 §5.6.6:
parameter names are unique), so it is refused (400 naming both labels) in either order,
nothing applied, as two Authorization headers are; the door read the first, where a proxy
reading the last decodes the body another way. A quoted charset is read as one value, its
`;` included."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from test_serve_hostile import Client

import configbags.generated.accessors  # noqa: F401  (registers the process context)
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context

pytest.importorskip("fastapi")

from configbags.serve.app import create_app
from configbags.serve.door import Door

ADMIN_KEY = "admin-key-23c5"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BODY = json.dumps({"source": "ops", "leaves": {"weight_version": "dupcs"}}).encode()


@pytest.fixture
def client(config_scope: Context[Any]) -> Client:
    config_scope.publish(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher")
    config_scope.seal()
    return Client(create_app(Door(config_scope)))


def _epoch(client: Client) -> tuple[int, Any]:
    info = client.request("GET", "/server_info", headers=ADMIN).json()
    return info["epoch"], info["resolved"]["weight_version"]


def _patch(client: Client, content_type: str) -> httpx.Response:
    return client.request("PATCH", "/config", content=BODY, headers={**ADMIN, "content-type": content_type})


@pytest.mark.parametrize("content_type", [
    "application/json; charset=utf-8; charset=utf-16",
    "application/json; charset=utf-16; charset=utf-8",
    "application/json;charset=utf-8;CHARSET=utf-8",
    'application/json; charset="utf-8"; Charset=latin-1',
])
def test_a_charset_given_twice_in_one_content_type_is_refused_in_either_order(
        client: Client, content_type: str) -> None:
    before = _epoch(client)
    response = _patch(client, content_type)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "duplicate_charset"
    assert "2 times" in body["message"] and "nothing was applied" in body["message"]
    assert _epoch(client) == before


@pytest.mark.parametrize("content_type", ['application/json; charset="utf-8;x"',
                                          'application/json; charset="utf-8; charset=utf-16"',
                                          'application/json; charset="utf-8\\"; charset=utf-16"'])
def test_a_quoted_charset_is_one_value_with_its_semicolons(client: Client, content_type: str) -> None:
    before = _epoch(client)
    response = _patch(client, content_type)
    assert response.status_code == 415, response.text
    assert response.json()["error"] == "unsupported_encoding"
    assert _epoch(client) == before


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", 'application/json; charset="UTF-8"',
                                          'application/json; q="a;charset=utf-16"; charset=utf-8',
                                          "application/json; charset=utf-8; format=flowed"])
def test_one_utf8_charset_with_other_parameters_is_read(client: Client, content_type: str) -> None:
    response = _patch(client, content_type)
    assert response.status_code == 200, response.text
    assert _epoch(client)[1] == "dupcs"
