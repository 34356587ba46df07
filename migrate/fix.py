"""`configbags ratchet fix`: rewrite raw record reads to the generated accessors.

`self.server_args.page_size` becomes `cfg.schedule.page_size`, and
`from <accessors module> import cfg` is added: `cfg` is the accessors module's view of the
config in force, two slot loads per read (about what the legacy read cost), never stale,
and as role-checked as the accessor functions. The scanner decides *what* is a
raw read (so fix and check can never disagree); libcst does the rewriting, so formatting
and comments outside the rewritten expressions stay byte for byte.

Fix refuses what it cannot prove safe, and says why: writes; dynamic `getattr`; whole-record
reads (`vars`, `asdict`, `__dict__`); `hasattr`; raw environment reads and operator
readbacks (configbags.migrate.doors: neither reads the record); names that are not config leaves; a
`getattr` default that could have side effects; an accessor name already bound to
something else in the module (`cfg` as a local variable or a parameter too, since the
rewritten read would see that instead). The refusal reason is what `ratchet fix` writes into the
allowlist entry, so every read that stays raw says why.

It also refuses whatever would change *which* record is read, or drop code:
- a record built in the code (`ServerArgs.from_cli(argv)`, `ServerArgs(...)`), which is not
  the published record the accessors read;
- a name bound by `with f(record) as name`, which may not be the record at all;
- a name that is also bound to something else in the same scope (`sa = other`, a loop
  target, `except ... as sa`, `del sa`, a `None` placeholder, a parameter the record is
  a fallback for) or to a value that is the record only on some branches
  (`rec if c else other`): a read may see the other value, and the scanner does not
  follow control flow to tell which;
- a receiver that is not side-effect free: only a name, an attribute chain on a name
  (`self.server_args`) or a bare raw accessor call may be dropped, so
  `make_runner().server_args.x` and `(sa := get_server_args()).x` stay as written;
- unless `rewrite_parameters` (`--rewrite-parameters`) is given, a record that is held
  rather than fetched: an annotated parameter (`server_args: ServerArgs`) or a record
  attribute (`self.server_args`). It is usually the process record, but a draft runner
  holds its own, and rewriting its reads to the process bags is the draft-vs-target bug.
  Whoever knows the tree has one record per process says so with the flag.

- a read of a leaf that code outside the resolution phase writes (`rec.x = ...` in a
  model-specific adjustment, a draft worker): the write changes the record, not the bags,
  so a rewritten read would no longer see it. Move the write into the resolution phase
  (its writes reach the bags through the bootstrap, configbags.runtime.legacy) or turn it
  into an override first;
- a read through a dict copy of the record (`global_server_args_dict["x"]`), whose values
  may be converted (enums), and a class-attribute read (`ServerArgs.x`, a class default);
- any read inside the declared resolution phase (`resolution`, scan.resolution): it runs
  before publish (as the hook of configbags.runtime.legacy.publish_legacy, or just before
  it), so an accessor there raises NotPublishedError or reads an earlier publish. It
  reads the record it resolves, and always will.

`only` (`--only PATH...`) and `leaves` (`--leaf NAME...`) opt in per path and per leaf;
`--rewrite-parameters` then vouches for held records within those paths only.

With `rewrite_writes` (`--rewrite-writes`), a plain `record.leaf = value` statement becomes
`get_context().override("<module>:<function>", leaf=value)` where the leaf's policy is
load_time or runtime and no raw read of the leaf is left anywhere (it would not see the
override); anything else is refused with its reason. An override changes the *process*
config, so a write is only rewritten where it provably changes the process record, and
refused (WRITE_ORIGINS in configbags.migrate.scanmodel) when it writes
- a held record (a parameter, `self.server_args`), unless `--rewrite-parameters` vouches
  for it as for reads: a draft runner's own record is held too;
- a record built here or copied (`ServerArgs(...)`, `copy.copy`, `deepcopy`,
  `dataclasses.replace`), a name that may be something else, or the record class;
- the leaf in a mutate-then-restore pattern: the function also writes the leaf back to a
  value saved from it (`old = rec.x; rec.x = y; ...; rec.x = old`, often in try/finally).
  That is a temporary change of one record (a draft worker's, a test's), which as a
  process-wide override would reach every reader and outlive the restore. Always
  refused, `--rewrite-parameters` or not.

The accessor import goes into the module's import block, after the docstring and any
`from __future__` import, in the place ruff's isort rules give it; aliases of the record
and imports of the raw accessor that the rewrite leaves unused are removed (F401, F841).

A rewrite changes what the reader sees in one intended way: the bag value is the resolved
value (fallbacks, derived values, post-publish overrides), not the raw operator input.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from configbags.migrate.check import HOME_FORMS, in_resolution
from configbags.migrate.files import NotReadable, read_source
from configbags.migrate.scan import Read, ScanSettings, Violation, scan_tree
from configbags.migrate.scanmodel import WRITE_KINDS, ScanResult
from configbags.migrate.tidy import add_import, remove_unused_aliases
from configbags.runtime.project import read_toml

Span = tuple[int, int, int, int]  # start line, start column, end line, end column (chars)


@attrs.frozen
class Change:
    file: str
    function: str
    leaf: str
    line: int
    old: str
    new: str


@attrs.frozen
class Skip:
    file: str
    function: str
    leaf: str
    line: int
    reason: str
    write: bool = False  # a refused write (its reason belongs to the `writes:` entry), not a read


def structured_reason(leaf: str, expression: str | None) -> str:
    """Why a read of a json leaf with a structure stays raw: the rewrite would change its type."""
    read = expression or f"cfg.<namespace>.{leaf}"
    return (f"`{leaf}` is a json leaf with a structure: its generated value is a dict of the keys given, "
            f"where the record held a config object with defaults for the rest (`.key` on the dict fails); "
            f"build the config from the dict where it is read (e.g. `MyConfig(**{read})`) and move that read "
            f"by hand")


@attrs.frozen
class FixReport:
    changed: tuple[Change, ...]
    skipped: tuple[Skip, ...]
    files_changed: tuple[str, ...]

    def render(self, *, dry_run: bool = False) -> str:
        arrow = "would rewrite to" if dry_run else "->"
        lines = [f"{c.file}:{c.line} ({c.function}): {c.old} {arrow} {c.new}" for c in self.changed]
        lines += [f"{s.file}:{s.line} ({s.function}): skipped {s.leaf!r}: {s.reason}" for s in self.skipped]
        verb = "would rewrite" if dry_run else "rewrote"
        lines.append(
            f"ratchet fix: {verb} {len(self.changed)} reads in {len(self.files_changed)} files; "
            f"skipped {len(self.skipped)}" + ("; nothing changed (--dry-run)" if dry_run else "")
        )
        return "\n".join(lines)


HELD_REASON = "may be a runner's own record; pass --rewrite-parameters if it is the process record"
CONSTRUCTED_REASON = (
    "reads a ServerArgs built here (ServerArgs(...), from_cli, ...), not the published "
    "record the accessors read; rewrite by hand"
)
REPLACED_REASON = (
    "reads a copy of the record with fields changed (dataclasses.replace, attrs.evolve, .replace(...)): "
    "a changed leaf is not the published value the accessors read; rewrite by hand"
)
WRAPPED_REASON = (
    "bound by `with ... as NAME` around the record; NAME may not be the record itself, "
    "rewrite by hand"
)
REBOUND_REASON = (
    "the name is also bound to something else in its scope (another value, a None "
    "placeholder, a loop, with or except target, ...) or only conditionally to the record, "
    "so this read may not see the record; rewrite by hand"
)
# Origins whose reads are never rewritten (configbags.migrate.scanmodel.ORIGINS)
_BY_HAND_REASONS = {
    "constructed": CONSTRUCTED_REASON,
    "built": CONSTRUCTED_REASON,
    "replaced": REPLACED_REASON,
    "wrapped": WRAPPED_REASON,
    "rebound": REBOUND_REASON,
}
WALRUS_REASON = "the receiver binds a name with `:=`; dropping it would lose the binding"
DICT_REASON = (
    "reads a dict copy of the record, whose values may be converted (enums) or updated apart "
    "from the record; rewrite by hand"
)
CLASS_REASON = (
    "reads the record class's default, not the published value (on a slotted class, a "
    "member descriptor); rewrite by hand"
)
ENV_REASON = (
    "reads the environment variable itself, one layer of the leaf's value; the accessor has "
    "the value resolved over every layer, so what the code sees may change: rewrite by hand"
)
READBACK_REASON = (
    "an operator readback, not a record read: read the leaves through the accessors, "
    "ctx.bag() or ctx.snapshot() by hand, or allowlist it with the reason it is operator code"
)


RESOLUTION_REASON = (
    "the resolution phase runs before publish; it reads the record it resolves (an accessor "
    "here would raise NotPublishedError or read an earlier publish), so this read stays raw"
)


HOME_REASON = (
    "the record's home module reads it inside a function or method called here (excluded "
    "from the scan); no accessor replaces the call, rewrite it by hand"
)


AUGMENTED_REASON = (
    "read and written by one augmented assignment (`rec.leaf += 1`); an accessor cannot be "
    "its target: read the accessor and override the leaf, by hand"
)


def written_reason(leaf: str, where: str) -> str:
    return (
        f"`{leaf}` is written outside the resolution phase ({where}); the write changes the "
        f"record, not the bags, so a rewritten read would miss it. Move the write into the "
        f"resolution phase or make it an override first"
    )


# reads whose spelling no accessor call replaces, by form
_FORM_REASONS = {
    "position": "read by position off a NamedTuple record (`rec[3]`, `rec[1:3]`); rewrite by hand",
    "match": "a class pattern of a match statement reads it; no expression to rewrite, do it by hand",
    "attrgetter": "read through operator.attrgetter; rewrite by hand",
    "getattr_dynamic": "dynamic getattr: the leaf name is only known at run time",
    "whole": "reads the whole record (vars/asdict/__dict__); no single accessor replaces it",
    "augmented": AUGMENTED_REASON,
    "hasattr": "hasattr on the raw record; every leaf exists on the bags, so decide by hand",
}


def refusal(read: Read, accessors: Mapping[str, str], *, rewrite_parameters: bool = False) -> str | None:
    """Why `read` cannot be rewritten without looking at the code, or None."""
    if read.via == "environ":
        return ENV_REASON
    if read.via == "readback":
        return READBACK_REASON
    if read.via == "record_dict":
        return DICT_REASON
    if read.via == "class":
        return CLASS_REASON
    if read.form in HOME_FORMS:
        return HOME_REASON
    if read.form in _FORM_REASONS:
        return _FORM_REASONS[read.form]
    if read.leaf not in accessors:
        return f"`{read.leaf}` is not a config leaf; no accessor replaces it"
    if read.origin in _BY_HAND_REASONS:
        # never overridden by --rewrite-parameters: these may not be the record at all
        return _BY_HAND_REASONS[read.origin]
    if read.origin == "held" and not rewrite_parameters:
        return HELD_REASON
    return None


def _char_column(lines: Sequence[str], line: int, byte_col: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _char_span(lines: Sequence[str], read: Read) -> Span:
    return (
        read.line,
        _char_column(lines, read.line, read.col),
        read.end_line,
        _char_column(lines, read.end_line, read.end_col),
    )


def _simple(expr: cst.BaseExpression) -> bool:
    """Evaluating it can have no side effects, so dropping it is safe."""
    return isinstance(
        expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)
    ) or (isinstance(expr, cst.UnaryOperation) and _simple(expr.expression))


def _chain_on_name(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _receiver_refusal(receiver: cst.BaseExpression, read: Read) -> str | None:
    """Why the expression the leaf is read from may not be dropped, or None.

    The rewrite replaces `receiver.leaf` as a whole, so the receiver is no longer
    evaluated: that is only sound when evaluating it does nothing. A name or an attribute
    chain on a name (`self.server_args`) qualifies; so does the raw accessor called with
    no arguments (the scanner saw it as the accessor). Anything else (other calls,
    subscripts, walrus bindings, conditionals) stays as written."""
    if m.findall(receiver, m.NamedExpr()):
        return WALRUS_REASON
    if _chain_on_name(receiver):
        return None
    if (
        isinstance(receiver, cst.Call)
        and read.via == "accessor"
        and not receiver.args
        and _chain_on_name(receiver.func)
    ):
        return None
    code = cst.Module(body=[]).code_for_node(receiver)
    if len(code) > 60:
        code = code[:57] + "..."
    return f"the receiver `{code}` may have side effects; dropping it would drop them, rewrite by hand"


def bound_name(expression: str) -> str:
    """The name a read expression starts from, which the rewrite imports:
    `cfg.schedule.page_size` -> `cfg` (`get_schedule().page_size` -> `get_schedule`)."""
    return expression.partition(".")[0].partition("(")[0]


def relied_on(expression: str) -> set[str]:
    """The names of the accessors module a rewrite to `expression` relies on: the one it
    imports and, for a `cfg.<namespace>...` read, that namespace's accessor function,
    which a module generated from another schema (or a stale one) lacks."""
    name = bound_name(expression)
    top = expression.split(".")[1] if name == "cfg" and "." in expression else None
    return {name, *([f"get_{top}"] if top else [])}


def _module_bindings(tree: ast.Module) -> dict[str, str]:
    """Name -> where it comes from, for every name the module binds anywhere (a function's
    local or parameter shadows an imported `cfg` inside it): the import source module, or
    '' when the module defines, assigns or imports it otherwise, or binds it more than once
    in different ways."""
    bound: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound[alias.asname or alias.name].add(f"{node.module}.{alias.name}" if node.level == 0 else "")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.partition(".")[0]].add("")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name].add("")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound[node.id].add("")
        elif isinstance(node, ast.arg):
            bound[node.arg].add("")
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound[node.name].add("")
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound[node.rest].add("")
    return {name: next(iter(sources)) if len(sources) == 1 else "" for name, sources in bound.items()}


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self, targets: dict[Span, tuple[Read, str]], writes: Mapping[int, tuple[Violation, str]] | None = None
    ) -> None:
        super().__init__()
        self.targets = targets
        self.done: dict[Span, str] = {}  # span -> original source text
        self.refused: dict[Span, str] = {}
        self.writes = writes or {}  # line -> (the write, its override source)
        self.writes_done: dict[int, str] = {}
        self.writes_refused: dict[int, str] = {}

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """`rec.leaf = value` -> `get_context().override("<module>:<function>", leaf=value)`."""
        line = self.get_metadata(PositionProvider, original_node).start.line
        target = self.writes.get(line)
        if target is None:
            return updated_node
        write, source = target
        statement = updated_node.body[0] if len(updated_node.body) == 1 else None
        if not (
            isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Attribute)
            and statement.targets[0].target.attr.value == write.leaf
        ):
            self.writes_refused[line] = "not a plain `record.leaf = value` statement; rewrite by hand"
            return updated_node
        if not _chain_on_name(statement.targets[0].target.value):
            self.writes_refused[line] = "the record is reached through a call; rewrite by hand"
            return updated_node
        value = cst.Module(body=[]).code_for_node(statement.value)
        call = cst.parse_statement(f"get_context().override({source!r}, {write.leaf}={value})\n")
        assert isinstance(call, cst.SimpleStatementLine)
        self.writes_done[line] = cst.Module(body=[]).code_for_node(original_node).strip()
        return updated_node.with_changes(body=call.body)

    def _replace(
        self, original: cst.Attribute | cst.Call, updated: cst.Attribute | cst.Call
    ) -> cst.BaseExpression:
        position = self.get_metadata(PositionProvider, original)
        span = (position.start.line, position.start.column, position.end.line, position.end.column)
        target = self.targets.get(span)
        if target is None:
            return updated
        read, expression = target
        receiver = original.value if isinstance(original, cst.Attribute) else original.args[0].value
        why = _receiver_refusal(receiver, read)
        if why is not None:
            self.refused[span] = why
            return updated
        if isinstance(original, cst.Call) and read.form == "getattr_default":
            default = original.args[2].value if len(original.args) > 2 else None
            if default is not None and not _simple(default):
                self.refused[span] = "getattr default could have side effects; rewrite by hand"
                return updated
        self.done[span] = cst.Module(body=[]).code_for_node(original)
        replacement = cst.parse_expression(expression)
        assert isinstance(replacement, cst.Attribute)
        return replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)


def fix_source(
    source: str,
    reads: Sequence[Read],
    accessors: Mapping[str, str],
    accessors_module: str,
    *,
    rewrite_parameters: bool = False,
    written: Mapping[str, str] | None = None,
    line_length: int = 88,
    writes: Sequence[Violation] = (),
    module_name: str = "",
) -> tuple[str, list[Change], list[Skip]]:
    """Rewrite `reads` (found in `source` by the scanner) and return the new source.
    `rewrite_parameters`: treat held records (parameters, `self.server_args`) as the
    process record (see the module docstring). `written`: leaf -> where code outside the
    resolution phase writes it (`*`: some write whose leaf is unknown). `writes`: writes
    to turn into overrides from source `<module_name>:<function>` (already vetted by
    fix_tree: policy and no raw read left)."""
    written = written or {}
    # Python's line breaks, not str.splitlines' (which also breaks at \f, \v, \x1c, NEL, ...)
    lines = source.split("\n")
    bindings = _module_bindings(ast.parse(source))
    targets: dict[Span, tuple[Read, str]] = {}
    skipped: list[Skip] = []

    def skip(read: Read, reason: str) -> None:
        skipped.append(Skip(read.file, read.function, read.leaf, read.line, reason))

    for read in reads:
        reason = refusal(read, accessors, rewrite_parameters=rewrite_parameters)
        where_written = written.get(read.leaf) or written.get("*")
        if reason is None and where_written:
            reason = written_reason(read.leaf, where_written)
        if reason is None:
            name = bound_name(accessors[read.leaf])
            source_of_name = bindings.get(name)
            if source_of_name is not None and source_of_name != f"{accessors_module}.{name}":
                where = source_of_name or "this module"
                reason = f"`{name}` is already bound here (to {where}); rewrite by hand"
        if reason is not None:
            skip(read, reason)
            continue
        targets[_char_span(lines, read)] = (read, accessors[read.leaf])
    write_targets = {w.line: (w, f"{module_name}:{w.function}") for w in writes}
    if not targets and not write_targets:
        return source, [], skipped

    wrapper = MetadataWrapper(cst.parse_module(source))
    rewriter = _Rewriter(targets, write_targets)
    module = wrapper.visit(rewriter)
    changed: list[Change] = []
    needed: set[str] = set()
    for line, (write, override_source) in write_targets.items():
        if line in rewriter.writes_done:
            new = f"get_context().override({override_source!r}, {write.leaf}=...)"
            changed.append(Change(write.file, write.function, write.leaf, line, rewriter.writes_done[line], new))
            needed.add("get_context")
        else:
            why = rewriter.writes_refused.get(line, "could not locate the write in the source")
            skipped.append(Skip(write.file, write.function, write.leaf, line, why, write=True))
    for span, (read, expression) in targets.items():
        if span in rewriter.done:
            changed.append(
                Change(read.file, read.function, read.leaf, read.line, rewriter.done[span], expression)
            )
            needed.add(bound_name(expression))
        else:
            skip(read, rewriter.refused.get(span, "could not locate the read in the source"))
    if changed:
        module = remove_unused_aliases(module, before=source)
        module = add_import(module, accessors_module, sorted(needed), line_length=line_length)
    changed.sort(key=lambda c: (c.line, c.leaf))
    skipped.sort(key=lambda s: (s.line, s.leaf))
    return module.code, changed, skipped


def fix_tree(
    project: Path,
    settings: ScanSettings,
    accessors: Mapping[str, str],
    accessors_module: str,
    *,
    dry_run: bool = False,
    rewrite_parameters: bool = False,
    only: Sequence[str] | None = None,
    leaves: frozenset[str] | None = None,
    resolution: Sequence[str] = (),
    line_length: int | None = None,
    rewrite_writes: bool = False,
    policies: Mapping[str, str] | None = None,
    structured: frozenset[str] = frozenset(),
) -> FixReport:
    """Rewrite every rewritable raw read under the roots (within `only` and of `leaves`,
    when given); writes are reported, never touched. Reads of a `structured` leaf (a json
    leaf with a `structure:`) are refused, with the reason."""
    result = scan_tree(project, settings)
    if line_length is None:
        line_length = ruff_line_length(project)
    pick = _Pick(only, leaves, tuple(resolution))
    by_file, skipped = _reads_to_fix(result, pick)
    for file, reads in by_file.items():
        skipped += [Skip(r.file, r.function, r.leaf, r.line, structured_reason(r.leaf, accessors.get(r.leaf)))
                    for r in reads if r.leaf in structured]
        by_file[file] = [r for r in reads if r.leaf not in structured]
    writes_by_file: dict[str, list[Violation]] = defaultdict(list)
    if rewrite_writes:
        writes_by_file, write_skips = _writes_to_fix(project, result, pick, policies or {}, rewrite_parameters)
        skipped = write_skips + skipped
    skipped = _reported_violations(result, pick, rewrite_writes) + skipped
    written: dict[str, str] = {}
    for v in result.violations:
        if v.kind == "write" and not in_resolution(v.file, v.function, pick.resolution):
            written.setdefault(v.leaf, f"{v.file}:{v.line}")
    changed: list[Change] = []
    files_changed: list[str] = []
    # Where fix may write: the project, and roots declared outside it. A symlinked folder is
    # scanned (nothing hides from the check) but what it leads to elsewhere is not ours.
    ours = [project.resolve(), *(Path(r).resolve() for r in settings.roots if Path(r).is_absolute())]
    for file in sorted(by_file.keys() | writes_by_file.keys()):
        reads, writes = by_file.get(file, []), writes_by_file.get(file, [])
        path = project / file
        why = None
        if not any(path.resolve().is_relative_to(base) for base in ours):
            why = "the file lies outside the project and its scan roots (through a symlink); not rewritten"
        else:
            try:
                # bytes, not text mode: text mode would turn CRLF files into LF files
                source = read_source(path, settings.max_bytes).decode("utf-8")
            except NotReadable as exc:
                why = str(exc)
            except UnicodeDecodeError:
                why = "file is not UTF-8"
            else:
                if "\r" in source.replace("\r\n", ""):
                    # the rewriter's line model is LF or CRLF throughout
                    why = "the file ends lines with a lone CR; not rewritten"
        if why is not None:
            skipped += [Skip(r.file, r.function, r.leaf, r.line, why) for r in reads]
            skipped += [Skip(w.file, w.function, w.leaf, w.line, why, write=True) for w in writes]
            continue
        new_source, file_changes, file_skips = fix_source(
            source, reads, accessors, accessors_module,
            rewrite_parameters=rewrite_parameters, written=written, line_length=line_length,
            writes=writes, module_name=_module_name(file),
        )
        changed += file_changes
        skipped += file_skips
        if new_source != source:
            files_changed.append(file)
            if not dry_run:
                path.write_bytes(new_source.encode("utf-8"))
    skipped.sort(key=lambda s: (s.file, s.line, s.leaf))
    return FixReport(tuple(changed), tuple(skipped), tuple(files_changed))


@attrs.frozen
class _Pick:
    """What a fix run selects: files under `only`, reads and writes of `leaves` (None: all),
    and the resolution phase, whose reads and writes stay as they are."""

    only: Sequence[str] | None
    leaves: frozenset[str] | None
    resolution: tuple[str, ...]

    def selects(self, file: str, leaf: str) -> bool:
        return (self.only is None or _under(file, self.only)) and (self.leaves is None or leaf in self.leaves)

    def in_phase(self, file: str, function: str) -> bool:
        return in_resolution(file, function, self.resolution)


def _reads_to_fix(result: ScanResult, pick: _Pick) -> tuple[dict[str, list[Read]], list[Skip]]:
    """The selected reads by file, and those skipped because they are in the resolution phase."""
    by_file: dict[str, list[Read]] = defaultdict(list)
    in_phase: list[Skip] = []
    for read in result.reads:
        if not pick.selects(read.file, read.leaf):
            continue
        if pick.in_phase(read.file, read.function):
            # before publish there are no bags to read: --rewrite-parameters cannot vouch here
            in_phase.append(Skip(read.file, read.function, read.leaf, read.line, RESOLUTION_REASON))
        else:
            by_file[read.file].append(read)
    return by_file, in_phase


def _writes_to_fix(project: Path, result: ScanResult, pick: _Pick, policies: Mapping[str, str],
                   rewrite_parameters: bool) -> tuple[dict[str, list[Violation]], list[Skip]]:
    """The selected record writes that can become overrides, by file, and the refused ones."""
    writes_by_file: dict[str, list[Violation]] = defaultdict(list)
    refused: list[Skip] = []
    patterns: dict[str, dict[int, Restore | Temporary]] = {}  # file -> its mutate-then-restore writes
    for write in result.violations:
        if write.kind != "write" or pick.in_phase(write.file, write.function):
            continue
        if not pick.selects(write.file, write.leaf):
            continue
        if write.file not in patterns:
            try:
                patterns[write.file] = restores((project / write.file).read_bytes().decode("utf-8"))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                patterns[write.file] = {}  # refused below when the file is rewritten
        why = _write_refusal(
            write, result.reads, policies, rewrite_parameters=rewrite_parameters,
            restore=patterns[write.file].get(write.line),
        )
        if why is None:
            writes_by_file[write.file].append(write)
        else:
            refused.append(Skip(write.file, write.function, write.leaf, write.line, why, write=True))
    return writes_by_file, refused


def _reported_violations(result: ScanResult, pick: _Pick, rewrite_writes: bool) -> list[Skip]:
    """The violations fix never rewrites, reported as skips (the resolution phase's own
    writes are allowed where they are: nothing to report)."""
    return [
        Skip(
            v.file,
            v.function,
            v.leaf,
            v.line,
            WRITE_NEVER
            if v.kind == "write"
            else "write to a dict copy of the record: never rewritten"
            if v.kind == "dict_write"
            else "renamed raw accessor: import it under its own name",
            write=v.kind in WRITE_KINDS,
        )
        for v in result.violations
        if pick.selects(v.file, v.leaf)
        and not (rewrite_writes and v.kind == "write")
        and not (v.kind == "write" and pick.in_phase(v.file, v.function))
    ]


def _under(file: str, paths: Sequence[str]) -> bool:
    return any(file == p.rstrip("/") or file.startswith(p.rstrip("/") + "/") for p in paths)


def ruff_line_length(project: Path) -> int:
    """The engine's line length, as ruff reads it (ruff.toml, .ruff.toml, pyproject.toml),
    so an added import is wrapped exactly when ruff's isort would wrap it; 88 otherwise."""
    for name, table in (("ruff.toml", ()), (".ruff.toml", ()), ("pyproject.toml", ("tool", "ruff"))):
        path = project / name
        if not path.is_file():
            continue
        try:
            data = read_toml(path)
        except (OSError, ValueError):
            continue
        for key in table:
            data = data.get(key, {})
        if isinstance(data.get("line-length"), int):
            return int(data["line-length"])
        if table == ():
            return 88
    return 88


