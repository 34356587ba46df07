"""Generator speed: `make gen` on the bundled schema (wall time of the real command), and
time per leaf on synthetic schemas of 200 and 2,000 leaves built here, side by side.

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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        bundled = timed_gen(REPO / "schema", tmpdir / "bundled" / "generated")
        print(f"bundled schema: make gen (python -m codegen, cold process) {bundled:.2f} s  (goal < 2 s)")
        per_leaf = {}
        for n in (200, 2000):
            schema = tmpdir / f"s{n}" / "schema"
            synthetic(schema, n)
            seconds = timed_gen(schema, tmpdir / f"s{n}" / "generated", repeat=2)
            per_leaf[n] = seconds / n
            print(f"synthetic {n:5d} leaves: {seconds:.2f} s, {per_leaf[n] * 1e3:.2f} ms/leaf")
        ratio = per_leaf[2000] / per_leaf[200]
        print(f"per-leaf time ratio 2000/200: {ratio:.2f}x  (goal: about 1x; fixed start-up cost makes it < 1)")


if __name__ == "__main__":
    main()
