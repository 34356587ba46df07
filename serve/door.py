"""What the HTTP config API may do, decided from the schema, without any HTTP.

The door writes as the `operator` role (`Context.acting_as`), so the leaves it may change
are exactly those whose schema names `operator` as owner or in `writers:` and whose policy
is not `startup` (`Registry.writable_by`); the context enforces that rule on every PATCH,
and the OpenAPI document lists the same leaves. There is no list of leaves here.

Errors are `DoorError`s: an HTTP status and a JSON body naming the leaf and the fix.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from secrets import token_hex
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

import attrs

from configbags.runtime.context import Context, OverrideEntry
from configbags.runtime.errors import (
    CapacityError,
    ConfigError,
    DistributedConfigError,
    LeafValueError,
    OwnerError,
    PolicyError,
    RoleError,
    UnknownLeafError,
)
from configbags.runtime.fleet import CONFIG_ROUTES
from configbags.runtime.keys import (
    ADMIN_KEY_LEAF,
    API_KEY_LEAF,
    CLIENT_KEY_VARIABLES,
    KEY_LEAVES,
    SAME_KEY,
    SAME_KEY_FIX,
    UNUSABLE_FIX,
    same_key,
    unusable,
)
from configbags.runtime.leaftypes import FloatUnderflow, closest, float_literal, shown_text
from configbags.runtime.limits import LIMITS, over
from configbags.runtime.record import FILE_SUFFIX
from configbags.runtime.registry import REDACTED, LeafSpec, Registry
from configbags.runtime.resolve import Layer, Origin

if TYPE_CHECKING:
    from configbags.serve.ranks import RankGroup, Ticket

T = TypeVar("T")
_CONSISTENT_TRIES = 16  # reads of one state tried before a 503 (Door.consistent)
OPERATOR = "operator"  # the role the door writes as (schema/roles.yaml)
SOURCE_PREFIX = "http:"  # the override log's source of a PATCH is SOURCE_PREFIX + `source`
LOG_SOURCE_CHARS = 200  # the longest override source the context takes, prefix included
MAX_SOURCE_CHARS = LOG_SOURCE_CHARS - len(SOURCE_PREFIX)  # what a PATCH's `source` may be, as documented
MAX_DEPTH = 32  # JSON nesting a PATCH body may have; config values need far less
DEFAULT_MAX_BODY_BYTES = 64 * 1024

# status of each refusal the context raises; the first matching class wins
_STATUS: tuple[tuple[type[ConfigError], int, str], ...] = (
    (UnknownLeafError, 400, "unknown_leaf"),
    (LeafValueError, 400, "bad_value"),
    (CapacityError, 409, "above_capacity"),
    (PolicyError, 403, "policy"),
    (OwnerError, 403, "not_writable"),
    (RoleError, 403, "not_writable"),
    (DistributedConfigError, 503, "rank_unreachable"),
)


@attrs.frozen
class DoorError(Exception):
    """A refused request: the status, a stable error code, a message naming the leaf, the
    fix, and for 503 the ranks that did not answer."""

    status: int
    code: str
    message: str
    fix: str
    leaf: str | None = None
    ranks: tuple[int, ...] = ()
    extra: Mapping[str, Any] = attrs.field(factory=dict)  # more fields of the body

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "message": self.message, "fix": self.fix}
        if self.leaf is not None:
            out["leaf"] = self.leaf
        if self.ranks:
            out["ranks"] = list(self.ranks)
        return {**out, **self.extra}

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


def is_secret(spec: LeafSpec) -> bool:
    """Whether a leaf's value must never leave the process: the schema's `secret: true`
    where the schema language has it, and the leaves the door reads its keys from."""
    return bool(getattr(spec, "secret", False)) or spec.name in KEY_LEAVES


def secret_leaves(registry: Registry) -> frozenset[str]:
    return frozenset(name for name, spec in registry.leaves.items() if is_secret(spec))


def redact(info: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """`info` (a server_info() or explain() readback, changed in place and returned) with
    every set secret value replaced by REDACTED. Unset stays null: whether a key is set is
    no secret, and operators need to see it."""

    def hide(value: Any) -> Any:
        return None if value is None else REDACTED

    for section in ("record", "resolved"):
        values = info.get(section)
        if isinstance(values, dict):
            for name in secrets.intersection(values):
                values[name] = hide(values[name])
    if info.get("leaf") in secrets:  # explain() of one leaf
        for key in ("record", "resolved", "value"):
            if key in info:
                info[key] = hide(info[key])
    for entry in info.get("overrides", ()):
        if entry.get("leaf") in secrets:
            entry["old"], entry["new"] = hide(entry["old"]), hide(entry["new"])
    return info


def parse_patch(body: bytes) -> tuple[str, dict[str, Any]]:
    """The `{"source": ..., "leaves": {...}}` of a PATCH body (already size-limited), or a
    400 DoorError saying what is wrong. Hostile JSON is refused, not interpreted: invalid
    UTF-8, NaN or Infinity, duplicate keys (which value would win is a guess), nesting deep
    enough to exhaust the parser."""
    try:
        data = json.loads(body.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                          parse_int=_int_within_limit, parse_float=float_literal)
    except RecursionError:
        raise _bad_body("the JSON body is nested too deeply") from None
    except FloatUnderflow as exc:  # valid JSON, but a number no float holds
        raise _bad_body(f"the body holds a number {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad_body(f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _bad_body(f"the body is a JSON {type(data).__name__}, not an object")
    if _too_deep(data, MAX_DEPTH):
        # checked here, without recursion, so no value checker recurses that deep either
        raise _bad_body(f"the JSON body is nested too deeply (more than {MAX_DEPTH} levels)")
    extra = sorted(set(data) - {"source", "leaves"})
    if extra:
        raise _bad_body(f"unknown key(s) {', '.join(map(repr, extra))} in the body")
    source, leaves = data.get("source"), data.get("leaves")
    why = source_problem(source)
    if why is not None or not isinstance(source, str):  # the second, for mypy: source_problem refuses a non-str
        raise _bad_body(why or "`source` must be a string")
    if not isinstance(leaves, dict) or not leaves:
        raise _bad_body("`leaves` must be a non-empty object of leaf names to new values")
    for name, value in leaves.items():
        long = _long_int(value)
        if long is not None:
            raise DoorError(400, "bad_value",
                            f"the value for {name!r} holds an integer of {long.digits} digits, over "
                            f"{over('int_digits', 'digits')}; nothing was applied",
                            "send a number within the leaf's bounds (GET /openapi.json lists them)", leaf=name)
        if not _is_text(name) or not _all_text(value):
            shown = name if _is_text(name) else name.encode("utf-8", "backslashreplace").decode()
            raise DoorError(400, "bad_value",
                            f"the value for {shown!r} holds a lone surrogate (an escape such as "
                            f"\\udc80 that is no character), which is not text; nothing was applied",
                            "send text that encodes as UTF-8", leaf=shown)
    return source, leaves


def source_problem(source: object) -> str | None:
    """Why a PATCH's `source` is refused, or None: the door's one rule, which `configbags
    rollout` applies to its `--source` before any request."""
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
        return (f"`source` must be a non-empty string of at most {MAX_SOURCE_CHARS} characters naming "
                f"who asks (it goes into the override log)")
    if not source.isprintable():  # a lone surrogate is no printable character either
        return "`source` must be printable text (it is written to logs)"
    return None


@attrs.frozen
class _LongInt:
    """An integer literal of more digits than the input limit: kept unconverted (Python's
    own conversion refuses past 4300 digits with a message naming neither leaf nor bound)
    until the leaf it was sent for is known."""

    digits: int


def _int_within_limit(text: str) -> int | _LongInt:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= LIMITS.int_digits else _LongInt(digits)


def _long_int(value: Any) -> _LongInt | None:
    """The first over-long integer anywhere in `value` (iterative, like `_all_text`)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _LongInt):
            return node
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _all_text(value: Any) -> bool:
    """Whether every string in `value` (at any depth, keys included) is encodable text;
    iterative, as the body's depth is bounded but values may be wide."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not _is_text(node):
                return False
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict) else node))
    return False


def _bad_body(message: str) -> DoorError:
    return DoorError(400, "bad_request", message,
                     'send {"source": "<who asks>", "leaves": {"<leaf>": <value>}} as JSON '
                     "(GET /openapi.json describes the leaves you may change)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_keys(registry: Registry, values: Mapping[str, Any], origins: Mapping[str, Origin] | None = None,
               environ: Mapping[str, str] | None = None) -> None:
    """Refuse, at start-up, a key no client could ever send byte for byte (which would
    otherwise fail every request, or answer 500), and one admin key that is also the read
    key, which would let every reader change the config: the one rule of
    `configbags.runtime.keys`, which lint applies too. The error names the leaf and its flag
    and variable, never the key."""
    if same_key(values):
        raise ConfigError(f"{SAME_KEY}; {SAME_KEY_FIX}")
    for name in KEY_LEAVES:
        key = values.get(name)
        if key is None or name not in registry.leaves:
            continue
        why = unusable(key)
        if why is not None:
            spec = registry.leaves[name]
            given = key_given(registry, spec, (origins or {}).get(name), environ or {})
            raise ConfigError(f"{spec.namespace}.{name} ({given}) {why}, so no request could ever match it; "
                              f"{UNUSABLE_FIX}")


def key_given(registry: Registry, spec: LeafSpec, origin: Origin | None, environ: Mapping[str, str]) -> str:
    """Where a refused key came from, as the operator set it (the config file and its key, the
    `_FILE` variable and the file it names, the flag or variable), so the one to fix is named;
    with no origin known, the leaf's flag and variable."""
    if origin is not None and origin.layer is Layer.CONFIG_FILE:
        return f"key {spec.name} of the config file {shown_text(origin.source)}"
    if origin is not None and origin.layer is Layer.ENV:
        variable = origin.source.removeprefix("$")
        if variable.endswith(FILE_SUFFIX) and variable not in registry.env_names:
            path = environ.get(variable)
            return f"the file {shown_text(path)} that ${variable} names" if path else f"the file ${variable} names"
        return shown_text(origin.source)
    if origin is not None and origin.layer is Layer.CLI and origin.source.startswith("-"):
        return shown_text(origin.source)
    return " / ".join([*spec.flags[:1], *([f"${spec.env}"] if spec.env else [])]) or spec.name


