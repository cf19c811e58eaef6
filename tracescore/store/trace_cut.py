"""How much of one trace a read loads, and the note a trace read only in part carries.

Every read of a trace (the scoring worker, the runs API, the trace page, re-scoring, a
backfill, insights) goes through :meth:`~tracescore.store.SpanStore.load_traces`, which
streams a trace's rows and keeps them only while this limit holds: at most ``spans`` spans and
``text_bytes`` bytes of their stored text (attributes, events and links as stored), then as
many log records of the spans kept, within the same two bounds. Without it, what a read takes
grows with the trace: about 6 MB per 1,000 spans, so a 200,000-span trace (or a few thousand
spans of long prompts) broke any memory budget (docs/benchmarks.md, Reading one huge trace).

Which spans are kept: the first ones by start time, with nothing skipped in between, so the
kept part is a prefix of the trace in time. A span starts after its parent, so a kept span's
ancestors are kept (the root and the agent spans above it come first) and the runs rebuilt
from the prefix are the trace's own runs, the last of them possibly missing later steps. The
first span is always kept, so a trace is never read as empty; if its own text is over the
limit, its attribute values are cut (as ingest cuts them, :mod:`tracescore.value_cut`) so that
together they fit.

A trace cut so is never cut silently: :meth:`TraceCut.note` says how much was read and which key
raises the limit, and the reads carry it (``Trace.cut``, the runs API's ``cut``, the trace
page, and each run the cut may have shortened, whose ``traceCut`` makes every scorer leave it
``not_scorable`` with the note as reason: :meth:`TraceCut.whole_before`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracescore.spans import Span
from tracescore.value_cut import cut_attributes

DEFAULT_SPANS = 4_000
"""Spans of one trace a read loads by default: 10,000 small spans add ~70 MB to a read at
its peak, within the 100 MB budget of docs/benchmarks.md."""
DEFAULT_TEXT_BYTES = 2 * 1024 * 1024
"""Bytes of stored span text a read loads by default: a read holds its text several times
over (decoded, in the runs rebuilt from it, as their JSON), so 8 MB of long prompts stays
within the same budget."""


@dataclass(frozen=True, slots=True)
class ReadLimit:
    """How much of one trace a read loads (``assembly.max_trace_spans``,
    ``assembly.max_trace_bytes``)."""

    spans: int = DEFAULT_SPANS
    text_bytes: int = DEFAULT_TEXT_BYTES


class TraceCut:
    """One trace's rows counted as a read streams them: which to keep, and how many there were.

    Spans are admitted in start-time order until either bound is reached, and none after (a
    prefix, see the module); then log records of the kept spans, in time order, within what
    the spans left of the bounds."""

    __slots__ = (
        "_by",
        "_bytes",
        "_limit",
        "_logs_refused",
        "logs",
        "logs_kept",
        "oversized",
        "spans",
        "spans_kept",
        "values_cut_to",
    )

    def __init__(self, limit: ReadLimit) -> None:
        self._limit = limit
        self._bytes = 0
        self._by: str | None = None
        """The key of the bound that first left a row out."""
        self.spans = self.spans_kept = self.logs = self.logs_kept = 0
        self._logs_refused = False
        self.oversized = False
        """Whether the first span alone is over the text limit (see :meth:`fit_first`)."""
        self.values_cut_to: int | None = None

    def span(self, size: int) -> bool:
        """Whether the next span (``size`` bytes of stored text) is kept."""
        self.spans += 1
        if self.spans_kept < self.spans - 1 or not self._fits(self.spans_kept, size):
            return False  # a prefix: none after the first left out
        self.oversized = self.spans_kept == 0 and size > self._limit.text_bytes
        self.spans_kept += 1
        self._bytes += size
        return True

    def fit_first(self, span: Span) -> None:
        """Cut the values of the trace's first span, kept whatever its size, so that they fit
        the text limit together (each to an equal share of it)."""
        values = len(span.attributes) + sum(len(event.attributes) for event in span.events)
        share = max(1_000, self._limit.text_bytes // max(1, values))
        cut_attributes(span.attributes, share)
        for event in span.events:
            cut_attributes(event.attributes, share)
        self.values_cut_to = share
        self._by = self._by or f"assembly.max_trace_bytes: {self._limit.text_bytes}"

    def log(self, size: int) -> bool:
        """Whether the next log record of a kept span (or of no span) is kept: none after the
        first the limit refuses."""
        self.logs += 1
        if self._logs_refused or not self._fits(self.logs_kept, size, first_free=False):
            self._logs_refused = True
            return False
        self.logs_kept += 1
        self._bytes += size
        return True

    def skip_log(self) -> None:
        """A log record of a span the cut left out: counted, not kept."""
        self.logs += 1

    def _fits(self, kept: int, size: int, *, first_free: bool = True) -> bool:
        limit = self._limit
        if kept >= limit.spans:
            self._by = self._by or f"assembly.max_trace_spans: {limit.spans}"
            return False
        if (kept == 0 and first_free) or self._bytes + size <= limit.text_bytes:
            return True
        self._by = self._by or f"assembly.max_trace_bytes: {limit.text_bytes}"
        return False

    def whole_before(self, kept: Sequence[Span]) -> int:
        """Before when the ``kept`` spans hold every span of the runs that ended then
        (``Trace.whole_before_ns``): the last kept span's start, when only spans past it
        were left out; 0 when log records were left out or values cut, which any run may
        have lost."""
        if self.logs_kept < self.logs or self.values_cut_to is not None or not kept:
            return 0
        return max(span.start_time_ns for span in kept)

    def note(self) -> str | None:
        """What a cut trace says of itself, or None when every row was read."""
        whole = self.spans_kept == self.spans and self.logs_kept == self.logs
        if whole and self.values_cut_to is None:
            return None
        key = self._by or "a log record of a span left out"
        said = f"read the first {self.spans_kept:,} of {self.spans:,} spans"
        if self.logs_kept < self.logs:
            said += f" and {self.logs_kept:,} of {self.logs:,} log records"
        if self.values_cut_to is not None:
            said += f", the first span's values cut to {self.values_cut_to:,} characters"
        return f"{said} ({key}); raise it to read more of this trace"
