"""`configbags lint` reads a launch line behind the wrappers images and scripts put in
front of it (`evolve.wrappers`: shells' option clusters holding `c`, init processes,
`env`, `timeout`, `su -c`, `kubectl exec --`, `docker run IMAGE`), and never prints a word
that may carry a value (a flag and its key written as one word)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configbags.evolve import lint
from configbags.evolve.view import SchemaView, load_view
from configbags.evolve.wrappers import unwrap

BUNDLED = Path(__file__).resolve().parents[1] / "schema"
BASE = "python -m sglang.launch_server --model-path m --tp-sise 2"


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return load_view(BUNDLED, cache=False)


SCRIPTS = [
    "bash -lc '{b}'", "sh -ce '{b}'", "nohup sh -c '{b}'", "timeout 5 sh -c '{b}'", "exec sh -c '{b}'",
    "env -i sh -c '{b}'", "su -c '{b}' user", "su - user -c '{b}'", "kubectl exec pod -c c -- {b}",
    "kubectl -n prod exec -it pod -- sh -c '{b}'", "sh -c '{b}'", "sh -e -c '{b}'", "env A=1 sh -c '{b}'",
    "A=1 sh -c '{b}'", "dash -c '{b}'", "zsh -c '{b}'", "bash -o pipefail -c '{b}'", "docker run img {b}",
    "docker run --rm -it -e A=1 -v /a:/b --name x img sh -c '{b}'", "docker compose run --rm svc {b}",
    "nohup {b}", "timeout -s KILL 10 {b}", "sudo -u bob -E A=1 {b}", "tini -- {b}", "dumb-init -- sh -c '{b}'",
    "nice -n 5 numactl --cpunodebind=0 taskset -c 0-3 {b}", "gosu app {b}", "runuser -u app -- {b}",
]
# Slurm: nearly every option of srun/salloc/sbatch takes a value, as the next word or after `=`
SLURM = [
    "srun --gres=gpu:8 {b}", "srun --gres gpu:8 {b}", "srun --gpus=8 {b}", "srun --gpus-per-node=8 --ntasks=1 {b}",
    "srun --exclusive {b}", "srun --mpi=pmix {b}", "srun --container-image=img {b}", "srun -N1 --gres=gpu:8 {b}",
    "srun -N 2 --ntasks-per-node 8 --cpus-per-task 16 --exclusive {b}", "srun -lN2 -K1 --kill-on-bad-exit=1 {b}",
    "srun --container-image img --container-mounts /a:/b --container-writable --no-container-mount-home {b}",
    "srun --pty --overlap --jobid 12 {b}", "srun -p gpu -t 01:00:00 -J job -o out.log {b}",
    "salloc -N1 --gres=gpu:8 srun --exclusive {b}", "salloc --no-shell -N1 -- {b}",
    "sbatch --gres=gpu:8 --wrap '{b}'", "sbatch -N1 --wait --wrap='{b}'",
]


@pytest.mark.parametrize("line", SCRIPTS + SLURM)
def test_a_launch_line_behind_a_wrapper_in_a_script_is_linted(tmp_path: Path, view: SchemaView, line: str) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n" + line.format(b=BASE) + "\n")
    assert [(f.line, f.rule, f.subject) for f in lint.lint([script], view)] == [(2, "lint-unknown", "--tp-sise")]


COMMANDS = ['["/bin/bash", "-lc"]', '["/bin/sh", "-ec"]', '["tini", "--", "sh", "-c"]', '["dumb-init", "sh", "-c"]',
            '["/bin/sh", "-c"]', '["bash", "-c"]', '["/bin/bash", "-l", "-c"]', '["/usr/bin/env", "bash", "-c"]']


@pytest.mark.parametrize("command", COMMANDS)
def test_a_launch_line_behind_a_wrapper_in_a_pod_is_linted(tmp_path: Path, view: SchemaView, command: str) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: i\n"
                   f"    command: {command}\n    args: [\"{BASE}\"]\n")
    assert [(f.line, f.rule, f.subject) for f in lint.lint([pod], view)] == [(9, "lint-unknown", "--tp-sise")]


def test_an_exec_form_wrapper_and_a_compose_entrypoint_shell(tmp_path: Path, view: SchemaView) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: i\n"
                   "    command: [tini, --, python, -m, sglang.launch_server]\n    args: [--tp-sise, '2']\n")
    compose = tmp_path / "compose.yaml"
    compose.write_text(f'services:\n  s:\n    image: i\n    entrypoint: ["sh", "-c"]\n    command: ["{BASE}"]\n')
    found = [(Path(f.file).name, f.line, f.subject) for f in lint.lint([pod, compose], view)]
    assert found == [("compose.yaml", 5, "--tp-sise"), ("pod.yaml", 9, "--tp-sise")]


def test_wrappers_that_run_no_command_of_the_line_are_left_alone(tmp_path: Path, view: SchemaView) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nbash other.sh --tp-sise 2\nsu user\nkubectl get pods --tp-sise\n"
                      "timeout 5\necho sh -c 'python -m sglang.launch_server --tp-sise 2'\n"
                      "sbatch --gres=gpu:8 job.sh --tp-sise 2\nsalloc -N 2 --exclusive\n")
    assert lint.lint([script], view) == []


@pytest.mark.parametrize(("line", "runs"), [
    ("bash -lc 'x y' n", "script x y"), ("sh -c -e x", "script x"), ("su -cx u", "script x"),
    ("su --command=x u", "script x"), ("env -u A -C /d B=1 cmd a", "cmd a"), ("timeout --signal=KILL 5 cmd", "cmd"),
    ("docker --context c run -e A=1 --rm img cmd", "cmd"), ("kubectl exec pod", "kubectl exec pod"),
    ("bash script.sh", "bash script.sh"), ("exec -a name cmd", "cmd"), ("A=1 B=2 cmd", "cmd"),
    ("srun --gres gpu:8 --exclusive -N 2 cmd a", "cmd a"), ("srun --mpi=pmix -lu cmd", "cmd"),
    ("sbatch -N 1 --wrap 'x y'", "script x y"), ("sbatch -N 2 job.sh a", "job.sh a"),
])
def test_unwrap_walks_each_wrappers_own_words(line: str, runs: str) -> None:
    words = shlex.split(line)
    found = unwrap(words)
    shown = f"script {found.script[1]}" if found.script is not None else " ".join(words[found.start:])
    assert shown == runs


POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: x}}\nspec:\n  containers:\n  - name: c\n    image: i\n"
       "    command: [python, -m, sglang.launch_server]\n    args: {args}\n")


@pytest.mark.parametrize("fmt", ["table", "json", "github", "sarif"])
def test_a_flag_and_its_key_as_one_word_show_the_flag_only(tmp_path: Path, fmt: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Every output format shows the flag part of such a word, never what follows it."""
    pod = tmp_path / "k.yaml"
    pod.write_text(POD.format(args='["--api-key SEKRET2", "--tp-size 2", "--model-path m", "--tp-sise SEKRET3"]'))
    script = tmp_path / "a.sh"
    script.write_text("#!/bin/sh\npython -m sglang.launch_server --model-path m \"--api-key\u00a0SEKRETNBSP\"\n"
                      "python -m sglang.launch_server --model-path m --admin-api-key --SEKDASH7\n")
    assert lint.main([str(pod), str(script), "--no-cache", "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert "SEKRET" not in out and "SEKDASH" not in out and "--api-key" in out


def test_the_findings_name_the_flag_and_say_the_rest_was_not_shown(tmp_path: Path, view: SchemaView) -> None:
    pod = tmp_path / "k.yaml"
    pod.write_text(POD.format(args='["--api-key SEKRET2", "--tp-sise 2", "--model-path=m"]'))
    script = tmp_path / "a.sh"
    script.write_text("#!/bin/sh\npython -m sglang.launch_server --model-path m --admin-api-key --SEKDASH7\n")
    found = {(f.rule, f.subject): f.message for f in lint.lint([pod, script], view)}
    assert set(found) == {("lint-refused", "--api-key"), ("lint-unknown", "--tp-sise"),
                          ("lint-bad-value", "--admin-api-key")}
    assert "one word (the rest of the word not shown" in found["lint-refused", "--api-key"]
    assert "did you mean '--tp-size'?" in found["lint-unknown", "--tp-sise"]
    assert "not shown, as it may be the secret" in found["lint-bad-value", "--admin-api-key"]


@pytest.mark.parametrize("args", ['["--model-path=m", "--api-key=SEKRET9 --tp-size=2"]',
                                  '["--model-path", "m --tp-size 2"]', '["--model-path=m\u00a0--tp-size=2"]'])
def test_a_value_that_swallowed_the_next_flag_is_breaking(tmp_path: Path, view: SchemaView, args: str) -> None:
    """`--api-key=K --tp-size=2` as one word: the server would take it all as the key (and
    its own key rule now refuses a key holding a space); lint names the flag swallowed."""
    pod = tmp_path / "k2.yaml"
    pod.write_text(POD.format(args=args))
    [finding] = lint.lint([pod], view)
    assert (finding.rule, finding.line) == ("lint-bad-value", 9)
    assert "holds --tp-size after a space" in finding.message and "SEKRET" not in finding.message
    config = tmp_path / "server.yaml"
    config.write_text("model_path: m\napi_key: SEKRET9 --port 1\n")
    [finding] = lint.lint([config], view)
    assert (finding.subject, finding.rule) == ("api_key", "lint-bad-value") and "holds --port" in finding.message


def test_dockerfiles_and_python_argv_lists_are_unwrapped_too(tmp_path: Path, view: SchemaView) -> None:
    docker = tmp_path / "Dockerfile"
    docker.write_text('FROM x\nENTRYPOINT ["tini", "--"]\nCMD ["python", "-m", "sglang.launch_server", "--tp-sise", "2"]\n'
                      'FROM y\nCMD ["/bin/bash", "-lc", "python -m sglang.launch_server --prot 1"]\n')
    script = tmp_path / "run.py"
    script.write_text('import subprocess\nsubprocess.run(["nohup", "bash", "-lc", "python -m sglang.launch_server '
                      '--tp-sise 2"])\nsubprocess.run(["timeout", "5", "python", "-m", "sglang.launch_server", '
                      '"--prot", "2"])\n')
    found = [(Path(f.file).name, f.line, f.subject) for f in lint.lint([docker, script], view)]
    assert found == [("Dockerfile", 3, "--tp-sise"), ("Dockerfile", 5, "--prot"), ("run.py", 2, "--tp-sise"),
                     ("run.py", 3, "--prot")]


@given(st.lists(st.sampled_from(["sh", "-lc", "-c", "--", "-", "env", "A=1", "timeout", "5", "kubectl", "exec",
                                 "docker", "run", "-e", "su", "tini", "x", "-o", "--rm"]), max_size=12))
@settings(max_examples=300, deadline=None)
def test_unwrap_ends_inside_the_words_for_any_words(words: list[str]) -> None:
    found = unwrap(words)
    assert 0 <= found.start <= len(words)
    assert found.script is None or 0 <= found.script[0] < len(words)
    assert all(0 <= i < len(words) and "=" in words[i] for i in found.assigned)


@pytest.mark.parametrize("command", [
    "['srun', '--gres=gpu:8', '--exclusive', 'sh', SCRIPT]", "['srun', '-N', '2', '--gres', 'gpu:8', SCRIPT]",
    "['salloc', '-N1', 'srun', '--mpi=pmix', SCRIPT]", "['sbatch', '--gres=gpu:8', SCRIPT]",
])
def test_the_read_ratchet_unwraps_slurm_by_the_same_table(tmp_path: Path, command: str) -> None:
    """The wrapper table is the ratchet's too (migrate/childenv.py): the script a Slurm
    command runs is read, never lost behind the scheduler's options."""
    from ratchet_case import scan_pkg

    source = ("import subprocess\nfrom pathlib import Path\nSCRIPT = str(Path(__file__).parent / 'show.sh')\n"
              f"def f():\n    return subprocess.run({command}, capture_output=True).stdout\n")
    result = scan_pkg(tmp_path, {"user.py": source, "show.sh": "#!/bin/sh\necho \"$SGLANG_PAGE_SIZE\"\n"})
    assert "$SGLANG_PAGE_SIZE" in {r.leaf for r in result.reads if r.file == "pkg/user.py"}, result.reads
