"""Round six's false passes of the read ratchet about the environment and config contexts
(an outside attack): C's getenv bound to a name before it is called, names spelled as
adjacent literals or built with `+`, contexts entered other than by `with ... as c` and
handed back by the runtime's test helpers, children that print the whole environment
back, `/proc/<pid>/environ` built as a path, code strings run by the profilers and
interpreters of the standard library, and a stale generated copy's declared variables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from ratchet_case import fails as _fails
from ratchet_case import file_reads as _keys
from ratchet_case import scan_env_pkg as _scan

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.cli import main
from configbags.migrate.importer import ROLES_YAML

PAGE = "$SGLANG_PAGE_SIZE"
CTX = "from pkg.config_bags.accessors import get_context\n"
RAW = "from pkg.server_args import get_server_args\n"


# ---- G24: C's getenv bound to a name, then called


@pytest.mark.parametrize("user", [
    # the doc's own example
    "import ctypes\ndef f():\n    libc = ctypes.CDLL('libc.so.6')\n    get = libc.secure_getenv\n"
    "    return get(b'SGLANG_PAGE_SIZE')\n",
    # restype set first, as every real use does
    "import ctypes\ndef f():\n    libc = ctypes.CDLL(None)\n    g = libc.getenv\n    g.restype = ctypes.c_char_p\n"
    "    return g(b'SGLANG_PAGE_SIZE')\n",
    "import ctypes\ndef f():\n    g = ctypes.CDLL(None).getenv\n    g.restype = ctypes.c_char_p\n"
    "    return g(b'SGLANG_PAGE_SIZE')\n",
    # bound at module level
    "import ctypes\nlibc = ctypes.CDLL('libc.so.6')\nget = libc.getenv\nget.restype = ctypes.c_char_p\n"
    "def f():\n    return get(b'SGLANG_PAGE_SIZE')\n",
    # cdll.LoadLibrary and an item
    "import ctypes\ndef f():\n    libc = ctypes.cdll.LoadLibrary('libc.so.6')\n    fn = libc['getenv']\n"
    "    fn.restype = ctypes.c_char_p\n    return fn(b'SGLANG_PAGE_SIZE')\n",
    # a prototype made from (name, library)
    "import ctypes\ndef f():\n    libc = ctypes.CDLL('libc.so.6')\n"
    "    fn = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_char_p)(('getenv', libc))\n    return fn(b'SGLANG_PAGE_SIZE')\n",
    "from ctypes import CFUNCTYPE, CDLL, c_char_p\nPROTO = CFUNCTYPE(c_char_p, c_char_p)\n"
    "def f():\n    fn = PROTO(('secure_getenv', CDLL(None)))\n    return fn(b'SGLANG_PAGE_SIZE')\n",
    # a module constant names the variable
    "import ctypes\nNAME = b'SGLANG_PAGE_SIZE'\ndef f():\n    get = ctypes.CDLL(None).getenv\n    return get(NAME)\n",
])
def test_c_getenv_bound_to_a_name_reads_the_variable_it_is_called_with(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", PAGE) in _keys(result), result.reads
    assert ("f", "$?") not in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "import ctypes\ndef f(name):\n    get = ctypes.CDLL(None).getenv\n    get.restype = ctypes.c_char_p\n"
    "    return get(name)\n",
    # stored where no analysis follows it
    "import ctypes\nclass C:\n    def __init__(self):\n        self.get = ctypes.CDLL(None).getenv\n"
    "def f():\n    return C().get(b'SGLANG_PAGE_SIZE')\n",
    "import ctypes\ndef f():\n    libc = ctypes.CDLL(None)\n    table = {'get': libc.getenv}\n    return table\n",
])
def test_c_getenv_with_a_name_the_module_does_not_show_is_unresolved(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert {leaf for function, leaf in _keys(result)} == {"$?"}, result.reads
    assert _fails(result)


def test_c_getenv_of_an_undeclared_variable_with_its_prototype_set_is_no_read(tmp_path: Path) -> None:
    user = (
        "import ctypes\nlibc = ctypes.CDLL(None)\nget = libc.getenv\nget.restype = ctypes.c_char_p\n"
        "get.argtypes = [ctypes.c_char_p]\ndef f():\n    return get(b'HOME'), libc.getpid()\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- G20: a name spelled as adjacent literals, an escape, or built with `+`


ENVUTIL = (
    "import os\n\ndef get_env(name, default=None):\n    return os.environ.get(name, default)\n\n"
    "class Env:\n    def get(self, name):\n        return os.environ.get(name)\n"
)


@pytest.mark.parametrize("user", [
    "from pkg.envutil import get_env\ndef f():\n    return get_env('SGLANG_' 'PAGE_SIZE')\n",
    "from pkg.envutil import get_env\ndef f():\n    return get_env('SGLANG_\\x50AGE_SIZE')\n",
    "from pkg.envutil import get_env\ndef f():\n    return get_env('SGLANG_' + 'PAGE_SIZE')\n",
    "from pkg.envutil import get_env\nPAGE = 'SGLANG_' + 'PAGE_SIZE'\ndef f():\n    return get_env(PAGE)\n",
    "import os\ndef f():\n    return os.environ.get('SGLANG_' 'PAGE_SIZE')\n",
    "import os\ndef f():\n    return os.getenv('SGLANG_\\x50AGE_SIZE')\n",
    "import os\ndef f():\n    return os.environ['SGLANG_' + 'PAGE_SIZE']\n",
    "import os\nPAGE = 'SGLANG_' + 'PAGE_SIZE'\ndef f():\n    return os.getenv(PAGE)\n",
])
def test_a_name_built_of_literals_is_resolved_like_any_literal(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "user.py": user})
    assert _keys(result) == {("f", PAGE)}, result.reads
    assert _fails(result)


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg.envutil import Env\ndef f():\n    return Env().get('SGLANG_' 'PAGE_SIZE')\n", PAGE),
    ("from pkg import envutil\ndef f():\n    return envutil.Env().get('SGLANG_PAGE_SIZE')\n", PAGE),
    ("from pkg.envutil import Env\ndef f(name):\n    return Env().get(name)\n", "$?"),
])
def test_an_env_helper_method_on_an_instance_made_on_the_spot_is_read(tmp_path: Path, user: str, leaf: str) -> None:
    result = _scan(tmp_path, {"envutil.py": ENVUTIL, "user.py": user})
    assert _keys(result) == {("f", leaf)}, result.reads


# ---- G12, G8: contexts the runtime hands back inside its objects


@pytest.mark.parametrize("user", [
    "from configbags.runtime.legacy import publish_legacy\ndef f(rec):\n"
    "    pub = publish_legacy(rec, role='launcher', package='pkg.config_bags')\n    return pub.context.state\n",
    "from pkg.config_bags.accessors import runner_view\ndef f():\n    return runner_view('draft')._context.state\n",
])
def test_a_context_inside_a_runtime_object_is_a_readback(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", "Context.state") in _keys(result), result.reads


# ---- G13, G16: a context entered other than by `with ctx.scoped() as c`


@pytest.mark.parametrize("user", [
    "import contextlib\n" + CTX + "def f():\n    with contextlib.ExitStack() as stack:\n"
    "        ctx = stack.enter_context(get_context().scoped())\n        return ctx.state.values['tp_size']\n",
    "import contextlib\n" + CTX + "async def f():\n    async with contextlib.AsyncExitStack() as st:\n"
    "        c = st.enter_context(get_context().restoring())\n        return c.state\n",
    "from contextlib import AsyncExitStack\n" + CTX + "async def f():\n    async with AsyncExitStack() as st:\n"
    "        c = await st.enter_async_context(get_context().scoped())\n        return c.state\n",
    CTX + "def f():\n    r = get_context().scoped()\n    c = r.__enter__()\n    try:\n        return c.state\n"
    "    finally:\n        r.__exit__(None, None, None)\n",
    "import contextlib\n" + CTX + "def f():\n    with contextlib.nullcontext(get_context()) as c:\n        return c.state\n",
    "import contextlib\n" + CTX + "def f():\n    with contextlib.nullcontext(enter_result=get_context()) as c:\n"
    "        return c.explain('tp_size')\n",
    # the runtime's own test helpers hand back the context they scope
    "from configbags.runtime.testing import scoped_override\ndef f():\n"
    "    with scoped_override(page_size=4) as ctx:\n        return ctx.state.values['tp_size']\n",
    "from configbags.runtime import testing\ndef f():\n    with testing.scoped_override(page_size=2) as c:\n"
    "        return c.explain('tp_size')\n",
    "def f():\n    from configbags.runtime.testing import scoped_override as so\n    with so(page_size=2) as c:\n"
    "        return c.server_info()\n",
    "from configbags.runtime.testing import published\ndef f(rec):\n    with published(rec) as ctx:\n"
    "        return ctx.state\n",
    # the runtime's pytest fixture hands the test the context
    "def f(config_scope):\n    return config_scope.state.values['tp_size']\n",
])
def test_a_context_entered_another_way_is_a_readback(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert {leaf for function, leaf in _keys(result) if function == "f"} & {
        "Context.state", "Context.explain", "Context.server_info"
    }, result.reads
    assert _fails(result)


def test_a_unittest_setup_storing_the_entered_context_is_followed(tmp_path: Path) -> None:
    user = CTX + (
        "class T:\n    def setUp(self):\n        self._scope = get_context().scoped()\n"
        "        self.ctx = self._scope.__enter__()\n        self.addCleanup(self._scope.__exit__, None, None, None)\n"
        "    def test_read(self):\n        return self.ctx.state\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert ("T.test_read", "Context.state") in _keys(result), result.reads


@pytest.mark.parametrize("user", [
    CTX + "def f(run):\n    return run(get_context().scoped())\n",
    CTX + "def f():\n    return get_context().scoped(page_size=4)\n",
    "from configbags.runtime.testing import scoped_override\ndef f():\n    return [scoped_override(page_size=4)]\n",
])
def test_a_scope_handed_on_is_a_readback_there(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == {("f", "Context.state")}, result.reads


@pytest.mark.parametrize("user", [
    CTX + "import contextlib\ndef f(path):\n    with contextlib.ExitStack() as stack:\n"
    "        fh = stack.enter_context(open(path))\n        stack.enter_context(get_context().scoped(page_size=4))\n"
    "        return fh.read()\n",
    "from configbags.runtime.testing import scoped_override\ndef f(work):\n    with scoped_override(page_size=4):\n"
    "        return work()\n",
    CTX + "import contextlib\ndef f(lock):\n    with contextlib.nullcontext(lock) as held:\n        return held.state\n",
])
def test_entering_a_scope_without_reading_the_context_back_is_no_read(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- G4: a child that prints the whole environment back


@pytest.mark.parametrize("command", [
    "['env', '-0']",
    "['/usr/bin/env']",
    "['printenv', '-0']",
    "['sh', '-c', 'env']",
    "'env | grep SGLANG', shell=True",
    "['sh', '-c', 'export -p']",
    "['bash', '-c', 'set']",
    "['bash', '-lc', 'declare -x']",
    "['env', 'FOO=1', 'printenv']",
    "['env', '-u', 'HOME', '--', 'env']",
    "'cd /tmp && FOO=1 env > dump.txt; cat dump.txt', shell=True",
    "['sh', '-c', 'echo $(env)']",
    "[sys.executable, '-c', 'import json, os; print(json.dumps(dict(os.environ)))']",
    "['python3', '-u', '-c', 'import os\\nfor k in os.environ: print(k)']",
    # by a prefix, or walked by another interpreter (attack seven, H5)
    "['bash', '-c', 'for v in ${!SGLANG_*}; do echo ${!v}; done']",
    "['bash', '-c', 'for v in $(compgen -e); do echo \"$v=${!v}\"; done']",
    "['awk', 'BEGIN{for (k in ENVIRON) if (k ~ /^SGLANG_/) print ENVIRON[k]}']",
    "['perl', '-e', 'print for grep { /^SGLANG_/ } keys %ENV']",
    "['node', '-e', 'console.log(JSON.stringify(process.env))']",
])
def test_a_child_printing_the_environment_back_is_a_whole_read(tmp_path: Path, command: str) -> None:
    user = f"import subprocess, sys\ndef f():\n    return subprocess.run({command}, capture_output=True).stdout\n"
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == {("f", "$?")}, result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "import os\ndef f():\n    return os.system('env > /tmp/env.txt')\n",
    "import os\ndef f():\n    return os.popen('printenv').read()\n",
    "import os\ndef f():\n    os.execvp('env', ['env', '-0'])\n",
    "import os\ndef f():\n    os.execl('/usr/bin/printenv', 'printenv')\n",
    "import asyncio\nasync def f():\n    return await asyncio.create_subprocess_exec('env', '-0')\n",
    "import subprocess\nDUMP = ['env', '-0']\ndef f():\n    return subprocess.check_output(DUMP)\n",
])
def test_every_launcher_printing_the_environment_back_is_a_whole_read(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == {("f", "$?")}, result.reads


@pytest.mark.parametrize("command", [
    # the doc's rule: starting a child with the environment reads nothing here
    "['env', 'FOO=1', 'python', 'train.py']",
    "'env CUDA_VISIBLE_DEVICES=0 make test', shell=True",
    "['/usr/bin/env', '-u', 'HOME', 'make']",
    # the child's environment is emptied first
    "['env', '-i', 'PATH=/bin', 'sh', '-c', 'env']",
    "['printenv', 'HOME']",
    "['bash', '-c', 'set -euo pipefail; make']",
    "['sh', '-c', 'export PATH=/opt/bin:$PATH; exec make']",
    "[sys.executable, '-c', 'print(1)']",
    "[sys.executable, '-c', 'import os; print(os.environ.get(\"HOME\"))']",
    "['git', 'status']",
    "'ls -l | grep env', shell=True",
    "['awk', '{print $1}', 'table.txt']",
    "['perl', '-ne', 'print if /x/', 'log.txt']",
])
def test_a_child_started_with_the_environment_is_no_read(tmp_path: Path, command: str) -> None:
    user = f"import subprocess, sys\ndef f():\n    return subprocess.run({command}, capture_output=True).stdout\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- G11: /proc/<pid>/environ built as a path


@pytest.mark.parametrize("path", [
    "f'/proc/{os.getpid()}/environ'",
    "'/proc/%d/environ' % os.getpid()",
    "os.path.join('/proc', 'self', 'environ')",
    "pathlib.Path('/proc/self') / 'environ'",
    "pathlib.Path('/proc', str(os.getpid()), 'environ')",
    "pathlib.Path('/proc').joinpath('self', 'environ')",
    "'/proc/thread-self/environ'",
    "'/proc/' + str(os.getppid()) + '/environ'",
    "'/proc/{}/environ'.format(os.getpid())",
    "f'/proc/self/task/{tid}/environ'",
    "base + '/environ'",
])
def test_the_environment_read_as_a_built_proc_path_is_a_whole_read(tmp_path: Path, path: str) -> None:
    user = (
        f"import os, pathlib\ndef f(tid):\n    base = f'/proc/{{os.getpid()}}'\n"
        f"    with open({path}, 'rb') as fh:\n        return fh.read()\n"
    )
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) == {("f", "$?")}, result.reads
    assert len(result.reads) == 1, result.reads


@pytest.mark.parametrize("path", [
    "f'/proc/{os.getpid()}/status'",
    "pathlib.Path('/proc/self') / 'cmdline'",
    "os.path.join('/etc', 'environ')",
    "os.path.join(root, 'environ')",
])
def test_other_proc_files_are_no_read(tmp_path: Path, path: str) -> None:
    user = f"import os, pathlib\ndef f(root):\n    with open({path}, 'rb') as fh:\n        return fh.read(), os.environ.get('HOME')\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not result.reads, result.reads


# ---- G15: code strings run by the standard library's profilers and interpreters


@pytest.mark.parametrize("call", [
    "timeit.Timer('out.append(get_server_args().tp_size)', globals={'out': out}).timeit(1)",
    "timeit.timeit('get_server_args().tp_size', setup='from pkg.server_args import get_server_args', number=1)",
    "timeit.repeat(stmt='get_server_args()', number=1)",
    "code.InteractiveInterpreter({'out': out}).runsource('out.append(get_server_args().tp_size)')",
    "code.InteractiveConsole().push('get_server_args().tp_size')",
    "cProfile.run('get_server_args().tp_size')",
    "cProfile.runctx('get_server_args().tp_size', {}, {})",
    "profile.run('get_server_args().tp_size')",
    "pdb.run('get_server_args().tp_size')",
    "cProfile.Profile().run('get_server_args().tp_size')",
    "prof = cProfile.Profile()\n    prof.runctx('get_server_args().tp_size', {}, {})",
    "timeit.timeit(STMT, number=1)",
    # an object from its address, where no analysis follows it
    "ref = id(get_server_args())\n    out.append(ctypes.cast(ref, ctypes.py_object).value.tp_size)",
    "ctypes.pythonapi.PyObject_GetAttr(ctypes.py_object(get_server_args()), ctypes.py_object('tp_size'))",
])
def test_a_code_string_run_by_the_standard_library_is_unresolved(tmp_path: Path, call: str) -> None:
    user = f"import ctypes, timeit, code, cProfile, profile, pdb\n{RAW}STMT = 'get_server_args()'\ndef f():\n    out = []\n    {call}\n    return out\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("f", "$?") in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("call", [
    "timeit.timeit(lambda: work(get_server_args), number=3)",
    "timeit.Timer(work).timeit(1)",
    "cProfile.Profile().enable()",
    "pdb.runcall(work, get_server_args)",
])
def test_a_callable_run_by_the_standard_library_is_no_read(tmp_path: Path, call: str) -> None:
    user = f"import timeit, cProfile, pdb\n{RAW}def work(get):\n    return get\ndef f():\n    return {call}\n"
    result = _scan(tmp_path, {"user.py": user})
    assert not {(fn, leaf) for fn, leaf in _keys(result) if leaf == "$?"}, result.reads


# ---- L4: `check --generated` beside a schema declaring a variable the copy lacks


NAMESPACE = """\
namespace: schedule
doc: d
leaves:
  page_size: {type: int, default: 1, help: h, owner: launcher, override: startup, env: SGLANG_PAGE_SIZE}
  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}
