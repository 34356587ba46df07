"""`--dump-config` round-trips by construction: the dumped file, passed back with
`--config`, gives the same values and the same config hash, for every leaf type and any
value a record accepts (strings YAML 1.1 would leave plain but YAML 1.2 reads as numbers,
line breaks such as NEL, non-ASCII text, json values holding such strings). A path that
cannot be written is refused before anything is installed."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hostile.strategies import PROFILE
from hypothesis import assume, given
from hypothesis import strategies as st

from configbags.generated.accessors import get_context
from configbags.generated.registry import LEAVES
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError, OutputFileError, RecordError
from configbags.runtime.registry import LeafSpec
from configbags.runtime.yamlsafe import dump_yaml, load_yaml

# Strings a YAML 1.1 writer leaves plain that a YAML 1.2 reader takes for numbers, and
# characters a writer must escape rather than fold.
TRAPS = ["1e3", "0o17", "-1e-3", "1e400", "+1", ".5", "0x1F", "1_000", "010", "-.inf", ".NaN", "Null", "~",
         "TRUE", "yes", "", " ", " lead", "trail ", "a: b", "#x", "- x", "[1]", "{}", "&a", "*a", "!t", "'q'",
         '"q"', "x\x85y", "\x85", "\u2028", "\u2029", "\ufeff", "\t", "\n", "a\nb", "\r\n", "\x00", "\x1b[0m",
         "é", "💥", "\\", "%x", "@x", "`x", "|", ">", "?", ":", "---", "..."]
texts = st.one_of(st.sampled_from(TRAPS), st.text(max_size=12))
json_scalars = st.one_of(
    st.none(), st.booleans(), texts, st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(json_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(texts, kids, max_size=3)), max_leaves=8)


def _values_for(spec: LeafSpec) -> st.SearchStrategy[Any]:
    t = spec.type
    if spec.choices is not None:
        base: st.SearchStrategy[Any] = st.sampled_from(list(spec.choices))
    elif t.base == "bool":
        base = st.booleans()
    elif t.base == "int":
        base = st.integers(min_value=int(spec.minimum) if spec.minimum is not None else -(10**30),
                           max_value=int(spec.maximum) if spec.maximum is not None else 10**30)
    elif t.base == "float":
        base = st.floats(min_value=spec.minimum, max_value=spec.maximum, allow_nan=False, allow_infinity=False)
    elif t.base == "str":
        base = texts
    elif t.base == "list[int]":
        base = st.lists(st.integers(min_value=1, max_value=1 << 16), max_size=4)
    elif t.base == "list[str]":
        base = st.lists(texts, max_size=4)
    else:
        base = json_values
    return st.one_of(st.none(), base) if t.optional else base


DUMPABLE = sorted(n for n, s in LEAVES.items() if not s.secret)
configs = st.lists(st.sampled_from(DUMPABLE), min_size=1, max_size=6, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: _values_for(LEAVES[n]) for n in names}))


def _published(record: ServerArgs) -> tuple[dict[str, Any], str]:
    ctx = get_context()
    ctx.publish(record, role="launcher")
    values = {n: v for n, v in ctx.state.values.items() if not (n in LEAVES and LEAVES[n].secret)}
    return values, ctx.config_hash()


def _same(a: Any, b: Any) -> bool:
    """Equal, and floats equal to the bit (-0.0 is not 0.0 here)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "keys") and hasattr(b, "keys"):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _round_trip(values: dict[str, Any], suffix: str = ".yaml") -> None:
    values = {"model_path": "/m", **values}
    try:
        record = ServerArgs(**values)
    except RecordError:
        assume(False)  # not a value the record accepts: nothing to round-trip
    ctx = get_context()
    with ctx.restoring(), tempfile.TemporaryDirectory() as tmp:
        try:
            first, first_hash = _published(record)
        except ConfigError:
            assume(False)  # a combination the rules or derived values refuse at publish
        dump = Path(tmp) / f"resolved{suffix}"  # a .json name is read back as JSON
        ctx.dump_config(dump)
        again = ServerArgs.from_cli(["--config", str(dump)], environ={})
        second, second_hash = _published(again)
        changed = {n: (first[n], second.get(n)) for n in first if not _same(first[n], second.get(n))}
        assert not changed, f"{changed}\n{dump.read_text()}"
        assert first_hash == second_hash


