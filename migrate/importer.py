"""`configbags import-dataclass FILE:CLASS --out DIR [--mapping FILE]`.

Turn an existing dataclass-style record into schema YAML: SGLang's older shape (annotated
fields with defaults, and an `add_cli_args` that calls `parser.add_argument(...)`), its
newer one (`Annotated[T, "help", Arg(...), NS(...)]` fields registered by a
dataclass-driven helper, configbags.migrate.annotated), and vLLM's (defaults and flag
keywords taken from config dataclasses in other modules). The source is read with `ast`
and never imported: importing an engine's config module pulls in torch, CUDA probes and
side effects, and may not even work on this machine. Other modules of the engine are
read the same way, found by path (configbags.migrate.astvalues).

The import runs in named steps: read the record (`read_record`: fields, their Annotated
metadata and computed defaults; then every registration of their flags), then per field
`_leaf`: type, default, help, flags, choices, the generator's value rules, what a bare
flag means and what a custom action or converter does. Each field becomes a leaf owned
by `launcher` with override policy `startup` (the safe starting point: the record is
fixed at publish; loosen per leaf afterwards). `--mapping` is a YAML file `{leaf:
namespace}`, or a `--propose-mapping` file whose `policies:` set override and owner per
leaf; unmapped leaves go to the namespace the record gives them (a marker, the config
class a default points into), else `legacy`. With `--engine-root`, a leaf imported as
startup that the engine writes after parsing (outside `--resolution`) is warned about.
`roles.yaml` is written when the folder has none, so the result passes the generator as
it stands. Schema files that differ from what the import writes (hand edits) are
overwritten only with `--force`.

Whatever cannot be carried over (a type with no schema spelling, choices or a const
dropped, a spelling lost to a clash, a custom argparse Action, an opaque type converter,
metadata not understood) is listed with its field and reason, and nothing is written
unless `--accept-loss` says so.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

# The generator's own rules, so that what is imported is what `make gen` accepts.
from configbags.codegen.model import RESERVED
from configbags.migrate import annotated, astvalues, registration
from configbags.migrate.annotated import FieldMeta, MetadataNames, unwrap
from configbags.migrate.astvalues import (
    MISSING,
    ClassRef,
    Evaluator,
    Module,
    ModuleIndex,
    class_fields,
    field_default,
    parse_module,
)
from configbags.migrate.clicheck import harvested, prefixes, read_corpus
from configbags.migrate.proposal import (
    engine_writes,
    propose,
    read_mapping,
    render,
    usable_namespace,
)
from configbags.migrate.pytypes import name_of, schema_type
from configbags.migrate.registration import Argument
from configbags.migrate.scan import ScanSettings
from configbags.migrate.targets import example_out, gen_hint
from configbags.runtime.cmdline import (
    Progress,
    UsageErrors,
    input_problem,
    print_stderr,
    terminal_progress,
)
from configbags.runtime.errors import LeafValueError
from configbags.runtime.leaftypes import TypeSpec, short_repr
from configbags.runtime.project import find_pyproject, project_path, read_toml
from configbags.runtime.record import credential_name
from configbags.runtime.spelling import Claim, clashes, flag_of, leaf_spellings, spellings

DEFAULT_NAMESPACE = "legacy"
DEFAULT_OWNER = "launcher"
DEFAULT_OVERRIDE = "startup"
_LEAF_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
_SHORT = re.compile(r"^-[A-Za-z][A-Za-z0-9]*$")  # `-tp`: kept as an alias, never a leaf's own flag

ROLES_YAML = """\
# Written by `configbags import-dataclass`: the smallest set of roles that lets the
# imported schema generate. Add the engine's real process roles and narrow `reads`.
roles:
  launcher:
    doc: Parses operator input and publishes the record.
    reads: all
  test:
    doc: Unit tests; may read every namespace and write every leaf.
    reads: all
    write_any: true
