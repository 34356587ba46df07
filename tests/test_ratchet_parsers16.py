"""Round sixteen's filled parser (an outside attack on R14-8): a parser that
`ServerArgs.add_cli_args(parser)` filled parses a Namespace holding every leaf, but the
filled parser was seen only within one scope chain. It flows now as records do: a function
filling its parameter is a filler (`make_arg_parser(p)`, vLLM's cli_args, often in another
module than its caller), and gives that parser back where it returns it; a function
returning a parser it filled gives a filled parser; `self.parser` filled in one method of a
class is filled in all of them; a function returning `<param>.parse_args(...)` is a parse
helper, giving the Namespace where it is handed a filled parser; and the pair
`res = p.parse_known_args(argv)` gives it as `res[0]`. Each case fails before its rule;
the precision cases beside them (parsers add_cli_args never filled, a bench script's own
`BenchArgs` parser, a parser handed through what the scanner cannot see) stay clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, file_reads, scan_pkg

from configbags.migrate.scan import ScanResult

HOME = (
    "class ServerArgs:\n    @staticmethod\n    def add_cli_args(parser):\n        parser.add_argument('--page-size')\n"
    "def get_server_args():\n    return None\n"
)
HEAD = "import argparse\nfrom legacy.server_args import ServerArgs\nfrom bench import BenchArgs\n"
HELPERS = (
    "def make_arg_parser(parser):\n    ServerArgs.add_cli_args(parser)\n    return parser\n"
    "def new_parser():\n    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n    return p\n"
    "def parse(p, argv):\n    return p.parse_args(argv)\n"
)


def _scan(tmp_path: Path, files: dict[str, str]) -> ScanResult:
    (tmp_path / "legacy").mkdir(exist_ok=True)
    (tmp_path / "legacy" / "__init__.py").write_text("")
    (tmp_path / "legacy" / "server_args.py").write_text(HOME)
    return scan_pkg(tmp_path, files)


def _launch(body: str) -> dict[str, str]:
    return {"launch.py": HEAD + HELPERS + body}


# ---- in one module: the brief's cases, each with the leaf it reads

ONE_MODULE = [
    # vLLM's api_server: parser = make_arg_parser(FlexibleArgumentParser())
    ("def a(argv):\n    parser = make_arg_parser(argparse.ArgumentParser())\n"
     "    args = parser.parse_args(argv)\n    return args.page_size\n", "a", "page_size"),
    ("def b(argv):\n    return new_parser().parse_args(argv).tp_size\n", "b", "tp_size"),
    ("def c(argv):\n    p = argparse.ArgumentParser()\n    make_arg_parser(p)\n"
     "    return p.parse_args(argv).dp_size\n", "c", "dp_size"),
    ("def d(argv):\n    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n"
     "    return parse(p, argv).chunked_prefill_size\n", "d", "chunked_prefill_size"),
    ("class L:\n    def __init__(self):\n        self.parser = argparse.ArgumentParser()\n"
     "        ServerArgs.add_cli_args(self.parser)\n"
     "    def run(self, argv):\n        return self.parser.parse_args(argv).max_total_tokens\n",
     "L.run", "max_total_tokens"),
    ("def e(argv):\n    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n"
     "    res = p.parse_known_args(argv)\n    return res[0].context_length\n", "e", "context_length"),
    # the parameter filled and rebound to what the filler returns
    ("def f(parser, argv):\n    parser = make_arg_parser(parser)\n    return parser.parse_args(argv).page_size\n",
     "f", "page_size"),
    # a filler calling a filler, a giver returning what a filler gives
    ("def outer(p):\n    make_arg_parser(p)\ndef g(argv):\n    q = argparse.ArgumentParser()\n    outer(q)\n"
     "    return q.parse_args(argv).page_size\n", "g", "page_size"),
    ("def build():\n    return make_arg_parser(argparse.ArgumentParser())\n"
     "def h(argv):\n    return build().parse_args(argv).page_size\n", "h", "page_size"),
    # the attribute filled by a giver, read in another method
    ("class M:\n    def __init__(self):\n        self.parser = new_parser()\n"
     "    def run(self, argv):\n        ns = self.parser.parse_args(argv)\n        return ns.page_size\n",
     "M.run", "page_size"),
    # a parse helper handed a giver's parser, and the pair's [0] of a filler's parser
    ("def i(argv):\n    return parse(new_parser(), argv).page_size\n", "i", "page_size"),
    ("def j(argv):\n    res = make_arg_parser(argparse.ArgumentParser()).parse_known_args(argv)\n"
     "    return res[0].page_size\n", "j", "page_size"),
]


@pytest.mark.parametrize(("body", "function", "leaf"), ONE_MODULE)
def test_a_parser_filled_elsewhere_in_the_module_parses_the_config(
    tmp_path: Path, body: str, function: str, leaf: str
) -> None:
    result = _scan(tmp_path, _launch(body))
    reads = file_reads(result, "pkg/launch.py")
    assert (function, leaf) in reads, result.reads
    assert {r.origin for r in result.reads if r.leaf == leaf} == {"built"}, result.reads
    assert fails(result)


# ---- precision: what add_cli_args never filled parses none of the config

CLEAN = [
    # the filler fills p; q is another parser
    "def c(argv):\n    p = argparse.ArgumentParser()\n    q = argparse.ArgumentParser()\n    make_arg_parser(p)\n"
    "    return q.parse_args(argv).dp_size\n",
    # a function filling one parser and returning another gives no filled parser
    "def mixed():\n    p = argparse.ArgumentParser()\n    ServerArgs.add_cli_args(p)\n"
    "    q = argparse.ArgumentParser()\n    return q\n"
    "def b(argv):\n    return mixed().parse_args(argv).tp_size\n",
    # the parse helper handed the launcher's own parser
    "def d(argv):\n    q = argparse.ArgumentParser()\n    q.add_argument('--port')\n"
    "    return parse(q, argv).port\n",
    # another class's self.parser, never filled
    "class L:\n    def __init__(self):\n        self.parser = new_parser()\n"
    "class N:\n    def __init__(self):\n        self.parser = argparse.ArgumentParser()\n"
    "    def run(self, argv):\n        return self.parser.parse_args(argv).port\n",
    # the pair of a plain parser, and the rest of a filled parser's pair
    "def e(argv):\n    q = argparse.ArgumentParser()\n    res = q.parse_known_args(argv)\n"
    "    return res[0].context_length\n",
    "def e(argv):\n    p = new_parser()\n    res = p.parse_known_args(argv)\n    return res[1]\n",
    # a bench script's own parser, filled by BenchArgs only, beside the server's
    "def add_bench_args(parser):\n    BenchArgs.add_cli_args(parser)\n    return parser\n"
    "def bench(argv):\n    server = new_parser()\n    bp = add_bench_args(argparse.ArgumentParser())\n"
    "    args = bp.parse_args(argv)\n    return args.batch_size, server\n",
    # a parser handed through a callable the scanner cannot see: not decided, not filled
    "import third_party\n"
    "def k(argv):\n    p = third_party.wrap(argparse.ArgumentParser())\n    return p.parse_args(argv).page_size\n",
]


@pytest.mark.parametrize("body", CLEAN)
def test_a_parser_no_filler_filled_stays_clean(tmp_path: Path, body: str) -> None:
    result = _scan(tmp_path, _launch(body))
    assert not file_reads(result, "pkg/launch.py"), result.reads
    assert not fails(result)


# ---- across modules: vLLM's layout, cli_args.make_arg_parser used by api_server

CLI_ARGS = HEAD + "def make_arg_parser(parser):\n    ServerArgs.add_cli_args(parser)\n    return parser\n"
BENCH_CLI_ARGS = HEAD + "def make_arg_parser(parser):\n    BenchArgs.add_cli_args(parser)\n    return parser\n"
RUN_SERVER = "def run_server(args):\n    return args.page_size\n"

API_SERVERS = [
    # vLLM's api_server
    "from vllm.utils import FlexibleArgumentParser\nfrom pkg.cli_args import make_arg_parser\n"
    "def main(argv):\n    parser = make_arg_parser(FlexibleArgumentParser())\n"
    "    args = parser.parse_args(argv)\n    return args.page_size\n",
    # imported by module, the parameter filled in place
    "import argparse\nfrom pkg import cli_args\n"
    "def main(argv):\n    p = argparse.ArgumentParser()\n    cli_args.make_arg_parser(p)\n"
    "    return p.parse_args(argv).page_size\n",
    "import argparse\nimport pkg.cli_args\n"
    "def main(argv):\n    parser = argparse.ArgumentParser()\n    parser = pkg.cli_args.make_arg_parser(parser)\n"
    "    ns, _ = parser.parse_known_args(argv)\n    return ns.page_size\n",
    # handed on to a function of a third module
    "import argparse\nfrom pkg.cli_args import make_arg_parser\nfrom pkg.serve import run_server\n"
    "def main(argv):\n    args = make_arg_parser(argparse.ArgumentParser()).parse_args(argv)\n"
    "    return run_server(args)\n",
]


@pytest.mark.parametrize("api_server", API_SERVERS)
def test_vllm_make_arg_parser_of_another_module_fills_the_parser(tmp_path: Path, api_server: str) -> None:
    files = {"cli_args.py": CLI_ARGS, "api_server.py": api_server, "serve.py": RUN_SERVER}
    result = _scan(tmp_path, files)
    handed = "run_server" in api_server
    where, function = ("pkg/serve.py", "run_server") if handed else ("pkg/api_server.py", "main")
    assert (function, "page_size") in file_reads(result, where), result.reads
    assert fails(result)
    # the same layout, its make_arg_parser filling BenchArgs only: nothing of the config
    result = _scan(tmp_path, {**files, "cli_args.py": BENCH_CLI_ARGS})
    assert not result.reads, result.reads
    assert not fails(result)


NESTED = {
    # the engine's own arguments filled by a filler of a third module, called by the filler
    "engine_args.py": HEAD + "def add_engine_args(parser):\n    ServerArgs.add_cli_args(parser)\n",
    "cli_args.py": "from pkg.engine_args import add_engine_args\n"
    "def make_arg_parser(parser):\n    add_engine_args(parser)\n    return parser\n"
    "def new_parser():\n    import argparse\n    return make_arg_parser(argparse.ArgumentParser())\n"
    "def parse(parser, argv):\n    return parser.parse_known_args(argv)[0]\n",
    "api_server.py": "from pkg import cli_args\n"
    "def main(argv):\n    return cli_args.parse(cli_args.new_parser(), argv).page_size\n",
}


def test_nested_fillers_givers_and_parse_helpers_across_modules(tmp_path: Path) -> None:
    result = _scan(tmp_path, NESTED)
    assert ("main", "page_size") in file_reads(result, "pkg/api_server.py"), result.reads
    assert fails(result)


def test_nested_fillers_of_bench_args_only_stay_clean(tmp_path: Path) -> None:
    engine = NESTED["engine_args.py"].replace("ServerArgs.add_cli_args", "BenchArgs.add_cli_args")
    result = _scan(tmp_path, {**NESTED, "engine_args.py": engine})
    assert not result.reads, result.reads
    assert not fails(result)
