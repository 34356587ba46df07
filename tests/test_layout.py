"""The house rules of the import graph, checked on the source (every import statement,
module-level or inside a function): one import root, a schema-generic runtime, build time
apart from run time, and torch only where pools are allocated or ranks talk."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# folder -> import name: every room installs under the one root (pyproject's package-dir)
ROOT_FOLDER = "cli"
ROOMS = ("codegen", "runtime", "generated", "migrate", "serve", "server", "fleet", "evolve")
GENERIC_NAMES = {*ROOMS, ROOT_FOLDER, "tests", "bench"}
# torch is imported by these modules only (DESIGN: torch only in pool and dist modules; plan
# measures CUDA memory when asked to).
TORCH_MODULES = {"runtime/dist/_rendezvous.py", "runtime/dist/_propagate.py", "server/kvcache/pools.py", "server/plan.py"}


def _modules(room: str) -> list[Path]:
    return sorted((REPO / room).rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file that runs (not those under
    `if TYPE_CHECKING:`); relative imports resolved against the file's place under the root."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    parts = path.relative_to(REPO).parent.parts
    package = ["configbags", *(parts[1:] if parts[:1] == (ROOT_FOLDER,) else parts)]
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # `from configbags import generated`
                yield node.lineno, f"{module}.{alias.name}"


def _violations(rooms: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for room in rooms:
        for path in _modules(room):
            for line, module in _imports(path):
                if any(module == f or module.startswith(f + ".") for f in forbidden):
                    found.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    return found


@pytest.mark.slow  # parses every module of every room
def test_every_import_goes_through_the_configbags_root() -> None:
    bare = []
    for room in (*ROOMS, ROOT_FOLDER, "tests", "bench"):
        for path in sorted((REPO / room).glob("**/*.py")):
            if "fixtures" in path.parts or "cases" in path.parts:
                continue
            for line, module in _imports(path):
                if module.partition(".")[0] in GENERIC_NAMES - {"tests"}:
                    bare.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    assert not bare, "import through configbags.<room>, never a bare room name:\n" + "\n".join(bare)


def test_the_runtime_never_imports_a_generated_package_or_build_time_code() -> None:
    found = _violations(("runtime",), ("configbags.generated", "configbags.codegen", "configbags.migrate",
                                       "configbags.serve", "configbags.server", "configbags.cli",
                                       "configbags.packages", "configbags.audit", "configbags.explain",
                                       "configbags.evolve"))
    assert not found, "runtime/ must stay schema-generic and run-time only:\n" + "\n".join(found)


def _dynamic_imports(path: Path) -> Iterator[int]:
    """Lines of `importlib.import_module(...)`, `import_module(...)` and `__import__(...)`
    calls: imports the statement walk above does not see."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("importlib.import_module", "import_module", "__import__", "importlib.__import__"):
                yield node.lineno


@pytest.mark.parametrize("room", ["runtime", "generated"])
def test_the_library_has_no_dynamic_import_back_edge(room: str) -> None:
    """Nothing under runtime/ or generated/ imports a module by a computed name: the
    command layer (configbags.packages) loads the package an operator names."""
    found = [f"{path.relative_to(REPO)}:{line}" for path in _modules(room) for line in _dynamic_imports(path)]
    assert not found, f"{room}/ imports by a computed name:\n" + "\n".join(found)


def test_the_dynamic_import_check_sees_each_spelling(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import importlib\nfrom importlib import import_module\n"
                     "importlib.import_module('a')\nimport_module('b')\n__import__('c')\n")
    assert list(_dynamic_imports(probe)) == [3, 4, 5]


def test_the_bundled_server_reaches_its_config_through_the_generated_package() -> None:
    """The application room sits above generated/: it may import it, and the runtime, but
    no build-time code and not the door."""
    found = _violations(("server",), ("configbags.codegen", "configbags.migrate", "configbags.serve"))
    assert not found, "\n".join(found)


def test_codegen_never_imports_generated_code_or_the_migration_toolkit() -> None:
    found = _violations(("codegen",), ("configbags.generated", "configbags.migrate", "configbags.evolve"))
    assert not found, "\n".join(found)


def test_the_evolution_tools_read_codegen_through_one_adapter() -> None:
    """diff, lint and matrix read a schema through evolve/view.py only, so a change to
    codegen's leaf record touches one module; they never import a generated package (matrix
    takes it by name through configbags.packages) nor the server or the door."""
    adapter = "evolve/view.py"
    through = [v for v in _violations(("evolve",), ("configbags.codegen",)) if not v.startswith(adapter + ":")]
    assert not through, "\n".join(through)
    found = _violations(("evolve",), ("configbags.generated", "configbags.server", "configbags.serve"))
    assert not found, "\n".join(found)


GENERATED_FACE = "configbags.runtime.generated_api"


def _schema_function_modules() -> set[str]:
    """The modules the bundled schema names for its derived and rule functions (`fn:`):
    the registry imports each, as any engine's registry imports the engine's own."""
    from configbags.codegen.model import load_schema

    schema = load_schema(REPO / "schema")
    return {x.fn.partition(":")[0] for x in (*schema.derived, *schema.rules) if x.fn}


