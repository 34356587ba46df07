"""`configbags lint PATHS --schema S`: check every flag, environment variable and config
key in deployment files against a schema version, before a pod crashes on it.

    configbags lint deploy/ scripts/launch.sh                 # against the project's schema
    configbags lint charts/server/values.yaml --target v0.6   # against a future release
    configbags lint k8s/ --format github --fail-on warning

It reads shell and Python launch lines, YAML and JSON config files, Kubernetes manifests
(containers' `command`, `args` and `env` in any workload or custom resource, config files
in ConfigMaps), Helm values, Dockerfiles and compose files (`configbags.evolve.formats`,
one parser per format), and reports unknown spellings (with a did-you-mean), deprecated
ones (the replacement and the release that removes them), removed ones (since when, and
what replaced them) and values that do not fit the leaf's type, choices or range, each at
file:line."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
import yaml

from configbags.evolve import report
from configbags.evolve.formats import (
    DEFAULT_LAUNCHERS,
    Command,
    ConfigEntry,
    EnvVar,
    FormatError,
    Token,
    Unnamed,
    dynamic,
    parse_file,
)
from configbags.evolve.revisions import checkout
from configbags.evolve.rules import LINT_RULES, Finding, fails, parse_severity
from configbags.evolve.view import LeafView, OldSpelling, SchemaInvalid, SchemaView, load_view
from configbags.runtime import nested
from configbags.runtime.cliflags import argument_options
from configbags.runtime.cmdline import UsageErrors, inert, print_stderr, shown_flag, unrecognized
from configbags.runtime.errors import ConfigError, LeafValueError, RecordError, YamlError
from configbags.runtime.keys import (
    ADMIN_KEY_LEAF,
    KEY_LEAVES,
    SAME_KEY,
    SAME_KEY_FIX,
    UNUSABLE_FIX,
    same_key,
    unusable,
)
from configbags.runtime.leaftypes import (
    check_bounds,
    closest,
    float_from_text,
    int_from_text,
    none_like,
)
from configbags.runtime.project import load_project, project_path
from configbags.runtime.record import (
    FILE_SUFFIX,
    KUBERNETES_ENV,
    RENAMED_DEST,
    add_config_flag,
    json_value,
    nearest_variable,
    parse_env,
    secret_lookalike,
)
from configbags.runtime.registry import LeafSpec
from configbags.runtime.yamlsafe import json_named

# The record's own flags (runtime.record.add_config_flag): not leaves, always known.
RECORD_FLAGS = frozenset({"--config", "--preset", "--dump-config", "--help", "-h"})
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".configbags-cache", "build", "dist"})


@attrs.frozen
class Spelling:
    leaf: LeafView
    old: OldSpelling | None = None  # the renamed_from entry, for an old spelling


def _cli_value(leaf: LeafView, texts: Sequence[str]) -> Any:
    """Command-line text as the generated parser converts it (argparse `type=`): numbers in
    the runtime's one grammar (`1_0` and non-ASCII digits are refused, as the server does)."""
    t = leaf.type
    item = t.item.base if t.item is not None else t.base

    def one(text: str) -> Any:
        if item == "int":
            return int_from_text(text)
        if item == "float":
            return float_from_text(text)
        if item == "json":
            return json_value(text)
        return text

    return [one(x) for x in texts] if t.item is not None else one(texts[0])


def _value_at(args: Sequence[Token], i: int, flag_prefix: str) -> bool:
    """Whether `args[i]` exists and is a value rather than the next flag (one that starts
    with `flag_prefix`)."""
    return i < len(args) and not args[i].text.startswith(flag_prefix)


def _record_flag_value(flag: str, inline: Token | None, args: Sequence[Token], i: int) -> tuple[list[Token], int]:
    """The value a record flag takes (none for `--help`) and the index after it."""
    if inline is not None:
        return [inline], i
    if flag != "--help" and _value_at(args, i, "-"):
        return [args[i]], i + 1
    return [], i


def _leaf_flag_values(leaf: LeafView, inline: Token | None, args: Sequence[Token],
                      i: int) -> tuple[list[Token], int]:
    """The tokens a leaf's flag takes, as the generated parser reads them (a list leaf takes
    every word up to the next flag, a negatable one none), and the index after them."""
    if inline is not None:
        return [inline], i
    if leaf.negatable:
        return [], i
    if leaf.type.item is None:
        return ([args[i]], i + 1) if _value_at(args, i, "--") else ([], i)
    end = i
    while _value_at(args, end, "--"):
        end += 1
    return list(args[i:end]), end


class _Refused(Exception):
    """The server's parser refused a command line (its usage error, without the exit)."""


class _ServerParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


class _Unknown(str):
    """A word whose value is not known here (a shell variable, a template): every flag's
    type and choices take it, and left over it is no stray word (it may expand to none; a
    line holding one is checked for refusals, not for stray words)."""


