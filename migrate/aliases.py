"""The alias analysis: which names, attributes and functions of one module reach the
raw record, and the reads and writes made through them (see configbags.migrate.scan for
the spellings followed, and configbags.migrate.scanmodel.ORIGINS for what a read's origin
means).

It also says where the record leaves the module's reach: handed to a callable (a pass,
which the project pass, configbags.migrate.flows, resolves to a function of a scanned
module or reports as an escape), or stored where no analysis follows it (an attribute not
named like the record, a container, `yield`, a method's return): an escape, a read of
`*` with via "escape". Told by the project pass what the module's imports are
(scanmodel.FlowInput), it reads imported fetchers and holders of the record and the
parameters that receive it like its own.

Speed: the scanner must cost little more than `ast.parse` (bench/bench_ratchet.py). It
parses every file (so broken files are reported), but walks only the statements, at any
depth, whose lines mention a name through which the record can be reached (a substring
scan per name of the file's search text, whose lines are the parser's: see
configbags.migrate.scan.source_text). When analysis finds a new such name (an alias, a rename, a `self.` attribute,
a wrapper), it starts again with the larger set, so pruning never hides a binding. Results
are cached by content hash, so a warm re-scan parses nothing.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from configbags.migrate import holders, recordkinds
from configbags.migrate.recordtypes import (
    ELEMENTS,
    RECORD,
    Held,
    RecordTypes,
    loop_element,
    typed_reach,
)
from configbags.migrate.scanmodel import (
    DECORATED,
    ENV_UNRESOLVED,
    HOOK,
    WRITES_ON_STORE,
    WRITES_ON_USE,
    FlowInput,
    Reach,
    ScanSettings,
    join_origin,
)
from configbags.migrate.scopes import (
    Fetch,
    Scope,
    ScopeBinder,
    ScopeReader,
    Scopes,
    StatementWalker,
    fetched_chain,
    landed,
)
from configbags.migrate.searchtext import whole_word_starts

# Whole-record readers: calling these on the record reads every leaf at once.
_WHOLE_RECORD_CALLS = frozenset({"vars", "asdict", "astuple"})
# Copies of the record: the same values, so a read of one is a read of the record, but a
# write to one changes only the copy (configbags.migrate.scanmodel.WRITE_ORIGINS).
_COPY_CALLS = frozenset({"copy", "deepcopy"})
# A new record from an old one with some fields changed (dataclasses.replace, attrs.evolve,
# copy.replace, the generated record's `.replace`, the dataclass `__replace__` copy.replace
# calls): it carries every published value it does not change, so it reads like the record
# (origin "replaced": escapes, passes and whole reads count, as for a copy), but `ratchet
# fix` never rewrites a leaf read on it.
_REPLACE_CALLS = frozenset({"replace", "evolve", "__replace__"})
# A new record from another's values (`Rec.from_dict(rec.to_dict())`, `from_dict(asdict(rec))`):
# every value of the one it is made from, so a copy of it (configbags.migrate.aliases._round_trip)
_FROM_VALUES = frozenset({"from_dict"})
_TO_VALUES = frozenset({"to_dict", "_asdict"})
# The record class's methods that build no record (`ServerArgs.add_cli_args(parser)`
# returns None); any other it calls a constructor, which reads the config
BUILDS_NOTHING = frozenset({"add_cli_args"})
# argparse's parsing methods. On a parser `ServerArgs.add_cli_args(parser)` filled, the
# Namespace they give holds every leaf the command line sets: the config the launcher is
# about to publish, a record of origin "built" (the parse_known_* ones give it first in a
# pair with the arguments left over).
PARSES = frozenset({"parse_args", "parse_intermixed_args"})
PARSES_KNOWN = frozenset({"parse_known_args", "parse_known_intermixed_args"})


def parsing_call(expr: ast.expr) -> ast.expr | None:
    """The parser whose Namespace `expr` is: `p` of `p.parse_args(argv)`, or of the first of
    the pair `p.parse_known_args(argv)[0]` gives; None where `expr` is no such parse."""
    methods = PARSES
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        if not (isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0):
            return None
        expr, methods = expr.value, PARSES_KNOWN
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in methods:
        return expr.func.value
    return None


def parsed_parser(expr: ast.expr) -> str | None:
    """The name of the parser `expr` parses (`p.parse_args(argv)`: "p"), or None."""
    parser = parsing_call(expr)
    return parser.id if isinstance(parser, ast.Name) else None


def _pair_parser(expr: ast.expr | None) -> ast.expr | None:
    """The parser of `p.parse_known_args(argv)`, the pair (Namespace, the rest), or None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in PARSES_KNOWN:
        return expr.func.value
    return None
# Callables that provably read nothing of an argument: handing them the record is no read.
# builtins reading nothing themselves that call a method of their argument's class
_BUILTIN_DUNDERS: dict[str, tuple[str, ...]] = {
    "len": ("__len__",), "bool": ("__bool__", "__len__"), "index": ("__index__",), "operator.index": ("__index__",),
}
READS_NOTHING = frozenset({"isinstance", "issubclass", "id", "type", "len", "bool", "callable", "nullcontext"})
# What starts a child process: the record handed over is the child's own business
# (configbags.migrate.doors treats the environment the same way).
_CHILD_PROCESS = ("subprocess.", "asyncio.create_subprocess_", "os.exec", "os.spawn", "os.posix_spawn")
# What `subprocess` holds that starts nothing: a result or an exception keeps what it is
# given (`CompletedProcess(rec, 0).args`, `CalledProcessError(1, rec).cmd`) and
# `list2cmdline` turns it into text, so handing the record (or the environment) to one
# is no child process's business but a call like any other.
STARTS_NOTHING = frozenset({
    "CompletedProcess", "CalledProcessError", "TimeoutExpired", "SubprocessError", "list2cmdline",
})


def starts_child(name: str) -> bool:
    """Does the callable of this dotted name start a child process (the record or the
    environment handed to it is the child's own)?"""
    return name.startswith(_CHILD_PROCESS) and name.rpartition(".")[2] not in STARTS_NOTHING

# The record's own methods that turn it into text: every field at once.
_FORMATTERS = frozenset({"__repr__", "__str__", "__format__"})
# methods of the record (the generated one, a dataclass) that read every field
_WHOLE_METHODS = _FORMATTERS | frozenset({
    "to_dict", "_asdict", "__eq__", "__ne__", "__hash__", "__getstate__", "__reduce__", "__reduce_ex__",
    "__getnewargs__", "__getnewargs_ex__",
    "__lt__", "__le__", "__gt__", "__ge__",  # `order=True`: the tuples of every field compared
})
# Classes whose instances' repr and `==` are built from every attribute they are given
_NAMESPACE_CLASSES = frozenset({"SimpleNamespace", "Namespace"})
# Attributes of the record that are no leaf (`rec.__class__` is `type(rec)`): no read.
_NO_LEAF = frozenset({"__class__"})
_LOAD = ast.Load()
# Callables that call `target` with `args` (the record passed on to the target).
_STARTERS = frozenset({"Thread", "Process", "Timer"})
# What holds the record (_Analysis.holder), besides a class of the module: the process view,
# and a name a record attribute is stored on.
VIEW = "<view>"
STORED = "<stored>"
# Attributes of a function that give it (or call it) by another route: `rec.__wrapped__()`
FUNCTION_ROUTES = frozenset({"__wrapped__", "__call__", "__func__", "__get__", "__self__"})
# Decorators whose result, called, gives what the function gives (or that make it a
# method, judged as one): a function returning the record stays one under them.
_TRANSPARENT_DECORATORS = frozenset({
    "cache", "lru_cache", "cached_property", "wraps", "singledispatch", "staticmethod", "classmethod",
    "property", "abstractmethod", "override", "overload", "final", "no_type_check",
})

# What instance_class says of a literal, a comprehension or a builtin container: its
# operators, items and membership read nothing of the record beyond what they say already
BUILTIN = "<builtin>"
_LITERALS = (
    ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.BinOp,
)
_BUILTIN_TYPES = frozenset({
    "dict", "list", "set", "frozenset", "tuple", "str", "bytes", "bytearray", "int", "float", "complex", "bool",
    "defaultdict", "OrderedDict", "Counter", "deque", "ChainMap", "WeakKeyDictionary", "WeakValueDictionary",
    "WeakSet", "range", "memoryview",
})
# Python's binary operators -> the name of the method (`__add__`, `__radd__`, `__iadd__`)
# Python calls on the operand's class
_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitOr: "or", ast.BitXor: "xor", ast.BitAnd: "and",
}


# ordering comparisons -> (the method Python calls on the left operand's class, the
# reflected one it calls on the right operand's)
# calls copying an object with its attributes (`copy.copy(NS).args`)
_COPY_FUNCTIONS = frozenset({"copy.copy", "copy.deepcopy", "copy", "deepcopy"})
# the method of the operand's class a unary operator calls (`-rec`: `__neg__`)
_UNARY: dict[type[ast.unaryop], str] = {ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__", ast.Not: "__bool__"}
_ORDERINGS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("lt", "gt"), ast.LtE: ("le", "ge"), ast.Gt: ("gt", "lt"), ast.GtE: ("ge", "le"),
}


class _Scope(Scope):
    __slots__ = ("aliases", "assigns", "callers", "defaults", "returns", "self_assigns")

    def __init__(self, kind: str, qualname: str, parent: _Scope | None) -> None:
        super().__init__(kind, qualname, parent)
        # Every binding of a name in this scope: name, value, and an origin forced on top
        # of the value's (`with f(rec) as name`). The value is None when the binding is
        # opaque (a loop over a non-literal, `except ... as`, `del`, an import, a `def`,
        # a plain parameter, ...): never the record, so it only ever taints an alias.
        self.assigns: list[tuple[str, ast.expr | None, str | None]] = []
        self.defaults: list[tuple[str, ast.expr]] = []  # parameter defaults: outer scope
        self.self_assigns: list[tuple[str, ast.expr | None]] = []  # None: opaque, as above
        self.returns: list[ast.expr] = []
        self.aliases: dict[str, Reach] = {}  # name -> (via, origin)
        # names bound to a function whose call gives the record (`r = rec`, `load =
        # h.rec`, `g = get_server_args`) -> the origin of what the call gives
        self.callers: dict[str, str] = {}


class _MatchedField(ast.expr):
    """What a positional sub-pattern of a class pattern is matched against: the attribute
    its class's `__match_args__` name at `index`, looked up once every class is known."""

    _fields = ()

    def __init__(self, value: ast.expr, cls: str, index: int, like: ast.AST) -> None:
        super().__init__()
        self.value, self.cls, self.index = value, cls, index
        ast.copy_location(self, like)


def decorated_passes(
    node: ast.FunctionDef | ast.AsyncFunctionDef, caller: str, kind: str
) -> list[tuple[Any, ...]]:
    """FlowFacts.passes rows (position DECORATED) for the decorators `node`, a function
    giving the record (`kind` "") or a context ("context"), is handed to, those that keep
    it as it is (cache, wraps) left out: the keyword is the kind, with "()" where the
    decorator is a call (`@register("args")`)."""
    rows: list[tuple[Any, ...]] = []
    for decorator in node.decorator_list:
        call = isinstance(decorator, ast.Call)
        name = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if name.rpartition(".")[2] not in _TRANSPARENT_DECORATORS:
            rows.append((
                caller, f"name:{name}" if name else "", DECORATED, kind + ("()" if call else ""), decorator.lineno,
                decorator.col_offset, decorator.end_lineno or decorator.lineno,
                decorator.end_col_offset or decorator.col_offset,
            ))
    return rows


def _object_path(expr: ast.expr, self_name: str | None) -> bool:
    """`app.state`, `a.b.c`: attributes of a name, as the code spells them (not of a
    method's `self`, whose attributes its class's analysis follows)."""
    return isinstance(expr, ast.Attribute) and dotted(expr).partition(".")[0] not in ("", self_name)


def _private(attr: str) -> bool:
    """`_state`, `_data`: a private attribute, not a dunder (`__class__`)."""
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _is_staticmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _is_classmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list)


# Methods of a dict copy of the record that read one key, every key, or write.
_DICT_READ_ONE = frozenset({"get"})
_DICT_READ_ALL = frozenset({"items", "keys", "values", "copy"})
_DICT_WRITES = frozenset({"update", "pop", "setdefault", "clear", "popitem", "__setitem__", "__delitem__"})
_DICT_METHODS = _DICT_READ_ONE | _DICT_READ_ALL | _DICT_WRITES
# Writes that give back what they change: read, too, unless the value is dropped
_DICT_GIVE_BACK = frozenset({"pop", "setdefault", "popitem"})


