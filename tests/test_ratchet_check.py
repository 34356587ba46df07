"""The ratchet check, exact and two-sided, one test per failure message; and the
`configbags ratchet check|init|update|scan` commands on small projects."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import attrs
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from configbags.codegen.model import AllowEntry
from configbags.migrate.check import check
from configbags.migrate.cli import main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_tree
from configbags.migrate.settings import RatchetConfigError, load_from_schema

ACCESSORS = {
    "tp_size": "get_parallel().tp_size",
    "page_size": "get_schedule().page_size",
    "attention_backend": "get_exec().kernel.attention_backend",
}
SETTINGS = ScanSettings(roots=("pkg",))


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


READER = """\
    from configbags.generated.accessors import get_server_args


    class Foo:
        def bar(self):
            return get_server_args().tp_size + get_server_args().tp_size

        def baz(self):
            if self.server_args.page_size > 1:
                return 0
            return self.server_args.page_size
    """
PLAIN = "x = 1\n"


def _run(tmp_path: Path, files: dict[str, str], allowlist: list[AllowEntry], **kwargs: object) -> list[str]:
    project = _project(tmp_path, files)
    result = scan_tree(project, SETTINGS)
    options = {"min_files": 1, "roots": SETTINGS.roots, **kwargs}
    report = check(result, allowlist, ACCESSORS, **options)  # type: ignore[arg-type]
    assert report.ok == (not report.failures)
    return [failure.message for failure in report.failures]


FULL_ALLOWLIST = [
    AllowEntry("pkg/reader.py", "Foo.bar", "tp_size", "launch-time check"),
    AllowEntry("pkg/reader.py", "Foo.baz", "page_size", "draft runner reads its own record"),
]


def test_an_allowlist_that_matches_exactly_passes(tmp_path: Path) -> None:
    assert _run(tmp_path, {"reader.py": READER}, FULL_ALLOWLIST) == []


def test_a_new_read_names_the_accessor_and_how_to_allowlist_it(tmp_path: Path) -> None:
    (message,) = _run(tmp_path, {"reader.py": READER}, FULL_ALLOWLIST[1:])
    assert message == (
        "pkg/reader.py:6 (Foo.bar): a raw read of 'tp_size' through the raw accessor; "
        "use get_parallel().tp_size instead (`configbags ratchet fix` rewrites it).\n"
        "    If it must stay raw, allowlist it with a reason in schema/ratchet.yaml:\n"
        "      - {file: pkg/reader.py, function: Foo.bar, leaf: tp_size, reason: <why this read stays raw>}"
    )


def test_a_new_read_through_a_record_attribute(tmp_path: Path) -> None:
    (message,) = _run(tmp_path, {"reader.py": READER}, FULL_ALLOWLIST[:1])
    assert message.startswith(
        "pkg/reader.py:9 (Foo.baz): a raw read of 'page_size' through a record attribute "
        "(e.g. self.server_args) (also line 11); use get_schedule().page_size instead"
    )


def test_a_new_read_of_something_that_is_not_a_leaf(tmp_path: Path) -> None:
    files = {"m.py": "def f(server_args):\n    return server_args.url\n"}
    (message,) = _run(tmp_path, files, [])
    assert "a raw read of 'url' through a parameter holding the raw record" in message
    assert "`url` is not a config leaf, so no accessor replaces it" in message


def test_a_method_call_on_the_record_is_not_a_leaf_read(tmp_path: Path) -> None:
    files = {"m.py": "def f(server_args):\n    return server_args.url() + ServerArgs()\n"}
    assert _run(tmp_path, files, []) == []


def test_a_new_dynamic_read(tmp_path: Path) -> None:
    files = {"m.py": "def f(server_args, name):\n    return getattr(server_args, name)\n"}
    (message,) = _run(tmp_path, files, [])
    assert "pkg/m.py:2 (f): a dynamic or whole-record read" in message
    assert "read the leaves you need by name through their accessors" in message
    assert "leaf: '*'" in message


def test_a_stale_entry_fails_until_removed(tmp_path: Path) -> None:
    gone = AllowEntry("pkg/reader.py", "Foo.gone", "tp_size", "was needed once")
    (message,) = _run(tmp_path, {"reader.py": READER}, [*FULL_ALLOWLIST, gone])
    assert message == (
        "schema/ratchet.yaml: stale allowlist entry {file: pkg/reader.py, function: Foo.gone, "
        "leaf: tp_size}: that read is gone. Remove the entry (`configbags ratchet update` removes "
        "stale entries) so the ratchet keeps its ground."
    )


def test_a_write_fails_unless_listed_under_writes(tmp_path: Path) -> None:
    files = {"w.py": "def f(server_args):\n    server_args.tp_size = 2\n"}
    allow = [AllowEntry("pkg/w.py", "f", "tp_size", "please")]
    messages = _run(tmp_path, files, allow)
    assert messages[0] == (
        "pkg/w.py:2 (f): writes the raw record: `server_args.tp_size = ...`; override the leaf it "
        'means with get_context().override("<module>:<function>", leaf=...), or move it into the '
        "resolution phase (a function listed in scan.resolution, run before publish).\n"
        "    If it must stay for now, list it with a reason under `writes:` in schema/ratchet.yaml:\n"
        "      - {file: pkg/w.py, function: f, leaf: tp_size, reason: <why this write stays>}"
    )
    assert "stale allowlist entry" in messages[1]  # a write is not a read


def test_setattr_is_a_write(tmp_path: Path) -> None:
    files = {"w.py": "def f(server_args, v):\n    setattr(server_args, 'page_size', v)\n"}
    (message,) = _run(tmp_path, files, [])
    assert message.startswith("pkg/w.py:2 (f): writes the raw record: `setattr(server_args, 'page_size', v)`")


def test_a_renamed_raw_accessor_fails(tmp_path: Path) -> None:
    files = {"r.py": "from configbags.generated.accessors import get_server_args as gsa\n"}
    (message,) = _run(tmp_path, files, [])
    assert message == (
        "pkg/r.py:1 (<module>): the raw accessor is renamed (`import get_server_args as gsa`); a "
        "renamed accessor hides reads from review and cannot be allowlisted. Read through the "
        "generated accessors, or keep the name get_server_args."
    )


def test_an_unreadable_file_fails(tmp_path: Path) -> None:
    (message,) = _run(tmp_path, {"ok.py": PLAIN, "bad.py": "def (:\n"}, [])
    assert message == (
        "pkg/bad.py: could not be scanned: syntax error at line 1: invalid syntax; not scanned. "
        "Raw reads in it would go unseen: fix the file, or add it to scan.excludes in schema/ratchet.yaml."
    )


def test_a_scan_that_read_too_few_files_fails(tmp_path: Path) -> None:
    (message,) = _run(tmp_path, {"a.py": PLAIN, "b.py": PLAIN}, [], min_files=5)
    assert message == (
        "the scan read 2 files under roots ['pkg'] (2 listed), fewer than the 5 expected; a scan "
        "that reads nothing passes everything: check scan.roots in schema/ratchet.yaml, or, if the "
        "engine really has fewer files, lower scan.min_files there (or pass --min-files)."
    )


def test_entries_need_a_reason_and_must_be_unique(tmp_path: Path) -> None:
    entries = [FULL_ALLOWLIST[0], FULL_ALLOWLIST[0], attrs.evolve(FULL_ALLOWLIST[1], reason=" ")]
    messages = _run(tmp_path, {"reader.py": READER}, entries)
    assert messages == [
        "schema/ratchet.yaml: duplicate allowlist entry {file: pkg/reader.py, function: Foo.bar, "
        "leaf: tp_size}; keep one.",
        "schema/ratchet.yaml: allowlist entry {file: pkg/reader.py, function: Foo.baz, leaf: "
        "page_size} has no reason; say why this read stays raw.",
    ]


def test_allowlist_entries_may_be_mappings(tmp_path: Path) -> None:
    entries = [attrs.asdict(e) for e in FULL_ALLOWLIST]
    assert _run(tmp_path, {"reader.py": READER}, entries) == []  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the CLI


def _schema(project: Path, allowlist: list[dict[str, str]] | None = None, roots: tuple[str, ...] = ("pkg",)) -> Path:
    schema = project / "schema"
    (schema / "namespaces").mkdir(parents=True, exist_ok=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (schema / "namespaces" / "schedule.yaml").write_text(
        "namespace: schedule\ndoc: d\nleaves:\n  page_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    data = {
        "scan": {"roots": list(roots), "excludes": [], "raw_accessor": "get_server_args",
                 "record_class": "ServerArgs", "record_attributes": ["server_args"]},
        "allowlist": allowlist or [],
    }
    (schema / "ratchet.yaml").write_text("# keep this comment\n" + yaml.safe_dump(data, sort_keys=False))
    (schema / "roles.yaml").write_text(ROLES_YAML)  # the schema loader needs a whole schema
    return schema


MANY = {f"filler{i}.py": PLAIN for i in range(5)}


def test_cli_check_passes_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    schema = _schema(project, [attrs.asdict(e) for e in FULL_ALLOWLIST])
    assert main(["check", "--schema", str(schema)]) == 0
    assert "ratchet ok: 6 files scanned, 4 raw reads at 2" in capsys.readouterr().out
    (project / "pkg" / "new.py").write_text("def f(server_args):\n    return server_args.tp_size\n")
    assert main(["check", "--schema", str(schema)]) == 1
    out = capsys.readouterr().out
    assert "pkg/new.py:2 (f): a raw read of 'tp_size'" in out
    assert "use cfg.parallel.tp_size instead" in out  # accessor derived from namespaces/


def test_cli_check_asserts_a_non_trivial_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER})
    schema = _schema(project, [attrs.asdict(e) for e in FULL_ALLOWLIST], roots=("pkg", "missing"))
    assert main(["check", "--schema", str(schema)]) == 1
    assert "the scan read 1 files under roots ['missing', 'pkg']" in capsys.readouterr().out


def test_cli_check_against_a_generated_allowlist_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    package = project / "gen_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ratchet_allowlist.py").write_text(textwrap.dedent(f"""\
        from typing import NamedTuple
        class AllowEntry(NamedTuple):
            file: str
            function: str
            leaf: str
            reason: str
        ROOTS = ("pkg",)
        EXCLUDES = ()
        RAW_ACCESSOR = "get_server_args"
        RECORD_CLASS = "ServerArgs"
        RECORD_ATTRIBUTES = ("server_args",)
        ALLOWLIST = (AllowEntry("pkg/reader.py", "Foo.bar", "tp_size", "launch-time check"),)
        ACCESSORS = {ACCESSORS!r}
        """))
    try:
        code = main(["check", "--schema", str(project / "schema"), "--generated", "gen_pkg_for_test"])
    finally:
        for name in [m for m in sys.modules if m.startswith("gen_pkg_for_test")]:
            del sys.modules[name]
    assert code == 1
    out = capsys.readouterr().out
    assert "(Foo.baz): a raw read of 'page_size'" in out
    assert "use get_schedule().page_size instead" in out


def test_cli_init_writes_a_baseline_and_keeps_known_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, "skip.py": READER, **MANY})
    schema = _schema(project, [attrs.asdict(FULL_ALLOWLIST[1])])
    assert main(["init", "--schema", str(schema), "--root", str(project / "pkg"), "--exclude", "pkg/skip.py"]) == 0
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    assert data["scan"]["roots"] == ["pkg"]
    assert data["scan"]["excludes"] == ["pkg/skip.py"]
    assert data["allowlist"] == [
        {"file": "pkg/reader.py", "function": "Foo.bar", "leaf": "tp_size", "reason": "baseline"},
        {"file": "pkg/reader.py", "function": "Foo.baz", "leaf": "page_size", "reason": "draft runner reads its own record"},
    ]
    assert "wrote" in capsys.readouterr().out
    assert main(["check", "--schema", str(schema)]) == 0


def test_cli_init_creates_the_schema_folder_with_a_write_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"w.py": "def f(server_args):\n    server_args.tp_size = 1\n    return server_args.page_size\n"})
    assert main(["init", "--schema", str(project / "schema"), "--root", str(project / "pkg")]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "1 write entries" in out
    assert "next: run `configbags gen" in out
    data = yaml.safe_load((project / "schema" / "ratchet.yaml").read_text())
    assert data["allowlist"] == [{"file": "pkg/w.py", "function": "f", "leaf": "page_size", "reason": "baseline"}]
    assert data["writes"] == [{"file": "pkg/w.py", "function": "f", "leaf": "tp_size", "reason": "baseline"}]


def test_cli_check_is_green_right_after_init(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {
        "w.py": "def f(server_args):\n    server_args.tp_size = 1\n    return server_args.page_size\n",
        "r.py": "class ServerArgs:\n    def __post_init__(self):\n        self.tp_size = 2\n",
        **MANY,
    }
    schema = _schema(_project(tmp_path, files))
    init = ["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]
    assert main([*init, "--resolution", "pkg/r.py:ServerArgs"]) == 0
    assert "overwrote" in capsys.readouterr().out  # _schema wrote one
    assert main(["check", "--schema", str(schema)]) == 0
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    # the resolution phase's write is allowed, so it is not in the baseline
    assert [e["function"] for e in data["writes"]] == ["f"]
    assert data["scan"]["resolution"] == ["pkg/r.py:ServerArgs"]


def test_cli_update_removes_stale_entries_and_never_adds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    stale = {"file": "pkg/old.py", "function": "f", "leaf": "tp_size", "reason": "gone now"}
    schema = _schema(project, [attrs.asdict(FULL_ALLOWLIST[0]), stale])  # Foo.baz is missing
    assert main(["update", "--schema", str(schema)]) == 0
    assert "removed stale entry: pkg/old.py f tp_size" in capsys.readouterr().out
    text = (schema / "ratchet.yaml").read_text()
    assert text.startswith("# keep this comment\n")
    assert yaml.safe_load(text)["allowlist"] == [attrs.asdict(FULL_ALLOWLIST[0])]


def test_cli_scan_lists_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER})
    schema = _schema(project)
    assert main(["scan", "--schema", str(schema)]) == 0
    out = capsys.readouterr().out
    assert "pkg/reader.py:9: Foo.baz: read page_size (attribute, attribute)" in out
    assert "1 files listed, 1 scanned" in out


def test_cli_reports_a_missing_ratchet_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--schema", str(tmp_path / "schema")]) == 2
    assert "ratchet init --root DIR" in capsys.readouterr().err


def test_the_configbags_dispatcher_routes_ratchet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.cli import main as configbags_main

    project = _project(tmp_path, {"reader.py": READER})
    schema = _schema(project)
    assert configbags_main(["ratchet", "scan", "--schema", str(schema)]) == 0
    assert "read tp_size" in capsys.readouterr().out


def test_cli_init_keeps_min_files(tmp_path: Path) -> None:
    # `ratchet init` rewrites ratchet.yaml; it must not drop (and so loosen) the floor.
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    schema = _schema(project)
    text = (schema / "ratchet.yaml").read_text().replace("  raw_accessor:", "  min_files: 3\n  raw_accessor:")
    (schema / "ratchet.yaml").write_text(text)
    assert main(["init", "--schema", str(schema), "--root", str(project / "pkg")]) == 0
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["scan"]["min_files"] == 3


def test_cli_loads_ratchet_yaml_through_the_schema_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The meta-schema requires at least one root; `roots: []` must not quietly become the
    # default root, and the error is a clean message (exit 2), not a traceback.
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    schema = _schema(project, roots=())
    assert main(["check", "--schema", str(schema)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("configbags ratchet: the schema in ")
    assert "ratchet.yaml" in err and "roots" in err


def test_cli_reports_an_invalid_namespace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    schema = _schema(project)
    (schema / "namespaces" / "parallel.yaml").write_text("namespace: parallel\ndoc: d\nleaves: {tp_size: {type: int}}\n")
    assert main(["scan", "--schema", str(schema)]) == 2
    assert "parallel.yaml" in capsys.readouterr().err


def test_check_output_lists_skipped_generated_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = "# Code generated by codegen from 2 schema files. DO NOT EDIT.\n"
    files = {
        "reader.py": READER,
        **MANY,
        "gen/accessors.py": header + "def get_server_args():\n    return _RECORD\n",
        "gen/ratchet_allowlist.py": header + "ALLOWLIST = ()\n",
    }
    project = _project(tmp_path, files)
    schema = _schema(project, [attrs.asdict(e) for e in FULL_ALLOWLIST])
    assert main(["check", "--schema", str(schema)]) == 0
    assert "skipped 2 generated files in generated packages: pkg/gen\n" in capsys.readouterr().out


def test_roots_outside_the_project_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    outside = _project(tmp_path / "elsewhere", {"reader.py": READER, **MANY}) / "pkg"
    schema = _schema(project)
    assert main(["init", "--schema", str(schema), "--root", str(outside)]) == 0
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    assert data["scan"]["roots"] == [outside.resolve().as_posix()]
    assert {e["file"] for e in data["allowlist"]} == {f"{outside.resolve().as_posix()}/reader.py"}
    assert main(["check", "--schema", str(schema)]) == 0
    assert "ratchet ok: 6 files scanned" in capsys.readouterr().out


def test_a_bad_ratchet_yaml_is_reported_as_the_generator_reports_it(tmp_path: Path) -> None:
    schema = _schema(_project(tmp_path, {"reader.py": READER}), [
        {"file": "pkg/reader.py", "function": "Foo.bar", "leaf": "tp_size", "reason": "ok"},  # too short
    ])
    with pytest.raises(RatchetConfigError, match=r"schema/ratchet.yaml:\d+: allowlist.0.reason: 'ok' is too short"):
        load_from_schema(schema, cache=False)
    # a sound one loads the same through the fast path, the cache and the generated module
    good = _schema(tmp_path, [attrs.asdict(FULL_ALLOWLIST[0])])
    fresh, cached, again = (load_from_schema(good, cache=c) for c in (False, True, True))
    assert fresh == cached == again
    assert fresh.allowlist[0].reason == FULL_ALLOWLIST[0].reason and fresh.policies == {
        "tp_size": "startup", "page_size": "startup",
    }


_ENTRY_TEXT = st.one_of(
    st.sampled_from(["", "a", "ab", "why", "tp_size", "$SGLANG_X", "Context.state", "dist.state_dict", "*", "x y",
                     "9x", "$", "Context.states"]),
    st.text(max_size=6),
)
_ENTRY = st.one_of(
    st.dictionaries(st.sampled_from(["file", "function", "leaf", "reason", "reads", "extra"]),
                    st.one_of(_ENTRY_TEXT, st.integers(), st.floats(), st.booleans(), st.none()), max_size=6),
    st.builds(lambda reads: {"file": "f.py", "function": "f", "leaf": "*", "reason": "why", "reads": reads},
              st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), _ENTRY_TEXT)),
    st.lists(st.integers(), max_size=2), st.none(), _ENTRY_TEXT,
)


@settings(max_examples=300, deadline=None)
@given(entry=_ENTRY)
def test_the_fast_entry_check_agrees_with_the_meta_schema(entry: object) -> None:
    """A cold check holds ratchet.yaml's entry lists to the meta-schema by a plain loop
    (jsonschema is slow on thousands of entries): the two must accept the same entries."""
    import json

    import jsonschema

    from configbags.codegen.load import META_DIR
    from configbags.migrate.settings import _entry_check

    meta = json.loads((META_DIR / "ratchet.schema.json").read_text(encoding="utf-8"))
    item = meta["$defs"]["entries"]["items"]
    assert _entry_check(item)(entry) == jsonschema.Draft202012Validator(item).is_valid(entry)


def test_cli_update_removes_a_duplicate_entry_keeping_the_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"reader.py": READER, **MANY})
    first, second = attrs.asdict(FULL_ALLOWLIST[0]), {**attrs.asdict(FULL_ALLOWLIST[0]), "reason": "said twice"}
    schema = _schema(project, [first, attrs.asdict(FULL_ALLOWLIST[1]), second])
    assert main(["check", "--schema", str(schema)]) == 1
    assert "duplicate allowlist entry" in capsys.readouterr().out
    assert main(["update", "--schema", str(schema)]) == 0
    assert "removed duplicate entry: pkg/reader.py Foo.bar tp_size" in capsys.readouterr().out
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    assert data["allowlist"] == [first, attrs.asdict(FULL_ALLOWLIST[1])]
    assert main(["check", "--schema", str(schema)]) == 0
