"""Readers of the environment that an engine builds on rather than spells as
`os.environ[...]`, read for the variables they take:

- a settings library: a pydantic-settings `BaseSettings` subclass (also pydantic v1's)
  fills each field from the variable named by the class's `env_prefix` and the field's
  name (case-insensitively, unless `case_sensitive=True`), or by the field's alias
  (`Field(validation_alias="X")`, `alias=`, `AliasChoices("X", "Y")`, v1's `env=`, as the
  default or in `Annotated[int, Field(...)]`), where the class is defined (at the top
  level or in a function; one `create_model(..., __base__=BaseSettings)` makes where it
  is made), and under a prefix given where it is made (`Knobs(_env_prefix="SGLANG_")`); the settings come from `model_config = SettingsConfigDict(...)`
  (or a dict), `class Config:` (v1) or the class keywords, a settings base passing its own
  on: one of the module, or one of another scanned module (its settings and fields travel
  to importers among its constants, shape SETTINGS_CLASS, followed through the project
  pass), whose fields a subclass setting its own prefix reads under it. An
  `alias_generator` that joins literals and the field's name (`lambda f: "SGLANG_" +
  f.upper()`, `AliasGenerator(validation_alias=...)`, pydantic's `to_camel`) names each
  field's variable. A prefix, alias or generator the module does not show, a base of a
  module not scanned adding fields not spelled here, or a `model_config` changed after
  the class (`Knobs.model_config["env_prefix"] = ...`), is `$?` where some declared
  variable could fit;
- a settings object read by name: Dynaconf's `Dynaconf(envvar_prefix="SGLANG")` (or
  `LazySettings`, made here or a module-level one imported) read by attribute, `.get`,
  key or call reads `SGLANG_<KEY>`; a key not shown, or the object used whole, is `$?`;
  and an unknown library's object made with a prefix keyword (`envvar_prefix=`,
  `env_prefix=`) some declared variable starts with is `$?` where it is made;
- a table of getters, one per variable (vLLM's `envs.py`: `environment_variables =
  {"SGLANG_PAGE_SIZE": lambda: int(os.getenv("SGLANG_PAGE_SIZE", "16"))}`, or entries a
  factory or `functools.partial` makes, `env_int("SGLANG_PAGE_SIZE", 16)`): its entries'
  reads are what a use of the table reads, an entry by a spelled key
  (`environment_variables["SGLANG_PAGE_SIZE"]()`) that entry's, any other use (a key
  not shown, `.items()`, `.values()`, the table handed on: vLLM's hash loop calling every
  getter) every entry's. Its keys alone (`in`, `.keys()`, `len`, a loop over it) read
  nothing, and the module's own `__getattr__` and `__dir__` are the table's dispatch,
  whose reads are reported where `envs.NAME` is loaded. The table travels to importers
  among the module's constants (shape ENV_TABLE), as other constants do;
- a config or command-line library, one table of shapes (_LIBRARIES): OmegaConf's
  `${oc.env:NAME}` templates, parsers taking their options from the environment by a
  prefix (jsonargparse, configargparse) or per option (`env_var=`), and getter objects
  (environs' `Env()`, python-decouple's `config`) reading the name they are given;
- an environment helper object carried one hop (`self.env = Env()`, `env: Env`,
  `make_env()`): what its method calls may be spelled as among the helper entries
  (carried_helpers), for the project pass's helper calls.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from configbags.migrate.envkeys import KeyCompiler, Pattern, declared_reads, patterns
from configbags.migrate.holders import dotted_name
from configbags.migrate.scanmodel import ENV_UNRESOLVED, env_subject

if TYPE_CHECKING:
    from configbags.migrate.doors import ModuleStrings

# The shape of a getter table's row among a module's constants (FlowFacts.constants):
# (name, ENV_TABLE, "key\0leaf\0key\0leaf..."), each leaf what its entry reads
ENV_TABLE = "env_table"
# a settings class's row (_Known.encode): its subclasses in importers read under its settings
SETTINGS_CLASS = "settings_class"
_SETTINGS_BASES = frozenset({
    "pydantic_settings.BaseSettings", "pydantic_settings.main.BaseSettings", "pydantic.BaseSettings",
    "pydantic.v1.BaseSettings", "pydantic.env_settings.BaseSettings",
})
# the module-level functions of a table's module that dispatch to it by name
_TABLE_DISPATCH = frozenset({"__getattr__", "__dir__"})
# what a use of a table asks that reads no entry: its keys
_TABLE_KEYS = frozenset({"keys", "__contains__", "__len__"})
_ALIAS_KEYWORDS = ("validation_alias", "alias", "env")
# the keyword that gives a settings class its prefix where it is made
_INIT_PREFIX = "_env_prefix"
# how many module-level type aliases (`Page = Annotated[...]`) an annotation is followed through
_MAX_ALIAS_DEPTH = 4
Row = tuple[Any, ...]


# ---- getter tables


def env_tables(
    tree: ast.Module, reads: Iterable[Row], env_params: Iterable[Row] = (),
) -> list[tuple[str, str, str]]:
    """The module's getter tables, as constants rows: a dict bound once at the top level
    whose entries (a lambda, a module function by name, or one a factory or
    `functools.partial` makes) read the environment. `env_params` are the module's
    functions that take a variable's name as a parameter (FlowFacts.env_params)."""
    # (a library's template in a dict, `{"page": "${oc.env:NAME}"}`, is read where it is written)
    rows = [row for row in reads if row[6] == "environ" and row[7] != _FORM]
    if not rows:
        return []
    keyed = frozenset(row[0] for row in env_params)
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
            for leaf in sorted(_entry_reads(entry, rows, keyed)):
                pairs += [key.value, leaf]
        if pairs:
            found.append((target.id, ENV_TABLE, "\0".join(pairs)))
    return found


def _entry_reads(entry: ast.expr, rows: list[Row], keyed: frozenset[str]) -> set[str]:
    """The leaves the reads inside `entry` (or, for a name, in that function) have. A
    getter a module function makes (`env_int("SGLANG_PAGE_SIZE", 16)`,
    `functools.partial(_int_env, "SGLANG_PAGE_SIZE")`) reads what that function's body
    reads, save where its parameter is the key: that name is read at the call, inside the
    entry (the environment helper calls of configbags.migrate.flows), and a name it cannot
    tell is `$?` there."""
    if isinstance(entry, ast.Name):
        return {row[1] for row in rows if row[0] == entry.id}
    start = (entry.lineno, entry.col_offset)
    end = (entry.end_lineno or entry.lineno, entry.end_col_offset or entry.col_offset)
    found = {row[1] for row in rows if start <= (row[2], row[3]) and (row[4], row[5]) <= end}
    maker = _maker(entry)
    if maker is not None:
        found |= {
            row[1] for row in rows
            if (row[0] == maker or row[0].startswith(maker + ".")) and not (maker in keyed and row[1] == ENV_UNRESOLVED)
        }
    return found


