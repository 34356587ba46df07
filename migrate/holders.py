"""Objects that hold the raw record in an attribute, for the alias analysis
(configbags.migrate.aliases): which they are, and which of their uses read the record
through their namespace rather than by the attribute's name.

`x.server_args` is the record wherever it is spelled, so an object is judged by what it
holds only where the attribute is not spelled. A holder is:

- the generated process view: `cfg` imported from an `accessors` module (or
  `accessors.cfg`), and the `view` and `cfg` of a config context (`get_context().view`,
  `ctx.cfg`, `ctx.installer.view`), whose `server_args` slot holds the record;
- an instance of a class of the module that holds it: a class whose methods assign
  `self.<record attribute>` (or store the record in any `self.` attribute), whose body
  binds a record attribute (`server_args = None`, a dataclass field `server_args: Any`) or
  an alias of the record (`ARGS = get_server_args()`); its `self` and `cls`, a call of the
  class, and the class itself;
- a name a record attribute is stored on (`h.server_args = rec`, `Shared.server_args = rec`);
- a name bound to any of these (flow-insensitive, a may-alias like every binding here).

What reads the record through a holder's namespace, whole (a `*` escape: whatever comes
out may be the record, read by a name no code spells): `vars(h)` and `h.__dict__` (unless
indexed by a literal key, which is the attribute it names: `vars(self)["server_args"]`
is `self.server_args`), `dataclasses.asdict(h)` and `astuple`, `inspect.getmembers(h)`, a
serialiser (`pickle.dumps`, `json.dump`, `yaml.safe_dump`: any `*dump`/`*dumps`), and, for a class whose repr the dataclass or attrs
decorator generates, the holder formatted into text. A fetch by a name built at run time
(`getattr(h, name)`, `operator.attrgetter(path)(h)`) may be the record attribute: `*`,
unless its name resolves to literals (a local bound only to strings, a loop over a literal
tuple or a module constant bound once to one) or is built so that it can never be one (`getattr(self, "handle_" + kind)`).

Passing a holder to an ordinary callable reads nothing: only the calls above do, and a
function that reads its parameter's namespace so (configbags.migrate.flows tells each module
which of the functions it calls do: FlowInput.namespace_readers)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping

import attrs

# How a holder's namespace is read whole, by the callee's last name: its attributes, its
# fields, every member; and any serialiser (`pickle.dumps`, `yaml.safe_dump`), by suffix.
NAMESPACE_READERS = frozenset({"vars", "asdict", "astuple", "getmembers"})
SERIALISERS = ("dump", "dumps")
# Callables that turn their arguments into text: through a generated repr, every field.
FORMATTERS = frozenset({"str", "repr", "format", "print", "pformat", "pprint"})
# A logger's methods (called on an object): they format their arguments.
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal"})
# Methods of a namespace dict that only write it.
NAMESPACE_WRITERS = frozenset({"update", "clear", "__setitem__", "__delitem__"})
# Class decorators that generate a repr of every field, and `__match_args__` in field order.
_GENERATING = frozenset({"dataclass", "define", "frozen", "mutable", "s", "attrs"})
# The context's attributes that are the process view (`ctx.installer.view` too).
VIEW_ATTRS = frozenset({"view", "cfg"})
CONTEXT_FUNCTIONS = frozenset({"get_context", "process_context"})
_NOT_CONFIG = frozenset({"multiprocessing", "multiprocess", "mp"})
# The most strings a name is resolved to (a product of f-string parts).
_MAX_NAMES = 32

# What a name built at run time may be: exact strings, or a (prefix, suffix) it is built
# between, or None (anything).
Names = frozenset[str] | tuple[str, str] | None


def is_context_call(expr: ast.expr, fetchers: frozenset[str]) -> bool:
    """`get_context()`, `accessors.get_context()`, or a call of another module's function
    that returns a context (the project pass's `fetchers`); not multiprocessing's."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = dotted_name(func)
    if name and name in fetchers:
        return True
    last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return last in CONTEXT_FUNCTIONS and _NOT_CONFIG.isdisjoint(name.split("."))


def namespace_of(expr: ast.expr) -> ast.expr | None:
    """The object whose namespace `expr` is: `vars(x)` and `x.__dict__` are x's."""
    if isinstance(expr, ast.Attribute) and expr.attr == "__dict__":
        return expr.value
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "vars"
        and len(expr.args) == 1
        and not expr.keywords
        and not isinstance(expr.args[0], ast.Starred)
    ):
        return expr.args[0]
    return None


