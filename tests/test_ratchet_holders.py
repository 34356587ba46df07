"""Round five's false passes of the read ratchet about objects that hold the record (an
outside attack): the process view and a class holding `self.server_args`, read through
their namespace or by a name built at run time (F1, F7), the record's whole-read methods
(F10), and `match` class patterns that bind the record out of a holder, a context or `os`
(F12, F13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import CTX, RAW
from ratchet_case import fails as _fails
from ratchet_case import read_keys as _keys
from ratchet_case import scan_pkg as _scan

CFG = "from legacy.config_bags.accessors import cfg\n"
GEN = "from legacy.config_bags.accessors import get_server_args\n"
HOLDER = RAW + "class W:\n    def __init__(self):\n        self.server_args = get_server_args()\n"


# ---- F1: the process view fetched by a name that is not a literal argument


@pytest.mark.parametrize(("user", "function"), [
    (CFG + "def bag(ns):\n    return getattr(cfg, ns)\n\ndef f():\n    return bag('server_args').tp_size\n", "bag"),
    (CFG + "def f():\n    out = {}\n    for ns in names():\n        out[ns] = getattr(cfg, ns)\n    return out\n", "f"),
    ("import logging\n" + CFG + "NS = ('parallel', 'server_args')\ndef f():\n    for ns in NS:\n"
     "        logging.warning('%s: %s', ns, getattr(cfg, ns))\n", "f"),
    (CFG + "def f():\n    return {s: getattr(cfg, s) for s in type(cfg).__slots__}['server_args'].tp_size\n", "f"),
    (CTX + "def f():\n    v = get_context().view\n    return {s: getattr(v, s) for s in type(v).__slots__}\n", "f"),
    (CTX + "def slot(name):\n    return getattr(get_context().view, name)\n", "slot"),
    (CTX + "def slot(name):\n    ctx = get_context()\n    return getattr(ctx.installer.cfg, name)\n", "slot"),
    ("import operator\n" + CFG + "def f(path='server_args.tp_size'):\n    return operator.attrgetter(path)(cfg)\n", "f"),
    ("from legacy.config_bags import accessors\ndef f(name):\n    return getattr(accessors.cfg, name)\n", "f"),
    ("import legacy.config_bags.accessors\ndef f(name):\n    return getattr(legacy.config_bags.accessors.cfg, name)\n", "f"),
])
def test_the_process_view_fetched_by_a_name_built_at_run_time_escapes(tmp_path: Path, user: str, function: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == function and r.leaf == "*" and r.via == "escape"], result.reads
    assert _fails(result)


@pytest.mark.parametrize("body", [
    "name = 'server_args'\n    return getattr(cfg, name).tp_size\n",
    "for ns in NAMESPACES:\n        return getattr(cfg, ns).tp_size\n",
    "for ns in ('parallel', 'server_args'):\n        if ns == 'server_args':\n"
    "            return getattr(cfg, ns).tp_size\n",
])
def test_a_name_the_function_binds_to_literals_is_followed(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": CFG + "NAMESPACES = ('parallel', 'server_args')\ndef f():\n    " + body})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads
    assert _fails(result)


def test_the_view_fetched_by_literal_names_of_no_record_attribute_reads_nothing(tmp_path: Path) -> None:
    user = CFG + "BAGS = ('parallel', 'schedule')\n" + (
        "def e():\n    return {ns: getattr(cfg, ns) for ns in BAGS}\n"
        "def f():\n    return [getattr(cfg, ns).tp_size for ns in ('parallel', 'schedule')]\n"
        "def g():\n    ns = 'parallel'\n    return getattr(cfg, ns)\n"
        "def h(kind):\n    return getattr(cfg, 'par' + kind)\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_a_dynamic_getattr_on_the_record_with_literal_names_reads_those_leaves(tmp_path: Path) -> None:
    user = RAW + "def f():\n    return [getattr(get_server_args(), n) for n in ('tp_size', 'page_size')]\n"
    result = _scan(tmp_path, {"user.py": user})
    assert {r.leaf for r in result.reads} == {"tp_size", "page_size"}, result.reads


def test_the_view_read_by_its_slots_names_stays_precise(tmp_path: Path) -> None:
    user = CFG + CTX + "def f():\n    return cfg.server_args.tp_size + getattr(get_context().view, 'server_args').page_size\n"
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.leaf, r.via) for r in result.reads} == {("tp_size", "attribute"), ("page_size", "attribute")}, result.reads


# ---- F7: the record held as `self.server_args`, read through the holder's namespace


@pytest.mark.parametrize(("method", "leaf"), [
    ("def tp(self):\n        return vars(self)['server_args'].tp_size\n", "tp_size"),
    ("def tp(self):\n        return self.__dict__['server_args'].tp_size\n", "tp_size"),
    ("def tp(self):\n        return self.__dict__.get('server_args').tp_size\n", "tp_size"),
    ("def describe(self):\n        return {k: repr(v) for k, v in vars(self).items()}\n", "*"),
    ("def snapshot(self):\n        return dict(self.__dict__)\n", "*"),
    ("def get(self, name):\n        return getattr(self, name)\n", "*"),
    ("def get(self, kind):\n        return getattr(self, f'{kind}_args')\n", "*"),
    ("def get(self, path):\n        return operator.attrgetter(path)(self)\n", "*"),
    ("def __repr__(self):\n        return f'W({self.__dict__})'\n", "*"),
    ("def dump(self):\n        return pickle.dumps(self)\n", "*"),
    ("def dump(self, out):\n        json.dump(vars(self), out, default=str)\n", "*"),
    ("def dump(self):\n        return yaml.safe_dump(self)\n", "*"),
    ("def members(self):\n        return dict(inspect.getmembers(self))\n", "*"),
])
def test_a_holder_read_through_its_namespace_reads_the_record(tmp_path: Path, method: str, leaf: str) -> None:
    user = "import inspect\nimport json\nimport operator\nimport pickle\nimport yaml\n" + HOLDER + "    " + method
    result = _scan(tmp_path, {"user.py": user})
    found = [r for r in result.reads if r.function.startswith("W.") and r.function != "W.__init__" and r.leaf == leaf]
    assert found, result.reads
    assert leaf != "*" or found[0].via == "escape"
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "import pickle\n" + HOLDER + "def f():\n    return pickle.dumps(W())\n",
    "import json\n" + HOLDER + "def f():\n    w = W()\n    return json.dumps(vars(w), default=vars)\n",
    HOLDER + "def f():\n    return getattr(W(), f'{kind()}_args').tp_size\n",
    "import dataclasses\nfrom typing import Any\n" + RAW + "@dataclasses.dataclass\nclass Holder:\n"
    "    server_args: Any = None\n\ndef f():\n    h = Holder()\n    h.server_args = get_server_args()\n"
    "    return dataclasses.asdict(h)\n",
    "import attrs\n" + RAW + "@attrs.define\nclass Holder:\n    server_args: object = None\n\n"
    "def f():\n    h = Holder()\n    h.server_args = get_server_args()\n    return attrs.astuple(h)\n",
    "import logging\nfrom dataclasses import dataclass\n" + RAW + "@dataclass\nclass Holder:\n"
    "    server_args: object = None\n\ndef f():\n    h = Holder()\n    h.server_args = get_server_args()\n"
    "    logging.info('%s', h)\n",
    "from dataclasses import dataclass\n" + RAW + "@dataclass\nclass Holder:\n    server_args: object = None\n\n"
    "def f():\n    h = Holder()\n    h.server_args = get_server_args()\n    return f'{h}' + '%s' % (h,)\n",
    RAW + "def f():\n    h = object.__new__(object)\n    h.server_args = get_server_args()\n    return vars(h)\n",
    "from dataclasses import dataclass\n" + RAW + "@dataclass\nclass Holder:\n    server_args: object = None\n\n"
    "def f():\n    h = Holder()\n    h.server_args = get_server_args()\n    return '{}'.format(h)\n",
])
def test_a_holder_handed_whole_to_a_namespace_reader_escapes(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "*") in _keys(result), result.reads
    assert _fails(result)


def test_a_class_attribute_holder_read_through_vars_by_key_is_followed(tmp_path: Path) -> None:
    user = RAW + "class Shared:\n    server_args = None\n\ndef f():\n    Shared.server_args = get_server_args()\n" \
        "    return vars(Shared)['server_args'].tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads


def test_a_loop_over_literal_names_on_a_holder_is_followed(tmp_path: Path) -> None:
    user = HOLDER + (
        "def f():\n    w = W()\n    for name in ('args', 'server_args'):\n        a = getattr(w, name, None)\n"
        "        if a is not None:\n            return a.tp_size\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads


def test_a_holder_used_as_an_ordinary_object_reads_nothing_more(tmp_path: Path) -> None:
    user = "import copy\nimport logging\n" + HOLDER + (
        "    def tp(self):\n        return self.server_args.tp_size\n"
        "    def handle(self, kind):\n        return getattr(self, 'handle_' + kind)()\n"
        "    def set(self, **kw):\n        self.__dict__.update(kw)\n"
        "    def run(self):\n        register(self)\n        logging.info('%s', self)\n        return copy.copy(self)\n"
        "def register(worker):\n    return id(worker)\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("W.tp", "tp_size")}, result.reads


def test_an_ordinary_class_read_through_its_namespace_reads_nothing(tmp_path: Path) -> None:
    user = RAW + (
        "class Plain:\n    def __init__(self, n):\n        self.n = n\n"
        "    def __repr__(self):\n        return f'Plain({vars(self)})'\n"
        "    def get(self, name):\n        return getattr(self, name)\n"
        "def f():\n    return get_server_args().tp_size, vars(Plain(1))\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {(r.function, r.leaf) for r in result.reads} == {("f", "tp_size")}, result.reads


# ---- F10: the generated record's methods and readers that hand every field over


@pytest.mark.parametrize("body", [
    "return get_server_args().to_dict()['tp_size']\n",
    "return dataclasses.astuple(get_server_args())\n",
    "return attrs.asdict(get_server_args())['tp_size']\n",
    "return attrs.astuple(get_server_args())\n",
    "return get_server_args().__getstate__()\n",
    "return get_server_args().__reduce_ex__(2)\n",
    "return get_server_args().__reduce__()\n",
])
def test_the_generated_record_handed_over_whole_is_a_whole_read(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, {"user.py": "import attrs\nimport dataclasses\n" + GEN + "def f():\n    " + body})
    assert ("pkg/user.py", "f", "*") in _keys(result), result.reads
    assert _fails(result)


# ---- F12: a match class pattern binding the record out of a holder


@pytest.mark.parametrize("user", [
    CFG + "def f():\n    match cfg:\n        case object(server_args=a):\n            return a.tp_size\n",
    HOLDER + "    __match_args__ = ('server_args',)\n\ndef f():\n    match W():\n"
    "        case W(server_args=a):\n            return a.tp_size\n",
    HOLDER + "    __match_args__ = ('server_args',)\n\ndef f():\n    match W():\n"
    "        case W(a):\n            return a.tp_size\n",
    "from dataclasses import dataclass\n" + RAW + "@dataclass\nclass H:\n    server_args: object\n\n"
    "def f():\n    match H(get_server_args()):\n        case H(a):\n            return a.tp_size\n",
    CFG + "def f(x):\n    match x:\n        case [object(server_args=a)]:\n            return a.tp_size\n",
])
def test_a_class_pattern_binding_the_record_attribute_is_followed(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in _keys(result), result.reads
    assert _fails(result)


def test_a_positional_pattern_on_a_holder_of_unknown_fields_escapes(tmp_path: Path) -> None:
    user = HOLDER + "def f(w):\n    match W():\n        case W(a, b):\n            return a\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == "f" and r.leaf == "*" and r.via == "escape"], result.reads


def test_a_class_pattern_on_other_attributes_reads_nothing(tmp_path: Path) -> None:
    user = CFG + "def f():\n    match cfg:\n        case object(parallel=p):\n            return p.tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- F13: a keyword sub-pattern on a context or on `os` fetches what it names


@pytest.mark.parametrize(("user", "leaf"), [
    (CTX + "def f():\n    match get_context():\n        case object(state=s):\n            return s.record.tp_size\n",
     "Context.state"),
    (CTX + "def f():\n    ctx = get_context()\n    match ctx:\n        case object(server_info=info):\n"
     "            return info()['record']['tp_size']\n", "Context.server_info"),
    (CTX + "def f():\n    match get_context():\n        case object(_state=s) | object(state=s):\n            return s\n",
     "Context.state"),
    ("import os\ndef f():\n    match os:\n        case object(environ=e):\n            return e['SGLANG_PAGE_SIZE']\n", "$?"),
    ("import os as o\ndef f():\n    match o:\n        case object(getenv=g):\n            return g('SGLANG_PAGE_SIZE')\n", "$?"),
])
def test_a_class_pattern_on_a_context_or_os_fetches_what_it_names(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert _fails(result)


def test_a_class_pattern_on_other_objects_fetches_nothing(tmp_path: Path) -> None:
    user = CTX + "import os\ndef f(job, path):\n    match job:\n        case object(state=s, environ=e):\n" \
        "            return s, e\n    match os.path:\n        case object(sep=sep):\n            return sep\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


@pytest.mark.parametrize(("user", "function"), [
    (HOLDER + "class Sub(W):\n    def get(self, name):\n        return getattr(self, name)\n", "Sub.get"),
    (CTX + "class A:\n    def __init__(self):\n        self.ctx = get_context()\n"
     "    def slot(self, name):\n        return getattr(self.ctx.view, name)\n", "A.slot"),
])
def test_a_subclass_of_a_holder_and_a_held_context_view_escape(tmp_path: Path, user: str, function: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == function and r.leaf == "*" and r.via == "escape"], result.reads


def test_multiprocessing_get_context_is_no_config_context(tmp_path: Path) -> None:
    user = "import torch.multiprocessing\ndef f(name):\n    return getattr(torch.multiprocessing.get_context('spawn').view, name)\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


def test_a_dataclass_holder_formatting_itself_reads_the_record(tmp_path: Path) -> None:
    user = "import logging\nfrom dataclasses import dataclass\n" + RAW + (
        "@dataclass\nclass Holder:\n    server_args: object = None\n"
        "    def show(self):\n        logging.info('%s', self)\n        return f'{self!r}'\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == "Holder.show" and r.leaf == "*"], result.reads
