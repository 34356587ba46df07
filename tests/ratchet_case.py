"""A small engine package written into a test's tmp_path and scanned, for the read
ratchet's tests of one spelling each: `pkg/` with the files given (dedented), scanned with
one declared variable, and checked against an empty allowlist."""

from __future__ import annotations

import textwrap
from pathlib import Path

from configbags.migrate.check import check
from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree

SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE",))
ACCESSORS = {"tp_size": "get_parallel().tp_size", "page_size": "get_schedule().page_size"}
RAW = "from legacy.server_args import get_server_args\n"
CTX = "from legacy.config_bags.accessors import get_context\n"


def write_pkg(root: Path, files: dict[str, str]) -> None:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def scan_with_home(
    root: Path, home: str, files: dict[str, str], settings: ScanSettings, cache_path: Path | None = None
) -> ScanResult:
    """`pkg/` scanned beside the record's home, `legacy/server_args.py` holding `home` (outside
    the roots, so read only as the home), with no file the scan could not read."""
    (root / "legacy").mkdir(exist_ok=True)
    (root / "legacy" / "__init__.py").write_text("")
    (root / "legacy" / "server_args.py").write_text(home)
    write_pkg(root, files)
    result = scan_tree(root, settings, cache_path=cache_path)
    assert not result.problems, result.problems
    return result


def scan_pkg(root: Path, files: dict[str, str], settings: ScanSettings = SETTINGS) -> ScanResult:
    write_pkg(root, files)
    result = scan_tree(root, settings)
    assert not result.problems, result.problems
    return result


def read_keys(result: ScanResult) -> set[tuple[str, str, str]]:
    return {(r.file, r.function, r.leaf) for r in result.reads}


def fails(result: ScanResult) -> bool:
    """Does the check fail with no allowlist entry (the read is reported)?"""
    return not check(result, [], ACCESSORS, min_files=1).ok


def failing_leaves(root: Path, files: dict[str, str], file: str = "pkg/user.py") -> set[str]:
    """The leaves reported in `file`, where the check fails (the reads are reported)."""
    result = scan_pkg(root, files)
    assert fails(result), result.reads
    return {r.leaf for r in result.reads if r.file == file}


ENV_SETTINGS = ScanSettings(roots=("pkg",), env_vars=("SGLANG_PAGE_SIZE", "SGLANG_TP_SIZE"))


def scan_env_pkg(root: Path, files: dict[str, str]) -> ScanResult:
    """`pkg/` scanned with two declared variables, so a read of one is told from the other."""
    return scan_pkg(root, files, ENV_SETTINGS)


def file_reads(result: ScanResult, file: str = "pkg/user.py") -> set[tuple[str, str]]:
    """(function, leaf) of every read reported in `file`."""
    return {(r.function, r.leaf) for r in result.reads if r.file == file}


def reads_via(result: ScanResult, file: str = "pkg/user.py") -> set[tuple[str, str, str]]:
    """(function, leaf, via) of every read reported in `file`."""
    return {(r.function, r.leaf, r.via) for r in result.reads if r.file == file}


def env_leaves(root: Path, files: dict[str, str], file: str = "pkg/user.py") -> set[str]:
    """The leaves `file` reads, scanned with the declared variable, when the check fails."""
    result = scan_env_pkg(root, files)
    assert fails(result), result.reads
    return {leaf for _, leaf in file_reads(result, file)}


def env_quiet(root: Path, files: dict[str, str]) -> None:
    """The package, scanned with the declared variable, passes the check."""
    result = scan_env_pkg(root, files)
    assert not fails(result), result.reads
