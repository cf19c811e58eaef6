"""Oversized and over-nested attribute values are cut with a marker before they are stored, and
the extractors then warn about the cut JSON instead of failing. (The same over a real server:
``test_fuzz_http.py``.)"""

from __future__ import annotations

import json

from tests.support.agent_otlp import agent_trace, export_request
from tracescore.extract import extract_runs
from tracescore.ingest.decode import decode_logs, decode_traces
from tracescore.ingest.truncate import truncate_decoded
from tracescore.spans import Trace
from tracescore.store import codec
from tracescore.value_cut import BYTES_MARKER, DEPTH_MARKER, MARKER, MAX_DEPTH

LIMIT = 100


def _otlp_json(attributes: list[dict], resource: list[dict] | None = None) -> bytes:
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "invoke_agent Bot",
        "kind": 1,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": attributes,
        "status": {"code": 2, "message": "m" * 500},
    }
    document = {
        "resourceSpans": [
            {"resource": {"attributes": resource or []}, "scopeSpans": [{"spans": [span]}]}
        ]
    }
    return json.dumps(document).encode()


def _string(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def test_long_values_keep_their_head_and_end_with_a_marker() -> None:
    long_text = "x" * 250
    body = _otlp_json(
        [
            _string("gen_ai.operation.name", "invoke_agent"),
            _string("short", "y" * LIMIT),
            _string("long", long_text),
            {"key": "blob", "value": {"bytesValue": "QUJD" * 100}},
            {"key": "list", "value": {"arrayValue": {"values": [{"stringValue": long_text}]}}},
        ],
        resource=[_string("service.name", "svc"), _string("host.description", long_text)],
    )
    decoded = decode_traces(body, json=True)
    assert truncate_decoded(decoded, LIMIT) == 5  # long, blob, the list item, resource, status
    attributes = decoded.spans[0].attributes
    assert attributes["short"] == "y" * LIMIT  # at the limit: kept whole
    assert attributes["long"] == "x" * LIMIT + MARKER.format(dropped=150, total=250)
    assert attributes["blob"] == b"ABC" * 33 + b"A" + BYTES_MARKER
    assert attributes["list"] == ["x" * LIMIT + MARKER.format(dropped=150, total=250)]
    assert decoded.spans[0].resource.attributes["host.description"].startswith("x" * LIMIT + "…[")
    assert decoded.spans[0].status_message.endswith("truncated 400 of 500 characters]")
    assert codec.decode(codec.encode(attributes)) == attributes  # and it stores as it is


def test_cut_json_messages_become_warnings_not_failures() -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris? " * 20}]}]
    body = _otlp_json(
        [
            _string("gen_ai.operation.name", "invoke_agent"),
            _string("gen_ai.agent.name", "Bot"),
            _string("gen_ai.input.messages", json.dumps(messages)),
        ]
    )
    whole = extract_runs(Trace("ab" * 16, decode_traces(body, json=True).spans))
    assert whole[0].input.input_messages and not whole[0].warnings

    decoded = decode_traces(body, json=True)
    truncate_decoded(decoded, LIMIT)
    runs = extract_runs(Trace("ab" * 16, decoded.spans))
    assert runs[0].agent_name == "Bot"
    warnings = " ".join(runs[0].warnings)
    assert "gen_ai.input.messages" in warnings and "invalid JSON" in warnings, runs[0].warnings


def test_values_nested_past_the_depth_limit_are_replaced() -> None:
    value = '{"arrayValue":{"values":[' * 100 + '{"stringValue":"leaf"}' + "]}}" * 100
    body = _otlp_json([{"key": "deep", "value": "DEEP"}]).replace(b'"DEEP"', value.encode())
    decoded = decode_traces(body, json=True)
    assert truncate_decoded(decoded, LIMIT) == 2  # the deep value and the status message
    level = decoded.spans[0].attributes["deep"]
    for _ in range(MAX_DEPTH):
        assert isinstance(level, list)
        level = level[0]
    assert level == DEPTH_MARKER
    codec.encode(decoded.spans[0].attributes)  # beyond 255 levels the store's encoder refuses


def test_log_bodies_and_attributes_are_cut_too() -> None:
    record = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "body": {"stringValue": "b" * 300},
        "attributes": [_string("gen_ai.input.messages", "[" * 300)],
    }
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode()
    decoded = decode_logs(body, json=True)
    assert truncate_decoded(decoded, LIMIT) == 2
    assert decoded.logs[0].body == "b" * LIMIT + MARKER.format(dropped=200, total=300)


def test_values_within_the_limit_are_left_alone() -> None:
    import random

    decoded = decode_traces(export_request(agent_trace(random.Random(5)).spans), json=False)
    before = [dict(span.attributes) for span in decoded.spans]
    assert truncate_decoded(decoded, 10_000) == 0
    assert [span.attributes for span in decoded.spans] == before
