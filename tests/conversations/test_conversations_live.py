"""Conversations live: a running service fed the conversation captures over OTLP/HTTP rebuilds
each conversation in order, scores it with the four conversation scorers (against the scripted
judge) and a custom scorer, shows it through the API, scores it again when a late turn arrives
(keeping the earlier scores, the latest first), and re-emits its scores in the last turn's context with ``gen_ai.conversation.id``; on SQLite and
PostgreSQL.

Conventions: OTel GenAI (pydantic-ai, ``gen_ai.conversation.id``), OpenInference
(``session.id``), OpenLLMetry (association properties), Vercel AI SDK (telemetry metadata) and
Mastra (its memory thread).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.judge_server import JudgeServer, json_reply
from tests.support.otlp_receiver import otlp_receiver
from tests.support.paths import CAPTURES, REPO
from tests.support.server_process import ServerProcess, start_server, wait_for

USERS = [
    "Hi, my name is Ada and I live in Lyon.",
    "Can you recommend a museum in my city?",
    "What is my name?",
]
LATE = {
    "pydantic-ai": "01a213a3-643a-705a-85ab-969a155bbe02",
    "openinference-openai": "session-oi-ada",
    "openllmetry-openai": "session-tl-ada",
}
"""Conventions whose third turn arrives late, and their conversation ids (pydantic-ai's is the
UUID7 it generated, see the capture's spans.txt)."""
WHOLE = {"vercel-ai-sdk-v6": "session-vercel-ada", "mastra": "thread-mastra-ada"}
CONVERSATION_SCORERS = {
    "retention": "knowledge-retention",
    "completeness": "conversation-completeness",
    "role": "role-adherence",
    "relevancy": "conversation-relevancy",
}


def _documents(library: str, kind: str) -> list[tuple[Path, dict[str, Any]]]:
    folder = CAPTURES / library / "conversation"
    names = sorted(p for p in folder.glob("*.json") if not p.name.endswith(".raw.json"))
    wanted = [
        p for p in names if (".logs." in p.name) == (kind == "logs") and ".metrics." not in p.name
    ]
    return [(path, json.loads(path.read_text())) for path in wanted]


def _turn_traces(library: str) -> list[str]:
    """The capture's trace ids in turn order (by their earliest span)."""
    starts: dict[str, int] = {}
    for _path, document in _documents(library, "traces"):
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    start = int(span["startTimeUnixNano"])
                    starts[span["traceId"]] = min(start, starts.get(span["traceId"], start))
    return sorted(starts, key=starts.__getitem__)


def _only(
    document: dict[str, Any], key: str, inner: str, items: str, trace_ids: set[str]
) -> dict[str, Any] | None:
    """The export request narrowed to the records of ``trace_ids`` (None if none is left)."""
    resources = []
    for resource in document[key]:
        scopes = [
            {**scope, items: kept}
            for scope in resource[inner]
            if (kept := [r for r in scope[items] if r.get("traceId") in trace_ids])
        ]
        if scopes:
            resources.append({**resource, inner: scopes})
    return {key: resources} if resources else None


def _send(server: ServerProcess, library: str, trace_ids: set[str]) -> None:
    """POST the capture's requests, narrowed to these traces, as OTLP/JSON (as the SDKs sent them)."""
    for signal, key, inner, items in (
        ("traces", "resourceSpans", "scopeSpans", "spans"),
        ("logs", "resourceLogs", "scopeLogs", "logRecords"),
    ):
        for _path, document in _documents(library, signal):
            body = _only(document, key, inner, items, trace_ids)
            if body is not None:
                response = server.http.post(f"/v1/{signal}", json=body, timeout=10)
                assert response.status_code == 200, response.text


def _script(judge: JudgeServer) -> None:
    judge.script(
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
    judge.script(
        "RetentionVerdicts",
        json_reply(
            {
                "verdicts": [  # no attrition in any answer
                    {"turn": turn, "verdict": "no", "reason": "kept"} for turn in (1, 2, 3)
                ]
            }
        ),
    )
    judge.script(
        "UserIntentions",
        json_reply({"intentions": ["get a museum recommendation", "hear their name"]}),
    )
    judge.script(
        "IntentionVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"verdict": "yes", "reason": "turn 2"},
                    {"verdict": "yes", "reason": "turn 3"},
                ]
            }
        ),
    )
    judge.script("OutOfCharacterTurns", json_reply({"verdicts": []}))
    judge.script(
        "TurnRelevancyVerdicts",
        json_reply(
            {
                "verdicts": [
                    {"turn": 1, "verdict": "yes"},
                    {"turn": 2, "verdict": "yes"},
                    {"turn": 3, "verdict": "yes"},
                ]
            }
        ),
    )


