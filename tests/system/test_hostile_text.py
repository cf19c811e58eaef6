"""Hostile text and poison entries: NUL characters, unpaired surrogates, requests that cannot be
stored. None of them may stall ingest or lose a trace's scores, on SQLite or PostgreSQL.

Before the fix, one span with a NUL in its name was acknowledged on PostgreSQL, then failed the
unpacker's COPY for ever, holding back the valid requests grouped with it and, through trace
readiness, every score after it.
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from sqlalchemy import text as sql_text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.journal import unpacker_owner
from tests.support.paths import CAPTURES
from tests.support.server_process import ServerProcess, start_server
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.feedback.scan import FeedbackScanner
from tracescore.ingest.decode import decode_traces
from tracescore.ingest.files import load_traces
from tracescore.ingest.unpack import unpack
from tracescore.pipeline.score_rows import score_row
from tracescore.pipeline.scoring_task import build_worker
from tracescore.spans import EVALUATION_EVENT, LogRecord, Resource, Scope, Span, SpanEvent, SpanLink
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.store.scores import SCORES, upsert_scores
from tracescore.store.text import REPLACEMENT, TextGuard

NUL = "\x00"


def _poisoned(trace: AgentTrace) -> AgentTrace:
    """The trace with NUL characters in its root span's name, status message and agent name."""
    root = trace.spans[-1]
    root.name = f"invoke_agent bad{NUL}name"
    root.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=f"boom{NUL}"))
    for attribute in root.attributes:
        if attribute.key == "gen_ai.agent.name":
            attribute.value.string_value = f"weather{NUL}bot"
    root.attributes.append(
        KeyValue(key=f"note{NUL}", value=AnyValue(string_value=f"kept{NUL}as is"))
    )
    return trace


def _scored_trace_ids(client: httpx.Client) -> set[str]:
    items = client.get("/api/scores", params={"limit": 1000}).json()["items"]
    return {item["trace_id"] for item in items}