def _maker(entry: ast.expr) -> str | None:
    """The module function by name that makes the entry's getter: `f(...)`, or the
    function `functools.partial(f, ...)` binds."""
    if not isinstance(entry, ast.Call):
        return None
    func = entry.func
    if (isinstance(func, ast.Attribute) and func.attr == "partial") or (isinstance(func, ast.Name) and func.id == "partial"):
        first = entry.args[0] if entry.args else None
        return first.id if isinstance(first, ast.Name) else None
    return func.id if isinstance(func, ast.Name) else None


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


def settings_reads(
    tree: ast.Module, text: str, declared: frozenset[str], strings: ModuleStrings,
    imported: Iterable[tuple[str, str, str]] = (),
) -> tuple[list[Row], list[tuple[str, str, str]]]:
    """The reads of the module's pydantic-settings classes, at each field (read rows):
    a class defined at the top level or in a function, one `create_model` makes, and a
    settings class given its prefix where it is made (`Knobs(_env_prefix="SGLANG_")`);
    and the module's top-level settings classes as constants rows (shape SETTINGS_CLASS),
    so a subclass in an importer reads under their settings. `imported`: the other
    modules' constants the module imports (FlowInput.constants)."""
    told = {spelled: _Known.decode(value) for spelled, shape, value in imported if shape == SETTINGS_CLASS}
    if not declared or (
        "BaseSettings" not in text and _INIT_PREFIX not in text and not told and "SettingsSource" not in text
    ):
        return [], []
    imported_names = _imported_names(tree)
    classes: dict[str, _Settings] = {}
    known: dict[str, _Known] = {}
    fields: dict[str, list[tuple[str, ast.expr, list[ast.Call]]]] = {}
    reads: list[Row] = []
    exports: list[tuple[str, str, str]] = []
    for node, qualname, scope in _classes(tree):
        bases = [_resolved(base, imported_names) for base in node.bases]
        # a base of this module by its name, or one of another scanned module by the name
        # the module spells it with (`EngSettings`, `sb.EngSettings`)
        parents = [known.get(name) or told.get(dotted_name(base)) for name, base in zip(bases, node.bases, strict=True)]
        inherited = [parent for parent in parents if parent is not None]
        if not inherited and not _SETTINGS_BASES.intersection(bases):
            continue
        settings, changed = _Settings.of(node, [parent.settings for parent in inherited], strings, scope)
        classes[node.name] = settings
        # a base neither the library's nor a settings class known here may add fields no
        # code here spells
        unseen = any(parent.unseen for parent in inherited) or any(
            parent is None and name not in _SETTINGS_BASES and name not in ("object", "")
            for name, parent in zip(bases, parents, strict=True)
        )
        own = _fields(node, tree)
        fields[node.name] = [*(f for name in bases for f in fields.get(name, ())), *own]
        named = [(field, target, _aliases(calls, strings, [*scope, node]) if field else None) for field, target, calls in own]
        # the bases' fields are read under the settings this class changes (a prefix of its own)
        handed = [(field, node, names) for parent in inherited for field, names in parent.fields] if changed else []
        reads += settings.reads(qualname, node, [*handed, *named], declared, [*scope, node], unseen)
        known[node.name] = _Known(
            settings, [*(f for parent in inherited for f in parent.fields), *((f, n) for f, _, n in named)], unseen,
        )
        if not scope:
            exports.append((node.name, SETTINGS_CLASS, known[node.name].encode()))
    if "create_model" in text:
        reads += _created(tree, imported_names, classes, declared, strings)
    if _INIT_PREFIX in text:
        reads += _prefixed_where_made(tree, classes, fields, declared, strings)
    made = _made_classes(tree, imported_names, classes)
    reads += _made_by_call(tree, imported_names, classes, declared)
    reads += _sources_used(tree, imported_names)
    if "model_config" in text:
        reads += _config_changed(tree, {*known, *told, *made}, declared)
    return reads, exports


class _Known:
    """A settings class as its subclasses see it: its settings, its fields (name, the
    names its alias gives: [] none, None not shown) and whether a base not known may add
    fields no code shows. Travels to importers as a constants row (encode)."""

    def __init__(self, settings: _Settings, fields: list[tuple[str, list[str] | None]], unseen: bool) -> None:
        self.settings = settings
        self.fields = fields
        self.unseen = unseen

    def encode(self) -> str:
        s = self.settings
        head = [
            "?" if s.prefix is None else "=" + s.prefix, "1" if s.case_sensitive else "0",
            "" if s.delimiter is None else "=" + s.delimiter, _encode_generator(s.generator), "1" if self.unseen else "0",
        ]
        return "\0".join([*head, *(f"{name}\1{'?' if names is None else chr(2).join(names)}" for name, names in self.fields)])

    @classmethod
    def decode(cls, value: str) -> _Known:
        prefix, case, delimiter, generator, unseen, *rows = value.split("\0")
        settings = _Settings(
            None if prefix == "?" else prefix[1:], case == "1", delimiter[1:] if delimiter else None, _decode_generator(generator),
        )
        found: list[tuple[str, list[str] | None]] = []
        for row in rows:
            name, _, names = row.partition("\1")
            found.append((name, None if names == "?" else names.split("\2") if names else []))
        return cls(settings, found, unseen == "1")


# the settings of a class that decide which variables its fields are read from
_ENV_CONFIG = frozenset({
    "env_prefix", "alias_generator", "case_sensitive", "env_nested_delimiter", "env_prefix_target",
    "validate_by_name", "populate_by_name",
})
# the calls that change a class's `model_config` in place
_CONFIG_MUTATORS = frozenset({"update", "setdefault", "__setitem__", "__ior__"})


