"""What the plan reads: the config leaves (`PlanSettings`), the device memory
(`DeviceMemory`), and the resolution of the `auto` dtypes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

import attrs

from configbags.server.kvcache.errors import SettingsError
from configbags.server.kvcache.model_shape import ModelShape

# kv_cache_dtype choice -> (logical dtype, storage dtype). fp8 is stored as uint8, as SGLang
# does, so that index_put/copy work on every backend; the bytes are the same.
KV_DTYPES: Mapping[str, tuple[str, str]] = {
    "bf16": ("bfloat16", "bfloat16"),
    "bfloat16": ("bfloat16", "bfloat16"),
    "float16": ("float16", "float16"),
    "float32": ("float32", "float32"),
    "fp8_e4m3": ("float8_e4m3fn", "uint8"),
    "fp8_e5m2": ("float8_e5m2", "uint8"),
}
# Block-scaled formats need per-block scale pools whose layout is kernel specific; the
# planner refuses them rather than guess.
_UNSUPPORTED_KV_DTYPES = ("mxfp8", "nvfp4", "fp4_mx_block16")

# model.dtype choices -> the dtype name used in plans.
_MODEL_DTYPES: Mapping[str, str] = {
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "float32": "float32",
}
# The kv_cache_dtype choice an `auto` resolves to, by logical KV dtype: the value written
# back through the context, so server_info() names the dtype the pools really hold. Every
# dtype `auto` can reach is here except float32 (a model run with --dtype float32), which
# the leaf's choices cannot name; that case is refused with a fix (resolve_kv_dtype).
_KV_CHOICE_FOR: Mapping[str, str] = {
    "bfloat16": "bf16",
    "float16": "float16",
    "float8_e4m3fn": "fp8_e4m3",
}


# The leaves a plan may write back (`Decision.leaf`): mypy checks each decision's name, and
# the seam checks that a schema lets the configurator's role write them after publish.
WrittenLeaf = Literal[
    "dtype",
    "kv_cache_dtype",
    "context_length",
    "max_running_requests",
    "max_mamba_cache_size",
]
WRITTEN_LEAVES: tuple[WrittenLeaf, ...] = get_args(WrittenLeaf)


@attrs.frozen(kw_only=True)
class PlanSettings:
    """The config leaves the plan reads, as the accessors return them (None = unresolved,
    i.e. a load-time value the planner resolves and writes back).

    The two ratios are required and never None: the context applies their schema fallbacks
    before any reader sees them, so the planner keeps no copy of those values. A caller
    without a context (tests, tools) takes them from the generated registry's
    `LEAVES[leaf].fallback`."""

    swa_full_tokens_ratio: float
    mamba_full_memory_ratio: float
    tp_size: int = 1
    attn_tp_size: int = 1
    attn_dp_size: int = 1
    attn_dcp_size: int = 1
    pp_size: int = 1
    enable_dp_attention: bool = False
    ep_size: int = 1  # with the next: the routed experts each expert-parallel rank holds
    ep_num_redundant_experts: int = 0
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    context_length: int | None = None
    page_size: int | None = None
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    max_running_requests: int | None = None
    disable_hybrid_swa_memory: bool = False
    max_mamba_cache_size: int | None = None
    mamba_ssm_dtype: str | None = None
    disable_radix_cache: bool = False
    enable_mamba_extra_buffer: bool = False
    enable_mamba_extra_buffer_lazy: bool = False
    disable_overlap_schedule: bool = False
    chunked_prefill_size: int | None = None  # sizes the SWA pool from a request cap
    cuda_graph_max_bs_decode: int | None = None  # with the next two: SGLang's reported reserve
    disable_cuda_graph: bool = False
    disable_decode_cuda_graph: bool = False
    mamba_radix_cache_strategy: str = "auto"
    attention_backend: str | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None  # the active count; sizes nothing
    max_speculative_num_draft_tokens: int = 0  # the resolved bound D; sizes everything
    speculative_draft_kv_cache_dtype: str | None = None
    speculative_draft_model_path: str | None = None

    def written(self) -> Mapping[WrittenLeaf, object]:
        """The leaves a plan may write back, as read: what each decision replaces."""
        return {
            "dtype": self.dtype,
            "kv_cache_dtype": self.kv_cache_dtype,
            "context_length": self.context_length,
            "max_running_requests": self.max_running_requests,
            "max_mamba_cache_size": self.max_mamba_cache_size,
        }


@attrs.frozen
class DeviceMemory:
    """`pre_bytes`: free bytes before weights load. `weight_bytes` / `draft_weight_bytes`:
    the measured target / draft weights per rank, or None to estimate them from the model
    config. `capacity_bytes`: the device's total memory, from which SGLang derives its
    default mem_fraction_static and activation reserve (None: take `pre_bytes`). `sm`: the
    compute capability the default attention backend rules test (None: unknown)."""

    pre_bytes: int
    weight_bytes: int | None = None
    draft_weight_bytes: int | None = None
    source: str = "--device-memory"
    capacity_bytes: int | None = None
    sm: int | None = None  # the device's compute capability (major*10+minor), when known

    @property
    def capacity(self) -> int:
        return self.pre_bytes if self.capacity_bytes is None else self.capacity_bytes


def resolve_model_dtype(dtype: str, shape: ModelShape) -> str:
    """`auto` follows the checkpoint, except float32 checkpoints run in bfloat16 (SGLang
    and vLLM downcast them; they pick float16 for non-Gemma models, the same 2 bytes)."""
    if dtype == "auto":
        return "bfloat16" if shape.torch_dtype == "float32" else shape.torch_dtype
    try:
        return _MODEL_DTYPES[dtype]
    except KeyError:
        raise SettingsError(
            f"dtype {dtype!r} is not one of {sorted(_MODEL_DTYPES)} or auto"
        ) from None


def resolve_kv_dtype(
    kv_cache_dtype: str, model_dtype: str, shape: ModelShape
) -> tuple[str, str, str]:
    """-> (choice name, logical dtype, storage dtype). `auto` takes the FP8 KV quantization
    the checkpoint declares, else the model dtype, and names it with a choice of the leaf
    (bfloat16 -> bf16, float16 -> float16, float8_e4m3fn -> fp8_e4m3) so the configurator can
    write it back. A float32 checkpoint under dtype auto runs, and caches KV, in bfloat16
    (`resolve_model_dtype`); only an explicit --dtype float32 reaches float32 KV, which
    the leaf cannot name, so that one asks for an explicit --kv-cache-dtype."""
    if kv_cache_dtype in _UNSUPPORTED_KV_DTYPES:
        raise SettingsError(
            f"kv_cache_dtype={kv_cache_dtype} is block-scaled; the planner sizes "
            f"{', '.join(sorted(KV_DTYPES))} (use fp8_e4m3 for an 8-bit estimate)"
        )
    if kv_cache_dtype == "auto":
        choice = shape.kv_quant_dtype or model_dtype
        logical, storage = KV_DTYPES[choice]
        if logical not in _KV_CHOICE_FOR:
            raise SettingsError(
                f"kv_cache_dtype=auto would store the KV cache in {logical} (the model dtype), "
                "which kv_cache_dtype cannot name, so the resolved value could not be written "
                "back; pass --kv-cache-dtype bf16 (or float16, fp8_e4m3) explicitly"
            )
        return _KV_CHOICE_FOR[logical], logical, storage
    if kv_cache_dtype not in KV_DTYPES:
        raise SettingsError(f"kv_cache_dtype {kv_cache_dtype!r} is not one of {sorted(KV_DTYPES)}")
    logical, storage = KV_DTYPES[kv_cache_dtype]
    return kv_cache_dtype, logical, storage
