"""Where a migration's generated package lives: the accessors module `ratchet fix`
imports, and the `configbags gen` command the hints print.

`ratchet fix` writes `from <accessors module> import get_<namespace>` into the engine. A
module that does not exist leaves the engine failing with ImportError, and the bundled
demo server's (`configbags.generated.accessors`) with NotPublishedError, since nobody
publishes that context, while `ratchet check` stays green either way. So the module is
found before anything is rewritten, by path and without importing the engine, and must
define every accessor function the rewrite may import. The default is `<package>.accessors`
for the package named in the project's `[tool.configbags]`; without one the flag is
required.

`configbags gen` with no flags writes the package of the working folder's
`[tool.configbags]`; without that table it needs `--schema` and `--out`, so a hint names
both, or says what to record in the table.
"""

from __future__ import annotations

import ast
import importlib.util
import keyword
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from configbags.migrate.generated import GeneratedPackages
from configbags.migrate.settings import RatchetConfigError
from configbags.runtime.errors import ConfigError
from configbags.runtime.leaftypes import closest
from configbags.runtime.project import (
    ProjectSettings,
    find_pyproject,
    load_project,
    package_of_folder,
    project_root,
)

FLAG = "--accessors-module"
# folders never searched for generated packages: tool caches and environments
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})


def shown(path: Path) -> str:
    """`path` as the user would type it on a configbags command line: relative to the
    project around the working folder (`project_root`), from any subfolder of it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(project_root()).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


def _project(start: Path | None) -> ProjectSettings | None:
    try:
        return load_project(start)
    except ConfigError:
        return None  # a malformed table: gen itself reports it, a hint need not


def plain_gen_applies(schema: Path, out: Path | None = None) -> bool:
    """Does a bare `configbags gen`, run from the working folder, regenerate `schema` (into
    `out`, when given)? Only when the folder's [tool.configbags] names them."""
    project = _project(None)
    return (
        project is not None
        and project.out is not None
        and project.schema.resolve() == schema.resolve()
        and (out is None or project.out.resolve() == out.resolve())
    )


def gen_command(schema: Path, out: Path | None = None, *, example: str | None = None) -> str:
    """The `configbags gen` command line that regenerates the package of `schema`, from
    the working folder. Without [tool.configbags] for it, `--out` names the package's
    folder (gen names the package after it), a placeholder when `out` is unknown."""
    if plain_gen_applies(schema, out):
        return "configbags gen"
    folder = shown(out) if out is not None else (
        "<your package's config folder" + (f", e.g. {example}" if example else "") + ">"
    )
    return f"configbags gen --schema {shown(schema)} --out {folder}"


def gen_hint(schema: Path, out: Path | None = None, *, example: str | None = None) -> str:
    """`gen_command` in backquotes, with where to record [tool.configbags] when no table
    applies (so that a bare `configbags gen` works from then on)."""
    command = gen_command(schema, out, example=example)
    if command == "configbags gen":
        return f"`{command}`"
    pyproject = find_pyproject(schema.resolve().parent)
    where = shown(pyproject) if pyproject is not None else "the engine's pyproject.toml"
    return (
        f"`{command}` (or record package, schema and out under [tool.configbags] in {where}, "
        f"see docs/MIGRATING.md section 2, and run a bare `configbags gen`)"
    )


def example_out(source: Path) -> str | None:
    """A config folder to suggest next to `source` (a file or folder) when its folder is a
    package: `legacy_engine/server_args.py` -> `legacy_engine/config_bags`."""
    folder = source if source.is_dir() else source.parent
    if not (folder / "__init__.py").is_file():
        return None
    return f"{shown(folder)}/config_bags"


# --------------------------------------------------------------------------- the accessors module


def _import_bases(project: Path, roots: Sequence[str]) -> list[Path]:
    """Folders a project's top-level packages may sit in: the project, its `src/`, and for
    each scan root its parent and the folder above its enclosing packages."""
    bases = [project, project / "src"]
    for root in roots:
        folder = Path(root) if Path(root).is_absolute() else project / root
        bases.append(folder.parent)
        while (folder / "__init__.py").is_file() and folder != folder.parent:
            folder = folder.parent
        bases.append(folder)
    unique: dict[Path, None] = {}
    for base in bases:
        if base.is_dir():
            unique.setdefault(base.resolve(), None)
    return list(unique)


def _module_file(base: Path, parts: Sequence[str]) -> Path | None:
    # (a package before a module of its name, as Python imports it)
    for candidate in (base.joinpath(*parts, "__init__.py"), base.joinpath(*parts[:-1], f"{parts[-1]}.py")):
        if candidate.is_file():
            return candidate
    return None


