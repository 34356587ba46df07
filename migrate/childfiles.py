"""The files child processes run, read where the scan of the tree finds them.

A module's analysis is path-free (its result is cached by the bytes' digest), so what a
child runs is kept as a fact (FlowFacts.children: a kind and a path spec, see
configbags.migrate.childenv.child_files), and judged here, where the file's place is known:
`@file` and `@here` are the module's file and folder, `@cwd` the folder the child starts
in (the project's, unless the call's `cwd=` says), `@any` a folder the module changes into
without showing it (`os.chdir(workdir)`): a path there is `$?` where it may name a file or
folder under the project or a root, a module of the tree run by Python aside.

A file inside the project or a root that is not a scanned Python file is read, never run:

- a Python file run by an interpreter (`[sys.executable, HERE / "tools/dump_env.txt"]`,
  whatever its suffix) is scanned as Python source, as a file of the tree: its reads are
  reported in it, under its own path; so is the module `python -m MOD` runs where the
  project has it in the child's folder (`MOD.py`, `MOD/__main__.py`: PYTHON_MODULE);
- a shell script (`sh script.sh`, or a program whose first line runs a shell), a Makefile
  (`make -C DIR`, `make -f FILE`, and the files it includes) and a script of another
  interpreter (perl, node, awk) are judged by their text as a shell's `-c` string is: a
  declared variable named as a whole word is read at the call site (form child_script),
  and so is the whole environment where the text prints it back (`env`, `export -p`,
  `${!PREFIX*}`, make's `$(.VARIABLES)`);
- a file that is not there, cannot be read, or is not text (a compiled program) is `$?`
  at the call site (form child_file): the scanner cannot see what it reads. Only a
  relative path (the folder the child starts in is not known to be the project's) that
  names no file of the project is left alone: `["python", "train.py"]`, `make` alone.

A shell script's judgment follows what it runs: the scripts it sources or runs by a path
it shows (its own folder spelled `"$(dirname "$0")"` too, here_spelled), and the programs
it feeds an interpreter (a heredoc, a here-string, `python -c`, fed_programs), judged as
that interpreter's.

Every script file under the roots is judged as its own file too (judge_scripts), however
it is started (a run helper, a composed argv, nothing the scanner sees): a shell script
(`.sh`, `.bash`, a shell's first line) by its text, its reads reported in it; a Python
one with no `.py` suffix scanned as a module of the tree.

A file outside the project and every root (`/usr/bin/tool`) is someone else's program,
and an excluded one (scan.excludes) is left out as the listing leaves it."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import shlex
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from configbags.migrate.childenv import (
    ANY_FOLDER,
    MODULE_ARGUMENT,
    PYTHON_MODULE,
    is_python,
    named_variables,
    program_name,
    run_by,
    script_files,
    shell_commands,
    shell_prints_environment,
    stdin_reader,
    text_reads,
)
from configbags.migrate.doors import DoorScan
from configbags.migrate.files import NotReadable, display_path, read_source
from configbags.migrate.scancache import content_digest
from configbags.migrate.scanmodel import ENV_UNRESOLVED, FileScan, ScanSettings, env_subject

# the Makefiles `make` looks for in a folder, in its order
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_INCLUDE = re.compile(r"^[ \t]*-?s?include[ \t]+(.+)$", re.MULTILINE)
_MAX_INCLUDES = 8
_NINJA_INCLUDE = re.compile(r"^(?:include|subninja)[ \t]+(.+)$", re.MULTILINE)
# the keys of a logging config file (`logging.config.fileConfig`) whose values are eval'd
_LOGGING_CODE = re.compile(r"^[ \t]*(args|kwargs)[ \t]*[=:][ \t]*(.*)$", re.MULTILINE)
_MAX_FOLDER_FILES = 256  # a folder's files run one by one, judged each (more: `$?`)
_MAX_PARTS = 64  # the .cmake files and lists read under a CMakeLists.txt's folder

Row = tuple[Any, ...]  # a read row: (function, leaf, line, col, end_line, end_col, via, form, origin)


def judge_children(
    project: Path,
    settings: ScanSettings,
    results: dict[str, FileScan],
    where: dict[str, tuple[str, str, bytes]],
    listed: Collection[str],
    scan: Callable[[bytes, str], FileScan],
) -> tuple[dict[str, list[Row]], list[tuple[str, str]]]:
    """Judge the files the scanned modules' children run: the reads at the call sites,
    by file, and the problems of Python files that could not be scanned. A Python file
    run by an interpreter is added to `results` and `where` (scanned by `scan`, given its
    bytes and its digest), so the project pass reads it as a module of the tree."""
    judge = _Judge(project, settings, listed)
    sites: dict[str, list[Row]] = {}
    problems: list[tuple[str, str]] = []
    pending = [rel for rel in sorted(results) if results[rel].flow.children]
    while pending:
        rel = pending.pop(0)
        for row in results[rel].flow.children:
            qualname, position = row[0], tuple(row[1:5])
            for kind, spec in judge.expanded(str(row[5]), str(row[6]), where[rel][0]):
                found = judge.judged(kind, spec, where[rel][0])
                if isinstance(found, tuple):  # a Python file: scanned as one of the tree
                    target, data = found
                    child = display_path(Path(target), project)
                    if child in results or child in listed:
                        continue
                    digest = content_digest(data)
                    result = scan(data, digest)
                    if result.problem is not None:
                        problems.append((child, result.problem))
                        continue
                    results[child], where[child] = result, (target, digest, data)
                    if result.flow.children:
                        pending.append(child)
                    continue
                for leaf, form in found:
                    sites.setdefault(rel, []).append((qualname, leaf, *position, "environ", form, "process"))
    return {rel: sorted(set(rows)) for rel, rows in sites.items()}, problems


class _Judge:
    def __init__(self, project: Path, settings: ScanSettings, listed: Collection[str]) -> None:
        self.project = os.path.normpath(project)
        self.settings = settings
        self.listed = set(listed)
        self.declared = frozenset(settings.env_vars)
        self.tops = [self.project] + [os.path.normpath(os.path.join(self.project, root)) for root in settings.roots]
        self._everything: set[str] | None = None  # every path under the tops

    def expanded(self, kind: str, spec: str, module: str) -> list[tuple[str, str]]:
        """The files a child runs: (kind, spec) itself, or for a folder's files run one by
        one ("each:KIND", "tree:KIND": `run-parts DIR`, `find DIR -exec sh {} ;`) each
        file in (or under) the folder, run as KIND; a folder not there is judged as a
        file not there, one in a folder not shown as such a path (`$?` where it may be one
        of the tree's)."""
        each, _, inner = kind.partition(":")
        if each not in ("each", "tree") or not spec:
            return [(kind, spec)]
        target = self._resolved(spec, module) if not spec.startswith(ANY_FOLDER) else None
        if target is None or not os.path.isdir(target):
            return [(inner, spec)]
        found: list[tuple[str, str]] = []
        for folder, dirs, files in os.walk(target):
            dirs[:] = sorted(d for d in dirs if each == "tree" and not d.startswith(".") and d != "__pycache__")
            rel = os.path.relpath(folder, target).replace(os.sep, "/")
            found += [(inner, f"{spec}/{name}" if rel == "." else f"{spec}/{rel}/{name}") for name in sorted(files)]
        return found if len(found) <= _MAX_FOLDER_FILES else [(inner, "")]

    def judged(self, kind: str, spec: str, module: str) -> list[tuple[str, str]] | tuple[str, bytes]:
        """(leaf, form) of each read the file `spec` names makes, run as `kind` from the
        module at path `module`; or (path, bytes) of a Python file to scan."""
        if kind == PYTHON_MODULE and spec:
            # `python -m a.b`: `a/b.py` or the package's `a/b/__main__.py`; a module the
            # project does not have is someone else's (`python -m pip`)
            found = self._module_file(spec, module)
            return self.judged("python", found, module) if found else []
        if kind.startswith(MODULE_ARGUMENT + "|"):
            # a file handed to a module run by `-m`: an unknown program's, unless the
            # module is the project's (then it is its argument, as `python FILE ARG`'s)
            return [] if self._module_file(kind.partition("|")[2], module) else self.judged("opaque", spec, module)
        if not spec:
            return [(ENV_UNRESOLVED, "child_file")]  # (a folder with too many files to judge each)
        if spec.startswith(ANY_FOLDER):
            # in a folder the module changes into and does not show: not known, where the
            # path may name a file (or folder) under the project or a root
            tail = spec[len(ANY_FOLDER) :]
            tails = [f"{tail}/{name}" for name in _MAKEFILES] if kind == "make_dir" else [tail]  # (`make` alone)
            return [(ENV_UNRESOLVED, "child_file")] if any(self._anywhere(t, kind) for t in tails) else []
        target = self._resolved(spec, module)
        if target is None or not any(target == top or target.startswith(top + os.sep) for top in self.tops):
            return []  # outside the project and the roots: not the engine's code
        if self._excluded(display_path(Path(target), Path(self.project))):
            return []  # excluded from the scan (the record's own module): as the listing does
        if kind == "make_dir":
            names = [os.path.join(target, name) for name in _MAKEFILES]
            target = next((name for name in names if os.path.isfile(name)), names[-1])
            kind = "make"
        data = self._read(target)
        if kind == "opaque":  # a program the scanner cannot judge, given a file under the root
            # (a module of the tree, `["torchrun", HERE / "train.py"]`, is scanned as itself)
            listed = display_path(Path(target), Path(self.project)) in self.listed
            return [(ENV_UNRESOLVED, "child_file")] if data is not None and not listed else []
        if data is None:
            # a file the module places (by `__file__`, an absolute path) that is not there
            # or not readable is not seen; one named in the folder the child starts in (a
            # relative path, `make` alone) that is not in the project's may be anywhere
            return [] if spec.startswith("@cwd") else [(ENV_UNRESOLVED, "child_file")]
        interpreter = ""
        if kind.startswith("other:"):
            kind, interpreter = "other", kind[len("other:") :]
        if kind == "program":
            kind, interpreter = run_by(data)
        if kind == "python":
            return [] if display_path(Path(target), Path(self.project)) in self.listed else (target, data)
        if kind == "binary":
            return [(ENV_UNRESOLVED, "child_file")]
        return self._text_judged(kind, interpreter, target, data.decode("utf-8", "surrogateescape"))

    def _text_judged(self, kind: str, interpreter: str, target: str, text: str) -> list[tuple[str, str]]:
        """(leaf, form) of each read the text of the file `target`, run as `kind`, makes."""
        if kind == "logini":
            return self._logging_reads(text)
        if kind.startswith("build:"):
            names, whole = self._build_reads(kind[len("build:") :], target, text)
            found = [(env_subject(name), "child_script") for name in names]
            return [*found, (ENV_UNRESOLVED, "environ_whole")] if whole else found
        if kind == "shell":  # (its sourced files and fed programs too: a script's own judgment)
            return self.script_reads(target, text, set())
        if kind == "make":
            text = "\n".join(self._makefile_texts(target, text))
        names, whole = text_reads(kind, interpreter, text, self.declared, self._python_whole)
        found = [(env_subject(name), "child_script") for name in names]
        return [*found, (ENV_UNRESOLVED, "environ_whole")] if whole else found

    def _logging_reads(self, text: str) -> list[tuple[str, str]]:
        """What a logging config file (`logging.config.fileConfig`) reads: its words, and
        the environment whole where its eval'd values use it."""
        code = [value for _, value in _LOGGING_CODE.findall(text)]
        names = named_variables(text, self.declared)
        # (eval'd in the logging module's namespace, where `os` and `sys` are its imports)
        whole = any(self._python_whole("import os, sys\nvalue = " + value) for value in code)
        return [(env_subject(name), "child_script") for name in names] + ([(ENV_UNRESOLVED, "environ_whole")] if whole else [])

    def _build_reads(self, tool: str, target: str, text: str) -> tuple[list[str], bool]:
        """What a build tool's run of the build file `target` reads (childenv.BUILD_TOOLS):
        cmake the lists and .cmake files under its folder too (`add_subdirectory`,
        `include`), by their words and cmake's whole-environment marks; ninja its rules'
        commands, with the files it includes; npm (yarn, pnpm) the scripts of package.json
        as shell scripts."""
        if tool == "cmake":
            texts = [text, *self._cmake_parts(target)]
            return text_reads("other", "cmake", "\n".join(texts), self.declared, self._python_whole)
        if tool == "ninja":
            joined = "\n".join(self._ninja_texts(target, text))
            commands = [
                line.partition("=")[2].replace("$$", "$") for line in joined.split("\n")
                if line.strip().startswith("command") and "=" in line
            ]
            whole = shell_prints_environment("\n".join(commands), self._python_whole)
            return named_variables(joined, self.declared), whole
        try:
            scripts = json.loads(text).get("scripts", {})
        except (ValueError, AttributeError):
            scripts = None
        if not isinstance(scripts, dict) or not all(isinstance(v, str) for v in scripts.values()):
            return named_variables(text, self.declared), False  # (not a package.json: its words)
        return text_reads("shell", "", "\n".join(scripts.values()), self.declared, self._python_whole)

    def _cmake_parts(self, target: str) -> Iterator[str]:
        """The other CMakeLists.txt and .cmake files under the folder of `target` (a list
        takes them in by `add_subdirectory` and `include`)."""
        count = 0
        for folder, dirs, files in os.walk(os.path.dirname(target)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = os.path.join(folder, name)
                if path != target and (name == "CMakeLists.txt" or name.endswith(".cmake")) and count < _MAX_PARTS:
                    count += 1
                    data = self._read(path)
                    yield "" if data is None else data.decode("utf-8", "surrogateescape")

    def _ninja_texts(self, path: str, text: str, depth: int = 0) -> Iterator[str]:
        """A build.ninja's text and those of the files it includes (`include`, `subninja`)."""
        yield text
        if depth >= _MAX_INCLUDES:
            return
        for line in _NINJA_INCLUDE.findall(text):
            included = os.path.normpath(os.path.join(os.path.dirname(path), line.strip()))
            data = self._read(included) if "$" not in line else None
            if data is not None:
                yield from self._ninja_texts(included, data.decode("utf-8", "surrogateescape"), depth + 1)

    def _module_file(self, spec: str, module: str) -> str:
        """The path spec of the file a `python -m` module's dotted path `spec` runs, where
        it is under the project or a root ("" where it is not; in a folder not shown, the
        spec of one where some file of the tree may be it)."""
        for candidate in (f"{spec}.py", f"{spec}/__main__.py"):
            if candidate.startswith(ANY_FOLDER):
                if self._anywhere(candidate[len(ANY_FOLDER) :], "python"):
                    return candidate
                continue
            target = self._resolved(candidate, module)
            if target is not None and os.path.isfile(target) and any(
                target.startswith(top + os.sep) for top in self.tops
            ):
                return candidate
        return ""

    def _anywhere(self, tail: str, kind: str) -> bool:
        """Does a file or folder under the project or a root end with the relative path
        `tail` (`/scripts/show.sh`), other than a module of the tree run by Python (its
        reads are reported in it)? One going up (`..`) may be anything."""
        tail = os.path.normpath("/" + tail.lstrip("/"))
        if tail == "/" or ".." in tail.split("/"):
            return True
        if self._everything is None:
            self._everything = set()
            for top in self.tops:
                for folder, dirs, files in os.walk(top):
                    dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
                    self._everything.update(os.path.join(folder, name) for name in (*dirs, *files))
        tail = tail.replace("/", os.sep)
        return any(
            path.endswith(tail) and not (kind == "python" and display_path(Path(path), Path(self.project)) in self.listed)
            for path in self._everything
        )

    def _excluded(self, rel: str) -> bool:
        """Does a scan.excludes pattern match the file or a folder above it?"""
        parts = rel.split("/")
        candidates = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
        return any(fnmatch.fnmatchcase(c, pattern) for c in candidates for pattern in self.settings.excludes)

    def _resolved(self, spec: str, module: str) -> str | None:
        if spec.startswith("@file"):
            path = module + spec[len("@file") :]
        elif spec.startswith("@here"):
            path = os.path.dirname(module) + spec[len("@here") :]
        elif spec.startswith("@cwd"):
            path = self.project + spec[len("@cwd") :]
        elif spec.startswith("/"):
            path = spec
        else:
            return None
        return os.path.normpath(path)

    def _read(self, path: str) -> bytes | None:
        if not os.path.isfile(path):
            return None
        try:
            return read_source(path, self.settings.max_bytes)
        except NotReadable:
            return None

    def _makefile_texts(self, path: str, text: str, depth: int = 0) -> Iterator[str]:
        """A Makefile's text and those of the files it includes (literal names, relative
        to the folder make runs in, the Makefile's)."""
        yield text
        if depth >= _MAX_INCLUDES:
            return
        for line in _INCLUDE.findall(text):
            for name in line.split():
                if "$" in name:
                    continue
                included = os.path.normpath(os.path.join(os.path.dirname(path), name))
                data = self._read(included)
                if data is not None:
                    yield from self._makefile_texts(included, data.decode("utf-8", "surrogateescape"), depth + 1)

    def script_reads(self, target: str, text: str, seen: set[str], depth: int = 0) -> list[tuple[str, str]]:
        """(leaf, form) of each read the shell script at `target` (its text `text`) makes,
        judged as its own file: its text as a `-c` script is (text_reads), the programs it
        feeds an interpreter (a heredoc, a here-string, `python -c CODE`) as that
        interpreter's, and the files it sources or runs by a path it shows (its own folder
        spelled `"$(dirname "$0")"`), followed; `source <(...)` is a script not shown."""
        seen.add(target)
        names, whole = text_reads("shell", "", text, self.declared, self._python_whole)
        found = [(env_subject(name), "child_script") for name in names]
        if whole:
            found.append((ENV_UNRESOLVED, "environ_whole"))
        for reader, program in fed_programs(text):
            found += self._program_reads(reader, program)
        if depth >= _MAX_INCLUDES:
            return list(dict.fromkeys(found))
        files = script_files(here_spelled(text), "@cwd")
        for kind, spec in [item for file in files for item in self.expanded(*file, target)]:
            inner = self._resolved(spec, target) if spec and not spec.startswith(ANY_FOLDER) else None
            data = self._read(inner) if inner is not None else None
            if inner is not None and data is not None and (kind == "shell" or (kind == "program" and run_by(data)[0] == "shell")):
                if inner not in seen and any(inner == top or inner.startswith(top + os.sep) for top in self.tops):
                    found += self.script_reads(inner, data.decode("utf-8", "surrogateescape"), seen, depth + 1)
                continue
            if inner is not None and data is not None and (kind == "python" or (kind == "program" and run_by(data)[0] == "python")):
                if display_path(Path(inner), Path(self.project)) not in self.listed:
                    found += self._program_reads("python", data.decode("utf-8", "surrogateescape"))
                continue
            judged = self.judged(kind, spec, target)
            if isinstance(judged, list):
                found += judged
            else:  # (`cd "$(dirname "$0")/.." && python3 -m tools.dump`: the module's file, as Python)
                found += self._program_reads("python", judged[1].decode("utf-8", "surrogateescape"))
        return list(dict.fromkeys(found))

    def _program_reads(self, reader: str, program: str) -> list[tuple[str, str]]:
        """(leaf, form) of what a program fed to (or given by `-c` to) an interpreter reads."""
        if reader == "python":
            try:
                tree = ast.parse(program)
            except (SyntaxError, ValueError):
                return [(ENV_UNRESOLVED, "child_script")]  # (not Python the scanner can read)
            settings = ScanSettings(env_vars=tuple(sorted(self.declared)))
            return [
                (str(read[1]), "environ_whole" if read[1] == ENV_UNRESOLVED else "child_script")
                for read in DoorScan(tree, program, settings).reads()
            ]
        kind, _, interpreter = reader.partition(":")
        names, whole = text_reads(kind, interpreter, program, self.declared, self._python_whole)
        found = [(env_subject(name), "child_script") for name in names]
        return [*found, (ENV_UNRESOLVED, "environ_whole")] if whole else found

    def _python_whole(self, code: str) -> bool:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return False
        settings = ScanSettings(env_vars=tuple(sorted(self.declared)))
        return any(read[1] == ENV_UNRESOLVED for read in DoorScan(tree, code, settings).reads())


# ---- script files under the roots, each judged as its own file

_SCRIPT_SUFFIXES = (".sh", ".bash")
_SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", ".git", ".venv", "venv"})
# the spellings of the script's own folder (`"$(dirname "$0")"`, `${BASH_SOURCE%/*}`,
# `$(cd "$(dirname "$0")" && pwd)`): a file named under it is the script's neighbour
_SELF = r"""(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)"""
_HERE_SPELLINGS = re.compile(
    r"""\$\(\s*cd\s+"?\$\(\s*dirname\s+"?""" + _SELF + r""""?\s*\)"?\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)"""
    r"""|\$\(\s*(?:realpath|readlink\s+-f)\s+"?\$\(\s*dirname\s+"?""" + _SELF + r""""?\s*\)"?\s*\)"""
    r"""|\$\(\s*dirname\s+(?:--\s+)?"?""" + _SELF + r""""?\s*\)"""
    r"""|`\s*dirname\s+"?""" + _SELF + r""""?\s*`"""
    r"""|\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}"""
)
# `DIR="$(dirname "$0")"`: a variable holding the script's folder (after _HERE_SPELLINGS)
_HERE_VARIABLE = re.compile(r"""^[ \t]*(?:export[ \t]+|readonly[ \t]+|local[ \t]+)?([A-Za-z_]\w*)=["']?\0@here["']?[ \t]*$""", re.MULTILINE)


def script_candidates(project: Path, settings: ScanSettings, listed: Collection[str]) -> list[str]:
    """The script files under the roots, project-relative: shell scripts (`.sh`, `.bash`,
    or a first line that runs a shell) and Python programs with no `.py` suffix (a first
    line that runs Python), minus excludes and the files the listing holds."""
    found: list[str] = []
    listed = set(listed)
    for root in settings.roots:
        top = os.path.normpath(os.path.join(project, root))
        if not os.path.isdir(top):
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
            for name in sorted(files):
                path = os.path.join(folder, name)
                rel = display_path(Path(path), project)
                if name.endswith((".py", ".pyi")) or rel in listed or not os.path.isfile(path):
                    continue
                if name.endswith(_SCRIPT_SUFFIXES) or _shebang_kind(path) in ("shell", "python"):
                    found.append(rel)
    return sorted(dict.fromkeys(found))


def _shebang_kind(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return ""
    return run_by(head)[0] if head.startswith(b"#!") else ""


def judge_scripts(
    project: Path,
    settings: ScanSettings,
    results: dict[str, FileScan],
    where: dict[str, tuple[str, str, bytes]],
    listed: Collection[str],
    scan: Callable[[bytes, str], FileScan],
) -> tuple[dict[str, list[Row]], list[tuple[str, str]]]:
    """Judge every script file under the roots as its own file, however it is started
    (a run helper, a composed argv, a cron entry): a shell script by its text (its reads
    of declared variables, its whole-environment dumps and built names, the programs it
    feeds interpreters, and the scripts it sources or runs by a path it shows); a Python
    one with no `.py` suffix is scanned as a module of the tree (added to `results` and
    `where`). Returns the reads by script file, and the problems of Python ones."""
    judge = _Judge(project, settings, listed)
    sites: dict[str, list[Row]] = {}
    problems: list[tuple[str, str]] = []
    for rel in script_candidates(project, settings, listed):
        if judge._excluded(rel) or rel in results:
            continue
        target = os.path.normpath(os.path.join(project, rel))
        data = judge._read(target)
        if data is None:
            continue
        kind = "shell" if rel.endswith(_SCRIPT_SUFFIXES) else run_by(data)[0]
        if kind == "python":
            digest = content_digest(data)
            result = scan(data, digest)
            if result.problem is not None:
                problems.append((rel, result.problem))
            else:
                results[rel], where[rel] = result, (target, digest, data)
            continue
        found = judge.script_reads(target, data.decode("utf-8", "surrogateescape"), set())
        rows = {("<module>", leaf, 1, 0, 1, 0, "environ", form, "process") for leaf, form in found}
        if rows:
            sites[rel] = sorted(rows)
    return sites, problems


def here_spelled(text: str) -> str:
    """The script's text with each spelling of its own folder (`"$(dirname "$0")"`, a
    variable assigned one) put as the path spec `@here` (PATH_MARK first, literal_spec)."""
    text = _HERE_SPELLINGS.sub("\0@here", text)
    for name in set(_HERE_VARIABLE.findall(text)):
        text = re.sub(r"\$(?:\{" + name + r"\}|" + name + r"\b)", "\0@here", text)
    return text


_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")
_HERE_STRING = re.compile(r"<<<[ \t]*")


def fed_programs(text: str) -> list[tuple[str, str]]:
    """(reader, program) for each program a script feeds an interpreter: a heredoc
    (`python3 - <<'EOF' ... EOF`), a here-string (`bash <<< env`), given to a command that
    reads its program on its standard input (stdin_reader); and `python -c CODE`."""
    found: list[tuple[str, str]] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        here = _HERE_STRING.search(line)
        if here is not None:
            reader = _reader_before(line[: here.start()])
            words = _words(line[here.end() :])
            if reader is not None and words:
                found.append((reader, words[0]))
            continue
        doc = _HEREDOC.search(line)
        if doc is None:
            continue
        body: list[str] = []
        while index < len(lines) and (lines[index].lstrip("\t") if doc.group(1) else lines[index]).rstrip() != doc.group(3):
            body.append(lines[index])
            index += 1
        index += 1
        reader = _reader_before(line[: doc.start()])
        if reader is not None:
            found.append((reader, "\n".join(body)))
    for command in shell_commands(text):
        if command and command[0] is not None and is_python(program_name(command[0])):
            for at, word in enumerate(command[1:-1], 1):
                if word is not None and word.startswith("-") and not word.startswith("--") and word.endswith("c"):
                    code = command[at + 1]
                    if code is not None:
                        found.append(("python", code))
                    break
                if word is None or not word.startswith("-"):
                    break
    return found


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _reader_before(text: str) -> str | None:
    """The reader of the command that ends `text` (the last of a pipe or list)."""
    command = re.split(r"[;|&]|\bthen\b|\bdo\b", text)[-1]
    return stdin_reader(_words(command)) if command.strip() else None
