"""Json leaves with a declared structure: the CLI takes the whole value and dotted keys,
each key parsed by its own type and checked; config files are checked against it; the
generator refuses a structure that cannot hold; the importer derives one from a config
dataclass."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from genutil import copy_case, generate, import_generated

from configbags.codegen.model import SchemaInvalid, load_schema
from configbags.migrate.importer import import_dataclass

LEAF = """\
  compilation_config:
    type: json
    default: {}
    structure:
      level: int
      backend: str
      custom_ops: list[str]
      cudagraph_sizes: optional list[int]
      inductor: {enabled: bool, threads: optional int}
    help: How the model is compiled.
    cli: {aliases: [-O]}
    owner: boss
    override: startup
"""


def _schema(tmp_path: Path, leaf: str = LEAF) -> Path:
    schema = copy_case("tiny", tmp_path)
    core = schema / "namespaces" / "core.yaml"
    text = core.read_text()
    data = yaml.safe_load(text)
    assert "leaves" in data
    core.write_text(text.replace("leaves:\n", "leaves:\n" + leaf, 1))
    return schema


@pytest.fixture(scope="module")
def server_args(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp_path = tmp_path_factory.mktemp("nested")
    schema = _schema(tmp_path)
    assert generate(schema, tmp_path / "out") == 0
    return import_generated(tmp_path / "out")["server_args"].ServerArgs


def test_the_whole_value_and_dotted_keys_merge(server_args: Any) -> None:
    record = server_args.from_cli([
        "--name", "n", "--compilation-config", '{"level": 2, "inductor": {"threads": 4}}',
        "--compilation-config.inductor.enabled", "true", "--compilation-config.backend=eager",
        "--compilation-config.custom_ops", "a,b", "--compilation-config.cudagraph_sizes", "none",
    ], environ={})
    assert record.to_dict()["compilation_config"] == {
        "level": 2, "backend": "eager", "custom_ops": ["a", "b"], "cudagraph_sizes": None,
        "inductor": {"threads": 4, "enabled": True},
    }
    # a str key stays a string (never forced through JSON); the alias takes dotted keys too
    assert server_args.from_cli(["--name", "n", "-O", '{"backend": "3"}'], environ={}).to_dict()["compilation_config"] == {"backend": "3"}
    assert server_args.from_cli(["--name", "n", "--compilation-config.level", "3"], environ={}).to_dict()["compilation_config"] == {"level": 3}
    assert server_args.from_cli(["--name", "n"], environ={}).to_dict()["compilation_config"] == {}


@pytest.mark.parametrize(("argv", "message"), [
    (["--compilation-config.lvl", "3"], "--compilation-config.lvl: --compilation-config has no key 'lvl' "
                                        "(its keys: backend, cudagraph_sizes, custom_ops, inductor, level)"),
    (["--compilation-config.inductor.fast", "1"], "--compilation-config.inductor has no key 'fast' (its keys: enabled, threads)"),
    (["--compilation-config.level", "high"], "--compilation-config.level: 'high' is not a integer value"),
    (["--compilation-config", '{"level": "high"}'], "--compilation-config.level: 'high' is not of type 'integer'"),
    (["--compilation-config", '{"extra": 1}'], "Additional properties are not allowed ('extra' was unexpected)"),
    (["--compilation-config", "eager"], "--compilation-config: 'eager' is not JSON"),
])
def test_what_does_not_fit_is_a_usage_error_naming_the_key(
    server_args: Any, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        server_args.from_cli(["--name", "n", *argv], environ={})
    assert message in capsys.readouterr().err


@pytest.fixture(scope="module")
def nested_schema(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The schema folder and its generated package, importable by name."""
    tmp_path = tmp_path_factory.mktemp("nested-explain")
    schema = _schema(tmp_path)
    assert generate(schema, tmp_path / "out") == 0
    return schema, import_generated(tmp_path / "out")["server_args"].__name__.rpartition(".")[0]


def test_explain_reads_dotted_keys_as_the_server_does(nested_schema: tuple[Path, str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.explain import main as explain

    _, package = nested_schema
    assert explain(["compilation_config", "--package", package, "--role", "boss", "--name", "n",
                    "--compilation-config.level", "2",
                    "-O.inductor.enabled", "true", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["resolved"] == {"level": 2, "inductor": {"enabled": True}}
    with pytest.raises(SystemExit) as refused:
        explain(["compilation_config", "--package", package, "--role", "boss", "--name", "n",
                 "--compilation-config.lvl", "2"])
    assert refused.value.code == 2
    assert "--compilation-config has no key 'lvl'" in capsys.readouterr().err


def test_lint_reads_dotted_keys_as_the_server_does(nested_schema: tuple[Path, str], tmp_path: Path) -> None:
    from configbags.evolve.lint import lint
    from configbags.evolve.view import load_view

    schema, _ = nested_schema
    view = load_view(schema, cache=False)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n"
                      "python -m eng.launch_server --name n --compilation-config.level 2 -O.backend=eager\n"
                      "python -m eng.launch_server --name n --compilation-config.inductor.enabled \"$ON\"\n"
                      "python -m eng.launch_server --name n --compilation-config.lvl 2\n"
                      "python -m eng.launch_server --name n --compilation-config.level high\n"
                      "python -m eng.launch_server --name n --compilation-config.level 2 stray\n")
    found = [(f.line, f.rule, f.subject) for f in lint([script], view)]
    assert found == [(4, "lint-unknown", "--compilation-config.lvl"), (5, "lint-bad-value", "--compilation-config.level"),
                     (6, "lint-refused", "launch line")], found


def test_a_config_file_is_checked_against_the_structure(server_args: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"compilation_config": {"level": 1}}))
    assert server_args.from_cli(["--name", "n", "--config", str(good)], environ={}).to_dict()["compilation_config"] == {"level": 1}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"compilation_config": {"level": "x"}}))
    with pytest.raises(SystemExit):
        server_args.from_cli(["--name", "n", "--config", str(bad)], environ={})


@pytest.mark.parametrize(("leaf", "message"), [
    (LEAF.replace("type: json", "type: int").replace("default: {}", "default: 0"),
     "a structure describes a json leaf, not a int one"),
    (LEAF.replace("default: {}", "default: {level: x}"), "default {'level': 'x'} does not fit the structure at level"),
    (LEAF.replace("level: int", "level: integer"), "structure.level: 'integer' is not valid"),
])
def test_the_generator_refuses_a_structure_that_cannot_hold(tmp_path: Path, leaf: str, message: str) -> None:
    with pytest.raises(SchemaInvalid) as caught:
        load_schema(_schema(tmp_path, leaf))
    assert message in str(caught.value)


def test_the_importer_derives_a_structure_from_a_config_dataclass() -> None:
    source = textwrap.dedent(
        '''\
        from dataclasses import dataclass, field
        from typing import Optional

        @dataclass
        class InductorConfig:
            enabled: bool = False

        @dataclass
        class CompilationConfig:
            level: int = 0
            backend: str = ""
            sizes: Optional[list[int]] = None
            inductor: InductorConfig = field(default_factory=InductorConfig)

        @dataclass
        class EngineArgs:
            compilation_config: CompilationConfig = field(default_factory=CompilationConfig)
        '''
    )
    leaf = import_dataclass(source, "EngineArgs", {}).leaves["legacy"]["compilation_config"]
    assert (leaf["type"], leaf["default"]) == ("json", {})
    assert leaf["structure"] == {"level": "int", "backend": "str", "sizes": "optional list[int]",
                                 "inductor": {"enabled": "bool"}}
