"""A server's reply is outside input: `fleet check` and `rollout` read it bounded in bytes
while it streams and through the one bounded JSON reader, so something posing as a server
(a reply nested 200,000 deep, or larger than the file limit) is an unreadable server,
never a RecursionError or unbounded memory."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from configbags.fleet import replies
from configbags.fleet.check import EXIT_UNREACHABLE, main
from configbags.fleet.rollout import side_values
from configbags.runtime import limits
from configbags.runtime.errors import ConfigError
from configbags.runtime.limits import Limits

REPLIES = {
    "/deep/config/contracts": b"[" * 5_000 + b"]" * 5_000,
    "/bomb/config/contracts": b"[" * 200_000 + b"]" * 200_000,
    "/deep/server_info": b"[" * 5_000 + b"]" * 5_000,
    "/big/config/contracts": b'{"pad": "' + b"x" * 50_000 + b'"}',
    "/big/server_info": b'{"pad": "' + b"x" * 50_000 + b'"}',
    "/latin/config/contracts": b'{"x": "\xff"}',
}


class _Poser(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = REPLIES.get(self.path, b"{}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def poser() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Poser)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    small = Limits(file_bytes=10_000)
    monkeypatch.setattr(replies, "LIMITS", small)
    monkeypatch.setattr(limits, "LIMITS", small)  # the refusal names the limit in force


def test_a_deeply_nested_reply_is_an_unreadable_server(poser: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([f"{poser}/deep"]) == EXIT_UNREACHABLE
    out = capsys.readouterr().out
    assert f"UNREACHABLE {poser}/deep: GET /config/contracts" in out and "nests deeper" in out
    assert main([f"{poser}/bomb"]) == EXIT_UNREACHABLE  # the attacker's 200,000 deep
    assert "CONFIGBAGS_LIMIT_NODES" in capsys.readouterr().out


def test_a_reply_over_the_file_limit_is_cut_while_it_streams(
        poser: str, small_limit: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([f"{poser}/big"]) == EXIT_UNREACHABLE
    out = capsys.readouterr().out
    assert "the reply is over" in out and "CONFIGBAGS_LIMIT_FILE_BYTES" in out


def test_a_reply_that_is_not_utf8_is_named(poser: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([f"{poser}/latin"]) == EXIT_UNREACHABLE
    assert "the reply is not UTF-8 text" in capsys.readouterr().out


def test_rollout_refuses_a_deep_reply_as_a_config_error(poser: str) -> None:
    with pytest.raises(ConfigError, match="nests deeper"):
        side_values(None, f"{poser}/deep", [], None)  # type: ignore[arg-type]  # a URL needs no context


def test_rollout_refuses_a_large_reply_as_a_config_error(poser: str, small_limit: None) -> None:
    with pytest.raises(ConfigError, match="the reply is over the limit of 10000 bytes"):
        side_values(None, f"{poser}/big", [], None)  # type: ignore[arg-type]
