"""`configbags import-dataclass FILE:CLASS --out DIR [--mapping FILE]`.

Turn an existing dataclass-style `ServerArgs` (SGLang's shape: annotated fields with
defaults, and an `add_cli_args` that calls `parser.add_argument(...)`) into schema YAML.
The source is read with `ast` and never imported: importing an engine's config module
pulls in torch, CUDA probes and side effects, and may not even work on this machine.

Each field becomes a leaf with its type, default, flag and aliases, help and choices, owned
by `launcher` with override policy `startup` (the safe starting point: the record is
fixed at publish; loosen per leaf afterwards). `--mapping` is a YAML file `{leaf:
namespace}`, or a `--propose-mapping` file whose `policies:` set override and owner per
leaf; unmapped leaves go to the `legacy` namespace. With `--engine-root`, a leaf imported
as startup that the engine writes after parsing (outside `--resolution`) is warned
about: a startup leaf cannot take that write as an override. `roles.yaml` is written when
the folder has none, so the result passes the generator as it stands. Schema files that
differ from what the import writes (hand edits) are overwritten only with `--force`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

# The generator's own rules, so that what is imported is what `make gen` accepts.
from configbags.codegen.model import RESERVED
from configbags.migrate.proposal import engine_writes, propose, read_mapping, render
from configbags.migrate.scan import ScanSettings
from configbags.migrate.targets import example_out, gen_hint
from configbags.runtime.errors import LeafValueError
from configbags.runtime.leaftypes import TypeSpec
from configbags.runtime.spelling import Claim, clashes, flag_of, leaf_spellings, spellings

DEFAULT_NAMESPACE = "legacy"
DEFAULT_OWNER = "launcher"
DEFAULT_OVERRIDE = "startup"
_MISSING = object()
_LEAF_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
_LISTS = {"List", "list", "Sequence", "Tuple", "tuple", "Set", "set", "FrozenSet", "frozenset"}

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
    """The source cannot be imported as asked (file, class or mapping missing or wrong)."""


@attrs.define
class Field:
    name: str
    line: int
    annotation: ast.expr | None
    default: Any = _MISSING  # _MISSING: no default; the leaf is required
    default_note: str | None = None  # why the default could not be read
    doc: str | None = None


@attrs.define
class Argument:
    dest: str
    flags: list[str]
    kwargs: dict[str, ast.expr]
    line: int


@attrs.frozen
class ImportResult:
    leaves: dict[str, dict[str, dict[str, Any]]]  # namespace -> leaf -> spec
    warnings: tuple[str, ...]


# Well-known constants an engine uses as big-int sentinels: they stay ints, never null.
_SENTINELS = {"sys.maxsize": sys.maxsize, "math.inf": math.inf, "float('inf')": math.inf}


def _literal(node: ast.expr | None, constants: Mapping[str, Any]) -> Any:
    """The value of a literal expression, resolving module-level constants; _MISSING if not."""
    if node is None:
        return _MISSING
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if ast.unparse(node) in _SENTINELS:
        return _SENTINELS[ast.unparse(node)]
    if isinstance(node, ast.Call) and _name(node.func) == "keys" and isinstance(node.func, ast.Attribute):
        # choices=list(BACKENDS.keys()) / BACKENDS.keys()
        inner = _literal(node.func.value, constants)
        return list(inner) if isinstance(inner, dict) else _MISSING
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, constants), _literal(node.right, constants)
        if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            return [*left, *right]
        return _MISSING
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "tuple", "sorted", "set")
        and len(node.args) == 1
    ):
        inner = _literal(node.args[0], constants)
        if inner is not _MISSING and isinstance(inner, (list, tuple, set, dict)):
            values = list(inner)
            return sorted(values) if node.func.id in ("sorted", "set") else values
    if isinstance(node, (ast.List, ast.Tuple)):
        items: list[Any] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):  # [*A, *B]
                inner = _literal(element.value, constants)
                if not isinstance(inner, (list, tuple)):
                    return _MISSING
                items.extend(inner)
            else:
                items.append(_literal(element, constants))
        return _MISSING if any(i is _MISSING for i in items) else items
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    constants: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _literal(stmt.value, constants)
            if value is not _MISSING:
                constants[stmt.targets[0].id] = value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            value = _literal(stmt.value, constants)
            if value is not _MISSING:
                constants[stmt.target.id] = value
    return constants


def _fields(cls: ast.ClassDef, constants: Mapping[str, Any]) -> list[Field]:
    fields: list[Field] = []
    body = cls.body
    for index, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        annotation_text = ast.unparse(stmt.annotation)
        if name.startswith("_") or "ClassVar" in annotation_text or "InitVar" in annotation_text:
            continue
        field = Field(name, stmt.lineno, stmt.annotation)
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field"):
            keywords = {k.arg: k.value for k in value.keywords if k.arg}
            if "default" in keywords:
                value = keywords["default"]
            elif "default_factory" in keywords:
                factory = keywords["default_factory"]
                made = {"list": [], "dict": {}, "tuple": [], "set": []}.get(ast.unparse(factory), _MISSING)
                if made is _MISSING and isinstance(factory, ast.Lambda):
                    made = _literal(factory.body, constants)
                field.default = made
                if made is _MISSING:
                    field.default_note = f"default_factory={ast.unparse(factory)}"
                value = None
            else:
                value = None
        if value is not None:
            field.default = _literal(value, constants)
            if field.default is _MISSING:
                field.default_note = ast.unparse(value)
        # vLLM style: a string literal right after the field documents it
        following = body[index + 1] if index + 1 < len(body) else None
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            field.doc = " ".join(following.value.value.split())
        fields.append(field)
    return fields


def _arguments(tree: ast.Module) -> dict[str, Argument]:
    found: dict[str, Argument] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = kwargs.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            long_flags = [f for f in flags if f.startswith("--")]
            if not long_flags:
                continue
            dest = long_flags[0][2:].replace("-", "_")
        found.setdefault(dest, Argument(dest, flags, kwargs, node.lineno))
    return found


def _cli_copies(tree: ast.Module) -> dict[str, str]:
    """argparse dest -> record field, from the copies a `from_cli_args`-style function makes:
    `args.tp_size = args.tensor_parallel_size`, `cls(tp_size=args.tensor_parallel_size)`
    or `{"tp_size": args.tensor_parallel_size}`."""
    copies: dict[str, str] = {}
    for function in ast.walk(tree):
        if not (isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and "cli" in function.name):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr != node.value.attr:
                        copies.setdefault(node.value.attr, target.attr)
            elif isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg and isinstance(keyword.value, ast.Attribute) and keyword.value.attr != keyword.arg:
                        copies.setdefault(keyword.value.attr, keyword.arg)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and isinstance(key.value, str)
                        and isinstance(value, ast.Attribute)
                        and value.attr != key.value
                    ):
                        copies.setdefault(value.attr, key.value)
    return copies


def _map_to_fields(arguments: dict[str, Argument], fields: set[str], copies: Mapping[str, str]) -> dict[str, Argument]:
    """Key each argument by the field it fills: its dest when that is a field, else the
    field a from_cli_args copy puts it in, else the field one of its flags is named after
    (`--tensor-parallel-size/--tp-size` fills `tp_size`)."""
    mapped: dict[str, Argument] = {}
    for dest, argument in arguments.items():
        field = dest if dest in fields else copies.get(dest)
        if field is None:
            named = [f[2:].replace("-", "_") for f in argument.flags if f.startswith("--")]
            field = next((n for n in named if n in fields), dest)
        other = mapped.get(field)
        if other is None:
            mapped[field] = attrs.evolve(argument, dest=field)
            continue
        # two registrations fill one field: the one whose dest is the field leads, the
        # other's flags become aliases
        lead, alias = (argument, other) if dest == field else (other, argument)
        mapped[field] = attrs.evolve(lead, dest=field, flags=[*lead.flags, *alias.flags])
    return mapped


def _type_of(annotation: ast.expr | None) -> tuple[str, list[Any] | None]:
    """(schema type, choices from a Literal) for a field annotation."""
    if annotation is None:
        return "json", None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return "json", None
    optional = False
    node = annotation
    # X | None, Optional[X], Union[X, None]
    while True:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Subscript) and _name(node.value) in ("Optional", "Union"):
            inner = node.slice
            parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
            if _name(node.value) == "Optional":
                parts.append(ast.Constant(None))
        else:
            break
        rest = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        optional = optional or len(rest) < len(parts)
        if len(rest) != 1:
            return ("optional json" if optional else "json"), None
        node = rest[0]
    prefix = "optional " if optional else ""
    name = _name(node)
    if name in _SCALARS:
        return prefix + _SCALARS[name], None
    if isinstance(node, ast.Subscript) and _name(node.value) == "Literal":
        inner = node.slice
        values = [e.value for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner]) if isinstance(e, ast.Constant)]
        if None in values:  # Literal["a", None] is Optional[Literal["a"]]
            values = [v for v in values if v is not None]
            prefix = "optional "
        kinds = {type(v) for v in values}
        base = "str" if kinds == {str} else "int" if kinds == {int} else "json"
        return prefix + base, values
    if isinstance(node, ast.Subscript) and _name(node.value) in _LISTS:
        inner = node.slice
        first = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
        element = _name(first)
        if element in ("int", "str"):
            return f"{prefix}list[{element}]", None
    return prefix + "json", None


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _help_text(text: str, default: Any) -> str:
    # argparse help strings are %-formatted; the schema holds plain text (the generator
    # escapes % itself), so undo the escaping and fill in %(default)s.
    text = text.replace("%(default)s", str(default) if default is not _MISSING else "unset")
    return " ".join(text.replace("%%", "%").split())


def import_dataclass(
    source: str,
    class_name: str,
    mapping: Mapping[str, str],
    *,
    origin: str = "<source>",
    defaults: Mapping[str, Any] | None = None,
    policies: Mapping[str, Mapping[str, Any]] | None = None,
) -> ImportResult:
    """Read `class_name` and its argparse registration from `source`. A default that the
    schema cannot hold as it is stops the import (ImportError_ names every such field and
    the fix) unless `defaults` gives the value to use: defaults never change silently."""
    tree = ast.parse(source)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        raise ImportError_(f"{origin}: no class {class_name!r}")
    constants = _module_constants(tree)
    fields = _fields(classes[0], constants)
    arguments = _map_to_fields(_arguments(tree), {f.name for f in fields}, _cli_copies(tree))
    defaults = dict(defaults or {})
    warnings: list[str] = []
    stops: list[str] = []
    leaves: dict[str, dict[str, dict[str, Any]]] = {}
    for field in fields:
        where = f"{origin}:{field.line}: {field.name}"
        if not _LEAF_NAME.match(field.name) or field.name in RESERVED:
            warnings.append(f"{where}: skipped, not a usable leaf name (lowercase, not reserved)")
            continue
        type_, literal_choices = _type_of(field.annotation)
        argument = arguments.get(field.name)
        type_ = _list_from_nargs(type_, argument)
        spec: dict[str, Any] = {"type": type_}
        default = field.default
        given = field.name in defaults
        if given:
            default = defaults.pop(field.name)
        if default is _MISSING and field.default_note is None and not given:
            spec["required"] = True
        else:
            if default is _MISSING:
                stops.append(
                    f"{where}: default `{field.default_note}` is not a literal, so it cannot be "
                    f"imported as it is; fix: --default {field.name}=VALUE (YAML) with the value "
                    f"the engine resolves it to"
                )
                continue
            if isinstance(default, tuple):
                default = list(default)
            if default is None and not type_.startswith("optional "):
                spec["type"] = type_ = "optional " + type_
            spec["default"] = default
        help_text = None
        if argument is not None and "help" in argument.kwargs:
            raw_help = _literal(argument.kwargs["help"], constants)
            if isinstance(raw_help, str):
                help_text = _help_text(raw_help, field.default)
            else:
                warnings.append(f"{where}: help is not a literal string; used the field's doc or a placeholder")
        help_text = help_text or field.doc or f"Imported from {class_name}.{field.name}; the source has no help text."
        spec["help"] = help_text
        if argument is None:
            spec["cli"] = False
        else:
            cli = _cli_spec(field.name, argument, where, warnings)
            if cli is not None:
                spec["cli"] = cli
        choices = literal_choices
        if argument is not None and "choices" in argument.kwargs:
            listed = _literal(argument.kwargs["choices"], constants)
            if isinstance(listed, (list, tuple)) and listed:
                choices = list(listed)
            else:
                warnings.append(f"{where}: choices `{ast.unparse(argument.kwargs['choices'])}` are not literal; left out")
        if choices:
            spec["choices"] = list(dict.fromkeys(choices))
        stop = _settle_values(spec, where, warnings, given=given)
        if stop is not None:
            stops.append(stop)
            continue
        if argument is not None and isinstance(spec.get("cli", {}), dict):
            _bare_flag(spec, argument, constants, where, warnings)
        policy = (policies or {}).get(field.name, {})
        spec["owner"] = str(policy.get("owner") or DEFAULT_OWNER)
        spec["override"] = str(policy.get("override") or DEFAULT_OVERRIDE)
        namespace = mapping.get(field.name, DEFAULT_NAMESPACE)
        leaves.setdefault(namespace, {})[field.name] = spec
    for dest in sorted(set(arguments) - {f.name for f in fields}):
        warnings.append(f"{origin}:{arguments[dest].line}: flag for {dest!r} has no field; not imported")
    for name in sorted(defaults):
        stops.append(f"{origin}: --default {name}=...: {class_name} has no field {name!r}")
    if stops:
        raise ImportError_(
            f"{len(stops)} default{'s' if len(stops) > 1 else ''} cannot be imported without "
            f"changing {'them' if len(stops) > 1 else 'it'}:\n  " + "\n  ".join(stops)
        )
    _settle_flags(leaves, origin, warnings)
    return ImportResult(leaves, tuple(warnings))


def _nargs(argument: Argument) -> Any:
    """The flag's `nargs` as written (a literal), or None."""
    node = argument.kwargs.get("nargs")
    value = _literal(node, {}) if node is not None else None
    return None if value is _MISSING else value


