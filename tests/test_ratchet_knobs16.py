"""Round sixteen's env knobs renamed after they are made, beyond the attacker's cases
(tests/test_ratchet_envpy16.py holds those): the other spellings of a store on `self`
(`object.__setattr__`, `self.__dict__ = kw`, `vars(self)[k] = v`), a store on an instance
from outside its class (a parameter, `vars(k).update(d)`, `replace(k, **kw)`), and another
module's rebinding of a constant through `from pkg import names` in a function (R16-8,
R16-9). Each case fails before its rule; the precision cases beside them stay quiet: a
store on an instance of another class, of another attribute, of a name no variable has."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet

PAGE = "$SGLANG_PAGE_SIZE"
PAGE_OR_UNKNOWN = {PAGE, "$?"}

KNOB = "import os, dataclasses\nclass Knob:\n    name = 'NCCL_PAGE'\n    def get(self):\n        return os.environ.get(self.name)\n"
OTHER = "class Other:\n    name = 'x'\n"


def _method(body: str) -> str:
    return (
        "import os\nclass K:\n    PAGE = 'NCCL_PAGE'\n    def __init__(self, key='PAGE', **kw):\n"
        f"        {body}\n    def get(self):\n        return os.environ.get(self.PAGE)\n"
    )


@pytest.mark.parametrize("user", [
    _method("object.__setattr__(self, 'PAGE', 'SGLANG_PAGE_SIZE')"),
    _method("self.__setattr__('PAGE', 'SGLANG_PAGE_SIZE')"),
    # a name not shown: every attribute
    _method("setattr(self, key, 'SGLANG_PAGE_SIZE')"),
    _method("self.__dict__ = kw"),
    _method("self.__dict__ |= kw"),
    _method("vars(self)[key] = kw[key]"),
    _method("self.__dict__.setdefault('PAGE', kw['page'])"),
])
def test_a_knob_renamed_on_self_every_way_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & PAGE_OR_UNKNOWN


@pytest.mark.parametrize("user", [
    _method("object.__setattr__(self, 'PAGE', 'NCCL_OTHER')"),
    _method("setattr(self, 'OTHER', 'SGLANG_PAGE_SIZE')"),
    _method("self.other = dict(kw)\n        self.other.update(kw)"),
    _method("vars(kw).update(kw)"),
])
def test_a_store_on_self_of_no_declared_name_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


@pytest.mark.parametrize("user", [
    # on an instance whose class the module does not show (a parameter): a shown value
    KNOB + "def configure(k):\n    k.name = 'SGLANG_PAGE_SIZE'\n",
    KNOB + "def configure(k):\n    setattr(k, 'name', 'SGLANG_PAGE_SIZE')\n",
    # and one not shown
    KNOB + "def configure(k, name):\n    k.name = name\n",
    # at the top level, on a module instance
    KNOB + "KNOB = Knob()\nKNOB.name = 'SGLANG_PAGE_SIZE'\n",
    # every attribute of a known instance
    KNOB + "def main(d):\n    k = Knob()\n    vars(k).update(d)\n    return k.get()\n",
    KNOB + "def main(d):\n    k = Knob()\n    k.__dict__[d] = d\n    return k.get()\n",
    KNOB + "def main(kw):\n    return dataclasses.replace(Knob(), **kw).get()\n",
    # a subclass's instance
    KNOB + "class Sub(Knob):\n    pass\ndef main():\n    k = Sub()\n    k.name = 'SGLANG_PAGE_SIZE'\n    return k.get()\n",
])
def test_a_knob_renamed_from_outside_its_class_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & PAGE_OR_UNKNOWN


@pytest.mark.parametrize("user", [
    # another class's instance, whatever the value
    KNOB + OTHER + "def main(name):\n    o = Other()\n    o.name = 'SGLANG_PAGE_SIZE'\n    o.name = name\n",
    KNOB + OTHER + "def main(d):\n    o = Other()\n    vars(o).update(d)\n",
    # every attribute of an instance not shown (argparse's namespace)
    KNOB + "def main(args, d):\n    vars(args).update(d)\n    args.__dict__.update(d)\n",
    KNOB + "def main(k, kw):\n    return dataclasses.replace(k, **kw)\n",
    # a string method, no copy
    KNOB + "def main(s):\n    return s.replace('a', 'SGLANG_PAGE_SIZE')\n",
])
def test_a_store_on_no_knob_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


NAMES = "import os\nPAGE = 'NCCL_PAGE'\ndef read():\n    return os.environ.get(PAGE)\n"


@pytest.mark.parametrize("user", [
    # in a function: the value is not followed
    "from pkg import names\ndef patch(value):\n    names.PAGE = value\n",
    "import pkg.names\nimport pkg.names as n\nn.PAGE = 'SGLANG_PAGE_SIZE'\n",
])
def test_a_module_constant_rebound_elsewhere_every_way_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"names.py": NAMES, "user.py": user}, "pkg/names.py") & PAGE_OR_UNKNOWN


@pytest.mark.parametrize("user", [
    # another module's constant of the same name
    "import pkg.other as names\nnames.PAGE = 'SGLANG_PAGE_SIZE'\n",
    "from pkg import names\nnames.PAGE = 'NCCL_OTHER'\nnames.OTHER = 'x'\n",
])
def test_a_module_constant_not_rebound_to_a_declared_name_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"names.py": NAMES, "other.py": "PAGE = 'x'\n", "user.py": user})
