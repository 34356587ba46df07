"""State transfer between processes: a stable, versioned JSON form of the published state
(record, override log, role, ranks, sealed, epoch). A child process adopts it and holds
exactly the parent's state. torch-free."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from configbags.runtime.context import (
    Context,
    OverrideEntry,
    OverrideLog,
    Ranks,
    process_context,
)
from configbags.runtime.errors import ConfigError, DistributedConfigError
from configbags.runtime.leaftypes import jsonable

FORMAT = "configbags.state"
FORMAT_VERSION = 1


def state_dict(context: Context[Any] | None = None) -> dict[str, Any]:
    """The published state as plain JSON-able data (format version 1). An operator
    readback and a transport for `import_state`, like `Context.state`: it holds every
    namespace, unscoped by role, so role code does not read config through it (the read
    ratchet reports it in the scanned tree unless an allowlist entry says why).

    `format`, `version`, `role`, `epoch`, `sealed`, `ranks`, `record` (leaf -> operator
    value), `log` (entries: epoch, source, leaf, namespace, old, new, wall_time) and
    `config_hash` (checked on import, so a schema mismatch between processes is caught)."""
    ctx = context or process_context()
    state = ctx.state
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "role": state.role,
        "epoch": state.epoch,
        "sealed": state.sealed,
        "ranks": dict(state.ranks),
        "record": jsonable(state.record.to_dict()),
        "log": [e.as_dict() for e in state.log],
        **_log_summary(state.log),
        "config_hash": ctx.config_hash(),
        # what the rules decided from facts this process may not have, and every origin
        "resolution": ctx.export_resolution(),
    }


def _log_summary(log: OverrideLog) -> dict[str, Any]:
    # Only once the log has folded, so the form of an ordinary state is unchanged.
    if not log.folded:
        return {}
    return {"log_summary": {"standing": log.standing_count, "folded": log.folded,
                            "tally": [[leaf, kind, n] for (leaf, kind), n in sorted(log.tally_folded().items())]}}


def _log_from(context: Context[Any], data: Mapping[str, Any]) -> OverrideLog:
    entries = [entry_from_dict(context, e) for e in data["log"]]
    summary = data.get("log_summary")
    if summary is None:
        return OverrideLog() + entries
    k = int(summary["standing"])
    return OverrideLog(entries[k:], standing=entries[:k], folded=int(summary["folded"]),
                       tally={(str(leaf), str(kind)): int(n) for leaf, kind, n in summary["tally"]})


def export_state(context: Context[Any] | None = None) -> str:
    """`state_dict` as canonical JSON text (sorted keys): pass it to a child process."""
    return json.dumps(state_dict(context), sort_keys=True, separators=(",", ":"))


def _coerce(context: Context[Any], leaf: str, value: Any) -> Any:
    # JSON turned tuples into lists; the leaf type gives back the canonical form. A value the
    # type refuses (e.g. a fallback-applied `old`) is kept as it came.
    spec = context.registry.leaves.get(leaf)
    if spec is None:
        return value
    try:
        return spec.type.coerce(value)
    except ConfigError:
        return value


def entry_from_dict(context: Context[Any], data: Mapping[str, Any]) -> OverrideEntry:
    leaf = data["leaf"]
    if leaf not in context.registry.leaves:
        raise DistributedConfigError(
            f"imported override log names {leaf!r}, which is not a leaf of this process's schema; "
            f"parent and child must run the same generated code (make gen)"
        )
    return OverrideEntry(
        epoch=int(data["epoch"]),
        source=str(data["source"]),
        leaf=leaf,
        namespace=str(data["namespace"]),
        old=_coerce(context, leaf, data["old"]),
        new=_coerce(context, leaf, data["new"]),
        wall_time=float(data["wall_time"]),
        secret=context.registry.leaves[leaf].secret,
    )


def import_state(
    data: Mapping[str, Any] | str,
    context: Context[Any] | None = None,
    *,
    role: str | None = None,
    ranks: Ranks | None = None,
    record_type: Any = None,
) -> Context[Any]:
    """Install an exported state into `context` (default: this process's context).

    `role` and `ranks` replace the exported ones (a scheduler spawning a detokenizer, a rank
    stamping its own ranks); by default the child takes the parent's. The log and epochs are
    kept as they are (no replay), so the resulting state equals the exporter's."""
    if isinstance(data, str):
        data = json.loads(data)
        assert isinstance(data, Mapping)
    if data.get("format") != FORMAT:
        raise DistributedConfigError(f"not an exported configbags state (format={data.get('format')!r})")
    if data.get("version") != FORMAT_VERSION:
        raise DistributedConfigError(
            f"exported state has format version {data.get('version')!r}; this process reads "
            f"version {FORMAT_VERSION}: run the same configbags version on both sides"
        )
    ctx = context or process_context()
    rtype = record_type or ctx.record_type
    if rtype is None:
        raise DistributedConfigError("import_state: this context has no record type; pass record_type=")
    record = rtype.from_dict(data["record"], source="exported state")
    entries = _log_from(ctx, data)
    ctx.adopt(
        record,
        role=role or data["role"],
        log=entries,
        epoch=int(data["epoch"]),
        sealed=bool(data["sealed"]),
        ranks=dict(data["ranks"]) if ranks is None else ranks,
        resolution=data.get("resolution"),
    )
    got = ctx.config_hash()
    if got != data["config_hash"]:
        raise DistributedConfigError(
            f"imported state resolves to config_hash {got}, the exporter had "
            f"{data['config_hash']}: the processes run different schemas or derivations"
        )
    return ctx


def from_state(
    text: str,
    context: Context[Any] | None = None,
    *,
    role: str | None = None,
    ranks: Ranks | None = None,
) -> Context[Any]:
    """Child side of `export_state`: publish the parent's exact state in this process."""
    return import_state(text, context, role=role, ranks=ranks)
