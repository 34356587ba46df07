"""`configbags rollout OLD NEW [--apply URL] [-- SERVER FLAGS]`: what it takes to go from
one config to another. Each changed leaf is sorted by its apply class (from its override
policy, `configbags.runtime.fleet.apply_class`) and by who may write it: `live` changes go
out as one PATCH (printed; `--apply URL` sends it, all or nothing, through the door);
`reload` (load_time) and `restart` (startup, or runtime but not writable by the operator)
changes are left to the orchestrator, each with its reason.

OLD and NEW are config files (YAML/JSON, as `--config` takes them, built with the server
flags after `--`, which win as they do on a server), readbacks (a saved
`GET /server_info` answer) or a server's URL (its readback, read now). A readback counts
each leaf at its current value: the operator's record with the override log applied.
Secrets are compared only where both sides show them (config files) and are never
printed."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx

from configbags.fleet.replies import (
    MAX_TIMEOUT_S,
    NoAnswer,
    check_url,
    exchange,
    http_failure,
    shown_url,
    timeout_seconds,
)
from configbags.packages import named_context
from configbags.runtime.cmdline import UsageErrors, print_stderr
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, InputFileError, LeafValueError, RecordError
from configbags.runtime.fleet import ApplyClass, above_capacity, apply_class, route
from configbags.runtime.keys import CLIENT_ADMIN_KEY_VAR, CLIENT_API_KEY_VAR, client_key_problem
from configbags.runtime.leaftypes import (
    Policy,
    closest,
    is_text,
    jsonable,
    same_value,
    short_repr,
    shown_text,
)
from configbags.runtime.record import (
    CONFIG_LOSS,
    DumpInput,
    check_dump_apart,
    check_value,
    dump_path_of,
    model_inputs,
    parse_cli_words,
    record_parser,
    secret_file_inputs,
)
from configbags.runtime.registry import REDACTED, Registry
from configbags.runtime.yamlsafe import json_named, load_json, read_text_limited
from configbags.serve.door import DoorError, check_keys, is_secret, parse_patch, source_problem

READ_KEY_ENV, ADMIN_KEY_ENV = CLIENT_API_KEY_VAR, CLIENT_ADMIN_KEY_VAR
EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_ROLE = "launcher"  # the role a config file is published as (serve's --role default)
MODEL_PATH_LEAF = "model_path"  # the leaf whose folder's config.json the model loads from (as serve's)
DOOR_TEXT_CHARS = 4000  # the most of a refusal's message or fix shown (a door's own are far shorter)


@attrs.frozen
class Change:
    leaf: str
    old: Any
    new: Any
    apply: ApplyClass  # the leaf's class, from its policy
    route: str  # live | reload | restart: how this change can be applied by an operator
    why: str
    secret: bool = False

    def as_dict(self) -> dict[str, Any]:
        shown = (lambda v: REDACTED if v is not None else None) if self.secret else (lambda v: v)
        return {"leaf": self.leaf, "old": shown(self.old), "new": shown(self.new), "apply_class": self.apply.value,
                "route": self.route, "why": self.why}


@attrs.frozen
class Plan:
    changes: tuple[Change, ...]
    unknown: tuple[str, ...] = ()  # secret leaves a readback hides: not compared

    def part(self, name: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.route == name)

    def patch_body(self, source: str) -> dict[str, Any] | None:
        live = self.part("live")
        return {"source": source, "leaves": {c.leaf: c.new for c in live}} if live else None


def classify(registry: Registry, leaf: str, old: Any, new: Any) -> Change:
    """One change, with its class and the route an operator has to it (`route`)."""
    spec = registry.leaves[leaf]
    klass, why = route(registry, leaf)
    return Change(leaf, old, new, apply_class(spec.policy), klass.value, why, spec.secret)


def _over_capacity(registry: Registry, change: Change, running: Mapping[str, Any]) -> Change:
    """A live change the door would refuse (409) because the new value is above its
    capacity on the running server (a value sized at publish): a restart applies it."""
    why = above_capacity(registry, change.leaf, change.new, running) if change.route == "live" else None
    return change if why is None else attrs.evolve(change, route="restart", why=why)


def plan(registry: Registry, old: Mapping[str, Any], new: Mapping[str, Any],
         running: Mapping[str, Any] | None = None) -> Plan:
    """The changes from `old` to `new`; `running`, the old side's resolved values (derived
    ones too), bounds the live part as the door's capacity check does."""
    changes, unknown = [], []
    for leaf in registry.leaves:
        a, b = old.get(leaf), new.get(leaf)
        if registry.leaves[leaf].secret and REDACTED in (a, b):
            unknown.append(leaf)  # a readback hides it: equal or not, nobody can tell
            continue
        if not same_value(a, b):  # as the config hash tells them apart: `1`, `1.0` and `true` differ
            changes.append(classify(registry, leaf, a, b))
    # the door bounds each leaf of a PATCH by its capacity's value in the same PATCH, else the running one
    bounds = {**(running or {}), **{c.leaf: c.new for c in changes if c.route == "live"}}
    changes = [_over_capacity(registry, c, bounds) for c in changes]
    order = {"live": 0, "reload": 1, "restart": 2}
    return Plan(tuple(sorted(changes, key=lambda c: order[c.route])), tuple(unknown))


