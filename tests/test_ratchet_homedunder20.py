"""Round twenty's false passes of the read ratchet about the record class's dunder methods
in its home module (an outside attack, finding 1). The home is excluded from the scan, so
what a method of the record reads off `self` is charged where it is called on the record;
a dunder Python calls for syntax (`rec["port"]` via `__getitem__`, `a, = rec`, `if rec`,
`len(rec)`, `rec()`, `with rec`, `rec + 1`, `seq[rec]`, `-rec`) was never charged. Each has
a twin whose dunder reads nothing off the record, which stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, reads_via, scan_with_home, write_pkg

from configbags.migrate.scan import ScanResult, ScanSettings, scan_tree

SETTINGS = ScanSettings(roots=("pkg",))

HOME = (
    "import dataclasses\nfrom typing import Optional\n"
    "@dataclasses.dataclass\nclass ServerArgs:\n"
    "    page_size: int = 1\n    tp_size: int = 1\n    port: int = 30000\n"
    "{body}"
    "_GLOBAL_SERVER_ARGS: Optional['ServerArgs'] = None\n"
    "def set_global_server_args(a):\n    global _GLOBAL_SERVER_ARGS\n    _GLOBAL_SERVER_ARGS = a\n"
    "def get_server_args() -> 'ServerArgs':\n    return _GLOBAL_SERVER_ARGS\n"
)
USER = "from legacy.server_args import get_server_args\ndef f():\n{body}"


def _scan(tmp_path: Path, methods: str, body: str) -> ScanResult:
    return scan_with_home(tmp_path, HOME.format(body=methods), {"user.py": USER.format(body=body)}, SETTINGS)


def _method(signature: str, returns: str) -> str:
    return f"    def {signature}:\n        return {returns}\n"


# (method, reading body, quiet body, role code in f)
CASES = [
    ("__getitem__(self, k)", "getattr(self, k)", "None", "    args = get_server_args()\n    return args['port']\n"),
    ("__getitem__(self, k)", "self.port", "k", "    return get_server_args()['x']\n"),
    ("__iter__(self)", "iter((self.port,))", "iter(())", "    a, = get_server_args()\n    return a\n"),
    ("__iter__(self)", "iter((self.port,))", "iter(())", "    for a in get_server_args():\n        return a\n"),
    ("__iter__(self)", "iter((self.port,))", "iter(())", "    a, *b = get_server_args()\n    return a\n"),
    ("__bool__(self)", "self.port > 0", "True", "    return 1 if get_server_args() else 0\n"),
    ("__bool__(self)", "self.port > 0", "True", "    if get_server_args():\n        return 1\n"),
    ("__bool__(self)", "self.port > 0", "True", "    return get_server_args() or 1\n"),
    ("__bool__(self)", "self.port > 0", "True", "    return not get_server_args()\n"),
    ("__len__(self)", "self.port", "0", "    return len(get_server_args())\n"),
    ("__len__(self)", "self.port", "0", "    a = get_server_args()\n    while a:\n        return 1\n"),
    ("__call__(self)", "self.port", "None", "    return get_server_args()()\n"),
    ("__enter__(self)", "self.port", "None", "    with get_server_args() as p:\n        return p\n"),
    ("__add__(self, o)", "self.port + o", "o", "    return get_server_args() + 0\n"),
    ("__radd__(self, o)", "self.port + o", "o", "    return 0 + get_server_args()\n"),
    ("__iadd__(self, o)", "self.port + o", "o", "    a = get_server_args()\n    a += 1\n    return a\n"),
    ("__index__(self)", "self.port", "0", "    return range(10000)[get_server_args()]\n"),
    ("__neg__(self)", "-self.port", "0", "    return -(-get_server_args())\n"),
    ("__getitem__(self, k)", "self.port", "k", "    return get_server_args().__getitem__('x')\n"),
]


@pytest.mark.parametrize(("signature", "reading", "role"), [(c[0], c[1], c[3]) for c in CASES])
def test_a_home_dunder_python_calls_for_syntax_reads_what_it_reads_off_self(
    tmp_path: Path, signature: str, reading: str, role: str,
) -> None:
    result = _scan(tmp_path, _method(signature, reading), role)
    leaves = {leaf for function, leaf, _ in reads_via(result) if function == "f"}
    assert leaves & {"port", "*"}, (signature, role, result.reads)
    assert fails(result)


@pytest.mark.parametrize(("signature", "quiet", "role"), [(c[0], c[2], c[3]) for c in CASES])
def test_a_home_dunder_reading_nothing_off_self_stays_quiet(tmp_path: Path, signature: str, quiet: str, role: str) -> None:
    result = _scan(tmp_path, _method(signature, quiet), role)
    assert not reads_via(result), (signature, role, result.reads)


ORDINARY = (
    _method("__repr__(self)", "'ServerArgs()'") + _method("__len__(self)", "0") + _method("__bool__(self)", "True")
    + _method("__getitem__(self, k)", "k") + _method("__enter__(self)", "None")
)
QUIET_ROLES = [
    "    a = get_server_args()\n    if a is None:\n        return 0\n    return a.__class__\n",
    "    if get_server_args():\n        return len(get_server_args())\n",
    "    with get_server_args():\n        return get_server_args()['port']\n",
    # a reading dunder never called: the syntax calls others
    "    return isinstance(get_server_args(), object)\n",
]


@pytest.mark.parametrize("role", QUIET_ROLES)
def test_ordinary_dunders_reading_nothing_keep_ordinary_code_quiet(tmp_path: Path, role: str) -> None:
    result = _scan(tmp_path, ORDINARY + _method("__call__(self)", "self.port"), role)
    assert not reads_via(result), (role, result.reads)


def test_a_dunder_of_another_home_class_is_not_the_records(tmp_path: Path) -> None:
    other = "class Other:\n" + _method("__getitem__(self, k)", "self.port")
    (tmp_path / "legacy").mkdir(exist_ok=True)
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(HOME.format(body="") + other)
    write_pkg(tmp_path, {"user.py": USER.format(body="    return get_server_args()['x']\n")})
    result = scan_tree(tmp_path, SETTINGS)
    assert not reads_via(result), result.reads
