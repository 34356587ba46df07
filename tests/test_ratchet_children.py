"""Round seven's open false passes of the read ratchet (an outside attack): a child process
running a file of the project that is no scanned Python file (H4: a shell script, a Python
file whatever its suffix, a program by its shebang; H4b: a Makefile), a project helper
resolving a qualname it is given called with a spelled name (H6), and a pickle the module
spells whose GLOBAL opcodes import `os.getenv` or the record's getter (L1)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import attrs
import pytest
from ratchet_case import ACCESSORS, SETTINGS, read_keys, scan_pkg, write_pkg

from configbags.migrate.check import check
from configbags.migrate.scan import scan_tree
from configbags.migrate.scanmodel import Entry

PAGE = "$SGLANG_PAGE_SIZE"
SHOW = "#!/bin/sh\necho \"$SGLANG_PAGE_SIZE\"\n"
DUMP = "import os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"
MAKEFILE = "show:\n\t@echo $(SGLANG_PAGE_SIZE)\n"
HERE = "import os, subprocess, sys\nfrom pathlib import Path\nHERE = os.path.dirname(__file__)\nROOT = Path(__file__).parent\n"


def _run(command: str) -> str:
    return HERE + f"def f():\n    return subprocess.run({command}, capture_output=True).stdout\n"


# ---- H4, H4b: the file a child runs is read where the module names it


@pytest.mark.parametrize(("command", "files"), [
    ("['sh', os.path.join(HERE, 'scripts', 'show.sh')]", {"scripts/show.sh": SHOW}),
    ("['bash', '-e', ROOT / 'scripts' / 'show.sh']", {"scripts/show.sh": SHOW}),
    ("[os.path.join(HERE, 'scripts', 'show.sh')]", {"scripts/show.sh": SHOW}),  # its shebang runs it
    ("[str(Path(__file__).resolve().parent / 'scripts/show.sh')]", {"scripts/show.sh": SHOW}),
    ("f'sh {HERE}/scripts/show.sh', shell=True", {"scripts/show.sh": SHOW}),
    ("['sh', 'scripts/show.sh'], cwd=HERE", {"scripts/show.sh": SHOW}),
    ("['sh', '-c', 'cd /tmp && bash pkg/scripts/show.sh']", {"scripts/show.sh": SHOW}),
    ("['make', '-s', '-C', os.path.join(HERE, 'mk'), 'show']", {"mk/Makefile": MAKEFILE}),
    ("['make', '-f', ROOT / 'mk' / 'rules.mk', 'show']", {"mk/rules.mk": MAKEFILE}),
    ("['make', '-C', ROOT / 'mk']", {"mk/Makefile": "include common.mk\n", "mk/common.mk": MAKEFILE}),
    ("['env', 'A=1', 'sh', ROOT / 'scripts' / 'dump.sh']", {"scripts/dump.sh": "env | sort\n"}),
])
def test_a_childs_script_or_makefile_is_read_at_the_call_site(tmp_path: Path, command: str, files: dict[str, str]) -> None:
    result = scan_pkg(tmp_path, {"user.py": _run(command), **files})
    keys = read_keys(result)
    assert {("pkg/user.py", "f", PAGE)} <= keys or {("pkg/user.py", "f", "$?")} <= keys, result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


@pytest.mark.parametrize("script", ["tools/dump_env.txt", "tools/dumpenv"])
def test_a_file_run_by_python_is_scanned_as_python_whatever_its_suffix(tmp_path: Path, script: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": _run(f"[sys.executable, os.path.join(HERE, {script!r})]"), script: DUMP})
    assert ("pkg/" + script, "<module>", PAGE) in read_keys(result), result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


def test_a_python_file_run_by_a_child_reads_the_record_like_any_module(tmp_path: Path) -> None:
    tool = "from legacy.server_args import get_server_args\nprint(get_server_args().tp_size)\n"
    result = scan_pkg(tmp_path, {"user.py": _run("[sys.executable, '-u', ROOT / 'tools' / 'tp.cfg']"), "tools/tp.cfg": tool})
    assert ("pkg/tools/tp.cfg", "<module>", "tp_size") in read_keys(result), result.reads


@pytest.mark.parametrize(("user", "extra"), [
    # the script by a path the module does not spell
    ("import subprocess\ndef f(script):\n    return subprocess.run(['bash', script])\n", {}),
    ("import subprocess, sys\ndef f(path):\n    return subprocess.run([sys.executable, path])\n", {}),
    ("import subprocess\ndef f(folder):\n    return subprocess.run(['make', '-C', folder, 'all'])\n", {}),
    # a file the module places that is not there, or is no text
    (_run("['sh', os.path.join(HERE, 'scripts', 'gone.sh')]"), {}),
    (_run("[ROOT / 'bin' / 'tool']"), {"bin/tool": "\x7fELF\x00\x00\x00binary"}),
])
def test_a_child_running_a_file_the_scanner_cannot_read_is_unresolved(
    tmp_path: Path, user: str, extra: dict[str, str]
) -> None:
    result = scan_pkg(tmp_path, {"user.py": user, **extra})
    rows = [r for r in result.reads if r.file == "pkg/user.py"]
    assert [(r.function, r.leaf, r.form) for r in rows] == [("f", "$?", "child_file")], result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


@pytest.mark.parametrize(("command", "files"), [
    ("['sh', os.path.join(HERE, 'build.sh')]", {"build.sh": "#!/bin/sh\necho $HOME\nmake -j4\n"}),
    ("['make', '-C', ROOT / 'mk', 'all']", {"mk/Makefile": "all:\n\t@echo $(CC)\n"}),
    ("[sys.executable, ROOT / 'tool.py']", {"tool.py": "print(1)\n"}),  # a scanned module: read as one
    ("['python', 'train.py']", {}),  # relative, and not in the project: run from anywhere
    ("['make']", {}),
    ("['/bin/true']", {}),  # outside the project and the roots
    ("[sys.executable, '-m', 'pip', 'list']", {}),
])
def test_a_child_running_a_file_that_names_no_declared_variable_reads_nothing(
    tmp_path: Path, command: str, files: dict[str, str]
) -> None:
    assert not read_keys(scan_pkg(tmp_path, {"user.py": _run(command), **files}))


def test_an_excluded_file_run_by_a_child_stays_excluded(tmp_path: Path) -> None:
    settings = attrs.evolve(SETTINGS, excludes=("pkg/tools/*",))
    files = {"user.py": _run("[sys.executable, ROOT / 'tools' / 'dump_env.txt']"), "tools/dump_env.txt": DUMP}
    assert not read_keys(scan_pkg(tmp_path, files, settings))


def test_a_scanned_python_file_run_by_a_child_is_read_once(tmp_path: Path) -> None:
    result = scan_pkg(tmp_path, {"user.py": _run("[sys.executable, ROOT / 'tool.py']"), "tool.py": DUMP})
    assert read_keys(result) == {("pkg/tool.py", "<module>", PAGE)}, result.reads


def test_the_script_is_read_afresh_by_a_warm_check(tmp_path: Path) -> None:
    files = {"user.py": _run("['sh', ROOT / 'show.sh']"), "show.sh": "echo hi\n"}
    write_pkg(tmp_path, files)
    cache = tmp_path / "cache.json"
    settings = SETTINGS
    assert not scan_tree(tmp_path, settings, cache_path=cache).reads
    (tmp_path / "pkg" / "show.sh").write_text(SHOW)
    warm = scan_tree(tmp_path, settings, cache_path=cache)
    # (at the call, and in the script as its own file)
    assert {(r.file, r.leaf) for r in warm.reads} == {("pkg/user.py", PAGE), ("pkg/show.sh", PAGE)}
    assert warm.reads == scan_tree(tmp_path, settings).reads == scan_tree(tmp_path, settings, cache_path=cache).reads


# ---- H6: a resolver helper called with a spelled name is judged at the call


RESOLVERS = """\
import importlib
def resolve_obj_by_qualname(qualname):
    module_name, obj_name = qualname.rsplit('.', 1)
    module = importlib.import_module(module_name)
    return getattr(module, obj_name)
