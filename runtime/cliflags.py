"""The command line of a generated record, table-driven: one `add_argument` per leaf (and
one hidden one per old flag), read from its `LeafSpec` in the registry, grouped by
namespace. Generated code calls `add_leaf_arguments`; there is no per-leaf argparse code
to generate, format or review. The texts --help prints here (default, bare flag,
deprecation) are also those CONFIG.md prints (the generator imports them)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from configbags.runtime.leaftypes import Policy
from configbags.runtime.record import RENAMED_DEST, OnceSecret, json_value
from configbags.runtime.registry import REDACTED, LeafSpec, Registry
from configbags.runtime.spelling import flag_of

_CONVERTERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str, "json": json_value}
_POLICY_NOTES = {Policy.STARTUP: "", Policy.LOAD_TIME: "; may be resolved at load time",
                 Policy.RUNTIME: "; tunable at runtime"}


def add_leaf_arguments(parser: argparse.ArgumentParser, registry: Registry) -> None:
    """One argument group per namespace that has leaves (its path and doc), in schema
    order, holding each leaf's flag and its old names' hidden flags."""
    group: Any = None
    namespace = None
    for spec in registry.leaves.values():
        if spec.namespace != namespace:
            namespace = spec.namespace
            doc = registry.namespaces[namespace].doc
            group = parser.add_argument_group(namespace, doc.replace("%", "%%"))
        if spec.flags:
            group.add_argument(*spec.flags, **argument_options(spec))
        for old in spec.renamed_from:
            group.add_argument(flag_of(old.name, old.flag),
                               **argument_options(spec, dest=RENAMED_DEST + old.name, hidden=True))


def argument_options(spec: LeafSpec, *, dest: str | None = None, hidden: bool = False) -> dict[str, Any]:
    """`add_argument`'s keywords for a leaf: the value lands in `dest` (the leaf's name
    unless given), an unset flag leaves no attribute (so it cannot mask --config)."""
    t = spec.type
    options: dict[str, Any] = {"dest": dest or spec.name}
    takes_value = True
    if spec.has_const and spec.nargs == 0:  # the flag alone, never with a value
        options.update(action="store_const", const=spec.const)
        takes_value = False
    elif t.base == "bool":
        options["action"] = argparse.BooleanOptionalAction
        takes_value = False
    elif t.item is not None:
        options.update(type=_CONVERTERS[t.item.base], nargs=spec.nargs or "+")
    else:
        options["type"] = _CONVERTERS[t.base]
        if spec.secret:  # a second key would silently replace the first
            options["action"] = OnceSecret
        if spec.has_const:  # the bare flag stands for const (already of the leaf's type)
            options.update(nargs="?", const=spec.const)
    if spec.choices is not None and takes_value:
        options["choices"] = spec.choices
    options["default"] = argparse.SUPPRESS
    options["help"] = argparse.SUPPRESS if hidden or spec.suppress_help else help_text(spec)
    if takes_value:
        options["metavar"] = spec.name.upper()
    return options


def help_text(spec: LeafSpec) -> str:
    """The leaf's --help line: its help, then default, choices, fallback, what the bare
    flag means, policy and env variable (argparse %-formats it, so % is doubled)."""
    default = "required" if spec.required else f"default: {shown_default(spec)}"
    if spec.choices is not None and spec.type.base != "bool":
        default += "; one of: " + ", ".join(map(str, spec.choices))
    extra = f"; unset falls back to {spec.fallback!r}" if spec.has_fallback else ""
    extra += f"; {bare_flag(spec)}" if bare_flag(spec) else ""
    deprecated = f" DEPRECATED: {deprecation_note(spec)}" if spec.deprecated else ""
    env = f"; env {spec.env}" if spec.env else ""
    text = f"{spec.help}{deprecated} ({default}{extra}{_POLICY_NOTES[spec.policy]}{env})"
    return text.replace("%", "%%")


def bare_flag(spec: LeafSpec) -> str:
    """What the flag given alone means, when that is not the usual (a bool's True, or an
    error); empty otherwise. Shared by --help and CONFIG.md."""
    if not spec.flags:
        return ""
    if spec.has_const:
        verb = "sets" if spec.nargs == 0 else "means"
        return f"the flag alone {verb} {shown(spec.const)}"
    if spec.nargs == "*":
        return "the flag alone gives an empty list"
    return ""


def deprecation_note(spec: LeafSpec) -> str:
    dep = spec.deprecated
    if dep is None:
        return ""
    use = f"; use {dep.use}" if dep.use else ""
    until = f", removed in {dep.remove_in}" if dep.remove_in else ""
    return f"since {dep.since}{until}{use}."


def shown_default(spec: LeafSpec) -> str:
    return REDACTED if spec.secret and spec.default is not None else shown(spec.default)


def shown(value: Any) -> str:
    """A value as --help and CONFIG.md show it (lists and mappings as JSON)."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return repr(value) if isinstance(value, str) else str(value)


