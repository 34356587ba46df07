"""Stage 1, discovery: read the schema folder's YAML with line marks and validate each
file against its JSON meta-schema. Nothing here knows what a leaf means."""

from __future__ import annotations

import difflib
import functools
import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import yaml

from configbags.codegen.errors import SchemaError
from configbags.runtime.errors import YamlError
from configbags.runtime.leaftypes import closest
from configbags.runtime.yamlsafe import StrictLoader, load_yaml, mapping_entries, read_text_limited

# The meta-schemas of the schema language: part of the generator, packaged with it.
META_DIR = Path(__file__).resolve().parent / "meta"


class Marked(dict[str, Any]):
    """A YAML mapping that remembers the line of itself and of each key."""

    line: int
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _Loader(StrictLoader):
    """The run time's strict loader (YAML 1.2 scalars, input limits, alias bombs refused
    unexpanded, duplicate keys refused), building line-marked mappings whose keys are names."""

    def check_mapping_key(self, key: Any, node: yaml.Node) -> None:
        if not isinstance(key, str):
            # YAML 1.1 reads `yes:`, `on:` or `1:` as a bool or an int, never a name.
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is a {type(key).__name__}, not a name; quote it", node.start_mark
            )


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Marked:
    mapping = Marked()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key, value, line in mapping_entries(loader, node):
        mapping[key] = value
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
    # Entries (`leaves`/`derived`/`ranks` names) that failed the meta-schema: the rest of the
    # file is still built and checked, so one typo neither hides the file's other errors
    # nor cascades into errors elsewhere. `intact` is False when the file's own shape is wrong.
    broken: frozenset[str] = frozenset()
    intact: bool = True


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


