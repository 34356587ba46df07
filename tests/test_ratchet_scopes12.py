"""Round twelve's false passes of the read ratchet about what one module gives another
from inside a module-level compound statement, and about reads by a name the module
binds at run time (an outside attack): a context getter or a context defined under
`try/except ImportError`, `if/else` or `with` (V3), the environment bound there (V8),
vLLM's envs module calling its own `__getattr__` (V4), and `getattr(envs, n)` over a
module constant tuple of names (V6). Each case fails before its rule, and the precision
cases beside it stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import CTX, failing_leaves
from ratchet_case import scan_pkg as _scan

# ---- V3: context getters and bindings under module-level try/if/with

_GETTERS = {
    "try_fallback": (
        "try:\n    from fast_ctx_missing import ctx\nexcept ImportError:\n" + "    " + CTX
        + "    def ctx():\n        return get_context()\n"
    ),
    "optional": (
        "try:\n    " + CTX + "    def ctx():\n        return get_context()\n"
        "except ImportError:\n    def ctx():\n        return None\n"
    ),
    "if_else": (
        "import sys\n" + CTX + "if sys.version_info >= (3, 9):\n    def ctx():\n        return get_context()\n"
        "else:\n    def ctx():\n        return get_context()\n"
    ),
    "with": (
        "import contextlib\n" + CTX + "with contextlib.suppress(Exception):\n"
        "    def ctx():\n        return get_context()\n"
    ),
    "finally": "try:\n    pass\nfinally:\n    " + CTX + "    def ctx():\n        return get_context()\n",
}


@pytest.mark.parametrize("shape", sorted(_GETTERS))
def test_a_context_getter_under_a_module_level_compound_statement_is_followed(tmp_path: Path, shape: str) -> None:
    user = _GETTERS[shape] + "def f():\n    return ctx().state\n"
    assert "Context.state" in failing_leaves(tmp_path, {"user.py": user})


@pytest.mark.parametrize("shape", sorted(_GETTERS))
def test_a_context_getter_under_a_compound_statement_is_followed_in_importers(tmp_path: Path, shape: str) -> None:
    user = "from pkg.doors import ctx\ndef f():\n    return ctx().server_info()\n"
    assert "Context.server_info" in failing_leaves(tmp_path, {"doors.py": _GETTERS[shape], "user.py": user})


@pytest.mark.parametrize("binding", [
    "try:\n    CTX = get_context()\nexcept Exception:\n    CTX = None\n",
    "import sys\nif sys.platform:\n    CTX = get_context()\nelse:\n    CTX = None\n",
    "import contextlib\nwith contextlib.suppress(Exception):\n    CTX = get_context()\n",
])
def test_a_context_bound_under_a_module_level_compound_statement_is_followed_in_importers(
    tmp_path: Path, binding: str
) -> None:
    user = "from pkg.holder import CTX\ndef f():\n    return CTX.state\n"
    assert "Context.state" in failing_leaves(tmp_path, {"holder.py": CTX + binding, "user.py": user})


def test_a_getter_under_try_that_gives_no_context_stays_quiet(tmp_path: Path) -> None:
    doors = "try:\n    import json\n    def ctx():\n        return json\nexcept ImportError:\n    ctx = None\n"
    user = "from pkg.doors import ctx\ndef f():\n    return ctx().state\n"
    result = _scan(tmp_path, {"doors.py": doors, "user.py": user})
    assert not result.reads, result.reads


# ---- V8: the environment bound under module-level try/if, read by key in an importer


@pytest.mark.parametrize("binding", [
    "try:\n    ENV = os.environ\nexcept Exception:\n    ENV = {}\n",
    "if sys.platform != 'win32':\n    ENV = os.environ\nelse:\n    ENV = {}\n",
    "try:\n    pass\nfinally:\n    ENV = os.environ\n",
    "try:\n    from fast_env_missing import ENV\nexcept ImportError:\n    from os import environ as ENV\n",
])
def test_an_environment_alias_under_a_module_level_compound_statement_is_followed_in_importers(
    tmp_path: Path, binding: str
) -> None:
    holder = "import os, sys\n" + binding
    user = "from pkg.holder import ENV\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n"
    assert "$SGLANG_PAGE_SIZE" in failing_leaves(tmp_path, {"holder.py": holder, "user.py": user})


def test_a_dictionary_bound_under_try_stays_quiet_in_importers(tmp_path: Path) -> None:
    holder = "try:\n    ENV = {'SGLANG_PAGE_SIZE': '1'}\nexcept Exception:\n    ENV = {}\n"
    user = "from pkg.holder import ENV\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n"
    result = _scan(tmp_path, {"holder.py": holder, "user.py": user})
    assert not result.reads, result.reads


# ---- V4: a table module's `__getattr__` (the table's dispatch) called directly

_TABLE = (
    "import functools, os\n"
    "environment_variables = {\n    'SGLANG_PAGE_SIZE': lambda: int(os.getenv('SGLANG_PAGE_SIZE', '16')),\n}\n"
    "def __getattr__(name):\n    if name in environment_variables:\n"
    "        return environment_variables[name]()\n    raise AttributeError(name)\n"
)


@pytest.mark.parametrize("body", [
    "return __getattr__('SGLANG_PAGE_SIZE')",
    "global __getattr__\n    __getattr__ = functools.cache(__getattr__)\n"
    "    for key in environment_variables:\n        __getattr__(key)",
    "return list(map(__getattr__, ['SGLANG_PAGE_SIZE']))",
])
def test_a_direct_call_of_the_tables_dispatch_reads_its_entries(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": _TABLE + f"def f():\n    {body}\n"})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") in {(r.file, r.function, r.leaf) for r in result.reads}


def test_the_tables_dispatch_rewrapped_or_asked_about_reads_nothing(tmp_path: Path) -> None:
    user = _TABLE + (
        "def f():\n    global __getattr__\n    __getattr__ = functools.cache(__getattr__)\n"
        "    __getattr__.cache_clear()\n    return isinstance(__getattr__, functools._lru_cache_wrapper)\n"
        "def g(__getattr__):\n    return __getattr__('SGLANG_PAGE_SIZE')\n"
        "def h():\n    return __getattr__('OTHER')\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not {r.function for r in result.reads} & {"f", "g", "h"}, result.reads
