"""`configbags <command> ...`: one entry point, lazily dispatching so that `plan` never
imports codegen and `gen` never imports torch."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

from configbags.runtime.cmdline import print_stderr

# command -> (module with `main(argv: list[str]) -> int`, the extra it needs, one-line description)
COMMANDS: dict[str, tuple[str, str | None, str]] = {
    "init": ("configbags.codegen.scaffold", "gen", "scaffold a schema folder and [tool.configbags] in a project"),
    "gen": ("configbags.codegen.__main__", "gen", "generate the config package from a schema folder"),
    "ratchet": ("configbags.migrate.cli", "gen", "scan, check, init, update and fix raw ServerArgs reads"),
    "import-dataclass": ("configbags.migrate.importer", "gen", "turn a dataclass ServerArgs into schema YAML"),
    "cli-check": ("configbags.migrate.clicheck", None, "compare a legacy command-line parser with the generated one"),
    "audit": ("configbags.audit", None, "record and report which namespaces each role reads"),
    "plan": ("configbags.server.plan", None, "the bundled server: how much KV cache a model gets on a device, and why"),
    "serve": ("configbags.serve.cli", "serve", "publish the config and serve the operator's HTTP config API"),
    "explain": ("configbags.explain", None, "why a leaf has its value: every layer, rule and source"),
    "diff": ("configbags.evolve.diff", None, "classify schema changes by rule, severity and whom they break"),
    "lint": ("configbags.evolve.lint", None, "check launch lines, config files and manifests against a schema"),
    "matrix": ("configbags.evolve.matrix", None, "resolution of declared launch shapes x every leaf, as a golden file"),
    "fleet": ("configbags.fleet.cli", "fleet", "check that live servers agree on the schema's contracts"),
    "rollout": ("configbags.fleet.rollout", "fleet", "split a config change into live (PATCH), reload and restart parts"),
}
# third-party import names -> the extra that installs them
EXTRA_OF = {"jinja2": "gen", "black": "gen", "libcst": "gen", "torch": "kv", "matplotlib": "chart",
            "fastapi": "serve", "uvicorn": "serve", "prometheus_client": "serve", "httpx": "fleet"}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: configbags <command> [args...]", "       configbags --version", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {desc}" for name, (_, _, desc) in COMMANDS.items()]
    lines += ["", "`configbags <command> --help` describes each command."]
    return "\n".join(lines)


def version() -> str:
    import importlib.metadata  # 60 ms: only --version pays it

    try:
        return importlib.metadata.version("configbags")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without install
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(f"configbags {version()}")
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print_stderr(f"configbags: unknown command {command!r}\n\n{_usage()}")
        return 2
    module_name, extra, _ = COMMANDS[command]
    from configbags.runtime.errors import ConfigError  # no third-party import: cheap

    try:
        module = importlib.import_module(module_name)
    except ConfigError as exc:  # e.g. a CONFIGBAGS_* variable refused as the runtime loads
        print_stderr(f"configbags {command}: error: {exc}")
        return 2
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        needed = EXTRA_OF.get(missing, extra)
        if missing == "configbags" or needed is None:
            raise
        print_stderr(f"configbags {command} needs {missing}, which the base install leaves out; install "
                     f"the extra: pip install 'configbags[{needed}]'")
        return 2
    try:
        result: int = module.main(rest)
    except ModuleNotFoundError as exc:  # an extra a code path needs (plan --allocate meta: torch)
        missing = (exc.name or "").partition(".")[0]
        if missing not in EXTRA_OF:
            raise
        print_stderr(f"configbags {command}: this needs {missing}, which the base install leaves out; install "
                     f"the extra: pip install 'configbags[{EXTRA_OF[missing]}]'")
        return 2
    except ConfigError as exc:  # every command: a typed error is the operator's to fix, never a traceback
        print_stderr(f"configbags {command}: error: {exc}")
        return 2
    except BrokenPipeError:  # `configbags plan ... | head` closed the pipe: the reader has what it wanted
        # Python would report the failed flush of stdout at exit: point stdout at nothing first
        # (stdout may be no file, captured in process: then there is nothing to flush)
        with contextlib.suppress(OSError, ValueError):  # io.UnsupportedOperation is both
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a process ended by SIGPIPE (128 + 13)
    return result
