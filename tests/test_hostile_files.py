"""The one reader of input files against files that break the limits: config files, schema
files, a model's config.json (ModelFacts.from_config and the planner's reader). Each is
refused naming the file, the limit and the variable that raises it, with the limits counted
while the text is parsed (peak memory far below the 100 MB the refusal is allowed), and a
FIFO, a device or a link to one is refused before it is opened for reading.
Duplicate keys in JSON config files and json flags are refused naming the key."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from genutil import copy_case, generate
from hostile.corpus import HANG_S, deep_json_text

from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import ConfigError, InputFileError, RecordError, YamlError
from configbags.runtime.limits import LIMITS, Limits
from configbags.runtime.resolve import ModelFacts
from configbags.runtime.yamlsafe import load_json, load_yaml
from configbags.server.kvcache.model_shape import load_model_shape

MB = 1 << 20
# What a refusal may allocate (Python objects, as tracemalloc counts them), the bound.
REFUSAL_PEAK = 100 * MB


def _big_texts() -> dict[str, tuple[str, str]]:
    """Files just under the byte limit whose structure breaks the node limit: (suffix, text)."""
    room = LIMITS.file_bytes - 64
    return {
        "flow-list.yaml": (".yaml", "model_path: /m\njson_model_override_args: [" + "1," * (room // 2 - 8) + "1]\n"),
        "block-list.yaml": (".yaml", "model_path: /m\njson_model_override_args:\n" + "- 1\n" * (room // 4 - 16)),
        "empty-maps.yaml": (".yaml", "model_path: /m\njson_model_override_args: [" + "{}," * (room // 3 - 8) + "{}]\n"),
        "empty-objects.json": (".json", '{"model_path": "/m", "json_model_override_args": [' + "{}," * (room // 3 - 20) + "{}]}"),
        "strings.json": (".json", '{"model_path": "/m", "json_model_override_args": [' + '"",' * (room // 3 - 20) + '""]}'),
    }


def _peak(action: Callable[[], Any]) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    try:
        action()
        error: BaseException | None = None
    except Exception as exc:
        error = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return error, peak


@pytest.mark.parametrize("name", sorted(_big_texts()))
def test_a_config_file_over_the_node_limit_is_refused_while_parsing(tmp_path: Path, name: str) -> None:
    suffix, text = _big_texts()[name]
    path = tmp_path / f"server{suffix}"
    path.write_text(text)
    assert path.stat().st_size <= LIMITS.file_bytes  # within the byte limit: the parse must refuse it
    error, peak = _peak(lambda: ServerArgs.from_file(path))
    assert isinstance(error, RecordError), error
    message = str(error)
    assert f"server{suffix}" in message and f"more than {LIMITS.nodes} nodes" in message, message
    assert "CONFIGBAGS_LIMIT_NODES" in message, message
    assert peak < REFUSAL_PEAK, f"{peak / MB:.0f} MB to refuse {name}"


def test_a_schema_file_over_the_node_limit_is_refused_while_parsing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_case("tiny", tmp_path)
    path = schema / "namespaces" / "core.tune.yaml"
    room = LIMITS.file_bytes // 2 - len(path.read_text())
    path.write_text(path.read_text() + "\nextra: [" + "1," * (room // 2) + "1]\n")
    error, peak = _peak(lambda: generate(schema, tmp_path / "out"))
    assert error is None
    err = capsys.readouterr().err
    assert "core.tune.yaml" in err and "CONFIGBAGS_LIMIT_NODES" in err, err
    assert not (tmp_path / "out").exists()
    assert peak < REFUSAL_PEAK, f"{peak / MB:.0f} MB to refuse the schema file"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (deep_json_text(100_000), "more than 100000 nodes"),
        (deep_json_text(250), "nests deeper than 100"),
        ("[" + "0," * 60_000 + "[" * 250 + "]" * 250 + "]", "nests deeper than 100"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"n": ' + "1" * 5000 + "}", "5000 digits"),
        ('"' + "x" * (LIMITS.string_chars + 1) + '"', "CONFIGBAGS_LIMIT_STRING_CHARS"),
        ('"\\"' * 200_000, "nodes"),  # strings without an end: measured in one pass
    ],
    ids=["100000-deep", "250-deep", "deep-after-wide", "duplicate", "5000-digits", "long-string", "unterminated"],
)
def test_json_text_is_measured_before_it_is_built(text: str, message: str) -> None:
    with pytest.raises(YamlError, match=message):
        load_json(text)


def test_brackets_inside_json_strings_are_not_nesting() -> None:
    assert load_json('{"a": "' + "[" * 5000 + '"}') == {"a": "[" * 5000}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 250 + "]" * 250, "nests deeper than 100"),
        ("a: &x [1, 2]\nb: [*x, *x]\n", None),
        ("- " + "\n- ".join(["1"] * (LIMITS.nodes + 5)), "more than 100000 nodes"),
        ("a: '" + "x" * (LIMITS.string_chars + 1) + "'\n", "CONFIGBAGS_LIMIT_STRING_CHARS"),
    ],
    ids=["250-deep", "aliases-within", "100005-items", "long-scalar"],
)
def test_yaml_limits_are_counted_from_the_events(text: str, message: str | None) -> None:
    if message is None:
        assert load_yaml(text) == {"a": [1, 2], "b": [[1, 2], [1, 2]]}
        return
    with pytest.raises(YamlError, match=message):
        load_yaml(text)


# -- duplicate keys in JSON (item 10) ----------------------------------------------------------

def test_a_json_config_file_with_a_duplicate_key_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text('{"model_path": "/m", "tp_size": 2, "tp_size": 4}')
    with pytest.raises(RecordError, match=r"server.json: cannot read config file: duplicate key 'tp_size'"):
        ServerArgs.from_file(path)
    path.write_text('{"model_path": "/m", "json_model_override_args": {"rope": 1, "rope": 2}}')
    with pytest.raises(RecordError, match=r"duplicate key 'rope'"):
        ServerArgs.from_file(path)


def test_a_json_flag_with_a_duplicate_key_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "/m", "--json-model-override-args", '{"rope": 1, "rope": 2}'])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--json-model-override-args" in err and "duplicate key 'rope'" in err, err


# -- special files: refused before they are opened (items 11, 12) ------------------------------

def _special_files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    links = {"fifo": fifo, "dev-zero": Path("/dev/zero")}
    for name, target in list(links.items()):
        link = tmp_path / f"link-to-{name}.json"
        link.symlink_to(target)
        links[f"link-to-{name}"] = link
    return links


def _within(seconds: float, action: Callable[[], Any], unblock: Callable[[], None]) -> BaseException | None:
    """Run `action` in a thread; fail if it has not finished in `seconds` (a read blocked on
    a FIFO), then `unblock` it so the thread can end."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            action()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(seconds)
        pytest.fail(f"still blocked after {seconds} s")
    return outcome[0]


