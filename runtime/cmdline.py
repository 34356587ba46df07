"""The command line of a command that also takes server flags (`configbags serve`,
`plan`, `explain`): one `--help[=KEYWORD]` over the command's own flags and the server's,
and the refusal of a command flag that would shadow a server flag.

`--help` prints the command's flags, then every server flag of the generated package;
`--help=KEYWORD` prints only the flags that KEYWORD names, of both: a keyword matches a
flag name (`--help=tp-size`), a word of one (`--help=tp` finds `--tp-size`), or a whole
word of its help text (`--help=page` finds "Tokens per KV page", never "paged").
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TextIO

from configbags.runtime.errors import ConfigError

ServerParser = Callable[[], "argparse.ArgumentParser | None"]


def inert(text: str) -> str:
    """`text` made safe to print in a report line: control characters (newlines, ANSI
    escapes) and line or paragraph separators escaped, so text from outside (a server's
    answer, an observation file) can neither forge nor hide lines in a terminal or a CI log."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def print_stderr(*parts: str) -> None:
    """A command's message (an error, a warning, a verdict) on stderr, one argument a line
    or lines. A message quotes what the operator typed (a file name, a flag's value) or
    what a file or server said, so every control character but the message's own line
    breaks is escaped, as `inert` escapes it: an ANSI escape or a carriage return cannot
    hide or rewrite a line. (A quoted name that could hold a line break is made inert where
    the message quotes it.)"""
    lines = (line for part in parts for line in part.split("\n"))
    print("\n".join(map(inert, lines)), file=sys.stderr, flush=True)


def matches(action: argparse.Action, keyword: str) -> bool:
    """Whether `keyword` names this flag: its name, a dash-separated word of it, or a whole
    word of its help."""
    kw = keyword.lower().lstrip("-")
    if not kw:
        return False
    for option in action.option_strings:
        name = option.lower().lstrip("-")
        if name == kw or re.search(rf"(^|-){re.escape(kw)}(-|$)", name):
            return True
    text = (action.help or "") if action.help is not argparse.SUPPRESS else ""
    return re.search(rf"(?<![\w-]){re.escape(kw)}(?![\w-])", text.lower()) is not None


def _section(parser: argparse.ArgumentParser, keyword: str, title: str) -> str:
    shown = argparse.ArgumentParser(prog=parser.prog, add_help=False, allow_abbrev=False)
    group = shown.add_argument_group(title)
    found = False
    for action in parser._actions:
        if action.option_strings and action.help is not argparse.SUPPRESS and not isinstance(
            action, (CommandHelp, argparse._HelpAction)
        ) and matches(action, keyword):
            group._add_action(action)
            found = True
    if not found:
        return ""
    text = shown.format_help()
    return text[text.index("\n\n") + 2:] if "\n\n" in text else text