def _module_name(file: str) -> str:
    return file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


WRITE_NEVER = "write to the raw record: never rewritten; use get_context().override"
HELD_WRITE_REASON = (
    "writes a held record (a parameter or `self.server_args`), which may be a runner's own; "
    "an override would change the process config. Pass --rewrite-parameters if it is the "
    "process record"
)
CONSTRUCTED_WRITE_REASON = (
    "writes a record built here (ServerArgs(...), from_cli, ...), "
    "not the process record; an override would change the process config; rewrite by hand"
)
WRITE_ORIGIN_REASONS = {
    "constructed": CONSTRUCTED_WRITE_REASON,
    "built": CONSTRUCTED_WRITE_REASON,
    "replaced": "writes a copy of the record with fields changed (dataclasses.replace, .replace(...)), "
    "not the process record; an override would change the process config; rewrite by hand",
    "copied": "writes a copy of the record (copy.copy, deepcopy), not the process record; an "
    "override would change the process config; rewrite by hand",
    "rebound": "the written name is also bound to something else in its scope, so the write may "
    "not change the process record; rewrite by hand",
    "wrapped": "the written name is bound by `with ... as NAME` around the record and may not be "
    "the record itself, or the record is written through a carrier the fix cannot rewrite "
    "(`[rec][0].port = ...`); rewrite by hand",
    "class": "writes the record class's default, not the process record; rewrite by hand",
    "home": "the record's home module writes it inside a function or property setter used here "
    "(`set_port(1)`, `facade.port = 1`); rewrite by hand",
}


