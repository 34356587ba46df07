"""Where the ratchet's inputs come from, and how ratchet.yaml is edited.

Inputs are the scan settings, the allowlist, the write baseline, the resolution phase,
the leaf -> accessor and leaf -> policy maps, and the declared environment variables with
their leaves (raw reads of them are held like record reads). They load either from a schema folder
(`ratchet.yaml` plus `namespaces/*.yaml`, the source of truth) or from a generated
`ratchet_allowlist` module (what CI holds the tree to). Loading a schema validates it
with the generator's own loader, which costs more than a warm check may take; so the
result is cached under `.configbags-cache/`, keyed by the bytes of every schema file.
Edits to ratchet.yaml touch only the entry lines they must, so comments and layout
elsewhere survive.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs

from configbags.migrate.check import yaml_scalar
from configbags.migrate.scancache import cache_secret, seal
from configbags.migrate.scanmodel import SCANNER_VERSION, Entry, ScanSettings
from configbags.runtime.project import CACHE_DIR

if TYPE_CHECKING:
    import yaml

# PyYAML is imported where a YAML file is read or edited: a warm `check` reads the
# cached inputs as JSON and never pays for it.
RATCHET_FILE = "ratchet.yaml"
INPUTS_CACHE = Path(CACHE_DIR) / "ratchet-inputs.json"
# 2: the declared environment variables (`env_leaves`, `settings.env_vars`)
# 3: accessors in the cfg form (`cfg.<ns>.<leaf>`); a cache of the older form is refused
# 4: a header line with the seal (configbags.migrate.scancache), then the document
_INPUTS_FORMAT = 5


class RatchetConfigError(Exception):
    """ratchet.yaml or a namespace file is missing or malformed."""


@attrs.frozen
class RatchetInputs:
    project: Path  # the folder holding schema/; roots and allowlist paths are relative to it
    settings: ScanSettings
    allowlist: tuple[Entry, ...]
    accessors: Mapping[str, str]
    min_files: int = 5
    source: str = "schema/ratchet.yaml"  # shown in messages
    writes: tuple[Entry, ...] = ()  # writes outside the resolution phase kept for now
    resolution: tuple[str, ...] = ()  # functions whose writes are the legacy resolution
    policies: Mapping[str, str] = attrs.field(factory=dict)  # leaf -> override policy
    # declared environment variable -> its leaf; the scan settings' env_vars are its keys
    env_leaves: Mapping[str, str] = attrs.field(factory=dict)


def read_ratchet_yaml(path: Path) -> dict[str, Any]:
    import yaml

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


def load_from_schema(schema: Path, *, cache: bool = True) -> RatchetInputs:
    """The ratchet's inputs from a schema folder, through the one schema loader: the same
    meta-schemas and cross-file checks as `make gen`, so the ratchet never accepts a
    ratchet.yaml (or namespace file) the generator would reject. With `cache`, a result
    loaded before from the same schema bytes is reused, when its seal holds (see
    configbags.migrate.scancache: a cache from elsewhere or edited is not used)."""
    schema = schema.resolve()
    path = schema / RATCHET_FILE
    if not path.is_file():
        # load_schema treats ratchet.yaml as optional (a schema may have no ratchet);
        # the ratchet commands need one.
        raise RatchetConfigError(f"{path} does not exist; `configbags ratchet init --root DIR` writes one")
    cache_path = schema.parent / INPUTS_CACHE
    key = _schema_key(schema)
    if cache:
        cached = _read_inputs_cache(cache_path, key, schema)
        if cached is not None:
            return cached
    inputs = _load_validated(schema)
    if cache:
        _write_inputs_cache(cache_path, key, inputs)
    return inputs


def _load_validated(schema: Path) -> RatchetInputs:
    # The generator is imported here only: a warm check never needs it.
    from configbags.codegen.errors import SchemaInvalid
    from configbags.codegen.model import DEFAULT_MIN_FILES, load_schema

    # The one definition of how a leaf is read (the generator and the runtime share it).
    from configbags.runtime.registry import accessor_expression

    # ratchet.yaml holds one entry per raw read, thousands on a real engine, and the
    # generator's line-marking YAML loader is slow on it. So it is read with the C loader
    # and held to the same meta-schema here, and the generator's loader checks the rest
    # of the folder (namespaces, roles) through a view without it. On any problem the
    # whole folder goes through the generator's loader, for its exact messages.
    ratchet = _fast_ratchet(schema / RATCHET_FILE)
    try:
        if ratchet is None:
            loaded = load_schema(schema)
            ratchet = _ratchet_data(loaded.ratchet)
        else:
            loaded = _load_without_ratchet(schema)
    except SchemaInvalid as exc:
        problems = "\n  ".join(map(str, exc.errors))
        raise RatchetConfigError(f"the schema in {schema} is invalid:\n  {problems}") from exc
    scan = ratchet["scan"]
    env_leaves = loaded.env_leaves
    settings = ScanSettings(
        roots=tuple(scan["roots"]),
        excludes=tuple(scan.get("excludes", ())),
        raw_accessor=scan["raw_accessor"],
        record_class=scan["record_class"],
        record_attributes=tuple(scan["record_attributes"]),
        record_dicts=tuple(scan.get("record_dicts", ())),
        env_vars=tuple(sorted(env_leaves)),
    )

    def entries(key: str) -> tuple[Entry, ...]:
        made = [
            Entry(e["file"], e["function"], e["leaf"], e["reason"], _reads(e.get("reads")))
            for e in ratchet.get(key) or ()
        ]
        return tuple(sorted(made, key=lambda e: (e.file, e.function, e.leaf)))

    accessors = {leaf.name: accessor_expression(leaf.namespace, leaf.name) for leaf in loaded.leaves}
    accessors.update((d.name, accessor_expression(d.namespace, d.name)) for d in loaded.derived)
    return RatchetInputs(
        project=schema.parent,
        settings=settings,
        allowlist=entries("allowlist"),
        accessors=accessors,
        min_files=int(scan.get("min_files", DEFAULT_MIN_FILES)),
        source=f"{schema.name}/{RATCHET_FILE}",
        writes=entries("writes"),
        resolution=tuple(scan.get("resolution", ())),
        policies={leaf.name: leaf.policy for leaf in loaded.leaves},
        env_leaves=env_leaves,
    )


def declared_env(schema: Path) -> dict[str, str]:
    """The declared environment variables -> their leaves, from the namespace files alone
    (for `ratchet init`, which may run before ratchet.yaml exists or to replace a broken
    one); validated by the generator's loader. No namespaces folder declares none."""
    schema = schema.resolve()
    if not (schema / "namespaces").is_dir():
        return {}
    from configbags.codegen.errors import SchemaInvalid

    try:
        return dict(_load_without_ratchet(schema).env_leaves)
    except SchemaInvalid as exc:
        problems = "\n  ".join(map(str, exc.errors))
        raise RatchetConfigError(
            f"the schema in {schema} is invalid, so its environment variables are unknown:\n  {problems}"
        ) from exc