def _open_writer(fifo: Path) -> None:
    # A writer that opens and closes lets a reader blocked in open() see end of file.
    with open(fifo, "w"):
        pass


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo", "link-to-dev-zero", "dev-zero"])
@pytest.mark.parametrize("reader", ["model-facts", "model-shape", "config-file"])
def test_special_files_are_refused_unopened(tmp_path: Path, kind: str, reader: str) -> None:
    files = _special_files(tmp_path)
    path = files[kind]
    read: Callable[[], Any] = {
        "model-facts": lambda: ModelFacts.from_config(path),
        "model-shape": lambda: load_model_shape(path),
        "config-file": lambda: ServerArgs.from_file(path),
    }[reader]
    if "dev-zero" in kind:
        # /dev/zero never ends: a reader that opens it grows without bound, so it runs where
        # the address space is capped.
        code = (
            "import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))\n"
            "from configbags.runtime.resolve import ModelFacts\n"
            "from configbags.server.kvcache.model_shape import load_model_shape\n"
            "from configbags.generated.server_args import ServerArgs\n"
            f"read = {{'model-facts': ModelFacts.from_config, 'model-shape': load_model_shape, "
            f"'config-file': ServerArgs.from_file}}[{reader!r}]\n"
            "try:\n    read(sys.argv[1])\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              timeout=HANG_S)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "not a regular file (a character device)" in done.stdout, done.stdout
        assert "Error" in done.stdout.split()[0]
        return
    error = _within(HANG_S, read, lambda: _open_writer(files["fifo"]))
    assert isinstance(error, ConfigError), error
    assert "not a regular file (a FIFO)" in str(error) and str(path) in str(error), error


def test_model_facts_refuse_deep_and_malformed_configs_typed(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    for text, message in [
        (deep_json_text(100_000), "nodes"),
        (deep_json_text(300), "nests deeper than 100"),
        ('{"architectures": 5}', "architectures is 5, not a list of names"),
        ("[1, 2]", "holds a list, not a JSON object"),
        ("{", "Expecting property name"),
    ]:
        path.write_text(text)
        with pytest.raises(InputFileError, match=message) as info:
            ModelFacts.from_config(path)
        assert "config.json" in str(info.value)
    path.write_text('{"architectures": ["X"], "rope_theta": Infinity, "a": 1, "a": 2}')
    facts = ModelFacts.from_config(path)  # as Hugging Face reads it: Infinity, the last key wins
    assert facts.architectures == ("X",) and facts.config["a"] == 2
    assert ModelFacts.from_config(tmp_path).config["a"] == 2  # a model folder holding config.json


# -- raising a limit ---------------------------------------------------------------------------

def _in_fresh_process(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, **env})


def test_a_limit_is_raised_by_its_variable_and_a_bad_value_is_refused() -> None:
    code = ("from configbags.runtime.yamlsafe import load_yaml\n"
            "print(len(load_yaml('[' + '1,' * 150000 + '1]')))")
    assert "150001" in _in_fresh_process({"CONFIGBAGS_LIMIT_NODES": "200000"}, code).stdout
    refused = _in_fresh_process({"CONFIGBAGS_LIMIT_NODES": "1_000"}, code)
    assert "CONFIGBAGS_LIMIT_NODES='1_000' is not a positive whole number" in refused.stderr
    with pytest.raises(ConfigError, match="CONFIGBAGS_LIMIT_INT_DIGITS=5000 is above 4300"):
        Limits.from_environ({"CONFIGBAGS_LIMIT_INT_DIGITS": "5000"})
    assert Limits.from_environ({"CONFIGBAGS_LIMIT_FILE_BYTES": " 16 "}).file_bytes == 16


def test_the_cli_exits_2_naming_a_bad_limit_variable() -> None:
    done = subprocess.run([sys.executable, "-m", "configbags", "explain", "tp_size"], capture_output=True,
                          text=True, timeout=HANG_S, env={**os.environ, "CONFIGBAGS_LIMIT_NODES": "lots"})
    assert done.returncode == 2, done.stderr
    assert "CONFIGBAGS_LIMIT_NODES='lots'" in done.stderr and "Traceback" not in done.stderr


# -- every limit's refusal names its variable (round three) ------------------------------------

def _refusal(action: Callable[[], Any]) -> str:
    try:
        action()
    except ConfigError as exc:
        return str(exc)
    raise AssertionError("accepted")


def test_every_limit_refusal_names_its_variable(tmp_path: Path) -> None:
    from configbags.runtime.leaftypes import TypeSpec

    big = tmp_path / "big.yaml"
    big.write_text("model_path: m\n#" + "x" * LIMITS.file_bytes + "\n")
    refusals = {
        "nesting": [lambda: load_yaml("[" * 250 + "]" * 250), lambda: load_json("[" * 250 + "]" * 250),
                    lambda: ServerArgs.from_cli(["--model-path", "m", "--json-model-override-args",
                                                 "[" * 250 + "]" * 250])],
        "json_depth": [lambda: TypeSpec.parse("json").coerce(deep_list(70))],
        "nodes": [lambda: TypeSpec.parse("json").coerce(list(range(LIMITS.nodes + 1))),
                  lambda: load_yaml("[" + "1," * LIMITS.nodes + "1]"),
                  lambda: TypeSpec.parse("list[int]").coerce(list(range(LIMITS.nodes + 1)))],
        "string_chars": [lambda: TypeSpec.parse("str").coerce("x" * (LIMITS.string_chars + 1))],
        "int_digits": [lambda: TypeSpec.parse("int").coerce(10**150), lambda: load_json("1" + "0" * 150)],
        "file_bytes": [lambda: ServerArgs.from_file(big)],
    }
    for name, actions in refusals.items():
        for action in actions:
            try:
                message = _refusal(action)
            except SystemExit:  # the CLI door: its message went to stderr, checked below
                continue
            assert f"CONFIGBAGS_LIMIT_{name.upper()}" in message, (name, message[:300])


def test_the_nesting_flag_names_its_variable_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        ServerArgs.from_cli(["--model-path", "m", "--json-model-override-args", "[" * 250 + "]" * 250], environ={})
    assert "CONFIGBAGS_LIMIT_NESTING" in capsys.readouterr().err


def test_the_nesting_limit_is_raised_by_its_variable_up_to_a_ceiling() -> None:
    code = "from configbags.runtime.yamlsafe import load_yaml\nprint(len(load_yaml('[' * 150 + ']' * 150)))"
    assert _in_fresh_process({"CONFIGBAGS_LIMIT_NESTING": "200"}, code).stdout.strip() == "1"
    for name in ("NESTING", "JSON_DEPTH"):
        with pytest.raises(ConfigError, match=f"CONFIGBAGS_LIMIT_{name}=201 is above 200"):
            Limits.from_environ({f"CONFIGBAGS_LIMIT_{name}": "201"})
    with pytest.raises(ConfigError, match="CONFIGBAGS_LIMIT_JSON_DEPTH=200 is not below CONFIGBAGS_LIMIT_NESTING=200"):
        Limits.from_environ({"CONFIGBAGS_LIMIT_NESTING": "200", "CONFIGBAGS_LIMIT_JSON_DEPTH": "200"})


def test_at_the_ceilings_a_deepest_document_is_read_or_refused_never_a_recursion_error(tmp_path: Path) -> None:
    """Both limits at their ceiling, a json leaf as deep as they allow, read from a config
    file by a caller already deep in its own stack (as a request thread is)."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("model_path: m\njson_model_override_args: " + "[" * 199 + "]" * 199 + "\n")
    dump = tmp_path / "dump.yaml"
    code = (
        "import sys\n"
        "from configbags.generated.server_args import ServerArgs\n"
        "from configbags.generated.accessors import publish\n"
        "def down(n):\n"
        "    if n:\n"
        "        return down(n - 1)\n"
        f"    ctx = publish(ServerArgs.from_file({str(deep)!r}), role='launcher')\n"
        f"    ctx.dump_config({str(dump)!r})\n"
        f"    ServerArgs.from_file({str(dump)!r})\n"
        "    return len(str(ctx.server_info())) + len(ctx.config_hash())\n"
        "print(down(150) > 0)\n"
    )
    done = _in_fresh_process({"CONFIGBAGS_LIMIT_NESTING": "200", "CONFIGBAGS_LIMIT_JSON_DEPTH": "199"}, code)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
    assert "RecursionError" not in done.stderr


def deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


# -- a model's sizes are real sizes (round three) ----------------------------------------------

SIZE_KEYS = ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads", "max_position_embeddings")


@pytest.mark.parametrize("key", SIZE_KEYS)
@pytest.mark.parametrize("value", [0, -1, 10**30, 2**40, 1e30])  # max_position_embeddings: to 2**31 - 1
def test_a_model_config_with_a_nonsense_size_is_refused_naming_the_file_and_key(
        tmp_path: Path, key: str, value: Any) -> None:
    import json

    from configbags.server.kvcache.errors import ModelConfigError

    config = json.loads((Path(__file__).parent.parent / "models" / "llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, key: value}))
    with pytest.raises(ModelConfigError) as refused:
        load_model_shape(path)
    assert str(path) in str(refused.value) and key in str(refused.value), refused.value


@pytest.mark.parametrize(("name", "ceiling"), [("NODES", 10_000_000), ("STRING_CHARS", 100_000_000),
                                               ("FILE_BYTES", 256 * 1024 * 1024)])
def test_every_limit_is_raised_only_up_to_a_ceiling(name: str, ceiling: int) -> None:
    """Round sixteen: NODES, STRING_CHARS and FILE_BYTES took any number, so a raised
    limit let a 1 KB alias bomb build for minutes; each has a ceiling now, as the others."""
    assert getattr(Limits.from_environ({f"CONFIGBAGS_LIMIT_{name}": str(ceiling)}), name.lower()) == ceiling
    with pytest.raises(ConfigError, match=f"CONFIGBAGS_LIMIT_{name}={ceiling + 1} is above {ceiling}"):
        Limits.from_environ({f"CONFIGBAGS_LIMIT_{name}": str(ceiling + 1)})
