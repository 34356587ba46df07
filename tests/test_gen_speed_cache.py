"""Generation at engine scale: black piece by piece (configbags.codegen.blackpieces) gives
black's output on the whole module byte for byte, and the format cache lets a regeneration
after a one-leaf edit run black on the few pieces that changed only."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import black
import pytest
import yaml
from genutil import CASES, REPO, generate
from hostile.strategies import PROFILE
from hypothesis import example, given, settings
from hypothesis import strategies as st

from configbags.codegen import blackpieces, emit, render
from configbags.codegen.blackpieces import BLACK_MODE, DictMemo, format_module
from configbags.codegen.formatcache import FormatCache, default_cache_path
from configbags.codegen.model import load_schema

SCHEMAS = [REPO / "schema", *sorted(p / "schema" for p in CASES.iterdir() if (p / "schema").is_dir())]
HELPS = [
    "Short.",
    "A help text long enough that the argparse call and the docstring it lands in run well past "
    "black's eighty-eight columns, so black has to split it.",
    "Quotes ' and \" and a backslash \\ in one help; also unicode: größe, 長さ.",
]
KINDS = [("int", 4), ("float", 0.25), ("bool", True), ("str", "auto"), ("optional int", None),
         ("list[int]", [1, 2, 3]), ("optional str", None), ("list[str]", ["a", "b"])]


@functools.lru_cache(maxsize=64)  # black is pure: each cut setting compares with the same output
def black_str(source: str) -> str:
    return black.format_str(source, mode=BLACK_MODE)


def pre_format(schema: Path) -> dict[str, str]:
    texts = emit.rendered(load_schema(schema), "regen", "generated")
    return {name: texts[name] for name in emit.PY_FILES}


def synthetic(root: Path, leaves: int, per_namespace: int = 10) -> Path:
    schema = root / "schema"
    (schema / "namespaces").mkdir(parents=True)
    for s in range(leaves // per_namespace):
        doc: dict[str, object] = {"namespace": f"ns{s}", "doc": f"Namespace {s}.", "leaves": {}}
        body: dict[str, object] = {}
        for i in range(per_namespace):
            kind, default = KINDS[(s + i) % len(KINDS)]
            leaf: dict[str, object] = {"type": kind, "default": default, "help": HELPS[(s * 7 + i) % len(HELPS)],
                                       "owner": "launcher", "override": "runtime" if i % 3 == 0 else "startup"}
            if kind == "int":
                leaf["min"] = 0
            if kind == "str":
                leaf["choices"] = ["auto", "fast", "a-rather-long-choice-name-to-push-the-line-out"]
            body[f"leaf_{s}_{i}{'_x' * (i % 4)}"] = leaf
        doc["leaves"] = body
        (schema / "namespaces" / f"ns{s}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    (schema / "roles.yaml").write_text(yaml.safe_dump({"roles": {"launcher": {"doc": "l", "reads": "all"}}}))
    return schema


@pytest.fixture
def black_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the formatter hands black."""
    calls: list[str] = []
    real: Callable[..., str] = black.format_str

    def counting(text: str, *, mode: black.Mode) -> str:
        calls.append(text)
        return real(text, mode=mode)

    monkeypatch.setattr(blackpieces.black, "format_str", counting)
    return calls