def check_client_variables(registry: Registry, values: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """Refuse, at start-up, a client's key variable (`CONFIGBAGS_API_KEY`, read by `fleet
    check` and `rollout`) set in the server's environment while the server's own key is
    unset: the pod spec meant to protect the server, which would start open. The error names
    the variable the server reads, never the value."""
    for variable, name in CLIENT_KEY_VARIABLES.items():
        if variable not in environ or values.get(name) is not None or name not in registry.leaves:
            continue
        spec = registry.leaves[name]
        given = " or ".join([*spec.flags[:1], *([f"${spec.env}"] if spec.env else [])]) or name
        raise ConfigError(f"${variable} is set in this server's environment, but it is the variable configbags' "
                          f"clients (fleet check, rollout) send their key from: the server never reads it, and its "
                          f"own {spec.namespace}.{name} is not set, so it would start without that key; give the "
                          f"key to the server as {given} (and unset ${variable} here)")


def protection(values: Mapping[str, Any]) -> str:
    """What the door protects, for the start-up line."""
    api, admin = values.get(API_KEY_LEAF), values.get(ADMIN_KEY_LEAF)
    reads = "reads need the api key (or the admin key)" if api else "reads are OPEN to anyone (no --api-key)"
    writes = "changes need the admin key" if admin else "changes are disabled (no --admin-api-key)"
    return f"{reads}; {writes}"


def authorization(values: Sequence[str]) -> str | None:
    """The request's one `Authorization` header (its values, as the client sent them), or
    None; more than one is a 400: RFC 9110 allows one, and which of them counts is a guess
    a proxy in front may make differently (it checks the last, the door would take the first)."""
    if len(values) > 1:
        raise DoorError(400, "duplicate_authorization",
                        f"the request carries {len(values)} Authorization headers; one is allowed",
                        "send the key in one `Authorization: Bearer KEY` header")
    return values[0] if values else None


def query_refusal(method: str, path: str, query: bytes) -> DoorError | None:
    """The 400 of a request with a query string, or None: no route takes one, and one
    dropped without a word is a guess at what it meant (`PATCH /config?dry_run=true` was
    applied). Its parameters are named, escaped and cut (they are the client's text)."""
    if not query:
        return None
    names = list(dict.fromkeys(name for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)))
    shown = shown_text(", ".join(map(repr, names))) if names else "none that parse"
    applied = "; nothing was applied" if method == "PATCH" else ""
    return DoorError(400, "unknown_parameters",
                     f"{method} {shown_text(path)} takes no query string (parameters {shown}){applied}",
                     "send the request without `?...`: no route of the door takes query parameters (a PATCH's "
                     "body says all there is, and there is no dry run; GET /openapi.json describes it)")


