"""Read-path and publish/override costs, measured side by side in one run.

The baseline is the legacy read an engine migrates away from: `self.server_args.tp_size`
on its own dataclass record, inside a method. Goals: the typed `cfg.parallel.tp_size`
read <= 1.3x the legacy read; `get_parallel().tp_size` printed beside it; both >= 20x
faster than a bag read routed through __getattr__ (SGLang's ParallelContext); publish
< 1 ms, also with GPU and model facts so every bundled rule runs (resolution is paid at
publish; reads cost the same with or without it); one override with derived recompute and provenance < 20 us."""

from __future__ import annotations

import dataclasses
import time
import timeit
from typing import Any

import attrs

from configbags.generated.accessors import cfg, get_context, get_parallel, get_schedule, publish
from configbags.generated.server_args import ServerArgs
from configbags.runtime.resolve import Facts, GpuFacts, ModelFacts

READS = 10  # reads per loop iteration, so the loop itself is a small, subtracted share


@dataclasses.dataclass
class LegacyServerArgs:
    """The engine's old flat record (a plain dataclass, as SGLang's ServerArgs was)."""

    tp_size: int = 1


class LegacyScheduler:
    def __init__(self, server_args: LegacyServerArgs) -> None:
        self.server_args = server_args

    def reads(self, n: int) -> None:
        for _ in range(n):
            self.server_args.tp_size; self.server_args.tp_size; self.server_args.tp_size  # noqa: B018, E702
            self.server_args.tp_size; self.server_args.tp_size; self.server_args.tp_size  # noqa: B018, E702
            self.server_args.tp_size; self.server_args.tp_size; self.server_args.tp_size  # noqa: B018, E702
            self.server_args.tp_size  # noqa: B018


class TypedScheduler:
    def reads(self, n: int) -> None:
        for _ in range(n):
            cfg.parallel.tp_size; cfg.parallel.tp_size; cfg.parallel.tp_size  # noqa: B018, E702
            cfg.parallel.tp_size; cfg.parallel.tp_size; cfg.parallel.tp_size  # noqa: B018, E702
            cfg.parallel.tp_size; cfg.parallel.tp_size; cfg.parallel.tp_size  # noqa: B018, E702
            cfg.parallel.tp_size  # noqa: B018


class AccessorScheduler:
    def reads(self, n: int) -> None:
        for _ in range(n):
            get_parallel().tp_size; get_parallel().tp_size; get_parallel().tp_size  # noqa: B018, E702
            get_parallel().tp_size; get_parallel().tp_size; get_parallel().tp_size  # noqa: B018, E702
            get_parallel().tp_size; get_parallel().tp_size; get_parallel().tp_size  # noqa: B018, E702
            get_parallel().tp_size  # noqa: B018


def empty_loop(n: int) -> None:
    for _ in range(n):
        pass


def per_read(method: Any, n: int) -> float:
    """Best seconds per read over several runs, the bare loop subtracted."""
    best_loop = best_body = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        empty_loop(n)
        best_loop = min(best_loop, time.perf_counter() - start)
        start = time.perf_counter()
        method(n)
        best_body = min(best_body, time.perf_counter() - start)
    return max(best_body - best_loop, 0.0) / (n * READS)


def bag_with_membership(bag: Any) -> Any:
    """The same bag, plus `name in bag` (SGLang's bags answer membership tests); its
    attribute reads stay plain slot reads."""
    fields = frozenset(attrs.fields_dict(type(bag)))
    cls = type(type(bag).__name__, (type(bag),), {"__slots__": (), "__contains__": lambda self, n: n in fields})
    return cls(**{f.name: getattr(bag, f.name) for f in attrs.fields(type(bag)) if f.init})


class ParallelContextLike:
    """SGLang's ParallelContext read path: config leaves reached
    through __getattr__ after the normal lookup misses, then a membership test on the bag."""

    __slots__ = ("_config", "_overrides")

    def __init__(self, config: Any) -> None:
        self._overrides: dict[str, Any] = {}
        self._config = config

    def __getattr__(self, name: str) -> Any:
        try:
            config = object.__getattribute__(self, "_config")
        except AttributeError:
            config = None
        if config is not None and name in config:
            return getattr(config, name)
        detail = "not a published parallel config leaf" if config is not None else "config not published"
        raise AttributeError(f"ParallelContext has no {name!r} ({detail})")


