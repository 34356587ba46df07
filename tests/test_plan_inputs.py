"""Nonsense in, a named refusal out: every bad model field or flag is refused by name with
its value and the rule it breaks, with exit status 2 (1 is "does not fit"), and no input
produces a traceback."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from configbags.generated.accessors import get_context
from configbags.generated.registry import LEAVES
from configbags.server.kvcache import planner
from configbags.server.kvcache.bundled import with_bundled_rules
from configbags.server.kvcache.errors import ModelConfigError, SettingsError
from configbags.server.kvcache.model_shape import (
    ModelShape,
    load_model_shape,
    model_shape_from_dict,
)
from configbags.server.kvcache.planner import DeviceMemory, KvPlan, PlanSettings
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = json.loads((MODELS / "llama-3.1-8b.json").read_text())
GiB = 1 << 30


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    with get_context().restoring():
        yield


def settings(**leaves: Any) -> PlanSettings:
    fallbacks = {n: LEAVES[n].fallback for n in ("swa_full_tokens_ratio", "mamba_full_memory_ratio")}
    if "tp_size" in leaves:
        leaves.setdefault("attn_tp_size", leaves["tp_size"])
    return PlanSettings(**{**fallbacks, **leaves})

def plan_kv(model: ModelShape, settings_: PlanSettings, memory: DeviceMemory, **kw: Any) -> KvPlan:
    """The planner on `settings_` as the bundled server resolves them: the leaves its rules
    and fallbacks decide (mem_fraction_static, page_size, disable_hybrid_swa_memory) come
    from schema/rules.yaml with this device's and model's facts, as at publish."""
    return planner.plan_kv(model, with_bundled_rules(settings_, model, memory), memory, **kw)



def llama(**changes: Any) -> dict[str, Any]:
    return {**LLAMA, **changes}


# --- 7. nonsense model fields are refused by name ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("num_key_value_heads", 0, "must be positive"),
        ("num_key_value_heads", -8, "must be positive"),
        ("num_key_value_heads", 8.7, "must be an integer"),
        ("num_key_value_heads", "8", "must be an integer, not a str"),
        ("num_key_value_heads", 64, "cannot exceed num_attention_heads"),
        ("num_key_value_heads", 5, "must divide num_attention_heads"),
        ("num_attention_heads", 0, "must be positive"),
        ("intermediate_size", -1, "must be positive"),
        ("intermediate_size", 0, "must be positive"),
        ("hidden_size", 10**30, "accepts at most 16777216"),
        ("vocab_size", 2**40, "accepts at most 16777216"),
        ("num_hidden_layers", 0, "must be positive"),
        ("num_hidden_layers", 10**9, "accepts at most 4096"),
        ("max_position_embeddings", 0, "must be positive"),
        ("hidden_size", float("nan"), "must be an integer"),
        ("vocab_size", float("inf"), "must be an integer"),
        ("hidden_size", True, "must be an integer, not a bool"),
        ("layer_types", 5, "must be a list of layer type names"),
        ("architectures", "LlamaForCausalLM", "must be a list of class names"),
        ("quantization_config", {"quant_method": "awq", "bits": "4"}, "must be an integer"),
        ("quantization_config", {"quant_method": "bitsandbytes"}, "sizes awq, gptq"),
        ("tie_word_embeddings", "true", "must be true or false, not a str"),
        ("tie_word_embeddings", 1, "must be true or false, not an int"),
    ],
)
def test_bad_fields_are_refused_by_name(field: str, value: Any, rule: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelConfigError) as err:
        model_shape_from_dict(llama(**{field: value}), source="m.json")
    assert time.perf_counter() - start < 1  # 10**9 layers are refused, not built
    assert field in str(err.value) and rule in str(err.value)


@pytest.mark.parametrize(
    ("model", "tp", "field"),
    [
        ("llama-3.1-8b", 3, "num_attention_heads=32"),  # 32 heads over 3 ranks
        ("llama-3.1-8b", 64, "num_attention_heads=32"),
        ("qwen2.5-7b", 8, "num_attention_heads=28"),
        ("nemotron-h-56b", 3, "num_attention_heads=64"),
    ],
)
def test_tp_sizes_that_do_not_divide_the_heads_are_refused(model: str, tp: int, field: str) -> None:
    shape = load_model_shape(MODELS / f"{model}.json")
    with pytest.raises(SettingsError, match=field):
        plan_kv(shape, settings(tp_size=tp, mem_fraction_static=0.88), DeviceMemory(80 * GiB))


def test_kv_heads_replicate_only_when_tp_is_a_multiple() -> None:
    # 8 KV heads: tp 16 replicates (16 % 8 == 0); 12 KV heads at tp 8 neither split nor replicate.
    shape = model_shape_from_dict(llama(num_attention_heads=48, num_key_value_heads=12, head_dim=128), source="m.json")
    with pytest.raises(SettingsError, match="num_key_value_heads=12"):
        plan_kv(shape, settings(tp_size=8, mem_fraction_static=0.88), DeviceMemory(80 * GiB))


def test_bad_settings_are_refused_by_name() -> None:
    shape = load_model_shape(MODELS / "llama-3.1-8b.json")
    for leaves, name in [({"mem_fraction_static": 1.5}, "mem_fraction_static=1.5"),
                         ({"page_size": 0}, "page_size=0"), ({"pp_size": 0}, "pp_size=0"),
                         ({"swa_full_tokens_ratio": 0.0}, "swa_full_tokens_ratio=0.0")]:
        with pytest.raises(SettingsError, match=name):
            plan_kv(shape, settings(**leaves), DeviceMemory(80 * GiB))


def test_lazy_extra_buffer_without_overlap_is_refused() -> None:
    # KVCacheConfigurator._calculate_mamba_ratio asserts that lazy buffers have overlap.
    shape = load_model_shape(MODELS / "nemotron-h-56b.json")
    lazy = settings(tp_size=8, mamba_radix_cache_strategy="extra_buffer_lazy", disable_overlap_schedule=True)
    with pytest.raises(SettingsError, match="extra_buffer_lazy needs the overlap scheduler"):
        plan_kv(shape, lazy, DeviceMemory(141 * GiB))


def test_an_unknown_architecture_is_planned_with_a_warning() -> None:
    shape = model_shape_from_dict(llama(architectures=["FalconForCausalLM"]), source="m.json")
    plan = plan_kv(shape, settings(context_length=8192), DeviceMemory(80 * GiB))
    assert any("FalconForCausalLM" in w and "dense decoder" in w for w in plan.warnings)


# --- 8. no input produces a traceback ---------------------------------------------------------


def _write(tmp: Path, name: str, content: bytes) -> Path:
    path = tmp / name
    path.write_bytes(content)
    return path


HOSTILE: dict[str, Callable[[Path], Path]] = {
    "layers 0": lambda t: _write(t, "c.json", json.dumps(llama(num_hidden_layers=0)).encode()),
    "context 0": lambda t: _write(t, "c.json", json.dumps(llama(max_position_embeddings=0)).encode()),
    "string size": lambda t: _write(t, "c.json", json.dumps(llama(hidden_size="4096")).encode()),
    "NaN": lambda t: _write(t, "c.json", json.dumps(llama(num_key_value_heads=float("nan"))).encode()),
    "Infinity": lambda t: _write(t, "c.json", json.dumps(llama(head_dim=float("inf"))).encode()),
    "layer_types 5": lambda t: _write(t, "c.json", json.dumps(llama(layer_types=5)).encode()),
    "non-UTF-8": lambda t: _write(t, "c.json", b'{"model_type": "\xff\xfe"}'),
    # an escape of half a UTF-16 pair: no reply or log could carry the facts read from it
    "lone surrogate": lambda t: _write(t, "c.json", json.dumps(llama(architectures=["\udc80ForCausalLM"])).encode()),
    "lone surrogate key": lambda t: _write(t, "c.json", json.dumps({**llama(), "\ud800": 1}).encode()),
    "deep nesting": lambda t: _write(t, "c.json", b"[" * 100_000 + b"]" * 100_000),
    "a list": lambda t: _write(t, "c.json", b"[1, 2]"),
    "billion layers": lambda t: _write(t, "c.json", json.dumps(llama(num_hidden_layers=10**9)).encode()),
    "empty folder": lambda t: t,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_model_configs_exit_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = HOSTILE[case](tmp_path)
    assert main(["--model-config", str(path), "--device-memory", "80GiB"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("configbags plan: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_a_model_folder_reads_its_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "Llama-3.1-8B"
    snapshot.mkdir()
    (snapshot / "config.json").write_text(json.dumps(LLAMA))
    assert main(["--model-config", str(snapshot), "--device-memory", "80GiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["model"] == "Llama-3.1-8B"


def test_a_400_digit_device_memory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "9" * 400])
    assert exc.value.code == 2
    assert "not a size" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "2048TiB"])
    assert exc.value.code == 2
    assert "no device holds that much" in capsys.readouterr().err


def test_allocate_cpu_beyond_host_memory_is_refused_before_torch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import configbags.server.plan as plan_module

    monkeypatch.setattr(plan_module, "host_available_bytes", lambda: 1 * GiB)
    argv = ["--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "80GiB", "--allocate", "cpu"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--allocate cpu needs" in err and "the host has 1.00 GiB available" in err


def test_an_unknown_gpu_and_a_bad_tp_list_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for flags, words in ((["--gpu", "H300"], "unknown GPU 'H300'"),
                         (["--tp-size", "1,x"], "entry 'x' of '1,x' is not an integer"),
                         (["--gpu", "H100,,H200"], "argument --gpu: 'H100,,H200' has an empty entry"),
                         (["--gpu", "H100,"], "argument --gpu: 'H100,' has an empty entry")):
        with pytest.raises(SystemExit) as exc:
            main(["--model-config", str(MODELS / "llama-3.1-8b.json"), *flags])
        assert exc.value.code == 2
        assert words in capsys.readouterr().err


def test_a_tp_size_that_does_not_divide_the_heads_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "80GiB", "--tp-size", "3"]
    assert main(argv) == 2
    assert "num_attention_heads=32 is not divisible by the attention TP size 3" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "words"), [
    (["--tp-size", "2", "--dp-size", "3", "--enable-dp-attention"], "--tp-size 2 is not divisible by --dp-size 3"),
    (["--tp-size", "2", "--attn-cp-size", "3"], "(--tp-size 2) is not divisible by --attn-cp-size 3"),
    (["--tp-size", "4", "--dp-size", "2", "--enable-dp-attention", "--attn-cp-size", "4"],
     "group of 2 GPU(s) (--tp-size 4 // --dp-size 2) is not divisible by --attn-cp-size 4"),
])
def test_a_layout_sglang_refuses_exits_2_naming_the_flags(capsys: pytest.CaptureFixture[str], flags: list[str],
                                                          words: str) -> None:
    """DP attention and attention CP cut the TP group: a width rounded down would plan
    pools for more attention replicas than there are GPUs."""
    assert main(["--model-config", str(MODELS / "llama-3.1-8b.json"), "--device-memory", "80GiB", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and "derived value parallel.attn_tp_size refuses its inputs" in err


def test_a_layout_sglang_refuses_is_refused_at_publish_and_by_an_override() -> None:
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.errors import LeafValueError
    from configbags.runtime.testing import published

    with pytest.raises(LeafValueError, match="--dp-size that divides --tp-size"), published(
            ServerArgs(model_path="m", tp_size=2, dp_size=3, enable_dp_attention=True), role="test"):
        pass
    with published(ServerArgs(model_path="m", tp_size=4, dp_size=2, enable_dp_attention=True), role="test") as ctx:
        with pytest.raises(LeafValueError, match="not divisible by --dp-size 3"):
            ctx.override("tune", dp_size=3)
        assert ctx.state.values["attn_tp_size"] == 2


@pytest.mark.parametrize(("flags", "words"), [
    (["--tp-size", "2", "--ep-size", "3"], "--tp-size 2 is not divisible by --ep-size 3"),
    (["--tp-size", "2", "--ep-size", "1000"], "--tp-size 2 is not divisible by --ep-size 1000"),
    (["--tp-size", "4", "--moe-dp-size", "3"], "--tp-size 4 is not divisible by --moe-dp-size 3"),
    (["--tp-size", "8", "--ep-size", "4", "--moe-dp-size", "4"],
     "--tp-size 8 is not divisible by --ep-size 4 x --moe-dp-size 4 = 16"),
])
def test_a_moe_layout_sglang_refuses_exits_2_naming_the_flags(capsys: pytest.CaptureFixture[str], flags: list[str],
                                                              words: str) -> None:
    """The expert-parallel and MoE-DP groups are cut out of the TP group: a MoE width
    clamped to 1 would plan expert shards for GPUs that do not exist."""
    assert main(["--model-config", str(MODELS / "deepseek-v2-lite.json"), "--gpu", "H100", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and "derived value parallel.moe_tp_size refuses its inputs" in err


@pytest.mark.parametrize(("tp", "ep", "moe_dp", "width"), [(1, 1, 1, 1), (8, 2, 1, 4), (8, 4, 2, 1), (8, 8, 1, 1),
                                                           (16, 2, 4, 2)])
def test_every_moe_layout_that_tiles_the_tp_group_is_kept(tp: int, ep: int, moe_dp: int, width: int) -> None:
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.testing import published

    with published(ServerArgs(model_path="m", tp_size=tp, ep_size=ep, moe_dp_size=moe_dp), role="test") as ctx:
        assert ctx.state.values["moe_tp_size"] == width


def test_an_ep_size_that_stops_tiling_is_refused_by_an_override() -> None:
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.errors import LeafValueError
    from configbags.runtime.testing import published

    with published(ServerArgs(model_path="m", tp_size=4, ep_size=2), role="test") as ctx:
        with pytest.raises(LeafValueError, match="--tp-size 4 is not divisible by --ep-size 3"):
            ctx.override("elastic", ep_size=3)
        assert ctx.state.values["moe_tp_size"] == 2


DP_ATTENTION_6 = ["--tp-size", "6", "--dp-size", "6", "--enable-dp-attention", "--ep-size", "6"]


def test_routed_experts_that_do_not_divide_over_ep_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """64 routed experts on 6 expert-parallel ranks: SGLang's FusedMoE asserts an equal share."""
    assert main(["--model-config", str(MODELS / "deepseek-v2-lite.json"), "--gpu", "H100", *DP_ATTENTION_6]) == 2
    err = capsys.readouterr().err
    assert "deepseek-v2-lite.json: 64 routed experts are not divisible by --ep-size 6" in err, err


