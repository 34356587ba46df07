"""The context's records: the frozen `State` of one publish, the append-only override log
and its entries, and the results of a prepared change and of a re-publish. Plain data; no
behaviour beyond building and reading them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from configbags.runtime.leaftypes import Policy, jsonable
from configbags.runtime.registry import LeafSpec, secret_repr
from configbags.runtime.resolve import NO_FACTS, Facts, Layer, Origin, Shadowed

RankFn = Callable[[Mapping[str, Any]], Mapping[str, int]]
Ranks = Mapping[str, int] | RankFn

RECORD_SLOT = "server_args"


@attrs.frozen(repr=False)
class OverrideEntry:
    """One leaf change: who asked, what it was, what it became, at which epoch. `secret`:
    the leaf is a secret, so `repr()` (a log of the entry, a report, a traceback) shows its
    values as REDACTED; the values themselves are kept (other ranks need them)."""

    epoch: int
    source: str
    leaf: str
    namespace: str
    old: Any
    new: Any
    wall_time: float
    secret: bool = attrs.field(default=False, eq=False)

    def __repr__(self) -> str:
        old, new = (secret_repr(self.old), secret_repr(self.new)) if self.secret else (repr(self.old), repr(self.new))
        return (f"OverrideEntry(epoch={self.epoch}, source={self.source!r}, leaf={self.leaf!r}, "
                f"namespace={self.namespace!r}, old={old}, new={new}, wall_time={self.wall_time!r})")

    def as_dict(self, spec: LeafSpec | None = None) -> dict[str, Any]:
        """As plain data; with the leaf's `spec`, a secret's values are redacted (readbacks
        pass it; configbags.runtime.dist, which carries secrets to other ranks, does not)."""
        shown = spec.shown if spec is not None else _same
        return {
            "epoch": self.epoch,
            "source": self.source,
            "leaf": self.leaf,
            "namespace": self.namespace,
            "old": jsonable(shown(self.old)),
            "new": jsonable(shown(self.new)),
            "wall_time": self.wall_time,
        }


def _same(value: Any) -> Any:
    return value


class OverrideLog:
    """The override history. States share it: appending links a new node to the old log
    instead of copying it, so an override stays O(1) however long a server has run;
    iterating walks the chain once, oldest entry first. Compares equal to any sequence of
    the same entries.

    Bounded: once the chain holds more than twice `HISTORY` entries, an append folds all but
    the newest `HISTORY` into a summary that keeps each leaf's last folded entry (what is in
    force, and why, is never lost: readbacks, explain and a re-publish's replay see it), a
    count per (leaf, source kind) (`tally`, so counters never go back) and how many were
    folded (`folded`). Folding costs O(HISTORY) once per HISTORY appends."""

    HISTORY = 1_000

    __slots__ = ("_entries", "_folded", "_len", "_parent", "_standing", "_tally")

    def __init__(
        self,
        entries: Iterable[OverrideEntry] = (),
        parent: OverrideLog | None = None,
        *,
        standing: Iterable[OverrideEntry] = (),
        folded: int = 0,
        tally: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self._entries = tuple(entries)
        self._parent = parent
        # The summary of folded entries lives on the chain's root only.
        self._standing = tuple(standing) if parent is None else ()
        self._folded = folded if parent is None else 0
        self._tally: Mapping[tuple[str, str], int] = MappingProxyType(dict(tally or {}))
        below = len(parent) if parent is not None else len(self._standing)
        self._len = len(self._entries) + below

    def __add__(self, entries: Iterable[OverrideEntry]) -> OverrideLog:
        more = tuple(entries)
        if not more:
            return self
        if len(self) + len(more) <= 2 * self.HISTORY:
            return OverrideLog(more, self)
        return self._fold(more)

    def _fold(self, more: tuple[OverrideEntry, ...]) -> OverrideLog:
        root = self._root()
        recent = self._recent() + more
        cut = len(recent) - self.HISTORY
        tally = dict(root._tally)
        last: dict[str, OverrideEntry] = {e.leaf: e for e in root._standing}
        for e in recent[:cut]:
            tally[_tally_key(e)] = tally.get(_tally_key(e), 0) + 1
            last.pop(e.leaf, None)  # re-inserted last, so the summary stays in log order
            last[e.leaf] = e
        return OverrideLog(recent[cut:], standing=last.values(), folded=root._folded + cut, tally=tally)

    def _root(self) -> OverrideLog:
        node = self
        while node._parent is not None:
            node = node._parent
        return node

    def _recent(self) -> tuple[OverrideEntry, ...]:
        """The entries not folded, oldest first."""
        chunks = []
        node: OverrideLog | None = self
        while node is not None:
            chunks.append(node._entries)
            node = node._parent
        return tuple(e for chunk in reversed(chunks) for e in chunk)

    def __iter__(self) -> Iterator[OverrideEntry]:
        yield from self._root()._standing
        yield from self._recent()

    def __len__(self) -> int:
        return self._len

    @property
    def folded(self) -> int:
        """How many entries were folded into the summary (0 until the log first folds)."""
        return self._root()._folded

    @property
    def standing_count(self) -> int:
        """How many of the first entries iterated are the summary (each leaf's last folded one)."""
        return len(self._root()._standing)

    def tally_folded(self) -> dict[tuple[str, str], int]:
        """The folded entries' counts by (leaf, source kind); `tally` adds the rest."""
        return dict(self._root()._tally)

    @property
    def appended(self) -> int:
        """Every entry ever appended to this history, folded ones included."""
        root = self._root()
        return root._folded + self._len - len(root._standing)

    def tally(self) -> dict[tuple[str, str], int]:
        """Entries ever appended, by (leaf, source kind): the source's head before `:`
        (`http:oncall-alice` -> `http`), so the keys stay bounded by what the code names."""
        counts = self.tally_folded()
        for e in self._recent():
            counts[_tally_key(e)] = counts.get(_tally_key(e), 0) + 1
        return counts

    def since(self, older: OverrideLog) -> tuple[OverrideEntry, ...] | None:
        """The entries appended after `older`, oldest first, when this log grew from it by
        appending; None when it did not (a publish or a restore started another log)."""
        grown = self.appended - older.appended
        if grown < 0:
            return None
        chunks = []
        node: OverrideLog | None = self
        while node is not older:
            if node is None:
                return self._since_folded(older, grown)
            chunks.append(node._entries)
            node = node._parent
        return tuple(e for chunk in reversed(chunks) for e in chunk)

    def _since_folded(self, older: OverrideLog, grown: int) -> tuple[OverrideEntry, ...] | None:
        # A fold in between rebuilt the chain: this log grew from `older` when the entry
        # before its last `grown` ones is older's last entry (entries are shared, not copied).
        recent = self._recent()
        if not older or grown >= len(recent):
            return None
        before = recent[len(recent) - grown - 1]
        return recent[len(recent) - grown:] if before is next(reversed(older._recent()), None) else None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (OverrideLog, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OverrideLog({list(self)!r})"


def _tally_key(entry: OverrideEntry) -> tuple[str, str]:
    return entry.leaf, entry.source.partition(":")[0]


@attrs.frozen
class Dropped:
    """An override that a re-publish could not carry onto the new record, and why."""

    entry: OverrideEntry
    reason: str


@attrs.frozen
class RepublishReport:
    """What a re-publish did with the old override log."""

    replayed: tuple[OverrideEntry, ...]  # applied again onto the new record
    subsumed: tuple[OverrideEntry, ...]  # the value was already in force at that point
    dropped: tuple[Dropped, ...]


@attrs.frozen(eq=False, repr=False)
class State:
    """Everything published, frozen: the mappings are read-only views of dicts no one else
    holds, and the record and bags are frozen, so `ctx.state.values[...] = x` raises
    instead of making `server_info()` disagree with the bags. Identity matters: scopes and
    caches compare `is`.

    An operator readback, not a door for role code: it holds every namespace, so reading it
    bypasses role scoping (enforce) and the record-mode log. Role code reads its accessors,
    `bag()` or `snapshot()`, which are scoped; the read ratchet reports `.state` of a context
    in the scanned tree unless an allowlist entry says why it is operator code."""

    record: Any
    role: str
    values: Mapping[str, Any]  # leaves (fallbacks applied, overrides folded) and derived
    bags: Mapping[str, Any]  # namespace path -> bag object
    log: OverrideLog
    epoch: int
    sealed: bool
    ranks: Mapping[str, int]
    rank_fn: RankFn | None = None
    facts: Facts = NO_FACTS
    # Where each value not at its schema default came from before any override (operator
    # layers and rules); overrides are in `log`.
    origins: Mapping[str, Origin] = attrs.field(factory=dict)

    def __repr__(self) -> str:
        # Not the values: a logged or printed state would show every secret in clear.
        return (f"<State role={self.role!r} epoch={self.epoch} sealed={self.sealed} "
                f"{len(self.values)} values; server_info() shows them, redacted>")


@attrs.frozen(eq=False)
class Prepared:
    """A validated change, built but not installed: the state it applies to (`base`), the
    state after it, and its log entries (empty: no change)."""

    base: State
    state: State
    entries: tuple[OverrideEntry, ...]


class ProcessView:
    """The slots the generated accessors read: one per top-level namespace plus the raw
    record; the generated subclass declares them with their types. An accessor reads its
    slot inside a try block (free when it succeeds); an empty slot raises AttributeError
    and the accessor asks `Context.missing` to explain (not published, role scoping) or,
    in record mode, to record and fill it. There is deliberately no `__getattr__`: its
    mere presence stops CPython from specializing attribute loads on the class, which
    would slow every accessor read (about 1.4x, bench/bench_roles.py)."""

    __slots__ = ()


def override_origin(spec: LeafSpec, entry: OverrideEntry) -> Origin:
    layer = Layer.LOAD_TIME if spec.policy is Policy.LOAD_TIME else Layer.RUNTIME
    return Origin(layer, f"override from {entry.source!r} at epoch {entry.epoch}")


def origin_from(data: Mapping[str, Any]) -> Origin:
    over = data.get("forced_over")
    shadows = tuple(Shadowed(Layer(s["layer"]), s["source"], s["value"]) for s in data.get("shadows", ()))
    return Origin(Layer(data["layer"]), data["source"], data.get("rule"),
                  origin_from(over) if over else None, shadows)


def slot_value(state: State, slot: str) -> Any:
    return state.record if slot == RECORD_SLOT else state.bags[slot]


def thaw(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh dict of a state's read-only mapping at dict-copy speed: `dict(proxy)` walks
    the mapping protocol key by key, `proxy.copy()` copies the dict inside it at once."""
    return mapping.copy() if isinstance(mapping, MappingProxyType) else dict(mapping)
