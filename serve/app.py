"""The FastAPI application of the door: routes, auth, size-limited bodies, JSON errors, and
an OpenAPI document whose PATCH body is built from the schema."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from configbags.runtime.cmdline import inert
from configbags.runtime.fleet import apply_class
from configbags.runtime.leaftypes import shown_text
from configbags.runtime.registry import LeafSpec
from configbags.serve.door import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_SOURCE_CHARS,
    SOURCE_PREFIX,
    Door,
    DoorError,
    authorization,
    check_body_encoding,
    parse_patch,
    query_refusal,
    store_stalled,
)
from configbags.serve.fleet_routes import add_fleet_routes
from configbags.serve.listen import Tally, accept_error_handler
from configbags.serve.ranks import Ticket

log = logging.getLogger("configbags.serve")

DEFAULT_BODY_TIMEOUT_S = 30.0  # a PATCH body not complete by then is refused (408), nothing applied
STALL_POLL_S = 0.1  # how often a change in flight looks whether the store was named stalled
JSON_SCALARS = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}

ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["error", "message", "fix"],
    "properties": {
        "error": {"type": "string", "description": "a stable error code"},
        "message": {"type": "string", "description": "what was refused, naming the leaf"},
        "fix": {"type": "string", "description": "what to do about it"},
        "leaf": {"type": "string"},
        "ranks": {"type": "array", "items": {"type": "integer"}, "description": "ranks that did not answer"},
        "status": {"type": "string", "description": "on /health: `stalled` or `degraded` (a rank left)"},
        "left": {"type": "object", "additionalProperties": {"type": "string"},
                 "description": "on /health: each rank that left the group, and why"},
    },
}


class Readback(JSONResponse):
    """JSON whose text is UTF-8 when it can be, and \\u-escaped ASCII when a string in it
    cannot be encoded (a lone surrogate that reached the state before the doors refused
    it): the same JSON value either way, so a readback never fails to render, and one bad
    string cannot turn every later /server_info into a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, indent=None,
                              separators=(",", ":")).encode("ascii")


