"""The process config context: publish, policy-checked overrides with provenance, derived
values, one readback, scopes and runner views.

Design in one paragraph: the whole published config is one immutable `State` (the raw
record, the resolved flat values, the bag objects, the override log, the epoch). Every
change builds a new State and installs it; nothing is mutated in place. So an override is
all-or-nothing by construction (validate, then build, then one install), a scope restores
the exact earlier state by re-installing the State object it saved, and a reader never
sees a half-built bag. Accessors read plain slots of a `ProcessView`, which the context
fills at install time; role scoping acts there too, so an allowed read costs nothing.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import attrs

from configbags.runtime import roles as role_modes
from configbags.runtime.errors import (
    CapacityError,
    ConfigError,
    LeafValueError,
    NotPublishedError,
    OwnerError,
    PolicyError,
    RankNotStampedError,
    RoleError,
    UnknownLeafError,
)
from configbags.runtime.leaftypes import Policy, check_bounds, closest, jsonable, short_repr
from configbags.runtime.record import dump_path_of, origins_of
from configbags.runtime.registry import REDACTED, DerivedSpec, LeafSpec, Registry
from configbags.runtime.resolve import (
    DEFAULT_ORIGIN,
    NO_FACTS,
    Facts,
    Layer,
    Origin,
    resolve,
    tests_a_fact,
    verdicts,
)

log = logging.getLogger("configbags")

# Stamped ranks: fixed values, or a function of the resolved values that computes them.
RankFn = Callable[[Mapping[str, Any]], Mapping[str, int]]
Ranks = Mapping[str, int] | RankFn

RECORD_SLOT = "server_args"


@attrs.frozen
class OverrideEntry:
    """One leaf change: who asked, what it was, what it became, at which epoch."""

    epoch: int
    source: str
    leaf: str
    namespace: str
    old: Any
    new: Any
    wall_time: float

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
    """The append-only override history. States share it: appending links a new node to
    the old log instead of copying it, so an override stays O(1) however long a server
    has run; iterating walks the chain once, oldest entry first. Compares equal to any
    sequence of the same entries."""

    __slots__ = ("_entries", "_len", "_parent")

    def __init__(self, entries: Iterable[OverrideEntry] = (), parent: OverrideLog | None = None) -> None:
        self._entries = tuple(entries)
        self._parent = parent
        self._len = len(self._entries) + (len(parent) if parent is not None else 0)

    def __add__(self, entries: Iterable[OverrideEntry]) -> OverrideLog:
        more = tuple(entries)
        return OverrideLog(more, self) if more else self

    def __iter__(self) -> Iterator[OverrideEntry]:
        chunks = []
        node: OverrideLog | None = self
        while node is not None:
            chunks.append(node._entries)
            node = node._parent
        for chunk in reversed(chunks):
            yield from chunk

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (OverrideLog, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OverrideLog({list(self)!r})"


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
    dropped: tuple[Dropped, ...]  # no longer valid, with the reason (also logged as a warning)


@attrs.frozen(eq=False)
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


V = TypeVar("V", bound=ProcessView)


class Context(Generic[V]):
    """The config of one process. The generated `accessors` module creates exactly one and
    exposes it through `publish()` and `get_context()`; schema-generic code finds it with
    `process_context()`, never by importing a generated package."""

    def __init__(
        self,
        registry: Registry,
        view: V,
        runner_view_type: type[RunnerView] | None = None,
        *,
        record_type: type[Any] | None = None,
        package: str | None = None,
    ) -> None:
        self.registry = registry
        self.view = view
        # `cfg`, the module-level view generated packages export: the same slots, but an
        # unreadable one holds an `Unread` that explains (or records) on attribute access,
        # so `cfg.parallel.tp_size` is two slot loads and never a function call.
        self.cfg: V = type(view)()
        self._slots = (*registry.top_level, RECORD_SLOT)
        self._all_slots = frozenset(self._slots)
        for slot in self._slots:
            object.__setattr__(self.cfg, slot, Unread(self, slot))
        self.record_type = record_type  # the generated ServerArgs (rebuilds exported records)
        self.package = package
        if package is not None:
            _CONTEXTS[package] = self
        self._runner_view_cls = runner_view_type or RunnerView
        self._state: State | None = None
        self._lock = threading.RLock()
        self._mode = role_modes.MODE
        self._recorder = role_modes.Recorder() if self._mode == "record" else None
        self._observed: set[tuple[str, str]] = set()
        self._hash_cache: tuple[State, str] | None = None
        self.republish_report: RepublishReport | None = None
        # The role overrides are checked as, when not the process's own (see acting_as). A
        # context variable, so it holds for one thread or task and never leaks to another.
        self._writer: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"configbags_writer_{id(self)}", default=None
        )

    # -- lifecycle ---------------------------------------------------------------------
    def publish(self, record: Any, *, role: str, ranks: Ranks | None = None,
                facts: Facts | None = None) -> Context[V]:
        """Resolve `record` (rules, fallbacks, derived values, pins) and install it.

        `facts` (`configbags.runtime.resolve.Facts`: the GPU's name, memory and SM version,
        the model's config.json) feed the hardware and model rules; a rule that tests a fact
        does not apply without it (its leaf keeps its lower layer), while one that tests only
        leaves applies all the same. A re-publish without facts keeps
        the previous ones (the GPU did not change). Publishing
        again replays the override log onto the new record and reports what no longer
        applies (`republish_report`), rather than dropping overrides silently; the seal
        carries over (a re-publish does not reopen load time).

        `ranks` stamps the process's ranks: a mapping, or a function of the resolved values
        (`configbags.runtime.dist` passes one), which is re-run whenever an override changes the bag
        holding them, so elastic resizing cannot leave a stale rank behind."""
        self._check_role(role, "publish")
        with self._lock:
            previous = self._state
            if ranks is None and previous is not None:
                # A world rank does not change because the record was re-published.
                ranks = previous.rank_fn or previous.ranks
            if facts is None:
                facts = previous.facts if previous is not None else NO_FACTS
            state = self._fresh_state(
                record, role, ranks,
                epoch=(previous.epoch + 1) if previous else 1,
                sealed=previous.sealed if previous else False,
                facts=facts,
            )
            if previous is not None and previous.log:
                state = self._replay(state, previous.log)
            else:
                self.republish_report = None
            if self._recorder is not None:
                self._recorder.published(role)  # before installing: a bad output path fails here
            self._install(state)
        log.info("config published (role %s, epoch %d): %s", role, state.epoch, _NonDefaults(self, state))
        dump = dump_path_of(record)
        if dump is not None:
            self.dump_config(dump)
        return self

    def adopt(
        self,
        record: Any,
        *,
        role: str,
        log: Iterable[OverrideEntry] = (),
        epoch: int,
        sealed: bool = False,
        ranks: Ranks | None = None,
        facts: Facts | None = None,
        resolution: Mapping[str, Any] | None = None,
    ) -> Context[V]:
        """Install a state exported by another process or rank (configbags.runtime.dist): resolve
        `record`, fold `log` onto it keeping its entries and `epoch` as they are, so this
        state equals the exporter's. Values are checked (type, range, capacity), not policy
        or owner: the exporter already admitted them. Unlike publish, nothing is replayed.

        `resolution` is the exporter's `export_resolution()`: its rule results and origins
        are taken as they are (this rank may have no facts); without it the rules run on
        `facts` here."""
        self._check_role(role, "adopt")
        with self._lock:
            if facts is None and resolution is not None:
                facts = Facts.from_dict(resolution.get("facts") or {})
            state = self._folded(
                self._fresh_state(record, role, ranks, epoch=epoch, sealed=sealed,
                                  facts=facts or NO_FACTS, resolution=resolution),
                tuple(log), epoch)
            if self._recorder is not None:
                self._recorder.published(role)  # before installing: a bad output path fails here
            self._install(state)
        return self

    def apply_entries(self, entries: Iterable[OverrideEntry]) -> None:
        """Apply override entries another process or rank already admitted (configbags.runtime.dist),
        keeping their epoch, source and time, so both sides hold the same log. Values are
        checked (type, range, capacity), not policy or owner: the origin checked those.
        Costs what an override costs, however long the log."""
        batch = tuple(entries)
        if batch:
            with self._lock:
                self._install(self._folded(self.state, batch, max(e.epoch for e in batch)))

    def _check_role(self, role: str, verb: str) -> None:
        if role not in self.registry.roles:
            raise RoleError(
                f"{verb}(role={role!r}): unknown role{closest(role, self.registry.roles)}; "
                f"roles are {', '.join(sorted(self.registry.roles))} (schema/roles.yaml)"
            )

    def _fresh_state(self, record: Any, role: str, ranks: Ranks | None, *, epoch: int, sealed: bool,
                     facts: Facts = NO_FACTS, resolution: Mapping[str, Any] | None = None) -> State:
        values, origins = self._resolve_record(record, facts, resolution)
        if ranks is None or isinstance(ranks, Mapping):
            rank_fn, stamped = None, dict(ranks or {})
        else:
            rank_fn, stamped = ranks, dict(ranks(values))
        return State(record=record, role=role, values=MappingProxyType(values),
                     bags=MappingProxyType(self._build_bags(values, stamped)), log=OverrideLog(),
                     epoch=epoch, sealed=sealed, ranks=MappingProxyType(stamped), rank_fn=rank_fn,
                     facts=facts, origins=MappingProxyType(dict(origins)))

    def _folded(self, state: State, entries: tuple[OverrideEntry, ...], epoch: int) -> State:
        """`state` with already-admitted `entries` applied and appended, at `epoch`."""
        if not entries:
            return state
        final = {e.leaf: e.new for e in entries}  # later entries win, as they did there
        changes = self._validate(state, final, source=entries[0].source, check_policy=False)
        return self._next(state, changes, state.log + entries, epoch)

    def seal(self) -> None:
        """End of model load: `load_time` leaves are fixed from here on."""
        with self._lock:
            state = self.state
            self._install(attrs.evolve(state, sealed=True))

    @property
    def state(self) -> State:
        """The current State: an operator readback (see `State`), not role-scoped; the read
        ratchet holds it out of role code."""
        state = self._state
        if state is None:
            raise NotPublishedError(
                "the config context is not published yet; call publish(server_args, role=...) "
                "at process start (tests: use configbags.runtime.testing.published)"
            )
        return state

    @property
    def published(self) -> bool:
        return self._state is not None

    @property
    def role(self) -> str:
        return self.state.role

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def sealed(self) -> bool:
        return self.state.sealed

    # -- overrides ---------------------------------------------------------------------
    def override(self, source: str, /, **leaves: Any) -> tuple[OverrideEntry, ...]:
        """Validate every leaf (known, type, range, policy, owner, capacity), then apply all
        of them or none. Returns the log entries of the changes (unchanged values log
        nothing); the epoch goes up once per call that changes anything."""
        with self._lock:
            state = self.state
            changes = self._validate(state, leaves, source=source, check_policy=True)
            new_state, entries = self._apply(state, source, changes)
            if entries:
                self._install(new_state, self.registry.cascade(changes).slots)
                # Values are shown (secrets redacted) only when someone listens.
                for e in entries if log.isEnabledFor(logging.INFO) else ():
                    spec = self.registry.leaves[e.leaf]
                    log.info("config override [%s] %s.%s: %r -> %r (epoch %d)",
                             e.source, e.namespace, e.leaf, spec.shown(e.old), spec.shown(e.new), e.epoch)
            return entries

    def acting_as(self, role: str) -> ActingAs:
        """Check the overrides made in this block (in this thread or task) as written by
        `role`, not by the process's role: an HTTP config API in the tokenizer process writes
        for the `operator`, so only leaves whose schema names `operator` as owner or writer
        pass. Policy, type, range and capacity checks are unchanged."""
        self._check_role(role, "acting_as")
        return ActingAs(self._writer, role)
    # -- two-phase changes (configbags.runtime.dist) ---------------------------------------
    def prepare_override(self, source: str, /, **leaves: Any) -> Prepared:
        """Phase one of an override that several ranks commit together: validate exactly
        as `override` does and build the next state, installing nothing."""
        with self._lock:
            base = self.state
            changes = self._validate(base, leaves, source=source, check_policy=True)
            state, entries = self._apply(base, source, changes)
            return Prepared(base, state, entries)

    def prepare_entries(self, entries: Iterable[OverrideEntry]) -> Prepared:
        """Phase one of `apply_entries`: check entries another rank admitted and build the
        state after them, installing nothing."""
        batch = tuple(entries)
        with self._lock:
            base = self.state
            state = self._folded(base, batch, max(e.epoch for e in batch)) if batch else base
            return Prepared(base, state, batch)

    def commit(self, prepared: Prepared) -> None:
        """Phase two: install a prepared change, if nothing else changed the state since it
        was prepared (else ConfigError, and nothing is installed)."""
        with self._lock:
            if self._state is not prepared.base:
                raise ConfigError(
                    "the config changed between prepare and commit (another override or publish "
                    "ran in this process meanwhile); nothing was applied here"
                )
            if prepared.entries:
                self._install(prepared.state)
                for e in prepared.entries:
                    log.info("config override [%s] %s.%s: %r -> %r (epoch %d)",
                             e.source, e.namespace, e.leaf, e.old, e.new, e.epoch)

    def _validate(
        self, state: State, leaves: Mapping[str, Any], *, source: str, check_policy: bool
    ) -> dict[str, Any]:
        reg = self.registry
        coerced: dict[str, Any] = {}
        for name, value in leaves.items():
            spec = reg.leaves.get(name)
            if spec is None:
                if name in reg.derived:
                    d = reg.derived[name]
                    raise PolicyError(
                        f"{d.namespace}.{name} is derived from {', '.join(d.inputs)} and cannot be "
                        f"overridden; override its inputs instead"
                    )
                raise UnknownLeafError(
                    f"override from {source!r}: {name!r} is not a config leaf"
                    f"{closest(name, reg.leaves)}"
                )
            try:
                new = spec.type.coerce(value)
                check_bounds(new, choices=spec.choices, minimum=spec.minimum, maximum=spec.maximum)
            except LeafValueError as exc:
                why = REDACTED + " is not valid" if spec.secret else str(exc)
                raise LeafValueError(
                    f"override of {spec.namespace}.{name} (policy {spec.policy}, owner "
                    f"{spec.owner}) from {source!r} in role {state.role!r}: {why}; give a value "
                    f"of type {spec.type} within the declared choices/range"
                ) from None
            if check_policy:
                self._check_policy(state, spec, source)
            coerced[name] = new
        for name, new in coerced.items():
            self._check_capacity(state, reg.leaves[name], new, coerced)
        return coerced

    def _check_policy(self, state: State, spec: LeafSpec, source: str) -> None:
        if spec.policy is Policy.STARTUP:
            raise PolicyError(
                f"override of {_where(spec)} from {source!r} refused: startup leaves are fixed at publish; "
                f"set it in the operator input ({'/'.join(spec.flags) or 'config file'}) instead"
            )
        if spec.policy is Policy.LOAD_TIME and state.sealed:
            raise PolicyError(
                f"override of {_where(spec)} from {source!r} refused: the context was sealed at the end of "
                f"model load; resolve it before seal() or declare it `override: runtime`"
            )
        writer = self._writer.get()
        if not self.registry.may_write(writer or state.role, spec):
            who = f"it is written as role {writer!r}" if writer else f"this process has role {state.role!r}"
            allowed = f"the owner role {spec.owner!r}" + "".join(f" or writer {w!r}" for w in spec.writers)
            raise OwnerError(
                f"override of {_where(spec)} from {source!r} refused: {who}, and only {allowed} may "
                f"write it; do it in the {spec.owner} process, or name the role in the leaf's "
                f"`writers:` in the schema"
            )

    def _check_capacity(self, state: State, spec: LeafSpec, new: Any, batch: Mapping[str, Any]) -> None:
        if spec.capacity is None or new is None:
            return
        bound = batch.get(spec.capacity, state.values.get(spec.capacity))
        if bound is not None and new > bound:
            where = self.registry.namespace_of(spec.capacity)
            shown = f"={bound!r}"
            if spec.capacity not in batch:  # the caller gave it: no news to them
                top = where.partition(".")[0]
                if self._mode == "enforce" and top not in self._readable(state.role):
                    # The message must not reveal a namespace the role may not read.
                    shown = f" (its value is in namespace {top!r}, which role {state.role!r} may not read)"
                else:
                    self._admit(state, top, f"capacity check of {spec.name}")
            raise CapacityError(
                f"override of {spec.namespace}.{spec.name}={new!r} (policy {spec.policy}, owner "
                f"{spec.owner}, role {state.role!r}) refused: above its capacity "
                f"{where}.{spec.capacity}{shown}, which "
                f"sized buffers at publish; {self._raise_capacity_hint(spec.capacity)}"
            )

    def _raise_capacity_hint(self, capacity: str) -> str:
        derived = self.registry.derived.get(capacity)
        if derived is None:
            flags = self.registry.leaves[capacity].flags
            return f"raise {capacity} at startup ({flags[0] if flags else 'config file'})"
        inputs = [self.registry.leaves[i] for i in derived.inputs if i in self.registry.leaves]
        named = ", ".join(s.flags[0] if s.flags else s.name for s in inputs)
        return f"it is derived at publish from its inputs; raise them at startup ({named})"

    def _apply(
        self, state: State, source: str, changes: Mapping[str, Any]
    ) -> tuple[State, tuple[OverrideEntry, ...]]:
        """Build (not install) the state after `changes`; a value that resolves to what is
        already in force (after fallbacks) is no change and logs nothing."""
        reg = self.registry
        changed = {
            n: v for n, v in changes.items()
            if (resolved := _with_fallback(reg.leaves[n], v)) != state.values[n]
            or type(resolved) is not type(state.values[n])
        }
        if not changed:
            return state, ()
        epoch = state.epoch + 1
        now = time.time()
        entries = tuple(
            OverrideEntry(epoch, source, n, reg.leaves[n].namespace, state.values[n], v, now)
            for n, v in changed.items()
        )
        return self._next(state, changed, state.log + entries, epoch), entries

    def _next(self, state: State, changed: Mapping[str, Any], log_: OverrideLog, epoch: int) -> State:
        values, bags, ranks = self._recompute(state, changed)
        if ranks is not state.ranks:
            ranks = MappingProxyType(dict(ranks))
        return State(record=state.record, role=state.role, values=MappingProxyType(values),
                     bags=MappingProxyType(bags), log=log_, epoch=epoch, sealed=state.sealed,
                     ranks=ranks, rank_fn=state.rank_fn,
                     facts=state.facts, origins=state.origins)

    def _recompute(
        self, state: State, changed: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], Mapping[str, int]]:
        """New flat values, bags and ranks after `changed`: fallbacks re-applied, every
        dependent non-pinned derived value recomputed, only touched bags (and their parents)
        rebuilt, ranks re-stamped if their bag is rebuilt and they come from a function."""
        reg = self.registry
        cascade = reg.cascade(changed)
        values = _thaw(state.values)
        for name, value in changed.items():
            values[name] = _with_fallback(reg.leaves[name], value)
        for d in cascade.recompute:
            values[d] = _derive(reg.derived[d], values)
        ranks = state.ranks
        if state.rank_fn is not None and cascade.restamp:
            ranks = dict(state.rank_fn(values))
        bags = _thaw(state.bags)
        for path in cascade.rebuild:
            bags[path] = self._make_bag(path, values, bags, ranks)
        return values, bags, ranks

    # -- resolution and bags -------------------------------------------------------------
    def _resolve_record(
        self, record: Any, facts: Facts, resolution: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], Mapping[str, Origin]]:
        """The record's values with the rules applied (or an exported resolution taken as
        is), then fallbacks and derived values; and the origin of each non-default value."""
        leaves = self.registry.leaves
        raw = {name: getattr(record, name) for name in leaves}
        if resolution is not None:
            origins: Mapping[str, Origin] = {
                n: _origin_from(o) for n, o in resolution.get("origins", {}).items() if n in leaves
            }
            for name, value in resolution.get("rule_values", {}).items():
                raw[name] = leaves[name].type.coerce(value)
        else:
            done = resolve(self.registry, raw, origins_of(record, leaves), facts)
            origins = done.origins
            for warning in done.forced:
                log.warning("%s", warning)
        values = raw
        for name, fallback in self.registry.fallbacks.items():
            if values[name] is None:
                values[name] = fallback
        for spec in self.registry.derived.values():
            values[spec.name] = _derive(spec, values)
        return values, origins

    def _build_bags(self, values: Mapping[str, Any], ranks: Mapping[str, int]) -> dict[str, Any]:
        bags: dict[str, Any] = {}
        for path in self.registry.namespaces:
            bags[path] = self._make_bag(path, values, bags, ranks)
        return bags

    def _make_bag(self, path: str, values: Mapping[str, Any], bags: Mapping[str, Any],
                  ranks: Mapping[str, int]) -> Any:
        ns = self.registry.namespaces[path]
        kwargs = {f: values[f] for f in ns.fields}
        for attr, child in ns.children:
            kwargs[attr] = bags[child]
        bag = ns.bag(**kwargs)
        if ns.ranks and ranks:
            # Ranks are facts of this process, not config: stamped after construction; an
            # unstamped one raises from its property, saying what did not happen.
            object.__setattr__(bag, "_ranks", {r: ranks[r] for r in ns.ranks if r in ranks})
        return bag

    # -- installing into the accessor view ----------------------------------------------
    def _install(self, state: State | None, slots: Iterable[str] | None = None) -> None:
        """Make `state` the published one and fill the accessor slots from it. `slots`: the
        only top-level namespaces whose bags may differ from the current state's (an
        override knows them), else every slot is compared."""
        view, cfg = self.view, self.cfg
        old = self._state
        if state is None:
            self._state = None
            for slot in self._slots:
                with suppress(AttributeError):
                    object.__delattr__(view, slot)
                object.__setattr__(cfg, slot, Unread(self, slot))
            return
        # First, so `state` (server_info, snapshot) is never older than what an accessor
        # returns: a reader that saw a new slot value finds this state (or a newer one).
        self._state = state
        allowed = self._visible(state)
        # Only slots whose object changed are written: an override rebuilds one bag or two.
        same = old is not None and old.role == state.role
        old_bags, new_bags = (old.bags if old is not None else {}), state.bags
        for ns in slots if same and slots is not None else self._slots:
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
                object.__setattr__(cfg, ns, Unread(self, ns))

    def _visible(self, state: State) -> frozenset[str] | set[str]:
        """The slots to fill: all (off), the role's namespaces (enforce; the raw record only
        for a role that may read everything, since it spans every namespace), or what the
        role has already read (record)."""
        if self._mode == "off":
            return self._all_slots
        if self._mode == "enforce":
            return self._readable(state.role)
        return {ns for r, ns in self._observed if r == state.role}

    def _readable(self, role_name: str) -> frozenset[str]:
        role = self.registry.roles.get(role_name)
        if role is None:
            return frozenset()
        everything = role.reads >= frozenset(self.registry.top_level)
        return role.reads | {RECORD_SLOT} if everything else role.reads

    def _admit(self, state: State, name: str, what: str) -> None:
        """The role check of one read of top-level namespace `name` (or the raw record):
        raise in enforce mode if the role may not read it; in record mode, record it once."""
        if self._mode == "enforce" and name not in self._readable(state.role):
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
        if self._mode == "record" and (state.role, name) not in self._observed:
            with self._lock:
                if (state.role, name) not in self._observed:
                    self._observed.add((state.role, name))
                    assert self._recorder is not None
                    self._recorder.read(state.role, role_modes.RAW_RECORD if name == RECORD_SLOT else name)

    def missing(self, name: str) -> Any:
        """An accessor found its view slot empty: explain, or (record mode) record and fill."""
        accessor = f"get_{name}()"
        state = self._state
        if state is None:
            raise NotPublishedError(
                f"{accessor} was called before publish(); publish the ServerArgs record at process "
                f"start (publish(server_args, role=...)), or in tests use configbags.runtime.testing.published"
            )
        if name not in self.registry.top_level and name != RECORD_SLOT:
            raise AttributeError(name)
        self._admit(state, name, accessor)
        with self._lock:
            current = self.state
            value = _slot_value(current, name)
            object.__setattr__(self.view, name, value)
            object.__setattr__(self.cfg, name, value)
            return value

    # -- scopes (tests) -------------------------------------------------------------------
    def restoring(self) -> Restoring:
        """Restore the exact state on exit, exceptions included (published or not)."""
        return Restoring(self)

    def scoped(self, source: str = "test-scope", /, **leaves: Any) -> Restoring:
        """Override `leaves` for the block, bypassing policy and owner (tests set what they
        need) but not type, range or capacity; restore the exact earlier state on exit."""
        return Restoring(self, source, leaves)

    # -- readback -----------------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """The single readback every surface that reports config uses: the raw `record` the
        operator gave, the `overrides` log (source, old, new, epoch, time), `resolved` (rules,
        overrides, fallbacks and derived values applied), `layers` (each leaf's layer and
        source, and the rule that set it) and the `facts` the rules saw. Secrets read as
        REDACTED everywhere in it."""
        state = self.state
        reg = self.registry
        return {
            "record": {n: reg.shown(n, v) for n, v in jsonable(state.record.to_dict()).items()},
            "overrides": [e.as_dict(reg.leaves.get(e.leaf)) for e in state.log],
            "resolved": {n: jsonable(reg.shown(n, v)) for n, v in state.values.items()},
            "layers": {n: o.as_dict() for n, o in self.origins().items()},
            "facts": state.facts.as_dict(),
        }

    def origins(self) -> dict[str, Origin]:
        """Every leaf's origin now: its last override (layer load_time or runtime, by policy)
        or else where publish resolved it from."""
        state = self.state
        out = {n: state.origins.get(n, DEFAULT_ORIGIN) for n in self.registry.leaves}
        for e in state.log:
            out[e.leaf] = _override_origin(self.registry.leaves[e.leaf], e)
        return out

    def explain(self, leaf: str) -> dict[str, Any]:
        """Every layer of one leaf: its schema default, what each rule made of the facts,
        the operator value and its source, each override, and the resolved value with the
        layer (and rule) it came from. Secrets read as REDACTED."""
        state = self.state
        if leaf not in state.values:
            raise UnknownLeafError(f"{leaf!r} is not a config leaf{closest(leaf, state.values)}")
        spec = self.registry.leaves.get(leaf)
        out: dict[str, Any] = {
            "leaf": leaf,
            "namespace": self.registry.namespace_of(leaf),
            "accessor": self.registry.accessor_of(leaf),
            "policy": spec.policy.value if spec else "derived",
            "owner": spec.owner if spec else None,
            "secret": spec.secret if spec else False,
            "hashed": leaf in self.registry.hashed,
            "record": jsonable(self.registry.shown(leaf, getattr(state.record, leaf))) if spec else None,
            "overrides": [e.as_dict(spec) for e in state.log if e.leaf == leaf],
            "resolved": jsonable(self.registry.shown(leaf, state.values[leaf])),
        }
        if spec is None:
            derived = self.registry.derived[leaf]
            out.update(layer="derived", source=f"derived from {', '.join(derived.inputs)}", rule=None, rules=[])
            return out
        origin = self.origins()[leaf]
        base = {n: getattr(state.record, n) for n in self.registry.leaves}
        base.update({n: state.values[n] for n, o in state.origins.items() if o.rule is not None})
        out.update(
            default=jsonable(spec.shown(spec.default)),
            layer=origin.layer.value,
            source=origin.source,
            rule=origin.rule,
            origin=origin.as_dict(),
            rules=[v.as_dict(spec) for v in verdicts(self.registry, leaf, state.facts, base, state.origins)],
            facts=state.facts.as_dict(),
        )
        needs_facts = [r.id for r in self.registry.rules_by_leaf.get(leaf, ()) if tests_a_fact(r)]
        if needs_facts and state.facts == NO_FACTS:
            out["note"] = f"no facts were given at publish, so the rules that test them did not apply: {', '.join(needs_facts)}"
        return out

    def export_resolution(self) -> dict[str, Any]:
        """What the rules decided, as plain data for `adopt(..., resolution=...)` on another
        rank or process (which may have no facts): the origins and the rule-set values.
        Secrets never come from rules, so none is in it."""
        state = self.state
        return {
            "facts": state.facts.as_dict(),
            "origins": {n: o.as_dict() for n, o in state.origins.items()},
            "rule_values": {n: jsonable(state.values[n]) for n, o in state.origins.items()
                            if o.rule is not None},
        }

    def hash_factors(self) -> dict[str, Any]:
        """What `config_hash()` covers: its purpose, the schema version, the
        configbags version and each hashed leaf with its resolved value. Leaves that can
        change at runtime, size buffers (`kind: memory/capacity`) or are secret are out
        unless declared `hash: true` (secrets never)."""
        state = self.state
        reg = self.registry
        return {
            "purpose": HASH_PURPOSE,
            "schema_version": reg.schema_version,
            "configbags_version": _configbags_version(),
            "leaves": {n: jsonable(reg.shown(n, state.values[n])) for n in reg.hashed},
        }

    def config_hash(self) -> str:
        """A stable hash of the factors in `hash_factors()` (a compile-cache key). Values are
        encoded canonically (-0.0 as 0.0, ints of any size), so it never raises for a
        published state."""
        state = self.state
        cached = self._hash_cache
        if cached is not None and cached[0] is state:
            return cached[1]
        reg = self.registry
        digest = hashlib.sha256()
        for part in (HASH_PURPOSE, reg.schema_version, _configbags_version()):
            digest.update(_canonical(part))
        for name in reg.hashed:
            digest.update(_canonical(name))
            digest.update(_canonical(state.values[name]))
        value = digest.hexdigest()[:16]
        self._hash_cache = (state, value)
        return value

    def dump_config(self, path: str | Path) -> Path:
        """Write the resolved config as a YAML config file: every leaf not at its schema
        default (rule results included), so passing it back with `--config` reproduces this
        run on any machine. Secrets are left out (named in a comment) and set as before."""
        import yaml

        state = self.state
        reg = self.registry
        values: dict[str, Any] = {}
        secrets = []
        origins = self.origins()
        for name, spec in reg.leaves.items():
            value = getattr(state.record, name) if origins[name].layer is Layer.DEFAULT else state.values[name]
            if origins[name].layer is Layer.DEFAULT and (value == spec.default or jsonable(value) == spec.default):
                continue
            if spec.secret:
                secrets.append(name)
                continue
            values[name] = jsonable(value)
        header = [f"# Resolved config (schema version {reg.schema_version}, config hash {self.config_hash()}).",
                  "# Pass it back with --config to reproduce this run."]
        if secrets:
            header.append(f"# Secrets left out (set them as before): {', '.join(sorted(secrets))}.")
        text = "\n".join(header) + "\n" + yaml.safe_dump(values, sort_keys=True, allow_unicode=True)
        out = Path(path)
        out.write_text(text, encoding="utf-8")
        log.info("config dumped to %s (%d values)", out, len(values))
        return out

    def bag(self, path: str) -> Any:
        """The current bag of any namespace path (`exec.kernel`), for generic code; role
        scoping applies as it does to the accessors."""
        state = self.state
        if path not in state.bags:
            raise UnknownLeafError(f"bag({path!r}): no such namespace{closest(path, state.bags)}")
        self._admit(state, path.partition(".")[0], f"bag({path!r})")
        return state.bags[path]

    def snapshot(self) -> Mapping[str, Any]:
        """The bags of one state, by namespace path: for a reader that needs several
        namespaces from the same moment (each accessor returns the bag in force when it is
        called, so two accessor calls can straddle an override). Read-only; in enforce mode
        it holds the role's namespaces only, and in record mode it counts as reading every
        namespace it holds."""
        state = self.state
        readable = self._readable(state.role) if self._mode == "enforce" else set(self.registry.top_level)
        for top in self.registry.top_level:
            if top in readable:
                self._admit(state, top, "snapshot()")
        return MappingProxyType({p: b for p, b in state.bags.items() if p.partition(".")[0] in readable})

    # -- runner views ----------------------------------------------------------------------
    def runner_view(self, name: str, /, **leaves: Any) -> RunnerView:
        """A view for one runner (draft vs target) that overlays `leaves` on the process
        bags without touching them. Pass it to that runner; it follows later process
        overrides of every leaf it does not overlay."""
        state = self.state
        overlay = self._validate(state, leaves, source=f"runner:{name}", check_policy=False)
        return self._runner_view_cls(self, name, overlay)

    # -- re-publish -------------------------------------------------------------------------
    def _replay(self, state: State, old_log: OverrideLog) -> State:
        """Carry the old overrides onto a freshly published state, call by call (so each
        stays all-or-nothing), each re-validated against the new record and role."""
        replayed: list[OverrideEntry] = []
        subsumed: list[OverrideEntry] = []
        dropped: list[Dropped] = []
        calls: dict[tuple[int, str], list[OverrideEntry]] = {}
        for entry in old_log:
            calls.setdefault((entry.epoch, entry.source), []).append(entry)
        for (_, source), entries in calls.items():
            wanted: dict[str, Any] = {}
            for e in entries:
                spec = self.registry.leaves[e.leaf]
                # Compared with what is in force at this point of the replay (not with the
                # record), so an override that was later undone is undone again.
                if _with_fallback(spec, e.new) == state.values[e.leaf]:
                    subsumed.append(e)  # nothing lost: the new state already says the same
                elif not self.registry.may_write(state.role, spec):
                    dropped.append(Dropped(e, f"{spec.namespace}.{e.leaf} is owned by {spec.owner!r}; "
                                              f"this process now publishes as {state.role!r}"))
                else:
                    try:
                        self._validate(state, {e.leaf: e.new}, source=source, check_policy=False)
                        wanted[e.leaf] = e.new
                    except (LeafValueError, CapacityError) as exc:
                        dropped.append(Dropped(e, str(exc)))
            state, applied = self._apply(state, source, wanted)
            replayed.extend(applied)
        self.republish_report = RepublishReport(tuple(replayed), tuple(subsumed), tuple(dropped))
        for d in dropped:
            log.warning("re-publish: override of %s from %r no longer applies: %s",
                        d.entry.leaf, d.entry.source, d.reason)
        return state


HASH_PURPOSE = "compile-cache"


def _configbags_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("configbags")
    except PackageNotFoundError:  # a source checkout that is not installed
        return "0+unknown"


def _canonical(value: Any) -> bytes:
    """A value as bytes that only equal values share: type-tagged, -0.0 as 0.0, ints in
    hex (decimal conversion of huge ints raises), mappings by sorted key."""
    if value is None:
        return b"n;"
    if isinstance(value, bool):
        return b"t;" if value else b"f;"
    if isinstance(value, int):
        return b"i" + format(value, "x").encode() + b";"
    if isinstance(value, float):
        return b"d" + (value + 0.0 if value == 0 else value).hex().encode() + b";"
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return b"s" + format(len(data), "x").encode() + b":" + data
    if isinstance(value, (tuple, list)):
        return b"[" + b"".join(_canonical(v) for v in value) + b"]"
    if isinstance(value, Mapping):
        return b"{" + b"".join(_canonical(str(k)) + _canonical(value[k]) for k in sorted(value, key=str)) + b"}"
    return _canonical(repr(value))


def _override_origin(spec: LeafSpec, entry: OverrideEntry) -> Origin:
    layer = Layer.LOAD_TIME if spec.policy is Policy.LOAD_TIME else Layer.RUNTIME
    return Origin(layer, f"override from {entry.source!r} at epoch {entry.epoch}")


def _origin_from(data: Mapping[str, Any]) -> Origin:
    over = data.get("forced_over")
    return Origin(Layer(data["layer"]), data["source"], data.get("rule"),
                  _origin_from(over) if over else None)


class _NonDefaults:
    """The publish log record's payload, formatted only if the record is emitted (publish
    stays cheap with INFO logging off): each value not at its schema default, with its
    layer; secrets redacted."""

    def __init__(self, context: Context[Any], state: State) -> None:
        self._context, self._state = context, state

    def __str__(self) -> str:
        reg = self._context.registry
        parts = [f"{n}={reg.shown(n, self._state.values[n])!r} [{o.layer}: {o.source}]"
                 for n, o in sorted(self._state.origins.items())]
        return "; ".join(parts) or "all defaults"


# generated package name -> its process context; filled when its accessors module is imported
_CONTEXTS: dict[str, Context[Any]] = {}


def process_context(package: str | None = None, *, record: Any = None) -> Context[Any]:
    """The context of a generated package of this process: the one named, the one whose
    `ServerArgs` type `record` has, or else the only published one (or the only one loaded).
    Schema-generic code (dist, testing, the KV configurator) uses this instead of importing
    a generated package."""
    if record is not None:
        for ctx in _CONTEXTS.values():
            if ctx.record_type is type(record):
                return ctx
    if package is not None:
        if package not in _CONTEXTS:
            raise ConfigError(
                f"the generated config package {package!r} is not loaded in this process; import "
                f"its accessors first (`import {package}.accessors`), or generate it with "
                f"`configbags gen --package {package}`"
            )
        return _CONTEXTS[package]
    # An engine publishes one package; a process that loaded several (a test suite) means
    # the published one.
    candidates = [c for c in _CONTEXTS.values() if c.published] or list(_CONTEXTS.values())
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
                    changes = ctx._validate(state, self._leaves, source=self._source, check_policy=False)
                    ctx._install(ctx._apply(state, self._source, changes)[0])
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


def _thaw(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh dict of a state's read-only mapping at dict-copy speed: `dict(proxy)` walks
    the mapping protocol key by key, `proxy.copy()` copies the dict inside it at once."""
    return mapping.copy() if isinstance(mapping, MappingProxyType) else dict(mapping)


