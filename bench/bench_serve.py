"""`PATCH /config` latency against a no-op endpoint on the same `configbags serve`, at 1
and 2 ranks, in one run.

Each server is started as a subprocess on a free localhost port and measured with one
keep-alive httpx client, sequentially. Rounds alternate a `PATCH /config` (a new value each
time, so every one is a real change with a new epoch: auth, size-limited body, JSON checks,
the context's checks, the install, and at 2 ranks the broadcast to the other rank) with a
`GET /health` (the no-op: routing and a tiny JSON answer, no auth, no config work), so both
see the same machine load. Goal: PATCH p50 at most 2x the no-op's at 1 rank."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
WARMUP, ROUNDS = 50, 500
ADMIN_KEY = "bench-admin-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(ranks: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    flags = ["--ranks", str(ranks), "--tp-size", str(ranks)] if ranks > 1 else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "configbags", "serve", *flags, "--model-path", "m", "--port", str(port),
         "--admin-api-key", ADMIN_KEY],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"configbags serve --ranks {ranks} exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"configbags serve --ranks {ranks} did not answer within 180 s")


def measure(url: str) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"PATCH /config": [], "GET /health (no-op)": []}
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        for i in range(WARMUP + ROUNDS):
            t0 = time.perf_counter()
            r = client.patch("/config", json={"source": "bench", "leaves": {"weight_version": f"w{i}"}},
                             headers=headers)
            t1 = time.perf_counter()
            h = client.get("/health")
            t2 = time.perf_counter()
            if r.status_code != 200 or h.status_code != 200:
                raise SystemExit(f"bench request failed: {r.status_code} {r.text} / {h.status_code}")
            if i >= WARMUP:
                times["PATCH /config"].append((t1 - t0) * 1e3)
                times["GET /health (no-op)"].append((t2 - t1) * 1e3)
    return times


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    print(f"configbags serve: {ROUNDS} rounds (after {WARMUP} warm-up) per server, PATCH and no-op interleaved")
    print(f"{'ranks':>5}  {'endpoint':<22} {'p50 ms':>8} {'p99 ms':>8}")
    ratios = {}
    for ranks in (1, 2):
        proc, url = start(ranks)
        try:
            times = measure(url)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for name, values in times.items():
            print(f"{ranks:>5}  {name:<22} {statistics.median(values):>8.3f} {pct(values, 99):>8.3f}")
        ratios[ranks] = statistics.median(times["PATCH /config"]) / statistics.median(times["GET /health (no-op)"])
    for ranks, ratio in ratios.items():
        print(f"PATCH p50 / no-op p50 at {ranks} rank(s): {ratio:.2f}x" + ("  (goal <= 2x)" if ranks == 1 else ""))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
