"""One exception hierarchy for everything configbags raises at run time.

Every message names the leaf (and its namespace), the policy or role involved, and says
how to fix it, so an operator reading a log line needs nothing else."""

from __future__ import annotations


class ConfigError(Exception):
    """Base of every configbags run-time error."""


class NotPublishedError(ConfigError):
    """A config accessor was called before `publish()` installed the process context."""


class UnknownLeafError(ConfigError, KeyError):
    """A name that is not a leaf of the schema."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class LeafValueError(ConfigError, ValueError):
    """A value of the wrong type, out of range, or not among the choices."""


class PolicyError(ConfigError):
    """An override the leaf's override policy forbids at this point of the lifecycle."""


class OwnerError(ConfigError):
    """An override from a process role that does not own the leaf."""


class CapacityError(ConfigError):
    """An override above the capacity leaf that bounds a runtime-tunable leaf."""


class RoleError(ConfigError):
    """A role problem: an unknown role, or (enforce mode) a read outside the role's set."""


class ScopeError(ConfigError):
    """A scope that cannot restore what it changed without discarding another thread's
    committed change; it names that change and restores nothing."""


class RankNotStampedError(ConfigError, AttributeError):
    """A rank was read before publish stamped it from the process's world rank."""


class RecordError(ConfigError, ValueError):
    """Bad operator input for the raw ServerArgs record (config file, dict or CLI)."""


class MissingLeafError(RecordError):
    """A required leaf no layer gives (`leaf` names it): a tool that only reads the config
    (explain) may then supply a placeholder, and say so, where it would never override a
    layer that does give one."""

    def __init__(self, message: str, leaf: str) -> None:
        super().__init__(message)
        self.leaf = leaf


class InputFileError(ConfigError, ValueError):
    """A file configbags was given that it cannot read: missing, not a regular file (a FIFO,
    a device), over the input limits, not UTF-8, not parseable or of the wrong shape."""


class OutputFileError(ConfigError):
    """A file configbags was asked to write (`--dump-config PATH`) that cannot be written;
    found before anything is installed."""


class RuleFunctionError(ConfigError):
    """A rule's function raised: the rule, its inputs and the exception are named."""


class DistributedConfigError(ConfigError):
    """Ranks disagree, or a rank is missing, when config crosses a torch.distributed group."""


class LayoutError(DistributedConfigError):
    """The config's parallel sizes lay out another number of ranks than the group has."""


class YamlError(ConfigError, ValueError):
    """Text (YAML or JSON) that cannot be parsed, or that breaks the input limits
    (`configbags.runtime.limits`): size, nesting, alias expansion, integer digits."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.problem = message
        self.line = line

    def at(self, file: object) -> str:
        """Where the problem is, as `file:line` (the file alone when no line is to blame):
        the one way schema and config files are named in a YAML error."""
        return f"{file}:{self.line}" if self.line else str(file)


def unstamped_rank(bag: object, name: str) -> RankNotStampedError:
    """The error for a rank read before publish stamped it (used by generated bags)."""
    return RankNotStampedError(
        f"{type(bag).__name__}.{name} was never stamped: ranks come from the process's world "
        f"rank at publish (publish(..., ranks=...) or configbags.runtime.dist.publish_distributed); this "
        f"process published without them"
    )
