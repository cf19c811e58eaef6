"""Conversation scoring in process on real SQLite and PostgreSQL: turns recorded as traces are
scored, the conversation rebuilt in order and scored once idle, scored again after a later turn
(a score row of its own, labelled with its turns, beside the first), cut to max_turns with a summary line, sampled and filtered whole."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import select

from tests.support import conversation_scorers
from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.ingest.files import load_traces
from tracescore.monitor.alerts import AlertEvaluator
from tracescore.pipeline.conversations import ConversationScoring
from tracescore.pipeline.scoring_task import build_worker
from tracescore.spans import Trace
from tracescore.store import open_store
from tracescore.store.conversations import ConversationRow, TurnRecord, record_turns
from tracescore.store.score_aggregates import aggregate_scores
from tracescore.store.score_reads import ScoreFilter
from tracescore.store.scores import SCORES, SamplingDecisionRow, StoredScore

FAR_FUTURE = 4_000_000_000.0
USERS = [
    "Hi, my name is Ada and I live in Lyon.",
    "Can you recommend a museum in my city?",
    "What is my name?",
]
TURN_ORDER = "  - {name: turns, scorer: 'tests.support.conversation_scorers:turn_order', target: conversation}\n"
ANSWER = "  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n"


def _turns(library: str) -> list[Trace]:
    """The capture's three traces in turn order."""
    traces = load_traces([CAPTURES / library / "conversation"])
    return sorted(traces, key=lambda trace: min(span.start_time_ns for span in trace.spans))


class Pipeline:
    """A store and one instance's trace worker and conversation loop, driven step by step."""

    def __init__(self, db_url: str, bindings: str, conversations: str = "") -> None:
        config = parse_config("scorers:\n" + bindings + conversations).scoring()
        self.store = open_store(db_url)
        self.worker = build_worker(config, self.store)
        scoring = self.worker.scoring
        self.conversations = ConversationScoring(
            scoring,
            self.store,
            scoring.conversation_bindings,
            config.conversations,
            self.worker.owner,
        )

    def send(self, *traces: Trace) -> list[StoredScore]:
        """Store the traces and score them as the worker does once they are ready."""
        for trace in traces:
            self.store.write(trace.spans, trace.logs)
        claims = self.store.queue.claim(self.worker.owner, 100, 30.0, now=FAR_FUTURE)
        return asyncio.run(self.worker.process_batch(claims))

    def score_conversations(self, now: float = FAR_FUTURE) -> list[StoredScore]:
        claims = self.conversations.queue.claim(self.worker.owner, 100, 30.0, now=now)

        async def go() -> list[StoredScore]:
            return [row for claim in claims for row in await self.conversations.process(claim)]

        return asyncio.run(go())

    def stored(self, table: Any = SCORES) -> list[Any]:  # type: ignore[attr-defined]
        with self.store.engine.connect() as connection:
            return list(connection.execute(select(table)).all())


def test_a_conversation_is_scored_in_order_once_idle_and_rescored_after_a_later_turn(
    db_url: str,
) -> None:
    pipeline = Pipeline(db_url, TURN_ORDER + ANSWER)
    first, second, third = _turns("openinference-openai")
    pipeline.send(second, first)  # turns may be scored in any order
    assert pipeline.score_conversations(now=0.0) == []  # not idle yet
    (row,) = pipeline.score_conversations()
    assert (row["status"], row["score"], row["conversation_id"]) == ("ok", 2.0, "session-oi-ada")
    assert row["reason"] == f"{USERS[0]} | {USERS[1]} (2 rebuilt)"
    assert (row["trace_id"], row["span_id"]) == (
        second.trace_id,
        second.spans[0].span_id,
    )  # the last turn's
    assert pipeline.score_conversations() == []  # scored: nothing until a new turn

    pipeline.send(third)
    (rescored,) = pipeline.score_conversations()
    assert rescored["score"] == 3.0 and rescored["reason"] == " | ".join(USERS) + " (3 rebuilt)"
    assert rescored["id"] != row["id"] and rescored["trace_id"] == third.trace_id
    assert (row["conversation_turns"], rescored["conversation_turns"]) == (2, 3)
    stored = pipeline.stored()
    conversation_rows = [r for r in stored if r.conversation_id is not None]
    assert sorted(
        (r.binding, r.score, r.trace_id, r.conversation_turns) for r in conversation_rows
    ) == [
        ("turns", 2.0, second.trace_id, 2),
        ("turns", 3.0, third.trace_id, 3),
    ]
    # The turns' run scores are there too, one per trace, without a conversation id.
    assert sorted(r.trace_id for r in stored if r.binding == "answer") == sorted(
        t.trace_id for t in (first, second, third)
    )


