"""Hostile source files for the read ratchet, and the oracle that says which raw reads
executing one performs.

`source_files()` draws a module that reads the record (or a declared environment
variable) in one of several spellings, written with any line endings Python accepts
(LF, CRLF, a lone CR, mixed), form feeds and other characters some line models break at
and Python does not (`\\v`, `\\x1c`, NEL, U+2028), NFKC-folded identifiers, and in any
of several encodings declared by a BOM or a coding declaration, `unicode_escape`
included (whose escapes can hide a line break inside what the raw bytes show as one
comment line).

`executed_reads(data)` compiles and runs the bytes as an import would, with the raw
accessor, the record class, `os` and the environment replaced by recorders, and returns
every (leaf, line) read: record leaves by name, environment variables as `$NAME`, and a
use of the whole environment (iterating it, its pairs, a copy made by iteration) as `$*`
(WHOLE_ENVIRON). None when Python itself refuses the file."""

from __future__ import annotations

import builtins
import contextlib
import operator
import re
import sys
import types
from typing import Any

from hypothesis import strategies as st

LEAVES = ("tp_size", "page_size")
ENV_VARS = ("SGLANG_PAGE_SIZE", "SGLANG_TP_SIZE")
FILENAME = "<ratchet-fuzz>"
# The leaf of an executed read of the whole environment: every variable is read, by names
# the code does not spell
WHOLE_ENVIRON = "$*"

# Characters that end a line for str.splitlines or in some editors, but not for Python.
NOT_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
# A fullwidth letter: Python reads identifiers NFKC-normalised, so this is `get_server_args`.
FULLWIDTH_ACCESSOR = "\uff47et_server_args"


def _caller_line() -> int:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != FILENAME:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_lineno if frame is not None else 0


class _Recorder:
    """Stands for the record: every attribute read is recorded with its line."""

    def __init__(self, log: set[tuple[str, int]]) -> None:
        object.__setattr__(self, "_log", log)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name == "_log":
            return object.__getattribute__(self, name)
        object.__getattribute__(self, "_log").add((name, _caller_line()))
        return 1


class _Environ(dict[str, str]):
    def __init__(self, log: set[tuple[str, int]]) -> None:
        super().__init__(dict.fromkeys(ENV_VARS, "1"))
        self.log = log

    def __getitem__(self, key: str) -> str:
        self.log.add(("$" + key, _caller_line()))
        return "1"

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.log.add(("$" + key, _caller_line()))
        return "1"

    def __contains__(self, key: object) -> bool:
        self.log.add(("$" + str(key), _caller_line()))
        return True

    # Whole reads. Overriding __iter__ also makes `dict(env)` and `{**env}` copy through
    # keys() and __getitem__, as they do for os.environ (not a dict), instead of copying
    # the storage unseen.
    def __iter__(self) -> Any:
        self.log.add((WHOLE_ENVIRON, _caller_line()))
        return iter(list(dict.keys(self)))

    def keys(self) -> Any:
        self.log.add((WHOLE_ENVIRON, _caller_line()))
        return list(dict.keys(self))

    def items(self) -> Any:
        self.log.add((WHOLE_ENVIRON, _caller_line()))
        return list(dict.items(self))

    def values(self) -> Any:
        self.log.add((WHOLE_ENVIRON, _caller_line()))
        return list(dict.values(self))

    def copy(self) -> _Environ:
        return _Environ(self.log)  # a copy that records its reads too


class _EnvironB:
    """`os.environb`: the environment by bytes keys."""

    def __init__(self, log: set[tuple[str, int]]) -> None:
        self.log = log

    def __getitem__(self, key: bytes) -> bytes:
        self.log.add(("$" + key.decode(), _caller_line()))
        return b"1"

    def get(self, key: bytes, default: Any = None) -> Any:
        return self[key]


def _expandvars(log: set[tuple[str, int]]) -> Any:
    def expandvars(template: str) -> str:
        for match in re.finditer(r"\$(\w+)|\$\{([^}]*)\}", template):
            log.add(("$" + (match.group(1) or match.group(2)), _caller_line()))
        return template
    return expandvars


