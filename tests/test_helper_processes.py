"""A helper process stopped while it is still starting (its imports, its warm-up) ends at once
when it has nothing to finish yet; once started, or woken for work, its stop is its own loop's
to honour."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.server_process import wait_for
from tracescore.helper_processes import Child

MODULE = "tests.support.starting_child"


def _child(marks: Path, import_seconds: float) -> Child:
    settings = {
        "store_url": "sqlite://",
        "shutdown_timeout": 60.0,
        "import_seconds": import_seconds,
        "marks": str(marks),
    }
    return Child("starting child", MODULE, settings, quits_while_starting=True)


def test_a_child_stopped_during_its_imports_exits_at_once(tmp_path: Path) -> None:
    child = _child(tmp_path, import_seconds=60.0)
    child.start()
    time.sleep(0.5)  # well into its imports
    began = time.monotonic()
    child.stop()
    # Not the import's minute, nor the shutdown_timeout's: ended as soon as the pipe closed.
    assert time.monotonic() - began < 20
    assert child.returncode == 0
    assert list(tmp_path.iterdir()) == []  # main() never ran


def test_a_started_child_finishes_by_its_own_loop(tmp_path: Path) -> None:
    child = _child(tmp_path, import_seconds=0.0)
    child.start()
    wait_for(lambda: (tmp_path / "main").exists(), 60, "the child's main")
    child.stop()
    assert child.returncode == 0
    assert (tmp_path / "finished").exists()


def test_a_child_woken_during_its_imports_finishes_its_work_when_stopped(tmp_path: Path) -> None:
    """An unpacker woken for an entry has work: stopped mid-import, it still runs its loop."""
    child = _child(tmp_path, import_seconds=2.0)
    child.start()
    child.notify()
    child.stop()
    assert child.returncode == 0
    assert (tmp_path / "main").exists()
    assert (tmp_path / "finished").exists()
