"""The one adapter between codegen's schema model and the evolution tools: a schema
folder as plain, frozen views of what diff, lint and matrix compare (each leaf's
spellings, type, bounds, policy, flags for the hash and secrets, lifecycle, where it is
written), so a change to codegen's leaf record touches this file only.

Values come from codegen's loaded and checked schema, read by the fields its leaf record
shares with the run time's LeafSpec; places (each leaf's and property's line) come from
the files' own line marks, composed again here, so the views do not depend on where
codegen keeps them.

Views of a folder are cached by the digest of its files (`.configbags-cache/evolve-views/`
in the project above the folder), so comparing with a revision loads that revision once."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml

from configbags.codegen.errors import SchemaError
from configbags.codegen.errors import SchemaInvalid as SchemaInvalid  # what load_view raises
from configbags.runtime.errors import YamlError
from configbags.runtime.leaftypes import TypeSpec
from configbags.runtime.project import CACHE_DIR, find_pyproject
from configbags.runtime.registry import Deprecation, Renamed
from configbags.runtime.spelling import flag_of, spellings, version_key
from configbags.runtime.yamlsafe import StrictLoader, read_text_limited

if TYPE_CHECKING:
    from configbags.codegen.model import Schema

# Bump when a view's fields change: cached views of another format are not read.
VIEW_FORMAT = 8
CACHE_ENTRIES = 16  # views kept in the cache folder, newest first


@attrs.frozen
class Where:
    """A place in a schema file: `file` as a path to show (and to annotate in CI)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@attrs.frozen
class OldSpelling:
    """An entry of `renamed_from`: the old name (config key), its flag and variable."""

    name: str
    flag: str
    env: str | None
    since: str | None
    remove_in: str | None


@attrs.frozen
class LeafView:
    name: str
    namespace: str
    type: TypeSpec
    required: bool
    default: Any
    help: str
    flags: tuple[str, ...]  # every command-line spelling: primary, aliases, a bool's --no- twins
    env: str | None
    choices: tuple[Any, ...] | None
    minimum: float | None
    maximum: float | None
    policy: str
    hashed: bool
    capacity: str | None
    secret: bool
    old: tuple[OldSpelling, ...]
    deprecated: Deprecation | None
    where: Where
    lines: Mapping[str, int] = attrs.field(factory=dict, eq=False)  # property -> line
    negatable: bool = False  # a bool flag: bare, with a --no- twin
    bare: bool = False  # the flag may stand alone (a const, or a list flag with nargs "*")
    owner: str = ""  # the role that resolves it and may override it
    writers: tuple[str, ...] = ()  # the other roles that may override it (`writers:`)
    # how the server's parser declares the flag (runtime.cliflags.argument_options reads them)
    declared_flags: tuple[str, ...] = ()  # the flag and aliases, no --no- twins
    has_const: bool = False
    const: Any = None
    nargs: str | int | None = None
    metric: bool = False  # a gauge on /metrics (`metric: true`)
    has_fallback: bool = False
    fallback: Any = None  # what an unset (null) leaf resolves to
    structure: Any = None  # a json leaf's declared keys (`structure:`), or None

    def at(self, prop: str) -> Where:
        return Where(self.where.file, self.lines.get(prop, self.where.line))

    @property
    def primary_flag(self) -> str | None:
        return self.flags[0] if self.flags else None


@attrs.frozen
class AttributeView:
    """A derived value or a rank: an attribute of its namespace's bag that engine code reads."""

    name: str
    namespace: str
    type: TypeSpec
    where: Where
    fn: str = ""  # a derived value's `module:function` ("" for a rank)
    inputs: tuple[str, ...] = ()  # passed to `fn` positionally, in this order
    pinned: bool = False  # computed once at publish (`pin: publish`)
    hash: bool = True  # feeds the config hash (a rank never does)
    rank: bool = False  # stamped at publish (`ranks:`), not derived


