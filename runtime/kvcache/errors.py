"""Errors of the KV pool configurator. They derive from `configbags.runtime.errors.ConfigError`, so a
caller catching configbags errors catches these, and every message says how to fix it."""

from __future__ import annotations

from configbags.runtime.errors import ConfigError


class KvPlanError(ConfigError):
    """The KV pool cannot be planned with these settings on this device."""


class ModelConfigError(KvPlanError, ValueError):
    """A model `config.json` that lacks fields the planner needs, or holds unusable ones."""


class BudgetError(KvPlanError):
    """No memory is left for the KV cache after weights and runtime headroom."""


class ContextTooLongError(KvPlanError):
    """One request of the context length would not fit in the KV pool."""
