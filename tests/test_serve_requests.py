"""What a request may carry besides its path, headers and body: no route of the door takes
a query string, so one is refused (400 naming its parameters) rather than dropped
(`PATCH /config?dry_run=true` applied the change); and a PATCH body is read as UTF-8 JSON
as sent, so one labelled with a content coding or a charset the door does not decode is
refused (415 naming it), with nothing applied."""

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
from configbags.serve.door import Door, DoorError

ADMIN_KEY = "admin-key-71f3"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BODY = json.dumps({"source": "ops", "leaves": {"speculative_accept_threshold_acc": 0.3}}).encode()
GETS = ["/health", "/server_info", "/config/weight_version", "/config/contracts", "/metrics", "/openapi.json"]


@pytest.fixture
def client(config_scope: Context[Any]) -> Client:
    config_scope.publish(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher")
    config_scope.seal()
    return Client(create_app(Door(config_scope)))


def _state(client: Client) -> tuple[int, Any]:
    info = client.request("GET", "/server_info", headers=ADMIN).json()
    return info["epoch"], info["resolved"]["speculative_accept_threshold_acc"]


def _patch(client: Client, path: str = "/config", **headers: str) -> httpx.Response:
    return client.request("PATCH", path, content=BODY,
                          headers={**ADMIN, "content-type": "application/json", **headers})


# -- query strings ------------------------------------------------------------------------

def test_a_patch_with_a_query_is_refused_naming_its_parameters_and_nothing_is_applied(client: Client) -> None:
    before = _state(client)
    response = _patch(client, "/config?dry_run=true&validate_only=1")
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "unknown_parameters"
    assert "'dry_run'" in body["message"] and "'validate_only'" in body["message"]
    assert "nothing was applied" in body["message"]
    assert _state(client) == before
    assert _patch(client).status_code == 200 and _state(client)[1] == 0.3  # the same PATCH without one applies


@pytest.mark.parametrize("path", GETS)
def test_a_get_with_a_query_is_refused_naming_its_parameters(client: Client, path: str) -> None:
    assert client.request("GET", path, headers=ADMIN).status_code == 200
    response = client.request("GET", f"{path}?leaf=api_key&redact=false", headers=ADMIN)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "unknown_parameters"
    assert "'leaf'" in response.json()["message"] and "'redact'" in response.json()["message"]


def test_a_hostile_parameter_name_is_shown_escaped_and_cut(client: Client) -> None:
    name = "x%0A%1B[31m" + "y" * 5000
    response = client.request("GET", f"/health?{name}=1", headers=ADMIN)
    assert response.status_code == 400
    message = response.json()["message"]
    assert "\n" not in message and "\x1b" not in message and "\\n" in message
    assert len(message) < 600 and "characters)" in message


# -- encodings ----------------------------------------------------------------------------

@pytest.mark.parametrize("coding", ["gzip", "br, gzip", "deflate"])
def test_a_patch_with_a_content_coding_is_refused_naming_it_and_nothing_is_applied(
        client: Client, coding: str) -> None:
    before = _state(client)
    response = _patch(client, **{"content-encoding": coding})
    assert response.status_code == 415, response.text
    assert response.json()["error"] == "unsupported_encoding"
    assert repr(coding.split(",")[0]) in response.json()["message"]
    assert response.headers["accept-encoding"] == "identity"  # RFC 7694: what the door does take
    assert _state(client) == before


def test_an_identity_content_coding_is_the_plain_body(client: Client) -> None:
    assert _patch(client, **{"content-encoding": "Identity"}).status_code == 200


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-16", "application/json;charset=latin-1",
                                          'text/plain; charset="ISO-8859-1"'])
def test_a_patch_labelled_with_a_charset_other_than_utf8_is_refused_naming_it(
        client: Client, content_type: str) -> None:
    before = _state(client)
    response = _patch(client, **{"content-type": content_type})
    assert response.status_code == 415, response.text
    assert response.json()["error"] == "unsupported_encoding" and "charset" in response.json()["message"]
    assert _state(client) == before


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=UTF-8",
                                          'application/json; charset="utf-8"', "application/x-www-form-urlencoded"])
def test_a_patch_labelled_utf8_or_without_a_charset_is_read(client: Client, content_type: str) -> None:
    assert _patch(client, **{"content-type": content_type}).status_code == 200


def test_a_read_racing_commits_without_end_is_a_503_to_retry_never_a_spin() -> None:
    class EverChanging:
        @property
        def state(self) -> object:
            return object()  # a new State at every look: a change committed in between

    door = Door.__new__(Door)
    door.context = EverChanging()  # type: ignore[assignment]
    reads = []
    with pytest.raises(DoorError) as refused:
        door.consistent(lambda: reads.append(1))
    assert refused.value.status == 503 and refused.value.code == "config_changing"
    assert len(reads) == 16
