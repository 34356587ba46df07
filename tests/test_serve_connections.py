"""The door's connections are bounded before a request is complete: a head deadline, a cap
on open connections, accept errors logged at a bounded rate, and a port that cannot be
bound refused before anything is announced. Real sockets on loopback, bounded counts."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.serve_server import REPO, Server

CAP, HEAD_S = 8, 1.5


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    """True once the server closed `sock` (EOF or reset), waiting at most `within` s."""
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server("--max-connections", str(CAP), "--head-timeout", str(HEAD_S))
    yield srv
    srv.stop()


@pytest.mark.slow
def test_connections_over_the_cap_are_refused_and_idle_ones_are_cut_at_the_head_deadline(server: Server) -> None:
    share = CAP // 2  # what one client host may hold
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(50)]
    try:
        socks[0].sendall(b"GET /heal")  # half a request line
        socks[1].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # headers, never ended
        refused = sum(_closed_by_peer(s, 0.3) for s in socks[share:])
        assert refused == 50 - share  # over its share: closed at once
        assert not any(_closed_by_peer(s, 0.05) for s in socks[:share])  # within it: held, for now
        # another client host (a probe from the node) is still served meanwhile
        other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=5)
        with other:
            assert other.get(f"{server.url}/health").status_code == 200
        assert all(_closed_by_peer(s, 10 * HEAD_S) for s in socks[:share])  # then cut at the deadline
    finally:
        for s in socks:
            s.close()
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200
    log = server.output()
    assert log.count(f"refused connections over --max-connections {CAP} (at most {share} from one client") == 1
    assert "was not complete within 1.5 s" in log
    assert "Traceback" not in log


@pytest.mark.slow
def test_dribbled_headers_do_not_extend_the_deadline_and_a_kept_alive_connection_still_works(
        server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        cut = False
        for number in range(40):  # a header line every 0.25 s, at most 10 s
            try:
                sock.sendall(b"X-%d: y\r\n" % number)
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            if _closed_by_peer(sock, 0.25):
                cut = True
                break
        assert cut
    with httpx.Client(base_url=server.url, timeout=5) as client:  # one connection, requests apart
        assert client.get("/health").status_code == 200
        time.sleep(HEAD_S + 0.5)  # idle between requests is the keep-alive timeout's, not the head's
        assert client.get("/health").status_code == 200


def test_accept_errors_are_one_line_then_a_count(caplog: pytest.LogCaptureFixture) -> None:
    from configbags.serve.listen import Tally, accept_error_handler

    async def burst() -> None:
        loop = asyncio.get_running_loop()
        tally = Tally(interval=3600)
        handle = accept_error_handler(tally)
        for _ in range(500):
            handle(loop, {"message": "socket.accept() out of system resource",
                          "exception": OSError(errno.EMFILE, "Too many open files")})
        tally.flush()

    with caplog.at_level(logging.WARNING, logger="configbags.serve"):
        asyncio.run(burst())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "cannot accept connections (Too many open files)" in lines[0]
    assert lines[1].endswith("499 more in the last 0 s")


def test_other_loop_errors_go_to_asyncio(caplog: pytest.LogCaptureFixture) -> None:
    from configbags.serve.listen import Tally, accept_error_handler

    async def one() -> None:
        accept_error_handler(Tally())(asyncio.get_running_loop(), {"message": "something else broke"})

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(one())
    assert any("something else broke" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_2_before_the_start_line() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "configbags", "serve", "--package", "configbags.generated",
                               "--model-path", "m", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"configbags serve: cannot listen on 127.0.0.1:{port}: the port is in use by "
                                   f"another process; give a free --port (or stop the process that holds it)")


def test_bind_names_an_ipv6_address_in_brackets() -> None:
    from configbags.runtime.errors import ConfigError
    from configbags.serve.listen import bind, url_host

    assert url_host("::1") == "[::1]" and url_host("127.0.0.1") == "127.0.0.1"
    try:
        held = bind("::1", 0)
    except ConfigError:
        pytest.skip("no IPv6 loopback on this host")
    port = held[0].getsockname()[1]

    try:
        with pytest.raises(ConfigError, match=rf"cannot listen on \[::1\]:{port}: the port is in use"):
            bind("::1", port)
    finally:
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()



@pytest.mark.slow
def test_a_client_that_never_reads_its_answers_is_cut_at_the_send_deadline() -> None:
    """Whole requests (pipelined) and no read: no head deadline applies, and the answers back
    up until the send deadline cuts the connection, which then frees its slot."""
    srv = Server("--send-timeout", "1", "--max-connections", str(CAP))
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: answers back up soon
        sock.settimeout(5)
        sock.connect(("127.0.0.1", srv.port))
        with sock:
            sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 200)
            deadline = time.monotonic() + 60  # a bound on the wait, not a speed: the cut comes or not
            while "read none of their answers for 1 s (--send-timeout)" not in srv.output():
                assert time.monotonic() < deadline, f"never cut:\n{srv.output()}"
                time.sleep(0.2)
            read, cut = 0, False
            while read < 1 << 30:  # what was on its way before the reset, then the reset (or EOF)
                try:
                    chunk = sock.recv(1 << 16)
                except ConnectionResetError:
                    cut = True
                    break
                if not chunk:
                    cut = True
                    break
                read += len(chunk)
            assert cut
        assert httpx.get(f"{srv.url}/health", timeout=5).status_code == 200
        assert "Traceback" not in srv.output()
    finally:
        srv.stop()
