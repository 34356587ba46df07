"""`configbags ratchet check|scan|init|update|fix`.

Paths: `--schema DIR` (default `./schema`, from the working folder) names the schema
folder; its parent is the project, the one base of every other ratchet path: `--root`,
`--exclude`, `--resolution FILE:...`, `--only` and the paths in ratchet.yaml (absolute
paths are accepted anywhere; a root outside the project is kept absolute). An exclude or
resolution file that matches nothing is an error. `check` can instead hold the tree to the generated allowlist module
(`--generated generated`); beside the schema folder, a copy whose declared environment
variables differ from the namespace files' is stale, a failure (the reads of both held).

Speed: `check` and `scan` import neither libcst (only `fix` rewrites) nor the generator
(the schema's ratchet inputs are cached, see configbags.migrate.settings).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from configbags.migrate.check import (
    BASELINE,
    FIX_REFUSED,
    PATHS_BASE,
    Failure,
    check,
    count_keys,
    explained,
    path_failures,
    read_counts,
    shown_name,
    stale_keys,
    stale_write_keys,
    unnameable,
    write_keys,
)
from configbags.migrate.files import display_path
from configbags.migrate.scan import (
    MAX_JOBS,
    ScanSettings,
    default_cache_path,
    default_jobs,
    scan_tree,
)
from configbags.migrate.scanmodel import COUNTED_LEAVES, READBACKS, WRITE_KINDS, Entry, ScanResult
from configbags.migrate.settings import (
    RATCHET_FILE,
    RatchetConfigError,
    RatchetInputs,
    declared_env,
    edit_allowlist,
    generated_module_file,
    load_from_generated,
    load_from_schema,
    read_ratchet_yaml,
    render_ratchet_yaml,
)
from configbags.runtime.cmdline import (
    TerminalProgress,
    UsageErrors,
    print_stderr,
    terminal_progress,
)
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import load_project, project_path

if TYPE_CHECKING:
    from configbags.migrate.fix import FixReport

__all__ = ["BASELINE", "FIX_REFUSED", "main"]


def _job_count(text: str) -> int:
    """`--jobs N`, from 1 to MAX_JOBS, refused before any worker starts (a pool of 100000
    processes floods the machine; 0 and -1 mean nothing)."""
    from configbags.runtime.leaftypes import int_from_text

    try:
        value = int_from_text(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give from 1 to {MAX_JOBS} worker processes")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = UsageErrors(
        prog="configbags ratchet",
        description="Hold raw ServerArgs reads and writes, raw reads of declared environment "
        "variables and operator readbacks in role code to an allowlist.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--schema", type=project_path, default=None,
                         help="schema folder (default: [tool.configbags] schema of the project around the "
                         "working folder, else ./schema)")
        sub.add_argument(
            "--jobs", type=_job_count, default=None, metavar="N",
            help=f"processes that parse files the cache lacks, 1 to {MAX_JOBS} (default: the CPUs, at most 8)",
        )
        return sub

    check_cmd = command("check", "fail on any raw read or write not listed, and on stale entries")
    check_cmd.add_argument(
        "--generated",
        metavar="PKG",
        help="read settings, allowlist and accessors from PKG.ratchet_allowlist instead",
    )
    check_cmd.add_argument("--min-files", type=int, help="fewest files the scan must read")
    _cache_flags(check_cmd)

    scan_cmd = command("scan", "list every raw read, write and unreadable file")
    _cache_flags(scan_cmd)

    init_cmd = command(
        "init", "write a baseline listing every current read and write, so that check is green"
    )
    init_cmd.add_argument("--root", type=Path, action="append", required=True, help="tree to scan")
    init_cmd.add_argument("--exclude", action="append", default=[], help="glob to leave out")
    init_cmd.add_argument(
        "--record-dict", action="append", default=[], metavar="NAME",
        help="a module-global dict copy of the record (e.g. global_server_args_dict)",
    )
    init_cmd.add_argument(
        "--resolution", action="append", default=[], metavar="[FILE:]QUALNAME",
        help="a function of the legacy resolution phase, whose writes are allowed "
        "(e.g. legacy_engine/server_args.py:ServerArgs.__post_init__)",
    )

    command("update", "remove stale allowlist and write entries (never adds any)")

    fix_cmd = command("fix", "rewrite raw reads to the generated accessors")
    fix_cmd.add_argument(
        "--accessors-module",
        default=None,
        metavar="MODULE",
        help="import path of the generated accessors, e.g. myengine.config_bags.accessors "
        "(default: <package>.accessors for the [tool.configbags] package of this schema; "
        "required without one)",
    )
    fix_cmd.add_argument("--dry-run", action="store_true", help="say what would be rewritten, change nothing")
    fix_cmd.add_argument(
        "--only", nargs="+", default=None, metavar="PATH",
        help="rewrite only in these files or folders (project-relative)",
    )
    fix_cmd.add_argument(
        "--leaf", nargs="+", default=None, metavar="NAME", help="rewrite only reads of these leaves"
    )
    fix_cmd.add_argument(
        "--rewrite-parameters",
        action="store_true",
        help="also rewrite reads of a held record (server_args: ServerArgs parameters, "
        "self.server_args) within the --only paths (everywhere without --only): say so only "
        "where the record there is the process record, with no runner (e.g. a draft model) "
        "holding its own",
    )
    fix_cmd.add_argument(
        "--rewrite-writes",
        action="store_true",
        help="also turn writes of load_time/runtime leaves that no raw read sees any more into "
        'get_context().override("<module>:<function>", leaf=value); say so only where the '
        "written record is the process record (within the --only paths)",
    )
    return parser


def _cache_flags(sub: argparse.ArgumentParser) -> None:
    group = sub.add_mutually_exclusive_group()
    group.add_argument("--no-cache", action="store_true", help="ignore the caches (scan results, schema inputs)")
    group.add_argument(
        "--cache", action="store_true",
        help=f"use the caches on CI too (off by default where {CI_VAR} is set): only where they cannot come from an untrusted run",
    )


# Set (to anything but false/0/no/empty) by CI services. A cache restored there may come
# from another branch's run: the check then uses none unless told to.
CI_VAR = "CI"


def on_ci() -> bool:
    return os.environ.get(CI_VAR, "").strip().lower() not in ("", "0", "false", "no")


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.schema is None:
            args.schema = _project_schema()
        handler = {
            "check": _check,
            "scan": _scan,
            "init": _init,
            "update": _update,
            "fix": _fix,
        }[args.command]
        return handler(args)
    except RatchetConfigError as exc:
        print_stderr(f"configbags ratchet: {exc}")
        return 2


def _project_schema() -> Path:
    """The schema of the project around the working folder (from any subfolder of it), as
    `configbags gen` finds it; the project's ./schema without [tool.configbags]."""
    try:
        project = load_project()
    except ConfigError as exc:
        raise RatchetConfigError(str(exc)) from None
    if not project.configured:
        return project_path("schema")
    return project.schema


