"""The rendezvous store keeps other processes out: a master listens on the host it is
given (never every interface) on a port the kernel picks, and with a launch secret a
value some other process wrote is refused, naming the key, never obeyed."""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

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


def test_a_sealed_value_shows_nothing_of_itself_and_any_change_to_it_is_refused() -> None:
    """What a rank posts is encrypted, not only signed: the store holds no byte of the value
    (a reader sees `s1.` and base64), the same value sealed twice looks different (a random
    nonce), and a value altered, cut short, not base64, or in the older signed-only form does
    not open."""
    import base64
    import hashlib
    import hmac

    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(PrefixStore("configbags", master), b"launch-secret")
    value = json.dumps({"record": {"api_key": "planted-key-61d0"}})
    ours.set("ctx/1/publish/state", value)
    raw = master.get("configbags/ctx/1/publish/state")
    assert raw.startswith(b"s1.") and b"planted" not in raw and b"planted".hex().encode() not in raw
    assert b"planted" not in base64.b64decode(raw[3:])
    assert ours.get("ctx/1/publish/state") == value.encode()
    ours.set("ctx/1/publish/state", value)
    assert master.get("configbags/ctx/1/publish/state") != raw
    blob = base64.b64decode(raw[3:])
    flipped = blob[:20] + bytes([blob[20] ^ 1]) + blob[21:]
    mac = hmac.new(b"launch-secret", b"\0ctx/2/state\0" + value.encode(), hashlib.sha256).hexdigest()
    for forged in (b"s1." + base64.b64encode(flipped), raw[:-8], b"s1.not base64!", b"s1.", raw[3:],
                   f"{mac}:{value}".encode()):
        master.set("configbags/ctx/2/state", forged)
        with pytest.raises(ForeignWriteError):
            ours.get("ctx/2/state")


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


# -- forged values written ahead, replays, and unsigned stores other hosts reach -------------


def test_a_forged_decision_written_ahead_is_replaced_not_obeyed_nor_blocking(caplog: pytest.LogCaptureFixture) -> None:
    """A value another process wrote under the key of a later decision: the compare-and-set
    that decides treats it as absent and replaces it, logged, so that override is decided
    as usual instead of finding its key taken."""
    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(PrefixStore("configbags", master), b"launch-secret")
    master.set("configbags/ctx/9/override/decision", "commit")  # unsigned: forged
    with caplog.at_level(logging.WARNING, logger="configbags"):
        assert ours.compare_set("ctx/9/override/decision", "", "aborted: rank 2 silent") == b"aborted: rank 2 silent"
        assert ours.compare_set("ctx/9/override/decision", "", "commit") == b"aborted: rank 2 silent"  # it stands
        master.set("configbags/ctx/10/override/decision", b"\xff\xfe not text")  # forged, not even UTF-8
        assert ours.compare_set("ctx/10/override/decision", "", "commit") == b"commit"
    assert any("'ctx/9/override/decision'" in r.getMessage() for r in caplog.records)


def _source(store: SignedStore, world: int, timeout: float) -> Any:
    """A source rank's fields, without a process group."""
    from configbags.runtime.dist import DistributedContext

    source = object.__new__(DistributedContext)
    source.store, source.timeout, source.src, source.rank, source.world_size = store, timeout, 0, 0, world
    source.leave_after, source.left, source._missed = None, {}, {}
    return source


def test_a_forged_vote_written_ahead_is_passed_over_for_the_ranks_own() -> None:
    """A vote another process wrote where a follower's will go neither counts nor fails the
    override: the source waits for the follower's signed vote, which replaces it."""
    import threading

    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    ours = SignedStore(PrefixStore("configbags", master), b"launch-secret")
    master.set("configbags/ctx/4/override/vote/1", "yes")  # forged, ahead of rank 1's
    ours.set("ctx/4/override/vote/0", "yes")
    follower = threading.Timer(0.3, ours.set, args=("ctx/4/override/vote/1", "no:LeafValueError: out of range"))
    follower.start()
    try:
        decision = _source(ours, 2, 10.0)._decide("ctx/4/override")
    finally:
        follower.join(timeout=10)
    assert decision.startswith("refused by rank 1: LeafValueError: out of range"), decision


def _launch(master_port: int, secret: bytes, world: int) -> list[Any]:
    """Every rank's store after `join`, each rank a thread with a client of its own."""
    import threading

    from configbags.runtime.dist import join

    stores: list[Any] = [None] * world

    def rank(r: int) -> None:
        client = connect_store(f"127.0.0.1:{master_port}", is_master=False, timeout=10)
        stores[r] = join(SignedStore(PrefixStore("configbags", client), secret), r, world, 10.0)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert all(s is not None for s in stores)
    return stores


def test_a_value_recorded_in_an_earlier_launch_is_refused_under_its_own_key() -> None:
    """Two launches with the same secret (a restart): each joins under an identity of its own
    ranks' fresh nonces, so a proposal recorded in the first, written again under the very
    same key in the second, does not verify there, and a follower waits past it."""
    secret = b"the-same-secret-both-times"
    first_master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    first = _launch(first_master.port, secret, 2)
    assert first[0].run == first[1].run  # the ranks of one launch agree
    first[0].set("ctx/5/override/proposal", json.dumps({"ok": True, "source": "recorded", "entries": []}))
    recorded = first_master.get("configbags/ctx/5/override/proposal")

    second_master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    second = _launch(second_master.port, secret, 2)
    assert second[0].run != first[0].run
    second_master.set("configbags/ctx/5/override/proposal", recorded)  # the replay, under its own key
    with pytest.raises(ForeignWriteError, match="ctx/5/override/proposal"):
        second[1].get("ctx/5/override/proposal")
    assert second[1].read("ctx/5/override/proposal") is None  # a waiter passes over it
    # nothing the join wrote travels in the clear: every key is ours, every value is sealed
    keys = first_master.list_keys()
    assert keys and all(k.startswith("configbags/") for k in keys), keys
    assert all(re.fullmatch(rb"s1\.[A-Za-z0-9+/]+={0,2}", first_master.get(k)) for k in keys), keys
    assert b"recorded" not in recorded


