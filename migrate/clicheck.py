"""`configbags cli-check`: does the generated command line mean what the legacy one meant?

    configbags cli-check --legacy legacy_engine.server_args:ServerArgs \\
        --package legacy_engine.config_bags --corpus cli_corpus.txt --import-engine

Each line of the corpus (shell words; blank lines and `#` comments skipped) is parsed
twice: by the legacy parser (`CLASS.add_cli_args(parser)`, then `CLASS.from_cli_args`)
and by the generated one (`ServerArgs.from_cli`). Every leaf whose value differs is
reported, and so is a line one parser accepts and the other refuses. The legacy class's
`__post_init__` is not run: that is the legacy resolution, which the bootstrap runs as a
hook after parsing (configbags.runtime.legacy), so comparing it here would compare
resolution, not parsing.

Importing the engine runs its code (torch, CUDA probes, whatever it imports), so the
legacy side runs in a subprocess and only with `--import-engine`, the user's consent.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

# Runs in the subprocess: parse every command line with the legacy parser.
_LEGACY_SIDE = r"""
import argparse, contextlib, dataclasses, enum, importlib, io, json, sys

def plain(value):
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value

spec, lines = json.loads(sys.stdin.read())
module_name, _, class_name = spec.partition(":")
cls = importlib.import_module(module_name)
for part in class_name.split("."):
    cls = getattr(cls, part)
if hasattr(cls, "__post_init__"):
    cls.__post_init__ = lambda self: None  # the legacy resolution is not parsing
out = []
for argv in lines:
    parser = argparse.ArgumentParser(prog="legacy")
    cls.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            record = cls.from_cli_args(parser.parse_args(argv))
    except SystemExit:
        out.append({"error": err.getvalue().strip().splitlines()[-1:] or ["refused"]})
        continue
    except Exception as exc:
        out.append({"error": [f"{type(exc).__name__}: {exc}"]})
        continue
    if dataclasses.is_dataclass(record):
        values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    else:
        values = dict(vars(record))
    out.append({"values": plain(values)})
print(json.dumps(out))
"""


class CliCheckError(Exception):
    """The check could not run (bad arguments, the engine would not import)."""


@attrs.frozen
class Difference:
    line: int  # in the corpus
    argv: str
    leaf: str  # `<parse>` when one side refused the line
    legacy: Any
    generated: Any

    def render(self) -> str:
        return (
            f"corpus line {self.line}: `{self.argv}`: {self.leaf}: legacy {self.legacy!r}, "
            f"generated {self.generated!r}"
        )


@attrs.frozen
class CliCheckReport:
    lines: int
    compared_leaves: tuple[str, ...]
    legacy_only: tuple[str, ...]  # legacy fields that are not leaves: not compared
    differences: tuple[Difference, ...]

    def render(self) -> str:
        out = [d.render() for d in self.differences]
        if self.legacy_only:
            out.append(f"not compared (legacy fields that are not leaves): {', '.join(self.legacy_only)}")
        status = "FAILED" if self.differences else "ok"
        out.append(
            f"cli-check {status}: {self.lines} command lines, {len(self.compared_leaves)} leaves "
            f"compared, {len(self.differences)} differences"
        )
        return "\n".join(out)


def read_corpus(text: str) -> list[tuple[int, list[str]]]:
    """(line number, argv) for each command line of a corpus file."""
    found: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = shlex.split(line, comments=True)
        if words:
            found.append((number, words))
    return found


def legacy_parse(spec: str, argvs: Sequence[list[str]], *, path: Sequence[Path] = ()) -> list[dict[str, Any]]:
    """Parse each argv with the legacy parser, in a subprocess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), *sys.path])
    done = subprocess.run(
        [sys.executable, "-c", _LEGACY_SIDE],
        input=json.dumps([spec, list(argvs)]),
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )
    if done.returncode != 0:
        raise CliCheckError(f"the legacy parser {spec} failed to run:\n{done.stderr.strip()}")
    parsed: list[dict[str, Any]] = json.loads(done.stdout)
    return parsed


def generated_parse(package: str, argv: list[str]) -> dict[str, Any]:
    """{"values": ...} or {"error": [...]} from the generated parser."""
    record_type: Any = importlib.import_module(f"{package}.server_args").ServerArgs
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            record = record_type.from_cli(argv, prog="generated")
    except SystemExit:
        return {"error": err.getvalue().strip().splitlines()[-1:] or ["refused"]}
    values: dict[str, Any] = record.to_dict()
    return {"values": json.loads(json.dumps(values))}  # tuples as lists, like the legacy side


def compare(
    corpus: Sequence[tuple[int, list[str]]],
    legacy: Sequence[dict[str, Any]],
    generated: Sequence[dict[str, Any]],
) -> CliCheckReport:
    differences: list[Difference] = []
    compared: set[str] = set()
    legacy_only: set[str] = set()
    for (line, argv), old, new in zip(corpus, legacy, generated, strict=True):
        shown = shlex.join(argv)
        if ("error" in old) != ("error" in new):
            differences.append(Difference(
                line, shown, "<parse>",
                old.get("error", "accepted"), new.get("error", "accepted"),
            ))
            continue
        if "error" in old:
            continue  # both refuse it: the same meaning
        old_values, new_values = old["values"], new["values"]
        legacy_only.update(k for k in old_values if k not in new_values)
        for leaf in sorted(old_values.keys() & new_values.keys()):
            compared.add(leaf)
            if old_values[leaf] != new_values[leaf]:
                differences.append(Difference(line, shown, leaf, old_values[leaf], new_values[leaf]))
    return CliCheckReport(len(corpus), tuple(sorted(compared)), tuple(sorted(legacy_only)), tuple(differences))


def cli_check(spec: str, package: str, corpus_text: str, *, path: Sequence[Path] = ()) -> CliCheckReport:
    corpus = read_corpus(corpus_text)
    legacy = legacy_parse(spec, [argv for _, argv in corpus], path=path)
    for folder in reversed(path):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    try:
        generated = [generated_parse(package, argv) for _, argv in corpus]
    except ImportError as exc:
        raise CliCheckError(f"cannot import {package}.server_args: {exc}; run configbags gen first") from exc
    return compare(corpus, legacy, generated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="configbags cli-check", description=__doc__.split("\n\n")[0].strip("`")
    )
    parser.add_argument("--legacy", required=True, metavar="MODULE:CLASS",
                        help="the legacy record class, with add_cli_args and from_cli_args")
    parser.add_argument("--package", required=True, help="the generated package (e.g. myengine.config_bags)")
    parser.add_argument("--corpus", required=True, type=Path, help="one legacy command line per line")
    parser.add_argument("--path", type=Path, action="append", default=[],
                        help="a folder to import the engine from (repeatable)")
    parser.add_argument("--import-engine", action="store_true",
                        help="consent to importing the engine (in a subprocess): it runs its code")
    args = parser.parse_args(argv)
    if not args.import_engine:
        print(
            "configbags cli-check: the legacy parser lives in the engine, so the check must "
            "import it, which runs the engine's module code (in a subprocess); pass "
            "--import-engine to agree", file=sys.stderr,
        )
        return 2
    try:
        report = cli_check(
            args.legacy, args.package, args.corpus.read_text(encoding="utf-8"),
            path=[p.resolve() for p in args.path],
        )
    except (OSError, CliCheckError) as exc:
        print(f"configbags cli-check: {exc}", file=sys.stderr)
        return 2
    print(report.render())
    return 1 if report.differences else 0
