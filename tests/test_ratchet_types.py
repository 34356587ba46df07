"""Round three's outside attack on the read ratchet, per file: what the types say is the
record (annotations, casts, isinstance, subclasses, annotated fields), readbacks parsed
back, the environment read outside Python, and files the scan used to leave unread.
Each case really performs a raw read, and each got `ratchet ok` before."""

from __future__ import annotations

import py_compile
from pathlib import Path

import pytest
import yaml

from configbags.migrate.check import check
from configbags.migrate.cli import main as ratchet_main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_source, scan_tree

REPO = Path(__file__).resolve().parent.parent

SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE",))
HEAD = (
    "import typing\n"
    "from typing import Iterable, Optional, Sequence, Union\n"
    "import legacy.server_args as S\n"
    "from legacy.server_args import ServerArgs\n"
)  # four lines: the cases below start at line 5


def _reported(body: str, settings: ScanSettings = SETTINGS) -> set[tuple[str, str, int]]:
    result = scan_source((HEAD + body).encode(), settings)
    assert result.problem is None, result.problem
    return {(function, leaf, line) for function, leaf, line, *_ in result.reads}


# ---- 1. annotations and narrowings the scanner did not see as the record

ANNOTATED = {
    "type alias": ("Rec = S.ServerArgs\ndef f(a: Rec):\n    return a.tp_size\n", {("f", "tp_size", 7)}),
    "alias of an alias, used first": (
        'def f(a: "Recs"):\n    return a[0].tp_size\nRecs = list[Rec]\nRec = Optional[S.ServerArgs]\n',
        {("f", "tp_size", 6)},
    ),
    "declared TypeAlias string": (
        'Rec: typing.TypeAlias = "S.ServerArgs"\ndef f(a: Rec):\n    return a.tp_size\n', {("f", "tp_size", 7)}
    ),
    "TypeVar bound": (
        'T = typing.TypeVar("T", bound=ServerArgs)\ndef f(a: T):\n    return a.tp_size\n', {("f", "tp_size", 7)}
    ),
    "union with a string": ('def f(a: Union[int, "S.ServerArgs"]):\n    return a.tp_size\n', {("f", "tp_size", 6)}),
    "string inside Optional": ('def f(a: "Optional[\'S.ServerArgs\']"):\n    return a.tp_size\n', {("f", "tp_size", 6)}),
    "list index": ("def f(xs: list[ServerArgs]):\n    return xs[0].tp_size\n", {("f", "tp_size", 6)}),
    "list loop": ("def f(xs: list[ServerArgs]):\n    for a in xs:\n        print(a.tp_size)\n", {("f", "tp_size", 7)}),
    "tuple": ("def f(xs: tuple[ServerArgs, ...]):\n    return xs[-1].tp_size\n", {("f", "tp_size", 6)}),
    "dict values": (
        "def f(xs: dict[str, ServerArgs]):\n    return xs['a'].tp_size, [v.page_size for v in xs.values()]\n",
        {("f", "tp_size", 6), ("f", "page_size", 6)},
    ),
    "dict items and get": (
        "def f(xs: dict[str, ServerArgs]):\n    for k, v in xs.items():\n        v.tp_size\n    return xs.get('a').dp_size\n",
        {("f", "tp_size", 7), ("f", "dp_size", 8)},
    ),
    "Sequence and Iterable": (
        "def f(xs: Sequence[ServerArgs], ys: Iterable['S.ServerArgs']):\n"
        "    for y in sorted(ys):\n        y.page_size\n    return next(iter(xs)).tp_size\n",
        {("f", "page_size", 7), ("f", "tp_size", 8)},
    ),
    "typing.cast": ("def f(x):\n    return typing.cast(ServerArgs, x).tp_size\n", {("f", "tp_size", 6)}),
    "cast under aliases, to a string": (
        "import typing as t\nfrom typing import cast as c\nC2 = t.cast\n"
        "def f(x):\n    y = t.cast('S.ServerArgs', x)\n    return y.tp_size, c(ServerArgs, x).page_size, C2(ServerArgs, x).dp_size\n",
        {("f", "tp_size", 10), ("f", "page_size", 10), ("f", "dp_size", 10)},
    ),
    "cast to a container": ("def f(x):\n    return typing.cast(list[ServerArgs], x)[0].tp_size\n", {("f", "tp_size", 6)}),
    "isinstance": ("def f(x):\n    if isinstance(x, S.ServerArgs):\n        return x.tp_size\n", {("f", "tp_size", 7)}),
    "assert isinstance, a tuple of classes": (
        "def f(x):\n    assert isinstance(x, (int, ServerArgs))\n    return x.tp_size\n", {("f", "tp_size", 7)}
    ),
    "early return": (
        "def f(x):\n    if not isinstance(x, ServerArgs):\n        return None\n    return x.tp_size\n",
        {("f", "tp_size", 8)},
    ),
    "isinstance of a self attribute": (
        "class R:\n    def f(self):\n        if isinstance(self.a, ServerArgs):\n            return self.a.tp_size\n",
        {("R.f", "tp_size", 8)},
    ),
    "subclass": (
        "class Sub(S.ServerArgs):\n    def g(self):\n        return self.tp_size\n"
        "def f(x: Sub):\n    return x.page_size, Sub.base_gpu_id\n"
        "def h():\n    return Sub(model_path='m').dp_size\n"
        "class Deeper(Sub):\n    pass\n"
        "def k(x: Optional[Deeper]):\n    return x.nnodes\n",
        {("Sub.g", "tp_size", 7), ("f", "page_size", 9), ("f", "base_gpu_id", 9), ("h", "dp_size", 11),
         ("k", "nnodes", 15)},
    ),
    "annotated module variable": ("rec: ServerArgs = make()\ndef f():\n    return rec.tp_size\n", {("f", "tp_size", 7)}),
    "annotated module container": (
        "recs: list[ServerArgs] = []\ndef f():\n    return recs[0].tp_size\n", {("f", "tp_size", 7)}
    ),
    "dataclass field in another class": (
        "import dataclasses\n@dataclasses.dataclass\nclass Holder:\n    args: ServerArgs\n    many: list['S.ServerArgs']\n"
        "    def f(self):\n        return self.args.tp_size, self.many[0].page_size\n",
        {("Holder.f", "tp_size", 11), ("Holder.f", "page_size", 11)},
    ),
}


