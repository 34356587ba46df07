"""The readbacks: every surface that reports config (server_info, explain, the config hash,
a dumped config file) reads one State through these functions, so they cannot disagree.
Secrets read as REDACTED in each."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from configbags.runtime.context._records import State, override_origin
from configbags.runtime.errors import UnknownLeafError
from configbags.runtime.fleet import fingerprints
from configbags.runtime.leaftypes import canonical, closest, jsonable
from configbags.runtime.registry import Registry
from configbags.runtime.resolve import (
    DEFAULT_ORIGIN,
    NO_FACTS,
    Layer,
    Origin,
    tests_a_fact,
    verdicts,
)

log = logging.getLogger("configbags")


def server_info(registry: Registry, state: State) -> dict[str, Any]:
    """The single readback every surface that reports config uses: the raw `record` the
    operator gave, the `overrides` log (source, old, new, epoch, time), `resolved` (rules,
    overrides, fallbacks and derived values applied), `layers` (each leaf's layer and
    source, and the rule that set it) and the `facts` the rules saw. Secrets read as
    REDACTED everywhere in it."""
    reg = registry
    info: dict[str, Any] = {
        "record": {n: reg.shown(n, v) for n, v in jsonable(state.record.to_dict()).items()},
        "overrides": [e.as_dict(reg.leaves.get(e.leaf)) for e in state.log],
        "resolved": {n: jsonable(reg.shown(n, v)) for n, v in state.values.items()},
        "layers": {n: o.as_dict() for n, o in origins(registry, state).items()},
        "facts": state.facts.as_dict(),
        "fleet": fingerprints(registry, state),
    }
    if state.log.folded:  # the older overrides kept only as each leaf's last one
        info["overrides_folded"] = state.log.folded
    return info


def origins(registry: Registry, state: State) -> dict[str, Origin]:
    """Every leaf's origin now: its last override (layer load_time or runtime, by policy)
    or else where publish resolved it from."""
    out = {n: state.origins.get(n, DEFAULT_ORIGIN) for n in registry.leaves}
    for e in state.log:
        # the launch layers' values it hides stay hidden under it (a watched file's value
        # under a flag the override replaced): its shadows are theirs
        out[e.leaf] = attrs.evolve(override_origin(registry.leaves[e.leaf], e),
                                   shadows=state.origins.get(e.leaf, DEFAULT_ORIGIN).shadows)
    return out


def explain(registry: Registry, state: State, leaf: str) -> dict[str, Any]:
    """Every layer of one leaf: its schema default, what each rule made of the facts,
    the operator value and its source, each override, and the resolved value with the
    layer (and rule) it came from. Secrets read as REDACTED."""
    if leaf not in state.values:
        raise UnknownLeafError(f"{leaf!r} is not a config leaf{closest(leaf, state.values)}")
    spec = registry.leaves.get(leaf)
    out: dict[str, Any] = {
        "leaf": leaf,
        "namespace": registry.namespace_of(leaf),
        "accessor": registry.accessor_of(leaf),
        "policy": spec.policy.value if spec else "derived",
        "owner": spec.owner if spec else None,
        "secret": spec.secret if spec else False,
        "hashed": leaf in registry.hashed,
        "record": jsonable(registry.shown(leaf, getattr(state.record, leaf))) if spec else None,
        "overrides": [e.as_dict(spec) for e in state.log if e.leaf == leaf],
        "resolved": jsonable(registry.shown(leaf, state.values[leaf])),
    }
    if spec is None:
        derived = registry.derived[leaf]
        out.update(layer="derived", source=f"derived from {', '.join(derived.inputs)}", rule=None, rules=[])
        return out
    origin = origins(registry, state)[leaf]
    base = {n: getattr(state.record, n) for n in registry.leaves}
    base.update({n: state.values[n] for n, o in state.origins.items() if o.rule is not None})
    out.update(
        default=jsonable(spec.shown(spec.default)),
        layer=origin.layer.value,
        source=origin.source,
        rule=origin.rule,
        origin=origin.as_dict(),
        rules=[v.as_dict(spec) for v in verdicts(registry, leaf, state.facts, base, state.origins)],
        facts=state.facts.as_dict(),
    )
    # Only rules that test a fact need one; a rule of leaves alone (the page size an
    # attention backend forces) applies without facts, and the note must not say otherwise.
    needs_facts = [r.id for r in registry.rules_by_leaf.get(leaf, ()) if tests_a_fact(r)]
    if needs_facts and state.facts == NO_FACTS:
        out["note"] = f"no facts were given at publish, so the rules that test them did not apply: {', '.join(needs_facts)}"
    return out


def export_resolution(state: State) -> dict[str, Any]:
    """What the rules decided, as plain data for `adopt(..., resolution=...)` on another
    rank or process (which may have no facts): the origins and the rule-set values.
    Secrets never come from rules, so none is in it."""
    return {
        "facts": state.facts.as_dict(),
        "origins": {n: o.as_dict() for n, o in state.origins.items()},
        "rule_values": {n: jsonable(state.values[n]) for n, o in state.origins.items()
                        if o.rule is not None},
    }


def hash_factors(registry: Registry, state: State) -> dict[str, Any]:
    """What `config_hash()` covers: its purpose, the schema version, the
    configbags version and each hashed leaf with its resolved value. Leaves that can
    change at runtime, size buffers (`kind: memory/capacity`) or are secret are out
    unless declared `hash: true` (secrets never)."""
    reg = registry
    return {
        "purpose": HASH_PURPOSE,
        "schema_version": reg.schema_version,
        "configbags_version": configbags_version(),
        "leaves": {n: jsonable(reg.shown(n, state.values[n])) for n in reg.hashed},
    }


def config_hash(registry: Registry, state: State) -> str:
    """A stable hash of the factors in `hash_factors()` (a compile-cache key). Values are
    encoded canonically (-0.0 as 0.0, ints of any size), so it never raises for a
    published state."""
    reg = registry
    digest = hashlib.sha256()
    for part in (HASH_PURPOSE, reg.schema_version, configbags_version()):
        digest.update(canonical(part))
    for name in reg.hashed:
        digest.update(canonical(name))
        digest.update(canonical(state.values[name]))
    return digest.hexdigest()[:16]


def dump_config(registry: Registry, state: State, path: str | Path, left_out: Mapping[str, str] | None = None) -> Path:
    """Write the resolved config as a YAML config file (JSON for a `.json` name, as
    `--config` reads one): every leaf not at its schema
    default (rule results included), so passing it back with `--config` reproduces this
    run on any machine: the same values and the same config hash (the writer quotes for the
    loader's YAML 1.2 and checks the text reads back). Secrets are left out (named in a
    comment and in a warning logged at the dump) and set as before, and so is each leaf of
    `left_out` (leaf -> why: a value no operator gave, such as explain's placeholder). The file is replaced whole or not at all; a path that
    cannot be written is an OutputFileError."""
    from configbags.runtime.yamlsafe import dump_json, dump_yaml, json_named, write_text_atomic

    reg = registry
    values: dict[str, Any] = {}
    secrets = []
    found = origins(registry, state)
    for name, spec in sorted(reg.leaves.items()):
        value = getattr(state.record, name) if found[name].layer is Layer.DEFAULT else state.values[name]
        if found[name].layer is Layer.DEFAULT and (value == spec.default or jsonable(value) == spec.default):
            continue
        if spec.secret:
            secrets.append(name)
            continue
        if left_out and name in left_out:
            continue
        values[name] = jsonable(value)
    header = [f"# Resolved config (schema version {reg.schema_version}, config hash {config_hash(registry, state)}).",
              "# Pass it back with --config to reproduce this run."]
    if secrets:
        header.append(f"# Secrets left out (set them as before): {', '.join(sorted(secrets))}.")
    for name, why in sorted((left_out or {}).items()):
        header.append(f"# Left out: {name} ({why}); set it when passing this file back.")
    if json_named(Path(path)):
        # `--config x.json` reads JSON, which has no comments: the values alone
        text = dump_json(values)
    else:
        text = "\n".join(header) + "\n" + dump_yaml(values)
    out = write_text_atomic(Path(path), text, "--dump-config")
    if secrets:
        # said where the operator looks, not only in the file (a JSON dump has no comment):
        # a server started from the dump alone would have these unset
        log.warning("config dumped to %s (%d values) without its secrets %s: set them as before (flag or "
                    "variable) when passing it back with --config", out, len(values), ", ".join(sorted(secrets)))
    for name, why in sorted((left_out or {}).items()):
        log.warning("config dumped to %s without %s (%s): set it when passing it back with --config", out, name, why)
    if not secrets:
        log.info("config dumped to %s (%d values)", out, len(values))
    return out


HASH_PURPOSE = "compile-cache"


def configbags_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("configbags")
    except PackageNotFoundError:  # a source checkout that is not installed
        return "0+unknown"


class NonDefaults:
    """The publish log record's payload, formatted only if the record is emitted (publish
    stays cheap with INFO logging off): each value not at its schema default, with its
    layer; secrets redacted."""

    def __init__(self, registry: Registry, state: State) -> None:
        self._registry, self._state = registry, state

    def __str__(self) -> str:
        reg = self._registry
        parts = [f"{n}={reg.shown(n, self._state.values[n])!r} [{o.layer}: {o.source}]"
                 for n, o in sorted(self._state.origins.items())]
        return "; ".join(parts) or "all defaults"