def test_an_old_decision_written_again_in_the_same_launch_does_not_verify_under_a_later_key() -> None:
    """Each collective has a key of its own (its sequence number): a decision recorded in one
    override, written under a later override's key, is refused there."""
    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    (source, follower) = _launch(master.port, b"s", 2)
    source.compare_set("ctx/3/override/decision", "", "commit")
    master.set("configbags/ctx/7/override/decision", master.get("configbags/ctx/3/override/decision"))
    assert follower.read("ctx/7/override/decision") is None
    assert source.compare_set("ctx/7/override/decision", "", "aborted: x") == b"aborted: x"


def test_an_unsigned_store_other_hosts_reach_is_refused_naming_both_ways_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from configbags.runtime.dist import (
        ALLOW_UNSIGNED_ENV,
        SECRET_ENV,
        UnsignedStoreError,
        init_distributed,
        secure,
    )

    monkeypatch.delenv(SECRET_ENV, raising=False)
    monkeypatch.delenv(ALLOW_UNSIGNED_ENV, raising=False)
    # refused before any connection is made (192.0.2.0/24 is reserved for documentation)
    with pytest.raises(UnsignedStoreError) as refused:
        init_distributed(0, 2, init_addr="192.0.2.7:29500", backend="gloo", timeout=1.0)
    message = str(refused.value)
    for named in ("192.0.2.7", "secret=", SECRET_ENV, "allow_unsigned=True", f"{ALLOW_UNSIGNED_ENV}=1"):
        assert named in message, (named, message)
    assert secure("127.0.0.1", None) is None and secure("::1", None) is None  # loopback: unsigned is fine
    assert secure("192.0.2.7", b"k") == b"k"
    assert secure("192.0.2.7", None, allow_unsigned=True) is None
    monkeypatch.setenv(ALLOW_UNSIGNED_ENV, "1")
    assert secure("192.0.2.7", None) is None
    monkeypatch.delenv(ALLOW_UNSIGNED_ENV)
    monkeypatch.setenv(SECRET_ENV, "from-the-environment")
    assert secure("192.0.2.7", None) == b"from-the-environment"
    for weak in ("none", " ", "NULL", "~"):  # guessable, and most likely meant as "unset"
        monkeypatch.setenv(SECRET_ENV, weak)
        with pytest.raises(UnsignedStoreError, match="blank or a word for no value"):
            secure("192.0.2.7", None)
        with pytest.raises(UnsignedStoreError, match="blank or a word for no value"):
            secure("127.0.0.1", weak.encode())


def test_serve_passes_over_an_older_beat_or_count_written_again() -> None:
    """`serve --ranks` rewrites a worker's beat and finished-operation count under one key
    each; an older signed value written again (a replay) must not make the worker look
    stalled: the newest one rank 0 saw stands."""
    from configbags.serve.ranks import BEAT_KEY, DONE_KEY, RankGroup

    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    watch = SignedStore(PrefixStore("configbags", master), b"launch-secret", run=b"this launch")
    group = object.__new__(RankGroup)  # rank 0's reading side, without workers
    group._watch, group._beats, group._done = watch, {}, {}
    group._pipes, group._heard, group._seen_keys, group._removed = {}, {}, set(), set()
    for key, read_back, older, newer in ((BEAT_KEY.format(1), group._beat, "1000.0", "2000.0"),
                                         (DONE_KEY.format(1), group._finished, "4", "5")):
        watch.set(key, older)
        recorded = master.get(f"configbags/{key}")
        watch.set(key, newer)
        assert read_back(1) == float(newer)
        master.set(f"configbags/{key}", recorded)  # the replay, validly signed
        assert read_back(1) == float(newer), key


def test_ranks_may_share_the_store_alone_with_no_process_group() -> None:
    """init_distributed(process_group=False), what `serve --ranks` uses: the ranks join
    through the store, each context takes its rank and world size from the call, and no
    torch process group is formed, so no transport listens in the process (gloo's would
    keep every connection any local process makes to it)."""
    import threading

    import torch.distributed as torch_dist

    from configbags.generated.accessors import get_context
    from configbags.runtime.dist import DistributedContext, init_distributed
    from configbags.runtime.errors import DistributedConfigError

    master = connect_store("127.0.0.1:0", is_master=True, timeout=10)
    before = sorted(listening(os.getpid()))
    joined: dict[int, Any] = {}

    def join(rank: int) -> None:
        client = connect_store(f"127.0.0.1:{master.port}", is_master=False, timeout=10)
        joined[rank] = init_distributed(rank, 2, store=client, timeout=10, context=get_context(),
                                        process_group=False)

    threads = [threading.Thread(target=join, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {rank: (d.rank, d.world_size) for rank, d in joined.items()} == {0: (0, 2), 1: (1, 2)}
    assert not torch_dist.is_initialized()
    assert sorted(listening(os.getpid())) == before
    with pytest.raises(DistributedConfigError, match="rank and world_size are given together"):
        DistributedContext(get_context(), store=master, rank=1)
