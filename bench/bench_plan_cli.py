"""`configbags plan` as operators run it, each command as one process: the comparison sweep
of 11 models x 4 GPUs x 4 TP sizes (goal: at most 1 s) and the `--fit` acceptance question
(256 concurrent 8k:1k requests of Llama-3.1-70B over H100/H200/B200 x TP 1-8), beside a bare
`python -c pass` and an import of the command, so what the plan itself costs reads as a
ratio. Wall time and CPU time (user + system of the child) are both printed: on a shared
machine wall time is inflated, CPU time is not.

    .venv/bin/python bench/bench_plan_cli.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "models").glob("*.json") if "awq" not in p.name)
CLI = [sys.executable, "-m", "configbags"]

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import the plan command": [sys.executable, "-c", "import configbags.server.plan"],
    f"sweep: {len(MODELS)} models x 4 GPUs x 4 TP": [
        *CLI, "plan", "--model-config", ",".join(MODELS), "--gpu", "H100,H200,B200,A100-80G",
        "--tp-size", "1,2,4,8", "--workload", "2000:500"],
    "fit: llama-3.1-70b, 256 x 8000:1000, 3 GPUs x 4 TP": [
        *CLI, "plan", "--fit", "--workload", "8000:1000", "--concurrency", "256", "--model-config",
        "models/llama-3.1-70b.json", "--gpu", "H100,H200,B200", "--tp-size", "1,2,4,8"],
}


def run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    results = {}
    for name, argv in COMMANDS.items():
        runs = [run(argv) for _ in range(repeat)]
        results[name] = (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
    base_cpu = results["python -c pass"][1]
    print(f"{'command (one process each, median of ' + str(repeat) + ')':<52} {'wall s':>7} {'cpu s':>7} "
          f"{'x python':>9}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<52} {wall:>7.3f} {cpu:>7.3f} {cpu / base_cpu:>9.1f}")
    sweep = results[next(n for n in results if n.startswith("sweep"))]
    print(f"\nsweep goal: at most 1 s in one process -> wall {sweep[0]:.3f} s, cpu {sweep[1]:.3f} s")


if __name__ == "__main__":
    main()
