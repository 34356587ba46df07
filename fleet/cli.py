"""`configbags fleet <subcommand>`: `check` (do live servers agree on the schema's
contracts?). `configbags rollout` is a command of its own (configbags.fleet.rollout)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from configbags.runtime.cmdline import print_stderr

USAGE = ("usage: configbags fleet check [URL... | --servers FILE] [--diff] [--json] [--timeout SECONDS] "
         "[--allow-unchecked CONTRACT]")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] != "check":
        print_stderr(f"configbags fleet: unknown subcommand {args[0]!r}\n{USAGE}")
        return 2
    from configbags.fleet.check import main as check

    return check(args[1:])
