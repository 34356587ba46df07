"""Which files a scan reads, and reading them safely.

Only regular files are ever opened: a FIFO named `x.py` would block a read forever and a
link to /dev/zero would stream forever, so special files are reported instead. Folders
reached through a symlink are followed (a raw read inside one must not pass unseen),
each real folder once, so a link loop ends."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import stat
import zipfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from configbags.migrate.childenv import run_by
from configbags.migrate.scanmodel import ScanSettings

# Folders under a root that are not walked when they plainly are what their name says:
# other people's code (a virtualenv, a node tree) or a tool's store. Each one skipped is
# listed in the scan result and the check's output; to scan one, give it as a root.
# (`__pycache__` is walked: a `.py` file there is as importable by path as any other.)
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "node_modules", ".mypy_cache", ".ruff_cache", ".tox", ".nox"})
# What shows a skipped name is plainly what it says (any one of the files); a name without
# an entry needs none. A folder holding `__init__.py` is a package Python imports, never
# skipped, and neither is one without its marker (a `.venv` with no pyvenv.cfg is code).
_SKIP_MARKERS = {
    ".venv": ("pyvenv.cfg",),
    ".git": ("HEAD",),
    ".hg": ("requires", "00changelog.i"),
    ".svn": ("wc.db", "entries"),
    ".mypy_cache": ("CACHEDIR.TAG",),
    ".ruff_cache": ("CACHEDIR.TAG",),
}
# How much of a file without a suffix is read to see whether Python runs it (its `#!` line).
_SHEBANG_BYTES = 256
# Compiled code: what a .pyc runs, the scanner cannot read (configbags.migrate.files._compiled).
COMPILED_SUFFIX = ".pyc"
# What Python runs as source, in any case (`python tool.PY` runs it like `tool.py`).
SOURCE_SUFFIXES = (".py", ".pyw")


@attrs.frozen
class Listing:
    files: tuple[str, ...]  # project-relative posix paths (or absolute ones for roots outside)
    problems: tuple[tuple[str, str], ...] = ()  # (path, why it was not listed as a file)
    skipped: tuple[str, ...] = ()  # folders under a root not walked (SKIP_DIRS), as paths
    unmatched_excludes: tuple[str, ...] = ()  # exclude patterns that left nothing out


def display_path(path: Path, project: Path) -> str:
    """`path` relative to the project when inside it, else absolute: roots may lie anywhere."""
    path = Path(os.path.normpath(path))
    try:
        return path.relative_to(os.path.normpath(project)).as_posix()
    except ValueError:
        return path.as_posix()


def list_files(project: Path, settings: ScanSettings) -> list[str]:
    """Python files under the roots, minus excludes, as sorted paths (see display_path)."""
    return list(list_tree(project, settings).files)


def list_tree(project: Path, settings: ScanSettings) -> Listing:
    found: set[str] = set()
    problems: list[tuple[str, str]] = []
    skipped: set[str] = set()
    excluder = _Excluder(settings.excludes)
    seen: set[tuple[int, int]] = set()  # (device, inode) of every folder walked
    for root in settings.roots:
        top = Path(root) if Path(root).is_absolute() else project / root
        if not top.is_dir():
            rel = display_path(top, project)
            # a file root; reading it reports a special one (a missing root lists nothing,
            # which the check's file floor catches)
            if (top.exists() or top.is_symlink()) and not excluder(rel):
                found.add(rel)
            continue
        _walk(top, project, excluder, seen, found, problems, skipped)
    found.update(_project_metadata(project, excluder, settings))
    return Listing(
        tuple(sorted(found)),
        tuple(sorted(set(problems))),
        tuple(sorted(skipped)),
        tuple(p for p in settings.excludes if p not in excluder.matched),
    )


def _walk(
    folder: Path,
    project: Path,
    excluded: _Excluder,
    seen: set[tuple[int, int]],
    found: set[str],
    problems: list[tuple[str, str]],
    skipped: set[str],
) -> None:
    rel_dir = display_path(folder, project)
    try:
        info = folder.stat()
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        problems.append((rel_dir, f"cannot list folder: {exc.strerror or exc}"))
        return
    identity = (info.st_dev, info.st_ino)
    if identity in seen:
        return  # a link loop, or a second way into a folder whose files are already listed
    seen.add(identity)
    for entry in entries:
        rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
        if excluded(rel):
            continue
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError:
            is_dir = False
        if is_dir:
            if entry.name in SKIP_DIRS and _plainly_skipped(folder / entry.name, entry.name):
                skipped.add(rel)
            else:
                _walk(folder / entry.name, project, excluded, seen, found, problems, skipped)
        elif entry.name.lower().endswith(SOURCE_SUFFIXES) or side_code(rel):
            found.add(rel)
        elif "." not in entry.name and _python_script(folder / entry.name):
            found.add(rel)  # `bin/launch` with a `#!/usr/bin/env python3` line
        elif entry.name.lower().endswith(COMPILED_SUFFIX):
            why = _compiled(folder, entry.name)
            if why is not None:
                problems.append((rel, why))
        else:  # (zipimport finds an archive by its end, whatever its name: `vendor.whl`, `logo.png`)
            why = _archived_source(folder / entry.name, entry.name.lower().endswith(ARCHIVE_SUFFIXES))
            if why is not None:
                problems.append((rel, why))


def _python_script(path: Path) -> bool:
    """Is a file without a suffix a script Python runs (a `#!...python...` first line)?"""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            head = handle.read(_SHEBANG_BYTES)
    except OSError:
        return False  # listed or not, an unreadable file runs nothing
    first = head.split(b"\n", 1)[0]
    # (the program its wrappers run, as a child's file is judged: `uv run --script`,
    # `torchrun`, `accelerate launch`, `graalpy`; or Python named anywhere on the line)
    return head.startswith(b"#!") and (b"python" in first or b"pypy" in first or run_by(first)[0] == "python")


def _plainly_skipped(folder: Path, name: str) -> bool:
    """Is a folder with a SKIP_DIRS name plainly what it says (so not walked)?"""
    if (folder / "__init__.py").exists():
        return False  # a package Python imports from its parent: `import node_modules`
    if name.isidentifier() and _in_package(folder.parent):
        # `import pkg.node_modules.mod`: under a regular package (or a namespace package
        # inside one, `pkg/plugins/node_modules`), a folder with an identifier's name is a
        # namespace package Python imports (PEP 420)
        return False
    markers = _SKIP_MARKERS.get(name)
    return markers is None or any((folder / marker).exists() for marker in markers)


def _in_package(folder: Path) -> bool:
    """Is `folder` a package Python imports from a regular package above it: a regular
    package itself, or a chain up to one of identifier-named folders that hold Python
    modules (namespace packages, `pkg/plugins/` holding `a.py`)? A folder holding no module
    of its own (`pkg/js/`) is plainly no package of the code's."""
    for _ in range(32):
        if (folder / "__init__.py").exists():
            return True
        if not folder.name.isidentifier() or folder.parent == folder or not _holds_modules(folder):
            return False
        folder = folder.parent
    return False


