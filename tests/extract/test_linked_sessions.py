"""A loop traced call by call, joined within its session (issue 45): where two sessions send
the same message and their calls carry the same ids (numbered per response, or none), each
answer is read with its own session's step, never the other's; a step that names no session
is still joined, as before sessions were read.

The traces are the Anthropic SDK's capture of one loop (a step's trace, the answer's trace),
copied under new trace ids with a ``session.id`` on every span.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.extract_support import linked_traces
from tests.support.paths import CAPTURES
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace

STEP, ANSWER = load_traces([CAPTURES / "anthropic-sdk" / "tool_call"])


def _copy(trace: Trace, trace_id: str, session: str | None) -> Trace:
    """``trace`` under ``trace_id``, each span naming ``session`` (None: no session)."""
    extra = {"session.id": session} if session else {}
    spans = [
        dataclasses.replace(span, trace_id=trace_id, attributes={**span.attributes, **extra})
        for span in trace.spans
    ]
    return Trace(trace_id, spans=spans, logs=list(trace.logs))


def _joined(*traces: Trace) -> dict[str, list[str]]:
    """Each trace's earlier traces it was read together with (only those joined)."""
    return {
        trace_id: found.steps_from
        for trace_id, found in linked_traces(list(traces)).items()
        if found.steps_from
    }


@pytest.mark.parametrize("order", [1, -1])
def test_each_session_s_answer_is_joined_to_its_own_step(order: int) -> None:
    a_step, a_answer = _copy(STEP, "a1" * 16, "a"), _copy(ANSWER, "a2" * 16, "a")
    b_step, b_answer = _copy(STEP, "b1" * 16, "b"), _copy(ANSWER, "b2" * 16, "b")
    traces = [a_step, b_step, a_answer, b_answer][::order]
    assert _joined(*traces) == {"a2" * 16: ["a1" * 16], "b2" * 16: ["b1" * 16]}


def test_a_step_of_another_session_is_not_joined_and_one_of_none_is() -> None:
    other = _copy(STEP, "b1" * 16, "b")
    assert _joined(other, _copy(ANSWER, "a2" * 16, "a")) == {}
    unnamed = _copy(STEP, "c1" * 16, None)
    assert _joined(unnamed, _copy(ANSWER, "a2" * 16, "a")) == {"a2" * 16: ["c1" * 16]}
