"""Apply classes and `configbags rollout`: every policy lands in its part (live by PATCH,
reload, restart) with its reason; the classes are in the config-file JSON Schema and in
OpenAPI; `--apply` sends the live part through the door of a 2-rank server, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from serve_server import ADMIN_KEY, API_KEY, Server

from configbags.fleet.rollout import EXIT_OK, EXIT_REFUSED, main
from configbags.generated.accessors import get_context
from configbags.generated.registry import REGISTRY
from configbags.generated.server_args import ServerArgs
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError
from configbags.runtime.fleet import ApplyClass, apply_class, route
from configbags.runtime.testing import published
from configbags.serve.app import create_app
from configbags.serve.door import Door

REPO = Path(__file__).resolve().parent.parent
OLD = {"tp_size": 2, "speculative_accept_threshold_acc": 1.0, "kv_cache_dtype": "auto",
       "disaggregation_mode": "null", "weight_version": "v1", "api_key": "old-secret-1f"}
NEW = {"tp_size": 4, "speculative_accept_threshold_acc": 0.6, "kv_cache_dtype": "fp8_e4m3",
       "disaggregation_mode": "decode", "weight_version": "v2", "api_key": "new-secret-9c"}


def write(path: Path, values: dict[str, Any]) -> Path:
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()))
    return path


def rollout(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_every_policy_lands_in_its_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = write(tmp_path / "old.yaml", OLD), write(tmp_path / "new.yaml", NEW)
    code, out = rollout(capsys, str(old), str(new), "--json", "--", "--model-path", "/models/m")
    assert code == EXIT_OK
    body = json.loads(out)
    routes = {c["leaf"]: (c["apply_class"], c["route"]) for c in body["changes"]}
    assert routes == {
        "speculative_accept_threshold_acc": ("live", "live"),  # runtime, the operator may write it
        "weight_version": ("live", "live"),
        "disaggregation_mode": ("live", "restart"),  # runtime, but only its owner writes it
        "kv_cache_dtype": ("reload", "reload"),  # load_time
        "tp_size": ("restart", "restart"),  # startup
        "api_key": ("restart", "restart"),
    }
    assert body["patch"] == {"source": "rollout", "leaves": {"speculative_accept_threshold_acc": 0.6,
                                                             "weight_version": "v2"}}
    why = {c["leaf"]: c["why"] for c in body["changes"]}
    assert "only scheduler may change it while the server runs" in why["disaggregation_mode"]
    assert why["kv_cache_dtype"].startswith("policy load_time")
    assert why["tp_size"].startswith("policy startup: fixed at publish")
    assert next(c for c in body["changes"] if c["leaf"] == "api_key")["new"] == "<redacted>"
    code, out = rollout(capsys, str(old), str(new), "--", "--model-path", "/models/m")
    assert "rollout: 6 change(s) (2 live, 1 reload, 3 restart)" in out
    assert 'body: {"source": "rollout", "leaves": {"weight_version": "v2", "speculative_accept_threshold_acc": 0.6}}' in out
    assert "old-secret-1f" not in out and "new-secret-9c" not in out


def test_a_readback_counts_its_overrides_and_hides_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert get_context
    record = ServerArgs.from_cli(["--model-path", "/models/m", "--tp-size", "2", "--api-key", "old-secret-1f"])
    with published(record, role="scheduler") as ctx:
        ctx.override("operator-test", speculative_accept_threshold_acc=0.6)
        readback = tmp_path / "live.json"
        readback.write_text(json.dumps(ctx.server_info()))
    new = write(tmp_path / "new.yaml", {"tp_size": 2, "speculative_accept_threshold_acc": 0.6,
                                        "api_key": "new-secret-9c"})
    code, out = rollout(capsys, str(readback), str(new), "--json", "--", "--model-path", "/models/m")
    body = json.loads(out)
    assert code == EXIT_OK
    assert body["changes"] == [] and body["patch"] is None  # the override already made it 0.6
    assert body["not_compared"] == ["api_key"]


def test_apply_classes_are_in_the_json_schema_and_openapi() -> None:
    schema = json.loads((REPO / "generated" / "server_args.schema.json").read_text())
    for name, spec in REGISTRY.leaves.items():
        assert schema["properties"][name]["x-configbags-apply"] == apply_class(spec.policy).value, name
    with published(ServerArgs(model_path="m"), role="launcher") as ctx:
        doc = create_app(Door(ctx)).openapi()
    assert doc["x-configbags-apply"] == {n: apply_class(s.policy).value for n, s in REGISTRY.leaves.items()}
    body = doc["paths"]["/config"]["patch"]["requestBody"]["content"]["application/json"]["schema"]
    props = body["properties"]["leaves"]["properties"]
    assert props["speculative_accept_threshold_acc"]["x-configbags-apply"] == "live"
    assert {p["x-configbags-apply"] for p in props.values()} <= {"live", "reload"}


def test_an_operator_role_with_write_any_is_never_live_and_the_door_refuses_to_start() -> None:
    # acting_as admits a write_any role only in a test scope, so such an operator's every
    # PATCH is refused: rollout must not call a change "live", nor serve list writable leaves
    roles = {**REGISTRY.roles, "operator": attrs.evolve(REGISTRY.roles["operator"], write_any=True)}
    registry = attrs.evolve(REGISTRY, roles=roles)
    assert route(REGISTRY, "weight_version")[0] is ApplyClass.LIVE
    klass, why = route(registry, "weight_version")
    assert klass is ApplyClass.RESTART and "write_any" in why
    ctx: Context[Any] = Context(registry, get_context().view, record_type=ServerArgs)
    with published(ServerArgs(model_path="m"), role="launcher", context=ctx), \
            pytest.raises(ConfigError, match="role 'operator' has `write_any: true`.*remove it and regenerate"):
        Door(ctx)


@pytest.mark.slow
def test_apply_sends_the_live_part_to_every_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = Server("--ranks", "2", "--tp-size", "2", "--api-key", API_KEY, "--admin-api-key", ADMIN_KEY)
    try:
        new = write(tmp_path / "new.yaml", {**NEW, "api_key": API_KEY})
        code, out = rollout(capsys, server.url, str(new), "--api-key", API_KEY, "--apply", server.url,
                            "--admin-key", "wrong-key", "--", "--model-path", "/models/m")
        assert code == EXIT_REFUSED
        assert "refused (401 bad_key)" in out and "nothing was applied" in out
        code, out = rollout(capsys, server.url, str(new), "--api-key", API_KEY, "--apply", server.url,
                            "--admin-key", ADMIN_KEY, "--", "--model-path", "/models/m")
        assert code == EXIT_OK, out
        assert f"applied to {server.url}: epoch 2, 2 leaf/leaves changed" in out
        info = httpx.get(f"{server.url}/server_info", headers={"Authorization": f"Bearer {API_KEY}"},
                         timeout=30).json()
        assert info["resolved"]["speculative_accept_threshold_acc"] == 0.6
        assert info["resolved"]["weight_version"] == "v2"
        assert [e["source"] for e in info["overrides"]] == ["http:rollout", "http:rollout"]
        assert info["resolved"]["tp_size"] == 2 and info["resolved"]["kv_cache_dtype"] == "auto"  # left alone
        assert [(r["rank"], r["epoch"]) for r in info["ranks"]] == [(0, 2), (1, 2)]
        assert len({r["config_hash"] for r in info["ranks"]}) == 1
        # the same rollout again: nothing live is left to send
        code, out = rollout(capsys, server.url, str(new), "--api-key", API_KEY, "--apply", server.url,
                            "--admin-key", ADMIN_KEY, "--", "--model-path", "/models/m")
        assert code == EXIT_OK and "nothing live to send" in out
    finally:
        server.stop()


def test_what_the_door_or_the_server_would_refuse_is_never_planned_live(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path / "old.yaml", {"api_key": "k1", "weight_version": "v1"})
    new = write(tmp_path / "new.yaml", {"api_key": " k2"})
    code = main([str(old), str(new), "--package", "configbags.generated", "--", "--model-path", "m"])
    err = capsys.readouterr().err
    assert code == 2 and "serving.api_key (--api-key / $SGLANG_API_KEY) has surrounding whitespace" in err
    assert "k2" not in err
    new = write(tmp_path / "new.yaml", {"speculative_num_draft_tokens": 999})
    code, out = rollout(capsys, str(old), str(new), "--package", "configbags.generated", "--json", "--",
                        "--model-path", "m")
    assert code == EXIT_OK
    [change] = [c for c in json.loads(out)["changes"] if c["leaf"] == "speculative_num_draft_tokens"]
    assert change["route"] == "restart"
    assert "above its capacity max_speculative_num_draft_tokens=0 on the running server" in change["why"]
