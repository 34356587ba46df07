"""`configbags plan`: how many KV tokens and requests a model gets on a device with these
server flags, and why.

    configbags plan --model-config models/llama-3.1-8b.json --gpu H100 \\
        --tp-size 8 --page-size 16 --kv-cache-dtype fp8_e4m3 --workload 2000:500

It checks the package's schema against the configurator's seam (one error names all it
lacks), publishes the flags as role `worker` (the role that owns the load-time leaves the
configurator resolves), plans through the context exactly as the engine would, prints the
budget breakdown, the cell, the capacities, the concurrency at the workload, every pool
tensor, the inputs it read with the layer and rule that decided each (as `configbags
explain` shows them), and the write-backs as `server_info()` reports them. Comma lists in
`--gpu` and `--tp-size` plan every combination and print one comparison table instead.

Memory comes from `--device-memory`, a `--gpu` preset, or `torch.cuda.mem_get_info` when
CUDA is available. Exit status: 0 planned, 1 does not fit, 2 a wrong input.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, NoReturn

import attrs

from configbags.packages import load_context
from configbags.runtime.cliflags import secret_flags, shown_argv
from configbags.runtime.cmdline import (
    UsageErrors,
    add_help,
    peek_package,
    print_stderr,
    refuse_collisions,
)
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, MissingLeafError
from configbags.runtime.leaftypes import int_from_text, jsonable, short_repr
from configbags.runtime.project import load_project, project_path
from configbags.runtime.record import (
    DumpInput,
    attach,
    check_dump_apart,
    dump_path_of,
    model_inputs,
    origins_of,
    secret_file_inputs,
)
from configbags.runtime.resolve import DEFAULT_ORIGIN, Facts, GpuFacts, ModelFacts, parse_bytes
from configbags.server import fit
from configbags.server.kvcache import seam
from configbags.server.kvcache.configurator import KvCacheConfigurator
from configbags.server.kvcache.errors import BudgetError, DoesNotFitError
from configbags.server.kvcache.gpus import GPU_PRESETS, GpuPreset, gpu_preset
from configbags.server.kvcache.model_shape import ModelShape, load_model_shape
from configbags.server.kvcache.planner import (
    SGLANG_NAME,
    SGLANG_VERSION,
    DeviceMemory,
    GiB,
    KvPlan,
    PlanSettings,
    PoolTensor,
    concurrency,
)

# The bundled server's own generated package, planned with when no project names another.
SERVER_PACKAGE = "configbags.generated"

EXIT_OK, EXIT_DOES_NOT_FIT, EXIT_USER_ERROR = 0, 1, 2




def _int_entry(part: str, whole: str, what: str, low: int, high: int) -> int:
    """One integer of a flag's value in the one int grammar (the record's int flags'), within
    [low, high]; the refusal quotes the entry and, when the value has several, the whole."""
    of = "" if part == whole else f" of {short_repr(whole)}"
    try:
        value = int_from_text(part)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{what}{short_repr(part)}{of} is not an integer (ASCII digits, optionally signed, or 0x/0o)") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{what}{short_repr(part)}{of} must be between {low} and {high:,}")
    return value


def parse_int_list(text: str) -> list[int]:
    """`1,2,4,8` -> [1, 2, 4, 8] (argparse `type=`), each in the one int grammar."""
    parts = text.split(",")
    if any(not part.strip() for part in parts):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} has an empty entry; write sizes like 1,2,4,8")
    return [_int_entry(part, text, "entry " if len(parts) > 1 else "", 1, 4096) for part in parts]


parse_int_list.__name__ = "sizes"


def parse_size(text: str) -> int:
    """A memory size (argparse `type=`): `parse_bytes`, and a negative one named as such."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: a memory size must be positive; write e.g. 80GiB")
    return parse_bytes(text)


parse_size.__name__ = "size"

# Flags whose value may look like an option (`-80GiB`): main() joins them as `--flag=value`
# so argparse hands the value to the type, which names the mistake.
_SIZE_FLAGS = ("--device-memory", "--weight-bytes", "--draft-weight-bytes")


def _join_size_values(args: list[str]) -> list[str]:
    out: list[str] = []
    it = iter(range(len(args)))
    for i in it:
        if args[i] in _SIZE_FLAGS and i + 1 < len(args) and args[i + 1].startswith("-") and args[i + 1][1:2].isdigit():
            out.append(f"{args[i]}={args[i + 1]}")
            next(it, None)
        else:
            out.append(args[i])
    return out


MAX_COUNT = 999_999_999  # a request count or token count a flag takes: nine digits, as ever


def parse_positive(text: str) -> int:
    """A positive integer (argparse `type=`) in the one int grammar."""
    return _int_entry(text, text, "", 1, MAX_COUNT)


parse_positive.__name__ = "count"


def parse_kv_dtypes(text: str) -> list[str]:
    """`auto,fp8_e4m3` -> the KV cache dtypes --fit tries (the server flag checks each)."""
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} has an empty entry; write e.g. auto,fp8_e4m3")
    return parts


parse_kv_dtypes.__name__ = "kv dtypes"


def parse_gpus(text: str) -> list[GpuPreset]:
    """`H100,H200` -> their presets; an empty entry is refused (a dropped one would plan
    for fewer devices than asked, silently)."""
    names = [part.strip() for part in text.split(",")]
    if any(not name for name in names):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} has an empty entry; write e.g. H100,H200")
    try:
        return [gpu_preset(name) for name in names]
    except KeyError as exc:
        raise argparse.ArgumentTypeError(str(exc.args[0])) from None


parse_gpus.__name__ = "gpus"


def parse_workload(text: str) -> tuple[int, int]:
    """`2000:500` -> (input tokens, output tokens), each in the one int grammar."""
    parts = text.split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{short_repr(text)} is not IN:OUT tokens, e.g. 2000:500")
    isl, osl = (_int_entry(part, text, f"{side} ", 0, MAX_COUNT) for side, part in zip(("IN", "OUT"), parts, strict=True))
    if isl + osl < 1:
        raise argparse.ArgumentTypeError(f"{short_repr(text)}: a request holds at least one token, e.g. 2000:500")
    return isl, osl