class NoQuery:
    """Answers a request with a query string 400 before any route (`query_refusal`): no
    route takes one, /openapi.json and unknown paths included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = query_refusal(scope["method"], scope["path"], scope["query_string"]) \
            if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await Readback(refusal.body(), status_code=refusal.status)(scope, receive, send)


def leaf_schema(spec: LeafSpec) -> dict[str, Any]:
    """The JSON Schema of one leaf's value in a PATCH body: type, choices and bounds (on
    each item of a list leaf), its capacity named in the description."""
    t = spec.type
    item_type = t.item
    prop: dict[str, Any]
    if item_type is not None:
        target: dict[str, Any] = {"type": JSON_SCALARS[item_type.base]}
        prop = {"type": ["array", "null"] if t.optional else "array", "items": target}
    elif t.base == "json":
        prop = target = {}
    else:
        prop = target = {"type": [JSON_SCALARS[t.base], "null"] if t.optional else JSON_SCALARS[t.base]}
    if spec.choices is not None:
        target["enum"] = [*spec.choices, *([None] if t.optional and target is prop else [])]
    integral = (item_type or t).base == "int"
    for key, bound in (("minimum", spec.minimum), ("maximum", spec.maximum)):
        if bound is not None:
            target[key] = int(bound) if integral else bound
    text = f"{spec.namespace}.{spec.name} ({t}; policy {spec.policy}; owner {spec.owner})"
    if spec.capacity is not None:
        text += f"; at most the current value of {spec.capacity} (409 above it)"
        prop["x-configbags-capacity"] = spec.capacity
    prop["description"] = text
    prop["x-configbags-apply"] = apply_class(spec.policy).value
    return prop


def patch_body_schema(door: Door) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["source", "leaves"],
        "additionalProperties": False,
        "properties": {
            "source": {"type": "string", "minLength": 1, "maxLength": MAX_SOURCE_CHARS,
                       "description": f"who asks; recorded in the override log as {SOURCE_PREFIX}<source>"},
            "leaves": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": False,
                "description": "leaf -> new value; only leaves whose schema names the operator "
                               "role as a writer (never startup leaves); all or none are applied",
                "properties": {spec.name: leaf_schema(spec) for spec in door.writable},
            },
        },
    }


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    what = {400: "unknown leaf, bad value or bad body, more than one Authorization header or charset, or a query string",
            401: "missing or bad key", 415: "a Content-Encoding other than identity, or a charset other than UTF-8",
            403: "policy or owner refuses the leaf", 409: "above the leaf's capacity",
            408: "the body did not arrive in time", 413: "body too large", 503: "a rank did not answer, or left the group (named)"}
    return {c: {"description": what[c], "content": {"application/json": {"schema": ERROR_BODY}}}
            for c in codes}


def create_app(door: Door, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S) -> FastAPI:
    """The operator API over `door`. Work that touches ranks runs on one thread, in
    arrival order (every rank must enter the same collectives in the same order); without
    ranks a request is served on the event loop (microseconds of work, no thread hop)."""
    refusals = RefusalLog()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        flushing = asyncio.create_task(refusals.run())
        accept_errors = Tally()
        asyncio.get_running_loop().set_exception_handler(accept_error_handler(accept_errors))
        try:
            yield
        finally:
            flushing.cancel()
            refusals.flush(every=True)  # a burst that ended just before shutdown is counted too
            accept_errors.flush()

    # redirect_slashes off: Starlette answers `/health/` with a 307 whose Location it builds
    # from the client's Host header, without a key (a poisoned cache behind a proxy); no route
    # here ends in a slash, so such a path is a plain 404
    app = FastAPI(lifespan=lifespan, title="configbags operator API", version="1", docs_url=None, redoc_url=None,
                  openapi_url="/openapi.json", default_response_class=Readback, redirect_slashes=False)
    app.add_middleware(NoQuery)
    rank_thread = ThreadPoolExecutor(1, thread_name_prefix="configbags-ranks") if door.ranks else None
    app.state.rank_thread = rank_thread  # serve --watch applies file changes on it too

    # every read that asks the rank group (/health, /config/<leaf>, contracts, /metrics) runs
    # off the event loop, answered within the rank timeout (each call to the store is bounded,
    # but a lock a stuck change holds is not; a thread left to it, the reads after queue here,
    # each answered 503 at its deadline)
    look_thread = ThreadPoolExecutor(2, thread_name_prefix="configbags-health") if door.ranks else None

    async def look(fn: Callable[[], Any]) -> Any:
        return await look_within(door, look_thread, fn)

    async def run(fn: Callable[[], dict[str, Any]], *,
                  give_up: Callable[[], DoorError] | None = None) -> dict[str, Any]:
        """fn() on the rank thread; with `give_up`, its 503 once the store is named stalled
        or the deadline passes (`within`)."""
        if rank_thread is None:
            return fn()
        work = asyncio.get_running_loop().run_in_executor(rank_thread, fn)
        return await (work if give_up is None else within(door, work, give_up))

    @app.exception_handler(DoorError)
    async def door_error(request: Request, exc: DoorError) -> JSONResponse:
        if exc.status in (401, 403):
            refusals.note(request, exc.code)
        headers = {401: {"WWW-Authenticate": "Bearer"}, 415: {"Accept-Encoding": "identity"}}.get(exc.status)
        return Readback(exc.body(), status_code=exc.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return Readback({"error": "http", "message": str(exc.detail),
                             "fix": "see GET /openapi.json for the routes"}, status_code=exc.status_code)

    @app.get("/health", responses=_errors(503))
    async def health() -> JSONResponse:
        """Liveness: 200 while every rank is up; 503 naming a stalled rank, or one that left
        (the group is then degraded until a restart)."""
        return Readback(await look(door.health))

    @app.get("/server_info", responses=_errors(400, 401, 503))
    async def server_info(request: Request) -> JSONResponse:
        """The operator input (record), the override log, the resolved values, epoch, seal,
        config hash and each rank's epoch and hash; secrets redacted."""
        door.authorize(authorization(request.headers.getlist("authorization")), admin=False)
        # it queues behind a change in flight, which a stalled store holds to its deadline
        return Readback(await run(door.server_info, give_up=lambda: not_answered(door)))

    add_fleet_routes(app, door, look)  # first: /config/contracts is not a leaf

    @app.get("/config/{leaf}", responses=_errors(400, 401, 503))
    async def explain(leaf: str, request: Request) -> JSONResponse:
        """One leaf: value, layer and source, policy, owner, capacity and history; 503 naming
        a stalled or diverged rank, `degraded` (rank 0's value) once a rank left."""
        door.authorize(authorization(request.headers.getlist("authorization")), admin=False)
        return Readback(await look(lambda: door.explain(leaf)))

    @app.patch(
        "/config",
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": patch_body_schema(door)}}}},
        responses=_errors(400, 401, 403, 408, 409, 413, 415, 503),
    )
    async def patch(request: Request) -> JSONResponse:
        """Change leaves as the operator, on every rank, all or none; returns the new epoch
        and the log entries. Needs the admin key."""
        door.authorize(authorization(request.headers.getlist("authorization")), admin=True)
        check_body_encoding(request.headers.getlist("content-encoding"), request.headers.getlist("content-type"))
        body = await read_body(request, max_body_bytes, timeout_s=body_timeout_s)
        source, leaves = parse_patch(body)
        if door.ranks is None:
            return Readback(await run(lambda: door.patch(source, leaves)))
        ticket = Ticket()
        return Readback(await run(lambda: door.patch(source, leaves, ticket), give_up=lambda: given_up(door, ticket)))

    return app


