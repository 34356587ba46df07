"""`configbags serve` through a real client: every endpoint, every error status, auth,
redaction, size limits, the schema-built OpenAPI document, and concurrent changes that
lose no update and leave no gap in the epochs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serve_server import ADMIN_KEY, API_KEY, Server, auth

from configbags.generated.registry import REGISTRY
from configbags.runtime.leaftypes import Policy

pytest.importorskip("fastapi")

ADMIN = auth(ADMIN_KEY)
READ = auth(API_KEY)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server("--api-key", API_KEY, "--admin-api-key", ADMIN_KEY, "--max-body-bytes", "4096")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def patch(client: httpx.Client, leaves: dict[str, Any], source: str = "test") -> httpx.Response:
    return client.patch("/config", json={"source": source, "leaves": leaves}, headers=ADMIN)


def epoch(client: httpx.Client) -> int:
    value: int = client.get("/server_info", headers=READ).json()["epoch"]
    return value


def test_health_needs_no_key(client: httpx.Client) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["ranks"] == 1


@pytest.mark.parametrize("path", ["/server_info", "/config/tp_size"])
def test_reads_need_the_api_key(client: httpx.Client, path: str) -> None:
    missing = client.get(path)
    assert missing.status_code == 401 and missing.json()["error"] == "missing_key"
    assert missing.headers["www-authenticate"] == "Bearer"
    bad = client.get(path, headers=auth("read-key-7f3b"))
    assert bad.status_code == 401 and bad.json()["error"] == "bad_key"
    assert "Authorization: Bearer" in bad.json()["fix"]
    # the key by its leaf: a flag would misname one given by a file or a variable
    assert bad.json()["message"] == "the key sent is not the api key (serving.api_key)"
    assert client.get(path, headers=READ).status_code == 200
    assert client.get(path, headers=ADMIN).status_code == 200  # the admin key reads too
    assert client.get(path, headers={"Authorization": API_KEY}).status_code == 401  # not a bearer token


def test_server_info_is_the_readback_with_ranks_and_secrets_redacted(client: httpx.Client) -> None:
    response = client.get("/server_info", headers=READ)
    info = response.json()
    assert {"record", "overrides", "resolved", "epoch", "sealed", "config_hash", "ranks"} <= set(info)
    assert info["sealed"] is True
    assert info["ranks"] == [{"rank": 0, "epoch": info["epoch"], "config_hash": info["config_hash"]}]
    assert info["record"]["model_path"] == "/models/m"
    for section in ("record", "resolved"):
        assert info[section]["api_key"] == "<redacted>"
        assert info[section]["admin_api_key"] == "<redacted>"
    assert API_KEY not in response.text and ADMIN_KEY not in response.text


def test_explain_one_leaf(client: httpx.Client) -> None:
    info = client.get("/config/speculative_num_draft_tokens", headers=READ).json()
    assert info["leaf"] == "speculative_num_draft_tokens" and info["namespace"] == "spec"
    assert info["policy"] == "runtime" and info["owner"] == "scheduler"
    assert info["writers"] == ["scheduler", "operator"] and info["operator_writable"] is True
    assert info["capacity"] == {"leaf": "max_speculative_num_draft_tokens", "value": 0}
    startup = client.get("/config/tp_size", headers=READ).json()
    assert startup["policy"] == "startup" and startup["operator_writable"] is False
    assert startup["layer"] == "default" and startup["value"] == 1 and startup["capacity"] is None
    secret = client.get("/config/admin_api_key", headers=READ).json()
    assert secret["value"] == secret["record"] == secret["resolved"] == "<redacted>"


def test_explain_unknown_leaf(client: httpx.Client) -> None:
    response = client.get("/config/tp_sise", headers=READ)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "unknown_leaf" and body["leaf"] == "tp_sise"
    assert "did you mean 'tp_size'" in body["message"]
    # no path on the server's disk reaches a client
    assert "CONFIG.md" not in response.text and "/" + "build" not in response.text
    assert "GET /server_info" in body["fix"]
    refused = patch(client, {"tp_sise": 2})
    assert refused.status_code == 400 and "CONFIG.md" not in refused.text and "__editable__" not in refused.text


def test_patch_changes_a_leaf_with_provenance(client: httpx.Client) -> None:
    before = epoch(client)
    response = patch(client, {"speculative_accept_threshold_acc": 0.25}, source="alice")
    assert response.status_code == 200
    body = response.json()
    assert body["epoch"] == before + 1
    (entry,) = body["entries"]
    assert entry["leaf"] == "speculative_accept_threshold_acc" and entry["new"] == 0.25
    assert entry["source"] == "http:alice" and entry["epoch"] == before + 1
    explained = client.get("/config/speculative_accept_threshold_acc", headers=READ).json()
    assert explained["value"] == 0.25 and explained["layer"] == "runtime" and "http:alice" in explained["source"]
    assert explained["overrides"][-1]["new"] == 0.25
    info = client.get("/server_info", headers=READ).json()
    assert info["resolved"]["speculative_accept_threshold_acc"] == 0.25
    assert info["record"]["speculative_accept_threshold_acc"] == 1.0  # the operator input never changes
    assert info["overrides"][-1] == entry
    # the same value again changes nothing: no entry, no new epoch
    again = patch(client, {"speculative_accept_threshold_acc": 0.25})
    assert again.json() == {"epoch": before + 1, "entries": []}


def test_patch_needs_the_admin_key(client: httpx.Client) -> None:
    body = {"source": "x", "leaves": {"weight_version": "v9"}}
    assert client.patch("/config", json=body).json()["error"] == "missing_key"
    wrong = client.patch("/config", json=body, headers=READ)  # the read key may not change anything
    assert wrong.status_code == 401 and wrong.json()["error"] == "bad_key"
    assert wrong.json()["message"] == "the key sent is not the admin key (serving.admin_api_key)"


@pytest.mark.parametrize(
    ("leaves", "status", "code", "leaf", "message"),
    [
        ({"speculative_accept_thresold_acc": 0.5}, 400, "unknown_leaf", "speculative_accept_thresold_acc",
         "did you mean 'speculative_accept_threshold_acc'"),
        ({"speculative_accept_threshold_acc": "high"}, 400, "bad_value", "speculative_accept_threshold_acc",
         "is not of type float"),
        ({"speculative_accept_threshold_acc": 1.5}, 400, "bad_value", "speculative_accept_threshold_acc",
         "above the maximum 1.0"),
        ({"tp_size": 2}, 403, "policy", "tp_size", "startup leaves are fixed at publish"),
        ({"dp_size": 2}, 403, "not_writable", "dp_size", "written as role 'operator'"),
        ({"attn_tp_size": 2}, 403, "policy", "attn_tp_size", "is derived from"),
        ({"speculative_num_draft_tokens": 8}, 409, "above_capacity", "speculative_num_draft_tokens",
         "above its capacity spec.max_speculative_num_draft_tokens=0"),
    ],
)
def test_patch_refusals(client: httpx.Client, leaves: dict[str, Any], status: int, code: str, leaf: str,
                        message: str) -> None:
    before = client.get("/server_info", headers=READ).json()
    response = patch(client, leaves)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code and body["leaf"] == leaf and message in body["message"]
    assert body["fix"]
    after = client.get("/server_info", headers=READ).json()
    assert after["epoch"] == before["epoch"] and after["resolved"] == before["resolved"]


def test_patch_is_all_or_nothing(client: httpx.Client) -> None:
    before = client.get("/server_info", headers=READ).json()
    response = patch(client, {"weight_version": "never-applied", "speculative_accept_threshold_single": 7.0})
    assert response.status_code == 400 and response.json()["leaf"] == "speculative_accept_threshold_single"
    after = client.get("/server_info", headers=READ).json()
    assert after["resolved"]["weight_version"] == before["resolved"]["weight_version"]
    assert after["epoch"] == before["epoch"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"source": "x", "leaves": {"weight_version": NaN}}', "NaN is not a JSON number"),
        (b'{"source": "x", "leaves": {"weight_version": "a", "weight_version": "b"}}', "duplicate key"),
        (b"[" * 2000 + b"]" * 2000, "nested too deeply"),
        (b'{"source": "x", "leaves": {"hicache_storage_backend_extra_config": ' + b"[" * 40 + b"]" * 40 + b"}}",
         "nested too deeply"),
        (b"\xff\xfe", "not valid JSON"),
        (b'["source", "leaves"]', "not an object"),
        (b'{"leaves": {"weight_version": "a"}}', "`source` must be"),
        (b'{"source": "x\\u0007", "leaves": {"weight_version": "a"}}', "printable"),
        (b'{"source": "x", "leaves": {}}', "`leaves` must be a non-empty object"),
        (b'{"source": "x", "leaves": {"weight_version": "a"}, "dry_run": true}', "unknown key(s) 'dry_run'"),
    ],
)
def test_hostile_bodies_get_400(client: httpx.Client, content: bytes, message: str) -> None:
    response = client.patch("/config", content=content, headers={**ADMIN, "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "bad_request" and message in response.json()["message"]


def test_large_bodies_get_413(client: httpx.Client) -> None:
    big = {"source": "x", "leaves": {"weight_version": "v" * 5000}}
    response = patch(client, big["leaves"])
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while streaming
        yield b'{"source": "x", "leaves": {"weight_version": "'
        for _ in range(10):
            yield b"v" * 1000
        yield b'"}}'

    streamed = client.patch("/config", content=chunks(), headers=ADMIN)
    assert streamed.status_code == 413
    # unauthenticated bodies are refused before they are read
    assert client.patch("/config", content=b"x" * 10_000).status_code == 401


def test_openapi_describes_the_patch_body_from_the_schema(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    body = doc["paths"]["/config"]["patch"]["requestBody"]["content"]["application/json"]["schema"]
    leaves = body["properties"]["leaves"]["properties"]
    expected = {
        name for name, spec in REGISTRY.leaves.items()
        if spec.policy is not Policy.STARTUP and (spec.owner == "operator" or "operator" in spec.writers)
    }
    assert set(leaves) == expected and expected  # the schema's writers, nothing else
    assert not {n for n in leaves if REGISTRY.leaves[n].policy is Policy.STARTUP}
    assert leaves["speculative_accept_threshold_acc"]["type"] == "number"
    assert (leaves["speculative_accept_threshold_acc"]["minimum"], leaves["speculative_accept_threshold_acc"]["maximum"]) == (0.0, 1.0)
    assert leaves["speculative_num_draft_tokens"]["type"] == ["integer", "null"]
    assert leaves["speculative_num_draft_tokens"]["x-configbags-capacity"] == "max_speculative_num_draft_tokens"
    assert body["properties"]["leaves"]["additionalProperties"] is False
    responses = doc["paths"]["/config"]["patch"]["responses"]
    assert {"400", "401", "403", "409", "413", "503"} <= set(responses)


def test_unknown_route_is_a_json_404(client: httpx.Client) -> None:
    response = client.get("/set_internal_state")
    assert response.status_code == 404 and response.json()["error"] == "http"


@pytest.mark.slow
def test_concurrent_patches_and_reads_lose_nothing_and_leave_no_epoch_gap(server: Server) -> None:
    count = 200

    async def run() -> tuple[list[httpx.Response], list[httpx.Response]]:
        limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
        async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as c:
            patches = [c.patch("/config", json={"source": f"load-{i}", "leaves": {"weight_version": f"w{i}"}},
                               headers=ADMIN) for i in range(count)]
            reads = [c.get("/server_info", headers=READ) for _ in range(count)]
            done = await asyncio.gather(*patches, *reads)
            return list(done[:count]), list(done[count:])

    patched, read = asyncio.run(asyncio.wait_for(run(), timeout=120))
    assert all(r.status_code == 200 for r in patched + read)
    epochs = sorted(r.json()["epoch"] for r in patched)
    assert epochs == list(range(epochs[0], epochs[0] + count))  # one epoch each, no gap, no repeat
    with httpx.Client(base_url=server.url, timeout=10) as c:
        info = c.get("/server_info", headers=READ).json()
    ours = [e for e in info["overrides"] if e["source"].startswith("http:load-")]
    assert sorted(e["new"] for e in ours) == sorted(f"w{i}" for i in range(count))  # no update lost
    assert [e["epoch"] for e in ours] == epochs
    assert info["epoch"] >= epochs[-1]
    last = max(patched, key=lambda r: r.json()["epoch"]).json()["entries"][0]["new"]
    assert info["resolved"]["weight_version"] == last  # the last epoch's value is in force
    for r in read:  # every read saw one consistent state
        body = r.json()
        assert body["ranks"][0]["epoch"] == body["epoch"]


def test_keys_are_never_logged(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        c.get("/server_info", headers=auth("wrong-" + API_KEY))
        patch(c, {"weight_version": "logged"})
    output = server.output()
    assert "configbags serve: http://127.0.0.1" in output
    assert API_KEY not in output and ADMIN_KEY not in output


def test_without_keys_reads_are_open_changes_disabled_and_sigterm_exits_0() -> None:
    server = Server()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            assert c.get("/server_info").status_code == 200
            response = c.patch("/config", json={"source": "x", "leaves": {"weight_version": "v2"}})
            assert response.status_code == 403 and response.json()["error"] == "changes_disabled"
            assert "--admin-api-key" in response.json()["fix"]
        assert server.terminate() == 0
    finally:
        server.stop()


def test_bad_server_flags_exit_2_without_a_traceback() -> None:
    import subprocess
    import sys

    from serve_server import REPO

    done = subprocess.run([sys.executable, "-m", "configbags", "serve", "--tp-size", "two"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--tp-size" in done.stderr


def test_start_up_says_what_is_protected(server: Server) -> None:
    assert "reads need the api key (or the admin key); changes need the admin key" in server.output()


def test_refused_keys_are_logged_with_the_socket_peer_never_a_forwarded_address() -> None:
    """A trail of key guessing: each client's refusals at WARNING, with the address the
    connection came from. X-Forwarded-For is not read, so no local process can name
    itself (or forge a log line) in that trail."""
    server = Server("--api-key", API_KEY, "--admin-api-key", ADMIN_KEY)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            forged = {**auth("guess-1"), "X-Forwarded-For": "6.6.6.6", "X-Real-IP": "6.6.6.6"}
            assert c.get("/server_info", headers=forged).status_code == 401
            assert c.patch("/config", json={"source": "x", "leaves": {}}, headers=READ).status_code == 401
            for number in range(5):  # a burst that stops: its size is said at shutdown at the latest
                assert c.get("/server_info", headers=auth(f"guess-{number + 2}")).status_code == 401
        assert server.terminate() == 0
        output = server.output()
        assert "refused GET /server_info from 127.0.0.1:" in output and ": bad_key" in output
        assert "refused 6 more requests from 127.0.0.1 in " in output
        assert "6.6.6.6" not in output and "guess-" not in output
    finally:
        server.stop()


def test_the_refusal_log_is_one_line_per_client_per_interval_counting_the_rest(
        caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    from configbags.serve.app import RefusalLog

    def request(host: str, path: str = "/server_info") -> Any:
        return SimpleNamespace(client=SimpleNamespace(host=host, port=1), method="GET", url=SimpleNamespace(path=path))

    refusals = RefusalLog(interval=3600)
    with caplog.at_level("WARNING", logger="configbags.serve"):
        for _ in range(5):
            refusals.note(request("10.0.0.1"), "bad_key")
        refusals.note(request("10.0.0.2"), "missing_key")
        refusals.flush()  # within the interval: nothing yet
        assert len(caplog.records) == 2
        refusals.flush(every=True)  # as at shutdown: the burst's size is said
        refusals.interval = 0  # the interval is over: the next refusal is a line of its own
        refusals.note(request("10.0.0.1"), "bad_key")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:2] == [
        "refused GET /server_info from 10.0.0.1:1: bad_key",
        "refused GET /server_info from 10.0.0.2:1: missing_key",
    ]
    assert lines[2].startswith("refused 4 more requests from 10.0.0.1 in ")
    assert lines[2].endswith("s, the last GET /server_info from 10.0.0.1:1: bad_key")
    assert lines[3] == "refused GET /server_info from 10.0.0.1:1: bad_key" and len(lines) == 4
    refusals.interval = 3600
    for number in range(RefusalLog.MAX_HOSTS + 10):  # a table of hosts that cannot grow without end
        refusals.note(request(f"10.1.{number // 256}.{number % 256}"), "bad_key")
    assert len(refusals._hosts) <= RefusalLog.MAX_HOSTS


@pytest.mark.parametrize("path", [
    "/config/x\u20282026-12-01 21:10:00,000 configbags INFO config override [http:oncall] api_key",
    "/config/A\x1b[31mRED\x1b[0m\x1b[2K\rFORGED", "/config/B\u2028F\x85G\x0bV\x0cF\nN", "/config/" + "z" * 20_000,
])
def test_a_refused_path_reaches_the_log_escaped_and_cut_short(caplog: pytest.LogCaptureFixture, path: str) -> None:
    """The path is the client's text, sent without any key: it must not forge a log line
    (a line or paragraph separator, NEL, VT, FF, CR), colour a terminal, or fill the log."""
    from types import SimpleNamespace

    from configbags.serve.app import RefusalLog

    with caplog.at_level("WARNING", logger="configbags.serve"):
        RefusalLog().note(SimpleNamespace(client=SimpleNamespace(host="h", port=1), method="GET",
                                          url=SimpleNamespace(path=path)), "bad_key")
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.isascii() and line.isprintable() and len(line.splitlines()) == 1
    assert len(line) < 400


@pytest.mark.parametrize("host", ["0.0.0.0:1", "no-such-host.invalid", "[::1]"])
def test_a_host_that_is_no_address_to_listen_on_exits_2_naming_it(host: str) -> None:
    import subprocess
    import sys

    from serve_server import REPO

    done = subprocess.run([sys.executable, "-m", "configbags", "serve", "--package", "configbags.generated",
                           "--model-path", "m", "--host", host, "--port", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"--host {host!r} is not an address to listen on" in done.stderr and "Traceback" not in done.stderr
