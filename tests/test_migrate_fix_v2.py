"""`ratchet fix` v2: it rewrites only what keeps its meaning (never a read of a leaf that
code outside the resolution phase writes, nor a dict copy or class default), opts in per
path and per leaf, and leaves files ruff-clean for F401, F841 and I001."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.fix import RESOLUTION_REASON, fix_tree
from configbags.migrate.scan import ScanSettings

ACCESSORS = {
    "tp_size": "cfg.parallel.tp_size",
    "page_size": "cfg.schedule.page_size",
    "dp_size": "cfg.parallel.dp_size",
}
MODULE = "engine.config_bags.accessors"
SETTINGS = ScanSettings(roots=("engine",), record_dicts=("global_server_args_dict",))


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "engine" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _ruff(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return subprocess.run(
        [ruff, "check", "--isolated", "--no-cache", "--select", "F401,F841,I001", "--config",
         "lint.isort.known-first-party=['engine']", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )


READER = '''\
    """Reads the record through a local alias, with a docstring and a future import."""

    from __future__ import annotations

    import os

    from engine.server_args import get_server_args


    def world() -> int:
        args = get_server_args()
        sa = args
        return sa.tp_size * sa.dp_size + len(os.sep)
    '''


def test_rewritten_files_are_ruff_clean_and_lose_their_unused_aliases(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"reader.py": READER})
    before = _ruff([project / "engine" / "reader.py"])
    assert before.returncode == 0, before.stdout
    report = fix_tree(project, SETTINGS, ACCESSORS, MODULE)
    assert len(report.changed) == 2
    text = (project / "engine" / "reader.py").read_text()
    assert text == textwrap.dedent('''\
        """Reads the record through a local alias, with a docstring and a future import."""

        from __future__ import annotations

        import os

        from engine.config_bags.accessors import cfg


        def world() -> int:
            return cfg.parallel.tp_size * cfg.parallel.dp_size + len(os.sep)
        ''')
    after = _ruff([project / "engine" / "reader.py"])
    assert after.returncode == 0, after.stdout


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('"""Doc."""\n\ndef f():\n    from engine.server_args import get_server_args\n    return get_server_args().tp_size\n', id="no-imports"),
        pytest.param('"""Doc."""\nfrom __future__ import annotations\n\nfrom engine.a import x\nfrom engine.server_args import get_server_args\nfrom engine.zz import y\n\nz = (x, y, get_server_args().tp_size)\n', id="between"),
        pytest.param('import sys\n\nimport attrs\n\nfrom engine.config_bags.accessors import cfg\nfrom engine.server_args import get_server_args\n\nz = (sys, attrs, get_schedule, get_server_args().tp_size, get_server_args().page_size)\n', id="merged"),
        pytest.param('import sys\n\nfrom . import sibling\nfrom .server_args import get_server_args\n\nz = (sys, sibling, get_server_args().tp_size)\n', id="relative-last"),
    ],
)
def test_the_import_lands_where_isort_wants_it(tmp_path: Path, source: str) -> None:
    project = _tree(tmp_path, {"m.py": source})
    assert fix_tree(project, SETTINGS, ACCESSORS, MODULE).changed
    result = _ruff([project / "engine" / "m.py"])
    assert result.returncode == 0, result.stdout + (project / "engine" / "m.py").read_text()


WRITER = """\
    from engine.server_args import get_server_args


    def adjust_for_model():
        get_server_args().tp_size = 4


    def read_both():
        return get_server_args().tp_size, get_server_args().page_size
    """


def test_a_read_of_a_written_leaf_is_refused_and_says_where(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"w.py": WRITER})
    report = fix_tree(project, SETTINGS, ACCESSORS, MODULE)
    assert [c.leaf for c in report.changed] == ["page_size"]
    (refused,) = [s for s in report.skipped if s.leaf == "tp_size" and s.line == 9]
    assert "is written outside the resolution phase (engine/w.py:5)" in refused.reason


def test_a_write_in_the_resolution_phase_does_not_block_reads(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"w.py": WRITER})
    report = fix_tree(project, SETTINGS, ACCESSORS, MODULE, resolution=("engine/w.py:adjust_for_model",))
    assert sorted(c.leaf for c in report.changed) == ["page_size", "tp_size"]
    # and the write itself is allowed where it is: fix does not report it as refused
    assert not [s for s in report.skipped if s.write and s.function == "adjust_for_model"]


ADJUST = """\
    from engine.server_args import ServerArgs, get_server_args


    def adjust_for_model(server_args: ServerArgs, arch: str) -> None:
        if arch == "DeepseekV3" and server_args.page_size == 1:
            server_args.page_size = 64

        def nested() -> int:
            return get_server_args().tp_size

        nested()


    def reader() -> int:
        return get_server_args().page_size
    """


def test_reads_inside_the_resolution_phase_are_never_rewritten(tmp_path: Path) -> None:
    # The resolution phase runs before publish: an accessor there raises NotPublishedError
    # in a fresh process, or reads an earlier publish (page_size 1, not the resolved 64).
    project = _tree(tmp_path, {"m.py": ADJUST})
    report = fix_tree(
        project, SETTINGS, ACCESSORS, MODULE, rewrite_parameters=True,
        resolution=("engine/m.py:adjust_for_model",),
    )
    assert [(c.function, c.leaf) for c in report.changed] == [("reader", "page_size")]
    refused = {(s.function, s.leaf): s.reason for s in report.skipped if not s.write}
    assert refused == {
        ("adjust_for_model", "page_size"): RESOLUTION_REASON,
        ("adjust_for_model.nested", "tp_size"): RESOLUTION_REASON,
    }
    assert RESOLUTION_REASON.startswith("the resolution phase runs before publish; it reads the record it resolves")
    text = (project / "engine" / "m.py").read_text()
    assert "server_args.page_size == 1" in text and "return get_server_args().tp_size" in text


def test_dict_copies_and_class_defaults_are_refused(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"d.py": """\
        from engine.server_args import ServerArgs, global_server_args_dict


        def f(gpu):
            return global_server_args_dict["tp_size"], ServerArgs.page_size == gpu
        """})
    report = fix_tree(project, SETTINGS, ACCESSORS, MODULE)
    assert not report.changed
    reasons = {s.leaf: s.reason for s in report.skipped}
    assert reasons["tp_size"].startswith("reads a dict copy of the record")
    assert reasons["page_size"].startswith("reads the record class's default")


HELD = """\
    from engine.server_args import ServerArgs


    def f(server_args: ServerArgs):
        return server_args.tp_size + server_args.page_size
    """


def test_only_and_leaf_opt_in_per_path_and_per_leaf(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"a/m.py": HELD, "b/m.py": HELD})
    report = fix_tree(
        project, SETTINGS, ACCESSORS, MODULE,
        rewrite_parameters=True, only=["engine/a"], leaves=frozenset({"tp_size"}),
    )
    assert [(c.file, c.leaf) for c in report.changed] == [("engine/a/m.py", "tp_size")]
    assert report.files_changed == ("engine/a/m.py",)
    assert "server_args.tp_size" in (project / "engine" / "b" / "m.py").read_text()


def test_dry_run_says_would_rewrite(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"r.py": READER})
    report = fix_tree(project, SETTINGS, ACCESSORS, MODULE, dry_run=True)
    rendered = report.render(dry_run=True)
    assert "would rewrite to cfg.parallel.tp_size" in rendered
    assert "ratchet fix: would rewrite 2 reads in 1 files" in rendered
    assert (project / "engine" / "r.py").read_text() == textwrap.dedent(READER)


WRITES = """\
    from engine.server_args import ServerArgs


    def tune(server_args: ServerArgs, load: int) -> None:
        # the chunk shrinks under load
        server_args.chunked_prefill_size = 1024 if load > 8 else 8192
        server_args.tp_size = 2
        server_args.page_size = 16


    def reader(server_args: ServerArgs) -> int:
        return server_args.page_size
    """


def test_a_write_becomes_an_override_where_the_policy_allows(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"tune.py": WRITES})
    policies = {"chunked_prefill_size": "runtime", "tp_size": "startup", "page_size": "runtime"}
    # the written record is a parameter: the user vouches that it is the process record
    report = fix_tree(
        project, SETTINGS, ACCESSORS, MODULE, rewrite_writes=True, policies=policies, leaves=frozenset(
            {"chunked_prefill_size", "tp_size", "page_size"}
        ), rewrite_parameters=True,
    )
    assert [(c.leaf, c.new) for c in report.changed] == [
        ("chunked_prefill_size", "get_context().override('engine.tune:tune', chunked_prefill_size=...)"),
    ]
    reasons = {(s.leaf, s.line): s.reason for s in report.skipped}
    assert reasons[("tp_size", 7)].startswith("`tp_size` has override policy startup")
    assert reasons[("page_size", 8)].startswith("raw reads of `page_size` remain (engine/tune.py:12)")
    text = (project / "engine" / "tune.py").read_text()
    assert (
        "    # the chunk shrinks under load\n"
        "    get_context().override('engine.tune:tune', chunked_prefill_size=1024 if load > 8 else 8192)\n"
    ) in text
    assert "from engine.config_bags.accessors import get_context\n" in text
    assert _ruff([project / "engine" / "tune.py"]).returncode == 0
