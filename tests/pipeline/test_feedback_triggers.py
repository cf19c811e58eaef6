"""Feedback triggers on a real store (issue 37, item 4): ``on_feedback`` validated at start,
what counts as a negative verdict, a trigger stored once per run and binding with its verdict,
taken by one process at a time, and judged, refused or given up with the reason."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support.paths import CAPTURES
from tracescore.config import ConfigError, parse_config
from tracescore.ingest.files import load_traces
from tracescore.pipeline.config import FeedbackTrigger
from tracescore.pipeline.feedback_triggers import is_negative, verdict_triggers
from tracescore.pipeline.scoring_task import build_worker
from tracescore.pipeline.trigger_judging import FeedbackTriggers
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.store.feedback_triggers import claim_triggers, trace_triggers
from tracescore.store.score_reads import trace_scores

AGENT_CAPTURE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"
FAR_FUTURE = 4_000_000_000.0
BINDINGS = """
scorers:
  - {name: judged, scorer: completeness, sampling: {rate: 0}, on_feedback: true}
  - {name: elsewhere, scorer: completeness, sampling: {rate: 0}, on_feedback: true,
     filter: {service: [no-such-service]}}
"""


def _verdict(trace_id: str, label: str | None = "thumbs_down", **fields: object) -> Feedback:
    values: dict[str, object] = {"name": "thumbs", "author": "u1", **fields}
    return Feedback(
        trace_id=trace_id,
        source="api",
        created_at=datetime.now(UTC),
        label=label,
        **values,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("binding", "named", "says"),
    [
        ("on_feedback: {labls: [bad]}", "scorers.0.on_feedback.labls", "xtra"),
        ("on_feedback: {wait: soon}", "scorers.0.on_feedback.wait", "duration"),
        ("on_feedback: yes-please", "scorers.0.on_feedback", ""),
        ("target: conversation, on_feedback: true", "scorers.0", "not a conversation"),
    ],
)
def test_a_bad_on_feedback_fails_at_start_naming_its_key(
    binding: str, named: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"scorers:\n  - {{name: j, scorer: completeness, {binding}}}\n")
    assert named in str(caught.value)
    assert says in str(caught.value)


def test_on_feedback_true_takes_the_defaults_and_false_turns_it_off() -> None:
    config = parse_config(
        "scorers:\n  - {name: a, scorer: completeness, on_feedback: true}\n"
        "  - {name: b, scorer: completeness, on_feedback: false}\n"
    )
    on, off = config.scorers
    assert on.on_feedback == FeedbackTrigger()
    assert off.on_feedback is None
    assert verdict_triggers([off]) is None


def test_a_verdict_is_negative_by_its_label_or_value_under_the_names_given() -> None:
    rule = FeedbackTrigger()
    assert is_negative(rule, _verdict("a" * 32, "Thumbs_Down"))
    assert is_negative(rule, _verdict("a" * 32, None, value=0.2))
    assert not is_negative(rule, _verdict("a" * 32, "pass", value=0.9))
    assert not is_negative(rule, _verdict("a" * 32, None, value=0.5))
    named = FeedbackTrigger(names=["judged"], below=None)
    assert not is_negative(named, _verdict("a" * 32))  # under "thumbs"
    assert is_negative(named, _verdict("a" * 32, name="judged"))
    assert not is_negative(named, _verdict("a" * 32, None, name="judged", value=0.0))


def _store(db_url: str) -> tuple[SpanStore, str]:
    store = open_store(db_url)
    for trace in load_traces([AGENT_CAPTURE]):
        store.write(trace.spans, trace.logs)
    with store.engine.connect() as connection:
        (trace_id,) = connection.execute(text("SELECT trace_id FROM traces")).scalars()
    return store, bytes(trace_id).hex()  # stored as its bytes


def test_a_trigger_is_stored_with_its_verdict_once_and_taken_by_one_process(
    db_url: str,
) -> None:
    store, trace_id = _store(db_url)
    config = parse_config(BINDINGS)
    feedback = FeedbackStore(store, verdict_triggers(config.scorers))
    feedback.record([_verdict(trace_id, label="thumbs_up")])
    feedback.record([_verdict(trace_id)])  # the same author changes their mind
    feedback.record([_verdict(trace_id, author="u2"), _verdict(trace_id, None, value=0.0)])
    with store.engine.connect() as connection:
        stored = trace_triggers(connection, trace_id)
    assert sorted(t["binding"] for t in stored) == ["elsewhere", "judged"]
    assert {t["state"] for t in stored} == {"pending"}

    now = time.time()
    with store.write_transaction() as connection:
        first = claim_triggers(connection, now, 15.0, 10)
    with store.write_transaction() as connection:
        second = claim_triggers(connection, now + 1, 15.0, 10)
    with store.write_transaction() as connection:
        after_lease = claim_triggers(connection, now + 16, 15.0, 10)
    assert len(first) == 2 and second == []
    assert {t.id for t in after_lease} == {t.id for t in first}  # its holder died: retaken
    assert {t.attempts for t in after_lease} == {2}
    store.close()


def test_a_trigger_judges_the_unsampled_run_and_records_why_it_did_not(db_url: str) -> None:
    store, trace_id = _store(db_url)
    config = parse_config(BINDINGS)
    worker = build_worker(config.scoring(), store)
    store.queue.promote(now=FAR_FUTURE)  # nothing samples it: finished unscored
    with store.engine.connect() as connection:
        assert trace_scores(connection, trace_id) == []
    FeedbackStore(store, verdict_triggers(config.scorers)).record([_verdict(trace_id)])
    triggers = FeedbackTriggers(worker.scoring, store, worker.scoring.bindings, lease=15.0)

    async def judge_due() -> None:
        with store.write_transaction() as connection:
            taken = claim_triggers(connection, time.time(), 15.0, 10)
        await asyncio.gather(*(triggers.handle(trigger) for trigger in taken))

    asyncio.run(judge_due())
    with store.engine.connect() as connection:
        (score,) = trace_scores(connection, trace_id)
        ended = {t["binding"]: t for t in trace_triggers(connection, trace_id)}
    assert score["binding"] == "judged" and score["status"] == "ok"
    assert score["steps"] is not None and "trigger" in score["steps"]
    assert (ended["judged"]["state"], ended["judged"]["outcome"]) == ("done", "judged")
    assert ended["elsewhere"]["outcome"] == "not_eligible"
    assert "filter" in ended["elsewhere"]["reason"]

    # Another run whose trace retention pruned before it was judged: given up, saying so.
    with store.write_transaction() as connection:
        connection.execute(text("UPDATE traces SET state = 'pruned'"))
        connection.execute(text("DELETE FROM feedback_triggers"))
    FeedbackStore(store, verdict_triggers(config.scorers)).record([_verdict(trace_id)])
    asyncio.run(judge_due())
    with store.engine.connect() as connection:
        ended = {t["binding"]: t for t in trace_triggers(connection, trace_id)}
    assert ended["judged"]["state"] == "gave_up"
    assert "retention" in ended["judged"]["reason"]
    store.close()


def test_a_run_already_scored_is_not_judged_again(tmp_path: Path) -> None:
    store, trace_id = _store(f"sqlite:///{tmp_path / 'tracescore.db'}")
    config = parse_config("scorers:\n  - {name: judged, scorer: completeness, on_feedback: true}\n")
    worker = build_worker(config.scoring(), store)

    async def score_then_trigger() -> None:
        for claim in store.queue.claim(worker.owner, 10, 30.0, now=FAR_FUTURE):
            await worker.process(claim)
        FeedbackStore(store, verdict_triggers(config.scorers)).record([_verdict(trace_id)])
        with store.write_transaction() as connection:
            taken = claim_triggers(connection, time.time(), 15.0, 10)
        triggers = FeedbackTriggers(worker.scoring, store, worker.scoring.bindings, lease=15.0)
        await asyncio.gather(*(triggers.handle(t) for t in taken))

    asyncio.run(score_then_trigger())
    with store.engine.connect() as connection:
        (score,) = trace_scores(connection, trace_id)
        (ended,) = trace_triggers(connection, trace_id)
    assert score["steps"] is not None and "trigger" not in score["steps"]  # the sampled one
    assert ended["outcome"] == "already_scored"
    store.close()
