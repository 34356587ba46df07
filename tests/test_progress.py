"""Long commands show progress on a terminal and stay quiet when piped: `gen`, `cli-check`
(a corpus, a harvest) and `import-dataclass --propose-mapping` of an engine, through the one
helper the ratchet's cold scan uses (configbags.runtime.cmdline.terminal_progress). The
terminal is a real pseudo-terminal on the command's stderr."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from genutil import legacy_project

from configbags.runtime.cmdline import TerminalProgress, terminal_progress

CONFIGBAGS = str(Path(sys.executable).parent / "configbags")
ERASE = "\r\x1b[K"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_helper_draws_only_on_a_terminal() -> None:
    assert terminal_progress("x {done}", io.StringIO()) is None  # piped or logged: nothing
    stream = _Tty()
    progress = terminal_progress("gen: {what} (step {step} of {total})", stream)
    assert isinstance(progress, TerminalProgress)
    progress(0, 2, "loading schema")
    progress(1, 2, "formatting")  # within a tenth of a second: not redrawn
    progress(2, 2)
    assert stream.getvalue() == "\rgen: loading schema (step 1 of 2)\x1b[K" + ERASE


def _run(cwd: Path, *argv: str, tty: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) with stderr on a pseudo-terminal (tty) or a pipe."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not tty:
        done = subprocess.run([CONFIGBAGS, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen([CONFIGBAGS, *argv], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=slave,
                                 text=True)
        os.close(slave)
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        out = child.stdout.read() if child.stdout else ""
        code = child.wait(timeout=300)
    finally:
        os.close(master)
    return code, out, b"".join(chunks).decode()


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    return legacy_project(tmp_path)


@pytest.mark.slow
def test_long_commands_show_progress_on_a_terminal_only(engine: Path) -> None:
    source = "legacy_engine/server_args.py:ServerArgs"
    propose = ["import-dataclass", source, "--out", "schema", "--propose-mapping", "proposed.yaml",
               "--engine-root", "legacy_engine", "--force"]
    for tty in (True, False):
        code, _, err = _run(engine, *propose, tty=tty)
        assert code == 0, err
        assert ("\rimport-dataclass: scanned 1 of 14 files under --engine-root" in err) is tty, err
    assert _run(engine, "import-dataclass", source, "--out", "schema", "--mapping", "mapping.yaml",
                tty=False)[0] == 0
    gen = ["gen", "--schema", "schema", "--out", "legacy_engine/config_bags", "--no-cache"]
    for tty in (True, False):
        code, out, err = _run(engine, *gen, tty=tty)
        assert code == 0 and "legacy_engine/config_bags" in out, err
        assert ("\rgen: loading schema (step 1 of 2)" in err) is tty, err
        assert (ERASE in err) is tty  # the line is erased before the report
    (engine / "LAUNCH.md").write_text("```sh\npython -m legacy_engine.launch --model-path m --tp-size 2\n```\n")
    check = ["cli-check", "--legacy", "legacy_engine.server_args:ServerArgs", "--package",
             "legacy_engine.config_bags", "--import-engine"]
    for tty in (True, False):
        code, out, err = _run(engine, *check, "--corpus", "cli_corpus.txt", tty=tty)
        assert code == 0 and "cli-check ok: 42 command lines" in out, err
        assert ("\rcli-check: the legacy parser parsed 1 of 42 lines" in err) is tty, err
        code, out, err = _run(engine, *check, "--harvest", ".", tty=tty)
        assert code == 0 and "cli-check ok: 1 command lines" in out, err
        assert ("\rcli-check: read 1 of " in err) is tty, err
        if not tty:
            assert err == ""
    # a legacy side that fails says so in one line, on a terminal too
    code, _, err = _run(engine, "cli-check", "--legacy", "nosuch.server_args:ServerArgs", "--package",
                        "legacy_engine.config_bags", "--corpus", "cli_corpus.txt", "--import-engine", tty=True)
    assert code == 2
    assert [line for line in err.replace(ERASE, "").splitlines() if line.strip()] == [
        "configbags cli-check: the legacy parser nosuch.server_args:ServerArgs failed to run: ModuleNotFoundError: "
        "No module named 'nosuch' (searched no --path); pass --path FOLDER, the folder holding the "
        "engine's top-level package (relative to the project, the folder of its pyproject.toml)"], err