def _holds_modules(folder: Path) -> bool:
    try:
        return any(entry.name.endswith(SOURCE_SUFFIXES) and entry.is_file() for entry in os.scandir(folder))
    except OSError:
        return False


# Archives Python imports source from when one is on sys.path (zipimport), by their usual
# names; zipimport reads any file that ends in a zip's end record (a wheel, `data.bin`, an
# image with a zip appended), so every other file's tail is looked at too.
ARCHIVE_SUFFIXES = (".zip", ".pyz", ".egg")
# A zip's end record: its signature, within the last 22 bytes plus the longest comment
_ZIP_END = b"PK\x05\x06"
_ZIP_TAIL_BYTES = 22 + 0xFFFF


def _archived_source(path: Path, named_archive: bool = True) -> str | None:
    """Why a zip archive under a root fails the check: it holds Python code that Python
    imports from it (`sys.path.insert(0, "vendor.zip")`), which the ratchet does not read.
    Only its directory is read; an archive of data, or no zip at all, is no problem. A file
    not named as an archive is opened as one only where its tail holds a zip's end record."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        if not named_archive and not _ends_in_zip(path):
            return None
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    code = [n for n in names if n.lower().endswith((*SOURCE_SUFFIXES, COMPILED_SUFFIX))]
    if not code:
        return None
    return (
        f"a zip archive holding Python code ({code[0]}{' and more' if len(code) > 1 else ''}), which Python imports "
        "when the archive is on sys.path and the ratchet does not read; unpack it under the root, or delete it"
    )


def _ends_in_zip(path: Path) -> bool:
    """Does the file's tail hold a zip's end record (what zipimport looks for)?"""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < 22:
            return False
        handle.seek(max(0, size - _ZIP_TAIL_BYTES))
        return _ZIP_END in handle.read(_ZIP_TAIL_BYTES)


def _compiled(folder: Path, name: str) -> str | None:
    """Why a .pyc under a root fails the check, or None where Python runs its source.

    Python imports a bare `mod.pyc` when no `mod.py` is beside it, and runs a
    `__pycache__/mod.<tag>.pyc` in place of `mod.py` without comparing the two when it is
    an unchecked hash-based one (PEP 552). What these run, the ratchet cannot read. A
    `__pycache__` file whose source is gone (left by a module deleted or renamed) is never
    imported, so it is not reported."""
    module = name.split(".")[0]
    in_cache = folder.name == "__pycache__"
    source_folder = folder.parent if in_cache else folder
    if not any((source_folder / f"{module}{suffix}").is_file() for suffix in SOURCE_SUFFIXES):
        if in_cache:
            return None
        return (
            f"compiled code without its source (Python imports it as `{module}`), which the ratchet cannot read; "
            "delete it or commit its source"
        )
    if in_cache and _unchecked_hash_pyc(folder / name):
        return (
            "an unchecked hash-based .pyc: Python runs it in place of its source without comparing the two, "
            "so the ratchet cannot read what runs; delete it (Python rebuilds it from the source)"
        )
    return None


def _unchecked_hash_pyc(path: Path) -> bool:
    """Does the .pyc's header (PEP 552: magic, then flags) say hash-based, unchecked?"""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO named x.pyc is never opened; nor can Python import it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return False  # an unreadable .pyc cannot be imported either
    return len(head) == 8 and int.from_bytes(head[4:8], "little") & 0b11 == 0b01


