"""The conversations queue on real SQLite and PostgreSQL: turns recorded, readiness by idleness
and max_wait, leases, a later turn during a claim, failures, and ids as clients send them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select

from tests.support.owners import ended_owner
from tracescore.store import open_store
from tracescore.store.conversations import (
    MAX_ID_CHARS,
    ConversationLeaseRow,
    ConversationQueue,
    ConversationReadiness,
    ConversationRow,
    TurnRecord,
    record_turns,
    storable_id,
    turns_of,
)

T0 = 1_800_000_000.0
IDLE, MAX_WAIT = 60.0, 600.0


def _turn(
    trace: int, *, conversation: str = "chat-1", start: int | None = None, agent: str = "Concierge"
) -> TurnRecord:
    return TurnRecord(
        conversation_id=conversation,
        trace_id=f"{trace:032x}",
        span_id=f"{trace:016x}",
        start_time_ns=start if start is not None else trace * 1_000_000_000,
        user_text=f"question {trace}",
        answer_text=f"answer {trace}",
        agent_name=agent,
        service_name="chat-service",
    )


@pytest.fixture
def setup(db_url: str) -> Any:
    store = open_store(db_url)
    queue = ConversationQueue(
        store.write_transaction, ConversationReadiness(IDLE, MAX_WAIT, max_attempts=2)
    )
    yield store, queue
    store.close()


def _record(store: Any, *turns: TurnRecord, now: float) -> None:
    with store.write_transaction() as conn:
        record_turns(conn, list(turns), now)


def _row(store: Any, conversation: str = "chat-1") -> Any:
    table = ConversationRow.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        return conn.execute(select(table).where(table.c.conversation_id == conversation)).one()


def _holder(store: Any, conversation: str = "chat-1") -> str | None:
    """Who holds the conversation's lease (a row of its lease table while it is claimed)."""
    table = ConversationLeaseRow.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        return conn.execute(
            select(table.c.owner).where(table.c.conversation_id == conversation)
        ).scalar_one_or_none()


def test_turns_make_a_pending_conversation_whose_generation_grows(setup: Any) -> None:
    store, _queue = setup
    _record(store, _turn(2), _turn(1), now=T0)
    row = _row(store)
    assert (row.state, row.turn_count, row.generation) == ("pending", 2, 1)
    assert (row.first_turn_ns, row.last_turn_ns) == (1_000_000_000, 2_000_000_000)
    # A late trace of an EARLIER turn counts, but the agent stays the latest turn's.
    _record(store, _turn(3, agent="Concierge-v2"), now=T0 + 1)
    _record(store, _turn(0, start=500_000_000, agent="Old"), now=T0 + 2)
    row = _row(store)
    assert (row.turn_count, row.generation, row.agent_name, row.last_seen) == (
        4,
        3,
        "Concierge-v2",
        T0 + 2,
    )
    with store.engine.connect() as conn:
        assert [turn.user_text for turn in turns_of(conn, "chat-1")] == [
            "question 0",
            "question 1",
            "question 2",
            "question 3",
        ]
    # The same trace recorded again (rescored after a late span) is one turn, updated.
    _record(store, replace(_turn(3), answer_text="a better answer"), now=T0 + 3)
    assert _row(store).turn_count == 4
    with store.engine.connect() as conn:
        assert turns_of(conn, "chat-1")[-1].answer_text == "a better answer"


def test_ready_when_idle_or_overdue_then_claimed_once_and_scored(setup: Any) -> None:
    store, queue = setup
    _record(store, _turn(1), now=T0)
    assert queue.claim("w1", 10, 30.0, now=T0 + IDLE - 1) == []  # a turn may still come
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + IDLE)
    assert (claim.conversation_id, claim.generation) == ("chat-1", 1)
    assert queue.claim("w2", 10, 30.0, now=T0 + IDLE + 1) == []  # leased
    with store.write_transaction() as conn:
        queue.complete(conn, [claim], now=T0 + IDLE + 2)
    assert _row(store).state == "scored"
    # A chat that never pauses is still scored after max_wait.
    for second in range(0, int(MAX_WAIT) + 1, 30):
        _record(store, _turn(100 + second, conversation="busy"), now=T0 + second)
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + MAX_WAIT)
    assert claim.conversation_id == "busy"


