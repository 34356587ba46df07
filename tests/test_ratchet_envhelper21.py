"""Round twenty-one's false passes of the read ratchet through an environment helper
reached other than by its own name (an outside attack, findings 2, 5 and 10): a dunder
helper instance under an alias (`ENV2 = ENV`), from a factory (`get_env()`), in a
container (`[ENV]`), wrapped by `functools.partial`, or read-and-written by an augmented
assignment (`ENV[k] += ...`, `ENV.K += ...`); a helper method, property or `__call__`
that returns `os.environ` whole; a `__getitem__` helper kept as a class attribute
(`Outer.env[...]`); a helper re-exported as a bound method (`get = ENV.get`), a
`staticmethod(env)` class attribute, a list slot or a function's return value. Each is
the read of the name at the call site, so an allowlist entry for the helper's own `$?`
(or the alias's) covers no new caller. Each has a twin that reads nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, file_reads, scan_env_pkg

READ = "$SGLANG_PAGE_SIZE"

DUNDERS = (
    "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\n"
    "    def __setitem__(self, name, v):\n        os.environ[name] = v\n"
    "    def __call__(self, name):\n        return os.getenv(name)\nENV = E()\n"
)
ATTRS = (
    "import os\nclass E:\n    def __getattr__(self, name):\n        return os.environ[name]\n"
    "    def __setattr__(self, name, v):\n        os.environ[name] = v\nENV = E()\n"
)
PROPERTY = "import os\nclass E:\n    @property\n    def env(self):\n        return os.environ\nENV = E()\n"
METHOD = "import os\nclass E:\n    def get(self):\n        return os.environ\nENV = E()\n"
CALL_WHOLE = "import os\nclass E:\n    def __call__(self):\n        return os.environ\nenv = E()\n"
OUTER = (
    "import os\nclass E:\n    def __getitem__(self, name):\n        return os.environ[name]\n"
    "class Outer:\n    env = E()\n"
)
GET = "import os\nclass E:\n    def get(self, name):\n        return os.getenv(name)\nENV = E()\n"
FUNC = "import os\ndef env(name):\n    return os.getenv(name)\n"

CALLERS = [
    # finding 2: the dunder helper instance reached otherwise
    (DUNDERS + "ENV2 = ENV\n", "from pkg.envs import ENV2\ndef f():\n    return ENV2['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "ENV2 = ENV\n", "from pkg import envs\ndef f():\n    return envs.ENV2('SGLANG_PAGE_SIZE')\n"),
    (DUNDERS + "def get_env():\n    return ENV\n",
     "from pkg.envs import get_env\ndef f():\n    return get_env()['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "ENVS = [ENV]\n",
     "from pkg.envs import ENVS\ndef f():\n    for e in ENVS:\n        return e('SGLANG_PAGE_SIZE')\n"),
    (DUNDERS + "ENVS = [ENV]\n", "from pkg.envs import ENVS\ndef f():\n    return ENVS[0]['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "TABLE = {'env': ENV}\n",
     "from pkg.envs import TABLE\ndef f():\n    return TABLE['env']['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS, "import functools\nfrom pkg.envs import ENV\ndef f():\n    return functools.partial(ENV, 'SGLANG_PAGE_SIZE')()\n"),
    (DUNDERS, "from pkg.envs import ENV\ndef f():\n    ENV['SGLANG_PAGE_SIZE'] += 'x'\n"),
    (ATTRS, "from pkg.envs import ENV\ndef f():\n    ENV.SGLANG_PAGE_SIZE += 'x'\n"),
    # ... and by more than one step, through a module import, from a module re-exporting it
    (DUNDERS + "ENV2 = ENV\nENV3 = ENV2\n", "from pkg.envs import ENV3\ndef f():\n    return ENV3['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "ENVS = [ENV]\n", "import pkg.envs as envs\ndef f():\n    return envs.ENVS[0]['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "def get_env():\n    return ENV\n",
     "from pkg import envs\ndef f():\n    e = envs.get_env()\n    return e('SGLANG_PAGE_SIZE')\n"),
    (DUNDERS + "class Holder:\n    @property\n    def env(self):\n        return ENV\nHOLDER = Holder()\n",
     "from pkg.envs import HOLDER\ndef f():\n    return HOLDER.env['SGLANG_PAGE_SIZE']\n"),
    # finding 5: a helper that gives os.environ whole, a helper kept as a class attribute
    (PROPERTY, "from pkg.envs import ENV\ndef f():\n    return ENV.env['SGLANG_PAGE_SIZE']\n"),
    (PROPERTY, "from pkg.envs import ENV\ndef f():\n    ENV.env['SGLANG_PAGE_SIZE'] += 'x'\n"),
    (PROPERTY, "from pkg.envs import ENV\ndef f():\n    return ENV.env.get('SGLANG_PAGE_SIZE')\n"),
    (METHOD, "from pkg.envs import ENV\ndef f():\n    return ENV.get()['SGLANG_PAGE_SIZE']\n"),
    (CALL_WHOLE, "from pkg.envs import env\ndef f():\n    return env()['SGLANG_PAGE_SIZE']\n"),
    (OUTER, "from pkg.envs import Outer\ndef f():\n    return Outer.env['SGLANG_PAGE_SIZE']\n"),
    (OUTER + "OUT = Outer()\n", "from pkg.envs import OUT\ndef f():\n    return OUT.env['SGLANG_PAGE_SIZE']\n"),
    # finding 10: a helper re-exported as a bound method, a static method, a slot, a return value
    (GET + "get = ENV.get\n", "from pkg.envs import get\ndef f():\n    return get('SGLANG_PAGE_SIZE')\n"),
    (FUNC + "class K:\n    get = staticmethod(env)\n",
     "from pkg.envs import K\ndef f():\n    return K.get('SGLANG_PAGE_SIZE')\n"),
    (FUNC + "HELPERS = [env]\n", "from pkg.envs import HELPERS\ndef f():\n    return HELPERS[0]('SGLANG_PAGE_SIZE')\n"),
    (FUNC + "def helper():\n    return env\n", "from pkg.envs import helper\ndef f():\n    return helper()('SGLANG_PAGE_SIZE')\n"),
]


@pytest.mark.parametrize(("envs", "user"), CALLERS)
def test_a_helper_reached_otherwise_reads_the_name_at_the_call_site(tmp_path: Path, envs: str, user: str) -> None:
    assert READ in env_leaves(tmp_path, {"envs.py": envs, "user.py": user}), user


def test_a_module_re_exporting_the_alias_hands_it_on(tmp_path: Path) -> None:
    files = {
        "envs.py": DUNDERS + "ENV2 = ENV\n",
        "compat.py": "from pkg.envs import ENV2 as LEGACY\n",
        "user.py": "from pkg.compat import LEGACY\ndef f():\n    return LEGACY['SGLANG_PAGE_SIZE']\n",
    }
    assert READ in env_leaves(tmp_path, files)


# the same reach within the helper's own module
OWN = [
    DUNDERS + "ENVS = [ENV]\ndef f():\n    return ENVS[0]['SGLANG_PAGE_SIZE']\n",
    FUNC + "HELPERS = [env]\ndef f():\n    for h in HELPERS:\n        return h('SGLANG_PAGE_SIZE')\n",
    FUNC + "def helper():\n    return env\ndef f():\n    return helper()('SGLANG_PAGE_SIZE')\n",
]


@pytest.mark.parametrize("body", OWN)
def test_a_helper_reached_otherwise_in_its_own_module_reads_the_name(tmp_path: Path, body: str) -> None:
    assert any(leaf == READ for _, leaf in file_reads(scan_env_pkg(tmp_path, {"user.py": body})))


def test_a_container_of_helpers_handed_to_a_callable_is_unresolved(tmp_path: Path) -> None:
    # whoever gets it may call an element with any name
    user = "from pkg.envs import HELPERS\ndef f(run):\n    return run(HELPERS)\n"
    assert "$?" in env_leaves(tmp_path, {"envs.py": FUNC + "HELPERS = [env]\n", "user.py": user})


# the same code, with helpers that read no environment or a name no declared variable is
QUIET = [
    (DUNDERS.replace("os.environ[name]", "name").replace("os.getenv(name)", "name") + "ENV2 = ENV\n",
     "from pkg.envs import ENV2\ndef f():\n    return ENV2['SGLANG_PAGE_SIZE']\n"),
    (DUNDERS + "def get_env():\n    return ENV\n",
     "from pkg.envs import get_env\ndef f():\n    return get_env()['HOME']\n"),
    (DUNDERS + "ENVS = [ENV]\n", "from pkg.envs import ENVS\ndef f():\n    return len(ENVS)\n"),
    # a container, a factory and a class attribute of something else beside the helper
    (DUNDERS + "NAMES = ['a']\ndef get_names():\n    return NAMES\n",
     "from pkg.envs import NAMES, get_names\ndef f():\n    return NAMES[0], get_names()[0]\n"),
    (OUTER + "class Other:\n    env = {}\n", "from pkg.envs import Other\ndef f():\n    return Other.env['SGLANG_PAGE_SIZE']\n"),
    ("class E:\n    def __getitem__(self, name):\n        return name\n    def __setitem__(self, name, v):\n        pass\nENV = E()\n",
     "from pkg.envs import ENV\ndef f():\n    ENV['SGLANG_PAGE_SIZE'] += 'x'\n"),
    (PROPERTY.replace("os.environ", "{}"), "from pkg.envs import ENV\ndef f():\n    return ENV.env['SGLANG_PAGE_SIZE']\n"),
    (METHOD, "from pkg.envs import ENV\ndef f():\n    return ENV.get()['HOME']\n"),
    (OUTER.replace("os.environ[name]", "name"), "from pkg.envs import Outer\ndef f():\n    return Outer.env['SGLANG_PAGE_SIZE']\n"),
    (GET.replace("os.getenv(name)", "name") + "get = ENV.get\n",
     "from pkg.envs import get\ndef f():\n    return get('SGLANG_PAGE_SIZE')\n"),
    ("def env(name):\n    return name\nHELPERS = [env]\n",
     "from pkg.envs import HELPERS\ndef f():\n    return HELPERS[0]('SGLANG_PAGE_SIZE')\n"),
]


@pytest.mark.parametrize(("envs", "user"), QUIET)
def test_the_same_reach_of_what_reads_no_declared_variable_reads_nothing(tmp_path: Path, envs: str, user: str) -> None:
    result = scan_env_pkg(tmp_path, {"envs.py": envs, "user.py": user})
    assert not file_reads(result), result.reads
