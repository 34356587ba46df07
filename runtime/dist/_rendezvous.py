"""Rendezvous: the store every rank checks in through (so a rank that died or never joined
is named in a timeout error instead of hanging the others), the backend, and the torch
groups of a layout.

The store is torch's TCPStore, which has no authentication: any process that reaches it
may list, read, write and delete keys. Four things keep such a process from steering, or
reading, what the ranks tell each other:

- the master listens only on the host it is given (torch's own binds every interface),
  and a store that is not loopback-only is refused without a secret unless the caller
  opts out by name (`secure`);
- with a secret, every value configbags posts travels sealed (`SignedStore`: AES-GCM
  under a key derived by HKDF from the secret and the launch's identity, the store key
  as associated data), so a reader without the secret sees ciphertext only (the published
  state's API keys and every other secret leaf included), and a value some other process
  wrote is refused, naming the key, and read as absent: it can neither be obeyed nor block
  the rank that waits for the real one;
- the launch's identity (`join`) is a digest of a fresh nonce from every rank, so a value
  recorded in an earlier launch with the same secret, replayed under its own key, does
  not open;
- without a secret (a loopback store, which runs so without asking), the values travel
  in plaintext, so a set secret leaf is never posted: a publish or override that would
  carry one is refused on every rank (`UnsignedStoreError`), naming the leaf and asking
  for a rank secret.

What is not sealed: the keys torch itself writes (the process group's rendezvous: peer
addresses, barrier counters), and the key names configbags posts under (they name the
collective, never a value). configbags never reads torch's keys, and never carries config
over the process group's transport."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

import attrs
import torch
import torch.distributed as dist
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from torch._C._distributed_c10d import Store, TCPStore  # typed home of these

from configbags.runtime.dist._layout import Layout, group_ranks
from configbags.runtime.errors import DistributedConfigError
from configbags.runtime.leaftypes import none_like

DEFAULT_TIMEOUT_S = 60.0
_SEALED = b"s1."  # a sealed value's first bytes (the format, for a later one to tell apart)
_NONCE_BYTES = 12  # AES-GCM's nonce, random per value
_TAG_BYTES = 16  # AES-GCM's authentication tag
_KEY_INFO = b"configbags rendezvous store seal v1\0"  # HKDF info, before the launch identity

log = logging.getLogger("configbags")


@attrs.frozen
class ParallelGroups:
    """This rank's torch process group on each axis, plus the rank lists they came from."""

    groups: Mapping[str, Any]  # group name -> dist.ProcessGroup containing this rank
    ranks: Mapping[str, list[list[int]]]


def build_groups(layout: Layout, *, backend: str | None = None) -> ParallelGroups:
    """Create the torch.distributed groups of `layout` (collective: every rank calls it)."""
    if dist.get_world_size() != layout.world_size:
        raise DistributedConfigError(
            f"layout needs tp_size*pp_size={layout.world_size} ranks, the world has {dist.get_world_size()}"
        )
    me = dist.get_rank()
    lists = group_ranks(layout)
    mine: dict[str, Any] = {}
    made: dict[tuple[int, ...], Any] = {}  # axes of equal membership share one group
    for name, groups in lists.items():
        for members in groups:
            key = tuple(members)
            if key not in made:
                made[key] = dist.new_group(members, backend=backend)
            if me in members:
                mine[name] = made[key]
    return ParallelGroups(groups=mine, ranks=lists)




def default_backend() -> str:
    """NCCL where there is a GPU, gloo on CPU."""
    return "nccl" if torch.cuda.is_available() else "gloo"


def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket for a store master, bound to `host` only (port 0: an ephemeral
    one, chosen by the kernel, so no other process can have taken it in between)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


