"""Round eighteen's false passes of the read ratchet on the environment side (an outside
attack): a declared variable read inside a function's signature annotations (R18-2: a
parameter's, a return's, `*args`' or `**kw`'s, a nested or async def's, a method's,
`Literal[os.environ.get(...)]`), which Python evaluates when the `def` runs (and
`typing.get_type_hints` evaluates under `from __future__ import annotations`, as the record
side already holds); and C's whole environment through ctypes (R18-3:
`ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")`), `$?`. Each case
fails before its rule; the precision cases beside them (annotations naming types, other C
symbols) stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet, file_reads, scan_env_pkg

from configbags.migrate.scanmodel import ENV_UNRESOLVED

PAGE = "$SGLANG_PAGE_SIZE"


# ---- R18-2: environment reads in a signature's annotations

@pytest.mark.parametrize(("user", "function"), [
    # a parameter's annotation, beside its default
    ("import os\ndef g(x: os.environ.get('SGLANG_PAGE_SIZE') = 0):\n    pass\n", "g"),
    # a return annotation
    ("import os\ndef g() -> os.environ.get('SGLANG_PAGE_SIZE'):\n    pass\n", "g"),
    # inside a subscript
    ("import os\nfrom typing import Literal\n"
     "def g(x: Literal[os.environ.get('SGLANG_PAGE_SIZE')] = None):\n    pass\n", "g"),
    # a nested def's, evaluated each time the outer function runs
    ("import os\ndef f():\n    def inner(x: os.environ.get('SGLANG_PAGE_SIZE')):\n        pass\n"
     "    return inner.__annotations__['x']\n", "f.inner"),
    ("import os\nasync def g(x: os.environ.get('SGLANG_PAGE_SIZE') = 0):\n    pass\n", "g"),
    ("import os\ndef g(*a: os.environ.get('SGLANG_PAGE_SIZE'), **k: int):\n    pass\n", "g"),
    ("import os\ndef g(*a: int, **k: os.environ['SGLANG_PAGE_SIZE']):\n    pass\n", "g"),
    ("import os\ndef g(a, /, b: int, *, c: os.getenv('SGLANG_PAGE_SIZE')):\n    pass\n", "g"),
    ("import os\ndef g(a: os.getenv('SGLANG_PAGE_SIZE'), /):\n    pass\n", "g"),
    # a method's return annotation, evaluated in the class body
    ("import os\nclass K:\n    def m(self) -> os.getenv('SGLANG_PAGE_SIZE'):\n        pass\n", "K.m"),
    # under `from __future__ import annotations` they are strings, but
    # `typing.get_type_hints` evaluates them: the record side already reports those
    ("from __future__ import annotations\nimport os\n"
     "def g(x: os.environ.get('SGLANG_PAGE_SIZE') = 0):\n    pass\n", "g"),
    # a string annotation that calls is the code it spells (configbags.migrate.resolvers)
    ("import os\ndef g(x: \"os.environ.get('SGLANG_PAGE_SIZE')\" = 0):\n    pass\n", "g"),
])
def test_an_environment_read_in_a_signature_annotation_is_a_read(tmp_path: Path, user: str, function: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) == {PAGE}
    assert (function, PAGE) in file_reads(scan_env_pkg(tmp_path, {"user.py": user}))


@pytest.mark.parametrize(("files", "function"), [
    # the bytes environment (configbags.migrate.reflection)
    ({"user.py": "import os\ndef g(x: os.environb[b'SGLANG_PAGE_SIZE'] = 0):\n    pass\n"}, "<module>"),
    # an environment helper of another module, called in the annotation
    ({"envs.py": "import os\ndef page(name):\n    return os.environ.get(name)\n",
      "user.py": "from pkg.envs import page\ndef g(x: page('SGLANG_PAGE_SIZE') = 0):\n    pass\n"}, "g"),
    # a walrus in an annotation binds in the enclosing scope
    ({"user.py": "import os\ndef g(x: (e := os.environ) = 0):\n    pass\ndef h():\n    return e['SGLANG_PAGE_SIZE']\n"},
     "h"),
])
def test_other_spellings_in_a_signature_annotation_are_reads(
    tmp_path: Path, files: dict[str, str], function: str,
) -> None:
    assert (function, PAGE) in file_reads(scan_env_pkg(tmp_path, files))


def test_a_key_the_annotation_does_not_show_is_unresolved(tmp_path: Path) -> None:
    user = "import os\ndef g(name):\n    def inner(x: os.environ[name]):\n        pass\n"
    assert env_leaves(tmp_path, {"user.py": user}) == {ENV_UNRESOLVED}


@pytest.mark.parametrize("user", [
    # annotations naming types, the environment's own among them, read nothing
    "import os\nfrom typing import Mapping\ndef g(env: os._Environ, m: Mapping[str, str] = {}) -> None:\n"
    "    pass\n",
    "import os\ndef g(p: os.PathLike[str], *a: str, **k: int) -> 'os.PathLike[str]':\n    return p\n",
    "from __future__ import annotations\nimport os\ndef g(env: os._Environ[str]) -> dict[str, str]:\n"
    "    return {}\n",
    # another variable, undeclared
    "import os\ndef g(x: os.environ.get('HOME') = 0) -> os.getenv('USER'):\n    pass\n",
])
def test_annotations_that_read_no_declared_variable_stay_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})


# ---- R18-3: C's environ array through ctypes

@pytest.mark.parametrize("user", [
    "import ctypes\ndef f():\n"
    "    return ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), 'environ')\n",
    "import ctypes\nlibc = ctypes.CDLL(None)\ndef f():\n"
    "    return ctypes.POINTER(ctypes.c_char_p).in_dll(libc, '__environ')\n",
    "from ctypes import CDLL, POINTER, c_char_p\nSYMBOL = '_environ'\ndef f():\n"
    "    return POINTER(c_char_p).in_dll(CDLL(None), SYMBOL)\n",
    "import ctypes\ndef f():\n    return ctypes.c_void_p.in_dll(ctypes.cdll.LoadLibrary('libc.so.6'), 'environ')\n",
    # the symbol by a name the module does not spell
    "import ctypes\ndef f(name):\n    return ctypes.c_void_p.in_dll(ctypes.CDLL(None), name)\n",
    # the symbol as an attribute of the library (ctypes, cffi): caught before, kept caught
    "import ctypes\ndef f():\n"
    "    return ctypes.cast(ctypes.CDLL(None).environ, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)))[0]\n",
    "import cffi\nffi = cffi.FFI()\nffi.cdef('extern char **environ;')\ndef f():\n"
    "    return ffi.dlopen(None).environ\n",
])
def test_c_environ_through_ctypes_is_the_environment_whole(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) == {ENV_UNRESOLVED}


@pytest.mark.parametrize("user", [
    # another C variable, and a non-ctypes `in_dll`
    "import ctypes\ndef f():\n    return ctypes.c_int.in_dll(ctypes.CDLL(None), 'opterr').value\n",
    "import ctypes\ndef f():\n    return ctypes.c_char_p.in_dll(ctypes.CDLL(None), 'program_invocation_name')\n",
    "class T:\n    @staticmethod\n    def in_dll(lib, name):\n        return name\ndef f():\n"
    "    return T.in_dll(None, 'environ')\n",
])
def test_other_c_symbols_stay_quiet(tmp_path: Path, user: str) -> None:
    env_quiet(tmp_path, {"user.py": user})