@attrs.frozen
class RuleView:
    """A hardware or model rule (rules.yaml): what it sets, when, and whether it overrides
    an operator (`force`)."""

    id: str
    leaf: str
    layer: str
    when: tuple[tuple[str, str, Any], ...]  # (subject, op, operand)
    has_value: bool
    value: Any
    fn: str | None
    inputs: tuple[str, ...]
    force: str | None
    where: Where


@attrs.frozen
class RoleView:
    name: str
    reads: tuple[str, ...]  # top-level namespaces, sorted; `("*",)` for reads: all
    where: Where
    write_any: bool = False  # may write every leaf, in test scopes (only the test role may)


@attrs.frozen
class PresetView:
    name: str
    values: Mapping[str, Any]
    where: Where


@attrs.frozen
class ContractView:
    """A fleet contract (contracts.yaml): the roles it binds and the values they share."""

    name: str
    roles: tuple[str, ...]
    members: tuple[str, ...]
    where: Where
    lines: Mapping[str, int] = attrs.field(factory=dict, eq=False)  # property -> line

    def at(self, prop: str) -> Where:
        return Where(self.where.file, self.lines.get(prop, self.where.line))


@attrs.frozen
class SchemaView:
    label: str  # how reports name this side: a folder, or `REV:path`
    version: str
    env_prefix: str | None
    leaves: Mapping[str, LeafView]
    attributes: Mapping[str, AttributeView]
    roles: Mapping[str, RoleView]
    presets: Mapping[str, PresetView]
    rules: Mapping[str, RuleView]  # by id, in resolution order
    namespace_files: Mapping[str, Where]  # namespace -> its `namespace:` line
    files: tuple[str, ...]
    contracts: Mapping[str, ContractView] = attrs.field(factory=dict)
    abbreviations: str = "off"  # settings.yaml `cli: {abbreviations: legacy}`: prefixes of flags expand
    settings_lines: Mapping[str, int] = attrs.field(factory=dict, eq=False)  # settings.yaml key -> line
    role_leaf: str | None = None  # contracts.yaml `role_leaf`: the leaf that names a server's fleet role

    def version_reached(self, release: str | None) -> bool:
        """Whether this schema's version is at or past `release`."""
        return release is not None and version_key(self.version) >= version_key(release)

    def spelling_index(self) -> dict[str, tuple[str, str]]:
        """Every spelling an operator may write -> (leaf, kind), kind one of `key`, `flag`,
        `env`, `old-key`, `old-flag`, `old-env`."""
        index: dict[str, tuple[str, str]] = {}
        for leaf in self.leaves.values():
            index[leaf.name] = (leaf.name, "key")
            for flag in leaf.flags:
                index[flag] = (leaf.name, "flag")
            if leaf.env:
                index[leaf.env] = (leaf.name, "env")
            for old in leaf.old:
                index.setdefault(old.name, (leaf.name, "old-key"))
                index.setdefault(old.flag, (leaf.name, "old-flag"))
                if old.env:
                    index.setdefault(old.env, (leaf.name, "old-env"))
        return index


def _display_to_path(display: str, shown_root: str) -> str:
    """codegen names files `<folder name>/<relative path>`; reports name them from where
    the user is (`shown_root`, the folder as given, or `REV:path` of a revision)."""
    _, _, rest = display.partition("/")
    return f"{shown_root.rstrip('/')}/{rest}" if rest else shown_root


