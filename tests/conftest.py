from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from configbags.generated.server_args import ServerArgs

pytest_plugins = ["configbags.runtime.testing", "pytester"]


@pytest.fixture
def record() -> ServerArgs:
    """A minimal operator record for the bundled schema."""
    return ServerArgs(model_path="/models/llama")


# The rooms' folder names: importing one bare (`import runtime`, possible because the
# checkout is on sys.path) would give a second copy of a module, with its own ConfigError.
BARE_ROOMS = frozenset({"cli", "codegen", "runtime", "generated", "migrate", "serve", "server"})


@pytest.fixture(autouse=True)
def _no_bare_room_import() -> Iterator[None]:
    yield
    bare = sorted(BARE_ROOMS.intersection(sys.modules))
    assert not bare, f"a room was imported by its bare folder name: {bare}; import configbags.<room>"
