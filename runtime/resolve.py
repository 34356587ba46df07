"""Resolution with provenance: the layers a leaf's value can come from, the facts rules
test (GPU, model), and the rule pass that runs at publish.

Layers, lowest to highest: schema default < hardware rules < model rules < preset <
config file < environment < CLI < load_time overrides < runtime overrides. The record
(`ServerArgs`) carries the operator layers (preset, config file, env, CLI) as origins;
`resolve()` runs the declared rules over it, given the facts; the context folds the
override log on top. Every value therefore knows its layer and, for a rule, which rule.

Facts are inputs to publish, never read from the machine here: without the facts a rule
tests (GPU, model), that rule does not apply and the leaf keeps its lower layer (explain
says so); a rule that tests only leaves applies all the same."""

from __future__ import annotations

import argparse
import enum
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from configbags.runtime.errors import InputFileError, LeafValueError, RuleFunctionError, YamlError
from configbags.runtime.leaftypes import check_bounds, freeze, jsonable, short_repr
from configbags.runtime.registry import LeafSpec, Registry, RuleSpec


class Layer(str, enum.Enum):
    """Where a value comes from, lowest precedence first (definition order is rank)."""

    DEFAULT = "default"
    HARDWARE = "hardware"
    MODEL = "model"
    PRESET = "preset"
    CONFIG_FILE = "config_file"
    ENV = "env"
    CLI = "cli"
    LOAD_TIME = "load_time"
    RUNTIME = "runtime"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {layer: i for i, layer in enumerate(Layer)}
# Operator input: a rule does not touch a value set at one of these unless it says `force`.
OPERATOR_LAYERS = frozenset({Layer.PRESET, Layer.CONFIG_FILE, Layer.ENV, Layer.CLI})


@attrs.frozen
class Shadowed:
    """A lower layer's value that the one in force hides (a config file's under a flag):
    never applied, so a readback shows it where an operator who edits it looks. `value`
    is as the one redaction rule prints it."""

    layer: Layer
    source: str
    value: Any

    def as_dict(self) -> dict[str, Any]:
        return {"layer": self.layer.value, "source": self.source, "value": self.value}


@attrs.frozen
class Origin:
    """Where one value came from: its layer, the spelling or file or rule that set it, for
    a forced rule what it replaced, and the lower layers' values it hides (lowest first)."""

    layer: Layer
    source: str
    rule: str | None = None
    forced_over: Origin | None = None
    shadows: tuple[Shadowed, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer.value, "source": self.source}
        if self.rule is not None:
            out["rule"] = self.rule
        if self.forced_over is not None:
            out["forced_over"] = self.forced_over.as_dict()
        if self.shadows:
            out["shadows"] = [shadow.as_dict() for shadow in self.shadows]
        return out


DEFAULT_ORIGIN = Origin(Layer.DEFAULT, "schema default")


@attrs.frozen
class GpuFacts:
    """What the hardware rules may test. `memory_bytes` is the device's total memory
    (torch.cuda.get_device_properties(i).total_memory), `sm` the compute capability as
    major*10+minor (90 for H100)."""

    name: str | None = None
    memory_bytes: int | None = None
    sm: int | None = None


@attrs.frozen
class ModelFacts:
    """What the model rules may test: the architectures and any field of config.json."""

    architectures: tuple[str, ...] = ()
    config: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | str | Path) -> ModelFacts:
        """From a Hugging Face config.json (a path, a model folder holding one, or its
        parsed mapping). The file is read as every input file is, within the input limits
        (a FIFO or a device is never opened); as Hugging Face reads it, a repeated key takes
        its last value and `Infinity`/`NaN` are numbers. Any failure is a InputFileError
        naming the file."""
        source = "the given config"
        if not isinstance(config, Mapping):
            from configbags.runtime.yamlsafe import load_json, read_text_limited

            path = Path(config)
            path = path / "config.json" if path.is_dir() else path
            source = str(path)
            try:
                config = load_json(read_text_limited(path), constants=True, duplicates=True)
            except YamlError as exc:  # a read error names the file itself; a parse error has its line
                where = "" if str(path) in exc.problem else f"{exc.at(path)}: "
                raise InputFileError(f"model facts: cannot read config.json: {where}{exc.problem}") from None
            except OSError as exc:
                raise InputFileError(f"model facts: cannot read {path}: {exc.strerror or exc}") from None
            if not isinstance(config, Mapping):
                raise InputFileError(f"model facts: {path} holds a {type(config).__name__}, not a JSON object")
        archs = config.get("architectures") or ()
        if not isinstance(archs, (list, tuple)) or not all(isinstance(a, str) for a in archs):
            raise InputFileError(f"model facts: {source}: architectures is {short_repr(archs)}, not a list "
                                 f"of names (e.g. [\"LlamaForCausalLM\"])")
        return cls(tuple(archs), dict(config))


