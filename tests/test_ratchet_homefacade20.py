"""Round twenty's false passes of the read ratchet about the record's home module's other
classes and names (an outside attack, finding 2 and note 3). The home is excluded from the
scan, so what its code reads off the record is charged where an importer uses it: an
instance method, property, `__getattr__`, `__call__` or `__getitem__` of a home class other
than the record, used through a module-level instance (`CFG = Cfg()`, `CFG.port`,
`CFG.get().port`, `get_args = _Getter()`) or one made on the spot (`Cfg().port()`), a
metaclass's `__getitem__` (`Args['port']`), and a module `__getattr__` giving a leaf
(`S.PORT`) were missed. Each has a twin reading nothing, which stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

HOME = (
    "import dataclasses\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)


def _scan(tmp_path: Path, after: str, user: str) -> ScanResult:
    return scan_with_home(tmp_path, HOME + after, {"user.py": user}, SETTINGS)


def _user(names: str, expr: str) -> str:
    return f"from legacy.server_args import {names}\ndef f():\n    return {expr}\n"


def _cls(name: str, member: str, returns: str, decorator: str = "", instance: str = "") -> str:
    deco = f"    {decorator}\n" if decorator else ""
    text = f"class {name}:\n{deco}    def {member}:\n        return {returns}\n"
    return text + (f"{instance} = {name}()\n" if instance else "")


# (home code after the record, reading body, quiet body, importer)
CASES = [
    (("Cfg", "port(self)", "", ""), "get_server_args().port", "30000", _user("Cfg", "Cfg().port()")),
    (("Cfg", "port(self)", "", "cfg"), "get_server_args().port", "30000", _user("cfg", "cfg.port()")),
    (("Cfg", "port(self)", "@property", "CFG"), "_GLOBAL_SERVER_ARGS.port", "30000", _user("CFG", "CFG.port")),
    (("Cfg", "__getattr__(self, k)", "", "CFG"), "getattr(_GLOBAL_SERVER_ARGS, k)", "None", _user("CFG", "CFG.port")),
    (("Cfg", "get(self)", "", "CFG"), "_GLOBAL_SERVER_ARGS", "None", _user("CFG", "CFG.get().port")),
    (("Cfg", "get(self)", "", ""), "_GLOBAL_SERVER_ARGS", "None", _user("Cfg", "Cfg().get().port")),
    (("_Getter", "__call__(self)", "", "get_args"), "_GLOBAL_SERVER_ARGS", "None", _user("get_args", "get_args().port")),
    (("Args", "__getitem__(self, k)", "", "ARGS"), "getattr(_GLOBAL_SERVER_ARGS, k)", "k", _user("ARGS", "ARGS['port']")),
    (("Args", "__getitem__(self, k)", "", "ARGS"), "_GLOBAL_SERVER_ARGS", "None", _user("ARGS", "ARGS['x'].port")),
]


@pytest.mark.parametrize(("shape", "reading", "user"), [(c[0], c[1], c[3]) for c in CASES])
def test_a_home_facade_class_reads_what_its_members_read_off_the_record(
    tmp_path: Path, shape: tuple[str, str, str, str], reading: str, user: str,
) -> None:
    name, member, decorator, instance = shape
    result = _scan(tmp_path, _cls(name, member, reading, decorator, instance), user)
    leaves = {leaf for function, leaf, _ in reads_via(result) if function == "f"}
    assert leaves & {"port", "*"}, (shape, user, result.reads)
    assert fails(result)


@pytest.mark.parametrize(("shape", "quiet", "user"), [(c[0], c[2], c[3]) for c in CASES])
def test_a_home_facade_class_reading_nothing_stays_quiet(
    tmp_path: Path, shape: tuple[str, str, str, str], quiet: str, user: str,
) -> None:
    name, member, decorator, instance = shape
    result = _scan(tmp_path, _cls(name, member, quiet, decorator, instance), user)
    assert not reads_via(result), (shape, user, result.reads)


META = "class Meta(type):\n    def __getitem__(cls, k):\n        return {returns}\nclass Args(metaclass=Meta):\n    pass\n"
MODULE_GETATTR = "def __getattr__(name):\n    if name == 'PORT':\n        return {returns}\n    raise AttributeError(name)\n"
MODULE_USER = "from legacy import server_args as S\ndef f():\n    return S.PORT\n"
OTHERS = [
    (META, "getattr(_GLOBAL_SERVER_ARGS, k)", "k", _user("Args", "Args['port']")),
    (MODULE_GETATTR, "_GLOBAL_SERVER_ARGS.port", "30000", MODULE_USER),
    # an alias of a leaf reader (main reads it since round nineteen's alias fix)
    ("def port_of():\n    return {returns}\nPORT_OF = port_of\n", "_GLOBAL_SERVER_ARGS.port", "30000", _user("PORT_OF", "PORT_OF()")),
]


@pytest.mark.parametrize(("home", "reading", "user"), [(c[0], c[1], c[3]) for c in OTHERS])
def test_a_metaclass_or_module_getattr_of_the_home_reads_what_it_reads(tmp_path: Path, home: str, reading: str, user: str) -> None:
    result = _scan(tmp_path, home.format(returns=reading), user)
    assert {leaf for function, leaf, _ in reads_via(result) if function == "f"} & {"port", "*"}, result.reads
    assert fails(result)


@pytest.mark.parametrize(("home", "quiet", "user"), [(c[0], c[2], c[3]) for c in OTHERS])
def test_a_metaclass_or_module_getattr_reading_nothing_stays_quiet(tmp_path: Path, home: str, quiet: str, user: str) -> None:
    result = _scan(tmp_path, home.format(returns=quiet), user)
    assert not reads_via(result), result.reads


def test_a_facade_class_with_ordinary_members_keeps_its_users_quiet(tmp_path: Path) -> None:
    home = (
        "class Cfg:\n    def __repr__(self):\n        return 'Cfg()'\n    def __len__(self):\n        return 0\n"
        "    def name(self):\n        return 'x'\n    @staticmethod\n    def make():\n        return Cfg()\nCFG = Cfg()\n"
    )
    user = "from legacy.server_args import CFG, Cfg\ndef f():\n    return [CFG.name(), len(CFG), repr(CFG), Cfg.make(), isinstance(CFG, Cfg)]\n"
    result = _scan(tmp_path, home, user)
    assert not reads_via(result), result.reads
