"""Round twenty-four's findings about the read ratchet (an outside attack): a stray file
beside the record's home module (`server_args.PY`, `server_args.pyw`, a `.pth`) took the
home's module name, so its importers' reads through a second getter went unseen (R24-1);
and a home scanned with the rest (not excluded) offered its importers no second getter at
all (R24-2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, file_reads, write_pkg

from configbags.migrate.flows import module_names
from configbags.migrate.scan import ScanSettings, scan_tree

HOME = (
    "class ServerArgs:\n    pass\n_A = None\n"
    "def get_server_args() -> ServerArgs:\n    return _A\n"
    "def get_global_server_args():\n    return _A\n"
)
DECOY = "def get_global_server_args():\n    return 5\n"
USER = (
    "from pkg.server_args import get_global_server_args\n"
    "def f():\n    return get_global_server_args().page_size\n"
)


def _scan(root: Path, files: dict[str, str], excludes: tuple[str, ...]):  # type: ignore[no-untyped-def]
    write_pkg(root, files)
    return scan_tree(root, ScanSettings(roots=("pkg",), excludes=excludes))


# ---- R24-1: only a file an import loads stands for a module


@pytest.mark.parametrize("stray", ["server_args.PY", "server_args.Py", "server_args.pyw", "server_args.pth"])
def test_a_stray_file_beside_an_excluded_home_does_not_take_its_name(tmp_path: Path, stray: str) -> None:
    result = _scan(tmp_path, {"server_args.py": HOME, "user.py": USER, stray: DECOY}, ("pkg/server_args.py",))
    assert fails(result)
    assert ("f", "page_size") in file_reads(result, "pkg/user.py")


def test_module_names_follow_what_an_import_loads() -> None:
    names = module_names([
        "pkg/__init__.py", "pkg/a.PY", "pkg/b.pyw", "pkg/c.pth", "pkg/d.py",
        "pkg/dup.py", "pkg/dup/__init__.py", "pkg/Odd.Py", "pkg/__init__.pyw",
    ])
    assert names["pkg"] == "pkg/__init__.py"
    assert names["pkg.d"] == "pkg/d.py"
    assert names["pkg.dup"] == "pkg/dup/__init__.py"  # the package, as Python imports it
    assert not {"pkg.a", "pkg.b", "pkg.c", "pkg.Odd", "a", "b", "c"} & set(names)


# ---- R24-2: a scanned home offers its second getters as an excluded one does


@pytest.mark.parametrize("stray", [None, "server_args.PY", "server_args.pyw"])
def test_a_scanned_home_second_getter_is_a_raw_accessor_for_importers(tmp_path: Path, stray: str | None) -> None:
    files = {"server_args.py": HOME, "user.py": USER}
    if stray:
        files[stray] = DECOY
    result = _scan(tmp_path, files, ())
    assert fails(result)
    assert ("f", "page_size") in file_reads(result, "pkg/user.py")


def test_a_scanned_home_module_imported_whole_reads_through_its_second_getter(tmp_path: Path) -> None:
    user = "import pkg.server_args as S\ndef f():\n    return S.get_global_server_args().tp_size\n"
    result = _scan(tmp_path, {"server_args.py": HOME, "user.py": user}, ())
    assert ("f", "tp_size") in file_reads(result, "pkg/user.py")


def test_a_scanned_home_getter_of_no_record_reads_nothing(tmp_path: Path) -> None:
    home = HOME + "def get_port():\n    return 5\n"
    user = "from pkg.server_args import get_port\ndef f():\n    return get_port().bit_length()\n"
    result = _scan(tmp_path, {"server_args.py": home, "user.py": user}, ())
    assert file_reads(result, "pkg/user.py") == set()
