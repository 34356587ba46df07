"""Round seventeen's false passes of the read ratchet through programs (an outside attack,
families 4, 5 and 7): inline perl, node, awk and Tcl programs that start a child which
prints the environment (`perl -e 'print qx(env)'`, `execSync("env")`, `system("env")`);
programs that run their arguments or print the environment (`find -exec env ;`,
`strace`, `setpriv`, `sg -c`, `git -c alias.e=!env`, gdb's `show environment`, `make -f
-` and `tclsh` fed on stdin); and pydantic-settings classes the scanner did not see (in a
function body, `create_model` plus a `model_config` store, `type()`, `types.new_class`,
`EnvSettingsSource`). Each is `$?` (or the name); each has a twin that reads nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import file_reads, scan_env_pkg

UNRESOLVED = "$?"


def _leaves(tmp_path: Path, body: str) -> set[str]:
    result = scan_env_pkg(tmp_path, {"user.py": body})
    return {leaf for _, leaf in file_reads(result)}


def _run(argv: str, extra: str = "") -> str:
    return f"import subprocess\ndef main():\n    return subprocess.run({argv}, capture_output=True{extra}).stdout\n"


# ---- 4: an inline program that starts a child

CHILD_DUMPS = [
    "['perl', '-e', 'print qx(env)']",
    "['perl', '-e', 'system(\"env\")']",
    "['perl', '-e', 'print `env`']",
    "['perl', '-e', 'open(my $f, \"-|\", \"env\"); print <$f>']",
    "['perl', '-e', 'system(\"printenv \" . $ARGV[0])']",  # a command it builds: not known
    "['node', '-e', 'console.log(require(\"child_process\").execSync(\"env\").toString())']",
    "['node', '-e', 'process.stdout.write(require(\"child_process\").spawnSync(\"env\").stdout)']",
    "['node', '-e', 'require(\"child_process\").execSync(process.argv[1])']",
    "['awk', 'BEGIN{system(\"env\")}']",
    "['awk', 'BEGIN{while ((\"env\" | getline l) > 0) print l}']",
    "['awk', 'BEGIN{system(c)}']",
]
CHILD_QUIET = [
    "['perl', '-e', 'print qx(date)']",
    "['perl', '-e', 'system(\"ls\", \"-l\")']",
    "['node', '-e', 'require(\"child_process\").execSync(\"date\")']",
    "['awk', 'BEGIN{system(\"date\")}']",
    "['awk', '{print $1 | \"sort\"}']",
    "['perl', '-e', 'print 1']",
]


@pytest.mark.parametrize("argv", CHILD_DUMPS)
def test_inline_program_starting_a_dump_is_unresolved(tmp_path: Path, argv: str) -> None:
    assert _leaves(tmp_path, _run(argv)) == {UNRESOLVED}


@pytest.mark.parametrize("argv", CHILD_QUIET)
def test_inline_program_starting_a_quiet_child_reads_nothing(tmp_path: Path, argv: str) -> None:
    assert _leaves(tmp_path, _run(argv)) == set()


# ---- 5: programs that run their arguments or print the environment

RUNNERS = [
    ("['find', '/dev/null', '-exec', 'env', ';']", ""),
    ("['find', '/dev/null', '-execdir', 'printenv', ';']", ""),
    ("['strace', '-o', '/dev/null', 'env']", ""),
    ("['setpriv', '--reuid=0', 'env']", ""),
    ("['sg', 'root', '-c', 'env']", ""),
    ("['unshare', '-r', 'env']", ""),
    ("['git', '-c', 'alias.e=!env', 'e']", ""),
    ("['gdb', '-batch', '-ex', 'show environment']", ""),
    ("['gdb', '-batch', '-ex', 'run', '--args', 'env']", ""),
    ("['make', '-s', '-f', '-', 'all']", ", input='all:\\n\\t@env\\n'"),
    ("['tclsh']", ", input='puts [array get env]\\n'"),
    ("['tclsh']", ", input='puts [exec env]\\n'"),
]
QUIET_RUNNERS = [
    ("['find', '.', '-exec', 'ls', '{}', ';']", ""),
    ("['strace', '-o', '/dev/null', 'ls']", ""),
    ("['git', '-c', 'alias.s=status', 's']", ""),
    ("['git', '-c', 'alias.e=!date', 'e']", ""),
    ("['gdb', '-batch', '-ex', 'bt']", ""),
    ("['make', '-s', '-f', '-', 'all']", ", input='all:\\n\\t@date\\n'"),
    ("['tclsh']", ", input='puts $env(HOME)\\n'"),
    ("['make', 'all']", ", input='env'"),
]


@pytest.mark.parametrize(("argv", "extra"), RUNNERS)
def test_program_running_a_dump_is_unresolved(tmp_path: Path, argv: str, extra: str) -> None:
    assert _leaves(tmp_path, _run(argv, extra)) == {UNRESOLVED}


@pytest.mark.parametrize(("argv", "extra"), QUIET_RUNNERS)
def test_program_running_a_quiet_command_reads_nothing(tmp_path: Path, argv: str, extra: str) -> None:
    assert _leaves(tmp_path, _run(argv, extra)) == set()


# ---- 7: pydantic-settings classes made otherwise

PS = "from pydantic_settings import BaseSettings, SettingsConfigDict\n"
BASE = PS + "class EngSettings(BaseSettings):\n    model_config = SettingsConfigDict(env_prefix='{prefix}')\n"
SETTINGS_MADE = {
    "in_function": """\
