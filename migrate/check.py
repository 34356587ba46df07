"""Hold the raw reads and writes found by the scanner to the allowlist and the write
baseline, exactly and in both directions.

Keyed by (file, function, leaf): a read without an entry fails and names the accessor to
use instead; an entry without a read fails until it is removed, so the allowlist only ever
shrinks (`configbags ratchet update` removes such entries). Raw environment reads of
declared variables (leaf `$NAME`) are held the same way. Operator readbacks in role code
(leaf `Context.state` or `dist.state_dict`) fail naming the role-scoped doors, and only an
entry with a reason of its own allows one (genuine operator code, an admin endpoint):
`ratchet init` never baselines them.

Writes work the same way against `writes:`, except inside the resolution phase
(`scan.resolution`: the legacy resolution, run as a hook before publish), where they are
allowed. Renamed raw accessors fail whatever the lists say, and so does a scan that read
too few files or could not read one: a ratchet that sees nothing passes everything.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from configbags.migrate.scanmodel import (
    CONTEXT_READBACK_METHODS,
    ENV_MARK,
    ENV_UNRESOLVED,
    READBACKS,
    STATE_DICT_READBACK,
    STATE_READBACK,
    WRITE_KINDS,
    Entry,
    Read,
    ScanResult,
    Violation,
    join_origin,
)

REASON_PLACEHOLDER = "<why this read stays raw>"
WRITE_PLACEHOLDER = "<why this write stays>"
READBACK_PLACEHOLDER = "<why this is operator code, not role code>"
# Reasons the tools write themselves: `ratchet init`'s baseline, and `ratchet fix`'s
# refusals (prefixed). Neither says why a readback is operator code.
BASELINE = "baseline"
FIX_REFUSED = "fix refused: "

# How each spelling reached the record, for messages.
_VIA = {
    "accessor": "the raw accessor",
    "alias": "an alias of the raw record",
    "parameter": "a parameter holding the raw record",
    "attribute": "a record attribute (e.g. self.server_args)",
    "self_alias": "a self. attribute holding the raw record",
    "wrapper": "a function returning the raw record",
    "constructed": "a ServerArgs built in place",
    "parsed": "a Namespace parsed by a parser ServerArgs.add_cli_args filled",
    "replaced": "a copy of the raw record with fields changed (dataclasses.replace, .replace)",
    "class": "the record class (a class default, never the published value)",
    "record_dict": "a dict copy of the record",
    "class_pattern": "a match class pattern (`case ServerArgs(leaf=...)`)",
    "carrier": "the raw record carried by a lambda, a parameter default or a container literal",
    "format_field": "a str.format field of the raw record (`\"{0.leaf}\".format(record)`)",
    "imported": "a name another module binds to the raw record",
    "helper": "a function it is passed to, which reads it whole or dynamically (allowlisted there or not)",
    "home": "code of the record's home module (excluded from the scan) that reads it for this call",
}
# Where the record escapes the analysis (configbags.migrate.flows), by form
_ESCAPES = {
    "escapes_call": "it is passed to a callable the scanner cannot resolve to a scanned function (a method "
    "of an object, a third-party function, a parameter, a nested function, a function under a decorator "
    "whose wrapper is not shown)",
    "escapes_attribute": "it is stored in an attribute not named like the record (`self.cfg = record`, "
    "`holder.x = record`), which any code may read by another name",
    "escapes_item": "it is stored in a container by key or index (`d[k] = record`)",
    "escapes_container": "it is put in a container literal not indexed literally (`[record]`, `(record, x)`) "
    "or produced by a comprehension or generator expression (`[record for _ in x]`, `(record for _ in x)`)",
    "escapes_yield": "it is yielded (`yield record`)",
    "escapes_default": "it is a parameter's default, read back from the function (`f.__defaults__`, "
    "`f.__kwdefaults__`, `inspect.signature(f)`)",
    "escapes_assert": "it is an `assert` statement's message, which the AssertionError carries to whoever "
    "catches it (`e.args[0]`)",
    "escapes_builtin": "it is installed as a builtin (`builtins.name = record`), which any module reads by a "
    "bare name no import shows",
    "escapes_operator": "it is an operand, a key or a member (`obj + record`, `obj[record]`) of an object "
    "whose class the scanner cannot tell, whose operator method receives it",
    "escapes_return": "it is returned by a method (`def args(self): return self._args`), whose callers "
    "elsewhere read it by the method's name",
    "escapes_holder": "an object holding it in an attribute (`self.server_args`, the process view `cfg`) is "
    "read through its namespace (`vars(self)`, `self.__dict__`, `dataclasses.asdict`, `pickle.dumps`, a "
    "generated repr) or by a name built at run time (`getattr(cfg, name)`), which may be the record's",
    "escapes_accessor": "the raw accessor itself is handed on, not called (`functools.cache(get_server_args)`, "
    "`field(default_factory=get_server_args)`, `{\"args\": get_server_args}`): whoever calls it later gets "
    "the record under a name the scanner does not follow",
    "escapes_fetcher": "a function whose call gives the record (a helper returning it, here or in another "
    "module, or a name bound to one) is handed on, not called (`functools.cache(load)`, `{\"load\": load}`, "
    "`executor.submit(load)`, a parameter's default, returned, a decorator that keeps it: "
    "`@register(\"args\")`): whoever calls it later gets the record under a name the scanner does not follow",
}

# How each environment read is spelled, for messages.
_ENV_FORMS = {
    "environ_subscript": "os.environ[...]",
    "environ_get": "os.environ.get(...)",
    "environ_in": "... in os.environ",
    "getenv": "os.getenv(...)",
    "environ_pop": "os.environ.pop(...)",
    "environ_setdefault": "os.environ.setdefault(...)",
    "environ_del": "del os.environ[...] whose KeyError is caught: whether it is set",
    "environ_whole": "the environment used whole",
    "environ_filtered": "the environment walked for the names a literal prefix or suffix picks",
    "settings_field": "a settings library filling a field from the environment (a pydantic-settings "
    "BaseSettings field, starlette's Config)",
    "env_table": "a table of getters, one per variable (an `environment_variables` dict of lambdas or of getters a factory makes), whose "
    "entry is called or handed on",
    "environ_glob": "the environment file /proc/<pid>/environ, found by a glob pattern, read whole",
    "environb": "the bytes environment (os.environb, os.getenvb, posix.environ)",
    "expandvars": "os.path.expandvars",
    "env_helper": "its name passed to a function that reads the environment by the name it is given",
    "env_attribute": "an attribute named like the variable: a reader of it, as a descriptor per variable is",
    "env_import": "a from-import of a name the module's `__getattr__` serves (PEP 562: a getter table's dispatch, a "
    "prefix dispatcher), which the import statement calls",
    "envvar_option": "a command-line option taken from the environment: click/typer `envvar=` or `auto_envvar_prefix=`",
    "config_library": "a config or command-line library filling a value from the environment (OmegaConf's "
    "`${oc.env:...}`, jsonargparse's or configargparse's options, environs, python-decouple)",
    "child_process": "a child process whose command names it",
    "child_script": "a child process running a file under the project (a shell script, a Makefile, a program) "
    "whose text names it",
    "child_written": "a child process running a file the module writes itself (a launch script written at run "
    "time) whose text names it",
}
# reads the scanner cannot resolve at all (configbags.migrate.reflection), by form
_UNRESOLVED_FORMS = {
    "reflection": "reflection: a name in a string, a namespace dict, `__getattribute__`, eval or exec",
    "fetcher_value": "a fetcher (getattr, attrgetter, an importer) passed on as a value",
    "door_by_name": "an attribute fetched by a name built at run time (`getattr(accessors, f\"get_{ns}\")`) "
    "from a module holding the raw accessor or a context function, which it may be",
    "env_by_name": "an attribute of os (posix, nt) or os.environ fetched by a name the module does not spell "
    "(`getattr(os, name)`), which may be the environment or one of its getters",
    "format": "a str.format field reaching an attribute or item of its argument",
    "private": "a private part of the record's module, an accessors module or the runtime",
    "import_by_name": "an import by a name the module does not spell (`importlib.import_module(qualname)`, "
    "`pkgutil.resolve_name(name)`), which may be the record's getter, a context or the environment; "
    "reported in any module: say in the entry's reason what it imports",
    "code_string": "a code string the module does not spell, run by exec/eval/compile (`exec(open(path).read())`), "
    "the standard library's runners (code's interpreters, cProfile/profile, pdb, timeit) or an unsafe YAML load; "
    "reported in any module: say in the entry's reason what the code is",
    "frame_locals": "every frame's local variables rendered (`traceback.TracebackException(..., "
    "capture_locals=True)`, `StackSummary.extract(..., capture_locals=True)`), the record, a context or the "
    "environment among them wherever a frame holds one; reported in any module: say in the entry's reason "
    "what it renders and where it goes",
    "child_command": "a child process whose command the scanner cannot rebuild (a name, attribute or call whose "
    "value the module does not show, or a comprehension, not a parameter its callers hand over): it may print "
    "the environment back; "
    "say in the entry's reason what it runs",
    "child_file": "a child process running a file the scanner cannot read: a script, Makefile or Python file "
    "named by a path the module does not spell, one that is not there, a program that is not text, or a file "
    "the module writes with a text it does not show; say in the entry's reason what it runs",
}
_READBACK_WHAT = {
    STATE_READBACK: "`.state` of the config context",
    STATE_DICT_READBACK: "configbags.runtime.dist.state_dict",
    **{f"Context.{method}": f"`{method}()` of the config context" for method in CONTEXT_READBACK_METHODS},
}


Key = tuple[str, str, str]


@attrs.frozen
class Failure:
    # new_read, operator_readback, stale_entry, write, renamed_accessor, unreadable,
    # too_few_files, entry, path
    kind: str
    message: str


@attrs.frozen
class CheckReport:
    failures: tuple[Failure, ...]
    reads: int
    keys: int
    allowed: int
    files_parsed: int
    # Skipped as generated (inside a generated package); listed so that skipping is visible.
    generated_files: tuple[str, ...] = ()
    # Folders under the roots that were not walked (a virtualenv, node_modules, .git, ...).
    skipped_folders: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    def render(self) -> str:
        lines = [failure.message for failure in self.failures]
        if self.generated_files:
            folders = sorted({f.rpartition("/")[0] or "." for f in self.generated_files})
            lines.append(
                f"skipped {len(self.generated_files)} generated files in generated packages: "
                f"{', '.join(folders)}"
            )
        if self.skipped_folders:
            shown = ", ".join(self.skipped_folders[:10])
            more = f" and {len(self.skipped_folders) - 10} more" if len(self.skipped_folders) > 10 else ""
            lines.append(
                f"not scanned: {len(self.skipped_folders)} folders under the roots that hold other "
                f"people's code or a tool's files: {shown}{more} (give one as a root to scan it)"
            )
        status = "FAILED" if self.failures else "ok"
        lines.append(
            f"ratchet {status}: {self.files_parsed} files scanned, {self.reads} raw reads at "
            f"{self.keys} (file, function, leaf) keys, {self.allowed} allowlisted, "
            f"{len(self.failures)} failures"
        )
        # (a file name's byte that is not UTF-8 as `\xff`: printable under any locale)
        return shown_name("\n".join(lines))


def yaml_scalar(value: str) -> str:
    """`value` as a YAML scalar that is safe inside a flow mapping."""
    import yaml  # only failures and ratchet.yaml edits quote entries; a green check never does

    dumped = yaml.safe_dump({"k": value}, default_flow_style=True, width=10**9)
    return dumped.strip()[len("{k: ") : -1]


def unnameable(file: str) -> bool:
    """Is `file` a name no entry of ratchet.yaml can hold: one with a byte that is not UTF-8
    (kept by the scan as a surrogate escape, `bad\\udcff.py`), which YAML cannot spell?"""
    try:
        file.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown_name(file: str) -> str:
    """`file` as a message shows it: a byte that is not UTF-8 as `\\xff`."""
    return file.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _entry_hint(intro: str, file: str, entry: str) -> str:
    """The entry a failure tells to add, after `intro`; for a file whose name no entry can
    hold, the rename that must come first."""
    if unnameable(file):
        return (
            f"    Its file name ({shown_name(file)}) is not UTF-8, so no entry of ratchet.yaml can name it: "
            "rename the file to a UTF-8 name first."
        )
    return f"    {intro}:\n      - {entry}"


def entry_flow(file: str, function: str, leaf: str, reason: str | None = None, reads: int | None = None) -> str:
    """An allowlist entry as one YAML flow mapping, the way ratchet.yaml lists them."""
    parts = [f"file: {yaml_scalar(file)}", f"function: {yaml_scalar(function)}"]
    parts.append(f"leaf: {yaml_scalar(leaf)}")
    if reason is not None:
        parts.append(f"reason: {yaml_scalar(reason)}")
    if reads is not None:
        parts.append(f"reads: {int(reads)}")
    return "{" + ", ".join(parts) + "}"


def _as_entry(raw: Any) -> Entry:
    if type(raw) is Entry:  # the common case, thousands of times: no ABC check
        return raw
    if isinstance(raw, Mapping):
        return Entry(
            str(raw.get("file", "")),
            str(raw.get("function", "")),
            str(raw.get("leaf", "")),
            str(raw.get("reason") or ""),
            _count(raw.get("reads")),
        )
    return Entry(str(raw.file), str(raw.function), str(raw.leaf), str(raw.reason or ""), _count(getattr(raw, "reads", None)))


def _count(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


# Origins (see configbags.migrate.scan.ORIGINS) for which `ratchet fix` always refuses: the
# name may not hold the process record, so the message must not promise an automatic fix.
_BY_HAND_ORIGINS = frozenset({"rebound", "wrapped", "constructed", "built", "replaced"})
# reads the record's home makes for its caller (configbags.migrate.homegetters.HomeReads):
# a method of the record (`rec.url()`), a home function reading it (`get_page_size()`,
# `page_of(rec)`): the expression here is a call, not the leaf
HOME_FORMS = frozenset({"home_method", "home_read", "home_passed"})


def in_resolution(file: str, function: str, resolution: Iterable[str]) -> bool:
    """Is `function` (a qualname in `file`) part of the declared resolution phase? Entries
    are `FILE:QUALNAME` or `QUALNAME`; functions nested in a listed one belong to it."""
    for entry in resolution:
        where, _, qualname = entry.rpartition(":")
        if where and where != file:
            continue
        if function == qualname or function.startswith(qualname + "."):
            return True
    return False


def write_suggestion(leaf: str, policies: Mapping[str, str]) -> str:
    """What to do instead of writing the record, in words."""
    policy = policies.get(leaf)
    move = "or move it into the resolution phase (a function listed in scan.resolution, run before publish)"
    if leaf == "*" or policy is None:
        return f"override the leaf it means with get_context().override(\"<module>:<function>\", leaf=...), {move}"
    if policy == "startup":
        return (
            f"`{leaf}` has override policy startup, so it may not change after publish: give it "
            f"policy load_time or runtime and use get_context().override(\"<module>:<function>\", "
            f"{leaf}=...), {move}"
        )
    return f"use get_context().override(\"<module>:<function>\", {leaf}=...) (policy {policy}), {move}"


def suggestion(leaf: str, accessors: Mapping[str, str], origin: str = "process", via: str = "") -> str:
    """What to read instead of the raw leaf, in words."""
    if via == "class" and leaf in accessors:
        return (
            f"this reads the class default, not the published value (on a slotted class a "
            f"member descriptor); use {accessors[leaf]}, or the schema default, by hand"
        )
    if via == "record_dict" and leaf in accessors:
        return (
            f"use {accessors[leaf]} instead, by hand: the dict may hold converted values "
            f"(enums), so `configbags ratchet fix` will not rewrite it"
        )
    if leaf == "*":
        return (
            "this reads the record dynamically or whole; read the leaves you need by name "
            "through their accessors"
        )
    accessor = accessors.get(leaf)
    if accessor is None:
        return f"`{leaf}` is not a config leaf, so no accessor replaces it"
    if origin in _BY_HAND_ORIGINS:
        return (
            f"use {accessor} instead, by hand: this may not be the process record "
            f"(origin {origin!r}), so `configbags ratchet fix` will not rewrite it"
        )
    return f"use {accessor} instead (`configbags ratchet fix` rewrites it)"


def explained(reason: str) -> bool:
    """Does an allowlist entry for an operator readback say why, in a person's words?"""
    text = reason.strip()
    return bool(text) and text not in (BASELINE, READBACK_PLACEHOLDER) and not text.startswith(FIX_REFUSED)