def executed_reads(data: bytes) -> set[tuple[str, int]] | None:
    """Every (leaf or `$NAME`, line) that running `data` as a module reads; None when Python
    would not compile it."""
    try:
        code = compile(data, FILENAME, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeError, LookupError):
        return None
    log: set[tuple[str, int]] = set()
    environ = _Environ(log)
    environb = _EnvironB(log)
    fake_os = types.SimpleNamespace(environ=environ, getenv=environ.get, environb=environb, getenvb=environb.get,
                                    path=types.SimpleNamespace(expandvars=_expandvars(log)))
    fake_sys = types.SimpleNamespace(modules={"os": fake_os})
    record = _Recorder(log)

    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "os":
            return fake_os
        if name == "sys":
            return fake_sys
        if name == "operator":
            return operator
        if name.endswith("accessors"):
            return types.SimpleNamespace(get_server_args=lambda: record)
        return real_import(name, *args, **kwargs)

    namespace: dict[str, Any] = {
        "__builtins__": {**vars(builtins), "__import__": fake_import},
        "__name__": "ratchet_fuzz",
        "get_server_args": lambda: record,
        "ServerArgs": _Recorder,
    }
    # what ran before an error was read all the same
    with contextlib.suppress(Exception):
        exec(code, namespace)  # our own generated code, with recorders for every door
    return log


def _read_snippets(leaf: str, env: str) -> list[list[str]]:
    """Module code that reads `leaf` of the record or environment variable `env`."""
    suffix = env.removeprefix("SGLANG_")
    return [
        [f"_x = get_server_args().{leaf}"],
        [f'_x = getattr(get_server_args(), "{leaf}")'],
        ["_sa = get_server_args()", f"_x = _sa.{leaf}"],
        ["import operator", f'_x = operator.attrgetter("{leaf}")(get_server_args())'],
        # fetchers under other names, and a getter stored at module level
        ["from operator import attrgetter as _ag", f'_x = _ag("{leaf}")(get_server_args())'],
        ["import operator", f'_GET = operator.attrgetter("{leaf}")', "def _use():",
         "    return _GET(get_server_args())", "_use()"],
        ["_ga = getattr", f'_x = _ga(get_server_args(), "{leaf}")'],
        ["import builtins", f'_x = builtins.getattr(get_server_args(), "{leaf}")'],
        ["from builtins import getattr as _g", f'_x = _g(get_server_args(), "{leaf}")'],
        # a getattr that yields the record, then an attribute of it
        ["class _Holder:", "    def __init__(self):", "        self.server_args = get_server_args()",
         "    def read(self):", f'        return getattr(self, "server_args").{leaf}', "_Holder().read()"],
        ["match get_server_args():", f"    case ServerArgs({leaf}=_t):", "        pass"],
        ["match get_server_args():", f"    case object({leaf}=_t):", "        pass"],
        [f"_x = {FULLWIDTH_ACCESSOR}().{leaf}"],
        ["import os", f'_x = os.environ["{env}"]'],
        ["import os", f'_NAME = "{env}"', "_x = os.getenv(_NAME)"],
        ["import os", f'_x = os.environ.get("SGLANG_" + "{suffix}")'],
        ["import os", f'_x = "{env}" in os.environ'],
        # copies of the environment, read by key, and uses of it whole
        ["import os", f'_x = dict(os.environ.items())["{env}"]'],
        ["import os", f'_x = os.environ.copy()["{env}"]'],
        ["import os", f'_x = {{**os.environ}}["{env}"]'],
        ["import os", "import collections", f'_x = collections.ChainMap(os.environ)["{env}"]'],
        ["import os", "for _k, _v in os.environ.items():", "    pass"],
        ["import os", "_x = sorted(os.environ)"],
        # reflection: names in strings, namespace dicts, code run from strings, fetchers as values
        [f'_x = get_server_args().__getattribute__("{leaf}")'],
        ["import operator", f'_x = operator.methodcaller("__getattribute__", "{leaf}")(get_server_args())'],
        [f'_x = "{{0.{leaf}}}".format(get_server_args())'],
        ["import string", f'_x = string.Formatter().format("{{a.{leaf}}}", a=get_server_args())'],
        ["import functools", f'_x = functools.reduce(getattr, ["{leaf}"], get_server_args())'],
        [f'_x = list(map(getattr, [get_server_args()], ["{leaf}"]))'],
        ["import functools", "import operator",
         f'_x = functools.partial(operator.attrgetter("{leaf}"))(get_server_args())'],
        ["import builtins", f'_x = builtins.__dict__["getattr"](get_server_args(), "{leaf}")'],
        [f'_x = eval("get_server_args().{leaf}")'],
        [f'exec("_y = get_server_args().{leaf}")'],
        [f'_x = eval(compile("get_server_args().{leaf}", "<s>", "eval"))'],
        [f'_x = globals()["get_server_args"]().{leaf}'],
        [f"_x = get_server_args.__call__().{leaf}"],
        # the record carried by a lambda, a parameter default, a container literal
        ["_f = lambda: get_server_args()", f"_x = _f().{leaf}"],
        [f"_x = (lambda: get_server_args())().{leaf}"],
        [f"_x = [get_server_args()][0].{leaf}"],
        [f'_x = {{"r": get_server_args()}}["r"].{leaf}'],
        ["def _r(a=get_server_args):", f"    return a().{leaf}", "_r()"],
        # what the types say is the record: an aliased or container annotation, a cast,
        # an isinstance test, a subclass's own reads
        ["_Rec = ServerArgs", '_Recs = list["_Rec"]', "def _f(a: _Rec, xs: _Recs):",
         f"    return a.{leaf}, xs[0].{leaf}", "_f(get_server_args(), [get_server_args()])"],
        ["import typing", "def _f(x):", f'    return typing.cast("ServerArgs", x).{leaf}', "_f(get_server_args())"],
        ["def _f(x):", "    if not isinstance(x, ServerArgs):", "        return None", f"    return x.{leaf}",
         "_f(get_server_args())"],
        ["def _f(xs: dict[str, ServerArgs]):", "    for _k, _v in xs.items():", f"        _v.{leaf}",
         '_f({"a": get_server_args()})'],
        # the environment in bytes, expanded, and reached through a namespace dict
        ["import os", f'_x = os.environb[b"{env}"]'],
        ["import os", f'_x = os.getenvb(b"{env}")'],
        ["import os", f'_x = vars(os)["environ"]["{env}"]'],
        ["import os", f'_x = os.__dict__["environ"]["{env}"]'],
        ["import sys", f'_x = sys.modules["os"].environ["{env}"]'],
        ["import os", f'_x = os.path.expandvars("${{{env}}}/x")'],
    ]


