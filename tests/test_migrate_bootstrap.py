"""The bootstrap: publish from an engine's own legacy record (a dataclass or a dict), with
its legacy resolution run as a hook whose every change is logged with its source."""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from configbags.generated import accessors  # registers the bundled package's context
from configbags.runtime.context import Context
from configbags.runtime.errors import RecordError
from configbags.runtime.legacy import legacy_values, publish_legacy

PACKAGE = "configbags.generated"
assert accessors.get_context().package == PACKAGE


@pytest.fixture
def config_scope() -> Iterator[Context[Any]]:
    """The bundled package's context, restored afterwards. Named explicitly: other tests in
    the same process may have loaded other generated packages."""
    ctx = accessors.get_context()
    with ctx.restoring(test=True):
        yield ctx


class Backend(enum.Enum):
    FLASHINFER = "flashinfer"
    TRITON = "triton"


@dataclasses.dataclass
class LegacyServerArgs:
    """An engine's own record, as it has it before the migration."""

    model_path: str
    tp_size: int = 1
    chunked_prefill_size: int = 8192
    context_length: int | None = None
    attention_backend: Backend | None = None
    legacy_only_knob: str = "kept out"  # not a leaf of the schema

    def __post_init__(self) -> None:
        self.resolved = True  # a private note, not a field


def adjust_for_model(args: LegacyServerArgs) -> None:
    """The engine's model-specific adjustment step: writes the record."""
    args.chunked_prefill_size = 4096  # runtime policy: becomes an override
    args.tp_size = 2  # startup policy: folded before publish
    args.attention_backend = Backend.TRITON


def test_the_hook_s_changes_are_logged_overrides_or_folded(
    config_scope: Context[Any], caplog: pytest.LogCaptureFixture
) -> None:
    legacy = LegacyServerArgs(model_path="/m", attention_backend=Backend.FLASHINFER)
    caplog.set_level(logging.INFO)
    report = publish_legacy(legacy, role="test", resolve=adjust_for_model, package=PACKAGE)
    assert report.context is config_scope
    source = f"legacy:{__name__}.adjust_for_model"
    assert report.source == source
    assert [(e.leaf, e.old, e.new, e.source) for e in report.overrides] == [
        ("chunked_prefill_size", 8192, 4096, source),
    ]
    assert report.folded == {"tp_size": (1, 2), "attention_backend": ("flashinfer", "triton")}
    assert report.ignored == ("legacy_only_knob",)
    assert config_scope.bag("schedule").chunked_prefill_size == 4096
    assert config_scope.bag("parallel").tp_size == 2
    assert config_scope.explain("chunked_prefill_size")["overrides"][0]["source"] == source
    assert any("folded before publish" in r.getMessage() and "tp_size" in r.getMessage() for r in caplog.records)
    # the engine's own record is untouched: the hook ran on a copy
    assert (legacy.tp_size, legacy.chunked_prefill_size) == (1, 8192)


def test_a_dict_copy_publishes_too(config_scope: Context[Any]) -> None:
    report = publish_legacy({"model_path": "/m", "tp_size": 4}, role="test", package=PACKAGE)
    assert report.overrides == () and report.folded == {}
    assert config_scope.bag("parallel").tp_size == 4


def test_a_hook_may_return_a_new_record(config_scope: Context[Any]) -> None:
    def resolve(args: dict[str, Any]) -> dict[str, Any]:
        return {**args, "chunked_prefill_size": 1024}

    report = publish_legacy({"model_path": "/m"}, role="test", resolve=resolve, package=PACKAGE)
    assert [e.new for e in report.overrides] == [1024]


def test_a_bad_legacy_value_is_refused_naming_the_leaf(config_scope: Context[Any]) -> None:
    with pytest.raises(RecordError, match="tp_size"):
        publish_legacy({"model_path": "/m", "tp_size": "two"}, role="test", package=PACKAGE)
    assert not config_scope.published


def test_legacy_values_reads_dataclasses_and_enums() -> None:
    values = legacy_values(LegacyServerArgs(model_path="/m", attention_backend=Backend.TRITON))
    assert values["attention_backend"] == "triton"
    assert "resolved" not in values


def adjust_for_architecture(args: LegacyServerArgs, architecture: str) -> None:
    """A resolution step that needs more than the record."""
    if architecture == "DeepseekV3":
        args.chunked_prefill_size = 2048


def test_a_bound_hook_is_named_after_its_function(config_scope: Context[Any]) -> None:
    hook = functools.partial(adjust_for_architecture, architecture="DeepseekV3")
    report = publish_legacy(LegacyServerArgs(model_path="/m"), role="test", resolve=hook, package=PACKAGE)
    assert report.source == f"legacy:{__name__}.adjust_for_architecture"
    assert config_scope.bag("schedule").chunked_prefill_size == 2048
