"""A catalogue of bad schemas: each must fail with exit code 2, a message naming the file,
line and leaf, and leave the output folder byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest
from genutil import copy_case, generate, snapshot

CORE = "namespaces/core.yaml"
TUNE = "namespaces/core.tune.yaml"

# (id, file, old text, new text, expected "file:line", expected leaf or None, message part)
CASES = [
    ("yaml-syntax", CORE, "  width:\n    type: int", "  width:\n    type: [int", "core.yaml:6", None, "YAML error"),
    ("duplicate-key", CORE, "    default: 2\n", "    default: 2\n    default: 3\n", "core.yaml:7", None, "duplicate key 'default'"),
    ("missing-help", CORE, "    help: How many lanes run side by side.\n", "", "core.yaml:4", "width", "'help' is a required property"),
    ("typo-property", CORE, "    default: 2\n", "    defualt: 2\n", "core.yaml:4", "width", "defualt"),
    ("bad-type", CORE, "    type: int\n    default: 2", "    type: integer\n    default: 2", "core.yaml:5", "width", "does not match"),
    ("bad-policy", CORE, "    override: startup\n\n  name:", "    override: sometimes\n\n  name:", "core.yaml:12", "width", "'sometimes' is not one of"),
    ("default-and-required", CORE, "    required: true\n", "    required: true\n    default: x\n", "core.yaml:14", "name", "exactly one of 'default' or 'required: true'"),
    ("file-name-mismatch", CORE, "namespace: core\n", "namespace: kernel\n", "core.yaml:1", None, "is named core.yaml"),
    ("missing-parent", None, None, None, "core.tune.yaml:1", None, "has no parent namespace file"),
    ("duplicate-leaf", TUNE, "  mode:\n", "  width:\n", "core.tune.yaml:4", "width", "duplicate leaf name"),
    ("leaf-collides-with-subnamespace", CORE, "  verbose:\n", "  tune:\n", "core.yaml:31", "tune", "collides with a sub-namespace"),
    ("keyword-name", CORE, "  verbose:\n", "  lambda:\n", "core.yaml:31", "lambda", "Python keyword"),
    ("reserved-name", CORE, "  verbose:\n", "  config:\n", "core.yaml:31", "config", "reserved"),
    ("unknown-owner", CORE, "    owner: worker\n", "    owner: janitor\n", "core.yaml:28", "ratio", "owner 'janitor' is not a role"),
    ("default-wrong-type", CORE, "    default: 2\n", "    default: two\n", "core.yaml:6", "width", "default 'two' is invalid"),
    ("default-not-a-choice", TUNE, "    default: fast\n", "    default: slow\n", "core.tune.yaml:6", "mode", "not one of the choices"),
    ("default-below-min", CORE, "    default: 2\n", "    default: 0\n", "core.yaml:6", "width", "below the minimum 1"),
    ("unknown-property", CORE, "    max: 1.0\n", "    max: 1.0\n    default_ignored: 1\n", "core.yaml:21", "ratio", "default_ignored"),
    ("default-above-max", CORE, "    min: 1\n    help: How many", "    min: 1\n    max: 1\n    help: How many", "core.yaml:6", "width", "above the maximum 1"),
    ("non-finite-bound", CORE, "    max: 1.0\n", "    max: .nan\n", "core.yaml:26", "ratio", "max nan is not a finite number"),
    ("non-string-key", CORE, "  verbose:\n", "  true:\n", "core.yaml:31", None, "key True is a bool, not a name; quote it"),
    ("leaf-named-replace", CORE, "  verbose:\n", "  replace:\n", "core.yaml:31", "replace", "reserved"),
    ("leaf-named-self", CORE, "  verbose:\n", "  self:\n", "core.yaml:31", "self", "reserved"),
    ("leaf-named-dict", CORE, "  verbose:\n", "  dict:\n", "core.yaml:31", "dict", "reserved"),
    ("keyword-namespace-part", None, None, None, "core.class.yaml:1", None, "is a Python keyword"),
    ("leaf-named-like-a-door-route", CORE, "  verbose:\n", "  contracts:\n", "core.yaml:31", "contracts", "GET /config/contracts serves the door's own document"),
    ("leaf-named-attrs", CORE, "  verbose:\n", "  attrs:\n", "core.yaml:31", "attrs", "reserved"),
    ("reserved-namespace", CORE, "namespace: core\n", "namespace: context\n", "context.yaml:1", None, "would shadow a generated name"),
    ("class-name-clash", None, None, None, "core_tune.yaml:1", None, "gets class name CoreTune, as does namespace 'core.tune'"),
    ("choice-wrong-type", TUNE, "    choices: [fast, safe]\n", "    choices: [fast, 3]\n", "core.tune.yaml:7", "mode", "choice 3 does not fit"),
    ("min-greater-than-max", CORE, "    min: 0.0\n    max: 1.0\n", "    min: 1.0\n    max: 0.5\n", "core.yaml:26", "ratio", "greater than max"),
    ("min-on-string", TUNE, "    choices: [fast, safe]\n", "    choices: [fast, safe]\n    min: 1\n", "core.tune.yaml:5", "mode", "min/max only apply to numeric"),
    ("fallback-with-default", CORE, "    default: null\n    fallback: 0.5\n", "    default: 0.3\n    fallback: 0.5\n", "core.yaml:24", "ratio", "only allowed with `default: null`"),
    ("fallback-not-optional", CORE, "    type: optional float\n    default: null\n", "    type: float\n    default: null\n", "core.yaml:23", "ratio", "default None is invalid"),
    ("fallback-out-of-range", CORE, "    fallback: 0.5\n", "    fallback: 5.0\n", "core.yaml:24", "ratio", "above the maximum"),
    # a fallback on a secret would be a constant key, shown in CONFIG.md and --help, that the door accepts
    ("fallback-on-secret", CORE, "    fallback: 0.5\n", "    fallback: 0.5\n    secret: true\n", "core.yaml:24", "ratio", "a secret leaf cannot have a fallback"),
    ("fallback-not-scalar", CORE, "    fallback: 0.5\n", "    fallback: [0.5]\n", "core.yaml:24", "ratio", "is not of type"),
    ("capacity-missing", TUNE, "    capacity: width\n", "    capacity: widht\n", "core.tune.yaml:41", "budget", "capacity 'widht' is not a leaf"),
    ("capacity-not-numeric", TUNE, "    capacity: width\n", "    capacity: verbose\n", "core.tune.yaml:41", "budget", "capacity 'verbose' is not numeric"),
    ("capacity-secret", CORE, "    min: 1\n    help: How many lanes", "    min: 1\n    secret: true\n    help: How many lanes", "core.tune.yaml:41", "budget", "capacity 'width' is a secret leaf"),
    # `$` of a name pattern must not match before a final newline (Python's re.search does)
    ("leaf-name-newline", CORE, "  verbose:\n", '  "verbose\\n":\n', "core.yaml:31", "verbose\n", "does not match"),
    ("flag-newline", TUNE, "  mode:\n    type: str\n", '  mode:\n    cli: {flag: "--mode\\n"}\n    type: str\n', "core.tune.yaml:5", "mode", "is not valid under any"),
    ("alias-newline", CORE, "aliases: [--lanes]", 'aliases: ["--lanes\\n"]', "core.yaml:9", "width", "is not valid under any"),
    ("env-newline", TUNE, "  mode:\n    type: str\n", '  mode:\n    env: "MODE\\n"\n    type: str\n', "core.tune.yaml:5", "mode", "does not match"),
    # free text (help, doc, reasons) and values reach --help, CONFIG.md and generated code as they are
    ("help-escape-sequence", CORE, "    help: How many lanes run side by side.\n", '    help: "lanes \\e[31mRED\\e]0;TITLE\\a"\n', "core.yaml:8", "width", "U+001B (ESCAPE) at character 7"),
    ("help-bidi-override", CORE, "    help: Print more.\n", '    help: "Print \\u202emore"\n', "core.yaml:34", "verbose", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("help-line-separator", CORE, "    help: Print more.\n", '    help: "Print\\u2028more"\n', "core.yaml:34", "verbose", "U+2028 (LINE SEPARATOR)"),
    ("help-carriage-return", CORE, "    help: Print more.\n", '    help: "Print\\rmore"\n', "core.yaml:34", "verbose", "U+000D"),
    ("derived-help-zero-width", CORE, "    help: Integer square root of the width.", '    help: "Integer\\u200bsquare root"', "core.yaml:44", "width_root", "U+200B (ZERO WIDTH SPACE)"),
    ("namespace-doc-bel", CORE, "doc: Core sizes of a tiny server.", 'doc: "Core sizes\\a"', "core.yaml:2", None, "U+0007"),
    ("choice-escape", TUNE, "    choices: [fast, safe]\n", '    choices: [fast, "safe\\e[8m"]\n', "core.tune.yaml:7", "mode", "U+001B (ESCAPE)"),
    ("role-doc-bidi", "roles.yaml", "    doc: Does the work.\n", '    doc: "Does the \\u2066work"\n', "roles.yaml:6", None, "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
    ("audit-decision-escape", "roles.yaml", "        decision: keep\n", '        decision: "keep\\e[2J"\n', "roles.yaml:13", None, "U+001B (ESCAPE)"),
    ("allowlist-reason-escape", "ratchet.yaml", 'reason: "kept raw for the demo"', 'reason: "kept raw\\e[1A"', "ratchet.yaml:8", None, "U+001B (ESCAPE)"),
    ("flag-zero-width", TUNE, "  mode:\n    type: str\n", '  mode:\n    cli: {flag: "--mo\\u200bde"}\n    type: str\n', "core.tune.yaml:5", "mode", "U+200B"),
    ("capacity-on-startup-leaf", TUNE, "    capacity: width\n    owner: boss\n    override: runtime\n", "    capacity: width\n    owner: boss\n    override: startup\n", "core.tune.yaml:41", "budget", "`override: startup`"),
    ("derived-unknown-input", CORE, "    inputs: [width]\n", "    inputs: [widht]\n", "core.yaml:40", "width_root", "unknown derived input 'widht'"),
    ("derived-module-missing", CORE, "    fn: math:isqrt\n", "    fn: no_such_module:f\n", "core.yaml:40", "width_root", "cannot import module 'no_such_module'"),
    ("derived-function-missing", CORE, "    fn: math:isqrt\n", "    fn: math:no_such_function\n", "core.yaml:40", "width_root", "has no function 'no_such_function'"),
    ("derived-cycle", CORE, "    inputs: [width]\n", "    inputs: [width_root]\n", "core.yaml:40", "width_root", "cycle"),
    ("duplicate-flag", TUNE, "  mode:\n    type: str\n", "  mode:\n    cli: {flag: --lanes}\n    type: str\n", "core.yaml:9", "width", "--lanes is also used by leaf 'mode'"),
    ("bool-no-twin-clash", TUNE, "  mode:\n    type: str\n", "  mode:\n    cli: {flag: --no-verbose}\n    type: str\n", "core.tune.yaml:5", "mode", "--no-verbose"),
    ("reserved-flag", TUNE, "  mode:\n    type: str\n", "  mode:\n    cli: {flag: --config}\n    type: str\n", "core.tune.yaml:5", "mode", "--config is reserved"),
    ("role-reads-unknown-namespace", "roles.yaml", "    reads: [core]\n", "    reads: [core, kernel]\n", "roles.yaml:7", None, "reads unknown namespace 'kernel'"),
    ("write-any-on-another-role", "roles.yaml", "    reads: [core]\n", "    reads: [core]\n    write_any: true\n", "roles.yaml:8", None, "role 'worker' has `write_any: true`, which only the 'test' role may have"),
    ("audit-unknown-namespace", "roles.yaml", "        observed: [core]\n", "        observed: [cor]\n", "roles.yaml:11", None, "observed unknown namespace 'cor'"),
    ("allowlist-without-reason", "ratchet.yaml", ', reason: "kept raw for the demo"}', "}", "ratchet.yaml:8", None, "'reason' is a required property"),
    ("allowlist-bad-leaf-name", "ratchet.yaml", "leaf: width,", "leaf: 'width size',", "ratchet.yaml:8", None, "does not match"),
    ("missing-roles-file", None, None, None, "roles.yaml:1", None, "roles.yaml is missing"),
    ("writer-unknown-role", TUNE, "    help: Which trade-off to make.\n", "    help: Which trade-off to make.\n    writers: [janitor]\n", "core.tune.yaml:9", "mode", "writer 'janitor' is not a role"),
    ("writer-is-owner", TUNE, "    help: Which trade-off to make.\n", "    help: Which trade-off to make.\n    writers: [boss]\n", "core.tune.yaml:9", "mode", "writer 'boss' is the owner"),
    ("const-not-a-choice", TUNE, "cli: {const: high}", "cli: {const: medium}", "core.tune.yaml:57", "level", "const 'medium' is invalid"),
    ("const-wrong-type", TUNE, "const: 3, nargs: 0}", "const: many, nargs: 0}", "core.tune.yaml:74", "skip", "const 'many' is invalid"),
    ("alias-equal-to-flag", CORE, "aliases: [--lanes]", "aliases: [--lanes, --width]", "core.yaml:9", "width", "CLI flag --width is spelled twice"),
    ("alias-equal-to-no-twin", CORE, "    help: Print more.\n", "    help: Print more.\n    cli: {aliases: [--no-verbose]}\n", "core.yaml:35", "verbose", "CLI flag --no-verbose is spelled twice"),
    ("nargs-float-zero", TUNE, "const: 3, nargs: 0}", "const: 3, nargs: 0.0}", "core.tune.yaml:74", "skip", "nargs 0.0 is not an integer"),
    ("const-below-min", TUNE, "const: 3, nargs: 0}", "const: -1, nargs: 0}", "core.tune.yaml:74", "skip", "below the minimum 0"),
    ("const-null-not-optional", TUNE, "const: 3, nargs: 0}", "const: null, nargs: 0}", "core.tune.yaml:74", "skip", "const None is invalid"),
    ("const-on-list", TUNE, 'cli: {nargs: "*"}', 'cli: {nargs: "*", const: a}', "core.tune.yaml:65", "labels", "const needs a scalar"),
    ("const-on-bool", CORE, "    help: Print more.\n", "    help: Print more.\n    cli: {const: true}\n", "core.yaml:35", "verbose", "const on a bool leaf"),
    ("const-on-secret", TUNE, "    cli: {const: high}\n", "    cli: {const: high}\n    secret: true\n", "core.tune.yaml:57", "level", "a secret leaf cannot have a const"),
    ("nargs-star-on-scalar", TUNE, "cli: {const: high}", 'cli: {nargs: "*"}', "core.tune.yaml:57", "level", "takes several values"),
    ("nargs-zero-without-const", TUNE, "const: 3, nargs: 0}", "nargs: 0}", "core.tune.yaml:74", "skip", "no `const`"),
    ("nargs-optional-on-list", TUNE, 'cli: {nargs: "*"}', 'cli: {nargs: "?"}', "core.tune.yaml:65", "labels", "does not fit a list leaf"),
    ("nargs-unknown", TUNE, 'cli: {nargs: "*"}', "cli: {nargs: 2}", "core.tune.yaml:65", "labels", "nargs"),
    ("writers-on-startup-leaf", TUNE, "    help: Batch sizes to prepare.\n", "    help: Batch sizes to prepare.\n    writers: [worker]\n", "core.tune.yaml:18", "sizes", "`override: startup`"),
]


def _mutate(schema: Path, case: tuple[str, str | None, str | None, str | None, str, str | None, str]) -> None:
    name, file, old, new = case[:4]
    if name == "missing-parent":
        (schema / CORE).unlink()
        return
    if name == "missing-roles-file":
        (schema / "roles.yaml").unlink()
        return
    if name == "reserved-namespace":
        (schema / CORE).rename(schema / "namespaces" / "context.yaml")
        (schema / TUNE).unlink()
        (schema / "roles.yaml").write_text((schema / "roles.yaml").read_text().replace("[core]", "[context]"))
        (schema / "ratchet.yaml").unlink()
        file, old, new = "namespaces/context.yaml", "namespace: core\n", "namespace: context\n"
    if name == "keyword-namespace-part":
        text = (schema / TUNE).read_text().replace("namespace: core.tune", "namespace: core.class")
        (schema / TUNE).unlink()
        (schema / "namespaces" / "core.class.yaml").write_text(text)
        return
    if name == "class-name-clash":
        clash = (schema / TUNE).read_text().replace("namespace: core.tune", "namespace: core_tune")
        (schema / "namespaces" / "core_tune.yaml").write_text(clash.replace("  mode:", "  mode2:", 1)
                                                              .replace("  sizes:", "  sizes2:").replace("  tags:", "  tags2:")
                                                              .replace("  extra:", "  extra2:").replace("  budget:", "  budget2:")
                                                              .replace("--lanes", "--lanes2"))
        return
    assert file
    assert old is not None
    assert new is not None
    path = schema / file
    text = path.read_text()
    assert old in text, f"case {name}: fixture text {old!r} not found"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_schema_is_reported_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple) -> None:  # type: ignore[type-arg]
    schema = tmp_path / "schema"
    copy_case("tiny", tmp_path)
    out = tmp_path / "generated"
    assert generate(schema, out) == 0
    before = snapshot(out)
    capsys.readouterr()

    _mutate(schema, case)
    assert generate(schema, out) == 2
    err = capsys.readouterr().err
    _, _, _, _, where, leaf, message = case
    assert "nothing was written" in err
    lines = [line for line in err.splitlines() if where in line]
    assert lines, f"no error at {where}:\n{err}"
    matching = [line for line in lines if message in line]
    assert matching, f"no error at {where} mentions {message!r}:\n{err}"
    if leaf is not None:
        assert any(f"leaf {leaf!r}" in line for line in matching), err
    assert all("->" in line for line in matching), "every error says what to do"
    assert snapshot(out) == before


def test_catalogue_is_large_and_distinct() -> None:
    assert len(CASES) >= 25
    assert len({c[0] for c in CASES}) == len(CASES)


def test_all_errors_come_out_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    core = schema / CORE
    core.write_text(core.read_text().replace("    default: 2\n", "    default: 0\n").replace("owner: worker", "owner: nobody"))
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "2 schema error(s)" in err
    assert "below the minimum" in err
    assert "'nobody' is not a role" in err
    assert not (tmp_path / "out").exists()


# -- structural mistakes stay local: no cascade into other files, no hidden errors -------

def _errors(schema: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert generate(schema, tmp_path / "out") == 2
    return [line.strip() for line in capsys.readouterr().err.splitlines()[1:]]


def test_a_misspelled_key_is_one_error_with_a_suggestion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    core = schema / CORE
    core.write_text(core.read_text().replace("    help: How many lanes", "    hlep: How many lanes"))
    errors = _errors(schema, tmp_path, capsys)
    assert len(errors) == 1, errors
    assert "core.yaml:4" in errors[0] and "unknown key 'hlep' (did you mean 'help'?)" in errors[0]


def test_a_broken_leaf_hides_neither_the_files_other_errors_nor_causes_new_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = copy_case("tiny", tmp_path)
    core = schema / CORE
    # width is misspelled (and feeds the derived width_root); ratio's fallback breaks its max
    text = core.read_text().replace("    help: How many lanes", "    hlep: How many lanes")
    core.write_text(text.replace("    fallback: 0.5\n", "    fallback: 5.0\n"))
    errors = _errors(schema, tmp_path, capsys)
    assert any("'hlep'" in e for e in errors), errors
    assert any("fallback 5.0 is invalid" in e and "leaf 'ratio'" in e for e in errors), errors
    assert not any("width_root" in e or "roles.yaml" in e for e in errors), errors
    assert len(errors) == 2, errors


def test_broken_yaml_does_not_cascade_into_roles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    core = schema / CORE
    core.write_text(core.read_text().replace("  width:\n    type: int", "  width:\n    type: [int"))
    errors = _errors(schema, tmp_path, capsys)
    assert len(errors) == 1 and "YAML error" in errors[0], errors


def test_a_leaf_appended_after_ranks_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    tune = schema / TUNE
    tune.write_text(tune.read_text().rstrip("\n") + "\nranks:\n  lane_rank:\n    help: Which lane.\n"
                    "  extra:\n    type: int\n    default: 1\n    help: x\n    owner: boss\n    override: startup\n")
    errors = _errors(schema, tmp_path, capsys)
    assert len(errors) == 1, errors
    assert "ranks.extra looks like a leaf" in errors[0] and "move it under `leaves:`" in errors[0]


def test_a_missing_schema_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(tmp_path / "nope", tmp_path / "out") == 2
    assert "schema folder" in capsys.readouterr().err and "does not exist" in capsys.readouterr().err + "does not exist"


def test_a_derived_value_or_a_rule_reading_a_secret_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A derived value of a secret is shown in clear by every readback and enters the config
    hash (an offline oracle for the key); a rule's value is the same. gen refuses both."""
    schema = copy_case("tiny", tmp_path)
    core = schema / "namespaces" / "core.yaml"
    text = core.read_text().replace("    required: true\n    help: What the server is called.",
                                    "    required: true\n    secret: true\n    help: What the server is called.")
    core.write_text(text.replace("derived:\n", "derived:\n  name_echo:\n    type: str\n    fn: builtins:str\n"
                                               "    inputs: [name]\n    help: The name again.\n", 1))
    (schema / "rules.yaml").write_text("rules:\n  wide_for_named:\n    leaf: width\n    when:\n      name: x\n"
                                       "    value: 4\n    help: w\n")
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "derived value 'name_echo' reads the secret name" in err
    assert "rule wide_for_named: reads the secret name" in err


