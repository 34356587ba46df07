"""Round eleven's false passes of the read ratchet about environment readers an engine
builds on (an outside attack): a vLLM-style getter table whose getters a factory or
`functools.partial` makes, pydantic-settings fields whose alias sits in `Annotated`, and
copies of the environment (or its readers) kept at module level or on a class and read by
key in an importer."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

PAGE = "$SGLANG_PAGE_SIZE"
TP = "$SGLANG_TP_SIZE"


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


# ---- U5: pydantic-settings: an alias in `Annotated`, a class in a function, a prefix given
# where the class is made, `create_model`

SETTINGS_HEAD = (
    "from typing import Annotated, Optional\nfrom pydantic import AliasChoices, BaseModel, Field, create_model\n"
    "from pydantic_settings import BaseSettings, SettingsConfigDict\nfrom pkg.other import Imported\n\n"
)
OTHER = "from pydantic_settings import BaseSettings\n\nclass Imported(BaseSettings):\n    page_size: int = 16\n"


@pytest.mark.parametrize(("settings", "keys"), [
    ("class S(BaseSettings):\n    page: Annotated[int, Field(validation_alias='SGLANG_PAGE_SIZE')] = 16\n", {("S", PAGE)}),
    ("class S(BaseSettings):\n    page: Annotated[int, Field(alias='SGLANG_TP_SIZE')] = 1\n", {("S", TP)}),
    ("class S(BaseSettings):\n    page: Annotated[Optional[int], Field(validation_alias=AliasChoices('SGLANG_PAGE_SIZE', 'P'))]"
     " = None\n", {("S", PAGE)}),
    # a type alias of the module, and the default's `Field` over the annotation's
    ("Page = Annotated[int, Field(validation_alias='SGLANG_PAGE_SIZE')]\n\nclass S(BaseSettings):\n    page: Page = 16\n",
     {("S", PAGE)}),
    ("class S(BaseSettings):\n    page: Annotated[int, Field(alias='X')] = Field(16, validation_alias='SGLANG_TP_SIZE')\n",
     {("S", TP)}),
    ("class S(BaseSettings):\n    page: Annotated[int, Field(validation_alias=ALIAS)] = 16\n", {("S", "$?")}),
    # a class defined in a function body
    ("def f():\n    class S(BaseSettings):\n        model_config = SettingsConfigDict(env_prefix='SGLANG_')\n"
     "        page_size: int = 16\n    return S().page_size\n", {("f.S", PAGE)}),
    # the prefix given where it is made: the fields under it, there; a class of another module is `$?`
    ("class S(BaseSettings):\n    tp_size: int = 1\n\ndef f():\n    return S(_env_prefix='SGLANG_').tp_size\n", {("f", TP)}),
    ("def f():\n    return Imported(_env_prefix='SGLANG_').page_size\n", {("f", "$?")}),
    # create_model over a settings base
    ("EnvCfg = create_model('EnvCfg', __base__=BaseSettings, sglang_page_size=(int, 16))\n", {("<module>", PAGE)}),
    ("def f():\n    return create_model('C', __base__=BaseSettings, __config__=SettingsConfigDict(env_prefix='SGLANG_'), "
     "tp_size=(int, Field(1)))\n", {("f", TP)}),
])
def test_a_settings_field_is_read_by_its_annotated_alias_and_where_the_class_is_made(
    tmp_path: Path, settings: str, keys: set[tuple[str, str]],
) -> None:
    result = _scan(tmp_path, {"other.py": OTHER + "ALIAS = 'X'\n", "user.py": SETTINGS_HEAD + "from pkg.other import ALIAS\n" + settings})
    assert _keys(result) == keys, result.reads
    assert _fails(result)


@pytest.mark.parametrize("settings", [
    "class S(BaseSettings):\n    page: Annotated[int, Field(validation_alias='HOME')] = 16\n",
    "class S(BaseModel):\n    page: Annotated[int, Field(validation_alias='SGLANG_PAGE_SIZE')] = 16\n",
    "def f():\n    class S(BaseModel):\n        sglang_page_size: int = 16\n    return S()\n",
    "class S(BaseSettings):\n    tp_size: int = 1\n\ndef f():\n    return S(_env_prefix='NCCL_')\n",
    "def f():\n    return Imported(_env_prefix='NCCL_')\n",
    "M = create_model('M', __base__=BaseModel, sglang_page_size=(int, 16))\n",
])
def test_a_settings_field_naming_no_declared_variable_reads_nothing(tmp_path: Path, settings: str) -> None:
    result = _scan(tmp_path, {"other.py": OTHER, "user.py": SETTINGS_HEAD + settings})
    assert _keys(result) == set(), result.reads


# ---- U7: a copy of the environment, or one of its readers, kept for importers

COPIES = """\
import collections
import copy
import os
import types
from collections import ChainMap

