"""Stage 4, emit: render every generated file from the render model and format it.
Returns file contents in memory; `write.py` decides what touches the disk."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import jinja2

from configbags.codegen import render
from configbags.codegen.blackpieces import BLACK_MODE, DictMemo, Memo, format_module
from configbags.codegen.formatcache import FormatCache
from configbags.codegen.model import Schema

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


@contextmanager
def _gc_paused() -> Iterator[None]:
    # black builds a large tree of long-lived objects; cyclic-GC passes over them made
    # formatting superlinear in file size (bench/bench_gen.py), so pause GC meanwhile.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def format_python(source: str, memo: Memo | None = None) -> str:
    """`black.format_str(source, mode=BLACK_MODE)`, byte for byte, piece by piece through
    `memo` (see configbags.codegen.blackpieces)."""
    with _gc_paused():
        return format_module(source, memo if memo is not None else DictMemo())


class _Recorder(DictMemo):
    """A worker's memo: reads the parent's cache (inherited through fork), records every
    entry it used or made, for the parent to merge."""

    def __init__(self, base: FormatCache | None) -> None:
        super().__init__()
        self.base = base
        self.deps: dict[str, list[str]] = {}

    def get(self, digest: str) -> str | None:
        found = super().get(digest)
        if found is None and self.base is not None:
            found = self.base.get(digest)
            if found is not None:
                self.put(digest, found)
                for piece in self.base.deps.get(digest, ()):  # a module found whole keeps its pieces
                    if (text := self.base.entries.get(piece)) is not None:
                        self.put(piece, text)
        return found

    def depends(self, digest: str, on: list[str]) -> None:
        self.deps[digest] = on


_WORKER_BASE: FormatCache | None = None


def _format_in_worker(source: str) -> tuple[str, dict[str, str], dict[str, list[str]]]:
    memo = _Recorder(_WORKER_BASE)
    return format_python(source, memo), memo.entries, memo.deps


def _format_all(sources: dict[str, str], parallel: bool, cache: FormatCache | None) -> dict[str, str]:
    """black dominates a cold generation; on a multi-core machine format files in parallel
    (forked workers inherit the imported black, so they start in milliseconds). A warm
    cache leaves black little to do, and then the fork would cost more than it saves."""
    global _WORKER_BASE
    memo: Memo = cache if cache is not None else DictMemo()
    big = sum(map(len, sources.values())) > 200_000
    cold = cache is None or not cache.entries
    workers = min(os.cpu_count() or 1, 4)
    if (not (parallel and big and cold) or workers < 2
            or "fork" not in multiprocessing.get_all_start_methods()):
        return {name: format_python(src, memo) for name, src in sources.items()}
    names = sorted(sources, key=lambda n: -len(sources[n]))
    _WORKER_BASE = cache
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_format_in_worker, [sources[n] for n in names]))
    finally:
        _WORKER_BASE = None
    if cache is not None:
        for _, seen, deps in results:
            cache.merge(seen, deps)
    return {name: text for name, (text, _, _) in zip(names, results, strict=True)}


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
    texts = rendered(schema, regen, package)
    files = _format_all({name: texts[name] for name in PY_FILES}, parallel, cache)
    files.update((name, texts[name]) for name in MD_FILES)
    config_schema = render.config_file_schema(schema, regen)
    files["server_args.schema.json"] = json.dumps(config_schema, indent=2, sort_keys=True) + "\n"
    files["py.typed"] = ""
    return files
