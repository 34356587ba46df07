from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from configbags.generated.server_args import ServerArgs

# checkout_guard fails the session if the tests leave anything new in the checkout.
pytest_plugins = ["configbags.runtime.testing", "pytester", "checkout_guard"]

# The tests' caches live in the user's cache folder, never in the checkout. Hypothesis keeps
# its example database (failing examples replay from it) and unicode tables in
# `.hypothesis/` under the working folder unless told otherwise; the variable also reaches
# the subprocesses tests start. Ruff and mypy take theirs from pyproject.toml.
USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "configbags"
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(USER_CACHE / "hypothesis"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `slow` tests (seconds each) first, each group in collection order: under
    `--dist worksteal` the long ones start at once and the short ones fill the end, so no
    worker is left running one long test alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def record() -> ServerArgs:
    """A minimal operator record for the bundled schema."""
    return ServerArgs(model_path="/models/llama")


# The rooms' folder names: importing one bare (`import runtime`, possible because the
# checkout is on sys.path) would give a second copy of a module, with its own ConfigError.
BARE_ROOMS = frozenset({"cli", "codegen", "runtime", "generated", "migrate", "serve", "server", "evolve", "fleet"})


@pytest.fixture(autouse=True)
def _no_bare_room_import() -> Iterator[None]:
    yield
    bare = sorted(BARE_ROOMS.intersection(sys.modules))
    assert not bare, f"a room was imported by its bare folder name: {bare}; import configbags.<room>"