def folder_facts(model_path: Any) -> ModelFacts | None:
    """The model facts of a --model-path folder holding a config.json, as the engine loads
    the model from it (serve and explain alike); None for a hub id or a path not here. A
    config.json that is no regular file (a FIFO, a device, a folder, a dangling link) is
    an InputFileError, never opened: the engine could not load the model from it."""
    import os

    folder = Path(str(model_path)) if model_path else None
    if folder is None or not folder.is_dir() or not os.path.lexists(folder / "config.json"):
        return None
    if not (folder / "config.json").is_file():
        raise InputFileError(f"--model-path {folder}: its config.json is not a regular file (or a link to one); the "
                             f"engine could not load the model from it: fix the model folder")
    return ModelFacts.from_config(folder)


@attrs.frozen
class Facts:
    """The inputs of the hardware and model rules, passed to `publish(..., facts=...)`."""

    gpu: GpuFacts | None = None
    model: ModelFacts | None = None

    def lookup(self, subject: str) -> tuple[bool, Any]:
        """(present, value) of a fact subject such as `gpu.memory_bytes`,
        `model.architectures` or `model.config.text_config.sliding_window`."""
        head, _, rest = subject.partition(".")
        if head == "gpu":
            if self.gpu is None:
                return False, None
            value = getattr(self.gpu, rest, None)
            return value is not None, value
        if head == "model":
            if self.model is None:
                return False, None
            if rest == "architectures":
                return bool(self.model.architectures), self.model.architectures
            node: Any = self.model.config
            for part in rest.removeprefix("config.").split("."):
                if not isinstance(node, Mapping) or part not in node:
                    return False, None
                node = node[part]
            return True, node
        return False, None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Facts:
        """The inverse of `as_dict` (a model's config.json fields other than its
        architectures do not travel)."""
        gpu, model = data.get("gpu"), data.get("model")
        return cls(GpuFacts(**gpu) if gpu else None,
                   ModelFacts(tuple(model.get("architectures", ()))) if model else None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": attrs.asdict(self.gpu) if self.gpu else None,
            "model": {"architectures": list(self.model.architectures)} if self.model else None,
        }


NO_FACTS = Facts()
FACT_ROOTS = ("gpu", "model")


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50}
# No accelerator holds a pebibyte; a bound keeps a 400-digit size out of the arithmetic.
MAX_DEVICE_BYTES = 1 << 50


def parse_bytes(text: str) -> int:
    """`80GiB`, `80 GB`, `1.5TiB`, `85899345920` -> bytes (argparse `type=`)."""
    # ASCII digits and spacing only, as the one number grammar (a no-break space or an
    # Arabic-Indic digit is no size a config file or a record flag would take)
    match = re.fullmatch(r"[ \t\r\n]*([0-9]{1,30}(?:\.[0-9]{1,30})?)[ \t\r\n]*([a-zA-Z]*)[ \t\r\n]*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a size; write e.g. 80GiB, 40GB or 85899345920")
    size = int(Fraction(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a memory size must be positive")
    if size > MAX_DEVICE_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r}: more than 1 PiB; no device holds that much")
    return size


parse_bytes.__name__ = "size"

# Compute capabilities as major*10+minor: 1.0 is the first there was; three digits leave
# room for majors to come.
MIN_SM, MAX_SM = 10, 999


def parse_sm(text: str) -> int:
    """`90` for compute capability 9.0 (argparse `type=`), within [MIN_SM, MAX_SM]."""
    digits = text.strip()
    value = int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 3 else None
    if value is None or not MIN_SM <= value <= MAX_SM:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give the compute capability as major*10+minor, "
                                         f"{MIN_SM} to {MAX_SM} (e.g. 90 for 9.0)")
    return value


parse_sm.__name__ = "compute capability"


