"""The one reader of operator and schema files, and safe parsing of their text: YAML and
JSON within `LIMITS` (`configbags.runtime.limits`), every limit enforced while the input is
read and parsed, never after it has been built.

- **Files** (`read_text_limited`): only a regular file is opened, and without blocking, so
  a FIFO, a device or a link to one is refused before it could hang or stream forever;
  at most `LIMITS.file_bytes` bytes are read, and the text must be UTF-8.
- **YAML** (`load_yaml`): PyYAML's SafeLoader (libyaml's parser where PyYAML has it) with
  the YAML 1.2 core schema for scalars: `010` is the integer 10 (never octal 8), `1:20` is
  the string "1:20" (never sexagesimal 80), `yes`/`on` are strings, not booleans, and dates
  stay strings. Only `true`/`false`, `null`/`~`, decimal, `0o`/`0x` integers and decimal
  floats (with `.inf`/`.nan`) are resolved. Duplicate keys are refused, naming both lines;
  merge keys (`<<`) are not special (an explicit `!!merge` is refused). An explicit tag
  must fit its value (`!!float x`, `!!bool x`, `!!map x` are refused), and a tag that is
  not JSON data (`!name`, `!!python/...`) too, neither naming the value. The composer
  counts as it goes: nodes with every alias expanded (so an alias bomb stops at
  `LIMITS.nodes` without being expanded), nesting, scalar length; a recursive alias is
  refused. A document over a limit stops at the event that crosses it.
- **JSON** (`load_json`): the document's skeleton (its text without strings) is measured
  before `json.loads` builds anything: nodes, nesting, string length; integers by digits;
  duplicate keys refused naming the key; no NaN or infinity unless asked.
- **Dumping** (`dump_yaml`): the one writer of config files quotes every string that the
  loader would read as anything but that string (it resolves plain scalars with the
  loader's own YAML 1.2 rules), and writes any string holding a character YAML treats
  specially (line breaks such as NEL, BOM, controls) double-quoted with escapes; a text it
  produces reads back to the same data, which it checks before returning.

Every failure is a `YamlError` (a ConfigError) with the line and what to do; a limit's
refusal names the limit and the variable that raises it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from configbags.runtime.errors import OutputFileError, YamlError
from configbags.runtime.leaftypes import (
    FLOAT_TEXT,
    INT_TEXT,
    float_from_text,
    float_literal,
    int_from_text,
    is_text,
)
from configbags.runtime.limits import LIMITS, over, variable

if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    # libyaml's parser where PyYAML has it: the same events and marks, about ten times
    # faster than the pure-Python one, which dominated loading an engine-sized schema.
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


class StrictLoader(_SafeLoader):
    """SafeLoader, YAML 1.2 core scalars, duplicate keys refused (`load_yaml` counts the
    limits in a pass over the parser's events before this composes anything). Subclass it to change how mappings are built (codegen keeps line marks, on
    `mapping_entries`) or which keys they take (`check_mapping_key`)."""

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
    ("tag:yaml.org,2002:int", f"^(?:{INT_TEXT})$", "-+0123456789"),
    ("tag:yaml.org,2002:float", f"^(?:{FLOAT_TEXT})$", "-+.0123456789"),
]
for _tag, _pattern, _first in _CORE:
    StrictLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
# The empty plain scalar (`key:`) is null; PyYAML looks it up under the None first char.
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [None])


# An explicitly tagged scalar (`!!float x`) must read as its tag by the core schema's own
# rules (the resolvers above): one that does not is refused without showing the scalar,
# since the loader does not know which leaf it sets, and it may be a secret.
_TAG = "tag:yaml.org,2002:"


def _core_tag(loader: StrictLoader, node: yaml.ScalarNode) -> str:
    """The tag the core schema gives the scalar's text untagged (`!!str` for anything else)."""
    return str(loader.resolve(yaml.ScalarNode, str(loader.construct_scalar(node)).strip(), (True, False)))  # type: ignore[no-untyped-call]


def _not_a(what: str, node: yaml.Node) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None, None, f"a value tagged {_tag_name(node.tag)} is not {what}; drop the tag or fix the value", node.start_mark
    )


def _tag_name(tag: str) -> str:
    return tag.replace(_TAG, "!!")