# -- reading a side --------------------------------------------------------------------------
@attrs.frozen
class SideValues:
    values: dict[str, Any]  # each leaf at its value now
    resolved: dict[str, Any]  # every leaf and derived value as the server resolves them


READBACK_FIX = "save GET /server_info of a running configbags serve door again (a readback is its answer, unedited)"
COMPLETE = ("a door's readback holds every leaf of its schema in `record` and `resolved`, and every derived value "
            "in `resolved`; give one of this schema "
            "(a server of another schema is planned with its own package, --package)")


def readback_side(registry: Registry, readback: Mapping[str, Any], where: str,
                  error: type[ConfigError] = InputFileError) -> SideValues:
    """A readback's leaves at their values now (the record, then each override in order)
    and its resolved values. A readback is JSON anyone can edit (or another server's
    answer), so its shape is checked and every value of a leaf by the server's own check
    (`record.check_value`: type, choices, range, text): a value the door would refuse is
    never planned as live, and none reaches a comparison it would break (`error`, or a
    `RecordError` for a value, naming `where` and the JSON path). A door's readback lists
    every leaf (and every derived value in `resolved`), and logs overrides only of leaves an
    override can change: a leaf missing would be planned as null, a capacity missing as no
    bound, and a name no door knows would be dropped unseen."""
    shapes = (("record", dict, "an object of leaf values"), ("overrides", list, "a list of override entries"),
              ("resolved", dict, "an object of resolved values"))
    for key, kind, want in shapes:
        if not isinstance(readback.get(key, kind()), kind):
            raise error(f"{where}: `{key}` is a JSON {type(readback[key]).__name__}, not {want}; {READBACK_FIX}")
    record, resolved = readback.get("record", {}), readback["resolved"]
    for name in record:
        if name not in registry.leaves:
            raise error(f"{where}: record.{shown_text(name)}: not a leaf of this schema{closest(name, registry.leaves)}; "
                        f"{COMPLETE}; {READBACK_FIX}")
    _require_every_leaf(registry, record, "record", where, error)
    values = {name: _readback_value(registry, name, value, f"record.{name}", where) for name, value in record.items()}
    for at, entry in enumerate(readback.get("overrides", [])):
        leaf = entry.get("leaf") if isinstance(entry, dict) else None
        if not isinstance(leaf, str) or "new" not in entry:
            raise error(f"{where}: overrides[{at}] is no override entry (an object with the `leaf` it changed, by "
                        f"name, and its `new` value); {READBACK_FIX}")
        spec = registry.leaves.get(leaf)
        if spec is None:
            raise error(f"{where}: overrides[{at}].leaf '{shown_text(leaf)}': not a leaf of this schema"
                        f"{closest(leaf, registry.leaves)}, so no door logs an override of it; {READBACK_FIX}")
        if spec.policy is Policy.STARTUP:
            # the context refuses every override of a startup leaf (load_time ones are taken until seal)
            raise error(f"{where}: overrides[{at}].leaf {leaf!r}: a startup leaf, fixed at publish: no override "
                        f"ever changes it, so no door logs one; {READBACK_FIX}")
        values[leaf] = _readback_value(registry, leaf, entry["new"], f"overrides[{at}].new", where)
    for name in resolved:
        if name not in registry.leaves and name not in registry.derived:
            raise error(f"{where}: resolved.{shown_text(name)}: neither a leaf nor a derived value of this schema"
                        f"{closest(name, [*registry.leaves, *registry.derived])}; {COMPLETE}; {READBACK_FIX}")
    # a derived value missing would read as no bound (a capacity): a change the door refuses planned live
    _require_every_leaf(registry, resolved, "resolved", where, error, [*registry.leaves, *registry.derived])
    resolved = {name: _readback_value(registry, name, value, f"resolved.{name}", where)
                for name, value in resolved.items()}
    return SideValues(values, resolved)


