"""Rank layout: one stride table per parallel axis. The stamped ranks and the torch groups
both come from it, so a rank's stamped `tp_rank` is its rank in the TP group torch built.
torch-free (the groups themselves are built in `_rendezvous.build_groups`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from configbags.runtime.errors import DistributedConfigError

#: (rank name, group name) per axis, in stamping order.
AXES: tuple[tuple[str, str], ...] = (
    ("tp_rank", "tp"),
    ("pp_rank", "pp"),
    ("attn_tp_rank", "attn_tp"),
    ("attn_cp_rank", "attn_cp"),
    ("attn_dp_rank", "attn_dp"),
    ("moe_tp_rank", "moe_tp"),
    ("moe_ep_rank", "moe_ep"),
    ("moe_dp_rank", "moe_dp"),
)


@attrs.frozen
class Layout:
    """Group sizes of one launch. World rank `w = tp_size * pp_rank + tp_rank`; inside a TP
    block the attention axes nest as (attn_dp, attn_cp, attn_tp) and the MoE axes as
    (moe_dp, moe_ep, moe_tp), innermost last, as SGLang builds its groups."""

    tp_size: int
    pp_size: int = 1
    attn_tp_size: int | None = None  # None: tp_size // attn_dp_size // attn_cp_size
    attn_cp_size: int = 1
    attn_dp_size: int = 1
    moe_tp_size: int | None = None  # None: tp_size // moe_ep_size // moe_dp_size
    moe_ep_size: int = 1
    moe_dp_size: int = 1

    @classmethod
    def from_values(cls, values: Any) -> Layout:
        """From a parallel bag, or any mapping of resolved values."""
        names = [f.name for f in attrs.fields(cls)]
        if isinstance(values, Mapping):
            return cls(**{n: values[n] for n in names})
        return cls(**{n: getattr(values, n) for n in names})

    @property
    def world_size(self) -> int:
        return self.tp_size * self.pp_size

    def strides(self) -> dict[str, tuple[int, int]]:
        """Group name -> (size, stride in world ranks); checks that the axes tile TP."""
        a_tp = self.attn_tp_size or max(1, self.tp_size // self.attn_dp_size // self.attn_cp_size)
        m_tp = self.moe_tp_size or max(1, self.tp_size // self.moe_ep_size // self.moe_dp_size)
        for kind, parts in (
            ("attention", (a_tp, self.attn_cp_size, self.attn_dp_size)),
            ("MoE", (m_tp, self.moe_ep_size, self.moe_dp_size)),
        ):
            if parts[0] * parts[1] * parts[2] != self.tp_size or min(parts) < 1:
                raise DistributedConfigError(
                    f"the {kind} groups (tp {parts[0]} x cp/ep {parts[1]} x dp {parts[2]}) do not "
                    f"tile tp_size={self.tp_size}; choose sizes whose product is tp_size"
                )
        return {
            "tp": (self.tp_size, 1),
            "pp": (self.pp_size, self.tp_size),
            "attn_tp": (a_tp, 1),
            "attn_cp": (self.attn_cp_size, a_tp),
            "attn_dp": (self.attn_dp_size, a_tp * self.attn_cp_size),
            "moe_tp": (m_tp, 1),
            "moe_ep": (self.moe_ep_size, m_tp),
            "moe_dp": (self.moe_dp_size, m_tp * self.moe_ep_size),
        }


def compute_ranks(world_rank: int, layout: Layout | None = None, /, **sizes: int) -> dict[str, int]:
    """Every stamped rank of `world_rank`: `(world_rank // stride) % size` per axis, the
    same strides `group_ranks` builds the groups from. Give a `Layout` or its sizes."""
    lay = layout or Layout(**sizes)
    if not 0 <= world_rank < lay.world_size:
        raise DistributedConfigError(
            f"world rank {world_rank} is outside the launch of tp_size*pp_size={lay.world_size} ranks"
        )
    strides = lay.strides()
    ranks = {"world_rank": world_rank}
    for rank_name, group in AXES:
        size, stride = strides[group]
        ranks[rank_name] = (world_rank // stride) % size
    return ranks


def stamp_ranks(world_rank: int, values: Mapping[str, Any]) -> dict[str, int]:
    """The rank function a distributed context publishes with: the context re-runs it with
    the resolved values whenever an override rebuilds the parallel bag, so an elastic
    resize of dp_size or ep_size re-stamps every rank instead of leaving stale ones."""
    return compute_ranks(world_rank, Layout.from_values(values))


def group_ranks(layout: Layout) -> dict[str, list[list[int]]]:
    """Group name -> the world ranks of every group of that axis, in a deterministic order
    (every rank must create every group, in the same order, for torch's new_group)."""
    out: dict[str, list[list[int]]] = {}
    for group, (size, stride) in layout.strides().items():
        seen: dict[int, list[int]] = {}
        for w in range(layout.world_size):
            base = w - ((w // stride) % size) * stride
            seen.setdefault(base, [base + i * stride for i in range(size)])
        out[group] = list(seen.values())
    return out
