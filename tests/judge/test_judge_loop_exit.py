"""The judge loop ends with the process: its thread is stopped and joined by the exit handlers,
not frozen mid-step at finalization (where an import lock it held would hang a finalizer that
imports, as litellm's HTTP clients do in ``__del__``)."""

from __future__ import annotations

import subprocess
import sys

EXITING = """
import atexit, threading, time
judge = []
def look():  # registered before the judge loop's handler, so it runs after it
    print("judge thread alive after the exit handlers:", judge[0].is_alive(), flush=True)
atexit.register(look)
from tracescore.judge.loop import judge_loop
loop = judge_loop()
judge.append(next(t for t in threading.enumerate() if t.name == "tracescore-judge"))
started = threading.Event()
def busy():
    started.set()
    time.sleep(0.5)  # a step in progress when the process exits: it is finished, not frozen
loop.call_soon_threadsafe(busy)
started.wait(5)
"""


def test_the_judge_loop_is_stopped_and_joined_when_the_process_exits() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EXITING], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "judge thread alive after the exit handlers: False" in done.stdout, done.stdout
