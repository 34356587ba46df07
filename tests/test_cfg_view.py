"""`cfg`, the module-level typed view: as cheap as a legacy record read (bench/bench_access.py),
never stale after an override, explaining before publish, and scoped by role modes exactly
like the accessors (each mode in a fresh interpreter, as in test_roles_modes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_roles_modes import last_json, run_python

from configbags.generated.accessors import cfg, get_context, get_parallel, get_schedule
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import NotPublishedError
from configbags.runtime.testing import published, scoped_override


def test_cfg_holds_the_accessors_bags_and_follows_every_override() -> None:
    with published(ServerArgs(model_path="m", tp_size=4, dp_size=2, enable_dp_attention=True), role="test") as ctx:
        assert cfg.parallel is get_parallel() and cfg.parallel.tp_size == 4
        assert cfg.parallel.attn_tp_size == 2  # derived
        ctx.override("tune", dp_size=4)
        assert cfg.parallel.dp_size == 4 and cfg.parallel.attn_tp_size == 1  # recomputed, not stale
        with scoped_override(max_running_requests=7):
            assert cfg.schedule.max_running_requests == 7 == get_schedule().max_running_requests
        assert cfg.schedule.max_running_requests is None
        assert cfg.server_args.tp_size == 4  # the raw record never changes


def test_cfg_explains_before_publish_and_after_a_scope_ends() -> None:
    assert not get_context().published
    with pytest.raises(NotPublishedError, match="before publish"):
        _ = cfg.parallel.tp_size
    with published(ServerArgs(model_path="m"), role="test"):
        assert cfg.parallel.tp_size == 1
    with pytest.raises(NotPublishedError):
        _ = cfg.exec.kernel.attention_backend


CFG_ENFORCE = """
import json
from configbags.generated.accessors import cfg, publish
from configbags.generated.server_args import ServerArgs
publish(ServerArgs(model_path="m"), role="detokenizer")
allowed = cfg.model.kv_cache_dtype
try:
    cfg.schedule.page_size
except Exception as exc:
    print(json.dumps([allowed, type(exc).__name__, str(exc)]))
"""


def test_cfg_is_role_scoped_in_enforce_mode() -> None:
    allowed, kind, message = last_json(run_python(CFG_ENFORCE, mode="enforce"))
    assert allowed == "auto"
    assert kind == "RoleError" and "may not read namespace 'schedule'" in message


def test_cfg_reads_are_recorded_in_record_mode(tmp_path: Path) -> None:
    out = tmp_path / "reads.jsonl"
    proc = run_python("""
        from configbags.generated.accessors import cfg, publish
        from configbags.generated.server_args import ServerArgs
        publish(ServerArgs(model_path="m", tp_size=2), role="worker")
        print(cfg.parallel.tp_size, cfg.parallel.pp_size)
        """, mode="record", out=out, probe=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "1"]
    assert out.read_text().count('"namespace": "parallel"') == 1  # recorded once, then a slot read
