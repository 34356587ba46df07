"""Multi-rank propagation and two-phase overrides: publish and overrides are decided on the
source rank and broadcast, so every rank applies the same entries in the same order with
the same epoch; an override travels as a proposal every rank votes on, committed or aborted
by one compare-and-set on the store."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, NoReturn

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import PrefixStore, Store

from configbags.runtime.context import (
    Context,
    Dropped,
    OverrideEntry,
    Prepared,
    RepublishReport,
    process_context,
)
from configbags.runtime.dist._layout import Layout, stamp_ranks
from configbags.runtime.dist._rendezvous import (
    DEFAULT_TIMEOUT_S,
    SECRET_ENV,
    RankLeftError,
    SignedStore,
    UnsignedStoreError,
    await_values,
    connect_store,
    default_backend,
    join,
    read,
    secure,
    signed,
    store_host,
)
from configbags.runtime.dist._state import entry_from_dict, import_state, state_dict
from configbags.runtime.errors import ConfigError, DistributedConfigError, LayoutError
from configbags.runtime.leaftypes import jsonable
from configbags.runtime.resolve import Facts

log = logging.getLogger("configbags")
DEFAULT_LEAVE_AFTER = 3  # a follower silent for this many collectives in a row leaves the group
_LEFT = "left:"  # the source rank's post to a collective of a group a rank left


def init_distributed(
    rank: int,
    world_size: int,
    *,
    store: Store | None = None,
    init_addr: str | None = None,
    backend: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    context: Context[Any] | None = None,
    secret: bytes | None = None,
    allow_unsigned: bool | None = None,
    leave_after: int | None = DEFAULT_LEAVE_AFTER,
    process_group: bool = True,
) -> DistributedContext:
    """Join the launch: check in through the store (a rank that never joins is named after
    `timeout` s), then init the default process group with the same timeout, so later
    collectives on a dead peer fail instead of hanging. Give a `store`, or `init_addr`
    (`host:port`, rank 0 hosts a TCPStore there).

    With the launch's `secret` (the same bytes on every rank; else `$CONFIGBAGS_RANK_SECRET`),
    everything the ranks post is signed for this launch alone, and a value another process
    wrote into the store (or replayed from an earlier launch) is refused (`SignedStore`).
    Without one, a store other hosts can reach is refused (`UnsignedStoreError`) unless
    `allow_unsigned=True` or `$CONFIGBAGS_ALLOW_UNSIGNED_STORE=1` says the network is
    trusted; a loopback store runs unsigned. `leave_after`: see `DistributedContext`.

    `process_group=False` forms no torch process group (every collective of the context
    runs through the store anyway), so no transport listens in this process: gloo's keeps
    every connection any local process makes to it, and enough of them use up the
    process's descriptors (a server whose HTTP door shares the process stops answering)."""
    if store is None:
        if init_addr is None:
            raise DistributedConfigError("init_distributed needs a store or an init_addr host:port")
        host = init_addr.rpartition(":")[0].strip("[]") or "127.0.0.1"
        secret = secure(host, secret, allow_unsigned=allow_unsigned)  # before any connection
        store = connect_store(init_addr, is_master=rank == 0, timeout=timeout)
    else:
        secret = secure(store_host(store), secret, allow_unsigned=allow_unsigned)
    own = join(signed(PrefixStore("configbags", store), secret), rank, world_size, timeout)
    global _default
    if not process_group:
        _default = DistributedContext(context, store=own, timeout=timeout, leave_after=leave_after,
                                      rank=rank, world_size=world_size)
        return _default
    backend = backend or default_backend()
    if backend == "nccl":
        # NCCL object collectives run on the current device; one GPU per local rank.
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group(backend, store=store, rank=rank,
                            world_size=world_size, timeout=timedelta(seconds=timeout))
    _default = DistributedContext(context, store=own, timeout=timeout, leave_after=leave_after)
    return _default