def _leaf(leaf: Any, where: Where, lines: Mapping[str, int]) -> LeafView:
    """One of codegen's leaves as a view. `leaf` is read by the fields its record and the
    run time's LeafSpec share; the flags are on a `cli` part or on the leaf itself (codegen's
    leaf record is being unified with LeafSpec, and this is the one place that knows)."""
    cli = getattr(leaf, "cli", None)
    flags: tuple[str, ...] = tuple(cli.flags if cli is not None else getattr(leaf, "flags", ()))
    part = cli if cli is not None else leaf
    bare = bool(getattr(part, "has_const", False)) or getattr(part, "nargs", None) == "*"
    bool_leaf = leaf.type.base == "bool"
    return LeafView(
        name=leaf.name,
        namespace=leaf.namespace,
        type=leaf.type,
        required=leaf.required,
        default=plain(leaf.default),
        help=leaf.help,
        flags=spellings(flags, bool_leaf),
        env=leaf.env,
        choices=leaf.choices,
        minimum=leaf.minimum,
        maximum=leaf.maximum,
        policy=leaf.policy.value,
        hashed=leaf.hash,
        capacity=leaf.capacity,
        metric=leaf.metric,
        has_fallback=leaf.has_fallback,
        fallback=plain(leaf.fallback),
        structure=plain(leaf.structure),
        secret=leaf.secret,
        old=tuple(_old(r) for r in leaf.renamed_from),
        deprecated=leaf.deprecated,
        where=where,
        lines=dict(lines),
        negatable=bool_leaf,
        bare=bare,
        owner=leaf.owner,
        writers=tuple(leaf.writers),
        declared_flags=flags,
        has_const=bool(getattr(part, "has_const", False)),
        const=plain(getattr(part, "const", None)),
        nargs=getattr(part, "nargs", None),
    )


def plain(value: Any) -> Any:
    """A default as the YAML wrote it (lists, not tuples), whichever way codegen keeps it."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def _old(r: Renamed) -> OldSpelling:
    return OldSpelling(r.name, flag_of(r.name, r.flag), r.env, r.since, r.remove_in)


# -- where things are written: the files' own line marks ------------------------------
def _entries(node: yaml.Node | None) -> dict[str, tuple[int, yaml.Node]]:
    """A YAML mapping node's keys -> (line, value node)."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): (int(k.start_mark.line) + 1, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _composed(path: Path) -> yaml.Node | None:
    """A file codegen has already read and checked, composed again for its line marks
    (libyaml's composer: no values built, no meta-schema run)."""
    try:
        loader = StrictLoader(read_text_limited(path))
    except (OSError, YamlError, yaml.YAMLError):
        return None
    try:
        return loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _leaf_places(path: Path) -> dict[str, tuple[int, dict[str, int]]]:
    """leaf -> (line of its name, property -> line; `cli.<key>` for the keys under `cli:`)."""
    out = {}
    leaves = _entries(_composed(path)).get("leaves")
    for name, (line, spec) in _entries(leaves[1] if leaves else None).items():
        props = _entries(spec)
        lines = {prop: at for prop, (at, _) in props.items()}
        if "cli" in props:
            lines.update({f"cli.{k}": at for k, (at, _) in _entries(props["cli"][1]).items()})
        out[name] = (line, lines)
    return out


def _role_lines(folder: Path) -> dict[str, int]:
    """Each role's line in roles.yaml (codegen's model keeps no place for a role)."""
    roles = _entries(_composed(folder / "roles.yaml")).get("roles")
    return {name: line for name, (line, _) in _entries(roles[1] if roles else None).items()}


def _contract_places(folder: Path) -> dict[str, tuple[int, dict[str, int]]]:
    """contract -> (line of its name, property -> line) in contracts.yaml."""
    contracts = _entries(_composed(folder / "contracts.yaml")).get("contracts")
    return {name: (line, {prop: at for prop, (at, _) in _entries(spec).items()})
            for name, (line, spec) in _entries(contracts[1] if contracts else None).items()}


def _load(folder: Path, shown: str) -> SchemaView:
    """Load and check the folder with codegen (imported here: a cached view needs none of it)."""
    from configbags.codegen.model import load_schema

    return view_of_schema(load_schema(folder), folder, shown)


