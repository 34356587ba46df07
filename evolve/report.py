"""How diff and lint print findings: a readable table, JSON, GitHub workflow commands
(`::error file=...,line=...::`, shown inline on a pull request) and SARIF 2.1.0 (code
scanning in GitHub, GitLab and others)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from configbags.evolve.rules import RULES, Finding, Rule, Severity
from configbags.runtime.cmdline import inert

FORMATS = ("table", "json", "github", "sarif")
_GITHUB_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
_SARIF_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def as_dict(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"rule": f.rule, "severity": f.severity.value, "breaks": [str(a) for a in f.spec.breaks],
                           "subject": f.subject, "file": f.file, "line": f.line, "message": f.message}
    if f.fix:
        out["fix"] = f.fix
    if f.allowed is not None:
        out["allowed"] = f.allowed
    return out


def table(findings: Sequence[Finding], title: str) -> str:
    """Findings as aligned rows. File names, subjects and messages come from the files
    linted (a committed file named `a\n::error ...`, a ConfigMap key, a variable's name):
    each is printed inert, so no cell can forge or hide a line of the CI log."""
    title = inert(title)
    if not findings:
        return f"{title}: no findings\n"
    rows = [(str(f.severity) + (" (allowed)" if f.allowed is not None else ""), f.rule, inert(f"{f.file}:{f.line}"),
             inert(f.subject), inert((f"[breaks {', '.join(map(str, f.spec.breaks))}] " if f.spec.breaks else "")
                                     + f.message + (f"; fix: {f.fix}" if f.fix else "")
                                     + (f" (allowed: {f.allowed})" if f.allowed else "")))
            for f in findings]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"{title}:"]
    for row in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4])
    counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda x: -x[0].rank) if n))
    return "\n".join(lines) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(file: str) -> str:
    """A finding's file as code scanning wants it: relative to the checkout (GITHUB_WORKSPACE
    on a runner, else the working folder), `/`-separated; a `REV:PATH` side names PATH, the
    file as the pull request shows it. Anything outside the checkout stays as it is."""
    if not os.path.isabs(file) and ":" in file and not Path(file).exists():
        file = file.rpartition(":")[2]
    base = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    path = Path(file)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(base)
        except ValueError:
            return file
    return str(PurePosixPath(*path.parts)) if path.parts else file


def github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: one annotation per finding at its file and line."""
    out = []
    for f in findings:
        level = "notice" if f.allowed is not None else _GITHUB_LEVEL[f.severity]
        title = _escape_property(f"{f.rule} ({f.severity}, breaks {', '.join(map(str, f.spec.breaks)) or 'nobody'})")
        text = f.message + (f"; fix: {f.fix}" if f.fix else "") + (f" [allowed: {f.allowed}]" if f.allowed else "")
        out.append(f"::{level} file={_escape_property(workspace_path(f.file))},line={f.line},title={title}::{_escape_data(text)}")
    return "\n".join(out) + ("\n" if out else "")


def sarif(findings: Sequence[Finding], tool: str, rules: Sequence[Rule]) -> str:
    """A SARIF 2.1.0 log with one run: the rule table as the tool's rules, each finding a
    result at its file and line."""
    used = sorted({f.rule for f in findings} | {r.id for r in rules})
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message + (f"; fix: {f.fix}" if f.fix else "")},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": quote(workspace_path(f.file))},
                                                "region": {"startLine": max(1, f.line)}}}],
            "properties": {"subject": f.subject, "breaks": [str(a) for a in f.spec.breaks]},
        }
        if f.allowed is not None:
            result["suppressions"] = [{"kind": "external", "justification": f.allowed}]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": tool,
                                "rules": [{"id": rid, "shortDescription": {"text": RULES[rid].summary},
                                           "properties": {"severity": str(RULES[rid].severity),
                                                          "breaks": [str(a) for a in RULES[rid].breaks]},
                                           "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[rid].severity]}}
                                          for rid in used]}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


def render(findings: Sequence[Finding], fmt: str, *, title: str, tool: str, rules: Sequence[Rule],
           extra: dict[str, Any] | None = None) -> str:
    ordered = sorted(findings, key=Finding.sort_key)
    if fmt == "json":
        return json.dumps({**(extra or {}), "findings": [as_dict(f) for f in ordered]}, indent=2) + "\n"
    if fmt == "github":
        return github(ordered)
    if fmt == "sarif":
        return sarif(ordered, tool, rules)
    return table(ordered, title)