def _progress() -> TerminalProgress | None:
    """Progress of a cold scan on a terminal; nothing when stderr is piped or logged."""
    return terminal_progress("ratchet: parsed {done} of {total} files")


def _jobs(args: argparse.Namespace) -> int:
    return default_jobs() if args.jobs is None else args.jobs


def _use_cache(args: argparse.Namespace) -> bool:
    if getattr(args, "no_cache", False):
        return False
    return bool(getattr(args, "cache", False)) or not on_ci()


def _cache(inputs: RatchetInputs, args: argparse.Namespace) -> Path | None:
    return default_cache_path(inputs.project) if _use_cache(args) else None


def _check(args: argparse.Namespace) -> int:
    generated: dict[str, str] = {}
    stale: Failure | None = None
    if args.generated:
        inputs = load_from_generated(args.schema.resolve().parent, args.generated)
        generated = _generated_messages(args.schema, args.generated)
        inputs = attrs.evolve(inputs, source=f"{args.schema.resolve().name}/{RATCHET_FILE}")
        inputs, stale = _declared_now(args, inputs, generated)
    else:
        inputs = load_from_schema(args.schema, cache=_use_cache(args))
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args), jobs=_jobs(args), progress=_progress())
    report = check(
        result,
        inputs.allowlist,
        inputs.accessors,
        allowlist_file=inputs.source,
        min_files=inputs.min_files if args.min_files is None else args.min_files,
        roots=inputs.settings.roots,
        writes=inputs.writes,
        resolution=inputs.resolution,
        policies=inputs.policies,
        env_leaves=inputs.env_leaves,
        **generated,
    )
    if stale is not None:
        report = attrs.evolve(report, failures=(stale, *report.failures))
    print(report.render())
    return 0 if report.ok else 1


