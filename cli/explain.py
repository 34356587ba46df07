"""`configbags explain LEAF [server flags]`: why a leaf has the value it has.

    configbags explain mem_fraction_static --gpu-memory 80GiB --tp-size 2
    configbags explain page_size --attention-backend flashmla --page-size 16
    configbags explain disable_hybrid_swa_memory --model-config gemma-2-9b/config.json

Parses the server flags (and the environment, presets and config files) as the server
would, publishes them with the facts given here (GPU name, memory, SM version; the model's
config.json), and prints every layer of the leaf: schema default, each rule and what it
made of the facts, the operator value and where it came from, and the resolved value with
its layer. Secrets print as <redacted>."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from configbags.packages import named_context
from configbags.runtime.cmdline import (
    UsageErrors,
    add_help,
    peek_package,
    print_stderr,
    refuse_collisions,
)
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, MissingLeafError, UnknownLeafError
from configbags.runtime.leaftypes import closest
from configbags.runtime.project import project_path
from configbags.runtime.record import (
    attach,
    check_dump_apart,
    dump_path_of,
    model_inputs,
    origins_of,
    parse_cli_words,
)
from configbags.runtime.resolve import (
    Facts,
    GpuFacts,
    ModelFacts,
    folder_facts,
    parse_bytes,
    parse_sm,
)

# The one required leaf explain fills in itself, and only where no layer sets it: the model,
# whose weights explain never loads (--model-config's path, else "model").
PLACEHOLDER_LEAF = "model_path"
PLACEHOLDER_SOURCE = ("explain's placeholder: no --model-path, environment variable or config file sets it "
                      "(explain loads no weights)")


def build_parser(package: str | None = None) -> argparse.ArgumentParser:
    parser = UsageErrors(
        prog="configbags explain", allow_abbrev=False, add_help=False,
        description="Show every layer of one config leaf for these server flags and facts; "
                    "server flags follow the explain flags (or a `--`).",
    )
    parser.add_argument("leaf", help="the leaf to explain, e.g. mem_fraction_static")
    facts = parser.add_argument_group("facts (inputs of the hardware and model rules)")
    facts.add_argument("--gpu-name", metavar="NAME", help="e.g. 'NVIDIA H100 80GB HBM3'")
    facts.add_argument("--gpu-memory", type=parse_bytes, metavar="SIZE", help="total GPU memory, e.g. 80GiB")
    facts.add_argument("--gpu-sm", type=parse_sm, metavar="SM", help="compute capability as major*10+minor, e.g. 90")
    facts.add_argument("--model-config", type=project_path, metavar="FILE", help="the model's config.json")
    parser.add_argument("--role", default="launcher", help="the role to publish as (default: launcher)")
    parser.add_argument("--package", metavar="PKG", help="the generated config package (default: the project's)")
    parser.add_argument("--json", action="store_true", help="print explain() as JSON")
    add_help(parser, lambda: server_parser(package, "configbags explain LEAF"))
    return parser


def server_parser(package: str | None, prog: str) -> argparse.ArgumentParser | None:
    """The generated package's server flags, for --help (None when it does not load)."""
    try:
        record_type = named_context(package).record_type
    except ConfigError:
        return None
    if record_type is None:
        return None
    server = argparse.ArgumentParser(prog=prog, allow_abbrev=False, add_help=False)
    record_type.add_cli_args(server)
    return server


def facts_from(ns: argparse.Namespace, model_path: Any = None) -> Facts:
    """The facts given here; without --model-config, those of a --model-path folder holding
    a config.json, as serve reads them."""
    gpu = None
    if ns.gpu_name is not None or ns.gpu_memory is not None or ns.gpu_sm is not None:
        gpu = GpuFacts(ns.gpu_name, ns.gpu_memory, ns.gpu_sm)
    model = ModelFacts.from_config(ns.model_config) if ns.model_config else folder_facts(model_path)
    return Facts(gpu, model)


