"""Round twenty-three's findings about the read ratchet (an outside attack): a suffixless
script whose first line runs it through a Python launcher (`torchrun`, `deepspeed`,
`accelerate launch`) or an interpreter not named python (`graalpy`, `py`) was not scanned
(R23-1); `ratchet init` wrote a ratchet.yaml that no command could load back for a file
name holding a byte that is not UTF-8 (R23-2); and a zip archive of Python code under a
name zipimport does not care about (`vendor.whl`, `data.bin`, an image with a zip appended)
was not reported (R23-3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, SETTINGS, fails, file_reads, scan_pkg, write_pkg

from configbags.migrate.scan import scan_tree

RAW_READ = RAW + "def run():\n    return get_server_args().page_size\n"


# ---- R23-1: a script run by a Python launcher from its shebang is scanned as a module


@pytest.mark.parametrize("shebang", [
    "#!/usr/bin/env -S torchrun --nproc_per_node=1",
    "#!/usr/bin/env -S deepspeed --num_gpus 1",
    "#!/usr/bin/env -S accelerate launch --num_processes 1",
    "#!/usr/bin/env -S nice -n 5 torchrun --standalone",
    "#!/opt/venv/bin/torchrun",
    "#!/usr/bin/env graalpy",
    "#!/usr/bin/env -S py -3.12",
    "#!/usr/local/bin/jython",
])
def test_a_script_run_by_a_python_launcher_from_its_shebang_is_scanned(tmp_path: Path, shebang: str) -> None:
    result = scan_pkg(tmp_path, {"bin/serve": f"{shebang}\n{RAW_READ}"})
    assert "pkg/bin/serve" in result.files
    assert ("run", "page_size") in file_reads(result, "pkg/bin/serve")
    assert fails(result)


@pytest.mark.parametrize("shebang", [
    "#!/usr/bin/env -S accelerate config",  # (accelerate's other commands run no script)
    "#!/bin/sh",
    "#!/usr/bin/env node",
    "#!/opt/py/bin/bash",  # (a folder named py is no interpreter)
])
def test_a_script_run_by_no_python_is_not_scanned_as_a_module(tmp_path: Path, shebang: str) -> None:
    write_pkg(tmp_path, {"user.py": "x = 1\n", "bin/tool": f"{shebang}\necho hi\n"})
    result = scan_tree(tmp_path, SETTINGS)
    assert not result.problems, result.problems
    assert not fails(result), result.reads

