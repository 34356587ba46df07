"""Schema errors: each names its file, line and leaf, and says what to do. The loader and
checks collect all of them so one run reports every problem."""

from __future__ import annotations

import attrs

from configbags.runtime.cmdline import inert


@attrs.frozen
class SchemaError:
    file: str
    line: int
    message: str
    leaf: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        # a file's name and text reach the terminal or CI log inert: a schema file named
        # "a\n::error ..." cannot forge a line (or a GitHub workflow command)
        where = f"{inert(self.file)}:{self.line}"
        what = f"leaf {self.leaf!r}: " if self.leaf else ""
        fix = f" -> {inert(self.hint)}" if self.hint else ""
        return f"{where}: {what}{inert(self.message)}{fix}"


class SchemaInvalid(Exception):
    """Raised with every error found; generation stops and writes nothing."""

    def __init__(self, errors: list[SchemaError]) -> None:
        self.errors = sorted(errors, key=lambda e: (e.file, e.line, e.message))
        super().__init__("\n".join(map(str, self.errors)))
