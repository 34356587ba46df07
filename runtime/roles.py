"""Role modes: which namespaces each process role reads.

`CONFIGBAGS_ROLE_NAMESPACES=off|record|enforce` is read and validated once, when this module
is imported; a typo is an error rather than a silent `off`. The modes cost nothing on an
allowed read because they act when bags are installed, not when they are read:

- off: every bag is installed into the accessor view;
- enforce: only the role's namespaces are installed, so a read outside the set misses and
  raises `RoleError`;
- record: nothing is installed up front; the first read of each namespace misses, appends
  the (role, namespace) pair to `CONFIGBAGS_ROLE_NAMESPACES_OUT` at once (workers die by
  signal, so nothing is buffered), then installs the bag so later reads are plain.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from configbags.runtime.errors import RoleError

MODE_VAR = "CONFIGBAGS_ROLE_NAMESPACES"
OUT_VAR = "CONFIGBAGS_ROLE_NAMESPACES_OUT"
MODES = ("off", "record", "enforce")
DEFAULT_OUT = "configbags-role-reads.jsonl"
# What record mode writes for a read of the raw ServerArgs record: it can reach any
# namespace, so an audit counts it as reading all of them.
RAW_RECORD = "*"


def mode_from_env(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    env = os.environ if environ is None else environ
    mode = env.get(MODE_VAR, "off").strip().lower() or "off"
    if mode not in MODES:
        raise RoleError(
            f"{MODE_VAR}={env.get(MODE_VAR)!r} is not a role mode; set it to one of "
            f"{', '.join(MODES)} (or unset it for off)"
        )
    return mode


MODE = mode_from_env()


class Recorder:
    """Appends observed (role, namespace) pairs as JSON lines, one write per new pair."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path or os.environ.get(OUT_VAR) or DEFAULT_OUT)
        self._lock = threading.Lock()

    def _append(self, record: dict[str, object]) -> None:
        line = json.dumps(record, sort_keys=True) + "\n"
        with self._lock:
            # O_APPEND writes of one short line are atomic across processes sharing the file.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def published(self, role: str) -> None:
        """The marker: a role that read nothing still shows up in the report. Written before
        the context installs anything, so an unwritable output path fails the publish."""
        try:
            self._append({"event": "publish", "role": role, "pid": os.getpid()})
        except OSError as exc:
            raise RoleError(
                f"{MODE_VAR}=record cannot write its output {str(self.path)!r} ({exc.strerror}); "
                f"point {OUT_VAR} at a writable file in an existing folder"
            ) from None

    def read(self, role: str, namespace: str) -> None:
        self._append({"event": "read", "role": role, "namespace": namespace, "pid": os.getpid()})