def main():
    from pydantic_settings import BaseSettings, SettingsConfigDict
    class S(BaseSettings):
        model_config = SettingsConfigDict(env_prefix='{prefix}')
        page_size: int = 1
    return S().page_size
""",
    "create_model_store": """\
import pydantic
from pydantic_settings import BaseSettings
S = pydantic.create_model('S', __base__=BaseSettings, page_size=(int, 1))
S.model_config['env_prefix'] = '{prefix}'
def main():
    return S().page_size
""",
    "type_call": BASE + """\
S = type('S', (EngSettings,), {{'__annotations__': {{'page_size': int}}, 'page_size': 1}})
def main():
    return S().page_size
""",
    "new_class": "import types\n" + BASE + """\
S = types.new_class('S', (EngSettings,), exec_body=lambda ns: ns.update({{'page_size': 1}}))
def main():
    return S().page_size
""",
}


@pytest.mark.parametrize("case", sorted(SETTINGS_MADE))
def test_settings_class_made_otherwise_is_read(tmp_path: Path, case: str) -> None:
    leaves = _leaves(tmp_path, SETTINGS_MADE[case].format(prefix="SGLANG_"))
    assert leaves & {UNRESOLVED, "$SGLANG_PAGE_SIZE"}, leaves


@pytest.mark.parametrize("case", ["in_function", "type_call", "new_class"])
def test_settings_class_made_otherwise_under_another_prefix_reads_nothing(tmp_path: Path, case: str) -> None:
    assert _leaves(tmp_path, SETTINGS_MADE[case].format(prefix="OTHER_")) == set()


def test_env_settings_source_used_directly_is_unresolved(tmp_path: Path) -> None:
    body = """\
from pydantic_settings import BaseSettings, EnvSettingsSource
class S(BaseSettings):
    page_size: int = 1
def main():
    return EnvSettingsSource(S, env_prefix='SGLANG_')()['page_size']
"""
    assert _leaves(tmp_path, body) == {UNRESOLVED}


def test_type_call_without_a_settings_base_reads_nothing(tmp_path: Path) -> None:
    body = "class B:\n    pass\nS = type('S', (B,), {'page_size': 1})\ndef main():\n    return type(S)\n"
    assert _leaves(tmp_path, body) == set()
