"""The door's fleet routes: `GET /config/contracts` (this server's deployment role, its
instance id and, per contract, its fingerprint and every member's value with the layer and
rule that set it),
read by `configbags fleet check`, and `GET /metrics` (serve/metrics.py). Registered before `/config/{leaf}`, which would
otherwise take `contracts` for a leaf name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from configbags.runtime.fleet import CONTRACTS_ROUTE, apply_class, contracts_readback
from configbags.serve.door import Door, DoorError, authorization, degraded_message
from configbags.serve.metrics import (
    CONTENT_TYPE_LATEST,
    ConfigCollector,
    exposition,
    metrics_registry,
)


def contracts(door: Door) -> dict[str, Any]:
    """The contracts readback, which speaks for the whole rank group: 503 while a rank is
    stalled or diverged (`Door.group`), and 503 `rank_left` once one left, since rank 0's
    values can no longer vouch for the group; so `configbags fleet check` reports such a
    server (naming the rank) instead of passing it."""
    gone = door.group()
    if gone:
        raise DoorError(503, "rank_left", degraded_message(gone),
                        "restart the server to bring the group back; a fleet check cannot vouch for a "
                        "degraded rank group", ranks=tuple(gone), extra={"status": "degraded"})
    ctx = door.context
    # one state: the values and their origins from the same moment
    state, origins = door.consistent(lambda: (ctx.state, ctx.origins()))
    return {**contracts_readback(ctx.registry, state, origins), "instance": door.instance}


def add_fleet_routes(app: FastAPI, door: Door, look: Callable[[Callable[[], Any]], Awaitable[Any]]) -> None:
    """The fleet routes; `look` runs a read of the rank group off the event loop, within the
    rank timeout (a store that stops answering never holds the door)."""
    add_apply_classes(app, door)
    # a watched door (serve --watch) knows what only a restart applies; a plain one has nothing pending
    registry = metrics_registry(ConfigCollector(door, getattr(door, "restart_required", dict)))

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        """Prometheus exposition of the config (serve/metrics.py): server and contract info,
        overrides by leaf and source kind, gauges of the schema's `metric: true` leaves, and
        of ranks stalled or gone (always 200: scrapers keep their series). Needs the api key,
        like every read."""
        door.authorize(authorization(request.headers.getlist("authorization")), admin=False)
        return Response(await look(lambda: exposition(registry)), media_type=CONTENT_TYPE_LATEST)

    @app.get(f"/config/{CONTRACTS_ROUTE}")  # no leaf has this name: the generator refuses it
    async def config_contracts(request: Request) -> JSONResponse:
        """This server's deployment role and each contract's fingerprint, with every member's
        value, layer, source and rule (secrets are never members); 503 naming the rank while
        the rank group is stalled, diverged or degraded. Needs the api key."""
        door.authorize(authorization(request.headers.getlist("authorization")), admin=False)
        return JSONResponse(await look(lambda: contracts(door)))


def add_apply_classes(app: FastAPI, door: Door) -> None:
    """Every leaf's apply class (live, reload, restart: from its policy) as the OpenAPI
    document's `x-configbags-apply`, for orchestrators that decide between a PATCH and a
    rolling restart (the PATCH body's leaves carry theirs too)."""
    build = app.openapi
    classes = {name: apply_class(spec.policy).value for name, spec in door.context.registry.leaves.items()}

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            build()["x-configbags-apply"] = classes
        return app.openapi_schema or {}

    app.openapi = openapi  # type: ignore[method-assign]

