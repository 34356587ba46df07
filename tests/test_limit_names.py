"""A `CONFIGBAGS_LIMIT_*` variable that names no limit is refused, naming the known ones: a
typo (`CONFIGBAGS_LIMIT_FILEBYTES`) would otherwise leave the limit it meant at its
default without a word."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from configbags.runtime.errors import ConfigError
from configbags.runtime.limits import Limits


def test_an_unknown_limit_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"CONFIGBAGS_LIMIT_BOGUS names no input limit; the limits are "
                                          r"CONFIGBAGS_LIMIT_JSON_DEPTH, .*CONFIGBAGS_LIMIT_FILE_BYTES"):
        Limits.from_environ({"CONFIGBAGS_LIMIT_BOGUS": "5"})
    with pytest.raises(ConfigError, match=r"\(did you mean CONFIGBAGS_LIMIT_FILE_BYTES\?\)"):
        Limits.from_environ({"CONFIGBAGS_LIMIT_FILEBYTES": "16"})
    assert Limits.from_environ({"CONFIGBAGS_LIMIT_FILE_BYTES": "16", "CONFIGBAGS_OTHER": "x"}).file_bytes == 16


def test_the_cli_exits_2_naming_an_unknown_limit() -> None:
    done = subprocess.run([sys.executable, "-m", "configbags", "explain", "tp_size"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "CONFIGBAGS_LIMIT_BOGUS": "5"})
    assert done.returncode == 2, done.stderr
    assert "CONFIGBAGS_LIMIT_BOGUS names no input limit" in done.stderr and "Traceback" not in done.stderr
