"""Round five's false passes of the read ratchet about environment names and config
contexts (an outside attack): a declared variable's name handed to an env helper however
the module spells it (deny by default where it does not), SGLang's descriptor per
variable, click's `envvar=`, child commands one step from the call, and contexts held
where the code shows them."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS, ENV_SETTINGS
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

from configbags.migrate.check import check
from configbags.migrate.scan import scan_source
from configbags.migrate.scanmodel import Entry, FlowInput

CTX = "from configbags.generated.accessors import get_context\n"
ENVUTIL = """\
import os

def get_env(name, default=None):
    return os.environ.get(name, default)

class Env:
    def get(self, name, default=None):
        return os.environ.get(name, default)

    @staticmethod
    def sget(name):
        return os.environ.get(name)

ENV = Env()
"""
PAGE = "$SGLANG_PAGE_SIZE"


# ---- F2: a declared name handed to an env helper, however the module spells it

IMPORT = "from pkg.envutil import get_env, ENV, Env\n"


@pytest.mark.parametrize("user", [
    IMPORT + "def f():\n    name = 'SGLANG_PAGE_SIZE'\n    return get_env(name)\n",
    IMPORT + "def f():\n    return ENV.get('SGLANG_PAGE_SIZE')\n",
    IMPORT + "def f():\n    return Env.sget('SGLANG_PAGE_SIZE')\n",
    IMPORT + "def f():\n    return {n: get_env(n) for n in ('SGLANG_PAGE_SIZE',)}\n",
    IMPORT + "class Keys:\n    PAGE = 'SGLANG_PAGE_SIZE'\n\ndef f():\n    return get_env(Keys.PAGE)\n",
    IMPORT + "import enum\nclass EnvVar(str, enum.Enum):\n    PAGE_SIZE = 'SGLANG_PAGE_SIZE'\n\n"
    "def f():\n    return get_env(EnvVar.PAGE_SIZE.value)\n",
    IMPORT + "import functools\nf = functools.partial(get_env, 'SGLANG_PAGE_SIZE')\n",
    IMPORT + "def f():\n    return get_env(*('SGLANG_PAGE_SIZE',))\n",
    IMPORT + "NAMES = {'page': 'SGLANG_PAGE_SIZE'}\n\ndef f():\n    return get_env(NAMES['page'])\n",
    IMPORT + "def f(name='SGLANG_PAGE_SIZE'):\n    return get_env(name)\n",
    IMPORT + "def f():\n    return get_env(name='SGLANG_PAGE_SIZE')\n",
    "from pkg import envutil\n\ndef f():\n    return envutil.ENV.get('SGLANG_PAGE_SIZE')\n",
])
def test_a_declared_name_handed_to_an_env_helper_is_read_at_the_call_site(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "user.py": user})
    function = "<module>" if "partial" in user else "f"
    assert (function, PAGE) in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    IMPORT + "from pkg.names import PAGE\n\ndef f():\n    return get_env(PAGE)\n",
    IMPORT + "from pkg import names\n\ndef f():\n    return get_env(names.PAGE)\n",
    "import os\nfrom pkg.names import PAGE\n\ndef f():\n    return os.environ[PAGE]\n",
    "import subprocess\nfrom .names import CMD\n\ndef f():\n    return subprocess.run(CMD, shell=True)\n",
    "import subprocess\nfrom pkg.names import ARGV\n\ndef f():\n    return subprocess.run(ARGV)\n",
])
def test_another_modules_constant_is_resolved(tmp_path: Path, user: str) -> None:
    names = "PAGE = 'SGLANG_PAGE_SIZE'\nCMD = 'echo $SGLANG_PAGE_SIZE'\nARGV = ['printenv', 'SGLANG_PAGE_SIZE']\n"
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "names.py": names, "user.py": user})
    assert _keys(result) == {("f", PAGE)}, result.reads


@pytest.mark.parametrize("user", [
    IMPORT + "from pkg.names import OTHER\n\ndef f():\n    return get_env(OTHER)\n",
    IMPORT + "def f(name):\n    return get_env(name)\n",
    IMPORT + "def f(names):\n    return get_env(*names)\n",
    IMPORT + "def f(kw):\n    return get_env(**kw)\n",
    IMPORT + "def f(names):\n    return list(map(get_env, names))\n",
    IMPORT + "def f(o):\n    return ENV.get(o.name)\n",
])
def test_a_name_the_module_does_not_show_handed_to_an_env_helper_is_unresolved(tmp_path: Path, user: str) -> None:
    names = "OTHER = 'PKG_' + 'HOME'\n"
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "names.py": names, "user.py": user})
    assert ("f", "$?") in _keys(result), result.reads
    # the helper's own `$?` allowlisted never covers its callers
    helper = [{"file": "pkg/envutil.py", "function": f, "leaf": "$?", "reason": "generic env helper"}
              for f in ("get_env", "Env.get", "Env.sget")]
    entries = [Entry(**e) for e in helper]
    assert not check(result, entries, ACCESSORS, min_files=1).ok


def test_an_undeclared_name_handed_to_an_env_helper_is_no_read(tmp_path: Path) -> None:
    user = IMPORT + "HOME = 'HOME'\n\ndef f():\n    key = 'PATH'\n    return get_env(HOME), get_env(key), ENV.get('USER')\n"
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "user.py": user})
    assert not _keys(result), result.reads


# ---- the same resolver for direct reads


@pytest.mark.parametrize("body", [
    "name = 'SGLANG_PAGE_SIZE'\n    return os.environ[name]\n",
    "for n in ('SGLANG_PAGE_SIZE', 'HOME'):\n        os.environ.get(n)\n",
    "return os.getenv(Keys.PAGE)\n",
])
def test_a_direct_read_resolves_names_one_step(tmp_path: Path, body: str) -> None:
    user = "import os\nclass Keys:\n    PAGE = 'SGLANG_PAGE_SIZE'\n\ndef f():\n    " + body
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == {("f", PAGE)}, result.reads


# ---- F2b: SGLang's descriptor per variable, named by the class attribute

DESCRIPTORS = """\
import os
class EnvInt:
    def __init__(self, default):
        self.default = default
    def __set_name__(self, owner, name):
        self.name = name
    def get(self):
        return int(os.environ.get(self.name, self.default))
    def set(self, value):
        os.environ[self.name] = str(value)