parse_workload.__name__ = "workload"


# What --chart writes, each in the format its suffix names. matplotlib writes more, but a
# fixed list is checked with the flags, without importing it (the plan is not run for a
# name it would then refuse, nor written as name.png when the name has no suffix).
CHART_SUFFIXES = (".png", ".svg", ".pdf")


def _chart_path(text: str) -> str:
    """A chart path is checked with the flags, not after the plan was printed."""
    from configbags.runtime.errors import OutputFileError
    from configbags.runtime.yamlsafe import check_output_path

    path = project_path(text)  # relative to the project, as every configbags path
    suffix = path.suffix.lower()
    if suffix not in CHART_SUFFIXES:
        why = f"{short_repr(suffix)} is no chart format" if suffix else "the name has no suffix"
        raise argparse.ArgumentTypeError(f"{short_repr(text)}: {why}; name the chart with one of "
                                         f"{', '.join(CHART_SUFFIXES)} (its format)")
    try:
        check_output_path(path, "--chart")
    except OutputFileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return str(path)


class _PlanUsage(UsageErrors):
    """`UsageErrors` that, with `--json` on the command line, also print the usage error as
    the one JSON object of a failure on stdout (a script reading it gets something to parse)."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if self.json_errors:
            flag = _USAGE_FLAG.match(message)
            print_stderr_json("UsageError", message, EXIT_USER_ERROR, flag=flag.group(1) if flag else None)
        super().error(message)


# argparse's words for the flag a usage error is about: `argument --tp-size: ...`,
# `argument --tp-size/--tensor-parallel-size: ...`, `... required: --model-config`
_USAGE_FLAG = re.compile(r"(?:argument |the following arguments are required: )(--[A-Za-z][\w.-]*)")


def _json_wanted(args: Sequence[str]) -> bool:
    """`--json` on a command line not parsed yet (before any `--`)."""
    words = list(args)
    return "--json" in (words[: words.index("--")] if "--" in words else words)


def build_parser(package: str | None = None) -> _PlanUsage:
    """The plan's own flags. Server flags are parsed by the generated package's `ServerArgs`
    (`--help-all` lists them); `--help` names only the ones the plan reads."""
    parser = _PlanUsage(
        prog="configbags plan",
        description=textwrap.fill(
            "Size the KV cache of a model (Hugging Face config.json) for the given server flags. "
            f"Models {SGLANG_VERSION}: --mem-fraction-static is the share of the memory free "
            "before weights load that weights plus KV may take.", width=88,
        ),
        allow_abbrev=False, add_help=False,
        epilog=_server_flags_epilog(package),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan = parser.add_argument_group("plan")
    plan.add_argument("--model-config", required=True, metavar="PATH",
                      help="the model's config.json, or a model folder holding one")
    plan.add_argument("--device-memory", type=parse_size, metavar="SIZE",
                      help="free device memory before weights load, e.g. 80GiB (default: the --gpu "
                           "preset, else CUDA free memory)")
    plan.add_argument("--gpu", type=parse_gpus, metavar="GPU[,GPU...]",
                      help=f"device presets to plan for ({', '.join(p.name for p in GPU_PRESETS.values())})")
    plan.add_argument("--tp-size", type=parse_int_list, metavar="N[,N...]",
                      help="tensor-parallel sizes; a list compares them")
    plan.add_argument("--workload", type=parse_workload, metavar="IN:OUT",
                      help="prompt and output tokens of one request: report how many fit at once "
                           "(default: one request of the context length)")
    plan.add_argument("--fit", action="store_true",
                      help="the inverse question: list every --gpu x --tp-size (x --kv-dtypes) configuration "
                           "that holds --concurrency requests of --workload at once, cheapest first, with "
                           "the flags to launch it (default: every GPU preset, TP 1,2,4,8)")
    plan.add_argument("--concurrency", type=parse_positive, metavar="N",
                      help="with --fit: the requests to hold at the same time")
    plan.add_argument("--kv-dtypes", type=parse_kv_dtypes, metavar="DTYPE[,DTYPE...]",
                      help="with --fit: KV cache dtypes to try (default: the --kv-cache-dtype given)")
    plan.add_argument("--require-full-context", action="store_true",
                      help="fail when one request of the full context does not fit (default: cap "
                           "the request length, as SGLang does, and warn)")
    plan.add_argument("--weight-bytes", type=parse_size, metavar="SIZE",
                      help="measured weights per rank (default: estimated from the model config)")
    plan.add_argument("--draft-weight-bytes", type=parse_size, metavar="SIZE",
                      help="measured draft weights per rank (default: estimated)")
    plan.add_argument("--allocate", choices=["cpu", "meta"],
                      help="also allocate the pools with torch on this device and check the bytes")
    plan.add_argument("--json", action="store_true", help="print the plan and server_info() as JSON")
    plan.add_argument("--chart", metavar="PNG", type=_chart_path,
                      help="draw the memory breakdown (or --fit's ranking) to a .png, .svg or .pdf file; one "
                           "configuration, not a comparison (needs matplotlib)")
    plan.add_argument("--package", metavar="PKG",
                      help="the generated config package to plan with (default: [tool.configbags] "
                           f"package in pyproject.toml, else the bundled server's {SERVER_PACKAGE})")
    plan.add_argument("--help-all", action="store_true", help="list every server flag and exit")
    add_help(parser, lambda: _server_parser(package))
    return parser


def _server_parser(package: str | None) -> argparse.ArgumentParser | None:
    """The package's server flags, for --help=KEYWORD (None when it does not load)."""
    try:
        record_type = _package(package).record_type
    except ConfigError:
        return None
    if record_type is None:
        return None
    server = argparse.ArgumentParser(prog="configbags plan", allow_abbrev=False, add_help=False)
    record_type.add_cli_args(server)
    return server


