"""Speed of the schema-evolution tools, each as one cold `configbags` process (start-up
and imports count), wall and CPU time beside the goal and the ratio to it:

- `configbags diff` of two 2,000-leaf schemas (goal <= 1 s): without the view cache, and
  with the views an earlier run cached (the case of CI comparing with a base revision);
- `configbags lint` of 1,000 deployment files (shell, Kubernetes, Helm values, Dockerfiles,
  compose, config files) against the bundled schema (goal <= 2 s);
- `configbags matrix --check` of 24 shapes x 500 leaves (goal <= 2 s), on a package
  generated here from a synthetic schema.

Everything is built in a temporary folder, outside the checkout."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CONFIGBAGS = [sys.executable, "-m", "configbags"]
TYPES = ["int", "float", "bool", "str", "optional int", "list[int]", "optional str"]
DEFAULTS = {"int": 1, "float": 0.5, "bool": False, "str": "auto", "optional int": None,
            "list[int]": [1, 2], "optional str": None}


def synthetic(root: Path, leaves: int, *, changed: bool = False, per_namespace: int = 20) -> None:
    """A schema of `leaves` leaves; `changed` makes the next release of it: some leaves
    removed, renamed, retyped, bounded, re-defaulted and re-policied."""
    (root / "namespaces").mkdir(parents=True)
    for s in range(max(1, leaves // per_namespace)):
        doc: dict[str, object] = {"namespace": f"ns{s}", "doc": f"Synthetic namespace {s}.", "leaves": {}}
        for i in range(per_namespace):
            t = TYPES[(s + i) % len(TYPES)]
            name = f"leaf_{s}_{i}"
            leaf: dict[str, object] = {"type": t, "default": DEFAULTS[t],
                                       "help": f"Synthetic leaf {i} of namespace {s}.", "owner": "launcher",
                                       "override": "runtime" if i % 3 == 0 else "startup"}
            if t == "int":
                leaf["min"] = 0
            if changed and i == 1:
                continue  # removed
            if changed and i == 2:
                name, leaf["renamed_from"] = f"leaf_{s}_{i}_new", [f"leaf_{s}_{i}"]
            if changed and i == 3 and t == "int":
                leaf["min"] = 1
            if changed and i == 4:
                leaf["override"] = "startup"
            if changed and i == 5 and t == "float":
                leaf["default"] = 0.25
            doc["leaves"][name] = leaf  # type: ignore[index]
        (root / "namespaces" / f"ns{s}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (root / "roles.yaml").write_text(yaml.safe_dump({"roles": {"launcher": {"doc": "l", "reads": "all"}}}))
    (root / "settings.yaml").write_text('version: "1.0"\nenv_prefix: SYN_\n')


CPU: dict[float, float] = {}


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1)) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*CONFIGBAGS, *args], cwd=cwd, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise SystemExit(f"{args[0]} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    CPU[wall] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall


def best(runs: int, *args: object, **kwargs: object) -> float:
    return min(run(*args, **kwargs) for _ in range(runs))  # type: ignore[arg-type]


def line(label: str, seconds: float, goal: float) -> None:
    cpu = CPU[seconds]
    print(f"{label:58s} {seconds:6.2f} s, cpu {cpu:6.2f} s | goal {goal:4.1f} s | ratio {seconds / goal:4.2f}x, "
          f"cpu {cpu / goal:4.2f}x", flush=True)


LAUNCH = """#!/bin/bash
export SGLANG_LOG_LEVEL=info
python -m sglang.launch_server --model-path /models/m{n} --tp-size {tp} --page-size 16 \\
  --max-running-requests 64 --chunked-prefill-size 8192 --mem-fraction-static 0.85 \\
  --attention-backend {backend} --kv-cache-dtype auto --schedule-policy lpm --port {port}
