"""Round thirteen's launcher record (R13-6, an outside attack): a record built from the
command line or other values the code does not spell (`ServerArgs.from_cli_args(ns)`,
`ServerArgs(**vars(ns))`, a `prepare_server_args(argv)` helper returning one) is the
config the launcher is about to publish, so the project pass follows it into the
functions it is handed to, and their callees and modules, as it follows the published
record, and reports a leaf read there. A record of the class's defaults and literals
(`ServerArgs()`, `ServerArgs(model_path="m")`) stays no read when handed on. Each case
has its twin beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, file_reads, scan_pkg

HEAD = "import argparse\nfrom legacy.server_args import ServerArgs\n"
RUN = "def run(args):\n    return args.page_size\n"
PARSE = "    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n"


def _main(*lines: str) -> str:
    return "def main(argv):\n" + PARSE + "".join(f"    {line}\n" for line in lines)


# ---- R13-6: the record built from the command line, handed to an unannotated function

BUILT = [
    ("sa = ServerArgs.from_cli_args(p.parse_args(['--page-size', '64']))", "return run(sa)"),  # the probe
    ("return run(ServerArgs.from_cli_args(p.parse_args(argv)))",),
    ("return run(ServerArgs.from_cli(argv))",),
    ("return run(ServerArgs.from_cli([]))",),  # the generated from_cli reads files and the environment
    ("ns = p.parse_args(argv)", "return run(ServerArgs(**vars(ns)))"),
    ("return run(ServerArgs(page_size=len(argv)))",),
    ("return run(args=ServerArgs.from_dict({'page_size': 64}))",),
    ("sa = ServerArgs.from_cli(argv) if argv else ServerArgs()", "return run(sa)"),  # either one
]


@pytest.mark.parametrize("lines", BUILT)
def test_a_record_built_from_values_is_followed_into_the_callee(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + RUN + _main(*lines)})
    assert ("run", "page_size") in file_reads(result), result.reads
    assert fails(result)


@pytest.mark.parametrize("lines", [
    ("return run(ServerArgs())",),
    ("return run(ServerArgs(model_path='m', page_size=16))",),
    ("sa = ServerArgs(model_path='m')", "print(sa)", "return run(sa)"),
    ("return run(argparse.Namespace(page_size=64))",),
    ("ServerArgs.from_cli(argv)", "return run(len(argv))"),
    ("print(ServerArgs.add_cli_args(p))", "return run(argv)"),  # returns None, builds no record
])
def test_a_function_handed_no_record_of_the_config_stays_clean(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + RUN + _main(*lines)})
    assert not file_reads(result), result.reads
    assert not fails(result)


def test_a_leaf_of_the_filled_parsers_namespace_is_read_where_it_is_read(tmp_path: Path) -> None:
    # the Namespace p parses holds the config (R14-8, tests/test_ratchet_parsed15.py): its
    # leaf is read in main; the value handed to run is no record, so run reads nothing
    result = scan_pkg(tmp_path, {"user.py": HEAD + RUN + _main("return run(p.parse_args(argv).model_path)")})
    assert file_reads(result) == {("main", "model_path")}, result.reads
    assert fails(result)


# ---- the callee's callees and modules, and the launcher's helper that builds it

LAUNCH = "from pkg.engine import launch_server\n"
ENGINE = (
    "from pkg.scheduler import Scheduler\n"
    "def launch_server(sa):\n    return _start(sa)\n"  # no record name: only the pass follows it
    "def _start(cfg):\n    return Scheduler(cfg)\n"
)
SCHEDULER = "class Scheduler:\n    def __init__(self, cfg):\n        self.size = cfg.page_size\n"


@pytest.mark.parametrize("user", [
    # SGLang's launcher: `server_args = prepare_server_args(sys.argv[1:]); launch_server(server_args)`
    HEAD + LAUNCH + "def prepare_server_args(argv):\n    return ServerArgs.from_cli(argv)\n"
    "def main(argv):\n    server_args = prepare_server_args(argv)\n    launch_server(server_args)\n",
    HEAD + LAUNCH + "def main(argv):\n    launch_server(ServerArgs.from_cli(argv))\n",
])
def test_a_built_record_is_followed_through_callees_into_other_modules(tmp_path: Path, user: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": user, "engine.py": ENGINE, "scheduler.py": SCHEDULER})
    assert ("Scheduler.__init__", "page_size") in file_reads(result, "pkg/scheduler.py"), result.reads
    assert fails(result)


def test_a_helper_of_another_module_building_the_record_gives_the_config(tmp_path: Path) -> None:
    prepare = HEAD + "def prepare_server_args(argv):\n    sa = ServerArgs.from_cli(argv)\n    return sa\n"
    user = "from pkg.prepare import prepare_server_args\n" + RUN + \
        "def main(argv):\n    return run(prepare_server_args(argv))\n"
    result = scan_pkg(tmp_path, {"user.py": user, "prepare.py": prepare})
    assert ("run", "page_size") in file_reads(result), result.reads


def _with_home(tmp_path: Path, home: str) -> None:
    """The record's home module, outside the scanned roots: read for what it offers."""
    (tmp_path / "legacy").mkdir(exist_ok=True)
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(home)


HOME = "class ServerArgs:\n    pass\ndef get_server_args():\n    return None\n"


@pytest.mark.parametrize(("helper", "followed"), [
    ("def prepare_server_args(argv):\n    return ServerArgs.from_cli(argv)\n", True),
    ("def prepare_server_args(argv):\n    sa = ServerArgs(**parse(argv))\n    return sa\n", True),
    ("def prepare_server_args(argv):\n    return ServerArgs()\n", False),  # defaults only
    ("def prepare_server_args(argv):\n    return list(argv)\n", False),
])
def test_a_home_helper_building_the_record_gives_the_config(tmp_path: Path, helper: str, followed: bool) -> None:
    _with_home(tmp_path, HOME + helper)
    user = "from legacy.server_args import prepare_server_args\n" + RUN + \
        "def main(argv):\n    return run(prepare_server_args(argv))\n"
    result = scan_pkg(tmp_path, {"user.py": user})
    assert (("run", "page_size") in file_reads(result)) is followed, result.reads
    assert fails(result) is followed


# ---- conservative: where the built record goes out of sight, the check fails


@pytest.mark.parametrize("lines", [
    ("sa = ServerArgs.from_cli(argv)", "return getattr(argparse, argv[0])(sa)"),  # a callee built at run time
    ("sa = ServerArgs.from_cli(argv)", "return third_party_launch(sa)"),
    ("sa = ServerArgs.from_cli(argv)", "print(sa)"),  # printed: every value of the config
    ("return f'{ServerArgs.from_cli(argv)}'",),
])
def test_a_built_record_out_of_sight_escapes(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + "from other import third_party_launch\n" + _main(*lines)})
    assert ("main", "*") in file_reads(result), result.reads
    assert fails(result)


def test_a_leaf_read_on_a_built_record_is_left_to_review(tmp_path: Path) -> None:
    result = scan_pkg(tmp_path, {"user.py": HEAD + _main("return ServerArgs.from_cli(argv).page_size")})
    assert [(r.leaf, r.origin) for r in result.reads] == [("page_size", "built")], result.reads
