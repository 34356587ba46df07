"""Round seven's false passes of the read ratchet about names resolved at run time (an
outside attack): the standard library's resolvers of dotted names (`pkgutil.resolve_name`,
`pydoc.locate`), a module's namespace through `inspect.getmembers`, a code string run in a
module that mentions nothing config-related, and a project helper importing a qualname."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from ratchet_case import ACCESSORS, SETTINGS
from ratchet_case import fails as _fails
from ratchet_case import read_keys as _keys
from ratchet_case import scan_pkg as _scan

from configbags.migrate.fix import fix_source

WITH_DICT = attrs.evolve(SETTINGS, record_dicts=("global_server_args_dict",))
# a generated package: its accessors module re-exports the raw getter and gives contexts
GENERATED = {
    "config_bags/__init__.py": "",
    "config_bags/accessors.py": "def get_context(): ...\ndef get_server_args(): ...\ncfg = None\n",
}


# ---- H1, H1b: a resolver of a spelled dotted name is the import route it stands for

@pytest.mark.parametrize(("user", "leaf"), [
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('legacy.server_args:get_server_args')().tp_size\n",
     "tp_size"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('legacy.server_args.get_server_args')().tp_size\n",
     "tp_size"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('pkg.config_bags.accessors:get_context')().state\n",
     "Context.state"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('configbags.runtime.dist:state_dict')()['record']\n",
     "dist.state_dict"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('os:environ')['SGLANG_PAGE_SIZE']\n",
     "$SGLANG_PAGE_SIZE"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('os.getenv')('SGLANG_PAGE_SIZE')\n", "$SGLANG_PAGE_SIZE"),
    ("import pydoc\ndef f():\n    return pydoc.locate('legacy.server_args.get_server_args')().tp_size\n", "tp_size"),
    ("import pydoc\ndef f():\n    return pydoc.locate('os.environ')['SGLANG_PAGE_SIZE']\n", "$SGLANG_PAGE_SIZE"),
    ("from pkgutil import resolve_name as load_obj\ndef f():\n"
     "    return load_obj('legacy.server_args:get_server_args')().tp_size\n", "tp_size"),
    ("import pkgutil\nARGS_HOOK = 'legacy.server_args:get_server_args'\ndef f():\n"
     "    return pkgutil.resolve_name(ARGS_HOOK)().tp_size\n", "tp_size"),
    ("import pkgutil as pk\nR = pk.resolve_name\ndef f():\n    return R('legacy.server_args:get_server_args')().tp_size\n",
     "tp_size"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('legacy.server_args:global_server_args_dict')['page_size']\n",
     "page_size"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('pkg.config_bags.accessors:get_server_args')().tp_size\n",
     "tp_size"),
    ("import pkgutil\ndef f():\n    return pkgutil.resolve_name('pkg.config_bags.accessors:cfg').server_args.tp_size\n",
     "tp_size"),
])
def test_a_resolver_of_a_spelled_name_is_judged_as_the_import_it_stands_for(
    tmp_path: Path, user: str, leaf: str
) -> None:
    result = _scan(tmp_path, {**GENERATED, "user.py": user}, WITH_DICT)
    assert ("pkg/user.py", "f", leaf) in _keys(result), result.reads
    assert _fails(result)


def test_a_resolver_reaching_the_accessors_view_reads_nothing_as_the_import_does(tmp_path: Path) -> None:
    resolved = "import pkgutil\ndef f():\n    return pkgutil.resolve_name('pkg.config_bags.accessors:cfg').parallel.tp_size\n"
    imported = "from pkg.config_bags.accessors import cfg\ndef f():\n    return cfg.parallel.tp_size\n"
    assert not _keys(_scan(tmp_path / "a", {**GENERATED, "user.py": resolved}))
    assert not _keys(_scan(tmp_path / "b", {**GENERATED, "user.py": imported}))


@pytest.mark.parametrize("user", [
    "import pkgutil\ndef f(name):\n    return pkgutil.resolve_name(name)().tp_size\n",
    "import pydoc, os\ndef f():\n    return pydoc.locate(os.environ['HOOK'])\n",
    "import importlib\ndef f(name):\n    return importlib.import_module(name).get_server_args().tp_size\n",
])
def test_a_resolver_or_importer_of_a_name_the_module_does_not_spell_is_unresolved(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "$?") in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "import pkgutil\ndef f():\n    return pkgutil.resolve_name('json:dumps')({})\n",
    "import importlib\ndef f():\n    return importlib.import_module(f'{__package__}.tools').run()\n",
    "import importlib\ndef f():\n    return importlib.import_module('.tools', __package__).run()\n",
    "def resolve_name(x):\n    return x\ndef f(name):\n    return resolve_name(name)\n",
])
def test_resolvers_and_importers_of_spelled_harmless_names_read_nothing(tmp_path: Path, user: str) -> None:
    assert not _keys(_scan(tmp_path, {"user.py": user, "tools.py": "def run(): ...\n"}))


# ---- round ten PR3: an import by a name on a literal package prefix that rules out every door

MODELS = {
    "models/__init__.py": "",
    "models/llama.py": "import torch\nfrom typing import Any\nfrom pkg.models.layers import norm\nclass Model:\n"
                       "    def forward(self, x: Any) -> Any:\n        return norm(torch.relu(x))\n",
    "models/layers.py": "import math\ndef norm(x):\n    return x / math.sqrt(2)\n",
}
LOAD = "import importlib\ndef load(arch):\n    return importlib.import_module({name}).Model\n"


@pytest.mark.parametrize("name", ["f'pkg.models.{arch}'", "'pkg.models.' + arch", "f'pkg.models.{arch}_v2'"])
@pytest.mark.parametrize("models", ["doorless", "absent", "namespace"])
def test_an_import_on_a_prefix_naming_only_doorless_modules_of_the_tree_reads_nothing(
    tmp_path: Path, name: str, models: str
) -> None:
    files = {
        "doorless": MODELS,
        "absent": {},
        "namespace": {k: v for k, v in MODELS.items() if k != "models/__init__.py"},
    }[models]
    result = _scan(tmp_path, {**files, "user.py": LOAD.format(name=name)})
    assert not _keys(result), result.reads


@pytest.mark.parametrize(("extra", "name"), [
    # a module the prefix may name binds a door, or a module of the tree that binds one
    ({"models/gpt.py": "from legacy.server_args import get_server_args\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "import os\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "from os import environ as E\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "from pkg.envutil import ENV\n", "envutil.py": "import os\nENV = os.environ\n"},
     "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "from pkg import util\n", "util.py": "import sys\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "import pkg.util\n", "util.py": "def f(): ...\n",
      "args.py": "from legacy.server_args import get_server_args\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "from pkg.config_bags.accessors import get_context\n"}, "f'pkg.models.{arch}'"),
    ({"models/gpt.py": "from legacy.server_args import get_server_args\nARGS = get_server_args()\n"},
     "f'pkg.models.{arch}'"),
    # the package may hold modules the scan does not read, or add them by name
    ({"models/fast.so": ""}, "f'pkg.models.{arch}'"),
    ({"models/__init__.py": "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"},
     "f'pkg.models.{arch}'"),
    ({"models/__init__.py": "import sys, legacy.server_args as S\nsys.modules['pkg.models.s'] = S\n"},
     "f'pkg.models.{arch}'"),
    ({"plugins.py": "import sys\nimport legacy.server_args as S\ndef install(name):\n"
                    "    sys.modules[name] = S\n"}, "f'pkg.models.{arch}'"),
    # a prefix the tree does not hold, or that names no package, or another importer's call
    ({}, "f'transformers.models.{arch}'"),
    ({}, "f'pkg{arch}'"),
    ({}, "f'pkg.{arch}'"),
    ({}, "f'pkg.models.{arch}', __package__"),
    ({}, "f'{base}.models.{arch}'"),
])
def test_an_import_on_a_prefix_that_may_name_a_door_stays_unresolved(
    tmp_path: Path, extra: dict[str, str], name: str
) -> None:
    user = LOAD.format(name=name).replace("def load(arch)", "def load(arch, base='x')")
    files = {**MODELS, **extra, "user.py": user, "args.py": extra.get("args.py", "")}
    result = _scan(tmp_path, files)
    assert ("pkg/user.py", "load", "$?") in _keys(result), result.reads
    assert _fails(result)


def test_an_import_on_a_prefix_whose_package_holds_an_excluded_module_stays_unresolved(tmp_path: Path) -> None:
    files = {**MODELS, "models/gpt.py": "def f(): ...\n", "user.py": LOAD.format(name="f'pkg.models.{arch}'")}
    result = _scan(tmp_path, files, attrs.evolve(SETTINGS, excludes=("pkg/models/gpt.py",)))
    assert ("pkg/user.py", "load", "$?") in _keys(result), result.reads


def test_dunder_import_on_a_prefix_stays_unresolved(tmp_path: Path) -> None:
    user = "def load(arch):\n    return __import__(f'pkg.models.{arch}').models\n"
    assert ("pkg/user.py", "load", "$?") in _keys(_scan(tmp_path, {**MODELS, "user.py": user}))


# ---- H7: a module's namespace taken whole by inspect.getmembers is vars(M)

@pytest.mark.parametrize("user", [
    "import inspect\nimport legacy.server_args as S\ndef f():\n"
    "    return dict(inspect.getmembers(S))['get_server_args']().tp_size\n",
    "from inspect import getmembers\nimport pkg.config_bags.accessors as A\ndef f():\n"
    "    return dict(getmembers(A))['get_context']().state\n",
    "import inspect, os\ndef f():\n    return dict(inspect.getmembers(os))['environ']['SGLANG_PAGE_SIZE']\n",
])
def test_getmembers_of_a_module_is_unresolved_like_vars(tmp_path: Path, user: str) -> None:
    result = _scan(tmp_path, {**GENERATED, "user.py": user})
    assert ("pkg/user.py", "f", "$?") in _keys(result), result.reads
    assert _fails(result)


def test_getmembers_of_a_parameter_reads_nothing(tmp_path: Path) -> None:
    user = "import inspect, os\ndef f(obj):\n    return dict(inspect.getmembers(obj)), os.sep\n"
    assert not _keys(_scan(tmp_path, {"user.py": user}))


# ---- H3: a code string the module does not spell, in any module

HOOK_LOADERS = [
    "import os\nHERE = os.path.dirname(__file__)\ndef f():\n    ns = {}\n"
    "    with open(os.path.join(HERE, 'tools', 'hooks.conf')) as fh:\n        exec(fh.read(), ns)\n    return ns['TP']\n",
    "import os\ndef f(path):\n    ns = {}\n    with open(path) as fh:\n        code = compile(fh.read(), path, 'exec')\n"
    "    exec(code, ns)\n    return ns['TP']\n",
    "from pathlib import Path\ndef f():\n    ns = {}\n"
    "    exec(Path(__file__).with_name('tools').joinpath('hooks.conf').read_text(), ns)\n    return ns['TP']\n",
    "import builtins\ndef f(p):\n    ns = {}\n    builtins.exec(open(p).read(), ns)\n    return ns['TP']\n",
    "def f(expr):\n    return eval(expr)\n",
]


@pytest.mark.parametrize("user", HOOK_LOADERS)
def test_a_code_string_run_in_a_module_that_mentions_nothing_config_related_is_unresolved(
    tmp_path: Path, user: str
) -> None:
    tools = {"tools/hooks.conf": "from legacy.server_args import get_server_args\nTP = get_server_args().tp_size\n"}
    result = _scan(tmp_path, {"user.py": user, **tools})
    assert ("pkg/user.py", "f", "$?") in _keys(result), result.reads
    assert _fails(result)


@pytest.mark.parametrize("user", [
    "import re\nPATTERN = re.compile('a+')\ndef f(model):\n    model.eval()\n    return eval('1 + 1')\n",
    "import torch\ndef f(model):\n    return torch.compile(model)\n",
    "def f():\n    exec('x = 1')\n",
])
def test_ordinary_code_with_the_words_reads_nothing(tmp_path: Path, user: str) -> None:
    assert not _keys(_scan(tmp_path, {"user.py": user}))


# ---- H6: a project helper resolving a qualname

HELPER = """\
import importlib
def resolve_obj_by_qualname(qualname):
    module_name, obj_name = qualname.rsplit('.', 1)
    module = importlib.import_module(module_name)
    return getattr(module, obj_name)
