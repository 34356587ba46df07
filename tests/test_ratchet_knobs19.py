"""Round nineteen's false passes of the read ratchet through environment helpers whose
callers handed the name on unseen (an outside attack, findings 5 and 6): a helper taking
it through `*names`, `**kw` or a tuple it unpacks (`name, default = pair`), and a knob
descriptor naming its variable in `__set_name__` (`self.name = "SGLANG_" + name.upper()`,
SGLang's knob shape with a built name). The helper's own `$?` is allowlisted, as the
attacker did, and must not cover the callers: each caller is the read of the variable it
names, or `$?`. Twins: a caller naming no declared variable, a descriptor whose key is
its attribute's name (read where the attribute is loaded, as before)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ENV_SETTINGS, scan_pkg

UNRESOLVED = "$?"
READ = "$SGLANG_PAGE_SIZE"
_HELPERS = {"env", "EnvInt.get"}  # the helpers' own reads, an allowlist entry's


def _caller_leaves(tmp_path: Path, files: dict[str, str], file: str = "pkg/user.py") -> set[str]:
    """What `file` reads outside the helper itself (whose own `$?` an entry would hold)."""
    result = scan_pkg(tmp_path, files, ENV_SETTINGS)
    return {r.leaf for r in result.reads if r.file == file and r.function not in _HELPERS}


HELPERS = [
    ("import os\ndef env(*names):\n    return [os.getenv(n) for n in names]\n", "env('SGLANG_PAGE_SIZE')", {READ}),
    ("import os\ndef env(*names):\n    for n in names:\n        return os.environ[n]\n", "env('HOME', 'SGLANG_PAGE_SIZE')", {READ}),
    ("import os\ndef env(prefix, *names):\n    return [os.getenv(prefix + n) for n in names]\n",
     "env('SGLANG_', 'PAGE_SIZE')", {UNRESOLVED}),
    ("import os\ndef env(**kw):\n    return os.getenv(kw['name'])\n", "env(name='SGLANG_PAGE_SIZE')", {UNRESOLVED}),
    ("import os\ndef env(pair):\n    name, default = pair\n    return os.getenv(name, default)\n",
     "env(('SGLANG_PAGE_SIZE', '1'))", {UNRESOLVED}),
    ("import os\ndef env(names):\n    for n in names:\n        return os.getenv(n)\n", "env(['SGLANG_PAGE_SIZE'])", {UNRESOLVED}),
]


@pytest.mark.parametrize(("helper", "call", "expected"), HELPERS)
def test_a_caller_of_a_helper_collecting_the_name_reads_it(tmp_path: Path, helper: str, call: str, expected: set[str]) -> None:
    same = helper + f"def f():\n    return {call}\n"
    assert _caller_leaves(tmp_path / "same", {"user.py": same}) == expected, same
    other = {"h.py": helper, "user.py": f"from pkg.h import env\ndef f():\n    return {call}\n"}
    assert _caller_leaves(tmp_path / "other", other) == expected, other


QUIET_CALLS = [
    ("import os\ndef env(*names):\n    return [os.getenv(n) for n in names]\n", "env('HOME')"),
    ("import os\ndef env(**kw):\n    return os.getenv(kw['name'])\n", "env()"),
    # a loop over data the argument holds is the helper's own read, not a key handed over
    ("import os\ndef env(table):\n    return [os.getenv(n) for n in sorted(table.names)]\n", "env(object())"),
    ("import logging\ndef env(*args, **kw):\n    logging.info(*args, **kw)\n", "env('SGLANG_PAGE_SIZE', extra=1)"),
]


@pytest.mark.parametrize(("helper", "call"), QUIET_CALLS)
def test_a_caller_naming_no_declared_variable_reads_nothing(tmp_path: Path, helper: str, call: str) -> None:
    assert _caller_leaves(tmp_path, {"user.py": helper + f"def f():\n    return {call}\n"}) == set()


KNOB = (
    "import os\nclass EnvInt:\n    def __init__(self, default):\n        self.default = default\n"
    "    def __set_name__(self, owner, name):\n        self.name = {build}\n"
    "    def get(self):\n        v = os.getenv(self.name)\n        return self.default if v is None else int(v)\n"
)
BUILT = ["'SGLANG_' + name.upper()", "f'SGLANG_{name.upper()}'", "'SGLANG_%s' % name.upper()"]


@pytest.mark.parametrize("build", BUILT)
def test_a_knob_named_in_set_name_is_read_where_it_is_declared(tmp_path: Path, build: str) -> None:
    environ = KNOB.format(build=build) + "class Envs:\n    page_size = EnvInt(16)\n    port_base = EnvInt(1)\nenvs = Envs()\n"
    leaves = _caller_leaves(tmp_path / "same", {"environ.py": environ}, "pkg/environ.py")
    assert leaves & {READ, UNRESOLVED}, environ
    apart = {"knobs.py": KNOB.format(build=build),
             "environ.py": "from pkg.knobs import EnvInt\nclass Envs:\n    page_size: int = EnvInt(16)\n"}
    assert _caller_leaves(tmp_path / "apart", apart, "pkg/environ.py") & {READ, UNRESOLVED}, apart


def test_a_knob_of_another_variable_or_keyed_by_its_own_name_reads_nothing_where_declared(tmp_path: Path) -> None:
    other = KNOB.format(build="'SGLANG_' + name.upper()") + "class Envs:\n    home_dir = EnvInt(16)\n"
    assert _caller_leaves(tmp_path / "other", {"environ.py": other}, "pkg/environ.py") == set()
    # the key is the attribute's own name: read where `envs.SGLANG_PAGE_SIZE` is loaded
    plain = KNOB.format(build="name") + "class Envs:\n    SGLANG_PAGE_SIZE = EnvInt(16)\nenvs = Envs()\n"
    user = "from pkg.environ import envs\ndef f():\n    return envs.SGLANG_PAGE_SIZE.get()\n"
    files = {"environ.py": plain, "user.py": user}
    assert _caller_leaves(tmp_path / "plain", files, "pkg/environ.py") == set()
    assert _caller_leaves(tmp_path / "plain2", files) == {READ}
