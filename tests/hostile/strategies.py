"""Hypothesis strategies for hostile input, and the profiles that run them: `ci` (the
default: `make test`), `quick` (`make quick`, the edit-and-check loop: a quarter of the
examples) and `long` (`make fuzz`, about ten minutes), chosen by CONFIGBAGS_FUZZ."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from hostile.corpus import (
    BIG_FLOAT_INT,
    HUGE_INT,
    billion_laughs,
    cyclic_dict,
    cyclic_list,
    deep_json_text,
    deep_list,
)

PROFILE_VAR = "CONFIGBAGS_FUZZ"
BIG_INTS = (HUGE_INT, -HUGE_INT, BIG_FLOAT_INT, 10**99, 10**100, 2**63, -(2**63) - 1)
_common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]}
settings.register_profile("ci", max_examples=40, **_common)
settings.register_profile("quick", max_examples=10, **_common)
settings.register_profile("long", max_examples=4000, **_common)
PROFILE = settings.get_profile(os.environ.get(PROFILE_VAR, "ci") or "ci")
# The generator runs are slow (a full generation per example): a tenth of the examples.
SLOW_PROFILE = settings(PROFILE, max_examples=max(5, PROFILE.max_examples // 10))

NASTY_STRINGS = st.sampled_from([
    "", "\x00", "\x85", "\u2028", "\ufeff", "\ud7ff", "💥", "a" * 10_000, "${HOME}", "{{x}}",
    "' OR 1=1", "\\", "\n", "--tp-size", "010", "1:20", "yes", "~", "null", ".inf", "-0.0",
    "<<", "&a", "*a", "!!python/object:os.system", "1e400", "0x1F", "9" * 5000,
])
text = st.one_of(st.text(max_size=40), NASTY_STRINGS)

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    # by index: hypothesis reprs a sampled_from's elements, and a 5000-digit int has no repr
    st.integers(min_value=0, max_value=len(BIG_INTS) - 1).map(BIG_INTS.__getitem__),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)


class Opaque:
    """Not JSON data, with a repr that fails."""

    def __repr__(self) -> str:
        raise RuntimeError("repr of a hostile object")


# Values an override or a record field may be handed: JSON-ish trees, plus what JSON has not.
values = st.one_of(
    scalars,
    st.recursive(scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.tuples(kids, kids),
        st.dictionaries(st.one_of(text, st.integers(), st.booleans()), kids, max_size=4),
    ), max_leaves=12),
    st.builds(deep_list, st.integers(min_value=60, max_value=1200)),
    st.builds(cyclic_list), st.builds(cyclic_dict),
    st.sampled_from([b"bytes", {1, 2}, frozenset(), object(), Opaque(), float("nan"), complex(1, 2)]),
)

# YAML text fragments that attack the parser: anchors, aliases, tags, bombs, nesting.
yaml_attacks = st.sampled_from([
    billion_laughs(), billion_laughs(5, 30), deep_json_text(900), deep_json_text(150), "&a [*a]",
    "!!python/object/apply:os.system ['true']", "!!binary aGk=", "!!timestamp 2001-01-01",
    "{a: 1, a: 2}", "[1, 2", "'unterminated", "\t- tab", "? [complex]\n: key", "*undefined",
    "010", "1:20", "0o17", "0x1F", "0b11", ".nan", "-.inf", "1e400", "9" * 5000, "'\x00'",
    "yes", "~", "", "- a\n- b", "{x: {y: {z: [1, {w: 2}]}}}",
])


def yaml_scalar_text(value: Any) -> str:
    """A scalar as YAML flow text, quoting strings."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


yaml_values = st.one_of(yaml_attacks, st.builds(yaml_scalar_text, st.one_of(st.integers(), text)))