def secret_flags(registry: Registry) -> frozenset[str]:
    """Every spelling of every secret leaf's flag (its own, aliases, old names)."""
    return frozenset(flag for spec in registry.leaves.values() if spec.secret
                     for claim in [spec.spellings] for flag in (*claim.flags, *claim.aliases, *claim.old))


def secret_variables(registry: Registry) -> frozenset[str]:
    """The environment variable of every secret leaf."""
    return frozenset(spec.env for spec in registry.leaves.values() if spec.secret and spec.env)


def shown_argv(argv: Sequence[str], secret: Callable[[str], bool],
               secret_variable: Callable[[str], bool] | None = None) -> list[str]:
    """`argv` as it may be printed (a suggested launch line, a log, an observation file):
    the value after each flag `secret` says is one (`--api-key K`, `--api-key=K`, a short
    alias's attached `-kK`) reads REDACTED; with `secret_variable`, so does the value of an assignment to a variable it
    names, wherever it stands in its word (`env SGLANG_API_KEY=K cmd`, and every spelling of an env option:
    `--env=SGLANG_API_KEY=K`, `-e=...`, `-eSGLANG_API_KEY=K`, `--set-env-vars=A=1,SGLANG_API_KEY=K`); an argument holding a shell command (`sh -c "...
    --api-key K"`) is judged word by word (REDACTED whole where it does not split as shell
    words). Everything else is as given. `secret` is usually
    `secret_flags(registry).__contains__`."""
    out: list[str] = []
    hide = False
    for arg in argv:
        name, eq, value = arg.partition("=")
        # a dash a word processor made of `--` (`—api-key`) still marks a flag
        flag = "--" + name[1:] if name[:1] in _DASHES else name
        if hide:
            out.append(REDACTED)
            hide = False
        elif any(c.isspace() for c in arg):
            out.append(_shown_shell(arg, secret, secret_variable))  # `"--api-key K"` as one word too
        elif flag.startswith("-") and secret(flag):
            out.append(f"{name}={REDACTED}" if eq and value else arg)
            hide = not (eq and value)  # `--api-key= K`: the key is the next word
        elif len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and secret(arg[:2]):
            out.append(f"{arg[:2]}{REDACTED}")  # a short alias with its value attached (`-kKEY`), as argparse takes it
        elif secret_variable is not None and (cut := _secret_assignment(arg, secret_variable)) is not None:
            out.append(arg[:cut] + REDACTED)
        else:
            out.append(arg)
    return out


_DASHES = frozenset("\u2012\u2013\u2014\u2015\u2212")
# `NAME=` anywhere in a word; the name may run on from what precedes it (`-eNAME=`)
_ASSIGNED = re.compile(r"([^\W\d]\w*)=")
MAX_VARIABLE_CHARS = 256  # longer than any variable name: bounds the tails of a long word tried as one


