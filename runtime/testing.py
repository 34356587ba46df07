"""Test helpers: a published context for the length of a block, scoped overrides, and the
pytest fixtures built on them, each a test scope (`Context.acting_as("test")` is admitted
inside one). `published` and `config_scope` undo whatever their block did, exceptions
included, by re-installing the saved immutable State (at the next epoch: epochs never go
back); `scoped_override` sets back what its own thread changed and keeps what other
threads committed meanwhile (see `configbags.runtime.context.Restoring`). Nothing relies
on garbage collection (no __del__): dropping a scope object cannot un-publish anything.

Use from a conftest: `pytest_plugins = ["configbags.runtime.testing"]`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from configbags.runtime.context import Context, Restoring, process_context
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import load_project
from configbags.runtime.registry import TEST_ROLE
from configbags.runtime.resolve import Facts


class published(Restoring):
    """Publish `record` for the block, with the `facts` the hardware and model rules test
    (None keeps an earlier publish's, as `publish` does); afterwards the process is exactly
    as before (unpublished, or published with the earlier state)."""

    def __init__(self, record: Any, *, role: str = TEST_ROLE, context: Context[Any] | None = None,
                 facts: Facts | None = None, **ranks: int) -> None:
        super().__init__(context or process_context(record=record), test=True)
        self._record, self._role, self._facts, self._ranks = record, role, facts, ranks

    def __enter__(self) -> Context[Any]:
        ctx = super().__enter__()
        try:
            return ctx.publish(self._record, role=self._role, ranks=self._ranks or None, facts=self._facts)
        except BaseException:
            self.__exit__()
            raise


def scoped_override(source: str = "test-scope", /, *, context: Context[Any] | None = None,
                    **leaves: Any) -> Restoring:
    """Override `leaves` for the block (policy and owner are not checked; type, range and
    capacity are). Nestable; a dropped scope object never restores by itself. On exit,
    what this thread changed is set back; other threads' commits are kept."""
    return (context or process_context()).scoped(source, **leaves)


def _suite_context() -> Context[Any]:
    """This process's context; in a test suite that loaded several generated packages and
    published none, the project's own (`[tool.configbags]` package)."""
    try:
        return process_context()
    except ConfigError:
        return process_context(load_project().require_package())


@pytest.fixture
def config_scope() -> Iterator[Context[Any]]:
    """Whatever the test publishes or overrides is undone afterwards."""
    ctx = _suite_context()
    with ctx.restoring(test=True):
        yield ctx
