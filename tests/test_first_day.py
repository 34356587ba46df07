"""The first day, as a new user meets it: one-line messages for a missing extra and a
usage error, --help=KEYWORD through every command that takes server flags, serve's own
flags never shadowing a server flag, the state handoff in a base install, and messages
that name the engine's own generated files."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from genutil import REPO, copy_case, generate, import_generated

from configbags.runtime.cmdline import CommandHelp, collisions, matches
from configbags.runtime.record import RecordError
from configbags.serve.cli import _parser as serve_parser

NO_TORCH = "import sys; sys.modules['torch'] = None; "  # as in a base install: `import torch` fails


def _python(code: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=180,
                          check=False)


@pytest.mark.slow
def test_the_state_handoff_needs_no_torch() -> None:
    done = _python(NO_TORCH + (
        "from configbags.generated.accessors import publish, get_context\n"
        "from configbags.generated.server_args import ServerArgs\n"
        "from configbags.runtime.dist import export_state, import_state\n"
        "import configbags.runtime.dist as dist\n"
        "publish(ServerArgs.from_cli(['--model-path', 'm', '--tp-size', '2'], environ={}), role='launcher')\n"
        "state = export_state()\n"
        "try:\n    dist.init_distributed\nexcept ModuleNotFoundError as exc:\n    print(exc)\n"
    ))
    assert done.returncode == 0, done.stderr
    assert "configbags.runtime.dist.init_distributed needs torch" in done.stdout
    assert "pip install 'configbags[kv]'" in done.stdout


@pytest.mark.slow
def test_a_missing_extra_is_one_line() -> None:
    done = _python(NO_TORCH + (
        "from configbags.cli import main\n"
        "sys.exit(main(['plan', '--model-config', 'models/llama-3.1-8b.json', '--gpu', 'H100', "
        "'--allocate', 'meta']))"
    ))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "configbags plan: this needs torch, which the base install leaves out; install the extra: "
        "pip install 'configbags[kv]'"]


def test_a_usage_error_is_one_line_and_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.generated.server_args import ServerArgs

    with pytest.raises(SystemExit):
        ServerArgs.from_cli(["--tp-size", "two"], prog="serve", environ={})
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["serve: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'two'",
                   "  (`serve --help` lists the flags; --help=KEYWORD the ones a word names)"]


@pytest.mark.parametrize(("command", "keyword", "shown", "hidden"), [
    ("explain", "page-size", ["--page-size PAGE_SIZE"], ["--tp-size", "--gpu-name"]),
    ("explain", "gpu", ["--gpu-name", "--gpu-memory"], ["--page-size"]),
    ("plan", "kv", ["--kv-cache-dtype"], ["--model-config"]),
    ("serve", "log-level", ["--serve-log-level", "--log-level LOG_LEVEL"], ["--ranks"]),
])
def test_help_keyword_works_through_every_command_with_server_flags(
    command: str, keyword: str, shown: list[str], hidden: list[str]
) -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "configbags"), command, f"--help={keyword}"], cwd=REPO,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    for text in shown:
        assert text in done.stdout, (text, done.stdout)
    for text in hidden:
        assert text not in done.stdout, (text, done.stdout)


def test_keywords_match_whole_words_and_flag_names() -> None:
    parser = argparse.ArgumentParser()
    page = parser.add_argument("--page-size", help="Tokens per KV page.")
    paged = parser.add_argument("--attention", help="Use paged attention.")
    assert matches(page, "page") and matches(page, "page-size") and matches(page, "kv") and matches(page, "--page")
    assert not matches(paged, "page") and not matches(page, "age") and not matches(page, "size-page")


def test_serve_never_shadows_a_server_flag() -> None:
    # the config's own --log-level reaches the server record, not serve's logging
    args, server_flags = serve_parser().parse_known_args(["--log-level", "warning", "--serve-log-level", "info"])
    assert server_flags == ["--log-level", "warning"] and args.serve_log_level == "info"
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument("--role")
    server.add_argument("--page-size")
    assert collisions(serve_parser(), server) == ["--role"]
    assert not any(isinstance(a, argparse._HelpAction) for a in serve_parser()._actions)
    assert any(isinstance(a, CommandHelp) for a in serve_parser()._actions)


def test_messages_name_the_engines_own_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = copy_case("tiny", tmp_path)
    out = tmp_path / "engine" / "config"
    assert generate(schema, out) == 0
    modules = import_generated(out)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RecordError) as caught:
        modules["server_args"].ServerArgs.from_dict({"name": "x", "widht": 2})
    folder = Path(modules["server_args"].__file__).parent.relative_to(tmp_path)
    assert f"see {folder.as_posix()}/CONFIG.md for the leaves" in str(caught.value)
    assert "generated/CONFIG.md" not in str(caught.value)


HANDOFF = '''\
import sys

sys.modules["torch"] = None  # a base install: no torch, in the launcher and in the child

import multiprocessing

from configbags.runtime.dist import export_state, import_state


def child_main(state: str) -> None:
{child}


if __name__ == "__main__":
    from legacy_engine.server_args import ServerArgs, set_global_server_args

    set_global_server_args(ServerArgs(model_path="m", tp_size=2))  # publishes through publish_legacy
{launcher}
    child.join()
    sys.exit(child.exitcode)
'''


@pytest.mark.slow
def test_migrating_step_5_hands_the_state_to_a_child_in_a_base_install(tmp_path: Path) -> None:
    """The step-5 snippet of docs/MIGRATING.md, as written, on the fixture engine: the
    launcher publishes, the spawned child adopts its state, neither imports torch."""
    from configbags.codegen.__main__ import main as gen_main
    from configbags.migrate.importer import main as import_main

    root = tmp_path / "engine"
    shutil.copytree(REPO / "tests" / "fixtures" / "legacy_engine", root)
    schema = root / "schema"
    assert import_main([f"{root / 'legacy_engine' / 'server_args.py'}:ServerArgs", "--out", str(schema),
                        "--mapping", str(root / "mapping.yaml")]) == 0
    assert gen_main(["--schema", str(schema), "--out", str(root / "legacy_engine" / "config_bags")]) == 0
    doc = (REPO / "docs" / "MIGRATING.md").read_text()
    step = doc[doc.index("## 5."):doc.index("## 6.")]
    snippet = next(b for b in re.findall(r"```python\n(.*?)```", step, re.S) if "def child_main" in b)
    body = snippet[snippet.index("def child_main"):].split("\n", 1)[1]
    child, _, launcher = body.partition("# in the launcher, after publish_legacy:")
    child = child.replace("    ...                                         # reads go through the accessors",
                          "    from legacy_engine.config_bags.accessors import get_parallel\n"
                          "    assert get_parallel().tp_size == 2, get_parallel().tp_size")
    launcher = "    " + launcher.strip().replace(".start()", "")
    script = root / "handoff.py"
    script.write_text(HANDOFF.format(child=child.rstrip(), launcher=f"    child = {launcher.strip()}\n    child.start()"))
    done = subprocess.run([sys.executable, str(script)], cwd=root, capture_output=True, text=True, timeout=300,
                          check=False, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf", "1e400", "soon"])
def test_serve_refuses_a_rank_timeout_that_is_not_positive_and_finite(value: str) -> None:
    with pytest.raises(SystemExit) as info:
        serve_parser().parse_known_args(["--rank-timeout", value])
    assert info.value.code == 2


def test_explain_and_plan_refuse_a_server_flag_that_is_also_their_own() -> None:
    """Round fifteen: a leaf `json` or `package` was taken by explain's own `--json` or
    `--package` without a word; serve alone refused such a flag. Now all three do."""
    from configbags.runtime.cmdline import refuse_collisions
    from configbags.runtime.errors import ConfigError

    ours = argparse.ArgumentParser(add_help=False)
    ours.add_argument("--json", action="store_true")
    ours.add_argument("--tp-size")
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument("--json", action="store_true")
    server.add_argument("--tp-size")
    with pytest.raises(ConfigError, match=r"--json of eng\.config are also flags of configbags explain"):
        refuse_collisions("configbags explain", ours, server, "eng.config", shared=("--tp-size",))
    refuse_collisions("configbags plan", ours, server, "eng.config", shared=("--tp-size", "--json"))
