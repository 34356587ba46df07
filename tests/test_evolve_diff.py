"""`configbags diff`: one case folder per rule (tests/fixtures/evolve/diff/<rule>/{old,new}),
whose NEW files mark each expected finding on its line as `# <- RULE (SEVERITY)`; the
rule fires there with that severity and no other rule fires. Then the command: formats,
exit codes, the allow file, the CONFIG.md section, git revisions and the view cache."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from configbags.evolve import diff
from configbags.evolve.diff import compare
from configbags.evolve.report import workspace_path
from configbags.evolve.rules import DIFF_RULES, RULES
from configbags.evolve.view import load_view

CASES = Path(__file__).parent / "fixtures" / "evolve" / "diff"
MARK = re.compile(r"# <- ([a-z-]+) \((breaking|warning|info)\)")


def _marks(folder: Path) -> set[tuple[str, str, str, int]]:
    found = set()
    for path in sorted(folder.rglob("*.yaml")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for rule, severity in MARK.findall(line):
                found.add((rule, severity, path.as_posix(), number))
    return found


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()))
def test_each_rule_fires_alone_at_its_line(case: str) -> None:
    old = load_view(CASES / case / "old", cache=False)
    new = load_view(CASES / case / "new", cache=False)
    found = {(f.rule, f.severity.value, f.file, f.line) for f in compare(old, new)}
    expected = _marks(CASES / case / "new")
    assert case in {rule for rule, *_ in expected}, f"case {case} marks no finding of its own rule"
    assert found == expected


def test_every_diff_rule_has_a_case_folder() -> None:
    assert sorted(r.id for r in DIFF_RULES) == sorted(p.name for p in CASES.iterdir())


def test_a_schema_compared_with_itself_has_no_findings() -> None:
    view = load_view(Path(__file__).parent.parent / "schema", cache=False)
    assert compare(view, view) == []


def _copy(case: str, side: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(CASES / case / side, tmp_path / side))


def test_the_exit_code_follows_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = (str(CASES / "default-changed" / s) for s in ("old", "new"))  # one warning
    assert diff.main([old, new, "--no-cache"]) == 0
    assert "default-changed" in capsys.readouterr().out
    assert diff.main([old, new, "--no-cache", "--fail-on", "warning"]) == 1
    assert diff.main([old, new, "--no-cache", "--fail-on", "never"]) == 0
    breaking = [str(CASES / "leaf-removed" / s) for s in ("old", "new")]
    assert diff.main([*breaking, "--no-cache"]) == 1


def test_a_spelling_that_fails_from_the_new_version_on_fails_ci(capsys: pytest.CaptureFixture[str]) -> None:
    """A deprecation added past its remove_in, and a version bump onto one, make every launch
    that sets the leaf fail: breaking, so the default --fail-on exits 1 (it was 0)."""
    old, new = (str(CASES / "remove-in-reached" / s) for s in ("old", "new"))
    assert diff.main([old, new, "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "leaf 'queue_timeout' fails from version 2.0 on (its remove_in is 1.8; its deprecation" in out
    assert "leaf 'old_knob' fails from version 2.0 on (its remove_in is 2.0; version 1.9 accepted it)" in out
    past = [str(CASES / "deprecated-past-remove-in" / s) for s in ("old", "new")]  # failed already: clutter
    assert diff.main([*past, "--no-cache"]) == 0


def test_json_names_rule_severity_audience_and_place(capsys: pytest.CaptureFixture[str]) -> None:
    old, new = (str(CASES / "secret-dropped" / s) for s in ("old", "new"))
    diff.main([old, new, "--no-cache", "--json"])
    data = json.loads(capsys.readouterr().out)
    [finding] = data["findings"]
    assert finding["rule"] == "secret-dropped" and finding["severity"] == "breaking"
    assert finding["breaks"] == ["security"] and finding["subject"] == "api_key"
    assert finding["file"] == f"{new}/namespaces/serving.yaml" and finding["line"] == 42
    assert data["old_version"] == data["new_version"] == "1.0"


def test_github_annotations_and_sarif_point_at_the_new_file(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = (str(CASES / "min-raised" / s) for s in ("old", "new"))
    # GitHub places an annotation by the file's path inside the checkout, never an absolute one
    monkeypatch.setenv("GITHUB_WORKSPACE", str(CASES.parent))
    shown = f"{CASES.name}/min-raised/new/namespaces/serving.yaml"
    diff.main([old, new, "--no-cache", "--format", "github"])
    out = capsys.readouterr().out
    assert out.startswith(f"::error file={shown},line=7,title=min-raised (breaking%2C breaks")
    assert "raised from 1024 to 2048" in out
    diff.main([old, new, "--no-cache", "--format", "sarif"])
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0"
    [result] = log["runs"][0]["results"]
    assert result["ruleId"] == "min-raised" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": shown}, "region": {"startLine": 7}}
    assert "informationUri" not in log["runs"][0]["tool"]["driver"]  # no page exists to point at
    rule_ids = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rule_ids == {r.id for r in DIFF_RULES}


def test_annotation_paths_are_checkout_relative(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    assert workspace_path(str(tmp_path / "schema" / "namespaces" / "a.yaml")) == "schema/namespaces/a.yaml"
    assert workspace_path("HEAD~1:schema/roles.yaml") == "schema/roles.yaml"  # a revision's side
    assert workspace_path("/elsewhere/roles.yaml") == "/elsewhere/roles.yaml"  # outside: left as given
    assert workspace_path("schema/roles.yaml") == "schema/roles.yaml"


def test_a_likely_rename_is_a_suggestion_never_a_silent_rename() -> None:
    old = load_view(CASES / "likely-rename" / "old", cache=False)
    new = load_view(CASES / "likely-rename" / "new", cache=False)
    by_rule = {f.rule: f for f in compare(old, new)}
    assert by_rule["leaf-removed"].severity.value == "breaking"  # still a removal
    assert "renamed_from: [stats_every]" in by_rule["likely-rename"].fix


def test_the_allow_file_covers_a_break_and_goes_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = str(CASES / "leaf-removed" / "old")
    new = _copy("leaf-removed", "new", tmp_path)
    (new / "diff-allow.yaml").write_text(
        "allow:\n  - {rule: leaf-removed, subject: stats_every, reason: nobody set it, release: '1.0'}\n")
    assert diff.main([old, str(new), "--no-cache"]) == 0
    assert "(allowed)" in capsys.readouterr().out
    stale = tmp_path / "stale.yaml"
    stale.write_text("allow:\n  - {rule: flag-removed, subject: --gone, reason: old, release: '0.9'}\n")
    assert diff.main([old, str(new), "--no-cache", "--allow", str(stale), "--fail-on", "never"]) == 1
    assert "allow entry 1 (flag-removed '--gone') matches no change; remove it" in capsys.readouterr().err
    incomplete = tmp_path / "incomplete.yaml"
    incomplete.write_text("allow:\n  - {rule: leaf-removed, subject: stats_every}\n")
    assert diff.main([old, str(new), "--no-cache", "--allow", str(incomplete)]) == 2
    assert "lacks reason, release" in capsys.readouterr().err


def test_changes_md_section_is_written_and_replaced(tmp_path: Path) -> None:
    md = tmp_path / "CONFIG.md"
    md.write_text("# Config\n\nreference\n")
    for case in ("min-raised", "max-lowered"):
        old, new = (str(CASES / case / s) for s in ("old", "new"))
        diff.main([old, new, "--no-cache", "--fail-on", "never", "--changes-md", str(md)])
    text = md.read_text()
    assert text.startswith("# Config\n\nreference\n\n")
    assert text.count(diff.MD_BEGIN) == 1 and "`max-lowered`" in text and "`min-raised`" not in text
    assert f"## Changes since {CASES / 'max-lowered' / 'old'}" in text  # OLD as given


def test_a_schema_value_holding_the_end_marker_cannot_end_the_section(tmp_path: Path) -> None:
    old = _copy("default-changed", "old", tmp_path)
    new = _copy("default-changed", "new", tmp_path)
    serving = new / "namespaces" / "serving.yaml"
    text = serving.read_text()
    name = "  served_name:\n    type: optional str\n    default: null\n"
    assert name in text
    serving.write_text(text.replace(name, name.replace("null", f'"x {diff.MD_END} USER TEXT AFTER"')))
    md = tmp_path / "CONFIG.md"
    md.write_text("# Doc\nkeep me\n")
    assert diff.main([str(old), str(new), "--no-cache", "--fail-on", "never", "--changes-md", str(md)]) == 0
    assert md.read_text().count(diff.MD_END) == 1
    with md.open("a") as f:
        f.write("tail line that must stay\n")
    same = CASES / "min-raised"
    diff.main([str(same / "old"), str(same / "new"), "--no-cache", "--fail-on", "never", "--changes-md", str(md)])
    text = md.read_text()
    assert text.count(diff.MD_END) == 1 and text.count(diff.MD_BEGIN) == 1
    assert "USER TEXT AFTER" not in text and text.endswith("tail line that must stay\n")
    assert text.startswith("# Doc\nkeep me\n")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


def test_against_a_git_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(CASES / "flag-removed" / "old", repo / "schema")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "old")
    shutil.rmtree(repo / "schema")
    shutil.copytree(CASES / "flag-removed" / "new", repo / "schema")
    _git(repo, "commit", "-qam", "new")
    (repo / "pyproject.toml").write_text("[tool.configbags]\nschema = \"schema\"\n")
    monkeypatch.chdir(repo)
    assert diff.main(["--against", "HEAD~1", "--no-cache", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["old"] == "HEAD~1:schema" and data["new"] == "schema"
    [finding] = data["findings"]
    assert (finding["rule"], finding["subject"], finding["file"], finding["line"]) == (
        "flag-removed", "--listen-port", "schema/namespaces/serving.yaml", 10)
    # two revisions of the project's schema, and REV:PATH
    assert diff.main(["HEAD~1", "HEAD", "--no-cache", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["findings"][0]["file"] == "HEAD:schema/namespaces/serving.yaml"
    assert diff.main(["HEAD~1:schema", "HEAD:schema", "--no-cache", "--fail-on", "never"]) == 0
    assert diff.main(["no-such-rev", "--no-cache"]) == 2
    assert "neither a schema folder nor a git revision" in capsys.readouterr().err


def test_the_view_cache_gives_the_same_view(tmp_path: Path) -> None:
    folder = CASES / "namespace-moved" / "new"
    fresh = load_view(folder, cache=False)
    stored = load_view(folder, cache_dir=tmp_path)
    assert list(tmp_path.iterdir())
    again = load_view(folder, cache_dir=tmp_path)
    assert again == fresh == stored
    assert again.leaves["stats_every"].lines == fresh.leaves["stats_every"].lines
    (next(tmp_path.iterdir())).write_text("{not json")  # a doubtful entry is ignored
    assert load_view(folder, cache_dir=tmp_path) == fresh


def test_rule_ids_are_stable_words() -> None:
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", rid) for rid in RULES)


def test_the_docs_list_every_rule_with_its_severity_and_audience() -> None:
    text = (Path(__file__).parent.parent / "docs" / "EVOLVE.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)` \| (\w+) \| ([^|]+) \|", text, re.MULTILINE)
    documented = {rid: (severity, breaks.strip()) for rid, severity, breaks in rows}
    assert documented == {r.id: (r.severity.value, ", ".join(map(str, r.breaks)) or "-") for r in RULES.values()}


def test_a_schema_that_does_not_load_is_refused_with_its_errors(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    new = _copy("leaf-added", "new", tmp_path)
    serving = new / "namespaces" / "serving.yaml"
    serving.write_text(serving.read_text().replace("    owner: worker\n", "    owner: nobody\n", 1))
    assert diff.main([str(CASES / "leaf-added" / "old"), str(new), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "a schema does not load" in err and "owner 'nobody' is not a role in roles.yaml" in err


def test_write_any_given_to_a_role_is_refused_not_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `write_any` outside the test role would close every write of the role (acting_as
    # admits it only in a test scope): diff must not call the change "no findings"
    new = _copy("leaf-added", "new", tmp_path)
    roles = new / "roles.yaml"
    roles.write_text(roles.read_text().replace("    reads: [serving]\n", "    reads: [serving]\n    write_any: true\n", 1))
    assert diff.main([str(CASES / "leaf-added" / "old"), str(new), "--no-cache", "--fail-on", "info"]) == 2
    err = capsys.readouterr().err
    assert "roles.yaml:8" in err and "role 'worker' has `write_any: true`" in err and "writers:" in err


def test_the_view_cache_keeps_the_newest_entries(tmp_path: Path) -> None:
    from configbags.evolve import view

    folder = Path(shutil.copytree(CASES / "leaf-added" / "old", tmp_path / "schema"))
    cache = tmp_path / "cache"
    serving = folder / "namespaces" / "serving.yaml"
    text = serving.read_text()
    for n in range(view.CACHE_ENTRIES + 3):
        serving.write_text(f"{text}# edit {n}\n")  # each edit a new digest, so a new entry
        load_view(folder, cache_dir=cache)
    assert len(list(cache.glob("*.json"))) == view.CACHE_ENTRIES


def _edited(tmp_path: Path, old: str, new: str) -> list[tuple[str, str, int]]:
    """The findings of one text edit of the base schema's serving.yaml: (rule, subject, line)."""
    base = CASES / "leaf-added" / "old"
    edited = Path(shutil.copytree(base, tmp_path / "new"))
    serving = edited / "namespaces" / "serving.yaml"
    text = serving.read_text()
    assert old in text
    serving.write_text(text.replace(old, new, 1))
    found = compare(load_view(base, cache=False), load_view(edited, cache=False))
    return sorted((f.rule, f.subject, f.line) for f in found)