class Envs:
    SGLANG_PAGE_SIZE = EnvInt(16)
envs = Envs()
"""


def test_a_descriptor_named_like_a_declared_variable_is_a_read_where_it_is_loaded(tmp_path: Path) -> None:
    user = "from pkg.y01_envs import envs\n\ndef f():\n    return envs.SGLANG_PAGE_SIZE.get()\n\ndef g():\n    envs.SGLANG_PAGE_SIZE.set(4)\n"
    result = _scan(tmp_path, {"y01_envs.py": DESCRIPTORS, "user.py": user})
    assert ("f", PAGE) in _keys(result), result.reads
    assert ("g", PAGE) not in _keys(result), result.reads
    assert not _keys(result, "pkg/y01_envs.py") - {("EnvInt.get", "$?")}, result.reads


# ---- F6: a command-line library reads the variable for an option


@pytest.mark.parametrize(("user", "leaves"), [
    ("import click\n@click.command()\n@click.option('--page-size', envvar='SGLANG_PAGE_SIZE')\ndef f(page_size):\n    return page_size\n",
     {PAGE}),
    ("import click\n@click.command()\n@click.option('--p', envvar=['X_PAGE', 'SGLANG_PAGE_SIZE'])\ndef f(p):\n    return p\n",
     {PAGE}),
    ("import typer\ndef f(p: int = typer.Option(16, envvar='SGLANG_PAGE_SIZE')):\n    return p\n", {PAGE}),
    ("import click\n@click.command()\n@click.option('--page-size')\ndef main(page_size):\n    return page_size\n\n"
     "def f():\n    return main.main(args=[], standalone_mode=False, auto_envvar_prefix='SGLANG')\n",
     {PAGE, "$SGLANG_TP_SIZE"}),
    ("import click\n@click.command(context_settings={'auto_envvar_prefix': 'SGLANG'})\ndef f():\n    pass\n",
     {PAGE, "$SGLANG_TP_SIZE"}),
    ("import click\ndef f(name):\n    return click.option('--p', envvar=name)\n", {"$?"}),
])
def test_an_option_taken_from_a_declared_variable_is_a_read(tmp_path: Path, user: str, leaves: set[str]) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert {leaf for function, leaf in _keys(result)} == leaves, result.reads
    assert _fails(result)


def test_an_option_from_an_undeclared_variable_is_no_read(tmp_path: Path) -> None:
    user = "import click\n@click.command(context_settings={'auto_envvar_prefix': 'OTHER'})\n" \
        "@click.option('--p', envvar='OTHER_P', show_envvar=True)\ndef f(p):\n    return p\n"
    assert not _keys(_scan(tmp_path, {"user.py": user}))


# ---- F9: child commands one step from the call


@pytest.mark.parametrize("user", [
    "import subprocess\nCMDS = {'page': 'echo $SGLANG_PAGE_SIZE'}\n\ndef f():\n"
    "    return subprocess.check_output(CMDS['page'], shell=True)\n",
    "import subprocess\nclass P:\n    CMD = ['sh', '-c', 'echo $SGLANG_PAGE_SIZE']\n    def f(self):\n"
    "        return subprocess.check_output(self.CMD)\n",
    "import subprocess\nclass P:\n    def __init__(self):\n        self.cmd = 'echo $SGLANG_PAGE_SIZE'\n    def f(self):\n"
    "        return subprocess.run(self.cmd, shell=True)\n",
    "import subprocess\n\ndef f():\n    var = 'SGLANG_PAGE_SIZE'\n    return subprocess.check_output(f'echo ${var}', shell=True)\n",
    "import subprocess\n\ndef f(cmd='echo $SGLANG_PAGE_SIZE'):\n    return subprocess.run(cmd, shell=True)\n",
    "import subprocess\n\ndef sh(cmd):\n    return subprocess.run(cmd, shell=True)\n\ndef f():\n    return sh('echo $SGLANG_PAGE_SIZE')\n",
    "from pkg.shell import sh\n\ndef f():\n    return sh(['printenv', 'SGLANG_PAGE_SIZE'])\n",
])
def test_a_child_command_the_module_shows_one_step_away_is_read(tmp_path: Path, user: str) -> None:
    shell = "import subprocess\n\ndef sh(cmd):\n    return subprocess.check_output(cmd)\n"
    result = _scan(tmp_path, {"shell.py": shell, "user.py": user})
    function = "P.f" if "class P" in user else "f"
    assert (function, PAGE) in _keys(result), result.reads
    assert not _keys(result, "pkg/shell.py"), result.reads


# ---- F8: a config context held where the code shows it


@pytest.mark.parametrize("user", [
    CTX + "import dataclasses\n@dataclasses.dataclass\nclass Admin:\n"
    "    ctx: object = dataclasses.field(default_factory=lambda: get_context())\n"
    "    def dump(self):\n        return self.ctx.server_info()\n",
    CTX + "class Admin:\n    def __init__(self):\n        self.ctx = get_context()\n"
    "    def dump(self):\n        return vars(self)['ctx'].server_info()\n",
    CTX + "class Admin:\n    def __init__(self):\n        self.ctx = get_context()\n"
    "    def dump(self):\n        return self.__dict__['ctx'].state\n",
])
def test_a_context_held_on_an_object_is_read_back_every_way(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    leaves = {leaf for function, leaf in _keys(result) if function == "Admin.dump"}
    assert leaves & {"Context.server_info", "Context.state"}, result.reads


def test_a_context_held_on_an_object_fetched_by_a_name_built_at_run_time_is_a_readback(tmp_path: Path) -> None:
    user = CTX + "class Admin:\n    def __init__(self):\n        self.ctx = get_context()\n" \
        "    def call(self, attr, method):\n        return getattr(getattr(self, attr), method)()\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("Admin.call", "Context.state") in _keys(result), result.reads


def test_an_object_holding_no_context_fetched_by_name_is_no_readback(tmp_path: Path) -> None:
    user = "class Admin:\n    def __init__(self):\n        self.x = 1\n" \
        "    def call(self, attr):\n        return getattr(self, attr)\n"
    assert not _keys(_scan(tmp_path, {"user.py": user}))


# ---- round four's F10 leftovers: contexts the runtime holds or hands back, and passed on


@pytest.mark.parametrize("user", [
    "from configbags.runtime.context._process import CONTEXTS\n\ndef f():\n    return CONTEXTS['pkg.config_bags'].state\n",
    "from configbags.runtime.context import _process\n\ndef f():\n    return _process.CONTEXTS.get('pkg.config_bags').state\n",
    CTX + "def f():\n    return get_context().installer._context.state\n",
    "from configbags.generated.accessors import runner_view\n\ndef f():\n    return runner_view('draft')._context.state\n",
    "from configbags.runtime.legacy import publish_legacy\n\ndef f(rec):\n"
    "    res = publish_legacy(rec, role='launcher')\n    return res.context.state\n",
])
def test_a_context_the_runtime_holds_or_hands_back_is_read_back(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", "Context.state") in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    CTX + "def read(c):\n    return c.state\n\ndef f():\n    return read(get_context())\n",
    CTX + "def f(pool, work):\n    ctx = get_context()\n    return pool.submit(work, ctx=ctx)\n",
    "from configbags.runtime.context._process import CONTEXTS\n\ndef f():\n    return list(CONTEXTS.values())\n",
])
def test_a_context_handed_on_is_an_unresolved_readback(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", "Context.state") in _keys(result), result.reads


def test_a_context_asked_what_it_is_is_no_readback(tmp_path: Path) -> None:
    user = CTX + "def f():\n    ctx = get_context()\n    return isinstance(ctx, object), ctx.bag('parallel')\n"
    assert not _keys(_scan(tmp_path, {"user.py": user}))


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg.wrap import page_env\n\ndef f():\n    return page_env('SGLANG_PAGE_SIZE')\n", PAGE),
    ("from pkg.wrap import page_env\n\ndef f(name):\n    return page_env(name)\n", "$?"),
    ("from pkg.wrap import run\n\ndef f():\n    return run('echo $SGLANG_PAGE_SIZE')\n", PAGE),
])
def test_a_wrapper_handing_its_parameter_to_a_helper_is_a_helper_too(tmp_path: Path, user: str, leaf: str) -> None:
    wrap = "from pkg.envutil import get_env\nfrom pkg.shell import sh\n\n" \
        "def page_env(name):\n    return get_env(name)\n\ndef run(cmd):\n    return sh(cmd)\n"
    shell = "import subprocess\n\ndef sh(cmd):\n    return subprocess.check_output(cmd, shell=True)\n"
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "shell.py": shell, "wrap.py": wrap, "user.py": user})
    assert ("f", leaf) in _keys(result), result.reads
    assert ("page_env", "$?") in _keys(result, "pkg/wrap.py"), result.reads


def test_the_shortcut_for_a_file_told_only_of_helpers_gives_what_the_analysis_gives() -> None:
    data = (
        b"import os\nfrom pkg.envutil import get_env\nfrom legacy.server_args import get_server_args\n\n"
        b"def f(name, other='SGLANG_PAGE_SIZE'):\n    os.environ.get('SGLANG_TP_SIZE')\n"
        b"    return get_env(name), get_env(other), get_server_args().tp_size, get_env\n"
    )
    flows = FlowInput(env_helpers=frozenset({"get_env|0|name|environ"}))
    base = scan_source(data, ENV_SETTINGS)
    short = scan_source(data, ENV_SETTINGS, flows, base)
    full = scan_source(data, ENV_SETTINGS, flows)
    assert sorted(short.reads) == sorted(full.reads)
    assert short.flow == full.flow
    assert {row[1] for row in short.reads} >= {"$?", PAGE, "$SGLANG_TP_SIZE", "tp_size"}


def test_a_descriptor_fetched_by_the_variables_name_is_a_read(tmp_path: Path) -> None:
    user = "from pkg.y01_envs import envs\n\ndef f():\n    return getattr(envs, 'SGLANG_PAGE_SIZE').get()\n"
    result = _scan(tmp_path, {"y01_envs.py": DESCRIPTORS, "user.py": user})
    assert ("f", PAGE) in _keys(result), result.reads


def test_a_context_holder_read_by_a_name_built_at_run_time_is_a_readback(tmp_path: Path) -> None:
    user = CTX + "class Admin:\n    def __init__(self):\n        self.ctx = get_context()\n" \
        "    def part(self, name):\n        return vars(self)[name]\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("Admin.part", "Context.state") in _keys(result), result.reads


def test_a_helper_method_called_on_self_in_its_class_is_read_there(tmp_path: Path) -> None:
    user = ENVUTIL + "\nclass Paged(Env):\n    pass\n\ndef _unused():\n    pass\n"
    helper = ENVUTIL.replace("ENV = Env()\n", "    def page(self):\n        return self.get('SGLANG_PAGE_SIZE')\n\nENV = Env()\n")
    result = _scan(tmp_path, {"envutil.py": helper, "user.py": user})
    assert ("Env.page", PAGE) in _keys(result, "pkg/envutil.py"), result.reads
