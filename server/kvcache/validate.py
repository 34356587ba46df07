"""Settings no engine would run: refused by name, with the value and the rule it breaks,
before any sizing (SGLang and vLLM refuse the same at start-up)."""

from __future__ import annotations

from configbags.server.kvcache.errors import SettingsError
from configbags.server.kvcache.model_shape import LayerKind, ModelShape
from configbags.server.kvcache.settings import PlanSettings


def validate_settings(shape: ModelShape, s: PlanSettings) -> None:
    counts = {  # positive, or unset where None means "decide for me"
        "tp_size": s.tp_size, "attn_tp_size": s.attn_tp_size, "attn_dp_size": s.attn_dp_size,
        "attn_dcp_size": s.attn_dcp_size, "pp_size": s.pp_size, "page_size": s.page_size,
        "context_length": s.context_length, "max_total_tokens": s.max_total_tokens,
        "max_running_requests": s.max_running_requests, "max_mamba_cache_size": s.max_mamba_cache_size,
        "speculative_num_steps": s.speculative_num_steps, "speculative_eagle_topk": s.speculative_eagle_topk,
    }
    for name, value in counts.items():
        if value is not None and value < 1:
            raise SettingsError(f"{name}={value}: it must be a positive integer")
    if s.max_speculative_num_draft_tokens < 0:
        raise SettingsError(f"max_speculative_num_draft_tokens={s.max_speculative_num_draft_tokens}: "
                            "it must not be negative")
    mfs = s.mem_fraction_static
    if mfs is not None and not 0 < mfs <= 1:
        raise SettingsError(f"mem_fraction_static={mfs}: it must be in (0, 1]")
    for name, ratio in (("swa_full_tokens_ratio", s.swa_full_tokens_ratio),
                        ("mamba_full_memory_ratio", s.mamba_full_memory_ratio)):
        if not ratio > 0:
            raise SettingsError(f"{name}={ratio}: it must be positive")
    lazy = s.enable_mamba_extra_buffer and s.enable_mamba_extra_buffer_lazy
    if shape.linear is not None and lazy and s.disable_overlap_schedule:
        # SGLang asserts this in KVCacheConfigurator._calculate_mamba_ratio.
        raise SettingsError(
            "mamba_radix_cache_strategy=extra_buffer_lazy needs the overlap scheduler; drop "
            "--disable-overlap-schedule or use extra_buffer"
        )
    validate_mamba(shape, s)
    validate_speculative(shape, s)
    validate_parallel(shape, s.attn_tp_size)
    validate_experts(shape, s)


def validate_mamba(shape: ModelShape, s: PlanSettings) -> None:
    """What SGLang asserts about a hybrid mamba model's radix cache and speculation."""
    if shape.linear is None:
        return
    if s.mamba_radix_cache_strategy == "no_buffer" and not s.disable_radix_cache:
        page = s.page_size or 1
        if page > 1 or not s.disable_overlap_schedule:
            given = [f"--page-size {page}"] if page > 1 else []
            given += [] if s.disable_overlap_schedule else ["overlap scheduling on"]
            raise SettingsError(
                f"mamba_radix_cache_strategy=no_buffer with {' and '.join(given)}: the no_buffer "
                "mamba radix cache runs pages of 1 token without overlap scheduling (SGLang's "
                "MambaRadixCache asserts it); pass --mamba-radix-cache-strategy extra_buffer, or "
                "--page-size 1 --disable-overlap-schedule"
            )
    if s.speculative_algorithm is not None and s.max_running_requests is None:
        raise SettingsError(
            f"speculative_algorithm={s.speculative_algorithm} on a mamba hybrid ({shape.source}) "
            "needs max_running_requests: SGLang sizes the intermediate mamba states from it and "
            "asserts it is set; pass --max-running-requests N"
        )


# Draft algorithms that draft from a separate model: EAGLE heads, a standalone draft, or the
# checkpoint's own MTP layers (NEXTN) when it has them.
_NEEDS_DRAFT_MODEL = frozenset({"EAGLE", "EAGLE3", "STANDALONE", "DFLASH"})
# Checkpoints that carry MTP layers without declaring num_nextn_predict_layers (SGLang loads
# their NEXTN draft from the target checkpoint).
_BUILT_IN_MTP = frozenset({"Qwen3NextForCausalLM", "Glm4MoeForCausalLM", "MiMoForCausalLM"})


def validate_speculative(shape: ModelShape, s: PlanSettings) -> None:
    """A draft algorithm that needs a draft model is refused without one, naming the flag:
    EAGLE, EAGLE3, STANDALONE and DFLASH always; NEXTN when the checkpoint has no MTP layers
    of its own (num_nextn_predict_layers)."""
    algo = (s.speculative_algorithm or "").upper()
    if not algo or s.speculative_draft_model_path is not None:
        return
    has_mtp = bool(shape.num_nextn_predict_layers) or bool(_BUILT_IN_MTP.intersection(shape.architectures))
    if algo in _NEEDS_DRAFT_MODEL or (algo in ("NEXTN", "MTP") and not has_mtp):
        why = ("its checkpoint declares no MTP layers (num_nextn_predict_layers)" if algo in ("NEXTN", "MTP")
               else "the algorithm drafts with a separate model")
        raise SettingsError(
            f"speculative_algorithm={s.speculative_algorithm} on {shape.source} needs a draft model: "
            f"{why}; pass --speculative-draft-model-path PATH (or --speculative-algorithm NGRAM, "
            "which drafts without one)"
        )


def validate_experts(shape: ModelShape, s: PlanSettings) -> None:
    """Each expert-parallel rank holds the same number of expert slots: SGLang's FusedMoE
    asserts that the routed experts plus the redundant ones divide by the EP size."""
    if shape.num_routed_experts == 0 or s.ep_size == 1:
        return
    slots = shape.num_routed_experts + s.ep_num_redundant_experts
    if slots % s.ep_size:
        given = f"{shape.num_routed_experts} routed experts"
        if s.ep_num_redundant_experts:
            given += f" + --ep-num-redundant-experts {s.ep_num_redundant_experts} = {slots} expert slots"
        raise SettingsError(
            f"{shape.source}: {given} are not divisible by --ep-size {s.ep_size}: every expert-parallel rank "
            f"holds the same number of experts; give an --ep-size that divides {slots}"
            + ("" if s.ep_num_redundant_experts else " (or --ep-num-redundant-experts N to make the slots divide)")
        )


def validate_parallel(shape: ModelShape, tp: int) -> None:
    """Attention heads, KV heads and recurrent heads must shard evenly over attention TP
    (KV heads may instead be replicated: then TP must be a multiple of them)."""
    where = f"{shape.source}: "
    attends = any(k in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.MLA) for k in shape.layer_kinds)
    if attends and shape.num_attention_heads % tp:
        raise SettingsError(
            f"{where}num_attention_heads={shape.num_attention_heads} is not divisible by the "
            f"attention TP size {tp}; use a TP size that divides it"
        )
    kv = shape.num_key_value_heads
    if attends and shape.mla is None and (kv % tp if kv >= tp else tp % kv):
        raise SettingsError(
            f"{where}num_key_value_heads={kv} and attention TP size {tp}: one must divide the "
            "other (KV heads are split, or replicated when there are fewer than ranks)"
        )
    linear = shape.linear
    if linear is not None and linear.num_heads % tp:
        field = "mamba_num_heads" if linear.kind == "mamba2" else "linear_num_value_heads"
        raise SettingsError(
            f"{where}{field}={linear.num_heads} is not divisible by the attention TP size {tp}"
        )
