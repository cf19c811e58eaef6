"""Score rows for tests: a whole one built in place, and a running service's waited for."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import create_engine, select
from sqlmodel import Field, SQLModel

from tests.support.server_process import wait_for
from tracescore.store.scores import SCORES, StoredScore


class ScoreView(SQLModel):
    """A stored score as the reads see it (:data:`~tracescore.store.scores.SCORES`: its names
    joined back from its series), for tests to assert on by attribute."""

    id: str
    trace_id: str
    span_id: str
    binding: str
    scorer_id: str
    scorer_version: str
    status: str
    score: float | None = None
    label: str | None = None
    reason: str | None = None
    error: str | None = None
    steps: dict[str, Any] | None = None
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    run_kind: str = "agent"
    service: str | None = None
    agent: str | None = None
    model: str | None = None
    conversation_id: str | None = None
    conversation_turns: int | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def stored_score(**values: Any) -> StoredScore:
    """A whole score row as the worker makes one, with ``values`` over plausible defaults (an
    ``ok`` agent-run score made now, no text, no cost)."""
    now = datetime.now(UTC)
    row = {
        "id": "0" * 32,
        "trace_id": "ab" * 16,
        "span_id": "1" * 16,
        "binding": "b",
        "scorer_id": "s",
        "scorer_version": "1",
        "status": "ok",
        "score": None,
        "label": None,
        "reason": None,
        "error": None,
        "steps": None,
        "judge_model": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.0,
        "run_kind": "agent",
        "service": None,
        "agent": None,
        "model": None,
        "created_at": now,
        "updated_at": now,
    }
    return cast(StoredScore, row | values)


def wait_for_scores(db_url: str, count: int, timeout: float = 20.0) -> list[ScoreView]:
    """Every score row, once there are at least ``count``."""
    engine = create_engine(db_url)
    rows: list[ScoreView] = []

    def enough() -> bool:
        with engine.connect() as connection:
            query = select(SCORES)
            rows[:] = [ScoreView(**r._mapping) for r in connection.execute(query)]
        return len(rows) >= count

    try:
        wait_for(enough, timeout, lambda: f"{count} scores (only {len(rows)})", every=0.1)
    finally:
        engine.dispose()
    return rows
