"""What the scanner is told and what it reports: its settings, the reads, writes and
problems it finds, and which record a read reaches (its origin). Shared by the analysis,
the cache, the check and the fix, so none of them imports another's internals."""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

import attrs

# Bump when the analysis changes, so old cache entries are not served.
SCANNER_VERSION = 79

# Which record a read reaches, as far as the code shows. `ratchet fix` may only rewrite a
# read of the *process* record to an accessor; the others would change meaning:
#   process      the raw accessor (or a copy, alias or wrapper of it): the published record;
#   held         a parameter, annotated name or record attribute (`self.server_args`),
#                or a parameter defaulting to the record (a caller may pass another):
#                usually the process record, but a draft runner holds its own;
#   rebound      a name (or `self.` attribute) that the record is bound to, but that is
#                also bound to something else in the same scope (`sa = other`, a loop
#                target, `except ... as sa`, `del sa`, a `None` placeholder, a parameter
#                the record is a fallback for), or bound to a value that is the record
#                only on some branches (`rec if c else other`, `rec or other`). Bindings
#                are not ordered (flow-insensitive): any other binding anywhere in the
#                scope taints every read of the name, since a read may see either;
#   wrapped      bound by `with f(record) as name`: may not be the record at all;
#   constructed  a ServerArgs built in the code from literals only (`ServerArgs()`,
#                `ServerArgs(model_path="m")`): the class's defaults and what the code
#                spells, not the config: handing it on, formatting it or reading it whole
#                reads nothing;
#   built        a ServerArgs built from values the code does not spell (`from_cli(argv)`,
#                `from_cli_args(ns)`, `ServerArgs(**vars(ns))`), or the Namespace a parser
#                `ServerArgs.add_cli_args(p)` filled parses (`p.parse_args(argv)`, via
#                "parsed"): the config the launcher is about to publish, not the
#                published record yet: it escapes, passes (followed into the callee) and
#                reads whole like the record, and `ratchet fix` never rewrites a leaf
#                read on it;
#   replaced     a copy of the record with some fields changed (`dataclasses.replace(rec,
#                ...)`, `attrs.evolve`, `copy.replace`, the generated record's own
#                `.replace(...)`): it carries every published value it does not change, so
#                it escapes, passes and reads whole like the record (as a `copy.copy`
#                does), but a read of a leaf on it may be of a changed value: `ratchet fix`
#                never rewrites it. Last in the order, so a name that may be such a copy
#                is read as one (never as a record built here of literals, which reads
#                nothing), as a name that may be built from the config is.
# When one name is bound several ways, the later origin in this order wins (the join),
# so an alias is only "process" when every binding of it is.
ORIGINS = ("process", "held", "rebound", "wrapped", "constructed", "built", "replaced")
_ORIGIN_RANK = {origin: rank for rank, origin in enumerate(ORIGINS)}


def join_origin(a: str, b: str) -> str:
    """The less provable of two origins."""
    return a if _ORIGIN_RANK[a] >= _ORIGIN_RANK[b] else b


Reach = tuple[str, str]  # (via, origin)

# Reads that go around the accessors without touching the record (configbags.migrate.doors)
# are keyed like record reads, with a `leaf` no leaf name can be:
ENV_MARK = "$"  # `$NAME`: a raw read of the declared environment variable NAME
# `$?`: an environment read whose name the module does not show (`os.environ[name]`,
# `os.getenv(prefix + part)`, a constant from another module): it may read a declared one
ENV_UNRESOLVED = ENV_MARK + "?"
# A `$?` read's via while it waits for the project's files: an import by a name built on
# this literal package prefix (configbags.migrate.flows.prefixed_import_reads judges it)
PREFIXED_IMPORT = "import_prefix:"
# A `$?` read's via while it waits for the tree's entry-point files: a plugin loader's
# `ep.load()` of these literal groups (comma-joined; configbags.migrate.scan judges it)
ENTRY_GROUPS = "entry_groups:"
# Leaves whose one (file, function, leaf) key stands for reads of anything (the whole
# record, an unresolved name): their allowlist entries count the reads they allow.
COUNTED_LEAVES = frozenset({"*", ENV_UNRESOLVED})
STATE_READBACK = "Context.state"  # `.state` of a config context
STATE_DICT_READBACK = "dist.state_dict"  # configbags.runtime.dist.state_dict
# The config context's readback methods: each returns (or writes out) the values of every
# namespace, past role scoping, like `.state`; reported as `Context.<method>`.
CONTEXT_READBACK_METHODS = ("server_info", "explain", "export_resolution", "hash_factors", "dump_config")
READBACKS = frozenset({STATE_READBACK, STATE_DICT_READBACK, *(f"Context.{m}" for m in CONTEXT_READBACK_METHODS)})


