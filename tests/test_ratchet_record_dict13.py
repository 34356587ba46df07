"""Round thirteen's false passes of the read ratchet about the record dict and the record's
home module (an outside attack): the record dict re-exported by a scanned module under
another name or returned by its function, read by key in its importers (R13-3); a function
of the home module returning the dict (R13-4); second getters of the home module of other
shapes, unannotated (R13-5). Each case fails before its rule; the precision cases beside
them stay quiet, and a key or value the code does not show reads `*`."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, write_pkg

from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree

DICT_SETTINGS = ScanSettings(roots=("pkg",), record_dicts=("global_server_args_dict",))
DICT = "from legacy.server_args import global_server_args_dict\n"
HOME = (
    "import copy\nimport functools\n_ARGS = None\nglobal_server_args_dict = {}\n_STATE = {'args': None, 'port': 0}\n"
    "class ServerArgs:\n    pass\n"
    "def get_server_args() -> ServerArgs:\n    return _ARGS\n"
    "def set_global_server_args(a):\n    global _ARGS\n    _ARGS = a\n    _STATE['args'] = a\n"
    "    _STATE['port'] = 8000\n    global_server_args_dict.update(vars(a))\n"
)


def _with_home(tmp_path: Path, extra: str = "") -> None:
    (tmp_path / "legacy").mkdir(exist_ok=True)
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(HOME + extra)


def _scan(tmp_path: Path, files: dict[str, str], home: str = "", cache: Path | None = None) -> ScanResult:
    _with_home(tmp_path, home)
    write_pkg(tmp_path, files)
    result = scan_tree(tmp_path, DICT_SETTINGS, cache_path=cache)
    assert not result.problems, result.problems
    return result




# ---- R13-3: the record dict under another name of a scanned module

SB = DICT + "GLOBAL_ARGS = global_server_args_dict\ndef gsad():\n    return global_server_args_dict\n"


@pytest.mark.parametrize(("files", "leaf"), [
    ({"user.py": "from pkg.sb import GLOBAL_ARGS\ndef f():\n    return GLOBAL_ARGS['page_size']\n"}, "page_size"),
    ({"user.py": "from pkg.sb import gsad\ndef f():\n    return gsad()['page_size']\n"}, "page_size"),
    ({"user.py": "import pkg.sb as sb\ndef f():\n    return sb.gsad().get('page_size')\n"}, "page_size"),
    ({"user.py": "from pkg import sb\ndef f():\n    return 'page_size' in sb.GLOBAL_ARGS\n"}, "page_size"),
    ({"user.py": "from pkg.sb import GLOBAL_ARGS as G\ndef f():\n    return G.get('tp_size')\n"}, "tp_size"),
    # through a chain of modules: re-exported, and returned by another module's function
    ({"c.py": "from pkg.sb import GLOBAL_ARGS as G2\ndef again():\n    return G2\n",
      "user.py": "from pkg.c import G2, again\ndef f():\n    return G2['page_size'], again()['tp_size']\n"},
     "page_size"),
    # a function returning a local bound to the dict, or the module's alias of it
    ({"c.py": DICT + "def local():\n    d = global_server_args_dict\n    return d\n",
      "user.py": "from pkg.c import local\ndef f():\n    return local()['page_size']\n"}, "page_size"),
    ({"c.py": "from pkg.sb import GLOBAL_ARGS\ndef alias():\n    return GLOBAL_ARGS\n",
      "user.py": "from pkg.c import alias\nasync def f():\n    return alias()['page_size']\n"}, "page_size"),
])
def test_the_record_dict_under_another_name_is_read_by_key_in_importers(
    tmp_path: Path, files: dict[str, str], leaf: str,
) -> None:
    result = _scan(tmp_path, {"sb.py": SB, **files})
    assert fails(result)
    assert ("f", leaf, "record_dict") in reads_via(result), result.reads


def test_the_alias_is_the_dict_in_its_own_module_too(tmp_path: Path) -> None:
    # (the alias and the return stay whole reads: a baselined `*` there no longer hides
    # a new reader in the same module)
    own = SB + "def later():\n    return GLOBAL_ARGS['page_size'], gsad()['tp_size']\n"
    result = _scan(tmp_path, {"sb.py": own})
    reads = reads_via(result, "pkg/sb.py")
    assert {("later", "page_size", "record_dict"), ("later", "tp_size", "record_dict")} <= reads, reads
    assert {("<module>", "*", "record_dict"), ("gsad", "*", "record_dict")} <= reads, reads


def test_a_write_through_the_alias_is_a_write(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"sb.py": SB, "user.py": "from pkg.sb import gsad\ndef f():\n    gsad()['page_size'] = 1\n"})
    assert [(v.file, v.leaf) for v in result.violations] == [("pkg/user.py", "page_size")], result.violations


@pytest.mark.parametrize("body", [
    "return gsad()[name]",  # a key the code does not show
    "return dict(GLOBAL_ARGS)",  # every key at once
    "d = gsad()\n    return d['page_size']",  # bound to a local: used whole there
    "return sorted(sb.GLOBAL_ARGS)",
])
def test_the_dict_under_another_name_used_whole_or_by_an_unknown_key_reads_everything(tmp_path: Path, body: str) -> None:
    user = f"from pkg import sb\nfrom pkg.sb import GLOBAL_ARGS, gsad\ndef f(name):\n    {body}\n"
    result = _scan(tmp_path, {"sb.py": SB, "user.py": user})
    assert fails(result)
    assert ("f", "*", "record_dict") in reads_via(result), result.reads


@pytest.mark.parametrize(("sb", "user"), [
    # names bound to other dicts, functions returning other dicts
    ("OTHER = {}\ndef gsad():\n    return {'page_size': 1}\n",
     "from pkg.sb import OTHER, gsad\ndef f():\n    return OTHER['page_size'], gsad()['page_size']\n"),
    # the importer's own parameter and local of the alias's name
    (SB, "from pkg.sb import GLOBAL_ARGS, gsad\ndef f(GLOBAL_ARGS):\n    return GLOBAL_ARGS['page_size']\n"
         "def g():\n    gsad = dict\n    return gsad()['page_size']\n"),
    # an attribute of that name on another object
    (SB, "def f(obj):\n    return obj.GLOBAL_ARGS['page_size'], obj.gsad()['page_size']\n"),
])
def test_other_dicts_and_other_names_read_nothing(tmp_path: Path, sb: str, user: str) -> None:
    result = _scan(tmp_path, {"sb.py": sb, "user.py": user})
    assert not reads_via(result), result.reads


def test_a_warm_check_reads_the_alias_the_same(tmp_path: Path) -> None:
    files = {"sb.py": SB, "user.py": "from pkg.sb import gsad\ndef f():\n    return gsad()['page_size']\n"}
    cache = tmp_path / "cache"
    cold = _scan(tmp_path, files, cache=cache)
    warm = _scan(tmp_path, files, cache=cache)
    assert warm.files_from_cache and reads_via(warm) == reads_via(cold) == {("f", "page_size", "record_dict")}


# ---- R13-4: the home module's function returning the record dict, or a name bound to it

HOME_DICT = (
    "def get_global_server_args_dict():\n    return global_server_args_dict\n"
    "GLOBAL = global_server_args_dict\ndef get_defaults():\n    return {'page_size': 1}\n"
)


@pytest.mark.parametrize("user", [
    "from legacy.server_args import get_global_server_args_dict\ndef f():\n    return get_global_server_args_dict()['page_size']\n",
    "import legacy.server_args as S\ndef f():\n    return S.get_global_server_args_dict().get('page_size')\n",
    "from legacy.server_args import GLOBAL\ndef f():\n    return GLOBAL['page_size']\n",
])
def test_the_home_modules_record_dict_getter_gives_the_dict(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user}, HOME_DICT)
    assert fails(result)
    assert reads_via(result) == {("f", "page_size", "record_dict")}, result.reads


def test_the_home_modules_dict_getter_by_an_unknown_key_reads_everything(tmp_path: Path) -> None:
    user = "from legacy.server_args import get_global_server_args_dict as g\ndef f(k):\n    return g()[k]\n"
    assert reads_via(_scan(tmp_path, {"user.py": user}, HOME_DICT)) == {("f", "*", "record_dict")}


def test_the_home_modules_other_dicts_read_nothing(tmp_path: Path) -> None:
    user = "from legacy.server_args import get_defaults\ndef f():\n    return get_defaults()['page_size']\n"
    assert not reads_via(_scan(tmp_path, {"user.py": user}, HOME_DICT))


# ---- R13-5: second getters of the home module, unannotated, of other shapes

GETTERS = (
    "def get_args2():\n    return _STATE['args']\n"
    "def get_args_get():\n    return _STATE.get('args')\n"
    "@functools.lru_cache(maxsize=None)\ndef get_args3():\n    return get_server_args()\n"
    "def get_args_copy():\n    return copy.deepcopy(_ARGS)\n"
    "_CACHED = None\ndef get_lazy():\n    global _CACHED\n    if _CACHED is None:\n        _CACHED = get_args3()\n"
    "    return _CACHED\n"
    "def get_maybe(strict):\n    return _STATE['args'] if strict else None\n"
    "def get_slot(key):\n    return _STATE[key]\n"  # a key not shown: it may be the record's
    "def get_guarded():\n    try:\n        with open('x'):\n            return _STATE['args']\n"
    "    except KeyError:\n        return None\n"
    # not the record: another slot, a leaf, a copy of something else
    "def get_port():\n    return _STATE['port']\n"
    "def get_page():\n    return get_server_args().page_size\n"
    "def get_copy_of_defaults():\n    return copy.deepcopy({'page_size': 1})\n"
)


@pytest.mark.parametrize("call", [
    "get_args2()", "get_args_get()", "get_args3()", "get_args_copy()", "get_lazy()", "get_maybe(True)",
    "get_slot('args')", "get_guarded()",
])
def test_a_second_getter_of_other_shapes_is_a_raw_accessor(tmp_path: Path, call: str) -> None:
    name = call.partition("(")[0]
    user = f"from legacy.server_args import {name}\ndef f():\n    return {call}.page_size\n"
    result = _scan(tmp_path, {"user.py": user}, GETTERS)
    assert fails(result)
    assert ("f", "page_size") in {(function, leaf) for function, leaf, _ in reads_via(result)}, result.reads


def test_the_getters_through_the_module_are_raw_accessors_too(tmp_path: Path) -> None:
    user = "import legacy.server_args as S\ndef f():\n    return S.get_args2().tp_size, S.get_args_copy().page_size\n"
    leaves = {leaf for _, leaf, _ in reads_via(_scan(tmp_path, {"user.py": user}, GETTERS))}
    assert leaves == {"tp_size", "page_size"}


@pytest.mark.parametrize("call", ["get_port()", "get_copy_of_defaults()"])
def test_what_is_not_the_record_reads_nothing(tmp_path: Path, call: str) -> None:
    name = call.partition("(")[0]
    user = f"from legacy.server_args import {name}\ndef f():\n    return {call}.page_size\n"
    assert not reads_via(_scan(tmp_path, {"user.py": user}, GETTERS))


def test_a_getter_of_a_leaf_reads_that_leaf_at_its_call(tmp_path: Path) -> None:
    # `get_page()` returns `get_server_args().page_size`: no record, but the home reads
    # the leaf for the caller (round sixteen, tests/test_ratchet_homecode16.py)
    user = "from legacy.server_args import get_page\ndef f():\n    return get_page()\n"
    assert {(function, leaf) for function, leaf, _ in reads_via(_scan(tmp_path, {"user.py": user}, GETTERS))} == {
        ("f", "page_size")
    }
