"""Synthetic score streams written to a real database, for monitoring tests and the alert benchmark.

A stream is a fixed number of scores per minute and segment, drawn from a clipped normal
distribution around a mean that may drop from a given moment on.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from tracescore.store.scores import prepare_scores


def score_row(created_at: datetime, score: float | None = None, **fields: Any) -> dict[str, Any]:
    """A complete ``scores`` row; ``fields`` override the defaults (any column)."""
    row: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "trace_id": uuid.uuid4().hex,
        "span_id": uuid.uuid4().hex[:16],
        "binding": "quality",
        "scorer_id": "answer-relevancy",
        "scorer_version": "1",
        "status": "ok" if score is not None else "error",
        "score": score,
        "label": None,
        "reason": None,
        "error": None,
        "steps": None,
        "judge_model": "gpt-4o-mini",
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.0,
        "run_kind": "agent",
        "service": "shop",
        "agent": "support",
        "model": "gpt-4o",
        "created_at": created_at,
        "updated_at": created_at,
    }
    row.update(fields)
    return row


@dataclass(frozen=True)
class Drop:
    """From ``since`` on, the segment's mean is lower by ``delta`` (``until``: recovery)."""

    since: datetime
    delta: float
    until: datetime | None = None


def stream(
    rng: random.Random,
    start: datetime,
    end: datetime,
    *,
    per_minute: int,
    agents: Sequence[str] = ("support",),
    mean: float = 0.8,
    sd: float = 0.15,
    drops: dict[str, Sequence[Drop]] | None = None,
    **fields: Any,
) -> Iterator[dict[str, Any]]:
    """``per_minute`` scores per agent for every minute of ``[start, end)``, spread in the minute."""
    drops = drops or {}
    minute = start
    step = timedelta(seconds=60 / per_minute)
    while minute < end:
        for agent in agents:
            for index in range(per_minute):
                moment = minute + step * index
                centre = mean - sum(
                    drop.delta
                    for drop in drops.get(agent, ())
                    if drop.since <= moment and (drop.until is None or moment < drop.until)
                )
                value = min(1.0, max(0.0, rng.gauss(centre, sd)))
                yield score_row(moment, value, agent=agent, **fields)
        minute += timedelta(minutes=1)


def insert_rows(engine: Engine, rows: Iterable[dict[str, Any]], chunk: int = 5000) -> int:
    """The rows written as the store writes scores, in chunks of one transaction each;
    returns the number of rows written."""
    count = 0
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= chunk:
            count += _write(engine, batch)
            batch = []
    return count + _write(engine, batch)


def _write(engine: Engine, rows: list[dict[str, Any]]) -> int:
    prepared = prepare_scores(engine, rows)  # type: ignore[arg-type]
    with engine.begin() as connection:
        prepared.write(connection)
    return len(rows)
