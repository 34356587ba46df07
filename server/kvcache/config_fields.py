"""Typed reads of a Hugging Face config dict: every number type- and range-checked by
name, so a bad field is refused with its value and the rule it breaks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from configbags.runtime.leaftypes import short_repr
from configbags.server.kvcache.errors import ModelConfigError

# Real models have at most a few hundred decoder layers; a bound keeps a hostile config
# (num_hidden_layers: 10**9) from building a billion-entry layer table.
MAX_LAYERS = 4096
# Every other count or size of a real model is far below 2**24 (vocabularies ~2**18, hidden
# and MLP widths ~2**15, windows ~2**17); past it a config is hostile or broken, and its
# products (weights, KV bytes) would only mislead.
MAX_SIZE = 1 << 24
# A trained context is a token position: int32 in every engine.
MAX_POSITIONS = 2**31 - 1


class ConfigFields:
    """Reads a config dict: every number is type- and range-checked by name, and missing
    required keys are collected so the error names all of them at once."""

    def __init__(self, config: Mapping[str, Any], source: str) -> None:
        self._config = config
        self.source = source
        self.missing: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        value = self._config.get(key)
        return default if value is None else value

    def has(self, key: str) -> bool:
        return self._config.get(key) is not None

    def declares(self, key: str) -> bool:
        """The key is in the config, null or not: what it spells marks the model's layout
        (a DeepSeek `n_routed_experts: null` is still a DeepSeek MoE), and integer() then
        refuses the null as missing rather than planning another family."""
        return key in self._config

    def refuse(self, key: str, value: Any, rule: str) -> ModelConfigError:
        return ModelConfigError(f"{self.source}: {key} is {short_repr(value)}; {rule}")

    def integer(self, key: str, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        """A required integer field, within [minimum, maximum]."""
        if self._config.get(key) is None:
            self.missing.append(key)
            return max(minimum, 1)  # placeholder; check() raises before it is used
        return self._checked(key, self._config[key], minimum, maximum)

    def optional_int(self, key: str, default: int, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        value = self._config.get(key)
        return default if value is None else self._checked(key, value, minimum, maximum)

    def _checked(self, key: str, given: Any, minimum: int, maximum: int) -> int:
        value = given
        if isinstance(given, float) and given.is_integer():
            # config.json files written through a float (`131072.0`) are read by transformers
            # as the count they spell; so here (the range check below still applies, and
            # names the value as the file spells it: `1e+308`, not its 309 digits)
            value = int(given)
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "a number that is not a whole number" if isinstance(value, float) else f"a {type(value).__name__}"
            raise self.refuse(key, value, f"it must be an integer, not {kind}")
        if value < minimum:
            rule = "positive" if minimum == 1 else f"at least {minimum}"
            raise self.refuse(key, given, f"it must be {rule}")
        if value > maximum:
            raise self.refuse(key, given, f"the planner accepts at most {maximum} (no real model comes near it)")
        return value

    def first_int(self, keys: Sequence[str], *, maximum: int = MAX_SIZE) -> int:
        for key in keys:
            if self.has(key):
                return self.integer(key, maximum=maximum)
        self.missing.append(" or ".join(keys))
        return 1

    def boolean(self, key: str, default: bool) -> bool:
        """An optional true/false field: JSON's own booleans only (transformers reads
        `"true"` or `1` as truthy; a guess either way would size the weights wrong)."""
        value = self._config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            kind = type(value).__name__
            raise self.refuse(key, value, f"it must be true or false, not {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
        return value

    def string(self, key: str, default: str = "") -> str:
        value = self._config.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.refuse(key, value, "it must be a string")
        return value

    def check(self, family: str) -> None:
        if self.missing:
            names = ", ".join(sorted(set(self.missing)))
            pronoun = "it" if len(set(self.missing)) == 1 else "them"
            hints = "".join(
                f"; it has {other}: if that is the {what}, name it {key}"
                for key in sorted(set(self.missing)) for other, what in _OTHER_NAMES.get(key, ())
                if self.has(other)
            )
            raise ModelConfigError(
                f"{self.source}: a {family} model config needs {names}, which it does not "
                f"define (absent or null){hints}; add {pronoun} (copy {pronoun} from the published config.json)"
            )


# Names other exporters give a count the planner reads under its Hugging Face name. They
# are never read in its place (an `ffn_dim` may be an ungated MLP, which sizes differently):
# the refusal only points at them.
_OTHER_NAMES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "intermediate_size": (("ffn_dim", "MLP width"), ("ffn_hidden_size", "MLP width"), ("n_inner", "MLP width")),
}