def _list_from_nargs(type_: str, argument: Argument | None) -> str:
    """A field typed loosely (`list`, no annotation) whose flag takes `nargs` values of
    `type=int` or `type=str` is a list of them (`nargs="?"` takes one value, not a list)."""
    if argument is None or "nargs" not in argument.kwargs or TypeSpec.parse(type_).base != "json":
        return type_
    if _nargs(argument) == "?":
        return type_
    element = argument.kwargs.get("type")
    name = _name(element) if element is not None else "str"
    if name not in ("int", "str"):
        return type_
    return ("optional " if type_.startswith("optional ") else "") + f"list[{name}]"


def _bare_flag(
    spec: dict[str, Any], argument: Argument, constants: Mapping[str, Any], where: str, warnings: list[str]
) -> None:
    """Keep what the flag given alone means: argparse's `const` (with `nargs="?"`, or
    `action="store_const"`, which takes no value) becomes `cli: {const: ...}` (plus
    `nargs: 0`), and a list flag with `nargs="*"` (alone: an empty list) `nargs: "*"`.
    A const the leaf cannot hold is left out, with a warning: the generated flag then
    needs a value."""
    type_ = TypeSpec.parse(spec["type"])
    nargs = _nargs(argument)
    action_node = argument.kwargs.get("action")
    action = _literal(action_node, constants) if action_node is not None else "store"
    flag = argument.flags[0]
    if type_.item is not None:
        if nargs == "*":
            _set_cli(spec, nargs="*")
        return
    if action not in ("store", "store_const") or (action == "store" and nargs != "?"):
        return  # a plain value flag (or store_true/false, handled with the bool leaf)
    const: Any = None
    if "const" in argument.kwargs:
        const = _literal(argument.kwargs["const"], constants)
        if const is _MISSING:
            warnings.append(f"{where}: the bare flag `{flag}` stores const "
                            f"`{ast.unparse(argument.kwargs['const'])}`, which is not a literal; "
                            f"left out: the generated flag needs a value")
            return
    if type_.base == "bool":
        if const is not True or action == "store":
            warnings.append(f"{where}: the bool flag `{flag}` stores const {const!r} when bare; the generated "
                            f"`{flag}` means True and `{spellings([flag], True)[-1]}` False, and takes no value")
        return
    if isinstance(const, str) and action == "store" and type_.base in ("int", "float"):
        # argparse runs a str const through `type=` (never any other const); one that
        # fails there fails the bare legacy flag too, and is left out below
        with contextlib.suppress(ValueError):
            const = int(const) if type_.base == "int" else float(const)
    try:
        if type_.base == "json":
            raise LeafValueError(f"a json leaf's flag parses JSON; const {const!r} cannot be kept")
        _finite(const)
        type_.coerce(const)
        choices = spec.get("choices")
        if const is not None and choices is not None and const not in choices:
            raise LeafValueError(f"{const!r} is not one of the choices {choices!r}")
    except LeafValueError as exc:
        warnings.append(f"{where}: the bare flag `{flag}` stores const {const!r}, which the leaf cannot "
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
        raise LeafValueError(f"{value!r} is not a finite number")
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
                warnings.append(f"{where}: default {default!r} is not an int; type widened to {type_}")
            else:
                source = "the --default given" if given else "the field's default"
                return (
                    f"{where}: {source} {default!r} does not fit type {type_} ({exc}); fix: "
                    f"--default {where.rsplit(': ', 1)[-1]}=VALUE (YAML) with a value of that type, "
                    f"or change the field's annotation"
                )
    if choices is not None:
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
        default = spec.get("default")
        values = default if isinstance(default, list) else [default]
        missing = [v for v in values if v is not None and v not in kept]
        if missing and kept:
            warnings.append(
                f"{where}: default {default!r} is not among the choices; added them to the choices "
                f"(argparse never checks a default against its choices)"
            )
            kept.extend(v for v in missing if v not in kept)
        if kept:
            choices = kept
        else:
            warnings.append(f"{where}: no usable choices left; the leaf takes any {item}")
            choices = None
    spec["type"] = str(type_)
    if choices:
        spec["choices"] = choices
    return None


def _claim(name: str, spec: Mapping[str, Any]) -> Claim:
    return leaf_spellings(name, spec.get("cli"), negatable=TypeSpec.parse(spec["type"]).base == "bool")


def _settle_flags(leaves: dict[str, dict[str, dict[str, Any]]], origin: str, warnings: list[str]) -> None:
    """The generator refuses reserved flags (--config, --help), one flag for two leaves and
    one spelled twice; settle each clash by the generator's own rule
    (configbags.runtime.spelling.clashes), so the imported schema generates: drop the
    alias, or leave the leaf off the command line when its own flag is the problem."""
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
            warnings.append(f"{origin}: {name}: flag {flag_of(name, cli.get('flag'))} is reserved or used by another "
                            f"leaf; imported with `cli: false`")
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
        warnings.append(f"{origin}: {name}: aliases {dropped} are reserved, used by another leaf or listed "
                        f"twice; left out")
        if aliases:
            cli["aliases"] = aliases
        else:
            cli.pop("aliases", None)
        if cli:
            spec["cli"] = cli
        else:
            spec.pop("cli", None)


def _cli_spec(name: str, argument: Argument, where: str, warnings: list[str]) -> dict[str, Any] | None:
    action = argument.kwargs.get("action")
    if isinstance(action, ast.Constant) and action.value == "store_false":
        # `--disable-x` storing False into `x` has no schema spelling; the generator's
        # own bool flag for the leaf replaces it.
        warnings.append(f"{where}: store_false flag {argument.flags} inverts the leaf; the generated flag replaces it")
        return None
    usable = [f for f in argument.flags if _FLAG.match(f)]
    dropped = [f for f in argument.flags if f not in usable]
    if dropped:
        warnings.append(f"{where}: flags {dropped} are not --long-lowercase; left out")
    if not usable:
        return None
    spec: dict[str, Any] = {}
    if usable[0] != flag_of(name):
        spec["flag"] = usable[0]
    aliases = usable[1:]  # every legacy spelling stays accepted
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
    parser = argparse.ArgumentParser(
        prog="configbags import-dataclass", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("source", metavar="FILE:CLASS", help="e.g. python/sglang/srt/server_args.py:ServerArgs")
    parser.add_argument("--out", type=Path, required=True, help="schema folder to write")
    parser.add_argument(
        "--mapping", type=Path,
        help="YAML {leaf: namespace}, or a --propose-mapping file; unmapped go to `legacy`",
    )
    parser.add_argument(
        "--propose-mapping", type=Path, metavar="FILE",
        help="write an editable mapping (namespaces from section comments and name prefixes, "
        "policies from writes under --engine-root) and stop",
    )
    parser.add_argument("--engine-root", type=Path, help="the engine's package, searched for writes")
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
    args = parser.parse_args(argv)
    file_name, _, class_name = args.source.rpartition(":")
    if not file_name or not class_name:
        print("configbags import-dataclass: expected FILE:CLASS", file=sys.stderr)
        return 2
    path = Path(file_name)
    try:
        source = path.read_text(encoding="utf-8")
        mapping: dict[str, str] = {}
        policies: dict[str, dict[str, Any]] = {}
        if args.propose_mapping is not None:
            return _propose(args, source, path, class_name)
        if args.mapping is not None:
            loaded = yaml.safe_load(args.mapping.read_text(encoding="utf-8")) or {}
            try:
                mapping, policies = read_mapping(loaded)
            except ValueError as exc:
                raise ImportError_(f"{args.mapping}: {exc}") from exc
        defaults: dict[str, Any] = {}
        for item in args.default:
            name, sep, value = item.partition("=")
            if not sep:
                raise ImportError_(f"--default {item!r}: expected NAME=VALUE")
            defaults[name.strip()] = yaml.safe_load(value)
        result = import_dataclass(
            source, class_name, mapping, origin=f"{path.name}:{class_name}", defaults=defaults,
            policies=policies,
        )
    except (OSError, SyntaxError, yaml.YAMLError, ImportError_) as exc:
        print(f"configbags import-dataclass: {exc}", file=sys.stderr)
        return 1
    for unknown in sorted(set(mapping) - {n for leaves in result.leaves.values() for n in leaves}):
        print(f"warning: mapping names {unknown!r}, which is not a field of {class_name}", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        written, overwritten = write_schema(result, args.out, origin=f"{path.name}:{class_name}", force=args.force)
    except (OSError, ImportError_) as exc:
        print(f"configbags import-dataclass: {exc}", file=sys.stderr)
        return 1
    for replaced in overwritten:
        print(f"overwrote {replaced} (--force): its edits are gone")
    if args.engine_root is not None:
        for warning in _startup_writes(args, path, class_name, result):
            print(f"warning: {warning}", file=sys.stderr)
    count = sum(map(len, result.leaves.values()))
    hint = gen_hint(args.out, example=example_out(path))
    print(
        f"import-dataclass: {count} leaves into {len(result.leaves)} namespaces; wrote "
        f"{len(written)} files under {args.out}; next: run {hint}"
    )
    return 0


def _engine_scan(args: argparse.Namespace, path: Path, class_name: str) -> tuple[Path, ScanSettings, tuple[str, ...]]:
    """(root, scan settings, resolution) to search --engine-root for writes: the record's
    own module left out, resolution files made relative to the root as the scan names
    them (given as paths from the working folder, like `ratchet init --resolution`)."""
    root = args.engine_root.resolve()
    excludes = tuple(args.exclude)
    if path.resolve().is_relative_to(root):
        excludes += (path.resolve().relative_to(root).as_posix(),)
    resolution: list[str] = []
    for entry in args.resolution:
        where, _, qualname = entry.rpartition(":")
        if where:
            file = Path(where).resolve()
            where = file.relative_to(root).as_posix() if file.is_relative_to(root) else where
        resolution.append(f"{where}:{qualname}" if where else qualname)
    return root, ScanSettings(roots=(".",), excludes=excludes, record_class=class_name), tuple(resolution)


def _startup_writes(args: argparse.Namespace, path: Path, class_name: str, result: ImportResult) -> list[str]:
    """A warning for each leaf imported `startup` that the engine writes after parsing,
    outside the resolution phase: such a write changes the record, not the bags, and as
    an override a startup leaf refuses it."""
    root, settings, resolution = _engine_scan(args, path, class_name)
    imported = {name: spec for leaves in result.leaves.values() for name, spec in leaves.items()}
    startup = [name for name, spec in imported.items() if spec.get("override") == DEFAULT_OVERRIDE]
    where: dict[str, list[str]] = {}
    for write in engine_writes(root, settings, startup, resolution):
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
    tree = ast.parse(source)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        raise ImportError_(f"{path}: no class {class_name!r}")
    fields = [f.name for f in _fields(classes[0], _module_constants(tree))]
    root = settings = None
    resolution: tuple[str, ...] = ()
    if args.engine_root is not None:
        root, settings, resolution = _engine_scan(args, path, class_name)
    proposal = propose(source, class_name, fields, engine_root=root, settings=settings, resolution=resolution)
    text = render(proposal, f"{path.name}:{class_name}")
    target: Path = args.propose_mapping
    if target.resolve() == path.resolve():
        raise ImportError_(
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
