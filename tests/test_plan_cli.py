"""`configbags plan` end to end: table, JSON readback, allocation check, chart, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from configbags.cli import main as configbags
from configbags.generated.accessors import get_context
from configbags.server.plan import main, parse_bytes

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = str(MODELS / "llama-3.1-8b.json")


@pytest.fixture(autouse=True)
def _restore_context() -> object:
    # The command publishes for real (as the engine would); undo it after each test.
    with get_context().restoring():
        yield


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert configbags(["plan", "--model-config", LLAMA, "--device-memory", "80GiB"]) == 0
    out = capsys.readouterr().out
    # Hand-derived (test_kvcache_plan, llama8b-tp1-defaults): 425348 tokens, 2048 requests.
    assert "max_total_num_tokens      425,348" in out
    assert "max_running_requests        2,048" in out
    assert "req_to_token         (2049, 131076) int32" in out
    assert "kv_pool.resolve_kv_cache_dtype" in out and "kv_cache_dtype = 'bf16'" in out
    for word in ("pre-load free", "weights", "slack", "KV budget", "KV used", "cell", "pools"):
        assert word in out


def test_json_carries_the_plan_and_server_info(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", LLAMA, "--device-memory", "80GiB", "--tp-size", "2", "--page-size", "16",
            "--kv-cache-dtype", "fp8_e4m3", "--mem-fraction-static", "0.85", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    plan, info = out["plan"], out["server_info"]
    # estimated weights: (16060522496 - 532480 B of norms) / 2 + the norms whole = 8030527488
    # rest = 85899345920 - 8030527488 - 12884901888 = 64983916544
    # cell = 4 x 256 x 32 x 1 = 32768; tokens = 1983151 -> page 16 -> 1983136
    assert plan["budget"]["kv_budget"] == 64983916544
    assert plan["max_total_num_tokens"] == 1983136
    assert info["record"]["kv_cache_dtype"] == "fp8_e4m3"
    assert info["record"]["max_running_requests"] is None
    assert info["resolved"]["max_running_requests"] == 4096
    assert {o["source"] for o in info["overrides"]} == {
        "kv_pool.resolve_dtype",
        "kv_pool.resolve_context_length",
        "kv_pool.default_max_running_requests",
    }
    assert plan["pools"][0]["nbytes"] == 32 * 1983152 * 4 * 128


def test_allocate_meta_checks_the_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", str(MODELS / "llama-3.1-70b.json"), "--device-memory", "80GiB", "--tp-size", "8",
            "--allocate", "meta"]
    assert main(argv) == 0
    assert "(equal to the plan)" in capsys.readouterr().out


@pytest.mark.slow  # plans a sweep in a process
def test_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "plan.png"
    argv = ["--model-config", str(MODELS / "qwen3-next-80b-a3b.json"), "--device-memory", "80GiB",
            "--tp-size", "4", "--weight-bytes", "40GiB", "--chart", str(png)]
    assert main(argv) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mamba slots" in capsys.readouterr().out


def test_budget_error_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", str(MODELS / "llama-3.1-70b.json"), "--device-memory", "80GiB", "--tp-size", "2",
            "--mem-fraction-static", "0.8"]
    assert main([*argv, "--context-length", "32768"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    # Hand-derived in test_kvcache_plan: 0.884 fits one 32768-token request but eats into
    # SGLang's 10.5 GiB reserve; 0.822 (the bare "budget > 0" bound) would only lead to a
    # context error.
    assert "0.884 would, with only 9.28 GiB left for activations" in err
    assert "0.822 only makes the KV budget positive" in err
    assert main(argv) == 1  # the full 131072 context needs 20 GiB: no fraction is enough
    assert "no mem_fraction_static fits one request of context_length=131072" in capsys.readouterr().err


@pytest.mark.parametrize(("model", "key"), [("llama-3.1-8b", "intermediate_size"),
                                            ("deepseek-v2-lite", "n_routed_experts")])
def test_a_null_count_is_refused_not_planned_as_zero(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, key: str) -> None:
    """Planned as 0 it took ~10 GiB off the weights and reported KV cache that does not exist."""
    config = json.loads((MODELS / f"{model}.json").read_text())
    config[key] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["--model-config", str(path), "--gpu", "H100"]) == 2
    assert f"{path}: a {config['model_type']} " in (err := capsys.readouterr().err)
    assert f"needs {key}, which it does not define (absent or null)" in err


def test_a_reserve_above_the_device_is_named_not_taken_for_missing_gpu_facts(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The GPU facts were given; SGLang's reserve for a 10^8-token chunk (1.5 MiB a token)
    is larger than the device, so the rule gives no share: the refusal says that."""
    assert main(["--model-config", LLAMA, "--gpu", "H100", "--chunked-prefill-size", "100000000"]) == 2
    err = capsys.readouterr().err
    assert "publish with GPU facts" not in err
    assert ("the reserve SGLang keeps out of it for activations and CUDA graphs, 146485.50 GiB "
            "(chunked_prefill_size 100000000, cuda_graph_max_bs_decode 256, tp_size 1, pp_size 1), "
            "is not below the device's 79.65 GiB") in err
    assert "lower --chunked-prefill-size" in err
    with get_context().restoring():  # explain gives the rule's reason, not a bare "no opinion"
        assert configbags(["explain", "mem_fraction_static", "--model-path", "m", "--gpu-memory", "1GiB"]) == 0
    out = capsys.readouterr().out
    assert ("rule mem_fraction_static_from_gpu_memory skipped: mem_fraction_static gave no value: the reserve SGLang "
            "keeps for activations and CUDA graphs, 3.64 GiB, is not below the device's 1,073,741,824 bytes") in out


