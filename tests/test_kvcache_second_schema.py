"""The KV configurator and `configbags plan` with a second, smaller generated package: it
declares only the leaves the plan needs (tests/cases/kvmini: two namespaces, its own roles),
so nothing here may lean on the bundled schema."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from genutil import copy_case, generate, import_generated

from configbags.runtime.context import process_context
from configbags.runtime.resolve import Facts, GpuFacts
from configbags.server.kvcache.configurator import KvCacheConfigurator, read_settings
from configbags.server.kvcache.model_shape import load_model_shape
from configbags.server.kvcache.planner import DeviceMemory
from configbags.server.plan import main

MODELS = Path(__file__).resolve().parent.parent / "models"
LLAMA = str(MODELS / "llama-3.1-8b.json")
GiB = 1 << 30


@pytest.fixture(scope="module")
def kvmini(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    root = tmp_path_factory.mktemp("kvmini")
    out = root / "generated"
    assert generate(copy_case("kvmini", root), out) == 0
    return import_generated(out)


def _package(modules: dict[str, ModuleType]) -> str:
    return modules["accessors"].__name__.rpartition(".")[0]


def test_the_configurator_plans_through_a_smaller_schema(kvmini: dict[str, ModuleType]) -> None:
    ctx = process_context(_package(kvmini))
    with ctx.restoring():
        # GPU facts, as the engine gives them: the schema's own rule derives mem_fraction_static
        ctx.publish(kvmini["server_args"].ServerArgs(tp_size=2, page_size=16), role="worker",
                    facts=Facts(GpuFacts(memory_bytes=80 * GiB)))
        settings = read_settings(ctx)
        assert (settings.tp_size, settings.attn_tp_size) == (2, 2)  # attention spans TP here
        plan = KvCacheConfigurator(load_model_shape(LLAMA), DeviceMemory(80 * GiB), ctx).configure()
        # Derived from SGLang's formulas: default mfs on 80 GiB at tp 2 reserves 9.5 + 2/2 =
        # 10.5 GiB (ServerArgs._handle_gpu_memory_settings) -> round(69.5 / 80, 3) = 0.869;
        # slack = floor(80 GiB x 0.131) = 11252814315; weights 16060522496 / 2 = 8030261248;
        # rest = 85899345920 - 8030261248 - 11252814315 = 66616270357; cell = 4 heads x 256
        # x 32 layers x 2 B = 65536 (get_cell_size_per_token); tokens = rest // 65536 // 16 x 16.
        assert plan.mem_fraction_static == 0.869
        assert plan.max_total_num_tokens == 66616270357 // 65536 // 16 * 16 == 1016480
        overrides = {o["leaf"]: o["new"] for o in ctx.server_info()["overrides"]}
        # Decisions on leaves this schema lacks (dtype) are not written anywhere, and what
        # the schema's rule decided is not written back.
        assert overrides == {"kv_cache_dtype": "bf16", "context_length": 131072, "max_running_requests": 3970}
        assert ctx.origins()["mem_fraction_static"].rule == "mem_fraction_static_from_gpu_memory"


def test_plan_command_takes_the_package(kvmini: dict[str, ModuleType], capsys: pytest.CaptureFixture[str]) -> None:
    package = _package(kvmini)
    ctx = process_context(package)
    with ctx.restoring():
        argv = ["--package", package, "--model-config", LLAMA, "--device-memory", "80GiB",
                "--tp-size", "2", "--page-size", "16", "--json"]
        assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["max_total_num_tokens"] == 1016480
    assert out["server_info"]["record"]["page_size"] == 16
    # --help names only the flags this schema declares
    with ctx.restoring(), pytest.raises(SystemExit):
        main(["--package", package, "--model-config", LLAMA, "--help"])
    help_text = capsys.readouterr().out
    assert "--mem-fraction-static" in help_text and "--speculative-algorithm" not in help_text