def test_an_old_spelling_dropped_before_its_remove_in(tmp_path: Path) -> None:
    renamed = '    renamed_from:\n      - {name: model_alias, since: "0.8", remove_in: "2.0"}\n'
    leaf_line = 49  # served_name's own line: NEW has no `renamed_from:` line left to point at
    assert _edited(tmp_path, renamed, "") == [("removed-early", "model_alias", leaf_line)]


def test_an_unrelated_type_breaks_operators_and_engine_code(tmp_path: Path) -> None:
    found = _edited(tmp_path, "    type: str\n    default: info\n    choices: [debug, info, warning]\n",
                    "    type: int\n    default: 1\n")
    assert [rule for rule, _, _ in found] == ["choices-added", "default-changed", "type-changed", "type-narrowed"]


def test_a_flag_renamed_without_renamed_from_is_a_removed_flag(tmp_path: Path) -> None:
    found = _edited(tmp_path, "    cli: {flag: --port, aliases: [--listen-port]}\n",
                    "    cli: {flag: --http-port, aliases: [--listen-port]}\n")
    assert found == [("flag-removed", "--port", 10)]


@pytest.mark.parametrize(("record", "table"), [
    ("configbags.runtime.registry:LeafSpec", diff.LEAF_PROPERTIES),
    ("configbags.codegen.model:Derived", diff.DERIVED_PROPERTIES),
    ("configbags.codegen.model:Rank", diff.RANK_PROPERTIES),
    ("configbags.codegen.model:Rule", diff.RULE_PROPERTIES),
    ("configbags.codegen.model:Settings", diff.SETTINGS_PROPERTIES),
])
def test_every_property_has_a_diff_rule_or_says_why_none(record: str, table: dict[str, object]) -> None:
    """A property added to a leaf, a derived value, a rank, a rule or settings.yaml without
    a rule that compares it (or a stated reason it changes nothing) fails here."""
    import importlib

    import attrs

    module, _, name = record.partition(":")
    fields = [f.name for f in attrs.fields(getattr(importlib.import_module(module), name))]
    assert sorted(fields) == sorted(table), f"{name}: give each field rules or a reason in configbags.evolve.diff"
    for prop, how in table.items():
        if isinstance(how, str):
            assert how.startswith(diff.NO_BEHAVIOUR) and len(how) > len(diff.NO_BEHAVIOUR) + 10, prop
        else:
            assert how and all(rule in RULES for rule in how), (prop, how)


