"""Extraction leaves no reference cycles behind: a trace's span tree and everything it reaches
are freed by reference counting as soon as the runs are built, not by the cyclic collector
(which, traversing ~100 objects a trace, cost a tenth of a scoring process's CPU)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.support.paths import CAPTURES
from tracescore.extract import extract_runs, read_spans
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace


def _capture_traces() -> list[Trace]:
    folders = {path.parent for path in CAPTURES.rglob("*") if path.is_file()} - {CAPTURES}
    return [
        trace
        for folder in sorted(f for f in folders if f.relative_to(CAPTURES).parts[0][0] != "_")
        for trace in load_traces([folder])
    ]


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """What the cyclic collector finds unreachable during the test, kept to be looked at."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_extracting_every_capture_leaves_no_tracescore_object_in_a_cycle(
    saved_garbage: list[object],
) -> None:
    traces = _capture_traces()
    assert len(traces) > 100
    for trace in traces:
        extract_runs(trace)
        extract_runs(trace, only_primary=True)
        read_spans(trace)
    gc.collect()
    ours = sorted({type(o).__qualname__ for o in saved_garbage if _ours(o)})
    assert ours == []


def _ours(value: object) -> bool:
    return (type(value).__module__ or "").startswith("tracescore")