def test_redundant_expert_slots_count_with_the_routed_ones(capsys: pytest.CaptureFixture[str]) -> None:
    model = str(MODELS / "deepseek-v2-lite.json")
    assert main(["--model-config", model, "--gpu", "H100", *DP_ATTENTION_6, "--ep-num-redundant-experts", "2"]) == 0
    capsys.readouterr()
    assert main(["--model-config", model, "--gpu", "H100", *DP_ATTENTION_6, "--ep-num-redundant-experts", "1"]) == 2
    assert "64 routed experts + --ep-num-redundant-experts 1 = 65 expert slots" in capsys.readouterr().err


@pytest.mark.parametrize(("model", "experts"), [("deepseek-v2-lite.json", 64), ("gpt-oss-20b.json", 32),
                                                ("qwen3-next-80b-a3b.json", 512), ("llama-3.1-8b.json", 0)])
def test_the_shape_counts_the_routed_experts(model: str, experts: int) -> None:
    assert load_model_shape(MODELS / model).num_routed_experts == experts


# --- the accepted nonsense of issue 20, refused -------------------------------------------------

AWQ = json.loads((MODELS / "llama-3.1-8b-awq.json").read_text())


@pytest.mark.parametrize(
    ("quant", "field", "rule"),
    [({"bits": 3}, "bits is 3", "AWQ runs 4-bit weights only"),
     ({"group_size": 0}, "group_size is 0", "a power of two such as 32, 64 or 128"),
     ({"group_size": 7}, "group_size is 7", "a power of two such as 32, 64 or 128")],
)
def test_awq_widths_sglang_cannot_run_are_refused(quant: dict[str, int], field: str, rule: str) -> None:
    config = {**AWQ, "quantization_config": {**AWQ["quantization_config"], **quant}}
    with pytest.raises(ModelConfigError, match=f"quantization_config: {field}; .*{rule}"):
        model_shape_from_dict(config, source="awq.json")