def _server_flags_epilog(package: str | None) -> str:
    try:
        leaves = _package(package).registry.leaves
    except ConfigError:  # help must print even when the package does not import
        return "server flags: those of the generated ServerArgs (--help-all lists them)"
    read = [leaf.name for leaf in seam.SEAM]
    flags = [leaves[n].flags[0] for n in read if n in leaves and leaves[n].flags]
    lines = textwrap.wrap(", ".join(flags), width=86, initial_indent="  ", subsequent_indent="  ",
                          break_on_hyphens=False)
    return "\n".join(["server flags the plan reads (--help-all lists every server flag):", *lines])


def _package(package: str | None) -> Context[Any]:
    return load_context(package or load_project().package or SERVER_PACKAGE)


def device_memory(given: int | None) -> tuple[int, str]:
    if given is not None:
        return given, "--device-memory"
    import torch  # only when asked to measure

    if torch.cuda.is_available():
        free, _total = torch.cuda.mem_get_info()
        return int(free), f"torch.cuda.mem_get_info on {torch.cuda.get_device_name()}"
    raise ConfigError("no CUDA device to measure: pass --device-memory SIZE (e.g. 80GiB) or --gpu H100")


@attrs.frozen
class _Point:
    """One (model, device, TP size) combination to plan."""

    shape: ModelShape
    gpu: GpuPreset | None
    tp_size: int | None

    def label(self) -> str:
        return f"{self.shape.name} {self.gpu.name if self.gpu else 'device'} tp{self.tp_size or ''}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    args = _join_size_values(sys.argv[1:] if argv is None else list(argv))
    json_out = _json_wanted(args)
    try:
        return _main(args, json_out)
    except ConfigError as exc:  # one a step let through: still the one line (and object) of a failure
        return _fail(exc, json_out)
    except ModuleNotFoundError as exc:  # an extra a path needs (--allocate meta: torch); the CLI names it
        if json_out:
            print_stderr_json(type(exc).__name__, f"this needs {exc.name}, which is not installed", EXIT_USER_ERROR)
        raise


def _main(args: list[str], json_out: bool) -> int:
    package = peek_package(args)
    parser = build_parser(package)
    parser.json_errors = json_out
    ns, server_argv = parser.parse_known_args(args)
    try:
        ctx = _package(ns.package)
    except ConfigError as exc:
        return _fail(exc, json_out, flag="--package" if ns.package else None)
    record_type = ctx.record_type
    assert record_type is not None
    server = _PlanUsage(
        prog="configbags plan", allow_abbrev=False, command=parser,
        usage="configbags plan --model-config PATH [plan flags] [server flags]  (--help, --help-all)",
    )
    server.json_errors = json_out
    record_type.add_cli_args(server)
    try:  # plan's --tp-size list stands for the record's tp_size at each point
        refuse_collisions("configbags plan", parser, server, ns.package or "the project's package", shared=("--tp-size",))
    except ConfigError as exc:
        return _fail(exc, json_out)
    if ns.help_all:
        server.print_help()
        return EXIT_OK
    try:  # everything the schema lacks, in one error, before anything is published
        seam.check(ctx.registry, role=seam.CONFIGURATOR_ROLE, fixed_role=True)
    except ConfigError as exc:
        return _fail(exc, json_out)
    try:
        shapes = _load_shapes(ns.model_config)
    except _ModelError as exc:
        return _fail(exc.error, json_out, flag="--model-config", file=exc.path)
    try:
        _check_configurations(ns, len(shapes))
    except ConfigError as exc:
        return _fail(exc, json_out)
    points = [_Point(m, g, t) for m, g, t in itertools.product(shapes, ns.gpu or [None], ns.tp_size or [None])]
    if ns.chart and not ns.fit and len(points) > 1:  # a comparison's table has no chart: say so, before planning
        return _fail(ConfigError(f"--chart draws one plan (or --fit's ranking), and these lists compare {len(points)} "
                                 f"configurations; give one --model-config, --gpu and --tp-size, or ask --fit"),
                     json_out, flag="--chart")
    records = _Records(ctx, server, server_argv)
    try:
        for point in points:  # a bad server flag is refused before any planning
            parsed = records.get(point)
            # a dump over the model's config.json would replace the model it plans
            check_dump_apart(parsed.dump_path, [*model_inputs(point.shape.source, "--model-config"),
                                                *model_inputs(getattr(parsed.record, STAND_IN_LEAF, None),
                                                              "--model-path")])
    except ConfigError as exc:
        return _fail(exc, json_out)
    if records.get(points[0]).dump_path is not None and (ns.fit or len(points) > 1):
        return _fail(_one_dump_refused(ns.fit, len(points)), json_out, flag="--dump-config")
    if ns.chart:
        try:  # the chart is drawn last: over an input, it would replace what was just planned
            check_dump_apart(ns.chart, _chart_inputs(ctx, records, points), "--chart", "the chart")
        except ConfigError as exc:
            return _fail(exc, json_out, flag="--chart")
    if ns.fit:
        return _fit(ns, ctx, records, points)
    if len(points) > 1:
        return _compare(ns, ctx, records, points)
    return _plan_one(ns, ctx, records, points[0])


def _one_dump_refused(fit_asked: bool, configurations: int) -> ConfigError:
    """--dump-config writes the resolved config of one configuration: each point of a
    comparison or of --fit would replace the last one's dump (and --fit's launch lines would
    all repeat the flag), so the file would hold whichever point ran last."""
    asked = "--fit ranks configurations" if fit_asked else f"these lists compare {configurations} configurations"
    return ConfigError(f"--dump-config writes one configuration, not a comparison, and {asked}; plan the one you "
                       "pick (one --model-config, --gpu and --tp-size, or a --fit launch line's flags) with it")


CHART_LOSS = "the file's own contents would be lost"


