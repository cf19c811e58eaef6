"""OTLP decoding: protobuf and OTLP/JSON of every capture decode to the same records."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.support.paths import CAPTURES
from tracescore.ingest.decode import DecodeError, decode_traces
from tracescore.ingest.files import decode_file, load_traces

PB_FILES = sorted(p for p in CAPTURES.rglob("*.pb") if ".metrics." not in p.name)


def _fingerprint(path: Path) -> tuple[list[tuple], list[tuple]]:
    decoded = decode_file(path)
    spans = [
        (
            s.trace_id,
            s.span_id,
            s.parent_span_id,
            s.name,
            s.kind,
            s.start_time_ns,
            s.end_time_ns,
            s.attributes,
            s.resource.attributes,
            s.scope.name,
            s.status_code,
            [(e.name, e.time_ns, e.attributes) for e in s.events],
        )
        for s in decoded.spans
    ]
    logs = [(r.trace_id, r.span_id, r.event_name, r.body, r.attributes) for r in decoded.logs]
    return spans, logs


@pytest.mark.parametrize("pb_path", PB_FILES, ids=lambda p: str(p.relative_to(CAPTURES)))
def test_protobuf_and_json_captures_decode_identically(pb_path: Path) -> None:
    spans, logs = _fingerprint(pb_path)
    assert spans or logs
    assert (spans, logs) == _fingerprint(pb_path.with_suffix(".json"))


def test_node_raw_json_body_decodes_like_the_protobuf() -> None:
    raw = CAPTURES / "vercel-ai-sdk-v6" / "tool_call" / "0001.raw.json"
    assert _fingerprint(raw) == _fingerprint(raw.with_name("0001.pb"))


def test_ids_are_lowercase_hex_and_values_keep_their_types() -> None:
    (trace,) = load_traces([CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"])
    chat = next(s for s in trace.spans if s.name.startswith("chat"))
    assert len(chat.trace_id) == 32 and chat.trace_id == chat.trace_id.lower()
    assert chat.attributes["gen_ai.usage.input_tokens"] == 103
    assert chat.attributes["gen_ai.request.temperature"] == 0.2
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert len(trace.logs) == 2 and all(r.span_id for r in trace.logs)


def test_spans_without_ids_are_rejected_not_fatal() -> None:
    body = (
        b'{"resourceSpans":[{"scopeSpans":[{"spans":['
        b'{"traceId":"","spanId":"0102030405060708","name":"a"},'
        b'{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"b"}'
        b"]}]}]}"
    )
    decoded = decode_traces(body, json=True)
    assert [s.name for s in decoded.spans] == ["b"]
    assert decoded.rejected == 1 and "trace id" in decoded.error_message


@pytest.mark.parametrize(
    "body,json",
    [
        (b"{not json", True),
        (b'{"resourceSpans": 3}', True),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"soon"}]}]}]}',
            True,
        ),
        (b"\x0a\xff\xff\xff\xff\x0f", False),
        (gzip.compress(b"x", mtime=0), False),
    ],
)
def test_undecodable_bodies_raise_decode_error(body: bytes, json: bool) -> None:
    with pytest.raises(DecodeError):
        decode_traces(body, json=json)
