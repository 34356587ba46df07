"""Stage 4, emit: render every generated file from the render model and format it.
Returns file contents in memory; `write.py` decides what touches the disk."""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import black
import jinja2

from configbags.codegen import render
from configbags.codegen.blackpieces import BLACK_MODE, DictMemo, Memo, Module, digest
from configbags.codegen.formatcache import FormatCache
from configbags.codegen.model import Schema
from configbags.runtime.gcpause import gc_paused

TEMPLATES = Path(__file__).parent / "templates"
PY_FILES = (
    "__init__.py",
    "bags.py",
    "registry.py",
    "role_audit.py",
    "server_args.py",
    "accessors.py",
    "ratchet_allowlist.py",
)
MD_FILES = ("CONFIG.md", "ROLES.md")
__all__ = ["BLACK_MODE", "emit", "environment", "format_python"]


def environment() -> jinja2.Environment:
    """The one template environment: strict (a typo is an error), whitespace-exact."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def format_python(source: str, memo: Memo | None = None) -> str:
    """`black.format_str(source, mode=BLACK_MODE)`, byte for byte, piece by piece through
    `memo` (see configbags.codegen.blackpieces)."""
    with gc_paused():
        return Module(source).format(memo if memo is not None else DictMemo())


def _black_pieces(texts: list[str]) -> list[str | None]:
    """black's output for each piece, in a worker (None where black refuses one: the
    parent's own pass then meets the same refusal and handles it as ever)."""
    out: list[str | None] = []
    with gc_paused():
        for text in texts:
            try:
                out.append(black.format_str(text, mode=BLACK_MODE))
            except Exception:  # whatever black raises, the parent's pass raises or recovers from it
                out.append(None)
    return out


# Below this much text a cold run formats serially (forking would cost more than it saves).
PARALLEL_CHARS = 200_000
_BATCH = 16  # pieces per task: few enough round trips, small enough to balance the workers


def _workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, 8)


def _format_all(sources: dict[str, str], parallel: bool, cache: FormatCache | None) -> dict[str, str]:
    """black dominates a cold generation; on a multi-core machine run it on the modules'
    pieces in parallel, balanced across workers whatever the modules' sizes (forked
    workers inherit the imported black, so they start in milliseconds), into the memo the
    modules are then spliced from here. A warm cache leaves black little to do, and then
    the fork would cost more than it saves."""
    memo: Memo = cache if cache is not None else DictMemo()
    cold = cache is None or not cache.entries
    workers = _workers()
    if not (parallel and cold and workers > 1 and sum(map(len, sources.values())) > PARALLEL_CHARS
            and "fork" in multiprocessing.get_all_start_methods()):
        return {name: format_python(src, memo) for name, src in sources.items()}
    seen: set[str] = set()
    tasks: dict[str, tuple[Module, list[tuple[list[str], Future[list[str | None]]]]]] = {}
    out: dict[str, str] = {}
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        # the biggest module first, its pieces to the workers while the next is planned ...
        for name in sorted(sources, key=lambda n: -len(sources[n])):
            module = Module(sources[name])  # parsed once, for the plan and the splice
            pieces = {digest(text): text for text in module.black_inputs()}
            todo = [text for d, text in pieces.items() if d not in seen]
            seen.update(pieces)
            batches = [todo[k:k + _BATCH] for k in range(0, len(todo), _BATCH)]
            tasks[name] = (module, [(batch, pool.submit(_black_pieces, batch)) for batch in batches])
        # ... and each spliced here once its pieces are back, while the workers go on
        for name, (module, module_tasks) in tasks.items():
            for batch, task in module_tasks:
                for text, formatted in zip(batch, task.result(), strict=True):
                    if formatted is not None:
                        memo.put(digest(text), formatted)
            with gc_paused():
                out[name] = module.format(memo)
    return {name: out[name] for name in sources}


def rendered(schema: Schema, regen: str, package: str = "generated") -> dict[str, str]:
    """File name -> text for each templated file, as its template prints its model (the
    Python modules before black)."""
    env = environment()
    return {name: env.get_template(f"{name}.j2").render(file=model)
            for name, model in render.build(schema, regen, package).items()}


def emit(schema: Schema, regen: str, *, package: str = "generated", parallel: bool = True,
         cache: FormatCache | None = None) -> dict[str, str]:
    """File name -> content for every generated file of package `package` (its import
    name; `parallel=False`: format serially; `cache`: black's results from earlier runs,
    updated in memory; the caller saves it)."""
    with gc_paused():  # many objects, few cycles: collections would only rescan the model
        texts = rendered(schema, regen, package)
        files = _format_all({name: texts[name] for name in PY_FILES}, parallel, cache)
        files.update((name, texts[name]) for name in MD_FILES)
        config_schema = render.config_file_schema(schema, regen)
    files["server_args.schema.json"] = json.dumps(config_schema, indent=2, sort_keys=True) + "\n"
    files["py.typed"] = ""
    return files
