"""The leaf type language (`int`, `float`, `bool`, `str`, `list[int]`, `list[str]`, `json`,
each optionally `optional `) and value checking for it.

Shared by build time (codegen checks schema defaults with it) and run time (overrides and
operator input are checked with it), so a value accepted in one place is accepted in the
other."""

from __future__ import annotations

import argparse
import difflib
import enum
import math
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NoReturn

import attrs

from configbags.runtime.errors import LeafValueError
from configbags.runtime.limits import INT_BOUND, LIMITS, int_too_big, over

BASE_TYPES = ("int", "float", "bool", "str", "list[int]", "list[str]", "json")
NUMERIC = ("int", "float")
# list type -> element type: the one place that says what a list leaf holds
LIST_ELEMENTS = {"list[int]": "int", "list[str]": "str"}


class Policy(str, enum.Enum):
    """When a leaf may change after publish. A `str` enum, so YAML, JSON and messages spell
    it as the plain word."""

    STARTUP = "startup"  # fixed at publish
    LOAD_TIME = "load_time"  # the owner may set it until the context is sealed
    RUNTIME = "runtime"  # may be overridden any time, logged, bounded by its capacity

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class TypeSpec:
    base: str
    optional: bool

    @classmethod
    def parse(cls, spec: str) -> TypeSpec:
        optional = spec.startswith("optional ")
        base = spec[len("optional ") :] if optional else spec
        if base not in BASE_TYPES:
            raise LeafValueError(f"unknown type {spec!r}; use one of {', '.join(BASE_TYPES)}")
        return cls(base, optional)

    @property
    def numeric(self) -> bool:
        return self.base in NUMERIC

    @property
    def item(self) -> TypeSpec | None:
        """The element type of a list type (`list[int]` -> `int`), else None."""
        element = LIST_ELEMENTS.get(self.base)
        return TypeSpec(element, False) if element else None

    def __str__(self) -> str:
        return f"optional {self.base}" if self.optional else self.base

    def coerce(self, value: Any) -> Any:
        """Return `value` in its canonical form (ints widen to float for a float leaf,
        lists become tuples so frozen bags stay immutable), or raise LeafValueError."""
        if value is None:
            if self.optional:
                return None
            raise LeafValueError(f"None is not allowed for type {self}; give a {self.base}")
        return _COERCE_BY_BASE.get(self.base, _refuse)(self, value)


# One step per base type: each returns the canonical value or hands a value of another type
# to `_refuse`, so every type names a mismatch in the same words.
def _refuse(spec: TypeSpec, value: Any) -> NoReturn:
    raise LeafValueError(f"{short_repr(value)} ({type(value).__name__}) is not of type {spec}")


def _coerce_bool(spec: TypeSpec, value: Any) -> Any:
    return value if isinstance(value, bool) else _refuse(spec, value)


def _coerce_int(spec: TypeSpec, value: Any) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        return _refuse(spec, value)
    if not -INT_BOUND < value < INT_BOUND:  # inline: every override and derive passes here
        _check_int(value)
    # An IntEnum or other int subclass is stored as the plain int it stands for.
    return value if type(value) is int else int.__int__(value)


def _coerce_float(spec: TypeSpec, value: Any) -> Any:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return _refuse(spec, value)
    if isinstance(value, int):
        _check_int(value)  # before float(): 2**2000 would raise OverflowError
    if math.isfinite(value):
        # -0.0 is stored as 0.0: it passes a bound of 0.0, and would read back, log and
        # hash as another value than the 0.0 it equals
        return 0.0 if value == 0 else float(value)
    raise LeafValueError(f"{value!r} is not a finite float")


def _coerce_str(spec: TypeSpec, value: Any) -> Any:
    if not isinstance(value, str):
        return _refuse(spec, value)
    _check_str(value)
    return value if type(value) is str else str.__str__(value)  # a str enum: its text


def _coerce_list(spec: TypeSpec, value: Any) -> Any:
    item = spec.item
    if item is None or not isinstance(value, (list, tuple)):
        return _refuse(spec, value)
    if len(value) > LIMITS.nodes:
        raise LeafValueError(f"a list of {len(value)} items is over {over('nodes', 'items')}")
    return tuple(item.coerce(v) for v in value)


def _coerce_json(spec: TypeSpec, value: Any) -> Any:
    _check_json(value)
    # Frozen (read-only mappings, tuples): neither the caller nor a reader can change a
    # record, a bag, a log entry or a cached config hash behind the context's back.
    # `jsonable()` turns it back into plain JSON data.
    return freeze(value)


