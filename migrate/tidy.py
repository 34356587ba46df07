"""Leave a rewritten module as ruff would want it: the accessor import in its place in the
import block (isort's order, as ruff applies it), and no alias or import that the rewrite
made unused (F401, F841). Only what the rewrite touched is tidied: a name unused before
the rewrite stays as it was."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Sequence

import libcst as cst

_MAX_ROUNDS = 8  # removing `cfg = args` can leave `args = get_server_args()` unused, and so on


def _import_of(stmt: cst.CSTNode) -> cst.Import | cst.ImportFrom | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        node = stmt.body[0]
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return node
    return None


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return cst.Module(body=[]).code_for_node(node)


def _name_key(name: str) -> tuple[int, str]:
    # isort's order-by-type (ruff's default): CONSTANTS, then Classes, then the rest
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (kind, name.lower() if kind == 2 else name)


def _is_future(node: cst.Import | cst.ImportFrom) -> bool:
    return isinstance(node, cst.ImportFrom) and _dotted(node.module) == "__future__"


def import_statement(from_module: str, names: Sequence[str], line_length: int = 88) -> cst.SimpleStatementLine:
    """`from from_module import names`, sorted, wrapped one name a line when too long (as
    isort and ruff lay it out)."""
    ordered = sorted(dict.fromkeys(names), key=_name_key)
    text = f"from {from_module} import {', '.join(ordered)}\n"
    if len(text) - 1 > line_length:
        text = f"from {from_module} import (\n" + "".join(f"    {n},\n" for n in ordered) + ")\n"
    statement = cst.parse_statement(text)
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement


# a module's statements, as add_import edits them in place
_Body = list[cst.SimpleStatementLine | cst.BaseCompoundStatement]


def add_import(module: cst.Module, from_module: str, names: Sequence[str], *, line_length: int = 88) -> cst.Module:
    """`from from_module import names` in the import block: merged into an existing import
    of that module, else among the imports of the same top-level package in sorted order,
    else as a new block after the last import (after the docstring and `__future__`).
    `line_length` is the engine's (ruff's default 88 when it sets none)."""
    body = list(module.body)
    if not _merge_import(body, from_module, names, line_length):
        new = import_statement(from_module, names, line_length)
        if not _insert_beside_its_package(body, from_module, new):
            _append_import_block(body, new)
    return module.with_changes(body=body)


def _merge_import(body: _Body, from_module: str, names: Sequence[str], line_length: int) -> bool:
    """Merge `names` into a plain (unaliased) import of `from_module`, if there is one."""
    for index, stmt in enumerate(body):
        node = _import_of(stmt)
        if (
            isinstance(node, cst.ImportFrom)
            and not node.relative
            and _dotted(node.module) == from_module
            and not isinstance(node.names, cst.ImportStar)
        ):
            if any(a.asname is not None for a in node.names):
                continue  # an aliased import stays as written; add a plain one
            merged = [*(_dotted(a.name) for a in node.names), *names]
            assert isinstance(stmt, cst.SimpleStatementLine)
            new_stmt = import_statement(from_module, merged, line_length)
            body[index] = new_stmt.with_changes(leading_lines=stmt.leading_lines, trailing_whitespace=stmt.trailing_whitespace)
            return True
    return False


def _insert_beside_its_package(body: _Body, from_module: str, new: cst.SimpleStatementLine) -> bool:
    """Insert `new` among the imports of its top-level package, in sorted order, if any."""
    top = from_module.split(".")[0]
    same_package = [
        (i, n)
        for i, stmt in enumerate(body)
        if isinstance(n := _import_of(stmt), cst.ImportFrom) and not n.relative and _dotted(n.module).split(".")[0] == top
    ]
    if not same_package:
        return False
    for i, n in same_package:
        if _dotted(n.module).lower() > from_module.lower():
            # take its place, and the blank line or comment above it
            below = body[i]
            assert isinstance(below, cst.SimpleStatementLine)
            body[i] = below.with_changes(leading_lines=[])
            body.insert(i, new.with_changes(leading_lines=below.leading_lines))
            return True
    body.insert(same_package[-1][0] + 1, new)
    return True


def _append_import_block(body: _Body, new: cst.SimpleStatementLine) -> None:
    """`new` as a block of its own after the last absolute import, else after the docstring,
    with isort's blank lines after it: two before a def or class, else one."""
    absolute = [i for i, stmt in enumerate(body)
                if (n := _import_of(stmt)) is not None and not (isinstance(n, cst.ImportFrom) and n.relative)]
    at = absolute[-1] + 1 if absolute else int(bool(body) and _is_docstring(body[0]))
    body.insert(at, new.with_changes(leading_lines=[cst.EmptyLine()] if at else []))
    if at + 1 >= len(body):
        return
    following = body[at + 1]
    wanted = 2 if isinstance(following, (cst.FunctionDef, cst.ClassDef)) else 1
    blank = 0
    for line in following.leading_lines:
        if line.comment is not None:
            break
        blank += 1
    if blank < wanted and not _import_of(following):
        extra = [cst.EmptyLine()] * (wanted - blank)
        body[at + 1] = following.with_changes(leading_lines=[*extra, *following.leading_lines])


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


