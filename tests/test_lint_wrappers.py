"""`configbags lint` reads a launch line behind the wrappers images and scripts put in
front of it (`evolve.wrappers`: shells' option clusters holding `c`, init processes,
`env`, `timeout`, `su -c`, `kubectl exec --`, `docker run IMAGE`), and never prints a word
that may carry a value (a flag and its key written as one word)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("line", SCRIPTS)
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
                      "timeout 5\necho sh -c 'python -m sglang.launch_server --tp-sise 2'\n")
    assert lint.lint([script], view) == []


@pytest.mark.parametrize(("line", "runs"), [
    ("bash -lc 'x y' n", "script x y"), ("sh -c -e x", "script x"), ("su -cx u", "script x"),
    ("su --command=x u", "script x"), ("env -u A -C /d B=1 cmd a", "cmd a"), ("timeout --signal=KILL 5 cmd", "cmd"),
    ("docker --context c run -e A=1 --rm img cmd", "cmd"), ("kubectl exec pod", "kubectl exec pod"),
    ("bash script.sh", "bash script.sh"), ("exec -a name cmd", "cmd"), ("A=1 B=2 cmd", "cmd"),
])
def test_unwrap_walks_each_wrappers_own_words(line: str, runs: str) -> None:
    words = shlex.split(line)
    found = unwrap(words)
    shown = f"script {found.script[1]}" if found.script is not None else " ".join(words[found.start:])
    assert shown == runs
