"""Contracts: the generator checks what `contracts.yaml` names; each server's fingerprints
come from resolved values only (not from the layer that set them) and hold no secret."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from configbags.codegen.errors import SchemaInvalid
from configbags.codegen.model import load_schema
from configbags.generated.accessors import get_context
from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.fleet import ApplyClass, apply_class, contracts_readback
from configbags.runtime.leaftypes import Policy
from configbags.runtime.testing import published

REPO = Path(__file__).resolve().parent.parent
assert get_context  # the bundled package's context is loaded, so `published` finds it


def bundled_copy(tmp_path: Path) -> Path:
    schema = tmp_path / "schema"
    shutil.copytree(REPO / "schema", schema)
    return schema


def errors_of(schema: Path) -> list[str]:
    with pytest.raises(SchemaInvalid) as caught:
        load_schema(schema)
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("leaves: [page_size]\n", "leaves: [page_sise]\n",
         "contracts.yaml:16: leaf 'page_sise': contract routing: 'page_sise' is not a leaf or derived value "
         "(did you mean 'page_size'?)"),
        ("leaves: [page_size]\n", "leaves: [page_size, api_key]\n",
         "contracts.yaml:16: leaf 'api_key': contract routing: leaf 'api_key' is secret"),
        ("roles: [target, draft]\n", "roles: [target, drafter]\n",
         "contracts.yaml:20: contract draft: role 'drafter' is not a choice of deployment_role"),
        ("role_leaf: deployment_role\n", "role_leaf: model_path\n",
         "contracts.yaml:5: leaf 'model_path': role_leaf 'model_path' must be a str leaf with `choices`"),
    ],
    ids=["unknown-leaf", "secret-leaf", "unknown-role", "role-leaf-without-choices"],
)
def test_the_generator_names_file_line_contract_and_leaf(tmp_path: Path, old: str, new: str, expected: str) -> None:
    schema = bundled_copy(tmp_path)
    path = schema / "contracts.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    found = errors_of(schema)
    # named as the folder was given, so the path opens from where the command ran
    assert any(e.startswith(f"{schema.as_posix()}/{expected}") for e in found), found


def test_a_metric_must_be_numeric_and_not_secret(tmp_path: Path) -> None:
    schema = bundled_copy(tmp_path)
    serving = schema / "namespaces" / "serving.yaml"
    text = serving.read_text()
    path_spec = "    owner: launcher\n    override: startup\n    secret: true\n    env: SGLANG_API_KEY\n"
    assert path_spec in text
    serving.write_text(text.replace(path_spec, path_spec + "    metric: true\n"))
    found = errors_of(schema)
    assert any("leaf 'api_key': metric: true needs a numeric or bool leaf" in e for e in found), found


def test_the_gauges_are_the_records_marked_metric() -> None:
    """One place for the fact: the registry lists the leaves whose own record says
    `metric`, in schema order; the fleet declaration carries no copy to drift."""
    marked = tuple(name for name, spec in REGISTRY.leaves.items() if spec.metric)
    assert marked and REGISTRY.metrics == marked
    assert not hasattr(REGISTRY.fleet, "metrics")


def record(*flags: str) -> ServerArgs:
    return ServerArgs.from_cli(["--model-path", "/models/m", *flags])


def fingerprint(args: ServerArgs, contract: str) -> str:
    with published(args, role="launcher") as ctx:
        fp: str = ctx.server_info()["fleet"]["contracts"][contract]["fingerprint"]
        return fp


def test_fingerprints_follow_resolved_values_not_layers(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("kv_cache_dtype: fp8_e4m3\n")
    by_flag = fingerprint(record("--kv-cache-dtype", "fp8_e4m3"), "kv_transfer")
    by_file = fingerprint(record("--config", str(config)), "kv_transfer")
    other = fingerprint(record("--kv-cache-dtype", "bf16"), "kv_transfer")
    assert by_flag == by_file != other
    # a leaf outside the contract changes nothing
    assert fingerprint(record("--kv-cache-dtype", "bf16", "--tp-size", "2"), "kv_transfer") == other
    # the router's page size, forced by a rule, is the page size the engines must match
    flashmla = fingerprint(record("--attention-backend", "flashmla"), "routing")
    assert flashmla == fingerprint(record("--page-size", "64"), "routing")


def test_the_kv_pages_precision_is_compared_not_its_spelling() -> None:
    """Round sixteen: a float16 prefill server and a bfloat16 decode one, both with
    kv_cache_dtype auto, store different pages, and agreed on "auto"; two spellings of one
    precision (bf16, bfloat16) store the same pages. Round seventeen: an auto bfloat16
    server whose checkpoint declares FP8 KV quantization stores fp8 pages, and agreed with
    a `--kv-cache-dtype bf16` one."""
    kv = "kv_transfer"
    assert fingerprint(record("--dtype", "float16"), kv) != fingerprint(record("--dtype", "bfloat16"), kv)
    assert fingerprint(record("--dtype", "float16"), kv) == fingerprint(record("--dtype", "half"), kv)
    assert fingerprint(record("--kv-cache-dtype", "bf16"), kv) == fingerprint(record("--kv-cache-dtype", "bfloat16"), kv)
    # an explicit KV dtype is what the pages hold, whatever the model dtype
    assert (fingerprint(record("--kv-cache-dtype", "fp8_e4m3", "--dtype", "float16"), kv)
            == fingerprint(record("--kv-cache-dtype", "fp8_e4m3", "--dtype", "bfloat16"), kv))
    # under auto the checkpoint decides (FP8 where it declares FP8 KV quantization): an auto
    # server agrees only with an auto server of its dtype, never with one told a precision
    assert fingerprint(record("--kv-cache-dtype", "bf16", "--dtype", "bfloat16"), kv) != fingerprint(
        record("--dtype", "bfloat16"), kv)
    assert fingerprint(record("--dtype", "bfloat16"), kv) == fingerprint(record("--dtype", "bfloat16"), kv)


def test_the_readback_names_role_values_and_layers() -> None:
    with published(record("--disaggregation-mode", "decode", "--kv-cache-dtype", "bf16",
                          "--api-key", "planted-secret-5a1"), role="launcher") as ctx:
        info = contracts_readback(ctx.registry, ctx.state, ctx.origins())
    assert info["role"] == "decode"
    assert info["role_origin"]["rule"] == "deployment_role_decode"  # from --disaggregation-mode decode
    kv = info["contracts"]["kv_transfer"]
    assert kv["binds"] and kv["where"] == "schema/contracts.yaml:8"
    assert kv["members"]["kv_page_dtype"] == {
        "value": "bf16", "layer": "derived",
        "source": "derived from kv_cache_dtype='bf16' from --kv-cache-dtype, dtype='auto' from schema default"}
    assert kv["members"]["page_size"]["value"] == 1
    assert info["contracts"]["draft"]["members"]["tokenizer_source"] == {
        "value": "/models/m", "layer": "derived",
        "source": "derived from tokenizer_path=None from schema default, model_path='/models/m' from --model-path"}
    assert info["contracts"]["draft"]["members"]["model.config.vocab_size"]["value"] is None
    assert "planted-secret-5a1" not in repr(info)


def test_every_contract_member_of_the_bundled_schema_is_public() -> None:
    for contract in REGISTRY.fleet.contracts:
        for member in contract.members:
            spec = REGISTRY.leaves.get(member)
            assert spec is None or not spec.secret, (contract.name, member)


def test_apply_class_follows_the_policy() -> None:
    assert [apply_class(p) for p in Policy] == [ApplyClass.RESTART, ApplyClass.RELOAD, ApplyClass.LIVE]
