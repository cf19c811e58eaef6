"""Rows for the paging tests: 500 rows per list route sharing a handful of sort-key values,
written through the store's own writes (tests/service/test_api_paging.py pages them; the API walk,
tests/service/test_api_walk.py, checks their time formats and cursors)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from tests.support.score_streams import score_row
from tracescore.store import SpanStore
from tracescore.store.conversations import CONVERSATIONS
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.store.insights import GROUPS, MEMBERSHIPS
from tracescore.store.scores import upsert_scores
from tracescore.store.traces import TRACES

ROWS = 500
PAGE = 7
"""Not a divisor of the runs of equal keys (100 each): boundaries fall inside them."""
T0 = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
MOMENTS = [
    T0,  # a whole second: the form the old writer and the bound value differed most in
    T0 + timedelta(seconds=1, microseconds=123),
    T0 + timedelta(seconds=2, microseconds=500_000),
    T0 + timedelta(minutes=1),
    T0 + timedelta(hours=1, microseconds=999_999),
]
"""The handful of times the 500 rows share (100 rows each)."""


def _moment(index: int) -> datetime:
    return MOMENTS[index % len(MOMENTS)]


def _ids() -> list[str]:
    return [uuid.uuid4().hex for _ in range(ROWS)]


def _scores(store: SpanStore) -> tuple[str, set[str]]:
    rows = [score_row(_moment(i), 0.5, id=row_id) for i, row_id in enumerate(_ids())]
    with store.write_transaction() as connection:
        upsert_scores(connection, rows)  # type: ignore[arg-type]
    return f"/api/v1/scores?limit={PAGE}", {row["id"] for row in rows}


def _feedback(store: SpanStore) -> tuple[str, set[str]]:
    items = [
        Feedback(trace_id=trace_id, name="quality", source="api", created_at=_moment(i), value=1)
        for i, trace_id in enumerate(_ids())
    ]
    return f"/api/v1/feedback?limit={PAGE}", set(FeedbackStore(store).record(items))


def _traces(store: SpanStore) -> tuple[str, set[str]]:
    ids = _ids()
    rows = [
        {
            "trace_id": trace_id,
            "service_name": "shop",
            "root_name": "agent",
            "has_root": True,
            "span_count": 1,
            "log_count": 0,
            "generation": 1,
            "first_seen": _moment(i).timestamp(),
            "last_seen": _moment(i).timestamp(),
            "pending_since": 0.0,
            "state": "scored",
        }
        for i, trace_id in enumerate(ids)
    ]
    with store.write_transaction() as connection:
        connection.execute(insert(TRACES), rows)
    return f"/api/v1/traces?limit={PAGE}", set(ids)


def _conversations(store: SpanStore) -> tuple[str, set[str]]:
    ids = _ids()
    rows = [
        {
            "conversation_id": conversation_id,
            "turn_count": 1,
            "first_turn_ns": int(_moment(i).timestamp()) * 10**9,
            "last_turn_ns": int(_moment(i).timestamp() * 1e6) * 1000,
            "generation": 1,
            "first_seen": 0.0,
            "last_seen": 0.0,
            "pending_since": 0.0,
            "state": "scored",
        }
        for i, conversation_id in enumerate(ids)
    ]
    with store.write_transaction() as connection:
        connection.execute(insert(CONVERSATIONS), rows)
    return f"/api/v1/conversations?limit={PAGE}", set(ids)


def _group(connection: Any, group_id: str, size: int) -> None:
    connection.execute(
        insert(GROUPS),
        {
            "id": group_id,
            "name": group_id,
            "named_by": "terms",
            "first_seen": 0.0,
            "last_seen": 0.0,
            "size": size,
            "previous_size": 0,
            "share": 0.0,
        },
    )


def _insight_groups(store: SpanStore) -> tuple[str, set[str]]:
    ids = _ids()
    with store.write_transaction() as connection:
        for i, group_id in enumerate(ids):
            _group(connection, group_id, 1 + i % len(MOMENTS))
    return f"/api/v1/insights?limit={PAGE}", set(ids)


def _insight_runs(store: SpanStore) -> tuple[str, set[str]]:
    ids = _ids()
    with store.write_transaction() as connection:
        _group(connection, "g1", ROWS)
        connection.execute(
            insert(MEMBERSHIPS),
            [
                {
                    "group_id": "g1",
                    "trace_id": trace_id,
                    "span_id": "a1",
                    "failed_at": _moment(i).timestamp(),
                }
                for i, trace_id in enumerate(ids)
            ],
        )
    return f"/api/v1/insights/g1/runs?limit={PAGE}", set(ids)


def _compare(store: SpanStore) -> tuple[str, set[str]]:
    """Two versions of one scorer on 500 runs, disagreeing by a handful of amounts."""
    ids = _ids()
    rows = [
        score_row(_moment(i), score, trace_id=trace_id, span_id="a1", scorer_version=version)
        for i, trace_id in enumerate(ids)
        for version, score in (("1", 0.5), ("2", 0.5 + (i % len(MOMENTS)) / 10))
    ]
    for row in rows:
        row["id"] = uuid.uuid4().hex
    with store.write_transaction() as connection:
        upsert_scores(connection, rows)  # type: ignore[arg-type]
    return f"/api/v1/compare?binding=quality&a=1&b=2&limit={PAGE}", set(ids)


SEEDS: dict[str, Callable[[SpanStore], tuple[str, set[str]]]] = {
    "scores": _scores,
    "compare": _compare,
    "feedback": _feedback,
    "traces": _traces,
    "conversations": _conversations,
    "insights": _insight_groups,
    "insights/g1/runs": _insight_runs,
}
