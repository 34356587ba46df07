"""A precision rule beside round fourteen's R14-9 (a function name rebound after its
`def` is not the def): a rebinding of the name to a well-known wrapper of the same
function that keeps its behaviour (`run = torch.compile(run, dynamic=True)`, `run =
functools.lru_cache(run)`, `run = torch.no_grad()(run)`), the wrapper resolved through
the module's imports, is followed into the def's body as if it had not been rebound: its
reads are reported as their leaves, not `*`, and a def that reads nothing stays clean. A
local callable that only shares the wrapper's name, an unknown wrapper, a wrapper of
another function and every other rebinding keep escaping."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, fails, file_reads, scan_env_pkg, scan_pkg

PAGE = "$SGLANG_PAGE_SIZE"

# as tests/test_ratchet_misc14.py's R14-9 cases (REBINDINGS there keep escaping too)
FAST = "def _fast(sa):\n    return sa.page_size\n\n\ndef run(sa):\n    return None\n\n\n"
MAIN = "\n\ndef main():\n    return run(get_server_args())\n"
READS = "def run(sa):\n    return sa.page_size\n\n\n"
CLEAN = "def run(sa):\n    return None\n\n\n"

# (the module's imports, the rebinding): each wrapper returns a function that runs `run`
# with the arguments as given
KEEPING = [
    ("import torch\n", "run = torch.compile(run, dynamic=True)"),
    ("import torch as T\n", "run = T.compile(run)"),
    ("import torch\n", "run = torch.compile(dynamic=True)(run)"),
    ("from torch import compile\n", "run = compile(run)"),
    ("import functools\n", "run = functools.lru_cache(run)"),
    ("from functools import lru_cache\n", "run = lru_cache(maxsize=8)(run)"),
    ("import functools as ft\n", "run = ft.lru_cache()(run)"),
    ("import functools\n", "run = functools.cache(run)"),
    ("import torch\n", "run = torch.no_grad()(run)"),
    ("from torch import no_grad\n", "run = no_grad()(run)"),
    ("import torch\n", "run = torch.inference_mode()(run)"),
    ("from torch import inference_mode as im\n", "run = im()(run)"),
    ("import torch\n", "run = torch.enable_grad()(run)"),
    ("import torch\n", "run = torch.no_grad()(run)\nrun = torch.compile(run)"),
    ("import torch\n", "if len(__name__) > 3:\n    run = torch.compile(run)"),
    ("import torch.nn\n", "run = torch.compile(run)"),
]


@pytest.mark.parametrize(("imports", "rebinding"), KEEPING)
def test_a_def_rewrapped_by_a_behaviour_keeping_wrapper_is_followed(
    tmp_path: Path, imports: str, rebinding: str,
) -> None:
    result = scan_pkg(tmp_path, {"user.py": imports + RAW + READS + rebinding + MAIN})
    assert file_reads(result) == {("run", "page_size")}, result.reads
    assert fails(result)


@pytest.mark.parametrize(("imports", "rebinding"), KEEPING)
def test_a_def_rewrapped_by_a_behaviour_keeping_wrapper_reading_nothing_stays_clean(
    tmp_path: Path, imports: str, rebinding: str,
) -> None:
    result = scan_pkg(tmp_path, {"user.py": imports + RAW + CLEAN + rebinding + MAIN})
    assert not file_reads(result), result.reads
    assert not fails(result)


def test_a_method_rewrapped_in_its_class_is_followed(tmp_path: Path) -> None:
    text = "import torch\n" + RAW + (
        "class Worker:\n    def run(self, sa):\n        return sa.page_size\n\n"
        "    run = torch.no_grad()(run)\n\n"
        "    def main(self):\n        return self.run(get_server_args())\n"
    )
    result = scan_pkg(tmp_path, {"user.py": text})
    assert file_reads(result) == {("Worker.run", "page_size")}, result.reads


# a def returning None, `_fast` reading page_size: whichever runs, the call is read or
# given up, never passed as clean
NOT_KEEPING = [
    # a callable of the module that only shares the wrapper's name
    ("", "def compile(fn):\n    return _fast\n\n\nrun = compile(run)"),
    ("import torch\n", "def compile(fn):\n    return _fast\n\n\nrun = compile(run)"),
    ("from torch import compile\n", "def compile(fn):\n    return _fast\n\n\nrun = compile(run)"),
    ("from torch import compile\n", "compile = lambda fn: _fast\nrun = compile(run)"),
    ("from functools import lru_cache\n", "lru_cache = lambda fn: _fast\nrun = lru_cache(run)"),
    ("import torch\n", "torch = None\nrun = torch.compile(run)"),
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", "run = torch.compile(run)"),
    ("from pkg.fast import torch\n", "run = torch.compile(run)"),
    # an unknown wrapper, one that binds arguments or is not a behaviour-keeping one
    ("from pkg.fast import wrap\n", "run = wrap(run)"),
    ("", "run = wrap(run)"),
    ("import functools\n", "run = functools.partial(run, None)"),
    ("import torch\n", "run = torch.jit.script(run)"),
    ("import functools\n", "run = functools.singledispatch(run)"),
    # the wrapper applied to another function, or not applied
    ("import torch\n", "run = torch.compile(_fast)"),
    ("import functools\n", "run = functools.lru_cache(maxsize=8)(_fast)"),
    ("import torch\n", "run = torch.no_grad()(_fast)"),
    ("import torch\n", "run = torch.compile"),
    ("import torch\n", "run = torch.compile(run)(_fast)"),
    ("import torch\n", "run = torch.compile(run)(run)"),  # calls the compiled run
    # a rewrap beside another rebinding
    ("import torch\n", "run = torch.compile(run)\nrun = _fast"),
    ("import torch\n", "run = _fast\nrun = torch.compile(run)"),
    ("import torch\n", "def _install():\n    global run\n    run = torch.compile(_fast)\n\n\nrun = torch.compile(run)"),
]


@pytest.mark.parametrize(("imports", "rebinding"), NOT_KEEPING)
def test_any_other_rebinding_keeps_escaping(tmp_path: Path, imports: str, rebinding: str) -> None:
    files = {"user.py": imports + RAW + FAST + rebinding + MAIN, "fast.py": "torch = None\nwrap = None\n"
             "def run(sa):\n    return sa.page_size\n"}
    result = scan_pkg(tmp_path, files)
    assert {r.leaf for r in result.reads} & {"page_size", "*"}, result.reads
    assert fails(result)


def test_a_class_binding_the_wrappers_module_name_keeps_escaping(tmp_path: Path) -> None:
    # in a class body `torch` is the class's own name first
    text = "import torch\n" + RAW + (
        "class Worker:\n    torch = make_fake_torch()\n\n"
        "    def run(self, sa):\n        return sa.page_size\n\n    run = torch.compile(run)\n\n"
        "    def main(self):\n        return self.run(get_server_args())\n"
    )
    result = scan_pkg(tmp_path, {"user.py": text})
    assert ("Worker.main", "*") in file_reads(result), result.reads
    assert fails(result)


ENV_HELPER = "import functools, os\n\n\ndef flag(name):\n    return os.environ.get(name)\n\n\n"


@pytest.mark.parametrize(("rebinding", "name", "expected"), [
    ("flag = functools.cache(flag)", "SGLANG_PAGE_SIZE", {("f", PAGE)}),
    ("flag = functools.lru_cache(maxsize=None)(flag)", "SGLANG_PAGE_SIZE", {("f", PAGE)}),
    # a name no declared variable has: the helper's own read only, as for a plain def
    ("flag = functools.cache(flag)", "OTHER", set()),
])
def test_an_env_helper_rewrapped_is_read_where_called_and_not_handed_on(
    tmp_path: Path, rebinding: str, name: str, expected: set[tuple[str, str]],
) -> None:
    text = ENV_HELPER + rebinding + f"\n\n\ndef f():\n    return flag({name!r})\n"
    result = scan_env_pkg(tmp_path, {"user.py": text})
    assert file_reads(result) == {("flag", "$?"), *expected}, result.reads


@pytest.mark.parametrize("decorator", ["@torch.compile", "@torch.compile(dynamic=True)", "@torch.no_grad()"])
def test_the_decorator_form_of_a_behaviour_keeping_wrapper_is_followed_as_the_rebinding_is(
    tmp_path: Path, decorator: str,
) -> None:
    """`@torch.compile` over the def is `run = torch.compile(run)` after it: the call is
    followed into the body, not escaped as `*`."""
    result = scan_pkg(tmp_path, {"user.py": "import torch\n" + RAW + decorator + "\n" + READS + MAIN})
    assert file_reads(result) == {("run", "page_size")}, result.reads
    clean = scan_pkg(tmp_path / "clean", {"user.py": "import torch\n" + RAW + decorator + "\n" + CLEAN + MAIN})
    assert file_reads(clean) == set(), clean.reads
