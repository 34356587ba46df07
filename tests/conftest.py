from __future__ import annotations

import pytest

from configbags.generated.server_args import ServerArgs

pytest_plugins = ["configbags.runtime.testing"]


@pytest.fixture
def record() -> ServerArgs:
    """A minimal operator record for the bundled schema."""
    return ServerArgs(model_path="/models/llama")
