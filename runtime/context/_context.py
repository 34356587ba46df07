"""The Context façade: the one object a generated package creates per process. It holds
the current State under a lock and sequences its parts, each with one job: building
States (`_building`), validating changes (`_validation`), installing and role scoping
(`_install`), the readbacks (`_readbacks`) and scopes and runner views (`_scopes`)."""

from __future__ import annotations

import contextvars
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import attrs

from configbags.runtime.context import _readbacks as readbacks
from configbags.runtime.context._building import StateBuilder, with_fallback
from configbags.runtime.context._install import Installer, RoleScoping
from configbags.runtime.context._process import CONTEXTS
from configbags.runtime.context._readbacks import NonDefaults
from configbags.runtime.context._records import (
    RECORD_SLOT,
    Dropped,
    OverrideEntry,
    OverrideLog,
    Prepared,
    ProcessView,
    Ranks,
    RepublishReport,
    State,
    slot_value,
)
from configbags.runtime.context._scopes import ActingAs, Change, Restoring, RunnerView, scope_owner
from configbags.runtime.context._validation import OverrideValidator
from configbags.runtime.errors import (
    CapacityError,
    ConfigError,
    LeafValueError,
    NotPublishedError,
    RoleError,
    UnknownLeafError,
)
from configbags.runtime.leaftypes import closest
from configbags.runtime.record import dump_path_of
from configbags.runtime.registry import Registry
from configbags.runtime.resolve import NO_FACTS, Facts, Origin

