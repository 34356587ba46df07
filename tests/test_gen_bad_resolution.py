"""Bad rules, presets, settings, env bindings, secrets and deprecations (the `layers`
case): each fails generation with exit code 2 and an error at file:line that says what to
do; all of them come out in one run."""

from __future__ import annotations

from pathlib import Path

import pytest
from genutil import copy_case, generate

CORE = "namespaces/core.yaml"
RULES = "rules.yaml"
PRESETS = "presets.yaml"

# (id, file, old text, new text, expected "file:line", message part)
CASES = [
    ("rule-unknown-leaf", RULES, "    leaf: block\n    fn:", "    leaf: blok\n    fn:", "rules.yaml:3", "unknown leaf 'blok' (did you mean 'block'?)"),
    ("rule-fn-not-importable", RULES, "configbags.server.rules:chunked_prefill_size", "no_such.module:f", "rules.yaml:4", "cannot import module 'no_such.module'"),
    ("rule-fn-missing", RULES, "configbags.server.rules:chunked_prefill_size", "configbags.server.rules:nope", "rules.yaml:4", "has no function 'nope'"),
    ("rule-fn-arity", RULES, "    inputs: [gpu.memory_bytes]\n", "    inputs: [gpu.memory_bytes, width]\n", "rules.yaml:5", "cannot take the 2 declared input(s) (gpu.memory_bytes, width)"),
    ("rule-value-wrong-type", RULES, "    value: 64\n", "    value: lots\n", "rules.yaml:12", "value 'lots' does not fit leaf 'block'"),
    ("rule-value-out-of-range", RULES, "    value: 0.5\n", "    value: 1.5\n", "rules.yaml:20", "above the maximum"),
    ("rule-value-and-fn", RULES, "    value: 64\n", "    value: 64\n    fn: math:isqrt\n", "rules.yaml:8", "exactly one of 'value' or 'fn'"),
    ("rule-unknown-subject", RULES, "      backend: b\n", "      backnd: b\n", "rules.yaml:10", "condition on 'backnd'"),
    ("rule-unknown-fact", RULES, "      gpu.memory_bytes: {gte", "      gpu.memory: {gte", "rules.yaml:19", "does not match"),
    ("rule-bad-operator", RULES, "{contains: TinyForCausalLM}", "{has: TinyForCausalLM}", "rules.yaml:26", "is not valid under any of the given schemas"),
    ("rule-hardware-tests-model", RULES, "  ratio_for_tiny_models:\n    leaf: ratio\n", "  ratio_for_tiny_models:\n    leaf: ratio\n    layer: hardware\n", "rules.yaml:25", "a hardware rule cannot test model facts"),
    ("rule-sets-secret", RULES, "    leaf: ratio\n    when:\n      gpu", "    leaf: token\n    when:\n      gpu", "rules.yaml:17", "rules cannot set secrets"),
    ("preset-unknown-leaf", PRESETS, "      width: 8\n", "      widht: 8\n", "presets.yaml:5", "unknown leaf 'widht'"),
    ("preset-bad-value", PRESETS, "      width: 8\n", "      width: 0\n", "presets.yaml:5", "below the minimum"),
    ("preset-secret", PRESETS, "      width: 8\n", "      token: x\n", "presets.yaml:5", "presets cannot carry secrets"),
    ("settings-bad-version", "settings.yaml", 'version: "2.0"', "version: two", "settings.yaml:1", "does not match"),
    ("env-shared", CORE, "    env: TINY_WIDTH\n", "    env: TINY_NAME\n", "core.yaml:17", "TINY_NAME is also bound to leaf 'name'"),
    ("env-outside-prefix", CORE, "    env: TINY_WIDTH\n", "    env: OTHER_WIDTH\n", "core.yaml:17", "not under the prefix TINY_"),
    ("secret-hashed", CORE, "    secret: true\n", "    secret: true\n    hash: true\n", "core.yaml:29", "a secret leaf cannot be hashed"),
    ("secret-with-default", CORE, "    secret: true\n", "    secret: true\n", "core.yaml:26", "must default to null"),
    ("renamed-collides-with-leaf", CORE, "      - lanes\n", "      - loud\n", "core.yaml:18", "renamed_from 'loud' is also the name of leaf"),
    ("deprecated-use-unknown", CORE, "use: width, remove_in: \"3.0\"", "use: widht, remove_in: \"3.0\"", "core.yaml:97", "deprecated.use 'widht' is not another leaf"),
    ("deprecated-removed-before-since", CORE, 'since: "1.5", use: width, remove_in: "3.0"', 'since: "1.5", use: width, remove_in: "1.0"', "core.yaml:97", "is not after since"),
    ("kind-unknown", CORE, "    kind: memory\n", "    kind: speed\n", "core.yaml:56", "'speed' is not one of"),
]


def _mutate(schema: Path, name: str, file: str, old: str, new: str) -> None:
    path = schema / file
    text = path.read_text()
    if name == "secret-with-default":
        text = text.replace("  token:\n    type: optional str\n    default: null\n",
                            "  token:\n    type: optional str\n    default: hunter2\n")
    assert old in text, f"case {name}: fixture text {old!r} not found"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_resolution_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, ...]) -> None:
    name, file, old, new, where, message = case
    schema = copy_case("layers", tmp_path)
    _mutate(schema, name, file, old, new)
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if where in line and message in line]
    assert lines, f"no error at {where} mentions {message!r}:\n{err}"
    assert all("->" in line for line in lines), "every error says what to do"
    assert not (tmp_path / "out").exists()


def test_rule_and_preset_errors_come_out_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("layers", tmp_path)
    for file, old, new in ((RULES, "    leaf: block\n    fn:", "    leaf: blok\n    fn:"),
                           (PRESETS, "      width: 8\n", "      width: 0\n"),
                           (CORE, "    env: TINY_WIDTH\n", "    env: TINY_NAME\n")):
        (schema / file).write_text((schema / file).read_text().replace(old, new, 1))
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "3 schema error(s)" in err
    assert "rules.yaml:3" in err and "presets.yaml:5" in err and "core.yaml:17" in err
