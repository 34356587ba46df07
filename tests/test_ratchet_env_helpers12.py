"""Round twelve's false passes of the read ratchet about environment helpers (an outside
attack): a helper reached through the class hierarchy (`cls`, an inherited `self.`
method, `super()`, `type(self)`, a classmethod factory), helpers that are no plain
module-level def (nested in a function, a lambda, a def under a module-level try/if),
and a partial of a helper made in a function. Each is reported where the name is passed."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

PAGE = "$SGLANG_PAGE_SIZE"

BASE = """\
import os


class BaseWorker:
    def env_int(self, name, default):
        return int(os.getenv(name, str(default)))
"""

ENVUTIL = """\
import os


def get_env(name, default=None):
    return os.environ.get(name, default)
"""


# ---- V1: a helper method reached through the class hierarchy

@pytest.mark.parametrize(("user", "function"), [
    # a classmethod helper through `cls`; a static one too
    ("import os\n\nclass R:\n    @classmethod\n    def _env(cls, name, d):\n        return os.getenv(name, d)\n\n"
     "    @classmethod\n    def build(cls):\n        return cls._env('SGLANG_PAGE_SIZE', 16)\n", "R.build"),
    ("import os\n\nclass R:\n    @staticmethod\n    def _env(name, d):\n        return os.getenv(name, d)\n\n"
     "    @classmethod\n    def build(cls):\n        return cls(cls._env('SGLANG_PAGE_SIZE', 16))\n", "R.build"),
    # a base's method on self: a base of the module, imported, or through a module alias
    (BASE + "\n\nclass Tp(BaseWorker):\n    def page(self):\n        return self.env_int('SGLANG_PAGE_SIZE', 16)\n",
     "Tp.page"),
    ("from pkg.base import BaseWorker\n\nclass Tp(BaseWorker):\n    def page(self):\n"
     "        return self.env_int('SGLANG_PAGE_SIZE', 16)\n", "Tp.page"),
    ("import pkg.base as b\n\nclass Tp(b.BaseWorker):\n    def page(self):\n"
     "        return self.env_int('SGLANG_PAGE_SIZE', 16)\n", "Tp.page"),
    # super()
    ("from pkg.base import BaseWorker\n\nclass W(BaseWorker):\n    def env_int(self, name, default):\n"
     "        return super().env_int('SGLANG_PAGE_SIZE', default)\n", "W.env_int"),
    # a mixin's static method through cls of the mixed class
    ("import os\n\nclass Mix:\n    @staticmethod\n    def env_str(name):\n        return os.environ.get(name)\n\n"
     "class Srv(Mix):\n    @classmethod\n    def page(cls):\n        return cls.env_str('SGLANG_PAGE_SIZE')\n", "Srv.page"),
    # type(self) and self.__class__
    ("import os\n\nclass K:\n    @staticmethod\n    def _env(name):\n        return os.environ.get(name)\n\n"
     "    def page(self):\n        return type(self)._env('SGLANG_PAGE_SIZE')\n", "K.page"),
    ("import os\n\nclass K:\n    @staticmethod\n    def _env(name):\n        return os.environ.get(name)\n\n"
     "    def page(self):\n        return self.__class__._env('SGLANG_PAGE_SIZE')\n", "K.page"),
    # a knob made by a classmethod factory returning cls(name, default)
    ("import os\n\nclass EnvInt:\n    def __init__(self, name, default):\n        self.name = name\n"
     "        self.default = default\n\n    @classmethod\n    def of(cls, name, default=0):\n"
     "        return cls(name, default)\n\n    def get(self):\n        return os.getenv(self.name)\n\n\n"
     "PAGE = EnvInt.of('SGLANG_PAGE_SIZE', 16)\n", "<module>"),
])
def test_a_helper_reached_through_the_class_hierarchy_is_read_at_the_call(
    tmp_path: Path, user: str, function: str,
) -> None:
    result = _scan(tmp_path, {"base.py": BASE, "user.py": user})
    assert (function, PAGE) in _keys(result), result.reads
    assert _fails(result)


def test_an_unrelated_method_of_a_helpers_name_reads_nothing(tmp_path: Path) -> None:
    user = (
        "class Other:\n    def env_int(self, name, default):\n        return default\n\n"
        "    def page(self):\n        return self.env_int('SGLANG_PAGE_SIZE', 16)\n\n"
        "    @classmethod\n    def build(cls):\n        return cls.env_int(None, 'SGLANG_PAGE_SIZE', 16)\n"
    )
    result = _scan(tmp_path, {"base.py": BASE, "user.py": user})
    assert _keys(result) == set(), result.reads


# ---- V2: helpers nested, lambdas, defs under module-level try/if

TRY_HELPER = """\
import os

