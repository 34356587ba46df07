"""The bundled server's resolution: the four ported rules, secrets redacted everywhere,
the hash with a purpose (over- and under-hash cases) and the explain command."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from configbags.cli import main as cli_main
from configbags.generated.accessors import (
    cfg,
    get_context,
    get_exec,
    get_schedule,
    get_serving,
    publish,
)
from configbags.generated.registry import LEAVES
from configbags.generated.server_args import ServerArgs
from configbags.runtime.dist import export_state, import_state
from configbags.runtime.errors import ConfigError, RecordError
from configbags.runtime.resolve import Facts, GpuFacts, ModelFacts, NoValue
from configbags.server import rules

GiB = 1 << 30
REPO = Path(__file__).resolve().parent.parent
SECRET = "sk-planted-7f3a9c"
ADMIN = "adm-planted-51be0d"


@pytest.fixture
def ctx() -> Iterator[Any]:
    context = get_context()
    with context.restoring(test=True):  # tests publish as the role that writes every leaf
        yield context


def gpu(gib: float, name: str = "GPU") -> Facts:
    return Facts(GpuFacts(name, int(gib * GiB), 90))


# -- the ported rules -------------------------------------------------------------------

@pytest.mark.parametrize(
    ("flags", "gib", "expected"),
    [
        # handle_gpu_memory_settings, in MiB: 512 + 1.5 x chunk + tp*pp/8 GiB + 2 x decode graph
        # batch (+ 3 x batch x dp with DP attention), at least 10 GiB above 60 GiB.
        # 141 GiB = 144384 MiB: chunk 8192, batch 256 below tp 4 and 512 from it
        ({}, 141, round((144384 - (512 + 12288 + 128 + 512)) / 144384, 3)),
        ({"tp_size": 8}, 141, round((144384 - (512 + 12288 + 1024 + 1024)) / 144384, 3)),
        ({"tp_size": 2, "pp_size": 2}, 141, round((144384 - (512 + 12288 + 512 + 512)) / 144384, 3)),
        # speculative decoding reserves nothing of its own in the newest hook
        ({"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
          "speculative_num_draft_tokens": 4}, 141, round((144384 - 13440) / 144384, 3)),
        ({"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}, 141,
         round((144384 - (512 + 12288 + 256 + 512 + 256 * 2 * 3)) / 144384, 3)),
        # 80 GiB (81920 MiB) at tp 1: 0.836; 192 GiB: 16k chunks, batch 512
        ({}, 80, round((81920 - 13440) / 81920, 3)),
        ({"tp_size": 8}, 192, round((196608 - (512 + 24576 + 1024 + 1024)) / 196608, 3)),
    ],
)
def test_mem_fraction_static_follows_the_gpu_memory_formula(
    ctx: Any, flags: dict[str, Any], gib: int, expected: float
) -> None:
    publish(ServerArgs(model_path="m", **flags), role="launcher", facts=gpu(gib))
    assert get_schedule().mem_fraction_static == expected
    assert ctx.explain("mem_fraction_static")["rule"] == "mem_fraction_static_from_gpu_memory"


def test_mem_fraction_static_help_states_the_formula() -> None:
    text = (REPO / "schema/namespaces/schedule.yaml").read_text()
    assert "512 MiB + 1.5 MiB per chunked-prefill token + tp_size*pp_size/8 GiB + 2 MiB per decode" in text
    assert "at least 10 GiB on devices above 60 GiB" in text


@given(st.integers(1, 4096), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2]), st.booleans(), st.booleans())
def test_mem_fraction_static_is_always_a_valid_fraction(gib: int, tp: int, pp: int, spec: bool, dp: bool) -> None:
    reserve = rules.reserved_memory_bytes(gib * GiB, tp, pp, enable_dp_attention=dp, dp_size=2 if dp else 1)
    if reserve >= gib * GiB:  # no default, saying why, exactly when the device is no larger than the reserve
        with pytest.raises(NoValue, match="is not below the device's"):
            rules.mem_fraction_static(gib * GiB, tp, pp, enable_dp_attention=dp, dp_size=2 if dp else 1)
    else:
        value = rules.mem_fraction_static(gib * GiB, tp, pp, enable_dp_attention=dp, dp_size=2 if dp else 1)
        assert 0.0 <= value < 1.0


def test_operator_mem_fraction_static_wins_and_no_facts_leaves_it_unset(ctx: Any) -> None:
    publish(ServerArgs(model_path="m", mem_fraction_static=0.7), role="launcher", facts=gpu(80))
    assert get_schedule().mem_fraction_static == 0.7
    publish(ServerArgs(model_path="m"), role="launcher", facts=Facts())
    # no rule applied, and the planner derives no default of its own: it refuses the
    # unresolved value (test_kvcache_plan::test_the_planner_derives_no_mem_fraction_static_of_its_own)
    assert get_schedule().mem_fraction_static is None


def test_gemma2_turns_off_hybrid_swa_memory(ctx: Any) -> None:
    gemma = ModelFacts.from_config(REPO / "models/gemma-2-9b.json")
    publish(ServerArgs(model_path="m"), role="launcher", facts=Facts(model=gemma))
    assert get_schedule().disable_hybrid_swa_memory is True
    assert ctx.explain("disable_hybrid_swa_memory")["layer"] == "model"
    llama = ModelFacts.from_config(REPO / "models/llama-3.1-8b.json")
    publish(ServerArgs(model_path="m"), role="launcher", facts=Facts(model=llama))
    assert get_schedule().disable_hybrid_swa_memory is False


@pytest.mark.parametrize(
    ("backend", "given", "expected"),
    # SGLang's ServerArgs._handle_attention_backend_compatibility, then _handle_page_size
    # (unset is 1): flashmla 64, cutlass_mla 128, trtllm_mla 32 or 64 (else 64), trtllm_mha
    # 16, 32 or 64 (else 64), any other backend what was given.
    [("flashmla", None, 64), ("flashmla", 16, 64), ("cutlass_mla", 1, 128), ("cutlass_mla", None, 128),
     ("trtllm_mla", None, 64), ("trtllm_mla", 32, 32), ("trtllm_mla", 64, 64), ("trtllm_mla", 16, 64),
     ("trtllm_mha", None, 64), ("trtllm_mha", 32, 32), ("trtllm_mha", 16, 16), ("trtllm_mha", 8, 64),
     ("fa3", 8, 8), ("fa3", None, 1)],
)
def test_page_size_forced_by_attention_backend(ctx: Any, backend: str, given: int | None, expected: int) -> None:
    publish(ServerArgs(model_path="m", attention_backend=backend, page_size=given), role="launcher")
    assert get_schedule().page_size == expected


@pytest.mark.parametrize(
    ("gib", "tp", "chunk", "graph_bs"),
    [(16, 1, 2048, 8), (24, 1, 4096, 48), (24, 4, 4096, 160), (40, 1, 4096, 32), (48, 8, 4096, 160),
     (80, 1, 8192, 256), (80, 4, 8192, 512), (141, 2, 8192, 256), (192, 1, 16384, 512)],
)
def test_chunked_prefill_and_cuda_graph_cap_by_memory_tier(ctx: Any, gib: int, tp: int, chunk: int, graph_bs: int) -> None:
    publish(ServerArgs(model_path="m", tp_size=tp), role="launcher", facts=gpu(gib))
    assert get_schedule().chunked_prefill_size == chunk
    assert get_exec().graph.cuda_graph_max_bs_decode == graph_bs


def _backend_rules() -> dict[str, set[str]]:
    """Every attention backend a rule in schema/rules.yaml tests (`attention_backend: X`,
    `{eq: X}` or `{in: [...]}`) -> the ids of those rules, read from the file, so a new
    backend rule is covered without an edit here."""
    rules_file = yaml.safe_load((REPO / "schema/rules.yaml").read_text(encoding="utf-8"))["rules"]
    named: dict[str, set[str]] = {}
    for rule_id, rule in rules_file.items():
        condition = (rule.get("when") or {}).get("attention_backend")
        if isinstance(condition, dict):
            condition = [condition["eq"]] if "eq" in condition else condition.get("in", [])
        for backend in [condition] if isinstance(condition, str) else condition or []:
            named.setdefault(backend, set()).add(rule_id)
    return named


BACKEND_RULES = _backend_rules()
BACKENDS = sorted(BACKEND_RULES)


def test_the_rules_name_the_backends_sglang_forces_a_page_size_for() -> None:
    assert {"flashmla", "cutlass_mla", "trtllm_mla", "trtllm_mha"} <= set(BACKENDS)


@pytest.mark.parametrize("model", ["gemma-2-9b", "deepseek-v2-lite"])
@pytest.mark.parametrize("backend", [None, *BACKENDS])
def test_plan_and_explain_agree_on_every_leaf_both_report(
    ctx: Any, capsys: pytest.CaptureFixture[str], backend: str | None, model: str
) -> None:
    """`configbags plan` reports each input with its value, layer and rule; `configbags
    explain` run with the same flags and facts must say the same of every one of them
    (page_size, mem_fraction_static, disable_hybrid_swa_memory among them)."""
    config = str(REPO / "models" / f"{model}.json")
    flags = ["--attention-backend", backend] if backend else []
    with ctx.restoring():
        assert cli_main(["plan", "--model-config", config, "--gpu", "H100", "--json", *flags]) == 0
    planned = json.loads(capsys.readouterr().out)
    inputs = {n: i for n, i in planned["inputs"].items() if i["layer"] != "derived"}
    assert {"page_size", "mem_fraction_static", "disable_hybrid_swa_memory"} <= set(inputs)
    memory = str(planned["server_info"]["facts"]["gpu"]["memory_bytes"])
    for leaf, reported in inputs.items():
        with ctx.restoring():
            assert cli_main(["explain", leaf, "--gpu-name", "H100", "--gpu-memory", memory,
                             "--model-config", config, "--json", *flags]) == 0
        explained = json.loads(capsys.readouterr().out)
        said = {k: explained.get(k) for k in ("layer", "source", "rule")}
        assert (reported["value"], {k: reported.get(k) for k in said}) == (explained["resolved"], said), leaf
    # what the rules decide, named by the rule that decided it
    assert inputs["mem_fraction_static"]["rule"] == "mem_fraction_static_from_gpu_memory"
    gemma = inputs["disable_hybrid_swa_memory"]
    assert (gemma["value"], gemma.get("rule")) == ((True, "gemma2_full_swa_memory") if model == "gemma-2-9b"
                                                   else (False, None))
    if backend is not None and inputs["page_size"]["layer"] != "default":
        assert inputs["page_size"]["rule"] in BACKEND_RULES[backend]
    assert planned["plan"]["page_size"] == inputs["page_size"]["value"]
    assert planned["plan"]["mem_fraction_static"] == inputs["mem_fraction_static"]["value"]
    # and the planner wrote none of them back
    assert not {d["leaf"] for d in planned["plan"]["decisions"]} & {
        "page_size", "mem_fraction_static", "disable_hybrid_swa_memory"}


def test_explain_says_no_facts_only_of_rules_that_test_facts(ctx: Any) -> None:
    publish(ServerArgs(model_path="m", attention_backend="flashmla"), role="launcher", facts=Facts())
    # the page-size rules test leaves only: they applied, and explain must not say otherwise
    assert ctx.explain("page_size")["rule"] == "page_size_flashmla"
    assert "note" not in ctx.explain("page_size")
    assert "no facts" in ctx.explain("mem_fraction_static")["note"]


def test_explain_reads_the_model_path_a_config_file_gives_and_labels_its_own_placeholder(
        ctx: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """explain's stand-in model path goes in only where no layer gives one, and is shown as a
    placeholder; it never overrides a config file at the CLI layer as an operator value."""
    config = tmp_path / "c.yaml"
    config.write_text("model_path: /models/real\ntp_size: 2\n")
    for leaf in ("model_path", "tokenizer_source"):
        with ctx.restoring():
            assert cli_main(["explain", leaf, "--config", str(config), "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["resolved"] == "/models/real" and "placeholder" not in info, leaf
    with ctx.restoring():
        assert cli_main(["explain", "model_path", "--config", str(config)]) == 0
    text = capsys.readouterr().out
    assert '[config_file: ' in text and 'operator value       "/models/real" from ' in text
    assert '"model"' not in text
    with ctx.restoring():
        assert cli_main(["explain", "model_path"]) == 0  # nothing gives one: the placeholder, said so
    text = capsys.readouterr().out
    assert 'model.model_path = "model"   [placeholder: not an operator value]' in text
    assert "operator value       " not in text
    assert "placeholder          model_path = \"model\": explain's placeholder: no --model-path" in text


def test_the_plan_text_names_the_rule_behind_each_input(ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
    config = str(REPO / "models" / "gemma-2-9b.json")
    with ctx.restoring():
        assert cli_main(["plan", "--model-config", config, "--gpu", "H100", "--attention-backend", "cutlass_mla"]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = {line.split()[0]: line for line in lines[lines.index(next(x for x in lines if x.startswith("inputs "))) + 1:]
            if line.startswith("  ") and " = " in line}
    assert "[model: rule page_size_cutlass_mla (schema/rules.yaml:" in said["page_size"]
    assert "[hardware: rule mem_fraction_static_from_gpu_memory (schema/rules.yaml:" in said["mem_fraction_static"]
    assert "[model: rule gemma2_full_swa_memory (schema/rules.yaml:" in said["disable_hybrid_swa_memory"]
    assert "[cli: --attention-backend]" in said["attention_backend"]


def test_a_published_state_with_rules_crosses_processes_unchanged(ctx: Any) -> None:
    publish(ServerArgs(model_path="m", attention_backend="flashmla"), role="launcher", facts=gpu(80))
    text, info, digest = export_state(ctx), ctx.server_info(), ctx.config_hash()
    ctx.publish(ServerArgs(model_path="other"), role="launcher", facts=Facts())
    import_state(text, ctx)  # a child with no facts of its own
    assert (ctx.server_info(), ctx.config_hash()) == (info, digest)


# -- secrets ----------------------------------------------------------------------------

def test_a_planted_secret_appears_in_no_readback_log_file_or_error(
    ctx: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.yaml"
    with caplog.at_level(logging.DEBUG, logger="configbags"):
        record = ServerArgs.from_cli(["--model-path", "m", "--api-key", SECRET, "--dump-config", str(dump)],
                                     environ={"SGLANG_ADMIN_API_KEY": ADMIN})
        publish(record, role="launcher", facts=gpu(80))
        with ctx.scoped("rotate", api_key=SECRET + "-2"):
            surfaces = [json.dumps(ctx.server_info()), json.dumps(ctx.explain("api_key")),
                        json.dumps(ctx.explain("admin_api_key")), json.dumps(ctx.hash_factors())]
        errors = []
        for bad in ({"api_key": 7}, {"admin_api_key": ["x", SECRET]}):
            with pytest.raises(ConfigError) as exc:
                ServerArgs.from_dict({"model_path": "m", **bad})
            errors.append(str(exc.value))
        with pytest.raises(ConfigError) as exc:
            ctx.override("test", api_key=123456)
        errors.append(str(exc.value))
        assert cli_main(["explain", "api_key", "--api-key", SECRET]) == 0
    logs = [r.getMessage() for r in caplog.records]
    files = [dump.read_text(), (REPO / "generated/CONFIG.md").read_text(),
             (REPO / "generated/server_args.schema.json").read_text()]
    out = capsys.readouterr()
    everything = "\n".join([*surfaces, *errors, *logs, *files, out.out, out.err])
    for secret in (SECRET, ADMIN, "123456"):
        assert secret not in everything
    assert "<redacted>" in surfaces[0]
    assert any("api_key='<redacted>' [cli: --api-key]" in line for line in logs)
    # ...yet the value is there for the server, and travels to other ranks.
    assert ctx.state.values["api_key"] == SECRET
    assert SECRET in export_state(ctx) and ADMIN in export_state(ctx)
    assert "api_key" not in ctx.hash_factors()["leaves"]


def test_repr_of_the_record_bags_snapshot_and_state_redacts_a_secret(ctx: Any) -> None:
    """What a `logger.debug("%r", cfg.serving)`, an f-string in an error, a pytest diff or
    a traceback with locals shows: that a secret is set, never its value."""
    record = ServerArgs(model_path="m", api_key=SECRET)
    publish(record, role="launcher", facts=gpu(80))
    shown = [repr(record), str(record), repr(get_serving()), repr(cfg.serving), repr(ctx.snapshot()),
             repr(ctx.state), repr(ServerArgs(model_path="m", admin_api_key=ADMIN))]
    for text in shown:
        assert SECRET not in text and ADMIN not in text, text
    assert "api_key=<redacted>" in shown[0] and "api_key=<redacted>" in shown[2]
    assert "admin_api_key=None" in shown[2]  # unset is shown as unset
    assert get_serving().api_key == SECRET  # the value itself is there for the server
    from configbags.runtime.context import OverrideEntry, RunnerView

    entry = OverrideEntry(2, "rotate", "api_key", "serving", SECRET, ADMIN, 0.0, secret=True)
    view = RunnerView(ctx, "draft", {"api_key": SECRET, "tp_size": 2})
    for text in (repr(entry), repr([entry]), repr(view)):
        assert SECRET not in text and ADMIN not in text, text
    assert "old=<redacted>, new=<redacted>" in repr(entry) and "'tp_size': 2" in repr(view)
    assert entry == OverrideEntry(2, "rotate", "api_key", "serving", SECRET, ADMIN, 0.0)  # a flag, not data


def test_secrets_are_declared_in_the_registry() -> None:
    assert LEAVES["api_key"].secret and LEAVES["admin_api_key"].secret
    assert LEAVES["admin_api_key"].flags == ("--admin-api-key",)
    assert not LEAVES["api_key"].hash


# -- the hash -----------------------------------------------------------------------------

def _hash(**flags: Any) -> str:
    publish(ServerArgs(model_path="m", **flags), role="test")
    return str(get_context().config_hash())


def test_no_over_hash_of_memory_capacity_runtime_or_secret_leaves(ctx: Any) -> None:
    base = _hash()
    assert _hash(mem_fraction_static=0.7) == base
    assert _hash(max_total_tokens=4096) == base
    assert _hash(max_running_requests=8) == base
    assert _hash(api_key="k") == base
    ctx.override("tune", chunked_prefill_size=1024)  # runtime (launcher may not; the test role may)
    assert ctx.config_hash() == base
    factors = ctx.hash_factors()
    assert {"mem_fraction_static", "max_total_tokens", "chunked_prefill_size"}.isdisjoint(factors["leaves"])


def test_no_under_hash_of_semantic_leaves_rule_results_or_versions(ctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _hash()
    assert _hash(kv_cache_dtype="fp8_e4m3") != base
    assert _hash(attention_backend="fa3") != _hash(attention_backend="flashmla")
    # page_size is resolved by rules: the hash follows the resolved value, not the input.
    assert _hash(attention_backend="trtllm_mha", page_size=32) != _hash(attention_backend="trtllm_mha", page_size=16)
    assert _hash(attention_backend="flashmla", page_size=16) == _hash(attention_backend="flashmla")
    factors = ctx.hash_factors()
    assert factors["purpose"] == "compile-cache"
    assert factors["schema_version"] and factors["configbags_version"]
    before = _hash()
    monkeypatch.setattr("configbags.runtime.context._readbacks.configbags_version", lambda: "99.0")
    assert _hash() != before


def test_hash_is_canonical_and_never_raises(ctx: Any) -> None:
    a = _hash(schedule_conservativeness=0.0)
    assert _hash(schedule_conservativeness=-0.0) == a
    with pytest.raises(RecordError, match="over the limit of 100 digits .raise it with CONFIGBAGS_LIMIT_INT_DIGITS"):
        ServerArgs(model_path="m", max_prefill_tokens=10 ** 5000)  # refused at the door
    huge = 10 ** 99  # the largest integer the input limits admit (in a json leaf: sizes are bounded) still hashes
    publish(ServerArgs(model_path="m", json_model_override_args={"n": huge}), role="launcher")
    assert len(ctx.config_hash()) == 16
    assert ctx.config_hash() != _hash(json_model_override_args={"n": huge + 1})


# -- configbags explain --------------------------------------------------------------------

def test_explain_command_shows_layer_and_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["explain", "mem_fraction_static", "--gpu-memory", "141GiB", "--tp-size", "2"]) == 0
    out = capsys.readouterr().out
    # 144384 MiB at tp 2: 512 + 8192 x 1.5 + 2 / 8 x 1024 + 256 x 2 = 13568 MiB reserved
    assert f"schedule.mem_fraction_static = {round((144384 - 13568) / 144384, 3)}   [hardware: rule mem_fraction_static_from_gpu_memory" in out
    assert cli_main(["explain", "page_size", "--attention-backend", "flashmla", "--page-size", "16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["resolved"], data["origin"]["forced_over"]["source"]) == (64, "--page-size")
    assert cli_main(["explain", "page_sise"]) == 2
    assert "'page_sise' is not a config leaf (did you mean 'page_size'?)" in capsys.readouterr().err


def test_no_decode_cuda_graphs_reserve_no_graph_memory(ctx: Any) -> None:
    # reserve_for_graph_mb: 2 MiB per decode graph batch slot only when decode graphs are
    # captured; 141 GiB at tp 1 without them: 512 + 12288 + 128 = 12928 MiB
    publish(ServerArgs(model_path="m", disable_decode_cuda_graph=True), role="launcher", facts=gpu(141))
    assert get_schedule().mem_fraction_static == round((144384 - 12928) / 144384, 3)
