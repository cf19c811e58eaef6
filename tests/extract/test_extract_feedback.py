"""The human-feedback convention over OTLP records (tracescore/extract/feedback.py): what is a
person's verdict, what is not, and how each field is read."""

from __future__ import annotations

from typing import Any

import pytest

from tracescore.extract.feedback import human_verdict, log_verdict, span_verdicts

TRACE, SPAN, OTHER_SPAN = "ab" * 16, "cd" * 8, "ef" * 8
EVENT = "gen_ai.evaluation.result"
BASE = {"tracescore.feedback.source": "human", "gen_ai.evaluation.name": "quality"}


def test_a_complete_verdict_is_read_field_by_field() -> None:
    verdict = human_verdict(
        TRACE.upper(),
        SPAN,
        EVENT,
        {
            **BASE,
            "gen_ai.evaluation.score.value": 0.25,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "wrong city",
            "tracescore.feedback.author": "ana",
            "user.id": "u-1",
        },
        123,
    )
    assert verdict is not None
    assert (verdict.trace_id, verdict.span_id, verdict.name, verdict.value, verdict.label) == (
        TRACE,
        SPAN,
        "quality",
        0.25,
        "fail",
    )
    assert (verdict.comment, verdict.author, verdict.time_ns) == ("wrong city", "ana", 123)


@pytest.mark.parametrize(
    ("event", "trace", "attributes"),
    [
        (
            EVENT,
            TRACE,
            {"gen_ai.evaluation.name": "quality", "gen_ai.evaluation.score.value": 0.9},
        ),  # a judge's
        (
            EVENT,
            TRACE,
            {**BASE, "tracescore.feedback.source": "llm", "gen_ai.evaluation.score.value": 1},
        ),
        ("gen_ai.choice", TRACE, {**BASE, "gen_ai.evaluation.score.value": 1}),  # another event
        (EVENT, None, {**BASE, "gen_ai.evaluation.score.value": 1}),  # which run?
        (
            EVENT,
            TRACE,
            {"tracescore.feedback.source": "human", "gen_ai.evaluation.score.value": 1},
        ),  # no name
        (EVENT, TRACE, {**BASE, "gen_ai.evaluation.score.value": "n/a"}),  # neither value nor label
    ],
)
def test_what_is_not_a_persons_verdict(
    event: str, trace: str | None, attributes: dict[str, Any]
) -> None:
    assert human_verdict(trace, SPAN, event, attributes, 1) is None


def test_lenient_forms_senders_use() -> None:
    # The legacy event.name attribute, a numeric string, the source in capitals, user.id.
    legacy = human_verdict(
        TRACE,
        SPAN,
        "",
        {
            **BASE,
            "event.name": EVENT,
            "tracescore.feedback.source": "Human",
            "gen_ai.evaluation.score.value": "0.5",
            "user.id": "u-7",
        },
        1,
    )
    assert legacy is not None and (legacy.value, legacy.author) == (0.5, "u-7")
    # A boolean is no score: the label alone decides.
    assert (
        human_verdict(TRACE, SPAN, EVENT, {**BASE, "gen_ai.evaluation.score.value": True}, 1)
        is None
    )


def test_the_judged_span_may_be_named_and_a_bad_name_is_ignored() -> None:
    named = human_verdict(
        TRACE,
        OTHER_SPAN,
        EVENT,
        {
            **BASE,
            "gen_ai.evaluation.score.label": "pass",
            "tracescore.feedback.span_id": SPAN.upper(),
        },
        1,
    )
    assert named is not None and named.span_id == SPAN
    garbled = human_verdict(
        TRACE,
        OTHER_SPAN,
        EVENT,
        {
            **BASE,
            "gen_ai.evaluation.score.label": "pass",
            "tracescore.feedback.span_id": "not-a-span",
        },
        1,
    )
    assert garbled is not None and garbled.span_id == OTHER_SPAN
    whole_trace = human_verdict(
        TRACE, None, EVENT, {**BASE, "gen_ai.evaluation.score.label": "pass"}, 1
    )
    assert whole_trace is not None and whole_trace.span_id is None


def test_log_bodies_and_span_events() -> None:
    # An event API that put the fields in the body; attributes win where both have one.
    from_body = log_verdict(
        TRACE,
        SPAN,
        EVENT,
        {"gen_ai.evaluation.score.label": "pass"},
        {**BASE, "gen_ai.evaluation.score.label": "fail"},
        1,
    )
    assert from_body is not None and (from_body.name, from_body.label) == ("quality", "pass")
    events = [
        ["gen_ai.user.message", 1, {"content": "hi"}],
        [EVENT, 2, {**BASE, "gen_ai.evaluation.score.value": 1.0}],
        [EVENT, 3, {"gen_ai.evaluation.name": "quality", "gen_ai.evaluation.score.value": 0.1}],
        [EVENT, 4, None],
    ]
    (verdict,) = span_verdicts(TRACE, SPAN, events)
    assert (verdict.value, verdict.time_ns, verdict.span_id) == (1.0, 2, SPAN)