def test_context_that_does_not_fit_is_capped_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B on 24 GiB holds 19025 tokens (test_kvcache_plan): SGLang caps requests at
    # 19024 and runs; so does the plan, and --require-full-context makes it an error.
    assert main(["--model-config", LLAMA, "--device-memory", "24GiB"]) == 0
    out = capsys.readouterr().out
    assert "max_req_len                19,024   (capped: the context does not fit)" in out
    assert "warning: context_length=131072 does not fit: requests are capped at 19024 tokens" in out
    assert main(["--model-config", LLAMA, "--device-memory", "24GiB", "--require-full-context"]) == 1
    assert "largest context that fits is 19025" in capsys.readouterr().err


def test_the_fit_launch_line_never_shows_a_secret(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--fit", "--workload", "8000:1000", "--concurrency", "16", "--model-config", LLAMA, "--gpu", "H100",
            "--tp-size", "1,2", "--api-key", "SEKRET-READ", "--admin-api-key=SEKRET-ADMIN"]
    for json_flag in ([], ["--json"]):
        assert main([*argv, *json_flag]) == 0
        out = capsys.readouterr()
        assert "SEKRET" not in out.out + out.err
        assert "<redacted> --admin-api-key=<redacted>" in " ".join(out.out.split())  # text output wraps


def test_a_context_of_one_token_admits_no_request_and_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # max_req_len = context - 1 = 0: "4,096 requests fit at once" would be a false success
    assert main(["--model-config", LLAMA, "--gpu", "H100", "--context-length", "1"]) == 2
    assert "context_length=1 leaves max_req_len 0: no request could be admitted" in capsys.readouterr().err
    assert main(["--model-config", LLAMA, "--gpu", "H100", "--context-length", "2"]) == 0