def _config_changed(tree: ast.Module, classes: set[str], declared: frozenset[str]) -> list[Row]:
    """`Knobs.model_config["env_prefix"] = ...`, `.update(...)`, `|=`, a new `model_config`
    or `setattr(Knobs, "model_config", ...)`, after the class: pydantic-settings reads
    the settings as they are when the class is made, so its fields' variables are no
    longer the ones the class shows: `$?` (a key the change shows that is no environment
    setting, `["extra"]`, reads nothing)."""
    if not declared:
        return []

    def config_of(expr: ast.expr) -> bool:
        return isinstance(expr, ast.Attribute) and expr.attr == "model_config" and dotted_name(expr.value) in classes

    found: list[Row] = []
    for function, node in _nodes(tree):
        keys: list[str | None] | None = None  # the settings changed (None in it: not shown)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if config_of(target):
                    keys = [None]
                elif isinstance(target, ast.Subscript) and config_of(target.value):
                    key = target.slice
                    keys = [key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _CONFIG_MUTATORS and config_of(func.value):
                keys = [k.arg for k in node.keywords]
                for arg in node.args[:1] if func.attr in ("update", "__ior__") else []:
                    keys += [key for key, _ in _config_items(arg)]
                if func.attr in ("setdefault", "__setitem__") and node.args:
                    first = node.args[0]
                    keys.append(first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None)
            elif _last(func) == "setattr" and len(node.args) >= 2 and dotted_name(node.args[0]) in classes and (
                not isinstance(node.args[1], ast.Constant) or node.args[1].value == "model_config"
            ):
                keys = [None]
        if keys is not None and any(key is None or key in _ENV_CONFIG for key in keys):
            found.append(_row(function, ENV_UNRESOLVED, node))
    return found


def _nodes(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(function, node) of every node of the module, with the function it is in."""
    stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
    while stack:
        node, function = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = child.name if function == "<module>" else f"{function}.{child.name}"
            yield function, child
            stack.append((child, inner))


def _classes(tree: ast.Module) -> Iterator[tuple[ast.ClassDef, str, list[ast.AST]]]:
    """(class, qualname, the scopes around it) of every class of the module, outermost
    first, the ones in function bodies too."""
    stack: list[tuple[ast.AST, str, list[ast.AST]]] = [(tree, "", [])]
    while stack:
        node, prefix, scope = stack.pop(0)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    yield child, qualname, scope
                stack.append((child, qualname + ".", [*scope, child]))
            elif not isinstance(child, ast.expr):
                stack.append((child, prefix, scope))


def _created(
    tree: ast.Module, imported: dict[str, str], classes: dict[str, _Settings], declared: frozenset[str],
    strings: ModuleStrings,
) -> list[Row]:
    """`create_model("EnvCfg", __base__=BaseSettings, sglang_page_size=(int, 16))`: a
    settings class whose fields are the keywords, read where it is made."""
    reads: list[Row] = []
    for function, scope, call in _calls(tree):
        if _last(call.func) != "create_model":
            continue
        base = next((k.value for k in call.keywords if k.arg == "__base__"), None)
        bases = list(base.elts) if isinstance(base, ast.Tuple) else [base] if base is not None else []
        names = [_resolved(b, imported) for b in bases]
        inherited = [classes[name] for name in names if name in classes]
        if not inherited and not _SETTINGS_BASES.intersection(names):
            continue
        settings = inherited[0] if inherited else _Settings("", False, None)
        config = next((k.value for k in call.keywords if k.arg == "__config__"), None)
        if config is not None:
            settings = settings.with_config(dict(_config_items(config)), strings, scope)
        made: list[tuple[str, ast.expr, list[ast.Call]]] = []
        for keyword in call.keywords:
            if keyword.arg is None:
                made.append(("", keyword.value, []))  # `**fields`: names not shown
            elif not keyword.arg.startswith("__") and not keyword.arg.startswith("_"):
                spec = keyword.value.elts if isinstance(keyword.value, ast.Tuple) else [keyword.value]
                made.append((keyword.arg, keyword.value, [*_field_calls(spec[0], tree), *_field_calls(spec[-1], tree)]))
        reads += settings.reads(function, call, _named(made, strings, scope), declared, scope, False)
    return reads


# the calls that make a class at run time from its bases (`type(name, bases, ns)`)
_CLASS_MAKERS = frozenset({"type", "new_class", "create_model"})
# pydantic-settings' sources read the environment under the settings they are given, of
# a class whose fields the call does not show (`EnvSettingsSource(S, env_prefix="X_")()`)
_ENV_SOURCES = frozenset({"EnvSettingsSource", "DotEnvSettingsSource"})


def _settings_bases(call: ast.Call, imported: dict[str, str], classes: dict[str, _Settings]) -> list[_Settings] | None:
    """The settings of a class-making call's settings bases (`create_model(__base__=...)`,
    `type(name, (Base,), ns)`, `types.new_class(name, (Base,), ...)`); None where it makes
    no settings class ([]: the library's own base only)."""
    maker = _last(call.func)
    if maker not in _CLASS_MAKERS:
        return None
    if maker == "create_model":
        base = next((k.value for k in call.keywords if k.arg == "__base__"), None)
    else:
        base = call.args[1] if len(call.args) >= 2 else next((k.value for k in call.keywords if k.arg == "bases"), None)
    bases = list(base.elts) if isinstance(base, (ast.Tuple, ast.List)) else [base] if base is not None else []
    names = [_resolved(b, imported) for b in bases]
    if not any(name in classes for name in names) and not _SETTINGS_BASES.intersection(names):
        return None
    return [classes[name] for name in names if name in classes]


def _made_classes(tree: ast.Module, imported: dict[str, str], classes: dict[str, _Settings]) -> set[str]:
    """The names bound to a settings class a call makes (`S = create_model(...,
    __base__=BaseSettings)`): a later `S.model_config[...] = ...` changes its settings."""
    made: set[str] = set()
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Assign) else None
        if isinstance(node, ast.Assign) and isinstance(value, ast.Call) and _settings_bases(value, imported, classes) is not None:
            made.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return made


def _made_by_call(
    tree: ast.Module, imported: dict[str, str], classes: dict[str, _Settings], declared: frozenset[str],
) -> list[Row]:
    """`type("S", (Knobs,), {...})`, `types.new_class("S", (BaseSettings,), ...)`: a
    settings class whose fields are in a namespace the scanner does not read: `$?`, save
    under a base whose prefix no declared variable starts with. (`create_model`'s keyword
    fields are read by _created.)"""
    reads: list[Row] = []
    for function, _, call in _calls(tree):
        if _last(call.func) == "create_model":
            continue
        inherited = _settings_bases(call, imported, classes)
        if inherited is None:
            continue
        settings = inherited[0] if inherited else _Settings("", False, None)
        if settings.prefix is None or settings.generator is not None or settings._under(settings.prefix, declared):
            reads.append(_row(function, ENV_UNRESOLVED, call))
    return reads


def _sources_used(tree: ast.Module, imported: dict[str, str]) -> list[Row]:
    """A pydantic-settings environment source made by the module (`EnvSettingsSource(S,
    env_prefix=...)`): it reads the variables of a class's fields under settings the call
    may change: `$?`."""
    reads: list[Row] = []
    for function, _, call in _calls(tree):
        path = _resolved(call.func, imported)
        if path.rpartition(".")[2] in _ENV_SOURCES and path.startswith("pydantic_settings"):
            reads.append(_row(function, ENV_UNRESOLVED, call))
    return reads


def _prefixed_where_made(
    tree: ast.Module, classes: dict[str, _Settings], fields: dict[str, list[tuple[str, ast.expr, list[ast.Call]]]],
    declared: frozenset[str], strings: ModuleStrings,
) -> list[Row]:
    """`Knobs(_env_prefix="SGLANG_")`: the fields read under the prefix given where the
    class is made. A class of another module (whose fields no code here shows) is `$?`
    where some declared variable starts with the prefix."""
    reads: list[Row] = []
    for function, scope, call in _calls(tree):
        given = next((k.value for k in call.keywords if k.arg == _INIT_PREFIX), None)
        if given is None:
            continue
        prefix = strings.value(given, scope)
        name = _last(call.func)
        settings = classes.get(name)
        if settings is None or not isinstance(call.func, ast.Name):
            if prefix is None or _Settings("", False, None)._under(prefix, declared):
                reads.append(_row(function, ENV_UNRESOLVED, given))
            continue
        settings = settings.with_config({"env_prefix": given}, strings, scope)
        reads += settings.reads(function, given, _named(fields.get(name, []), strings, scope), declared, scope, False)
    return reads


def _named(
    fields: Iterable[tuple[str, ast.expr, list[ast.Call]]], strings: ModuleStrings, scope: list[ast.AST],
) -> list[tuple[str, ast.AST, list[str] | None]]:
    """(name, where, the names its alias gives) of each field (_aliases)."""
    return [(field, target, _aliases(calls, strings, scope) if field else None) for field, target, calls in fields]


def _calls(tree: ast.Module) -> Iterator[tuple[str, list[ast.AST], ast.Call]]:
    """(function, the scopes around it, call) of every call of the module."""
    stack: list[tuple[ast.AST, str, list[ast.AST]]] = [(tree, "<module>", [])]
    while stack:
        node, function, scope = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = child.name if function == "<module>" else f"{function}.{child.name}"
                stack.append((child, inner, [*scope, child]))
                continue
            if isinstance(child, ast.Call):
                yield function, scope, child
            stack.append((child, function, scope))


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """local name -> dotted path, of the module's top-level imports, those in a top-level
    `try`/`if`/`with` too. A name imported in alternative branches (the pydantic v1/v2
    idiom `try: from pydantic_settings import BaseSettings` / `except ImportError: from
    pydantic import BaseSettings`, in any order) keeps a reader's path (a settings base,
    a library of _LIBRARIES), as any branch may be the one that runs."""
    names: dict[str, str] = {}
    for node in _top_level_statements(tree.body):
        for local, path in _bound_by_import(node):
            if names.get(local) not in _SETTINGS_BASES and names.get(local) not in _LIBRARIES:
                names[local] = path
    # an import in a function body binds a name there only, but a class defined in that
    # body (a settings factory) takes its base from it: a name no top-level import binds
    for found in ast.walk(tree):
        if isinstance(found, (ast.Import, ast.ImportFrom)):
            for local, path in _bound_by_import(found):
                names.setdefault(local, path)
    return names


def _top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import time: the module's, and those nested in its compound
    statements other than functions and classes."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _top_level_statements(getattr(node, field, None) or [])
        for handler in getattr(node, "handlers", None) or []:
            yield from _top_level_statements(handler.body)


def _bound_by_import(node: ast.stmt) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        for alias in node.names:
            yield alias.asname or alias.name, f"{node.module}.{alias.name}"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            head = alias.name.partition(".")[0]
            yield alias.asname or head, alias.name if alias.asname else head


def _resolved(expr: ast.expr, imported: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.insert(0, expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return ""
    head = imported.get(expr.id, expr.id)
    return ".".join([head, *parts])


# an alias generator's template: ("L", text) a literal, ("N", how) the field's name as
# `how` turns it ("" itself, "upper", "lower", "camel", "pascal"); "?": one not shown
Generator = tuple[tuple[str, str], ...] | str | None


class _Settings:
    """A settings class's environment settings: its prefix (None: not shown), case rule,
    nested delimiter and alias generator."""

    def __init__(
        self, prefix: str | None, case_sensitive: bool, delimiter: str | None, generator: Generator = None,
    ) -> None:
        self.prefix = prefix
        self.case_sensitive = case_sensitive
        self.delimiter = delimiter
        self.generator = generator

    @classmethod
    def of(
        cls, node: ast.ClassDef, inherited: list[_Settings], strings: ModuleStrings, scope: list[ast.AST],
    ) -> tuple[_Settings, bool]:
        """The class's settings, and whether it sets any of its own."""
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
        return base.with_config(found, strings, [*scope, node]), bool(_ENV_CONFIG.intersection(found))

    def with_config(self, found: dict[str, ast.expr | None], strings: ModuleStrings, scope: list[ast.AST]) -> _Settings:
        """These settings with what `found` (setting -> its value, None: not shown) sets."""
        prefix: str | None = self.prefix
        if "env_prefix" in found:
            given = found["env_prefix"]
            prefix = strings.value(given, scope) if given is not None else None
        case_sensitive = self.case_sensitive
        if "case_sensitive" in found:
            given = found["case_sensitive"]
            case_sensitive = isinstance(given, ast.Constant) and given.value is True
        delimiter = self.delimiter
        if "env_nested_delimiter" in found:
            given = found["env_nested_delimiter"]
            delimiter = strings.value(given, scope) if given is not None else "?"
        generator = self.generator
        if "alias_generator" in found:
            generator = _generator(found["alias_generator"], strings, scope)
        elif "env_prefix" in found and found["env_prefix"] is None:
            generator = "?"  # `**other`: any setting
        return _Settings(prefix, case_sensitive, delimiter, generator)

    def reads(
        self, qualname: str, node: ast.AST, fields: Iterable[tuple[str, ast.AST, list[str] | None]],
        declared: frozenset[str], scope: list[ast.AST], unseen: bool,
    ) -> list[Row]:
        """The reads of `fields` (name, where, the names its alias gives: [] none, None
        not shown; a name "" for fields not shown) under these settings, reported at
        `qualname`; `unseen`: a base may add fields no code here spells."""
        found: list[Row] = []
        if unseen and (self.prefix is None or self.generator is not None or self._under(self.prefix, declared)):
            found.append(_row(qualname, ENV_UNRESOLVED, node))
        for field, target, names in fields:
            if names is None or (not names and self.generator == "?"):
                if self._under("", declared):
                    found.append(_row(qualname, ENV_UNRESOLVED, target))
                continue
            if not names and isinstance(self.generator, tuple):
                # a generated alias is the name the field is read by, with no prefix
                names = [_generate(self.generator, field)]
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


# pydantic's own generators (pydantic.alias_generators), by name
_NAMED_GENERATORS = {"to_camel": "camel", "to_pascal": "pascal", "to_snake": ""}
_CASE_METHODS = frozenset({"upper", "lower"})


def _generator(expr: ast.expr | None, strings: ModuleStrings, scope: list[ast.AST]) -> Generator:
    """The template of an `alias_generator` setting: a lambda whose body joins literals
    and the field's name (`lambda f: "SGLANG_" + f.upper()`, an f-string), one of
    pydantic's generators, or `AliasGenerator(...)`'s `validation_alias` (else `alias`; a
    `serialization_alias` alone names no variable). None for none, "?" for one not shown."""
    if isinstance(expr, ast.Constant) and expr.value is None:
        return None
    if isinstance(expr, ast.Call) and _last(expr.func) == "AliasGenerator":
        given = {k.arg: k.value for k in expr.keywords}
        if None in given:
            return "?"
        chosen = given.get("validation_alias") or (expr.args[0] if expr.args else None) or given.get("alias")
        return _generator(chosen, strings, scope) if chosen is not None else None
    if isinstance(expr, ast.Lambda) and len(expr.args.args) == 1 and not expr.args.vararg:
        parts = _template(expr.body, expr.args.args[0].arg, strings, [*scope, expr])
        return tuple(parts) if parts is not None else "?"
    if expr is not None and _last(expr) in _NAMED_GENERATORS:
        return (("N", _NAMED_GENERATORS[_last(expr)]),)
    return "?"


def _template(expr: ast.expr, param: str, strings: ModuleStrings, scope: list[ast.AST]) -> list[tuple[str, str]] | None:
    """The parts of a generator's body, or None where it is not a join of literals and the name."""
    if not any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(expr)):
        text = strings.value(expr, scope)
        return [("L", text)] if text is not None else None
    if isinstance(expr, ast.Name):
        return [("N", "")]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left = _template(expr.left, param, strings, scope)
        right = _template(expr.right, param, strings, scope) if left is not None else None
        return left + right if left is not None and right is not None else None
    if isinstance(expr, ast.JoinedStr):
        parts: list[tuple[str, str]] = []
        for value in expr.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion not in (-1, ord("s")) or value.format_spec is not None:
                    return None
                value = value.value
            part = _template(value, param, strings, scope)
            if part is None:
                return None
            parts += part
        return parts
    if (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _CASE_METHODS
        and not expr.args and not expr.keywords
    ):
        inner = _template(expr.func.value, param, strings, scope)
        if inner is None or any(kind == "N" and how for kind, how in inner):
            return None
        method = expr.func.attr
        return [(kind, getattr(text, method)() if kind == "L" else method) for kind, text in inner]
    return None


def _generate(generator: tuple[tuple[str, str], ...], field: str) -> str:
    """The alias a generator's template makes of a field's name."""
    out: list[str] = []
    for kind, text in generator:
        if kind == "L":
            out.append(text)
        elif text in _CASE_METHODS:
            out.append(getattr(field, text)())
        elif text in ("camel", "pascal"):
            words = field.split("_")
            joined = "".join(word[:1].upper() + word[1:] for word in words)
            out.append(joined if text == "pascal" else joined[:1].lower() + joined[1:])
        else:
            out.append(field)
    return "".join(out)


def _encode_generator(generator: Generator) -> str:
    if generator is None or isinstance(generator, str):
        return generator or ""
    return "=" + "\1".join(kind + text for kind, text in generator)


def _decode_generator(value: str) -> Generator:
    if value in ("", "?"):
        return value or None
    return tuple((part[:1], part[1:]) for part in value[1:].split("\1"))


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


def _fields(node: ast.ClassDef, tree: ast.Module) -> list[tuple[str, ast.expr, list[ast.Call]]]:
    """(name, target, its `Field(...)` calls) of each field the class body annotates: the
    value's, and those in an `Annotated[int, Field(...)]` annotation (or a module-level
    name bound to one)."""
    found: list[tuple[str, ast.expr, list[ast.Call]]] = []
    for item in node.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        name = item.target.id
        annotation = ast.unparse(item.annotation)
        if name.startswith("_") or name == "model_config" or "ClassVar" in annotation:
            continue
        found.append((name, item.target, [*_field_calls(item.annotation, tree), *_field_calls(item.value, tree)]))
    return found


def _field_calls(expr: ast.expr | None, tree: ast.Module, depth: int = 0) -> list[ast.Call]:
    """The `Field(...)` calls `expr` is or annotates with (`Annotated[T, Field(...)]`, a
    module-level alias of one), innermost first."""
    if expr is None or depth > _MAX_ALIAS_DEPTH:
        return []
    if isinstance(expr, ast.Call):
        return [expr] if _last(expr.func) == "Field" else []
    if isinstance(expr, ast.Name):
        bound = [
            stmt.value for stmt in tree.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _target(stmt) == expr.id and stmt.value is not None
        ]
        return _field_calls(bound[0], tree, depth + 1) if len(bound) == 1 and isinstance(bound[0], (ast.Subscript, ast.Call)) else []
    if isinstance(expr, ast.Subscript):
        parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if _last(expr.value) == "Annotated":
            # (pydantic takes a field's metadata from the outermost `Annotated` only, and
            # from those nested in its first argument)
            return [*_field_calls(parts[0], tree, depth + 1), *(c for p in parts[1:] for c in _field_calls(p, tree, depth + 1))]
    return []


def _aliases(calls: Sequence[ast.Call], strings: ModuleStrings, scope: list[ast.AST]) -> list[str] | None:
    """The names a field's alias gives (`Field(validation_alias="X")`, `AliasChoices`),
    [] for none (the prefix and the field's name), None for one not shown. Of several
    `Field(...)` calls, the last one giving an alias counts, as pydantic merges them."""
    for call in reversed(calls):
        for keyword in call.keywords:
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
# A spelling's part for any element of a container (`ENVS[]` for `ENVS = [ENV]`)
ELEMENT = "[]"
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
    if expr is None or depth > _MAX_ALIAS_DEPTH:
        return set()
    if isinstance(expr, ast.Subscript):
        # an element of a container of it (`ENVS[0]`, `TABLE["env"]`: `ENVS[]`)
        return {f"{spelled}{ELEMENT}" for spelled in _carried(expr.value, function, cls, tree, depth + 1)}
    if isinstance(expr, ast.Call):
        maker = dotted_name(expr.func)
        if not maker:
            # what a call of a carrier gives (`HELPERS[0]()`, `make()()`)
            return {f"{spelled}()" for spelled in _carried(expr.func, function, cls, tree, depth + 1)}
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
        found = {dotted_name(expr)} - {""}
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
                    found |= annotated_instances(arg.annotation)
                    found |= _carried(defaults.get(name), None, None, tree, depth + 1)
            for sub in ast.walk(function):
                found |= _assigned(sub, lambda target: isinstance(target, ast.Name) and target.id == name, function, None, tree, depth)
                if isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(sub.target, ast.Name) and (
                    sub.target.id == name
                ):
                    # `for env in ENVS`: an element of what it walks
                    found |= {f"{spelled}{ELEMENT}" for spelled in _carried(sub.iter, function, None, tree, depth + 1)}
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
        return annotated_instances(node.annotation) | _value_carries(node.value, function, cls, tree, depth)
    return set()


def _value_carries(
    value: ast.expr | None, function: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.AST | None,
    tree: ast.Module, depth: int,
) -> set[str]:
    if isinstance(value, ast.Call) and _last(value.func) in _FIELD_CALLS:
        found: set[str] = set()
        for keyword in value.keywords:
            if keyword.arg in _FACTORY_KEYWORDS and dotted_name(keyword.value):
                found.add(f"{dotted_name(keyword.value)}()")
            elif keyword.arg == "default":
                found |= _carried(keyword.value, function, cls, tree, depth + 1)
        if _last(value.func) == "Factory" and value.args and dotted_name(value.args[0]):
            found.add(f"{dotted_name(value.args[0])}()")
        return found
    return _carried(value, function, cls, tree, depth + 1)


def annotated_instances(annotation: ast.expr | None) -> set[str]:
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
        name = dotted_name(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else ""
        if name and name not in ("None", "Optional", "typing.Optional"):
            found.add(f"{name}()")
    return found


# ---- config and command-line libraries that fill values from the environment

# A library's shape, by the callable (or instance) as its module spells it:
# - GETTER: an object reading the variable it is called with, or asked by a method
#   (`config("NAME")`, `env.int("NAME")`); GETTER_MAKER makes one;
# - PARSER: a command-line parser whose options are taken from the environment by a
#   prefix (`SGLANG_` + the option's name), naming as its library does; CLI: a parser
#   built from a function's parameters;
# - TEMPLATE_FILE: a loader of a file whose templates (`${oc.env:NAME}`) the module does not show.
GETTER, GETTER_MAKER, PARSER, CLI, TEMPLATE_FILE = "getter", "getter_maker", "parser", "cli", "template_file"
# jsonargparse reads the environment whatever `default_env=` says (`JSONARGPARSE_DEFAULT_ENV=true`
# overrides it); configargparse only under `auto_env_var_prefix=`
_JSONARGPARSE, _CONFIGARGPARSE = "jsonargparse", "configargparse"
_LIBRARIES: dict[str, tuple[str, str]] = {
    "decouple.config": (GETTER, "decouple"),
    "decouple.AutoConfig": (GETTER_MAKER, "decouple"),
    "decouple.Config": (GETTER_MAKER, "decouple"),
    "environs.env": (GETTER, "environs"),
    "environs.Env": (GETTER_MAKER, "environs"),
    "jsonargparse.ArgumentParser": (PARSER, _JSONARGPARSE),
    "jsonargparse.CLI": (CLI, _JSONARGPARSE),
    "jsonargparse.auto_cli": (CLI, _JSONARGPARSE),
    "configargparse.ArgParser": (PARSER, _CONFIGARGPARSE),
    "configargparse.ArgumentParser": (PARSER, _CONFIGARGPARSE),
    "configargparse.get_argument_parser": (PARSER, _CONFIGARGPARSE),
    "configargparse.getArgumentParser": (PARSER, _CONFIGARGPARSE),
    "omegaconf.OmegaConf.load": (TEMPLATE_FILE, "omegaconf"),
}
_LIBRARY_WORDS = ("decouple", "environs", "jsonargparse", "configargparse", "omegaconf")
# a getter's methods that read no variable by the name they are given
_GETTER_NOT_READS = frozenset({"read_env", "prefixed", "dump", "seal", "add_parser", "parser_for", "add_parser_from_type"})
# the keyword of each library's prefix, and configargparse's per-option name
_PREFIX_KEYWORD = {_JSONARGPARSE: "env_prefix", _CONFIGARGPARSE: "auto_env_var_prefix"}
_OPTION_KEYWORD = "env_var"
# a parser's methods after which its options are still the ones the module adds
_PARSER_KEEPS = frozenset({
    "add_argument", "add", "parse_args", "parse_known_args", "parse_string", "parse_object", "parse_env",
    "print_help", "print_usage", "format_help", "format_usage", "error", "exit", "dump", "get_defaults",
})
# OmegaConf's environment resolver in a template (`${oc.env:NAME,default}`; OmegaConf 1's `${env:NAME}`)
_OC_ENV = re.compile(r"\$\{\s*(?:oc\.)?env\s*:\s*([^,}]*)")
_FORM = "config_library"


def library_reads(tree: ast.Module, text: str, declared: frozenset[str], strings: ModuleStrings) -> list[Row]:
    """The reads of the config and command-line libraries of _LIBRARIES (read rows)."""
    if not declared or not any(word in text for word in _LIBRARY_WORDS):
        return []
    imported = _imported_names(tree)
    if not any(path.partition(".")[0] in _LIBRARY_WORDS for path in imported.values()):
        return []
    return _Libraries(tree, declared, strings, imported).reads()


class _Libraries:
    def __init__(self, tree: ast.Module, declared: frozenset[str], strings: ModuleStrings, imported: dict[str, str]) -> None:
        self.tree = tree
        self.declared = declared
        self.strings = strings
        self.imported = imported
        self.found: list[Row] = []
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.omegaconf = any(path.partition(".")[0] in ("omegaconf", "hydra") for path in imported.values())
        # `with env.prefixed("SGLANG_"):` anywhere: a getter's names may have any prefix
        self.prefixed = any(path.partition(".")[0] == "environs" for path in imported.values()) and any(
            isinstance(node, ast.Attribute) and node.attr == "prefixed" for node in ast.walk(tree)
        )

    def reads(self) -> list[Row]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._call(node)
            elif self.omegaconf and isinstance(node, ast.Constant) and isinstance(node.value, str) and "env" in node.value:
                self._template(node, node.value)
        return self.found

    # where a node is, for the resolver and the rows

    def _scopes(self, node: ast.AST) -> list[ast.AST]:
        scopes: list[ast.AST] = []
        current = self.parents.get(id(node))
        while current is not None:
            if isinstance(current, _SCOPES):
                scopes.insert(0, current)
            current = self.parents.get(id(current))
        return scopes

    def _function(self, node: ast.AST) -> str:
        names = [s.name for s in self._scopes(node) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        return ".".join(names) or "<module>"

    def _report(self, node: ast.AST, leaf: str) -> None:
        self.found.append((*_row(self._function(node), leaf, node)[:7], _FORM, "process"))

    def _report_names(self, node: ast.AST, found: Iterable[Pattern]) -> None:
        names, unresolved = declared_reads(found, self.declared)
        if unresolved:
            self._report(node, ENV_UNRESOLVED)
        for name in names:
            self._report(node, env_subject(name))

    def _shape(self, expr: ast.expr) -> tuple[str, str] | None:
        """The library shape `expr` names (through the module's imports), or None."""
        return _LIBRARIES.get(_resolved(expr, self.imported))

    # OmegaConf

    def _template(self, node: ast.AST, value: str) -> None:
        """A string with OmegaConf's environment resolver reads the variable it names."""
        for match in _OC_ENV.finditer(value):
            name = match.group(1).strip().strip("'\"")
            if "$" in name or not name:
                self._report(node, ENV_UNRESOLVED)  # `${oc.env:${other}}`: a name built
            elif name in self.declared:
                self._report(node, env_subject(name))

    # calls

    def _call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg == _OPTION_KEYWORD and self._in_library(node, _CONFIGARGPARSE):
                self._option(keyword.value)
        shape = self._shape(node.func)
        if shape is not None:
            kind, library = shape
            if kind == GETTER:
                self._getter_call(node)
            elif kind == PARSER:
                self._parser(node, library)
            elif kind == CLI:
                self._cli(node, library)
            elif kind == TEMPLATE_FILE:
                self._report(node, ENV_UNRESOLVED)  # the file's templates are not shown here
            elif kind == GETTER_MAKER and library == "environs" and _true_keyword(node, "expand_vars"):
                self._report(node, ENV_UNRESOLVED)  # `$OTHER` in a value: a name no code shows
            return
        func = node.func
        receiver = func if isinstance(func, (ast.Name, ast.Call)) else (
            func.value if isinstance(func, ast.Attribute) and func.attr not in _GETTER_NOT_READS else None
        )
        if receiver is not None and self._is_getter(receiver):
            self._getter_call(node)

    def _in_library(self, node: ast.Call, library: str) -> bool:
        return any(path.partition(".")[0] == library for path in self.imported.values())

    def _is_getter(self, expr: ast.expr, depth: int = 0) -> bool:
        """Is `expr` a getter object: an imported instance, one made on the spot, or a
        name of the module bound to either?"""
        if depth > 4:
            return False
        shape = self._shape(expr)
        if shape is not None:
            return shape[0] == GETTER
        if isinstance(expr, ast.Call):
            made = self._shape(expr.func)
            return made is not None and made[0] == GETTER_MAKER
        if isinstance(expr, ast.Name):
            bound = self.strings.bound(expr, self._scopes(expr))
            return bool(bound) and any(value is not None and self._is_getter(value, depth + 1) for value, _ in bound or ())
        return False

    def _getter_call(self, node: ast.Call) -> None:
        """`config("NAME")`, `env.int("NAME")`: the variable its first argument names."""
        key = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("option", "name", "key")), None)
        if key is None or isinstance(key, ast.Starred):
            self._report(node, ENV_UNRESOLVED)
            return
        scopes = self._scopes(node)
        found = patterns(KeyCompiler(self.strings, None, None).compile(key, scopes), None)
        if self.prefixed:
            # `with env.prefixed("SGLANG_"):` somewhere: any text may lead the name
            found = frozenset(("", text + suffix if not wild else suffix, True) for text, suffix, wild in found)
        self._report_names(key, found)

    def _option(self, value: ast.expr) -> None:
        """configargparse's `env_var="NAME"`: the variable it names."""
        if isinstance(value, ast.Constant) and value.value is None:
            return
        self._report_names(value, patterns(KeyCompiler(self.strings, None, None).compile(value, self._scopes(value)), None))

    # parsers reading options by a prefix

    def _parser(self, node: ast.Call, library: str) -> None:
        prefix = self._prefix(node, library)
        if prefix == "":
            return  # configargparse without `auto_env_var_prefix=`: only `env_var=` options
        self._options_read(node, library, prefix, self._parser_options(node))

    def _cli(self, node: ast.Call, library: str) -> None:
        component = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "components"), None)
        options: list[str] | None = None
        function = next((
            n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(component, ast.Name) and n.name == component.id
        ), None)
        if function is not None and function.args.kwarg is None:
            options = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
        self._options_read(node, library, self._prefix(node, library), options)

    def _prefix(self, node: ast.Call, library: str) -> str | None:
        """The prefix as the module shows it: None where not shown ("" none, "?" ...)."""
        given = next((k.value for k in node.keywords if k.arg == _PREFIX_KEYWORD[library]), None)
        if library == _CONFIGARGPARSE:
            if given is None or (isinstance(given, ast.Constant) and given.value is None):
                return ""
            return self.strings.value(given, self._scopes(node))
        if given is None or (isinstance(given, ast.Constant) and given.value is True):
            return None  # the program's name
        if isinstance(given, ast.Constant) and given.value is False:
            return "\0"  # no prefix at all
        return self.strings.value(given, self._scopes(node))

    def _options_read(self, node: ast.Call, library: str, prefix: str | None, options: list[str] | None) -> None:
        """The declared variables the parser's options are read from (`$?` where its
        options are not all shown and some declared variable fits its prefix)."""
        if prefix == "\0":
            head: Pattern = ("", "", False)
        elif prefix is None:
            head = ("", "_" if library == _JSONARGPARSE else "", True)
        else:
            head = (prefix.replace("-", "_") + "_" if library == _JSONARGPARSE else prefix, "", False)
        if options is None:
            found = frozenset({(head[0].upper(), "", True)})
        else:
            found = frozenset(_env_name(head, option, library) for option in options)
        self._report_names(node, found)

    def _parser_options(self, node: ast.Call) -> list[str] | None:
        """The option names of a parser made by `node`: bound to a name whose every use is
        one of _PARSER_KEEPS (its `add_argument` calls giving the options), or used on
        the spot; None where it goes anywhere else (its options may be added there)."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in _PARSER_KEEPS:
            return []
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
            return None
        name = parent.targets[0].id
        scopes = self._scopes(node)
        scope: ast.AST = next((s for s in reversed(scopes) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), self.tree)
        options: list[str] = []
        for sub in ast.walk(scope):
            if not (isinstance(sub, ast.Name) and sub.id == name) or sub is parent.targets[0]:
                continue
            attribute = self.parents.get(id(sub))
            call = self.parents.get(id(attribute)) if attribute is not None else None
            if not (isinstance(attribute, ast.Attribute) and attribute.attr in _PARSER_KEEPS and isinstance(call, ast.Call)
                    and call.func is attribute):
                return None
            if attribute.attr in ("add_argument", "add"):
                option = self._dest(call)
                if option is None:
                    return None
                options.append(option)
        return options

    def _dest(self, call: ast.Call) -> str | None:
        given = next((k.value for k in call.keywords if k.arg == "dest"), None)
        if given is not None:
            return self.strings.value(given, self._scopes(call))
        flags = [self.strings.value(arg, self._scopes(call)) for arg in call.args]
        if any(flag is None for flag in flags) or not flags:
            return None
        long = [f for f in flags if f and f.startswith("--")]
        chosen = (long or flags)[0] or ""
        return chosen.lstrip("-").replace("-", "_")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _env_name(head: Pattern, option: str, library: str) -> Pattern:
    """The variable an option is read from, after the prefix `head`."""
    name = option.replace(".", "__") if library == _JSONARGPARSE else option.replace("-", "_")
    text, suffix, wild = head
    if wild:
        return (text.upper(), (suffix + name).upper(), True)
    return ((text + name).upper(), "", False)


def _true_keyword(node: ast.Call, name: str) -> bool:
    return any(k.arg == name and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in node.keywords)


# ---- settings objects read by name: Dynaconf, and unknown ones made with a prefix

# a Dynaconf object kept in a module-level name, as a constants row (value: its prefix as
# _DynaconfReads keeps it, "?" for one not shown): an importer's uses read under it
DYNACONF_OBJECT = "dynaconf_object"
_DYNACONF = frozenset({"dynaconf.Dynaconf", "dynaconf.LazySettings", "dynaconf.base.LazySettings"})
_DYNACONF_PREFIX = ("envvar_prefix", "ENVVAR_PREFIX_FOR_DYNACONF")
# its methods reading the key they are given (under the prefix; `get_environ` the raw name)
_DYNACONF_KEYED = frozenset({
    "get", "get_fresh", "exists", "as_int", "as_float", "as_bool", "as_json", "setdefault", "get_environ",
})
# its methods that read no setting, and those that read them all
_DYNACONF_NO_READ = frozenset({
    "set", "update", "setenv", "unset", "configure", "reload", "load_file", "validators", "clean", "execute_loaders",
})
_DYNACONF_WHOLE = frozenset({
    "to_dict", "as_dict", "items", "values", "keys", "store", "populate_obj", "from_env", "using_env", "dynaconf",
})
# keywords that give an unknown settings object its variables' prefix
_PREFIX_KEYWORDS = frozenset({"envvar_prefix", "env_prefix", "env_var_prefix"})
# the callables those keywords mean something else to, or that the other readers here know
# (configbags's own registry reads the environment through the accessors)
_PREFIX_KNOWN = ("configbags", "starlette", "jsonargparse", "configargparse", "pydantic", "pydantic_settings", "dynaconf", "click", "typer")
_PREFIX_KNOWN_NAMES = frozenset({"SettingsConfigDict", "ConfigDict", "dict"})


def object_reads(
    tree: ast.Module, text: str, declared: frozenset[str], strings: ModuleStrings,
    imported: Iterable[tuple[str, str, str]] = (),
) -> tuple[list[Row], list[tuple[str, str, str]]]:
    """The reads of Dynaconf objects (`settings = Dynaconf(envvar_prefix="SGLANG")`, also
    `LazySettings`, made here or imported from another module): `settings.PAGE_SIZE`,
    `.get("page_size")`, `["page_size"]` read `SGLANG_PAGE_SIZE` (the prefix, `_`, the
    key upper-cased; `DYNACONF_` by default, none for `envvar_prefix=False`), a key not
    shown or the object used whole or handed on `$?` where a declared variable fits the
    prefix. And an object of a library not known here made with a prefix keyword
    (`envvar_prefix=`, `env_prefix=`) some declared variable starts with: `$?` there. With
    the module-level Dynaconf objects, as constants rows (DYNACONF_OBJECT)."""
    told = {spelled: value for spelled, shape, value in imported if shape == DYNACONF_OBJECT}
    if not declared or not (told or any(word in text for word in (*_PREFIX_KEYWORDS, "Dynaconf", "LazySettings"))):
        return [], []
    reader = _DynaconfReads(tree, declared, strings, _imported_names(tree))
    return reader.run(told)


class _DynaconfReads(_Libraries):
    def __init__(self, tree: ast.Module, declared: frozenset[str], strings: ModuleStrings, imported: dict[str, str]) -> None:
        super().__init__(tree, declared, strings, imported)
        self.exports: list[tuple[str, str, str]] = []

    def run(self, told: dict[str, str]) -> tuple[list[Row], list[tuple[str, str, str]]]:
        made: list[tuple[ast.Call, str | None]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                if _resolved(node.func, self.imported) in _DYNACONF:
                    made.append((node, self._made_prefix(node)))
                else:
                    self._unknown_prefixed(node)
        for call, prefix in made:
            self._object(call, prefix)
        if told:  # another module's object, by the name this module spells it with
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                    value = told.get(dotted_name(node))
                    if value is not None:
                        self._use(node, None if value == "?" else value)
        return self.found, self.exports

    def _made_prefix(self, call: ast.Call) -> str | None:
        """The text before each key's upper-cased name: `SGLANG_`, "" for none; None not shown."""
        given: ast.expr | None = None
        for keyword in call.keywords:
            if keyword.arg is None:
                return None  # `**options`
            if keyword.arg in _DYNACONF_PREFIX:
                given = keyword.value
        if given is None:
            return "DYNACONF_"
        if isinstance(given, ast.Constant) and given.value is False:
            return ""
        text = self.strings.value(given, self._scopes(call))
        return None if text is None else text.upper() + "_"

    def _object(self, call: ast.Call, prefix: str | None) -> None:
        """The uses of the object `call` makes: on the spot, or through the name it is kept in."""
        parent = self.parents.get(id(call))
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
            self._use(call, prefix)
            return
        name = parent.targets[0].id
        if parent in self.tree.body:
            self.exports.append((name, DYNACONF_OBJECT, "?" if prefix is None else prefix))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                bound = self.strings.bound(node, self._scopes(node))
                if bound and any(value is call for value, _ in bound):
                    self._use(node, prefix)

    def _use(self, node: ast.expr, prefix: str | None) -> None:
        parent = self.parents.get(id(node))
        call = self.parents.get(id(parent)) if parent is not None else None
        if isinstance(parent, ast.Attribute) and parent.value is node:
            attr = parent.attr
            if attr in _DYNACONF_NO_READ or not isinstance(parent.ctx, ast.Load):
                return
            if attr in _DYNACONF_KEYED:
                if isinstance(call, ast.Call) and call.func is parent and call.args and not isinstance(call.args[0], ast.Starred):
                    self._key(call.args[0], "" if attr == "get_environ" else prefix)
                else:
                    self._whole(parent, prefix)
            elif attr in _DYNACONF_WHOLE or attr.startswith("_"):
                self._whole(parent, prefix)
            else:
                self._name(parent, attr, prefix)
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Load):
                self._key(parent.slice, prefix)
        elif isinstance(parent, ast.Call) and parent.func is node:
            if parent.args and not isinstance(parent.args[0], ast.Starred):
                self._key(parent.args[0], prefix)
            else:
                self._whole(parent, prefix)
        else:
            self._whole(node, prefix)  # handed on, returned, kept elsewhere

    def _key(self, key: ast.expr, prefix: str | None) -> None:
        """A key the module spells (or may build), read as Dynaconf names it: upper-cased,
        `.` for `__`, after the prefix."""
        if prefix is None:
            self._whole(key, prefix)
            return
        found = patterns(KeyCompiler(self.strings, None, None).compile(key, self._scopes(key)), None)
        self._report_names(key, frozenset(
            ((prefix + text.replace(".", "__")).upper(), suffix.upper(), wild) for text, suffix, wild in found
        ))

    def _name(self, node: ast.AST, key: str, prefix: str | None) -> None:
        if prefix is None:
            self._whole(node, prefix)
            return
        wanted = (prefix + key.replace(".", "__")).upper()
        for variable in sorted(v for v in self.declared if v.upper() == wanted):
            self._report(node, env_subject(variable))

    def _whole(self, node: ast.AST, prefix: str | None) -> None:
        if prefix is None or any(v.upper().startswith(prefix.upper()) for v in self.declared):
            self._report(node, ENV_UNRESOLVED)

    def _unknown_prefixed(self, call: ast.Call) -> None:
        """A call of a library not known here given a prefix of declared variables: `$?`."""
        path = _resolved(call.func, self.imported)
        if path.partition(".")[0] in _PREFIX_KNOWN or _last(call.func) in _PREFIX_KNOWN_NAMES or (
            ".model_config." in f".{dotted_name(call.func)}"  # (a settings class's, judged as such: _config_changed)
        ):
            return
        for keyword in call.keywords:
            if keyword.arg not in _PREFIX_KEYWORDS:
                continue
            text = self.strings.value(keyword.value, self._scopes(call))
            if text and any(v.upper().startswith(text.upper()) for v in self.declared):
                self._report(keyword.value, ENV_UNRESOLVED)
