"""What the KV pool needs to know about a model, read from its Hugging Face `config.json`.

`ModelShape` is a frozen record of the geometry the pool sizing uses: the cache kind of every
decoder layer (full attention, sliding window, MLA, linear/mamba state, or none), KV heads
and head dims, MLA latent dims, the window, the recurrent-state shapes of linear layers, the
context length, the checkpoint dtype, an FP8 KV quantization the checkpoint declares, and a
parameter-count estimate from which the weight bytes follow.

Torch-free on purpose: the planner and `configbags plan` do all their math without torch.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from configbags.runtime.errors import YamlError
from configbags.runtime.yamlsafe import load_json, read_text_limited
from configbags.server.kvcache.config_fields import MAX_LAYERS, MAX_POSITIONS, ConfigFields
from configbags.server.kvcache.errors import ModelConfigError
from configbags.server.kvcache.quantization import WeightQuant, weight_quant

# Bytes per element of the dtype names used in plans. fp8 variants are stored as uint8
# (SGLang does the same so that index_put works on every backend).
DTYPE_BYTES: Mapping[str, int] = {
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "uint8": 1,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}

_CHECKPOINT_DTYPES: Mapping[str, str] = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}

# Keys Hugging Face configs use for the trained context length, most common first.
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


class LayerKind(enum.Enum):
    """What one decoder layer keeps per request."""

    FULL = "full"  # K and V of every token
    SLIDING = "sliding"  # K and V of the last `sliding_window` tokens (pool may still be full)
    MLA = "mla"  # one compressed latent (+ rope key) per token, shared by all heads
    LINEAR = "linear"  # mamba-2 / gated-delta-net: fixed-size recurrent state per request
    NONE = "none"  # MLP-only block (Nemotron-H "-"): no cache at all


@attrs.frozen
class MlaShape:
    """Multi-head latent attention (DeepSeek V2/V3) dimensions."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@attrs.frozen
class LinearStateShape:
    """Per-layer recurrent state of a mamba-2 or gated-delta-net layer, unsharded.

    conv state: `(conv_dim, conv_kernel - 1)`; temporal (SSM) state:
    `(num_heads, head_dim, state_size)`. For gated delta net `head_dim` is the key head dim
    and `state_size` the value head dim (the state is a k x v matrix per value head)."""

    kind: str  # "mamba2" or "gated_delta_net"
    conv_dim: int
    conv_kernel: int
    num_heads: int
    head_dim: int
    state_size: int
    ssm_dtype: str | None  # a dtype the checkpoint declares for the SSM state, if any
    n_groups: int = 0  # mamba-2 B/C groups (their conv channels are in conv_dim)


