"""Override broadcast latency across gloo ranks on localhost, 2 and 4 ranks in one run.

Latency of one override = from rank 0 calling `DistributedContext.override` until the last
rank has applied it (every rank stamps time.perf_counter, CLOCK_MONOTONIC, shared by the
processes of one host). Reported for the default two-phase override through the
rendezvous store (propose, vote, decide, commit: a dead or stopped rank is named and
nothing is applied anywhere) and for the plain gloo broadcast used when no store is known
(apply on the source, broadcast, apply), to show what the two phases cost.
Goal: p50 under 10 ms at 4 ranks."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp
from torch._C._distributed_c10d import TCPStore

WARMUP, ITERS = 30, 300


def _rank(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    import configbags.generated.accessors  # noqa: F401  (registers the process context)
    from configbags.generated.server_args import ServerArgs
    from configbags.runtime.dist import connect_store, init_distributed

    dctx = init_distributed(rank, world, store=connect_store(f"127.0.0.1:{port}", is_master=False),
                            backend="gloo")
    dctx.publish(ServerArgs(model_path="m", tp_size=world) if rank == 0 else None, role="scheduler")
    results = {}
    for mode in ("two-phase", "gloo only"):
        if mode == "gloo only":
            dctx.store = None
        starts, ends = [], []
        for i in range(WARMUP + ITERS):
            leaves = {"chunked_prefill_size": 1024 + (i % 2)} if rank == 0 else {}
            t0 = time.perf_counter()
            dctx.override("bench", **leaves)
            t1 = time.perf_counter()
            if i >= WARMUP:
                starts.append(t0)
                ends.append(t1)
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, ends)
        if rank == 0:
            last = [max(e[i] for e in gathered) for i in range(ITERS)]
            results[mode] = [(b - a) * 1e3 for a, b in zip(starts, last, strict=True)]
    dctx.check_consistency()
    if rank == 0:
        Path(out).write_text(json.dumps(results))
    dist.destroy_process_group()


def measure(world: int) -> dict[str, list[float]]:
    store = TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=60), wait_for_workers=False)
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp, "r.json"))
        mp.spawn(_rank, args=(world, store.port, out), nprocs=world, join=True)
        results: dict[str, list[float]] = json.loads(Path(out).read_text())
    return results


def main() -> int:
    runs = {w: measure(w) for w in (2, 4)}
    print(f"override broadcast latency, rank 0 call -> applied on every rank "
          f"(gloo, localhost, {ITERS} overrides after {WARMUP} warm-up)")
    for mode in ("two-phase", "gloo only"):
        p50 = {w: statistics.median(runs[w][mode]) for w in runs}
        p90 = {w: statistics.quantiles(runs[w][mode], n=10)[-1] for w in runs}
        print(f"  {mode:12s} p50: 2 ranks {p50[2]:.3f} ms, 4 ranks {p50[4]:.3f} ms "
              f"(growth 2->4: {p50[4] / p50[2]:.2f}x); p90 4 ranks {p90[4]:.3f} ms")
    p50_4 = statistics.median(runs[4]["two-phase"])
    print(f"goal p50 < 10 ms at 4 ranks: {'met' if p50_4 < 10 else 'MISSED'} ({p50_4:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
