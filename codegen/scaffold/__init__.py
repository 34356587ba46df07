"""`configbags init`: scaffold a schema folder (two example namespaces, `roles.yaml`,
`ratchet.yaml`, a `matrix.yaml` of launch shapes) and the `[tool.configbags]` settings into
an existing project, so that `configbags gen` works with no flags, and name the tools'
cache folder (`.configbags-cache/`) in the project's `.gitignore`. It never overwrites: an
existing schema folder or settings table stops it with what to do instead.

The generated package goes inside the package the project really has, found on disk (a
flat `acmeserve/__init__.py` or a `src/acmeserve/__init__.py` layout), never guessed from
`project.name` (`acme-serving` is often not the import name): with none or several found,
init asks for `--package`, naming what it found. The ratchet then scans that package, and
its `min_files` is what the package holds today, so `configbags ratchet check` is green on
the fresh project and fails if a later scan reads less."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from configbags.runtime.cmdline import UsageErrors
from configbags.runtime.project import CACHE_DIR, find_pyproject, package_folder, read_toml

TEMPLATE = Path(__file__).resolve().parent / "schema"
# folders that hold an __init__.py but are not the project's package
_NOT_PACKAGES = {"tests", "test", "testing", "docs", "doc", "examples", "example", "scripts", "benchmarks",
                 "bench", "build", "dist", "schema", "tools"}


def _parser() -> argparse.ArgumentParser:
    parser = UsageErrors(prog="configbags init", description=__doc__)
    parser.add_argument("--package", help="import name of the package to generate, e.g. myengine.config "
                                          "(default: <the project's package>.config)")
    parser.add_argument("--schema", default="schema", help="schema folder, relative to pyproject.toml (default: schema)")
    return parser


def project_packages(root: Path) -> list[str]:
    """The top-level packages a project has: folders with an `__init__.py` at its root, or
    under `src/` (the src layout), leaving out tests, docs and the like."""
    found: list[str] = []
    for base in (root / "src", root):
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            if (folder / "__init__.py").is_file() and folder.name.isidentifier() and folder.name not in _NOT_PACKAGES:
                found.append(folder.name)
        if found:
            return found  # a src layout's packages are the project's; the root's are not then
    return found


def choose_package(root: Path, given: str | None) -> str:
    """The package to generate: `given` inside a top-level package the project has, or
    `<its one package>.config`. Raises ValueError saying what was found and the fix."""
    found = project_packages(root)
    listed = ", ".join(found) if found else "none"
    if given is not None:
        top = given.split(".")[0]
        if not package_folder(root, top).is_dir():
            raise ValueError(
                f"--package {given}: the project has no package {top!r} (found: {listed}); gen would "
                f"create a package folder the project does not have. Name one of its packages, e.g. "
                f"--package {found[0] if found else 'mypackage'}.config"
            )
        return given
    if len(found) == 1:
        return f"{found[0]}.config"
    if not found:
        raise ValueError(
            f"found no package in {root} (a folder with __init__.py at the top or under src/); "
            f"create it, or pass --package NAME.config"
        )
    raise ValueError(f"found several packages ({listed}); pass --package NAME.config for the one the config "
                     f"belongs to")


def ignore_cache(root: Path) -> bool:
    """Name the cache folder in `root/.gitignore` (created if missing), once: an existing
    line for it (`.configbags-cache`, with or without a leading or trailing slash) is kept
    as it is. True when the file changed."""
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if any(line.strip().strip("/") == CACHE_DIR for line in text.splitlines()):
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    path.write_text(f"{text}{CACHE_DIR}/\n", encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    pyproject = find_pyproject(Path.cwd().resolve())
    if pyproject is None:
        print("configbags init: no pyproject.toml here or above; run it in your project (create a "
              "pyproject.toml with a [project] table first)", file=sys.stderr)
        return 2
    root = pyproject.parent
    text = pyproject.read_text(encoding="utf-8")
    try:
        data = read_toml(pyproject)
    except ValueError as exc:
        print(f"configbags init: {pyproject} does not parse ({exc}); fix it first", file=sys.stderr)
        return 2
    if "configbags" in data.get("tool", {}):
        print(f"configbags init: {pyproject} already has [tool.configbags]; nothing was written "
              f"(edit that table, or run configbags gen)", file=sys.stderr)
        return 2
    try:
        package = choose_package(root, args.package)
    except ValueError as exc:
        print(f"configbags init: {exc}; nothing was written", file=sys.stderr)
        return 2
    schema = root / args.schema
    if schema.exists() and any(schema.iterdir()):
        print(f"configbags init: {schema} exists and is not empty; nothing was written (pass "
              f"--schema DIR for another folder)", file=sys.stderr)
        return 2
    shutil.copytree(TEMPLATE, schema, dirs_exist_ok=True)
    # the ratchet scans the engine's own top-level package, and expects at least the files
    # it has today (the generated package, excluded from the scan, not counted)
    top_folder = package_folder(root, package.split(".")[0])
    top = top_folder.relative_to(root).as_posix()
    files = sum(1 for p in top_folder.rglob("*.py") if not p.is_relative_to(package_folder(root, package)))
    ratchet = schema / "ratchet.yaml"
    scan = ratchet.read_text(encoding="utf-8").replace("roots: []", f"roots: [{top}]")
    scan = scan.replace("  excludes: []", f"  excludes: []\n  min_files: {max(1, files)}")
    ratchet.write_text(scan, encoding="utf-8")
    table = f'\n[tool.configbags]\npackage = "{package}"\nschema = "{args.schema}"\n'
    pyproject.write_text(text.rstrip("\n") + "\n" + table, encoding="utf-8")
    ignored = ignore_cache(root)
    out = package_folder(root, package).relative_to(root)
    accessors = f"{package}.accessors"
    gitignore = f"; {CACHE_DIR}/ in .gitignore" if ignored else ""
    print(f"""configbags init: wrote {schema.relative_to(root)}/ (namespaces/parallel.yaml, \
namespaces/schedule.yaml, roles.yaml, ratchet.yaml, matrix.yaml) and [tool.configbags] in \
{pyproject.name}{gitignore}

next:
  configbags gen                      # writes {out}/ (package {package})
  configbags matrix --write           # records {schema.relative_to(root)}/matrix.golden.jsonl: commit it, \
then `configbags matrix --check` in CI
  python -c "from {package}.server_args import ServerArgs; from {accessors} import publish, get_parallel; \\
publish(ServerArgs.from_cli(['--tp-size', '2']), role='launcher'); print(get_parallel().tp_size)"

Edit the YAML under {schema.relative_to(root)}/, then run configbags gen again; a mistake is
reported with file:line and nothing is written.""")
    return 0
