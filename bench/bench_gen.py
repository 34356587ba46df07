"""Generator speed: `make gen` on the bundled schema (wall time of the real command), and
time per leaf on synthetic schemas of 200 and 2,000 leaves built here, side by side (in
process, formatting serially, so start-up cost and parallelism do not skew the ratio).

Goals: bundled gen well under 2 s; per-leaf time about the same at 200 and 2,000 leaves."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
TYPES = ["int", "float", "bool", "str", "optional int", "list[int]", "optional str"]
DEFAULTS = {"int": 1, "float": 0.5, "bool": False, "str": "auto", "optional int": None,
            "list[int]": [1, 2], "optional str": None}


def synthetic(root: Path, leaves: int, per_namespace: int = 20) -> None:
    (root / "namespaces").mkdir(parents=True)
    spaces = max(1, leaves // per_namespace)
    for s in range(spaces):
        doc = {"namespace": f"ns{s}", "doc": f"Synthetic namespace {s}.", "leaves": {}}
        for i in range(per_namespace):
            t = TYPES[(s + i) % len(TYPES)]
            leaf = {"type": t, "default": DEFAULTS[t], "help": f"Synthetic leaf {i} of namespace {s}; 50% useful.",
                    "owner": "launcher", "override": "runtime" if i % 3 == 0 else "startup"}
            if t == "int":
                leaf["min"] = 0
            doc["leaves"][f"leaf_{s}_{i}"] = leaf
        (root / "namespaces" / f"ns{s}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (root / "roles.yaml").write_text(yaml.safe_dump({"roles": {"launcher": {"doc": "l", "reads": "all"}}}))


def timed_gen(schema: Path, out: Path, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "codegen", "--schema", str(schema), "--out", str(out)],
                       check=True, cwd=REPO, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def in_process(schema: Path, repeat: int) -> float:
    """Load + render + format (serially, so both sizes take the same path), best of `repeat`;
    interpreter start-up and imports are left out, which would otherwise flatter the larger
    schema's per-leaf figure."""
    from configbags.codegen.emit import emit
    from configbags.codegen.model import load_schema

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        emit(load_schema(schema), "regen", parallel=False)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        bundled = timed_gen(REPO / "schema", tmpdir / "bundled" / "generated")
        print(f"bundled schema: make gen (python -m configbags.codegen, cold process) {bundled:.2f} s  (goal < 2 s)")
        per_leaf = {}
        for n in (200, 2000):
            schema = tmpdir / f"s{n}" / "schema"
            synthetic(schema, n)
            seconds = in_process(schema, repeat=3 if n == 200 else 1)
            per_leaf[n] = seconds / n
            print(f"synthetic {n:5d} leaves: {seconds:.2f} s in process, {per_leaf[n] * 1e3:.2f} ms/leaf")
        ratio = per_leaf[2000] / per_leaf[200]
        print(f"per-leaf time ratio 2000/200: {ratio:.2f}x  (goal: about 1x, i.e. linear in leaves)")


if __name__ == "__main__":
    main()
