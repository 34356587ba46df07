"""Stage 4, emit: render every generated file from the render model and format it.
Returns file contents in memory; `write.py` decides what touches the disk."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import black
import jinja2
from black.mode import TargetVersion

from configbags.codegen import render
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
# Explicit mode, so a user's [tool.black] section can never change generated output.
BLACK_MODE = black.Mode(target_versions={TargetVersion.PY310}, line_length=88)


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


def format_python(source: str) -> str:
    # black builds a large tree of long-lived objects; cyclic-GC passes over them made
    # formatting superlinear in file size (bench/bench_gen.py), so pause GC for the call.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return black.format_str(source, mode=BLACK_MODE)
    finally:
        if enabled:
            gc.enable()


def _format_all(sources: dict[str, str], parallel: bool) -> dict[str, str]:
    """black dominates generation time; on a multi-core machine format files in parallel
    (forked workers inherit the imported black, so they start in milliseconds)."""
    big = sum(map(len, sources.values())) > 200_000
    workers = min(os.cpu_count() or 1, 4)
    if not (parallel and big) or workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return {name: format_python(src) for name, src in sources.items()}
    names = sorted(sources, key=lambda n: -len(sources[n]))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return dict(zip(names, pool.map(format_python, [sources[n] for n in names]), strict=True))


def emit(schema: Schema, regen: str, *, package: str = "generated", parallel: bool = True) -> dict[str, str]:
    """File name -> content for every generated file of package `package` (its import
    name; `parallel=False`: format serially)."""
    model = render.build(schema, regen, package)
    env = environment()
    files = _format_all({name: env.get_template(f"{name}.j2").render(package=model) for name in PY_FILES}, parallel)
    for name in MD_FILES:
        files[name] = env.get_template(f"{name}.j2").render(package=model)
    config_schema = render.config_file_schema(schema, regen)
    files["server_args.schema.json"] = json.dumps(config_schema, indent=2, sort_keys=True) + "\n"
    files["py.typed"] = ""
    return files
