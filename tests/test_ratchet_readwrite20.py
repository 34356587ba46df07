"""Round twenty's false passes of the read ratchet where a read is also a write, or a whole
comparison (an outside attack, findings 6 and 7): `rec.port += 1` reads port before it writes
it (as `rec.port = rec.port + 1` always did), a record dict's `d["port"] += 1`, `d.pop(k)`
and `d.setdefault(k, v)` give the value the key held, `os.environ[K] += ":x"` reads K, an
`order=True` dataclass's `rec < other` (or `rec.__lt__(other)`) compares every field, and
Python 3.13's `rec.__replace__(...)` is the record with some fields changed. Twins: the same
spellings on objects that are no record, a dict that is none of the record's, a variable
the schema does not declare, and a comparison of two ints."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, env_leaves, env_quiet, fails, scan_pkg

from configbags.migrate.scan import ScanSettings

DICT_SETTINGS = ScanSettings(roots=("pkg",), record_dicts=("global_server_args_dict",))
DICT = "from legacy.server_args import global_server_args_dict as D\n"


def _leaves(tmp_path: Path, user: str, settings: ScanSettings | None = None) -> set[str]:
    result = scan_pkg(tmp_path, {"user.py": user}, *(() if settings is None else (settings,)))
    assert fails(result), result.reads
    return {r.leaf for r in result.reads if r.file == "pkg/user.py"}


@pytest.mark.parametrize(("user", "leaf"), [
    (RAW + "def f():\n    a = get_server_args()\n    a.port += 1\n", "port"),
    (RAW + "def f():\n    get_server_args().tp_size *= 2\n", "tp_size"),
    (RAW + "def f(o):\n    return get_server_args() < o\n", "*"),
    (RAW + "def f(o):\n    return o >= get_server_args()\n", "*"),
    (RAW + "def f(o):\n    return get_server_args().__lt__(o)\n", "*"),
    (RAW + "def f():\n    return get_server_args().__replace__(port=1).tp_size\n", "tp_size"),
])
def test_a_read_that_is_also_a_write_or_a_whole_comparison_is_a_read(tmp_path: Path, user: str, leaf: str) -> None:
    assert leaf in _leaves(tmp_path, user), user


@pytest.mark.parametrize(("user", "leaf"), [
    (DICT + "def f():\n    D['port'] += 1\n", "port"),
    (DICT + "def f():\n    return D.pop('port')\n", "port"),
    (DICT + "def f():\n    return D.setdefault('port', 1)\n", "port"),
    (DICT + "def f():\n    D.pop('port')\n", "port"),  # (a KeyError where it is unset tells)
])
def test_a_record_dict_key_given_back_by_a_write_is_a_read(tmp_path: Path, user: str, leaf: str) -> None:
    assert leaf in _leaves(tmp_path, user, DICT_SETTINGS), user


@pytest.mark.parametrize("user", [
    "def f(o):\n    o.count += 1\n",
    "def f(o):\n    return o.__lt__(1) or 1 < 2\n",
    "def f(d):\n    d['port'] += 1\n    return d.pop('port'), d.setdefault('port', 1)\n",
])
def test_the_same_spellings_on_other_objects_read_nothing(tmp_path: Path, user: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": user}, DICT_SETTINGS)
    assert not fails(result), result.reads


def test_an_environment_variable_added_to_is_read(tmp_path: Path) -> None:
    user = "import os\ndef f():\n    os.environ['SGLANG_PAGE_SIZE'] += '1'\n"
    assert "$SGLANG_PAGE_SIZE" in env_leaves(tmp_path, {"user.py": user})


def test_an_undeclared_variable_added_to_reads_nothing(tmp_path: Path) -> None:
    env_quiet(tmp_path, {"user.py": "import os\ndef f():\n    os.environ['PATH'] += ':/opt/bin'\n"})


def test_a_record_dict_given_a_default_its_value_dropped_is_written_not_read(tmp_path: Path) -> None:
    """As the environment's are: `D.setdefault("port", 1)` and `D.pop("port", None)` as
    statements tell nothing of what the key held."""
    user = DICT + "def f():\n    D.setdefault('port', 1)\n    D.pop('port', None)\n"
    result = scan_pkg(tmp_path, {"user.py": user}, DICT_SETTINGS)
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads
    assert fails(result)  # the writes are reported