class _Excluder:
    """Whether a path is excluded, remembering which patterns ever matched: one that
    matches nothing is a mistake (a path from the wrong base, a typo), never silent."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self.matched: set[str] = set()

    def __call__(self, rel: str) -> bool:
        hits = [pattern for pattern in self.patterns if fnmatch.fnmatchcase(rel, pattern)]
        self.matched.update(hits)
        return bool(hits)


class NotReadable(Exception):
    """The file is not scanned; the message says why."""


def read_source(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`. Anything else (a FIFO, a device,
    a socket, a link to one, a dangling link) raises NotReadable without being opened for
    reading, and so does a file that grew past the limit between stat and read."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise NotReadable(f"cannot read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise NotReadable(f"not a regular file ({_kind(info.st_mode)}); never opened")
    if info.st_size > max_bytes:
        raise NotReadable(f"too large to scan ({info.st_size} bytes > {max_bytes})")
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the stat, open does not wait
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise NotReadable(f"cannot read: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotReadable("not a regular file; not read")
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            # a regular file in name only: /proc/self/mem (EIO), a file on a failing disk
            raise NotReadable(f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise NotReadable(f"too large to scan (more than {max_bytes} bytes)")
    return data


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "a special file"


# ---- files that are not Python but whose parts Python runs or imports

# A `.pth` file under a root: `site` (at start-up, or `site.addsitedir(folder)`) runs each
# of its lines that starts with `import`. Entry points (`*.dist-info/entry_points.txt`,
# `*.egg-info/entry_points.txt`, pyproject.toml's `[project.scripts]` and
# `[project.entry-points.*]`, setup.cfg's `[options.entry_points]`): a plugin loader
# (`ep.load()` of `importlib.metadata.entry_points(...)`) imports each object reference
# (`a.b:c`), by a name no module spells. Both are read as Python: python_view gives the
# module they stand for, line for line, which the scan judges like any other (an entry
# point's reference is handed to `__entry_point__`, a callable no module defines, so a
# door it names escapes there: configbags.migrate.resolvers.door_names).
_PTH = ".pth"
_ENTRY_POINTS = "entry_points.txt"
_METADATA_FOLDERS = (".dist-info", ".egg-info")
_PROJECT_METADATA = ("pyproject.toml", "setup.cfg")
# the sections of pyproject.toml and setup.cfg that declare entry points
_ENTRY_SECTION = re.compile(
    r"^\[\s*(?:project\.(?:scripts|gui-scripts|entry-points)|tool\.poetry\.(?:scripts|plugins)|options\.entry_points)\b"
)
_OBJECT_REFERENCE = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\s*:\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
ENTRY_POINT_CALL = "__entry_point__"
# what an entry-point declaration must show to be worth listing at the project's top level:
# a word of a door (the environment, the record's module, generated accessors, the runtime)
_DOOR_WORDS = ("environ", "getenv", "accessors", "configbags.runtime", "get_context", "process_context")


def side_code(rel: str) -> bool:
    """Is a file Python runs or imports parts of, though not Python source: a `.pth`
    file, or the entry points of a distribution's metadata folder?"""
    name = rel.rpartition("/")[2]
    if name.lower().endswith(_PTH):
        return True
    folder = rel.rpartition("/")[0].rpartition("/")[2]
    return name == _ENTRY_POINTS and folder.endswith(_METADATA_FOLDERS)


