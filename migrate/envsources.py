"""Readers of the environment that an engine builds on rather than spells as
`os.environ[...]`, read for the variables they take:

- a settings library: a pydantic-settings `BaseSettings` subclass (also pydantic v1's)
  fills each field from the variable named by the class's `env_prefix` and the field's
  name (case-insensitively, unless `case_sensitive=True`), or by the field's alias
  (`Field(validation_alias="X")`, `alias=`, `AliasChoices("X", "Y")`, v1's `env=`), where
  the class is defined; the settings come from `model_config = SettingsConfigDict(...)`
  (or a dict), `class Config:` (v1) or the class keywords, a settings base of the module
  passing its own on. A prefix or alias the module does not show, or a base of another
  module adding fields not spelled here, is `$?` where some declared variable could fit;
- a table of getters, one per variable (vLLM's `envs.py`: `environment_variables =
  {"SGLANG_PAGE_SIZE": lambda: int(os.getenv("SGLANG_PAGE_SIZE", "16"))}`): its entries'
  reads are what a use of the table reads, an entry by a spelled key
  (`environment_variables["SGLANG_PAGE_SIZE"]()`) that entry's, any other use (a key
  not shown, `.items()`, `.values()`, the table handed on: vLLM's hash loop calling every
  getter) every entry's. Its keys alone (`in`, `.keys()`, `len`, a loop over it) read
  nothing, and the module's own `__getattr__` and `__dir__` are the table's dispatch,
  whose reads are reported where `envs.NAME` is loaded. The table travels to importers
  among the module's constants (shape ENV_TABLE), as other constants do.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from configbags.migrate.scanmodel import ENV_UNRESOLVED, env_subject

if TYPE_CHECKING:
    from configbags.migrate.doors import ModuleStrings

# The shape of a getter table's row among a module's constants (FlowFacts.constants):
# (name, ENV_TABLE, "key\0leaf\0key\0leaf..."), each leaf what its entry reads
ENV_TABLE = "env_table"
_SETTINGS_BASES = frozenset({
    "pydantic_settings.BaseSettings", "pydantic_settings.main.BaseSettings", "pydantic.BaseSettings",
    "pydantic.v1.BaseSettings", "pydantic.env_settings.BaseSettings",
})
# the module-level functions of a table's module that dispatch to it by name
_TABLE_DISPATCH = frozenset({"__getattr__", "__dir__"})
# what a use of a table asks that reads no entry: its keys
_TABLE_KEYS = frozenset({"keys", "__contains__", "__len__"})
_ALIAS_KEYWORDS = ("validation_alias", "alias", "env")
Row = tuple[Any, ...]


# ---- getter tables


def env_tables(tree: ast.Module, reads: Iterable[Row]) -> list[tuple[str, str, str]]:
    """The module's getter tables, as constants rows: a dict bound once at the top level
    whose entries (a lambda, or a module function by name) read the environment."""
    rows = [row for row in reads if row[6] == "environ"]
    if not rows:
        return []
    found: list[tuple[str, str, str]] = []
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        )
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
            continue
        pairs: list[str] = []
        for key, entry in zip(value.keys, value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            for leaf in sorted(_entry_reads(entry, rows)):
                pairs += [key.value, leaf]
        if pairs:
            found.append((target.id, ENV_TABLE, "\0".join(pairs)))
    return found


def _entry_reads(entry: ast.expr, rows: list[Row]) -> set[str]:
    """The leaves the reads inside `entry` (or, for a name, in that function) have."""
    if isinstance(entry, ast.Name):
        return {row[1] for row in rows if row[0] == entry.id}
    start = (entry.lineno, entry.col_offset)
    end = (entry.end_lineno or entry.lineno, entry.end_col_offset or entry.col_offset)
    return {row[1] for row in rows if start <= (row[2], row[3]) and (row[4], row[5]) <= end}


def table_entries(value: str) -> dict[str, list[str]]:
    """key -> the leaves its entry reads, of a table row's value."""
    parts = value.split("\0")
    entries: dict[str, list[str]] = {}
    for key, leaf in zip(parts[::2], parts[1::2], strict=True):
        entries.setdefault(key, []).append(leaf)
    return entries


def table_use(
    node: ast.expr, parents: Sequence[ast.AST], entries: dict[str, list[str]], keys: frozenset[str] | None,
) -> tuple[ast.expr, list[str]] | None:
    """(where, leaves) a use of a table reads: `node` is the table, `parents` the nodes
    around it (innermost last), `keys` the values the key of a subscript or `.get` may
    have (None: not shown, or no key). None where it reads no entry."""
    parent = parents[-1] if parents else None
    every = sorted({leaf for leaves in entries.values() for leaf in leaves})
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return parent, _picked(entries, keys) if keys is not None else every
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr in _TABLE_KEYS:
            return None
        call = parents[-2] if len(parents) > 1 else None
        if parent.attr == "get" and isinstance(call, ast.Call) and call.func is parent and call.args:
            return call, _picked(entries, keys) if keys is not None else every
        return parent, every
    if isinstance(parent, ast.Compare) and node is not parent.left:
        return None  # `name in environment_variables`
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
        return None  # its keys, each
    if isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name) and (
        parent.func.id in ("len", "isinstance", "bool", "id", "type", "callable")
    ):
        return None
    return node, every


