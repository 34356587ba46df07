"""`python -m configbags.codegen --schema DIR --out DIR [--check]` (also `configbags gen`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from black.parsing import InvalidInput

from configbags.codegen.emit import emit
from configbags.codegen.errors import SchemaInvalid
from configbags.codegen.model import load_schema
from configbags.codegen.write import NotOurFolder, check_out, diff, write_tree

EXIT_SCHEMA = 2
EXIT_STALE = 1
EXIT_INTERNAL = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="configbags gen", description=__doc__)
    parser.add_argument("--schema", type=Path, default=Path("schema"), help="schema folder (default: schema)")
    parser.add_argument("--out", type=Path, default=Path("generated"), help="output folder (default: generated)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff if out is stale")
    args = parser.parse_args(argv)
    regen = f"python -m configbags.codegen --schema {args.schema.name} --out {args.out.name}  (make gen)"
    try:
        files = emit(load_schema(args.schema), regen)
    except SchemaInvalid as exc:
        print(f"configbags gen: {len(exc.errors)} schema error(s); nothing was written", file=sys.stderr)
        for error in exc.errors:
            print(f"  {error}", file=sys.stderr)
        return EXIT_SCHEMA
    except InvalidInput as exc:
        # Templates produced code black cannot parse: a generator bug, never the schema's.
        print(f"configbags gen: internal error, generated code does not parse ({exc}); nothing "
              f"was written. Please report it with the schema that triggered it.", file=sys.stderr)
        return EXIT_INTERNAL
    if args.check:
        stale = diff(args.out, files)
        if stale:
            sys.stdout.write(stale)
            print(f"\n{args.out} is out of date with {args.schema}; run make gen", file=sys.stderr)
            return EXIT_STALE
        return 0
    try:
        check_out(args.out, args.schema)
    except NotOurFolder as exc:
        print(f"configbags gen: {exc}; nothing was written", file=sys.stderr)
        return EXIT_SCHEMA
    changed = write_tree(args.out, files)
    print(f"configbags gen: {args.out} {'updated' if changed else 'already up to date'} ({len(files)} files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
