"""Round twelve's plugin loading and environment scrubs (an outside attack): a plugin
loader's `ep.load()` of `importlib.metadata.entry_points(...)` (vLLM's
`load_plugins_by_group`), which imports an object by a name no module spells (V7); and
the precision of a test fixture's scrub that only deletes variables (PR1) and of a
child's `env=` copied from the environment without any declared variable (PR2). Each
case has its twin beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, read_keys, scan_pkg

HEAD = "import os, subprocess\nfrom importlib.metadata import entry_points\n"


def _result(tmp_path: Path, body: str, files: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return scan_pkg(tmp_path, {"user.py": HEAD + body, **(files or {})})


def _reads(tmp_path: Path, body: str, files: dict[str, str] | None = None) -> set[str]:
    return {leaf for file, _, leaf in read_keys(_result(tmp_path, body, files)) if file == "pkg/user.py"}


def _f(*lines: str) -> str:
    return "def f(group='engine.plugins'):\n" + "".join(f"    {line}\n" for line in lines)


# ---- V7: a plugin loader imports what entry points name

VLLM = "return {ep.name: ep.load() for ep in entry_points(group=group)}"


@pytest.mark.parametrize("lines", [
    (VLLM,),  # vLLM's load_plugins_by_group, word for word
    ("return {ep.name: ep.load() for ep in entry_points(group='engine.plugins')}",),
    ("return [ep.load() for ep in entry_points().select(group='engine.plugins')]",),
    ("return [ep.load() for ep in entry_points()['engine.plugins']]",),
    ("for ep in entry_points(group=group):", "    plugin = ep.load()", "    plugin()"),
    ("return [ep.load() for ep in entry_points()]",),  # every group
    ("import pkg_resources", "return [ep.load() for ep in pkg_resources.iter_entry_points(group)]"),
])
def test_loading_entry_points_the_tree_does_not_declare_is_unresolved(
    tmp_path: Path, lines: tuple[str, ...]
) -> None:
    result = _result(tmp_path, _f(*lines))
    assert "$?" in _reads(tmp_path, _f(*lines)) and fails(result), result.reads


METADATA = {"probe-0.1.dist-info/entry_points.txt": "[engine.plugins]\nfast = pkg.fast:Plugin\n"}


@pytest.mark.parametrize("metadata", [
    METADATA,
    {"pyproject.toml": "[project]\nname = 'probe'\n[project.entry-points.'engine.plugins']\nfast = 'pkg.fast:Plugin'\n"},
    {"setup.cfg": "[metadata]\nname = probe\n[options.entry_points]\nengine.plugins =\n    fast = pkg.fast:Plugin\n"},
])
def test_loading_a_group_the_tree_declares_is_judged_where_it_is_declared(
    tmp_path: Path, metadata: dict[str, str]
) -> None:
    for rel, text in metadata.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    body = _f("return {ep.name: ep.load() for ep in entry_points(group='engine.plugins')}")
    result = _result(tmp_path, body, {"fast.py": "class Plugin:\n    pass\n"})
    assert not result.reads and not fails(result)


@pytest.mark.parametrize(("entry", "module"), [
    ("pkg.fast:Plugin", "from legacy.server_args import get_server_args\ndef Plugin():\n    return get_server_args()\n"),
    ("pkg.fast:Plugin", "import os\nclass Plugin:\n    env = os.environ\n"),
    ("outside.plugins:Plugin", "class Plugin:\n    pass\n"),  # (a module the tree does not hold)
    ("pkg:fast", "class Plugin:\n    pass\n"),  # (a package holding a door)
])
def test_a_declared_entry_naming_a_module_that_may_bind_a_door_stays_unresolved(
    tmp_path: Path, entry: str, module: str
) -> None:
    (tmp_path / "probe-0.1.dist-info").mkdir()
    (tmp_path / "probe-0.1.dist-info" / "entry_points.txt").write_text(f"[engine.plugins]\nfast = {entry}\n")
    body = _f("return {ep.name: ep.load() for ep in entry_points(group='engine.plugins')}")
    files = {"fast.py": module, "door.py": "import os\n"}
    assert "$?" in _reads(tmp_path, body, files)


def test_a_group_passed_in_or_a_second_group_undeclared_stays_unresolved(tmp_path: Path) -> None:
    (tmp_path / "probe-0.1.dist-info").mkdir()
    (tmp_path / "probe-0.1.dist-info" / "entry_points.txt").write_text(METADATA["probe-0.1.dist-info/entry_points.txt"])
    passed_in = _f(VLLM)  # (outside distributions may declare the group it is given)
    other = _f("a = [ep.load() for ep in entry_points(group='engine.plugins')]",
               "return a + [ep.load() for ep in entry_points(group='other.plugins')]")
    assert "$?" in _reads(tmp_path, passed_in)
    assert "$?" in _reads(tmp_path, other)


def test_a_load_of_anything_else_is_not_an_entry_points(tmp_path: Path) -> None:
    # no entry points loaded in the module: `.load()` is another library's
    body = "import json\ndef f(path):\n    with open(path) as fh:\n        return json.load(fh)\n"
    result = scan_pkg(tmp_path, {"user.py": body, "w.py": "def g(loader):\n    return loader.load()\n"})
    assert not result.reads


# ---- PR1: a scrub of the environment that only deletes

SCRUBS = [
    ("for k in list(os.environ):", "    if k.startswith('SGLANG_'):", "        del os.environ[k]"),
    ("for k in list(os.environ.keys()):", "    if k.startswith(('SGLANG_', 'NCCL_')):", "        os.environ.pop(k)"),
    ("for k in tuple(os.environ):", "    if k == 'SGLANG_PAGE_SIZE' or k.endswith('_X'):", "        pass",
     "    if k.startswith('SGLANG_'):", "        os.environ.pop(k, None)"),
    ("for k in sorted(os.environ):", "    del os.environ[k]"),
]


@pytest.mark.parametrize("lines", SCRUBS)
def test_a_scrub_that_only_deletes_reads_nothing(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = _result(tmp_path, _f(*lines))
    assert not result.reads and not fails(result)


@pytest.mark.parametrize("lines", [
    ("for k in list(os.environ):", "    if k.startswith('SGLANG_'):", "        print(os.environ[k])"),
    ("for k in list(os.environ):", "    if k.startswith('SGLANG_'):", "        print(os.environ.get(k))"),
    ("for k in list(os.environ):", "    if k.startswith('SGLANG_'):", "        v = os.environ.pop(k)"),
    ("for k in list(os.environ):", "    print(k)", "    del os.environ[k]"),
    ("for k in list(os.environ):", "    if k.startswith(os.environ['PFX']):", "        del os.environ[k]"),
    ("for k, v in list(os.environ.items()):", "    del os.environ[k]"),
    ("for v in list(os.environ.values()):", "    print(v)"),
    ("saved = {}", "for k in list(os.environ):", "    saved[k] = 1", "    del os.environ[k]"),
])
def test_a_scrub_that_reads_or_hands_on_a_key_stays_whole(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = _result(tmp_path, _f(*lines))
    assert "$?" in _reads(tmp_path, _f(*lines)) and fails(result), result.reads


# ---- PR2: a child's env= leaving out every declared variable


@pytest.mark.parametrize("test", [
    "not k.startswith('SGLANG_')",
    "not k.startswith(('SGLANG_', 'NCCL_'))",
    "not k.startswith('SGLANG_') if k != 'HOME'",
])
def test_a_child_env_without_any_declared_variable_reads_nothing(tmp_path: Path, test: str) -> None:
    body = _f(f"env = {{k: v for k, v in os.environ.items() if {test}}}", "return subprocess.run(['true'], env=env)")
    result = _result(tmp_path, body)
    assert not result.reads and not fails(result)


@pytest.mark.parametrize(("test", "leaf"), [
    ("k.startswith('SGLANG_')", "$SGLANG_PAGE_SIZE"),  # (keeps them: each handed to the child)
    ("not k.startswith('SGLANG_PAGE_SIZE_')", "$?"),  # (SGLANG_PAGE_SIZE itself is kept)
    ("not k.startswith('NCCL_')", "$?"),
    ("not k.endswith('_X')", "$?"),
    ("not v.startswith('SGLANG_')", "$?"),
    ("not k.upper().startswith('SGLANG_')", "$?"),
    ("k != 'SGLANG_PAGE_SIZE'", "$?"),
])
def test_a_child_env_that_may_keep_a_declared_variable_reads_it(tmp_path: Path, test: str, leaf: str) -> None:
    body = _f(f"env = {{k: v for k, v in os.environ.items() if {test}}}", "return subprocess.run(['true'], env=env)")
    result = _result(tmp_path, body)
    assert leaf in _reads(tmp_path, body) and fails(result), result.reads
