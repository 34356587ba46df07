"""`configbags rollout` against hostile input (round 21): a saved or served readback that
lacks a leaf, names a leaf the schema does not have, or logs an override no door takes (a
startup leaf) is refused naming the file or URL and the JSON path, exit 2, never planned
as live with `null`; a `--dump-config` that is a file the command reads (OLD, NEW, a
`--config`, a saved readback) is refused before either side is built, so nothing is
overwritten; a PATCH answer that is no configbags answer (`200 [1]`, a 500) is never
called applied nor "nothing was applied", and the server's text is printed escaped. The
quiet twins: a real readback (a load_time override logged before seal included) still
plans, a dump of its own path is still written, and a door's refusal still says nothing
was applied."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_rollout_hostile20 import SERVER_FLAGS, run, saved_readback, yaml_file

from configbags.fleet.rollout import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, side_values
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError
from configbags.runtime.testing import published
from configbags.serve.door import Door

LIVE_LEAF = "speculative_accept_threshold_acc"


class _Fixed(http.server.BaseHTTPRequestHandler):
    """Answers every GET and PATCH with the server's `status` and raw `body` bytes."""

    def do_GET(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer()

    def _answer(self) -> None:
        server: Any = self.server
        server.requests.append(f"{self.command} {self.path}")
        self.send_response(server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(server.body)))
        self.end_headers()
        self.wfile.write(server.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fixed() -> Iterator[Any]:
    server: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fixed)
    server.requests, server.status, server.body = [], 200, b"{}"
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def edited_readback(tmp_path: Path, name: str, edit: Any) -> Path:
    """A door's real readback (no override logged) with `edit(info)` applied."""
    info = json.loads(saved_readback(tmp_path, f"real-{name}", overrides=[]).read_text())
    edit(info)
    path = tmp_path / name
    path.write_text(json.dumps(info))
    return path


# -- finding 1: a readback lacking a leaf, or naming one no door takes ----------------------
def _drop(*sections: str, leaf: str = LIVE_LEAF) -> Any:
    return lambda info: [info[s].pop(leaf) for s in sections]


BAD_READBACKS = {
    "missing-live-leaf": (_drop("record", "resolved"), f"record.{LIVE_LEAF} (missing)"),
    "missing-in-record-only": (_drop("record"), f"record.{LIVE_LEAF} (missing)"),
    "missing-in-resolved-only": (_drop("resolved"), f"resolved.{LIVE_LEAF} (missing)"),
    "missing-text-leaf": (_drop("record", "resolved", leaf="weight_version"), "record.weight_version (missing)"),
    "record-empty": (lambda info: info.update(record={}), "(missing)"),
    "record-unknown-leaf": (lambda info: info["record"].update(no_such_leaf=1), "record.no_such_leaf"),
    "override-unknown-leaf": (lambda info: info.update(overrides=[{"leaf": "nope", "new": 5.0}]),
                              "overrides[0].leaf"),
    "override-startup-leaf": (lambda info: info.update(overrides=[{"leaf": "tp_size", "new": 4}]),
                              "overrides[0].leaf"),
}


