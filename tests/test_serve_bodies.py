"""PATCH bodies that do not arrive as they should: a client that goes away mid-body, or
never finishes it, or a shutdown that cancels the read, is a short log line and a refusal
with nothing applied, never an application error or a connection held forever; and the
`source` limit the OpenAPI document gives is the one the door keeps."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

import configbags.generated.accessors  # noqa: F401  (registers the process context)
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context

pytest.importorskip("fastapi")

from configbags.serve.app import create_app
from configbags.serve.door import MAX_SOURCE_CHARS, Door

ADMIN_KEY = "admin-key-5e1b"
PARTIAL = b'{"source": "ops", "leaves": {"weight_version": '  # a body cut short
Message = dict[str, Any]


@pytest.fixture
def door(config_scope: Context[Any]) -> Door:
    config_scope.publish(ServerArgs(model_path="m", admin_api_key=ADMIN_KEY), role="launcher")
    config_scope.seal()
    return Door(config_scope)


def _scope() -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "PATCH",
            "scheme": "http", "path": "/config", "raw_path": b"/config", "query_string": b"",
            "root_path": "", "client": ("127.0.0.1", 40000), "server": ("door", 80),
            "headers": [(b"authorization", f"Bearer {ADMIN_KEY}".encode()),
                        (b"content-type", b"application/json"), (b"content-length", b"200")]}


async def _serve(app: Any, messages: list[Message], *, cancel_after: float | None = None) -> list[Message]:
    """Run one PATCH through the ASGI app: `messages` as the client sends them, then a
    client that sends nothing more (never finishes its body). Bounded by a 20 s deadline."""
    sent: list[Message] = []

    async def receive() -> Message:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # a client that never sends the rest
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    task = asyncio.ensure_future(app(_scope(), receive, send))
    if cancel_after is not None:
        await asyncio.sleep(cancel_after)
        task.cancel()  # what a shutdown does to a request still reading its body
    await asyncio.wait_for(task, 20)
    return sent


def _status(sent: list[Message]) -> int:
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    return int(start["status"])


def test_a_client_that_disconnects_mid_body_is_one_quiet_line_and_nothing_applied(
        door: Door, caplog: pytest.LogCaptureFixture) -> None:
    epoch = door.context.epoch
    caplog.set_level(logging.INFO)
    app = create_app(door)
    sent = asyncio.run(_serve(app, [{"type": "http.request", "body": PARTIAL, "more_body": True},
                                    {"type": "http.disconnect"}]))
    assert _status(sent) == 400
    assert door.context.epoch == epoch
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    said = [r for r in caplog.records if "went away" in r.getMessage()]
    assert len(said) == 1 and "nothing applied" in said[0].getMessage()


def test_a_body_that_never_ends_is_refused_408_within_the_body_timeout(
        door: Door, caplog: pytest.LogCaptureFixture) -> None:
    epoch = door.context.epoch
    app = create_app(door, body_timeout_s=0.2)
    sent = asyncio.run(_serve(app, [{"type": "http.request", "body": PARTIAL, "more_body": True}]))
    assert _status(sent) == 408
    assert b"body_timeout" in b"".join(m.get("body", b"") for m in sent)
    assert door.context.epoch == epoch
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_shutdown_during_a_body_read_is_a_refusal_not_an_application_error(
        door: Door, caplog: pytest.LogCaptureFixture) -> None:
    epoch = door.context.epoch
    app = create_app(door)
    sent = asyncio.run(_serve(app, [{"type": "http.request", "body": PARTIAL, "more_body": True}],
                              cancel_after=0.1))
    assert _status(sent) == 503
    assert door.context.epoch == epoch
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def _patch(door: Door, body: dict[str, Any]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(door), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://door") as c:
            return await c.patch("/config", json=body, headers={"Authorization": f"Bearer {ADMIN_KEY}"})

    return asyncio.run(go())


def test_the_documented_source_limit_is_the_real_one(door: Door) -> None:
    app = create_app(door)
    documented = app.openapi()["paths"]["/config"]["patch"]["requestBody"]["content"]["application/json"][
        "schema"]["properties"]["source"]["maxLength"]
    assert documented == MAX_SOURCE_CHARS
    at_limit = _patch(door, {"source": "s" * documented, "leaves": {"weight_version": "v2"}})
    assert at_limit.status_code == 200, at_limit.text
    over = _patch(door, {"source": "s" * (documented + 1), "leaves": {"weight_version": "v3"}})
    assert over.status_code == 400 and f"at most {documented} characters" in over.json()["message"]
    assert door.context.state.values["weight_version"] == "v2"
