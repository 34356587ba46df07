"""Round twenty-two, `fleet check`: a 200 answer of another shape than the door's, in an
element (a contract's roles, a member, a `/server_info` leaf's layer), is `UNREACHABLE ...
not as a configbags door does (where and what)`, exit 3, never a traceback; `--diff` says
which roles it could not compare (fewer than two servers read) instead of "agree"; and a
server of a role no contract names is named. The answers are a real door's readbacks
(built in-process), served by a small HTTP server with one field changed."""

from __future__ import annotations

import copy
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from configbags.fleet.check import EXIT_OK, EXIT_UNREACHABLE, main
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.fleet import contracts_readback
from configbags.runtime.testing import published

assert get_context  # the bundled package's context is loaded, so `published` finds it

BODIES: dict[str, bytes] = {}  # path -> the answer to a GET of it


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


def readbacks(*flags: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A real door's `/config/contracts` and `/server_info` answers for these flags."""
    args = ServerArgs.from_cli(["--model-path", "/models/m", *flags])
    with published(args, role="launcher") as ctx:
        return (json.loads(json.dumps(contracts_readback(ctx.registry, ctx.state, ctx.origins()))),
                json.loads(json.dumps(ctx.server_info())))


PREFILL = readbacks("--disaggregation-mode", "prefill")
DECODE = readbacks("--disaggregation-mode", "decode")
DECODE_LPM = readbacks("--disaggregation-mode", "decode", "--schedule-policy", "lpm")


def serve(name: str, answers: tuple[dict[str, Any], Any]) -> str:
    BODIES[f"/{name}/config/contracts"] = json.dumps(answers[0]).encode()
    BODIES[f"/{name}/server_info"] = json.dumps(answers[1]).encode()
    return name


def changed(body: Any, change: Callable[[Any], Any]) -> Any:
    body = copy.deepcopy(body)
    return change(body) or body


def setting(path: tuple[str, ...], value: Any) -> Callable[[Any], None]:
    def change(body: Any) -> None:
        for key in path[:-1]:
            body = body[key]
        body[path[-1]] = value
    return change


def check(capsys: pytest.CaptureFixture[str], door: str, *argv: str) -> tuple[int, str]:
    code = main([a if a.startswith("-") or a in ALLOWED else "=".join([*a.split("=")[:-1], f"{door}/{a.split('=')[-1]}"])
                 for a in argv])
    return code, capsys.readouterr().out


KV = ("contracts", "kv_transfer")
ALLOWED = ("routing", "draft")  # contracts binding one server of these pairs (`--allow-unchecked`)


@pytest.mark.parametrize(("change", "why"), [
    (setting((*KV, "roles"), [1, "decode"]), "$.contracts.kv_transfer.roles[0] is a number, not a string"),
    (setting((*KV, "roles"), ["prefill", None]), "$.contracts.kv_transfer.roles[1] is null, not a string"),
    (setting((*KV, "roles"), [["prefill"], "decode"]), "$.contracts.kv_transfer.roles[0] is a list, not a string"),
    (setting((*KV, "members", "page_size"), "x"), "$.contracts.kv_transfer.members.page_size is a string, not an "
                                                  "object"),
    (setting((*KV, "members", "page_size"), {"value": 1}), "$.contracts.kv_transfer.members.page_size has no "
                                                           "'layer', 'source'"),
    (setting((*KV, "members", "page_size", "rule"), 7), "$.contracts.kv_transfer.members.page_size.rule is a "
                                                        "number, not a string"),
    (setting(("role_origin",), "x"), "$.role_origin is a string, not an object or null"),
    (setting(("contracts", "kv transfer"), {"roles": "prefill"}), '$.contracts["kv transfer"] has no '
                                                                   "'fingerprint', 'members'"),
])
def test_a_contracts_answer_of_another_shape_in_an_element_is_unreachable(
        door: str, capsys: pytest.CaptureFixture[str], change: Callable[[Any], None], why: str) -> None:
    p = serve("p", PREFILL)
    d = serve("d", (changed(DECODE[0], change), DECODE[1]))
    code, out = check(capsys, door, p, d)
    assert code == EXIT_UNREACHABLE, out
    assert (f"UNREACHABLE {door}/d: GET /config/contracts answered 200, but not as a configbags door does "
            f"({why}); is this URL") in out


def test_a_real_doors_contracts_answer_is_read_and_compared(door: str, capsys: pytest.CaptureFixture[str]) -> None:
    p, d = serve("p", PREFILL), serve("d", DECODE)
    code, out = check(capsys, door, p, d, "--allow-unchecked", "routing", "--allow-unchecked", "draft")
    assert "UNREACHABLE" not in out and "NOTE" not in out
    assert "ok kv_transfer: holds on 2 servers (1 decode, 1 prefill)" in out and code == EXIT_OK


@pytest.mark.parametrize(("info", "why"), [
    (setting(("resolved",), [1]), "$.resolved is a list, not an object"),
    (setting(("layers",), [1]), "$.layers is a list, not an object"),
    (setting(("layers", "page_size"), "x"), "$.layers.page_size is a string, not an object"),
    (lambda body: body.pop("resolved") and None, "$ has no 'resolved'"),
])
def test_a_server_info_of_another_shape_is_unreachable_and_its_role_not_said_to_agree(
        door: str, capsys: pytest.CaptureFixture[str], info: Callable[[Any], None], why: str) -> None:
    d1, d2 = serve("d1", DECODE), serve("d2", (DECODE[0], changed(DECODE[1], info)))
    code, out = check(capsys, door, "--diff", d1, f"decode={d2}")
    assert code == EXIT_UNREACHABLE, out
    assert f"UNREACHABLE {door}/d2: GET /server_info answered 200, but not as a configbags door does ({why})" in out
    assert "agree on every leaf" not in out
    assert (f"diff: the decode servers were not compared: 1 read ({door}/d1), not read: {door}/d2 "
            f"(see UNREACHABLE)") in out


def test_a_server_info_that_is_no_object_leaves_its_role_uncompared_naming_it(
        door: str, capsys: pytest.CaptureFixture[str]) -> None:
    d1, d2 = serve("d1", DECODE), serve("d2", (DECODE[0], [1, 2, 3]))
    code, out = check(capsys, door, "--diff", d1, d2)
    assert code == EXIT_UNREACHABLE
    assert "GET /server_info answered a JSON list, not an object" in out and "agree on every leaf" not in out
    # its role is unknown (neither listed nor read): it may belong to any comparison
    assert f"diff: not read: {door}/d2 (see UNREACHABLE); of a role unknown, so in no comparison" in out
    assert f"diff: the decode servers were not compared: only one, {door}/d1, nothing to compare it with" in out
    code, out = check(capsys, door, "--diff", "--json", d1, f"decode={d2}")
    assert json.loads(out)["diff_servers"] == {"decode": {"read": [f"{door}/d1"], "not_read": [f"{door}/d2"]}}


def test_real_server_infos_are_compared_per_role(door: str, capsys: pytest.CaptureFixture[str]) -> None:
    d1, d2, d3 = serve("d1", DECODE), serve("d2", DECODE), serve("d3", DECODE_LPM)
    code, out = check(capsys, door, "--diff", d1, d2, "--allow-unchecked", "routing", "--allow-unchecked", "draft")
    assert "UNREACHABLE" not in out and "diff: the 2 decode servers read agree on every leaf" in out
    assert code == EXIT_OK, out
    code, out = check(capsys, door, "--diff", d1, d3, "--allow-unchecked", "routing", "--allow-unchecked", "draft")
    assert "diff between the decode servers:\n  schedule_policy:" in out and "agree on every leaf" not in out
    assert code == EXIT_OK, out  # a difference within a role is shown, not a failure


@pytest.mark.parametrize(("role", "said"), [("decode ", 'is of role "decode "'), (None, "reports no role"),
                                            ("decode\x1b[2J", 'is of role "decode\\u001b[2J"')])
def test_a_server_of_a_role_no_contract_names_is_named(
        door: str, capsys: pytest.CaptureFixture[str], role: str | None, said: str) -> None:
    p = serve("p", PREFILL)
    d = serve("d", (changed(DECODE[0], setting(("role",), role)), DECODE[1]))
    code, out = check(capsys, door, p, d)
    assert code != EXIT_OK and "\x1b" not in out
    assert (f"NOTE {door}/d {said}, which no contract of the servers read names (they name decode, draft, engine, "
            f"prefill, router, target), so no contract checks it; set its role (leaf deployment_role)") in out
    assert f"NOTE {door}/p" not in out
