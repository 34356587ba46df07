"""Round three's false passes of the read ratchet: the scanner reads files as Python does
(line breaks, encodings, identifiers), sees the spellings that went unseen, names what it
skips, never trusts a forged cache, and reports an unreadable root without a traceback."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml
from hostile.ratchet import ENV_VARS, WHOLE_ENVIRON, executed_reads, source_files
from hostile.strategies import PROFILE
from hypothesis import given

from configbags.migrate.check import check
from configbags.migrate.cli import main as ratchet_main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_source, scan_tree

SETTINGS = ScanSettings(roots=("src",), env_vars=ENV_VARS)
needs_posix = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/proc/self/mem"), reason="needs FIFOs and /proc")
RAW = "from configbags.generated.accessors import get_server_args\n"


def _reported(data: bytes, settings: ScanSettings = SETTINGS) -> set[tuple[str, int]]:
    result = scan_source(data, settings)
    assert result.problem is None, result.problem
    return {(leaf, line) for _, leaf, line, *_ in result.reads}


# ---- 1. the line model and the encoding are Python's


def test_a_lone_cr_in_a_comment_ends_the_line_as_in_python() -> None:
    data = (RAW + "# harmless comment\rx = get_server_args().tp_size\n").encode()
    assert executed_reads(data) == {("tp_size", 3)}
    assert _reported(data) == {("tp_size", 3)}


def test_a_cr_only_file_is_read_line_by_line() -> None:
    data = (RAW + "\n\ndef f():\n    return get_server_args().page_size\nf()\n").replace("\n", "\r").encode()
    assert executed_reads(data) == {("page_size", 5)}
    assert _reported(data) == {("page_size", 5)}


def test_unicode_escape_cannot_hide_a_line_break() -> None:
    # one raw line, a comment to the eye; decoded, the `\x0a` is a line break
    data = b"# coding: unicode_escape\n# nothing here\\x0ax = get_server_args().tp_size\n"
    assert executed_reads(data) == {("tp_size", 3)}
    assert _reported(data) == {("tp_size", 3)}


def test_a_declared_encoding_and_a_bom_are_decoded() -> None:
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\nx = get_server_args().tp_size\n".encode("latin-1")
    assert _reported(latin) == {("tp_size", 3)}
    bom = "\ufeff# caf\xe9\u2028\x0c\x1c\nx = get_server_args().tp_size\n".encode()
    assert _reported(bom) == {("tp_size", 2)}


def test_characters_python_does_not_break_at_keep_the_lines() -> None:
    # str.splitlines breaks at each of these, Python's tokenizer at none
    data = "# \x0b \x0c \x1c \x1d \x1e \x85 \u2028 \u2029\n\x0cx = get_server_args().tp_size\n".encode()
    assert executed_reads(data) == {("tp_size", 2)}
    assert _reported(data) == {("tp_size", 2)}


def test_an_nfkc_spelling_of_the_accessor_is_the_accessor() -> None:
    data = "x = \uff47et_server_args().tp_size\n".encode()
    assert executed_reads(data) == {("tp_size", 1)}
    assert _reported(data) == {("tp_size", 1)}


def test_a_conflicting_bom_and_declaration_is_unreadable() -> None:
    data = b"\xef\xbb\xbf# coding: latin-1\nx = 1\n"
    assert executed_reads(data) is None
    assert scan_source(data, SETTINGS).problem is not None


@PROFILE
@given(source_files())
def test_every_read_python_performs_is_reported(data: bytes) -> None:
    """For any file: what executing it reads is reported, at its line, or the file is
    reported unreadable (only where Python refuses it too)."""
    executed = executed_reads(data)
    result = scan_source(data, SETTINGS)
    if executed is None:
        return  # Python refuses it: nothing runs (and the scanner may refuse it too)
    assert result.problem is None, f"Python compiles it, the scanner says: {result.problem}"
    reported = {(leaf, line) for _, leaf, line, *_ in result.reads}
    # a read the scanner cannot resolve (reflection: a name in a string, code run from one)
    # accounts for every read on its line
    unresolved = {line for _, _, line, *_, via, _, _ in result.reads if via in ("reflection", "private")}
    # where the whole environment is read (iterated, copied by iteration), any environment
    # read reported on that line accounts for what was read there
    whole = {line for leaf, line in executed if leaf == WHOLE_ENVIRON}
    env_lines = {line for leaf, line in reported if leaf.startswith("$")}
    for leaf, line in executed:
        if leaf.startswith("$") and line in whole:
            assert line in env_lines, (leaf, line, reported)
            continue
        dynamic = ("$?" if leaf.startswith("$") else "*", line)
        assert (leaf, line) in reported or dynamic in reported or line in unresolved, (leaf, line, reported)
    # (a file may read nothing: a line break escaped under unicode_escape is no line break)


# ---- 2. spellings that went unseen


def test_attrgetter_reads_the_record() -> None:
    data = b'import operator\nx = operator.attrgetter("tp_size", "page_size.x")(get_server_args())\n'
    assert _reported(data) == {("tp_size", 2), ("page_size", 2)}
    assert executed_reads(data) == {("tp_size", 2), ("page_size", 2)}


def test_match_class_patterns_read_the_record() -> None:
    data = (
        b"def f(thing):\n"
        b"    match thing:\n"
        b"        case ServerArgs(tp_size=t):\n"
        b"            return t\n"
        b"    match get_server_args():\n"
        b"        case object(page_size=p):\n"
        b"            return p\n"
        b"        case sa:\n"
        b"            return sa.dp_size\n"
        b"def g(rec: ServerArgs):\n"
        b"    match rec:\n"
        b"        case [ServerArgs(ep_size=e)] | ServerArgs(nnodes=e):\n"
        b"            return e\n"
        b"        case ServerArgs(1, 2):\n"
        b"            return 0\n"
    )
    assert _reported(data) == {
        ("tp_size", 3), ("page_size", 6), ("dp_size", 9), ("ep_size", 12), ("nnodes", 12), ("*", 14)
    }


def test_env_names_from_constants_and_concatenations_are_read() -> None:
    data = (
        b"import os\n"
        b'PREFIX = "SGLANG_"\n'
        b'PAGE = PREFIX + "PAGE_SIZE"\n'
        b"a = os.environ[PAGE]\n"
        b'b = os.getenv(PREFIX + "TP_SIZE")\n'
        b'c = os.environ.get(f"{PREFIX}TP_SIZE")\n'
        b"def f(name):\n"
        b"    return os.environ[name]\n"
    )
    assert _reported(data) == {("$SGLANG_PAGE_SIZE", 4), ("$SGLANG_TP_SIZE", 5), ("$SGLANG_TP_SIZE", 6), ("$?", 8)}


def test_an_unresolved_env_read_fails_the_check_unless_an_entry_explains_it() -> None:
    from configbags.migrate.scan import Read, ScanResult

    read = Read("src/a.py", "f", "$?", 8, 11, 8, 29, "environ", "environ_subscript")
    result = ScanResult(reads=(read,), violations=(), problems=(), files=("src/a.py",), files_parsed=1,
                        files_generated=0, files_from_cache=0)
    report = check(result, [], {}, min_files=1)
    assert not report.ok
    assert "cannot resolve" in report.render() and "$?" in report.render()
    entry = {"file": "src/a.py", "function": "f", "leaf": "$?", "reason": "reads the launcher's own variables"}
    assert check(result, [entry], {}, min_files=1).ok


def test_getattr_of_the_record_class_is_a_class_read() -> None:
    data = b'def f(k):\n    return getattr(ServerArgs, k), getattr(ServerArgs, "base_gpu_id")\n'
    assert _reported(data) == {("*", 2), ("base_gpu_id", 2)}


def test_whole_uses_and_local_imports_of_the_record_dict_are_read() -> None:
    settings = ScanSettings(roots=("src",), record_dicts=("global_server_args_dict",))
    data = (
        b"def f(log):\n"
        b"    from engine.batch import global_server_args_dict\n"
        b'    a = global_server_args_dict.get("attention_backend")\n'
        b'    b = global_server_args_dict.get("page_size", 1)\n'
        b"    log(dict(global_server_args_dict))\n"
        b'    print(f"{global_server_args_dict}")\n'
        b"    return global_server_args_dict\n"
    )
    assert _reported(data, settings) == {("attention_backend", 3), ("page_size", 4), ("*", 5), ("*", 6), ("*", 7)}


ATTACKER_SPELLINGS = {
    "fetchers.py": """\
        import builtins
        import operator
        from operator import attrgetter as ag

        from configbags.generated.accessors import get_server_args

        ga = getattr
        GET_TP = operator.attrgetter("tp_size")


        def imported_getter():
            return ag("tp_size")(get_server_args())


        def stored_getter():
            return GET_TP(get_server_args())


        def aliased_getattr():
            return ga(get_server_args(), "tp_size"), builtins.getattr(get_server_args(), "tp_size")


        class Runner:
            def fetched_record(self):
                return getattr(self, "server_args").tp_size
        """,
    "readbacks.py": """\
        import importlib
        import operator

        from configbags.generated.accessors import get_context


        def fetched_state():
            return getattr(get_context(), "state"), operator.attrgetter("state.values")(get_context())


        def imported_dist():
            return importlib.import_module("configbags.runtime.dist").state_dict()
        """,
    "environ.py": """\
        import collections
        import os


        def copies():
            return (dict(os.environ.items())["SGLANG_TP_SIZE"], collections.ChainMap(os.environ)["SGLANG_TP_SIZE"],
                    os.environ.copy()["SGLANG_TP_SIZE"], {**os.environ}["SGLANG_TP_SIZE"])


        def looped():
            for key, value in os.environ.items():
                print(key, value)
        """,
}


def _tiny_project(tmp_path: Path, files: dict[str, str], allowlist: list[dict[str, str]] | None = None) -> Path:
    for name, text in files.items():
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text(textwrap.dedent(text))
    schema = tmp_path / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(textwrap.dedent("""\
        namespace: parallel
        doc: d
        leaves:
          tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup, env: SGLANG_TP_SIZE}
        """))
    scan = {"roots": ["pkg"], "excludes": [], "raw_accessor": "get_server_args", "record_class": "ServerArgs",
            "record_attributes": ["server_args"], "min_files": 1}
    (schema / "ratchet.yaml").write_text(yaml.safe_dump({"scan": scan, "allowlist": allowlist or []}, sort_keys=False))
    (schema / "roles.yaml").write_text(ROLES_YAML)
    return schema


def test_the_attackers_spellings_fail_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = _tiny_project(tmp_path, ATTACKER_SPELLINGS)
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1
    out = capsys.readouterr().out
    failing = {tuple(line.split(": ", 1)[0].rsplit(" ", 1)) for line in out.splitlines() if line.startswith("pkg/")}
    assert failing == {
        ("pkg/fetchers.py:12", "(imported_getter)"),
        ("pkg/fetchers.py:16", "(stored_getter)"),
        ("pkg/fetchers.py:20", "(aliased_getattr)"),
        ("pkg/fetchers.py:25", "(Runner.fetched_record)"),
        ("pkg/readbacks.py:8", "(fetched_state)"),
        ("pkg/readbacks.py:12", "(imported_dist)"),
        ("pkg/environ.py:6", "(copies)"),
        ("pkg/environ.py:11", "(looped)"),
    }, out
    assert "environment used whole" in out


def test_an_unresolved_env_read_can_be_explained_in_ratchet_yaml(tmp_path: Path) -> None:
    # the entry the failure asks for is one ratchet.yaml accepts, and init writes it
    files = {"environ.py": "import os\n\n\ndef named(name):\n    return os.environ[name]\n\n\n"
                           "def looped():\n    for key, value in os.environ.items():\n        print(key, value)\n"}
    entry = {"file": "pkg/environ.py", "function": "named", "leaf": "$?", "reason": "reads the launcher's own variables"}
    schema = _tiny_project(tmp_path, files, [entry])
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1  # looped is not explained
    assert ratchet_main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert [(e["function"], e["leaf"], e["reason"]) for e in allowlist] == [
        ("looped", "$?", "baseline"), ("named", "$?", "reads the launcher's own variables")
    ]
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 0


# ---- 3. nothing skipped without a word


def test_pyw_and_upper_case_files_are_scanned_and_skipped_folders_listed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in ("tool.pyw", "LOUD.PY", "ok.py", ".venv/lib/x.py", "node_modules/y.py", "pkg/__pycache__/z.py"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("x = get_server_args().tp_size\n")
    (src / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # plainly a virtualenv
    result = scan_tree(tmp_path, SETTINGS)
    assert sorted(r.file for r in result.reads) == [
        "src/LOUD.PY", "src/ok.py", "src/pkg/__pycache__/z.py", "src/tool.pyw"
    ]
    assert result.skipped_folders == ("src/.venv", "src/node_modules")
    rendered = check(result, [], {}, min_files=1).render()
    assert "not scanned: 2 folders" in rendered and "src/.venv, src/node_modules" in rendered


# ---- 5. an unreadable root is an error naming it, never a traceback


@needs_posix
def test_a_root_that_fails_to_read_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mem.py").symlink_to("/proc/self/mem")
    os.mkfifo(tmp_path / "pipe.py")
    settings = ScanSettings(roots=("mem.py", "pipe.py"))
    result = scan_tree(tmp_path, settings)
    assert dict(result.problems) == {
        "mem.py": "cannot read: Input/output error",
        "pipe.py": "not a regular file (a FIFO); never opened",
    }
    rendered = check(result, [], {}, min_files=0).render()
    assert "mem.py: could not be scanned: cannot read: Input/output error" in rendered


def test_a_star_import_may_rebind_a_module_constant() -> None:
    data = b'import os\nfrom consts import *\nPAGE = "SGLANG_PAGE_SIZE"\nx = os.environ[PAGE]\n'
    assert _reported(data) == {("$?", 4)}


# ---- round three, the outside attack: reflection, private parts, other routes, carriers

REFLECTION_SPELLINGS = {
    "reflected.py": """\
        import functools
        import operator
        import sys

        import legacy.server_args as S
        from configbags.generated.accessors import get_context, get_server_args


        def formatted():
            return "{0.tp_size}".format(get_server_args())


        def by_dunder():
            return object.__getattribute__(get_context(), "state")


        def reduced():
            return functools.reduce(getattr, ["tp_size"], get_server_args())


        def private_global():
            return S._GLOBAL_SERVER_ARGS.tp_size


        def private_state():
            return get_context()._state


        def routed():
            return sys.modules["configbags.runtime.dist"].state_dict()


        def carried():
            return [get_server_args()][0].tp_size
        """,
    "environ.py": """\
        import os
        import subprocess


        def in_bytes():
            return os.environb[b"SGLANG_TP_SIZE"], subprocess.os.getenv("SGLANG_TP_SIZE")


        def expanded():
            return os.path.expandvars("${SGLANG_TP_SIZE}")
        """,
}


def test_reflection_private_parts_routes_and_carriers_fail_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _tiny_project(tmp_path, REFLECTION_SPELLINGS)
    (tmp_path / "pkg" / "ok.py").write_text("import os\n\ndef fine(self):\n    return vars(self), self._x, os.environb is None\n")
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1
    out = capsys.readouterr().out
    failing = {tuple(line.split(": ", 1)[0].rsplit(" ", 1)) for line in out.splitlines() if line.startswith("pkg/")}
    assert failing == {
        ("pkg/reflected.py:10", "(formatted)"),
        ("pkg/reflected.py:14", "(by_dunder)"),
        ("pkg/reflected.py:18", "(reduced)"),
        ("pkg/reflected.py:22", "(private_global)"),
        ("pkg/reflected.py:26", "(private_state)"),
        ("pkg/reflected.py:30", "(routed)"),
        ("pkg/reflected.py:34", "(carried)"),
        ("pkg/environ.py:6", "(in_bytes)"),
        ("pkg/environ.py:10", "(expanded)"),
    }, out
    assert "a raw read of 'tp_size' through a str.format field of the raw record" in out
    assert "a private part of the record's module" in out
    assert "a fetcher (getattr, attrgetter, an importer) passed on as a value" in out
    assert "the raw record carried by a lambda" in out