BUNDLED = Path(__file__).parent.parent / "schema"


def _bundled_edit(tmp_path: Path, file: str, old: str, new: str) -> list[tuple[str, str, str]]:
    """The findings of one text edit of the bundled schema: (rule, subject, message)."""
    edited = Path(shutil.copytree(BUNDLED, tmp_path / "schema"))
    text = (edited / file).read_text()
    assert old in text, old
    (edited / file).write_text(text.replace(old, new, 1))
    found = compare(load_view(BUNDLED, cache=False), load_view(edited, cache=False))
    return sorted((f.rule, f.subject, f.message) for f in found)


def test_a_capacity_pointed_at_an_optional_leaf_is_breaking(tmp_path: Path) -> None:
    """The door's admin key may PATCH speculative_num_draft_tokens; bounded by a leaf that
    is unset by default, its overrides are unbounded."""
    [(rule, subject, message)] = _bundled_edit(tmp_path, "namespaces/spec.yaml",
                                               "    capacity: max_speculative_num_draft_tokens\n",
                                               "    capacity: max_running_requests\n")
    assert (rule, subject) == ("capacity-changed", "speculative_num_draft_tokens")
    assert "'max_running_requests' may be unset (null)" in message and "admin key may PATCH" in message
    assert "not by 'max_speculative_num_draft_tokens'" in message


