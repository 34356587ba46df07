"""Errors of the KV pool configurator. They derive from `configbags.runtime.errors.ConfigError`,
so a caller catching configbags errors catches these, and every message says how to fix it.

Two families, because an operator acts on them differently (and `configbags plan` exits
with 2 for the first and 1 for the second):
- the input is wrong (`KvPlanError` itself, `ModelConfigError`, `SettingsError`): a model
  field or a flag breaks a rule; the message names the field, its value and the rule;
- the input is fine but does not fit this device (`DoesNotFitError` and its subclasses).
"""

from __future__ import annotations

from configbags.runtime.errors import ConfigError


class KvPlanError(ConfigError):
    """The KV pool cannot be planned with these settings on this device."""


class ModelConfigError(KvPlanError, ValueError):
    """A model `config.json` that lacks fields the planner needs, or holds unusable ones."""


class SettingsError(KvPlanError, ValueError):
    """Server settings that no engine would accept for this model (e.g. a TP width that
    does not divide the attention heads)."""


class DoesNotFitError(KvPlanError):
    """Valid settings that this device's memory cannot hold."""


class BudgetError(DoesNotFitError):
    """No memory is left for the KV cache after weights and runtime headroom."""


class ContextTooLongError(DoesNotFitError):
    """One request of the context length would not fit in the KV pool."""
