"""Round twenty's false passes of the read ratchet through an environment helper reached by
a method Python calls from syntax (an outside attack, finding 4): `ENV["X"]` with a class
whose `__getitem__` reads the environment by its argument, `env("X")` on an instance
with `__call__`, `"X" in ENV` with `__contains__`, an instance made on the spot, a
carrier (`self.env["X"]`), a `Mapping` subclass's inherited `get` (which calls
`self[name]`), a metaclass `__getitem__` and `__class_getitem__`. Each is the read of the
name at the call site, as `ENV.get("X")` is, so an allowlist entry for the helper's own
`$?` covers no new caller. Each has a twin that reads nothing: the same syntax on an
object whose dunder reads no environment, a name no declared variable is."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, file_reads, scan_env_pkg

READ = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"

GETITEM = "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\nENV = E()\n"
CALL = "import os\nclass E:\n    def __call__(self, name):\n        return os.getenv(name)\nenv = E()\n"
CONTAINS = "import os\nclass E:\n    def __contains__(self, name):\n        return bool(os.environ.get(name))\nENV = E()\n"
MAPPING = (
    "import os\nfrom collections.abc import Mapping\nclass Env(Mapping):\n"
    "    def __getitem__(self, name):\n        return os.environ[name]\n"
    "    def __iter__(self):\n        return iter(())\n    def __len__(self):\n        return 0\nENV = Env()\n"
)
META = (
    "import os\nclass EnvMeta(type):\n    def __getitem__(cls, name):\n        return os.environ[name]\n"
    "class Env(metaclass=EnvMeta):\n    pass\n"
)
CLASS_GETITEM = "import os\nclass Env:\n    def __class_getitem__(cls, name):\n        return os.environ[name]\n"

CALLERS = [
    (GETITEM, "from pkg.envs import ENV\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n"),
    (GETITEM, "import pkg.envs as envs\ndef f():\n    return envs.ENV['SGLANG_PAGE_SIZE']\n"),
    (GETITEM, "from pkg.envs import E\ndef f():\n    return E()['SGLANG_PAGE_SIZE']\n"),
    (GETITEM, "from pkg.envs import ENV\nK = 'SGLANG_PAGE_SIZE'\ndef f():\n    return ENV[K]\n"),
    (GETITEM, "from pkg.envs import E\nclass W:\n    def __init__(self):\n        self.env = E()\n"
              "    def f(self):\n        return self.env['SGLANG_PAGE_SIZE']\n"),
    (CALL, "from pkg.envs import env\ndef f():\n    return env('SGLANG_PAGE_SIZE')\n"),
    (CALL, "from pkg.envs import E\ndef f():\n    return E()('SGLANG_PAGE_SIZE')\n"),
    (CONTAINS, "from pkg.envs import ENV\ndef f():\n    return 'SGLANG_PAGE_SIZE' in ENV\n"),
    (CONTAINS, "from pkg.envs import ENV\ndef f():\n    return 'SGLANG_PAGE_SIZE' not in ENV\n"),
    (MAPPING, "from pkg.envs import ENV\ndef f():\n    return ENV.get('SGLANG_PAGE_SIZE')\n"),
    (MAPPING, "from pkg.envs import ENV\ndef f():\n    return 'SGLANG_PAGE_SIZE' in ENV\n"),
    (MAPPING, "from pkg.envs import ENV\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n"),
    (META, "from pkg.envs import Env\ndef f():\n    return Env['SGLANG_PAGE_SIZE']\n"),
    (CLASS_GETITEM, "from pkg.envs import Env\ndef f():\n    return Env['SGLANG_PAGE_SIZE']\n"),
]


@pytest.mark.parametrize(("envs", "user"), CALLERS)
def test_a_helper_reached_through_a_dunder_reads_the_name_at_the_call_site(
    tmp_path: Path, envs: str, user: str
) -> None:
    assert READ in env_leaves(tmp_path, {"envs.py": envs, "user.py": user}), user


# the same shapes within the helper's own module
OWN = [
    GETITEM + "def f():\n    return ENV['SGLANG_PAGE_SIZE']\n",
    GETITEM + "def f():\n    return E()['SGLANG_PAGE_SIZE']\n",
    "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\n"
    "class W:\n    def __init__(self):\n        self.env = E()\n    def f(self):\n        return self.env['SGLANG_PAGE_SIZE']\n",
    "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\n"
    "    def page(self):\n        return self['SGLANG_PAGE_SIZE']\n",
    CALL + "def f():\n    return env('SGLANG_PAGE_SIZE')\n",
    CONTAINS + "def f():\n    return 'SGLANG_PAGE_SIZE' in ENV\n",
    MAPPING + "def f():\n    return ENV.get('SGLANG_PAGE_SIZE', '16')\n",
    META + "def f():\n    return Env['SGLANG_PAGE_SIZE']\n",
    CLASS_GETITEM + "def f():\n    return Env['SGLANG_PAGE_SIZE']\n",
]


@pytest.mark.parametrize("body", OWN)
def test_a_dunder_helper_of_the_module_reads_the_name_where_it_is_called(tmp_path: Path, body: str) -> None:
    result = scan_env_pkg(tmp_path, {"user.py": body})
    assert any(leaf == READ for _, leaf in file_reads(result)), result.reads


def test_a_name_the_caller_does_not_show_is_unresolved(tmp_path: Path) -> None:
    user = "from pkg.envs import ENV\ndef f(name):\n    return ENV[name]\n"
    assert UNRESOLVED in env_leaves(tmp_path, {"envs.py": GETITEM, "user.py": user})


QUIET = [
    # a `__getitem__` over a plain dict, a `__call__` and `__contains__` that read no environment
    ("class E:\n    def __init__(self):\n        self.d = {}\n    def __getitem__(self, name):\n"
     "        return self.d[name]\nENV = E()\n",
     "from pkg.envs import ENV\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n"),
    ("class E:\n    def __call__(self, name):\n        return name.upper()\nenv = E()\n",
     "from pkg.envs import env\ndef f():\n    return env('SGLANG_PAGE_SIZE')\n"),
    ("class E:\n    def __contains__(self, name):\n        return name == 'x'\nENV = E()\n",
     "from pkg.envs import ENV\ndef f():\n    return 'SGLANG_PAGE_SIZE' in ENV\n"),
    # the helper given a name that is no declared variable
    (GETITEM, "from pkg.envs import ENV\ndef f():\n    return ENV['HOME']\n"),
    (MAPPING, "from pkg.envs import ENV\ndef f():\n    return ENV.get('HOME')\n"),
    # a class with an instance `__getitem__` subscripted as a generic (`E[int]`), the
    # constructor of a class with `__call__`, the helper instance in an `in` of its own
    (GETITEM, "from pkg.envs import E\ndef f(x: 'E[int]'):\n    return E[int]\n"),
    (CALL, "from pkg.envs import E\ndef f():\n    return E()\n"),
    (GETITEM, "from pkg.envs import ENV\ndef f(items):\n    return ENV in items\n"),
    # a metaclass without the dunder, a class subscripted without `__class_getitem__`
    ("import os\nclass M(type):\n    def env(cls, name):\n        return os.environ[name]\nclass Env(metaclass=M):\n    pass\n",
     "from pkg.envs import Env\ndef f():\n    return Env[int]\n"),
]


@pytest.mark.parametrize(("envs", "user"), QUIET)
def test_the_same_syntax_on_what_reads_no_environment_reads_nothing(tmp_path: Path, envs: str, user: str) -> None:
    result = scan_env_pkg(tmp_path, {"envs.py": envs, "user.py": user})
    assert not file_reads(result), result.reads
