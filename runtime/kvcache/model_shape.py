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
import json
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from configbags.runtime.kvcache.errors import ModelConfigError

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
class WeightQuant:
    """How a checkpoint stores its quantized linear weights, from `quantization_config`."""

    method: str  # quant_method (plus the algorithm where one method covers several)
    bytes_per_param: Fraction  # one quantized weight, its share of scales and zeros included
    experts_only: bool = False  # mxfp4 (gpt-oss) quantizes the routed experts only


@attrs.frozen
class WeightEstimate:
    """Parameter counts in three groups that quantize differently.

    Exact for the dense families (it counts embeddings, projections, biases and norms),
    an estimate for MoE/hybrids: tiny per-layer vectors of exotic blocks are left out
    (well under 0.1% of the total). A quantized checkpoint stores every decoder parameter
    at the quantized width (norms and biases, a fraction of a percent, included) and
    keeps embeddings and the LM head in the model dtype."""

    embedding_params: int  # token embeddings, lm head (unless tied), final norm
    layer_params: int  # attention / mixer, dense MLPs, shared experts, routers, norms
    expert_params: int  # routed experts
    quant: WeightQuant | None = None

    @property
    def total_params(self) -> int:
        return self.embedding_params + self.layer_params + self.expert_params

    @property
    def quant_method(self) -> str | None:
        return None if self.quant is None else self.quant.method

    def bytes(self, dtype_bytes: int) -> int:
        """Checkpoint bytes when unquantized tensors are `dtype_bytes` wide."""
        q = self.quant
        if q is None:
            return self.total_params * dtype_bytes
        layer = self.layer_params * (dtype_bytes if q.experts_only else q.bytes_per_param)
        return math.ceil(
            self.embedding_params * dtype_bytes + layer + self.expert_params * q.bytes_per_param
        )


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
    warnings: tuple[str, ...] = ()  # what the planner assumed (e.g. an unknown architecture)

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
        # Nemotron-H's config holds the non-standard token `Infinity`; json accepts it, and
        # every numeric field the planner reads is type-checked afterwards.
        config = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelConfigError(f"model config {p} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ModelConfigError(f"model config {p} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ModelConfigError(f"model config {p} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ModelConfigError(f"model config {p} is nested too deeply to be a model config") from None
    except OSError as exc:
        raise ModelConfigError(f"model config {p} cannot be read: {exc.strerror or exc}") from None
    if not isinstance(config, dict):
        raise ModelConfigError(f"model config {p} holds a {type(config).__name__}, not an object")
    name = p.parent.name if p.name == "config.json" else p.stem
    return model_shape_from_dict(config, source=str(p), name=name)


# Real models have at most a few hundred decoder layers; a bound keeps a hostile config
# (num_hidden_layers: 10**9) from building a billion-entry layer table.
MAX_LAYERS = 4096


class _Fields:
    """Reads a config dict: every number is type- and range-checked by name, and missing
    required keys are collected so the error names all of them at once."""

    def __init__(self, config: Mapping[str, Any], source: str) -> None:
        self._config = config
        self.source = source
        self.missing: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        value = self._config.get(key)
        return default if value is None else value

    def has(self, key: str) -> bool:
        return self._config.get(key) is not None

    def refuse(self, key: str, value: Any, rule: str) -> ModelConfigError:
        return ModelConfigError(f"{self.source}: {key} is {value!r}; {rule}")

    def integer(self, key: str, *, minimum: int = 1, maximum: int | None = None) -> int:
        """A required integer field, within [minimum, maximum]."""
        if self._config.get(key) is None:
            self.missing.append(key)
            return max(minimum, 1)  # placeholder; check() raises before it is used
        return self._checked(key, self._config[key], minimum, maximum)

    def optional_int(self, key: str, default: int, *, minimum: int = 1) -> int:
        value = self._config.get(key)
        return default if value is None else self._checked(key, value, minimum, None)

    def _checked(self, key: str, value: Any, minimum: int, maximum: int | None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "a number that is not a whole number" if isinstance(value, float) else f"a {type(value).__name__}"
            raise self.refuse(key, value, f"it must be an integer, not {kind}")
        if value < minimum:
            rule = "positive" if minimum == 1 else f"at least {minimum}"
            raise self.refuse(key, value, f"it must be {rule}")
        if maximum is not None and value > maximum:
            raise self.refuse(key, value, f"the planner accepts at most {maximum}")
        return value

    def first_int(self, keys: Sequence[str]) -> int:
        for key in keys:
            if self.has(key):
                return self.integer(key)
        self.missing.append(" or ".join(keys))
        return 1

    def string(self, key: str, default: str = "") -> str:
        value = self._config.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.refuse(key, value, "it must be a string")
        return value

    def check(self, family: str) -> None:
        if self.missing:
            names = ", ".join(sorted(set(self.missing)))
            raise ModelConfigError(
                f"{self.source}: a {family} model config needs {names}, which it does not "
                "define; add them (copy them from the published config.json)"
            )


# Architectures whose cache geometry the planner models (the families of models/ and their
# close relatives); any other is planned from the generic fields, with a warning.
KNOWN_ARCHITECTURES = frozenset({
    "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM",
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "GptOssForCausalLM", "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM", "NemotronHForCausalLM",
})


def model_shape_from_dict(
    config: Mapping[str, Any], *, source: str, name: str | None = None
) -> ModelShape:
    f = _Fields(config, source)
    model_type = f.string("model_type", "unknown")
    num_layers = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    hidden = f.integer("hidden_size")
    vocab = f.integer("vocab_size")
    context_length = f.first_int(_CONTEXT_KEYS)
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
    if kv_heads > heads and attends:
        raise f.refuse("num_key_value_heads", kv_heads,
                       f"it cannot exceed num_attention_heads ({heads})")
    if attends and heads % kv_heads:
        raise f.refuse("num_key_value_heads", kv_heads,
                       f"it must divide num_attention_heads ({heads})")
    head_dim = f.optional_int("head_dim", 0, minimum=1) or f.optional_int(
        "attention_head_dim", hidden // max(heads, 1), minimum=1
    )
    v_head_dim = head_dim

    mla: MlaShape | None = None
    if family == "mla":
        q_lora = config.get("q_lora_rank")
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
        warnings=tuple(warnings),
    )


def _architectures(f: _Fields) -> tuple[str, ...]:
    value = f.get("architectures", [])
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise f.refuse("architectures", value, "it must be a list of class names")
    return tuple(value)


def _layer_kinds(f: _Fields, model_type: str, n: int) -> tuple[str, tuple[LayerKind, ...]]:
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
    if f.get("use_sliding_window") is False:  # Qwen2 declares a window it does not use
        return "attention", (full,) * n
    if f.get("use_sliding_window") is True and f.has("max_window_layers"):
        first = f.integer("max_window_layers", minimum=0)
        return "attention", tuple(sliding if i >= first else full for i in range(n))
    return "attention", (sliding,) * n  # Mistral-7B-v0.1: one window on every layer


def _linear_state(f: _Fields, family: str, hidden: int) -> LinearStateShape | None:
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


def _checkpoint_dtype(f: _Fields, source: str) -> str:
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


def _estimate_weights(
    f: _Fields,
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
    tied = f.get("tie_word_embeddings", model_type.startswith("gemma")) is True
    embedding = vocab * hidden * (1 if tied else 2) + hidden  # + final norm

    attention = _attention_params(f, model_type, hidden, heads, kv_heads, head_dim, mla)
    mixer: Mapping[LayerKind, int] = {
        LayerKind.FULL: attention,
        LayerKind.SLIDING: attention,
        LayerKind.MLA: attention,
        LayerKind.LINEAR: 0 if linear is None else _linear_params(f, linear, hidden),
        LayerKind.NONE: 0,
    }
    norms = 4 * hidden if model_type == "gemma2" else 2 * hidden
    if family == "mamba2":  # Nemotron-H blocks hold one mixer (or one MLP) and one norm
        norms = hidden
    mlp_for_layer = _mlp_params(f, model_type, family, hidden)
    layer_params = expert_params = 0
    for i, kind in enumerate(kinds):
        dense, experts = mlp_for_layer(i, kind)
        layer_params += mixer[kind] + dense + norms
        expert_params += experts
    return WeightEstimate(
        embedding_params=embedding,
        layer_params=layer_params,
        expert_params=expert_params,
        quant=_weight_quant(f),
    )


# The quantization methods a checkpoint may declare, and what one weight costs. Group-wise
# integer formats (AWQ, GPTQ) keep one float16 scale and one packed zero point per group.
_FP4_BLOCK = Fraction(1, 2) + Fraction(1, 16)  # nvfp4: 4 bits + one fp8 scale per 16


def _weight_quant(f: _Fields) -> WeightQuant | None:
    """The storage of quantized weights the checkpoint declares (`quantization_config`):
    AWQ and GPTQ (`bits`, `group_size`), compressed-tensors (`config_groups`), fp8 (with
    `weight_block_size` scales), mxfp4 and nvfp4 (ModelOpt or compressed-tensors)."""
    quant = f.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, Mapping):
        raise f.refuse("quantization_config", quant, "it must be an object")
    q = _Fields(quant, f"{f.source}: quantization_config")
    method = q.string("quant_method").lower()
    if method in ("awq", "awq_marlin", "gptq", "gptq_marlin"):
        bits = q.integer("bits", maximum=16)
        group = q.optional_int("group_size", -1, minimum=-1)
        zero = method.startswith("gptq") or q.get("zero_point", True) is True
        overhead = Fraction(0) if group <= 0 else Fraction(16 + (bits if zero else 0), 8 * group)
        return WeightQuant(method, Fraction(bits, 8) + overhead)
    if method == "fp8":
        block = q.get("weight_block_size")
        scales = Fraction(0)
        if block is not None:
            if not (isinstance(block, list) and len(block) == 2 and all(
                    isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
                raise q.refuse("weight_block_size", block, "it must be two positive integers")
            scales = Fraction(4, block[0] * block[1])  # one float32 scale per block
        return WeightQuant("fp8", 1 + scales)
    if method == "mxfp4":  # 4 bits + one e8m0 scale per 32 values, routed experts only
        return WeightQuant("mxfp4", Fraction(17, 32), experts_only=True)
    if method in ("modelopt", "modelopt_fp4", "modelopt_fp8"):
        algo = q.string("quant_algo", "FP4" if method == "modelopt_fp4" else "FP8").upper()
        if algo in ("NVFP4", "FP4"):
            return WeightQuant("nvfp4", _FP4_BLOCK)
        if algo == "FP8":
            return WeightQuant("fp8", Fraction(1))
        raise q.refuse("quant_algo", algo, "the planner sizes FP8 and NVFP4 ModelOpt checkpoints")
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    raise f.refuse(
        "quantization_config.quant_method", method,
        "the planner sizes awq, gptq, compressed-tensors, fp8, mxfp4 and modelopt (fp8, nvfp4) "
        "checkpoints; pass --weight-bytes with the measured size",
    )


def _compressed_tensors(q: _Fields) -> WeightQuant:
    if "nvfp4" in q.string("format").lower():
        return WeightQuant("compressed-tensors nvfp4", _FP4_BLOCK)
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise q.refuse("config_groups", groups, "it must name at least one quantization group")
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, Mapping) else None
    if not isinstance(weights, Mapping):
        raise q.refuse("config_groups", groups, "its first group must hold a `weights` scheme")
    w = _Fields(weights, f"{q.source}.config_groups.weights")
    bits = w.integer("num_bits", maximum=16)
    group = w.optional_int("group_size", 0, minimum=0)
    if w.string("type", "int") == "float" and bits == 4:
        return WeightQuant("compressed-tensors nvfp4", _FP4_BLOCK)
    zero = bits if w.get("symmetric", True) is False else 0
    overhead = Fraction(16 + zero, 8 * group) if group else Fraction(0)
    return WeightQuant(f"compressed-tensors w{bits}", Fraction(bits, 8) + overhead)


def _attention_params(
    f: _Fields,
    model_type: str,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    mla: MlaShape | None,
) -> int:
    if mla is not None:
        q_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        q = (
            hidden * heads * q_head
            if mla.q_lora_rank is None
            else hidden * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * heads * q_head
        )
        kv_a = hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank  # + norm
        kv_b = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        return q + kv_a + kv_b + heads * mla.v_head_dim * hidden
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    if model_type == "qwen3_next":
        q_out *= 2  # gated attention: the q projection also yields an output gate
    params = hidden * q_out + 2 * hidden * kv_out + heads * head_dim * hidden
    if model_type in ("qwen2", "qwen2_moe"):
        params += heads * head_dim + 2 * kv_out  # Qwen2 has q/k/v biases and no o bias
    elif f.get("attention_bias") is True:
        params += heads * head_dim + 2 * kv_out + hidden
    if model_type == "qwen3_next":
        params += 2 * head_dim  # q_norm and k_norm
    if model_type == "gpt_oss":
        params += heads  # attention sinks
    return params


def _linear_params(f: _Fields, s: LinearStateShape, hidden: int) -> int:
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


def _mlp_params(
    f: _Fields, model_type: str, family: str, hidden: int
) -> Callable[[int, LayerKind], tuple[int, int]]:
    """A function: layer index and kind -> (dense MLP params, routed-expert params)."""
    inter = f.optional_int("intermediate_size", 0, minimum=0)
    gated = 2 if f.get("mlp_hidden_act") == "relu2" else 3
    if family == "mamba2":
        # Nemotron-H: MLP only in "-" blocks, up and down projections with relu^2.
        return lambda _i, kind: ((gated * hidden * inter, 0) if kind is LayerKind.NONE else (0, 0))
    if f.has("n_routed_experts"):  # DeepSeek V2/V3
        experts = f.integer("n_routed_experts")
        shared = f.optional_int("n_shared_experts", 0, minimum=0)
        moe_inter = f.integer("moe_intermediate_size")
        first_dense = f.optional_int("first_k_dense_replace", 0, minimum=0)
        router = experts * hidden + (experts if f.get("topk_method") == "noaux_tc" else 0)

        def deepseek(i: int, _kind: LayerKind) -> tuple[int, int]:
            if i < first_dense:
                return 3 * hidden * inter, 0
            return router + shared * 3 * hidden * moe_inter, experts * 3 * hidden * moe_inter

        return deepseek
    if model_type == "qwen3_next" or f.has("num_experts"):
        experts, moe_inter = f.integer("num_experts"), f.integer("moe_intermediate_size")
        shared_inter = f.optional_int("shared_expert_intermediate_size", 0, minimum=0)
        # router, shared expert and its scalar gate; routed experts apart.
        dense = experts * hidden + 3 * hidden * shared_inter + (hidden if shared_inter else 0)
        return lambda _i, _kind: (dense, experts * 3 * hidden * moe_inter)
    if f.has("num_local_experts"):  # gpt-oss: fused gate_up with biases, router with bias
        experts = f.integer("num_local_experts")
        per_expert = hidden * 2 * inter + 2 * inter + inter * hidden + hidden
        return lambda _i, _kind: (experts * hidden + experts, experts * per_expert)
    return lambda _i, _kind: (gated * hidden * inter, 0)


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
