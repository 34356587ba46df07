"""Round sixteen: the `draft` contract compares a model fact (`model.config.vocab_size`).
`serve` published no model facts, so the fact was null on every server and two servers of
different vocabularies "agreed". Now serve reads the facts from the config.json of a
--model-path folder (as the engine loads the model from it), and a fact missing on a server
leaves the contract unchecked, a failure unless --allow-unchecked names it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_server import Server

from configbags.fleet.check import EXIT_BROKEN, EXIT_OK, main

pytestmark = pytest.mark.slow

MODELS = Path(__file__).resolve().parent.parent / "models"
KEY = "key-facts-7d2c"


def model_folder(root: Path, model: str) -> Path:
    folder = root / model
    folder.mkdir()
    shutil.copy(MODELS / f"{model}.json", folder / "config.json")
    return folder


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--api-key", KEY, "--allow-unchecked", "routing", *argv])
    return code, capsys.readouterr().out


def test_servers_published_without_the_fact_leave_the_contract_unchecked(
        servers: list[Server], capsys: pytest.CaptureFixture[str]) -> None:
    for role in ("target", "draft"):
        servers.append(Server("--api-key", KEY, "--deployment-role", role, "--tokenizer-path", "/tok"))
    urls = [f"{role}={s.url}" for role, s in zip(("target", "draft"), servers, strict=True)]
    code, out = check(capsys, *urls)
    assert code == EXIT_BROKEN, out
    assert "UNCHECKED draft: model.config.vocab_size could not be compared" in out, out
    assert "ok draft" not in out
    code, out = check(capsys, "--allow-unchecked", "draft", *urls)
    assert code == EXIT_OK and "unchecked draft:" in out, out


def test_a_model_folder_gives_the_facts_and_different_vocabularies_break_the_contract(
        servers: list[Server], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = model_folder(tmp_path, "qwen2.5-0.5b")  # vocab_size 151936
    draft = model_folder(tmp_path, "mistral-7b-v0.1")  # vocab_size 32000
    for role, folder in (("target", target), ("draft", draft)):
        servers.append(Server("--api-key", KEY, "--deployment-role", role, "--tokenizer-path", "/tok",
                              "--model-path", str(folder)))
    body = httpx.get(f"{servers[1].url}/config/contracts", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert body["contracts"]["draft"]["members"]["model.config.vocab_size"]["value"] == 32000
    urls = [f"{role}={s.url}" for role, s in zip(("target", "draft"), servers, strict=True)]
    code, out = check(capsys, *urls)
    assert code == EXIT_BROKEN and "BROKEN draft" in out, out
    assert "151936" in out and "32000" in out


@pytest.mark.parametrize("kind", ["folder", "dangling", "fifo"])
def test_a_model_folder_whose_config_json_is_no_file_refuses_the_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """Round eighteen: such a config.json gave no facts in silence (every model rule
    skipped); serve refuses it, as the engine could not load the model."""
    import os

    from configbags.serve.cli import main as serve

    folder = tmp_path / "m"
    folder.mkdir()
    config = folder / "config.json"
    if kind == "folder":
        config.mkdir()
    elif kind == "dangling":
        config.symlink_to(tmp_path / "nowhere.json")
    else:
        os.mkfifo(config)
    assert serve(["--package", "configbags.generated", "--model-path", str(folder)]) == 2
    assert "its config.json is not a regular file" in capsys.readouterr().err


def test_explain_reads_the_facts_of_a_model_folder_as_serve_does(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Round eighteen: `explain LEAF --model-path DIR` skipped DIR/config.json, so for
    Gemma-2 it said `disable_hybrid_swa_memory = false [default]` while serve held `true`."""
    from configbags.cli import main as configbags
    from configbags.generated.accessors import get_context

    folder = model_folder(tmp_path, "gemma-2-9b")
    with get_context().restoring():
        assert configbags(["explain", "disable_hybrid_swa_memory", "--model-path", str(folder)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "disable_hybrid_swa_memory = true   [model: rule gemma2_full_swa_memory" in first, first