def keyed_attribute(expr: ast.expr) -> ast.Attribute | None:
    """`vars(x)["a"]`, `x.__dict__["a"]`, `vars(x).get("a")`: the attribute `x.a` it reads."""
    key: ast.expr | None = None
    space: ast.expr | None = None
    if isinstance(expr, ast.Subscript) and isinstance(expr.ctx, ast.Load):
        space, key = expr.value, expr.slice
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and expr.args
        and not expr.keywords
    ):
        space, key = expr.func.value, expr.args[0]
    owner = namespace_of(space) if space is not None else None
    if owner is None or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    return ast.copy_location(ast.Attribute(value=owner, attr=key.value, ctx=ast.Load()), expr)


@attrs.frozen
class ClassFacts:
    """What a class's decorator generates from its fields: `shows`, a repr (and a
    `str`) that formats a field that may hold the record; `compares`, an `==` (and an
    ordering) that compares one; its `__match_args__` where the class shows them (a
    literal tuple, else a generating decorator's field order)."""

    shows: bool
    compares: bool
    match_args: tuple[str, ...] | None


def class_facts(node: ast.ClassDef, attributes: frozenset[str], record_class: str) -> ClassFacts:
    """ClassFacts of a class statement. A field may hold the record where it is named like
    a record attribute, annotated as the record, or given a default the code does not
    spell as a constant (the record stored in any other field escapes where it is
    stored); a field is left out of the repr by `repr=False` and out of `==` by
    `compare=False` (attrs: `eq=False`), the class by `repr=False` / `eq=False` or a
    `__repr__` (`__str__`) / `__eq__` of its own."""
    generating = False
    options: dict[str, object] = {}
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        last = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
        if last in _GENERATING:
            generating = True
            for keyword in call.keywords if call is not None else ():
                if keyword.arg is not None:
                    options[keyword.arg] = keyword.value.value if isinstance(keyword.value, ast.Constant) else keyword
    shown = options.get("repr") is not False
    compared = options.get("eq") is not False
    shows = compares = False
    fields: list[str] = []
    literal: tuple[str, ...] | None = None
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in ("__repr__", "__str__"):
            shown = False
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__eq__":
            compared = False
        elif generating and isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            annotation = ast.unparse(stmt.annotation)
            if "ClassVar" in annotation:
                continue
            fields.append(stmt.target.id)
            flags = field_flags(stmt.value)
            holds = (
                stmt.target.id in attributes or record_class in annotation or not _plain_default(stmt.value, flags)
            )
            shows |= holds and (flags or {}).get("repr") is not False
            compares |= holds and (flags or {}).get("compare") is not False and (flags or {}).get("eq") is not False
        elif isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__match_args__" for t in stmt.targets
        ):
            value = stmt.value
            if isinstance(value, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                literal = tuple(str(e.value) for e in value.elts if isinstance(e, ast.Constant))
    match_args = literal if literal is not None else tuple(fields) if generating else None
    return ClassFacts(generating and shown and shows, generating and compared and compares, match_args)


def holder_kinds(shows: bool, compares: bool) -> tuple[str, ...]:
    """The kinds (FlowFacts.fetchers) a holder class or function is handed to its
    importers under: "holder_class", and "repr_holder" / "eq_holder" where its repr /
    its `==` may show the record."""
    return ("holder_class",) + ("repr_holder",) * shows + ("eq_holder",) * compares


# What a field call (`dataclasses.field(...)`, `attrs.field(...)`, `attr.ib(...)`) is named
_FIELD_CALLS = frozenset({"field", "ib", "attrib"})
# A default factory that makes an empty container: it never gives the record
_EMPTY_FACTORIES = frozenset({"list", "dict", "set", "tuple", "frozenset"})


def field_flags(value: ast.expr | None) -> dict[str, object] | None:
    """The keywords of a field call (`field(repr=False, default=None)`), each a literal's
    value or the expression itself; None for any other value (a default, or none)."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if last not in _FIELD_CALLS or value.args or any(keyword.arg is None for keyword in value.keywords):
        return None
    return {
        str(keyword.arg): keyword.value.value if isinstance(keyword.value, ast.Constant) else keyword.value
        for keyword in value.keywords
    }


def _plain_default(value: ast.expr | None, flags: Mapping[str, object] | None) -> bool:
    """Is a field's default one that is never the record: none, a constant, or a field
    call whose default is a constant and whose factory makes an empty container?"""
    if value is None or isinstance(value, ast.Constant):
        return True
    if flags is None:
        return False
    factory = flags.get("default_factory", flags.get("factory"))
    return not isinstance(flags.get("default"), ast.expr) and (
        factory is None or (isinstance(factory, ast.Name) and factory.id in _EMPTY_FACTORIES)
    )


# ---- a generated `__init__`

# The class decorators whose generated `__init__` only stores each argument on the field
# of its name, by the dotted name they are imported under (pydantic's dataclass is not
# one: it validates and copies what it is given), and the options each takes.
_INIT_MAKERS = {
    "dataclasses.dataclass": "dataclass",
    **dict.fromkeys(("attrs.define", "attrs.frozen", "attrs.mutable", "attr.define", "attr.frozen", "attr.mutable",
                     "attr.dataclass"), "attrs"),
    **dict.fromkeys(("attr.s", "attr.attrs"), "attr.s"),
}
_CLASS_OPTIONS = {
    "dataclass": frozenset({
        "init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "slots", "weakref_slot",
    }),
    "attrs": frozenset({
        "init", "repr", "eq", "order", "hash", "unsafe_hash", "frozen", "slots", "kw_only", "auto_attribs",
        "weakref_slot", "match_args", "cache_hash", "str", "getstate_setstate", "auto_detect", "collect_by_mro",
    }),
}
_FIELD_MAKERS = frozenset({"dataclasses.field", "attrs.field", "attr.field", "attr.ib", "attr.attrib"})
# A field option that runs code on the value (a validator, a converter, a setattr hook) or
# renames the parameter is none of these: a field given one takes nothing here.
_FIELD_OPTIONS = frozenset({
    "default", "default_factory", "factory", "init", "repr", "compare", "eq", "order", "hash", "kw_only", "metadata",
    "type",
})
# Methods a generated `__init__` calls with what it is given, or that decide what the
# class's call runs: a class defining one is judged as today (a class without its own
# `__init__`)
_INIT_HOOKS = frozenset({"__init__", "__new__", "__setattr__", "__attrs_pre_init__", "__attrs_init__"})
# What the generated `__init__` calls last, with `self`: a method of the class, whose
# `self.server_args` the holder rules follow like any method's (not under a decorator,
# whose wrapper would see `self` first)
_POST_INITS = frozenset({"__post_init__", "__attrs_post_init__"})


def generated_init(
    node: ast.ClassDef, imports: Mapping[str, str], attributes: frozenset[str]
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(positional, keyword-only) parameters of the `__init__` a dataclass or attrs
    decorator generates for a class with no base, one decorator and no hook of its own
    (_INIT_HOOKS), where a parameter is named only where the record handed to it is
    merely stored on a record attribute no generated method reads: a field named like
    one, given no validator or converter, left out of the repr (`repr=False`, the
    field's or the class's), of `==` and ordering (`compare=False`, attrs' `eq=False`,
    or the class's `eq=False`) and of the hash. Any other parameter is "" (a position
    whose argument escapes) or left out (a keyword that escapes). None where the class
    is not such a class; `imports` maps a module's local names to what they import."""
    made = _generating_options(node, imports)
    if made is None or _rebinds_hooks(node, imports):
        return None
    kind, options = made
    generated = _Generated(
        kind=kind,
        eq=options.get("eq", True) is not False,
        hashed=bool(options.get("unsafe_hash") or options.get("hash") or (
            options.get("eq", True) is not False and options.get("frozen") is True
        )),
        shown=options.get("repr", True) is not False or options.get("str") is True,
    )
    keyword_only = options.get("kw_only") is True
    positional: list[str] = []
    keywords: list[str] = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if "ClassVar" in annotation:
            continue
        if kind == "dataclass" and annotation.rpartition(".")[2] == "KW_ONLY":
            keyword_only = True
            continue
        flags: dict[str, object] | None = {}
        if stmt.value is not None and not isinstance(stmt.value, ast.Constant):
            field_call = isinstance(stmt.value, ast.Call) and _imported_as(stmt.value.func, imports) in _FIELD_MAKERS
            flags = field_flags(stmt.value) if field_call else None
        if flags is not None and flags.get("init") is False:
            continue
        name = stmt.target.id
        stored = flags is not None and name in attributes and "InitVar" not in annotation and generated.only_stores(flags)
        parameter = name if kind == "dataclass" else name.lstrip("_")  # attrs: `_x` is set by `x=`
        if keyword_only or (flags or {}).get("kw_only") is True:
            keywords += [parameter] if stored else []
        else:
            positional.append(parameter if stored else "")
    return tuple(positional), tuple(keywords)


@attrs.frozen
class _Generated:
    """What a generating decorator's options make of every field."""

    kind: str  # "dataclass", "attrs", "attr.s"
    eq: bool  # an `==` (and ordering) is generated
    hashed: bool  # a `__hash__` is generated
    shown: bool  # a repr is generated

    def only_stores(self, flags: Mapping[str, object]) -> bool:
        """Does the generated `__init__` only store a field given these options, and no
        generated method read it?"""
        # dataclasses say `compare`, attrs `eq`; a field's hash follows them unless it says
        compares = flags.get("compare", flags.get("eq", True)) is not False
        return (
            set(flags) <= _FIELD_OPTIONS
            and not isinstance(flags.get("default"), ast.expr)  # (a descriptor's `__set__` sees the store)
            and not (self.shown and flags.get("repr", True) is not False)
            and not (self.eq and compares)
            and flags.get("order") is not True
            and not (self.hashed and flags.get("hash", compares) is not False)
        )


def _generating_options(node: ast.ClassDef, imports: Mapping[str, str]) -> tuple[str, dict[str, object]] | None:
    """(kind, literal options) of a class's one decorator where it is one whose generated
    `__init__` only stores its arguments (with `frozen` filled in, and attrs' fields
    those of the annotations), else None."""
    if node.bases or node.keywords or len(node.decorator_list) != 1:
        return None
    decorator = node.decorator_list[0]
    call = decorator if isinstance(decorator, ast.Call) else None
    spelled = _imported_as(call.func if call is not None else decorator, imports)
    kind = _INIT_MAKERS.get(spelled)
    if kind is None or (call is not None and call.args):
        return None
    options: dict[str, object] = {"frozen": spelled.endswith(".frozen")}
    for keyword in call.keywords if call is not None else ():
        if keyword.arg not in _CLASS_OPTIONS["dataclass" if kind == "dataclass" else "attrs"]:
            return None
        if not isinstance(keyword.value, ast.Constant):
            return None
        options[keyword.arg] = keyword.value.value
    if options.get("init") is False or (kind != "dataclass" and options.get("auto_attribs", kind == "attrs") is not True):
        return None
    return kind, options


def _rebinds_hooks(node: ast.ClassDef, imports: Mapping[str, str]) -> bool:
    """Does the class body define a hook the generated `__init__` calls or defers to
    (_INIT_HOOKS, a `__post_init__` not defined plainly), bind a field's name again (a
    property, a descriptor: its store runs code), or give a field without an
    annotation (attrs would then take only such fields)?"""
    fields: set[str] = set()
    defined: set[str] = set()
    bound: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name in _INIT_HOOKS or (stmt.name in _POST_INITS and stmt.decorator_list):
                return True
            defined.add(stmt.name)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            (bound if "ClassVar" in ast.unparse(stmt.annotation) else fields).add(stmt.target.id)
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value = stmt.value
            if value is not None and _imported_as(value.func if isinstance(value, ast.Call) else value, imports) in (
                _FIELD_MAKERS
            ):
                return True
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bool(bound & (_INIT_HOOKS | _POST_INITS) or (bound | defined) & fields)


def _imported_as(expr: ast.expr, imports: Mapping[str, str]) -> str:
    """The dotted name `expr` (`dc.dataclass`, `define`) is, through the module's imports;
    "" where it is no imported name."""
    spelled = dotted_name(expr)
    head, _, rest = spelled.partition(".")
    origin = imports.get(head)
    if not spelled or origin is None:
        return ""
    return f"{origin}.{rest}" if rest else origin


# ---- names built at run time


def literal_names(expr: ast.expr | None, bound: Iterable[ast.expr | None] | None = None) -> Names:
    """What a name argument may be: the strings a literal, a concatenation or an f-string
    spells, a Name resolved one step through `bound` (the values its function binds to it,
    None for a binding of unknown value); a (prefix, suffix) it is built between where a
    part of it is unknown; None where nothing is known."""
    if isinstance(expr, ast.Name) and bound is not None:
        found: set[str] = set()
        for value in bound:
            names = literal_names(value)
            if not isinstance(names, frozenset):
                return None
            found |= names
        return frozenset(found) if found and len(found) <= _MAX_NAMES else None
    segments = _segments(expr) if expr is not None else [None]
    if all(segment is not None for segment in segments):
        exact = _joined([s for s in segments if s is not None])
        return exact if exact is not None and len(exact) <= _MAX_NAMES else None
    first = segments.index(None)
    last = len(segments) - 1 - segments[::-1].index(None)
    before = _joined([s for s in segments[:first] if s is not None]) or frozenset({""})
    after = _joined([s for s in segments[last + 1:] if s is not None]) or frozenset({""})
    return (_common_prefix(before), _common_prefix(frozenset(text[::-1] for text in after))[::-1])


def _common_prefix(strings: frozenset[str]) -> str:
    first, last = min(strings), max(strings)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


def _segments(expr: ast.expr) -> list[frozenset[str] | None]:
    """The parts a string is built of, each a literal's value or None (unknown)."""
    if isinstance(expr, ast.Constant):
        return [frozenset({expr.value})] if isinstance(expr.value, str) else [None]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _segments(expr.left) + _segments(expr.right)
    if isinstance(expr, ast.JoinedStr):
        found: list[frozenset[str] | None] = []
        for part in expr.values:
            if isinstance(part, ast.FormattedValue):
                simple = part.conversion in (-1, ord("s")) and part.format_spec is None
                found += _segments(part.value) if simple else [None]
            else:
                found += _segments(part)
        return found
    return [None]


def _joined(segments: list[frozenset[str]]) -> frozenset[str] | None:
    """Every concatenation of one string from each segment, or None past _MAX_NAMES."""
    exact = {""}
    for segment in segments:
        exact = {a + b for a in exact for b in segment}
        if len(exact) > _MAX_NAMES:
            return None
    return frozenset(exact)


def may_be(names: Names, attrs: Iterable[str], *, dotted: bool = False) -> bool:
    """May a name of these `names` be one of `attrs`? For an attrgetter (`dotted`), the
    first part of its path."""
    if names is None:
        return True
    if isinstance(names, frozenset):
        return any(name.split(".")[0] in attrs for name in names)
    prefix, suffix = names
    if "." in prefix:
        return prefix.split(".")[0] in attrs
    return any(
        attr.startswith(prefix) and (dotted or (attr.endswith(suffix) and len(attr) >= len(prefix) + len(suffix)))
        for attr in attrs
    )


# The literal sequence a module-level name is bound to, or None (see module_sequences).
Sequences = Mapping[str, "list[ast.expr] | None"]


def module_sequences(tree: ast.Module) -> dict[str, list[ast.expr] | None]:
    """The module's top-level names bound once, to a literal tuple, list or set
    (`NAMESPACES = ("parallel", "server_args")`): a loop over one takes each element. A
    name bound more than once (or otherwise) maps to None."""
    found: dict[str, list[ast.expr] | None] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            elements = list(value.elts) if isinstance(value, (ast.Tuple, ast.List, ast.Set)) and not any(
                isinstance(e, ast.Starred) for e in value.elts) else None
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        literal = sub is target and sub.id not in found
                        found[sub.id] = elements if literal else None
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[stmt.name] = None
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                found[(alias.asname or alias.name).split(".")[0]] = None
        else:
            # any other statement binding a name (a loop, `with`, a block holding an
            # assignment) makes its value unknown; asked only for a fetch by a module's name
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                    found[sub.id] = None
    return found


def bound_values(node: ast.AST, name: str, sequences: Sequences | None = None) -> Iterator[ast.expr | None]:
    """The values the scope opened by `node` (a function, lambda or comprehension) binds to
    `name`, in the code (all of its statements, walked here or not): a parameter, an
    unpacking, a loop over anything but a literal, `with`, `except`, an import, a match
    capture are None (unknown); a loop over a literal gives each element."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        if any(a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
               if a is not None):
            yield None
        pending: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        for generator in node.generators:
            yield from _loop_values(generator.target, generator.iter, name, sequences)
        return
    else:
        yield None
        return
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if current.name == name:
                yield None
            continue  # its own scope (decorators and defaults aside, which bind nothing here)
        if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            continue
        yield from _binding(current, name, sequences)
        pending.extend(ast.iter_child_nodes(current))


def instance_values(node: ast.AST, name: str) -> list[ast.expr | None]:
    """What the scope opened by `node` (a module or a function) binds to `name`, as
    bound_values says, except that an augmented assignment (`t += x`) keeps the object
    the name holds (an in-place operator returns it, as a rule). Asked only where the
    record is an operand or stored on the name's object, which is rare: it walks the
    scope's code whole."""
    found: list[ast.expr | None] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        if any(a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
               if a is not None):
            found.append(None)
    elif not isinstance(node, ast.Module):
        return [None]
    pending: list[ast.AST] = list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if current.name == name:
                found.append(None)
            continue
        if isinstance(current, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            continue
        if isinstance(current, (ast.Assign, ast.AnnAssign)):
            targets = current.targets if isinstance(current, ast.Assign) else [current.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append(current.value)
                elif _unpacks(target, name):
                    found.append(None)
        elif not isinstance(current, ast.AugAssign):
            found.extend(_binding(current, name, None))
        pending.extend(ast.iter_child_nodes(current))
    return found


def _unpacks(target: ast.expr, name: str) -> bool:
    """Does an unpacking target bind `name` itself (not an item or attribute of it)?"""
    if isinstance(target, ast.Starred):
        return _unpacks(target.value, name)
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_unpacks(element, name) for element in target.elts)
    return isinstance(target, ast.Name) and target.id == name


def _binding(node: ast.AST, name: str, sequences: Sequences | None) -> Iterator[ast.expr | None]:
    """What one node binds to `name`, as bound_values says."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                yield node.value
            elif _binds(target, name):
                yield None
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
        if node.value is not None:
            yield node.value
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from _loop_values(node.target, node.iter, name, sequences)
    elif isinstance(node, ast.NamedExpr) and node.target.id == name:
        yield node.value
    elif _binds_opaquely(node, name):
        yield None


def _binds_opaquely(node: ast.AST, name: str) -> bool:
    """Does `node` bind `name` to a value the code does not show?"""
    if isinstance(node, ast.AugAssign):
        return _binds(node.target, name)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return any(item.optional_vars is not None and _binds(item.optional_vars, name) for item in node.items)
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
    return isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names


def _loop_values(
    target: ast.expr, iterable: ast.expr, name: str, sequences: Sequences | None
) -> Iterator[ast.expr | None]:
    if isinstance(iterable, ast.Name) and sequences is not None and sequences.get(iterable.id) is not None:
        # `for ns in NAMESPACES`, a module constant: one step of constants
        iterable = ast.Tuple(elts=sequences[iterable.id] or [], ctx=ast.Load())
    if isinstance(target, ast.Name) and target.id == name:
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)) and not any(
            isinstance(e, ast.Starred) for e in iterable.elts
        ):
            yield from iterable.elts
        else:
            yield None
    elif _binds(target, name):
        yield None


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def dotted_name(expr: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return ""
    parts.append(expr.id)
    return ".".join(reversed(parts))