log = logging.getLogger("configbags")

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
        self.record_type = record_type  # the generated ServerArgs (rebuilds exported records)
        self.package = package
        if package is not None:
            CONTEXTS[package] = self
        self._runner_view_cls = runner_view_type or RunnerView
        self._state: State | None = None
        self._lock = threading.RLock()
        self._hash_cache: tuple[State, str] | None = None
        # Open scopes (any thread), and the leaf scopes among them, which learn what each
        # install changes and by which thread (see Restoring). Weak: a scope object dropped
        # without exit restores nothing and is forgotten with it.
        self._scopes: weakref.WeakSet[Restoring] = weakref.WeakSet()
        self._watching: weakref.WeakSet[Restoring] = weakref.WeakSet()
        # ... but a scope whose exit came while an inner one was open is held until it closes
        # (once the inner ones have): its `with` statement has let go of it
        self._closing: set[Restoring] = set()
        self.republish_report: RepublishReport | None = None
        # The role overrides are checked as, when not the process's own (see acting_as). A
        # context variable, so it holds for one thread or task and never leaks to another.
        self._writer: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"configbags_writer_{id(self)}", default=None
        )
        # The parts, one job each; this class only sequences them under its lock.
        self.scoping = RoleScoping(registry, self._lock)
        self.builder = StateBuilder(registry)
        self.validator = OverrideValidator(registry, self.scoping, self._writer)
        self.installer = Installer(self, view, self.cfg, (*registry.top_level, RECORD_SLOT), self.scoping)

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
        holding them, so elastic resizing cannot leave a stale rank behind.

        A role that writes every leaf (`test`) is published as only inside a test scope, as
        `acting_as` admits it: the process would write what every other role may not."""
        self._check_role(role, "publish")
        self._admit_write_any(role, "publish")
        with self._lock:
            previous = self._state
            if ranks is None and previous is not None:
                # A world rank does not change because the record was re-published.
                ranks = previous.rank_fn or previous.ranks
            if facts is None:
                facts = previous.facts if previous is not None else NO_FACTS
            state = self.builder.fresh(
                record, role, ranks,
                epoch=(previous.epoch + 1) if previous else 1,
                sealed=previous.sealed if previous else False,
                facts=facts,
            )
            if previous is not None and previous.log:
                state = self._replay(state, previous.log)
            else:
                self.republish_report = None
            if self.scoping.recorder is not None:
                self.scoping.recorder.published(role)  # before installing: a bad output path fails here
            dump = dump_path_of(record)
            if dump is not None:  # so does a --dump-config path that cannot be written
                readbacks.dump_config(self.registry, state, dump)
            self._install(state)
        log.info("config published (role %s, epoch %d): %s", role, state.epoch, NonDefaults(self.registry, state))
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
            fresh = self.builder.fresh(record, role, ranks, epoch=epoch, sealed=sealed,
                                       facts=facts or NO_FACTS, resolution=resolution)
            # A whole log (another rank's, folded summary and all) is kept as it is.
            state = self._folded(fresh, tuple(log), epoch, log if isinstance(log, OverrideLog) else None)
            if self.scoping.recorder is not None:
                self.scoping.recorder.published(role)  # before installing: a bad output path fails here
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

    def _folded(
        self, state: State, entries: tuple[OverrideEntry, ...], epoch: int, whole: OverrideLog | None = None
    ) -> State:
        """`state` with already-admitted `entries` applied and appended (or, given the
        `whole` log they came from, that log installed), at `epoch`."""
        if not entries:
            return state
        final = {e.leaf: e.new for e in entries}  # later entries win, as they did there
        changes = self.validator.validate(state, final, source=entries[0].source, check_policy=False)
        return self.builder.advance(state, changes, whole if whole is not None else state.log + entries, epoch)

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
        self._still_admitted()
        with self._lock:
            state = self.state
            changes = self.validator.validate(state, leaves, source=source, check_policy=True)
            new_state, entries = self.builder.apply(state, source, changes)
            if entries:
                self._install(new_state, self.registry.cascade(changes).slots)
                self._log_changes(entries)
            return entries

    def _log_changes(self, entries: Iterable[OverrideEntry]) -> None:
        """One INFO line per change, every value through the one redaction rule: the
        overrides of this process and those committed from another rank alike."""
        if not log.isEnabledFor(logging.INFO):  # values are rendered only when someone listens
            return
        for e in entries:
            log.info("config override [%s] %s.%s: %r -> %r (epoch %d)", e.source, e.namespace, e.leaf,
                     self.registry.shown(e.leaf, e.old), self.registry.shown(e.leaf, e.new), e.epoch)

    def acting_as(self, role: str) -> ActingAs:
        """Check the overrides made in this block (in this thread or task) as written by
        `role`, not by the process's role: an HTTP config API in the tokenizer process writes
        for the `operator`, so only leaves whose schema names `operator` as owner or writer
        pass. Policy, type, range and capacity checks are unchanged.

        Only roles the schema declares; a role that writes every leaf (`test`) only in a
        thread with a test scope open (`configbags.runtime.testing`, `scoped()`), so no
        production code path, in this thread or another, can borrow it to write what its
        own role may not."""
        self._check_role(role, "acting_as")

        def admit() -> None:
            self._admit_write_any(role, "acting_as")

        admit()
        return ActingAs(self._writer, role, admit)

    def _still_admitted(self) -> None:
        """A role acted as that writes every leaf holds only while a test scope of this
        thread is open: an `acting_as("test")` block left unclosed past its scope's end
        must not go on writing what the process's own role may not."""
        writer = self._writer.get()
        if writer is not None:
            self._admit_write_any(writer, "acting_as")

    def _admit_write_any(self, role: str, verb: str) -> None:
        """Refuse a role that writes every leaf outside a test scope of this thread or task."""
        hint = "act as the role that owns the leaf" if verb == "acting_as" else "publish as the process's own role"
        if self.registry.roles[role].write_any and not any(s.open_test_for(scope_owner()) for s in list(self._scopes)):
            raise RoleError(
                f"{verb}({role!r}): role {role!r} may write every leaf and is for tests only; "
                f"open a test scope in this thread first (configbags.runtime.testing.published, scoped_override, "
                f"the config_scope fixture, or ctx.scoped()), or {hint}"
            )

    # -- two-phase changes (configbags.runtime.dist) ---------------------------------------
    def prepare_override(self, source: str, /, **leaves: Any) -> Prepared:
        """Phase one of an override that several ranks commit together: validate exactly
        as `override` does and build the next state, installing nothing."""
        self._still_admitted()
        with self._lock:
            base = self.state
            changes = self.validator.validate(base, leaves, source=source, check_policy=True)
            state, entries = self.builder.apply(base, source, changes)
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
                self._log_changes(prepared.entries)

    # -- installing into the accessor view ----------------------------------------------
    def _install(self, state: State | None, slots: Iterable[str] | None = None) -> None:
        """Make `state` the published one and fill the accessor slots from it (`slots`: the
        only top-level namespaces an override may have changed)."""
        old = self._state
        if self._watching:
            change = Change.between(self.registry, old, state)
            me = scope_owner()
            for scope in list(self._watching):
                scope.note(change, me)
        # First, so `state` (server_info, snapshot) is never older than what an accessor
        # returns: a reader that saw a new slot value finds this state (or a newer one).
        self._state = state
        if state is None:
            self.installer.clear()
        else:
            self.installer.fill(old, state, slots)

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
        self.scoping.admit(state, name, accessor)
        with self._lock:
            current = self.state
            value = slot_value(current, name)
            self.installer.set(name, value)
            return value

    # -- scopes (tests) -------------------------------------------------------------------
    def restoring(self, *, test: bool = False) -> Restoring:
        """Restore the state on exit, exceptions included (published or not): whatever the
        block did, in any thread, is undone (the epoch still counts up). `test=True` makes
        it a test scope (see `acting_as`)."""
        return Restoring(self, test=test)

    def scoped(self, source: str = "test-scope", /, **leaves: Any) -> Restoring:
        """Override `leaves` for the block, bypassing policy and owner (tests set what they
        need) but not type, range or capacity. On exit, what this thread (or asyncio task)
        changed is set back; what others committed meanwhile is kept, also when the scope
        sets no leaves itself (see `Restoring`)."""
        return Restoring(self, source, leaves, test=True, block=False)

    # -- readbacks (one State, read by configbags.runtime.context._readbacks) ------------
    def server_info(self) -> dict[str, Any]:
        """The single readback every surface that reports config uses: the raw `record` the
        operator gave, the `overrides` log (source, old, new, epoch, time), `resolved` (rules,
        overrides, fallbacks and derived values applied), `layers` (each leaf's layer and
        source, and the rule that set it) and the `facts` the rules saw. Secrets read as
        REDACTED everywhere in it."""
        return readbacks.server_info(self.registry, self.state)

    def origins(self) -> dict[str, Origin]:
        """Every leaf's origin now: its last override (layer load_time or runtime, by policy)
        or else where publish resolved it from."""
        return readbacks.origins(self.registry, self.state)

    def explain(self, leaf: str) -> dict[str, Any]:
        """Every layer of one leaf: its schema default, what each rule made of the facts,
        the operator value and its source, each override, and the resolved value with the
        layer (and rule) it came from. Secrets read as REDACTED."""
        return readbacks.explain(self.registry, self.state, leaf)

    def export_resolution(self) -> dict[str, Any]:
        """What the rules decided, as plain data for `adopt(..., resolution=...)` on another
        rank or process (which may have no facts): the origins and the rule-set values."""
        return readbacks.export_resolution(self.state)

    def hash_factors(self) -> dict[str, Any]:
        """What `config_hash()` covers (see configbags.runtime.context._readbacks)."""
        return readbacks.hash_factors(self.registry, self.state)

    def config_hash(self) -> str:
        """A stable hash of the factors in `hash_factors()` (a compile-cache key), computed
        once per State."""
        state = self.state
        cached = self._hash_cache
        if cached is not None and cached[0] is state:
            return cached[1]
        value = readbacks.config_hash(self.registry, state)
        self._hash_cache = (state, value)
        return value

    def dump_config(self, path: str | Path, left_out: Mapping[str, str] | None = None) -> Path:
        """Write the resolved config as a YAML config file that reproduces this run with
        `--config` (secrets and the leaves of `left_out`, leaf -> why, left out, named in a
        comment)."""
        return readbacks.dump_config(self.registry, self.state, path, left_out)

    def bag(self, path: str) -> Any:
        """The current bag of any namespace path (`exec.kernel`), for generic code; role
        scoping applies as it does to the accessors."""
        state = self.state
        if path not in state.bags:
            raise UnknownLeafError(f"bag({path!r}): no such namespace{closest(path, state.bags)}")
        self.scoping.admit(state, path.partition(".")[0], f"bag({path!r})")
        return state.bags[path]

    def snapshot(self) -> Mapping[str, Any]:
        """The bags of one state, by namespace path: for a reader that needs several
        namespaces from the same moment (each accessor returns the bag in force when it is
        called, so two accessor calls can straddle an override). Read-only; in enforce mode
        it holds the role's namespaces only, and in record mode it counts as reading every
        namespace it holds."""
        state = self.state
        readable = self.scoping.readable(state.role) if self.scoping.mode == "enforce" else set(self.registry.top_level)
        for top in self.registry.top_level:
            if top in readable:
                self.scoping.admit(state, top, "snapshot()")
        return MappingProxyType({p: b for p, b in state.bags.items() if p.partition(".")[0] in readable})

    # -- runner views ----------------------------------------------------------------------
    def runner_view(self, name: str, /, **leaves: Any) -> RunnerView:
        """A view for one runner (draft vs target) that overlays `leaves` on the process
        bags without touching them. Pass it to that runner; it follows later process
        overrides of every leaf it does not overlay."""
        state = self.state
        overlay = self.validator.validate(state, leaves, source=f"runner:{name}", check_policy=False)
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
                if with_fallback(spec, e.new) == state.values[e.leaf]:
                    subsumed.append(e)  # nothing lost: the new state already says the same
                elif not self.registry.may_write(state.role, spec):
                    dropped.append(Dropped(e, f"{spec.namespace}.{e.leaf} is owned by {spec.owner!r}; "
                                              f"this process now publishes as {state.role!r}"))
                else:
                    try:
                        self.validator.validate(state, {e.leaf: e.new}, source=source, check_policy=False)
                        wanted[e.leaf] = e.new
                    except (LeafValueError, CapacityError) as exc:
                        dropped.append(Dropped(e, str(exc)))
            state, applied = self.builder.apply(state, source, wanted)
            replayed.extend(applied)
        self.republish_report = RepublishReport(tuple(replayed), tuple(subsumed), tuple(dropped))
        for d in dropped:
            log.warning("re-publish: override of %s from %r no longer applies: %s",
                        d.entry.leaf, d.entry.source, d.reason)
        return state
