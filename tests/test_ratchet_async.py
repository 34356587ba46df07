"""Round nine's false passes of the read ratchet (an outside attack): a context given by
an async function's coroutine run by the event loop instead of awaited (S9), the launcher's
globals read through `__main__` (S10), a lambda or nested factory around a project's context
getter (S8), a decorator registry keeping a record or context getter (S1), and a code string
an execnet gateway runs in a Python child (S5). Each case fails before its rule, and the
precision cases beside it stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import CTX, RAW, failing_leaves
from ratchet_case import fails as _fails
from ratchet_case import scan_pkg as _scan

ACTX = CTX + "async def actx():\n    return get_context()\n"


# ---- S9: a context's coroutine run by the event loop is the context


@pytest.mark.parametrize("body", [
    "    return asyncio.run(actx()).state.values['tp_size']\n",
    "    loop = asyncio.new_event_loop()\n    return loop.run_until_complete(actx()).state\n",
    "    coro = actx()\n    return asyncio.run(coro).state\n",
])
def test_a_context_coroutine_run_by_the_loop_is_the_context(tmp_path: Path, body: str) -> None:
    user = "import asyncio\nfrom pkg.doors import actx\ndef f():\n" + body
    assert "Context.state" in failing_leaves(tmp_path, {"doors.py": ACTX, "user.py": user})


@pytest.mark.parametrize("expr", [
    "(ctx,) = await asyncio.gather(actx())",
    "ctx = await asyncio.create_task(actx())",
    "ctx = await asyncio.wait_for(actx(), 5)",
    "ctx = await asyncio.shield(actx())",
    "ctx = await asyncio.ensure_future(actx())",
])
def test_a_context_coroutine_awaited_through_the_loop_api_is_the_context(tmp_path: Path, expr: str) -> None:
    user = "import asyncio\nfrom pkg.doors import actx\nasync def g():\n" + f"    {expr}\n    return ctx.state\n"
    assert "Context.state" in failing_leaves(tmp_path, {"doors.py": ACTX, "user.py": user})


def test_a_context_coroutine_in_its_own_module(tmp_path: Path) -> None:
    user = "import asyncio\n" + ACTX + "def f():\n    return asyncio.run(actx()).state.values['tp_size']\n"
    assert "Context.state" in failing_leaves(tmp_path, {"user.py": user})


def test_an_awaited_context_getter_read_by_leaf_stays_quiet(tmp_path: Path) -> None:
    user = "import asyncio\nfrom pkg.doors import actx\nasync def g():\n    return (await actx()).get_parallel().tp_size\n"
    result = _scan(tmp_path, {"doors.py": ACTX, "user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py" and r.leaf == "Context.state"]


# ---- S10: the launcher's globals through `__main__`, a module the scanner cannot know


MAIN = (
    "from legacy.server_args import get_server_args\nSERVER_ARGS = None\n"
    "def main():\n    global SERVER_ARGS\n    SERVER_ARGS = get_server_args()\n"
    "if __name__ == '__main__':\n    main()\n"
)


@pytest.mark.parametrize("user", [
    "import __main__\ndef f():\n    return __main__.SERVER_ARGS.tp_size\n",
    "import sys\ndef f():\n    return sys.modules['__main__'].SERVER_ARGS.tp_size\n",
    "import __main__ as launcher\ndef f():\n    return launcher.SERVER_ARGS\n",
])
def test_an_attribute_of_main_is_unresolved(tmp_path: Path, user: str) -> None:
    assert "$?" in failing_leaves(tmp_path, {"launch.py": MAIN, "user.py": user})


def test_mains_own_metadata_and_the_main_guard_stay_quiet(tmp_path: Path) -> None:
    user = "import __main__\ndef f():\n    return __main__.__file__\nif __name__ == '__main__':\n    f()\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.file == "pkg/user.py"], result.reads


# ---- S8: a lambda or a nested function around a project's context getter

PROVIDE = CTX + "def provide_ctx():\n    return get_context()\n"


def test_a_table_of_lambdas_over_a_context_getter_is_an_escape(tmp_path: Path) -> None:
    doors = PROVIDE + "GETTERS = {'ctx': lambda: provide_ctx()}\n"
    user = "from pkg.doors import GETTERS\ndef f():\n    return GETTERS['ctx']().state\n"
    result = _scan(tmp_path, {"doors.py": doors, "user.py": user})
    assert _fails(result)
    assert "Context.state" in {r.leaf for r in result.reads if r.file == "pkg/doors.py"}


def test_a_module_lambda_over_a_context_getter_is_a_getter(tmp_path: Path) -> None:
    doors = PROVIDE + "current = lambda: provide_ctx()\n"
    user = "from pkg.doors import current\ndef f():\n    return current().state.values['tp_size']\n"
    assert "Context.state" in failing_leaves(tmp_path, {"doors.py": doors, "user.py": user})


def test_a_nested_context_getter_returned_by_a_factory_is_an_escape(tmp_path: Path) -> None:
    user = CTX + "def make():\n    def g():\n        return get_context()\n    return g\n" + (
        "def f():\n    return make()().state.values['tp_size']\n"
    )
    assert "Context.state" in failing_leaves(tmp_path, {"user.py": user})


def test_a_lambda_over_a_context_getter_read_by_leaf_stays_quiet(tmp_path: Path) -> None:
    doors = PROVIDE + "def f():\n    return (lambda: provide_ctx().get_parallel().tp_size)()\n"
    result = _scan(tmp_path, {"doors.py": doors})
    assert not [r for r in result.reads if r.leaf == "Context.state"], result.reads


def test_a_nested_getter_over_the_projects_context_getter_is_an_escape(tmp_path: Path) -> None:
    user = PROVIDE + "def make():\n    def g():\n        return provide_ctx()\n    return g\n" + (
        "def f():\n    return make()().state\n"
    )
    assert "Context.state" in failing_leaves(tmp_path, {"user.py": user})


def test_the_projects_context_getter_read_by_leaf_stays_quiet(tmp_path: Path) -> None:
    user = PROVIDE + "def f():\n    return provide_ctx().get_parallel().tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.leaf == "Context.state"], result.reads


# ---- S1: a decorator registry keeping a record or context getter

FACTORY = "PROVIDERS = {}\ndef register(name):\n    def deco(fn):\n        PROVIDERS[name] = fn\n        return fn\n    return deco\n"
PLAIN_REGISTRY = "PROVIDERS = {}\ndef register(fn):\n    PROVIDERS[fn.__name__] = fn\n    return fn\n"
EAGER = "RESULTS = {}\ndef register(fn):\n    RESULTS[fn.__name__] = fn()\n    return fn\n"
LISTED = "REG = []\ndef register(fn):\n    REG.append(fn)\n    return fn\n"
WRAPPED = "REG = {}\ndef register(fn):\n    def w():\n        return fn()\n    REG[fn.__name__] = w\n    return fn\n"
METHOD = (
    "class Registry:\n    def __init__(self):\n        self._d = {}\n"
    "    def register(self, name):\n        def deco(fn):\n            self._d[name] = fn\n            return fn\n"
    "        return deco\nHOOKS = Registry()\n"
)
GETTERS = [(RAW, "get_server_args()", "*"), (CTX, "get_context()", "Context.state")]
KINDS = ["record", "context"]


@pytest.mark.parametrize(("registry", "decorator"), [
    (FACTORY, "@register('args')"),
    (PLAIN_REGISTRY, "@register"),
    (EAGER, "@register"),
    (LISTED, "@register"),
    (WRAPPED, "@register"),
], ids=["factory", "plain", "eager", "listed", "wrapped"])
@pytest.mark.parametrize(("head", "call", "leaf"), GETTERS, ids=KINDS)
def test_a_getter_a_scanned_decorator_keeps_escapes_at_the_decorator(
    tmp_path: Path, registry: str, decorator: str, head: str, call: str, leaf: str
) -> None:
    provider = "from pkg.reg import register\n" + head + f"{decorator}\ndef provide():\n    return {call}\n"
    result = _scan(tmp_path, {"reg.py": registry, "provider.py": provider})
    assert _fails(result)
    assert [(r.line, r.leaf) for r in result.reads if r.file == "pkg/provider.py"] == [(3, leaf)], result.reads


@pytest.mark.parametrize(("head", "call", "leaf"), GETTERS, ids=KINDS)
def test_a_getter_under_an_objects_or_a_third_partys_decorator_escapes(
    tmp_path: Path, head: str, call: str, leaf: str
) -> None:
    provider = "from pkg.reg import HOOKS\nimport fastapi\napp = fastapi.FastAPI()\n" + head + (
        f"@HOOKS.register('ctx')\ndef provide():\n    return {call}\n@app.get('/x')\ndef route():\n    return {call}\n"
    )
    result = _scan(tmp_path, {"reg.py": METHOD, "provider.py": provider})
    assert [(r.line, r.leaf) for r in result.reads if r.file == "pkg/provider.py"] == [(5, leaf), (8, leaf)]


@pytest.mark.parametrize("decorator", [
    "import functools\ndef deco(fn):\n    @functools.wraps(fn)\n    def w(*args, **kwargs):\n"
    "        result = fn(*args, **kwargs)\n        if result is None:\n            raise ValueError(fn.__name__)\n"
    "        return result\n    return w\n@deco\n",
    "def deco(fn):\n    fn.registered = True\n    print(f'registered {fn.__name__}')\n    return fn\n@deco\n",
    "def deco(kind):\n    def inner(fn):\n        assert callable(fn), kind\n        return fn\n    return inner\n@deco('x')\n",
    "import functools\n@functools.lru_cache(maxsize=None)\n",
], ids=["wraps", "as_is", "factory", "lru_cache"])
@pytest.mark.parametrize(("head", "call", "leaf"), GETTERS, ids=KINDS)
def test_a_getter_under_a_pass_through_decorator_is_followed(
    tmp_path: Path, decorator: str, head: str, call: str, leaf: str
) -> None:
    provider = head + decorator + f"def provide():\n    return {call}\n"
    read, expected = ("tp_size", "tp_size") if leaf == "*" else ("state", leaf)
    user = f"from pkg.provider import provide\ndef f():\n    return provide().{read}\n"
    result = _scan(tmp_path, {"provider.py": provider, "user.py": user})
    assert [(r.file, r.leaf) for r in result.reads] == [("pkg/user.py", expected)], result.reads


# ---- S5: a code string run in a Python child by a library (execnet's gateways)

EXECNET = "import execnet\ndef f():\n    gw = execnet.makegateway('popen')\n"


@pytest.mark.parametrize(("code", "leaf"), [
    ("\"import os; channel.send(os.environ['SGLANG_PAGE_SIZE'])\"", "$SGLANG_PAGE_SIZE"),
    ("'import os; channel.send(dict(os.environ))'", "$?"),
])
def test_a_code_string_an_execnet_gateway_runs_is_a_python_childs(tmp_path: Path, code: str, leaf: str) -> None:
    user = EXECNET + f"    return gw.remote_exec({code}).receive()\n"
    assert failing_leaves(tmp_path, {"user.py": user}) == {leaf}


def test_a_gateways_code_reading_nothing_and_another_remote_exec_stay_quiet(tmp_path: Path) -> None:
    files = {
        "user.py": EXECNET + "    return gw.remote_exec('channel.send(1)').receive()\n",
        "other.py": "def f(conn):\n    return conn.remote_exec(\"import os; os.environ['SGLANG_PAGE_SIZE']\")\n",
    }
    result = _scan(tmp_path, files)
    assert not result.reads, result.reads