def _secret_assignment(word: str, secret_variable: Callable[[str], bool]) -> int | None:
    """Where the value starts of the first assignment in `word` to a variable
    `secret_variable` names, or None. Every tail of the text before an `=` is tried as the
    name, so whatever precedes it in the same word (`--env=`, `-e=`, `-e`, `A=1,`) does not
    hide it: one rule for every tool's spelling of an env option (docker, podman, kubectl
    run, gcloud)."""
    for match in _ASSIGNED.finditer(word):
        name = match.group(1)
        tails = range(max(0, len(name) - MAX_VARIABLE_CHARS), len(name))
        if any(not name[i].isdigit() and secret_variable(name[i:]) for i in tails):
            return match.end()
    return None


def _shown_shell(text: str, secret: Callable[[str], bool], secret_variable: Callable[[str], bool] | None) -> str:
    """A word holding whitespace (a `sh -c` script), judged as the shell words it splits
    into, and shown as written but for each word that holds a secret: that word's text is
    replaced by the word as shown (so `;`, `&&`, quotes and spacing stay, and the record
    still says what ran). Every space it holds splits it, a Unicode one too (`--api-key\u00a0K`
    reads as a flag and its key), so each word is shorter than `text` (a quote or an escape
    is gone where a space did not split) and the judging of the words ends. Text that is
    not shell words (an unclosed quote) is REDACTED whole: no telling where a key in it starts."""
    tokens = _shell_words(text)
    if tokens is None or any(len(word) >= len(text) for word, _, _ in tokens):
        return REDACTED  # (the second cannot happen, see above; never judge a word by itself again)
    words = [word for word, _, _ in tokens]
    shown = shown_argv(words, secret, secret_variable)
    out, done = [], 0
    for (word, start, end), new in zip(tokens, shown, strict=True):
        if new != word:
            out += [text[done:start], shlex.quote(new) if any(c.isspace() for c in new) else new]
            done = end
    return "".join([*out, text[done:]])


_OPERATORS = frozenset(";&|")  # they end a word and are kept as written (`a;b`, `x&&y`)


def _shell_words(text: str) -> list[tuple[str, int, int]] | None:
    """The POSIX shell words of `text`, each as (its value, quotes and escapes taken off;
    where it starts; where it ends): `'...'`, `"..."` (with its backslash escapes), a
    backslash, and `$(...)`, `${...}` and backquotes kept whole within a word; a run of
    `;`, `&` or `|` is a word of its own. None where a quote or a substitution is not closed."""
    words: list[tuple[str, int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        if text[i] in _OPERATORS:
            while i < n and text[i] in _OPERATORS:
                i += 1
            words.append((text[start:i], start, i))
            continue
        value: list[str] = []
        while i < n and not text[i].isspace() and text[i] not in _OPERATORS:
            c = text[i]
            if c == "'":
                close = text.find("'", i + 1)
                if close < 0:
                    return None
                value.append(text[i + 1:close])
                i = close + 1
            elif c == '"':
                i += 1
                while i < n and text[i] != '"':
                    escaped = text[i] == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n'
                    value.append(text[i + 1] if escaped else text[i])
                    i += 2 if escaped else 1
                if i >= n:
                    return None
                i += 1
            elif c == "\\":
                if i + 1 >= n:
                    return None
                value.append(text[i + 1])
                i += 2
            elif c == "`" or text.startswith(("$(", "${"), i):
                ends = _closing(text, i)
                if ends is None:
                    return None
                value.append(text[i:ends])
                i = ends
            else:
                value.append(c)
                i += 1
        words.append(("".join(value), start, i))
    return words


def _closing(text: str, i: int) -> int | None:
    """Where the substitution opening at `i` (`$(`, `${` or a backquote) ends, nested ones
    counted; None if it never does."""
    if text[i] == "`":
        close = text.find("`", i + 1)
        return None if close < 0 else close + 1
    opening, closing = text[i + 1], ")" if text[i + 1] == "(" else "}"
    depth = 0
    for j in range(i + 1, len(text)):
        if text[j] == opening:
            depth += 1
        elif text[j] == closing:
            depth -= 1
            if depth == 0:
                return j + 1
    return None