def _lenient(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def take(text: str) -> Any:
        return text if isinstance(text, _Unknown) else convert(text)

    return take


class _Choices(tuple[Any, ...]):
    def __contains__(self, value: object) -> bool:
        return isinstance(value, _Unknown) or super().__contains__(value)


def _cli_spec(leaf: LeafView) -> LeafSpec:
    """The parts of the leaf's record its flag is declared from."""
    return LeafSpec(name=leaf.name, namespace=leaf.namespace, type=leaf.type, owner=leaf.owner, choices=leaf.choices,
                    secret=leaf.secret, flags=leaf.declared_flags, has_const=leaf.has_const, const=leaf.const,
                    nargs=leaf.nargs)


def server_parser(view: SchemaView) -> argparse.ArgumentParser:
    """The server's own command-line parser for the schema (the record's flags, and each
    leaf's flag and old flags declared by `runtime.cliflags.argument_options`, as the
    generated record declares them), but raising `_Refused` instead of exiting, and taking
    an `_Unknown` word as any value."""
    parser = _ServerParser(prog="server", allow_abbrev=False, add_help=False)
    parser.add_argument("-h", "--help", nargs="?", const="", default=argparse.SUPPRESS)
    add_config_flag(parser, tuple(view.presets))

    def declare(flags: Sequence[str], options: dict[str, Any]) -> None:
        if "type" in options:
            # the converter the parser registered for it (add_config_flag: the one number grammar)
            options["type"] = _lenient(parser._registry_get("type", options["type"], options["type"]))
        if options.get("choices") is not None:
            options["choices"] = _Choices(options["choices"])
        parser.add_argument(*flags, **options)

    for leaf in view.leaves.values():
        spec = _cli_spec(leaf)
        if spec.flags:
            declare(spec.flags, argument_options(spec, hidden=True))
        for old in leaf.old:
            declare([old.flag], argument_options(spec, dest=RENAMED_DEST + old.name, hidden=True))
    return parser


def _refusal(parser: argparse.ArgumentParser, args: Sequence[Token],
             structured: Mapping[str, dict[str, Any]]) -> tuple[str, int] | None:
    """Why the server's parser refuses these words (never echoing a value), and the line.
    A structured json leaf's dotted keys are folded into its value first, as the server does."""
    words: list[str] = []
    token_of: dict[int, Token] = {}
    for t in args:
        given = _parser_words(t)
        words += given
        token_of.update((id(w), t) for w in given)
    try:
        if structured:
            try:
                words = nested.fold_dotted(parser, words, structured)
            except _Refused:
                if not any(t.dynamic for t in args):
                    raise
                # a template's value for a dotted key: only it knows; the rest is still checked
        _, extras = parser.parse_known_args(words)
    except _Refused as exc:
        message = str(exc)
        said = {w.strip(":,;()'\"") for w in message.split()}  # `argument --tp-size: ...`
        named = next((t for t in args if t.text.startswith("-") and t.text.partition("=")[0] in said), args[0])
        return message, named.line
    stray = [w for w in extras if not isinstance(w, _Unknown)]
    if not stray or any(t.dynamic for t in args):
        return None  # a template's words may be split over several (`{{ .Values.x }}`): only it knows
    first = token_of.get(id(stray[0]), args[0])
    return unrecognized(parser, stray), first.line


def _parser_words(token: Token) -> list[str]:
    """A token as the server's parser is given it: a word the file cannot know is
    `_Unknown`, and in `--tp-size=$TP` the flag is known and its value is not."""
    if not token.dynamic:
        return [token.text]
    flag, eq, value = token.text.partition("=")
    if eq and flag.startswith("--") and not dynamic(flag):
        return [flag, _Unknown(value)]
    return [_Unknown(token.text)]


class Linter:
    """Checks parsed files against one schema view; `history`, an older view (the working
    schema when linting against a future `--target`), explains spellings the target lost."""

    def __init__(self, view: SchemaView, history: SchemaView | None = None, *,
                 launched: set[str] | None = None) -> None:
        self.view = view
        self.history = history
        self.flags: dict[str, Spelling] = {}
        self.keys: dict[str, Spelling] = {}
        self.envs: dict[str, Spelling] = {}
        for leaf in view.leaves.values():
            for flag in leaf.flags:
                self.flags[flag] = Spelling(leaf)
            self.keys[leaf.name] = Spelling(leaf)
            if leaf.env:
                self.envs[leaf.env] = Spelling(leaf)
        for leaf in view.leaves.values():  # old spellings never shadow a current one
            for old in leaf.old:
                old_flags = [old.flag, *(["--no-" + old.flag[2:]] if leaf.negatable else [])]
                for flag in old_flags:
                    self.flags.setdefault(flag, Spelling(leaf, old))
                self.keys.setdefault(old.name, Spelling(leaf, old))
                if old.env:
                    self.envs.setdefault(old.env, Spelling(leaf, old))
        # a secret's variable may be given as NAME_FILE (a path), as the server reads it
        self.secret_files = {name + FILE_SUFFIX: spelling for name, spelling in self.envs.items()
                             if spelling.leaf.secret and name + FILE_SUFFIX not in self.envs}
        # linting for an upgrade, a file of the keys the target lost is a config file deployed
        # today, which the target must refuse: those keys count as a config file's too
        self.lost_keys = frozenset() if history is None else frozenset(
            name for name, (_, kind) in history.spelling_index().items()
            if kind in ("key", "old-key") and name not in self.keys)
        self.presets = frozenset(view.presets)
        # the launcher patterns that matched a launch line (the caller's set, if given)
        self.launched: set[str] = launched if launched is not None else set()
        self.parser = server_parser(view)
        # json leaves with a `structure:`: their dotted keys (`--compile-cfg.level 2`) are the server's too
        self.structured = {leaf.name: nested.structure_schema(leaf.structure, optional=leaf.type.optional)
                           for leaf in view.leaves.values() if leaf.structure is not None}

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one linter per run, spellings repeat across files
    def _did_you_mean(self, name: str, kind: str) -> str:
        if kind == "env":  # the server's own did-you-mean: compared without the shared prefix
            near = nearest_variable(self.view.env_prefix, name, self.envs)
            return f" (did you mean {near!r}?)" if near else ""
        pool = {"flag": self.flags, "key": self.keys}[kind]
        return closest(name, pool)

    # -- spellings ---------------------------------------------------------------------
    def _lifecycle(self, spelling: Spelling, written: str, file: str, line: int) -> Finding | None:
        leaf, old, view = spelling.leaf, spelling.old, self.view
        now = leaf.primary_flag if written.startswith("--") else (leaf.env if written.isupper() and leaf.env
                                                                  else leaf.name)
        if old is not None:
            if view.version_reached(old.remove_in):
                return Finding("lint-removed", written, f"{written} was removed in {old.remove_in} (the schema is at "
                               f"{view.version}); it was an old spelling of {leaf.name!r}", file, line,
                               f"write {now}")
            return Finding("lint-deprecated", written, f"{written} is an old spelling of {leaf.name!r}"
                           + (f" since {old.since}" if old.since else "")
                           + (f"; it stops working in {old.remove_in}" if old.remove_in else ""), file, line,
                           f"write {now}")
        dep = leaf.deprecated
        if dep is None:
            return None
        use = self.view.leaves.get(dep.use) if dep.use else None
        if use is None:
            instead = "remove it"
        else:
            instead = f"set {use.primary_flag if written.startswith('--') and use.primary_flag else use.name} instead"
        if view.version_reached(dep.remove_in):
            return Finding("lint-removed", written, f"{written} ({leaf.name!r}) was removed in {dep.remove_in} "
                           f"(deprecated since {dep.since}; the schema is at {view.version})", file, line, instead)
        return Finding("lint-deprecated", written, f"{written} ({leaf.name!r}) is deprecated since {dep.since}"
                       + (f" and stops working in {dep.remove_in}" if dep.remove_in else ""), file, line, instead)

    def _unknown(self, written: str, kind: str, file: str, line: int) -> Finding:
        if self.history is not None:
            gone = self.history.spelling_index().get(written)
            if gone is not None:
                return Finding("lint-removed", written, f"{written} ({gone[0]!r} in {self.history.label}) is gone "
                               f"from {self.view.label} (version {self.view.version})", file, line,
                               "remove it before upgrading")
        what = {"flag": "flag", "key": "config key", "env": "environment variable"}[kind]
        return Finding("lint-unknown", written, f"unknown {what} {written}{self._did_you_mean(written, kind)}",
                       file, line, "see the schema's CONFIG.md for the spellings")

    def _value(self, leaf: LeafView, written: str, value: Any, file: str, line: int, *,
               hidden: bool = False) -> Finding | None:
        """A finding for a value that breaks the leaf, never echoing a secret's value (nor
        any value `hidden`: one held in a Kubernetes Secret)."""
        # a YAML null too: the server refuses a config file's `api_key:` (a template that rendered nothing)
        if leaf.secret and (value is None or isinstance(value, str)) and none_like(value):
            return _none_like_secret(leaf, written, file, line)
        if isinstance(value, str) and (other := self._swallowed(value)) is not None:
            return Finding("lint-bad-value", written, f"the value of {written} holds {other} after a space (the value "
                           f"not shown, as it may be a secret): flags written as one word, which the server takes "
                           f"whole as the value of {written}, never seeing {other}", file, line,
                           "give each flag its own word (its own item of a Kubernetes `args` list)")
        if leaf.name in KEY_LEAVES and isinstance(value, str) and (why := unusable(value)) is not None:
            # the door's own rule (serve refuses the key at start)
            named = written if written == leaf.name else f"{written} ({leaf.name})"
            return Finding("lint-bad-value", written, f"{named} {why}: the server refuses it",
                           file, line, UNUSABLE_FIX)
        try:
            coerced = leaf.type.coerce(value)
            check_bounds(coerced, choices=leaf.choices, minimum=leaf.minimum, maximum=leaf.maximum)
        except LeafValueError as exc:
            why = "it does not fit the leaf's type, choices or range" if leaf.secret or hidden else str(exc)
            return Finding("lint-bad-value", written, f"bad value for {written} ({leaf.name}: {leaf.type}): {why}",
                           file, line, _bounds_hint(leaf))
        return None

    # -- each kind of item -------------------------------------------------------------
    def command(self, command: Command, file: str,
                env_keys: Mapping[str, tuple[Any, int]] | None = None) -> Iterator[Finding]:
        """A launch line; `env_keys`: the door's keys the file's variables give (`env_key_values`)."""
        args = command.args
        if not command.launch and not any(t.text.partition("=")[0] in self.flags for t in args):
            return  # arguments of another program
        found = list(self._flags(command, file, env_keys or {}))
        yield from found
        checked = [f for f in found if f.rule != "lint-unchecked"]  # words it cannot see do not stop the parse
        if command.whole and not checked and args and (refused := _refusal(self.parser, args, self.structured)) is not None:
            why, line = refused
            yield Finding("lint-refused", "launch line", f"the server refuses this launch line: {why}", file, line,
                          "give each flag once, a bool flag alone (or its --no- twin), and no word no flag takes")

    def _flags(self, command: Command, file: str, env_keys: Mapping[str, tuple[Any, int]]) -> Iterator[Finding]:
        """Each flag against the schema: unknown, old or deprecated spellings, bad values,
        the read key given as the admin key too (by a flag, or by a variable the flag leaves
        alone: a flag wins over its variable, as in the server)."""
        args = command.args
        i = 0
        secrets_given: set[str] = set()  # a secret's flag twice is refused by the server
        # leaf -> the old name each flag sets it through ("": a current flag) -> its first flag and word
        leaves_given: dict[str, dict[str, tuple[str, Token]]] = {}
        keys: dict[str, tuple[Any, int]] = {}  # key leaf -> (its text, the line), when known here
        while i < len(args):
            token = args[i]
            i += 1
            flag, eq, inline_text = token.text.partition("=")
            if not token.text.startswith("--") or (token.dynamic and (not eq or dynamic(flag))):
                if token.splits:  # not taken as a flag's value: it stands for words of its own
                    yield _unchecked(token, file)
                continue
            head, cut = shown_flag(token.text)
            if cut and flag != "--":  # a flag and its value as one word: only the flag is ever shown
                yield self._joined(head, file, token.line)
                continue
            given = self.flags.get(flag)
            if given is not None and given.leaf.secret:
                if given.leaf.name in secrets_given and command.whole:  # two branches may each give it
                    yield Finding("lint-bad-value", flag, f"{flag} ({given.leaf.name}) is a secret given twice: the "
                                  f"server refuses it", file, token.line, "give the secret once")
                secrets_given.add(given.leaf.name)
            inline = Token(inline_text, token.line, token.dynamic) if eq else None
            spelling = self.flags.get(flag)
            if flag in RECORD_FLAGS:
                taken, i = _record_flag_value(flag, inline, args, i)
                yield from self._record_flag(flag, taken, file, token.line)
            elif spelling is None and (dotted := self._structured_flag(flag)) is not None:
                taken = [inline] if inline is not None else list(args[i:i + 1])
                i += 0 if inline is not None else len(taken)
                yield from self._dotted_key(dotted, flag, taken, file, token.line)
            elif spelling is None:
                yield self._unknown(flag, "flag", file, token.line)
                if inline is None and _value_at(args, i, "-"):
                    i += 1  # its value
            else:
                yield from (found for found in (self._lifecycle(spelling, flag, file, token.line),
                                                _repeated(spelling, flag, token, leaves_given, file,
                                                          command.whole)) if found is not None)
                taken, i = _leaf_flag_values(spelling.leaf, inline, args, i)
                if spelling.leaf.secret and not taken and inline is None and i < len(args) and not args[i].dynamic \
                        and args[i].text.startswith("-") and not self._known(args[i].text):
                    # most likely the secret itself, starting with a dash: never shown as an unknown flag
                    yield Finding("lint-bad-value", flag, f"{flag} ({spelling.leaf.name}) is followed by a word that "
                                  f"starts with `-` and is no flag (not shown, as it may be the secret): the server "
                                  f"takes it for a flag and refuses the launch line", file, token.line,
                                  f"write {flag}=VALUE for a value that starts with a dash")
                    i += 1
                    continue
                yield from self._leaf_flag(spelling.leaf, flag, inline is not None, taken, file, token.line)
                if spelling.leaf.name in KEY_LEAVES and len(taken) == 1 and not taken[0].dynamic:
                    keys[spelling.leaf.name] = (taken[0].text, taken[0].line)
        if command.whole:
            yield from _same_key({**env_keys, **keys}, file)

    def _known(self, word: str) -> bool:
        flag = word.partition("=")[0]
        return flag in self.flags or flag in RECORD_FLAGS

    def _joined(self, head: str, file: str, line: int) -> Finding:
        """A word that starts with a flag and holds more than `--flag=VALUE` (a space, a
        no-break space): the server takes no flag from it. Only the flag part is shown."""
        rest = "the rest of the word not shown, as a value may be a secret"
        fix = (f"write the flag and its value as two words (two items of a Kubernetes `args` list), or "
               f"{head or '--flag'}=VALUE")
        if not head:
            return Finding("lint-refused", "launch line", f"a word starting with `--` is no flag name ({rest}): the "
                           f"server refuses the launch line", file, line, fix)
        if self._known(head):
            return Finding("lint-refused", head, f"{head} and its value are one word ({rest}): the server takes no "
                           f"flag from it and refuses the launch line", file, line, fix)
        found = self._unknown(head, "flag", file, line)
        return attrs.evolve(found, message=f"{found.message}, written as one word with what follows it ({rest})",
                            fix=fix)

    def _swallowed(self, text: str) -> str | None:
        """A known flag written after a space inside a value (`--api-key=K --tp-size=2` as
        one word): the flag the value swallowed."""
        for found in _FLAG_AFTER_SPACE.finditer(text):
            if self._known(found.group(1)):
                return found.group(1).partition("=")[0]
        return None

    def _structured_flag(self, flag: str) -> LeafView | None:
        """The structured json leaf whose dotted key `flag` is (`--compile-cfg.level`), if any."""
        base, dot, _ = flag.partition(".")
        spelling = self.flags.get(base)
        if dot and spelling is not None and spelling.old is None and spelling.leaf.name in self.structured:
            return spelling.leaf
        return None

    def _dotted_key(self, leaf: LeafView, flag: str, taken: Sequence[Token], file: str,
                    line: int) -> Iterator[Finding]:
        """A dotted key, read by the server's own reader (configbags.runtime.nested)."""
        keys = flag.partition(".")[2].split(".")
        try:
            kind = nested.key_kind(self.structured[leaf.name], keys, self.parser, flag)
        except _Refused as exc:
            yield Finding("lint-unknown", flag, f"unknown key: {exc}", file, line,
                          f"see the structure of {leaf.name!r} in the schema's CONFIG.md")
            return
        if not taken:
            yield Finding("lint-bad-value", flag, f"{flag} needs a value", file, line)
        elif not taken[0].dynamic:
            try:
                nested.parse_key(kind, taken[0].text, self.parser, flag)
            except _Refused as exc:
                why = f"bad value for {flag} ({leaf.name})" if leaf.secret else str(exc)
                yield Finding("lint-bad-value", flag, why, file, taken[0].line, "give a value of the key's type")

    def _record_flag(self, flag: str, taken: Sequence[Token], file: str, line: int) -> Iterator[Finding]:
        """The record's own flags: only `--preset` has a value to check."""
        if flag == "--preset" and taken and not taken[0].dynamic and taken[0].text not in self.presets:
            yield Finding("lint-bad-value", flag, f"unknown preset {taken[0].text!r}"
                          f"{closest(taken[0].text, self.presets)}", file, line,
                          f"use one of {', '.join(sorted(self.presets)) or '(none declared)'}")

    def _leaf_flag(self, leaf: LeafView, flag: str, eq: bool, taken: Sequence[Token], file: str,
                   line: int) -> Iterator[Finding]:
        """A leaf's flag with the tokens it took (`eq`: its value was written `--flag=value`)."""
        if leaf.negatable:
            if eq:
                yield Finding("lint-bad-value", flag, f"{flag} takes no value (write {flag} or "
                              f"--no-{leaf.primary_flag[2:] if leaf.primary_flag else leaf.name})", file, line)
            return
        if not taken:
            if not leaf.bare:
                yield Finding("lint-bad-value", flag, f"{flag} needs a value ({leaf.type})", file, line)
            return
        if any(t.dynamic for t in taken):
            return
        try:
            value = _cli_value(leaf, [t.text for t in taken])
        except (ValueError, RecordError) as exc:
            why = "" if leaf.secret else f": {exc}"
            yield Finding("lint-bad-value", flag, f"bad value for {flag} ({leaf.name}: {leaf.type}){why}",
                          file, taken[0].line, _bounds_hint(leaf))
            return
        if (found := self._value(leaf, flag, value, file, taken[0].line)) is not None:
            yield found

    def env(self, var: EnvVar, file: str) -> Iterator[Finding]:
        spelling = self.envs.get(var.name)
        if spelling is None and var.name in self.secret_files:
            yield from self._secret_file(var, self.secret_files[var.name], file)
            return
        if spelling is None:
            prefix = self.view.env_prefix
            secrets = {**{n: sp for n, sp in self.envs.items() if sp.leaf.secret}, **self.secret_files}
            lookalike = secret_lookalike(prefix, var.name, [*self.envs, *self.secret_files], secrets)
            if lookalike is not None:  # the server's own rule: it refuses to start with it
                near, how = lookalike
                yield Finding("lint-unknown", var.name, f"unknown environment variable {var.name}: it {how}, the "
                              f"variable of the secret {secrets[near].leaf.name!r}: the server refuses to start with "
                              f"it (ignored, it would leave the secret unset)", file, var.line, f"rename it to {near}")
            elif prefix and var.name.startswith(prefix) and not KUBERNETES_ENV.match(var.name):
                yield self._unknown(var.name, "env", file, var.line)
            return
        if (found := self._lifecycle(spelling, var.name, file, var.line)) is not None:
            yield found
        if var.value is None:
            return
        leaf = spelling.leaf
        spec = LeafSpec(name=leaf.name, namespace=leaf.namespace, type=leaf.type, owner="", secret=leaf.secret)
        if leaf.secret and none_like(var.value):  # the variable's text: parse_env would read `none` as unset
            yield _none_like_secret(leaf, var.name, file, var.line)
            return
        try:
            value = parse_env(spec, var.name, var.value)
        except RecordError as exc:
            yield Finding("lint-bad-value", var.name, str(exc), file, var.line)  # the message says the fix
            return
        if (found := self._value(leaf, var.name, value, file, var.line)) is not None:
            yield found

    def _secret_file(self, var: EnvVar, spelling: Spelling, file: str) -> Iterator[Finding]:
        """`SGLANG_API_KEY_FILE=/run/secrets/key`: the path is all lint sees (the file is
        the container's); an empty one is refused at start, as is an old name's form."""
        base = var.name[: -len(FILE_SUFFIX)]
        if (found := self._lifecycle(spelling, base, file, var.line)) is not None:
            yield found
        if var.value is not None and not var.value.strip():
            yield Finding("lint-bad-value", var.name, f"{var.name} names no file (the file of the secret "
                          f"{spelling.leaf.name!r}): the server refuses to start", file, var.line,
                          f"give the path of the file holding the secret, or set {base} instead")

    def env_key_values(self, variables: Sequence[EnvVar]) -> dict[str, tuple[Any, int]]:
        """The door's keys the variables give as text known here (key leaf -> (text, line)),
        for the same-key rule (`runtime.keys.same_key`), which serve applies to keys from
        the environment too."""
        keys: dict[str, tuple[Any, int]] = {}
        for var in variables:
            spelling = self.envs.get(var.name)
            if spelling is not None and spelling.leaf.name in KEY_LEAVES and var.value is not None:
                keys[spelling.leaf.name] = (var.value, var.line)
        return keys

    def both_forms(self, variables: Sequence[EnvVar], file: str) -> Iterator[Finding]:
        """A secret's variable set beside its file form (`SGLANG_API_KEY` and
        `SGLANG_API_KEY_FILE`): the server's env reader (`runtime.record.read_env`) refuses
        to start, as neither may silently win. Reported at the later of the two, never
        showing a value."""
        lines = {var.name: var.line for var in variables}
        for name, file_line in lines.items():
            spelling = self.secret_files.get(name)
            base = name[: -len(FILE_SUFFIX)]
            if spelling is not None and base in lines:
                yield Finding("lint-bad-value", name, f"environment variables {base} and {name} are both set, for the "
                              f"secret {spelling.leaf.name!r} (the second names a file holding it): the server "
                              f"refuses to start", file, max(file_line, lines[base]), "unset one")

    def renamed_variables(self, variables: Sequence[EnvVar], file: str) -> Iterator[Finding]:
        """Two variables of one leaf, an old name and the current one (or two old ones, in
        either form, `NAME` or a secret's `NAME_FILE`): the server's env reader
        (`runtime.record.read_env`) refuses to start, as neither may silently win."""
        seen: dict[str, tuple[str, EnvVar]] = {}  # leaf -> the first variable's name (without _FILE), the variable
        for var in variables:
            spelling = self.envs.get(var.name)
            name = var.name
            if spelling is None and var.name in self.secret_files:
                spelling, name = self.secret_files[var.name], var.name[: -len(FILE_SUFFIX)]
            if spelling is None:
                continue
            leaf = spelling.leaf
            first_name, first = seen.setdefault(leaf.name, (name, var))
            if first_name != name:
                yield Finding("lint-bad-value", var.name, f"environment variables {first.name} (line {first.line}) and "
                              f"{var.name} are both set, for {leaf.name!r} (one is an old name of the other): the "
                              f"server refuses both and does not start", file, var.line,
                              f"unset one, keeping {leaf.env or var.name}")

    def renamed_keys(self, entries: Sequence[ConfigEntry], file: str) -> Iterator[Finding]:
        """Two keys of one config file for one leaf, an old name and the current one (or two
        old ones): the server's config reader refuses the file, as it refuses a key given
        twice (`runtime.record`), so neither silently wins."""
        seen: dict[tuple[str, str], ConfigEntry] = {}  # (the config file, leaf) -> its first key
        for entry in entries:
            spelling = self.keys.get(entry.key)
            if spelling is None:
                continue
            first = seen.setdefault((entry.part, spelling.leaf.name), entry)
            if first.key != entry.key:  # the same key twice is the reader's duplicate key
                yield Finding("lint-unreadable", entry.key, f"the server's config reader refuses it: keys "
                              f"{first.key!r} (line {first.line}) and {entry.key!r} (line {entry.line}) both set "
                              f"{spelling.leaf.name!r} (one is an old name of the other): the server refuses both, "
                              f"as it refuses a key given twice", file, entry.line,
                              f"keep one, spelled {spelling.leaf.name!r}")

    def config(self, entry: ConfigEntry, file: str) -> Iterator[Finding]:
        spelling = self.keys.get(entry.key)
        if spelling is None:
            yield self._unknown(entry.key, "key", file, entry.line)
            return
        if (found := self._lifecycle(spelling, entry.key, file, entry.line)) is not None:
            yield found
        if entry.known_value and (found := self._value(spelling.leaf, entry.key, entry.value, file, entry.line,
                                                       hidden=entry.secret)) is not None:
            yield found

    def _known_keys(self, entries: Sequence[ConfigEntry]) -> int:
        """How many of these keys are the schema's, or (with `--target`) the working schema's."""
        return sum(1 for e in entries if e.key in self.keys or e.key in self.lost_keys)

    def is_config(self, entries: Sequence[ConfigEntry]) -> bool:
        """Whether a YAML or JSON file found in a folder is an engine config file: at least
        half its keys are the schema's (a CI workflow, a Chart.yaml or a linter's config is
        not; a config file with a typo or two still is), counting with `--target` the keys
        the target lost."""
        known = self._known_keys(entries)
        return known > 0 and 2 * known >= len(entries)

    def _skipped(self, entry: Unnamed, file: str) -> Finding:
        """A ConfigMap entry without a config-file suffix whose mapping does not look like a
        config file: named, since a pod may still mount it as one (`items: [{key, path}]`)."""
        known = self._known_keys(entry.entries)
        schemas = "the schema's" if self.history is None else f"the schema's or {self.history.label}'s"
        return Finding("lint-skipped", entry.key, f"the ConfigMap entry {entry.key!r} under `{entry.field}` is not "
                       f"linted: its key has no .yaml/.yml/.json suffix, and {known} of the {len(entry.entries)} keys "
                       f"of its mapping are {schemas} (a config file's are at least half)",
                       file, entry.line, "if a pod mounts it as a --config file, name its key *.yaml (the volume's "
                       "`items: [{key, path}]` can keep the mounted name) so lint reads it as one")

    def lint_file(self, path: Path, shown: str, launchers: Sequence[str], *, named: bool = True) -> list[Finding]:
        """The findings of one file; `named`: the user named it (a YAML or JSON file found
        in a folder is linted as a config file only when it looks like one)."""
        try:
            parsed = parse_file(path, launchers)
        except FormatError as exc:
            if not named and json_named(path):
                return []  # a folder holds JSON of every kind (a model's config.json may say Infinity)
            return [Finding("lint-unreadable", shown, str(exc), shown, exc.line, "fix the file's syntax")]
        except (OSError, YamlError) as exc:
            return [Finding("lint-unreadable", shown, f"cannot read: {exc}", shown, 1)]
        if parsed is None or (parsed.format in ("config", "json") and not named and not self.is_config(parsed.config)):
            return []
        self.launched.update(p for command in parsed.commands for p in command.launchers)
        taken = [u for u in parsed.unnamed if self.is_config(u.entries)]
        found = [self._skipped(u, shown) for u in parsed.unnamed if u not in taken]
        if taken:
            parsed = attrs.evolve(parsed, config=(*parsed.config, *(e for u in taken for e in u.entries)),
                                  refused=(*parsed.refused, *(r for u in taken for r in u.refused)))
        try:
            env_keys = self.env_key_values(parsed.env)
            for command in parsed.commands:
                found += self.command(command, shown, env_keys)
            if not any(c.whole and c.launch for c in parsed.commands):  # variables alone (a ConfigMap's env, a .env)
                found += _same_key(env_keys, shown)
            for var in parsed.env:
                found += self.env(var, shown)
            found += self.both_forms(parsed.env, shown)
            found += self.renamed_variables(parsed.env, shown)
            for entry in parsed.config:
                found += self.config(entry, shown)
            found += self.renamed_keys(parsed.config, shown)
            for part in dict.fromkeys(e.part for e in parsed.config):
                found += _same_key({e.key: (e.value, e.line) for e in parsed.config
                                    if e.part == part and e.key in KEY_LEAVES and e.known_value}, shown)
            found += [Finding("lint-unreadable", shown, f"the server's config reader refuses it: {why}", shown, line,
                              "fix the file as the message says") for why, line in parsed.refused]
        except yaml.MarkedYAMLError as exc:  # a value PyYAML composed but cannot construct
            mark = exc.problem_mark or exc.context_mark
            return [Finding("lint-unreadable", shown, f"YAML error: {exc.problem or exc}", shown,
                            mark.line + 1 if mark else 1)]
        return list(dict.fromkeys(found))  # an anchored text used twice is one finding at its line


_FLAG_AFTER_SPACE = re.compile(r"\s(--[A-Za-z][\w.-]*)")


def _repeated(spelling: Spelling, flag: str, token: Token, given: dict[str, dict[str, tuple[str, Token]]],
              file: str, whole: bool) -> Finding | None:
    """A leaf set again in one launch line (`given`: for each leaf, the first flag and word
    of each name it was set by; two branches of a script may each set it, so only in a
    `whole` command). By the same name (a flag and its alias, `--x --no-x`) the server's
    parser keeps the last value and warns; by an old name and the current one (or two old
    ones) the server refuses the line (`runtime.record`), as neither may silently win. A
    secret's second flag is refused elsewhere."""
    leaf = spelling.leaf
    names = given.setdefault(leaf.name, {})
    name = spelling.old.name if spelling.old is not None else ""
    other = next((first for at, first in names.items() if at != name), None)
    first = names.setdefault(name, (flag, token))
    if leaf.secret or not whole:
        return None
    if other is not None:
        return Finding("lint-refused", flag, f"{flag} and {other[0]} (line {other[1].line}) both set {leaf.name} (one "
                       f"is an old name of the other): the server refuses both, as it refuses a flag given twice",
                       file, token.line, f"give it once, as {leaf.primary_flag or flag}")
    if first[1] is token:
        return None
    return Finding("lint-repeated", flag, f"{flag} sets {leaf.name} again (first {first[0]}, line {first[1].line}): "
                   f"the server keeps the last value", file, token.line, "give each leaf once")


def _same_key(keys: Mapping[str, tuple[Any, int]], file: str) -> Iterator[Finding]:
    """The read key and the admin key given alike in one launch line or config file: the
    door's own rule (`runtime.keys.same_key`), at the later of the two."""
    if same_key({name: value for name, (value, _) in keys.items()}):
        yield Finding("lint-bad-value", ADMIN_KEY_LEAF, f"{SAME_KEY}: the server refuses it", file,
                      max(line for _, line in keys.values()), SAME_KEY_FIX)


def _unchecked(token: Token, file: str) -> Finding:
    if token.splits.startswith('"'):  # a quoted array expansion: the array's elements are not known here
        return Finding("lint-unchecked", token.splits, f"{token.splits} is an array lint cannot follow here (not "
                       f"assigned above with literal words only): its elements become "
                       f"{'one word' if '[*]' in token.splits else 'words'} known only at run time, which lint does "
                       f"not check, nor which flag takes the words after it", file, token.line,
                       "assign the array with literal words in this file (`ARGS=(--tp-size 2)`), or write its flags "
                       "out on the launch line (or in a config file)")
    return Finding("lint-unchecked", token.splits, f"{token.splits} is not quoted, so the shell splits it into words "
                   f"known only at run time: lint checks none of them, nor which flag takes the words after it",
                   file, token.line, "write its flags out on the launch line (or in a config file), or quote it if "
                   "it is one word")


def _none_like_secret(leaf: LeafView, written: str, file: str, line: int) -> Finding:
    return Finding("lint-bad-value", written, f"{written} ({leaf.name}) is a secret given a none-like value (empty, "
                   f"`none`, `null`, ...): the server refuses it", file, line, "leave the secret out to leave it unset")


def _bounds_hint(leaf: LeafView) -> str:
    parts = [f"a value of type {leaf.type}"]
    if leaf.choices is not None:
        parts.append("one of " + ", ".join(map(str, leaf.choices)))
    if leaf.minimum is not None:
        parts.append(f">= {leaf.minimum}")
    if leaf.maximum is not None:
        parts.append(f"<= {leaf.maximum}")
    return "give " + ", ".join(parts)


def files_under(paths: Iterable[Path]) -> Iterator[tuple[Path, bool, OSError | None]]:
    """(file, named, error) for the files named and the files under the folders named,
    sorted, skipping VCS, cache and virtual-environment folders and links to folders (as
    `os.walk` does). The walk keeps its own stack, so a hostile checkout nesting folders
    thousands deep is walked, never a RecursionError; a folder that cannot be listed is
    yielded with its error, never skipped without a word."""
    for path in paths:
        if not path.is_dir():
            yield path, True, None
            continue
        stack = [path]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as found:
                    entries = sorted(found, key=lambda e: e.name)
            except OSError as exc:
                yield folder, True, exc
                continue
            folders = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if not is_dir:
                    yield Path(entry.path), False, None
                elif entry.name not in SKIP_DIRS and not entry.is_symlink():
                    folders.append(Path(entry.path))
            stack.extend(reversed(folders))  # depth first, in name order


def lint(paths: Sequence[Path], view: SchemaView, *, history: SchemaView | None = None,
         launchers: Sequence[str] = DEFAULT_LAUNCHERS, launched: set[str] | None = None) -> list[Finding]:
    """The findings of the files under `paths`; `launched`, if given, gets each of the
    `launchers` that matched a launch line."""
    linter = Linter(view, history, launched=launched)
    found: list[Finding] = []
    for path, named, error in files_under(paths):
        shown = path.as_posix()
        if error is not None:
            found.append(Finding("lint-unreadable", shown, f"cannot list the folder: {error.strerror or error}",
                                 shown, 1, "make it readable, or leave it out of the paths"))
            continue
        found += linter.lint_file(path, shown, launchers, named=named)
    return sorted(found, key=lambda f: (f.file, f.line, f.rule, f.subject))


def launcher_pattern(text: str) -> str:
    """A `--launcher` glob (argparse's `type=`): one that can match a program's words. An
    empty or blank one (an unset `--launcher "$LAUNCHER"`) matches none, and a `[` never
    closed is a literal `[` to fnmatch, so either would turn every launch line's checks off
    without a word."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty or blank, so it matches no launch line; give a glob "
                                         f"over the program's words, such as {DEFAULT_LAUNCHERS[0]!r}")
    i = 0
    while (i := text.find("[", i)) >= 0:  # each set as fnmatch.translate reads it
        end = i + 1 + (text[i + 1:i + 2] == "!")
        end += text[end:end + 1] == "]"
        close = text.find("]", end)
        if close < 0:
            raise argparse.ArgumentTypeError(f"{inert(repr(text))}: the `[` at character {i + 1} opens a set of "
                                             f"characters that is never closed (write `[[]` for a literal `[`)")
        i = close + 1
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = UsageErrors(
        prog="configbags lint", allow_abbrev=False,
        description="Check flags, environment variables and config keys in deployment files against a schema.")
    parser.add_argument("paths", nargs="+", type=project_path, help="files and folders to lint")
    parser.add_argument("--schema", type=project_path, help="the schema folder (default: [tool.configbags] schema)")
    parser.add_argument("--target", metavar="REV", help="lint against the schema at this git revision (a release "
                        "you are about to upgrade to)")
    parser.add_argument("--launcher", action="append", metavar="PATTERN", type=launcher_pattern,
                        help="a glob over a command's words before its first flag that marks a launch line "
                             f"(repeatable; default: {', '.join(DEFAULT_LAUNCHERS)})")
    parser.add_argument("--format", choices=report.FORMATS, help="output format (default: table)")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("--fail-on", default="breaking", choices=["breaking", "warning", "info", "never"],
                        help="exit 1 on a finding of this severity or worse (default: breaking)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write cached schema views")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if ns.json and ns.format not in (None, "json"):
        parser.error(f"--json and --format {ns.format} ask for two formats; give one")
    fmt = "json" if ns.json else ns.format or "table"
    launchers = tuple(ns.launcher) if ns.launcher else DEFAULT_LAUNCHERS
    launched: set[str] = set()
    try:
        schema = ns.schema if ns.schema is not None else load_project().schema
        with contextlib.ExitStack() as stack:
            current = load_view(schema, schema.as_posix(), cache=not ns.no_cache)
            view, history = current, None
            if ns.target is not None:
                side = stack.enter_context(checkout(ns.target, schema, "--target"))
                view, history = load_view(side.folder, side.shown, cache=not ns.no_cache), current
        missing = [p for p in ns.paths if not p.exists()]
        if missing:
            raise ConfigError(f"no such file or folder: {', '.join(inert(str(m)) for m in missing)}")
        findings = lint(ns.paths, view, history=history, launchers=launchers, launched=launched)
    except SchemaInvalid as exc:
        print_stderr(f"configbags lint: the schema does not load:\n{exc}")
        return 2
    except ConfigError as exc:  # it may name a path as typed or a file of the checkout: printed inert
        print_stderr(f"configbags lint: error: {exc}")
        return 2
    for pattern in ns.launcher or ():
        if pattern not in launched:  # its launch lines, if any, went unchecked: never silently
            print_stderr(f"configbags lint: note: --launcher {inert(repr(pattern))} matched no launch line in the files "
                         f"linted")
    title = f"configbags lint against {view.label} (version {view.version})"
    print(report.render(findings, fmt, title=title, tool="configbags lint", rules=LINT_RULES,
                        extra={"schema": view.label, "version": view.version}), end="")
    return 1 if fails(findings, parse_severity(ns.fail_on)) else 0
