"""The rule functions of the bundled server schema (schema/rules.yaml names them). Plain
typed functions of the rule's declared inputs; returning None means "no opinion" (the
leaf keeps its lower layer), and raising NoValue says why. Each docstring names the SGLang code it follows.

These rules are the one place the server's hardware and model decisions live: the KV
planner reads the values they resolved and decides none of them again (docs/PLAN.md)."""

from __future__ import annotations

from configbags.runtime.resolve import NoValue

GiB = 1 << 30
MiB = 1 << 20
# SGLang compares GPU memory in MiB against these tier bounds (exclusive upper bounds).
_TIERS_GIB = (20, 35, 60, 90, 160)
# Above this capacity SGLang never reserves less than `_RESERVE_FLOOR_MIB`.
_LARGE_DEVICE_MIB = 60 * 1024
_RESERVE_FLOOR_MIB = 10 * 1024


def _tier(gpu_memory_bytes: int) -> int:
    """The index of the memory tier: 0 (< 20 GiB: T4, 4080) ... 5 (>= 160 GiB: B200, MI300)."""
    for i, bound in enumerate(_TIERS_GIB):
        if gpu_memory_bytes < bound * GiB:
            return i
    return len(_TIERS_GIB)


def chunked_prefill_size(gpu_memory_bytes: int) -> int:
    """Tokens per prefill chunk by GPU memory tier: 2k below 20 GiB, 4k below 60 GiB, 8k
    below 160 GiB, 16k above. SGLang's `handle_gpu_memory_settings`
    (arg_groups/memory_hook.py)."""
    return _tier_chunk(gpu_memory_bytes)


def _tier_chunk(gpu_memory_bytes: int) -> int:
    return (2048, 4096, 4096, 8192, 8192, 16384)[_tier(gpu_memory_bytes)]


def cuda_graph_max_bs(gpu_memory_bytes: int, tp_size: int) -> int:
    """Largest decode batch captured as a CUDA graph by GPU memory tier and TP size: 8
    below 20 GiB; 48/160 below 35 GiB; 32/160 below 60 GiB; 256/512 below 160 GiB (TP < 4 /
    TP >= 4); 512 above. SGLang's `handle_gpu_memory_settings`."""
    small, large = ((8, 8), (48, 160), (32, 160), (256, 512), (256, 512), (512, 512))[_tier(gpu_memory_bytes)]
    return small if tp_size < 4 else large


def reserved_memory_bytes(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    chunked_prefill_size: int | None = None,
    cuda_graph_max_bs_decode: int | None = None,
    enable_dp_attention: bool = False,
    dp_size: int = 1,
    max_prefill_tokens: int = 16384,
    disable_cuda_graph: bool = False,
    disable_decode_cuda_graph: bool = False,
) -> int:
    """Memory SGLang keeps out of `mem_fraction_static` for activations, CUDA graphs and
    metadata (`handle_gpu_memory_settings`, `reserve_for_graph_mb`), in MiB: 512 +
    1.5 per activation token (the chunked-prefill size, at least 2048; the prefill budget
    when chunking is off) + `tp*pp/8` GiB + 2 per decode CUDA-graph batch slot (with DP
    attention `3 * dp` more, and `1.5 * dp` more above a 300 batch), never below 10 GiB on
    a device above 60 GiB. Unset chunk and batch sizes take the tier defaults, as SGLang
    resolves them first. Prefill CUDA graphs are off by default in SGLang and not
    reserved for here. The KV planner reports the same reserve beside the budget."""
    gpu_mib = gpu_memory_bytes / MiB
    chunk = chunked_prefill_size if chunked_prefill_size is not None else _tier_chunk(gpu_memory_bytes)
    max_bs = cuda_graph_max_bs_decode if cuda_graph_max_bs_decode is not None else cuda_graph_max_bs(gpu_memory_bytes, tp_size)
    activation_tokens = max(chunk if chunk > 0 else max_prefill_tokens, 2048)
    reserved = 512 + activation_tokens * 1.5 + tp_size * pp_size / 8 * 1024
    if not (disable_cuda_graph or disable_decode_cuda_graph):  # decode graphs captured
        reserved += max_bs * 2
    if enable_dp_attention:
        reserved += max_bs * dp_size * 3
        if max_bs > 300:
            reserved += max_bs * dp_size * 1.5
    if gpu_mib > _LARGE_DEVICE_MIB:
        reserved = max(reserved, _RESERVE_FLOOR_MIB)
    return round(reserved * MiB)


