"""`gc_paused()`: the cyclic garbage collector paused for a block that builds many
long-lived objects and few cycles (the generator's schema model, render models and black's
trees; the ratchet's parsed trees and cached rows). Collections there would only rescan what
stays alive, which made generation and a cold scan superlinear in their input's size
(bench/bench_gen.py, bench/bench_ratchet.py). Plain stdlib, so a warm ratchet check that
imports it pays nothing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic GC off meanwhile; back on after only if it was on before (nesting is safe)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