def test_a_missing_head_count_is_named() -> None:
    config = {k: v for k, v in LLAMA.items() if k != "num_attention_heads"}
    with pytest.raises(ModelConfigError, match="needs num_attention_heads, which it does not define"):
        model_shape_from_dict(config, source="m.json")


def test_no_buffer_with_pages_or_overlap_is_refused() -> None:
    shape = load_model_shape(MODELS / "nemotron-h-56b.json")
    paged = settings(tp_size=8, mamba_radix_cache_strategy="no_buffer", page_size=16)
    with pytest.raises(SettingsError, match="no_buffer with --page-size 16 and overlap scheduling on"):
        plan_kv(shape, paged, DeviceMemory(141 * GiB))
    plain = settings(tp_size=8, mamba_radix_cache_strategy="no_buffer", page_size=1, disable_overlap_schedule=True)
    assert plan_kv(shape, plain, DeviceMemory(141 * GiB)).mamba_slots_per_request == 3


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--tp-size", "1,,2"], "argument --tp-size: '1,,2' has an empty entry"),
     (["--device-memory", "-80GiB"], "argument --device-memory: '-80GiB': a memory size must be positive"),
     (["--weight-bytes", "-1"], "argument --weight-bytes: '-1': a memory size must be positive")],
)
def test_malformed_lists_and_negative_sizes_are_refused(flags: list[str], message: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--model-config", str(MODELS / "llama-3.1-8b.json"), "--gpu", "H100", *flags])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_workload_longer_than_the_context_fits_zero_times(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", str(MODELS / "mistral-7b-v0.1.json"), "--gpu", "H100", "--context-length", "4096",
            "--workload", "4000:500", "--json"]
    assert main(argv) == 0
    load = json.loads(capsys.readouterr().out)["concurrency"]
    assert (load["requests"], load["binds"]) == (0, "max_req_len")
    assert "set --context-length 4501" in load["reason"]


@pytest.mark.parametrize(("hidden", "heads"), [(4097, 32), (16, 32), (4096, 2**20)])
def test_a_head_dim_derived_from_sizes_that_do_not_divide_is_refused_naming_both(hidden: int, heads: int) -> None:
    """With no head_dim field, head_dim is hidden_size / num_attention_heads: where that is
    no whole number the plan would be silently wrong (4097/32) or empty (16/32)."""
    config = {k: v for k, v in llama(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=8).items()
              if k not in ("head_dim", "attention_head_dim")}
    with pytest.raises(ModelConfigError) as err:
        model_shape_from_dict(config, source="m.json")
    assert "hidden_size" in str(err.value) and f"num_attention_heads ({heads})" in str(err.value)
    assert "no layer keeps a KV cache" not in str(err.value)
    config["head_dim"] = 128  # given, it is the heads' size whatever hidden_size is
    assert model_shape_from_dict(config, source="m.json").head_dim == 128
