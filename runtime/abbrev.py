"""argparse's prefix matching, kept for a schema that asks for it (`settings.yaml`:
`cli: {abbreviations: legacy}`), the way a legacy parser with `allow_abbrev` read its
command lines: `--tp 2` means `--tp-size 2` while no other flag starts with `--tp`.

The generated parser itself never abbreviates (a flag added later would change what an
old line means), so the expansion happens here, before parsing, where each use can be
warned about with the full flag, and a prefix that has become ambiguous is refused
naming every flag it could mean, rather than argparse's bare "ambiguous option".
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


def expand_prefixes(
    parser: argparse.ArgumentParser, argv: Sequence[str], warn: Callable[[str, str], None]
) -> list[str]:
    """`argv` with each unique prefix of a long flag spelled out (`--tp=2` too); `warn`
    (spelling, message) is told of each. An ambiguous prefix is a usage error."""
    declared = sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--")})
    exact = set(declared)
    out: list[str] = []
    for index, word in enumerate(argv):
        if word == "--":
            out.extend(argv[index:])
            break
        flag, sep, value = word.partition("=")
        if not flag.startswith("--") or len(flag) < 3 or flag in exact:
            out.append(word)
            continue
        candidates = [o for o in declared if o.startswith(flag)]
        if len(candidates) > 1:
            parser.error(f"{flag} is an abbreviation of several flags ({', '.join(candidates)}); spell one out")
        if candidates:
            warn(flag, f"command line: {flag} is an abbreviation of {candidates[0]}; spell it out "
                       f"(abbreviations are kept for legacy command lines)")
            flag = candidates[0]
        out.append(flag + sep + value)
    return out