def _picked(entries: dict[str, list[str]], keys: frozenset[str]) -> list[str]:
    return sorted({leaf for key in keys for leaf in entries.get(key, ())})


def table_key(node: ast.expr, parents: Sequence[ast.AST]) -> ast.expr | None:
    """The key expression of a subscript or `.get(key)` of the table `node`, if any."""
    parent = parents[-1] if parents else None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return parent.slice
    call = parents[-2] if len(parents) > 1 else None
    if isinstance(parent, ast.Attribute) and parent.attr == "get" and isinstance(call, ast.Call) and call.args:
        return call.args[0] if not isinstance(call.args[0], ast.Starred) else None
    return None


def dispatches(function: str) -> bool:
    """Is a module-level function of this name the table's own dispatch?"""
    return function in _TABLE_DISPATCH


# ---- settings libraries


def settings_reads(tree: ast.Module, text: str, declared: frozenset[str], strings: ModuleStrings) -> list[Row]:
    """The reads of the module's pydantic-settings classes, at each field (read rows)."""
    if not declared or "BaseSettings" not in text:
        return []
    imported = _imported_names(tree)
    classes: dict[str, _Settings] = {}
    reads: list[Row] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [_resolved(base, imported) for base in node.bases]
        inherited = [classes[name] for name in bases if name in classes]
        if not inherited and not _SETTINGS_BASES.intersection(bases):
            continue
        settings = _Settings.of(node, inherited, strings)
        classes[node.name] = settings
        # a base neither the library's nor a settings class of this module may add fields
        # no code here spells
        unseen = any(name not in classes and name not in _SETTINGS_BASES and name not in ("object", "") for name in bases)
        reads += settings.reads(node, declared, strings, unseen)
    return reads


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """local name -> dotted path, of the module's top-level imports."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else alias.name.partition(".")[0]
    return names


def _resolved(expr: ast.expr, imported: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.insert(0, expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return ""
    head = imported.get(expr.id, expr.id)
    return ".".join([head, *parts])


class _Settings:
    """A settings class's environment settings: its prefix (None: not shown), case rule
    and nested delimiter."""

    def __init__(self, prefix: str | None, case_sensitive: bool, delimiter: str | None) -> None:
        self.prefix = prefix
        self.case_sensitive = case_sensitive
        self.delimiter = delimiter

    @classmethod
    def of(cls, node: ast.ClassDef, inherited: list[_Settings], strings: ModuleStrings) -> _Settings:
        base = inherited[0] if inherited else _Settings("", False, None)
        found: dict[str, ast.expr | None] = {}
        for keyword in node.keywords:
            if keyword.arg is not None:
                found[keyword.arg] = keyword.value
        for item in node.body:
            if isinstance(item, (ast.Assign, ast.AnnAssign)) and _target(item) == "model_config":
                found.update(_config_items(item.value))
            elif isinstance(item, ast.ClassDef) and item.name == "Config":  # pydantic v1
                for stmt in item.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _target(stmt):
                        found[_target(stmt) or ""] = stmt.value
        scope = [node]
        prefix: str | None = base.prefix
        if "env_prefix" in found:
            given = found["env_prefix"]
            prefix = strings.value(given, scope) if given is not None else None
        case_sensitive = base.case_sensitive
        if "case_sensitive" in found:
            given = found["case_sensitive"]
            case_sensitive = isinstance(given, ast.Constant) and given.value is True
        delimiter = base.delimiter
        if "env_nested_delimiter" in found:
            given = found["env_nested_delimiter"]
            delimiter = strings.value(given, scope) if given is not None else "?"
        return cls(prefix, case_sensitive, delimiter)

    def reads(self, node: ast.ClassDef, declared: frozenset[str], strings: ModuleStrings, unseen: bool) -> list[Row]:
        found: list[Row] = []
        qualname = node.name
        if unseen and (self.prefix is None or self._under(self.prefix, declared)):
            found.append(_row(qualname, ENV_UNRESOLVED, node))
        for field, target, value in _fields(node):
            names = _aliases(value, strings, [node])
            if names is None:
                if self._under("", declared):
                    found.append(_row(qualname, ENV_UNRESOLVED, target))
                continue
            if not names:
                if self.prefix is None:
                    if self._under("", declared):
                        found.append(_row(qualname, ENV_UNRESOLVED, target))
                    continue
                names = [self.prefix + field]
            for variable in sorted({v for name in names for v in self._matching(name, declared)}):
                found.append(_row(qualname, env_subject(variable), target))
            if self.delimiter is not None and any(self._under(name + self.delimiter, declared) for name in names):
                found.append(_row(qualname, ENV_UNRESOLVED, target))  # a nested model's fields
        return found

    def _fold(self, name: str) -> str:
        return name if self.case_sensitive else name.upper()

    def _matching(self, name: str, declared: frozenset[str]) -> list[str]:
        return [variable for variable in declared if self._fold(variable) == self._fold(name)]

    def _under(self, prefix: str, declared: frozenset[str]) -> bool:
        return prefix == "?" or any(self._fold(variable).startswith(self._fold(prefix)) for variable in declared)


def _target(stmt: ast.Assign | ast.AnnAssign) -> str | None:
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
        stmt.target if isinstance(stmt, ast.AnnAssign) else None
    )
    return target.id if isinstance(target, ast.Name) else None


def _config_items(value: ast.expr | None) -> Iterator[tuple[str, ast.expr | None]]:
    """The settings `SettingsConfigDict(...)` / `ConfigDict(...)` / a dict literal gives;
    one not shown leaves the prefix unknown."""
    if isinstance(value, ast.Call) and not value.args:
        for keyword in value.keywords:
            if keyword.arg is None:
                yield "env_prefix", None  # `**other`
            else:
                yield keyword.arg, keyword.value
    elif isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value, item
            else:
                yield "env_prefix", None
    else:
        yield "env_prefix", None


def _fields(node: ast.ClassDef) -> Iterator[tuple[str, ast.expr, ast.expr | None]]:
    """(name, target, value) of each field the class body annotates."""
    for item in node.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        name = item.target.id
        annotation = ast.unparse(item.annotation)
        if name.startswith("_") or name == "model_config" or "ClassVar" in annotation:
            continue
        yield name, item.target, item.value


def _aliases(value: ast.expr | None, strings: ModuleStrings, scope: list[ast.AST]) -> list[str] | None:
    """The names a field's alias gives (`Field(validation_alias="X")`, `AliasChoices`),
    [] for none (the prefix and the field's name), None for one not shown."""
    if not isinstance(value, ast.Call) or _last(value.func) != "Field":
        return []
    for keyword in value.keywords:
        if keyword.arg in _ALIAS_KEYWORDS:
            return _alias_names(keyword.value, strings, scope)
        if keyword.arg is None:
            return None  # `Field(**spec)`
    return []


def _alias_names(expr: ast.expr, strings: ModuleStrings, scope: list[ast.AST]) -> list[str] | None:
    if isinstance(expr, ast.Constant) and expr.value is None:
        return []
    if isinstance(expr, (ast.List, ast.Tuple)):
        elements = expr.elts
    elif isinstance(expr, ast.Call) and _last(expr.func) in ("AliasChoices", "AliasPath"):
        elements = expr.args[:1] if _last(expr.func) == "AliasPath" else list(expr.args)
    else:
        elements = [expr]
    names: list[str] = []
    for element in elements:
        if isinstance(element, ast.Call) and _last(element.func) == "AliasPath" and element.args:
            element = element.args[0]
        name = strings.value(element, scope)
        if name is None:
            return None
        names.append(name)
    return names


def _last(expr: ast.expr) -> str:
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""


def _row(function: str, leaf: str, node: ast.AST) -> Row:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0)
    return (function, leaf, line, col, getattr(node, "end_lineno", None) or line,
            getattr(node, "end_col_offset", None) or col, "environ", "settings_field", "process")


