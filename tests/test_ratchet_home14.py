"""Round fourteen's false passes of the read ratchet about the record's home module (an
outside attack): a second getter of the home module reached through the package
from-import of the module, `from eng import server_args as S` (R14-4); the home module's
second getter or dict getter re-exported by a scanned module and used from there (R14-5);
the record dict re-exported by a scanned module under another name (R14-6). Each case
fails before its rule; the precision cases beside them stay quiet, and a key the code does
not show reads `*`."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",), record_dicts=("global_server_args_dict",))
HOME = (
    "_ARGS = None\nglobal_server_args_dict = {}\nother_dict = {}\n"
    "class ServerArgs:\n    pass\n"
    "def get_server_args() -> ServerArgs:\n    return _ARGS\n"
    "def set_global_server_args(a):\n    global _ARGS\n    _ARGS = a\n    global_server_args_dict.update(vars(a))\n"
    "def get_global_server_args():\n    return _ARGS\n"
    "def get_annotated() -> ServerArgs:\n    return make()\n"
    "def get_global_server_args_dict():\n    return global_server_args_dict\n"
    # not the record, nor its dict
    "def get_port():\n    return 8000\n"
    "def get_defaults():\n    return {'page_size': 1}\n"
)


def _scan(tmp_path: Path, files: dict[str, str], cache: Path | None = None) -> ScanResult:
    return scan_with_home(tmp_path, HOME, files, SETTINGS, cache)




# ---- R14-4: the package from-import of the home module

@pytest.mark.parametrize(("user", "expected"), [
    ("from legacy import server_args\ndef f():\n    return server_args.get_global_server_args().page_size\n",
     ("f", "page_size")),
    ("from legacy import server_args as S\ndef f():\n    return S.get_annotated().tp_size\n", ("f", "tp_size")),
    ("from legacy import server_args as S\ndef f():\n    return S.get_global_server_args_dict()['page_size']\n",
     ("f", "page_size")),
    ("from legacy import server_args as S\ndef f(k):\n    return S.get_global_server_args_dict()[k]\n", ("f", "*")),
])
def test_a_second_getter_through_the_package_from_import_is_a_raw_accessor(
    tmp_path: Path, user: str, expected: tuple[str, str],
) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert fails(result)
    assert expected in {(function, leaf) for function, leaf, _ in reads_via(result)}, result.reads


def test_what_is_not_the_record_through_the_package_from_import_reads_nothing(tmp_path: Path) -> None:
    user = "from legacy import server_args as S\ndef f():\n    return S.get_port().page_size, S.get_defaults()['page_size']\n"
    assert not reads_via(_scan(tmp_path, {"user.py": user}))


# ---- R14-5: the home module's getters re-exported by a scanned module

REEXPORT = "from legacy.server_args import get_global_server_args, get_global_server_args_dict, get_port\n"


@pytest.mark.parametrize(("files", "expected"), [
    ({"user.py": "from pkg.compat import get_global_server_args\ndef f():\n    return get_global_server_args().page_size\n"},
     ("f", "page_size", "")),
    ({"user.py": "from pkg import compat\ndef f():\n    return compat.get_global_server_args().tp_size\n"},
     ("f", "tp_size", "")),
    ({"user.py": "from pkg.compat import get_global_server_args_dict as g\ndef f():\n    return g()['page_size']\n"},
     ("f", "page_size", "record_dict")),
    # re-exported twice, and under another name
    ({"again.py": "from pkg.compat import get_global_server_args as sa\n",
      "user.py": "from pkg.again import sa\ndef f():\n    return sa().page_size\n"}, ("f", "page_size", "")),
])
def test_a_home_getter_re_exported_by_a_scanned_module_gives_the_record(
    tmp_path: Path, files: dict[str, str], expected: tuple[str, str, str],
) -> None:
    result = _scan(tmp_path, {"compat.py": REEXPORT, **files})
    assert fails(result)
    function, leaf, via = expected  # ("": a read of the record, whatever its via)
    assert any(r[:2] == (function, leaf) and via in ("", r[2]) for r in reads_via(result)), result.reads


def test_another_home_function_re_exported_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.compat import get_port\nfrom pkg import compat\ndef f():\n    return get_port().page_size, compat.get_port().tp_size\n"
    assert not reads_via(_scan(tmp_path, {"compat.py": REEXPORT, "user.py": user}))


# ---- R14-6: the record dict re-exported by a scanned module under another name

RENAMED = "from legacy.server_args import global_server_args_dict as ARGS, other_dict as OTHER\n"


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg.compat import ARGS\ndef f():\n    return ARGS['page_size']\n", "page_size"),
    ("from pkg import compat\ndef f():\n    return compat.ARGS.get('tp_size')\n", "tp_size"),
    ("from pkg.compat import ARGS as A\ndef f(k):\n    return A[k]\n", "*"),
])
def test_the_record_dict_re_exported_under_another_name_is_the_dict(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"compat.py": RENAMED, "user.py": user})
    assert fails(result)
    assert ("f", leaf, "record_dict") in reads_via(result), result.reads


def test_another_home_dict_re_exported_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.compat import OTHER\ndef f():\n    return OTHER['page_size']\n"
    assert not reads_via(_scan(tmp_path, {"compat.py": RENAMED, "user.py": user}))


def test_a_warm_check_reads_the_re_exports_the_same(tmp_path: Path) -> None:
    files = {
        "compat.py": REEXPORT + RENAMED,
        "user.py": "from pkg.compat import ARGS, get_global_server_args\ndef f():\n"
                   "    return ARGS['page_size'], get_global_server_args().tp_size\n",
    }
    cache = tmp_path / "cache"
    cold = _scan(tmp_path, files, cache=cache)
    warm = _scan(tmp_path, files, cache=cache)
    assert warm.files_from_cache and reads_via(warm) == reads_via(cold)
    assert ("f", "page_size", "record_dict") in reads_via(cold), cold.reads
    assert ("f", "tp_size") in {(function, leaf) for function, leaf, _ in reads_via(cold)}, cold.reads


# ---- R14-5, wider: the home module itself, or all of it, re-exported by a scanned module

@pytest.mark.parametrize(("compat", "user"), [
    ("from legacy import server_args\n",
     "from pkg.compat import server_args\ndef f():\n    return server_args.get_global_server_args().page_size\n"),
    ("import legacy.server_args as S\n", "from pkg import compat\ndef f():\n    return compat.S.get_global_server_args().page_size\n"),
    ("from legacy.server_args import *\n", "from pkg.compat import get_global_server_args\ndef f():\n    return get_global_server_args().page_size\n"),
    ("from legacy.server_args import *\n", "from pkg.compat import global_server_args_dict as D\ndef f():\n    return D['page_size']\n"),
])
def test_the_home_module_re_exported_whole_keeps_its_doors(tmp_path: Path, compat: str, user: str) -> None:
    result = _scan(tmp_path, {"compat.py": compat, "user.py": user})
    assert fails(result)
    assert ("f", "page_size") in {(function, leaf) for function, leaf, _ in reads_via(result)}, result.reads


@pytest.mark.parametrize("compat", ["from legacy import server_args\n", "from legacy.server_args import *\n"])
def test_the_home_module_re_exported_whole_gives_nothing_else(tmp_path: Path, compat: str) -> None:
    user = (
        "from pkg import compat\nfrom pkg.compat import get_port, other_dict\ndef f():\n"
        "    return get_port().page_size, other_dict['page_size'], compat.get_defaults()['page_size']\n"
    )
    assert not reads_via(_scan(tmp_path, {"compat.py": compat, "user.py": user}))
