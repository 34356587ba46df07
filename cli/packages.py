"""The generated config package an operator command works on, named by `--package` or by
`[tool.configbags] package`: imported here, in the command layer, because the run-time
library never imports a generated package (not even through importlib)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from configbags.runtime.context import Context, process_context
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import load_project, package_folder, project_root


def load_context(package: str) -> Context[Any]:
    """Import `package`'s accessors (which register its context) and return that context.
    A package that is not installed is imported from the project around the working
    folder (its folder, or its `src/`), from any subfolder of it."""
    _importable_from_project(package)
    try:
        importlib.import_module(f"{package}.accessors")
    except ImportError as exc:
        raise ConfigError(
            f"cannot import the generated config package {package!r} ({exc}); generate it with "
            f"`configbags gen --package {package}` or fix the package name"
        ) from None
    return process_context(package)


def _importable_from_project(package: str) -> None:
    top = package.partition(".")[0]
    if top in sys.modules or importlib.util.find_spec(top) is not None:
        return  # installed, or already on the path: that one is used
    base = package_folder(project_root(), top).parent
    if (base / top).is_dir() and str(base) not in sys.path:
        sys.path.insert(0, str(base))


def named_context(package: str | None, flag: str = "--package PKG") -> Context[Any]:
    """The context of `package`, else of the project's `[tool.configbags]` package; a
    ConfigError naming `flag` when neither names one."""
    return load_context(package or load_project().require_package(flag))
