"""The ratchet's two doors around the accessors: raw environment reads of declared
variables, and operator readbacks (`Context.state`, `configbags.runtime.dist.state_dict`)
in role code. Scanner fixtures checked exactly against their markers, the check's
messages, the two-sided allowlist through init/check/update, the inputs that carry the
declared variables (schema, cached inputs, generated module) and the fix's refusals."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest
import yaml

from configbags.codegen.__main__ import main as gen_main
from configbags.codegen.model import AllowEntry
from configbags.migrate.check import check
from configbags.migrate.cli import main
from configbags.migrate.fix import fix_tree
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_source, scan_tree
from configbags.migrate.scancache import cache_secret
from configbags.migrate.settings import (
    INPUTS_CACHE,
    inputs_seal,
    load_from_generated,
    load_from_schema,
)

DOORS = Path(__file__).parent / "fixtures" / "ratchet_doors"
ENV_LEAVES = {"SGLANG_PAGE_SIZE": "page_size", "SGLANG_KV_PAGE": "page_size", "SGLANG_LOG_LEVEL": "log_level"}
SETTINGS = ScanSettings(roots=("pkg",), env_vars=tuple(sorted(ENV_LEAVES)))
ACCESSORS = {
    "page_size": "get_schedule().page_size",
    "log_level": "get_observability().log_level",
    "tp_size": "get_parallel().tp_size",
}
_MARKER = re.compile(r"#\s*read:(.*)$")


def _expected(text: str) -> set[tuple[int, str]]:
    found: set[tuple[int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER.search(line)
        if match:
            found.update((number, leaf.strip()) for leaf in match.group(1).split(","))
    return found


def _reported(data: bytes, settings: ScanSettings = SETTINGS) -> set[tuple[int, str]]:
    result = scan_source(data, settings)
    assert result.problem is None
    assert result.violations == ()
    return {(line, leaf) for _, leaf, line, *_ in result.reads}


@pytest.mark.parametrize("name", sorted(p.name for p in DOORS.glob("*.py")))
def test_door_fixture_is_reported_exactly(name: str) -> None:
    data = (DOORS / name).read_bytes()
    expected = _expected(data.decode())
    assert expected or name == "negatives.py", "a fixture without markers tests nothing"
    assert _reported(data) == expected


def test_undeclared_variables_are_not_reported() -> None:
    # the same reads, with no variable declared in the schema
    data = (DOORS / "env_reads.py").read_bytes()
    assert not any(leaf.startswith("$") for _, leaf in _reported(data, ScanSettings(roots=("pkg",))))


def test_rows_name_the_function_and_how_the_door_was_opened() -> None:
    source = textwrap.dedent("""\
        import os
        from configbags.generated.accessors import get_context

        class Runner:
            def level(self):
                return os.getenv("SGLANG_LOG_LEVEL")

        def dump():
            return get_context().state
        """)
    rows = scan_source(source.encode(), SETTINGS).reads
    assert [(fn, leaf, line, via, form) for fn, leaf, line, _, _, _, via, form, _ in rows] == [
        ("Runner.level", "$SGLANG_LOG_LEVEL", 6, "environ", "getenv"),
        ("dump", "Context.state", 9, "readback", "state"),
    ]


def test_each_use_of_a_may_alias_is_reported_once_by_the_form_that_fits() -> None:
    source = textwrap.dedent("""\
        import os

        def f(flag):
            read = os.environ if flag else os.getenv
            level = os.environ.setdefault("SGLANG_LOG_LEVEL", "info")
            return read["SGLANG_PAGE_SIZE"], read("SGLANG_LOG_LEVEL"), os.environ.pop("SGLANG_KV_PAGE")
        """)
    rows = scan_source(source.encode(), SETTINGS).reads
    assert [(leaf, line, form) for _, leaf, line, _, _, _, _, form, _ in rows] == [
        ("$SGLANG_LOG_LEVEL", 5, "environ_setdefault"),
        ("$SGLANG_PAGE_SIZE", 6, "environ_subscript"),
        ("$SGLANG_LOG_LEVEL", 6, "getenv"),
        ("$SGLANG_KV_PAGE", 6, "environ_pop"),
    ]


def test_a_pop_names_its_spelling(tmp_path: Path) -> None:
    files = {"pop.py": "import os\n\ndef f():\n    return os.environ.pop('SGLANG_PAGE_SIZE', None)\n"}
    ((_, message),) = _check(tmp_path, files, [])
    assert "environment variable SGLANG_PAGE_SIZE (os.environ.pop(...))" in message


@pytest.mark.parametrize(
    "receiver",
    ["get_server_args()", "from configbags.generated.accessors import get_context\ny = get_context()"],
)
def test_a_file_too_deep_to_walk_is_reported_not_raised(receiver: str) -> None:
    # Under the default recursion limit, ast.parse builds a 600-long attribute chain that a
    # recursive walk, a few frames per level, cannot follow. The limit is set here: other
    # tests in the same process may have raised it.
    source = f"{receiver}{'.a' * 600}.state\n"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        ast.parse(source)
        result = scan_source(source.encode(), SETTINGS)
    finally:
        sys.setrecursionlimit(limit)
    assert result.problem == "nested too deeply to analyse (RecursionError); not scanned"


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


ENV_READER = """\
    import os


    def page_size():
        return int(os.environ.get("SGLANG_PAGE_SIZE", "16"))
    """
READBACK = """\
    from configbags.generated.accessors import get_context


    def admin_dump():
        ctx = get_context()
        return dict(ctx.state.values)
    """


def _check(tmp_path: Path, files: dict[str, str], allowlist: list[AllowEntry]) -> list[tuple[str, str]]:
    result = scan_tree(_project(tmp_path, files), SETTINGS)
    report = check(result, allowlist, ACCESSORS, min_files=1, roots=SETTINGS.roots, env_leaves=ENV_LEAVES)
    return [(failure.kind, failure.message) for failure in report.failures]


def test_an_env_read_names_the_variable_its_leaf_and_the_accessor(tmp_path: Path) -> None:
    ((kind, message),) = _check(tmp_path, {"env.py": ENV_READER}, [])
    assert kind == "new_read"
    assert message.startswith("pkg/env.py:5 (page_size): a raw read of environment variable SGLANG_PAGE_SIZE")
    assert "sets leaf 'page_size'" in message
    assert "use get_schedule().page_size instead" in message
    assert "- {file: pkg/env.py, function: page_size, leaf: $SGLANG_PAGE_SIZE, reason:" in message
    entry = AllowEntry("pkg/env.py", "page_size", "$SGLANG_PAGE_SIZE", "read before publish, in the launcher")
    assert _check(tmp_path, {"env.py": ENV_READER}, [entry]) == []


def test_an_old_variable_name_names_its_leaf(tmp_path: Path) -> None:
    files = {"old.py": "import os\n\ndef f():\n    return os.getenv('SGLANG_KV_PAGE')\n"}
    ((_, message),) = _check(tmp_path, files, [])
    assert "environment variable SGLANG_KV_PAGE" in message and "get_schedule().page_size" in message


def test_a_readback_in_role_code_fails_naming_the_scoped_doors(tmp_path: Path) -> None:
    ((kind, message),) = _check(tmp_path, {"admin.py": READBACK}, [])
    assert kind == "operator_readback"
    assert message.startswith("pkg/admin.py:6 (admin_dump): an operator readback in role code")
    for door in ("accessors", "ctx.bag(", "ctx.snapshot()"):
        assert door in message
    assert "leaf: Context.state, reason: '<why this is operator code" in message


def test_a_readback_is_allowed_only_by_an_entry_with_a_reason_of_its_own(tmp_path: Path) -> None:
    files = {"admin.py": READBACK}
    explained = AllowEntry("pkg/admin.py", "admin_dump", "Context.state", "the HTTP admin endpoint shows every namespace")
    assert _check(tmp_path, files, [explained]) == []
    for reason in ("baseline", "<why this is operator code, not role code>", "fix refused: something"):
        ((kind, message),) = _check(tmp_path, files, [attrs.evolve(explained, reason=reason)])
        assert kind == "entry"
        assert "Context.state" in message and "operator code" in message


def test_stale_door_entries_fail_like_any_other(tmp_path: Path) -> None:
    stale = AllowEntry("pkg/env.py", "page_size", "$SGLANG_LOG_LEVEL", "it was read once")
    failures = _check(tmp_path, {"env.py": ENV_READER}, [stale])
    assert [kind for kind, _ in failures] == ["new_read", "stale_entry"]


def test_changing_the_declared_variables_discards_the_scan_cache(tmp_path: Path) -> None:
    project = _project(tmp_path, {"env.py": ENV_READER})
    cache = tmp_path / "cache.json"
    assert scan_tree(project, ScanSettings(roots=("pkg",)), cache_path=cache).reads == ()
    (read,) = scan_tree(project, SETTINGS, cache_path=cache).reads
    assert read.leaf == "$SGLANG_PAGE_SIZE"


def test_fix_refuses_door_reads_with_their_reason(tmp_path: Path) -> None:
    project = _project(tmp_path, {"env.py": ENV_READER, "admin.py": READBACK})
    report = fix_tree(project, SETTINGS, ACCESSORS, "app.config.accessors", dry_run=True)
    assert report.changed == ()
    reasons = {skip.leaf: skip.reason for skip in report.skipped}
    assert "environment" in reasons["$SGLANG_PAGE_SIZE"]
    assert "operator readback" in reasons["Context.state"]


# --------------------------------------------------------------------------- the CLI


def _schema(project: Path, allowlist: list[dict[str, str]] | None = None) -> Path:
    schema = project / "schema"
    (schema / "namespaces").mkdir(parents=True, exist_ok=True)
    (schema / "namespaces" / "schedule.yaml").write_text(textwrap.dedent("""\
        namespace: schedule
        doc: d
        leaves:
          page_size:
            type: int
            default: 1
            help: h
            owner: launcher
            override: startup
            env: SGLANG_PAGE_SIZE
            renamed_from: [{name: kv_page, env: SGLANG_KV_PAGE}]
          tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}
        """))
    data = {
        "scan": {"roots": ["pkg"], "excludes": [], "raw_accessor": "get_server_args",
                 "record_class": "ServerArgs", "record_attributes": ["server_args"], "min_files": 1},
        "allowlist": allowlist or [],
    }
    (schema / "ratchet.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (schema / "roles.yaml").write_text(ROLES_YAML)
    return schema


def test_env_names_reach_the_inputs_and_their_cache(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    fresh = load_from_schema(schema, cache=False)
    assert fresh.env_leaves == {"SGLANG_KV_PAGE": "page_size", "SGLANG_PAGE_SIZE": "page_size"}
    assert fresh.settings.env_vars == ("SGLANG_KV_PAGE", "SGLANG_PAGE_SIZE")
    assert load_from_schema(schema) == fresh  # written to the cache
    cached = json.loads((tmp_path / INPUTS_CACHE).read_bytes().partition(b"\n")[2])
    assert cached["env_leaves"] == fresh.env_leaves
    assert load_from_schema(schema) == fresh  # and read from it


def test_an_inputs_cache_of_the_previous_format_is_not_used(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    load_from_schema(schema)
    path = tmp_path / INPUTS_CACHE
    cached = json.loads(path.read_bytes().partition(b"\n")[2])
    # what a format-1 cache holds: no declared variables (sealed, as this user's would be)
    cached["format"] = 1
    del cached["env_leaves"], cached["settings"]["env_vars"]
    body = json.dumps(cached).encode()
    secret = cache_secret()
    assert secret is not None
    path.write_bytes(inputs_seal(secret, cached["key"], body).encode() + b"\n" + body)
    assert load_from_schema(schema).env_leaves == {"SGLANG_KV_PAGE": "page_size", "SGLANG_PAGE_SIZE": "page_size"}


def test_init_lists_env_reads_check_is_green_and_update_shrinks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _schema(_project(tmp_path, {"env.py": ENV_READER}))
    assert main(["check", "--schema", str(schema)]) == 1
    assert "environment variable SGLANG_PAGE_SIZE" in capsys.readouterr().out
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    assert data["allowlist"] == [
        {"file": "pkg/env.py", "function": "page_size", "leaf": "$SGLANG_PAGE_SIZE", "reason": "baseline"}
    ]
    assert main(["check", "--schema", str(schema)]) == 0
    (tmp_path / "pkg" / "env.py").write_text("def page_size():\n    return 16\n")
    assert main(["check", "--schema", str(schema)]) == 1
    assert main(["update", "--schema", str(schema)]) == 0
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"] == []
    assert main(["check", "--schema", str(schema)]) == 0


def test_init_never_baselines_a_readback_but_keeps_an_explicit_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _schema(_project(tmp_path, {"admin.py": READBACK}))
    init = ["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]
    assert main(init) == 0
    out = capsys.readouterr().out
    assert "pkg/admin.py:6: operator readback Context.state" in out
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"] == []
    assert main(["check", "--schema", str(schema)]) == 1
    assert "an operator readback in role code" in capsys.readouterr().out
    entry = {"file": "pkg/admin.py", "function": "admin_dump", "leaf": "Context.state",
             "reason": "the HTTP admin endpoint shows every namespace"}
    schema = _schema(tmp_path, [entry])
    assert main(["check", "--schema", str(schema)]) == 0
    assert main(init) == 0
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"] == [entry]
    assert main(["check", "--schema", str(schema)]) == 0


def test_generated_module_carries_the_env_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, {"env.py": ENV_READER})
    schema = _schema(project)
    package = project / "doors_gen_pkg"
    assert gen_main(["--schema", str(schema), "--out", str(package), "--package", "doors_gen_pkg"]) == 0
    try:
        generated = load_from_generated(project, "doors_gen_pkg")
        assert generated.env_leaves == load_from_schema(schema, cache=False).env_leaves
        assert generated.settings == load_from_schema(schema, cache=False).settings
        capsys.readouterr()
        assert main(["check", "--schema", str(schema), "--generated", "doors_gen_pkg"]) == 1
        assert "environment variable SGLANG_PAGE_SIZE" in capsys.readouterr().out
    finally:
        for name in [m for m in sys.modules if m.startswith("doors_gen_pkg")]:
            del sys.modules[name]


_IMPORTED = """\
import sys
from configbags.cli import main