def _installed_file(parts: Sequence[str]) -> Path | None:
    """The file of an installed module, found from its top-level package's spec: the
    submodules are looked up on disk, so no package `__init__` runs."""
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if len(parts) == 1:
        return Path(spec.origin) if spec.origin and spec.has_location else None
    locations = [Path(p) for p in spec.submodule_search_locations or ()]
    for part in parts[1:-1]:
        locations = [p / part for p in locations if (p / part).is_dir()]
    for location in locations:
        found = _module_file(location, [parts[-1]])
        if found is not None:
            return found
    return None


def generated_packages(project: Path, roots: Sequence[str]) -> list[tuple[str, Path]]:
    """(import name, folder) of every generated package under the scan roots, the project's
    `src/` and its top-level packages."""
    is_generated = GeneratedPackages()
    found: dict[Path, str] = {}
    starts = [Path(r) if Path(r).is_absolute() else project / r for r in roots]
    starts += [d for d in (project, project / "src") if d.is_dir()]
    for start in starts:
        if not start.is_dir():
            continue
        shallow = start in (project, project / "src")
        for dirpath, dirnames, _ in os.walk(start):
            folder = Path(dirpath)
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
                # the project itself: only its packages (an environment or data folder is no package)
                and (not shallow or folder != start or (folder / d / "__init__.py").is_file())
            )
            if is_generated(folder):
                found.setdefault(folder.resolve(), package_of_folder(folder))
    return sorted((name, folder) for folder, name in found.items())



def default_accessors_module(schema: Path, roots: Sequence[str] = ()) -> str:
    """`<package>.accessors` for the package that the schema's project records under
    [tool.configbags] for this schema; else a RatchetConfigError asking for the flag."""
    project_root = schema.resolve().parent
    try:
        project = load_project(project_root)
    except ConfigError as exc:
        raise RatchetConfigError(f"{FLAG} not given, and {exc}") from None
    if project.package is not None and project.schema.resolve() == schema.resolve():
        return f"{project.package}.accessors"
    pyproject = find_pyproject(project_root)
    where = (
        f"{shown(pyproject)} has no [tool.configbags] table for the schema {shown(schema)}"
        if pyproject is not None
        else f"there is no pyproject.toml with a [tool.configbags] table above {shown(schema)}"
    )
    packages = generated_packages(project_root, roots)
    example = f"{packages[0][0]}.accessors" if packages else "myengine.config_bags.accessors"
    raise RatchetConfigError(
        f"{FLAG} is required: {where}, so fix does not know which generated package to "
        f"import. Pass {FLAG} PACKAGE.accessors for the package `configbags gen --out` wrote "
        f"(e.g. {example}), or record `package` and `schema` under [tool.configbags] "
        f"(docs/MIGRATING.md section 2)"
    )


def find_accessors_module(project: Path, roots: Sequence[str], module: str) -> Path:
    """The file of `module`, found without importing anything: `<module path>.py` under the
    project, its `src/` or the scan roots' parents; an installed module only when its
    top-level package is not one of the project's (a typo in the engine's own package
    must not find some other installed copy). RatchetConfigError when not found."""
    parts = module.split(".")
    if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise RatchetConfigError(
            f"{FLAG} {module!r} is not a dotted module name; give the generated package's "
            f"accessors module, e.g. myengine.config_bags.accessors"
        )
    bases = _import_bases(project, roots)
    for base in bases:
        found = _module_file(base, parts)
        if found is not None:
            return found
    ours = any((base / parts[0]).is_dir() or (base / f"{parts[0]}.py").is_file() for base in bases)
    if not ours:
        found = _installed_file(parts)
        if found is not None:
            return found
    candidates = [f"{name}.accessors" for name, _ in generated_packages(project, roots)]
    hint = closest(module, candidates)
    if not hint and candidates:
        hint = f" (the generated packages here: {', '.join(candidates[:5])})"
    where = ", ".join(shown(b) for b in bases)
    raise RatchetConfigError(
        f"{FLAG} {module}: no such module: no {'/'.join(parts)}.py under {where}"
        + ("" if ours else ", and not installed")
        + f"{hint}. Give the accessors module of the package `configbags gen` wrote; nothing "
        f"was rewritten"
    )


def defined_names(path: Path) -> set[str]:
    """Names a module binds at its top level, by ast (functions, classes, assignments,
    imports)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
    return names


def check_defines(path: Path, module: str, functions: Iterable[str], regenerate: str) -> None:
    """RatchetConfigError unless `path` (the file of `module`) defines every one of
    `functions`: a generated accessors module defines `get_<namespace>` for each of its
    schema's namespaces, so a missing one means another schema's package or a stale one."""
    try:
        names = defined_names(path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise RatchetConfigError(f"{FLAG} {module}: cannot read {shown(path)}: {exc}") from None
    missing = sorted(set(functions) - names)
    if missing:
        raise RatchetConfigError(
            f"{FLAG} {module} ({shown(path)}) does not define {', '.join(missing)}, through "
            f"which this schema's leaves are read: it is not the package generated from this "
            f"schema, or it is stale. Give the right module, or (re)generate it: {regenerate}; "
            f"nothing was rewritten"
        )