def env_subject(name: str) -> str:
    """The `leaf` of a raw read of environment variable `name`."""
    return ENV_MARK + name


# a home_reads leaf so marked is a write of the leaf, not a read: at any use of the name
# (`set_port(1)` of `def set_port(p): _G.port = p`), or where the name is assigned
# (`facade.port = 1` through a property setter writing `_G.port`)
WRITES_ON_USE = "="
WRITES_ON_STORE = ":="

@attrs.frozen
class ScanSettings:
    """What to scan and which names denote the raw record (`scan:` in ratchet.yaml)."""

    roots: tuple[str, ...] = ("runtime",)
    excludes: tuple[str, ...] = ()
    raw_accessor: str = "get_server_args"
    record_class: str = "ServerArgs"
    record_attributes: tuple[str, ...] = ("server_args",)
    # Module-global dict copies of the record (`global_server_args_dict`): read and
    # written by key, so `d["x"]`, `d.get("x")`, `"x" in d` and `d.update(...)` count.
    record_dicts: tuple[str, ...] = ()
    # Environment variables the schema declares (leaves' `env:` and their old names): a raw
    # read of one is reported, since the leaf's accessor has the value of every layer.
    env_vars: tuple[str, ...] = ()
    # Bigger files are reported, not parsed: a multi-megabyte .py is data, not code.
    max_bytes: int = 4_000_000

    def analysis_key(self) -> str:
        """Everything a per-file result depends on besides the file's bytes."""
        parts = [
            str(SCANNER_VERSION),
            self.raw_accessor,
            self.record_class,
            ",".join(self.record_attributes),
            ",".join(self.record_dicts),
            ",".join(self.env_vars),
            str(self.max_bytes),
        ]
        return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


class Entry(NamedTuple):
    """An allowlist or write-baseline entry as the ratchet holds it: the same fields
    as the schema's configbags.codegen.model.AllowEntry, without importing the generator."""

    file: str
    function: str
    leaf: str
    reason: str
    # How many reads the entry allows, where it says (`init` writes it for the whole-record
    # `*` and the unresolved `$?`, whose one key would hide any new read); None: any number.
    reads: int | None = None


class Read(NamedTuple):
    file: str
    function: str  # enclosing qualname, `<module>` for module-level code
    # attribute name; `*` for a dynamic getattr or a whole-record read; `$NAME` for an
    # environment read, `Context.state` / `dist.state_dict` for an operator readback
    leaf: str
    line: int
    col: int  # ast columns: UTF-8 byte offsets
    end_line: int
    end_col: int
    # how the record was reached: accessor, alias, parameter, attribute, ...; `environ` and
    # `readback` for the doors around the record
    via: str
    # attribute, augmented (`rec.x += 1`: read, then written), getattr, getattr_default,
    # getattr_dynamic, hasattr, attrgetter, whole;
    # environ_subscript, environ_get, environ_in, environ_pop, environ_setdefault, getenv,
    # environ_whole (the environment used whole: leaf `$?`); state, state_dict
    form: str
    # Which record it is, as far as the code shows (see ORIGINS): what `ratchet fix` may
    # assume. Defaulted so rows written by hand in tests stay short.
    origin: str = "process"


WRITE_KINDS = frozenset({"write", "dict_write"})


# Which record a write changes: a read's ORIGINS, plus
#   copied       a copy of the record (`copy.copy(rec)`, `deepcopy`, or a name bound to one):
#                it reads as the record, but a write changes only the copy;
#   class        the record class itself (`ServerArgs.x = ...`, its default).
# `ratchet fix --rewrite-writes` turns only a write to the process record into an
# override (a held one with --rewrite-parameters); an override of any other would change
# the process config for a write that changed one private record.
WRITE_ORIGINS = (*ORIGINS, "copied", "class")