_COERCE_BY_BASE: dict[str, Callable[[TypeSpec, Any], Any]] = {
    "bool": _coerce_bool,
    "int": _coerce_int,
    "float": _coerce_float,
    "str": _coerce_str,
    **dict.fromkeys(LIST_ELEMENTS, _coerce_list),
    "json": _coerce_json,
}


# The one grammar of numbers written as text, wherever they come from: a YAML 1.2 config
# file (its core schema), a flag or an environment variable. ASCII digits only: Python's
# int() and float() also take `1_000`, Arabic-Indic or full-width digits and `infinity`,
# which no config file reads as a number.
INT_TEXT = r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
FLOAT_TEXT = (r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_INT = re.compile(INT_TEXT)
_FLOAT = re.compile(FLOAT_TEXT)
# What the text may carry around it (a shell's or a YAML plain scalar's spacing).
_SPACE = " \t\r\n"


def int_from_text(text: str) -> int:
    """`010` -> 10, `0x1F` -> 31, `0o17` -> 15, `-5` -> -5; ValueError for anything else,
    naming the grammar. Digits are counted before conversion (the input limit)."""
    raw = text.strip(_SPACE)
    if not _INT.fullmatch(raw):
        raise ValueError(f"{short_repr(text)} is not an integer (ASCII digits, optionally signed, or 0x/0o)")
    digits = raw.lstrip("+-")
    if len(digits) > LIMITS.int_digits + 2:  # before int(): Python refuses > 4300 digits
        raise ValueError(f"an integer of {len(digits)} digits is over {over('int_digits', 'digits')}")
    sign = -1 if raw.startswith("-") else 1
    if digits.startswith(("0o", "0x")):
        return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
    return sign * int(digits, 10)  # `010` is ten: YAML 1.2 has no leading-zero octal


def float_from_text(text: str) -> float:
    """A float as a YAML 1.2 config file writes it (`1.5`, `1e-3`, `.inf`), or an integer
    in the one int grammar; ValueError for anything else."""
    raw = text.strip(_SPACE)
    if _INT.fullmatch(raw):
        value = int_from_text(raw)
        _check_int(value)
        return float(value)
    if not _FLOAT.fullmatch(raw):
        raise ValueError(f"{short_repr(text)} is not a number (ASCII digits, a point, an exponent)")
    low = raw.lower()
    if low.endswith(".inf"):
        return float("-inf") if low.startswith("-") else float("inf")
    return float("nan") if low == ".nan" else float_literal(raw)


class FloatUnderflow(argparse.ArgumentTypeError, ValueError):
    """A ValueError argparse shows as is (its `invalid float value` would not say why)."""


def float_literal(text: str) -> float:
    """float() of a decimal literal, refusing one that is not zero but underflows to 0.0
    (`1e-400`): a value the operator wrote would be replaced by another without a word, as
    an overflow to infinity is refused. The JSON doors parse their floats with it too."""
    value = float(text)
    if value == 0 and any(c in "123456789" for c in text.lower().partition("e")[0]):
        raise FloatUnderflow(f"{short_repr(text)} is too small for a float and would be stored as 0.0; "
                         f"write 0, or a value of magnitude at least 5e-324")
    return value


int_from_text.__name__ = "int"  # argparse names the type in its message: "invalid int value"
float_from_text.__name__ = "float"


def _check_int(value: int) -> None:
    if int_too_big(value):
        digits, about = int_size(value)
        raise LeafValueError(
            f"an integer of more than {LIMITS.int_digits} digits ({digits} digits, about {about}) is over "
            f"{over('int_digits', 'digits')}"
        )


def _check_str(value: str) -> None:
    if len(value) > LIMITS.string_chars:
        raise LeafValueError(f"a string of {len(value)} characters is over {over('string_chars', 'characters')}")
    if not is_text(value):
        at = next(i for i, c in enumerate(value) if "\ud800" <= c <= "\udfff")
        raise LeafValueError(
            f"the string holds a lone surrogate ({value[at]!r} at index {at}), which is no text: bytes that "
            f"are not UTF-8 (from the command line or the environment) decode to these; give UTF-8 text"
        )
    if "\0" in value:
        raise LeafValueError(
            f"the string holds a NUL character (at index {value.index(chr(0))}), which no path, flag, environment "
            f"variable or C string can carry (it would cut the value short there); remove it"
        )


def is_text(value: str) -> bool:
    """Whether `value` can be written as UTF-8: no lone surrogate, which is what Python makes
    of undecodable argv or environment bytes, and what no log, JSON reply or file can carry."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


SHOWN_CHARS = 200  # the most characters of a client's or a file's text a message or log line quotes
SHOWN_DIGITS = 40  # an integer of more digits is described (its size and leading digits), not written out


def short_repr(value: Any) -> str:
    """A bounded description of a value for a message, the one every refusal quoting a
    value uses: the repr of a huge or cyclic value is not bounded, and a 1,000-digit
    integer (a config's `10**1000`, a float `1e308` read as a count) is noise. Integers
    past SHOWN_DIGITS digits, alone or inside a container, read `an integer of 309 digits
    (about 1.0e+308)`; strings and containers are cut short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _SHOWN_BOUND:
        return long_int_text(value)
    try:
        return _REPR.repr(value)
    except Exception:  # a hostile __repr__
        return f"a {type(value).__name__}"


def long_int_text(value: int) -> str:
    """`an integer of N digits (about 1.2e+N-1)`, computed without writing the integer out
    (Python refuses to past 4,300 digits, and it would take a while past millions)."""
    digits, about = int_size(value)
    return f"an integer of {digits} digits (about {about})"


def int_size(value: int) -> tuple[int, str]:
    """The number of decimal digits of `value` and its value in scientific notation to two
    digits (`1.0e+308`), from its bit length and two divisions."""
    magnitude = abs(value)
    digits = max(1, int((magnitude.bit_length() - 1) * math.log10(2)) + 1)  # those of the power of 2 below it
    while magnitude >= 10**digits:  # the estimate is never more than one short
        digits += 1
    lead = magnitude * 10 // 10 ** (digits - 1)  # its first two digits
    sign = "-" if value < 0 else ""
    return digits, f"{sign}{lead // 10}.{lead % 10}e+{digits - 1}"


def shown_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """Someone else's text (a client's path or parameter name, a file's key) as a message
    or log line may hold it: control characters, line and paragraph separators and
    anything non-ASCII escaped (no forged line, no terminal escape), at most `limit`
    characters, and the length of what was cut."""
    escaped = ascii(text)[1:-1]
    return escaped if len(escaped) <= limit else f"{escaped[:limit]}...({len(text)} characters)"


class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        return long_int_text(x) if abs(x) >= _SHOWN_BOUND else repr(x)


_SHOWN_BOUND = 10**SHOWN_DIGITS
_REPR = _ShortRepr()
_REPR.maxlevel = 4
_REPR.maxstring = _REPR.maxother = 80


def _check_json(value: Any) -> None:
    """Raise LeafValueError unless `value` is JSON data within LIMITS: depth, node count,
    integer digits and string size; a cyclic value is refused as such. Recursion is bounded
    by the depth limit, far below Python's recursion limit."""
    _JsonWalk().walk(value, 1)


class _JsonWalk:
    """One walk of a JSON value: the nodes counted so far and the containers being walked."""

    __slots__ = ("nodes", "path")

    def __init__(self) -> None:
        self.nodes = 0
        self.path: set[int] = set()  # ids of the containers being walked: a repeat is a cycle

    def walk(self, v: Any, depth: int) -> None:
        self._count()
        if _is_json_scalar(v):
            return
        self._enter(v, depth)
        if isinstance(v, Mapping):
            for k, item in v.items():
                _check_json_key(k)
                self.walk(item, depth + 1)
        else:
            for item in v:
                self.walk(item, depth + 1)
        self.path.discard(id(v))

    def _count(self) -> None:
        self.nodes += 1
        if self.nodes > LIMITS.nodes:
            raise LeafValueError(f"json value has more than {LIMITS.nodes} nodes, over {over('nodes', 'nodes')}")

    def _enter(self, v: Any, depth: int) -> None:
        if id(v) in self.path:
            raise LeafValueError("json value is cyclic (it contains itself); JSON data is a tree")
        if depth > LIMITS.json_depth:
            raise LeafValueError(f"json value nests deeper than {LIMITS.json_depth} levels, over "
                                 f"{over('json_depth', 'levels')}")
        self.path.add(id(v))


def _is_json_scalar(v: Any) -> bool:
    """True for a JSON scalar within LIMITS, False for a JSON container (a list, tuple or
    mapping); LeafValueError for anything else."""
    if isinstance(v, float) and not math.isfinite(v):
        raise LeafValueError(f"{v!r} is not a finite number (JSON has no NaN or infinity)")
    if v is None or isinstance(v, (bool, float)):
        return True
    if isinstance(v, int):
        _check_int(v)
        return True
    if isinstance(v, str):
        _check_str(v)
        return True
    if not isinstance(v, (list, tuple, Mapping)):
        raise LeafValueError(f"{short_repr(v)} ({type(v).__name__}) is not JSON data")
    return False


def _check_json_key(k: Any) -> None:
    if not isinstance(k, str):
        raise LeafValueError(f"json object keys must be strings, got {short_repr(k)}")
    _check_str(k)


def freeze(value: Any) -> Any:
    """JSON data made immutable: objects become read-only mappings, arrays tuples, and
    subclasses of str, int and float (enums among them) the plain values they stand for."""
    if isinstance(value, Mapping):
        return MappingProxyType({_plain(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return _plain(value)


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def jsonable(value: Any) -> Any:
    """A leaf value as plain JSON data: the tuples and read-only mappings that keep records
    and bags immutable become lists and dicts."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def canonical(value: Any) -> bytes:
    """A value as bytes that only equal values share: type-tagged, -0.0 as 0.0, ints in
    hex (decimal conversion of huge ints raises), mappings by sorted key. The config hash's
    encoding, and so the one rule for whether two values are the same (`same_value`)."""
    if value is None:
        return b"n;"
    if isinstance(value, bool):
        return b"t;" if value else b"f;"
    if isinstance(value, int):
        return b"i" + format(value, "x").encode() + b";"
    if isinstance(value, float):
        return b"d" + (value + 0.0 if value == 0 else value).hex().encode() + b";"
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return b"s" + format(len(data), "x").encode() + b":" + data
    if isinstance(value, (tuple, list)):
        return b"[" + b"".join(canonical(v) for v in value) + b"]"
    if isinstance(value, Mapping):
        return b"{" + b"".join(canonical(str(k)) + canonical(value[k]) for k in sorted(value, key=str)) + b"}"
    return canonical(repr(value))


def same_value(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are one value as the config hash tells values apart: type by
    type, so `1`, `1.0` and `True` differ (Python's `==` has them equal, and would hide a
    change the server sees), lists and tuples alike."""
    return a is b or canonical(a) == canonical(b)


def check_bounds(
    value: Any,
    *,
    choices: Sequence[Any] | None,
    minimum: float | None,
    maximum: float | None,
) -> None:
    """Raise LeafValueError when `value` (already coerced) breaks choices, min or max.
    None (an unset optional leaf) is always within bounds."""
    if value is None:
        return
    items = value if isinstance(value, tuple) else (value,)
    for item in items:
        if choices is not None and item not in choices:
            raise LeafValueError(
                f"{item!r} is not one of the choices: {', '.join(map(repr, choices))}"
            )
        if minimum is not None and item < minimum:
            raise LeafValueError(f"{item!r} is below the minimum {minimum!r}")
        if maximum is not None and item > maximum:
            raise LeafValueError(f"{item!r} is above the maximum {maximum!r}")


# The words operators and tools write for "no value" (YAML 1.1's null spellings, Ruby's and
# Go's nil, Python's None), compared case-blind and stripped. As a secret they would be a
# guessable key, set by someone who meant "unset": one rule, `none_like`, refuses them at
# every door (flag, config file, environment, override).
NONE_WORDS = frozenset({"", "none", "null", "nil", "~"})
# What configbags prints in a secret's place (readbacks, logs, dumps): copied back from a
# saved `/server_info` or a log into a flag or a file, it would be a key anyone can guess.
REDACTED = "<redacted>"
NONE_LIKE_SECRET = (
    "is empty, a word for no value (none, null, nil, ~, in any case) or the <redacted> placeholder "
    "printed in a secret's place, which as a key would be guessable and most likely meant to leave "
    "it unset or copied from a readback; to turn it off leave it out (unset the variable, drop the "
    "flag or key), else give the real key"
)


def none_like(value: Any) -> bool:
    """Whether `value` is None or a text that reads as no value (`NONE_WORDS`), or is the
    placeholder printed in a secret's place (`REDACTED`)."""
    return value is None or (isinstance(value, str) and value.strip().lower() in (*NONE_WORDS, REDACTED))


def closest(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest candidate, or '' when none is close."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