# ---- an environment helper object, carried one hop


_FIELD_CALLS = frozenset({"field", "ib", "attrib", "Factory"})
_FACTORY_KEYWORDS = ("default_factory", "factory")
_MAX_CARRY = 4


def carried_helpers(
    expr: ast.expr, parents: Sequence[ast.AST], tree: ast.Module, depth: int = 0,
) -> set[str]:
    """What an environment helper object's call may be spelled as, where the object is
    reached through a carrier (`parents`: the nodes around `expr`, innermost last): the
    spellings `P` such that `P.get(...)` is a call the helper entries name (`ENV`,
    `Env()`). Followed, the way the record's carriers are: a name bound to it (`env =
    ENV`), a parameter annotated with the class (`env: Env`) or defaulting to it (`env=ENV`),
    `self.env` where the class body binds it (`env = Env()`, a dataclass or attrs field
    `env: Env = field(default_factory=Env)`) or a method assigns it (`self.env = Env()`,
    `self.env = env` of such a parameter), and a module function returning it
    (`make_env().get(...)`)."""
    function = next((p for p in reversed(parents) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    cls = None
    if function is not None:
        at = max(i for i, p in enumerate(parents) if p is function)
        cls = parents[at - 1] if at and isinstance(parents[at - 1], ast.ClassDef) else None
    return _carried(expr, function, cls, tree, depth)


def _carried(
    expr: ast.expr | None, function: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.AST | None,
    tree: ast.Module, depth: int,
) -> set[str]:
    if expr is None or depth > _MAX_CARRY:
        return set()
    if isinstance(expr, ast.Call):
        maker = _dotted(expr.func)
        if not maker:
            return set()
        found = {f"{maker}()"}
        factory = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == maker), None)
        if factory is not None:
            for sub in ast.walk(factory):
                if isinstance(sub, ast.Return) and sub.value is not None:
                    found |= _carried(sub.value, factory, None, tree, depth + 1)
        return found
    if isinstance(expr, ast.Name):
        return _name_carries(expr.id, function, tree, depth)
    if isinstance(expr, ast.Attribute):
        found = {_dotted(expr)} - {""}
        owner = function.args.args[0].arg if function is not None and function.args.args else None
        if isinstance(cls, ast.ClassDef) and isinstance(expr.value, ast.Name) and expr.value.id == owner:
            found |= _attribute_carries(expr.attr, cls, tree, depth)
        return found
    return set()