"""
MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: engine-{n}}}
spec:
  template:
    spec:
      containers:
        - name: engine
          image: engine:1
          command: [python, -m, sglang.launch_server]
          args: [--model-path, /m, --tp-size, "{tp}", --max-running-requests, "64", --page-size, "16"]
          env:
            - {{name: SGLANG_LOG_LEVEL, value: info}}
---
apiVersion: v1
kind: Service
metadata: {{name: engine-{n}}}
spec: {{ports: [{{port: 80}}]}}
"""
VALUES = """engine:
  args: [--model-path, /m, --tp-size, "{tp}", --chunked-prefill-size, "4096"]
  env: [{{name: SGLANG_LOG_LEVEL, value: debug}}]
  config: {{max_running_requests: 32, schedule_policy: fcfs, page_size: 16}}
"""
DOCKERFILE = """FROM python:3.11
ENV SGLANG_LOG_LEVEL=info
ENTRYPOINT ["python", "-m", "sglang.launch_server"]
CMD ["--model-path", "/m", "--tp-size", "{tp}", "--page-size", "16"]
"""
COMPOSE = """services:
  engine:
    image: engine:1
    command: python -m sglang.launch_server --model-path /m --tp-size {tp} --port {port}
    environment: {{SGLANG_LOG_LEVEL: info}}
"""
CONFIG = "model_path: /m\ntp_size: {tp}\nmax_running_requests: 64\npage_size: 16\nschedule_policy: lpm\n"


def deployment_files(root: Path, count: int) -> None:
    kinds = [("launch-{n}.sh", LAUNCH), ("k8s/engine-{n}.yaml", MANIFEST), ("chart-{n}/values.yaml", VALUES),
             ("docker/Dockerfile.{n}", DOCKERFILE), ("compose-{n}/docker-compose.yml", COMPOSE),
             ("configs/engine-config-{n}.yaml", CONFIG)]
    for n in range(count):
        name, text = kinds[n % len(kinds)]
        path = root / name.format(n=n)
        path.parent.mkdir(parents=True, exist_ok=True)
        # one file in ten carries a typo, as real trees do
        body = text.format(n=n, tp=1 << (n % 4), backend="flashinfer", port=30000 + n % 100)
        if n % 10 == 0:
            body = body.replace("--tp-size", "--tp-sise").replace("tp_size", "tp_sise")
        path.write_text(body)


def matrix_package(root: Path, leaves: int, shapes: int) -> Path:
    """A generated package `benchpkg` of `leaves` leaves and a shapes file of `shapes` shapes."""
    schema = root / "schema"
    synthetic(schema, leaves)
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([*CONFIGBAGS, "gen", "--schema", str(schema), "--package", "benchpkg", "--out",
                    str(root / "benchpkg")], cwd=root, check=True, capture_output=True, env=env)
    spec: dict[str, object] = {"package": "benchpkg", "golden": "golden.jsonl", "shapes": {}}
    for k in range(shapes):
        argv = [f"--leaf-{k % 25}-0", str(k)] if k % 3 else []
        shape: dict[str, object] = {"argv": argv}
        if k % 4 == 1:
            shape["config"] = {f"leaf_{k % 25}_1": 0.75}
        if k % 5 == 2:
            shape["env"] = {"SYN_UNKNOWN": "1"}
        spec["shapes"][f"shape-{k}"] = shape  # type: ignore[index]
    (root / "matrix.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return root / "matrix.yaml"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "pyproject.toml").write_text("[tool.configbags]\nschema = \"new\"\n")  # a project: views cache
        synthetic(tmpdir / "old", 2000)
        synthetic(tmpdir / "new", 2000, changed=True)
        diff = ["diff", "old", "new", "--fail-on", "never"]
        line("diff, 2,000 leaves each side, cold process, no cache", best(3, [*diff, "--no-cache"], tmpdir), 1.0)
        run(diff, tmpdir)  # leaves both views in the cache
        line("diff, 2,000 leaves each side, cold process, cached views", best(3, diff, tmpdir), 1.0)
        (tmpdir / "new" / "namespaces" / "ns0.yaml").write_text(
            (tmpdir / "new" / "namespaces" / "ns0.yaml").read_text().replace("Synthetic leaf 0", "Edited leaf 0"))
        line("diff, 2,000 leaves, cold process, old cached, new edited", best(1, diff, tmpdir), 1.0)

        files = tmpdir / "deploy"
        deployment_files(files, 1000)
        lint = ["lint", str(files), "--schema", str(REPO / "schema"), "--fail-on", "never", "--no-cache"]
        line("lint, 1,000 deployment files, bundled schema, cold process", best(3, lint, tmpdir), 2.0)

        root = tmpdir / "matrix"
        root.mkdir()
        shapes = matrix_package(root, 500, 24)
        env = {**os.environ, "PYTHONPATH": str(root)}
        run(["matrix", "--shapes", str(shapes), "--write"], root, env=env)
        line("matrix --check, 24 shapes x 500 leaves, cold process",
             best(3, ["matrix", "--shapes", str(shapes), "--check"], root, env=env, ok=(0,)), 2.0)


if __name__ == "__main__":
    main()
