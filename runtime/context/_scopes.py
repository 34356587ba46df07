"""Scopes and runner views: a block that restores what it changed, a block that
writes as another role, and a runner's overlay of a few leaves on the process bags."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from configbags.runtime.context._records import RepublishReport, State
from configbags.runtime.errors import ConfigError, ScopeError, UnknownLeafError
from configbags.runtime.leaftypes import closest
from configbags.runtime.registry import Registry

if TYPE_CHECKING:
    from configbags.runtime.context._context import Context

log = logging.getLogger("configbags")

Owner = tuple[int, int]  # (thread, asyncio task in it or 0)
_entered = itertools.count()  # the order scopes are entered in, over every context


def scope_owner() -> Owner:
    """Who enters and exits a scope, and whose changes are "mine" to it: the thread, and the
    asyncio task running in it (the tasks of one event loop share a thread, yet each opens
    and closes scopes of its own, interleaved with the others')."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        task = None
    return threading.get_ident(), 0 if task is None else id(task)


class ActingAs:
    """The block of `Context.acting_as`: sets the writer role on enter, restores the earlier
    one on exit (a class, like Restoring, so only __exit__ restores). `admit` runs on enter,
    so a block built inside a test scope cannot be entered after it closed."""

    def __init__(self, var: contextvars.ContextVar[str | None], role: str,
                 admit: Callable[[], None] = lambda: None) -> None:
        self._var = var
        self._role = role
        self._admit = admit
        self._tokens: list[contextvars.Token[str | None]] = []

    def __enter__(self) -> str:
        self._admit()
        self._tokens.append(self._var.set(self._role))
        return self._role

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._tokens.pop())


@attrs.frozen
class Change:
    """What one install changed, as a leaf scope that was open meanwhile sees it: the leaves
    it set (to their new values), whether it replaced the record or role (a publish), and
    a description that names it in warnings and refusals."""

    leaves: Mapping[str, Any]
    replaced: bool
    sealed: bool
    what: str

    @classmethod
    def between(cls, registry: Registry, old: State | None, new: State | None) -> Change:
        if old is None or new is None:
            verb = "an un-publish" if new is None else f"a publish as role {new.role!r} (epoch {new.epoch})"
            return cls({}, True, False, verb)
        sealed = new.sealed and not old.sealed
        if new.record is old.record and new.role == old.role:
            entries = new.log.since(old.log)
            if entries is not None:  # an override: its entries say what changed
                what = ", ".join(f"{e.namespace}.{e.leaf} from {e.source!r} (epoch {e.epoch})" for e in entries)
                return cls({e.leaf: new.values[e.leaf] for e in entries}, False, sealed, what or "a seal")
        changed = {n: new.values[n] for n in registry.leaves
                   if new.values[n] is not old.values[n] and new.values[n] != old.values[n]}
        replaced = new.record is not old.record or new.role != old.role
        what = (f"a publish as role {new.role!r} (epoch {new.epoch})" if replaced
                else f"a restore of {', '.join(changed) or 'nothing'} (epoch {new.epoch})")
        return cls(changed, replaced, sealed, what)


@attrs.define
class Frame:
    """One entered scope: the state and report to go back to, who entered it (thread and
    task) and when, and (leaf scopes) what that owner and the others changed while it was open."""

    saved: State | None
    report: RepublishReport | None
    owner: Owner
    name: str
    order: int = attrs.field(factory=lambda: next(_entered))
    mine: set[str] = attrs.field(factory=set)  # leaves the scope's thread changed
    mine_replaced: bool = False  # ... and whether it re-published
    mine_sealed: bool = False
    theirs: dict[str, Any] = attrs.field(factory=dict)  # leaf -> value another thread set last
    theirs_sealed: bool = False
    foreign: list[str] = attrs.field(factory=list)  # other threads' changes, described
    # leaf -> what to set it back to instead of `saved`'s value: a scope entered before this
    # one (by another owner) that changed the leaf closed meanwhile, so the value this
    # scope saw on entry was that scope's and must not come back (its own target does)
    targets: dict[str, Any] = attrs.field(factory=dict)
    # its exit came while a scope entered after it was open (refused then): it closes as
    # soon as those have, since a `with` statement never calls its exit again
    closing: bool = False

    def target(self, leaf: str) -> Any:
        assert self.saved is not None
        return self.targets.get(leaf, self.saved.values[leaf])

    def note(self, change: Change, *, mine: bool) -> None:
        if mine:
            self.mine.update(change.leaves)
            self.mine_replaced |= change.replaced
            self.mine_sealed |= change.sealed
        else:
            self.theirs.update(change.leaves)
            self.theirs_sealed |= change.sealed
            self.foreign.append(change.what)