class Violation(NamedTuple):
    """Never allowed: a write to the record, or a renamed raw accessor."""

    file: str
    function: str
    line: int
    kind: str  # "write" (the record), "dict_write" (a dict copy of it) or "renamed_accessor"
    leaf: str  # the written leaf (`*` when unknown) or the new name of the accessor
    detail: str  # the offending source text, shortened
    # For a write, which record it changes (WRITE_ORIGINS); defaulted for short test rows.
    origin: str = "process"


class Problem(NamedTuple):
    """A file the scanner could not read; the scan goes on without it."""

    file: str
    reason: str


Rows = tuple[tuple[Any, ...], ...]
DECORATED = -2  # FlowFacts.passes: the position of a function handed to its decorator
# FlowFacts.passes: the keyword of a pass to a hook Python calls only where the class
# defines it (`__setattr__`, a descriptor's `__set__`, a metaclass's `__instancecheck__`):
# followed into a scanned one, nothing where none is found
HOOK = "<hook>"


@attrs.frozen
class FlowFacts:
    """What one module offers other modules and what it hands them, for the project pass
    (configbags.migrate.flows): path-free, so it is cached with the file's result. Rows
    of strings and ints only (they are stored as JSON)."""

    # (level, module, name, local): `from .m import n as l` is (1, "m", "n", "l");
    # `import a.b as l` is (0, "a.b", "", "l"), a plain `import a.b` binds local "a"
    imports: Rows = ()
    # (qualname, positional parameters, keyword-only parameters, record parameters,
    # takes *args or **kwargs, body qualname, unbound, routes): the module's functions, its
    # classes' methods (without the `self` or `cls` a call binds; unbound 1 for a plain
    # method, whose `self` is the first argument when called through its class); routes:
    # the decorators that decide what a call runs, outermost first, and a class's
    # `metaclass:M`. Also `deco()` (and a factory's `deco()()`): what calling the
    # decorator `deco` gives, where its body shows it (the wrapper's parameters and body,
    # or routes ("=",): the function as it is)
    signatures: Rows = ()
    # (class, base, base, ...): each module-level class's bases as spelled (dotted names)
    bases: Rows = ()
    # (name, kind): module-level names whose call returns the record, a config context or
    # the environment (kind "record", "context", "environ"), or the record dict (kind
    # "record_dict"); module-level names bound to the record dict (kind "record_dict_holder")
    fetchers: Rows = ()
    holders: tuple[str, ...] = ()  # module-level names bound to the record
    # (caller, callee, position, keyword, line, col, end_line, end_col): the record
    # passed to a callable. callee is `name:DOTTED` as spelled, or `self:CLASS.METHOD`;
    # position -1 for a keyword (then keyword names it) or an unpacked argument, DECORATED
    # for a function whose call gives the record handed to its decorator
    passes: Rows = ()
    # (function qualname, parameter, use): a parameter used as an environment key (use
    # "environ") or as a child process's command (use "command")
    env_params: Rows = ()
    # (name, class): module-level names bound to an instance of the module's class
    # (`ENV = Env()`), whose methods other modules call through it
    instances: Rows = ()
    # (name, shape, value): module-level string constants other modules may import as an
    # environment name or a command (`PAGE = "SGLANG_PAGE_SIZE"`, `CMD = "echo $NAME"`);
    # shape "str", or "list" for a list or tuple of strings (value: them, NUL-separated)
    constants: Rows = ()
    # (function qualname, line, col, end_line, end_col, kind, path spec): a file a child
    # process runs (configbags.migrate.childenv.child_files), which the scan of the tree
    # reads where it finds it (configbags.migrate.childfiles)
    children: Rows = ()


