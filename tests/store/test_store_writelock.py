"""SQLite writers of several processes take turns on the lock file beside the database."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from tracescore.store.writelock import SqliteWriteLock


def _hold(database: str, log: str, rounds: int) -> None:
    lock = SqliteWriteLock(database)
    for _ in range(rounds):
        with lock:
            with open(log, "a", encoding="utf-8") as out:
                out.write("enter\n")
            time.sleep(0.01)
            with open(log, "a", encoding="utf-8") as out:
                out.write("leave\n")


def test_writers_of_several_processes_never_overlap(tmp_path: Path) -> None:
    database, log = str(tmp_path / "store.db"), str(tmp_path / "turns.log")
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_hold, args=(database, log, 15)) for _ in range(3)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    turns = Path(log).read_text().split()
    assert len(turns) == 90
    assert turns == ["enter", "leave"] * 45  # never two inside at once
    assert Path(database + "-writer.lock").exists()


def test_an_in_memory_database_needs_only_the_thread_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads of one process still take turns, and no lock file appears anywhere."""
    monkeypatch.chdir(tmp_path)
    lock = SqliteWriteLock(":memory:")
    turns: list[str] = []

    def hold() -> None:
        for _ in range(20):
            with lock:
                turns.append("enter")
                time.sleep(0.001)
                turns.append("leave")

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert turns == ["enter", "leave"] * 60
    assert list(tmp_path.iterdir()) == []