def env_suggestion(name: str, env_leaves: Mapping[str, str], accessors: Mapping[str, str]) -> str:
    """What to read instead of environment variable `name`, in words."""
    leaf = env_leaves.get(name)
    if leaf is None or leaf not in accessors:
        return "it sets a config leaf: read the leaf through its accessor instead, by hand"
    return (
        f"it sets leaf {leaf!r}, so use {accessors[leaf]} instead, by hand: the accessor has the "
        f"value resolved over every layer (config file, environment, flags, overrides), the "
        f"environment alone is one of them"
    )


def _readback_failure(key: Key, reads: list[Read], allowlist_file: str) -> Failure:
    file, function, leaf = key
    lines = sorted({r.line for r in reads})
    also = f" (also line{'s' if len(lines) > 2 else ''} {', '.join(map(str, lines[1:]))})" if lines[1:] else ""
    what = _READBACK_WHAT.get(leaf, leaf)
    if all(r.form == "context_escape" for r in reads):
        what = (
            "a config context stored where the scanner cannot follow it (an attribute of another object, "
            "a container, a method's return, a yield, a decorator that keeps its getter), so any code may "
            "read back `.state` through it"
        )
    return Failure(
        "operator_readback",
        f"{file}:{lines[0]} ({function}): an operator readback in role code: "
        f"{what}{also}. It holds every namespace and bypasses role "
        f"scoping (the enforce and record modes), so role code does not read config through "
        f"it: read the leaves through the generated accessors (cfg, get_<namespace>()), or "
        f"ctx.bag(path) or ctx.snapshot(), which are scoped to the role.\n"
        + _entry_hint(
            f"If this is operator code (an HTTP admin endpoint, say), allowlist it in {allowlist_file} with the reason",
            file, entry_flow(file, function, leaf, READBACK_PLACEHOLDER),
        ),
    )


