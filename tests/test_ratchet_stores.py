"""Round six's false passes of the read ratchet about the record within and between
functions (an outside attack): the record stored through an unpacking or loop target
(G22), handed to a decorated callable (G7, G7b, G1), an operand of a user class's
operator (G14), stored on an object whose class hooks the store (G6), constructed or
tested through a metaclass (G2), and reached by reflection on a descriptor or a frame
(L2, L3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import CTX, RAW
from ratchet_case import fails as _fails
from ratchet_case import scan_pkg as _scan

from configbags.migrate.scan import ScanResult


def _escapes(result: ScanResult, function: str) -> list[tuple[str, str]]:
    return [(r.via, r.form) for r in result.reads if r.function == function and r.leaf == "*"]


# ---- G22: the record stored through an unpacking or loop target


@pytest.mark.parametrize("body", [
    "h.x, y = get_server_args(), 2\n    return h.x.tp_size\n",
    "[h.x] = [get_server_args()]\n    return h.x.tp_size\n",
    "h.x, = (get_server_args(),)\n    return h.x.tp_size\n",
    "SLOTS['args'], n = get_server_args(), 1\n    return SLOTS['args'].tp_size\n",
    "for SLOTS['args'] in [get_server_args()]:\n        pass\n    return SLOTS['args'].tp_size\n",
    "for h.inner in [get_server_args()]:\n        pass\n    return h.inner.tp_size\n",
    "for h.inner, n in [(get_server_args(), 1)]:\n        pass\n    return h.inner.tp_size\n",
    "return [0 for h.inner in [get_server_args()]] and h.inner.tp_size\n",
    "a, *rest = 1, get_server_args()\n    return rest[0].tp_size\n",
    "*rest, = [get_server_args()]\n    return rest[0].tp_size\n",
    "a, *b = *SLOTS, get_server_args()\n    return b[0].tp_size\n",
    "with contextlib.nullcontext(get_server_args()) as h.x:\n        return h.x.tp_size\n",
    "h.x = [get_server_args()][0]\n",
    "SLOTS['r'] = {'r': get_server_args()}['r']\n",
    "h.x, n = (1, get_server_args())[-1], 2\n",
    "a, *rest = 1, [get_server_args()][0]\n",
])
def test_the_record_stored_through_an_unpacking_or_loop_target_escapes(tmp_path: Path, body: str) -> None:
    user = "import contextlib\n" + RAW + "class H:\n    pass\nh = H()\nSLOTS = {}\ndef f():\n    " + body
    result = _scan(tmp_path, {"user.py": user})
    assert ("escape", "escapes_attribute") in _escapes(result, "f") or ("escape", "escapes_item") in _escapes(
        result, "f") or ("escape", "escapes_container") in _escapes(result, "f"), result.reads
    assert _fails(result)


def test_self_attributes_set_by_unpacking_in_init_escape_like_a_plain_store(tmp_path: Path) -> None:
    user = RAW + (
        "class Worker:\n"
        "    def __init__(self, server_args, port):\n"
        "        self.cfg, self.port = server_args, port\n"
        "    def tp(self):\n"
        "        return self.cfg.tp_size\n"
        "def f():\n"
        "    w = Worker(get_server_args(), 1)\n"
        "    return w.cfg.tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("escape", "escapes_attribute") in _escapes(result, "Worker.__init__"), result.reads
    assert any(r.function == "Worker.tp" and r.leaf == "tp_size" for r in result.reads), result.reads
    assert _fails(result)


def test_a_context_stored_through_an_unpacking_or_loop_target_escapes(tmp_path: Path) -> None:
    user = CTX + (
        "H = {}\n"
        "def f():\n"
        "    H['c'], n = get_context(), 1\n"
        "def g():\n"
        "    for H['d'] in [get_context()]:\n"
        "        pass\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.form) for r in result.reads} >= {("f", "context_escape"), ("g", "context_escape")}, result.reads


@pytest.mark.parametrize("read", [
    "return Admin().ctx.state\n",
    "a = Admin()\n    return a.ctx.server_info()\n",
])
def test_a_context_a_class_keeps_on_self_is_read_back_through_its_instances(tmp_path: Path, read: str) -> None:
    user = CTX + (
        "class Admin:\n"
        "    def __init__(self):\n"
        "        self.ctx, self.name = get_context(), 'admin'\n"
        "def f():\n    " + read
    )
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == "f" and r.leaf.startswith("Context.")], result.reads
    assert _fails(result)


def test_unpacking_plain_values_or_into_names_and_record_attributes_stays_precise(tmp_path: Path) -> None:
    user = RAW + (
        "class Worker:\n"
        "    def __init__(self, server_args, port):\n"
        "        self.server_args, self.port = server_args, port\n"
        "        self.host, self.name = 'h', port\n"
        "def f(h):\n"
        "    a, b = get_server_args(), 1\n"
        "    for h.x, h.y in [(1, 2)]:\n"
        "        pass\n"
        "    c, *rest = get_server_args(), 2, 3\n"
        "    return a.tp_size + c.page_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("f", "tp_size"), ("f", "page_size")}, result.reads


# ---- G7, G7b, G1: the record handed to a decorated callable

WITH_TP = (
    "def with_tp(fn):\n"
    "    def wrapper(args):\n"
    "        return fn(args.tp_size)\n"
    "    return wrapper\n"
)


def test_a_call_of_a_decorated_function_is_followed_into_the_wrapper(tmp_path: Path) -> None:
    user = RAW + WITH_TP + "@with_tp\ndef double(tp):\n    return tp * 2\ndef f():\n    return double(get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.leaf) for r in result.reads] == [("with_tp.wrapper", "tp_size")], result.reads
    assert _fails(result)


def test_a_decorator_of_another_module_and_a_factory_are_followed_too(tmp_path: Path) -> None:
    deco = WITH_TP + (
        "def retry(n):\n"
        "    def deco(fn):\n"
        "        def inner(cfg, *rest):\n"
        "            return fn(cfg.page_size)\n"
        "        return inner\n"
        "    return deco\n"
    )
    user = RAW + (
        "from pkg.deco import with_tp, retry\nimport pkg.deco as d\n"
        "@d.with_tp\ndef double(tp):\n    return tp * 2\n"
        "@retry(3)\ndef triple(ps):\n    return ps * 3\n"
        "def f():\n    return double(get_server_args()) + triple(get_server_args())\n"
    )
    result = _scan(tmp_path, {"deco.py": deco, "user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {
        ("with_tp.wrapper", "tp_size"), ("retry.deco.inner", "page_size")}, result.reads


def test_a_class_decorator_returning_a_subclass_is_followed_into_its_init(tmp_path: Path) -> None:
    user = RAW + (
        "def with_world(cls):\n"
        "    class Wrapped(cls):\n"
        "        def __init__(self, args):\n"
        "            self.world = args.tp_size\n"
        "    return Wrapped\n"
        "@with_world\nclass Attn:\n    def __init__(self, args):\n        self.ok = True\n"
        "def f():\n    return Attn(get_server_args()).world\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("with_world.Wrapped.__init__", "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
    assert _fails(result)


@pytest.mark.parametrize("decorator", [
    "import functools\n@functools.singledispatch\n",
    "import tenacity\n@tenacity.retry(stop=3)\n",
    "def opaque(fn):\n    return make(fn)\n@opaque\n",
    "class Deco:\n    def __init__(self, fn):\n        self.fn = fn\n@Deco\n",
    "def peek(fn):\n    def wrapper(*args, **kwargs):\n        print(args[0].tp_size)\n        return fn(*args, **kwargs)\n"
    "    return wrapper\n@peek\n",
])
def test_a_decorator_whose_wrapper_is_not_shown_makes_the_call_an_escape(tmp_path: Path, decorator: str) -> None:
    user = RAW + decorator + "def describe(obj):\n    return None\n"
    if "singledispatch" in decorator:
        user += "@describe.register\ndef _(obj: object):\n    return obj.tp_size\n"
    user += "def f():\n    return describe(get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("escape", "escapes_call") in _escapes(result, "f"), result.reads
    assert _fails(result)


@pytest.mark.parametrize("decorator", [
    "import functools\n@functools.lru_cache(maxsize=None)\n",
    "import functools\n@functools.cache\n",
    "import torch\n@torch.no_grad()\n",
    "import contextlib\n@contextlib.contextmanager\n",
    "REG = []\ndef register(fn):\n    REG.append(fn)\n    return fn\n@register\n",
    "import functools\ndef logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
    "        return fn(*args, **kwargs)\n    return wrapper\n@logged\n",
])
def test_a_decorator_passing_the_arguments_on_as_given_is_followed_into_the_body(tmp_path: Path, decorator: str) -> None:
    user = RAW + decorator + "def tp(args):\n    return args.tp_size\ndef f():\n    return tp(get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.leaf) for r in result.reads] == [("tp", "tp_size")], result.reads


def test_a_decorated_method_called_on_self_is_followed_through_its_decorator(tmp_path: Path) -> None:
    user = RAW + WITH_TP + (
        "class W:\n"
        "    @with_tp\n    def double(self, tp):\n        return tp * 2\n"
        "    def run(self):\n        return self.double(get_server_args())\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.function == "W.double"], result.reads
    assert _fails(result)


# ---- G14: the record as an operand of a user class's operator


@pytest.mark.parametrize(("code", "method"), [
    ("def f():\n    return (Totals() + get_server_args()).world\n", "Totals.__add__"),
    ("def f():\n    return (get_server_args() + Totals()).world\n", "Totals.__radd__"),
    ("def f():\n    t = Totals()\n    t += get_server_args()\n    return t.world\n", "Totals.__iadd__"),
    ("TABLE = Totals()\ndef f():\n    return TABLE[get_server_args()]\n", "Totals.__getitem__"),
    ("TABLE = Totals()\ndef f():\n    TABLE[get_server_args()] = 1\n", "Totals.__setitem__"),
    ("def f():\n    return get_server_args() in Totals()\n", "Totals.__contains__"),
    ("def f():\n    return Totals() < get_server_args()\n", "Totals.__lt__"),
    ("def f():\n    return get_server_args() <= Totals()\n", "Totals.__ge__"),
])
def test_the_record_handed_to_a_scanned_class_operator_is_followed_into_it(tmp_path: Path, code: str, method: str) -> None:
    dunders = "".join(
        f"    def {name}(self, args, *rest):\n        self.world = args.tp_size\n        return self\n"
        for name in ("__add__", "__radd__", "__iadd__", "__getitem__", "__setitem__", "__contains__", "__lt__", "__ge__")
    )
    user = RAW + "class Totals:\n" + dunders + code
    result = _scan(tmp_path, {"user.py": user})
    assert (method, "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
    assert _fails(result)


def test_an_operator_of_self_and_of_an_imported_class_is_followed(tmp_path: Path) -> None:
    totals = "class Totals:\n    def __add__(self, args):\n        return args.page_size\n"
    user = RAW + "from pkg.totals import Totals\n" + (
        "class Acc(Totals):\n"
        "    def __sub__(self, args):\n        return args.tp_size\n"
        "    def run(self):\n        return self - get_server_args()\n"
        "def f():\n    return Totals() + get_server_args()\n"
    )
    result = _scan(tmp_path, {"totals.py": totals, "user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("Totals.__add__", "page_size"), ("Acc.__sub__", "tp_size")}, result.reads


@pytest.mark.parametrize("code", [
    "def f(table):\n    return table[get_server_args()]\n",
    "def f(acc):\n    acc += get_server_args()\n",
    "def f(acc):\n    return acc * get_server_args()\n",
    "def f():\n    return make() | get_server_args()\n",
])
def test_the_record_handed_to_an_operator_of_an_unknown_class_escapes(tmp_path: Path, code: str) -> None:
    result = _scan(tmp_path, {"user.py": RAW + code})
    assert {("escape", "escapes_operator"), ("escape", "escapes_call")} & set(_escapes(result, "f")), result.reads
    assert _fails(result)


def test_operators_on_numbers_and_builtin_containers_read_nothing_more(tmp_path: Path) -> None:
    user = RAW + (
        "CACHE = {}\n"
        "def f(n):\n"
        "    rec = get_server_args()\n"
        "    seen = set()\n"
        "    total = 0\n"
        "    total += rec.tp_size * 2 + n\n"
        "    CACHE[rec.page_size] = [1] + [2]\n"
        "    by = defaultdict(list)\n"
        "    by[rec.tp_size].append(n)\n"
        "    return total, CACHE.get(rec.tp_size), by, rec.page_size < 3, n >= rec.tp_size\n"
        "def g():\n"
        "    d = {}\n"
        "    d[get_server_args()] = 1\n"
        "    return len(d)\n"
    )
    result = _scan(tmp_path, {"user.py": "from collections import defaultdict\n" + user})
    assert {(r.function, r.leaf) for r in result.reads} == {("f", "tp_size"), ("f", "page_size")}, result.reads


# ---- G6: a holder whose `__setattr__` or a data descriptor sees the record as it is stored


SETATTR = (
    "class Worker:\n"
    "    def __setattr__(self, k, v):\n"
    "        if k == 'server_args':\n"
    "            object.__setattr__(self, 'world', v.tp_size)\n"
    "        object.__setattr__(self, k, v)\n"
)
DESCRIPTOR = (
    "class Captures:\n"
    "    def __set_name__(self, owner, name):\n"
    "        self.name = '_' + name\n"
    "    def __set__(self, obj, value):\n"
    "        obj.world = value.tp_size\n"
    "class Worker:\n"
    "    server_args = Captures()\n"
)


@pytest.mark.parametrize(("classes", "code", "hook"), [
    (SETATTR, "def f():\n    w = Worker()\n    w.server_args = get_server_args()\n    return w.world\n", "Worker.__setattr__"),
    (SETATTR, "def f():\n    w = Worker()\n    setattr(w, 'cfg', get_server_args())\n", "Worker.__setattr__"),
    (SETATTR + "    def __init__(self):\n        self.server_args = get_server_args()\n", "", "Worker.__setattr__"),
    (DESCRIPTOR, "def f():\n    w = Worker()\n    w.server_args = get_server_args()\n    return w.world\n", "Captures.__set__"),
])
def test_a_store_on_an_object_whose_class_hooks_it_is_followed_into_the_hook(
    tmp_path: Path, classes: str, code: str, hook: str
) -> None:
    result = _scan(tmp_path, {"user.py": RAW + classes + code})
    assert (hook, "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
    assert _fails(result)


def test_a_store_on_an_object_of_an_imported_hooking_class_is_followed_too(tmp_path: Path) -> None:
    user = RAW + "from pkg.worker import Worker\ndef f():\n    w = Worker()\n    w.server_args = get_server_args()\n"
    result = _scan(tmp_path, {"worker.py": SETATTR, "user.py": user})
    assert ("Worker.__setattr__", "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads


def test_a_store_on_an_object_without_hooks_stays_precise(tmp_path: Path) -> None:
    user = RAW + "import torch\n" + (
        "class Plain:\n    pass\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n        self.server_args = get_server_args()\n"
        "def f():\n    w = Plain()\n    w.server_args = get_server_args()\n    return w.server_args.tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("f", "tp_size")}, result.reads


# ---- G2: a metaclass's `__call__` or `__instancecheck__` sees the record


META = (
    "class Registered(type):\n"
    "    def __call__(cls, cfg, *a, **k):\n"
    "        obj = super().__call__(cfg, *a, **k)\n"
    "        obj.world = cfg.tp_size\n"
    "        return obj\n"
    "    def __instancecheck__(cls, obj):\n"
    "        return obj.page_size > 1\n"
    "class Worker(metaclass=Registered):\n"
    "    def __init__(self, cfg):\n"
    "        self.ok = True\n"
)


def test_a_class_with_a_metaclass_call_is_constructed_through_it(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"user.py": RAW + META + "def f():\n    return Worker(get_server_args()).world\n"})
    assert ("Registered.__call__", "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
    assert _fails(result)


def test_isinstance_against_a_class_with_a_metaclass_instancecheck_is_followed_into_it(tmp_path: Path) -> None:
    meta = META
    user = RAW + "from pkg.meta import Worker\ndef f():\n    return isinstance(get_server_args(), (int, Worker))\n"
    result = _scan(tmp_path, {"meta.py": meta, "user.py": user})
    assert ("Registered.__instancecheck__", "page_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
    assert _fails(result)


def test_isinstance_and_construction_of_ordinary_classes_read_nothing(tmp_path: Path) -> None:
    user = RAW + "import abc\n" + (
        "class Base(metaclass=abc.ABCMeta):\n    pass\n"
        "class Plain(Base):\n    def __init__(self, args):\n        self.tp = args.tp_size\n"
        "def f():\n    rec = get_server_args()\n    return isinstance(rec, (Plain, int)), Plain(rec)\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("Plain.__init__", "tp_size")}, result.reads


# ---- L2, L3: a descriptor's `__get__` called by hand, a frame's variables


@pytest.mark.parametrize("code", [
    "from legacy.config_bags.accessors import cfg\ndef f():\n    return type(cfg).server_args.__get__(cfg).tp_size\n",
    "from legacy.config_bags.accessors import cfg, ProcessConfigView\n"
    "def f():\n    return ProcessConfigView.server_args.__get__(cfg).tp_size\n",
    "import sys\n" + RAW + "def peek(name):\n    return sys._getframe(1).f_locals[name]\n"
    "def f():\n    a = get_server_args()\n    return peek('a').tp_size\n",
    "import inspect\n" + RAW + "def peek(name):\n    return inspect.currentframe().f_back.f_globals[name]\n",
    "import inspect, sys\n" + RAW + "def peek(name):\n    return inspect.getargvalues(sys._getframe(1)).locals[name]\n",
])
def test_a_descriptor_called_by_hand_or_a_frames_variables_are_unresolved(tmp_path: Path, code: str) -> None:
    result = _scan(tmp_path, {"user.py": code})
    assert [r for r in result.reads if r.leaf == "$?" and r.via == "reflection"], result.reads
    assert _fails(result)


def test_a_hook_or_an_operator_a_class_inherits_from_a_scanned_base_is_followed(tmp_path: Path) -> None:
    base = (
        "class Hooked:\n"
        "    def __setattr__(self, k, v):\n        object.__setattr__(self, 'world', v.tp_size)\n"
        "    def __add__(self, args):\n        return args.page_size\n"
    )
    user = RAW + "from pkg.base import Hooked\nclass Worker(Hooked):\n    pass\n" + (
        "def f():\n    w = Worker()\n    w.server_args = get_server_args()\n    return w + get_server_args()\n"
    )
    result = _scan(tmp_path, {"base.py": base, "user.py": user})
    assert {("Hooked.__setattr__", "tp_size"), ("Hooked.__add__", "page_size")} <= {
        (r.function, r.leaf) for r in result.reads}, result.reads


@pytest.mark.parametrize(("call", "reader"), [
    ("self.tp(get_server_args())", "with_self.wrapper"),
    ("W.tp(self, get_server_args())", "with_self.wrapper"),
    ("W.build(get_server_args())", "with_self.wrapper"),
])
def test_a_decorated_methods_wrapper_takes_self_first(tmp_path: Path, call: str, reader: str) -> None:
    user = RAW + (
        "def with_self(fn):\n"
        "    def wrapper(obj, args):\n"
        "        return fn(obj, args.tp_size)\n"
        "    return wrapper\n"
        "class W:\n"
        "    @with_self\n    def tp(self, tp):\n        return tp\n"
        "    @classmethod\n    @with_self\n    def build(cls, tp):\n        return tp\n"
        f"    def run(self):\n        return {call}\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert (reader, "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads


def test_a_metaclass_a_class_inherits_and_a_match_class_pattern_reach_its_hooks(tmp_path: Path) -> None:
    meta = META + "class Child(Worker):\n    pass\n"
    user = RAW + "from pkg.meta import Child\n" + (
        "def f():\n    return Child(get_server_args())\n"
        "def g():\n    match get_server_args():\n        case Child():\n            return 1\n"
    )
    result = _scan(tmp_path, {"meta.py": meta, "user.py": user})
    assert {("Registered.__call__", "tp_size"), ("Registered.__instancecheck__", "page_size")} <= {
        (r.function, r.leaf) for r in result.reads}, result.reads


def test_a_descriptor_a_class_inherits_sees_the_store(tmp_path: Path) -> None:
    user = RAW + DESCRIPTOR.replace("class Worker:", "class Base:") + (
        "class Worker(Base):\n    pass\n"
        "def f():\n    w = Worker()\n    w.server_args = get_server_args()\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("Captures.__set__", "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads


@pytest.mark.parametrize("decorator", [
    "def deco(fn):\n    if DEBUG:\n        return make(fn)\n    return fn\n",
    "def deco(fn):\n    def wrapper(*a, **k):\n        return fn(*a, **k)\n    if DEBUG:\n        return fn\n"
    "    return peek(wrapper)\n",
])
def test_a_decorator_returning_something_not_shown_on_some_path_makes_the_call_an_escape(
    tmp_path: Path, decorator: str
) -> None:
    user = RAW + "DEBUG = False\n" + decorator + "@deco\ndef tp(args):\n    return args.tp_size\n"
    user += "def f():\n    return tp(get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("escape", "escapes_call") in _escapes(result, "f"), result.reads


def test_a_projects_own_decorator_named_like_a_pass_through_is_judged_by_its_body(tmp_path: Path) -> None:
    util = "def cache(fn):\n    def wrapper(args):\n        return fn(args.tp_size)\n    return wrapper\n"
    user = RAW + "from pkg.util import cache\n@cache\ndef tp(n):\n    return n\ndef f():\n    return tp(get_server_args())\n"
    result = _scan(tmp_path, {"util.py": util, "user.py": user})
    assert ("cache.wrapper", "tp_size") in {(r.function, r.leaf) for r in result.reads}, result.reads