@pytest.mark.parametrize("case", sorted(ANNOTATED))
def test_what_the_types_say_is_the_record_is_read(case: str) -> None:
    body, expected = ANNOTATED[case]
    assert _reported(body) >= expected


def test_containers_and_other_annotations_are_not_the_record_themselves() -> None:
    # a list of records is no record: its own attributes are no leaves
    body = (
        "def f(xs: list[ServerArgs], g: typing.Callable[[ServerArgs], int], n: int):\n"
        "    return xs.count, g.__name__, n.real\n"
    )
    assert _reported(body) == set()


# ---- 2. readbacks parsed back


def test_context_readbacks_parsed_back_are_operator_readbacks() -> None:
    body = (
        "import json\n"
        "from configbags.generated.accessors import get_context\n"
        "from configbags.runtime.dist import export_state\n"
        "def f():\n"
        "    return get_context().server_info()['record']['tp_size']\n"
        "def g():\n"
        "    ctx = get_context()\n"
        "    return ctx.explain('tp_size')['value'], getattr(ctx, 'hash_factors')()\n"
        "def h():\n"
        "    return json.loads(export_state())['record']['tp_size']\n"
    )
    assert _reported(body) == {
        ("f", "Context.server_info", 9),
        ("g", "Context.explain", 12),
        ("g", "Context.hash_factors", 12),
        ("h", "dist.state_dict", 14),
    }