def _require_every_leaf(registry: Registry, values: Mapping[str, Any], key: str, where: str,
                        error: type[ConfigError], names: Sequence[str] | None = None) -> None:
    missing = [name for name in (registry.leaves if names is None else names) if name not in values]
    if missing:
        more = f", and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise error(f"{where}: {key}.{missing[0]} (missing){more}: {COMPLETE}; {READBACK_FIX}")


def _readback_value(registry: Registry, name: str, value: Any, at: str, where: str) -> Any:
    """`value` of leaf or derived value `name` in its canonical JSON form, as the server
    checks it; a name this schema does not have is kept as is (plan never reads it)."""
    spec = registry.leaves.get(name)
    if spec is not None:
        if is_secret(spec) and value == REDACTED:
            return value  # the door hid it: plan lists it as not compared
        try:
            return jsonable(check_value(spec, value, f"{where}: {at}"))
        except RecordError as exc:
            raise RecordError(f"{exc}; the server refuses such a value; {READBACK_FIX}") from None
    derived = registry.derived.get(name)
    if derived is not None:
        try:
            return jsonable(derived.type.coerce(value))
        except LeafValueError as exc:
            raise RecordError(f"{where}: {at}: {derived.namespace}.{name} (derived): {exc}; {READBACK_FIX}") from None
    return value


def _said(body: Any) -> str:
    """What a refusal's body says (its `message`), escaped: it is the server's text."""
    message = body.get("message") if isinstance(body, dict) else None
    return f": {shown_text(message)}" if isinstance(message, str) and message else ""


def _status_hint(status: int) -> str:
    """What to do about a read answered `status`: only a 401 is about the read key."""
    if status == 401:
        return f" (give the read key with --api-key or ${READ_KEY_ENV})"
    if 300 <= status < 400:
        return " (a redirect, which rollout does not follow: give the URL of the configbags serve door itself)"
    return "; give the URL of a running configbags serve door"


