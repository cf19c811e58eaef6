"""The one-line reasons of the code scorers, from their own steps' results.

A code score without a reason left a reader of "keyword-coverage 0.000" to open the steps to
learn why; these say it in a line (what was counted, what was missing), from the results the
steps already hold, so a reason costs a format call and never changes a score.
"""

from __future__ import annotations

from collections.abc import Sequence

SHOWN = 5
"""Items of a list a reason names before it says how many more there are."""


def some(items: Sequence[str]) -> str:
    """``a, b, c and 2 more``: a list, cut to :data:`SHOWN` items, for one line."""
    shown = ", ".join(items[:SHOWN])
    rest = len(items) - SHOWN
    return f"{shown} and {rest} more" if rest > 0 else shown


def coverage_reason(what: str, total: int, found: int, missing: Sequence[str] = ()) -> str:
    """How many of the question's ``total`` ``what`` the answer has (``found``), and which it
    lacks, when the scorer knows exactly."""
    if total == 0:
        return f"the question has no {what}: nothing to cover"
    if found == total:
        return f"all {total} {what} of the question are in the answer"
    said = f"{found} of {total} {what} of the question in the answer"
    return f"{said}; missing: {some(list(dict.fromkeys(missing)))}" if missing else said
