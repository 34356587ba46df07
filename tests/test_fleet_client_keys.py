"""The clients' keys and URLs (`fleet check`, `rollout`): a key no request could carry
(surrounding whitespace, control characters, non-ASCII) is refused before any request by
the server's own key rule, naming where it came from and never the key; a URL no request
could go to (bad port, unclosed `[`, invalid IDNA) is one line of bad usage (exit 2); and
no httpx error reaches the output with a header value in it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from configbags.fleet import check as fleet_check
from configbags.fleet import rollout
from configbags.fleet.replies import http_failure

PLANTED = "SEKPLANT7"
BAD_KEYS = [PLANTED + "\n", PLANTED + " ", PLANTED + "\t", PLANTED + "\r", PLANTED + "\u00e9", PLANTED + "\x1b",
            " " + PLANTED]


def closed_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(capsys: pytest.CaptureFixture[str], main: object, *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))  # type: ignore[operator]
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out = capsys.readouterr()
    return int(code or 0), out.out + out.err


@pytest.fixture
def listening() -> Iterator[int]:
    """A port that takes connections (the kernel's backlog) and never answers: httpx gets as
    far as sending the request's headers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


@pytest.fixture
def servers(tmp_path: Path) -> Path:
    url = f"http://127.0.0.1:{closed_port()}"
    path = tmp_path / "fleet.yaml"
    path.write_text(f"servers:\n  - {{url: '{url}', role: prefill, key_env: K1_PLANT}}\n"
                    f"  - {{url: '{url}', role: decode, key_env: K2_PLANT}}\n")
    return path


@pytest.mark.parametrize("key", BAD_KEYS)
@pytest.mark.parametrize("json_out", [False, True])
def test_fleet_check_refuses_a_key_from_key_env_naming_the_variable(
        key: str, json_out: bool, servers: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("K1_PLANT", key)
    monkeypatch.setenv("K2_PLANT", "fine")
    code, out = run(capsys, fleet_check.main, "--servers", str(servers), *(["--json"] if json_out else []))
    assert code == 2, out
    assert PLANTED not in out
    assert "environment variable K1_PLANT" in out and "servers[0] key_env" in out


@pytest.mark.parametrize("key", BAD_KEYS)
def test_fleet_check_refuses_the_read_key_from_the_variable_or_the_flag(
        key: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("CONFIGBAGS_API_KEY", key)
    code, out = run(capsys, fleet_check.main, url, "--diff")
    assert code == 2 and PLANTED not in out and "environment variable CONFIGBAGS_API_KEY" in out, out
    monkeypatch.delenv("CONFIGBAGS_API_KEY")
    code, out = run(capsys, fleet_check.main, url, "--api-key", key)
    assert code == 2 and PLANTED not in out and "the key from --api-key" in out, out


@pytest.mark.parametrize("key", BAD_KEYS)
def test_rollout_refuses_read_and_admin_keys_before_any_request(
        key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("weight_version: v1\n")
    new.write_text("weight_version: v9\n")
    pkg = ("--package", "configbags.generated")
    monkeypatch.setenv("CONFIGBAGS_API_KEY", key)
    code, out = run(capsys, rollout.main, *pkg, url, str(new))
    assert code == 2 and PLANTED not in out and "environment variable CONFIGBAGS_API_KEY" in out, out
    monkeypatch.delenv("CONFIGBAGS_API_KEY")
    code, out = run(capsys, rollout.main, *pkg, str(old), str(new), "--apply", url, "--admin-key", key,
                    "--", "--model-path", "m")
    assert code == 2 and PLANTED not in out and "the key from --admin-key" in out, out
    monkeypatch.setenv("CONFIGBAGS_ADMIN_KEY", key)
    code, out = run(capsys, rollout.main, *pkg, str(old), str(new), "--apply", url, "--json", "--",
                    "--model-path", "m")
    assert code == 2 and PLANTED not in out and "environment variable CONFIGBAGS_ADMIN_KEY" in out, out


def test_a_bad_key_that_is_never_sent_is_not_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("weight_version: v1\n")
    new.write_text("weight_version: v9\n")
    monkeypatch.setenv("CONFIGBAGS_API_KEY", PLANTED + "\n")  # two files: no URL is read
    monkeypatch.setenv("CONFIGBAGS_ADMIN_KEY", PLANTED + "\n")  # no --apply
    code, out = run(capsys, rollout.main, "--package", "configbags.generated", str(old), str(new),
                    "--", "--model-path", "m")
    assert code == 0 and "weight_version" in out and PLANTED not in out


def test_no_httpx_error_is_shown_with_a_header_value(
        listening: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The general guard, with the up-front key check switched off: httpx refuses the header
    and quotes it in its error; the output never carries it."""
    url = f"http://127.0.0.1:{listening}"
    servers = tmp_path / "fleet.yaml"
    servers.write_text(f"servers:\n  - {{url: '{url}', role: prefill, key_env: K1_PLANT}}\n"
                       f"  - {{url: '{url}/', role: decode, key_env: K2_PLANT}}\n")
    monkeypatch.setattr(fleet_check, "client_key_problem", lambda key, origin: None)
    monkeypatch.setattr(rollout, "client_key_problem", lambda key, origin: None)
    monkeypatch.setenv("K1_PLANT", PLANTED + "\n")
    monkeypatch.setenv("K2_PLANT", PLANTED + "\r")
    for extra in ([], ["--json"]):
        code, out = run(capsys, fleet_check.main, "--servers", str(servers), *extra)
        assert code == 3 and "LocalProtocolError" in out and PLANTED not in out, out
    monkeypatch.setenv("CONFIGBAGS_API_KEY", PLANTED + "\n")
    code, out = run(capsys, rollout.main, "--package", "configbags.generated", url, str(servers))
    assert code == 2 and PLANTED not in out, out
    monkeypatch.delenv("CONFIGBAGS_API_KEY")
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("weight_version: v1\n")
    new.write_text("weight_version: v9\n")
    for extra in ([], ["--json"]):
        code, out = run(capsys, rollout.main, "--package", "configbags.generated", str(old), str(new), "--apply",
                        url, "--admin-key", PLANTED + "\n", *extra, "--", "--model-path", "m")
        assert code == 1 and PLANTED not in out, out


def test_http_failure_withholds_protocol_error_text_and_cuts_keys() -> None:
    leaked = httpx.LocalProtocolError(f"Illegal header value b'Bearer {PLANTED}\\n'")
    assert PLANTED not in http_failure(leaked, "http://h:1", [PLANTED + "\n"])
    remote = httpx.RemoteProtocolError(f"echoed {PLANTED}")
    assert PLANTED not in http_failure(remote, "http://h:1")
    other = httpx.ConnectError(f"cannot connect to http://u:pw@h:1 with {PLANTED}")
    shown = http_failure(other, "http://u:pw@h:1", [PLANTED])
    assert PLANTED not in shown and "pw" not in shown and shown.startswith("ConnectError: ")


BAD_URLS = {
    "http://127.0.0.1:99999": "port 99999",
    "http://127.0.0.1:-1": "port -1",
    "http://127.0.0.1:0": "port 0",
    "http://127.0.0.1:1x": "Invalid port",
    "http://127.0.0.1:1:2": "Invalid port",
    "http://[::1": "cannot be read as a URL",
    "http://xn--:1": "cannot be read as a URL",
}


@pytest.mark.parametrize(("url", "why"), BAD_URLS.items())
def test_a_bad_url_is_one_line_of_bad_usage(
        url: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, fleet_check.main, url)
    assert code == 2 and "Traceback" not in out and "URL argument 1" in out and why in out and url in out, out
    servers = tmp_path / "s.yaml"
    servers.write_text(f"servers:\n  - {{url: 'http://127.0.0.1:{closed_port()}'}}\n  - {{url: '{url}'}}\n")
    code, out = run(capsys, fleet_check.main, "--servers", str(servers))
    assert code == 2 and "Traceback" not in out and "servers[1]" in out and why in out, out
    new = tmp_path / "new.yaml"
    new.write_text("weight_version: v9\n")
    code, out = run(capsys, rollout.main, "--package", "configbags.generated", url, str(new), "--",
                    "--model-path", "m")
    assert code == 2 and "OLD" in out and why in out, out
    code, out = run(capsys, rollout.main, "--package", "configbags.generated", str(new), str(new), "--apply", url,
                    "--admin-key", "k", "--", "--model-path", "m")
    assert code == 2 and "--apply" in out and why in out, out


def test_a_url_user_part_stays_masked_in_its_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, fleet_check.main, "http://user:SEKPW@127.0.0.1:99999")
    assert code == 2 and "SEKPW" not in out and "***@" in out


@pytest.mark.parametrize("url", ["http:/u:SEKMAL@127.0.0.1:1", "u:SEKMAL@127.0.0.1:1", "//u:SEKMAL@127.0.0.1:1",
                                 "https:u:SEKMAL@127.0.0.1:1", "HTTP:/u:SEKMAL@h:1"])
def test_a_malformed_urls_user_part_stays_masked_wherever_it_is_refused(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    servers = tmp_path / "s.yaml"
    servers.write_text(f"servers:\n  - {{url: '{url}'}}\n")
    new = tmp_path / "new.yaml"
    new.write_text("weight_version: v9\n")
    for main, *argv in ([fleet_check.main, url], [fleet_check.main, "--servers", str(servers)],
                        [rollout.main, "--package", "configbags.generated", url, str(new), "--", "--model-path", "m"],
                        [rollout.main, "--package", "configbags.generated", str(new), str(new), "--apply", url,
                         "--admin-key", "k", "--", "--model-path", "m"]):
        code, out = run(capsys, main, *argv)
        assert code == 2 and "SEKMAL" not in out and "***@" in out, (argv, out)


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str | None]]]:
    """A server that records each request's Authorization header (and answers 401)."""
    import http.server
    import threading

    seen: list[str | None] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            body = b'{"error": "unauthorized", "message": "no"}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PATCH = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_url_with_a_user_part_is_refused_before_any_request_naming_the_key_options(
        recorder: tuple[str, list[str | None]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """httpx sends a URL's `user:pass@` as basic auth, in place of the `Bearer` read key: the
    key given was silently dropped and the door answered 401. Now: exit 2, nothing sent."""
    host, seen = recorder
    url = f"http://ops:SEKUSERPW@{host}"
    servers = tmp_path / "s.yaml"
    servers.write_text(f"servers:\n  - {{url: '{url}'}}\n")
    new = tmp_path / "new.yaml"
    new.write_text("weight_version: v9\n")
    for main, where, keys, *argv in (
            [fleet_check.main, "URL argument 1", "--api-key", url, "--api-key", "readkey-1"],
            [fleet_check.main, "servers[0]", "key_env", "--servers", str(servers), "--api-key", "readkey-1"],
            [rollout.main, "OLD", "--api-key", "--package", "configbags.generated", url, str(new),
             "--api-key", "readkey-1", "--", "--model-path", "m"],
            [rollout.main, "--apply", "--admin-key", "--package", "configbags.generated", str(new), str(new),
             "--apply", url, "--admin-key", "adminkey-1", "--", "--model-path", "m"]):
        code, out = run(capsys, main, *argv)
        assert code == 2 and "SEKUSERPW" not in out and f"http://***@{host}" in out, (argv, out)
        assert where in out and "user part" in out and keys in out and "Traceback" not in out, (argv, out)
    assert seen == []


def test_library_callers_are_refused_a_url_with_a_user_part_before_any_request(
        recorder: tuple[str, list[str | None]]) -> None:
    """The CLIs refuse a user part first; `rollout.apply`, `rollout.side_values` and
    `fleet.check.run` called from Python refuse it too, nothing sent (httpx would send
    it as basic auth in place of the key)."""
    from configbags.packages import named_context
    from configbags.runtime.errors import ConfigError

    host, seen = recorder
    url = f"http://ops:SEKUSERPW@{host}"
    context = named_context("configbags.generated")
    calls = (lambda: rollout.apply(url, {"source": "t", "leaves": {}}, "adminkey-1"),
             lambda: rollout.side_values(context, url, [], "readkey-1"),
             lambda: fleet_check.run([fleet_check.Target(url, key="readkey-1")]))
    for call in calls:
        with pytest.raises(ConfigError, match="user part") as caught:
            call()
        assert "SEKUSERPW" not in str(caught.value)
    assert seen == []
