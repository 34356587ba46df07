"""Round eight's false passes of the read ratchet about environment names (an outside
attack): env helpers that build the key from their parameter, env-knob objects storing
the name, vLLM's getter table, settings libraries (pydantic-settings, starlette) and an
entered `mock.patch.dict(os.environ)`; and the precision cases where a key's literal
prefix rules every declared variable out."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

PAGE = "$SGLANG_PAGE_SIZE"
TP = "$SGLANG_TP_SIZE"


# ---- R10: a helper building the key from its parameter: each call site reads the name


HELPERS = """\
import os

ENV_PREFIX = "SGLANG_"
ALIASES = {"page": "SGLANG_PAGE_SIZE", "home": "HOME"}


def get_env(name, default=None):
    return os.environ.get(ENV_PREFIX + name, default)


def by_alias(name):
    return os.environ.get(ALIASES.get(name, name))


def local_key(name):
    key = f"SGLANG_{name}"
    return os.getenv(key)


class Env:
    def get(self, name):
        return os.environ.get(name.upper())

    @staticmethod
    def sget(name):
        return os.environ[f"SGLANG_{name}"]


ENV = Env()
"""
IMPORT = "from pkg.envutil import get_env, by_alias, local_key, ENV, Env\n"


@pytest.mark.parametrize("call", [
    "get_env('PAGE_SIZE')",
    "ENV.get('sglang_page_size')",
    "Env.sget('PAGE_SIZE')",
    "by_alias('page')",
    "by_alias('SGLANG_PAGE_SIZE')",
    "local_key('PAGE_SIZE')",
])
def test_a_key_built_from_the_parameter_is_read_at_the_call_site(tmp_path: Path, call: str) -> None:
    result = _scan(tmp_path, {"envutil.py": HELPERS, "user.py": IMPORT + f"def f():\n    return {call}\n"})
    assert _keys(result) == {("f", PAGE)}, result.reads
    assert _fails(result)


def test_a_built_key_naming_no_declared_variable_reads_nothing(tmp_path: Path) -> None:
    user = IMPORT + "def f():\n    return get_env('HOME'), by_alias('home'), ENV.get('path')\n"
    result = _scan(tmp_path, {"envutil.py": HELPERS, "user.py": user})
    assert _keys(result) == set(), result.reads


def test_a_built_key_from_a_name_not_shown_is_unresolved_at_the_call_site(tmp_path: Path) -> None:
    user = IMPORT + "def f(which):\n    return get_env(which)\n"
    result = _scan(tmp_path, {"envutil.py": HELPERS, "user.py": user})
    assert _keys(result) == {("f", "$?")}, result.reads


def test_a_wrapper_building_the_key_further_passes_its_parameter_on(tmp_path: Path) -> None:
    # `def page(n): return get_env("PAGE_" + n)`: page's callers read SGLANG_PAGE_<n>
    wrapper = "from pkg.envutil import get_env\n\ndef page(n):\n    return get_env('PAGE_' + n)\n"
    user = "from pkg.wrap import page\n\ndef f():\n    return page('SIZE')\n"
    result = _scan(tmp_path, {"envutil.py": HELPERS, "wrap.py": wrapper, "user.py": user})
    assert ("f", PAGE) in _keys(result), result.reads


# ---- R14: an env knob storing the variable's name: the constructor call is the read

KNOBS = """\
import os


class EnvInt:
    def __init__(self, name, default):
        self.name = name
        self.default = default

    def get(self):
        return int(os.environ.get(self.name, self.default))


class Prefixed:
    def __init__(self, short):
        self.key = "SGLANG_" + short

    def value(self):
        return os.getenv(self.key)


class Envs:
    page_size = EnvInt("SGLANG_PAGE_SIZE", 16)