def _construct_int(loader: StrictLoader, node: yaml.ScalarNode) -> int:
    if _core_tag(loader, node) != _TAG + "int":
        raise _not_a("an integer (ASCII digits, optionally signed, or 0x/0o)", node)
    try:
        return int_from_text(str(loader.construct_scalar(node)))
    except ValueError as exc:  # over the digits limit: the message names the limit, not the value
        raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from None


def _construct_float(loader: StrictLoader, node: yaml.ScalarNode) -> float:
    if _core_tag(loader, node) not in (_TAG + "int", _TAG + "float"):
        raise _not_a("a number (ASCII digits, a point, an exponent)", node)
    try:
        return float_from_text(str(loader.construct_scalar(node)))
    except ValueError as exc:
        raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from None


def _construct_null(loader: StrictLoader, node: yaml.ScalarNode) -> None:
    if _core_tag(loader, node) != _TAG + "null":
        raise _not_a("null", node)


def _construct_bool(loader: StrictLoader, node: yaml.ScalarNode) -> bool:
    if _core_tag(loader, node) != _TAG + "bool":
        raise _not_a("true or false", node)
    return str(loader.construct_scalar(node)).strip().lower() == "true"


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
    if not isinstance(node, yaml.MappingNode):  # `!!map` on a scalar or a sequence
        raise _not_a("a mapping", node)
    return {key: value for key, value, _ in mapping_entries(loader, node)}


def _unknown_tag(loader: StrictLoader, node: yaml.Node) -> Any:
    # Not naming the tag: an unquoted value that starts with `!` is a tag, and may be a secret.
    raise yaml.constructor.ConstructorError(
        None, None, "a value carries a tag that is not JSON data (`!name`); drop the tag, "
        "or quote a value that starts with `!`", node.start_mark,
    )


StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
StrictLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
StrictLoader.add_constructor("tag:yaml.org,2002:null", _construct_null)
StrictLoader.add_constructor(None, _unknown_tag)
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


def _check_version(event: DocumentStartEvent) -> None:
    """Refuse a `%YAML` directive other than 1.2: the text is read by 1.2's rules anyway
    (`010` is 10, `yes` a string), so a file that says otherwise would mean something else
    to its author, without a word."""
    declared = getattr(event, "version", None)
    if declared is None or tuple(declared) == (1, 2):
        return
    version = ".".join(map(str, declared))
    raise YamlError(f"the document declares %YAML {version}, but config and schema files are read as YAML "
                    f"1.2 (where 010 is 10 and yes is a string); drop the directive, or write %YAML 1.2",
                    _line(event.start_mark))


def _too_many_nodes(nodes: int, aliased: int, event: Any) -> YamlError:
    """The refusal of a document over the node limit, saying whether aliases made it large."""
    if aliased * 2 > nodes:
        what = f"expands to more than {LIMITS.nodes} nodes, {aliased} of them copies made by aliases (an alias bomb?)"
    else:
        what = f"has more than {LIMITS.nodes} nodes (keys, values and items)"
    return YamlError(f"the document {what}, over {over('nodes', 'nodes')}", _line(event.start_mark))


def _measure(parser: StrictLoader, *, version: bool = True, plain: bool = True) -> None:
    """Refuse a stream over the limits from its events alone, before anything is composed:
    nodes with every alias expanded (an anchor's size is known when it closes, so a bomb is
    counted, never expanded), nesting, scalar length, recursive aliases. It stops at the
    event that crosses a limit, so a huge document costs only the part read up to there.
    `version`: a `%YAML` directive other than 1.2 is refused too; `plain`: the nodes
    written out count against the node limit, not only the copies aliases make."""
    nodes = 0
    opened: list[tuple[int, str | None]] = []  # (nodes before it, its anchor) per open collection
    sizes: dict[str, int] = {}  # anchor -> expanded size of its (closed) node
    aliased = 0  # nodes that aliases added: the refusal says whether they made it large
    while True:
        event = parser.get_event()  # type: ignore[no-untyped-call]
        kind = type(event)
        if kind is DocumentStartEvent:  # the limits are each document's, as its anchors are
            nodes, aliased = 0, 0
            sizes.clear()
            if version:
                _check_version(event)
        elif kind is ScalarEvent:
            nodes += 1
            if len(event.value) > LIMITS.string_chars:
                raise YamlError(f"a scalar of {len(event.value)} characters is over "
                                f"{over('string_chars', 'characters')}", _line(event.start_mark))
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind is SequenceStartEvent or kind is MappingStartEvent:
            opened.append((nodes, event.anchor))
            nodes += 1
            if len(opened) > LIMITS.nesting:
                # refused while it is composed, long before composing recursed that deep
                raise YamlError(f"the document nests deeper than {LIMITS.nesting} levels, over "
                                f"{over('nesting', 'levels')}", _line(event.start_mark))
        elif kind is SequenceEndEvent or kind is MappingEndEvent:
            before, anchor = opened.pop()
            if anchor is not None:
                sizes[anchor] = nodes - before
        elif kind is AliasEvent:
            if any(anchor == event.anchor for _, anchor in opened):
                raise YamlError("an alias refers to a node that contains it (a recursive alias)",
                                _line(event.start_mark))
            size = sizes.get(event.anchor, 1)  # an undefined alias: the composer names it
            nodes += size
            aliased += size
        elif kind is StreamEndEvent:
            return
        if (nodes if plain else aliased) > LIMITS.nodes:
            raise _too_many_nodes(nodes, aliased, event)