def _chart_inputs(ctx: Context[Any], records: _Records, points: Sequence[_Point]) -> list[DumpInput]:
    """The files the plan reads, which --chart must not replace: each model config, each
    --config file, and the file a secret's `NAME_FILE` variable names."""
    inputs = [*(DumpInput(f"the --config file {config}", config, CHART_LOSS) for config in records.config_files),
              *secret_file_inputs(ctx.registry, os.environ)]
    for point in points:
        inputs += [attrs.evolve(given, loss=CHART_LOSS) for given in model_inputs(point.shape.source, "--model-config")]
    return inputs


class _ModelError(Exception):
    """A model config refused, with the path it was read from (None: the flag's text)."""

    def __init__(self, error: ConfigError, path: str | None) -> None:
        super().__init__(str(error))
        self.error, self.path = error, path


def _load_shapes(text: str) -> list[ModelShape]:
    try:
        paths = _model_paths(text)
    except ConfigError as exc:
        raise _ModelError(exc, None) from None
    shapes = []
    for path in paths:
        try:
            shapes.append(load_model_shape(path))
        except ConfigError as exc:
            raise _ModelError(exc, path) from None
    return shapes


def _model_paths(text: str) -> list[str]:
    """`a.json,b.json` -> each path (a comma list compares models as --gpu and --tp-size do),
    relative to the project like every path of a configbags command line."""
    paths = [part.strip() for part in text.split(",")]
    if any(not part for part in paths):
        raise ConfigError(f"--model-config {text[:80]!r} has an empty entry; write PATH[,PATH...]")
    return [str(project_path(part)) for part in paths]


# The one required leaf plan fills in itself, and only where no layer sets it: the model,
# whose weights plan never loads (the --model-config path stands in), as explain does.
STAND_IN_LEAF = "model_path"
STAND_IN_READBACK = {"layer": "placeholder",
                     "source": "plan's stand-in, the --model-config path (plan loads no weights): not an operator value"}


@attrs.frozen
class _Parsed:
    """One point's operator record; `stand_in`: the model path plan filled in where no
    layer gave one (None: the operator's own), and then `dump`, the --dump-config path plan
    writes itself, without the stand-in (the record carries no dump path)."""

    record: Any
    stand_in: str | None = None
    dump: str | None = None

    @property
    def dump_path(self) -> str | None:
        return self.dump if self.stand_in is not None else dump_path_of(self.record)


@attrs.define
class _Records:
    """The operator record of each (model, TP size), parsed once: the server flags with the
    point's TP size and, where the schema requires the model path and no layer sets it, a
    stand-in (the plan needs no weights, so the config's path will do)."""

    ctx: Context[Any]
    server: argparse.ArgumentParser
    server_argv: list[str]
    cache: dict[tuple[str | int | None, ...], _Parsed] = attrs.Factory(dict)
    config_files: dict[str, None] = attrs.Factory(dict)  # every --config the records read, in order

    def get(self, point: _Point, extra: Sequence[str] = ()) -> _Parsed:
        key = (point.shape.source, point.tp_size, *extra)
        if key not in self.cache:
            try:
                self.cache[key] = _Parsed(self._record(point, extra))
            except MissingLeafError as exc:
                if exc.leaf != STAND_IN_LEAF:
                    raise
                spec = self.ctx.registry.leaves[STAND_IN_LEAF]
                stand_in = [spec.flags[0] if spec.flags else f"--{spec.name}", point.shape.source]
                record = self._record(point, [*extra, *stand_in])
                dump = dump_path_of(record)
                # re-attached without its dump path: plan writes the dump, leaving the stand-in out (passed
                # back with --config, it would be an operator's value: weights read from a JSON file)
                attach(record, origins_of(record, self.ctx.registry.leaves))
                self.cache[key] = _Parsed(record, point.shape.source, dump)
        return self.cache[key]

    def _record(self, point: _Point, added: Sequence[str]) -> Any:
        argv = _before_dashes(self.server_argv, _with_tp(list(added), point.tp_size))
        record_type = self.ctx.record_type
        assert record_type is not None
        namespace = self.server.parse_args(argv)
        self.config_files.update(dict.fromkeys(getattr(namespace, "config", None) or ()))
        return record_type.from_cli_args(namespace)


def _before_dashes(server_argv: list[str], added: list[str]) -> list[str]:
    """The operator's server words with plan's own (`added`) after them but before any `--`
    they hold: a `--` ends the flags, and a usage error must name only words the operator gave."""
    cut = server_argv.index("--") if "--" in server_argv else len(server_argv)
    return [*server_argv[:cut], *added, *server_argv[cut:]]


def _with_tp(server_argv: list[str], tp_size: int | None) -> list[str]:
    return server_argv if tp_size is None else [*server_argv, "--tp-size", str(tp_size)]


def _memory(ns: argparse.Namespace, gpu: GpuPreset | None) -> DeviceMemory:
    if gpu is not None:
        pre = ns.device_memory or gpu.memory_bytes
        source = "--device-memory" if ns.device_memory else f"--gpu {gpu.name} ({gpu.sm_count} SMs)"
        return DeviceMemory(pre, ns.weight_bytes, ns.draft_weight_bytes, source, gpu.memory_bytes, gpu.sm)
    pre, source = device_memory(ns.device_memory)
    return DeviceMemory(pre, ns.weight_bytes, ns.draft_weight_bytes, source)


@attrs.frozen
class _Configured:
    """One planned point: the plan, the memory it was planned for, how long planning took,
    and `inputs`: each leaf the plan read, with its value and the layer (and rule) that
    decided it, taken before the planner's write-backs."""

    plan: KvPlan
    memory: DeviceMemory
    plan_ms: float
    inputs: dict[str, dict[str, Any]]


