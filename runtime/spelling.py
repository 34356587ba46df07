"""How a leaf is spelled on the command line, written once for the generator (which
declares the flags and refuses a schema whose flags clash), the leaf record (which names
the flag a value came from) and the importer (which proposes flags and settles clashes
before the generator sees them): `leaf_spellings` from a schema's `cli:`, with the default
flag, a bool's `--no-` twin and old names' flags; the flags the generated parser keeps for
itself; and which leaf keeps a flag two leaves claim.

Also when an old spelling is gone: schema versions compare by their numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

# The flags `add_config_flag` and argparse itself add to every generated parser.
RESERVED_FLAGS = frozenset({"--config", "--help", "-h", "--preset", "--dump-config"})


def flag_of(name: str, flag: str | None = None) -> str:
    """The flag a leaf (or an old name of one) is spelled with: its `flag:` when the schema
    gives one, else the name with dashes (`tp_size` -> `--tp-size`)."""
    return flag or "--" + name.replace("_", "-")


def spellings(flags: Sequence[str], negatable: bool) -> tuple[str, ...]:
    """Every spelling argparse accepts for these flags: a bool leaf (optional or not) is
    declared with BooleanOptionalAction, which adds `--no-x` for each long `--x`."""
    twins = tuple("--no-" + f[2:] for f in flags if f.startswith("--")) if negatable else ()
    return (*flags, *twins)


@attrs.frozen
class Claim:
    """The spellings one leaf asks for, in three ranks: its own flag (and the flag's twin)
    win over another leaf's aliases and old flags, so a leaf never loses its name to
    someone else's abbreviation."""

    leaf: str
    flags: tuple[str, ...]  # the primary flag and its twin; empty for `cli: false`
    aliases: tuple[str, ...] = ()  # with their twins
    old: tuple[str, ...] = ()  # old names' flags (renamed_from), with their twins
    declared: tuple[str, ...] = ()  # the flag and aliases as the parser declares them, no twins

    @classmethod
    def of(cls, leaf: str, flags: Sequence[str], *, old: Sequence[str] = (), negatable: bool) -> Claim:
        """`flags` primary first, as the schema's `cli:` gives them (none: no flag)."""
        return cls(leaf, spellings(flags[:1], negatable), spellings(flags[1:], negatable),
                   spellings(old, negatable), tuple(flags))


def leaf_spellings(name: str, cli: Mapping[str, Any] | Literal[False] | None = None, *,
                   renamed: Iterable[tuple[str, str | None]] = (), negatable: bool) -> Claim:
    """A leaf's command-line spellings from its schema entry: `cli` as the schema writes it
    (`false`: no flag; else an optional `flag:` and `aliases:`), `renamed` its old names
    with their `flag:` if any; `negatable` for a bool leaf. The generator takes the leaf's
    flags from `declared` and checks every spelling; the record and the importer ask the
    same question here."""
    flags = () if cli is False else (flag_of(name, (cli or {}).get("flag")), *(cli or {}).get("aliases", ()))
    return Claim.of(name, flags, old=[flag_of(old, flag) for old, flag in renamed], negatable=negatable)


@attrs.frozen
class Clash:
    leaf: str  # the leaf that cannot have the flag
    flag: str
    holder: str | None  # the leaf that keeps it (this one: listed twice); None: reserved
    kind: str  # which of the leaf's ranks the flag is in: "flag", "alias" or "old"


def clashes(claims: Iterable[Claim]) -> list[Clash]:
    """Every spelling a leaf cannot have: reserved, kept by another leaf, or listed twice.
    A contested flag goes to the leaf whose own flag it is; among equals, to the first."""
    claims = list(claims)
    holders: dict[str, str] = {}
    for c in claims:
        for f in c.flags:
            holders.setdefault(f, c.leaf)
    for c in claims:
        for f in (*c.aliases, *c.old):
            holders.setdefault(f, c.leaf)
    out: list[Clash] = []
    for c in claims:
        seen: set[str] = set()
        for kind, flags in (("flag", c.flags), ("alias", c.aliases), ("old", c.old)):
            for f in flags:
                holder = None if f in RESERVED_FLAGS else holders[f]
                if holder != c.leaf or f in seen:
                    out.append(Clash(c.leaf, f, holder, kind))
                seen.add(f)
    return out


def version_key(text: str) -> tuple[int, ...]:
    """A schema version as numbers, for ordering: `0.10` comes after `0.9`."""
    return tuple(int(p) for p in re.findall(r"\d+", text))
