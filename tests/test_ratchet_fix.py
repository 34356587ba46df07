"""`ratchet fix`: rewrites raw reads to accessors byte-exactly, adds the import, refuses
what it cannot prove safe, and leaves a tree the check passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from codegen.ratchet.check import check
from codegen.ratchet.cli import main
from codegen.ratchet.fix import fix_source, fix_tree
from codegen.ratchet.scan import Read, ScanSettings, scan_source, scan_tree

ACCESSORS = {
    "tp_size": "get_parallel().tp_size",
    "page_size": "get_schedule().page_size",
    "attention_backend": "get_exec().kernel.attention_backend",
}
MODULE = "generated.accessors"


def _fix(source: str) -> tuple[str, list[str], list[str]]:
    source = textwrap.dedent(source)
    scanned = scan_source(source.encode(), ScanSettings(roots=(".",)))
    reads = [Read("m.py", *row) for row in scanned.reads]
    new, changed, skipped = fix_source(source, reads, ACCESSORS, MODULE)
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
        from generated.accessors import get_exec, get_schedule


        class Scheduler:
            def __init__(self, server_args):
                self.server_args = server_args

            def budget(self):
                # a comment that must survive
                return (
                    get_schedule().page_size   *  2  # odd spacing stays
                )

            def backend(self):
                return get_exec().kernel.attention_backend or "fa3"
        """
    )
    assert changed == [
        "self.server_args.page_size -> get_schedule().page_size",
        'getattr(self.server_args, "attention_backend", None) -> get_exec().kernel.attention_backend',
    ]
    assert skipped == []


def test_each_spelling_is_rewritten() -> None:
    new, changed, _ = _fix(
        """\
        from generated import accessors
        from generated.accessors import get_parallel, get_server_args

        MODULE_ARGS = get_server_args()


        def f(server_args: ServerArgs):
            args = get_server_args()
            copy = args
            return (get_server_args().tp_size, accessors.get_server_args().page_size, copy.tp_size,
                    server_args.page_size, MODULE_ARGS.tp_size, getattr(args, "page_size"))
        """
    )
    assert len(changed) == 6
    assert "return (get_parallel().tp_size, get_schedule().page_size, get_parallel().tp_size,\n" in new
    assert "get_schedule().page_size, get_parallel().tp_size, get_schedule().page_size)" in new
    # merged into the existing import from the accessors module, not a second one
    (line,) = [x for x in new.splitlines() if x.startswith("from generated.accessors import")]
    assert sorted(line.split(" import ")[1].split(", ")) == ["get_parallel", "get_schedule", "get_server_args"]


def test_parentheses_and_non_ascii_columns() -> None:
    new, changed, _ = _fix("def f(server_args):\n    return ('é', (server_args).tp_size, (server_args.page_size))\n")
    assert len(changed) == 2
    assert "return ('é', get_parallel().tp_size, (get_schedule().page_size))" in new


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return getattr(server_args, name)", "*: dynamic getattr: the leaf name is only known at run time"),
        ("return hasattr(server_args, 'tp_size')", "tp_size: hasattr on the raw record"),
        ("return vars(server_args)", "*: reads the whole record (vars/asdict/__dict__)"),
        ("return server_args.url()", "url: `url` is not a config leaf; no accessor replaces it"),
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
    source = "from elsewhere import get_parallel\n\ndef f(server_args):\n    return server_args.tp_size\n"
    new, _, skipped = _fix(source)
    assert new == source
    assert skipped == ["tp_size: `get_parallel` is already bound here (to elsewhere.get_parallel); rewrite by hand"]


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
    report = fix_tree(project, settings, ACCESSORS, MODULE)
    assert report.files_changed == ("pkg/a.py", "pkg/crlf.py")
    assert [(s.file, s.line, s.reason.split(":")[0]) for s in report.skipped] == [
        ("pkg/a.py", 2, "write to the raw record")
    ]
    assert "server_args.tp_size = 2\n    return get_parallel().tp_size\n" in (project / "pkg/a.py").read_text()
    assert (project / "pkg/crlf.py").read_bytes() == (
        b"from generated.accessors import get_schedule\r\n\r\n"
        b"def g(server_args):\r\n    return get_schedule().page_size\r\n"
    )
    again = fix_tree(project, settings, ACCESSORS, MODULE)
    assert again.changed == () and again.files_changed == ()
    after = check(scan_tree(project, settings), [], ACCESSORS, min_files=1)
    assert [f.kind for f in after.failures] == ["write"]  # the only thing left is the write


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"a.py": "def f(server_args):\n    return server_args.tp_size\n"})
    before = (project / "pkg/a.py").read_text()
    report = fix_tree(project, ScanSettings(roots=("pkg",)), ACCESSORS, MODULE, dry_run=True)
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
    assert main(["init", "--schema", str(schema), "--root", str(project / "pkg")]) == 0
    assert main(["fix", "--schema", str(schema), "--accessors-module", "app.config.accessors"]) == 0
    out = capsys.readouterr().out
    assert "pkg/a.py:2 (f): server_args.tp_size -> get_parallel().tp_size" in out
    assert "removed 1 entries for rewritten reads, gave 1 refused reads their reason" in out
    assert "from app.config.accessors import get_parallel" in (project / "pkg/a.py").read_text()
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert allowlist == [
        {
            "file": "pkg/a.py",
            "function": "f",
            "leaf": "*",
            "reason": "fix refused: dynamic getattr: the leaf name is only known at run time",
        }
    ]
    assert main(["check", "--schema", str(schema), "--min-files", "1"]) == 0
