"""The check's advice, round twenty-two: a read the record's home code makes for its caller
(`get_port()` returning `_GLOBAL_SERVER_ARGS.port`) is rewritten by hand, since no accessor
replaces the call; the check says so instead of promising `configbags ratchet fix`, which
refuses it. A plain raw read keeps the promise."""

from __future__ import annotations

from pathlib import Path

from ratchet_case import scan_with_home

from configbags.migrate.check import check
from configbags.migrate.scan import ScanSettings

SETTINGS = ScanSettings(roots=("pkg",))
ACCESSORS = {"port": "get_serving().port"}
HOME = (
    "import dataclasses\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n    port: int = 30000\n"
    "_GLOBAL_SERVER_ARGS = None\n"
    "def get_server_args():\n    return _GLOBAL_SERVER_ARGS\n"
    "def get_port():\n    return _GLOBAL_SERVER_ARGS.port\n"
)


def _message(tmp_path: Path, user: str) -> str:
    result = scan_with_home(tmp_path, HOME, {"user.py": user}, SETTINGS)
    report = check(result, [], ACCESSORS, min_files=1, roots=SETTINGS.roots)
    (failure,) = report.failures
    return failure.message


def test_a_read_through_home_code_is_rewritten_by_hand(tmp_path: Path) -> None:
    message = _message(tmp_path, "from legacy.server_args import get_port\ndef f():\n    return get_port()\n")
    assert "use get_serving().port instead, by hand" in message, message
    assert "`configbags ratchet fix` will not rewrite it" in message and "fix` rewrites it" not in message


def test_a_plain_raw_read_still_names_fix(tmp_path: Path) -> None:
    message = _message(tmp_path, "from legacy.server_args import get_server_args\ndef f():\n    return get_server_args().port\n")
    assert "use get_serving().port instead (`configbags ratchet fix` rewrites it)" in message, message