code = main(["ratchet", "check", "--schema", sys.argv[1]])
heavy = ("yaml", "libcst", "jinja2", "black", "importlib.metadata", "configbags.codegen")
print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)))
sys.exit(code)
"""


@pytest.mark.slow  # check processes, cold then warm
def test_a_warm_check_imports_neither_yaml_nor_the_generator(tmp_path: Path) -> None:
    schema = _schema(_project(tmp_path, {"env.py": ENV_READER, "admin.py": READBACK}))
    entry = {"file": "pkg/env.py", "function": "page_size", "leaf": "$SGLANG_PAGE_SIZE", "reason": "launcher"}
    readback = {"file": "pkg/admin.py", "function": "admin_dump", "leaf": "Context.state", "reason": "admin endpoint"}
    schema = _schema(tmp_path, [entry, readback])
    script = tmp_path / "imported.py"
    script.write_text(_IMPORTED)
    # the checkout first: a module added since `make setup` is not in the editable install yet
    # (without CI=true, which turns the cache off: the warm path is the cache's)
    env = {**{k: v for k, v in os.environ.items() if k != "CI"}, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    runs = [
        subprocess.run([sys.executable, str(script), str(schema)], capture_output=True, text=True, check=False, env=env)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stdout + runs[0].stderr
    assert runs[1].stdout.splitlines()[-1] == "[]"
