"""The one declared set of input limits. Every surface that takes structured input from
outside (overrides, config files, CLI json values, env values, schema files read by the
generator) checks against these, so a value refused in one place is refused everywhere,
and no input can make configbags recurse, hang or allocate without bound.

The numbers are generous for real configuration and small enough that the worst input
within them is checked in milliseconds."""

from __future__ import annotations

import attrs


@attrs.frozen
class Limits:
    #: Deepest nesting of a json value (arrays and objects), counting the value itself as 1.
    json_depth: int = 64
    #: Most nodes (scalars, arrays, objects, keys) in one json value or one YAML document,
    #: YAML aliases counted as expanded, so an alias bomb is refused before it is built.
    nodes: int = 100_000
    #: Longest string, in characters, inside a json value or YAML document.
    string_chars: int = 1_000_000
    #: Most decimal digits of an integer anywhere (Python refuses to print beyond 4300,
    #: which would break config_hash, server_info and state export long after the fact).
    int_digits: int = 100
    #: Largest config, schema or model file read, in bytes.
    file_bytes: int = 8 * 1024 * 1024


LIMITS = Limits()

# The smallest integer magnitude refused: checking `abs(v) < bound` never converts to text.
INT_BOUND = int(10**LIMITS.int_digits)


def int_too_big(value: int) -> bool:
    """True when `value` has more than `LIMITS.int_digits` decimal digits."""
    return abs(value) >= INT_BOUND
