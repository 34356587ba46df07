"""Round six's false passes of the read ratchet about the record within and between
functions (an outside attack): the record stored through an unpacking or loop target
(G22), handed to a decorated callable (G7, G7b, G1), an operand of a user class's
operator (G14), stored on an object whose class hooks the store (G6), constructed or
tested through a metaclass (G2), and reached by reflection on a descriptor or a frame
(L2, L3)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from configbags.migrate.check import check
from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree

SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE",))
ACCESSORS = {"tp_size": "get_parallel().tp_size", "page_size": "get_schedule().page_size"}
RAW = "from legacy.server_args import get_server_args\n"
CTX = "from legacy.config_bags.accessors import get_context\n"


def _scan(root: Path, files: dict[str, str]) -> ScanResult:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "pkg" / name).write_text(textwrap.dedent(text))
    result = scan_tree(root, SETTINGS)
    assert not result.problems, result.problems
    return result


def _fails(result: ScanResult) -> bool:
    return not check(result, [], ACCESSORS, min_files=1).ok


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
