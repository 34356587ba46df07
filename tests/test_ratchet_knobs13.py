"""Round thirteen's false passes of the read ratchet about env-knob classes (an outside
attack): R13-7, a base class reading `os.environ.get(self.env_name)` whose literal
`env_name = ""` its subclasses override (in its module or another, by a class keyword
`__init_subclass__` stores, or by `Knob.env_name = ...`), read as the base's literal only;
and R13-8, a str Enum's reader method (`EnvVar.PAGE_SIZE.get()`), whose callers hid under
the method's own `$?`. Each is read where the scanner can know it; each has a twin that
reads nothing declared, and a shape whose value the scanner cannot know is `$?`."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

PAGE = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"

KNOB = """\
import os


class Knob:
    env_name = ""
    default = ""

    def get(self):
        return os.environ.get(self.env_name, self.default)
"""

HOOKED = """\
import os


class EnvKnob:
    env_name: str = ""

    def __init_subclass__(cls, env_name: str = "", **kw):
        super().__init_subclass__(**kw)
        cls.env_name = env_name

    @classmethod
    def get(cls):
        return os.environ.get(cls.env_name)
"""


def _knob_reads(tmp_path: Path, files: dict[str, str], file: str = "pkg/knob.py") -> set[tuple[str, str]]:
    return _keys(_scan(tmp_path, files), file)


# ---- R13-7: the hierarchy's every binding of the attribute

@pytest.mark.parametrize("base", ['""', '"UNSET"', '"SGLANG_"'])
def test_subclass_override_in_the_same_module_is_read(tmp_path: Path, base: str) -> None:
    knob = KNOB.replace('env_name = ""', f"env_name = {base}")
    files = {"knob.py": knob + '\n\nclass PageSize(Knob):\n    env_name = "SGLANG_PAGE_SIZE"\n'}
    result = _scan(tmp_path, files)
    assert ("Knob.get", PAGE) in _keys(result, "pkg/knob.py")
    assert _fails(result)


def test_subclass_override_in_another_module_is_read_in_the_base(tmp_path: Path) -> None:
    files = {
        "knob.py": KNOB,
        "user.py": 'from pkg.knob import Knob\n\nclass PageSize(Knob):\n    env_name = "SGLANG_PAGE_SIZE"\n'
                   '    default = "16"\n\ndef main():\n    return PageSize().get()\n',
    }
    assert ("Knob.get", PAGE) in _knob_reads(tmp_path, files)


def test_a_subclass_of_a_subclass_in_a_third_module_is_read(tmp_path: Path) -> None:
    files = {
        "knob.py": KNOB,
        "mid.py": "from pkg.knob import Knob\n\nclass Sized(Knob):\n    default = '16'\n",
        "user.py": 'import pkg.mid as m\n\nclass PageSize(m.Sized):\n    env_name = "SGLANG_PAGE_SIZE"\n',
    }
    assert ("Knob.get", PAGE) in _knob_reads(tmp_path, files)


@pytest.mark.parametrize("user", [
    # a class keyword the base's `__init_subclass__` stores, in another module
    'from pkg.knob import EnvKnob\n\nclass PageSize(EnvKnob, env_name="SGLANG_PAGE_SIZE"):\n    pass\n',
    # the keyword a module constant
    'from pkg.knob import EnvKnob\nNAME = "SGLANG_PAGE_SIZE"\n\nclass PageSize(EnvKnob, env_name=NAME):\n    pass\n',
])
def test_class_keyword_stored_by_init_subclass_is_read(tmp_path: Path, user: str) -> None:
    assert ("EnvKnob.get", PAGE) in _knob_reads(tmp_path, {"knob.py": HOOKED, "user.py": user})


def test_class_keyword_in_the_same_module_is_read(tmp_path: Path) -> None:
    files = {"knob.py": HOOKED + '\n\nclass PageSize(EnvKnob, env_name="SGLANG_PAGE_SIZE"):\n    pass\n'}
    assert ("EnvKnob.get", PAGE) in _knob_reads(tmp_path, files)


@pytest.mark.parametrize("files", [
    # `PageKnob.env_name = ...` at module level, in the class's module
    {"knob.py": KNOB + '\n\nclass PageKnob(Knob):\n    pass\n\n\nPageKnob.env_name = "SGLANG_PAGE_SIZE"\n'},
    # on the imported class itself, in another module
    {"knob.py": KNOB, "user.py": 'from pkg.knob import Knob\n\nKnob.env_name = "SGLANG_PAGE_SIZE"\n'},
    # on a subclass made in another module
    {"knob.py": KNOB, "user.py": 'from pkg import knob\n\nclass P(knob.Knob):\n    pass\n\n'
                                 'P.env_name = "SGLANG_PAGE_SIZE"\n'},
])
def test_class_attribute_assigned_at_module_level_is_read(tmp_path: Path, files: dict[str, str]) -> None:
    assert ("Knob.get", PAGE) in _knob_reads(tmp_path, files)


def test_explicit_class_read_takes_module_level_rebinding(tmp_path: Path) -> None:
    files = {"user.py": 'import os\n\nclass Keys:\n    PAGE = "X"\n\n\nKeys.PAGE = "SGLANG_PAGE_SIZE"\n\n'
                        'def main():\n    return os.environ[Keys.PAGE]\n'}
    assert ("main", PAGE) in _keys(_scan(tmp_path, files))


@pytest.mark.parametrize("files", [
    # every binding names an undeclared variable: nothing declared is read
    {"knob.py": KNOB + '\n\nclass Home(Knob):\n    env_name = "HOME"\n'},
    {"knob.py": KNOB, "user.py": 'from pkg.knob import Knob\n\nclass Home(Knob):\n    env_name = "HOME"\n'},
    {"knob.py": HOOKED, "user.py": 'from pkg.knob import EnvKnob\n\nclass Home(EnvKnob, env_name="HOME"):\n    pass\n'},
    {"knob.py": KNOB, "user.py": 'from pkg.knob import Knob\n\nKnob.env_name = "HOME"\n'},
    # a subclass that binds other attributes only
    {"knob.py": KNOB, "user.py": 'from pkg.knob import Knob\n\nclass K(Knob):\n    default = "16"\n'},
    # an unrelated class of another module binding the same attribute name
    {"knob.py": KNOB, "user.py": 'class Other:\n    env_name = "SGLANG_PAGE_SIZE"\n'},
])
def test_hierarchy_binding_only_undeclared_names_reads_nothing(tmp_path: Path, files: dict[str, str]) -> None:
    result = _scan(tmp_path, files)
    assert _keys(result, "pkg/knob.py") == set()
    assert not _fails(result)


@pytest.mark.parametrize("files", [
    # a subclass binding the name to something the module does not show
    {"knob.py": KNOB, "user.py": 'from pkg.knob import Knob\nimport conf\n\nclass P(Knob):\n'
                                 '    env_name = conf.page_variable()\n'},
    {"knob.py": KNOB + "\n\nclass P(Knob):\n    env_name = None\n"},
    # the class keywords unpacked
    {"knob.py": HOOKED, "user.py": "from pkg.knob import EnvKnob\nimport conf\n\n"
                                   "class P(EnvKnob, **conf.KW):\n    pass\n"},
    # rebound in a function, from its parameter
    {"knob.py": KNOB, "user.py": "from pkg.knob import Knob\n\ndef configure(name):\n    Knob.env_name = name\n"},
    # a subclass storing it from its constructor's parameter
    {"knob.py": KNOB, "user.py": "from pkg.knob import Knob\n\nclass P(Knob):\n    def __init__(self, name):\n"
                                 "        self.env_name = name\n"},
])
def test_a_binding_the_scanner_cannot_know_is_unresolved(tmp_path: Path, files: dict[str, str]) -> None:
    result = _scan(tmp_path, files)
    assert ("Knob.get" if "class Knob" in files["knob.py"] else "EnvKnob.get", UNRESOLVED) in _keys(result, "pkg/knob.py")
    assert _fails(result)


def test_base_binding_nothing_with_an_unscanned_base_is_unresolved(tmp_path: Path) -> None:
    files = {"knob.py": "import os\nfrom thirdparty import Base\n\nclass Knob(Base):\n    def get(self):\n"
                        "        return os.environ.get(self.env_name)\n\n\nclass P(Knob):\n    env_name = 'HOME'\n"}
    assert ("Knob.get", UNRESOLVED) in _knob_reads(tmp_path, files)


# ---- R13-8: a str Enum's reader method, read at each caller with its member's value

ENVVARS = """\
import os
from enum import Enum


