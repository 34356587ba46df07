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

`--harvest DIR` takes the lines from where people write them instead: the launch lines
in the tree's Markdown, shell, Python and YAML files (configbags.migrate.harvest), each
reported by file:line. Beside the differences, the report names every abbreviation the
legacy parser expands (argparse's prefix matching) that the lines use, and every legacy
flag whose value goes through code the generated parser does not run: a custom
`argparse.Action`, a `type=` converter, one that turns "None" or "" into None.

Importing the engine runs its code (torch, CUDA probes, whatever it imports), so the
legacy side runs in a subprocess and only with `--import-engine`, the user's consent.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import json
import os
import shlex
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from configbags.migrate.harvest import harvest
from configbags.runtime.cmdline import (
    Progress,
    UsageErrors,
    input_problem,
    print_stderr,
    terminal_progress,
)
from configbags.runtime.project import package_folder, project_path, project_root

# How the legacy side reports a parsed line on its stderr, when asked to.
PROGRESS_MARK = "configbags-cli-check-progress: "

# Runs in the subprocess: parse every command line with the legacy parser.
_LEGACY_SIDE = r"""
import argparse, contextlib, dataclasses, enum, importlib, io, json, sys

def plain(value):
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a sub-config held whole
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value

def notes(parser):
    # what the legacy parser does to a value beyond parsing it as typed
    out = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        flag = max(action.option_strings, key=len)
        if type(action).__module__ != "argparse":
            out.append([flag, action.dest, "action", type(action).__name__])
        converter = action.type
        if converter is None or converter in (int, float, str) or isinstance(converter, argparse.FileType):
            continue
        name = getattr(converter, "__name__", type(converter).__name__)
        none_like = []
        for text in ("None", ""):
            try:
                if converter(text) is None:
                    none_like.append(text)
            except Exception:
                pass
        out.append([flag, action.dest, "none-like" if none_like else "converter", name, none_like])
    return out

def load(spec):
    module_name, _, class_name = spec.partition(":")
    found = importlib.import_module(module_name)
    for part in class_name.split("."):
        found = getattr(found, part)
    return found

def defaults(value):
    # a sub-config's defaults: what the keys a line leaves out mean
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return None
    out = {}
    for f in dataclasses.fields(value):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue
        out[f.name] = defaults(default) if dataclasses.is_dataclass(default) else plain(default)
    return out

spec, parser_spec, lines, mark = json.loads(sys.stdin.read())
cls = load(spec)
Parser = load(parser_spec) if parser_spec else argparse.ArgumentParser
if hasattr(cls, "__post_init__"):
    cls.__post_init__ = lambda self: None  # the legacy resolution is not parsing
first = Parser(prog="legacy")
cls.add_cli_args(first)
options = sorted({o for a in first._actions for o in a.option_strings})
out = []
structured = {}

def progress():
    if mark:  # one line per parsed command line, read by the parent (cli-check's progress)
        sys.stderr.write(f"{mark}{len(out)} {len(lines)}\n")
        sys.stderr.flush()

for argv in lines:
    parser = Parser(prog="legacy")
    cls.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            record = cls.from_cli_args(parser.parse_args(argv))
    except SystemExit:
        out.append({"error": err.getvalue().strip().splitlines()[-1:] or ["refused"]})
        progress()
        continue
    except Exception as exc:
        out.append({"error": [f"{type(exc).__name__}: {exc}"]})
        progress()
        continue
    if dataclasses.is_dataclass(record):
        values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    else:
        values = dict(vars(record))
    for name, value in values.items():
        if name not in structured and defaults(value) is not None:
            structured[name] = defaults(value)
    out.append({"values": plain(values)})
    progress()
print(json.dumps({"results": out, "options": options, "notes": notes(first), "structured": structured}))
"""


class CliCheckError(Exception):
    """The check could not run (bad arguments, the engine would not import)."""


@attrs.frozen
class Difference:
    line: int  # in the corpus (0 for a harvested line: see `where`)
    argv: str
    leaf: str  # `<parse>` when one side refused the line
    legacy: Any
    generated: Any
    where: str = ""  # `corpus line N`, or the harvested file:line

    def render(self) -> str:
        place = self.where or f"corpus line {self.line}"
        return f"{place}: `{self.argv}`: {self.leaf}: legacy {self.legacy!r}, generated {self.generated!r}"


@attrs.frozen
class Abbreviation:
    """A prefix the legacy parser expands (argparse's allow_abbrev) and the corpus uses."""

    prefix: str
    flags: tuple[str, ...]  # what it could mean: one flag, or several (ambiguous)
    wheres: tuple[str, ...]

    def render(self, accepted: bool) -> str:
        places = ", ".join(self.wheres[:3]) + (f" and {len(self.wheres) - 3} more" if len(self.wheres) > 3 else "")
        if len(self.flags) > 1:
            return (f"abbreviation {self.prefix} is ambiguous to the legacy parser (it could mean "
                    f"{', '.join(self.flags)}); used at {places}")
        if accepted:
            return f"abbreviation {self.prefix} of {self.flags[0]}: the generated parser takes it too; used at {places}"
        return (f"abbreviation {self.prefix} of {self.flags[0]}: the legacy parser expands it, the generated one "
                f"refuses it; used at {places}. Add it as an alias (`import-dataclass --harvest DIR` proposes "
                f"it), or keep prefix matching with `cli: {{abbreviations: legacy}}` in settings.yaml")


@attrs.frozen
class Note:
    """A legacy flag whose value goes through code the generated parser does not run."""

    flag: str
    dest: str
    kind: str  # action, converter, none-like, structured (a converter that builds a sub-config dataclass)
    detail: str

    def render(self) -> str:
        if self.kind == "action":
            return (f"{self.flag} ({self.dest}): the custom action {self.detail} decides what it stores; the "
                    f"generated flag stores the value as its leaf type parses it")
        if self.kind == "structured":
            return (f"{self.flag} ({self.dest}): the type converter {self.detail} builds a sub-config dataclass; "
                    f"compared as the generated dict of the keys given over that dataclass's defaults")
        if self.kind == "none-like":
            return (f"{self.flag} ({self.dest}): the type converter {self.detail} turns "
                    f"'None'-like strings into None; the generated flag keeps the string")
        return f"{self.flag} ({self.dest}): the type converter {self.detail} is not one the generated parser runs"


@attrs.frozen
class CliCheckReport:
    lines: int
    compared_leaves: tuple[str, ...]
    legacy_only: tuple[str, ...]  # legacy fields that are not leaves: not compared
    differences: tuple[Difference, ...]
    abbreviations: tuple[tuple[Abbreviation, bool], ...] = ()  # with: does the generated parser take it
    notes: tuple[Note, ...] = ()
    hints: tuple[str, ...] = ()

    def render(self) -> str:
        out = [d.render() for d in self.differences]
        out += [f"hint: {h}" for h in self.hints]
        out += [f"note: {a.render(accepted)}" for a, accepted in self.abbreviations]
        out += [f"note: {n.render()}" for n in self.notes]
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


@attrs.frozen
class LegacySide:
    results: tuple[dict[str, Any], ...]
    options: tuple[str, ...]  # every option string the legacy parser declares
    notes: tuple[Note, ...]
    # field -> the defaults of the sub-config dataclass it holds (`compilation_config:
    # CompilationConfig`): what a key that a line leaves out means
    structured: Mapping[str, Any] = attrs.Factory(dict)


def legacy_run(
    spec: str, argvs: Sequence[list[str]], *, path: Sequence[Path] = (), parser: str | None = None,
    progress: Progress | None = None,
) -> LegacySide:
    """Parse each argv with the legacy parser (an `argparse.ArgumentParser`, or the engine's
    own subclass `parser`, MODULE:CLASS), in a subprocess; `progress(lines parsed, lines)`
    as it goes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), *sys.path])
    payload = json.dumps([spec, parser, list(argvs), PROGRESS_MARK if progress is not None else None])
    code, stdout, stderr = _legacy_process(payload, env, progress)
    if code != 0:
        raise CliCheckError(_failure(spec, stderr, path))
    data = json.loads(stdout)
    notes = tuple(Note(n[0], n[1], n[2], n[3]) for n in data["notes"])
    return LegacySide(tuple(data["results"]), tuple(data["options"]), notes, data["structured"])


_LEGACY_TIMEOUT_S = 600


def _legacy_process(payload: str, env: dict[str, str], progress: Progress | None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the legacy side. With `progress`, its stderr is read as
    it comes: the lines that start with PROGRESS_MARK are its progress, the rest its errors."""
    command = [sys.executable, "-c", _LEGACY_SIDE]
    if progress is None:
        done = subprocess.run(command, input=payload, capture_output=True, text=True, env=env, check=False,
                              timeout=_LEGACY_TIMEOUT_S)
        return done.returncode, done.stdout, done.stderr
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as child:
        stdin, out, err = child.stdin, child.stdout, child.stderr
        assert stdin is not None  # all three are pipes, as asked
        assert out is not None
        assert err is not None
        watchdog = threading.Timer(_LEGACY_TIMEOUT_S, child.kill)  # as subprocess.run's timeout
        watchdog.start()
        stdout: list[str] = []
        reader = threading.Thread(target=lambda: stdout.append(out.read()), daemon=True)
        reader.start()
        stdin.write(payload)  # the side reads it whole before it writes anything
        stdin.close()
        errors: list[str] = []
        for line in err:
            if line.startswith(PROGRESS_MARK):
                done_lines, total = line[len(PROGRESS_MARK):].split()
                progress(int(done_lines), int(total))
            else:
                errors.append(line)
        reader.join()
        code = child.wait()
        watchdog.cancel()
    return code, "".join(stdout), "".join(errors)


def _failure(spec: str, stderr: str, path: Sequence[Path]) -> str:
    """One line for a legacy side that did not run: the exception it ended in (the last line
    of its traceback), and the fix when the engine was not found."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1].strip() if lines else "it exited without a message"
    message = f"the legacy parser {spec} failed to run: {last}"
    if last.startswith(("ModuleNotFoundError", "ImportError")):
        searched = ", ".join(map(str, path)) or "no --path"
        message += (f" (searched {searched}); pass --path FOLDER, the folder holding the engine's top-level "
                    f"package (relative to the project, the folder of its pyproject.toml)")
    return message


def engine_paths(spec: str, given: Sequence[Path]) -> list[Path]:
    """Where the engine is imported from: the --path folders, then the project's own folder
    for the legacy module's top-level package (its `src/` in a src layout), so a check run
    from any subfolder of the project finds the engine without --path."""
    top = spec.partition(":")[0].split(".")[0]
    base = package_folder(project_root(), top).parent
    found = [p.resolve() for p in given]
    if (base / top).is_dir() and base.resolve() not in found:
        found.append(base.resolve())
    return found


def legacy_parse(spec: str, argvs: Sequence[list[str]], *, path: Sequence[Path] = ()) -> list[dict[str, Any]]:
    return list(legacy_run(spec, argvs, path=path).results)


def generated_parse(package: str, argv: list[str]) -> dict[str, Any]:
    """{"values": ...} or {"error": [...]} from the generated parser."""
    record_type: Any = importlib.import_module(f"{package}.server_args").ServerArgs
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            record = record_type.from_cli(argv, prog="generated")
    except SystemExit:
        lines = err.getvalue().strip().splitlines()
        # the error line, not the hint under it
        return {"error": [line for line in lines if ": error: " in line][-1:] or lines[-1:] or ["refused"]}
    values: dict[str, Any] = record.to_dict()
    return {"values": json.loads(json.dumps(values))}  # tuples as lists, like the legacy side


def prefixes(argvs: Iterable[tuple[str, Sequence[str]]], options: Iterable[str]) -> list[Abbreviation]:
    """Every `--word` of the corpus that is no option string but a prefix of one (or of
    several: ambiguous), as argparse's allow_abbrev reads it, with where it is used."""
    declared = sorted(o for o in options if o.startswith("--"))
    exact = set(options)
    used: dict[str, list[str]] = {}
    for where, argv in argvs:
        for word in argv:
            if word == "--":
                break
            flag = word.partition("=")[0]
            if flag.startswith("--") and len(flag) > 2 and flag not in exact:
                used.setdefault(flag, []).append(where)
    found: list[Abbreviation] = []
    for prefix, wheres in sorted(used.items()):
        flags = tuple(o for o in declared if o.startswith(prefix))
        if flags:
            found.append(Abbreviation(prefix, flags, tuple(dict.fromkeys(wheres))))
    return found


def with_defaults(value: Any, defaults: Any) -> Any:
    """A nested json leaf's value as the legacy sub-config means it: the keys given, over
    the config dataclass's defaults for the keys left out (nested configs likewise)."""
    if not (isinstance(value, dict) and isinstance(defaults, dict)):
        return value
    merged = dict(defaults)
    for key, given in value.items():
        merged[key] = with_defaults(given, defaults.get(key))
    return merged


def compare(
    corpus: Sequence[tuple[int, list[str]]],
    legacy: Sequence[dict[str, Any]],
    generated: Sequence[dict[str, Any]],
    wheres: Sequence[str] | None = None,
    structured: Mapping[str, Any] | None = None,
) -> CliCheckReport:
    """Every leaf whose values differ, and every line one side refuses. A leaf the legacy
    record holds as a sub-config dataclass (`structured`: its defaults) is compared as the
    generated dict of the keys given over those defaults."""
    structured = structured or {}
    differences: list[Difference] = []
    compared: set[str] = set()
    legacy_only: set[str] = set()
    places = list(wheres) if wheres is not None else [f"corpus line {line}" for line, _ in corpus]
    for (line, argv), old, new, where in zip(corpus, legacy, generated, places, strict=True):
        shown = shlex.join(argv)
        if ("error" in old) != ("error" in new):
            differences.append(Difference(
                line, shown, "<parse>", old.get("error", "accepted"), new.get("error", "accepted"), where,
            ))
            continue
        if "error" in old:
            continue  # both refuse it: the same meaning
        old_values, new_values = old["values"], new["values"]
        legacy_only.update(k for k in old_values if k not in new_values)
        for leaf in sorted(old_values.keys() & new_values.keys()):
            compared.add(leaf)
            new_value = with_defaults(new_values[leaf], structured[leaf]) if leaf in structured else new_values[leaf]
            if old_values[leaf] != new_value:
                differences.append(Difference(line, shown, leaf, old_values[leaf], new_values[leaf], where))
    return CliCheckReport(len(corpus), tuple(sorted(compared)), tuple(sorted(legacy_only)), tuple(differences))


def check_lines(
    spec: str, package: str, corpus: Sequence[tuple[str, list[str]]], *, path: Sequence[Path] = (),
    progress: Progress | None = None, parser: str | None = None, legacy_progress: Progress | None = None,
) -> CliCheckReport:
    """Compare the parsers on (where, argv) lines; abbreviations and notes reported too.
    `legacy_progress` and `progress`: (lines parsed, lines) as the legacy and the generated
    parser go through them."""
    legacy = legacy_run(spec, [argv for _, argv in corpus], path=path, parser=parser, progress=legacy_progress)
    for folder in reversed(path):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    try:
        generated = []
        for done, (_, argv) in enumerate(corpus, start=1):
            generated.append(generated_parse(package, argv))
            if progress is not None:
                progress(done, len(corpus))
        registered = _generated_options(package)
    except ImportError as exc:
        raise CliCheckError(f"cannot import {package}.server_args: {exc}; run configbags gen first") from exc
    numbered = [(i, argv) for i, (_, argv) in enumerate(corpus, start=1)]
    report = compare(numbered, legacy.results, generated, [w for w, _ in corpus], legacy.structured)
    abbreviations = tuple((a, a.prefix in registered) for a in prefixes(corpus, legacy.options))
    notes = tuple(attrs.evolve(n, kind="structured") if n.kind == "converter" and n.dest in legacy.structured else n
                  for n in legacy.notes)
    return attrs.evolve(report, abbreviations=abbreviations, notes=notes, hints=_hints(report, parser))


def _hints(report: CliCheckReport, parser: str | None) -> tuple[str, ...]:
    """The fix when the legacy side refused what only the engine's own parser takes."""
    dotted = any(
        d.leaf == "<parse>" and isinstance(d.legacy, list)
        and any("unrecognized arguments:" in str(e) and "." in str(e).partition("unrecognized arguments:")[2]
                for e in d.legacy)
        for d in report.differences
    )
    if dotted and parser is None:
        return ("the legacy side refused dotted sub-keys (--leaf.key VALUE) that a plain argparse parser does not "
                "take; if the engine parses with its own ArgumentParser subclass, name it: --parser MODULE:CLASS",)
    return ()


def _generated_options(package: str) -> set[str]:
    record_type: Any = importlib.import_module(f"{package}.server_args").ServerArgs
    parser = argparse.ArgumentParser(add_help=False)
    record_type.add_cli_args(parser)
    return {o for a in parser._actions for o in a.option_strings}


def cli_check(
    spec: str, package: str, corpus_text: str, *, path: Sequence[Path] = (), parser: str | None = None
) -> CliCheckReport:
    corpus = [(f"corpus line {n}", argv) for n, argv in read_corpus(corpus_text)]
    return check_lines(spec, package, corpus, path=path, parser=parser)


def harvested(
    root: Path, spec: str, launchers: Sequence[str], progress: Progress | None = None
) -> list[tuple[str, list[str]]]:
    """The launch lines under `root` (configbags.migrate.harvest); the launchers default to
    the legacy module's top-level package name (`python -m myengine.launch_server ...`)."""
    names = list(launchers) or [spec.partition(":")[0].split(".")[0]]
    if not root.is_dir():  # a typo would harvest nothing, in silence
        raise (NotADirectoryError(errno.ENOTDIR, "--harvest names no folder", str(root)) if root.exists()
               else FileNotFoundError(errno.ENOENT, "--harvest: no such folder", str(root)))
    return [(launch.where, list(launch.argv)) for launch in harvest(root, names, progress)]


def main(argv: list[str] | None = None) -> int:
    parser = UsageErrors(
        prog="configbags cli-check", description=__doc__.split("\n\n")[0].strip("`")
    )
    parser.add_argument("--legacy", required=True, metavar="MODULE:CLASS",
                        help="the legacy record class, with add_cli_args and from_cli_args")
    parser.add_argument("--package", required=True, help="the generated package (e.g. myengine.config_bags)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", type=project_path, help="one legacy command line per line")
    source.add_argument("--harvest", type=project_path, metavar="DIR",
                        help="collect launch lines from the Markdown, shell, Python and YAML files under DIR")
    parser.add_argument("--launcher", action="append", default=[], metavar="TEXT",
                        help="with --harvest: what a launch line runs (repeatable; default: the legacy "
                        "module's top-level package, e.g. myengine)")
    parser.add_argument("--parser", metavar="MODULE:CLASS",
                        help="the engine's own ArgumentParser subclass, when it parses more than argparse "
                        "does (e.g. dotted sub-keys, --compilation-config.level 3); default argparse.ArgumentParser")
    parser.add_argument("--path", type=project_path, action="append", default=[],
                        help="a folder to import the engine from (repeatable)")
    parser.add_argument("--import-engine", action="store_true",
                        help="consent to importing the engine (in a subprocess): it runs its code")
    args = parser.parse_args(argv)
    if not args.import_engine:
        print_stderr(
                     "configbags cli-check: the legacy parser lives in the engine, so the check must "
                     "import it, which runs the engine's module code (in a subprocess); pass "
                     "--import-engine to agree")
        return 2
    try:
        if args.harvest is not None:
            corpus = harvested(args.harvest, args.legacy, args.launcher,
                               terminal_progress("cli-check: read {done} of {total} files"))
            if not corpus:
                raise CliCheckError(f"no launch lines under {args.harvest} (launchers: "
                                    f"{args.launcher or [args.legacy.split('.')[0]]}); name them with --launcher")
        else:
            corpus = [(f"corpus line {n}", words) for n, words in
                      read_corpus(args.corpus.read_text(encoding="utf-8"))]
        report = check_lines(
            args.legacy, args.package, corpus, path=engine_paths(args.legacy, args.path), parser=args.parser,
            legacy_progress=terminal_progress("cli-check: the legacy parser parsed {done} of {total} lines"),
            progress=terminal_progress("cli-check: the generated parser parsed {done} of {total} lines"),
        )
    except OSError as exc:
        print_stderr(f"configbags cli-check: {input_problem(exc)}")
        return 2
    except CliCheckError as exc:
        print_stderr(f"configbags cli-check: {exc}")
        return 2
    print(report.render())
    return 1 if report.differences else 0
