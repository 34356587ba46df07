"""Round twenty-one's false passes of the read ratchet about the record's home module's
facades (an outside attack, findings 1, 4, 6, 9 and the minor one). The home is excluded from
the scan, so what its code reads off the record is charged where an importer uses it; round
twenty followed a facade instance only by its own name (`cfg = Cfg()`, `cfg.port`). Missed:
the instance reached through an alias (`cfg2 = cfg`, also as `S.cfg2`), a dict or list slot
(`FACADES = {'cfg': Cfg()}`), a factory (`def get_cfg(): return Cfg()`) or an exported bound
method (`port_of = cfg.port`); a property giving the whole record (`@property`,
`cached_property`, `property(lambda self: _G)`: `CFG.args.port`, and `CFG.args.port += 1`,
a read and a write); a class with a static getter in a dict; members inherited from a home
base class or bound under a second name in the class body (`fetch = get`); a leaf reader
kept in a container (`GETTERS = {'port': get_port}`); and a write through the record in a
list (`[get_server_args()][0].port += 1`). Each has a twin whose home code reaches another
object than the record, which stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

HOME = (
    "import dataclasses\nimport functools\nimport types\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "_OTHER = types.SimpleNamespace(port=1, page_size=1)\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)
# `{r}` is the record in the reading home, another object in its quiet twin
READING, QUIET = "_GLOBAL_SERVER_ARGS", "_OTHER"


def _scan(tmp_path: Path, after: str, user: str) -> ScanResult:
    return scan_with_home(tmp_path, HOME + after, {"user.py": user}, SETTINGS)


def _user(names: str, expr: str) -> str:
    return f"from legacy.server_args import {names}\ndef f():\n    return {expr}\n"


PORT_PROPERTY = "class Cfg:\n    @property\n    def port(self):\n        return {r}.port\n"
ARGS_PROPERTY = "class Cfg:\n    @property\n    def args(self):\n        return {r}\n"
GETITEM = "class Cfg:\n    def __getitem__(self, k):\n        return getattr({r}, k)\n"
GET = "class Cfg:\n    def get(self):\n        return {r}\n"
BASE_PROPERTY = "class _Base:\n    @property\n    def port(self):\n        return {r}.port\nclass Cfg(_Base):\n    pass\n"
GET_PORT = "def get_port():\n    return {r}.port\n"

# (home code after the record, importer)
CASES = [
    # finding 1: the facade instance through an alias, a module attribute, a slot, a factory
    (PORT_PROPERTY + "cfg = Cfg()\ncfg2 = cfg\n", _user("cfg2", "cfg2.port")),
    (PORT_PROPERTY + "cfg = Cfg()\ncfg2 = cfg\n", "from legacy import server_args as S\ndef f():\n    return S.cfg2.port\n"),
    (PORT_PROPERTY + "cfg = Cfg()\ncfg2 = cfg\ncfg3 = cfg2\n", _user("cfg3", "cfg3.port")),
    (PORT_PROPERTY + "FACADES = {{'cfg': Cfg()}}\n", _user("FACADES", "FACADES['cfg'].port")),
    (PORT_PROPERTY + "CFGS = [Cfg()]\n", _user("CFGS", "CFGS[0].port")),
    (PORT_PROPERTY + "cfg = Cfg()\nCFGS = (cfg,)\n", _user("CFGS", "CFGS[0].port")),
    (PORT_PROPERTY + "def get_cfg():\n    return Cfg()\n", _user("get_cfg", "get_cfg().port")),
    (PORT_PROPERTY + "cfg = Cfg()\ndef get_cfg():\n    return cfg\n", _user("get_cfg", "get_cfg().port")),
    # finding 4: a property giving the whole record; dunders and getters through slots and aliases
    (ARGS_PROPERTY + "CFG = Cfg()\n", _user("CFG", "CFG.args.port")),
    (ARGS_PROPERTY + "CFG = Cfg()\nCFG2 = CFG\n", _user("CFG2", "CFG2.args.port")),
    (
        "class Cfg:\n    @functools.cached_property\n    def args(self):\n        return {r}\nCFG = Cfg()\n",
        _user("CFG", "CFG.args.port"),
    ),
    ("class Cfg:\n    args = property(lambda self: {r})\nCFG = Cfg()\n", _user("CFG", "CFG.args.port")),
    (GETITEM + "REG = {{'cfg': Cfg()}}\n", _user("REG", "REG['cfg']['port']")),
    (
        "class Cfg:\n    def __call__(self):\n        return {r}\nget_args = Cfg()\nga = get_args\n",
        _user("ga", "ga().port"),
    ),
    ("class Cfg:\n    def port(self):\n        return {r}.port\ncfg = Cfg()\nport_of = cfg.port\n", _user("port_of", "port_of()")),
    (GET + "cfg = Cfg()\nfetch = cfg.get\n", _user("fetch", "fetch().port")),
    (GET + "cfg = Cfg()\ncfg2 = cfg\n", _user("cfg2", "cfg2.get().port")),
    ("class Cfg:\n    @staticmethod\n    def args():\n        return {r}\nCFGS = {{'c': Cfg}}\n", _user("CFGS", "CFGS['c'].args().port")),
    # finding 6: members from a home base class, or bound under a second name in the body
    (BASE_PROPERTY + "cfg = Cfg()\n", _user("cfg", "cfg.port")),
    ("class _Base:\n    def get(self):\n        return {r}\nclass Cfg(_Base):\n    pass\ncfg = Cfg()\n", _user("cfg", "cfg.get().port")),
    (GET + "    fetch = get\ncfg = Cfg()\n", _user("cfg", "cfg.fetch().port")),
    (GETITEM.replace("Cfg", "Args") + "ARGS = Args()\nARGS2 = ARGS\n", _user("ARGS2", "ARGS2['port']")),
    # finding 9: a leaf reader kept in a container
    (GET_PORT + "GETTERS = {{'port': get_port}}\n", _user("GETTERS", "GETTERS['port']()")),
    (GET_PORT + "GETTERS = [get_port]\n", _user("GETTERS", "GETTERS[0]()")),
    # the same machinery, other spellings: a factory of a leaf reader, a facade as a class
    # attribute, a facade's getter or a reading lambda in a container
    (GET_PORT + "def helper():\n    return get_port\n", _user("helper", "helper()()")),
    (PORT_PROPERTY + "class Holder:\n    cfg = Cfg()\n", _user("Holder", "Holder.cfg.port")),
    (GET + "cfg = Cfg()\nTABLE = {{'get': cfg.get}}\n", _user("TABLE", "TABLE['get']().port")),
    ("GETTERS = [lambda: {r}.port]\n", _user("GETTERS", "GETTERS[0]()")),
]


@pytest.mark.parametrize(("home", "user"), CASES)
def test_a_home_facade_reached_another_way_reads_what_it_reads(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home.format(r=READING), user)
    leaves = {leaf for function, leaf, _ in reads_via(result) if function == "f"}
    assert leaves & {"port", "*"}, (home, user, result.reads)
    assert fails(result)


@pytest.mark.parametrize(("home", "user"), CASES)
def test_a_home_facade_reaching_another_object_stays_quiet(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home.format(r=QUIET), user)
    assert not reads_via(result), (home, user, result.reads)


# a property giving the record is where the record is held: its reads are precise
PRECISE = [
    (ARGS_PROPERTY + "CFG = Cfg()\n", _user("CFG", "CFG.args.port")),
    (ARGS_PROPERTY + "CFG = Cfg()\nCFG2 = CFG\n", _user("CFG2", "CFG2.args.port")),
    (BASE_PROPERTY + "cfg = Cfg()\n", _user("cfg", "cfg.port")),
    (PORT_PROPERTY + "cfg = Cfg()\ncfg2 = cfg\n", _user("cfg2", "cfg2.port")),
    (GET_PORT + "GETTERS = {{'port': get_port}}\n", _user("GETTERS", "GETTERS['port']()")),
]


@pytest.mark.parametrize(("home", "user"), PRECISE)
def test_a_facade_reading_one_leaf_is_read_as_that_leaf(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home.format(r=READING), user)
    assert {leaf for function, leaf, _ in reads_via(result) if function == "f"} == {"port"}, result.reads


def _writes(result: ScanResult) -> set[tuple[str, str]]:
    return {(v.function, v.leaf) for v in result.violations if v.file == "pkg/user.py"}


WRITES = [
    (ARGS_PROPERTY.format(r=READING) + "CFG = Cfg()\n", "from legacy.server_args import CFG\ndef f():\n    CFG.args.port += 1\n"),
    (
        ARGS_PROPERTY.format(r=READING) + "CFG = Cfg()\n",
        "from legacy.server_args import CFG\ndef f():\n    c = CFG.args\n    c.port = 1\n",
    ),
    # the minor finding: the record in a list, written through its slot
    ("", "from legacy.server_args import get_server_args\ndef f():\n    [get_server_args()][0].port += 1\n"),
    ("", "from legacy.server_args import get_server_args\ndef f():\n    (get_server_args(),)[0].port = 2\n"),
]


@pytest.mark.parametrize(("home", "user"), WRITES)
def test_a_write_through_a_facade_or_a_slot_is_a_write(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home, user)
    assert ("f", "port") in _writes(result), (result.reads, result.violations)
    if "+=" in user:
        assert ("f", "port") in {(function, leaf) for function, leaf, _ in reads_via(result)}, result.reads


def test_a_facade_write_to_another_object_is_no_write(tmp_path: Path) -> None:
    user = "from legacy.server_args import CFG\ndef f():\n    CFG.args.port += 1\n"
    result = _scan(tmp_path, ARGS_PROPERTY.format(r=QUIET) + "CFG = Cfg()\n", user)
    assert not _writes(result) and not reads_via(result), (result.reads, result.violations)


def test_ordinary_home_containers_and_factories_stay_quiet(tmp_path: Path) -> None:
    home = (
        "class Cfg:\n    def name(self):\n        return 'x'\n    @property\n    def size(self):\n        return 3\n"
        "cfg = Cfg()\ncfg2 = cfg\nFACADES = {'cfg': Cfg(), 'other': cfg}\nCLASSES = [Cfg]\n"
        "def make():\n    return Cfg()\ndef version():\n    return '1'\nTABLE = {'v': version}\n"
    )
    user = (
        "from legacy.server_args import cfg2, FACADES, CLASSES, make, TABLE\n"
        "def f():\n    return [cfg2.name(), cfg2.size, FACADES['cfg'].size, CLASSES[0]().name(), make().size, TABLE['v']()]\n"
    )
    result = _scan(tmp_path, home, user)
    assert not reads_via(result), result.reads


def test_a_value_a_reading_facade_computes_at_import_stays_quiet(tmp_path: Path) -> None:
    # what a facade's member gives at import is no facade kept: `Cfg().name()` is a string
    home = (
        PORT_PROPERTY.format(r=READING) + "    def name(self):\n        return 'x'\n"
        "NAME = Cfg().name()\nNAMES = [Cfg().name(), len('x')]\ndef label():\n    return Cfg().name()\n"
        "def pick(cfg):\n    return cfg\n"
    )
    user = "from legacy.server_args import NAME, NAMES, label, pick\ndef f():\n    return [NAME, NAMES[0], label(), pick(1)]\n"
    result = _scan(tmp_path, home, user)
    assert not reads_via(result), result.reads
