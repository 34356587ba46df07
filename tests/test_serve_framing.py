"""The door's HTTP framing: a request head that h11 takes but a proxy in front may read
differently (both Content-Length and Transfer-Encoding; a header folded onto a second
line) is answered 400 and the connection closed, so nothing after it on the connection is
read as a request of its own (RFC 9112 §6.1, §5.2)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import h11
import httpx
import pytest

from configbags.serve.listen import FramedConnection, folded
from tests.serve_server import Server

BODY = json.dumps({"source": "smuggled", "leaves": {"weight_version": "v9"}}).encode()
CHUNKED = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
BOTH = (b"PATCH /config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ak\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED)
FOLDED = b"GET /server_info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n rk\r\n\r\n"
NEXT = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


def _first_event(conn: h11.Connection, data: bytes) -> object:
    conn.receive_data(data)
    return conn.next_event()


@pytest.mark.parametrize(("head", "said"), [
    (BOTH, "both Content-Length and Transfer-Encoding"),
    (BOTH.replace(b"Transfer-Encoding: chunked", b"transfer-encoding: Chunked"), "both Content-Length"),
    (FOLDED, "obsolete line folding"),
    (FOLDED.replace(b"\r\n rk", b"\r\n\trk"), "obsolete line folding"),
])
def test_h11_takes_these_heads_and_the_doors_connection_refuses_them(head: bytes, said: str) -> None:
    plain = _first_event(h11.Connection(h11.SERVER), head)  # why the door needs its own check
    assert isinstance(plain, h11.Request)
    with pytest.raises(h11.RemoteProtocolError, match=said) as refused:
        _first_event(FramedConnection(h11.SERVER), head)
    assert refused.value.error_status_hint == 400


@pytest.mark.parametrize("head", [
    b"PATCH /config HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    b"PATCH /config HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"GET /server_info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rk\r\nX-Note: a  b\r\n\r\n",
])
def test_ordinary_heads_pass_as_h11_reads_them(head: bytes) -> None:
    event = _first_event(FramedConnection(h11.SERVER), head)
    assert isinstance(event, h11.Request)
    assert not folded(head)


def test_a_folded_line_in_the_body_is_not_the_heads() -> None:
    conn = FramedConnection(h11.SERVER)
    body = b'{"a":\r\n 1}'
    event = _first_event(conn, b"PATCH /config HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert isinstance(event, h11.Request)
    assert isinstance(conn.next_event(), h11.Data)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server("--api-key", "rk", "--admin-api-key", "ak")
    yield srv
    srv.stop()


def _answers(port: int, data: bytes) -> bytes:
    """Everything the door sends back on one connection until it closes it (at most 10 s)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
        return got


@pytest.mark.slow
def test_content_length_with_transfer_encoding_is_400_and_closes(server: Server) -> None:
    # then a second request on the same connection: a desync would have it answered too
    got = _answers(server.port, BOTH + NEXT + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400 ") and got.count(b"HTTP/1.1 ") == 1, got
    info = httpx.get(f"{server.url}/server_info", headers={"Authorization": "Bearer rk"}, timeout=5)
    assert info.status_code == 200 and "weight_version" in info.text
    assert '"v9"' not in info.text and "smuggled" not in info.text  # the PATCH was never applied


@pytest.mark.slow
def test_an_authorization_header_folded_onto_two_lines_is_400_and_closes(server: Server) -> None:
    got = _answers(server.port, FOLDED + NEXT)
    assert got.startswith(b"HTTP/1.1 400 ") and got.count(b"HTTP/1.1 ") == 1, got
    # the same key on one line is served
    ok = httpx.get(f"{server.url}/server_info", headers={"Authorization": "Bearer rk"}, timeout=5)
    assert ok.status_code == 200
