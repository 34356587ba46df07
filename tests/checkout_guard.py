"""A pytest plugin that fails the session when the tests left a new file or folder in the
checkout: a cache, a database or a stray output that belongs in a temporary or user folder.

It compares what `git status` lists as untracked or ignored before and after the session
(git lists a folder it does not track as one entry, so this costs one `git status` each
way). Outside a git checkout (an unpacked sdist) it does nothing. Python's own
`__pycache__/` folders are left to PYTHONPYCACHEPREFIX / PYTHONDONTWRITEBYTECODE (the
Makefile sets the first), since the conftest that could move them is compiled before it runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

_BEFORE = pytest.StashKey[frozenset[str]]()


def untracked(root: Path) -> frozenset[str] | None:
    """Untracked and ignored paths under the git checkout whose top is `root`, or None
    when `root` is not the top of a git checkout."""
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True, timeout=60)
        if Path(top.stdout.strip()).resolve() != root.resolve():
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-z", "--ignored"],
                                capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    entries = (e[3:] for e in status.stdout.split("\0") if e[:3] in ("?? ", "!! "))
    return frozenset(e for e in entries if Path(e).name != "__pycache__")


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller checks
        return
    before = untracked(session.config.rootpath)
    if before is not None:
        session.config.stash[_BEFORE] = before


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    after = untracked(session.config.rootpath) or frozenset()
    new = sorted(after - before)
    if not new:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"the tests wrote into the checkout: {', '.join(new)}; point that tool at a temporary "
            "or user cache folder (see tests/conftest.py), or give the test a tmp_path",
            red=True,
        )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
