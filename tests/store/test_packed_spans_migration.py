"""Revision ``0019_packed_spans`` on rows of the release before, on SQLite and PostgreSQL: the
spans, log records, resources, scopes and traces written as hex text read back the same through
the store once their ids are bytes and span attributes packed, and a retry of a record stored
before the upgrade is still recognised."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tracescore.spans import LogRecord, Resource, Scope, Span, SpanEvent
from tracescore.store import migrate, open_store
from tracescore.store.engine import make_engine

BEFORE = "0018_compact_storage"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT, CHILD = "00f067aa0ba902b7", "53995c3f42cd8ad8"
MESSAGES = json.dumps(
    [{"role": "user", "parts": [{"type": "text", "content": "How warm is it in Oslo?"}]}]
)
RESOURCE = Resource({"service.name": "support-bot"})
SCOPE = Scope("agent-sdk", "0.3", {})


def _hash(*parts: str) -> str:
    """The hex hashes the release before keyed resources, scopes and records by."""
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).hexdigest()


RESOURCE_ID = _hash('{"service.name":"support-bot"}')
SCOPE_ID = _hash("agent-sdk", "0.3", "{}")


def _span(span_id: str, parent: str | None, name: str, attributes: dict[str, Any]) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_time_ns=1_700_000_000_000_000_000 + (parent is not None) * 1_000,
        end_time_ns=1_700_000_001_000_000_000,
        attributes=attributes,
        resource=RESOURCE,
        scope=SCOPE,
        events=[SpanEvent("retry", 1_700_000_000_500_000_000, {"attempt": 2})] if parent else [],
        status_code=0,
        status_message="",
        trace_state="",
        flags=1,
    )


SPANS = [
    _span(
        ROOT,
        None,
        "invoke_agent support-bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": MESSAGES,
            "gen_ai.usage.input_tokens": 31,
            "binary": b"\x00\xff",
        },
    ),
    _span(CHILD, ROOT, "tool", {"k": 1}),
]
RECORD = LogRecord(
    time_ns=1_700_000_000_600_000_000,
    observed_time_ns=1_700_000_000_600_000_001,
    trace_id=TRACE,
    span_id=CHILD,
    event_name="note",
    severity_number=9,
    severity_text="INFO",
    body="said",
    attributes={"a": "b"},
    resource=RESOURCE,
    scope=SCOPE,
    flags=0,
)


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _write_as_before(connection: Any) -> None:
    """The rows the release before wrote for :data:`SPANS` and :data:`RECORD`."""
    connection.execute(
        text('INSERT INTO resources VALUES (:id, \'{"service.name":"support-bot"}\')'),
        {"id": RESOURCE_ID},
    )
    connection.execute(
        text("INSERT INTO scopes VALUES (:id, 'agent-sdk', '0.3', '{}')"), {"id": SCOPE_ID}
    )
    for span in SPANS:
        connection.execute(
            text(
                "INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind, "
                "start_time_ns, end_time_ns, status_code, status_message, trace_state, flags, "
                "service_name, attributes, events, links, resource_id, scope_id) VALUES "
                "(:trace, :span, :parent, :name, 1, :start, :end, 0, '', '', 1, 'support-bot', "
                ":attributes, :events, NULL, :resource, :scope)"
            ),
            {
                "trace": TRACE,
                "span": span.span_id,
                "parent": span.parent_span_id,
                "name": span.name,
                "start": span.start_time_ns,
                "end": span.end_time_ns,
                "attributes": json.dumps(
                    {**span.attributes, "binary": {"$b": "AP8="}}
                    if "binary" in span.attributes
                    else span.attributes,
                    separators=(",", ":"),
                ),
                "events": json.dumps([[e.name, e.time_ns, e.attributes] for e in span.events])
                if span.events
                else None,
                "resource": RESOURCE_ID,
                "scope": SCOPE_ID,
            },
        )
    row = (TRACE, CHILD, RECORD.time_ns, RECORD.observed_time_ns, "note", 9, "INFO")
    row += ('"said"', '{"a":"b"}', 0, RESOURCE_ID, SCOPE_ID)
    connection.execute(
        text(
            "INSERT INTO logs (record_hash, trace_id, span_id, time_ns, observed_time_ns, "
            "event_name, severity_number, severity_text, body, attributes, flags, resource_id, "
            "scope_id) VALUES (:hash, :r0, :r1, :r2, :r3, :r4, :r5, :r6, :r7, :r8, :r9, :r10, "
            ":r11)"
        ),
        {"hash": _hash(*map(str, row)), **{f"r{n}": value for n, value in enumerate(row)}},
    )
    connection.execute(
        text(
            "INSERT INTO traces (trace_id, service_name, root_name, has_root, span_count, "
            "log_count, generation, start_time_ns, end_time_ns, first_seen, last_seen, "
            "pending_since, state, attempts) VALUES (:trace, 'support-bot', "
            "'invoke_agent support-bot', TRUE, 2, 1, 1, :start, :end, 5.0, 6.0, 5.0, 'scored', 0)"
        ),
        {"trace": TRACE, "start": SPANS[0].start_time_ns, "end": SPANS[0].end_time_ns},
    )


def test_rows_of_the_release_before_read_back_the_same(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _write_as_before(connection)
    assert migrate.upgrade(engine)[0] == "0019_packed_spans"  # then any later revision
    with engine.connect() as connection:
        stored = dict(
            connection.execute(text("SELECT span_id, attributes FROM spans")).tuples().all()
        )
    assert {bytes(span_id).hex() for span_id in stored} == {ROOT, CHILD}
    root_attributes = bytes(stored[bytes.fromhex(ROOT)])
    assert root_attributes[0] == 2 and len(root_attributes) < 150, "packed, compressed"
    store = open_store(str(engine.url.render_as_string(hide_password=False)))
    try:
        trace = store.load_trace(TRACE)
        assert trace is not None
        assert trace.spans == SPANS
        assert trace.logs == [RECORD]
        summary = store.trace_summary(TRACE)
        assert summary is not None
        assert (summary.trace_id, summary.state, summary.span_count) == (TRACE, "scored", 2)
        # An exporter's retry after the upgrade: nothing new, so the trace stays scored.
        store.write(SPANS, [RECORD])
        assert store.count_spans() == 2
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM logs")).scalar_one() == 1
        summary = store.trace_summary(TRACE)
        assert summary is not None and summary.state == "scored"
    finally:
        store.close()
