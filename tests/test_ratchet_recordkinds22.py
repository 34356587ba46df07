"""Round twenty-two's false passes of the read ratchet about the record's kind (an outside
attack, finding 7): with a `NamedTuple` or pydantic `BaseModel` record, what the class
inherits rather than spells was invisible: a NamedTuple's reads by position (`a[3]`,
`a[-1]`, slices), its iteration, `.index`/`.count` and `_replace(...)`; a pydantic model's
`model_dump()`, `dict()`, `json()`, `model_dump_json()`, `model_copy(...)`, its `(name,
value)` pairs and `type(a).model_validate(a.model_dump())`. A constant index reads the field
at that position in the home's order, anything else the whole record; copies read like the
record. Each has a quiet twin: the same spelling on another object, or on a record built
here of literals."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import reads_via, scan_with_home, write_pkg

from configbags.migrate.fix import refusal
from configbags.migrate.scan import ScanSettings, scan_tree

SETTINGS = ScanSettings(roots=("pkg",))

_TAIL = (
    "_GLOBAL_SERVER_ARGS = None\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args():\n    return _GLOBAL_SERVER_ARGS\n"
)
_FIELDS = '    model_path: str = "m"\n    tp_size: int = 1\n    page_size: int = 1\n    port: int = 30000\n'
HOMES = {
    "nt": "from typing import NamedTuple\nclass ServerArgs(NamedTuple):\n" + _FIELDS + _TAIL,
    "nt_factory": (
        "import collections\n"
        "ServerArgs = collections.namedtuple('ServerArgs', ['model_path', 'tp_size', 'page_size', 'port'])\n" + _TAIL
    ),
    "pyd": "import pydantic\nclass ServerArgs(pydantic.BaseModel):\n" + _FIELDS + _TAIL,
    "pyd_base": (
        "from pydantic import BaseModel\nclass _Base(BaseModel):\n    model_path: str = 'm'\n"
        "class ServerArgs(_Base):\n    tp_size: int = 1\n    page_size: int = 1\n    port: int = 30000\n" + _TAIL
    ),
}


def _reads(tmp_path: Path, kind: str, body: str) -> set[tuple[str, str]]:
    user = (
        "from legacy.server_args import ServerArgs, get_server_args\n"
        f"def f():\n    a = get_server_args()\n    o = (1, 2, 3, 4)\n    return {body}\n"
    )
    result = scan_with_home(tmp_path, HOMES[kind], {"user.py": user}, SETTINGS)
    return {(leaf, via) for function, leaf, via in reads_via(result) if function == "f"}


READ = [
    ("nt", "a[3]", {"port"}),
    ("nt", "a[-1]", {"port"}),
    ("nt", "a[0]", {"model_path"}),
    ("nt", "a[1:3]", {"tp_size", "page_size"}),
    ("nt", "max(a[1:])", {"tp_size", "page_size", "port"}),
    ("nt", "a[::-2]", {"port", "tp_size"}),
    ("nt_factory", "a[3]", {"port"}),
    ("nt", "a[len(o)]", {"*"}),  # an index not known: every field
    ("nt", "sum(x for x in a if isinstance(x, int))", {"*"}),
    ("nt", "[x for x in a][3]", {"*"}),
    ("nt", "list(a.__iter__())", {"*"}),
    ("nt", "a.index(4242)", {"*"}),
    ("nt", "a.count(7)", {"*"}),
    ("nt", "4242 in a", {"*"}),
    ("nt", "a._replace(model_path='x').port", {"port"}),
    ("pyd", "a.model_dump()['port']", {"*"}),
    ("pyd", "a.dict()['port']", {"*"}),
    ("pyd", "a.json()", {"*"}),
    ("pyd", "a.model_dump_json()", {"*"}),
    ("pyd", "a.model_copy().port", {"port"}),
    ("pyd", "a.model_copy(update={'model_path': 'x'}).port", {"port"}),
    ("pyd", "a.copy(update={'model_path': 'x'}).port", {"port"}),
    ("pyd", "next(v for k, v in a if k == 'port')", {"*"}),
    ("pyd", "type(a).model_validate(a.model_dump()).port", {"port"}),
    ("pyd_base", "a.model_dump()", {"*"}),
]


@pytest.mark.parametrize(("kind", "body", "leaves"), READ)
def test_inherited_protocol_reads(tmp_path: Path, kind: str, body: str, leaves: set[str]) -> None:
    assert leaves <= {leaf for leaf, _ in _reads(tmp_path, kind, body)}


QUIET = [
    ("nt", "o[3]"),
    ("nt", "sum(x for x in o)"),
    ("nt", "o.index(4)"),
    ("nt", "ServerArgs()[3]"),  # a record built here of literals is no config
    ("nt", "a._fields[3]"),
    ("pyd", "ServerArgs().model_dump()"),
    ("pyd", "dict(o=o).copy()"),
    ("pyd", "ServerArgs(port=1).model_copy().model_dump()"),
]


@pytest.mark.parametrize(("kind", "body"), QUIET)
def test_other_objects_read_nothing(tmp_path: Path, kind: str, body: str) -> None:
    assert {leaf for leaf, _ in _reads(tmp_path, kind, body)} <= {"_fields"}


def test_plain_class_is_unchanged(tmp_path: Path) -> None:
    """A dataclass record has no tuple protocol: `a.count(1)` is a method it does not have."""
    home = "import dataclasses\n@dataclasses.dataclass\nclass ServerArgs:\n" + _FIELDS + _TAIL
    user = "from legacy.server_args import get_server_args\ndef f():\n    a = get_server_args()\n    return a.count(1)\n"
    result = scan_with_home(tmp_path, home, {"user.py": user}, SETTINGS)
    assert not reads_via(result)


def test_position_read_is_rewritten_by_hand(tmp_path: Path) -> None:
    user = "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args()[3]\n"
    result = scan_with_home(tmp_path, HOMES["nt"], {"user.py": user}, SETTINGS)
    (read,) = [r for r in result.reads if r.file == "pkg/user.py"]
    assert read.leaf == "port"
    assert refusal(read, {"port": "get_net().port"}) is not None


@pytest.mark.parametrize("base", ["dict", "typing.TypedDict", "msgspec.Struct"])
def test_unmodelled_record_kind_is_said(tmp_path: Path, base: str) -> None:
    """A record class deriving from a base whose protocol the scanner does not model is a
    problem of the scan (the check fails), not a pass."""
    module = base.rpartition(".")[0]
    home = (f"import {module}\n" if module else "") + f"class ServerArgs({base}):\n    port: int\n" + _TAIL
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(home)
    write_pkg(tmp_path, {"user.py": "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args()['port']\n"})
    result = scan_tree(tmp_path, SETTINGS)
    assert [p.file for p in result.problems] == ["legacy/server_args.py"]
    assert base in result.problems[0].reason


@pytest.mark.parametrize("kind", sorted(HOMES))
def test_modelled_record_kinds_are_no_problem(tmp_path: Path, kind: str) -> None:
    assert _reads(tmp_path, kind, "a.port") == {("port", "alias")}
