"""Generic machinery behind the generated `ServerArgs` record: operator input from a dict,
YAML/JSON config files (validated against the generated JSON Schema), environment
variables or the command line. Precedence, lowest first: schema defaults < preset <
config files (in the order given) < environment < flags given on the command line.

Beside each record (never in it: the record is frozen) the runtime keeps the origin of
every value the operator set (layer and spelling, `origins_of`); `publish` runs the hardware and model rules under those (see
`configbags.runtime.resolve`). Old spellings (`renamed_from`) and deprecated leaves warn
once per spelling; once the schema version reaches their `remove_in` they are errors."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import json
import logging
import re
import sys
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from configbags.runtime import nested
from configbags.runtime.errors import (
    LeafValueError,
    MissingLeafError,
    OutputFileError,
    RecordError,
    YamlError,
)
from configbags.runtime.leaftypes import (
    NONE_LIKE_SECRET,
    check_bounds,
    closest,
    float_from_text,
    int_from_text,
    is_text,
    jsonable,
    none_like,
    shown_text,
)
from configbags.runtime.registry import LeafSpec, Registry, secret_repr
from configbags.runtime.resolve import Layer, Origin, Shadowed
from configbags.runtime.spelling import flag_of, version_key

R = TypeVar("R")
log = logging.getLogger("configbags")

# Kubernetes injects these for every service in the namespace (`<SVC>_SERVICE_HOST`,
# `<SVC>_PORT_8000_TCP_ADDR`, ...); a service named like the engine must not trip the
# unknown-variable warning.
KUBERNETES_ENV = re.compile(r".*_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(ADDR|PORT|PROTO))?)?)$")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
RENAMED_DEST = "renamed:"  # argparse dest prefix of an old flag: renamed:<old name>

# Warnings already given in this process: a deprecation once per spelling, an unknown
# variable once per name, a config file's override once per message.
_warned: set[str] = set()


@attrs.frozen
class RecordInput:
    """What a record knows beyond its values: the origin of each operator-set value
    (sparse; a leaf not listed is at its schema default) and where to dump the resolved
    config at publish (`--dump-config`)."""

    origins: Mapping[str, Origin]
    dump_config: str | None = None


class JsonFlagError(argparse.ArgumentTypeError, ValueError):
    """A json flag's value that is not JSON within the limits: argparse prints its message;
    callers outside argparse catch it as the ValueError a `type=` function raises."""


def json_value(text: str) -> Any:
    """argparse `type=` for json leaves: JSON within the input limits, a key given twice
    refused. argparse prints an ArgumentTypeError's message after the flag (and exits 2);
    a plain ValueError would lose the reason."""
    from configbags.runtime.yamlsafe import load_json  # yaml only when a CLI is parsed

    try:
        return load_json(text)
    except YamlError as exc:
        raise JsonFlagError(f"invalid json value: {exc}") from None


json_value.__name__ = "json"


def refuse_none_like_secret(spec: LeafSpec, value: Any, source: str, *, null: bool = False) -> None:
    """A secret given as an empty or none-like text is refused at every door, also where a
    higher layer would shadow it (a flag over a config file's `api_key: none`). With
    `null`, a null value too: a config file's `api_key:` or `api_key: ~` (a template that
    rendered nothing) must not start a server whose key is off; a key is left off by
    leaving it out."""
    if spec.secret and (isinstance(value, str) or (null and value is None)) and none_like(value):
        flag = f" ({spec.flags[0]})" if spec.flags and spec.flags[0] != source else ""
        raise RecordError(f"{_spelled(source)}: {spec.namespace}.{spec.name}{flag} {NONE_LIKE_SECRET}")


def check_value(spec: LeafSpec, value: Any, source: str) -> Any:
    refuse_none_like_secret(spec, value, source)
    try:
        coerced = spec.type.coerce(value)
        check_bounds(coerced, choices=spec.choices, minimum=spec.minimum, maximum=spec.maximum)
        if spec.required and isinstance(coerced, str) and not coerced.strip():
            raise LeafValueError("it is required, and an empty text is no value; give one")
    except LeafValueError as exc:
        flag = f" ({spec.flags[0]})" if spec.flags else ""
        # A secret's value must not reach the message (LeafValueError quotes it).
        why = "the value is not valid for its type, choices or range" if spec.secret else str(exc)
        raise RecordError(f"{source}: {spec.namespace}.{spec.name}{flag}: {why}") from None
    return coerced


def leaf_converters(
    leaves: Mapping[str, LeafSpec],
) -> Callable[[type, list[attrs.Attribute[Any]]], list[attrs.Attribute[Any]]]:
    """The record class's `field_transformer`: each leaf field checks its value and stores
    the canonical form (lists as tuples, ints widened for float leaves) as attrs builds the
    record, so a frozen record is never changed once built; a secret's `repr()` is redacted."""

    def transform(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
        return [field.evolve(converter=_canonical(leaves[field.name], cls.__name__),
                             repr=secret_repr if leaves[field.name].secret else field.repr)
                if field.name in leaves else field for field in fields]

    return transform


def _canonical(spec: LeafSpec, source: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        return check_value(spec, value, source)

    return convert


# Each record's RecordInput, kept beside the record rather than forced into it: a frozen
# record is never changed after construction. Keyed by identity, not by value (two equal
# records may have different origins, and a record holding a json leaf is unhashable),
# and weakly: an entry goes when its record does.
_inputs: dict[int, tuple[weakref.ref[Any], RecordInput]] = {}


def attach(record: R, origins: Mapping[str, Origin], dump_config: str | None = None) -> R:
    """Record, beside `record`, where its operator-set values came from. TypeError for a
    record type that takes no weak reference (a slotted class without `__weakref__`)."""
    key = id(record)

    def forget(ref: weakref.ref[Any]) -> None:
        # the id may already name a newer record: drop only this record's own entry
        if _inputs.get(key, (None,))[0] is ref:
            _inputs.pop(key, None)

    _inputs[key] = (weakref.ref(record, forget), RecordInput(dict(origins), dump_config))
    return record


def input_of(record: Any) -> RecordInput | None:
    """What `record` knows beyond its values (origins, dump path); None for a record built
    in code, which has none recorded."""
    entry = _inputs.get(id(record))
    return entry[1] if entry is not None and entry[0]() is record else None


def origins_of(record: Any, leaves: Mapping[str, LeafSpec]) -> Mapping[str, Origin]:
    """The operator origins of `record`'s values. A record built in code
    (`ServerArgs(tp_size=8)`) has none recorded: a value that differs from the schema
    default counts as given on the command line."""
    given = input_of(record)
    if given is not None:
        return given.origins
    out = {}
    for name, spec in leaves.items():
        value = getattr(record, name)
        if value != spec.default and jsonable(value) != spec.default:
            out[name] = CODE_ORIGIN
    with contextlib.suppress(TypeError):  # a record type without weak references: infer each time
        attach(record, out)  # the record never changes: infer once
    return out


CODE_ORIGIN = Origin(Layer.CLI, "ServerArgs(...)")


def dump_path_of(record: Any) -> str | None:
    given = input_of(record)
    return given.dump_config if given is not None else None


# -- spellings and deprecations ---------------------------------------------------------

def removed(registry: Registry, remove_in: str | None) -> bool:
    """Whether a spelling deprecated until `remove_in` is gone in this schema version."""
    return remove_in is not None and version_key(registry.schema_version) >= version_key(remove_in)


def warn_once(spelling: str, message: str) -> None:
    if spelling not in _warned:
        _warned.add(spelling)
        log.warning("%s", message)


def leaf_for(registry: Registry, key: str, spelling: str, where: str, value: Any = None) -> str | None:
    """The leaf a key names (its own name or an old one), warning about deprecated
    spellings once and refusing removed ones; None when it names no leaf. A deprecated
    leaf given its schema default sets nothing (a full record dump holds every leaf), so it
    neither warns nor fails."""
    spec = registry.leaves.get(key)
    if spec is not None:
        dep = spec.deprecated
        if dep is not None and value != spec.default and jsonable(value) != spec.default:
            use = f"; use {_spelling_like(registry, dep.use, spelling)} instead" if dep.use else ""
            if removed(registry, dep.remove_in):
                raise RecordError(f"{where}: {spelling} was removed in {dep.remove_in} (deprecated since "
                                  f"{dep.since}){use}")
            until = f", removed in {dep.remove_in}" if dep.remove_in else ""
            warn_once(spelling, f"{where}: {spelling} is deprecated since {dep.since}{until}{use}")
        return key
    if key in registry.renamed:
        leaf, old = registry.renamed[key]
        new = _spelling_like(registry, leaf, spelling)
        if removed(registry, old.remove_in):
            raise RecordError(f"{where}: {spelling} was removed in {old.remove_in}; use {new} instead")
        since = f" since {old.since}" if old.since else ""
        until = f", removed in {old.remove_in}" if old.remove_in else ""
        warn_once(spelling, f"{where}: {spelling} is deprecated{since}{until}; use {new} instead")
        return leaf
    return None


def _spelling_like(registry: Registry, leaf: str, spelling: str) -> str:
    """The new leaf spelled the way the old one was (flag, env variable or key)."""
    spec = registry.leaves.get(leaf)
    if spec is None:
        return leaf
    if spelling.startswith("--") and spec.flags:
        return spec.flags[0]
    if spelling.startswith("$") and spec.env:
        return "$" + spec.env
    return leaf


# -- dicts and config files -------------------------------------------------------------

def _check_keys(data: Mapping[Any, Any], source: str) -> None:
    for k in data:
        if not isinstance(k, str):
            raise RecordError(f"{source}: key {k!r} is a {type(k).__name__}, not a leaf name; quote it")


def reference(schema_path: Path | None = None, cls: type | None = None) -> str:
    """The operator reference of the generated package (its CONFIG.md, beside the
    config-file schema and the record's module), as messages name it: relative to the
    working folder when inside it, so an engine's user reads `myengine/config/CONFIG.md`."""
    folder: Path | None = schema_path.parent if schema_path is not None else None
    if folder is None and cls is not None:
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        folder = Path(file).parent if file else None
    if folder is None:
        return "the generated package's CONFIG.md"
    docs = folder.resolve() / "CONFIG.md"
    try:
        return docs.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(docs)


def _canonical_keys(registry: Registry, data: Mapping[str, Any], source: str, docs: str = "",
                    lines: Callable[[], Mapping[str, int]] = dict) -> dict[str, Any]:
    """`data` keyed by leaf names. An old name and the current one of the same leaf (or two
    old ones) are refused as a key given twice would be: neither may silently win.
    `lines` gives each key's line, for that message only."""
    out: dict[str, Any] = {}
    keys: dict[str, str] = {}  # leaf -> the key that set it
    for key in data:
        named = key if key in registry.leaves or key not in registry.renamed else registry.renamed[key][0]
        if named in keys:
            at = lines()
            first, second = (f"{k!r}" + (f" (line {at[k]})" if k in at else "") for k in (keys[named], key))
            raise RecordError(
                f"{source}: keys {first} and {second} both set {registry.leaves[named].namespace}.{named} "
                f"(one is an old name of the other), as a key given twice would; keep one, spelled {named!r}"
            )
        keys[named] = key
    for key, value in data.items():
        leaf = leaf_for(registry, key, key, source, value)
        if leaf is None:
            raise RecordError(
                f"{source}: {key!r} is not a server leaf{closest(key, registry.leaves)}; see "
                f"{docs or reference()} for the leaves and their flags"
            )
        out[leaf] = value
    return out


def key_lines(path: Path) -> dict[str, int]:
    """The line of each top-level key of a config file (YAML or JSON), for messages; empty
    when the file no longer reads."""
    import yaml

    from configbags.runtime.yamlsafe import StrictLoader, read_text_limited

    try:
        node = yaml.compose(read_text_limited(path), Loader=StrictLoader)
    except (OSError, yaml.YAMLError, YamlError):
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def build_record(cls: type[R], registry: Registry, values: Mapping[str, Any], origins: Mapping[str, Origin],
                 source: str, dump_config: str | None = None) -> R:
    """Check `values` (leaf names), build the record and attach the origins."""
    leaves = registry.leaves
    missing = [n for n, s in leaves.items() if s.required and n not in values]
    if missing:
        spec = leaves[missing[0]]
        flag = spec.flags[0] if spec.flags else spec.name
        env = f", set ${spec.env}" if spec.env else ""
        raise MissingLeafError(f"{source}: {spec.name} is required: pass {flag}{env} or set {spec.name} in "
                               "--config FILE", spec.name)
    checked = {k: check_value(leaves[k], v, _where(origins.get(k), source)) for k, v in values.items()}
    if dump_config is not None:  # refused with the flags, not after publish installed the config
        from configbags.runtime.yamlsafe import check_output_path

        try:
            if dump_config.endswith(("/", "\\")):
                # Path() drops the slash: the dump would land in a file of the folder's name
                raise OutputFileError(f"--dump-config {dump_config}: cannot be written: it names a folder; give a "
                                      f"file name")
            check_output_path(Path(dump_config), "--dump-config")
        except OutputFileError as exc:
            raise RecordError(str(exc)) from None
    return attach(cls(**checked), origins, dump_config)


def _where(origin: Origin | None, fallback: str) -> str:
    return origin.source if origin is not None else fallback


def record_from_dict(cls: type[R], registry: Registry, data: Mapping[str, Any], source: str,
                     layer: Layer = Layer.CLI) -> R:
    _check_keys(data, source)
    values = _canonical_keys(registry, data, source, reference(cls=cls))
    origin = Origin(layer, source)
    return build_record(cls, registry, values, dict.fromkeys(values, origin), source)


def record_to_dict(record: Any, leaves: Mapping[str, LeafSpec]) -> dict[str, Any]:
    return {name: jsonable(getattr(record, name)) for name in leaves}


def load_config_file(path: str | Path, schema_path: Path) -> dict[str, Any]:
    """Read a YAML or JSON config file and validate it against the generated JSON Schema;
    an error names the file, the key and what to do."""
    import jsonschema

    from configbags.runtime.yamlsafe import load_file

    path = Path(path)
    try:
        data = load_file(path)
    except YamlError as exc:
        raise RecordError(f"{exc.at(path)}: cannot read config file: {exc.problem}") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read config file: {exc.strerror or exc}") from None
    if data is None:
        # blank, only comments, `null`: a template that rendered nothing, or a truncated
        # file, never "no settings" (a key it was to hold, the api key, would be unset)
        raise RecordError(f"{path}: the config file holds no settings (empty, only comments, or a null document); "
                          f"write {{}} to mean no settings")
    if not isinstance(data, dict):
        raise RecordError(f"{path}: a config file must hold a mapping of leaf names to values")
    schema = json.loads(schema_path.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    _check_keys(data, str(path))
    if errors:
        error = errors[0]
        if error.validator == "additionalProperties":
            known = schema["properties"]
            extra = sorted(set(data) - set(known))
            key = extra[0]
            raise RecordError(
                f"{path}: unknown key {key!r}{closest(key, known)}; config files take leaf names "
                f"(see {reference(schema_path)})"
            )
        key = ".".join(map(str, error.absolute_path)) or "<file>"
        # The JSON Schema message quotes the value; a secret's must not be printed.
        secret = error.absolute_path and str(error.absolute_path[0]) in schema.get("x-secrets", ())
        message = "the value is not valid for its type, choices or range" if secret else error.message
        raise RecordError(f"{path}: key {key}: {message}")
    return dict(data)


def merge_config_files(
    registry: Registry, paths: Sequence[str | Path], load: Callable[[Path], Mapping[str, Any]], docs: str = ""
) -> tuple[dict[str, Any], dict[str, Origin]]:
    """Layer several config files in order (later wins), warning for each key a later
    file overrides. `load` parses and validates one file (kept separate, so the parsing
    can be hardened without touching the layering)."""
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for path in paths:
        data = load(Path(path))
        layer = _canonical_keys(registry, data, str(path), docs, functools.partial(key_lines, Path(path)))
        # a later file's `api_key: null` must not turn off the key an earlier one set
        keep_secrets(registry, values, origins, layer, dict.fromkeys(layer, Origin(Layer.CONFIG_FILE, str(path))))
        for key, value in layer.items():
            refuse_none_like_secret(registry.leaves[key], value, str(path), null=True)
        for key, value in layer.items():
            origin = Origin(Layer.CONFIG_FILE, str(path))
            if key in origins and values[key] != value:
                spec = registry.leaves[key]
                # once per process: explain, plan (each model and TP size) and a --watch reload
                # layer the same files again; a reload that overrides anew still warns
                message = (f"config file {path} overrides {key}={spec.shown(values[key])!r} from "
                           f"{origins[key].source} with {spec.shown(value)!r}")
                warn_once(message, message)
                hidden = Shadowed(Layer.CONFIG_FILE, origins[key].source, jsonable(spec.shown(values[key])))
                origin = attrs.evolve(origin, shadows=(*origins[key].shadows, hidden))
            values[key] = value
            origins[key] = origin
    return values, origins


# -- environment ------------------------------------------------------------------------

def parse_env(spec: LeafSpec, name: str, text: str) -> Any:
    """An environment variable's text as a value of the leaf's type; the error names the
    variable and what it expects (never a secret's text)."""
    from configbags.runtime.yamlsafe import load_json  # yaml only when a variable is set

    t = spec.type
    raw = text.strip()
    shown = "" if spec.secret else f"={text!r}"
    try:
        if t.optional and (raw.lower() in ("", "none", "null") or (spec.secret and none_like(raw))):
            return None
        if t.base == "bool":
            if raw.lower() in _TRUE:
                return True
            if raw.lower() in _FALSE:
                return False
            raise ValueError("expected one of 1/0, true/false, yes/no, on/off")
        if t.base == "int":
            return int_from_text(raw)
        if t.base == "float":
            return float_from_text(raw)
        if t.base == "str":
            return text
        if t.item is not None:
            items = load_json(raw) if raw.startswith("[") else [p.strip() for p in raw.split(",") if p.strip()]
            return [int_from_text(p) if t.item.base == "int" and isinstance(p, str) else p for p in items]
        return load_json(raw)
    except (ValueError, YamlError) as exc:
        why = "" if spec.secret else f" ({exc})"
        raise RecordError(
            f"environment variable {name}{shown}: not a valid {t} for {spec.namespace}.{spec.name}{why}; "
            f"fix or unset it"
        ) from None


FILE_SUFFIX = "_FILE"  # NAME_FILE=/run/secrets/k: the Docker and Kubernetes way to pass a secret as a file


def secret_variables(registry: Registry) -> dict[str, str]:
    """Every variable that sets a secret leaf (old names too), and each one's `_FILE` form
    (unless the schema declares that name for a leaf of its own) -> the leaf. Derived from
    the schema's secret leaves, so a project's own secrets are covered alike."""
    declared = registry.env_names
    found: dict[str, str] = {}
    for name, leaf in declared.items():
        if registry.leaves[leaf].secret:
            found[name] = leaf
            if name + FILE_SUFFIX not in declared:
                found[name + FILE_SUFFIX] = leaf
    return found


def read_secret_file(variable: str, path: str, spec: LeafSpec) -> str:
    """The secret in the file that `variable` (a secret's `NAME_FILE`) names, read as every
    config file is (a regular file within the size limit, opened without blocking: a FIFO
    or a device is refused, never waited on), with one trailing newline stripped (what
    `echo key > file` and a Kubernetes Secret written by hand leave). Errors name the
    variable and the file, never what it holds."""
    from configbags.runtime.yamlsafe import read_text_limited  # yaml only when a variable is set

    leaf = f"{spec.namespace}.{spec.name}"
    if not path.strip():
        raise RecordError(f"environment variable {variable} is set but empty: it names the file that holds the "
                          f"secret {leaf}; give the file's path, or unset {variable}")
    try:
        text = read_text_limited(Path(path))
    except YamlError as exc:
        raise RecordError(f"environment variable {variable} names a file the secret {leaf} cannot be read from: "
                          f"{exc}; fix the file or unset {variable}") from None
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise RecordError(f"environment variable {variable}: cannot read {path!a}, the file of the secret {leaf} "
                          f"({why}); fix the path or unset {variable}") from None
    for end in ("\r\n", "\n"):
        if text.endswith(end):
            text = text[: -len(end)]
            break
    if none_like(text):
        raise RecordError(f"{path!a}, the file environment variable {variable} names for the secret {leaf}, "
                          f"{NONE_LIKE_SECRET}")
    return text


def read_env(
    registry: Registry, environ: Mapping[str, str], docs: str = ""
) -> tuple[dict[str, Any], dict[str, Origin]]:
    """The env layer: every declared variable that is set, parsed by type (an old name and
    the current one of the same leaf both set are refused); a secret's variable may be
    given as a file instead (`NAME_FILE`, never both). Unknown variables under the engine
    prefix are warned about with a did-you-mean, Kubernetes service variables excepted;
    one that resembles a secret's variable is refused (`refuse_secret_lookalike`)."""
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    declared = registry.env_names
    secrets = secret_variables(registry)
    seen: dict[str, str] = {}  # leaf -> the variable that set it
    for name in sorted(declared, key=lambda n: registry.leaves[declared[n]].env == n):
        leaf = declared[name]
        spec = registry.leaves[leaf]
        file_form = name + FILE_SUFFIX if secrets.get(name + FILE_SUFFIX) == leaf else ""
        if file_form in environ and name in environ:
            raise RecordError(
                f"environment variables {name} and {file_form} are both set, for the secret "
                f"{spec.namespace}.{leaf} (the second names a file holding it); unset one")
        given = name if name in environ else file_form if file_form in environ else ""
        if not given:
            continue
        if leaf in seen:  # an old name and the current one: neither may silently win
            raise RecordError(
                f"environment variables {seen[leaf]} and {given} are both set, for "
                f"{spec.namespace}.{leaf} (one is an old name of the other); unset one, "
                f"keeping {spec.env or name}"
            )
        seen[leaf] = given
        if spec.env != name:
            old = next(r for r in spec.renamed_from if r.env == name)
            leaf_for(registry, old.name, "$" + given, "environment")
        text = environ[given] if given == name else read_secret_file(given, environ[given], spec)
        source = f"environment variable {given}"
        values[leaf] = check_value(spec, parse_env(spec, given, text), source)
        if spec.env == name:
            leaf_for(registry, leaf, "$" + given, "environment", values[leaf])
        origins[leaf] = Origin(Layer.ENV, f"${given}")
    known = {**declared, **secrets}
    prefix = registry.env_prefix
    for name in sorted(environ):
        if name in known or KUBERNETES_ENV.match(name.upper()):
            continue
        refuse_secret_lookalike(registry, name, known, secrets)
        near = nearest_variable(prefix, name, known)
        if prefix and name.upper().startswith(prefix.upper()):  # sglang_x is not read: the case counts
            hint = f" (did you mean {near!r}?)" if near else ""
            warn_once("$" + name, f"environment variable {name} is not a known setting{hint}; it is ignored "
                                  f"(see {docs or reference()})")
    return values, origins


def nearest_variable(prefix: str | None, name: str, known: Iterable[str]) -> str | None:
    """The known variable `name` most likely means: the same but for case, else under the
    prefix (in any case) the closest one compared without the prefix every name shares
    (which would make any two close: SGLANG_TP_SIZEE is nothing like SGLANG_API_KEY)."""
    upper = name.upper()
    same_case = {n.upper(): n for n in known}
    if upper in same_case:
        return same_case[upper]
    if not prefix or not upper.startswith(prefix.upper()):
        return None
    tails = {(n[len(prefix):] if n.startswith(prefix) else n): n for n in known}
    match = difflib.get_close_matches(upper[len(prefix):], tails, n=1, cutoff=0.6)
    return tails[match[0]] if match else None


# the words of a variable's name (split at `_`) that name a credential: an unknown variable
# holding one was most likely meant for a secret when it also holds a word of a secret's own
# variable (`API` of SGLANG_API_KEY, `ADMIN` of SGLANG_ADMIN_API_KEY), or nothing else but
# file words. (TOKENS, plural, is no credential word: engines count tokens, `MAX_THINK_TOKENS`.)
CREDENTIAL_WORDS = frozenset({"KEY", "KEYS", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PWD",
                              "PASSPHRASE", "JWT", "AUTH", "BEARER", "CREDENTIAL", "CREDENTIALS"})
FILE_WORDS = frozenset({"FILE", "PATH"})
# generic words that say whose or what kind of credential a variable holds, never what else
# it is about: one of them before a credential word (`ACCESS_TOKEN`, `CLIENT_KEY`) is a
# secret's name whatever the schema calls its own (`HF_TOKEN`, `S3_SECRET`: another service's)
AUTH_QUALIFIERS = frozenset({"ACCESS", "CLIENT", "SERVER", "SERVICE", "AUTH", "API", "ADMIN", "BEARER", "MASTER",
                             "ROOT", "READ", "WRITE", "OPERATOR"})  # the last three: whose key of the door


def name_words(tail: str, joinable: Iterable[str] = ()) -> list[str]:
    """`tail` in upper case split at `_` (empty words dropped: `KEY__FILE`), each word also
    split where it is two words written as one, both credential, file or `joinable` words
    (`APIKEY`, `KEYFILE`, `AUTHTOKEN`); any other word stays whole (`MONKEY`)."""
    known = CREDENTIAL_WORDS | FILE_WORDS | set(joinable)
    words: list[str] = []
    for word in filter(None, tail.upper().split("_")):
        cut = next((i for i in range(1, len(word)) if word[:i] in known and word[i:] in known), 0)
        words += [word[:cut], word[cut:]] if cut else [word]
    return words


# credential words that name a secret on their own; KEY needs an AUTH_QUALIFIER before it
# (`api_key`, `client_key`), as a `sort_key` or `cache_key` is no credential
_SECRET_ON_THEIR_OWN = CREDENTIAL_WORDS - {"KEY", "KEYS", "AUTH"}


def credential_name(name: str) -> str | None:
    """The credential word a setting's name holds when it names a secret itself (`api_key`,
    `hf_token`, `db_password`, `client_secret`), or None: the words of `name_words`, but
    no name holding a file word (`api_key_file`, `ssl_keyfile` hold a path)."""
    words = name_words(name)
    if any(w in FILE_WORDS for w in words):
        return None
    for i, word in enumerate(words):
        qualified = len(words) == 1 or (i > 0 and words[i - 1] in AUTH_QUALIFIERS)
        if word in _SECRET_ON_THEIR_OWN or (word in {"KEY", "KEYS"} and qualified):
            return word
    return None


def secret_lookalike(prefix: str | None, name: str, known: Iterable[str],
                     secrets: Iterable[str]) -> tuple[str, str] | None:
    """The secret's variable (of `secrets`, a subset of `known`) that the unknown variable
    `name` was most likely meant for, and how it resembles it, or None. The one rule the
    server refuses to start by (`refuse_secret_lookalike`) and lint reports by:
    1. a secret's variable or its `_FILE` form in another case (`sglang_api_key`);
    2. under the prefix (in any case), its did-you-mean (`nearest_variable`) is a secret's
       (`SGLANG_API_KEYY`, `SGLANG_API_KEY_FILES`);
    3. under the prefix, split into words (`name_words`), it holds a credential word and a
       word of a secret's own variable that is none (`SGLANG_API_KEY_PATH`,
       `SGLANG_APIKEY_FILE`, `SGLANG_ADMIN_TOKEN`, `SGLANG_API_SECRET`);
    4. under the prefix, it holds a credential word and nothing but credential and file
       words (`SGLANG_AUTH_TOKEN`, `SGLANG_BEARER_TOKEN`, `SGLANG_SECRET_FILE`);
    5. under the prefix, it is two words, a generic qualifier (AUTH_QUALIFIERS) and then a
       credential word, file words after them aside (`SGLANG_ACCESS_TOKEN`,
       `SGLANG_CLIENT_KEY_FILE`, `SGLANG_SERVER_TOKEN`).
    Kubernetes service variables (`SGLANG_API_KEY_PORT`) are none. Ignored, any of these
    would start the server with that secret unset (an api key: reads open to anyone)."""
    secrets = sorted(set(secrets), key=lambda n: (len(n), n))
    if not secrets or KUBERNETES_ENV.match(name.upper()):
        return None
    known = list(known)
    near = nearest_variable(prefix, name, known)
    if near in secrets:
        how = "differs only in case from" if name.upper() == near.upper() else \
            "is not a known setting, and is close to"
        return near, f"{how} {near}"
    if not prefix or not name.upper().startswith(prefix.upper()):
        return None
    tails = {s: name_words(s[len(prefix):] if s.upper().startswith(prefix.upper()) else s) for s in secrets}
    own = {s: set(words) - CREDENTIAL_WORDS - FILE_WORDS for s, words in tails.items()}
    words = name_words(name[len(prefix):], set().union(AUTH_QUALIFIERS, *own.values()))
    credential = [w for w in words if w in CREDENTIAL_WORDS]
    if not credential:
        return None
    shared = {s: [w for w in dict.fromkeys(words) if w in own[s]] for s in secrets}
    best = max(secrets, key=lambda s: len(shared[s]))  # the first, shortest, among equals
    said = "/".join(dict.fromkeys(credential))
    if shared[best]:
        return best, (f"is not a known setting, and names a credential ({said}) with {'/'.join(shared[best])}, "
                      f"a word of {best}")
    if all(w in CREDENTIAL_WORDS or w in FILE_WORDS for w in words):
        return secrets[0], f"is not a known setting, and names nothing but a credential ({said}), as {secrets[0]} does"
    core = list(words)
    while core and core[-1] in FILE_WORDS:
        core.pop()
    if len(core) == 2 and core[0] in AUTH_QUALIFIERS and core[1] in CREDENTIAL_WORDS:
        return secrets[0], (f"is not a known setting, and names a credential ({core[1]}) with nothing but the generic "
                            f"word {core[0]}, as {secrets[0]} does")
    return None


def refuse_secret_lookalike(registry: Registry, name: str, known: Iterable[str], secrets: Mapping[str, str]) -> None:
    """Refuse an unknown variable `secret_lookalike` finds meant for a secret's variable
    (or that variable's `_FILE` form): ignored, it would leave the secret unset (an api
    key: reads open to anyone) behind a warning; the same typo as a flag is refused."""
    found = secret_lookalike(registry.env_prefix, name, known, secrets)
    if found is None:
        return
    near, how = found
    spec = registry.leaves[secrets[near]]
    what = (f"the file form of {near[: -len(FILE_SUFFIX)]}, the variable" if near not in registry.env_names
            else "the variable")
    raise RecordError(
        f"environment variable {name} {how}, {what} of the secret {spec.namespace}.{spec.name}: "
        f"ignored, it would leave the secret unset; rename it to {near} (or unset {name})")


def keep_secrets(registry: Registry, below: Mapping[str, Any], below_origins: Mapping[str, Origin],
                 layer: Mapping[str, Any], layer_origins: Mapping[str, Origin]) -> None:
    """An empty or none-like value (unset, `""`, `none`, `null`, `nil`, `~`) for a secret leaf never
    silently unsets the value a lower layer set: an empty `SGLANG_API_KEY=` over a config
    file's key would turn authentication off. Refused, naming the variable or flag and
    the layer it would override (never either value). From the environment such a value is
    refused even with nothing below: a Kubernetes secret that resolved to nothing would
    otherwise start a server whose key is off; a secret is left off by leaving its
    variable unset."""
    for name, value in layer.items():
        spec = registry.leaves.get(name)
        if spec is None or not spec.secret or not none_like(value):
            continue
        if layer_origins[name].layer is Layer.ENV and (name not in below or none_like(below.get(name))):
            variable = _spelled(layer_origins[name].source)
            raise RecordError(
                f"{variable} is set but empty or none-like, for the secret {spec.namespace}.{name}: a secret is "
                f"turned off by leaving its variable unset, never by an empty value (an empty Kubernetes secret "
                f"would start the server with its key off); unset {variable.split()[-1]} or give it the key"
            )
        if none_like(below.get(name)):
            continue
        given, kept = (_spelled(o.source) for o in (layer_origins[name], below_origins[name]))
        raise RecordError(
            f"{given} is empty or none-like, which would unset the secret {spec.namespace}.{name} that "
            f"{kept} sets (turning it off by accident); drop {given} to keep that value, or take "
            f"{name} out of {kept} to turn it off"
        )


_SHADOWABLE = frozenset({Layer.CONFIG_FILE, Layer.ENV})


def _layer_source(origin: Origin) -> str:
    kind = {Layer.CONFIG_FILE: "config file", Layer.ENV: "environment variable", Layer.CLI: "flag"}
    return f"{kind[origin.layer]} {origin.source}" if origin.layer in kind else origin.source


def shadowing(spec: LeafSpec, values: Mapping[str, Any], origins: Mapping[str, Origin], value: Any,
              origin: Origin) -> Origin:
    """`origin`, the layer that sets `value` now, with the value it hides where a lower
    operator layer (a config file, an environment variable) gives another: that value is
    not in force, and without a word an operator who edits it (a key rotated in a ConfigMap
    under a `--api-key` flag) would never learn why. So it is warned about, once per
    process, and kept on the origin for explain and server_info; values go through the
    one redaction rule. A preset's values are meant to be refined, and an equal value
    loses nothing: neither is a shadow."""
    below = origins.get(spec.name)
    if below is None or below.layer not in _SHADOWABLE or values[spec.name] == value:
        return origin
    message = (f"{_layer_source(origin)} overrides {spec.name}={spec.shown(values[spec.name])!r} from "
               f"{_layer_source(below)} with {spec.shown(value)!r}")
    warn_once(message, message)
    hidden = Shadowed(below.layer, below.source, jsonable(spec.shown(values[spec.name])))
    return attrs.evolve(origin, shadows=(*below.shadows, hidden))


def _spelled(source: str) -> str:
    return f"environment variable {source[1:]}" if source.startswith("$") else source




# -- the command line -------------------------------------------------------------------

class Once(argparse.Action):
    """A flag that may be given once: a second `--preset` or `--api-key` would silently
    replace the first."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None:
            parser.error(f"{option_string} given twice{self.shown(earlier, values)}; give it once")
        setattr(namespace, self.dest, values)

    def shown(self, earlier: Any, values: Any) -> str:
        return f" ({earlier}, then {values})"


class OnceSecret(Once):
    """`Once` for a secret's flag: the refusal never shows the values."""

    def shown(self, earlier: Any, values: Any) -> str:
        return " (values not shown: it is a secret)"


def add_config_flag(parser: argparse.ArgumentParser, presets: Sequence[str] = ()) -> None:
    """The record's own flags (`--config`, `--preset`, `--dump-config`), and the one number
    grammar for every `type=int`/`type=float` flag of `parser` (a config file's: no `1_000`,
    no non-ASCII digits, which Python's int() and float() would take)."""
    parser.register("type", int, int_from_text)
    parser.register("type", float, float_from_text)
    parser.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        default=None,
        help="YAML or JSON file of leaf values; repeat it to layer files (later files win, "
             "each overridden key is warned about); flags and environment win over files",
    )
    if presets:
        parser.add_argument("--preset", choices=list(presets), default=None, action=Once,
                            help="a named bundle of values (see CONFIG.md); anything set explicitly wins over it")
    parser.add_argument("--dump-config", metavar="PATH", default=None, action=Once,
                        help="at publish, write the resolved config as a config file that reproduces "
                             "this run when passed back with --config (secrets are left out)")


def record_from_cli_args(
    cls: type[R], registry: Registry, namespace: argparse.Namespace, schema_path: Path,
    environ: Mapping[str, str] | None = None, *, load: Callable[[Path], Mapping[str, Any]] | None = None,
) -> R:
    """`load` reads one --config file (default: `load_config_file`, validated against
    `schema_path`); serve --watch passes one that gives the start-time contents of the
    files it does not follow."""
    import os

    leaves = registry.leaves
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    preset = getattr(namespace, "preset", None)
    if preset:
        origin = Origin(Layer.PRESET, f"preset {preset}")
        for k, v in registry.presets[preset].values.items():
            values[k], origins[k] = v, origin
    config = getattr(namespace, "config", None)
    paths = [config] if isinstance(config, str) else list(config or ())
    docs = reference(schema_path)
    if load is None:
        load = functools.partial(load_config_file, schema_path=schema_path)
    for path in paths:  # the name becomes the source of every leaf the file sets: readbacks carry it as UTF-8
        if not is_text(str(path)):
            raise RecordError(f"--config {shown_text(str(path))}: the file name holds bytes that are not UTF-8 "
                              f"(each shown as \\udcXX), which no readback, log or override source can carry; "
                              f"rename the file (or its folder) to UTF-8 text")
    file_values, file_origins = merge_config_files(registry, paths, load, docs)
    env = os.environ if environ is None else environ
    env_values, env_origins = read_env(registry, env, docs)
    for layer_values, layer_origins in ((file_values, file_origins), (env_values, env_origins)):
        keep_secrets(registry, values, origins, layer_values, layer_origins)
        for key, value in layer_values.items():
            origins[key] = shadowing(registry.leaves[key], values, origins, value, layer_origins[key])
            values[key] = value
    given: dict[str, str] = {}  # leaf -> the flag that set it
    for key, value in vars(namespace).items():
        if key.startswith(RENAMED_DEST):
            old = key[len(RENAMED_DEST):]
            leaf, spelling = registry.renamed[old]
            flag = flag_of(old, spelling.flag)
            new = leaves[leaf].flags[0] if leaves[leaf].flags else leaf
            earlier = new if leaf in vars(namespace) else given.get(leaf)
            if earlier is not None:  # an old flag and the current one: neither may silently win
                raise RecordError(f"{earlier} and {flag} both set {leaves[leaf].namespace}.{leaf} (one is an "
                                  f"old name of the other); give it once, as {new}")
            given[leaf] = flag
            leaf_for(registry, old, flag, "command line")
            origins[leaf] = shadowing(leaves[leaf], values, origins, value, Origin(Layer.CLI, flag))
            values[leaf] = value
    for key, value in vars(namespace).items():
        if key in leaves:
            spec = leaves[key]
            flag = spec.flags[0] if spec.flags else key
            leaf_for(registry, key, flag, "command line", value)
            keep_secrets(registry, values, origins, {key: value}, {key: Origin(Layer.CLI, flag)})
            origins[key] = shadowing(spec, values, origins, value, Origin(Layer.CLI, flag))
            values[key] = value
    source = "command line" + (f" and {', '.join(paths)}" if paths else "")
    dump = getattr(namespace, "dump_config", None)
    if dump is not None:
        check_dump_apart(dump, [*(DumpInput(f"the --config file {config}", config, CONFIG_LOSS) for config in paths),
                                *secret_file_inputs(registry, env)])
    return build_record(cls, registry, values, origins, source, dump)


CONFIG_LOSS = "a dump leaves the secrets out, so the next start from it would have no keys"
MODEL_LOSS = "the model would be loaded (and planned) from a server-config dump instead of its own config"


@attrs.frozen
class DumpInput:
    """A file the command reads, which its --dump-config must not replace: what it is (as
    the error names it), its path, and what replacing it would lose."""

    what: str
    path: str
    loss: str


SECRET_FILE_LOSS = ("the secret it holds would be lost (a dump leaves secrets out), and the next start would read "
                    "the dump as the secret")


def secret_file_inputs(registry: Registry, environ: Mapping[str, str]) -> list[DumpInput]:
    """The files that the secrets' `NAME_FILE` variables set in `environ` name (read at
    start: a dump over one would destroy the only copy of the key)."""
    return [DumpInput(f"the file ${name} names", environ[name], SECRET_FILE_LOSS)
            for name in secret_variables(registry) if name.endswith(FILE_SUFFIX) and environ.get(name, "").strip()]


def model_inputs(path: str | Path | None, what: str) -> list[DumpInput]:
    """The model config a --model-path or --model-config names: the file itself, or the
    config.json of a model folder (a Hugging Face folder, as `ModelFacts.from_config` reads it)."""
    if path is None:
        return []
    given = Path(path)
    config = given / "config.json" if given.is_dir() else given
    return [DumpInput(f"the model config of {what} {given}", str(config), MODEL_LOSS)]


def check_dump_apart(dump: str | None, inputs: Iterable[DumpInput], flag: str = "--dump-config",
                     output: str = "the dump") -> None:
    """Refuse a --dump-config path (or another output `flag`, such as plan's --chart) that is
    one of the files the command reads (the same file by any name: a link to it, a hard link,
    another spelling of the path): the output would replace the input (a --config file would
    lose its keys, a model's config.json the model)."""
    import os

    if dump is None:
        return
    for given in inputs:
        try:
            same = os.path.samefile(dump, given.path)
        except OSError:  # the dump does not exist yet, or the input is gone: not one file
            continue
        if same:
            raise RecordError(f"{flag} {dump} is {given.what}"
                              + ("" if given.what.endswith(given.path) else f" ({given.path})")
                              + f": {output} would replace it, and {given.loss}; give {output} a path of its own")


class FilteredHelp(argparse.Action):
    """`--help` prints everything; `--help=KEYWORD` only the flags whose spelling or help
    mentions KEYWORD, and `--help=GROUP` one namespace's flags (as vLLM's --help does)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if not values:
            parser.print_help()
        else:
            print(filtered_help(parser, str(values)), end="")
        parser.exit()


def filtered_help(parser: argparse.ArgumentParser, keyword: str) -> str:
    from configbags.runtime.cmdline import matches  # whole words and flag names, as every command

    kw = keyword.lower()
    out = argparse.ArgumentParser(prog=parser.prog, add_help=False, allow_abbrev=False)
    groups = [g for g in parser._action_groups if (g.title or "").lower() == kw]
    found = False
    for group in parser._action_groups:
        if groups and group not in groups:
            continue
        actions = [
            a for a in group._group_actions
            if a.help is not argparse.SUPPRESS and a.option_strings and not isinstance(a, FilteredHelp)
            and (groups or matches(a, kw))
        ]
        if actions:
            found = True
            target = out.add_argument_group(group.title, group.description if groups else None)
            for action in actions:
                target._add_action(action)
    if not found:
        titles = sorted(g.title for g in parser._action_groups if g.title and g._group_actions)
        return f"no flag matches {keyword!r}; groups: {', '.join(titles)}\n"
    return out.format_help()


def parse_cli_words(parser: argparse.ArgumentParser, registry: Registry, words: Sequence[str]) -> argparse.Namespace:
    """The server's command-line words as its parser reads them: unique prefixes expanded
    (settings.yaml `cli: {abbreviations: legacy}`), a structured json leaf's dotted keys
    (`--compile-cfg.level 2`) folded into its value and checked against its structure. The
    server, `configbags explain` and every other reader of a launch line parse with this."""
    words = list(words)
    if registry.abbreviations == "legacy":
        from configbags.runtime.abbrev import expand_prefixes

        words = expand_prefixes(parser, words, warn_once)
    given = words
    structured = nested.structures(registry)  # json leaves with a declared structure
    if structured:
        words = nested.fold_dotted(parser, words, structured)
    namespace = parser.parse_args(words)
    if structured:
        nested.check(parser, namespace, structured)
    warn_repeated(parser, registry, given, namespace)
    return namespace


def warn_repeated(parser: argparse.ArgumentParser, registry: Registry, words: Sequence[str],
                  namespace: argparse.Namespace) -> None:
    """A leaf given more than once on the command line (`--tp-size 2 --tp-size 4`, a flag
    and its alias, `--x --no-x`): argparse keeps the last in silence, while every other
    layer says when one value replaces another; so is this, once per process. (A secret's
    flag twice is refused: `OnceSecret`.)"""
    actions = parser._option_string_actions
    spellings: dict[str, list[str]] = {}
    for word in words:
        if word == "--":  # what follows is no flag
            break
        action = actions.get(word.partition("=")[0]) if word.startswith("--") else None
        if action is not None and action.dest in registry.leaves:
            spellings.setdefault(action.dest, []).append(word.partition("=")[0])
    for leaf, flags in spellings.items():
        if len(flags) > 1 and hasattr(namespace, leaf):
            spec = registry.leaves[leaf]
            message = (f"{leaf} is given {len(flags)} times on the command line ({', '.join(flags)}): the last wins, "
                       f"{spec.shown(getattr(namespace, leaf))!r}")
            warn_once(message, message)


def record_parser(add_cli_args: Callable[[argparse.ArgumentParser], None], prog: str | None,
                  command: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The server's command-line parser (`add_cli_args`'s flags, `--help[=KEYWORD|GROUP]`),
    for `record_from_cli` and for a command that reads the words before it builds a record
    (`command`: that command's own parser, whose flags it names as given after the `--`)."""
    # No abbreviations: a flag added later must not change what an old command line means.
    from configbags.runtime.cmdline import UsageErrors  # one line and a hint, not the whole usage

    parser = UsageErrors(prog=prog, description="Launch-time server configuration.",
                         allow_abbrev=False, add_help=False, command=command)
    parser.add_argument("-h", "--help", nargs="?", const="", default=argparse.SUPPRESS, action=FilteredHelp,
                        metavar="KEYWORD|GROUP",
                        help="show this help; --help=KEYWORD lists the flags that mention KEYWORD, "
                             "--help=GROUP the flags of one namespace")
    add_cli_args(parser)
    return parser


def record_from_cli(
    cls: type[R],
    registry: Registry,
    add_cli_args: Any,
    argv: Sequence[str] | None,
    schema_path: Path,
    prog: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> R:
    parser = record_parser(add_cli_args, prog)
    namespace = parse_cli_words(parser, registry, list(sys.argv[1:] if argv is None else argv))
    try:
        return record_from_cli_args(cls, registry, namespace, schema_path, environ)
    except RecordError as exc:
        parser.error(str(exc))


def replace_record(record: R, **changes: Any) -> R:
    """A new record with `changes` (given in code: the CLI layer); the original never changes."""
    new = attrs.evolve(record, **changes)  # type: ignore[misc]
    given = input_of(record)
    if given is not None:
        attach(new, {**given.origins, **dict.fromkeys(changes, Origin(Layer.CLI, "replace()"))}, given.dump_config)
    return new
