"""Where the ratchet's inputs come from, and how ratchet.yaml is edited.

Inputs are the scan settings, the allowlist and the leaf -> accessor map. They load either
from a schema folder (`ratchet.yaml` plus `namespaces/*.yaml`, the source of truth) or from
a generated `ratchet_allowlist` module (what CI holds the tree to). Edits to ratchet.yaml
touch only the allowlist lines they must, so comments and layout elsewhere survive.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from configbags.codegen.errors import SchemaInvalid
from configbags.codegen.model import DEFAULT_MIN_FILES, AllowEntry, load_schema
from configbags.migrate.check import yaml_scalar
from configbags.migrate.scan import ScanSettings

# The one definition of how a leaf is read (the generator and the runtime share it).
from configbags.runtime.registry import accessor_expression

RATCHET_FILE = "ratchet.yaml"


class RatchetConfigError(Exception):
    """ratchet.yaml or a namespace file is missing or malformed."""


@attrs.frozen
class RatchetInputs:
    project: Path  # the folder holding schema/; roots and allowlist paths are relative to it
    settings: ScanSettings
    allowlist: tuple[AllowEntry, ...]
    accessors: Mapping[str, str]
    min_files: int = DEFAULT_MIN_FILES
    source: str = "schema/ratchet.yaml"  # shown in messages


def read_ratchet_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RatchetConfigError(
            f"{path} does not exist; `configbags ratchet init --root DIR` writes one"
        ) from exc
    except (OSError, yaml.YAMLError) as exc:
        raise RatchetConfigError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise RatchetConfigError(f"{path}: expected a mapping with `scan` and `allowlist`")
    return data


def load_from_schema(schema: Path) -> RatchetInputs:
    """The ratchet's inputs from a schema folder, through the one schema loader: the same
    meta-schemas and cross-file checks as `make gen`, so the ratchet never accepts a
    ratchet.yaml (or namespace file) the generator would reject."""
    schema = schema.resolve()
    path = schema / RATCHET_FILE
    if not path.is_file():
        # load_schema treats ratchet.yaml as optional (a schema may have no ratchet);
        # the ratchet commands need one.
        raise RatchetConfigError(f"{path} does not exist; `configbags ratchet init --root DIR` writes one")
    try:
        loaded = load_schema(schema)
    except SchemaInvalid as exc:
        problems = "\n  ".join(map(str, exc.errors))
        raise RatchetConfigError(f"the schema in {schema} is invalid:\n  {problems}") from exc
    ratchet = loaded.ratchet
    settings = ScanSettings(
        roots=ratchet.roots,
        excludes=ratchet.excludes,
        raw_accessor=ratchet.raw_accessor,
        record_class=ratchet.record_class,
        record_attributes=ratchet.record_attributes,
    )
    accessors = {leaf.name: accessor_expression(leaf.namespace, leaf.name) for leaf in loaded.leaves}
    accessors.update((d.name, accessor_expression(d.namespace, d.name)) for d in loaded.derived)
    return RatchetInputs(
        project=schema.parent,
        settings=settings,
        allowlist=ratchet.allowlist,
        accessors=accessors,
        min_files=ratchet.min_files,
        source=f"{schema.name}/{RATCHET_FILE}",
    )


def load_from_generated(project: Path, module: str) -> RatchetInputs:
    """Read the generated `ratchet_allowlist` module (`module` names it or its package)."""
    project = project.resolve()
    name = module if module.endswith("ratchet_allowlist") else f"{module}.ratchet_allowlist"
    sys.path.insert(0, str(project))
    try:
        generated = importlib.import_module(name)
    except ImportError as exc:
        raise RatchetConfigError(f"cannot import {name} from {project}: {exc}") from exc
    finally:
        sys.path.remove(str(project))
    settings = ScanSettings(
        roots=tuple(generated.ROOTS),
        excludes=tuple(generated.EXCLUDES),
        raw_accessor=generated.RAW_ACCESSOR,
        record_class=generated.RECORD_CLASS,
        record_attributes=tuple(generated.RECORD_ATTRIBUTES),
    )
    entries = tuple(AllowEntry(e.file, e.function, e.leaf, e.reason) for e in generated.ALLOWLIST)
    return RatchetInputs(
        project=project,
        settings=settings,
        allowlist=entries,
        accessors=dict(generated.ACCESSORS),
        min_files=int(getattr(generated, "MIN_FILES", DEFAULT_MIN_FILES)),
        source="schema/ratchet.yaml",
    )


# --------------------------------------------------------------------------- writing


def render_entry(entry: AllowEntry) -> str:
    return (
        f"{{file: {yaml_scalar(entry.file)}, function: {yaml_scalar(entry.function)}, "
        f"leaf: {yaml_scalar(entry.leaf)}, reason: {yaml_scalar(entry.reason)}}}"
    )


def _flow_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(yaml_scalar(v) for v in values) + "]"


def render_ratchet_yaml(
    settings: ScanSettings, entries: Iterable[AllowEntry], *, min_files: int | None = None
) -> str:
    """ratchet.yaml as `ratchet init` writes it. `min_files` is written when given (init
    passes the previous file's value on, so rewriting the file never loosens the floor)."""
    lines = [
        "# The read ratchet: what `configbags ratchet check` scans, and the raw ServerArgs",
        "# reads that may stay, each with the reason why. The list only shrinks:",
        "# `configbags ratchet fix` moves reads onto accessors, `ratchet update` drops stale entries.",
        "scan:",
        f"  roots: {_flow_list(settings.roots)}",
        f"  excludes: {_flow_list(settings.excludes)}",
        f"  raw_accessor: {yaml_scalar(settings.raw_accessor)}",
        f"  record_class: {yaml_scalar(settings.record_class)}",
        f"  record_attributes: {_flow_list(settings.record_attributes)}",
    ]
    if min_files is not None:
        lines.append(f"  min_files: {int(min_files)}")
    ordered = sorted(entries, key=lambda e: (e.file, e.function, e.leaf))
    if not ordered:
        lines.append("allowlist: []")
    else:
        lines.append("allowlist:")
        lines.extend(f"  - {render_entry(e)}" for e in ordered)
    return "\n".join(lines) + "\n"


def edit_allowlist(
    text: str, decide: Callable[[AllowEntry], AllowEntry | None]
) -> tuple[str, list[AllowEntry], list[AllowEntry]]:
    """Apply `decide` to each allowlist entry: None removes it, a different entry replaces
    it. Returns (new text, removed, replaced). Only the lines of touched entries change;
    a flow-style allowlist, or one that ends up empty, is re-rendered as a block."""
    root = yaml.compose(text)
    lines = text.splitlines(keepends=True)
    allow_key, allow_node = _allowlist_node(root)
    items = allow_node.value if isinstance(allow_node, yaml.SequenceNode) else []
    removed: list[AllowEntry] = []
    replaced: list[AllowEntry] = []
    new_items: list[tuple[yaml.Node, AllowEntry | None]] = []
    for item in items:
        entry = _as_entry_of(item)
        verdict = decide(entry)
        if verdict is None:
            removed.append(entry)
        elif verdict != entry:
            replaced.append(verdict)
        new_items.append((item, verdict))
    if not removed and not replaced:
        return text, removed, replaced

    survivors = [v for _, v in new_items if v is not None]
    block = isinstance(allow_node, yaml.SequenceNode) and not allow_node.flow_style
    if not block or not survivors:
        # Re-render the allowlist value from its key line to the end of the sequence.
        start = allow_key.start_mark.line
        end = _last_line(allow_node) if allow_node is not None else start
        body = "allowlist: []\n" if not survivors else "allowlist:\n" + "".join(
            f"  - {render_entry(e)}\n" for e in survivors
        )
        return "".join(lines[:start]) + body + "".join(lines[end + 1 :]), removed, replaced

    drop: set[int] = set()
    swap: dict[int, str] = {}
    for item, verdict in new_items:
        first, last = item.start_mark.line, _last_line(item)
        original = _as_entry_of(item)
        if verdict == original:
            continue
        if verdict is None:
            drop.update(range(first, last + 1))
            # a comment block directly above an entry belongs to it
            above = first - 1
            while above >= 0 and lines[above].lstrip().startswith("#"):
                drop.add(above)
                above -= 1
        else:
            indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
            swap[first] = f"{indent}- {render_entry(verdict)}\n"
            drop.update(range(first + 1, last + 1))
    out = [swap.get(i, line) for i, line in enumerate(lines) if i not in drop or i in swap]
    return "".join(out), removed, replaced


def _as_entry_of(node: yaml.Node) -> AllowEntry:
    data = yaml.safe_load(yaml.serialize(node)) or {}
    return AllowEntry(
        str(data.get("file", "")),
        str(data.get("function", "")),
        str(data.get("leaf", "")),
        str(data.get("reason") or ""),
    )


def _allowlist_node(root: yaml.Node | None) -> tuple[yaml.Node, yaml.Node | None]:
    if not isinstance(root, yaml.MappingNode):
        raise RatchetConfigError("ratchet.yaml: expected a mapping with `scan` and `allowlist`")
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "allowlist":
            return key, value
    raise RatchetConfigError("ratchet.yaml: no `allowlist` key")


def _last_line(node: yaml.Node) -> int:
    """The last line holding part of `node` (0-based). A block node's end mark sits at the
    start of whatever follows it, so look at its children instead."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        end = node.end_mark
        return end.line if end.column > 0 else end.line - 1
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            children += [key, value]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    if not children:
        return node.start_mark.line
    return max(_last_line(child) for child in children)