def test_a_secret_with_choices_is_refused_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's "invalid choice: 'VALUE'" would print a mistyped key in clear on stderr
    (and in a launcher's log), and the choices would be the secret's values."""
    schema = copy_case("tiny", tmp_path)
    core = schema / "namespaces" / "core.yaml"
    core.write_text(core.read_text().replace(
        "  verbose:\n", "  pin:\n    type: optional str\n    default: null\n    secret: true\n    choices: [a, b]\n"
                       "    help: A pin.\n    owner: boss\n    override: startup\n\n  verbose:\n", 1))
    assert generate(schema, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "core.yaml:" in err and "a secret leaf cannot have choices" in err and "pin" in err
    assert not (tmp_path / "out").exists()


def test_plain_unicode_and_line_feeds_in_help_are_kept(tmp_path: Path) -> None:
    """Accents, CJK and a help over two lines are text, not a hazard: generated as written."""
    schema = tmp_path / "schema"
    copy_case("tiny", tmp_path)
    core = schema / CORE
    core.write_text(core.read_text().replace("    help: Print more.\n", '    help: "Print more:\\ncafé, 中文."\n', 1))
    out = tmp_path / "generated"
    assert generate(schema, out) == 0
    assert "Print more:<br>café, 中文." in (out / "CONFIG.md").read_text()
    assert '"""Print more:\ncafé, 中文."""' in (out / "bags.py").read_text()
