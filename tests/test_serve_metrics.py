"""`GET /metrics`: the exposition parses with prometheus_client's own parser, carries the
curated families, and no secret or free-text value (planted below) reaches it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from configbags.generated.accessors import get_context
from configbags.generated.server_args import ServerArgs
from configbags.runtime.testing import published
from configbags.serve.app import create_app
from configbags.serve.door import Door
from configbags.serve.metrics import source_kind

PLANTED = {
    "api_key": "planted-read-secret-4e1f",
    "admin_api_key": "planted-admin-secret-77ab",
    "model_path": "/models/planted-model-path",
    "served_model_name": "planted model name with spaces",
    "source": "planted-oncall-source",
}
READ = {"Authorization": f"Bearer {PLANTED['api_key']}"}
ADMIN = {"Authorization": f"Bearer {PLANTED['admin_api_key']}"}


class Client:
    """Requests straight into the ASGI app (no server, no socket)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://door") as c:
                return await c.request(method, path, **kw)

        return asyncio.run(go())

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def patch(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", path, **kw)


@pytest.fixture
def client() -> Iterator[Client]:
    assert get_context  # the bundled package's context is the one `published` finds
    record = ServerArgs.from_cli([
        "--model-path", PLANTED["model_path"], "--served-model-name", PLANTED["served_model_name"],
        "--api-key", PLANTED["api_key"], "--admin-api-key", PLANTED["admin_api_key"],
        "--disaggregation-mode", "decode", "--tp-size", "2", "--kv-cache-dtype", "fp8_e4m3",
    ])
    with published(record, role="launcher") as ctx:
        ctx.seal()
        yield Client(create_app(Door(ctx)))


def families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def test_metrics_parse_and_carry_the_curated_families(client: Client) -> None:
    assert client.get("/metrics").status_code == 401  # a read: it needs the api key
    answer = client.patch("/config", headers=ADMIN, json={
        "source": PLANTED["source"], "leaves": {"speculative_accept_threshold_acc": 0.7, "weight_version": "v2"}})
    assert answer.status_code == 200, answer.text
    response = client.get("/metrics", headers=READ)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = families(response.text)
    (labels, value), = found["configbags_server_info"]
    assert value == 1.0
    assert labels == {"role": "decode", "sealed": "true", "schema_version": "0.5"}
    assert found["configbags_config_epoch"] == [({}, 2.0)]
    info = client.get("/server_info", headers=READ).json()
    assert found["configbags_config_hash"] == [({}, float(int(info["config_hash"][:13], 16)))]
    contracts = {s[0]["contract"]: s for s in found["configbags_contract_fingerprint"]}
    assert set(contracts) == {"kv_transfer", "routing", "draft"}
    assert contracts["kv_transfer"][0]["binds"] == "true" and contracts["draft"][0]["binds"] == "false"
    for name, (_, fingerprint) in contracts.items():
        assert fingerprint == int(info["fleet"]["contracts"][name]["fingerprint"][:13], 16)
    assert sorted(found["configbags_config_overrides"], key=lambda s: s[0]["leaf"]) == [
        ({"leaf": "speculative_accept_threshold_acc", "source_kind": "http"}, 1.0),
        ({"leaf": "weight_version", "source_kind": "http"}, 1.0),
    ]
    assert found["configbags_config_speculative_accept_threshold_acc"] == [({}, 0.7)]
    assert found["configbags_config_tp_size"] == [({}, 2.0)]
    assert found["configbags_config_max_running_requests"] == []  # unset: no sample, not a made-up 0
    assert found["configbags_restart_required"] == []


def test_no_secret_or_free_text_reaches_the_exposition(client: Client) -> None:
    client.patch("/config", headers=ADMIN, json={"source": PLANTED["source"],
                                                 "leaves": {"weight_version": "planted-weight-label"}})
    text = client.get("/metrics", headers=READ).text
    for planted in [*PLANTED.values(), "planted-weight-label"]:
        assert planted not in text
    # every label value is a schema name, a closed word, a version or a hash: bounded by the schema
    labels = {k: v for f in text_string_to_metric_families(text) for s in f.samples for k, v in s.labels.items()}
    assert set(labels) <= {"schema_version", "role", "sealed", "contract", "binds", "leaf", "source_kind"}


def test_a_change_moves_sample_values_never_the_set_of_series(client: Client) -> None:
    """The epoch, the config hash and a contract's fingerprint change with each PATCH: as
    values, so the series a scrape shows stay the ones it showed before."""
    client.patch("/config", headers=ADMIN, json={"source": "s", "leaves": {
        "weight_version": "v0", "speculative_accept_threshold_acc": 0.9}})  # each leaf's override series exists

    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = client.get("/metrics", headers=READ).text
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text)
                for s in f.samples}

    before = scrape()
    for n in range(1, 6):
        answer = client.patch("/config", headers=ADMIN, json={
            "source": "s", "leaves": {"weight_version": f"v{n}", "speculative_accept_threshold_acc": n / 10}})
        assert answer.status_code == 200, answer.text
    after = scrape()
    assert set(after) == set(before)
    kv = ("configbags_contract_fingerprint", (("binds", "true"), ("contract", "kv_transfer")))
    assert after[kv] != before[kv]  # weight_version is a kv_transfer member: its fingerprint moved, as a value
    assert after[("configbags_config_epoch", ())] == before[("configbags_config_epoch", ())] + 5


def test_source_kinds_are_a_closed_set() -> None:
    assert [source_kind(s) for s in ("http:alice", "file:/etc/c.yaml", "kv_pool.resolve_dtype", "")] == [
        "http", "file", "process", "process"]