# What a temporary change of one record becomes instead of a process-wide override.
_BY_HAND = "rewrite by hand (a runner view for a draft, scoped_override in a test)"


@attrs.frozen
class Restore:
    """A leaf written back to a value saved from it: `saved = rec.x` ... `rec.x = saved`."""

    leaf: str
    saved: str  # the saving target's source text
    save_line: int
    restore_line: int

    def reason(self, function: str) -> str:
        return (
            f"mutate-then-restore in {function}: `{self.leaf}` is saved (`{self.saved} = ...`, line "
            f"{self.save_line}) and written back from it (line {self.restore_line}): a temporary change "
            f"of this one record (a draft runner's, a test's), which as a process-wide override "
            f"would reach every reader and outlive the restore; {_BY_HAND}"
        )


@attrs.frozen
class Temporary:
    """A write that looks like a temporary change, though no saved value is seen: the leaf
    is written more than once in one function (closures included), in a `finally:` block,
    or in a generator (a context manager's `yield`)."""

    leaf: str
    why: str

    def reason(self, function: str) -> str:
        return (
            f"a temporary change in {function}: `{self.leaf}` is {self.why}; as a process-wide "
            f"override it would reach every reader and outlive the change; {_BY_HAND}"
        )


def _read_leaf(value: ast.expr) -> str | None:
    """The leaf `value` reads from some object: `x.leaf`, `getattr(x, "leaf"[, default])`."""
    if isinstance(value, ast.Attribute) and isinstance(value.ctx, ast.Load):
        return value.attr
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "getattr"
        and len(value.args) >= 2
        and isinstance(value.args[1], ast.Constant)
        and isinstance(value.args[1].value, str)
    ):
        return value.args[1].value
    return None


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of a function's body, not of the functions and classes defined in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _pairs(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of an assignment, tuples paired element by element."""
    if isinstance(node, ast.Assign):
        raw = [(target, node.value) for target in node.targets]
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        raw = [(node.target, node.value)]
    else:
        return []
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for target, value in raw:
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
        ):
            pairs.extend(zip(target.elts, value.elts, strict=True))
        else:
            pairs.append((target, value))
    return pairs