def _project_metadata(project: Path, excluded: _Excluder, settings: ScanSettings) -> list[str]:
    """The entry-point declarations at the project's top level (its pyproject.toml,
    setup.cfg, metadata folders) that show a door's word: what a plugin loader imports."""
    names = [*_PROJECT_METADATA]
    try:
        names += [f"{entry.name}/{_ENTRY_POINTS}" for entry in os.scandir(project)
                  if entry.name.endswith(_METADATA_FOLDERS) and entry.is_dir()]
    except OSError:
        return []
    found = []
    for rel in names:
        path = project / rel
        if excluded(rel) or not path.is_file():
            continue
        try:
            view = python_view(rel, read_source(path, settings.max_bytes))
        except NotReadable:
            continue
        words = (*_DOOR_WORDS, settings.raw_accessor, settings.record_class, *settings.record_attributes)
        if any(word and word in view.decode() for word in words):
            found.append(rel)
    return found


def python_view(rel: str, data: bytes) -> bytes:
    """The Python a side file stands for, line for line (side_code; a project's
    pyproject.toml or setup.cfg); any other file's bytes as they are."""
    name = rel.rpartition("/")[2]
    if name.lower().endswith(_PTH):
        # what site runs: the lines starting with `import` (the others are folders)
        return "\n".join(
            line if line.startswith(("import ", "import\t")) else "" for line in side_lines(data)
        ).encode("utf-8", "surrogateescape")
    if not (side_code(rel) or name in _PROJECT_METADATA):
        return data
    lines = side_lines(data)
    out: list[str] = []
    inside = name == _ENTRY_POINTS
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            inside = name == _ENTRY_POINTS or _ENTRY_SECTION.match(stripped) is not None
            out.append("")
            continue
        if not inside or stripped.startswith(("#", ";")):
            out.append("")
            continue
        value = line.partition("=")[2] if "=" in line else line
        out.append("; ".join(
            f"{ENTRY_POINT_CALL}({f'{module}:{attribute}'!r})" for module, attribute in _OBJECT_REFERENCE.findall(value)
        ))
    return "\n".join(out).encode()