def _declared_now(
    args: argparse.Namespace, inputs: RatchetInputs, generated: Mapping[str, str]
) -> tuple[RatchetInputs, Failure | None]:
    """`check --generated` beside the schema it was generated from: the variables the
    namespace files declare now are held too (a copy made before a new `env:` would pass
    raw reads of it), and a copy whose declared variables differ from the schema's is
    stale, a failure naming the command that copies them again. Without the schema
    folder (a deployed package) the copy is all there is."""
    schema = args.schema
    if (schema / RATCHET_FILE).is_file():
        current = dict(load_from_schema(schema, cache=_use_cache(args)).env_leaves)
    elif (schema / "namespaces").is_dir():
        current = declared_env(schema)
    else:
        return inputs, None
    copied = dict(inputs.env_leaves)
    if current == copied:
        return inputs, None
    changes = [
        *(f"{name} (leaf {current[name]}) is declared but not in the copy" for name in sorted(current.keys() - copied.keys())),
        *(f"{name} is in the copy but no longer declared" for name in sorted(copied.keys() - current.keys())),
        *(f"{name} sets leaf {current[name]}, not {copied[name]}" for name in sorted(current.keys() & copied.keys())
          if current[name] != copied[name]),
    ]
    env_leaves = {**copied, **current}
    inputs = attrs.evolve(
        inputs, env_leaves=env_leaves, settings=attrs.evolve(inputs.settings, env_vars=tuple(sorted(env_leaves)))
    )
    stale = Failure(
        "stale_generated",
        f"{generated['generated']} is stale: its declared environment variables (ENV_LEAVES) are not "
        f"those of {display_path(schema / 'namespaces', inputs.project)}: {'; '.join(changes)}. This check holds the reads of "
        f"both; run `{generated['regenerate']}` to copy the declarations again.",
    )
    return inputs, stale


def _generated_messages(schema: Path, package: str) -> dict[str, str]:
    """check()'s `generated` and `regenerate` for `check --generated PKG`: the module the
    lists came from (loaded by load_from_generated) and the gen command that copies
    ratchet.yaml into it again."""
    from configbags.migrate.targets import gen_command

    name = package if package.endswith("ratchet_allowlist") else f"{package}.ratchet_allowlist"
    file = generated_module_file(schema.resolve().parent, name) or getattr(sys.modules.get(name), "__file__", None)
    out = Path(file).parent if file else None
    return {"generated": name, "regenerate": gen_command(schema, out)}


def _scan(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema, cache=_use_cache(args))
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args), jobs=_jobs(args), progress=_progress())
    for read in result.reads:
        print(f"{read.file}:{read.line}: {read.function}: read {read.leaf} ({read.via}, {read.form})")
    for violation in result.violations:
        print(f"{violation.file}:{violation.line}: {violation.function}: {violation.kind}: {violation.detail}")
    for problem in result.problems:
        print(f"{problem.file}: not scanned: {problem.reason}")
    for folder in result.skipped_folders:
        print(f"{folder}: not scanned: a folder of other people's code or a tool's files (give it as a root to scan it)")
    print(
        f"{len(result.files)} files listed, {result.files_parsed} scanned "
        f"({result.files_from_cache} from cache, {result.files_generated} generated skipped), "
        f"{len(result.reads)} reads, {len(result.violations)} violations, "
        f"{len(result.problems)} unreadable"
    )
    return 0


def _root_setting(root: Path, project: Path) -> str:
    """A root as ratchet.yaml keeps it: project-relative when inside, else absolute. A
    relative `root` is taken from the project, like every ratchet path."""
    resolved = (root if root.is_absolute() else project / root).resolve()
    try:
        return resolved.relative_to(project).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


def _path_setting(given: str, project: Path) -> str:
    """An --exclude pattern (or a --resolution file) as ratchet.yaml keeps it and the scan
    names files: taken from the project, then project-relative when inside it, else
    absolute (`../engine/x.py` from a schema beside the engine)."""
    base = project.resolve()
    return display_path(base / given, base)


def _resolution_setting(given: str, project: Path) -> str:
    """A --resolution [FILE:]QUALNAME with FILE as the scan names it."""
    file, sep, qualname = given.rpartition(":")
    return f"{_path_setting(file, project)}:{qualname}" if sep and file else given


