"""What a `configbags ratchet check` process imports. Its start-up is most of a warm check's
time, so the lazy imports are a contract: a check never loads libcst (only `fix` rewrites)
or the generator, and a warm one (both caches valid) not PyYAML or importlib.metadata
either. Checked in fresh processes, since this test process has imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.importer import ROLES_YAML

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("libcst", "jinja2", "black", "configbags.codegen", "yaml", "importlib.metadata", "torch")
PROBE = textwrap.dedent(f"""
    import json, sys
    from configbags.cli import main
    code = main(sys.argv[1:])
    print(json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
""")


def _check(project: Path) -> dict[str, object]:
    # the warm path is the cache's, which CI=true turns off (tests/test_ratchet_hostile.py holds that rule)
    env = {**{k: v for k, v in os.environ.items() if k != "CI"}, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "ratchet", "check", "--schema", str(project / "schema")],
        cwd=project, env=env, capture_output=True, text=True, check=False,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _project(tmp_path: Path) -> Path:
    schema = tmp_path / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n"
        "  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (schema / "roles.yaml").write_text(ROLES_YAML)
    (tmp_path / "pkg").mkdir()
    for i in range(5):
        (tmp_path / "pkg" / f"m{i}.py").write_text(f"def f{i}(server_args):\n    return server_args.tp_size\n")
    from configbags.migrate.cli import main

    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    return tmp_path


def test_a_cold_check_loads_neither_libcst_nor_the_generator_nor_torch(tmp_path: Path) -> None:
    project = _project(tmp_path)
    cold = _check(project)
    assert cold["code"] == 0
    assert not {"libcst", "jinja2", "black", "torch"} & set(cold["loaded"])  # type: ignore[arg-type]


@pytest.mark.slow  # check processes, cold then warm
def test_a_warm_check_loads_nothing_heavy(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert _check(project)["code"] == 0  # fills both caches
    assert _check(project) == {"code": 0, "loaded": []}