"""


class ImportError_(Exception):
    """The source cannot be imported as asked: the import stops and writes nothing (exit 1)."""


class ImportInputError(ImportError_):
    """An input of the command is missing or malformed (a class, mapping, `--default` or
    metadata name): a usage error (exit 2), fixed on the command line."""


@attrs.define
class Field:
    name: str
    line: int
    annotation: ast.expr | None  # with any Annotated taken off
    default: Any = MISSING  # MISSING: no default; the leaf is required
    default_note: str | None = None  # why the default could not be read
    doc: str | None = None
    meta: FieldMeta = attrs.Factory(FieldMeta)
    owner: ClassRef | None = None  # the config dataclass a default like `ModelConfig.x` points into
    structure: dict[str, Any] | None = None  # a json leaf's inner structure (a config dataclass's fields)


@attrs.frozen
class Loss:
    """Something of the legacy record or command line the import could not carry over."""

    field: str
    reason: str

    def render(self) -> str:
        return f"{self.field}: {self.reason}"


@attrs.frozen
class ImportResult:
    leaves: dict[str, dict[str, dict[str, Any]]]  # namespace -> leaf -> spec
    warnings: tuple[str, ...]
    losses: tuple[Loss, ...] = ()
    namespaces: Mapping[str, str] = attrs.Factory(dict)  # field -> namespace its record names


@attrs.define
class _Record:
    """One record being imported: its module, how its engine spells metadata, its flags."""

    module: Module
    cls: ast.ClassDef
    names: MetadataNames
    origin: str
    fields: list[Field] = attrs.Factory(list)
    arguments: dict[str, Argument] = attrs.Factory(dict)
    old: dict[str, list[Argument]] = attrs.Factory(dict)  # deprecated registrations per field
    warnings: list[str] = attrs.Factory(list)
    losses: list[Loss] = attrs.Factory(list)

    @property
    def evaluator(self) -> Evaluator:
        return Evaluator(self.module)

    def lose(self, field: str, reason: str) -> None:
        self.losses.append(Loss(field, reason))


def read_record(
    source: str, class_name: str, *, path: Path | None = None, origin: str = "<source>",
    names: MetadataNames | None = None, index: ModuleIndex | None = None,
) -> _Record:
    """Step 1: the record class, its fields (Annotated taken apart, defaults computed,
    followed into other modules) and every registration of its flags."""
    module = parse_module(source, path, index)
    classes = [n for n in ast.walk(module.tree) if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        raise ImportInputError(f"{origin}: no class {class_name!r}")
    record = _Record(module, classes[0], names or MetadataNames(), origin)
    record.fields = _fields(record)
    _registrations(record)
    return record


def _fields(record: _Record) -> list[Field]:
    fields: list[Field] = []
    evaluator = record.evaluator
    for _, stmt, doc in class_fields(record.cls):
        assert isinstance(stmt.target, ast.Name)
        name = stmt.target.id
        annotation_text = ast.unparse(stmt.annotation)
        if name.startswith("_") or "ClassVar" in annotation_text or "InitVar" in annotation_text:
            continue
        annotation, metadata = unwrap(stmt.annotation)
        field = Field(name, stmt.lineno, annotation, doc=doc)
        field.meta = annotated.read(metadata, record.names, evaluator)
        for reason in field.meta.lost:
            record.lose(name, reason)
        field.default, field.default_note = field_default(stmt.value, evaluator)
        field.owner = _owning_class(stmt.value, evaluator)
        fields.append(field)
    return fields


def _owning_class(value: ast.expr | None, evaluator: Evaluator) -> ClassRef | None:
    """The config class a default points into: `ModelConfig.x`, `get_field(ModelConfig, "x")`."""
    if isinstance(value, ast.Attribute):
        owner = evaluator.value(value.value)
    elif isinstance(value, ast.Call) and name_of(value.func) == "get_field" and value.args:
        owner = evaluator.value(value.args[0])
    else:
        return None
    return owner if isinstance(owner, ClassRef) else None


def _registrations(record: _Record) -> None:
    """Step 2: the flags, as the engine registers them: by hand (`add_argument`), through a
    dataclass-driven helper (each field's flag derived as the helper derives it), or with
    kwargs built from config dataclasses. Registrations of one field are merged."""
    tree, evaluator = record.module.tree, record.evaluator
    by_dest = registration.hand_written(tree, evaluator, record.names)
    helper = bool(registration.registrar_calls(tree, record.cls.name, record.names))
    for field in record.fields:
        # a helper registers every field; flag metadata says its field is a flag even
        # where the helper is not seen (called from another module)
        if helper or field.meta.has_flag:
            made = registration.derived(field.name, field.meta, field.line)
            if made is not None and made.dest not in by_dest:
                by_dest[made.dest] = made
            elif made is not None:
                registration.merge(by_dest, made.dest, made, leads=False)
    names = {f.name for f in record.fields}
    record.arguments, record.old = registration.fill_fields(by_dest, names, registration.cli_copies(tree))
    for argument in by_dest.values():
        for opaque in argument.opaque:
            record.lose(argument.dest, f"flag keywords `{opaque}` are built at run time and could not be read")


def import_dataclass(
    source: str,
    class_name: str,
    mapping: Mapping[str, str],
    *,
    origin: str = "<source>",
    defaults: Mapping[str, Any] | None = None,
    policies: Mapping[str, Mapping[str, Any]] | None = None,
    path: Path | None = None,
    names: MetadataNames | None = None,
    index: ModuleIndex | None = None,
    corpus: Sequence[tuple[str, Sequence[str]]] = (),
) -> ImportResult:
    """Read `class_name` and its argparse registration from `source` (at `path`, whose
    package's other modules are followed for defaults and config dataclasses). A default
    that the schema cannot hold as it is stops the import (ImportError_ names every such
    field and the fix) unless `defaults` gives the value to use: defaults never change
    silently. What else cannot be carried over is listed in `losses`. Each abbreviation
    the legacy parser expands and a `corpus` line uses becomes an explicit alias."""
    record = read_record(source, class_name, path=path, origin=origin, names=names, index=index)
    given = dict(defaults or {})
    stops: list[str] = []
    leaves: dict[str, dict[str, dict[str, Any]]] = {}
    namespaces: dict[str, str] = {}
    for field in record.fields:
        spec = _leaf(record, field, given, stops)
        if spec is None:
            continue
        policy = (policies or {}).get(field.name, {})
        spec["owner"] = str(policy.get("owner") or DEFAULT_OWNER)
        spec["override"] = str(policy.get("override") or DEFAULT_OVERRIDE)
        own = field_namespace(field, record.arguments.get(field.name))
        if own is not None:
            namespaces[field.name] = own
        namespace = mapping.get(field.name) or own or DEFAULT_NAMESPACE
        leaves.setdefault(namespace, {})[field.name] = spec
    for dest in sorted(set(record.arguments) - {f.name for f in record.fields}):
        record.warnings.append(f"{origin}:{record.arguments[dest].line}: flag for {dest!r} has no field; not imported")
    for name in sorted(given):
        stops.append(f"{origin}: --default {name}=...: {class_name} has no field {name!r}")
    if stops:
        raise ImportError_(
            f"{len(stops)} default{'s' if len(stops) > 1 else ''} cannot be imported without "
            f"changing {'them' if len(stops) > 1 else 'it'}:\n  " + "\n  ".join(stops)
        )
    _abbreviations(record, leaves, corpus)
    _settle_flags(leaves, origin, record)
    return ImportResult(leaves, tuple(record.warnings), tuple(record.losses), namespaces)


def _abbreviations(
    record: _Record, leaves: dict[str, dict[str, dict[str, Any]]], corpus: Sequence[tuple[str, Sequence[str]]]
) -> None:
    """argparse lets `--tp` stand for `--tp-size` when no other flag starts so; the
    generated parser does not (a flag added later would change what an old line means).
    Each prefix the launch lines use is kept as an explicit alias of the leaf it meant."""
    if not corpus:
        return
    owner: dict[str, str] = {}
    for name, argument in record.arguments.items():
        owner.update(dict.fromkeys(argument.flags, name))
    for name, old in record.old.items():
        owner.update(dict.fromkeys((f for a in old for f in a.flags), name))
    specs = {n: spec for ns in leaves.values() for n, spec in ns.items()}
    for abbreviation in prefixes(corpus, [*owner, "--help"]):
        places = ", ".join(abbreviation.wheres[:3])
        if len(abbreviation.flags) > 1:
            record.warnings.append(f"abbreviation {abbreviation.prefix} (used at {places}) is ambiguous to the "
                                   f"legacy parser ({', '.join(abbreviation.flags)}); no alias proposed")
            continue
        leaf = owner.get(abbreviation.flags[0])
        spec = specs.get(leaf or "")
        if leaf is None or spec is None or spec.get("cli") is False:
            continue
        cli = dict(spec.get("cli") or {})
        cli["aliases"] = [*cli.get("aliases", ()), abbreviation.prefix]
        spec["cli"] = cli
        record.warnings.append(f"{leaf}: alias {abbreviation.prefix} added: the legacy parser expands it to "
                               f"{abbreviation.flags[0]}, and the launch lines use it ({places})")


def field_marker(field: Field) -> str | None:
    """The namespace the record's own marker (`NS("parallel")`) gives the field."""
    marker = field.meta.namespace
    return marker if marker and all(usable_namespace(p) for p in marker.split(".")) else None


def field_namespace(field: Field, argument: Argument | None = None) -> str | None:
    """The field's namespace as the record says it: its marker, else the config class its
    default points into (`ModelConfig.max_model_len` -> `model`) or its flag's keywords
    are built from."""
    owner = field.owner or (argument.config.owner if argument is not None and argument.config else None)
    return field_marker(field) or (class_namespace(owner.name) if owner is not None else None)


def class_namespace(class_name: str) -> str | None:
    """`ModelConfig` -> `model`, `SpeculativeConfig` -> `speculative`."""
    stem = re.sub(r"(Config|Configuration|Args|Arguments|Settings)$", "", class_name)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()
    return snake if snake and usable_namespace(snake) else None


def _leaf(record: _Record, field: Field, given: dict[str, Any], stops: list[str]) -> dict[str, Any] | None:
    """Steps 3-8 for one field: type, default, help, flags, choices, then the generator's
    value rules and what a bare flag means. None: the field is no leaf (or stops)."""
    where = f"{record.origin}:{field.line}: {field.name}"
    if not _LEAF_NAME.fullmatch(field.name) or field.name in RESERVED:
        record.warnings.append(f"{where}: skipped, not a usable leaf name (lowercase, not reserved)")
        return None
    argument = record.arguments.get(field.name)
    type_, choices = _leaf_type(record, field, argument)
    spec: dict[str, Any] = {"type": type_}
    is_given = field.name in given
    stop = _leaf_default(spec, field, given, where)
    if stop is not None:
        stops.append(stop)
        return None
    if field.structure is not None:
        spec["structure"] = field.structure
    spec["help"] = _leaf_help(record, field, argument, where)
    _leaf_cli(record, field, argument, spec, where)
    spec_choices = _leaf_choices(record, field, argument, choices)
    if spec_choices:
        spec["choices"] = spec_choices
    before = spec.get("choices")
    stop = _settle_values(spec, where, record.warnings, given=is_given)
    if stop is not None:
        stops.append(stop)
        return None
    if before and not spec.get("choices"):
        record.lose(field.name, f"choices {before!r} cannot be held by a {spec['type']} leaf")
    if argument is not None and isinstance(spec.get("cli", {}), dict):
        _bare_flag(spec, argument, record, where)
        _conversions(record, field, argument, spec)
    _mark_secret(record, field.name, spec, where)
    return spec


def _mark_secret(record: _Record, name: str, spec: dict[str, Any], where: str) -> None:
    """A field named like a credential (`runtime.record.credential_name`) becomes a
    `secret: true` leaf, so the generated code redacts it wherever it is shown and never
    hashes it; the warning names it, so a field that holds no credential is unmarked by
    hand. One the schema cannot hold as a secret (a text leaf defaulting to null, no
    const) is only warned about, saying how to mark it; its default is never shown."""
    word = credential_name(name)
    if word is None:
        return
    type_ = TypeSpec.parse(spec["type"])
    cli = spec.get("cli")
    if type_.base == "str" and type_.item is None and spec.get("default") is None \
            and not (isinstance(cli, dict) and "const" in cli):
        spec["secret"] = True
        record.warnings.append(f"{where}: marked `secret: true`, as its name names a credential ({word}): redacted "
                               f"wherever shown, never hashed; drop `secret: true` if it holds none")
        return
    record.warnings.append(f"{where}: its name names a credential ({word}), but as imported ({spec['type']}"
                           f"{', with a default' if spec.get('default') is not None else ''}) it cannot be a secret "
                           f"leaf, so it is shown and hashed like any value; if it holds a credential, make it an "
                           f"optional str leaf with `default: null` and `secret: true` in the schema")


def _leaf_type(record: _Record, field: Field, argument: Argument | None) -> tuple[str, list[Any] | None]:
    """The schema type and any `Literal`/`Enum` choices: from the field's annotation, else
    from the config dataclass field its flag kwargs are built from; nargs lists last."""
    found = schema_type(field.annotation, record.module)
    config = _config_field(argument)
    if config is not None and (found.lossy or field.annotation is None or found.choices is None):
        stmt, _ = config
        theirs = schema_type(stmt.annotation, argument.config.owner.module if argument and argument.config else None)
        if found.lossy or field.annotation is None:
            found = theirs
        elif theirs.choices and TypeSpec.parse(theirs.type).base == TypeSpec.parse(found.type).base:
            found = attrs.evolve(found, choices=theirs.choices)
    type_ = _list_from_nargs(found.type, argument)
    if found.lossy and TypeSpec.parse(type_).base == "json":
        record.lose(field.name, f"{found.lossy}; imported as {type_} (its flag parses JSON)")
    if found.structure is not None and TypeSpec.parse(type_).base == "json":
        field.structure = found.structure
    return type_, found.choices


def _config_field(argument: Argument | None) -> tuple[ast.AnnAssign, str | None] | None:
    if argument is None or argument.config is None:
        return None
    return astvalues.field_of(argument.config.owner, argument.config.name)


def _leaf_default(spec: dict[str, Any], field: Field, given: dict[str, Any], where: str) -> str | None:
    """The default as the engine has it (a `--default` given wins); a message stops the
    import when it cannot be computed."""
    default = field.default
    is_given = field.name in given
    if is_given:
        default = given.pop(field.name)
    if default is MISSING and field.default_note is None and not is_given:
        spec["required"] = True
        return None
    if default is MISSING:
        return (
            f"{where}: default `{field.default_note}` is not a literal, so it cannot be "
            f"imported as it is; fix: --default {field.name}=VALUE (YAML) with the value "
            f"the engine resolves it to"
        )
    if isinstance(default, (tuple, set, frozenset)):
        default = list(default)
    if default is None and not spec["type"].startswith("optional "):
        spec["type"] = "optional " + spec["type"]
    spec["default"] = default
    return None


def _leaf_help(record: _Record, field: Field, argument: Argument | None, where: str) -> str:
    """The flag's help, else the annotation's, the config field's docstring, the field's
    own docstring, or a placeholder that says the source has none."""
    text: str | None = None
    if argument is not None and "help" in argument.kwargs:
        raw = record.evaluator.value(argument.kwargs["help"])
        if isinstance(raw, str):
            text = _help_text(raw, field.default)
        else:
            record.warnings.append(f"{where}: help is not a literal string; used the field's doc or a placeholder")
    if not text and field.meta.help:
        text = _help_text(field.meta.help, field.default)
    config = _config_field(argument)
    text = text or (config[1] if config else None) or field.doc
    return text or f"Imported from {record.cls.name}.{field.name}; the source has no help text."


def _leaf_cli(record: _Record, field: Field, argument: Argument | None, spec: dict[str, Any], where: str) -> None:
    """`cli:` from the registration (or `false` without one), and the deprecated
    spellings as `renamed_from` (never the leaf's only flag) or the leaf `deprecated`."""
    old_flags = [*field.meta.deprecated_flags, *(f for a in record.old.get(field.name, ()) for f in a.flags)]
    if argument is None and not old_flags:
        spec["cli"] = False
    elif argument is not None:
        cli = _cli_spec(field.name, argument, where, record)
        if cli is not None:
            spec["cli"] = cli
    renamed = _renamed(record, field, old_flags)
    if renamed:
        spec["renamed_from"] = renamed
    if field.meta.deprecated:
        spec["deprecated"] = {"since": "0"}
        if isinstance(field.meta.deprecated, str):
            record.warnings.append(f"{where}: deprecated ({field.meta.deprecated}); `since` set to 0, edit it")


def _renamed(record: _Record, field: Field, flags: list[str]) -> list[Any]:
    names = {f.name for f in record.fields}
    out: list[Any] = []
    for flag in dict.fromkeys(flags):
        name = flag.lstrip("-").replace("-", "_")
        if not _FLAG.fullmatch(flag) or not _LEAF_NAME.fullmatch(name) or name in names or name in RESERVED:
            record.lose(field.name, f"the deprecated flag {flag} cannot be an old name of the leaf "
                                    f"({name!r} is not a free leaf name); left out")
            continue
        out.append(name if flag == flag_of(name) else {"name": name, "flag": flag})
    return out


def _leaf_choices(
    record: _Record, field: Field, argument: Argument | None, choices: list[Any] | None
) -> list[Any] | None:
    """`choices=` of the flag (or of its metadata), else the Literal or Enum choices."""
    node = argument.kwargs.get("choices") if argument is not None else None
    if node is None:
        return list(dict.fromkeys(choices)) if choices else None
    listed = record.evaluator.value(node)
    if isinstance(listed, (list, tuple, dict)) and listed:
        return list(dict.fromkeys(listed))
    record.lose(field.name, f"choices `{ast.unparse(node)}` are not constant; left out, so the leaf takes any value")
    return list(dict.fromkeys(choices)) if choices else None


def _conversions(record: _Record, field: Field, argument: Argument, spec: dict[str, Any]) -> None:
    """What argparse would do to a value that the generated flag does not: a custom
    Action, a type converter that cannot be seen through, a None-like string conversion."""
    action = argument.kwargs.get("action")
    if action is not None and not isinstance(action, ast.Constant) and name_of(action) != "BooleanOptionalAction":
        record.lose(field.name, f"the custom action `{ast.unparse(action)}` decides what {argument.flags[0]} "
                                f"stores; the generated flag stores the {spec['type']} value as given")
    converter = argument.kwargs.get("type")
    if converter is None or name_of(converter) in _PLAIN_CONVERTERS:
        return
    if _builds_its_structure(field, converter):
        record.warnings.append(
            f"{record.origin}:{field.line}: {field.name}: `{ast.unparse(converter)}` builds the config dataclass "
            f"from JSON; the generated {argument.flags[0]} takes the same JSON and dotted keys "
            f"({argument.flags[0]}.KEY VALUE), checked against the leaf's structure, and holds a dict of the "
            f"keys given: code that reads the leaf builds the dataclass from it (`ratchet fix` leaves those "
            f"reads to you)")
        return
    if _none_like(record.module, converter):
        record.lose(field.name, f"the type converter `{ast.unparse(converter)}` turns 'None'-like strings into "
                                f"None; the generated {argument.flags[0]} keeps the string")
    else:
        record.lose(field.name, f"the type converter `{ast.unparse(converter)}` cannot be seen through; the "
                                f"generated flag parses a plain {spec['type']}")


_PLAIN_CONVERTERS = {"int", "float", "str", "bool"}


def _builds_its_structure(field: Field, converter: ast.expr) -> bool:
    """Is `type=` the JSON reader of the field's own config dataclass (`json.loads`, or a
    method of the class the annotation names: `CompilationConfig.from_cli`)? Then the
    structured json leaf parses what it parsed."""
    if field.structure is None:
        return False
    if ast.unparse(converter) == "json.loads":
        return True
    if not isinstance(converter, ast.Attribute) or field.annotation is None:
        return False
    owner = ast.unparse(converter.value)
    return any(ast.unparse(node) == owner for node in ast.walk(field.annotation)
               if isinstance(node, (ast.Name, ast.Attribute)))


def _none_like(module: Module, converter: ast.expr) -> bool:
    """A converter function of the module that maps "None" or "" to None (`nullable_str`)."""
    if isinstance(converter, ast.Lambda):
        body: list[ast.AST] = [converter.body]
    else:
        functions = [s for s in module.tree.body if isinstance(s, ast.FunctionDef) and s.name == name_of(converter)]
        if not functions:
            return False
        body = list(functions[0].body)
    for node in (n for b in body for n in ast.walk(b)):
        if isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value in ("None", "none", "", "null") for c in [*node.comparators, node.left]
        ):
            return True
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(
            isinstance(e, ast.Constant) and e.value in ("None", "none", "null") for e in node.elts
        ):
            return True
    return False


def _help_text(text: str, default: Any) -> str:
    # argparse help strings are %-formatted; the schema holds plain text (the generator
    # escapes % itself), so undo the escaping and fill in %(default)s.
    text = text.replace("%(default)s", str(default) if default is not MISSING else "unset")
    return " ".join(text.replace("%%", "%").split())


def _nargs(argument: Argument) -> Any:
    """The flag's `nargs` as written (a literal), or None."""
    node = argument.kwargs.get("nargs")
    if node is None:
        return None
    with contextlib.suppress(ValueError, TypeError, SyntaxError):
        return ast.literal_eval(node)
    return None


def _list_from_nargs(type_: str, argument: Argument | None) -> str:
    """A field typed loosely (`list`, no annotation) whose flag takes `nargs` values of
    `type=int` or `type=str` is a list of them (`nargs="?"` takes one value, not a list)."""
    if argument is None or "nargs" not in argument.kwargs or TypeSpec.parse(type_).base != "json":
        return type_
    action = argument.kwargs.get("action")
    if action is not None and not isinstance(action, ast.Constant):
        return type_  # a custom action decides what the values become (a dict, say): not a list
    if _nargs(argument) == "?":
        return type_
    element = argument.kwargs.get("type")
    name = name_of(element) if element is not None else "str"
    if name not in ("int", "str"):
        return type_
    return ("optional " if type_.startswith("optional ") else "") + f"list[{name}]"


def _bare_flag(spec: dict[str, Any], argument: Argument, record: _Record, where: str) -> None:
    """Keep what the flag given alone means: argparse's `const` (with `nargs="?"`, or
    `action="store_const"`, which takes no value) becomes `cli: {const: ...}` (plus
    `nargs: 0`), and a list flag with `nargs="*"` (alone: an empty list) `nargs: "*"`.
    A const the leaf cannot hold is left out, and listed as lost: the generated flag then
    needs a value."""
    evaluator, warnings = record.evaluator, record.warnings
    name = where.rsplit(": ", 1)[-1]
    type_ = TypeSpec.parse(spec["type"])
    nargs = _nargs(argument)
    action_node = argument.kwargs.get("action")
    action = evaluator.value(action_node) if action_node is not None else "store"
    flag = argument.flags[0] if argument.flags else flag_of(name)
    if type_.item is not None:
        if nargs == "*":
            _set_cli(spec, nargs="*")
        return
    if action not in ("store", "store_const") or (action == "store" and nargs != "?"):
        return  # a plain value flag (or store_true/false, handled with the bool leaf)
    const: Any = None
    if "const" in argument.kwargs:
        const = evaluator.value(argument.kwargs["const"])
        if const is MISSING:
            record.lose(name, f"the bare flag `{flag}` stores const `{ast.unparse(argument.kwargs['const'])}`, "
                              f"which is not a literal; left out: the generated flag needs a value")
            return
    if type_.base == "bool":
        if const is not True or action == "store":
            warnings.append(f"{where}: the bool flag `{flag}` stores const {short_repr(const)} when bare; the generated "
                            f"`{flag}` means True and `{spellings([flag], True)[-1]}` False, and takes no value")
        return
    if isinstance(const, str) and action == "store" and type_.base in ("int", "float"):
        # argparse runs a str const through `type=` (never any other const); one that
        # fails there fails the bare legacy flag too, and is left out below
        with contextlib.suppress(ValueError):
            const = int(const) if type_.base == "int" else float(const)
    try:
        if type_.base == "json":
            raise LeafValueError(f"a json leaf's flag parses JSON; const {short_repr(const)} cannot be kept")
        _finite(const)
        type_.coerce(const)
        choices = spec.get("choices")
        if const is not None and choices is not None and const not in choices:
            raise LeafValueError(f"{short_repr(const)} is not one of the choices {choices!r}")
    except LeafValueError as exc:
        record.lose(name, f"the bare flag `{flag}` stores const {short_repr(const)}, which the leaf cannot "
                          f"hold ({exc}); left out: the generated flag needs a value (`{flag} VALUE`)")
        return
    _set_cli(spec, const=const, **({"nargs": 0} if action == "store_const" else {}))


def _set_cli(spec: dict[str, Any], **keys: Any) -> None:
    cli = dict(spec.get("cli") or {})
    cli.update(keys)
    spec["cli"] = cli


def _finite(value: Any) -> None:
    """YAML and JSON Schema have no portable inf/nan (`1e999` parses to inf): refuse them
    anywhere in a value, as a LeafValueError like the type checks."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LeafValueError(f"{short_repr(value)} is not a finite number")
    if isinstance(value, (list, tuple)):
        for item in value:
            _finite(item)
    elif isinstance(value, dict):
        for item in value.values():
            _finite(item)


def _settle_values(spec: dict[str, Any], where: str, warnings: list[str], *, given: bool = False) -> str | None:
    """Make the leaf's type, choices and default pass the generator's value rules (those
    of configbags.codegen.model's leaf checks: TypeSpec.coerce and check_bounds; no choices on bool
    or json). What does not fit is degraded, each time with a warning, rather than
    written as YAML that `make gen` rejects: bad choices are dropped, an int leaf with a
    float default becomes float, and a default argparse allowed outside its `choices`
    (argparse never checks defaults) joins the choices. A default that does not fit at all
    is never changed: the returned message stops the import, naming the fix."""
    type_ = TypeSpec.parse(spec["type"])
    choices: list[Any] | None = spec.pop("choices", None)
    if choices is not None and type_.base in ("bool", "json"):
        warnings.append(f"{where}: choices {choices!r} make no sense for type {type_}; dropped")
        choices = None
    if "default" in spec:
        default = spec["default"]
        try:
            _finite(default)
            type_.coerce(default)
        except LeafValueError as exc:
            if type_.base == "int" and isinstance(default, float) and math.isfinite(default):
                type_ = TypeSpec("float", type_.optional)
                warnings.append(f"{where}: default {short_repr(default)} is not an int; type widened to {type_}")
            else:
                source = "the --default given" if given else "the field's default"
                return (
                    f"{where}: {source} {short_repr(default)} does not fit type {type_} ({exc}); fix: "
                    f"--default {where.rsplit(': ', 1)[-1]}=VALUE (YAML) with a value of that type, "
                    f"or change the field's annotation"
                )
    if choices is not None:
        choices = _settle_choices(choices, type_, spec.get("default"), where, warnings)
    spec["type"] = str(type_)
    if choices:
        spec["choices"] = choices
    return None


def _settle_choices(
    choices: list[Any], type_: TypeSpec, default: Any, where: str, warnings: list[str]
) -> list[Any] | None:
    """The choices the leaf can hold (each of its item type, once), with the default
    among them: argparse never checks a default against its choices."""
    item = type_.item or TypeSpec(type_.base, False)
    kept: list[Any] = []
    dropped: list[Any] = []
    for choice in choices:
        try:
            _finite(choice)
            item.coerce(choice)
        except LeafValueError:
            dropped.append(choice)
            continue
        if choice not in kept:
            kept.append(choice)
    if dropped:
        warnings.append(f"{where}: choices {dropped!r} are not {item} values; dropped")
    values = default if isinstance(default, list) else [default]
    missing = [v for v in values if v is not None and v not in kept]
    if missing and kept:
        warnings.append(
            f"{where}: default {short_repr(default)} is not among the choices; added them to the choices "
            f"(argparse never checks a default against its choices)"
        )
        kept.extend(v for v in missing if v not in kept)
    if not kept:
        warnings.append(f"{where}: no usable choices left; the leaf takes any {item}")
        return None
    return kept


def _old_flag(entry: Any) -> str:
    return flag_of(entry, None) if isinstance(entry, str) else flag_of(entry["name"], entry.get("flag"))


def _claim(name: str, spec: Mapping[str, Any]) -> Claim:
    renamed = [(entry, None) if isinstance(entry, str) else (entry["name"], entry.get("flag"))
               for entry in spec.get("renamed_from", ())]
    return leaf_spellings(name, spec.get("cli"), renamed=renamed, negatable=TypeSpec.parse(spec["type"]).base == "bool")


def _settle_flags(leaves: dict[str, dict[str, dict[str, Any]]], origin: str, record: _Record) -> None:
    """The generator refuses reserved flags (--config, --help), one flag for two leaves and
    one spelled twice; settle each clash by the generator's own rule
    (configbags.runtime.spelling.clashes), so the imported schema generates: drop the
    alias (or old spelling), or leave the leaf off the command line when its own flag is
    the problem. Each is listed as lost: that spelling no longer reaches the leaf."""
    specs = {name: spec for namespace_leaves in leaves.values() for name, spec in namespace_leaves.items()}
    claims = {name: _claim(name, spec) for name, spec in specs.items()}
    lost: dict[str, set[str]] = {}  # leaf -> spellings others hold or reserve ("": its own flag)
    for clash in clashes(claims.values()):
        bad = lost.setdefault(clash.leaf, set())
        if clash.holder != clash.leaf:  # one listed twice: keeping the first copy settles it
            bad.add("" if clash.kind == "flag" else clash.flag)
    for name, bad in lost.items():
        spec = specs[name]
        cli = dict(spec.get("cli") or {})
        if "" in bad:  # its own flag (or the flag's --no- twin)
            record.lose(name, f"flag {flag_of(name, cli.get('flag'))} is reserved or used by another leaf; "
                              f"imported with `cli: false`")
            spec["cli"] = False
            continue
        negatable = TypeSpec.parse(spec["type"]).base == "bool"
        taken = set(claims[name].flags)
        aliases: list[str] = []
        dropped: list[str] = []
        for alias in cli.get("aliases", ()):
            mine = set(spellings([alias], negatable))
            (dropped if mine & (bad | taken) else aliases).append(alias)
            taken |= mine
        old = [e for e in spec.get("renamed_from", ()) if not set(spellings([_old_flag(e)], negatable)) & bad]
        dropped += [_old_flag(e) for e in spec.get("renamed_from", ()) if e not in old]
        if dropped:
            record.lose(name, f"aliases {dropped} are reserved, used by another leaf or listed twice; left out")
        if old:
            spec["renamed_from"] = old
        else:
            spec.pop("renamed_from", None)
        if aliases:
            cli["aliases"] = aliases
        else:
            cli.pop("aliases", None)
        if cli:
            spec["cli"] = cli
        else:
            spec.pop("cli", None)


def _cli_spec(name: str, argument: Argument, where: str, record: _Record) -> dict[str, Any] | None:
    """`cli:` for the leaf: the first long flag leads (unless it is the default spelling),
    every other spelling stays accepted as an alias, short ones (`-tp`) included."""
    action = argument.kwargs.get("action")
    if isinstance(action, ast.Constant) and action.value == "store_false":
        # `--disable-x` storing False into `x` has no schema spelling; the generator's
        # own bool flag for the leaf replaces it.
        record.warnings.append(f"{where}: store_false flag {argument.flags} inverts the leaf; the generated flag "
                               f"replaces it")
        return None
    long = [f for f in argument.flags if _FLAG.fullmatch(f)]
    short = [f for f in argument.flags if _SHORT.fullmatch(f)]
    dropped = [f for f in argument.flags if f not in long and f not in short]
    if dropped:
        record.lose(name, f"flags {dropped} are not --long-lowercase or -short; left out")
    if not long and not short:
        return None
    spec: dict[str, Any] = {}
    primary = long[0] if long else flag_of(name)
    if primary != flag_of(name):
        spec["flag"] = primary
    aliases = [f for f in [*long, *short] if f != primary]  # every legacy spelling stays accepted
    if aliases:
        spec["aliases"] = aliases
    return spec or None


class _Dumper(yaml.SafeDumper):
    """Block mappings with flow lists, the layout of the bundled schema."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(list, _represent_list)


def roles_yaml(owners: set[str]) -> str:
    """ROLES_YAML plus a role for each owner a policy names (a writing module)."""
    extra = sorted(owners - {"launcher", "test"})
    text = ROLES_YAML
    for owner in extra:
        text += (
            f"  {owner}:\n    doc: Writes leaves after parsing (proposed from where the engine writes them).\n"
            f"    reads: all\n"
        )
    return text


def schema_files(result: ImportResult, out: Path, *, origin: str) -> dict[Path, str]:
    """What the import writes: `out/namespaces/<ns>.yaml` (and parents) and, when `out`
    has none, `out/roles.yaml`, each path with its text."""
    files: dict[Path, str] = {}
    folder = out / "namespaces"
    namespaces = set(result.leaves)
    for namespace in list(namespaces):
        parts = namespace.split(".")
        namespaces.update(".".join(parts[:i]) for i in range(1, len(parts)))
    for namespace in sorted(namespaces):
        leaves = result.leaves.get(namespace, {})
        doc = (
            f"Imported from {origin} by configbags import-dataclass; review types, owners and "
            f"override policies."
            if namespace != DEFAULT_NAMESPACE
            else f"Leaves of {origin} not yet mapped to a namespace (configbags import-dataclass)."
        )
        body = yaml.dump(
            {"namespace": namespace, "doc": doc, "leaves": leaves},
            Dumper=_Dumper,
            sort_keys=False,
            allow_unicode=True,
            width=100,
            default_flow_style=False,
        )
        header = f"# Written by `configbags import-dataclass {origin}`; edit freely from here on.\n"
        files[folder / f"{namespace}.yaml"] = header + body
    roles = out / "roles.yaml"
    if not roles.exists():
        owners = {str(spec["owner"]) for leaves in result.leaves.values() for spec in leaves.values()}
        files[roles] = roles_yaml(owners)
    return files


def write_schema(
    result: ImportResult, out: Path, *, origin: str, force: bool = False
) -> tuple[list[Path], list[Path]]:
    """Write the schema files (see schema_files); returns (written, overwritten). An
    existing file whose text differs (a hand edit since the last import, or another
    import) is only overwritten with `force`: otherwise ImportError_ lists every such file
    and nothing is written."""
    files = schema_files(result, out, origin=origin)
    differing = []
    for path, text in files.items():
        try:
            if path.is_file() and path.read_text(encoding="utf-8") != text:
                differing.append(path)
        except (OSError, UnicodeDecodeError):
            differing.append(path)
    if differing and not force:
        listed = "\n  ".join(str(p) for p in differing)
        raise ImportError_(
            f"{len(differing)} schema file{'s' if len(differing) > 1 else ''} under {out} "
            f"differ{'' if len(differing) > 1 else 's'} from what this import writes (edited "
            f"since the last import?), so nothing was written:\n  {listed}\nKeep the edits "
            f"(import into another --out and merge by hand), or pass --force to overwrite them"
        )
    (out / "namespaces").mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return list(files), differing


def main(argv: list[str] | None = None) -> int:
    parser = UsageErrors(
        prog="configbags import-dataclass", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("source", metavar="FILE:CLASS", help="e.g. python/sglang/srt/server_args.py:ServerArgs")
    parser.add_argument("--out", type=project_path, required=True, help="schema folder to write")
    parser.add_argument(
        "--mapping", type=project_path,
        help="YAML {leaf: namespace}, or a --propose-mapping file; unmapped go to `legacy`",
    )
    parser.add_argument(
        "--propose-mapping", type=project_path, metavar="FILE",
        help="write an editable mapping (namespaces from section comments and name prefixes, "
        "policies from writes under --engine-root) and stop",
    )
    parser.add_argument("--engine-root", type=project_path, help="the engine's package, searched for writes")
    parser.add_argument(
        "--exclude", action="append", default=[], help="glob under --engine-root to leave out"
    )
    parser.add_argument(
        "--resolution", action="append", default=[], metavar="[FILE:]QUALNAME",
        help="a function of the legacy resolution phase (as for `ratchet init`): its writes "
        "under --engine-root need no looser policy",
    )
    parser.add_argument(
        "--force", action="store_true",
        help="overwrite schema files (or the --propose-mapping file) that differ from what the import writes",
    )
    parser.add_argument(
        "--default", action="append", default=[], metavar="NAME=VALUE",
        help="the default to import for a field whose own cannot be read or held (VALUE is YAML)",
    )
    parser.add_argument(
        "--metadata", action="append", default=[], metavar="KIND=NAME",
        help="the engine's name for its Annotated metadata or registration helper: flag=Arg, namespace=NS, "
        "help=..., registrar=..., kwargs=get_kwargs (also [tool.configbags.import] in the engine's pyproject.toml)",
    )
    parser.add_argument(
        "--harvest", type=project_path, metavar="DIR",
        help="launch lines under DIR (Markdown, shell, Python, YAML): each abbreviation they use becomes an alias",
    )
    parser.add_argument("--corpus", type=project_path, metavar="FILE", help="a cli-check corpus, used as --harvest is")
    parser.add_argument("--launcher", action="append", default=[], metavar="TEXT",
                        help="with --harvest: what a launch line runs (default: the record's top-level package)")
    parser.add_argument(
        "--accept-loss", action="store_true",
        help="write the schema even though something of the record or its flags could not be carried over "
        "(each is listed)",
    )
    args = parser.parse_args(argv)
    file_name, _, class_name = args.source.rpartition(":")
    if not file_name or not class_name:
        print_stderr("configbags import-dataclass: expected FILE:CLASS")
        return 2
    path = project_path(file_name)
    try:
        if args.engine_root is not None and not args.engine_root.is_dir():
            raise ImportInputError(f"--engine-root {args.engine_root}: no such folder (it names the engine's "
                                   f"package, searched for writes; relative to the project)")
        source = path.read_text(encoding="utf-8")
        if args.propose_mapping is not None:
            return _propose(args, source, path, class_name)
        mapping, policies = _mapping(args.mapping)
        defaults = _defaults(args.default)
        result = import_dataclass(
            source, class_name, mapping, origin=f"{path.name}:{class_name}", defaults=defaults,
            policies=policies, path=path, names=metadata_names(path, args.metadata),
            index=_index(args, path), corpus=_corpus(args, path),
        )
    except (OSError, SyntaxError, ImportInputError) as exc:
        if isinstance(exc, SyntaxError) and exc.filename in (None, "<unknown>"):
            exc.filename = str(path)  # the record's own source, parsed from its text
        print_stderr(f"configbags import-dataclass: {input_problem(exc)}")
        return 2
    except ImportError_ as exc:
        print_stderr(f"configbags import-dataclass: {exc}")
        return 1
    for unknown in sorted(set(mapping) - {n for leaves in result.leaves.values() for n in leaves}):
        print_stderr(f"warning: mapping names {unknown!r}, which is not a field of {class_name}")
    if not _report(result, class_name, args.out, accept_loss=args.accept_loss):
        return 1
    try:
        written, overwritten = write_schema(result, args.out, origin=f"{path.name}:{class_name}", force=args.force)
    except (OSError, ImportError_) as exc:
        print_stderr(f"configbags import-dataclass: {exc}")
        return 1
    for replaced in overwritten:
        print(f"overwrote {replaced} (--force): its edits are gone")
    if args.engine_root is not None:
        for warning in _startup_writes(args, path, class_name, result):
            print_stderr(f"warning: {warning}")
    count = sum(map(len, result.leaves.values()))
    hint = gen_hint(args.out, example=example_out(path))
    print(
        f"import-dataclass: {count} leaves into {len(result.leaves)} namespaces; wrote "
        f"{len(written)} files under {args.out}; next: run {hint}"
    )
    return 0


def _mapping(path: Path | None) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """--mapping: {leaf: namespace} and the proposal's `policies:` (empty without one)."""
    if path is None:
        return {}, {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ImportInputError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', None) or exc}); "
                               f"fix the mapping") from None
    try:
        return read_mapping(loaded)
    except ValueError as exc:
        raise ImportInputError(f"{path}: {exc}") from exc


def _defaults(items: list[str]) -> dict[str, Any]:
    """--default NAME=VALUE (YAML) for each field whose own default cannot be held."""
    defaults: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ImportInputError(f"--default {item!r}: expected NAME=VALUE")
        try:
            defaults[name.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ImportInputError(f"--default {item!r}: VALUE is not YAML ({exc}); quote it") from None
    return defaults


def _corpus(args: argparse.Namespace, path: Path) -> list[tuple[str, list[str]]]:
    """Launch lines from --corpus and --harvest, each with where it was found."""
    lines: list[tuple[str, list[str]]] = []
    if args.corpus is not None:
        text = args.corpus.read_text(encoding="utf-8")
        lines += [(f"{args.corpus}:{n}", words) for n, words in read_corpus(text)]
    if args.harvest is not None:
        package = ModuleIndex.around(path).module_name(path) or path.stem
        lines += harvested(args.harvest, package, args.launcher)
    return lines


def _report(result: ImportResult, class_name: str, out: Path, *, accept_loss: bool) -> bool:
    """Print the warnings and every loss; False: losses stop the import (no --accept-loss)."""
    for warning in result.warnings:
        print_stderr(f"warning: {warning}")
    if not result.losses:
        return True
    count = len(result.losses)
    print_stderr(f"{count} thing{'s' if count > 1 else ''} of {class_name} could not be carried over:")
    for loss in result.losses:
        print_stderr(f"  lost: {loss.render()}")
    if not accept_loss:
        print_stderr(f"configbags import-dataclass: nothing was written under {out}; fix what is listed "
                     f"(see docs/MIGRATING.md step 1), or pass --accept-loss to import without it")
    return accept_loss


def metadata_names(path: Path, items: list[str]) -> MetadataNames:
    """The engine's metadata names: its pyproject's [tool.configbags.import], then --metadata."""
    names = MetadataNames()
    pyproject = find_pyproject(path.resolve().parent)
    if pyproject is not None:
        try:
            table = read_toml(pyproject).get("tool", {}).get("configbags", {}).get("import")
        except (OSError, ValueError) as exc:
            raise ImportInputError(f"{pyproject}: cannot read [tool.configbags.import] ({exc})") from exc
        if table is not None:
            if not isinstance(table, dict):
                raise ImportInputError(f"{pyproject}: [tool.configbags.import] must be a table")
            try:
                names = MetadataNames.of(table, f"{pyproject} [tool.configbags.import]")
            except ValueError as exc:
                raise ImportInputError(str(exc)) from exc
    try:
        return names.with_items(items)
    except ValueError as exc:
        raise ImportInputError(str(exc)) from exc


def _index(args: argparse.Namespace, path: Path) -> ModuleIndex:
    """Where the engine's other modules are found: around the record's package, and the
    folder above --engine-root."""
    extra = [args.engine_root.resolve().parent] if args.engine_root is not None else []
    return ModuleIndex.around(path, *extra)


def _engine_scan(args: argparse.Namespace, path: Path, class_name: str) -> tuple[Path, ScanSettings, tuple[str, ...]]:
    """(root, scan settings, resolution) to search --engine-root for writes: the record's
    own module left out, resolution files made relative to the root as the scan names
    them (given as paths from the project, like every path of the command line)."""
    root = args.engine_root.resolve()
    excludes = tuple(args.exclude)
    if path.resolve().is_relative_to(root):
        excludes += (path.resolve().relative_to(root).as_posix(),)
    resolution: list[str] = []
    for entry in args.resolution:
        where, _, qualname = entry.rpartition(":")
        if where:
            file = project_path(where).resolve()
            where = file.relative_to(root).as_posix() if file.is_relative_to(root) else where
        resolution.append(f"{where}:{qualname}" if where else qualname)
    return root, ScanSettings(roots=(".",), excludes=excludes, record_class=class_name), tuple(resolution)


def _scan_progress() -> Progress | None:
    """The scan of --engine-root shows its progress on a terminal, as the ratchet's does."""
    return terminal_progress("import-dataclass: scanned {done} of {total} files under --engine-root")


def _startup_writes(args: argparse.Namespace, path: Path, class_name: str, result: ImportResult) -> list[str]:
    """A warning for each leaf imported `startup` that the engine writes after parsing,
    outside the resolution phase: such a write changes the record, not the bags, and as
    an override a startup leaf refuses it."""
    root, settings, resolution = _engine_scan(args, path, class_name)
    imported = {name: spec for leaves in result.leaves.values() for name, spec in leaves.items()}
    startup = [name for name, spec in imported.items() if spec.get("override") == DEFAULT_OVERRIDE]
    where: dict[str, list[str]] = {}
    for write in engine_writes(root, settings, startup, resolution, _scan_progress()):
        where.setdefault(write.leaf, []).append(f"{write.file}:{write.line}")
    mapping = args.mapping or "the --mapping file"
    return [
        f"{leaf} is imported with override: startup, but the engine writes it after parsing "
        f"({', '.join(sorted(set(lines)))} under {args.engine_root}): give it `override: load_time` "
        f"(and its owner) under `policies:` in {mapping} (--propose-mapping proposes it), or, if "
        f"only the resolution phase writes it, pass --resolution FILE:QUALNAME"
        for leaf, lines in sorted(where.items())
    ]


def _propose(args: argparse.Namespace, source: str, path: Path, class_name: str) -> int:
    record = read_record(source, class_name, path=path, origin=str(path),
                         names=metadata_names(path, args.metadata), index=_index(args, path))
    fields = [f.name for f in record.fields]
    own = {f.name: ns for f in record.fields if (ns := field_namespace(f, record.arguments.get(f.name))) is not None}
    root = settings = None
    resolution: tuple[str, ...] = ()
    if args.engine_root is not None:
        root, settings, resolution = _engine_scan(args, path, class_name)
    proposal = propose(source, class_name, fields, engine_root=root, settings=settings, resolution=resolution,
                       own=own, progress=_scan_progress())
    text = render(proposal, f"{path.name}:{class_name}")
    target: Path = args.propose_mapping
    if target.resolve() == path.resolve():
        raise ImportInputError(
            f"--propose-mapping {target} is the record's own source file; nothing was written. "
            f"Give a new file, e.g. --propose-mapping proposed.yaml"
        )
    if target.exists() and not args.force:
        try:
            current: str | None = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:  # an edited mapping, or some other file: never lost silently
            raise ImportError_(
                f"--propose-mapping {target} exists and differs from this proposal (an edited "
                f"mapping, or another file); nothing was written. Give a new file, or pass --force "
                f"to overwrite it"
            )
    target.write_text(text, encoding="utf-8")
    namespaces = sorted(set(proposal["leaves"].values()))
    print(
        f"import-dataclass: proposed {len(fields)} leaves in {len(namespaces)} namespaces "
        f"({', '.join(namespaces)}) and {len(proposal['policies'])} policy changes in "
        f"{args.propose_mapping}; edit it, then import with --mapping {args.propose_mapping}"
    )
    return 0
