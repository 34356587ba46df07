"""Round fourteen's false passes of the read ratchet (an outside attack): R14-7, a
pydantic `BaseSettings` imported inside `try: ... except ImportError:` (the v1/v2
compatibility idiom, in any order), whose fields were not read from the environment;
and R14-9, a function name rebound after its `def` (`run = _fast`), whose callers were
followed into the first `def` only. Each is read, or given up as a `*` escape; each has
a twin that reads nothing declared."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, fails, file_reads, scan_env_pkg, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"

SETTINGS_CLASS = """\
class Settings(BaseSettings):
    page_size: int = 16

    class Config:
        env_prefix = "{prefix}"


def main():
    return Settings().page_size
"""

# the compatibility idiom, each order the attack used (e17, e21, e20) and more
TRY_IMPORTS = [
    ("pydantic.v1", "pydantic"),
    ("pydantic_settings", "pydantic.v1"),
    ("pydantic", "pydantic_settings"),
    ("pydantic_settings", "pydantic"),
]


def _try_import(first: str, second: str, name: str = "BaseSettings") -> str:
    return f"try:\n    from {first} import {name}\nexcept ImportError:\n    from {second} import {name}\n"


# ---- R14-7: a settings base imported in try/except ImportError

@pytest.mark.parametrize(("first", "second"), TRY_IMPORTS)
def test_settings_base_imported_in_try_except_reads_its_fields(tmp_path: Path, first: str, second: str) -> None:
    text = _try_import(first, second) + SETTINGS_CLASS.format(prefix="SGLANG_")
    result = scan_env_pkg(tmp_path, {"user.py": text})
    assert PAGE in {leaf for _, leaf in file_reads(result)}, result.reads
    assert fails(result)


def test_settings_base_imported_in_try_else_and_an_if_reads_its_fields(tmp_path: Path) -> None:
    text = (
        "import sys\nif sys.version_info >= (3, 8):\n    try:\n        import pydantic_settings as ps\n"
        "    except ImportError:\n        import pydantic.v1 as ps\n"
    ) + SETTINGS_CLASS.format(prefix="SGLANG_").replace("(BaseSettings)", "(ps.BaseSettings)")
    result = scan_env_pkg(tmp_path, {"user.py": text})
    assert PAGE in {leaf for _, leaf in file_reads(result)}, result.reads


@pytest.mark.parametrize(("first", "second"), TRY_IMPORTS[:2])
def test_settings_in_try_except_under_another_prefix_reads_nothing(tmp_path: Path, first: str, second: str) -> None:
    text = _try_import(first, second) + SETTINGS_CLASS.format(prefix="OTHER_")
    result = scan_env_pkg(tmp_path, {"user.py": text})
    assert not file_reads(result), result.reads
    assert not fails(result)


def test_a_model_base_imported_in_try_except_reads_nothing(tmp_path: Path) -> None:
    # BaseModel fills no field from the environment, whichever branch ran
    text = _try_import("pydantic.v1", "pydantic", "BaseModel") + SETTINGS_CLASS.format(prefix="SGLANG_").replace(
        "(BaseSettings)", "(BaseModel)"
    )
    result = scan_env_pkg(tmp_path, {"user.py": text})
    assert not file_reads(result), result.reads
    assert not fails(result)


# ---- R14-9: a function name rebound after its def

FAST = "def _fast(sa):\n    return sa.page_size\n\n\ndef run(sa):\n    return None\n\n\n"
MAIN = "\n\ndef main():\n    return run(get_server_args())\n"

REBINDINGS = [
    "run = _fast",  # the probe
    "if len(__name__) > 3:\n    run = _fast",
    "try:\n    from pkg.fast import run\nexcept ImportError:\n    pass",
    "run = lambda sa: sa.page_size",
    "def _install():\n    global run\n    run = _fast",
    "class run:\n    def __init__(self, sa):\n        self.n = sa.page_size",
]


@pytest.mark.parametrize("rebinding", REBINDINGS)
def test_a_callee_rebound_after_its_def_is_not_the_def(tmp_path: Path, rebinding: str) -> None:
    files = {"user.py": RAW + FAST + rebinding + MAIN, "fast.py": "def run(sa):\n    return sa.page_size\n"}
    result = scan_pkg(tmp_path, files)
    # followed into the function that runs (pkg/fast.py's run, the class), or given up
    # where the record is handed on
    assert {r.leaf for r in result.reads} & {"page_size", "*"}, result.reads
    assert fails(result)


def test_a_method_rebound_in_its_class_is_not_the_def(tmp_path: Path) -> None:
    text = RAW + (
        "class Worker:\n    def _fast(self, sa):\n        return sa.page_size\n\n"
        "    def run(self, sa):\n        return None\n\n    run = _fast\n\n"
        "    def main(self):\n        return self.run(get_server_args())\n"
    )
    result = scan_pkg(tmp_path, {"user.py": text})
    assert {leaf for _, leaf in file_reads(result)} & {"page_size", "*"}, result.reads
    assert fails(result)


@pytest.mark.parametrize("other", [
    "",
    "other = _fast",  # another name rebound
    "def run(sa):\n    return len('x')",  # a second def: the last one runs, as Python does
    "def _install():\n    run = _fast\n    return run",  # a local of another function
])
def test_a_callee_that_is_only_its_def_stays_clean(tmp_path: Path, other: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": RAW + FAST + other + MAIN})
    assert not file_reads(result), result.reads
    assert not fails(result)
