"""Revision ``0025_queue_leases`` on rows of the revision before it, on SQLite and PostgreSQL:
the lease of a trace and of a conversation claimed at the upgrade moves to its queue's lease
table, their rows lose the three lease columns, the schema equals the models, and the claim
made before the upgrade is completed after it with its token, dropping its lease."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.support.schema_drift import drift as schema_drift
from tracescore.store import migrate, open_store
from tracescore.store.engine import make_engine
from tracescore.store.trace_queue import TraceClaim

BEFORE = "0024_score_series"
CLAIMED, SCORED = "4bf92f3577b34da6a3ce929d0e0e4736", "5c77f2a4d458539be0232f55b2dd0dd4"
TOKEN = "0123456789abcdef0123456789abcdef"  # a token as claims made them before: a uuid's hex
OWNER = "host:42:1:1:abcd1234"


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _trace(trace_id: str, state: str, lease: tuple[str, str, float] | None) -> dict[str, object]:
    token, owner, expires = lease or (None, None, None)
    return {
        "trace_id": bytes.fromhex(trace_id),
        "state": state,
        "token": token,
        "owner": owner,
        "expires": expires,
        "claimed": 1 if lease else None,
        "scored": 1 if state == "scored" else None,
    }


def _write_as_before(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        connection.execute(
            text(
                "INSERT INTO traces (trace_id, service_name, root_name, has_root, span_count, "
                "log_count, generation, start_time_ns, end_time_ns, first_seen, last_seen, "
                "pending_since, state, lease_token, lease_owner, lease_expires, "
                "claimed_generation, scored_generation, attempts, last_error) VALUES "
                "(:trace_id, 'svc', 'agent', true, 1, 0, 1, 1, 2, 10.0, 10.0, 10.0, :state, "
                ":token, :owner, :expires, :claimed, :scored, 1, NULL)"
            ),
            [
                _trace(CLAIMED, "claimed", (TOKEN, OWNER, 4e9)),
                _trace(SCORED, "scored", None),
            ],
        )
        connection.execute(
            text(
                "INSERT INTO conversations (conversation_id, turn_count, generation, first_seen, "
                "last_seen, pending_since, state, lease_token, lease_owner, lease_expires, "
                "claimed_generation, attempts) VALUES "
                "('chat-1', 1, 1, 10.0, 10.0, 10.0, 'claimed', :token, :owner, 4e9, 1, 1)"
            ),
            {"token": TOKEN, "owner": OWNER},
        )


def test_claimed_rows_keep_their_leases_in_the_lease_tables(engine: Engine) -> None:
    _write_as_before(engine)
    assert "0025_queue_leases" in migrate.upgrade(engine)
    with engine.connect() as connection:
        drift = schema_drift(connection)
        leases = connection.execute(
            text("SELECT trace_id, token, owner, expires FROM trace_leases")
        ).all()
        conversation_leases = connection.execute(
            text("SELECT conversation_id, token, owner, expires FROM conversation_leases")
        ).all()
    assert drift == []
    assert [(bytes(t), token, owner, expires) for t, token, owner, expires in leases] == [
        (bytes.fromhex(CLAIMED), TOKEN, OWNER, 4e9)
    ]
    assert [tuple(row) for row in conversation_leases] == [("chat-1", TOKEN, OWNER, 4e9)]
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        assert store.queue.claim("another", 10, 30) == []  # the lease is held still
        claim = TraceClaim(CLAIMED, 1, 1, OWNER, TOKEN, 4e9)
        assert store.queue.complete([claim]) == 0  # its token still completes it
        assert store.trace_summary(CLAIMED).state == "scored"  # type: ignore[union-attr]
        assert store.trace_summary(SCORED).state == "scored"  # type: ignore[union-attr]
        with engine.connect() as connection:
            left = connection.execute(text("SELECT count(*) FROM trace_leases")).scalar_one()
        assert left == 0
    finally:
        store.close()
