"""`configbags matrix`: resolution as a golden file. A declared set of launch shapes
(command lines, a config file, the environment, facts: GPU and model) x every leaf gives
each cell's resolved value, its layer, the rule that set it and the source, or the
shape's error; the golden file holds them, one JSON object per line, in a fixed order.

    configbags matrix --write              # after a deliberate change: record the new golden
    configbags matrix --check              # CI: fail on any changed cell, printing both sides
    configbags matrix --against main       # what this branch does to resolution

The shapes file is `matrix.yaml` in the schema folder (or `--shapes FILE`):

    package: configbags.generated   # optional: the generated package (default: the project's)
    golden: matrix.golden.jsonl     # relative to this file
    role: launcher                  # the role each shape publishes as (default launcher)
    shapes:
      h100-llama-8b:
        help: One H100, Llama 3.1 8B, defaults.
        argv: [--model-path, /models/llama]
        env: {SGLANG_LOG_LEVEL: debug}
        config: {max_running_requests: 64}   # written to a config file, passed as --config
        gpu: {name: NVIDIA H100 80GB HBM3, memory: 80GiB, sm: 90}
        model: ../models/llama-3.1-8b.json   # a config.json, relative to this file
        role: worker
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from configbags.evolve.revisions import show
from configbags.packages import named_context
from configbags.runtime.abbrev import expand_prefixes
from configbags.runtime.cmdline import UsageErrors, inert, print_stderr
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, YamlError
from configbags.runtime.leaftypes import closest, same_value, short_repr, shown_text
from configbags.runtime.project import load_project, project_path
from configbags.runtime.record import record_parser, reference, secret_file_inputs
from configbags.runtime.registry import Registry
from configbags.runtime.resolve import Facts, GpuFacts, ModelFacts, parse_bytes, parse_sm
from configbags.runtime.yamlsafe import (
    check_output_path,
    load_yaml,
    read_text_limited,
    write_text_atomic,
)

SHAPES_FILE = "matrix.yaml"
SHAPE_KEYS = frozenset({"help", "argv", "env", "config", "gpu", "model", "role"})
CONFIG_NAME = "$CONFIG"  # how a shape's config file is named in cells and errors
PACKAGE_NAME = "$PACKAGE"  # how the generated package's folder (its CONFIG.md) is named
DEFAULT_ROLE = "launcher"
DUMP_FLAG = "--dump-config"


@attrs.frozen
class Shape:
    name: str
    help: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    config: Mapping[str, Any] | None
    gpu: GpuFacts | None
    model: Path | None
    model_facts: ModelFacts | None  # read once, with the shapes file: a model that is no model config is refused there
    role: str


@attrs.frozen
class Shapes:
    path: Path
    package: str | None
    golden: Path
    shapes: tuple[Shape, ...]
    role: str | None = None  # the file's own `role:`, None when it gives none

    def named_paths(self) -> list[Path]:
        """The paths whose names the shapes file gives (the golden, as written and where a
        link leads; the shapes' models), which a message shows escaped."""
        golden = [self.golden, Path(os.path.realpath(self.golden))]
        return [*golden, *(s.model for s in self.shapes if s.model is not None)]


def _bad(path: Path, message: str) -> ConfigError:
    return ConfigError(f"{inert(str(path))}: {message}")  # the name as typed: a line break in it forges no line


def _escaped(text: str, paths: Iterable[Path]) -> str:
    """`text` with each of `paths` (and its folder) shown as `shown_text` shows a name: a
    path the shapes file names is someone else's text, and a message quoting it raw (a
    newline in the golden's name) could forge a line of the CI log."""
    raw = {str(name) for path in paths for name in (path, path.parent)}
    hostile = sorted((name for name in raw if shown_text(name, _WHOLE) != name), key=len, reverse=True)
    if not hostile:
        return text
    # one pass, longest first: a path and its folder are escaped once, never twice
    return re.sub("|".join(map(re.escape, hostile)), lambda found: shown_text(found.group(), _WHOLE), text)


def _role(path: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(path, f"{where}`role` is a role name of the schema (schema/roles.yaml), not {short_repr(value)}")
    return value


def _model(path: Path, name: object, given: object) -> tuple[Path, ModelFacts]:
    """A shape's model config and its facts, read now: one that is no file, or no model
    config (not JSON, a lone surrogate, not an object, `architectures` no list of names), is
    refused as `explain --model-config` refuses it, never recorded as the shape's error cell
    (a golden of error cells would keep `--check` green)."""
    model = path.parent / str(given)
    if not model.is_file():
        raise _bad(path, f"shape {name!r}: model {given!r} is no file (it is a config.json, relative "
                         f"to the shapes file)")
    try:
        return model, ModelFacts.from_config(model)
    except ConfigError as exc:
        raise _bad(path, f"shape {name!r}: model {given!r} cannot be read as a model config "
                         f"({_escaped(str(exc), [model])}); give the model's config.json, relative to the "
                         f"shapes file") from None


def read_shapes(path: Path) -> Shapes:
    """The shapes file; each error names the file, the shape and the fix."""
    try:
        data = load_yaml(read_text_limited(path))
    except (OSError, YamlError) as exc:
        raise _bad(path, f"cannot read the shapes file: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("shapes"), dict) or not data["shapes"]:
        raise _bad(path, "the shapes file needs `shapes:`, a mapping of shape names to launch shapes")
    role = _role(path, "", data["role"]) if "role" in data else None
    out = []
    for name, spec in data["shapes"].items():
        if not isinstance(spec, dict):
            raise _bad(path, f"shape {name!r} must be a mapping")
        unknown = sorted(set(spec) - SHAPE_KEYS)
        if unknown:
            raise _bad(path, f"shape {name!r}: unknown key(s) {', '.join(unknown)}; the keys are "
                             f"{', '.join(sorted(SHAPE_KEYS))}")
        argv = spec.get("argv", [])
        env = spec.get("env", {})
        if not isinstance(argv, list) or not isinstance(env, dict):
            raise _bad(path, f"shape {name!r}: `argv` is a list and `env` a mapping")
        _check_words(path, name, argv, env)
        config = spec.get("config")
        if config is not None and not isinstance(config, dict):
            raise _bad(path, f"shape {name!r}: `config` is a mapping of leaf names to values")
        gpu = _gpu(path, name, spec.get("gpu"))
        model, facts = _model(path, name, spec["model"]) if spec.get("model") is not None else (None, None)
        shape_role = _role(path, f"shape {name!r}: ", spec["role"]) if "role" in spec else role
        out.append(Shape(str(name), str(spec.get("help", "")), tuple(str(a) for a in argv),
                         {str(k): str(v) for k, v in env.items()}, config, gpu, model, facts,
                         shape_role or DEFAULT_ROLE))
    golden_name = data.get("golden", "matrix.golden.jsonl")
    if not isinstance(golden_name, str) or not golden_name.strip():
        raise _bad(path, f"`golden` is a file name (text, relative to the shapes file), not {golden_name!r}")
    golden = path.parent / golden_name
    package = data.get("package")
    return Shapes(path, str(package) if package is not None else None, golden, tuple(out), role)


def _check_words(path: Path, name: object, argv: Sequence[object], env: Mapping[object, object]) -> None:
    """Refuse an argv word or env value that YAML read as no text (`1.10` as the number 1.1,
    `1e3` as 1000.0, `null`, `true`): a command line and an environment hold only text, and
    the text as written is gone, so taking Python's text of the value would record a shape
    its author never wrote."""
    for index, word in enumerate(argv):
        if not isinstance(word, str):
            raise _bad(path, f"shape {name!r}: argv[{index}] is {short_repr(word)}, which YAML read as "
                             f"{_yaml_kind(word)}, not as the word written; quote it (\"...\") to pass it as written")
    for variable, value in env.items():
        if not isinstance(value, str):
            raise _bad(path, f"shape {name!r}: env {shown_text(str(variable), _WHOLE)} is {short_repr(value)}, "
                             f"which YAML read as {_yaml_kind(value)}, not as the text written; quote it (\"...\") "
                             f"to pass it as written")


def _yaml_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int | float):
        return "a number"
    return "a " + ("list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else type(value).__name__)


def _gpu(path: Path, name: object, g: object) -> GpuFacts | None:
    """A shape's GPU facts, each checked as `explain`'s --gpu-name, --gpu-memory and --gpu-sm
    check theirs: a value no command line could give (an sm of -5 or "x") would be recorded
    in the golden as if it described a GPU, or turn a rule's TypeError into a green cell."""
    if g is None:
        return None
    if not isinstance(g, dict) or set(g) - {"name", "memory", "sm"}:
        raise _bad(path, f"shape {name!r}: `gpu` takes name, memory (e.g. 80GiB) and sm (e.g. 90)")
    gpu_name, memory, sm = g.get("name"), g.get("memory"), g.get("sm")
    if gpu_name is not None and not isinstance(gpu_name, str):
        raise _bad(path, f"shape {name!r}: gpu name is text (e.g. NVIDIA H100 80GB HBM3), not {short_repr(gpu_name)}")
    facts: dict[str, int | None] = {"memory": None, "sm": None}
    for key, value, parse in (("memory", memory, parse_bytes), ("sm", sm, parse_sm)):
        if value is None:
            continue
        # a YAML number is parsed as the flag's text would be (`true` reads True, no number)
        text = value if isinstance(value, str) else short_repr(value)
        try:
            facts[key] = parse(text)
        except argparse.ArgumentTypeError as exc:
            raise _bad(path, f"shape {name!r}: gpu {key}: {exc}") from None
    return GpuFacts(gpu_name, facts["memory"], facts["sm"])


# -- resolving -----------------------------------------------------------------------------
def _cells(shape: Shape, info: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    layers = info["layers"]
    for leaf in sorted(info["resolved"]):
        cell: dict[str, Any] = {"shape": shape.name, "leaf": leaf, "value": info["resolved"][leaf]}
        origin = layers.get(leaf)
        if origin is None:
            cell["layer"] = "derived"
        else:
            cell["layer"] = origin["layer"]
            if origin.get("rule") is not None:
                cell["rule"] = origin["rule"]  # the rule's id says it all; its line would churn the golden
            elif origin["layer"] != "default":
                cell["source"] = origin["source"]
            if origin.get("forced_over") is not None:
                cell["forced_over"] = origin["forced_over"]["source"]
        yield cell


def dump_flag(ctx: Context[Any], shape: Shape) -> str | None:
    """The flag of `shape.argv` that the record's parser reads as --dump-config, as the
    shape spells it (`--dump-config`, `--dump-config=PATH`, or a prefix that a schema with
    `cli: {abbreviations: legacy}` expands to it), or None."""
    words = list(shape.argv)
    read = words
    if ctx.registry.abbreviations == "legacy":
        record_type = ctx.record_type
        assert record_type is not None, "a generated package's context knows its record type"
        parser = record_parser(record_type.add_cli_args, "matrix")
        # an ambiguous prefix is the shape's usage error (its cell); the words are then read as given
        with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            read = expand_prefixes(parser, words, lambda spelling, message: None)
    for given, word in zip(words, read, strict=True):
        if word == "--":  # what follows is no flag
            break
        if word.partition("=")[0] == DUMP_FLAG:
            return given.partition("=")[0]
    return None


def check_against_schema(ctx: Context[Any], shapes: Shapes) -> None:
    """Refuse, before any shape is resolved, a shapes file asking what the matrix must not
    record or do: a role the schema lacks (every shape would be one RoleError cell, a
    golden `--check` keeps green), or a shape whose argv gives --dump-config (publishing it
    would write the resolved config, over the shapes file itself if it names it, and even
    under `--check`). ConfigError naming the shapes file, the shape and the fix."""
    roles = ctx.registry.roles
    known = f"the roles are {', '.join(sorted(roles))} (schema/roles.yaml)"
    if shapes.role is not None and shapes.role not in roles:
        raise _bad(shapes.path, f"`role: {shapes.role!r}` is no role of the schema{closest(shapes.role, roles)}; "
                                f"{known}")
    for shape in shapes.shapes:
        if shape.role not in roles:
            raise _bad(shapes.path, f"shape {shape.name!r} publishes as role {shape.role!r}, no role of the schema"
                                    f"{closest(shape.role, roles)}; {known}: set `role:` in the shape or the file")
        flag = dump_flag(ctx, shape)
        if flag is not None:
            shown = flag if flag == DUMP_FLAG else f"{shown_text(flag, _WHOLE)} ({DUMP_FLAG})"
            raise _bad(shapes.path, f"shape {shape.name!r}: its argv gives {shown}, which writes the resolved config "
                                    f"to a file when the shape is published; matrix resolves shapes without writing "
                                    f"(the golden is its one output): take the flag out of the shape's argv")


def resolve_shape(ctx: Context[Any], shape: Shape, workdir: Path) -> list[dict[str, Any]]:
    """One shape's cells, or a single cell holding its error: the record is built as the
    server builds it (preset, config file, env, flags) and published with the facts."""
    argv = list(shape.argv)
    if shape.config is not None:
        config = workdir / f"{shape.name}.json"
        config.write_text(json.dumps(shape.config), encoding="utf-8")
        argv = ["--config", str(config), *argv]
    record_type = ctx.record_type
    assert record_type is not None, "a generated package's context knows its record type"
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            record = record_type.from_cli(argv, prog="matrix", environ=dict(shape.env))
        with ctx.restoring():
            ctx.publish(record, role=shape.role, facts=Facts(shape.gpu, shape.model_facts))
            info = ctx.server_info()
    except SystemExit:  # argparse refused the command line, and said why on stderr: all of it is the error
        lines = [line.strip() for line in errors.getvalue().splitlines() if line.strip()]
        return [{"shape": shape.name, "error": _clean(lines, workdir, record_type)}]
    except ConfigError as exc:
        return [{"shape": shape.name, "error": _clean([f"{type(exc).__name__}: {exc}"], workdir, record_type)}]
    return [json.loads(_clean([json.dumps(c, sort_keys=True)], workdir)) for c in _cells(shape, info)]


def _clean(lines: Sequence[str], workdir: Path, record_type: type | None = None) -> str:
    """A message or cell without the paths of this machine (the golden file is the same on
    every machine): a shape's config file reads as $CONFIG/<shape>.json, the generated
    package's CONFIG.md, which the record's messages point at, as $PACKAGE/CONFIG.md however
    the package is installed."""
    text = " ".join(lines).replace(str(workdir), CONFIG_NAME)
    if record_type is not None:
        module = sys.modules.get(record_type.__module__)
        for docs in {reference(getattr(module, "SCHEMA_PATH", None)), reference(cls=record_type)}:
            text = text.replace(docs, f"{PACKAGE_NAME}/CONFIG.md")
    return text


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Publish logs each forced rule and the non-default values; a matrix holds them in its
    cells (`forced_over`, layer and source) and prints no log lines."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)


def resolve(ctx: Context[Any], shapes: Sequence[Shape]) -> list[dict[str, Any]]:
    """Every shape's cells, shapes in file order and leaves sorted."""
    with tempfile.TemporaryDirectory(prefix="configbags-matrix-") as tmp, _quiet():
        return [cell for shape in shapes for cell in resolve_shape(ctx, shape, Path(tmp))]


def dumps(cells: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(c, sort_keys=True, ensure_ascii=False) + "\n" for c in cells)


VALUE_CELL: tuple[str, ...] = ("shape", "leaf", "value", "layer")  # what `_cells` writes for every leaf
CELL_EXTRAS: tuple[str, ...] = ("rule", "source", "forced_over")  # and where its origin has them
ERROR_CELL: tuple[str, ...] = ("shape", "error")  # what `resolve_shape` writes for a shape the server refuses
_KIND_OF = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}


def loads(text: str, source: str) -> list[dict[str, Any]]:
    """The golden's cells. Each line is checked as the cell `--write` writes (a value cell
    or a shape's error cell, of text fields), and each (shape, leaf) is held once: the
    comparison reads every field, and a second cell for one key would decide the check by
    line order while the golden shows a reader the other. ConfigError naming the line."""
    out: list[dict[str, Any]] = []
    first: dict[tuple[str, str], int] = {}  # (shape, leaf) -> the line of its cell
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        regenerate = "regenerate with `configbags matrix --write`"
        try:
            cell = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{source}:{number}: not a matrix cell ({exc}); {regenerate}") from None
        why = cell_problem(cell)
        if why is not None:
            raise ConfigError(f"{source}:{number}: not a matrix cell ({why}); {regenerate}")
        key = _key(cell)
        if key in first:
            raise ConfigError(f"{source}:{number}: a second cell for {shown_text(key[0], _WHOLE)} "
                              f"{shown_text(key[1], _WHOLE) or '(shape)'} (the first at line {first[key]}); "
                              f"{regenerate}")
        first[key] = number
        out.append(cell)
    return out


def cell_problem(cell: Any) -> str | None:
    """What makes `cell` (a golden line's JSON) no cell `--write` writes, or None."""
    if not isinstance(cell, dict):
        return f"{_KIND_OF.get(type(cell), 'a value')}, not an object"
    if "error" in cell:
        required, allowed, kind = ERROR_CELL, ERROR_CELL, "error cell"
    else:
        required, allowed, kind = VALUE_CELL, VALUE_CELL + CELL_EXTRAS, "cell"
    missing = [k for k in required if k not in cell]
    if missing:
        return "no " + ", ".join(f'"{k}"' for k in missing)
    unknown = sorted(set(cell) - set(allowed))
    if unknown:  # the golden's own key, escaped: it is someone else's text
        return f"{'a key' if len(unknown) == 1 else 'keys'} no {kind} has: " + ", ".join(
            f'"{shown_text(k, 60)}"' for k in unknown)
    # every field but the value is text (`_side` joins them, `_key` sorts by them)
    wrong = next((k for k in allowed if k != "value" and k in cell and not isinstance(cell[k], str)), None)
    return None if wrong is None else f'"{wrong}" is {_KIND_OF.get(type(cell[wrong]), "a value")}, not a string'


# -- comparing -----------------------------------------------------------------------------
def _key(cell: Mapping[str, Any]) -> tuple[str, str]:
    return cell["shape"], cell.get("leaf", "")


_WHOLE = 1 << 20  # escaped, never cut: two names alike in their first characters stay apart


def _side(cell: Mapping[str, Any] | None) -> str:
    if cell is None:
        return "(no cell)"
    if "error" in cell:
        return f"error: {shown_text(cell['error'], _WHOLE)}"
    where = cell["layer"] + (f" rule {cell['rule']}" if "rule" in cell else "") + (
        f" from {cell['source']}" if "source" in cell else "") + (
        f" over {cell['forced_over']}" if "forced_over" in cell else "")
    return f"{json.dumps(cell['value'])} [{where}]"


def changes(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each changed cell as `shape leaf: OLD [provenance] -> NEW [provenance]`."""
    before = {_key(c): c for c in old}
    after = {_key(c): c for c in new}
    out = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        if not same_value(a, b):  # type by type: a golden `true` or `1.0` is no resolved `1`
            shape, leaf = key
            # the shapes file's names (and a shape's error, which may quote its argv) are
            # someone else's text: escaped, so no line of a CI log can be forged
            out.append(f"{shown_text(shape, _WHOLE)} {leaf or '(shape)'}: {_side(a)} -> {_side(b)}")
    return out


def coverage(cells: Sequence[Mapping[str, Any]], shapes: Sequence[Shape], rules: Sequence[str],
             presets: Sequence[str]) -> tuple[list[str], list[str]]:
    """The rules that set no cell and the presets no shape uses."""
    applied = {c.get("rule") for c in cells}
    used = set()
    for shape in shapes:
        for i, arg in enumerate(shape.argv):
            if arg == "--preset" and i + 1 < len(shape.argv):
                used.add(shape.argv[i + 1])
            elif arg.startswith("--preset="):
                used.add(arg.partition("=")[2])
    return [r for r in rules if r not in applied], [p for p in presets if p not in used]


# -- the golden file -----------------------------------------------------------------------
def _config_files(shape: Shape) -> list[Path]:
    """The files a shape's argv names with `--config FILE` or `--config=FILE`, as the
    working folder and the project read them (the record resolves them against the project)."""
    named = [value for flag, value in itertools.pairwise(shape.argv) if flag == "--config"]
    named += [arg.partition("=")[2] for arg in shape.argv if arg.startswith("--config=")]
    return [path for text in named for path in (Path(text), project_path(text))]


def check_golden_apart(shapes: Shapes, registry: Registry) -> None:
    """Refuse a golden file that --write could not write as a file of its own: one of the
    files the matrix reads (the shapes file, a shape's model config, by any spelling or
    link, as `--dump-config` is kept apart from its inputs by `os.path.samefile`; a file a
    shape's argv gives as `--config`; the file a secret's `NAME_FILE` in a shape's `env:`
    names, whose key would be lost and then read back as the golden), or a
    path `write_text_atomic` refuses (a folder, a FIFO that would block the write, a
    device, a link to one). ConfigError naming the shapes file and `golden:`."""
    golden = shapes.golden
    inputs = [("the shapes file", shapes.path),
              *((f"the model config of shape {s.name!r}", s.model) for s in shapes.shapes if s.model is not None),
              *((f"a --config file of shape {s.name!r}", path) for s in shapes.shapes for path in _config_files(s)),
              # the record opens the variable's path as the server would, from the working folder
              *((f"{secret.what} in shape {s.name!r}", Path(secret.path))
                for s in shapes.shapes for secret in secret_file_inputs(registry, s.env))]
    for what, given in inputs:
        try:
            same = os.path.samefile(golden, given)
        except OSError:  # the golden does not exist yet: no input
            continue
        if same:
            raise _bad(shapes.path, f"golden {golden} is {what}: --write would replace it with the cells; name a "
                                    f"file of its own in `golden:`")
    # a link is written through (write_text_atomic), so what it leads to is what is checked
    if golden.is_symlink():
        check_output_path(Path(os.path.realpath(golden)), f"{shapes.path}: golden {golden}, a link to")
    else:
        check_output_path(golden, f"{shapes.path}: golden")


def read_golden(golden: Path) -> str:
    """The golden file's text for --check, read as every input file is (a FIFO or a device
    is named as what it is and never opened, so it cannot hang the check)."""
    if not golden.exists() and not golden.is_symlink():
        raise ConfigError(f"{golden} does not exist; write it with `configbags matrix --write`")
    try:
        return read_text_limited(golden)
    except OSError as exc:
        raise ConfigError(f"{golden} cannot be read: {exc.strerror or exc}; write it with "
                          f"`configbags matrix --write`") from None


# -- the command ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = UsageErrors(
        prog="configbags matrix", allow_abbrev=False,
        description="Resolve declared launch shapes x every leaf (value, layer, rule) and hold the result "
                    "as a golden file.")
    parser.add_argument("--shapes", type=project_path, metavar="FILE",
                        help=f"the shapes file (default: {SHAPES_FILE} in the project's schema folder)")
    parser.add_argument("--package", metavar="PKG", help="the generated package (default: the shapes "
                        "file's `package`, else the project's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail (exit 1) when a cell differs from the golden")
    mode.add_argument("--write", action="store_true", help="write the golden file")
    mode.add_argument("--against", metavar="REV", help="compare with the golden file at a git revision")
    parser.add_argument("--coverage", action="store_true",
                        help="also fail when a rule sets no cell or a preset is used by no shape")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    shapes: Shapes | None = None
    try:
        path = ns.shapes if ns.shapes is not None else load_project().schema / SHAPES_FILE
        shapes = read_shapes(path)
        ctx = named_context(ns.package or shapes.package)
        if ns.write:
            check_golden_apart(shapes, ctx.registry)  # before any shape is resolved: a refusal costs nothing
        check_against_schema(ctx, shapes)
        cells = resolve(ctx, shapes.shapes)
        text = dumps(cells)
        if ns.write:
            written = write_text_atomic(shapes.golden, text, f"{shapes.path}: golden")
            print(f"configbags matrix: wrote {shown_text(str(written), _WHOLE)} ({len(shapes.shapes)} shapes, "
                  f"{len(cells)} cells)")
            return 0
        if ns.against is not None:
            golden, label = loads(show(ns.against, shapes.golden, "--against"), f"{ns.against}:{shapes.golden}"), ns.against
        elif ns.check:
            golden, label = loads(read_golden(shapes.golden), str(shapes.golden)), shown_text(str(shapes.golden), _WHOLE)
        else:
            print(text, end="")
            return 0
    except ConfigError as exc:
        # the golden's name and the models' come from the shapes file, into messages of every helper
        message = str(exc) if shapes is None else _escaped(str(exc), shapes.named_paths())
        print_stderr(f"configbags matrix: error: {message}")
        return 2
    changed = changes(golden, cells)
    for line in changed:
        print(line)
    failed = bool(changed)
    if ns.coverage:
        rules, presets = coverage(cells, shapes.shapes, [r.id for r in ctx.registry.rules], list(ctx.registry.presets))
        for rule in rules:
            print(f"configbags matrix: rule {rule} sets no cell; add a shape that triggers it to {shapes.path}")
        for preset in presets:
            print(f"configbags matrix: preset {preset} is used by no shape; add one to {shapes.path}")
        failed = failed or bool(rules or presets)
    verdict = f"{len(changed)} changed cell(s) against {label}" if changed else f"resolution matches {label}"
    print_stderr(f"configbags matrix: {verdict} ({len(shapes.shapes)} shapes, {len(cells)} cells)")
    if changed and not ns.against:
        print_stderr("configbags matrix: if the change is deliberate, record it with `configbags matrix --write`")
    return 1 if failed else 0