def _init(args: argparse.Namespace) -> int:
    schema: Path = args.schema.resolve()
    project = schema.parent
    path = schema / RATCHET_FILE
    previous = read_ratchet_yaml(path) if path.exists() else {}
    scan = previous.get("scan") or {}
    defaults = ScanSettings()

    def merged(key: str, given: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*(scan.get(key) or ()), *given]))

    for root in args.root:
        if not (root if root.is_absolute() else project / root).exists():
            raise RatchetConfigError(
                f"--root {root}: no such file or folder under {project}: ratchet paths (--root, "
                f"--exclude, --resolution, --only and the paths in {RATCHET_FILE}) are relative to "
                f"{PATHS_BASE}, or absolute"
            )
    settings = ScanSettings(
        roots=tuple(dict.fromkeys(_root_setting(root, project) for root in args.root)),
        excludes=merged("excludes", [_path_setting(e, project) for e in args.exclude]),
        raw_accessor=str(scan.get("raw_accessor") or defaults.raw_accessor),
        record_class=str(scan.get("record_class") or defaults.record_class),
        record_attributes=tuple(scan.get("record_attributes") or defaults.record_attributes),
        record_dicts=merged("record_dicts", args.record_dict),
        env_vars=tuple(declared_env(schema)),
    )
    resolution = merged("resolution", [_resolution_setting(r, project) for r in args.resolution])
    result = scan_tree(project, settings, jobs=_jobs(args), progress=_progress())
    wrong = path_failures(result, resolution, "--exclude/--resolution (with scan: in ratchet.yaml)")
    if wrong:
        raise RatchetConfigError("; ".join(f.message for f in wrong) + f" Nothing was written to {path}.")

    # Keep the reason of an entry that still matches: init must not erase why.
    def kept_reasons(key: str) -> dict[tuple[str, str, str], str]:
        return {
            (str(e.get("file")), str(e.get("function")), str(e.get("leaf"))): str(e.get("reason") or "")
            for e in previous.get(key) or ()
        }

    # A whole-record or unresolved read's one key would hide any new one in the function:
    # its entry counts the reads it allows.
    counts = read_counts(result)

    def baseline(key: str, found: set[tuple[str, str, str]]) -> list[Entry]:
        kept = kept_reasons(key)
        return [
            Entry(*k, kept.get(k) or BASELINE, counts[k] if key == "allowlist" and k[2] in COUNTED_LEAVES else None)
            for k in sorted(found)
        ]

    # An operator readback is not a legacy read to baseline: role code must not use it, so
    # only an entry that already says why (operator code) survives; the rest fail check.
    explicit = {k for k, reason in kept_reasons("allowlist").items() if k[2] in READBACKS and explained(reason)}
    readbacks = [r for r in result.reads if r.leaf in READBACKS and (r.file, r.function, r.leaf) not in explicit]
    found = {(r.file, r.function, r.leaf) for r in result.reads}
    entries = baseline("allowlist", {k for k in found if k[2] not in READBACKS} | (explicit & found))
    writes = baseline("writes", write_keys(result, resolution))
    # YAML cannot spell a byte that is not UTF-8: one entry naming such a file would leave a
    # ratchet.yaml that check, gen and update all refuse
    unnamed = sorted({e.file for e in (*entries, *writes) if unnameable(e.file)})
    if unnamed:
        more = f" (and {len(unnamed) - 1} more)" if len(unnamed) > 1 else ""
        raise RatchetConfigError(
            f"{shown_name(unnamed[0])}{more}: a file name that is not UTF-8, with raw reads or writes to "
            f"baseline, which no entry of {RATCHET_FILE} (UTF-8 YAML) can name; rename it to a UTF-8 name "
            f"(and what imports it), then run init again. Nothing was written to {path}."
        )
    schema.mkdir(parents=True, exist_ok=True)
    # The floor a later scan must reach: kept when the file had one, else what this scan
    # read, up to the default (an engine of three files must not start red)
    from configbags.codegen.model import DEFAULT_MIN_FILES

    min_files = scan.get("min_files")
    floor = int(min_files) if min_files is not None else max(1, min(DEFAULT_MIN_FILES, result.files_parsed))
    text = render_ratchet_yaml(
        settings,
        entries,
        min_files=floor,
        resolution=resolution,
        writes=writes,
    )
    if previous:
        old_reads, old_writes = len(previous.get("allowlist") or ()), len(previous.get("writes") or ())
        print(f"overwrote {path} (it listed {old_reads} reads and {old_writes} writes; reasons still matching are kept)")
    path.write_text(text, encoding="utf-8")
    print(
        f"wrote {path}: {len(entries)} allowlist entries for {len(result.reads)} raw reads and "
        f"{len(writes)} write entries, in {result.files_parsed} files"
    )
    for violation in result.violations:
        if violation.kind not in WRITE_KINDS:
            print(
                f"warning: {violation.file}:{violation.line}: {violation.kind} "
                f"(`{violation.detail}`) cannot be listed; `ratchet check` fails until it is gone"
            )
    for read in sorted(readbacks, key=lambda r: (r.file, r.line, r.col)):
        print(
            f"warning: {read.file}:{read.line}: operator readback {read.leaf} in {read.function} "
            f"is not baselined: role code reads through the accessors, ctx.bag() or "
            f"ctx.snapshot(); `ratchet check` fails until it does, or until an allowlist entry "
            f"says why this is operator code"
        )
    for problem in result.problems:
        print(f"warning: {problem.file}: not scanned: {problem.reason}")
    for file in _record_modules(project, result, settings):
        own_reads = sum(1 for r in result.reads if r.file == file)
        own_writes = sum(1 for v in result.violations if v.file == file and v.kind in WRITE_KINDS)
        print(
            f"warning: {file} defines {settings.record_class}, the record itself: its raw reads "
            f"({own_reads}) and writes ({own_writes}) are in the baseline. Exclude it (--exclude {file}), or name its "
            f"resolution functions (--resolution {file}:{settings.record_class}.__post_init__), "
            f"and run init again"
        )
    print(f"next: run {_gen_hint(args.schema, project, result, settings.roots)} so the generated ratchet_allowlist follows")
    return 0


