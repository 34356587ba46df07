"""Ratchet scanner speed, measured side by side in one run.

    python bench/bench_ratchet.py                 # builds a 3,000-file, ~900k-line tree
    python bench/bench_ratchet.py --root DIR      # scans every .py file under DIR

Prints two sets of timings of the same files, each the best of --repeat runs, interleaved
so that machine noise hits all alike. Nothing here asserts: the tests never time anything.

In process: a bare `ast.parse` (read + parse, nothing else), a cold scan (empty
content-hash cache; the cache is written), and a warm re-scan served from that cache;
goals cold/parse <= 1.3 and warm/cold <= 0.1.

As whole processes, what a user waits for: `configbags ratchet check` cold (no scan cache,
no cached schema inputs) and warm (both cached), against a process that only parses the
same files; goals cold <= 1.2x the parse-only process and warm <= 0.3 s (wall, on an
idle machine: on a loaded one the CPU time it prints is the steadier figure).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from configbags.migrate.scan import ScanSettings, list_files, scan_tree

GOAL_COLD = 1.3
GOAL_WARM = 0.1
GOAL_PROCESS_COLD = 1.2  # x the parse-only process
GOAL_PROCESS_WARM_S = 0.3

_PARSE_ONLY = """\
import ast, sys
for path in open(sys.argv[1]).read().splitlines():
    try:
        ast.parse(open(path, "rb").read())
    except (SyntaxError, ValueError):
        pass