envs = Envs()
"""


def test_an_env_knob_is_read_where_it_is_made(tmp_path: Path) -> None:
    user = "from pkg.knobs import EnvInt, Prefixed\nPAGE = EnvInt('SGLANG_PAGE_SIZE', 16)\n\ndef f():\n    return Prefixed('TP_SIZE').value()\n"
    result = _scan(tmp_path, {"knobs.py": KNOBS, "user.py": user})
    assert _keys(result) == {("<module>", PAGE), ("f", TP)}, result.reads
    assert ("Envs", PAGE) in _keys(result, "pkg/knobs.py")


def test_an_env_knob_of_an_undeclared_variable_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.knobs import EnvInt\nHOME = EnvInt('HOME', 0)\n"
    result = _scan(tmp_path, {"knobs.py": KNOBS, "user.py": user})
    assert _keys(result) == set(), result.reads


# ---- R19: vLLM's getter table

TABLE = """\
import os

environment_variables = {
    "SGLANG_PAGE_SIZE": lambda: int(os.getenv("SGLANG_PAGE_SIZE", "16")),
    "SGLANG_TP_SIZE": lambda: int(os.getenv("SGLANG_TP_SIZE", "1")),
    "HOME": lambda: os.getenv("HOME"),
}


def __getattr__(name):
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(name)


def __dir__():
    return list(environment_variables.keys())
