"""Install and scoping: filling the accessor slots (`view` and `cfg`) from a State, with
the role modes deciding which slots a role sees, and explaining an empty slot."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from configbags.runtime import roles as role_modes
from configbags.runtime.context._records import RECORD_SLOT, State
from configbags.runtime.errors import RoleError
from configbags.runtime.registry import Registry

if TYPE_CHECKING:
    from configbags.runtime.context._context import Context


class RoleScoping:
    """The role modes (`off | record | enforce`) applied to reads: which namespaces a role
    may read, the check of one read, and in record mode the log of what each role read."""

    def __init__(self, registry: Registry, lock: threading.RLock) -> None:
        self.registry = registry
        self.mode = role_modes.MODE
        self.recorder = role_modes.Recorder() if self.mode == "record" else None
        self._observed: set[tuple[str, str]] = set()
        self._lock = lock

    def visible(self, state: State, all_slots: frozenset[str]) -> frozenset[str] | set[str]:
        """The slots to fill: all (off), the role's namespaces (enforce; the raw record only
        for a role that may read everything, since it spans every namespace), or what the
        role has already read (record)."""
        if self.mode == "off":
            return all_slots
        if self.mode == "enforce":
            return self.readable(state.role)
        return {ns for r, ns in self._observed if r == state.role}

    def readable(self, role_name: str) -> frozenset[str]:
        role = self.registry.roles.get(role_name)
        if role is None:
            return frozenset()
        everything = role.reads >= frozenset(self.registry.top_level)
        return role.reads | {RECORD_SLOT} if everything else role.reads

    def admit(self, state: State, name: str, what: str) -> None:
        """The role check of one read of top-level namespace `name` (or the raw record):
        raise in enforce mode if the role may not read it; in record mode, record it once."""
        if self.mode == "enforce" and name not in self.readable(state.role):
            declared = "{" + ", ".join(sorted(self.registry.roles[state.role].reads)) + "}"
            if name == RECORD_SLOT:
                raise RoleError(
                    f"{what}: role {state.role!r} may not read the raw record, which spans every "
                    f"namespace; its declared set is {declared}. Read those namespaces through "
                    f"their accessors instead"
                )
            raise RoleError(
                f"{what}: role {state.role!r} may not read namespace {name!r}; its declared set "
                f"is {declared}. Pass the value in from a role that owns it, or add {name!r} to "
                f"the role's `reads` in schema/roles.yaml (with an audit record) and run make gen"
            )
        if self.mode == "record" and (state.role, name) not in self._observed:
            with self._lock:
                if (state.role, name) not in self._observed:
                    self._observed.add((state.role, name))
                    assert self.recorder is not None
                    self.recorder.read(state.role, role_modes.RAW_RECORD if name == RECORD_SLOT else name)


class Unread:
    """Stands in a `cfg` slot whose namespace this process may not read yet (before publish;
    outside the role's set in enforce mode; not yet recorded in record mode). Any attribute
    read asks the context, which explains why or, in record mode, records, fills the slot
    and answers."""

    __slots__ = ("_context", "_slot")

    def __init__(self, context: Context[Any], slot: str) -> None:
        self._context = context
        self._slot = slot

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context.missing(self._slot), name)

    def __repr__(self) -> str:
        return f"<unread config namespace {self._slot!r}>"


class Installer:
    """Fills the accessor slots of one context: `view` (what the accessor functions read)
    and `cfg` (the module-level view; an unreadable slot holds an `Unread`). Only slots
    whose object changed are written, and role scoping decides which a role sees."""

    def __init__(self, context: Context[Any], view: Any, cfg: Any, slots: tuple[str, ...],
                 scoping: RoleScoping) -> None:
        self._context = context
        self.view, self.cfg = view, cfg
        self.slots = slots
        self.all_slots = frozenset(slots)
        self._scoping = scoping
        self.clear()

    def clear(self) -> None:
        """Every slot empty: the state of an unpublished context."""
        for slot in self.slots:
            with suppress(AttributeError):
                object.__delattr__(self.view, slot)
            object.__setattr__(self.cfg, slot, Unread(self._context, slot))

    def fill(self, old: State | None, state: State, slots: Iterable[str] | None = None) -> None:
        """Fill the slots from `state`, which has just replaced `old`. `slots`: the only
        top-level namespaces whose bags may differ from `old`'s (an override knows them),
        else every slot is compared."""
        view, cfg = self.view, self.cfg
        allowed = self._scoping.visible(state, self.all_slots)
        # Only slots whose object changed are written: an override rebuilds one bag or two.
        same = old is not None and old.role == state.role
        old_bags, new_bags = (old.bags if old is not None else {}), state.bags
        for ns in slots if same and slots is not None else self.slots:
            if ns == RECORD_SLOT:
                value = state.record
                if same and old is not None and old.record is value:
                    continue
            else:
                value = new_bags[ns]
                if same and old_bags[ns] is value:
                    continue
            if ns in allowed:
                object.__setattr__(view, ns, value)
                object.__setattr__(cfg, ns, value)
            else:
                with suppress(AttributeError):
                    object.__delattr__(view, ns)
                object.__setattr__(cfg, ns, Unread(self._context, ns))

    def set(self, slot: str, value: Any) -> None:
        """Fill one slot (a read admitted in record mode)."""
        object.__setattr__(self.view, slot, value)
        object.__setattr__(self.cfg, slot, value)
