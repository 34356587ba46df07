"""`configbags audit`: learn which namespaces each process role reads, and turn the evidence
into an audit record for `schema/roles.yaml`.

    configbags audit record [--out FILE] [--append] -- CMD ...
    configbags audit report FILES... [--workload TEXT] [--date YYYY-MM-DD]

`record` runs CMD with `CONFIGBAGS_ROLE_NAMESPACES=record` and
`CONFIGBAGS_ROLE_NAMESPACES_OUT=FILE` (inherited by every process CMD starts), then prints
what the roles read. `report` reads one or more such files (JSON lines written by
`configbags.runtime.roles.Recorder`) and prints, per role, the declared set next to the observed one,
then proposes audit records as YAML to paste under each role's `audits:`.

The proposal never narrows a declared set: a record-mode run only shows what one workload
touched, and a namespace it did not touch may still be read by a shape it did not exercise
(the 2026-08-06 tokenizer audit in schema/roles.yaml observed exactly {serving}, yet
multimodal, LoRA, disaggregated and gRPC shapes were not covered, so the full set stayed). Narrowing `reads`
is a human edit of `schema/roles.yaml` followed by `make gen`; this command only writes to
stdout (and, for `record`, the observation file).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from configbags.packages import load_context, named_context
from configbags.runtime import roles as role_modes
from configbags.runtime.cliflags import secret_flags, secret_variables, shown_argv
from configbags.runtime.cmdline import UsageErrors, inert, print_stderr
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import load_project, project_path
from configbags.runtime.roles import RAW_RECORD

# A line `audit record` writes before running the command, so `report` can default the
# workload to the command line that produced the observations.
RUN_EVENT = "run"

KEEP = "keep declared set"
SHOWN_CHARS = 80  # of a role or namespace name from an observation file, in the report


@attrs.frozen
class RoleObservation:
    """What one role did across every process and file of a run."""

    role: str
    observed: frozenset[str]
    pids: frozenset[int]
    published: bool  # a publish marker was seen (the role ran, even if it read nothing)


@attrs.frozen
class Observations:
    roles: Mapping[str, RoleObservation]
    commands: tuple[str, ...]  # from `run` events, in file order
    dates: tuple[str, ...]
    skipped: tuple[str, ...]  # "FILE:LINE: why" for lines that could not be read


def _shown(name: str) -> str:
    """A name from an observation file as the report prints it: escaped (no forged line)
    and cut short."""
    text = inert(name)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}...({len(name)} characters)"


def load(paths: Iterable[str | Path], namespaces: Collection[str] | None = None) -> Observations:
    """Read observation files. A line cut short (a process killed mid-write) or an unknown
    event is skipped and reported, not fatal: the rest of the evidence still counts. Every
    process of the recorded run may append to the file, so a read of a name that is not
    one of `namespaces` (the schema's top-level namespaces; None: any) is skipped and
    reported too, never counted as observed."""
    observed: dict[str, set[str]] = {}
    pids: dict[str, set[int]] = {}
    published: set[str] = set()
    commands: list[str] = []
    dates: list[str] = []
    skipped: list[str] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text, so not an observation file (audit record writes JSON "
                              f"lines); give the file it wrote") from None
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                skipped.append(f"{path}:{lineno}: not a JSON line")
                continue
            kind = event.get("event") if isinstance(event, dict) else None
            if kind == RUN_EVENT:
                commands.append(str(event.get("command", "")))
                dates.append(str(event.get("date", "")))
                continue
            role = event.get("role") if isinstance(event, dict) else None
            if kind not in ("publish", "read") or not isinstance(role, str):
                skipped.append(f"{path}:{lineno}: not a publish/read event")
                continue
            observed.setdefault(role, set())
            if isinstance(event.get("pid"), int):
                pids.setdefault(role, set()).add(event["pid"])
            if kind == "publish":
                published.add(role)
            elif isinstance(event.get("namespace"), str):
                namespace = event["namespace"]
                if namespaces is None or namespace == RAW_RECORD or namespace in namespaces:
                    observed[role].add(namespace)
                else:
                    skipped.append(f"{path}:{lineno}: namespace '{_shown(namespace)}' is not a top-level namespace "
                                   f"of the schema (not counted)")
            else:
                skipped.append(f"{path}:{lineno}: read event without a namespace")
    roles = {
        role: RoleObservation(role, frozenset(ns), frozenset(pids.get(role, ())), role in published)
        for role, ns in sorted(observed.items())
    }
    return Observations(roles, tuple(commands), tuple(dates), tuple(skipped))


@attrs.frozen
class RoleReport:
    role: str
    declared: frozenset[str] | None  # None: the role is not in schema/roles.yaml
    observed: frozenset[str]
    processes: int
    everything: frozenset[str] = frozenset()  # every namespace any role declares

    @property
    def raw(self) -> bool:
        """Whether the role read the raw record, which can reach any namespace."""
        return RAW_RECORD in self.observed

    @property
    def namespaces(self) -> frozenset[str]:
        return self.observed - {RAW_RECORD}

    @property
    def uncovered(self) -> frozenset[str]:
        """Declared but not read by this workload: candidates to review, not to drop. A raw
        record read may have touched any of them, so then nothing counts as uncovered."""
        return frozenset() if self.raw else (self.declared or frozenset()) - self.namespaces

    @property
    def outside(self) -> frozenset[str]:
        """Read but not declared: enforce mode would refuse these reads (the raw record
        too, unless the role declares every namespace)."""
        declared = self.declared or frozenset()
        raw_refused = self.raw and not declared >= self.everything
        return (self.namespaces - declared) | ({RAW_RECORD} if raw_refused else frozenset())

    @property
    def decision(self) -> str:
        """Proposed decision text. Every branch keeps the declared set."""
        if self.declared is None:
            return (
                f"role {self.role!r} is not in schema/roles.yaml; add it with a declared set "
                f"before recording audits for it"
            )
        parts = [KEEP]
        if self.raw:
            parts.append(
                "it read the raw record (get_server_args), which counts as every namespace: "
                "migrate those reads to accessors before narrowing"
            )
        if self.outside:
            parts.append(
                f"this workload read {_braces(self.outside)} outside it, which enforce mode "
                f"refuses: move those reads to a role that declares them, or widen `reads` with "
                f"this record as evidence"
            )
        if self.uncovered:
            parts.append("review uncovered before narrowing")
        else:
            parts.append("every declared namespace was observed")
        return "; ".join(parts)

    def audit_record(self, *, date: str, workload: str) -> dict[str, Any]:
        """An audit record in the shape codegen/meta/roles.schema.json requires."""
        return {
            "date": date,
            "workload": workload,
            # a raw-record read may have reached any namespace, so it counts as all of them
            "observed": sorted(self.everything | self.namespaces if self.raw else self.namespaces),
            "uncovered": sorted(self.uncovered),
            "decision": self.decision,
        }


def build_reports(
    observations: Observations, declared: Mapping[str, frozenset[str]] | None = None
) -> list[RoleReport]:
    declared = _declared_sets(declared)
    everything = frozenset().union(*declared.values())
    return [
        RoleReport(role, declared.get(role), obs.observed, len(obs.pids), everything)
        for role, obs in sorted(observations.roles.items())
    ]


def _braces(names: Iterable[str]) -> str:
    return "{" + ", ".join(map(_shown, sorted(names))) + "}"


def render_roles(reports: Sequence[RoleReport]) -> str:
    """Per role, the declared set next to the observed one."""
    blocks = []
    for r in reports:
        n = r.processes
        lines = [f"{_shown(r.role)} ({n} process{'es' if n != 1 else ''})"]
        if r.declared is None:
            lines.append("  declared:  (not in schema/roles.yaml)")
        else:
            lines.append(f"  declared:  {_braces(r.declared)}")
        lines.append(f"  observed:  {_braces(r.observed)}")
        if r.declared is not None:
            lines.append(f"  uncovered: {_braces(r.uncovered)}")
        if r.outside and r.declared is not None:
            lines.append(f"  outside the declared set (enforce mode refuses): {_braces(r.outside)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


class _Dumper(yaml.SafeDumper):
    """Indent list items under their key, as schema/roles.yaml is written."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render_proposal(reports: Sequence[RoleReport], *, date: str, workload: str) -> str:
    body = {
        "roles": {
            r.role: {"audits": [r.audit_record(date=date, workload=workload)]}
            for r in reports
            if r.declared is not None
        }
    }
    head = (
        "# Proposed audit records for schema/roles.yaml: review, then append each record to\n"
        "# that role's `audits:` list. Declared `reads` sets are left as they are; narrowing\n"
        "# one is a human decision (edit schema/roles.yaml, then make gen).\n"
    )
    # One line per key (no wrapping) so a record pastes cleanly.
    text: str = yaml.dump(body, Dumper=_Dumper, sort_keys=False, default_flow_style=None,
                          width=1 << 16)
    return head + text


def report(
    paths: Sequence[str | Path],
    *,
    workload: str | None = None,
    date: str | None = None,
    declared: Mapping[str, frozenset[str]] | None = None,
    namespaces: Collection[str] | None = None,
) -> str:
    """The whole `audit report` text for observation files `paths`, against the declared
    sets and top-level `namespaces` of the project's package (given `declared` without
    `namespaces`: the namespaces the sets name)."""
    if declared is None:
        declared, namespaces = schema_sets(load_project().require_package())
    all_declared = declared
    observations = load(paths, frozenset().union(*declared.values()) if namespaces is None else namespaces)
    reports = build_reports(observations, declared)
    if workload is None:
        commands = sorted(set(observations.commands))
        workload = (
            "record-mode run of: " + " | ".join(commands)
            if commands
            else "unspecified workload (pass --workload to describe it)"
        )
    if date is None:
        dates = sorted({d for d in observations.dates if d})
        date = dates[-1] if dates else dt.date.today().isoformat()
    # the workload (and the commands it defaults to) is outside text: one line, escaped; the
    # YAML record below quotes it
    out = [f"role reads from {len(paths)} file(s); workload: {inert(workload)}", ""]
    if reports:
        out.append(render_roles(reports))
    else:
        out.append("no role published in these files (was the command run in record mode?)")
    missing = sorted(set(all_declared) - set(observations.roles))
    if missing:
        out += ["", f"roles that did not publish in this run (no evidence either way): "
                    f"{', '.join(missing)}"]
    for line in observations.skipped:
        out.append(inert(f"skipped {line}"))
    if reports:
        out += ["", render_proposal(reports, date=date, workload=workload).rstrip()]
    return "\n".join(out) + "\n"


def _declared_sets(declared: Mapping[str, frozenset[str]] | None) -> Mapping[str, frozenset[str]]:
    if declared is not None:
        return declared
    return declared_sets(load_project().require_package())


def declared_sets(package: str) -> Mapping[str, frozenset[str]]:
    """The declared role sets of a generated package (its `role_audit` module), imported as
    every operator command imports the package (from the project when not installed)."""
    return schema_sets(package)[0]


def schema_sets(package: str) -> tuple[Mapping[str, frozenset[str]], frozenset[str]]:
    """A generated package's declared role sets and its top-level namespaces."""
    context = load_context(package)
    module = importlib.import_module(f"{package}.role_audit")
    sets: Mapping[str, frozenset[str]] = module.ROLE_NAMESPACE_SETS
    return sets, frozenset(context.registry.top_level)


def shown_command(command: Sequence[str], package: str | None) -> str:
    """The command line as the observation file keeps it, shared with reviewers: the words
    of `shown_words`, each that would not read back as one shell word (a `sh -c` script,
    a word with a space or a quote) quoted, so the line says what ran."""
    return " ".join(word if _BARE.fullmatch(word) else shlex.quote(word) for word in shown_words(command, package))


# a word shown bare: it reads back as itself (the `<redacted>` placeholder among them)
_BARE = re.compile(r"[^\s'\"\\;&|()`$*?#~]+")


def shown_words(command: Sequence[str], package: str | None) -> list[str]:
    """The command's words as given, one redaction rule per word (`shown_argv`): the value
    of a secret flag (by the package's schema, and any flag named like a key, token,
    secret or password: a mistyped `--api_key K` too) and of an assignment to a secret's
    variable (`env SGLANG_API_KEY=K ...`, by the schema or by its name) reads REDACTED, in
    a shell command given as one argument (`sh -c "..."`) too, where the script is kept as
    written but for the words holding a secret."""
    flags: frozenset[str] = frozenset()
    variables: frozenset[str] = frozenset()
    try:
        registry = named_context(package).registry
        flags, variables = secret_flags(registry), secret_variables(registry)
    except ConfigError:
        pass

    def secret(flag: str) -> bool:
        # a mistyped or cut short secret flag (`--api_key`, `--api-k`, `--admin-api`) too
        return flag in flags or _named_like_a_secret(flag) or (
            len(flag) > 3 and any(known.startswith(flag) for known in flags)
        )

    return shown_argv(command, secret, lambda name: name in variables or _named_like_a_secret(name))


def _named_like_a_secret(name: str) -> bool:
    return _SECRET_FLAG.search(name) is not None


_SECRET_FLAG = re.compile(r"key|token|secret|passw", re.IGNORECASE)


def record(command: Sequence[str], out: Path, *, append: bool = False, package: str | None = None) -> int:
    """Run `command` in record mode writing to `out`; return its exit status (128+N for a
    death by signal N, as a shell reports it)."""
    out = out.resolve()  # children may change directory; the variable must still point here
    out.parent.mkdir(parents=True, exist_ok=True)
    run_line = json.dumps(
        {"event": RUN_EVENT, "command": shown_command(command, package), "argv": shown_words(command, package),
         "date": dt.date.today().isoformat()},
        sort_keys=True,
    )
    with out.open("a" if append else "w", encoding="utf-8") as f:
        f.write(run_line + "\n")
    env = dict(os.environ)
    env[role_modes.MODE_VAR] = "record"
    env[role_modes.OUT_VAR] = str(out)
    try:
        proc = subprocess.run(list(command), env=env, check=False)
    except OSError as exc:
        print_stderr(f"configbags audit record: cannot run {command[0]!r}: {exc}")
        return 127
    status = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        print_stderr(f"configbags audit record: command died by {name}; reads up to then were kept")
    elif proc.returncode:
        print_stderr(f"configbags audit record: command exited with {proc.returncode}")
    return status


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = UsageErrors(
        prog="configbags audit",
        description="Record which namespaces each process role reads, and propose audit "
        "records for schema/roles.yaml (never narrowing a declared set).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser(
        "record",
        help="run a command in record mode and print what each role read",
        description="Run CMD with CONFIGBAGS_ROLE_NAMESPACES=record; every process it starts "
        "appends (role, namespace) pairs to --out as they happen.",
    )
    rec.add_argument("--out", type=project_path, default=str(role_modes.DEFAULT_OUT),
                     help=f"observation file (default: {role_modes.DEFAULT_OUT})")
    rec.add_argument("--append", action="store_true",
                     help="add to --out instead of starting it afresh")
    rec.add_argument("--package", help="the generated config package, whose secret flags are redacted in the "
                     "recorded command line (default: [tool.configbags] package in pyproject.toml)")
    rec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    rep = sub.add_parser(
        "report",
        help="declared vs observed namespaces per role, and a proposed audit record",
    )
    rep.add_argument("files", nargs="+", type=project_path, metavar="FILES")
    rep.add_argument("--workload", help="what the recorded run exercised (default: its command)")
    rep.add_argument("--date", type=_iso_date, help="audit date, YYYY-MM-DD (default: the run's)")
    rep.add_argument("--package", help="the generated config package whose roles to compare "
                     "with (default: [tool.configbags] package in pyproject.toml)")
    return parser.parse_args(argv)


def _iso_date(text: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date in YYYY-MM-DD form") from None


def main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.command == "record":
        cmd = list(args.cmd)
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        if not cmd:
            print_stderr("configbags audit record: give the command after --, e.g. "
                         "configbags audit record -- python -m myserver")
            return 2
        status = record(cmd, args.out, append=args.append, package=args.package)
        again = f"configbags audit report {args.out}{f' --package {args.package}' if args.package else ''}"
        try:  # the summary reads the same package the redaction did
            declared, namespaces = schema_sets(args.package) if args.package else (None, None)
            print(report([args.out], declared=declared, namespaces=namespaces), end="")
        except ConfigError as exc:  # the command ran and its reads are kept: its status stands
            print_stderr(f"configbags audit record: cannot summarise the reads: {exc}")
        print(f"observations in {args.out}; re-run the report with: {again} --workload '...'")
        return status
    missing = [str(p) for p in args.files if not p.is_file()]
    if missing:
        print_stderr(f"configbags audit report: no such file: {', '.join(missing)}")
        return 2
    try:
        declared, namespaces = schema_sets(args.package) if args.package else (None, None)
        print(report(args.files, workload=args.workload, date=args.date, declared=declared, namespaces=namespaces),
              end="")
    except ConfigError as exc:
        print_stderr(f"configbags audit report: {exc}")
        return 2
    return 0