"""


@pytest.mark.parametrize(("user", "leaves"), [
    ("from pkg import envs\n\ndef f():\n    return envs.environment_variables['SGLANG_PAGE_SIZE']()\n", {PAGE}),
    ("from pkg.envs import environment_variables as T\n\ndef f():\n    return T.get('SGLANG_TP_SIZE')()\n", {TP}),
    ("from pkg.envs import environment_variables\n\ndef f():\n"
     "    return {n: g() for n, g in environment_variables.items()}\n", {PAGE, TP}),
    ("from pkg.envs import environment_variables\n\ndef f(name):\n    return environment_variables[name]()\n", {PAGE, TP}),
    ("from pkg.envs import environment_variables\n\ndef f():\n    return [g() for g in environment_variables.values()]\n",
     {PAGE, TP}),
])
def test_a_getter_table_is_read_where_its_entries_are_reached(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"envs.py": TABLE, "user.py": user})
    assert _keys(result) == {("f", leaf) for leaf in leaves}, result.reads
    assert _fails(result)


def test_a_getter_tables_keys_read_nothing_nor_does_its_own_dispatch(tmp_path: Path) -> None:
    user = (
        "from pkg.envs import environment_variables\n\ndef f(name):\n"
        "    return name in environment_variables, len(environment_variables), list(environment_variables.keys()), "
        "environment_variables['HOME']()\n"
    )
    result = _scan(tmp_path, {"envs.py": TABLE, "user.py": user})
    assert _keys(result) == set(), result.reads
    # the table's own reads stay where they are; `__getattr__` and `__dir__` add none
    assert {function for function, _ in _keys(result, "pkg/envs.py")} == {"<module>"}


# ---- R9: settings libraries


@pytest.mark.parametrize(("settings", "leaves"), [
    ("class S(BaseSettings):\n    model_config = SettingsConfigDict(env_prefix='SGLANG_')\n    page_size: int = 16\n", {PAGE}),
    ("class S(BaseSettings):\n    sglang_page_size: int = 16\n    other: str = ''\n", {PAGE}),
    ("class S(BaseSettings):\n    page: int = Field(16, validation_alias='SGLANG_PAGE_SIZE')\n", {PAGE}),
    ("class S(BaseSettings):\n    page: int = Field(16, validation_alias=AliasChoices('SGLANG_TP_SIZE', 'P'))\n", {TP}),
    ("class S(BaseSettings):\n    class Config:\n        env_prefix = 'sglang_'\n    tp_size: int = 1\n", {TP}),
    ("class S(BaseSettings, env_prefix='SGLANG_'):\n    page_size: int = 16\n", {PAGE}),
    ("class Base(BaseSettings):\n    model_config = {'env_prefix': 'SGLANG_'}\n\n"
     "class S(Base):\n    tp_size: int = 1\n", {TP}),
    ("class S(BaseSettings):\n    model_config = SettingsConfigDict(env_prefix=PREFIX)\n    page_size: int = 16\n", {"$?"}),
    ("class S(BaseSettings, Mixin):\n    model_config = SettingsConfigDict(env_prefix='SGLANG_')\n", {"$?"}),
])
def test_a_settings_class_reads_its_fields_variables(tmp_path: Path, settings: str, leaves: set[str]) -> None:
    head = (
        "from pydantic import AliasChoices, Field\nfrom pydantic_settings import BaseSettings, SettingsConfigDict\n"
        "from pkg.other import PREFIX, Mixin\n\n"
    )
    result = _scan(tmp_path, {"other.py": "PREFIX = 'X'\nclass Mixin: pass\n", "user.py": head + settings})
    assert {leaf for _, leaf in _keys(result)} == leaves, result.reads
    assert _fails(result)


@pytest.mark.parametrize("settings", [
    "class S(BaseSettings):\n    model_config = SettingsConfigDict(env_prefix='NCCL_')\n    page_size: int = 16\n",
    "class S(BaseSettings):\n    model_config = SettingsConfigDict(case_sensitive=True)\n    sglang_page_size: int = 16\n",
    "class S(BaseModel):\n    sglang_page_size: int = 16\n",
])
def test_a_settings_class_naming_no_declared_variable_reads_nothing(tmp_path: Path, settings: str) -> None:
    head = "from pydantic import BaseModel\nfrom pydantic_settings import BaseSettings, SettingsConfigDict\n\n"
    result = _scan(tmp_path, {"user.py": head + settings})
    assert _keys(result) == set(), result.reads


@pytest.mark.parametrize(("user", "leaves"), [
    ("from starlette.config import Config\nconfig = Config()\n\ndef f():\n    return config('SGLANG_PAGE_SIZE', cast=int)\n",
     {PAGE}),
    ("from starlette.config import Config\nconfig = Config(env_prefix='SGLANG_')\n\ndef f():\n    return config.get('TP_SIZE')\n",
     {TP}),
    ("from starlette.config import environ\n\ndef f():\n    return environ['SGLANG_PAGE_SIZE']\n", {PAGE}),
    ("import starlette.config\n\ndef f():\n    return starlette.config.environ.get('SGLANG_TP_SIZE')\n", {TP}),
    ("from starlette.config import Config\nconfig = Config(env_prefix='NCCL_')\n\ndef f():\n    return config('PAGE_SIZE')\n",
     set()),
    ("from starlette.config import Config\nconfig = Config(environ={'SGLANG_PAGE_SIZE': '1'})\n\ndef f():\n"
     "    return config('SGLANG_PAGE_SIZE')\n", set()),
])
def test_starlettes_config_reads_the_variable_it_is_asked(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert {leaf for _, leaf in _keys(result)} == leaves, result.reads


# ---- R13: an entered or started patch of the environment is the environment


@pytest.mark.parametrize("body", [
    "    with mock.patch.dict(os.environ, {'X': '0'}) as env:\n        return env['SGLANG_PAGE_SIZE']\n",
    "    with mock.patch.dict('os.environ', {'X': '0'}) as env:\n        return env.get('SGLANG_PAGE_SIZE')\n",
    "    patcher = mock.patch.dict(os.environ, {'X': '0'})\n    env = patcher.start()\n    return env['SGLANG_PAGE_SIZE']\n",
])
def test_an_entered_patch_of_the_environment_is_read_like_it(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": "import os\nfrom unittest import mock\n\ndef f():\n" + body})
    assert _keys(result) == {("f", PAGE)}, result.reads
    assert _fails(result)


def test_a_patch_of_the_environment_used_only_as_a_patch_reads_nothing(tmp_path: Path) -> None:
    user = "import os\nfrom unittest import mock\n\ndef f():\n    with mock.patch.dict(os.environ, {'X': '0'}) as env:\n        return 1\n"
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == set(), result.reads


# ---- P2/P3: a literal prefix that rules every declared variable out


@pytest.mark.parametrize("user", [
    "import os\n\ndef nccl(name):\n    return os.environ.get(f'NCCL_{name}')\n\ndef f(x):\n    return nccl(x), nccl('DEBUG')\n",
    "import os\n\ndef f(name):\n    return os.getenv('NCCL_' + name.upper())\n",
    "import os\n\ndef f():\n    return {k: v for k, v in os.environ.items() if k.startswith('NCCL_')}\n",
    "import os\n\ndef f():\n    return [k for k in os.environ if k.startswith(('NCCL_', 'CUDA_')) and k != 'NCCL_X']\n",
    "import os\n\ndef f(name):\n    return os.environ[name + '_HOME']\n",
])
def test_a_literal_prefix_naming_no_declared_variable_reads_nothing(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == set(), result.reads


@pytest.mark.parametrize(("user", "leaves"), [
    ("import os\n\ndef f(name):\n    return os.environ.get(f'SGLANG_{name}')\n", {"$?"}),
    ("import os\n\ndef f():\n    return {k: v for k, v in os.environ.items() if k.startswith('SGLANG_')}\n", {PAGE, TP}),
    ("import os\n\ndef f():\n    return {k: v for k, v in os.environ.items() if k.endswith('_PAGE_SIZE')}\n", {PAGE}),
    ("import os\n\ndef f(p):\n    return {k: v for k, v in os.environ.items() if k.startswith(p)}\n", {"$?"}),
])
def test_a_literal_prefix_some_declared_variable_fits_is_read(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert {leaf for _, leaf in _keys(result)} == leaves, result.reads
    assert _fails(result)


@pytest.mark.parametrize(("helper", "call", "reads"), [
    # a list constant indexed by the parameter: any of its names, read in the helper
    ("NAMES = ['SGLANG_TP_SIZE', 'HOME']\n\ndef get(i):\n    return os.environ[NAMES[i]]\n", "get(0)",
     {("pkg/envutil.py", TP)}),
    ("NAMES = ['NCCL_A', 'HOME']\n\ndef get(i):\n    return os.environ[NAMES[i]]\n", "get(0)", set()),
    # a default for the parameter: either, the parameter's at the call site
    ("def get(name=None):\n    return os.getenv(name or 'HOME')\n", "get('SGLANG_PAGE_SIZE')", {("pkg/user.py", PAGE)}),
    ("def get(name, short=False):\n    return os.getenv(name if short else 'SGLANG_' + name)\n", "get('TP_SIZE')",
     {("pkg/user.py", TP)}),
])
def test_a_key_picked_by_the_parameter_is_read_where_its_names_are_known(
    tmp_path: Path, helper: str, call: str, reads: set[tuple[str, str]]
) -> None:
    user = f"from pkg.envutil import get\n\ndef f():\n    return {call}\n"
    result = _scan(tmp_path, {"envutil.py": "import os\n\n" + helper, "user.py": user})
    assert {(r.file, r.leaf) for r in result.reads if r.leaf != "$?"} == reads, result.reads


@pytest.mark.parametrize(("key", "leaves"), [
    ("'SGLANG_PAGE_SIZE'", {PAGE}),
    ("NAME", {PAGE}),
    ("'NCCL_' + x", set()),
    ("x", {"$?"}),
])
def test_another_modules_environment_read_by_a_built_key_is_judged_by_its_parts(
    tmp_path: Path, key: str, leaves: set[str]
) -> None:
    user = f"from pkg.compat import ENV\nNAME = 'SGLANG_PAGE_SIZE'\n\ndef f(x):\n    return ENV[{key}]\n"
    result = _scan(tmp_path, {"compat.py": "import os\nENV = os.environ\n", "user.py": user})
    assert {leaf for _, leaf in _keys(result)} == leaves, result.reads