def side_values(context: Context[Any], where: str, flags: Sequence[str], read_key: str | None,
                timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    return read_side(context, where, flags, read_key, timeout).values


def read_side(context: Context[Any], where: str, flags: Sequence[str], read_key: str | None,
              timeout: float = DEFAULT_TIMEOUT_S, role: str = DEFAULT_ROLE) -> SideValues:
    """A side: a server's readback (by URL or saved), or a config file built with `flags`
    and published as `role` (what the server would refuse at start is refused here)."""
    side = load_side(context, where, flags, read_key, timeout)
    return side if isinstance(side, SideValues) else published_side(context, side, role)


@attrs.frozen
class BuiltSide:
    """A config side's record, built as the server builds it and not yet published (its
    publish writes a --dump-config)."""

    path: Path
    record: Any


def load_side(context: Context[Any], where: str, flags: Sequence[str], read_key: str | None,
              timeout: float = DEFAULT_TIMEOUT_S) -> SideValues | BuiltSide:
    """A side read: a readback's values, or a config file's record built with `flags`."""
    if where.startswith(("http://", "https://")):
        headers = {"Authorization": f"Bearer {read_key}"} if read_key else {}
        shown = shown_url(where)
        try:
            answer = exchange("GET", where.rstrip("/") + "/server_info", what=f"{shown}: GET /server_info",
                              timeout=timeout, headers=headers)
        except httpx.HTTPError as exc:
            raise ConfigError(f"{shown}: cannot read /server_info: {http_failure(exc, where, [read_key])}") from None
        if answer.status != 200:
            raise ConfigError(f"{shown}: GET /server_info answered {answer.status}{_said(answer.body)}"
                              f"{_status_hint(answer.status)}")
        if answer.error is not None:
            raise answer.error
        readback = answer.body
        if not isinstance(readback, dict):
            raise ConfigError(f"{shown}: GET /server_info answered a JSON {type(readback).__name__}, not an object")
        if not isinstance(readback.get("resolved"), dict) or type(readback.get("epoch")) is not int:
            # any other server's 200 would plan every leaf against nothing
            raise ConfigError(f"{shown}: GET /server_info answered no configbags readback (no `resolved` values or "
                              f"`epoch`); give the URL of a configbags serve door")
        return readback_side(context.registry, readback, shown, ConfigError)
    path = Path(where)
    if "@" in where and not path.exists():
        # a mistyped URL (`http:/u:KEY@host`) is read as a file name: shown masked, as a URL is
        raise ConfigError(f"{shown_url(where)}: no such config file, and not an http(s) URL; give a config file "
                          f"or a server's base URL, e.g. http://10.0.0.7:30000")
    if json_named(path):
        try:
            data = load_json(read_text_limited(path))
        except (OSError, ConfigError) as exc:
            raise InputFileError(f"{path}: {exc}") from None
        if isinstance(data, dict) and "record" in data and "resolved" in data:
            if not isinstance(data["resolved"], dict) or not data["resolved"]:
                raise InputFileError(f"{path}: a saved readback with no resolved values; save GET /server_info of a "
                                  f"running server")
            return readback_side(context.registry, data, str(path))
    record_type = context.record_type
    if record_type is None:
        raise ConfigError("the package has no ServerArgs record type; regenerate it (configbags gen)")
    return BuiltSide(path, record_type.from_cli([*flags, "--config", str(path)], prog="configbags rollout"))


def published_side(context: Context[Any], side: BuiltSide, role: str = DEFAULT_ROLE) -> SideValues:
    """A config side's values: its record, and what publishing it as `role` resolves."""
    values: dict[str, Any] = jsonable(side.record.to_dict())
    check_keys(context.registry, values)  # a key no client could send: the server refuses it at start
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)  # publish logs what it resolves; the plan shows what matters
    try:
        with context.restoring():
            context.publish(side.record, role=role)
            resolved = dict(context.server_info()["resolved"])
    except ConfigError as exc:
        raise ConfigError(f"{side.path}: the server would refuse this config at start: {exc}") from None
    finally:
        logging.disable(before)
    return SideValues(values, resolved)


# -- output ---------------------------------------------------------------------------------
def render(result: Plan, source: str) -> str:
    if not result.changes:
        lines = ["rollout: no change"]
    else:
        counts = ", ".join(f"{len(result.part(r))} {r}" for r in ("live", "reload", "restart"))
        lines = [f"rollout: {len(result.changes)} change(s) ({counts})"]
    titles = {"live": "live, by PATCH /config (all or nothing):",
              "reload": "reload: the model must load again (restart the server, or reload the model):",
              "restart": "restart: a new server process:"}
    for name in ("live", "reload", "restart"):
        part = result.part(name)
        if not part:
            continue
        lines.append(titles[name])
        for c in part:
            d = c.as_dict()
            lines.append(f"  {c.leaf}: {json.dumps(d['old'])} -> {json.dumps(d['new'])}  ({c.why})")
        if name == "live":
            lines.append(f"  body: {json.dumps(result.patch_body(source))}")
    if result.unknown:
        lines.append(f"not compared (a readback shows secrets as {REDACTED}): {', '.join(result.unknown)}")
    return "\n".join(lines)


ENTRY_KEYS = frozenset({"epoch", "source", "leaf", "namespace", "old", "new", "wall_time"})  # OverrideEntry.as_dict


