"""Project settings: which generated config package a project uses and where its schema
lives, read from `[tool.configbags]` in the nearest `pyproject.toml`.

    [tool.configbags]
    package = "myengine.config"   # import name of the generated package
    schema = "schema"             # schema folder, relative to pyproject.toml
    out = "myengine/config"       # where `configbags gen` writes (default: from package)

Every `configbags` command takes its defaults from here, so an engine's maintainers type
`configbags gen`, `configbags explain ...` or `configbags audit report ...` with no flags.
There is no default package: without a setting, a command that needs one says how to name it.
"""

from __future__ import annotations

import keyword
import sys
from pathlib import Path
from typing import Any

import attrs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from configbags.runtime.errors import ConfigError

# The one folder of a project where configbags' tools keep their caches (the ratchet's scan
# and inputs, gen's format cache); an engine's .gitignore names it once.
CACHE_DIR = ".configbags-cache"


@attrs.frozen
class ProjectSettings:
    root: Path  # the folder holding pyproject.toml (or the starting folder without one)
    package: str | None  # None: no `package` under [tool.configbags]
    schema: Path
    out: Path | None  # None: neither `out` nor `package` says where gen writes
    configured: bool  # whether [tool.configbags] was found

    def require_package(self, flag: str = "--package PKG") -> str:
        """The package named in the settings, or a ConfigError that says how to name one."""
        if self.package is not None:
            return self.package
        where = "[tool.configbags] in " + (
            str(self.root / "pyproject.toml") if (self.root / "pyproject.toml").is_file()
            else f"a pyproject.toml above {self.root}"
        )
        raise ConfigError(
            f"no generated config package is named: pass {flag}, or set `package = "
            f"\"myengine.config\"` under {where} (`configbags init` writes one)"
        )

    @property
    def regenerate(self) -> str:
        """The command that regenerates the package, as the generated headers print it."""
        return f"configbags gen --schema {self.rel(self.schema)} --package {self.package}"

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix() or "."
        except ValueError:
            return path.as_posix()


def importable_package(name: str) -> bool:
    """A dotted name Python can import a generated package as: identifiers, no keywords,
    no dunder part (`myeng.__init__` would become a folder of that name)."""
    return all(part.isidentifier() and not keyword.iskeyword(part) and not (part.startswith("__") and part.endswith("__"))
               for part in name.split("."))


def package_folder(root: Path, package: str) -> Path:
    """Where the source of `package` lives in a project: `<root>/src/a/b` in a src layout
    (when `<root>/src/<first part>` exists), else `<root>/a/b`."""
    parts = package.split(".")
    base = root / "src" if (root / "src" / parts[0]).is_dir() else root
    return base.joinpath(*parts)


def package_of_folder(folder: Path) -> str:
    """The import name of a folder (the inverse of `package_folder`): its name under each
    enclosing folder that is a package (holds an `__init__.py`), so `legacy_engine/config_bags`
    is `legacy_engine.config_bags` when legacy_engine is a package and `config_bags` when not.
    A relative `folder` stops at the working folder; resolve it first to look above."""
    parts = [folder.name]
    parent = folder.parent
    while (parent / "__init__.py").is_file() and parent != parent.parent:
        parts.append(parent.name)
        parent = parent.parent
    return ".".join(reversed(parts))


def project_root(start: Path | None = None) -> Path:
    """The project around `start` (default: the working folder): the folder of the nearest
    pyproject.toml above it, else `start` itself. Every relative path a configbags command
    takes is relative to it, so a command runs the same from any subfolder."""
    start = (start or Path.cwd()).resolve()
    pyproject = find_pyproject(start)
    return pyproject.parent if pyproject is not None else start


def project_path(text: str | Path) -> Path:
    """A path given on a configbags command line (argparse's `type=`): relative to the
    project (`project_root`), not to the working folder. Run from the project itself, the
    path stays as typed (so messages and hints show it as typed); from a subfolder it
    becomes absolute, so the hints printed there work from anywhere."""
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    cwd = Path.cwd().resolve()
    root = project_root(cwd)
    return path if root == cwd else root / path


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's data. Raises OSError, or ValueError (a decode error of the text or the
    TOML): the one place that knows tomllib is tomli before Python 3.11."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def load_project(start: Path | None = None) -> ProjectSettings:
    """The settings of the project containing `start` (default: the working folder)."""
    start = (start or Path.cwd()).resolve()
    pyproject = find_pyproject(start)
    table: dict[str, object] = {}
    root = start
    if pyproject is not None:
        root = pyproject.parent
        try:
            data = read_toml(pyproject)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{pyproject}: cannot read [tool.configbags] ({exc}); fix the file") from None
        found = data.get("tool", {}).get("configbags")
        if isinstance(found, dict):
            table = found
        elif found is not None:
            raise ConfigError(f"{pyproject}: [tool.configbags] must be a table")
    # `import` is the importer's table ([tool.configbags.import], read by import-dataclass)
    table = {k: v for k, v in table.items() if k != "import"}
    unknown = sorted(set(table) - {"package", "schema", "out"})
    if unknown:
        raise ConfigError(
            f"{pyproject}: [tool.configbags] has unknown key(s) {', '.join(unknown)}; "
            f"the keys are package, schema and out (and the importer's [tool.configbags.import] table)"
        )
    for key, value in table.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{pyproject}: [tool.configbags] {key} must be a non-empty string")
    package = str(table["package"]) if "package" in table else None
    schema = root / str(table.get("schema", "schema"))
    out = root / str(table["out"]) if "out" in table else (
        package_folder(root, package) if package is not None else None)
    return ProjectSettings(root, package, schema, out, configured=bool(table))