def load_yaml(text: str, loader: type[StrictLoader] = StrictLoader) -> Any:
    """Parse one YAML document within LIMITS; raise YamlError (with the line) otherwise."""
    _check_size(text)
    try:
        _parse(text, loader, _measure)
        return _parse(text, loader, _compose)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(str(exc.problem or exc), _line(mark)) from None
    except yaml.YAMLError as exc:  # ReaderError (a control character) has no mark
        raise YamlError(str(exc).replace("\n", " "), None) from None
    except RecursionError:  # within the nesting limit, yet too deep for the stack left here
        raise YamlError(f"the document nests too deep to be read here; lower {variable('nesting')}", None) from None


def measure_yaml(text: str) -> None:
    """Refuse a YAML stream over LIMITS from its events alone, each document on its own:
    a reader that composes the nodes itself (`configbags lint`, which keeps line marks
    and follows aliases) first knows no alias bomb is expanded. The copies aliases make
    count against the node limit, not the nodes written out (the text's size bounds
    those); nesting and scalar length as `load_yaml`; a `%YAML` directive is the
    caller's to judge. YamlError."""
    _check_size(text)
    try:
        _parse(text, StrictLoader, lambda parser: _measure(parser, version=False, plain=False))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(str(exc.problem or exc), _line(mark)) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).replace("\n", " "), None) from None


def _compose(parser: StrictLoader) -> Any:
    node = parser.get_single_node()
    return None if node is None else parser.construct_document(node)


def _parse(text: str, loader: type[StrictLoader], step: Any) -> Any:
    parser = loader(text)
    try:
        return step(parser)
    finally:
        parser.dispose()


def _check_size(text: str) -> None:
    if len(text) > LIMITS.file_bytes:
        raise YamlError(f"the text is {len(text)} characters, over {over('file_bytes', 'bytes')}", None)


# A JSON string, or an unterminated one up to the end: possessive, so one pass over the text
# finds every string (a text of unterminated strings cannot make the search quadratic).
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")


def _measure_json(text: str) -> None:
    """Refuse JSON text over the node, nesting or string limits from its skeleton (the text
    with its strings taken out), before anything is built: every count runs at C speed."""
    skeleton, strings = _JSON_STRING.subn("", text)
    # Every value and key but the first follows a `,` or `:`; containers are counted by
    # their opening bracket (an empty one counts twice: a bound, not a census).
    nodes = 1 + sum(skeleton.count(c) for c in ",:[{")
    if max(nodes, strings) > LIMITS.nodes:
        raise YamlError(f"the document has more than {LIMITS.nodes} nodes, over {over('nodes', 'nodes')}", None)
    if len(text) - len(skeleton) > LIMITS.string_chars:
        for match in _JSON_STRING.finditer(text):  # at most LIMITS.nodes of them, checked above
            if match.end() - match.start() - 2 > LIMITS.string_chars:
                raise YamlError(f"a string of {match.end() - match.start() - 2} characters is over "
                                f"{over('string_chars', 'characters')}", text.count("\n", 0, match.start()) + 1)
    brackets = _NOT_BRACKET.sub("", skeleton)
    if len(brackets) > 2 * LIMITS.nodes:
        return  # more closing than opening brackets: not JSON, and json.loads says where
    depth = 0
    for ch in brackets:
        depth += 1 if ch in "[{" else -1
        if depth > LIMITS.nesting:
            raise YamlError(f"the document nests deeper than {LIMITS.nesting} levels, over "
                            f"{over('nesting', 'levels')}", None)


