"""Writing `generated/`: all files or none. The new tree is written beside the target and
swapped in with renames, so a failure at any point leaves the old tree byte-identical.
The generator owns the folder: files it did not produce disappear with the swap."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from pathlib import Path


def current(out: Path) -> dict[str, str]:
    if not out.is_dir():
        return {}
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(out.iterdir())
        if p.is_file() and not p.name.startswith(".")
    }


def diff(out: Path, files: dict[str, str]) -> str:
    """A unified diff from what is on disk to what the schema produces ('' if equal)."""
    old = current(out)
    chunks = []
    for name in sorted(set(old) | set(files)):
        a, b = old.get(name, ""), files.get(name, "")
        if a != b:
            chunks.extend(
                difflib.unified_diff(
                    a.splitlines(keepends=True),
                    b.splitlines(keepends=True),
                    f"{out.name}/{name}" if name in old else "/dev/null",
                    f"{out.name}/{name}" if name in files else "/dev/null",
                )
            )
    return "".join(chunks)


def write_tree(out: Path, files: dict[str, str]) -> bool:
    """Replace `out` with exactly `files`; returns False when nothing changed."""
    if current(out) == files and not _strays(out, files):
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    retired = out.parent / f".{out.name}.old-{os.getpid()}"
    try:
        for name, content in files.items():
            (staging / name).write_text(content, encoding="utf-8")
        if out.exists():
            os.rename(out, retired)
        os.rename(staging, out)
    except BaseException:
        if retired.exists() and not out.exists():
            os.rename(retired, out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(retired, ignore_errors=True)
    return True


def _strays(out: Path, files: dict[str, str]) -> bool:
    return out.is_dir() and any(p.name not in files for p in out.iterdir())
