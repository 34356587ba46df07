"""Publish from an engine's legacy record: the bootstrap of a migration.

An engine moving onto bags still builds its old record (a dataclass `ServerArgs`, or the
dict it copies it into) and still has its legacy resolution: `__post_init__`-style code
that fills in defaults and adjusts values for the model. One call publishes from that
record, with the resolution run as a hook, so that every change the hook makes is on the
record (logged, with its source) instead of silently baked in:

    from configbags.runtime.legacy import publish_legacy

    report = publish_legacy(server_args, role="launcher", resolve=adjust_for_model,
                            package="myengine.config_bags")

The record is converted to the generated `ServerArgs` of the package (`from_dict`, so
types, choices and ranges are checked). The hook runs on a copy; the record given is never
changed. Each leaf the hook changed is then applied, after publish, as an override from
source `legacy:<hook qualname>`, which the context logs and `explain()` shows. A leaf whose
policy forbids overrides (startup), or that the publishing role may not write, cannot be
overridden: it is folded into the record before publish instead, and the returned report
says so, hook value and all.

Child processes do not call this: the launcher publishes, then hands its state to each
child, which adopts it (`configbags.runtime.dist.export_state()` in the launcher,
`import_state()` in the child), so every process sees the same values and the same log.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from configbags.runtime.context import Context, OverrideEntry, process_context
from configbags.runtime.errors import ConfigError

log = logging.getLogger(__name__)

Hook = Callable[[Any], Any]


@attrs.frozen
class LegacyPublish:
    """What `publish_legacy` did."""

    context: Context[Any]
    source: str  # `legacy:<hook qualname>`, the source of every override below
    overrides: tuple[OverrideEntry, ...]  # the hook's changes, applied as logged overrides
    # leaf -> (value before the hook, value after): changes that could not be overrides
    # (startup policy, or a leaf the role may not write), folded into the published record
    folded: Mapping[str, tuple[Any, Any]]
    # fields of the legacy record that are not leaves of the schema: not published
    ignored: tuple[str, ...]


def legacy_values(record: Any) -> dict[str, Any]:
    """The fields of a legacy record (a dataclass, an attrs class, a mapping, or any object
    with a `__dict__`), enums as their values, as `from_dict` takes them."""
    if isinstance(record, Mapping):
        fields = dict(record)
    elif dataclasses.is_dataclass(record) and not isinstance(record, type):
        fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    elif attrs.has(type(record)):
        fields = attrs.asdict(record, recurse=False)
    elif hasattr(record, "__dict__"):
        fields = {k: v for k, v in vars(record).items() if not k.startswith("_")}
    else:
        raise ConfigError(
            f"cannot read a legacy record of type {type(record).__name__}: pass a dataclass, "
            f"an attrs instance or a dict"
        )
    return {str(k): _plain(v) for k, v in fields.items()}


def _plain(value: Any) -> Any:
    """Legacy records often hold enums (a dict copy converts strings to them): a leaf holds
    the value."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _hook_name(hook: Hook) -> str:
    while isinstance(hook, functools.partial):  # name the function, not the partial
        hook = hook.func
    module = getattr(hook, "__module__", None) or "?"
    qualname = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    return f"{module}.{qualname}"


def _run_hook(hook: Hook, record: Any) -> Any:
    """Run `hook` on a copy of `record`; the hook may change the copy in place or return a
    new record (or dict)."""
    working = copy.deepcopy(record)
    returned = hook(working)
    return working if returned is None else returned


def publish_legacy(
    record: Any,
    *,
    role: str,
    resolve: Hook | None = None,
    package: str | None = None,
    context: Context[Any] | None = None,
) -> LegacyPublish:
    """Publish the package's config from a legacy `record`, running `resolve` (the legacy
    resolution) on a copy first; see the module docstring."""
    ctx = context or process_context(package)
    if ctx.record_type is None:
        raise ConfigError(
            f"the context of {ctx.package or 'this package'} has no record type; regenerate "
            f"the package with `configbags gen`"
        )
    registry = ctx.registry
    before = legacy_values(record)
    source = f"legacy:{_hook_name(resolve)}" if resolve is not None else "legacy"
    after = legacy_values(_run_hook(resolve, record)) if resolve is not None else before
    ignored = tuple(sorted(k for k in after if k not in registry.leaves))
    base = {k: v for k, v in before.items() if k in registry.leaves}
    changed = {
        k: v for k, v in after.items() if k in registry.leaves and (k not in before or before[k] != v)
    }

    role_spec = registry.roles.get(role)
    may_write_any = bool(role_spec and role_spec.write_any)
    folded: dict[str, tuple[Any, Any]] = {}
    overrides: dict[str, Any] = {}
    for name, value in changed.items():
        spec = registry.leaves[name]
        if spec.policy == "startup" or not (spec.owner == role or may_write_any):
            folded[name] = (before.get(name), value)
            base[name] = value
        else:
            overrides[name] = value

    ctx.publish(ctx.record_type.from_dict(base, source=source), role=role)
    for name, (old, new) in folded.items():
        spec = registry.leaves[name]
        why = "startup policy" if spec.policy == "startup" else f"owned by {spec.owner!r}"
        log.info("config legacy resolution [%s] %s.%s: %r -> %r folded before publish (%s)",
                 source, spec.namespace, name, old, new, why)
    entries = ctx.override(source, **overrides) if overrides else ()
    return LegacyPublish(ctx, source, entries, folded, ignored)