def patch_answer_problem(answer: Any, sent: Mapping[str, Any], secrets: Collection[str] = ()) -> str | None:
    """Why a PATCH's 200 `answer` is no door's answer to the leaves `sent`, or None: the
    door applies all or nothing and answers its epoch (a non-negative int) and one log
    entry (`OverrideEntry.as_dict`) per leaf it changed, at the value sent (a sent leaf
    already at that value logs none); a `secrets` leaf's values read as redacted."""
    if not isinstance(answer, dict) or type(answer.get("epoch")) is not int or not isinstance(answer.get("entries"), list):
        return "no `epoch` and `entries`"
    epoch, entries = answer["epoch"], answer["entries"]
    if epoch < 0:
        return f"`epoch` {epoch}, below 0"
    seen: set[str] = set()
    for at, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS or not isinstance(entry["leaf"], str):
            return f"entries[{at}] is no override entry (an object of {', '.join(sorted(ENTRY_KEYS))})"
        leaf = entry["leaf"]
        if leaf not in sent or leaf in seen:
            what = "twice" if leaf in seen else "a leaf that was not sent"
            return f"entries[{at}] names {what}, '{shown_text(leaf)}'"
        seen.add(leaf)
        if type(entry["epoch"]) is not int or entry["epoch"] != epoch:
            return f"entries[{at}].epoch is not the answer's epoch {epoch}"
        expected = REDACTED if leaf in secrets else sent[leaf]
        if entry["new"] != expected or isinstance(entry["new"], bool) != isinstance(expected, bool):
            return f"entries[{at}].new is not the value sent for {shown_text(leaf)}"
    return None


def apply(url: str, body: dict[str, Any], admin_key: str | None,
          timeout: float = DEFAULT_TIMEOUT_S, secrets: Collection[str] = ()) -> tuple[int, dict[str, Any]]:
    """PATCH the live part; (HTTP status, the door's JSON answer). NoAnswer past `timeout`;
    a ConfigError, before anything is sent, for a body the door's own parser refuses.
    `secrets`: the sent leaves that are secrets (the door's answer redacts their values)."""
    what = f"{shown_url(url)}: PATCH /config"
    check_url(url, what)  # the URL first, as `exchange` checks it
    try:
        # ASCII JSON, so a lone surrogate reaches the door's check, not the HTTP client's encoder
        parse_patch(json.dumps(body).encode("ascii"))
    except DoorError as exc:
        raise ConfigError(f"{what} not sent: the door would refuse the body ({exc.message}); {exc.fix}") from None
    headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
    reply = exchange("PATCH", url.rstrip("/") + "/config", what=what, timeout=timeout,
                     headers=headers, payload=body)
    if reply.status == 200:
        done = reply.body if reply.error is None else None
        why = patch_answer_problem(done, body["leaves"], secrets)
        if why is None and isinstance(done, dict):  # (a problem-free answer is an object)
            return 200, done
        # a 200 from anything but a configbags door says nothing of what applied
        return 0, {"error": NOT_A_DOOR, "message": f"the answer is no configbags PATCH answer ({why}): the URL is "
                   "not a configbags serve door, and nothing is known of what it did",
                   "fix": "give the URL of a configbags serve door"}
    if reply.error is None and is_door_refusal(reply.status, reply.body):
        return reply.status, reply.body
    # a proxy's 502, a crash's 500, any other server's answer: the PATCH may have been applied
    return reply.status, {"error": NOT_A_REFUSAL, "message": f"answered {reply.status}, but not as a configbags door "
                          f"refuses (an object with `error`, `message` and `fix`){_said(reply.body)}",
                          "fix": "give the URL of a configbags serve door"}


NOT_A_DOOR, NOT_A_REFUSAL = "not_a_door", "not_a_refusal"
UNKNOWN_OUTCOME = ("no_answer", NOT_A_DOOR, NOT_A_REFUSAL)  # the PATCH went out, and what it did is not known


def is_door_refusal(status: int, body: Any) -> bool:
    """Whether a PATCH answer is a configbags door's refusal (`DoorError.body`: a 4xx, or a
    503 when the rank group cannot take the change): the door refuses before it applies,
    all or nothing, so then and only then nothing was applied."""
    return ((400 <= status < 500 or status == 503) and isinstance(body, dict)
            and all(isinstance(body.get(key), str) for key in ("error", "message", "fix")))


