"""How an engine puts its record on the command line, read by AST: the hand-written
`parser.add_argument(...)` calls, a dataclass-driven helper that registers every field
(`add_dataclass_args(parser, ServerArgs)`: its flags derived as the helper derives them,
from the field name and the field's flag metadata), and flag keyword arguments built at
run time from config dataclasses (vLLM's `**get_kwargs(CacheConfig)["block_size"]`: the
type, `Literal` choices and attribute docstring of `CacheConfig.block_size`).

Each registration becomes an `Argument` keyed by the argparse dest; `fill_fields` then
keys them by the record field each one fills and merges registrations of one field.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

import attrs

from configbags.migrate.annotated import FieldMeta, MetadataNames, called
from configbags.migrate.astvalues import MISSING, ClassRef, Evaluator


@attrs.frozen
class ConfigField:
    """A field of a config dataclass that a flag's kwargs are built from."""

    owner: ClassRef
    name: str


@attrs.define
class Argument:
    dest: str
    flags: list[str]
    kwargs: dict[str, ast.expr]
    line: int
    config: ConfigField | None = None  # kwargs built from this config dataclass field
    deprecated: bool = False  # every spelling is an old one (argparse's deprecated=True)
    derived: bool = False  # registered by the dataclass-driven helper, not by hand
    opaque: list[str] = attrs.Factory(list)  # `**kwargs` that could not be read, as written


def _is_add_argument(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _kwargs_sources(function: ast.AST, evaluator: Evaluator, names: MetadataNames) -> dict[str, ClassRef]:
    """Local names bound to kwargs built from a config dataclass: `kw = get_kwargs(Cfg)`."""
    found: dict[str, ClassRef] = {}
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and called(node.value) in names.kwargs and isinstance(node.value, ast.Call) and node.value.args
        ):
            owner = evaluator.value(node.value.args[0])
            if isinstance(owner, ClassRef):
                found[node.targets[0].id] = owner
    return found


def _config_field(node: ast.expr, sources: Mapping[str, ClassRef], evaluator: Evaluator) -> ConfigField | None:
    """`kw["block_size"]` (or `get_kwargs(Cfg)["block_size"]`) -> CacheConfig.block_size."""
    if not isinstance(node, ast.Subscript):
        return None
    key = evaluator.value(node.slice)
    if not isinstance(key, str):
        return None
    if isinstance(node.value, ast.Name) and node.value.id in sources:
        return ConfigField(sources[node.value.id], key)
    if isinstance(node.value, ast.Call) and node.value.args:
        owner = evaluator.value(node.value.args[0])
        if isinstance(owner, ClassRef):
            return ConfigField(owner, key)
    return None


def hand_written(tree: ast.Module, evaluator: Evaluator, names: MetadataNames) -> dict[str, Argument]:
    """dest -> Argument for every `add_argument` call of the module."""
    found: dict[str, Argument] = {}
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    owners: dict[int, dict[str, ClassRef]] = {}
    for function in functions:
        sources = _kwargs_sources(function, evaluator, names)
        for node in ast.walk(function):
            owners.setdefault(id(node), sources)
    for node in ast.walk(tree):
        if not _is_add_argument(node):
            continue
        assert isinstance(node, ast.Call)
        argument = _argument(node, owners.get(id(node), {}), evaluator)
        if argument is not None:
            found.setdefault(argument.dest, argument)
    return found


def _argument(node: ast.Call, sources: Mapping[str, ClassRef], evaluator: Evaluator) -> Argument | None:
    flags: list[str] = []
    for arg in node.args:
        value = evaluator.value(arg)
        if isinstance(value, str):
            flags.append(value)
    kwargs: dict[str, ast.expr] = {}
    config: ConfigField | None = None
    opaque: list[str] = []
    for keyword in node.keywords:
        if keyword.arg is not None:
            kwargs[keyword.arg] = keyword.value
            continue
        config = config or _config_field(keyword.value, sources, evaluator)
        if config is None:
            opaque.append(f"**{ast.unparse(keyword.value)}")
    dest_value = evaluator.value(kwargs["dest"]) if "dest" in kwargs else MISSING
    if isinstance(dest_value, str):
        dest = dest_value
    else:
        long_flags = [f for f in flags if f.startswith("--")]
        if not long_flags:
            if config is None:
                return None
            dest = config.name
        else:
            dest = long_flags[0][2:].replace("-", "_")
    deprecated = evaluator.value(kwargs.pop("deprecated", None)) is True or _deprecated_action(kwargs)
    return Argument(dest, flags, kwargs, node.lineno, config=config, deprecated=deprecated, opaque=opaque)


