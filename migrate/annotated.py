"""Records written with `typing.Annotated`: the type, the help, the flag and the namespace of
a field all sit in its annotation (`Annotated[int, "help", Arg("--tp", ...), NS("parallel")]`).

An engine's metadata classes are its own, so it names them (`MetadataNames`): in its
`pyproject.toml`,

    [tool.configbags.import]
    flag = ["Arg"]                     # flag metadata: flags, aliases, choices, nargs, deprecated
    namespace = ["NS"]                 # the field's namespace: NS("parallel")
    help = []                          # a class wrapping help text (a plain string always is help)
    registrar = ["add_dataclass_args"] # a helper that registers every field as a flag

or on the command line (`--metadata flag=Arg --metadata namespace=NS`). Those are SGLang's
names. `unwrap` takes `Annotated[...]` apart wherever it sits (inside `Optional`, a
union, a list); `read` turns the metadata into a `FieldMeta`, and lists whatever it cannot
read as a loss, with the reason, rather than dropping it.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from configbags.migrate.astvalues import MISSING, Evaluator

KINDS = ("flag", "namespace", "help", "registrar", "kwargs")
# Keywords a flag metadata object may carry, as argparse's add_argument spells them plus the
# few a dataclass-driven helper adds (`aliases`, `deprecated`, `cli=False`).
FLAG_KEYWORDS = frozenset({
    "flags", "flag", "aliases", "choices", "nargs", "deprecated", "deprecated_flags", "deprecated_aliases",
    "help", "action", "type", "const", "metavar", "dest", "cli", "skip", "required", "default", "since",
})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@attrs.frozen
class MetadataNames:
    """The engine's own names for its annotation metadata and registration helpers."""

    flag: frozenset[str] = frozenset()
    namespace: frozenset[str] = frozenset()
    help: frozenset[str] = frozenset()
    registrar: frozenset[str] = frozenset()
    kwargs: frozenset[str] = frozenset({"get_kwargs"})  # builds add_argument kwargs from a config dataclass

    @classmethod
    def of(cls, table: Mapping[str, Any], where: str) -> MetadataNames:
        """From a `[tool.configbags.import]` table: each kind a name or a list of names."""
        unknown = sorted(set(table) - set(KINDS))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KINDS)}")
        found: dict[str, frozenset[str]] = {}
        for kind, value in table.items():
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in names):
                raise ValueError(f"{where}: {kind} must be a class or function name, or a list of them")
            found[kind] = frozenset(names)
        return cls(**found)

    def with_items(self, items: Sequence[str]) -> MetadataNames:
        """These names plus `KIND=NAME[,NAME...]` items from the command line."""
        extra: dict[str, set[str]] = {}
        for item in items:
            kind, sep, names = item.partition("=")
            if not sep or kind not in KINDS:
                raise ValueError(f"--metadata {item!r}: expected KIND=NAME with KIND one of {', '.join(KINDS)}")
            for name in names.split(","):
                if not _NAME.fullmatch(name):
                    raise ValueError(f"--metadata {item!r}: {name!r} is not a Python name")
                extra.setdefault(kind, set()).add(name)
        return attrs.evolve(self, **{k: getattr(self, k) | v for k, v in extra.items()})


@attrs.define
class FieldMeta:
    """What a field's annotation says besides its type."""

    help: str | None = None
    flags: list[str] = attrs.Factory(list)  # the flag metadata's own spellings, primary first
    aliases: list[str] = attrs.Factory(list)
    deprecated_flags: list[str] = attrs.Factory(list)  # old spellings: renamed_from
    deprecated: str | bool = False  # the leaf itself is deprecated (a message, or True)
    kwargs: dict[str, ast.expr] = attrs.Factory(dict)  # choices, nargs, action, type, const ...
    namespace: str | None = None
    cli: bool = True  # False: the registration helper leaves the field off the command line
    has_flag: bool = False  # a flag metadata object was found
    lost: list[str] = attrs.Factory(list)  # what could not be read, each with its reason


def _is(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name
    )


def called(node: ast.expr) -> str:
    """The name a call calls (`Arg(...)`, `meta.Arg(...)`), or ''."""
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return ""


