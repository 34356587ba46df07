"""The KV configurator and `configbags plan` with a second, smaller generated package: it
declares the leaves the configurator requires and one optional one (tests/cases/kvmini: the
seam's `parallel`, `model` and `schedule` namespaces, its own roles), so nothing here may
lean on the bundled schema; and schemas that lack leaves, refused with one error that names
each fix (one of them the schema `configbags init` scaffolds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from genutil import copy_case, generate, import_generated

from configbags.runtime.context import process_context
from configbags.runtime.resolve import Facts, GpuFacts
from configbags.server.kvcache.configurator import KvCacheConfigurator, read_settings
from configbags.server.kvcache.model_shape import load_model_shape
from configbags.server.kvcache.planner import DeviceMemory
from configbags.server.kvcache.seam import SEAM, SeamError
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
        # what this schema lacks reads the seam's defaults
        assert (settings.pp_size, settings.dtype, settings.speculative_algorithm) == (1, "auto", None)
        assert settings.swa_full_tokens_ratio == 0.8  # its own fallback, not a copy in the planner
        plan = KvCacheConfigurator(load_model_shape(LLAMA), DeviceMemory(80 * GiB), ctx).configure()
        # Derived from SGLang's formulas: default mfs on 80 GiB (81920 MiB) at tp 2 reserves
        # 512 + 8192 x 1.5 + 2 / 8 x 1024 + 256 x 2 = 13568 MiB (handle_gpu_memory_settings,
        # with this schema's unset chunk and graph batch at their tier defaults)
        # -> round((81920 - 13568) / 81920, 3) = 0.834;
        # slack = floor(80 GiB x 0.166) = 14259291422; weights (16060522496 - 532480 B of
        # norms) / 2 + the norms whole on each rank = 8030527488;
        # rest = 85899345920 - 8030527488 - 14259291422 = 63609527010; cell = 4 heads x 256
        # x 32 layers x 2 B = 65536 (get_cell_size_per_token); tokens = rest // 65536 // 16 x 16.
        assert plan.mem_fraction_static == 0.834
        assert plan.max_total_num_tokens == 63609527010 // 65536 // 16 * 16 == 970592
        overrides = {o["leaf"]: o["new"] for o in ctx.server_info()["overrides"]}
        # Decisions on leaves this schema lacks (dtype) are not written anywhere, and what
        # the schema's rule decided is not written back.
        assert overrides == {"kv_cache_dtype": "bf16", "context_length": 131072, "max_running_requests": 3791}
        assert ctx.origins()["mem_fraction_static"].rule == "mem_fraction_static_from_gpu_memory"


def test_plan_command_takes_the_package(kvmini: dict[str, ModuleType], capsys: pytest.CaptureFixture[str]) -> None:
    package = _package(kvmini)
    ctx = process_context(package)
    with ctx.restoring():
        argv = ["--package", package, "--model-config", LLAMA, "--device-memory", "80GiB",
                "--tp-size", "2", "--page-size", "16", "--json"]
        assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["max_total_num_tokens"] == 970592
    assert out["server_info"]["record"]["page_size"] == 16
    # --help names only the flags this schema declares
    with ctx.restoring(), pytest.raises(SystemExit):
        main(["--package", package, "--model-config", LLAMA, "--help"])
    help_text = capsys.readouterr().out
    assert "--mem-fraction-static" in help_text and "--speculative-algorithm" not in help_text


def test_an_optional_leaf_the_schema_declares_is_read(kvmini: dict[str, ModuleType]) -> None:
    ctx = process_context(_package(kvmini))
    with ctx.restoring():
        ctx.publish(kvmini["server_args"].ServerArgs(max_running_requests=64), role="worker",
                    facts=Facts(GpuFacts(memory_bytes=80 * GiB)))
        assert read_settings(ctx).max_running_requests == 64
        plan = KvCacheConfigurator(load_model_shape(LLAMA), DeviceMemory(80 * GiB), ctx).plan()
        assert plan.max_running_requests == 64


def test_a_runner_view_plans_on_its_own_overlay(kvmini: dict[str, ModuleType]) -> None:
    # kvmini's namespaces lack optional leaves, so its reads go through the filled-in seam:
    # the overlay must still reach them, and leave the process bags alone.
    ctx = process_context(_package(kvmini))
    with ctx.restoring():
        ctx.publish(kvmini["server_args"].ServerArgs(page_size=16, mem_fraction_static=0.88), role="worker")
        c = KvCacheConfigurator(load_model_shape(LLAMA), DeviceMemory(80 * GiB), ctx)
        draft = c.plan(ctx.runner_view("draft", kv_cache_dtype="fp8_e4m3", page_size=32))
        target = c.plan()
        assert (draft.kv_cache_dtype, draft.page_size) == ("fp8_e4m3", 32)
        assert (target.kv_cache_dtype, target.page_size) == ("bf16", 16)
        assert ctx.bag("model").kv_cache_dtype == "auto"


def _edit(schema: Path, namespace: str, edit: dict[str, dict[str, object] | None]) -> None:
    """Set (a dict) or drop (None) leaves of one namespace file, creating the file if needed."""
    path = schema / "namespaces" / f"{namespace}.yaml"
    data = yaml.safe_load(path.read_text()) if path.exists() else {"namespace": namespace, "doc": "Added.", "leaves": {}}
    for name, leaf in edit.items():
        if leaf is None:
            del data["leaves"][name]
        else:
            data["leaves"][name] = leaf
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _leaf(type_: str, default: object, **more: object) -> dict[str, object]:
    return {"type": type_, "default": default, "help": "A leaf.", "owner": "launcher", "override": "startup", **more}


@pytest.fixture(scope="module")
def lacking(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    """kvmini with one of each problem: a required leaf dropped, one in the wrong namespace,
    a ratio that can be None, and half of the speculative group."""
    root = tmp_path_factory.mktemp("lacking")
    schema = copy_case("kvmini", root)
    (schema / "rules.yaml").unlink()  # its one rule sets mem_fraction_static, dropped here
    _edit(schema, "schedule", {"mem_fraction_static": None,
                               "swa_full_tokens_ratio": _leaf("optional float", None, min=0.0, max=1.0)})
    model = yaml.safe_load((schema / "namespaces" / "model.yaml").read_text())["leaves"]
    _edit(schema, "model", {"kv_cache_dtype": None})
    _edit(schema, "parallel", {"kv_cache_dtype": model["kv_cache_dtype"]})
    _edit(schema, "spec", {"speculative_algorithm": _leaf("optional str", None)})
    out = root / "generated"
    assert generate(schema, out) == 0
    return import_generated(out)


LACKING = [
    "declare mem_fraction_static (optional float) in namespace schedule",
    "move kv_cache_dtype from namespace parallel to namespace model",
    "swa_full_tokens_ratio is optional float, but the configurator reads a float: give it a default or a fallback",
    "declare max_speculative_num_draft_tokens (int) in namespace spec (the rest of speculative decoding is declared)",
]


def test_a_schema_lacking_leaves_gets_one_error_naming_each(lacking: dict[str, ModuleType]) -> None:
    ctx = process_context(_package(lacking))
    with ctx.restoring():
        ctx.publish(lacking["server_args"].ServerArgs(), role="worker")
        with pytest.raises(SeamError) as refused:
            read_settings(ctx)
    problems = [line.removeprefix("  - ") for line in str(refused.value).splitlines() if line.startswith("  - ")]
    spec_group = [f"declare {leaf.name} ({leaf.type}) in namespace spec (the rest of speculative decoding is declared)"
                  for leaf in SEAM if leaf.namespace == "spec" and leaf.name != "speculative_algorithm"
                  and leaf.default is not None and leaf.default.group is not None]
    assert set(problems) == {*LACKING[:3], *spec_group} and LACKING[3] in spec_group
    assert str(refused.value).endswith("then run configbags gen")


def test_plan_names_what_the_schema_lacks_and_exits_2(lacking: dict[str, ModuleType],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    package = _package(lacking)
    with process_context(package).restoring():
        argv = ["--package", package, "--model-config", LLAMA, "--device-memory", "80GiB"]
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("configbags plan: error: this schema cannot drive the KV configurator")
    # plan knows the role it writes back from, so a missing write-back leaf says how to own
    # it; mem_fraction_static is decided by the schema (a rule or a fallback), not written back
    assert "declare mem_fraction_static (optional float) in namespace schedule" in err
    assert all(problem in err for problem in LACKING)


# -- the schema `configbags init` scaffolds ------------------------------------------------

BIN = Path(sys.executable).parent


def _run(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}  # the engine's package is not installed
    return subprocess.run(list(argv), cwd=project, env=env, capture_output=True, text=True, timeout=180, check=False)


# Everything plan asks of the scaffold, as it says it (one line each)
SCAFFOLD_LACKS = [
    "declare context_length (optional int, owner: worker, override: load_time) in namespace model",
    "declare kv_cache_dtype (str, owner: worker, override: load_time) in namespace model",
    "declare page_size (optional int) in namespace schedule",
    "declare mem_fraction_static (optional float) in namespace schedule",
    "declare swa_full_tokens_ratio (float) in namespace schedule",
    "declare mamba_full_memory_ratio (float) in namespace schedule",
    "add role worker to roles.yaml: the role that loads the model and writes the KV decisions back",
    "max_running_requests (owner scheduler, override runtime) is written back at load time by role worker: "
    "give it `owner: worker` or `writers: [worker]`",
]


@pytest.mark.slow  # init, gen and plan as processes
def test_plan_on_an_init_scaffold_names_everything_then_plans(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acme-engine"\nversion = "0.1"\n')
    (tmp_path / "acme_engine").mkdir()
    (tmp_path / "acme_engine" / "__init__.py").write_text("")
    configbags = str(BIN / "configbags")
    assert _run(tmp_path, configbags, "init").returncode == 0
    assert _run(tmp_path, configbags, "gen").returncode == 0
    plan = [configbags, "plan", "--model-config", LLAMA, "--device-memory", "80GiB"]
    refused = _run(tmp_path, *plan)
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    problems = [line.removeprefix("  - ") for line in refused.stderr.splitlines() if line.startswith("  - ")]
    assert problems == SCAFFOLD_LACKS
    # Doing what it says is enough: the same command then plans.
    schema = tmp_path / "schema"
    worker = {"owner": "worker", "override": "load_time"}
    _edit(schema, "model", {"context_length": _leaf("optional int", None, **worker),
                            "kv_cache_dtype": _leaf("str", "auto", choices=["auto", "bf16", "fp8_e4m3"], **worker)})
    # the schema decides the page and the memory fraction (a fallback, a default): the
    # planner guesses neither
    _edit(schema, "schedule", {"page_size": _leaf("optional int", None, fallback=1),
                               "mem_fraction_static": _leaf("optional float", 0.88),
                               "swa_full_tokens_ratio": _leaf("float", 0.8),
                               "mamba_full_memory_ratio": _leaf("float", 0.9)})
    schedule = yaml.safe_load((schema / "namespaces" / "schedule.yaml").read_text())
    schedule["leaves"]["max_running_requests"]["writers"] = ["worker"]
    (schema / "namespaces" / "schedule.yaml").write_text(yaml.safe_dump(schedule, sort_keys=False))
    roles = yaml.safe_load((schema / "roles.yaml").read_text())
    roles["roles"]["worker"] = {"doc": "Loads the model and sizes the KV cache.", "reads": "all"}
    (schema / "roles.yaml").write_text(yaml.safe_dump(roles, sort_keys=False))
    regen = _run(tmp_path, configbags, "gen")
    assert regen.returncode == 0, regen.stderr
    planned = _run(tmp_path, *plan, "--json")
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["plan"]["kv_cache_dtype"] == "bf16"
