"""The door's listening socket and its connections: bound before anything is announced,
a cap on open connections that refuses the ones over it at once, a deadline for each
request's head (request line and headers), a deadline for a client that does not read its
answers, and accept errors logged at a bounded rate.

uvicorn bounds a body (the app's 408) and an idle keep-alive connection, but neither the
time before a request's head is complete nor the time an answer waits for the client to
read it: a connection that sends nothing, half a request line or one header every few
seconds, or one that sends whole requests (200 pipelined ones) and never reads, would
otherwise stay open for ever, and enough of them use up the connection cap or the
process's file descriptors (the door then answers nothing, not even /health)."""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import re
import resource
import socket
import struct
import time
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from configbags.runtime.errors import ConfigError

log = logging.getLogger("configbags.serve")

DEFAULT_HEAD_TIMEOUT_S = 10.0  # a request line and headers are a few hundred bytes, sent at once
# A reader that takes no byte of its answers for this long is gone or hostile: the door's
# largest answer (/openapi.json) is a few tens of KiB, read at once by any client.
DEFAULT_SEND_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 65_536
DESCRIPTORS_KEPT = 256  # for the ranks' pipes and store client, the watched file and the log: never given to clients
LOG_INTERVAL_S = 10.0


def connections_allowed() -> int | None:
    """The most connections the descriptor limit leaves room for (DESCRIPTORS_KEPT kept
    for the ranks, the watched file and the log); None when the limit is infinite."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else max(1, soft - DESCRIPTORS_KEPT)


def default_max_connections() -> int:
    """Half the process's file-descriptor limit (so connections alone never exhaust it),
    at most 1024, at least 16: the door serves operators and probes, not traffic."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(16, min(1024, soft // 2, soft - DESCRIPTORS_KEPT))


class Tally:
    """Events logged at WARNING at most once per `interval` seconds each: the first one at
    once, the ones after it counted and their number logged when the interval is over, so a
    burst shows its size in one line, never one line (or traceback) per event. Runs on the
    event loop (protocol callbacks and the loop's exception handler share its thread)."""

    def __init__(self, interval: float = LOG_INTERVAL_S) -> None:
        self.interval = interval
        self._last: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None

    def note(self, what: str) -> None:
        now = time.monotonic()
        if not self._counts.get(what) and now - self._last.get(what, -math.inf) >= self.interval:
            self._last[what] = now
            log.warning("%s (more are counted: one line every %g s)", what, self.interval)
            return
        self._counts[what] = self._counts.get(what, 0) + 1
        if self._timer is None:
            wait = max(0.0, self._last[what] + self.interval - now)
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        """Log what was counted (at the end of an interval, and at shutdown)."""
        self._timer = None
        now = time.monotonic()
        for what, count in self._counts.items():
            if count:
                log.warning("%s: %d more in the last %.0f s", what, count, now - self._last[what])
                self._last[what] = now
        self._counts.clear()


def accept_error_handler(tally: Tally) -> Any:
    """An event-loop exception handler that tallies failed accepts (`socket.accept() out of
    system resource` when descriptors run out: asyncio retries every second, and would log a
    traceback each time) and leaves every other error to asyncio's default handler."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if message.startswith("socket.accept()"):
            exc = context.get("exception")
            why = f" ({exc.strerror})" if isinstance(exc, OSError) and exc.strerror else ""
            tally.note(f"cannot accept connections{why}: new clients wait until open connections close")
            return
        loop.default_exception_handler(context)

    return handle


class FramedConnection(h11.Connection):
    """h11's server side, refusing two request heads h11 takes but a proxy in front may
    read differently (the server half of a request-smuggling desync, RFC 9112 §6.1 and
    §5.2): both Content-Length and Transfer-Encoding (h11 frames by the chunks and would
    keep the connection open for what a Content-Length proxy calls the rest of the body),
    and obsolete line folding (h11 joins a header's continuation line onto it, so
    `Authorization: Bearer` then ` KEY` on the next line is read as one header a proxy may
    have seen as two lines). The error is h11's own: uvicorn answers 400 and closes."""

    def next_event(self) -> Any:
        # the bytes the next head starts with, before h11 takes them (only between requests)
        pending = self.trailing_data[0] if self.their_state is h11.IDLE else None
        event = super().next_event()
        if isinstance(event, h11.Request):
            names = {name for name, _ in event.headers}
            if b"content-length" in names and b"transfer-encoding" in names:
                raise h11.RemoteProtocolError("both Content-Length and Transfer-Encoding (RFC 9112 6.1)", 400)
            if pending is not None and folded(pending):
                raise h11.RemoteProtocolError("obsolete line folding in the request head (RFC 9112 5.2)", 400)
        return event


