"""Round twenty-three, `fleet check`: a contract holds only when the members the servers
answered agree, whatever their fingerprints say. A door whose fingerprint is the partner's
while a member's value is not (forged, stale, a buggy fork) is BROKEN on that member with
both values, exit 1, never "holds" on the fingerprint alone; so is a pair whose
fingerprints differ while every member agrees (one fingerprint does not match its
members). The answers are a real door's readbacks (built in-process), served by a small
HTTP server on 127.0.0.1 with one field changed."""

from __future__ import annotations

import copy
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from configbags.fleet.check import EXIT_BROKEN, EXIT_OK, main
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.fleet import contracts_readback
from configbags.runtime.testing import published

assert get_context  # the bundled package's context is loaded, so `published` finds it

BODIES: dict[str, bytes] = {}  # path -> the answer to a GET of it
ALLOW = ("--allow-unchecked", "routing", "--allow-unchecked", "draft")


class _Door(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = BODIES.get(self.path)
        self.send_response(200 if body is not None else 404)
        body = body if body is not None else b'{"error": "not_found"}'
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def door() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Door)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def contracts(*flags: str) -> dict[str, Any]:
    """A real door's `/config/contracts` answer for these flags."""
    args = ServerArgs.from_cli(["--model-path", "/models/m", *flags])
    with published(args, role="launcher") as ctx:
        return dict(json.loads(json.dumps(contracts_readback(ctx.registry, ctx.state, ctx.origins()))))


PREFILL = contracts("--disaggregation-mode", "prefill")
DECODE = contracts("--disaggregation-mode", "decode")
DECODE_FP8 = contracts("--disaggregation-mode", "decode", "--kv-cache-dtype", "fp8_e4m3")


def serve(door: str, name: str, body: dict[str, Any]) -> str:
    BODIES[f"/{name}/config/contracts"] = json.dumps(body).encode()
    return f"{door}/{name}"


def with_fingerprint_of(body: dict[str, Any], other: dict[str, Any], contract: str) -> dict[str, Any]:
    """`body` claiming `other`'s fingerprint for `contract`, its members as they are."""
    forged = copy.deepcopy(body)
    forged["contracts"][contract]["fingerprint"] = other["contracts"][contract]["fingerprint"]
    return forged


def test_the_real_fp8_decode_breaks_kv_transfer(door: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline: the fingerprints differ, and the member is named."""
    code = main([serve(door, "p", PREFILL), serve(door, "d", DECODE_FP8), *ALLOW])
    out = capsys.readouterr().out
    assert code == EXIT_BROKEN, out
    assert "BROKEN kv_transfer" in out and "kv_page_dtype:" in out


def test_a_fingerprint_that_contradicts_its_members_does_not_hold(
        door: str, capsys: pytest.CaptureFixture[str]) -> None:
    forged = with_fingerprint_of(DECODE_FP8, PREFILL, "kv_transfer")
    p, d = serve(door, "p", PREFILL), serve(door, "forged", forged)
    code = main([p, d, *ALLOW])
    out = capsys.readouterr().out
    assert code == EXIT_BROKEN, out
    assert "ok kv_transfer" not in out
    assert "BROKEN kv_transfer" in out and "fingerprint" in out, out
    lines = out.splitlines()
    at = lines.index("  kv_page_dtype:")
    shown = "\n".join(lines[at + 1:at + 3])
    assert f'"auto/auto"  on {p}' in shown and f'"fp8_e4m3"  on {d}' in shown, out


def test_fingerprints_that_differ_over_agreeing_members_do_not_hold_and_say_why(
        door: str, capsys: pytest.CaptureFixture[str]) -> None:
    stale = copy.deepcopy(DECODE)
    stale["contracts"]["kv_transfer"]["fingerprint"] = "0" * 16
    code = main([serve(door, "p", PREFILL), serve(door, "stale", stale), *ALLOW])
    out = capsys.readouterr().out
    assert code == EXIT_BROKEN, out
    assert "BROKEN kv_transfer" in out and "Every member read agrees" in out, out


def test_a_json_member_of_another_type_breaks_the_contract_with_both_values(
        door: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`{"x": 1}` and `{"x": true}` are equal to Python but not to the server: the members
    are compared as the fingerprint is, type by type, even under one fingerprint."""
    one = contracts("--disaggregation-mode", "prefill", "--json-model-override-args", '{"x": 1}')
    true = contracts("--disaggregation-mode", "decode", "--json-model-override-args", '{"x": true}')
    if "json_model_override_args" not in one["contracts"]["kv_transfer"]["members"]:
        pytest.skip("kv_transfer has no json member in this schema")
    forged = with_fingerprint_of(true, one, "kv_transfer")
    code = main([serve(door, "p1", one), serve(door, "d1", forged), *ALLOW])
    out = capsys.readouterr().out
    assert code == EXIT_BROKEN, out
    assert '{"x": 1}  on' in out and '{"x": true}  on' in out, out


def test_agreeing_servers_still_hold(door: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([serve(door, "p", PREFILL), serve(door, "d", DECODE), *ALLOW])
    out = capsys.readouterr().out
    assert "ok kv_transfer: holds on 2 servers (1 decode, 1 prefill)" in out and code == EXIT_OK, out
