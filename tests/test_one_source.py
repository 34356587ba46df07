"""Rules written once, seen from each of their callers: the same tricky input goes through
the importer and the generator (flag spellings: configbags.runtime.spelling), a schema file
and a config file (duplicate keys: yamlsafe.mapping_entries), and a derived value and a
rule (`fn:`: codegen.model.fn_problem), and the record's aliases and the environment's
(Python scopes: configbags.migrate.scopes), and each pair gives the same answer."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from genutil import generate

from configbags.migrate.importer import main as import_main
from configbags.migrate.scan import ScanSettings, scan_source
from configbags.runtime.errors import RecordError

# x__y: its default flag is --x--y. --no-cache: an alias equal to the bool `cache`'s --no-
# twin. --bar: an alias of the bool `foo` whose own twin, --no-bar, is leaf no_bar's flag.
ENGINE = textwrap.dedent(
    '''\
    from dataclasses import dataclass


    @dataclass
    class ServerArgs:
        x__y: int = 1
        cache: bool = False
        no_cache_hint: int = 0
        foo: bool = False
        no_bar: int = 0

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--x--y", type=int, default=1, help="Two underscores.")
            parser.add_argument("--cache", action="store_true", help="Cache.")
            parser.add_argument("--no-cache-hint", "--no-cache", type=int, default=0, help="Hint.")
            parser.add_argument("--foo", "--bar", action="store_true", help="Foo.")
            parser.add_argument("--no-bar", type=int, default=0, help="Bar.")
    '''
)
DROPPED = {"no_cache_hint": "--no-cache", "foo": "--bar"}  # alias -> the leaf that keeps its spelling
KEPT_BY = {"no_cache_hint": "cache", "foo": "no_bar"}


def _imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    source = tmp_path / "engine.py"
    source.write_text(ENGINE)
    schema = tmp_path / "schema"
    # the settled clashes lose spellings: listed, and written only with --accept-loss
    assert import_main([f"{source}:ServerArgs", "--out", str(schema)]) == 1 and not schema.exists()
    assert "lost: foo: aliases ['--bar']" in capsys.readouterr().err
    assert import_main([f"{source}:ServerArgs", "--out", str(schema), "--accept-loss"]) == 0
    return schema, capsys.readouterr().err


def _edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _server_args(package: Path) -> Any:
    sys.path.insert(0, str(package.parent))
    try:
        module = __import__(f"{package.name}.server_args", fromlist=["ServerArgs"])
    finally:
        sys.path.remove(str(package.parent))
    return module.ServerArgs


def test_import_settles_exactly_the_flag_clashes_gen_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema, warnings = _imported(tmp_path, capsys)
    for leaf, alias in DROPPED.items():
        assert f"{leaf}: aliases [{alias!r}] are reserved, used by another leaf or listed twice" in warnings
    package = tmp_path / "one_source_cfg"
    assert generate(schema, package) == 0
    parser = argparse.ArgumentParser()
    ServerArgs = _server_args(package)
    ServerArgs.add_cli_args(parser)
    record = ServerArgs.from_cli_args(parser.parse_args(["--x--y", "3", "--no-cache", "--foo",
                                                         "--no-bar", "2"]))
    assert (record.x__y, record.cache, record.foo, record.no_bar) == (3, False, True, 2)

    # The same aliases put back: the generator refuses each one the importer dropped, on the
    # same leaf, for the same holder (a leaf's own flag wins over another leaf's alias).
    def restore(data: dict[str, Any]) -> None:
        for leaf, alias in DROPPED.items():
            data["leaves"][leaf]["cli"] = {"aliases": [alias]}

    _edit(schema / "namespaces" / "legacy.yaml", restore)
    capsys.readouterr()
    assert generate(schema, tmp_path / "refused") == 2
    err = capsys.readouterr().err
    refused = dict(re.findall(r"leaf '(\w+)': CLI flag --[\w-]+ is also used by leaf '(\w+)'", err))
    assert refused == KEPT_BY, err


def test_an_old_flag_s_no_twin_is_checked_like_any_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `cache` (bool) renamed from `cache_hint` also takes --no-cache-hint, no_cache_hint's own
    # flag: argparse would refuse the generated parser at startup, so gen refuses the schema.
    schema, _ = _imported(tmp_path, capsys)
    _edit(schema / "namespaces" / "legacy.yaml",
          lambda data: data["leaves"]["cache"].update(renamed_from=["cache_hint"]))
    assert generate(schema, tmp_path / "out") == 2
    assert ("leaf 'cache': old flag --no-cache-hint is also used by leaf 'no_cache_hint' -> give the old "
            "spelling its own `flag:`") in capsys.readouterr().err


DUPLICATE = re.compile(r"(\S+):(\d+): .*duplicate key '(\w+)' \(first on line (\d+)\); keep one of them")


def test_a_duplicate_key_reads_the_same_in_a_schema_and_a_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema, _ = _imported(tmp_path, capsys)
    package = tmp_path / "dup_cfg"
    assert generate(schema, package) == 0
    config = tmp_path / "server.yaml"
    config.write_text("x__y: 1\nno_bar: 2\nx__y: 3\n")
    with pytest.raises(RecordError) as caught:
        _server_args(package).from_file(config)
    assert DUPLICATE.search(str(caught.value)).groups() == (str(config), "3", "x__y", "1")  # type: ignore[union-attr]

    namespace = schema / "namespaces" / "legacy.yaml"
    lines = namespace.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.strip() == "default: 1")
    lines.insert(first + 2, "    default: 3\n")
    namespace.write_text("".join(lines))
    capsys.readouterr()
    assert generate(schema, tmp_path / "out") == 2
    found = DUPLICATE.search(capsys.readouterr().err)
    assert found is not None
    assert found.groups() == (namespace.as_posix(), str(first + 3), "default", str(first + 1))


def test_an_explicit_merge_key_is_refused_in_a_schema_and_a_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # codegen's loader used to merge `!!merge <<:` (without the duplicate-key rule); now
    # both loaders are one, and a merge is refused alike
    schema, _ = _imported(tmp_path, capsys)
    package = tmp_path / "merge_cfg"
    assert generate(schema, package) == 0
    refusal = "a YAML merge key (`!!merge <<`) is not read here; write the keys out"
    config = tmp_path / "server.yaml"
    config.write_text("base: &b {x__y: 2}\n!!merge <<: *b\n")
    with pytest.raises(RecordError, match=re.escape(f"{config}:2: cannot read config file: {refusal}")):
        _server_args(package).from_file(config)
    namespace = schema / "namespaces" / "legacy.yaml"
    namespace.write_text(namespace.read_text() + "x_anchor: &b {doc: x}\n!!merge <<: *b\n")
    capsys.readouterr()
    assert generate(schema, tmp_path / "out") == 2
    assert re.search(r"schema/namespaces/legacy\.yaml:\d+: YAML error: " + re.escape(refusal), capsys.readouterr().err)


def test_a_derived_value_and_a_rule_check_their_fn_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema, _ = _imported(tmp_path, capsys)
    _edit(schema / "namespaces" / "legacy.yaml", lambda data: data.update(derived={
        "root": {"type": "int", "fn": "math:isqrt", "inputs": ["x__y", "no_bar"], "help": "A root."}}))
    (schema / "rules.yaml").write_text(yaml.safe_dump({"rules": {"bar_by_memory": {
        "leaf": "no_bar", "fn": "math:isqrt", "inputs": ["gpu.memory_bytes", "x__y"], "help": "A rule."}}}))
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "leaf 'root': fn 'math:isqrt' cannot take the 2 declared input(s) (x__y, no_bar)" in err
    assert "rule bar_by_memory: fn 'math:isqrt' cannot take the 2 declared input(s) (gpu.memory_bytes, x__y)" in err

    # Inputs that fit pass both checks alike (and a rule's `fn` with `inputs` is no error).
    _edit(schema / "namespaces" / "legacy.yaml", lambda data: data["derived"]["root"].update(inputs=["x__y"]))
    _edit(schema / "rules.yaml", lambda data: data["rules"]["bar_by_memory"].update(inputs=["gpu.memory_bytes"]))
    assert generate(schema, tmp_path / "out") == 0, capsys.readouterr().err


# Each scoping rule once for the record (`sa`) and once for the environment (`env`), each
# pair read on one line: both analyses must see the same bindings.
SCOPES = textwrap.dedent(
    '''\
    import os
    from sglang.srt.server_args import get_server_args


    def outer():
        def inner():
            nonlocal sa, env  # bound in outer only after this def
            sa = get_server_args()
            env = os.environ
        sa = env = None
        inner()
        return sa.page_size, env["SGLANG_PAGE_SIZE"]  # read


    for sa2, env2 in ((get_server_args(), os.environ),):  # a loop over a literal
        print(sa2.log_level, env2["SGLANG_LOG_LEVEL"])  # read


    def setter():
        global sa3, env3
        sa3 = get_server_args()
        env3 = os.environ


    def reader():
        return sa3.kv_page, env3["SGLANG_KV_PAGE"]  # read


    class Holder:
        sa4 = get_server_args()
        env4 = os.environ

        def method(self):
            return sa4.tp_size, env4["SGLANG_PAGE_SIZE"]  # a class body does not enclose it
    '''
)


def test_the_record_and_the_environment_are_scoped_alike() -> None:
    settings = ScanSettings(roots=("pkg",), env_vars=("SGLANG_KV_PAGE", "SGLANG_LOG_LEVEL", "SGLANG_PAGE_SIZE"))
    result = scan_source(SCOPES.encode(), settings)
    assert result.problem is None and result.violations == ()
    marked = {n for n, line in enumerate(SCOPES.splitlines(), start=1) if line.endswith("# read")}
    record = {(function, line) for function, leaf, line, *_ in result.reads if not leaf.startswith("$")}
    environment = {(function, line) for function, leaf, line, *_ in result.reads if leaf.startswith("$")}
    assert record == environment
    assert {line for _, line in record} == marked
