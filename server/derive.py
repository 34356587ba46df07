"""Derived values of the bundled schema. Each function takes the leaves named in its
`inputs:`, positionally and in that order, and returns the derived value; the context recomputes a
non-pinned one whenever an input changes, so no reader can see a stale derived value."""

from __future__ import annotations

EP_JOIN_MODES = frozenset({"scale", "recover"})
EXTRA_BUFFER_STRATEGIES = frozenset({"extra_buffer", "extra_buffer_lazy"})


def attn_dp_size(dp_size: int, enable_dp_attention: bool) -> int:
    return dp_size if enable_dp_attention else 1


class ParallelLayoutError(ValueError):
    """A parallel layout SGLang refuses to launch; the message names the flags and the fix."""


def attn_tp_size(tp_size: int, attn_dp_size: int, attn_cp_size: int) -> int:
    """The attention TP width. SGLang cuts each attention group out of the TP group, so DP
    attention needs dp_size to divide tp_size and attention CP needs attn_cp_size to divide
    what is left; it refuses any other layout, and so does this (a width rounded down would
    size pools for more attention replicas than there are GPUs)."""
    if tp_size % attn_dp_size:
        raise ParallelLayoutError(
            f"--tp-size {tp_size} is not divisible by --dp-size {attn_dp_size}: with --enable-dp-attention each "
            f"attention replica takes tp_size // dp_size GPUs; give a --dp-size that divides --tp-size")
    group = tp_size // attn_dp_size
    if group % attn_cp_size:
        within = f"--tp-size {tp_size} // --dp-size {attn_dp_size}" if attn_dp_size > 1 else f"--tp-size {tp_size}"
        raise ParallelLayoutError(
            f"the attention TP group of {group} GPU(s) ({within}) is not divisible by --attn-cp-size {attn_cp_size}; "
            f"give an --attn-cp-size that divides it")
    return group // attn_cp_size


def attn_dcp_size(dcp_size: int) -> int:
    return dcp_size if dcp_size > 1 else 1


def dcp_enabled(dcp_size: int) -> bool:
    # The DCP group is only built when there is more than one rank to shard KV over.
    return dcp_size > 1


def moe_ep_size(ep_size: int) -> int:
    # As configured; under elastic EP the live group may differ until the next override.
    return ep_size


def moe_tp_size(tp_size: int, moe_ep_size: int, moe_dp_size: int) -> int:
    """The TP width inside MoE layers. SGLang cuts the expert-parallel and MoE-DP groups out
    of the TP group (`tp_size // moe_ep_size // moe_dp_size` in `initialize_model_parallel`),
    so their product must divide tp_size; any other layout has no rank grid, and a width
    rounded down would plan expert shards for GPUs that do not exist."""
    groups = moe_ep_size * moe_dp_size
    if tp_size % groups:
        if moe_dp_size == 1:
            raise ParallelLayoutError(
                f"--tp-size {tp_size} is not divisible by --ep-size {moe_ep_size}: MoE layers cut the TP group "
                f"into expert-parallel groups of --ep-size GPUs; give an --ep-size that divides --tp-size")
        given = f"--moe-dp-size {moe_dp_size}" if moe_ep_size == 1 else (
            f"--ep-size {moe_ep_size} x --moe-dp-size {moe_dp_size} = {groups}")
        raise ParallelLayoutError(
            f"--tp-size {tp_size} is not divisible by {given}: MoE layers cut the TP group into "
            f"expert-parallel and MoE data-parallel groups; give an --ep-size and a --moe-dp-size whose "
            f"product divides --tp-size")
    return tp_size // groups


def is_ep_joiner(ep_join_mode: str | None) -> bool:
    return ep_join_mode in EP_JOIN_MODES


def enable_mamba_extra_buffer(disable_radix_cache: bool, mamba_radix_cache_strategy: str) -> bool:
    return not disable_radix_cache and mamba_radix_cache_strategy in EXTRA_BUFFER_STRATEGIES


def enable_mamba_extra_buffer_lazy(mamba_radix_cache_strategy: str) -> bool:
    return mamba_radix_cache_strategy == "extra_buffer_lazy"


def max_speculative_num_draft_tokens(
    speculative_algorithm: str | None,
    speculative_num_draft_tokens: int | None,
    speculative_num_steps: int | None,
    speculative_eagle_topk: int | None,
    speculative_adaptive: bool,
) -> int:
    """The draft-token bound that sizes KV row headroom and every speculative buffer.

    Pinned at publish: adaptive speculation may later lower or raise the active count, but
    only up to this bound, so buffers sized from it never need to grow. Without a draft
    algorithm it is 0. The active count defaults to the EAGLE tree size `steps * topk + 1`;
    with adaptive speculation the bound also covers the largest tree the configured steps
    and top-k can build (a choice of ours: SGLang takes it from its adaptive candidates)."""
    if speculative_algorithm is None:
        return 0
    steps = speculative_num_steps or 1
    topk = speculative_eagle_topk or 1
    tree = steps * topk + 1
    active = speculative_num_draft_tokens if speculative_num_draft_tokens is not None else tree
    return max(active, tree) if speculative_adaptive else active


def tokenizer_source(tokenizer_path: str | None, model_path: str) -> str:
    """The tokenizer a server loads: its own path, or the model's when unset (SGLang's
    fallback), so two servers compare what they load rather than what they were told."""
    return tokenizer_path if tokenizer_path is not None else model_path


# One name per precision: two servers told `bf16` and `bfloat16` store the same pages
_PRECISIONS = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float": "fp32", "float32": "fp32"}


def kv_page_dtype(kv_cache_dtype: str, dtype: str) -> str:
    """The precision a server stores KV pages in, as far as its config says: kv_cache_dtype
    as given (one name per precision), or under `auto` `auto/<dtype>`: the checkpoint then
    decides (its dtype, or FP8 where it declares FP8 KV quantization), so an `auto` server
    agrees only with another `auto` server of the same model dtype (and the contract's same
    model), never with one told a precision: a float16 and a bfloat16 server, or a
    checkpoint's FP8 pages and a `bf16` server, no longer pass as one."""
    if kv_cache_dtype != "auto":
        return _PRECISIONS.get(kv_cache_dtype, kv_cache_dtype)
    return f"auto/{_PRECISIONS.get(dtype, dtype)}"