def unwrap(annotation: ast.expr | None) -> tuple[ast.expr | None, list[ast.expr]]:
    """(the annotation without any `Annotated`, the metadata of every `Annotated` in it).
    A string annotation is parsed first. `Optional[Annotated[int, m]]` is `Optional[int]`
    with metadata [m]."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation, []
    if annotation is None:
        return None, []
    metadata: list[ast.expr] = []

    class Strip(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if _is(node.value, "Annotated") and isinstance(node.slice, ast.Tuple) and node.slice.elts:
                metadata.extend(node.slice.elts[1:])
                inner: ast.AST = self.visit(node.slice.elts[0])
                return inner
            self.generic_visit(node)
            return node

    stripped = Strip().visit(copy.deepcopy(annotation))
    assert isinstance(stripped, ast.expr)
    return stripped, metadata


def read(metadata: Sequence[ast.expr], names: MetadataNames, evaluator: Evaluator) -> FieldMeta:
    """The FieldMeta of one field's Annotated metadata."""
    meta = FieldMeta()
    for item in metadata:
        text = ast.unparse(item)
        value = evaluator.value(item)
        if isinstance(value, str):  # Annotated[int, "help text"] or a help constant
            meta.help = meta.help or value
            continue
        kind = called(item)
        if kind in names.help and isinstance(item, ast.Call):
            helped = evaluator.value(item.args[0]) if item.args else MISSING
            if isinstance(helped, str):
                meta.help = helped
            else:
                meta.lost.append(f"help `{text}` is not a constant string")
        elif kind in names.namespace and isinstance(item, ast.Call):
            namespace = evaluator.value(item.args[0]) if item.args else MISSING
            if isinstance(namespace, str):
                meta.namespace = namespace
            else:
                meta.lost.append(f"namespace marker `{text}` does not name a constant namespace")
        elif kind in names.flag and isinstance(item, ast.Call):
            _read_flag(item, meta, evaluator)
        elif kind:
            meta.lost.append(
                f"annotation metadata `{text}` is not understood; if `{kind}` is the engine's flag, "
                f"namespace or help class, name it: --metadata flag={kind} (or namespace=, help=), or "
                f"under [tool.configbags.import] in pyproject.toml"
            )
        else:
            meta.lost.append(f"annotation metadata `{text}` is not a constant; not read")
    return meta


def _read_flag(call: ast.Call, meta: FieldMeta, evaluator: Evaluator) -> None:
    """One flag metadata object: its spellings (positional), then each keyword."""
    meta.has_flag = True
    flags: list[str] = []
    for arg in call.args:
        value = evaluator.value(arg)
        if isinstance(value, str):
            flags.append(value)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            flags.extend(value)
        else:
            meta.lost.append(f"flag metadata argument `{ast.unparse(arg)}` is not a constant flag")
    deprecated: Any = False
    for keyword in call.keywords:
        if keyword.arg == "deprecated":
            value = evaluator.value(keyword.value)
            deprecated = value if value is not MISSING else True
        else:
            _flag_keyword(keyword, meta, flags, evaluator)
    if deprecated:
        # `Arg("--stream-output", deprecated=True)`: the spellings it gives are old ones; the
        # field keeps its own flag. Without spellings, the field itself is on its way out.
        if flags:
            meta.deprecated_flags.extend(flags)
            flags = []
        else:
            meta.deprecated = deprecated if isinstance(deprecated, str) else True
    meta.flags.extend(flags)


_SPELLINGS = {"flags": "flags", "flag": "flags", "aliases": "aliases", "deprecated_flags": "deprecated_flags",
              "deprecated_aliases": "deprecated_flags"}
_IGNORED = {"metavar", "dest", "since"}  # presentation, or what the field name already says


def _flag_keyword(keyword: ast.keyword, meta: FieldMeta, flags: list[str], evaluator: Evaluator) -> None:
    key, node = keyword.arg, keyword.value
    if key is None:
        meta.lost.append(f"flag metadata `**{ast.unparse(node)}` cannot be read statically")
    elif key not in FLAG_KEYWORDS:
        meta.lost.append(f"flag metadata keyword `{key}={ast.unparse(node)}` is not understood")
    elif key in _SPELLINGS:
        value = evaluator.value(node)
        listed = [value] if isinstance(value, str) else value
        if isinstance(listed, (list, tuple)) and all(isinstance(v, str) for v in listed):
            target = flags if _SPELLINGS[key] == "flags" else getattr(meta, _SPELLINGS[key])
            target.extend(listed)
        else:
            meta.lost.append(f"flag metadata `{key}={ast.unparse(node)}` is not a constant list of flags")
    elif key == "help":
        value = evaluator.value(node)
        if isinstance(value, str):
            meta.help = value
        else:
            meta.lost.append(f"help `{ast.unparse(node)}` is not a constant string")
    elif key in ("cli", "skip"):
        value = evaluator.value(node)
        meta.cli = bool(value) if key == "cli" else not value
    elif key not in _IGNORED:
        meta.kwargs[key] = node