# ---------------------------------------------------------------------------- unused names


def _loads(tree: ast.AST) -> Counter[str]:
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found[node.id] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
    return found


def _functions(tree: ast.AST) -> Iterable[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function with its qualname (`Runner.step`, `f.<locals>.g`): two methods of
    one name in two classes are two functions."""
    pending: list[tuple[str, ast.AST]] = [("", tree)]
    while pending:
        prefix, node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield name, child
                pending.append((name + ".<locals>.", child))
            elif isinstance(child, ast.ClassDef):
                pending.append((prefix + child.name + ".", child))
            else:
                pending.append((prefix, child))


def _droppable_value(value: ast.expr) -> bool:
    """Evaluating it has no effect worth keeping: a name or an attribute chain on one
    (`self.server_args`, as the rewrite drops a receiver), or a call of one with no
    arguments (the raw accessor, in what the rewrite leaves behind)."""
    if isinstance(value, ast.Call) and not value.args and not value.keywords:
        value = value.func
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name)


def _lines(code: str) -> list[str]:
    """`code`'s lines with their ends, split where Python splits them (`\n`; a CRLF file's
    `\r` stays with its line). str.splitlines would also split at a form feed, `\v`,
    `\x1c` or NEL, and the line numbers would no longer be the parser's."""
    parts = code.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _alone_on_its_line(line: str, segment: str | None) -> bool:
    """Is the statement `segment` all the code on `line` (a comment may follow)?"""
    if segment is None:
        return False
    text = line.strip()
    if not text.startswith(segment):
        return False
    rest = text[len(segment) :].strip()
    return not rest or rest.startswith("#")


def _alias_assignment(stmt: ast.AST) -> str | None:
    """The name a one-line `name = value` or `name: T = value` binds, when dropping the
    statement drops nothing else."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    if stmt.lineno != stmt.end_lineno or not _droppable_value(value):
        return None
    return target.id


def remove_unused_aliases(module: cst.Module, *, before: str) -> cst.Module:
    """Drop local aliases (`args = get_server_args()`, `cfg = args`) that the rewrite left
    unused, then module-level imports it left unused. Used-before is judged per function
    name, so only what the rewrite emptied goes."""
    old_tree = ast.parse(before)
    used_before = {name: _loads(f) for name, f in _functions(old_tree)}
    code = module.code
    for _ in range(_MAX_ROUNDS):
        lines = _lines(code)
        drop: set[int] = set()
        for qualname, function in _functions(ast.parse(code)):
            loads = _loads(function)
            for stmt in ast.walk(function):
                name = _alias_assignment(stmt)
                if name is None or loads[name] or not used_before.get(qualname, Counter())[name]:
                    continue
                assert isinstance(stmt, (ast.Assign, ast.AnnAssign))
                if _alone_on_its_line(lines[stmt.lineno - 1], ast.get_source_segment(code, stmt)):
                    drop.add(stmt.lineno - 1)
        if not drop:
            break
        code = "".join(line for i, line in enumerate(lines) if i not in drop)
    return _remove_unused_imports(cst.parse_module(code), before_loads=_loads(old_tree))


class _ImportPruner(cst.CSTTransformer):
    """Drops unused names from the imports at the top level of the module and of function
    bodies (never inside if/try/with, where an emptied block would not parse)."""

    def __init__(self, unused: set[str]) -> None:
        super().__init__()
        self.unused = unused

    def _prune(self, statements: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        kept: list[cst.BaseStatement] = []
        # blank lines and comments above a removed import stay, above what follows it
        carried: Sequence[cst.EmptyLine] = ()
        for stmt in statements:
            node = _import_of(stmt)
            names = [] if node is None or isinstance(node.names, cst.ImportStar) else list(node.names)
            left = [a for a in names if _bound(a) not in self.unused]
            if node is not None and names and not left:
                assert isinstance(stmt, cst.SimpleStatementLine)
                carried = carried or stmt.leading_lines
                continue
            if node is not None and len(left) < len(names):
                left = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in left]
                assert isinstance(stmt, cst.SimpleStatementLine)
                stmt = stmt.with_changes(body=[node.with_changes(names=left, lpar=None, rpar=None)])
            if carried and isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                if not stmt.leading_lines:
                    stmt = stmt.with_changes(leading_lines=carried)
                carried = ()
            kept.append(stmt)
        return kept

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._prune(updated_node.body))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        body = updated_node.body
        if not isinstance(body, cst.IndentedBlock):
            return updated_node
        kept = self._prune(body.body)
        return updated_node.with_changes(body=body.with_changes(body=kept)) if kept else updated_node


def _bound(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]


def _remove_unused_imports(module: cst.Module, *, before_loads: Counter[str]) -> cst.Module:
    tree = ast.parse(module.code)
    after = _loads(tree)
    exported = _all_names(tree)
    unused = {n for n in before_loads if after[n] == 0 and n not in exported}
    if not unused:
        return module
    return module.visit(_ImportPruner(unused))


def _all_names(tree: ast.Module) -> set[str]:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            try:
                return set(ast.literal_eval(stmt.value))
            except ValueError:
                return set()
    return set()
