"""Round nineteen's false passes of the read ratchet about the record class's methods in its
home module (an outside attack, findings 1, 2 and 4). The home is excluded from the scan, so
what a method of the record reads off `self` is charged where it is called on the record;
the method was missed unless it was a `def` written in the record class body. Now: a method
of a base class in the home (`class ServerArgs(_Base)`), one bound in the class body from a
module function (`url = _url`, `current = classmethod(_cp)`) or attached after the class
(`ServerArgs.url = _url`), one called unbound (`ServerArgs.url(rec)`), and one inherited from
a mixin in a scanned module (`from pkg.mixin import ArgsMixin`), whose `self` is the record.
Each has a twin reading nothing off the record, which stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))

HEAD = "import dataclasses\nfrom typing import Optional\n"
FIELDS = "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
TAIL = (
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)
RECORD = "@dataclasses.dataclass\nclass ServerArgs{bases}:\n" + FIELDS + "{body}"


def _home(before: str = "", bases: str = "", body: str = "", after: str = "") -> str:
    return HEAD + before + RECORD.format(bases=bases, body=body) + TAIL + after


def _scan(tmp_path: Path, home: str, files: dict[str, str]) -> ScanResult:
    return scan_with_home(tmp_path, home, files, SETTINGS)


BOUND = "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args().url()\n"
UNBOUND = "from legacy.server_args import get_server_args, ServerArgs\ndef f():\n    return ServerArgs.url(get_server_args())\n"
CLASS_CALL = "from legacy.server_args import ServerArgs\ndef f():\n    return ServerArgs.current_port()\n"

URL = "def url(self):\n    return f'h:{self.port}'\n"
NO_URL = "def url(self):\n    return 'h'\n"


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def _url_homes(url: str) -> list[str]:
    return [
        # the record class's own method (the control, read before)
        _home(body=_indent(url)),
        # a method of a base class in the home
        _home(before="class _Base:\n" + _indent(url), bases="(_Base)"),
        _home(before="class _Root:\n" + _indent(url) + "class _Base(_Root):\n    pass\n", bases="(_Base)"),
        # the first of two bases defining it wins, as in Python's method order
        _home(before="class _A:\n" + _indent(url) + "class _B:\n" + _indent(NO_URL), bases="(_A, _B)"),
        # bound in the class body from a module function
        _home(before=url.replace("def url", "def _url"), body="    url = _url\n"),
        # attached after the class
        _home(after=url.replace("def url", "def _url") + "ServerArgs.url = _url\n"),
    ]


CLASSMETHOD = "def _cp(cls):\n    return _GLOBAL_SERVER_ARGS.port\n"
NO_CLASSMETHOD = "def _cp(cls):\n    return 30000\n"


def _classmethod_homes(cp: str) -> list[str]:
    return [
        _home(after=cp + "ServerArgs.current_port = classmethod(_cp)\n"),
        _home(before=cp.replace("_GLOBAL_SERVER_ARGS", "get_server_args()"), body="    current_port = classmethod(_cp)\n"),
    ]


READING = [
    *((home, BOUND) for home in _url_homes(URL)),
    *((home, UNBOUND) for home in _url_homes(URL)),
    *((home, CLASS_CALL) for home in _classmethod_homes(CLASSMETHOD)),
]


@pytest.mark.parametrize(("home", "user"), READING)
def test_a_record_method_of_the_home_reads_what_it_reads_off_self(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home, {"user.py": user})
    assert ("f", "port") in {(function, leaf) for function, leaf, _ in reads_via(result)}, (home, result.reads)
    assert fails(result)


QUIET = [
    *((home, BOUND) for home in _url_homes(NO_URL)),
    *((home, UNBOUND) for home in _url_homes(NO_URL)),
    *((home, CLASS_CALL) for home in _classmethod_homes(NO_CLASSMETHOD)),
    # an unbound call handed something other than the record
    (_home(body=_indent(URL)), "from legacy.server_args import ServerArgs\ndef f(x):\n    return ServerArgs.url(x)\n"),
    # a base's method hidden by an earlier base's
    (_home(before="class _A:\n" + _indent(NO_URL) + "class _B:\n" + _indent(URL), bases="(_A, _B)"), BOUND),
    # a module function never bound to the record class
    (_home(before=URL.replace("def url", "def _url")), BOUND),
    # a base's method on a class that is not the record
    (_home(after="class _Base:\n" + _indent(URL) + "class PortArgs(_Base):\n    port: int = 1\n"), BOUND),
]


@pytest.mark.parametrize(("home", "user"), QUIET)
def test_a_record_method_reading_nothing_off_self_stays_quiet(tmp_path: Path, home: str, user: str) -> None:
    result = _scan(tmp_path, home, {"user.py": user})
    assert not reads_via(result), (home, result.reads)


# ---- finding 2: a mixin in a scanned module the record class derives from

MIXIN_HOME = _home(before="from pkg.mixin import ArgsMixin\n", bases="(ArgsMixin)")
MIXIN_HOMES = [
    MIXIN_HOME,
    # through a base of the home's own, and renamed on import
    _home(before="from pkg.mixin import ArgsMixin as M\nclass _Base(M):\n    pass\n", bases="(_Base)"),
]


@pytest.mark.parametrize("home", MIXIN_HOMES)
def test_a_mixin_the_record_derives_from_reads_the_record_off_self(tmp_path: Path, home: str) -> None:
    mixin = "class ArgsMixin:\n    def url(self):\n        return f'http://h:{self.port}'\n"
    result = _scan(tmp_path, home, {"mixin.py": mixin, "user.py": BOUND})
    every = {(read.file, read.leaf) for read in result.reads}
    assert every & {("pkg/mixin.py", "port"), ("pkg/user.py", "port")}, result.reads
    assert fails(result)


def test_a_mixin_reading_nothing_off_self_stays_quiet(tmp_path: Path) -> None:
    mixin = "class ArgsMixin:\n    def url(self):\n        return 'h'\nclass Other:\n    def url(self):\n        return self.port\n"
    result = _scan(tmp_path, MIXIN_HOME, {"mixin.py": mixin, "user.py": BOUND})
    assert not result.reads, result.reads