def _writes_in(nodes: Sequence[ast.AST]) -> list[tuple[int, str, ast.expr]]:
    """(line, leaf, value) of each `x.leaf = value` and `setattr(x, "leaf", value)`."""
    writes: list[tuple[int, str, ast.expr]] = []
    for node in nodes:
        for target, value in _pairs(node):
            if isinstance(target, ast.Attribute):
                writes.append((target.lineno, target.attr, value))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) == 3
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            writes.append((node.lineno, node.args[1].value, node.args[2]))
    return writes


_Function = ast.FunctionDef | ast.AsyncFunctionDef
_Write = tuple[int, str, ast.expr]  # (line, leaf, value written)


def restores(source: str) -> dict[int, Restore | Temporary]:
    """Write line -> the mutate-then-restore pattern it belongs to: in one function, a leaf
    saved from some record (`old = rec.x`, `self._old = getattr(rec, "x")`) is written back
    from that saved value. Every write of the leaf in that function (and in the method that
    saved it, for a `self.` attribute saved in another method of the class) belongs to it.
    Syntax only: which record is written is the scanner's business (WRITE_ORIGINS)."""
    functions = _functions_and_classes(ast.parse(source))
    saves = _Saves.of(functions)
    found: dict[int, Restore | Temporary] = {}
    for function, cls in functions:
        for _, leaf, value in saves.writes[id(function)]:
            restored = saves.restored_by(function, cls, leaf, value)
            if restored is None:
                continue
            saved, save_line, where = restored
            for other, _ in functions:
                if id(other) in where:
                    for line, written, _ in saves.writes[id(other)]:
                        if written == leaf:
                            found.setdefault(line, Restore(leaf, saved, save_line, value.lineno))
    for function, _ in functions:
        for line, temporary in _temporary_writes(function).items():
            found.setdefault(line, temporary)
    return found