@attrs.frozen
class _Advice:
    """Where a new entry is added, where a stale one is listed, and how it goes away."""

    add_in: str
    listed_in: str
    unstale: str

    @classmethod
    def of(cls, allowlist_file: str, generated: str | None, regenerate: str) -> _Advice:
        if not generated:
            return cls(allowlist_file, allowlist_file,
                       "Remove the entry (`configbags ratchet update` removes stale entries) so the "
                       "ratchet keeps its ground.")
        return cls(
            f"{allowlist_file}, then run `{regenerate}` ({generated} is a copy of it)",
            generated,
            f"{generated} is generated from {allowlist_file}: run `{regenerate}` to copy it "
            f"again (first `configbags ratchet update` if {allowlist_file} still lists the entry).",
        )


def check(
    result: ScanResult,
    allowlist: Iterable[Any],
    accessors: Mapping[str, str],
    *,
    allowlist_file: str = "schema/ratchet.yaml",
    min_files: int | None = None,
    roots: Iterable[str] = (),
    writes: Iterable[Any] = (),
    resolution: Iterable[str] = (),
    policies: Mapping[str, str] | None = None,
    generated: str | None = None,
    regenerate: str = "configbags gen",
    env_leaves: Mapping[str, str] | None = None,
) -> CheckReport:
    """Compare `result` with `allowlist` and `writes` (Entry-like objects or mappings).
    `generated`: the lists come from this generated module, a copy of `allowlist_file`
    made by `regenerate`, so messages say where to edit and to regenerate. `env_leaves`
    (declared environment variable -> its leaf) names the leaf and accessor in the message
    for a raw environment read."""
    if min_files is None:
        # imported only when not given: the generator is slow to import
        from configbags.codegen.model import DEFAULT_MIN_FILES

        min_files = DEFAULT_MIN_FILES
    resolution = tuple(resolution)
    advice = _Advice.of(allowlist_file, generated, regenerate)

    failures = _scan_failures(result, allowlist_file, min_files, roots)
    failures += path_failures(result, resolution, allowlist_file)
    writes_by_key = _writes_by_key(result, resolution, failures)
    reads_by_key: dict[Key, list[Read]] = defaultdict(list)
    for read in result.reads:
        reads_by_key[(read.file, read.function, read.leaf)].append(read)
    entries = _entries(allowlist, "allowlist", allowlist_file, failures)
    write_entries = _entries(writes, "writes", allowlist_file, failures)

    failures += _unexplained_readbacks(entries, reads_by_key, allowlist_file)
    failures += [
        _readback_failure(key, sorted(reads_by_key[key], key=lambda r: (r.line, r.col)), allowlist_file)
        if key[2] in READBACKS
        else _new_read_failure(key, reads_by_key[key], accessors, resolution, env_leaves or {}, advice)
        for key in sorted(reads_by_key.keys() - entries.keys())
    ]
    failures += _count_failures(entries, reads_by_key, accessors, resolution, env_leaves or {}, advice)
    failures += [
        _write_failure(key, writes_by_key[key], policies or {}, advice)
        for key in sorted(writes_by_key.keys() - write_entries.keys())
    ]
    failures += _stale_failures(
        (("allowlist", entries, reads_by_key.keys()), ("writes", write_entries, writes_by_key.keys())), advice
    )
    return CheckReport(
        failures=tuple(failures),
        reads=len(result.reads),
        keys=len(reads_by_key),
        allowed=len(entries.keys() & reads_by_key.keys()),
        files_parsed=result.files_parsed,
        generated_files=result.generated_files,
        skipped_folders=result.skipped_folders,
    )


