"""Counted allowlist entries: a whole-record (`*`) or unresolved (`$?`) entry stands for
reads of anything, so its one (file, function, leaf) key would hide a new escape in a
function that already had one. `init` writes how many reads such an entry allows; one more
fails the check, one fewer is stale until `update` lowers the count."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from configbags.migrate.check import check
from configbags.migrate.cli import main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_tree
from configbags.migrate.scanmodel import Entry
from configbags.migrate.settings import load_from_schema

ESCAPE_ONCE = """\
    from legacy.server_args import get_server_args


    class LoRAManager:
        def __init__(self, server_args):
            self._args = server_args
    """
# the attack's edit: a second escape in the same function, reading who knows what
ESCAPE_TWICE = """\
    from legacy.server_args import get_server_args


    class LoRAManager:
        def __init__(self, server_args):
            self._args = server_args
            self._launch_cfg = get_server_args()
    """
ENV_TWICE = """\
    import os


    def env(name, other):
        return os.environ.get(name), os.environ[other]
    """
MANY = {f"filler{i}.py": "x = 1\n" for i in range(5)}


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    schema = root / "schema"
    (schema / "namespaces").mkdir(parents=True, exist_ok=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n"
        "  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup, env: SGLANG_TP_SIZE}\n"
    )
    (schema / "roles.yaml").write_text(ROLES_YAML)
    return schema


def _write(root: Path, name: str, text: str) -> None:
    (root / "pkg" / name).write_text(textwrap.dedent(text))


def _allowlist(schema: Path) -> list[dict[str, object]]:
    return list(yaml.safe_load((schema / "ratchet.yaml").read_text())["allowlist"])


def test_init_counts_whole_record_and_unresolved_entries_only(tmp_path: Path) -> None:
    schema = _project(tmp_path, {"lora.py": ESCAPE_TWICE, "env.py": ENV_TWICE,
                                 "plain.py": "def f(server_args):\n    return server_args.tp_size\n", **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    entries = {(e["file"], e["function"], e["leaf"]): e for e in _allowlist(schema)}
    assert entries[("pkg/lora.py", "LoRAManager.__init__", "*")]["reads"] == 2
    assert entries[("pkg/env.py", "env", "$?")]["reads"] == 2
    assert "reads" not in entries[("pkg/plain.py", "f", "tp_size")]  # a leaf's key names what it reads
    assert main(["check", "--schema", str(schema)]) == 0


def test_a_new_escape_under_a_counted_key_fails_and_names_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _project(tmp_path, {"lora.py": ESCAPE_ONCE, **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    assert main(["check", "--schema", str(schema)]) == 0
    capsys.readouterr()
    _write(tmp_path, "lora.py", ESCAPE_TWICE)
    assert main(["check", "--schema", str(schema)]) == 1
    out = capsys.readouterr().out
    assert "pkg/lora.py:6 (LoRAManager.__init__)" in out
    assert "2 such reads where the allowlist entry allows 1, so one of them is new" in out
    assert "reads: 2}" in out  # the entry to write, if the new one must stay
    # update never raises a count: the new read stays a failure
    assert main(["update", "--schema", str(schema)]) == 0
    assert main(["check", "--schema", str(schema)]) == 1


def test_a_count_above_what_is_left_is_stale_until_update_lowers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _project(tmp_path, {"lora.py": ESCAPE_TWICE, **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    _write(tmp_path, "lora.py", ESCAPE_ONCE)
    capsys.readouterr()
    assert main(["check", "--schema", str(schema)]) == 1
    out = capsys.readouterr().out
    assert "allows 2 reads but 1 are left: lower its `reads` to 1" in out
    assert main(["update", "--schema", str(schema)]) == 0
    out = capsys.readouterr().out
    assert "lowered the count of entry pkg/lora.py LoRAManager.__init__ * to 1" in out
    assert "lowered 1 counts" in out
    (entry,) = _allowlist(schema)
    assert entry["reads"] == 1 and entry["reason"] == "baseline"
    assert main(["check", "--schema", str(schema)]) == 0


def test_an_entry_without_a_count_allows_any_number(tmp_path: Path) -> None:
    """Files written before counts keep their meaning; the count is what init writes."""
    _project(tmp_path, {"lora.py": ESCAPE_TWICE, **MANY})
    result = scan_tree(tmp_path, ScanSettings(roots=("pkg",), env_vars=("SGLANG_TP_SIZE",)))
    uncounted = [Entry("pkg/lora.py", "LoRAManager.__init__", "*", "the LoRA manager keeps the record")]
    assert check(result, uncounted, {}, min_files=1).ok
    counted = [uncounted[0]._replace(reads=1)]
    assert not check(result, counted, {}, min_files=1).ok
    assert check(result, [uncounted[0]._replace(reads=2)], {}, min_files=1).ok


def test_counts_survive_every_way_ratchet_yaml_is_loaded(tmp_path: Path) -> None:
    """The fast line reader, the full YAML load (a hand-edited file), the sealed input cache
    and the generated module all carry the count."""
    schema = _project(tmp_path, {"lora.py": ESCAPE_TWICE, **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    fast = load_from_schema(schema, cache=False)
    cached = [load_from_schema(schema, cache=True) for _ in range(2)]
    assert fast == cached[0] == cached[1]
    assert [e.reads for e in fast.allowlist] == [2]
    text = (schema / "ratchet.yaml").read_text()
    # a block-style entry is not the line shape the fast reader takes: the YAML load reads it
    block = text.replace("  - {file: pkg/lora.py, function: LoRAManager.__init__, leaf: '*', reason: baseline, reads: 2}",
                         "  - file: pkg/lora.py\n    function: LoRAManager.__init__\n    leaf: '*'\n"
                         "    reason: baseline\n    reads: 2")
    assert block != text
    (schema / "ratchet.yaml").write_text(block)
    assert load_from_schema(schema, cache=False).allowlist == fast.allowlist

    out = tmp_path / "gen_counts_pkg"
    assert main(["check", "--schema", str(schema)]) == 0
    from configbags.cli import main as configbags_main

    assert configbags_main(["gen", "--schema", str(schema), "--package", "gen_counts_pkg", "--out", str(out)]) == 0
    assert "reads=2," in (out / "ratchet_allowlist.py").read_text()
    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["check", "--schema", str(schema), "--generated", "gen_counts_pkg"]) == 0
        _write(tmp_path, "lora.py", ESCAPE_TWICE.replace("get_server_args()", "(get_server_args(), server_args)"))
        assert main(["check", "--schema", str(schema), "--generated", "gen_counts_pkg"]) == 1
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("gen_counts_pkg")]:
            del sys.modules[name]


@pytest.mark.parametrize("reads", ["0", "-1", "'2'", "true", "1.5"])
def test_a_count_that_is_not_a_positive_integer_is_refused(tmp_path: Path, reads: str, capsys: pytest.CaptureFixture[str]) -> None:
    schema = _project(tmp_path, {"lora.py": ESCAPE_ONCE, **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    path = schema / "ratchet.yaml"
    path.write_text(path.read_text().replace("reads: 1}", f"reads: {reads}}}"))
    capsys.readouterr()
    assert main(["check", "--schema", str(schema)]) == 2
    err = capsys.readouterr().err
    assert "ratchet.yaml" in err and "reads" in err


def test_two_escapes_at_one_place_are_two_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`self._args = self._b = server_args` hands the record on twice from one place: a
    count of places would let the second hide under an entry that allows one."""
    schema = _project(tmp_path, {"lora.py": ESCAPE_ONCE, **MANY})
    assert main(["init", "--schema", str(schema), "--root", str(tmp_path / "pkg")]) == 0
    _write(tmp_path, "lora.py", ESCAPE_ONCE.replace("self._args = server_args", "self._args = self._b = server_args"))
    capsys.readouterr()
    assert main(["check", "--schema", str(schema)]) == 1
    assert "2 such reads where the allowlist entry allows 1" in capsys.readouterr().out