@attrs.frozen
class WeightEstimate:
    """Parameter counts in the groups that shard and quantize differently.

    Exact for the dense families (it counts embeddings, projections, biases and norms),
    an estimate for MoE/hybrids: tiny per-layer vectors of exotic blocks are left out
    (well under 0.1% of the total). Per rank, as SGLang shards them: embeddings and the LM
    head split over the vocabulary, the decoder's column/row-parallel layers and the routed
    experts over TP; what SGLang replicates (MLA's down-projections, norms, routers) is whole
    on every rank, and K/V projections hold `max(1, kv_heads // tp)` heads. A quantized
    checkpoint stores the decoder's linears at the quantized width (GPTQ adds an int32
    `g_idx` per input row); norms, routers and embeddings stay in the model dtype."""

    embedding_params: int  # token embeddings and the LM head (unless tied): vocab-parallel
    layer_params: int  # column/row-parallel linears of attention / mixers / dense MLPs
    expert_params: int  # routed experts
    quant: WeightQuant | None = None
    replicated_params: int = 0  # linears every rank holds whole (MLA q_a / kv_a projections)
    unquantized_params: int = 0  # norms, routers: whole on every rank, at the model dtype
    kv_head_params: int = 0  # K and V projections of one KV head over all attention layers
    kv_heads: int = 0
    g_idx_whole: int = 0  # input rows of column-parallel quantized linears (all on each rank)
    g_idx_sharded: int = 0  # input rows of row-parallel quantized linears (split over TP)
    final_norm_params: int = 0  # whole on every rank, at the model dtype

    @property
    def total_params(self) -> int:
        return (self.embedding_params + self.layer_params + self.expert_params + self.replicated_params
                + self.unquantized_params + self.final_norm_params + self.kv_head_params * self.kv_heads)

    def decoder_bytes(self, dtype_bytes: int) -> int:
        """Bytes of the decoder layers alone (no embeddings, LM head or final norm), on one rank."""
        return self.bytes(dtype_bytes) - (self.embedding_params + self.final_norm_params) * dtype_bytes

    @property
    def quant_method(self) -> str | None:
        return None if self.quant is None else self.quant.method

    def bytes(self, dtype_bytes: int) -> int:
        """Checkpoint bytes when unquantized tensors are `dtype_bytes` wide."""
        return self.per_rank(dtype_bytes, 1)

    def per_rank(self, dtype_bytes: int, tp: int, pp: int = 1) -> int:
        """Bytes one of `tp x pp` ranks holds (pipeline stages share the model evenly)."""
        q = self.quant
        quantized = Fraction(dtype_bytes) if q is None else q.bytes_per_param
        linear = Fraction(dtype_bytes) if q is None or q.experts_only else q.bytes_per_param
        kv_heads = max(1, self.kv_heads // tp) if self.kv_heads else 0
        sharded = (self.embedding_params * dtype_bytes + self.layer_params * linear
                   + self.expert_params * quantized) / tp
        whole = (self.replicated_params * linear + (self.unquantized_params + self.final_norm_params) * dtype_bytes
                 + self.kv_head_params * kv_heads * linear)
        g_idx = 0 if q is None or not q.method.startswith("gptq") else 4 * (
            self.g_idx_whole + Fraction(self.g_idx_sharded, tp))
        return math.ceil((sharded + whole + g_idx) / pp)


@attrs.frozen
class ModelShape:
    """The cache-relevant geometry of one model (see the module docstring)."""

    name: str
    source: str
    model_type: str
    architectures: tuple[str, ...]
    layer_kinds: tuple[LayerKind, ...]
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    v_head_dim: int
    mla: MlaShape | None
    sliding_window: int | None
    linear: LinearStateShape | None
    context_length: int
    torch_dtype: str
    kv_quant_dtype: str | None  # "fp8_e4m3" when the checkpoint declares FP8 KV
    weights: WeightEstimate
    num_nextn_predict_layers: int  # built-in MTP draft layers (DeepSeek-V3)
    num_routed_experts: int = 0  # routed experts of each MoE layer (0: a dense model)
    warnings: tuple[str, ...] = ()  # what the planner assumed (e.g. an unknown architecture)
    # the config.json as read (within the input limits), for the model rules' facts: read
    # once, never again from the file
    config: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    def count(self, kind: LayerKind, layers: Sequence[LayerKind] | None = None) -> int:
        return sum(1 for k in (self.layer_kinds if layers is None else layers) if k is kind)

    @property
    def is_hybrid_swa(self) -> bool:
        """Both full and sliding layers: the only case with a separate SWA pool.

        A model whose every layer slides (Mistral-7B-v0.1) is sized as full attention, as
        SGLang does: the window only bounds what the kernel reads, and a pool holding only
        windows would need a per-request eviction the radix cache does not do."""
        return LayerKind.FULL in self.layer_kinds and LayerKind.SLIDING in self.layer_kinds


def load_model_shape(path: str | Path) -> ModelShape:
    """Read a `config.json` file, or the `config.json` of a model folder (a Hugging Face
    snapshot). Anything unreadable or unusable raises ModelConfigError naming the field."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        # The one reader of input files, within the input limits (a FIFO or a device is never
        # opened). Nemotron-H's config holds the non-standard token `Infinity`, and a repeated
        # key takes its last value, as Hugging Face reads it; every numeric field the planner
        # reads is type-checked afterwards.
        config = load_json(read_text_limited(p), constants=True, duplicates=True)
    except FileNotFoundError:
        raise ModelConfigError(f"model config {p} does not exist") from None
    except YamlError as exc:
        where = "" if str(p) in exc.problem else f"{exc.at(p)} is not valid JSON: "
        raise ModelConfigError(f"model config {where}{exc.problem}") from None
    except OSError as exc:
        raise ModelConfigError(f"model config {p} cannot be read: {exc.strerror or exc}") from None
    if not isinstance(config, dict):
        raise ModelConfigError(f"model config {p} holds a {type(config).__name__}, not an object")
    name = p.parent.name if p.name == "config.json" else p.stem
    return model_shape_from_dict(config, source=str(p), name=name)


# Architectures whose cache geometry the planner models (the families of models/ and their
# close relatives); any other is planned from the generic fields, with a warning.
KNOWN_ARCHITECTURES = frozenset({
    "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM",
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "GptOssForCausalLM", "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM", "NemotronHForCausalLM",
})


# What an absent field means where the model type's Hugging Face config class gives it a
# default (that class's own model's value: Gemma-2's 256-wide heads, DeepSeek's 1536 query
# rank), read as if the config.json spelled it. Everything else a count the estimate needs
# is required by name (refused, absent or null), apart from the conventions every class
# shares: no num_key_value_heads is plain MHA, no head_dim is hidden_size / heads, no
# num_nextn_predict_layers is no MTP draft layers, no torch_dtype is float32.
HF_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gemma2": {"head_dim": 256, "sliding_window": 4096},
    "gpt_oss": {"head_dim": 64, "attention_bias": True},
    "qwen3_next": {"head_dim": 256},
    "mistral": {"sliding_window": 4096},
    "qwen2": {"use_sliding_window": False},
    "qwen2_moe": {"use_sliding_window": False},
    "qwen3": {"use_sliding_window": False},
    "qwen3_moe": {"use_sliding_window": False},
    "nemotron_h": {"mlp_hidden_act": "relu2"},
    "deepseek_v2": {"q_lora_rank": 1536},
    "deepseek_v3": {"q_lora_rank": 1536, "topk_method": "noaux_tc", "num_nextn_predict_layers": 1},
}
# Of those defaults, the ones whose explicit null Hugging Face reads as "none" or "off" (a
# DeepSeek-V2-Lite `q_lora_rank: null`: queries not compressed; Mistral's later
# `sliding_window: null`: no window). A null for any other (Gemma-2's `head_dim: null`) is
# refused as missing, as the model's own code could not run it.
NULL_MEANS_NONE = frozenset({"q_lora_rank", "sliding_window", "use_sliding_window", "topk_method",
                             "num_nextn_predict_layers"})
# Fields that mark a model type's layout and have no constant default (gpt-oss's class
# derives its alternating layer_types from the layer count): required, so that a trimmed
# config is refused rather than planned as another layout.
REQUIRED_BY_TYPE: Mapping[str, tuple[str, ...]] = {
    "gpt_oss": ("layer_types",),
    "nemotron_h": ("hybrid_override_pattern",),
    "deepseek_v2": ("kv_lora_rank",),
    "deepseek_v3": ("kv_lora_rank",),
}


def model_shape_from_dict(
    config: Mapping[str, Any], *, source: str, name: str | None = None
) -> ModelShape:
    model_type = ConfigFields(config, source).string("model_type", "unknown")
    # an explicit null stays null (as Hugging Face reads it); only an absent key takes the default
    f = ConfigFields({**HF_DEFAULTS.get(model_type, {}), **config}, source)
    f.missing.extend(key for key in REQUIRED_BY_TYPE.get(model_type, ()) if not f.has(key))
    f.missing.extend(key for key in HF_DEFAULTS.get(model_type, {})
                     if key in config and config[key] is None and key not in NULL_MEANS_NONE)
    num_layers = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    hidden = f.integer("hidden_size")
    vocab = f.integer("vocab_size")
    context_length = f.first_int(_CONTEXT_KEYS, maximum=MAX_POSITIONS)
    f.check(model_type)
    architectures = _architectures(f)
    warnings: list[str] = []
    unknown = [a for a in architectures if a not in KNOWN_ARCHITECTURES]
    if unknown or not architectures:
        what = ", ".join(unknown) if unknown else "no architectures field"
        warnings.append(
            f"{what}: not an architecture the planner knows; planned from num_key_value_heads, "
            "head_dim and the layer fields as a "
            + ("dense decoder" if not unknown or "Moe" not in unknown[0] else "decoder")
            + " (check the numbers against the engine's log)"
        )

    family, kinds = _layer_kinds(f, model_type, num_layers)
    attends = any(k is not LayerKind.NONE and k is not LayerKind.LINEAR for k in kinds)
    # HF's convention: a config without num_key_value_heads is plain MHA.
    heads = f.integer("num_attention_heads") if attends else f.optional_int("num_attention_heads", 0, minimum=0)
    kv_heads = f.optional_int("num_key_value_heads", heads, minimum=1 if attends else 0)
    f.check(model_type)  # a missing head count is named, not compared as a placeholder
    if kv_heads > heads and attends:
        raise f.refuse("num_key_value_heads", kv_heads,
                       f"it cannot exceed num_attention_heads ({heads})")
    if attends and heads % kv_heads:
        raise f.refuse("num_key_value_heads", kv_heads,
                       f"it must divide num_attention_heads ({heads})")
    head_dim = f.optional_int("head_dim", 0, minimum=1) or f.optional_int("attention_head_dim", 0, minimum=1)
    if not head_dim and attends:
        # HF's default, which its models refuse unless it divides evenly (a rounded-down
        # head_dim would size every layer's cache wrong without a word)
        if hidden % heads:
            raise f.refuse("hidden_size", hidden,
                           f"with no head_dim given, it must divide evenly by num_attention_heads ({heads}); "
                           f"give head_dim if the model's heads are another size")
        head_dim = hidden // heads
    v_head_dim = head_dim

    mla: MlaShape | None = None
    if family == "mla":
        q_lora = f.get("q_lora_rank")  # null: queries are not compressed (DeepSeek-V2-Lite)
        mla = MlaShape(
            kv_lora_rank=f.integer("kv_lora_rank"),
            qk_rope_head_dim=f.integer("qk_rope_head_dim"),
            qk_nope_head_dim=f.integer("qk_nope_head_dim"),
            v_head_dim=f.integer("v_head_dim"),
            q_lora_rank=None if q_lora is None else f.integer("q_lora_rank"),
        )
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        v_head_dim = mla.v_head_dim
    linear = _linear_state(f, family, hidden)
    window = None
    if LayerKind.SLIDING in kinds:
        window = f.integer("sliding_window")
    f.check(f"{model_type} ({family})")

    torch_dtype = _checkpoint_dtype(f, source)
    weights = _estimate_weights(
        f, family, kinds, hidden, vocab, heads, kv_heads, head_dim, mla, linear
    )
    f.check(f"{model_type} ({family})")
    return ModelShape(
        name=name or model_type,
        source=source,
        model_type=model_type,
        architectures=architectures,
        layer_kinds=kinds,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        mla=mla,
        sliding_window=window,
        linear=linear,
        context_length=context_length,
        torch_dtype=torch_dtype,
        kv_quant_dtype=_declared_kv_quant(config),
        weights=weights,
        num_nextn_predict_layers=f.optional_int("num_nextn_predict_layers", 0, minimum=0),
        num_routed_experts=_routed_experts(f, model_type, family),
        warnings=tuple(warnings),
        config=config,
    )


def _architectures(f: ConfigFields) -> tuple[str, ...]:
    value = f.get("architectures", [])
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise f.refuse("architectures", value, "it must be a list of class names")
    return tuple(value)


def _layer_kinds(f: ConfigFields, model_type: str, n: int) -> tuple[str, tuple[LayerKind, ...]]:
    """The family name and the cache kind of each of the `n` decoder layers."""
    full, sliding, linear = LayerKind.FULL, LayerKind.SLIDING, LayerKind.LINEAR
    if f.has("kv_lora_rank"):
        return "mla", (LayerKind.MLA,) * n
    if f.has("hybrid_override_pattern"):  # Nemotron-H: M mamba-2, * attention, - / E MLP
        pattern = f.string("hybrid_override_pattern")
        codes = {"M": linear, "*": full, "-": LayerKind.NONE, "E": LayerKind.NONE}
        if len(pattern) != n or set(pattern) - set(codes):
            raise ModelConfigError(
                f"hybrid_override_pattern has {len(pattern)} entries over {sorted(set(pattern))}; "
                f"expected num_hidden_layers={n} entries over M, *, -, E"
            )
        return "mamba2", tuple(codes[c] for c in pattern)
    if f.has("full_attention_interval") or model_type == "qwen3_next":
        interval = f.integer("full_attention_interval")
        # Qwen3-Next: every `interval`-th layer (1-based) is full attention, the rest GDN.
        return "gated_delta_net", tuple(
            full if (i + 1) % interval == 0 else linear for i in range(n)
        )
    if f.has("layer_types"):
        names = {
            "full_attention": full,
            "sliding_attention": sliding,
            "linear_attention": linear,
            "mamba": linear,
        }
        types = f.get("layer_types")
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise f.refuse("layer_types", types, "it must be a list of layer type names")
        unknown = sorted({t for t in types if t not in names})
        if len(types) != n or unknown:
            raise ModelConfigError(
                f"layer_types has {len(types)} entries (unknown: {unknown}); expected "
                f"num_hidden_layers={n} entries among {sorted(names)}"
            )
        return "attention", tuple(names[t] for t in types)
    if not f.has("sliding_window"):
        return "attention", (full,) * n
    if model_type == "gemma2":
        # Gemma-2 interleaves: even layers slide, odd layers attend to everything.
        return "attention", tuple(sliding if i % 2 == 0 else full for i in range(n))
    if f.has("sliding_window_pattern"):  # Gemma-3 style: every pattern-th layer is full
        every = f.integer("sliding_window_pattern")
        return "attention", tuple(full if (i + 1) % every == 0 else sliding for i in range(n))
    if f.declares("use_sliding_window") and f.get("use_sliding_window") is not True:
        # Qwen2 declares a window it does not use (false, or null: as transformers reads it)
        return "attention", (full,) * n
    if f.get("use_sliding_window") is True and f.has("max_window_layers"):
        first = f.integer("max_window_layers", minimum=0)
        return "attention", tuple(sliding if i >= first else full for i in range(n))
    return "attention", (sliding,) * n  # Mistral-7B-v0.1: one window on every layer


def _linear_state(f: ConfigFields, family: str, hidden: int) -> LinearStateShape | None:
    ssm_dtype = f.get("mamba_ssm_cache_dtype", f.get("mamba_ssm_dtype"))
    ssm = _CHECKPOINT_DTYPES.get(ssm_dtype.lower()) if isinstance(ssm_dtype, str) else None
    if family == "mamba2":
        heads, head_dim = f.integer("mamba_num_heads"), f.integer("mamba_head_dim")
        groups, state = f.integer("n_groups"), f.integer("ssm_state_size")
        # conv1d runs over x, B and C: the inner width plus one B and one C per group.
        return LinearStateShape(
            kind="mamba2",
            conv_dim=heads * head_dim + 2 * groups * state,
            conv_kernel=f.integer("conv_kernel"),
            num_heads=heads,
            head_dim=head_dim,
            state_size=state,
            ssm_dtype=ssm,
            n_groups=groups,
        )
    if family == "gated_delta_net":
        k_heads, k_dim = f.integer("linear_num_key_heads"), f.integer("linear_key_head_dim")
        v_heads, v_dim = f.integer("linear_num_value_heads"), f.integer("linear_value_head_dim")
        # conv1d runs over q, k (key width each) and v (value width).
        return LinearStateShape(
            kind="gated_delta_net",
            conv_dim=2 * k_heads * k_dim + v_heads * v_dim,
            conv_kernel=f.integer("linear_conv_kernel_dim"),
            num_heads=v_heads,
            head_dim=k_dim,
            state_size=v_dim,
            ssm_dtype=ssm,
        )
    return None


def _checkpoint_dtype(f: ConfigFields, source: str) -> str:
    raw = f.get("torch_dtype", f.get("dtype"))
    if raw is None:
        return "float32"  # transformers loads a config without a dtype in float32
    dtype = _CHECKPOINT_DTYPES.get(str(raw).lower())
    if dtype is None:
        raise ModelConfigError(
            f"{source}: torch_dtype {raw!r} is not one of {sorted(set(_CHECKPOINT_DTYPES))}"
        )
    return dtype


def _declared_kv_quant(config: Mapping[str, Any]) -> str | None:
    """An FP8 KV cache the checkpoint was calibrated for (ModelOpt `kv_cache_quant_algo`,
    compressed-tensors `kv_cache_scheme`). Weight-only FP8 (DeepSeek-V3) declares none."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    algo = quant.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.upper() == "FP8":
        return "fp8_e4m3"
    scheme = quant.get("kv_cache_scheme")
    if (
        isinstance(scheme, Mapping)
        and scheme.get("num_bits") == 8
        and scheme.get("type") == "float"
    ):
        return "fp8_e4m3"
    return None


@attrs.define
class _Params:
    """One layer's parameters by how they shard (see WeightEstimate)."""

    layer: int = 0
    replicated: int = 0
    unquantized: int = 0
    kv_head: int = 0  # per KV head
    g_idx_whole: int = 0
    g_idx_sharded: int = 0

    def add(self, other: _Params) -> None:
        for field in attrs.fields(_Params):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def _estimate_weights(
    f: ConfigFields,
    family: str,
    kinds: tuple[LayerKind, ...],
    hidden: int,
    vocab: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    mla: MlaShape | None,
    linear: LinearStateShape | None,
) -> WeightEstimate:
    model_type = f.string("model_type")
    tied = f.boolean("tie_word_embeddings", model_type.startswith("gemma"))
    attention = _attention_params(f, model_type, hidden, heads, kv_heads, head_dim, mla)
    linear_mixer = _Params() if linear is None else _Params(layer=_linear_params(f, linear, hidden))
    mixer: Mapping[LayerKind, _Params] = {
        LayerKind.FULL: attention,
        LayerKind.SLIDING: attention,
        LayerKind.MLA: attention,
        LayerKind.LINEAR: linear_mixer,
        LayerKind.NONE: _Params(),
    }
    norms = 4 * hidden if model_type == "gemma2" else 2 * hidden
    if family == "mamba2":  # Nemotron-H blocks hold one mixer (or one MLP) and one norm
        norms = hidden
    mlp_for_layer = _mlp_params(f, model_type, family, hidden)
    total = _Params()
    expert_params = 0
    for i, kind in enumerate(kinds):
        dense, experts = mlp_for_layer(i, kind)
        total.add(mixer[kind])
        total.add(dense)
        total.unquantized += norms
        expert_params += experts
    return WeightEstimate(
        embedding_params=vocab * hidden * (1 if tied else 2),
        layer_params=total.layer,
        expert_params=expert_params,
        quant=weight_quant(f),
        replicated_params=total.replicated,
        unquantized_params=total.unquantized,
        kv_head_params=total.kv_head,
        kv_heads=kv_heads if mla is None and any(k in (LayerKind.FULL, LayerKind.SLIDING) for k in kinds) else 0,
        g_idx_whole=total.g_idx_whole,
        g_idx_sharded=total.g_idx_sharded,
        final_norm_params=hidden,
    )


def _attention_params(
    f: ConfigFields,
    model_type: str,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    mla: MlaShape | None,
) -> _Params:
    """One attention layer: q and o split over TP; K/V per KV head; MLA's down-projections
    (q_a, kv_a: ReplicatedLinear in SGLang) and the latent norms whole on every rank."""
    if mla is not None:
        q_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        out = _Params(layer=mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)  # kv_b
                      + heads * mla.v_head_dim * hidden,  # o
                      replicated=hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim),  # kv_a
                      unquantized=mla.kv_lora_rank)  # kv_a norm
        if mla.q_lora_rank is None:
            out.layer += hidden * heads * q_head
        else:
            out.replicated += hidden * mla.q_lora_rank
            out.unquantized += mla.q_lora_rank
            out.layer += mla.q_lora_rank * heads * q_head
        return out
    q_out = heads * head_dim
    if model_type == "qwen3_next":
        q_out *= 2  # gated attention: the q projection also yields an output gate
    out = _Params(layer=hidden * q_out + heads * head_dim * hidden, kv_head=2 * hidden * head_dim,
                  g_idx_whole=hidden, g_idx_sharded=heads * head_dim)  # qkv reads hidden, o the heads
    if model_type in ("qwen2", "qwen2_moe"):
        out.layer += heads * head_dim  # Qwen2 has q/k/v biases and no o bias
        out.kv_head += 2 * head_dim
    elif f.get("attention_bias") is True:
        out.layer += heads * head_dim
        out.kv_head += 2 * head_dim
        out.unquantized += hidden  # the row-parallel o bias is whole on every rank
    if model_type == "qwen3_next":
        out.unquantized += 2 * head_dim  # q_norm and k_norm
    if model_type == "gpt_oss":
        out.layer += heads  # attention sinks
    return out