def import_from(mod, name):
    return getattr(importlib.import_module(mod), name)
"""
TABLE = """\
import importlib
PLUGINS = {'args': ('legacy.server_args', 'get_server_args')}
def load(kind):
    mod, name = PLUGINS[kind]
    return getattr(importlib.import_module(mod), name)
"""


def test_a_helper_importing_a_qualname_it_is_given_is_unresolved_in_the_helper(tmp_path: Path) -> None:
    user = "from pkg.o1_utils import resolve_obj_by_qualname\ndef f():\n    return resolve_obj_by_qualname('os.getenv')('X')\n"
    result = _scan(tmp_path, {"o1_utils.py": HELPER, "user.py": user, "table.py": TABLE})
    keys = _keys(result)
    assert ("pkg/o1_utils.py", "resolve_obj_by_qualname", "$?") in keys, result.reads
    assert ("pkg/o1_utils.py", "import_from", "$?") in keys, result.reads
    assert ("pkg/table.py", "load", "$?") in keys, result.reads
    assert _fails(result)


def test_fix_leaves_a_read_through_a_resolver_to_a_person_naming_why(tmp_path: Path) -> None:
    user = "import pkgutil\ndef f():\n    return pkgutil.resolve_name('legacy.server_args:get_server_args')().tp_size\n"
    result = _scan(tmp_path, {"user.py": user})
    fixed, changes, skipped = fix_source(user, result.reads, ACCESSORS, "pkg.config_bags.accessors")
    assert fixed == user and not changes
    assert [s.leaf for s in skipped] == ["tp_size"] and "resolve_name" in skipped[0].reason, skipped


@pytest.mark.parametrize("body", [
    'return get_server_args.__globals__["_GLOBAL_SERVER_ARGS"].tp_size',
    "return [c.cell_contents for c in get_server_args.__closure__ or ()]",
    'return next(o for o in gc.get_objects() if type(o).__name__ == "ServerArgs").tp_size',
    "return gc.get_referrers(get_server_args)",
    'import inspect, os\n    return inspect.getmodule(os.getcwd).environ["SGLANG_PAGE_SIZE"]',
])
def test_a_functions_globals_and_the_live_objects_are_unresolved_reads(tmp_path: Path, body: str) -> None:
    """Round seven H8 and L1: the record's module globals through a function imported from
    it, and the record found among every live object."""
    user = "import gc\nfrom legacy.server_args import get_server_args\n\ndef f():\n    " + body + "\n"
    result = _scan(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "f", "$?") in _keys(result), result.reads
    assert _fails(result)