def _count_failures(entries: Mapping[Key, Entry], reads_by_key: Mapping[Key, list[Read]], accessors: Mapping[str, str],
                    resolution: tuple[str, ...], env_leaves: Mapping[str, str], advice: _Advice) -> list[Failure]:
    """Counted entries the reads outgrew (a new read under an old key), or that allow more
    than is left (stale until `ratchet update` lowers the count: the ratchet only shrinks)."""
    failures = []
    for key in sorted(entries.keys() & reads_by_key.keys()):
        entry = entries[key]
        if entry.reads is None:
            continue
        found = _sites(reads_by_key[key])
        if found > entry.reads:
            failures.append(_new_read_failure(key, reads_by_key[key], accessors, resolution, env_leaves, advice, entry))
        elif found < entry.reads:
            failures.append(Failure(
                "stale_entry",
                f"{advice.listed_in}: allowlist entry {entry_flow(*key, reads=entry.reads)} allows "
                f"{entry.reads} reads but {found} are left: lower its `reads` to {found} "
                f"(`configbags ratchet update` does) so the ratchet keeps its ground.",
            ))
    return failures


def _scan_failures(result: ScanResult, allowlist_file: str, min_files: int, roots: Iterable[str]) -> list[Failure]:
    """Files the scan could not read, and a scan that read too little to mean anything."""
    failures = [
        Failure(
            "unreadable",
            f"{problem.file}: could not be scanned: {problem.reason}. Raw reads in it would "
            f"go unseen: fix the file, or add it to scan.excludes in {allowlist_file}.",
        )
        for problem in result.problems
    ]
    if result.files_parsed < min_files:
        failures.append(
            Failure(
                "too_few_files",
                f"the scan read {result.files_parsed} files under roots {sorted(roots)} "
                f"({len(result.files)} listed), fewer than the {min_files} expected; a scan that "
                f"reads nothing passes everything: check scan.roots in {allowlist_file}, or, if the "
                f"engine really has fewer files, lower scan.min_files there (or pass --min-files).",
            )
        )
    return failures


