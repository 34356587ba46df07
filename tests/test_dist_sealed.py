"""No secret leaf's value is ever readable from the rendezvous store: with a rank secret,
everything the ranks post is sealed (AES-GCM), so a plain TCPStore client that reads every
key during and after start-up sees neither API key nor an overridden secret leaf, in any
encoding; without one, the publish that would carry them in plaintext is refused on every
rank, naming the leaves, and nothing of them reaches the store."""

from __future__ import annotations

import base64
import json
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import dist_workers
import pytest
from torch._C._distributed_c10d import TCPStore

from configbags.runtime.dist import connect_store

pytestmark = pytest.mark.slow  # spawned ranks

DEADLINE = 120.0  # bounds every wait below; never an assertion about speed
WORLD = 2


def _encodings(secret: str) -> dict[str, bytes]:
    """How `secret` could show in a value: as it is, in hex, and in base64 at each of the
    three alignments it can have inside a longer text (the groups wholly within it)."""
    raw = secret.encode()
    found = {"plain": raw, "hex": raw.hex().encode()}
    for pad in (1, 2, 3):
        found[f"base64+{pad}"] = base64.b64encode(b"\0" * pad + raw)[4:-4]
    return found


class StoreReader:
    """A plain client of the store, as any local process can be: it lists every key and
    reads every value, over and over, until stopped, keeping all it saw."""

    def __init__(self, port: int) -> None:
        self.client = connect_store(f"127.0.0.1:{port}", is_master=False, timeout=30)
        self.seen: dict[str, set[bytes]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def read_all(self) -> None:
        for key in self.client.list_keys():
            try:
                self.seen.setdefault(key, set()).add(bytes(self.client.get(key)))
            except Exception:  # deleted between the listing and the read
                continue

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.read_all()
            time.sleep(0.005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _wait_for(paths: list[Path], end: float, what: str) -> None:
    while not all(p.exists() for p in paths):
        assert time.monotonic() < end, f"{what} did not finish"
        time.sleep(0.05)
    time.sleep(0.05)  # let the last writer finish its file


def _run(tmp_path: Path, secret: str) -> tuple[list[dict[str, Any]], dict[str, set[bytes]], dict[str, bytes]]:
    """Run the ranks while a reader reads the store; returns each rank's outcome, every
    value the reader saw, and what the store held while every posted key still stood."""
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    reader = StoreReader(store.port)
    ranks = dist_workers.context()
    procs = [ranks.Process(target=dist_workers.sealed_secrets, args=(r, WORLD, store.port, str(tmp_path), secret))
             for r in range(WORLD)]
    end = time.monotonic() + DEADLINE
    try:
        for p in procs:
            p.start()
        _wait_for([tmp_path / f"sealed-{r}.json" for r in range(WORLD)], end, "the publish and override")
        standing = {k: bytes(store.get(k)) for k in store.list_keys()}  # nothing spent is deleted yet
        reader.read_all()
        (tmp_path / "read").touch()
        _wait_for([tmp_path / f"sealed-done-{r}.json" for r in range(WORLD)], end, "the last collective")
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0] * WORLD
        reader.read_all()  # after start-up
    finally:
        reader.stop()
        dist_workers.reap(procs)
    outcomes = [json.loads((tmp_path / f"sealed-{r}.json").read_text()) for r in range(WORLD)]
    return outcomes, reader.seen, standing


def _leaks(values: list[bytes]) -> list[str]:
    return [f"{leaf} ({how})" for leaf, secret in dist_workers.SEALED.items()
            for how, needle in _encodings(secret).items() if any(needle in v for v in values)]


def test_a_store_reader_never_sees_a_secret_leaf_of_a_sealed_launch(tmp_path: Path) -> None:
    outcomes, seen, standing = _run(tmp_path, "launch-secret-3e9a")
    assert outcomes == [{"refused": [], "values": dist_workers.SEALED}] * WORLD  # every rank got them
    # the reader did read what carried them: the published state and the override's proposal
    assert {"configbags/ctx/1/publish/state", "configbags/ctx/2/override/proposal"} <= set(standing)
    assert all(k in seen for k in standing)
    values = [v for vs in seen.values() for v in vs] + list(standing.values())
    assert _leaks(values) == []


def test_a_launch_with_no_rank_secret_refuses_to_post_a_set_secret_leaf(tmp_path: Path) -> None:
    outcomes, seen, standing = _run(tmp_path, "")
    for outcome in outcomes:  # refused on every rank, naming the leaves and the way out
        publish, override = outcome["refused"]
        assert "publish: the secret leaf(s) admin_api_key, api_key would travel" in publish, outcome
        assert "override: the secret leaf(s) weight_version would travel" in override, outcome
        assert all("CONFIGBAGS_RANK_SECRET" in m for m in outcome["refused"])
        assert _leaks([m.encode() for m in outcome["refused"]]) == []
        # nothing was applied: the launch went on without the keys, the leaf kept its value
        values = outcome["values"]
        assert values["api_key"] is None and values["admin_api_key"] is None
        assert values["weight_version"] != dist_workers.SEALED["weight_version"]
    assert any(k.endswith("/publish/state") for k in standing)
    assert _leaks([v for vs in seen.values() for v in vs] + list(standing.values())) == []