def is_fact(subject: str) -> bool:
    return subject.partition(".")[0] in FACT_ROOTS


def tests_a_fact(rule: RuleSpec) -> bool:
    """Does `rule` need facts (a `gpu.`/`model.` condition or input)? One that tests only
    leaves applies without any."""
    return any(is_fact(s) for s in (*(c.subject for c in rule.when), *rule.inputs))


def _holds(op: str, value: Any, operand: Any) -> bool:
    try:
        if op == "eq":
            return bool(value == operand)
        if op == "ne":
            return bool(value != operand)
        if op == "in":
            return value in operand
        if op == "not_in":
            return value not in operand
        if op == "contains":
            return operand in value
        if op == "gte":
            return bool(value >= operand)
        if op == "gt":
            return bool(value > operand)
        if op == "lte":
            return bool(value <= operand)
        if op == "lt":
            return bool(value < operand)
        if op == "present":
            return (value is not None) == bool(operand)
    except TypeError:  # e.g. None < 5: a missing value satisfies no ordering
        return False
    raise ValueError(f"unknown condition operator {op!r}")


def _subject(subject: str, facts: Facts, values: Mapping[str, Any]) -> tuple[bool, Any]:
    if is_fact(subject):
        return facts.lookup(subject)
    return True, values.get(subject)


@attrs.frozen
class Verdict:
    """Why a rule did or did not set its leaf (explain shows one per rule)."""

    rule: str
    applied: bool
    why: str
    value: Any = None

    def as_dict(self, spec: LeafSpec | None) -> dict[str, Any]:
        from configbags.runtime.registry import redacted

        return {"rule": self.rule, "applied": self.applied, "why": self.why,
                "value": jsonable(redacted(spec, self.value))}


class NoValue(Exception):
    """A rule function's "no opinion" with the reason, for the inputs it was given (`raise
    NoValue("the reserve ... is not below the device's ...")`): explain shows the reason
    where a bare None would only say the rule had no opinion."""


