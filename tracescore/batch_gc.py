"""The cyclic garbage collector's settings for scoring in bulk, live or offline.

Extraction and scoring allocate thousands of short-lived objects per trace (messages, parts,
step traces) and make few reference cycles, yet with CPython's thresholds (700, 10, 10) the
collector traverses the young ones every 700 allocations: about a tenth of a scoring process's
CPU (1.19 -> 1.10 ms a trace, measured), and a quarter of ``tracescore score``'s (0.78 -> 0.56
ms a trace, ``benchmarks/offline.py``). What is loaded before the work starts is frozen out of
the collector's traversals as well; and at exit everything is (:func:`freeze_at_exit`).
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SCORING_THRESHOLDS = (100_000, 50, 10)
"""The collector's thresholds while scoring in bulk (CPython's default: 700, 10, 10)."""

_open = 0
"""How many :func:`bulk_scoring` blocks are open, in any thread: the first to open sets the
collector and the last to close restores it, so two ``run_evals`` in two threads never leave
the scoring settings behind."""
_opening = threading.Lock()
_restore_to = gc.get_threshold()


def tune_for_scoring() -> None:
    """Set the collector for a process that does nothing but score, for the rest of its life."""
    gc.freeze()
    gc.set_threshold(*SCORING_THRESHOLDS)


@contextmanager
def bulk_scoring() -> Iterator[None]:
    """Run the block with the collector set for scoring, then give back the caller's settings
    (``run_evals`` runs inside the user's own process) and unfreeze what was frozen."""
    global _open, _restore_to
    with _opening:
        if not _open:
            _restore_to = gc.get_threshold()
            tune_for_scoring()
        _open += 1
    try:
        yield
    finally:
        with _opening:
            _open -= 1
            if not _open:
                gc.set_threshold(*_restore_to)
                gc.unfreeze()


_freezing_at_exit = False


def freeze_at_exit() -> None:
    """Freeze every object out of the collector when the process exits, after the exit
    handlers registered later (they run last in, first out: the judge loop's, say).

    The interpreter's finalization runs full collections over all that is still alive: in a
    process that imported litellm (a judging scoring process, ``serve`` scoring in-process,
    ``tracescore rescore``) that is ~400,000 objects traversed again and again, about a second
    of CPU and several seconds of wall time on a loaded machine, by which a stopped service's
    exit waited on its scoring processes. The process is ending: its memory goes back whole,
    and what the modules' teardown frees by reference counting is freed still. Idempotent."""
    global _freezing_at_exit
    if not _freezing_at_exit:
        _freezing_at_exit = True
        atexit.register(gc.freeze)
