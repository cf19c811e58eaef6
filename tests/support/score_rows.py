"""Waiting for a running service's score rows."""

from __future__ import annotations

import time

from sqlalchemy import create_engine, select

from tracescore.store.scores import ScoreRow


def wait_for_scores(db_url: str, count: int, timeout: float = 20.0) -> list[ScoreRow]:
    engine = create_engine(db_url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                rows = [
                    ScoreRow(**r._mapping) for r in connection.execute(select(ScoreRow.__table__))
                ]
            if len(rows) >= count:
                return rows
            time.sleep(0.1)
    finally:
        engine.dispose()
    raise AssertionError(f"only {len(rows)} scores after {timeout}s")
