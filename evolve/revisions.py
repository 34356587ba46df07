"""A schema side given as a folder or as a git revision: `git archive REV -- PATH` into a
temporary folder, read there like any other folder and shown as `REV:PATH`.

Every revision a command takes (`diff`'s sides and `--against`, `lint --target`, `matrix
--against`) goes through `commit_of`: text that starts with `-` is refused (git would read
it as an option: `--output=FILE` truncates FILE), and the revision is resolved to its full
commit id, which is all the later git calls see."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs

from configbags.runtime.errors import ConfigError
from configbags.runtime.leaftypes import shown_text
from configbags.runtime.project import project_path


@attrs.frozen
class Side:
    folder: Path  # where the files are now (a temporary folder for a revision)
    shown: str  # how reports name its files' folder: the path as given, or REV:PATH


def _git(cwd: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise ConfigError("git is not installed, so a revision cannot be read") from None
    if done.returncode != 0:
        raise ConfigError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def repo_path(path: Path) -> tuple[Path, str]:
    """The repository holding `path` and the path inside it (posix); `path` need not exist
    in the working tree (a folder a revision has and the working tree lost)."""
    path = path.absolute()
    start = next((p for p in (path, *path.parents) if p.is_dir()), Path.cwd())
    top = Path(_git(start, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    resolved = start.resolve() / path.relative_to(start)
    try:
        return top, resolved.relative_to(top).as_posix()
    except ValueError:
        raise ConfigError(f"{path} is outside the git repository at {top}") from None


def option_like(text: str) -> bool:
    """Whether git would take `text` as an option rather than a revision."""
    return text.startswith("-")


def refuse_option_like(text: str, flag: str) -> None:
    if option_like(text):
        raise ConfigError(f"{flag} {text!r}: a revision never starts with '-' (git would read it as an option); "
                          f"give a branch, tag or commit")


def _resolve(text: str, cwd: Path) -> str | None:
    """The full commit id `text` names, or None (option-like text is never handed to git)."""
    if not text or option_like(text):
        return None
    try:
        found = _git(cwd, "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}").decode().strip()
    except ConfigError:
        return None
    return found or None


def is_revision(text: str, cwd: Path) -> bool:
    return _resolve(text, cwd) is not None


def commit_of(text: str, cwd: Path, flag: str) -> str:
    """The full commit id of the revision `flag` was given (exit 2 naming the flag for
    option-like text or a name git does not know)."""
    refuse_option_like(text, flag)
    found = _resolve(text, cwd)
    if found is None:
        raise ConfigError(f"{flag} {text!r} is not a git revision in {cwd}; give a branch, tag or commit")
    return found


def show(rev: str, file: Path, flag: str = "REV") -> str:
    """A file's text at a revision (`git show COMMIT:PATH`)."""
    top, rel = repo_path(file)
    return _git(top, "show", f"{commit_of(rev, top, flag)}:{rel}").decode("utf-8")


def _extract(tar: tarfile.TarFile, tmp: Path, rel: str, rev: str) -> None:
    """The archive of `rel` at `rev` into `tmp`. A symlink is kept only when it leads to a
    place inside `rel` (a namespace file linked from a subfolder reads as it does in the
    working tree); one that leads anywhere else (an absolute path, a device, `../..`, a
    part of the repository the archive does not hold) is refused, naming the revision and
    the link, before it is written: nothing outside the revision is ever read."""
    inside = os.path.realpath(tmp / rel)

    def refuse(member: tarfile.TarInfo) -> ConfigError:
        # the names are the revision's text: escaped, as every name from a file in a message
        return ConfigError(f"{rev}:{shown_text(member.name)} is a symlink to {member.linkname!r}, which leads outside "
                           f"{rev}:{rel}; a revision is read only from its own files: commit a regular file "
                           f"there, or a link to a file inside {rel}")

    def checked(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        if member.issym() or member.islnk():
            base = os.path.dirname(os.path.join(dest, member.name)) if member.issym() else dest
            target = os.path.realpath(os.path.join(base, member.linkname))
            if os.path.isabs(member.linkname) or os.path.commonpath([inside, target]) != inside:
                raise refuse(member)
        if not hasattr(tarfile, "data_filter"):  # pragma: no cover - Python before 3.10.12
            return member
        try:  # and the rest of the data filter: no absolute or escaping names, no devices
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError as exc:
            raise ConfigError(f"{rev}:{shown_text(member.name)}: {exc}; a revision is read only from its own files") from None

    if hasattr(tarfile, "data_filter"):
        tar.extractall(tmp, filter=checked)
    else:  # pragma: no cover - Python before 3.10.12 has no filter argument: check every member first
        for member in tar.getmembers():
            checked(member, str(tmp))
        tar.extractall(tmp)


@contextlib.contextmanager
def checkout(rev: str, path: Path, flag: str = "REV") -> Iterator[Side]:
    """The folder `path` (of the working tree) as it is at `rev`, in a temporary folder."""
    top, rel = repo_path(path)
    data = _git(top, "archive", "--format=tar", commit_of(rev, top, flag), "--", rel)
    with tempfile.TemporaryDirectory(prefix="configbags-rev-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            _extract(tar, Path(tmp), rel, rev)
        folder = Path(tmp) / rel
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{rev}:{shown_text(rel)} is a file, not a folder; name the schema folder")
        if not folder.is_dir():
            raise ConfigError(f"{shown_text(rel)} does not exist at revision {rev}")
        yield Side(folder, f"{rev}:{rel}")


@contextlib.contextmanager
def side(text: str, default_schema: Path, flag: str = "a side", *, revision_only: bool = False) -> Iterator[Side]:
    """A side as the user wrote it: a folder, `REV:PATH`, or a revision of the project's
    schema folder. With `revision_only` (`--against REV`) a folder of the same name is never
    read in its place; otherwise a name that is both a folder and a revision is refused as
    ambiguous, as git refuses it, since reading the folder would compare the working schema
    with itself and pass."""
    refuse_option_like(text, flag)
    if not revision_only:
        as_path = project_path(text)  # a folder is relative to the project, as every configbags path
        if as_path.is_dir():
            if is_revision(text, as_path):
                raise ConfigError(f"{flag} {shown_text(text)!r} is both a folder and a git revision; write "
                                  f"./{shown_text(text)} for the folder or refs/heads/{shown_text(text)} (or its commit) "
                                  f"for the revision")
            yield Side(as_path, text)
            return
    rev, sep, rest = text.partition(":")
    if sep and rest and is_revision(rev, Path.cwd()):
        with checkout(rev, Path(rest), flag) as found:
            yield found
        return
    if is_revision(text, default_schema if default_schema.is_dir() else Path.cwd()):
        with checkout(text, default_schema, flag) as found:
            yield found
        return
    if revision_only:
        commit_of(text, Path.cwd(), flag)  # raises, naming the flag: not a revision
    raise ConfigError(f"{flag} {text!r} is neither a schema folder nor a git revision; give a folder, REV or REV:PATH")
