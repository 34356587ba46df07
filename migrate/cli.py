"""`configbags ratchet check|scan|init|update|fix`.

Paths: `--schema DIR` (default `./schema`) names the schema folder; its parent is the
project root, to which scan roots and allowlist paths are relative. `check` can instead
hold the tree to the generated allowlist module (`--generated generated`).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import attrs

from configbags.codegen.model import AllowEntry
from configbags.migrate.check import check, stale_keys
from configbags.migrate.fix import fix_tree
from configbags.migrate.scan import ScanSettings, default_cache_path, scan_tree
from configbags.migrate.settings import (
    RATCHET_FILE,
    RatchetConfigError,
    RatchetInputs,
    edit_allowlist,
    load_from_generated,
    load_from_schema,
    read_ratchet_yaml,
    render_ratchet_yaml,
)

BASELINE = "baseline"
FIX_REFUSED = "fix refused: "


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="configbags ratchet", description="Hold raw ServerArgs reads to an allowlist."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--schema", type=Path, default=Path("schema"), help="schema folder")
        return sub

    check_cmd = command("check", "fail on any raw read not allowlisted, and on stale entries")
    check_cmd.add_argument(
        "--generated",
        metavar="PKG",
        help="read settings, allowlist and accessors from PKG.ratchet_allowlist instead",
    )
    check_cmd.add_argument("--min-files", type=int, help="fewest files the scan must read")
    check_cmd.add_argument("--no-cache", action="store_true", help="ignore the scan cache")

    scan_cmd = command("scan", "list every raw read, write and unreadable file")
    scan_cmd.add_argument("--no-cache", action="store_true", help="ignore the scan cache")

    init_cmd = command("init", "write a baseline allowlist listing every current read")
    init_cmd.add_argument("--root", type=Path, action="append", required=True, help="tree to scan")
    init_cmd.add_argument("--exclude", action="append", default=[], help="glob to leave out")

    command("update", "remove stale allowlist entries (never adds any)")

    fix_cmd = command("fix", "rewrite raw reads to the generated accessors")
    fix_cmd.add_argument(
        "--accessors-module",
        default="configbags.generated.accessors",
        help="import path of the generated accessors (default: configbags.generated.accessors)",
    )
    fix_cmd.add_argument("--dry-run", action="store_true", help="report, change nothing")
    fix_cmd.add_argument(
        "--rewrite-parameters",
        action="store_true",
        help="also rewrite reads of a held record (server_args: ServerArgs parameters, "
        "self.server_args): say so only when the tree has one record per process, with no "
        "runner (e.g. a draft model) holding its own",
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


def _cache(inputs: RatchetInputs, args: argparse.Namespace) -> Path | None:
    return None if getattr(args, "no_cache", False) else default_cache_path(inputs.project)


def _check(args: argparse.Namespace) -> int:
    if args.generated:
        inputs = load_from_generated(args.schema.resolve().parent, args.generated)
    else:
        inputs = load_from_schema(args.schema)
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args))
    report = check(
        result,
        inputs.allowlist,
        inputs.accessors,
        allowlist_file=inputs.source,
        min_files=inputs.min_files if args.min_files is None else args.min_files,
        roots=inputs.settings.roots,
    )
    print(report.render())
    return 0 if report.ok else 1


def _scan(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema)
    result = scan_tree(inputs.project, inputs.settings, cache_path=_cache(inputs, args))
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


def _init(args: argparse.Namespace) -> int:
    schema: Path = args.schema.resolve()
    project = schema.parent
    path = schema / RATCHET_FILE
    previous = read_ratchet_yaml(path) if path.exists() else {}
    scan = previous.get("scan") or {}
    roots: list[str] = []
    for root in args.root:
        try:
            roots.append(root.resolve().relative_to(project).as_posix())
        except ValueError as exc:
            raise RatchetConfigError(f"--root {root} is not inside the project {project}") from exc
    defaults = ScanSettings()
    settings = ScanSettings(
        roots=tuple(roots),
        excludes=tuple(dict.fromkeys([*(scan.get("excludes") or ()), *args.exclude])),
        raw_accessor=str(scan.get("raw_accessor") or defaults.raw_accessor),
        record_class=str(scan.get("record_class") or defaults.record_class),
        record_attributes=tuple(scan.get("record_attributes") or defaults.record_attributes),
    )
    result = scan_tree(project, settings)
    # Keep the reason of an entry that still matches a read: init must not erase why.
    kept = {
        (str(e.get("file")), str(e.get("function")), str(e.get("leaf"))): str(e.get("reason") or "")
        for e in previous.get("allowlist") or ()
    }
    keys = sorted({(r.file, r.function, r.leaf) for r in result.reads})
    entries = [AllowEntry(*key, kept.get(key) or BASELINE) for key in keys]
    schema.mkdir(parents=True, exist_ok=True)
    min_files = scan.get("min_files")
    text = render_ratchet_yaml(settings, entries, min_files=None if min_files is None else int(min_files))
    path.write_text(text, encoding="utf-8")
    print(
        f"wrote {path}: {len(entries)} allowlist entries for {len(result.reads)} raw reads in "
        f"{result.files_parsed} files"
    )
    for violation in result.violations:
        print(
            f"warning: {violation.file}:{violation.line}: {violation.kind} "
            f"(`{violation.detail}`) cannot be allowlisted; `ratchet check` fails until it is gone"
        )
    for problem in result.problems:
        print(f"warning: {problem.file}: not scanned: {problem.reason}")
    return 0


def _update(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema)
    result = scan_tree(inputs.project, inputs.settings, cache_path=default_cache_path(inputs.project))
    stale = stale_keys(result, inputs.allowlist)
    path = args.schema / RATCHET_FILE
    text, removed, _ = edit_allowlist(
        path.read_text(encoding="utf-8"),
        lambda e: None if (e.file, e.function, e.leaf) in stale else e,
    )
    if removed:
        path.write_text(text, encoding="utf-8")
    for entry in removed:
        print(f"removed stale entry: {entry.file} {entry.function} {entry.leaf}")
    print(f"ratchet update: removed {len(removed)} stale entries; run `configbags gen` to regenerate")
    return 0


def _fix(args: argparse.Namespace) -> int:
    inputs = load_from_schema(args.schema)
    report = fix_tree(
        inputs.project,
        inputs.settings,
        inputs.accessors,
        args.accessors_module,
        dry_run=args.dry_run,
        rewrite_parameters=args.rewrite_parameters,
    )
    print(report.render())
    if args.dry_run:
        return 0
    # The allowlist follows the code: entries for rewritten reads go, and a baseline entry
    # for a read that fix refused now says why it stays raw.
    result = scan_tree(inputs.project, inputs.settings)
    stale = stale_keys(result, inputs.allowlist)
    reasons: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for skip in report.skipped:
        key = (skip.file, skip.function, skip.leaf)
        if skip.reason not in reasons[key]:
            reasons[key].append(skip.reason)

    def decide(entry: AllowEntry) -> AllowEntry | None:
        key = (entry.file, entry.function, entry.leaf)
        if key in stale:
            return None
        # A reason fix wrote itself (or the baseline) is refreshed; a person's is kept.
        if (entry.reason == BASELINE or entry.reason.startswith(FIX_REFUSED)) and reasons.get(key):
            return attrs.evolve(entry, reason=FIX_REFUSED + "; ".join(reasons[key]))
        return entry

    path = args.schema / RATCHET_FILE
    text, removed, replaced = edit_allowlist(path.read_text(encoding="utf-8"), decide)
    if removed or replaced:
        path.write_text(text, encoding="utf-8")
    print(
        f"{path}: removed {len(removed)} entries for rewritten reads, "
        f"gave {len(replaced)} refused reads their reason"
    )
    return 0