def check_body_encoding(codings: Sequence[str], content_types: Sequence[str]) -> None:
    """Refuse (415) a PATCH body the door would not read as it was sent: one under a content
    coding other than identity (the door decodes none: a compressed body would be "not valid
    JSON", a mislabelled plain one applied), or labelled with a charset other than UTF-8
    (the body is read as UTF-8 whatever the label says; a BOM is refused as invalid JSON)."""
    coded = [c for value in codings for c in (t.strip().lower() for t in value.split(",")) if c != "identity"]
    if coded:
        raise DoorError(415, "unsupported_encoding",
                        f"the body's Content-Encoding {shown_text(', '.join(map(repr, coded)))} is not decoded "
                        f"here; nothing was applied",
                        "send the body uncompressed (Content-Encoding identity, or none)")
    for value in content_types:
        charsets = _charsets(value)
        if len(charsets) > 1:  # which one counts is a guess a proxy may make differently (it reads the last)
            raise DoorError(400, "duplicate_charset",
                            f"the body's Content-Type gives charset {len(charsets)} times "
                            f"({shown_text(', '.join(map(repr, charsets)))}); one is allowed; nothing was applied",
                            "send UTF-8 JSON, labelled `Content-Type: application/json` (or one charset=utf-8)")
        if charsets and charsets[0].lower() != "utf-8":
            raise DoorError(415, "unsupported_encoding",
                            f"the body's charset {shown_text(repr(charsets[0]))} is not read here (the body is "
                            f"UTF-8 JSON); nothing was applied",
                            "send UTF-8 JSON, labelled `Content-Type: application/json` (or charset=utf-8)")


