"""Round fourteen's launcher Namespace (R14-8, an outside attack): a parser that
`ServerArgs.add_cli_args(parser)` filled parses the command line into a Namespace holding
every leaf, the config the launcher is about to publish, so that Namespace is a record of
origin `built`: a leaf read on it (`args.page_size`, `p.parse_args(argv).model_path`) is
reported, handed to an unannotated function it is followed there, and read whole
(`vars(args)`, `args.__dict__`) it reads `*`. A parser add_cli_args never filled (the
launcher's own flags) parses nothing of the config and stays clean. Each case fails before
its rule; the precision cases beside them stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, file_reads, scan_pkg

HEAD = "import argparse\nfrom legacy.server_args import ServerArgs\n"
RUN = "def run(args):\n    return args.page_size\n"
FILL = "    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n"


def _main(*lines: str, fill: str = FILL) -> str:
    return HEAD + RUN + "def main(argv):\n" + fill + "".join(f"    {line}\n" for line in lines)


# ---- a leaf read on the parsed Namespace, in the launcher

READ_HERE = [
    ("args = p.parse_args(argv)", "launch(args.page_size)"),  # the probe
    ("launch(p.parse_args(argv).page_size)",),
    ("args = p.parse_known_args(argv)[0]", "launch(args.page_size)"),
    ("ns, _ = p.parse_known_args()", "launch(ns.page_size)"),
    ("ns, rest = p.parse_known_args(argv)", "launch(ns.page_size)"),
    ("[ns, _] = p.parse_known_args(argv)", "launch(ns.page_size)"),
    ("args = p.parse_intermixed_args(argv)", "launch(args.page_size)"),
    ("args = p.parse_args(argv)", "a = args", "launch(a.page_size)"),
]


@pytest.mark.parametrize("lines", READ_HERE)
def test_a_leaf_read_on_the_parsed_namespace_is_a_read(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": _main(*lines)})
    assert ("main", "page_size") in file_reads(result), result.reads
    assert {r.origin for r in result.reads if r.leaf == "page_size"} == {"built"}, result.reads
    assert fails(result)


def test_the_parser_filled_in_a_parameter_is_read_the_same(tmp_path: Path) -> None:
    user = HEAD + "def main(parser, argv):\n    ServerArgs.add_cli_args(parser)\n" \
        "    args = parser.parse_args(argv)\n    return args.page_size\n"
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("main", "page_size") in file_reads(result), result.reads
    assert fails(result)


@pytest.mark.parametrize(("lines", "leaf"), [
    (("args = p.parse_args(argv)", "print(vars(args))"), "*"),
    (("launch(p.parse_args(argv).__dict__)",), "__dict__"),  # as on any record
])
def test_the_namespace_read_whole_reads_every_leaf(tmp_path: Path, lines: tuple[str, ...], leaf: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": _main(*lines)})
    assert [(r.function, r.leaf, r.form) for r in result.reads] == [("main", leaf, "whole")], result.reads
    assert fails(result)


# ---- handed on: followed into the callee as a built record is

HANDED = [
    ("args = p.parse_args(argv)", "return run(args)"),
    ("return run(p.parse_args(argv))",),
    ("ns, _ = p.parse_known_args(argv)", "return run(ns)"),
]


@pytest.mark.parametrize("lines", HANDED)
def test_the_namespace_handed_on_is_followed_into_the_callee(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": _main(*lines)})
    assert ("run", "page_size") in file_reads(result), result.reads
    assert fails(result)


def test_the_namespace_handed_out_of_sight_escapes(tmp_path: Path) -> None:
    result = scan_pkg(tmp_path, {"user.py": "from other import launch\n" + _main("launch(p.parse_args(argv))")})
    assert ("main", "*") in file_reads(result), result.reads
    assert fails(result)


# ---- precision: a parser add_cli_args never filled parses none of the config

CLEAN = [
    # the launcher's own flags, on a parser of their own
    ("q = argparse.ArgumentParser()", "q.add_argument('--port')", "args = q.parse_args(argv)",
     "launch(args.port)", "return run(args)"),
    ("q = argparse.ArgumentParser()", "ns, _ = q.parse_known_args(argv)", "launch(ns.page_size, vars(ns))"),
    # the record built from the Namespace is followed instead (R13-6), not the Namespace
    ("sa = ServerArgs.from_cli_args(p.parse_args(argv))", "return len(argv)"),
    # the tuple parse_known_args returns is no Namespace; its rest holds no leaf
    ("ns, rest = p.parse_known_args(argv)", "return run(rest)"),
    ("print(p.parse_known_args(argv)[1])",),
    # the parser itself, not a Namespace
    ("p.print_help()", "return run(p)"),
]


@pytest.mark.parametrize("lines", CLEAN)
def test_a_namespace_of_no_filled_parser_stays_clean(tmp_path: Path, lines: tuple[str, ...]) -> None:
    result = scan_pkg(tmp_path, {"user.py": _main(*lines)})
    assert not file_reads(result), result.reads
    assert not fails(result)


def test_a_parser_filled_in_another_function_fills_no_parser_here(tmp_path: Path) -> None:
    user = HEAD + RUN + (
        "def fill():\n    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n    return 0\n"
        "def main(argv):\n    p = argparse.ArgumentParser()\n    p.add_argument('--port')\n"
        "    args = p.parse_args(argv)\n    return run(args.port)\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert not file_reads(result), result.reads
    assert not fails(result)


# ---- a helper returning the parsed Namespace gives the config, as one building the record does

PARSE_HELPER = (
    "def parse(argv):\n    parser = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(parser)\n"
    "    return parser.parse_args(argv)\n"
)
OWN_HELPER = "def parse(argv):\n    parser = argparse.ArgumentParser()\n    return parser.parse_args(argv)\n"


@pytest.mark.parametrize(("helper", "followed"), [(PARSE_HELPER, True), (OWN_HELPER, False)])
def test_a_helper_of_another_module_returning_the_namespace_gives_the_config(
    tmp_path: Path, helper: str, followed: bool
) -> None:
    user = "from pkg.cli import parse\n" + RUN + "def main(argv):\n    return run(parse(argv))\n"
    result = scan_pkg(tmp_path, {"user.py": user, "cli.py": HEAD + helper})
    assert (("run", "page_size") in file_reads(result)) is followed, result.reads
    assert fails(result) is followed


@pytest.mark.parametrize(("helper", "followed"), [(PARSE_HELPER, True), (OWN_HELPER, False)])
def test_a_home_helper_returning_the_namespace_gives_the_config(tmp_path: Path, helper: str, followed: bool) -> None:
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(
        "import argparse\nclass ServerArgs:\n    pass\ndef get_server_args():\n    return None\n" + helper
    )
    user = "from legacy.server_args import parse\n" + RUN + "def main(argv):\n    return run(parse(argv))\n"
    result = scan_pkg(tmp_path, {"user.py": user})
    assert (("run", "page_size") in file_reads(result)) is followed, result.reads
    assert fails(result) is followed