def _record_modules(project: Path, result: ScanResult, settings: ScanSettings) -> list[str]:
    """The scanned files that define the record class (`class ServerArgs`)."""
    pattern = re.compile(rf"^[ \t]*class[ \t]+{re.escape(settings.record_class)}\b", re.MULTILINE)
    found: list[str] = []
    for file in sorted({r.file for r in result.reads} | {v.file for v in result.violations}):
        try:
            text = (Path(file) if Path(file).is_absolute() else project / file).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if pattern.search(text):
            found.append(file)
    return found


def _gen_hint(schema: Path, project: Path, result: ScanResult, roots: tuple[str, ...]) -> str:
    """How to regenerate after ratchet.yaml changed: the one generated package the scan
    skipped names `--out`; else the hint has a placeholder for it."""
    from configbags.migrate.targets import example_out, gen_hint

    folders = sorted({(project / f).parent for f in result.generated_files})
    out = folders[0] if len(folders) == 1 else None
    example = next((e for e in (example_out(project / r) for r in roots) if e), None)
    return gen_hint(schema, out, example=example)


def _update(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema, cache=_use_cache(args))
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args), jobs=_jobs(args), progress=_progress())
    path = args.schema / RATCHET_FILE
    text = path.read_text(encoding="utf-8")
    removed_all: list[Entry] = []
    lowered = count_keys(result, inputs.allowlist)

    def shrink(
        entry: Entry, stale: set[tuple[str, str, str]], lower: Mapping[tuple[str, str, str], int],
        seen: set[tuple[str, str, str]], repeated: list[Entry],
    ) -> Entry | None:
        key = (entry.file, entry.function, entry.leaf)
        if key in seen:  # a second entry for one key fails check ("keep one"): the first is kept
            repeated.append(entry)
            return None
        seen.add(key)
        if key in stale:
            return None
        return entry._replace(reads=lower[key]) if key in lower else entry

    lowered_all: list[Entry] = []
    for key, stale, lower, listed in (
        ("allowlist", stale_keys(result, inputs.allowlist), lowered, inputs.allowlist),
        ("writes", stale_write_keys(result, inputs.writes, inputs.resolution), {}, inputs.writes),
    ):
        if not stale and not lower and len({(e.file, e.function, e.leaf) for e in listed}) == len(listed):
            continue
        repeated: list[Entry] = []
        text, removed, replaced = edit_allowlist(
            text, lambda e, s=stale, lo=lower, se=set(), r=repeated: shrink(e, s, lo, se, r), key=key  # type: ignore[misc]
        )
        removed_all += removed
        lowered_all += replaced
        for entry in removed:
            what = "entry" if key == "allowlist" else "write entry"
            why = "duplicate" if any(entry is r for r in repeated) else "stale"
            print(f"removed {why} {what}: {entry.file} {entry.function} {entry.leaf}")
        for entry in replaced:
            print(f"lowered the count of entry {entry.file} {entry.function} {entry.leaf} to {entry.reads}")
    if removed_all or lowered_all:
        path.write_text(text, encoding="utf-8")
    lowered_note = f", lowered {len(lowered_all)} counts" if lowered_all else ""
    print(f"ratchet update: removed {len(removed_all)} stale or duplicate entries{lowered_note}")
    hint = _gen_hint(args.schema, inputs.project, result, inputs.settings.roots)
    print(f"next: run {hint} so the generated ratchet_allowlist follows")
    return 0