def test_generated_code_imports_one_versioned_runtime_module_and_siblings_relatively() -> None:
    """Generated code reaches the runtime only through its one versioned face (so a runtime
    that changes a name changes the face's API_VERSION, which the package checks), its
    siblings relatively (so it works under any package name), and otherwise only the
    standard library, attrs and the functions its schema names."""
    import sys

    allowed = {GENERATED_FACE, "attrs", *_schema_function_modules()}
    found = []
    for path in _modules("generated"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # a sibling, relatively
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for module in names:
                if module.partition(".")[0] in sys.stdlib_module_names or module in allowed:
                    continue
                found.append(f"{path.name}:{node.lineno}: imports {module}")
    assert not found, (f"generated code imports only {GENERATED_FACE} from configbags (and its siblings "
                       f"relatively):\n" + "\n".join(found))


def test_the_generated_import_rule_catches_a_second_runtime_module(tmp_path: Path) -> None:
    """The rule above reads module names the way this probe spells them."""
    probe = tmp_path / "probe.py"
    probe.write_text("from configbags.runtime.context import Context\nfrom . import bags\n")
    tree = ast.parse(probe.read_text())
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
    assert modules == ["configbags.runtime.context"]
    assert GENERATED_FACE not in modules


def test_the_door_takes_the_generated_package_by_name_and_no_build_time_code() -> None:
    """serve/ reaches a generated package only through process_context(package), so it
    serves any engine's schema; torch only through configbags.runtime.dist."""
    found = _violations(("serve",), ("configbags.generated", "configbags.codegen", "configbags.migrate", "torch"))
    assert not found, "\n".join(found)


def test_the_fleet_reads_servers_over_http_only() -> None:
    """fleet/ talks to live servers through their door (httpx), so it needs no generated
    package, no build-time code, no server framework and no torch."""
    found = _violations(("fleet",), ("configbags.generated", "configbags.codegen", "configbags.migrate",
                                     "configbags.server", "fastapi", "uvicorn", "starlette", "torch"))
    assert not found, "\n".join(found)


def test_the_http_stack_stays_in_the_door() -> None:
    web = ("fastapi", "uvicorn", "starlette", "httpx", "pydantic")
    found = _violations(("codegen", "runtime", "generated", "migrate"), web)
    assert not found, "only serve/ may import the HTTP stack (the serve extra):\n" + "\n".join(found)


def test_torch_stays_in_the_pool_dist_and_plan_modules() -> None:
    found = [
        v for v in _violations(("runtime", "generated", "codegen", "migrate", "serve", "server"), ("torch",))
        if v.partition(":")[0] not in TORCH_MODULES
    ]
    assert not found, "\n".join(found)


def _setuptools() -> dict[str, object]:
    import tomllib

    table: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return table


def test_each_room_maps_under_the_root_by_package_dir() -> None:
    mapping = _setuptools()["package-dir"]
    assert mapping == {"configbags": ROOT_FOLDER, **{f"configbags.{room}": room for room in ROOMS}}


def _name_of(folder: Path) -> str:
    rel = folder.relative_to(REPO)
    root = "configbags" if rel.parts[0] == ROOT_FOLDER else f"configbags.{rel.parts[0]}"
    return ".".join([root, *rel.parts[1:]])


def test_the_package_list_names_every_package_and_data_folder() -> None:
    """setuptools installs the packages listed: a folder with an __init__.py left out of the
    list would be missing from the wheel, and a data folder left out draws its warning."""
    tops = [REPO / ROOT_FOLDER, *(REPO / room for room in ROOMS)]
    code = {_name_of(init.parent) for top in tops for init in top.rglob("__init__.py")}
    data = set(_setuptools()["package-data"]) - code  # type: ignore[arg-type]
    assert sorted(code | data) == sorted(_setuptools()["packages"])  # type: ignore[arg-type]
    for name in data:  # a data folder holds data: a module there would never be importable
        folder = REPO / _folder_of(name)
        assert folder.is_dir() and not list(folder.glob("*.py")), name


def _folder_of(name: str) -> Path:
    parts = name.split(".")
    return Path(ROOT_FOLDER if len(parts) == 1 else parts[1], *parts[2:])


def test_the_repository_holds_no_link() -> None:
    """A clone without symlink support (core.symlinks=false) must install and pass."""
    skip = {".git", ".venv", "build", ".mypy_cache", ".ruff_cache", ".hypothesis", "dist"}
    links = [
        str(path.relative_to(REPO))
        for top in REPO.iterdir() if top.name not in skip
        for path in ([top] if top.is_symlink() else [p for p in top.rglob("*") if p.is_symlink()])
    ]
    assert not links, "links in the repository: " + ", ".join(links)


def test_no_folder_of_the_checkout_shadows_the_import_root() -> None:
    """`python -m pytest` puts the checkout first on sys.path: a `configbags/` folder there
    (without the rooms under it) would hide the installed package."""
    assert not (REPO / "configbags").exists()


def test_the_policy_words_have_one_source() -> None:
    """The meta-schema's `override:` enum is the runtime's Policy enum, word for word."""
    import json

    from configbags.runtime.leaftypes import Policy

    meta = json.loads((REPO / "codegen/meta/namespace.schema.json").read_text())
    found = [node["enum"] for node in _walk_json(meta) if set(node.get("enum", ())) & {"startup"}]
    assert found == [[p.value for p in Policy]]


def _walk_json(node: object) -> Iterator[dict[str, object]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk_json(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_json(value)


@pytest.mark.slow  # an inner pytest run
def test_a_bare_room_import_fails_the_test_that_made_it(pytester: pytest.Pytester) -> None:
    """The conftest guard fails a test that imports a room by its folder name."""
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(checkout_guard=(Path(__file__).parent / "checkout_guard.py").read_text(encoding="utf-8"))
    pytester.makepyfile(runtime="X = 1", test_probe="def test_probe():\n    import runtime  # noqa: F401\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=1, errors=1)
