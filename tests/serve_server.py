"""Start `configbags serve` as a subprocess on a free port and wait until it answers; every
wait is bounded, and `stop()` (fixture teardown) always ends the process."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
API_KEY = "read-key-7f3a"
ADMIN_KEY = "admin-key-91c2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, *flags: str, start_timeout: float = 90.0, env: dict[str, str] | None = None,
                 max_files: int | None = None) -> None:
        """`max_files`: the server's file-descriptor limit (RLIMIT_NOFILE), lowered so a
        flood of connections that would use them up stays small."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="configbags-serve-", suffix=".log", delete=False)  # noqa: SIM115
        argv = [sys.executable, "-m", "configbags", "serve", "--rank-timeout", "3",
                "--model-path", "/models/m", "--host", "127.0.0.1", "--port", str(self.port), *flags]
        self.proc = subprocess.Popen(argv, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=None if env is None else {**os.environ, **env},
                                     preexec_fn=None if max_files is None else lambda: _limit_files(max_files))
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"configbags serve exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"configbags serve did not answer within {start_timeout} s:\n{self.output()}")

    def output(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, then the exit code (killed, and an error, after `timeout`)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise

    def workers(self) -> list[int]:
        """Pids of the server's worker ranks."""
        return [pid for pid in self.children() if b"configbags.serve.ranks" in _cmdline(pid)]

    def store_host(self) -> int:
        """Pid of the process that hosts the ranks' rendezvous store."""
        (pid,) = (pid for pid in self.children() if b"configbags.serve.storehost" in _cmdline(pid))
        return pid

    def children(self) -> list[int]:
        """Pids of the server's child processes (worker ranks, the ranks' store), from /proc."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rpartition(")")[2].split()[1]) == self.proc.pid:
                    found.append(int(entry.name))
        return found

    def stop(self) -> None:
        kids = self.children() if self.proc.poll() is None else []
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):  # it may have exited by itself
                os.kill(pid, signal.SIGKILL)
        self._log.close()
        os.unlink(self._log.name)


def _limit_files(n: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