class Restoring:
    """A scope that saves the state on enter and restores it on exit. A class rather than
    a generator on purpose: a dropped generator-based scope would be closed by the garbage
    collector, restoring (un-publishing) at a random moment; this one restores only in
    __exit__, and defines no __del__.

    A block scope (`restoring()`, `published`, the `config_scope` fixture) owns its block:
    whatever happened in it, in any thread, is undone. A leaf scope (`scoped()`, with leaves
    or without) owns only what its own thread (and asyncio task) changed: when no other
    committed meanwhile it goes back to the saved state exactly; otherwise it sets back only
    the leaves its owner changed, keeps every change the others committed (a leaf both
    changed keeps the other's value, with a warning naming it), and refuses with ScopeError,
    naming the other change and restoring nothing, when its own owner re-published in it. In
    every case the epoch goes on counting up (a restored state gets the next epoch), so no
    two different configs of one process ever share an epoch.

    Scopes of one owner close in the reverse order they were entered in: an exit while a
    scope entered later by the same thread or task is still open (an ExitStack unwound by
    hand) is refused with ScopeError naming that scope, restoring nothing, rather than
    undoing the inner scope's change under it; the scope stays open, and closes (restoring)
    on its own as soon as the inner scopes are closed (`_close_waiting`: a `with` statement
    never calls its exit again). Two owners scoping one leaf leave nothing
    behind in either exit order: a closed scope hands its targets on to the scopes entered
    after it (`_hand_on`), and its undo is no change for the scopes entered before it to
    keep (`_reverted`).

    `test=True` marks a test scope: `acting_as` a role that writes every leaf (`test`) is
    admitted only for the thread and task that has one open (`open_test_for`)."""

    def __init__(self, context: Context[Any], source: str = "", leaves: Mapping[str, Any] | None = None,
                 *, test: bool = False, block: bool = True) -> None:
        self._context = context
        self._source = source
        self._leaves = dict(leaves or {})
        self._test = test
        self._block = block
        self._frames: list[Frame] = []

    def __enter__(self) -> Context[Any]:
        ctx = self._context
        with ctx._lock:
            frame = Frame(ctx._state, ctx.republish_report, scope_owner(), self._source or "restoring()")
            self._frames.append(frame)
            ctx._scopes.add(self)
            if not self._block:
                ctx._watching.add(self)
            if self._leaves:
                try:
                    state = ctx.state
                    changes = ctx.validator.validate(state, self._leaves, source=self._source, check_policy=False)
                    ctx._install(ctx.builder.apply(state, self._source, changes)[0])
                except BaseException:
                    self._close(frame)
                    raise
        return ctx

    def open_test_for(self, owner: Owner) -> bool:
        """An open test scope that admits `owner` (see `acting_as`): entered by that thread
        and task, or by that thread outside any task (the block that runs the event loop)."""
        return self._test and any(frame.owner == owner or frame.owner == (owner[0], 0) for frame in self._frames)

    def note(self, change: Change, owner: Owner) -> None:
        for frame in self._frames:
            frame.note(change, mine=frame.owner == owner)

    def _close(self, frame: Frame) -> None:
        ctx = self._context
        self._frames.remove(frame)
        if not any(f.closing for f in self._frames):
            ctx._closing.discard(self)
        if not self._frames:
            ctx._scopes.discard(self)
            ctx._watching.discard(self)

    def __exit__(self, *exc: object) -> None:
        ctx = self._context
        owner = scope_owner()
        with ctx._lock:
            if not self._frames:
                raise ScopeError(f"scope {self._source or 'restoring()'!r} is not open: it was closed already, "
                                 f"or never entered")
            frame = next((f for f in reversed(self._frames) if f.owner == owner), self._frames[-1])
            inner = [f.name for f in self._open_frames() if f.owner == frame.owner and f.order > frame.order]
            if inner:
                # it stays open, and closes (restoring) once the inner scopes have
                frame.closing = True
                ctx._closing.add(self)
                raise ScopeError(
                    f"scope {frame.name!r} closed while {', '.join(map(repr, inner))}, entered after it in "
                    f"the same thread or task, is still open; scopes close in the reverse order they "
                    f"were entered in: nothing was restored yet, and {frame.name!r} closes, restoring, as "
                    f"soon as the inner scopes are closed"
                )
            self._finish(frame)
            self._close_waiting(frame.owner)

    def _close_waiting(self, owner: Owner) -> None:
        """Close the scopes of `owner` whose exit was refused while an inner scope was open,
        innermost first, once no scope of theirs entered after them is open."""
        while True:
            frames = [(scope, f) for scope in list(self._context._scopes) for f in scope._frames if f.owner == owner]
            waiting = [(scope, f) for scope, f in frames if f.closing
                       and not any(g.order > f.order for _, g in frames if not g.closing)]
            if not waiting:
                return
            scope, frame = max(waiting, key=lambda pair: pair[1].order)
            try:
                scope._finish(frame)
            except ScopeError as exc:  # its own exit has returned long ago: said, never raised here
                log.error("scope %r, closed after its inner scope, could not restore: %s", frame.name, exc)

    def _finish(self, frame: Frame) -> None:
        """Close `frame` and restore what it owns."""
        ctx = self._context
        with ctx._lock:
            self._close(frame)
            if not self._block:
                self._hand_on(frame)
            if frame.foreign or (frame.targets and not frame.mine_replaced):
                self._reverted(frame, self._restore_own(frame))
                return
            current, saved = ctx._state, frame.saved
            if current is not saved:
                if current is not None and saved is not None:
                    saved = attrs.evolve(saved, epoch=max(saved.epoch, current.epoch + 1))
                ctx._install(saved)
            ctx.republish_report = frame.report
            if not self._block:
                self._reverted(frame, frame.mine)

    def _open_frames(self) -> list[Frame]:
        return [f for scope in list(self._context._scopes) for f in scope._frames]

    def _hand_on(self, frame: Frame) -> None:
        """The leaves this scope changed go back to its targets; a scope entered after it by
        another thread or task saved this scope's values on entry, so it must go back to
        this scope's targets instead (else a closed scope's value would come back)."""
        if frame.saved is None:
            return
        for later in self._open_frames():
            if later.order > frame.order and later.owner != frame.owner:
                for leaf in frame.mine:
                    later.targets.setdefault(leaf, frame.target(leaf))

    def _reverted(self, frame: Frame, leaves: Iterable[str]) -> None:
        """This scope set `leaves` back to what they were when it was entered: to a scope of
        another owner entered before it, that undoes this scope's change, and is no change
        of theirs for it to keep (else the earlier scope would keep its own value for good)."""
        for earlier in self._open_frames():
            if earlier.order < frame.order and earlier.owner != frame.owner:
                for leaf in leaves:
                    earlier.theirs.pop(leaf, None)

    def _restore_own(self, frame: Frame) -> set[str]:
        """Another thread committed while this leaf scope was open: set back only what this
        scope's thread changed, on top of the state as it is now. Returns the leaves it set
        back."""
        ctx = self._context
        current = ctx._state
        theirs = "; ".join(frame.foreign)
        if frame.mine_replaced or current is None or frame.saved is None:
            raise ScopeError(
                f"scope {self._source!r} cannot restore: its thread re-published inside it, and "
                f"another thread committed meanwhile ({theirs}); restoring the record would discard "
                f"that change, so nothing was restored; re-publish explicitly instead"
            )
        wanted: dict[str, Any] = {}
        for leaf in sorted(frame.mine):
            if leaf in frame.theirs:
                log.warning("scope %r: %s was changed by another thread meanwhile (%s); keeping that "
                            "change instead of restoring it", self._source, leaf, theirs)
                target = frame.theirs[leaf]
            else:
                target = frame.target(leaf)
            if current.values[leaf] != target:
                wanted[leaf] = target
        source = f"{self._source} (restored)"
        try:
            changes = ctx.validator.validate(current, wanted, source=source, check_policy=False)
        except ConfigError as exc:
            raise ScopeError(
                f"scope {self._source!r} cannot restore on top of another thread's change "
                f"({theirs}): {exc}; nothing was restored"
            ) from None
        state, _ = ctx.builder.apply(current, source, changes)
        if frame.mine_sealed and not frame.theirs_sealed and not frame.saved.sealed:
            state = attrs.evolve(state, sealed=False, epoch=max(state.epoch, current.epoch + 1))
        if state is not current:
            ctx._install(state)
        return {leaf for leaf in frame.mine if leaf not in frame.theirs}


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
        shown = {leaf: self.registry.shown(leaf, value) for leaf, value in self.overlay.items()}
        return f"RunnerView({self.name!r}, overlay={shown!r})"