def _linear_params(f: ConfigFields, s: LinearStateShape, hidden: int) -> int:
    if s.kind == "mamba2":
        inner = s.num_heads * s.head_dim
        groups = f.integer("n_groups")
        in_proj = hidden * (2 * inner + 2 * groups * s.state_size + s.num_heads)
        conv = s.conv_dim * s.conv_kernel + (s.conv_dim if f.get("use_conv_bias", True) else 0)
        # dt_bias, A_log and D per head; a gated RMS norm over the inner width.
        return in_proj + conv + 3 * s.num_heads + inner + inner * hidden
    key_dim = f.integer("linear_num_key_heads") * s.head_dim
    value_dim = s.num_heads * s.state_size
    in_proj = hidden * (2 * key_dim + 2 * value_dim) + hidden * 2 * s.num_heads  # qkvz, ba
    # conv (no bias), dt_bias and A_log per value head, a norm over the value head dim.
    return (
        in_proj + s.conv_dim * s.conv_kernel + 2 * s.num_heads + s.state_size + value_dim * hidden
    )


def _experts_key(f: ConfigFields, model_type: str, family: str) -> str | None:
    """The field that counts a MoE model's routed experts (None: dense MLPs). The MoE
    layouts are told apart by the key that names their experts, null or not, and by model
    type, so that a null expert count is refused rather than planned as a dense model."""
    if family == "mamba2":
        return None
    if f.declares("n_routed_experts") or model_type in ("deepseek_v2", "deepseek_v3"):
        return "n_routed_experts"
    if f.declares("num_experts") or model_type in ("qwen2_moe", "qwen3_moe", "qwen3_next"):
        return "num_experts"
    if f.declares("num_local_experts") or model_type in ("gpt_oss", "mixtral"):
        return "num_local_experts"  # gpt-oss, Mixtral
    return None


