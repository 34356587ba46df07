"""Round sixteen's false passes of the read ratchet about Python environment reads (an
outside attack): an environment key whose name is rebound where the key analysis did not
look (another module's `names.PAGE = ...`, `nonlocal`, a walrus in a comprehension,
`setattr(Keys, ...)`, `f.__defaults__ = ...`: R16-8); an env knob whose name changes
after it is made (`dataclasses.replace`, `_replace`, a store on the instance, `setattr(self,
...)`, `self.__dict__.update(kw)`: R16-9); click's `auto_envvar_prefix` set other than as
a keyword (R16-10); wsgiref's stored copy of the environment (R16-13); and presence told
without a counted read (`del` whose KeyError is caught, a scrub that records: R16-14).
Each case fails before its rule; the precision cases beside them stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet

PAGE = "$SGLANG_PAGE_SIZE"
# a key the code shows being rebound may be resolved, or be `$?`
PAGE_OR_UNKNOWN = {PAGE, "$?"}


# ---- R16-8: a key's name rebound where the key analysis did not look

@pytest.mark.parametrize("user", [
    # n01: `nonlocal` in a nested function
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    def swap():\n        nonlocal key\n"
    "        key = 'SGLANG_PAGE_SIZE'\n    swap()\n    return os.environ.get(key)\n",
    # a05: `nonlocal` in a class body
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    class Swap:\n        nonlocal key\n"
    "        key = 'SGLANG_PAGE_SIZE'\n    return os.environ.get(key)\n",
    # n02: a walrus in a comprehension binds in the enclosing function
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    [key := 'SGLANG_PAGE_SIZE' for _ in range(1)]\n"
    "    return os.environ.get(key)\n",
    # n11: `setattr` on a module class
    "import os\nclass Keys:\n    PAGE = 'NCCL_PAGE'\nsetattr(Keys, 'PAGE', 'SGLANG_PAGE_SIZE')\n"
    "def main():\n    return os.environ.get(Keys.PAGE)\n",
    # n12: a function's defaults replaced
    "import os\ndef page(name='NCCL_PAGE'):\n    return os.environ.get(name)\n"
    "page.__defaults__ = ('SGLANG_PAGE_SIZE',)\ndef main():\n    return page()\n",
    "import os\ndef page(*, name='NCCL_PAGE'):\n    return os.environ.get(name)\n"
    "page.__kwdefaults__ = {'name': 'SGLANG_PAGE_SIZE'}\ndef main():\n    return page()\n",
])
def test_a_key_rebound_in_a_way_not_followed_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & PAGE_OR_UNKNOWN


def test_a_module_constant_another_module_rebinds_is_read_there(tmp_path: Path) -> None:
    # n10: monkeypatching a module constant, as plugins and tests do
    names = "import os\nPAGE = 'NCCL_PAGE'\ndef read():\n    return os.environ.get(PAGE)\n"
    user = "import pkg.names as names\nnames.PAGE = 'SGLANG_PAGE_SIZE'\ndef main():\n    return names.read()\n"
    assert env_leaves(tmp_path, {"names.py": names, "user.py": user}, "pkg/names.py") & PAGE_OR_UNKNOWN
    # the same through `from pkg import names` and `setattr(names, "PAGE", ...)`
    user = "from pkg import names\nsetattr(names, 'PAGE', 'SGLANG_PAGE_SIZE')\n"
    assert env_leaves(tmp_path, {"names.py": names, "user.py": user}, "pkg/names.py") & PAGE_OR_UNKNOWN


@pytest.mark.parametrize("user", [
    # a nested function's own local of the same name (no `nonlocal`)
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    def swap():\n        key = 'SGLANG_PAGE_SIZE'\n"
    "        return key\n    swap()\n    return os.environ.get(key)\n",
    # `nonlocal` rebinding to another undeclared name
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    def swap():\n        nonlocal key\n"
    "        key = 'NCCL_OTHER'\n    swap()\n    return os.environ.get(key)\n",
    # a walrus binding another name
    "import os\ndef main():\n    key = 'NCCL_PAGE'\n    [other := 'SGLANG_PAGE_SIZE' for _ in range(1)]\n"
    "    return os.environ.get(key), other\n",
    # setattr of another attribute, and of the same to an undeclared name
    "import os\nclass Keys:\n    PAGE = 'NCCL_PAGE'\nsetattr(Keys, 'OTHER', 'SGLANG_PAGE_SIZE')\n"
    "setattr(Keys, 'PAGE', 'NCCL_OTHER')\ndef main():\n    return os.environ.get(Keys.PAGE)\n",
    # another function's defaults
    "import os\ndef page(name='NCCL_PAGE'):\n    return os.environ.get(name)\n"
    "def other(name='x'):\n    return name\nother.__defaults__ = ('SGLANG_PAGE_SIZE',)\n",
    # an ordinary constant key
    "import os\nPAGE = 'NCCL_PAGE'\ndef main():\n    return os.environ.get(PAGE)\n",
])
def test_a_key_not_rebound_to_a_declared_name_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


def test_a_module_constant_rebound_elsewhere_to_an_undeclared_name_staysenv_quiet(tmp_path: Path) -> None:
    names = "import os\nPAGE = 'NCCL_PAGE'\ndef read():\n    return os.environ.get(PAGE)\n"
    user = "import pkg.names as names\nnames.PAGE = 'NCCL_OTHER'\nnames.OTHER = 'SGLANG_PAGE_SIZE'\n"
    env_quiet(tmp_path, {"names.py": names, "user.py": user})


# ---- R16-9: an env knob's name changed after it is made

DC_KNOB = (
    "import os, dataclasses\n@dataclasses.dataclass\nclass Knob:\n    name: str = 'NCCL_PAGE'\n"
    "    def get(self):\n        return os.environ.get(self.name)\n"
)
NT_KNOB = (
    "import os\nfrom typing import NamedTuple\nclass Knob(NamedTuple):\n    name: str = 'NCCL_PAGE'\n"
    "    def get(self):\n        return os.environ.get(self.name)\n"
)
HIER_KNOB = "import os\nclass Knob:\n    env_name = 'NCCL_PAGE'\n    def get(self):\n        return os.environ.get(self.env_name)\n"


@pytest.mark.parametrize("user", [
    # n15, n20: a copy with the name replaced
    DC_KNOB + "def main():\n    return dataclasses.replace(Knob(), name='SGLANG_PAGE_SIZE').get()\n",
    NT_KNOB + "def main():\n    return Knob()._replace(name='SGLANG_PAGE_SIZE').get()\n",
    # n16, n18: the name stored on an instance from outside the class
    DC_KNOB + "def main():\n    k = Knob()\n    k.name = 'SGLANG_PAGE_SIZE'\n    return k.get()\n",
    HIER_KNOB + "def main():\n    k = Knob()\n    k.env_name = 'SGLANG_PAGE_SIZE'\n    return k.get()\n",
    # n13: setattr on self
    "import os\nclass K:\n    PAGE = 'NCCL_PAGE'\n    def __init__(self):\n        setattr(self, 'PAGE', 'SGLANG_PAGE_SIZE')\n"
    "    def get(self):\n        return os.environ.get(self.PAGE)\ndef main():\n    return K().get()\n",
    # n14: the config-object idiom
    "import os\nclass K:\n    PAGE = 'NCCL_PAGE'\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n"
    "    def get(self):\n        return os.environ.get(self.PAGE)\ndef main():\n    return K(PAGE='SGLANG_PAGE_SIZE').get()\n",
    "import os\nclass K:\n    PAGE = 'NCCL_PAGE'\n    def __init__(self, **kw):\n        vars(self).update(kw)\n"
    "    def get(self):\n        return os.environ.get(self.PAGE)\n",
])
def test_a_knob_renamed_after_it_is_made_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & PAGE_OR_UNKNOWN


@pytest.mark.parametrize("user", [
    DC_KNOB + "def main():\n    return Knob().get()\n",
    NT_KNOB + "def main():\n    return Knob().get()\n",
    HIER_KNOB + "def main():\n    return Knob().get()\n",
    # renamed to an undeclared name, or another attribute stored
    DC_KNOB + "def main():\n    k = Knob()\n    k.name = 'NCCL_OTHER'\n    return k.get()\n",
    DC_KNOB + "def main():\n    k = Knob()\n    k.other = 'SGLANG_PAGE_SIZE'\n    return k.get()\n",
    DC_KNOB + "def main():\n    return dataclasses.replace(Knob(), name='NCCL_OTHER').get()\n",
    "import os\nclass K:\n    PAGE = 'NCCL_PAGE'\n    def __init__(self):\n        setattr(self, 'OTHER', 'SGLANG_PAGE_SIZE')\n"
    "    def get(self):\n        return os.environ.get(self.PAGE)\n",
])
def test_a_knob_not_renamed_to_a_declared_name_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


# ---- R16-10: click's auto_envvar_prefix set other than as a keyword

CLICK_GROUP = (
    "import click\n@click.group()\n@click.pass_context\ndef cli(ctx):\n    {body}\n"
    "@cli.command()\n@click.option('--size', type=int, default=1)\ndef page(size):\n    click.echo(size)\n"
)


@pytest.mark.parametrize("user", [
    # k04: a settings dict filled by subscript
    "import click\nSETTINGS = dict()\nSETTINGS['auto_envvar_prefix'] = 'SGLANG'\n"
    "@click.command(context_settings=SETTINGS)\n@click.option('--page-size', type=int, default=1)\n"
    "def cli(page_size):\n    click.echo(page_size)\n",
    "import click\nSETTINGS = {}\nSETTINGS.setdefault('auto_envvar_prefix', 'SGLANG')\n",
    # k02: the command's own settings
    CLICK_GROUP.format(body="pass") + "cli.context_settings['auto_envvar_prefix'] = 'SGLANG'\n",
    # k03: the context's attribute
    CLICK_GROUP.format(body="ctx.auto_envvar_prefix = 'SGLANG'"),
    CLICK_GROUP.format(body="setattr(ctx, 'auto_envvar_prefix', 'SGLANG')"),
])
def test_an_auto_envvar_prefix_set_other_than_as_a_keyword_is_read(tmp_path: Path, user: str) -> None:
    assert PAGE in env_leaves(tmp_path, {"user.py": user})


@pytest.mark.parametrize("user", [
    "import click\nSETTINGS = dict()\nSETTINGS['help_option_names'] = ['-h']\nSETTINGS['auto_envvar_prefix'] = 'NCCL'\n",
    CLICK_GROUP.format(body="ctx.auto_envvar_prefix = 'NCCL'"),
    CLICK_GROUP.format(body="ctx.obj = 'SGLANG'"),
])
def test_an_auto_envvar_prefix_naming_no_declared_variable_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


# ---- R16-13: the standard library's stored copy of the environment

@pytest.mark.parametrize("user", [
    "from wsgiref.handlers import BaseHandler\ndef main():\n    return BaseHandler.os_environ.get('SGLANG_PAGE_SIZE')\n",
    "import wsgiref.handlers\ndef main():\n    return wsgiref.handlers.SimpleHandler.os_environ['SGLANG_PAGE_SIZE']\n",
    "from wsgiref.handlers import read_environ\ndef main():\n    return read_environ().get('SGLANG_PAGE_SIZE')\n",
    "from wsgiref import handlers\ndef main():\n    return handlers.read_environ()['SGLANG_PAGE_SIZE']\n",
])
def test_wsgirefs_copy_of_the_environment_is_the_environment(tmp_path: Path, user: str) -> None:
    assert PAGE in env_leaves(tmp_path, {"user.py": user})


@pytest.mark.parametrize("user", [
    # a request's WSGI environ is no process environment
    "def app(environ, start_response):\n    return environ.get('SGLANG_PAGE_SIZE')\n",
    "from wsgiref.handlers import BaseHandler\ndef main():\n    return BaseHandler.os_environ.get('NCCL_PAGE'), BaseHandler.wsgi_version\n",
])
def test_wsgiref_naming_no_declared_variable_staysenv_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


# ---- R16-14: presence told without a counted read

@pytest.mark.parametrize(("user", "leaves"), [
    # e12: a del whose KeyError is caught tells set from unset
    ("import os\ndef main():\n    try:\n        del os.environ['SGLANG_PAGE_SIZE']\n    except KeyError:\n"
     "        return 'absent'\n    return 'present'\n", {PAGE}),
    ("import os\ndef main():\n    try:\n        del os.environ['SGLANG_PAGE_SIZE']\n    except (KeyError, OSError):\n"
     "        pass\n", {PAGE}),
    ("import os\ndef main():\n    try:\n        os.environ.pop('SGLANG_PAGE_SIZE')\n    except LookupError:\n"
     "        return False\n", {PAGE}),
    # e13: a scrub that records what it deleted
    ("import os\ndef main():\n    had = False\n    for k in list(os.environ):\n        if k.startswith('SGLANG_PAGE'):\n"
     "            del os.environ[k]\n            had = True\n    return had\n", PAGE_OR_UNKNOWN),
])
def test_presence_told_by_a_delete_is_a_read(tmp_path: Path, user: str, leaves: set[str]) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & leaves


@pytest.mark.parametrize("user", [
    # writes, as documented
    "import os\ndef main():\n    os.environ.pop('SGLANG_PAGE_SIZE', None)\n",
    "import os\ndef main():\n    del os.environ['SGLANG_PAGE_SIZE']\n",
    "import os\ndef main():\n    try:\n        del os.environ['NCCL_PAGE']\n    except KeyError:\n        pass\n",
    "import os\ndef main():\n    try:\n        del os.environ['SGLANG_PAGE_SIZE']\n    except ValueError:\n        pass\n",
    # a scrub that only deletes
    "import os\ndef main():\n    for k in list(os.environ):\n        if k.startswith('SGLANG_'):\n            del os.environ[k]\n",
    "import os\ndef main():\n    for k in list(os.environ):\n        if k.startswith('NCCL_'):\n            del os.environ[k]\n"
    "            had = True\n",
])
def test_a_delete_that_tells_nothing_stays_a_write(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})