# One parameter of a media type (RFC 9110 §5.6.6): `; name=token` or `; name="quoted"`, whose
# quoted string may hold `;` and `\"` (an unclosed one runs to the end of the value).
_MEDIA_PARAMETER = re.compile(r';\s*([^\s;=]*)\s*(?:=\s*("(?:[^"\\]|\\.)*"?|[^;]*))?')


def _charsets(content_type: str) -> list[str]:
    """Every `charset` parameter of a Content-Type value (any case), unquoted, in order."""
    out = []
    for match in _MEDIA_PARAMETER.finditer(content_type):
        name, value = match.group(1), (match.group(2) or "").strip()
        if name.lower() != "charset":
            continue
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1] if len(value) > 1 and value.endswith('"') else value[1:])
        out.append(value)
    return out


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _matches(given: str, expected: str) -> bool:
    # constant time, so response timing does not reveal how much of a guess was right
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


class Door:
    """The operator API over one process context, and over every rank when `ranks` is
    given (then every call that touches ranks runs on the caller's single rank thread)."""

    def __init__(self, context: Context[Any], ranks: RankGroup | None = None) -> None:
        self.context = context
        self.ranks = ranks
        registry = context.registry
        if registry.tests_only(OPERATOR):
            # acting_as would refuse every PATCH while the OpenAPI document and the start
            # line list every leaf as writable (the generator refuses such a schema)
            raise ConfigError(f"role {OPERATOR!r} has `write_any: true` in roles.yaml, which is for the test role only: "
                              f"the door would refuse every change; remove it and regenerate (configbags gen), and name "
                              f"{OPERATOR} in the `writers:` of the leaves it may change")
        shadowed = sorted(CONFIG_ROUTES.intersection(registry.leaves))
        if shadowed:  # (the generator refuses such a name)
            raise ConfigError(f"leaf {shadowed[0]!r} is named like the door's route GET /config/{shadowed[0]}, which "
                              f"would shadow its explain; rename the leaf in the schema and regenerate (configbags gen)")
        self.writable: tuple[LeafSpec, ...] = registry.writable_by(OPERATOR) if OPERATOR in registry.roles else ()
        self.secrets = secret_leaves(registry)
        # this server, whatever address reached it: `fleet check` counts a server listed twice
        # (its pod address and a Service's, localhost and 127.0.0.1) once
        self.instance = token_hex(8)
        check_keys(registry, context.state.values)
        self._lock = threading.Lock()  # one change at a time: an epoch read after it is its own

    def consistent(self, read: Callable[[], T]) -> T:
        """`read()` of one State: read again if a change committed meanwhile. A read off the
        rank thread never waits on the lock, which a change holds through its collective (as
        long as a store that stops answering holds that). Bounded: changes committing through
        every one of a few reads in a row give a 503 to retry, never a spin."""
        for _ in range(_CONSISTENT_TRIES):
            state = self.context.state
            value = read()
            if self.context.state is state:
                return value
        raise DoorError(503, "config_changing",
                        f"the config changed during each of {_CONSISTENT_TRIES} reads in a row",
                        "retry the request: changes are committing faster than it could be read")

    # -- auth ------------------------------------------------------------------------
    def _key(self, leaf: str) -> str | None:
        value = self.context.state.values.get(leaf)
        return value if isinstance(value, str) and value else None

    def _key_named(self, leaf: str) -> str:
        """The key a request needs, by its leaf (`the api key (serving.api_key)`): the flag is
        one of its doors, and the server may have been given it by a file or a variable."""
        spec = self.context.registry.leaves.get(leaf)
        kind = "admin key" if leaf == ADMIN_KEY_LEAF else "api key"
        return f"the {kind} ({spec.namespace}.{leaf})" if spec is not None else f"the {kind}"

    def authorize(self, header: str | None, *, admin: bool) -> None:
        """Raise a 401/403 DoorError unless the `Authorization: Bearer` header carries the
        key this request needs: the admin key for changes; for reads the api key when one
        is set (the admin key also reads). Keys are never echoed."""
        api_key, admin_key = self._key(API_KEY_LEAF), self._key(ADMIN_KEY_LEAF)
        if admin and admin_key is None:
            raise DoorError(403, "changes_disabled", "config changes over HTTP are disabled: no admin key is set",
                            "start the server with --admin-api-key KEY and send it as `Authorization: Bearer KEY`")
        wanted = [k for k in ((admin_key,) if admin else (api_key, admin_key)) if k is not None]
        if not wanted or (not admin and api_key is None):
            return
        given = _bearer(header)
        what = self._key_named(ADMIN_KEY_LEAF if admin else API_KEY_LEAF)
        if given is None:
            raise DoorError(401, "missing_key", f"this request needs {what}",
                            "send it as the header `Authorization: Bearer KEY`")
        # compare with every candidate (no early exit), so timing says nothing either
        matched = [_matches(given, k) for k in wanted]
        if not any(matched):
            raise DoorError(401, "bad_key", f"the key sent is not {what}",
                            "send the key the server was started with as `Authorization: Bearer KEY`")

    # -- reads ------------------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """server_info() plus epoch, seal, config hash and each rank's epoch and hash,
        secrets redacted. In a degraded group (a rank left) the values are rank 0's, each
        gone rank is shown with why it left, and `degraded` says so."""
        ctx = self.context
        ranks = self.rank_states()
        with self._lock:
            info = ctx.server_info()
            info["epoch"] = ctx.epoch
            info["sealed"] = ctx.sealed
            info["config_hash"] = ctx.config_hash()
        info["instance"] = self.instance
        info["ranks"] = ranks
        left = {r["rank"]: r["left"] for r in ranks if "left" in r}
        if left:
            info["degraded"] = degraded(left)
        return redact(info, self.secrets)

    def rank_states(self) -> list[dict[str, Any]]:
        own = {"rank": 0, "epoch": self.context.epoch, "config_hash": self.context.config_hash()}
        if self.ranks is None:
            return [own]
        gone = self.ranks.gone()
        if gone:
            # no collective can include a rank that left: rank 0 answers for itself
            return [own, *({"rank": r, "left": gone[r]} if r in gone else
                           {"rank": r, "unchecked": "not asked: the group is degraded"}
                           for r in range(1, self.ranks.world_size))]
        try:
            gathered = self.ranks.check()
        except DistributedConfigError as exc:
            raise self._rank_error(exc) from None
        return [{"rank": r, "config_hash": h, "epoch": e} for r, (h, e, _) in enumerate(gathered)]

    def explain(self, leaf: str) -> dict[str, Any]:
        """One leaf: value, where it comes from, policy, owner, whether the operator may
        change it, its capacity and its history; 503 while a rank is stalled or diverged,
        and marked `degraded` (rank 0's value) once a rank left."""
        gone = self.group()
        ctx = self.context
        registry = ctx.registry
        try:
            info = ctx.explain(leaf)
        except UnknownLeafError:
            raise DoorError(400, "unknown_leaf", f"{leaf!r} is not a config leaf{closest(leaf, ctx.state.values)}",
                            # never a path on the server's disk: the client is not on it
                            "name a leaf of the config (GET /server_info lists them, with their values)",
                            leaf=leaf) from None
        spec = registry.leaves.get(leaf)
        # the layer and source are the context's (an override's is `runtime` or `load_time`)
        info.setdefault("value", info["resolved"])
        info["operator_writable"] = spec in self.writable
        info["writers"] = [spec.owner, *spec.writers] if spec else []
        if spec is not None and spec.capacity is not None:
            # gen refuses a secret capacity; were one there, its value still never shows
            info["capacity"] = {"leaf": spec.capacity,
                                "value": registry.shown(spec.capacity, ctx.state.values[spec.capacity])}
        else:
            info["capacity"] = None
        if gone:
            info["degraded"] = degraded(gone)
        return redact(info, self.secrets)

    def group(self) -> dict[int, str]:
        """Where the rank group stands, for every read: raises the 503 of a stalled rank or
        of one whose config diverged (no read may present rank 0's config as the group's
        then); returns the ranks that left, each with why (reads are then served from rank
        0's config, marked degraded); {} when every rank is up and agrees."""
        if self.ranks is None:
            return {}
        from configbags.serve.storehost import StoreStalledError

        store = self.ranks.store_stalled()  # first: it asks the store nothing (gone() waits on its lock)
        if store is not None:
            raise store_stalled(store)
        try:
            return self._group()
        except StoreStalledError as exc:  # a call to the store that did not come back in time
            raise store_stalled(str(exc)) from None

    def _group(self) -> dict[int, str]:
        assert self.ranks is not None
        gone = self.ranks.gone()
        if gone:
            return gone
        stalled = self.ranks.stalled()
        if stalled:
            raise DoorError(503, "rank_stalled",
                            "; ".join(f"rank {r} {why}" for r, why in stalled.items()),
                            "wait: a rank that answers again catches up by itself, and one still "
                            "stalled for three rank timeouts leaves the group; or restart the "
                            "server. Config reads and changes are refused meanwhile",
                            ranks=tuple(stalled), extra={"status": "stalled"})
        diverged = self.ranks.diverged()
        if diverged:
            raise DoorError(503, "rank_diverged",
                            "config diverged on " + "; ".join(f"rank {r}: {why}" for r, why in diverged.items()),
                            "restart the server: its ranks no longer hold one config (the server log "
                            "says since when)", ranks=tuple(diverged), extra={"status": "diverged"})
        return {}

    def health(self) -> dict[str, Any]:
        """200 only while every rank is up, answering and holding the same config: a rank
        that left (exited, or ended after a long stall) makes the group degraded, one alive
        but silent (stopped, hung) is stalled, one holding another config is diverged; each
        is named in a 503."""
        gone = self.group()
        if gone:
            raise DoorError(503, "rank_left", degraded_message(gone),
                            "restart the server to bring the group back; until then reads are served "
                            "from rank 0's config and changes are refused", ranks=tuple(gone),
                            extra={"status": "degraded", "left": {str(r): why for r, why in gone.items()}})
        return {"status": "ok", "epoch": self.context.epoch,
                "ranks": self.ranks.world_size if self.ranks else 1}

    # -- changes ------------------------------------------------------------------------
    def patch(self, source: str, leaves: Mapping[str, Any], ticket: Ticket | None = None) -> dict[str, Any]:
        """Apply `leaves` through the context as the operator, on every rank, all or none
        (none if `ticket` is abandoned before the commit). Returns the epoch after the
        change and the log entries (none if nothing changed)."""
        source = f"{SOURCE_PREFIX}{source}"
        unknown = [name for name in leaves if name not in self.context.registry.leaves
                   and name not in self.context.registry.derived]
        if unknown:
            name = unknown[0]
            raise DoorError(400, "unknown_leaf",
                            f"{name!r} is not a config leaf{closest(name, self.context.registry.leaves)}",
                            self._writable_hint(), leaf=name)
        self._check_key_change(leaves)
        try:
            with self._lock:
                entries = self._apply(source, dict(leaves), ticket)
                epoch = entries[0].epoch if entries else self.context.epoch
        except ConfigError as exc:
            raise self._refusal(exc, leaves) from None
        return {"epoch": epoch, "entries": [redact({"overrides": [e.as_dict()]}, self.secrets)["overrides"][0]
                                            for e in entries]}

    def _check_key_change(self, leaves: Mapping[str, Any]) -> None:
        """A schema may let the operator change a key over HTTP: the new key passes the
        start-up checks, and a PATCH never turns a key off (null), which would open the door
        it is sent through; a restart without the key does that deliberately."""
        for name in KEY_LEAVES:
            if name not in leaves:
                continue
            if leaves[name] is None:
                raise DoorError(400, "key_unset", f"{name} cannot be unset over HTTP: that would turn its "
                                "protection off", "restart the server without the key to turn it off", leaf=name)
            current = {key: self.context.state.values.get(key) for key in KEY_LEAVES}
            try:
                check_keys(self.context.registry, {**current, **{k: leaves[k] for k in KEY_LEAVES if k in leaves}})
            except ConfigError as exc:
                raise DoorError(400, "unusable_key", str(exc), "send a key a client can send", leaf=name) from None

    def _apply(self, source: str, leaves: dict[str, Any], ticket: Ticket | None = None) -> tuple[OverrideEntry, ...]:
        if self.ranks is not None:
            return self.ranks.override(source, leaves, ticket)
        with self.context.acting_as(OPERATOR):
            return self.context.override(source, **leaves)

    def _writable_hint(self) -> str:
        names = ", ".join(s.name for s in self.writable) or "none"
        return f"the leaves an operator may change are: {names} (schema: `writers: [operator]`)"

    def _refusal(self, exc: ConfigError, leaves: Mapping[str, Any]) -> DoorError:
        message = str(exc)
        if isinstance(exc, DistributedConfigError):
            return self._rank_error(exc)
        status, code = next(((s, c) for cls, s, c in _STATUS if isinstance(exc, cls)), (400, "refused"))
        leaf = _named_leaf(message, leaves)
        # every context message ends with its fix after the last "; "
        fix = message.rpartition("; ")[2] if "; " in message else self._writable_hint()
        if code == "not_writable":
            fix = f"{fix}. {self._writable_hint()}"
        return DoorError(status, code, message, fix, leaf=leaf)

    def _rank_error(self, exc: DistributedConfigError) -> DoorError:
        from configbags.serve.storehost import StoreStalledError

        if isinstance(exc, StoreStalledError):
            return store_stalled(str(exc))
        gone = list(self.ranks.gone()) if self.ranks else []
        named = tuple(gone or getattr(exc, "ranks", ()) or _ranks_in(str(exc)))
        return DoorError(503, "rank_unreachable", str(exc),
                         "nothing was applied; restart the rank(s) named (or the server) and retry",
                         ranks=named)


def store_stalled(why: str) -> DoorError:
    """The 503 of a rendezvous store alive but not answering: nothing can reach the ranks."""
    return DoorError(503, "store_stalled", why if "nothing was applied" in why else
                     f"{why}; config reads and changes are refused meanwhile, nothing was applied",
                     "wait: the group answers again as soon as the store does; or restart the server",
                     extra={"status": "store_stalled"})


def degraded(left: Mapping[int, str]) -> dict[str, Any]:
    """The `degraded` field of a read served from rank 0 alone."""
    return {"ranks": sorted(left), "message": degraded_message(left)}


def degraded_message(left: Mapping[int, str]) -> str:
    return (f"the rank group is degraded: {'; '.join(f'rank {r} left ({why})' for r, why in left.items())}; "
            f"reads are served from rank 0's config, changes are refused until a restart")


def _named_leaf(message: str, leaves: Mapping[str, Any]) -> str | None:
    """The requested leaf a context message is about (messages name it as `ns.leaf`)."""
    for name in leaves:
        if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", message):
            return name
    return None


def _ranks_in(message: str) -> list[int]:
    """The rank numbers a DistributedConfigError message names (`rank(s) 1, 3 of 4`)."""
    found = re.search(r"rank\(s\) ([\d, ]+)", message) or re.search(r"rank (\d+)", message)
    return [int(r) for r in re.findall(r"\d+", found.group(1))] if found else []
