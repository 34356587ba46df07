"""Round twenty's false passes of the read ratchet about the home's holders read through a
context snapshot or a copy (an outside attack, finding 5), and a record method reaching
`self` through `super()` (the minor one). `contextvars.copy_context()[ARGS_VAR]`,
`.get(ARGS_VAR)` of a context variable the home sets to the record, `copy.copy(NS).args` of
a namespace holding it, and `super().__getattribute__("port")` in a home record method read
the record (`*`); the same spellings of something else stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

HOME = (
    "import contextvars\nimport dataclasses\nimport types\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n{body}"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "ARGS_VAR = contextvars.ContextVar('args')\nOTHER_VAR = contextvars.ContextVar('other')\n"
    "NS = types.SimpleNamespace()\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "    ARGS_VAR.set(a)\n    NS.args = a\n    NS.other = 1\n    OTHER_VAR.set(1)\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)


def _scan(tmp_path: Path, user: str, body: str = "") -> ScanResult:
    return scan_with_home(tmp_path, HOME.format(body=body), {"user.py": user}, SETTINGS)


def _user(names: str, expr: str) -> str:
    return f"import contextvars\nimport copy\nfrom legacy.server_args import {names}\ndef f():\n    return {expr}\n"


READING = [
    _user("ARGS_VAR", "contextvars.copy_context()[ARGS_VAR].port"),
    _user("ARGS_VAR", "contextvars.copy_context().get(ARGS_VAR).port"),
    _user("NS", "copy.copy(NS).args.port"),
    _user("NS", "copy.deepcopy(NS).args"),
]
QUIET = [
    _user("OTHER_VAR", "contextvars.copy_context()[OTHER_VAR]"),
    _user("OTHER_VAR", "contextvars.copy_context().get(OTHER_VAR)"),
    _user("NS", "copy.copy(NS).other"),
    _user("ARGS_VAR", "len(contextvars.copy_context())"),
]


@pytest.mark.parametrize("user", READING)
def test_a_home_holder_read_through_a_snapshot_or_a_copy_reads_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert {leaf for function, leaf, _ in reads_via(result) if function == "f"} & {"port", "*"}, result.reads
    assert fails(result)


@pytest.mark.parametrize("user", QUIET)
def test_a_snapshot_or_a_copy_of_something_else_stays_quiet(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, user)
    assert not reads_via(result), result.reads


DESCRIBE = "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args().describe()\n"


def test_a_record_method_reaching_self_through_super_reads_it(tmp_path: Path) -> None:
    body = "    def describe(self):\n        return super().__getattribute__('port')\n"
    result = _scan(tmp_path, DESCRIBE, body)
    assert ("f", "*") in {(function, leaf) for function, leaf, _ in reads_via(result)}, result.reads
    assert fails(result)


def test_a_record_initialiser_calling_super_stays_quiet(tmp_path: Path) -> None:
    body = "    def __post_init__(self):\n        super().__init__()\n    def describe(self):\n        return 'x'\n"
    result = _scan(tmp_path, DESCRIBE, body)
    assert not reads_via(result), result.reads
