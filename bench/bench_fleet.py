"""`configbags fleet check` over 32 live servers (16 prefill, 14 decode, 2 routers), each a
`configbags serve` process on its own localhost port. Goal: the whole command, a fresh
process as CI runs it, in at most 2 s.

Printed side by side, in one run on the same machine load: the command as a fresh process
(interpreter start, imports, every read, the comparison), the same check in-process
(concurrent reads and the comparison only), and the same reads one server after another
with a keep-alive client (what a loop over the servers would cost). Servers start all at
once and are stopped at the end, whatever happens."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from configbags.fleet.check import Target, run

REPO = Path(__file__).resolve().parent.parent
COUNT = int(os.environ.get("BENCH_FLEET_SERVERS", "32"))
ROUNDS = 5
TARGET_S = 2.0
KEY = "bench-read-key"
sys.path.insert(0, str(REPO / "bench"))
from bench_serve import free_port  # noqa: E402


def role_flags(i: int) -> list[str]:
    if i < 2:
        return ["--deployment-role", "router"]
    return ["--disaggregation-mode", "prefill" if i % 2 == 0 else "decode"]


def start_all(count: int) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    procs, urls = [], []
    for i in range(count):
        port = free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "configbags", "serve", "--model-path", "m", "--port", str(port),
             "--api-key", KEY, *role_flags(i)],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 600
    pending = set(range(count))
    while pending and time.monotonic() < deadline:
        for i in sorted(pending):
            if procs[i].poll() is not None:
                raise SystemExit(f"server {i} exited with {procs[i].returncode}")
            try:
                if httpx.get(f"{urls[i]}/health", timeout=2).status_code == 200:
                    pending.discard(i)
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    if pending:
        raise SystemExit(f"{len(pending)} server(s) did not answer within 600 s")
    return procs, urls


def sequential(urls: list[str]) -> float:
    start = time.perf_counter()
    with httpx.Client(timeout=10, headers={"Authorization": f"Bearer {KEY}"}) as client:
        for url in urls:
            client.get(f"{url}/config/contracts").raise_for_status()
    return time.perf_counter() - start


def main() -> int:
    print(f"starting {COUNT} servers ...", flush=True)
    procs, urls = start_all(COUNT)
    try:
        targets = [Target(u, key=KEY) for u in urls]
        run(targets)  # warm: connections and imports in this process
        command, in_process, one_by_one = [], [], []
        env = {**os.environ, "CONFIGBAGS_API_KEY": KEY}
        for _ in range(ROUNDS):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "configbags", "fleet", "check", *urls],
                                  cwd=REPO, env=env, capture_output=True, text=True)
            command.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"fleet check exited {done.returncode}:\n{done.stdout}{done.stderr}")
            start = time.perf_counter()
            readings, findings, _ = run(targets)
            in_process.append(time.perf_counter() - start)
            if any(r.error for r in readings) or any(f.fails for f in findings):
                raise SystemExit("the in-process check found a problem; the servers should agree")
            one_by_one.append(sequential(urls))
        rows = [("configbags fleet check (fresh process)", command), ("check in-process (concurrent)", in_process),
                ("reads one after another", one_by_one)]
        base = statistics.median(in_process)
        print(f"{COUNT} servers, median of {ROUNDS} rounds:")
        for name, times in rows:
            med = statistics.median(times)
            print(f"  {name:40s} {med * 1000:8.1f} ms   {med / base:5.2f}x in-process")
        verdict = "meets" if statistics.median(command) <= TARGET_S else "MISSES"
        print(f"  the command {verdict} the {TARGET_S:g} s target")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
