"""The process registry: every generated package's context, registered when its accessors
module is imported, and `process_context()`, which schema-generic code uses to find one
without importing a generated package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from configbags.runtime.errors import ConfigError, NotPublishedError

if TYPE_CHECKING:
    from configbags.runtime.context._context import Context

CONTEXTS: dict[str, Context[Any]] = {}


def process_context(package: str | None = None, *, record: Any = None) -> Context[Any]:
    """The context of a generated package of this process: the one named, the one whose
    `ServerArgs` type `record` has, or else the only published one (or the only one loaded).
    Schema-generic code (dist, testing, the KV configurator) uses this instead of importing
    a generated package."""
    if record is not None:
        for ctx in CONTEXTS.values():
            if ctx.record_type is type(record):
                return ctx
    if package is not None:
        if package not in CONTEXTS:
            raise ConfigError(
                f"the generated config package {package!r} is not loaded in this process; import "
                f"its accessors first (`import {package}.accessors`), or generate it with "
                f"`configbags gen --package {package}`"
            )
        return CONTEXTS[package]
    # An engine publishes one package; a process that loaded several (a test suite) means
    # the published one.
    candidates = [c for c in CONTEXTS.values() if c.published] or list(CONTEXTS.values())
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise NotPublishedError(
            "no generated config package is loaded in this process; import its accessors "
            "(e.g. `from myengine.config.accessors import publish`) or pass a context explicitly"
        )
    raise ConfigError(
        f"several generated config packages are loaded ({', '.join(sorted(c.package or '?' for c in candidates))}); "
        f"pass the context (or package=...) explicitly"
    )
