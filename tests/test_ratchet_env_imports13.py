"""Round thirteen's false passes of the read ratchet about a module whose `__getattr__`
(PEP 562) serves names it does not bind (an outside attack): `from envs import
SGLANG_PAGE_SIZE` on a vLLM-style getter table (or a prefix dispatcher) calls that
`__getattr__` at the import statement, which reads the variable (R13-1); and the dispatch
itself imported under a name and called (R13-2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

from configbags.migrate.check import check

PAGE = "$SGLANG_PAGE_SIZE"
TP = "$SGLANG_TP_SIZE"

# vLLM's shape: a table of getters, the stub names only for type checkers, the dispatch
TABLE = """\
import os
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    SGLANG_PAGE_SIZE: int = 16
    SGLANG_TP_SIZE: int = 1

environment_variables: dict[str, Callable[[], Any]] = {
    "SGLANG_PAGE_SIZE": lambda: int(os.getenv("SGLANG_PAGE_SIZE", "16")),
    "SGLANG_TP_SIZE": lambda: int(os.getenv("SGLANG_TP_SIZE", "1")),
    "PAGE": lambda: int(os.getenv("SGLANG_PAGE_SIZE", "16")),
    "HOME": lambda: os.getenv("HOME"),
}

LIMIT = 4


def __getattr__(name: str):
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return list(environment_variables.keys())


def is_set(name: str):
    if name in environment_variables:
        return name in os.environ
    raise AttributeError(name)
"""

# the dispatch by a prefix, no table
PREFIX = """\
import os


def __getattr__(name):
    if name.startswith("SGLANG_"):
        return os.environ.get(name)
    raise AttributeError(name)
"""

# a prefix the dispatch adds to the name it is asked
ADDED_PREFIX = """\
import os


def __getattr__(name):
    return os.environ.get("SGLANG_" + name)
"""


# ---- R13-1: the from-import of a name the dispatch serves reads it, at the import


@pytest.mark.parametrize(("envs", "user", "keys"), [
    # in a function, at module level under another name, several names, a key of the table
    (TABLE, "def main():\n    from pkg.envs import SGLANG_PAGE_SIZE\n    return SGLANG_PAGE_SIZE\n", {("main", PAGE)}),
    (TABLE, "from pkg.envs import SGLANG_PAGE_SIZE as PS\n\ndef main():\n    return PS\n", {("<module>", PAGE)}),
    (TABLE, "def main():\n    from pkg.envs import SGLANG_PAGE_SIZE, SGLANG_TP_SIZE\n    return SGLANG_TP_SIZE\n",
     {("main", PAGE), ("main", TP)}),
    (TABLE, "from pkg.envs import PAGE\n", {("<module>", PAGE)}),
    # relative, in a try block, in a method
    (TABLE, "def main():\n    from .envs import SGLANG_TP_SIZE\n    return SGLANG_TP_SIZE\n", {("main", TP)}),
    (TABLE, "try:\n    from pkg.envs import SGLANG_TP_SIZE as TP\nexcept ImportError:\n    TP = 1\n", {("<module>", TP)}),
    (TABLE, "class K:\n    def get(self):\n        from . import envs as e\n        from .envs import PAGE\n        return PAGE\n",
     {("K.get", PAGE)}),
    # a star import through `__all__`: the names it lists that the module does not bind
    (TABLE + '__all__ = ["SGLANG_PAGE_SIZE", "is_set", "LIMIT"]\n', "from pkg.envs import *\n", {("<module>", PAGE)}),
    (TABLE + '__all__ = ("is_set",)\n__all__.append("SGLANG_TP_SIZE")\n', "from pkg.envs import *\n", {("<module>", TP)}),
    # a prefix dispatcher: the name it is asked, and with the prefix it adds
    (PREFIX, "from pkg.envs import SGLANG_PAGE_SIZE\n", {("<module>", PAGE)}),
    (ADDED_PREFIX, "def main():\n    from pkg.envs import TP_SIZE\n    return TP_SIZE\n", {("main", TP)}),
])
def test_a_name_the_modules_getattr_serves_is_read_at_its_import(
    tmp_path: Path, envs: str, user: str, keys: set[tuple[str, str]],
) -> None:
    result = _scan(tmp_path, {"envs.py": envs, "user.py": user})
    assert _keys(result) == keys, result.reads
    assert _fails(result)


def test_the_tables_own_reads_allowlisted_do_not_cover_the_import(tmp_path: Path) -> None:
    """The harness's shape: the table's entries allowlisted where they are written, as
    `ratchet init` does; the importer's read is still a new one."""
    user = "def main():\n    from pkg.envs import SGLANG_PAGE_SIZE\n    return SGLANG_PAGE_SIZE\n"
    result = _scan(tmp_path, {"envs.py": TABLE, "user.py": user})
    own = [
        {"file": "pkg/envs.py", "function": read.function, "leaf": read.leaf, "reason": "the table"}
        for read in result.reads if read.file == "pkg/envs.py"
    ]
    assert own, result.reads
    report = check(result, own, ACCESSORS, min_files=1)
    assert not report.ok
    assert ("pkg/user.py", "main", PAGE) in {(r.file, r.function, r.leaf) for r in result.reads}


