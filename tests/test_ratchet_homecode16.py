"""Round sixteen's false passes of the read ratchet about the record's home module (an
outside attack, families 1 and 2). The home is excluded from the scan, so what its code
reads off the record for a caller is charged to the call site: a method of the record
class called on the record (`get_server_args().describe()`), a home function or static
method handed the record (`page_of(rec)`, `PortArgs.init_new(rec)`), a home function
reaching the record and returning a leaf (`get_page_size()`), read as the leaves its body
reads (family 1). The home hands the published record out in shapes its second getters did
not follow: a list, a dict `.update`, `globals()[...]`, a module `__getattr__`, a box's
method, a `@contextmanager`, wrapped in a tuple, dict, list or `weakref.ref`, a dict view
(`dataclasses.asdict`, `MappingProxyType(vars(...))`), each a holder, a dict getter or a
`*` read at the use (family 2). Each case fails before its rule; the precision cases beside
them (the setter, the record's construction, methods and functions reading nothing off the
record, the home's unrelated holders) stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.fix import HOME_REASON, refusal
from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

BASE = (
    "import argparse\nimport contextlib\nimport dataclasses\nimport types\nimport weakref\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n    page_size: int = 1\n    tp_size: int = 1\n"
    "    @staticmethod\n    def add_cli_args(parser):\n        parser.add_argument('--page-size', type=int)\n"
    "    @classmethod\n    def from_cli_args(cls, args: argparse.Namespace):\n"
    "        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})\n"
    "    def __post_init__(self):\n        assert self.page_size > 0\n"
    "    def describe(self):\n        return f'page={self.page_size}'\n"
    "    def both(self):\n        return self.page_size, self.tp_size\n"
    "    def dump(self):\n        return json_dump(self)\n"
    "    def hello(self):\n        return 'hello'\n"
    "_GLOBAL_SERVER_ARGS = None\n_PORT = 30000\n"
    "def json_dump(x):\n    return str(x)\n"
    "def get_server_args() -> ServerArgs:\n    return _GLOBAL_SERVER_ARGS\n"
    "def set_global_server_args(server_args):\n    global _GLOBAL_SERVER_ARGS\n"
    "    if _GLOBAL_SERVER_ARGS is not None:\n        pass\n    _GLOBAL_SERVER_ARGS = server_args\n"
)


def _scan(tmp_path: Path, home: str, user: str) -> ScanResult:
    return scan_with_home(tmp_path, home, {"user.py": user}, SETTINGS)


def _leaves(result: ScanResult) -> set[tuple[str, str]]:
    return {(function, leaf) for function, leaf, _ in reads_via(result)}


# ---- family 1: home code reading leaves for the role code

HOME1 = BASE + (
    "@dataclasses.dataclass\nclass PortArgs:\n    page: int\n"
    "    @staticmethod\n    def init_new(server_args):\n        return PortArgs(page=server_args.page_size)\n"
    "    @classmethod\n    def from_args(cls, sa):\n        return cls(page=sa.tp_size)\n"
    "def get_page_size():\n    return _GLOBAL_SERVER_ARGS.page_size\n"
    "def get_sizes():\n    sa = get_server_args()\n    return sa.page_size + sa.tp_size\n"
    "def page_of(sa):\n    return sa.page_size\n"
    "def page_kw(*, sa):\n    return sa.page_size\n"
    "def hand_on(sa):\n    return json_dump(sa)\n"
    # reading nothing off the record
    "def is_set():\n    return _GLOBAL_SERVER_ARGS is not None\n"
    "def port():\n    return _PORT\n"
    "def noop(sa):\n    if sa is None:\n        return 0\n    return 1\n"
)

FAMILY1 = [
    ("get_server_args().describe()", {"page_size"}),
    ("get_server_args().both()", {"page_size", "tp_size"}),
    ("get_server_args().dump()", {"*"}),
    ("PortArgs.init_new(get_server_args()).page", {"page_size"}),
    ("PortArgs.from_args(get_server_args()).page", {"tp_size"}),
    ("page_of(get_server_args())", {"page_size"}),
    ("page_kw(sa=get_server_args())", {"page_size"}),
    ("hand_on(get_server_args())", {"*"}),
    ("get_page_size()", {"page_size"}),
    ("get_sizes()", {"page_size", "tp_size"}),
]


@pytest.mark.parametrize(("expr", "leaves"), FAMILY1)
def test_home_code_reading_the_record_reads_at_the_call_site(tmp_path: Path, expr: str, leaves: set[str]) -> None:
    user = (
        "from legacy.server_args import get_server_args, PortArgs, get_page_size, get_sizes, page_of, page_kw, hand_on\n"
        f"def f():\n    return {expr}\n"
    )
    result = _scan(tmp_path, HOME1, user)
    assert fails(result)
    assert {leaf for function, leaf in _leaves(result) if function == "f"} >= leaves, result.reads


def test_the_record_handed_to_a_home_method_through_the_module(tmp_path: Path) -> None:
    user = "from legacy import server_args as S\ndef f():\n    return S.page_of(S.get_server_args())\ndef g():\n    return S.get_page_size()\n"
    result = _scan(tmp_path, HOME1, user)
    found = _leaves(result)
    # (a home function reached through its package is an escape, `*`, as before)
    assert ("g", "page_size") in found and found & {("f", "page_size"), ("f", "*")}, result.reads


@pytest.mark.parametrize(
    "expr",
    [
        "get_server_args().hello()",  # a method reading nothing off self
        "set_global_server_args(get_server_args())",  # the setter stores it: no read
        "ServerArgs.from_cli_args(ns)",  # the construction reads the namespace
        "ServerArgs.add_cli_args(argparse.ArgumentParser())",
        "is_set()", "port()", "noop(get_server_args())",
        "ServerArgs(page_size=4).describe()",  # a record built of literals
    ],
)
def test_home_code_reading_nothing_off_the_record_stays_clean(tmp_path: Path, expr: str) -> None:
    user = (
        "import argparse\nfrom legacy.server_args import get_server_args, set_global_server_args, ServerArgs\n"
        "from legacy.server_args import is_set, port, noop\n"
        f"def f(rec, ns):\n    return {expr}\n"
    )
    assert not reads_via(_scan(tmp_path, HOME1, user))


# ---- family 2: second getters in shapes the analysis did not know

FAMILY2 = [
    # (home addition, the setter's extra statement, user import, user expression)
    ("PUBLISHED = []\n", "PUBLISHED.append(server_args)", "PUBLISHED", "PUBLISHED[-1].page_size"),
    ("SLOT = [None]\n", "SLOT[0] = server_args", "SLOT", "SLOT[0].page_size"),
    ("STATE = {}\n", "STATE.update(args=server_args)", "STATE", "STATE['args'].page_size"),
    ("ARGS = None\n", "globals()['ARGS'] = server_args", "ARGS", "ARGS.page_size"),
    (
        "class _Box:\n    def put(self, v):\n        self.v = v\n    def get(self):\n        return self.v\n"
        "_BOX = _Box()\ndef current_args():\n    return _BOX.get()\n",
        "_BOX.put(server_args)", "current_args", "current_args().page_size",
    ),
    (
        "def __getattr__(name):\n    if name == 'ARGS':\n        return _GLOBAL_SERVER_ARGS\n    raise AttributeError(name)\n",
        "pass", "ARGS", "ARGS.page_size",
    ),
    ("@contextlib.contextmanager\ndef args_scope():\n    yield _GLOBAL_SERVER_ARGS\n", "pass", "args_scope", "args_scope()"),
    ("def get_all():\n    return _GLOBAL_SERVER_ARGS, 30000\n", "pass", "get_all", "get_all()[0].page_size"),
    ("def get_state():\n    return {'args': _GLOBAL_SERVER_ARGS}\n", "pass", "get_state", "get_state()['args'].page_size"),
    ("def all_args():\n    return [_GLOBAL_SERVER_ARGS]\n", "pass", "all_args", "all_args()[0].page_size"),
    ("def args_ref():\n    return weakref.ref(_GLOBAL_SERVER_ARGS)\n", "pass", "args_ref", "args_ref()().page_size"),
    ("def get_args_dict():\n    return dataclasses.asdict(_GLOBAL_SERVER_ARGS)\n", "pass", "get_args_dict", "get_args_dict()['page_size']"),
    ("def view():\n    return types.MappingProxyType(vars(_GLOBAL_SERVER_ARGS))\n", "pass", "view", "view()['page_size']"),
]


@pytest.mark.parametrize(("home", "store", "name", "expr"), FAMILY2)
def test_a_home_handing_the_record_out_in_another_shape_is_a_read(
    tmp_path: Path, home: str, store: str, name: str, expr: str
) -> None:
    source = BASE.replace("    _GLOBAL_SERVER_ARGS = server_args\n", f"    _GLOBAL_SERVER_ARGS = server_args\n    {store}\n") + home
    user = f"from legacy.server_args import {name}\ndef f():\n    return {expr}\n"
    result = _scan(tmp_path, source, user)
    assert fails(result)
    found = {leaf for function, leaf in _leaves(result) if function == "f"}
    assert found & {"page_size", "*"}, result.reads


def test_a_dict_view_of_the_record_is_read_by_key(tmp_path: Path) -> None:
    source = BASE + "def get_args_dict():\n    return dataclasses.asdict(_GLOBAL_SERVER_ARGS)\n"
    user = "from legacy.server_args import get_args_dict\ndef f():\n    return get_args_dict()['tp_size']\n"
    assert _leaves(_scan(tmp_path, source, user)) == {("f", "tp_size")}


def test_the_homes_other_containers_and_views_read_nothing(tmp_path: Path) -> None:
    source = BASE + (
        "PORTS = []\nNAMES = {}\n"
        "def remember(p):\n    PORTS.append(p)\n    NAMES.update(port=p)\n"
        "def get_all():\n    return _PORT, 30000\n"
        "def get_state():\n    return {'port': _PORT}\n"
        "def view():\n    return types.MappingProxyType(vars(PortBox))\n"
        "class PortBox:\n    port = 1\n"
        "@contextlib.contextmanager\ndef port_scope():\n    yield _PORT\n"
    )
    user = (
        "from legacy.server_args import PORTS, NAMES, remember, get_all, get_state, view, port_scope\n"
        "def f():\n    remember(1)\n    with port_scope() as p:\n        pass\n"
        "    return PORTS[0], NAMES['port'], get_all()[0], get_state()['port'], view()['port'], p\n"
    )
    assert not reads_via(_scan(tmp_path, source, user))


def test_a_read_the_home_makes_is_not_rewritten_by_fix(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import get_server_args, get_page_size\n"
        "def f():\n    return get_server_args().describe(), get_page_size()\n"
    )
    reads = _scan(tmp_path, HOME1, user).reads
    assert {read.form for read in reads} == {"home_method", "home_read"}
    assert all(refusal(read, {"page_size": "cfg.schedule.page_size"}, rewrite_parameters=True) == HOME_REASON for read in reads)
