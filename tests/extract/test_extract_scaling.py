"""Rebuilding the runs of a huge trace costs work in proportion to its spans.

A 20,000-span agent trace took 10–50 s of CPU to rebuild (a trace page, ``/api/v1/traces/{id}
/runs``): every tool result scanned every call before it for a pending one. Time is not
asserted here (a loaded machine makes it noise): the Python lines extraction executes are
counted (``tests/support/extract_lines.py``, in a process of its own), which a quadratic step
makes grow four times when the trace doubles.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest

from tests.support.paths import REPO


def _rebuilt(steps: int, kind: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.extract_lines", str(steps), kind],
        capture_output=True, check=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    return orjson.loads(done.stdout)


@pytest.mark.parametrize("kind", ["calls", "results"], ids=["calls-then-results", "results-only"])
def test_rebuilding_a_trace_twice_as_long_takes_about_twice_the_work(kind: str) -> None:
    small, large = _rebuilt(400, kind), _rebuilt(800, kind)
    assert large["runs"] == 1 + 2 * 800  # the agent, every chat and every tool call
    ratio = large["lines"] / small["lines"]
    assert ratio < 2.1, f"{small['lines']:,} lines for 400 steps, {large['lines']:,} for 800"
    # and every result is still joined to its own call, in order
    assert large["results"] == [f"sunny {step}" for step in range(800)]
