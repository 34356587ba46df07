"""Weights per rank, against parameter counts computed here from config.json: what SGLang
splits over TP is divided, what it replicates is whole on every rank (K/V projections when
TP exceeds the KV heads, MLA's down-projections, norms and routers), norms stay at the
model dtype in quantized checkpoints, and GPTQ keeps an int32 g_idx per input row."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from configbags.server.kvcache.model_shape import load_model_shape, model_shape_from_dict

MODELS = Path(__file__).resolve().parent.parent / "models"


def config(name: str) -> dict[str, Any]:
    return json.loads((MODELS / f"{name}.json").read_text())


def llama_rank_params(c: dict[str, Any], tp: int) -> tuple[Fraction, int, int]:
    """(split params per rank, K/V params per rank, norm params) of a Llama-type config."""
    h, L, heads, kv = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, inter, vocab = h // heads, c["intermediate_size"], c["vocab_size"]
    split = 2 * vocab * h + L * (h * heads * hd + heads * hd * h + 3 * h * inter)  # embed, lm head, q, o, MLP
    kv_per_rank = L * 2 * h * hd * max(1, kv // tp)  # k and v: whole heads, replicated below one a rank
    norms = L * 2 * h + h
    return Fraction(split, tp), kv_per_rank, norms


@pytest.mark.parametrize("tp", [1, 2, 8, 16])
def test_llama_70b_kv_projections_are_whole_heads_per_rank(tp: int) -> None:
    split, kv, norms = llama_rank_params(config("llama-3.1-70b"), tp)
    expected = math.ceil((split + kv + norms) * 2)
    w = load_model_shape(MODELS / "llama-3.1-70b.json").weights
    assert w.per_rank(2, tp) == expected
    if tp == 16:  # 8 KV heads over 16 ranks: every rank holds one whole head, 1.9% above a 16th
        assert w.per_rank(2, 16) / (w.bytes(2) / 16) == pytest.approx(1.019, abs=0.002)


def test_deepseek_v3_down_projections_are_replicated() -> None:
    c = config("deepseek-v3")
    h, L, q_lora, kv_lora, rope = (c["hidden_size"], c["num_hidden_layers"], c["q_lora_rank"],
                                   c["kv_lora_rank"], c["qk_rope_head_dim"])
    w = load_model_shape(MODELS / "deepseek-v3.json").weights
    # q_a_proj and kv_a_proj_with_mqa of every layer (ReplicatedLinear in SGLang)
    assert w.replicated_params == L * (h * q_lora + h * (kv_lora + rope))
    fp8 = 1 + Fraction(4, 128 * 128)  # 1 B per weight + a float32 scale per 128 x 128 block
    bf16_whole = w.unquantized_params + w.final_norm_params
    split = (w.embedding_params * 2 + (w.layer_params + w.expert_params) * fp8) / 8
    assert w.per_rank(2, 8) == math.ceil(split + w.replicated_params * fp8 + bf16_whole * 2)
    # the replicated part is ~1.2% of a rank's share
    assert w.per_rank(2, 8) / (w.bytes(2) / 8) == pytest.approx(1.012, abs=0.003)


def test_quantized_norms_stay_at_the_model_dtype() -> None:
    c = config("llama-3.1-8b-awq")
    split, kv, norms = llama_rank_params(c, 1)
    awq = Fraction(4, 8) + Fraction(16 + 4, 8 * 128)
    embeddings = 2 * c["vocab_size"] * c["hidden_size"]
    expected = math.ceil(embeddings * 2 + (split - embeddings + kv) * awq + norms * 2)
    assert load_model_shape(MODELS / "llama-3.1-8b-awq.json").weights.bytes(2) == expected


@pytest.mark.parametrize("tp", [1, 2])
def test_gptq_keeps_g_idx(tp: int) -> None:
    c = {**config("llama-3.1-8b"), "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    h, L, inter = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"]
    # one int32 per input row: qkv and gate_up read the hidden size (whole on each rank),
    # o the heads and down the MLP width (split over TP)
    g_idx = 4 * (L * 2 * h + Fraction(L * (h + inter), tp))
    split, kv, norms = llama_rank_params(c, tp)
    embeddings = Fraction(2 * c["vocab_size"] * h, tp)
    gptq = Fraction(4, 8) + Fraction(16 + 4, 8 * 128)
    expected = math.ceil(embeddings * 2 + (split - embeddings + kv) * gptq + norms * 2 + g_idx)
    assert model_shape_from_dict(c, source="gptq.json").weights.per_rank(2, tp) == expected
