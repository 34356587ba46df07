"""Property tests: arbitrary help text, string defaults and choices generate code that
compiles and round-trips the exact values; schema text can never inject code."""

from __future__ import annotations

import ast
import itertools
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configbags.codegen.emit import emit
from configbags.codegen.errors import SchemaInvalid
from configbags.codegen.model import load_schema
from configbags.runtime.cliflags import argument_options

NASTY = st.sampled_from(['"', "'", '"""', "'''", "\\", "\\n", "{{ x }}", "{% if %}", "%s", "%(x)d",
                         "\n", "é", "名", "`", "|", "<b>", "#", "]]>", "\U000102da", "\u00a0"])
# Schema text is plain text: gen refuses control, format and separator characters (the last test)
REFUSED = ("Cc", "Cf", "Zl", "Zp", "Cs")
PLAIN = st.text(st.characters(exclude_categories=REFUSED), min_size=1, max_size=8)
TEXT = st.lists(st.one_of(NASTY, PLAIN), min_size=1, max_size=6).map("".join)
HELP = TEXT.filter(lambda s: s.strip() != "")
VALUE = TEXT

ROLES = {"roles": {"boss": {"doc": "b", "reads": "all"}, "test": {"doc": "t", "reads": "all", "write_any": True}}}


def _schema(root: Path, help_text: str, default: str, choices: list[str]) -> None:
    (root / "namespaces").mkdir(parents=True)
    doc = {
        "namespace": "core",
        "doc": help_text,
        "leaves": {
            "label": {"type": "str", "default": default, "help": help_text, "choices": choices,
                      "owner": "boss", "override": "runtime"},
            "other": {"type": "str", "default": default, "help": help_text + help_text,
                      "owner": "boss", "override": "startup"},
        },
    }
    (root / "namespaces" / "core.yaml").write_text(_exact_yaml(doc))
    (root / "roles.yaml").write_text(_exact_yaml(ROLES))


def _exact_yaml(data: object) -> str:
    """YAML that every string survives exactly: JSON with every non-ASCII character escaped,
    astral ones as YAML's \\U escape (YAML does not join JSON's surrogate pairs). PyYAML's own
    dumper folds characters such as U+0085 (NEL) into spaces, which would test the dumper."""
    text = json.dumps(data, ensure_ascii=True)
    pair = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")

    def astral(m: re.Match[str]) -> str:
        high, low = int(m[1], 16) - 0xD800, int(m[2], 16) - 0xDC00
        return f"\\U{0x10000 + (high << 10) + low:08x}"

    return pair.sub(astral, text)


def _field_docs(source: str, cls: str) -> dict[str, str]:
    """Attribute docstrings of a class, read back from the generated source."""
    tree = ast.parse(source)
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    docs = {}
    for a, b in itertools.pairwise(body):
        if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr):
            docs[a.target.id] = ast.literal_eval(b.value)
    return docs


def _strings_in(source: str) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


@pytest.mark.slow  # a full generation per example
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(help_text=HELP, default=VALUE, extra=st.lists(VALUE, max_size=3))
def test_text_round_trips_and_cannot_inject(help_text: str, default: str, extra: list[str]) -> None:
    choices = list(dict.fromkeys([default, *extra]))
    tmp = Path(tempfile.mkdtemp())
    try:
        _schema(tmp / "schema", help_text, default, choices)
        files = emit(load_schema(tmp / "schema"), "regen")
        for name, source in files.items():
            if name.endswith(".py"):
                compile(source, name, "exec")
        # ServerArgs: the exact default and help, as data, nowhere else
        server_args = files["server_args.py"]
        cls = next(n for n in ast.parse(server_args).body if isinstance(n, ast.ClassDef))
        # every annotated assignment is a leaf: origins live beside the record, not in it
        defaults = {a.target.id: ast.literal_eval(a.value) for a in cls.body
                    if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and a.value is not None}
        assert defaults == {"label": default, "other": default}
        assert _field_docs(server_args, "ServerArgs") == {"label": help_text, "other": help_text + help_text}
        assert _field_docs(files["bags.py"], "Core") == {"label": help_text, "other": help_text + help_text}
        # choices and help survive exactly in the registry (the leaf records argparse reads)
        registry = files["registry.py"]
        tuples = [ast.literal_eval(n) for n in ast.walk(ast.parse(registry))
                  if isinstance(n, ast.Tuple) and n.elts and all(isinstance(e, ast.Constant) for e in n.elts)]
        assert tuple(choices) in tuples
        assert {help_text, help_text + help_text} <= _strings_in(registry)
        # argparse help is the help text with % doubled, prefix of the help argument
        record = next(leaf for leaf in load_schema(tmp / "schema").leaves if leaf.name == "label")
        assert argument_options(record)["help"].startswith(help_text.replace("%", "%%"))
        # no schema text became code: every generated function/class name is one we expect
        names = {n.name for n in ast.walk(ast.parse(server_args)) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert names == {"ServerArgs", "from_dict", "from_file", "from_cli",
                         "from_cli_args", "to_dict", "replace", "add_cli_args"}
    finally:
        shutil.rmtree(tmp)


# (a lone surrogate never gets this far: the YAML reader refuses it)
UNPLAIN = st.characters(categories=("Cc", "Cf", "Zl", "Zp")).filter(lambda c: c != "\n")


@pytest.mark.slow  # a schema load per example
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=HELP, bad=UNPLAIN, after=TEXT, where=st.sampled_from(["doc", "help", "default", "choice"]))
def test_a_control_format_or_separator_character_is_refused_at_its_line(before: str, bad: str, after: str,
                                                                          where: str) -> None:
    """Wherever it sits in the text, and in whichever text gen copies out."""
    text = before + bad + after
    tmp = Path(tempfile.mkdtemp())
    try:
        schema = tmp / "schema"
        _schema(schema, "plain", "x", ["x"])
        doc = json.loads((schema / "namespaces" / "core.yaml").read_text())
        label = doc["leaves"]["label"]
        if where == "doc":
            doc["doc"] = text
        elif where == "help":
            label["help"] = text
        else:
            label["default" if where == "default" else "choices"] = text if where == "default" else ["x", text]
        (schema / "namespaces" / "core.yaml").write_text(_exact_yaml(doc))
        with pytest.raises(SchemaInvalid) as caught:
            load_schema(schema)
        assert f"U+{ord(bad):04X}" in str(caught.value)
        assert [e.line for e in caught.value.errors] == [1]  # one line of JSON: the file's only line
    finally:
        shutil.rmtree(tmp)
