"""The read ratchet follows values between functions and modules (configbags.migrate.flows):
the record, a config context or the environment returned by another module's function,
held by another module's name, passed to a parameter or to an allowlisted helper, and
what it cannot follow (an escape) is a read of `*` that fails unless an entry explains it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hostile.strategies import PROFILE
from hypothesis import given
from hypothesis import strategies as st

from configbags.migrate import scan as scan_module
from configbags.migrate.check import check
from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree
from configbags.migrate.scancache import CACHE_KEY_VAR, _seal, cache_secret

SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE",))
ACCESSORS = {"tp_size": "get_parallel().tp_size", "page_size": "get_schedule().page_size"}
RAW = "from legacy.server_args import get_server_args\n"


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _reads(root: Path, files: dict[str, str], **kwargs: object) -> set[tuple[str, str, str]]:
    result = scan_tree(_project(root, files), SETTINGS, **kwargs)  # type: ignore[arg-type]
    assert not result.problems, result.problems
    return {(r.file, r.function, r.leaf) for r in result.reads}


def _origins(result: ScanResult) -> set[str]:
    return {r.origin for r in result.reads}


HELPERS = RAW + "def rec():\n    return get_server_args()\n"


# ---- 1. the record, a context or the environment returned by another module's function


@pytest.mark.parametrize(
    "user",
    [
        "from pkg.helpers import rec\n\ndef f():\n    return rec().tp_size\n",
        "import pkg.helpers as h\n\ndef f():\n    return h.rec().tp_size\n",
        "import pkg.helpers\n\ndef f():\n    return pkg.helpers.rec().tp_size\n",
        "from . import helpers\n\ndef f():\n    return helpers.rec().tp_size\n",
        "from .helpers import rec as r\n\ndef f():\n    x = r()\n    return x.tp_size\n",
        "def f():\n    from pkg.helpers import rec\n    return rec().tp_size\n",
        "from pkg.helpers import *\n\ndef f():\n    return rec().tp_size\n",
    ],
)
def test_the_record_returned_by_another_modules_function_is_read(tmp_path: Path, user: str) -> None:
    found = _reads(tmp_path, {"helpers.py": HELPERS, "user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in found


def test_a_chain_of_helpers_and_a_reexport_is_followed(tmp_path: Path) -> None:
    files = {
        "helpers.py": HELPERS,
        "__init__.py": "from pkg.helpers import rec\n",
        "mid.py": "from pkg import rec\n\ndef again():\n    return rec()\n",
        "sub/__init__.py": "",
        "sub/user.py": "from ..mid import again\n\ndef f():\n    return again().page_size\n",
    }
    result = scan_tree(_project(tmp_path, files), SETTINGS)
    reads = {(r.file, r.function, r.leaf) for r in result.reads}
    assert ("pkg/sub/user.py", "f", "page_size") in reads
    # through a helper it is no more than held: `ratchet fix` never rewrites it
    assert _origins(result) == {"held"}


def test_a_context_or_the_environment_returned_by_a_function_is_read(tmp_path: Path) -> None:
    files = {
        "doors.py": "import os\nfrom configbags.runtime import get_context\n\n"
        "def ctx():\n    return get_context()\n\ndef env():\n    return os.environ\n",
        "user.py": "from pkg.doors import ctx, env\n\n"
        "def state():\n    return ctx().state\n\n"
        "def page():\n    return env()['SGLANG_PAGE_SIZE']\n\n"
        "def whole():\n    return sorted(env())\n",
    }
    found = _reads(tmp_path, files)
    assert {
        ("pkg/user.py", "state", "Context.state"),
        ("pkg/user.py", "page", "$SGLANG_PAGE_SIZE"),
        ("pkg/user.py", "whole", "$?"),
    } <= found


def test_an_allowlisted_environment_helper_is_no_cover_in_its_own_module(tmp_path: Path) -> None:
    text = "import os\n\ndef env():\n    return os.environ\n\ndef page():\n    return env()['SGLANG_PAGE_SIZE']\n"
    found = _reads(tmp_path, {"m.py": text})
    assert {("pkg/m.py", "env", "$?"), ("pkg/m.py", "page", "$SGLANG_PAGE_SIZE")} <= found


# ---- 2. a module-level name holding the record, imported from another module


@pytest.mark.parametrize(
    ("holder", "user"),
    [
        ("REC = get_server_args()\n", "from pkg.a import REC\n\ndef f():\n    return REC.tp_size\n"),
        ("REC = get_server_args()\n", "import pkg.a as a\n\ndef f():\n    return a.REC.tp_size\n"),
        ("g = get_server_args\n", "from pkg.a import g\n\ndef f():\n    return g().tp_size\n"),
        ("class R:\n    ARGS = get_server_args()\n", "from pkg.a import R\n\ndef f():\n    return R.ARGS.tp_size\n"),
        ("def ident(a):\n    return a\n", RAW + "from pkg.a import ident\n\ndef f():\n    return ident(get_server_args()).tp_size\n"),
    ],
)
def test_a_module_name_holding_the_record_is_followed_into_its_importers(
    tmp_path: Path, holder: str, user: str
) -> None:
    found = _reads(tmp_path, {"a.py": RAW + holder, "b.py": user})
    assert ("pkg/b.py", "f", "tp_size") in found


# ---- 3. the record passed to a parameter not annotated as the record


def test_the_record_passed_to_a_parameter_is_read_in_the_callee(tmp_path: Path) -> None:
    files = {
        "m.py": RAW + "def _tp(args):\n    return args.tp_size\n\ndef f():\n    return _tp(get_server_args())\n",
        "other.py": "def page(a):\n    return a.page_size\n",
        "user.py": RAW + "from pkg.other import page\n\ndef g():\n    return page(get_server_args())\n",
    }
    found = _reads(tmp_path, files)
    assert {("pkg/m.py", "_tp", "tp_size"), ("pkg/other.py", "page", "page_size")} <= found


def test_a_class_handed_the_record_reads_it_in_its_methods(tmp_path: Path) -> None:
    files = {
        "w.py": "class Worker:\n    def __init__(self, args):\n        self.pages = args.page_size\n"
        "    def tp(self, args):\n        return args.tp_size\n",
        "u.py": RAW + "from pkg.w import Worker\n\ndef f():\n    rec = get_server_args()\n"
        "    return Worker(rec)\n\nclass User(Worker):\n    def go(self):\n        return self.tp(get_server_args())\n",
    }
    assert {("pkg/w.py", "Worker.__init__", "page_size")} <= _reads(tmp_path, files)


def test_the_record_stored_under_another_name_is_an_escape(tmp_path: Path) -> None:
    files = {
        "w.py": "class Worker:\n    def __init__(self, args):\n        self.cfg = args\n"
        "    def tp(self):\n        return self.cfg.tp_size\n",
        "u.py": RAW + "from pkg.w import Worker\n\ndef f():\n    return Worker(get_server_args()).cfg.tp_size\n",
    }
    found = _reads(tmp_path, files)
    assert {("pkg/w.py", "Worker.tp", "tp_size"), ("pkg/w.py", "Worker.__init__", "*")} <= found
    assert ("pkg/u.py", "f", "*") in found  # the call site hands it to a helper that lets it escape


def test_legacy_patterns_stay_precise(tmp_path: Path) -> None:
    # an annotated parameter of a class in another module, `self.server_args = ...`, a
    # thread started on a function of this module, a record set in its own home module
    files = {
        "sched.py": "from legacy.server_args import ServerArgs\n\nclass Scheduler:\n"
        "    def __init__(self, server_args: ServerArgs) -> None:\n        self.server_args = server_args\n"
        "    def tp(self):\n        return self.server_args.tp_size\n",
        "launch.py": "import threading\nfrom legacy.server_args import ServerArgs, set_global_server_args\n"
        "from pkg.sched import Scheduler\n\n"
        "def child(server_args: ServerArgs) -> None:\n    set_global_server_args(server_args)\n\n"
        "def main(server_args: ServerArgs):\n    set_global_server_args(server_args)\n"
        "    threading.Thread(target=child, args=(server_args,)).start()\n"
        "    return Scheduler(server_args), isinstance(server_args, ServerArgs)\n",
        "sub.py": "from legacy.server_args import ServerArgs\nfrom pkg import sched\n\nclass Sub(sched.Scheduler):\n"
        "    def __init__(self, server_args: ServerArgs) -> None:\n        super().__init__(server_args)\n"
        "        self.again(server_args)\n\n    def again(self, server_args: ServerArgs) -> None:\n"
        "        self.__init__(server_args)\n",
    }
    assert _reads(tmp_path, files) == {("pkg/sched.py", "Scheduler.tp", "tp_size")}


# ---- 4. an allowlisted helper is no cover for a new call site


def test_a_whole_record_helper_is_a_read_at_every_call_site(tmp_path: Path) -> None:
    files = {
        "h.py": "import dataclasses\n\ndef dump(a):\n    return dataclasses.asdict(a)\n",
        "u.py": RAW + "from pkg.h import dump\n\ndef f():\n    return dump(get_server_args())['tp_size']\n",
    }
    result = scan_tree(_project(tmp_path, files), SETTINGS)
    entry = {"file": "pkg/h.py", "function": "dump", "leaf": "*", "reason": "dumps the record for the crash report"}
    report = check(result, [entry], ACCESSORS, min_files=1)
    assert [f.message.split(":")[0] for f in report.failures if f.kind == "new_read"] == ["pkg/u.py"]
    assert "(f)" in report.render()


def test_an_env_helper_is_a_read_of_the_variable_named_at_the_call_site(tmp_path: Path) -> None:
    files = {
        "h.py": "import os\n\ndef env(name):\n    return os.environ[name]\n",
        "u.py": "from pkg import h\n\ndef f():\n    return h.env('SGLANG_PAGE_SIZE')\n",
    }
    result = scan_tree(_project(tmp_path, files), SETTINGS)
    entry = {"file": "pkg/h.py", "function": "env", "leaf": "$?", "reason": "reads only PKG_* variables"}
    report = check(result, [entry], ACCESSORS, min_files=1)
    assert {(r.file, r.function, r.leaf) for r in result.reads} >= {("pkg/u.py", "f", "$SGLANG_PAGE_SIZE")}
    assert not report.ok


# ---- 5. what the scanner cannot follow is a read of `*`


@pytest.mark.parametrize(
    "body",
    [
        "holder.x = get_server_args()",
        "L.v = get_server_args()",
        "xs = [get_server_args()]\n    return xs[holder].tp_size",
        "return next(iter([get_server_args()])).tp_size",
        "yield get_server_args()",
        "threading.Thread(target=holder, args=(get_server_args(),)).start()",
        "multiprocessing.Process(target=holder.run, args=(get_server_args(),))",
        "holder.take(get_server_args())",
        "print(get_server_args())",
        "d = {}\n    d[holder] = get_server_args()",
    ],
)
def test_a_record_the_scanner_cannot_follow_is_an_escape(tmp_path: Path, body: str) -> None:
    text = f"import threading, multiprocessing\n{RAW}L = threading.local()\n\ndef f(holder):\n    {body}\n"
    result = scan_tree(_project(tmp_path, {"m.py": text}), SETTINGS)
    assert ("pkg/m.py", "f", "*") in {(r.file, r.function, r.leaf) for r in result.reads}
    report = check(result, [], ACCESSORS, min_files=1)
    assert not report.ok and "escapes" in report.render()
    allowed = [{"file": "pkg/m.py", "function": "f", "leaf": "*", "reason": "the holder reads only tp_size, by accessor"}]
    assert check(result, allowed, ACCESSORS, min_files=1).ok


def test_init_baselines_the_escapes_and_check_then_passes(tmp_path: Path) -> None:
    from test_ratchet_false_passes import _tiny_project

    from configbags.migrate.cli import main as ratchet_main

    files = {
        "__init__.py": "",
        "h.py": "import dataclasses\n\ndef dump(a):\n    return dataclasses.asdict(a)\n",
        "u.py": RAW + "from pkg.h import dump\n\ndef f(pool):\n    pool.submit(get_server_args())\n"
        "    return dump(get_server_args())\n",
    }
    schema = _tiny_project(tmp_path, files)
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1
    assert ratchet_main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 0


def test_a_method_returning_the_record_lets_it_escape(tmp_path: Path) -> None:
    text = RAW + (
        "class Runner:\n    @property\n    def args(self):\n        return get_server_args()\n"
        "    @property\n    def server_args(self):\n        return get_server_args()\n"
        "    def get_server_args(self):\n        return self.server_args\n"
    )
    assert _reads(tmp_path, {"m.py": text}) == {("pkg/m.py", "Runner.args", "*")}


def test_calls_that_read_nothing_are_no_escape(tmp_path: Path) -> None:
    text = (
        "import subprocess\nfrom legacy.server_args import ServerArgs, get_server_args\n\ndef f():\n"
        "    rec = get_server_args()\n    subprocess.run(['x'], input=rec)\n"
        "    return isinstance(rec, ServerArgs), id(rec), type(rec), len([]), rec.url()\n"
    )
    assert _reads(tmp_path, {"m.py": text}) == set()


# ---- the cache: keyed by what a result depends on, never making a check pass


def test_a_warm_check_analyses_nothing_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    files = {"helpers.py": HELPERS, "user.py": "from pkg.helpers import rec\n\ndef f():\n    return rec().tp_size\n"}
    cache = tmp_path / "cache.json"
    root = _project(tmp_path, files)
    first = scan_tree(root, SETTINGS, cache_path=cache)
    calls: list[tuple[object, ...]] = []
    real = scan_module.scan_source

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(scan_module, "scan_source", counted)
    again = scan_tree(root, SETTINGS, cache_path=cache)
    assert again.reads == first.reads and ("pkg/user.py", "f", "tp_size") in {r[:3] for r in again.reads}
    assert calls == []


def test_a_changed_helper_changes_its_unchanged_importers_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    user = "from pkg.helpers import rec\n\ndef f():\n    return rec().tp_size\n"
    cache = tmp_path / "cache.json"
    root = _project(tmp_path, {"helpers.py": "def rec():\n    return None\n", "user.py": user})
    assert scan_tree(root, SETTINGS, cache_path=cache).reads == ()
    (root / "pkg" / "helpers.py").write_text(HELPERS)
    reads = {r[:3] for r in scan_tree(root, SETTINGS, cache_path=cache).reads}
    assert ("pkg/user.py", "f", "tp_size") in reads
    (root / "pkg" / "helpers.py").write_text("def rec():\n    return None\n")
    assert scan_tree(root, SETTINGS, cache_path=cache).reads == ()


def test_a_forged_project_pass_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(CACHE_KEY_VAR, raising=False)
    files = {"helpers.py": HELPERS, "user.py": "from pkg.helpers import rec\n\ndef f():\n    return rec().tp_size\n"}
    cache = tmp_path / "cache.json"
    root = _project(tmp_path, files)
    uncached = scan_tree(root, SETTINGS)
    assert scan_tree(root, SETTINGS, cache_path=cache).reads == uncached.reads
    head, _, body = cache.read_bytes().partition(b"\n")
    header, document = json.loads(head), json.loads(body)
    keyed = [key for key in document["files"] if ":" in key]
    assert keyed, "the importer's result with its project input is cached under its own key"
    assert document["project"]["inputs"], "and the pass's outcome for these bytes"
    for entry in document["files"].values():
        entry["r"], entry["f"] = [], json.dumps([[]] * 7)  # says nothing is read or offered
    document["project"]["sites"] = {}
    forged = json.dumps(document).encode()
    for secret, served in ((b"a forger's key", False), (cache_secret(), True)):
        assert secret is not None
        header["seal"] = _seal(secret, header["key"], forged)
        cache.write_bytes(json.dumps(header).encode() + b"\n" + forged)
        again = scan_tree(root, SETTINGS, cache_path=cache)
        # a forger lacks the secret: a miss, scanned afresh; sealed with it, it would be served
        assert (again.reads != uncached.reads) is served
    assert not check(uncached, [], ACCESSORS, min_files=1).ok


# ---- the property: every chain of helpers that ends in a leaf read is reported


@st.composite
def _chains(draw: st.DrawFn) -> tuple[dict[str, str], tuple[str, str]]:
    """Helpers across 2-3 modules, each returning the previous one's value (the record
    at the start), spelled by from-import, module alias or relative import, or held in a
    module name; the last module reads a leaf of the last value, or hands it to a
    function that reads one. Returns the files and (file, function) of the read."""
    modules = draw(st.integers(2, 3))
    hops = draw(st.integers(1, 4))
    files: dict[str, str] = {}
    lines = [RAW.rstrip("\n"), "def h0():", "    return get_server_args()"]
    current = ("m0", "h0")
    for hop in range(1, hops + 1):
        module = f"m{min(hop * modules // (hops + 1), modules - 1)}"
        name = f"h{hop}"
        if module != current[0]:
            files[current[0] + ".py"] = "\n".join(lines) + "\n"
            lines = [] if f"{module}.py" not in files else files.pop(f"{module}.py").splitlines()
        spelling = draw(st.sampled_from(["from", "alias", "relative", "holder"]))
        if module == current[0]:
            call = f"{current[1]}()"
        elif spelling == "alias":
            lines.insert(0, f"import pkg.{current[0]} as mod{hop}")
            call = f"mod{hop}.{current[1]}()"
        elif spelling == "relative":
            lines.insert(0, f"from .{current[0]} import {current[1]} as r{hop}")
            call = f"r{hop}()"
        else:
            lines.insert(0, f"from pkg.{current[0]} import {current[1]}")
            call = f"{current[1]}()"
        if spelling == "holder":
            lines += [f"HELD{hop} = {call}", f"def {name}():", f"    return HELD{hop}"]
        else:
            lines += [f"def {name}():", f"    return {call}"]
        current = (module, name)
    reader = f"m{modules}"
    files[current[0] + ".py"] = "\n".join(lines) + "\n"
    imported = f"from pkg.{current[0]} import {current[1]}\n"
    if draw(st.booleans()):
        files[reader + ".py"] = f"{imported}\ndef use():\n    return {current[1]}().tp_size\n"
        return files, (f"pkg/{reader}.py", "use")
    # or handed on, through 1-2 unannotated parameters, to a function that reads it
    files["sink.py"] = "def inner(b):\n    return b.tp_size\n\ndef outer(a):\n    return inner(a)\n"
    sink = draw(st.sampled_from(["inner", "outer"]))
    files[reader + ".py"] = f"{imported}from pkg.sink import {sink}\n\ndef use():\n    return {sink}({current[1]}())\n"
    return files, ("pkg/sink.py", "inner")


@PROFILE
@given(chain=_chains())
def test_every_chain_of_helpers_ending_in_a_leaf_read_is_reported(
    tmp_path_factory: pytest.TempPathFactory, chain: tuple[dict[str, str], tuple[str, str]]
) -> None:
    files, (reader, function) = chain
    root = tmp_path_factory.mktemp("chain")
    found = _reads(root, files)
    assert (reader, function, "tp_size") in found, files


# ---- round four: an awaited helper, the raw accessor handed on as a value


@pytest.mark.parametrize("user", [
    RAW + "async def rec():\n    return get_server_args()\n\nasync def f():\n    return (await rec()).tp_size\n",
    RAW + "async def rec():\n    return get_server_args()\n\nasync def f():\n    r = await rec()\n    return r.tp_size\n",
    "from pkg.ahelpers import rec\n\nasync def f():\n    return (await rec()).tp_size\n",
])
def test_an_awaited_helper_that_returns_the_record_is_read(tmp_path: Path, user: str) -> None:
    helpers = RAW + "async def rec():\n    return get_server_args()\n"
    found = _reads(tmp_path, {"ahelpers.py": helpers, "user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in found


@pytest.mark.parametrize("user", [
    "import functools\n" + RAW + "cached = functools.cache(get_server_args)\n\ndef f():\n    return cached().tp_size\n",
    "import functools\n" + RAW + "def f():\n    p = functools.partial(get_server_args)\n    return p().tp_size\n",
    RAW + 'FACTORIES = {"args": get_server_args}\n\ndef f():\n    return FACTORIES["args"]().tp_size\n',
    "import dataclasses\n" + RAW + "@dataclasses.dataclass\nclass Holder:\n"
    "    args: object = dataclasses.field(default_factory=get_server_args)\n",
    "import legacy.server_args as S\n\ndef f():\n    return register(S.get_server_args)\n",
])
def test_the_raw_accessor_handed_on_as_a_value_escapes(tmp_path: Path, user: str) -> None:
    result = scan_tree(_project(tmp_path, {"user.py": user}), SETTINGS)
    escapes = [r for r in result.reads if r.leaf == "*" and r.via == "escape" and r.form == "escapes_accessor"]
    assert escapes, result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


def test_the_raw_accessor_renamed_or_as_a_default_is_no_escape(tmp_path: Path) -> None:
    user = RAW + "g = get_server_args\n\ndef f(a=get_server_args):\n    return a().tp_size + get_server_args().dp_size\n"
    result = scan_tree(_project(tmp_path, {"user.py": user}), SETTINGS)
    assert not [r for r in result.reads if r.form == "escapes_accessor"], result.reads


@pytest.mark.parametrize("body", [
    "return get_server_args() == other\n", "return other != get_server_args()\n",
    "return get_server_args() in seen\n", "return get_server_args().to_dict()\n",
    "r = get_server_args()\n    return r.__eq__(other)\n",
])
def test_comparing_the_record_or_its_to_dict_reads_every_field(tmp_path: Path, body: str) -> None:
    user = RAW + "def f(other, seen):\n    " + body
    result = scan_tree(_project(tmp_path, {"user.py": user}), SETTINGS)
    assert ("pkg/user.py", "f", "*") in {(r.file, r.function, r.leaf) for r in result.reads}, result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


def test_identity_and_a_built_record_compared_read_nothing(tmp_path: Path) -> None:
    user = (RAW + "from legacy.server_args import ServerArgs\n\n"
            "def f(other):\n    return get_server_args() is other or ServerArgs(model_path='m') == other\n")
    result = scan_tree(_project(tmp_path, {"user.py": user}), SETTINGS)
    assert not [r for r in result.reads if r.leaf == "*"], result.reads