"""
_NAMESPACE = """\
namespace: parallel
doc: Bench leaves.
leaves:
"""

_READS = [
    "get_server_args().{leaf}",
    "self.server_args.{leaf}",
    "server_args.{leaf}",
    'getattr(get_server_args(), "{leaf}")',
    "accessors.get_server_args().{leaf}",
]
_LEAVES = ["tp_size", "pp_size", "page_size", "dp_size", "attention_backend", "kv_cache_dtype"]
# Reads around the record (configbags.migrate.doors): every module imports os and
# get_context and has a `self.state`, so every one is walked for them, not only
# prechecked. Some reads are raw env reads of declared variables; the context is read
# only through its scoped doors (a readback would fail the check right after init).
_ENV = {"SGLANG_TP_SIZE": "tp_size", "SGLANG_PAGE_SIZE": "page_size"}
_DOOR_READS = [
    'os.environ.get("SGLANG_PAGE_SIZE", "16")',
    'os.getenv("SGLANG_TP_SIZE")',
    'get_context().bag("parallel").{leaf}',
]


def _method(rng: random.Random, index: int, reads: bool) -> list[str]:
    arg = "server_args" if reads and rng.random() < 0.5 else "batch"
    lines = [f"    def step_{index}(self, {arg}, limit: int = {rng.randint(1, 64)}) -> int:"]
    lines.append(f'        """Advance stage {index} of the pipeline by one batch."""')
    lines.append("        total = 0")
    lines.append(f"        for position in range(limit * {rng.randint(2, 9)}):")
    lines.append("            if position % 3 == 0:")
    lines.append("                total += self.weights[position % len(self.weights)]")
    lines.append("            else:")
    lines.append(f"                total -= position // {rng.randint(2, 7)}")
    if reads:
        spelling = rng.choice(_READS if arg == "server_args" else _READS[:2] + _READS[3:])
        if rng.random() < 0.2:
            spelling = rng.choice(_DOOR_READS)
        lines.append(f"        total += int(bool({spelling.format(leaf=rng.choice(_LEAVES))}))")
    elif rng.random() < 0.05:
        lines.append('        total += int(os.environ.get("CUDA_VISIBLE_DEVICES", "0")[:1] or 0)')
    lines.append("        queue = [item for item in self.pending if item is not None]")
    lines.append("        self.pending = queue[: limit]")
    lines.append("        return total + len(queue)")
    lines.append("")
    return lines


def synthetic_module(rng: random.Random, number: int, target_lines: int) -> str:
    lines = [
        f'"""Synthetic engine module {number}: schedulers, runners and helpers."""',
        "",
        "from __future__ import annotations",
        "",
        "import math",
        "import os",
        "from dataclasses import dataclass",
        "",
        "from generated import accessors",
        "from configbags.generated.accessors import get_context, get_server_args",
        "",
        f"LIMIT_{number} = {rng.randint(100, 999)}",
        "",
    ]
    klass = 0
    while len(lines) < target_lines:
        klass += 1
        lines += [
            "",
            f"class Worker{number}x{klass}:",
            f'    """Worker {klass} of module {number}."""',
            "",
            "    def __init__(self, server_args, weights: list[int]) -> None:",
            "        self.server_args = server_args",
            "        self.weights = weights or [1, 2, 3]",
            "        self.pending: list[int | None] = []",
            '        self.state = "ready"',
            "",
        ]
        for index in range(rng.randint(6, 12)):
            lines += _method(rng, index, reads=rng.random() < 0.15)
        lines += [
            "",
            f"def helper_{number}_{klass}(values: list[float]) -> float:",
            "    acc = 0.0",
            "    for value in values:",
            "        acc = math.fsum([acc, value * value])",
            f"    return math.sqrt(acc) / LIMIT_{number}",
            "",
        ]
    return "\n".join(lines) + "\n"


def build_tree(folder: Path, files: int, lines: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    per_file = max(lines // files, 20)
    for number in range(files):
        package = folder / f"pkg{number % 20}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"mod{number}.py").write_text(synthetic_module(rng, number, per_file))


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="scan this tree instead of a synthetic one")
    parser.add_argument("--files", type=int, default=3000, help="synthetic tree: files")
    parser.add_argument("--lines", type=int, default=900_000, help="synthetic tree: total lines")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the best counts")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-process timings")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-ratchet-") as scratch:
        scratch_dir = Path(scratch)
        if args.root is None:
            project = scratch_dir / "tree"
            build_tree(project, args.files, args.lines)
            label = f"synthetic tree ({args.files} files)"
        else:
            project = args.root.resolve()
            label = str(project)
        settings = ScanSettings(roots=(".",), max_bytes=50_000_000, env_vars=tuple(sorted(_ENV)))
        files = list_files(project, settings)
        paths = [project / f for f in files]
        total_lines = sum(p.read_bytes().count(b"\n") for p in paths)

        def bare_parse() -> None:
            for path in paths:
                with contextlib.suppress(SyntaxError, ValueError):
                    ast.parse(path.read_bytes())

        cache = scratch_dir / "cache.json"

        def cold() -> None:
            cache.unlink(missing_ok=True)
            scan_tree(project, settings, files=files, cache_path=cache)

        def warm() -> None:
            scan_tree(project, settings, files=files, cache_path=cache)

        parse_times, cold_times, warm_times = [], [], []
        parse_cpu, cold_cpu = [], []
        for _ in range(args.repeat):
            before = time.process_time()
            parse_times.append(_timed(bare_parse))
            parse_cpu.append(time.process_time() - before)
            before = time.process_time()
            cold_times.append(_timed(cold))
            cold_cpu.append(time.process_time() - before)
            warm_times.append(_timed(warm))
        result = scan_tree(project, settings, files=files, cache_path=cache)

    parse_s, cold_s, warm_s = min(parse_times), min(cold_times), min(warm_times)
    cold_ratio, warm_ratio = cold_s / parse_s, warm_s / cold_s
    print(f"tree: {label}: {len(files)} files, {total_lines} lines, {len(result.reads)} raw reads")
    print(f"bare ast.parse (read + parse): {parse_s * 1000:8.1f} ms")
    print(f"cold scan (cache written):     {cold_s * 1000:8.1f} ms   {cold_ratio:.2f}x parse  (goal <= {GOAL_COLD}x)  {'ok' if cold_ratio <= GOAL_COLD else 'MISSED'}")
    print(f"warm re-scan (from cache):     {warm_s * 1000:8.1f} ms   {warm_ratio:.3f}x cold  (goal <= {GOAL_WARM}x)  {'ok' if warm_ratio <= GOAL_WARM else 'MISSED'}")
    print(f"CPU: bare parse {min(parse_cpu) * 1000:.1f} ms, cold scan {min(cold_cpu) * 1000:.1f} ms: {min(cold_cpu) / min(parse_cpu):.2f}x")
    print(f"best of {args.repeat} interleaved runs each; {result.files_from_cache} files served from cache")
    if not args.no_process:
        _whole_processes(args, label)
    return 0


def _whole_processes(args: argparse.Namespace, label: str) -> None:
    """`configbags ratchet check` as a user runs it, against a parse-only process."""
    from configbags.migrate.importer import ROLES_YAML

    with tempfile.TemporaryDirectory(prefix="bench-ratchet-process-") as scratch:
        project = Path(scratch)
        if args.root is None:
            build_tree(project / "tree", args.files, args.lines)
            root = project / "tree"
        else:
            root = args.root.resolve()
        schema = project / "schema"
        (schema / "namespaces").mkdir(parents=True)
        env_of = {leaf: env for env, leaf in _ENV.items()}
        leaves = "".join(
            f"  {leaf}: {{type: str, default: x, help: h, owner: launcher, override: startup"
            + (f", env: {env_of[leaf]}" if leaf in env_of else "")
            + "}\n"
            for leaf in _LEAVES
        )
        (schema / "namespaces" / "parallel.yaml").write_text(_NAMESPACE + leaves)
        (schema / "roles.yaml").write_text(ROLES_YAML)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        # An installed configbags has its bytecode (pip compiles at install); a machine
        # that forbids writing it would time the compiler, not the ratchet.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("CI", None)  # on CI the check uses no cache unless asked: the warm run would be cold
        command = [sys.executable, "-m", "configbags", "ratchet"]
        subprocess.run(
            [*command, "init", "--schema", str(schema), "--root", str(root)],
            check=True, env=env, capture_output=True,
        )
        listing = project / "files.txt"
        listing.write_text("\n".join(str(p) for p in sorted(root.rglob("*.py"))))
        parse_script = project / "parse_only.py"
        parse_script.write_text(_PARSE_ONLY)
        caches = project / ".configbags-cache"
        check = [*command, "check", "--schema", str(schema)]

        def parse_only() -> None:
            subprocess.run([sys.executable, str(parse_script), str(listing)], check=True, env=env)

        def cold(*extra: str) -> Callable[[], None]:
            def run() -> None:
                shutil.rmtree(caches, ignore_errors=True)
                subprocess.run([*check, *extra], check=True, env=env, capture_output=True)

            return run

        def warm() -> None:
            subprocess.run(check, check=True, env=env, capture_output=True)

        timings: dict[str, list[tuple[float, float]]] = {"parse": [], "cold": [], "cold1": [], "warm": []}
        for _ in range(args.repeat):
            for name, fn in (("parse", parse_only), ("cold", cold()), ("cold1", cold("--jobs", "1")), ("warm", warm)):
                timings[name].append(_timed_process(fn))
    best = {name: (min(w for w, _ in runs), min(c for _, c in runs)) for name, runs in timings.items()}
    (parse_s, parse_cpu), (cold_s, cold_cpu), (cold1_s, cold1_cpu), (warm_s, warm_cpu) = (
        best["parse"], best["cold"], best["cold1"], best["warm"]
    )

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"whole processes, {label} (wall; CPU = user+sys of the process and its workers, which machine "
          f"load inflates less; load average {load:.1f} on {os.cpu_count()} CPUs):")
    print(f"parse-only process:            {parse_s * 1000:8.1f} ms wall  {parse_cpu * 1000:8.1f} ms CPU")
    print(f"ratchet check, cold (parallel): {cold_s * 1000:7.1f} ms wall   {cold_s / parse_s:.2f}x parse-only  (goal <= {GOAL_PROCESS_COLD}x)  {verdict(cold_s / parse_s <= GOAL_PROCESS_COLD)}"
          f"  |  {cold_cpu * 1000:8.1f} ms CPU  {cold_cpu / parse_cpu:.2f}x parse-only CPU")
    print(f"ratchet check, cold (--jobs 1): {cold1_s * 1000:7.1f} ms wall  {cold1_cpu * 1000:8.1f} ms CPU  {cold1_cpu / parse_cpu:.2f}x parse-only CPU")
    print(f"ratchet check, warm:           {warm_s * 1000:8.1f} ms wall  {warm_cpu * 1000:8.1f} ms CPU  (goal <= {GOAL_PROCESS_WARM_S * 1000:.0f} ms)  {verdict(warm_s <= GOAL_PROCESS_WARM_S)}")
    return 0


def _timed_process(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child processes) of `fn`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = _timed(fn)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    raise SystemExit(main())