@PROFILE
@given(values=configs, suffix=st.sampled_from([".yaml", ".yml", ".json", ".JSON"]))
def test_a_dumped_config_reloads_to_equal_values_and_the_same_hash(values: dict[str, Any], suffix: str) -> None:
    _round_trip(values, suffix)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("text", ["1e3", "0o17", "-1e-3", "1e400", "x\x85y", "\u2028", "0x1F", "010"])
def test_strings_that_yaml_1_1_leaves_plain_come_back_as_strings(text: str, suffix: str) -> None:
    _round_trip({"host": text, "json_model_override_args": {"rope": text, "list": [text]}}, suffix)


def test_dump_yaml_checks_every_value_reads_back() -> None:
    data = {"a": TRAPS, "b": {t: t for t in TRAPS}, "c": [1e16, -0.0, 5e-324, 10**99, True, None]}
    assert load_yaml(dump_yaml(data)) == data


def test_an_unwritable_dump_path_is_refused_before_anything_is_installed(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for path in [tmp_path / "missing" / "x.yaml", tmp_path]:
        with pytest.raises(SystemExit) as info:
            ServerArgs.from_cli(["--model-path", "/m", "--dump-config", str(path)], environ={})
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert f"--dump-config {path}: cannot be written" in err and "Traceback" not in err, err
    # a path that stops being writable after the flags were read: publish refuses it, typed,
    # and installs nothing
    folder = tmp_path / "out"
    folder.mkdir()
    record = ServerArgs.from_cli(["--model-path", "/m", "--tp-size", "2", "--dump-config", str(folder / "x.yaml")],
                                 environ={})
    folder.rmdir()
    ctx = get_context()
    with ctx.restoring():
        before = ctx._state
        with pytest.raises(OutputFileError, match="cannot be written"):
            ctx.publish(record, role="launcher")
        assert ctx._state is before


def test_a_failed_dump_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "resolved.yaml"
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m", host="\x85"), role="launcher")
        ctx.dump_config(path)
        before = path.read_bytes()
        assert ServerArgs.from_file(path).host == "\x85"

        def disk_full(*args: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr("os.replace", disk_full)
        ctx.publish(ServerArgs(model_path="/other"), role="launcher")
        with pytest.raises(OutputFileError, match="No space left on device"):
            ctx.dump_config(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resolved.yaml"]


def test_a_dump_path_that_names_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--dump-config newname/`: Path() drops the slash, and the dump landed in a file of
    the folder's name."""
    target = tmp_path / "newname"
    with pytest.raises(SystemExit) as exited:
        ServerArgs.from_cli(["--model-path", "m", "--dump-config", f"{target}/"], environ={})
    assert exited.value.code == 2 and "it names a folder" in capsys.readouterr().err
    assert not target.exists()


@pytest.mark.parametrize("spelling", ["same", "symlink", "hardlink", "dotted"])
def test_a_dump_path_that_is_a_config_file_is_refused_and_the_file_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    """`--config F --dump-config F`: the dump would replace F without its keys (a dump
    leaves the secrets out), so the next start from F would be open. Refused, by any name of
    the file, naming both, before anything is read or written."""
    config = tmp_path / "sv.yaml"
    text = "model_path: /models/a\napi_key: SEKD1\nadmin_api_key: SEKD2\n"
    config.write_text(text)
    dump = {"same": config, "symlink": tmp_path / "link.yaml", "hardlink": tmp_path / "hard.yaml",
            "dotted": tmp_path / "." / "sv.yaml"}[spelling]
    if spelling == "symlink":
        dump.symlink_to(config.name)
    elif spelling == "hardlink":
        dump.hardlink_to(config)
    other = tmp_path / "other.yaml"
    other.write_text("tp_size: 2\n")
    with pytest.raises(SystemExit) as exited:
        ServerArgs.from_cli(["--config", str(other), "--config", str(config), "--dump-config", str(dump)], environ={})
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"--dump-config {dump} is the --config file {config}" in err and "secrets" in err
    assert "SEKD" not in err and config.read_text() == text


@pytest.mark.parametrize("variable", ["SGLANG_API_KEY_FILE", "SGLANG_ADMIN_API_KEY_FILE"])
def test_a_dump_path_that_is_a_secrets_file_is_refused_and_the_key_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], variable: str) -> None:
    """`SGLANG_API_KEY_FILE=F ... --dump-config F`: the dump would destroy the only copy of
    the key, and the next start would read the dump as the key. Refused before anything is
    written, naming the variable, never the key."""
    key = tmp_path / "kd"
    key.write_text("SEKD3\n")
    with pytest.raises(SystemExit) as exited:
        ServerArgs.from_cli(["--model-path", "/m", "--dump-config", str(tmp_path / "." / "kd")],
                            environ={variable: str(key)})
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"is the file ${variable} names ({key})" in err and "secret" in err, err
    assert "SEKD3" not in err and key.read_text() == "SEKD3\n"


MODELS = Path(__file__).parent.parent / "models"


@pytest.mark.parametrize(("command", "layout", "words"), [
    ("plan", "file", ["--model-config", "{model}", "--gpu", "H100"]),
    ("plan", "folder", ["--model-config", "{folder}", "--gpu", "H100"]),
    ("plan", "folder", ["--model-config", "{model}", "--gpu", "H100", "--model-path", "{folder}"]),
    ("serve", "folder", ["--host", "127.0.0.1", "--port", "{port}", "--model-path", "{folder}"]),
    ("explain", "file", ["tp_size", "--model-config", "{model}"]),
    ("explain", "folder", ["tp_size", "--model-path", "{folder}"]),
])
def test_a_dump_path_that_is_the_models_config_is_refused_and_the_file_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, layout: str, words: list[str]) -> None:
    """`plan --model-config X.json --dump-config X.json`, `serve --model-path DIR
    --dump-config DIR/config.json`: the dump would replace the model's Hugging Face config
    with a server-config dump. Refused (exit 2) naming both, by any name of the file, before
    anything is written (serve is refused before it binds: its port is held here, so a
    serve that got past the check stops at the bind, never runs)."""
    import socket

    from configbags import explain
    from configbags.serve import cli as serve_cli
    from configbags.server import plan

    text = (MODELS / "llama-3.1-8b.json").read_text()
    (tmp_path / "mf").mkdir()
    model, folder = tmp_path / "model.json", tmp_path / "mf"
    model.write_text(text)
    (folder / "config.json").write_text(text)
    target = model if layout == "file" else folder / "config.json"
    dump = tmp_path / "link.json"
    dump.symlink_to(target)  # another name of the same file
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    argv = ["--package", "configbags.generated", *(w.format(model=model, folder=folder, port=port) for w in words),
            "--dump-config", str(dump)]
    main = {"plan": plan.main, "serve": serve_cli.main, "explain": explain.main}[command]
    with held:
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--dump-config {dump} is the model config of" in err and str(target) in err, err
    assert "give the dump a path of its own" in err and "Traceback" not in err
    assert model.read_text() == text and (folder / "config.json").read_text() == text


def test_a_dump_that_leaves_secrets_out_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A JSON dump has no comment to name them: the warning at the dump does, never the keys."""
    config = tmp_path / "sv.yaml"
    config.write_text("model_path: /models/a\napi_key: SEKD1\nadmin_api_key: SEKD2\n")
    for name in ["dump.json", "dump.yaml"]:
        dump = tmp_path / name
        record = ServerArgs.from_cli(["--config", str(config), "--dump-config", str(dump)], environ={})
        ctx = get_context()
        caplog.clear()
        with ctx.restoring(), caplog.at_level("WARNING"):
            ctx.publish(record, role="launcher")
        said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any(f"config dumped to {dump}" in m and "without its secrets admin_api_key, api_key" in m
                   for m in said), said
        assert "SEKD" not in dump.read_text() + caplog.text
    assert "# Secrets left out (set them as before): admin_api_key, api_key." in dump.read_text()


def test_explains_placeholder_model_path_is_left_out_of_its_dump(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Round fifteen: `explain --dump-config` with no model named wrote explain's own
    placeholder `model_path: model`, which passed back with --config became a config-file
    value. Now it is left out, said in the dump and on stderr; a model the operator names
    is dumped as before."""
    from configbags.cli import main as configbags

    dump = tmp_path / "d.yaml"
    with get_context().restoring():
        assert configbags(["explain", "weight_version", "--weight-version", "v1", "--dump-config", str(dump)]) == 0
    text = dump.read_text()
    assert "model_path" not in load_yaml(text) and load_yaml(text) == {"weight_version": "v1"}
    assert "# Left out: model_path (explain's placeholder" in text
    capsys.readouterr()
    with get_context().restoring():
        assert configbags(["explain", "model_path", "--config", str(dump)]) == 0
    assert "placeholder" in capsys.readouterr().out  # still no operator value
    named = tmp_path / "n.yaml"
    with get_context().restoring():
        assert configbags(["explain", "weight_version", "--model-path", "real", "--dump-config", str(named)]) == 0
    assert load_yaml(named.read_text()) == {"model_path": "real"}


def test_explain_of_an_unknown_leaf_writes_no_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Round sixteen: `explain no_such_leaf --dump-config out.yaml` replaced out.yaml, then
    exited 2. The leaf is checked before anything is published or written."""
    from configbags.cli import main as configbags

    out = tmp_path / "out.yaml"
    out.write_text("keep me\n")
    with get_context().restoring():
        assert configbags(["explain", "page_sise", "--tp-size", "2", "--dump-config", str(out)]) == 2
    assert out.read_text() == "keep me\n"
    assert "'page_sise' is not a config leaf (did you mean 'page_size'?)" in capsys.readouterr().err


@pytest.mark.parametrize("dangling", [False, True])
def test_a_dump_to_a_link_is_written_through_it(tmp_path: Path, dangling: bool) -> None:
    """Round seventeen: `--dump-config config.yaml`, a link to configs/prod.yaml, replaced
    the link with a file and left prod.yaml stale. The dump goes to the link's target."""
    from configbags.cli import main as configbags

    (tmp_path / "configs").mkdir()
    target = tmp_path / "configs" / "prod.yaml"
    if not dangling:
        target.write_text("weight_version: prod-v1\n")
    link = tmp_path / "config.yaml"
    link.symlink_to(Path("configs") / "prod.yaml")
    with get_context().restoring():
        assert configbags(["explain", "weight_version", "--model-path", "m", "--weight-version", "prod-v2",
                           "--dump-config", str(link)]) == 0
    assert link.is_symlink() and load_yaml(target.read_text())["weight_version"] == "prod-v2"


@pytest.mark.parametrize("text", ["", "\n", "# rendered nothing\n", "null\n", "~\n", "---\n"])
def test_a_config_file_that_says_nothing_is_refused(tmp_path: Path, text: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Round eighteen: a --config file holding no document (0 bytes, comments only, `null`)
    was read as "no settings": `serve --config empty.yaml` started on defaults, reads open
    where the file was to hold the key. It is refused, as a watched file is; `{}` says it."""
    from configbags.cli import main as configbags

    empty = tmp_path / "config.yaml"
    empty.write_text(text)
    with get_context().restoring():
        assert configbags(["explain", "api_key", "--model-path", "m", "--config", str(empty)]) == 2
    assert f"{empty}: the config file holds no settings" in capsys.readouterr().err
    empty.write_text("{}\n")
    with get_context().restoring():
        assert configbags(["explain", "api_key", "--model-path", "m", "--config", str(empty)]) == 0
