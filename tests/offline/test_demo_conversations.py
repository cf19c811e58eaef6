"""The demo's multi-turn agent: its turns rebuild into conversations, and its memory failing after
the drop shows as a conversation-level regression.

Traces are made by the demo's own sender (seeded), exported in memory, written as an OTLP
protobuf file and read back the way ``tracescore score`` reads files.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import create_engine, select

from tests.support.server_process import start_server, wait_for
from tracescore.extract.conversation import Conversation
from tracescore.extract.model import AgentRun
from tracescore.offline.conversations import by_conversation
from tracescore.offline.demo import AGENTS, DemoSender
from tracescore.offline.demo_chat import CHAT_AGENT, CHAT_SERVICE, TURNS_PER_CONVERSATION
from tracescore.offline.inputs import read_runs
from tracescore.scorers import registry
from tracescore.store.scores import SCORES


def demo_runs(
    tmp_path: Path, *, dropped: bool, traces: int = 60, chat_share: float = 1.0
) -> list[AgentRun]:
    memory = InMemorySpanExporter()
    sender = DemoSender(
        "unused",
        seed=11,
        drop_after=0 if dropped else float("inf"),
        exporter=memory,
        chat_share=chat_share,
    )
    try:
        for _ in range(traces):
            sender.send_one()
    finally:
        sender.shutdown()
    export = tmp_path / f"demo-{dropped}-{chat_share}.pb"
    export.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    return read_runs([export])


def finished(runs: list[AgentRun]) -> list[Conversation]:
    return [
        c for c in by_conversation(runs, max_turns=20) if len(c.turns) == TURNS_PER_CONVERSATION
    ]


def test_the_chat_agents_turns_rebuild_into_conversations_in_order(tmp_path: Path) -> None:
    runs = demo_runs(tmp_path, dropped=False)
    primary = [run for run in runs if run.primary]
    assert len(primary) == 60 and {(r.agent_name, r.service_name) for r in primary} == {
        (CHAT_AGENT, CHAT_SERVICE)
    }
    assert all(run.conversation_id and run.input.system_messages for run in primary)
    conversations = finished(runs)
    assert len(conversations) >= 12  # 60 turns over conversations of 4, at most 3 left open
    remembered = 0
    for conversation in conversations:
        users = [turn.user for turn in conversation.turns]
        assert (
            users[0].startswith("Hi, I'm ")
            and users[3] == "Great. By the way, do you remember my name?"
        )
        name = users[0].removeprefix("Hi, I'm ").split(".")[0]
        assert name in conversation.turns[0].answer
        remembered += name in conversation.turns[3].answer
        assert len({turn.trace_id for turn in conversation.turns}) == TURNS_PER_CONVERSATION
    assert remembered >= 0.8 * len(conversations)  # before the drop, memory fails on 5 % of turns


def test_the_chat_agents_memory_failing_is_a_conversation_level_regression(tmp_path: Path) -> None:
    """Keyword coverage of the whole conversation (every user keyword against every answer), as
    a ``target: conversation`` binding of the code scorer stores it, halves after the drop."""
    coverage = registry.get("keyword-coverage").factory()
    before = statistics.fmean(
        coverage.run_sync(c).score or 0.0 for c in finished(demo_runs(tmp_path, dropped=False))
    )
    after_runs = demo_runs(tmp_path, dropped=True)
    after = statistics.fmean(coverage.run_sync(c).score or 0.0 for c in finished(after_runs))
    assert before > 0.3 and after < before * 0.6, (before, after)  # measured: 0.36 -> 0.18
    forgetful = sum("don't know your name" in c.turns[3].answer for c in finished(after_runs))
    assert forgetful >= len(finished(after_runs)) // 2


def test_the_chat_share_leaves_the_other_agents_traffic_as_it_was(tmp_path: Path) -> None:
    plain = demo_runs(tmp_path, dropped=False, traces=40, chat_share=0.0)
    mixed = demo_runs(tmp_path, dropped=False, traces=40, chat_share=0.25)
    agents = Counter(run.agent_name for run in mixed if run.primary)
    assert set(agents) == {a.name for a in AGENTS} | {CHAT_AGENT} and 4 <= agents[CHAT_AGENT] <= 20
    assert CHAT_AGENT not in {run.agent_name for run in plain}

    # The single-turn agents' questions come in the same order with or without the chat agent.
    def questions(runs: list[AgentRun]) -> list[str]:
        sent = sorted(
            (run for run in runs if run.primary and run.agent_name != CHAT_AGENT),
            key=lambda run: run.start_time or 0,
        )
        return [run.mastra_input()["inputMessages"][0]["content"]["content"] for run in sent]

    assert questions(mixed) == questions(plain)[: len(questions(mixed))]


CHAT_CONFIG = {
    "conversations": {"idle_timeout": "1s", "max_wait": "5s"},
    "workers": {"poll_interval": 0.05},
    "scorers": [
        {"name": "coverage", "scorer": "keyword-coverage"},
        {
            "name": "chat-coverage",
            "scorer": "keyword-coverage",
            "target": "conversation",
            "filter": {"agent": [CHAT_AGENT]},
        },
    ],
}


def test_the_service_scores_the_demo_conversations_and_sees_the_memory_fail(tmp_path: Path) -> None:
    """``tracescore serve`` with a conversation binding, fed the demo's chat agent before and
    after the drop: each conversation is scored once idle, and the scores of the conversations
    after the drop are lower (the dashboard's chart of ``chat-coverage`` drops with them)."""
    phases: dict[bool, set[str]] = {False: set(), True: set()}
    with start_server(tmp_path / "server", config=CHAT_CONFIG, idle_timeout=0.3) as server:
        sender = DemoSender(server.base_url, seed=4, drop_after=float("inf"), chat_share=1.0)
        try:
            for index in range(80):
                dropped = index >= 40
                sender.drop_after = 0.0 if dropped else float("inf")
                turns = {c.id: c.turn for c in sender.chat.open}
                sender.send_one()
                now = {c.id: c.turn for c in sender.chat.open}
                # The conversation that got this turn: one more turn, or finished and gone.
                (turned,) = [i for i in now if now[i] > turns.get(i, 0)] or [
                    i for i in turns if i not in now
                ]
                phases[dropped].add(turned)
        finally:
            sender.shutdown()
        either = phases[False] & phases[True]  # conversations that span the drop
        expected = len(phases[False] | phases[True])
        rows = _wait_for_rows(server.db_url, "chat-coverage", expected, timeout=60.0)
    assert {row["status"] for row in rows} == {"ok"} and len(rows) == expected
    by_phase = {
        dropped: [
            row["score"] for row in rows if row["conversation_id"] in phases[dropped] - either
        ]
        for dropped in (False, True)
    }
    before, after = statistics.fmean(by_phase[False]), statistics.fmean(by_phase[True])
    assert len(by_phase[False]) >= 8 and len(by_phase[True]) >= 8
    assert after < before * 0.7, (before, after)


def _wait_for_rows(db_url: str, binding: str, count: int, timeout: float) -> list[dict[str, Any]]:
    engine = create_engine(db_url)
    rows: list[dict[str, Any]] = []

    def enough() -> bool:
        with engine.connect() as connection:
            query = select(SCORES).where(SCORES.c.binding == binding)
            rows[:] = [dict(r._mapping) for r in connection.execute(query)]
        return len(rows) >= count

    try:
        wait_for(enough, timeout, lambda: f"{count} {binding} scores (only {len(rows)})")
    finally:
        engine.dispose()
    return rows