def test_a_rank_removed_and_derived_inputs_reordered_are_reported(tmp_path: Path) -> None:
    """A rank is a bag attribute engine code reads; a derived value's fn takes its inputs
    positionally, so their order is its value."""
    gone = _bundled_edit(tmp_path / "a", "namespaces/parallel.yaml",
                         "  pp_rank:\n    help: Pipeline stage of this process (world_rank // tp_size).\n", "")
    assert [(rule, subject) for rule, subject, _ in gone] == [("attribute-removed", "pp_rank")]
    assert "rank parallel.pp_rank removed" in gone[0][2]
    [(rule, subject, message)] = _bundled_edit(tmp_path / "b", "namespaces/parallel.yaml",
                                               "    inputs: [tp_size, attn_dp_size, attn_cp_size]\n",
                                               "    inputs: [tp_size, attn_cp_size, attn_dp_size]\n")
    assert (rule, subject) == ("derived-changed", "attn_tp_size") and "inputs" in message


def test_rules_reordered_or_gaining_force_are_reported(tmp_path: Path) -> None:
    forced = _bundled_edit(tmp_path / "a", "rules.yaml", "    inputs: [gpu.memory_bytes]\n",
                           "    inputs: [gpu.memory_bytes]\n    force: sized by the GPU\n")
    assert [(rule, subject) for rule, subject, _ in forced] == [("rule-forced", "chunked_prefill_size_by_gpu_memory")]
    text = (BUNDLED / "rules.yaml").read_text()
    # two rules setting one leaf swapped: the later one wins, so the value changes
    block = text[text.index("  attention_backend_deepseek_v3:"):]
    names = re.findall(r"^  ([a-z0-9_]+):\n    leaf: attention_backend\n", block, re.MULTILINE)
    assert len(names) >= 2
    start_a, start_b = text.index(f"  {names[0]}:\n"), text.index(f"  {names[1]}:\n")
    end_b = start_b + text[start_b:].index("\n\n") + 2
    swapped = text[:start_a] + text[start_b:end_b] + text[start_a:start_b] + text[end_b:]
    edited = Path(shutil.copytree(BUNDLED, tmp_path / "b"))
    (edited / "rules.yaml").write_text(swapped)
    found = compare(load_view(BUNDLED, cache=False), load_view(edited, cache=False))
    assert [(f.rule, f.subject) for f in found] == [("rule-changed", names[1])], found
    assert "run in the order" in found[0].message


