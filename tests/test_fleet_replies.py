"""A server's reply is outside input: `fleet check` and `rollout` read it bounded in bytes
while it streams and through the one bounded JSON reader, so something posing as a server
(a reply nested 200,000 deep, or larger than the file limit) is an unreadable server,
never a RecursionError or unbounded memory."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from configbags.fleet import replies
from configbags.fleet.check import EXIT_UNREACHABLE, main
from configbags.fleet.replies import NoAnswer
from configbags.fleet.rollout import EXIT_REFUSED, EXIT_USAGE, side_values
from configbags.fleet.rollout import main as rollout_main
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
    "/ok/config/contracts": b'{"ok": 1}',
    "/half/config/contracts": b'{"role": null, "schema_version": "1", "contracts": {"kv_transfer": {"roles": []}}}',
}


class _Poser(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = REPLIES.get(self.path, b"{}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PATCH(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()  # any 200 JSON: not a configbags door's answer

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


class _Drip(http.server.BaseHTTPRequestHandler):
    """Answers 200 with a long Content-Length, then one byte every 0.2 s: no single read
    ever waits long, so only a deadline on the whole exchange ends it."""

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for _ in range(100_000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass  # the client gave up

    do_GET = do_PATCH = _drip

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def drip() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_rollout_gives_up_on_a_dripping_server_at_its_timeout_naming_it(
        drip: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(NoAnswer, match=rf"{drip}: GET /server_info: no complete answer within 0.5 s"):
        side_values(None, drip, [], None, 0.5)  # type: ignore[arg-type]  # a URL needs no context
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("weight_version: v1\n")
    new.write_text("weight_version: v2\n")
    code = rollout_main([str(old), str(new), "--package", "configbags.generated", "--apply", drip,
                         "--timeout", "0.5", "--", "--model-path", "m"])
    out = capsys.readouterr().out
    assert code == EXIT_REFUSED
    assert f"apply to {drip}: {drip}: PATCH /config: no complete answer within 0.5 s" in out
    assert "may or may not have applied" in out
    code = rollout_main([drip, str(new), "--package", "configbags.generated", "--timeout", "0.5", "--",
                         "--model-path", "m"])
    assert code == EXIT_USAGE
    assert f"{drip}: GET /server_info: no complete answer within 0.5 s" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "601", "abc"])
def test_the_timeout_is_bounded_on_both_commands(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        rollout_main(["a.yaml", "b.yaml", "--timeout", value])
    assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        main(["http://127.0.0.1:1", "--timeout", value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.count("--timeout") == 2


def test_a_password_in_a_server_url_is_never_printed(poser: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`http://user:PW@host` reaches a CI log through every message naming the server."""
    with_password = poser.replace("http://", "http://ops:SECRETPW@")
    with pytest.raises(SystemExit) as exited:  # refused before any request (a user part is no key)
        main([f"{with_password}/deep"])
    assert exited.value.code == 2
    said = capsys.readouterr()
    assert "SECRETPW" not in said.out + said.err and "http://***@" in said.err
    with pytest.raises(ConfigError) as refused:
        side_values(None, f"{with_password}/deep", [], None)  # type: ignore[arg-type]
    assert "SECRETPW" not in str(refused.value)
    closed = "http://ops:SECRETPW@127.0.0.1:9/"
    with pytest.raises(ConfigError) as refused_too:
        side_values(None, closed, [], None)  # type: ignore[arg-type]
    # refused before it is sent, as the CLI refuses it (a user part would replace the key)
    assert "SECRETPW" not in str(refused_too.value) and "user part" in str(refused_too.value)
    capsys.readouterr()
    assert rollout_main(["--package", "configbags.generated", closed, closed]) != 0
    said = capsys.readouterr()
    assert "SECRETPW" not in said.out + said.err and "http://***@127.0.0.1:9/" in said.out + said.err


def test_a_server_that_is_no_configbags_door_is_never_planned_against_nor_applied(
        poser: str, tmp_path: Path) -> None:
    """Any other server's 200 JSON: no readback to plan every leaf against, no PATCH answer
    to call applied; a saved readback with no values neither."""
    from configbags.fleet.rollout import apply

    with pytest.raises(ConfigError, match="no configbags readback"):
        side_values(None, f"{poser}/plain", [], None)  # type: ignore[arg-type]
    _, answer = apply(f"{poser}/plain", {"source": "x", "leaves": {"weight_version": "v2"}}, None)
    assert answer["error"] == "not_a_door" and "nothing is known of what it did" in answer["message"]
    saved = tmp_path / "saved.json"
    saved.write_text('{"record": {}, "resolved": {}}')
    with pytest.raises(ConfigError, match="a saved readback with no resolved values"):
        side_values(None, str(saved), [], None)  # type: ignore[arg-type]


def test_entries_are_one_server_by_address_or_by_instance_and_answer() -> None:
    from configbags.fleet.check import Reading, Target, address, one_server

    assert address("HTTP://Host:80/") == address("http://host") == "http://host"
    assert address("http://u:pw@127.0.0.1:30000//") == "http://127.0.0.1:30000"
    assert address("http://127.0.0.1:30000") != address("http://127.0.0.1:30001")
    body = {"role": "prefill", "instance": "a1b2", "contracts": {}}

    def reading(url: str, contracts: dict[str, object] | None) -> Reading:
        return Reading(Target(url), contracts)

    a, b = reading("http://127.0.0.1:1", body), reading("http://localhost:1/", dict(body))
    c = reading("http://10.0.0.9:1", {**body, "role": "decode"})  # claims a1b2's id, answers otherwise
    d = reading("http://127.0.0.1:1/", None)  # unreachable, but a1b2's address
    assert one_server([a, b, c, d]) == [[a, b, d], [c]]
    assert len(one_server([reading("http://x:1", {"instance": ""}), reading("http://y:1", {"instance": ""})])) == 2


@pytest.mark.parametrize(("path", "why"), [("/ok", "no 'role', 'schema_version', 'contracts'"),
                                           ("/half", "$.contracts.kv_transfer has no 'fingerprint', 'members'")])
def test_a_200_json_answer_that_is_no_door_is_unreachable_naming_the_url(
        poser: str, path: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A health sidecar or a catch-all proxy answers `{"ok": 1}` to everything: it is not a
    door declaring nothing, and a fleet check pointed at it must not pass."""
    for argv in ([f"{poser}{path}"], [f"decode={poser}{path}", "--json"]):
        assert main(argv) == EXIT_UNREACHABLE
        out = capsys.readouterr().out
        assert "not as a configbags door does" in out and why.replace('"', '\\"' if "--json" in argv else '"') in out
        if "--json" not in argv:
            assert f"UNREACHABLE {poser}{path}: GET /config/contracts answered 200, but not as a configbags door" in out


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/health?", "http://127.0.0.1:9/config/tp_size?x=1",
                                 "http://127.0.0.1:9#frag"])
def test_a_url_with_a_query_or_fragment_is_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The door's paths are appended to the URL: `?` would swallow /config/contracts."""
    with pytest.raises(SystemExit) as exited:
        main([url])
    assert exited.value.code == 2
    assert "has a query or fragment" in capsys.readouterr().err
