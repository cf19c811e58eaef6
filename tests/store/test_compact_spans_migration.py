"""Revision ``0023_compact_spans_traces`` on rows of the revision before it, on SQLite and
PostgreSQL: spans and log records that named their resource and scope by a 16-byte hash name
them by the rows' integer ids, spans keep their duration for their end time, everything
reads back the same through the store, the schema equals the models, and writes after the upgrade find the resources and scopes stored before it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.support.schema_drift import drift as schema_drift
from tracescore.spans import LogRecord, Resource, Scope, Span
from tracescore.store import migrate, open_store, packed
from tracescore.store.engine import make_engine

BEFORE = "0021_call_links"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
RESOURCES = [Resource({"service.name": "support-bot"}), Resource({"service.name": "billing"})]
SCOPE = Scope("agent-sdk", "0.3", {})


def _hash(*parts: str) -> bytes:
    """How the store keys resources and scopes, before the revision and after it."""
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).digest()


RESOURCE_HASHES = [_hash(f'{{"service.name":"{r.service_name}"}}') for r in RESOURCES]
SCOPE_HASH = _hash("agent-sdk", "0.3", "{}")


def _span(number: int, resource: Resource) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=f"{number:016x}",
        parent_span_id=None if number == 1 else f"{1:016x}",
        name=f"step {number}",
        kind=1,
        start_time_ns=1_700_000_000_000_000_000 + number,
        end_time_ns=1_700_000_001_000_000_000,
        attributes={"gen_ai.operation.name": "chat", "n": number},
        resource=resource,
        scope=SCOPE,
        status_code=0,
        status_message="",
        trace_state="",
        flags=1,
    )


SPANS = [_span(1, RESOURCES[0]), _span(2, RESOURCES[1])]
RECORD = LogRecord(
    time_ns=1_700_000_000_600_000_000,
    observed_time_ns=1_700_000_000_600_000_001,
    trace_id=TRACE,
    span_id=f"{2:016x}",
    event_name="note",
    severity_number=9,
    severity_text="INFO",
    body="said",
    attributes={"a": "b"},
    resource=RESOURCES[1],
    scope=SCOPE,
    flags=0,
)


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    made = make_engine(empty_db_url)
    yield made
    made.dispose()


def _write_as_before(connection: Any) -> None:
    """The rows the revision before wrote for :data:`SPANS` and :data:`RECORD`."""
    for resource, digest in zip(RESOURCES, RESOURCE_HASHES, strict=True):
        connection.execute(
            text("INSERT INTO resources (resource_id, attributes) VALUES (:id, :attributes)"),
            {"id": digest, "attributes": f'{{"service.name":"{resource.service_name}"}}'},
        )
    connection.execute(
        text("INSERT INTO scopes VALUES (:id, 'agent-sdk', '0.3', '{}')"), {"id": SCOPE_HASH}
    )
    for span, digest in zip(SPANS, RESOURCE_HASHES, strict=True):
        connection.execute(
            text(
                "INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind, "
                "start_time_ns, end_time_ns, status_code, status_message, trace_state, flags, "
                "attributes, events, links, resource_id, scope_id) VALUES "
                "(:trace, :span, :parent, :name, 1, :start, :end, 0, '', '', 1, "
                ":attributes, NULL, NULL, :resource, :scope)"
            ),
            {
                "trace": bytes.fromhex(TRACE),
                "span": bytes.fromhex(span.span_id),
                "parent": None
                if span.parent_span_id is None
                else bytes.fromhex(span.parent_span_id),
                "name": span.name,
                "start": span.start_time_ns,
                "end": span.end_time_ns,
                "attributes": packed.pack(
                    f'{{"gen_ai.operation.name":"chat","n":{span.attributes["n"]}}}'
                ),
                "resource": digest,
                "scope": SCOPE_HASH,
            },
        )
    connection.execute(
        text(
            "INSERT INTO logs (record_hash, trace_id, span_id, time_ns, observed_time_ns, "
            "event_name, severity_number, severity_text, body, attributes, flags, resource_id, "
            "scope_id) VALUES (:hash, :trace, :span, :time, :observed, 'note', 9, 'INFO', "
            '\'"said"\', \'{"a":"b"}\', 0, :resource, :scope)'
        ),
        {
            "hash": _hash("record"),
            "trace": bytes.fromhex(TRACE),
            "span": bytes.fromhex(RECORD.span_id or ""),
            "time": RECORD.time_ns,
            "observed": RECORD.observed_time_ns,
            "resource": RESOURCE_HASHES[1],
            "scope": SCOPE_HASH,
        },
    )


def _references(engine: Engine) -> dict[str, set[tuple[int, int]]]:
    with engine.connect() as connection:
        return {
            table: {
                (resource, scope)
                for resource, scope in connection.execute(
                    text(f"SELECT resource_id, scope_id FROM {table}")
                )
            }
            for table in ("spans", "logs")
        }


def test_references_become_row_ids_and_read_back_the_same(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(migrate.alembic_config(connection), BEFORE)
        _write_as_before(connection)
    assert "0023_compact_spans_traces" in migrate.upgrade(engine)
    with engine.connect() as connection:
        ids = {bytes(h): i for h, i in connection.execute(text("SELECT hash, id FROM resources"))}
        scope_ids = {
            bytes(h): i for h, i in connection.execute(text("SELECT hash, id FROM scopes"))
        }
        drift = schema_drift(connection)
    assert drift == []
    first, second = (ids[digest] for digest in RESOURCE_HASHES)
    scope_id = scope_ids[SCOPE_HASH]
    assert all(isinstance(value, int) for value in (first, second, scope_id)) and first != second
    assert _references(engine) == {
        "spans": {(first, scope_id), (second, scope_id)},
        "logs": {(second, scope_id)},
    }
    with engine.connect() as connection:
        durations = connection.execute(text("SELECT duration_ns FROM spans")).scalars().all()
    assert sorted(durations) == sorted(s.end_time_ns - s.start_time_ns for s in SPANS)
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        trace = store.load_trace(TRACE)
        assert trace is not None
        assert trace.spans == SPANS
        assert trace.logs == [RECORD]
        # Spans written after the upgrade name the resources stored before it; a new resource
        # gets a row of its own.
        newcomer = Resource({"service.name": "new-service"})
        store.write([_span(3, RESOURCES[0]), _span(4, newcomer)])
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id FROM resources")).scalars().all()
        assert len(rows) == 3
        (new_id,) = set(rows) - {first, second}
        assert _references(engine)["spans"] == {
            (first, scope_id),
            (second, scope_id),
            (new_id, scope_id),
        }
        reread = store.load_trace(TRACE)
        assert reread is not None
        assert [span.resource for span in reread.spans] == [*RESOURCES, RESOURCES[0], newcomer]
    finally:
        store.close()
