"""Round seventeen's false passes of the read ratchet about the command a child process
runs (an outside attack): the judge of what a child reads (a whole-environment dump, a
name built at run time, a program fed on stdin) saw only a plain literal argv, so a
command handed to a run helper (R17-2: `sh(["env"])`, `sh(["sh"], input="env")` through the
helper's `**kw`, a helper in another module, a `*argv` helper) or composed by ordinary
Python (R17-3: a conditional, `or`, `+`, a starred constant, a parameter default,
`functools.partial` of a launcher, `shlex.join`/`.format`/`%`/`.join`, a list grown by
`+=`/`.append`, another module's constant) printed the environment back unreported. Each
case fails before its rule (configbags.migrate.childargv); the precision cases beside
them, harmless commands so composed, stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import env_leaves, env_quiet

PAGE = "$SGLANG_PAGE_SIZE"
READ = {PAGE, "$?"}

SH = "import subprocess, sys\ndef sh(cmd, **kw):\n    return subprocess.run(cmd, capture_output=True, text=True, **kw).stdout\n"


# ---- R17-2: a command handed to a run helper

@pytest.mark.parametrize("call", [
    "sh(['env'])",  # x02
    "sh(['printenv'])", "sh(['env', '-0'])", "sh(['bash', '-c', 'set'])", "sh(['bash', '-c', 'export -p'])",
    "sh(['bash', '-c', 'compgen -e'])", "sh(['bash', '-c', 'n=SGLANG_PAGE; echo ${!n}'])",
    "sh(['bash', '-c', 'declare -x'])",
    "sh([sys.executable, '-c', \"import os; print(os.environ['SGLANG_PAGE' + '_SIZE'])\"])",  # y01
    "sh(['sh', '-c', 'printenv \"$0$1\"', 'SGLANG_PAGE', '_SIZE'])",  # y07
    "sh(['perl', '-e', 'while (my ($k, $v) = each %ENV) { print \"$k\\\\n\" }'])",  # e28
    "sh(['awk', 'BEGIN { for (k in ENVIRON) print k }'])",  # e39
    # a program on stdin, `input=` passed on through the helper's `**kw`
    "sh(['sh'], input='env')",  # e14
    "sh(['bash', '-s'], input='printenv SGLANG_PAGE_SIZE')",  # e15
    "sh([sys.executable, '-'], input=\"import os;print(os.environ['SGLANG_PAGE'+'_SIZE'])\")",  # e13
    "sh(['envsubst'], input='$SGLANG_PAGE_SIZE')",  # e21
])
def test_a_dump_handed_to_a_run_helper_is_read(tmp_path: Path, call: str) -> None:
    assert env_leaves(tmp_path, {"user.py": SH + f"def main():\n    return {call}\n"}) & READ


@pytest.mark.parametrize("helper", [
    # x06, x07, x09: a command line run by a shell
    "import subprocess\ndef run_cmd(cmd):\n    return subprocess.check_output(cmd, shell=True, text=True)\n",
    "import subprocess\ndef run_cmd(command):\n    return subprocess.Popen(command, shell=True).wait()\n",
    "import os\ndef run_cmd(cmd):\n    return os.popen(cmd).read()\n",
])
def test_a_shell_line_handed_to_a_run_helper_is_read(tmp_path: Path, helper: str) -> None:
    assert env_leaves(tmp_path, {"user.py": helper + "def main():\n    return run_cmd('env | grep SGLANG_PAGE')\n"}) & READ


def test_a_dump_handed_to_a_helper_of_another_module_is_read(tmp_path: Path) -> None:
    # x08
    files = {
        "utils.py": "import subprocess\ndef run_cmd(cmd):\n    return subprocess.run(cmd, capture_output=True, text=True).stdout\n",
        "user.py": "from pkg.utils import run_cmd\ndef main():\n    return run_cmd(['env'])\n",
    }
    assert env_leaves(tmp_path, files) & READ


@pytest.mark.parametrize("user", [
    # x11: a `*argv` helper
    "import subprocess\ndef run(*argv):\n    return subprocess.run(list(argv), capture_output=True).stdout\n"
    "def main():\n    return run('printenv')\n",
    # q20: `create_subprocess_exec(*cmd)` in a coroutine given the words
    "import asyncio\nasync def go(*cmd):\n    p = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)\n"
    "    return (await p.communicate())[0]\ndef main():\n    return asyncio.run(go('env'))\n",
])
def test_a_dump_handed_to_a_star_args_helper_is_read(tmp_path: Path, user: str) -> None:
    assert env_leaves(tmp_path, {"user.py": user}) & READ


@pytest.mark.parametrize("call", [
    "sh(['nvidia-smi'])", "sh(['git', 'rev-parse', 'HEAD'])", "sh(['sh'], input='echo hello')",
    "sh([sys.executable, '-'], input='print(1)')", "sh(['bash', '-c', 'echo hi | sort'])",
])
def test_a_harmless_command_handed_to_a_run_helper_staysenv_quiet(tmp_path: Path, call: str) -> None:
    env_quiet(tmp_path, {"user.py": SH + f"def main():\n    return {call}\n"})


# ---- R17-3: the command composed by Python expressions

RUN = "import subprocess, sys, shlex, functools\n"


@pytest.mark.parametrize("body", [
    "DEBUG = True\ndef main():\n    return subprocess.run(['env'] if DEBUG else ['true'])\n",  # q01
    "def main(debug=True):\n    cmd = ['env'] if debug else ['true']\n    return subprocess.run(cmd)\n",  # q02
    "def main(debug=True):\n    return subprocess.run(['env' if debug else 'true'])\n",  # q03
    "def main(cmd=None):\n    return subprocess.run(cmd or ['env'])\n",  # q05
    "PFX = ['nice']\ndef main():\n    return subprocess.run([*PFX, 'env'])\n",  # q07
    "def main():\n    return subprocess.run(['nice'] + ['env'])\n",  # q08
    "def main(cmd=('env',)):\n    return subprocess.run(list(cmd))\n",  # q10
    "RUN = functools.partial(subprocess.run, capture_output=True)\ndef main():\n    return RUN(['env'])\n",  # q14
    "def main():\n    return subprocess.run(shlex.join(['env']), shell=True)\n",  # q24
    "def main():\n    return subprocess.run('{} | sort'.format('env'), shell=True)\n",  # q25
    "def main():\n    return subprocess.run('%s | sort' % 'env', shell=True)\n",  # q26
    "def main():\n    return subprocess.run(' '.join(['printenv']), shell=True)\n",  # x17
    "def main():\n    cmd = ['bash']\n    cmd += ['-c', 'env']\n    return subprocess.run(cmd)\n",  # x14
    "def main():\n    cmd = ['sh', '-c']\n    cmd.append('printenv')\n    return subprocess.run(cmd)\n",  # x15
    "def main(dbg=True):\n    code = 'import os; print(dict(os.environ))' if dbg else 'pass'\n"
    "    return subprocess.run([sys.executable, '-c', code])\n",  # y08
    "LINES = ['import os', 'print(dict(os.environ))']\ndef main():\n"
    "    return subprocess.run([sys.executable, '-c', ';'.join(LINES)])\n",  # y09
    "def main(numa=False):\n    prefix = ['numactl', '--interleave=all'] if numa else []\n"
    "    return subprocess.run(prefix + ['env'])\n",  # y11
    "def main(stdin_code=True):\n    cmd = ['sh'] if stdin_code else ['true']\n"
    "    return subprocess.run(cmd, input='env')\n",
])
def test_a_dump_composed_by_python_is_read(tmp_path: Path, body: str) -> None:
    assert env_leaves(tmp_path, {"user.py": RUN + body}) & READ


@pytest.mark.parametrize("consts", [
    ("TOOL = 'env'\n", "from pkg.consts import TOOL\ndef main():\n    return subprocess.run([TOOL, '-0'])\n"),  # q29
    ("DUMP = ['env']\n", "from pkg.consts import DUMP\ndef main():\n    return subprocess.run(DUMP)\n"),  # q30
])
def test_a_dump_constant_of_another_module_is_read(tmp_path: Path, consts: tuple[str, str]) -> None:
    assert env_leaves(tmp_path, {"consts.py": consts[0], "user.py": RUN + consts[1]}) & READ


@pytest.mark.parametrize("body", [
    "DEBUG = True\ndef main():\n    return subprocess.run(['nvidia-smi'] if DEBUG else ['true'])\n",
    "def main(numa=False):\n    prefix = ['numactl', '--interleave=all'] if numa else []\n"
    "    return subprocess.run(prefix + ['git', 'rev-parse', 'HEAD'])\n",
    "RUN = functools.partial(subprocess.run, capture_output=True)\ndef main():\n    return RUN(['nvidia-smi'])\n",
    "def main():\n    cmd = ['git']\n    cmd += ['rev-parse', 'HEAD']\n    cmd.append('--short')\n    return subprocess.run(cmd)\n",
    "def main():\n    return subprocess.run('{} | sort'.format('ls'), shell=True)\n",
    "def main():\n    return subprocess.run(shlex.join(['echo', 'env']), shell=True)\n",
    "def main(dbg=True):\n    code = 'print(1)' if dbg else 'pass'\n    return subprocess.run([sys.executable, '-c', code])\n",
    "def main(cmd=('nvidia-smi',)):\n    return subprocess.run(list(cmd))\n",
])
def test_a_harmless_command_composed_by_python_staysenv_quiet(tmp_path: Path, body: str) -> None:
    env_quiet(tmp_path, {"user.py": RUN + body})


def test_a_harmless_constant_of_another_module_staysenv_quiet(tmp_path: Path) -> None:
    files = {
        "consts.py": "TOOL = 'nvidia-smi'\nGIT = ['git', 'rev-parse', 'HEAD']\n",
        "user.py": RUN + "from pkg.consts import TOOL, GIT\ndef main():\n    subprocess.run([TOOL])\n    return subprocess.run(GIT)\n",
    }
    env_quiet(tmp_path, files)


# ---- deny by default: a launch whose command is not shown at all

@pytest.mark.parametrize("body", [
    "def build():\n    return ['env'] if len(sys.argv) > 3 else ['true']\n"
    "def main():\n    return subprocess.run(build())\n",
    "class Job:\n    def main(self):\n        return subprocess.run(self.make_cmd(), shell=True)\n",
    "def main():\n    cmd = sys.argv[1:]\n    return subprocess.run(cmd)\n",
    "def main():\n    return os.system(open('cmd.txt').readline())\n",
])
def test_a_launch_whose_command_is_not_shown_is_unknown(tmp_path: Path, body: str) -> None:
    assert "$?" in env_leaves(tmp_path, {"user.py": RUN + "import os\n" + body})


def test_a_command_not_shown_handed_to_a_run_helper_is_unknown(tmp_path: Path) -> None:
    user = SH + "def build():\n    return sys.argv[1:]\ndef main():\n    return sh(build())\n"
    assert "$?" in env_leaves(tmp_path, {"user.py": user})


@pytest.mark.parametrize("body", [
    # the helper's parameter: judged at each call site, here a harmless literal
    "def run_cmd(cmd):\n    return subprocess.run(cmd)\ndef main():\n    return run_cmd(['git', 'rev-parse', 'HEAD'])\n",
    "def main():\n    return subprocess.run(['git', *sys.argv[1:]])\n",  # the program is shown
    "def main(ref):\n    return subprocess.run(f'git log {ref}', shell=True)\n",
])
def test_a_launch_whose_program_or_caller_is_shown_staysenv_quiet(tmp_path: Path, body: str) -> None:
    env_quiet(tmp_path, {"user.py": RUN + body})


@pytest.mark.parametrize("call", [
    "sh(['bash', os.path.join(ROOT, 'scripts', 'launch.sh')])",  # p09: a script outside the roots
    "sh([sys.executable, os.path.join(HERE, 'tools', 'dump.txt')])",  # p12: a Python file without .py
    "sh(['sh', 'run.sh'])",
])
def test_a_file_handed_to_a_run_helper_to_run_is_unknown(tmp_path: Path, call: str) -> None:
    """R17-1 p09/p12: a file the handed command runs is judged where a launch names it,
    never through a helper: `$?` at the call (deny by default)."""
    body = SH + "import os\nHERE = os.path.dirname(__file__)\nROOT = os.path.dirname(HERE)\ndef main():\n    " + call + "\n"
    assert "$?" in env_leaves(tmp_path, {"user.py": body})


@pytest.mark.parametrize("user", [
    "import subprocess\nfrom pkg.consts import TOOL\ndef main():\n    subprocess.run([TOOL, '-c', 'env'])\n",
    "import subprocess\nfrom pkg.consts import TOOL\ndef main():\n"
    "    subprocess.run([TOOL, '-c', 'import os; print(dict(os.environ))'])\n",
])
def test_an_imported_program_given_dumping_code_is_read(tmp_path: Path, user: str) -> None:
    """`TOOL = "bash"` in another module, `[TOOL, "-c", "env"]` here: the program is not
    shown, but code a shell or a Python runs as a dump is (deny by default)."""
    files = {"consts.py": "TOOL = 'bash'\n", "user.py": user}
    assert "$?" in env_leaves(tmp_path, files)


def test_an_imported_program_given_harmless_code_stays_quiet(tmp_path: Path) -> None:
    files = {"consts.py": "TOOL = 'bash'\n",
             "user.py": "import subprocess\nfrom pkg.consts import TOOL\ndef main():\n    subprocess.run([TOOL, '-c', 'echo hi'])\n"}
    env_quiet(tmp_path, files)
