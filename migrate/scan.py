"""Find every read of the raw `ServerArgs` record in a source tree.

A read is reported as (file, enclosing function qualname, leaf, line). The record is
reached through any of these spellings, and the scanner follows all of them:

- the raw accessor, bare or module-qualified: `get_server_args().x`, `acc.get_server_args().x`;
- `getattr(get_server_args(), "x")` (a non-literal name is a *dynamic* read, leaf `*`),
  `hasattr`, `operator.attrgetter("x", "y.z")(rec)`, under any alias (`ga = getattr`,
  `builtins.getattr`, `from operator import attrgetter as ag`, a getter stored at module
  level): the door analysis resolves the fetchers through the scope model, and a fetch
  with a literal name is the attribute it names (`getattr(self, "server_args").x`), and
  so is one whose name the function binds only to literals (`for n in ("a", "b")`);
- aliases: local, copied (`b = a`), module-level, and `self.`/class attributes, including
  those bound inside if/try/with, unless lexically shadowed in the reading scope; tuple
  unpacking (starred targets too), `for x in (rec, ...)` loops and comprehensions, and
  `with nullcontext(rec) as x` (or any `with f(rec) as x`, reported with origin "wrapped");
- parameters annotated as the record (`server_args: ServerArgs`, `Optional[...]`, strings),
  and unannotated parameters named like a record attribute (`def f(server_args)`);
- record attributes on any object: `self.server_args.x`, `runner.server_args.x`;
- functions and properties that return the record;
- copies (`copy.copy(rec)`, `deepcopy`: the record's values, though a write changes only
  the copy) and records built from it (`dataclasses.replace(rec, ...)`, `attrs.evolve`);
- records the launcher builds from values the code does not spell (`ServerArgs.from_cli(argv)`,
  `ServerArgs(**vars(ns))`), and the Namespace a parser `ServerArgs.add_cli_args(p)` filled
  parses (`p.parse_args(argv)`, `ns, _ = p.parse_known_args()`): origin "built"; the
  filled parser is followed through functions filling their parameter (`make_arg_parser(p)`,
  of any scanned module), giving one (`return parser`), `self.parser` in every method, and
  parse helpers (`def parse(p, argv): return p.parse_args(argv)`);
- `match` class patterns: `case
  ServerArgs(x=v)` on any subject, `case object(x=v)` on the record, `case rec2:` binding
  it (positional sub-patterns read fields unknown here: leaf `*`), and a keyword
  sub-pattern named like a record attribute (`case object(server_args=a)`) binding it;
- objects holding the record in an attribute (the process view `cfg`, a class holding
  `self.server_args`: configbags.migrate.holders), read through their namespace
  (`vars(self)`, `pickle.dumps(w)`) or by a name built at run time (`getattr(cfg, name)`):
  an escape, leaf `*`;
- the record class read by name: `ServerArgs.x`, `getattr(ServerArgs, "x")` (a class
  default), `getattr(ServerArgs, k)` (leaf `*`);
- dict copies of the record by key, by method and whole (`dict(d)`, `return d`, `f(d)`,
  `f"{d}"`: leaf `*`), also when a function imports the dict into its own scope.

A file is read as Python compiles it (source_text): line endings translated in the raw
bytes, then decoded by BOM or coding declaration, identifiers NFKC-normalised for the
search (search_text); positions are the parser's. A file Python would refuse is a problem.

Each read also says which record it reaches (`origin`, see ORIGINS), which is what
`ratchet fix` needs to know to rewrite it without changing its meaning.

Files with a "Code generated ... DO NOT EDIT." header are skipped only inside a generated
package (configbags.migrate.generated); elsewhere the header hides nothing. Special files
and unreadable ones are reported, never opened (configbags.migrate.files).

Reads that go around the accessors without touching the record are reported as reads too
(configbags.migrate.doors): raw environment reads of declared variables (leaf `$NAME`; a
name the module does not show, or the environment used whole, is `$?`) and operator
readbacks (`Context.state`, `dist.state_dict`, also fetched by name or through a module
importlib returns).

Reads no analysis can resolve (reflection, private parts of the record's module, the
accessors or the runtime, the environment in bytes or by another route, the record carried
by a lambda, a default or a container literal) are reported by configbags.migrate.reflection,
mostly as `$?`, which fails the check unless an allowlist entry explains it.

Writes (`rec.x = ...`, `setattr(rec, ...)`, `del rec.x`) and renaming the raw accessor
(`from ... import get_server_args as gsa`, `gsa = get_server_args`) are reported apart:
the check fails on them whatever the allowlist says.

Values that cross functions and modules (the record returned by another module's
function, held by its module-level name, passed to a parameter or a helper) are followed
by the project pass, configbags.migrate.flows, over facts each file's analysis yields;
where the record escapes any analysis (a callable no scanned module defines, an attribute
not named like the record, a container, `yield`) it is a read of `*` (via "escape").

The jobs live apart: the alias analysis in configbags.migrate.aliases and the door
analysis in configbags.migrate.doors (over one Python scope model, configbags.migrate.scopes), file listing and
safe reading in configbags.migrate.files, the cache in configbags.migrate.scancache,
generated-package detection in configbags.migrate.generated. This module ties them
together and re-exports the records of configbags.migrate.scanmodel.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import io
import os
import tokenize
import unicodedata
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from configbags.migrate.aliases import analyse
from configbags.migrate.childfiles import judge_children, judge_scripts
from configbags.migrate.doors import DoorScan
from configbags.migrate.envsources import (
    ENV_TABLE,
    env_tables,
    library_reads,
    object_reads,
    settings_reads,
)
from configbags.migrate.files import (
    NotReadable,
    declared_groups,
    list_files,
    list_tree,
    python_view,
    read_source,
)
from configbags.migrate.flows import (
    base_facts,
    home_modules,
    prefixed_import_reads,
    project_pass,
    scanned_homes,
    use_facts,
)
from configbags.migrate.generated import GENERATED_HEADER, GeneratedPackages
from configbags.migrate.moduleattrs import served_reads
from configbags.migrate.recordkinds import unmodelled_base
from configbags.migrate.reflection import ReflectionScan
from configbags.migrate.resolvers import desugar
from configbags.migrate.scancache import ScanCache, content_digest, default_cache_path
from configbags.migrate.scanmodel import (
    ENTRY_GROUPS,
    ORIGINS,
    PREFIXED_IMPORT,
    FileScan,
    FlowFacts,
    FlowInput,
    Problem,
    Read,
    ScanResult,
    ScanSettings,
    Violation,
    join_origin,
)
from configbags.migrate.searchtext import SearchText
from configbags.runtime.gcpause import gc_paused

__all__ = [
    "ORIGINS",
    "FileScan",
    "Problem",
    "Read",
    "ScanResult",
    "ScanSettings",
    "Violation",
    "default_cache_path",
    "join_origin",
    "list_files",
    "scan_source",
    "scan_tree",
]


def source_text(data: bytes) -> str:
    """The text Python's parser reads from `data`, as an import compiles it: line endings
    translated in the raw bytes first (CRLF and a lone CR end a line, as in Python's
    tokenizer; a form feed or a vertical tab does not), then decoded as `tokenize` decodes
    (a BOM, a `# coding:` declaration in the first two lines, else UTF-8). A CR that only
    decoding produces (`\\r` under `unicode_escape`) ends no line, for Python as here. So
    the text's `\n` are the parser's line breaks, and the lines the analysis counts are the
    parser's own. Raises SyntaxError (a bad or conflicting declaration), LookupError or
    UnicodeDecodeError."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def _undecodable(exc: Exception) -> str:
    """Why Python would refuse to decode the file, as a scan problem."""
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    if isinstance(exc, SyntaxError) and message.startswith("invalid or missing encoding"):
        return "not UTF-8 (and no coding declaration); not scanned"
    if isinstance(exc, UnicodeDecodeError):
        return f"does not decode as its declared encoding {exc.encoding} ({exc.reason} at byte {exc.start}); not scanned"
    return f"cannot be decoded as Python would ({message}); not scanned"


