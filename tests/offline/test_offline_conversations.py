"""Conversations offline: ``tracescore score`` groups the runs of real captures by conversation
id for the conversation scorers, and ``run_evals`` scores conversations given as lists of turns.

The captures are three-turn chats with Ada from Lyon recorded from real instrumentation
libraries (tests/fixtures/captures/_make/turns.py); judge calls go to the scripted judge.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.judge_server import JudgeServer, json_reply
from tests.support.paths import CAPTURES
from tracescore.cli import app
from tracescore.extract.conversation import Turn
from tracescore.ingest.files import load_traces
from tracescore.judge import JudgeConfig
from tracescore.offline.conversations import as_conversation, by_conversation
from tracescore.offline.inputs import read_runs
from tracescore.offline.runner import run_evals
from tracescore.pipeline.conversations import conversation_score_id
from tracescore.scorers.conversation.knowledge_retention import VERSION as RETENTION_VERSION
from tracescore.store import open_store

ADA = [
    ("Hi, my name is Ada and I live in Lyon.", "Nice to meet you, Ada! How can I help you today?"),
    (
        "Can you recommend a museum in my city?",
        "In Lyon, the Musee des Confluences is a great choice.",
    ),
    ("What is my name?", "Your name is Ada, and you live in Lyon."),
]
CONVERSATIONS = {
    "pydantic-ai": "01a213a3-643a-705a-85ab-969a155bbe02",
    "openinference-openai": "session-oi-ada",
    "mastra": "thread-mastra-ada",
    "vercel-ai-sdk-v6": "session-vercel-ada",
}


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        running.script(
            "UserFacts",
            json_reply(
                {
                    "facts": [
                        {"turn": 1, "fact": "the user's name is Ada"},
                        {"turn": 1, "fact": "the user lives in Lyon"},
                    ]
                }
            ),
        )
        running.script(
            "RetentionVerdicts",
            json_reply(
                {
                    "verdicts": [
                        {"turn": 1, "verdict": "no"},
                        {"turn": 2, "verdict": "no"},
                        {"turn": 3, "verdict": "yes"},
                    ]
                }
            ),
        )
        yield running


def captures(*libraries: str) -> list[Path]:
    return [CAPTURES / library / "conversation" for library in libraries]


def test_runs_of_every_convention_group_into_their_conversations_in_order() -> None:
    conversations = by_conversation(read_runs(captures(*CONVERSATIONS)), max_turns=20)
    assert sorted(c.id for c in conversations) == sorted(CONVERSATIONS.values())
    for conversation in conversations:
        assert [(t.user, t.answer) for t in conversation.turns] == ADA, conversation.id
        assert (
            len({t.trace_id for t in conversation.turns}) == 3
            and conversation.earlier_summary is None
        )
    # Traces that name no conversation are not turns of any.
    assert (
        by_conversation(read_runs([CAPTURES / "openinference-openai" / "tool_call"]), max_turns=20)
        == []
    )


def test_a_long_conversation_is_cut_to_its_most_recent_turns_with_a_summary() -> None:
    (conversation,) = by_conversation(read_runs(captures("pydantic-ai")), max_turns=2)
    assert [t.user for t in conversation.turns] == [ADA[1][0], ADA[2][0]]
    assert conversation.earlier_summary == f"1 earlier turn not shown; the user said: {ADA[0][0]!r}"


def test_score_groups_files_by_conversation_for_conversation_scorers(
    server: JudgeServer, tmp_path: Path
) -> None:
    rows_file = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "score",
            *map(str, captures("pydantic-ai", "openinference-openai")),
            "--scorer",
            "knowledge-retention",
            "--scorer",
            "completeness",
            "--judge",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
            "--format",
            "json",
            "--output",
            str(rows_file),
            "--fail-under",
            "knowledge-retention=0.7",
        ],
    )
    assert result.exit_code == 1, result.stderr  # 0.67 < 0.7: the gate works on conversations too
    assert "knowledge-retention: mean score 0.6700 is below 0.7 (2 runs)" in result.stderr
    summaries = {s["binding"]: s for s in json.loads(result.stdout)}
    assert (summaries["knowledge-retention"]["n"], summaries["knowledge-retention"]["mean"]) == (
        2,
        0.67,
    )
    assert summaries["completeness"]["n"] == 6  # the run scorer still scores each of the 6 traces
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    retention = [r for r in rows if r["binding"] == "knowledge-retention"]
    assert sorted(r["conversation_id"] for r in retention) == sorted(
        CONVERSATIONS[k] for k in ("pydantic-ai", "openinference-openai")
    )
    # Rows as the service stores them: one per conversation, binding and turn count, on the
    # last turn's run.
    assert {r["scorer_version"] for r in retention} == {RETENTION_VERSION}
    assert [r["conversation_turns"] for r in retention] == [3, 3]
    assert {r["id"] for r in retention} == {
        conversation_score_id(r["conversation_id"], "knowledge-retention", r["scorer_version"], 3)
        for r in retention
    }
    conversations = by_conversation(
        read_runs(captures("pydantic-ai", "openinference-openai")), max_turns=20
    )
    last_turns = {(c.turns[-1].trace_id, c.turns[-1].span_id) for c in conversations}
    assert {(r["trace_id"], r["span_id"]) for r in retention} == last_turns
    # Each conversation's judge saw its three turns, in order, in one transcript (the second
    # conversation's identical prompts may come from the verdict cache: the row keeps them).
    for row in retention:
        prompt = next(step["prompt"] for step in row["steps"]["steps"] if step["name"] == "analyze")
        assert "Turn 1\nuser: Hi, my name is Ada and I live in Lyon." in prompt
        assert (
            "Turn 3\nuser: What is my name?\nassistant: Your name is Ada, and you live in Lyon."
            in prompt
        )
    table = CliRunner().invoke(
        app,
        [
            "score",
            *map(str, captures("mastra")),
            "--scorer",
            "knowledge-retention",
            "--judge",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
        ],
    )
    assert table.exit_code == 0 and "Scores (1 conversations)" in table.stdout


def test_run_evals_scores_conversations_given_as_lists_of_turns(server: JudgeServer) -> None:
    judge = JudgeConfig(model="openai/gpt-4o-mini", api_base=server.base_url, cache=False)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Concierge, a helpful city guide."}
    ]
    for user, answer in ADA:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    data = [
        messages,
        [{"user": user, "answer": answer} for user, answer in ADA],
        {"input": "What is my name?", "output": "Your name is Ada."},  # a single run, as before
    ]
    result = run_evals(data, ["knowledge-retention", "keyword-coverage"], judge=judge)
    chat, pairs, single = result.items
    assert chat.conversation is not None and chat.run is None
    assert [(t.user, t.answer) for t in chat.conversation.turns] == ADA
    assert chat.conversation.turns[0].run is not None
    assert (
        chat.conversation.turns[0].run.input.system_messages[0].content
        == "You are Concierge, a helpful city guide."
    )
    for item in (chat, pairs):
        assert item.scores["knowledge-retention"]["score"] == 0.67
        assert (
            item.scores["keyword-coverage"]["score"] == 0.5
        )  # all user keywords against all answers
    assert single.conversation is None and list(single.scores) == [
        "keyword-coverage"
    ]  # runs: run scorers only
    assert result.scores["knowledge-retention"] == 0.67
    refused = run_evals([messages], ["keyword-coverage"], target=lambda text: "hello")
    assert refused.items[0].error is not None and "not conversations" in refused.items[0].error


def test_items_that_are_not_conversations_are_left_to_the_run_path() -> None:
    assert as_conversation({"input": "hi", "output": "hello"}) is None
    assert as_conversation([]) is None and as_conversation(["a", "b"]) is None
    assert as_conversation([{"foo": 1}]) is None
    turns = [Turn(trace_id="t1", span_id="s1", user="Hi", answer="Hello")]
    built = as_conversation(turns)
    assert built is not None and built.turns == turns
    again = as_conversation([{"user": "Hi", "answer": "Hello"}])
    assert again is not None and again.id == as_conversation([{"user": "Hi", "answer": "Hello"}]).id  # type: ignore[union-attr]


def test_score_reads_conversation_settings_from_the_config(
    server: JudgeServer, tmp_path: Path
) -> None:
    """``conversations.max_turns`` cuts what the judge sees and ``conversations.id_attributes``
    decides which attribute names a conversation, offline as live."""
    config = tmp_path / "tracescore.yaml"
    rows_file = tmp_path / "rows.jsonl"
    config.write_text(json.dumps({"conversations": {"max_turns": 2}}))
    args = [
        "score",
        *map(str, captures("pydantic-ai")),
        "--scorer",
        "knowledge-retention",
        "--judge",
        "openai/gpt-4o-mini",
        "--api-base",
        server.base_url,
        "--format",
        "json",
    ]
    cut = CliRunner().invoke(app, [*args, "--config", str(config), "--output", str(rows_file)])
    assert cut.exit_code == 0, cut.output
    (row,) = [json.loads(line) for line in rows_file.read_text().splitlines()]
    prompt = next(step["prompt"] for step in row["steps"]["steps"] if step["name"] == "preprocess")
    assert (
        "<earlier_turns_summary>\n1 earlier turn not shown; the user said: 'Hi, my name is Ada"
        in prompt
    )
    assert "Turn 1\nuser: Can you recommend a museum in my city?" in prompt
    config.write_text(json.dumps({"conversations": {"id_attributes": ["session.id"]}}))
    other = CliRunner().invoke(app, [*args, "--config", str(config)])
    assert (
        other.exit_code == 0 and json.loads(other.stdout)[0]["n"] == 0
    )  # gen_ai.conversation.id not read


def test_rescore_leaves_conversation_bindings_to_the_service(
    tmp_path: Path, sqlite_url: str
) -> None:
    """``rescore`` re-scores stored traces' runs; a conversation binding in the config would
    otherwise be counted (and priced) against runs it never scores."""
    store = open_store(sqlite_url)
    for trace in load_traces(captures("pydantic-ai")):
        store.write(trace.spans, trace.logs)
    store.close()
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        json.dumps(
            {
                "judges": {"default": {"model": "openai/gpt-4o-mini"}},
                "scorers": [
                    {"name": "completeness", "scorer": "completeness"},
                    {"name": "memory", "scorer": "knowledge-retention", "target": "conversation"},
                ],
            }
        )
    )
    args = ["rescore", "--db", sqlite_url, "--config", str(config), "--since", "1d"]
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "not re-scored: memory (target: conversation;" in dry.stderr
    assert "3 runs to score" in dry.stdout and "memory" not in dry.stdout
    done = CliRunner().invoke(app, [*args, "--format", "json"])
    assert done.exit_code == 0, done.output
    assert [(s["binding"], s["n"]) for s in json.loads(done.stdout)] == [("completeness", 3)]
