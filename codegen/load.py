"""Stage 1, discovery: read the schema folder's YAML with line marks and validate each
file against its JSON meta-schema. Nothing here knows what a leaf means."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import yaml

from configbags.codegen.errors import SchemaError

# The meta-schemas of the schema language: part of the generator, packaged with it.
META_DIR = Path(__file__).resolve().parent / "meta"


class Marked(dict[str, Any]):
    """A YAML mapping that remembers the line of itself and of each key."""

    line: int
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Marked:
    loader.flatten_mapping(node)
    mapping = Marked()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, str):
            # YAML 1.1 reads `yes:`, `on:` or `1:` as a bool or an int, never a name.
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is a {type(key).__name__}, not a name; quote it", key_node.start_mark
            )
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {mapping.key_lines[key]})",
                key_node.start_mark,
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = line
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def plain(value: Any) -> Any:
    """The value without line marks (plain dicts), for values that end up in output."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@attrs.frozen
class SourceFile:
    """One validated YAML file: its display path (relative to the schema folder's parent,
    so messages and headers are the same on every machine) and its data."""

    path: Path
    display: str
    data: Marked


def line_at(data: Any, path: Iterator[Any] | list[Any]) -> int:
    """The line of the deepest mapping key on `path` (a jsonschema error path)."""
    line = data.line if isinstance(data, Marked) else 1
    node = data
    for part in path:
        if isinstance(node, Marked) and part in node:
            line = node.line_of(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            if isinstance(node, Marked):
                line = node.line
        else:
            break
    return line


def _meta(meta_dir: Path, name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((meta_dir / name).read_text())
    return jsonschema.Draft202012Validator(schema)


def _leaf_of(path: list[Any]) -> str | None:
    if len(path) >= 2 and path[0] in ("leaves", "derived", "rules"):
        return str(path[1])
    return None


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "<file>"
    if error.validator == "oneOf" and error.validator_value and "required" in str(
        error.validator_value
    ):
        if "'fn'" in str(error.validator_value):
            return f"{where}: give exactly one of 'value' or 'fn'"
        return f"{where}: give exactly one of 'default' or 'required: true'"
    return f"{where}: {error.message}"


def read_yaml(
    path: Path, display: str, meta_dir: Path, meta: str, errors: list[SchemaError]
) -> SourceFile | None:
    """Parse and validate one file; append every problem to `errors`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(SchemaError(display, 1, f"cannot read file: {exc}", hint="fix the file"))
        return None
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        errors.append(
            SchemaError(display, line, f"YAML error: {exc.problem or exc}", hint="fix the YAML syntax")
        )
        return None
    if not isinstance(data, Marked):
        errors.append(SchemaError(display, 1, "the file must hold a YAML mapping"))
        return None
    found = False
    for error in sorted(_meta(meta_dir, meta).iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        path_list = list(error.absolute_path)
        errors.append(
            SchemaError(
                display,
                line_at(data, path_list),
                _describe(error),
                leaf=_leaf_of(path_list),
                hint=f"see the schema language in configbags/codegen/meta/{meta}",
            )
        )
        found = True
    return None if found else SourceFile(path, display, data)
