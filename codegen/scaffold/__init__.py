"""`configbags init`: scaffold a schema folder (two example namespaces, `roles.yaml`,
`ratchet.yaml`) and the `[tool.configbags]` settings into an existing project, so that
`configbags gen` works with no flags. It never overwrites: an existing schema folder or
settings table stops it with what to do instead."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from configbags.runtime.project import find_pyproject, package_folder, read_toml

TEMPLATE = Path(__file__).resolve().parent / "schema"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="configbags init", description=__doc__)
    parser.add_argument("--package", help="import name of the package to generate, e.g. myengine.config "
                                          "(default: <project name>.config)")
    parser.add_argument("--schema", default="schema", help="schema folder, relative to pyproject.toml (default: schema)")
    return parser


def default_package(project_name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z_]", "_", project_name).lower() + ".config"


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
    name = str(data.get("project", {}).get("name", root.name))
    package = args.package or default_package(name)
    schema = root / args.schema
    if schema.exists() and any(schema.iterdir()):
        print(f"configbags init: {schema} exists and is not empty; nothing was written (pass "
              f"--schema DIR for another folder)", file=sys.stderr)
        return 2
    shutil.copytree(TEMPLATE, schema, dirs_exist_ok=True)
    # the ratchet scans the engine's own top-level package
    top = package_folder(root, package.split(".")[0]).relative_to(root).as_posix()
    ratchet = schema / "ratchet.yaml"
    ratchet.write_text(ratchet.read_text(encoding="utf-8").replace("roots: []", f"roots: [{top}]"), encoding="utf-8")
    table = f'\n[tool.configbags]\npackage = "{package}"\nschema = "{args.schema}"\n'
    pyproject.write_text(text.rstrip("\n") + "\n" + table, encoding="utf-8")
    out = package_folder(root, package).relative_to(root)
    accessors = f"{package}.accessors"
    print(f"""configbags init: wrote {schema.relative_to(root)}/ (namespaces/parallel.yaml, \
namespaces/schedule.yaml, roles.yaml, ratchet.yaml) and [tool.configbags] in {pyproject.name}

next:
  configbags gen                      # writes {out}/ (package {package})
  python -c "from {package}.server_args import ServerArgs; from {accessors} import publish, get_parallel; \\
publish(ServerArgs.from_cli(['--tp-size', '2']), role='launcher'); print(get_parallel().tp_size)"

Edit the YAML under {schema.relative_to(root)}/, then run configbags gen again; a mistake is
reported with file:line and nothing is written.""")
    return 0