class EnvVar(str, Enum):
    PAGE_SIZE = "SGLANG_PAGE_SIZE"
    HOME = "HOME"

    def get(self, default=None):
        return os.environ.get(self.value, default)
"""


@pytest.mark.parametrize("user", [
    "from pkg.envvars import EnvVar\n\ndef main():\n    return EnvVar.PAGE_SIZE.get()\n",
    "import pkg.envvars as ev\n\ndef main():\n    return ev.EnvVar.PAGE_SIZE.get('16')\n",
    "from pkg import envvars\n\ndef main():\n    return envvars.EnvVar.PAGE_SIZE.get()\n",
])
def test_enum_member_method_call_reads_the_members_value(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"envvars.py": ENVVARS, "user.py": user})
    assert _keys(result) == {("main", PAGE)}
    # the method's own read stays the `$?` an allowlist entry may baseline
    assert _keys(result, "pkg/envvars.py") == {("EnvVar.get", UNRESOLVED)}


@pytest.mark.parametrize("enum", [
    # the member itself is the string (a str Enum): `os.environ.get(self)`
    ENVVARS.replace("os.environ.get(self.value, default)", "os.environ.get(self, default)"),
    # a key built from the value
    ENVVARS.replace('"SGLANG_PAGE_SIZE"', '"PAGE_SIZE"').replace(
        "os.environ.get(self.value, default)", 'os.environ.get("SGLANG_" + self.value, default)'),
    # the key built from the member's name (a plain Enum)
    "import os\nfrom enum import Enum\n\nclass EnvVar(Enum):\n    PAGE_SIZE = 16\n\n"
    "    def get(self):\n        return os.environ.get('SGLANG_' + self.name)\n",
])
def test_enum_member_key_shapes_are_read_at_the_caller(tmp_path: Path, enum: str) -> None:
    user = "from pkg.envvars import EnvVar\n\ndef main():\n    return EnvVar.PAGE_SIZE.get()\n"
    assert ("main", PAGE) in _keys(_scan(tmp_path, {"envvars.py": enum, "user.py": user}))


def test_enum_member_in_its_own_module_is_read(tmp_path: Path) -> None:
    files = {"envvars.py": ENVVARS + "\n\ndef page():\n    return EnvVar.PAGE_SIZE.get()\n"}
    assert ("page", PAGE) in _keys(_scan(tmp_path, files), "pkg/envvars.py")


def test_enum_member_of_an_undeclared_variable_reads_nothing(tmp_path: Path) -> None:
    user = "from pkg.envvars import EnvVar\n\ndef main():\n    return EnvVar.HOME.get()\n"
    assert _keys(_scan(tmp_path, {"envvars.py": ENVVARS, "user.py": user})) == set()


def test_enum_member_whose_value_is_not_shown_is_unresolved(tmp_path: Path) -> None:
    enum = ENVVARS.replace('"SGLANG_PAGE_SIZE"', "conf.page_variable()").replace("import os\n", "import os\nimport conf\n")
    user = "from pkg.envvars import EnvVar\n\ndef main():\n    return EnvVar.PAGE_SIZE.get()\n"
    result = _scan(tmp_path, {"envvars.py": enum, "user.py": user})
    assert _keys(result) == {("main", UNRESOLVED)}
    assert _fails(result)


def test_a_subclass_binding_an_attribute_the_base_never_reads_adds_nothing(tmp_path: Path) -> None:
    files = {
        "knob.py": KNOB + '\n\nclass Page(Knob):\n    env_name = "HOME"\n',
        "user.py": "from pkg.knob import Page\nimport conf\n\nclass P(Page):\n    model = conf.make()\n    weight = 3\n",
    }
    assert _knob_reads(tmp_path, files) == set()
