"""``tracescore.backoff.repeat``: a loop whose step keeps failing waits longer and longer and logs
twice per episode (when it starts, when it ends); a bug, unlike an outage, shows its traceback
once. The outage is a real SQLite ``OperationalError`` (a database file that cannot be opened)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tracescore.backoff import Backoff, repeat


def _run_for(seconds: float, step, backoff: Backoff) -> None:
    async def main() -> None:
        task = asyncio.create_task(repeat(step, 0.01, backoff))
        await asyncio.sleep(seconds)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


def test_an_outage_backs_off_and_logs_once_when_it_starts_and_once_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = create_engine(f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")
    tries: list[None] = []

    def step() -> None:
        tries.append(None)
        if len(tries) <= 4:  # down for the first four tries, then back
            with missing.connect() as connection:
                connection.execute(text("SELECT 1"))

    with caplog.at_level(logging.INFO, logger="tracescore.backoff"):
        backoff = Backoff("test loop: the database", first=0.02, cap=0.1)
        _run_for(0.8, step, backoff)
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert "test loop: the database is unavailable (OperationalError" in messages[0]
    assert "\n" not in messages[0] and caplog.records[0].exc_info is None
    assert "available again" in messages[1] and "(4 failed tries)" in messages[1]
    # 0.02 + 0.04 + 0.08 + 0.1 (capped) s of waiting, then every 0.01 s: many tries after.
    assert len(tries) > 10


def test_a_bug_logs_its_traceback_once(caplog: pytest.LogCaptureFixture) -> None:
    def step() -> None:
        raise KeyError("not an outage")

    with caplog.at_level(logging.INFO, logger="tracescore.backoff"):
        _run_for(0.5, step, Backoff("buggy loop", first=0.01, cap=0.05))
    assert len(caplog.records) == 1, [record.getMessage() for record in caplog.records]
    assert caplog.records[0].exc_info is not None


def test_an_outage_of_thousands_of_tries_keeps_waiting_the_cap() -> None:
    """Hours at a 30 s cap are thousands of failed tries: the delay must not overflow."""
    backoff = Backoff("test loop: the database", first=1.0, cap=30.0)
    outage = OSError("connection refused")
    delays = [backoff.failed(outage) for _ in range(1100)]
    assert delays[:6] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert set(delays[5:]) == {30.0}