def test_only_conversation_bindings_still_record_every_turn(db_url: str) -> None:
    pipeline = Pipeline(db_url, TURN_ORDER)
    assert pipeline.worker.scoring.bindings == []
    assert len(pipeline.worker.scoring.conversation_bindings) == 1
    assert pipeline.send(*_turns("pydantic-ai")) == []  # no run score
    (row,) = pipeline.score_conversations()
    assert row["score"] == 3.0 and (row["reason"] or "").startswith(" | ".join(USERS))


def test_a_judge_is_shown_the_latest_max_turns_and_a_line_for_the_rest(db_url: str) -> None:
    pipeline = Pipeline(db_url, TURN_ORDER, "conversations: {max_turns: 2}\n")
    pipeline.send(*_turns("vercel-ai-sdk-v6"))
    (row,) = pipeline.score_conversations()
    assert row["score"] == 2.0
    assert (
        row["reason"]
        == f"{USERS[1]} | {USERS[2]} (2 rebuilt) [1 earlier turn not shown; the user said: {USERS[0]!r}]"
    )


def test_sampling_is_by_conversation_and_filters_see_the_last_turn(db_url: str) -> None:
    bindings = (
        "  - {name: never, scorer: 'tests.support.conversation_scorers:turn_order', target: conversation,"
        " sampling: {rate: 0.0}}\n"
        "  - {name: other-agent, scorer: 'tests.support.conversation_scorers:turn_order', target: conversation,"
        " filter: {agent: [WeatherBot]}}\n"
        "  - {name: concierge, scorer: 'tests.support.conversation_scorers:turn_order', target: conversation,"
        " filter: {agent: ['Concier*'], service: [mastra-demo]}}\n"
    )
    pipeline = Pipeline(db_url, bindings)
    pipeline.send(*_turns("mastra"))
    (row,) = pipeline.score_conversations()
    assert (row["binding"], row["score"], row["agent"], row["service"]) == (
        "concierge",
        3.0,
        "Concierge",
        "mastra-demo",
    )
    decisions = {(d.binding, d.sampled) for d in pipeline.stored(SamplingDecisionRow.__table__)}  # type: ignore[attr-defined]
    assert decisions == {("never", False), ("concierge", True)}  # other-agent's filter excluded it


def test_the_conversation_ids_come_from_the_configured_attributes(db_url: str) -> None:
    """Grouped by Vercel's threadId instead of its sessionId when the config says so."""
    pipeline = Pipeline(
        db_url, TURN_ORDER, "conversations: {id_attributes: [ai.telemetry.metadata.threadId]}\n"
    )
    pipeline.send(*_turns("vercel-ai-sdk-v6"))
    (row,) = pipeline.score_conversations()
    assert row["conversation_id"] == "thread-vercel-ada"


def test_a_failing_scorer_stores_an_error_score_saying_why(db_url: str) -> None:
    pipeline = Pipeline(
        db_url,
        "  - {name: boom, scorer: 'tests.support.custom_scorers:exploding', target: conversation}\n",
    )
    pipeline.send(*_turns("openllmetry-openai"))
    (row,) = pipeline.score_conversations()
    assert row["status"] == "error" and "exploded on purpose" in (row["error"] or "")
    assert row["conversation_id"] == "session-tl-ada"