PATHS_BASE = "the project (the folder holding the schema folder)"


def path_failures(result: ScanResult, resolution: Iterable[str], allowlist_file: str) -> list[Failure]:
    """Excludes and resolution files that match nothing: a path from another base or a
    typo would otherwise exclude nothing, or allow nothing, without a word."""
    failures = [
        Failure(
            "path",
            f"{allowlist_file}: scan.excludes pattern {pattern!r} matches no file or folder under the "
            f"roots; ratchet paths are relative to {PATHS_BASE} (or absolute): fix it or remove it.",
        )
        for pattern in result.unmatched_excludes
    ]
    listed = set(result.files)
    for entry in resolution:
        file, sep, _ = entry.rpartition(":")
        if sep and file and file not in listed:
            failures.append(
                Failure(
                    "path",
                    f"{allowlist_file}: scan.resolution entry {entry!r} names {file}, which is not a "
                    f"scanned file (not under the roots, or excluded); ratchet paths are relative to "
                    f"{PATHS_BASE} (or absolute): fix it or remove it.",
                )
            )
    return failures


def _writes_by_key(result: ScanResult, resolution: tuple[str, ...], failures: list[Failure]) -> dict[Key, list[Violation]]:
    """The record writes outside the resolution phase, by key; a renamed raw accessor (the
    other kind of violation) fails at once."""
    writes_by_key: dict[Key, list[Violation]] = defaultdict(list)
    for violation in result.violations:
        if violation.kind not in WRITE_KINDS:
            failures.append(
                Failure(
                    "renamed_accessor",
                    f"{violation.file}:{violation.line} ({violation.function}): the raw accessor is "
                    f"renamed (`{violation.detail}`); a renamed accessor hides reads from review and "
                    f"cannot be allowlisted. Read through the generated accessors, or keep the name "
                    f"get_server_args.",
                )
            )
        elif not in_resolution(violation.file, violation.function, resolution):
            writes_by_key[(violation.file, violation.function, violation.leaf)].append(violation)
    return writes_by_key


