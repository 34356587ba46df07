"""`configbags <command> ...`: one entry point, lazily dispatching so that `plan` never
imports codegen and `gen` never imports torch."""

from __future__ import annotations

import importlib
import sys

# command -> (module with `main(argv: list[str]) -> int`, one-line description)
COMMANDS: dict[str, tuple[str, str]] = {
    "gen": ("configbags.codegen.__main__", "generate generated/ from a schema folder"),
    "ratchet": ("configbags.migrate.cli", "scan, check, init, update and fix raw ServerArgs reads"),
    "import-dataclass": ("configbags.migrate.importer", "turn a dataclass ServerArgs into schema YAML"),
    "cli-check": ("configbags.migrate.clicheck", "compare a legacy command line parser with the generated one"),
    "audit": ("configbags.runtime.audit", "record and report which namespaces each role reads"),
    "plan": ("configbags.runtime.plan", "how much KV cache a model gets on a device, and why"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: configbags <command> [args...]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {desc}" for name, (_, desc) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"configbags: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    result: int = module.main(rest)
    return result
