"""A miniature engine for the role-scoping tests: a launcher publishes, then spawns a
tokenizer, a scheduler and a detokenizer (multiprocessing, spawn context, so each child
imports `configbags.runtime.roles` afresh with the inherited CONFIGBAGS_ROLE_NAMESPACES), and each
child publishes with its own role and reads what that role reads.

The detokenizer's declared set is {serving, observability, model}; it also reads
`get_schedule()` here (a stray read), so record mode shows it outside the set and enforce
mode fails in that process. Run it directly or under `configbags audit record -- python
tests/roles_app.py`; the exit status is 1 when any child failed.
"""

from __future__ import annotations

import multiprocessing as mp
import sys


def _publish(role: str) -> None:
    from configbags.generated.accessors import publish
    from configbags.generated.server_args import ServerArgs

    publish(ServerArgs(model_path="demo-model", tp_size=2), role=role)


def tokenizer() -> None:
    from configbags.generated.accessors import get_serving

    _publish("tokenizer")
    # Like the 2026-08-06 text-model tokenizer audit: only the HTTP front end.
    for _ in range(3):
        assert get_serving().port > 0


def scheduler() -> None:
    from configbags.generated.accessors import get_memory, get_parallel, get_schedule, get_spec

    _publish("scheduler")
    assert get_parallel().tp_size == 2
    _ = get_schedule().schedule_policy, get_memory(), get_spec()


def detokenizer() -> None:
    from configbags.generated.accessors import get_observability, get_schedule, get_serving

    _publish("detokenizer")
    _ = get_serving().port, get_observability()
    _ = get_schedule().schedule_policy  # outside {serving, observability, model}


CHILDREN = {"tokenizer": tokenizer, "scheduler": scheduler, "detokenizer": detokenizer}


def launcher() -> int:
    from configbags.generated.accessors import get_model, get_parallel

    _publish("launcher")
    _ = get_parallel().tp_size, get_model().model_path
    ctx = mp.get_context("spawn")
    procs = {name: ctx.Process(target=fn, name=name) for name, fn in CHILDREN.items()}
    for p in procs.values():
        p.start()
    failed = []
    for name, p in procs.items():
        p.join(timeout=60)
        status = p.exitcode
        print(f"{name}: {'ok' if status == 0 else f'failed (exit code {status})'}", flush=True)
        if status != 0:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(launcher())