def view_of_schema(schema: Schema, folder: Path, shown_root: str) -> SchemaView:
    role_lines = _role_lines(folder)
    root = shown_root.rstrip("/")
    roles_file = f"{root}/roles.yaml"
    leaves = {}
    for ns in schema.namespaces:
        file = f"{root}/namespaces/{ns.path}.yaml"
        places = _leaf_places(folder / "namespaces" / f"{ns.path}.yaml")
        for leaf in ns.leaves:
            line, lines = places.get(leaf.name, (ns.where.line, {}))
            leaves[leaf.name] = _leaf(leaf, Where(file, line), lines)
    attributes = {
        d.name: AttributeView(d.name, d.namespace, d.type, Where(_display_to_path(d.where.file, shown_root), d.where.line),
                              d.fn, tuple(d.inputs), d.pinned, d.hash)
        for d in schema.derived
    }
    attributes.update({
        r.name: AttributeView(r.name, ns.path, TypeSpec.parse("int"),
                              Where(_display_to_path(r.where.file, shown_root), r.where.line), hash=False, rank=True)
        for ns in schema.namespaces for r in ns.ranks
    })
    rules = {
        r.id: RuleView(r.id, r.leaf, r.layer, tuple((c.subject, c.op, plain(c.operand)) for c in r.when), r.has_value,
                       plain(r.value), r.fn, tuple(r.inputs), r.force,
                       Where(_display_to_path(r.where.file, shown_root), r.where.line))
        for r in schema.rules
    }
    roles = {
        r.name: RoleView(r.name, ("*",) if r.reads_all else r.reads, Where(roles_file, role_lines.get(r.name, 1)),
                         r.write_any)
        for r in schema.roles
    }
    presets = {p.name: PresetView(p.name, p.values, Where(_display_to_path(p.where.file, shown_root), p.where.line))
               for p in schema.presets}
    contract_places = _contract_places(folder)
    contracts = {}
    for c in schema.fleet.contracts:
        line, lines = contract_places.get(c.name, (c.where.line, {}))
        contracts[c.name] = ContractView(c.name, tuple(c.roles), tuple(c.members), Where(f"{root}/contracts.yaml", line),
                                         lines)
    return SchemaView(
        label=shown_root,
        version=schema.settings.version,
        env_prefix=schema.settings.env_prefix,
        leaves=leaves,
        attributes=attributes,
        roles=roles,
        presets=presets,
        rules=rules,
        namespace_files={ns.path: Where(_display_to_path(ns.where.file, shown_root), ns.where.line)
                         for ns in schema.namespaces},
        files=tuple(_display_to_path(s, shown_root) for s in schema.sources),
        contracts=contracts,
        abbreviations=schema.settings.abbreviations,
        role_leaf=schema.fleet.role_leaf,
        settings_lines={key: line for key, (line, _) in _entries(_composed(folder / "settings.yaml")).items()},
    )


# -- the cache ---------------------------------------------------------------------------
def folder_digest(folder: Path) -> str:
    """The digest of every file a schema is read from (and the view format)."""
    h = hashlib.sha256(f"evolve-view {VIEW_FORMAT}\n".encode())
    for path in sorted(folder.rglob("*.yaml")):
        rel = path.relative_to(folder).as_posix()
        data = path.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


# Every value of a view as JSON, each class and container tagged (`{"$LeafView": {...}}`,
# `{"$tuple": [...]}`, `{"$map": [[key, value], ...]}`), so reading it back is exact.
_CLASSES: dict[str, type[Any]] = {cls.__name__: cls for cls in (
    SchemaView, LeafView, AttributeView, RuleView, RoleView, PresetView, ContractView, Where, OldSpelling, Deprecation)}