def _fix(args: argparse.Namespace) -> int:
    # libcst is imported here only: check and scan never pay for it
    from configbags.migrate.fix import fix_tree

    inputs = load_from_schema(args.schema, cache=_use_cache(args))
    only = _only_paths(args.only, inputs) if args.only else None
    leaves = _known_leaves(args.leaf, inputs) if args.leaf else None
    accessors_module, package_folder = _accessors_module(args, inputs, leaves)
    report = fix_tree(
        inputs.project,
        inputs.settings,
        inputs.accessors,
        accessors_module,
        dry_run=args.dry_run,
        rewrite_parameters=args.rewrite_parameters,
        only=only,
        leaves=leaves,
        resolution=inputs.resolution,
        rewrite_writes=args.rewrite_writes,
        policies=inputs.policies,
        structured=_structured_leaves(args.schema),
    )
    print(report.render(dry_run=args.dry_run))
    if args.dry_run:
        return 0
    _record_fix(args.schema / RATCHET_FILE, inputs, report)
    from configbags.migrate.targets import gen_hint

    # the generated ratchet_allowlist is a copy of ratchet.yaml: `check --generated` holds
    # the tree to the old lists until gen runs
    print(f"next: run {gen_hint(args.schema, package_folder)} so the generated ratchet_allowlist follows")
    return 0


def _structured_leaves(schema: Path) -> frozenset[str]:
    """The json leaves with a `structure:` (fix only: it loads the schema with the generator)."""
    from configbags.codegen.errors import SchemaInvalid
    from configbags.codegen.model import load_schema

    try:
        return frozenset(leaf.name for leaf in load_schema(schema).leaves if leaf.structure is not None)
    except SchemaInvalid as exc:
        raise RatchetConfigError(f"{schema}: the schema does not load ({exc}); fix it, then run fix again") from None


def _accessors_module(
    args: argparse.Namespace, inputs: RatchetInputs, leaves: frozenset[str] | None
) -> tuple[str, Path | None]:
    """The accessors module fix imports, and its package's folder when that lies in the
    project (None for an installed one): given, or from [tool.configbags]; refused before
    anything is rewritten when it does not exist (by path, no import) or lacks an
    accessor the rewrite may import."""
    from configbags.migrate.fix import relied_on
    from configbags.migrate.targets import (
        check_defines,
        default_accessors_module,
        find_accessors_module,
        gen_command,
    )

    module = args.accessors_module or default_accessors_module(args.schema, inputs.settings.roots)
    path = find_accessors_module(inputs.project, inputs.settings.roots, module)
    functions = {
        name
        for leaf, expression in inputs.accessors.items()
        if leaves is None or leaf in leaves
        for name in relied_on(expression)
    }
    if args.rewrite_writes:
        functions.add("get_context")
    # an installed module is no place to generate into: then the hint has a placeholder
    inside = path.resolve().is_relative_to(inputs.project.resolve())
    folder = path.parent if inside else None
    check_defines(path, module, functions, gen_command(args.schema, folder))
    return module, folder


