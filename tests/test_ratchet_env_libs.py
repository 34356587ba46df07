"""Round ten's false passes of the read ratchet about environment readers an engine builds
on (an outside attack): env-knob classes written as a dataclass or a NamedTuple, the
allowlisted env helper object reached one hop away (kept on `self`, a subclass, an alias,
a parameter, a factory, `functools.partial`), and config libraries that fill values from
the environment (OmegaConf's `${oc.env:...}`, jsonargparse, configargparse, environs,
python-decouple)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import scan_env_pkg as _scan

from configbags.migrate.scan import ScanResult

PAGE = "$SGLANG_PAGE_SIZE"
TP = "$SGLANG_TP_SIZE"


def _leaves(result: ScanResult, file: str = "pkg/user.py") -> set[str]:
    return {r.leaf for r in result.reads if r.file == file}


# ---- T7: an env knob whose class is a dataclass or a NamedTuple: read where it is made

KNOBS = """\
import dataclasses
import os
from typing import NamedTuple

from pkg.base import Base


@dataclasses.dataclass(frozen=True)
class EnvInt:
    name: str
    default: int = 0

    def get(self):
        return int(os.environ.get(self.name, self.default))


class Knob(NamedTuple):
    name: str
    default: str

    def get(self):
        return os.environ.get(self.name, self.default)


@dataclasses.dataclass
class Keyed:
    default: int
    _: dataclasses.KW_ONLY
    key: str = ""

    def get(self):
        return os.getenv("SGLANG_" + self.key)


@dataclasses.dataclass
class Derived(EnvInt):
    unit: str = ""


@dataclasses.dataclass
class Late(Base):
    name: str = ""

    def get(self):
        return os.environ.get(self.name)
"""

BASE = "import dataclasses\n\n@dataclasses.dataclass\nclass Base:\n    size: int = 0\n"


@pytest.mark.parametrize(("user", "leaves"), [
    ("PAGE = EnvInt('SGLANG_PAGE_SIZE', 16)\n\ndef f():\n    return PAGE.get()\n", {PAGE}),
    ("def f():\n    return Knob('SGLANG_PAGE_SIZE', '16').get()\n", {PAGE}),
    ("def f():\n    return EnvInt(name='SGLANG_TP_SIZE').get()\n", {TP}),
    ("def f():\n    return Keyed(1, key='TP_SIZE').get()\n", {TP}),
    ("def f(name):\n    return EnvInt(name).get()\n", {"$?"}),
    # a subclass takes its base's constructor (a dataclass's base fields come first)
    ("def f():\n    return Derived('SGLANG_PAGE_SIZE').get()\n", {PAGE}),
    ("def f():\n    return Late(1, 'SGLANG_PAGE_SIZE').get()\n", {"$?"}),
])
def test_a_dataclass_or_namedtuple_knob_is_read_where_it_is_made(tmp_path: Path, user: str, leaves: set[str]) -> None:
    head = "from pkg.knobs import EnvInt, Knob, Keyed, Derived, Late\n"
    result = _scan(tmp_path, {"knobs.py": KNOBS, "base.py": BASE, "user.py": head + user})
    assert _leaves(result) == leaves, result.reads
    assert _fails(result)


def test_a_dataclass_knob_of_an_undeclared_variable_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.knobs import EnvInt, Knob\nHOME = EnvInt('HOME', 0)\nPATH = Knob('PATH', '')\n"
    result = _scan(tmp_path, {"knobs.py": KNOBS, "base.py": BASE, "user.py": user})
    assert _leaves(result) == set(), result.reads


# ---- T6: the env helper object reached one hop away: read at the call, as `ENV.get` is

HELPER = """\
import os


def get_env(name, default=None):
    return os.environ.get(name, default)


class Env:
    def get(self, name):
        return os.environ.get(name)


