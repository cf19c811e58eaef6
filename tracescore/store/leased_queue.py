"""The statements of a table of things scored under leases (traces, conversations), and the
narrow table each keeps its leases in.

A claimed row's lease (its token, its holder, when it expires) is a row of the queue's lease
table, inserted by the claim and deleted by the completion or release, rather than three
columns of the queued row. In the row, a claim grew it by ~70 bytes that the completion took
away again: SQLite's pages split under the grown rows and kept the slack (a third of the
``traces`` table's pages after the capacity benchmark), and PostgreSQL wrote every claimed
version that much wider. The lease table holds only the rows claimed now.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, TextClause, bindparam, literal, text
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.types import TypeEngine

from tracescore.owners import has_ended


class TraceState(StrEnum):
    """The states of a queued row, a trace's (:mod:`tracescore.store.trace_queue`) or a
    conversation's."""

    PENDING = "pending"
    READY = "ready"
    CLAIMED = "claimed"
    SCORED = "scored"
    FAILED = "failed"
    PRUNED = "pruned"
    """Retention removed the trace's spans: records arriving for it later (an exporter's retry,
    a straggler) are stored but never requeue it, which would score a fragment of the trace
    over its kept scores."""


SETTLED = (TraceState.SCORED, TraceState.FAILED, TraceState.PRUNED)
"""The states a row stays in until something new arrives for it: those PostgreSQL's
``ix_traces_last_seen`` and ``ix_traces_state_end`` hold (``store/tables.py``)."""


def state_is(column: ColumnElement[str], state: str) -> ColumnElement[bool]:
    """``column = state``, the state written into the SQL rather than bound: an index holding
    some states only (``WHERE state = 'pending'``, ``WHERE state IN (...)``) serves a query only
    where its condition can be proven from the statement's text, by SQLite and by a
    PostgreSQL plan made for any value of the parameters alike."""
    return column == literal(TraceState(state).value, literal_execute=True)