@attrs.frozen
class FlowInput:
    """What the project pass tells one module's analysis about the others, by local
    name (or dotted, `h.rec`): what the module's imports are, and which of its own
    parameters receive the record. Path-free: the cache keys a result by it."""

    record_fetchers: frozenset[str] = frozenset()
    record_holders: frozenset[str] = frozenset()
    context_fetchers: frozenset[str] = frozenset()
    environ_fetchers: frozenset[str] = frozenset()
    params: frozenset[tuple[str, str]] = frozenset()  # (function qualname, parameter)
    # module-level names of other modules: `CTX = get_context()`, `ENV = os.environ`,
    # `from os import getenv` (re-exported)
    context_holders: frozenset[str] = frozenset()
    environ_holders: frozenset[str] = frozenset()
    environ_getters: frozenset[str] = frozenset()
    # the callables the module may spell whose parameter is an environment key or a child
    # command (its own functions, and its imports'): "spelled|position|parameter|use",
    # position -1 for a keyword-only parameter
    env_helpers: frozenset[str] = frozenset()
    # the module's imports of other modules' constants (FlowFacts.constants), by the
    # name it spells them with: (spelled, shape, value)
    constants: frozenset[tuple[str, str, str]] = frozenset()
    # names of other modules that are the runtime's state readbacks re-exported (`from
    # configbags.runtime.dist import state_dict as snap`): any use of one is a readback
    state_getters: frozenset[str] = frozenset()
    # names of other modules that are a private part of an accessors module handed on
    # (`from .accessors import _context as CTX`): any use of one is `$?`
    private_names: frozenset[str] = frozenset()
    # classes of other modules that hold the record in an attribute (configbags.migrate.
    # holders), and functions giving a holder, by the name the module spells them with;
    # `repr_holders` those whose repr, `eq_holders` those whose `==`, the dataclass or attrs
    # decorator generates from a field that may hold the record (holders.class_facts)
    holder_classes: frozenset[str] = frozenset()
    repr_holders: frozenset[str] = frozenset()
    eq_holders: frozenset[str] = frozenset()
    # functions (of other modules, or the module's own) that store a record attribute on a
    # parameter (`def fill(ns): ns.server_args = rec`): "spelled|position"; what a call
    # hands there holds the record afterwards
    fillers: frozenset[str] = frozenset()
    # names (and attribute paths of them) of other modules a record attribute is stored on
    # (`app.state.server_args = rec`), by the name the module spells them with: holders here
    stored_holders: frozenset[str] = frozenset()
    # functions (of other modules, or the module's own) that read the namespace of a
    # parameter whole (`def dump_state(obj): return json.dumps(vars(obj))`):
    # "spelled|position"; a holder a call hands there is read whole
    namespace_readers: frozenset[str] = frozenset()
    # functions (of other modules, or the module's own) that fill a parameter with
    # `ServerArgs.add_cli_args` (`def make_arg_parser(parser): ServerArgs.add_cli_args(parser)`,
    # or through another such filler): "spelled|position"; the parser a call hands there
    # parses the config afterwards. `parser_givers`: those whose call gives a filled parser
    # (`return parser`); `parse_helpers`: "spelled|position" of those returning what their
    # parameter parses (`return p.parse_args(argv)`), the config where handed a filled parser
    parser_fillers: frozenset[str] = frozenset()
    parser_givers: frozenset[str] = frozenset()
    parse_helpers: frozenset[str] = frozenset()
    # the module's from-imports of names another module's `__getattr__` serves (PEP 562),
    # as spelled there, with what each reads (configbags.migrate.moduleattrs): (level,
    # module, name or "*", leaf)
    served_imports: frozenset[tuple[int, str, str, str]] = frozenset()
    # names of other modules (and of the record's home) that are the record dict under
    # another name (`GLOBAL_ARGS = global_server_args_dict`), and functions whose call
    # gives it (`def gsad(): return global_server_args_dict`): read by key like the dict
    record_dict_holders: frozenset[str] = frozenset()
    record_dict_fetchers: frozenset[str] = frozenset()
    # where the record's home keeps the record (configbags.migrate.homegetters), as the
    # module spells it (`STATE.args`, `S.ServerArgs._instance`, `_GLOBAL_SERVER_ARGS`): the
    # record, by that spelling only (unlike record_holders, not its attribute on anything)
    home_holders: frozenset[str] = frozenset()
    # what the home's code reads off the record on the module's behalf (configbags.migrate.
    # homegetters.HomeReads): (spelled, leaf) of a home function or name any use of which
    # reads the leaf (`get_page_size` reads `page_size`; `*` where the home hands the record
    # out in a shape no analysis follows), and (method, leaf) of the record class's methods,
    # read where one is called on the record (`rec.describe()`)
    home_reads: frozenset[tuple[str, str]] = frozenset()
    home_methods: frozenset[tuple[str, str]] = frozenset()
    # the module's classes the record class derives from (a mixin its home imports):
    # `self` in their methods is the record, as in the record class's own
    record_bases: frozenset[str] = frozenset()
    # the record class's kind where its home makes it a NamedTuple or a pydantic model
    # (configbags.migrate.recordkinds), and a NamedTuple's fields in order
    record_kind: str = ""
    record_fields: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.record_fetchers or self.record_holders or self.context_fetchers or self.environ_fetchers
            or self.params or self.context_holders or self.environ_holders or self.environ_getters
            or self.env_helpers or self.constants or self.state_getters or self.private_names
            or self.holder_classes or self.repr_holders or self.eq_holders or self.fillers or self.stored_holders
            or self.namespace_readers or self.served_imports or self.record_dict_holders or self.record_dict_fetchers
            or self.home_holders or self.parser_fillers or self.parser_givers or self.parse_helpers
            or self.home_reads or self.home_methods or self.record_bases or self.record_kind
        )

    def key(self) -> str:
        """A digest of everything in it, for the cache."""
        parts = [
            ",".join(sorted(self.record_fetchers)),
            ",".join(sorted(self.record_holders)),
            ",".join(sorted(self.context_fetchers)),
            ",".join(sorted(self.environ_fetchers)),
            ",".join(sorted(f"{q}:{p}" for q, p in self.params)),
            ",".join(sorted(self.context_holders)),
            ",".join(sorted(self.environ_holders)),
            ",".join(sorted(self.environ_getters)),
            ",".join(sorted(self.env_helpers)),
            json.dumps(sorted(self.constants)),
            ",".join(sorted(self.state_getters)),
            ",".join(sorted(self.private_names)),
            ",".join(sorted(self.holder_classes)),
            ",".join(sorted(self.repr_holders)),
            ",".join(sorted(self.eq_holders)),
            ",".join(sorted(self.fillers)),
            ",".join(sorted(self.stored_holders)),
            ",".join(sorted(self.namespace_readers)),
            json.dumps(sorted(self.served_imports)),
            ",".join(sorted(self.record_dict_holders)),
            ",".join(sorted(self.record_dict_fetchers)),
            ",".join(sorted(self.home_holders)),
            ",".join(sorted(self.parser_fillers)),
            ",".join(sorted(self.parser_givers)),
            ",".join(sorted(self.parse_helpers)),
            json.dumps(sorted(self.home_reads)),
            json.dumps(sorted(self.home_methods)),
            ",".join(sorted(self.record_bases)),
            self.record_kind,
            ",".join(self.record_fields),
        ]
        return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


@attrs.frozen
class FileScan:
    """The result for one file's bytes (and its FlowInput, when it has one); cached by
    content hash, so it holds no path."""

    reads: tuple[tuple[Any, ...], ...] = ()
    violations: tuple[tuple[Any, ...], ...] = ()
    problem: str | None = None
    generated: bool = False
    flow: FlowFacts = FlowFacts()


@attrs.frozen
class ScanResult:
    reads: tuple[Read, ...]
    violations: tuple[Violation, ...]
    problems: tuple[Problem, ...]
    files: tuple[str, ...]  # every file listed under the roots, scanned or not
    files_parsed: int  # files whose analysis ran or came from cache
    files_generated: int  # skipped: generated files inside a generated package
    files_from_cache: int
    generated_files: tuple[str, ...] = ()  # which ones, so a report can show them
    # folders under a root not walked (configbags.migrate.files.SKIP_DIRS): listed, so that
    # skipping is visible
    skipped_folders: tuple[str, ...] = ()
    # scan.excludes patterns that matched no file or folder under the roots
    unmatched_excludes: tuple[str, ...] = ()