try:
    from fast_env_missing import get_env_var
except ImportError:
    def get_env_var(name, default=None):
        return os.environ.get(name, default)
"""


@pytest.mark.parametrize(("user", "function"), [
    ("import os\n\ndef main():\n    def _env(name, default=None):\n        return os.environ.get(name, default)\n\n"
     "    return _env('SGLANG_PAGE_SIZE', '16')\n", "main"),
    ("import functools, os\n\ndef main():\n    @functools.lru_cache(maxsize=None)\n    def flag(name, d='0'):\n"
     "        return os.getenv(name, d)\n\n    return flag('SGLANG_PAGE_SIZE')\n", "main"),
    ("import os\n\n_env = lambda name, default=None: os.environ.get(name, default)\n\n"
     "def f():\n    return _env('SGLANG_PAGE_SIZE')\n", "f"),
    ("import os\n\nclass K:\n    _env = staticmethod(lambda name: os.environ.get(name))\n\n"
     "    def page(self):\n        return self._env('SGLANG_PAGE_SIZE')\n", "K.page"),
    (TRY_HELPER + "\n\ndef f():\n    return get_env_var('SGLANG_PAGE_SIZE')\n", "f"),
    ("from pkg.tryhelper import get_env_var\n\ndef f():\n    return get_env_var('SGLANG_PAGE_SIZE')\n", "f"),
    ("import os, sys\n\nif sys.platform == 'win32':\n    def _env(name):\n        return os.environ.get(name.upper())\n"
     "else:\n    def _env(name):\n        return os.environ.get(name)\n\ndef f():\n    return _env('SGLANG_PAGE_SIZE')\n", "f"),
    ("import os\n\ntry:\n    def get_int(name, d):\n        return int(os.getenv(name, str(d)))\nfinally:\n    pass\n\n"
     "def f():\n    return get_int('SGLANG_PAGE_SIZE', 16)\n", "f"),
    # an environment-returning function defined as a fallback
    ("import os\n\ntry:\n    from fast_env_missing import environ_view\nexcept ImportError:\n"
     "    def environ_view():\n        return os.environ\n\ndef f():\n    return environ_view()['SGLANG_PAGE_SIZE']\n", "f"),
])
def test_a_helper_that_is_no_plain_module_def_is_read_at_the_call(tmp_path: Path, user: str, function: str) -> None:
    result = _scan(tmp_path, {"tryhelper.py": TRY_HELPER, "user.py": user})
    assert (function, PAGE) in _keys(result), result.reads
    assert _fails(result)


def test_a_nested_helper_of_another_function_is_not_the_callers(tmp_path: Path) -> None:
    user = (
        "import os\n\ndef main():\n    def _env(name):\n        return os.environ.get(name)\n    return _env\n\n"
        "def _env(name, default=None):\n    return default\n\ndef f():\n    return _env('SGLANG_PAGE_SIZE')\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", PAGE) not in _keys(result), result.reads


# ---- V5: a partial of a helper made in a function

def test_a_local_partial_of_a_helper_is_read_where_it_is_called(tmp_path: Path) -> None:
    user = (
        "import functools\n\nfrom pkg.envutil import get_env\n\n\ndef f():\n"
        "    g = functools.partial(get_env, default='16')\n    return g('SGLANG_PAGE_SIZE')\n"
    )
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "user.py": user})
    assert ("f", PAGE) in _keys(result), result.reads
    assert _fails(result)
