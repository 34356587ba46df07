"""The versioned face generated code imports (configbags.runtime.generated_api): the
package checks at import that the runtime speaks its API, bags stay light, and a
record's origins live beside it."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from genutil import CASES, REPO, import_generated

from configbags.codegen.emit import emit
from configbags.codegen.model import load_schema
from configbags.codegen.write import write_tree
from configbags.runtime import generated_api, record
from configbags.runtime.errors import ConfigError
from configbags.runtime.generated_api import API_VERSION, GeneratedApiError, require_api
from configbags.runtime.resolve import Layer

REGEN = "configbags gen --schema schema --package tinyengine.config --out src/tinyengine/config"


def _generated(tmp_path: Path, case: str = "tiny") -> Path:
    out = tmp_path / "expected"
    write_tree(out, emit(load_schema(CASES / case / "schema"), REGEN, package="tinyengine.config"))
    return out


def test_a_package_records_the_api_it_was_generated_for(tmp_path: Path) -> None:
    init = (_generated(tmp_path) / "__init__.py").read_text()
    assert f"\nAPI_VERSION = {API_VERSION}\n" in init
    assert "from configbags.runtime.generated_api import require_api" in init


def test_a_package_of_another_api_fails_at_import_and_names_both_fixes(tmp_path: Path) -> None:
    out = _generated(tmp_path)
    init = out / "__init__.py"
    init.write_text(init.read_text().replace(f"API_VERSION = {API_VERSION}\n", f"API_VERSION = {API_VERSION + 1}\n"))
    with pytest.raises(GeneratedApiError) as caught:
        import_generated(out)
    message = str(caught.value)
    assert f"generated for configbags runtime API {API_VERSION + 1}" in message
    assert f"speaks API {API_VERSION}" in message
    assert f"regenerate it with `{REGEN}`" in message
    assert f"upgrade/downgrade configbags to a version that speaks API {API_VERSION + 1}" in message
    assert isinstance(caught.value, ImportError)  # an import that cannot work, as Python sees it


def test_a_runtime_that_moved_on_refuses_an_older_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generated_api, "API_VERSION", API_VERSION + 1)
    with pytest.raises(GeneratedApiError, match=f"generated for configbags runtime API {API_VERSION},"):
        require_api(API_VERSION, "engine.config", REGEN)
    monkeypatch.undo()
    require_api(API_VERSION, "engine.config", REGEN)  # the version it speaks: silent


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in sys.modules if m.startswith('configbags')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_bags_import_no_context_machinery() -> None:
    """Bags are plain data: a process that only holds or type-checks them loads no context."""
    loaded = _loaded_after("import configbags.generated.bags")
    assert "configbags.generated.bags" in loaded
    assert "configbags.runtime.context" not in loaded, sorted(loaded)
    # the accessors do need it, and get it through the same face
    assert "configbags.runtime.context" in _loaded_after("import configbags.generated.accessors")


def test_the_face_lends_only_what_it_has() -> None:
    from configbags.runtime import context

    assert generated_api.Context is context.Context
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = generated_api.Nothing


@pytest.fixture(scope="module")
def server_args(tmp_path_factory: pytest.TempPathFactory) -> type:
    mods = import_generated(_generated(tmp_path_factory.mktemp("face")))
    cls: type = mods["server_args"].ServerArgs
    return cls


def test_origins_live_beside_the_frozen_record(server_args: type) -> None:
    """The record holds its leaves and nothing else; where each value came from is kept
    beside it, per record (not per value: equal records may come from different places)."""
    assert not any(f.name.startswith("_") for f in attrs.fields(server_args))
    from_cli = server_args.from_cli(["--name", "n"], environ={})
    from_dict = server_args.from_dict({"name": "n"}, source="a dict")
    assert from_cli == from_dict
    registry = sys.modules[server_args.__module__.rpartition(".")[0] + ".registry"]
    assert record.origins_of(from_cli, registry.LEAVES)["name"].layer is Layer.CLI
    assert record.origins_of(from_dict, registry.LEAVES)["name"].source == "a dict"


def test_a_replaced_record_keeps_the_origins_and_adds_its_own(server_args: type) -> None:
    registry = sys.modules[server_args.__module__.rpartition(".")[0] + ".registry"]
    base = server_args.from_dict({"name": "n"}, source="a dict")
    new = base.replace(width=5)
    origins = record.origins_of(new, registry.LEAVES)
    assert origins["name"].source == "a dict"
    assert origins["width"].source == "replace()"
    assert "width" not in record.origins_of(base, registry.LEAVES)


def test_the_side_table_lets_a_record_go(server_args: type) -> None:
    made = server_args.from_dict({"name": "n"})
    key = id(made)
    assert record._inputs[key][0]() is made
    del made
    gc.collect()
    assert key not in record._inputs  # no record was made since: the id is not reused


def test_the_registry_spells_out_only_what_differs_from_a_leaf_spec_default() -> None:
    """Each `LeafSpec(...)` in the generated registry names exactly the fields without a
    default and those where the leaf differs from the field's default for it (a default
    may follow from the leaf, as its flag follows from its name): the registry of an
    engine-sized schema stays short, and loses nothing."""
    import ast

    from configbags.generated.registry import LEAVES
    from configbags.runtime.registry import LeafSpec

    def default_for(field: attrs.Attribute[object], spec: LeafSpec) -> object:
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            return default.factory(spec) if default.takes_self else default.factory()
        return default

    tree = ast.parse((REPO / "generated" / "registry.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "LeafSpec"]
    assert len(calls) == len(LEAVES) > 100
    for call, spec in zip(calls, LEAVES.values(), strict=True):
        differing = {
            f.name for f in attrs.fields(LeafSpec)
            if (d := default_for(f, spec)) is attrs.NOTHING
            or type(getattr(spec, f.name)) is not type(d) or getattr(spec, f.name) != d
        }
        assert {kw.arg for kw in call.keywords} == differing, spec.name
    assert any("flags" not in {kw.arg for kw in c.keywords} for c in calls)  # the default flag is left out


def test_the_registry_holds_the_records_codegen_built() -> None:
    """One leaf record: what the generator builds from the schema is, field for field, what
    the generated registry gives the runtime."""
    from configbags.generated.registry import LEAVES

    built = load_schema(REPO / "schema").leaves
    assert [leaf.name for leaf in built] == list(LEAVES)
    assert built == tuple(LEAVES.values())


def test_a_folder_generated_by_an_earlier_version_may_be_regenerated(tmp_path: Path) -> None:
    from configbags.codegen.write import NotOurFolder, check_out

    out = tmp_path / "config"
    out.mkdir()
    (out / "__init__.py").write_text("# Code generated by codegen from 3 schema files. DO NOT EDIT.\n")
    check_out(out, tmp_path / "schema")  # the earlier header: ours
    (out / "__init__.py").write_text('"""An engine\'s own package."""\n')
    with pytest.raises(NotOurFolder):
        check_out(out, tmp_path / "schema")


def test_the_face_holds_exactly_what_generated_code_imports() -> None:
    """Over the bundled package and every golden: a name the templates import from the face
    is in it, and a face name no generated code imports is not (the version constant and
    its error are the face's own)."""
    import ast

    used: set[str] = set()
    for path in [*(REPO / "generated").glob("*.py"), *CASES.glob("*/expected/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "configbags.runtime.generated_api":
                used.update(alias.name for alias in node.names)
    assert used == set(generated_api.__all__) - {"API_VERSION", "GeneratedApiError"}


def test_a_built_record_is_never_written_to(server_args: type) -> None:
    """The record checks and canonicalises each leaf while attrs builds it (converters), so
    nothing writes to it afterwards: no post-init hook, no object.__setattr__ in record.py."""
    import ast

    assert "__attrs_post_init__" not in vars(server_args)
    built = server_args(name="n", sizes=[4, 8])
    assert built.sizes == (4, 8)  # the canonical form, from the converter
    with pytest.raises(ConfigError, match=r"core\.tune\.sizes"):
        server_args(name="n", sizes=[100])  # and the check, as it is built
    source = (REPO / "runtime" / "record.py").read_text()
    calls = [ast.unparse(n.func) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    assert "object.__setattr__" not in calls
