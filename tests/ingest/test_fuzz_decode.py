"""10,000 generated export requests through decode → truncate → store encoding → extraction.

In-process, so the bulk of the fuzzing takes seconds; ``test_fuzz_http.py`` sends a smaller
sample to a real server, and ``benchmarks/fuzz.py`` runs these properties with far more cases.
The only allowed failure is a clean :class:`DecodeError` (HTTP 400 / INVALID_ARGUMENT).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.otlp_fuzz import decode_and_extract, fuzz_settings, hostile
from tracescore.ingest.decode import DecodeError, decode_traces

# Cases per property; they add up to the 10,000 of the issue.
JSON_TRACES, PROTOBUF_TRACES, JSON_LOGS, RAW_BYTES = 4000, 3500, 1000, 1500


@fuzz_settings(JSON_TRACES)
@given(hostile("json_traces"))
def test_any_otlp_json_trace_document_is_stored_or_refused(body: bytes) -> None:
    decode_and_extract(body, json=True)


@fuzz_settings(PROTOBUF_TRACES)
@given(hostile("protobuf_traces"))
def test_any_protobuf_trace_request_intact_or_damaged_is_stored_or_refused(body: bytes) -> None:
    decode_and_extract(body, json=False)


@fuzz_settings(JSON_LOGS)
@given(hostile("json_logs"))
def test_any_otlp_json_log_document_is_stored_or_refused(body: bytes) -> None:
    decode_and_extract(body, json=True, logs=True)


@fuzz_settings(RAW_BYTES)
@given(st.binary(max_size=300), st.booleans(), st.booleans())
def test_arbitrary_bytes_are_refused_cleanly(body: bytes, json: bool, logs: bool) -> None:
    decode_and_extract(body, json=json, logs=logs)


def test_deeply_nested_values_are_decoded_or_refused_without_recursion_errors() -> None:
    depth = 300  # three JSON levels each: just inside orjson's nesting limit of 1024
    value = '{"arrayValue":{"values":[' * depth + '{"stringValue":"leaf"}' + "]}}" * depth
    span = (
        '{"traceId":"%s","spanId":"%s","attributes":[{"key":"gen_ai.input.messages","value":%s}]}'
    )
    body = '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}' % (
        span % ("1" * 32, "2" * 16, value)
    )
    decoded = decode_and_extract(body.encode(), json=True)
    assert decoded is not None and len(decoded.spans) == 1
    too_deep = b'{"resourceSpans":' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(DecodeError):
        decode_traces(too_deep, json=True)
