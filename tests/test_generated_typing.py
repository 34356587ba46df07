"""Static and import-time properties of the generated package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from genutil import REPO
from mypy import api as mypy_api


def test_accessor_reads_type_check(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent("""
        from configbags.generated.accessors import get_exec, get_parallel, get_schedule
        reveal_type(get_parallel().tp_size)
        reveal_type(get_exec().kernel.attention_backend)
        reveal_type(get_schedule().swa_full_tokens_ratio)
        x: str = get_parallel().tp_size
    """))
    out, _, status = mypy_api.run(["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
                                   "--follow-imports", "silent", str(snippet)])
    assert status == 1
    assert 'Revealed type is "int"' in out
    assert 'Revealed type is "str | None"' in out
    assert 'Revealed type is "float"' in out  # a fallback leaf is never None in a bag
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in out


def test_importing_accessors_does_not_import_torch() -> None:
    code = "import sys, configbags.generated.accessors, configbags.generated.server_args; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
