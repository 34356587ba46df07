"""Rank bodies for the multi-process tests (spawned by torch.multiprocessing, so they live
in an importable module). Each writes what it saw to `outdir/<name>-<rank>.json`; the test
process compares across ranks. Assertions inside a rank surface through spawn()."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STORE_TIMEOUT = 60.0
# imported once by the fork server, so each rank forked from it starts at once instead of
# importing torch again (seconds per rank on a shared machine, most of a fault case's time)
PRELOAD = ["torch.distributed", "configbags.generated.accessors", "configbags.runtime.dist._propagate",
           "dist_workers"]


def context() -> Any:
    """The multiprocessing context the rank tests start ranks with: fork server, preloaded.
    (Forked from a process that has run nothing yet, not from the test process, whose
    threads and store a plain fork would copy.)"""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start(fn: Any, args: tuple[Any, ...], nprocs: int) -> None:
    """`torch.multiprocessing.spawn`, with the ranks forked from the preloaded fork server:
    each rank's exception is raised here, as spawn does."""
    import torch.multiprocessing as mp

    context()  # the fork server's preload, before start_processes starts it
    mp.start_processes(fn, args=args, nprocs=nprocs, join=True, start_method="forkserver")

# Layouts per world size: (record fields, description). Each must fill the whole world.
LAYOUTS: dict[int, list[dict[str, Any]]] = {
    2: [
        {"tp_size": 2},
        {"tp_size": 1, "pp_size": 2},
        {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2},
        {"tp_size": 2, "ep_size": 2},
    ],
    4: [
        {"tp_size": 4},
        {"tp_size": 2, "pp_size": 2},
        {"tp_size": 4, "enable_dp_attention": True, "dp_size": 2},
        {"tp_size": 4, "attn_cp_size": 2},
        {"tp_size": 4, "ep_size": 2},
        {"tp_size": 2, "pp_size": 2, "enable_dp_attention": True, "dp_size": 2, "ep_size": 2},
    ],
}
RANK_OF_GROUP = {
    "tp": "tp_rank", "pp": "pp_rank", "attn_tp": "attn_tp_rank", "attn_cp": "attn_cp_rank",
    "attn_dp": "attn_dp_rank", "moe_tp": "moe_tp_rank", "moe_ep": "moe_ep_rank",
    "moe_dp": "moe_dp_rank",
}


def reap(procs: list[Any]) -> None:
    """Kill the rank processes a test leaves running (a failed wait, a stopped rank)."""
    for p in procs:
        if p.is_alive():
            p.kill()


def _write(outdir: str, name: str, rank: int, data: Any) -> None:
    Path(outdir, f"{name}-{rank}.json").write_text(json.dumps(data, sort_keys=True))


def _join(rank: int, world: int, port: int, timeout: float = STORE_TIMEOUT) -> Any:
    from configbags.runtime.dist import connect_store, init_distributed

    # The test process hosts the store, so a rank that dies cannot take it down.
    store = connect_store(f"127.0.0.1:{port}", is_master=False, timeout=timeout)
    return init_distributed(rank, world, store=store, backend="gloo", timeout=timeout)


