"""Rendezvous: the store every rank checks in through (so a rank that died or never joined
is named in a timeout error instead of hanging the others), the backend, and the torch
groups of a layout.

The store is torch's TCPStore, which has no authentication. Two things keep other
processes out of what the ranks tell each other: the master listens only on the host it
is given (torch's own binds every interface), and with a per-launch secret every value
travels signed (`SignedStore`: an HMAC of key and value), so a value some other process
wrote into the store is refused, naming the key, instead of being obeyed."""

from __future__ import annotations

import hashlib
import hmac
import logging
import socket
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import attrs
import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Store, TCPStore  # typed home of these

from configbags.runtime.dist._layout import Layout, group_ranks
from configbags.runtime.errors import DistributedConfigError

DEFAULT_TIMEOUT_S = 60.0
_MAC_CHARS = 64  # hex of a SHA-256 HMAC

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
    wrote it. Refused, never obeyed."""


class SignedStore(Store):
    """`store` with every value signed under the launch's `secret`: `set` stores an HMAC of
    key and value before the value, and every read checks it, raising ForeignWriteError
    naming the key when it does not match. Binding the key means a value signed for one
    key is refused under another. `check` and `wait` see keys, not values: a foreign key
    makes them answer early, and the read that follows refuses it."""

    def __init__(self, store: Store, secret: bytes, *, where: str = "the rendezvous store") -> None:
        super().__init__()
        self.inner = store
        self._secret = secret
        self.where = where
        self._told: set[str] = set()  # keys whose foreign value was logged (once each)

    def _mac(self, key: str, value: bytes) -> bytes:
        return hmac.new(self._secret, key.encode() + b"\0" + value, hashlib.sha256).hexdigest().encode()

    def _seal(self, key: str, value: str) -> str:
        return f"{self._mac(key, value.encode()).decode()}:{value}"

    def _open(self, key: str, raw: bytes) -> bytes:
        mac, sep, data = bytes(raw).partition(b":")
        if not sep or len(mac) != _MAC_CHARS or not hmac.compare_digest(mac, self._mac(key, data)):
            message = (f"{self.where} holds a value under {key!r} that this launch did not sign: another "
                       f"process wrote into the store; the value is refused, not obeyed")
            if key not in self._told:
                self._told.add(key)
                log.warning("%s", message)
            raise ForeignWriteError(message)
        return data

    def set(self, key: str, value: str) -> None:
        self.inner.set(key, self._seal(key, value))

    def get(self, key: str) -> bytes:
        return self._open(key, self.inner.get(key))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self._open(k, v) for k, v in zip(keys, self.inner.multi_get(keys), strict=True)]

    def compare_set(self, key: str, expected_value: str, desired_value: str) -> bytes:
        # an empty `expected` means "absent" to TCPStore; a signed one matches byte for byte
        sealed = self._seal(key, expected_value) if expected_value else ""
        return self._open(key, self.inner.compare_set(key, sealed, self._seal(key, desired_value)))

    def check(self, keys: list[str]) -> bool:
        return bool(self.inner.check(keys))

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        if timeout is None:
            self.inner.wait(keys)
        else:
            self.inner.wait(keys, timeout)

    def delete_key(self, key: str) -> bool:
        return bool(self.inner.delete_key(key))


def signed(store: Store, secret: bytes | None, *, where: str = "the rendezvous store") -> Store:
    """`store`, signed under `secret` when there is one."""
    return store if not secret else SignedStore(store, secret, where=where)


def check_in(store: Store, what: str, rank: int, world_size: int, timeout: float) -> None:
    """Announce `rank` under key `what` and wait for every rank; on timeout raise
    DistributedConfigError naming the ranks that did not arrive."""
    store.set(f"{what}/{rank}", "1")
    keys = [f"{what}/{r}" for r in range(world_size)]
    try:
        store.wait(keys, timedelta(seconds=timeout))
    except Exception as exc:  # DistStoreError / RuntimeError, depending on the store
        try:
            missing = [r for r in range(world_size) if not store.check([keys[r]])]
        except Exception:
            raise DistributedConfigError(
                f"{what}: rank {rank} lost the rendezvous store while waiting for {world_size} "
                f"ranks ({exc}); the store host (rank 0 or the launcher) is probably gone"
            ) from exc
        if not missing:  # they all arrived just after the deadline
            return
        raise DistributedConfigError(
            f"{what}: rank(s) {', '.join(map(str, missing))} of {world_size} did not arrive within "
            f"{timeout:g} s (dead, hung, or never started); waiting on rank {rank}"
        ) from None