def folded(data: bytes) -> bool:
    """Whether the request head `data` starts with (h11 has read it whole) continues a
    header on a line that starts with a space or a tab."""
    end = re.search(rb"\n\r?\n", data)  # h11 ends a head at its first empty line
    lines = data[:end.start() if end else len(data)].split(b"\n")
    return any(line[:1] in (b" ", b"\t") for line in lines[1:])


class _AnswersRead(H11Protocol):
    """uvicorn's h11 protocol resetting a connection whose answers stay unread for
    `send_deadline` seconds: the transport pauses writing when its buffer passes the
    high-water mark (the kernel's send buffer full behind it) and resumes it below the
    low-water mark; paused that long, the client reads nothing (or next to nothing)."""

    send_deadline: ClassVar[float] = DEFAULT_SEND_TIMEOUT_S
    send_tally: ClassVar[Tally | None] = None
    _send_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.config.h11_max_incomplete_event_size  # uvicorn's own bound on a head
        self.conn = FramedConnection(h11.SERVER) if limit is None else FramedConnection(h11.SERVER, limit)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.send_deadline, self._unread)

    def resume_writing(self) -> None:
        self._reading()
        super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._reading()
        super().connection_lost(exc)

    def _reading(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _unread(self) -> None:
        self._send_timer = None  # still open: connection_lost cancels the timer
        if self.send_tally is not None:
            self.send_tally.note(f"closed connections that read none of their answers for {self.send_deadline:g} s "
                                 f"(--send-timeout)")
        sock = self.transport.get_extra_info("socket")
        if sock is not None:  # a reset that drops what is queued: the kernel would otherwise keep
            # sending it, the socket orphaned, for as long as the client keeps its window shut
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()


def guarded_protocol(max_connections: int, head_timeout_s: float, tally: Tally,
                     send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the door's bounds: a connection past `max_connections`
    open ones, or past half of them from one client host, is closed as soon as it is
    accepted (nothing read from it; so one host holding its share leaves the rest to
    others, a liveness probe from the node among them), a connection whose request
    head is not complete `head_timeout_s` after it opened (or, on a kept-alive connection,
    after the next request's first byte) is closed, and so is one whose answers stay unread
    for `send_timeout_s`: the transport's buffer above its high-water mark (the kernel's
    send buffer full behind it) for that long without draining below its low-water mark.
    A request whose head is complete is otherwise the app's to bound (the body's 408)."""
    per_host = max(1, max_connections // 2)
    held: dict[str, int] = {}  # client host -> its open connections (the event loop's thread only)

    class GuardedH11Protocol(_AnswersRead):
        _head_timer: asyncio.TimerHandle | None = None
        _host: str | None = None
        send_deadline = send_timeout_s
        send_tally = tally

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            peer = transport.get_extra_info("peername")
            host = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
            if len(self.connections) >= max_connections or held.get(host, 0) >= per_host:
                transport.abort()  # a reset: no lingering close, no descriptor held
                tally.note(f"refused connections over --max-connections {max_connections} (at most {per_host} "
                           f"from one client host)")
                return
            self._host = host
            held[host] = held.get(host, 0) + 1
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            host = self._host
            if host is None:
                return  # refused: never registered, nothing to undo
            self._host = None
            held[host] -= 1
            if not held[host]:
                del held[host]
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._head_timer is None and self.conn.their_state is h11.IDLE:
                self._arm()  # the first byte of a kept-alive connection's next request
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm()

        def _arm(self) -> None:
            self._head_timer = self.loop.call_later(head_timeout_s, self._head_late)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                tally.note(f"closed connections whose request head was not complete within {head_timeout_s:g} s "
                           f"(--head-timeout)")
                self.transport.close()

    return GuardedH11Protocol


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address `host` names (as uvicorn would bind), refused
    with a ConfigError naming the address and the fix when one cannot be bound (a port in
    use, an address of another machine), before the door announces itself or starts a rank."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"--host {host!r} is not an address to listen on ({exc}); give an IP address or a host "
                          f"name of this machine, and the port with --port") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys((f, k, p, "", a) for f, k, p, _, a in found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
                sock.listen(2048)
            except OSError as exc:
                shown = url_host(str(address[0]))
                why = ("the port is in use by another process" if exc.errno == errno.EADDRINUSE
                       else exc.strerror or str(exc))
                raise ConfigError(f"cannot listen on {shown}:{port}: {why}; give a free --port (or stop the "
                                  f"process that holds it)") from None
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def url_host(host: str) -> str:
    """A host as a URL spells it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host
