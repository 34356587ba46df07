"""Round twenty-four's finding about `--dump-config` (an outside attack): a dump to a file
named just `.json` (or `.JSON`) was written as YAML, since its Path suffix is empty, while
`--config` read it back as JSON and refused it (D24-1). The writer and every reader now
judge a name by one function, `json_named`."""

from __future__ import annotations

from pathlib import Path

import pytest

from configbags.evolve.formats import format_of
from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.yamlsafe import json_named, load_file


@pytest.mark.parametrize("name", [".json", ".JSON", "x.Json", "a.yaml.json", ".yaml", "x.yml", "a.json.yaml", "json"])
def test_a_dump_reads_back_by_any_name(tmp_path: Path, name: str) -> None:
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m", tp_size=2, host="1e3"), role="launcher")
        dump = ctx.dump_config(tmp_path / name)
    written_json = dump.read_text().startswith("{")
    assert written_json == json_named(name)
    again = ServerArgs.from_cli(["--config", str(dump)], environ={})
    assert (again.tp_size, again.host) == (2, "1e3")


@pytest.mark.parametrize(("name", "is_json"), [
    (".json", True), ("X.JSON", True), ("a.yaml.json", True), ("json", False), (".json.yaml", False), ("x.jsonl", False),
])
def test_json_named_is_the_readers_judgement(tmp_path: Path, name: str, is_json: bool) -> None:
    assert json_named(name) is is_json and json_named(Path(name)) is is_json
    path = tmp_path / name
    path.write_text('{"tp_size": 2}\n' if is_json else "tp_size: 2\n")
    assert load_file(path) == {"tp_size": 2}
    # lint reads the file in the format the server reads it in
    assert (format_of(path, path.read_text()) == "json") is is_json


def test_dump_config_given_twice_is_refused_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """D24-2: the first of two `--dump-config` paths was dropped without a word."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    with pytest.raises(SystemExit) as exc:
        ServerArgs.from_cli(["--model-path", "/m", "--dump-config", str(first), "--dump-config", str(second)],
                            environ={})
    assert exc.value.code == 2
    assert f"--dump-config given twice ({first}, then {second}); give it once" in capsys.readouterr().err
    assert not first.exists() and not second.exists()
