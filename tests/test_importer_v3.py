"""Importer v3: records as engines write them now. `Annotated` fields carry the help, the
flag metadata and the namespace (tests/fixtures/annotated_engine, with a dataclass-driven
parser); defaults and flag keywords come from config dataclasses in other modules
(tests/fixtures/config_engine, vLLM's shape). Each fixture is imported, generated,
cli-checked against its corpus and held by the ratchet; what cannot be carried over is
listed, and the import refuses to write it without --accept-loss."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.annotated import MetadataNames
from configbags.migrate.astvalues import Evaluator, ModuleIndex, parse_module
from configbags.migrate.cli import main as ratchet_main
from configbags.migrate.clicheck import main as cli_check_main
from configbags.migrate.importer import import_dataclass, main

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _leaves(schema: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((schema / "namespaces").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for name, spec in (data["leaves"] or {}).items():
            out[name] = {**spec, "namespace": data["namespace"]}
    return out


def _engine(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def held_by_the_ratchet(root: Path, package: str, capsys: pytest.CaptureFixture[str], *exclude: str) -> None:
    """`ratchet init` is green on the imported engine, and `fix` moves its reads."""
    schema = root / "schema"
    init = ["init", "--schema", str(schema), "--root", str(root / package)]
    for path in exclude:
        init += ["--exclude", path]
    assert ratchet_main(init) == 0
    allowlist = yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"]
    assert allowlist, "the engine's raw reads are baselined"
    capsys.readouterr()
    assert ratchet_main(["check", "--schema", str(schema)]) == 0, capsys.readouterr()
    # ... and fixed: the reads of the process record move onto the generated accessors
    accessors = f"{package}.config_bags.accessors"
    assert ratchet_main(["fix", "--schema", str(schema), "--accessors-module", accessors]) == 0
    assert "ratchet fix: rewrote" in capsys.readouterr().out
    assert gen_main(["--schema", str(schema), "--out", str(root / package / "config_bags")]) == 0
    capsys.readouterr()
    assert ratchet_main(["check", "--schema", str(schema)]) == 0, capsys.readouterr()
    rewritten = [p for p in (root / package).rglob("*.py") if "from " + accessors + " import cfg" in p.read_text()]
    assert rewritten
    for path in rewritten:
        compile(path.read_text(), str(path), "exec")


@pytest.mark.slow
def test_an_annotated_record_with_a_dataclass_driven_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _engine(tmp_path, "annotated_engine")
    monkeypatch.chdir(root)
    # the metadata names come from the engine's pyproject.toml ([tool.configbags.import])
    assert main(["annotated_engine/server_args.py:ServerArgs", "--out", "schema"]) == 0
    err = capsys.readouterr().err
    assert "lost:" not in err, err
    leaves = _leaves(root / "schema")
    # every field a leaf with its own type, help, flags, choices and namespace
    assert {n: (s["type"], s["namespace"]) for n, s in leaves.items() if n in (
        "dtype", "tp_size", "page_size", "max_total_tokens", "cuda_graph_bs", "enable_metrics", "stop_words")} == {
        "dtype": ("str", "model"), "tp_size": ("int", "parallel"), "page_size": ("int", "schedule"),
        "max_total_tokens": ("optional int", "schedule"), "cuda_graph_bs": ("optional list[int]", "kernel"),
        "enable_metrics": ("bool", "observability"), "stop_words": ("list[str]", "serving"),
    }
    assert leaves["dtype"]["choices"] == ["auto", "float16", "bfloat16"]
    assert leaves["attention_backend"]["choices"] == ["flashinfer", "triton", "fa3"]  # a module constant
    assert leaves["page_size"]["choices"] == [1, 16, 64]
    assert leaves["tp_size"]["help"] == "Tensor-parallel width."
    assert leaves["tp_size"]["cli"] == {"aliases": ["--tensor-parallel-size"]}
    # the hand-written add_argument is merged in: its old spelling kept
    assert leaves["model_path"]["cli"] == {"aliases": ["--model"]}
    # computed defaults: a subscript of a module constant, arithmetic on one
    assert (leaves["page_size"]["default"], leaves["chunked_prefill_size"]["default"],
            leaves["max_prefill_tokens"]["default"]) == (1, 8192, 10_000_000)
    # the deprecated spelling is an old name, never the leaf's only flag
    assert leaves["incremental_streaming_output"]["renamed_from"] == ["stream_output"]
    assert "cli" not in leaves["incremental_streaming_output"]
    assert leaves["api_key"]["cli"] is False  # Arg(cli=False): the helper skips it
    assert gen_main(["--schema", "schema", "--out", "annotated_engine/config_bags"]) == 0
    capsys.readouterr()
    check = ["--legacy", "annotated_engine.server_args:ServerArgs", "--package", "annotated_engine.config_bags",
             "--corpus", "cli_corpus.txt", "--path", str(root), "--import-engine"]
    try:
        assert cli_check_main(check) == 0, capsys.readouterr().out
    finally:
        for name in [m for m in sys.modules if m.startswith("annotated_engine")]:
            del sys.modules[name]
    assert "0 differences" in capsys.readouterr().out
    held_by_the_ratchet(root, "annotated_engine", capsys, "annotated_engine/server_args.py")


@pytest.mark.slow
def test_defaults_and_flag_kwargs_from_config_dataclasses_in_other_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _engine(tmp_path, "config_engine")
    monkeypatch.chdir(root)
    assert main(["config_engine/engine_args.py:EngineArgs", "--out", "schema"]) == 0
    assert "lost:" not in capsys.readouterr().err
    leaves = _leaves(root / "schema")
    # defaults followed into the config modules: `ModelConfig.x`, `get_field(CacheConfig, "x")`,
    # a subscript of that module's constant, arithmetic on another, a default_factory
    assert {n: leaves[n]["default"] for n in (
        "model", "block_size", "gpu_memory_utilization", "cpu_offload_bytes", "cuda_graph_sizes",
        "distributed_executor_backend")} == {
        "model": "facebook/opt-125m", "block_size": 16, "gpu_memory_utilization": 0.9, "cpu_offload_bytes": 0,
        "cuda_graph_sizes": [1, 2, 4], "distributed_executor_backend": "mp",
    }
    # flag kwargs built from the config fields: Literal choices (through type aliases), docstrings
    assert leaves["dtype"]["choices"] == ["auto", "half", "float16", "bfloat16", "float32"]
    assert leaves["kv_cache_dtype"]["choices"] == ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]
    assert leaves["distributed_executor_backend"]["choices"] == ["ray", "mp", "uni"]
    assert leaves["block_size"]["help"] == "Size of a contiguous cache block in number of tokens."
    assert (leaves["enable_prefix_caching"]["type"], leaves["cuda_graph_sizes"]["type"]) == ("optional bool",
                                                                                              "list[int]")
    # short flags kept as aliases; each field in its config class's namespace
    assert leaves["tensor_parallel_size"]["cli"] == {"aliases": ["-tp"]}
    assert {leaves[n]["namespace"] for n in ("model", "dtype")} == {"model"}
    assert (leaves["block_size"]["namespace"], leaves["tensor_parallel_size"]["namespace"],
            leaves["max_num_seqs"]["namespace"]) == ("cache", "parallel", "legacy")
    assert gen_main(["--schema", "schema", "--out", "config_engine/config_bags"]) == 0
    capsys.readouterr()
    check = ["--legacy", "config_engine.engine_args:EngineArgs", "--package", "config_engine.config_bags",
             "--corpus", "cli_corpus.txt", "--path", str(root), "--import-engine"]
    try:
        assert cli_check_main(check) == 0, capsys.readouterr().out
    finally:
        for name in [m for m in sys.modules if m.startswith("config_engine")]:
            del sys.modules[name]
    assert "0 differences" in capsys.readouterr().out
    held_by_the_ratchet(root, "config_engine", capsys, "config_engine/engine_args.py")


LOSSY = textwrap.dedent(
    '''\
    import argparse
    from dataclasses import dataclass
    from typing import Annotated, Optional, Union

    from meta import Arg, Doc


    class LoRAPathAction(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            setattr(namespace, self.dest, {v.split("=")[0]: v.split("=")[1] for v in values})


    def nullable_str(value):
        if value in ("None", ""):
            return None
        return value


    def parse_size(value):
        return int(value.rstrip("k")) * 1024


    @dataclass
    class ServerArgs:
        either: Union[int, str] = 1
        scales: list[float] = None
        lora_paths: Optional[list[str]] = None
        quantization_param_path: Optional[str] = None
        size: int = 0
        doc: Annotated[int, Doc("Documented.")] = 0
        stream_interval: Annotated[int, Arg(deprecated=True)] = 1
        mode: Annotated[str, Arg(choices=MODES, unknown=1)] = "a"

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--either", type=int)
            parser.add_argument("--lora-paths", nargs="*", action=LoRAPathAction)
            parser.add_argument("--quantization-param-path", type=nullable_str)
            parser.add_argument("--size", type=parse_size)
    '''
)


def test_what_is_lost_is_listed_with_the_field_and_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = import_dataclass(LOSSY, "ServerArgs", {}, names=MetadataNames(flag=frozenset({"Arg"})),
                              defaults={"scales": None})
    lost = {(loss.field, loss.reason.split(";")[0]) for loss in result.losses}
    assert ("either", "the union `int | str` has no schema type") in lost
    assert ("scales", "a list of `float` has no schema type (lists hold int or str)") in lost
    reasons = "\n".join(loss.render() for loss in result.losses)
    assert "lora_paths: the custom action `LoRAPathAction` decides what --lora-paths stores" in reasons
    assert "quantization_param_path: the type converter `nullable_str` turns 'None'-like strings into None" in reasons
    assert "size: the type converter `parse_size` cannot be seen through" in reasons
    assert "doc: annotation metadata `Doc('Documented.')` is not understood; if `Doc` is the engine's" in reasons
    assert "mode: flag metadata keyword `unknown=1` is not understood" in reasons
    assert "mode: choices `MODES` are not constant" in reasons
    leaves = {n: s for ns in result.leaves.values() for n, s in ns.items()}
    assert leaves["stream_interval"]["deprecated"] == {"since": "0"}  # Arg(deprecated=True) with no spelling
    # the command line refuses to write it, naming the way out; --accept-loss writes it
    source = tmp_path / "server_args.py"
    source.write_text(LOSSY)
    out = tmp_path / "schema"
    command = [f"{source}:ServerArgs", "--out", str(out), "--metadata", "flag=Arg", "--default", "scales=null"]
    assert main(command) == 1 and not out.exists()
    err = capsys.readouterr().err
    assert "lost: either: the union `int | str` has no schema type" in err and "--accept-loss" in err
    assert main([*command, "--metadata", "help=Doc", "--accept-loss"]) == 0
    assert _leaves(out)["doc"]["help"] == "Documented."  # Doc named as the help class: read
    assert gen_main(["--schema", str(out), "--out", str(tmp_path / "pkg")]) == 0


def test_annotated_is_unwrapped_everywhere_and_unknown_metadata_names_the_fix() -> None:
    source = textwrap.dedent(
        '''\
        from dataclasses import dataclass
        from typing import Annotated, List, Optional

        @dataclass
        class ServerArgs:
            a: Optional[Annotated[int, "Inner help."]] = None
            b: "Annotated[List[Annotated[str, 'x']], 'Listed.']" = None
            c: Annotated[Annotated[float, "Nested."], Arg("--see")] = 1.0
        '''
    )
    result = import_dataclass(source, "ServerArgs", {})
    leaves = result.leaves["legacy"]
    assert {n: (s["type"], s["help"]) for n, s in leaves.items()} == {
        "a": ("optional int", "Inner help."), "b": ("optional list[str]", "Listed."), "c": ("float", "Nested."),
    }
    assert [loss.render().split(";")[0] for loss in result.losses] == [
        "c: annotation metadata `Arg('--see')` is not understood"]
    named = import_dataclass(source, "ServerArgs", {}, names=MetadataNames.of({"flag": "Arg"}, "t"))
    assert not named.losses and named.leaves["legacy"]["c"]["cli"] == {"flag": "--see"}


def test_constant_expressions_are_computed_and_other_modules_followed(tmp_path: Path) -> None:
    package = tmp_path / "eng"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "consts.py").write_text("KB = 1024\nSIZES = {'small': 2 * KB}\n")
    (package / "cfg.py").write_text(
        "from dataclasses import dataclass, field\nfrom .consts import KB\n\n"
        "@dataclass\nclass CacheConfig:\n    block: int = 4 * KB\n    names: list = field(default_factory=list)\n"
    )
    (package / "args.py").write_text("")
    module = parse_module(
        "import eng.consts\nfrom eng.consts import SIZES, KB\nfrom eng import cfg\nfrom .cfg import CacheConfig\n"
        "LIMIT = -(2 ** 10)\n",
        package / "args.py",
    )
    evaluator = Evaluator(module)

    def value(text: str) -> Any:
        import ast

        return evaluator.value(ast.parse(text, mode="eval").body)

    assert value("10 * 1000 * 1000") == 10_000_000
    assert value("SIZES['small'] // 2 + KB") == 2048
    assert value("LIMIT") == -1024
    assert value("CacheConfig.block") == 4096
    assert value("cfg.CacheConfig.block") == 4096
    assert value("eng.consts.KB + 1") == 1025  # `import eng.consts`: a submodule by attribute
    assert value('get_field(CacheConfig, "names")') == []
    assert repr(value("os.cpu_count()")) == "MISSING"  # run time: never guessed
    assert repr(value("CacheConfig.nothing")) == "MISSING"
    assert ModuleIndex.around(package / "args.py").roots == (tmp_path.resolve(),)


def test_the_proposal_takes_the_records_namespaces_before_comment_words(tmp_path: Path) -> None:
    source = tmp_path / "server_args.py"
    source.write_text(textwrap.dedent(
        '''\
        from dataclasses import dataclass
        from typing import Annotated

        @dataclass
        class ServerArgs:
            # TODO: whether this stays here
            tp_size: Annotated[int, "TP.", NS("parallel")] = 1
            # none of these are sorted yet
            page_size: Annotated[int, "Page.", NS("schedule")] = 1
            lora_rank: int = 8
            lora_alpha: int = 16
        '''
    ))
    proposal = tmp_path / "proposed.yaml"
    assert main([f"{source}:ServerArgs", "--out", str(tmp_path / "s"), "--propose-mapping", str(proposal),
                 "--metadata", "namespace=NS"]) == 0
    leaves = yaml.safe_load(proposal.read_text())["leaves"]
    assert leaves == {"tp_size": "parallel", "page_size": "schedule", "lora_rank": "lora", "lora_alpha": "lora"}


def test_unions_of_strings_or_numbers_keep_a_schema_type() -> None:
    source = textwrap.dedent(
        '''\
        from dataclasses import dataclass
        from typing import Literal, Optional, Union

        Dtype = Literal["auto", "half"]

        @dataclass
        class ServerArgs:
            dtype: Union[str, Dtype] = "auto"
            ratio: Optional[Union[int, float]] = None
            overrides: Optional[Union[str, dict]] = None
        '''
    )
    result = import_dataclass(source, "ServerArgs", {})
    assert {n: s["type"] for n, s in result.leaves["legacy"].items()} == {
        "dtype": "str", "ratio": "optional float", "overrides": "optional json"}
    assert [loss.field for loss in result.losses] == ["overrides"]  # only the real json one is listed
