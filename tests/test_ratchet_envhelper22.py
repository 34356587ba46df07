"""Round twenty-two's env-helper findings (an outside attack). Finding 5: a helper that
only writes the environment by its parameter (`os.environ[name] = v`, `del
os.environ[name]`, `pop(name, None)` / `setdefault(name, v)` as a statement) reads
nothing, so its callers read nothing, as the direct spellings; a helper whose write
reads first (`+=`, a `pop` whose value is kept) still makes each caller a read."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet

READ = "$SGLANG_PAGE_SIZE"

WRITES_ONLY = [
    "import os\ndef set_env(name, v):\n    os.environ[name] = v\ndef f():\n    set_env('SGLANG_PAGE_SIZE', '1')\n",
    "import os\ndef unset(name):\n    os.environ.pop(name, None)\ndef f():\n    unset('SGLANG_PAGE_SIZE')\n",
    "import os\ndef set_default(name, v):\n    os.environ.setdefault(name, v)\ndef f():\n    set_default('SGLANG_PAGE_SIZE', '16')\n",
    "import os\ndef delete(name):\n    del os.environ[name]\ndef f():\n    delete('SGLANG_PAGE_SIZE')\n",
    "import os\nclass Env:\n    def set(self, name, v):\n        os.environ[name] = v\ndef f():\n    Env().set('SGLANG_PAGE_SIZE', '1')\n",
]


@pytest.mark.parametrize("body", WRITES_ONLY)
def test_a_helper_that_only_writes_the_environment_reads_nothing_at_its_callers(tmp_path: Path, body: str) -> None:
    env_quiet(tmp_path, {"user.py": body})


def test_a_helper_that_only_writes_reads_nothing_from_another_module(tmp_path: Path) -> None:
    files = {
        "envs.py": "import os\ndef set_env(name, v):\n    os.environ[name] = v\n",
        "user.py": "from pkg.envs import set_env\ndef f():\n    set_env('SGLANG_PAGE_SIZE', '1')\n",
    }
    env_quiet(tmp_path, files)


READS_TOO = [
    "import os\ndef bump(name):\n    os.environ[name] += 'x'\ndef f():\n    bump('SGLANG_PAGE_SIZE')\n",
    "import os\ndef take(name):\n    return os.environ.pop(name, None)\ndef f():\n    return take('SGLANG_PAGE_SIZE')\n",
    "import os\ndef take(name):\n    os.environ.pop(name)\ndef f():\n    take('SGLANG_PAGE_SIZE')\n",
    "import os\ndef was_set(name):\n    try:\n        del os.environ[name]\n    except KeyError:\n        return False\n    return True\n"
    "def f():\n    return was_set('SGLANG_PAGE_SIZE')\n",
    "import os\ndef swap(name, v):\n    old = os.environ.get(name)\n    os.environ[name] = v\n    return old\ndef f():\n    return swap('SGLANG_PAGE_SIZE', '1')\n",
]


@pytest.mark.parametrize("body", READS_TOO)
def test_a_helper_whose_write_reads_first_is_still_a_read_at_its_callers(tmp_path: Path, body: str) -> None:
    assert READ in env_leaves(tmp_path, {"user.py": body}), body


# Finding 2: a helper object reached from an importer through a subclass's inherited
# class attribute, a factory's local, a lazy singleton, a table filled after its literal
_E = "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\n"
_G = "import os\nclass E:\n    def get(self, name):\n        return os.environ.get(name)\n"
REACHED = [
    ("import os\nclass K:\n    get = os.environ.get\nclass K2(K):\n    pass\n",
     "from pkg.envs import K2\ndef f():\n    return K2.get('SGLANG_PAGE_SIZE')\n"),
    ("import os\nclass K:\n    get = os.environ.get\nclass K2(K):\n    pass\n",
     "from pkg.envs import K2\ndef f():\n    return K2().get('SGLANG_PAGE_SIZE')\n"),
    (_E + "class Outer:\n    env = E()\nclass Sub(Outer):\n    pass\n",
     "from pkg.envs import Sub\ndef f():\n    return Sub.env['SGLANG_PAGE_SIZE']\n"),
    (_E + "def get_env():\n    e = E()\n    return e\n",
     "from pkg.envs import get_env\ndef f():\n    return get_env()['SGLANG_PAGE_SIZE']\n"),
    (_G + "_E = None\ndef get_env():\n    global _E\n    if _E is None:\n        _E = E()\n    return _E\n",
     "from pkg.envs import get_env\ndef f():\n    return get_env().get('SGLANG_PAGE_SIZE')\n"),
    ("import os\ndef env(name):\n    return os.getenv(name)\nHELPERS = {}\nHELPERS['env'] = env\n",
     "from pkg.envs import HELPERS\ndef f():\n    return HELPERS['env']('SGLANG_PAGE_SIZE')\n"),
]


@pytest.mark.parametrize(("envs", "user"), REACHED)
def test_a_helper_reached_through_an_importers_carrier_is_read_at_the_call(tmp_path: Path, envs: str, user: str) -> None:
    assert READ in env_leaves(tmp_path, {"envs.py": envs, "user.py": user}), user


QUIET_CARRIERS = [
    ("class K:\n    get = {}.get\nclass K2(K):\n    pass\n",
     "from pkg.envs import K2\ndef f():\n    return K2.get('SGLANG_PAGE_SIZE')\n"),
    ("class Outer:\n    env = {}\nclass Sub(Outer):\n    pass\n",
     "from pkg.envs import Sub\ndef f():\n    return Sub.env.get('SGLANG_PAGE_SIZE')\n"),
    ("def get_env():\n    e = {}\n    return e\n",
     "from pkg.envs import get_env\ndef f():\n    return get_env().get('SGLANG_PAGE_SIZE')\n"),
    ("def name(x):\n    return x\nHELPERS = {}\nHELPERS['env'] = name\n",
     "from pkg.envs import HELPERS\ndef f():\n    return HELPERS['env']('SGLANG_PAGE_SIZE')\n"),
]


@pytest.mark.parametrize(("envs", "user"), QUIET_CARRIERS)
def test_a_carrier_of_something_else_reads_nothing(tmp_path: Path, envs: str, user: str) -> None:
    env_quiet(tmp_path, {"envs.py": envs, "user.py": user})
