"""The collector's settings for bulk scoring: set while scoring, the caller's given back."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

from tracescore.batch_gc import SCORING_THRESHOLDS, bulk_scoring
from tracescore.offline.runner import run_evals


def test_bulk_scoring_sets_the_thresholds_and_gives_the_callers_back() -> None:
    before = gc.get_threshold()
    with bulk_scoring():
        assert gc.get_threshold() == SCORING_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_overlapping_blocks_in_two_threads_restore_only_when_the_last_closes() -> None:
    before = gc.get_threshold()
    first_open, second_open, first_closed = (threading.Event() for _ in range(3))
    seen: list[tuple[int, int, int]] = []

    def first() -> None:
        with bulk_scoring():
            first_open.set()
            second_open.wait(5)
        first_closed.set()

    def second() -> None:
        first_open.wait(5)
        with bulk_scoring():
            second_open.set()
            first_closed.wait(5)
            seen.append(gc.get_threshold())  # the first block closed: still set for scoring

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [SCORING_THRESHOLDS]
    assert gc.get_threshold() == before


def test_run_evals_scores_with_the_bulk_settings_and_restores_the_callers() -> None:
    original = gc.get_threshold()
    gc.set_threshold(500, 7, 7)
    try:
        during: list[tuple[int, int, int]] = []
        result = run_evals(
            [{"input": "What is 2 + 2?", "output": "4"}],
            ["completeness"],
            on_item_complete=lambda _item: during.append(gc.get_threshold()),
        )
        assert result.items[0].scores["completeness"]["status"] == "ok"
        assert during == [SCORING_THRESHOLDS]
        assert gc.get_threshold() == (500, 7, 7)
    finally:
        gc.set_threshold(*original)


AT_EXIT = """
import atexit, gc
atexit.register(lambda: print("registered before:", gc.get_freeze_count() > 0))
from tracescore.batch_gc import freeze_at_exit
freeze_at_exit()
freeze_at_exit()
atexit.register(lambda: print("registered after:", gc.get_freeze_count() > 0))
"""


def test_freeze_at_exit_freezes_once_after_the_later_exit_handlers() -> None:
    """What is alive at exit is out of the finalization's collections, frozen after the exit
    handlers registered later (the judge loop's, which ends the thread still using objects)."""
    out = subprocess.run(
        [sys.executable, "-c", AT_EXIT], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.splitlines() == ["registered after: False", "registered before: True"]
