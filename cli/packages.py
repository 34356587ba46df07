"""The generated config package an operator command works on, named by `--package` or by
`[tool.configbags] package`: imported here, in the command layer, because the run-time
library never imports a generated package (not even through importlib)."""

from __future__ import annotations

import importlib
from typing import Any

from configbags.runtime.context import Context, process_context
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import load_project


def load_context(package: str) -> Context[Any]:
    """Import `package`'s accessors (which register its context) and return that context."""
    try:
        importlib.import_module(f"{package}.accessors")
    except ImportError as exc:
        raise ConfigError(
            f"cannot import the generated config package {package!r} ({exc}); generate it with "
            f"`configbags gen --package {package}` or fix the package name"
        ) from None
    return process_context(package)


def named_context(package: str | None, flag: str = "--package PKG") -> Context[Any]:
    """The context of `package`, else of the project's `[tool.configbags]` package; a
    ConfigError naming `flag` when neither names one."""
    return load_context(package or load_project().require_package(flag))
