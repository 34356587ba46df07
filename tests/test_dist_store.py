"""The rendezvous store keeps other processes out: a master listens on the host it is
given (never every interface) on a port the kernel picks, and with a launch secret a
value some other process wrote is refused, naming the key, never obeyed."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torch._C._distributed_c10d import PrefixStore

from configbags.runtime.dist import ForeignWriteError, SignedStore, connect_store, signed


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket process `pid` listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                addr, port = local.split(":")
                found.append((_address(addr), int(port, 16)))
    return found


def _address(hex_addr: str) -> str:
    if len(hex_addr) == 8:
        return ".".join(str(int(hex_addr[i:i + 2], 16)) for i in (6, 4, 2, 0))
    if hex_addr == "0" * 32:
        return "::"
    if hex_addr.startswith("0000000000000000FFFF0000"):  # v4-mapped
        return "::ffff:" + _address(hex_addr[24:])
    return hex_addr.lower()


def test_a_store_master_listens_on_loopback_only_on_an_ephemeral_port() -> None:
    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    mine = [(addr, port) for addr, port in listening(os.getpid()) if port == master.port]
    assert mine == [("127.0.0.1", master.port)]  # torch's own TCPStore listens on every interface
    client = connect_store(f"127.0.0.1:{master.port}", is_master=False, timeout=10)
    client.set("k", "v")
    assert master.get("k") == b"v"


def test_a_foreign_value_is_refused_naming_the_key_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(PrefixStore("configbags", master), b"launch-secret")
    foreign = connect_store(f"127.0.0.1:{master.port}", is_master=False, timeout=10)
    ours.set("serve/op/1", "check")
    assert ours.get("serve/op/1") == b"check"
    assert ours.multi_get(["serve/op/1"]) == [b"check"]
    foreign.set("configbags/serve/op/2", "stop")  # what an unsigned rank protocol would obey
    with caplog.at_level(logging.WARNING, logger="configbags"):
        for _ in range(3):
            with pytest.raises(ForeignWriteError, match=r"'serve/op/2' that this launch did not sign"):
                ours.get("serve/op/2")
        with pytest.raises(ForeignWriteError):
            ours.multi_get(["serve/op/1", "serve/op/2"])
    assert sum("serve/op/2" in r.getMessage() for r in caplog.records) == 1
    # a signed value moved under another key, or signed with another secret, is refused too
    foreign.set("configbags/serve/op/3", master.get("configbags/serve/op/1").decode())
    with pytest.raises(ForeignWriteError):
        ours.get("serve/op/3")
    SignedStore(PrefixStore("configbags", master), b"other-secret").set("serve/op/4", "stop")
    with pytest.raises(ForeignWriteError):
        ours.get("serve/op/4")


def test_a_decision_is_one_signed_compare_and_set() -> None:
    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(master, b"s")
    assert ours.compare_set("decision", "", "commit") == b"commit"
    assert ours.compare_set("decision", "", "abort") == b"commit"  # the first decision stands
    assert ours.compare_set("decision", "commit", "again") == b"again"
    ours.wait(["decision"], timedelta(seconds=1))
    assert ours.check(["decision"]) and ours.delete_key("decision") and not ours.check(["decision"])
    assert signed(master, None) is master  # no secret: the store as it is


def test_the_published_state_is_read_as_json_never_unpickled(tmp_path: Path) -> None:
    """A follower reads the start-up state as JSON: a pickle there, even one signed with the
    launch's secret, is refused and never run."""
    import base64
    import pickle

    from configbags.runtime.dist import DistributedContext
    from configbags.runtime.errors import DistributedConfigError

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[Path]]:
            return (Path.touch, (marker,))

    store = SignedStore(connect_store("127.0.0.1:0", is_master=True, timeout=10), b"launch-secret")
    store.set("ctx/1/publish/state", base64.b64encode(pickle.dumps({"ok": True, "x": Payload()})).decode())
    follower = object.__new__(DistributedContext)  # a follower's fields, without a process group
    follower.store, follower.timeout, follower.src, follower.rank = store, 1.0, 0, 1
    with pytest.raises(DistributedConfigError, match="not JSON"):
        follower._receive_state("ctx/1/publish")
    assert not marker.exists()


def test_a_forged_proposal_written_ahead_is_passed_over_for_the_source_ranks_own() -> None:
    """A proposal another process wrote where the next one will go is neither obeyed nor
    fatal to the follower: it waits for the source's signed one, which replaces it."""
    import json
    import threading

    from configbags.runtime.dist import DistributedContext

    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(PrefixStore("configbags", master), b"launch-secret")
    master.set("configbags/ctx/3/override/proposal", json.dumps({"ok": True, "source": "forged"}))
    follower = object.__new__(DistributedContext)  # a follower's fields, without a process group
    follower.store, follower.timeout, follower.src, follower.rank = ours, 10.0, 0, 1
    real = {"ok": True, "base": 1, "source": "http:ops", "entries": []}
    source = threading.Timer(0.3, ours.set, args=("ctx/3/override/proposal", json.dumps(real)))
    source.start()
    try:
        assert follower._receive("ctx/3/override") == real
    finally:
        source.join(timeout=10)