async def look_within(door: Door, pool: ThreadPoolExecutor | None, fn: Callable[[], Any]) -> Any:
    """fn(), a read of `door`: with ranks off the event loop and answered within the rank
    timeout, 503 `store_stalled` past it (its thread is left to what holds it)."""
    if door.ranks is None or pool is None:
        return fn()
    work = asyncio.get_running_loop().run_in_executor(pool, fn)
    try:
        return await asyncio.wait_for(work, max(door.ranks.timeout, 1.0))
    except TimeoutError:
        raise not_answered(door) from None


def not_answered(door: Door) -> DoorError:
    assert door.ranks is not None
    return store_stalled(door.ranks.store_stalled() or f"the rank group did not answer within the rank "
                         f"timeout ({door.ranks.timeout:g} s)")


async def within(door: Door, work: asyncio.Future[dict[str, Any]], give_up: Callable[[], DoorError]) -> dict[str, Any]:
    """The outcome of `work` on the rank thread, or the 503 `give_up()` (its thread is left
    to it): at its deadline (a change takes at most a rank timeout to agree on, then a
    silent rank is named), or as soon as the store is named stalled (nothing can be agreed
    through it; a change's ticket aborts it should the store answer again)."""
    if door.ranks is None:
        return await work
    deadline = time.monotonic() + 2 * door.ranks.timeout + 1.0
    while (left := deadline - time.monotonic()) > 0 and door.ranks.store_stalled() is None:
        done, _ = await asyncio.wait({work}, timeout=min(left, STALL_POLL_S))
        if done:
            return work.result()
    if work.done():
        return work.result()
    work.add_done_callback(_settled)  # what it ends with later was answered now, as the 503
    raise give_up()


def _settled(work: asyncio.Future[Any]) -> None:
    """Retrieve what a given-up change ended with (its ticket's refusal, as a rule): the 503
    said it already; unretrieved, asyncio would log a traceback per change."""
    if not work.cancelled() and (exc := work.exception()) is not None:
        log.debug("a given-up change ended with %s: %s", type(exc).__name__, inert(str(exc)))


def given_up(door: Door, ticket: Ticket) -> DoorError:
    """The 503 of a change past its deadline (the store is not answering): the change is
    given up, and aborted on every rank should a store running again still reach its commit
    (`Ticket`); only one already being committed then rests with the store."""
    assert door.ranks is not None
    why = door.ranks.store_stalled() or "the rank group did not answer in time"
    if ticket.abandon():
        return store_stalled(f"{why}; the change was given up: nothing was applied on any rank, now or later")
    return DoorError(503, "store_stalled", f"{why}; the change was already being committed when its deadline "
                     f"passed: it is applied once the store answers",
                     "read GET /health and /config/<leaf> once the store answers before sending it again",
                     extra={"status": "store_stalled"})