def test_nul_characters_never_stall_ingest_and_every_trace_is_scored(
    db_url: str, tmp_path: Path
) -> None:
    rng = random.Random(17)
    traces = [agent_trace(rng) for _ in range(12)]
    poisoned = _poisoned(traces[5])
    with start_server(tmp_path / "server", db_url=db_url, idle_timeout=0.3) as server:
        client = server.http
        for trace in traces:  # back to back, so the unpacker groups the poisoned one with others
            response = client.post(
                "/v1/traces",
                content=export_request(trace.spans),
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200
        deadline = time.monotonic() + 60
        while _scored_trace_ids(client) != {t.trace_id for t in traces}:
            assert time.monotonic() < deadline, (
                f"not every trace was scored:\n{server.output()[-3000:]}"
            )
            time.sleep(0.2)
        for trace in traces:  # every acknowledged span stored, the poisoned trace's included
            stored = client.get(f"/api/traces/{trace.trace_id}").json()
            assert sorted(span["span_id"] for span in stored["spans"]) == sorted(
                span.span_id.hex() for span in trace.spans
            )
        stored = client.get(f"/api/traces/{poisoned.trace_id}").json()
        root = next(span for span in stored["spans"] if span["parent_span_id"] is None)
        assert root["name"] == f"invoke_agent bad{REPLACEMENT}name"
        assert root["status"]["message"] == f"boom{REPLACEMENT}"
        assert (
            root["attributes"][f"note{NUL}"] == f"kept{NUL}as is"
        )  # JSON text holds NUL as it came
        scores = client.get("/api/scores", params={"agent": f"weather{REPLACEMENT}bot"}).json()[
            "items"
        ]
        assert {score["trace_id"] for score in scores} == {poisoned.trace_id}
        assert all(score["status"] == "ok" for score in scores)
        # A NUL in a read's query reads as the stored U+FFFD (PostgreSQL answered 500 before).
        as_sent = client.get("/api/scores", params={"agent": f"weather{NUL}bot"})
        assert as_sent.json()["items"] == scores
        for path in ("/api/traces", "/api/scores/summary", "/"):
            assert client.get(path, params={"agent": NUL, "service": NUL}).status_code == 200
        assert client.get("/api/ingest/quarantine").json() == {"entries": []}
        exposition = client.get("/metrics").text
        replaced = {
            line.split('"')[1]: float(line.split()[-1])
            for line in exposition.splitlines()
            if line.startswith("tracescore_text_replaced_total{")
        }
        assert replaced["ingest"] >= 2  # the span name and the status message
        assert replaced["scores"] >= 1  # the agent name of the trace's scores
        _a_poison_entry_is_set_aside_visibly(server)


def _a_poison_entry_is_set_aside_visibly(server: ServerProcess) -> None:
    """A journal entry of the running service that cannot be stored (a body no release of
    tracescore would journal) is quarantined, counted, listed, logged once and requeued on
    demand, while the request journaled after it is stored."""
    store = open_store(server.db_url, create=False)
    try:
        poison = store.journal.append("traces", b"\xff\xff not protobuf", unpacker_owner(store))
    finally:
        store.close()
    after = agent_trace(random.Random(18))
    client = server.http
    exported = client.post(
        "/v1/traces",
        content=export_request(after.spans),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert exported.status_code == 200
    assert len(client.get(f"/api/traces/{after.trace_id}").json()["spans"]) == len(after.spans)
    deadline = time.monotonic() + 10
    while not (listed := client.get("/api/ingest/quarantine").json()["entries"]):
        assert time.monotonic() < deadline, server.output()[-3000:]
        time.sleep(0.1)
    assert [(entry["seq"], entry["reason"].split(":")[0]) for entry in listed] == [
        (poison.seq, "DecodeError")
    ]

    def counted_and_logged() -> bool:  # the unpacker reports and logs just after quarantining
        exposition = client.get("/metrics").text.splitlines()
        return (
            "tracescore_ingest_quarantined_total 1.0" in exposition
            and f"journal entry {poison.seq} " in server.output()
        )

    while not counted_and_logged():
        assert time.monotonic() < deadline, server.output()[-3000:]
        time.sleep(0.1)
    assert server.output().count(f"journal entry {poison.seq} ") == 1
    requeue = "/api/ingest/quarantine/{}/requeue"
    assert client.post(requeue.format(poison.seq)).json() == {"requeued": poison.seq}
    assert client.post(requeue.format(poison.seq + 1)).status_code == 404


def _json_request(trace_id: str, span_id: str, *, name: str = "span") -> bytes:
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def _deeply_nested_request(trace_id: str, depth: int) -> bytes:
    """A request whose one attribute nests ``depth`` arrays deep (written as text: JSON
    encoders refuse such depths)."""
    value = '{"stringValue": "bottom"}'
    for _ in range(depth):
        value = '{"arrayValue": {"values": [' + value + "]}}"
    marker = '"attributes": []'
    body = _json_request(trace_id, "1" * 16).decode()
    assert marker in body
    return body.replace(marker, '"attributes": [{"key": "deep", "value": ' + value + "}]").encode()


def test_an_entry_that_cannot_be_stored_is_quarantined_alone_and_requeued_on_demand(
    db_url: str,
) -> None:
    """A request whose attributes nest deeper than the store's JSON encoder goes (possible when
    it is unpacked without ``max_attribute_chars``, as ``tracescore`` commands may) decodes but
    cannot be stored: the valid requests of its group are stored, it is set aside with the
    reason, and it no longer holds back reads or readiness."""
    store = open_store(db_url)
    try:
        valid = [
            store.journal.append("traces", _json_request(f"{n:032x}", "1" * 16), "c", json=True)
            for n in (1, 2)
        ]
        poison = store.journal.append(
            "traces", _deeply_nested_request("3" * 32, 270), "c", json=True
        )
        entries = [valid[0], poison, valid[1]]
        assert unpack(store, entries) == 1
        assert store.journal.settle(timeout=1) is True
        assert all(store.load_trace(f"{n:032x}") is not None for n in (1, 2))
        assert store.load_trace("3" * 32) is None
        [quarantined] = store.journal.quarantined()
        assert quarantined.seq == poison.seq and "Recursion limit reached" in quarantined.reason
        assert store.journal.entries() == []
        assert store.journal.requeue(poison.seq) is True
        assert store.journal.requeue(poison.seq) is False  # waiting again, not quarantined
        [again] = store.journal.entries()
        assert again.seq == poison.seq
        assert unpack(store, [again]) == 1  # still unstorable: back in quarantine
        assert [entry.seq for entry in store.journal.quarantined()] == [poison.seq]
    finally:
        store.close()


def test_json_requests_with_unpaired_surrogates_and_out_of_range_enums(db_url: str) -> None:
    """A lone surrogate (a JavaScript string cut inside an emoji) is valid JSON: it is accepted
    and stored as U+FFFD. An enum beyond int32 would have been acknowledged and then failed
    PostgreSQL's integer column: it is refused as invalid, before the acknowledgement."""
    body = _json_request("4" * 32, "1" * 16, name="cut \\ud83d").replace(b"\\\\ud83d", b"\\ud83d")
    decoded = decode_traces(body, json=True)
    store = open_store(db_url)
    try:
        assert store.write(decoded.spans)
        assert store.take_counts() == (1, 0)
        assert store.load_trace("4" * 32).spans[0].name == f"cut {REPLACEMENT}"  # type: ignore[union-attr]
    finally:
        store.close()
    too_big = json.loads(_json_request("5" * 32, "1" * 16))
    too_big["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = 2**40
    with pytest.raises(ValueError, match="out of its field's range"):
        decode_traces(json.dumps(too_big).encode(), json=True)


_ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=12)
"""Every code point, NUL and lone surrogates included."""
_SCORE_TEXT = (
    "binding",
    "scorer_id",
    "scorer_version",
    "label",
    "reason",
    "error",
    "judge_model",
    "service",
    "agent",
    "model",
    "conversation_id",
)
"""Every text column of a score row a scorer, a judge or a client's spans can fill."""


def _fitted(text: str, length: int | None) -> str:
    """What a text column of ``length`` keeps of ``text``: storable, cut with an ellipsis."""
    text = TextGuard().text(text)
    return text if length is None or len(text) <= length else text[: length - 1] + "…"


def test_any_text_in_any_field_is_stored_on_both_databases(db_url: str) -> None:
    """Property: span, resource, scope, event, link, log record, score and feedback text of any
    code points is stored, and reads back as written with only NUL (outside JSON) and lone
    surrogates replaced, and score and feedback text cut to its column. (One store for all
    examples: opening one per example cost most of the test's time.)"""
    store = open_store(db_url)
    try:
        _stored_as_written(store)
    finally:
        store.close()


@settings(max_examples=30, deadline=None)
@given(texts=st.lists(_ANY_TEXT, min_size=12, max_size=12))
@example(texts=["\ud83d"] * 12)  # a lone surrogate in every field (the verdict's id hashed it)
def _stored_as_written(store: SpanStore, texts: list[str]) -> None:
    (
        name,
        message,
        state,
        service,
        scope_name,
        version,
        key,
        value,
        event,
        severity,
        score,
        verdict,
    ) = texts
    resource, scope = Resource({"service.name": service}), Scope(scope_name, version, {key: value})
    span = Span(
        trace_id="6" * 32,
        span_id="1" * 16,
        parent_span_id=None,
        name=name,
        kind=1,
        start_time_ns=1,
        end_time_ns=2,
        attributes={key: value},
        resource=resource,
        scope=scope,
        events=[SpanEvent(event, 1, {key: value})],
        links=[SpanLink("7" * 32, "2" * 16, state, {key: value})],
        status_code=2,
        status_message=message,
        trace_state=state,
    )
    record = LogRecord(
        time_ns=1,
        observed_time_ns=1,
        trace_id="6" * 32,
        span_id="1" * 16,
        event_name=event,
        severity_number=9,
        severity_text=severity,
        body=value,
        attributes={key: value},
        resource=resource,
        scope=scope,
    )
    with store.write_transaction() as conn:
        for table in ("scores", "feedback", "spans", "logs"):
            conn.execute(sql_text(f"DELETE FROM {table}"))
    assert store.write([span], [record])
    trace = store.load_trace("6" * 32)
    assert trace is not None
    [back], [log_back] = trace.spans, trace.logs
    guard = TextGuard()
    assert (back.name, back.status_message, back.trace_state) == tuple(
        map(guard.text, (name, message, state))
    )
    assert (back.scope.name, back.scope.version) == (guard.text(scope_name), guard.text(version))
    assert (log_back.event_name, log_back.severity_text) == (
        guard.text(event),
        guard.text(severity),
    )
    # Inside JSON text a NUL is kept; only lone surrogates are replaced.
    json_key, json_value = _no_surrogates(key), _no_surrogates(value)
    assert back.resource.attributes == {"service.name": _no_surrogates(service)}
    assert back.attributes == back.scope.attributes == log_back.attributes == {json_key: json_value}
    assert (back.events[0].name, back.events[0].attributes) == (
        _no_surrogates(event),
        {json_key: json_value},
    )
    assert (back.links[0].trace_state, back.links[0].attributes) == (
        _no_surrogates(state),
        {json_key: json_value},
    )
    assert log_back.body == json_value
    assert store.trace_summary("6" * 32).service_name == guard.text(service or "unknown_service")  # type: ignore[union-attr]
    row = {
        "id": "5" * 32,
        "trace_id": "6" * 32,
        "span_id": "1" * 16,
        "status": "ok",
        "score": 1.0,
        "steps": {score: [score]},
        **dict.fromkeys(_SCORE_TEXT, score + "a" * 250),
    }
    with store.write_transaction() as conn:
        upsert_scores(conn, [row])
    with store.engine.connect() as conn:
        stored = conn.execute(SCORES.select()).one()._mapping
    columns = SCORES.columns
    assert {column: stored[column] for column in _SCORE_TEXT} == {
        column: _fitted(row[column], columns[column].type.length) for column in _SCORE_TEXT
    }
    assert stored["steps"] == {_no_surrogates(score): [_no_surrogates(score)]}
    feedback = FeedbackStore(store)
    feedback.record(
        [
            Feedback(
                trace_id="6" * 32,
                span_id="1" * 16,
                name=verdict + "n" * 99,
                source="api",
                created_at=datetime.now(UTC),
                value=1.0,
                label=verdict + "l" * 49,
                comment=verdict,
                author=verdict + "a" * 199,
            )
        ]
    )
    [found] = feedback.find(trace_id="6" * 32)
    assert (found["name"], found["label"], found["comment"], found["author"]) == (
        _fitted(verdict + "n" * 99, 100),
        _fitted(verdict + "l" * 49, 50),
        _fitted(verdict, None),
        _fitted(verdict + "a" * 199, 200),
    )


def test_a_verdict_with_a_nul_sent_over_otlp_does_not_stall_the_feedback_scan(db_url: str) -> None:
    """A human verdict's comment with a NUL (kept as sent inside the span's event JSON) failed
    the feedback scan's write on PostgreSQL at every look, so no verdict behind it was ever
    recorded; now it is recorded with the NUL replaced, and so is the next trace's."""
    store = open_store(db_url)
    try:
        for trace_id, comment in (("8" * 32, f"bad{NUL}answer"), ("9" * 32, "fine")):
            verdict = {
                "tracescore.feedback.source": "human",
                "gen_ai.evaluation.name": "tone",
                "gen_ai.evaluation.score.value": 0.0,
                "gen_ai.evaluation.explanation": comment,
            }
            span = Span(
                trace_id=trace_id,
                span_id="1" * 16,
                parent_span_id=None,
                name="feedback",
                kind=1,
                start_time_ns=1,
                end_time_ns=2,
                attributes={},
                resource=Resource({}),
                scope=Scope("widget", "", {}),
                events=[SpanEvent(EVALUATION_EVENT, 1, verdict)],
            )
            store.write([span])
        assert FeedbackScanner(store, clock=lambda: time.time() + 5).run_once() == 2
        comments = {item["trace_id"]: item["comment"] for item in FeedbackStore(store).find()}
        assert comments == {"8" * 32: f"bad{REPLACEMENT}answer", "9" * 32: "fine"}
    finally:
        store.close()


def test_a_scoring_error_quoting_a_nul_still_releases_the_trace(db_url: str) -> None:
    """An error message that quotes a span's text (``invalid literal …: 'a\\x00b'``) is stored
    with the NUL replaced; on PostgreSQL the release failed, so the trace was never released
    nor parked, but retaken and failed again at every lease's expiry."""
    store = open_store(db_url)
    try:
        agent = agent_trace(random.Random(19))
        store.write(decode_traces(export_request(agent.spans), json=False).spans)
        now = time.time() + 60
        attempts = store.rules.max_attempts
        for attempt in range(attempts):
            [claim] = store.queue.claim("w", 10, 30, now=now)
            store.queue.release(claim, f"ValueError: invalid literal: 'a{NUL}b' ({attempt})")
        summary = store.trace_summary(agent.trace_id)
        assert summary is not None
        assert (summary.state, summary.last_error) == (
            "failed",
            f"ValueError: invalid literal: 'a{REPLACEMENT}b' ({attempts - 1})",
        )
    finally:
        store.close()


def _no_surrogates(text: str) -> str:
    return "".join(REPLACEMENT if 0xD800 <= ord(char) <= 0xDFFF else char for char in text)


def test_a_score_row_the_database_refuses_is_stored_as_an_error_row(db_url: str) -> None:
    """A token count beyond the column's range (a custom scorer's or a judge proxy's bug) is
    refused by both databases: the trace's other rows are stored, and that one becomes an
    ``error`` row saying why, instead of the trace failing until it is parked unscored."""
    store = _store_with_capture(db_url)
    try:
        worker = build_worker(parse_config("").scoring(), store)
        [trace] = load_traces([_CAPTURE])
        [run] = [run for run in extract_runs(trace) if run.primary]
        bindings = worker.scoring.bindings
        rows = [score_row(binding, run, status="ok") for binding in bindings]
        rows[0]["input_tokens"] = 2**70
        worker._write(rows, [])
        with store.engine.connect() as conn:
            stored = {row.binding: row for row in conn.execute(SCORES.select())}
        assert set(stored) == {binding.name for binding in bindings}
        refused = stored[bindings[0].name]
        assert refused.status == "error" and refused.input_tokens == 0
        assert refused.error.startswith("the score could not be stored:")
        assert all(row.status == "ok" for name, row in stored.items() if name != bindings[0].name)
    finally:
        store.close()


_CAPTURE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"


def _store_with_capture(db_url: str) -> SpanStore:
    store = open_store(db_url)
    for trace in load_traces([_CAPTURE]):
        store.write(trace.spans, trace.logs)
    return store
