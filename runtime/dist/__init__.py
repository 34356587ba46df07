"""Config across processes and ranks: one resolved config, at one epoch, everywhere.

Three pieces, each usable alone:

- **State transfer** (`export_state` / `from_state`): a stable, versioned JSON form of the
  published state (record, override log, role, ranks, sealed, epoch). A child process
  adopts it and holds exactly the parent's state: the same `server_info()`, the same
  `config_hash()`, the same epochs. Re-deriving from the bare record (SGLang's bug) would
  lose every override the parent took.
- **Rank layout** (`Layout`, `compute_ranks`, `group_ranks`, `build_groups`): one stride
  table per parallel axis. The stamped ranks and the torch groups both come from it, so a
  rank's stamped `tp_rank` is its rank in the TP group torch built.
- **Multi-rank propagation** (`init_distributed`, `DistributedContext`): publish and
  overrides are decided on the source rank and broadcast, so every rank applies the same
  entries in the same order with the same epoch; a refused override fails on every rank;
  `check_consistency` all-gathers hashes and epochs and names the ranks that diverged.
  Every collective starts with a check-in through the rendezvous store, so a rank that died
  or never joined is named in a timeout error instead of hanging the others.
- **Two-phase overrides**: an override travels through the rendezvous store, not gloo:
  the source validates and posts a proposal, every rank checks it can apply it and votes,
  the source decides commit (all voted yes in time) or abort, and every rank applies the
  entries only on commit. The decision is one atomic compare-and-set on the store, which a
  follower that gave up waiting may win with an abort, so no rank commits what another
  aborted. A dead or stopped rank is named in a `DistributedConfigError` on every rank
  that is alive, within about two timeouts, and no rank has applied the entry.
- **Leaving**: a follower silent through `leave_after` collectives in a row leaves the
  group, named; every later collective raises `RankLeftError` at once on every rank, the
  one that left included when it comes back (`DistributedContext.leave` does it at once).
- **Sealing** (`SignedStore`, `join`, `secure`): with a secret, every value the ranks post
  is sealed for this launch alone (AES-GCM under a key HKDF derives from the secret and
  the launch's identity, itself a digest of a fresh nonce from every rank): a process
  that reads the store sees no value (no API key, no other secret leaf), and a forged or
  replayed value is refused and waited past, never obeyed nor blocking. Without one, a
  store other hosts reach is refused unless the caller opts out (`allow_unsigned`,
  `$CONFIGBAGS_ALLOW_UNSIGNED_STORE`); on a store with no secret (a loopback one runs so
  without asking) values travel in plaintext, so a publish or override that would carry a
  set `secret: true` leaf is refused on every rank (`UnsignedStoreError`, naming the leaf
  and asking for a rank secret). torch's own rendezvous keys are not sealed.

The state transfer and the rank layout need no torch: a base install (no `[kv]` extra)
hands its state to child processes with `export_state` / `import_state`. The multi-rank
pieces import torch when first used (`configbags.runtime.dist.init_distributed`, ...),
so importing this package never does; generated accessors never import it at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from configbags.runtime.dist._layout import AXES, Layout, compute_ranks, group_ranks, stamp_ranks
from configbags.runtime.dist._state import (
    FORMAT,
    FORMAT_VERSION,
    export_state,
    from_state,
    import_state,
    state_dict,
)

if TYPE_CHECKING:
    from configbags.runtime.dist._propagate import (
        DEFAULT_LEAVE_AFTER,
        DistributedContext,
        check_consistency,
        distributed,
        init_distributed,
        override_everywhere,
        publish_distributed,
    )
    from configbags.runtime.dist._rendezvous import (
        ALLOW_UNSIGNED_ENV,
        DEFAULT_TIMEOUT_S,
        SECRET_ENV,
        ForeignWriteError,
        ParallelGroups,
        RankLeftError,
        SignedStore,
        UnsignedStoreError,
        build_groups,
        check_in,
        connect_store,
        default_backend,
        join,
        listen,
        secure,
        signed,
    )

# name -> the torch-backed module that defines it, imported on first use
_WITH_TORCH = {
    **dict.fromkeys(("DEFAULT_LEAVE_AFTER", "DistributedContext", "check_consistency", "distributed", "init_distributed",
                     "override_everywhere", "publish_distributed"), "_propagate"),
    **dict.fromkeys(("ALLOW_UNSIGNED_ENV", "DEFAULT_TIMEOUT_S", "ForeignWriteError", "ParallelGroups",
                     "RankLeftError", "SECRET_ENV", "SignedStore", "UnsignedStoreError", "build_groups",
                     "check_in", "connect_store", "default_backend", "join", "listen", "secure", "signed"),
                    "_rendezvous"),
}


def __getattr__(name: str) -> Any:
    module = _WITH_TORCH.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded: Any
    try:
        if module == "_propagate":
            from configbags.runtime.dist import _propagate

            loaded = _propagate
        else:
            from configbags.runtime.dist import _rendezvous

            loaded = _rendezvous
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in ("torch", "cryptography"):
            raise
        raise ModuleNotFoundError(
            f"configbags.runtime.dist.{name} needs {missing}, which the base install leaves out: "
            f"pip install 'configbags[kv]' (export_state and import_state need neither torch nor "
            f"cryptography)", name=missing
        ) from None
    value = getattr(loaded, name)
    globals()[name] = value
    return value


__all__ = [
    "ALLOW_UNSIGNED_ENV",
    "AXES",
    "DEFAULT_LEAVE_AFTER",
    "DEFAULT_TIMEOUT_S",
    "FORMAT",
    "FORMAT_VERSION",
    "SECRET_ENV",
    "DistributedContext",
    "ForeignWriteError",
    "Layout",
    "ParallelGroups",
    "RankLeftError",
    "SignedStore",
    "UnsignedStoreError",
    "build_groups",
    "check_consistency",
    "check_in",
    "compute_ranks",
    "connect_store",
    "default_backend",
    "distributed",
    "export_state",
    "from_state",
    "group_ranks",
    "import_state",
    "init_distributed",
    "join",
    "listen",
    "override_everywhere",
    "publish_distributed",
    "secure",
    "signed",
    "stamp_ranks",
    "state_dict",
]