def scenario(rank: int, world: int, port: int, outdir: str) -> None:
    """Publish from rank 0, overrides seen everywhere, refused override fails everywhere,
    divergence detected and healed, stamped ranks equal torch's group ranks."""
    import torch.distributed as dist

    from configbags.generated.accessors import get_context, get_parallel, get_schedule
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import Layout, build_groups
    from configbags.runtime.errors import DistributedConfigError, PolicyError

    dctx = _join(rank, world, port)
    ctx = get_context()
    out: dict[str, Any] = {}

    # 1. publish on rank 0 only; every rank gets the same state and stamps its own ranks
    record = ServerArgs(model_path="m", tp_size=world) if rank == 0 else None
    dctx.publish(record, role="scheduler")
    assert get_parallel().world_rank == rank
    assert get_parallel().tp_rank == rank
    out["published_epoch"] = ctx.epoch

    # 2. overrides from rank 0 reach every rank, in order, with rank 0's epochs
    for value in (1024, 2048, 4096):
        leaves = {"chunked_prefill_size": value} if rank == 0 else {}
        entries = dctx.override("rebalance", **leaves)
        assert get_schedule().chunked_prefill_size == value, (rank, value)
        assert [e.new for e in entries] == [value]
    dctx.override_checked("multi",
                  **({"chunked_prefill_size": 512, "dp_size": 2} if rank == 0 else {}))
    out["after_overrides"] = ctx.server_info()
    out["hash"] = ctx.config_hash()
    out["epoch"] = ctx.epoch
    out["seen"] = get_schedule().chunked_prefill_size

    # 3. a refused override (startup leaf) fails on every rank and changes nothing
    before = ctx.epoch
    try:
        dctx.override("bad", **({"tp_size": 8} if rank == 0 else {}))
    except PolicyError as exc:
        out["refused"] = type(exc).__name__
    assert ctx.epoch == before
    dctx.check_consistency()

    # 4. a rank overriding behind the group's back is named by the consistency check
    if rank == world - 1:
        ctx.override("rogue", chunked_prefill_size=999)
    try:
        dctx.check_consistency()
    except DistributedConfigError as exc:
        out["divergence"] = str(exc)
    # re-broadcasting rank 0's state heals it
    dctx.publish()
    out["healed"] = dctx.check_consistency()[world - 1][0] == ctx.config_hash()

    # 5. stamped ranks equal the ranks torch.distributed gives each rank in the built groups
    checked = []
    for fields in LAYOUTS[world]:
        dctx.publish(ServerArgs(model_path="m", **fields) if rank == 0 else None, role="scheduler")
        par = get_parallel()
        groups = build_groups(Layout.from_values(par), backend="gloo")
        assert par.world_rank == dist.get_rank()
        for name, pg in groups.groups.items():
            assert dist.get_rank(pg) == getattr(par, RANK_OF_GROUP[name]), (fields, name)
        checked.append({r: getattr(par, r) for r in RANK_OF_GROUP.values()})
    out["layouts"] = checked
    _write(outdir, "scenario", rank, out)
    dist.destroy_process_group()


def never_joins(rank: int, world: int, port: int, outdir: str) -> None:
    """Only world-1 ranks start; each must get an error naming the missing one."""
    from configbags.runtime.dist import check_in, connect_store
    from configbags.runtime.errors import DistributedConfigError

    # The live ranks meet first (long timeout), so start-up skew on a loaded machine cannot
    # make a slow live rank look missing in the 2 s join below.
    store = connect_store(f"127.0.0.1:{port}", is_master=False)
    check_in(store, "test-started", rank, world - 1, STORE_TIMEOUT)
    try:
        _join(rank, world, port, timeout=2.0)
    except DistributedConfigError as exc:
        _write(outdir, "never", rank, str(exc))
        return
    raise AssertionError("init_distributed returned although a rank never joined")


def dies(rank: int, world: int, port: int, outdir: str) -> None:
    """The last rank dies after publish; the others' next override names it."""
    import torch.distributed as dist

    from configbags.generated.accessors import get_context
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.errors import DistributedConfigError

    dctx = _join(rank, world, port)
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    if rank == world - 1:
        os._exit(0)  # no cleanup, like a crash
    dctx.timeout = 2.0
    epoch = get_context().epoch
    try:
        dctx.override("after-death", **({"chunked_prefill_size": 64} if rank == 0 else {}))
    except DistributedConfigError as exc:
        _write(outdir, "dies", rank, {"error": str(exc), "epoch_kept": get_context().epoch == epoch})
        dist.destroy_process_group()
        return
    raise AssertionError("override returned although a rank was dead")