def load_json(text: str, *, constants: bool = False, duplicates: bool = False) -> Any:
    """Parse JSON text within LIMITS (size, nodes, nesting, string length, integer digits);
    raise YamlError. A key given twice in one object is refused naming it, unless
    `duplicates` (the last wins, as Python's json and Hugging Face's readers take a model's
    config.json); `NaN` and `Infinity` are refused unless `constants` (a model config may
    hold them)."""
    _check_size(text)
    _measure_json(text)

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > LIMITS.int_digits:
            raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits is over "
                             f"{over('int_digits', 'digits')}")
        return int(digits)

    def parse_constant(name: str) -> float:
        if constants:
            return float(name)
        raise ValueError(f"{name} is not JSON (no NaN or infinity)")

    def pairs(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and not duplicates:
                raise ValueError(f"duplicate key {key!r} in one object; keep one of them")
            out[key] = value
        return out

    try:
        data = json.loads(text, parse_int=parse_int, parse_constant=parse_constant, object_pairs_hook=pairs,
                          parse_float=float if constants else float_literal)
        if not is_text(text) or _SURROGATE_ESCAPE.search(text):
            _refuse_lone_surrogates(data, "$")
        return data
    except json.JSONDecodeError as exc:
        raise YamlError(exc.msg, exc.lineno) from None
    except ValueError as exc:
        raise YamlError(str(exc), None) from None
    except RecursionError:
        raise YamlError(f"the document nests too deep to be read here; lower {variable('nesting')}", None) from None


# `\ud800`..`\udfff`: a pair of them is one character, one alone no text at all
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(data: Any, at: str) -> None:
    """ValueError naming the first string (key or value) of `data` holding a lone
    surrogate: no log line, JSON reply or file can carry it (leaftypes.is_text)."""
    pending: list[tuple[Any, str]] = [(data, at)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str) and not is_text(item):
            raise ValueError(f"the string at {where} holds a lone surrogate (a \\uD800-\\uDFFF escape without its "
                             f"pair), which is no text; give UTF-8 text")
        if isinstance(item, dict):
            for key, value in item.items():
                if not is_text(key):
                    raise ValueError(f"a key in {where} holds a lone surrogate, which is no text; give UTF-8 text")
                pending.append((value, f"{where}.{key}"))
        elif isinstance(item, list):
            pending.extend((value, f"{where}[{index}]") for index, value in enumerate(item))


def read_text_limited(path: Path) -> str:
    """A regular file's UTF-8 text, at most LIMITS.file_bytes. Anything else (a FIFO, a
    device, a folder, a link to one of them) is refused before it is opened for reading,
    and the file is opened without blocking and checked again once open, so one swapped in
    between cannot hang the read. Raises YamlError naming the file, or OSError."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise YamlError(f"{path} is not a regular file ({file_kind(info.st_mode)}); give a file", None)
    if info.st_size > LIMITS.file_bytes:
        raise YamlError(f"{path} is {info.st_size} bytes, over {over('file_bytes', 'bytes')}", None)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise YamlError(f"{path} was replaced by something other than a regular file while it was opened",
                            None)
        # A file's own size, and one byte more to see it grow (a /proc file says 0): never a
        # buffer of the whole limit for a small file.
        data = _read_now(f, (info.st_size or LIMITS.file_bytes) + 1, path)
        if len(data) > info.st_size:
            data += _read_now(f, LIMITS.file_bytes + 1 - len(data), path)
    if len(data) > LIMITS.file_bytes:  # it grew between stat and read, or /proc says size 0
        raise YamlError(f"{path} is more than {LIMITS.file_bytes} bytes, over {over('file_bytes', 'bytes')}",
                        None)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})", None) from None


def _read_now(f: Any, size: int, path: Path) -> bytes:
    """Up to `size` bytes of a file opened without blocking. A file with nothing to read
    yet (a /proc file like kmsg: the read would block, so it answers None) is no config."""
    data = f.read(size)
    if data is None:
        raise YamlError(f"{path} has nothing to read now (a kernel or device file that would block); give a "
                        f"regular file", None)
    return bytes(data)


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words ("a FIFO")."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def json_named(name: str | Path) -> bool:
    """Is a config file of this name read, and written, as JSON: its name ends in `.json`
    in any case (`x.JSON`, and a file named just `.json`, whose Path suffix is empty)? The
    one judgement both sides make, so a dump always reads back."""
    return (name.name if isinstance(name, Path) else name).lower().endswith(".json")


def load_file(path: Path, loader: type[StrictLoader] = StrictLoader, **json_options: bool) -> Any:
    """One config, schema or model file: read within the limits, parsed as JSON when it is
    named `*.json` (with `load_json`'s options), as YAML otherwise."""
    return load_text(read_text_limited(path), path.name, loader, **json_options)


def load_text(text: str, name: str, loader: type[StrictLoader] = StrictLoader, **json_options: bool) -> Any:
    """The text of a file named `name`, parsed as `load_file` parses the file (so `configbags
    lint` reads a config file, or one embedded in a ConfigMap, as the server will)."""
    return load_json(text, **json_options) if json_named(name) else load_yaml(text, loader)


# -- writing ---------------------------------------------------------------------------------

class StrictDumper(yaml.SafeDumper):
    """SafeDumper that resolves plain scalars with the loader's own YAML 1.2 rules, so any
    string the loader would read as a number, a bool or null is quoted (YAML 1.1's rules
    leave `1e3`, `0o17` or `1e400` plain, and a YAML 1.2 reader takes them as numbers)."""


StrictDumper.yaml_implicit_resolvers = StrictLoader.yaml_implicit_resolvers
# Printable ASCII with no space at either end: PyYAML's own analysis picks plain or quoted
# for these; anything else (line breaks such as NEL or U+2028, a BOM, controls, non-ASCII)
# is written double-quoted, where every such character is an escape and no folding applies.
_PLAIN_ENOUGH = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


def _represent_str(dumper: StrictDumper, data: str) -> yaml.ScalarNode:
    style = None if _PLAIN_ENOUGH.fullmatch(data) else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


StrictDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """`data` (JSON data: mappings in their own order) as YAML text that `load_yaml` reads
    back to equal data; YamlError if it would not (nothing is written in that case)."""
    text: str = yaml.dump(data, Dumper=StrictDumper, sort_keys=False, allow_unicode=True,
                          default_flow_style=False, width=1 << 20)
    if load_yaml(text) != data:
        raise YamlError("the value would not read back as it is; report it (configbags' YAML writer)", None)
    return text


def dump_json(data: Any) -> str:
    """`data` (JSON data) as JSON text that `load_json` reads back to equal data (a config
    file named `*.json` is read as JSON); YamlError if it would not (NaN, say)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=True) + "\n"
    try:
        same = load_json(text) == data
    except YamlError:
        same = False
    if not same:
        raise YamlError("the value would not read back as it is from JSON (NaN or infinity?); dump to a .yaml "
                        "name instead", None)
    return text


def check_output_path(path: Path, what: str) -> None:
    """Refuse, before anything is done, a path that `write_text_atomic` could not write:
    its folder missing or not writable, or the path a folder or something other than a
    regular file (a FIFO would block the write). OutputFileError names the path and why."""
    folder = path.parent
    why = None
    if path.is_dir():
        why = "it is a folder; give a file name"
    elif path.exists() and not path.is_file():
        why = "it is not a regular file; give a file name"
    elif not folder.is_dir():
        why = f"its folder {folder} does not exist; create it first"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = f"its folder {folder} is not writable; choose a writable place"
    elif path.exists() and not os.access(path, os.W_OK):
        why = "the file is not writable; choose another path or make it writable"
    if why is not None:
        raise OutputFileError(f"{what} {path}: cannot be written: {why}")


def write_text_atomic(path: Path, text: str, what: str) -> Path:
    """Write `text` to `path` as UTF-8, replacing the file whole (a temporary file beside
    it, then a rename): a failed write leaves the old file as it was. A link is written
    through, as a shell's `>` does: the rename would replace the link with a file and
    leave the file it points to (the one kept) stale. OutputFileError."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    check_output_path(path, what)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputFileError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    return path