def _unexplained_readbacks(entries: Mapping[Key, Entry], reads_by_key: Mapping[Key, list[Read]],
                           allowlist_file: str) -> list[Failure]:
    """Allowlisted operator readbacks whose reason does not say why it is operator code."""
    return [
        Failure(
            "entry",
            f"{allowlist_file}: allowlist entry {entry_flow(*key)} allows an operator "
            f"readback with reason {entries[key].reason!r}: say why this is operator "
            f"code, not role code (a readback is never baselined), or read through "
            f"the role-scoped accessors instead.",
        )
        for key in sorted(entries.keys() & reads_by_key.keys())
        if key[2] in READBACKS and entries[key].reason.strip() and not explained(entries[key].reason)
    ]


def _new_read_failure(key: Key, found: list[Read], accessors: Mapping[str, str], resolution: tuple[str, ...],
                      env_leaves: Mapping[str, str], advice: _Advice, allowed: Entry | None = None) -> Failure:
    """A raw read without an entry: what it is, what replaces it, and the entry to add.
    With `allowed`, an entry whose count the reads now exceed: one of them is new."""
    file, function, leaf = key
    reads = sorted(found, key=lambda r: (r.line, r.col))
    first = reads[0]
    more = sorted({r.line for r in reads} - {first.line})
    also = f" (also line{'s' if len(more) > 1 else ''} {', '.join(map(str, more))})" if more else ""
    if allowed is not None:
        also += (
            f"; {_sites(reads)} such reads where the allowlist entry allows {allowed.reads}, so one of "
            f"them is new"
        )
    if leaf == ENV_UNRESOLVED and first.form in ("environ_whole", "environ_glob"):
        what = (
            "an environment read whose variable names the scanner cannot resolve (the environment used "
            "whole: iterated, passed on, returned or stored, so any variable may be read)"
        )
        instead = (
            "if it may read a declared variable, read that leaf through its accessor; to start a child "
            "process, pass it as subprocess's env= (which is no read); if it never reads a declared "
            "variable, say why in the allowlist entry"
        )
    elif leaf == ENV_UNRESOLVED and first.form in _UNRESOLVED_FORMS:
        what = f"a read the scanner cannot resolve ({_UNRESOLVED_FORMS[first.form]})"
        instead = (
            "read the leaf through its accessor (private parts are never API); if it reads no "
            "leaf, context or declared variable, say why in the allowlist entry"
        )
    elif leaf == ENV_UNRESOLVED:
        what = (
            f"an environment read whose variable name the scanner cannot resolve "
            f"({_ENV_FORMS.get(first.form, first.form)} of a name built at run time, or from another module)"
        )
        instead = (
            "if it may read a declared variable, read that leaf through its accessor; if it never "
            "does, say why in the allowlist entry"
        )
    elif leaf == "*" and first.via == "escape":
        what = (
            f"the raw record escapes where the scanner cannot follow it: "
            f"{_ESCAPES.get(first.form, first.form)}, so every leaf may be read through it"
        )
        instead = (
            "hand over the leaves it needs (read through their accessors) instead of the record, by hand "
            "(`configbags ratchet fix` will not rewrite it); if nothing reads a leaf through it, say why "
            "in the allowlist entry"
        )
    elif leaf.startswith(ENV_MARK):
        name = leaf[len(ENV_MARK) :]
        what = f"a raw read of environment variable {name} ({_ENV_FORMS.get(first.form, first.form)})"
        instead = env_suggestion(name, env_leaves, accessors)
    else:
        what = "a dynamic or whole-record read" if leaf == "*" else f"a raw read of {leaf!r}"
        what += f" through {_VIA.get(first.via, first.via)}"
        # the least provable origin among the key's reads decides whether fix can help
        origin = functools.reduce(join_origin, (r.origin for r in reads))
        instead = suggestion(leaf, accessors, origin, first.via)
        if leaf in accessors and any(r.form in HOME_FORMS for r in reads):
            instead = (
                f"use {accessors[leaf]} instead, by hand: the home's code called here reads it, so no "
                f"accessor replaces the call and `configbags ratchet fix` will not rewrite it"
            )
        if leaf in accessors and all(r.form == "augmented" for r in reads):
            instead = (
                f"it is also written (`+=` and the like): read {accessors[leaf]} and override the leaf "
                f"instead, by hand (`configbags ratchet fix` will not rewrite it)"
            )
    if in_resolution(file, function, resolution):
        # runs before publish: no accessor can replace it, and fix never rewrites it
        instead = "it is in the resolution phase (scan.resolution), which runs before publish and reads the record it resolves; allowlist it"
    if allowed is not None:
        return Failure(
            "new_read",
            f"{file}:{first.line} ({function}): {what}{also}; {instead}.\n"
            + _entry_hint(
                f"If the new one must stay raw too, raise the entry's `reads` in {advice.add_in}",
                file, entry_flow(file, function, leaf, allowed.reason, _sites(reads)),
            ),
        )
    return Failure(
        "new_read",
        f"{file}:{first.line} ({function}): {what}{also}; {instead}.\n"
        + _entry_hint(
            f"If it must stay raw, allowlist it with a reason in {advice.add_in}",
            file, entry_flow(file, function, leaf, REASON_PLACEHOLDER),
        ),
    )


