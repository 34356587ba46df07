"""`configbags audit report` and `record`: the declared set next to the observed one, and
the proposed audit record (its shape, its uncovered set, and that it never narrows)."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from configbags import audit
from configbags.cli import main as cli_main
from configbags.generated.role_audit import ROLE_NAMESPACE_SETS
from configbags.runtime.cliflags import shown_argv

REPO = Path(__file__).resolve().parent.parent
AUDIT_SCHEMA = {
    **json.loads((REPO / "codegen/meta/roles.schema.json").read_text())["$defs"]["audit"],
    "$defs": json.loads((REPO / "codegen/meta/roles.schema.json").read_text())["$defs"],
}


def write_events(path: Path, *events: dict[str, Any], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)
    return path


def proposal(text: str) -> dict[str, Any]:
    """The YAML block at the end of a report."""
    body = text[text.index("# Proposed audit records"):]
    loaded: dict[str, Any] = yaml.safe_load(body)
    return loaded


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    return write_events(
        tmp_path / "reads.jsonl",
        {"event": "run", "command": "python -m server --model m", "date": "2026-08-06"},
        {"event": "publish", "role": "tokenizer", "pid": 11},
        {"event": "read", "role": "tokenizer", "namespace": "serving", "pid": 11},
        {"event": "publish", "role": "detokenizer", "pid": 12},
        {"event": "read", "role": "detokenizer", "namespace": "serving", "pid": 12},
        {"event": "read", "role": "detokenizer", "namespace": "schedule", "pid": 12},
        {"event": "publish", "role": "dp_controller", "pid": 13},  # read nothing
        {"event": "publish", "role": "tokenizer", "pid": 14},  # a second tokenizer process
        {"event": "read", "role": "tokenizer", "namespace": "serving", "pid": 14},
    )


def test_report_shows_declared_next_to_observed(run_file: Path) -> None:
    text = audit.report([run_file])
    assert "tokenizer (2 processes)\n  declared:  {device, disagg, exec," in text
    assert "\n  observed:  {serving}\n" in text
    assert (
        "detokenizer (1 process)\n"
        "  declared:  {model, observability, serving}\n"
        "  observed:  {schedule, serving}\n"
        "  uncovered: {model, observability}\n"
        "  outside the declared set (enforce mode refuses): {schedule}\n"
    ) in text
    # The marker: a role that read nothing is still reported, with an empty observed set.
    assert "dp_controller (1 process)\n  declared:  {disagg, observability, parallel, schedule, serving}\n  observed:  {}\n" in text
    assert "roles that did not publish in this run (no evidence either way): launcher, operator, scheduler, test, worker" in text


def test_proposal_is_a_valid_audit_record_per_role(run_file: Path) -> None:
    roles = proposal(audit.report([run_file], workload="text chat, 100 requests"))["roles"]
    assert sorted(roles) == ["detokenizer", "dp_controller", "tokenizer"]
    for role, body in roles.items():
        assert list(body) == ["audits"]  # never a `reads:` key: nothing to narrow
        (record,) = body["audits"]
        jsonschema.validate(record, AUDIT_SCHEMA)
        assert record["date"] == "2026-08-06"  # the run's date
        assert record["workload"] == "text chat, 100 requests"
        assert record["uncovered"] == sorted(ROLE_NAMESPACE_SETS[role] - set(record["observed"]))
        assert record["decision"].startswith("keep declared set")
    assert roles["tokenizer"]["audits"][0]["observed"] == ["serving"]
    assert roles["dp_controller"]["audits"][0]["observed"] == []
    assert roles["dp_controller"]["audits"][0]["uncovered"] == sorted(ROLE_NAMESPACE_SETS["dp_controller"])
    assert "review uncovered before narrowing" in roles["tokenizer"]["audits"][0]["decision"]
    assert "{schedule} outside it" in roles["detokenizer"]["audits"][0]["decision"]


def test_decision_never_narrows() -> None:
    declared = {"r": frozenset({"a", "b"})}
    obs = [
        audit.RoleReport("r", declared["r"], frozenset(seen), 1)
        for seen in [(), ("a",), ("a", "b"), ("a", "c"), ("a", "b", "c")]
    ]
    for r in obs:
        assert r.decision.startswith("keep declared set;"), r
        assert "narrow to" not in r.decision
    assert obs[2].decision == "keep declared set; every declared namespace was observed"
    assert obs[1].decision == "keep declared set; review uncovered before narrowing"


def test_defaults_workload_to_the_command_and_date_to_today(tmp_path: Path) -> None:
    bare = write_events(tmp_path / "bare.jsonl", {"event": "publish", "role": "worker", "pid": 1})
    (record,) = proposal(audit.report([bare]))["roles"]["worker"]["audits"]
    assert record["workload"] == "unspecified workload (pass --workload to describe it)"
    assert len(record["date"]) == 10
    ran = write_events(tmp_path / "ran.jsonl",
                       {"event": "run", "command": "python serve.py", "date": "2026-01-02"},
                       {"event": "publish", "role": "worker", "pid": 1})
    (record,) = proposal(audit.report([ran]))["roles"]["worker"]["audits"]
    assert record == {**record, "workload": "record-mode run of: python serve.py", "date": "2026-01-02"}


def test_several_files_are_merged_and_a_cut_line_is_skipped(tmp_path: Path) -> None:
    a = write_events(tmp_path / "a.jsonl", {"event": "publish", "role": "worker", "pid": 1},
                     {"event": "read", "role": "worker", "namespace": "model", "pid": 1},
                     tail='{"event": "read", "role": "wor')  # killed mid-write
    b = write_events(tmp_path / "b.jsonl", {"event": "publish", "role": "worker", "pid": 2},
                     {"event": "read", "role": "worker", "namespace": "parallel", "pid": 2})
    text = audit.report([a, b])
    assert "worker (2 processes)" in text
    assert "  observed:  {model, parallel}\n" in text
    assert f"skipped {a}:3: not a JSON line" in text


def test_a_role_missing_from_the_schema_is_reported_not_proposed(tmp_path: Path) -> None:
    f = write_events(tmp_path / "x.jsonl", {"event": "publish", "role": "router", "pid": 1},
                     {"event": "publish", "role": "worker", "pid": 2})
    text = audit.report([f])
    assert "router (1 process)\n  declared:  (not in schema/roles.yaml)" in text
    assert sorted(proposal(text)["roles"]) == ["worker"]


def test_cli_report_prints_and_never_edits_roles_yaml(run_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    roles_yaml = REPO / "schema/roles.yaml"
    before = hashlib.sha256(roles_yaml.read_bytes()).hexdigest()
    assert cli_main(["audit", "report", str(run_file), "--workload", "w", "--date", "2026-09-01"]) == 0
    out = capsys.readouterr().out
    assert "- date: '2026-09-01'" in out
    assert hashlib.sha256(roles_yaml.read_bytes()).hexdigest() == before


def test_cli_report_refuses_a_bad_date_and_a_missing_file(run_file: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        audit.main(["report", str(run_file), "--date", "06/08/2026"])
    assert exc.value.code == 2
    assert "not a date in YYYY-MM-DD form" in capsys.readouterr().err
    assert audit.main(["report", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_record_runs_the_command_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "reads.jsonl"
    code = (
        "import os, sys\n"
        "assert os.environ['CONFIGBAGS_ROLE_NAMESPACES'] == 'record'\n"
        "from configbags.generated.accessors import publish, get_model\n"
        "from configbags.generated.server_args import ServerArgs\n"
        "publish(ServerArgs(model_path='m'), role='worker')\n"
        "get_model()\n"
        "sys.exit(3)\n"
    )
    status = audit.main(["record", "--out", str(out), "--", sys.executable, "-c", code])
    captured = capsys.readouterr()
    assert status == 3  # the command's own status comes back
    assert "command exited with 3" in captured.err
    assert "worker (1 process)" in captured.out
    assert "  observed:  {model}\n" in captured.out
    first = json.loads(out.read_text().splitlines()[0])
    assert first["event"] == "run"
    assert first["argv"][-1] == code and first["command"].endswith(shlex.quote(code))
    # A second record run starts the file afresh unless --append.
    audit.main(["record", "--out", str(out), "--", sys.executable, "-c", "pass"])
    assert len(out.read_text().splitlines()) == 1
    audit.main(["record", "--out", str(out), "--append", "--", sys.executable, "-c", "pass"])
    assert len(out.read_text().splitlines()) == 2


def test_cli_record_keeps_reads_of_a_command_killed_by_signal(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reads.jsonl"
    code = (
        "import os, signal\n"
        "from configbags.generated.accessors import publish, get_parallel\n"
        "from configbags.generated.server_args import ServerArgs\n"
        "publish(ServerArgs(model_path='m'), role='worker')\n"
        "get_parallel()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert audit.main(["record", "--out", str(out), "--", sys.executable, "-c", code]) == 128 + 9
    captured = capsys.readouterr()
    assert "died by SIGKILL" in captured.err
    assert "  observed:  {parallel}\n" in captured.out


def test_cli_record_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert audit.main(["record", "--"]) == 2
    assert "give the command after --" in capsys.readouterr().err


def test_a_raw_record_read_counts_as_every_namespace(tmp_path: Path) -> None:
    """A role that read get_server_args() may have touched anything: nothing is uncovered,
    and for a role without `reads: all` enforce mode would refuse it."""
    events = tmp_path / "reads.jsonl"
    events.write_text(
        "\n".join(json.dumps(e) for e in [
            {"event": "publish", "role": "tokenizer", "pid": 1},
            {"event": "read", "role": "tokenizer", "namespace": "*", "pid": 1},
            {"event": "publish", "role": "detokenizer", "pid": 2},
            {"event": "read", "role": "detokenizer", "namespace": "serving", "pid": 2},
            {"event": "read", "role": "detokenizer", "namespace": "*", "pid": 2},
        ]) + "\n"
    )
    reports = {r.role: r for r in audit.build_reports(audit.load([events]))}
    tok, detok = reports["tokenizer"], reports["detokenizer"]
    assert tok.raw and tok.uncovered == frozenset() and tok.outside == frozenset()
    assert detok.outside == frozenset({"*"}) and detok.uncovered == frozenset()
    record = detok.audit_record(date="2026-11-29", workload="w")
    assert record["observed"] == sorted(ROLE_NAMESPACE_SETS["tokenizer"]) and record["uncovered"] == []
    assert "raw record" in record["decision"]


def test_the_recorded_command_line_never_keeps_a_secret(tmp_path: Path) -> None:
    out = tmp_path / "obs.jsonl"
    assert audit.record([sys.executable, "-c", "pass", "--api-key=SEKRET-1", "--admin-api-key", "SEKRET-2"], out,
                        package="configbags.generated") == 0
    line = json.loads(out.read_text().splitlines()[0])
    assert "SEKRET" not in line["command"]
    assert "--api-key=<redacted> --admin-api-key <redacted>" in line["command"]
    # without a package that loads: flags named like a key, token, secret or password
    shown = audit.shown_command(["serve", "--hf-token", "SEKRET-3", "--db-password=SEKRET-4", "--port", "1"],
                                "no_such_package_anywhere")
    assert "SEKRET" not in shown and shown.endswith("--port 1")


@pytest.mark.parametrize("command", [
    ["env", "SGLANG_API_KEY=SEKRET-5", "python", "app.py", "--model-path", "m"],
    ["env", "MY_HF_TOKEN=SEKRET-5", "python", "app.py"],
    ["sh", "-c", "python app.py --model-path m --api-key SEKRET-5"],
    ["sh", "-c", "SGLANG_ADMIN_API_KEY=SEKRET-5 python app.py --admin-api-key=SEKRET-5 --port 1"],
    ["bash", "-lc", "python app.py --api-key 'SEKRET-5"],  # not shell words: no telling where the key ends
    ["python", "app.py", "--model-path", "m", "--api_key", "SEKRET-5"],  # mistyped: the server refuses it
    ["true", "--api-k", "SEKRET-5"], ["true", "--admin-api", "SEKRET-5"], ["true", "--ap", "SEKRET-5"],  # cut short
    ["true", "--api-key=", "SEKRET-5"],  # an empty `=`, then the key
    ["true", "--api-key SEKRET-5"], ["true", "--api-key\tSEKRET-5"],  # flag and key one word
    ["true", "\u2014api-key", "SEKRET-5"],  # a dash a word processor made
    # every spelling of an env option: docker, podman, `kubectl run`, gcloud's list of them
    ["docker", "run", "--env=SGLANG_API_KEY=SEKRET-5", "img"],
    ["docker", "run", "--env-file", "/dev/null", "-e=SGLANG_API_KEY=SEKRET-5", "img"],
    ["podman", "run", "--env=SGLANG_ADMIN_API_KEY=SEKRET-5", "img"],
    ["kubectl", "run", "x", "--image=i", "--env=SGLANG_API_KEY=SEKRET-5"],
    ["docker", "run", "-eSGLANG_ADMIN_API_KEY=SEKRET-5", "img"],
    ["gcloud", "run", "deploy", "--set-env-vars=A=1,SGLANG_API_KEY=SEKRET-5"],
    ["sh", "-c", "docker run --env=SGLANG_API_KEY=SEKRET-5 img"],
])
def test_a_secret_in_the_usual_shapes_of_a_launch_command_is_never_recorded(command: list[str]) -> None:
    """The observation file is shared with reviewers: a key given through `env VAR=`,
    inside `sh -c "..."`, or after a mistyped flag is redacted like `--api-key K`."""
    shown = audit.shown_command(command, "configbags.generated")
    assert "SEKRET" not in shown
    assert shown.split()[0] == command[0]


def test_shown_commands_keep_what_is_no_secret() -> None:
    command = ["env", "CUDA_VISIBLE_DEVICES=0", "sh", "-c", "python app.py --tp-size 2 --port 30000"]
    assert audit.shown_command(command, "configbags.generated") == shlex.join(command)
    command = ["docker", "run", "--env=CUDA_VISIBLE_DEVICES=0", "-e=SGLANG_TP_SIZE=2", "--env=A=1,B=2", "img"]
    assert audit.shown_command(command, "configbags.generated") == " ".join(command)


@pytest.mark.parametrize(("script", "shown"), [
    ("X=1 SGLANG_API_KEY=SEKQ1 true --tp-size 2", "X=1 SGLANG_API_KEY=<redacted> true --tp-size 2"),
    ("export SGLANG_API_KEY=SEKQ3; true", "export SGLANG_API_KEY=<redacted>; true"),
    ("true --api-key=SEKQ4 && echo hi", "true --api-key=<redacted> && echo hi"),
    ("true --api-key SEKQ5|cat", "true --api-key <redacted>|cat"),
    ("true --api-key 'SEKQ 6' --tp-size 2", "true --api-key <redacted> --tp-size 2"),
    ('true --api-key "$(cat /run/k)" ; echo "a  b"', 'true --api-key <redacted> ; echo "a  b"'),
    ("true --api-key $(printf '%s' SEKQ7) --port 1", "true --api-key <redacted> --port 1"),
    ("echo 'a;b' && true --tp-size 2", "echo 'a;b' && true --tp-size 2"),  # nothing secret: as written
])
def test_a_shell_script_is_recorded_as_one_word_as_written_but_its_keys(
        tmp_path: Path, script: str, shown: str) -> None:
    """`sh -c SCRIPT` is recorded as the command that ran: the script one word (its `;`,
    `&&`, `|`, quotes and spacing kept), only the words holding a key replaced."""
    out = tmp_path / "obs.jsonl"
    assert audit.record(["sh", "-c", script], out, package="configbags.generated") == 0
    line = json.loads(out.read_text().splitlines()[0])
    assert line["argv"] == ["sh", "-c", shown]
    assert line["command"] == shlex.join(["sh", "-c", shown]) and shlex.split(line["command"])[2] == shown
    assert "SEKQ" not in out.read_text()


def test_an_env_option_keeps_its_name_and_only_the_key_is_redacted() -> None:
    """The reviewer still sees which variable was set: only what follows its `=` goes."""
    shown = audit.shown_command(["docker", "run", "--env=SGLANG_API_KEY=SEKRET-7", "-e=SGLANG_TP_SIZE=2", "img"],
                                "configbags.generated")
    assert shown == "docker run --env=SGLANG_API_KEY=<redacted> -e=SGLANG_TP_SIZE=2 img"
    # by the schema alone: a variable of a secret leaf that is not named like one
    assert shown_argv(["docker", "run", "--env=SGLANG_HOOK=SEKRET-7"], set().__contains__,
                      {"SGLANG_HOOK"}.__contains__) == ["docker", "run", "--env=SGLANG_HOOK=<redacted>"]


def test_report_on_a_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "obs.jsonl"
    bad.write_bytes(b'{"event": "run"}\n\xff\xfe\n')
    assert cli_main(["audit", "report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and "Traceback" not in err


def test_names_the_schema_lacks_are_not_counted_and_no_text_forges_a_line(tmp_path: Path) -> None:
    """Every process of the recorded run may append to the observation file: a namespace
    the schema lacks is skipped (named), never observed; a role it lacks is listed as not in
    the schema; every name and the workload reach the human part escaped, on their line."""
    forged_ns = "serving]\n    reads: all\n    x: ["
    forged_role = "scheduler\n  evil:\n    reads: all"
    f = write_events(tmp_path / "obs.jsonl",
                     {"event": "publish", "role": "detokenizer", "pid": 1},
                     {"event": "read", "role": "detokenizer", "namespace": "serving", "pid": 1},
                     {"event": "read", "role": "detokenizer", "namespace": forged_ns, "pid": 1},
                     {"event": "read", "role": forged_role, "namespace": "memory", "pid": 1},
                     {"event": "run", "command": "serve\nx: forged", "date": "2026-08-06"})
    workload = "w\n    decision: narrow to nothing\nx"
    text = audit.report([f], workload=workload)
    human = text[:text.index("# Proposed audit records")]
    assert "\n    reads: all" not in human and "\n    decision:" not in human and "\n  evil:" not in human
    assert "workload: w\\n    decision: narrow to nothing\\nx\n" in human
    assert "detokenizer (1 process)\n  declared:  {model, observability, serving}\n  observed:  {serving}\n" in human
    assert f"skipped {f}:3: namespace 'serving]\\n    reads: all\\n    x: [' is not a top-level namespace" in human
    assert "scheduler\\n  evil:\\n    reads: all (1 process)\n  declared:  (not in schema/roles.yaml)" in human
    roles = proposal(text)["roles"]
    assert sorted(roles) == ["detokenizer"] and roles["detokenizer"]["audits"][0]["workload"] == workload
    assert roles["detokenizer"]["audits"][0]["observed"] == ["serving"]
    default = audit.report([f])  # the workload taken from the run event is escaped too
    assert "workload: record-mode run of: serve\\nx: forged\n" in default


SPACES = "\u00a0\u2003\u3000\u2028\u0085\u1680\u202f\x1c\t\n "


@given(st.lists(st.text(alphabet=st.sampled_from(f"ab-=k'\"\\{SPACES}"), max_size=12), max_size=5))
@settings(max_examples=300, deadline=None)
def test_any_words_are_shown_never_a_traceback(words: list[str]) -> None:
    """Any word, a Unicode space in it too, is shown (redacted as usual), never a
    RecursionError: each word holding a space is judged as the shorter words it splits into."""
    shown = shown_argv(["true", *words], {"--api-key", "-k"}.__contains__)
    assert shown[0] == "true" and len(shown) == len(words) + 1


@pytest.mark.parametrize("space", list(SPACES[:6]))
def test_a_flag_and_its_key_joined_by_a_unicode_space_are_redacted(space: str) -> None:
    shown = audit.shown_command(["true", f"x{space}y", f"--api-key{space}SEKRET-6", f"--model-path{space}m"],
                                "configbags.generated")
    assert "SEKRET" not in shown and shown.startswith(f"true 'x{space}y' ")  # one word, quoted as one


def test_audit_record_runs_a_command_with_a_unicode_space(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "marker"
    out = tmp_path / "o.jsonl"
    assert audit.main(["record", "--out", str(out), "--", sys.executable, "-c",
                       "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()", str(marker), "x\u00a0y"]) == 0
    assert marker.exists() and "x\u00a0y" in json.loads(out.read_text().splitlines()[0])["command"]


def test_a_short_alias_with_its_value_attached_is_redacted() -> None:
    secret = {"--api-key", "--token", "-k"}.__contains__
    assert shown_argv(["true", "-kSEKE", "-k=SEKE", "-k", "SEKE", "-vx", "-p1"], secret) == [
        "true", "-k<redacted>", "-k=<redacted>", "-k", "<redacted>", "-vx", "-p1"]


def test_record_outside_a_project_reads_the_package_named_and_keeps_the_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above: only --package names the package
    out = tmp_path / "o.jsonl"
    code = "import sys; sys.exit(7)"
    assert audit.main(["record", "--package", "configbags.generated", "--out", str(out), "--",
                       sys.executable, "-c", code]) == 7
    captured = capsys.readouterr()
    assert "no role published" in captured.out and "--package configbags.generated" in captured.out
    assert "no generated config package" not in captured.err
    # without one the command still ran and its status stands; the summary says why it is missing
    assert audit.main(["record", "--out", str(out), "--", sys.executable, "-c", code]) == 7
    assert "cannot summarise the reads" in capsys.readouterr().err
