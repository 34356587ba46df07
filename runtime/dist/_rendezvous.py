"""Rendezvous: the store every rank checks in through (so a rank that died or never joined
is named in a timeout error instead of hanging the others), the backend, and the torch
groups of a layout."""

from __future__ import annotations

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


def connect_store(addr: str, *, is_master: bool, timeout: float = DEFAULT_TIMEOUT_S) -> Store:
    """A TCPStore at `host:port`. The master does not wait for workers here: the check-in
    that follows does, and names who is missing."""
    host, _, port = addr.rpartition(":")
    return TCPStore(host or "127.0.0.1", int(port), None, is_master,
                         timedelta(seconds=timeout), wait_for_workers=False)


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