def _sites(reads: Iterable[Read]) -> int:
    """How many reads there are (what an entry's count counts): each a read the scan
    reported, two at one place too (`self.a = self.b = rec` escapes twice)."""
    return sum(1 for _ in reads)


def read_counts(result: ScanResult) -> Counter[Key]:
    """(file, function, leaf) -> how many reads the scan found under it."""
    return Counter((read.file, read.function, read.leaf) for read in result.reads)


def count_keys(result: ScanResult, allowlist: Iterable[Any]) -> dict[Key, int]:
    """Counted entries that allow more reads than the scan found: key -> the reads found
    (what `ratchet update` lowers the count to)."""
    found = read_counts(result)
    lowered = {}
    for entry in map(_as_entry, allowlist):
        key = (entry.file, entry.function, entry.leaf)
        if entry.reads is not None and 0 < found[key] < entry.reads:
            lowered[key] = found[key]
    return lowered


def _write_failure(key: Key, found: list[Violation], policies: Mapping[str, str], advice: _Advice) -> Failure:
    """A record write without an entry: what it writes, what to do instead, the entry to add."""
    file, function, leaf = key
    first = min(found, key=lambda v: v.line)
    if all(v.origin == "copied" for v in found):
        # `draft = copy.deepcopy(rec); draft.tp_size = 1`: a private copy, not the process's
        # record, so no override is the fix: the changed copy is built in one step
        changed = f"{leaf}=..." if leaf != "*" else "leaf=..."
        return Failure(
            "write",
            f"{file}:{first.line} ({function}): writes a copy of the raw record (origin copied): "
            f"`{first.detail}`; the copy changes alone, but it carries every published value and reads like "
            f"the record, so build the changed copy in one step instead: `dataclasses.replace(record, {changed})` "
            f"(or the generated record's `record.replace({changed})`), which changes nothing else.\n"
            + _entry_hint(
                f"If it must stay for now, list it with a reason under `writes:` in {advice.add_in}",
                file, entry_flow(file, function, leaf, WRITE_PLACEHOLDER),
            ),
        )
    return Failure(
        "write",
        f"{file}:{first.line} ({function}): writes the raw record: `{first.detail}`; "
        f"{write_suggestion(leaf, policies)}.\n"
        + _entry_hint(
            f"If it must stay for now, list it with a reason under `writes:` in {advice.add_in}",
            file, entry_flow(file, function, leaf, WRITE_PLACEHOLDER),
        ),
    )


