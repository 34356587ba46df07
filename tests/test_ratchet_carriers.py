"""Round eight's false passes of the read ratchet about what carries the record, a config
context or the environment (an outside attack): lambdas giving one (R20), a context or the
environment held by a class and read from a subclass or another module (R16, R18), record
holders used whole (R3), what a context's overrides give back (R2), callables of
`subprocess` that start nothing (R4), a frame's locals rendered (R17), the record read back
from a function's defaults (L1), as an `assert` message (L3) or installed as a builtin (L4);
and the message for a write to a deep copy (P5). Each case fails before its rule, and the
precision cases beside it stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import ACCESSORS, CTX, RAW, SETTINGS, failing_leaves, write_pkg
from ratchet_case import fails as _fails
from ratchet_case import scan_pkg as _scan

from configbags.migrate.check import check
from configbags.migrate.scan import scan_tree

# ---- R4: callables of `subprocess` that start no child keep what they are given


@pytest.mark.parametrize("expr", [
    "subprocess.CompletedProcess(get_server_args(), 0).args.tp_size",
    "subprocess.CalledProcessError(1, get_server_args()).cmd",
    "subprocess.TimeoutExpired(get_server_args(), 1.0).cmd",
    "subprocess.SubprocessError(get_server_args()).args[0]",
    "subprocess.list2cmdline(get_server_args())",
    "ServerArgs.__repr__(get_server_args())",
    "ServerArgs.__str__(get_server_args())",
    "ServerArgs.__format__(get_server_args(), '')",
])
def test_subprocess_results_and_unbound_whole_methods_read_the_record(tmp_path: Path, expr: str) -> None:
    user = "import subprocess\nfrom legacy.server_args import ServerArgs, get_server_args\n"
    assert "*" in failing_leaves(tmp_path, {"user.py": user + f"def f():\n    return {expr}\n"})


@pytest.mark.parametrize("expr", [
    "subprocess.list2cmdline(os.environ.values())",
    "subprocess.CompletedProcess(os.environ, 0).args['SGLANG_PAGE_SIZE']",
    "subprocess.CalledProcessError(1, ['true'], output=os.environ.copy()).output",
])
def test_subprocess_results_keep_the_environment(tmp_path: Path, expr: str) -> None:
    user = "import os, subprocess\n" + f"def f():\n    return {expr}\n"
    assert failing_leaves(tmp_path, {"user.py": user}) & {"$?", "$SGLANG_PAGE_SIZE"}


def test_a_child_process_handed_the_record_or_the_environment_stays_exempt(tmp_path: Path) -> None:
    user = RAW + "import os, subprocess\n" + (
        "def f():\n    subprocess.run(['x', str(get_server_args().tp_size)], env=os.environ.copy())\n"
        "    return ServerArgs_like(1)\n"
        "def ServerArgs_like(n):\n    return n\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {r.leaf for r in result.reads} == {"tp_size"}, result.reads


# ---- R2: what a context's overrides give back


@pytest.mark.parametrize("body", [
    "return get_context().prepare_override('x').state.values['tp_size']",
    "prepared = get_context().prepare_override('x')\n    return prepared.base.values['tp_size']",
    "return get_context().prepare_entries([]).state",
    "ctx = get_context()\n    entries = ctx.override('autotune', page_size=8)\n    return entries[0].old",
    "ctx = get_context()\n    return ctx.prepare_override('autotune', page_size=8).entries[0].old",
    "for entry in get_context().override('autotune', page_size=8):\n        print(entry.new)",
])
def test_override_results_are_readbacks(tmp_path: Path, body: str) -> None:
    assert "Context.state" in failing_leaves(tmp_path, {"user.py": CTX + f"def f():\n    {body}\n"})


def test_an_override_and_a_commit_read_nothing_back(tmp_path: Path) -> None:
    user = CTX + (
        "def f():\n    ctx = get_context()\n    entries = ctx.override('autotune', page_size=8)\n"
        "    prepared = ctx.prepare_override('autotune', page_size=4)\n    ctx.commit(prepared)\n"
        "    return len(entries), [e.leaf for e in entries], prepared.entries[0].leaf\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- R20: lambdas giving the record or a context, where no name follows them


def test_a_module_level_lambda_giving_the_record_is_a_fetcher_for_its_importers(tmp_path: Path) -> None:
    files = {
        "lam.py": RAW + "current_args = lambda: get_server_args()  # noqa: E731\n",
        "user.py": "from pkg.lam import current_args\ndef f():\n    return current_args().tp_size\n",
    }
    assert "tp_size" in failing_leaves(tmp_path, files)


def test_a_module_level_lambda_giving_a_context_is_a_fetcher_for_its_importers(tmp_path: Path) -> None:
    files = {
        "lam.py": CTX + "current_ctx = lambda: get_context()  # noqa: E731\n",
        "user.py": "from pkg.lam import current_ctx\ndef f():\n    return current_ctx().state.values['tp_size']\n",
    }
    assert "Context.state" in failing_leaves(tmp_path, files)


@pytest.mark.parametrize(("head", "body", "leaf"), [
    (RAW, "pick = (lambda: get_server_args()) if flag else (lambda: None)\n    return pick().tp_size", "*"),
    (RAW, "pick = flag and (lambda: get_server_args())\n    return pick().tp_size", "*"),
    (RAW, "return GETTERS['args']().tp_size", "*"),
    (CTX, "pick = (lambda: get_context()) if flag else (lambda: None)\n    return pick().state", "Context.state"),
    (CTX, "return CTXS['ctx']().state", "Context.state"),
])
def test_a_lambda_picked_at_run_time_or_kept_in_a_table_escapes(tmp_path: Path, head: str, body: str, leaf: str) -> None:
    tables = "GETTERS = {'args': lambda: get_server_args()}\n" if "GETTERS" in body else (
        "CTXS = {'ctx': lambda: get_context()}\n" if "CTXS" in body else "")
    assert leaf in failing_leaves(tmp_path, {"user.py": head + tables + f"def f(flag=True):\n    {body}\n"})


def test_lambdas_giving_nothing_config_related_stay_quiet(tmp_path: Path) -> None:
    user = RAW + CTX + (
        "KEYS = {'size': lambda x: x.size, 'name': lambda x: x.name}\n"
        "current = lambda: get_server_args().tp_size  # noqa: E731\n"
        "def f(flag=True):\n    pick = (lambda: 1) if flag else (lambda: 2)\n    return pick(), KEYS['size']\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert {r.leaf for r in result.reads} <= {"tp_size"}, result.reads


# ---- R16, R18: a context or the environment kept by a class, read from a subclass or
# another module

ADMIN = CTX + "class Admin:\n    def __init__(self):\n        self.ctx = get_context()\n"
DOORS = CTX + "class Doors:\n    CTX = get_context()\n"
KNOBS = "import os\nclass Knobs:\n    env = os.environ\n    get = os.environ.get\n"


@pytest.mark.parametrize(("helper", "user"), [
    (ADMIN, "from pkg.h import Admin\ndef f():\n    return Admin().ctx.state\n"),
    (ADMIN, "from pkg.h import Admin\ndef f():\n    a = Admin()\n    return a.ctx.state\n"),
    (ADMIN, "import pkg.h\ndef f():\n    return pkg.h.Admin().ctx.server_info()\n"),
    (ADMIN, "from pkg.h import Admin\ndef f():\n    return vars(Admin())['ctx'].server_info()\n"),
    (ADMIN, "from pkg.h import Admin\nclass Admin2(Admin):\n    def tp(self):\n        return self.ctx.state\n"),
    (DOORS, "from pkg.h import Doors\ndef f():\n    return Doors.CTX.state\n"),
    (DOORS, "from pkg.h import Doors\nclass D2(Doors):\n    def tp(self):\n        return self.CTX.state\n"),
])
def test_a_context_a_class_of_another_module_keeps_is_read_back(tmp_path: Path, helper: str, user: str) -> None:
    assert failing_leaves(tmp_path, {"h.py": helper, "user.py": user}) & {"Context.state", "Context.server_info"}


@pytest.mark.parametrize("user", [
    "from pkg.h import Knobs\ndef f():\n    return Knobs.env['SGLANG_PAGE_SIZE']\n",
    "from pkg.h import Knobs\ndef f():\n    return Knobs().env.get('SGLANG_PAGE_SIZE')\n",
    "from pkg.h import Knobs\ndef f():\n    return Knobs.get('SGLANG_PAGE_SIZE')\n",
    "from pkg.h import Knobs\ndef f():\n    return Knobs().get('SGLANG_PAGE_SIZE')\n",
])
def test_the_environment_a_class_of_another_module_keeps_is_read(tmp_path: Path, user: str) -> None:
    assert "$SGLANG_PAGE_SIZE" in failing_leaves(tmp_path, {"h.py": KNOBS, "user.py": user})


@pytest.mark.parametrize("files", [
    {"user.py": ADMIN + "class B(Admin):\n    def tp(self):\n        return self.ctx.state\n"},
    {"user.py": DOORS + "class B(Doors):\n    def tp(self):\n        return self.CTX.state\n"},
    {"user.py": "import os\nclass K:\n    env = os.environ\nclass Sub(K):\n"
                "    def page(self):\n        return self.env['SGLANG_PAGE_SIZE']\n"},
])
def test_a_subclass_in_the_same_module_reads_what_its_base_keeps(tmp_path: Path, files: dict[str, str]) -> None:
    assert failing_leaves(tmp_path, files) & {"Context.state", "$SGLANG_PAGE_SIZE"}


def test_a_class_keeping_a_context_used_through_its_doors_reads_nothing(tmp_path: Path) -> None:
    user = (
        "from pkg.h import Admin, Doors, Knobs\nclass Other:\n    def __init__(self):\n        self.ctx = None\n"
        "def f():\n    a = Admin()\n    return a.ctx.bag('parallel'), Doors.CTX.snapshot(), Knobs.env.get('HOME'),"
        " Other().ctx.state\n"
        "class Mine(Admin):\n    def tp(self):\n        return self.ctx.bag('parallel').tp_size, self.state\n"
    )
    result = _scan(tmp_path, {"h.py": ADMIN + DOORS.replace(CTX, "") + KNOBS, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- R3: record holders used whole, a holder class of another module among them

WORKER = RAW + (
    "import dataclasses\n@dataclasses.dataclass\nclass Worker:\n    rank: int = 0\n    server_args: object = None\n"
    "    def start(self):\n        self.server_args = get_server_args()\n"
)
PLAIN = RAW + "class Plain:\n    def __init__(self):\n        self.server_args = get_server_args()\n"


@pytest.mark.parametrize("use", [
    "repr(w)",
    "f'{w}'",
    "dataclasses.asdict(w)['server_args']",
    "{k: v for k, v in vars(w).items()}",
    "json.dumps(vars(w), default=str)",
    "w == Worker()",
])
def test_a_holder_class_of_another_module_used_whole_escapes(tmp_path: Path, use: str) -> None:
    user = f"import dataclasses, json\nfrom pkg.h import Worker\ndef f():\n    w = Worker()\n    w.start()\n    return {use}\n"
    assert "*" in failing_leaves(tmp_path, {"h.py": WORKER, "user.py": user})


def test_a_holder_given_to_a_log_record_escapes(tmp_path: Path) -> None:
    user = "import logging\nfrom pkg.h import Worker\ndef f():\n    w = Worker()\n" \
        "    return logging.LogRecord('p', 20, __file__, 1, 'worker %s', (w,), None)\n"
    assert "*" in failing_leaves(tmp_path, {"h.py": WORKER, "user.py": user})


def test_a_plain_holder_class_of_another_module_read_by_its_namespace_escapes(tmp_path: Path) -> None:
    user = "import pkg.h\ndef f():\n    return vars(pkg.h.Plain())\n"
    assert "*" in failing_leaves(tmp_path, {"h.py": PLAIN, "user.py": user})


@pytest.mark.parametrize(("head", "make"), [
    ("import types\n", "types.SimpleNamespace()"),
    ("from types import SimpleNamespace\n", "SimpleNamespace(rank=0)"),
    ("import argparse\n", "argparse.Namespace()"),
])
@pytest.mark.parametrize("use", ["repr(ns)", "str(ns)", "print(ns)", "ns == other"])
def test_a_namespace_holding_the_record_turned_into_text_or_compared_escapes(
    tmp_path: Path, head: str, make: str, use: str
) -> None:
    user = head + RAW + f"def f(other):\n    ns = {make}\n    ns.server_args = get_server_args()\n    return {use}\n"
    assert "*" in failing_leaves(tmp_path, {"user.py": user})


def test_holders_used_by_their_attributes_or_with_their_own_repr_read_no_more(tmp_path: Path) -> None:
    own = RAW + "class Own:\n    def __init__(self):\n        self.server_args = get_server_args()\n" \
        "    def __repr__(self):\n        return 'Own'\n"
    user = (
        "import types\nfrom pkg.h import Worker, Own, Plain\ndef f():\n    w = Worker()\n    o = Own()\n"
        "    ns = types.SimpleNamespace(rank=1)\n    ns.port = 8000\n"
        "    return w.rank, repr(o), repr(Plain()), repr(ns), ns == ns, str(w.rank)\n"
    )
    result = _scan(tmp_path, {"h.py": WORKER + own.replace(RAW, "") + PLAIN.replace(RAW, ""), "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


APP = "from fastapi import FastAPI\n" + RAW + "app = FastAPI()\ndef install():\n    app.state.server_args = get_server_args()\n"


@pytest.mark.parametrize("use", [
    "json.dumps(app.state._state, default=str)",
    "dict(app.state._state)['server_args'].tp_size",
    "vars(app.state)",
    "json.dumps(app.state.__dict__, default=str)",
])
@pytest.mark.parametrize("where", ["same", "importer"])
def test_an_object_a_name_reaches_holding_the_record_read_by_its_namespace_escapes(
    tmp_path: Path, use: str, where: str
) -> None:
    # FastAPI's `app.state` (starlette's State keeps its attributes in `_state`), in the
    # module that stores the record on it and in one importing the app
    if where == "same":
        files = {"app.py": "import json\n" + APP + f"def f():\n    return {use}\n"}
    else:
        files = {"app.py": APP, "user.py": f"import json\nfrom pkg.app import app, install\ndef f():\n    install()\n    return {use}\n"}
    assert "*" in failing_leaves(tmp_path, files, "pkg/app.py" if where == "same" else "pkg/user.py")


def test_an_imported_object_holding_the_record_read_by_its_attributes_reads_them(tmp_path: Path) -> None:
    user = (
        "import pkg.app as a\nfrom pkg.app import app\ndef f():\n"
        "    return app.state.server_args.tp_size, a.app.state.server_args.page_size, app.state.port, app.title\n"
    )
    result = _scan(tmp_path, {"app.py": APP, "user.py": user})
    assert {(r.file, r.leaf) for r in result.reads} == {("pkg/user.py", "tp_size"), ("pkg/user.py", "page_size")}


SCHEDULER = "class Scheduler:\n    def __init__(self, server_args):\n        self.server_args = server_args\n"
DUMP = "import json\ndef dump_state(obj) -> str:\n    return json.dumps(vars(obj), default=str)\n"
LAUNCH = RAW + "from pkg.sched import Scheduler\ndef launch():\n    return {'url': 1, 'scheduler': Scheduler(get_server_args())}\n"


@pytest.mark.parametrize("use", [
    "dump_state(Scheduler(get_server_args()))",
    "dump_state(launch()['scheduler'])",
    "dump_state(parts['scheduler'])",
    "json.dumps(vars(parts['scheduler']))",
])
def test_a_holder_handed_to_a_helper_reading_its_namespace_or_given_by_a_function_escapes(
    tmp_path: Path, use: str
) -> None:
    # the engine's Scheduler, reached through what `launch()` gives, dumped by a debug helper
    user = "import json\n" + RAW + "from pkg.sched import Scheduler\nfrom pkg.dump import dump_state\n" + (
        f"from pkg.launch import launch\ndef f():\n    parts = launch()\n    return {use}\n"
    )
    files = {"sched.py": SCHEDULER, "dump.py": DUMP, "launch.py": LAUNCH, "user.py": user}
    assert "*" in failing_leaves(tmp_path, files)


def test_a_holder_given_by_a_function_used_by_its_attributes_or_a_helper_reading_others_reads_nothing(
    tmp_path: Path,
) -> None:
    helper = DUMP + "def show(obj, other) -> str:\n    return json.dumps(vars(other))\n"
    user = "from pkg.dump import dump_state, show\nfrom pkg.launch import launch\ndef f(o):\n" + (
        "    parts = launch()\n    return parts['url'], show(parts['scheduler'], o), dump_state(o), str(parts)\n"
    )
    result = _scan(tmp_path, {"sched.py": SCHEDULER, "dump.py": helper, "launch.py": LAUNCH, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- L1, L3, L4: the record read back from a function's defaults, an assert message, a builtin


@pytest.mark.parametrize("body", [
    "return g.__defaults__[0].tp_size",
    "return g.__kwdefaults__['sa'].tp_size",
    "return inspect.signature(g).parameters['sa'].default.tp_size",
])
def test_a_record_default_read_back_from_the_function_escapes(tmp_path: Path, body: str) -> None:
    user = "import inspect\n" + RAW + "def g(a=1, *, sa=get_server_args()):\n    return a\n" + f"def f():\n    {body}\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [r for r in result.reads if r.function == "f" and r.leaf == "*"], result.reads


def test_defaults_read_back_from_a_function_without_a_record_default_read_nothing(tmp_path: Path) -> None:
    user = "import inspect\n" + RAW + (
        "def g(a=1, *, port=8000):\n    return get_server_args().tp_size\n"
        "def f():\n    return g.__defaults__, inspect.signature(g).parameters, inspect.signature(f)\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.function == "f"], result.reads


def test_the_record_as_an_assert_message_escapes(tmp_path: Path) -> None:
    user = RAW + "def f(ok):\n    assert ok, get_server_args()\n    assert ok, 'no record here'\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.leaf, r.line) for r in result.reads] == [("*", 3)], result.reads


def test_the_record_installed_as_a_builtin_escapes(tmp_path: Path) -> None:
    user = "import builtins\n" + RAW + "def install():\n    builtins.server_args = get_server_args()\n" \
        "    builtins.PORT = 8000\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.leaf) for r in result.reads] == [("install", "*")], result.reads
    assert _fails(result)


# ---- R17: a frame's locals rendered


@pytest.mark.parametrize("call", [
    "traceback.TracebackException.from_exception(exc, capture_locals=True).format()",
    "traceback.TracebackException(type(exc), exc, exc.__traceback__, capture_locals=True)",
    "traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), capture_locals=True)",
    "rich.traceback.install(show_locals=True)",
])
def test_a_renderer_of_frame_locals_is_unresolved_in_any_module(tmp_path: Path, call: str) -> None:
    user = f"import traceback\nimport rich.traceback\ndef render(exc):\n    return {call}\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.function, r.leaf) for r in result.reads] == [("render", "$?")], result.reads
    assert _fails(result)


def test_a_renderer_told_not_to_show_locals_reads_nothing(tmp_path: Path) -> None:
    user = "import traceback\ndef render(exc):\n    return traceback.TracebackException.from_exception(" \
        "exc, capture_locals=False).format(), traceback.format_exc()\n"
    assert not _scan(tmp_path, {"user.py": user}).reads


# ---- P5: a write to a deep copy is named as one, with the one-step copy to build instead


def test_a_write_to_a_copy_says_it_is_a_copy_and_how_to_build_it(tmp_path: Path) -> None:
    user = "import copy\n" + RAW + (
        "def draft():\n    d = copy.deepcopy(get_server_args())\n    d.tp_size = 1\n    return d\n"
        "def bad():\n    get_server_args().page_size = 2\n"
    )
    report = check(_scan(tmp_path, {"user.py": user}), [], ACCESSORS, min_files=1)
    messages = {m.split(":", 2)[1].split(" ")[0]: m for m in (f.message for f in report.failures if f.kind == "write")}
    assert "writes a copy of the raw record (origin copied)" in messages["5"], messages
    assert "dataclasses.replace(record, tp_size=...)" in messages["5"]
    assert "override" not in messages["5"]
    assert "writes the raw record" in messages["8"] and "override" in messages["8"]


# ---- R12, R4: the record's home module (excluded from the scan) read for what it offers


HOME = (
    "from dataclasses import field\n_ARGS = None\nclass ServerArgs:\n    pass\n"
    "def get_server_args() -> ServerArgs:\n    return _ARGS\n"
    "def set_global_server_args(args):\n    global _ARGS\n    _ARGS = args\n"
)
SECOND = "def get_global_server_args() -> ServerArgs:\n    return _ARGS\ndef current():\n    return _ARGS\n"


def _with_home(tmp_path: Path, home: str) -> None:
    (tmp_path / "legacy").mkdir(exist_ok=True)
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(home)


@pytest.mark.parametrize("user", [
    "from legacy.server_args import get_global_server_args\ndef f():\n    return get_global_server_args().tp_size\n",
    "from legacy.server_args import current\ndef f():\n    return current().tp_size\n",
    "import legacy.server_args as S\ndef f():\n    return S.get_global_server_args().tp_size\n",
])
def test_a_second_getter_of_the_home_module_is_a_raw_accessor(tmp_path: Path, user: str) -> None:
    _with_home(tmp_path, HOME + SECOND)
    assert "tp_size" in failing_leaves(tmp_path, {"user.py": user})


def test_a_name_the_home_module_only_imports_is_no_home_function(tmp_path: Path) -> None:
    _with_home(tmp_path, HOME)
    user = "from legacy.server_args import field, get_server_args, set_global_server_args\n" \
        "def f():\n    set_global_server_args(get_server_args())\n    return field(default=get_server_args())\n"
    result = _scan(tmp_path, {"user.py": user})
    assert [(r.line, r.leaf, r.via) for r in result.reads] == [(4, "*", "escape")], result.reads


def test_a_changed_home_module_changes_a_warm_check(tmp_path: Path) -> None:
    _with_home(tmp_path, HOME)
    write_pkg(tmp_path, {"user.py": "from legacy.server_args import current\ndef f():\n    return current().tp_size\n"})
    cache = tmp_path / "cache"
    assert not scan_tree(tmp_path, SETTINGS, cache_path=cache).reads
    _with_home(tmp_path, HOME + SECOND)
    assert {r.leaf for r in scan_tree(tmp_path, SETTINGS, cache_path=cache).reads} == {"tp_size"}


@pytest.mark.parametrize(("files", "file"), [
    ({"fill.py": RAW + "def fill(ns):\n    ns.server_args = get_server_args()\n",
      "user.py": "import types\nfrom pkg.fill import fill\ndef f():\n    ns = types.SimpleNamespace()\n"
                 "    fill(ns)\n    return str(vars(ns))\n"}, "pkg/user.py"),
    ({"user.py": "import types\n" + RAW + "def fill(ns):\n    ns.server_args = get_server_args()\n"
                 "def f():\n    ns = types.SimpleNamespace()\n    fill(ns)\n    return repr(ns)\n"}, "pkg/user.py"),
])
def test_an_object_a_function_stores_the_record_on_is_a_holder(tmp_path: Path, files: dict[str, str], file: str) -> None:
    assert "*" in failing_leaves(tmp_path, files, file)


def test_an_object_handed_to_a_function_storing_nothing_on_it_is_no_holder(tmp_path: Path) -> None:
    files = {
        "fill.py": RAW + "def fill(ns, other):\n    other.server_args = get_server_args()\n",
        "user.py": "import types\nfrom pkg.fill import fill\ndef f(o):\n    ns = types.SimpleNamespace()\n"
                   "    fill(ns, o)\n    return str(vars(ns))\n",
    }
    result = _scan(tmp_path, files)
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- round ten PR2: the record handed to a dataclass (attrs) holder's generated `__init__`

DC = "import dataclasses\nfrom typing import Any\n"
QUIET = "dataclasses.field(repr=False, compare=False, default=None)"
RUNNER = DC + f"@dataclasses.dataclass\nclass Runner:\n    server_args: Any = {QUIET}\n    rank: int = 0\n"
NOREPR = DC + "@dataclasses.dataclass(repr=False, eq=False)\nclass Runner:\n    server_args: Any = None\n    rank: int = 0\n"
ATTRS = "import attrs\nfrom typing import Any\n@attrs.define(repr=False, eq=False)\nclass Runner:\n" \
    "    server_args: Any = None\n    rank: int = 0\n"
ATTR_S = "import attr\nfrom typing import Any\n@attr.s(auto_attribs=True, repr=False, eq=False)\nclass Runner:\n" \
    "    server_args: Any = None\n    rank: int = 0\n"
MAKE = RAW + "import logging\ndef start():\n    r = {make}\n    logging.info('started %s', r)\n" \
    "    return repr(r), f'{{r}}', r == Runner(), r.server_args.tp_size\n"


@pytest.mark.parametrize("holder", [RUNNER, NOREPR, ATTRS, ATTR_S])
@pytest.mark.parametrize("make", ["Runner(server_args=get_server_args(), rank=0)", "Runner(get_server_args())"])
@pytest.mark.parametrize("where", ["same", "importer"])
def test_the_record_stored_by_a_generated_init_on_a_field_nothing_generated_reads_is_followed(
    tmp_path: Path, holder: str, make: str, where: str
) -> None:
    use = MAKE.format(make=make)
    files = {"user.py": holder + use} if where == "same" else {
        "h.py": holder, "user.py": "from pkg.h import Runner\n" + use,
    }
    result = _scan(tmp_path, files)
    assert {r.leaf for r in result.reads if r.file == "pkg/user.py"} == {"tp_size"}, result.reads


def test_a_post_init_of_such_a_holder_is_read_as_its_method(tmp_path: Path) -> None:
    reads = RUNNER + "    def __post_init__(self):\n        self.tp = self.server_args.tp_size\n"
    user = "from pkg.h import Runner\n" + RAW + "def start():\n    return Runner(get_server_args())\n"
    result = _scan(tmp_path, {"h.py": reads, "user.py": user})
    assert {(r.file, r.leaf) for r in result.reads} == {("pkg/h.py", "tp_size")}, result.reads
    whole = RUNNER + "    def __post_init__(self):\n        self.seen = dict(vars(self))\n"
    assert "*" in failing_leaves(tmp_path, {"h.py": whole, "user.py": user}, "pkg/h.py")


@pytest.mark.parametrize(("holder", "make"), [
    # the generated repr, `==` or hash formats / compares the field
    (DC + "@dataclasses.dataclass\nclass Runner:\n    server_args: Any = dataclasses.field(compare=False, default=None)\n",
     "Runner(get_server_args())"),
    (DC + "@dataclasses.dataclass(repr=False)\nclass Runner:\n    server_args: Any = None\n", "Runner(get_server_args())"),
    (DC + "@dataclasses.dataclass(repr=False, eq=False, unsafe_hash=True)\nclass Runner:\n    server_args: Any = None\n",
     "Runner(get_server_args())"),
    (DC + "@dataclasses.dataclass(repr=False, frozen=True)\nclass Runner:\n    server_args: Any = None\n",
     "Runner(get_server_args())"),
    (DC + "@dataclasses.dataclass(unsafe_hash=True)\nclass Runner:\n"
     "    server_args: Any = dataclasses.field(repr=False, compare=False, hash=True, default=None)\n",
     "Runner(get_server_args())"),
    (ATTRS.replace("eq=False", "eq=False, hash=True"), "Runner(get_server_args())"),
    # the record handed to a field not named like it, or not stored
    (RUNNER, "Runner(rank=get_server_args())"),
    (RUNNER, "Runner(None, get_server_args())"),
    (NOREPR.replace("server_args: Any = None", "server_args: dataclasses.InitVar[Any] = None"),
     "Runner(get_server_args())"),
    # a decorator that is not dataclasses' or attrs' (pydantic validates and copies), or more than one
    (RUNNER.replace("import dataclasses\n", "import dataclasses\nfrom pydantic.dataclasses import dataclass\n")
     .replace("@dataclasses.dataclass", "@dataclass"), "Runner(get_server_args())"),
    (RUNNER.replace("import dataclasses\n", "import dataclasses\ndef dataclass(c):\n    return c\n")
     .replace("@dataclasses.dataclass", "@dataclass"), "Runner(get_server_args())"),
    (RUNNER.replace("@dataclasses.dataclass", "@register\n@dataclasses.dataclass"), "Runner(get_server_args())"),
    (ATTR_S.replace("auto_attribs=True, ", ""), "Runner(get_server_args())"),
    # code the generated `__init__` runs on the value, or a class it does not decide alone
    (ATTRS.replace("server_args: Any = None", "server_args: Any = attrs.field(default=None, validator=check)"),
     "Runner(get_server_args())"),
    (ATTRS.replace("server_args: Any = None", "server_args: Any = attrs.field(default=None, converter=copy)"),
     "Runner(get_server_args())"),
    (NOREPR + "    def __setattr__(self, name, value):\n        object.__setattr__(self, name, value)\n",
     "Runner(get_server_args())"),
    (NOREPR + "    @property\n    def server_args(self):\n        return None\n", "Runner(get_server_args())"),
    (NOREPR + "    __post_init__ = check\n", "Runner(get_server_args())"),
    (NOREPR + "    @traced\n    def __post_init__(self):\n        pass\n", "Runner(get_server_args())"),
    (NOREPR.replace("class Runner:", "class Runner(Base):"), "Runner(get_server_args())"),
])
def test_the_record_handed_to_a_generated_init_that_may_read_it_escapes(
    tmp_path: Path, holder: str, make: str
) -> None:
    user = holder + RAW + f"def start():\n    return {make}\n"
    assert "*" in failing_leaves(tmp_path, {"user.py": user})


@pytest.mark.parametrize(("holder", "use"), [
    # a holder storing the record in a method: only what its generated methods show reads it
    (DC + "@dataclasses.dataclass(repr=False)\nclass Worker:\n    server_args: Any = None\n", "w == other"),
    (DC + "@dataclasses.dataclass(eq=False)\nclass Worker:\n    server_args: Any = None\n", "repr(w)"),
    (DC + "@dataclasses.dataclass\nclass Worker:\n    server_args: Any = dataclasses.field(repr=False, default=None)\n",
     "w == other"),
    (DC + "@dataclasses.dataclass\nclass Worker:\n    server_args: Any = dataclasses.field(compare=False, default=None)\n",
     "f'{w}'"),
    # a field of another name whose default may be the record
    (DC + "@dataclasses.dataclass\nclass Worker:\n    server_args: Any = dataclasses.field(repr=False, default=None)\n"
     "    saved: Any = dataclasses.field(default_factory=get_server_args)\n", "repr(w)"),
])
@pytest.mark.parametrize("where", ["same", "importer"])
def test_a_generated_repr_or_eq_showing_a_field_that_may_hold_the_record_escapes(
    tmp_path: Path, holder: str, use: str, where: str
) -> None:
    holder = RAW + holder + "    def start(self):\n        self.server_args = get_server_args()\n"
    use_it = f"def f(other):\n    w = Worker()\n    w.start()\n    return {use}\n"
    files = {"user.py": holder + use_it} if where == "same" else {
        "h.py": holder, "user.py": "from pkg.h import Worker\n" + use_it,
    }
    assert "*" in failing_leaves(tmp_path, files)


@pytest.mark.parametrize(("holder", "use"), [
    (DC + "@dataclasses.dataclass(repr=False)\nclass Worker:\n    server_args: Any = None\n", "repr(w)"),
    (DC + "@dataclasses.dataclass(eq=False)\nclass Worker:\n    server_args: Any = None\n", "w == other"),
    (DC + "@dataclasses.dataclass\nclass Worker:\n    server_args: Any = dataclasses.field(repr=False, default=None)\n"
     "    rank: int = 0\n    tags: list = dataclasses.field(default_factory=list)\n", "f'{w}'"),
    (DC + "@dataclasses.dataclass\nclass Worker:\n    server_args: Any = dataclasses.field(compare=False, default=None)\n"
     "    rank: int = 0\n", "w == other"),
])
def test_a_generated_repr_or_eq_leaving_the_record_out_reads_nothing(tmp_path: Path, holder: str, use: str) -> None:
    holder = RAW + holder + "    def start(self):\n        self.server_args = get_server_args()\n"
    user = "from pkg.h import Worker\n" + f"def f(other):\n    w = Worker()\n    w.start()\n    return {use}\n"
    result = _scan(tmp_path, {"h.py": holder, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads
