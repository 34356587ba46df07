"""Round nineteen's false passes of the read ratchet about the record's home module (an
outside attack, finding 3): second getters there that are no plain `def` gave the record
to importers unseen. A back-compat alias of the raw accessor or of another getter
(`get_args = get_server_args`, also wrapped: `functools.lru_cache()(...)`), a module-level
lambda (`current = lambda: _G`), a getter spelling the global through the module itself
(`globals()["_G"]`, `getattr(sys.modules[__name__], "_G")`), a module container of getters
(`GETTERS = {"args": get_server_args}`: any use is `*`) and a class attribute bound to one
(`class Holder: get = staticmethod(get_server_args)`). Each has a quiet twin: an alias of a
home function giving something else, a lambda returning another value, another global."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

BASE = (
    "import dataclasses\nimport functools\nimport sys\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n    port: int = 30000\n    page_size: int = 1\n"
    "_GLOBAL_SERVER_ARGS: Optional[ServerArgs] = None\n_PORT = 30000\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> ServerArgs:\n    return _GLOBAL_SERVER_ARGS\n"
    "def get_version():\n    return '1.0'\n"
    "def get_page_size():\n    return _GLOBAL_SERVER_ARGS.page_size\n"
)


def _scan(tmp_path: Path, home: str, user: str) -> ScanResult:
    return scan_with_home(tmp_path, BASE + home, {"user.py": user}, SETTINGS)


def _found(tmp_path: Path, home: str, name: str, expr: str) -> set[str]:
    user = f"from legacy.server_args import {name}\ndef f():\n    return {expr}\n"
    result = _scan(tmp_path, home, user)
    found = {leaf for function, leaf, _ in reads_via(result) if function == "f"}
    assert fails(result), result.reads
    return found


# (home addition, user import, user expression): read as `port` exactly
PRECISE = [
    # back-compat aliases, of the raw accessor and of another getter, chained, wrapped
    ("get_args = get_server_args\n", "get_args", "get_args().port"),
    ("get_args: object = get_server_args\n", "get_args", "get_args().port"),
    ("def get_global():\n    return _GLOBAL_SERVER_ARGS\nget_args = get_global\n", "get_args", "get_args().port"),
    ("get_args = get_server_args\nargs = get_args\n", "args", "args().port"),
    ("get_args = functools.lru_cache(maxsize=None)(get_server_args)\n", "get_args", "get_args().port"),
    ("get_args = functools.cache(get_server_args)\n", "get_args", "get_args().port"),
    ("get_args, version = get_server_args, get_version\n", "get_args", "get_args().port"),
    # module-level lambdas
    ("current = lambda: _GLOBAL_SERVER_ARGS\n", "current", "current().port"),
    ("current = lambda: get_server_args()\n", "current", "current().port"),
    ("current = lambda: globals()['_GLOBAL_SERVER_ARGS']\n", "current", "current().port"),
    # the global spelled through the module itself
    ("def get_args():\n    return globals()['_GLOBAL_SERVER_ARGS']\n", "get_args", "get_args().port"),
    ("def get_args():\n    return globals().get('_GLOBAL_SERVER_ARGS')\n", "get_args", "get_args().port"),
    ("def get_args():\n    return getattr(sys.modules[__name__], '_GLOBAL_SERVER_ARGS')\n", "get_args", "get_args().port"),
    ("def get_args():\n    return sys.modules[__name__]._GLOBAL_SERVER_ARGS\n", "get_args", "get_args().port"),
    ("def get_args():\n    return vars(sys.modules[__name__])['_GLOBAL_SERVER_ARGS']\n", "get_args", "get_args().port"),
    # a class attribute bound to a getter
    ("class Holder:\n    get = staticmethod(get_server_args)\n", "Holder", "Holder.get().port"),
    ("class Holder:\n    get = get_server_args\n", "Holder", "Holder.get().port"),
    ("class Holder:\n    get = staticmethod(lambda: _GLOBAL_SERVER_ARGS)\n", "Holder", "Holder.get().port"),
    ("class Holder:\n    get = lambda: _GLOBAL_SERVER_ARGS\n", "Holder", "Holder.get().port"),
    ("class Holder:\n    pass\nHolder.get = staticmethod(get_server_args)\n", "Holder", "Holder.get().port"),
    ("get_args = get_server_args\nclass Holder:\n    get = staticmethod(get_args)\n", "Holder", "Holder.get().port"),
    ("class Holder:\n    get = staticmethod(functools.cache(get_server_args))\n", "Holder", "Holder.get().port"),
    # the later binding of a name wins, as at import
    ("def get_args():\n    return _PORT\nget_args = get_server_args\n", "get_args", "get_args().port"),
    ("get_args = get_version\nget_args = lambda: _GLOBAL_SERVER_ARGS\n", "get_args", "get_args().port"),
    (
        "class Holder:\n    @staticmethod\n    def get():\n        return _PORT\n    get = staticmethod(get_server_args)\n",
        "Holder", "Holder.get().port",
    ),
]


@pytest.mark.parametrize(("home", "name", "expr"), PRECISE)
def test_a_second_getter_that_is_no_plain_def_gives_the_record(tmp_path: Path, home: str, name: str, expr: str) -> None:
    assert "port" in _found(tmp_path, home, name, expr)


# (home addition, user import, user expression): read as `port` or `*`
LOOSE = [
    ("GETTERS = {'args': get_server_args}\n", "GETTERS", "GETTERS['args']().port"),
    ("GETTERS = {'args': get_server_args, 'v': get_version}\n", "GETTERS", "GETTERS['args']().port"),
    ("GETTERS = [get_server_args]\n", "GETTERS", "GETTERS[0]().port"),
    ("GETTERS = {'args': lambda: _GLOBAL_SERVER_ARGS}\n", "GETTERS", "GETTERS['args']().port"),
    ("GETTERS = dict(args=get_server_args)\n", "GETTERS", "GETTERS['args']().port"),
    ("class Holder:\n    GETTERS = {'args': get_server_args}\n", "Holder", "Holder.GETTERS['args']().port"),
    ("get_args = functools.partial(get_server_args)\n", "get_args", "get_args().port"),
]


@pytest.mark.parametrize(("home", "name", "expr"), LOOSE)
def test_a_container_of_getters_is_a_read_at_each_use(tmp_path: Path, home: str, name: str, expr: str) -> None:
    assert _found(tmp_path, home, name, expr) & {"port", "*"}


def test_an_alias_of_a_getter_reading_a_leaf_reads_that_leaf(tmp_path: Path) -> None:
    assert _found(tmp_path, "page = get_page_size\n", "page", "page()") == {"page_size"}


QUIET = [
    # an alias of a home function giving something else, a lambda returning another value
    ("version = get_version\n", "version", "version().port"),
    ("setter = set_global_server_args\n", "setter", "setter(1)"),
    ("current = lambda: _PORT\n", "current", "current().port"),
    ("current = lambda: 30000\n", "current", "current().port"),
    ("class Holder:\n    get = staticmethod(lambda: 30000)\n", "Holder", "Holder.get().port"),
    ("current = lambda x: x\n", "current", "current(3).port"),
    ("def get_args():\n    return globals()['_PORT']\n", "get_args", "get_args().port"),
    ("def get_args():\n    return getattr(sys.modules[__name__], '_PORT')\n", "get_args", "get_args().port"),
    ("class Holder:\n    get = staticmethod(get_version)\n", "Holder", "Holder.get().port"),
    ("VERSIONS = {'v': get_version}\n", "VERSIONS", "VERSIONS['v']().port"),
    ("VERSIONS = {'v': get_version, 'n': lambda: 30000}\n", "VERSIONS", "VERSIONS['v']().port"),
    ("class Holder:\n    VERSIONS = {'v': get_version}\n", "Holder", "Holder.VERSIONS['v']().port"),
    # the later binding of a name wins: the alias replaced by a def giving something else
    ("get_args = get_server_args\ndef get_args():\n    return _PORT\n", "get_args", "get_args().port"),
    ("get_args = lambda: _GLOBAL_SERVER_ARGS\nget_args = get_version\n", "get_args", "get_args().port"),
    (
        "class Holder:\n    get = staticmethod(get_server_args)\n    @staticmethod\n    def get():\n        return _PORT\n",
        "Holder", "Holder.get().port",
    ),
    (
        "class Holder:\n    get = staticmethod(functools.cache(get_server_args))\n    @staticmethod\n    def get():\n"
        "        return _PORT\n",
        "Holder", "Holder.get().port",
    ),
    ("NAMES = ['get_server_args']\n", "NAMES", "NAMES[0].port"),
]


@pytest.mark.parametrize(("home", "name", "expr"), QUIET)
def test_what_gives_no_record_reads_nothing(tmp_path: Path, home: str, name: str, expr: str) -> None:
    user = f"from legacy.server_args import {name}\ndef f():\n    return {expr}\n"
    result = _scan(tmp_path, home, user)
    assert not reads_via(result), result.reads
    assert not fails(result)


def test_a_raw_accessor_that_is_itself_an_alias_seeds_the_holders(tmp_path: Path) -> None:
    home = "_OTHER = None\ndef _get():\n    return _OTHER\nget_server_args = _get\ndef get_args():\n    return _OTHER\n"
    assert "port" in _found(tmp_path, home, "get_args", "get_args().port")


@pytest.mark.parametrize(
    "store", ["setattr(sys.modules[__name__], 'ARGS', a)", "sys.modules[__name__].ARGS = a", "vars(sys.modules[__name__])['ARGS'] = a"]
)
def test_a_global_stored_through_the_module_itself_is_a_holder(tmp_path: Path, store: str) -> None:
    home = f"ARGS = None\ndef publish(a: ServerArgs):\n    {store}\n"
    assert "port" in _found(tmp_path, home, "ARGS", "ARGS.port")


def test_a_lambda_bound_in_the_record_class_is_a_method_reading_what_it_reads(tmp_path: Path) -> None:
    home = "ServerArgs.url = lambda self: f'h:{self.port}'\n"
    user = "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args().url()\n"
    result = _scan(tmp_path, home, user)
    assert fails(result), result.reads
    assert "port" in {leaf for function, leaf, _ in reads_via(result) if function == "f"}