def test_a_readback_method_of_something_else_is_no_readback() -> None:
    body = "def f(server, model):\n    return server.server_info(), model.explain('x')\n"
    assert _reported(body) == set()


# ---- 3. the environment read outside Python, where the module spells it

CHILD_READS = {
    "sh -c": ("import subprocess\nsubprocess.run(['sh', '-c', 'echo $SGLANG_PAGE_SIZE'])\n", {"$SGLANG_PAGE_SIZE"}),
    "os.system": ("import os\nos.system('echo ${SGLANG_PAGE_SIZE}')\n", {"$SGLANG_PAGE_SIZE"}),
    "os.popen, renamed": ("from os import popen as p\np('echo %SGLANG_PAGE_SIZE%').read()\n", {"$SGLANG_PAGE_SIZE"}),
    "shell=True with a literal": (
        "import subprocess as sp\nsp.check_output('printenv SGLANG_PAGE_SIZE', shell=True)\n", {"$SGLANG_PAGE_SIZE"}
    ),
    "a module constant, an f-string part": (
        "import subprocess\nCMD = 'echo $SGLANG_' + 'PAGE_SIZE'\ndef f(x):\n"
        "    subprocess.Popen(CMD, shell=True)\n    subprocess.call(f'{x} $SGLANG_PAGE_SIZE')\n",
        {"$SGLANG_PAGE_SIZE"},
    ),
    "python -c in bytes": (
        "import subprocess\nsubprocess.run([b'python', b'-c', b'import os; os.environ[\"SGLANG_PAGE_SIZE\"]'])\n",
        {"$SGLANG_PAGE_SIZE"},
    ),
    "asyncio": (
        "import asyncio\nasync def f():\n    await asyncio.create_subprocess_shell('echo $SGLANG_PAGE_SIZE')\n",
        {"$SGLANG_PAGE_SIZE"},
    ),
    "os.execlp and os.spawnl": (
        "import os\nos.execlp('sh', 'sh', '-c', 'echo $SGLANG_PAGE_SIZE')\n"
        "os.spawnl(os.P_WAIT, '/bin/sh', 'sh', '-c', 'echo $SGLANG_PAGE_SIZE')\n",
        {"$SGLANG_PAGE_SIZE"},
    ),
    "ctypes CDLL(None).getenv": (
        "import ctypes\nctypes.CDLL(None).getenv(b'SGLANG_PAGE_SIZE')\n", {"$SGLANG_PAGE_SIZE"}
    ),
    "libc aliases, secure_getenv, by item": (
        "import ctypes as C\nfrom ctypes import CDLL as L\nlibc = C.CDLL('libc.so.6')\n"
        "get = libc.secure_getenv\nget(b'SGLANG_PAGE_SIZE')\nL(None)['getenv'](b'SGLANG_PAGE_SIZE')\n"
        "C.cdll.LoadLibrary('libc.so.6').getenv(b'SGLANG_PAGE_SIZE')\n",
        {"$SGLANG_PAGE_SIZE"},
    ),
    "C getenv with a name the module does not show": (
        "import ctypes\nlibc = ctypes.CDLL(None)\ndef f(name, names):\n"
        "    return libc.getenv(name), list(map(libc.getenv, names))\n",
        {"$?"},
    ),
}


@pytest.mark.parametrize("case", sorted(CHILD_READS))
def test_the_environment_read_by_a_child_process_or_c_is_read(case: str) -> None:
    body, leaves = CHILD_READS[case]
    result = scan_source(body.encode(), SETTINGS)
    assert result.problem is None
    assert {leaf for _, leaf, *_ in result.reads} == leaves


