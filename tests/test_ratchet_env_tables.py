"""Round eleven's false passes of the read ratchet about environment readers an engine
builds on (an outside attack): a vLLM-style getter table whose getters a factory or
`functools.partial` makes, pydantic-settings fields whose alias sits in `Annotated`, and
copies of the environment (or its readers) kept at module level or on a class and read by
key in an importer."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import scan_pkg

from configbags.migrate.scan import ScanResult, ScanSettings

SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE", "SGLANG_TP_SIZE"))
PAGE = "$SGLANG_PAGE_SIZE"
TP = "$SGLANG_TP_SIZE"


def _scan(root: Path, files: dict[str, str]) -> ScanResult:
    return scan_pkg(root, files, SETTINGS)


def _keys(result: ScanResult, file: str = "pkg/user.py") -> set[tuple[str, str]]:
    return {(r.function, r.leaf) for r in result.reads if r.file == file}


# ---- U3: a getter table whose getters a factory or functools.partial makes

FACTORY_TABLE = """\
import functools
import os


def env_int(env_name, default):
    return lambda: int(os.getenv(env_name, str(default)))


def env_with_choices(env_name, default, choices):
    def _get():
        value = os.getenv(env_name)
        return default if value is None else value
    return _get


def _int_env(name, default):
    return int(os.environ.get(name, default))


def fixed():
    return lambda: os.getenv("SGLANG_TP_SIZE")


environment_variables = {
    "SGLANG_PAGE_SIZE": env_int("SGLANG_PAGE_SIZE", 16),
    "SGLANG_TP": env_with_choices("SGLANG_TP_SIZE", None, ["1", "2"]),
    "PARTIAL_PAGE": functools.partial(_int_env, "SGLANG_PAGE_SIZE", 16),
    "FIXED": fixed(),
    "HOME": env_int("HOME", 0),
}


def __getattr__(name):
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(name)
"""


@pytest.mark.parametrize(("user", "leaves"), [
    ("from pkg.envs import environment_variables\n\ndef f():\n    return environment_variables['SGLANG_PAGE_SIZE']()\n",
     {PAGE}),
    ("from pkg import envs\n\ndef f():\n    return envs.environment_variables.get('SGLANG_TP')()\n", {TP}),
    ("from pkg.envs import environment_variables\n\ndef f():\n    return environment_variables['PARTIAL_PAGE']()\n", {PAGE}),
    # a factory reading a name of its own: what its body reads
    ("from pkg.envs import environment_variables\n\ndef f():\n    return environment_variables['FIXED']()\n", {TP}),
    ("from pkg import envs\n\ndef f():\n    return {n: g() for n, g in envs.environment_variables.items()}\n", {PAGE, TP}),
    # an entry of an undeclared variable reads nothing, as a lambda's does
    ("from pkg.envs import environment_variables\n\ndef f():\n    return environment_variables['HOME']()\n", set()),
])
def test_a_factory_made_getter_table_is_read_where_its_entries_are_reached(
    tmp_path: Path, user: str, leaves: set[str],
) -> None:
    result = _scan(tmp_path, {"envs.py": FACTORY_TABLE, "user.py": user})
    assert _keys(result) == {("f", leaf) for leaf in leaves}, result.reads
    assert not leaves or _fails(result)


def test_a_factory_entry_whose_name_is_not_shown_is_unresolved(tmp_path: Path) -> None:
    table = FACTORY_TABLE.replace('env_int("HOME", 0)', "env_int(os.environ['NAME_OF_IT'], 0)")
    user = "from pkg.envs import environment_variables\n\ndef f():\n    return environment_variables['HOME']()\n"
    result = _scan(tmp_path, {"envs.py": table, "user.py": user})
    assert _keys(result) == {("f", "$?")}, result.reads


def test_a_factory_tables_own_dispatch_and_keys_read_nothing(tmp_path: Path) -> None:
    user = (
        "from pkg.envs import environment_variables\n\ndef f(name):\n"
        "    return name in environment_variables, list(environment_variables.keys())\n"
    )
    result = _scan(tmp_path, {"envs.py": FACTORY_TABLE, "user.py": user})
    assert _keys(result) == set(), result.reads
    assert "__getattr__" not in {function for function, _ in _keys(result, "pkg/envs.py")}
