"""Issue 21's fix items: a rewrite leaves no unused alias or import (ruff F401, F841,
I001 clean), a vouched parameter is not trusted where the class visibly builds its own
record, and a plain if/elif assignment is no temporary change."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.fix import fix_source, restores
from configbags.migrate.scan import Read, ScanSettings, scan_source

ACCESSORS = {"tp_size": "cfg.parallel.tp_size", "page_size": "cfg.schedule.page_size"}
MODULE = "configbags.generated.accessors"


def _fix(source: str) -> tuple[str, list[str], list[str]]:
    source = textwrap.dedent(source).lstrip("\n")
    scanned = scan_source(source.encode(), ScanSettings(roots=(".",)))
    reads = [Read("m.py", *row) for row in scanned.reads]
    new, changed, skipped = fix_source(source, reads, ACCESSORS, MODULE, rewrite_parameters=True)
    return new, [c.leaf for c in changed], [s.reason for s in skipped]


def _ruff(tmp_path: Path, source: str) -> str:
    path = tmp_path / "m.py"
    path.write_text(source)
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run(
        [str(ruff), "check", "--isolated", "--no-cache", "--select", "F401,F841,I001", "--config",
         "lint.isort.known-first-party=['configbags']", str(path)],
        capture_output=True, text=True, check=False,
    )
    return "" if done.returncode == 0 else done.stdout


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """
            class Runner:
                def __init__(self, server_args):
                    self.server_args = server_args

                def step(self):
                    sa = self.server_args
                    return sa.tp_size
            """,
            id="alias-of-an-attribute",
        ),
        pytest.param(
            """
            from configbags.generated.accessors import get_server_args


            def f():
                sa = get_server_args()  # the record
                return sa.tp_size
            """,
            id="alias-with-a-comment",
        ),
        pytest.param(
            """
            from configbags.generated.accessors import ServerArgs, get_server_args


            def f():
                sa: ServerArgs = get_server_args()
                return sa.tp_size
            """,
            id="annotated-alias",
        ),
        pytest.param(
            """
            from configbags.generated.accessors import get_server_args


            class A:
                def run(self):
                    sa = get_server_args()
                    return sa.tp_size


            class B:
                def run(self):
                    return 1
            """,
            id="same-method-name-in-two-classes",
        ),
    ],
)
def test_a_rewrite_leaves_no_unused_alias_or_import(tmp_path: Path, source: str) -> None:
    new, changed, skipped = _fix(source)
    assert changed == ["tp_size"] and not skipped
    assert _ruff(tmp_path, new) == ""
    assert " sa" not in new


def test_an_unused_alias_before_the_rewrite_stays() -> None:
    new, _, _ = _fix(
        """
        from configbags.generated.accessors import get_server_args


        def f():
            unused = get_server_args()
            sa = get_server_args()
            return sa.tp_size
        """
    )
    assert "unused = get_server_args()" in new and "sa = " not in new


def test_a_vouched_parameter_is_not_trusted_where_the_class_builds_its_own_record() -> None:
    new, changed, skipped = _fix(
        """
        import dataclasses


        class DraftWorker:
            def __init__(self, server_args: ServerArgs):
                self.server_args = dataclasses.replace(server_args, tp_size=1)

            def step(self):
                return self.server_args.tp_size


        class TargetWorker:
            def __init__(self, server_args: ServerArgs):
                self.server_args = server_args

            def step(self):
                return self.server_args.page_size
        """
    )
    assert changed == ["page_size"]
    assert len(skipped) == 1 and "fields changed" in skipped[0]
    assert "self.server_args.tp_size" in new


def test_a_plain_if_elif_assignment_is_no_temporary_change() -> None:
    branches = "".join(
        f"    {'if' if i == 0 else 'elif'} model == 'm{i}':\n        args.attention_backend = 'b{i}'\n"
        for i in range(13)
    )
    source = f"def resolve(args, model):\n{branches}    else:\n        args.attention_backend = 'torch'\n"
    source += (
        "    match model:\n        case 'x':\n            args.page_size = 1\n"
        "        case _:\n            args.page_size = 16\n"
    )
    assert restores(source) == {}
    # two writes on one path still are one
    twice = "def f(args, flag):\n    if flag:\n        args.tp_size = 2\n    args.tp_size = 1\n"
    assert {line: t.leaf for line, t in restores(twice).items()} == {3: "tp_size", 4: "tp_size"}