def mem_fraction_static(
    gpu_memory_bytes: int,
    tp_size: int = 1,
    pp_size: int = 1,
    chunked_prefill_size: int | None = None,
    cuda_graph_max_bs_decode: int | None = None,
    enable_dp_attention: bool = False,
    dp_size: int = 1,
    max_prefill_tokens: int = 16384,
    disable_cuda_graph: bool = False,
    disable_decode_cuda_graph: bool = False,
) -> float:
    """Share of GPU memory for weights plus the KV pool, after reserving room for
    activations and CUDA graphs: `round((gpu_mem - reserved) / gpu_mem, 3)` in MiB with
    `reserved_memory_bytes` (on an H100 at tp 1: 512 + 8192 * 1.5 + 128 + 256 * 2 MiB,
    0.835). The parameters after the memory have defaults, so a schema without pipeline,
    chunking or graph leaves may list fewer inputs; a device no larger than the reserve gets
    no default (NoValue, saying so; the planner then asks for --mem-fraction-static). Follows SGLang's
    `handle_gpu_memory_settings` (arg_groups/memory_hook.py)."""
    reserved = reserved_memory_bytes(
        gpu_memory_bytes, tp_size, pp_size, chunked_prefill_size, cuda_graph_max_bs_decode,
        enable_dp_attention, dp_size, max_prefill_tokens, disable_cuda_graph, disable_decode_cuda_graph,
    )
    if reserved >= gpu_memory_bytes:  # a device smaller than SGLang's reserve: no default to give
        raise NoValue(f"the reserve SGLang keeps for activations and CUDA graphs, {reserved / GiB:.2f} GiB, "
                      f"is not below the device's {gpu_memory_bytes:,} bytes ({gpu_memory_bytes / GiB:.2f} GiB)")
    gpu_mib = gpu_memory_bytes / MiB
    return round((gpu_mib - reserved / MiB) / gpu_mib, 3)


def trtllm_mla_page_size(page_size: int | None) -> int | None:
    """trtllm_mla runs pages of 32 or 64 tokens: keep one of those, else use 64 (an unset
    page size included). SGLang's `ServerArgs._handle_attention_backend_compatibility`
    (trtllm_mla branch)."""
    return None if page_size in (32, 64) else 64


def trtllm_mha_page_size(page_size: int | None) -> int | None:
    """trtllm_mha runs pages of 16, 32 or 64 tokens: keep one of those, else use 64 (an
    unset page size included). SGLang's `ServerArgs._handle_attention_backend_compatibility`
    (trtllm_mha branch)."""
    return None if page_size in (16, 32, 64) else 64


# --- default attention backends (each architecture's model override in SGLang) ---------------
# gpu.sm is the compute capability as major*10+minor: 90 Hopper, 100 B200 (SM100).


def _is_sm100(sm: int) -> bool:
    return 100 <= sm < 110


def deepseek_v3_attention_backend(sm: int, prefill_attention_backend: str | None,
                                  decode_attention_backend: str | None) -> str | None:
    """DeepSeek V3/R1 on SM100 with no attention backend given runs trtllm_mla (which then
    forces 64-token pages). SGLang's `_deepseek_family_overrides`
    (arg_groups/model_overrides/deepseek_v2.py, the non-DSA branch)."""
    if prefill_attention_backend is not None or decode_attention_backend is not None:
        return None
    return "trtllm_mla" if _is_sm100(sm) else None


def gpt_oss_attention_backend(sm: int, prefill_attention_backend: str | None,
                              decode_attention_backend: str | None) -> str | None:
    """GPT-OSS with no attention backend given: trtllm_mha on SM100, fa3 on Hopper, triton
    on other CUDA devices (it needs sinks and sliding windows). SGLang's
    `_gpt_oss_overrides` (arg_groups/model_overrides/gpt_oss.py)."""
    if prefill_attention_backend is not None or decode_attention_backend is not None:
        return None
    if _is_sm100(sm):
        return "trtllm_mha"
    return "fa3" if sm == 90 else "triton"


def nemotron_h_attention_backend(sm: int, prefill_attention_backend: str | None,
                                 decode_attention_backend: str | None,
                                 speculative_algorithm: str | None,
                                 speculative_eagle_topk: int | None) -> str | None:
    """Nemotron-H on Blackwell with no attention backend given: trtllm_mha on SM100 (with
    speculative decoding only for top-k 1), triton otherwise. SGLang's
    `_nemotron_h_overrides` (arg_groups/model_overrides/nemotron_h.py)."""
    if prefill_attention_backend is not None or decode_attention_backend is not None or sm < 100:
        return None
    if speculative_algorithm is None:
        return "trtllm_mha" if _is_sm100(sm) else None
    return "trtllm_mha" if _is_sm100(sm) and speculative_eagle_topk in (None, 1) else "triton"


# --- the mamba radix cache strategy --------------------------------------------------------

# Hybrid linear-attention architectures whose radix cache keeps mamba states, and those of
# them that can keep extra buffers (SGLang's `_MAMBA_RADIX_CACHE_ARCHS` and
# `_MAMBA_EXTRA_BUFFER_ARCHS`, arg_groups/overrides.py).
MAMBA_RADIX_CACHE_ARCHS = frozenset({
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "BailingMoeV2_5ForCausalLM",
    "BailingMoeV3ForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM",
    "MiniCPMV4_6ForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "FalconH1ForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration",
    "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "ZayaForCausalLM",
})
MAMBA_EXTRA_BUFFER_ARCHS = frozenset({
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM",
    "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "KimiK3ForConditionalGeneration",
})


