"""Round eight's false passes of the read ratchet about loaders (an outside attack): a
string spelling a door's dotted name handed to a loader the scanner does not know
(entry points, logging.config, uvicorn, pydantic, jinja2, mock), unsafe deserializers
(`find_class`, PyYAML's `!!python/` tags and unsafe loaders), code in string annotations
and `.pth` files, code-string runners in any module, `os` through the standard library's
private aliases, and a package module named like a standard library one."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW
from ratchet_case import fails as _fails
from ratchet_case import read_keys as _keys
from ratchet_case import scan_pkg as _scan

GENERATED = {
    "config_bags/__init__.py": "",
    "config_bags/accessors.py": "def get_context(): ...\ndef get_server_args(): ...\ncfg = None\n",
}


def _user(tmp_path: Path, user: str, extra: dict[str, str] | None = None) -> set[tuple[str, str, str]]:
    result = _scan(tmp_path, {**GENERATED, **(extra or {}), "user.py": user})
    keys = {key for key in _keys(result) if key[0] == "pkg/user.py"}
    assert bool(keys) == _fails(result) or extra, result.reads
    return keys


# ---- R1: a string spelling a door's dotted name is the import it names, whatever takes it

@pytest.mark.parametrize(("user", "leaf"), [
    ("from importlib.metadata import EntryPoint\ndef f():\n"
     "    ep = EntryPoint(name='a', value='legacy.server_args:get_server_args', group='g')\n"
     "    return ep.load()().tp_size\n", "*"),
    ("import logging.config\ndef f():\n"
     "    return logging.config.BaseConfigurator({}).resolve('legacy.server_args.get_server_args')().tp_size\n", "*"),
    ("import logging.config\ndef f():\n"
     "    conf = logging.config.DictConfigurator({'env': 'ext://os.environ'}).config\n"
     "    return conf['env']['SGLANG_PAGE_SIZE']\n", "$?"),
    ("import pydoc\ndef f():\n    obj, _ = pydoc.resolve('legacy.server_args.get_server_args')\n    return obj().tp_size\n",
     "*"),
    ("from uvicorn.importer import import_from_string\ndef f():\n"
     "    return import_from_string('legacy.server_args:get_server_args')().tp_size\n", "*"),
    ("from unittest import mock\ndef f():\n"
     "    original, _ = mock.patch('legacy.server_args.get_server_args').get_original()\n    return original().tp_size\n",
     "*"),
    ("from pydantic import ImportString, TypeAdapter\ndef f():\n"
     "    return TypeAdapter(ImportString).validate_python('legacy.server_args.get_server_args')().tp_size\n", "*"),
    ("from pydantic import BaseModel, ImportString\nclass P(BaseModel):\n    g: ImportString\n"
     "def f():\n    return P(g='legacy.server_args.get_server_args').g().tp_size\n", "*"),
    ("from jinja2.utils import import_string\ndef f():\n"
     "    return import_string('legacy.server_args:get_server_args')().tp_size\n", "*"),
    # a module constant, an f-string of constants, a getenv named by a string
    ("from x import load\nHOOK = 'legacy.server_args:get_server_args'\ndef f():\n    return load(HOOK)().tp_size\n",
     "*"),
    ("from x import load\nPKG = 'legacy'\ndef f():\n    return load(f'{PKG}.server_args:get_server_args')().tp_size\n",
     "*"),
    ("from x import load\ndef f():\n    return load('os:getenv')('SGLANG_PAGE_SIZE')\n", "$?"),
    ("from x import load\ndef f():\n    return load('pkg.config_bags.accessors:get_context')().state\n",
     "Context.state"),
    ("from x import load\ndef f():\n    return load('tempfile._os.environ')\n", "$?"),
    ("from x import load\ndef f():\n    return load('configbags.runtime.dist:state_dict')()\n", "dist.state_dict"),
])
def test_a_string_spelling_a_door_is_judged_as_the_import_it_names(tmp_path: Path, user: str, leaf: str) -> None:
    keys = _user(tmp_path, user)
    assert any(key[2] == leaf for key in keys), keys


@pytest.mark.parametrize("user", [
    "from x import load\ndef f(name):\n    return load(f'legacy.server_args:{name}')\n",
    "from x import load\ndef f(ns):\n    return load(f'pkg.config_bags.accessors:get_{ns}')()\n",
    "from x import load\ndef f(what):\n    return load('ext://os.' + what)\n",
])
def test_a_name_built_under_a_module_holding_doors_is_unresolved(tmp_path: Path, user: str) -> None:
    assert ("pkg/user.py", "f", "$?") in _user(tmp_path, user)


def test_a_module_table_spelling_a_door_is_judged_where_it_is_bound(tmp_path: Path) -> None:
    user = ("from importlib.metadata import EntryPoint\n"
            "PLUGINS = {'args': 'legacy.server_args:get_server_args'}\n"
            "def f(kind):\n    return EntryPoint(kind, PLUGINS[kind], 'g').load()\n")
    assert ("pkg/user.py", "<module>", "*") in _user(tmp_path, user)


@pytest.mark.parametrize("user", [
    # names of things that are no door, and words that merely mention one
    "from uvicorn.importer import import_from_string\ndef f():\n    return import_from_string('pkg.app:app')\n",
    "import logging\nlog = logging.getLogger('legacy.server_args')\ndef f():\n"
    "    log.info('see legacy.server_args.get_server_args for os.environ')\n",
    '"""Reads legacy.server_args:get_server_args, never os.environ."""\ndef f(name):\n'
    '    return name == "os.environ"\n',
    "import operator\ndef f(w):\n    return operator.attrgetter('worker.get_server_args')(w)\n",
    "from x import load\ndef f():\n    return load('pkg.config_bags.accessors:cfg').parallel.tp_size\n",
    "import logging.config\ndef f():\n    logging.config.dictConfig({'handlers': {'h': {'class': 'ext://sys.stderr'}}})\n",
    "import multiprocessing\nfrom x import load\ndef f():\n    return load('multiprocessing:get_context')('spawn')\n",
    "from x import load\ndef f(name):\n    return load(f'pkg.plugins.{name}:main')\n",
    "import logging\ndef f(name):\n    return logging.getLogger(f'legacy.server_args.{name}')\n",
])
def test_ordinary_strings_and_loaders_of_other_names_stay_silent(tmp_path: Path, user: str) -> None:
    assert not _user(tmp_path, user)


# ---- R8: unsafe deserializers resolving a qualname

@pytest.mark.parametrize(("user", "leaf"), [
    ("import io, pickle\ndef f():\n"
     "    return pickle.Unpickler(io.BytesIO(b'')).find_class('legacy.server_args', 'get_server_args')().tp_size\n",
     "tp_size"),
    ("import yaml\ndef f():\n    return yaml.unsafe_load('!!python/name:legacy.server_args.get_server_args')().tp_size\n",
     "*"),
    ("import yaml\ndef f():\n    return yaml.unsafe_load('!!python/object/apply:os.getenv [SGLANG_PAGE_SIZE]')\n",
     "$SGLANG_PAGE_SIZE"),
    ("import yaml\ndef f():\n    return yaml.unsafe_load('a: 1\\nb: !!python/name:os.environ')['b']\n", "$?"),
    ("import yaml\ndef f(path):\n    with open(path) as fh:\n        return yaml.load(fh, Loader=yaml.UnsafeLoader)\n",
     "$?"),
    ("import yaml\ndef f(text):\n    return yaml.unsafe_load(text)\n", "$?"),
    ("import yaml\ndef f(fh):\n    return yaml.load(fh, yaml.FullLoader)\n", "$?"),
])
def test_an_unsafe_deserializer_imports_what_it_names(tmp_path: Path, user: str, leaf: str) -> None:
    assert ("pkg/user.py", "f", leaf) in _user(tmp_path, user)


def test_a_spelled_yaml_document_is_read_for_what_its_tags_name_only(tmp_path: Path) -> None:
    user = "import yaml\ndef f():\n    return yaml.unsafe_load('!!python/object/apply:os.getenv [SGLANG_PAGE_SIZE]')\n"
    assert _user(tmp_path, user) == {("pkg/user.py", "f", "$SGLANG_PAGE_SIZE")}


@pytest.mark.parametrize("user", [
    "import yaml\ndef f(fh):\n    return yaml.safe_load(fh)\n",
    "import yaml\ndef f(fh):\n    return yaml.load(fh, Loader=yaml.SafeLoader)\n",
    "import yaml\ndef f(fh):\n    return yaml.load(fh, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))\n",
    "import yaml\ndef f():\n    return yaml.unsafe_load('!!python/name:pkg.app.main')\n",
    "import io, pickle\ndef f():\n    return pickle.Unpickler(io.BytesIO(b'')).find_class('collections', 'OrderedDict')\n",
])
def test_safe_loads_and_tags_of_other_names_stay_silent(tmp_path: Path, user: str) -> None:
    assert not _user(tmp_path, user)


# ---- R11: code-string runners in any module

HOOK_RUNNERS = [
    "import code\ndef f(path):\n    ns = {}\n    code.InteractiveInterpreter(ns).runsource(open(path).read(), path, 'exec')\n",
    "import code\ndef f(lines):\n    console = code.InteractiveConsole({})\n    for line in lines:\n        console.push(line)\n",
    "import cProfile\ndef f(src):\n    ns = {}\n    cProfile.runctx(src, ns, ns)\n",
    "import timeit\ndef f(fh):\n    timeit.timeit(fh.read(), number=1)\n",
    "import pdb\ndef f(src):\n    pdb.Pdb().runctx(src, {}, {})\n",
]


@pytest.mark.parametrize("user", HOOK_RUNNERS)
def test_a_code_string_runner_is_unresolved_in_a_module_that_mentions_nothing(tmp_path: Path, user: str) -> None:
    assert ("pkg/user.py", "f", "$?") in _user(tmp_path, user)


@pytest.mark.parametrize("user", [
    "import timeit\ndef f():\n    return timeit.timeit('sum(range(10))', number=3)\n",
    "import timeit, functools\ndef f(g):\n    return timeit.timeit(functools.partial(g, 1), number=3)\n",
    "import cProfile\ndef f():\n    cProfile.run('print(1)')\n",
])
def test_runners_of_spelled_code_or_callables_stay_silent(tmp_path: Path, user: str) -> None:
    assert not _user(tmp_path, user)


# ---- R5: `os` through another module's private alias; a glob of the environment file

@pytest.mark.parametrize(("user", "leaf"), [
    ("import tempfile\ndef f():\n    return tempfile._os.environ['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    # os's own submodule's `os` (round seven's i08: the alias rule must not stop at a leading `os`)
    ("import os.path\ndef f():\n    return os.path.os.environ['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    ("import random\ndef f():\n    return random._os.environ.get('SGLANG_PAGE_SIZE')\n", "$SGLANG_PAGE_SIZE"),
    ("import threading\ndef f():\n    return threading._os.environ['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    ("import ctypes\ndef f():\n    return ctypes._os.environ.get('SGLANG_PAGE_SIZE')\n", "$SGLANG_PAGE_SIZE"),
    ("import importlib._bootstrap_external as be\ndef f():\n    return be._os.environ[b'SGLANG_PAGE_SIZE']\n", None),
    ("import glob\ndef f():\n    return open(glob.glob('/proc/self/envi*')[0], 'rb').read()\n", "$?"),
    ("from pathlib import Path\ndef f():\n    return list(Path('/proc/self').glob('env*'))\n", "$?"),
])
def test_os_through_a_private_alias_and_a_glob_of_the_environment_file_are_reads(
    tmp_path: Path, user: str, leaf: str | None
) -> None:
    keys = _user(tmp_path, user)
    assert keys and (leaf is None or ("pkg/user.py", "f", leaf) in keys), keys


@pytest.mark.parametrize("user", [
    "import glob\ndef f():\n    return glob.glob('/proc/self/fd/*')\n",
    "import glob\ndef f(d):\n    return glob.glob(d + '/*.py')\n",
])
def test_globs_of_other_files_stay_silent(tmp_path: Path, user: str) -> None:
    assert not _user(tmp_path, "import os\n" + user)



# ---- R7: code in string annotations, `.pth` files

@pytest.mark.parametrize("user", [
    RAW + "import inspect\ndef g(x: 'get_server_args().tp_size') -> None:\n    pass\n"
    "def f():\n    return inspect.get_annotations(g, eval_str=True)\n",
    RAW + "import typing\nfrom typing import Literal\ndef g(x: 'Literal[get_server_args().tp_size]') -> None:\n    pass\n"
    "def f():\n    return typing.get_type_hints(g)\n",
    RAW + "import typing\ndef g() -> 'get_server_args().tp_size':\n    pass\n",
    RAW + "import typing\nclass A:\n    x: 'get_server_args().tp_size'\n",
])
def test_a_string_annotation_that_calls_is_read_as_the_code_it_is(tmp_path: Path, user: str) -> None:
    assert any(key[2] == "tp_size" for key in _user(tmp_path, user))


def test_a_string_annotation_naming_the_getter_is_the_getter(tmp_path: Path) -> None:
    user = RAW + "import typing\ndef g(x: 'get_server_args') -> None:\n    pass\n"
    assert ("pkg/user.py", "g", "*") in _user(tmp_path, user)


def test_a_string_annotation_naming_a_type_stays_silent(tmp_path: Path) -> None:
    user = "from typing import Optional\ndef g(x: 'Optional[int]', y: 'dict[str, int]') -> 'list[str]':\n    return []\n"
    assert not _user(tmp_path, user)


def test_the_import_lines_of_a_pth_file_under_a_root_are_python(tmp_path: Path) -> None:
    pth = "/opt/plugins\nimport os, builtins; builtins.PAGE = os.environ.get('SGLANG_PAGE_SIZE')\n"
    result = _scan(tmp_path, {"plugins/hooks.pth": pth})
    assert ("pkg/plugins/hooks.pth", "<module>", "$SGLANG_PAGE_SIZE") in _keys(result), result.reads
    assert _fails(result)


def test_a_pth_file_of_folders_only_reads_nothing(tmp_path: Path) -> None:
    result = _scan(tmp_path, {"plugins/paths.pth": "/opt/plugins\n../vendor\n# import os\n"})
    assert not result.reads and "pkg/plugins/paths.pth" in result.files


# ---- R1: entry points declared in metadata name what a plugin loader imports

PLUGIN_LOOP = ("from importlib.metadata import entry_points\ndef f():\n"
               "    return {ep.name: ep.load() for ep in entry_points(group='engine.plugins')}\n")


@pytest.mark.parametrize(("rel", "text", "line"), [
    ("probe-0.1.dist-info/entry_points.txt", "[engine.plugins]\nargs = legacy.server_args:get_server_args\n", 2),
    ("probe.egg-info/entry_points.txt", "[console_scripts]\nx = pkg.cli:main\n[engine.plugins]\n"
     "env = os:environ\n", 4),
    ("pyproject.toml", "[project]\nname = 'probe'\n[project.entry-points.'engine.plugins']\n"
     "args = \"legacy.server_args:get_server_args\"\n", 4),
    ("setup.cfg", "[metadata]\nname = probe\n[options.entry_points]\nengine.plugins =\n"
     "    args = legacy.server_args:get_server_args\n", 5),
    ("pkg/vendored-1.0.dist-info/entry_points.txt", "[engine.plugins]\nargs = legacy.server_args:get_server_args\n", 2),
])
def test_an_entry_point_naming_a_door_is_a_read_where_it_is_declared(
    tmp_path: Path, rel: str, text: str, line: int
) -> None:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    result = _scan(tmp_path, {"user.py": PLUGIN_LOOP})
    rows = [r for r in result.reads if r.file == rel]
    assert rows and rows[0].line == line and rows[0].function == "<module>", result.reads
    assert _fails(result)


def test_entry_points_of_other_names_are_not_even_listed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'probe'\n[project.scripts]\nprobe = 'pkg.cli:main'\n")
    (tmp_path / "probe.egg-info").mkdir()
    (tmp_path / "probe.egg-info" / "entry_points.txt").write_text("[console_scripts]\nprobe = pkg.cli:main\n")
    # (the loader takes a group the tree declares: one it does not is `$?`, test_ratchet_misc12)
    loop = PLUGIN_LOOP.replace("engine.plugins", "console_scripts")
    result = _scan(tmp_path, {"user.py": loop, "cli.py": "def main():\n    pass\n"})
    assert not result.reads and result.files == ("pkg/__init__.py", "pkg/cli.py", "pkg/user.py")


# ---- L2: a package module named like a standard library one hides nothing

LOCAL_JSON = '"""Engine-local JSON helpers."""\ndef dumps(obj, **kw):\n    return "{}"\n'


@pytest.mark.parametrize("user", [
    RAW + "import json\ndef f():\n    return json.dumps(get_server_args(), default=vars)\n",
    RAW + "from json import dumps\ndef f():\n    return dumps(get_server_args(), default=vars)\n",
])
def test_an_absolute_import_in_a_package_is_the_standard_librarys(tmp_path: Path, user: str) -> None:
    assert _user(tmp_path, user, {"json.py": LOCAL_JSON})


def test_a_relative_import_of_the_local_module_is_the_local_one(tmp_path: Path) -> None:
    user = RAW + "from . import json\ndef f():\n    return json.dumps(get_server_args())\n"
    assert not _user(tmp_path, user, {"json.py": LOCAL_JSON})
