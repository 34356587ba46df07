"""`configbags import-dataclass`: AST only, one test per field shape, and the output
passes the generator's loader."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from configbags.codegen.model import load_schema
from configbags.migrate.importer import ImportError_, import_dataclass, main

SOURCE = textwrap.dedent(
    '''\
    import dataclasses
    import os
    from dataclasses import dataclass, field
    from typing import ClassVar, Dict, List, Literal, Optional

    import torch  # never imported: the importer only parses this file

    raise SystemExit("importing this module is an error")

    BACKENDS = ["fa3", "triton"]
    POLICIES = tuple(["fcfs", "lpm"])


    @dataclass
    class ServerArgs:
        model_path: str
        tp_size: int = 1
        mem_fraction: float = 0.9
        enable_metrics: bool = False
        backend: Optional[str] = None
        policy: Literal["fcfs", "lpm"] = "fcfs"
        sizes: List[int] = field(default_factory=lambda: [1, 2])
        names: list[str] = field(default_factory=list)
        extra: Dict[str, int] = field(default_factory=dict)
        port: int | None = None
        cache_dir: str = os.environ.get("CACHE", "/tmp")
        seed: int = 0
        """Seed for every random draw."""
        _private: int = 0
        LIMIT: ClassVar[int] = 3

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--model-path", "--model", type=str, required=True, help="Weights.")
            parser.add_argument("--tp-size", "--tensor-parallel-size", "-tp", type=int, default=ServerArgs.tp_size,
                                help="TP width (default %(default)s).")
            parser.add_argument("--mem-fraction-static", dest="mem_fraction", type=float, help="Share (50%% or more).")
            parser.add_argument("--enable-metrics", action="store_true", help="Export " "metrics.")
            parser.add_argument("--backend", choices=BACKENDS, help=f"Kernels {BACKENDS}.")
            parser.add_argument("--policy", choices=POLICIES, help="Order.")
            parser.add_argument("--sizes", type=int, nargs="+", help="Sizes.")
            parser.add_argument("--orphan", type=int, help="No field.")
    '''
)


@pytest.fixture
def leaves() -> dict[str, dict[str, object]]:
    result = import_dataclass(
        SOURCE, "ServerArgs", {"tp_size": "parallel", "backend": "exec.kernel"}, defaults={"cache_dir": "/tmp"}
    )
    flat = {name: spec for ns in result.leaves.values() for name, spec in ns.items()}
    flat["__namespaces__"] = {name: ns for ns, specs in result.leaves.items() for name in specs}
    flat["__warnings__"] = list(result.warnings)  # type: ignore[assignment]
    return flat


def test_types_defaults_and_requiredness(leaves: dict[str, dict[str, object]]) -> None:
    assert leaves["model_path"] == {
        "type": "str", "required": True, "help": "Weights.", "cli": {"aliases": ["--model"]},
        "owner": "launcher", "override": "startup",
    }
    shapes = {name: (leaves[name]["type"], leaves[name].get("default")) for name in (
        "tp_size", "mem_fraction", "enable_metrics", "backend", "policy", "sizes", "names", "extra", "port", "seed"
    )}
    assert shapes == {
        "tp_size": ("int", 1),
        "mem_fraction": ("float", 0.9),
        "enable_metrics": ("bool", False),
        "backend": ("optional str", None),
        "policy": ("str", "fcfs"),
        "sizes": ("list[int]", [1, 2]),
        "names": ("list[str]", []),
        "extra": ("json", {}),
        "port": ("optional int", None),
        "seed": ("int", 0),
    }
    assert "_private" not in leaves and "LIMIT" not in leaves


def test_flags_aliases_help_and_choices(leaves: dict[str, dict[str, object]]) -> None:
    assert leaves["tp_size"]["cli"] == {"aliases": ["--tensor-parallel-size", "-tp"]}  # short flags kept
    assert leaves["tp_size"]["help"] == "TP width (default 1)."
    assert leaves["mem_fraction"]["cli"] == {"flag": "--mem-fraction-static"}
    assert leaves["mem_fraction"]["help"] == "Share (50% or more)."
    assert leaves["enable_metrics"]["help"] == "Export metrics."
    assert leaves["backend"]["choices"] == ["fa3", "triton"]
    assert leaves["policy"]["choices"] == ["fcfs", "lpm"]
    assert leaves["seed"]["cli"] is False  # no add_argument: not on the command line
    assert leaves["seed"]["help"] == "Seed for every random draw."
    assert leaves["names"]["help"] == "Imported from ServerArgs.names; the source has no help text."


def test_mapping_and_the_legacy_namespace(leaves: dict[str, dict[str, object]]) -> None:
    namespaces = leaves["__namespaces__"]
    assert namespaces["tp_size"] == "parallel"
    assert namespaces["backend"] == "exec.kernel"
    assert namespaces["seed"] == "legacy"


def test_what_cannot_be_read_is_warned_about(leaves: dict[str, dict[str, object]]) -> None:
    warnings = "\n".join(leaves["__warnings__"])
    # a default that is not a literal is taken from --default, never made null
    assert (leaves["cache_dir"]["type"], leaves["cache_dir"]["default"]) == ("str", "/tmp")
    assert "backend: help is not a literal string" in warnings
    assert "flag for 'orphan' has no field; not imported" in warnings


def test_cli_writes_a_schema_the_generator_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "server_args.py"
    source.write_text(SOURCE)
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("tp_size: parallel\nbackend: exec.kernel\nnot_a_field: parallel\n")
    out = tmp_path / "schema"
    command = [f"{source}:ServerArgs", "--out", str(out), "--mapping", str(mapping)]
    assert main(command) == 1  # cache_dir's default is not a literal: stop, naming the fix
    assert "fix: --default cache_dir=VALUE" in capsys.readouterr().err
    assert not out.exists()
    assert main([*command, "--default", "cache_dir=/tmp"]) == 0
    captured = capsys.readouterr()
    assert "import-dataclass: 12 leaves into 3 namespaces" in captured.out
    assert "mapping names 'not_a_field', which is not a field of ServerArgs" in captured.err
    files = sorted(p.name for p in (out / "namespaces").iterdir())
    assert files == ["exec.kernel.yaml", "exec.yaml", "legacy.yaml", "parallel.yaml"]
    assert yaml.safe_load((out / "namespaces" / "exec.yaml").read_text())["leaves"] == {}
    schema = load_schema(out)  # raises SchemaInvalid with every problem if the output is wrong
    assert {leaf.name for leaf in schema.leaves} >= {"tp_size", "backend", "seed", "model_path"}
    assert (out / "roles.yaml").exists()


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "s.py"
    source.write_text(SOURCE)
    assert main([f"{source}:Missing", "--out", str(tmp_path / "o")]) == 2  # an input error, not a loss
    assert "no class 'Missing'" in capsys.readouterr().err
    assert main([str(source), "--out", str(tmp_path / "o")]) == 2


@pytest.mark.parametrize("problem", ["missing source", "missing mapping", "bad mapping", "source does not parse",
                                     "missing corpus", "missing harvest folder", "missing engine root"])
def test_an_input_error_is_one_line_naming_the_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    source = tmp_path / "s.py"
    source.write_text(SOURCE)
    mapping = tmp_path / "mapping.yaml"
    missing = tmp_path / "nope"
    command = [f"{source}:ServerArgs", "--out", str(tmp_path / "o")]
    named = str(source)  # what the one line starts with
    if problem == "missing source":
        command[0] = f"{missing}:ServerArgs"
        named = str(missing)
    elif problem in ("missing mapping", "bad mapping"):
        if problem == "bad mapping":
            mapping.write_text("tp_size: [parallel\n")
        command += ["--mapping", str(mapping)]
        named = str(mapping)
    elif problem == "source does not parse":
        source.write_text("class ServerArgs(:\n")
    else:
        flag = {"missing corpus": "--corpus", "missing harvest folder": "--harvest",
                "missing engine root": "--engine-root"}[problem]
        command += [flag, str(missing)]
        named = f"--engine-root {missing}" if flag == "--engine-root" else str(missing)
    assert main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"configbags import-dataclass: {named}"), err
    assert "Errno" not in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "o").exists()


NASTY = textwrap.dedent(
    '''\
    from dataclasses import dataclass
    from typing import Literal, Optional


    @dataclass
    class ServerArgs:
        mixed: Literal["a", 1] = "a"
        half: int = 0.5
        mode: str = "auto"
        maybe: Optional[str] = None
        flag: bool = False
        pick: Literal["x", None] = None
        knob: dict = None
        ratio: float = 1
        config_file: str = "c.yaml"
        tp: int = 1
        tp_size: int = 1

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--mode", choices=["fast", "slow"], help="Mode.")
            parser.add_argument("--maybe", choices=[None, "x"], help="Maybe.")
            parser.add_argument("--flag", action="store_true", choices=["yes"], help="Flag.")
            parser.add_argument("--ratio", type=float, choices=[1, 2, 1e999], help="Ratio.")
            parser.add_argument("--config-file", "--config", help="Config.")
            parser.add_argument("--tp", "--tp-size", type=int, help="TP.")
            parser.add_argument("--tp-size", type=int, help="TP size.")
    '''
)


def test_a_nasty_dataclass_still_generates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Every shape here used to produce YAML that `make gen` rejects; each is now degraded
    # with a warning, and the generator accepts the result.
    from configbags.codegen.__main__ import main as gen_main

    source = tmp_path / "server_args.py"
    source.write_text(NASTY)
    out = tmp_path / "schema"
    assert main([f"{source}:ServerArgs", "--out", str(out)]) == 1  # choices and aliases lost
    assert "--accept-loss" in capsys.readouterr().err and not out.exists()
    assert main([f"{source}:ServerArgs", "--out", str(out), "--accept-loss"]) == 0
    err = capsys.readouterr().err
    leaves = yaml.safe_load((out / "namespaces" / "legacy.yaml").read_text())["leaves"]
    shapes = {name: (spec["type"], spec.get("default"), spec.get("choices")) for name, spec in leaves.items()}
    assert shapes == {
        "mixed": ("json", "a", None),  # Literal["a", 1]: no choices on json
        "half": ("float", 0.5, None),  # int = 0.5: widened
        "mode": ("str", "auto", ["fast", "slow", "auto"]),  # argparse never checks the default
        "maybe": ("optional str", None, ["x"]),  # choices=[None, "x"]
        "flag": ("bool", False, None),  # no choices on bool
        "pick": ("optional str", None, ["x"]),  # Literal["x", None]
        "knob": ("optional json", None, None),
        "ratio": ("float", 1, [1, 2]),
        "config_file": ("str", "c.yaml", None),
        "tp": ("int", 1, None),
        "tp_size": ("int", 1, None),
    }
    # --config is reserved, and --tp-size is tp_size's own flag: the aliases are left out
    assert "cli" not in leaves["config_file"] and "cli" not in leaves["tp"]
    for expected in (
        "mixed: choices ['a', 1] make no sense for type json; dropped",
        "half: default 0.5 is not an int; type widened to float",
        "mode: default 'auto' is not among the choices",
        "maybe: choices [None] are not str values; dropped",
        "flag: choices ['yes'] make no sense for type bool; dropped",
        "ratio: choices [inf] are not float values; dropped",
        "config_file: aliases ['--config'] are reserved, used by another leaf or listed twice; left out",
        "tp: aliases ['--tp-size'] are reserved, used by another leaf or listed twice; left out",
    ):
        assert expected in err, expected
    assert gen_main(["--schema", str(out), "--out", str(tmp_path / "generated")]) == 0
    assert (tmp_path / "generated" / "server_args.py").exists()


UNREPRESENTABLE = textwrap.dedent(
    """\
    import math
    import sys
    from dataclasses import dataclass


    @dataclass
    class ServerArgs:
        huge: float = 1e999
        sizes: list[int] = (1, "two")
        limit: float = math.inf
        max_queued_requests: int = sys.maxsize
    """
)


def test_a_default_that_cannot_be_held_stops_the_import_naming_each_field() -> None:
    with pytest.raises(ImportError_) as caught:
        import_dataclass(UNREPRESENTABLE, "ServerArgs", {})
    message = str(caught.value)
    assert message.startswith("3 defaults cannot be imported without changing them:")
    for name in ("huge", "sizes", "limit"):
        assert f": {name}: the field's default" in message and f"--default {name}=VALUE" in message
    result = import_dataclass(
        UNREPRESENTABLE, "ServerArgs", {}, defaults={"huge": 1e30, "sizes": [1, 2], "limit": 1e9}
    )
    leaves = result.leaves["legacy"]
    # a big-int sentinel stays an int: None would make an engine's scheduler raise TypeError
    assert (leaves["max_queued_requests"]["type"], leaves["max_queued_requests"]["default"]) == ("int", sys.maxsize)
    assert leaves["sizes"]["default"] == [1, 2]