def test_a_later_turn_rescores_even_one_arriving_during_the_claim(setup: Any) -> None:
    store, queue = setup
    _record(store, _turn(1), now=T0)
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + IDLE)
    _record(store, _turn(2), now=T0 + IDLE + 1)  # arrives while the conversation is judged
    assert _row(store).state == "claimed"
    with store.write_transaction() as conn:
        queue.complete(conn, [claim], now=T0 + IDLE + 2)
    row = _row(store)
    assert (row.state, row.scored_generation, row.generation) == ("pending", 1, 2)
    (again,) = queue.claim("w1", 10, 30.0, now=T0 + 2 * IDLE + 1)
    assert again.generation == 2
    with store.write_transaction() as conn:
        queue.complete(conn, [again], now=T0 + 2 * IDLE + 2)
    assert _row(store).state == "scored"
    _record(store, _turn(3), now=T0 + 1000)  # a turn after scoring: pending again, from now
    row = _row(store)
    assert (row.state, row.pending_since, row.turn_count) == ("pending", T0 + 1000, 3)


def test_expired_leases_are_taken_over_and_a_stale_completion_changes_nothing(setup: Any) -> None:
    store, queue = setup
    _record(store, _turn(1), now=T0)
    (first,) = queue.claim("dead-worker", 10, 30.0, now=T0 + IDLE)
    (second,) = queue.claim("w2", 10, 30.0, now=T0 + IDLE + 31)
    assert second.owner == "w2" and second.token != first.token
    with store.write_transaction() as conn:
        queue.complete(conn, [first], now=T0 + IDLE + 32)  # the dead worker woke up: ignored
    assert _holder(store) == "w2"
    with store.write_transaction() as conn:
        queue.complete(conn, [second], now=T0 + IDLE + 33)
    assert (_row(store).state, _holder(store)) == ("scored", None)  # the lease row is gone


def test_a_conversation_claimed_by_a_process_that_has_ended_is_freed_at_once(setup: Any) -> None:
    store, queue = setup
    _record(store, _turn(1), now=T0)
    gone = ended_owner()
    (first,) = queue.claim(gone, 10, 30.0, now=T0 + IDLE)
    assert queue.claim("w2", 10, 30.0, now=T0 + IDLE + 1) == []
    assert queue.expire_ended_claims() == 1
    (second,) = queue.claim("w2", 10, 30.0, now=T0 + IDLE + 1)  # long before the lease's end
    assert second.conversation_id == first.conversation_id and _holder(store) == "w2"


def test_failures_park_the_conversation_until_its_next_turn(setup: Any) -> None:
    store, queue = setup
    _record(store, _turn(1), now=T0)
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + IDLE)
    queue.release(claim, "judge unreachable")
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + IDLE + 1)
    queue.release(claim, "judge unreachable")
    row = _row(store)
    assert (row.state, row.last_error) == ("failed", "judge unreachable")
    assert queue.claim("w1", 10, 30.0, now=T0 + 10 * IDLE) == []
    _record(store, _turn(2), now=T0 + 10 * IDLE)
    row = _row(store)
    assert (row.state, row.attempts) == ("pending", 0)
    # Released without an error (shutdown) is no failed attempt.
    (claim,) = queue.claim("w1", 10, 30.0, now=T0 + 12 * IDLE)
    queue.release(claim)
    assert (_row(store).state, _row(store).attempts) == ("ready", 0)


def test_ids_as_clients_send_them_are_stored(setup: Any) -> None:
    store, queue = setup
    long_a, long_b = "a" * 500 + "1", "a" * 500 + "2"
    _record(
        store,
        _turn(1, conversation=long_a),
        _turn(2, conversation=long_b),
        _turn(3, conversation="nul\x00in/id ✓"),
        now=T0,
    )
    claims = queue.claim("w1", 10, 30.0, now=T0 + IDLE)
    ids = sorted(claim.conversation_id for claim in claims)
    assert len(ids) == 3 and all(len(i) <= MAX_ID_CHARS for i in ids)
    assert (
        storable_id(long_a) in ids
        and storable_id(long_b) in ids
        and storable_id(long_a) != storable_id(long_b)
    )
    assert "nul\ufffdin/id ✓" in ids


def test_a_renewed_lease_is_not_claimed_again_and_an_expiring_one_only_max_attempts_times(
    setup: Any,
) -> None:
    store, queue = setup
    _record(store, _turn(1), _turn(2, conversation="chat-2"), now=T0)
    claims = queue.claim("slow", 10, 30.0, now=T0 + IDLE)
    assert len(claims) == 2
    assert queue.renew(claims[:1], 30.0, now=T0 + IDLE + 20) == 1
    (taken,) = queue.claim("other", 10, 30.0, now=T0 + IDLE + 40)  # the unrenewed one only
    assert taken.conversation_id == claims[1].conversation_id
    # Both holders "die": chat-1 (renewed until +50, claimed once) is claimed again; chat-2,
    # claimed max_attempts (2) times, is parked.
    retaken = queue.claim("third", 10, 30.0, now=T0 + IDLE + 80)
    assert [claim.conversation_id for claim in retaken] == ["chat-1"]
    row = _row(store, "chat-2")
    assert (row.state, "never finished" in (row.last_error or "")) == ("failed", True)