class CommandHelp(argparse.Action):
    """`-h/--help[=KEYWORD]` for a command that passes server flags through."""

    def __init__(self, option_strings: list[str], dest: str, server: ServerParser, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", const="", default=argparse.SUPPRESS, **kwargs)
        self.server = server

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        server = self.server()
        keyword = str(values or "")
        if not keyword:
            out = parser.format_help()
            if server is not None:
                out += "\n" + _all(server)
        else:
            own = _section(parser, keyword, f"{parser.prog} flags")
            theirs = _section(server, keyword, "server flags") if server is not None else ""
            out = own + ("\n" if own and theirs else "") + theirs
            if not out:
                out = f"no flag matches {keyword!r}; `{parser.prog} --help` lists them all\n"
        print(out, end="" if out.endswith("\n") else "\n")
        parser.exit()


def _all(server: argparse.ArgumentParser) -> str:
    text = server.format_help()
    body = text[text.index("\n\n") + 2:] if "\n\n" in text else text
    return "server flags (of the generated ServerArgs; --help=KEYWORD narrows both lists):\n\n" + body


def add_help(parser: argparse.ArgumentParser, server: ServerParser) -> None:
    """Give `parser` (made with add_help=False) the `-h/--help[=KEYWORD]` above."""
    parser.add_argument("-h", "--help", action=CommandHelp, server=server, metavar="KEYWORD",
                        help="show this help and every server flag; --help=KEYWORD only the flags it names")


def collisions(parser: argparse.ArgumentParser, server: argparse.ArgumentParser,
               shared: Iterable[str] = ()) -> list[str]:
    """The command's own flags that a server flag also spells (`shared`: those meant to be
    one flag), which would otherwise take the server's value."""
    own = {o for a in parser._actions for o in a.option_strings if not isinstance(a, CommandHelp)}
    theirs = {o for a in server._actions for o in a.option_strings if not isinstance(a, argparse._HelpAction)}
    return sorted((own & theirs) - set(shared) - {"-h", "--help"})


def refuse_collisions(command: str, parser: argparse.ArgumentParser, server: argparse.ArgumentParser,
                      package: str, shared: Iterable[str] = ()) -> None:
    """ConfigError when a server flag of `package` is also a flag of `command` (serve,
    plan, explain), which would take the value meant for the config without a word (a
    bool leaf `json` under explain's `--json`)."""
    shadowed = collisions(parser, server, shared)
    if shadowed:
        raise ConfigError(f"server flag(s) {', '.join(shadowed)} of {package} are also flags of {command}, "
                          f"which would take their values; rename the leaf's flag in the schema (cli: {{flag: ...}})")


def peek_package(args: list[str]) -> str | None:
    """`--package PKG` from a command line not parsed yet (its help needs the package)."""
    for i, arg in enumerate(args):
        if arg == "--package" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--package="):
            return arg.partition("=")[2]
    return None


class UsageErrors(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are the one line that matters and a hint: a
    server parser's usage runs to hundreds of lines, which bury the error. Words it does not
    take are named by flag only (`unrecognized`), never echoed: after a mistyped secret flag
    (`--api_key S`) the next word is the secret. Its `type=int`/`type=float` flags take
    numbers in the one grammar of server flags and config files (no `1_000`, no non-ASCII
    digits, which Python's int() and float() would take; `0x10` and `0o17` as ints)."""

    def __init__(self, *args: Any, command: argparse.ArgumentParser | None = None, **kwargs: Any) -> None:
        from configbags.runtime.leaftypes import float_from_text, int_from_text

        super().__init__(*args, **kwargs)
        # a server-flag parser's command (rollout, explain): its own flags, given after the
        # `--` that starts the server flags, are named as such, not matched to a server flag
        self.command = command
        self.register("type", int, int_from_text)
        self.register("type", float, float_from_text)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {inert(message)}\n  (`{self.prog} --help` lists the flags; "
                     f"--help=KEYWORD the ones a word names)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(unrecognized(self, extras))
        return parsed


# A word shown as a flag name: `--name` (before any `=`) or `-x`. Anything else may be a value.
_FLAG_NAME = re.compile(r"--[A-Za-z][\w.-]{0,63}|-[A-Za-z]")


def shown_flag(word: str) -> tuple[str, bool]:
    """The part of `word` that may be shown as a flag name (`--name`, before any `=`), and
    whether more of the word was left out: a flag and its value written as one word
    (`"--api-key K"`, a no-break space between them) shows `--api-key` only, as what
    follows may be a secret."""
    name = word.partition("=")[0]
    found = _FLAG_NAME.match(name)
    head = found.group() if found is not None else ""
    return head, head != name


def unrecognized(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """'unrecognized flag(s) ...' for the words `parser` did not take: each flag by its name,
    with a did-you-mean when one is close; any other word (a value, perhaps a secret) only
    counted."""
    from configbags.runtime.leaftypes import closest

    known = [o for a in parser._actions if a.help is not argparse.SUPPRESS for o in a.option_strings]
    command = getattr(parser, "command", None)
    own = [] if command is None else [o for a in command._actions for o in a.option_strings]
    flags: list[str] = []
    hidden = dashes = 0
    for word in words:
        name = word.partition("=")[0]
        if word == "--":
            dashes += 1  # not a value: it ended the flags, and the words after it are counted
        elif _FLAG_NAME.fullmatch(name) and name in known:
            # a known flag argparse left over: it came after a `--`, which ends the flags
            flags.append(f"{name} (after a '--', which ends the flags: give it before the '--')")
        elif _FLAG_NAME.fullmatch(name) and name in own:
            assert command is not None
            flags.append(f"{name} ({command.prog}'s own flag, given among the server flags after its '--': "
                         f"give it before the '--')")
        elif _FLAG_NAME.fullmatch(name):
            flags.append(f"{name}{_flag_hint(name, known) or closest(name, known)}")
        else:
            hidden += 1
    out = f"unrecognized flag{'s' if len(flags) > 1 else ''} {', '.join(flags)}" if flags else ""
    if hidden:
        values = f"{hidden} word{'s' if hidden > 1 else ''} not taken by any flag (not shown, as a value may be a secret)"
        out = f"{out}; {values}" if out else values
    return out or f"a '--' that ends the flags{' again' if dashes > 1 else ''} with none after it; remove it"


def _flag_hint(name: str, known: Sequence[str]) -> str:
    """' (did you mean ...?)' for a flag that is the first word of known flags (`--tp` of
    `--tp-size`, SGLang's short spellings): what its letters are closest to (`--ep`) may set
    another leaf, so the flags it begins are named first ('' when it begins none)."""
    begun = sorted(flag for flag in known if flag.startswith(name + "-"))
    if not begun:
        return ""
    shown = " or ".join(repr(flag) for flag in begun[:3])
    return f" (did you mean {shown}{', ...' if len(begun) > 3 else ''}?)"


def input_problem(exc: Exception) -> str:
    """One line naming an input file a command could not read and what is wrong with it (a
    missing file, Python that does not parse, bad YAML): never a traceback, never `[Errno 2]`."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return (f"{exc.filename}: {exc.strerror or exc}; check the path (a relative path is from the project: "
                f"the folder of the nearest pyproject.toml, else the working folder)")
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: does not parse as Python ({exc.msg}); fix the file"
    mark = getattr(exc, "problem_mark", None)  # a yaml.MarkedYAMLError, without importing yaml here
    if mark is not None:
        return f"{mark.name}:{mark.line + 1}: not valid YAML ({getattr(exc, 'problem', None) or exc}); fix the file"
    return str(exc)


Progress = Callable[[int, int], None]  # (done so far, to do): what a long step reports


class TerminalProgress:
    """How far a long command is, on one line of a terminal (`ratchet: parsed 1200 of 3000
    files`): redrawn at most ten times a second, erased when done so the report follows.
    `template` is formatted with `done`, `total`, `step` (done + 1) and the call's `what`.
    Commands get one from `terminal_progress`, which gives none where stderr is piped or
    logged: those runs stay quiet."""

    def __init__(self, stream: TextIO, template: str = "ratchet: parsed {done} of {total} files") -> None:
        self.stream = stream
        self.template = template
        self.shown = 0.0

    def __call__(self, done: int, total: int, what: str = "") -> None:
        now = time.monotonic()
        if done < total and now - self.shown < 0.1:
            return
        self.shown = now
        if done >= total:
            self.stream.write("\r\x1b[K")  # erase the line: the report follows
        else:
            text = self.template.format(done=done, total=total, step=done + 1, what=what)
            self.stream.write(f"\r{text}\x1b[K")  # the rest of a longer earlier line erased
        self.stream.flush()


def terminal_progress(template: str, stream: TextIO | None = None) -> TerminalProgress | None:
    """A TerminalProgress on `stream` (default stderr) when it is a terminal, else None."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no file behind it, or a closed one
        tty = False
    return TerminalProgress(stream, template) if tty else None
