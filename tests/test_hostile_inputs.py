"""Hostile input at every user-facing surface this package owns: runtime overrides, the
command line, config files, environment variables, schema files (through the generator),
model config.json and the tree the ratchet scans.
Each input gives either a result or a typed ConfigError (exit 2 for the CLI and the
generator) whose message names the input; never a traceback, never a change of state.

`make fuzz` runs the same tests with the `long` profile (CONFIGBAGS_FUZZ=long)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
from genutil import copy_case, generate
from hostile.strategies import PROFILE, SLOW_PROFILE, text, values, yaml_values
from hypothesis import given
from hypothesis import strategies as st

from configbags.generated.accessors import get_context
from configbags.generated.registry import LEAVES, REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.migrate.check import check
from configbags.migrate.scan import ScanSettings, scan_tree
from configbags.runtime.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
LEAF_NAMES = sorted(LEAVES)
FLAGS = sorted({f for spec in LEAVES.values() for f in spec.flags})
leaf_names = st.one_of(st.sampled_from(LEAF_NAMES), text)


def _names_input(message: str, name: str) -> bool:
    return repr(name)[1:-1][:30] in message or name[:30] in message


# -- overrides ---------------------------------------------------------------------------------

@PROFILE
@given(leaves=st.dictionaries(leaf_names, values, min_size=1, max_size=3), policy=st.booleans())
def test_override_gives_a_result_or_a_typed_error_and_changes_nothing(leaves: dict[str, Any], policy: bool) -> None:
    ctx = get_context()
    with ctx.restoring():
        ctx.publish(ServerArgs(model_path="/m"), role="scheduler")
        before = ctx.state
        message = None
        try:
            if policy:
                ctx.override("fuzz", **leaves)
            else:
                with ctx.scoped("fuzz", **leaves):
                    pass
        except ConfigError as exc:
            message = str(exc)
        if message is not None:
            assert ctx.state is before
            assert any(_names_input(message, name) for name in leaves), message
        # whatever happened, every readback still renders
        json.dumps(ctx.server_info())
        ctx.config_hash()


# -- the command line --------------------------------------------------------------------------

argv_items = st.one_of(st.sampled_from(FLAGS), st.sampled_from(["--config", "--", "-x", "--tp", "--no-"]), text)


@PROFILE
@given(argv=st.lists(argv_items, max_size=6))
def test_cli_gives_a_record_or_exit_2(argv: list[str]) -> None:
    argv = [a for a in argv if a not in ("-h", "--help")]
    err = io.StringIO()
    code = None
    with redirect_stderr(err):
        try:
            ServerArgs.from_cli(["--model-path", "/m", *argv])
        except SystemExit as exc:
            code = exc.code
    if code is not None:
        assert code == 2, err.getvalue()
        assert "Traceback" not in err.getvalue()
        assert "error:" in err.getvalue()


# -- environment variables -------------------------------------------------------------------

ENV_NAMES = sorted(REGISTRY.env_names)  # declared names and their old spellings
env_names = st.one_of(st.sampled_from(ENV_NAMES), text.map(f"{REGISTRY.env_prefix}{{}}".format), text)


@PROFILE
@given(environ=st.dictionaries(env_names, text, max_size=4))
def test_environment_gives_a_record_or_exit_2_naming_the_variable(environ: dict[str, str]) -> None:
    err = io.StringIO()
    code = None
    with redirect_stderr(err):
        try:
            ServerArgs.from_cli(["--model-path", "/m"], environ=environ)
        except SystemExit as exc:
            code = exc.code
    if code is not None:
        assert code == 2, err.getvalue()
        assert "Traceback" not in err.getvalue()
        # a known variable by name, or an unknown one refused as a secret's lookalike
        refused = [name for name in environ if (name in REGISTRY.env_names and name in err.getvalue())
                   or f"environment variable {name} is not a known setting" in err.getvalue()]
        assert refused, f"no variable named in: {err.getvalue()}"


# -- config files ------------------------------------------------------------------------------

@PROFILE
@given(body=st.lists(st.tuples(st.one_of(st.sampled_from(LEAF_NAMES), text), yaml_values), max_size=4),
       suffix=st.sampled_from([".yaml", ".json"]))
def test_config_file_gives_a_record_or_a_record_error_naming_the_file(body: list[tuple[str, str]], suffix: str) -> None:
    if suffix == ".json":
        content = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in body) + "}"
    else:
        content = "model_path: /m\n" + "".join(f"{json.dumps(k)}: {v}\n" for k, v in body)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "server" + suffix)
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        message = None
        try:
            ServerArgs.from_file(path)
        except ConfigError as exc:
            message = str(exc)
        assert message is None or str(path) in message


# -- the tree the ratchet scans ---------------------------------------------------------------

_SOURCE_PIECES = st.sampled_from([
    "from configbags.generated.accessors import get_server_args\n",
    "x = get_server_args().tp_size\n", "def f(server_args: ServerArgs):\n    return server_args.dp_size\n",
    "class A:\n    def g(self):\n        return self.server_args.page_size\n",
    "(" * 300 + ")" * 300 + "\n", "[" * 120 + "]" * 120 + "\n", "x = " + "-" * 5000 + "1\n",
    "# -*- coding: latin-1 -*-\n", "# -*- coding: no-such-codec -*-\n", "\ufeff", "\x00", "\udcff",
    "def f(:\n", "    \t  mixed\n", "lambda: (yield)\n", "get_server_args = None\n",
    "getattr(get_server_args(), 'tp_size')\n", "s = get_server_args(); s.tp_size = 2\n",
])
_source_files = st.one_of(
    st.binary(max_size=300),
    st.lists(st.one_of(_SOURCE_PIECES, text), max_size=8).map("".join).map(
        lambda t: t.encode("utf-8", errors="surrogatepass")
    ),
)


@PROFILE
@given(files=st.lists(_source_files, min_size=1, max_size=4))
def test_ratchet_reads_or_reports_every_file_and_never_passes_unread(files: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "src").mkdir()
        for i, data in enumerate(files):
            (project / "src" / f"m{i}.py").write_bytes(data)
        result = scan_tree(project, ScanSettings(roots=("src",)))
        assert len(result.files) == len(files)
        unread = {p.file for p in result.problems}
        assert result.files_parsed + len(unread) == len(files)
        report = check(result, [], {"tp_size": "get_parallel().tp_size"}, min_files=1)
        assert report.render()
        if unread or result.reads:
            assert not report.ok  # a file it could not read, or a raw read, never passes


# -- schema files, through the generator -------------------------------------------------------

@SLOW_PROFILE
@given(line=st.integers(min_value=0, max_value=45), fragment=yaml_values, key=st.sampled_from(["default", "choices", "min", "help", "type", "inputs", "x"]))
def test_generator_gives_exit_0_or_2_and_never_a_traceback(line: int, fragment: str, key: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        schema = copy_case("tiny", Path(tmp))
        core = schema / "namespaces" / "core.yaml"
        lines = core.read_text().splitlines(keepends=True)
        indent = "    " if line > 2 else ""
        lines.insert(line, f"{indent}{key}: {fragment}\n")
        core.write_text("".join(lines), encoding="utf-8", errors="surrogatepass")
        err = io.StringIO()
        with redirect_stderr(err):
            code = generate(schema, Path(tmp, "generated"))
        assert code in (0, 2), err.getvalue()
        assert "Traceback" not in err.getvalue()
        if code == 2:
            assert "schema/namespaces/core.yaml:" in err.getvalue() or "schema/" in err.getvalue()


# -- model config.json -------------------------------------------------------------------------

model_fields = st.sampled_from(["hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers",
                                "head_dim", "architectures", "torch_dtype", "vocab_size", "text_config", "model_type"])


@PROFILE
@given(config=st.dictionaries(model_fields, values, max_size=6), raw=st.one_of(st.none(), yaml_values))
def test_model_config_gives_a_shape_or_a_typed_error(config: dict[str, Any], raw: str | None) -> None:
    from configbags.server.kvcache.model_shape import load_model_shape

    base = json.loads(Path("models/llama-3.1-8b.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "config.json")
        if raw is not None:
            path.write_text(raw, encoding="utf-8", errors="surrogatepass")
        else:
            try:
                path.write_text(json.dumps({**base, **config}, default=str, allow_nan=True))
            except (ValueError, RecursionError, TypeError, RuntimeError):  # RuntimeError: a hostile repr
                return  # not writable as JSON text: not an input a file can hold
        message = None
        try:
            load_model_shape(path)
        except ConfigError as exc:
            message = str(exc)
        assert message is None or path.name in message


def test_the_model_config_surface_holds_for_plain_bad_files(tmp_path: Path) -> None:
    """Plain bad files: each refused naming the file."""
    from configbags.server.kvcache.model_shape import load_model_shape

    for content in ("[]", "{", '{"hidden_size": "x"}', ""):
        path = tmp_path / "config.json"
        path.write_text(content)
        with pytest.raises(ConfigError, match="config.json"):
            load_model_shape(path)


def _profile_in_a_fresh_process(fuzz: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONFIGBAGS_FUZZ"}
    if fuzz is not None:
        env["CONFIGBAGS_FUZZ"] = fuzz
    probe = "from hostile.strategies import PROFILE, SLOW_PROFILE; print(PROFILE.max_examples, SLOW_PROFILE.max_examples)"
    return subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).parent, env=env,
                          capture_output=True, text=True, check=False)


@pytest.mark.slow  # six fresh interpreters
def test_profiles_are_selected_by_the_environment() -> None:
    assert PROFILE.max_examples == {"long": 4000, "quick": 10}.get(os.environ.get("CONFIGBAGS_FUZZ", ""), 40)
    # (examples per property, per generator property) as each setting of the variable gives them
    for fuzz, counts in ((None, "40 5"), ("", "40 5"), ("ci", "40 5"), ("quick", "10 5"), ("long", "4000 400")):
        done = _profile_in_a_fresh_process(fuzz)
        assert (done.returncode, done.stdout.strip()) == (0, counts), (fuzz, done.stderr)
    typo = _profile_in_a_fresh_process("lnog")  # a typo fails rather than running the ci profile
    assert typo.returncode != 0 and "'lnog'" in typo.stderr, typo.stdout


# -- `configbags lint` over Python too deep to write back (round three) --------------------------

DEEP_PIECES = {"attribute": (".b", ""), "call": ("()", ""), "sum": ("+'a'", ""), "subscript": ("[0]", "")}


@SLOW_PROFILE
@given(piece=st.sampled_from(sorted(DEEP_PIECES)), depth=st.integers(min_value=1, max_value=2500),
       launch=st.booleans())
def test_lint_of_deep_python_gives_findings_never_a_traceback(piece: str, depth: int, launch: bool) -> None:
    from configbags.evolve import lint
    from configbags.evolve.view import load_view

    head = "import subprocess\nsubprocess.run(['python', '-m', 'sglang.launch_server', '--tp', '2'])\n" if launch else ""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "deep.py")
        path.write_text(head + "x = 'a'" + DEEP_PIECES[piece][0] * depth + "\n")
        found = lint.lint([path], load_view(REPO / "schema", cache=False))
    for finding in found:
        assert finding.file == path.as_posix() and finding.line >= 1
