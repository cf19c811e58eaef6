"""Feedback sent over OTLP, read from the spans and log records ingest stored.

Ingest stays unaware of feedback: a background task of every instance reads the traces written
since its last look (the traces table in ``(last_seen, trace_id)`` order, a cursor shared in
the database), finds their ``gen_ai.evaluation.result`` records marked human
(:mod:`tracescore.extract.feedback`) and records them. Before each look it waits until the
requests acknowledged so far are rows (the ingest journal), and it looks only up to a second
before it started waiting, so a trace written late is still ahead of the cursor. Recording is
an upsert by (trace, span, name, author): reading a record twice changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime

from tracescore.background import BackgroundFactory
from tracescore.backoff import Backoff, repeat
from tracescore.extract.feedback import HumanVerdict, log_verdict, span_verdicts
from tracescore.owners import owner_id
from tracescore.store import Connection, SpanStore, connect
from tracescore.store.feedback import Feedback, FeedbackStore, TriggersOf
from tracescore.store.leases import acquire_lease, release_lease
from tracescore.store.traces import (
    LAST_TRACE_ID,
    Key,
    evaluation_logs,
    evaluation_spans,
    trace_keys,
)

LEASE_NAME = "feedback-scan"


def _feedback(verdict: HumanVerdict) -> Feedback:
    moment = (
        datetime.fromtimestamp(verdict.time_ns / 1e9, UTC) if verdict.time_ns else datetime.now(UTC)
    )
    return Feedback(
        trace_id=verdict.trace_id,
        span_id=verdict.span_id,
        name=verdict.name,
        source="otlp",
        created_at=moment,
        value=verdict.value,
        label=verdict.label,
        comment=verdict.comment,
        author=verdict.author,
    )


def verdicts_in(connection: Connection, after: Key, through: Key) -> list[HumanVerdict]:
    """The human verdicts among the stored span events and log records of the traces after
    ``after`` through ``through``."""
    found: list[HumanVerdict] = []
    for span in evaluation_spans(connection, after, through):
        found += span_verdicts(span.trace_id, span.span_id, span.events)
    for record in evaluation_logs(connection, after, through):
        verdict = log_verdict(
            record.trace_id,
            record.span_id,
            record.event_name,
            record.attributes,
            record.body,
            record.time_ns,
        )
        if verdict is not None:
            found.append(verdict)
    return found


class FeedbackScanner:
    """One instance's reader of OTLP feedback; :meth:`run_once` is one look."""

    SETTLE_MARGIN = 1.0
    """Seconds a look stays behind its start: an export request received just before the look
    may still be on its way into the ingest journal."""

    def __init__(
        self,
        store: SpanStore,
        *,
        batch: int = 2000,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = 60.0,
        triggers: TriggersOf | None = None,
    ) -> None:
        self.store = store
        self.feedback = FeedbackStore(store, triggers)
        """Records the verdicts, and the judging negative ones trigger (``on_feedback``)."""
        self.batch = batch
        self.clock = clock
        self.lease_seconds = lease_seconds
        self.owner = owner_id()

    def run_once(self) -> int:
        """Read the traces written since the cursor; returns the verdicts read (a trace written
        again is read again, verdicts and all: recording one again changes nothing).

        Only the holder of the scan's lease looks (renewed at every look and every batch, so a
        first look over a large store keeps it): with several service processes or replicas on
        one database, one of them does the work instead of each."""
        with self.store.write_transaction() as connection:
            if not self._hold(connection):
                return 0
        upto = self.clock() - self.SETTLE_MARGIN
        if not self.store.journal.settle():
            return 0  # nothing unpacks the journal now: look again later
        recorded = 0
        with connect(self.store.engine) as connection:
            cursor = self.feedback.scan_cursor(connection)
        while True:
            with connect(self.store.engine) as connection:
                keys = trace_keys(connection, cursor, (upto, LAST_TRACE_ID), self.batch)
                if not keys:
                    return recorded
                through = keys[-1]
                verdicts = verdicts_in(connection, cursor, through)
            cursor = through
            with self.store.write_transaction() as connection:
                if not self._hold(connection):
                    return recorded  # another instance took over: it goes on from the cursor
                if verdicts:
                    items = {
                        item.id: item
                        for item in sorted(map(_feedback, verdicts), key=lambda f: f.created_at)
                    }
                    self.feedback.write(connection, list(items.values()))
                    recorded += len(items)
                self.feedback.save_scan_cursor(connection, *cursor)
            if len(keys) < self.batch:
                return recorded

    def _hold(self, connection: Connection) -> bool:
        """Take or renew the lease; whether it is ours."""
        return acquire_lease(connection, self.owner, self.clock(), self.lease_seconds, LEASE_NAME)

    def release(self) -> None:
        """Hand the lease over now rather than when it expires (the service is stopping)."""
        with self.store.write_transaction() as connection:
            release_lease(connection, self.owner, LEASE_NAME)


def feedback_scan_task(
    store: SpanStore, interval: float, triggers: TriggersOf | None = None
) -> BackgroundFactory:
    """A :meth:`Service.add_background` factory: a look for OTLP feedback every ``interval``
    (by whichever instance holds the lease, which outlasts a few missed looks)."""
    scanner = FeedbackScanner(store, lease_seconds=max(60.0, 4 * interval), triggers=triggers)

    async def run() -> None:
        try:
            await repeat(scanner.run_once, interval, Backoff("feedback scan: the database"))
        finally:
            with contextlib.suppress(Exception):  # a stopping service must not fail on this
                await asyncio.to_thread(scanner.release)

    return run