def render(info: dict[str, Any]) -> str:
    """explain() as text, one layer per line."""
    lines = [f"{info['namespace']}.{info['leaf']} = {json.dumps(info['resolved'])}"
             f"   [{info['layer']}: {info['source']}]",
             f"  read it with  {info['accessor']}",
             f"  policy {info['policy']}, owner {info['owner']}, "
             f"{'hashed' if info['hashed'] else 'not hashed'}{', secret' if info['secret'] else ''}"]
    if "default" in info:
        lines.append(f"  schema default       {json.dumps(info['default'])}")
    for verdict in info.get("rules", []):
        mark = "applied" if verdict["applied"] else "skipped"
        lines.append(f"  rule {verdict['rule']:<30} {mark}: {verdict['why']}")
    forced = info.get("origin", {}).get("forced_over")
    if forced:
        lines.append(f"  operator value       {json.dumps(info['record'])} from {forced['source']} "
                     f"({forced['layer']}), replaced by a forced rule")
    elif info.get("layer") in ("preset", "config_file", "env", "cli"):
        lines.append(f"  operator value       {json.dumps(info['record'])} from {info['source']}")
    for shadow in (forced or info.get("origin", {})).get("shadows", ()):
        lines.append(f"  hidden value         {json.dumps(shadow['value'])} from {shadow['source']} "
                     f"({shadow['layer']}): not in force, the value above wins")
    for leaf, value in info.get("placeholder", {}).items():
        lines.append(f"  placeholder          {leaf} = {json.dumps(value)}: {PLACEHOLDER_SOURCE}")
    for entry in info["overrides"]:
        lines.append(f"  override epoch {entry['epoch']:<5} {json.dumps(entry['old'])} -> "
                     f"{json.dumps(entry['new'])} from {entry['source']!r}")
    if "note" in info:
        lines.append(f"  note: {info['note']}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    after: list[str] = []
    if "--" in args:  # everything after `--` is server flags, as for rollout (argparse would keep the `--`)
        cut = args.index("--")
        args, after = args[:cut], args[cut + 1:]
    parser = build_parser(peek_package(args))
    ns, server_argv = parser.parse_known_args(args)
    server_argv += after
    try:
        ctx: Context[Any] = named_context(ns.package)
        known = {*ctx.registry.leaves, *ctx.registry.derived}
        if ns.leaf not in known:  # before publishing, which writes a --dump-config
            raise UnknownLeafError(f"{ns.leaf!r} is not a config leaf{closest(ns.leaf, known)}")
        record_type = ctx.record_type
        assert record_type is not None
        server = UsageErrors(prog="configbags explain LEAF", allow_abbrev=False, command=parser)
        record_type.add_cli_args(server)
        refuse_collisions("configbags explain", parser, server, ns.package or "the project's package")
        # the server's own reading of the words (prefixes, a structured leaf's dotted keys)
        placeholder: str | None = None
        try:
            record = record_type.from_cli_args(parse_cli_words(server, ctx.registry, server_argv))
        except MissingLeafError as exc:
            if exc.leaf != PLACEHOLDER_LEAF:
                raise
            # explain loads no weights: where no flag, variable or config file names the model, any
            # path will do, and the readback says it is a placeholder (never an operator's value)
            placeholder = str(ns.model_config or "model")
            spec = ctx.registry.leaves[PLACEHOLDER_LEAF]
            words = [*server_argv, spec.flags[0] if spec.flags else f"--{spec.name}", placeholder]
            record = record_type.from_cli_args(parse_cli_words(server, ctx.registry, words))
        # explain publishes, so a --dump-config is written: never over the model's config.json
        dump = dump_path_of(record)
        check_dump_apart(dump, [*model_inputs(ns.model_config, "--model-config"),
                                *model_inputs(getattr(record, PLACEHOLDER_LEAF, None), "--model-path")])
        if placeholder is not None and dump is not None:
            # the dump is written here, without the placeholder: passed back with --config, it
            # would be an operator's value
            record = attach(record, origins_of(record, ctx.registry.leaves))
        with ctx.restoring():
            ctx.publish(record, role=ns.role, facts=facts_from(ns, None if placeholder else getattr(record, PLACEHOLDER_LEAF, None)))
            if placeholder is not None and dump is not None:
                ctx.dump_config(dump, left_out={PLACEHOLDER_LEAF: "explain's placeholder, not an operator value"})
            info = ctx.explain(ns.leaf)
        if placeholder is not None:
            info["placeholder"] = {PLACEHOLDER_LEAF: placeholder}
            if info["leaf"] == PLACEHOLDER_LEAF:
                info["layer"], info["source"] = "placeholder", "not an operator value"
    except ConfigError as exc:
        print_stderr(f"configbags explain: error: {exc}")
        return 2
    print(json.dumps(info, indent=2, sort_keys=True) if ns.json else render(info), end="\n" if ns.json else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