def _encode(value: Any) -> Any:
    if isinstance(value, TypeSpec):
        return {"$type": str(value)}
    if type(value).__name__ in _CLASSES:
        return {f"${type(value).__name__}": {f.name: _encode(getattr(value, f.name)) for f in attrs.fields(type(value))}}
    if isinstance(value, Mapping):
        return {"$map": [[k, _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    [(tag, body)] = value.items()
    if tag == "$type":
        return TypeSpec.parse(body)
    if tag == "$map":
        return {k: _decode(v) for k, v in body}
    if tag == "$tuple":
        return tuple(_decode(v) for v in body)
    return _CLASSES[tag[1:]](**{k: _decode(v) for k, v in body.items()})


def _cache_dir(folder: Path) -> Path | None:
    pyproject = find_pyproject(folder.resolve().parent)
    return pyproject.parent / CACHE_DIR / "evolve-views" if pyproject is not None else None


@attrs.frozen
class _Slot:
    """Where one view's cache entry is (or would be): its folder and key."""

    where: Path
    key: str

    @classmethod
    def of(cls, folder: Path, shown: str, cache_dir: Path | None) -> _Slot | None:
        where = cache_dir or _cache_dir(folder)
        if where is None:
            return None
        return cls(where, hashlib.sha256(f"{folder_digest(folder)}\0{shown}".encode()).hexdigest())

    def read(self, shown: str) -> SchemaView | None:
        try:
            data = json.loads((self.where / f"{self.key}.json").read_text(encoding="utf-8"))
            view = _decode(data["view"]) if data.get("key") == self.key else None
            if isinstance(view, SchemaView) and view.label == shown:
                return view
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # no entry, or one in doubt: load the folder
        return None


def load_view(folder: Path, shown_root: str | None = None, *, cache: bool = True,
              cache_dir: Path | None = None) -> SchemaView:
    """The view of a schema folder, loaded and checked by codegen (SchemaInvalid when it
    does not load). `shown_root` is how paths in it are shown (default: the folder as given).
    With `cache`, a view of the same files under the same `shown_root` is read back from
    `cache_dir` (default: the project's cache folder above `folder`, none outside a project)."""
    shown = shown_root if shown_root is not None else folder.as_posix()
    return load_views([(folder, shown)], cache=cache, cache_dir=cache_dir)[0]


def _load_or_errors(folder: Path, shown: str) -> SchemaView | list[SchemaError]:
    """A worker's load: the view, or the schema's errors (SchemaInvalid does not pickle)."""
    try:
        return _load(folder, shown)
    except SchemaInvalid as exc:
        return [_shown_error(e, folder, shown) for e in exc.errors]


def _shown_error(error: SchemaError, folder: Path, shown: str) -> SchemaError:
    """An error as reports name its file: from `shown` (a revision's `REV:PATH`, not the
    temporary folder it was read from, which is gone when the command ends)."""
    prefix = str(folder).rstrip("/") + "/"
    if not error.file.startswith(prefix):
        return error
    return attrs.evolve(error, file=f"{shown.rstrip('/')}/{error.file[len(prefix):]}")


def load_views(sides: Sequence[tuple[Path, str]], *, cache: bool = True,
               cache_dir: Path | None = None) -> list[SchemaView]:
    """Several views (diff's two sides): cached ones read back, the others loaded at once
    in forked workers where the platform forks and there are cores to spare, since loading
    a schema (YAML and meta-schema validation) is most of a diff's time."""
    slots = [_Slot.of(folder, shown, cache_dir) if cache else None for folder, shown in sides]
    found: list[SchemaView | None] = [slot.read(shown) if slot else None
                                      for slot, (_, shown) in zip(slots, sides, strict=True)]
    todo = [i for i, view in enumerate(found) if view is None]
    if todo:
        import configbags.codegen.model  # noqa: F401 - imported once here, so forked workers inherit it
    if len(todo) > 1 and "fork" in multiprocessing.get_all_start_methods() and (os.cpu_count() or 1) > 1:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(len(todo), mp_context=context) as pool:
            results = list(pool.map(_load_or_errors, *zip(*(sides[i] for i in todo), strict=True)))
    else:
        results = [_load_or_errors(*sides[i]) for i in todo]
    for i, result in zip(todo, results, strict=True):
        if isinstance(result, list):
            raise SchemaInvalid(result)
        found[i] = result
        if (slot := slots[i]) is not None:
            _store(slot.where, slot.key, result)
    return [view for view in found if view is not None]


def _store(where: Path, key: str, view: SchemaView) -> None:
    """Write one entry atomically, keeping the newest CACHE_ENTRIES (every edit of a
    working schema makes a new one)."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"key": key, "view": _encode(view)}, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(payload)
        os.replace(tmp, where / f"{key}.json")
        entries = sorted(where.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[CACHE_ENTRIES:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written only costs time
