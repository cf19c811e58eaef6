"""Reading one huge trace stays within a memory budget on every path that loads it (issue 46,
item 7): the runs API's pages, the trace page, the scoring worker, ``rescore_on_change`` and a
backfill, each measured in a fresh process on a real database (``tests/support/huge_trace.py``).

At 10,000 spans these paths added 130-140 MB at their peak while every run of the trace was
held as objects at once; built one at a time they add 55-71 MB (docs/benchmarks.md, Reading one
huge trace). The bound sits between the two, so a return to holding them all fails here while
the allocation's own variation (a few MB between runs) does not.
"""

from __future__ import annotations

import pytest

from tests.support.huge_trace import PATHS, measure, store_wide_trace

SPANS = 10_000
PEAK_MB = 100.0
"""What one read of the trace may add to its process at the peak."""


@pytest.mark.parametrize("db", ["sqlite_url", "pg_url"])
def test_each_read_of_a_huge_trace_stays_within_its_budget(
    db: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(db)
    trace_id = store_wide_trace(url, SPANS)
    peaks = {path: measure(url, trace_id, path)["peak"] for path in PATHS}
    assert all(peak < PEAK_MB for peak in peaks.values()), peaks
