"""Role modes: validation at import, what each mode installs into the accessor view, the
enforce-mode messages, and record mode's marker and immediate appends.

The mode is read once, when `configbags.runtime.roles` is imported, and the process context (created
when `configbags.generated.accessors` is imported) keeps it; so every mode is exercised in a fresh
interpreter with CONFIGBAGS_ROLE_NAMESPACES set, exactly as an engine process would start,
rather than by patching the already-imported modules of this test process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from configbags.runtime import roles
from configbags.runtime.errors import RoleError

REPO = Path(__file__).resolve().parent.parent
TOP_LEVEL = sorted(
    ["device", "disagg", "exec", "lora", "memory", "mm", "model", "observability",
     "parallel", "schedule", "serving", "spec"]
)

# Prints, as JSON, which view slots hold a bag (read without going through the view's
# unfilled-name properties, so the probe itself records nothing).
FILLED = """
def filled():
    from configbags.generated.accessors import get_context
    view = get_context().view
    return sorted(ns for ns in get_context().registry.top_level if hasattr(view, ns))
"""


def run_python(
    code: str, *, mode: str | None, out: Path | None = None, probe: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGBAGS_")}
    if mode is not None:
        env[roles.MODE_VAR] = mode
    if out is not None:
        env[roles.OUT_VAR] = str(out)
    return subprocess.run(
        [sys.executable, "-c", (FILLED if probe else "") + textwrap.dedent(code)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False,
    )


def last_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- validation -------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "off"), ("", "off"), ("off", "off"), ("record", "record"),
     ("enforce", "enforce"), (" Enforce\n", "enforce")],
)
def test_mode_from_env_accepts_the_three_modes(value: str | None, mode: str) -> None:
    env = {} if value is None else {roles.MODE_VAR: value}
    assert roles.mode_from_env(env) == mode


@pytest.mark.parametrize("typo", ["recrod", "on", "true", "enforced", "1"])
def test_a_typo_is_an_error_naming_the_variable_and_the_modes(typo: str) -> None:
    with pytest.raises(RoleError) as err:
        roles.mode_from_env({roles.MODE_VAR: typo})
    message = str(err.value)
    assert f"CONFIGBAGS_ROLE_NAMESPACES={typo!r}" in message
    assert "off, record, enforce" in message


@pytest.mark.parametrize("module", ["configbags.runtime.roles", "configbags.generated.accessors"])
def test_a_typo_fails_the_import(module: str) -> None:
    proc = run_python(f"import {module}", mode="recrod")
    assert proc.returncode != 0
    assert "RoleError: CONFIGBAGS_ROLE_NAMESPACES='recrod' is not a role mode" in proc.stderr
    assert "off, record, enforce" in proc.stderr


# -- off ----------------------------------------------------------------------------------

def test_off_installs_every_namespace_and_records_nothing(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_schedule
        from configbags.generated.server_args import ServerArgs
        publish(ServerArgs(model_path="m"), role="detokenizer")
        before = filled()
        get_schedule().schedule_policy  # outside the detokenizer's set: off does not care
        print(json.dumps(before))
        """, mode="off", out=out, probe=True)
    assert last_json(proc) == TOP_LEVEL
    assert not out.exists()


def test_off_view_class_has_no_per_read_hook() -> None:
    """The view's class defines nothing but slots, so CPython specializes the slot load (an
    accessor read costs what a plain slot read costs)."""
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_context
        from configbags.generated.server_args import ServerArgs
        from types import MemberDescriptorType
        view = get_context().view
        publish(ServerArgs(model_path="m"), role="detokenizer")
        hooks = sorted(k for c in type(view).__mro__[:-1] for k, v in vars(c).items()
                       if not k.startswith("__") and not isinstance(v, MemberDescriptorType))
        print(json.dumps([hooks, hasattr(type(view), "__getattr__"), type(view).__name__]))
        """, mode="off")
    hooks, has_getattr, name = last_json(proc)
    assert hooks == []  # nothing but plain slots: CPython specializes the load
    assert has_getattr is False
    assert name == "ProcessConfigView"


# -- enforce ------------------------------------------------------------------------------

ENFORCE_PROBE = """
    import json
    from configbags.generated.accessors import publish, get_serving, get_schedule
    from configbags.generated.server_args import ServerArgs
    publish(ServerArgs(model_path="m"), role="detokenizer")
    installed = filled()
    get_serving().port  # allowed
    try:
        get_schedule()
    except Exception as exc:
        print(json.dumps([installed, type(exc).__name__, str(exc)]))
    """


def test_enforce_installs_only_the_declared_set_and_refuses_the_rest() -> None:
    installed, kind, message = last_json(run_python(ENFORCE_PROBE, mode="enforce", probe=True))
    assert installed == ["model", "observability", "serving"]
    assert kind == "RoleError"
    # The documented message: role, namespace, declared set, and what to do.
    assert message == (
        "get_schedule(): role 'detokenizer' may not read namespace 'schedule'; its declared "
        "set is {model, observability, serving}. Pass the value in from a role that owns it, "
        "or add 'schedule' to the role's `reads` in schema/roles.yaml (with an audit record) "
        "and run make gen"
    )


def test_enforce_refuses_an_unknown_role_at_publish() -> None:
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish
        from configbags.generated.server_args import ServerArgs
        try:
            publish(ServerArgs(model_path="m"), role="tokeniser")
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]))
        """, mode="enforce")
    kind, message = last_json(proc)
    assert kind == "RoleError"
    assert "unknown role (did you mean 'tokenizer'?)" in message
    assert "schema/roles.yaml" in message


