"""How fast hostile input is refused: the alias bomb under a json leaf in a config file,
as a json default and inside `choices` in a schema file, a 900-deep json value and a
5000-digit integer. Goal: each refused in under 1 s (unguarded, the bomb ran > 120 s)."""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stderr
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hostile.corpus import billion_laughs, deep_json_text  # noqa: E402

from configbags.codegen.__main__ import main as gen_main  # noqa: E402
from configbags.generated.server_args import ServerArgs  # noqa: E402
from configbags.runtime.errors import ConfigError  # noqa: E402

ROUNDS = 5


def _config(tmp: Path, body: str) -> Callable[[], None]:
    path = tmp / "server.yaml"
    path.write_text("model_path: /m\n" + body)

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
        }.items():
            folder = tmp / str(len(cases))
            folder.mkdir()
            cases[name] = make(folder)
        worst = 0.0
        print(f"hostile input refused (median of {ROUNDS}, after one warm-up)")
        for name, run in cases.items():
            run()
            times = []
            for _ in range(ROUNDS):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            worst = max(worst, median)
            print(f"  {name:34s} {median * 1e3:8.1f} ms")
    print(f"goal each < 1 s: {'met' if worst < 1 else 'MISSED'} (worst {worst * 1e3:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
