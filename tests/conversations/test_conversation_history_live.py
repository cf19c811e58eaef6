"""Every scoring of a conversation kept, on a running service (issue 37, item 6): a conversation
scored at 3 turns, then continued to 5, has two scores labelled 3 and 5 turns, the latest first,
in the conversation's document and in the list; on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from tests.support.conversation_turns import send_turns, wait_for_scorings
from tests.support.paths import REPO
from tests.support.server_process import start_server

CONFIG = {
    "scorers": [
        {
            "name": "turns",
            "scorer": "tests.support.conversation_scorers:turn_order",
            "target": "conversation",
        }
    ],
    "conversations": {"idle_timeout": 2.0},  # the three first turns arrive well within it
    "workers": {"poll_interval": 0.05},
}


def test_a_continued_conversation_keeps_its_earlier_score(db_url: str, tmp_path: Path) -> None:
    with start_server(
        tmp_path, db_url=db_url, config=CONFIG, env={"PYTHONPATH": str(REPO)}
    ) as server:
        send_turns(server.base_url, "trip-ada", 1, 3)
        first = wait_for_scorings(server.base_url, "trip-ada", [3])
        send_turns(server.base_url, "trip-ada", 4, 5)
        document = wait_for_scorings(server.base_url, "trip-ada", [3, 5])
        (listed,) = server.http.get("/api/conversations").json()["items"]
    assert document["turn_count"] == 5
    scores = document["scores"]
    assert [(s["conversation_turns"], s["score"]) for s in scores] == [(5, 5.0), (3, 3.0)]
    assert scores[1] == first["scores"][0]  # the first scoring, kept as it was
    assert scores[0]["trace_id"] == document["turns"][4]["trace_id"]  # on the last turn's trace
    assert scores[1]["trace_id"] == document["turns"][2]["trace_id"]
    assert scores[0]["created_at"] > scores[1]["created_at"]
    assert [s["conversation_turns"] for s in listed["scores"]] == [5, 3]