def _deprecated_action(kwargs: Mapping[str, ast.expr]) -> bool:
    """`action=DeprecatedAction`: the flag only warns that it is going away."""
    action = kwargs.get("action")
    return action is not None and not isinstance(action, ast.Constant) and "deprecat" in ast.unparse(action).lower()


def registrar_calls(tree: ast.Module, class_name: str, names: MetadataNames) -> list[ast.Call]:
    """Calls of the dataclass-driven helper that register the record's fields: a named
    registrar, or any `*arg*` helper called with the record class (or `cls` inside it)."""
    found: list[ast.Call] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _is_add_argument(node):
            continue
        name = called(node)
        passes_record = any(
            isinstance(a, ast.Name) and a.id in (class_name, "cls") for a in [*node.args, *(k.value for k in node.keywords)]
        )
        if name in names.registrar or (passes_record and "arg" in name.lower() and name != "from_cli_args"):
            found.append(node)
    return found


def derived(field: str, meta: FieldMeta, line: int) -> Argument | None:
    """The Argument the dataclass-driven helper registers for one field: its flag metadata's
    spellings, else `--` and the field name with dashes; aliases and old spellings too."""
    if not meta.cli:
        return None
    flags = [*(meta.flags or ["--" + field.replace("_", "-")]), *meta.aliases]
    return Argument(field, list(dict.fromkeys(flags)), dict(meta.kwargs), line, derived=True)


def cli_copies(tree: ast.Module) -> dict[str, str]:
    """argparse dest -> record field, from the copies a `from_cli_args`-style function makes:
    `args.tp_size = args.tensor_parallel_size`, `cls(tp_size=args.tensor_parallel_size)`
    or `{"tp_size": args.tensor_parallel_size}`."""
    copies: dict[str, str] = {}
    for function in ast.walk(tree):
        if not (isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and "cli" in function.name):
            continue
        for node in ast.walk(function):
            for source, target in _copies_in(node):
                copies.setdefault(source, target)
    return copies


def _copies_in(node: ast.AST) -> Iterable[tuple[str, str]]:
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
        source = node.value.attr
        yield from ((source, t.attr) for t in node.targets if isinstance(t, ast.Attribute) and t.attr != source)
    elif isinstance(node, ast.Call):
        yield from (
            (k.value.attr, k.arg) for k in node.keywords
            if k.arg and isinstance(k.value, ast.Attribute) and k.value.attr != k.arg
        )
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Attribute)
                    and value.attr != key.value):
                yield value.attr, key.value


def fill_fields(
    arguments: Mapping[str, Argument], fields: set[str], copies: Mapping[str, str]
) -> tuple[dict[str, Argument], dict[str, list[Argument]]]:
    """(field -> its Argument, field -> its deprecated registrations). Each argument is
    keyed by the field it fills: its dest when that is a field, else the field a
    from_cli_args copy puts it in, else the field one of its flags is named after
    (`--tensor-parallel-size/--tp-size` fills `tp_size`). Registrations of one field are
    merged: the one whose dest is the field leads, a hand-written one before a derived
    one, and the others' flags become aliases. A deprecated registration never leads: its
    spellings become the leaf's old ones."""
    mapped: dict[str, Argument] = {}
    old: dict[str, list[Argument]] = {}
    for dest, argument in arguments.items():
        field = dest if dest in fields else copies.get(dest)
        if field is None:
            named = [f[2:].replace("-", "_") for f in argument.flags if f.startswith("--")]
            field = next((n for n in named if n in fields), dest)
        if argument.deprecated:
            old.setdefault(field, []).append(argument)
            continue
        merge(mapped, field, argument, leads=dest == field)
    return mapped, old


def merge(mapped: dict[str, Argument], field: str, argument: Argument, *, leads: bool) -> None:
    other = mapped.get(field)
    if other is None:
        mapped[field] = attrs.evolve(argument, dest=field)
        return
    lead, alias = (argument, other) if leads and not (argument.derived and not other.derived) else (other, argument)
    flags = list(dict.fromkeys([*lead.flags, *alias.flags]))
    kwargs = {**alias.kwargs, **lead.kwargs}  # the hand-written call's keywords win
    mapped[field] = attrs.evolve(lead, dest=field, flags=flags, kwargs=kwargs, config=lead.config or alias.config,
                                 derived=lead.derived and alias.derived)
