"""Helpers for generator tests: copy a case schema, generate, import the result under a
unique package name."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from types import ModuleType

from configbags.codegen.__main__ import main as gen_main

CASES = Path(__file__).parent / "cases"
REPO = Path(__file__).resolve().parent.parent


def copy_case(name: str, dest: Path) -> Path:
    target = dest / "schema"
    shutil.copytree(CASES / name / "schema", target)
    return target


def legacy_project(folder: Path) -> Path:
    """A copy of the legacy engine fixture under `folder`, made a project: a pyproject.toml
    at its top (where configbags commands find their base from any subfolder)."""
    root = folder / "engine"
    shutil.copytree(REPO / "tests" / "fixtures" / "legacy_engine", root)
    (root / "pyproject.toml").write_text('[project]\nname = "legacy-engine"\nversion = "0.1"\n')
    return root


def generate(schema: Path, out: Path, *extra: str) -> int:
    return gen_main(["--schema", str(schema), "--out", str(out), *extra])


_counter = 0


def import_generated(out: Path) -> dict[str, ModuleType]:
    """Import a generated folder as a fresh package; returns its modules by name."""
    global _counter
    _counter += 1
    name = f"_gen_case_{_counter}"
    root = out.parent / f"pkgroot{_counter}"
    root.mkdir()
    shutil.copytree(out, root / name)
    sys.path.insert(0, str(root))
    try:
        return {
            mod: importlib.import_module(f"{name}.{mod}")
            for mod in ("bags", "registry", "role_audit", "server_args", "accessors", "ratchet_allowlist")
        }
    finally:
        sys.path.remove(str(root))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
