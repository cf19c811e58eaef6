"""Waiting for a running service's score rows."""

from __future__ import annotations

from sqlalchemy import create_engine, select

from tests.support.server_process import wait_for
from tracescore.store.scores import ScoreRow


def wait_for_scores(db_url: str, count: int, timeout: float = 20.0) -> list[ScoreRow]:
    """Every score row, once there are at least ``count``."""
    engine = create_engine(db_url)
    rows: list[ScoreRow] = []

    def enough() -> bool:
        with engine.connect() as connection:
            query = select(ScoreRow.__table__)
            rows[:] = [ScoreRow(**r._mapping) for r in connection.execute(query)]
        return len(rows) >= count

    try:
        wait_for(enough, timeout, lambda: f"{count} scores (only {len(rows)})", every=0.1)
    finally:
        engine.dispose()
    return rows
