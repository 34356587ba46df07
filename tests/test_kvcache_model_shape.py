"""Model shapes read from the bundled Hugging Face configs; expected values are read off the
config files by hand, and parameter counts are the published ones."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from configbags.server.kvcache.errors import ModelConfigError
from configbags.server.kvcache.model_shape import (
    HF_DEFAULTS,
    NULL_MEANS_NONE,
    LayerKind,
    WeightEstimate,
    load_model_shape,
    model_shape_from_dict,
)

MODELS = Path(__file__).resolve().parent.parent / "models"
FULL, SLIDING, MLA, LINEAR, NONE = (
    LayerKind.FULL,
    LayerKind.SLIDING,
    LayerKind.MLA,
    LayerKind.LINEAR,
    LayerKind.NONE,
)


def load(name: str):  # type: ignore[no-untyped-def]
    return load_model_shape(MODELS / f"{name}.json")


@pytest.mark.parametrize(
    ("name", "kv_heads", "head_dim", "context", "dtype", "counts"),
    [
        ("llama-3.1-8b", 8, 128, 131072, "bfloat16", {FULL: 32}),
        ("llama-3.1-70b", 8, 128, 131072, "bfloat16", {FULL: 80}),
        ("qwen2.5-7b", 4, 128, 32768, "bfloat16", {FULL: 28}),  # use_sliding_window false
        ("qwen2.5-0.5b", 2, 64, 32768, "bfloat16", {FULL: 24}),
        ("mistral-7b-v0.1", 8, 128, 32768, "bfloat16", {SLIDING: 32}),
        ("gemma-2-9b", 8, 256, 8192, "float32", {FULL: 21, SLIDING: 21}),
        ("gpt-oss-20b", 8, 64, 131072, "float32", {FULL: 12, SLIDING: 12}),  # no torch_dtype
        ("deepseek-v3", 128, 192, 163840, "bfloat16", {MLA: 61}),  # 128 nope + 64 rope
        ("deepseek-v2-lite", 16, 192, 163840, "bfloat16", {MLA: 27}),
        ("qwen3-next-80b-a3b", 2, 256, 262144, "bfloat16", {FULL: 12, LINEAR: 36}),
        ("nemotron-h-56b", 8, 128, 8192, "bfloat16", {FULL: 10, LINEAR: 54, NONE: 54}),
    ],
)
def test_geometry(name: str, kv_heads: int, head_dim: int, context: int, dtype: str, counts: dict[LayerKind, int]) -> None:
    shape = load(name)
    assert shape.num_key_value_heads == kv_heads
    assert shape.head_dim == head_dim
    assert shape.context_length == context
    assert shape.torch_dtype == dtype
    assert {k: shape.count(k) for k in LayerKind if shape.count(k)} == counts


def test_interleaving_patterns() -> None:
    gemma = load("gemma-2-9b").layer_kinds
    assert gemma[:4] == (SLIDING, FULL, SLIDING, FULL)  # even layers slide
    oss = load("gpt-oss-20b").layer_kinds
    assert oss[:2] == (SLIDING, FULL)
    qwen_next = load("qwen3-next-80b-a3b").layer_kinds
    assert qwen_next[:4] == (LINEAR, LINEAR, LINEAR, FULL)  # every 4th layer is full
    nemotron = load("nemotron-h-56b").layer_kinds
    assert nemotron[:9] == (LINEAR, NONE, LINEAR, NONE, LINEAR, NONE, LINEAR, FULL, NONE)  # "M-M-M-M*-"


def test_hybrid_flags() -> None:
    assert load("gemma-2-9b").is_hybrid_swa
    assert not load("mistral-7b-v0.1").is_hybrid_swa  # every layer slides: sized as full
    assert load("qwen3-next-80b-a3b").linear is not None
    assert load("deepseek-v3").mla is not None


def test_mla_dims() -> None:
    mla = load("deepseek-v3").mla
    assert mla is not None
    assert (mla.kv_lora_rank, mla.qk_rope_head_dim, mla.qk_nope_head_dim, mla.v_head_dim) == (512, 64, 128, 128)
    assert mla.q_lora_rank == 1536
    assert load("deepseek-v2-lite").mla.q_lora_rank is None  # type: ignore[union-attr]
    assert load("deepseek-v3").num_nextn_predict_layers == 1


def test_linear_state_shapes() -> None:
    # Nemotron-H: conv over x, B, C = 256 x 64 + 2 x 8 groups x 256 = 20480; kernel 4.
    m = load("nemotron-h-56b").linear
    assert m is not None
    assert (m.kind, m.conv_dim, m.conv_kernel, m.num_heads, m.head_dim, m.state_size) == (
        "mamba2", 20480, 4, 256, 64, 256,
    )
    # Qwen3-Next GDN: conv over q, k (16 x 128 each) and v (32 x 128) = 8192; state 128 x 128
    # per value head.
    g = load("qwen3-next-80b-a3b").linear
    assert g is not None
    assert (g.kind, g.conv_dim, g.conv_kernel, g.num_heads, g.head_dim, g.state_size) == (
        "gated_delta_net", 8192, 4, 32, 128, 128,
    )


@pytest.mark.parametrize(
    ("name", "params"),
    [
        # Published parameter counts of the dense models; the estimate counts embeddings,
        # projections, biases and norms, so it is exact for them.
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3.1-70b", 70_553_706_496),
        ("qwen2.5-7b", 7_615_616_512),
        ("qwen2.5-0.5b", 494_032_768),
        ("mistral-7b-v0.1", 7_241_732_096),
        ("gemma-2-9b", 9_241_705_984),
    ],
)
def test_dense_parameter_counts_are_exact(name: str, params: int) -> None:
    assert load(name).weights.total_params == params


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        # Model cards: DeepSeek-V3 671B (+ the MTP module), V2-Lite 15.7B, gpt-oss-20b 20.9B,
        # Qwen3-Next 80B, Nemotron-H 56B. MoE/hybrid counts are estimates: within 2%.
        ("deepseek-v3", 671.0),
        ("deepseek-v2-lite", 15.7),
        ("gpt-oss-20b", 20.9),
        ("qwen3-next-80b-a3b", 80.0),
        ("nemotron-h-56b", 56.0),
    ],
)
def test_moe_and_hybrid_parameter_estimates(name: str, billions: float) -> None:
    assert load(name).weights.total_params / 1e9 == pytest.approx(billions, rel=0.02)


def _whole_dtype(w: WeightEstimate) -> int:
    """Parameters kept at the model dtype: embeddings, LM head, norms, routers."""
    return w.embedding_params + w.unquantized_params + w.final_norm_params


def _linears(w: WeightEstimate) -> int:
    return w.layer_params + w.replicated_params + w.kv_head_params * w.kv_heads


def test_quantized_weight_bytes() -> None:
    # DeepSeek-V3 is fp8 with 128 x 128 weight blocks: decoder linears take 1 byte plus one
    # float32 scale per block (4 / 16384 B per weight); embeddings, norms and routers stay bf16.
    w = load("deepseek-v3").weights
    assert w.quant_method == "fp8"
    decoder = _linears(w) + w.expert_params
    assert w.bytes(2) == _whole_dtype(w) * 2 + decoder + -(-decoder * 4 // 16384)
    # gpt-oss: mxfp4 experts at 17/32 byte per parameter; the checkpoint is ~13.8 GB.
    oss = load("gpt-oss-20b").weights
    assert oss.bytes(2) == (_whole_dtype(oss) + _linears(oss)) * 2 + -(-oss.expert_params * 17 // 32)
    assert oss.bytes(2) / 1e9 == pytest.approx(13.8, rel=0.02)


def test_missing_fields_are_all_named_with_the_file(tmp_path: Path) -> None:
    config = json.loads((MODELS / "deepseek-v3.json").read_text())
    del config["qk_rope_head_dim"], config["v_head_dim"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ModelConfigError) as err:
        load_model_shape(path)
    assert str(path) in str(err.value)
    assert "qk_rope_head_dim" in str(err.value)
    assert "v_head_dim" in str(err.value)


def test_missing_basic_fields() -> None:
    with pytest.raises(ModelConfigError, match="hidden_size, num_hidden_layers"):
        model_shape_from_dict({"vocab_size": 10, "max_position_embeddings": 8}, source="x.json")
    with pytest.raises(ModelConfigError, match="max_position_embeddings or"):
        model_shape_from_dict({"vocab_size": 10, "num_hidden_layers": 2, "hidden_size": 8}, source="x.json")


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="does not exist"):
        load_model_shape(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ModelConfigError, match="not valid JSON"):
        load_model_shape(tmp_path / "bad.json")


def test_declared_fp8_kv_quantization() -> None:
    config = json.loads((MODELS / "llama-3.1-8b.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}
    assert model_shape_from_dict(config, source="m").kv_quant_dtype == "fp8_e4m3"
    assert load("deepseek-v3").kv_quant_dtype is None  # fp8 weights, not fp8 KV


@pytest.mark.parametrize(
    ("quantization_config", "method", "bytes_per_weight"),
    [
        # AutoAWQ GEMM: 4-bit weights, one float16 scale and one 4-bit zero per 128
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "awq", 0.5 + 20 / 1024),
        # GPTQ always stores packed zeros: 4/8 + (16 + 4) / (8 x 128)
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, "gptq", 0.5 + 20 / 1024),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "gptq", 1.0),  # per channel
        # compressed-tensors W4A16, symmetric, group 128: 4 bits + a 16-bit scale per group
        ({"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 128,
                                                    "symmetric": True}}}},
         "compressed-tensors w4", 0.5 + 16 / 1024),
        # compressed-tensors FP8 per channel
        ({"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
         "compressed-tensors w8", 1.0),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {}},
         "compressed-tensors nvfp4", 0.5 + 1 / 16),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", 0.5 + 1 / 16),  # fp8 scale per 16
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8", 1.0),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", 1 + 4 / 16384),
    ],
)
def test_quantized_checkpoints(quantization_config: dict[str, object], method: str, bytes_per_weight: float) -> None:
    config = json.loads((MODELS / "llama-3.1-8b.json").read_text())
    w = model_shape_from_dict({**config, "quantization_config": quantization_config}, source="m").weights
    assert w.quant is not None and w.quant.method == method
    assert float(w.quant.bytes_per_param) == pytest.approx(bytes_per_weight)
    # Decoder linears at the quantized width; embeddings (2 x 128256 x 4096) and norms at 2 B;
    # GPTQ adds an int32 g_idx per input row of each linear.
    g_idx = 4 * (w.g_idx_whole + w.g_idx_sharded) if method == "gptq" else 0
    expected = _whole_dtype(w) * 2 + (_linears(w) + w.expert_params) * bytes_per_weight + g_idx
    assert w.bytes(2) == pytest.approx(expected, abs=1)


def test_awq_8b_checkpoint_is_about_5_7_gb() -> None:
    assert load("llama-3.1-8b-awq").weights.bytes(2) / 1e9 == pytest.approx(5.73, abs=0.01)


# -- a count absent or null is refused, or read as a documented fallback, never as 0 --------

def _trimmed(name: str, key: str, how: str) -> dict[str, object]:
    config = json.loads((MODELS / f"{name}.json").read_text())
    if how == "absent":
        del config[key]
    else:
        config[key] = None
    return config


@pytest.mark.parametrize(("name", "key", "how", "family"), [
    ("llama-3.1-8b", "intermediate_size", "absent", "llama (attention)"),
    ("llama-3.1-8b", "intermediate_size", "null", "llama (attention)"),
    ("qwen2.5-7b", "intermediate_size", "absent", "qwen2 (attention)"),
    ("gemma-2-9b", "intermediate_size", "null", "gemma2 (attention)"),
    ("gpt-oss-20b", "intermediate_size", "absent", "gpt_oss (attention)"),
    ("gpt-oss-20b", "num_local_experts", "null", "gpt_oss (attention)"),
    ("nemotron-h-56b", "intermediate_size", "absent", "nemotron_h (mamba2)"),
    ("deepseek-v2-lite", "n_routed_experts", "null", "deepseek_v2 (mla)"),
    ("deepseek-v2-lite", "n_shared_experts", "absent", "deepseek_v2 (mla)"),
    ("deepseek-v2-lite", "intermediate_size", "absent", "deepseek_v2 (mla)"),  # its first layer is dense
    ("deepseek-v3", "first_k_dense_replace", "null", "deepseek_v3 (mla)"),
    ("qwen3-next-80b-a3b", "num_experts", "null", "qwen3_next (gated_delta_net)"),
    ("qwen3-next-80b-a3b", "shared_expert_intermediate_size", "absent", "qwen3_next (gated_delta_net)"),
])
def test_a_missing_or_null_count_is_refused_naming_file_field_and_type(
        name: str, key: str, how: str, family: str) -> None:
    with pytest.raises(ModelConfigError) as err:
        model_shape_from_dict(_trimmed(name, key, how), source="trimmed.json")
    assert str(err.value).startswith(f"trimmed.json: a {family} model config needs {key}, which it does not define")
    assert "copy it from the published config.json" in str(err.value)


@pytest.mark.parametrize("key", ["kv_lora_rank", "n_routed_experts", "hybrid_override_pattern", "layer_types"])
def test_a_layout_key_gone_never_plans_another_layout(key: str) -> None:
    """The key that marks a model type's layout, absent: refused, not planned as a dense model."""
    for name in ("deepseek-v3", "nemotron-h-56b", "gpt-oss-20b"):
        config = json.loads((MODELS / f"{name}.json").read_text())
        if key in config:
            del config[key]
            with pytest.raises(ModelConfigError, match=f"needs {key}"):
                model_shape_from_dict(config, source="trimmed.json")


