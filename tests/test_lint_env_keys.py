"""`configbags lint` applies the door's start-up key rules (`runtime.keys`, and the
record's NAME / NAME_FILE rule) to keys given through environment variables, as `serve`
does at start: the read key and the admin key alike from two variables, or one from a
variable and one from a flag, and a secret's variable set beside its `_FILE` form, are
each refused by the server, so each is a finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_case import LAUNCH, bundled_view, found_in

from configbags.evolve.view import SchemaView

POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: x}}\nspec:\n  containers:\n  - name: s\n    image: img\n"
       "    command: [python, -m, sglang.launch_server, --model-path, m{flags}]\n    env:\n{env}")


@pytest.fixture(scope="module")
def view() -> SchemaView:
    return bundled_view()


def _env(**pairs: str) -> str:
    return "".join(f"    - {{name: {name}, value: {value!r}}}\n" for name, value in pairs.items())


@pytest.mark.parametrize(("name", "text"), [
    ("a.sh", f"#!/bin/sh\nSGLANG_API_KEY=samek1 SGLANG_ADMIN_API_KEY=samek1 {LAUNCH}\n"),
    ("c.sh", f"#!/bin/sh\nexport SGLANG_ADMIN_API_KEY=samek2\n{LAUNCH} --api-key samek2\n"),
    ("e.sh", f"#!/bin/sh\nexport SGLANG_API_KEY=samek3\n{LAUNCH} --admin-api-key=samek3\n"),
    ("pod.yaml", POD.format(flags="", env=_env(SGLANG_API_KEY="k4", SGLANG_ADMIN_API_KEY="k4"))),
    ("podflag.yaml", POD.format(flags=", --api-key, k5", env=_env(SGLANG_ADMIN_API_KEY="k5"))),
])
def test_the_same_key_from_variables_or_a_variable_and_a_flag_is_refused(tmp_path: Path, view: SchemaView,
                                                                        name: str, text: str) -> None:
    assert (("lint-bad-value", "admin_api_key") in
            [(rule, subject) for _, rule, subject in found_in(tmp_path / name, text, view)])


@pytest.mark.parametrize(("name", "text"), [
    ("a.sh", f"#!/bin/sh\nSGLANG_API_KEY=k1 SGLANG_ADMIN_API_KEY=k2 {LAUNCH}\n"),
    ("c.sh", f"#!/bin/sh\nexport SGLANG_ADMIN_API_KEY=k1\n{LAUNCH} --api-key k2\n"),
    # the flag wins over the variable (flags > env), so the two keys the server holds differ
    ("f.sh", f"#!/bin/sh\nexport SGLANG_API_KEY=k1 SGLANG_ADMIN_API_KEY=k1\n{LAUNCH} --api-key k2\n"),
    ("pod.yaml", POD.format(flags="", env=_env(SGLANG_API_KEY="k1", SGLANG_ADMIN_API_KEY_FILE="/run/a"))),
])
def test_distinct_keys_pass(tmp_path: Path, view: SchemaView, name: str, text: str) -> None:
    assert found_in(tmp_path / name, text, view) == []


@pytest.mark.parametrize(("name", "text", "line"), [
    ("b.sh", f"#!/bin/sh\nSGLANG_API_KEY=realkey1 SGLANG_API_KEY_FILE=/run/k {LAUNCH}\n", 2),
    ("d.yaml", POD.format(flags="", env=_env(SGLANG_API_KEY="realkey1", SGLANG_API_KEY_FILE="/run/k")), 11),
])
def test_a_secret_variable_beside_its_file_form_is_refused(tmp_path: Path, view: SchemaView, name: str,
                                                          text: str, line: int) -> None:
    findings = found_in(tmp_path / name, text, view)
    assert (line, "lint-bad-value", "SGLANG_API_KEY_FILE") in findings
    assert not any("realkey1" in subject for _, _, subject in findings)