LAYERED = ChainMap({}, os.environ)
RO = types.MappingProxyType(os.environ)
MERGED = {"X": "1"} | os.environ
SPREAD = {**os.environ}
CP = copy.copy(os.environ)
OD = collections.OrderedDict(os.environ)
DD = collections.defaultdict(str, os.environ)
PAIRS = dict(os.environ.items())
GET = os.environ.get
ENV_GA = getattr(os, "environ")
ENV_B = os.environb
OTHER = ChainMap({}, {"SGLANG_PAGE_SIZE": "1"})


def layered(overrides):
    return ChainMap(overrides, os.environ)


class Snap:
    env = os.environ.copy()
    layers = ChainMap({}, os.environ)
    plain = dict(os.environ)
"""


@pytest.mark.parametrize("use", [
    "LAYERED['SGLANG_PAGE_SIZE']", "RO['SGLANG_PAGE_SIZE']", "MERGED['SGLANG_PAGE_SIZE']", "SPREAD.get('SGLANG_PAGE_SIZE')",
    "CP['SGLANG_PAGE_SIZE']", "OD['SGLANG_PAGE_SIZE']", "DD['SGLANG_PAGE_SIZE']", "PAIRS['SGLANG_PAGE_SIZE']",
    "GET('SGLANG_PAGE_SIZE')", "ENV_GA['SGLANG_PAGE_SIZE']", "ENV_B[b'SGLANG_PAGE_SIZE']", "src.SPREAD['SGLANG_PAGE_SIZE']",
    "layered({})['SGLANG_PAGE_SIZE']", "Snap.env['SGLANG_PAGE_SIZE']", "Snap().env.get('SGLANG_PAGE_SIZE')",
    "Snap.layers['SGLANG_PAGE_SIZE']", "Snap.plain['SGLANG_PAGE_SIZE']",
])
def test_a_copy_of_the_environment_kept_for_importers_is_read_by_key_there(tmp_path: Path, use: str) -> None:
    user = "from pkg import copies as src\nfrom pkg.copies import *\nfrom pkg.copies import layered, Snap\n\ndef f():\n"
    result = _scan(tmp_path, {"copies.py": COPIES, "user.py": f"{user}    return {use}\n"})
    assert _keys(result) == {("f", PAGE)}, result.reads
    assert _fails(result)


@pytest.mark.parametrize(("use", "leaves"), [
    ("LAYERED['HOME'], SPREAD.get('PATH'), Snap.env['HOME'], 'X' in RO", set()),
    ("OTHER['SGLANG_PAGE_SIZE']", set()),
    # handed to a child as its environment, or counted, as `os.environ` may be
    ("subprocess.run(['x'], env=SPREAD), len(LAYERED), bool(Snap.env)", set()),
    ("LAYERED[name]", {"$?"}),
    ("sorted(SPREAD)", {"$?"}),
])
def test_a_kept_copy_read_by_another_name_or_whole(tmp_path: Path, use: str, leaves: set[str]) -> None:
    user = "import subprocess\nfrom pkg.copies import LAYERED, SPREAD, RO, OTHER, Snap\n\ndef f(name):\n"
    result = _scan(tmp_path, {"copies.py": COPIES, "user.py": f"{user}    return {use}\n"})
    assert _keys(result) == {("f", leaf) for leaf in leaves}, result.reads
