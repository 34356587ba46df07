"""The process config context: publish, policy-checked overrides with provenance, derived
values, one readback, scopes and runner views.

Design in one paragraph: the whole published config is one immutable `State` (the raw
record, the resolved flat values, the bag objects, the override log, the epoch). Every
change builds a new State and installs it; nothing is mutated in place. So an override is
all-or-nothing by construction (validate, then build, then one install), a scope restores
by re-installing the State it saved (at the next epoch; a leaf scope only sets back what
its own thread changed when another thread committed meanwhile), and a reader never
sees a half-built bag. Accessors read plain slots of a `ProcessView`, which the context
fills at install time; role scoping acts there too, so an allowed read costs nothing.

`Context` is a façade over private parts with one job each: `_records` (State and the
override log), `_building` (States from a record or a change), `_validation` (every check
before anything is built), `_install` (the accessor slots and role scoping), `_readbacks`
(server_info, explain, the hash), `_scopes` (restoring scopes, acting as a role, runner
views) and `_process` (the process registry behind `process_context()`). The names below
are the public face.
"""

from configbags.runtime.context._context import Context
from configbags.runtime.context._install import Unread
from configbags.runtime.context._process import process_context
from configbags.runtime.context._readbacks import HASH_PURPOSE
from configbags.runtime.context._records import (
    RECORD_SLOT,
    Dropped,
    OverrideEntry,
    OverrideLog,
    Prepared,
    ProcessView,
    RankFn,
    Ranks,
    RepublishReport,
    State,
)
from configbags.runtime.context._scopes import ActingAs, Restoring, RunnerView

__all__ = [
    "HASH_PURPOSE",
    "RECORD_SLOT",
    "ActingAs",
    "Context",
    "Dropped",
    "OverrideEntry",
    "OverrideLog",
    "Prepared",
    "ProcessView",
    "RankFn",
    "Ranks",
    "RepublishReport",
    "Restoring",
    "RunnerView",
    "State",
    "Unread",
    "process_context",
]
