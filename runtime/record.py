"""Generic machinery behind the generated `ServerArgs` record: operator input from a dict,
a YAML/JSON config file (validated against the generated JSON Schema) or the command line,
with one precedence rule: defaults < config file < flags given on the command line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from configbags.runtime.errors import LeafValueError, RecordError, YamlError
from configbags.runtime.leaftypes import check_bounds, closest, jsonable
from configbags.runtime.registry import LeafSpec

R = TypeVar("R")


def json_value(text: str) -> Any:
    """argparse `type=` for json leaves (argparse names the function in its error, and
    turns the ValueError into exit 2): JSON within the input limits."""
    from configbags.runtime.yamlsafe import load_json  # yaml only when a CLI is parsed

    try:
        return load_json(text)
    except YamlError as exc:
        raise ValueError(str(exc)) from None


json_value.__name__ = "json"


def check_value(spec: LeafSpec, value: Any, source: str) -> Any:
    try:
        coerced = spec.type.coerce(value)
        check_bounds(coerced, choices=spec.choices, minimum=spec.minimum, maximum=spec.maximum)
    except LeafValueError as exc:
        flag = f" ({spec.flags[0]})" if spec.flags else ""
        raise RecordError(f"{source}: {spec.namespace}.{spec.name}{flag}: {exc}") from None
    return coerced


def validate_record(record: Any, leaves: Mapping[str, LeafSpec]) -> None:
    """Check every field of a freshly built record and store its canonical form
    (lists as tuples, ints widened for float leaves)."""
    for name, spec in leaves.items():
        value = getattr(record, name)
        coerced = check_value(spec, value, type(record).__name__)
        if coerced is not value:
            object.__setattr__(record, name, coerced)


def record_from_dict(cls: type[R], leaves: Mapping[str, LeafSpec], data: Mapping[str, Any], source: str) -> R:
    for k in data:
        if not isinstance(k, str):
            raise RecordError(f"{source}: key {k!r} is a {type(k).__name__}, not a leaf name; quote it")
    unknown = [k for k in data if k not in leaves]
    if unknown:
        k = unknown[0]
        raise RecordError(
            f"{source}: {k!r} is not a server leaf{closest(str(k), leaves)}; see generated/CONFIG.md "
            f"for the leaves and their flags"
        )
    missing = [n for n, s in leaves.items() if s.required and n not in data]
    if missing:
        spec = leaves[missing[0]]
        flag = spec.flags[0] if spec.flags else spec.name
        raise RecordError(f"{source}: {spec.name} is required: pass {flag} or set {spec.name} in --config FILE")
    values = {k: check_value(leaves[k], v, source) for k, v in data.items()}
    return cls(**values)


def record_to_dict(record: Any, leaves: Mapping[str, LeafSpec]) -> dict[str, Any]:
    return {name: jsonable(getattr(record, name)) for name in leaves}


def load_config_file(path: str | Path, schema_path: Path) -> dict[str, Any]:
    """Read a YAML or JSON config file and validate it against the generated JSON Schema;
    an error names the file, the key and what to do."""
    import jsonschema

    from configbags.runtime.yamlsafe import load_json, load_yaml, read_text_limited

    path = Path(path)
    try:
        text = read_text_limited(path)
        data = load_json(text) if path.suffix == ".json" else load_yaml(text)
    except (OSError, ValueError) as exc:  # YamlError is a ValueError
        raise RecordError(f"{path}: cannot read config file: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RecordError(f"{path}: a config file must hold a mapping of leaf names to values")
    schema = json.loads(schema_path.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    for key in data:
        if not isinstance(key, str):  # YAML reads `yes:` or `1:` as a bool or an int
            raise RecordError(f"{path}: key {key!r} is a {type(key).__name__}, not a leaf name; quote it")
    if errors:
        error = errors[0]
        if error.validator == "additionalProperties":
            known = schema["properties"]
            extra = sorted(set(data) - set(known))
            key = extra[0]
            raise RecordError(
                f"{path}: unknown key {key!r}{closest(key, known)}; config files take leaf names "
                f"(see generated/CONFIG.md)"
            )
        key = ".".join(map(str, error.absolute_path)) or "<file>"
        raise RecordError(f"{path}: key {key}: {error.message}")
    return dict(data)


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="YAML or JSON file of leaf values; flags given on the command line win over it",
    )


def record_from_cli_args(
    cls: type[R], leaves: Mapping[str, LeafSpec], namespace: argparse.Namespace, schema_path: Path
) -> R:
    given = {k: v for k, v in vars(namespace).items() if k in leaves}
    config = getattr(namespace, "config", None)
    values = load_config_file(config, schema_path) if config else {}
    values.update(given)
    return record_from_dict(cls, leaves, values, "command line" + (f" and {config}" if config else ""))


def record_from_cli(
    cls: type[R],
    leaves: Mapping[str, LeafSpec],
    add_cli_args: Any,
    argv: Sequence[str] | None,
    schema_path: Path,
    prog: str | None = None,
) -> R:
    # No abbreviations: a flag added later must not change what an old command line means.
    parser = argparse.ArgumentParser(prog=prog, description="Launch-time server configuration.",
                                     allow_abbrev=False)
    add_cli_args(parser)
    namespace = parser.parse_args(argv)
    try:
        return record_from_cli_args(cls, leaves, namespace, schema_path)
    except RecordError as exc:
        parser.error(str(exc))


def replace(record: R, **changes: Any) -> R:
    """A new record with `changes`; the original never changes."""
    return attrs.evolve(record, **changes)  # type: ignore[misc]
