"""Round four's false passes of the read ratchet (an outside attack): the record formatted
into a string is read whole, a record built in the code escapes nothing, a config context
held where the code shows it is followed, comprehensions and generator expressions of the
record, static methods and setattr stores, class attributes read every way."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW
from ratchet_case import fails as _fails
from ratchet_case import read_keys as _keys
from ratchet_case import scan_pkg as _scan

from configbags.migrate.scan import ScanSettings, scan_tree

BUILT = "from legacy.server_args import ServerArgs, get_server_args\n"
CTX = "from configbags.generated.accessors import get_context\n"


# ---- F20: the record formatted into a string reads every field


@pytest.mark.parametrize("body", [
    "r = get_server_args()\n    return f'{r}'\n",
    "server_args = get_server_args()\n    return f'{server_args=}'\n",
    "r = get_server_args()\n    return f'{r!r:>10}'\n",
    "r = get_server_args()\n    return '%s' % r\n",
    "return 'args: %r' % get_server_args()\n",
    "return get_server_args().__repr__()\n",
    "return get_server_args().__str__()\n",
])
def test_the_record_formatted_into_a_string_is_a_whole_read(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": RAW + "def f():\n    " + body})
    assert ("pkg/user.py", "f", "*") in _keys(result), result.reads
    assert _fails(result)


def test_a_record_attribute_formatted_on_self_is_a_whole_read(tmp_path: Path) -> None:
    user = (
        "from legacy.server_args import ServerArgs\n"
        "class Scheduler:\n"
        "    def __init__(self, server_args: ServerArgs) -> None:\n"
        "        self.server_args = server_args\n"
        "    def banner(self) -> str:\n"
        "        return f'{self.server_args=}'\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "Scheduler.banner", "*") in _keys(result), result.reads


def test_a_string_formatted_with_a_leaf_reads_only_the_leaf(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"user.py": RAW + "def f():\n    r = get_server_args()\n    return f'{r.tp_size}' + '%d' % r.tp_size\n"})
    assert {r.leaf for r in result.reads} == {"tp_size"}, result.reads


# ---- N1, N2: no noise


@pytest.mark.parametrize("body", [
    "print(ServerArgs(model_path='m'))\n",
    "args = ServerArgs(model_path='m')\n    logging.info('%s', args)\n",
    "publish_legacy(ServerArgs(model_path='m'), role='launcher')\n",
    "return f'{ServerArgs()}'\n",
])
def test_a_record_built_in_the_code_escapes_nothing(tmp_path: Path, body: str) -> None:
    user = "import dataclasses\nimport logging\n" + BUILT + "def f():\n    " + body
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.leaf == "*"], result.reads
    assert not _fails(result)


def test_the_class_of_the_record_is_no_leaf_read(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"user.py": RAW + "def f():\n    return get_server_args().__class__.__name__\n"})
    assert not result.reads, result.reads


# ---- F10: a config context held where the code shows it


@pytest.mark.parametrize(("user", "function"), [
    ("class Worker:\n    def __init__(self):\n        self.ctx = get_context()\n"
     "    def page(self):\n        return self.ctx.state.values['page_size']\n", "Worker.page"),
    ("class Worker:\n    def __init__(self):\n        self.ctx = get_context()\n"
     "    def info(self):\n        return self.ctx.server_info()['record']\n", "Worker.info"),
    ("class A:\n    CTX = get_context()\n\ndef f():\n    return A.CTX.server_info()['record']\n", "f"),
    ("class A:\n    CTX = get_context()\n    def f(self):\n        return self.CTX.state\n", "A.f"),
    ("def f():\n    with get_context().restoring() as c:\n        return c.state.values['page_size']\n", "f"),
    ("def f():\n    ctx = get_context()\n    with ctx.scoped() as c:\n        return c.server_info()\n", "f"),
    ("def f(ctx=get_context()):\n    return ctx.state.values['page_size']\n", "f"),
    ("def f():\n    return vars(get_context())['_state'].values['page_size']\n", "f"),
    ("def f():\n    return get_context().__dict__['_state'].values['page_size']\n", "f"),
    ("async def actx():\n    return get_context()\n\nasync def f():\n    return (await actx()).state.values\n", "f"),
])
def test_a_context_held_where_the_code_shows_it_is_read_back(tmp_path: Path, user: str, function: str) -> None:
    result = _scan(tmp_path, {"user.py": CTX + user})
    assert [r for r in result.reads if r.function == function and r.leaf.startswith("Context.")], result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "class A:\n    def ctx(self):\n        return get_context()\n",
    "def f(holder):\n    holder.ctx = get_context()\n",
    "def f():\n    return [get_context()]\n",
    "def f(d):\n    d['ctx'] = get_context()\n",
])
def test_a_context_stored_where_the_code_cannot_follow_it_is_an_unresolved_readback(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": CTX + user})
    assert [r for r in result.reads if r.form == "context_escape"], result.reads
    assert _fails(result)


def test_a_context_used_by_its_scoped_methods_is_no_readback(tmp_path: Path) -> None:
    user = CTX + (
        "class Worker:\n    def __init__(self):\n        self.ctx = get_context()\n"
        "    def page(self):\n        return self.ctx.bag('schedule').page_size\n"
        "def g():\n    ctx = get_context()\n    with ctx.scoped() as c:\n        return c.snapshot()\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.leaf.startswith("Context.")], result.reads


# ---- F16, F21: comprehensions and generator expressions producing the record


@pytest.mark.parametrize("body", [
    "gen = (get_server_args() for _ in range(1))\n    return next(gen).tp_size\n",
    "for r in (get_server_args() for _ in range(1)):\n        return r.tp_size\n",
    "return next(get_server_args() for _ in x).tp_size\n",
    "return {n: get_server_args() for n in names}[k].tp_size\n",
    "return [get_server_args() for _ in range(2)][0].tp_size\n",
    "return {k: v for k, v in [('a', get_server_args())]}['a'].tp_size\n",
    "return {get_server_args() for _ in x}.pop().tp_size\n",
])
def test_a_comprehension_producing_the_record_escapes(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": RAW + "def f(x=(), names=(), k=''):\n    " + body})
    assert [r for r in result.reads if r.leaf == "*" and r.via == "escape"], result.reads
    assert _fails(result)


def test_a_comprehension_reading_leaves_is_no_escape(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"user.py": RAW + "def f():\n    return [r.tp_size for r in [get_server_args()]]\n"})
    assert {(r.leaf, r.via) for r in result.reads} == {("tp_size", "alias")}, result.reads


# ---- F4, F5: a static method returning the record; setattr with a literal name


def test_a_static_method_returning_the_record_escapes(tmp_path: Path) -> None:
    user = RAW + "class H:\n    @staticmethod\n    def rec():\n        return get_server_args()\n\ndef f():\n    return H.rec().tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.form == "escapes_return"], result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    RAW + "class W:\n    def __init__(self):\n        setattr(self, 'cfg', get_server_args())\n",
    "import types\n" + RAW + "NS = types.SimpleNamespace()\nsetattr(NS, 'cfg', get_server_args())\n",
    RAW + "def f(obj, name):\n    setattr(obj, name, get_server_args())\n",
])
def test_setattr_storing_the_record_escapes_like_an_attribute_store(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.form == "escapes_attribute"], result.reads
    assert _fails(result)


def test_setattr_of_a_record_attribute_is_no_escape(tmp_path: Path) -> None:
    user = RAW + "class W:\n    def __init__(self):\n        setattr(self, 'server_args', get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.via == "escape"], result.reads


# ---- F8, F18: a class attribute holding the record, read every way


CLASS_ATTR = RAW + "class R:\n    ARGS = get_server_args()\n"


@pytest.mark.parametrize("user", [
    CLASS_ATTR + "def f():\n    return R().ARGS.tp_size\n",
    CLASS_ATTR + "    def f(self):\n        return type(self).ARGS.tp_size\n",
    CLASS_ATTR + "class S(R):\n    pass\n\ndef f():\n    return S.ARGS.tp_size\n",
    CLASS_ATTR + "def f():\n    return getattr(R, 'ARGS').tp_size\n",
])
def test_a_class_attribute_holding_the_record_is_read_every_way(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.leaf == "tp_size"], result.reads


@pytest.mark.parametrize("user", [
    "from pkg.base import R\n\nclass Sub(R):\n    def tp(self):\n        return self.ARGS.tp_size\n",
    "from pkg import base\n\ndef f():\n    return base.R().ARGS.tp_size\n",
])
def test_a_class_attribute_holding_the_record_is_read_in_another_module(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"base.py": CLASS_ATTR, "user.py": user})
    assert [r for r in result.reads if r.file == "pkg/user.py" and r.leaf == "tp_size"], result.reads


# ---- F9, F6: the environment or a context held by a class or another module


def test_the_environment_held_by_a_class_attribute_is_read(tmp_path: Path) -> None:
    user = "import os\nclass C:\n    env = os.environ\n\ndef f():\n    return C.env['SGLANG_PAGE_SIZE']\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") in _keys(result), result.reads


HOLDERS = (
    "import os\nfrom os import getenv\n" + CTX
    + "ENV = os.environ\nCTX = get_context()\nctx_of = get_context\n"
)


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg.h import ENV\n\ndef f():\n    return ENV['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    ("from pkg import h\n\ndef f():\n    return h.ENV.get('SGLANG_PAGE_SIZE')\n", "$SGLANG_PAGE_SIZE"),
    ("from pkg.h import ENV\n\ndef f():\n    return dict(ENV)\n", "$?"),
    ("from pkg.h import getenv\n\ndef f():\n    return getenv('SGLANG_PAGE_SIZE')\n", "$SGLANG_PAGE_SIZE"),
    ("from pkg.h import CTX\n\ndef f():\n    return CTX.state.values\n", "Context.state"),
    ("from pkg import h\n\ndef f():\n    return h.CTX.explain('page_size')\n", "Context.explain"),
    ("from pkg.h import ctx_of\n\ndef f():\n    return ctx_of().server_info()\n", "Context.server_info"),
])
def test_the_environment_or_a_context_held_in_another_module_is_read(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"h.py": HOLDERS, "user.py": user})
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert _fails(result)


def test_the_environment_held_on_self_is_read_in_the_class_methods(tmp_path: Path) -> None:
    user = (
        "import os\nclass C:\n    def __init__(self):\n        self.env = os.environ\n"
        "    def f(self):\n        return self.env['SGLANG_PAGE_SIZE']\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {("pkg/user.py", "C.__init__", "$?"), ("pkg/user.py", "C.f", "$SGLANG_PAGE_SIZE")} <= _keys(result), result.reads


# ---- F11: the generated header never hides a flow


GEN = "# Code generated by `configbags gen` from the schema folder schema/ (14 files). DO NOT EDIT.\n"


@pytest.mark.parametrize(("helper", "user", "leaf"), [
    (RAW + "def rec():\n    return get_server_args()\n",
     "from pkg.fakegen.helpers import rec\n\ndef f():\n    return rec().tp_size\n", "tp_size"),
    (RAW + "REC = get_server_args()\n",
     "from pkg.fakegen.helpers import REC\n\ndef f():\n    return REC.tp_size\n", "tp_size"),
    (CTX + "def ctx():\n    return get_context()\n",
     "from pkg.fakegen.helpers import ctx\n\ndef f():\n    return ctx().state\n", "Context.state"),
    ("import os\ndef env():\n    return os.environ\n",
     "from pkg.fakegen.helpers import env\n\ndef f():\n    return env()['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
])
def test_a_generated_header_never_hides_what_a_file_hands_its_importers(
    tmp_path: Path, helper: str, user: str, leaf: str
) -> None:
    (tmp_path / "pkg" / "fakegen").mkdir(parents=True)
    for name in ("__init__.py", "accessors.py", "ratchet_allowlist.py"):
        (tmp_path / "pkg" / "fakegen" / name).write_text(GEN)
    (tmp_path / "pkg" / "fakegen" / "helpers.py").write_text(GEN + helper)
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert "pkg/fakegen/helpers.py" not in result.generated_files
    assert "pkg/fakegen/accessors.py" in result.generated_files


# ---- F26: a function annotated to return the record, imported


@pytest.mark.parametrize("user", [
    "from pkg.h_ann import load\n\ndef f():\n    return load().tp_size\n",
    "from pkg import h_ann\n\ndef f():\n    x = h_ann.load()\n    return x.tp_size\n",
])
def test_a_function_annotated_to_return_the_record_is_a_fetcher_across_modules(tmp_path: Path, user: str) -> None:
    helper = (
        "from typing import Any\nfrom legacy.server_args import ServerArgs\n_CACHE: dict[str, Any] = {}\n\n"
        "def load() -> ServerArgs:\n    return _CACHE['args']\n"
    )
    result = _scan(tmp_path, {"h_ann.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads


# ---- F7: a holder bound by a star import


def test_a_holder_bound_by_a_star_import_is_read(tmp_path: Path) -> None:
    helper = RAW + "REC = get_server_args()\n"
    user = "from pkg.h_b import *\n\ndef f():\n    return REC.tp_size\n"
    result = _scan(tmp_path, {"h_b.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads


# ---- F17: a module __getattr__ (PEP 562) returning the record


def test_a_module_getattr_returning_the_record_escapes(tmp_path: Path) -> None:
    helper = RAW + "def __getattr__(name):\n    if name == 'ARGS':\n        return get_server_args()\n    raise AttributeError(name)\n"
    result = _scan(tmp_path, {"h_e.py": helper})
    assert [r for r in result.reads if r.function == "__getattr__" and r.form == "escapes_return"], result.reads
    assert _fails(result)


# ---- F15: getattr with a literal name on the record's home module


@pytest.mark.parametrize(("body", "leaf"), [
    ("return getattr(sa_mod, 'global_server_args_dict')['page_size']\n", "page_size"),
    ("d = getattr(sa_mod, 'global_server_args_dict')\n    return d.get('page_size')\n", "*"),
    ("return getattr(sa_mod, '_GLOBAL_SERVER_ARGS').tp_size\n", "$?"),
])
def test_getattr_with_a_literal_on_the_records_module_is_the_attribute(tmp_path: Path, body: str, leaf: str) -> None:
    settings = ScanSettings(roots=("pkg",), env_vars=(), record_dicts=("global_server_args_dict",))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "user.py").write_text("from legacy import server_args as sa_mod\n\ndef f():\n    " + body)
    result = scan_tree(tmp_path, settings)
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads


# ---- F22: a declared name built from module constants, passed to an env helper


@pytest.mark.parametrize("user", [
    "from pkg.envutil import get_env\nPAGE = 'SGLANG_PAGE_SIZE'\n\ndef f():\n    return get_env(PAGE)\n",
    "from pkg.envutil import get_env\nPREFIX = 'SGLANG_'\n\ndef f():\n    return get_env(PREFIX + 'PAGE_SIZE')\n",
])
def test_a_declared_name_built_from_constants_passed_to_an_env_helper_is_read(tmp_path: Path, user: str) -> None:
    helper = "import os\n\ndef get_env(name, default=None):\n    return os.environ.get(name, default)\n"
    result = _scan(tmp_path, {"envutil.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") in _keys(result), result.reads


def test_a_local_passed_to_an_env_helper_is_no_constant(tmp_path: Path) -> None:
    helper = "import os\n\ndef get_env(name, default=None):\n    return os.environ.get(name, default)\n"
    user = "from pkg.envutil import get_env\nPAGE = 'SGLANG_PAGE_SIZE'\n\ndef f(PAGE):\n    return get_env(PAGE)\n"
    result = _scan(tmp_path, {"envutil.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") not in _keys(result), result.reads


# ---- F19: a lambda carrying the record out of its function or into a callable


@pytest.mark.parametrize("user", [
    RAW + "def make():\n    r = get_server_args()\n    return lambda: r\n\ndef f():\n    return make()().tp_size\n",
    RAW + "class H:\n    args = property(lambda self: get_server_args())\n",
    RAW + "def f(register):\n    register(lambda: get_server_args())\n",
])
def test_a_lambda_carrying_the_record_away_escapes(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.via == "escape"], result.reads
    assert _fails(result)


def test_a_lambda_reading_a_leaf_is_no_escape(tmp_path: Path) -> None:
    user = RAW + "def f(xs):\n    return sorted(xs, key=lambda x: get_server_args().tp_size)\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.via == "escape"], result.reads


# ---- F23: a node_modules folder inside a regular package is importable


def test_a_node_modules_folder_inside_a_package_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "node_modules").mkdir(parents=True)
    (tmp_path / "pkg" / "node_modules" / "evil.py").write_text(RAW + "def tp():\n    return get_server_args().tp_size\n")
    (tmp_path / "pkg" / "js" / "node_modules").mkdir(parents=True)
    (tmp_path / "pkg" / "js" / "node_modules" / "gyp.py").write_text(RAW + "x = get_server_args().tp_size\n")
    result = _scan(tmp_path, {"nm_user.py": "from pkg.node_modules.evil import tp\n"})
    # `import pkg.node_modules.evil` works (a namespace package under a regular one);
    # pkg/js is no package, so its node_modules is plainly a node tree
    assert ("pkg/node_modules/evil.py", "tp", "tp_size") in _keys(result), result.reads
    assert result.skipped_folders == ("pkg/js/node_modules",)


# ---- F24: a module and a package of one name: Python imports the package


def test_a_package_wins_over_a_module_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "dup").mkdir(parents=True)
    (tmp_path / "pkg" / "dup" / "__init__.py").write_text(RAW + "def rec():\n    return get_server_args()\n")
    files = {"dup.py": "def rec():\n    return None\n", "du_user.py": "from pkg.dup import rec\n\ndef f():\n    return rec().tp_size\n"}
    result = _scan(tmp_path, files)
    assert ("pkg/du_user.py", "f", "tp_size") in _keys(result), result.reads


# ---- F13: a child's command whose literal text is wrapped or named by a constant list


@pytest.mark.parametrize("user", [
    "import subprocess, textwrap\n\ndef f():\n    return subprocess.check_output(['sh', '-c', textwrap.dedent('''\n"
    "        echo $SGLANG_PAGE_SIZE\n    ''')], text=True)\n",
    "import subprocess, textwrap\n\ndef f():\n    script = textwrap.dedent('''\n        echo $SGLANG_PAGE_SIZE\n    ''')\n"
    "    return subprocess.check_output(['sh', '-c', script], text=True)\n",
    "import subprocess\n\ndef f():\n    script = 'echo $SGLANG_PAGE_SIZE\\n'.strip()\n"
    "    return subprocess.check_output(['sh', '-c', script], text=True)\n",
    "import subprocess\nNAMES = ['SGLANG_PAGE_SIZE']\n\ndef f():\n    return subprocess.check_output(['printenv', *NAMES], text=True)\n",
])
def test_a_child_command_naming_a_variable_through_a_wrapper_is_read(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") in _keys(result), result.reads


# ---- F14: other routes to the environment or to code the scanner does not read


@pytest.mark.parametrize(("user", "leaf"), [
    ("import runpy\n\ndef f():\n    return runpy.run_path('pkg/plugin.conf')\n", "$?"),
    ("def f():\n    return open('/proc/self/environ', 'rb').read()\n", "$?"),
    ("import subprocess\n\ndef f():\n    return subprocess.check_output(['env'])\n", "$?"),
    ("import subprocess\n\ndef f():\n    return subprocess.check_output('printenv', text=True)\n", "$?"),
])
def test_other_routes_to_the_environment_or_unread_code_are_unresolved(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert _fails(result)


def test_a_child_printing_one_variable_is_no_whole_read(tmp_path: Path) -> None:
    user = "import subprocess\n\ndef f():\n    return subprocess.check_output(['printenv', 'HOME'])\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_a_pypy_script_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "bin").mkdir(parents=True)
    (tmp_path / "pkg" / "bin" / "tool3").write_text("#!/usr/bin/env pypy3\n" + RAW + "x = get_server_args().tp_size\n")
    result = _scan(tmp_path, {})
    assert ("pkg/bin/tool3", "<module>", "tp_size") in _keys(result), result.reads


# ---- F12: a TypeGuard of the record narrows like isinstance


def test_a_typeguard_of_the_record_narrows_its_argument(tmp_path: Path) -> None:
    user = (
        "from typing import TypeGuard\nfrom legacy.server_args import ServerArgs\n\n"
        "def is_args(x: object) -> TypeGuard[ServerArgs]:\n    return True\n\n"
        "def tp(x: object) -> int:\n    if is_args(x):\n        return x.tp_size\n    return 0\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "tp", "tp_size") in _keys(result), result.reads


# ---- F25: a script importing a sibling module by its bare name


def test_a_sibling_imported_by_its_bare_name_is_followed(tmp_path: Path) -> None:
    user = (
        "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        "from h_b import rec\n\ndef f():\n    return rec().tp_size\n"
    )
    result = _scan(tmp_path, {"h_b.py": RAW + "def rec():\n    return get_server_args()\n", "tool_sib.py": user})
    assert ("pkg/tool_sib.py", "f", "tp_size") in _keys(result), result.reads


# ---- F7: a scanned module reached by a route that spells its name


@pytest.mark.parametrize("user", [
    "import importlib\n\ndef f():\n    return importlib.import_module('pkg.h_b').rec().tp_size\n",
    "import importlib\n\ndef f():\n    m = importlib.import_module('pkg.h_b')\n    return m.REC.tp_size\n",
    "import sys\nimport pkg.h_b\n\ndef f():\n    return sys.modules['pkg.h_b'].rec().tp_size\n",
    "def f():\n    return __import__('pkg.h_b', fromlist=['rec']).rec().tp_size\n",
])
def test_a_module_reached_by_a_spelled_route_is_followed(tmp_path: Path, user: str) -> None:
    helper = RAW + "REC = get_server_args()\n\ndef rec():\n    return get_server_args()\n"
    result = _scan(tmp_path, {"h_b.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads


@pytest.mark.parametrize("user", [
    "import functools\nctx = functools.cache(get_context)\n\ndef f():\n    return ctx().state\n",
    "FACTORIES = {'ctx': get_context}\n",
])
def test_the_context_getter_handed_on_as_a_value_is_an_unresolved_readback(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": CTX + user})
    assert [r for r in result.reads if r.form == "context_escape"], result.reads
    assert _fails(result)


def test_the_context_getter_renamed_or_called_is_no_escape(tmp_path: Path) -> None:
    user = CTX + "ctx_of = get_context\n\ndef f():\n    return ctx_of().bag('schedule'), get_context().snapshot()\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_a_readback_method_called_unbound_on_a_context_is_a_readback(tmp_path: Path) -> None:
    user = CTX + "from configbags.runtime.context import Context\n\ndef f():\n    return Context.server_info(get_context())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "Context.server_info") in _keys(result), result.reads


@pytest.mark.parametrize(("user", "leaf"), [
    (RAW + "ATTR = 'server_args'\n\nclass W:\n    def __init__(self):\n        self.server_args = get_server_args()\n"
     "    def tp(self):\n        return getattr(self, ATTR).tp_size\n", "tp_size"),
    (RAW + "LEAF = 'tp_size'\n\ndef f():\n    return getattr(get_server_args(), LEAF)\n", "tp_size"),
    (RAW + "LEAF = 'tp_size'\n\ndef f(LEAF):\n    return getattr(get_server_args(), LEAF)\n", "*"),
])
def test_a_fetch_by_a_module_constant_is_the_attribute_it_names(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert leaf in {r.leaf for r in result.reads}, result.reads