def _name_carries(
    name: str, function: ast.FunctionDef | ast.AsyncFunctionDef | None, tree: ast.Module, depth: int,
) -> set[str]:
    """A local (its bindings, a parameter's annotation and default), else the module's."""
    if function is not None:
        args = function.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        defaults = dict(zip([a.arg for a in [*args.posonlyargs, *args.args]][::-1], args.defaults[::-1], strict=False))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)
        local = any(a.arg == name for a in params) or any(
            isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Store) for sub in ast.walk(function)
        )
        if local:
            found: set[str] = set()
            for arg in params:
                if arg.arg == name:
                    found |= _annotated(arg.annotation)
                    found |= _carried(defaults.get(name), None, None, tree, depth + 1)
            for sub in ast.walk(function):
                found |= _assigned(sub, lambda target: isinstance(target, ast.Name) and target.id == name, function, None, tree, depth)
            return found
    found = {name}
    for stmt in tree.body:
        found |= _assigned(stmt, lambda target: isinstance(target, ast.Name) and target.id == name, None, None, tree, depth)
    return found


def _attribute_carries(attr: str, cls: ast.ClassDef, tree: ast.Module, depth: int) -> set[str]:
    """`self.<attr>`: what the class body binds to it, and what its methods assign."""
    found: set[str] = set()
    for item in cls.body:
        found |= _assigned(item, lambda target: isinstance(target, ast.Name) and target.id == attr, None, cls, tree, depth)
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args:
            me = item.args.args[0].arg

            def on_self(target: ast.expr, me: str = me) -> bool:
                return isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name) and (
                    target.value.id == me
                )

            for sub in ast.walk(item):
                found |= _assigned(sub, on_self, item, cls, tree, depth)
    return found


def _assigned(
    node: ast.AST, matches: Any, function: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.AST | None,
    tree: ast.Module, depth: int,
) -> set[str]:
    """What an assignment `node` whose target `matches` carries (its annotation, and its
    value: a field declaration's default or factory)."""
    if isinstance(node, ast.Assign) and any(matches(t) for t in node.targets):
        return _value_carries(node.value, function, cls, tree, depth)
    if isinstance(node, ast.AnnAssign) and matches(node.target):
        return _annotated(node.annotation) | _value_carries(node.value, function, cls, tree, depth)
    return set()


def _value_carries(
    value: ast.expr | None, function: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.AST | None,
    tree: ast.Module, depth: int,
) -> set[str]:
    if isinstance(value, ast.Call) and _last(value.func) in _FIELD_CALLS:
        found: set[str] = set()
        for keyword in value.keywords:
            if keyword.arg in _FACTORY_KEYWORDS and _dotted(keyword.value):
                found.add(f"{_dotted(keyword.value)}()")
            elif keyword.arg == "default":
                found |= _carried(keyword.value, function, cls, tree, depth + 1)
        if _last(value.func) == "Factory" and value.args and _dotted(value.args[0]):
            found.add(f"{_dotted(value.args[0])}()")
        return found
    return _carried(value, function, cls, tree, depth + 1)


def _annotated(annotation: ast.expr | None) -> set[str]:
    """`env: Env` (or `"Env"`, `Env | None`, `Optional[Env]`): an instance of the class."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    found: set[str] = set()
    for sub in ast.walk(annotation):
        name = _dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else ""
        if name and name not in ("None", "Optional", "typing.Optional"):
            found.add(f"{name}()")
    return found


def _dotted(expr: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.insert(0, expr.attr)
        expr = expr.value
    return ".".join([expr.id, *parts]) if isinstance(expr, ast.Name) else ""
