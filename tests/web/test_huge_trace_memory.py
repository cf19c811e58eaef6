"""Reading one huge trace stays within a memory budget on every path that loads it, whatever
the trace holds (issue 46, item 7): the runs API's pages, the trace page, the scoring worker
(with the default bindings, and with bindings on every LLM and tool run too),
``rescore_on_change`` and a backfill, each measured in a process of its own (forked from one
that imported everything) on a real database (``tests/support/huge_trace.py``).

The trace is larger than the default read limit (``assembly.max_trace_spans``: 4,000 spans,
``assembly.max_trace_bytes``: 2 MiB of their text), and its spans carry enough text that both
bounds are nearly reached at once: the most a read may load at the defaults, so what it adds
here is what it adds for any trace (a 200,000-span one included: docs/benchmarks.md, Reading
one huge trace). Each path must also say that it read only part of the trace.
"""

from __future__ import annotations

import pytest

from tests.support.huge_trace import PATHS, measure, store_wide_trace

SPANS = 5_000
TEXT = 380
"""Characters more per span: ~530 stored bytes each, so the 2 MiB cut the trace at ~3,960
spans, just short of the 4,000."""
PEAK_MB = 100.0
"""What one read of the trace may add to its process at the peak (docs/benchmarks.md)."""


@pytest.mark.parametrize("db", ["sqlite_url", "pg_url"])
def test_each_read_of_a_trace_over_the_read_limit_stays_within_its_budget(
    db: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(db)
    trace_id = store_wide_trace(url, SPANS, TEXT)
    figures = measure(url, trace_id, PATHS)
    peaks = {path: found["peak"] for path, found in figures.items()}
    assert all(peak < PEAK_MB for peak in peaks.values()), peaks
    cuts = {path: found["cut"] for path, found in figures.items()}
    said = f"of {SPANS + 1:,} spans (assembly.max_trace_bytes: 2097152)"
    assert all(cut is not None and said in cut for cut in cuts.values()), cuts
