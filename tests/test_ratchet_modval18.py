"""Round eighteen's false passes of the read ratchet through a module handed on as a value
(an outside attack, families 4 and 6): `os`, `configbags.runtime.dist` or a generated
accessors module given to a parameter of one of the module's functions (`g(os)`), kept in
a container literal (`MODS = {"os": os}; MODS["os"]`, `for m in [os]`) or returned by a
function (`def _os(): return os`). What is read through the parameter, the element or the
call is the module's: an environment read, `dist.state_dict`, a context's `.state`. Each
has a twin that reads nothing: a parameter never given a module, a container of other
values, an element the key does not pick."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import file_reads, scan_env_pkg

UNRESOLVED = "$?"
STATE = "Context.state"
STATE_DICT = "dist.state_dict"


def _leaves(tmp_path: Path, body: str) -> set[str]:
    result = scan_env_pkg(tmp_path, {"user.py": body})
    return {leaf for _, leaf in file_reads(result)}


# ---- 4: the os module as a value

OS_VALUES = [
    # handed to a parameter
    "import os\ndef g(m):\n    return m.getenv('SGLANG_PAGE_SIZE')\ndef f():\n    return g(os)\n",
    "import os\ndef g(m):\n    return m.environ['SGLANG_PAGE_SIZE']\ndef f():\n    return g(os)\n",
    "import os\ndef g(x, m):\n    return m.environ.get('SGLANG_PAGE_SIZE', x)\ndef f():\n    return g(1, m=os)\n",
    # handed on again, and to itself
    "import os\ndef h(m):\n    return m.getenv('SGLANG_PAGE_SIZE')\ndef g(m):\n    return h(m)\ndef f():\n    return g(os)\n",
    "import os\ndef g(m, n=3):\n    return g(m, n - 1) if n else m.environ['SGLANG_PAGE_SIZE']\ndef f():\n    return g(os)\n",
    "import os as o\ndef g(m):\n    e = m.environ\n    return e['SGLANG_PAGE_SIZE']\ndef f():\n    return g(o)\n",
    # three hops, the first function asked last; two functions handing it round, each first
    "import os\ndef k(m):\n    return m.getenv('SGLANG_PAGE_SIZE')\ndef h(m):\n    return k(m)\n"
    "def g(m):\n    return h(m)\ndef f():\n    return g(os)\n",
    "import os\ndef g(m, n):\n    return h(m, n) if n else m.getenv('SGLANG_PAGE_SIZE')\n"
    "def h(m, n):\n    return g(m, n - 1)\ndef f():\n    return h(os, 2)\n",
    "import os\ndef h(m, n):\n    return g(m, n - 1)\ndef g(m, n):\n    return h(m, n) if n else m.getenv('SGLANG_PAGE_SIZE')\n"
    "def f():\n    return g(os, 2)\n",
    # a name bound round a cycle, read before and after the module is handed on
    "import os\na = b = None\na = b\nb = a\ndef g(m):\n    x = a\n    return m.getenv('SGLANG_PAGE_SIZE')\n"
    "def f():\n    y = b\n    return g(os)\n",
    # kept in a container literal
    "import os\nMODS = {'os': os}\ndef f():\n    return MODS['os'].environ['SGLANG_PAGE_SIZE']\n",
    "import os\nMODS = {'os': os, 'n': 3}\ndef f(k):\n    return MODS[k].environ['SGLANG_PAGE_SIZE']\n",
    "import os\nMODS = [os]\ndef f():\n    return MODS[0].getenv('SGLANG_PAGE_SIZE')\n",
    "import os\nMODS = [os]\ndef f():\n    for m in MODS:\n        return m.environ['SGLANG_PAGE_SIZE']\n",
    "import os\ndef f():\n    for m in (os,):\n        return m.environ['SGLANG_PAGE_SIZE']\n",
    "import os\nMODS = {'os': os}\ndef f():\n    for m in MODS.values():\n        return m.getenv('SGLANG_PAGE_SIZE')\n",
    # returned by a function
    "import os\ndef _os():\n    return os\ndef f():\n    return _os().environ['SGLANG_PAGE_SIZE']\n",
    "import os\ndef _os():\n    return os\ndef f():\n    m = _os()\n    return m.getenv('SGLANG_PAGE_SIZE')\n",
]


@pytest.mark.parametrize("body", OS_VALUES)
def test_os_handed_on_as_a_value_reads_the_environment(tmp_path: Path, body: str) -> None:
    assert _leaves(tmp_path, body) & {"$SGLANG_PAGE_SIZE", UNRESOLVED}, body


OS_QUIET = [
    # a parameter named m never given a module
    "import os\ndef g(m):\n    return m.environ['SGLANG_PAGE_SIZE']\ndef f(req):\n    return g(req)\n",
    "import os\ndef g(m):\n    return m.getenv('SGLANG_PAGE_SIZE')\ndef h(m):\n    return m\ndef f():\n    return h(os), g(1)\n",
    "import os\ndef h(m):\n    return m.getenv('SGLANG_PAGE_SIZE')\ndef g(m):\n    return h(m.path)\ndef f():\n    return g(os)\n",
    "import os\ndef g(m):\n    return m.environ['SGLANG_PAGE_SIZE']\ndef h(m):\n    return m.sep\ndef f():\n    return h(os)\n",
    # a container of other values, or an element the key does not pick
    "import os\nMODS = {'a': 1}\ndef f():\n    return MODS['a'].environ['SGLANG_PAGE_SIZE']\n",
    "import os\nMODS = {'os': os, 'w': object()}\ndef f():\n    return MODS['w'].environ['SGLANG_PAGE_SIZE']\n",
    "import os\nMODS = [os]\ndef f():\n    return [m.sep for m in MODS]\n",
    # a function returning something else
    "import os\ndef _os():\n    return os.sep\ndef f():\n    return _os().environ\n",
]


@pytest.mark.parametrize("body", OS_QUIET)
def test_what_is_not_os_handed_on_reads_nothing(tmp_path: Path, body: str) -> None:
    assert not _leaves(tmp_path, body), body


# ---- 6: the readback modules as values

READBACKS = [
    ("import configbags.runtime.dist as dist\ndef g(m):\n    return m.state_dict()['record']['page_size']\n"
     "def f():\n    return g(dist)\n", STATE_DICT),
    ("from configbags.runtime import dist\nMODS = {'d': dist}\ndef f():\n"
     "    return MODS['d'].state_dict()['record']['page_size']\n", STATE_DICT),
    ("import configbags.runtime.dist\ndef _d():\n    return configbags.runtime.dist\ndef f():\n"
     "    return _d().state_dict()['record']\n", STATE_DICT),
    ("import configbags.runtime.dist as dist\ndef f():\n    for m in [dist]:\n        return m.state_dict()\n", STATE_DICT),
    # imported by a module constant's name
    ("import importlib\nM = 'configbags.runtime.dist'\ndef f():\n"
     "    return importlib.import_module(M).state_dict()['record']['page_size']\n", STATE_DICT),
    ("import legacy.config_bags.accessors as acc\ndef g(m):\n    return m.get_context().state.record.page_size\n"
     "def f():\n    return g(acc)\n", STATE),
    ("from legacy.config_bags import accessors\nMODS = {'a': accessors}\ndef f():\n"
     "    return MODS['a'].get_context().state.record\n", STATE),
    ("import legacy.config_bags.accessors as acc\nMODS = [acc]\ndef f():\n"
     "    return MODS[0].get_context().state\n", STATE),
    ("import legacy.config_bags.accessors as acc\ndef _a():\n    return acc\ndef f():\n"
     "    return _a().get_context().state\n", STATE),
]


@pytest.mark.parametrize(("body", "leaf"), READBACKS)
def test_a_readback_module_handed_on_is_a_readback(tmp_path: Path, body: str, leaf: str) -> None:
    assert leaf in _leaves(tmp_path, body), body


READBACK_QUIET = [
    "import configbags.runtime.dist as dist\ndef g(m):\n    return m.state_dict()['record']\ndef f(x):\n    return g(x)\n",
    "import configbags.runtime.dist as dist\nMODS = {'d': dist, 'o': object()}\ndef f():\n"
    "    return MODS['o'].state_dict()\n",
    "import legacy.config_bags.accessors as acc\ndef g(m):\n    return m.get_context().state\ndef f(svc):\n    return g(svc)\n",
    "import importlib\nM = 'configbags.runtime.errors'\ndef f():\n    return importlib.import_module(M).state_dict()\n",
]


@pytest.mark.parametrize("body", READBACK_QUIET)
def test_what_is_not_a_readback_module_handed_on_reads_nothing(tmp_path: Path, body: str) -> None:
    assert not _leaves(tmp_path, body), body