@dataclass(frozen=True, slots=True)
class LeasedQueueSql:
    """The claim, complete and release statements of a table of things scored under leases.

    Traces and conversations move through the same states with the same leases and generations;
    one template keeps their SQL the same, with only the table, its lease table, its key and
    what a claim returns told apart.
    """

    key: str
    claim_sqlite: TextualSelect
    claim_postgres: TextualSelect
    grant: TextClause
    complete: TextClause
    release: TextClause
    drop: TextClause
    renew: TextClause
    fail_expired: TextClause
    sweep: TextClause
    holders: TextClause
    expire_holder: TextClause

    @classmethod
    def of(
        cls,
        table: str,
        leases: str,
        key: str,
        returning: str,
        key_type: TypeEngine[Any] | None = None,
    ) -> LeasedQueueSql:
        """The statements of ``table`` and its lease table ``leases``, both keyed by ``key`` (a
        column whose values the statements take and return through ``key_type``, when it has
        one: the traces' ids are bytes)."""
        # A claimed row is claimable again once no lease of it is live: its lease expired, or
        # (a row claimed before its lease was written) it has none.
        lapsed = (
            f"NOT EXISTS (SELECT 1 FROM {leases} WHERE {leases}.{key} = {table}.{key}"
            " AND expires >= :now)"
        )
        held = f"EXISTS (SELECT 1 FROM {leases} WHERE {leases}.{key} = :{key} AND token = :token)"
        # Expired leases first, then ready rows oldest first, each read in index order up to
        # the limit: one candidate query with ``state = 'ready' OR (claimed and expired)`` sorted
        # every ready trace to find the oldest few (5 ms a claim behind a backlog of 20,000).
        claim = f"""
WITH candidates AS MATERIALIZED (
    SELECT {key} FROM (
        SELECT {key} FROM {table}
        WHERE state = '{TraceState.CLAIMED}' AND {lapsed}
        ORDER BY last_seen LIMIT :limit {{lock}}
    ) AS expired
    UNION ALL
    SELECT {key} FROM (
        SELECT {key} FROM {table}
        WHERE state = '{TraceState.READY}'
        ORDER BY last_seen LIMIT :limit {{lock}}
    ) AS waiting
)
UPDATE {table} SET state = '{TraceState.CLAIMED}', claimed_generation = {table}.generation,
    attempts = {table}.attempts + 1
FROM (SELECT {key} FROM candidates LIMIT :limit) AS chosen
WHERE {table}.{key} = chosen.{key}
RETURNING {returning}
"""
        # One statement per claim: its rows share the token, holder and expiry.
        grant = f"""
INSERT INTO {leases} ({key}, token, owner, expires)
SELECT {key}, :token, :owner, :expires FROM {table} WHERE {key} IN :keys
ON CONFLICT ({key}) DO UPDATE SET
    token = excluded.token, owner = excluded.owner, expires = excluded.expires
"""
        complete = f"""
UPDATE {table} SET
    state = CASE WHEN generation = :generation
        THEN '{TraceState.SCORED}' ELSE '{TraceState.PENDING}' END,
    pending_since = CASE WHEN generation = :generation THEN pending_since ELSE :now END,
    scored_generation = :generation, attempts = 0, last_error = NULL
WHERE {key} = :{key} AND state = '{TraceState.CLAIMED}' AND {held}
"""
        release = f"""
UPDATE {table} SET
    state = CASE WHEN CAST(:error AS TEXT) IS NOT NULL AND attempts >= :max_attempts
        THEN '{TraceState.FAILED}' ELSE '{TraceState.READY}' END,
    last_error = CAST(:error AS TEXT),
    attempts = CASE WHEN CAST(:error AS TEXT) IS NULL THEN attempts - 1 ELSE attempts END
WHERE {key} = :{key} AND state = '{TraceState.CLAIMED}' AND {held}
RETURNING state
"""
        # A lease that keeps expiring means its holder keeps dying on the row (killed, out of
        # memory): claimed ``max_attempts`` times without a completion or a release, it is
        # parked, rather than claimed again for ever.
        fail_expired = f"""
UPDATE {table} SET state = '{TraceState.FAILED}', last_error = :error
WHERE state = '{TraceState.CLAIMED}' AND attempts >= :max_attempts AND {lapsed}
"""
        # The expired leases of rows no longer claimed (parked, or claimed by nobody since).
        sweep = f"""
DELETE FROM {leases} WHERE expires < :now AND NOT EXISTS (
    SELECT 1 FROM {table} WHERE {table}.{key} = {leases}.{key} AND state = '{TraceState.CLAIMED}')
"""

        def keyed(sql: str) -> TextClause:
            clause = text(sql)
            return clause if key_type is None else clause.bindparams(bindparam(key, type_=key_type))

        def of_keys(sql: str) -> TextClause:
            return text(sql).bindparams(bindparam("keys", expanding=True, type_=key_type))

        typed = {} if key_type is None else {key: key_type}
        return cls(
            key,
            text(claim.format(lock="")).columns(**typed),
            text(claim.format(lock="FOR UPDATE SKIP LOCKED")).columns(**typed),
            of_keys(grant),
            keyed(complete),
            keyed(release),
            of_keys(f"DELETE FROM {leases} WHERE token = :token AND {key} IN :keys"),
            keyed(
                f"UPDATE {leases} SET expires = :expires WHERE {key} = :{key} AND token = :token"
            ),
            text(fail_expired),
            text(sweep),
            text(f"SELECT DISTINCT owner FROM {leases}"),
            text(f"UPDATE {leases} SET expires = 0 WHERE owner = :owner"),
        )

    def lease(
        self,
        conn: Connection,
        owner: str,
        limit: int,
        lease_seconds: float,
        now: float,
        max_attempts: int,
    ) -> tuple[Sequence[Row[Any]], str, float, int]:
        """Lease up to ``limit`` ready rows (or ones whose lease expired) in ``conn``'s
        transaction: the claimed rows, the claim's token, when its lease expires, and how many
        expired rows were parked as failed instead, having been claimed ``max_attempts`` times."""
        error = f"claimed {max_attempts} times and never finished: each holder's lease expired"
        failed = conn.execute(
            self.fail_expired, {"now": now, "max_attempts": max_attempts, "error": error}
        ).rowcount
        conn.execute(self.sweep, {"now": now})
        # 64 random bits tell a claim from any other of the same row.
        token, expires = secrets.token_hex(8), now + lease_seconds
        claim = self.claim_postgres if conn.dialect.name == "postgresql" else self.claim_sqlite
        rows = conn.execute(claim, {"now": now, "limit": limit}).all()
        if rows:
            keys = [getattr(row, self.key) for row in rows]
            conn.execute(
                self.grant, {"keys": keys, "token": token, "owner": owner, "expires": expires}
            )
        return rows, token, expires, failed

    def finish(self, conn: Connection, parameters: list[dict[str, Any]]) -> int:
        """Complete the claims ``parameters`` name (each its key, ``token``, ``generation`` and
        ``now``) and drop their leases; how many were still held."""
        done = conn.execute(self.complete, parameters).rowcount
        by_token: dict[str, list[Any]] = {}
        for claim in parameters:
            by_token.setdefault(claim["token"], []).append(claim[self.key])
        for token, keys in by_token.items():
            conn.execute(self.drop, {"token": token, "keys": keys})
        return int(done)

    def give_back(self, conn: Connection, parameters: dict[str, Any]) -> str | None:
        """Release the claim ``parameters`` name (its key, ``token``, ``error`` and
        ``max_attempts``) and drop its lease; the row's state after, if it was still held."""
        state = conn.execute(self.release, parameters).scalar()
        conn.execute(self.drop, {"token": parameters["token"], "keys": [parameters[self.key]]})
        return None if state is None else str(state)

    def expire_ended(
        self, write_transaction: Callable[[], AbstractContextManager[Connection]]
    ) -> int:
        """Make the leases of holders that have ended (:func:`~tracescore.owners.has_ended`:
        processes of this machine killed with their service) expired now, so that the next
        claim retakes their rows rather than a restarted service waiting ``lease_seconds`` for
        them; returns how many rows were freed. A freed row's attempt still counts."""
        with write_transaction() as conn:
            ended = [owner for (owner,) in conn.execute(self.holders) if owner and has_ended(owner)]
            return sum(conn.execute(self.expire_holder, {"owner": o}).rowcount for o in ended)

    def extend(
        self,
        write_transaction: Callable[[], AbstractContextManager[Connection]],
        held: Sequence[tuple[str, str]],
        lease_seconds: float,
        now: float | None,
    ) -> int:
        """Renew the leases of the ``(key, token)`` pairs ``held`` to ``lease_seconds`` from now,
        in a transaction of their own; returns how many are still held."""
        if not held:
            return 0
        expires = (time.time() if now is None else now) + lease_seconds
        with write_transaction() as conn:
            return conn.execute(
                self.renew,
                [{"expires": expires, self.key: key, "token": token} for key, token in held],
            ).rowcount
