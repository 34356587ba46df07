"""The scanner: one fixture file per spelling, checked exactly against its markers, plus
robustness (bad files are reported and the scan goes on) and the content-hash cache."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from configbags.migrate.scan import ScanSettings, scan_source, scan_tree

SPELLINGS = Path(__file__).parent / "fixtures" / "ratchet_spellings"
SETTINGS = ScanSettings(roots=(".",), record_dicts=("global_server_args_dict",))
_MARKER = re.compile(r"#\s*((?:read|write|renamed):.*)$")


def _expected(text: str) -> set[tuple[str, int, str]]:
    """(kind, line, leaf) from `# read: a, b` / `# write: a` / `# renamed: n` markers."""
    found: set[tuple[str, int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER.search(line)
        if not match:
            continue
        kind = ""
        for token in re.split(r",\s*", match.group(1)):
            if ":" in token:
                kind, token = (part.strip() for part in token.split(":", 1))
            found.add((kind, number, token.strip()))
    return found


def _reported(data: bytes) -> set[tuple[str, int, str]]:
    result = scan_source(data, SETTINGS)
    assert result.problem is None
    reported = {("read", line, leaf) for _, leaf, line, *_ in result.reads}
    for _, line, kind, leaf, *_ in result.violations:
        reported.add(("write" if kind in ("write", "dict_write") else "renamed", line, leaf))
    return reported


@pytest.mark.parametrize("name", sorted(p.name for p in SPELLINGS.glob("*.py")))
def test_spelling_fixture_is_reported_exactly(name: str) -> None:
    data = (SPELLINGS / name).read_bytes()
    expected = _expected(data.decode())
    assert expected or name == "negatives.py", "a fixture without markers tests nothing"
    assert _reported(data) == expected


def test_every_spelling_has_a_fixture() -> None:
    names = {p.stem for p in SPELLINGS.glob("*.py")}
    assert {
        "accessor_bare",
        "accessor_module_qualified",
        "getattr_forms",
        "alias_local",
        "alias_module",
        "alias_self",
        "parameter_annotated",
        "record_attribute",
        "renamed_import",
        "writes",
        "wrapper",
        "negatives",
        "alias_with",
        "alias_loop",
        "alias_unpack",
        "alias_rebound",
        "record_dict",
        "class_attribute",
        "method_calls",
    } <= names


def _reads(source: str, settings: ScanSettings = SETTINGS) -> list[tuple[object, ...]]:
    rows = scan_source(source.encode(), settings).reads
    return [(fn, leaf, line, via, form) for fn, leaf, line, _, _, _, via, form, *_ in rows]


def test_qualnames_and_how_the_record_was_reached() -> None:
    source = (
        "from configbags.generated.accessors import get_server_args\n"
        "class Outer:\n"
        "    class Inner:\n"
        "        def method(self, server_args):\n"
        "            def helper():\n"
        "                return server_args.tp_size\n"
        "            return helper\n"
        "X = get_server_args().pp_size\n"
        "class Body:\n"
        "    Y = get_server_args().dp_size\n"
    )
    assert _reads(source) == [
        ("Outer.Inner.method.helper", "tp_size", 6, "parameter", "attribute"),
        ("<module>", "pp_size", 8, "accessor", "attribute"),
        ("Body", "dp_size", 10, "accessor", "attribute"),
    ]


def test_settings_name_the_raw_record() -> None:
    settings = ScanSettings(
        roots=(".",), raw_accessor="global_config", record_class="EngineArgs", record_attributes=("engine_args",)
    )
    source = (
        "def f(e: EngineArgs):\n    return e.a + global_config().b + self.engine_args.c + get_server_args().d\n"
    )
    assert [leaf for _, leaf, *_ in _reads(source, settings)] == ["a", "b", "c"]


def test_columns_are_utf8_byte_offsets_like_ast() -> None:
    source = "def f(server_args):\n    return 'é' + server_args.tp_size\n"
    (read,) = scan_source(source.encode(), SETTINGS).reads
    assert read[2:5] == (2, 18, 2)  # line 2, col 18 in bytes (the character column is 17)


def _tree(tmp_path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return tmp_path


GOOD = b"from configbags.generated.accessors import get_server_args\nx = get_server_args().tp_size\n"


def test_bad_files_are_reported_and_the_scan_goes_on(tmp_path: Path) -> None:
    project = _tree(
        tmp_path,
        {
            "a_syntax.py": b"def broken(:\n    pass\n",
            "b_latin1.py": b"x = '\xe9t\xe9'\n",
            "c_huge.py": b"x = 1\n" * 2000,
            "d_nul.py": b"x = 1\x00\n",
            "e_good.py": GOOD,
            "f_declared_latin1.py": (
                b"# -*- coding: latin-1 -*-\nx = '\xe9'\ndef f(server_args):\n    return server_args.pp_size\n"
            ),
        },
    )
    result = scan_tree(project, ScanSettings(roots=("src",), max_bytes=5000))
    problems = dict(result.problems)
    assert problems["src/a_syntax.py"].startswith("syntax error at line 1")
    assert problems["src/b_latin1.py"].startswith("not UTF-8")
    assert problems["src/c_huge.py"].startswith("too large to scan (12000 bytes > 5000)")
    assert "src/d_nul.py" in problems
    assert [(r.file, r.leaf) for r in result.reads] == [
        ("src/e_good.py", "tp_size"),
        ("src/f_declared_latin1.py", "pp_size"),
    ]
    assert result.files_parsed == 2


HEADER = b"# Code generated by codegen from 3 schema files. DO NOT EDIT.\n"


def test_roots_excludes_and_generated_files(tmp_path: Path) -> None:
    project = _tree(
        tmp_path,
        {
            "keep.py": GOOD,
            "skip_me.py": GOOD,
            "vendored/lib.py": GOOD,
            "gen/accessors.py": HEADER + GOOD,
            "gen/ratchet_allowlist.py": HEADER + b"ALLOWLIST = ()\n",
            "notes.txt": GOOD,
        },
    )
    settings = ScanSettings(roots=("src",), excludes=("src/skip_*.py", "src/vendored"))
    result = scan_tree(project, settings)
    assert result.files == ("src/gen/accessors.py", "src/gen/ratchet_allowlist.py", "src/keep.py")
    # the header labels a file, never hides a read: accessors.py reads, so it is scanned
    assert [r.file for r in result.reads] == ["src/gen/accessors.py", "src/keep.py"]
    assert (result.files_parsed, result.files_generated) == (2, 1)
    assert result.generated_files == ("src/gen/ratchet_allowlist.py",)


@pytest.mark.parametrize("cached", [False, True])
def test_a_generated_header_alone_does_not_hide_reads(tmp_path: Path, cached: bool) -> None:
    # A hand-written file may not opt out by copying the generated header: outside a
    # generated package (a folder whose accessors.py and ratchet_allowlist.py are
    # generated) it is scanned like any other file, also when served from the cache.
    project = _tree(
        tmp_path,
        {
            "sneaky.py": HEADER + GOOD,
            "half/accessors.py": HEADER + GOOD,  # no generated ratchet_allowlist.py beside it
            "fake/accessors.py": HEADER + GOOD,
            "fake/ratchet_allowlist.py": b"ALLOWLIST = ()\n",  # hand-written: no header
        },
    )
    cache = tmp_path / "cache.json" if cached else None
    settings = ScanSettings(roots=("src",))
    scan_tree(project, settings, cache_path=cache)
    result = scan_tree(project, settings, cache_path=cache)
    assert sorted(r.file for r in result.reads) == [
        "src/fake/accessors.py",
        "src/half/accessors.py",
        "src/sneaky.py",
    ]
    assert result.files_generated == 0


def test_warm_scan_is_served_from_the_content_hash_cache(tmp_path: Path) -> None:
    files = {f"m{i}.py": GOOD.replace(b"tp_size", f"leaf_{i}".encode()) for i in range(4)}
    project = _tree(tmp_path, files)
    cache = tmp_path / "cache.json"
    settings = ScanSettings(roots=("src",))
    cold = scan_tree(project, settings, cache_path=cache)
    assert cold.files_from_cache == 0
    warm = scan_tree(project, settings, cache_path=cache)
    assert warm.files_from_cache == 4
    assert warm.reads == cold.reads

    (project / "src" / "m1.py").write_bytes(GOOD.replace(b"tp_size", b"changed"))
    edited = scan_tree(project, settings, cache_path=cache)
    assert edited.files_from_cache == 3
    assert "changed" in {r.leaf for r in edited.reads}

    other = ScanSettings(roots=("src",), raw_accessor="other_accessor")
    assert scan_tree(project, other, cache_path=cache).files_from_cache == 0


def test_a_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    project = _tree(tmp_path, {"m.py": GOOD})
    cache = tmp_path / "cache.json"
    cache.write_text("{not json")
    result = scan_tree(project, ScanSettings(roots=("src",)), cache_path=cache)
    assert [r.leaf for r in result.reads] == ["tp_size"]


def _origins(source: str) -> dict[tuple[str, str], str]:
    """(function, leaf) -> origin of each read in `source`."""
    rows = scan_source(textwrap.dedent(source).encode(), SETTINGS).reads
    return {(row[0], row[1]): row[8] for row in rows}


def test_origin_says_which_record_is_read() -> None:
    # What `ratchet fix` may assume: only "process" reads are provably the published record.
    assert _origins(
        """\
        from contextlib import nullcontext
        from configbags.generated.accessors import get_server_args
        from configbags.generated.server_args import ServerArgs

        def fetched():
            args = get_server_args()
            return args.tp_size

        def built(argv):
            args = ServerArgs.from_cli(argv)
            return args.tp_size

        def handed(other: ServerArgs):
            return other.tp_size

        def attribute(self):
            return self.server_args.tp_size

        def either(argv, flag):
            args = get_server_args() if flag else ServerArgs.from_cli(argv)
            return args.tp_size

        def rebound(argv):
            args = get_server_args()
            args = ServerArgs(tp_size=2)
            return args.tp_size

        def managed(lock):
            with lock(get_server_args()) as sa:
                return sa.tp_size

        def nulled():
            with nullcontext(get_server_args()) as sa:
                return sa.tp_size

        def defaulted(a=get_server_args()):
            return a.tp_size

        def helper():
            return get_server_args()

        def via_wrapper():
            return helper().tp_size

        def build_one(argv):
            return ServerArgs.from_cli(argv)

        def via_builder(argv):
            return build_one(argv).tp_size
        """
    ) == {
        ("fetched", "tp_size"): "process",
        # built from the command line: the config, not the published record yet
        ("built", "tp_size"): "built",
        ("handed", "tp_size"): "held",
        ("attribute", "tp_size"): "held",
        ("either", "tp_size"): "built",
        ("rebound", "tp_size"): "constructed",  # ServerArgs(tp_size=2): literals only
        ("managed", "tp_size"): "wrapped",
        ("nulled", "tp_size"): "process",
        # a caller may pass another record for `a`: held, like an annotated parameter
        ("defaulted", "tp_size"): "held",
        ("via_wrapper", "tp_size"): "process",
        ("via_builder", "tp_size"): "built",
    }


def test_a_binding_in_another_scope_does_not_taint_an_alias() -> None:
    # Rebinding taints only the scope that binds: a comprehension, lambda, nested function
    # or method that binds the same name has its own variable (unless it says nonlocal or
    # global), and `global NAME` without a binding changes nothing.
    assert _origins(
        """\
        from configbags.generated.accessors import get_server_args

        ARGS = get_server_args()

        def only_declares():
            global ARGS
            return ARGS.tp_size

        def shadowing_elsewhere(items):
            sa = get_server_args()
            names = [sa for sa in items]
            pick = lambda sa: sa
            def inner(sa=None):
                sa = 1
                return sa
            return sa.page_size, names, pick, inner

        def rebinding_a_copy_only(other):
            sa = get_server_args()
            copy = sa
            copy = other
            return sa.attention_backend if copy else None
        """
    ) == {
        ("only_declares", "tp_size"): "process",
        ("shadowing_elsewhere", "page_size"): "process",
        ("rebinding_a_copy_only", "attention_backend"): "process",
    }


def test_a_rebound_name_taints_its_copies_whatever_the_order() -> None:
    # flow-insensitive: the copy is made before the rebinding, the read after; and the
    # taint follows the copy into a closure
    assert _origins(
        """\
        from configbags.generated.accessors import get_server_args

        def f(other):
            sa = get_server_args()
            copy = sa
            def inner():
                return copy.tp_size
            sa = other
            return inner
        """
    ) == {("f.inner", "tp_size"): "rebound"}


def test_a_write_says_which_record_it_changes() -> None:
    """A copy reads as the record but a write changes only the copy; a replaced record
    (dataclasses.replace, attrs.evolve) is a new record, for reads and writes alike."""
    source = textwrap.dedent(
        """\
        import copy
        import dataclasses

        from configbags.generated.accessors import get_server_args
        from configbags.generated.server_args import ServerArgs

        def process():
            get_server_args().tp_size = 1

        def held(server_args: ServerArgs):
            server_args.tp_size = 2

        def copied():
            draft = copy.deepcopy(get_server_args())
            draft.tp_size = 3
            return draft.page_size

        def replaced():
            draft = dataclasses.replace(get_server_args(), tp_size=4)
            draft.page_size = 5
            return draft.dp_size

        def klass():
            ServerArgs.tp_size = 6
        """
    )
    result = scan_source(source.encode(), SETTINGS)
    assert {(v[0], v[3], v[5]) for v in result.violations} == {
        ("process", "tp_size", "process"), ("held", "tp_size", "held"), ("copied", "tp_size", "copied"),
        ("replaced", "page_size", "replaced"), ("klass", "tp_size", "class"),
    }
    assert _origins(source) == {("copied", "page_size"): "process", ("replaced", "dp_size"): "replaced"}


def test_the_engine_s_compile_warnings_are_neither_printed_nor_errors(tmp_path: Path) -> None:
    import warnings

    from configbags.migrate.scan import scan_source

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning the scan lets out fails here
        result = scan_source(b'x = "\\d"\ny = 1if x else 2\n', ScanSettings(roots=("src",)))
    assert result.problem is None
