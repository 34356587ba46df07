"""Round fifteen: a nonzero float literal that underflows (`1e-400`) was stored as 0.0
without a word at every door, while an overflow to infinity is refused; `-0.0` passed a
bound of 0.0 and read back as `-0.0`. Now the underflow is refused wherever text becomes a
float (flag, config file, JSON, the HTTP door), and -0.0 is stored as 0.0."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from configbags.cli import main as configbags
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError
from configbags.runtime.leaftypes import float_from_text
from configbags.runtime.yamlsafe import load_json
from configbags.serve.door import DoorError, parse_patch

LEAF = "speculative_accept_threshold_acc"
UNDERFLOWS = ["1e-400", "-1e-400", "0.1e-324", "2e-324", "1E-999", "0.0001e-330"]
ZEROS = ["0", "0.0", "-0.0", "0e5", "0.000e-400", "-0e-999"]


@pytest.mark.parametrize("text", UNDERFLOWS)
def test_an_underflowing_literal_is_refused_by_the_one_grammar_and_json(text: str) -> None:
    with pytest.raises(ValueError, match="too small for a float"):
        float_from_text(text)
    with pytest.raises(ConfigError, match="too small for a float"):
        load_json(f'{{"x": {text}}}')
    with pytest.raises(DoorError, match="too small for a float"):
        parse_patch(f'{{"source": "t", "leaves": {{"{LEAF}": {text}}}}}'.encode())


@pytest.mark.parametrize("text", ZEROS)
def test_zero_written_any_way_is_zero(text: str) -> None:
    assert float_from_text(text) == 0.0
    assert load_json(f'{{"x": {text}}}')["x"] == 0.0


def test_subnormals_and_model_configs_keep_their_values() -> None:
    assert float_from_text("1e-310") == 1e-310 and float_from_text("5e-324") > 0
    # a model's config.json is read as Hugging Face reads it
    assert load_json('{"eps": 1e-400}', constants=True, duplicates=True)["eps"] == 0.0


@pytest.mark.parametrize("where", ["flag", "file", "json file"])
def test_every_operator_door_refuses_the_underflow_naming_it(where: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explain", LEAF, "--model-path", "m"]
    if where == "flag":
        argv.append("--speculative-accept-threshold-acc=1e-400")
    else:
        path = tmp_path / ("c.yaml" if where == "file" else "c.json")
        path.write_text(f"{LEAF}: 1e-400\n" if where == "file" else f'{{"{LEAF}": 1e-400}}')
        argv += ["--config", str(path)]
    try:
        code = configbags(argv)
    except SystemExit as exc:
        code = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code == 2 and "too small for a float" in err and "Traceback" not in err, err


def test_minus_zero_is_stored_read_back_and_logged_as_zero(config_scope: Context[Any], record: ServerArgs) -> None:
    ctx = config_scope.publish(record, role="test")
    with ctx.acting_as("operator"):
        ctx.override("test", **{LEAF: -0.0})
    value = ctx.server_info()["resolved"][LEAF]
    assert value == 0.0 and math.copysign(1.0, value) == 1.0
    new = ctx.server_info()["overrides"][-1]["new"]
    assert math.copysign(1.0, new) == 1.0
