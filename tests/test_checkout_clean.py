"""The suite writes nothing into the checkout: every tool it runs keeps its cache outside
(ruff, mypy, hypothesis, pytest), and checkout_guard fails a session that leaves a new
file or folder there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import storage_directory

REPO = Path(__file__).resolve().parent.parent
GUARD = Path(__file__).resolve().parent / "checkout_guard.py"


def _outside_the_checkout(path: str | Path) -> bool:
    return not Path(os.path.expanduser(path)).resolve().is_relative_to(REPO)


def test_ruff_keeps_its_cache_outside_the_checkout() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RUFF_CACHE_DIR"}
    shown = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-settings", "pyproject.toml"],
                           cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    (line,) = (x for x in shown.splitlines() if x.strip().startswith("cache_dir"))
    cache_dir = line.split("=", 1)[1].strip().strip('"')
    assert _outside_the_checkout(cache_dir), line


def test_mypy_keeps_its_cache_outside_the_checkout() -> None:
    from mypy.config_parser import parse_config_file
    from mypy.options import Options

    options = Options()
    parse_config_file(options, lambda: None, str(REPO / "pyproject.toml"), sys.stdout, sys.stderr)
    assert options.cache_dir != ".mypy_cache" and _outside_the_checkout(options.cache_dir), options.cache_dir


def test_hypothesis_keeps_its_database_outside_the_checkout() -> None:
    assert _outside_the_checkout(storage_directory("examples", intent_to_write=False).path)
    database = settings().database
    assert database is None or _outside_the_checkout(database.path)  # type: ignore[attr-defined]


def test_pytest_keeps_no_cache(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.is_blocked("cacheprovider")


class Checkout:
    """A git checkout whose conftest is checkout_guard, and a pytest run in it whose
    temporary folders lie outside it (pytester's own default is inside)."""

    def __init__(self, pytester: pytest.Pytester, basetemp: Path) -> None:
        self.pytester = pytester
        self.basetemp = basetemp
        subprocess.run(["git", "init", "-q", str(pytester.path)], check=True)
        pytester.makeconftest(GUARD.read_text())

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest_inprocess(f"--basetemp={self.basetemp}", *args)


@pytest.fixture
def checkout(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return Checkout(pytester, tmp_path_factory.mktemp("basetemp"))


def test_the_guard_fails_a_session_that_leaves_a_file_in_the_checkout(checkout: Checkout) -> None:
    checkout.pytester.makepyfile(test_stray="""
        from pathlib import Path

        def test_writes(request):
            (request.config.rootpath / "stray.db").write_text("x")
        """)
    result = checkout.run("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["the tests wrote into the checkout: stray.db; *", "*1 passed*"])


def test_the_guard_passes_a_session_that_writes_only_to_tmp_path(checkout: Checkout) -> None:
    checkout.pytester.makepyfile(test_tidy="""
        def test_writes(tmp_path):
            (tmp_path / "out.db").write_text("x")
        """)
    result = checkout.run("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_the_guard_sees_pytests_own_cache(checkout: Checkout) -> None:
    # without -p no:cacheprovider, pytest writes .pytest_cache/ into the rootdir
    checkout.pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = checkout.run()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["the tests wrote into the checkout: .pytest_cache/; *"])
