"""`GET /metrics`: the config as Prometheus sees it, with `prometheus_client`.

Curated, so the number of series is bounded by the schema, never by values: every label
value is a schema name (leaf, contract), a word from a closed set (the deployment role is
one of its leaf's choices; sealed; the kind of an override's source) or the schema version.
What changes with the config (the epoch, the config hash, each contract's fingerprint) is a
sample's value, never a label, so a change never starts a new series. No free text (paths,
model names, override sources) and no secret reaches a label or a sample. The families:

- `configbags_server_info`: schema version, deployment role, sealed;
- `configbags_config_epoch`: the epoch as a number, to graph changes;
- `configbags_config_hash`: the config hash as a number (`digest_value`);
- `configbags_contract_fingerprint`: one series per contract, its fingerprint as a number;
- `configbags_config_overrides_total`: override log entries by leaf and source kind
  (`http` PATCH, `file` watched config file, `process` the engine's own code);
- `configbags_config_<leaf>`: a gauge per numeric leaf the schema marks `metric: true`
  (an unset value has no sample);
- `configbags_restart_required`: 1 per startup leaf a watched config file changed but a
  running server cannot apply (`serve --watch`);
- `configbags_rank_stalled`, `configbags_rank_left`: 1 per worker rank (`serve --ranks N`)
  alive but not answering, or gone from the group; /metrics stays 200 so scrapes go on
  (while the rank store is stalled both are left out: they cannot be read through it).

Values are read from one State per scrape, so a scrape never mixes two epochs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from configbags.runtime.fleet import fingerprints
from configbags.serve.door import Door

SOURCE_KINDS = ("http", "file")  # prefixes the door and the watcher give; anything else is `process`
PREFIX = "configbags"

__all__ = ["CONTENT_TYPE_LATEST", "ConfigCollector", "digest_value", "exposition", "metrics_registry", "source_kind"]


DIGEST_HEX = 13  # hex digits of a hash a sample carries: 52 bits, exact in a float64


def digest_value(digest: str) -> float:
    """A hex digest (the config hash, a contract fingerprint) as a sample value: its first
    DIGEST_HEX digits as an integer, exact in the float a sample is, so equal digests
    give equal values (`count_values` compares servers) with no label per digest."""
    return float(int(digest[:DIGEST_HEX], 16))


def source_kind(source: str) -> str:
    """The bounded kind of an override's free-text source: `http:oncall-alice` -> http."""
    head = source.partition(":")[0]
    return head if head in SOURCE_KINDS else "process"


class ConfigCollector(Collector):
    """Builds every family from the door's context at scrape time. `pending` gives the
    startup leaves waiting for a restart (the watcher's; empty without one)."""

    def __init__(self, door: Door, pending: Callable[[], Mapping[str, Any]] = dict) -> None:
        self.door = door
        self.pending = pending

    def collect(self) -> Iterable[Metric]:
        ctx = self.door.context
        # one state: hash, epoch and values of the same moment
        state, config_hash = self.door.consistent(lambda: (ctx.state, ctx.config_hash()))
        registry = ctx.registry
        fleet = fingerprints(registry, state)
        yield InfoMetricFamily(f"{PREFIX}_server", "This server's config: schema version, deployment role, "
                               "whether model load is over", value={
                                   "schema_version": registry.schema_version,
                                   "role": fleet["role"] or "",
                                   "sealed": "true" if state.sealed else "false",
                               })
        epoch = GaugeMetricFamily(f"{PREFIX}_config_epoch", "Config epoch: 1 at publish, +1 per change")
        epoch.add_metric([], state.epoch)
        yield epoch
        digest = GaugeMetricFamily(f"{PREFIX}_config_hash", f"The config hash (GET /server_info config_hash) "
                                   f"as a number: its first {DIGEST_HEX} hex digits")
        digest.add_metric([], digest_value(config_hash))
        yield digest
        contracts = GaugeMetricFamily(f"{PREFIX}_contract_fingerprint", "Fingerprint of each fleet contract "
                                      f"(schema contracts.yaml) as a number, its first {DIGEST_HEX} hex digits: "
                                      "servers that must agree show the same", labels=["contract", "binds"])
        for name, c in fleet["contracts"].items():
            contracts.add_metric([name, "true" if c["binds"] else "false"], digest_value(c["fingerprint"]))
        yield contracts
        counts: dict[tuple[str, str], int] = {}
        for (leaf, head), n in state.log.tally().items():  # folded entries included: never goes back
            key = (leaf, source_kind(head))
            counts[key] = counts.get(key, 0) + n
        overrides = CounterMetricFamily(f"{PREFIX}_config_overrides", "Overrides applied, by leaf and "
                                        "source kind (http, file, process)", labels=["leaf", "source_kind"])
        for (leaf, kind), n in sorted(counts.items()):
            overrides.add_metric([leaf, kind], n)
        yield overrides
        for name in registry.metrics:
            spec = registry.leaves[name]
            gauge = GaugeMetricFamily(f"{PREFIX}_config_{name}", f"Resolved value of {spec.namespace}.{name} "
                                      f"(policy {spec.policy.value}; schema `metric: true`)")
            value = state.values.get(name)
            if isinstance(value, (bool, int, float)):
                gauge.add_metric([], float(value))
            yield gauge
        restart = GaugeMetricFamily(f"{PREFIX}_restart_required", "1 for each startup leaf a watched config "
                                    "file changed that only a restart applies", labels=["leaf"])
        for leaf in sorted(self.pending()):
            restart.add_metric([leaf], 1.0)
        yield restart
        yield from self._ranks()

    def _ranks(self) -> Iterable[Metric]:
        ranks = self.door.ranks
        stalled = GaugeMetricFamily(f"{PREFIX}_rank_stalled", "1 for each worker rank alive but not "
                                    "answering (stopped or hung): config reads and changes answer 503",
                                    labels=["rank"])
        left = GaugeMetricFamily(f"{PREFIX}_rank_left", "1 for each worker rank that left the group "
                                 "(exited, or ended after a long stall): degraded until a restart",
                                 labels=["rank"])
        # a store stalled (named, or a call to it not back in time) leaves the rank gauges out
        # for this scrape: what they would say cannot be read through it
        if ranks is not None and ranks.store_stalled() is None:
            from configbags.serve.storehost import StoreStalledError

            with contextlib.suppress(StoreStalledError):
                gone = ranks.gone()
                for rank in gone:
                    left.add_metric([str(rank)], 1.0)
                for rank in ({} if gone else ranks.stalled()):
                    stalled.add_metric([str(rank)], 1.0)
        yield stalled
        yield left


def metrics_registry(collector: ConfigCollector) -> CollectorRegistry:
    """A registry of its own for the door (nothing process-global: two doors in one process,
    as in tests, never share series)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The text exposition of one scrape."""
    return bytes(generate_latest(registry))