ENV = Env()
"""
IMPORTS = "import dataclasses\nimport functools\nfrom pkg.envutil import ENV, Env, get_env\n\n"


@pytest.mark.parametrize("user", [
    "class S:\n    def __init__(self):\n        self.env = Env()\n\n    def f(self):\n        return self.env.get('SGLANG_PAGE_SIZE')\n",
    "class Sub(Env):\n    pass\n\ndef f():\n    return Sub().get('SGLANG_PAGE_SIZE')\n",
    "def f():\n    env = ENV\n    return env.get('SGLANG_PAGE_SIZE')\n",
    "get16 = functools.partial(get_env, default='16')\n\ndef f():\n    return get16('SGLANG_PAGE_SIZE')\n",
    "def make():\n    return Env()\n\ndef f():\n    return make().get('SGLANG_PAGE_SIZE')\n",
    "class S:\n    env = Env()\n\n    def f(self):\n        return self.env.get('SGLANG_PAGE_SIZE')\n",
    "def f(env: Env):\n    return env.get('SGLANG_PAGE_SIZE')\n",
    "class W:\n    def __init__(self, env=ENV):\n        self.env = env\n\n    def f(self):\n        return self.env.get('SGLANG_PAGE_SIZE')\n",
    "@dataclasses.dataclass\nclass W:\n    env: Env = dataclasses.field(default_factory=Env)\n\n"
    "    def f(self):\n        return self.env.get('SGLANG_PAGE_SIZE')\n",
])
def test_a_helper_object_on_a_carrier_is_read_at_the_call(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"envutil.py": HELPER, "user.py": IMPORTS + user})
    assert _leaves(result) == {PAGE}, result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    # a dict on `self` or a parameter is no helper, whatever the module imports
    "class S:\n    def __init__(self):\n        self.env = {}\n\n    def f(self, name):\n        return self.env.get(name)\n",
    "def f(env: dict, name):\n    return env.get(name), ENV.get('HOME')\n",
    "def f():\n    env = Env()\n    return env.get('PATH')\n",
])
def test_a_carrier_of_something_else_or_an_undeclared_name_reads_nothing(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"envutil.py": HELPER, "user.py": IMPORTS + user})
    assert _leaves(result) == set(), result.reads


def test_a_helper_object_carried_with_a_name_not_shown_is_unresolved(tmp_path: Path) -> None:
    user = "class S:\n    def __init__(self):\n        self.env = ENV\n\n    def f(self, which):\n        return self.env.get(which)\n"
    result = _scan(tmp_path, {"envutil.py": HELPER, "user.py": IMPORTS + user})
    assert _leaves(result) == {"$?"}, result.reads


# ---- T1: config and command-line libraries that fill values from the environment


@pytest.mark.parametrize(("user", "leaves"), [
    # OmegaConf's resolver, inline, in a module constant merged later, and a file it loads
    ("from omegaconf import OmegaConf\n\ndef f():\n    return OmegaConf.create({'p': '${oc.env:SGLANG_PAGE_SIZE,16}'}).p\n",
     {PAGE}),
    ("from omegaconf import OmegaConf\nBASE = {'s': {'p': '${oc.env:SGLANG_TP_SIZE}'}}\n\ndef f():\n"
     "    return OmegaConf.to_container(OmegaConf.merge(OmegaConf.create(BASE), {}), resolve=True)\n", {TP}),
    ("from pathlib import Path\nfrom omegaconf import OmegaConf\n\ndef f():\n"
     "    return OmegaConf.load(Path(__file__).parent / 'conf.yaml').p\n", {"$?"}),
    # jsonargparse: the prefix and each option's name (`JSONARGPARSE_DEFAULT_ENV` turns it on)
    ("from jsonargparse import ArgumentParser\n\ndef f():\n    p = ArgumentParser(env_prefix='SGLANG', default_env=True)\n"
     "    p.add_argument('--page_size', type=int)\n    p.add_argument('--other')\n    return p.parse_args([])\n", {PAGE}),
    ("from jsonargparse import CLI\n\ndef serve(tp_size: int = 1):\n    return tp_size\n\ndef f():\n"
     "    return CLI(serve, args=[], env_prefix='SGLANG', default_env=True)\n", {TP}),
    # the program's name as the prefix: a name no code shows, where an option fits
    ("from jsonargparse import ArgumentParser\n\ndef f():\n    p = ArgumentParser()\n    p.add_argument('--page-size')\n"
     "    return p.parse_args()\n", {"$?"}),
    # the options handed elsewhere: any variable under the prefix
    ("from jsonargparse import ArgumentParser\n\ndef f(add):\n    p = ArgumentParser(env_prefix='SGLANG')\n    add(p)\n"
     "    return p.parse_args()\n", {"$?"}),
    # configargparse: `env_var=` and `auto_env_var_prefix=`
    ("import configargparse\n\ndef f():\n    p = configargparse.ArgParser()\n"
     "    p.add_argument('--page-size', env_var='SGLANG_PAGE_SIZE')\n    return p.parse_args([])\n", {PAGE}),
    ("import configargparse\n\ndef f():\n    p = configargparse.ArgParser(auto_env_var_prefix='SGLANG_')\n"
     "    p.add_argument('-t', '--tp-size', type=int)\n    return p.parse_args([])\n", {TP}),
    # environs and python-decouple: the getter's argument
    ("from environs import Env\nenv = Env()\n\ndef f():\n    return env.int('SGLANG_PAGE_SIZE', 16)\n", {PAGE}),
    ("import environs\n\ndef f():\n    return environs.Env()('SGLANG_TP_SIZE')\n", {TP}),
    ("from decouple import config\n\ndef f():\n    return config('SGLANG_PAGE_SIZE', cast=int, default=16)\n", {PAGE}),
    ("from decouple import config\n\ndef f(name):\n    return config(name)\n", {"$?"}),
])
def test_a_config_library_reads_the_variables_it_fills_from(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _leaves(result) == leaves, result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "from omegaconf import OmegaConf\n\ndef f():\n    return OmegaConf.create({'h': '${oc.env:HOME}', 'p': '${x.y}'})\n",
    # a template string in a module without OmegaConf is just text
    "def f():\n    return '${oc.env:SGLANG_PAGE_SIZE}'\n",
    "from jsonargparse import ArgumentParser\n\ndef f():\n    p = ArgumentParser(env_prefix='NCCL')\n"
    "    p.add_argument('--page_size')\n    return p.parse_args()\n",
    "import configargparse\n\ndef f():\n    p = configargparse.ArgParser()\n    p.add_argument('--page-size')\n"
    "    return p.parse_args([])\n",
    "from environs import Env\nenv = Env()\n\ndef f():\n    env.read_env()\n    return env.str('HOME')\n",
    "from decouple import config\n\ndef f(options):\n    return options.get('SGLANG_PAGE_SIZE'), config('PATH')\n",
])
def test_a_config_library_naming_no_declared_variable_reads_nothing(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _leaves(result) == set(), result.reads


@pytest.mark.parametrize(("user", "leaves"), [
    # handed to a callable no analysis follows: whoever gets it may ask any name
    ("def f(run):\n    return run(ENV)\n", {"$?"}),
    ("def f(register):\n    register(factory=Env)\n", {"$?"}),
    # handed to the module's own function whose parameter carries it: read there
    ("def page(env: Env):\n    return env.get('SGLANG_PAGE_SIZE')\n\ndef f():\n    return page(ENV)\n", {PAGE}),
    ("def f(x):\n    print(ENV)\n    return isinstance(x, Env)\n", set()),
])
def test_a_helper_object_handed_where_no_analysis_follows_is_unresolved(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"envutil.py": HELPER, "user.py": IMPORTS + user})
    assert _leaves(result) == leaves, result.reads