@pytest.mark.parametrize(("old", "new", "rule"), [
    ("    cli: {const: 64}\n", "", "flag-arity-narrowed"),  # the bare flag now expects a value
    ("    cli: {const: 64}\n", "    cli: {const: 64, nargs: 0}\n", "flag-arity-narrowed"),  # a value now refused
])
def test_what_a_flag_takes_is_compared(tmp_path: Path, old: str, new: str, rule: str) -> None:
    base = CASES / "const-changed" / "old"
    edited = Path(shutil.copytree(base, tmp_path / "new"))
    serving = edited / "namespaces" / "serving.yaml"
    text = serving.read_text()
    assert old in text
    serving.write_text(text.replace(old, new, 1))
    found = {f.rule for f in compare(load_view(base, cache=False), load_view(edited, cache=False))}
    assert rule in found, found


def test_a_list_flag_that_may_stand_alone_now_is_a_widening(tmp_path: Path) -> None:
    base = Path(shutil.copytree(CASES / "const-changed" / "old", tmp_path / "old"))
    serving = base / "namespaces" / "serving.yaml"
    serving.write_text(serving.read_text().replace("    type: optional int\n    default: null\n    cli: {const: 64}\n",
                                                   "    type: list[int]\n    default: [1]\n"))
    edited = Path(shutil.copytree(base, tmp_path / "new"))
    (edited / "namespaces" / "serving.yaml").write_text(
        serving.read_text().replace("    default: [1]\n", "    default: [1]\n    cli: {nargs: \"*\"}\n"))
    found = [(f.rule, f.subject) for f in compare(load_view(base, cache=False), load_view(edited, cache=False))]
    assert found == [("flag-arity-widened", "limit")]


