"""Round twenty's false passes of the read ratchet about reads that are also writes (an
outside attack, finding 7): `a.port += 1` on the record, `G["page_size"] += 1` on its dict
copy and `os.environ["SGLANG_PAGE_SIZE"] += ",x"` read the old value before they write the
new one, and a record dict's `setdefault(k, v)` and `pop(k)` give the old value back. They
counted only as writes, so a baselined write of the same key, or a resolution-phase
function (whose writes are allowed), hid the read. Now each is a read as well; a dict's
`setdefault(k, v)` or `pop(k, d)` as a statement (its value dropped, nothing raised where
the key is missing) stays a write only, as the environment's does. Each has a twin that
reads nothing: an augmented attribute of another object, a plain dict, another variable."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS, RAW, env_leaves, env_quiet, scan_env_pkg, write_pkg

from configbags.migrate.check import check
from configbags.migrate.fix import refusal
from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree
from configbags.migrate.scanmodel import Entry

SETTINGS = ScanSettings(roots=("pkg",), record_dicts=("global_server_args_dict",))
BATCH = "global_server_args_dict = {'page_size': 1, 'tp_size': 1}\n"
DICT = "from pkg.batch import global_server_args_dict as G\n"


def _scan(tmp_path: Path, user: str) -> ScanResult:
    write_pkg(tmp_path, {"batch.py": BATCH, "user.py": user})
    result = scan_tree(tmp_path, SETTINGS)
    assert not result.problems, result.problems
    return result


def _reads(result: ScanResult) -> set[tuple[str, str]]:
    return {(r.function, r.leaf) for r in result.reads if r.file == "pkg/user.py"}


def _writes(result: ScanResult) -> set[tuple[str, str]]:
    return {(v.function, v.leaf) for v in result.violations if v.file == "pkg/user.py"}


READ_AND_WRITE = [
    (RAW + "def f():\n    a = get_server_args()\n    a.port += 1\n", "f", "port"),
    (RAW + "def f():\n    get_server_args().tp_size *= 2\n", "f", "tp_size"),
    (RAW + "class W:\n    def __init__(self):\n        self.server_args = get_server_args()\n"
     "    def f(self):\n        self.server_args.port -= 1\n", "W.f", "port"),
    (RAW + "def f(server_args):\n    server_args.page_size //= 2\n", "f", "page_size"),
    (DICT + "def f():\n    G['page_size'] += 1\n", "f", "page_size"),
    (DICT + "def f():\n    return G.setdefault('page_size', 2)\n", "f", "page_size"),
    (DICT + "def f():\n    x = G.setdefault('page_size', 2)\n    return x\n", "f", "page_size"),
    (DICT + "def f():\n    return G.pop('page_size')\n", "f", "page_size"),
    (DICT + "def f():\n    return G.pop('page_size', None)\n", "f", "page_size"),
    # a pop with no default raises where the key is missing: it tells set from unset
    (DICT + "def f():\n    G.pop('page_size')\n", "f", "page_size"),
    (DICT + "def f():\n    G.update(page_size=G.setdefault('tp_size', 1))\n", "f", "tp_size"),
    (DICT + "def f():\n    if G.pop('tp_size', 0):\n        return 1\n", "f", "tp_size"),
]


@pytest.mark.parametrize(("user", "function", "leaf"), READ_AND_WRITE)
def test_a_write_that_gives_or_uses_the_old_value_reads_it(tmp_path: Path, user: str, function: str, leaf: str) -> None:
    result = _scan(tmp_path, user)
    assert (function, leaf) in _reads(result), result.reads
    assert (function, leaf) in _writes(result), result.violations


@pytest.mark.parametrize(("user", "function", "leaf"), READ_AND_WRITE)
def test_a_baselined_write_or_the_resolution_phase_hides_no_such_read(
    tmp_path: Path, user: str, function: str, leaf: str
) -> None:
    result = _scan(tmp_path, user)
    baseline = [Entry(w.file, w.function, w.leaf, "kept") for w in result.violations]
    assert not check(result, [], ACCESSORS, min_files=1, writes=baseline).ok, result.reads
    assert not check(result, [], ACCESSORS, min_files=1, resolution=[f"pkg/user.py:{function}"]).ok, result.reads


WRITE_ONLY = [
    (RAW + "def f():\n    a = get_server_args()\n    a.port = 5\n", "port"),
    # the value dropped and a default given: nothing raised where the key is missing
    (DICT + "def f():\n    G.setdefault('page_size', 2)\n", "page_size"),
    (DICT + "def f():\n    G.pop('page_size', None)\n", "page_size"),
    (DICT + "def f():\n    G['page_size'] = 2\n", "page_size"),
]


@pytest.mark.parametrize(("user", "leaf"), WRITE_ONLY)
def test_a_write_that_drops_the_old_value_reads_nothing(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, user)
    assert not _reads(result), result.reads
    assert ("f", leaf) in _writes(result), result.violations


QUIET = [
    RAW + "class C:\n    def __init__(self):\n        self.count = 0\n    def f(self):\n        self.count += 1\n",
    RAW + "def f(stats):\n    stats.port += 1\n    get_server_args()\n",
    "def f():\n    d = {}\n    d.setdefault('page_size', 1)\n    return d.setdefault('tp_size', 2), d.pop('page_size')\n",
    DICT + "def f():\n    d = dict(page_size=1)\n    d['page_size'] += 1\n    return d.pop('page_size')\n",
]


@pytest.mark.parametrize("user", QUIET)
def test_the_same_shapes_on_other_objects_read_nothing_of_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert not _reads(result), result.reads
    assert not _writes(result), result.violations


# ---- the environment: `os.environ[NAME] += ...` reads NAME (a KeyError where it is unset)

ENV_READ = [
    ("import os\ndef f():\n    os.environ['SGLANG_PAGE_SIZE'] += ',extra'\n    return 1\n", "$SGLANG_PAGE_SIZE"),
    ("import os\ndef f():\n    e = os.environ\n    e['SGLANG_TP_SIZE'] += '0'\n", "$SGLANG_TP_SIZE"),
    ("from os import environ\nK = 'SGLANG_PAGE_SIZE'\ndef f():\n    environ[K] += ':x'\n", "$SGLANG_PAGE_SIZE"),
    ("import os\ndef f(name):\n    os.environ[name] += ':x'\n", "$?"),
]


@pytest.mark.parametrize(("user", "leaf"), ENV_READ)
def test_an_augmented_environment_item_reads_the_variable(tmp_path: Path, user: str, leaf: str) -> None:
    assert leaf in env_leaves(tmp_path, {"user.py": user}), user


ENV_QUIET = [
    "import os\ndef f():\n    os.environ['OTHER_VAR'] += 'x'\n",
    "import os\ndef f():\n    os.environ['SGLANG_PAGE_SIZE'] = 'x'\n",
    "import os\ndef f():\n    d = dict(SGLANG_PAGE_SIZE='1')\n    d['SGLANG_PAGE_SIZE'] += 'x'\n",
]


@pytest.mark.parametrize("user", ENV_QUIET)
def test_an_augmented_item_of_another_variable_or_mapping_reads_nothing(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


def test_the_augmented_environment_read_is_where_it_is_written(tmp_path: Path) -> None:
    result = scan_env_pkg(tmp_path, {"user.py": "import os\ndef f():\n    os.environ['SGLANG_PAGE_SIZE'] += 'x'\n"})
    assert [(r.function, r.leaf, r.line, r.form) for r in result.reads] == [
        ("f", "$SGLANG_PAGE_SIZE", 3, "environ_subscript")
    ]


@pytest.mark.parametrize("user", [
    RAW + "def f():\n    [get_server_args()][0].port += 1\n",
    RAW + "def f():\n    g = lambda: get_server_args()\n    g().port += 1\n",
])
def test_an_augmented_attribute_of_the_record_through_a_carrier_reads_it(tmp_path: Path, user: str) -> None:
    assert ("f", "port") in _reads(_scan(tmp_path, user))


def test_fix_never_rewrites_the_target_of_an_augmented_assignment(tmp_path: Path) -> None:
    result = _scan(tmp_path, RAW + "def f():\n    get_server_args().page_size += 1\n")
    (read,) = [r for r in result.reads if r.file == "pkg/user.py"]
    assert refusal(read, ACCESSORS) is not None, read
    report = check(result, [], ACCESSORS, min_files=1, writes=[Entry("pkg/user.py", "f", "page_size", "kept")])
    assert "will not rewrite it" in report.render(), report.render()
