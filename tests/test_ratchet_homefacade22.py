"""Round twenty-two's false passes of the read ratchet about the record's home module's
facades and leaf readers (an outside attack, finding 1). The home is excluded from the scan,
so what its code reads off the record is charged where an importer uses it; round twenty-one
followed a facade or a leaf reader through an alias, a container literal, a class attribute
of the class holding it and a factory returning it as made. Missed: the class attribute
inherited by a subclass (in the home, `class Sub(Holder)`, or in the importer, `class
Mine(Holder)`), a factory binding a local before returning it (`c = Cfg(); return c`, a lazy
singleton kept in a global), a factory returning a container's slot (`return
FACADES['cfg']`), a table filled after its literal (`GETTERS['port'] = get_port`,
`.update(port=get_port)`, a registry decorator), `getattr(module, 'cfg')`, and a facade
method reading an attribute of its instance that a home function sets to the record
(`cfg.args = _G`, `self.args.port`). Each has a twin whose home code reaches another object
than the record, which stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

HOME = (
    "import dataclasses\nimport types\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "_OTHER = types.SimpleNamespace(port=1, page_size=1, tp_size=1)\n"
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
GET_PORT = "def get_port():\n    return {r}.port\n"
HOLDER = PORT_PROPERTY + "class Holder:\n    cfg = Cfg()\n"
REGISTRY = (
    "GETTERS = {{}}\ndef register(name):\n    def deco(fn):\n        GETTERS[name] = fn\n        return fn\n    return deco\n"
    "@register('tp')\ndef get_tp():\n    return {r}.tp_size\n"
)

# (home code after the record, importer, the leaf read)
CASES = [
    # a facade kept as a class attribute, inherited by a subclass
    (HOLDER + "class Sub(Holder):\n    pass\n", _user("Sub", "Sub.cfg.port"), "port"),
    (
        HOLDER + "class Holder2(Holder):\n    cfg = Cfg()\nclass Sub(Holder2):\n    pass\n",
        _user("Sub", "Sub().cfg.port"), "port",
    ),
    (HOLDER, _user("Holder", "Holder().cfg.port"), "port"),
    (
        HOLDER,
        "from legacy.server_args import Holder\nclass Mine(Holder):\n    pass\ndef f():\n    return Mine.cfg.port\n",
        "port",
    ),
    (
        HOLDER,
        "from legacy import server_args as S\nclass Mine(S.Holder):\n    pass\ndef f():\n    return Mine().cfg.port\n",
        "port",
    ),
    # a factory binding a local before returning it, a lazy singleton, a container's slot
    (PORT_PROPERTY + "def get_cfg():\n    c = Cfg()\n    return c\n", _user("get_cfg", "get_cfg().port"), "port"),
    (PORT_PROPERTY + "def get_cfg():\n    c = cfg2 = Cfg()\n    return cfg2\n", _user("get_cfg", "get_cfg().port"), "port"),
    (
        PORT_PROPERTY + "_INSTANCE = None\ndef get_cfg():\n    global _INSTANCE\n    if _INSTANCE is None:\n"
        "        _INSTANCE = Cfg()\n    return _INSTANCE\n",
        _user("get_cfg", "get_cfg().port"), "port",
    ),
    (
        PORT_PROPERTY + "cfg = Cfg()\nFACADES = {{'cfg': cfg}}\ndef get_cfg():\n    return FACADES['cfg']\n",
        _user("get_cfg", "get_cfg().port"), "port",
    ),
    (GET_PORT + "def getter():\n    g = get_port\n    return g\n", _user("getter", "getter()()"), "port"),
    # a table of leaf readers filled after its literal
    (GET_PORT + "GETTERS = {{}}\nGETTERS['port'] = get_port\n", _user("GETTERS", "GETTERS['port']()"), "port"),
    (GET_PORT + "GETTERS = {{}}\nGETTERS.update(port=get_port)\n", _user("GETTERS", "GETTERS['port']()"), "port"),
    (GET_PORT + "GETTERS = []\nGETTERS.append(get_port)\n", _user("GETTERS", "GETTERS[0]()"), "port"),
    (REGISTRY, _user("GETTERS", "GETTERS['tp']()"), "tp_size"),
    (PORT_PROPERTY + "FACADES = {{}}\nFACADES['cfg'] = Cfg()\n", _user("FACADES", "FACADES['cfg'].port"), "port"),
    # a fetch with a literal name off the home module
    (PORT_PROPERTY + "cfg = Cfg()\n", "from legacy import server_args\ndef f():\n    return getattr(server_args, 'cfg').port\n", "port"),
    (GET_PORT, "import legacy.server_args as S\ndef f():\n    return getattr(S, 'get_port')()\n", "port"),
]


@pytest.mark.parametrize(("home", "user", "leaf"), CASES)
def test_a_home_facade_reached_another_way_reads_what_it_reads(tmp_path: Path, home: str, user: str, leaf: str) -> None:
    result = _scan(tmp_path, home.format(r=READING), user)
    leaves = {each for function, each, _ in reads_via(result) if function == "f"}
    assert leaves & {leaf, "*"}, (home, user, result.reads)
    assert fails(result)


@pytest.mark.parametrize(("home", "user", "leaf"), CASES)
def test_a_home_facade_reaching_another_object_stays_quiet(tmp_path: Path, home: str, user: str, leaf: str) -> None:
    result = _scan(tmp_path, home.format(r=QUIET), user)
    assert not reads_via(result), (home, user, result.reads)


# a member reading an attribute of its instance that the home sets to the record
BOUND_LATER = (
    "class Cfg:\n    def __init__(self):\n        self.args = None\n    def port(self):\n        return self.args.port\n"
    "cfg = Cfg()\ndef set_cfg():\n    cfg.args = {r}\n"
)


def test_a_facade_attribute_set_to_the_record_is_read_through_self(tmp_path: Path) -> None:
    user = "from legacy.server_args import cfg, set_cfg\ndef f():\n    set_cfg()\n    return cfg.port()\n"
    result = _scan(tmp_path, BOUND_LATER.format(r=READING), user)
    assert {each for function, each, _ in reads_via(result) if function == "f"} & {"port", "*"}, result.reads
    assert not reads_via(_scan(tmp_path, BOUND_LATER.format(r=QUIET), user))


def test_ordinary_tables_subclasses_and_singletons_stay_quiet(tmp_path: Path) -> None:
    home = (
        "class Cfg:\n    @property\n    def size(self):\n        return 3\n"
        "class Holder:\n    cfg = Cfg()\nclass Sub(Holder):\n    pass\n"
        "def version():\n    return '1'\nTABLE = {}\nTABLE['v'] = version\nTABLE.update(w=version)\n"
        "_ONE = None\ndef one():\n    global _ONE\n    if _ONE is None:\n        _ONE = Cfg()\n    return _ONE\n"
        "def made():\n    c = Cfg()\n    return c\n"
    )
    user = (
        "from legacy import server_args as S\nfrom legacy.server_args import Sub, Holder, TABLE, one, made\n"
        "class Mine(Holder):\n    pass\n"
        "def f():\n    return [Sub.cfg.size, Sub().cfg.size, Mine.cfg.size, TABLE['v'](), one().size, made().size,\n"
        "            getattr(S, 'version')(), getattr(S, 'Sub').cfg.size]\n"
    )
    result = _scan(tmp_path, home, user)
    assert not reads_via(result), result.reads


def test_a_subclass_overriding_the_attribute_reads_what_it_binds(tmp_path: Path) -> None:
    # `Sub.cfg` is Sub's own quiet object, not Holder's reading facade
    home = HOLDER.format(r=READING) + "class Quiet:\n    port = 1\nclass Sub(Holder):\n    cfg = Quiet()\n"
    result = _scan(tmp_path, home, _user("Sub", "Sub.cfg.port"))
    assert not reads_via(result), result.reads


def test_an_importer_subclass_binding_the_attribute_reads_what_it_binds(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import Holder\nclass Quiet:\n    port = 1\n"
        "class Mine(Holder):\n    cfg = Quiet()\ndef f():\n    return [Mine.cfg.port, Mine().cfg.port]\n"
    )
    result = _scan(tmp_path, HOLDER.format(r=READING), user)
    assert not reads_via(result), result.reads


# finding 10: a write of the published record through home code is a write where it is used
SETS_PORT = "def set_port(p):\n    {r}.port = p\ndef bump():\n    {r}.port += 1\n"
SETTER = (
    "class Cfg:\n    @property\n    def port(self):\n        return {r}.port\n"
    "    @port.setter\n    def port(self, v):\n        {r}.port = v\nfacade = Cfg()\n"
)
HOME_WRITES = [
    (SETS_PORT, _user("set_port", "set_port(1)")),
    (SETS_PORT, _user("bump", "bump()")),
    (SETS_PORT + "put = set_port\n", _user("put", "put(1)")),
    (SETTER, "from legacy.server_args import facade\ndef f():\n    facade.port = 1\n"),
]


@pytest.mark.parametrize(("home", "user"), HOME_WRITES)
def test_a_write_through_home_code_is_a_write(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home.format(r=READING), user)
    assert ("f", "port") in {(v.function, v.leaf) for v in result.violations if v.file == "pkg/user.py"}, result.violations
    quiet = _scan(tmp_path, home.format(r=QUIET), user)
    assert not [v for v in quiet.violations if v.file == "pkg/user.py"] and not reads_via(quiet)


def test_a_facade_with_a_setter_still_reads_through_its_getter(tmp_path: Path) -> None:
    result = _scan(tmp_path, SETTER.format(r=READING), _user("facade", "facade.port"))
    assert {leaf for function, leaf, _ in reads_via(result) if function == "f"} == {"port"}, result.reads
    assert not [v for v in result.violations if v.file == "pkg/user.py"]


def test_a_home_function_asking_the_records_type_reads_nothing(tmp_path: Path) -> None:
    # finding 9: `type(_G)` is its class, as `_G.__class__`; `type(_G)(...)` builds another
    home = "def describe():\n    return type(_GLOBAL_SERVER_ARGS).__name__\ndef whole():\n    return [_GLOBAL_SERVER_ARGS]\n"
    assert not reads_via(_scan(tmp_path, home, _user("describe", "describe()")))
    assert {leaf for _, leaf, _ in reads_via(_scan(tmp_path, home, _user("whole", "whole()")))} == {"*"}
