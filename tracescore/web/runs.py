"""The runs page: the scores of one chart bucket (or of an alert's firing), lowest first, with what
they add up to and the way back to the chart they were drilled down from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.store import Database
from tracescore.store.score_aggregates import Moments, aggregate_scores
from tracescore.store.score_reads import ScoreFilter, count_scores, live_version, lowest_scores
from tracescore.web import timerange
from tracescore.web.timerange import ViewState

RUNS_LIMIT = 200
"""Rows a bucket's runs page lists (lowest first); the count says how many more there are."""


def runs_page(engine: Database, where: ScoreFilter) -> dict[str, Any]:
    """A bucket's (or an alert's) scores, lowest first, with what they add up to."""
    with engine.connect() as connection:
        version = live_version(connection)
        rows = lowest_scores(connection, where, RUNS_LIMIT, failed_too=True)
        total = count_scores(connection, where)
        stats = next(iter(aggregate_scores(connection, where)), None)  # one group, or none
    moments = stats.moments if stats is not None else Moments()
    return {
        "version": version,
        "rows": rows,
        "total": total,
        "count": moments.n,
        "mean": moments.mean if moments.n else None,
        "errors": stats.errors if stats is not None else 0,
        "limit": RUNS_LIMIT,
    }


def chart_around(where: ScoreFilter, now: datetime) -> str:
    """The overview around a runs page's range, in buckets of that range's length (the one it
    was drilled down from), 30 of them either side but not past now, focused on its binding and
    split by the first segment column it is narrowed by: the way back to the chart."""
    since, until = where.since or now, where.until or now
    span = until - since
    seconds = int(span.total_seconds())
    segments = {
        "agent": where.agent,
        "model": where.model,
        "service": where.service,
        "version": where.scorer_version,
    }
    return ViewState(
        since=timerange.iso(since - span * 30),
        until=timerange.iso(min(now, until + span * 30)),
        bucket=f"{seconds}s" if seconds >= 1 and seconds == span.total_seconds() else None,
        binding=where.binding,
        split=next((name for name, value in segments.items() if value), None),
    ).url("/")