async def read_body(request: Request, limit: int, *, timeout_s: float = DEFAULT_BODY_TIMEOUT_S) -> bytes:
    """The request body, refused with 413 as soon as it exceeds `limit` bytes (by its
    Content-Length, or while streaming a chunked one): never buffered whole first. A body
    not complete within `timeout_s` is refused with 408 (a client that never finishes must
    not hold the connection); a client that goes away mid-body, or a shutdown that cancels
    the read, is one log line, not an application error. Nothing is applied in any case."""
    try:
        return await asyncio.wait_for(_stream_body(request, limit), timeout_s)
    except asyncio.TimeoutError:
        log.warning("PATCH /config from %s: the body did not arrive within %g s; refused (408), "
                    "nothing applied", _peer(request), timeout_s)
        raise DoorError(408, "body_timeout", f"the request body did not arrive within {timeout_s:g} s",
                        "send the whole body at once; nothing was applied") from None
    except ClientDisconnect:
        log.info("PATCH /config from %s: the client went away before its body ended; nothing applied",
                 _peer(request))
        raise DoorError(400, "client_disconnected", "the client disconnected before the body ended",
                        "send the whole body; nothing was applied") from None
    except asyncio.CancelledError:
        log.info("PATCH /config from %s: the server is shutting down; the body was not read, nothing "
                 "applied", _peer(request))
        raise DoorError(503, "shutting_down", "the server is shutting down; nothing was applied",
                        "retry against a server that is up") from None


class RefusalLog:
    """Requests refused for their key, logged at WARNING with the client's address (the
    socket's: serve reads no proxy headers), a trail of someone guessing keys. At most one
    line per client host every `interval` seconds: the refusals in between are counted,
    and the count is logged once the interval is over (`flush`, every interval and at
    shutdown), so a burst that stops still shows its size. The request's path is logged
    escaped and cut short (it is the client's text, sent without a key). The table of
    hosts is bounded."""

    MAX_HOSTS = 4096
    PATH_CHARS = 200

    def __init__(self, interval: float = 10.0) -> None:
        self.interval = interval
        # host -> (when last logged, refusals not logged since, what the last one was)
        self._hosts: dict[str, tuple[float, int, str]] = {}
        self._lock = threading.Lock()

    def note(self, request: Request, code: str) -> None:
        host = request.client.host if request.client is not None else "?"
        what = f"{request.method} {shown_text(request.url.path, self.PATH_CHARS)} from {_peer(request)}: {code}"
        now = time.monotonic()
        with self._lock:
            last, since, _ = self._hosts.get(host, (-math.inf, 0, ""))
            if now - last < self.interval:
                self._hosts[host] = (last, since + 1, what)
                return
            if len(self._hosts) >= self.MAX_HOSTS:
                self._hosts = {h: v for h, v in self._hosts.items() if now - v[0] < self.interval or v[1]}
                if len(self._hosts) >= self.MAX_HOSTS:
                    self._flush_locked(now, every=True)
                    self._hosts.clear()
            self._hosts[host] = (now, 0, what)
        more = f" (and {since} more from it before this)" if since else ""
        log.warning("refused %s%s", what, more)

    def flush(self, *, every: bool = False) -> None:
        """Log the refusals counted since each host's last line, where its interval is
        over (`every`: all of them, as at shutdown)."""
        with self._lock:
            self._flush_locked(time.monotonic(), every=every)

    def _flush_locked(self, now: float, *, every: bool) -> None:
        for host, (last, since, what) in list(self._hosts.items()):
            if since and (every or now - last >= self.interval):
                log.warning("refused %d more requests from %s in %.0f s, the last %s", since, host, now - last, what)
                self._hosts[host] = (now, 0, what)

    async def run(self) -> None:
        """Flush every interval until cancelled (the app's lifespan)."""
        while True:
            await asyncio.sleep(max(self.interval, 0.05))
            self.flush()


def _peer(request: Request) -> str:
    client = request.client
    return f"{client.host}:{client.port}" if client is not None else "an unknown client"


async def _stream_body(request: Request, limit: int) -> bytes:
    too_large = DoorError(413, "body_too_large", f"the body exceeds {limit} bytes",
                          "send fewer leaves per request")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise DoorError(400, "bad_request", "Content-Length is not a number", "send a valid Content-Length")
        if int(declared) > limit:
            raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)