def outcome(shown: str, status: int, answer: Mapping[str, Any]) -> tuple[int, str]:
    """The exit code and the line for `apply`'s (status, answer) from the server `shown`."""
    if answer.get("error") in UNKNOWN_OUTCOME:
        return EXIT_REFUSED, (f"apply to {shown}: {answer['message']}; the PATCH was sent, so it may or may not "
                              f"have applied (all or nothing). Fix: read GET /server_info (its overrides) to see, "
                              f"then run the rollout again")
    if status == 200:
        return EXIT_OK, (f"applied to {shown}: epoch {answer['epoch']}, {len(answer['entries'])} leaf/leaves "
                         f"changed; the reload and restart parts are left to the orchestrator")
    if status == 0:  # not sent: the server could not be reached
        return EXIT_REFUSED, f"apply to {shown} failed: {answer['message']}; nothing was applied"
    # the door's own words, escaped: any server can answer in this shape
    return EXIT_REFUSED, (f"apply to {shown} refused ({status} {shown_text(answer['error'])}): "
                          f"{shown_text(answer['message'], DOOR_TEXT_CHARS)}; nothing was applied. "
                          f"Fix: {shown_text(answer['fix'], DOOR_TEXT_CHARS)}")


def check_source(source: str) -> None:
    """Refuse a `--source` by the door's rule for a PATCH's source, before any request: the
    plan prints the body, which must be one a door could take."""
    if not is_text(source):
        raise ConfigError("--source holds bytes that are not UTF-8 (undecodable command-line bytes, read as "
                          "lone surrogates), which no request body can carry; give UTF-8 text")
    if (why := source_problem(source)) is not None:
        raise ConfigError(f"--source {short_repr(source)}: the door would refuse it: {why}")


SIDE_LOSS = "what it holds (the side this rollout plans from) would be lost to the other side's resolved config"


def check_dump_apart_from_inputs(context: Context[Any], sides: Sequence[tuple[str, str]], flags: Sequence[str],
                                 command: argparse.ArgumentParser | None = None) -> None:
    """Refuse a `--dump-config` among the server flags that is a file this rollout reads
    (OLD, NEW, a `--config`, a secret's `NAME_FILE`; a side's model config is
    check_dump_apart_from_models'), by `os.path.samefile`, before either side is built:
    each config side is published with the flags and writes the dump, so OLD's dump
    would replace NEW (or a saved readback) before NEW is read."""
    record_type = context.record_type
    if record_type is None or not flags:
        return
    # the first reading of the server flags: rollout's own flag among them is named as such
    namespace = parse_cli_words(record_parser(record_type.add_cli_args, "configbags rollout", command),
                                context.registry, flags)
    dump = getattr(namespace, "dump_config", None)
    if dump is None:
        return
    inputs = [DumpInput(f"the {what} side {where}", where, SIDE_LOSS) for where, what in sides
              if not where.startswith(("http://", "https://"))]
    configs = namespace.config
    inputs += [DumpInput(f"the --config file {config}", config, CONFIG_LOSS)
               for config in ([configs] if isinstance(configs, str) else configs or ())]
    check_dump_apart(dump, [*inputs, *secret_file_inputs(context.registry, os.environ)])


def check_dump_apart_from_models(sides: Sequence[tuple[SideValues | BuiltSide, str]]) -> None:
    """Refuse a --dump-config that is the model config of a config side's `model_path` (as
    serve refuses it; from a flag or the side's config file), once both sides are built and
    before either is published: the first side's publish would write the dump over the
    second's model."""
    built = [(side.record, what) for side, what in sides if isinstance(side, BuiltSide)]
    for record, _ in built:
        check_dump_apart(dump_path_of(record), [
            i for other, what in built for i in model_inputs(getattr(other, MODEL_PATH_LEAF, None), f"{what}'s model_path")
        ])