def _only_paths(paths: list[str], inputs: RatchetInputs) -> tuple[str, ...] | None:
    """--only paths as the scan names files (project-relative, or absolute outside the
    project); None for the whole project. A path that does not exist, or lies outside the
    scan roots, is refused, naming it: it would silently rewrite nothing."""
    project = inputs.project.resolve()
    roots = inputs.settings.roots
    kept: list[str] = []
    for given in paths:
        if not given.strip():  # Path("") is the project itself: it would widen, not narrow
            raise RatchetConfigError("--only '': an empty path; give the files or folders to rewrite")
        path = Path(given)
        target = path if path.is_absolute() else project / path
        if not target.exists():
            raise RatchetConfigError(
                f"--only {given}: no such file or folder under {project} (--only paths are "
                f"relative to the project, the folder holding the schema, e.g. "
                f"{roots[0] if roots else 'mypkg'}/scheduler.py)"
            )
        rel = _root_setting(target, project)
        if not any(_overlaps(rel, root) for root in roots):
            raise RatchetConfigError(
                f"--only {given}: outside the scan roots {list(roots)} (scan.roots in "
                f"{inputs.source}), so nothing there is rewritten"
            )
        kept.append(rel)
    return None if "." in kept else tuple(kept)


def _overlaps(path: str, root: str) -> bool:
    """Does the tree at `path` share files with the scan root `root` (both as ratchet.yaml
    writes them)?"""
    if root == ".":  # the project: every path inside it
        return not Path(path).is_absolute()
    if path == ".":
        return not Path(root).is_absolute()
    return path == root or path.startswith(root + "/") or root.startswith(path + "/")


def _known_leaves(names: list[str], inputs: RatchetInputs) -> frozenset[str]:
    """--leaf names, each a leaf (or derived value) of the schema; an unknown one is refused
    with the closest name."""
    from configbags.runtime.leaftypes import closest

    unknown = [name for name in names if name not in inputs.accessors]
    if unknown:
        raise RatchetConfigError(
            "; ".join(f"--leaf {name}: no such leaf in the schema{closest(name, inputs.accessors)}" for name in unknown)
        )
    return frozenset(names)


def _record_fix(path: Path, inputs: RatchetInputs, report: FixReport) -> None:
    """The allowlist follows the code: entries for rewritten reads go, and a baseline entry
    for a read that fix refused now says why it stays raw; likewise a write that
    `--rewrite-writes` refused says why in its `writes:` entry."""
    from configbags.migrate.fix import WRITE_NEVER

    result = scan_tree(inputs.project, inputs.settings)
    stale = stale_keys(result, inputs.allowlist)
    reasons: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    write_reasons: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for skip in report.skipped:
        if skip.write and skip.reason == WRITE_NEVER:
            continue  # a write never rewritten (no --rewrite-writes) says nothing its entry does not
        table = write_reasons if skip.write else reasons
        key = (skip.file, skip.function, skip.leaf)
        if skip.reason not in table[key]:
            table[key].append(skip.reason)

    def decider(
        why: Mapping[tuple[str, str, str], list[str]], gone: set[tuple[str, str, str]]
    ) -> Callable[[Entry], Entry | None]:
        def decide(entry: Entry) -> Entry | None:
            key = (entry.file, entry.function, entry.leaf)
            if key in gone:
                return None
            # A reason fix wrote itself (or the baseline) is refreshed; a person's is kept.
            if (entry.reason == BASELINE or entry.reason.startswith(FIX_REFUSED)) and why.get(key):
                return entry._replace(reason=FIX_REFUSED + "; ".join(why[key]))
            return entry

        return decide

    text, removed, replaced = edit_allowlist(path.read_text(encoding="utf-8"), decider(reasons, stale))
    # writes turned into overrides leave their baseline entries stale
    stale_writes = stale_write_keys(result, inputs.writes, inputs.resolution)
    removed_writes: list[Entry] = []
    replaced_writes: list[Entry] = []
    if stale_writes or write_reasons:
        text, removed_writes, replaced_writes = edit_allowlist(
            text, decider(write_reasons, stale_writes), key="writes"
        )
    if removed or replaced or removed_writes or replaced_writes:
        path.write_text(text, encoding="utf-8")
    print(
        f"{path}: removed {len(removed)} entries for rewritten reads"
        + (f" and {len(removed_writes)} for rewritten writes" if removed_writes else "")
        + f", gave {len(replaced)} refused reads their reason"
        + (f" and {len(replaced_writes)} refused writes theirs" if replaced_writes else "")
    )
