"""Round five's false passes of the read ratchet about callables and parameters (an
outside attack): the record passed positionally to a classmethod, as a class keyword, a
door fetched from an accessors module by a name built at run time, a function returning
the record, a context or the environment bound to another name or handed on as a value,
a context cached behind `global`, an unbound readback kept in a name."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW
from ratchet_case import fails as _fails
from ratchet_case import read_keys as _keys
from ratchet_case import scan_pkg as _scan

CTX = "from configbags.generated.accessors import get_context\n"
# a module function returning the record; one returning a context, one the environment
HELPER = RAW + "def rec():\n    return get_server_args()\n"
DOORS = "import os\n" + CTX + "def ctx():\n    return get_context()\n\ndef env():\n    return os.environ\n"


# ---- F3: the record passed positionally to a classmethod is the first real parameter


MODEL_CFG = """\
class ModelCfg:
    def __init__(self, tp):
        self.tp = tp

    @classmethod
    def from_args(cls, args):
        return cls(args.tp_size)
"""


def test_the_record_passed_to_a_classmethod_of_another_module_is_followed(tmp_path: Path) -> None:
    user = RAW + "from pkg.model_cfg import ModelCfg\n\ndef f():\n    return ModelCfg.from_args(get_server_args()).tp\n"
    result = _scan(tmp_path, {"user.py": user, "model_cfg.py": MODEL_CFG})
    assert ("pkg/model_cfg.py", "ModelCfg.from_args", "tp_size") in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize(("body", "function", "leaf"), [
    # cls.x(rec) from another classmethod
    ("class W:\n    @classmethod\n    def tp(cls, a):\n        return a.tp_size\n"
     "    @classmethod\n    def build(cls):\n        return cls.tp(get_server_args())\n", "W.tp", "tp_size"),
    # super().build(a) from a subclass's classmethod into the base's
    ("class Base:\n    @classmethod\n    def build(cls, a):\n        return a.page_size\n"
     "class Sub(Base):\n    @classmethod\n    def build(cls, a):\n        return super().build(a)\n"
     "def f():\n    return Sub.build(get_server_args())\n", "Base.build", "page_size"),
    # a classmethod as a thread's target
    ("import threading\nclass W:\n    @classmethod\n    def work(cls, a):\n        return a.tp_size\n"
     "def f():\n    threading.Thread(target=W.work, args=(get_server_args(),)).start()\n", "W.work", "tp_size"),
    # an async classmethod
    ("import asyncio\nclass W:\n    @classmethod\n    async def build(cls, a):\n        return a.tp_size\n"
     "def f():\n    return asyncio.run(W.build(get_server_args()))\n", "W.build", "tp_size"),
    # a plain method called through its class: the first argument is its self
    ("class Worker:\n    def tp(self, a, b=None):\n        return a.tp_size\n"
     "def f(w):\n    return Worker.tp(w, get_server_args())\n", "Worker.tp", "tp_size"),
])
def test_the_record_passed_positionally_maps_past_the_bound_parameter(
    tmp_path: Path, body: str, function: str, leaf: str
) -> None:
    result = _scan(tmp_path, {"user.py": RAW + body})
    assert ("pkg/user.py", function, leaf) in _keys(result), result.reads
    assert _fails(result)


def test_the_record_as_the_self_of_a_method_called_through_its_class_escapes(tmp_path: Path) -> None:
    user = RAW + "class Worker:\n    def other(self, x):\n        return x\n\ndef g():\n    return Worker.other(get_server_args(), 1)\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "g", "*") in _keys(result), result.reads


def test_a_declared_name_passed_to_a_classmethod_env_helper_is_read_at_the_call_site(tmp_path: Path) -> None:
    helper = "import os\n\nclass Env:\n    @classmethod\n    def get(cls, name, default=None):\n        return os.environ.get(name, default)\n"
    user = "from pkg.envutil import Env\n\ndef f():\n    return Env.get('SGLANG_PAGE_SIZE')\n"
    result = _scan(tmp_path, {"envutil.py": helper, "user.py": user})
    assert ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE") in _keys(result), result.reads


# ---- F5: the record as a class keyword goes to __init_subclass__


def test_the_record_as_a_class_keyword_is_followed_into_init_subclass(tmp_path: Path) -> None:
    user = RAW + (
        "class Base:\n"
        "    def __init_subclass__(cls, args=None, **kw):\n"
        "        super().__init_subclass__(**kw)\n"
        "        cls.tp = args.tp_size\n"
        "class W(Base, args=get_server_args()):\n"
        "    pass\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "Base.__init_subclass__", "tp_size") in _keys(result), result.reads
    assert _fails(result)


def test_the_record_as_a_class_keyword_reaches_a_base_of_another_module(tmp_path: Path) -> None:
    base = "class Base:\n    def __init_subclass__(cls, a=None):\n        cls.tp = a.tp_size\n\nclass Mid(Base):\n    pass\n"
    user = RAW + "from pkg.base import Mid\n\nclass W(Mid, a=get_server_args()):\n    pass\n"
    result = _scan(tmp_path, {"base.py": base, "user.py": user})
    assert ("pkg/base.py", "Base.__init_subclass__", "tp_size") in _keys(result), result.reads


@pytest.mark.parametrize("classdef", [
    "class Meta(type):\n    pass\nclass V(metaclass=Meta, a=get_server_args()):\n    pass\n",
    "class U(dict, a=get_server_args()):\n    pass\n",
    "def f():\n    class Local(object, a=get_server_args()):\n        pass\n",
])
def test_the_record_as_a_class_keyword_nothing_follows_escapes(tmp_path: Path, classdef: str) -> None:
    result = _scan(tmp_path, {"user.py": RAW + classdef})
    assert [r for r in result.reads if r.leaf == "*" and r.form == "escapes_call"], result.reads
    assert _fails(result)


# ---- F11: a door fetched by a name the module does not spell


@pytest.mark.parametrize("body", [
    "from configbags.generated import accessors\n\ndef f(ns):\n    return getattr(accessors, f'get_{ns}')()\n",
    "from configbags.generated import accessors\nNAMESPACES = ['parallel', 'server_args']\n\n"
    "def f():\n    return {ns: getattr(accessors, 'get_' + ns)() for ns in NAMESPACES}\n",
    "from configbags.generated import accessors\n\n"
    "def f():\n    return {n: getattr(accessors, n)() for n in accessors.__all__ if n.startswith('get_')}\n",
    "from legacy import server_args as S\n\ndef f(what):\n    return getattr(S, 'get_' + what)()\n",
    "from legacy.server_args import get_server_args\nimport legacy.server_args\n\n"
    "def f(what):\n    return getattr(legacy.server_args, what)()\n",
    "import operator\nfrom configbags.generated import accessors\n\n"
    "def f(ns):\n    return operator.attrgetter('get_' + ns)(accessors)()\n",
])
def test_a_door_fetched_by_a_built_name_is_unresolved(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": body})
    assert ("pkg/user.py", "f", "$?") in _keys(result), result.reads
    assert _fails(result)


def test_a_door_fetched_by_a_constant_name_is_what_it_names(tmp_path: Path) -> None:
    user = "from configbags.generated import accessors\nATTR = 'get_parallel'\n\ndef f():\n    return getattr(accessors, ATTR)()\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_a_built_name_fetched_from_any_other_object_is_no_read(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"user.py": "from configbags.generated import accessors\n\ndef f(obj, n):\n    return getattr(obj, n)\n"})
    assert not result.reads, result.reads


@pytest.mark.parametrize("helper", [HELPER, CTX + "def ctx():\n    return get_context()\n"])
def test_a_function_of_a_project_helper_module_fetched_by_a_built_name_is_unresolved(tmp_path: Path, helper: str) -> None:
    user = "from pkg import h\n\ndef f(name):\n    return getattr(h, name)()\n\ndef g(obj, name):\n    return getattr(obj, name)\n"
    result = _scan(tmp_path, {"h.py": helper, "user.py": user})
    assert [(r.function, r.leaf, r.form) for r in result.reads if r.file == "pkg/user.py"] == [("f", "$?", "door_by_name")], result.reads
    assert _fails(result)


# ---- F14: a function returning the record bound to another name before the call


@pytest.mark.parametrize(("files", "file", "leaf"), [
    ({"user.py": HELPER + "def f():\n    r = rec\n    return r().tp_size\n"}, "pkg/user.py", "tp_size"),
    ({"sub/__init__.py": "", "sub/h.py": HELPER,
      "user.py": "from pkg.sub import h\nload_args = h.rec\n\ndef f():\n    return load_args().tp_size\n"},
     "pkg/user.py", "tp_size"),
    ({"sub/__init__.py": "", "sub/h.py": HELPER,
      "user.py": "from pkg.sub import h\n\ndef f():\n    r = h.rec\n    return r().page_size\n"},
     "pkg/user.py", "page_size"),
    # the module-level alias imported by a third module
    ({"sub/__init__.py": "", "sub/h.py": HELPER,
      "mid.py": "from pkg.sub import h\nload_args = h.rec\n",
      "user.py": "from pkg.mid import load_args\n\ndef f():\n    return load_args().page_size\n"},
     "pkg/user.py", "page_size"),
])
def test_a_record_helper_bound_to_another_name_is_followed(
    tmp_path: Path, files: dict[str, str], file: str, leaf: str
) -> None:
    result = _scan(tmp_path, files)
    assert (file, "f", leaf) in _keys(result), result.reads
    assert _fails(result)


def test_a_name_bound_to_a_record_helper_and_to_another_value_is_rebound(tmp_path: Path) -> None:
    user = HELPER + "def other():\n    return None\n\ndef f(c):\n    r = rec\n    if c:\n        r = other\n    return r().tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    [read] = [r for r in result.reads if r.function == "f"]
    assert (read.leaf, read.origin) == ("tp_size", "rebound"), result.reads


# ---- F15: a function returning the record handed on as a value


@pytest.mark.parametrize(("body", "function"), [
    ("import functools\ncached = functools.lru_cache(maxsize=None)(rec)\n", "<module>"),
    ("LOADERS = {'default': rec}\n", "<module>"),
    ("from concurrent.futures import ThreadPoolExecutor\n\n"
     "def f():\n    return ThreadPoolExecutor(1).submit(rec).result().tp_size\n", "f"),
    ("import asyncio\n\nasync def f():\n    return (await asyncio.to_thread(rec)).tp_size\n", "f"),
    ("def f(load=rec):\n    return load().tp_size\n", "f"),
    ("import functools\n\ndef f():\n    return functools.partial(rec, None)().tp_size\n", "f"),
    ("class K:\n    loader = rec\n", "K"),
])
def test_a_record_helper_handed_on_escapes(tmp_path: Path, body: str, function: str) -> None:
    result = _scan(tmp_path, {"user.py": HELPER + body})
    escapes = [r for r in result.reads if r.form == "escapes_fetcher"]
    assert [r.function for r in escapes] == [function], result.reads
    assert _fails(result)


def test_an_imported_record_helper_handed_on_escapes(tmp_path: Path) -> None:
    user = "import functools\nfrom pkg import h\nfrom pkg.h import rec\n\nA = functools.cache(h.rec)\nB = {'r': rec}\n"
    result = _scan(tmp_path, {"h.py": HELPER, "user.py": user})
    assert [r.line for r in result.reads if r.form == "escapes_fetcher"] == [5, 6], result.reads


def test_a_decorator_whose_wrapper_returns_the_record_escapes(tmp_path: Path) -> None:
    user = RAW + (
        "def with_args(fn):\n"
        "    def w():\n"
        "        return get_server_args()\n"
        "    return w\n"
        "@with_args\n"
        "def rec():\n"
        "    return None\n"
        "def f():\n"
        "    return rec().tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "with_args", "*") in _keys(result), result.reads
    assert _fails(result)


def test_a_local_named_like_a_record_helper_is_no_escape(tmp_path: Path) -> None:
    user = HELPER + "def f():\n    rec = 5\n    print(rec)\n\ndef g(rec):\n    return [rec]\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_the_attributes_of_a_record_helper_are_no_escape(tmp_path: Path) -> None:
    user = "import functools\n" + RAW + (
        "@functools.lru_cache(maxsize=None)\n"
        "def rec():\n"
        "    return get_server_args()\n"
        "def reset():\n"
        "    rec.cache_clear()\n"
        "    return rec.__name__, callable(rec), callable(get_server_args)\n"
        "def raw():\n"
        "    return rec.__wrapped__().tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.form) for r in result.reads] == [("raw", "escapes_fetcher")], result.reads


# ---- F14, F15 for the other doors: a function giving a context or the environment


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg import doors\nopen_ctx = doors.ctx\n\ndef f():\n    return open_ctx().server_info()['record']\n",
     "Context.server_info"),
    ("from pkg.doors import env\n\ndef f():\n    e = env\n    return e()['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    ("from pkg import doors\n\ndef f():\n    o = doors.ctx\n    p = o\n    return p().state\n", "Context.state"),
    ("from pkg.doors import ctx\n\ndef f():\n    c = ctx()\n    return c.state\n", "Context.state"),
    ("from pkg.doors import ctx\n\nasync def f():\n    c = await ctx()\n    return c.explain('tp_size')\n",
     "Context.explain"),
    ("from pkg.doors import env\nENV = env()\n\ndef f():\n    return ENV.get('SGLANG_PAGE_SIZE')\n",
     "$SGLANG_PAGE_SIZE"),
    ("class W:\n    def f(self):\n        from pkg.doors import env\n        e = env\n        return e()['SGLANG_PAGE_SIZE']\n",
     "$SGLANG_PAGE_SIZE"),
])
def test_a_door_helper_bound_to_another_name_is_followed(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert [r for r in result.reads if r.file == "pkg/user.py" and r.leaf == leaf], result.reads
    assert _fails(result)


def test_a_module_alias_of_a_door_helper_serves_its_importers(tmp_path: Path) -> None:
    mid = "from pkg import doors\nopen_ctx = doors.ctx\nENV = doors.env()\n"
    user = "from pkg.mid import ENV, open_ctx\n\ndef f():\n    return open_ctx().state, ENV['SGLANG_PAGE_SIZE']\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "mid.py": mid, "user.py": user})
    assert {("pkg/user.py", "f", "Context.state"), ("pkg/user.py", "f", "$SGLANG_PAGE_SIZE")} <= _keys(result), result.reads


def test_a_function_returning_what_a_door_helper_gave_it_is_one(tmp_path: Path) -> None:
    mid = "from pkg.doors import ctx\n\ndef load():\n    c = ctx()\n    return c\n"
    user = "from pkg.mid import load\n\ndef f():\n    return load().state\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "mid.py": mid, "user.py": user})
    assert ("pkg/user.py", "f", "Context.state") in _keys(result), result.reads


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg import doors\n\ndef f():\n    return getattr(doors, 'ctx')().state\n", "Context.state"),
    ("from pkg import doors\n\ndef f():\n    o = getattr(doors, 'ctx')\n    return o().state\n", "Context.state"),
    ("from pkg import doors\n\ndef f():\n    c = getattr(doors, 'env')()\n    return c['SGLANG_PAGE_SIZE']\n",
     "$SGLANG_PAGE_SIZE"),
    ("import functools\nfrom pkg import doors\n\ncached = functools.cache(getattr(doors, 'ctx'))\n", "Context.state"),
])
def test_a_door_helper_fetched_by_a_literal_name_is_the_helper(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert [r for r in result.reads if r.file == "pkg/user.py" and r.leaf == leaf], result.reads


@pytest.mark.parametrize(("user", "leaf"), [
    ("import asyncio\nfrom pkg.doors import ctx\n\nasync def f():\n    c = await asyncio.to_thread(ctx)\n"
     "    return c.server_info()\n", "Context.state"),
    ("from pkg.doors import ctx\nDOORS = {'ctx': ctx}\n", "Context.state"),
    ("import functools\nfrom pkg import doors\ncached = functools.cache(doors.ctx)\n", "Context.state"),
    ("from pkg.doors import env\nREADERS = [env]\n", "$?"),
    ("from pkg.doors import ctx\nopen_ctx = ctx\nDOORS = {'ctx': open_ctx}\n", "Context.state"),
])
def test_a_door_helper_handed_on_is_an_unresolved_read(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert [r for r in result.reads if r.file == "pkg/user.py" and r.leaf == leaf], result.reads
    assert _fails(result)


def test_a_local_rename_of_a_door_helper_handed_on_is_an_unresolved_read(tmp_path: Path) -> None:
    user = "from pkg.doors import env\n\ndef f(pool):\n    e = env\n    return pool.submit(e)\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert [(r.function, r.leaf) for r in result.reads if r.file == "pkg/user.py"] == [("f", "$?")], result.reads


def test_a_door_helper_called_or_renamed_is_no_escape(tmp_path: Path) -> None:
    user = "from pkg.doors import ctx\nopen_ctx = ctx\n\ndef f():\n    return open_ctx()\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


def test_a_name_holding_a_context_in_one_function_is_no_context_in_another(tmp_path: Path) -> None:
    user = "from pkg.doors import ctx\n\ndef f():\n    c = ctx()\n    return c\n\ndef g(c):\n    return c.state\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert not [r for r in result.reads if r.function == "g"], result.reads


def test_the_attributes_of_a_context_helper_are_no_escape(tmp_path: Path) -> None:
    user = "from pkg.doors import ctx\n\ndef f():\n    ctx.cache_clear()\n    return ctx.__name__, callable(ctx)\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


def test_a_parameter_named_like_a_door_helper_is_not_it(tmp_path: Path) -> None:
    user = "from pkg.doors import ctx, env\n\ndef f(ctx):\n    return print(ctx)\n\ndef g():\n    env = {}\n    return [env]\n"
    result = _scan(tmp_path, {"doors.py": DOORS, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- F16: a context cached behind `global`


LAZY = CTX + "_CTX = None\n\ndef ctx():\n    global _CTX\n    if _CTX is None:\n        _CTX = get_context()\n    return _CTX\n"


@pytest.mark.parametrize(("files", "file"), [
    ({"user.py": LAZY + "\ndef f():\n    return ctx().server_info()['record']\n"}, "pkg/user.py"),
    ({"lazy.py": LAZY, "user.py": "from pkg.lazy import ctx\n\ndef f():\n    return ctx().state\n"}, "pkg/user.py"),
    # the global set in init(), returned by a function that names no door itself
    ({"lazy.py": CTX + "_CTX = None\n\ndef init():\n    global _CTX\n    _CTX = get_context()\n\n"
      "def current():\n    return _CTX\n",
      "user.py": "from pkg.lazy import current\n\ndef f():\n    return current().state\n"}, "pkg/user.py"),
    # read as another module's global
    ({"lazy.py": CTX + "_CTX = None\n\ndef init():\n    global _CTX\n    _CTX = get_context()\n",
      "user.py": "from pkg import lazy as g\n\ndef f():\n    g.init()\n    return g._CTX.state\n"}, "pkg/user.py"),
    # a local holding the context, returned
    ({"lazy.py": CTX + "def ctx():\n    c = get_context()\n    return c\n",
      "user.py": "from pkg.lazy import ctx\n\ndef f():\n    return ctx().state\n"}, "pkg/user.py"),
])
def test_a_context_cached_in_a_name_and_returned_is_followed(tmp_path: Path, files: dict[str, str], file: str) -> None:
    result = _scan(tmp_path, files)
    assert [r for r in result.reads if r.file == file and r.function == "f" and r.leaf.startswith("Context.")], result.reads
    assert _fails(result)


def test_a_local_of_the_name_of_a_cached_global_is_not_it(tmp_path: Path) -> None:
    lazy = CTX + "_CTX = get_context()\n\ndef other():\n    _CTX = 1\n    return _CTX\n"
    result = _scan(tmp_path, {"lazy.py": lazy, "user.py": "from pkg.lazy import other\n\ndef f():\n    return other().state\n"})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- F18: an unbound readback kept in a name


@pytest.mark.parametrize(("user", "leaf"), [
    ("from configbags.runtime.context import Context\nINFO = Context.server_info\n\n"
     "def f():\n    return INFO(get_context())['record']\n", "Context.server_info"),
    ("from configbags.runtime.context import Context\n\n"
     "def f():\n    explain = Context.explain\n    c = get_context()\n    return explain(c, 'tp_size')\n", "Context.explain"),
])
def test_an_unbound_readback_kept_in_a_name_is_that_readback(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"user.py": CTX + user})
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert _fails(result)


# ---- round four's leftovers: a factory parameter, a function registered by a decorator


@pytest.mark.parametrize(("body", "function", "leaf"), [
    ("from typing import Callable\n\ndef tp(make: Callable[[], ServerArgs]) -> int:\n    return make().tp_size\n",
     "tp", "tp_size"),
    ("import typing\n\ndef tp(make: 'typing.Callable[..., ServerArgs]') -> int:\n    return make().page_size\n",
     "tp", "page_size"),
    ("from collections.abc import Callable\n\ndef tp(f) -> int:\n    make: Callable[[], ServerArgs] = f\n"
     "    return make().tp_size\n", "tp", "tp_size"),
])
def test_a_callable_annotated_to_return_the_record_gives_it_when_called(
    tmp_path: Path, body: str, function: str, leaf: str
) -> None:
    result = _scan(tmp_path, {"user.py": "from legacy.server_args import ServerArgs\n" + body})
    assert ("pkg/user.py", function, leaf) in _keys(result), result.reads
    assert _fails(result)


def test_a_callable_taking_the_record_is_no_record(tmp_path: Path) -> None:
    body = "from typing import Callable\nfrom legacy.server_args import ServerArgs\n\n" \
        "def tp(make: Callable[[ServerArgs], int]) -> int:\n    return make(None).bit_length()\n"
    result = _scan(tmp_path, {"user.py": body})
    assert not result.reads, result.reads


def test_a_record_helper_registered_by_a_decorator_escapes(tmp_path: Path) -> None:
    user = "import functools\n" + RAW + (
        "@functools.singledispatch\n"
        "def describe(x):\n"
        "    return None\n"
        "@describe.register\n"
        "def _(x: int):\n"
        "    return get_server_args()\n"
        "def f():\n"
        "    return describe(1).tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.line, r.form) for r in result.reads] == [("<module>", 6, "escapes_fetcher")], result.reads
    assert _fails(result)


@pytest.mark.parametrize("decorator", ["functools.lru_cache(maxsize=None)", "functools.cache", "staticmethod", "deco"])
def test_a_record_helper_under_a_transparent_or_scanned_decorator_is_followed(tmp_path: Path, decorator: str) -> None:
    user = "import functools\n" + RAW + (
        "def deco(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def w(*a):\n"
        "        return fn(*a)\n"
        "    return w\n"
        f"@{decorator}\n"
        "def rec():\n"
        "    return get_server_args()\n"
        "def f():\n"
        "    return rec().tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("f", "tp_size")}, result.reads