def search_text(text: str) -> str:
    """The text that name mentions are searched in. Python reads identifiers NFKC-normalised
    (`ｇet_server_args` is `get_server_args`); NFKC never adds or removes a `\n`, so the
    lines stay the parser's."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def scan_source(
    data: bytes, settings: ScanSettings, flows: FlowInput | None = None, base: FileScan | None = None
) -> FileScan:
    """Analyse one file's bytes, told by `flows` what its imports are and which of its
    parameters receive the record (configbags.migrate.flows). `base`, the result of the
    same bytes with no input, spares the analysis where the input only names environment
    helpers: their calls are all it adds. Never raises on bad input: it reports a
    problem instead."""
    if len(data) > settings.max_bytes:
        return FileScan(problem=f"too large to scan ({len(data)} bytes > {settings.max_bytes})")
    # The header is only noted here; whether it lets the file be skipped depends on the
    # folder it lives in (scan_tree), which this cached, path-free result cannot know.
    generated = GENERATED_HEADER.match(data) is not None
    try:
        text = source_text(data)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        return FileScan(problem=_undecodable(exc))
    try:
        # The engine's own compile warnings (`"\d"`, `1if x`) are its business: a scan of a
        # whole tree would print them on every cold check, and under `-W error` they would
        # turn a readable file into a "syntax error".
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(data)  # the bytes, as an import compiles them
    except SyntaxError as exc:
        return FileScan(problem=f"syntax error at line {exc.lineno}: {exc.msg}; not scanned")
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileScan(problem=f"cannot parse ({type(exc).__name__}: {exc}); not scanned")

    # a resolver of a spelled dotted name (`pkgutil.resolve_name("a.b:c")`) is the import
    # route it stands for, for every analysis below (configbags.migrate.resolvers)
    searched = SearchText(desugar(tree, search_text(text), flows.constants if flows else (), settings))  # every analysis's word tests, indexed
    if base is not None and base.problem is None and flows is not None and _helpers_only(flows):
        try:
            helped = _with_helpers(base, tree, searched, settings, flows)
        except RecursionError:
            return FileScan(problem="nested too deeply to analyse (RecursionError); not scanned")
        if helped is not None:
            return helped
    try:
        # one door analysis serves both: its reads, and the fetching calls (`getattr(x,
        # "a")` under any alias) that the record analysis reads as attributes
        door_scan = DoorScan(tree, searched, settings, flows.constants if flows else ())
        analysed = analyse(tree, searched, settings, door_scan.fetched, flows)
        reads = analysed.reads
        # settings classes and objects, and getter tables (configbags.migrate.envsources);
        # the settings classes and objects other modules may use travel among its constants
        told = flows.constants if flows else ()
        settings_found, settings_rows = settings_reads(tree, searched, door_scan.declared, door_scan.strings, told)
        objects_found, object_rows = object_reads(tree, searched, door_scan.declared, door_scan.strings, told)
        doors = [
            *door_scan.reads(), *settings_found, *objects_found,
            *library_reads(tree, searched, door_scan.declared, door_scan.strings),
        ]
        facts = base_facts(tree, searched, settings, door_scan.command_params(), door_scan.strings, door_scan.mentioned)
        if settings_rows or object_rows:
            facts = attrs.evolve(facts, constants=(*facts.constants, *settings_rows, *object_rows))
        tables = env_tables(tree, doors, facts.env_params)
        if tables:
            facts = attrs.evolve(facts, constants=(*facts.constants, *tables))
        used, returned, handed, decorated = (
            use_facts(tree, searched, settings, flows or FlowInput(), door_scan.strings, tables)
            if flows or tables else ([], [], [], [])
        )
        if handed:  # its own functions that hand a parameter on to an env helper are helpers too
            facts = attrs.evolve(facts, env_params=tuple(sorted({*facts.env_params, *handed})))
        # a table whose getters a factory makes reads what the factory's calls read, which
        # are known only with the helpers: the table as they make it, and its own uses
        made = env_tables(tree, [*doors, *used], facts.env_params) if used or handed else tables
        if made != tables:
            tables = made
            facts = attrs.evolve(facts, constants=(*(c for c in facts.constants if c[1] != ENV_TABLE), *tables))
            used, returned, handed, decorated = use_facts(
                tree, searched, settings, flows or FlowInput(), door_scan.strings, tables,
            )
            facts = attrs.evolve(facts, env_params=tuple(sorted({*facts.env_params, *handed})))
        doors = [*doors, *used, *served_reads(tree, flows.served_imports if flows else ())]
        # what the other analyses already report on a line is not reported twice
        known = {(row[1], row[2]) for row in (*reads, *doors)}
        reflection = ReflectionScan(tree, searched, settings)
        reflected = [row for row in reflection.reads() if (row[1], row[2]) not in known]
    except RecursionError:
        # ast.parse accepts expressions nested deeper (a long attribute chain) than the
        # recursive walks here can follow; unread, the file must not pass unseen
        return FileScan(problem="nested too deeply to analyse (RecursionError); not scanned")
    fetchers = {
        *facts.fetchers, *returned, *((name, "record") for name in analysed.fetchers),
        *((name, "stored_holder") for name in analysed.stored), *analysed.holder_functions, *analysed.dict_names,
        *analysed.parsers,
    }
    flow = attrs.evolve(
        facts, fetchers=tuple(sorted(fetchers)), holders=tuple(analysed.holders), passes=(*analysed.passes, *decorated),
        children=tuple(door_scan.children()),
    )
    # A header labels a file, never hides a read: one that reads or writes is scanned like
    # any other (configbags.migrate.generated)
    found = (*reads, *doors, *reflected)
    # (a write through a carrier the flow analysis does not follow: `[rec][0].port += 1`)
    written = {(row[0], row[1], row[3]) for row in analysed.violations}
    violations = (*analysed.violations, *(row for row in reflection.writes if (row[0], row[1], row[3]) not in written))
    generated = generated and not found and not violations and _only_generated_flows(flow, settings)
    return FileScan(reads=found, violations=violations, generated=generated, flow=flow)


def _helpers_only(flows: FlowInput) -> bool:
    """Does the input name environment helpers and nothing else?"""
    return bool(flows.env_helpers) and attrs.evolve(flows, env_helpers=frozenset()) == FlowInput()


def _with_helpers(
    base: FileScan, tree: ast.Module, searched: str, settings: ScanSettings, flows: FlowInput,
) -> FileScan | None:
    """`base` with the reads at the module's calls of environment helpers (and the
    parameters it hands on to one): all that input adds, unless those reads make a getter
    table's entries (None: the whole analysis is needed)."""
    used, _, handed, _ = use_facts(tree, searched, settings, flows)
    if env_tables(tree, used, (*base.flow.env_params, *handed)):
        return None  # what the helpers read makes a getter table: the whole analysis
    flow = base.flow
    if handed:
        flow = attrs.evolve(flow, env_params=tuple(sorted({*flow.env_params, *handed})))
    return attrs.evolve(base, reads=(*base.reads, *used), flow=flow, generated=base.generated and not used and not handed)


