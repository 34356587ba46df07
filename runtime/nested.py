"""Json leaves with a declared inner structure (a namespace file's `structure:`), such as
vLLM's `--compilation-config`:

    compilation_config:
      type: json
      default: {}
      structure: {level: int, backend: str, custom_ops: list[str], inductor: {enabled: bool}}

The generator turns the structure into the leaf's JSON Schema in the config-file schema
(`structure_schema`), so a config file is checked against it. On the command line the
leaf takes the whole value (`--compilation-config '{"level": 3}'`) or dotted keys
(`--compilation-config.level 3`, `--compilation-config.inductor.enabled true`), each
parsed by the type the structure gives it (a str stays a str: never forced through
JSON); the dotted keys are merged over a whole value given too, and the result is
checked against the structure, naming the key and what it should be.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from configbags.runtime.leaftypes import TypeSpec

if TYPE_CHECKING:
    from configbags.runtime.registry import Registry

_JSON = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def structure_schema(structure: Mapping[str, Any], *, optional: bool = False) -> dict[str, Any]:
    """The JSON Schema of a structure: an object of the keys it names, no others, none
    required. A key's type is a schema type (`int`, `optional list[str]`, ...) or a
    nested structure. Raises ValueError naming a key whose type is not one."""
    properties: dict[str, Any] = {}
    for key, kind in structure.items():
        if isinstance(kind, Mapping):
            properties[key] = structure_schema(kind)
            continue
        try:
            spec = TypeSpec.parse(str(kind))
        except ValueError as exc:
            raise ValueError(f"key {key!r}: {exc}") from None
        if spec.item is not None:
            schema: dict[str, Any] = {"type": "array", "items": {"type": _JSON[spec.item.base]}}
        elif spec.base == "json":
            schema = {}
        else:
            schema = {"type": _JSON[spec.base]}
        if spec.optional and "type" in schema:
            schema["type"] = [schema["type"], "null"]
        properties[key] = schema
    return {"type": ["object", "null"] if optional else "object", "properties": properties,
            "additionalProperties": False}


def structures(registry: Registry) -> dict[str, dict[str, Any]]:
    """leaf -> the JSON Schema of its structure, for the registry's leaves that declare one."""
    return {name: structure_schema(spec.structure, optional=spec.type.optional)
            for name, spec in registry.leaves.items() if spec.structure is not None}


def fold_dotted(parser: argparse.ArgumentParser, argv: Sequence[str], found: Mapping[str, dict[str, Any]]) -> list[str]:
    """`argv` with every `--leaf.key[.sub] VALUE` (or `=VALUE`) of a structured leaf merged
    into one `--leaf JSON`, over a whole `--leaf JSON` given before it."""
    flags = {o: a.dest for a in parser._actions for o in a.option_strings if a.dest in found}
    out: list[str] = []
    values: dict[str, Any] = {}
    where: dict[str, int] = {}  # leaf -> index of its --leaf in `out`
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            out.extend(words[index - 1:])
            break
        flag, sep, raw = word.partition("=")
        base, dot, path = flag.partition(".")
        if base in flags and not dot:  # the whole value
            if not sep:
                if index >= len(words):
                    out.append(word)
                    continue
                raw, index = words[index], index + 1
            leaf = flags[base]
            whole = _whole(parser, base, raw)
            values[leaf] = _merge(values.get(leaf), whole) if isinstance(whole, dict) else whole
            where.setdefault(leaf, len(out))
            out.extend([base, ""])
            continue
        if base not in flags or not dot:
            out.append(word)
            continue
        leaf = flags[base]
        if not sep:
            if index >= len(words):
                parser.error(f"{flag} expects a value")
            raw, index = words[index], index + 1
        keys = path.split(".")
        kind = key_kind(found[leaf], keys, parser, flag)
        current = values.get(leaf)
        values[leaf] = _merge(current if isinstance(current, dict) else {}, _nest(keys, parse_key(kind, raw, parser, flag)))
        if leaf not in where:
            where[leaf] = len(out)
            out.extend([base, ""])
    for leaf, position in where.items():
        out[position + 1] = json.dumps(values[leaf])
    return out


def _whole(parser: argparse.ArgumentParser, flag: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        parser.error(f"{flag}: {raw!r} is not JSON; give an object ('{{\"key\": ...}}') or dotted keys "
                     f"({flag}.KEY VALUE)")


def _nest(keys: Sequence[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(keys):
        out = {key: out}
    result: dict[str, Any] = out
    return result


def _merge(base: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = dict(base) if isinstance(base, dict) else {}
    for key, value in extra.items():
        old = merged.get(key)
        merged[key] = _merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def key_kind(schema: Mapping[str, Any], keys: Sequence[str], parser: argparse.ArgumentParser, flag: str) -> Any:
    """The JSON Schema type of a dotted key (`flag` is `--leaf.a.b`, `keys` its `a`, `b`);
    a usage error through `parser` naming the key the structure lacks."""
    node: Mapping[str, Any] = schema
    for depth, key in enumerate(keys):
        properties = node.get("properties", {})
        if key not in properties:
            known = ", ".join(sorted(properties)) or "none"
            where = flag.rsplit(".", len(keys) - depth)[0]
            parser.error(f"{flag}: {where} has no key {key!r} (its keys: {known})")
        node = properties[key]
    return node.get("type")


def parse_key(kind: Any, raw: str, parser: argparse.ArgumentParser, flag: str) -> Any:
    """A dotted key's text as its type: strings as given, numbers and bools by name,
    lists as JSON or comma-separated, anything else as JSON."""
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if "null" in kinds and raw.lower() in ("none", "null"):
        return None
    try:
        if "string" in kinds:
            return raw
        if "integer" in kinds:
            return int(raw)
        if "number" in kinds:
            return float(raw)
        if "boolean" in kinds:
            if raw.lower() in _TRUE | _FALSE:
                return raw.lower() in _TRUE
            raise ValueError(raw)
        if "array" in kinds:
            return json.loads(raw) if raw.startswith("[") else [p.strip() for p in raw.split(",") if p.strip()]
        return json.loads(raw)
    except ValueError:
        shown = "/".join(k for k in kinds if k != "null") or "JSON"
        parser.error(f"{flag}: {raw!r} is not a {shown} value")


def check(parser: argparse.ArgumentParser, namespace: argparse.Namespace, found: Mapping[str, dict[str, Any]]) -> None:
    """Each structured leaf's value (whole or folded) against its structure."""
    import jsonschema

    for leaf, schema in found.items():
        value = getattr(namespace, leaf, None)
        if value is None or not hasattr(namespace, leaf):
            continue
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
        if error is not None:
            path = ".".join(str(p) for p in error.absolute_path)
            flag = next((o for a in parser._actions if a.dest == leaf for o in a.option_strings), leaf)
            parser.error(f"{flag}{'.' + path if path else ''}: {error.message}")