def _routed_experts(f: ConfigFields, model_type: str, family: str) -> int:
    key = _experts_key(f, model_type, family)
    return 0 if key is None else f.integer(key)


def _mlp_params(
    f: ConfigFields, model_type: str, family: str, hidden: int
) -> Callable[[int, LayerKind], tuple[_Params, int]]:
    """A function: layer index and kind -> (dense MLP and router params, routed-expert
    params). Routers are ReplicatedLinear without quantization in SGLang."""
    gated = 2 if f.get("mlp_hidden_act") == "relu2" else 3

    def dense(kinds: int = gated) -> _Params:  # gate/up read hidden, down the width
        # the dense MLP width is read only where the layout has a dense MLP, and then it is
        # required: an absent or null width is refused, never sized as an MLP of 0 parameters
        size = f.integer("intermediate_size")
        return _Params(layer=kinds * hidden * size, g_idx_whole=hidden, g_idx_sharded=size)

    key = _experts_key(f, model_type, family)
    if family == "mamba2":
        # Nemotron-H: MLP only in "-" blocks, up and down projections with relu^2.
        mlp = dense()
        return lambda _i, kind: ((mlp, 0) if kind is LayerKind.NONE else (_Params(), 0))
    # every count of a layout is required (Hugging Face's own defaults are one published
    # model's numbers, DeepSeek-V3's 256 experts and 3 dense layers, not a meaning of absence)
    if key == "n_routed_experts":
        experts = f.integer("n_routed_experts")
        shared = f.integer("n_shared_experts", minimum=0)
        moe_inter = f.integer("moe_intermediate_size")
        first_dense = f.integer("first_k_dense_replace", minimum=0)
        router = experts * hidden + (experts if f.get("topk_method") == "noaux_tc" else 0)
        head = dense(3) if first_dense else _Params()

        def deepseek(i: int, _kind: LayerKind) -> tuple[_Params, int]:
            if i < first_dense:
                return head, 0
            return _Params(layer=shared * 3 * hidden * moe_inter, unquantized=router), experts * 3 * hidden * moe_inter

        return deepseek
    if key == "num_experts":
        experts, moe_inter = f.integer("num_experts"), f.integer("moe_intermediate_size")
        # Qwen2-MoE and Qwen3-Next have a shared expert (its width is required), Qwen3-MoE none
        shared_inter = (f.integer("shared_expert_intermediate_size") if model_type in ("qwen2_moe", "qwen3_next")
                        else f.optional_int("shared_expert_intermediate_size", 0, minimum=0))
        # router and the shared expert's scalar gate (replicated), the shared expert
        layers = _Params(layer=3 * hidden * shared_inter,
                         unquantized=experts * hidden + (hidden if shared_inter else 0))
        return lambda _i, _kind: (layers, experts * 3 * hidden * moe_inter)
    if key == "num_local_experts":  # gpt-oss: fused gate_up with biases, router with bias
        experts, inter = f.integer("num_local_experts"), f.integer("intermediate_size")
        per_expert = hidden * 2 * inter + 2 * inter + inter * hidden + hidden
        return lambda _i, _kind: (_Params(unquantized=experts * hidden + experts), experts * per_expert)
    mlp = dense()
    return lambda _i, _kind: (mlp, 0)


__all__ = [
    "DTYPE_BYTES",
    "LayerKind",
    "LinearStateShape",
    "MlaShape",
    "ModelShape",
    "WeightEstimate",
    "WeightQuant",
    "load_model_shape",
    "model_shape_from_dict",
]
