"""The tensors a plan allocates, as shapes: per-layer KV pools, mamba state pools and the
speculative buffers (what `pools.allocate` carves out of one backing buffer)."""

from __future__ import annotations

from configbags.server.kvcache.mamba import MambaGeometry
from configbags.server.kvcache.model_shape import ModelShape
from configbags.server.kvcache.records import Cell, MambaSlots, PoolTensor


def kv_tensors(
    shape: ModelShape,
    cell: Cell,
    tokens: int,
    swa_tokens: int | None,
    page: int,
    kv_heads: int,
    kv: tuple[str, str],
    draft: tuple[str, str],
) -> tuple[PoolTensor, ...]:
    """Per-layer KV tensors; every pool has `tokens + page` rows because slot 0's page is a
    dummy that padded tokens write into."""
    rows = tokens + page
    out: list[PoolTensor] = []
    (kv_dtype, kv_storage), (draft_dtype, draft_storage) = kv, draft
    if shape.mla is not None:
        latent = shape.mla.kv_lora_rank + shape.mla.qk_rope_head_dim
        out.append(PoolTensor("kv", cell.full_layers, (rows, 1, latent), kv_dtype, kv_storage))
        if cell.draft_layers:
            out.append(
                PoolTensor("draft_kv", cell.draft_layers, (rows, 1, latent), draft_dtype, draft_storage)
            )
        return tuple(out)
    k_row, v_row = (kv_heads, shape.head_dim), (kv_heads, shape.v_head_dim)
    if cell.full_layers:
        out.append(PoolTensor("k", cell.full_layers, (rows, *k_row), kv_dtype, kv_storage))
        out.append(PoolTensor("v", cell.full_layers, (rows, *v_row), kv_dtype, kv_storage))
    if swa_tokens is not None and cell.swa_layers:
        swa_rows = swa_tokens + page
        out.append(PoolTensor("k_swa", cell.swa_layers, (swa_rows, *k_row), kv_dtype, kv_storage))
        out.append(PoolTensor("v_swa", cell.swa_layers, (swa_rows, *v_row), kv_dtype, kv_storage))
    if cell.draft_layers:
        out.append(PoolTensor("draft_k", cell.draft_layers, (rows, *k_row), draft_dtype, draft_storage))
        out.append(PoolTensor("draft_v", cell.draft_layers, (rows, *v_row), draft_dtype, draft_storage))
    return tuple(out)


def mamba_tensors(geometry: MambaGeometry, layers: int, mamba: MambaSlots) -> tuple[PoolTensor, ...]:
    """Conv and temporal state of every linear layer on the stage: `slots + 1` rows (row 0
    pads), plus the intermediate states speculative verify writes, one per draft token of
    each request that has them (`MambaPool` with `speculative_num_draft_tokens`)."""
    g = geometry
    out = [
        PoolTensor("mamba_conv", 1, (layers, mamba.slots + 1, *g.conv), g.conv_dtype, g.conv_dtype),
        PoolTensor("mamba_temporal", 1, (layers, mamba.slots + 1, *g.temporal), g.ssm_dtype, g.ssm_dtype),
    ]
    if mamba.spec_rows:
        rows = (layers, mamba.spec_rows, mamba.draft_tokens)
        out += [
            PoolTensor("mamba_spec_conv", 1, (*rows, *g.conv), g.conv_dtype, g.conv_dtype),
            PoolTensor("mamba_spec_temporal", 1, (*rows, *g.temporal), g.ssm_dtype, g.ssm_dtype),
        ]
    return tuple(out)


def spec_buffers(max_reqs: int, draft_tokens: int, alloc_reserve_per_decode: int) -> tuple[PoolTensor, ...]:
    """The per-request speculative buffers, all sized by the draft-token bound D."""
    d = draft_tokens
    return (
        PoolTensor("draft_token_ids", 1, (max_reqs, d), "int64", "int64"),
        PoolTensor("draft_positions", 1, (max_reqs, d), "int64", "int64"),
        PoolTensor("retrieve_index", 1, (max_reqs, d), "int64", "int64"),
        PoolTensor("tree_mask", 1, (max_reqs, d, d), "bool", "bool"),
        PoolTensor("out_cache_loc", 1, (max_reqs * alloc_reserve_per_decode,), "int64", "int64"),
    )
