"""An old spelling and the current one of the same leaf, given in one layer (a config
file's keys, two environment variables, two flags), are refused as a key given twice is:
neither silently wins. Across layers the usual precedence holds."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.errors import RecordError
from configbags.runtime.record import read_env
from configbags.runtime.registry import Renamed

LEAF, OLD = "cuda_graph_max_bs_decode", "cuda_graph_max_bs"


@pytest.mark.parametrize(("name", "text", "first", "lines"), [
    ("a.yaml", f"{LEAF}: 16\n{OLD}: 8\n", LEAF, (1, 2)),
    ("b.yaml", f"{OLD}: 8\nmodel_path: m\n{LEAF}: 16\n", OLD, (1, 3)),
    ("a.json", f'{{"{LEAF}": 16,\n "{OLD}": 8}}\n', LEAF, (1, 2)),
])
def test_a_config_file_with_an_old_and_a_new_key_of_one_leaf_is_refused_naming_both_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, first: str,
        lines: tuple[int, int]) -> None:
    config = tmp_path / name
    config.write_text(text)
    with pytest.raises(SystemExit) as info:
        ServerArgs.from_cli(["--model-path", "m", "--config", str(config)], environ={})
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    second = OLD if first == LEAF else LEAF
    assert f"{config}: keys '{first}' (line {lines[0]}) and '{second}' (line {lines[1]}) both set" in err


def test_the_old_key_alone_still_works(tmp_path: Path) -> None:
    config = tmp_path / "old.yaml"
    config.write_text(f"{OLD}: 8\n")
    assert ServerArgs.from_cli(["--model-path", "m", "--config", str(config)], environ={}).cuda_graph_max_bs_decode == 8


def test_an_old_and_a_new_flag_of_one_leaf_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--cuda-graph-max-bs", "8", "--cuda-graph-max-bs-decode", "16"],
                 ["--cuda-graph-max-bs-decode", "16", "--cuda-graph-max-bs", "8"]):
        with pytest.raises(SystemExit) as info:
            ServerArgs.from_cli(["--model-path", "m", *argv], environ={})
        err = capsys.readouterr().err
        assert info.value.code == 2
        assert "--cuda-graph-max-bs-decode and --cuda-graph-max-bs both set" in err
    assert ServerArgs.from_cli(["--model-path", "m", "--cuda-graph-max-bs", "8"], environ={}).cuda_graph_max_bs_decode == 8


def test_an_old_and_a_new_variable_of_one_leaf_are_refused() -> None:
    leaves = dict(REGISTRY.leaves)
    leaves[LEAF] = attrs.evolve(leaves[LEAF], env="SGLANG_CUDA_GRAPH_MAX_BS_DECODE",
                                renamed_from=(Renamed(OLD, None, "SGLANG_CUDA_GRAPH_MAX_BS", "0.5"),))
    registry = attrs.evolve(REGISTRY, leaves=leaves)
    both = {"SGLANG_CUDA_GRAPH_MAX_BS": "8", "SGLANG_CUDA_GRAPH_MAX_BS_DECODE": "16"}
    with pytest.raises(RecordError, match="SGLANG_CUDA_GRAPH_MAX_BS and SGLANG_CUDA_GRAPH_MAX_BS_DECODE are both set"):
        read_env(registry, both)
    assert read_env(registry, {"SGLANG_CUDA_GRAPH_MAX_BS": "8"})[0] == {LEAF: 8}
    assert read_env(registry, {"SGLANG_CUDA_GRAPH_MAX_BS_DECODE": "16"})[0] == {LEAF: 16}
