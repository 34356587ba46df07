"""Which files are generated: a file with Go's "Code generated ... DO NOT EDIT." header is
listed as generated (and not counted as scanned) only inside a generated package (see
GENERATED_PACKAGE_MARKERS), and only when scanning it finds no read and no write and it
hands its importers nothing configbags does not generate (configbags.migrate.scan.scan_source):
what configbags generates reads nothing, so a header, even in a package forged around it,
labels a file but never hides a read or a flow.
Elsewhere the header means nothing."""

from __future__ import annotations

import re
import stat
from pathlib import Path

# Go's convention for generated files (golang.org/s/generatedcode), which linters skip;
# configbags' own generated modules start with it.
GENERATED_HEADER = re.compile(rb"\A[^\n]{0,20}Code generated [^\n]* DO NOT EDIT\.")
# A header alone does not make a file generated (a hand-written file could add it): it is
# listed as generated only inside a generated package, a folder whose `accessors.py` and
# `ratchet_allowlist.py` both carry the header, and only when it reads nothing. Those
# markers can be forged with the header; what cannot be is the scan of the file itself.
GENERATED_PACKAGE_MARKERS = ("accessors.py", "ratchet_allowlist.py")


class GeneratedPackages:
    """Is a folder a generated package (see GENERATED_PACKAGE_MARKERS)? Memoised per folder."""

    def __init__(self) -> None:
        self.known: dict[Path, bool] = {}

    def __call__(self, folder: Path) -> bool:
        found = self.known.get(folder)
        if found is None:
            found = all(has_generated_header(folder / name) for name in GENERATED_PACKAGE_MARKERS)
            self.known[folder] = found
        return found


def has_generated_header(path: Path) -> bool:
    try:
        # A FIFO or device named accessors.py must not block or stream forever.
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return GENERATED_HEADER.match(head) is not None
