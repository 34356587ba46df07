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
from pathlib import Path

from configbags.runtime.cmdline import UsageErrors, print_stderr
from configbags.runtime.project import (
    CACHE_DIR,
    find_pyproject,
    importable_package,
    package_folder,
    read_toml,
)

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
    if given is not None and not importable_package(given):
        raise ValueError(f"--package {given!r} is not an importable package name; give a dotted name of "
                         f"identifiers inside the project's package, e.g. {found[0] if found else 'mypackage'}.config")
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


def gitignore_text(root: Path) -> str | None:
    """`root/.gitignore` with the cache folder named in it, or None when it already names it
    (`.configbags-cache`, with or without a leading or trailing slash: kept as it is).
    ValueError when it is not a regular file of the project (a folder, a link: init edits
    nothing outside the project) or not UTF-8."""
    path = root / ".gitignore"
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ValueError(f"{path} is a link or not a regular file; init edits only the project's own "
                         f".gitignore: make it a file, or add {CACHE_DIR}/ to it yourself and remove the link")
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; fix it first") from None
    if any(line.strip().strip("/") == CACHE_DIR for line in text.splitlines()):
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{text}{CACHE_DIR}/\n"


def _refuse(message: str) -> int:
    print_stderr(f"configbags init: {message}; nothing was written")
    return 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    pyproject = find_pyproject(Path.cwd().resolve())
    if pyproject is None:
        print_stderr("configbags init: no pyproject.toml here or above; run it in your project (create a "
                     "pyproject.toml with a [project] table first)")
        return 2
    root = pyproject.parent
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = read_toml(pyproject)
    except UnicodeDecodeError:
        return _refuse(f"{pyproject} is not UTF-8 text; fix it first")
    except ValueError as exc:
        return _refuse(f"{pyproject} does not parse ({exc}); fix it first")
    if "configbags" in data.get("tool", {}):
        return _refuse(f"{pyproject} already has [tool.configbags] (edit that table, or run configbags gen)")
    try:
        package = choose_package(root, args.package)
        ignore = gitignore_text(root)
    except ValueError as exc:
        return _refuse(str(exc))
    schema = root / args.schema
    if schema.is_symlink() or (schema.exists() and (not schema.is_dir() or any(schema.iterdir()))):
        return _refuse(f"{schema} exists and is not an empty folder (pass --schema DIR for another folder)")
    # Everything is computed before the first write, and a write that fails undoes the
    # others: init leaves the project as it found it or fully set up.
    # the ratchet scans the engine's own top-level package, and expects at least the files
    # it has today (the generated package, excluded from the scan, not counted)
    top_folder = package_folder(root, package.split(".")[0])
    top = top_folder.relative_to(root).as_posix()
    files = sum(1 for p in top_folder.rglob("*.py") if not p.is_relative_to(package_folder(root, package)))
    scan = (TEMPLATE / "ratchet.yaml").read_text(encoding="utf-8").replace("roots: []", f"roots: [{top}]")
    scan = scan.replace("  excludes: []", f"  excludes: []\n  min_files: {max(1, files)}")
    # project-relative where it lies inside (as every path configbags prints), else absolute
    shown = schema.relative_to(root) if schema.is_relative_to(root) else schema
    table = f'\n[tool.configbags]\npackage = "{package}"\nschema = "{shown.as_posix()}"\n'
    schema_existed = schema.exists()
    try:
        shutil.copytree(TEMPLATE, schema, dirs_exist_ok=True)
        (schema / "ratchet.yaml").write_text(scan, encoding="utf-8")
        pyproject.write_text(text.rstrip("\n") + "\n" + table, encoding="utf-8")
        if ignore is not None:
            (root / ".gitignore").write_text(ignore, encoding="utf-8")
    except OSError as exc:
        _undo(schema, schema_existed, pyproject, text)
        return _refuse(f"cannot write {exc.filename or 'the project'} ({exc.strerror or exc})")
    ignored = ignore is not None
    out = package_folder(root, package).relative_to(root)
    accessors = f"{package}.accessors"
    gitignore = f"; {CACHE_DIR}/ in .gitignore" if ignored else ""
    print(f"""configbags init: wrote {shown}/ (namespaces/parallel.yaml, \
namespaces/schedule.yaml, roles.yaml, ratchet.yaml, matrix.yaml) and [tool.configbags] in \
{pyproject.name}{gitignore}

next:
  configbags gen                      # writes {out}/ (package {package})
  configbags matrix --write           # records {shown}/matrix.golden.jsonl: commit it, \
then `configbags matrix --check` in CI
  python -c "from {package}.server_args import ServerArgs; from {accessors} import publish, get_parallel; \\
publish(ServerArgs.from_cli(['--tp-size', '2']), role='launcher'); print(get_parallel().tp_size)"

Edit the YAML under {shown}/, then run configbags gen again; a mistake is
reported with file:line and nothing is written.""")
    return 0


def _undo(schema: Path, schema_existed: bool, pyproject: Path, text: str) -> None:
    """Take back what a failed init wrote: the schema folder's contents, the settings table."""
    if schema.is_dir():
        if schema_existed:  # it was empty: empty it again
            for child in schema.iterdir():
                if child.is_dir():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        else:
            shutil.rmtree(schema)
    if pyproject.read_text(encoding="utf-8") != text:
        pyproject.write_text(text, encoding="utf-8")