def _only_generated_flows(flow: FlowFacts, settings: ScanSettings) -> bool:
    """Does the file hand its importers nothing but what configbags generates? The raw
    accessor and the context getters by their own names (read as such wherever they are
    imported), record attributes, and the record handed on by its own class's methods or
    to the process context (`_context.publish(server_args)`). A file that offers more (a
    helper returning the record, a module-level holder) is scanned whatever its header
    says: skipped, its facts would never reach the project pass."""
    allowed = {(settings.raw_accessor, "record"), ("get_context", "context"), ("process_context", "context")}
    return (
        # (a class holding the record in a record attribute, the process view, is gen's too)
        all(tuple(fetcher) in allowed or fetcher[1] in ("holder_class", "repr_holder", "eq_holder") for fetcher in flow.fetchers)
        and all(holder.rpartition(".")[2] in settings.record_attributes for holder in flow.holders)
        and all(
            caller.startswith(settings.record_class + ".") or callee.startswith("name:_context.")
            for caller, callee, *_ in flow.passes
        )
    )


# Below this many files to parse, worker processes cost more than they save.
PARALLEL_MIN_FILES = 64


Progress = Callable[[int, int], None]  # (files parsed so far, files to parse)

# The cyclic garbage collector, left on, costs a cold scan about a fifth of its time: each
# file's syntax tree and scopes are hundreds of thousands of objects, which refcounting
# frees (they hold almost no cycles), but whose creation triggers collection after
# collection. So the parsing runs with it off and collects the youngest objects (the few
# cycles a file leaves) once every this many files.
_COLLECT_EVERY = 256
_scanned_since_collect = 0