@pytest.fixture(params=[blackpieces._CUT_EVERY, 1], ids=["default-cuts", "every-seam"])
def cut_every(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Also cut at every seam the rules allow, not only where the hash says, to put each
    seam rule to the test."""
    value: int = request.param
    monkeypatch.setattr(blackpieces, "_CUT_EVERY", value)
    return value


# the bundled schema's modules take bare black seconds: `make test` only
@pytest.mark.parametrize("schema", [pytest.param(s, marks=[pytest.mark.slow] if s == REPO / "schema" else [])
                                    for s in SCHEMAS], ids=lambda p: p.parent.name)
def test_pieces_equal_black_on_every_generated_module(schema: Path, cut_every: int) -> None:
    for name, source in pre_format(schema).items():
        assert format_module(source, DictMemo()) == black_str(source), name


def test_pieces_equal_black_on_a_synthetic_engine_schema(tmp_path: Path, cut_every: int,
                                                          black_calls: list[str]) -> None:
    sources = pre_format(synthetic(tmp_path, 120))
    expected = {name: black_str(source) for name, source in sources.items()}
    black_calls.clear()
    for name, source in sources.items():
        assert format_module(source, DictMemo()) == expected[name], name
    # It was cut: many black calls, none over the whole registry.
    assert len(black_calls) > 50
    assert max(map(len, black_calls)) < len(sources["registry.py"]) / 4


# A module of the statement shapes the templates write (and some they do not), with
# random blank lines, comments, string contents and lengths.
_names = st.sampled_from(["a", "leaf_x", "a_rather_long_identifier_name_for_width", "_", "Cls"])
_strings = st.text(st.sampled_from("ab '\"\\é長 x-_.{}%"), max_size=60).map(repr)
_atoms = st.one_of(st.integers(-5, 10**12).map(str), _strings, st.sampled_from(["None", "True", "(1, 2)", "x.y"]))


@st.composite
def _call(draw: st.DrawFn) -> str:
    args = draw(st.lists(st.tuples(_names, _atoms), max_size=6))
    trailing = draw(st.sampled_from(["", ","])) if args else ""
    return f"{draw(_names)}({', '.join(f'{k}={v}' for k, v in args)}{trailing})"


_values = st.one_of(_atoms, _call())


@st.composite
def _literal(draw: st.DrawFn, indent: str) -> str:
    kind = draw(st.sampled_from(["{}", "[]", "()", "dict"]))
    items = draw(st.lists(_values, min_size=0, max_size=6))
    opener, closer = ("{", "}") if kind == "dict" else (kind[0], kind[1])
    lines = [f"{indent}{draw(_names)}: T = {opener}"]
    for i, item in enumerate(items):
        key = f"{draw(_strings)}: " if kind == "dict" else ""
        comma = "," if i < len(items) - 1 or draw(st.booleans()) else ""
        lines.append(f"{indent}    {key}{item}{comma}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(f"{indent}    # a comment")
    lines.append(f"{indent}{closer}")
    return "\n".join(lines)


@st.composite
def _simple(draw: st.DrawFn, indent: str) -> str:
    choice = draw(st.integers(0, 7))
    if choice == 0:
        return draw(_literal(indent))
    if choice == 1:
        return f"{indent}{draw(_strings).replace(chr(39), chr(34) * 3, 1)[:-1]}\"\"\""
    if choice == 2:
        return f"{indent}import os"
    if choice == 3:
        return f"{indent}{draw(_call())}"
    if choice == 4:
        return f"{indent}# a comment line"
    if choice == 5:
        return f"{indent}{draw(_names)}: int = {draw(_values)}  # trailing"
    return f"{indent}{draw(_names)} = {draw(_values)}"


@st.composite
def _block(draw: st.DrawFn, depth: int) -> str:
    indent = "    " * depth
    out = []
    for _ in range(draw(st.integers(1, 6))):
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            header = draw(st.sampled_from(["class C:", "def f(x):", "@attrs.frozen\nclass C(B):",
                                           "def g(): ...", "class S: ..."]))
            stmt = "\n".join(indent + line for line in header.split("\n"))
            if not header.endswith("..."):
                stmt += "\n" + draw(_block(depth + 1))
        else:
            stmt = draw(_simple(indent))
        out.append("\n" * draw(st.integers(0, 3)) + stmt)
    return "\n".join(out)


# Seams black treats specially, which random draws reach too rarely.
@example("x = 1\ny = 2\ndef g(): ...\ndef f(x):\n    return 1\n")  # no blank line after a stub def
@example("class A:\n    x = 1\n    y = 2\n    def g(self): ...\n    def f(x):\n        return 1\n")
@example("x = 1\nimport os\ny = 2\nz = 3\n")  # a blank line after imports
@example('x = 1\n"""doc"""\n\n\n\ny = 2\nz = 3\n')
@example('class A:\n    """Doc."""\n    x = 1\n    y = 2\n')  # a blank line after a class docstring
@example("class C:\n    a = 1\n    b = 2\n    class D:\n        a()\n        # indented by the code above\n")
@given(st.booleans().flatmap(lambda doc: _block(0).map(lambda body: ('"""Doc."""\n' if doc else "") + body + "\n")))
@settings(PROFILE, max_examples=PROFILE.max_examples * 4, database=None)
def test_pieces_equal_black_on_arbitrary_modules(source: str) -> None:
    original = blackpieces._CUT_EVERY
    blackpieces._CUT_EVERY = 1  # every seam the rules allow (hypothesis runs without fixtures)
    try:
        try:
            expected = black_str(source)
        except black.InvalidInput:
            return
        assert format_module(source, DictMemo()) == expected
    finally:
        blackpieces._CUT_EVERY = original


def _edit_help(schema: Path, text: str) -> None:
    path = schema / "namespaces" / "ns3.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["leaves"]["leaf_3_1_x"]["help"] = text
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


@pytest.mark.slow  # generates a schema three times, cold and warm
def test_a_one_leaf_edit_runs_black_on_a_few_pieces(tmp_path: Path, black_calls: list[str]) -> None:
    schema = synthetic(tmp_path, 200)
    path = tmp_path / "cache.json"
    cache = FormatCache(path)
    first = emit.emit(load_schema(schema), "regen", parallel=False, cache=cache)
    cache.save()
    cold = len(black_calls)

    black_calls.clear()
    again = emit.emit(load_schema(schema), "regen", parallel=False, cache=FormatCache(path))
    assert again == first and black_calls == []  # unchanged schema: black never runs

    _edit_help(schema, "Edited: a new help text for one leaf.")
    cache = FormatCache(path)
    edited = emit.emit(load_schema(schema), "regen", parallel=False, cache=cache)
    cache.save()
    assert 0 < len(black_calls) <= cold // 10
    assert sum(map(len, black_calls)) < sum(len(first[name]) for name in emit.PY_FILES) / 10
    assert {name: edited[name] for name in emit.PY_FILES} == {
        name: black_str(source) for name, source in pre_format(schema).items()}

    # The help edit left registry.py as it was (found whole); its pieces were kept with it,
    # so a later edit there is as cheap.
    path_ns = schema / "namespaces" / "ns5.yaml"
    doc = yaml.safe_load(path_ns.read_text())
    doc["leaves"]["leaf_5_3_x_x_x"]["default"] = 7  # an int leaf
    path_ns.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    black_calls.clear()
    edited = emit.emit(load_schema(schema), "regen", parallel=False, cache=FormatCache(path))
    assert first["registry.py"] != edited["registry.py"]
    assert 0 < len(black_calls) <= cold // 10
    assert {name: edited[name] for name in emit.PY_FILES} == {
        name: black_str(source) for name, source in pre_format(schema).items()}


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda p: p.parent.name)
def test_pieces_planned_ahead_are_the_pieces_formatted(schema: Path, black_calls: list[str]) -> None:
    """`black_inputs` names exactly the texts the module's own pass hands to black, so a
    cold run can format them ahead in parallel and the pass then only reads the memo."""
    for name, source in pre_format(schema).items():
        black_calls.clear()
        format_module(source, DictMemo())
        assert set(blackpieces.black_inputs(source)) == set(black_calls), name


@pytest.mark.slow  # forks workers, generates twice
def test_a_cold_parallel_run_equals_black_and_fills_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             black_calls: list[str]) -> None:
    monkeypatch.setattr(emit, "PARALLEL_CHARS", 0)  # parallel however small the schema
    monkeypatch.setattr(emit, "_workers", lambda: 2)
    schema = synthetic(tmp_path, 60)
    path = tmp_path / "cache.json"
    cache = FormatCache(path)
    parallel = emit.emit(load_schema(schema), "regen", parallel=True, cache=cache)
    cache.save()
    assert {name: parallel[name] for name in emit.PY_FILES} == {
        name: black_str(source) for name, source in pre_format(schema).items()}
    black_calls.clear()
    assert emit.emit(load_schema(schema), "regen", parallel=False, cache=FormatCache(path)) == parallel
    assert black_calls == []  # the workers' pieces reached the cache


def _mangle(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("change", [
    lambda d: next(iter(d["entries"].values())).__setitem__(0, "x = 'not what black printed'\n"),
    lambda d: d.__setitem__("key", "black 0.0 another mode"),
    lambda d: d.__setitem__("entries", []),
], ids=["edited-entry", "other-black", "malformed"])
def test_a_doubtful_cache_is_discarded_whole(tmp_path: Path, change: Callable[[dict[str, object]], None]) -> None:
    schema = synthetic(tmp_path, 40)
    path = tmp_path / "cache.json"
    cache = FormatCache(path)
    expected = emit.emit(load_schema(schema), "regen", parallel=False, cache=cache)
    cache.save()
    _mangle(path, change)
    doubtful = FormatCache(path)
    assert doubtful.discarded and not doubtful.entries
    assert emit.emit(load_schema(schema), "regen", parallel=False, cache=doubtful) == expected


def test_gen_keeps_its_cache_in_the_project_beside_the_output(tmp_path: Path) -> None:
    project = tmp_path / "engine"
    (project / "engine").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'engine'\n")
    schema = synthetic(tmp_path, 20)
    out = project / "engine" / "config"
    assert default_cache_path(out) == project / ".configbags-cache" / "gen-black.json"

    assert generate(schema, out, "--no-cache") == 0
    assert not (project / ".configbags-cache").exists()
    assert generate(schema, out) == 0
    assert (project / ".configbags-cache" / "gen-black.json").is_file()
    assert not any(p.name.startswith(".") for p in out.iterdir())  # never inside the output


def test_without_a_project_the_cache_sits_beside_the_output(tmp_path: Path) -> None:
    assert default_cache_path(tmp_path / "out") == tmp_path / ".configbags-cache" / "gen-black.json"


# black makes a second pass over any text its first pass changes, so a piece handed to it
# already in its shape costs half: the literals the renderer knows run long are printed so.
@pytest.mark.parametrize("count", [0, 1, 2, 5, 40])
@pytest.mark.parametrize("width", [1, 8, 30])
def test_long_tuples_and_imports_are_rendered_as_black_prints_them(count: int, width: int) -> None:
    names = [f"name_{i:0{width}d}" for i in range(count)]
    call = f"x = f(\n    a=1,\n    fields={render.py_after('fields', tuple(names), 4)},\n)\n"
    assert black_str(call) == call
    if names:
        imports = render.from_import("configbags.runtime.generated_api", names) + "\n"
        assert black_str(imports) == imports


def test_the_pieces_of_a_synthetic_engine_schema_take_one_black_pass(tmp_path: Path) -> None:
    """Class bodies cut after their first run (the stand-in gets the blank line black puts
    before a nested def) and the runtime imports."""
    sources = pre_format(synthetic(tmp_path, 200, per_namespace=20))
    for name in ("bags.py", "server_args.py", "accessors.py"):
        changed = [piece for piece in dict.fromkeys(blackpieces.black_inputs(sources[name]))
                   if black_str(piece) != piece and "= {\n}" not in piece and "= (\n)" not in piece]
        assert len(changed) <= 1, (name, changed[:1])  # the module's first piece: its header


# Tables as the renderer prints them (`render.literal` values, one element a line, some
# exploded one argument a line), with values black might print otherwise: both quotes,
# backslashes, escapes, wide and zero-width characters, exponents, negative numbers, long
# lines. Elements already in black's shape are taken without black (blackpieces'
# `_in_black_shape`); the module must still be black's, byte for byte.
_hostile_text = st.text(st.sampled_from("ab '\"\\\n\t\x00\x7f\u200b\u2028é長𝔘{}%"), max_size=50) | st.text(
    st.sampled_from("ab '\"長"), min_size=60, max_size=120)  # past the line on its own
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20),
                     st.floats(allow_nan=False, allow_infinity=False), _hostile_text)
_table_values = st.recursive(_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
    st.dictionaries(_hostile_text, kids, max_size=3)), max_leaves=6)


@st.composite
def _table_element(draw: st.DrawFn, indent: str) -> str:
    key = render.literal(draw(_hostile_text))
    if draw(st.booleans()):
        return f"{indent}{key}: {render.literal(draw(_table_values))},\n"
    args = draw(st.lists(st.tuples(st.sampled_from(["name", "help", "default", "choices", "a_long_keyword_name"]),
                                   _table_values), min_size=1, max_size=4))
    lines = [f"{indent}{key}: Spec(\n"]
    for name, value in args:
        if isinstance(value, tuple) and len(value) >= 2 and draw(st.booleans()):
            lines.append(f"{indent}    {name}=(\n" + "".join(f"{indent}        {render.literal(v)},\n" for v in value)
                         + f"{indent}    ),\n")
        else:
            lines.append(f"{indent}    {name}={render.literal(value)},\n")
    return "".join(lines) + f"{indent}),\n"


@st.composite
def _table_module(draw: st.DrawFn) -> str:
    nested = draw(st.booleans())
    indent = "        " if nested else "    "
    body = "".join(draw(st.lists(_table_element(indent), min_size=2, max_size=8)))
    table = f"{indent[4:]}TABLE: dict[str, Spec] = {{\n{body}{indent[4:]}}}\n"
    return f"class C:\n    x = 1\n{table}" if nested else f"x = 1\n\n{table}"


@example('x = 1\n\nTABLE: dict[str, Spec] = {\n    "a": 1e+16,\n    "b": \'it\\\'s "q"\',\n}\n')
@given(_table_module())
@settings(PROFILE, max_examples=PROFILE.max_examples * 3, database=None)
def test_elements_taken_without_black_are_blacks_own(source: str) -> None:
    try:
        expected = black_str(source)
    except black.InvalidInput:
        return
    assert format_module(source, DictMemo()) == expected


def test_a_registry_in_blacks_shape_costs_black_no_call_per_leaf(tmp_path: Path, black_calls: list[str]) -> None:
    """The leaf table and the ratchet's maps are printed in black's shape: black is asked
    about their frames and the few elements off the cover (a help past the line), not
    about every leaf."""
    sources = pre_format(synthetic(tmp_path, 120))
    for name in ("registry.py", "ratchet_allowlist.py"):
        black_calls.clear()
        assert format_module(sources[name], DictMemo()) == black_str(sources[name]), name
        leaves = [c for c in black_calls if "LeafSpec(" in c and c.count("name=") > 0]
        assert len(leaves) < 120 / 3, (name, len(leaves))
    assert blackpieces._in_black_shape  # the shortcut these counts stand for