def _configure(ns: argparse.Namespace, ctx: Context[Any], records: _Records, point: _Point,
               extra: Sequence[str] = (), *, overrun_ok: bool = False) -> _Configured:
    """Plan one point. `overrun_ok`: return a plan whose tables overrun the slack instead of
    refusing it (`--fit` then tries the point again with a shorter context)."""
    shape = point.shape
    parsed = records.get(point, extra)
    memory = _memory(ns, point.gpu)
    # the hardware and model rules (mem_fraction_static from GPU memory, the page size an
    # attention backend forces, Gemma-2's full sliding-window pool) resolve at publish from
    # these facts, as in the engine; the model facts are explain's (the whole config.json)
    facts = Facts(GpuFacts(point.gpu.name if point.gpu else None, memory.capacity_bytes or memory.pre_bytes,
                           memory.sm),
                  ModelFacts.from_config(shape.config))
    ctx.publish(parsed.record, role=seam.CONFIGURATOR_ROLE, facts=facts)
    if parsed.stand_in is not None and parsed.dump is not None:  # as publish writes one, less the stand-in
        ctx.dump_config(parsed.dump, left_out={STAND_IN_LEAF: "plan's stand-in, the --model-config path, "
                                                              "not an operator value"})
    inputs = plan_inputs(ctx)
    start = time.perf_counter()
    plan = KvCacheConfigurator(shape, memory, ctx, require_full_context=ns.require_full_context,
                               workload_tokens=sum(ns.workload) if ns.workload else None).configure()
    if plan.budget.headroom < 0 and not overrun_ok:  # the tables alone overrun the slack: nothing left for activations
        raise BudgetError(f"the tables paid from the slack need {plan.budget.from_slack / GiB:.2f} GiB, more than "
                          f"its {plan.budget.slack / GiB:.2f} GiB, leaving nothing for activations; lower "
                          "--context-length, --max-running-requests or --mem-fraction-static")
    return _Configured(plan, memory, (time.perf_counter() - start) * 1e3, inputs)


def plan_inputs(ctx: Context[Any]) -> dict[str, dict[str, Any]]:
    """Each leaf the plan reads that the schema declares: its value and where it came from
    (`layer`, `source` and, for a rule, `rule`), exactly as `configbags explain` reports it.
    Derived values read `layer: derived`."""
    reg = ctx.registry
    bags = ctx.snapshot()  # the bags of one moment, without a whole server_info() per point
    origins = ctx.origins()
    out: dict[str, dict[str, Any]] = {}
    for name in (f.name for f in attrs.fields(PlanSettings)):
        spec = reg.leaves.get(name) or reg.derived.get(name)
        if spec is None:
            continue
        if name in reg.leaves:
            origin = origins.get(name, DEFAULT_ORIGIN).as_dict()
        else:
            origin = {"layer": "derived", "source": f"derived from {', '.join(reg.derived[name].inputs)}"}
        value = getattr(bags[spec.namespace], name)
        out[name] = {"value": jsonable(reg.shown(name, value)), **origin}
    return out


def _plan_one(ns: argparse.Namespace, ctx: Context[Any], records: _Records, point: _Point) -> int:
    shape = point.shape
    try:
        done = _configure(ns, ctx, records, point)
        plan = done.plan
        ctx.seal()  # what a worker does at the end of model load
        allocated = _allocate(plan, ns.allocate) if ns.allocate else None
    except ConfigError as exc:
        return _fail(exc, ns.json)
    if ns.chart and not _drawn(ns, lambda: draw_chart(plan, ns.chart)):
        return EXIT_USER_ERROR
    load = concurrency(plan, _request_tokens(ns, plan))
    if ns.json:
        out = {"plan": to_jsonable(plan), "inputs": done.inputs, "server_info": _server_info(ctx, records.get(point)),
               "sglang": SGLANG_VERSION, "concurrency": to_jsonable(load)}
        if allocated:
            out["allocation"] = allocated
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(render_table(plan, shape.source, done.memory.source, done.plan_ms, allocated, ns.workload,
                           done.inputs))
    if ns.chart and not ns.json:
        print(f"chart written to {ns.chart}")
    return EXIT_OK


def _server_info(ctx: Context[Any], parsed: _Parsed) -> dict[str, Any]:
    """`server_info()`, with plan's stand-in model path read back as a placeholder (as
    explain reads its own), never as the operator's `--model-path`."""
    info = ctx.server_info()
    if parsed.stand_in is not None:
        info["layers"][STAND_IN_LEAF] = dict(STAND_IN_READBACK)
        info["placeholder"] = {STAND_IN_LEAF: parsed.stand_in}
    return info


def _drawn(ns: argparse.Namespace, draw: Callable[[], None]) -> bool:
    """Draw the chart before anything is printed, so that a missing matplotlib under --json
    is the one JSON object on stdout, not a second one after the plan."""
    try:
        draw()
    except ImportError:
        message = "--chart needs matplotlib: pip install 'configbags[chart]'"
        print_stderr(f"configbags plan: {message}")
        if ns.json:
            print_stderr_json("ImportError", message, EXIT_USER_ERROR, flag="--chart")
        return False
    except (OSError, ValueError) as exc:  # checked with the flags, yet the write can still fail (a full disk)
        message = f"--chart {ns.chart}: cannot be written: {getattr(exc, 'strerror', None) or exc}"
        print_stderr(f"configbags plan: error: {message}")
        if ns.json:
            print_stderr_json(type(exc).__name__, message, EXIT_USER_ERROR, flag="--chart")
        return False
    return True


def _request_tokens(ns: argparse.Namespace, plan: KvPlan) -> int:
    """The workload's request, else the longest one SGLang admits at the context length."""
    if ns.workload is not None:
        return int(sum(ns.workload))
    return plan.context_length - 1


