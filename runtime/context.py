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

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from typing import Any, Generic, TypeVar

import attrs

from runtime import roles as role_modes
from runtime.errors import (
    CapacityError,
    LeafValueError,
    NotPublishedError,
    OwnerError,
    PolicyError,
    RankNotStampedError,
    RoleError,
    UnknownLeafError,
)
from runtime.leaftypes import check_bounds, closest
from runtime.registry import LeafSpec, Registry

log = logging.getLogger("configbags")

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

    def as_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "source": self.source,
            "leaf": self.leaf,
            "namespace": self.namespace,
            "old": _jsonable(self.old),
            "new": _jsonable(self.new),
            "wall_time": self.wall_time,
        }


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
    replayed: tuple[OverrideEntry, ...]
    dropped: tuple[Dropped, ...]


@attrs.frozen(eq=False)
class State:
    """Everything published, frozen. Identity matters: scopes and caches compare `is`."""

    record: Any
    role: str
    values: Mapping[str, Any]  # leaves (fallbacks applied, overrides folded) and derived
    bags: Mapping[str, Any]  # namespace path -> bag object
    log: OverrideLog
    epoch: int
    sealed: bool
    ranks: Mapping[str, int]


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


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
    exposes it through `publish()` and `get_context()`."""

    def __init__(self, registry: Registry, view: V, runner_view: type[RunnerView] | None = None) -> None:
        self.registry = registry
        self.view = view
        self._runner_view_cls = runner_view or RunnerView
        self._state: State | None = None
        self._lock = threading.RLock()
        self._mode = role_modes.MODE
        self._recorder = role_modes.Recorder() if self._mode == "record" else None
        self._observed: set[tuple[str, str]] = set()
        self._hash_cache: tuple[State, str] | None = None
        self.republish_report: RepublishReport | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def publish(self, record: Any, *, role: str, ranks: Mapping[str, int] | None = None) -> Context[V]:
        """Resolve `record` (fallbacks, derived values, pins) and install it. Publishing
        again replays the override log onto the new record and reports what no longer
        applies (`republish_report`), rather than dropping overrides silently."""
        if role not in self.registry.roles:
            raise RoleError(
                f"publish(role={role!r}): unknown role{closest(role, self.registry.roles)}; "
                f"roles are {', '.join(sorted(self.registry.roles))} (schema/roles.yaml)"
            )
        with self._lock:
            previous = self._state
            values = self._resolve_record(record)
            state = State(
                record=record,
                role=role,
                values=values,
                bags=self._build_bags(values, dict(ranks or {})),
                log=OverrideLog(),
                epoch=(previous.epoch + 1) if previous else 1,
                sealed=False,
                ranks=dict(ranks or {}),
            )
            if previous is not None and previous.log:
                state = self._replay(state, previous.log)
            else:
                self.republish_report = None
            self._install(state)
            if self._recorder is not None:
                self._recorder.published(role)
        return self

    def adopt(
        self,
        record: Any,
        *,
        role: str,
        log: Iterable[OverrideEntry] = (),
        epoch: int,
        sealed: bool = False,
        ranks: Mapping[str, int] | None = None,
    ) -> Context[V]:
        """Install a state exported by another process or rank (runtime.dist): resolve
        `record`, fold `log` onto it keeping its entries and `epoch` as they are, so this
        state equals the exporter's. Values are checked (type, range, capacity), not policy
        or owner: the exporter already admitted them. Unlike publish, nothing is replayed."""
        if role not in self.registry.roles:
            raise RoleError(f"adopt(role={role!r}): unknown role{closest(role, self.registry.roles)}")
        with self._lock:
            stamped = dict(ranks or {})
            values = self._resolve_record(record)
            state = State(record=record, role=role, values=values,
                          bags=self._build_bags(values, stamped), log=OverrideLog(), epoch=epoch,
                          sealed=sealed, ranks=stamped)
            entries = tuple(log)
            if entries:
                final = {e.leaf: e.new for e in entries}  # later entries win, as they did there
                changes = self._validate(state, final, source="adopt", check_policy=False)
                values, bags = self._recompute(state, changes)
                state = attrs.evolve(state, values=values, bags=bags, log=OverrideLog(entries))
            self._install(state)
            self.republish_report = None
            if self._recorder is not None:
                self._recorder.published(role)
        return self

    def apply_entries(self, entries: Iterable[OverrideEntry]) -> None:
        """Apply override entries another process or rank already admitted (runtime.dist),
        keeping their epoch, source and time, so both sides hold the same log. Values are
        checked (type, range, capacity), not policy or owner: the origin checked those.
        Costs what an override costs, however long the log."""
        batch = tuple(entries)
        if not batch:
            return
        with self._lock:
            state = self.state
            final = {e.leaf: e.new for e in batch}  # later entries win, as they did there
            changes = self._validate(state, final, source=batch[0].source, check_policy=False)
            values, bags = self._recompute(state, changes)
            self._install(State(record=state.record, role=state.role, values=values, bags=bags,
                                log=state.log + batch, epoch=max(e.epoch for e in batch),
                                sealed=state.sealed, ranks=state.ranks))

    def seal(self) -> None:
        """End of model load: `load_time` leaves are fixed from here on."""
        with self._lock:
            state = self.state
            self._install(attrs.evolve(state, sealed=True))

    @property
    def state(self) -> State:
        state = self._state
        if state is None:
            raise NotPublishedError(
                "the config context is not published yet; call publish(server_args, role=...) "
                "at process start (tests: use runtime.testing.published)"
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
                self._install(new_state)
                for e in entries:
                    log.info("config override [%s] %s.%s: %r -> %r (epoch %d)",
                             e.source, e.namespace, e.leaf, e.old, e.new, e.epoch)
            return entries

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
                raise LeafValueError(
                    f"override of {spec.namespace}.{name} from {source!r}: {exc}; "
                    f"give a value of type {spec.type} within the declared choices/range"
                ) from None
            if check_policy:
                self._check_policy(state, spec, source)
            coerced[name] = new
        for name, new in coerced.items():
            self._check_capacity(state, reg.leaves[name], new, coerced)
        return coerced

    def _check_policy(self, state: State, spec: LeafSpec, source: str) -> None:
        where = f"{spec.namespace}.{spec.name} (policy {spec.policy}, owner {spec.owner})"
        if spec.policy == "startup":
            raise PolicyError(
                f"override of {where} from {source!r} refused: startup leaves are fixed at publish; "
                f"set it in the operator input ({'/'.join(spec.flags) or 'config file'}) instead"
            )
        if spec.policy == "load_time" and state.sealed:
            raise PolicyError(
                f"override of {where} from {source!r} refused: the context was sealed at the end of "
                f"model load; resolve it before seal() or declare it `override: runtime`"
            )
        role = self.registry.roles.get(state.role)
        if state.role != spec.owner and not (role and role.write_any):
            raise OwnerError(
                f"override of {where} from {source!r} refused: this process has role "
                f"{state.role!r}, and only the owner role {spec.owner!r} may write it; do it in "
                f"the {spec.owner} process or change `owner:` in the schema"
            )

    def _check_capacity(self, state: State, spec: LeafSpec, new: Any, batch: Mapping[str, Any]) -> None:
        if spec.capacity is None or new is None:
            return
        bound = batch.get(spec.capacity, state.values.get(spec.capacity))
        if bound is not None and new > bound:
            raise CapacityError(
                f"override of {spec.namespace}.{spec.name}={new!r} refused: above its capacity "
                f"{self.registry.namespace_of(spec.capacity)}.{spec.capacity}={bound!r}, which "
                f"sized buffers at publish; raise the capacity at startup instead"
            )

    def _apply(
        self, state: State, source: str, changes: Mapping[str, Any]
    ) -> tuple[State, tuple[OverrideEntry, ...]]:
        """Build (not install) the state after `changes`; unchanged values log nothing."""
        changed = {n: v for n, v in changes.items() if state.values[n] != v or type(state.values[n]) is not type(v)}
        if not changed:
            return state, ()
        epoch = state.epoch + 1
        now = time.time()
        reg = self.registry
        entries = tuple(
            OverrideEntry(epoch, source, n, reg.leaves[n].namespace, state.values[n], v, now)
            for n, v in changed.items()
        )
        values, bags = self._recompute(state, changed)
        new_state = State(record=state.record, role=state.role, values=values, bags=bags,
                          log=state.log + entries, epoch=epoch, sealed=state.sealed, ranks=state.ranks)
        return new_state, entries

    def _recompute(self, state: State, changed: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """New flat values and bags after `changed`: fallbacks re-applied, every dependent
        non-pinned derived value recomputed, only touched bags (and their parents) rebuilt."""
        reg = self.registry
        values = dict(state.values)
        touched: set[str] = set()
        for name, value in changed.items():
            values[name] = _with_fallback(reg.leaves[name], value)
            touched.add(name)
            for d in reg.dependents[name]:
                touched.add(d)
        for d in reg.derived:  # registry order: inputs before dependents
            spec = reg.derived[d]
            if d in touched and not spec.pinned:
                values[d] = spec.fn(*[values[i] for i in spec.inputs])
        spaces = {ns for n in touched for ns in reg.rebuild[n]}
        bags = dict(state.bags)
        for path, _ns in reg.namespaces.items():  # children before parents
            if path in spaces:
                bags[path] = self._make_bag(path, values, bags, state.ranks)
        return values, bags

    # -- resolution and bags -------------------------------------------------------------
    def _resolve_record(self, record: Any) -> dict[str, Any]:
        values = {name: _with_fallback(spec, getattr(record, name)) for name, spec in self.registry.leaves.items()}
        for name, spec in self.registry.derived.items():
            values[name] = spec.fn(*[values[i] for i in spec.inputs])
        return values

    def _build_bags(self, values: Mapping[str, Any], ranks: Mapping[str, int]) -> dict[str, Any]:
        bags: dict[str, Any] = {}
        for path in self.registry.namespaces:
            bags[path] = self._make_bag(path, values, bags, ranks)
        return bags

    def _make_bag(self, path: str, values: Mapping[str, Any], bags: Mapping[str, Any],
                  ranks: Mapping[str, int]) -> Any:
        ns = self.registry.namespaces[path]
        kwargs = {f: values[f] for f in ns.fields}
        kwargs.update({attr: bags[child] for attr, child in ns.children})
        bag = ns.bag(**kwargs)
        if ns.ranks and ranks:
            # Ranks are facts of this process, not config: stamped after construction; an
            # unstamped one raises from its property, saying what did not happen.
            object.__setattr__(bag, "_ranks", {r: ranks[r] for r in ns.ranks if r in ranks})
        return bag

    # -- installing into the accessor view ----------------------------------------------
    def _install(self, state: State | None) -> None:
        view = self.view
        old = self._state
        self._state = state
        if state is None:
            for slot in (*self.registry.top_level, RECORD_SLOT):
                with suppress(AttributeError):
                    object.__delattr__(view, slot)
            return
        object.__setattr__(view, RECORD_SLOT, state.record)
        allowed = self._visible(state)
        for ns in self.registry.top_level:
            if old is not None and old.bags.get(ns) is state.bags[ns] and old.role == state.role:
                continue
            if ns in allowed:
                object.__setattr__(view, ns, state.bags[ns])
            else:
                with suppress(AttributeError):
                    object.__delattr__(view, ns)

    def _visible(self, state: State) -> frozenset[str] | set[str]:
        if self._mode == "off":
            return frozenset(self.registry.top_level)
        if self._mode == "enforce":
            role = self.registry.roles.get(state.role)
            return role.reads if role else frozenset()
        return {ns for r, ns in self._observed if r == state.role}

    def missing(self, name: str) -> Any:
        """An accessor found its view slot empty: explain, or (record mode) record and fill."""
        accessor = f"get_{name}()"
        state = self._state
        if state is None:
            raise NotPublishedError(
                f"{accessor} was called before publish(); publish the ServerArgs record at process "
                f"start (publish(server_args, role=...)), or in tests use runtime.testing.published"
            )
        if name not in self.registry.top_level:
            raise AttributeError(name)
        role = self.registry.roles[state.role]
        if self._mode == "enforce" and name not in role.reads:
            raise RoleError(
                f"{accessor}: role {state.role!r} may not read namespace {name!r}; its declared "
                f"set is {{{', '.join(sorted(role.reads))}}}. Pass the value in from a role that "
                f"owns it, or add {name!r} to the role's `reads` in schema/roles.yaml (with an audit "
                f"record) and run make gen"
            )
        with self._lock:
            if self._mode == "record" and (state.role, name) not in self._observed:
                self._observed.add((state.role, name))
                assert self._recorder is not None
                self._recorder.read(state.role, name)
            current = self.state
            object.__setattr__(self.view, name, current.bags[name])
            return current.bags[name]

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
        operator gave, the `overrides` log (source, old, new, epoch, time), and `resolved`,
        the overrides folded onto the record with fallbacks and derived values applied."""
        state = self.state
        return {
            "record": _jsonable(state.record.to_dict()),
            "overrides": [e.as_dict() for e in state.log],
            "resolved": {n: _jsonable(v) for n, v in state.values.items()},
        }

    def explain(self, leaf: str) -> dict[str, Any]:
        """Every layer of one leaf, Envoy-style: record value, each override, resolved."""
        state = self.state
        if leaf not in state.values:
            raise UnknownLeafError(f"{leaf!r} is not a config leaf{closest(leaf, state.values)}")
        spec = self.registry.leaves.get(leaf)
        return {
            "leaf": leaf,
            "namespace": self.registry.namespace_of(leaf),
            "accessor": self.registry.accessor_of(leaf),
            "policy": spec.policy if spec else "derived",
            "owner": spec.owner if spec else None,
            "record": _jsonable(getattr(state.record, leaf)) if spec else None,
            "overrides": [e.as_dict() for e in state.log if e.leaf == leaf],
            "resolved": _jsonable(state.values[leaf]),
        }

    def config_hash(self) -> str:
        """A stable hash of the resolved `hash: true` leaves (a compile-cache key)."""
        state = self.state
        cached = self._hash_cache
        if cached is not None and cached[0] is state:
            return cached[1]
        payload = {n: _jsonable(state.values[n]) for n in self.registry.hashed}
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        self._hash_cache = (state, digest)
        return digest

    def bag(self, path: str) -> Any:
        """The current bag of any namespace path (`exec.kernel`), for generic code."""
        return self.state.bags[path]

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
        replayed: list[OverrideEntry] = []
        dropped: list[Dropped] = []
        calls: dict[tuple[int, str], list[OverrideEntry]] = {}
        for entry in old_log:
            calls.setdefault((entry.epoch, entry.source), []).append(entry)
        for (_, source), entries in calls.items():
            wanted: dict[str, Any] = {}
            for e in entries:
                if state.values.get(e.leaf) == e.new and getattr(state.record, e.leaf) == e.new:
                    dropped.append(Dropped(e, f"the new record already sets {e.leaf}={e.new!r}"))
                    continue
                try:
                    self._validate(state, {e.leaf: e.new}, source=source, check_policy=False)
                except (LeafValueError, CapacityError) as exc:
                    dropped.append(Dropped(e, str(exc)))
                    continue
                wanted[e.leaf] = e.new
            state, applied = self._apply(state, source, wanted)
            replayed.extend(applied)
        self.republish_report = RepublishReport(tuple(replayed), tuple(dropped))
        for d in dropped:
            log.warning("re-publish: override of %s from %r no longer applies: %s",
                        d.entry.leaf, d.entry.source, d.reason)
        return state


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

    def bag(self, path: str) -> Any:
        state = self._context.state
        cached = self._cache
        if cached is None or cached[0] is not state:
            _, bags = self._context._recompute(state, self.overlay)
            cached = self._cache = (state, bags)
        return cached[1][path]

    def __repr__(self) -> str:
        return f"RunnerView({self.name!r}, overlay={self.overlay!r})"


def unstamped_rank(bag: object, name: str) -> RankNotStampedError:
    """The error for a rank read before publish stamped it (used by generated bags)."""
    return RankNotStampedError(
        f"{type(bag).__name__}.{name} was never stamped: ranks come from the process's world "
        f"rank at publish (publish(..., ranks=...) or runtime.dist.publish_distributed); this "
        f"process published without them"
    )
