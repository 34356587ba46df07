"""`configbags ratchet check|scan|init|update|fix`.

Paths: `--schema DIR` (default `./schema`) names the schema folder; its parent is the
project root, to which scan roots and allowlist paths are relative (a root outside it is
kept absolute). `check` can instead hold the tree to the generated allowlist module
(`--generated generated`).

Speed: `check` and `scan` import neither libcst (only `fix` rewrites) nor the generator
(the schema's ratchet inputs are cached, see configbags.migrate.settings).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from configbags.migrate.check import (
    BASELINE,
    FIX_REFUSED,
    check,
    explained,
    stale_keys,
    stale_write_keys,
    write_keys,
)
from configbags.migrate.scan import ScanSettings, default_cache_path, default_jobs, scan_tree
from configbags.migrate.scanmodel import READBACKS, WRITE_KINDS, Entry
from configbags.migrate.settings import (
    RATCHET_FILE,
    RatchetConfigError,
    RatchetInputs,
    declared_env,
    edit_allowlist,
    load_from_generated,
    load_from_schema,
    read_ratchet_yaml,
    render_ratchet_yaml,
)

if TYPE_CHECKING:
    from configbags.migrate.fix import FixReport

__all__ = ["BASELINE", "FIX_REFUSED", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="configbags ratchet",
        description="Hold raw ServerArgs reads and writes, raw reads of declared environment "
        "variables and operator readbacks in role code to an allowlist.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--schema", type=Path, default=Path("schema"), help="schema folder")
        sub.add_argument(
            "--jobs", type=int, default=None, metavar="N",
            help="processes that parse files the cache lacks (default: the CPUs, at most 8)",
        )
        return sub

    check_cmd = command("check", "fail on any raw read or write not listed, and on stale entries")
    check_cmd.add_argument(
        "--generated",
        metavar="PKG",
        help="read settings, allowlist and accessors from PKG.ratchet_allowlist instead",
    )
    check_cmd.add_argument("--min-files", type=int, help="fewest files the scan must read")
    check_cmd.add_argument("--no-cache", action="store_true", help="ignore the scan cache")

    scan_cmd = command("scan", "list every raw read, write and unreadable file")
    scan_cmd.add_argument("--no-cache", action="store_true", help="ignore the scan cache")

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
        default="configbags.generated.accessors",
        help="import path of the generated accessors (default: configbags.generated.accessors)",
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


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        handler = {
            "check": _check,
            "scan": _scan,
            "init": _init,
            "update": _update,
            "fix": _fix,
        }[args.command]
        return handler(args)
    except RatchetConfigError as exc:
        print(f"configbags ratchet: {exc}", file=sys.stderr)
        return 2


def _jobs(args: argparse.Namespace) -> int:
    return default_jobs() if args.jobs is None else max(1, args.jobs)


def _cache(inputs: RatchetInputs, args: argparse.Namespace) -> Path | None:
    return None if getattr(args, "no_cache", False) else default_cache_path(inputs.project)


def _check(args: argparse.Namespace) -> int:
    if args.generated:
        inputs = load_from_generated(args.schema.resolve().parent, args.generated)
    else:
        inputs = load_from_schema(args.schema)
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args), jobs=_jobs(args))
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
    )
    print(report.render())
    return 0 if report.ok else 1


def _scan(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema)
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args), jobs=_jobs(args))
    for read in result.reads:
        print(f"{read.file}:{read.line}: {read.function}: read {read.leaf} ({read.via}, {read.form})")
    for violation in result.violations:
        print(f"{violation.file}:{violation.line}: {violation.function}: {violation.kind}: {violation.detail}")
    for problem in result.problems:
        print(f"{problem.file}: not scanned: {problem.reason}")
    print(
        f"{len(result.files)} files listed, {result.files_parsed} scanned "
        f"({result.files_from_cache} from cache, {result.files_generated} generated skipped), "
        f"{len(result.reads)} reads, {len(result.violations)} violations, "
        f"{len(result.problems)} unreadable"
    )
    return 0


def _root_setting(root: Path, project: Path) -> str:
    """A root as ratchet.yaml keeps it: project-relative when inside, else absolute."""
    resolved = root.resolve()
    try:
        return resolved.relative_to(project).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


def _init(args: argparse.Namespace) -> int:
    schema: Path = args.schema.resolve()
    project = schema.parent
    path = schema / RATCHET_FILE
    previous = read_ratchet_yaml(path) if path.exists() else {}
    scan = previous.get("scan") or {}
    defaults = ScanSettings()

    def merged(key: str, given: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*(scan.get(key) or ()), *given]))

    settings = ScanSettings(
        roots=tuple(dict.fromkeys(_root_setting(root, project) for root in args.root)),
        excludes=merged("excludes", args.exclude),
        raw_accessor=str(scan.get("raw_accessor") or defaults.raw_accessor),
        record_class=str(scan.get("record_class") or defaults.record_class),
        record_attributes=tuple(scan.get("record_attributes") or defaults.record_attributes),
        record_dicts=merged("record_dicts", args.record_dict),
        env_vars=tuple(declared_env(schema)),
    )
    resolution = merged("resolution", args.resolution)
    result = scan_tree(project, settings, jobs=_jobs(args))

    # Keep the reason of an entry that still matches: init must not erase why.
    def kept_reasons(key: str) -> dict[tuple[str, str, str], str]:
        return {
            (str(e.get("file")), str(e.get("function")), str(e.get("leaf"))): str(e.get("reason") or "")
            for e in previous.get(key) or ()
        }

    def baseline(key: str, found: set[tuple[str, str, str]]) -> list[Entry]:
        kept = kept_reasons(key)
        return [Entry(*k, kept.get(k) or BASELINE) for k in sorted(found)]

    # An operator readback is not a legacy read to baseline: role code must not use it, so
    # only an entry that already says why (operator code) survives; the rest fail check.
    explicit = {k for k, reason in kept_reasons("allowlist").items() if k[2] in READBACKS and explained(reason)}
    readbacks = [r for r in result.reads if r.leaf in READBACKS and (r.file, r.function, r.leaf) not in explicit]
    found = {(r.file, r.function, r.leaf) for r in result.reads}
    entries = baseline("allowlist", {k for k in found if k[2] not in READBACKS} | (explicit & found))
    writes = baseline("writes", write_keys(result, resolution))
    schema.mkdir(parents=True, exist_ok=True)
    min_files = scan.get("min_files")
    text = render_ratchet_yaml(
        settings,
        entries,
        min_files=None if min_files is None else int(min_files),
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
    print(f"next: run `configbags gen --schema {args.schema}` so the generated ratchet_allowlist follows")
    return 0


def _update(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema)
    result = scan_tree(
        inputs.project, inputs.settings, cache_path=default_cache_path(inputs.project), jobs=_jobs(args)
    )
    path = args.schema / RATCHET_FILE
    text = path.read_text(encoding="utf-8")
    removed_all: list[Entry] = []
    for key, stale in (
        ("allowlist", stale_keys(result, inputs.allowlist)),
        ("writes", stale_write_keys(result, inputs.writes, inputs.resolution)),
    ):
        if not stale:
            continue
        text, removed, _ = edit_allowlist(
            text, lambda e, s=stale: None if (e.file, e.function, e.leaf) in s else e, key=key  # type: ignore[misc]
        )
        removed_all += removed
        for entry in removed:
            what = "entry" if key == "allowlist" else "write entry"
            print(f"removed stale {what}: {entry.file} {entry.function} {entry.leaf}")
    if removed_all:
        path.write_text(text, encoding="utf-8")
    print(f"ratchet update: removed {len(removed_all)} stale entries; run `configbags gen` to regenerate")
    return 0


def _fix(args: argparse.Namespace) -> int:
    # libcst is imported here only: check and scan never pay for it
    from configbags.migrate.fix import fix_tree

    inputs = load_from_schema(args.schema)
    report = fix_tree(
        inputs.project,
        inputs.settings,
        inputs.accessors,
        args.accessors_module,
        dry_run=args.dry_run,
        rewrite_parameters=args.rewrite_parameters,
        only=tuple(args.only) if args.only else None,
        leaves=frozenset(args.leaf) if args.leaf else None,
        resolution=inputs.resolution,
        rewrite_writes=args.rewrite_writes,
        policies=inputs.policies,
    )
    print(report.render(dry_run=args.dry_run))
    if args.dry_run:
        return 0
    _record_fix(args.schema / RATCHET_FILE, inputs, report)
    return 0


def _record_fix(path: Path, inputs: RatchetInputs, report: FixReport) -> None:
    """The allowlist follows the code: entries for rewritten reads go, and a baseline entry
    for a read that fix refused now says why it stays raw."""
    result = scan_tree(inputs.project, inputs.settings)
    stale = stale_keys(result, inputs.allowlist)
    reasons: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for skip in report.skipped:
        key = (skip.file, skip.function, skip.leaf)
        if skip.reason not in reasons[key]:
            reasons[key].append(skip.reason)

    def decide(entry: Entry) -> Entry | None:
        key = (entry.file, entry.function, entry.leaf)
        if key in stale:
            return None
        # A reason fix wrote itself (or the baseline) is refreshed; a person's is kept.
        if (entry.reason == BASELINE or entry.reason.startswith(FIX_REFUSED)) and reasons.get(key):
            return entry._replace(reason=FIX_REFUSED + "; ".join(reasons[key]))
        return entry

    text, removed, replaced = edit_allowlist(path.read_text(encoding="utf-8"), decide)
    # writes turned into overrides leave their baseline entries stale
    stale_writes = stale_write_keys(result, inputs.writes, inputs.resolution)
    removed_writes: list[Entry] = []
    if stale_writes:
        text, removed_writes, _ = edit_allowlist(
            text, lambda e: None if (e.file, e.function, e.leaf) in stale_writes else e, key="writes"
        )
    if removed or replaced or removed_writes:
        path.write_text(text, encoding="utf-8")
    print(
        f"{path}: removed {len(removed)} entries for rewritten reads"
        + (f" and {len(removed_writes)} for rewritten writes" if removed_writes else "")
        + f", gave {len(replaced)} refused reads their reason"
    )