def test_another_name_for_the_mlp_width_is_pointed_at_never_read() -> None:
    config = _trimmed("llama-3.1-8b", "intermediate_size", "absent")
    config["ffn_dim"] = 14336
    with pytest.raises(ModelConfigError, match="it has ffn_dim: if that is the MLP width, name it intermediate_size"):
        model_shape_from_dict(config, source="x.json")


# The fallbacks every config class shares (model_shape's HF_DEFAULTS comment): what an absent
# field is read as where the model type's class has no default of its own.
_GENERIC: dict[str, Callable[[dict[str, Any]], object]] = {
    "num_key_value_heads": lambda c: c["num_attention_heads"],
    "head_dim": lambda c: c["hidden_size"] // c["num_attention_heads"],
    "num_nextn_predict_layers": lambda c: 0,
    "torch_dtype": lambda c: "float32",
    "tie_word_embeddings": lambda c: str(c["model_type"]).startswith("gemma"),
}
# not counts: an unknown type is planned generically with a warning, no quantization_config is
# an unquantized checkpoint
_NOT_COUNTS = {"architectures", "model_type", "quantization_config"}


def _geometry(config: dict[str, Any]) -> object:
    shape = model_shape_from_dict(config, source="x.json")
    return attrs.evolve(shape, config={}, warnings=())


