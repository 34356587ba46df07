"""Importer v2: the CLI survives the import (dest-less aliased flags, nargs lists, choices
from module constants, sentinels), the flag-spelling rule is the generator's own, and
what is imported generates."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from configbags.codegen.__main__ import main as gen_main
from configbags.migrate.importer import import_dataclass, main

ENGINE = textwrap.dedent(
    '''\
    import argparse
    import dataclasses
    import sys
    from dataclasses import dataclass
    from typing import List, Optional

    BACKENDS = {"flashinfer": 1, "triton": 2}
    EXTRA_BACKENDS = ["torch_native"]
    QUANT = ["fp8", "awq"]


    @dataclass
    class ServerArgs:
        tp_size: int = 1
        pp_size: int = 1
        attention_backend: Optional[str] = None
        quantization: Optional[str] = None
        cuda_graph_bs: Optional[list] = None
        lora_paths: Optional[List[str]] = None
        max_queued_requests: int = sys.maxsize
        enable_cache: Optional[bool] = None

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1)
            parser.add_argument("--pipeline-parallel-size", "--pp-size", type=int, default=1)
            parser.add_argument("--attention-backend", choices=[*BACKENDS.keys(), *EXTRA_BACKENDS])
            parser.add_argument("--quantization", choices=QUANT + ["gptq"])
            parser.add_argument("--cuda-graph-bs", type=int, nargs="+")
            parser.add_argument("--lora-paths", nargs="*")
            parser.add_argument("--max-queued-requests", type=int, default=sys.maxsize)
            parser.add_argument("--enable-cache", action="store_true", default=None)

        @classmethod
        def from_cli_args(cls, args):
            args.tp_size = args.tensor_parallel_size
            return cls(pp_size=args.pipeline_parallel_size, **{
                f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)
            })
    '''
)


def _leaves(source: str = ENGINE) -> dict[str, dict[str, object]]:
    result = import_dataclass(source, "ServerArgs", {})
    return {name: spec for ns in result.leaves.values() for name, spec in ns.items()}


def test_dest_less_flags_reach_their_field_with_their_aliases() -> None:
    leaves = _leaves()
    # copied in from_cli_args (assignment and keyword), so the flags stay on the leaf
    assert leaves["tp_size"]["cli"] == {"flag": "--tensor-parallel-size", "aliases": ["--tp-size"]}
    assert leaves["pp_size"]["cli"] == {"flag": "--pipeline-parallel-size", "aliases": ["--pp-size"]}


def test_nargs_lists_choices_from_constants_and_sentinels() -> None:
    leaves = _leaves()
    assert leaves["cuda_graph_bs"]["type"] == "optional list[int]"
    assert leaves["lora_paths"]["type"] == "optional list[str]"
    assert leaves["attention_backend"]["choices"] == ["flashinfer", "triton", "torch_native"]
    assert leaves["quantization"]["choices"] == ["fp8", "awq", "gptq"]
    assert (leaves["max_queued_requests"]["type"], leaves["max_queued_requests"]["default"]) == ("int", sys.maxsize)


BARE = textwrap.dedent(
    '''\
    from dataclasses import dataclass
    from typing import List, Optional

    ALGORITHMS = ["EAGLE", "NGRAM"]


    @dataclass
    class ServerArgs:
        speculative_algorithm: Optional[str] = None
        draft_tokens: int = 0
        kv_cache_dtype: str = "auto"
        log_every: Optional[int] = None
        lora_paths: Optional[List[str]] = None
        quantization: Optional[str] = None
        cache_dtype: str = "auto"

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--speculative-algorithm", type=str, nargs="?", const="EAGLE",
                                choices=ALGORITHMS, default=None)
            parser.add_argument("--draft-tokens", type=int, nargs="?", const="4", default=0)
            parser.add_argument("--fp8-kv", dest="kv_cache_dtype", action="store_const",
                                const="fp8_e4m3", default="auto")
            parser.add_argument("--log-every", type=int, nargs="?", default=None)
            parser.add_argument("--lora-paths", type=str, nargs="*", default=None)
            parser.add_argument("--quantization", nargs="?", const="gptq", choices=["fp8", "awq"])
            parser.add_argument("--cache-dtype", nargs="?")
    '''
)


def test_a_bare_const_flag_keeps_its_meaning() -> None:
    result = import_dataclass(BARE, "ServerArgs", {})
    leaves = {name: spec for ns in result.leaves.values() for name, spec in ns.items()}
    assert leaves["speculative_algorithm"]["cli"] == {"const": "EAGLE"}
    assert leaves["draft_tokens"]["cli"] == {"const": 4}  # argparse runs a str const through type=
    assert leaves["kv_cache_dtype"]["cli"] == {"flag": "--fp8-kv", "const": "fp8_e4m3", "nargs": 0}
    assert leaves["log_every"]["cli"] == {"const": None}  # nargs="?" alone: the bare flag is None
    assert leaves["lora_paths"]["cli"] == {"nargs": "*"}
    warnings = "\n".join(loss.render() for loss in result.losses)
    # a const the leaf cannot hold is left out, and listed as lost
    assert "quantization" not in str(leaves["quantization"].get("cli"))
    assert "the bare flag `--quantization` stores const 'gptq', which the leaf cannot hold" in warnings
    assert "the bare flag `--cache-dtype` stores const None, which the leaf cannot hold" in warnings
    assert "speculative_algorithm" not in warnings and "lora_paths" not in warnings


def test_bare_flags_parse_as_the_legacy_parser_does(tmp_path: Path) -> None:
    source = tmp_path / "server_args.py"
    source.write_text(BARE)
    out = tmp_path / "schema"
    assert main([f"{source}:ServerArgs", "--out", str(out)]) == 1  # two consts lost: nothing written
    assert not out.exists()
    assert main([f"{source}:ServerArgs", "--out", str(out), "--accept-loss"]) == 0
    assert gen_main(["--schema", str(out), "--out", str(tmp_path / "bare_cfg")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        from bare_cfg.server_args import ServerArgs  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    namespace: dict[str, object] = {}
    exec(compile(BARE, str(source), "exec"), namespace)
    legacy = argparse.ArgumentParser()
    namespace["ServerArgs"].add_cli_args(legacy)  # type: ignore[attr-defined]
    compared = ("speculative_algorithm", "draft_tokens", "kv_cache_dtype", "log_every", "lora_paths")
    for argv in (
        [], ["--speculative-algorithm"], ["--speculative-algorithm", "NGRAM"], ["--draft-tokens"],
        ["--draft-tokens", "7"], ["--fp8-kv"], ["--log-every"], ["--log-every", "3"], ["--lora-paths"],
        ["--lora-paths", "a", "b"], ["--speculative-algorithm", "--lora-paths", "--fp8-kv", "--log-every"],
    ):
        old = vars(legacy.parse_args(argv))
        new = ServerArgs.from_cli(argv, environ={}).to_dict()
        assert {k: old[k] for k in compared} == {k: new[k] for k in compared}, argv


OPTIONAL_BOOL = textwrap.dedent(
    '''\
    from dataclasses import dataclass
    from typing import Optional


    @dataclass
    class ServerArgs:
        cache: Optional[bool] = None
        no_cache: bool = False

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--cache", action="store_true", default=None, help="Cache.")
            parser.add_argument("--no-cache", action="store_true", help="Never cache.")
    '''
)


def test_an_optional_bool_with_a_no_flag_imports_and_generates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The generator gives every bool leaf, optional or not, a --no- twin; the importer uses
    # the same rule, so the clash with --no-cache is settled at import, not at gen.
    source = tmp_path / "server_args.py"
    source.write_text(OPTIONAL_BOOL)
    out = tmp_path / "schema"
    assert main([f"{source}:ServerArgs", "--out", str(out), "--accept-loss"]) == 0
    assert "lost: no_cache: flag --no-cache is reserved or used by another leaf" in capsys.readouterr().err
    assert gen_main(["--schema", str(out), "--out", str(tmp_path / "pkg")]) == 0


def test_the_imported_cli_parses_the_legacy_spellings(tmp_path: Path) -> None:
    source = tmp_path / "server_args.py"
    source.write_text(ENGINE)
    out = tmp_path / "schema"
    assert main([f"{source}:ServerArgs", "--out", str(out)]) == 0
    package = tmp_path / "engine_cfg"
    assert gen_main(["--schema", str(out), "--out", str(package)]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        from engine_cfg.server_args import ServerArgs  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    record = ServerArgs.from_cli_args(parser.parse_args(
        ["--tensor-parallel-size", "2", "--pp-size", "3", "--cuda-graph-bs", "1", "2", "--lora-paths", "a"]
    ))
    assert (record.tp_size, record.pp_size, record.cuda_graph_bs, record.lora_paths) == (2, 3, (1, 2), ("a",))
    assert record.max_queued_requests == sys.maxsize


FIXTURE = Path(__file__).parent / "fixtures" / "legacy_engine"


def test_a_proposed_mapping_gives_real_namespaces_and_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = FIXTURE / "legacy_engine" / "server_args.py"
    proposal = tmp_path / "mapping.yaml"
    command = [f"{source}:ServerArgs", "--out", str(tmp_path / "schema")]
    assert main([*command, "--propose-mapping", str(proposal), "--engine-root", str(FIXTURE / "legacy_engine")]) == 0
    assert "edit it, then import with --mapping" in capsys.readouterr().out
    data = yaml.safe_load(proposal.read_text())
    # from the section comments of the dataclass
    assert data["leaves"]["tp_size"] == "parallelism"
    assert data["leaves"]["model_path"] == "model"
    assert data["leaves"]["lora_paths"] == "lora"
    # writes found in the engine become policy suggestions, with their evidence
    assert data["policies"]["page_size"] == {
        "override": "load_time", "owner": "model_config", "evidence": ["model_config.py:10"],
    }
    assert data["policies"]["attention_backend"]["evidence"] == [
        "draft_worker.py:14", "draft_worker.py:18", "model_config.py:12",
    ]
    assert not (tmp_path / "schema").exists()  # proposing writes nothing else

    assert main([*command, "--mapping", str(proposal)]) == 0
    namespaces = sorted(p.stem for p in (tmp_path / "schema" / "namespaces").iterdir())
    assert {"model", "parallelism", "scheduling", "lora"} <= set(namespaces)
    # only the fields under "# Not yet sorted into a namespace" (a keyword) stay unsorted
    legacy = yaml.safe_load((tmp_path / "schema" / "namespaces" / "legacy.yaml").read_text())
    assert sorted(legacy["leaves"]) == ["random_seed", "watchdog_timeout"]
    schedule = yaml.safe_load((tmp_path / "schema" / "namespaces" / "scheduling.yaml").read_text())
    assert schedule["leaves"]["page_size"]["override"] == "load_time"
    assert gen_main(["--schema", str(tmp_path / "schema"), "--out", str(tmp_path / "pkg")]) == 0


def test_the_proposed_leaves_are_one_per_line_and_import_as_they_stand(tmp_path: Path) -> None:
    source = FIXTURE / "legacy_engine" / "server_args.py"
    proposal = tmp_path / "proposed.yaml"
    assert main([f"{source}:ServerArgs", "--out", str(tmp_path / "schema"), "--propose-mapping", str(proposal)]) == 0
    text = proposal.read_text()
    assert "leaves: {" not in text  # a block mapping, not one long flow line
    assert "\nleaves:\n  model_path: model\n  tokenizer_path: model\n" in text
    leaves = yaml.safe_load(text)["leaves"]
    assert all(f"\n  {name}: {namespace}\n" in text for name, namespace in leaves.items())
    assert main([f"{source}:ServerArgs", "--out", str(tmp_path / "schema"), "--mapping", str(proposal)]) == 0



def test_propose_mapping_never_overwrites_the_source_or_an_edited_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "sa.py"
    source.write_text("from dataclasses import dataclass\n\n\n@dataclass\nclass ServerArgs:\n    tp_size: int = 1\n")
    before = source.read_text()
    propose = [f"{source}:ServerArgs", "--out", str(tmp_path / "schema"), "--propose-mapping"]
    assert main([*propose, str(source)]) == 2  # a usage error: the source itself as the output
    assert "the record's own source file" in capsys.readouterr().err and source.read_text() == before
    proposal = tmp_path / "proposed.yaml"
    assert main([*propose, str(proposal)]) == 0
    assert main([*propose, str(proposal)]) == 0  # the same proposal again: nothing lost
    proposal.write_text(proposal.read_text() + "# my edit\n")
    assert main([*propose, str(proposal)]) == 1
    assert "exists and differs" in capsys.readouterr().err and proposal.read_text().endswith("# my edit\n")
    assert main([*propose, str(proposal), "--force"]) == 0
    assert not proposal.read_text().endswith("# my edit\n")

def _stderr_warnings(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if "imported with override: startup" in line]


def test_a_written_leaf_imported_as_startup_is_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = FIXTURE / "legacy_engine" / "server_args.py"
    engine = ["--engine-root", str(FIXTURE / "legacy_engine")]
    shipped = FIXTURE / "mapping.yaml"
    flat = tmp_path / "flat.yaml"  # the shipped mapping without its policies
    flat.write_text(yaml.safe_dump(yaml.safe_load(shipped.read_text())["leaves"]))

    def imported(*extra: str) -> list[str]:
        out = tmp_path / f"schema{len(list(tmp_path.iterdir()))}"
        assert main([f"{source}:ServerArgs", "--out", str(out), *extra]) == 0
        return _stderr_warnings(capsys)

    # the shipped mapping gives the written leaves the proposal's policies: nothing to say
    assert imported("--mapping", str(shipped), *engine) == []
    # without them, each written leaf is named with where it is written and the fix
    warnings = imported("--mapping", str(flat), *engine)
    assert [w.split(" is imported")[0] for w in warnings] == ["warning: attention_backend", "warning: page_size"]
    assert "(model_config.py:10 under " in warnings[1]
    assert f"under `policies:` in {flat}" in warnings[1] and "--resolution FILE:QUALNAME" in warnings[1]
    # the resolution phase's writes are folded in before publish: page_size may stay startup
    resolution = ["--resolution", f"{FIXTURE / 'legacy_engine' / 'model_config.py'}:adjust_for_model"]
    warnings = imported("--mapping", str(flat), *engine, *resolution)
    assert len(warnings) == 1 and "draft_worker.py:14, draft_worker.py:18 under" in warnings[0]
    # and the proposal leaves it out too
    proposal = tmp_path / "proposed.yaml"
    assert main([f"{source}:ServerArgs", "--out", str(tmp_path / "x"), "--propose-mapping", str(proposal),
                 *engine, *resolution]) == 0
    assert set(yaml.safe_load(proposal.read_text())["policies"]) == {"attention_backend"}
    # without --engine-root nothing is scanned, so nothing is said
    assert imported("--mapping", str(flat)) == []


def test_a_second_import_never_overwrites_hand_edits_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = FIXTURE / "legacy_engine" / "server_args.py"
    out = tmp_path / "schema"
    command = [f"{source}:ServerArgs", "--out", str(out), "--mapping", str(FIXTURE / "mapping.yaml")]
    assert main(command) == 0
    assert main(command) == 0  # the same import again changes nothing, so it goes through
    assert "overwrote" not in capsys.readouterr().out
    model, serving = out / "namespaces" / "model.yaml", out / "namespaces" / "serving.yaml"
    edited = model.read_text().replace("override: startup", "override: runtime", 1)
    model.write_text(edited)
    serving.write_text(serving.read_text() + "# a note\n")
    assert main(command) == 1
    err = capsys.readouterr().err
    assert "2 schema files under" in err and "nothing was written" in err and "--force" in err
    assert f"\n  {model}\n  {serving}\n" in err
    assert model.read_text() == edited
    assert main([*command, "--force"]) == 0
    out_text = capsys.readouterr().out
    assert f"overwrote {model} (--force)" in out_text and f"overwrote {serving} (--force)" in out_text
    assert "override: runtime" not in model.read_text()
