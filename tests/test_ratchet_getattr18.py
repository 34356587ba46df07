"""Round eighteen's false passes of the read ratchet through an attribute of `os` fetched
by a name the module does not write as one literal (an outside attack, families 1 and 5):
`getattr(os, E)` with `E = "environ"`, a concatenation or an f-string of constants, a
class attribute, `operator.attrgetter(E)(os)`, and `__import__(M)` with `M = "os"`. A
name that resolves is the read it spells; one the module does not spell at all (a
parameter, `sys.argv`) may be `environ` or `getenv`, and is `$?`. Each has a twin that
reads nothing: a name spelling another attribute, a fetch from something that is not os."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet, scan_env_pkg

UNRESOLVED = "$?"
READ = "$SGLANG_PAGE_SIZE"


SPELLED = [
    "import os\nE = 'environ'\ndef f():\n    return getattr(os, E)['SGLANG_PAGE_SIZE']\n",
    "import os\nA = 'env'\ndef f():\n    return getattr(os, f'{A}iron')['SGLANG_PAGE_SIZE']\n",
    "import os\nA = 'env'\nB = A + 'iron'\ndef f():\n    return getattr(os, B).get('SGLANG_PAGE_SIZE')\n",
    "import os\nG = 'getenv'\ndef f():\n    return getattr(os, G)('SGLANG_PAGE_SIZE')\n",
    "import os\nclass C:\n    E = 'environ'\n    def f(self):\n        return getattr(os, self.E)['SGLANG_PAGE_SIZE']\n",
    "import os\nF = 1\ndef f():\n    return getattr(os, 'environ' if F else 'path')['SGLANG_PAGE_SIZE']\n",
    "import os, operator\nE = 'environ'\ndef f():\n    return operator.attrgetter(E)(os)['SGLANG_PAGE_SIZE']\n",
    "import posix\nE = 'environ'\ndef f():\n    return getattr(posix, E)[b'SGLANG_PAGE_SIZE']\n",
    "M = 'os'\ndef f():\n    return __import__(M).environ['SGLANG_PAGE_SIZE']\n",
    "def f():\n    return __import__('o' + 's').environ['SGLANG_PAGE_SIZE']\n",
    "import importlib\nM = 'os'\ndef f():\n    return importlib.import_module(M).getenv('SGLANG_PAGE_SIZE')\n",
]


@pytest.mark.parametrize("body", SPELLED)
def test_an_os_attribute_by_a_spelled_name_is_the_read_it_spells(tmp_path: Path, body: str) -> None:
    assert READ in env_leaves(tmp_path, {"user.py": body}), body


UNSPELLED = [
    "import os\ndef f(name='environ'):\n    return getattr(os, name)['SGLANG_PAGE_SIZE']\n",
    "import os, sys\ndef f():\n    return getattr(os, sys.argv[1])['SGLANG_PAGE_SIZE']\n",
    "import os\ndef f(n):\n    return getattr(os, n)('SGLANG_PAGE_SIZE')\n",
    "import posix\ndef f(n):\n    return getattr(posix, n)\n",
    "import os, operator\ndef f(n):\n    return operator.attrgetter(n)(os)\n",
    "import os\ndef f(n):\n    return vars(os)[n]\n",
    "import os\ndef f(n):\n    return os.__dict__[n]\n",
    "import os\ndef f(n):\n    return getattr(os.environ, n)('SGLANG_PAGE_SIZE')\n",
    "from os import environ\ndef f(n):\n    return getattr(environ, n)('SGLANG_PAGE_SIZE')\n",
    "import os, inspect\ndef f(n):\n    return inspect.getattr_static(os, n)\n",
    "import importlib\ndef f(n):\n    return getattr(importlib.import_module('os'), n)\n",
]


@pytest.mark.parametrize("body", UNSPELLED)
def test_an_os_attribute_by_a_name_the_module_does_not_spell_is_unresolved(tmp_path: Path, body: str) -> None:
    assert UNRESOLVED in env_leaves(tmp_path, {"user.py": body}), body


QUIET = [
    "import os\nP = 'path'\ndef f():\n    return getattr(os, P).join('a', 'b')\n",
    "import os\ndef f():\n    return getattr(os, 'se' + 'p')\n",
    "import os\nA = 'se'\ndef f():\n    return getattr(os, f'{A}p')\n",
    "def f(o, n):\n    return getattr(o, n)\n",
    "import os.path\ndef f(n):\n    return getattr(os.path, n)\n",
    "import os\ndef f(n):\n    return hasattr(os, n)\n",
    "import os\ndef f():\n    return getattr(os, 'sched_getaffinity', None)\n",
    "import os\nclass C:\n    def f(self, n):\n        return getattr(self, n), os.sep\n",
    "import os, operator\nP = 'sep'\ndef f():\n    return operator.attrgetter(P)(os)\n",
]


@pytest.mark.parametrize("body", QUIET)
def test_a_fetch_that_reaches_no_environment_reads_nothing(tmp_path: Path, body: str) -> None:
    env_quiet(tmp_path, {"user.py": body})


def test_the_unresolved_fetch_names_its_form(tmp_path: Path) -> None:
    result = scan_env_pkg(tmp_path, {"user.py": "import os\ndef f(n):\n    return getattr(os, n)\n"})
    assert [(r.leaf, r.line, r.form) for r in result.reads if r.file == "pkg/user.py"] == [
        (UNRESOLVED, 3, "env_by_name")
    ]