def _whole_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    """JSON Schema's `pattern`, with an anchoring `$` at the very end of the text: the
    standard keyword is `re.search`, whose `$` also matches before a final newline, so
    a leaf, flag or variable `"zz\n"` would pass `^[a-z][a-z0-9_]*$`."""
    if not validator.is_type(instance, "string"):
        return
    anchored = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern
    if re.search(anchored, instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


# Characters no schema text may hold: control characters (ESC sequences, BEL, CR), format
# characters (bidi overrides such as U+202E, zero-width spaces and joiners), line and
# paragraph separators, and lone surrogates. gen copies help, doc and values into --help,
# CONFIG.md and generated code, where they would reach terminals and Markdown as they are
# and be invisible in review. A line feed is kept: a help may span lines (--help rewraps
# it, CONFIG.md writes <br>, docstrings keep it).
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_KEPT = frozenset("\n")
# Unicode gives control characters no names; the ones a text editor or terminal makes
_CONTROL_NAMES = {"\0": "NULL", "\a": "BELL", "\b": "BACKSPACE", "\t": "TAB", "\v": "LINE TABULATION",
                  "\f": "FORM FEED", "\r": "CARRIAGE RETURN", "\x1b": "ESCAPE", "\x7f": "DELETE",
                  "\x85": "NEXT LINE"}
PRINTABLE_HINT = ("write plain text: control, format (bidi, zero-width) and line-separator characters "
                  "are refused (a line feed is the one kept)")


def _unprintable(text: str) -> str | None:
    """The first character of `text` that no schema text may hold, described; or None."""
    for at, c in enumerate(text):
        if c not in _KEPT and unicodedata.category(c) in _UNPRINTABLE:
            name = unicodedata.name(c, "") or _CONTROL_NAMES.get(c, "a control character")
            return f"U+{ord(c):04X} ({name}) at character {at + 1}"
    return None


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def _printable(validator: Any, wanted: Any, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    """`printable: true`: every string in the instance, mapping keys included, at any depth,
    holds none of `_UNPRINTABLE`; each error carries the path to its string, so it is
    reported at that string's line and names the leaf it belongs to."""
    if not wanted:
        return
    stack: list[tuple[list[Any], Any]] = [([], instance)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            texts = [(path, node)]
        elif isinstance(node, dict):
            texts = [([*path, k], k) for k in node if isinstance(k, str)]
            stack.extend(([*path, k], v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            texts = []
            stack.extend(([*path, i], v) for i, v in reversed(list(enumerate(node))))
        else:
            continue
        for where, text in texts:
            bad = _unprintable(text)
            if bad is not None:
                yield jsonschema.ValidationError(f"{_shown(text)} holds {bad}", path=where)


# the meta-schemas' validator: Draft 2020-12 with `pattern` matched up to the very end, and
# `printable` (every string of the file is plain text)
_Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {"pattern": _whole_pattern, "printable": _printable})


@functools.lru_cache(maxsize=32)
def _meta(meta_dir: Path, name: str) -> Any:
    """The validator of one meta-schema, built once per process (not once per file: an
    engine's schema folder holds a hundred namespace files)."""
    schema = json.loads((meta_dir / name).read_text())
    return _Validator(schema)


def _leaf_of(path: list[Any]) -> str | None:
    if len(path) >= 2 and path[0] in ("leaves", "derived", "rules"):
        return str(path[1])
    return None


def _describe(error: jsonschema.ValidationError) -> str:
    # a name that is not plain text is shown escaped (the error says why it is refused)
    where = ".".join(repr(p) if isinstance(p, str) and _unprintable(p) else str(p)
                     for p in error.absolute_path) or "<file>"
    if error.validator == "oneOf" and error.validator_value and "required" in str(
        error.validator_value
    ):
        if "'fn'" in str(error.validator_value):
            return f"{where}: give exactly one of 'value' or 'fn'"
        return f"{where}: give exactly one of 'default' or 'required: true'"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = _properties(error)
        unknown = sorted(k for k in error.instance if k not in allowed)
        return f"{where}: unknown key{'s' if len(unknown) > 1 else ''} " + ", ".join(
            f"{k!r}{closest(k, allowed)}" for k in unknown
        )
    return f"{where}: {error.message}"


def _properties(error: jsonschema.ValidationError) -> dict[str, Any]:
    schema = error.schema
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    return props if isinstance(props, dict) else {}


LEAF_KEYS = frozenset({"type", "default", "owner", "override", "help"})


def _explained(errors: list[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    """Drop errors that only restate another: a required key reported missing because it
    was misspelled (the unknown-key error names it, with a did-you-mean)."""
    misspelled: set[tuple[tuple[Any, ...], str]] = set()
    for e in errors:
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            allowed = _properties(e)
            for key in e.instance:
                if key not in allowed and (match := difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)):
                    misspelled.add((tuple(e.absolute_path), match[0]))

    def restates(e: jsonschema.ValidationError) -> bool:
        instance, names = e.instance, e.validator_value
        if e.validator != "required" or not isinstance(instance, dict) or not isinstance(names, list):
            return False
        return any((tuple(e.absolute_path), n) in misspelled for n in names if n not in instance)

    return [e for e in errors if not restates(e)]


def _leaf_under_ranks(data: Marked) -> list[str]:
    """Names under `ranks:` that look like leaves: a leaf appended after the ranks block."""
    ranks = data.get("ranks")
    if not isinstance(ranks, dict):
        return []
    return [k for k, v in ranks.items() if isinstance(v, dict) and LEAF_KEYS & set(v) - {"help"}]


def read_yaml(
    path: Path, display: str, meta_dir: Path, meta: str, errors: list[SchemaError]
) -> SourceFile | None:
    """Parse and validate one file; append every problem to `errors`."""
    try:
        text = read_text_limited(path)
    except (OSError, YamlError) as exc:
        errors.append(SchemaError(display, 1, f"cannot read file: {exc}", hint="fix the file"))
        return None
    try:
        data = load_yaml(text, _Loader)
    except YamlError as exc:
        errors.append(
            SchemaError(display, exc.line or 1, f"YAML error: {exc.problem}", hint="fix the YAML syntax")
        )
        return None
    if not isinstance(data, Marked):
        errors.append(SchemaError(display, 1, "the file must hold a YAML mapping"))
        return None
    hint = f"see the schema language in configbags/codegen/meta/{meta}"
    misplaced = _leaf_under_ranks(data)
    for name in misplaced:
        errors.append(SchemaError(
            display, data["ranks"].line_of(name),
            f"ranks.{name} looks like a leaf ({', '.join(sorted(LEAF_KEYS & set(data['ranks'][name])))}), "
            f"but it sits under `ranks:`", leaf=name,
            hint="move it under `leaves:` (a `ranks:` entry is a stamped `*_rank` with only `help`)",
        ))
    broken: set[str] = set(misplaced)
    intact = True
    found = _explained(list(_meta(meta_dir, meta).iter_errors(data)))
    for error in sorted(found, key=lambda e: list(map(str, e.absolute_path))):
        path_list = list(error.absolute_path)
        if "propertyNames" in error.schema_path and isinstance(error.instance, str):
            path_list.append(error.instance)  # a bad name: the error is the entry's, at its line
        if path_list[:1] == ["ranks"] and (len(path_list) == 1 or path_list[1] in misplaced) and misplaced:
            continue  # said above, once, with the fix
        if len(path_list) >= 2 and path_list[0] in ("leaves", "derived", "ranks"):
            broken.add(str(path_list[1]))
        else:
            intact = False
        errors.append(SchemaError(display, line_at(data, path_list), _describe(error), leaf=_leaf_of(path_list),
                                  hint=PRINTABLE_HINT if error.validator == "printable" else hint))
    return SourceFile(path, display, data, frozenset(broken), intact)
