"""Scopes and runner views: a block that restores the exact earlier state, a block that
writes as another role, and a runner's overlay of a few leaves on the process bags."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from configbags.runtime.context._records import RepublishReport, State
from configbags.runtime.errors import UnknownLeafError
from configbags.runtime.leaftypes import closest
from configbags.runtime.registry import Registry

if TYPE_CHECKING:
    from configbags.runtime.context._context import Context


class ActingAs:
    """The block of `Context.acting_as`: sets the writer role on enter, restores the earlier
    one on exit (a class, like Restoring, so only __exit__ restores)."""

    def __init__(self, var: contextvars.ContextVar[str | None], role: str) -> None:
        self._var = var
        self._role = role
        self._tokens: list[contextvars.Token[str | None]] = []

    def __enter__(self) -> str:
        self._tokens.append(self._var.set(self._role))
        return self._role

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._tokens.pop())


class Restoring:
    """A scope that saves the state on enter and re-installs it on exit. A class rather than
    a generator on purpose: a dropped generator-based scope would be closed by the garbage
    collector, restoring (un-publishing) at a random moment; this one restores only in
    __exit__, and defines no __del__."""

    def __init__(self, context: Context[Any], source: str = "", leaves: Mapping[str, Any] | None = None) -> None:
        self._context = context
        self._source = source
        self._leaves = dict(leaves or {})
        self._saved: list[tuple[State | None, RepublishReport | None]] = []

    def __enter__(self) -> Context[Any]:
        ctx = self._context
        with ctx._lock:
            self._saved.append((ctx._state, ctx.republish_report))
            if self._leaves:
                try:
                    state = ctx.state
                    changes = ctx.validator.validate(state, self._leaves, source=self._source, check_policy=False)
                    ctx._install(ctx.builder.apply(state, self._source, changes)[0])
                except BaseException:
                    self._saved.pop()
                    raise
        return ctx

    def __exit__(self, *exc: object) -> None:
        ctx = self._context
        with ctx._lock:
            state, report = self._saved.pop()
            ctx._install(state)
            ctx.republish_report = report


class RunnerView:
    """Namespace bags for one runner: the process bags with a few leaves overlaid.
    Recomputed lazily whenever the process state changes (any override or re-publish)."""

    def __init__(self, context: Context[Any], name: str, overlay: Mapping[str, Any]) -> None:
        self.name = name
        self.overlay = dict(overlay)
        self._context = context
        self._cache: tuple[State, dict[str, Any]] | None = None

    @property
    def registry(self) -> Registry:
        return self._context.registry

    def bag(self, path: str) -> Any:
        context = self._context
        state = context.state
        if path not in state.bags:
            raise UnknownLeafError(
                f"runner view {self.name!r}: no namespace {path!r}{closest(path, state.bags)}"
            )
        context.scoping.admit(state, path.partition(".")[0], f"runner view {self.name!r}")
        cached = self._cache
        if cached is None or cached[0] is not state:
            _, bags, _ = self._context.builder.recompute(state, self.overlay)
            cached = self._cache = (state, bags)
        return cached[1][path]

    def __repr__(self) -> str:
        return f"RunnerView({self.name!r}, overlay={self.overlay!r})"