def test_alert_rules_and_summaries_select_a_conversation_binding(db_url: str) -> None:
    """A threshold rule on a conversation binding fires on the conversation scores, segmented
    by agent like a run binding's; a rule naming it passes the config's cross-checks."""
    pipeline = Pipeline(db_url, TURN_ORDER + ANSWER)
    pipeline.send(*_turns("mastra"))
    pipeline.send(*_turns("pydantic-ai")[:2])
    assert len(pipeline.score_conversations()) == 2
    config = parse_config(
        "scorers:\n" + TURN_ORDER + ANSWER + "alerts:\n  rules:\n"
        "    - {name: short-chats, type: threshold, binding: turns, stat: mean, below: 3,"
        " min_samples: 1, segment_by: [agent]}\n"
    )
    evaluator = AlertEvaluator(pipeline.store.engine, config.alerts, channels={})
    try:
        report = evaluator.run_once()
    finally:
        evaluator.close()
    (verdict,) = report.verdicts["short-chats"]  # both conversations' agent is Concierge
    assert verdict.segment == {"agent": "Concierge"} and verdict.value == 2.5 and verdict.firing
    with pipeline.store.engine.connect() as connection:
        (group,) = aggregate_scores(
            connection, ScoreFilter(binding="turns"), ["scorer_id"], bucket_seconds=None
        )
    assert group.moments.n == 2 and group.moments.mean == 2.5


def test_a_slow_conversation_holds_back_no_other_and_is_handed_back_on_shutdown(
    db_url: str,
) -> None:
    pipeline = Pipeline(
        db_url,
        "  - {name: slow, scorer: 'tests.support.conversation_scorers:slow_for_mastra', target: conversation}\n",
        "conversations: {idle_timeout: 0.1}\nworkers: {poll_interval: 0.05}\n",
    )
    pipeline.send(*_turns("mastra"), *_turns("openinference-openai"))

    async def go() -> list[Any]:
        loop = asyncio.create_task(pipeline.conversations.run())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (stored := pipeline.stored()):
            await asyncio.sleep(0.05)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        return stored

    stored = asyncio.run(go())
    assert [row.conversation_id for row in stored] == [
        "session-oi-ada"
    ]  # scored while Mastra's waits
    table = ConversationRow.__table__  # type: ignore[attr-defined]
    with pipeline.store.engine.connect() as connection:
        states: dict[str, str] = dict(
            connection.execute(select(table.c.conversation_id, table.c.state)).all()
        )
        attempts = connection.execute(
            select(table.c.attempts).where(table.c.conversation_id == "thread-mastra-ada")
        ).scalar_one()
    assert states == {"session-oi-ada": "scored", "thread-mastra-ada": "ready"} and attempts == 0


def test_two_instances_score_each_conversation_exactly_once(db_url: str) -> None:
    """Two workers (two instances on one database) race for 30 ready conversations: each is
    claimed, scored and stored by one of them only."""
    first = Pipeline(db_url, TURN_ORDER)
    second = Pipeline(db_url, TURN_ORDER)
    with first.store.write_transaction() as connection:
        record_turns(
            connection,
            [
                TurnRecord(
                    conversation_id=f"chat-{n:02d}",
                    trace_id=f"{n * 10 + turn:032x}",
                    span_id=f"{n * 10 + turn:016x}",
                    start_time_ns=turn,
                    user_text=f"question {turn}",
                    answer_text="answer",
                    agent_name="bot",
                    service_name="svc",
                )
                for n in range(30)
                for turn in range(2)
            ],
            now=0.0,
        )
    conversation_scorers.SCORED.clear()

    async def race() -> list[list[StoredScore]]:
        async def drain(pipeline: Pipeline) -> list[StoredScore]:
            rows: list[StoredScore] = []
            loop = pipeline.conversations
            while claims := await asyncio.to_thread(
                loop.queue.claim, loop.owner, 4, 30.0, FAR_FUTURE
            ):
                for found in await asyncio.gather(*map(loop.process, claims)):
                    rows.extend(found)
            return rows

        return list(await asyncio.gather(drain(first), drain(second)))

    by_first, by_second = asyncio.run(race())
    scored = [row.get("conversation_id") or "" for row in by_first + by_second]
    assert sorted(scored) == [f"chat-{n:02d}" for n in range(30)]  # once each, all of them
    assert sorted(conversation_scorers.SCORED) == sorted(scored)
    assert len(first.stored()) == 30
    second.store.close()