def test_enforce_keeps_scoping_across_overrides_and_scopes() -> None:
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_context, get_serving
        from configbags.generated.server_args import ServerArgs
        ctx = publish(ServerArgs(model_path="m"), role="detokenizer")
        with ctx.scoped(port=31000):
            inside = (get_serving().port, filled())
        print(json.dumps([inside, get_serving().port, filled()]))
        """, mode="enforce", probe=True)
    (port_in, filled_in), port_out, filled_out = last_json(proc)
    assert port_in == 31000
    assert port_out != 31000
    assert filled_in == filled_out == ["model", "observability", "serving"]


# -- record -------------------------------------------------------------------------------

def test_record_writes_the_marker_and_each_first_read_at_once(tmp_path: Path) -> None:
    """Lines are on disk right after publish and right after each first read; a process
    killed by SIGKILL (no flush, no atexit) leaves them all behind."""
    out = tmp_path / "reads.jsonl"
    proc = run_python(f"""
        import os, signal, sys
        from pathlib import Path
        from configbags.generated.accessors import publish, get_parallel, get_serving
        from configbags.generated.server_args import ServerArgs
        out = Path({str(out)!r})
        def lines():
            return len(out.read_text().splitlines())
        publish(ServerArgs(model_path="m"), role="worker")
        print("after publish", lines(), filled())
        get_parallel().tp_size
        print("after first read", lines(), filled())
        get_parallel().tp_size
        get_parallel().pp_size
        print("after more reads", lines(), filled())
        get_serving()
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """, mode="record", out=out, probe=True)
    assert proc.returncode == -9
    assert proc.stdout.splitlines() == [
        "after publish 1 []",
        "after first read 2 ['parallel']",
        "after more reads 2 ['parallel']",
    ]
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["event"], e["role"], e.get("namespace")) for e in events] == [
        ("publish", "worker", None),
        ("read", "worker", "parallel"),
        ("read", "worker", "serving"),
    ]


def test_record_marks_a_role_that_reads_nothing(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    proc = run_python("""
        from configbags.generated.accessors import publish
        from configbags.generated.server_args import ServerArgs
        publish(ServerArgs(model_path="m"), role="dp_controller")
        """, mode="record", out=out)
    assert proc.returncode == 0, proc.stderr
    (event,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert event["event"] == "publish"
    assert event["role"] == "dp_controller"
    assert isinstance(event["pid"], int)


def test_record_starts_afresh_for_a_new_role_and_survives_overrides(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    proc = run_python("""
        from configbags.generated.accessors import publish, get_context, get_parallel, get_schedule
        from configbags.generated.server_args import ServerArgs
        publish(ServerArgs(model_path="m"), role="launcher")
        get_parallel(), get_schedule()
        with get_context().scoped(schedule_policy="lpm"):
            assert get_schedule().schedule_policy == "lpm"
            print(filled())
        publish(ServerArgs(model_path="m"), role="scheduler")
        print(filled())
        get_schedule()
        """, mode="record", out=out, probe=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['parallel', 'schedule']", "[]"]
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["event"], e["role"], e.get("namespace")) for e in events] == [
        ("publish", "launcher", None),
        ("read", "launcher", "parallel"),
        ("read", "launcher", "schedule"),
        ("publish", "scheduler", None),
        ("read", "scheduler", "schedule"),
    ]


@pytest.mark.parametrize("mode", ["off", "record", "enforce"])
def test_unpublished_again_after_a_restoring_scope(mode: str, tmp_path: Path) -> None:
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_context, get_parallel, get_server_args
        from configbags.generated.server_args import ServerArgs
        errors = []
        with get_context().restoring():
            publish(ServerArgs(model_path="m"), role="worker")
            get_parallel().tp_size
        for accessor in (get_parallel, get_server_args):
            try:
                accessor()
            except Exception as exc:
                errors.append(type(exc).__name__)
        publish(ServerArgs(model_path="m"), role="worker")
        print(json.dumps([errors, get_parallel().tp_size]))
        """, mode=mode, out=tmp_path / "reads.jsonl")
    assert last_json(proc) == [["NotPublishedError", "NotPublishedError"], 1]


def test_enforce_guards_the_raw_record_and_generic_reads() -> None:
    """The raw record spans every namespace: only a role that may read them all gets it;
    ctx.bag() and runner views are scoped like the accessors."""
    proc = run_python("""
        import json
        from configbags.generated.accessors import publish, get_server_args, get_context, runner_view
        from configbags.generated.server_args import ServerArgs
        from configbags.runtime.errors import RoleError
        out = {}
        publish(ServerArgs(model_path="m"), role="detokenizer")
        for name, read in [("raw", lambda: get_server_args().tp_size),
                           ("bag", lambda: get_context().bag("parallel")),
                           ("view", lambda: runner_view("draft").parallel),
                           ("allowed", lambda: get_context().bag("serving").port)]:
            try:
                read()
                out[name] = "ok"
            except RoleError as exc:
                out[name] = str(exc)
        publish(ServerArgs(model_path="m"), role="tokenizer")
        out["raw_all"] = get_server_args().tp_size
        print(json.dumps(out))
        """, mode="enforce")
    out = last_json(proc)
    assert "may not read the raw record, which spans every namespace" in out["raw"]
    assert "may not read namespace 'parallel'" in out["bag"]
    assert "runner view 'draft'" in out["view"]
    assert out["allowed"] == "ok" and out["raw_all"] == 1


def test_record_mode_records_raw_record_reads(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    run_python("""
        from configbags.generated.accessors import publish, get_server_args
        from configbags.generated.server_args import ServerArgs
        publish(ServerArgs(model_path="m"), role="tokenizer")
        get_server_args().tp_size
        get_server_args().port
        """, mode="record", out=out)
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e.get("namespace") for e in events if e["event"] == "read"] == ["*"]
