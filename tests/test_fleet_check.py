"""`configbags fleet check` against real servers on loopback: two prefill servers, one
decode server with another KV-cache dtype and one router. The check fails naming the
kv_transfer contract, both values and the layer of each; after the decode server is fixed
it passes. Every server the tests start is stopped by them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_server import Server, free_port

from configbags.fleet.check import EXIT_BROKEN, EXIT_OK, EXIT_UNREACHABLE, main
from configbags.serve.metrics import digest_value

pytestmark = pytest.mark.slow

KEYS = {"p1": "key-p1-3b7e", "p2": "key-p2-8c1d", "d1": "key-d1-0f9a", "r1": "key-r1-55e2"}
FLAGS = {
    "p1": ["--disaggregation-mode", "prefill"],
    "p2": ["--disaggregation-mode", "prefill", "--schedule-policy", "lpm"],
    "d1": ["--disaggregation-mode", "decode", "--kv-cache-dtype", "fp8_e4m3"],
    "r1": ["--deployment-role", "router"],
}


class Fleet:
    def __init__(self) -> None:
        self.servers: dict[str, Server] = {}

    def start(self, name: str, *flags: str) -> Server:
        self.servers[name] = Server("--api-key", KEYS[name], *flags)
        return self.servers[name]

    def stop(self, name: str) -> None:
        self.servers.pop(name).stop()

    def file(self, tmp_path: Path, roles: dict[str, str] | None = None) -> Path:
        roles = roles or {}
        path = tmp_path / "servers.yaml"
        path.write_text("servers:\n" + "".join(
            f"  - url: {s.url}\n    key: {KEYS[name]}\n" + (f"    role: {roles[name]}\n" if name in roles else "")
            for name, s in self.servers.items()))
        return path


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    f = Fleet()
    try:
        for name, flags in FLAGS.items():
            f.start(name, *flags)
        yield f
    finally:
        for name in list(f.servers):
            f.stop(name)


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_a_broken_contract_names_both_values_and_their_layers(
        fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    servers = fleet.file(tmp_path)
    code, out = check(capsys, "--servers", str(servers))
    assert code == EXIT_BROKEN, out
    assert "BROKEN kv_transfer is broken between 1 decode, 2 prefill" in out
    d1, p1, p2 = (fleet.servers[n].url for n in ("d1", "p1", "p2"))
    # the pages' precision, derived: each side names the inputs and where they came from
    assert (f'"fp8_e4m3"  on {d1} (decode)  [derived: derived from kv_cache_dtype=\'fp8_e4m3\' from --kv-cache-dtype, '
            "dtype='auto' from schema default]") in out
    assert f'"auto/auto"  on {p1} (prefill)  [derived: derived from kv_cache_dtype=\'auto\' from schema default' in out
    assert f'"auto/auto"  on {p2} (prefill)  [derived: ' in out
    assert "ok routing: holds on 4 servers (1 decode, 2 prefill, 1 router)" in out
    assert "unchecked draft" in out
    # machines get the same, with each side's provenance
    code, out = check(capsys, "--servers", str(servers), "--json")
    body = json.loads(out)
    assert code == body["exit_code"] == EXIT_BROKEN
    broken = [f for f in body["findings"] if f["kind"] == "broken"]
    assert [f["contract"] for f in broken] == ["kv_transfer"]
    sides = {s["value"]: s["servers"] for s in broken[0]["members"]["kv_page_dtype"]}
    [decode] = sides["fp8_e4m3"]
    assert decode["server"] == f"{d1} (decode)" and decode["layer"] == "derived"
    assert "kv_cache_dtype='fp8_e4m3' from --kv-cache-dtype" in decode["source"]
    assert [s["layer"] for s in sides["auto/auto"]] == ["derived", "derived"]
    assert set(broken[0]["members"]) == {"kv_page_dtype"}  # only the member that differs


def test_diff_shows_what_differs_within_a_role_redacted(
        fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, "--servers", str(fleet.file(tmp_path)), "--diff")
    assert code == EXIT_BROKEN
    diff = out.partition("diff between the prefill servers:")[2].partition("diff between")[0]
    assert "  schedule_policy:" in diff and "[cli: --schedule-policy]" in diff
    assert "  port:" in diff  # loopback servers differ in port
    assert "api_key" not in diff  # both read <redacted>: a secret never shows, not even as a difference
    assert not any(key in out for key in KEYS.values())


def test_a_role_listed_wrong_fails(fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, "--servers", str(fleet.file(tmp_path, {"d1": "prefill"})))
    assert code == EXIT_BROKEN
    assert f"ROLE {fleet.servers['d1'].url} is listed as prefill but reports role decode" in out
    assert "rule deployment_role_decode" in out


def test_each_server_scrapes_with_its_contract_fingerprints(fleet: Fleet) -> None:
    """/metrics of a live server parses with prometheus_client's parser and carries the
    same fingerprints as /config/contracts."""
    for name, server in fleet.servers.items():
        headers = {"Authorization": f"Bearer {KEYS[name]}"}
        text = httpx.get(f"{server.url}/metrics", headers=headers, timeout=10).text
        scraped = {s.labels["contract"]: s.value
                   for f in text_string_to_metric_families(text) if f.name == "configbags_contract_fingerprint"
                   for s in f.samples}
        contracts = httpx.get(f"{server.url}/config/contracts", headers=headers, timeout=10).json()
        assert scraped == {c: digest_value(v["fingerprint"]) for c, v in contracts["contracts"].items()}
        assert KEYS[name] not in text


def test_fixed_it_passes_and_an_unreachable_server_is_reported(
        fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet.stop("d1")
    fleet.start("d1", "--disaggregation-mode", "decode")
    servers = fleet.file(tmp_path)
    code, out = check(capsys, "--servers", str(servers))
    assert code == EXIT_OK, out
    assert "ok kv_transfer: holds on 3 servers (1 decode, 2 prefill)" in out
    gone = f"http://127.0.0.1:{free_port()}"
    code, out = check(capsys, "--servers", str(servers), gone)
    assert code == EXIT_UNREACHABLE
    assert f"UNREACHABLE {gone}: cannot be reached" in out
    assert "fleet check: 5 server(s), 4 read" in out
    # a wrong key is reported as such, never skipped
    code, out = check(capsys, "--api-key", "wrong", fleet.servers["p1"].url)
    assert code == EXIT_UNREACHABLE
    assert "GET /config/contracts answered 401" in out and "give its key" in out


def test_what_a_server_sends_cannot_forge_or_hide_report_lines() -> None:
    from configbags.fleet.check import Reading, Target, render

    role = "\x1b[2JPWN\x1b[0m\n ok kv_transfer: holds"
    reading = Reading(Target("http://127.0.0.1:1", "prefill"), error=f"refused: {role}")
    text = render([reading], [], None)
    assert "\x1b" not in text and text.count("\n") == 1  # the header line and one line for the server
    assert "\\x1b[2JPWN" in text and "\\n ok kv_transfer" in text


def test_an_allow_unchecked_naming_no_declared_contract_is_a_usage_error(
        fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A typo (`kv_transfr`) would leave the contract it meant UNCHECKED without a word."""
    servers = fleet.file(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["--servers", str(servers), "--allow-unchecked", "kv_transfr"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--allow-unchecked kv_transfr: no server read declares" in err
    assert "did you mean 'kv_transfer'" in err


def test_one_server_listed_twice_is_counted_once(fleet: Fleet, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A prefill server alone leaves kv_transfer with nothing to compare (UNCHECKED): listed
    twice, by one URL, by `localhost` and a trailing slash, or twice in a servers file, it
    is still one server, and the check says which entries were one."""
    p1 = fleet.servers["p1"].url
    alias = p1.replace("127.0.0.1", "localhost") + "/"
    servers = tmp_path / "twice.yaml"
    servers.write_text(f'servers:\n  - {{url: "{p1}", role: prefill}}\n  - {{url: "{p1}/", role: prefill}}\n')
    code, alone = check(capsys, "--api-key", KEYS["p1"], p1)
    assert code == EXIT_BROKEN and "UNCHECKED kv_transfer" in alone
    for argv in ([p1, p1], [p1, alias], ["--servers", str(servers)]):
        code, out = check(capsys, "--api-key", KEYS["p1"], *argv)
        assert code == EXIT_BROKEN, out
        assert "UNCHECKED kv_transfer: it binds" in out and "ok kv_transfer" not in out
        assert out.startswith("fleet check: 2 server(s), 2 read, 1 distinct (see SAME)\n")
        [same] = [line for line in out.splitlines() if line.startswith("SAME ")]
        assert same.startswith(f"SAME {p1}, ") and "are one server (instance " in same and same.endswith(
            f"counted once, as {p1}")
    code, out = check(capsys, "--api-key", KEYS["p1"], p1, alias, "--json")
    body = json.loads(out)
    assert [f["kind"] for f in body["findings"]].count("same") == 1
    assert len({s["instance"] for s in body["servers"]}) == 1