@pytest.mark.parametrize(("envs", "user"), [
    # what the module binds is its own: a plain assignment, a def, the table itself
    (TABLE, "from pkg.envs import LIMIT, is_set, environment_variables\n"),
    (TABLE.replace("LIMIT = 4", "SGLANG_PAGE_SIZE = 16"), "from pkg.envs import SGLANG_PAGE_SIZE\n"),
    (TABLE.replace("LIMIT = 4", "try:\n    import json as SGLANG_TP_SIZE\nexcept ImportError:\n    SGLANG_TP_SIZE = None"),
     "from pkg.envs import SGLANG_TP_SIZE\n"),
    # a name that is no key of the table and no declared variable: the dispatch raises
    (TABLE, "try:\n    from pkg.envs import NOT_A_KNOB\nexcept ImportError:\n    NOT_A_KNOB = None\n"),
    # an entry of an undeclared variable
    (TABLE, "from pkg.envs import HOME\n"),
    # a star import without `__all__` takes the bound names only; `__all__` of bound names
    (TABLE, "from pkg.envs import *\n"),
    (TABLE + '__all__ = ["is_set", "LIMIT"]\n', "from pkg.envs import *\n"),
    # a prefix dispatcher asked for a name no declared variable has
    (PREFIX, "from pkg.envs import SGLANG_OTHER\n"),
    # no `__getattr__`: a from-import is the module's own binding
    ("import os\nSGLANG_PAGE_SIZE = int(os.environ.get('PAGE', '16'))\n", "from pkg.envs import SGLANG_PAGE_SIZE\n"),
    # a lazy loader of submodules reads no environment
    ("import importlib\n\ndef __getattr__(name):\n    return importlib.import_module('.' + name, __name__)\n",
     "from pkg.envs import tools\n"),
])
def test_a_name_the_module_binds_or_no_variable_is_read_nothing_at_its_import(
    tmp_path: Path, envs: str, user: str,
) -> None:
    result = _scan(tmp_path, {"envs.py": envs, "user.py": user})
    assert _keys(result) == set(), result.reads


@pytest.mark.parametrize(("envs", "user", "keys"), [
    # a star import through an `__all__` the module computes: the dispatch asked any name
    (PREFIX + '__all__ = [n for n in dir() if n.startswith("SGLANG_")]\n', "from pkg.envs import *\n", {("<module>", "$?")}),
    (TABLE + "__all__ = list(environment_variables)\n", "from pkg.envs import *\n", {("<module>", PAGE), ("<module>", TP)}),
    (TABLE + '__all__ = ["is_set"]\n__all__.extend(sorted(environment_variables))\n', "from pkg.envs import *\n",
     {("<module>", PAGE), ("<module>", TP)}),
    # a key the dispatch looks up where the module does not show it
    ("import os\nfrom pkg.names import NAMES\n\ndef __getattr__(name):\n    return os.environ.get(NAMES[name])\n",
     "from pkg.envs import page\n", {("<module>", "$?")}),
    # a name bound only on some runs: the dispatch may serve it
    (TABLE.replace("LIMIT = 4", "import sys\nif sys.platform == 'win32':\n    SGLANG_PAGE_SIZE = 16"),
     "from pkg.envs import SGLANG_PAGE_SIZE\n", {("<module>", PAGE)}),
    # a module the scan does not read: the declared name is read, as `mod.NAME` is
    ("", "from vendor_envs import SGLANG_TP_SIZE\n", {("<module>", TP)}),
])
def test_a_dispatch_the_scan_cannot_resolve_is_read_conservatively(
    tmp_path: Path, envs: str, user: str, keys: set[tuple[str, str]],
) -> None:
    files = {"envs.py": envs, "user.py": user, "names.py": "NAMES = {}\n"}
    result = _scan(tmp_path, files)
    assert _keys(result) == keys, result.reads
    assert _fails(result)


# ---- R13-2: the dispatch imported under a name


@pytest.mark.parametrize(("user", "keys"), [
    ("from pkg.envs import __getattr__ as envget\n\ndef main():\n    return envget('SGLANG_PAGE_SIZE')\n", {("main", PAGE)}),
    ("from pkg.envs import __getattr__\n\ndef main():\n    return __getattr__('PAGE')\n", {("main", PAGE)}),
    # a name not shown, or the dispatch handed on: every entry
    ("from pkg.envs import __getattr__ as g\n\ndef main(name):\n    return g(name)\n", {("main", PAGE), ("main", TP)}),
    ("from pkg.envs import __getattr__ as g\n\ndef main(names):\n    return list(map(g, names))\n",
     {("main", PAGE), ("main", TP)}),
])
def test_the_tables_dispatch_imported_by_name_reads_what_it_is_asked(
    tmp_path: Path, user: str, keys: set[tuple[str, str]],
) -> None:
    result = _scan(tmp_path, {"envs.py": TABLE, "user.py": user})
    assert _keys(result) == keys, result.reads
    assert _fails(result)


def test_the_dispatch_imported_but_asked_about_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.envs import __getattr__ as g\n\ndef main():\n    return callable(g), g('HOME')\n"
    result = _scan(tmp_path, {"envs.py": TABLE, "user.py": user})
    assert _keys(result) == set(), result.reads