def _where(spec: LeafSpec) -> str:
    """A leaf as refusals name it (built only when a refusal is raised)."""
    return f"{spec.namespace}.{spec.name} (policy {spec.policy.value}, owner {spec.owner})"


def _slot_value(state: State, slot: str) -> Any:
    return state.record if slot == RECORD_SLOT else state.bags[slot]


def _derive(spec: DerivedSpec, values: Mapping[str, Any]) -> Any:
    args = [values[i] for i in spec.inputs]
    try:
        value = spec.fn(*args)
    except Exception as exc:
        given = ", ".join(f"{i}={short_repr(a)}" for i, a in zip(spec.inputs, args, strict=True))
        raise LeafValueError(
            f"derived value {spec.namespace}.{spec.name}: its function raised "
            f"{type(exc).__name__}: {exc} for inputs {given}; give inputs it accepts (or fix the "
            f"function)"
        ) from exc
    try:
        return spec.type.coerce(value)
    except LeafValueError as exc:
        raise LeafValueError(
            f"derived value {spec.namespace}.{spec.name}: {exc}; its function returned the wrong "
            f"type for inputs {', '.join(spec.inputs)} (fix the function or the declared type)"
        ) from None


def _with_fallback(spec: LeafSpec, value: Any) -> Any:
    return spec.fallback if value is None and spec.has_fallback else value


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
        context._admit(state, path.partition(".")[0], f"runner view {self.name!r}")
        cached = self._cache
        if cached is None or cached[0] is not state:
            _, bags, _ = self._context._recompute(state, self.overlay)
            cached = self._cache = (state, bags)
        return cached[1][path]

    def __repr__(self) -> str:
        return f"RunnerView({self.name!r}, overlay={self.overlay!r})"


def unstamped_rank(bag: object, name: str) -> RankNotStampedError:
    """The error for a rank read before publish stamped it (used by generated bags)."""
    return RankNotStampedError(
        f"{type(bag).__name__}.{name} was never stamped: ranks come from the process's world "
        f"rank at publish (publish(..., ranks=...) or configbags.runtime.dist.publish_distributed); this "
        f"process published without them"
    )