def _fast_ratchet(path: Path) -> dict[str, Any] | None:
    """ratchet.yaml through libyaml and the generator's meta-schema; None when either is
    unavailable or the file has any problem (the slow path then reports it exactly)."""
    import jsonschema
    import yaml

    from configbags.codegen.load import META_DIR

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
        data = read_entry_lists(text, loader)
        if data is None:
            data = yaml.load(text, Loader=loader)
        meta = json.loads((META_DIR / "ratchet.schema.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    # jsonschema walks the short `scan:` part; the entry lists (thousands of entries on a
    # real engine, most of a cold check's schema time through jsonschema) are held to the
    # same meta-schema's entry definition by a plain loop.
    lists = {key: data[key] for key in ("allowlist", "writes") if isinstance(data.get(key), list)}
    if not jsonschema.Draft202012Validator(meta).is_valid({**data, **{key: [] for key in lists}}):
        return None
    entry_ok = _entry_check(meta["$defs"]["entries"]["items"])
    if not all(entry_ok(entry) for entries in lists.values() for entry in entries):
        return None
    return data


# One allowlist or writes entry as `ratchet init`, `update` and `entry_flow` write it: a
# flow mapping of the four keys in order on a line of its own, each value a plain scalar of
# name and path characters (YAML may still read one as a number, a bool or null: checked
# with its own resolver), or quoted without escapes.
_PLAIN = r"[A-Za-z0-9_$<./][A-Za-z0-9_$<>./-]*(?: [A-Za-z0-9_$<>./-]+)*"
_SCALAR = rf'({_PLAIN})|"([^"\\\n]*)"|\'([^\'\n]*)\''
_ENTRY_LINE = re.compile(
    rf"  - \{{file: (?:{_SCALAR}), function: (?:{_SCALAR}), leaf: (?:{_SCALAR}), reason: (?:{_SCALAR})"
    r"(?:, reads: ([1-9][0-9]{0,8}))?\}")
_LIST_KEYS = ("allowlist", "writes")


def read_entry_lists(text: str, loader: Any) -> dict[str, Any] | None:
    """ratchet.yaml's data as `yaml.load(text, loader)` gives it, with the entry lists
    read line by line: building ten thousand small mappings through PyYAML, even its C
    loader, is most of a cold check's schema time. The rest of the file (the short `scan:`
    part, comments) goes through `loader` with the entry lines taken out, and must then
    hold each list's key with no value, so every line taken was an item of that list.
    None where the file is not in that shape (the caller then loads it whole)."""
    import yaml

    if "\r" in text or text.startswith("\ufeff"):
        return None
    lines = text.split("\n")
    lists: dict[str, list[dict[str, str | int | None]]] = {}
    current: list[dict[str, str | int | None]] | None = None
    rest = []
    for line in lines:
        entry = _ENTRY_LINE.fullmatch(line) if current is not None else None
        if entry is not None:
            assert current is not None
            current.append(_entry_of(entry.groups()))
            continue
        if current is not None and (not line.strip() or line.lstrip().startswith("#")):
            rest.append(line)  # a comment or blank line between items: the list goes on
            continue
        key = line[:-1] if line.endswith(":") else None
        if key in _LIST_KEYS:
            if key in lists:
                return None  # twice: which one counts is the loader's business
            current = lists[key] = []
        else:
            current = None  # any other line ends the list (an item in another shape: see below)
        rest.append(line)
    # an empty list is YAML's null, an item not a string a refusal: the whole load says so
    if not lists or any(not entries or any(None in entry.values() for entry in entries) for entries in lists.values()):
        return None
    try:
        data = yaml.load("\n".join(rest), Loader=loader)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or any(key not in data or data[key] is not None for key in lists):
        return None
    data.update(lists)
    return data


# scalar text -> whether YAML reads it as that string (not a number, bool, null or date)
_PLAIN_IS_STR: dict[str, bool] = {}


def _entry_of(groups: tuple[str | None, ...]) -> dict[str, str | int | None]:
    """The entry of one matched line (a value None where a plain scalar is not a string)."""
    import yaml

    values: list[str | None] = []
    for k in range(0, 12, 3):
        plain, double, single = groups[k:k + 3]
        if plain is None:
            values.append(double if double is not None else single)
            continue
        is_str = _PLAIN_IS_STR.get(plain)
        if is_str is None:
            resolve: Callable[..., str] = yaml.resolver.Resolver().resolve  # the loader's own (untyped)
            tag = resolve(yaml.ScalarNode, plain, (True, False))
            is_str = _PLAIN_IS_STR[plain] = tag == "tag:yaml.org,2002:str"
        values.append(plain if is_str else None)
    entry: dict[str, str | int | None] = dict(zip(("file", "function", "leaf", "reason"), values, strict=True))
    if groups[12] is not None:
        entry["reads"] = int(groups[12])
    return entry


def _reads(value: Any) -> int | None:
    """An entry's `reads` as loaded and validated (jsonschema's integer may be a float)."""
    return None if value is None else int(value)


def _entry_check(item: dict[str, Any]) -> Callable[[Any], bool]:
    """A predicate equal to the meta-schema's `entries.items` (an object of the required
    string keys, each within its minLength and pattern, and an optional `reads` integer of
    at least its minimum) for the shapes it uses."""
    keys = frozenset(item["required"])
    fields = item["properties"]
    optional = set(fields) - keys
    if optional != {"reads"} or item.get("additionalProperties") is not False:
        raise ValueError("ratchet meta-schema: entry shape changed; update _entry_check")
    least = int(fields["reads"]["minimum"])
    limits = {k: (int(f.get("minLength", 0)), re.compile(f["pattern"]) if "pattern" in f else None)
              for k, f in fields.items() if k in keys}

    def ok(entry: Any) -> bool:
        if not isinstance(entry, dict) or not keys <= entry.keys() <= keys | optional:
            return False
        if "reads" in entry:
            count = entry["reads"]
            # jsonschema's integer: an int, or a float with no fraction (never a bool)
            if count is not None and (
                not (type(count) is int or (type(count) is float and count.is_integer())) or count < least
            ):
                return False
        for key, (shortest, pattern) in limits.items():
            value = entry[key]
            if not isinstance(value, str) or len(value) < shortest:
                return False
            if pattern is not None and pattern.search(value) is None:
                return False
        return True

    return ok


def _ratchet_data(ratchet: Any) -> dict[str, Any]:
    """The generator's Ratchet record as ratchet.yaml's data."""
    def listed(items: Iterable[Any]) -> list[dict[str, Any]]:
        return [
            {"file": e.file, "function": e.function, "leaf": e.leaf, "reason": e.reason,
             **({"reads": e.reads} if e.reads else {})}
            for e in items
        ]

    return {
        "scan": {
            "roots": list(ratchet.roots),
            "excludes": list(ratchet.excludes),
            "raw_accessor": ratchet.raw_accessor,
            "record_class": ratchet.record_class,
            "record_attributes": list(ratchet.record_attributes),
            "record_dicts": list(ratchet.record_dicts),
            "resolution": list(ratchet.resolution),
            "min_files": ratchet.min_files,
        },
        "allowlist": listed(ratchet.allowlist),
        "writes": listed(ratchet.writes),
    }


def _load_without_ratchet(schema: Path) -> Any:
    """The generator's load of every schema file but ratchet.yaml (read apart, see
    _load_validated); the whole folder where the view cannot be linked."""
    from configbags.codegen.model import load_schema

    try:
        with _without_ratchet(schema) as view:
            return load_schema(view)
    except OSError:  # no symlinks here: the whole folder, slowly
        return load_schema(schema)


@contextlib.contextmanager
def _without_ratchet(schema: Path) -> Iterator[Path]:
    """A folder of the same name with every entry of `schema` but ratchet.yaml, linked."""
    with tempfile.TemporaryDirectory(prefix="configbags-ratchet-") as scratch:
        view = Path(scratch) / schema.name
        view.mkdir()
        for entry in schema.iterdir():
            if entry.name != RATCHET_FILE:
                (view / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        yield view


def _schema_key(schema: Path) -> str:
    """A digest of every file under the schema folder (names and bytes)."""
    digest = hashlib.blake2b(f"{_INPUTS_FORMAT}|{SCANNER_VERSION}".encode(), digest_size=16)
    for dirpath, dirnames, filenames in os.walk(schema):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            file = Path(dirpath) / name
            digest.update(file.relative_to(schema).as_posix().encode() + b"\0")
            try:
                digest.update(file.read_bytes() if file.is_file() else b"<special>")
            except OSError:
                digest.update(b"<unreadable>")
            digest.update(b"\0")
    return digest.hexdigest()


def inputs_seal(secret: bytes, key: str, body: bytes) -> str:
    """The seal of an inputs cache for the schema digest `key`."""
    return seal(secret, f"ratchet-inputs|{_INPUTS_FORMAT}|{key}", body)


def _read_inputs_cache(path: Path, key: str, schema: Path) -> RatchetInputs | None:
    """The cached inputs when the cache is for exactly these schema bytes; None on any doubt."""
    secret = cache_secret()
    if secret is None:
        return None
    try:
        head, _, body = path.read_bytes().partition(b"\n")
        if head.decode("ascii") != inputs_seal(secret, key, body):
            return None  # written elsewhere, for other schema bytes, or edited
        raw = json.loads(body)
        if raw["format"] != _INPUTS_FORMAT or raw["key"] != key:
            return None
        scan = raw["settings"]
        settings = ScanSettings(
            roots=_strings(scan["roots"]),
            excludes=_strings(scan["excludes"]),
            raw_accessor=str(scan["raw_accessor"]),
            record_class=str(scan["record_class"]),
            record_attributes=_strings(scan["record_attributes"]),
            record_dicts=_strings(scan["record_dicts"]),
            env_vars=_strings(scan["env_vars"]),
        )
        env_leaves = {str(k): str(v) for k, v in raw["env_leaves"].items()}
        if tuple(env_leaves) != settings.env_vars:
            return None
        return RatchetInputs(
            project=schema.parent,
            settings=settings,
            allowlist=_entries(raw["allowlist"]),
            accessors={str(k): str(v) for k, v in raw["accessors"].items()},
            min_files=int(raw["min_files"]),
            source=str(raw["source"]),
            writes=_entries(raw["writes"]),
            resolution=_strings(raw["resolution"]),
            policies={str(k): str(v) for k, v in raw["policies"].items()},
            env_leaves=env_leaves,
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _entries(value: Any) -> tuple[Entry, ...]:
    # sealed (written by this code): checked for shape, not cell by cell
    if type(value) is not list or not all(type(e) is list and len(e) == 5 for e in value):
        raise ValueError("malformed entries")
    return tuple(map(Entry._make, value))


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return tuple(value)


def _write_inputs_cache(path: Path, key: str, inputs: RatchetInputs) -> None:
    secret = cache_secret()
    if secret is None:
        return
    s = inputs.settings
    document = {
        "format": _INPUTS_FORMAT,
        "key": key,
        "settings": {
            "roots": s.roots,
            "excludes": s.excludes,
            "raw_accessor": s.raw_accessor,
            "record_class": s.record_class,
            "record_attributes": s.record_attributes,
            "record_dicts": s.record_dicts,
            "env_vars": s.env_vars,
        },
        "allowlist": inputs.allowlist,
        "accessors": dict(inputs.accessors),
        "min_files": inputs.min_files,
        "source": inputs.source,
        "writes": inputs.writes,
        "resolution": inputs.resolution,
        "policies": dict(inputs.policies),
        "env_leaves": dict(inputs.env_leaves),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        body = json.dumps(document).encode()
        head = inputs_seal(secret, key, body).encode()
        tmp.write_bytes(head + b"\n" + body)
        tmp.replace(path)
    except OSError:
        pass  # only costs speed next time


def generated_module_file(project: Path, name: str) -> Path | None:
    """The file of the module `name` inside the project (flat or `src/` layout), or None."""
    relative = Path(*name.split(".")).with_suffix(".py")
    for base in (project, project / "src"):
        if (base / relative).is_file():
            return base / relative
    return None


def _allowlist_module(project: Path, name: str) -> ModuleType:
    """The generated allowlist module `name` as the project holds it now. Its file under the
    project (flat or `src/` layout) is run as a fresh module, so a module of that name
    imported before (another checkout's, or this one's before a gen) is never what is
    read; only a module the project does not hold is imported by name."""
    file = generated_module_file(project, name)
    if file is not None:
        spec = importlib.util.spec_from_file_location(name, file)
        # a .py file always has a spec and a loader
        assert spec is not None
        assert spec.loader is not None
        fresh = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(fresh)
        except Exception as exc:  # the module is generated: any failure means regenerate
            raise RatchetConfigError(f"cannot load {name} from {file}: {type(exc).__name__}: {exc}; "
                                     f"regenerate it (configbags gen)") from exc
        return fresh
    sys.path.insert(0, str(project))
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise RatchetConfigError(f"cannot import {name} from {project}: {exc}") from exc
    finally:
        sys.path.remove(str(project))


def load_from_generated(project: Path, module: str) -> RatchetInputs:
    """Read the generated `ratchet_allowlist` module (`module` names it or its package)."""
    project = project.resolve()
    name = module if module.endswith("ratchet_allowlist") else f"{module}.ratchet_allowlist"
    generated = _allowlist_module(project, name)
    # absent from packages generated before the ratchet held environment reads
    env_leaves = {str(k): str(v) for k, v in getattr(generated, "ENV_LEAVES", {}).items()}
    settings = ScanSettings(
        roots=tuple(generated.ROOTS),
        excludes=tuple(generated.EXCLUDES),
        raw_accessor=generated.RAW_ACCESSOR,
        record_class=generated.RECORD_CLASS,
        record_attributes=tuple(generated.RECORD_ATTRIBUTES),
        # absent from packages generated before the ratchet knew them
        record_dicts=tuple(getattr(generated, "RECORD_DICTS", ())),
        env_vars=tuple(sorted(env_leaves)),
    )

    def entries(name: str) -> tuple[Entry, ...]:
        # `reads` is absent from packages generated before the ratchet counted reads
        return tuple(
            Entry(e.file, e.function, e.leaf, e.reason, getattr(e, "reads", None)) for e in getattr(generated, name, ())
        )

    return RatchetInputs(
        project=project,
        settings=settings,
        allowlist=entries("ALLOWLIST"),
        accessors=dict(generated.ACCESSORS),
        min_files=int(getattr(generated, "MIN_FILES", 5)),
        source="schema/ratchet.yaml",
        writes=entries("WRITES"),
        resolution=tuple(getattr(generated, "RESOLUTION", ())),
        policies=dict(getattr(generated, "OVERRIDE_POLICIES", {})),
        env_leaves=env_leaves,
    )


# --------------------------------------------------------------------------- writing


def render_entry(entry: Entry) -> str:
    count = f", reads: {int(entry.reads)}" if entry.reads else ""
    return (
        f"{{file: {yaml_scalar(entry.file)}, function: {yaml_scalar(entry.function)}, "
        f"leaf: {yaml_scalar(entry.leaf)}, reason: {yaml_scalar(entry.reason)}{count}}}"
    )


def _flow_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(yaml_scalar(v) for v in values) + "]"


def render_ratchet_yaml(
    settings: ScanSettings,
    entries: Iterable[Entry],
    *,
    min_files: int | None = None,
    resolution: Sequence[str] = (),
    writes: Iterable[Entry] = (),
) -> str:
    """ratchet.yaml as `ratchet init` writes it. `min_files` is written when given (init
    passes the previous file's value on, so rewriting the file never loosens the floor)."""
    lines = [
        "# The read ratchet: what `configbags ratchet check` scans, and the raw ServerArgs",
        "# reads that may stay, each with the reason why; `writes:` does the same for writes",
        "# outside the resolution phase (`scan.resolution`, whose writes are allowed). Both lists",
        "# only shrink: `configbags ratchet fix` moves reads onto accessors, `ratchet update`",
        "# drops stale entries.",
        "scan:",
        f"  roots: {_flow_list(settings.roots)}",
        f"  excludes: {_flow_list(settings.excludes)}",
        f"  raw_accessor: {yaml_scalar(settings.raw_accessor)}",
        f"  record_class: {yaml_scalar(settings.record_class)}",
        f"  record_attributes: {_flow_list(settings.record_attributes)}",
        f"  record_dicts: {_flow_list(settings.record_dicts)}",
        f"  resolution: {_flow_list(resolution)}",
    ]
    if min_files is not None:
        lines.append(f"  min_files: {int(min_files)}")
    for key, listed in (("writes", writes), ("allowlist", entries)):
        ordered = sorted(listed, key=lambda e: (e.file, e.function, e.leaf))
        if not ordered:
            lines.append(f"{key}: []")
        else:
            lines.append(f"{key}:")
            lines.extend(f"  - {render_entry(e)}" for e in ordered)
    return "\n".join(lines) + "\n"


def edit_allowlist(
    text: str, decide: Callable[[Entry], Entry | None], *, key: str = "allowlist"
) -> tuple[str, list[Entry], list[Entry]]:
    """Apply `decide` to each allowlist entry: None removes it, a different entry replaces
    it. Returns (new text, removed, replaced). Only the lines of touched entries change;
    a flow-style allowlist, or one that ends up empty, is re-rendered as a block."""
    import yaml

    root = yaml.compose(text)
    lines = text.splitlines(keepends=True)
    allow_key, allow_node = _allowlist_node(root, key)
    items = allow_node.value if isinstance(allow_node, yaml.SequenceNode) else []
    removed: list[Entry] = []
    replaced: list[Entry] = []
    new_items: list[tuple[yaml.Node, Entry | None]] = []
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
        body = f"{key}: []\n" if not survivors else f"{key}:\n" + "".join(
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


def _as_entry_of(node: yaml.Node) -> Entry:
    import yaml

    data = yaml.safe_load(yaml.serialize(node)) or {}
    count = data.get("reads")
    return Entry(
        str(data.get("file", "")),
        str(data.get("function", "")),
        str(data.get("leaf", "")),
        str(data.get("reason") or ""),
        count if type(count) is int else None,
    )


def _allowlist_node(root: yaml.Node | None, name: str) -> tuple[yaml.Node, yaml.Node | None]:
    import yaml

    if not isinstance(root, yaml.MappingNode):
        raise RatchetConfigError("ratchet.yaml: expected a mapping with `scan` and `allowlist`")
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == name:
            return key, value
    raise RatchetConfigError(f"ratchet.yaml: no `{name}` key")


def _last_line(node: yaml.Node) -> int:
    """The last line holding part of `node` (0-based). A block node's end mark sits at the
    start of whatever follows it, so look at its children instead."""
    import yaml

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
