"""Round seventeen's false passes of the read ratchet about script files (an outside
attack): a launch script under the roots whose own reads were judged only where a launch
the scanner resolves reached it, so a run helper, a composed argv or a cron entry hid them
(R17-1); bash constructs of a `-c` script not seen as commands, `coproc`, `trap CMD SIG`,
`source <(...)` (R17-6); and a script's content not followed: the scripts it sources or
runs by its own folder (`"$(dirname "$0")/common.sh"`), the programs it feeds an
interpreter by a heredoc or a here-string, `python -c` with a built key, `coproc` and
`trap` (R17-8). Every script file under the roots is judged as its own file; the precision
cases beside each rule stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import SETTINGS, fails, file_reads, scan_pkg

from configbags.migrate.scan import ScanSettings, scan_tree

HELPER = (
    "import os, subprocess\n"
    "HERE = os.path.dirname(os.path.abspath(__file__))\n"
    "def run_cmd(cmd):\n    return subprocess.run(cmd, capture_output=True, text=True).stdout\n"
)


def _script_leaves(tmp_path: Path, files: dict[str, str], script: str = "pkg/scripts/launch.sh") -> set[str]:
    result = scan_pkg(tmp_path, files)
    assert fails(result), result.reads
    return {leaf for _, leaf in file_reads(result, script)}


# ---- R17-1: a script under the roots is judged as its own file, however it is started

@pytest.mark.parametrize(("user", "script", "leaf"), [
    # a run helper of another module (p13), of the same module (p01)
    ("from pkg.utils import run_cmd, HERE\nimport os\ndef main():\n    return run_cmd(['sh', os.path.join(HERE, 'scripts', 'launch.sh')])\n",
     'echo "page=$SGLANG_PAGE_SIZE"\n', "$SGLANG_PAGE_SIZE"),
    # a shell string in the helper (p11)
    ("from pkg.utils import HERE\nimport subprocess\ndef run(c):\n    return subprocess.check_output(c, shell=True)\n"
     "def main():\n    return run(f'bash {HERE}/scripts/launch.sh')\n", "echo $SGLANG_PAGE_SIZE\n", "$SGLANG_PAGE_SIZE"),
    # a composed argv (p15), a whole-environment dump (y02)
    ("from pkg.utils import HERE\nimport os, subprocess\nLAUNCH = [os.path.join(HERE, 'scripts', 'launch.sh')]\n"
     "def main():\n    return subprocess.run(['sh'] + LAUNCH)\n", "env | sort\n", "$?"),
    # started by nothing the scanner sees (cron, a Dockerfile): still the engine's script
    ("def main():\n    return 1\n", "#!/bin/bash\nprintenv SGLANG_PAGE_SIZE\n", "$SGLANG_PAGE_SIZE"),
])
def test_a_script_under_the_roots_is_judged_as_its_own_file(tmp_path: Path, user: str, script: str, leaf: str) -> None:
    files = {"utils.py": HELPER, "user.py": user, "scripts/launch.sh": script}
    assert leaf in _script_leaves(tmp_path, files)


def test_a_shell_script_named_by_its_first_line_is_judged_whatever_its_suffix(tmp_path: Path) -> None:
    files = {"user.py": "x = 1\n", "scripts/launch": "#!/usr/bin/env bash\necho $SGLANG_PAGE_SIZE\n"}
    assert _script_leaves(tmp_path, files, "pkg/scripts/launch") == {"$SGLANG_PAGE_SIZE"}


def test_a_python_program_with_no_py_suffix_is_scanned_as_a_module(tmp_path: Path) -> None:
    files = {"user.py": "x = 1\n", "tools/dump": "#!/usr/bin/env python3\nimport os\nprint(os.environ['SGLANG_PAGE_SIZE'])\n"}
    assert _script_leaves(tmp_path, files, "pkg/tools/dump") == {"$SGLANG_PAGE_SIZE"}


@pytest.mark.parametrize("files", [
    {"scripts/launch.sh": 'echo "port=$PORT home=$HOME"\nenv -i PATH=/bin true\n'},
    {"scripts/launch.sh": "export SGLANG_PAGE_SIZE=16\nexec python -m pkg.user\n"},
    {"scripts/launch.sh": '. "$(dirname "$0")/common.sh"\n', "scripts/common.sh": "echo $MASTER_PORT\n"},
    {"scripts/launch.sh": "python3 - <<'EOF'\nimport os\nprint(os.environ['MASTER_PORT'])\nEOF\n"},
    {"scripts/launch.sh": "trap 'rm -f /tmp/x' EXIT\ncoproc cat\n"},
    {"data/table.txt": "SGLANG_PAGE_SIZE 16\n", "tools/notes": "echo $SGLANG_PAGE_SIZE\n"},  # no shebang, no suffix: data
    {"tools/dump": "#!/usr/bin/env python3\nimport os\nprint(os.environ.get('MASTER_PORT'))\n"},
])
def test_a_script_reading_only_undeclared_variables_stays_clean(tmp_path: Path, files: dict[str, str]) -> None:
    result = scan_pkg(tmp_path, {"user.py": "x = 1\n", **files})
    assert not fails(result), result.reads


def test_an_excluded_script_is_left_out(tmp_path: Path) -> None:
    settings = ScanSettings(roots=("pkg",), env_vars=SETTINGS.env_vars, excludes=("pkg/scripts",))
    result = scan_pkg(tmp_path, {"user.py": "x = 1\n", "scripts/launch.sh": "env\n"}, settings)
    assert not fails(result), result.reads


def test_a_script_is_judged_afresh_by_a_warm_check(tmp_path: Path) -> None:
    scan_pkg(tmp_path, {"user.py": "x = 1\n", "scripts/launch.sh": "echo hi\n"})
    cache = tmp_path / "cache.json"
    assert not fails(scan_tree(tmp_path, SETTINGS, cache_path=cache))
    (tmp_path / "pkg" / "scripts" / "launch.sh").write_text("echo $SGLANG_PAGE_SIZE\n")
    assert fails(scan_tree(tmp_path, SETTINGS, cache_path=cache))


# ---- R17-6: bash constructs of a `-c` script

@pytest.mark.parametrize("script", [
    "coproc env; cat <&${COPROC[0]}",
    "trap env EXIT",
    "trap 'printenv | sort' EXIT INT",
    "source <(echo env)",
    ". <(cat generated.sh)",
])
def test_coproc_trap_and_a_sourced_process_are_commands(tmp_path: Path, script: str) -> None:
    user = f"import subprocess\ndef main():\n    return subprocess.run(['bash', '-c', {script!r}])\n"
    result = scan_pkg(tmp_path, {"user.py": user})
    assert fails(result), result.reads
    assert ("main", "$?") in file_reads(result)


@pytest.mark.parametrize("script", ["trap 'rm -f /tmp/x' EXIT", "coproc cat; echo hi", "source ./venv.sh"])
def test_coproc_and_trap_of_commands_that_read_nothing_stay_clean(tmp_path: Path, script: str) -> None:
    user = f"import subprocess\ndef main():\n    return subprocess.run(['bash', '-c', {script!r}])\n"
    assert not fails(scan_pkg(tmp_path, {"user.py": user})), script


# ---- R17-8: a script's content followed

LAUNCH = (
    "import os, subprocess\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
    "def main():\n    return subprocess.run(['bash', os.path.join(HERE, 'scripts', 'launch.sh')])\n"
)


@pytest.mark.parametrize(("files", "leaf"), [
    ({"scripts/launch.sh": '. "$(dirname "$0")/common.sh"\n', "scripts/common.sh": 'echo "page=$SGLANG_PAGE_SIZE"\n'},
     "$SGLANG_PAGE_SIZE"),
    ({"scripts/launch.sh": 'bash "$(dirname "$0")/inner.sh"\n', "scripts/inner.sh": "printenv | grep PAGE\n"}, "$?"),
    ({"scripts/launch.sh": 'DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\nsource "$DIR/env.sh"\n',
      "scripts/env.sh": "env\n"}, "$?"),
    ({"scripts/launch.sh": 'python3 "$(dirname "$0")/dump.txt"\n', "scripts/dump.txt": "import os\nprint(dict(os.environ))\n"},
     "$?"),
    ({"scripts/launch.sh": "python3 - <<'EOF'\nimport os\nprint(os.environ['SGLANG_PAGE' + '_SIZE'])\nEOF\n"}, "$SGLANG_PAGE_SIZE"),
    ({"scripts/launch.sh": 'python3 -c "import os; print(os.environ[\'SGLANG_PAGE\' + \'_SIZE\'])"\n'}, "$SGLANG_PAGE_SIZE"),
    ({"scripts/launch.sh": "bash <<< env\n"}, "$?"),
    ({"scripts/launch.sh": "sh <<-END\n\tprintenv\n\tEND\n"}, "$?"),
    ({"scripts/launch.sh": "coproc env\ncat <&${COPROC[0]}\n"}, "$?"),
    ({"scripts/launch.sh": "trap env EXIT\n"}, "$?"),
    ({"scripts/launch.sh": '. "$SETUP_DIR/common.sh"\n'}, "$?"),  # a sourced path not shown
])
def test_a_scripts_sourced_files_and_fed_programs_are_judged(tmp_path: Path, files: dict[str, str], leaf: str) -> None:
    assert leaf in _script_leaves(tmp_path, {"user.py": LAUNCH, **files})


@pytest.mark.parametrize("files", [
    {"scripts/launch.sh": "python3 - <<'EOF'\nprint('SGLANG_PAGE' + '_SIZE')\nEOF\n"},
    {"scripts/launch.sh": 'python3 -c "print(1)"\nbash <<< "echo hi"\n'},
    {"scripts/launch.sh": 'bash "$(dirname "$0")/inner.sh"\n', "scripts/inner.sh": "echo $MASTER_ADDR\n"},
])
def test_a_scripts_fed_programs_that_read_nothing_declared_stay_clean(tmp_path: Path, files: dict[str, str]) -> None:
    result = scan_pkg(tmp_path, {"user.py": LAUNCH, **files})
    assert not fails(result), result.reads


# ---- scripts outside the roots: judged where a launch the scanner resolves reaches them

def test_a_project_script_outside_the_roots_is_judged_at_the_launch_that_reaches_it(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "launch.sh").write_text('. "$(dirname "$0")/common.sh"\n')
    (tmp_path / "scripts" / "common.sh").write_text("echo $SGLANG_PAGE_SIZE\n")
    user = (
        "import os, subprocess\nROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "def main():\n    return subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'launch.sh')])\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("main", "$SGLANG_PAGE_SIZE") in file_reads(result)
