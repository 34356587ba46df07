"""`configbags plan`: how many KV tokens and requests a model gets on a device with these
server flags, and why.

    configbags plan --model-config models/llama-3.1-8b.json --device-memory 80GiB \\
        --tp-size 8 --mem-fraction-static 0.85 --page-size 16 --kv-cache-dtype fp8_e4m3

It publishes the flags as role `worker` (the role that owns the load-time leaves the
configurator resolves), plans through the generated accessors exactly as the engine would,
prints the budget breakdown, the cell, the capacities and every pool tensor, and the
write-backs as `server_info()` reports them. Memory comes from `torch.cuda.mem_get_info`
when CUDA is available and `--device-memory` is not given.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs

from configbags.runtime.context import Context, process_context
from configbags.runtime.errors import ConfigError
from configbags.runtime.kvcache.configurator import KvCacheConfigurator
from configbags.runtime.kvcache.model_shape import load_model_shape
from configbags.runtime.kvcache.planner import DeviceMemory, GiB, KvPlan, PlanSettings, PoolTensor
from configbags.runtime.project import BUNDLED_PACKAGE, load_project

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_bytes(text: str) -> int:
    """`80GiB`, `80 GB`, `1.5TiB`, `85899345920` -> bytes (argparse `type=`)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; write e.g. 80GiB, 40GB or 85899345920")
    size = int(Fraction(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a memory size must be positive")
    return size


parse_bytes.__name__ = "size"


def build_parser(package: str | None = None) -> argparse.ArgumentParser:
    """The plan's own flags. Server flags are parsed by the generated package's `ServerArgs`
    (`--help-all` lists them); `--help` names only the ones the plan reads."""
    parser = argparse.ArgumentParser(
        prog="configbags plan",
        description=textwrap.fill(
            "Size the KV cache of a model (Hugging Face config.json) for the given server flags. "
            "SGLang semantics: --mem-fraction-static is the share of the memory free before "
            "weights load that weights plus KV may take.", width=88,
        ),
        allow_abbrev=False,
        epilog=_server_flags_epilog(package),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan = parser.add_argument_group("plan")
    plan.add_argument("--model-config", required=True, metavar="FILE", help="the model's config.json")
    plan.add_argument("--device-memory", type=parse_bytes, metavar="SIZE",
                      help="free device memory before weights load, e.g. 80GiB (default: CUDA free memory)")
    plan.add_argument("--weight-bytes", type=parse_bytes, metavar="SIZE",
                      help="measured weights per rank (default: estimated from the model config)")
    plan.add_argument("--draft-weight-bytes", type=parse_bytes, metavar="SIZE",
                      help="measured draft weights per rank (default: estimated)")
    plan.add_argument("--allocate", choices=["cpu", "meta"],
                      help="also allocate the pools with torch on this device and check the bytes")
    plan.add_argument("--json", action="store_true", help="print the plan and server_info() as JSON")
    plan.add_argument("--chart", metavar="PNG", help="draw the memory breakdown (needs matplotlib)")
    plan.add_argument("--package", metavar="PKG",
                      help="the generated config package to plan with (default: [tool.configbags] "
                           f"package in pyproject.toml, else {BUNDLED_PACKAGE})")
    plan.add_argument("--help-all", action="store_true", help="list every server flag and exit")
    return parser


def _server_flags_epilog(package: str | None) -> str:
    try:
        leaves = _package(package).registry.leaves
    except ConfigError:  # help must print even when the package does not import
        return "server flags: those of the generated ServerArgs (--help-all lists them)"
    read = [f.name for f in attrs.fields(PlanSettings)]
    flags = [leaves[n].flags[0] for n in read if n in leaves and leaves[n].flags]
    lines = textwrap.wrap(", ".join(flags), width=86, initial_indent="  ", subsequent_indent="  ")
    return "\n".join(["server flags the plan reads (--help-all lists every server flag):", *lines])


def _package(package: str | None) -> Context[Any]:
    return process_context(package or load_project().package)


def device_memory(given: int | None) -> tuple[int, str]:
    if given is not None:
        return given, "--device-memory"
    import torch  # only when asked to measure

    if torch.cuda.is_available():
        free, _total = torch.cuda.mem_get_info()
        return int(free), f"torch.cuda.mem_get_info on {torch.cuda.get_device_name()}"
    raise ConfigError("no CUDA device to measure: pass --device-memory SIZE (e.g. 80GiB)")


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    package = _peek_package(args)
    parser = build_parser(package)
    ns, server_argv = parser.parse_known_args(args)
    try:
        ctx = _package(ns.package)
    except ConfigError as exc:
        print(f"configbags plan: error: {exc}", file=sys.stderr)
        return 2
    record_type = ctx.record_type
    assert record_type is not None
    server = argparse.ArgumentParser(
        prog="configbags plan", allow_abbrev=False,
        usage="configbags plan --model-config FILE [plan flags] [server flags]  (--help, --help-all)",
    )
    record_type.add_cli_args(server)
    if ns.help_all:
        server.print_help()
        return 0
    if "--model-path" not in server_argv and "model_path" in ctx.registry.leaves:
        server_argv += ["--model-path", ns.model_config]  # the plan needs no weights
    server_ns = server.parse_args(server_argv)
    try:
        record = record_type.from_cli_args(server_ns)
        shape = load_model_shape(ns.model_config)
        pre, source = device_memory(ns.device_memory)
        memory = DeviceMemory(pre, ns.weight_bytes, ns.draft_weight_bytes, source)
        ctx.publish(record, role="worker")
        start = time.perf_counter()
        plan = KvCacheConfigurator(shape, memory, ctx).configure()
        plan_ms = (time.perf_counter() - start) * 1e3
        ctx.seal()  # what a worker does at the end of model load
        allocated = _allocate(plan, ns.allocate) if ns.allocate else None
    except ConfigError as exc:
        print(f"configbags plan: error: {exc}", file=sys.stderr)
        return 1
    if ns.json:
        out = {"plan": to_jsonable(plan), "server_info": ctx.server_info()}
        if allocated:
            out["allocation"] = allocated
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(render_table(plan, shape.source, source, plan_ms, allocated))
    if ns.chart:
        try:
            draw_chart(plan, ns.chart)
        except ImportError:
            print("configbags plan: --chart needs matplotlib: pip install 'configbags[chart]'", file=sys.stderr)
            return 1
        if not ns.json:
            print(f"chart written to {ns.chart}")
    return 0


def _peek_package(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg == "--package" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--package="):
            return arg.partition("=")[2]
    return None


def _allocate(plan: KvPlan, device: str) -> dict[str, Any]:
    from configbags.runtime.kvcache.pools import allocate

    start = time.perf_counter()
    pools = allocate(plan, device)
    seconds = time.perf_counter() - start
    if pools.pool_bytes != plan.pool_bytes:  # a plan the tensors disagree with is a bug
        raise ConfigError(f"allocated {pools.pool_bytes} bytes, but the plan says {plan.pool_bytes}")
    return {"device": device, "pool_bytes": pools.pool_bytes, "seconds": seconds,
            "tensors": sum(len(g) for g in pools.pools.values()) + 1 + len(pools.spec_buffers)}


def to_jsonable(value: Any) -> Any:
    if attrs.has(type(value)):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(value))}
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
                 allocated: dict[str, Any] | None = None) -> str:
    b, c, s = plan.budget, plan.cell, plan.settings
    lines = [
        f"configbags plan: {plan.model} ({model_source})",
        f"  tp {s.tp_size} (attention tp {s.attn_tp_size}, dp {s.attn_dp_size}), pp {s.pp_size}, "
        f"dtype {plan.dtype}, kv {plan.kv_cache_dtype} ({plan.kv_dtype}), page {plan.page_size}, "
        f"context {plan.context_length:,}",
        "",
        f"memory per rank (SGLang semantics: mem_fraction_static {plan.mem_fraction_static} of the "
        "pre-load free memory holds weights + KV)",
        f"  pre-load free      {_gib(b.pre)}   ({memory_source})",
        f"  weights            {_gib(b.weights)}",
        f"  draft weights      {_gib(b.draft_weights)}",
        f"  slack              {_gib(b.slack)}   (1 - mem_fraction_static: activations, graphs, and:)",
        f"    kv padding page  {_gib(b.kv_padding)}",
        f"    req_to_token     {_gib(b.req_to_token)}",
        f"    spec buffers     {_gib(b.spec_buffers)}",
    ]
    if plan.mamba_slots is not None:
        lines.append(f"  mamba state        {_gib(b.mamba_state)}   ({plan.mamba_slots:,} slots)")
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
    lines += [
        f"max_running_requests {plan.max_running_requests:>12,}   (per attention-DP shard)",
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
        lines.append(f"  {p.name:<16} {p.count:>3} x {p.shape!s:<30} {dtype:<26} {_gib(p.nbytes)}")
    lines += ["", "write-backs (load_time overrides from role worker; the record keeps the input)"]
    if not plan.decisions:
        lines.append("  none")
    for d in plan.decisions:
        before = getattr(s, d.leaf)
        lines.append(f"  {d.source:<38} {d.leaf} = {d.value!r}   (was {before!r})")
    for note in plan.notes:
        lines.append(f"note: {note}")
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
    used_slack = b.kv_padding + b.req_to_token + b.spec_buffers
    parts = [
        ("weights", b.weights, "#4c72b0"),
        ("draft weights", b.draft_weights, "#8172b2"),
        ("mamba state", b.mamba_state, "#937860"),
        ("KV cache", b.kv_bytes, "#55a868"),
        ("KV page rounding", b.kv_budget - b.kv_bytes, "#a1d99b"),
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