def _scan_one(data: bytes, settings: ScanSettings) -> FileScan:
    global _scanned_since_collect
    result = scan_source(data, settings)
    _scanned_since_collect += 1
    if _scanned_since_collect >= _COLLECT_EVERY:
        _scanned_since_collect = 0
        gc.collect(0)
    return result


def _scan_many(sources: list[bytes], settings: ScanSettings, jobs: int, progress: Progress | None) -> list[FileScan]:
    """scan_source over `sources`, in `jobs` worker processes when there are enough."""
    results: list[FileScan] = []
    total = len(sources)
    if jobs <= 1 or total < PARALLEL_MIN_FILES:
        with gc_paused():
            for data in sources:
                results.append(_scan_one(data, settings))
                if progress is not None:
                    progress(len(results), total)
        return results
    # imported here only: a warm check, which parses nothing, never pays for it
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(64, total // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, initializer=gc.disable) as pool:
        for result in pool.map(_scan_one, sources, [settings] * total, chunksize=chunk):
            results.append(result)
            if progress is not None:
                progress(len(results), total)
    return results


# The most worker processes `--jobs` may ask: each is a process of this machine, and more
# than its CPUs only adds start-up time (a larger number is a typo, not a plan)
MAX_JOBS = 64


def default_jobs() -> int:
    """Worker processes for a cold scan: the CPUs this process may use, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _collect(
    results: dict[str, FileScan],
    call_sites: dict[str, list[tuple[Any, ...]]],
    reads: list[Read],
    violations: list[Violation],
    problems: list[Problem],
) -> int:
    """Add each file's final rows (its own and those the project pass found at its call
    sites) to the lists; returns how many files were analysed."""
    parsed = 0
    for rel, result in results.items():
        if result.problem is not None:
            problems.append(Problem(rel, result.problem))
            continue
        parsed += 1
        reads.extend(Read(rel, *row) for row in result.reads)
        reads.extend(Read(rel, *row) for row in call_sites.get(rel, ()))
        violations.extend(Violation(rel, *row) for row in result.violations)
    return parsed


def _home_sources(project: Path, results: dict[str, FileScan], settings: ScanSettings) -> dict[str, tuple[str, bytes]]:
    """The source of each record home module the files import that is not scanned
    (excluded: `legacy/server_args.py`), where it lies in the project under its module's
    path, with that path, and of each scanned one defining the raw accessor: its second
    getters and the names it only imports matter to its importers
    (configbags.migrate.flows.HomeFacts)."""
    found: dict[str, tuple[str, bytes]] = {}
    for module in sorted(home_modules(list(results), results, settings)):
        parts = module.split(".")
        # (a package before a module of its name, as Python imports it)
        for rel in ("/".join([*parts, "__init__.py"]), "/".join(parts) + ".py"):
            try:
                found[module] = (rel, read_source(str(project / rel), settings.max_bytes))
                break
            except (NotReadable, OSError):
                continue
    for module, rel in scanned_homes(list(results), results, settings).items():
        try:
            found.setdefault(module, (rel, read_source(str(project / rel), settings.max_bytes)))
        except (NotReadable, OSError):
            continue
    return found


def _unmodelled_records(project: Path, results: dict[str, FileScan], settings: ScanSettings) -> list[Problem]:
    """A home whose record class derives from a base whose inherited protocol the scanner
    does not model (`class ServerArgs(dict)`): said so, as the reads through it would go
    unseen (configbags.migrate.recordkinds)."""
    found: list[Problem] = []
    for rel, source in _home_sources(project, results, settings).values():
        if settings.record_class.encode() not in source:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        base = unmodelled_base(tree, settings.record_class)
        if base is not None:
            found.append(Problem(rel, (
                f"the record class {settings.record_class} derives from {base}, whose inherited methods (item "
                f"access, iteration, its own copies and dumps) the scanner does not model, so reads through them "
                f"would go unseen; make it a dataclass, an attrs class, a NamedTuple or a pydantic model"
            )))
    return found


def _pinned_excludes(project: Path, settings: ScanSettings) -> dict[str, str]:
    """Excluded module files (the record's home, as a rule) by path -> digest: a warm
    project pass is reused only while they are unchanged."""
    found: dict[str, str] = {}
    for pattern in settings.excludes:
        if pattern.endswith(".py") and not any(c in pattern for c in "*?["):
            try:
                found[pattern] = content_digest(read_source(str(project / pattern), settings.max_bytes))
            except (NotReadable, OSError):
                continue
    return found


def _project_pass(
    results: dict[str, FileScan],
    where: dict[str, tuple[str, str, bytes]],
    settings: ScanSettings,
    cache: ScanCache | None,
    project: Path | None = None,
) -> tuple[dict[str, list[tuple[Any, ...]]], str | None]:
    """The project pass over `results` (configbags.migrate.flows), which it updates to the
    final results; returns the reads at call sites, by file, and a problem if any. Its
    outcome depends only on the files and their bytes (and the record's home module's,
    read for what it offers importers): when the cache holds the outcome for exactly these,
    it is reused (a warm check decodes no fact); a home module that no exclude names keeps
    the outcome from being cached."""
    key = ""
    pinned = _pinned_excludes(project, settings) if project is not None else {}
    if cache is not None and all(digest for _, digest, _ in where.values()):
        listing = "\n".join(
            [f"{rel}\0{where[rel][1]}" for rel in sorted(results)]
            + [f"exclude:{rel}\0{digest}" for rel, digest in sorted(pinned.items())]
        )
        key = hashlib.blake2b(listing.encode(), digest_size=16).hexdigest()
        outcome = cache.project_outcome(key)
        if outcome is not None:
            inputs, sites, problem = outcome
            final = {rel: cache.get(f"{where[rel][1]}:{found}") for rel, found in inputs.items() if rel in where}
            if len(final) == len(inputs) and all(found is not None for found in final.values()):
                results.update({rel: found for rel, found in final.items() if found is not None})
                return sites, problem
    if cache is not None:
        for rel, result in results.items():
            results[rel] = cache.with_flow(where[rel][1], result)
    homes = _home_sources(project, results, settings) if project is not None else {}
    if any(rel not in pinned for rel, _ in homes.values()):
        key = ""  # (its bytes are in no key: the outcome is not kept)
    sources = {module: source for module, (_, source) in homes.items()}
    done = project_pass(list(results), results, settings, _Rescan(settings, cache, where, dict(results)), sources)
    if cache is not None and key:
        cache.keep_project(key, {rel: found.key() for rel, found in done.inputs.items()}, done.sites, done.problem)
    return done.sites, done.problem


def _entry_point_loads(project: Path, settings: ScanSettings, reads: list[Read], listed: Sequence[str]) -> list[Read]:
    """The reads with each plugin loader's `ep.load()` of literal groups (via ENTRY_GROUPS
    + groups, from configbags.migrate.reflection) put to the tree's entry points
    (configbags.migrate.files.declared_groups): where the tree declares every one of its
    groups, an import of each module their entries name, judged as an import on a literal
    prefix is (via PREFIXED_IMPORT + `=module` for each, `|`-joined: _prefixed_imports), so it
    reads nothing only where none of them may bind a door; else the `$?` it is (via
    "reflection"). Read from disk as the files are now: rare, so never cached."""
    if not any(read.via.startswith(ENTRY_GROUPS) for read in reads):
        return reads
    declared = declared_groups(project, listed, settings)
    found: list[Read] = []
    for read in reads:
        if not read.via.startswith(ENTRY_GROUPS):
            found.append(read)
            continue
        groups = read.via.removeprefix(ENTRY_GROUPS).split(",")
        if not all(group in declared for group in groups):
            found.append(read._replace(via="reflection"))
            continue
        modules = sorted({module for group in groups for module in declared[group]})
        if modules:
            found.append(read._replace(via=PREFIXED_IMPORT + "|".join(f"={module}" for module in modules)))
    return found


def _prefixed_imports(
    project: Path, settings: ScanSettings, reads: list[Read], results: dict[str, FileScan],
    where: dict[str, tuple[str, str, bytes]], cache: ScanCache | None,
) -> list[Read]:
    """The reads with each import by a name on a literal package prefix judged against
    the tree's files (configbags.migrate.flows.prefixed_import_reads), read from disk as
    they are now: rare, so never cached."""
    if not any(read.via.startswith(PREFIXED_IMPORT) for read in reads):
        return reads
    if cache is not None:
        results = {rel: cache.with_flow(where[rel][1], result) for rel, result in results.items()}

    def files_under(folder: str) -> list[str]:
        found: list[str] = []
        for top, _, names in os.walk(project / folder):
            found += [os.path.relpath(os.path.join(top, name), project).replace(os.sep, "/") for name in names]
        return found

    def text_of(rel: str) -> str:
        try:
            return read_source(str(project / rel), settings.max_bytes).decode("utf-8", "replace")
        except (NotReadable, OSError):
            return "__path__"  # (unreadable: judged as the worst it may hold)

    return prefixed_import_reads(reads, results, settings, files_under, text_of)


def _children(
    project: Path,
    settings: ScanSettings,
    results: dict[str, FileScan],
    where: dict[str, tuple[str, str, bytes]],
    listed: Sequence[str],
    cache: ScanCache | None,
) -> tuple[dict[str, list[tuple[Any, ...]]], list[tuple[str, str]]]:
    """configbags.migrate.childfiles over the results; a cached result's flow facts are
    decoded only where they may name such a file."""
    if cache is not None:
        for rel, result in results.items():
            if cache.may_run_children(where[rel][1]):
                results[rel] = cache.with_flow(where[rel][1], result)
    if not any(result.flow.children for result in results.values()):
        return {}, []

    return judge_children(project, settings, results, where, listed, _fresh_scan(settings, cache))


def _fresh_scan(settings: ScanSettings, cache: ScanCache | None) -> Callable[[bytes, str], FileScan]:
    """Scans a file the listing does not hold (given its bytes and digest), through the cache."""

    def scan(data: bytes, digest: str) -> FileScan:
        found = cache.get(digest) if cache is not None else None
        if found is None:
            found = scan_source(data, settings)
            if cache is not None:
                cache.put(digest, found)
        elif cache is not None:
            found = cache.with_flow(digest, found)
        return found

    return scan


def _merged(sites: dict[str, list[tuple[Any, ...]]], more: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    if not more:
        return sites
    return {rel: [*sites.get(rel, ()), *more.get(rel, ())] for rel in {*sites, *more}}


class _Rescan:
    """Analyses a file again with its project input (configbags.migrate.flows): served
    from the cache under the bytes' digest and the input's key, else read and scanned."""

    def __init__(
        self, settings: ScanSettings, cache: ScanCache | None, where: dict[str, tuple[str, str, bytes]],
        base: Mapping[str, FileScan],
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.base = base  # file -> its result with no input
        # file -> (path, digest of the bytes scanned first, those bytes unless the
        # result came from the cache without reading the file)
        self.where = where

    def __call__(self, rel: str, flows: FlowInput) -> FileScan:
        path, digest, data = self.where[rel]
        key = f"{digest}:{flows.key()}"
        if self.cache is not None:
            found = self.cache.get(key)
            if found is not None:
                return self.cache.with_flow(key, found)
        if not data and self.cache is not None:  # served by its stat: never read
            try:
                data = python_view(rel, read_source(path, self.settings.max_bytes))
            except NotReadable as exc:
                return FileScan(problem=str(exc))
            if content_digest(data) != digest:
                # both results must be of the same bytes
                return FileScan(problem="changed while it was scanned; not scanned (scan again)")
        result = scan_source(data, self.settings, flows, self.base.get(rel))
        if self.cache is not None:
            self.cache.put(key, result)
        return result


def scan_tree(
    project: Path,
    settings: ScanSettings,
    *,
    cache_path: Path | None = None,
    files: Sequence[str] | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> ScanResult:
    """Scan the roots (or `files`, project-relative). With `cache_path`, files whose bytes
    were seen before are served from the cache and the cache is rewritten afterwards.
    `jobs` > 1 parses the files the cache does not hold in that many worker processes
    (the results are the same, in the same order). `progress` is told how many of the
    files to parse are done, after each one."""
    # loading a warm cache builds tens of thousands of rows: no collection is worth it
    with gc_paused():
        return _scan_tree(project, settings, cache_path, files, jobs, progress)


def _scan_tree(
    project: Path,
    settings: ScanSettings,
    cache_path: Path | None,
    files: Sequence[str] | None,
    jobs: int,
    progress: Progress | None,
) -> ScanResult:
    problems: list[Problem] = []
    skipped: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    if files is None:
        listing = list_tree(project, settings)
        listed = list(listing.files)
        problems.extend(Problem(*p) for p in listing.problems)
        skipped = listing.skipped
        unmatched = listing.unmatched_excludes
    else:
        listed = sorted(files)
    cache = ScanCache(cache_path, settings) if cache_path is not None else None
    reads: list[Read] = []
    violations: list[Violation] = []
    parsed = from_cache = 0
    generated_files: list[str] = []
    in_generated_package = GeneratedPackages()
    # Read everything first, so that what the cache lacks can be parsed in parallel.
    loaded: list[tuple[str, str, bytes, str, FileScan | None]] = []
    base = str(project)
    for rel in listed:
        path = os.path.join(base, rel)  # strings: pathlib costs more than the read itself here
        if cache is not None:
            # a file whose stat is unchanged is not even read (configbags.migrate.scancache)
            known = cache.unchanged(rel, path)
            cached = cache.get(known) if known is not None else None
            if known is not None and cached is not None:
                from_cache += 1
                loaded.append((rel, path, b"", known, cached))
                continue
        try:
            data = python_view(rel, read_source(path, settings.max_bytes))
        except NotReadable as exc:
            problems.append(Problem(rel, str(exc)))
            continue
        digest = content_digest(data) if cache is not None else ""
        cached = cache.get(digest) if cache is not None else None
        if cache is not None:
            cache.saw(rel, path, digest)
        if cached is not None:
            from_cache += 1
        loaded.append((rel, path, data, digest, cached))
    missing = [item for item in loaded if item[4] is None]
    fresh = iter(_scan_many([item[2] for item in missing], settings, jobs, progress))
    results: dict[str, FileScan] = {}
    where: dict[str, tuple[str, str, bytes]] = {}  # file -> (path, digest, bytes if read)
    for rel, path, data, digest, cached in loaded:
        result = cached
        if result is None:
            result = next(fresh)
            if cache is not None:
                cache.put(digest, result)
        if result.problem is not None:
            problems.append(Problem(rel, result.problem))
            continue
        if result.generated and in_generated_package(Path(path).parent):
            generated_files.append(rel)
            continue
        results[rel] = result
        where[rel] = (path, digest, data)

    # the files child processes run, judged where their place is known: a Python one joins
    # the tree (configbags.migrate.childfiles)
    # every script file under the roots, judged as its own file however it is started: a
    # Python one with no `.py` suffix joins the tree
    script_sites, script_problems = judge_scripts(project, settings, results, where, listed, _fresh_scan(settings, cache))
    problems.extend(Problem(*p) for p in script_problems)
    child_sites, child_problems = _children(project, settings, results, where, listed, cache)
    problems.extend(Problem(*p) for p in child_problems)
    call_sites, unsettled = _project_pass(results, where, settings, cache, project)
    problems.extend(_unmodelled_records(project, results, settings))
    call_sites = _merged(call_sites, child_sites)
    if unsettled is not None:
        problems.append(Problem(".", unsettled))
    parsed = _collect(results, call_sites, reads, violations, problems)
    # (a shell script is no module of the tree: its reads are its own file's rows)
    reads.extend(Read(rel, *row) for rel, rows in script_sites.items() if rel not in results for row in rows)
    reads[:] = _entry_point_loads(project, settings, reads, listed)
    reads[:] = _prefixed_imports(project, settings, reads, results, where, cache)
    if cache is not None:
        cache.save()
    return ScanResult(
        reads=tuple(reads),
        violations=tuple(violations),
        problems=tuple(problems),
        files=tuple(listed),
        files_parsed=parsed,
        files_generated=len(generated_files),
        files_from_cache=from_cache,
        generated_files=tuple(generated_files),
        skipped_folders=skipped,
        unmatched_excludes=unmatched,
    )
