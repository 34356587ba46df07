"""Test helpers: a published context for the length of a block, scoped overrides, and the
pytest fixtures built on them. Every helper restores the exact earlier state on exit,
exceptions included, by re-installing the saved immutable State. Nothing relies on
garbage collection (no __del__): dropping a scope object cannot un-publish anything.

Use from a conftest: `pytest_plugins = ["runtime.testing"]`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runtime.context import Context


def _context() -> Context[Any]:
    from generated.accessors import get_context

    return get_context()


@contextmanager
def published(record: Any, *, role: str = "test", context: Context[Any] | None = None,
              **ranks: int) -> Iterator[Context[Any]]:
    """Publish `record` for the block; afterwards the process is exactly as before
    (unpublished, or published with the earlier state)."""
    ctx = context or _context()
    with ctx.restoring():
        ctx.publish(record, role=role, ranks=ranks or None)
        yield ctx


@contextmanager
def scoped_override(source: str = "test-scope", /, *, context: Context[Any] | None = None,
                    **leaves: Any) -> Iterator[Context[Any]]:
    """Override `leaves` for the block (policy and owner are not checked; type, range and
    capacity are). Nestable."""
    ctx = context or _context()
    with ctx.scoped(source, **leaves):
        yield ctx


@pytest.fixture
def config_scope() -> Iterator[Context[Any]]:
    """Whatever the test publishes or overrides is undone afterwards."""
    ctx = _context()
    with ctx.restoring():
        yield ctx