def _stale_failures(lists: Iterable[tuple[str, Mapping[Key, Entry], Any]], advice: _Advice) -> list[Failure]:
    """Entries (allowlist or writes) that match nothing the scan found any more."""
    return [
        Failure(
            "stale_entry",
            f"{advice.listed_in}: stale {kind} entry {entry_flow(*key)}: that "
            f"{'read' if kind == 'allowlist' else 'write'} is gone. {advice.unstale}",
        )
        for kind, listed, found_keys in lists
        for key in sorted(listed.keys() - found_keys)
    ]


def _entries(raw_entries: Iterable[Any], kind: str, allowlist_file: str, failures: list[Failure]) -> dict[Key, Entry]:
    entries: dict[Key, Entry] = {}
    for raw in raw_entries:
        entry = _as_entry(raw)
        key = (entry.file, entry.function, entry.leaf)
        # entry_flow (a YAML dump) only for a failure: thousands of entries are the norm
        if key in entries:
            failures.append(Failure("entry", f"{allowlist_file}: duplicate {kind} entry {entry_flow(*key)}; keep one."))
            continue
        entries[key] = entry
        if not entry.reason.strip():
            failures.append(
                Failure(
                    "entry",
                    f"{allowlist_file}: {kind} entry {entry_flow(*key)} has no reason; say why this "
                    f"{'read stays raw' if kind == 'allowlist' else 'write stays'}.",
                )
            )
    return entries


def write_keys(result: ScanResult, resolution: Iterable[str] = ()) -> set[Key]:
    """(file, function, leaf) of every write outside the resolution phase."""
    resolution = tuple(resolution)
    return {
        (v.file, v.function, v.leaf)
        for v in result.violations
        if v.kind in WRITE_KINDS and not in_resolution(v.file, v.function, resolution)
    }


def stale_keys(result: ScanResult, allowlist: Iterable[Any]) -> set[Key]:
    """Entries that match no read (what `ratchet update` removes)."""
    present = {(r.file, r.function, r.leaf) for r in result.reads}
    keys = {(e.file, e.function, e.leaf) for e in map(_as_entry, allowlist)}
    return keys - present


def stale_write_keys(result: ScanResult, writes: Iterable[Any], resolution: Iterable[str] = ()) -> set[Key]:
    """Write entries that match no write outside the resolution phase."""
    keys = {(e.file, e.function, e.leaf) for e in map(_as_entry, writes)}
    return keys - write_keys(result, resolution)