def _functions_and_classes(tree: ast.Module) -> list[tuple[_Function, ast.ClassDef | None]]:
    """Every function, with the class it is a method of (None for the others)."""
    functions: list[tuple[_Function, ast.ClassDef | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            functions += [(f, node) for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not any(node is f for f, _ in functions):
            functions.append((node, None))
    return functions


@attrs.frozen
class _Saves:
    """What each function saves from a record (`old = rec.x`) and writes, and what a class's
    methods save on the instance (`self._old = rec.x`, which another method may restore)."""

    own: dict[int, dict[str, tuple[str, int]]]  # id(function) -> "key\0leaf" -> (key, line)
    writes: dict[int, list[_Write]]  # id(function) -> its writes
    by_class: dict[int, dict[tuple[str, str], tuple[int, int]]]  # id(class) -> (key, leaf) -> (line, id(fn))

    @classmethod
    def of(cls, functions: list[tuple[_Function, ast.ClassDef | None]]) -> _Saves:
        found = cls({}, {}, {})
        for function, klass in functions:
            nodes = _own_nodes(function)
            own: dict[str, tuple[str, int]] = {}
            params = [*function.args.posonlyargs, *function.args.args]
            self_name = params[0].arg if klass is not None and params else None
            for node in nodes:
                for target, value in _pairs(node):
                    leaf = _read_leaf(value)
                    if leaf is None or not isinstance(target, (ast.Name, ast.Attribute)):
                        continue
                    key = ast.unparse(target)
                    own.setdefault(f"{key}\0{leaf}", (key, target.lineno))
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and (
                        target.value.id == self_name
                    ):
                        # saved on the instance: another method may restore it (__exit__)
                        found.by_class.setdefault(id(klass), {}).setdefault((key, leaf), (target.lineno, id(function)))
            found.own[id(function)] = own
            found.writes[id(function)] = _writes_in(nodes)
        return found

    def restored_by(self, function: _Function, cls: ast.ClassDef | None, leaf: str,
                    value: ast.expr) -> tuple[str, int, set[int]] | None:
        """(saved name, line saved, ids of the functions involved) when writing `value` to
        `leaf` restores a value saved earlier; else None."""
        key = ast.unparse(value)
        saved = self.own[id(function)].get(f"{key}\0{leaf}")
        if saved is not None and saved[1] < value.lineno:
            return saved[0], saved[1], {id(function)}
        if cls is not None and (key, leaf) in self.by_class.get(id(cls), {}):
            save_line, saver = self.by_class[id(cls)][(key, leaf)]
            return key, save_line, {id(function), saver}
        return None


_TRY_NODES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # TryStar: `except*`, Python 3.11+


def _temporary_writes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[int, Temporary]:
    """Write line -> Temporary, for the shapes of a temporary change no saved value shows:
    restored from a dict, a literal, an accessor read or in a closure, or around a yield."""
    subtree = list(ast.walk(function))  # nested closures too: `def undo(): rec.x = old`
    generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in subtree)
    in_finally = {
        line
        for n in subtree if isinstance(n, _TRY_NODES)
        for line, _, _ in _writes_in([m for stmt in n.finalbody for m in ast.walk(stmt)])
    }
    lines_of: dict[str, list[int]] = defaultdict(list)
    for line, leaf, _ in _writes_in(subtree):
        lines_of[leaf].append(line)
    branches = _branch_paths(function)
    found: dict[int, Temporary] = {}
    for leaf, lines in lines_of.items():
        # one write per path (`if a: rec.x = 1 elif b: rec.x = 2 else: ...`) is a plain
        # assignment; two that may both run are a change and its undoing
        again = [
            (a, b) for i, a in enumerate(lines) for b in lines[i + 1 :]
            if not _exclusive(branches.get(a, ()), branches.get(b, ()))
        ]
        if again:
            why = f"written {len(lines)} times (lines {', '.join(map(str, sorted(lines)))})"
        elif generator:
            why = "written in a generator (around a yield, as a context manager does)"
        elif lines[0] in in_finally:
            why = "written in a finally block"
        else:
            continue
        for line in lines:
            found[line] = Temporary(leaf, why)
    return found


_Branch = tuple[int, str]  # (id of an if or match statement, which branch)


def _branch_paths(function: _Function) -> dict[int, tuple[_Branch, ...]]:
    """Line -> the if/elif/else and match branches it lies in, outermost first (the first
    node starting on a line decides)."""
    paths: dict[int, tuple[_Branch, ...]] = {}
    pending: list[tuple[ast.AST, tuple[_Branch, ...]]] = [(function, ())]
    while pending:
        node, path = pending.pop()
        line = getattr(node, "lineno", None)
        if line is not None:
            paths.setdefault(line, path)
        if isinstance(node, ast.If):
            pending.append((node.test, path))
            pending += [(child, (*path, (id(node), "body"))) for child in node.body]
            pending += [(child, (*path, (id(node), "orelse"))) for child in node.orelse]
        elif isinstance(node, ast.Match):
            pending.append((node.subject, path))
            for index, case in enumerate(node.cases):
                pending += [(child, (*path, (id(node), f"case{index}"))) for child in case.body]
        else:
            pending += [(child, path) for child in ast.iter_child_nodes(node)]
    # children are pushed after their parent, so a deeper node on a parent's line never
    # overrides it: the statement's own path counts
    return paths


def _exclusive(a: tuple[_Branch, ...], b: tuple[_Branch, ...]) -> bool:
    """Can no run of the function reach both (different branches of one if or match)?"""
    for x, y in zip(a, b, strict=False):  # a path that ends first is a prefix: both run
        if x != y:
            return x[0] == y[0]
    return False


def _write_refusal(
    write: Violation,
    reads: Sequence[Read],
    policies: Mapping[str, str],
    *,
    rewrite_parameters: bool = False,
    restore: Restore | Temporary | None = None,
) -> str | None:
    """Why a write cannot become an override, or None."""
    policy = policies.get(write.leaf)
    if policy is None:
        return f"`{write.leaf}` is not a config leaf; no override replaces the write"
    if restore is not None:
        return restore.reason(write.function)
    if write.origin in WRITE_ORIGIN_REASONS:
        return WRITE_ORIGIN_REASONS[write.origin]
    if write.origin == "held" and not rewrite_parameters:
        return HELD_WRITE_REASON
    if policy not in ("load_time", "runtime"):
        return (
            f"`{write.leaf}` has override policy {policy}; give it load_time or runtime in the "
            f"schema, or move the write into the resolution phase"
        )
    raw = sorted(f"{r.file}:{r.line}" for r in reads if r.leaf in (write.leaf, "*"))
    if raw:
        return (
            f"raw reads of `{write.leaf}` remain ({', '.join(raw[:3])}{', ...' if len(raw) > 3 else ''}); "
            f"they would not see an override, so move them onto the accessors first"
        )
    return None