def import_from(mod, name):
    return getattr(importlib.import_module(mod), name)
def load_obj(spec):
    module, _, attr = spec.partition(':')
    return getattr(importlib.import_module(module), attr)
"""
GENERATED = {
    "config_bags/__init__.py": "",
    "config_bags/accessors.py": "def get_context(): ...\ndef get_server_args(): ...\n",
}
# the helpers' own `$?`, allowlisted as a plugin loader's would be
HELPER_ENTRIES = [
    Entry("pkg/o1_utils.py", name, "$?", "imports the plugins the config names")
    for name in ("resolve_obj_by_qualname", "import_from", "load_obj")
]


@pytest.mark.parametrize(("user", "leaf"), [
    ("from pkg.o1_utils import resolve_obj_by_qualname\ndef f():\n"
     "    return resolve_obj_by_qualname('legacy.server_args.get_server_args')().tp_size\n", "tp_size"),
    ("from pkg.o1_utils import resolve_obj_by_qualname\ndef f():\n"
     "    return resolve_obj_by_qualname('os.getenv')('SGLANG_PAGE_SIZE')\n", PAGE),
    ("from pkg.o1_utils import import_from\ndef f():\n"
     "    return import_from('pkg.config_bags.accessors', 'get_context')().state\n", "Context.state"),
    ("import pkg.o1_utils as u\nHOOK = 'legacy.server_args:get_server_args'\ndef f():\n"
     "    return u.load_obj(HOOK)().tp_size\n", "tp_size"),
    ("from pkg.o1_utils import import_from\ndef f():\n    return import_from(name='getenv', mod='os')('SGLANG_PAGE_SIZE')\n",
     PAGE),
])
def test_a_resolver_helper_called_with_a_spelled_name_is_the_import_it_stands_for(
    tmp_path: Path, user: str, leaf: str
) -> None:
    result = scan_pkg(tmp_path, {"o1_utils.py": RESOLVERS, "user.py": user, **GENERATED})
    assert ("pkg/user.py", "f", leaf) in read_keys(result), result.reads
    assert not check(result, HELPER_ENTRIES, ACCESSORS, min_files=1).ok


@pytest.mark.parametrize("table", [
    "PLUGINS = {'args': ('legacy.server_args', 'get_server_args')}\n"
    "def load(kind):\n    mod, name = PLUGINS[kind]\n    return getattr(importlib.import_module(mod), name)\n",
    "PLUGINS = {'args': 'legacy.server_args.get_server_args'}\n"
    "def load(kind):\n    mod, _, name = PLUGINS.get(kind).rpartition('.')\n"
    "    try:\n        module = importlib.import_module(mod)\n    except ImportError:\n        raise\n"
    "    return getattr(module, name)\n",
])
def test_a_plugin_table_helper_called_with_a_spelled_key_is_judged_at_the_call(tmp_path: Path, table: str) -> None:
    user = "import importlib\n" + table + "def f():\n    return load('args')().tp_size\n"
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "tp_size") in read_keys(result), result.reads
    entries = [Entry("pkg/user.py", "load", "$?", "imports the plugin the table names")]
    assert not check(result, entries, ACCESSORS, min_files=1).ok


def test_a_resolver_helper_called_with_a_name_not_spelled_stays_unresolved_in_the_helper(tmp_path: Path) -> None:
    user = "from pkg.o1_utils import resolve_obj_by_qualname\ndef f(name):\n    return resolve_obj_by_qualname(name)\n"
    harmless = "from pkg.o1_utils import import_from\ndef g():\n    return import_from('json', 'dumps')({})\n"
    result = scan_pkg(tmp_path, {"o1_utils.py": RESOLVERS, "user.py": user, "other.py": harmless})
    assert {k for k in read_keys(result) if k[0] != "pkg/o1_utils.py"} == set(), result.reads
    assert ("pkg/o1_utils.py", "resolve_obj_by_qualname", "$?") in read_keys(result)
    assert check(result, HELPER_ENTRIES, ACCESSORS, min_files=1).ok


# ---- L1: a pickle the module spells is what its opcodes build


@pytest.mark.parametrize(("user", "leaf"), [
    ("import pickle\ndef f():\n    return pickle.loads(b'cos\\ngetenv\\n(VSGLANG_PAGE_SIZE\\ntR.')\n", PAGE),
    ("import _pickle\ndef f():\n    return _pickle.loads(b'cos\\nenviron\\n.')['SGLANG_PAGE_SIZE']\n", PAGE),
    (f"import pickle, io\nBLOB = {pickle.dumps(os.getenv, protocol=4)!r}\ndef f():\n"
     "    return pickle.Unpickler(io.BytesIO(BLOB)).load()('SGLANG_PAGE_SIZE')\n", PAGE),
    (f"from pickle import load\nimport io\ndef f():\n    return load(io.BytesIO({pickle.dumps(os.getenv)!r}))\n", "$?"),
    ("import pickle\ndef f():\n    return pickle.loads(b'clegacy.server_args\\nget_server_args\\n)R.').tp_size\n", "tp_size"),
    ("import pickle\ndef f():\n    return pickle.loads(b'(S\"SGLANG_PAGE_SIZE\"\\nios\\ngetenv\\n.')\n", PAGE),
    # an opcode not followed (PERSID): whatever the pickle imports is handed on
    ("import pickle\ndef f():\n    return pickle.loads(b'cos\\ngetenv\\nPx\\n(VSGLANG_PAGE_SIZE\\ntR.')\n", "$?"),
])
def test_a_spelled_pickle_importing_the_environment_or_the_record_is_read(tmp_path: Path, user: str, leaf: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", leaf) in read_keys(result), result.reads
    assert not check(result, [], ACCESSORS, min_files=1).ok


@pytest.mark.parametrize("user", [
    f"import pickle\ndef f():\n    return pickle.loads({pickle.dumps({'a': [1, 2.5, 'x'], 'b': (None, True)})!r})\n",
    f"import pickle\ndef f():\n    return pickle.loads({pickle.dumps(Path('a'))!r})\n",  # imports pathlib only
    "import pickle\ndef f(blob):\n    return pickle.loads(blob)\n",
])
def test_a_pickle_of_plain_values_or_not_spelled_reads_nothing(tmp_path: Path, user: str) -> None:
    assert not read_keys(scan_pkg(tmp_path, {"user.py": user}))
