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
