"""`configbags fleet check URL... | --servers FILE`: read every server's contracts (and,
with `--diff`, its whole readback) at once, then report every contract two servers that
must agree break, with both values and the layer and rule that set each.

Every server is read concurrently (httpx, async) with its own timeout, so a fleet check
takes about one round trip however many servers there are; a server that cannot be reached
or read is reported, never skipped, and a contract that could not be checked never passes.
Exit codes, for CI and pre-traffic gates: 0 every contract holds on every server; 1 a
contract is broken, a server of a role it binds does not declare it, it binds one server
read and no other to compare (`--allow-unchecked` names the deliberate ones), or a server's
declared role is not the one it reports; 3 nothing is broken among the servers read, but
some could not be read (retry); 2 bad usage."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx

from configbags.fleet.replies import (
    MAX_TIMEOUT_S,
    ReplyError,
    check_url,
    http_failure,
    read_json_async,
    shown_url,
    timeout_seconds,
)
from configbags.runtime.cmdline import UsageErrors, inert
from configbags.runtime.errors import ConfigError
from configbags.runtime.keys import CLIENT_API_KEY_VAR, client_key_problem
from configbags.runtime.leaftypes import closest
from configbags.runtime.project import project_path
from configbags.runtime.yamlsafe import load_yaml, read_text_limited

EXIT_OK, EXIT_BROKEN, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
KEY_ENV = CLIENT_API_KEY_VAR
DEFAULT_TIMEOUT_S = 2.0


@attrs.frozen
class Target:
    """One server to read: its URL, the role the fleet file gives it (None: trust the
    server's own), and the key its reads need."""

    url: str
    role: str | None = None
    key: str | None = attrs.field(default=None, repr=False)
    # where the URL was given and where the key came from (a flag, a variable, a servers
    # file's entry): for messages only, so one server listed twice is still one target
    where: str = attrs.field(default="the command line", eq=False)
    key_from: str = attrs.field(default="--api-key", eq=False)

    @property
    def shown(self) -> str:
        """The URL as messages print it (no credentials of its user part)."""
        return shown_url(self.url)


@attrs.frozen
class Reading:
    target: Target
    contracts: dict[str, Any] | None = None  # GET /config/contracts
    info: dict[str, Any] | None = None  # GET /server_info (with --diff)
    error: str | None = None

    @property
    def role(self) -> str | None:
        if self.target.role is not None:
            return self.target.role
        return None if self.contracts is None else self.contracts.get("role")

    @property
    def name(self) -> str:
        return f"{self.target.shown} ({self.role or 'no role'})"

    @property
    def instance(self) -> str | None:
        """The id the server's door made at start (`GET /config/contracts`): the same for
        every address that reaches it."""
        value = (self.contracts or {}).get("instance")
        return value if isinstance(value, str) and value else None


def address(url: str) -> str:
    """`url` as one spelling per address: scheme and host in lower case, the scheme's
    default port dropped, no user part, no trailing slash (`http://Host:80/` is
    `http://host`). Names that resolve alike (`localhost`, `127.0.0.1`) stay apart here;
    the server's instance id joins them."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return url
    port = "" if parsed.port in (None, {"http": 80, "https": 443}.get(parsed.scheme)) else f":{parsed.port}"
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path.rstrip('/')}"


def one_server(readings: Sequence[Reading]) -> list[list[Reading]]:
    """The readings grouped by server, in first-listed order: entries with the same
    address (`address`), or the same instance id and the same answer, are one server
    listed twice. (An id alone does not join: a server claiming another's id must not
    take that server's place in the comparison.)"""
    groups: list[list[Reading]] = []
    seen: dict[str, int] = {}  # address, or instance id and answer -> its group
    for r in readings:
        keys = ["url " + address(r.target.url)]
        if r.instance:
            keys.append(f"instance {r.instance} {json.dumps(r.contracts, sort_keys=True)}")
        found = sorted({seen[k] for k in keys if k in seen})
        if not found:
            seen.update(dict.fromkeys(keys, len(groups)))
            groups.append([r])
            continue
        into = found[0]
        for other in found[1:]:  # this entry joins two groups: one server all along
            groups[into] += groups[other]
            groups[other] = []
            seen.update({k: into for k, g in seen.items() if g == other})
        groups[into].append(r)
        seen.update(dict.fromkeys(keys, into))
    return [g for g in groups if g]


def parse_targets(urls: Sequence[str], servers_file: Path | None, key: str | None,
                  key_from: str = "--api-key") -> list[Target]:
    """`URL` or `ROLE=URL` arguments, then the servers of a YAML/JSON file:
    `servers: [{url, role, key | key_env}]` (a key given by environment variable stays out
    of the file). Every URL and every key to be sent is checked here, before any request
    (`check_url`, `client_key_problem`): `key_from` says where `key` came from."""
    targets = []
    for n, arg in enumerate(urls, 1):
        role, sep, url = arg.partition("=")
        if ":" in role or "/" in role:  # an `=` inside the URL (a query), not ROLE=URL
            sep = ""
        targets.append(Target(url if sep else arg, role if sep else None, key, f"URL argument {n}", key_from))
    if servers_file is not None:
        try:
            data = load_yaml(read_text_limited(servers_file))
        except (OSError, ConfigError) as exc:
            raise ConfigError(f"{servers_file}: cannot read the servers file: {exc}") from None
        entries = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ConfigError(f"{servers_file}: expected `servers:` with a list of {{url, role, key_env}}")
        for i, entry in enumerate(entries):
            where = f"{servers_file}: servers[{i}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                raise ConfigError(f"{where} needs a `url:` string")
            unknown = sorted(set(entry) - {"url", "role", "key", "key_env"})
            if unknown:
                raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (use url, role, key or key_env)")
            entry_key: Any = entry.get("key")
            entry_from = f"{where} key"
            if "key_env" in entry:
                entry_key = os.environ.get(str(entry["key_env"]))
                entry_from = f"environment variable {entry['key_env']} ({where} key_env)"
                if entry_key is None:
                    raise ConfigError(f"{where}: environment variable {entry['key_env']} (key_env) is not set")
            entry_role = entry.get("role")
            targets.append(Target(entry["url"], None if entry_role is None else str(entry_role),
                                  key if entry_key is None else entry_key, where,
                                  key_from if entry_key is None else entry_from))
    for t in targets:
        check_url(t.url, t.where, f"--api-key, ${KEY_ENV} or key_env in a servers file")
        if t.key is not None and (why := client_key_problem(t.key, t.key_from)) is not None:
            raise ConfigError(f"{t.where} ({t.shown}): {why}")
    return targets


async def _get(client: httpx.AsyncClient, target: Target, path: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {target.key}"} if target.key else {}
    async with client.stream("GET", target.url.rstrip("/") + path, headers=headers) as response:
        try:
            body = await read_json_async(response, f"GET {path}")
        except ReplyError as exc:
            if response.status_code == 200:
                raise _Unreadable(f"{exc}; is this a configbags server?") from None
            body = None
    if response.status_code != 200:
        detail = body.get("message", "") if isinstance(body, dict) else ""
        hint = " (give its key: --api-key, CONFIGBAGS_API_KEY or key_env in the servers file)" \
            if response.status_code == 401 else ""
        raise _Unreadable(f"GET {path} answered {response.status_code}{': ' + str(detail) if detail else ''}{hint}")
    if not isinstance(body, dict):
        raise _Unreadable(f"GET {path} answered a JSON {type(body).__name__}, not an object")
    return body


class _Unreadable(Exception):
    pass


async def _read(client: httpx.AsyncClient, target: Target, timeout: float, diff: bool) -> Reading:
    try:
        paths = ["/config/contracts", *(["/server_info"] if diff else [])]
        # one deadline for the server (httpx bounds each phase of a request on its own)
        bodies = await asyncio.wait_for(asyncio.gather(*(_get(client, target, p) for p in paths)), timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        return Reading(target, error=f"no complete answer within {timeout:g} s (--timeout)")
    except httpx.HTTPError as exc:
        return Reading(target, error=f"cannot be reached: {http_failure(exc, target.url, [target.key])}")
    except _Unreadable as exc:
        return Reading(target, error=str(exc))
    wrong = not_a_door(bodies[0])
    if wrong is not None:
        return Reading(target, error=f"GET /config/contracts answered 200, but not as a configbags door does "
                                     f"({wrong}); is this URL a configbags server's (not a sidecar or proxy)?")
    wrong = not_door_info(bodies[1]) if diff else None
    if wrong is not None:
        return Reading(target, error=f"GET /server_info answered 200, but not as a configbags door does "
                                     f"({wrong}); is this URL a configbags server's (not a sidecar or proxy)?")
    return Reading(target, bodies[0], bodies[1] if diff else None)


# What a configbags door answers, as far as the check reads or prints it (runtime/fleet.py's
# contracts_readback, the context's server_info): each member's and each leaf's provenance,
# and the elements of every list, typed, so an answer of another shape is reported at the
# read, never a traceback where the comparison first touches the odd element.
_PROVENANCE: dict[str, Any] = {
    "type": "object", "required": ["layer", "source"],
    "properties": {"layer": {"type": "string"}, "source": {"type": "string"}, "rule": {"type": "string"}},
}
_CONTRACTS_SHAPE: dict[str, Any] = {
    "type": "object", "required": ["role", "schema_version", "contracts"],
    "properties": {
        "role": {"type": ["string", "null"]},
        "role_leaf": {"type": ["string", "null"]},
        "role_origin": {**_PROVENANCE, "type": ["object", "null"]},
        "schema_version": {"type": "string"},
        "instance": {"type": "string"},
        "contracts": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["roles", "fingerprint", "members"],
            "properties": {
                "roles": {"type": "array", "items": {"type": "string"}},
                "fingerprint": {"type": "string"},
                "help": {"type": "string"},
                "members": {"type": "object", "additionalProperties": {
                    **_PROVENANCE, "required": ["value", *_PROVENANCE["required"]]}},
            },
        }},
    },
}
_SERVER_INFO_SHAPE: dict[str, Any] = {
    "type": "object", "required": ["resolved", "layers"],
    "properties": {"resolved": {"type": "object"}, "layers": {"type": "object", "additionalProperties": _PROVENANCE}},
}
_KINDS = {"object": "an object", "array": "a list", "string": "a string", "null": "null"}
_KIND_OF = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}


def not_a_door(body: dict[str, Any]) -> str | None:
    """What makes `body` no contracts readback of a configbags door (None when it is one):
    every field the comparison reads, of its type, so an answer of something else at that
    URL (`{"ok": 1}`) is reported as such, never read as a door that declares nothing."""
    missing = [k for k in ("role", "schema_version", "contracts") if k not in body]
    if missing:  # a sidecar's or a proxy's answer: say so in one line, not by the first field
        return f"no {', '.join(repr(k) for k in missing)}"
    return _shape_problem(body, _CONTRACTS_SHAPE)


def not_door_info(body: dict[str, Any]) -> str | None:
    """What makes `body` no `/server_info` readback of a configbags door (None when it is
    one): `--diff` compares its `resolved` values and prints their `layers`."""
    return _shape_problem(body, _SERVER_INFO_SHAPE)


def _shape_problem(body: Any, shape: dict[str, Any]) -> str | None:
    """The first place where `body` is not of `shape`, as a JSON path and what is wrong
    there. Said in few words, never with the value (which may be a whole answer)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(shape).iter_errors(body))
    if error is None:
        return None
    where = "$" + "".join(f"[{step}]" if isinstance(step, int) else _path_key(step) for step in error.absolute_path)
    if error.validator == "required":
        absent = [k for k in error.validator_value if k not in error.instance]
        return f"{where} has no {', '.join(repr(k) for k in absent)}"
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"{where} is {_KIND_OF.get(type(error.instance), 'a value')}, not {' or '.join(_KINDS[t] for t in wanted)}"
    return f"{where}: not as the door answers ({error.validator})"


def _path_key(key: str) -> str:
    """One key of a JSON path: `.name`, or quoted where it is no plain name; a long key
    shortened, since it comes from the answer."""
    shown = key if len(key) <= 60 else key[:57] + "..."
    return f".{shown}" if shown.replace("_", "").replace("-", "").isalnum() and shown.isascii() else \
        f"[{json.dumps(shown)}]"


async def read_all(targets: Sequence[Target], *, timeout: float, diff: bool = False) -> list[Reading]:
    """Every target's readings, concurrently, in the targets' order."""
    for t in targets:  # for library callers (the CLI refused them before): nothing is sent
        check_url(t.url, t.where)
    limits = httpx.Limits(max_connections=max(len(targets), 1) * 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), limits=limits) as client:
        return list(await asyncio.gather(*(_read(client, t, timeout, diff) for t in targets)))


# -- comparing ------------------------------------------------------------------------------
@attrs.frozen
class Side:
    """One value of a member on some servers, with how each got it."""

    value: Any
    servers: tuple[tuple[str, dict[str, Any]], ...]  # (server name, provenance)


@attrs.frozen
class Finding:
    kind: str  # broken | definition | role | alone | unknown | unchecked | same | ok
    contract: str | None
    message: str
    members: dict[str, tuple[Side, ...]] = attrs.field(factory=dict)

    @property
    def fails(self) -> bool:
        return self.kind in ("broken", "definition", "role", "alone", "unknown")  # `same` is a note: the server counts once

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "contract": self.contract, "message": self.message,
                "members": {m: [{"value": s.value, "servers": [{"server": n, **p} for n, p in s.servers]}
                                for s in sides] for m, sides in self.members.items()}}


def _undeclared(name: str, read: Sequence[tuple[Reading, dict[str, Any]]]) -> list[Finding]:
    """Servers of a role that another server's `name` binds, which do not declare `name`
    binding them (no such contract, or other roles: an older schema or another fork)."""
    binders = {role: r for r, body in read for role in body["contracts"].get(name, {}).get("roles", ())}
    out = []
    for r, body in read:
        declared = body.get("contracts", {}).get(name)
        if r.role in binders and (declared is None or r.role not in declared.get("roles", ())):
            how = "does not declare it" if declared is None else \
                f"declares it for roles {', '.join(declared.get('roles', ())) or '(none)'} only"
            out.append(Finding("definition", name, f"{name}: {r.name} {how}, but {binders[r.role].name} binds "
                               f"{r.role} servers by it (schema version {body.get('schema_version')}); upgrade "
                               f"the servers to one schema"))
    return out


def _unknown_facts(name: str, bound: Sequence[tuple[Reading, dict[str, Any]]],
                   allow_unchecked: Collection[str]) -> Finding | None:
    """A contract member that is a fact some server was published without (`None`): two
    missing values are not agreement, so the contract could not be checked, a failure
    unless `allow_unchecked` names it."""
    missing = sorted({m for _, c in bound for m, entry in c["members"].items()
                      if entry.get("layer") == "fact" and entry.get("value") is None})
    if not missing:
        return None
    without = [r.name for r, c in bound if any(c["members"].get(m, {}).get("value") is None for m in missing)]
    facts = " and ".join(missing)
    return Finding("unchecked" if name in allow_unchecked else "unknown", name,
                   f"{name}: {facts} could not be compared: {', '.join(without)} "
                   f"{'was' if len(without) == 1 else 'were'} published without {'it' if len(missing) == 1 else 'them'} "
                   f"(a fact missing on both sides is not agreement); publish with the model's facts "
                   f"(configbags serve reads them from the config.json of a --model-path folder), or pass "
                   f"--allow-unchecked {name}")


def _verdict(name: str, bound: Sequence[tuple[Reading, dict[str, Any]]]) -> Finding:
    """`name` holds, or is broken with each member whose values differ. The members the
    servers answered decide, compared as the fingerprint encodes them (JSON, so `1`,
    `1.0` and `true` differ), never the fingerprints alone: a fingerprint is the server's
    own claim about those members, and one that contradicts them (forged, stale, a buggy
    fork's) must not pass a pair whose values differ, nor hide which member broke."""
    members: dict[str, tuple[Side, ...]] = {}
    for member in bound[0][1]["members"]:
        sides: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for r, c in bound:
            entry = c["members"].get(member, {})
            provenance = {k: v for k, v in entry.items() if k != "value"}
            sides.setdefault(json.dumps(entry.get("value"), sort_keys=True), []).append((r.name, provenance))
        if len(sides) > 1:
            members[member] = tuple(Side(json.loads(v), tuple(s)) for v, s in sides.items())
    counts = _role_counts([r for r, _ in bound])
    one_print = len({c["fingerprint"] for _, c in bound}) == 1
    if one_print and not members:
        return Finding("ok", name, f"{name}: holds on {len(bound)} servers ({counts})")
    if one_print:  # the members differ under one fingerprint: some server's does not match its members
        why = ("The servers answer one fingerprint for it, but the members they answer differ, so a fingerprint "
               "does not match its server's members (a stale or forged answer): the members decide.")
    elif not members:
        why = ("Every member read agrees, but the fingerprints differ, so a fingerprint does not match its "
               "server's members (a stale or forged answer).")
    else:
        why = ""
    text = " ".join(part for part in (bound[0][1].get("help", ""), why) if part)
    return Finding("broken", name, f"{name} is broken between {counts}: {text}", members)


def compare(readings: Sequence[Reading], allow_unchecked: Collection[str] = ()) -> list[Finding]:
    """Every contract, checked across the servers read whose role it binds, each server
    once however many entries name it (`one_server`). A contract that binds one server
    read, with none to compare it with, fails unless `allow_unchecked` names it."""
    findings = []
    for r in readings:
        body = r.contracts
        reported = None if body is None else body.get("role")
        if r.target.role is not None and reported is not None and r.target.role != reported:
            findings.append(Finding("role", None, f"{r.target.shown} is listed as {r.target.role} but reports "
                                    f"role {reported} ({_origin_text((body or {}).get('role_origin') or {})})"))
    distinct = []
    for group in one_server(readings):
        first = next((r for r in group if r.contracts is not None), group[0])
        distinct.append(first)
        if len(group) > 1:
            listed = ", ".join(r.target.shown for r in group)
            instances = {r.instance for r in group if r.instance}
            why = f"instance {first.instance}" if len(instances) == 1 and first.instance else "one address"
            findings.append(Finding("same", None, f"{listed} are one server ({why}): counted once, as "
                                    f"{first.target.shown}"))
    read = [(r, r.contracts) for r in distinct if r.contracts is not None]
    names = sorted({n for _, body in read for n in body.get("contracts", {})})
    for name in names:
        undeclared = _undeclared(name, read)
        if undeclared:
            findings += undeclared
            continue
        bound = [(r, body["contracts"][name]) for r, body in read
                 if name in body.get("contracts", {}) and r.role in body["contracts"][name]["roles"]]
        roles = sorted({role for _, body in read for role in body["contracts"].get(name, {}).get("roles", ())})
        if len(bound) == 1 and name not in allow_unchecked:
            findings.append(Finding("alone", name, f"{name}: it binds {bound[0][0].name}, but no other server "
                                    f"read is of roles {', '.join(roles)}, so nothing was compared; list the servers "
                                    f"it must agree with (ROLE=URL), or pass --allow-unchecked {name} where this "
                                    f"deployment has none"))
            continue
        if len(bound) < 2:
            findings.append(Finding("unchecked", name, f"{name}: {len(bound)} server(s) of roles "
                                    f"{', '.join(roles)} read, nothing to compare"))
            continue
        shapes = {(tuple(c["members"]), tuple(c["roles"])) for _, c in bound}
        if len(shapes) > 1:
            versions = sorted({str((r.contracts or {}).get("schema_version")) for r, _ in bound})
            findings.append(Finding("definition", name, f"{name}: the servers declare it differently "
                                    f"(schema versions {', '.join(versions)}); upgrade them to one schema"))
            continue
        unknown = _unknown_facts(name, bound, allow_unchecked)
        if unknown is not None:
            findings.append(unknown)
            continue
        findings.append(_verdict(name, bound))
    return findings


def role_diff(readings: Sequence[Reading]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """role -> leaf -> [{value, servers, layers}] for every resolved leaf that differs between
    servers of one role (values as the servers show them: secrets redacted)."""
    by_role: dict[str, list[Reading]] = {}
    for group in one_server(readings):
        r = next((g for g in group if g.info is not None), group[0])
        if r.info is not None:
            by_role.setdefault(r.role or "no role", []).append(r)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for role, group in sorted(by_role.items()):
        leaves = sorted({leaf for r in group for leaf in (r.info or {}).get("resolved", {})})
        for leaf in leaves:
            sides: dict[str, dict[str, Any]] = {}
            for r in group:
                info = r.info or {}
                value = info.get("resolved", {}).get(leaf)
                side = sides.setdefault(json.dumps(value, sort_keys=True), {"value": value, "servers": []})
                side["servers"].append({"server": r.target.shown, **(info.get("layers", {}).get(leaf) or {})})
            if len(sides) > 1:
                out.setdefault(role, {})[leaf] = list(sides.values())
    return out


def diff_servers(readings: Sequence[Reading]) -> dict[str, dict[str, list[str]]]:
    """role -> {read, not_read}: the servers (each once) whose `/server_info` `--diff`
    compared, and those it could not read; a server not read whose role nobody gave is under
    "role unknown", since it may be of any role."""
    out: dict[str, dict[str, list[str]]] = {}
    for group in one_server(readings):
        r = next((g for g in group if g.info is not None), group[0])
        role = r.role or ("no role" if r.contracts is not None else "role unknown")
        out.setdefault(role, {"read": [], "not_read": []})["read" if r.info is not None else "not_read"].append(
            r.target.shown)
    return dict(sorted(out.items()))


def _diff_lines(readings: Sequence[Reading], diff: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """The `--diff` report: per role, its differences or that its servers agree; a role
    with fewer than two servers read compared nothing, and says so, naming those not read."""
    lines = []
    for role, servers in diff_servers(readings).items():
        read, unread = servers["read"], servers["not_read"]
        not_read = f"not read: {', '.join(unread)} (see UNREACHABLE)"
        if role == "role unknown":
            lines.append(f"diff: {not_read}; of a role unknown, so in no comparison")
        elif len(read) < 2:
            lines.append(f"diff: the {role} servers were not compared: "
                         + (f"{len(read)} read ({', '.join(read) or 'none'}), {not_read}" if unread
                            else f"only one, {read[0]}, nothing to compare it with"))
        elif role not in diff:
            lines.append(f"diff: the {len(read)} {role} servers read agree on every leaf"
                         + (f"; {not_read}" if unread else ""))
        else:
            lines.append(f"diff between the {role} servers:" + (f" ({not_read})" if unread else ""))
            for leaf, values in diff[role].items():
                lines.append(f"  {leaf}:")
                for shown in values:
                    where = ", ".join(f"{s['server']} [{_origin_text(s)}]" for s in shown["servers"])
                    lines.append(f"    {json.dumps(shown['value'])}  on {where}")
    return lines


def _stray_roles(readings: Sequence[Reading]) -> list[str]:
    """A note for each server read whose role no contract of the servers read names (`null`,
    `"decode "`, another fork's): no contract checks it, which the findings alone would
    only show as some partner's UNCHECKED."""
    read = [next(r for r in g if r.contracts is not None) for g in one_server(readings)
            if any(r.contracts is not None for r in g)]
    named = sorted({role for r in read for c in (r.contracts or {})["contracts"].values() for role in c["roles"]})
    if not named:
        return []
    lines = []
    for r in read:
        if r.role not in named:
            leaf = (r.contracts or {}).get("role_leaf")
            said = "reports no role" if r.role is None else f"is of role {json.dumps(r.role)}"
            lines.append(f"NOTE {r.target.shown} {said}, which no contract of the servers read names (they name "
                         f"{', '.join(named)}), so no contract checks it; set its role"
                         + (f" (leaf {leaf})" if leaf else ""))
    return lines


def _role_counts(readings: Sequence[Reading]) -> str:
    counts: dict[str, int] = {}
    for r in readings:
        counts[r.role or "no role"] = counts.get(r.role or "no role", 0) + 1
    return ", ".join(f"{n} {role}" for role, n in sorted(counts.items()))


def _origin_text(p: dict[str, Any]) -> str:
    if not p:
        return "origin unknown"
    text = f"{p.get('layer', '?')}: {p.get('source', '?')}"
    return text if not p.get("rule") or p["rule"] in text else f"{text}, rule {p['rule']}"


def render(readings: Sequence[Reading], findings: Sequence[Finding],
           diff: dict[str, dict[str, list[dict[str, Any]]]] | None) -> str:
    distinct = len(one_server(readings))
    lines = [f"fleet check: {len(readings)} server(s), {sum(r.error is None for r in readings)} read"
             + (f", {distinct} distinct (see SAME)" if distinct < len(readings) else "")]
    for r in readings:
        if r.error is not None:
            lines.append(f"UNREACHABLE {r.target.shown}: {r.error}")
    lines += _stray_roles(readings)
    order = {"same": 0, "role": 1, "definition": 2, "broken": 3, "alone": 4, "unknown": 4, "unchecked": 5, "ok": 6}
    for f in sorted(findings, key=lambda f: order[f.kind]):
        tag = {"same": "SAME", "role": "ROLE", "definition": "BROKEN", "broken": "BROKEN", "alone": "UNCHECKED",
               "unknown": "UNCHECKED", "unchecked": "unchecked", "ok": "ok"}[f.kind]
        lines.append(f"{tag} {f.message}")
        for member, sides in f.members.items():
            lines.append(f"  {member}:")
            for side in sides:
                for name, provenance in side.servers:
                    lines.append(f"    {json.dumps(side.value)}  on {name}  [{_origin_text(provenance)}]")
    if diff is not None:
        lines += _diff_lines(readings, diff)
    return "\n".join(map(inert, lines))  # what the servers sent (a role, an origin, an error) forges no line


def exit_code(readings: Sequence[Reading], findings: Sequence[Finding]) -> int:
    if any(f.fails and f.kind != "alone" for f in findings):
        return EXIT_BROKEN
    if any(r.error is not None for r in readings):
        return EXIT_UNREACHABLE  # a contract left alone may have its partners among them: retry
    if any(f.fails for f in findings):
        return EXIT_BROKEN
    return EXIT_OK


def run(targets: Sequence[Target], *, timeout: float = DEFAULT_TIMEOUT_S, diff: bool = False,
        allow_unchecked: Collection[str] = ()
        ) -> tuple[list[Reading], list[Finding], dict[str, dict[str, list[dict[str, Any]]]] | None]:
    readings = asyncio.run(read_all(targets, timeout=timeout, diff=diff))
    return readings, compare(readings, allow_unchecked), role_diff(readings) if diff else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = UsageErrors(
        prog="configbags fleet check",
        description="Check that the servers of a deployment agree on the schema's contracts "
                    "(schema/contracts.yaml), reading every server at once.",
        epilog="Exit codes: 0 every contract holds; 1 a contract is broken or a role is not the one "
               "listed; 3 some server could not be read (nothing broken among the rest); 2 bad usage.")
    parser.add_argument("urls", nargs="*", metavar="URL", help="a server (http://host:port), or ROLE=URL "
                        "to say which role it must have")
    parser.add_argument("--servers", type=project_path, metavar="FILE",
                        help="YAML/JSON: servers: [{url: ..., role: ..., key_env: VAR}]")
    parser.add_argument("--api-key", default=None,
                        help=f"the servers' read key (default: ${KEY_ENV}); key/key_env in FILE wins")
    parser.add_argument("--timeout", type=timeout_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"seconds for each server's reads and their whole answers (default "
                             f"{DEFAULT_TIMEOUT_S:g}, at most {MAX_TIMEOUT_S:g})")
    parser.add_argument("--diff", action="store_true",
                        help="also show every leaf that differs between servers of the same role (redacted)")
    parser.add_argument("--allow-unchecked", action="append", default=[], metavar="CONTRACT",
                        help="pass although CONTRACT binds a single server read (a deployment with no partner "
                             "for it, e.g. one engine and no router); repeatable")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        key, key_from = (args.api_key, "--api-key") if args.api_key is not None else \
            (os.environ.get(KEY_ENV), f"environment variable {KEY_ENV}")
        targets = parse_targets(args.urls, args.servers, key, key_from)
    except ConfigError as exc:
        parser.error(str(exc))
    if not targets:
        parser.error("name at least one server (URL arguments or --servers FILE)")
    readings, findings, diff = run(targets, timeout=args.timeout, diff=args.diff,
                                   allow_unchecked=args.allow_unchecked)
    declared = sorted({name for r in readings if r.contracts is not None for name in r.contracts.get("contracts", {})})
    unknown = sorted(set(args.allow_unchecked) - set(declared))
    if unknown and any(r.contracts is not None for r in readings):
        # a typo there would leave the contract it meant UNCHECKED with no word of why
        parser.error(f"--allow-unchecked {unknown[0]}: no server read declares a contract of that name"
                     f"{closest(unknown[0], declared)}; they declare {', '.join(declared) or 'none'}")
    code = exit_code(readings, findings)
    if args.json:
        print(json.dumps({
            "exit_code": code,
            "servers": [{"url": r.target.shown, "role": r.role, "instance": r.instance, "error": r.error}
                        for r in readings],
            "findings": [f.as_dict() for f in findings],
            **({"diff": diff, "diff_servers": diff_servers(readings)} if diff is not None else {}),
        }, indent=2))
    else:
        print(render(readings, findings, diff))
    return code