def _error_classes() -> Mapping[str, type[ConfigError]]:
    """Every ConfigError class this process has loaded, by name (an application's own, such
    as the KV configurator's, register by being imported)."""
    found: dict[str, type[ConfigError]] = {}
    pending: list[type[ConfigError]] = [ConfigError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.__name__, cls)
        pending.extend(cls.__subclasses__())
    return found


def _error_class(name: str) -> type[ConfigError]:
    """The class a follower raises for a refusal of kind `name` on the source rank, so
    `except BudgetError` works the same on every rank. A kind this process does not know
    (e.g. a ConfigError subclass of some other package) is raised as ConfigError."""
    return _error_classes().get(name, ConfigError)


def _failure(exc: Exception) -> dict[str, Any]:
    """The message a source rank broadcasts instead of a result when it raised."""
    return {"ok": False, "kind": type(exc).__name__, "config_error": isinstance(exc, ConfigError),
            "message": str(exc)}


def _report_dict(report: RepublishReport | None) -> dict[str, Any] | None:
    """A re-publish report as JSON-able data (`_report_from` reads it back)."""
    if report is None:
        return None
    return {"replayed": [e.as_dict() for e in report.replayed],
            "subsumed": [e.as_dict() for e in report.subsumed],
            "dropped": [{"entry": d.entry.as_dict(), "reason": d.reason} for d in report.dropped]}


def _report_from(context: Context[Any], data: Mapping[str, Any] | None) -> RepublishReport | None:
    if data is None:
        return None
    return RepublishReport(
        replayed=tuple(entry_from_dict(context, e) for e in data["replayed"]),
        subsumed=tuple(entry_from_dict(context, e) for e in data["subsumed"]),
        dropped=tuple(Dropped(entry_from_dict(context, d["entry"]), str(d["reason"])) for d in data["dropped"]),
    )


def _secrets_carried(context: Context[Any], record: Any) -> list[str]:
    """The secret leaves set in `record` (to a value other than the schema's default, which
    is public) or in the override log a publish of it replays: what the published state
    would carry, by name."""
    leaves = context.registry.leaves
    named = {name for name, value in record.to_dict().items()
             if (spec := leaves.get(name)) is not None and spec.secret and value not in (None, spec.default)}
    if context.published:
        named.update(entry.leaf for entry in context.state.log if entry.secret)
    return sorted(named)