@pytest.mark.parametrize("name", sorted(p.stem for p in MODELS.glob("*.json")))
def test_every_field_of_every_bundled_config_absent_or_null_is_refused_or_its_fallback(name: str) -> None:
    """Property over every field of every bundled config: without it (absent, or null) the
    config is refused, or planned exactly as with the documented fallback written in."""
    config = json.loads((MODELS / f"{name}.json").read_text())
    defaults = HF_DEFAULTS.get(config["model_type"], {})
    refusals: list[tuple[str, str]] = []
    for key in sorted(set(config) - _NOT_COUNTS):
        fallback = defaults[key] if key in defaults else _GENERIC[key](config) if key in _GENERIC else config[key]
        for how in ("absent", "null"):
            if how == "null" and key in NULL_MEANS_NONE:
                continue  # null is "none" there (DeepSeek-V2-Lite's q_lora_rank), a value of its own
            try:
                got = _geometry(_trimmed(name, key, how))
            except ModelConfigError as exc:
                refusals.append((key, str(exc)))
                continue
            expected = _geometry({**config, key: fallback})
            assert got == expected, f"{name}: {key} {how} is planned as neither refused nor its fallback {fallback!r}"
    assert all(key in message for key, message in refusals), refusals  # each refusal names its field


def test_the_attackers_trimmed_llama_no_longer_plans_phantom_kv() -> None:
    """Llama-3.1-8B without intermediate_size used to weigh 4.46 GiB (real 14.96): refused now."""
    whole = load("llama-3.1-8b").weights.bytes(2) / 2**30
    assert whole == pytest.approx(14.96, abs=0.01)
    with pytest.raises(ModelConfigError, match="needs intermediate_size"):
        model_shape_from_dict(_trimmed("llama-3.1-8b", "intermediate_size", "absent"), source="x.json")
