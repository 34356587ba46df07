"""Round twelve's V6 (an outside attack on the read ratchet): a loop over a module constant
of variable names, `for n in _NAMES: getattr(envs, n).get()` with SGLang's descriptor per
variable, or `os.environ.get(n)` / `os.getenv(n)`. The loop variable takes each element of
the constant inside the loop only; a constant that is not one (rebound, grown) or a loop
variable rebound in the loop gives `$?`, never a pass, and a constant naming no declared
variable stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

from configbags.migrate.check import check
from configbags.migrate.scan import ScanResult
from configbags.migrate.scanmodel import Entry

# SGLang's environ module: a descriptor per variable, whose `.get()` reads os.environ by
# the attribute's name (the module's own `$?`, allowlisted below)
ENVS = """\
import os
class EnvInt:
    def __init__(self, default):
        self.default = default
    def __set_name__(self, owner, name):
        self.name = name
    def get(self):
        return int(os.environ.get(self.name, self.default))
    def set(self, value):
        os.environ[self.name] = str(value)
class Envs:
    SGLANG_PAGE_SIZE = EnvInt(16)
    SGLANG_OTHER = EnvInt(0)
envs = Envs()
"""
ENVS_ENTRY = Entry("pkg/envs.py", "EnvInt.get", "$?", "the descriptor reads the variable it is named for")
PAGE = "$SGLANG_PAGE_SIZE"
HEAD = "import os\nfrom pkg.envs import envs\n"


def _check_ok(result: ScanResult) -> bool:
    return check(result, [ENVS_ENTRY], ACCESSORS, min_files=1).ok


def _user(root: Path, user: str, **others: str) -> tuple[set[tuple[str, str]], bool]:
    result = _scan(root, {"envs.py": ENVS, **others, "user.py": HEAD + user})
    return _keys(result), _check_ok(result)


_CONSTANTS = {
    "tuple": '("SGLANG_PAGE_SIZE", "SGLANG_OTHER")',
    "list": '["SGLANG_PAGE_SIZE", "SGLANG_OTHER"]',
    "set": '{"SGLANG_PAGE_SIZE", "SGLANG_OTHER"}',
    "frozenset": 'frozenset({"SGLANG_PAGE_SIZE", "SGLANG_OTHER"})',
    "frozenset_of_tuple": 'frozenset(("SGLANG_PAGE_SIZE", "SGLANG_OTHER"))',
    "tuple_annotated": None,
}
_READERS = {
    "descriptor": "getattr(envs, n).get()",
    "descriptor_default": "getattr(envs, n, None)",
    "environ_get": "os.environ.get(n)",
    "getenv": "os.getenv(n, '16')",
    "environ_item": "os.environ[n]",
}


def _constant(shape: str) -> str:
    if shape == "tuple_annotated":
        return '_NAMES: tuple[str, ...] = ("SGLANG_PAGE_SIZE", "SGLANG_OTHER")\n'
    return f"_NAMES = {_CONSTANTS[shape]}\n"


@pytest.mark.parametrize("reader", sorted(_READERS))
@pytest.mark.parametrize("shape", sorted(_CONSTANTS))
def test_a_loop_over_a_module_constant_reads_each_declared_variable_it_names(
    tmp_path: Path, shape: str, reader: str
) -> None:
    user = _constant(shape) + f"def f():\n    for n in _NAMES:\n        {_READERS[reader]}\n"
    keys, ok = _user(tmp_path, user)
    assert keys == {("f", PAGE)}
    assert not ok


@pytest.mark.parametrize("loop", [
    # a loop over a literal of two names (value() gives no single name)
    "def f():\n    for n in ('SGLANG_PAGE_SIZE', 'HOME'):\n        getattr(envs, n).get()\n",
    # a comprehension, a module-level loop, and a constant bound after the function
    "def f():\n    return [getattr(envs, n).get() for n in _NAMES]\n",
    "for n in _NAMES:\n    getattr(envs, n).get()\n",
    "def f():\n    for n in LATER:\n        getattr(envs, n).get()\nLATER = _NAMES\n",
    # the constant wrapped where it is iterated, or spread into a literal
    "def f():\n    for n in sorted(_NAMES):\n        getattr(envs, n).get()\n",
    "def f():\n    for n in (*_NAMES, 'HOME'):\n        getattr(envs, n).get()\n",
])
def test_the_loops_other_spellings_read_the_variable(tmp_path: Path, loop: str) -> None:
    keys, ok = _user(tmp_path, _constant("tuple") + loop)
    assert PAGE in {leaf for _, leaf in keys}, keys
    assert "$?" not in {leaf for _, leaf in keys}, keys
    assert not ok


@pytest.mark.parametrize("reader", sorted(_READERS))
def test_a_loop_over_a_constant_naming_no_declared_variable_stays_quiet(tmp_path: Path, reader: str) -> None:
    user = f'_NAMES = ("HOME", "SGLANG_OTHER")\ndef f():\n    for n in _NAMES:\n        {_READERS[reader]}\n'
    keys, ok = _user(tmp_path, user)
    assert keys == set()
    assert ok


@pytest.mark.parametrize("reader", ["descriptor", "environ_get", "getenv"])
@pytest.mark.parametrize("rebinding", [
    "    for n in _NAMES:\n        n = n.lower()\n        {read}\n",
    "    for n in _NAMES:\n        n += '_X'\n        {read}\n",
    "    for n in _NAMES:\n        if n:\n            n = os.environ['KEY']\n        {read}\n",
    "    for n in _NAMES:\n        for n in source():\n            pass\n        {read}\n",
])
def test_a_loop_variable_rebound_in_the_loop_is_unresolved(tmp_path: Path, reader: str, rebinding: str) -> None:
    user = _constant("tuple") + "def f():\n" + rebinding.format(read=_READERS[reader])
    keys, ok = _user(tmp_path, user)
    assert ("f", "$?") in keys, keys
    assert not ok


@pytest.mark.parametrize("reader", ["descriptor", "environ_get", "getenv"])
@pytest.mark.parametrize("rebinding", [
    "_NAMES = tuple(os.environ.get('KNOBS', '').split(','))\n",
    "_NAMES += (os.environ['KNOB'],)\n",
    "def reset(names):\n    global _NAMES\n    _NAMES = names\n",
    "if os.environ:\n    _NAMES = load()\n",
])
def test_a_constant_rebound_elsewhere_is_no_constant(tmp_path: Path, reader: str, rebinding: str) -> None:
    loop = f"def f():\n    for n in _NAMES:\n        {_READERS[reader]}\n"
    for user in (_constant("tuple") + rebinding + loop, _constant("tuple") + loop + rebinding):
        keys, ok = _user(tmp_path, user)
        assert ("f", "$?") in keys, (user, keys)
        assert not ok


@pytest.mark.parametrize("reader", ["descriptor", "environ_get"])
@pytest.mark.parametrize("growth", [
    "_NAMES.append(os.environ['KNOB'])\n",
    "def add(name):\n    _NAMES.extend([name])\n",
    "_NAMES[1] = load()\n",
])
def test_a_list_constant_grown_elsewhere_is_no_constant(tmp_path: Path, reader: str, growth: str) -> None:
    user = _constant("list") + growth + f"def f():\n    for n in _NAMES:\n        {_READERS[reader]}\n"
    keys, ok = _user(tmp_path, user)
    assert ("f", "$?") in keys, keys
    assert not ok


def test_the_constants_elements_reach_the_loop_variable_alone(tmp_path: Path) -> None:
    """The elements are the loop variable's values only: the same name elsewhere (a
    parameter, another function's local) stays unknown, and so does the constant's own
    name where a string is wanted."""
    user = _constant("tuple") + (
        "def f():\n    for n in _NAMES:\n        pass\n"
        "def g(n):\n    return getattr(envs, 'SGLANG_' + n).get(), os.environ.get(n)\n"
        "def h():\n    return os.environ.get(_NAMES)\n"
        "def k(n):\n    for n in _NAMES:\n        pass\n    return os.environ.get(n)\n"
    )
    keys, ok = _user(tmp_path, user)
    assert keys == {("g", "$?"), ("h", "$?"), ("k", "$?")}, keys
    assert not ok


@pytest.mark.parametrize("reader", sorted(_READERS))
@pytest.mark.parametrize("spelling", [
    "from pkg.names import _NAMES\ndef f():\n    for n in _NAMES:\n        {read}\n",
    "from pkg import names\ndef f():\n    for n in names._NAMES:\n        {read}\n",
    "from pkg.names import _NAMES as KNOBS\ndef f():\n    return [{read} for n in KNOBS]\n",
])
def test_a_constant_imported_from_another_module_is_followed_into_the_loop(
    tmp_path: Path, reader: str, spelling: str
) -> None:
    user = spelling.format(read=_READERS[reader])
    keys, ok = _user(tmp_path, user, **{"names.py": _constant("tuple")})
    assert keys == {("f", PAGE)}, keys
    assert not ok


@pytest.mark.parametrize("reader", ["descriptor", "environ_get"])
@pytest.mark.parametrize(("names", "grown_here"), [
    ('import os\n_NAMES = ["SGLANG_PAGE_SIZE"]\n_NAMES.append(os.environ["KNOB"])\n', ""),
    ('_NAMES = ("SGLANG_PAGE_SIZE",)\nif __debug__:\n    _NAMES = load()\n', ""),
    ('_NAMES = ["SGLANG_PAGE_SIZE"]\n', "_NAMES.extend(load())\n"),
])
def test_an_imported_constant_that_is_no_constant_is_unresolved(
    tmp_path: Path, reader: str, names: str, grown_here: str
) -> None:
    user = f"from pkg.names import _NAMES\n{grown_here}def f():\n    for n in _NAMES:\n        {_READERS[reader]}\n"
    keys, ok = _user(tmp_path, user, **{"names.py": names})
    assert ("f", "$?") in keys, keys
    assert not ok


def test_a_descriptors_writer_fetched_by_name_is_no_read(tmp_path: Path) -> None:
    user = _constant("tuple") + (
        "def f():\n    for n in _NAMES:\n        getattr(envs, n).set(1)\n"
        "def g():\n    getattr(envs, 'SGLANG_PAGE_SIZE').clear()\n"
    )
    keys, ok = _user(tmp_path, user)
    assert keys == set()
    assert ok