def _digest(values: Mapping[str, Any]) -> str:
    # All resolved values, hash: false leaves included, which config_hash leaves out.
    text = json.dumps({k: jsonable(v) for k, v in values.items()}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class DistributedContext:
    """The process context, kept identical across the ranks of a torch.distributed group.

    Every method is collective: each rank of the group calls it in the same order. Only the
    source rank's arguments count (others may pass none), like `broadcast_object_list`.
    Every collective runs through the rendezvous `store` (what `init_distributed` made, or,
    without one, the default group's store, joined here with `secret` / `allow_unsigned`
    as `init_distributed` does), never through the process group's own transport.

    A follower that misses `leave_after` collectives in a row (each named after `timeout`)
    leaves the group: the source rank records it in the store and names it, and from then
    on every collective raises `RankLeftError` at once on every live rank (nothing
    applied: a change needs every rank), and on the rank that left when it comes back. A
    rank that answers again before that is back in step. `leave_after=None`: never leave.
    The source rank itself never leaves (it decides); `leave` makes a rank leave at once.

    `rank` and `world_size`, given with a `store` (and no `group`), make a context of ranks
    that share the store alone, with no torch process group (`init_distributed(process_group=False)`)."""

    def __init__(
        self,
        context: Context[Any] | None = None,
        *,
        group: Any = None,
        store: Store | None = None,
        src: int = 0,
        timeout: float = DEFAULT_TIMEOUT_S,
        tag: str = "ctx",
        secret: bytes | None = None,
        allow_unsigned: bool | None = None,
        leave_after: int | None = DEFAULT_LEAVE_AFTER,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        self.context = context or process_context()
        self.group = group
        if (rank is None) != (world_size is None) or (rank is not None and (store is None or group is not None)):
            raise DistributedConfigError("DistributedContext: rank and world_size are given together, with a "
                                         "store and no group (ranks that share the store alone)")
        self.rank = dist.get_rank(group) if rank is None else rank
        self.world_size = dist.get_world_size(group) if world_size is None else world_size
        self.src = src
        self.timeout = timeout
        self._tag = tag
        if store is None:
            # The store torch's default group was created with; private, hence getattr.
            getter = getattr(dist.distributed_c10d, "_get_default_store", None)
            if getter is None:
                raise DistributedConfigError(
                    "no rendezvous store: this torch does not expose the default group's store; give "
                    "DistributedContext(store=...) or use init_distributed"
                )
            raw = getter()
            key = secure(store_host(raw), secret, allow_unsigned=allow_unsigned)
            store = join(signed(PrefixStore("configbags", raw), key), self.rank, self.world_size, timeout,
                         what=f"{tag}/join")
        self.store: Store = store
        self.leave_after = leave_after
        #: Ranks that left the group, each with why (the same on every live rank once the
        #: source rank's next post tells it).
        self.left: dict[int, str] = {}
        self._missed: dict[int, int] = {}  # source: collectives in a row each follower missed
        self._seq = 0
        self._spent: list[str] = []  # this rank's keys of finished collectives, to delete
        self._last_override: str | None = None
        self._refusal: Exception = ConfigError("no refusal")
        # the source's last word before it commits an override: a caller that gave up on one
        # (its deadline passed while the store did not answer) makes it abort, so a store that
        # runs again never applies a change the caller already answered as refused
        self.gate: Callable[[], bool] | None = None
        #: The source rank's `republish_report` after the last `publish` (None when that
        #: publish had no override log to replay), the same on every rank: a re-publish on
        #: the source replays the log there, and followers only see its outcome through this.
        self.republish_report: RepublishReport | None = None

    def client(self, addr: str) -> Store:
        """Another client of the launch's store at `addr`, prefixed and signed for this launch
        as `init_distributed` made `store` (a thread of its own needs one: a client inside a
        wait holds it)."""
        raw = PrefixStore("configbags", connect_store(addr, is_master=False, timeout=self.timeout))
        return self.store.over(raw) if isinstance(self.store, SignedStore) else raw

    @property
    def is_src(self) -> bool:
        return self.rank == self.src

    def _arrive(self, what: str) -> str:
        """Check in before a collective, so a missing rank is named rather than waited on;
        returns the collective's key."""
        return self._gather(what, "1")[0]

    def _begin(self, what: str) -> str:
        """The next collective's key; first, on a rank that left, RankLeftError naming why
        (read from the store: the source rank recorded it while this rank was away)."""
        why = read(self.store, self._left_key(self.rank))
        if why is not None:
            raise RankLeftError(
                f"{what}: rank {self.rank} left the group of {self.world_size} ({why.decode()}); it no longer "
                f"takes part in the group's collectives and its config may be behind the others': restart "
                f"the launch to bring it back"
            )
        self._seq += 1
        return f"{self._tag}/{self._seq}/{what}"

    def _left_key(self, rank: int) -> str:
        return f"{self._tag}/left/{rank}"

    def _left_error(self, what: str) -> RankLeftError:
        return RankLeftError(
            f"{what}: rank(s) {', '.join(map(str, sorted(self.left)))} of {self.world_size} left the group "
            f"({'; '.join(f'rank {r}: {why}' for r, why in sorted(self.left.items()))}); a collective needs "
            f"every rank, so nothing was applied on any rank; restart the launch to bring the group back"
        )

    def leave(self, rank: int, why: str, *, store: Store | None = None) -> None:
        """Make follower `rank` leave the group now (on the source rank: what `leave_after`
        does by itself), recording `why` in the store (through `store`, another client of
        it, from a thread of its own) so the rank refuses every collective if it comes back."""
        if rank == self.src:
            raise DistributedConfigError(f"rank {rank} is the source rank: it decides, and never leaves")
        self.left[rank] = why
        (store or self.store).set(self._left_key(rank), why)
        log.warning("rank %d of %d left the group: %s; every collective now refuses, naming it, until "
                    "the launch is restarted", rank, self.world_size, why)

    def _missing(self, missing: list[int]) -> str:
        """Source: count the collectives in a row each follower missed; those that reach
        `leave_after` leave. Returns what to add to the error naming `missing`."""
        if not self.is_src:
            return ""
        for r in range(self.world_size):
            if r != self.src:
                self._missed[r] = self._missed.get(r, 0) + 1 if r in missing else 0
        if self.leave_after is None:
            return ""
        leaving = [r for r in missing if r != self.src and r not in self.left
                   and self._missed[r] >= self.leave_after]
        for r in leaving:
            self.leave(r, f"silent for {self._missed[r]} collectives in a row, each past the {self.timeout:g} s "
                          f"timeout")
        if not leaving:
            return ""
        return (f"; rank(s) {', '.join(map(str, leaving))} missed {self.leave_after} collectives in a row and "
                f"left the group: from now on every collective refuses at once, naming it")

    def _gather(self, what: str, payload: str) -> tuple[str, list[bytes]]:
        """Post this rank's `payload` for the next collective and read every rank's, through
        the store alone: a rank that is stopped or slow is named after `timeout`, and when it
        comes back it finds the others' payloads still there and finishes this collective
        on its own, in step again, instead of entering a gloo collective no one else will
        ever enter (which would strand it until the process-group timeout).

        Once a rank left, the source posts that instead of its payload and raises
        RankLeftError; a follower reads the source's post first, so it raises the same."""
        key = self._begin(what)
        keys = [f"{key}/{r}" for r in range(self.world_size)]
        mine = keys[self.rank]
        if self.is_src and self.left:
            self.store.set(mine, _LEFT + json.dumps({str(r): why for r, why in self.left.items()}))
            self._spent.append(mine)
            raise self._left_error(what)
        self.store.set(mine, payload)
        deadline = time.monotonic() + self.timeout
        got = self._await(keys[self.src:self.src + 1], self.timeout)
        source = got.get(keys[self.src], b"")
        if source.startswith(_LEFT.encode()):
            self.left.update({int(r): str(why) for r, why in json.loads(source[len(_LEFT):]).items()})
            self._spent.append(mine)
            raise self._left_error(what)
        got.update(self._await([k for k in keys if k not in got], max(0.0, deadline - time.monotonic())))
        missing = [r for r in range(self.world_size) if keys[r] not in got]
        extra = self._missing(missing)
        if missing:
            self._spent.append(mine)
            raise DistributedConfigError(
                f"{what}: rank(s) {', '.join(map(str, missing))} of {self.world_size} did not arrive "
                f"within {self.timeout:g} s (dead, stopped or hung); waiting on rank {self.rank}{extra}"
            )
        self._spend(mine)
        return key, [got[k] for k in keys]

    def _spend(self, *keys: str) -> None:
        """A collective finished here: every rank has posted to it, so each has finished (or
        given up on) every earlier one, and this rank's keys of those are read by no one."""
        for old in self._spent:
            self.store.delete_key(old)
        self._spent = list(keys)

    def _raise_failure(self, verb: str, message: Mapping[str, Any]) -> NoReturn:
        """On a follower: raise what the source rank raised. A refusal (a ConfigError) keeps
        its class, so callers catch the same error on every rank; any other exception there
        is a failure of the source rank, reported as DistributedConfigError naming it."""
        if message.get("config_error", True):
            cls: type[ConfigError] = _error_class(message["kind"])
            text = f"{verb} refused on rank {self.src}, so on every rank: {message['message']}"
        else:
            cls = DistributedConfigError
            text = (f"{verb} failed on rank {self.src} (the source rank) with {message['kind']}: "
                    f"{message['message']}; nothing was applied on any rank")
        try:
            error = cls(text)
        except TypeError:  # a class with another constructor: keep the message, lose the class
            error = ConfigError(text)
        raise error

    # -- publish -------------------------------------------------------------------------
    def publish(self, record: Any = None, *, role: str | None = None, facts: Facts | None = None) -> Context[Any]:
        """Publish on the source rank (or, with `record=None`, take what it already
        published) and install the same state on every rank, each stamping its own ranks
        from its rank in the group with the layout of the resolved parallel sizes. `facts`
        are the source's (`Context.publish`); what its rules made of them travels with the
        state.

        The source rank publishes once, with its rank function, and keeps that state (it is
        not re-imported there, so its re-publish replay and report stand as they are); the
        followers import it. The source's `republish_report` travels with the state and is
        set on every rank's context and on `self.republish_report`. If the source raises
        anything, the followers raise promptly too instead of waiting for the group timeout.

        With a store (always, after `init_distributed`) the state travels through it, and
        the source waits for every follower to say it installed it: a follower stopped or
        hung past `timeout` is named in a DistributedConfigError on the source, and installs
        the state when it comes back, in step again; no rank is left inside a collective."""
        key = self._arrive("publish")
        message: dict[str, Any]
        if self.is_src:
            try:
                message = self._published(record, role, facts)
            except Exception as exc:
                # Any exception, not only refusals: the followers are already waiting for
                # the state and would otherwise wait out their timeout.
                self._send_state(key, _failure(exc))
                raise
            self._send_state(key, message)
            self._await_installed(key)
        else:
            message = self._receive_state(key)
            if not message["ok"]:
                self._raise_failure("publish", message)
            try:
                self._install_published(message)
            except Exception as exc:
                self._installed(key, f"no:{type(exc).__name__}: {exc}")
                raise
            self._installed(key, "yes")
        self.republish_report = message["report"]
        return self.context

    def _published(self, record: Any, role: str | None, facts: Facts | None = None) -> dict[str, Any]:
        """Source: publish (or stamp what was published by hand) and build the message."""
        ctx = self.context
        stamp = functools.partial(stamp_ranks, self.rank)
        self._refuse_unsealed("publish", _secrets_carried(ctx, ctx.state.record if record is None else record))
        if record is not None:
            if role is None:
                raise DistributedConfigError("publish(record, role=...): the role is required")
            ctx.publish(record, role=role, ranks=stamp, facts=facts)
        elif ctx.state.rank_fn is None:
            # Published by hand without ranks: stamp them, keeping log and epoch.
            state = ctx.state
            ctx.adopt(state.record, role=state.role, log=state.log, epoch=state.epoch,
                      sealed=state.sealed, ranks=stamp, facts=state.facts,
                      resolution=ctx.export_resolution())
        layout = Layout.from_values(ctx.state.values)
        if layout.world_size != self.world_size:
            raise LayoutError(
                f"the config lays out tp_size*pp_size={layout.tp_size}*{layout.pp_size}="
                f"{layout.world_size} ranks, but the group has {self.world_size}"
            )
        return {"ok": True, "state": state_dict(ctx), "report": ctx.republish_report}

    def _refuse_unsealed(self, verb: str, secret_leaves: list[str]) -> None:
        """Source: refuse to post set secret leaves through a store with no secret to seal
        them: any local process can read the store, and would read their values."""
        if secret_leaves and not isinstance(self.store, SignedStore):
            raise UnsignedStoreError(
                f"{verb}: the secret leaf(s) {', '.join(secret_leaves)} would travel through the rendezvous store "
                f"in plaintext (it runs without a rank secret, and any local process can read it); give every "
                f"rank the same secret (init_distributed(secret=...), DistributedContext(secret=...) or "
                f"${SECRET_ENV}, e.g. `openssl rand -hex 32`), and every value the ranks post is sealed; "
                f"nothing was applied on any rank"
            )

    def _install_published(self, message: Mapping[str, Any]) -> None:
        """Follower: install the source's state and report."""
        ctx = self.context
        import_state(message["state"], ctx, ranks=functools.partial(stamp_ranks, self.rank))
        report: RepublishReport | None = message["report"]
        ctx.republish_report = report
        for dropped in report.dropped if report else ():
            # The source rank logged these when it replayed; say it on every rank.
            log.warning("re-publish on rank %d: override of %s from %r no longer applies: %s",
                        self.src, dropped.entry.leaf, dropped.entry.source, dropped.reason)

    def _send_state(self, key: str, message: dict[str, Any]) -> None:
        # JSON, never pickle: a value read from a socket is data, so even one that passed the
        # signature check can never run code when it is decoded
        report = message.get("report")
        sent = {**message, "report": _report_dict(report)} if message.get("ok") else message
        self.store.set(f"{key}/state", json.dumps(sent, sort_keys=True, separators=(",", ":")))
        self._spent.append(f"{key}/state")

    def _receive_state(self, key: str) -> dict[str, Any]:
        raw = self._signed_value(f"{key}/state", self.timeout)
        if raw is None:
            raise DistributedConfigError(
                f"publish: rank {self.src} (the source rank) did not send the published state within "
                f"{self.timeout:g} s (dead, stopped or hung); nothing was installed on rank {self.rank}"
            )
        try:
            received: dict[str, Any] = json.loads(raw)
        except ValueError as exc:  # never pickle: a value that is not JSON is refused, not decoded
            raise DistributedConfigError(
                f"publish: the state under {key}/state is not JSON ({exc}); rank {self.src} and rank "
                f"{self.rank} must run the same configbags version; nothing was installed on rank {self.rank}"
            ) from None
        if received.get("ok"):
            received["report"] = _report_from(self.context, received.get("report"))
        return received

    def _installed(self, key: str, outcome: str) -> None:
        self.store.set(f"{key}/installed/{self.rank}", outcome)
        self._spent.append(f"{key}/installed/{self.rank}")

    def _await_installed(self, key: str) -> None:
        """Source: every follower installed the state within the timeout, or name those
        that did not (or could not)."""
        keys = {r: f"{key}/installed/{r}" for r in range(self.world_size) if r != self.rank}
        got = self._await(list(keys.values()), self.timeout)
        missing = [r for r, k in keys.items() if k not in got]
        extra = self._missing(missing)
        if missing:
            raise DistributedConfigError(
                f"publish: rank(s) {', '.join(map(str, missing))} of {self.world_size} did not install the "
                f"published state within {self.timeout:g} s (dead, stopped or hung); rank {self.rank} "
                f"published it, and a stopped rank installs it when it resumes{extra}"
            )
        refused = [f"rank {r}: {v[3:]}" for r, k in keys.items() if (v := got[k].decode()) != "yes"]
        if refused:
            raise DistributedConfigError(f"publish: the state could not be installed on {'; '.join(refused)}")

    # -- overrides ---------------------------------------------------------------------
    def override(self, source: str, /, **leaves: Any) -> tuple[OverrideEntry, ...]:
        """Validate `leaves` on the source rank and apply the very same log entries (same
        epoch, same wall time) on every rank, all or none (two phases through the store,
        see the module doc). A refused override raises the same error class on every rank
        and changes nothing anywhere; a dead, stopped or refusing rank makes every live rank
        raise DistributedConfigError naming it, with nothing applied anywhere. Keyword
        arguments are leaves only (no options), so no leaf name can collide with one."""
        key = self._begin("override")
        if self.is_src:
            prepared, proposal = self._propose(key, source, leaves)
        else:
            proposal = self._receive(key)
            prepared = None
        if not proposal["ok"]:
            if self.is_src:
                raise self._refusal  # the source re-raises its own exception as it was
            self._raise_failure("override", proposal)
        if prepared is None:
            prepared = self._prepare_entries(key, proposal)
        if not prepared.entries and not proposal["entries"]:
            return ()  # no change: nothing to agree on
        self._vote(key, prepared)
        decision = self._decide(key) if self.is_src else self._await_decision(key)
        if decision != "commit":
            raise DistributedConfigError(f"override from {source!r} aborted: {decision}")
        self._commit(key, prepared, proposal)
        return prepared.entries

    def _propose(self, key: str, source: str, leaves: Mapping[str, Any]) -> tuple[Prepared | None, dict[str, Any]]:
        """Source, phase one: validate and post the proposal (or the refusal)."""
        ctx = self.context
        try:
            if self.left:
                raise self._left_error("override")
            prepared = ctx.prepare_override(source, **leaves)
            self._refuse_unsealed("override", sorted({e.leaf for e in prepared.entries if e.secret}))
            proposal = {"ok": True, "base": prepared.base.epoch, "source": source,
                        "entries": [e.as_dict() for e in prepared.entries]}
        except Exception as exc:  # any: followers wait for the proposal (see publish)
            self._refusal = exc
            prepared, proposal = None, _failure(exc)
        self.store.set(f"{key}/proposal", json.dumps(proposal))
        return prepared, proposal

    def _receive(self, key: str) -> dict[str, Any]:
        """Follower, phase one: the source's proposal, or abort naming the source."""
        raw = self._signed_value(f"{key}/proposal", self.timeout)
        if raw is None:
            decision = self._abort(key, f"rank {self.src} (the source rank) did not send the "
                                        f"override within {self.timeout:g} s (dead, hung, or never "
                                        f"started); nothing was applied on any rank")
            if decision == "commit":  # cannot happen without a proposal; kept total
                raise DistributedConfigError(f"override: rank {self.src} committed without a proposal")
            raise DistributedConfigError(f"override aborted: {decision}")
        proposal: dict[str, Any] = json.loads(raw)
        return proposal

    def _prepare_entries(self, key: str, proposal: Mapping[str, Any]) -> Prepared:
        """Follower: check the proposed entries apply here; a rank that cannot votes no."""
        ctx = self.context
        try:
            entries = tuple(entry_from_dict(ctx, e) for e in proposal["entries"])
            if entries and ctx.epoch != proposal["base"]:
                # Diverged already; apply anyway and let check_consistency name it.
                log.warning("rank %d was at epoch %d, rank %d at %d before override from %r",
                            self.rank, ctx.epoch, self.src, proposal["base"], proposal["source"])
            return ctx.prepare_entries(entries)
        except Exception as exc:
            self.store.set(f"{key}/vote/{self.rank}", f"no:{type(exc).__name__}: {exc}")
            decision = self._await_decision(key)
            raise DistributedConfigError(
                f"override cannot be applied on rank {self.rank} ({type(exc).__name__}: {exc}); "
                f"{'aborted everywhere' if decision != 'commit' else 'the others committed'}"
            ) from exc

    def _vote(self, key: str, prepared: Prepared) -> None:
        """Phase two: this rank can apply the change."""
        self.store.set(f"{key}/vote/{self.rank}", "yes")

    def _decide(self, key: str) -> str:
        """Source: commit when every rank voted yes within the timeout, else abort naming
        the ranks that did not (or voted no). Returns the decision that stands."""
        votes = [f"{key}/vote/{r}" for r in range(self.world_size)]
        # a follower may already have given up on us: then look, do not wait
        got = self._await(votes, self.timeout if self._decided(key) is None else 0.0)
        missing = [r for r, k in enumerate(votes) if k not in got]
        refused = [f"rank {r}: {vote[3:]}" for r, k in enumerate(votes)
                   if k in got and (vote := got[k].decode()) != "yes"]
        if missing:
            extra = self._missing(missing)
            return self._abort(key, f"rank(s) {', '.join(map(str, missing))} of {self.world_size} "
                                    f"did not acknowledge within {self.timeout:g} s (dead, hung, or "
                                    f"never started); nothing was applied on any rank{extra}")
        self._missing([])
        if refused:
            return self._abort(key, f"refused by {'; '.join(refused)}; nothing was applied on any rank")
        if self.gate is not None and not self.gate():
            return self._abort(key, "the caller gave up on it (its deadline passed); nothing was applied on any rank")
        return self.store.compare_set(f"{key}/decision", "", "commit").decode()

    def _await_decision(self, key: str) -> str:
        """Follower: the source's decision; after twice the timeout, abort naming the source
        (the source decides within one timeout of proposing unless it is dead or stopped)."""
        decision = self._signed_value(f"{key}/decision", 2 * self.timeout)
        if decision is not None:
            return decision.decode()
        return self._abort(key, f"rank {self.src} (the source rank) did not decide within "
                                f"{2 * self.timeout:g} s (dead or hung); nothing was applied on any rank")

    def _abort(self, key: str, reason: str) -> str:
        """Record an abort unless a decision already stands; return the one that stands."""
        return self.store.compare_set(f"{key}/decision", "", reason).decode()

    def _decided(self, key: str) -> str | None:
        decision = read(self.store, f"{key}/decision")
        return None if decision is None else decision.decode()

    def _commit(self, key: str, prepared: Prepared, proposal: Mapping[str, Any]) -> None:
        """Phase three: install, and drop this rank's keys of the previous override (every
        rank has read them: each voted in this one, after reading that one's decision)."""
        self.context.commit(prepared)
        previous, self._last_override = self._last_override, key
        if previous is not None:
            store = self.store
            store.delete_key(f"{previous}/vote/{self.rank}")
            if self.is_src:
                store.delete_key(f"{previous}/proposal")
                store.delete_key(f"{previous}/decision")

    def _signed_value(self, key: str, timeout: float) -> bytes | None:
        """The value the launch signed under `key` once it is there; None after `timeout`.
        A value another process wrote first (a forged proposal or decision) is passed over,
        not obeyed nor fatal: the real post replaces it."""
        return self._await([key], timeout).get(key)

    def _await(self, keys: list[str], timeout: float) -> dict[str, bytes]:
        """The signed values under `keys` that arrived within `timeout` (foreign ones passed
        over); a store that is gone raises, naming it."""
        try:
            return await_values(self.store, keys, timeout)
        except DistributedConfigError as exc:
            raise DistributedConfigError(f"rank {self.rank} {exc}") from None

    def override_checked(self, source: str, /, **leaves: Any) -> tuple[OverrideEntry, ...]:
        """`override`, then `check_consistency` (one more collective): also catches a rank
        that had diverged before, and fails on every rank if one could not apply."""
        entries = self.override(source, **leaves)
        self.check_consistency()
        return entries

    def seal(self) -> None:
        """End of model load on every rank, at the same point of the override sequence."""
        self._arrive("seal")
        self.context.seal()

    # -- consistency ---------------------------------------------------------------------
    def check_consistency(self) -> list[tuple[str, int, str]]:
        """All-gather (config_hash, epoch, digest of all resolved values) and raise
        DistributedConfigError on every rank if any rank differs from the source rank,
        naming each diverged rank and its values. Returns the gathered tuples."""
        ctx = self.context
        mine = (ctx.config_hash(), ctx.epoch, _digest(ctx.state.values))
        # through the store: a rank that was stopped catches up instead of hanging
        gathered: list[Any] = [json.loads(v) for v in self._gather("check", json.dumps(mine))[1]]
        ref = gathered[self.src]
        bad = [r for r, v in enumerate(gathered) if tuple(v) != tuple(ref)]
        if bad:
            detail = "; ".join(
                f"rank {r}: config_hash={gathered[r][0]} epoch={gathered[r][1]} values={gathered[r][2]}"
                for r in bad
            )
            raise DistributedConfigError(
                f"config diverged on rank(s) {', '.join(map(str, bad))} of {self.world_size}: {detail}; "
                f"rank {self.src} (reference) has config_hash={ref[0]} epoch={ref[1]} values={ref[2]}. "
                f"Overrides must go through DistributedContext.override, not a rank's own context"
            )
        return [tuple(v) for v in gathered]


_default: DistributedContext | None = None


def distributed() -> DistributedContext:
    """The DistributedContext `init_distributed` made (or one over the default group)."""
    global _default
    if _default is None:
        _default = DistributedContext()
    return _default


def publish_distributed(record: Any = None, *, role: str | None = None) -> Context[Any]:
    """Collective publish over the default group; see `DistributedContext.publish`."""
    return distributed().publish(record, role=role)


def override_everywhere(source: str, /, **leaves: Any) -> tuple[OverrideEntry, ...]:
    """Collective override over the default group; see `DistributedContext.override`."""
    return distributed().override(source, **leaves)


def check_consistency() -> list[tuple[str, int, str]]:
    """Collective consistency check over the default group."""
    return distributed().check_consistency()
