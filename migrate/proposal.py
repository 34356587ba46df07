"""`import-dataclass --propose-mapping FILE`: an editable first guess at where each field
belongs and which leaves need a looser override policy.

Namespaces come from the record itself first: a field's namespace marker
(`Annotated[..., NS("parallel")]`) or the config class its default points into
(`ModelConfig.max_model_len` -> `model`). A record that has such markers is taken at its
word: comments are not read as namespaces there. Otherwise they come from its section comments (`# Parallelism` above a run of
fields: the comment's first word, `parallelism`), else from a name prefix that at least
two fields share (`lora_paths`, `lora_backend` -> `lora`), else `legacy`. Writes found in
the engine tree (by the ratchet's scanner) become policy suggestions: a leaf something
writes after parsing cannot stay `startup`, so it is proposed `load_time`, owned by the
writing module, with the evidence as file:line. The user edits the file, then imports
with `--mapping FILE`, which reads both parts.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from configbags.codegen.model import RESERVED_NAMESPACES
from configbags.migrate.check import in_resolution
from configbags.migrate.scan import ScanSettings, Violation, default_jobs, scan_tree
from configbags.runtime.cmdline import Progress

DEFAULT_NAMESPACE = "legacy"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


def section_namespaces(source: str, class_name: str) -> dict[str, str]:
    """field -> namespace from the section comments inside the class body."""
    tree = ast.parse(source)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        return {}
    lines = source.splitlines()
    found: dict[str, str] = {}
    section: str | None = None
    previous_end = classes[0].lineno  # the `class` line; comments below it open sections
    for stmt in classes[0].body:
        # a comment line between the previous statement and this one opens a section
        for text in lines[previous_end : stmt.lineno - 1]:
            stripped = text.strip()
            if stripped.startswith("#"):
                word = _WORD.search(stripped)
                section = word.group(0).lower() if word else section
        previous_end = stmt.end_lineno or stmt.lineno
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and section:
            found[stmt.target.id] = section
    return {k: v for k, v in found.items() if usable_namespace(v)}


def usable_namespace(name: str) -> bool:
    """The generator would take it as a top-level namespace (see configbags.codegen.model)."""
    return bool(_IDENT.fullmatch(name)) and not keyword.iskeyword(name) and name not in RESERVED_NAMESPACES


def prefix_namespaces(fields: Sequence[str]) -> dict[str, str]:
    """field -> its first name part, when at least two fields share it."""
    prefixes = Counter(f.split("_", 1)[0] for f in fields if "_" in f)
    return {
        f: prefix
        for f in fields
        if "_" in f and prefixes[prefix := f.split("_", 1)[0]] >= 2 and usable_namespace(prefix)
    }


def engine_writes(
    engine_root: Path, settings: ScanSettings, fields: Sequence[str], resolution: Sequence[str] = (),
    progress: Progress | None = None,
) -> list[Violation]:
    """The writes of fields found under the root, outside the resolution phase (whose
    writes are folded into the record before publish, so a startup leaf may take them).
    A big engine's scan shows its `progress` as the ratchet's does."""
    return [
        v for v in scan_tree(engine_root, settings, jobs=default_jobs(), progress=progress).violations
        if v.kind == "write" and v.leaf in fields and not in_resolution(v.file, v.function, resolution)
    ]


def write_suggestions(
    engine_root: Path, settings: ScanSettings, fields: Sequence[str], resolution: Sequence[str] = (),
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """leaf -> {override, owner, evidence} for every leaf that code under the root writes."""
    evidence: dict[str, list[str]] = defaultdict(list)
    owners: dict[str, str] = {}
    for violation in engine_writes(engine_root, settings, fields, resolution, progress):
        evidence[violation.leaf].append(f"{violation.file}:{violation.line}")
        module = Path(violation.file).stem
        owners.setdefault(violation.leaf, module if _IDENT.fullmatch(module) else "launcher")
    return {
        leaf: {"override": "load_time", "owner": owners[leaf], "evidence": sorted(set(where))}
        for leaf, where in sorted(evidence.items())
    }


def propose(
    source: str,
    class_name: str,
    fields: Sequence[str],
    *,
    engine_root: Path | None = None,
    settings: ScanSettings | None = None,
    resolution: Sequence[str] = (),
    own: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The proposal: {"leaves": {field: namespace}, "policies": {leaf: {...}}}. `own` holds
    the namespaces the record itself gives (its namespace markers, or the config class a
    field's default points into): they come before any guess from comments or names."""
    own = own or {}
    by_section = {} if own else section_namespaces(source, class_name)
    by_prefix = prefix_namespaces(fields)
    leaves = {f: own.get(f) or by_section.get(f) or by_prefix.get(f) or DEFAULT_NAMESPACE for f in fields}
    policies: dict[str, dict[str, Any]] = {}
    if engine_root is not None:
        policies = write_suggestions(engine_root, settings or ScanSettings(roots=(".",)), fields, resolution,
                                     progress)
    return {"leaves": leaves, "policies": policies}


def render(proposal: Mapping[str, Any], origin: str) -> str:
    header = (
        f"# Proposed by `configbags import-dataclass {origin} --propose-mapping`: edit freely,\n"
        f"# then import with --mapping this-file. `leaves` maps each field to its namespace\n"
        f"# (from the section comments and name prefixes); `policies` holds leaves the engine\n"
        f"# writes after parsing, so they cannot stay `startup` (evidence: where they are written).\n"
    )
    # block mappings, one leaf per line, so a person edits (and diffs) one line per leaf;
    # only the evidence lists stay inline
    body = yaml.dump(dict(proposal), Dumper=_BlockDumper, sort_keys=False, default_flow_style=False, width=100)
    return header + body


class _BlockDumper(yaml.SafeDumper):
    pass


def _flow_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_BlockDumper.add_representer(list, _flow_list)


def read_mapping(data: Any) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """A mapping file: a flat {leaf: namespace}, or a proposal with `leaves` and `policies`."""
    if not isinstance(data, dict):
        raise ValueError("expected a mapping {leaf: namespace} or {leaves: ..., policies: ...}")
    if "leaves" in data and isinstance(data["leaves"], dict):
        policies = data.get("policies") or {}
        if not isinstance(policies, dict):
            raise ValueError("`policies` must map a leaf to {override, owner}")
        return (
            {str(k): str(v) for k, v in data["leaves"].items()},
            {str(k): dict(v) for k, v in policies.items() if isinstance(v, dict)},
        )
    return {str(k): str(v) for k, v in data.items()}, {}