def test_a_pool_never_holds_more_tokens_than_int32_slot_indices_reach(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny = json.loads(Path(LLAMA).read_text())
    for key in ("hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "vocab_size",
                "intermediate_size"):
        tiny[key] = 1
    tiny.pop("head_dim", None)
    (tmp_path / "tiny.json").write_text(json.dumps(tiny))
    assert main(["--model-config", str(tmp_path / "tiny.json"), "--gpu", "H100"]) == 0
    out = capsys.readouterr().out
    tokens = int(next(line for line in out.splitlines() if line.startswith("max_total_num_tokens")).split()[1]
                 .replace(",", ""))
    assert 0 < tokens < 2**31 - 1 and "int32 token indices (req_to_token) cap the pool" in out


def test_active_draft_tokens_without_speculation_leave_rows_alone(capsys: pytest.CaptureFixture[str]) -> None:
    # Speculation off: the resolved bound is 0, whatever --speculative-num-draft-tokens says.
    argv = ["--model-config", LLAMA, "--device-memory", "80GiB", "--json"]
    assert main([*argv, "--speculative-num-draft-tokens", "8"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["req_to_token_shape"] == [2049, 131076]
    assert plan["spec"]["max_draft_tokens"] == 0


def test_float16_checkpoint_writes_back_kv_cache_dtype_float16(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = json.loads(Path(LLAMA).read_text())
    fp16 = tmp_path / "llama-fp16.json"
    fp16.write_text(json.dumps({**config, "torch_dtype": "float16"}))
    assert main(["--model-config", str(fp16), "--device-memory", "80GiB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    info = out["server_info"]
    assert info["record"]["kv_cache_dtype"] == "auto"
    assert info["resolved"]["kv_cache_dtype"] == "float16"
    assert ("kv_pool.resolve_kv_cache_dtype", "float16") in {(o["source"], o["new"]) for o in info["overrides"]}
    assert out["plan"]["pools"][0]["storage_dtype"] == "float16"


def test_missing_fields_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"model_type": "llama", "vocab_size": 10}))
    assert main(["--model-config", str(broken), "--device-memory", "8GiB"]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "hidden_size" in err and "num_hidden_layers" in err


def test_no_device_memory_without_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: memory comes from torch.cuda.mem_get_info")
    assert main(["--model-config", LLAMA]) == 2
    assert "--device-memory" in capsys.readouterr().err


def test_bad_flag_value_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--model-config", LLAMA, "--device-memory", "lots"])
    assert exc.value.code == 2
    assert "not a size" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "value"),
    [("80GiB", 85899345920), ("80 GB", 80_000_000_000), ("1.5TiB", 1649267441664), ("1024", 1024), ("512mib", 536870912)],
)
def test_parse_bytes(text: str, value: int) -> None:
    assert parse_bytes(text) == value


def test_device_memory_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--model-config", LLAMA, "--device-memory", "0GiB"])
    assert "a memory size must be positive" in capsys.readouterr().err


def test_comparison_over_gpus_and_tp_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", LLAMA, "--gpu", "H100,H200", "--tp-size", "1,3,8", "--workload", "2000:500", "--json"]
    assert main(argv) == 0  # some points plan
    rows = json.loads(capsys.readouterr().out)["comparison"]
    assert [(r["gpu"], r["tp_size"]) for r in rows] == [
        ("H100", 1), ("H100", 3), ("H100", 8), ("H200", 1), ("H200", 3), ("H200", 8)]
    by = {(r["gpu"], r["tp_size"]): r for r in rows}
    assert by[("H100", 3)]["status"] == "refused"  # 32 heads over 3 ranks
    h100 = by[("H100", 1)]
    # H100 preset: 81559 MiB; default mfs round((81559 - 13440) / 81559, 3) = 0.835
    # (handle_gpu_memory_settings: 512 + 8192 x 1.5 + 128 + 256 x 2 MiB reserved);
    # 2500-token requests: tokens // 2500.
    assert h100["mem_fraction_static"] == 0.835
    assert h100["concurrency"] == h100["tokens"] // 2500 and h100["binds"] == "kv tokens"
    assert by[("H200", 8)]["tokens"] > by[("H100", 8)]["tokens"] > h100["tokens"]
    assert main(argv[:-1]) == 0  # the table
    out = capsys.readouterr().out
    assert "fit: requests of 2,500 tokens" in out and "refused\n" in out


def test_comparison_where_nothing_fits_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", str(MODELS / "llama-3.1-70b.json"), "--gpu", "L40S", "--tp-size", "1,2"]
    assert main(argv) == 1
    assert capsys.readouterr().out.count("does not fit") == 2


def test_workload_concurrency_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model-config", LLAMA, "--gpu", "H100", "--context-length", "8192", "--workload", "1000:1000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "requests of 1,000 + 1,000 tokens; kv tokens binds" in out
    assert "SGLang reserves 13.12 GiB for activations and CUDA graphs" in out  # 13440 MiB
    assert "models SGLang main @ 003fca80" in out


# --- comparing models in one call -------------------------------------------------------------


def test_a_comma_list_of_models_compares_them(capsys: pytest.CaptureFixture[str]) -> None:
    models = ",".join(str(MODELS / f"{m}.json") for m in ("llama-3.1-8b", "gpt-oss-20b", "llama-3.1-70b"))
    argv = ["--model-config", models, "--gpu", "H100,L40S", "--tp-size", "1,2", "--workload", "2000:500"]
    assert main([*argv, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["comparison"]
    assert [(r["model"], r["gpu"], r["tp_size"]) for r in rows][:4] == [
        ("llama-3.1-8b", "H100", 1), ("llama-3.1-8b", "H100", 2), ("llama-3.1-8b", "L40S", 1),
        ("llama-3.1-8b", "L40S", 2)]
    assert len(rows) == 12 and {r["status"] for r in rows} == {"planned", "does not fit"}
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    # a refusal's reason is wrapped, never cut: joined back, every number is whole
    refused = next(r for r in rows if r["status"] == "does not fit")
    first_clause = refused["reason"].split("; ")[0]
    assert " ".join(first_clause.split()) in " ".join(out.split())
    # fractions print to one precision
    planned = [line for line in lines if line.startswith("llama-3.1-8b ") and "H100" in line]
    assert all(re.search(r" 0\.\d{3} ", line) for line in planned)


def test_an_empty_model_entry_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model-config", f"{LLAMA},,{LLAMA}", "--gpu", "H100"]) == 2
    assert "--model-config" in capsys.readouterr().err


# --- the inverse question: --fit ------------------------------------------------------------------

FIT = ["--fit", "--workload", "8000:1000", "--concurrency", "256", "--model-config",
       str(MODELS / "llama-3.1-70b.json"), "--gpu", "H100,H200,B200", "--tp-size", "1,2,4,8"]


def test_fit_lists_what_holds_the_workload_cheapest_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*FIT, "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)["fit"]
    entries = fit["entries"]
    assert len(entries) == 12 and fit["concurrency"] == 256
    fitting = [e for e in entries if e["fits"]]
    # 9000 tokens x 256 requests x 40960 B/token per rank (tp 8) is 88 GiB of KV: H200 and
    # B200 at tp 8 hold it, nothing smaller does
    assert [(e["candidate"]["gpu"], e["gpus"]) for e in fitting] == [("H200", 8), ("B200", 8)]
    assert entries[:2] == fitting  # fitting first, the smaller device first at equal GPUs
    for e in fitting:
        assert e["headroom"] > 0 and e["binds"] == "kv tokens"
        assert e["launch"].startswith(f"--tp-size 8 --mem-fraction-static {e['mem_fraction_static']} "
                                      "--max-running-requests 256")
    short = next(e for e in entries if (e["candidate"]["gpu"], e["gpus"]) == ("H100", 8))
    assert not short["fits"] and short["headroom"] < 0
    assert f"kv tokens hold {short['requests']} of 256 requests: short by {256 - short['requests']} requests" \
        in short["reason"]


def test_launching_plan_with_the_fit_flags_confirms_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*FIT, "--json"]) == 0
    fitting = [e for e in json.loads(capsys.readouterr().out)["fit"]["entries"] if e["fits"]]
    assert fitting
    for e in fitting:
        argv = ["--model-config", str(MODELS / "llama-3.1-70b.json"), "--gpu", e["candidate"]["gpu"],
                *e["launch"].split(), "--workload", "8000:1000", "--json"]
        assert main(argv) == 0
        load = json.loads(capsys.readouterr().out)["concurrency"]
        assert (load["requests"], load["binds"]) == (256, "max_running_requests")


def test_fit_shrinks_the_context_where_it_must(capsys: pytest.CaptureFixture[str]) -> None:
    # At mem_fraction_static 0.998 the slack (0.16 GiB) cannot hold the request table of 400
    # requests at the full context (401 x 131076 x 4 B = 0.2 GiB): the fit launches with the
    # context the 1000 + 200 tokens need, rounded up to 1024 tokens (2048)
    argv = ["--fit", "--workload", "1000:200", "--concurrency", "400", "--model-config", LLAMA, "--gpu", "H100",
            "--tp-size", "1", "--mem-fraction-static", "0.998", "--json"]
    assert main(argv) == 0
    (entry,) = json.loads(capsys.readouterr().out)["fit"]["entries"]
    assert entry["fits"] and entry["context_length"] == 2048
    assert entry["launch"] == ("--tp-size 1 --mem-fraction-static 0.998 --max-running-requests 400 "
                               "--context-length 2048")
    assert main(["--model-config", LLAMA, "--gpu", "H100", *entry["launch"].split(), "--workload", "1000:200",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["concurrency"]["requests"] == 400


def test_fit_needs_a_workload_and_a_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--fit", "--model-config", LLAMA, "--gpu", "H100"]) == 2
    assert "--fit needs --workload IN:OUT and --concurrency N" in capsys.readouterr().err


def test_fit_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "fit.png"
    assert main([*FIT, "--chart", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ok llama-3.1-70b" in capsys.readouterr().out


def test_a_chart_path_that_cannot_be_written_is_a_flag_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked with the flags (exit 2, one line), not by a traceback after the plan printed."""
    with pytest.raises(SystemExit) as info:
        main(["--model-config", LLAMA, "--device-memory", "80GiB", "--chart", str(tmp_path / "nodir" / "x.png")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--chart" in err and "does not exist" in err and "Traceback" not in err


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    """`configbags plan ... | head -1`: the reader has what it wanted; no BrokenPipeError traceback."""
    import subprocess
    import sys

    code = ("import sys; from configbags.cli import main; "
            f"sys.exit(main(['plan', '--model-config', {LLAMA!r}, '--gpu', 'H100,H200,B200,L40S', "
            "'--tp-size', '1,2,4,8']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written (the imports come first)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err, err


def test_the_configurations_one_run_plans_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    sizes = ",".join(str(i) for i in range(1, 4097))
    assert main(["--fit", "--workload", "8000:1000", "--concurrency", "256", "--model-config", LLAMA,
                 "--gpu", "H100,H200,B200,A100-80G,A100-40G,L40S", "--tp-size", sizes,
                 "--kv-dtypes", "auto,fp8_e4m3,fp8_e5m2,bf16"]) == 2
    err = capsys.readouterr().err
    assert "6 (--gpu) x 4096 (--tp-size) x 4 (--kv-dtypes) is 98,304 configurations, over the bound of 512" in err
    assert main(["--model-config", LLAMA, "--tp-size", ",".join(["8"] * 600)]) == 2  # the comparison table too
    assert "600 (--tp-size) is 600 configurations" in capsys.readouterr().err