def _compare(ns: argparse.Namespace, ctx: Context[Any], records: _Records, points: list[_Point]) -> int:
    """Plan every point under a fresh publish and print one table: tokens, requests that
    fit at the workload, and what binds (or why the point is refused)."""
    rows: list[dict[str, Any]] = []
    for point in points:
        row: dict[str, Any] = {"model": point.shape.name, "gpu": point.gpu.name if point.gpu else None,
                               "tp_size": point.tp_size}
        with ctx.restoring():
            try:
                done = _configure(ns, ctx, records, point)
            except DoesNotFitError as exc:
                row.update(status="does not fit", reason=str(exc))
            except ConfigError as exc:
                row.update(status="refused", reason=str(exc))
            else:
                plan = done.plan
                load = concurrency(plan, _request_tokens(ns, plan))
                row.update(status="planned", inputs=done.inputs, tokens=plan.max_total_num_tokens,
                           max_running_requests=plan.max_running_requests, concurrency=load.requests,
                           request_tokens=load.request_tokens, binds=load.binds, fit_reason=load.reason,
                           mem_fraction_static=plan.mem_fraction_static, max_req_len=plan.max_req_len,
                           context_capped=plan.context_capped,
                           weights_gib=round(plan.budget.weights / GiB, 2))
        rows.append(row)
    if ns.json:
        print(json.dumps({"sglang": SGLANG_VERSION, "comparison": rows}, indent=2, sort_keys=True))
    else:
        print(render_comparison(rows))
    statuses = {row["status"] for row in rows}
    if "planned" in statuses:
        return EXIT_OK
    return EXIT_DOES_NOT_FIT if "does not fit" in statuses else EXIT_USER_ERROR


# The comparison table's width: a terminal's 100 columns; reasons wrap at word boundaries.
_TABLE_WIDTH = 100