def child(text: str, outpath: str) -> None:
    """Spawned child: adopt the parent's exported state and report what it sees."""
    from configbags.generated.accessors import get_schedule
    from configbags.runtime.dist import from_state

    ctx = from_state(text)
    Path(outpath).write_text(json.dumps({
        "server_info": ctx.server_info(),
        "hash": ctx.config_hash(),
        "epoch": ctx.epoch,
        "sealed": ctx.sealed,
        "role": ctx.role,
        "chunked_prefill_size": get_schedule().chunked_prefill_size,
        "entry_epochs": [e.epoch for e in ctx.state.log],
    }, sort_keys=True))


def failures(rank: int, world: int, port: int, outdir: str) -> None:
    """A re-publish's report reaches every rank; a source rank that raises anything makes
    every follower fail promptly (not at the group timeout), with the source's error class
    for refusals (KV configurator errors included) and naming the source rank otherwise."""
    import time

    import torch.distributed as dist

    from configbags.generated.accessors import get_context, get_schedule, get_spec
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import check_in, connect_store
    from configbags.server.kvcache.errors import BudgetError

    # Meet first with a long timeout (start-up skew), then join with a short group timeout:
    # a follower left waiting in a broadcast would hit it, and the test would see it.
    store = connect_store(f"127.0.0.1:{port}", is_master=False)
    check_in(store, "failures-started", rank, world, STORE_TIMEOUT)
    dctx = _join(rank, world, port, timeout=FAILURE_TIMEOUT)
    ctx = get_context()
    out: dict[str, Any] = {}
    src = rank == 0

    spec = {"tp_size": world, "speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4}
    dctx.publish(ServerArgs(model_path="m", **spec) if src else None, role="scheduler")
    out["first_report_none"] = dctx.republish_report is None
    dctx.override("tune", **({"chunked_prefill_size": 1024} if src else {}))
    dctx.override("adaptive_spec", **({"speculative_num_draft_tokens": 3} if src else {}))
    # Re-publish with a bound of 2: the draft-token override no longer fits and is dropped.
    again = ServerArgs(model_path="m", **{**spec, "speculative_num_draft_tokens": 2})
    dctx.publish(again if src else None, role="scheduler")
    reports = (dctx.republish_report, ctx.republish_report)
    out["reports"] = [
        None if r is None else {
            "replayed": [e.leaf for e in r.replayed],
            "dropped": [(d.entry.leaf, "capacity" in d.reason) for d in r.dropped],
        }
        for r in reports
    ]
    out["values"] = (get_schedule().chunked_prefill_size, get_spec().speculative_num_draft_tokens)

    def attempt(name: str, call: Any, exc_type: type[BaseException]) -> None:
        start = time.monotonic()
        try:
            call()
        except exc_type as exc:
            out[name] = {"type": type(exc).__name__, "message": str(exc),
                         "seconds": time.monotonic() - start}
        else:
            out[name] = {"type": None}

    epoch = ctx.epoch
    # a publish the source rank cannot even read (not a record): AttributeError there
    attempt("publish_crash", lambda: dctx.publish(object() if src else None, role="scheduler"),
            Exception)

    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("boom")

    def short(*_a: Any, **_k: Any) -> Any:
        raise BudgetError("no KV left")

    for name, fake in (("override_crash", boom), ("override_kv_error", short)):
        if src:
            ctx.prepare_override = fake  # type: ignore[method-assign]
        attempt(name, lambda: dctx.override("x", **({"chunked_prefill_size": 7} if src else {})),
                Exception)
        if src:
            del ctx.prepare_override
    out["epoch_kept"] = ctx.epoch == epoch
    dctx.check_consistency()  # still in step: every rank passed the same collectives
    _write(outdir, "failures", rank, out)
    dist.destroy_process_group()


FAILURE_TIMEOUT = 20.0


# -- fault injection for the two-phase override (tests/test_dist_faults.py) -----------------

FAULT_TIMEOUT = 2.0
# (victim, phase): the DistributedContext method the victim is stopped or killed just
# before, and whether the override still commits on the ranks that are alive.
FAULT_PHASES: dict[tuple[str, str], tuple[str, bool]] = {
    ("follower", "receive"): ("_receive", False),  # never reads the proposal
    ("follower", "vote"): ("_vote", False),  # read it, never votes
    ("follower", "decide"): ("_await_decision", True),  # voted: the others commit
    ("follower", "commit"): ("_commit", True),  # knows the decision, never applies
    ("source", "propose"): ("_propose", False),  # never proposes
    ("source", "vote"): ("_vote", False),  # proposed, never votes
    ("source", "decide"): ("_decide", False),  # everyone voted, never decides
    ("source", "commit"): ("_commit", True),  # decided commit, never applies
}


def _outcome(call: Any) -> dict[str, Any]:
    import time

    from configbags.generated.accessors import get_context, get_schedule
    from configbags.runtime.errors import ConfigError

    start = time.monotonic()
    try:
        call()
        out: dict[str, Any] = {"outcome": "ok"}
    except ConfigError as exc:
        out = {"outcome": "error", "type": type(exc).__name__, "message": str(exc)}
    except Exception as exc:  # a raw error is a test failure; report it rather than crash
        out = {"outcome": "raw", "type": type(exc).__name__, "message": str(exc)}
    out["seconds"] = time.monotonic() - start
    out["value"] = get_schedule().chunked_prefill_size
    out["epoch"] = get_context().epoch
    return out


def faults(rank: int, world: int, port: int, outdir: str, signame: str, scenarios: list[list[Any]]) -> None:
    """Run `scenarios` ([victim, phase, value]) in order; in each, the victim rank sends
    itself `signame` just before its phase. SIGSTOP: the test process continues it once
    the others have written their outcome, and every rank goes on to the next scenario.
    SIGKILL: one scenario per run; the survivors then try a second override, which must
    name the dead rank."""
    import signal

    import configbags.generated.accessors  # noqa: F401  (registers the process context)
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import check_in, connect_store

    store = connect_store(f"127.0.0.1:{port}", is_master=False)
    Path(outdir, f"pid-{rank}").write_text(str(os.getpid()))
    check_in(store, "faults-started", rank, world, STORE_TIMEOUT)
    dctx = _join(rank, world, port)
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    dctx.timeout = FAULT_TIMEOUT
    sig = getattr(signal, signame)
    for i, (victim, phase, value) in enumerate(scenarios):
        # Everyone (a continued victim included) starts each scenario together.
        check_in(store, f"scenario-{i}", rank, world, STORE_TIMEOUT)
        victim_rank = 0 if victim == "source" else world - 1
        method, _ = FAULT_PHASES[(victim, phase)]
        if rank == victim_rank:
            real = getattr(dctx, method)

            def trap(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                os.kill(os.getpid(), sig)  # SIGSTOP returns here once continued
                return _real(*args, **kwargs)

            setattr(dctx, method, trap)
        leaves = {"chunked_prefill_size": value} if rank == 0 else {}
        out = _outcome(lambda leaves=leaves: dctx.override("fault", **leaves))
        if rank == victim_rank:
            delattr(dctx, method)
        if signame == "SIGKILL":
            out["second"] = _outcome(lambda: dctx.override("after", **({"chunked_prefill_size": 77} if rank == 0 else {})))
        _write(outdir, f"fault{i}", rank, out)
    os._exit(0)  # skip gloo teardown: a peer may be dead


# -- redaction and stalls (tests/test_dist_stalls.py) ---------------------------------------

SECRET = "planted-secret-5b1e"


def secret_logs(rank: int, world: int, port: int, outdir: str) -> None:
    """A runtime leaf declared secret (the bundled `weight_version`, marked secret here),
    overridden through the group with DEBUG logging on every rank: each rank's log must show
    the change, redacted."""
    import logging

    import attrs
    import torch.distributed as dist

    from configbags.generated import accessors
    from configbags.generated.registry import REGISTRY
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.context import Context
    from configbags.runtime.dist import connect_store, init_distributed

    logging.basicConfig(filename=str(Path(outdir, f"log-{rank}.txt")), level=logging.DEBUG,
                        format="%(name)s %(levelname)s %(message)s")
    leaves = dict(REGISTRY.leaves)
    leaves["weight_version"] = attrs.evolve(leaves["weight_version"], secret=True)
    context = Context(attrs.evolve(REGISTRY, leaves=leaves), type(accessors.get_context().view)(),
                      record_type=ServerArgs)
    store = connect_store(f"127.0.0.1:{port}", is_master=False, timeout=STORE_TIMEOUT)
    # a secret leaf travels only through a sealed store (with no rank secret it is refused)
    dctx = init_distributed(rank, world, store=store, backend="gloo", timeout=STORE_TIMEOUT, context=context,
                            secret=b"redaction-secret")
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="tokenizer")
    for value in (SECRET, SECRET + "-2"):
        dctx.override("rotate", **({"weight_version": value} if rank == 0 else {}))
    assert context.state.values["weight_version"] == SECRET + "-2"
    _write(outdir, "secret", rank, {"epoch": context.epoch})
    dist.destroy_process_group()


# the secrets a launch carries through the store (tests/test_dist_sealed.py): both API keys,
# published, and a runtime secret leaf's new value, overridden
SEALED = {"api_key": "planted-api-key-7f3c", "admin_api_key": "planted-admin-key-9d21",
          "weight_version": "planted-rotated-4a6e"}


def sealed_secrets(rank: int, world: int, port: int, outdir: str, secret: str) -> None:
    """Publish both API keys and override a runtime secret leaf through the group, with the
    launch `secret` (none when empty: each is refused, and the launch goes on without), then hold every key posted so far in the store until
    the test has read it (`outdir/read`), and finish with a collective that deletes them."""
    import time

    import attrs

    from configbags.generated import accessors
    from configbags.generated.registry import REGISTRY
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.context import Context
    from configbags.runtime.dist import UnsignedStoreError, connect_store, init_distributed

    leaves = dict(REGISTRY.leaves)
    leaves["weight_version"] = attrs.evolve(leaves["weight_version"], secret=True)
    context = Context(attrs.evolve(REGISTRY, leaves=leaves), type(accessors.get_context().view)(),
                      record_type=ServerArgs)
    store = connect_store(f"127.0.0.1:{port}", is_master=False, timeout=STORE_TIMEOUT)
    dctx = init_distributed(rank, world, store=store, timeout=STORE_TIMEOUT, context=context,
                            secret=secret.encode() or None, process_group=False)
    record = ServerArgs(model_path="m", tp_size=world, api_key=SEALED["api_key"],
                        admin_api_key=SEALED["admin_api_key"])
    refused: list[str] = []  # each refusal's message; a launch with no secret goes on without them
    try:
        dctx.publish(record if rank == 0 else None, role="tokenizer")
    except UnsignedStoreError as exc:
        refused.append(str(exc))
        dctx.publish(attrs.evolve(record, api_key=None, admin_api_key=None) if rank == 0 else None, role="tokenizer")
    try:
        dctx.override("rotate", **({"weight_version": SEALED["weight_version"]} if rank == 0 else {}))
    except UnsignedStoreError as exc:
        refused.append(str(exc))
    out = {"refused": refused, "values": {k: context.state.values[k] for k in SEALED}}
    _write(outdir, "sealed", rank, out)
    end = time.monotonic() + STORE_TIMEOUT
    while not Path(outdir, "read").exists() and time.monotonic() < end:
        time.sleep(0.02)
    dctx.check_consistency()  # a collective: every rank's spent keys are deleted
    _write(outdir, "sealed-done", rank, {})


# (the method the last rank stops itself just before, what the stop interrupts)
PUBLISH_STALLS = (("publish", "before the collective"), ("_install_published", "inside it"))


def publish_stalls(rank: int, world: int, port: int, outdir: str) -> None:
    """The last rank stops itself before and inside a publish; the test process continues
    it once the others wrote their outcome. Then every rank overrides and checks, which
    must succeed everywhere: the group is back in step."""
    import signal

    import configbags.generated.accessors  # noqa: F401  (registers the process context)
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import check_in, connect_store

    store = connect_store(f"127.0.0.1:{port}", is_master=False)
    Path(outdir, f"pid-{rank}").write_text(str(os.getpid()))
    check_in(store, "pstall-started", rank, world, STORE_TIMEOUT)
    dctx = _join(rank, world, port)
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    dctx.timeout = FAULT_TIMEOUT
    victim = world - 1
    for i, (method, _) in enumerate(PUBLISH_STALLS):
        check_in(store, f"pstall-{i}", rank, world, STORE_TIMEOUT)
        if rank == victim:
            real = getattr(dctx, method)

            def trap(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                os.kill(os.getpid(), signal.SIGSTOP)  # returns here once continued
                return _real(*args, **kwargs)

            setattr(dctx, method, trap)
        record = ServerArgs(model_path="m", tp_size=world, chunked_prefill_size=100 + i) if rank == 0 else None
        out = _outcome(lambda record=record: dctx.publish(record, role="scheduler"))
        if rank == victim:
            delattr(dctx, method)
        _write(outdir, f"pstall{i}", rank, out)
        check_in(store, f"pstall-{i}-back", rank, world, STORE_TIMEOUT)  # the victim was continued

        def after(i: int = i) -> None:
            dctx.override("after", **({"chunked_prefill_size": 200 + i} if rank == 0 else {}))
            dctx.check_consistency()

        _write(outdir, f"pstall{i}-after", rank, _outcome(after))
    os._exit(0)  # skip gloo teardown


# -- a rank that stays stopped leaves the group (tests/test_dist_stalls.py) -------------------

LEAVE_TIMEOUT = 1.0
LEAVE_AFTER = 2


def leaves(rank: int, world: int, port: int, outdir: str) -> None:
    """The last rank stops itself before an override and stays stopped; the live ranks try
    an override and a check (each names it after the timeout, the second makes it leave),
    then an override and a check that must refuse at once, naming it. The test process
    continues it once the others wrote their outcome: its next collective must refuse too."""
    import signal

    import configbags.generated.accessors  # noqa: F401  (registers the process context)
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import check_in, connect_store

    store = connect_store(f"127.0.0.1:{port}", is_master=False)
    Path(outdir, f"pid-{rank}").write_text(str(os.getpid()))
    check_in(store, "leave-started", rank, world, STORE_TIMEOUT)
    dctx = _join(rank, world, port)
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    dctx.timeout, dctx.leave_after = LEAVE_TIMEOUT, LEAVE_AFTER
    victim = world - 1
    if rank == victim:
        os.kill(os.getpid(), signal.SIGSTOP)  # returns here once continued
        _write(outdir, "leave", rank, [_outcome(lambda: dctx.override("back"))])
        os._exit(0)

    def change(value: int) -> Any:
        return lambda: dctx.override("leave", **({"chunked_prefill_size": value} if rank == 0 else {}))

    steps = [change(300), dctx.check_consistency, change(301), dctx.check_consistency, dctx.seal]
    _write(outdir, "leave", rank, [_outcome(step) for step in steps])
    os._exit(0)  # skip gloo teardown: a peer is stopped


def default_store(rank: int, world: int, port: int, outdir: str) -> None:
    """A process group the engine made itself (no init_distributed): DistributedContext()
    joins through the default group's store, signed with the secret given, and publishes
    and overrides through it."""
    import torch.distributed as dist

    from configbags.generated.accessors import get_schedule
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import DistributedContext, connect_store

    store = connect_store(f"127.0.0.1:{port}", is_master=False, timeout=STORE_TIMEOUT)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    dctx = DistributedContext(secret=b"engine-secret", timeout=STORE_TIMEOUT)
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    dctx.override("engine", **({"chunked_prefill_size": 640} if rank == 0 else {}))
    dctx.check_consistency()
    _write(outdir, "default", rank, {"value": get_schedule().chunked_prefill_size})
    dist.destroy_process_group()
