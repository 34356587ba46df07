"""Allocate a `KvPlan`'s tensors with torch on cpu, meta or cuda. The only module of the
configurator that imports torch, so planning (and `configbags plan` without `--allocate`)
stays torch-free."""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import torch

from configbags.server.kvcache.model_shape import DTYPE_BYTES
from configbags.server.kvcache.records import KvPlan, PoolTensor

TORCH_DTYPES: Mapping[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}


# Offsets of tensors carved from the backing buffer are multiples of this, so every tensor
# starts where a separate cudaMalloc would (256) and vectorised kernels may load 16 bytes.
ALIGN = 512


@attrs.frozen
class KvPools:
    """The allocated tensors of one rank, by plan name (one tuple entry per layer), all views
    of one `backing` buffer."""

    device: torch.device
    pools: Mapping[str, tuple[torch.Tensor, ...]]
    req_to_token: torch.Tensor
    spec_buffers: Mapping[str, torch.Tensor]
    backing: torch.Tensor  # uint8; the tensors above plus < ALIGN bytes of padding each

    @property
    def pool_bytes(self) -> int:
        return sum(_nbytes(t) for group in self.pools.values() for t in group)

    @property
    def spec_buffer_bytes(self) -> int:
        return sum(_nbytes(t) for t in self.spec_buffers.values())


def _nbytes(t: torch.Tensor) -> int:
    # numel * element_size also works on meta tensors, which have no storage to ask.
    return t.numel() * t.element_size()


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def allocate(plan: KvPlan, device: str | torch.device = "cpu") -> KvPools:
    """Allocate every pool, the req_to_token table and the speculative buffers.

    One uninitialised buffer, carved into per-layer views: one allocator call instead of
    one per layer (a 70B model has 160 K/V tensors), and no zero-fill, because the engine
    writes a slot before reading it and slot 0 is a dummy whose contents never matter."""
    dev = torch.device(device)
    table = PoolTensor("req_to_token", 1, plan.req_to_token_shape, "int32", "int32")
    specs = [*plan.pools, table, *plan.spec_buffers]
    each = [_aligned(math.prod(p.shape) * DTYPE_BYTES[p.storage_dtype]) for p in specs]
    backing = torch.empty(
        sum(e * p.count for e, p in zip(each, specs, strict=True)), dtype=torch.uint8, device=dev
    )
    offset = 0

    def carve(spec: PoolTensor, size: int) -> torch.Tensor:
        nonlocal offset
        nbytes = math.prod(spec.shape) * DTYPE_BYTES[spec.storage_dtype]
        view = (
            backing[offset : offset + nbytes]
            .view(TORCH_DTYPES[spec.storage_dtype])
            .view(spec.shape)
        )
        offset += size
        return view

    carved = [tuple(carve(p, e) for _ in range(p.count)) for p, e in zip(specs, each, strict=True)]
    n = len(plan.pools)
    pools = {p.name: group for p, group in zip(plan.pools, carved[:n], strict=True)}
    spec = {b.name: group[0] for b, group in zip(plan.spec_buffers, carved[n + 1 :], strict=True)}
    return KvPools(
        device=dev, pools=pools, req_to_token=carved[n][0], spec_buffers=spec, backing=backing
    )
