"""`ratchet fix`: rewrites raw reads to accessors byte-exactly, adds the import, refuses
what it cannot prove safe, and leaves a tree the check passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from configbags.migrate.check import check
from configbags.migrate.cli import main
from configbags.migrate.fix import fix_source, fix_tree
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import Read, ScanSettings, scan_source, scan_tree

ACCESSORS = {
    "tp_size": "cfg.parallel.tp_size",
    "page_size": "cfg.schedule.page_size",
    "attention_backend": "cfg.exec.kernel.attention_backend",
}
MODULE = "configbags.generated.accessors"


def _fix(source: str, *, rewrite_parameters: bool = True) -> tuple[str, list[str], list[str]]:
    """Most tests here are about *how* a read is rewritten, on records handed in as
    parameters; which records may be rewritten at all is tested with the flag off."""
    source = textwrap.dedent(source)
    scanned = scan_source(source.encode(), ScanSettings(roots=(".",)))
    reads = [Read("m.py", *row) for row in scanned.reads]
    new, changed, skipped = fix_source(source, reads, ACCESSORS, MODULE, rewrite_parameters=rewrite_parameters)
    return new, [f"{c.old} -> {c.new}" for c in changed], [f"{s.leaf}: {s.reason}" for s in skipped]


def test_rewrites_keep_formatting_and_comments_and_add_the_import() -> None:
    new, changed, skipped = _fix(
        """\
        from __future__ import annotations

        import os  # stays


        class Scheduler:
            def __init__(self, server_args):
                self.server_args = server_args

            def budget(self):
                # a comment that must survive
                return (
                    self.server_args.page_size   *  2  # odd spacing stays
                )

            def backend(self):
                return getattr(self.server_args, "attention_backend", None) or "fa3"
        """
    )
    assert new == textwrap.dedent(
        """\
        from __future__ import annotations

        import os  # stays

        from configbags.generated.accessors import cfg


        class Scheduler:
            def __init__(self, server_args):
                self.server_args = server_args

            def budget(self):
                # a comment that must survive
                return (
                    cfg.schedule.page_size   *  2  # odd spacing stays
                )

            def backend(self):
                return cfg.exec.kernel.attention_backend or "fa3"
        """
    )
    assert changed == [
        "self.server_args.page_size -> cfg.schedule.page_size",
        'getattr(self.server_args, "attention_backend", None) -> cfg.exec.kernel.attention_backend',
    ]
    assert skipped == []


def test_each_spelling_is_rewritten() -> None:
    new, changed, _ = _fix(
        """\
        from configbags.generated import accessors
        from configbags.generated.accessors import get_parallel, get_server_args

        MODULE_ARGS = get_server_args()


        def f(server_args: ServerArgs):
            args = get_server_args()
            copy = args
            return (get_server_args().tp_size, accessors.get_server_args().page_size, copy.tp_size,
                    server_args.page_size, MODULE_ARGS.tp_size, getattr(args, "page_size"))
        """
    )
    assert len(changed) == 6
    assert "return (cfg.parallel.tp_size, cfg.schedule.page_size, cfg.parallel.tp_size,\n" in new
    assert "cfg.schedule.page_size, cfg.parallel.tp_size, cfg.schedule.page_size)" in new
    # merged into the existing import from the accessors module, not a second one
    (line,) = [x for x in new.splitlines() if x.startswith("from configbags.generated.accessors import")]
    assert sorted(line.split(" import ")[1].split(", ")) == ["cfg", "get_parallel", "get_server_args"]


def test_parentheses_and_non_ascii_columns() -> None:
    new, changed, _ = _fix("def f(server_args):\n    return ('é', (server_args).tp_size, (server_args.page_size))\n")
    assert len(changed) == 2
    assert "return ('é', cfg.parallel.tp_size, (cfg.schedule.page_size))" in new


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return getattr(server_args, name)", "*: dynamic getattr: the leaf name is only known at run time"),
        ("return hasattr(server_args, 'tp_size')", "tp_size: hasattr on the raw record"),
        ("return vars(server_args)", "*: reads the whole record (vars/asdict/__dict__)"),
        ("return server_args.url", "url: `url` is not a config leaf; no accessor replaces it"),
        ("return getattr(server_args, 'tp_size', compute())", "tp_size: getattr default could have side effects"),
    ],
)
def test_refuses_what_it_cannot_prove_safe(body: str, reason: str) -> None:
    source = f"def f(server_args, name):\n    {body}\n"
    new, changed, skipped = _fix(source)
    assert new == source
    assert changed == []
    assert len(skipped) == 1
    assert skipped[0].startswith(reason)


def test_refuses_when_the_accessor_name_is_taken() -> None:
    source = "from elsewhere import cfg\n\ndef f(server_args):\n    return server_args.tp_size\n"
    new, _, skipped = _fix(source)
    assert new == source
    assert skipped == ["tp_size: `cfg` is already bound here (to elsewhere.cfg); rewrite by hand"]


@pytest.mark.parametrize(
    "binding",
    [
        "def f(server_args, cfg):\n",  # a parameter
        "def f(server_args):\n    cfg = load()\n",  # a local
        "def f(server_args):\n    for cfg in ():\n        pass\n",
        "def f(server_args):\n    import cfg\n",
        "def f(server_args):\n    from . import cfg\n",
        "def f(server_args):\n    try:\n        pass\n    except E as cfg:\n        pass\n",
        "def f(server_args):\n    g = lambda cfg: cfg\n",
        f"from {MODULE} import cfg\n\ndef f(server_args, cfg):\n",  # imported, and shadowed here
    ],
)
def test_a_local_cfg_keeps_the_read_raw(binding: str) -> None:
    """`cfg` is a common local name in engines: inside its scope the rewritten `cfg.x.y`
    would read the local instead, so the read stays raw, with the reason."""
    source = binding + "    return server_args.tp_size\n"
    new, _, skipped = _fix(source)
    assert new == source
    assert skipped == ["tp_size: `cfg` is already bound here (to this module); rewrite by hand"]


def _tree(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else textwrap.dedent(text).encode())
    return tmp_path


def test_fix_tree_reports_writes_keeps_crlf_and_is_idempotent(tmp_path: Path) -> None:
    project = _tree(
        tmp_path,
        {
            "a.py": "def f(server_args):\n    server_args.tp_size = 2\n    return server_args.tp_size\n",
            "crlf.py": b"def g(server_args):\r\n    return server_args.page_size\r\n",
            "clean.py": "x = 1\n",
        },
    )
    settings = ScanSettings(roots=("pkg",))
    report = fix_tree(project, settings, ACCESSORS, MODULE, rewrite_parameters=True)
    assert report.files_changed == ("pkg/crlf.py",)
    # the read of a leaf written in the same tree would no longer see the write: refused
    assert [(s.file, s.line, s.reason.split(":")[0].split(" (")[0]) for s in report.skipped] == [
        ("pkg/a.py", 2, "write to the raw record"),
        ("pkg/a.py", 3, "`tp_size` is written outside the resolution phase"),
    ]
    assert "server_args.tp_size = 2\n    return server_args.tp_size\n" in (project / "pkg/a.py").read_text()
    assert (project / "pkg/crlf.py").read_bytes() == (
        b"from configbags.generated.accessors import cfg\r\n\r\n\r\n"
        b"def g(server_args):\r\n    return cfg.schedule.page_size\r\n"
    )
    again = fix_tree(project, settings, ACCESSORS, MODULE, rewrite_parameters=True)
    assert again.changed == () and again.files_changed == ()
    after = check(scan_tree(project, settings), [], ACCESSORS, min_files=1)
    assert [f.kind for f in after.failures] == ["new_read", "write"]  # the reader and the write


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"a.py": "def f(server_args):\n    return server_args.tp_size\n"})
    before = (project / "pkg/a.py").read_text()
    report = fix_tree(project, ScanSettings(roots=("pkg",)), ACCESSORS, MODULE, dry_run=True, rewrite_parameters=True)
    assert report.files_changed == ("pkg/a.py",)
    assert (project / "pkg/a.py").read_text() == before


def test_cli_fix_updates_the_allowlist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _tree(
        tmp_path,
        {"a.py": "def f(server_args, name):\n    return server_args.tp_size, getattr(server_args, name)\n"},
    )
    schema = project / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (schema / "roles.yaml").write_text(ROLES_YAML)
    assert main(["init", "--schema", str(schema), "--root", str(project / "pkg")]) == 0
    # fix checks that the module exists and defines the accessors before it rewrites
    (project / "app" / "config").mkdir(parents=True)
    (project / "app" / "config" / "accessors.py").write_text("def get_parallel(): ...\ncfg = ...\n")
    fix = ["fix", "--schema", str(schema), "--accessors-module", "app.config.accessors"]
    assert main([*fix, "--rewrite-parameters"]) == 0
    out = capsys.readouterr().out
    assert "pkg/a.py:2 (f): server_args.tp_size -> cfg.parallel.tp_size" in out
    assert "removed 1 entries for rewritten reads, gave 1 refused reads their reason" in out
    assert "from app.config.accessors import cfg" in (project / "pkg/a.py").read_text()
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert allowlist == [
        {
            "file": "pkg/a.py",
            "function": "f",
            "leaf": "*",
            "reason": "fix refused: dynamic getattr: the leaf name is only known at run time",
            "reads": 1,
        }
    ]
    assert main(["check", "--schema", str(schema), "--min-files", "1"]) == 0


# --------------------------------------------------------------------------- meaning kept


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        # a record built here is not the published one the accessor reads
        (
            "def f(argv):\n    args = ServerArgs.from_cli(argv)\n    return args.tp_size\n",
            "tp_size: reads a ServerArgs built here",
        ),
        ("def f():\n    return ServerArgs(tp_size=2).tp_size\n", "tp_size: reads a ServerArgs built here"),
        # the call has effects; replacing the expression would drop it
        (
            "def f():\n    return make_runner().server_args.tp_size\n",
            "tp_size: the receiver `make_runner().server_args` may have side effects",
        ),
        (
            "def f(runners):\n    return runners[0].server_args.tp_size\n",
            "tp_size: the receiver `runners[0].server_args` may have side effects",
        ),
        # the walrus binds `sa`, which later code may use
        (
            "def f():\n    return (sa := get_server_args()).tp_size + id(sa)\n",
            "tp_size: the receiver binds a name with `:=`",
        ),
        (
            "def f(rec):\n    return getattr((sa := rec.server_args), 'tp_size') + id(sa)\n",
            "tp_size: the receiver binds a name with `:=`",
        ),
        # `with f(record) as sa`: sa is whatever f yields
        (
            "def f(lock):\n    with lock(get_server_args()) as sa:\n        return sa.tp_size\n",
            "tp_size: bound by `with ... as NAME` around the record",
        ),
    ],
)
def test_refuses_what_would_change_meaning_or_drop_code(source: str, reason: str) -> None:
    new, changed, skipped = _fix(source, rewrite_parameters=True)  # refused even with the flag
    assert new == source
    assert changed == []
    assert len(skipped) == 1 and skipped[0].startswith(reason), skipped


@pytest.mark.parametrize(
    "source",
    [
        "def f(other: ServerArgs):\n    return other.tp_size\n",
        "def f(server_args):\n    return server_args.tp_size\n",
        "class Draft:\n    def f(self):\n        return self.server_args.tp_size\n",
        "def f(runner):\n    return getattr(runner.server_args, 'tp_size')\n",
    ],
)
def test_held_records_are_rewritten_only_when_the_user_says_so(source: str) -> None:
    # A draft runner holds its own record: rewriting its reads to the process bags would
    # bring back the draft-vs-target bug, so without --rewrite-parameters fix refuses.
    new, changed, skipped = _fix(source, rewrite_parameters=False)
    assert (new, changed) == (source, [])
    assert skipped == [
        "tp_size: may be a runner's own record; pass --rewrite-parameters if it is the process record"
    ]
    new, changed, skipped = _fix(source, rewrite_parameters=True)
    assert len(changed) == 1 and skipped == []
    assert "cfg.parallel.tp_size" in new


def test_fetched_records_are_rewritten_without_the_flag() -> None:
    new, changed, skipped = _fix(
        """\
        from contextlib import nullcontext
        from configbags.generated import accessors
        from configbags.generated.accessors import get_server_args


        def f():
            args = get_server_args()
            with nullcontext(get_server_args()) as sa:
                return args.tp_size + sa.tp_size + accessors.get_server_args().page_size
        """,
        rewrite_parameters=False,
    )
    assert skipped == []
    assert len(changed) == 3
    assert "return cfg.parallel.tp_size + cfg.parallel.tp_size + cfg.schedule.page_size\n" in new


def test_cli_fix_without_the_flag_allowlists_held_reads_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _tree(
        tmp_path,
        {
            "a.py": """\
                from configbags.generated.accessors import get_server_args


                def f(server_args):
                    return server_args.tp_size + get_server_args().tp_size


                def g():
                    return get_server_args().tp_size
                """
        },
    )
    schema = project / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (schema / "roles.yaml").write_text(ROLES_YAML)
    assert main(["init", "--schema", str(schema), "--root", str(project / "pkg")]) == 0
    fix = ["fix", "--schema", str(schema), "--accessors-module", "configbags.generated.accessors"]
    assert main(fix) == 0
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert allowlist == [
        {
            "file": "pkg/a.py",
            "function": "f",
            "leaf": "tp_size",
            "reason": "fix refused: may be a runner's own record; pass --rewrite-parameters if it "
            "is the process record",
        }
    ]
    assert main(["check", "--schema", str(schema), "--min-files", "1"]) == 0
    # with the flag, the rest goes, and so does the entry fix wrote
    assert main([*fix, "--rewrite-parameters"]) == 0
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"] == []
    assert main(["check", "--schema", str(schema), "--min-files", "1"]) == 0
    capsys.readouterr()


# --------------------------------------------------------------------------- rebound names

REBOUND = (
    "the name is also bound to something else in its scope (another value, a None placeholder, "
    "a loop, with or except target, ...) or only conditionally to the record, so this read may "
    "not see the record; rewrite by hand"
)


@pytest.mark.parametrize(
    "source",
    [
        # the reproductions from review: each was rewritten to cfg.parallel.tp_size
        "def f(other):\n    sa = get_server_args()\n    sa = other\n    return sa.tp_size\n",
        "def f(c, other):\n    sa = get_server_args() if c else other\n    return sa.tp_size\n",
        "def f(items):\n    sa = get_server_args()\n    for sa in items:\n        pass\n    return sa.tp_size\n",
        "def f(c, other):\n    sa = get_server_args()\n    if c:\n        sa = other\n    return sa.tp_size\n",
    ],
)
@pytest.mark.parametrize("rewrite_parameters", [False, True])
def test_refuses_a_name_that_is_also_bound_to_something_else(source: str, rewrite_parameters: bool) -> None:
    # refused even with --rewrite-parameters: the other binding is not a record at all
    new, changed, skipped = _fix(source, rewrite_parameters=rewrite_parameters)
    assert (new, changed) == (source, [])
    assert skipped == [f"tp_size: {REBOUND}"]


def _rebound_fixture() -> str:
    return (Path(__file__).parent / "fixtures" / "ratchet_spellings" / "alias_rebound.py").read_text()


def test_fix_refuses_every_read_in_the_rebound_fixture() -> None:
    source = _rebound_fixture()
    reads = scan_source(source.encode(), ScanSettings(roots=(".",))).reads
    assert len(reads) >= 25
    new, changed, skipped = _fix(source, rewrite_parameters=True)
    assert (new, changed) == (source, [])
    assert len(skipped) == len(reads)
    # the one escape (`self.cfg = get_server_args()`: a read of `*`) is no leaf to rewrite
    assert {s.split(": ", 1)[1] for s in skipped if not s.startswith("*: ")} == {REBOUND}


def test_check_reports_rebound_reads_and_does_not_promise_a_fix(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"rebound.py": _rebound_fixture()})
    result = scan_tree(project, ScanSettings(roots=("pkg",)))
    report = check(result, [], ACCESSORS, min_files=1)
    keys = {(r.function, r.leaf) for r in result.reads}
    new_reads = [f.message for f in report.failures if f.kind == "new_read"]
    assert len(new_reads) == len(keys) == len(result.reads)
    assert all("by hand" in m and "will not rewrite it" in m for m in new_reads)
    (first,) = [m for m in new_reads if "(reassigned)" in m]
    assert first.startswith(
        "pkg/rebound.py:42 (reassigned): a raw read of 'tp_size' through an alias of the raw record; "
        "use cfg.parallel.tp_size instead, by hand: this may not be the process record "
        "(origin 'rebound'), so `configbags ratchet fix` will not rewrite it."
    )
    # fix leaves them all; once allowlisted with fix's reason, the check passes
    report_fix = fix_tree(project, ScanSettings(roots=("pkg",)), ACCESSORS, MODULE, rewrite_parameters=True)
    assert report_fix.changed == () and report_fix.files_changed == ()
    allowlist = [{"file": "pkg/rebound.py", "function": f, "leaf": leaf, "reason": REBOUND} for f, leaf in keys]
    assert check(scan_tree(project, ScanSettings(roots=("pkg",))), allowlist, ACCESSORS, min_files=1).ok
