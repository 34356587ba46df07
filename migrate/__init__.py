"""The migration toolkit: move an engine from one big record onto generated bags.

- `importer` (`configbags import-dataclass`) turns a dataclass record and its argparse
  registration into schema YAML, by AST; `proposal` writes an editable namespace and
  policy mapping for it.
- `clicheck` (`configbags cli-check`) compares the legacy command line with the generated.
- The read ratchet (`configbags ratchet`, `cli`): `scan` finds every read and write of the
  raw record (its jobs in `aliases`, `files`, `scancache`, `generated`, records in
  `scanmodel`), `check` holds them to the allowlist and write baseline, `fix` (with
  `tidy`) rewrites reads onto the accessors, `settings` loads and edits ratchet.yaml.

Build-time only; the run-time bootstrap is configbags.runtime.legacy. See docs/MIGRATING.md.
"""