@pytest.mark.parametrize(("entry", "said"), [
    ("reason: ' ', release: ' '", "allow entry 1: reason, release is blank"),
    ("reason: why, release: 1", "allow entry 1: release: 1 is a number; quote it (`release: \"1\"`)"),
    ("reason: why, release: 1.10", "allow entry 1: release: 1.1 is a number"),
])
def test_a_blank_or_numeric_allow_field_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, said: str) -> None:
    old = str(CASES / "leaf-removed" / "old")
    new = _copy("leaf-removed", "new", tmp_path)
    allow = tmp_path / "allow.yaml"
    allow.write_text(f"allow:\n  - {{rule: leaf-removed, subject: stats_every, {entry}}}\n")
    assert diff.main([old, str(new), "--no-cache", "--allow", str(allow)]) == 2
    err = capsys.readouterr().err
    assert said in err and "lacks" not in err


def test_a_fallback_given_to_a_secret_is_refused_not_a_warning(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # the fallback would be a constant key, printed in CONFIG.md and --help, that the door
    # accepts: the new schema does not load (as gen refuses it), so no CI passes it as a warning
    edited = Path(shutil.copytree(BUNDLED, tmp_path / "schema"))
    serving = edited / "namespaces" / "serving.yaml"
    text = serving.read_text()
    old = "  api_key:\n    type: optional str\n    default: null\n"
    assert old in text
    serving.write_text(text.replace(old, old + "    fallback: changeme\n", 1))
    assert diff.main([str(BUNDLED), str(edited), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "serving.yaml:59" in err and "leaf 'api_key': a secret leaf cannot have a fallback" in err
    assert "fallback-changed" not in err
