"""Scoring budgets: how much of a run a scorer reads, and how long it may take.

A trace's text is whatever an exporter sent, so a single run can hold megabytes, and a scorer
that is linear in its input still takes seconds on them (textual-difference's sequence matching
is quadratic, as Mastra's is). Two budgets keep one big trace from stalling the traces scored
beside it:

* the **input budget** (``workers.budget.max_chars``, :class:`~tracescore.pipeline.config.BudgetConfig`): each of a run's input and output is cut
  to this many characters of text before any scorer reads it, and the cut is recorded on every
  score of the run (``steps.input_cut``), so a score of a cut run never passes for a whole one;
* the **time budget** (``workers.budget.scorer_seconds``): a synchronous scorer still running
  after it is interrupted (:class:`Watchdog`) and its score stored as an ``error`` that says so.

Python offers no sound way to stop another thread's CPU-bound work from outside except an
asynchronous exception (``PyThreadState_SetAsyncExc``), which the interpreter raises in the
scoring thread between two bytecodes: it interrupts a pure-Python loop within milliseconds, but
not a long call into C (a regular expression, a Cython loop), which it interrupts only once that
call returns. The input budget is what bounds those calls; the time budget catches what is left.
Killing the process instead would be exact, but it would throw away the whole batch's work and
cost a process start (a second, with the NLP models) per overrun.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tracescore.scorers.scorer_run import ScorerRun

_STRUCTURAL_CHARS = 200
"""Strings this short are never cut nor counted: ids, roles, part types, tool names, whose
loss would change what a scorer reads of the run's shape rather than of its text."""
_CUT_MARK = "…[cut]"


@dataclass(frozen=True, slots=True)
class InputCut:
    """What the input budget cut of one run: each side's characters before the cut."""

    max_chars: int
    input_chars: int
    output_chars: int

    def to_json(self) -> dict[str, int]:
        return {
            "max_chars": self.max_chars,
            "input_chars": self.input_chars,
            "output_chars": self.output_chars,
        }


def _text_chars(value: Any) -> int:
    """Characters of the long strings of a JSON-shaped value (what the budget counts).

    Every scored run is measured, so the plain types are told apart by ``type`` first (an
    ``isinstance`` check against ``Mapping`` is an ABC lookup): about half the time on a run's
    messages; other mappings and sequences are still walked."""
    kind = type(value)
    if kind in _SCALARS:
        return 0
    if kind is str or isinstance(value, str):
        return len(value) if len(value) > _STRUCTURAL_CHARS else 0
    if kind is dict or isinstance(value, Mapping):
        items = value.values()
    elif kind is list or isinstance(value, list | tuple):
        items = value
    else:
        return 0
    return sum([_text_chars(item) for item in items])


_SCALARS = frozenset((int, float, bool, type(None)))


class _Cutter:
    """Copies a JSON-shaped value, cutting its long strings once ``budget`` characters of them
    have been kept."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def text(self, text: str) -> str:
        if len(text) <= _STRUCTURAL_CHARS:
            return text
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        kept, self.left = text[: self.left], 0
        return kept + _CUT_MARK


def within_input_budget(run: ScorerRun, max_chars: int) -> tuple[ScorerRun, InputCut | None]:
    """``run`` with its input and output each cut to ``max_chars`` characters of text, and what
    was cut (None when the run fits, and ``run`` is returned as it is: nearly every run, so it
    is only measured, not copied)."""
    input_chars, output_chars = _text_chars(run.input), _text_chars(run.output)
    if input_chars <= max_chars and output_chars <= max_chars:
        return run, None
    return (
        replace(
            run,
            input=_Cutter(max_chars).value(run.input),
            output=_Cutter(max_chars).value(run.output),
        ),
        InputCut(max_chars, input_chars, output_chars),
    )


class ScorerTimeout(BaseException):
    """Raised in a scoring thread whose scorer ran past its time budget. A BaseException, so
    that a scorer's own ``except Exception`` (which turns a step's failure into an error score)
    cannot swallow it."""


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Have the interpreter raise ``exception`` in thread ``thread_id`` at its next bytecode
    boundary (None withdraws one not yet raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception is not None else None
    )


class Watchdog:
    """Interrupts code that runs past its time budget in the thread that armed it (see the
    module for why an asynchronous exception). One daemon thread serves every armed thread.

    Arming, disarming and firing all hold one lock, so an interruption is either raised inside
    the ``limit`` block (and surfaces there as :class:`ScorerTimeout`) or withdrawn before the
    block is left: it can never land in the code that runs after."""

    def __init__(self) -> None:
        self._deadlines: dict[int, float] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._wakes_at = float("inf")
        """When the watchdog thread looks next: a deadline after it needs no wake-up (nearly
        every one, all being as long), which would cost a thread switch per scorer run."""

    def limit(self, seconds: float) -> _Limit:
        """Run the block with ``seconds`` to finish; past them :class:`ScorerTimeout` is raised in it."""
        return _Limit(self, seconds)

    def _arm(self, ident: int, seconds: float) -> None:
        with self._changed:
            self._start()
            self._deadlines[ident] = deadline = time.monotonic() + seconds
            if deadline < self._wakes_at:
                self._changed.notify()

    def _disarm(self, ident: int) -> None:
        with self._changed:
            if self._deadlines.pop(ident, None) is None:
                _raise_in(ident, None)  # fired: withdraw it if it has not been raised yet

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="scorer watchdog", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for ident, deadline in list(self._deadlines.items()):
                    if deadline <= now:
                        del self._deadlines[ident]
                        _raise_in(ident, ScorerTimeout)
                self._wakes_at = min(self._deadlines.values(), default=float("inf"))
                self._changed.wait(min(self._wakes_at, now + 60.0) - now)


class _Limit:
    """:meth:`Watchdog.limit`'s block: a plain context manager rather than a
    ``contextmanager`` generator, whose machinery cost more than arming and disarming (two
    of them per scorer run)."""

    __slots__ = ("_ident", "_seconds", "_watchdog")

    def __init__(self, watchdog: Watchdog, seconds: float) -> None:
        self._watchdog = watchdog
        self._seconds = seconds
        self._ident = 0

    def __enter__(self) -> None:
        self._ident = threading.get_ident()
        self._watchdog._arm(self._ident, self._seconds)

    def __exit__(self, *_: object) -> None:
        self._watchdog._disarm(self._ident)
