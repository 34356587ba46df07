"""How fast, and in how much memory, hostile input is refused: the alias bomb under a json
leaf in a config file, as a json default and inside `choices` in a schema file, a 900-deep
json value, a 5000-digit integer, and files just under the 8 MB byte limit whose structure
breaks the node limit (config files in YAML and JSON, a schema file, a model config.json).
Goal: each refused in under 1 s and 100 MB (before the limits were counted while parsing,
an 8 MB YAML list took 46 s and 1.8 GB, a 4 MB schema file 57 s and 1.5 GB)."""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from contextlib import redirect_stderr
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hostile.corpus import billion_laughs, deep_json_text  # noqa: E402

from configbags.codegen.__main__ import main as gen_main  # noqa: E402
from configbags.generated.server_args import ServerArgs  # noqa: E402
from configbags.runtime.errors import ConfigError  # noqa: E402
from configbags.runtime.limits import LIMITS  # noqa: E402
from configbags.runtime.resolve import ModelFacts  # noqa: E402

ROUNDS = 5


def _config(tmp: Path, body: str, suffix: str = ".yaml") -> Callable[[], None]:
    path = tmp / f"server{suffix}"
    path.write_text("model_path: /m\n" + body if suffix == ".yaml" else body)

    def run() -> None:
        try:
            ServerArgs.from_file(path)
        except ConfigError:
            return
        raise AssertionError("accepted")

    return run


def _schema(tmp: Path, old: str, new: str, file: str = "core.tune.yaml") -> Callable[[], None]:
    schema = tmp / "schema"
    shutil.copytree(REPO / "tests" / "cases" / "tiny" / "schema", schema)
    target = schema / "namespaces" / file
    target.write_text(target.read_text().replace(old, new, 1))

    def run() -> None:
        with redirect_stderr(io.StringIO()):
            code = gen_main(["--schema", str(schema), "--out", str(tmp / "out")])
        assert code == 2

    return run


def _model(tmp: Path, text: str) -> Callable[[], None]:
    path = tmp / "config.json"
    path.write_text(text)

    def run() -> None:
        try:
            ModelFacts.from_config(path)
        except ConfigError:
            return
        raise AssertionError("accepted")

    return run


ROOM = LIMITS.file_bytes - 64  # just under the byte limit: only the node limit can refuse these


def main() -> int:
    bomb = billion_laughs()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        cases = {}
        for name, make in {
            "config: bomb under a json leaf": lambda d: _config(d, f"json_model_override_args: {{b: {bomb}}}\n"),
            "config: 900-deep json value": lambda d: _config(d, f"json_model_override_args: {deep_json_text(900)}\n"),
            "config: 5000-digit int": lambda d: _config(d, "dp_size: " + "9" * 5000 + "\n"),
            "schema: bomb as a json default": lambda d: _schema(d, "  mode:\n", "  bomb:\n    type: json\n    default: "
                                                               + bomb + "\n    help: x\n    owner: boss\n"
                                                               "    override: startup\n  mode:\n"),
            "schema: bomb inside choices": lambda d: _schema(d, "    choices: [fast, safe]\n", f"    choices: {bomb}\n"),
            "config: 8 MB YAML flow list": lambda d: _config(
                d, "json_model_override_args: [" + "1," * (ROOM // 2 - 16) + "1]\n"),
            "config: 8 MB YAML block list": lambda d: _config(d, "json_model_override_args:\n" + "- 1\n" * (ROOM // 4 - 16)),
            "config: 8 MB JSON of {}": lambda d: _config(
                d, '{"model_path": "/m", "json_model_override_args": [' + "{}," * (ROOM // 3 - 20) + "{}]}", ".json"),
            "schema: 4 MB flow list": lambda d: _schema(d, "  mode:\n", "  big:\n    type: json\n    default: ["
                                                       + "1," * (ROOM // 4) + "1]\n    help: x\n    owner: boss\n"
                                                       "    override: startup\n  mode:\n"),
            "model config: 100,000 deep": lambda d: _model(d, deep_json_text(100_000)),
        }.items():
            folder = tmp / str(len(cases))
            folder.mkdir()
            cases[name] = make(folder)
        worst = 0.0
        heaviest = 0
        print(f"hostile input refused (median of {ROUNDS}, after one warm-up; peak of Python allocations)")
        for name, run in cases.items():
            tracemalloc.start()
            run()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            heaviest = max(heaviest, peak)
            times = []
            for _ in range(ROUNDS):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            worst = max(worst, median)
            print(f"  {name:34s} {median * 1e3:8.1f} ms  {peak / 2**20:7.1f} MB")
    print(f"goal each < 1 s: {'met' if worst < 1 else 'MISSED'} (worst {worst * 1e3:.1f} ms)")
    print(f"goal each < 100 MB: {'met' if heaviest < 100 * 2**20 else 'MISSED'} (worst {heaviest / 2**20:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