def side_lines(data: bytes) -> list[str]:
    """A side file's lines as the reader that runs them splits them: site (a `.pth` file,
    in text mode; since Python 3.13 `str.splitlines` after a UTF-8 BOM) and
    importlib.metadata (`splitlines`) end a line at a lone CR too, and at every other
    line end `str.splitlines` knows; a byte that is not UTF-8 is kept as it is."""
    return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "surrogateescape").splitlines()


# the group a section header of pyproject.toml or setup.cfg names, where it declares one
_SCRIPT_GROUPS = {
    "project.scripts": "console_scripts", "project.gui-scripts": "gui_scripts", "tool.poetry.scripts": "console_scripts",
}
_GROUP_SECTION = re.compile(r"""^\[\s*(?:project\.entry-points|tool\.poetry\.plugins)\.(?:"([^"]+)"|'([^']+)'|([\w.-]+))\s*\]""")
_CFG_GROUP = re.compile(r"^([\w.-]+)\s*=")


def declared_groups(project: Path, listed: Sequence[str], settings: ScanSettings) -> dict[str, frozenset[str]]:
    """The entry-point groups the tree declares, each with the modules its entries name
    (`args = pkg.prov:provide` gives pkg.prov): the sections of each entry-point file the
    scan lists (side_code) and of the project's top-level pyproject.toml, setup.cfg and
    metadata folders (not excluded). A plugin loader's `ep.load()` of these groups
    imports those modules, as far as the tree shows: configbags.migrate.scan judges them."""
    excluded = _Excluder(settings.excludes)
    names = [rel for rel in listed if side_code(rel) and not rel.lower().endswith(_PTH)]
    top = [*_PROJECT_METADATA]
    with contextlib.suppress(OSError):
        top += [f"{entry.name}/{_ENTRY_POINTS}" for entry in os.scandir(project)
                if entry.name.endswith(_METADATA_FOLDERS) and entry.is_dir()]
    names += [rel for rel in top if not excluded(rel) and (project / rel).is_file()]
    groups: dict[str, set[str]] = {}
    for rel in dict.fromkeys(names):
        try:
            lines = side_lines(read_source(project / rel, settings.max_bytes))
        except NotReadable:
            continue
        for group, module in _entries_of(rel.rpartition("/")[2], lines):
            groups.setdefault(group, set())
            if module:
                groups[group].add(module)
    return {group: frozenset(modules) for group, modules in groups.items()}


def _entries_of(name: str, lines: list[str]) -> list[tuple[str, str]]:
    """The (group, module) of each entry one metadata file declares, and ("group", "")
    for each group it opens."""
    found: list[tuple[str, str]] = []
    group: str | None = None
    cfg = False  # inside setup.cfg's `[options.entry_points]`
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("["):
            header = stripped.strip("[] \t")
            found_section = _GROUP_SECTION.match(stripped)
            group = (header if name == _ENTRY_POINTS else _SCRIPT_GROUPS.get(header)
                     or (next(g for g in found_section.groups() if g) if found_section is not None else None))
            cfg = name == "setup.cfg" and header == "options.entry_points"
            if group is not None:
                found.append((group, ""))
            continue
        if cfg and line[:1] not in (" ", "\t"):
            opened = _CFG_GROUP.match(stripped)
            group = opened.group(1) if opened is not None else None
            if group is None:
                continue
            found.append((group, ""))
            stripped = stripped.partition("=")[2].strip()
            if not stripped:
                continue
        if group is not None and "=" in stripped:
            value = stripped.partition("=")[2].strip().strip("\"'")
            module = value.partition(":")[0].partition("[")[0].strip()
            found.append((group, module))
    return found
