"""The house rules of the import graph, checked on the source (every import statement,
module-level or inside a function): one import root, a schema-generic runtime, build time
apart from run time, and torch only where pools are allocated or ranks talk."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOMS = ("codegen", "runtime", "generated", "migrate", "serve")
GENERIC_NAMES = {*ROOMS, "tests", "bench"}
# torch is imported by these modules only (DESIGN: torch only in pool and dist modules; plan
# measures CUDA memory when asked to).
TORCH_MODULES = {"runtime/dist.py", "runtime/kvcache/pools.py", "runtime/plan.py"}


def _modules(room: str) -> list[Path]:
    return sorted((REPO / room).rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file that runs (not those under
    `if TYPE_CHECKING:`); relative imports resolved against the file's place under the root."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = ["configbags", *path.relative_to(REPO).parent.parts]
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


def test_every_import_goes_through_the_configbags_root() -> None:
    bare = []
    for room in (*ROOMS, "configbags", "tests", "bench"):
        for path in sorted((REPO / room).glob("**/*.py")):
            if "fixtures" in path.parts or "cases" in path.parts or path.is_symlink():
                continue
            if room == "configbags" and path.parent != REPO / "configbags":
                continue  # the links to the rooms, walked above under their own names
            for line, module in _imports(path):
                if module.partition(".")[0] in GENERIC_NAMES - {"tests"}:
                    bare.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    assert not bare, "import through configbags.<room>, never a bare room name:\n" + "\n".join(bare)


def test_the_runtime_never_imports_a_generated_package_or_build_time_code() -> None:
    found = _violations(("runtime",), ("configbags.generated", "configbags.codegen", "configbags.migrate",
                                       "configbags.serve"))
    assert not found, "runtime/ must stay schema-generic and run-time only:\n" + "\n".join(found)


def test_codegen_never_imports_generated_code_or_the_migration_toolkit() -> None:
    found = _violations(("codegen",), ("configbags.generated", "configbags.migrate"))
    assert not found, "\n".join(found)


def test_generated_code_imports_the_runtime_by_name_and_siblings_relatively() -> None:
    for path in _modules("generated"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith("configbags.generated"), (
                    f"{path.name}:{node.lineno} imports a sibling absolutely; generated code must "
                    f"work under any package name"
                )


def test_the_door_takes_the_generated_package_by_name_and_no_build_time_code() -> None:
    """serve/ reaches a generated package only through process_context(package), so it
    serves any engine's schema; torch only through configbags.runtime.dist."""
    found = _violations(("serve",), ("configbags.generated", "configbags.codegen", "configbags.migrate", "torch"))
    assert not found, "\n".join(found)


def test_the_http_stack_stays_in_the_door() -> None:
    web = ("fastapi", "uvicorn", "starlette", "httpx", "pydantic")
    found = _violations(("codegen", "runtime", "generated", "migrate"), web)
    assert not found, "only serve/ may import the HTTP stack (the serve extra):\n" + "\n".join(found)


def test_torch_stays_in_the_pool_dist_and_plan_modules() -> None:
    found = [
        v for v in _violations(("runtime", "generated", "codegen", "migrate", "serve"), ("torch",))
        if v.partition(":")[0] not in TORCH_MODULES
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_is_linked_under_the_root(room: str) -> None:
    link = REPO / "configbags" / room
    assert link.is_symlink() and link.resolve() == (REPO / room).resolve()


def test_the_wheel_installs_one_import_root() -> None:
    import tomllib

    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["configbags*"]


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
