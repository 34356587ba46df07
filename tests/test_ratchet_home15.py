"""Round fifteen's false passes of the read ratchet about the record's home module (an
outside attack): the home hands the published record out in shapes its second getters
did not follow. A getter returning a cast of the record (`typing.cast(ServerArgs, _G)`,
R15-A); and the setter storing what it receives in another holder, which a getter returns
or an importer reads directly: a class attribute singleton (`ServerArgs._instance = a`,
read by `ServerArgs.instance()`, B1), a `threading.local()` (B2), a `ContextVar` (B3), a
`SimpleNamespace` (B4). Each case fails before its rule; the precision cases beside them
(the home's unrelated holders, singletons and context variables) stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.check import check
from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))


def _scan(tmp_path: Path, home: str, files: dict[str, str], cache: Path | None = None) -> ScanResult:
    return scan_with_home(tmp_path, home, files, SETTINGS, cache)


def _leaves(result: ScanResult) -> set[tuple[str, str]]:
    return {(function, leaf) for function, leaf, _ in reads_via(result)}


# ---- R15-A: a second getter returning a cast of the record

CAST_HOME = (
    "import typing\nfrom typing import cast\nimport typing as t\n_G = None\n_PORT = 0\n"
    "class ServerArgs:\n    pass\n"
    "def get_server_args() -> ServerArgs:\n    return _G\n"
    "def set_global_server_args(a):\n    global _G\n    _G = a\n"
    "def get_global_server_args():\n    return typing.cast(ServerArgs, _G)\n"
    "def get_quoted():\n    return cast('ServerArgs', _G)\n"
    "def get_aliased():\n    return t.cast(ServerArgs, _G)\n"
    # not the record: a cast of another global, of a literal
    "def get_port():\n    return cast(int, _PORT)\n"
    "def get_defaults():\n    return typing.cast(ServerArgs, {'page_size': 1})\n"
)


@pytest.mark.parametrize("getter", ["get_global_server_args", "get_quoted", "get_aliased"])
def test_a_getter_returning_a_cast_of_the_record_gives_the_record(tmp_path: Path, getter: str) -> None:
    user = f"from legacy.server_args import {getter}\ndef f():\n    return {getter}().page_size\n"
    result = _scan(tmp_path, CAST_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_a_cast_of_something_else_gives_nothing(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import get_port, get_defaults\ndef f():\n"
        "    return get_port().page_size, get_defaults().tp_size\n"
    )
    assert not reads_via(_scan(tmp_path, CAST_HOME, {"user.py": user}))


# ---- R15-B1: a class attribute singleton

SINGLETON_HOME = (
    "class ServerArgs:\n    _instance = None\n    _other = None\n"
    "    @classmethod\n    def instance(cls):\n        return cls._instance\n"
    "    @classmethod\n    def by_name(cls):\n        return ServerArgs._instance\n"
    "    @classmethod\n    def other(cls):\n        return cls._other\n"
    "    @classmethod\n    def publish(cls, a):\n        cls._instance = a\n"
    "def set_global_server_args(a):\n    ServerArgs._instance = a\n    ServerArgs._other = 8000\n"
    "def get_server_args() -> ServerArgs:\n    return ServerArgs.instance()\n"
    "def get_global_server_args():\n    return ServerArgs.instance()\n"
    # another class's singleton of its own: not the record
    "class Registry:\n    _instance = None\n"
    "    @classmethod\n    def instance(cls):\n        if cls._instance is None:\n            cls._instance = Registry()\n"
    "        return cls._instance\n"
)


@pytest.mark.parametrize("read", [
    "ServerArgs.instance().page_size", "ServerArgs._instance.page_size", "ServerArgs.by_name().page_size",
    "get_global_server_args().page_size", "S.ServerArgs.instance().page_size", "S.ServerArgs._instance.page_size",
])
def test_a_class_attribute_singleton_gives_the_record(tmp_path: Path, read: str) -> None:
    user = (
        "from legacy.server_args import ServerArgs, get_global_server_args\nfrom legacy import server_args as S\n"
        f"def f():\n    return {read}\n"
    )
    result = _scan(tmp_path, SINGLETON_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_the_singleton_is_the_published_record_not_one_built_in_place(tmp_path: Path) -> None:
    user = "from legacy.server_args import ServerArgs\ndef f():\n    return ServerArgs.instance().page_size\n"
    result = _scan(tmp_path, SINGLETON_HOME, {"user.py": user})
    report = check(result, [], {}, min_files=1)
    assert not report.ok
    assert {r.via for r in result.reads if r.file == "pkg/user.py"} == {"wrapper"}, result.reads
    messages = "\n".join(failure.message for failure in report.failures)
    assert "a function returning the raw record" in messages and "built in place" not in messages, messages


def test_the_singleton_attribute_is_the_record_not_a_class_default(tmp_path: Path) -> None:
    user = "from legacy.server_args import ServerArgs\ndef f():\n    return ServerArgs._instance.page_size\n"
    assert _leaves(_scan(tmp_path, SINGLETON_HOME, {"user.py": user})) == {("f", "page_size")}


def test_the_class_s_other_attributes_and_another_singleton_give_nothing(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import ServerArgs, Registry\ndef f():\n"
        "    return ServerArgs._other.tp_size, Registry.instance().page_size, Registry._instance.tp_size\n"
    )
    # (a class attribute of the record class reads itself, the class's default, as before)
    assert _leaves(_scan(tmp_path, SINGLETON_HOME, {"user.py": user})) == {("f", "_other")}


# ---- R15-B2: a threading.local()

LOCAL_HOME = (
    "import threading\nLOCAL = threading.local()\nSPARE = threading.local()\n"
    "class ServerArgs:\n    pass\n"
    "def set_global_server_args(a):\n    LOCAL.args = a\n    LOCAL.port = 8000\n    SPARE.args = None\n"
    "def get_server_args() -> ServerArgs:\n    return LOCAL.args\n"
    "def get_global_server_args():\n    return LOCAL.args\n"
    "def get_by_getattr():\n    return getattr(LOCAL, 'args', None)\n"
    "def get_port():\n    return LOCAL.port\n"
    "def get_spare():\n    return SPARE.args\n"
)


@pytest.mark.parametrize("user", [
    "from legacy.server_args import get_global_server_args\ndef f():\n    return get_global_server_args().page_size\n",
    "from legacy.server_args import get_by_getattr\ndef f():\n    return get_by_getattr().page_size\n",
    "from legacy.server_args import LOCAL\ndef f():\n    return LOCAL.args.page_size\n",
    "from legacy import server_args as S\ndef f():\n    return S.LOCAL.args.page_size\n",
])
def test_a_thread_local_holder_gives_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, LOCAL_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_a_private_thread_local_holder_gives_the_record_too(tmp_path: Path) -> None:
    home = LOCAL_HOME.replace("LOCAL", "_LOCAL")
    user = "from legacy.server_args import _LOCAL\ndef f():\n    return _LOCAL.args.page_size\n"
    result = _scan(tmp_path, home, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_the_thread_local_s_other_slots_give_nothing(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import LOCAL, SPARE, get_port, get_spare\ndef f():\n"
        "    return LOCAL.port.page_size, SPARE.args.page_size, get_port().tp_size, get_spare().tp_size\n"
    )
    assert not reads_via(_scan(tmp_path, LOCAL_HOME, {"user.py": user}))


# ---- R15-B3: a contextvars.ContextVar

VAR_HOME = (
    "import contextvars\nfrom contextvars import ContextVar\n"
    "SERVER_ARGS_VAR = contextvars.ContextVar('server_args')\nPORT_VAR = ContextVar('port', default=0)\n"
    "class ServerArgs:\n    pass\n"
    "def set_global_server_args(a):\n    SERVER_ARGS_VAR.set(a)\n    PORT_VAR.set(8000)\n"
    "def get_server_args() -> ServerArgs:\n    return SERVER_ARGS_VAR.get()\n"
    "def get_global_server_args():\n    return SERVER_ARGS_VAR.get(None)\n"
    "def get_port():\n    return PORT_VAR.get()\n"
)


@pytest.mark.parametrize("user", [
    "from legacy.server_args import get_global_server_args\ndef f():\n    return get_global_server_args().page_size\n",
    "from legacy.server_args import SERVER_ARGS_VAR\ndef f():\n    return SERVER_ARGS_VAR.get().page_size\n",
    "from legacy.server_args import SERVER_ARGS_VAR as V\ndef f():\n    return V.get(None).page_size\n",
    "import legacy.server_args as S\ndef f():\n    return S.SERVER_ARGS_VAR.get().page_size\n",
])
def test_a_context_variable_gives_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, VAR_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_the_setter_s_variable_is_the_record_where_the_raw_accessor_does_not_say(tmp_path: Path) -> None:
    # the raw accessor returns another thing: the setter alone tells where the record goes
    home = VAR_HOME.replace("return SERVER_ARGS_VAR.get()\n", "return None\n", 1)
    user = "from legacy.server_args import SERVER_ARGS_VAR\ndef f():\n    return SERVER_ARGS_VAR.get().page_size\n"
    result = _scan(tmp_path, home, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_another_context_variable_gives_nothing(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import PORT_VAR, get_port\ndef f():\n"
        "    return PORT_VAR.get().page_size, get_port().tp_size\n"
    )
    assert not reads_via(_scan(tmp_path, VAR_HOME, {"user.py": user}))


# ---- R15-B4: a types.SimpleNamespace holder

NAMESPACE_HOME = (
    "from types import SimpleNamespace\nSTATE = SimpleNamespace(args=None, port=0)\nOTHER = SimpleNamespace(args=None)\n"
    "class ServerArgs:\n    pass\n"
    "def set_global_server_args(a):\n    STATE.args = a\n    STATE.port = 8000\n"
    "def get_server_args() -> ServerArgs:\n    return STATE.args\n"
)


@pytest.mark.parametrize("user", [
    "from legacy.server_args import STATE\ndef f():\n    return STATE.args.page_size\n",
    "from legacy.server_args import STATE as ST\ndef f():\n    s = ST.args\n    return s.page_size\n",
    "from legacy import server_args\ndef f():\n    return server_args.STATE.args.page_size\n",
])
def test_a_namespace_holder_gives_the_record(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, NAMESPACE_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_the_holder_where_the_raw_accessor_alone_tells(tmp_path: Path) -> None:
    # stored by a function not named as the setter: what the raw accessor returns is held
    home = NAMESPACE_HOME.replace("def set_global_server_args(a):", "def install(a):")
    user = "from legacy.server_args import STATE\ndef f():\n    return STATE.args.page_size\n"
    assert ("f", "page_size") in _leaves(_scan(tmp_path, home, {"user.py": user}))


def test_another_object_s_attribute_of_that_name_is_not_the_record(tmp_path: Path) -> None:
    # (the holder is read by its spelling: `ns.args` of any other object is not it)
    user = "from legacy.server_args import STATE\ndef f(ns):\n    return STATE.args.page_size, ns.args.tp_size, STATE.port\n"
    assert _leaves(_scan(tmp_path, NAMESPACE_HOME, {"user.py": user})) == {("f", "page_size")}


def test_what_another_setter_stores_is_not_the_record(tmp_path: Path) -> None:
    home = NAMESPACE_HOME + "def set_port(p):\n    OTHER.args = p\n"
    user = "from legacy.server_args import OTHER\ndef f():\n    return OTHER.args.page_size\n"
    assert not reads_via(_scan(tmp_path, home, {"user.py": user}))


def test_the_namespace_s_other_slots_and_another_namespace_give_nothing(tmp_path: Path) -> None:
    user = "from legacy.server_args import STATE, OTHER\ndef f():\n    return STATE.port.page_size, OTHER.args.page_size\n"
    assert not reads_via(_scan(tmp_path, NAMESPACE_HOME, {"user.py": user}))


def test_a_namespace_holder_re_exported_by_a_scanned_module_is_the_record(tmp_path: Path) -> None:
    files = {
        "compat.py": "from legacy.server_args import STATE\n",
        "user.py": "from pkg.compat import STATE\ndef f():\n    return STATE.args.page_size\n",
    }
    result = _scan(tmp_path, NAMESPACE_HOME, files)
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_a_warm_check_reads_the_holders_the_same(tmp_path: Path) -> None:
    files = {"user.py": "from legacy.server_args import STATE\ndef f():\n    return STATE.args.page_size\n"}
    cache = tmp_path / "cache"
    cold = _scan(tmp_path, NAMESPACE_HOME, files, cache=cache)
    warm = _scan(tmp_path, NAMESPACE_HOME, files, cache=cache)
    assert warm.files_from_cache and reads_via(warm) == reads_via(cold)
    assert ("f", "page_size") in _leaves(cold), cold.reads


# ---- the global the setter binds, imported or read through the module

@pytest.mark.parametrize("user", [
    "from legacy.server_args import _G\ndef f():\n    return _G.page_size\n",
    "from legacy import server_args as S\ndef f():\n    return S._G.page_size\n",
    "import legacy.server_args\ndef f():\n    return legacy.server_args._G.page_size\n",
])
def test_the_global_the_setter_binds_is_the_record_to_importers(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, CAST_HOME, {"user.py": user})
    assert fails(result)
    assert ("f", "page_size") in _leaves(result), result.reads


def test_another_global_of_the_home_module_is_not_the_record(tmp_path: Path) -> None:
    user = "from legacy import server_args as S\ndef f():\n    return S._PORT.page_size\n"
    assert ("f", "page_size") not in _leaves(_scan(tmp_path, CAST_HOME, {"user.py": user}))
