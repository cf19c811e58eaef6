"""Retention of what users and exporters sent besides spans (issue 33, item 8): conversation
records (their turns hold user text), human feedback, and ingest requests quarantined as
unstorable, on real SQLite files (whose journal is a spool of files) and the real PostgreSQL
server (whose journal is a table)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import insert, select, update

from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import Pruner
from tracescore.store import open_store
from tracescore.store.conversations import (
    ConversationRow,
    ConversationTurnRow,
    TurnRecord,
    record_turns,
)
from tracescore.store.feedback import FeedbackRow
from tracescore.store.insights import FailedRunTextRow, FailureGroupRow

DAY = 86400.0
NOW = time.time()
OLD, RECENT = NOW - 10 * DAY, NOW - DAY
CONVERSATIONS = ConversationRow.__table__  # type: ignore[attr-defined]
TURNS = ConversationTurnRow.__table__  # type: ignore[attr-defined]
FEEDBACK = FeedbackRow.__table__  # type: ignore[attr-defined]
GROUPS = FailureGroupRow.__table__  # type: ignore[attr-defined]
TEXTS = FailedRunTextRow.__table__  # type: ignore[attr-defined]


def _turn(conversation: str, trace_id: str) -> TurnRecord:
    return TurnRecord(
        conversation_id=conversation,
        trace_id=trace_id,
        span_id="1" * 16,
        start_time_ns=int(OLD * 1e9),
        user_text=f"my account number is {conversation}",
        answer_text="noted",
        agent_name="a",
        service_name="s",
    )


def _ids(store, column) -> set[str]:
    with store.engine.connect() as connection:
        return set(connection.execute(select(column)).scalars())


def test_conversations_go_whole_with_their_turns_once_their_last_turn_is_old(db_url: str) -> None:
    store = open_store(db_url)
    with store.write_transaction() as connection:
        record_turns(connection, [_turn("old", "a" * 32), _turn("old", "b" * 32)], now=OLD)
        record_turns(connection, [_turn("old-being-scored", "c" * 32)], now=OLD)
        record_turns(connection, [_turn("old-then-recent", "d" * 32)], now=OLD)
        record_turns(connection, [_turn("old-then-recent", "e" * 32)], now=RECENT)
        connection.execute(
            update(CONVERSATIONS)
            .where(CONVERSATIONS.c.conversation_id == "old-being-scored")
            .values(state="claimed")
        )
        connection.execute(
            update(CONVERSATIONS)
            .where(CONVERSATIONS.c.conversation_id == "old")
            .values(state="scored")
        )

    report = Pruner(store.write_transaction, RetentionConfig(conversations="7d", batch_size=1)).run(
        NOW
    )

    assert report.removed["conversations"] == 1
    assert _ids(store, CONVERSATIONS.c.conversation_id) == {"old-being-scored", "old-then-recent"}
    assert _ids(store, TURNS.c.trace_id) == {"c" * 32, "d" * 32, "e" * 32}


def test_feedback_goes_by_the_time_it_was_recorded(db_url: str) -> None:
    store = open_store(db_url)
    with store.write_transaction() as connection:
        connection.execute(
            insert(FEEDBACK),
            [
                {
                    "id": name,
                    "trace_id": "a" * 32,
                    "name": "thumbs",
                    "value": 1.0,
                    "comment": "the user's words",
                    "author": "someone",
                    "source": "api",
                    "created_at": datetime.fromtimestamp(at, UTC),
                }
                for name, at in [("old-1", OLD), ("old-2", OLD - 1), ("recent", RECENT)]
            ],
        )

    report = Pruner(store.write_transaction, RetentionConfig(feedback="7d", batch_size=1)).run(NOW)

    assert report.removed["feedback"] == 2 and _ids(store, FEEDBACK.c.id) == {"recent"}


def test_failure_modes_no_pass_found_for_long_go_and_the_latest_pass_stays(db_url: str) -> None:
    store = open_store(db_url)
    group = {
        "name": "n",
        "description": "",
        "named_by": "terms",
        "terms": {"timeout": 1.0},
        "first_seen": OLD,
        "previous_size": 0,
        "share": 0.0,
        "details": {},
    }
    with store.write_transaction() as connection:
        connection.execute(
            insert(GROUPS),
            [
                # the latest pass (long ago: passes stopped) found it: it stays
                {**group, "id": "latest-pass", "last_seen": OLD, "size": 7},
                {**group, "id": "gone-long-ago", "last_seen": OLD, "size": 0},
                {**group, "id": "gone-lately", "last_seen": RECENT, "size": 0},
            ],
        )
        connection.execute(
            insert(TEXTS),
            [
                {"trace_id": trace_id, "span_id": "1" * 16, "failed_at": at, "tools": []}
                for trace_id, at in [("a" * 32, OLD), ("b" * 32, RECENT)]
            ],
        )

    report = Pruner(store.write_transaction, RetentionConfig(insights="7d", batch_size=1)).run(NOW)

    assert report.removed["insights"] == 2
    assert _ids(store, GROUPS.c.id) == {"latest-pass", "gone-lately"}
    assert _ids(store, TEXTS.c.trace_id) == {"b" * 32}


def test_quarantined_journal_entries_go_by_when_they_were_received(db_url: str) -> None:
    store = open_store(db_url)
    journal = store.journal
    entries = [journal.append("traces", b"\x0a\x03bad", "collector") for _ in range(3)]
    for entry in entries[:2]:
        journal.quarantine(entry.seq, "could not be stored: a test's reason")
    ten_days_on = time.time() + 10 * DAY

    kept = Pruner(store.write_transaction, RetentionConfig(quarantine="30d"), journal.kept).run(
        ten_days_on
    )
    assert kept.removed["quarantine"] == 0 and len(journal.quarantined()) == 2
    gone = Pruner(
        store.write_transaction, RetentionConfig(quarantine="7d", batch_size=1), journal.kept
    ).run(ten_days_on)

    assert gone.removed["quarantine"] == 2 and journal.quarantined() == []
    assert [entry.seq for entry in journal.entries()] == [
        entries[2].seq
    ]  # a waiting entry is never pruned