def test_a_child_environment_and_a_command_the_module_does_not_show_are_not_reads() -> None:
    body = (
        "import os\nimport subprocess\n"
        "def f(cmd, template):\n"
        "    env = {'SGLANG_PAGE_SIZE': '4'}\n"
        "    subprocess.run(['python', 'tool.py'], env={'SGLANG_PAGE_SIZE': '4'})\n"
        "    os.execve('/bin/sh', ['sh', '-c', cmd], {'SGLANG_PAGE_SIZE': '4'})\n"
        "    subprocess.run(template, shell=True)\n"
        "    subprocess.run(['sh', '-c', cmd])\n"
        "    os.system('echo SGLANG_PAGE_SIZE_MAX')\n"  # another variable
    )
    result = scan_source(body.encode(), SETTINGS)
    assert result.problem is None
    assert result.reads == ()


# ---- 4. no file left unread: forged headers, compiled code, folders skipped by name

HEADER = "# Code generated by configbags gen from schema/. DO NOT EDIT.\n"
RAW_READ = "from configbags.generated.accessors import get_server_args\nx = get_server_args().tp_size\n"


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def test_a_forged_generated_package_hides_no_read(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/fake/accessors.py": HEADER,
        "pkg/fake/ratchet_allowlist.py": HEADER,
        "pkg/fake/evil.py": HEADER + RAW_READ,
        "pkg/elsewhere.py": HEADER + RAW_READ,
    })
    result = scan_tree(tmp_path, SETTINGS)
    assert sorted(read.file for read in result.reads) == ["pkg/elsewhere.py", "pkg/fake/evil.py"]
    assert set(result.generated_files) == {"pkg/fake/accessors.py", "pkg/fake/ratchet_allowlist.py"}


def test_the_real_generated_package_is_still_listed_as_generated() -> None:
    settings = ScanSettings(roots=("generated",), env_vars=("SGLANG_API_KEY", "SGLANG_LOG_LEVEL"))
    result = scan_tree(REPO, settings)
    assert result.reads == () and result.violations == ()
    assert "generated/accessors.py" in result.generated_files and result.files_parsed == 0


def _pyc(source: str, mode: py_compile.PycInvalidationMode, tmp_path: Path) -> bytes:
    src = tmp_path / "compile_me.py"
    src.write_text(source)
    out = tmp_path / "compiled.pyc"
    py_compile.compile(str(src), cfile=str(out), invalidation_mode=mode, doraise=True)
    return out.read_bytes()


def test_compiled_code_the_ratchet_cannot_read_fails_the_check(tmp_path: Path) -> None:
    unchecked = _pyc(RAW_READ, py_compile.PycInvalidationMode.UNCHECKED_HASH, tmp_path)
    checked = _pyc("x = 1\n", py_compile.PycInvalidationMode.CHECKED_HASH, tmp_path)
    stamped = _pyc("x = 1\n", py_compile.PycInvalidationMode.TIMESTAMP, tmp_path)
    _write(tmp_path, {
        "pkg/gone/__pycache__/mod.cpython-311.pyc": stamped,  # no pkg/gone/mod.py: never imported
        "pkg/bare.pyc": stamped,  # imported as `bare`: no bare.py beside it
        "pkg/hidden.py": "x = 1\n",  # what the eye reads; Python runs the .pyc
        "pkg/__pycache__/hidden.cpython-311.pyc": unchecked,
        "pkg/fine.py": "x = 1\n",
        "pkg/__pycache__/fine.cpython-311.pyc": checked,
        "pkg/__pycache__/fine.cpython-312.pyc": stamped,
    })
    result = scan_tree(tmp_path, SETTINGS)
    problems = dict(result.problems)
    assert set(problems) == {"pkg/bare.pyc", "pkg/__pycache__/hidden.cpython-311.pyc"}
    assert "imports it as `bare`" in problems["pkg/bare.pyc"]
    assert "unchecked hash-based" in problems["pkg/__pycache__/hidden.cpython-311.pyc"]
    assert not check(result, [], {}, min_files=1).ok