def evaluate(rule: RuleSpec, facts: Facts, values: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(None, value) when `rule` applies to these facts and values, else (reason, None).
    A function rule answering None, or raising NoValue with its reason, has no opinion."""
    for cond in rule.when:
        present, value = _subject(cond.subject, facts, values)
        if not present and cond.op != "present":
            return f"no fact {cond.subject} given", None
        if not _holds(cond.op, value, cond.operand):
            return f"condition {cond.subject} {cond.op} {cond.operand!r} is false ({short_repr(value)})", None
    if rule.fn is None:
        return None, rule.value
    args = []
    for name in rule.inputs:
        present, value = _subject(name, facts, values)
        if not present:
            return f"no fact {name} given", None
        args.append(value)
    try:
        result = rule.fn(*args)
    except NoValue as exc:
        reason = str(exc) if len(str(exc)) <= 400 else str(exc)[:400] + "..."
        return f"{rule.fn.__name__} gave no value: {reason}", None
    except Exception as exc:
        given = ", ".join(f"{name}={short_repr(a)}" for name, a in zip(rule.inputs, args, strict=True))
        raise RuleFunctionError(
            f"rule {rule.id} ({rule.where}): its function {rule.fn.__name__} raised "
            f"{type(exc).__name__}: {short_repr(str(exc))} for inputs {given or '(none)'}; fix the "
            f"function, or give facts and values it accepts"
        ) from exc
    if result is None:
        return f"{rule.fn.__name__} had no opinion", None
    return None, result


def _checked(rule: RuleSpec, spec: LeafSpec, value: Any) -> Any:
    try:
        value = spec.type.coerce(value)
        check_bounds(value, choices=spec.choices, minimum=spec.minimum, maximum=spec.maximum)
    except LeafValueError as exc:
        raise LeafValueError(
            f"rule {rule.id} ({rule.where}) gave {spec.namespace}.{spec.name} a bad value: {exc}; "
            f"fix the rule's value or function"
        ) from None
    return value


@attrs.frozen
class Resolution:
    """The rule pass over one record: the values (record values with rules applied) and
    the origin of every value not at its schema default (sparse)."""

    values: dict[str, Any]
    origins: Mapping[str, Origin]
    forced: tuple[str, ...]  # one warning per forced rule that replaced operator input


def resolve(registry: Registry, values: dict[str, Any], origins: Mapping[str, Origin],
            facts: Facts) -> Resolution:
    """Run every rule in order over `values` (the record's, mutated in place) whose
    `origins` are the operator layers. Conditions read the values as resolved so far."""
    if not registry.rules:
        return Resolution(values, origins, ())
    out = dict(origins)
    forced: list[str] = []
    for rule in registry.rules:
        current = out.get(rule.leaf, DEFAULT_ORIGIN)
        if current.layer in OPERATOR_LAYERS and rule.force is None:
            continue
        reason, value = evaluate(rule, facts, values)
        if reason is not None:
            continue
        spec = registry.leaves[rule.leaf]
        value = _checked(rule, spec, value)
        old = values[rule.leaf]
        layer = Layer(rule.layer)
        if current.layer in OPERATOR_LAYERS:
            if value == old:
                continue  # the operator already chose what the rule requires
            forced.append(
                f"rule {rule.id} forces {spec.namespace}.{rule.leaf}={spec.shown(value)!r} over "
                f"{spec.shown(old)!r} from {current.source} ({current.layer}): {rule.force}"
            )
            out[rule.leaf] = Origin(layer, f"rule {rule.id} ({rule.where})", rule.id, forced_over=current)
        else:
            out[rule.leaf] = Origin(layer, f"rule {rule.id} ({rule.where})", rule.id)
        values[rule.leaf] = value
    return Resolution(values, out, tuple(forced))


def verdicts(registry: Registry, leaf: str, facts: Facts, values: Mapping[str, Any],
             origins: Mapping[str, Origin]) -> list[Verdict]:
    """What each rule of `leaf` made of this state (for explain), re-evaluated on demand so
    publish does not pay for it."""
    out = []
    applied = origins.get(leaf, DEFAULT_ORIGIN).rule
    for rule in registry.rules_by_leaf.get(leaf, ()):
        if rule.id == applied:
            out.append(Verdict(rule.id, True, "applied" + (f" (forced: {rule.force})" if rule.force else ""),
                               values.get(leaf)))
            continue
        reason, value = evaluate(rule, facts, values)
        origin = origins.get(leaf, DEFAULT_ORIGIN)
        if reason is None:
            if origin.layer in OPERATOR_LAYERS and rule.force is None:
                reason = f"operator input wins: set by {origin.source} ({origin.layer})"
            elif origin.layer.rank > Layer(rule.layer).rank or origin.rule is not None:
                reason = f"a later rule or layer decided: {origin.source}"
            else:
                reason = "matched, value already in force"
        out.append(Verdict(rule.id, False, reason, value))
    return out


def rule_cycles(rules: Iterable[tuple[str, str, Iterable[str]]], ordered: Iterable[str] = ()) -> list[str]:
    """A warning for each set of rules whose leaves read one another, from (rule id, leaf it
    sets, subjects it reads) triples: each rule sees the others' values as resolved so far,
    so the rules' order decides the result, and explain (which re-evaluates a rule against
    the final values) may say a skipped rule would match. A rule reading its own leaf (the
    value below it) is no cycle. A cycle whose every rule is in `ordered` (the schema says
    why its order is deliberate: `ordered:`) is accepted without a warning."""
    accepted = set(ordered)
    setters: dict[str, list[str]] = {}
    reads: dict[str, set[str]] = {}
    for rule_id, leaf, subjects in rules:
        setters.setdefault(leaf, []).append(rule_id)
        reads.setdefault(leaf, set()).update(s for s in subjects if not is_fact(s) and s != leaf)
    graph = {leaf: sorted(r for r in read if r in setters) for leaf, read in reads.items()}
    warnings = []
    for component in _strongly_connected(graph):
        if len(component) > 1:
            ids = sorted(rid for leaf in component for rid in setters[leaf])
            if accepted.issuperset(ids):
                continue
            warnings.append(
                f"rules {', '.join(ids)} set leaves that read one another ({', '.join(sorted(component))}): "
                f"each sees the others' values as resolved so far, so their order in the rules file "
                f"decides the result; if that order is deliberate, say why with `ordered:` on each of them, "
                f"else have one of them read facts only"
            )
    return warnings


def _strongly_connected(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (a schema may have many rules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, [])
            if child < len(successors):
                work.append((node, child + 1))
                succ = successors[child]
                if succ not in index:
                    work.append((succ, 0))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out
