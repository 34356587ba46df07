"""`configbags rollout` against hostile input (round 20): a `--source` no door could take
(undecodable argv bytes, a newline) is refused naming the flag, exit 2, before any
request; a saved or served `/server_info` readback of the wrong shape, or holding a value
the server refuses (out of range, a lone surrogate), is refused naming the file and the
JSON path, exit 2, never a traceback nor planned as live. The quiet twins: a real
readback still plans, and a plain `--source` still applies."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_server import ADMIN_KEY, API_KEY, Server

from configbags.fleet.rollout import EXIT_OK, EXIT_USAGE, main, side_values
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError
from configbags.runtime.testing import published
from configbags.serve.door import Door

PKG = ("--package", "configbags.generated")
SERVER_FLAGS = ("--", "--model-path", "/models/m")
UNDECODABLE = b"x\xff".decode("utf-8", "surrogateescape")  # what Python makes of argv `x\xff`


def saved_readback(tmp_path: Path, name: str = "live.json", **changes: Any) -> Path:
    """A door's own GET /server_info answer (secrets redacted), one override logged, with
    `changes` put over its top-level fields."""
    assert get_context  # the generated package is loaded, so `published` finds its context
    record = ServerArgs.from_cli(["--model-path", "/models/m", "--tp-size", "2", "--api-key", "old-secret-1f"])
    with published(record, role="launcher") as ctx:
        door = Door(ctx)
        door.patch("operator-test", {"weight_version": "v1"})
        info = door.server_info()
    info.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(info))  # json writes a lone surrogate as its \udcXX escape
    return path


def yaml_file(tmp_path: Path, name: str, **values: Any) -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, *PKG] if "--" not in argv else [*argv[:argv.index("--")], *PKG, *argv[argv.index("--"):]])
    said = capsys.readouterr()
    return code, said.out, said.err


class _Counting(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the server's `answer` and counts each request it gets."""

    def do_GET(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def _answer(self) -> None:
        server: Any = self.server
        server.requests.append(f"{self.command} {self.path}")
        body = json.dumps(server.answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def counting() -> Iterator[Any]:
    server: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    server.requests, server.answer = [], {}
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- finding 1: --source ---------------------------------------------------------------------
@pytest.mark.parametrize("apply", [False, True], ids=["plan", "apply"])
def test_an_undecodable_source_is_refused_naming_the_flag_before_any_request(
        apply: bool, tmp_path: Path, counting: Any, capsys: pytest.CaptureFixture[str]) -> None:
    old = saved_readback(tmp_path)
    new = yaml_file(tmp_path, "new.yaml", tp_size=2, weight_version="v2")
    extra = ("--apply", counting.url, "--admin-key", ADMIN_KEY) if apply else ()
    code, out, err = run(capsys, str(old), str(new), "--source", UNDECODABLE, *extra, *SERVER_FLAGS)
    assert code == EXIT_USAGE, out + err
    assert "--source" in err and "UTF-8" in err
    assert "body:" not in out  # no body no door could take is shown as the plan
    assert counting.requests == []


def test_a_source_the_door_refuses_is_refused_here_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = saved_readback(tmp_path)
    new = yaml_file(tmp_path, "new.yaml", tp_size=2, weight_version="v2")
    for source, why in (("a\nb", "printable"), ("x" * 300, "at most"), (" ", "non-empty")):
        code, _, err = run(capsys, str(old), str(new), "--source", source, *SERVER_FLAGS)
        assert code == EXIT_USAGE and "--source" in err and why in err, err


def test_a_body_no_door_takes_is_never_sent_from_python(counting: Any) -> None:
    from configbags.fleet.rollout import apply

    for body in ({"source": UNDECODABLE, "leaves": {"weight_version": "v2"}},
                 {"source": "rollout", "leaves": {"weight_version": "\udc80"}}):
        with pytest.raises(ConfigError, match="PATCH /config not sent"):
            apply(counting.url, body, ADMIN_KEY)
    assert counting.requests == []


@pytest.mark.slow
def test_a_plain_source_still_applies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = Server("--api-key", API_KEY, "--admin-api-key", ADMIN_KEY)
    try:
        new = yaml_file(tmp_path, "new.yaml", weight_version="v2", api_key=API_KEY)
        code, out, err = run(capsys, server.url, str(new), "--api-key", API_KEY, "--apply", server.url,
                             "--admin-key", ADMIN_KEY, "--source", "ci-job 7 (ünïcode ok)", *SERVER_FLAGS)
        assert code == EXIT_OK, out + err
        assert f"applied to {server.url}: epoch 2, 1 leaf/leaves changed" in out
        info = httpx.get(f"{server.url}/server_info", headers={"Authorization": f"Bearer {API_KEY}"},
                         timeout=30).json()
        assert [e["source"] for e in info["overrides"]] == ["http:ci-job 7 (ünïcode ok)"]
        assert info["resolved"]["weight_version"] == "v2"
    finally:
        server.stop()


# -- finding 2: a readback's shape and values -------------------------------------------------
BAD_SHAPES = {
    "overrides-str": ({"overrides": "nope"}, "overrides"),
    "overrides-empty-entry": ({"overrides": [{}]}, "overrides[0]"),
    "overrides-int": ({"overrides": [1]}, "overrides[0]"),
    "overrides-list-leaf": ({"overrides": [{"leaf": ["x"], "new": 1}]}, "overrides[0]"),
    "record-str": ({"record": "x"}, "record"),
    "record-list": ({"record": [1]}, "record"),
    "resolved-capacity-str": ({"resolved_put": {"max_speculative_num_draft_tokens": "x"}},
                              "resolved.max_speculative_num_draft_tokens"),
    "override-out-of-range": ({"overrides": [{"leaf": "speculative_accept_threshold_acc", "new": 5.0}]},
                              "overrides[0].new"),
}


@pytest.mark.parametrize("case", sorted(BAD_SHAPES))
def test_a_malformed_old_readback_is_refused_naming_the_file_and_path(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changes, path = BAD_SHAPES[case]
    if "resolved_put" in changes:
        resolved = json.loads(saved_readback(tmp_path).read_text())["resolved"]
        changes = {"resolved": {**resolved, **changes["resolved_put"]}}
    old = saved_readback(tmp_path, "old.json", **changes)
    new = yaml_file(tmp_path, "new.yaml", tp_size=2, weight_version="v2", speculative_num_draft_tokens=3)
    code, out, err = run(capsys, str(old), str(new), *SERVER_FLAGS)
    assert code == EXIT_USAGE, out + err
    assert f"configbags rollout: {old}" in err and path in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("value", "why"), [(5.0, "above the maximum 1.0"), (True, "is not of type")])
def test_a_new_readback_value_out_of_range_is_refused_not_planned_live(
        value: Any, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = saved_readback(tmp_path, "base.json")
    info = json.loads(base.read_text())
    info["record"]["speculative_accept_threshold_acc"] = value
    new = tmp_path / "new.json"
    new.write_text(json.dumps(info))
    code, out, err = run(capsys, str(base), str(new))
    assert code == EXIT_USAGE, out
    assert f"{new}" in err and "record.speculative_accept_threshold_acc" in err and why in err, err
    assert "live" not in out


def test_a_new_readback_with_a_lone_surrogate_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = saved_readback(tmp_path, "base.json")
    info = json.loads(base.read_text())
    info["record"]["weight_version"] = "\udc80"
    info["overrides"] = []
    new = tmp_path / "new.json"
    new.write_text(json.dumps(info))
    code, out, err = run(capsys, str(base), str(new))
    assert code == EXIT_USAGE, out
    assert "record.weight_version" in err and "lone surrogate" in err and "UTF-8" in err
    assert "\udc80" not in err  # the message quotes it escaped, as text any log can carry
    assert out == ""


def test_a_served_readback_of_the_wrong_shape_is_refused_naming_the_url(
        tmp_path: Path, counting: Any) -> None:
    info = json.loads(saved_readback(tmp_path).read_text())
    counting.answer = {**info, "overrides": "nope"}
    context = get_context()
    with pytest.raises(ConfigError, match=r"127\.0\.0\.1.*overrides"):
        side_values(context, counting.url, [], None)


# -- the quiet twins ---------------------------------------------------------------------------
def test_a_real_readback_still_plans_with_its_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = saved_readback(tmp_path, "old.json")
    new = yaml_file(tmp_path, "new.yaml", tp_size=2, weight_version="v2", speculative_accept_threshold_acc=0.5,
                    api_key="new-secret-9c")
    code, out, err = run(capsys, str(old), str(new), "--json", *SERVER_FLAGS)
    assert code == EXIT_OK, err
    body = json.loads(out)
    changes = {c["leaf"]: (c["old"], c["new"], c["route"]) for c in body["changes"]}
    assert changes["weight_version"] == ("v1", "v2", "live")  # from the override log, not the record
    assert changes["speculative_accept_threshold_acc"] == (1.0, 0.5, "live")
    assert body["not_compared"] == ["api_key"]
    # a readback as NEW plans too: its values are the server's own
    code, out, err = run(capsys, str(new), str(old), *SERVER_FLAGS)
    assert code == EXIT_OK, err
    assert 'weight_version: "v2" -> "v1"' in out


def test_a_real_readback_with_nothing_overridden_plans_against_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = saved_readback(tmp_path, "old.json", overrides=[])
    code, out, err = run(capsys, str(old), str(old))
    assert code == EXIT_OK and out.startswith("rollout: no change"), out + err
