"""`configbags gen [--schema DIR] [--package PKG] [--out DIR] [--check] [--no-cache]` (also
`python -m configbags.codegen`). Defaults come from `[tool.configbags]` in the nearest
pyproject.toml (see `configbags init`); the output folder defaults to the package's folder.
black's results are cached in `.configbags-cache/` of the project holding the output folder,
so a regeneration formats only the pieces of text that changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from black.parsing import InvalidInput

from configbags.codegen.emit import emit
from configbags.codegen.errors import SchemaInvalid
from configbags.codegen.formatcache import FormatCache, default_cache_path
from configbags.codegen.model import Schema, load_schema
from configbags.codegen.write import (
    CannotWrite,
    NotOurFolder,
    check_out,
    diff,
    hand_written,
    write_tree,
)
from configbags.runtime.cmdline import UsageErrors, print_stderr, terminal_progress
from configbags.runtime.errors import ConfigError
from configbags.runtime.project import (
    ProjectSettings,
    importable_package,
    load_project,
    package_folder,
    package_of_folder,
    project_path,
)
from configbags.runtime.resolve import rule_cycles

EXIT_SCHEMA = 2
EXIT_STALE = 1
EXIT_INTERNAL = 3


def _parser() -> argparse.ArgumentParser:
    parser = UsageErrors(prog="configbags gen", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schema", type=project_path, help="schema folder (default: [tool.configbags] schema, else schema)")
    parser.add_argument("--package", help="import name of the generated package, e.g. myengine.config "
                                          "(default: [tool.configbags] package)")
    parser.add_argument("--out", type=project_path, help="output folder (default: [tool.configbags] out, else the "
                                                 "package's folder in the project)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff if out is stale")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the format cache (.configbags-cache/gen-black.json "
                             "in the project holding the output folder); output is the same either way")
    return parser


def resolve_target(args: argparse.Namespace, project: ProjectSettings) -> tuple[Path, str, Path]:
    """(schema folder, package name, output folder) from the flags over the project settings;
    ConfigError when neither names a package."""
    schema = args.schema or project.schema
    if args.package:
        package = args.package
        out = args.out or package_folder(project.root, package)
    elif args.out is not None and (project.out is None or args.out.resolve() != project.out.resolve()):
        package, out = package_of_folder(args.out.resolve()), args.out
    else:
        package = project.require_package("--package PKG or --out DIR")
        out = args.out or project.out or package_folder(project.root, package)
    return schema, package, out



def _build(project: ProjectSettings, schema: Path, regen: str, package: str,
           cache: FormatCache) -> tuple[Schema, dict[str, str]]:
    """The schema model and the generated files. A large schema takes seconds cold (black
    dominates): on a terminal the step is shown, and erased before anything is printed."""
    progress = terminal_progress("gen: {what} (step {step} of {total})")
    try:
        if progress:
            progress(0, 2, f"loading {project.rel(schema)}")
        model = load_schema(schema)
        if progress:
            progress(1, 2, f"rendering and formatting {len(model.leaves)} leaves")
        return model, emit(model, regen, package=package, cache=cache)
    finally:
        if progress:
            progress(2, 2)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        project = load_project()
    except ConfigError as exc:
        print_stderr(f"configbags gen: {exc}")
        return EXIT_SCHEMA
    try:
        schema, package, out = resolve_target(args, project)
    except ConfigError as exc:
        print_stderr(f"configbags gen: {exc}; nothing was written")
        return EXIT_SCHEMA
    if not importable_package(package):
        print_stderr(f"configbags gen: {package!r} is not an importable package name; give --package "
                     f"a dotted name of identifiers, e.g. myengine.config")
        return EXIT_SCHEMA
    if not schema.is_dir():
        print_stderr(f"configbags gen: schema folder {schema} does not exist; pass --schema DIR, set "
                     f"[tool.configbags] schema, or scaffold one with `configbags init`")
        return EXIT_SCHEMA
    regen = f"configbags gen --schema {project.rel(schema)} --package {package} --out {project.rel(out)}"
    cache = FormatCache(None if args.no_cache else default_cache_path(out))
    try:
        model, files = _build(project, schema, regen, package, cache)
    except SchemaInvalid as exc:
        print_stderr(f"configbags gen: {len(exc.errors)} schema error(s); nothing was written")
        for error in exc.errors:
            print_stderr(f"  {error}")
        return EXIT_SCHEMA
    except InvalidInput as exc:
        # Templates produced code black cannot parse: a generator bug, never the schema's.
        print_stderr(f"configbags gen: internal error, generated code does not parse ({exc}); nothing "
                     f"was written. Please report it with the schema that triggered it.")
        return EXIT_INTERNAL
    cache.save()
    for warning in rule_cycles(((r.id, r.leaf, [*(c.subject for c in r.when), *r.inputs]) for r in model.rules),
                               ordered=(r.id for r in model.rules if r.ordered)):
        print_stderr(f"configbags gen: warning: {warning}")
    if args.check:
        stale = diff(out, files)
        if stale:
            sys.stdout.write(stale)
            print_stderr(f"\n{out} is out of date with {schema}; run: {regen}")
            return EXIT_STALE
        return 0
    try:
        check_out(out, schema)
    except NotOurFolder as exc:
        print_stderr(f"configbags gen: {exc}; nothing was written")
        return EXIT_SCHEMA
    strays = hand_written(out, files)
    if strays:
        print_stderr(f"configbags gen: {out} holds {', '.join(strays)}, which gen did not write; generation replaces the "
                     f"whole folder, so move {'it' if len(strays) == 1 else 'them'} out of the generated package (or "
                     f"delete {'it' if len(strays) == 1 else 'them'}); nothing was written")
        return EXIT_SCHEMA
    if not out.parent.is_dir():
        # a package folder the project does not have (a guessed name, a typo in --package)
        print_stderr(f"configbags gen: warning: creating {project.rel(out.parent)}/, which the project did not "
                     f"have, for package {package}; if that is not your package, set [tool.configbags] package "
                     f"(or --package) to one inside it")
    try:
        changed = write_tree(out, files)
    except CannotWrite as exc:
        print_stderr(f"configbags gen: {exc}; {out} was left as it was")
        return EXIT_SCHEMA
    print(f"configbags gen: {out} {'updated' if changed else 'already up to date'} "
          f"({len(files)} files, package {package})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