def connect_store(addr: str, *, is_master: bool, timeout: float = DEFAULT_TIMEOUT_S,
                  listener: socket.socket | None = None) -> Store:
    """A TCPStore at `host:port`. The master listens on `host` alone (on `listener`, a
    socket from `listen`, when given: clients may connect to it before the store starts),
    never on every interface as TCPStore would. It does not wait for workers here: the
    check-in that follows does, and names who is missing."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not is_master:
        return TCPStore(host, int(port), None, False, timedelta(seconds=timeout), wait_for_workers=False)
    sock = listener if listener is not None else listen(host, int(port))
    bound = int(sock.getsockname()[1])
    # the store owns the descriptor from here (it closes it with itself)
    return TCPStore(host, bound, None, True, timedelta(seconds=timeout), wait_for_workers=False,
                    master_listen_fd=sock.detach())


class ForeignWriteError(DistributedConfigError):
    """A value in the rendezvous store that this launch did not sign: some other process
    wrote it (or replayed one from another launch). Refused, never obeyed."""


class RankLeftError(DistributedConfigError):
    """A rank left the group: it stayed silent for `leave_after` collectives in a row.
    Raised at once by every later collective on every live rank (a change needs every
    rank, so nothing is applied), and on the rank that left when it comes back. A restart
    of the launch brings the group back."""


class UnsignedStoreError(DistributedConfigError):
    """A rendezvous store other hosts can reach, and no secret to sign with; or a set secret
    leaf that would travel through a store with no secret to seal it (any local process can
    read the store)."""


SECRET_ENV = "CONFIGBAGS_RANK_SECRET"  # the launch's secret, when init_distributed gets none
ALLOW_UNSIGNED_ENV = "CONFIGBAGS_ALLOW_UNSIGNED_STORE"  # "1": run unsigned on any store
FOREIGN_RETRY_S = 0.05  # how often a waiter looks again past a value it did not sign
_FOREIGN_CAS_TRIES = 8  # a foreign value replaced by ours this many times, then refused


def seal_key(secret: bytes, run: bytes) -> AESGCM:
    """The AES-256-GCM key of one launch: HKDF-SHA256 of the launch's `secret`, bound to
    its identity `run`, so each launch seals under a key of its own."""
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KEY_INFO + run).derive(secret)
    return AESGCM(derived)


class SignedStore(Store):
    """`store` with every value sealed under the launch's `secret` and `run` (the launch's
    identity, see `join`): `set` stores `s1.` and the base64 of a random nonce and the
    AES-GCM encryption of the value, under a key derived from secret and run, with the
    store key as associated data; every read opens and authenticates it. A reader without
    the secret sees no byte of the value, only its length (give or take base64's padding).
    Binding the key means a value sealed for one key is refused under another; binding
    the run, that one recorded in another launch with the same secret is refused under
    its own key.

    A value that does not open is foreign. `get` and `multi_get` raise ForeignWriteError
    naming the key (logged once per key); `read` answers None, as for a key not there yet,
    so a waiter passes over it to the real value; `compare_set` treats it as absent and
    replaces it (atomically: a compare-and-set on the foreign bytes), so a value written
    ahead under a key we compare-and-set never blocks it. `check` and `wait` see keys,
    not values: a foreign key makes them answer early, and the read that follows refuses
    it."""

    def __init__(self, store: Store, secret: bytes, *, run: bytes = b"",
                 where: str = "the rendezvous store") -> None:
        super().__init__()
        self.inner = store
        self._secret = secret
        self._aead = seal_key(secret, run)
        self.run = run
        self.where = where
        self._told: set[str] = set()  # keys whose foreign value was logged (once each)

    def over(self, store: Store, *, run: bytes | None = None) -> SignedStore:
        """The same sealing over another client of the store (a thread of its own needs one:
        a client inside a wait holds it), or, with `run`, for another launch identity."""
        return SignedStore(store, self._secret, run=self.run if run is None else run, where=self.where)

    def _seal(self, key: str, value: str) -> str:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, value.encode(), key.encode())
        return (_SEALED + base64.b64encode(nonce + sealed)).decode("ascii")

    def _unseal(self, key: str, raw: bytes) -> bytes | None:
        """The value `raw` seals for `key` in this launch, or None (foreign; nothing logged)."""
        raw = bytes(raw)
        if not raw.startswith(_SEALED):
            return None
        try:
            blob = base64.b64decode(raw[len(_SEALED):], validate=True)
        except ValueError:  # binascii.Error: not base64
            return None
        if len(blob) < _NONCE_BYTES + _TAG_BYTES:
            return None
        try:
            return self._aead.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], key.encode())
        except InvalidTag:
            return None

    def _verified(self, key: str, raw: bytes) -> bytes | None:
        data = self._unseal(key, raw)
        if data is not None:
            return data
        message = self._foreign(key)
        if key not in self._told:
            self._told.add(key)
            log.warning("%s", message)
        return None

    def verifies(self, key: str, raw: bytes) -> bool:
        """Whether `raw` is a value this launch sealed for `key` (nothing is logged)."""
        return self._unseal(key, raw) is not None

    def _foreign(self, key: str) -> str:
        return (f"{self.where} holds a value under {key!r} that this launch did not sign: another "
                f"process wrote it (or replayed one from another launch); the value is refused, not obeyed")

    def _open(self, key: str, raw: bytes) -> bytes:
        data = self._verified(key, raw)
        if data is None:
            raise ForeignWriteError(self._foreign(key))
        return data

    def set(self, key: str, value: str) -> None:
        self.inner.set(key, self._seal(key, value))

    def get(self, key: str) -> bytes:
        return self._open(key, self.inner.get(key))

    def read(self, key: str) -> bytes | None:
        """The signed value under `key`, or None: not there, or foreign (logged once)."""
        if not self.inner.check([key]):
            return None
        return self._verified(key, self.inner.get(key))

    def read_present(self, keys: list[str]) -> list[bytes | None]:
        """`read` of keys known to be there, in one round trip."""
        return [self._verified(k, v) for k, v in zip(keys, self.inner.multi_get(keys), strict=True)]

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self._open(k, v) for k, v in zip(keys, self.inner.multi_get(keys), strict=True)]

    def _standing_seal(self, key: str, expected_value: str) -> str:
        """What to compare-and-set against for `expected_value`: the bytes standing under
        `key` when they seal exactly that value (a seal is randomised, so sealing it again
        would never compare equal), else a fresh seal of it, which matches nothing there."""
        if self.inner.check([key]):
            standing = bytes(self.inner.get(key))
            if self._unseal(key, standing) == expected_value.encode():
                return cast(str, standing)  # bytes, handed to the store as they are (see below)
        return self._seal(key, expected_value)

    def compare_set(self, key: str, expected_value: str, desired_value: str) -> bytes:
        # an empty `expected` means "absent" to TCPStore, and a foreign value counts as absent
        expected = self._standing_seal(key, expected_value) if expected_value else ""
        desired = self._seal(key, desired_value)
        for _ in range(_FOREIGN_CAS_TRIES):
            standing = bytes(self.inner.compare_set(key, expected, desired))
            data = self._verified(key, standing)
            if data is not None:
                return data
            if expected_value:  # the value compared against is gone: report what stands
                raise ForeignWriteError(self._foreign(key))
            # replace exactly that foreign value, if it still stands: as bytes, which pybind11
            # hands to the store as they are (a str would be re-encoded as UTF-8)
            expected = cast(str, standing)
        raise ForeignWriteError(f"{self._foreign(key)}; rewritten {_FOREIGN_CAS_TRIES} times while this "
                                f"rank tried to replace it")

    def check(self, keys: list[str]) -> bool:
        return bool(self.inner.check(keys))

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        if timeout is None:
            self.inner.wait(keys)
        else:
            self.inner.wait(keys, timeout)

    def delete_key(self, key: str) -> bool:
        return bool(self.inner.delete_key(key))


def signed(store: Store, secret: bytes | None, *, run: bytes = b"", where: str = "the rendezvous store") -> Store:
    """`store`, sealed under `secret` (and the launch identity `run`) when there is one."""
    return store if not secret else SignedStore(store, secret, run=run, where=where)


def read(store: Store, key: str) -> bytes | None:
    """The value under `key` that this launch wrote, or None (not there, or foreign)."""
    if isinstance(store, SignedStore):
        return store.read(key)
    return bytes(store.get(key)) if store.check([key]) else None


def _read_present(store: Store, keys: list[str]) -> list[bytes | None]:
    if isinstance(store, SignedStore):
        return store.read_present(keys)
    return [bytes(v) for v in store.multi_get(keys)]


def store_host(store: Store) -> str | None:
    """The host a TCPStore (under any PrefixStores) connects to; None for an in-process or
    file store, which no other host reaches."""
    while True:
        if isinstance(store, SignedStore):
            store = store.inner
        elif isinstance(store, TCPStore):
            return str(store.host)
        elif (under := getattr(store, "underlying_store", None)) is not None:
            store = under
        else:
            return None


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback interface only."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def secure(host: str | None, secret: bytes | None, *, allow_unsigned: bool | None = None) -> bytes | None:
    """The secret to sign with: `secret`, else `$CONFIGBAGS_RANK_SECRET`. With neither, a
    store that other hosts can reach (`host` not loopback) is refused: any process there
    could post what the ranks obey. `allow_unsigned=True` (or
    `$CONFIGBAGS_ALLOW_UNSIGNED_STORE=1`) runs unsigned anyway, for a network the caller
    trusts; a loopback store runs unsigned without asking (only local processes reach it),
    and then no set secret leaf is posted to it (`UnsignedStoreError` at the publish or
    override that would carry one: any local process can read the store)."""
    if not secret:
        secret = os.environ.get(SECRET_ENV, "").encode() or None
    if secret is not None and none_like(secret.decode("utf-8", "replace")):
        raise UnsignedStoreError(
            f"the rank secret (secret= or ${SECRET_ENV}) is blank or a word for no value (none, null, ...): "
            f"as a key it would be guessable, and was most likely meant as unset; give every rank the same "
            f"real secret (e.g. `openssl rand -hex 32`), or none at all on a loopback store"
        )
    if secret or host is None or is_loopback(host):
        return secret
    if allow_unsigned is None:
        allow_unsigned = os.environ.get(ALLOW_UNSIGNED_ENV, "") == "1"
    if allow_unsigned:
        log.warning("the rendezvous store at %s is not loopback-only and runs unsigned (allowed by "
                    "allow_unsigned / $%s): any process that reaches it can post what the ranks obey",
                    host, ALLOW_UNSIGNED_ENV)
        return None
    raise UnsignedStoreError(
        f"the rendezvous store at {host} is reachable from other hosts, and there is no secret to sign "
        f"what the ranks post: any process that reaches it could post what the ranks obey. Give every "
        f"rank the same secret (init_distributed(secret=...) or ${SECRET_ENV}), or, on a network you "
        f"trust, opt out explicitly with allow_unsigned=True or ${ALLOW_UNSIGNED_ENV}=1"
    )


def identity(nonces: list[bytes]) -> bytes:
    """The launch's identity, from every rank's join nonce in rank order."""
    return hashlib.sha256(b",".join(nonces)).digest()


def join(store: Store, rank: int, world_size: int, timeout: float, *, what: str = "join") -> Store:
    """Check in under `what` (naming the ranks missing after `timeout`) and, on a signed
    store, agree on the launch's identity: every rank posts a fresh nonce, and the identity
    is a digest of all of them, so no value of an earlier launch verifies in this one, even
    with the same secret (each rank's own nonce is new). Returns the store signed for this
    launch.

    A value already under a rank's nonce key before it posts (another process wrote it, or
    replayed an old one) is replaced, and ranks that read it first disagree on the identity:
    the second check-in, signed for the identity, names them."""
    if not isinstance(store, SignedStore):
        check_in(store, what, rank, world_size, timeout)
        return store
    mine = secrets.token_hex(16)
    key = f"{what}/{rank}"
    if store.compare_set(key, "", mine).decode() != mine:  # a signed value stood: replayed
        store.set(key, mine)
        log.warning("%s held a signed value under %r before rank %d joined: a replay of an earlier "
                    "launch's; replaced", store.where, key, rank)
    nonces = check_in(store, what, rank, world_size, timeout, post=False)
    session = store.over(store.inner, run=identity(nonces))
    check_in(session, f"{what}ed", rank, world_size, timeout)
    return session


def await_values(store: Store, keys: list[str], timeout: float) -> dict[str, bytes]:
    """The values this launch wrote under `keys`, waiting up to `timeout` for them: a foreign
    value (another process wrote it ahead of ours) is passed over, logged by the store, until
    ours replaces it. Returns those that arrived; a store that is gone raises, naming it."""
    deadline = time.monotonic() + timeout
    got: dict[str, bytes] = {}
    while True:
        pending = [k for k in keys if k not in got]
        try:
            store.wait(pending, timedelta(seconds=max(0.001, deadline - time.monotonic())))
            values = _read_present(store, pending)  # all there: one round trip
        except Exception as exc:  # DistStoreError on timeout; other errors if the store is gone
            try:
                store.check(pending[:1])
            except Exception:
                raise DistributedConfigError(
                    f"lost the rendezvous store while waiting ({exc}); the store host (rank 0 or the "
                    f"launcher) is probably gone"
                ) from None
            values = [read(store, key) for key in pending]
        got.update((k, v) for k, v in zip(pending, values, strict=True) if v is not None)
        if len(got) == len(keys) or time.monotonic() >= deadline:
            return got
        time.sleep(FOREIGN_RETRY_S)  # a foreign value stands: look again once ours may be there


def check_in(store: Store, what: str, rank: int, world_size: int, timeout: float, *,
             post: bool = True) -> list[bytes]:
    """Announce `rank` under key `what` (unless it `post`ed its value there already) and
    wait for every rank; returns their values. On timeout raise DistributedConfigError
    naming the ranks that did not arrive (or whose value this launch did not sign)."""
    if post:
        store.set(f"{what}/{rank}", "1")
    keys = [f"{what}/{r}" for r in range(world_size)]
    try:
        got = await_values(store, keys, timeout)
    except DistributedConfigError as exc:
        raise DistributedConfigError(f"{what}: rank {rank} {exc}") from None
    missing = [r for r in range(world_size) if keys[r] not in got]
    if missing:
        raise DistributedConfigError(
            f"{what}: rank(s) {', '.join(map(str, missing))} of {world_size} did not arrive within "
            f"{timeout:g} s (dead, hung, or never started; or their post is not signed for this launch, "
            f"which the log names); waiting on rank {rank}"
        ) from None
    return [got[k] for k in keys]