class _Analysis(Scopes[_Scope]):
    """Per-file state shared by the binding pass and the read pass: the scopes, and the
    names, attributes and functions through which the record is reached."""

    def __init__(
        self,
        settings: ScanSettings,
        lines: list[int],
        fetched: Mapping[int, tuple[Fetch, ...]],
        types: RecordTypes | None = None,
        flows: FlowInput | None = None,
    ) -> None:
        super().__init__(_Scope("module", "<module>", None))
        # what the types show (configbags.migrate.recordtypes): the class's aliases and
        # subclasses, casts, isinstance tests, and names holding containers of the record
        self.types = types or RecordTypes(_NO_STATEMENTS, (settings.record_class,))
        self.elements: set[tuple[int, str]] = set()
        self.element_attrs: set[str] = set()
        self.settings = settings
        # what the project pass knows of the other modules (configbags.migrate.flows):
        # imported names whose call returns the record, or that hold it, by local or
        # dotted name, and this module's parameters that receive it
        self.flows = flows or FlowInput()
        # the copies and rebuilds the record's kind adds (a NamedTuple's `_replace`, a
        # pydantic model's `model_copy`: configbags.migrate.recordkinds)
        kind = self.flows.record_kind
        self.replace_calls = _REPLACE_CALLS | recordkinds.REPLACES.get(kind, frozenset())
        self.from_values = _FROM_VALUES | recordkinds.FROM_VALUES.get(kind, frozenset())
        self.to_values = _TO_VALUES | recordkinds.TO_VALUES.get(kind, frozenset())
        self.lines = lines  # lines that mention a name of interest, sorted
        # id(statement list) -> its statements that mention one: the binder and the reader
        # walk the same lists (the tree's own, so their ids stay theirs while it lives)
        self.kept: dict[int, list[ast.AST]] = {}
        # id(call) -> what it fetches by name (`getattr(x, "a")`, an attrgetter), under
        # whatever alias: resolved by the door analysis over the same scope rules
        self.fetched = fetched
        self.raw_names: set[str] = {settings.raw_accessor}
        self.class_names: set[str] = self.types.class_names
        self.record_attrs: frozenset[str] = frozenset(settings.record_attributes)
        self.record_dicts: set[str] = set(settings.record_dicts)
        # (id(scope), name): a dict copy imported into a function (`from m import
        # global_server_args_dict` in its body) is the module's dict under a local name
        self.dict_imports: set[tuple[int, str]] = set()
        # the record dict under other names: module-level names bound to it (here, or in
        # another module or the record's home: FlowInput.record_dict_holders), and module
        # functions whose call gives it (`def gsad(): return global_server_args_dict`,
        # here or imported: FlowInput.record_dict_fetchers); read by key like the dict
        self.dict_aliases: set[str] = {name for name in self.flows.record_dict_holders if "." not in name}
        self.dict_fetchers: set[str] = {name for name in self.flows.record_dict_fetchers if "." not in name}
        self.own_dict_holders: set[str] = set()  # the module's own, for its importers
        self.own_dict_fetchers: set[str] = set()
        self.dict_locals: set[str] = set()  # locals of its functions bound to it (`d = ...; return d`)
        self.self_attrs: dict[str, str] = {}  # `self.<attr>` holds the record -> origin
        # class attributes bound to the record (`class R: ARGS = get_server_args()`, here or
        # in an imported module: `R.ARGS` among the holders) -> origin. Read through
        # anything (`R().ARGS`, `type(self).ARGS`, a subclass's `S.ARGS` or `self.ARGS`),
        # like a record attribute: which object it is read on is not followed
        self.class_attrs: dict[str, str] = {
            spelled.rpartition(".")[2]: "held" for spelled in self.flows.record_holders if "." in spelled
        }
        # (class qualname, record attribute) -> the origin of what its methods assign to
        # `self.<attribute>` (`self.server_args = ServerArgs(...)`: constructed)
        self.class_record_attrs: dict[tuple[str, str], str] = {}
        self.imported: set[str] = set()  # names bound by import: modules, not objects
        self.wrappers: dict[str, str] = {}  # module functions returning the record -> origin
        # the same by qualname (`f`, `deco.inner`), for a name that refers to one
        self.returning: dict[str, str] = {}
        self.violations: list[tuple[Any, ...]] = []
        self.reads: list[tuple[Any, ...]] = []
        # the record handed to a callable, for the project pass (FlowFacts.passes)
        self.passes: list[tuple[Any, ...]] = []
        # Set by resolve_rebound() once the aliases are final (see there): from then on a
        # conditional value with a branch that is not the record is "rebound".
        self.strict = False
        # Objects holding the record in an attribute (configbags.migrate.holders): classes
        # by qualname, their simple names, their def lines; which generate a repr of
        # every field, and their `__match_args__`
        self.holder_classes: set[str] = set()
        self.class_names_of: dict[str, str] = {}  # simple name -> qualname, every walked class
        self.class_lines: dict[str, set[int]] = {}
        self.class_bases: dict[str, frozenset[str]] = {}  # qualname -> its bases' simple names
        self.generated_reprs: set[str] = set()  # a repr formatting a field that may hold the record
        self.generated_eqs: set[str] = set()  # an `==` comparing one (holders.class_facts)
        self.walk_whole: set[str] = set()  # dataclasses with a record attribute field
        self.match_args: dict[str, tuple[str, ...]] = {}
        # (id(scope), name): bound by import to the process view (`from x.accessors import
        # cfg`) or to an accessors module; a record attribute stored on it (`h.server_args = rec`)
        self.views: set[tuple[int, str]] = set()
        self.accessor_modules: set[tuple[int, str]] = set()
        self.stores: list[tuple[_Scope, str]] = []
        self.stored_on: set[tuple[int, str]] = set()
        self.holder_functions: set[str] = set()  # the module's functions giving a holder
        # other modules' names (and paths) a record attribute is stored on, as spelled here
        self.imported_stored = set(self.flows.stored_holders)
        self.scope_nodes: dict[int, ast.AST] = {}  # id(scope) -> the node opening it
        self._holders: dict[tuple[int, str], str | None] = {}  # memo of holder(Name)
        self._instances: dict[tuple[int, str], str | None] = {}  # memo of instance_class(Name)
        # (class qualname, attribute) -> the callable its class body binds it to a call of
        # (`server_args = Captures()`), whose `__set__` a store through an instance calls
        self.class_values: dict[tuple[str, str], str] = {}
        self._sequences: holders.Sequences | None = None
        # (scope, name) of each `ServerArgs.add_cli_args(name)` (or a filler's call,
        # `make_arg_parser(name)`) walked, and (id(scope), name) of the parsers they fill, as
        # the scope binding the name; `filled` also the names bound to a filled parser
        # (`p = new_parser()`), `filled_attrs` (class qualname, attr) of `self.<attr>` filled
        # or bound to one in any method, and `pairs` the names bound to the pair a filled
        # parser's parse_known_args gives (`res = p.parse_known_args(argv)`): set by resolve()
        self.fills: list[tuple[_Scope, str]] = []
        self.attr_fills: list[tuple[_Scope, str]] = []
        self.filled_by_call: set[tuple[int, str]] = set()
        self.filled: set[tuple[int, str]] = set()
        self.filled_attrs: set[tuple[str, str]] = set()
        self.pairs: set[tuple[int, str]] = set()
        # functions of other modules (or the module's own, told back by the project pass)
        # filling a parameter with add_cli_args, giving a filled parser, or returning what
        # their parameter parses (FlowInput.parser_fillers, parser_givers, parse_helpers)
        self.parser_fillers = _positions(self.flows.parser_fillers)
        self.parser_givers = set(self.flows.parser_givers)
        self.parse_helpers = _positions(self.flows.parse_helpers)
        # functions storing a record attribute on a parameter (`fill(ns)`): spelled -> positions
        self.fillers: dict[str, list[int]] = {}
        for entry in self.flows.fillers:
            spelled, _, position = entry.rpartition("|")
            self.fillers.setdefault(spelled, []).append(int(position))
        # functions reading a parameter's namespace whole (`dump_state(obj)`): spelled -> positions
        self.namespace_readers: dict[str, list[int]] = {}
        for entry in self.flows.namespace_readers:
            spelled, _, position = entry.rpartition("|")
            self.namespace_readers.setdefault(spelled, []).append(int(position))
        # holder classes of other modules (`from pkg.worker import Worker`), by the last
        # part of the name they are spelled with: their instances hold the record here too
        for spelled in self.flows.holder_classes:
            local = spelled.rpartition(".")[2]
            qualname = f"<imported>.{local}"
            self.class_names_of.setdefault(local, qualname)
            self.holder_classes.add(qualname)
            if spelled in self.flows.repr_holders:
                self.generated_reprs.add(qualname)
            if spelled in self.flows.eq_holders:
                self.generated_eqs.add(qualname)

    def names_of_interest(self) -> frozenset[str]:
        """Every name through which the record can be reached: any statement that reads,
        binds or shadows the record mentions one of them on one of its lines."""
        names = self.raw_names | self.class_names | self.record_attrs | self.record_dicts
        names |= self.dict_aliases | self.dict_fetchers | self.dict_locals
        names |= self.self_attrs.keys() | self.wrappers.keys() | self.types.names() | self.element_attrs
        names |= self.class_attrs.keys() | {name for _, name in self.fills}
        names |= {name for _, name in (*self.filled, *self.pairs, *self.filled_attrs)}
        names |= {name for _, name in self.elements} | flow_names(self.flows)
        for scope in self.scopes:
            names |= scope.aliases.keys() | scope.callers.keys()
        return frozenset(names | self.holder_names())

    # ---- what is the record

    def via(self, expr: ast.expr, scope: _Scope) -> str | None:
        """How `expr` evaluates to the record, or None when it does not."""
        found = self.reach(expr, scope)
        return found[0] if found else None

    def reach(self, expr: ast.expr, scope: _Scope) -> Reach | None:
        """(via, origin) when `expr` evaluates to the record, else None."""
        typed = typed_reach(self, expr, scope)
        if typed is not None:
            return typed
        if isinstance(expr, (ast.Call, ast.Subscript)) and self.parsed(expr, scope):
            return ("parsed", "built")
        if isinstance(expr, ast.Call):
            return self._reach_call(expr, scope)
        if isinstance(expr, ast.Name):
            return self._lookup(expr.id, scope)
        if isinstance(expr, ast.Attribute):
            return self._reach_attribute(expr, scope)
        if isinstance(expr, (ast.NamedExpr, ast.Await)):
            # `(await rec()).tp_size`: an async function returning the record gives it when awaited
            return self.reach(expr.value, scope)
        if isinstance(expr, (ast.Subscript, _MatchedField)):
            # `vars(self)["server_args"]` is `self.server_args`; a positional sub-pattern the
            # attribute `__match_args__` names
            named = holders.keyed_attribute(expr) if isinstance(expr, ast.Subscript) else self.matched(expr)
            return self.reach(named, scope) if named is not None else None
        branches: list[ast.expr] = []
        if isinstance(expr, ast.IfExp):
            branches = [expr.body, expr.orelse]
        elif isinstance(expr, ast.BoolOp):
            branches = list(expr.values)
        # Either branch may be the value: the first one found names the spelling, the
        # join of all of them says which record it may be. A branch that is not the
        # record at all makes the whole value only maybe the record ("rebound"); that is
        # only decided once the aliases are final (strict), since a branch that is not an
        # alias yet may become one later in the fixpoint.
        result: Reach | None = None
        missed = False
        for branch in branches:
            found = self.reach(branch, scope)
            if found is None:
                missed = True
            else:
                result = found if result is None else (result[0], join_origin(result[1], found[1]))
        if result is not None and missed and self.strict:
            result = (result[0], join_origin(result[1], "rebound"))
        return result

    def _reach_attribute(self, expr: ast.Attribute, scope: _Scope) -> Reach | None:
        if dotted(expr) in self.flows.record_holders or dotted(expr) in self.flows.home_holders:
            return ("imported", "held")  # `a.REC` where module a binds REC to the record
        if expr.attr in self.record_attrs:
            # `pkg.server_args` where `pkg` is an imported module names a module
            base = expr.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in self.imported and dotted(expr.value) not in self.imported_stored:
                return None  # (`app.state.server_args` of another module's `app` is the record)
            # whose record is `x.server_args`? Only the author knows: "held". Unless
            # the class visibly puts another there (`self.server_args =
            # ServerArgs(...)`, `dataclasses.replace(...)`): then it is no more than that.
            owner = self.method_class(expr.value, scope)
            built = self.class_record_attrs.get((owner, expr.attr)) if owner is not None else None
            return ("attribute", join_origin("held", built) if built else "held")
        if expr.attr in self.self_attrs and self._is_self(expr.value, scope):
            return ("self_alias", self.self_attrs[expr.attr])
        if expr.attr in self.class_attrs and not (
            isinstance(expr.value, ast.Name) and expr.value.id in self.imported
        ):  # (`mod.ARGS` of an imported module is the module's, a holder above when it is one)
            return ("attribute", join_origin(self.class_attrs[expr.attr], "held"))
        return None

    def fetched_value(self, call: ast.expr) -> ast.expr | None:
        """What a fetching call evaluates to, as the attribute chain it spells
        (`getattr(self, "server_args")` is `self.server_args`), or None."""
        for fetch in self.fetched.get(id(call), ()) if isinstance(call, ast.Call) else ():
            path = fetch.value_path()
            if path:
                return fetched_chain(fetch.target, path, call)
        return None

    def _reach_call(self, call: ast.Call, scope: _Scope) -> Reach | None:
        # `Rec.from_dict(rec.to_dict())`: a copy, read as `rec` (as copy.copy)
        source = _round_trip(call, self.from_values, self.to_values)
        by_name = self._reach_by_name(call, scope) if source is None else self.reach(source, scope)
        if by_name is not None:
            return by_name
        # `getattr(accessors, "get_server_args")()` calls the attribute it fetches
        func = self.fetched_value(call.func) or call.func
        replaced = self._replace_reach(func, call, scope)
        if replaced is not None:
            return replaced
        if isinstance(func, ast.Name):
            if func.id in self.raw_names:
                return ("accessor", "process")
            if func.id in self.wrappers:
                return ("wrapper", self.wrappers[func.id])
            if func.id in self.class_names:
                return ("constructed", built_origin(call))
            if func.id in _COPY_CALLS and call.args:
                return self.reach(call.args[0], scope)
        elif isinstance(func, ast.Attribute):
            if func.attr == self.settings.raw_accessor or func.attr in self.raw_names:
                return ("accessor", "process")
            if func.attr in self.class_names:
                return ("constructed", built_origin(call))  # mod.ServerArgs(...)
            # (`ServerArgs.instance()` where the home's classmethod returns the published
            # record is not one built in place: _imported_call)
            if isinstance(func.value, ast.Name) and func.value.id in self.class_names and dotted(func) not in self.flows.record_fetchers:
                # ServerArgs.from_cli(...), from_cli_args(ns), from_dict(d): the generated
                # constructors read config files and the environment, even from `[]`
                return ("constructed", "constructed" if func.attr in BUILDS_NOTHING else "built")
            if func.attr in _COPY_CALLS and call.args:
                return self.reach(call.args[0], scope)
            if func.attr in self.self_attrs and self._is_self(func.value, scope):
                # self.args() where args returns the record
                return ("self_alias", self.self_attrs[func.attr])
        return self._imported_call(func, scope)

    def _replace_reach(self, func: ast.expr, call: ast.Call, scope: _Scope) -> Reach | None:
        """A copy of the record with fields changed (`dataclasses.replace(rec, ...)`,
        `attrs.evolve`, `copy.replace`, `rec.replace(...)`, `rec.__replace__(...)`,
        `ServerArgs.__replace__(rec, ...)`): the published values it does not change. One
        of a record built here of literals (`ServerArgs().__replace__(port=1)`) is still no
        config (a value given that is a read is read where it is spelled)."""
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in _REPLACE_CALLS and not (isinstance(func, ast.Attribute) and name in self.replace_calls):
            return None  # (the kind's copies are methods only: `rec._replace(port=1)`)
        if isinstance(func, ast.Name) and (name in self.raw_names or name in self.wrappers):
            return None  # (a function of the module's own by that name gives what it returns)
        source = self.reach(call.args[0], scope) if call.args else None
        if source is None and isinstance(func, ast.Attribute):
            source = self.reach(func.value, scope)
        if source is None:
            return None
        return source if source[1] == "constructed" else ("replaced", "replaced")

    def filled_parser(self, expr: ast.expr, scope: _Scope) -> bool:
        """Is `expr` a parser `ServerArgs.add_cli_args` filled, as `scope` sees it: a name
        filled (by add_cli_args or a filler's call, in the scope binding it or an enclosing
        one, a parameter too) or bound to a filled parser, `self.<attr>` filled in any
        method of the class, or a call of a function giving one (`new_parser()`,
        `make_arg_parser(p)`)? A parser only a filler of the same name in another function
        filled, one handed through a callable the scanner cannot see, or one never filled
        parses none of the config."""
        if isinstance(expr, ast.Name):
            holder = self.visible(expr.id, scope) if self.filled else None
            return holder is not None and (id(holder), expr.id) in self.filled
        if isinstance(expr, ast.Attribute):
            owner = self.method_class(expr.value, scope) if self.filled_attrs else None
            return owner is not None and (owner, expr.attr) in self.filled_attrs
        if isinstance(expr, ast.Call) and self.parser_givers:
            return dotted(expr.func) in self.parser_givers
        if isinstance(expr, (ast.NamedExpr, ast.Await)):
            return self.filled_parser(expr.value, scope)
        return False

    def parsed(self, expr: ast.Call | ast.Subscript, scope: _Scope) -> bool:
        """Is `expr` the Namespace a filled parser parses: `p.parse_args(argv)`, the first
        of the pair `p.parse_known_args(argv)` gives (`[0]`, of the call or of a name bound
        to it), or a parse helper's call handed a filled parser (`parse(p, argv)`)?"""
        parser = parsing_call(expr)
        if parser is not None:
            return self.filled_parser(parser, scope)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and self.pairs:
            index = expr.slice
            if isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0:
                holder = self.visible(expr.value.id, scope)
                return holder is not None and (id(holder), expr.value.id) in self.pairs
        if isinstance(expr, ast.Call) and self.parse_helpers:
            positions = self.parse_helpers.get(dotted(expr.func), ())
            return any(i < len(expr.args) and self.filled_parser(expr.args[i], scope) for i in positions)
        return False

    def _settle_parsers(self) -> None:
        """Which names and `self.` attributes hold a filled parser: those add_cli_args or
        a filler's call filled, then, to a fixpoint, those bound to a filled parser
        (`parser = make_arg_parser(parser)`, `self.parser = new_parser()`); and which names
        hold the pair a filled parser's parse_known_args gives."""
        self.filled_by_call = {
            (id(holder), name) for scope, name in self.fills if (holder := self.visible(name, scope)) is not None
        }
        self.filled = set(self.filled_by_call)
        self.filled_attrs = {
            (owner, attr) for scope, attr in self.attr_fills if (owner := _method_owner(scope)) is not None
        }
        if not (self.filled or self.filled_attrs or self.parser_givers):
            return
        changed = True
        while changed:
            changed = False
            for scope in self.scopes:
                for name, value, forced in scope.assigns:
                    key = (id(self.binding_scope(name, scope)), name)
                    if forced is None and value is not None and key not in self.filled and self.filled_parser(value, scope):
                        self.filled.add(key)
                        changed = True
                owner = _method_owner(scope)
                if owner is None:
                    continue
                for attr, self_value in scope.self_assigns:
                    if (owner, attr) not in self.filled_attrs and self_value is not None and self.filled_parser(
                        self_value, scope
                    ):
                        self.filled_attrs.add((owner, attr))
                        changed = True
        self.pairs = {
            (id(self.binding_scope(name, scope)), name) for scope in self.scopes for name, value, forced in scope.assigns
            if forced is None and (parser := _pair_parser(value)) is not None and self.filled_parser(parser, scope)
        }

    def parser_facts(self, tree: ast.Module) -> list[tuple[str, str]]:
        """(function, kind) of the module-level functions a filled parser flows through, for
        the project pass: "parser_fills:<position>" filling that parameter (add_cli_args or
        a filler's call on it), "parser" giving a filled parser (`return parser`, `return
        make_arg_parser(p)`)."""
        found: list[tuple[str, str]] = []
        if not (self.filled or self.parser_givers):
            return found
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            scope = self.scope_of.get(id(node))
            if scope is None:
                continue
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            found += [
                (node.name, f"parser_fills:{i}") for i, param in enumerate(params)
                if (id(scope), param) in self.filled_by_call
            ]
            if any(self.filled_parser(value, scope) for value in scope.returns):
                found.append((node.name, "parser"))
        return found

    def _reach_by_name(self, call: ast.Call, scope: _Scope) -> Reach | None:
        """What a fetch by name evaluates to: `getattr(self, "server_args")` is
        `self.server_args`, so is `vars(self).get("server_args")`; `getattr(cfg, name)` with
        `name` bound to literals is whichever attribute it fetches."""
        chain = self.fetched_value(call)
        if chain is not None:
            return self.reach(chain, scope)
        keyed = holders.keyed_attribute(call)
        if keyed is not None:
            return self.reach(keyed, scope)
        chains = self.fetched_values(call, scope)
        reaches = [found for chain in chains if (found := self.reach(chain, scope)) is not None]
        if not reaches:
            return None
        origin = functools.reduce(join_origin, (found[1] for found in reaches))
        return (reaches[0][0], origin if len(reaches) == len(chains) else join_origin(origin, "rebound"))

    def gives_record(self, expr: ast.expr, scope: _Scope) -> str | None:
        """The origin of what calling `expr` gives, when `expr` is a function whose call
        gives the record: the raw accessor, a function of the module that returns it (by
        the name that refers to it), an imported one (`h.rec`, FlowInput.record_fetchers),
        or a name bound to any of these; else None."""
        expr = self.fetched_value(expr) or expr
        if isinstance(expr, ast.Attribute):
            if expr.attr == self.settings.raw_accessor:
                return "process"
            return "held" if self.flows.record_fetchers and dotted(expr) in self.flows.record_fetchers else None
        if not isinstance(expr, ast.Name):
            return None
        if expr.id in self.raw_names:
            return "process"
        holder = self.visible(expr.id, scope)
        if holder is None or holder is self.module:
            if expr.id in self.flows.record_fetchers:
                return "held"
            if holder is None:
                return None
        found = holder.callers.get(expr.id)
        defined = self.returning.get(holder.child_prefix() + expr.id)
        if found and defined:
            return join_origin(found, defined)
        return found or defined

    def _imported_call(self, func: ast.expr, scope: _Scope) -> Reach | None:
        """`rec()`, `h.rec()`: imported from a module where it returns the record; `r()`
        where `r = rec`."""
        if self.flows.record_fetchers and dotted(func) in self.flows.record_fetchers:
            return ("wrapper", "held")
        if isinstance(func, ast.Name):
            holder = self.visible(func.id, scope)
            if holder is not None and func.id in holder.callers:
                return ("wrapper", holder.callers[func.id])
        return None

    def write_origin(self, expr: ast.expr, scope: _Scope) -> str:
        """Which record a write through `expr` changes (WRITE_ORIGINS): its origin as a
        read, except that a copy of the record (`copy.copy(rec)`) is not the record."""
        found = self.reach(expr, scope)
        origin = found[1] if found else "process"
        if origin in ("process", "held") and self.copied(expr, scope, frozenset()):
            return "copied"
        return origin

    def copied(self, expr: ast.expr, scope: _Scope, seen: frozenset[str]) -> bool:
        """Whether `expr` may be a copy of the record: a copy call, or a name or `self.`
        attribute bound to one anywhere in its scope (flow-insensitive, like the aliases)."""
        if isinstance(expr, ast.NamedExpr):
            return self.copied(expr.value, scope, seen)
        if isinstance(expr, ast.Call):
            return (_name_of(expr.func) in _COPY_CALLS and bool(expr.args)) or _round_trip(
                expr, self.from_values, self.to_values
            ) is not None
        if isinstance(expr, ast.IfExp):
            return self.copied(expr.body, scope, seen) or self.copied(expr.orelse, scope, seen)
        if isinstance(expr, ast.BoolOp):
            return any(self.copied(value, scope, seen) for value in expr.values)
        if isinstance(expr, ast.Name) and expr.id not in seen:
            owner = self._owner(expr.id, scope)
            if owner is None:
                return False
            return any(
                value is not None and self.copied(value, where, seen | {expr.id})
                for where in self.scopes
                for name, value, _ in where.assigns
                if name == expr.id and self.binding_scope(name, where) is owner
            )
        if isinstance(expr, ast.Attribute) and self._is_self(expr.value, scope) and "self." + expr.attr not in seen:
            return any(
                value is not None and self.copied(value, where, seen | {"self." + expr.attr})
                for where in self.scopes
                for attr, value in where.self_assigns
                if attr == expr.attr
            )
        return False

    def _owner(self, name: str, scope: _Scope) -> _Scope | None:
        """The scope whose alias table holds `name` as seen from `scope` (as _lookup)."""
        holder = self.visible(name, scope)
        return holder if holder is not None and name in holder.aliases else None

    def _lookup(self, name: str, scope: _Scope) -> Reach | None:
        # a name bound in a nearer scope to something else shadows an outer alias
        holder = self.visible(name, scope)
        if holder is None and (name in self.flows.record_holders or name in self.flows.home_holders):
            return ("imported", "held")  # bound by `from pkg.a import *`, where a binds it
        return holder.aliases.get(name) if holder is not None else None

    def _is_self(self, expr: ast.expr, scope: _Scope) -> bool:
        if not isinstance(expr, ast.Name):
            return False
        current: _Scope | None = scope
        while current is not None and current.kind != "module":
            if current.kind == "function" and current.self_name == expr.id:
                return True
            if expr.id in current.bound:
                return False
            current = current.parent
        return False

    # ---- the record dict under other names

    def module_name(self, name: str, scope: _Scope) -> bool:
        """`name` is not bound by `scope` or an enclosing function (so it is the module's:
        a class or dict copy of the record, not a local of the same name)."""
        current: _Scope | None = scope
        while current is not None and current.kind != "module":
            if name in current.bound and name not in current.globals and current.kind != "class":
                return False
            current = current.parent
        return True

    def is_record_dict(self, expr: ast.expr, scope: _Scope) -> bool:
        """Is `expr` the record dict: by its name or another (an alias, one imported), an
        attribute of that name, or a call of a function giving it?"""
        if isinstance(expr, ast.Name):
            if expr.id not in self.record_dicts and expr.id not in self.dict_aliases:
                return False
            if self.module_name(expr.id, scope):
                return True
            holder = self.visible(expr.id, scope)
            return holder is not None and (id(holder), expr.id) in self.dict_imports
        if isinstance(expr, ast.Attribute):
            return expr.attr in self.record_dicts or dotted(expr) in self.flows.record_dict_holders
        if isinstance(expr, ast.Await):
            return self.is_record_dict(expr.value, scope)  # `(await gsad())["page_size"]`
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in self.dict_fetchers and self.module_name(func.id, scope)
        return dotted(func) in self.flows.record_dict_fetchers

    def settle_dicts(self) -> None:
        """Once the scopes are bound: module-level names bound to the record dict
        (`GLOBAL_ARGS = global_server_args_dict`) are the dict in the whole module, and
        its functions returning the dict, or a local bound to it, give it when called;
        both for its importers too (the project pass)."""
        grown = True
        while grown:
            grown = False
            for name, value, _ in self.module.assigns:
                if value is not None and name not in self.dict_aliases and self.is_record_dict(value, self.module):
                    self.dict_aliases.add(name)
                    self.own_dict_holders.add(name)
                    grown = True
            for scope in self.scopes:
                if scope.kind != "function" or scope.parent is not self.module or scope.qualname in self.dict_fetchers:
                    continue
                local = {name for name, value, _ in scope.assigns if value is not None and self.is_record_dict(value, scope)}
                self.dict_locals |= local  # (so that the line returning one is walked)
                if any(
                    self.is_record_dict(value, scope) or (isinstance(value, ast.Name) and value.id in local)
                    for value in scope.returns
                ):
                    self.dict_fetchers.add(scope.qualname)
                    self.own_dict_fetchers.add(scope.qualname)
                    grown = True

    # ---- objects holding the record (configbags.migrate.holders)

    def settle_holders(self) -> None:
        """Once the aliases are known: the classes whose methods store the record in any
        `self.` attribute, or whose body binds an alias of it, hold it too; and where each
        name a record attribute is stored on is bound."""
        for scope in self.scopes:
            parent = scope.parent
            if scope.kind == "class" and scope.aliases:
                self.holder_classes.add(scope.qualname)
            elif scope.kind == "function" and parent is not None and parent.kind == "class" and any(
                value is not None and self.reach(value, scope) is not None for _, value in scope.self_assigns
            ):
                self.holder_classes.add(parent.qualname)
        # a subclass of a holder class holds what its base does
        grown = True
        while grown:
            held = {qualname.rsplit(".", 1)[-1] for qualname in self.holder_classes}
            subclasses = {sub for sub, bases in self.class_bases.items() if not bases.isdisjoint(held)}
            grown = not subclasses <= self.holder_classes
            self.holder_classes |= subclasses
        self.stored_on = {
            (id(self.visible(name.partition(".")[0], scope) or self.module), name) for scope, name in self.stores
        } | {(id(self.module), name) for name in self.imported_stored}
        self._holders.clear()
        # a module-level function returning a holder, or a literal container holding one
        # (`return {"scheduler": Scheduler(args)}`), gives one: its call is a holder, as
        # a class's is (an item of it too: holder), in its module and its importers
        for scope in self.scopes:
            if scope.kind != "function" or scope.parent is not self.module or scope.qualname in self.holder_classes:
                continue
            given = [found for value in scope.returns for found in self._held_in(value, scope)]
            if given:
                self.class_names_of.setdefault(scope.qualname, scope.qualname)
                self.holder_classes.add(scope.qualname)
                self.holder_functions.add(scope.qualname)
                if any(found in self.generated_reprs for found in given):
                    self.generated_reprs.add(scope.qualname)  # (a container's repr shows its items')
                if any(found in self.generated_eqs for found in given):
                    self.generated_eqs.add(scope.qualname)  # (and its `==` compares them)
                self._holders.clear()

    def _held_in(self, value: ast.expr, scope: _Scope) -> list[str]:
        """The holders `value` is or a literal container it is holds (one level deep)."""
        items = [*value.values] if isinstance(value, ast.Dict) else (
            list(value.elts) if isinstance(value, (ast.List, ast.Tuple, ast.Set)) else [value]
        )
        return [found for item in items if not isinstance(item, ast.Starred) and (found := self.holder(item, scope))]

    def holder_names(self) -> set[str]:
        """The names through which a holder is reached: its class, and names bound to one."""
        names = {qualname.rsplit(".", 1)[-1] for qualname in self.holder_classes}
        names |= {name.partition(".")[0] for _, name in self.stored_on}
        if self.holder_classes or self.views or self.accessor_modules or self.stored_on:
            for scope in self.scopes:
                for name, value, _ in scope.assigns:
                    if value is not None and name not in names and (
                        self.holder(value, scope) or self.is_context(value, scope)
                    ):
                        names.add(name)
        return names

    def quiet_lines(self) -> set[int]:
        """Lines that mention a holder class only to define it: walking them adds nothing."""
        return {line for qualname in self.holder_classes for line in self.class_lines.get(qualname, ())}

    def holder(self, expr: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> str | None:
        """What holds the record in an attribute, where `expr` is one: the qualname of its
        class, VIEW (the process view), STORED (a name a record attribute is stored on);
        else None."""
        if isinstance(expr, (ast.NamedExpr, ast.Await)):
            return self.holder(expr.value, scope, seen)
        if isinstance(expr, ast.Name):
            return self._holder_name(expr, scope, seen)
        if isinstance(expr, ast.Subscript) and isinstance(expr.ctx, ast.Load):
            # an item of a holder (`launch()["scheduler"]`, `parts["scheduler"]`) may be one
            found = self.holder(expr.value, scope, seen)
            return found if found != VIEW else None
        if isinstance(expr, ast.Call):
            func = expr.func
            name = _name_of(func)
            if name in _COPY_CALLS or name in _REPLACE_CALLS:
                return self.holder(expr.args[0], scope, seen) if expr.args else None
            qualname = self.class_names_of.get(name) if isinstance(func, (ast.Name, ast.Attribute)) else None
            return qualname if qualname in self.holder_classes else None  # an instance
        if isinstance(expr, ast.Attribute):
            base = expr.value
            if expr.attr in holders.VIEW_ATTRS and (
                self.is_context(base, scope)
                or (isinstance(base, ast.Attribute) and base.attr == "installer" and self.is_context(base.value, scope))
            ):
                return VIEW  # `get_context().view`, `ctx.installer.cfg`
            if expr.attr == "cfg" and isinstance(base, ast.Name):
                owner = self.visible(base.id, scope)
                if owner is not None and (id(owner), base.id) in self.accessor_modules:
                    return VIEW  # `accessors.cfg`
            root = dotted(base)
            if expr.attr == "cfg" and root.endswith(".accessors") and root.partition(".")[0] in self.imported:
                return VIEW  # `import pkg.accessors`, then `pkg.accessors.cfg`
            path = f"{root}.{expr.attr}" if root else ""
            owner = self.visible(root.partition(".")[0], scope) or self.module if root else None
            return STORED if owner is not None and (id(owner), path) in self.stored_on else None
        branches = [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else (
            expr.values if isinstance(expr, ast.BoolOp) else [])
        return next((found for b in branches if (found := self.holder(b, scope, seen))), None)

    def _holder_name(self, expr: ast.Name, scope: _Scope, seen: frozenset[str]) -> str | None:
        owner_class = self.method_class(expr, scope)
        if owner_class is not None:
            return owner_class if owner_class in self.holder_classes else None  # `self`, `cls`
        owner = self.visible(expr.id, scope) or self.module
        key = (id(owner), expr.id)
        if key in self._holders:
            return self._holders[key]
        if expr.id in seen:
            return None
        # an instance of a holder class names the class (its repr may be generated)
        found = next((
            held for where in self.scopes for name, value, _ in where.assigns
            if name == expr.id and value is not None and self.binding_scope(name, where) is owner
            and (held := self.holder(value, where, seen | {expr.id}))
        ), None)
        if found is not None:
            pass
        elif key in self.views:
            found = VIEW
        elif key in self.stored_on:
            found = STORED
        elif self.class_names_of.get(expr.id) in self.holder_classes:
            found = self.class_names_of[expr.id]  # the class itself (`vars(Shared)`)
        if not seen:
            self._holders[key] = found
        return found

    def instance_class(self, expr: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> str | None:
        """The class whose instance `expr` is, as spelled: `Totals()` is `Totals` (a
        function's call too: its name resolves to no class then), and so is a name its
        scope binds only to such calls (in the code, walked or not); `self` is `self:`
        and its method's class; BUILTIN for a literal, a comprehension or a builtin
        container; else None (unknown: a parameter, an attribute, a call result)."""
        if isinstance(expr, (ast.NamedExpr, ast.Await)):
            return self.instance_class(expr.value, scope, seen)
        if isinstance(expr, _LITERALS):
            return BUILTIN
        if isinstance(expr, ast.Call):
            name = dotted(expr.func)
            return BUILTIN if name.rpartition(".")[2] in _BUILTIN_TYPES else (name or None)
        if not isinstance(expr, ast.Name) or expr.id in seen:
            return None
        owner_class = self.method_class(expr, scope)
        if owner_class is not None:
            return "self:" + owner_class
        # the nearest function (or the module) binding the name in its code: the pruned
        # walk may have skipped the line (`t = Totals()` mentions nothing of interest)
        current: _Scope | None = scope
        while current is not None:
            if expr.id in current.globals:
                current = self.module
            node = self.scope_nodes.get(id(current)) if current.kind in ("module", "function") else None
            if node is not None:
                key = (id(current), expr.id)
                if key not in self._instances:
                    values = holders.instance_values(node, expr.id)
                    found = {
                        self.instance_class(value, current, seen | {expr.id}) if value is not None else None
                        for value in values
                    }
                    self._instances[key] = (found.pop() if len(found) == 1 else None) if values else ""
                if self._instances[key] != "" or current.kind == "module":
                    return self._instances[key] or None
            current = current.parent
        return None

    def class_value(self, qualname: str, attr: str, depth: int = 0) -> str | None:
        """What the class body of `qualname` (or of a base of the module) binds `attr` to a
        call of (`server_args = Captures()`), as spelled; else None."""
        found = self.class_values.get((qualname, attr))
        if found is not None or depth > 8:
            return found
        for base in self.class_bases.get(qualname, ()):
            inherited = self.class_names_of.get(base)
            found = self.class_value(inherited, attr, depth + 1) if inherited else None
            if found is not None:
                return found
        return None

    def is_context(self, expr: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> bool:
        """Is `expr` a config context (`get_context()`, a name bound to one)?"""
        if isinstance(expr, ast.Call):
            return holders.is_context_call(expr, self.flows.context_fetchers)
        if isinstance(expr, (ast.Name, ast.Attribute)) and dotted(expr) in self.flows.context_holders:
            return True
        if isinstance(expr, ast.Attribute) and self._is_self(expr.value, scope) and "self." + expr.attr not in seen:
            # `self.ctx = get_context()` in any method
            return any(
                value is not None and self.is_context(value, where, seen | {"self." + expr.attr})
                for where in self.scopes for attr, value in where.self_assigns if attr == expr.attr
            )
        if not isinstance(expr, ast.Name) or expr.id in seen:
            return False
        owner = self.visible(expr.id, scope)
        return owner is not None and any(
            value is not None and self.binding_scope(name, where) is owner
            and self.is_context(value, where, seen | {expr.id})
            for where in self.scopes for name, value, _ in where.assigns if name == expr.id
        )

    def holder_attrs(self) -> frozenset[str]:
        """The attributes through which a holder may give the record."""
        return self.record_attrs | self.self_attrs.keys() | self.class_attrs.keys()

    def fetch_names(self, call: ast.Call, fetch: Fetch, scope: _Scope) -> holders.Names:
        """What a fetch by a name the door analysis could not resolve may fetch: the
        name's literal parts, a local resolved one step (configbags.migrate.holders)."""
        if fetch.form == "attrgetter":
            getter = call.func
            if not (isinstance(getter, ast.Call) and len(getter.args) == 1 and not getter.keywords):
                return None  # a getter made elsewhere, or of several paths
            spelled: ast.expr = getter.args[0]
            where = self.scope_of.get(id(getter), scope)
        elif fetch.form in ("getattr", "getattr_default", "hasattr") and len(call.args) > 1:
            spelled, where = call.args[1], scope
        else:
            return None
        if isinstance(spelled, ast.Name):
            # the innermost function (or comprehension) binding it, in the code itself: a
            # binding on a line the pruned walk skipped counts too
            current: _Scope | None = where
            while current is not None and current.kind != "module":
                node = self.scope_nodes.get(id(current))
                values = list(holders.bound_values(node, spelled.id, self.sequences())) if node is not None and (
                    current.kind != "class") else []
                if values:
                    return holders.literal_names(spelled, values)
                current = current.parent
            return None  # a module's name the door analysis did not take for a constant
        return holders.literal_names(spelled)

    def sequences(self) -> holders.Sequences:
        """The module's names bound once to a literal sequence (holders.module_sequences)."""
        if self._sequences is None:
            tree = self.scope_nodes.get(id(self.module))
            self._sequences = holders.module_sequences(tree) if isinstance(tree, ast.Module) else {}
        return self._sequences

    def matched(self, field: _MatchedField) -> ast.expr | None:
        """The attribute a positional sub-pattern reads, where its class's `__match_args__`
        show it (`case W(a)` with `__match_args__ = ("server_args",)` is `subject.server_args`)."""
        names = self.match_args.get(self.class_names_of.get(field.cls, ""), ())
        if field.index >= len(names):
            return None
        return ast.copy_location(ast.Attribute(value=field.value, attr=names[field.index], ctx=ast.Load()), field)

    def fetched_values(self, call: ast.Call, scope: _Scope) -> list[ast.expr]:
        """The attribute chains a fetch by a name resolved here may evaluate to
        (`for n in ("a", "b"): getattr(x, n)` is `x.a` or `x.b`)."""
        chains: list[ast.expr] = []
        for fetch in self.fetched.get(id(call), ()):
            if fetch.form in ("getattr", "getattr_default", "attrgetter") and fetch.paths == (None,):
                names = self.fetch_names(call, fetch, scope)
                if isinstance(names, frozenset):
                    chains += [fetched_chain(fetch.target, tuple(n.split(".")), call) for n in sorted(names)]
        return chains

    def is_record_annotation(self, node: ast.expr | None) -> bool:
        return self.types.annotation(node) == RECORD

    def is_record_factory_annotation(self, node: ast.expr | None) -> bool:
        """`Callable[[], ServerArgs]`, `Callable[..., ServerArgs]` (a string too): a
        function whose call gives the record."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "Callable" in node.value:
            try:
                node = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return False
        return (
            isinstance(node, ast.Subscript)
            and _name_of(node.value) == "Callable"
            and isinstance(node.slice, ast.Tuple)
            and len(node.slice.elts) == 2
            and self.is_record_annotation(node.slice.elts[1])
        )

    # ---- alias resolution: a flow-insensitive fixpoint, so a binding on any path counts

    def resolve(self) -> None:
        """The first fixpoint: which names, attributes and functions reach the record."""
        # every binding is known now, so which scope's name each add_cli_args call fills
        self._settle_parsers()
        self._propagate()

    def resolve_rebound(self) -> None:
        """After resolve(), in the final round only: names of interest do not depend on
        origins, so earlier rounds skip this. Only now is it known which bindings are
        *not* the record (a value that does not reach it now never will), so those taint
        their names as "rebound", and a second fixpoint carries the raised origins through
        copies (`b = a`), `self.` attributes and wrappers. Origins only rise, so it never
        undoes the first."""
        self.strict = True
        for scope in self.scopes:
            for name, value, _ in scope.assigns:
                if value is None or self.reach(value, scope) is None:
                    owner = self.binding_scope(name, scope)
                    if name in owner.aliases:
                        _merge(owner.aliases, name, ("alias", "rebound"))
                    if name in owner.callers and (value is None or self.gives_record(value, scope) is None):
                        _merge_origin(owner.callers, name, "rebound")
            for name, value in scope.defaults:
                # `def f(sa=None)` with `sa = get_server_args()` in the body: the caller's sa
                if name in scope.aliases and (scope.parent is None or self.reach(value, scope.parent) is None):
                    _merge(scope.aliases, name, ("parameter", "rebound"))
            for attr, value in scope.self_assigns:
                if attr in self.self_attrs and (value is None or self.reach(value, scope) is None):
                    _merge_origin(self.self_attrs, attr, "rebound")
        self._propagate()

    def _bind_assigns(self, scope: _Scope) -> bool:
        changed = False
        for name, value, forced in scope.assigns:
            if value is None:
                continue
            found = self.reach(value, scope)
            if found is not None:
                origin = join_origin(found[1], forced) if forced else found[1]
                changed |= _merge(self.binding_scope(name, scope).aliases, name, ("alias", origin))
            gives = self.gives_record(value, scope) if forced is None else None
            if gives is not None:
                # `r = rec`, `load_args = h.rec`: a call of the name gives the record
                changed |= _merge_origin(self.binding_scope(name, scope).callers, name, gives)
        return changed

    def _bind_returns(self, scope: _Scope) -> bool:
        changed = False
        name = scope.qualname.rsplit(".", 1)[-1]
        known = self.self_attrs if scope.self_name else self.wrappers
        for value in scope.returns:
            found = self.reach(value, scope)
            if found is not None:
                changed |= _merge_origin(known, name, found[1])
                if not scope.self_name:
                    changed |= _merge_origin(self.returning, scope.qualname, found[1])
        return changed

    def _propagate(self) -> None:
        # Origins only ever move up the (finite) ORIGINS order, so this terminates.
        changed = True
        while changed:
            changed = False
            for scope in self.scopes:
                changed |= self._bind_assigns(scope)
                for name, value in scope.defaults:
                    found = self.reach(value, scope.parent) if scope.parent else None
                    if found is not None:
                        # any caller may pass another record: held, like an annotated one
                        origin = join_origin(found[1], "held")
                        changed |= _merge(scope.aliases, name, ("parameter", origin))
                for attr, self_value in scope.self_assigns:
                    found = self.reach(self_value, scope) if self_value is not None else None
                    if found is not None:
                        changed |= _merge_origin(self.self_attrs, attr, found[1])
                        if attr in self.record_attrs and scope.parent is not None and scope.parent.kind == "class":
                            key = (scope.parent.qualname, attr)
                            changed |= _merge_origin(self.class_record_attrs, key, found[1])
                if scope.kind == "class":
                    # class-level aliases are read as self.NAME / cls.NAME
                    for name, (_, origin) in list(scope.aliases.items()):
                        changed |= _merge_origin(self.self_attrs, name, origin)
                        changed |= _merge_origin(self.class_attrs, name, origin)
                if scope.kind == "function" and scope.returns:
                    changed |= self._bind_returns(scope)


_K = TypeVar("_K")


def _positions(entries: Iterable[str]) -> dict[str, list[int]]:
    """"spelled|position" entries (FlowInput.fillers and the like): spelled -> positions."""
    found: dict[str, list[int]] = {}
    for entry in entries:
        spelled, _, position = entry.rpartition("|")
        found.setdefault(spelled, []).append(int(position))
    return found


def _method_owner(scope: Scope) -> str | None:
    """The qualname of the class whose method (its `self` named) `scope` is, or None."""
    parent = scope.parent
    if scope.kind == "function" and scope.self_name and parent is not None and parent.kind == "class":
        return parent.qualname
    return None


def _merge(table: dict[str, Reach], name: str, new: Reach) -> bool:
    """Record that `name` reaches the record as `new`; keep the first spelling, join the
    origins. True when the table changed."""
    old = table.get(name)
    merged = new if old is None else (old[0], join_origin(old[1], new[1]))
    if merged != old:
        table[name] = merged
        return True
    return False


def _merge_origin(table: dict[_K, str], name: _K, origin: str) -> bool:
    old = table.get(name)
    merged = origin if old is None else join_origin(old, origin)
    if merged != old:
        table[name] = merged
        return True
    return False



def _round_trip(
    call: ast.Call, from_values: frozenset[str] = _FROM_VALUES, to_values: frozenset[str] = _TO_VALUES,
) -> ast.expr | None:
    """What `call` rebuilds a record from, where it is `X.from_dict(rec.to_dict())` (or of
    `rec._asdict()`, `asdict(rec)`, `vars(rec)`; the record kind's own, `X.model_validate(
    rec.model_dump())`, too): `rec`; else None."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in from_values and len(call.args) == 1):
        return None
    values = call.args[0]
    if not isinstance(values, ast.Call):
        return None
    if isinstance(values.func, ast.Attribute) and values.func.attr in to_values and not values.args:
        return values.func.value
    if _name_of(values.func) in _WHOLE_RECORD_CALLS and len(values.args) == 1:
        return values.args[0]
    return None

def _spelled(value: ast.expr) -> bool:
    """Is `value` a literal the code spells (`"m"`, `2`, `["a", 1]`, `-1`)?"""
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def built_origin(call: ast.Call) -> str:
    """The origin of the record class called: "constructed" where every argument is a
    literal (`ServerArgs()`, `ServerArgs(model_path="m")`: the class's defaults and what the
    code spells, no config), "built" where any is a value the code does not show
    (`ServerArgs(**vars(ns))`, `ServerArgs(page_size=n)`): the command line's or a file's
    values, the config, followed like the published record."""
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    if any(keyword.arg is None for keyword in call.keywords) or not all(map(_spelled, given)):
        return "built"
    return "constructed"


def _name_of(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


class _Pruned(StatementWalker):
    """Visits only statements whose lines mention a name of interest (and always
    `global`/`nonlocal`, which change what a mention elsewhere binds). A statement that
    mentions none can neither read nor bind nor shadow the record, so most of a file is
    never walked: this is what keeps the scan close to the cost of `ast.parse`."""

    a: _Analysis

    scope: _Scope

    def visit_statements(self, statements: Iterable[ast.AST]) -> None:
        lines = self.a.lines
        # The record class's own body: its methods' `self` is a record whether or not a
        # method mentions a name of interest (`def __post_init__(self): self.tp_size = 1`).
        # Likewise a dataclass holding the record in a field: its repr, `f"{self}"` in any
        # method, reads the record whole.
        scope = self.scope
        whole = (scope.kind == "class" and (
            scope.qualname.rsplit(".", 1)[-1] in self.a.class_names or scope.qualname in self.a.walk_whole
            or scope.qualname in self.a.flows.record_bases
        )) or (scope.self_name is not None and scope.parent is not None and scope.parent.qualname in self.a.walk_whole)
        if whole:
            kept: Iterable[ast.AST] = statements
        else:
            found = self.a.kept.get(id(statements))
            if found is None:
                found = self.a.kept[id(statements)] = [
                    node for node in statements
                    if not isinstance(node, ast.stmt)
                    or isinstance(node, (ast.Global, ast.Nonlocal))
                    or mentions(lines, statement_span(node))
                ]
            kept = found
        for node in kept:
            self.visit(node)


class _Binder(_Pruned, ScopeBinder[_Scope]):
    """Pass 1: build scopes and collect bindings (names, `self.x = ...`, returns)."""

    def __init__(self, analysis: _Analysis) -> None:
        self.a = self.scopes = analysis
        self.scope = analysis.module
        self.captures: dict[int, ast.expr] = {}  # id(MatchAs) -> the subject it binds

    def new_scope(self, kind: str, qualname: str, parent: _Scope) -> _Scope:
        return _Scope(kind, qualname, parent)

    def _open(self, node: ast.AST, kind: str, name: str | None) -> _Scope:
        scope = super()._open(node, kind, name)
        self.a.scope_nodes[id(scope)] = node  # where a name's bindings are read (holders.bound_values)
        return scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # what the class statement shows, known before its body is walked (_Pruned)
        qualname = self.scope.child_prefix() + node.name
        a = self.a
        a.class_names_of[node.name] = qualname
        a.class_lines[qualname] = {node.lineno, *(d.lineno for d in node.decorator_list)}
        a.class_bases[qualname] = frozenset(_name_of(base) for base in node.bases)
        facts = holders.class_facts(node, a.record_attrs, a.settings.record_class)
        generated = facts.shows or facts.compares
        if facts.shows:
            a.generated_reprs.add(qualname)
        if facts.compares:
            a.generated_eqs.add(qualname)
        if facts.match_args is not None:
            a.match_args[qualname] = facts.match_args
        for stmt in node.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Call) and dotted(value.func):
                # `server_args = Captures()`: a descriptor, maybe, whose `__set__` sees a store
                for target in targets:
                    if isinstance(target, ast.Name):
                        a.class_values[(qualname, target.id)] = dotted(value.func)
            if any(isinstance(t, ast.Name) and t.id in a.record_attrs for t in targets):
                a.holder_classes.add(qualname)  # `server_args = None`, a field `server_args: Any`
                if generated:
                    a.walk_whole.add(qualname)
        super().visit_ClassDef(node)

    def bind_name(self, name: str, value: ast.expr | None, forced: str | None = None,
                  scope: _Scope | None = None) -> None:
        # a binding to None (opaque: an import, a `def`, `except ... as name`, a match
        # capture) is never the record: it taints an alias of the same name
        (scope or self.scope).assigns.append((name, value, forced))
        super().bind_name(name, value, forced, scope)

    def opened_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, in_class: bool) -> None:
        positional = [*node.args.posonlyargs, *node.args.args]
        if in_class and positional and not _is_staticmethod(node):
            scope.self_name = positional[0].arg
            owner = self.scope.qualname.rsplit(".", 1)[-1]
            record = owner in self.a.class_names or (self.scope.qualname == owner and owner in self.a.flows.record_bases)
            if record and not _is_classmethod(node):
                # a method of the record class (`__post_init__`, a resolution step), or of
                # a mixin it derives from: its `self` is a record, whichever one it was called on
                _merge(scope.aliases, positional[0].arg, ("parameter", "held"))

    def bind_params(self, scope: _Scope, args: ast.arguments) -> None:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                self.bind_name(extra.arg, None, scope=scope)  # a tuple or dict, never the record
                if self.a.types.annotation(extra.annotation):
                    self.a.elements.add((id(scope), extra.arg))  # `*recs: ServerArgs`: records
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        scope.defaults.extend((arg.arg, default) for arg, default in pairs)
        defaulted = {arg.arg for arg, _ in pairs}
        for arg in every:
            scope.bound.add(arg.arg)
            if self.a.is_record_factory_annotation(arg.annotation):
                # `make: Callable[[], ServerArgs]`: `make()` is the record, whoever passes it
                _merge_origin(scope.callers, arg.arg, "held")
                continue
            kind = self.a.types.annotation(arg.annotation)
            if (
                kind == RECORD
                or (arg.annotation is None and arg.arg in self.a.record_attrs)
                or (scope.qualname, arg.arg) in self.a.flows.params
            ):
                _merge(scope.aliases, arg.arg, ("parameter", "held"))
                continue
            if kind == ELEMENTS:
                self.a.elements.add((id(scope), arg.arg))  # `xs: list[ServerArgs]`
            if arg.arg not in defaulted:
                # whatever the caller passes: `def f(sa): if sa is None: sa = get_server_args()`
                # must not make sa the process record. (Defaults are judged in resolve_rebound().)
                self.bind_name(arg.arg, None, scope=scope)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = (alias.asname or alias.name).split(".")[0]
            self.bind_name(local, None)
            self.a.imported.add(local)
            if alias.asname and alias.name.rpartition(".")[2] == "accessors":
                self.a.accessor_modules.add((id(self.scope), local))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        settings = self.a.settings
        for alias in node.names:
            local = alias.asname or alias.name
            if local in self.a.flows.record_holders or local in self.a.flows.home_holders:
                # `from pkg.a import REC`, where pkg.a binds REC to the record
                self.scope.bound.add(local)
                _merge(self.scope.aliases, local, ("imported", "held"))
                continue
            self.bind_name(local, None)
            self.a.imported.add(local)
            if alias.name == "accessors":
                self.a.accessor_modules.add((id(self.scope), local))  # `from pkg import accessors`
            elif alias.name == "cfg" and (node.module or "").rpartition(".")[2] == "accessors":
                # the generated process view, an object (`cfg.server_args` is the record)
                self.a.views.add((id(self.scope), local))
                self.a.imported.discard(local)
            if alias.name == settings.raw_accessor and local != alias.name:
                self.a.raw_names.add(local)
                self._renamed(node, local, f"import {alias.name} as {local}")
            elif alias.name in self.a.class_names:
                self.a.class_names.add(local)
            elif alias.name in self.a.record_dicts:
                self.a.record_dicts.add(local)
                self.a.dict_imports.add((id(self.scope), local))

    def _renamed(self, node: ast.stmt | ast.expr, new_name: str, detail: str) -> None:
        self.a.violations.append(
            (self.scope.qualname, node.lineno, "renamed_accessor", new_name, detail, "process")
        )

    def _method_self(self) -> str | None:
        return self.scope.self_name if self.scope.kind == "function" else None

    def bind_attribute(self, target: ast.Attribute, value: ast.expr | None) -> None:
        base = target.value
        if isinstance(base, ast.Name) and base.id == self._method_self():
            self.scope.self_assigns.append((target.attr, value))
            parent = self.scope.parent
            if target.attr in self.a.record_attrs and parent is not None and parent.kind == "class":
                self.a.holder_classes.add(parent.qualname)  # `self.server_args = ...`
        elif isinstance(base, ast.Name) and target.attr in self.a.record_attrs:
            self.a.stores.append((self.scope, base.id))  # `h.server_args = rec`, `Shared.server_args = rec`
        elif target.attr in self.a.record_attrs and _object_path(base, self._method_self()):
            # `app.state.server_args = rec`: an object a name reaches, its class not shown
            self.a.stores.append((self.scope, dotted(base)))

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if item.optional_vars is None:
                continue
            context = item.context_expr
            if (
                isinstance(context, ast.Call)
                and len(context.args) == 1
                and not context.keywords
                and not isinstance(context.args[0], ast.Starred)
            ):
                if _name_of(context.func) == "nullcontext":
                    # nullcontext(x).__enter__() returns x itself
                    self.bind(item.optional_vars, context.args[0])
                else:
                    # `with f(rec) as name`: name is whatever f's manager yields; often
                    # the record, never provably. Report its reads, refuse to fix them.
                    self.bind(item.optional_vars, context.args[0], forced="wrapped")
            else:
                # `with rec as name` binds rec.__enter__(), not provably rec
                self.bind(item.optional_vars, context, forced="wrapped")
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        for target in node.targets:
            self.bind(target, value)
            if isinstance(target, ast.Name) and self._names_raw_accessor(value):
                self.a.raw_names.add(target.id)
                self._renamed(node, target.id, f"{target.id} = {ast.unparse(value)}")
        self.generic_visit(node)

    def _names_raw_accessor(self, value: ast.expr) -> bool:
        value = self.a.fetched_value(value) or value
        if isinstance(value, ast.Name):
            return value.id in self.a.raw_names
        return isinstance(value, ast.Attribute) and value.attr == self.a.settings.raw_accessor

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        target = node.target
        if self.a.is_record_factory_annotation(node.annotation):
            if isinstance(target, ast.Name):
                _merge_origin(self.scope.callers, target.id, "held")  # `make: Callable[[], ServerArgs]`
        elif self.a.types.annotation(node.annotation) == ELEMENTS:
            if isinstance(target, ast.Name):
                self.a.elements.add((id(self.scope), target.id))
                if self.scope.kind == "class":
                    self.a.element_attrs.add(target.id)  # a field: read as self.NAME
            elif isinstance(target, ast.Attribute) and self._is_method_self(target.value):
                self.a.element_attrs.add(target.attr)
        elif self.a.is_record_annotation(node.annotation):
            if isinstance(target, ast.Name):
                _merge(self.scope.aliases, target.id, ("alias", "held"))
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == self._method_self()
            ):
                _merge_origin(self.a.self_attrs, target.attr, "held")
        super().visit_AnnAssign(node)

    def _is_method_self(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Name) and expr.id == self._method_self()

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        # `for a in xs` with xs a container of the record binds a to an element of it
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            super().bind_loop(target, iterable)
        else:
            self.bind(target, loop_element(iterable))

    def bind(self, target: ast.expr, value: ast.expr | None, forced: str | None = None) -> None:
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and target.elts
            and not isinstance(target.elts[0], ast.Starred)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in PARSES_KNOWN
        ):
            # `ns, rest = p.parse_known_args(argv)`: ns is the pair's `[0]`, the Namespace
            # (the record where add_cli_args filled p); the rest are unknown values
            namespace = ast.copy_location(ast.Subscript(value=value, slice=ast.Constant(0), ctx=_LOAD), value)
            super().bind(target.elts[0], namespace, forced)
            for rest in target.elts[1:]:
                super().bind(rest, None)
            return
        super().bind(target, value, forced)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in BUILDS_NOTHING and _name_of(func.value) in self.a.class_names:
            # `ServerArgs.add_cli_args(p)`: p parses the command line into every leaf now
            filled = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "parser"), None)
            self._fills(filled)
        if self.a.parser_fillers:
            # `make_arg_parser(p)`, a function filling its parameter so: p is filled too
            for position in self.a.parser_fillers.get(dotted(func), ()):
                self._fills(node.args[position] if position < len(node.args) else None)
        if self.a.fillers:
            # `fill(ns)` where fill stores `ns.server_args = rec`: ns holds the record now
            for position in self.a.fillers.get(dotted(node.func), ()):
                arg = node.args[position] if position < len(node.args) else None
                if isinstance(arg, ast.Name):
                    self.a.stores.append((self.scope, arg.id))
        # `isinstance(x, ServerArgs)`: wherever it is tested, x may be the record
        tested = self.a.types.narrowed(node)
        if isinstance(tested, ast.Name):
            self.scope.assigns.append((tested.id, Held("narrowed"), None))
        elif isinstance(tested, ast.Attribute) and self._is_method_self(tested.value):
            self.scope.self_assigns.append((tested.attr, Held("narrowed")))
        self.generic_visit(node)

    def _fills(self, parser: ast.expr | None) -> None:
        if isinstance(parser, ast.Name):
            self.a.fills.append((self.scope, parser.id))
        elif isinstance(parser, ast.Attribute) and self._is_method_self(parser.value):
            self.a.attr_fills.append((self.scope, parser.attr))  # `self.parser`, in every method

    def visit_Match(self, node: ast.Match) -> None:
        # `case sa:` and `case P as sa:` at the top of a case bind the subject itself
        for case in node.cases:
            # `case ServerArgs():` (or a subclass, an alias): the subject is the record there
            matched = self.a.types.matches_record(case.pattern)
            if matched and isinstance(node.subject, ast.Name):
                self.scope.assigns.append((node.subject.id, Held("matched"), None))
            for capture in _subject_captures(case.pattern):
                self.captures[id(capture)] = Held("matched") if matched else node.subject
            # `case object(server_args=a)`: a is `subject.server_args`, the record wherever
            # spelled; `case W(a)` the attribute W's `__match_args__` name
            for pattern, value in _sub_patterns(case.pattern, node.subject):
                if isinstance(pattern, ast.MatchAs) and value is not None and id(pattern) not in self.captures:
                    self.captures[id(pattern)] = value
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        # `type(x) is ServerArgs`, `type(x) == ServerArgs`: x is the record there
        tested = self.a.types.narrowed_compare(node)
        if isinstance(tested, ast.Name):
            self.scope.assigns.append((tested.id, Held("narrowed"), None))
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        subject = self.captures.get(id(node))
        if subject is None or node.name is None:
            super().visit_MatchAs(node)
            return
        self.bind_name(node.name, subject)
        if node.pattern is not None:
            self.visit(node.pattern)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            if self.scope.kind == "function":
                self.scope.returns.append(node.value)
            self.visit(node.value)


class _Reader(_Pruned, ScopeReader[_Scope]):
    """Pass 2: with every alias resolved, report reads and writes."""

    def __init__(self, analysis: _Analysis) -> None:
        self.a = self.scopes = analysis
        self.scope = analysis.module
        # attributes that are called (`rec.url()`, `ServerArgs.from_cli_args(...)`):
        # methods, not leaves, so not reads
        self.called: set[int] = set()
        # dict copies of the record read by key or method: every other use reads it whole
        self.dict_used: set[int] = set()
        # container literals whose elements the analysis follows (a loop over one, an
        # unpacking, a thread's `args=`): not an escape of the record
        self.unpacked: set[int] = set()
        # the raw accessor named where it is no escape: a rename (reported as one), a
        # parameter default (a carrier, read by leaf)
        self.handed: set[int] = set()
        # namespaces (`vars(x)`, `x.__dict__`) read by a literal key or written: not whole
        self.keyed: set[int] = set()
        # targets of an augmented assignment (`a.port += 1`): read, then written
        self.augmented: set[int] = set()
        # calls that are a whole statement, their value dropped (`d.setdefault(k, v)`)
        self.dropped: set[int] = set()
        # what the record's home reads for this module (FlowInput.home_reads, home_methods)
        self.home_reads: dict[str, set[str]] = defaultdict(set)
        for spelled, leaf in analysis.flows.home_reads:
            self.home_reads[spelled].add(leaf)
        self.home_methods: dict[str, set[str]] = defaultdict(set)
        for method, leaf in analysis.flows.home_methods:
            self.home_methods[method].add(leaf)
        # what the record's kind inherits (configbags.migrate.recordkinds): methods handing
        # every field over, the dunders the syntax calls, a NamedTuple's field order
        kind = analysis.flows.record_kind
        self.whole_methods = _WHOLE_METHODS | recordkinds.WHOLE_METHODS.get(kind, frozenset())
        self.kind_dunders = recordkinds.DUNDERS.get(kind, frozenset())
        self.fields = analysis.flows.record_fields

    def _read(self, node: ast.expr | ast.pattern, leaf: str, reach: Reach, form: str) -> None:
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        via, origin = reach
        self.a.reads.append(
            (self.scope.qualname, leaf, node.lineno, node.col_offset, end_line, end_col, via, form, origin)
        )

    def _write(self, node: ast.AST, leaf: str, kind: str = "write", origin: str = "process") -> None:
        text = ast.unparse(node)
        ctx = getattr(node, "ctx", None)
        if isinstance(ctx, ast.Store):
            text += " = ..."
        elif isinstance(ctx, ast.Del):
            text = "del " + text
        if len(text) > 80:
            text = text[:77] + "..."
        self.a.violations.append((self.scope.qualname, getattr(node, "lineno", 0), kind, leaf, text, origin))

    def visit_Assert(self, node: ast.Assert) -> None:
        self._tested(node.test)
        # `assert ok, get_server_args()`: the AssertionError carries the message
        reach = self.a.reach(node.msg, self.scope) if node.msg is not None else None
        if node.msg is not None and reach is not None:
            self._escape(node.msg, reach, "escapes_assert")
        self.generic_visit(node)

    def _record_default(self, expr: ast.expr) -> Reach | None:
        """Where `expr` names a function of the module whose parameter defaults to the
        record (or to a function giving it), what that default is."""
        if not isinstance(expr, ast.Name):
            return None
        holder = self.a.visible(expr.id, self.scope) or self.a.module
        qualname = holder.child_prefix() + expr.id
        for scope in self.a.scopes:
            if scope.kind == "function" and scope.qualname == qualname and scope.parent is not None:
                for _, default in scope.defaults:
                    found = self.a.reach(default, scope.parent)
                    gives = self.a.gives_record(default, scope.parent) if found is None else None
                    if found is not None or gives is not None:
                        return found or ("carrier", gives or "process")
        return None

    def _home_read(self, node: ast.Name | ast.Attribute | ast.Call) -> None:
        """A home function or name whose use reads leaves off the record for this code
        (`get_page_size()`, `SLOT[0]`): the reads of its body, here."""
        if not self.home_reads:
            return
        ctx = getattr(node, "ctx", _LOAD)
        for leaf in sorted(self.home_reads.get(self._home_spelled(node), ())):
            if leaf.startswith(WRITES_ON_STORE):
                if isinstance(ctx, ast.Store):  # `facade.port = 1`, a property setter writing it
                    self._write(node, leaf[len(WRITES_ON_STORE):], origin="home")
            elif not isinstance(ctx, ast.Load):
                continue
            elif leaf.startswith(WRITES_ON_USE):  # `set_port(1)`, writing `_G.port`
                self._write(node, leaf[len(WRITES_ON_USE):], origin="home")
            else:
                self._read(node, leaf, ("home", "held"), "home_read")

    def _home_spelled(self, node: ast.expr) -> str:
        """A home name as its reads are keyed: dotted, a fetch with a literal name as the
        attribute it names (`getattr(S, "cfg")` is `S.cfg`), an attribute of an instance
        made on the spot by the class's name and `()` (`Holder().cfg`)."""
        spelled = dotted(node)
        if spelled or not isinstance(node, (ast.Call, ast.Attribute)):
            return spelled
        if isinstance(node, ast.Call):
            chain = self.a.fetched_value(node)
            if chain is not None:
                return dotted(chain)
            func = dotted(node.func)
            return f"{func}()" if func else ""
        base = self._home_spelled(node.value)
        return f"{base}.{node.attr}" if base else ""

    def _method_call(self, node: ast.Attribute, reach: Reach) -> None:
        if node.attr in self.whole_methods:
            self._whole(node.value, reach)  # `rec.__repr__()`, `rec.to_dict()`: every field
        elif node.attr in self.home_methods and reach[1] != "constructed":
            # `rec.describe()`, a method of the record class the home defines: what its
            # body reads off `self` (the home is not scanned); any other method reads nothing
            for leaf in sorted(self.home_methods[node.attr]):
                self._read(node, leaf, reach, "home_method")

    def _implicit(self, node: ast.expr, *methods: str) -> None:
        """`node`, the record, used where Python calls a method of its class for the syntax
        (`rec[k]`, `a, = rec`, `if rec`, `len(rec)`, `rec()`, `with rec`, `rec + 1`, `-rec`,
        `seq[rec]`): a method the home's record class defines reads there what its body
        reads off `self`, as `rec.__getitem__(k)` does (deny by default: every method the
        syntax may call, `__bool__` or `__len__`)."""
        defined = [method for method in methods if method in self.home_methods]
        inherited = [method for method in methods if method in self.kind_dunders]
        if not defined and not inherited:
            return
        reach = self.a.reach(node, self.scope)
        if reach is None or reach[1] == "constructed":
            return
        for leaf in sorted(set().union(*(self.home_methods[method] for method in defined))):
            self._read(node, leaf, reach, "home_method")
        if inherited:  # a NamedTuple's iteration, a pydantic model's (name, value) pairs
            self._whole(node, reach)

    def _tested(self, node: ast.expr) -> None:
        self._implicit(node, "__bool__", "__len__")

    def visit_If(self, node: ast.If | ast.While) -> None:
        self._tested(node.test)
        self.generic_visit(node)

    visit_While = visit_If

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._tested(node.operand)
        else:
            self._implicit(node.operand, _UNARY[type(node.op)])
        self.generic_visit(node)

    def visit_Starred(self, node: ast.Starred) -> None:
        self._implicit(node.value, "__iter__")  # `f(*rec)`, `[*rec]`, `a, *b = rec`
        self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        self._implicit(node.value, "__await__")
        self.generic_visit(node)

    def _called_dunders(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args and _snapshot(node.func.value):
            self._snapshot_read(node, node.args[0])
        self._implicit(node.func, "__call__")  # `rec()`
        for keyword in node.keywords:
            if keyword.arg is None:  # `f(**rec)`: its `keys()`, then each by `rec[k]`
                self._implicit(keyword.value, "keys", "__getitem__")
        if len(node.args) == 1 and (methods := _BUILTIN_DUNDERS.get(_name_of(node.func))):
            self._implicit(node.args[0], *methods)  # `len(rec)`: the class's `__len__`

    def _snapshot_read(self, node: ast.expr, variable: ast.expr) -> None:
        """`contextvars.copy_context()[VAR]`, `.get(VAR)`: a snapshot of the context holds
        what the home's context variable holding the record holds (`*`: the record, by a
        spelling no getter names)."""
        if f"{dotted(variable)}.get" in self.a.flows.record_fetchers:
            self._read(node, "*", ("home", "held"), "home_read")

    def _copied_holder(self, node: ast.Attribute) -> None:
        """`copy.copy(NS).args`: a copy of the home's object keeps its attributes, so one
        holding the record (`NS.args`) gives it (`*`: the record, by a spelling no holder names)."""
        value = node.value
        if (
            isinstance(value, ast.Call) and dotted(value.func) in _COPY_FUNCTIONS and value.args
            and isinstance(node.ctx, ast.Load) and f"{dotted(value.args[0])}.{node.attr}" in self.a.flows.home_holders
        ):
            self._read(node, "*", ("home", "held"), "home_read")

    def _unpacked_dict(self, node: ast.expr) -> None:
        for key, value in zip(node.keys, node.values, strict=True) if isinstance(node, ast.Dict) else ():
            if key is None:  # `{**rec}`: its `keys()`, then each by `rec[k]`
                self._implicit(value, "keys", "__getitem__")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._home_read(node)
        self._copied_holder(node)
        if node.attr in ("__defaults__", "__kwdefaults__") and isinstance(node.ctx, ast.Load):
            default = self._record_default(node.value)
            if default is not None:
                self._escape(node, default, "escapes_default")  # `g.__defaults__[0].tp_size`
        self._whole_dict(node)
        if node.attr in self.a.raw_names or self.a.gives_record(node, self.scope):
            self._accessor_as_value(node)
        if node.attr not in FUNCTION_ROUTES:
            # `rec.cache_clear()`, `rec.__name__`: the function's own attributes, not it
            self.handed.add(id(node.value))
        called = id(node) in self.called
        reach = self.a.reach(node.value, self.scope)
        if node.attr == "__dict__" and not reach:
            self._namespace(node, node.value)
        elif _private(node.attr) and not reach and self.a.holder(node.value, self.scope) == STORED:
            # `app.state._state`: where an object whose class the code does not show keeps
            # its attributes (starlette's State, a dict subclass's own slot) is its namespace
            self._namespace(node, node.value)
        if reach:
            if not isinstance(node.ctx, ast.Load):
                self._write(node, node.attr, origin=self.a.write_origin(node.value, self.scope))
                if id(node) in self.augmented and node.attr not in _NO_LEAF:
                    self._read(node, node.attr, reach, "augmented")  # `a.port += 1` reads port first
            elif called:
                self._method_call(node, reach)
            elif node.attr not in _NO_LEAF:
                self._read(node, node.attr, reach, "whole" if node.attr == "__dict__" else "attribute")
        elif (
            self._is_record_class(node.value) and not node.attr.startswith("__")
            and dotted(node) not in self.a.flows.home_holders  # `ServerArgs._instance`: the published record
        ):
            # `ServerArgs.base_gpu_id` reads the class default, never the published value;
            # on a slotted attrs class it is a member descriptor, so `==` is always False
            if not isinstance(node.ctx, ast.Load):
                self._write(node, node.attr, origin="class")
            elif not called:
                self._read(node, node.attr, ("class", "constructed"), "class_attribute")
        self.generic_visit(node)

    # ---- objects holding the record (configbags.migrate.holders)

    def _holder_escape(self, node: ast.expr | ast.pattern) -> None:
        """The record may come out of a holder here, by a name no code spells."""
        self._read(node, "*", ("escape", "held"), "escapes_holder")

    def _namespace(self, node: ast.expr, owner: ast.expr) -> None:
        """`vars(h)`, `h.__dict__` of a holder, not read by a literal key nor written: whole."""
        if id(node) not in self.keyed and isinstance(getattr(node, "ctx", _LOAD), ast.Load) and self.a.holder(
            owner, self.scope
        ):
            self._holder_escape(node)

    def _formatted(self, node: ast.expr) -> None:
        """A holder whose class generates a repr of every field, turned into text."""
        if self._fields_shown(node):
            self._holder_escape(node)

    def _fields_shown(self, node: ast.expr, *, compared: bool = False) -> bool:
        """Is `node` a holder whose repr (or, `compared`, whose `==`) is built from the
        attributes that may hold the record: an instance of a dataclass or attrs class
        that generates it (holders.class_facts), or a `types.SimpleNamespace` or
        `argparse.Namespace` a record attribute is stored on?"""
        held = self.a.holder(node, self.scope)
        if held is None or self.a.reach(node, self.scope) is not None:
            return False
        if held in (self.a.generated_eqs if compared else self.a.generated_reprs):
            return True
        made = self.a.instance_class(node, self.scope)
        return held == STORED and made is not None and made.rpartition(".")[2] in _NAMESPACE_CLASSES

    def _holder_call(self, node: ast.Call) -> None:
        func = node.func
        name = _name_of(func)
        if isinstance(func, ast.Attribute) and namespace_like(func.value) and (
            func.attr in holders.NAMESPACE_WRITERS or holders.keyed_attribute(node) is not None
        ):
            self.keyed.add(id(func.value))  # `vars(self).update(...)`, `self.__dict__.get("x")`
        owner = holders.namespace_of(node)
        if owner is not None:
            if self.a.reach(owner, self.scope) is None:
                self._namespace(node, owner)
            return
        arguments = [arg.value if isinstance(arg, ast.Starred) else arg for arg in node.args]
        arguments += [keyword.value for keyword in node.keywords]
        for position in self.a.namespace_readers.get(dotted(func), ()):
            # `dump_state(parts["scheduler"])`, where dump_state reads `vars(obj)`
            arg = node.args[position] if position < len(node.args) else None
            if arg is not None and not isinstance(arg, ast.Starred) and self.a.reach(arg, self.scope) is None and (
                self.a.holder(arg, self.scope)
            ):
                self._holder_escape(arg)
        if name in holders.NAMESPACE_READERS or name.endswith(holders.SERIALISERS):
            # `dataclasses.asdict(holder)`, `pickle.dumps(holder)`: every attribute
            for arg in arguments:
                if self.a.reach(arg, self.scope) is None and self.a.holder(arg, self.scope):
                    self._holder_escape(arg)
        elif (name in holders.FORMATTERS and (isinstance(func, ast.Name) or name == "format")) or (
            isinstance(func, ast.Attribute) and name in holders.LOG_METHODS
        ) or name == "LogRecord":
            # a log record (`logging.LogRecord(name, level, path, line, "%s", (w,), None)`)
            # formats its arguments, given as a tuple, when it is emitted
            for arg in arguments:
                for each in arg.elts if isinstance(arg, (ast.Tuple, ast.List)) and name == "LogRecord" else [arg]:
                    self._formatted(each)

    def _whole(self, node: ast.expr, reach: Reach) -> None:
        """Every field of the record at once: turned into text (its dataclass repr names
        every field), compared (`==` compares every field), or `rec.to_dict()`. A whole
        read, like `str(rec)`; a record built here of literals only is not the config."""
        if reach[1] != "constructed":
            self._read(node, "*", reach, "whole")

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        # f"{rec}", f"{server_args=}", f"{self.server_args!r:>10}"
        reach = self.a.reach(node.value, self.scope)
        if reach is not None:
            self._whole(node.value, reach)
        else:
            self._formatted(node.value)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        # "%s" % rec (a tuple or dict of it is a container: an escape, see _container)
        if isinstance(node.op, ast.Mod):
            reach = self.a.reach(node.right, self.scope)
            if reach is not None:
                self._whole(node.right, reach)
            else:
                for part in node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]:
                    self._formatted(part)
        name = _OPERATORS[type(node.op)]
        # `rec + 1`, `1 + rec`, `[0] * rec` (a sequence repeated takes `__index__`)
        repeat = ("__index__",) if isinstance(node.op, ast.Mult) else ()
        self._implicit(node.left, f"__{name}__", *repeat)
        self._implicit(node.right, f"__r{name}__", *repeat)
        if not isinstance(node.op, ast.Mod):
            self._operand(node.right, node.left, f"__{name}__")  # `totals + rec`: Totals.__add__
        self._operand(node.left, node.right, f"__r{name}__")  # `rec + totals`: Totals.__radd__
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.dropped.add(id(node.value))
        self.generic_visit(node)

    def _ordered_whole(self, side: ast.expr) -> bool:
        """Is `side` of an ordering the record (then read whole here)?"""
        reach = self.a.reach(side, self.scope)
        if reach is None or reach[1] == "constructed":
            return False
        self._whole(side, reach)
        return True

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.augmented.add(id(node.target))
        name = _OPERATORS[type(node.op)]
        self._implicit(node.target, f"__i{name}__", f"__{name}__")  # `rec += 1`
        self._implicit(node.value, f"__r{name}__")
        # `t += rec`: t's class's `__iadd__`
        self._operand(node.value, node.target, f"__i{_OPERATORS[type(node.op)]}__")
        self.generic_visit(node)

    def _operand(self, value: ast.expr, owner: ast.expr, method: str, position: int = 1, *, escape: bool = True) -> None:
        """The record `value` handed by an operator, an item access or `in` to `method` of
        the class of `owner`: followed there where the class is spelled (a pass, which the
        project pass follows into a scanned class's method, or reports as an escape);
        nothing for a literal or a builtin container; an escape where the class is not
        known, unless `escape` is False (the operation already reads the record whole).
        (The record's own operators are its comparisons: visit_Compare.)"""
        reach = self.a.reach(value, self.scope)
        if reach is None or reach[1] == "constructed" or self.a.reach(owner, self.scope) is not None:
            return
        found = self.a.instance_class(owner, self.scope)
        if found == BUILTIN:
            return
        if found is None:
            if escape:
                self._escape(value, reach, "escapes_operator")
        elif found.startswith("self:"):
            self._hand([(value, f"{found}.{method}", position - 1, "")])  # `self` is bound
        else:
            self._hand([(value, f"name:{found}.{method}", position, "")])  # called through the class

    def _is_record_class(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.a.class_names and self._global(expr.id)
        return isinstance(expr, ast.Attribute) and expr.attr in self.a.class_names

    def _global(self, name: str) -> bool:
        """`name` is not bound by the reading scope or an enclosing function (so it is the
        module's: a class or dict copy of the record, not a local of the same name)."""
        return self.a.module_name(name, self.scope)

    def _record_dict(self, expr: ast.expr) -> bool:
        chain = self.a.fetched_value(expr)
        if chain is not None:
            return self._record_dict(chain)  # `getattr(S, "global_server_args_dict")`
        return self.a.is_record_dict(expr, self.scope)

    def _consume_dict(self, expr: ast.expr) -> bool:
        """Is `expr` a dict copy of the record, read here by key or method (so not whole)?"""
        if self._record_dict(expr):
            self.dict_used.add(id(expr))
            if isinstance(expr, ast.Await):
                self.dict_used.add(id(expr.value))
            return True
        return False

    def _whole_dict(self, node: ast.Name | ast.Attribute | ast.Call) -> None:
        # `dict(d)`, `return d`, `f(d)`, `f"{d}"`, `**d`: every key leaves at once
        if isinstance(getattr(node, "ctx", _LOAD), ast.Load) and id(node) not in self.dict_used and self._record_dict(node):
            self._read(node, "*", ("record_dict", "process"), "whole")

    def visit_Name(self, node: ast.Name) -> None:
        self._home_read(node)
        self._whole_dict(node)
        if isinstance(node.ctx, ast.Load) and self.a.gives_record(node, self.scope):
            self._accessor_as_value(node)

    def _accessor_as_value(self, node: ast.Name | ast.Attribute) -> None:
        """The raw accessor, or any function whose call gives the record (a helper of
        this module or another, a name bound to one), handed on, not called: to a wrapper
        (`functools.cache`, `partial`, a dataclass `default_factory`, an executor), into
        a container, as an argument or a parameter's default, returned. Whoever calls it
        later gets the record under a name no analysis follows: an escape."""
        if isinstance(node.ctx, ast.Load) and id(node) not in self.called and id(node) not in self.handed:
            form = "escapes_accessor" if self._is_accessor(node) else "escapes_fetcher"
            self._read(node, "*", ("escape", "held"), form)

    def _is_accessor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.a.raw_names
        return isinstance(node, ast.Attribute) and (
            node.attr == self.a.settings.raw_accessor or node.attr in self.a.raw_names)

    def _dict_key(self, node: ast.expr, key: ast.expr | None, form: str, *, write: bool) -> None:
        leaf = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else "*"
        if write:
            self._write(node, leaf, "dict_write")
        else:
            self._read(node, leaf, ("record_dict", "process"), form if leaf != "*" else "dict_dynamic")

    def visit_Compare(self, node: ast.Compare) -> None:
        # `"x" in global_server_args_dict` asks whether the leaf is set
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)) and self._consume_dict(right):
                self._dict_key(node, left, "dict_in", write=False)
            if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                # `rec == other`, `rec in records`: a dataclass compares every field
                for side in (left, right):
                    reach = self.a.reach(side, self.scope)
                    if reach is not None:
                        self._whole(side, reach)
                    elif isinstance(op, (ast.Eq, ast.NotEq)) and self._fields_shown(side, compared=True):
                        self._holder_escape(side)  # `ns == other` compares every attribute
            if isinstance(op, (ast.In, ast.NotIn)) and self.a.instance_class(right, self.scope) not in (None, BUILTIN):
                self._operand(left, right, "__contains__")  # `rec in pool`: Pool.__contains__
            order = _ORDERINGS.get(type(op))
            if order is not None:
                # `rec < other`: an `order=True` dataclass compares the tuples of every field
                # (a whole read, which stands for the escape to an operator of unknown class)
                left_whole, right_whole = self._ordered_whole(left), self._ordered_whole(right)
                self._operand(right, left, f"__{order[0]}__", escape=not right_whole)  # `t < rec`: T.__lt__
                self._operand(left, right, f"__{order[1]}__", escape=not left_whole)  # `rec < t`: T.__gt__
            left = right
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _snapshot(node.value):
            self._snapshot_read(node, node.slice)
        item = {ast.Load: "__getitem__", ast.Store: "__setitem__"}.get(type(node.ctx), "__delitem__")
        if not self._by_position(node):
            self._implicit(node.value, item, *(("__getitem__",) if id(node) in self.augmented else ()))
        self._implicit(node.slice, "__index__", "__hash__")  # `seq[rec]`, `table[rec]`
        if namespace_like(node.value) and (
            not isinstance(node.ctx, ast.Load) or holders.keyed_attribute(node) is not None
        ):
            self.keyed.add(id(node.value))  # `vars(self)["server_args"]` is `self.server_args`
        if isinstance(node.value, (ast.Tuple, ast.List, ast.Dict)) and isinstance(node.slice, ast.Constant):
            # `[rec][0].x`, `{"r": rec}["r"].x`: indexed literally, the element is followed
            # (configbags.migrate.reflection reads it)
            self.unpacked.add(id(node.value))
        if self._consume_dict(node.value):
            self._dict_key(node, node.slice, "subscript", write=not isinstance(node.ctx, ast.Load))
            if id(node) in self.augmented:
                self._dict_key(node, node.slice, "subscript", write=False)  # `d["x"] += 1` reads x first
        else:
            # `TABLE[rec]`: the record as a key, handed to the class's `__getitem__`
            item = {ast.Load: "__getitem__", ast.Store: "__setitem__"}.get(type(node.ctx), "__delitem__")
            self._operand(node.slice, node.value, item)
        # rec.__dict__["x"] = v and vars(rec)["x"] = v are writes too
        if not isinstance(node.ctx, ast.Load):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "__dict__":
                if self.a.via(base.value, self.scope):
                    self._write(node, "*", origin=self.a.write_origin(base.value, self.scope))
            elif self._whole_record_call(base):
                assert isinstance(base, ast.Call)
                self._write(node, "*", origin=self.a.write_origin(base.args[0], self.scope))
        self.generic_visit(node)

    def _by_position(self, node: ast.Subscript) -> bool:
        """`rec[3]`, `rec[-1]`, `rec[1:3]` of a NamedTuple record: the fields at those
        positions, in the home's order (an index not known is every field: _implicit)."""
        if not self.fields or not isinstance(node.ctx, ast.Load):
            return False
        leaves = recordkinds.positions(node.slice, self.fields)
        reach = self.a.reach(node.value, self.scope) if leaves is not None else None
        if leaves is None or reach is None or reach[1] == "constructed":
            return False
        for leaf in leaves:
            self._read(node, leaf, reach, "position")
        return True

    def _whole_record_call(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Call) or not node.args:
            return False
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in _WHOLE_RECORD_CALLS and self.a.via(node.args[0], self.scope) is not None

    def _unbound_whole(self, node: ast.Call) -> bool:
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in self.whole_methods
            and bool(node.args)
            and self._is_record_class(func.value)
            and self.a.via(node.args[0], self.scope) is not None
        )

    def _unbound_home(self, node: ast.Call) -> bool:
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in self.home_methods
            and bool(node.args)
            and self._is_record_class(func.value)
            and self.a.via(node.args[0], self.scope) is not None
        )

    def _dict_call(self, node: ast.Call, method: str) -> None:
        args = node.args
        if method in _DICT_READ_ONE:
            self._dict_key(node, args[0] if args else None, "dict_get", write=False)
        elif method in _DICT_READ_ALL:
            self._read(node, "*", ("record_dict", "process"), "whole")
        elif method == "update":
            # `d.update({"x": 1}, y=2)` writes x and y; any other argument writes unknown keys
            keys: list[ast.expr | None] = [ast.Constant(k.arg) if k.arg else None for k in node.keywords]
            for arg in args:
                keys.extend(arg.keys if isinstance(arg, ast.Dict) else [None])
            for key in keys or [None]:
                self._dict_key(node, key, "", write=True)
        else:
            self._dict_key(node, args[0] if args else None, "", write=True)
            if method in _DICT_GIVE_BACK and not self._dropped_default(node):
                # `x = d.setdefault("k", v)`, `d.pop("k")`: the old value given back (or
                # a KeyError telling set from unset), as the environment's are
                self._dict_key(node, args[0] if args and method != "popitem" else None, "dict_get", write=False)

    def _dropped_default(self, node: ast.Call) -> bool:
        """`d.setdefault("k", v)`, `d.pop("k", None)`, `d.popitem()` as a statement: the
        value dropped and nothing raised where the key is missing, so a write only."""
        if id(node) not in self.dropped or node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            return False
        return isinstance(node.func, ast.Attribute) and len(node.args) == (0 if node.func.attr == "popitem" else 2)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        args = node.args
        self.called.add(id(func))
        self._called_dunders(node)
        self._holder_call(node)
        if _name_of(func) in READS_NOTHING:
            self.handed.update(id(arg) for arg in args)  # `callable(rec)`: nothing is called
        if _name_of(func) == "isinstance" and len(args) == 2:
            # `isinstance(rec, C)` calls `__instancecheck__` of C's metaclass, where it has one
            classes = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
            self._hand([(args[0], f"meta:{name}.__instancecheck__", 0, HOOK) for c in classes if (name := dotted(c))])
        if isinstance(func, ast.Attribute) and func.attr in _DICT_METHODS and self._consume_dict(func.value):
            self._dict_call(node, func.attr)
        fetches = self.a.fetched.get(id(node), ())
        for fetch in fetches:
            self._fetch(node, fetch)
            self._door_by_name(node, fetch)
        if fetches:
            self._home_read(node)  # `getattr(S, "cfg")`: the home's name it fetches
        if fetches or self.a.dict_fetchers or self.a.flows.record_dict_fetchers:
            # `d = getattr(S, "global_server_args_dict")`, `f(gsad())`: used whole
            self._whole_dict(node)
        if fetches:
            pass  # a fetch's reads and writes are its own (`getattr(rec, "x")`, `setattr`)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "__setattr__"
            and args
            and self.a.via(args[0], self.scope)
        ):
            self._write(node, self._literal_leaf(args), origin=self.a.write_origin(args[0], self.scope))
        elif self._whole_record_call(node):
            self._read(node, "*", self.a.reach(args[0], self.scope) or ("", "process"), "whole")
        elif _name_of(func) == "signature" and args and (default := self._record_default(args[0])) is not None:
            self._escape(node, default, "escapes_default")  # `inspect.signature(g).parameters["a"].default`
        elif self._unbound_whole(node):
            # `ServerArgs.__repr__(rec)`: the record's own whole-read method, called unbound
            self._whole(node, self.a.reach(args[0], self.scope) or ("", "process"))
        elif self._unbound_home(node):
            # `ServerArgs.url(rec)`: a home method called unbound reads off `rec` what its
            # body reads off `self`, as `rec.url()` does (the record is exempt from escape)
            reach = self.a.reach(args[0], self.scope)
            if reach is not None and reach[1] != "constructed":
                for leaf in sorted(self.home_methods[func.attr] if isinstance(func, ast.Attribute) else ()):
                    self._read(node, leaf, reach, "home_method")
        else:
            self._passes(node)
        self.generic_visit(node)

    # ---- where the record goes: handed to a callable (for the project pass), or
    # stored where this analysis cannot follow it (an escape: a read of `*`)

    def _escape(self, node: ast.expr, reach: Reach, form: str) -> None:
        if reach[1] != "constructed":  # one built here of literals only is not the config
            self._read(node, "*", ("escape", join_origin(reach[1], "held")), form)

    def _carried(self, node: ast.expr) -> Reach | None:
        """A lambda whose body is the record (`lambda: rec`): whoever calls it gets it."""
        if not isinstance(node, ast.Lambda):
            return None
        return self.a.reach(node.body, self.a.scope_of.get(id(node), self.scope))

    def _carrier_escapes(self, node: ast.expr | None, form: str) -> None:
        # `return lambda: r`, `property(lambda self: rec)`, `register(lambda: rec)`: the
        # lambda leaves where it is written, called later under a name no analysis follows
        reach = self._carried(node) if node is not None else None
        if node is not None and reach is not None:
            self._escape(node, reach, form)

    def _followed(self, node: ast.expr) -> None:
        """A container literal (and those nested in it) whose elements are followed."""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            self.unpacked.add(id(node))
            for element in node.elts:
                self._followed(element)

    def _callee(self, func: ast.expr) -> str:
        """The callee as FlowFacts.passes spells it, or "" (not a name)."""
        if isinstance(func, ast.Attribute) and self.a._is_self(func.value, self.scope):
            owner = self.a.method_class(func.value, self.scope)
            return f"self:{owner}.{func.attr}" if owner else ""
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            # `super().__init__(rec)` in a method of Class: the method of Class's bases
            current = self.scope
            while current.kind != "function" and current.parent is not None:
                current = current.parent
            owner = current.qualname.rpartition(".")[0] if current.self_name else ""
            return f"super:{owner}.{func.attr}" if owner else ""
        name = dotted(func)
        return f"name:{name}" if name else ""

    def _passes(self, node: ast.Call) -> None:
        func = self.a.fetched_value(node.func) or node.func
        name = dotted(func)
        last = name.rpartition(".")[2]
        if (
            last in READS_NOTHING
            or last in _COPY_CALLS
            or last in _REPLACE_CALLS
            or last == self.a.settings.raw_accessor
            or last in self.a.class_names
            or starts_child(name)
            or (isinstance(func, ast.Attribute) and (
                self.a.reach(func.value, self.scope) is not None or self._is_record_class(func.value)
            ))  # the record's own methods, its class's constructors
        ):
            return
        callee = self._callee(func)
        handed: list[tuple[ast.expr, str, int, str]] = []  # (argument, callee, position, keyword)
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                handed.append((arg.value, callee, -1, ""))
            else:
                handed.append((arg, callee, position, ""))
        for given in node.keywords:
            if last in _STARTERS and given.arg == "args" and isinstance(given.value, (ast.Tuple, ast.List)):
                # Thread(target=work, args=(rec,)): work receives rec
                self.unpacked.add(id(given.value))
                target = next((k.value for k in node.keywords if k.arg == "target"), None)
                called = self._callee(target) if target is not None else ""
                for position, element in enumerate(given.value.elts):
                    if isinstance(element, ast.Starred):
                        handed.append((element.value, called, -1, ""))
                    else:
                        handed.append((element, called, position, ""))
            else:
                handed.append((given.value, callee, -1, given.arg or ""))
        self._hand(handed)

    def _hand(self, handed: Sequence[tuple[ast.expr, str, int, str]]) -> None:
        """Each (argument, callee, position, keyword) where the argument is the record: a
        pass, for the project pass to follow into the callee or report as an escape."""
        for arg, to, position, keyword in handed:
            self._carrier_escapes(arg, "escapes_call")
            reach = self.a.reach(arg, self.scope)
            # a record built here of literals only (`print(ServerArgs())`) is not the config;
            # one built from values (`run(ServerArgs.from_cli(argv))`) is, and is followed
            if reach is not None and reach[1] != "constructed":
                self.a.passes.append((
                    self.scope.qualname, to, position, keyword, arg.lineno, arg.col_offset,
                    arg.end_lineno or arg.lineno, arg.end_col_offset or arg.col_offset,
                ))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # `@describe.register def _(x: int): return get_server_args()`: the function is
        # handed to its decorator, whose result callers call by another name. A decorator
        # of a scanned module is taken as the pass-through most are; any other escapes
        # (configbags.migrate.flows), unless it keeps the function as it is (cache, wraps)
        scope = self.a.scope_of.get(id(node))
        if scope is not None and scope.self_name is None and scope.qualname in self.a.returning:
            self.a.passes += decorated_passes(node, self.scope.qualname, "")
        super().visit_FunctionDef(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.AST) -> None:
        # `class W(Base, args=rec)`: the class keywords go to the nearest base's
        # `__init_subclass__` (evaluated where the class statement runs); with a
        # `metaclass=` (whose `__new__` takes them first) or `**kw`, to nothing followed
        if isinstance(node, ast.ClassDef) and node.keywords:
            owner = f"{self.scope.child_prefix()}{node.name}"
            metaclass = any(k.arg in (None, "metaclass") for k in node.keywords)
            callee = "" if metaclass else f"super:{owner}.__init_subclass__"
            self._hand([(k.value, callee, -1, k.arg or "") for k in node.keywords])
        super().visit_ClassDef(node)

    def visit_arguments(self, node: ast.arguments) -> None:
        # `def f(a=get_server_args)`: a carrier, whose calls are read by leaf
        for default in [*node.defaults, *node.kw_defaults]:
            if default is not None and self._is_accessor(default):
                self.handed.add(id(default))
        self.generic_visit(node)

    def _stored(self, targets: Sequence[ast.expr], value: ast.expr) -> None:
        value = _indexed_element(value)  # `h.x = [rec][0]` stores rec
        reach = self.a.reach(value, self.scope)
        if reach is None:
            return
        for target in targets:
            if isinstance(target, ast.Attribute):
                self._store_hooks(target, value)
            if isinstance(target, ast.Attribute) and dotted(target.value) in ("builtins", "__builtins__"):
                # `builtins.server_args = rec`: a bare `server_args` in any module reads it
                self._escape(value, reach, "escapes_builtin")
            elif isinstance(target, ast.Attribute) and target.attr not in self.a.record_attrs:
                if self.a.reach(target.value, self.scope) is None:
                    # `holder.cfg = rec`, `self.cfg = rec`: read elsewhere by any name
                    self._escape(value, reach, "escapes_attribute")
            elif isinstance(target, ast.Subscript) and not self._record_dict(target.value):
                self._escape(value, reach, "escapes_item")

    def _store_hooks(self, target: ast.Attribute, value: ast.expr) -> None:
        """`w.server_args = rec` on an object whose class has a `__setattr__` (or whose
        class attribute of that name is a descriptor with a `__set__`): Python hands the
        record to that hook, which may read it. A pass the project pass follows into the
        hook where a scanned class defines it; nothing where it finds none."""
        found = self.a.instance_class(target.value, self.scope)
        if found is None or found == BUILTIN:
            return
        route, position = (found, 1) if found.startswith("self:") else (f"name:{found}", 2)
        hooks = [(value, f"{route}.__setattr__", position, HOOK)]
        owner = found.partition(":")[2] if found.startswith("self:") else self.a.class_names_of.get(found, "")
        descriptor = self.a.class_value(owner, target.attr)
        if descriptor is not None:
            hooks.append((value, f"name:{descriptor}.__set__", 2, HOOK))  # (descriptor, obj, value)
        self._hand(hooks)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            self._implicit(node.value, "__iter__")  # `a, = rec`
        if all(isinstance(t, ast.Name) for t in node.targets) and (
            self._is_accessor(node.value) or (self.scope.kind != "class" and self.a.gives_record(node.value, self.scope))
        ):
            # `g = get_server_args`: a rename, reported as one; `r = rec`, `load = h.rec`
            # outside a class body: a name whose calls are followed (a class attribute
            # is called as `self.load()`, by a name not followed: an escape)
            self.handed.add(id(node.value))
        for target in node.targets:
            self._store(target, node.value)
        if all(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            self._followed(node.value)
        self.generic_visit(node)

    def _store(self, target: ast.expr, value: ast.expr) -> None:
        """`target = value`, each part landing where Python puts it: `self.cfg, self.port =
        rec, port` stores rec like `self.cfg = rec` (an escape), `a, b = rec, 1` binds `a`
        (an alias, followed). What lands in a starred target (a list), or where positions
        are not certain (`a, b = *xs, rec`: unpaired), is in a container: an escape. An
        unpacked value that is no literal (`a.x, b = pair()`) was a container already."""
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (ast.Tuple, ast.List)):
                return
            pairs, rest = landed(target.elts, value.elts)
            for sub_target, sub_value in pairs:
                self._store(sub_target, sub_value)
            for element in rest:
                self._contained(element)
        elif isinstance(target, ast.Starred):
            self._contained(value)
        else:
            self._stored([target], value)

    def _contained(self, value: ast.expr) -> None:
        """`value` lands in a list made by unpacking: where it is the record (or a literal
        holding it), an escape."""
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
            for element in value.elts:
                self._contained(element.value if isinstance(element, ast.Starred) else element)
            return
        value = _indexed_element(value)
        reach = self.a.reach(value, self.scope)
        if reach is not None:
            self._escape(value, reach, "escapes_container")

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._stored([node.target], node.value)
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._implicit(node.iter, "__aiter__" if isinstance(node, ast.AsyncFor) else "__iter__")
        self._followed(node.iter)
        self._loop_store(node.target, node.iter)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._implicit(node.iter, "__aiter__" if node.is_async else "__iter__")
        for test in node.ifs:
            self._tested(test)
        self._followed(node.iter)
        self._loop_store(node.target, node.iter)
        self.generic_visit(node)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        # `with nullcontext(rec) as self.cfg`: stored like `self.cfg = rec` (and `with
        # f(rec) as self.cfg`, what f's manager gives, as pass 1 binds it)
        enter = ("__aenter__", "__aexit__") if isinstance(node, ast.AsyncWith) else ("__enter__", "__exit__")
        for item in node.items:
            self._implicit(item.context_expr, *enter)  # `with rec as p`: p is what `__enter__` gives
            context, target = item.context_expr, item.optional_vars
            if target is None or isinstance(target, ast.Name):
                continue
            if isinstance(context, ast.Call) and len(context.args) == 1 and not context.keywords and not isinstance(
                context.args[0], ast.Starred
            ):
                self._store(target, context.args[0])
            else:
                self._store(target, context)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def _loop_store(self, target: ast.expr, iterable: ast.expr) -> None:
        """A loop target takes each element in turn (`for self.cfg in [rec]`, `for d["k"]
        in recs`): stored there like `target = element`."""
        if isinstance(target, ast.Name):
            return  # an alias, bound in pass 1
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            for element in iterable.elts:
                if isinstance(element, ast.Starred):
                    self._store(target, loop_element(element.value))
                else:
                    self._store(target, element)
        else:
            self._store(target, loop_element(iterable))

    def _container(self, node: ast.Tuple | ast.List | ast.Set | ast.Dict) -> None:
        self._unpacked_dict(node)
        if id(node) not in self.unpacked and not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            elements = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
            for element in elements:
                if element is None:
                    continue
                inner = element.value if isinstance(element, ast.Starred) else element
                reach = self.a.reach(inner, self.scope)
                if reach is not None:
                    self._escape(inner, reach, "escapes_container")
                # `{"args": lambda: get_server_args()}`: a table of getters, called later
                # by a key no analysis follows
                self._carrier_escapes(inner, "escapes_fetcher")
        self.generic_visit(node)

    def _branches(self, node: ast.IfExp | ast.BoolOp) -> None:
        # `(lambda: get_server_args()) if flag else (lambda: None)`: a lambda picked at run
        # time is called under a name bound to no lambda, which no analysis follows
        for branch in [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values:
            self._carrier_escapes(branch, "escapes_fetcher")
        for tested in [node.test] if isinstance(node, ast.IfExp) else node.values:
            self._tested(tested)  # `a if rec else b`, `rec or b`: the record's truth
        self.generic_visit(node)

    visit_IfExp = _branches
    visit_BoolOp = _branches

    visit_Tuple = _container
    visit_List = _container
    visit_Set = _container
    visit_Dict = _container

    def _comprehension(self, node: ast.AST) -> None:
        # `[get_server_args() for _ in x]`, `(rec for _ in x)`, `{n: rec for n in names}`: a
        # container (or generator) of the record, read later by index, key or next(): an
        # escape, like a container literal not indexed literally
        outer = self.scope
        self.scope = self.a.scope_of.get(id(node), outer)
        if isinstance(node, ast.DictComp):
            produced = [node.key, node.value]
        else:
            assert isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp))
            produced = [node.elt]
        for element in produced:
            reach = self.a.reach(element, self.scope)
            if reach is not None:
                self._escape(element, reach, "escapes_container")
        self.generic_visit(node)
        self.scope = outer

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension

    def visit_Return(self, node: ast.Return) -> None:
        # A method's callers elsewhere (`runner.args().tp_size`, a property's readers) are
        # not followed: returning the record from one lets it escape, unless the method
        # is named like a record attribute (`x.server_args` is read wherever it is spelled)
        # or the raw accessor, or belongs to the record class.
        self._carrier_escapes(node.value, "escapes_return")
        scope = self.scope
        parent = scope.parent
        if node.value is not None and scope.kind == "function" and scope.qualname == "__getattr__":
            # a module's `__getattr__` (PEP 562): `mod.ARGS`, `from mod import ARGS`, any
            # name the module does not define, read by a name no analysis follows
            reach = self.a.reach(node.value, scope)
            if reach is not None:
                self._escape(node.value, reach, "escapes_return")
        elif (
            node.value is not None
            and scope.kind == "function"
            # a static method too (no `self`): `H.rec()` is read by the method's name
            and parent is not None
            and parent.kind == "class"
            and parent.qualname.rsplit(".", 1)[-1] not in self.a.class_names
            and parent.qualname not in self.a.flows.record_bases
            and scope.qualname.rsplit(".", 1)[-1] not in self.a.record_attrs
            # `x.get_server_args()` is read as the accessor wherever it is called
            and scope.qualname.rsplit(".", 1)[-1] != self.a.settings.raw_accessor
        ):
            reach = self.a.reach(node.value, scope)
            if reach is not None:
                self._escape(node.value, reach, "escapes_return")
        self.generic_visit(node)

    def _yielded(self, node: ast.Yield | ast.YieldFrom) -> None:
        if node.value is not None:
            reach = self.a.reach(node.value, self.scope)
            if reach is not None:
                self._escape(node.value, reach, "escapes_yield")
        self.generic_visit(node)

    visit_Yield = _yielded
    visit_YieldFrom = _yielded

    def _door_by_name(self, node: ast.Call, fetch: Fetch) -> None:
        """`getattr(h, name)` with a name built at run time, where `h` is a module of the
        project with a function giving the record (`h.rec`): it may be that function."""
        module = dotted(fetch.target)
        if (
            fetch.form in ("getattr", "getattr_default")
            and fetch.paths == (None,)
            and module.partition(".")[0] in self.a.imported
            and any(spelled.startswith(module + ".") for spelled in self.a.flows.record_fetchers)
        ):
            self._read(node, ENV_UNRESOLVED, ("reflection", "held"), "door_by_name")

    def _fetch(self, node: ast.Call, fetch: Fetch) -> None:
        """A read (or write) by name: `getattr(rec, "x")`, `hasattr`, `setattr`, `delattr`,
        `operator.attrgetter("x", "server_args.y")(obj)`, under any alias. Each attribute
        of a path whose object is the record is a leaf read; a name built at run time
        reads `*`; `getattr(ServerArgs, k)` reads a class default."""
        target = fetch.target
        if fetch.form == "setattr" and len(node.args) > 2:
            # `setattr(self, "cfg", rec)` stores like `self.cfg = rec`; a name built at run
            # time may be any attribute, never one named like the record
            path = fetch.paths[0]
            stored = ast.Attribute(value=target, attr=path[0] if path else "", ctx=ast.Store())
            self._stored([stored], node.args[2])
        if fetch.form in ("setattr", "delattr"):
            if self.a.via(target, self.scope):
                path = fetch.paths[0]
                leaf = path[0] if path else "*"
                self._write(node, leaf, origin=self.a.write_origin(target, self.scope))
            return
        paths: list[tuple[str, ...] | None] = []
        for path in fetch.paths:
            names = self.a.fetch_names(node, fetch, self.scope) if path is None else None
            if isinstance(names, frozenset) and fetch.form != "hasattr":
                # a name bound only to literals: the attributes they name
                paths += [tuple(name.split(".")) for name in sorted(names)]
                continue
            paths.append(path)
            if path is None and self.a.reach(target, self.scope) is None and self.a.holder(target, self.scope) and (
                fetch.form != "hasattr" and holders.may_be(names, self.a.holder_attrs(), dotted=fetch.form == "attrgetter")
            ):
                self._holder_escape(node)  # `getattr(cfg, name)`: it may be `cfg.server_args`
        for path in paths:
            expr = target
            for index, attr in enumerate(path or ("*",)):
                reach = self.a.reach(expr, self.scope)
                if reach is None and index == 0 and fetch.form != "attrgetter" and self._is_record_class(expr):
                    reach = ("class", "constructed")  # getattr(ServerArgs, k): a class default
                if reach is not None:
                    form = fetch.form if path else "getattr_dynamic"
                    self._read(node, attr, reach, form)
                if path is not None:
                    expr = fetched_chain(expr, (attr,), node)

    def visit_Match(self, node: ast.Match) -> None:
        # A class pattern reads the attributes it names from the subject: `case
        # ServerArgs(tp_size=t)` from any record that matches, `case object(tp_size=t)`
        # from a subject that is the record. Positional sub-patterns read the fields
        # `__match_args__` names (a dataclass's field order), unknown here: `*`.
        # A positional sub-pattern on an object holding the record, whose class's
        # `__match_args__` the module does not show, may bind the record: an escape.
        for case in node.cases:
            for pattern, value in _sub_patterns(case.pattern, node.subject):
                if not isinstance(pattern, ast.MatchClass):
                    continue
                reach = self.a.reach(value, self.scope) if value is not None else None
                if reach is None and not self._is_record_class(pattern.cls):
                    if pattern.patterns and (
                        (value is not None and self.a.holder(value, self.scope))
                        or self.a.class_names_of.get(_name_of(pattern.cls)) in self.a.holder_classes
                    ) and any(self.a.matched(field) is None for field in self._positional(pattern, value)):
                        self._holder_escape(pattern)
                    continue
                if reach is not None and value is not None and dotted(pattern.cls):
                    # `case C():` tests `isinstance(subject, C)`: C's metaclass's hook
                    self._hand([(value, f"meta:{dotted(pattern.cls)}.__instancecheck__", 0, HOOK)])
                found = reach or ("class_pattern", "held")
                for attr in pattern.kwd_attrs:
                    self._read(pattern, attr, found, "match")
                if pattern.patterns:
                    self._read(pattern, "*", found, "match")
        self.generic_visit(node)

    @staticmethod
    def _positional(pattern: ast.MatchClass, value: ast.expr | None) -> list[_MatchedField]:
        base = value if value is not None else _SOMETHING
        return [_MatchedField(base, _name_of(pattern.cls), i, p) for i, p in enumerate(pattern.patterns)]

    @staticmethod
    def _literal_leaf(args: Sequence[ast.expr]) -> str:
        if len(args) > 1 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            return args[1].value
        return "*"


def mention_lines(text: str, names: Iterable[str]) -> list[int]:
    """The lines (1-based, sorted) where one of `names` (identifiers) occurs as a whole
    word in `text` (configbags.migrate.scan.search_text: the parser's lines, `\n` only).
    Most files mention no name at all: a search text answers that from its index
    (configbags.migrate.searchtext)."""
    starts: list[int] = []
    for word in names:
        starts += whole_word_starts(text, word)
    return lines_of(text, starts)


def bare_mentions(text: str, names: Iterable[str]) -> list[int]:
    """Where one of `names` is mentioned bare, as a value (`_os = os`, `f(os)`, `m = mod
    or os`): as a whole word not after a dot and not followed by an attribute, a call or
    an index, on a line that is no import statement."""
    found: list[int] = []
    for name in names:
        for at in whole_word_starts(text, name):
            if (at and text[at - 1] == ".") or _USED_NOT_BARE.match(text, at + len(name)):
                continue
            start = text.rfind("\n", 0, at) + 1
            if not text[start:at].lstrip().startswith(("import ", "from ")):
                found.append(at)
    return found


# what follows a name used as other than a value: an attribute, a call, an index, or (a
# non-ASCII letter, which whole_word_starts counts as a boundary) more of the name
_USED_NOT_BARE = re.compile(r"[ \t]*[.(\[\w]")


def lines_of(text: str, positions: Iterable[int]) -> list[int]:
    """The (parser's) lines of these offsets into `text`, sorted, once each."""
    lines: list[int] = []
    line, previous = 1, 0
    for position in sorted(positions):
        line += text.count("\n", previous, position)
        previous = position
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


# What a sub-pattern is matched against where the value around it is unknown (inside a
# sequence or mapping pattern): `.server_args` of it is still the record attribute.
_SOMETHING = ast.Name(id="<matched>", ctx=ast.Load())


def _sub_patterns(pattern: ast.pattern, subject: ast.expr) -> list[tuple[ast.pattern, ast.expr | None]]:
    """Every pattern inside `pattern` with the value it is matched against, where the
    pattern spells it: the subject at the top (and under `|` and `as`), `value.k` for a
    keyword sub-pattern `k=P` of a class pattern, the attribute `__match_args__` names for
    a positional one; None inside a sequence or a mapping."""
    found: list[tuple[ast.pattern, ast.expr | None]] = []
    pending: list[tuple[ast.pattern, ast.expr | None]] = [(pattern, subject)]
    while pending:
        current, value = pending.pop()
        found.append((current, value))
        if isinstance(current, ast.MatchAs) and current.pattern is not None:
            pending.append((current.pattern, value))
        elif isinstance(current, ast.MatchOr):
            pending += [(p, value) for p in current.patterns]
        elif isinstance(current, ast.MatchClass):
            base = value if value is not None else _SOMETHING
            cls = _name_of(current.cls)
            pending += [(p, _MatchedField(base, cls, i, p)) for i, p in enumerate(current.patterns)]
            pending += [
                (p, ast.copy_location(ast.Attribute(value=base, attr=k, ctx=ast.Load()), p))
                for k, p in zip(current.kwd_attrs, current.kwd_patterns, strict=True)
            ]
        elif isinstance(current, (ast.MatchSequence, ast.MatchMapping)):
            pending += [(p, None) for p in current.patterns]
    return found


def _subject_captures(pattern: ast.pattern) -> list[ast.MatchAs]:
    """The capture patterns that bind the match subject itself: `case sa`, `case P as sa`,
    and those under `|`."""
    if isinstance(pattern, ast.MatchAs):
        return [pattern, *(_subject_captures(pattern.pattern) if pattern.pattern else [])]
    if isinstance(pattern, ast.MatchOr):
        return [capture for p in pattern.patterns for capture in _subject_captures(p)]
    return []


def _indexed_element(expr: ast.expr) -> ast.expr:
    """The element a container literal indexed literally evaluates to (`[rec][0]`,
    `(a, rec)[-1]`, `{"r": rec}["r"]`), else `expr` itself."""
    while isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        container, key = expr.value, expr.slice.value
        if isinstance(container, (ast.Tuple, ast.List)) and type(key) is int and -len(container.elts) <= key < len(
            container.elts
        ) and not any(isinstance(e, ast.Starred) for e in container.elts):
            expr = container.elts[key]
        elif isinstance(container, ast.Dict) and None not in container.keys and any(
            isinstance(k, ast.Constant) and k.value == key for k in container.keys
        ):
            expr = next(v for k, v in reversed(list(zip(container.keys, container.values, strict=True)))
                        if isinstance(k, ast.Constant) and k.value == key)
        else:
            break
    return expr


def namespace_like(expr: ast.expr) -> bool:
    return holders.namespace_of(expr) is not None


def _snapshot(expr: ast.expr) -> bool:
    """Is `expr` a snapshot of the current context (`contextvars.copy_context()`)?"""
    return isinstance(expr, ast.Call) and dotted(expr.func).rpartition(".")[2] == "copy_context"


def dotted(expr: ast.expr | None) -> str:
    """`a.b.c` for an attribute chain of names, else "". A route to a module that spells
    its name (`importlib.import_module("a.b").c`, `sys.modules["a.b"].c`) is the module's
    name: `a.b.c`."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, (ast.Call, ast.Subscript)):
        module = spelled_module(expr)
        if module is None:
            return ""
        parts.append(module)
        return ".".join(reversed(parts))
    if not isinstance(expr, ast.Name):
        return ""
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _literal_name(expr: ast.expr | None) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str) and expr.value and not expr.value.startswith("."):
        return expr.value
    return None


def _sys_modules(expr: ast.expr) -> bool:
    name = dotted(expr)
    return name.rpartition(".")[2] == "modules" and "sys" in name


def relative_module(name: str, package: str | None) -> str | None:
    """The absolute name `importlib.import_module(name, package)` imports: `.inner.h`
    from `pkg.ks` is `pkg.ks.inner.h`, `..h` is `pkg.h`; None where the package is not
    spelled or has too few parts."""
    if not name.startswith("."):
        return name
    dots = len(name) - len(name.lstrip("."))
    if not package or package.count(".") < dots - 1:
        return None
    base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
    return f"{base}.{name[dots:]}" if name[dots:] else base


def spelled_module(expr: ast.expr) -> str | None:
    """The module a route names, where it spells the name: `importlib.import_module("a.b")`
    (relative to a spelled `package`: `import_module(".b", package="a")`), `importlib.
    reload(m)` of a module spelled so, and `__import__("a.b", fromlist=[...])` are a.b,
    `__import__("a.b")` is a, `sys.modules["a.b"]` and `sys.modules.get("a.b"[, default])`
    are a.b; else None."""
    if isinstance(expr, ast.Subscript):
        if _sys_modules(expr.value):
            return _literal_name(expr.slice)
        return None
    if not isinstance(expr, ast.Call) or not expr.args or len(expr.args) > 4:
        return None
    if isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" and _sys_modules(expr.func.value):
        return _literal_name(expr.args[0]) if len(expr.args) <= 2 and not expr.keywords else None
    func = dotted(expr.func).rpartition(".")[2]
    if func == "reload" and len(expr.args) == 1 and "importlib" in dotted(expr.func):
        # `importlib.reload(m)` returns the module it is given
        return dotted(expr.args[0]) or None
    if func == "import_module" and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str):
        package = expr.args[1] if len(expr.args) > 1 else next((k.value for k in expr.keywords if k.arg == "package"), None)
        spelled = package.value if isinstance(package, ast.Constant) and isinstance(package.value, str) else None
        if expr.args[0].value.startswith(".") and len(expr.args) + len(expr.keywords) == 2:
            return relative_module(expr.args[0].value, spelled)
    name = _literal_name(expr.args[0])
    if name is None or any(isinstance(arg, ast.Starred) for arg in expr.args):
        return None
    if func == "import_module" and len(expr.args) == 1 and not expr.keywords:
        return name
    if func == "__import__":
        fromlist = expr.args[3] if len(expr.args) > 3 else next((k.value for k in expr.keywords if k.arg == "fromlist"), None)
        full = isinstance(fromlist, (ast.List, ast.Tuple)) and bool(fromlist.elts)
        return name if full else name.split(".")[0]
    return None


def flow_names(flows: FlowInput) -> frozenset[str]:
    """The identifiers through which what the project pass tells a module is reached:
    local names, each part of a dotted one, and the parameters that receive the record."""
    names: set[str] = set()
    fillers = (
        entry.rpartition("|")[0] for entry in (
            *flows.fillers, *flows.namespace_readers, *flows.parser_fillers, *flows.parse_helpers,
        )
    )
    for spelled in (
        *flows.parser_givers,
        *flows.record_fetchers, *flows.record_holders, *flows.holder_classes, *fillers, *flows.stored_holders,
        *flows.record_dict_holders, *flows.record_dict_fetchers, *flows.home_holders,
        *(name for name, _ in flows.home_reads), *(method for method, _ in flows.home_methods),
        *flows.record_bases,
    ):
        names.update(spelled.split("."))
    names.update(param for _, param in flows.params)
    return frozenset(names)


def statement_span(stmt: ast.stmt) -> tuple[int, int]:
    start = stmt.lineno
    for decorator in getattr(stmt, "decorator_list", ()):
        start = min(start, decorator.lineno)
    return start, stmt.end_lineno or stmt.lineno


def mentions(lines: list[int], span: tuple[int, int]) -> bool:
    index = bisect.bisect_left(lines, span[0])
    return index < len(lines) and lines[index] <= span[1]




@attrs.frozen
class Analysed:
    """One module's record analysis: its reads and violations, and what it offers the
    project pass (configbags.migrate.flows)."""

    reads: list[tuple[Any, ...]]
    violations: list[tuple[Any, ...]]
    passes: list[tuple[Any, ...]] = attrs.Factory(list)
    fetchers: list[str] = attrs.Factory(list)  # module-level functions returning the record
    holders: list[str] = attrs.Factory(list)  # module-level names bound to it
    # module-level names, and attribute paths of them, a record attribute is stored on
    # (`app.state.server_args = rec` in any function): holders for their importers too
    stored: list[str] = attrs.Factory(list)
    # (name, "holder_class" or "repr_holder"): module-level functions giving a holder
    holder_functions: list[tuple[str, str]] = attrs.Factory(list)
    # (name, "record_dict" or "record_dict_holder"): module-level functions giving the
    # record dict, and names bound to it
    dict_names: list[tuple[str, str]] = attrs.Factory(list)
    # (name, "parser_fills:<position>" or "parser"): module-level functions filling a
    # parameter with add_cli_args, or giving a filled parser (_Analysis.parser_facts)
    parsers: list[tuple[str, str]] = attrs.Factory(list)


_NO_STATEMENTS = ast.Module(body=[], type_ignores=[])


def analyse(
    tree: ast.Module,
    text: str,
    settings: ScanSettings,
    fetches: Callable[[], Mapping[int, tuple[Fetch, ...]]] = dict,
    flows: FlowInput | None = None,
) -> Analysed:
    """The reads and violations in one parsed module (`text`: its search text, see
    configbags.migrate.scan.search_text), as path-free
    rows: (function, leaf, line, col, end_line, end_col, via, form, origin) and
    (function, line, kind, leaf, detail, origin). `fetches` gives the module's fetching
    calls (configbags.migrate.doors.DoorScan.fetched); asked only where the record may be
    read at all."""
    names = frozenset(
        {settings.raw_accessor, settings.record_class, *settings.record_attributes, *settings.record_dicts}
    ) | _HOLDER_WORDS
    if flows:
        names |= flow_names(flows)
    # Rounds until the names of interest stop growing: a round that finds a new alias
    # (or rename, self attribute, wrapper) must look again at the lines that mention it.
    # Each round starts afresh, so pruning never hides a binding found later; a round
    # whose new names are mentioned on no line it has not walked would find the same.
    fetched: Mapping[int, tuple[Fetch, ...]] | None = None
    types: RecordTypes | None = None
    lines = mention_lines(text, names)
    rendered = frame_locals(tree) if any(word in text for word in _LOCALS_KEYWORDS) else []
    while True:
        if not lines:
            return Analysed(rendered, [])
        if types is None:
            # every name for the record's type is spelled from the class's own name (an
            # alias, a subclass, an annotation, a string one): a module that never spells
            # it has none, and its statements need not be walked for them
            spelled = settings.record_class in text
            types = RecordTypes(tree if spelled else _NO_STATEMENTS, (settings.record_class,))
            if not types.names() <= names:
                names |= types.names()
                lines = mention_lines(text, names)
                continue
        if fetched is None:
            fetched = fetches()
        lines = _with_fetches(lines, fetched, names)
        analysis = _Analysis(settings, lines, fetched, types, flows)
        analysis.scope_nodes[id(analysis.module)] = tree
        _Binder(analysis).visit_statements(tree.body)
        analysis.resolve()
        analysis.settle_holders()
        analysis.settle_dicts()
        new = analysis.names_of_interest() - names
        if not new:
            break
        names |= new
        walked = set(lines)
        added = set(mention_lines(text, new)) - walked - analysis.quiet_lines()
        if not added and set(_with_fetches(lines, fetched, names)) <= walked:
            break
        lines = _with_fetches(sorted(walked | added), fetched, names)
    analysis.resolve_rebound()
    _Reader(analysis).visit_statements(tree.body)
    analysis.reads += rendered
    module = analysis.module
    top_level = {
        child.qualname for child in analysis.scopes if child.parent is module and child.kind == "function"
    }
    fetchers = [name for name in analysis.wrappers if name in top_level]
    # `def load() -> ServerArgs`: what the types say is the record, for its importers too
    fetchers += [
        node.name for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and analysis.is_record_annotation(node.returns)
    ]
    # `g = get_server_args`, `load_args = h.rec` at module level: a call of g is the
    # record, wherever it is imported
    fetchers += [
        name for name in analysis.raw_names
        if name != settings.raw_accessor and name in module.bound and name not in top_level
    ]
    fetchers += [name for name in module.callers if name not in top_level]
    # `current_args = lambda: get_server_args()` at module level: a call of it is the
    # record in every module importing it (in its own, a carrier: configbags.migrate.reflection)
    fetchers += [
        target.id for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
        and analysis.reach(node.value.body, analysis.scope_of.get(id(node.value), module)) is not None
        for target in node.targets if isinstance(target, ast.Name)
    ]
    # a class attribute bound to the record (`class R: ARGS = get_server_args()`) is
    # read as `R.ARGS` wherever R is imported
    held = [*module.aliases, *(
        f"{scope.qualname}.{name}"
        for scope in analysis.scopes
        if scope.kind == "class" and scope.parent is module
        for name in scope.aliases
    )]
    stored = sorted({name for owner, name in analysis.stored_on if owner == id(module)} - analysis.imported_stored)
    made = sorted(
        (name, kind) for name in analysis.holder_functions for kind in holders.holder_kinds(
            name in analysis.generated_reprs, name in analysis.generated_eqs
        )
    )
    dict_names = sorted(
        [(name, "record_dict") for name in analysis.own_dict_fetchers]
        + [(name, "record_dict_holder") for name in analysis.own_dict_holders]
    )
    return Analysed(
        analysis.reads, analysis.violations, analysis.passes, sorted(set(fetchers)), sorted(held), stored, made,
        dict_names, analysis.parser_facts(tree),
    )


# Words of the uses that read a holder's namespace whole, and of the imports and calls that
# give the process view (configbags.migrate.holders): their lines are always walked.
# Keywords that make a traceback renderer show every frame's local variables
_LOCALS_KEYWORDS = ("capture_locals", "show_locals")


def frame_locals(tree: ast.Module) -> list[tuple[Any, ...]]:
    """`traceback.TracebackException(..., capture_locals=True)`, `StackSummary.extract(...,
    capture_locals=True)`, rich's `install(show_locals=True)`: every frame's locals turned
    into text, in any module (a crash reporter mentions nothing config-related), so
    whatever a frame holds (the record, a context, the environment) is read there: `$?`,
    unless the keyword is a literal false."""
    found: list[tuple[Any, ...]] = []

    def walk(node: ast.AST, qualname: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = qualname
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{qualname}.{child.name}" if qualname else child.name
            elif isinstance(child, ast.Call):
                for keyword in child.keywords:
                    value = keyword.value
                    if keyword.arg in _LOCALS_KEYWORDS and not (isinstance(value, ast.Constant) and not value.value):
                        found.append((
                            qualname or "<module>", ENV_UNRESOLVED, keyword.lineno, keyword.col_offset,
                            keyword.end_lineno or keyword.lineno, keyword.end_col_offset or keyword.col_offset,
                            "reflection", "frame_locals", "held",
                        ))
            walk(child, inner)

    walk(tree, "")
    return found


_HOLDER_WORDS = frozenset({
    "vars", "__dict__", "asdict", "astuple", "getmembers", "dumps", "dump", "safe_dump", "accessors",
    # a function's defaults read back (`g.__defaults__`, `inspect.signature(g)`)
    "__defaults__", "__kwdefaults__", "signature",
    *holders.CONTEXT_FUNCTIONS,
})


def _with_fetches(lines: list[int], fetched: Mapping[int, tuple[Fetch, ...]], names: frozenset[str]) -> list[int]:
    """`lines` and those of the fetches a line need not spell: by a constant's name
    (`getattr(self, ATTR)` reads what it names) and by a name built at run time (which
    may be a record attribute of a holder)."""
    found = {
        getattr(fetch.target, "lineno", 0)
        for calls in fetched.values() for fetch in calls
        for path in fetch.paths if path is None or path[0] in names
    }
    return lines if found <= set(lines) else sorted(set(lines) | found)