@pytest.mark.parametrize("side", ["NEW", "OLD"])
@pytest.mark.parametrize("case", sorted(BAD_READBACKS))
def test_a_readback_lacking_or_adding_a_leaf_is_refused_naming_the_file_and_path(
        case: str, side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit, path = BAD_READBACKS[case]
    bad = edited_readback(tmp_path, "bad.json", edit)
    base = yaml_file(tmp_path, "base.yaml", model_path="/models/m", tp_size=2)
    old, new = (base, bad) if side == "NEW" else (bad, base)
    code, out, err = run(capsys, str(old), str(new), *SERVER_FLAGS)
    assert code == EXIT_USAGE, out + err
    assert f"configbags rollout: {bad}" in err and path in err, err
    assert out == ""  # nothing planned, no body with a null in it
    assert "Traceback" not in err


def test_the_refusals_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = yaml_file(tmp_path, "base.yaml", model_path="/models/m", tp_size=2)
    for case, said in (("override-startup-leaf", "startup"), ("override-unknown-leaf", "not a leaf"),
                       ("record-unknown-leaf", "not a leaf")):
        bad = edited_readback(tmp_path, f"{case}.json", BAD_READBACKS[case][0])
        code, _, err = run(capsys, str(base), str(bad), *SERVER_FLAGS)
        assert code == EXIT_USAGE and said in err and "GET /server_info" in err, err


def test_a_served_readback_lacking_a_leaf_is_refused_naming_the_url(tmp_path: Path, fixed: Any) -> None:
    info = json.loads(saved_readback(tmp_path).read_text())
    del info["record"][LIVE_LEAF], info["resolved"][LIVE_LEAF]
    fixed.body = json.dumps(info).encode()
    with pytest.raises(ConfigError, match=rf"127\.0\.0\.1.*record\.{LIVE_LEAF} \(missing\)"):
        side_values(get_context(), fixed.url, [], None)


def test_a_redirect_is_not_called_a_key_problem(fixed: Any) -> None:
    fixed.status, fixed.body = 302, b""
    with pytest.raises(ConfigError, match="answered 302") as refused:
        side_values(get_context(), fixed.url, [], None)
    assert "--api-key" not in str(refused.value) and "redirect" in str(refused.value)
    fixed.status, fixed.body = 401, json.dumps({"error": "missing_key", "message": "this request needs\nx"}).encode()
    with pytest.raises(ConfigError, match="--api-key") as refused:  # a 401 is about the key
        side_values(get_context(), fixed.url, [], None)
    assert "\n" not in str(refused.value)


def test_a_readback_with_a_load_time_override_logged_before_seal_still_plans(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The context takes a load_time override until seal (the model loader's), so a real
    log can hold one: only a startup leaf is one no override ever reaches."""
    record = ServerArgs.from_cli(["--model-path", "/models/m", "--tp-size", "2"])
    with published(record, role="worker") as ctx:
        ctx.override("model-loader", kv_cache_dtype="fp8_e4m3")
        info = Door(ctx).server_info()
    readback = tmp_path / "worker.json"
    readback.write_text(json.dumps(info))
    base = yaml_file(tmp_path, "base.yaml", model_path="/models/m", tp_size=2)
    code, out, err = run(capsys, str(base), str(readback), *SERVER_FLAGS)
    assert code == EXIT_OK, err
    assert 'kv_cache_dtype: "auto" -> "fp8_e4m3"' in out


# -- finding 7: --dump-config over a file the command reads ---------------------------------
def _files(tmp_path: Path) -> dict[str, Path]:
    return {"base": yaml_file(tmp_path, "base.yaml", model_path="/models/m", tp_size=2, port=31002),
            "new": yaml_file(tmp_path, "new.yaml", weight_version="v2", model_path="/models/m", tp_size=2,
                             speculative_accept_threshold_acc=0.5),
            "extra": yaml_file(tmp_path, "extra.yaml", weight_version="v3"),
            "rb": saved_readback(tmp_path, "rb.json")}


def _contents(files: dict[str, Path]) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in files.items()}


DUMP_CASES = {
    # (OLD, NEW, the dump path, extra server flags, the file named in the refusal)
    "dump-is-new": ("base", "new", "new", (), "NEW"),
    "dump-is-old": ("base", "new", "base", (), "OLD"),
    "dump-is-a-config": ("base", "new", "extra", ("--config", "extra"), "--config"),
    "dump-is-old-readback": ("rb", "new", "rb", (), "OLD"),
    "dump-is-new-readback": ("new", "rb", "rb", (), "NEW"),
}


@pytest.mark.parametrize("spelling", ["apart", "equals", "symlink", "hardlink"])
@pytest.mark.parametrize("case", sorted(DUMP_CASES))
def test_a_dump_over_a_file_the_rollout_reads_is_refused_before_anything_is_written(
        case: str, spelling: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new, dump, extra, named = DUMP_CASES[case]
    files = _files(tmp_path)
    before = _contents(files)
    target = str(files[dump])
    if spelling in ("symlink", "hardlink"):
        link = tmp_path / f"link-{spelling}"
        (os.symlink if spelling == "symlink" else os.link)(files[dump], link)
        target = str(link)
    flags = [str(files[w]) if w in files else w for w in extra]
    dump_flag = [f"--dump-config={target}"] if spelling == "equals" else ["--dump-config", target]
    code, out, err = run(capsys, str(files[old]), str(files[new]), *SERVER_FLAGS, *flags, *dump_flag)
    assert code == EXIT_USAGE, out + err
    assert "--dump-config" in err and named in err and "give the dump a path of its own" in err, err
    assert _contents(files) == before  # nothing overwritten, not even on the way to the refusal
    assert out == ""


def test_a_dump_of_its_own_path_is_still_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    before = _contents(files)
    dump = tmp_path / "dumped.yaml"
    code, out, err = run(capsys, str(files["base"]), str(files["new"]), *SERVER_FLAGS, "--dump-config", str(dump))
    assert code == EXIT_OK, err
    assert "weight_version" in out and dump.read_text().startswith("# Resolved config")
    assert _contents(files) == before


# -- finding 10: a PATCH answer that is no configbags answer ----------------------------------
def _apply(capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str) -> tuple[int, str, str]:
    files = _files(tmp_path)
    return run(capsys, str(files["base"]), str(files["new"]), "--apply", url, "--admin-key", "ak-test-1",
               "--timeout", "5", *SERVER_FLAGS)


@pytest.mark.parametrize("body", [b"[1]", b"[]", b'"applied"', b"3", b"null", b'{"epoch": 3}',
                                  b'{"epoch": "3", "entries": []}', b'{"epoch": 3, "entries": {}}'])
def test_a_200_that_is_no_patch_answer_is_never_called_applied(
        body: bytes, tmp_path: Path, fixed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fixed.body = body
    code, out, err = _apply(capsys, tmp_path, fixed.url)
    assert code == EXIT_REFUSED, out + err
    assert "applied to" not in out and "may or may not have applied" in out, out
    assert fixed.requests == ["PATCH /config"]


HOSTILE = {"error": "x\u001b[31mFAKE\nline", "message": "m\nFORGED\u2028too", "fix": "f\rOVER"}


@pytest.mark.parametrize(("status", "body"), [
    (500, HOSTILE), (500, {"error": "bad_value", "message": "m", "fix": "f"}), (502, b"<html>bad gateway</html>"),
    (404, {"detail": "Not Found"}), (400, [1]), (418, b""),
])
def test_an_answer_that_is_no_door_refusal_is_not_said_to_have_applied_nothing(
        status: int, body: Any, tmp_path: Path, fixed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fixed.status, fixed.body = status, body if isinstance(body, bytes) else json.dumps(body).encode()
    code, out, err = _apply(capsys, tmp_path, fixed.url)
    assert code == EXIT_REFUSED, out + err
    assert "nothing was applied" not in out and "may or may not have applied" in out, out
    assert str(status) in out
    assert "\x1b" not in out and "\r" not in out and "\u2028" not in out
    assert not any(line.startswith(("line", "FORGED", "OVER")) for line in out.splitlines()), out


def test_a_door_refusal_says_nothing_was_applied_and_shows_its_text_escaped(
        tmp_path: Path, fixed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fixed.status = 403
    fixed.body = json.dumps({"error": "policy", "message": "override refused\n\u001b[31mFORGED",
                             "fix": "set it at start", "leaf": "tp_size"}).encode()
    code, out, err = _apply(capsys, tmp_path, fixed.url)
    assert code == EXIT_REFUSED, out + err
    assert "refused (403 policy)" in out and "nothing was applied" in out and "Fix: set it at start" in out
    assert "\x1b" not in out and "\\x1b[31mFORGED" in out
    assert not any(line.startswith("FORGED") for line in out.splitlines())


def test_a_real_patch_answer_is_still_applied(tmp_path: Path, fixed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    entries = [{"epoch": 4, "source": "http:rollout", "leaf": leaf, "namespace": namespace, "old": None, "new": new,
                "wall_time": 1.0} for leaf, namespace, new in (("weight_version", "serving", "v2"), (LIVE_LEAF, "spec", 0.5))]
    fixed.body = json.dumps({"epoch": 4, "entries": entries}).encode()
    code, out, err = _apply(capsys, tmp_path, fixed.url)
    assert code == EXIT_OK, out + err
    assert f"applied to {fixed.url}: epoch 4, 2 leaf/leaves changed" in out


def test_a_connection_cut_after_the_patch_is_not_said_to_have_applied_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def cut() -> None:  # read the request, then close without an answer
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)

        thread = threading.Thread(target=cut, daemon=True)
        thread.start()
        code, out, err = _apply(capsys, tmp_path, f"http://127.0.0.1:{listener.getsockname()[1]}")
        thread.join(timeout=10)
    assert code == EXIT_REFUSED, out + err
    assert "nothing was applied" not in out and "may or may not have applied" in out, out


def test_a_server_not_reached_applied_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    code, out, err = _apply(capsys, tmp_path, f"http://127.0.0.1:{port}")  # nothing listens there now
    assert code == EXIT_REFUSED, out + err
    assert "ConnectError" in out and "nothing was applied" in out, out
