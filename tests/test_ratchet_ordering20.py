"""Round twenty's false passes of the read ratchet about the generated methods that read the
whole record (an outside attack, finding 6): the record of an `@dataclass(order=True)` class
ordered (`rec < other`, `rec >= other`, `rec.__lt__(other)`, `a if a > b else b`) compares
the tuples of every field, as `==` does; and `rec.__replace__(...)`, the method Python 3.13's
`copy.replace` calls, is a copy with fields changed, as `copy.replace(rec, ...)` is. Both
read nothing before. Each has a twin that reads nothing of the record: numbers compared,
records built here of literals only, a leaf compared, another object's `__lt__`/`__replace__`."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))
HOME = (
    "import dataclasses\nfrom typing import Optional\n"
    "@dataclasses.dataclass(order=True)\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)
IMPORT = "import copy\nfrom legacy.server_args import get_server_args, ServerArgs\n"
OTHER = "ServerArgs(port=5000)"


def _scan(tmp_path: Path, user: str, home: str = "") -> ScanResult:
    return scan_with_home(tmp_path, HOME + home, {"user.py": IMPORT + user}, SETTINGS)


def _leaves(result: ScanResult) -> set[str]:
    return {r.leaf for r in result.reads if r.file == "pkg/user.py" and r.function == "f"}


ORDERED = [
    f"def f():\n    return get_server_args() < {OTHER}\n",
    f"def f():\n    return get_server_args() >= {OTHER}\n",
    f"def f():\n    return {OTHER} <= get_server_args()\n",
    f"def f():\n    return get_server_args().__lt__({OTHER})\n",
    f"def f():\n    return get_server_args().__ge__({OTHER})\n",
    f"def f():\n    return ServerArgs.__gt__(get_server_args(), {OTHER})\n",
    f"def f():\n    a = get_server_args()\n    b = {OTHER}\n    return a.port if a > b else b.port\n",
    "def f(other):\n    return get_server_args() < other\n",
    "def f(server_args, other):\n    return other > server_args\n",
    # handed to what orders them: the record escapes into the builtin (read before too)
    f"def f():\n    return sorted([get_server_args(), {OTHER}])[0].port\n",
    f"def f():\n    return max(get_server_args(), {OTHER}).port\n",
    f"def f():\n    recs = [get_server_args(), {OTHER}]\n    return max(recs).port\n",
]


@pytest.mark.parametrize("user", ORDERED)
def test_ordering_the_record_reads_every_field(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert "*" in _leaves(result), result.reads
    assert fails(result)


def test_one_ordering_is_one_whole_read(tmp_path: Path) -> None:
    result = _scan(tmp_path, "def f(other):\n    return get_server_args() < other\n")
    assert [(r.leaf, r.form) for r in result.reads if r.function == "f"] == [("*", "whole")], result.reads


REPLACED = [
    "def f():\n    return get_server_args().__replace__(tp_size=1).port\n",
    "def f():\n    r = get_server_args().__replace__(tp_size=1)\n    return r.port\n",
    "def f():\n    return ServerArgs.__replace__(get_server_args(), tp_size=1).port\n",
    "def f():\n    return copy.replace(get_server_args(), tp_size=1).port\n",
]


@pytest.mark.parametrize("user", REPLACED)
def test_a_copy_by_dunder_replace_reads_like_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert [(r.leaf, r.origin) for r in result.reads if r.function == "f"] == [("port", "replaced")], result.reads
    assert fails(result)


def test_a_copy_by_dunder_replace_handed_on_escapes(tmp_path: Path) -> None:
    result = _scan(tmp_path, "def f():\n    print(get_server_args().__replace__(tp_size=1))\n")
    assert "*" in _leaves(result), result.reads


@pytest.mark.parametrize("getter", [
    "def get_copy():\n    return _GLOBAL_SERVER_ARGS.__replace__(tp_size=1)\n",
    "def get_copy():\n    import copy\n    return copy.replace(_GLOBAL_SERVER_ARGS, tp_size=1)\n",
])
def test_a_home_getter_returning_such_a_copy_gives_the_record(tmp_path: Path, getter: str) -> None:
    user = "from legacy.server_args import get_copy\ndef f():\n    return get_copy().port\n"
    result = _scan(tmp_path, user, home=getter)
    assert "port" in _leaves(result), result.reads


QUIET = [
    "def f(a, b):\n    return a < b, 1 <= 2, sorted([3, 1]), max(4, 5)\n",
    "def f():\n    return ServerArgs(port=1) < ServerArgs(port=2)\n",
    "def f(x, y):\n    return x.__lt__(y), x.__replace__(port=1).port\n",
    "def f(obj):\n    return copy.replace(obj, port=1).port\n",
    "def f():\n    return ServerArgs(port=1).__replace__(tp_size=2).__lt__(ServerArgs())\n",
]


@pytest.mark.parametrize("user", QUIET)
def test_ordering_and_replacing_other_objects_read_nothing(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert not _leaves(result), result.reads


def test_a_leaf_compared_reads_only_that_leaf(tmp_path: Path) -> None:
    result = _scan(tmp_path, "def f():\n    return get_server_args().port < 5000\n")
    assert _leaves(result) == {"port"}, result.reads
