"""The one declared set of input limits. Every surface that takes structured input from
outside (overrides, config files, CLI json values, env values, schema files read by the
generator, a model's config.json) checks against these, so a value refused in one place is
refused everywhere, and no input can make configbags recurse, hang or allocate without bound.

The numbers are generous for real configuration and small enough that the worst input
within them is refused in well under a second. An operator with a genuinely larger input
raises one for a process with `CONFIGBAGS_LIMIT_<NAME>` (`CONFIGBAGS_LIMIT_FILE_BYTES=
16777216`), read once when this module is imported; every refusal names its variable, and
a `CONFIGBAGS_LIMIT_*` variable that names no limit is refused."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping

import attrs

from configbags.runtime.errors import ConfigError

ENV_PREFIX = "CONFIGBAGS_LIMIT_"
# Python refuses to turn an int of more digits into text (sys.int_info.default_max_str_digits),
# which config_hash, server_info and state export all do.
MAX_INT_DIGITS = 4300
# Reading a document and walking its values recurse a few frames per level (PyYAML's
# constructor about four): 200 levels stay inside Python's default recursion limit (1000)
# from any caller, a request thread of the door included; about 250 do not. The ceiling of
# both `nesting` and `json_depth`.
MAX_NESTING = 200
# The most a raised limit may be, with why: a document just within it is built, so the
# bound on the worst input stays one a process survives (seconds, a few GB at most)
CEILINGS = {
    "int_digits": (MAX_INT_DIGITS, "the most digits Python turns into text"),
    "nesting": (MAX_NESTING, "the deepest a document is read without exhausting Python's stack"),
    "json_depth": (MAX_NESTING, "the deepest a document is read without exhausting Python's stack"),
    "nodes": (10_000_000, "the most nodes a document may build (each is a Python object)"),
    "string_chars": (100_000_000, "the longest text a document may hold in memory"),
    "file_bytes": (256 * 1024 * 1024, "the largest file read into memory"),
}


@attrs.frozen
class Limits:
    #: Deepest nesting of a json value (arrays and objects), counting the value itself as 1.
    json_depth: int = 64
    #: Most nodes (scalars, arrays, objects, keys) in one json value or one YAML or JSON
    #: document, YAML aliases counted as expanded, so an alias bomb is refused before it is built.
    nodes: int = 100_000
    #: Longest string, in characters, inside a json value or YAML document.
    string_chars: int = 1_000_000
    #: Most decimal digits of an integer anywhere (at most 4300, Python's own bound).
    int_digits: int = 100
    #: Largest config, schema or model file read, in bytes.
    file_bytes: int = 8 * 1024 * 1024
    #: Deepest nesting of a YAML or JSON document (a file, a json flag or variable), in levels.
    nesting: int = 100

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Limits:
        """The defaults, each replaced by its `CONFIGBAGS_LIMIT_<NAME>` when set (a positive
        decimal integer); anything else, and a `CONFIGBAGS_LIMIT_*` that names no limit (a
        typo would otherwise leave the limit it meant at its default, unsaid), is a
        ConfigError naming the variable."""
        known = [variable(field.name) for field in attrs.fields(cls)]
        for var in sorted(environ):
            if var.startswith(ENV_PREFIX) and var not in known:
                # compared without the prefix, which every name shares
                near = difflib.get_close_matches(var[len(ENV_PREFIX):], [k[len(ENV_PREFIX):] for k in known], n=1)
                hint = f" (did you mean {ENV_PREFIX}{near[0]}?)" if near else ""
                raise ConfigError(f"{var} names no input limit{hint}; the limits are {', '.join(known)}: "
                                  f"fix the name or unset it")
        given: dict[str, int] = {}
        for field in attrs.fields(cls):
            var = variable(field.name)
            text = environ.get(var)
            if text is None:
                continue
            if not re.fullmatch(r"[1-9][0-9]{0,17}", text.strip()):
                raise ConfigError(f"{var}={text[:40]!r} is not a positive whole number; set it to one "
                                  f"(the default is {field.default}) or unset it")
            given[field.name] = int(text.strip())
        for name, (ceiling, why) in CEILINGS.items():
            if given.get(name, 0) > ceiling:
                raise ConfigError(f"{variable(name)}={given[name]} is above {ceiling}, {why}; set it lower")
        limits = cls(**given)
        if limits.json_depth >= limits.nesting:
            # a json leaf's value sits one level inside its config file (or the dump of one)
            raise ConfigError(f"{variable('json_depth')}={limits.json_depth} is not below {variable('nesting')}="
                              f"{limits.nesting}: a json value is one level inside a config file, so a value "
                              f"accepted could not be dumped and read back; keep the json depth below the nesting")
        return limits


def variable(name: str) -> str:
    """The environment variable that sets limit `name`."""
    return ENV_PREFIX + name.upper()


def over(name: str, unit: str = "") -> str:
    """'the limit of N <unit> (raise it with CONFIGBAGS_LIMIT_NAME)': how every refusal
    ends, so the operator knows both the bound and the knob."""
    value = getattr(LIMITS, name)
    return f"the limit of {value}{' ' + unit if unit else ''} (raise it with {variable(name)}=N)"


LIMITS = Limits.from_environ(os.environ)

# The smallest integer magnitude refused: checking `abs(v) < bound` never converts to text.
INT_BOUND = int(10**LIMITS.int_digits)


def int_too_big(value: int) -> bool:
    """True when `value` has more than `LIMITS.int_digits` decimal digits."""
    return abs(value) >= INT_BOUND