def test_a_folder_skipped_by_name_is_scanned_unless_it_plainly_is_one(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/node_modules/__init__.py": RAW_READ,  # `import pkg.node_modules`: a package
        "pkg/.venv/tool.py": RAW_READ,  # no pyvenv.cfg: no virtualenv, only code
        "pkg/.git/hook.py": RAW_READ,  # no HEAD: no repository
        "pkg/env/.venv/pyvenv.cfg": "home = /usr/bin\n",
        "pkg/env/.venv/lib/site.py": RAW_READ,
        "pkg/vcs/.git/HEAD": "ref: refs/heads/main\n",
        "pkg/vcs/.git/x.py": RAW_READ,
        "pkg/js/node_modules/gyp/gyp.py": RAW_READ,
        "pkg/.mypy_cache/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n",
        "pkg/.mypy_cache/x.py": RAW_READ,
    })
    result = scan_tree(tmp_path, SETTINGS)
    assert sorted(read.file for read in result.reads) == [
        "pkg/.git/hook.py", "pkg/.venv/tool.py", "pkg/node_modules/__init__.py"
    ]
    assert result.skipped_folders == ("pkg/.mypy_cache", "pkg/env/.venv", "pkg/js/node_modules", "pkg/vcs/.git")


def test_a_command_held_in_a_local_name_is_read() -> None:
    body = (
        "import os\nimport subprocess\n"
        "def f(extra):\n"
        "    cmd = ['sh', '-c']\n"
        "    cmd.append('echo $SGLANG_PAGE_SIZE')\n"
        "    subprocess.run(cmd + [extra])\n"
        "def g():\n"
        "    line = ' '.join(['printenv', 'SGLANG_PAGE_SIZE'])\n"
        "    os.system(line)\n"
    )
    result = scan_source(body.encode(), SETTINGS)
    assert {(function, leaf) for function, leaf, *_ in result.reads} == {
        ("f", "$SGLANG_PAGE_SIZE"), ("g", "$SGLANG_PAGE_SIZE")
    }


# ---- from a clean project, as the attacker ran it

ATTACK_FILES = {
    "alias.py": HEAD + "Rec = S.ServerArgs\ndef f(a: Rec):\n    return a.tp_size\n",
    "union.py": HEAD + 'def f(a: Union[int, "S.ServerArgs"]):\n    return a.tp_size\n',
    "container.py": HEAD + "def f(xs: list[ServerArgs]):\n    for a in xs:\n        print(a.tp_size)\n",
    "cast.py": HEAD + "def f(x):\n    return typing.cast('S.ServerArgs', x).tp_size\n",
    "narrowed.py": HEAD + "def f(x):\n    if isinstance(x, S.ServerArgs):\n        return x.tp_size\n",
    "subclass.py": HEAD + "class Sub(S.ServerArgs):\n    def g(self):\n        return self.tp_size\n",
    "server_info.py": "from configbags.generated.accessors import get_context\n"
                      "def f():\n    return get_context().server_info()['record']['tp_size']\n",
    "child.py": "import subprocess\ndef f():\n    return subprocess.run(['sh', '-c', 'echo $SGLANG_PAGE_SIZE'])\n",
    "clib.py": "import ctypes\ndef f():\n    return ctypes.CDLL(None).getenv(b'SGLANG_PAGE_SIZE')\n",
    "fake/accessors.py": HEADER,
    "fake/ratchet_allowlist.py": HEADER,
    "fake/forged.py": HEADER + RAW_READ,
    "node_modules/__init__.py": RAW_READ,
}


