"""Safe parsing of operator and schema text: YAML and JSON within `LIMITS`.

The YAML loader is PyYAML's SafeLoader with three changes:

- **YAML 1.2 core schema for scalars.** `010` is the integer 10 (never octal 8), `1:20` is
  the string "1:20" (never sexagesimal 80), `yes`/`on` are strings, not booleans, and
  dates stay strings. Only `true`/`false`, `null`/`~`, decimal, `0o`/`0x` integers and
  decimal floats (with `.inf`/`.nan`) are resolved.
- **Duplicate keys are refused**, naming both lines; YAML 1.1 merge keys (`<<`) are not
  special (an explicit `!!merge` is refused), so they cannot smuggle a duplicate in.
- **Alias bombs are refused before anything is built**: the document is composed into its
  node graph (aliases stay shared references there), its size counted with every alias
  expanded (memoized, so counting is linear in the text), and only a graph within
  `LIMITS.nodes`, `LIMITS.json_depth`-ish nesting and without recursive aliases is
  constructed.

Every failure is a `YamlError` (a ConfigError) with the line and what to do."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from configbags.runtime.errors import YamlError
from configbags.runtime.limits import LIMITS

# Composing recurses once per nesting level; documents nested deeper than this are
# refused before PyYAML's composer could hit Python's recursion limit.
MAX_NESTING = 200


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    # libyaml's parser where PyYAML has it: the same events and marks, about ten times
    # faster than the pure-Python one, which dominated loading an engine-sized schema.
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_SafeLoader):
    """SafeLoader, YAML 1.2 core scalars, duplicate keys refused. Subclass it to change how
    mappings are built (codegen keeps line marks, on `mapping_entries`) or which keys they
    take (`check_mapping_key`); `load_yaml` adds the size checks."""

    def check_mapping_key(self, key: Any, node: yaml.Node) -> None:
        """Refuse a mapping key that is not a scalar (a list or a mapping as a key is no
        config data, and unhashable besides)."""
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"a {type(key).__name__} cannot be a mapping key", node.start_mark
            )


# None of SafeLoader's YAML 1.1 resolvers: the core schema's replace them.
StrictLoader.yaml_implicit_resolvers = {}


# The YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_CORE: list[tuple[str, str, str]] = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
]
for _tag, _pattern, _first in _CORE:
    StrictLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
# The empty plain scalar (`key:`) is null; PyYAML looks it up under the None first char.
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [None])


def _mark(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}"


def _construct_int(loader: StrictLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    digits = text.lstrip("+-")
    if len(digits) > LIMITS.int_digits + 2:  # before int(): Python refuses > 4300 digits
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {len(digits)} digits is over the limit of {LIMITS.int_digits}",
            node.start_mark,
        )
    sign = -1 if text.startswith("-") else 1
    if digits.startswith("0o"):
        return sign * int(digits[2:], 8)
    if digits.startswith("0x"):
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)  # `010` is ten: YAML 1.2 has no leading-zero octal


def _construct_float(loader: StrictLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def mapping_entries(loader: StrictLoader, node: yaml.MappingNode) -> list[tuple[Any, Any, int]]:
    """Each entry of a mapping node as (key, value, line of the key). The one duplicate-key
    rule of every loader here (codegen's line-marking one builds on it): a key given twice
    is refused naming both lines, and a key the loader cannot take (`check_mapping_key`) too."""
    entries: list[tuple[Any, Any, int]] = []
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        loader.check_mapping_key(key, key_node)
        if key in lines:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {lines[key]}); keep one of them",
                key_node.start_mark,
            )
        lines[key] = key_node.start_mark.line + 1
        entries.append((key, loader.construct_object(value_node, deep=True), lines[key]))
    return entries


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    return {key: value for key, value, _ in mapping_entries(loader, node)}


StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Timestamps, sets, ordered maps, binary: not in the core schema, and not JSON data.
def _refuse(loader: StrictLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag!r} is not JSON data; drop the tag", node.start_mark
    )


for _tag in ("timestamp", "set", "omap", "pairs", "binary"):
    StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse)


def _refuse_merge(loader: StrictLoader, node: yaml.Node) -> Any:
    # A merge would let a key come twice (the merged one, then its override) unrefused.
    raise yaml.constructor.ConstructorError(
        None, None, "a YAML merge key (`!!merge <<`) is not read here; write the keys out", node.start_mark
    )


StrictLoader.add_constructor("tag:yaml.org,2002:merge", _refuse_merge)


def _measure(root: yaml.Node) -> None:
    """Refuse a node graph that expands beyond LIMITS.nodes, nests deeper than MAX_NESTING,
    holds an overlong string or refers to itself. Counts each distinct node once, with
    memoized expanded sizes, so a bomb is measured without being expanded."""
    size: dict[int, int] = {}
    in_progress: set[int] = set()
    # An explicit stack rather than recursion: the graph may be as deep as the text allows.
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        key = id(node)
        if children_done:
            in_progress.discard(key)
            total = 1 + sum(size[id(c)] for c in _children(node))
            if total > LIMITS.nodes:
                raise YamlError(
                    f"the document expands to more than {LIMITS.nodes} nodes (aliases counted as "
                    f"expanded); the input limit refuses it (an alias bomb?)", node.start_mark.line + 1,
                )
            size[key] = total
            continue
        if key in size:
            continue
        if key in in_progress:
            raise YamlError("an alias refers to a node that contains it (a recursive alias)",
                            node.start_mark.line + 1)
        if depth > MAX_NESTING:
            raise YamlError(f"the document nests deeper than {MAX_NESTING} levels", node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            if len(node.value) > LIMITS.string_chars:
                raise YamlError(f"a scalar of {len(node.value)} characters is over the limit of "
                                f"{LIMITS.string_chars}", node.start_mark.line + 1)
            size[key] = 1
            continue
        in_progress.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_size(text: str) -> None:
    if len(text) > LIMITS.file_bytes:
        raise YamlError(f"the text is {len(text)} characters, over the limit of {LIMITS.file_bytes}", None)


def _nesting_ok(text: str) -> None:
    """Refuse text whose bracket nesting alone passes MAX_NESTING before the recursive
    composer sees it (block nesting is bounded by indentation, which costs a line each)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    if deepest > MAX_NESTING:
        raise YamlError(f"the document nests deeper than {MAX_NESTING} levels", None)


def load_yaml(text: str, loader: type[StrictLoader] = StrictLoader) -> Any:
    """Parse one YAML document within LIMITS; raise YamlError (with the line) otherwise."""
    _check_size(text)
    _nesting_ok(text)
    try:
        parser = loader(text)
    except yaml.YAMLError as exc:  # ReaderError: a NUL or other control character
        raise YamlError(str(exc).replace("\n", " "), None) from None
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        _measure(node)
        return parser.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(str(exc.problem or exc), mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:  # ReaderError (a control character) has no mark
        raise YamlError(str(exc).replace("\n", " "), None) from None
    except RecursionError:
        raise YamlError(f"the document nests deeper than {MAX_NESTING} levels", None) from None
    finally:
        parser.dispose()


def load_json(text: str) -> Any:
    """Parse JSON text within LIMITS (size, nesting, integer digits); raise YamlError.
    The nesting pre-check comes first: `json.loads` recurses once per level."""
    _check_size(text)
    _nesting_ok(text)

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > LIMITS.int_digits:
            raise ValueError(f"an integer of {len(digits)} digits is over the limit of {LIMITS.int_digits}")
        return int(digits)

    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON (no NaN or infinity)")

    try:
        return json.loads(text, parse_int=parse_int, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise YamlError(exc.msg, exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise YamlError(str(exc) or "nested too deep", None) from None


def read_text_limited(path: Path) -> str:
    """A regular file's UTF-8 text, at most LIMITS.file_bytes: a FIFO, a device or a
    folder is refused without being opened for reading (opening a FIFO would block)."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise YamlError(f"{path} is not a regular file", None)
    if info.st_size > LIMITS.file_bytes:
        raise YamlError(f"{path} is {info.st_size} bytes, over the limit of {LIMITS.file_bytes}", None)
    with path.open("rb") as f:
        data = f.read(LIMITS.file_bytes + 1)
    if len(data) > LIMITS.file_bytes:  # it grew between stat and read
        raise YamlError(f"{path} is over the limit of {LIMITS.file_bytes} bytes", None)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})", None) from None