def _keeps_mamba_states(architectures: tuple[str, ...] | list[str]) -> str | None:
    """The first architecture, when the radix cache keeps its mamba states."""
    arch = architectures[0] if architectures else None
    return arch if arch in MAMBA_RADIX_CACHE_ARCHS else None


def mamba_radix_cache_strategy(architectures: tuple[str, ...], mamba_radix_cache_strategy: str,
                               disable_radix_cache: bool, disable_overlap_schedule: bool,
                               page_size: int | None, linear_attn_backend: str) -> str | None:
    """`auto` on a hybrid whose radix cache keeps mamba states: `extra_buffer` when overlap
    scheduling is on or pages are longer than 1 and the architecture supports extra buffers
    on the triton linear-attention backend, else `no_buffer`. SGLang's
    `_mamba_radix_cache_resolution` (arg_groups/overrides.py)."""
    return _resolved_strategy(architectures, mamba_radix_cache_strategy, disable_radix_cache,
                              disable_overlap_schedule, page_size, linear_attn_backend)


def _resolved_strategy(architectures: tuple[str, ...], strategy: str, disable_radix_cache: bool,
                       disable_overlap_schedule: bool, page_size: int | None,
                       linear_attn_backend: str) -> str | None:
    arch = _keeps_mamba_states(architectures)
    if arch is None or disable_radix_cache or strategy != "auto":
        return None
    wants = not disable_overlap_schedule or (page_size is not None and page_size > 1)
    supported = arch in MAMBA_EXTRA_BUFFER_ARCHS and linear_attn_backend == "triton"
    return "extra_buffer" if wants and supported else "no_buffer"


def overlap_off_for_mamba_no_buffer(architectures: tuple[str, ...], mamba_radix_cache_strategy: str,
                                    disable_radix_cache: bool, disable_overlap_schedule: bool,
                                    page_size: int | None, linear_attn_backend: str) -> bool | None:
    """The no_buffer mamba radix cache runs without overlap scheduling, so when `auto`
    resolves to it SGLang turns overlap off as well (`_mamba_radix_cache_resolution`).
    This rule runs just before `mamba_radix_cache_strategy` and asks it the same question;
    an operator's explicit no_buffer with overlap on is refused by the planner instead."""
    resolved = _resolved_strategy(architectures, mamba_radix_cache_strategy, disable_radix_cache,
                        disable_overlap_schedule, page_size, linear_attn_backend)
    return True if resolved == "no_buffer" and not disable_overlap_schedule else None


# --- speculative decoding defaults -----------------------------------------------------------

# Algorithms whose steps, top-k and draft-token count SGLang chooses when none is given.
_DRAFTING_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "MTP"})


def _auto_speculative(architectures: tuple[str, ...]) -> tuple[int, int, int]:
    """(steps, top-k, draft tokens): (3, 1, 4) for DeepSeek V2/V3, else (5, 4, 8). SGLang's
    `auto_choose_speculative_params`."""
    arch = architectures[0] if architectures else None
    return (3, 1, 4) if arch in ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM") else (5, 4, 8)


def _auto_speculative_part(index: int, architectures: tuple[str, ...], algorithm: str | None,
                           values: tuple[int | None, int | None, int | None]) -> int | None:
    """The `index`th auto value, when the algorithm drafts, that leaf is unset and the other
    two are unset or what the same choice gave them (the rules fill them one by one)."""
    if algorithm is None or algorithm.upper() not in _DRAFTING_ALGORITHMS or values[index] is not None:
        return None
    auto = _auto_speculative(architectures)
    if any(v is not None and v != auto[i] for i, v in enumerate(values) if i != index):
        return None
    return auto[index]


def speculative_num_steps(architectures: tuple[str, ...], speculative_algorithm: str | None,
                          speculative_num_steps: int | None, speculative_eagle_topk: int | None,
                          speculative_num_draft_tokens: int | None) -> int | None:
    """Draft steps SGLang chooses when steps, top-k and draft tokens are all unset."""
    return _auto_speculative_part(0, architectures, speculative_algorithm,
                                  (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens))


def speculative_eagle_topk(architectures: tuple[str, ...], speculative_algorithm: str | None,
                           speculative_num_steps: int | None, speculative_eagle_topk: int | None,
                           speculative_num_draft_tokens: int | None) -> int | None:
    """Draft branching SGLang chooses when steps, top-k and draft tokens are all unset."""
    return _auto_speculative_part(1, architectures, speculative_algorithm,
                                  (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens))


def speculative_num_draft_tokens(architectures: tuple[str, ...], speculative_algorithm: str | None,
                                 speculative_num_steps: int | None, speculative_eagle_topk: int | None,
                                 speculative_num_draft_tokens: int | None) -> int | None:
    """Draft tokens SGLang chooses when steps, top-k and draft tokens are all unset."""
    return _auto_speculative_part(2, architectures, speculative_algorithm,
                                  (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens))