"""


def test_check_generated_holds_a_variable_declared_since_the_last_gen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "schedule.yaml").write_text(NAMESPACE)
    (schema / "roles.yaml").write_text(ROLES_YAML)
    scan = {"roots": ["pkg"], "excludes": [], "raw_accessor": "get_server_args", "record_class": "ServerArgs",
            "record_attributes": ["server_args"], "min_files": 1}
    (schema / "ratchet.yaml").write_text(yaml.safe_dump({"scan": scan, "allowlist": []}, sort_keys=False))
    _scan(tmp_path, {"tp.py": "import os\ndef tp():\n    return os.environ.get('SGLANG_TP_SIZE')\n"})
    check_generated = ["check", "--schema", str(schema), "--generated", "env2_gen_pkg", "--no-cache"]
    assert gen_main(["--schema", str(schema), "--out", str(tmp_path / "env2_gen_pkg"), "--package", "env2_gen_pkg"]) == 0
    try:
        assert main(check_generated) == 0
        # a leaf gets a variable; no gen yet
        (schema / "namespaces" / "schedule.yaml").write_text(
            NAMESPACE.replace("override: startup}\n", "override: startup, env: SGLANG_TP_SIZE}\n")
        )
        capsys.readouterr()
        assert main(check_generated) == 1
        out = capsys.readouterr().out
        assert "env2_gen_pkg.ratchet_allowlist is stale" in out and "SGLANG_TP_SIZE (leaf tp_size)" in out, out
        assert "run `configbags gen" in out, out
        assert "pkg/tp.py:3 (tp): a raw read of environment variable SGLANG_TP_SIZE" in out, out
        assert gen_main(["--schema", str(schema), "--out", str(tmp_path / "env2_gen_pkg"), "--package", "env2_gen_pkg"]) == 0
        assert main(check_generated) == 1
        out = capsys.readouterr().out
        assert "is stale" not in out and "environment variable SGLANG_TP_SIZE" in out, out
    finally:
        for name in [m for m in sys.modules if m.startswith("env2_gen_pkg")]:
            del sys.modules[name]


# ---- H9 (round seven): a launcher handed on, its command the arguments that follow


@pytest.mark.parametrize("user", [
    "import asyncio, subprocess\nasync def f():\n"
    "    return await asyncio.to_thread(subprocess.run, 'echo $SGLANG_PAGE_SIZE', shell=True)\n",
    "import asyncio, subprocess\nasync def f():\n    loop = asyncio.get_running_loop()\n"
    "    return await loop.run_in_executor(None, subprocess.check_output, ['sh', '-c', 'echo $SGLANG_PAGE_SIZE'])\n",
    "import multiprocessing, os\ndef f():\n"
    "    p = multiprocessing.Process(target=os.system, args=('echo $SGLANG_PAGE_SIZE > out',), daemon=True)\n"
    "    p.start()\n",
    "import functools, subprocess\ndef f():\n"
    "    run = functools.partial(subprocess.check_output, 'echo $SGLANG_PAGE_SIZE', shell=True)\n    return run()\n",
    "import concurrent.futures, subprocess\ndef f(pool: concurrent.futures.Executor):\n"
    "    return pool.submit(subprocess.run, ['env', '-0']).result()\n",
])
def test_a_launcher_handed_on_reads_what_its_command_names(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert _keys(result) & {("f", "$SGLANG_PAGE_SIZE"), ("f", "$?")}, result.reads
    assert _fails(result)


def test_a_launcher_handed_on_with_a_command_naming_nothing_reads_nothing(tmp_path: Path) -> None:
    user = ("import asyncio, subprocess\nasync def f():\n"
            "    return await asyncio.to_thread(subprocess.run, ['git', 'status'], check=True)\n")
    assert not _scan(tmp_path, {"user.py": user}).reads