@st.composite
def source_files(draw: st.DrawFn) -> bytes:
    leaf = draw(st.sampled_from(LEAVES))
    env = draw(st.sampled_from(ENV_VARS))
    body = list(draw(st.sampled_from(_read_snippets(leaf, env))))
    if draw(st.booleans()):
        body = ["def _reader():", *("    " + line for line in body), "_reader()"]
    filler = st.text(alphabet=st.sampled_from(("a", " ", "#", *NOT_LINE_BREAKS)), max_size=6)
    lines: list[str] = []
    for line in body:
        for _ in range(draw(st.integers(0, 2))):
            lines.append("# " + draw(filler))
        # a form feed may start any line: Python resets the indentation count there
        lines.append(("\x0c" if draw(st.booleans()) and not line.startswith(" ") else "") + line)
    endings = st.sampled_from(("\n", "\r\n", "\r"))
    mixed = draw(st.booleans())
    ending = draw(endings)
    text = "".join(line + (draw(endings) if mixed else ending) for line in lines)
    return _encode(draw, text)


def _encode(draw: st.DrawFn, text: str) -> bytes:
    encoding = draw(st.sampled_from(("utf-8", "utf-8-sig", "latin-1", "cp1252", "unicode_escape", "utf-16")))
    declaration = f"# -*- coding: {encoding} -*-"
    if encoding == "utf-8-sig":
        return "\ufeff".encode() + (draw(st.sampled_from(("", "# coding: utf-8\n"))) + text).encode()
    if encoding == "utf-8":
        return ((declaration + "\n" if draw(st.booleans()) else "") + text).encode()
    if encoding == "unicode_escape":
        escaped = text.encode("unicode_escape")
        # keep some line breaks raw, so that raw and escaped ones mix
        escaped = escaped.replace(b"\\n", b"\n", draw(st.integers(0, 3)))
        return declaration.encode() + draw(st.sampled_from((b"\n", b"\\n"))) + escaped
    try:
        return (declaration + "\n" + text).encode(encoding)
    except UnicodeEncodeError:
        return (declaration + "\n" + text).encode(encoding, errors="replace")
