"""Hostile OTLP export requests, and the property every body must meet.

Shared by the fuzz tests (``tests/ingest/test_fuzz_decode.py``, ``tests/system/test_fuzz_http.py``)
and ``benchmarks/fuzz.py``, which runs the same properties with many more cases. Bodies come in three families:

- OTLP/JSON documents whose every field may hold the wrong type, an out-of-range number or a
  half-valid id, with GenAI / OpenInference / OpenLLMetry / Vercel attribute keys and
  message-shaped JSON values (often cut short) so the values reach deep into the extractors;
- OTLP protobuf requests built with the generated classes, then often damaged (bytes flipped,
  cut or spliced in);
- arbitrary bytes (a hypothesis strategy of its own).

Documents are built by :class:`Hostile` from a ``random.Random`` that hypothesis seeds: nested
hypothesis strategies cost tens of milliseconds per example to draw, which would make the
suite's 10,000 cases take minutes; a seeded builder costs microseconds, and a failure is still
reported with its seed (and the body can be rebuilt from it).

:func:`decode_and_extract` is the in-process path a body takes through the collector: decode,
truncate oversized values, encode for the store, assemble traces, extract runs. It may refuse a
body (``DecodeError``) and nothing else.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import (
    ResourceSpans,
    ScopeSpans,
    Span,
    Status,
)

from tracescore.extract import extract_runs
from tracescore.ingest.decode import Decoded, DecodeError, decode_logs, decode_traces
from tracescore.ingest.truncate import truncate_decoded
from tracescore.spans import Trace
from tracescore.store import codec

# Small, so generated values are cut often and the extractors meet cut JSON.
FUZZ_ATTRIBUTE_CHARS = 64

# Keys the convention modules read, so generated attributes are not all ignored.
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.name",
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.input_messages.0.message.content",
    "llm.input_messages.0.message.role",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.prompt.0.content",
    "gen_ai.prompt.0.role",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.operationId",
    "ai.toolCall.args",
    "operation.name",
    "mastra.agent_run.input",
    "logfire.msg",
    "all_messages_events",
    "final_result",
    "service.name",
]
OPERATIONS = [
    "chat",
    "invoke_agent",
    "execute_tool",
    "AGENT",
    "LLM",
    "TOOL",
    "CHAIN",
    "agent",
    "tool",
    "workflow",
    "ai.generateText",
    "ai.toolCall",
    "retrieval",
]
MESSAGE_KEYS = [
    "role",
    "parts",
    "type",
    "content",
    "id",
    "name",
    "arguments",
    "text",
    "tool_calls",
    "function",
    "messages",
    "result",
    "response",
    "finish_reason",
]
ROLES = ["user", "assistant", "system", "tool", "model", "human", "ai", ""]
_ALPHABET = 'ab xyz09{}[]":,\\\n\t\x00é漢😀\u200b\ufeff'


class Hostile:
    """Builds one hostile request from ``rng``: mostly the right shape, often not."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def text(self, size: int = 12) -> str:
        return "".join(self.rng.choice(_ALPHABET) for _ in range(self.rng.randrange(size + 1)))

    def number(self) -> int | float:
        return self.rng.choice(
            [
                0,
                -1,
                1,
                2**31,
                2**63,
                -(2**64),
                10**30,
                0.5,
                -0.0,
                1e308,
                float("inf"),
                float("nan"),
                self.rng.randrange(-1000, 1000),
            ]
        )

    def junk(self, depth: int = 0) -> Any:
        """Any JSON value (and the stdlib writes NaN, which strict JSON forbids)."""
        kind = self.rng.randrange(8 if depth < 3 else 5)
        if kind == 0:
            return None
        if kind == 1:
            return self.chance(0.5)
        if kind == 2:
            return self.number()
        if kind in (3, 4):
            return self.text()
        if kind in (5, 6):
            return [self.junk(depth + 1) for _ in range(self.rng.randrange(4))]
        return {self.text(6): self.junk(depth + 1) for _ in range(self.rng.randrange(4))}

    def maybe(self, build: Any, *args: Any) -> Any:
        return build(*args) if self.chance(0.85) else self.junk()

    def message(self, depth: int = 0) -> Any:
        if depth > 2 or self.chance(0.3):
            return self.rng.choice([self.text(20), self.rng.choice(ROLES), self.number(), None])
        if self.chance(0.4):
            return [self.message(depth + 1) for _ in range(self.rng.randrange(4))]
        keys = self.rng.sample(MESSAGE_KEYS, self.rng.randrange(1, 5))
        return {key: self.message(depth + 1) for key in keys}

    def attribute_text(self) -> str:
        kind = self.rng.randrange(4)
        if kind == 0:
            return self.rng.choice(OPERATIONS)
        if kind == 1:
            return self.text(40)
        dumped = json.dumps(self.message())
        return dumped if kind == 2 else dumped[: self.rng.randrange(len(dumped) + 1)]

    def key(self) -> str:
        return self.rng.choice(KEYS) if self.chance(0.85) else self.text(10)

    def hex_id(self, size: int) -> str:
        if self.chance(0.9):
            return self.rng.randbytes(size).hex()
        return self.rng.choice(
            ["", "0" * size * 2, "zz" * size, self.rng.randbytes(size + 1).hex()]
        )

    def int_like(self) -> Any:
        return self.rng.choice([self.number(), str(self.rng.randrange(2**64)), self.text(4)])

    # ------------------------------------------------------------------------- OTLP/JSON

    def json_value(self, depth: int = 0) -> Any:
        kind = self.rng.randrange(9 if depth < 3 else 7)
        if kind in (0, 1, 2):
            return {"stringValue": self.maybe(self.attribute_text)}
        if kind == 3:
            return {"intValue": self.int_like()}
        if kind == 4:
            return {"doubleValue": self.rng.choice([self.number(), "NaN", "-Infinity", "x"])}
        if kind == 5:
            return {self.rng.choice(["boolValue", "bytesValue"]): self.junk()}
        if kind == 6:
            return self.junk()
        if kind == 7:
            return {
                "arrayValue": {
                    "values": [self.json_value(depth + 1) for _ in range(self.rng.randrange(4))]
                }
            }
        pairs = [
            {"key": self.key(), "value": self.json_value(depth + 1)}
            for _ in range(self.rng.randrange(4))
        ]
        return {"kvlistValue": {"values": pairs}}

    def json_attributes(self) -> Any:
        return self.maybe(
            lambda: [
                {"key": self.maybe(self.key), "value": self.json_value()}
                for _ in range(self.rng.randrange(7))
            ]
        )

    def _some(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Each optional field present or not, built only when present."""
        return {name: build() for name, build in fields.items() if self.chance(0.7)}

    def json_span(self) -> Any:
        def span() -> dict[str, Any]:
            fields = {"traceId": self.maybe(self.hex_id, 16), "spanId": self.maybe(self.hex_id, 8)}
            return fields | self._some(
                {
                    "parentSpanId": lambda: self.maybe(self.hex_id, 8),
                    "name": lambda: self.maybe(self.text, 20),
                    "kind": lambda: self.rng.choice(
                        [1, 3, 9, -1, "SPAN_KIND_CLIENT", "SPAN_KIND_X", None]
                    ),
                    "startTimeUnixNano": self.int_like,
                    "endTimeUnixNano": self.int_like,
                    "attributes": self.json_attributes,
                    "events": lambda: self.maybe(
                        lambda: [
                            self._some(
                                {
                                    "name": self.text,
                                    "timeUnixNano": self.int_like,
                                    "attributes": self.json_attributes,
                                }
                            )
                            for _ in range(self.rng.randrange(3))
                        ]
                    ),
                    "links": lambda: self.maybe(
                        lambda: [
                            self._some(
                                {
                                    "traceId": lambda: self.hex_id(16),
                                    "spanId": lambda: self.hex_id(8),
                                    "attributes": self.json_attributes,
                                }
                            )
                            for _ in range(self.rng.randrange(3))
                        ]
                    ),
                    "status": lambda: self.maybe(
                        lambda: self._some(
                            {
                                "code": lambda: self.rng.choice(
                                    [0, 1, 2, 7, "STATUS_CODE_ERROR", None]
                                ),
                                "message": self.text,
                            }
                        )
                    ),
                }
            )

        return self.maybe(span)

    def _blocks(self, outer: str, inner: str, records: str, record: Any) -> Any:
        return self.maybe(
            lambda: {
                outer: self.maybe(
                    lambda: [
                        self.maybe(
                            lambda: self._some(
                                {
                                    "resource": lambda: self.maybe(
                                        lambda: {"attributes": self.json_attributes()}
                                    ),
                                    inner: lambda: self.maybe(
                                        lambda: [
                                            self.maybe(
                                                lambda: self._some(
                                                    {
                                                        "scope": lambda: self.maybe(
                                                            lambda: {
                                                                "name": self.text(),
                                                                "version": self.junk(),
                                                            }
                                                        ),
                                                        records: lambda: self.maybe(
                                                            lambda: [
                                                                record()
                                                                for _ in range(
                                                                    self.rng.randrange(5)
                                                                )
                                                            ]
                                                        ),
                                                    }
                                                )
                                            )
                                            for _ in range(self.rng.randrange(3))
                                        ]
                                    ),
                                }
                            )
                        )
                        for _ in range(self.rng.randrange(3))
                    ]
                )
            }
        )

    def json_traces(self) -> bytes:
        return json_body(self._blocks("resourceSpans", "scopeSpans", "spans", self.json_span))

    def json_logs(self) -> bytes:
        def record() -> Any:
            return self.maybe(
                lambda: self._some(
                    {
                        "traceId": lambda: self.maybe(self.hex_id, 16),
                        "spanId": lambda: self.maybe(self.hex_id, 8),
                        "body": self.json_value,
                        "eventName": lambda: self.maybe(self.text),
                        "attributes": self.json_attributes,
                        "timeUnixNano": self.int_like,
                        "severityNumber": lambda: self.rng.choice(
                            [9, 17, -3, "SEVERITY_NUMBER_INFO", None]
                        ),
                    }
                )
            )

        return json_body(self._blocks("resourceLogs", "scopeLogs", "logRecords", record))

    # ------------------------------------------------------------------------- protobuf

    def pb_value(self, depth: int = 0) -> AnyValue:
        kind = self.rng.randrange(9 if depth < 3 else 7)
        if kind in (0, 1, 2):
            return AnyValue(string_value=self.attribute_text().encode("utf-8", "replace").decode())
        if kind == 3:
            return AnyValue(int_value=self.rng.randrange(-(2**63), 2**63))
        if kind == 4:
            return AnyValue(double_value=float(self.number()))
        if kind == 5:
            return AnyValue(bool_value=self.chance(0.5))
        if kind == 6:
            return (
                AnyValue(bytes_value=self.rng.randbytes(self.rng.randrange(90)))
                if self.chance(0.8)
                else AnyValue()
            )
        if kind == 7:
            return AnyValue(
                array_value=ArrayValue(
                    values=[self.pb_value(depth + 1) for _ in range(self.rng.randrange(4))]
                )
            )
        pairs = [
            KeyValue(key=self.key(), value=self.pb_value(depth + 1))
            for _ in range(self.rng.randrange(4))
        ]
        return AnyValue(kvlist_value=KeyValueList(values=pairs))

    def pb_attributes(self) -> list[KeyValue]:
        return [
            KeyValue(key=self.key(), value=self.pb_value()) for _ in range(self.rng.randrange(7))
        ]

    def pb_id(self, size: int) -> bytes:
        return self.rng.randbytes(size if self.chance(0.9) else self.rng.randrange(size + 2))

    def pb_span(self) -> Span:
        return Span(
            trace_id=self.pb_id(16),
            span_id=self.pb_id(8),
            parent_span_id=self.pb_id(8) if self.chance(0.6) else b"",
            name=self.text(20),
            kind=self.rng.randrange(6),
            start_time_unix_nano=self.rng.randrange(2**64),
            end_time_unix_nano=self.rng.randrange(2**64),
            attributes=self.pb_attributes(),
            status=Status(code=self.rng.randrange(3), message=self.text(20)),
        )

    def protobuf_traces(self) -> bytes:
        request = ExportTraceServiceRequest(
            resource_spans=[
                ResourceSpans(
                    resource=Resource(attributes=self.pb_attributes()),
                    scope_spans=[
                        ScopeSpans(
                            scope=InstrumentationScope(name=self.text()),
                            spans=[self.pb_span() for _ in range(self.rng.randrange(5))],
                        )
                    ],
                )
            ]
        )
        return self.damage(request.SerializeToString())

    def damage(self, body: bytes) -> bytes:
        """``body`` as sent, or with a byte flipped, cut short or random bytes spliced in."""
        how = self.rng.randrange(4)
        if how == 0 or not body:
            return body
        at = self.rng.randrange(len(body))
        if how == 1:
            return body[:at] + bytes([body[at] ^ self.rng.randrange(1, 256)]) + body[at + 1 :]
        if how == 2:
            return body[:at]
        return body[:at] + self.rng.randbytes(self.rng.randrange(1, 12)) + body[at:]


def json_body(document: object) -> bytes:
    """The JSON text of ``document``; the stdlib writes what orjson will not (integers past 64
    bits, ``NaN``, lone surrogates), so the decoder meets those too."""
    return json.dumps(document).encode()


def hostile(build: str) -> st.SearchStrategy[bytes]:
    """Bodies made by ``Hostile.<build>`` from hypothesis-drawn seeds."""
    return st.integers(0, 2**64 - 1).map(
        lambda seed: getattr(Hostile(random.Random(seed)), build)()
    )


# ----------------------------------------------------------------------------- the property


def decode_and_extract(body: bytes, *, json: bool, logs: bool = False) -> Decoded | None:
    """What the collector and a worker do with ``body``; None when it is rightly refused."""
    try:
        decoded = (decode_logs if logs else decode_traces)(body, json=json)
    except DecodeError:
        return None
    truncate_decoded(decoded, FUZZ_ATTRIBUTE_CHARS)
    traces: dict[str, Trace] = defaultdict(lambda: Trace(""))
    for span in decoded.spans:
        assert len(span.trace_id) == 32 and len(span.span_id) == 16
        assert max(span.start_time_ns, span.end_time_ns, *(e.time_ns for e in span.events)) < 2**63
        codec.decode(codec.encode(span.attributes))  # the store's encoding of them
        traces[span.trace_id].trace_id = span.trace_id
        traces[span.trace_id].spans.append(span)
    for record in decoded.logs:
        assert max(record.time_ns, record.observed_time_ns) < 2**63  # SQL BIGINT
        codec.decode(codec.encode(record.attributes))
        codec.decode(codec.encode(record.body))
    for trace in traces.values():
        for run in extract_runs(trace):
            run.model_dump_json()
    return decoded


def fuzz_settings(examples: int) -> settings:
    """``examples`` cases (times ``TRACESCORE_FUZZ_SCALE``, which the benchmark raises)."""
    scale = float(os.environ.get("TRACESCORE_FUZZ_SCALE", "1"))
    return settings(
        max_examples=max(1, int(examples * scale)),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ----------------------------------------------------------------------------- over the wire

PATHS = ("/v1/traces", "/v1/logs", "/v1/metrics")
PROTOBUF, JSON = "application/x-protobuf", "application/json"
ALLOWED_STATUSES = frozenset({200, 400, 413, 415})
"""Answers a fuzzed request may get (503 only under load, which the fuzzers do not create)."""


def hostile_request(rng: random.Random) -> tuple[str, bytes, dict[str, str]]:
    """(path, body, headers) of one hostile OTLP/HTTP request, sometimes gzip (or fake gzip)."""
    build = Hostile(rng)
    kind = rng.randrange(5)
    if kind == 0:
        path, body, content_type = "/v1/traces", build.json_traces(), JSON
    elif kind == 1:
        path, body, content_type = "/v1/traces", build.protobuf_traces(), PROTOBUF
    elif kind == 2:
        path, body, content_type = "/v1/logs", build.json_logs(), JSON
    elif kind == 3:
        path, body, content_type = (
            rng.choice(PATHS),
            rng.randbytes(rng.randrange(400)),
            rng.choice([JSON, PROTOBUF]),
        )
    else:
        path, body = rng.choice(PATHS), build.json_traces()
        content_type = rng.choice(
            ["text/plain", "", "application/json; charset=utf-8", "application/x-protobuf;x=1"]
        )
    headers = {"Content-Type": content_type}
    encoding = rng.randrange(6)
    if encoding == 0:
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    elif encoding == 1:
        headers["Content-Encoding"] = rng.choice(["gzip", "br", "identity"])
    return path, body, headers