def _get(server: ServerProcess, path: str, **params: Any) -> Any:
    response = server.http.get(path, params=params, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def _scored(server: ServerProcess, turns: dict[str, int]) -> dict[str, dict[str, Any]] | None:
    """The conversations, by id, once each has ``turns[id]`` turns and all five scores made
    after its last turn (the turn-order score counts the turns it was shown)."""
    items = {item["id"]: item for item in _get(server, "/api/conversations", limit=50)["items"]}
    for conversation, count in turns.items():
        item = items.get(conversation)
        if item is None or item["turn_count"] != count:
            return None
        scores = _latest(item["scores"])
        if len(scores) != 5 or scores["turns"]["score"] != count:
            return None
    return items


def _latest(scores: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each binding's latest score: the API lists a conversation's scores latest first."""
    latest: dict[str, dict[str, Any]] = {}
    for score in scores:
        latest.setdefault(score["binding"], score)
    return latest


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        _script(server)
        yield server


def test_conversations_are_rebuilt_scored_and_rescored_live(
    db_url: str, tmp_path: Path, judge: JudgeServer
) -> None:
    scorers = [
        {"name": name, "scorer": scorer, "target": "conversation", "threshold": 0.5}
        for name, scorer in CONVERSATION_SCORERS.items()
    ]
    scorers += [
        {
            "name": "turns",
            "scorer": "tests.support.conversation_scorers:turn_order",
            "target": "conversation",
        },
        {"name": "answer", "scorer": "tests.support.custom_scorers:answer_present"},
    ]
    with otlp_receiver() as receiver:
        config = {
            "judges": {"default": {"model": "openai/gpt-4o-mini", "api_base": judge.base_url}},
            "scorers": scorers,
            "conversations": {"idle_timeout": 1.0},
            "export": {"otlp_endpoint": receiver.endpoint, "batch_delay": 0.2},
            "workers": {"poll_interval": 0.05, "processes": 1},
        }
        with start_server(
            tmp_path, db_url=db_url, config=config, env={"PYTHONPATH": str(REPO)}
        ) as server:
            turns = {library: _turn_traces(library) for library in [*LATE, *WHOLE]}
            for library in LATE:
                _send(server, library, set(turns[library][:2]))
            for library in WHOLE:
                _send(server, library, set(turns[library]))
            ids = {**LATE, **WHOLE}
            first = wait_for(
                lambda: _scored(server, {ids[lib]: 2 if lib in LATE else 3 for lib in ids}),
                60.0,
                "scored conversations",
            )

            for library, conversation in ids.items():
                document = _get(server, f"/api/conversations/{conversation}")
                expected = USERS[:2] if library in LATE else USERS
                assert [turn["user"] for turn in document["turns"]] == expected, library
                assert [turn["trace_id"] for turn in document["turns"]] == turns[library][
                    : len(expected)
                ]
                assert all(
                    [s["binding"] for s in turn["scores"]] == ["answer"]
                    for turn in document["turns"]
                )
                scores = {score["binding"]: score for score in document["scores"]}
                assert {s["status"] for s in scores.values()} == {"ok"}, (library, scores)
                assert (
                    scores["retention"]["score"] == 1.0 and scores["completeness"]["score"] == 1.0
                )
                assert scores["role"]["score"] == 1.0 and scores["relevancy"]["score"] == 1.0
                assert scores["turns"]["reason"].startswith(" | ".join(expected))
                assert {s["trace_id"] for s in scores.values()} == {
                    turns[library][len(expected) - 1]
                }

            # The late third turns: each of those conversations is scored again with three
            # turns, and its scores at two turns are kept after them.
            for library in LATE:
                _send(server, library, {turns[library][2]})
            later = wait_for(
                lambda: _scored(server, dict.fromkeys(ids.values(), 3)),
                60.0,
                "rescored conversations",
            )
            for library in LATE:
                before, after = first[ids[library]]["scores"], later[ids[library]]["scores"]
                assert [s["conversation_turns"] for s in after] == [3] * 5 + [2] * 5
                assert {s["trace_id"] for s in after[:5]} == {turns[library][2]}
                assert after[5:] == before
            for library in WHOLE:  # untouched
                assert later[ids[library]]["scores"] == first[ids[library]]["scores"]

            # Pages and filters of the list; summary over a conversation binding like any other.
            page = _get(server, "/api/conversations", limit=2)
            rest = _get(server, "/api/conversations", limit=10, cursor=page["next_cursor"])
            assert (
                len(page["items"]) == 2 and len(rest["items"]) == 3 and rest["next_cursor"] is None
            )
            listed = {item["id"] for item in page["items"] + rest["items"]}
            assert listed == set(ids.values())
            agents = {
                item["id"]
                for item in _get(server, "/api/conversations", agent="Concierge")["items"]
            }
            assert agents == {LATE["pydantic-ai"], "thread-mastra-ada"}
            services = _get(server, "/api/conversations", service="vercel-ai-demo")["items"]
            assert [item["id"] for item in services] == ["session-vercel-ada"]
            assert _get(server, "/api/conversations", until="2000-01-01T00:00:00Z")["items"] == []
            summary = _get(server, "/api/scores/summary", binding="retention", bucket="1d")
            assert sum(row["count"] for row in summary["series"]) == 5 + 3  # 3 scored twice
            missing = server.http.get("/api/conversations/nope", timeout=10)
            assert missing.status_code == 404

            emitted_count = 5 * 5 + 3 * 5 + 15  # conversation scores, their rescores, run scores
            receiver.wait_for(spans=emitted_count, logs=emitted_count, timeout=30)

    # Re-emission: each conversation's last score in its last turn's agent span context.
    emitted = [s for s in receiver.spans if "gen_ai.conversation.id" in s.attributes]
    last = {
        (s.trace_id, s.attributes["gen_ai.conversation.id"]) for s in emitted if s.name == "turns"
    }
    assert {(turns[library][2], ids[library]) for library in ids} <= last
    for span in emitted:
        assert (
            span.events[0].attributes["gen_ai.conversation.id"]
            == span.attributes["gen_ai.conversation.id"]
        )