def _client_key(flag_value: str | None, flag: str, variable: str) -> tuple[str | None, str]:
    """A client key and where it came from: the flag, else the environment variable."""
    if flag_value is not None:
        return flag_value, flag
    return os.environ.get(variable), f"environment variable {variable}"


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    flags: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, flags = args_in[:cut], args_in[cut + 1:]
    parser = UsageErrors(
        prog="configbags rollout",
        description="List which changes from OLD to NEW can go live by PATCH and which need a reload or a "
                    "restart, and why; --apply sends the live part.",
        epilog="OLD and NEW: config files, saved GET /server_info readbacks (.json), or server URLs. "
               "Server flags after `--` build both config files, as on a server (e.g. -- --model-path M). "
               "Exit codes: 0 planned (and applied); 1 the door refused or could not be reached (nothing applied), "
               "or its answer leaves open whether the PATCH applied; 2 bad usage.")
    parser.add_argument("old", metavar="OLD")
    parser.add_argument("new", metavar="NEW")
    parser.add_argument("--package", default=None, help="generated config package (default: [tool.configbags])")
    parser.add_argument("--apply", metavar="URL", help="send the live part to this server's PATCH /config")
    parser.add_argument("--source", default="rollout", help="who asks, for the override log (default rollout)")
    parser.add_argument("--api-key", default=None,
                        help=f"read key for OLD/NEW given as URLs (default ${READ_KEY_ENV})")
    parser.add_argument("--admin-key", default=None,
                        help=f"admin key for --apply (default ${ADMIN_KEY_ENV})")
    parser.add_argument("--timeout", type=timeout_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"seconds for each server request and its whole answer (default "
                             f"{DEFAULT_TIMEOUT_S:g}, at most {MAX_TIMEOUT_S:g})")
    parser.add_argument("--role", default=DEFAULT_ROLE,
                        help=f"the role a config file is published as, as the server does (default {DEFAULT_ROLE})")
    parser.add_argument("--json", action="store_true", help="print the plan (and the door's answer) as JSON")
    args = parser.parse_args(args_in)
    read_key, read_from = _client_key(args.api_key, "--api-key", READ_KEY_ENV)
    admin_key, admin_from = _client_key(args.admin_key, "--admin-key", ADMIN_KEY_ENV)
    try:
        check_source(args.source)
        urls = [(w, what) for w, what in ((args.old, "OLD"), (args.new, "NEW")) if w.startswith(("http://", "https://"))]
        for where, what in urls:
            check_url(where, what, f"--api-key or ${READ_KEY_ENV}")
        if args.apply:
            check_url(args.apply, "--apply", f"--admin-key or ${ADMIN_KEY_ENV}")
        # every key that will be sent, by the server's own rule, before any request (never shown)
        for key, origin, sent in ((read_key, read_from, bool(urls)), (admin_key, admin_from, bool(args.apply))):
            if sent and key is not None and (why := client_key_problem(key, origin)) is not None:
                raise ConfigError(why)
        context = named_context(args.package)
        check_dump_apart_from_inputs(context, ((args.old, "OLD"), (args.new, "NEW")), flags, parser)
        loaded = [(load_side(context, where, flags, read_key, args.timeout), what)
                  for where, what in ((args.old, "OLD"), (args.new, "NEW"))]
        check_dump_apart_from_models(loaded)
        old, new = (side if isinstance(side, SideValues) else published_side(context, side, args.role)
                    for side, _ in loaded)
    except ConfigError as exc:
        print_stderr(f"configbags rollout: {exc}")
        return EXIT_USAGE
    result = plan(context.registry, old.values, new.values, old.resolved)
    body = result.patch_body(args.source)
    out: dict[str, Any] = {"changes": [c.as_dict() for c in result.changes], "patch": body,
                           "not_compared": list(result.unknown)}
    code = EXIT_OK
    text = render(result, args.source)
    if args.apply:
        if body is None:
            text += f"\napply: nothing live to send to {shown_url(args.apply)}"
            out["applied"] = None
        else:
            try:
                status, answer = apply(args.apply, body, admin_key, args.timeout,
                                       {c.leaf for c in result.part("live") if c.secret})
            except httpx.ConnectError as exc:  # no connection, so no request went out
                status, answer = 0, {"error": "unreachable", "message": http_failure(exc, args.apply, [admin_key])}
            except httpx.HTTPError as exc:  # the connection broke after the PATCH may have gone out
                status, answer = 0, {"error": "no_answer", "message": http_failure(exc, args.apply, [admin_key])}
            except NoAnswer as exc:  # the PATCH went out: whether it applied, only the server can say
                status, answer = 0, {"error": "no_answer", "message": str(exc)}
            except ConfigError as exc:  # refused before sending (every part was checked above)
                print_stderr(f"configbags rollout: {exc}")
                return EXIT_USAGE
            out["applied"] = {"status": status, "answer": answer}
            code, said = outcome(shown_url(args.apply), status, answer)
            text += f"\n{said}"
    print(json.dumps(out, indent=2) if args.json else text)
    return code