def render_comparison(rows: list[dict[str, Any]]) -> str:
    """One line per point; a refusal's first clause wraps under it, never cut mid-number.
    Fractions print to 3 places, counts with thousands separators."""
    models = sorted({row["model"] for row in rows})
    lines = [*textwrap.wrap(f"configbags plan: {', '.join(models)} ({SGLANG_NAME})", width=_TABLE_WIDTH), "",
             f"{'model':<20} {'gpu':<9} {'tp':>3} {'mfs':>6} {'tokens':>11} {'max reqs':>8} {'fit':>7}  binds"]
    for row in rows:
        head = f"{row['model'][:20]:<20} {row['gpu'] or '-':<9} {row['tp_size'] or '-':>3}"
        if row["status"] != "planned":
            lines.append(f"{head} {row['status']}")
            lines += textwrap.wrap(row["reason"].split("; ")[0], width=_TABLE_WIDTH, initial_indent="    ",
                                   subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
            continue
        lines.append(f"{head} {row['mem_fraction_static']:>6.3f} {row['tokens']:>11,} "
                     f"{row['max_running_requests']:>8,} {row['concurrency']:>7,}  {row['binds']}")
        if row["context_capped"]:
            lines.append(f"    requests capped at {row['max_req_len']:,} tokens: the pool is shorter than the context")
    tokens = {row["request_tokens"] for row in rows if row["status"] == "planned"}
    if tokens:
        lines += ["", f"fit: requests of {', '.join(f'{t:,}' for t in sorted(tokens))} tokens held at the same "
                      "time (--workload IN:OUT sets the size)"]
    return "\n".join(lines)


MAX_CONFIGURATIONS = 512  # configurations one run plans: each is a publish (tens of ms)


def _check_configurations(ns: argparse.Namespace, models: int) -> None:
    """Refuse more configurations than MAX_CONFIGURATIONS before planning any: the product
    of the list flags (with --fit, every GPU preset and tp 1,2,4,8 unless given)."""
    counts = {"--model-config": models,
              "--gpu": len(ns.gpu) if ns.gpu else (len(GPU_PRESETS) if ns.fit else 1),
              "--tp-size": len(ns.tp_size) if ns.tp_size else (len(FIT_TP_SIZES) if ns.fit else 1),
              "--kv-dtypes": len(ns.kv_dtypes) if ns.fit and ns.kv_dtypes else 1}
    total = math.prod(counts.values())
    if total > MAX_CONFIGURATIONS:
        shown = " x ".join(f"{n} ({flag})" for flag, n in counts.items() if n > 1)
        raise ConfigError(f"{shown} is {total:,} configurations, over the bound of {MAX_CONFIGURATIONS} one run "
                          f"plans; give shorter lists (each entry once) or split the question into several runs")


FIT_TP_SIZES = [1, 2, 4, 8]  # --fit's tensor-parallel sizes when --tp-size is not given


def _fit(ns: argparse.Namespace, ctx: Context[Any], records: _Records, points: list[_Point]) -> int:
    """`--fit`: every candidate planned with `--max-running-requests N` (and, where the
    context must shrink, `--context-length`), judged against N (server.fit)."""
    if ns.workload is None or ns.concurrency is None:
        return _fail(ConfigError("--fit needs --workload IN:OUT and --concurrency N (the requests to hold at once)"),
                     ns.json, flag="--workload" if ns.workload is None else "--concurrency")
    isl, osl = ns.workload
    n = ns.concurrency
    shapes = list({id(p.shape): p.shape for p in points}.values())
    gpus = ns.gpu or list(GPU_PRESETS.values())
    entries = []
    for shape, gpu, tp, kv in itertools.product(shapes, gpus, ns.tp_size or FIT_TP_SIZES, ns.kv_dtypes or [None]):
        candidate = fit.Candidate(shape.name, gpu.name, gpu.memory_bytes, tp, kv)
        extra = ["--max-running-requests", str(n), *(["--kv-cache-dtype", kv] if kv else [])]
        point = _Point(shape, gpu, tp)
        try:
            with ctx.restoring():
                done = _configure(ns, ctx, records, point, extra, overrun_ok=True)
            context = None
            if fit.needs_shorter_context(done.plan, isl, osl):
                context = fit.context_for(isl, osl)
                with ctx.restoring():
                    done = _configure(ns, ctx, records, point, [*extra, "--context-length", str(context)])
        except ConfigError as exc:
            entries.append(fit.refused(candidate, str(exc).split("; ")[0], n))
            continue
        # the launch line repeats the operator's flags, a secret's value as REDACTED
        given = shown_argv(records.server_argv, secret_flags(ctx.registry).__contains__)
        entries.append(fit.entry(candidate, done.plan, isl, osl, n, context, given=given))
    ranked = fit.ranked(entries)
    if ns.chart and not _drawn(ns, lambda: fit_chart(ranked, n, ns.chart)):
        return EXIT_USER_ERROR
    if ns.json:
        print(json.dumps({"sglang": SGLANG_VERSION, "fit": {
            "workload": {"input_tokens": isl, "output_tokens": osl}, "concurrency": n,
            "entries": [e.as_dict() for e in ranked]}}, indent=2, sort_keys=True))
    else:
        header = "\n".join(textwrap.wrap(f"configbags plan --fit: {', '.join(s.name for s in shapes)} ({SGLANG_NAME})",
                                         width=_TABLE_WIDTH))
        print(fit.render(ranked, isl, osl, n, header))
    return EXIT_OK if any(e.fits for e in ranked) else EXIT_DOES_NOT_FIT


def fit_chart(entries: Sequence[fit.FitEntry], n: int, path: str) -> None:
    """Requests each configuration holds against the concurrency asked for."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    labels = [f"{e.candidate.gpu} x{e.gpus}" + (f" {e.candidate.kv_cache_dtype}" if e.candidate.kv_cache_dtype else "")
              for e in entries]
    fig, ax = plt.subplots(figsize=(10, max(2.0, 0.3 * len(entries))))
    ax.barh(labels, [e.requests for e in entries], color=["#55a868" if e.fits else "#c44e52" for e in entries])
    ax.axvline(n, color="black", linestyle="--", label=f"{n:,} requests")
    ax.invert_yaxis()
    ax.set_xlabel("requests held at once")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format=os.path.splitext(path)[1][1:].lower())  # as _chart_path checked it
    plt.close(fig)


def _fail(exc: ConfigError, json_out: bool = False, **where: str | None) -> int:
    """The error on stderr and its exit status; with --json also one JSON object on stdout
    (`where`: the flag or file it is about, when known)."""
    print_stderr(f"configbags plan: error: {exc}")
    status = EXIT_DOES_NOT_FIT if isinstance(exc, DoesNotFitError) else EXIT_USER_ERROR
    if json_out:
        print_stderr_json(type(exc).__name__, str(exc), status, leaf=getattr(exc, "leaf", None), **where)
    return status


def print_stderr_json(kind: str, message: str, status: int, **where: str | None) -> None:
    """A failure as `--json` prints it: `{"error": {"type", "message", "exit_status", and
    "flag", "file", "leaf" where known}}`, one object on stdout (docs/PLAN.md)."""
    error: dict[str, Any] = {"type": kind, "message": message, "exit_status": status,
                             "does_not_fit": status == EXIT_DOES_NOT_FIT}
    error.update((key, value) for key, value in where.items() if value is not None)
    print(json.dumps({"sglang": SGLANG_VERSION, "error": error}, indent=2, sort_keys=True))


def host_available_bytes() -> int | None:
    """Memory the host can still give (`MemAvailable`), or None when it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _allocate(plan: KvPlan, device: str) -> dict[str, Any]:
    need = plan.budget.allocated
    if device == "cpu":
        available = host_available_bytes()
        if available is not None and need > available:
            raise DoesNotFitError(
                f"--allocate cpu needs {need / GiB:.2f} GiB but the host has {available / GiB:.2f} GiB "
                "available; use --allocate meta to check the shapes without memory"
            )
    from configbags.server.kvcache.pools import allocate

    start = time.perf_counter()
    try:
        pools = allocate(plan, device)
    except (RuntimeError, MemoryError) as exc:  # the allocator's refusal, not a bug
        raise DoesNotFitError(f"--allocate {device} failed: {str(exc).splitlines()[0][:200]}") from None
    seconds = time.perf_counter() - start
    if pools.pool_bytes != plan.pool_bytes:  # a plan the tensors disagree with is a bug
        raise ConfigError(f"allocated {pools.pool_bytes} bytes, but the plan says {plan.pool_bytes}")
    return {"device": device, "pool_bytes": pools.pool_bytes, "seconds": seconds,
            "tensors": sum(len(g) for g in pools.pools.values()) + 1 + len(pools.spec_buffers)}


def to_jsonable(value: Any) -> Any:
    if attrs.has(type(value)):
        out = {name: to_jsonable(v) for name, v in attrs.asdict(value, recurse=False).items()}
        if isinstance(value, PoolTensor):
            out["nbytes"] = value.nbytes
        return out
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def _gib(n: int | float | Fraction) -> str:
    return f"{float(n) / GiB:9.2f} GiB"


def render_table(plan: KvPlan, model_source: str, memory_source: str, plan_ms: float,
                 allocated: dict[str, Any] | None = None, workload: tuple[int, int] | None = None,
                 inputs: dict[str, dict[str, Any]] | None = None) -> str:
    b, c, s = plan.budget, plan.cell, plan.settings
    lines = [
        f"configbags plan: {plan.model} ({model_source}), models {SGLANG_VERSION}",
        f"  tp {s.tp_size} (attention tp {s.attn_tp_size}, dp {s.attn_dp_size}), pp {s.pp_size}, "
        f"dtype {plan.dtype}, kv {plan.kv_cache_dtype} ({plan.kv_dtype}), page {plan.page_size}, "
        f"context {plan.context_length:,}",
        "",
        f"memory per rank (SGLang semantics: mem_fraction_static {plan.mem_fraction_static} of the "
        "pre-load free memory holds weights + KV)",
        f"  pre-load free      {_gib(b.pre)}   ({memory_source})",
        f"  weights            {_gib(b.weights)}",
        f"  draft weights      {_gib(b.draft_weights)}",
        f"  slack              {_gib(b.slack)}   (1 - mem_fraction_static; SGLang reserves "
        f"{_gib(b.activation_reserve).strip()} for activations and CUDA graphs)",
        f"    kv padding page  {_gib(b.kv_padding)}",
        f"    req_to_token     {_gib(b.req_to_token)}",
        f"    spec buffers     {_gib(b.spec_buffers)}",
        f"    activations      {_gib(b.headroom)}   (what is left of the slack)",
    ]
    if plan.mamba_slots is not None:
        lines += [
            f"  mamba state        {_gib(b.mamba_state)}   ({plan.mamba_slots:,} slots)",
            f"  mamba padding slot {_gib(b.mamba_padding)}",
        ]
        if b.mamba_spec_states:
            lines.append(f"  mamba spec states  {_gib(b.mamba_spec_states)}   (intermediate states for verify)")
    lines += [
        f"  KV budget          {_gib(b.kv_budget)}",
        f"  KV used            {_gib(b.kv_bytes)}   ({b.kv_utilization:.4%} of the budget)",
        "",
        f"cell               {float(c.bytes_per_token):,.1f} bytes/token  "
        f"({c.per_layer_full:,} B x {c.full_layers} layers"
        + (f" + {c.per_layer_draft:,} B x {c.draft_layers} draft" if c.draft_layers else "")
        + (f" + {float(c.swa_ratio or 0)} x {c.per_layer_swa:,} B x {c.swa_layers} SWA" if c.swa_layers else "")
        + ")",
        f"max_total_num_tokens {plan.max_total_num_tokens:>12,}",
    ]
    if plan.swa_tokens is not None:
        lines.append(f"swa tokens           {plan.swa_tokens:>12,}")
    if plan.mamba_slots is not None:
        lines.append(f"mamba slots          {plan.mamba_slots:>12,}   ({plan.mamba_slots_per_request} per request)")
    load = concurrency(plan, int(sum(workload)) if workload else plan.context_length - 1)
    size = f"{workload[0]:,} + {workload[1]:,}" if workload else f"{plan.context_length - 1:,} (the longest admitted)"
    lines += [
        f"max_running_requests {plan.max_running_requests:>12,}   (per attention-DP shard)",
        f"max_req_len          {plan.max_req_len:>12,}"
        + ("   (capped: the context does not fit)" if plan.context_capped else ""),
        f"fit at once          {load.requests:>12,}   requests of {size} tokens; {load.binds} binds"
        + (f" ({load.reason})" if load.reason else ""),
        f"req_to_token         {plan.req_to_token_shape} int32",
    ]
    sp = plan.spec
    if sp.enabled:
        lines.append(
            f"speculative          {sp.algorithm}: steps {sp.num_steps}, topk {sp.eagle_topk}, draft-token "
            f"bound {sp.max_draft_tokens} (active {sp.active_draft_tokens}); per decode "
            f"{sp.alloc_len_per_decode}, reserve {sp.alloc_reserve_per_decode}, row headroom {sp.extra_context_len}"
        )
    else:
        lines.append("speculative          off")
    lines += ["", "pools (binding pipeline stage)"]
    for p in (*plan.pools, *plan.spec_buffers):
        dtype = p.dtype if p.dtype == p.storage_dtype else f"{p.dtype} as {p.storage_dtype}"
        lines.append(f"  {p.name:<19} {p.count:>3} x {p.shape!s:<30} {dtype:<26} {_gib(p.nbytes)}")
    decided = {n: i for n, i in (inputs or {}).items() if i["layer"] not in ("default", "derived")}
    if decided:
        lines += ["", "inputs set by the operator or a rule (layer: source; configbags explain LEAF shows every layer)"]
        for name, given in decided.items():
            lines.append(f"  {name:<32} = {json.dumps(given['value']):<14} [{given['layer']}: {given['source']}]")
    lines += ["", "write-backs (load_time overrides from role worker; the record keeps the input)"]
    if not plan.decisions:
        lines.append("  none")
    was = s.written()
    for d in plan.decisions:
        before = was[d.leaf]
        lines.append(f"  {d.source:<38} {d.leaf} = {d.value!r}   (was {before!r})")
    for note in plan.notes:
        lines.append(f"note: {note}")
    for difference in plan.differences:
        lines.append(f"differs from SGLang: {difference}")
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    lines.append(f"planned in {plan_ms:.2f} ms")
    if allocated:
        lines.append(
            f"allocated {allocated['tensors']} tensors, {_gib(allocated['pool_bytes']).strip()} of pools "
            f"on {allocated['device']} in {allocated['seconds'] * 1e3:.1f} ms (equal to the plan)"
        )
    return "\n".join(lines)


def draw_chart(plan: KvPlan, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    b = plan.budget
    used_slack = b.from_slack
    parts = [
        ("weights", b.weights, "#4c72b0"),
        ("draft weights", b.draft_weights, "#8172b2"),
        ("mamba state", b.mamba_state + b.mamba_padding + b.mamba_spec_states, "#937860"),
        ("KV cache", b.kv_bytes, "#55a868"),
        ("KV budget unused", b.kv_budget - b.kv_bytes, "#a1d99b"),
        ("slack: tables, padding", used_slack, "#dd8452"),
        ("slack: free", max(0, b.slack - used_slack), "#f0c8a0"),
    ]
    fig, ax = plt.subplots(figsize=(10, 2.6))
    left = 0.0
    for label, value, color in parts:
        if value <= 0:
            continue
        ax.barh(0, value / GiB, left=left, color=color, label=f"{label} {value / GiB:.2f} GiB")
        left += value / GiB
    ax.set_yticks([])
    ax.set_xlabel("GiB per rank")
    ax.set_title(
        f"{plan.model}: {plan.max_total_num_tokens:,} tokens, {plan.max_running_requests:,} requests "
        f"(mem_fraction_static {plan.mem_fraction_static})"
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format=os.path.splitext(path)[1][1:].lower())  # as _chart_path checked it
    plt.close(fig)