def best(stmt: Any, number: int, repeat: int = 7, env: dict[str, Any] | None = None) -> float:
    """Best per-call seconds over `repeat` runs (the least disturbed by noise). A string
    statement is timed inline, so no wrapper call is counted as part of the read."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat, globals=env)) / number


def main() -> None:
    record = ServerArgs(model_path="/m", tp_size=8, dp_size=2, enable_dp_attention=True,
                        speculative_algorithm="EAGLE", speculative_num_steps=3, speculative_eagle_topk=1,
                        speculative_num_draft_tokens=4)
    ctx = get_context()
    with ctx.restoring():
        publish(record, role="scheduler")
        sglang_like = ParallelContextLike(bag_with_membership(get_parallel()))

        def get_parallel_ctx() -> ParallelContextLike:
            return sglang_like

        n = 200_000
        env = {"get_parallel_ctx": get_parallel_ctx, "get_schedule": get_schedule}
        legacy_sched = LegacyScheduler(LegacyServerArgs(tp_size=8))
        typed_sched, accessor_sched = TypedScheduler(), AccessorScheduler()
        # interleave the measurements so drift affects all alike
        legacy, typed, accessor, routed = [], [], [], []
        for _ in range(5):
            legacy.append(per_read(legacy_sched.reads, n))
            typed.append(per_read(typed_sched.reads, n))
            accessor.append(per_read(accessor_sched.reads, n))
            routed.append(best("get_parallel_ctx().pp_max_micro_batch_size", n // 4, 3, env))
        lg, t, a, g = min(legacy), min(typed), min(accessor), min(routed)
        print(f"legacy self.server_args.tp_size {lg * 1e9:7.1f} ns   (baseline: a dataclass record on self)")
        print(f"cfg.parallel.tp_size            {t * 1e9:7.1f} ns   typed/legacy = {t / lg:.2f}x  (goal <= 1.30x)")
        print(f"get_parallel().tp_size          {a * 1e9:7.1f} ns   accessor/legacy = {a / lg:.2f}x")
        print(f"__getattr__-routed bag read     {g * 1e9:7.1f} ns   routed/typed = {g / t:.1f}x  (goal >= 20x)")

        t_publish = best(lambda: ctx.publish(record, role="scheduler", facts=Facts()), 200)
        print(f"publish (full bundled schema)   {t_publish * 1e6:7.1f} us   (goal < 1000 us)")
        facts = Facts(GpuFacts("H100", 80 << 30, 90), ModelFacts(("Gemma2ForCausalLM",)))
        t_rules = best(lambda: ctx.publish(record, role="scheduler", facts=facts), 200)
        print(f"publish + every rule (facts)    {t_rules * 1e6:7.1f} us   (goal < 1000 us)")
        # Reads after a publish without and with rules, interleaved so drift hits both alike.
        plain, ruled = [], []
        for _ in range(5):
            ctx.publish(record, role="scheduler", facts=Facts())
            plain.append(best("get_schedule().chunked_prefill_size", n, 3, env))
            ctx.publish(record, role="scheduler", facts=facts)
            ruled.append(best("get_schedule().chunked_prefill_size", n, 3, env))
        p_read, r_read = min(plain), min(ruled)
        print(f"read of a rule-resolved leaf    {r_read * 1e9:7.1f} ns   with/without rules = {r_read / p_read:.2f}x"
              f"  (goal: nothing extra, ~1.00x)")

        ctx.publish(record, role="scheduler")
        values = iter(range(10**9))

        # dp_size feeds attn_dp_size and attn_tp_size: an override that recomputes derived
        # values and rebuilds the parallel bag, logged with provenance.
        def override() -> None:
            ctx.override("bench", dp_size=next(values) % 7 + 1)

        t_override = best(override, 2000)
        print(f"override dp_size (+derived)     {t_override * 1e6:7.1f} us   (goal < 20 us)")


if __name__ == "__main__":
    main()