def test_the_attack_fails_from_a_clean_project_and_init_never_baselines_the_readback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "pkg", dict(ATTACK_FILES))
    (tmp_path / "pkg" / "gone.pyc").write_bytes(b"\0" * 16)
    schema = tmp_path / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n"
        "  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
        "  page_size: {type: int, default: 1, help: h, owner: launcher, override: startup, env: SGLANG_PAGE_SIZE}\n"
    )
    scan = {"roots": ["pkg"], "excludes": [], "raw_accessor": "get_server_args", "record_class": "ServerArgs",
            "record_attributes": ["server_args"], "min_files": 1}
    (schema / "ratchet.yaml").write_text(yaml.safe_dump({"scan": scan, "allowlist": []}, sort_keys=False))
    (schema / "roles.yaml").write_text(ROLES_YAML)
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1
    out = capsys.readouterr().out
    failing = {line.split(":", 1)[0] for line in out.splitlines() if line.startswith("pkg/")}
    expected = {f"pkg/{name}" for name in ATTACK_FILES if not name.startswith("fake/")} | {"pkg/fake/forged.py"}
    assert failing == expected | {"pkg/gone.pyc"}, out
    (tmp_path / "pkg" / "gone.pyc").unlink()
    assert ratchet_main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert "Context.server_info" not in {entry["leaf"] for entry in allowlist}
    capsys.readouterr()
    assert ratchet_main(["check", "--schema", str(schema), "--no-cache"]) == 1
    assert "pkg/server_info.py:3 (f): an operator readback in role code: `server_info()`" in capsys.readouterr().out


MORE_TYPED = {
    "return annotation": (
        'def load() -> "S.ServerArgs":\n    return unpickle()\ndef f():\n    return load().tp_size\n',
        {("f", "tp_size", 8)},
    ),
    "method returning a container": (
        "class R:\n    def all(self) -> list[ServerArgs]:\n        return []\n"
        "    def f(self):\n        return self.all()[0].tp_size\n",
        {("R.f", "tp_size", 9)},
    ),
    "starred parameters": (
        "def f(*recs: ServerArgs, **named: 'S.ServerArgs'):\n    return recs[0].tp_size, named['a'].page_size\n",
        {("f", "tp_size", 6), ("f", "page_size", 6)},
    ),
    "a tuple of classes for isinstance": (
        "RECORDS = (ServerArgs, dict)\ndef f(x):\n    if isinstance(x, RECORDS):\n        return x.tp_size\n",
        {("f", "tp_size", 8)},
    ),
    "type(x) is": ("def f(x):\n    if type(x) is S.ServerArgs:\n        return x.tp_size\n", {("f", "tp_size", 7)}),
    "match a class pattern": (
        "def f(x):\n    match x:\n        case ServerArgs() as y:\n            return y.tp_size, x.page_size\n",
        {("f", "tp_size", 8), ("f", "page_size", 8)},
    ),
}


@pytest.mark.parametrize("case", sorted(MORE_TYPED))
def test_more_of_what_the_types_say(case: str) -> None:
    body, expected = MORE_TYPED[case]
    assert _reported(body) >= expected


def test_c_getenv_through_cffi() -> None:
    body = "import cffi\nffi = cffi.FFI()\nffi.cdef('char *getenv(const char *);')\nC = ffi.dlopen(None)\nC.getenv(b'SGLANG_PAGE_SIZE')\n"
    assert {leaf for _, leaf, *_ in scan_source(body.encode(), SETTINGS).reads} == {"$SGLANG_PAGE_SIZE"}


def test_a_script_without_a_suffix_that_python_runs_is_scanned(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/bin/launch": "#!/usr/bin/env python3\n" + RAW_READ,
        "pkg/bin/notes": "#!/bin/sh\necho get_server_args\n",
        "pkg/Makefile": "all:\n\tpython -c 'x'\n",
    })
    result = scan_tree(tmp_path, SETTINGS)
    assert result.files == ("pkg/bin/launch",)
    assert [(read.file, read.leaf) for read in result.reads] == [("pkg/bin/launch", "tp_size")]


def test_export_state_from_its_private_module_and_builtins_isinstance() -> None:
    body = (
        "import builtins\nimport json\nfrom configbags.runtime.dist._state import export_state as e\n"
        "def f():\n    return json.loads(e())['record']['tp_size']\n"
        "def g(x):\n    if builtins.isinstance(x, ServerArgs):\n        return x.tp_size\n"
    )
    assert _reported(body) >= {("f", "dist.state_dict", 9), ("g", "tp_size", 12)}
