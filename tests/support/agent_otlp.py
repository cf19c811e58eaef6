"""OTLP/protobuf export requests carrying GenAI agent traces, built with opentelemetry-proto.

The multi-process test and the scale benchmark scatter the spans of every trace over several
tracescore processes, the worst case for a deployment without trace-id routing. Root spans go
out in a second round, after every child: a trace only becomes ready once its root has
arrived, so no trace can be scored before all its spans are stored (which would rescore it
when the late span lands, a correct but different path from the one these measure).
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

SERVICE = "scale-app"
AGENT = "WeatherBot"


@dataclass(frozen=True)
class AgentTrace:
    trace_id: str
    agent_span_id: str
    spans: list[Span]
    """Children first, the root ``invoke_agent`` span last."""
    logs: list[LogRecord]
    """The user's message as a GenAI event log record in the first chat span's context."""


def _attributes(values: dict[str, str]) -> list[KeyValue]:
    return [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in values.items()]


def _text(role: str, content: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}])


def agent_trace(
    rng: random.Random,
    city: str = "Paris",
    tool: str = "get_weather",
    conversation: str | None = None,
) -> AgentTrace:
    """invoke_agent → chat (tool call), execute_tool, chat (answer), as OTel GenAI spans; the
    tool called is ``tool``, and with ``conversation`` the agent span names that conversation
    (``gen_ai.conversation.id``), making the trace one of its turns."""
    trace_id = rng.randbytes(16)
    root_id, *child_ids = (rng.randbytes(8) for _ in range(4))
    start = time.time_ns() - 2_000_000_000
    question, answer = _text("user", f"Weather in {city}?"), _text("assistant", f"Sunny in {city}.")
    call = {"type": "tool_call", "id": "call_1", "name": tool, "arguments": {"city": city}}
    children = [
        (
            "chat gpt-4o-mini",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.input.messages": question,
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
            },
        ),
        (
            f"execute_tool {tool}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"city": city}),
                "gen_ai.tool.call.result": '{"forecast": "sunny"}',
            },
        ),
        (
            "chat gpt-4o-mini",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.output.messages": answer,
            },
        ),
    ]
    spans = [
        Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=root_id,
            name=name,
            kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=start + (n + 1) * 100_000_000,
            end_time_unix_nano=start + (n + 2) * 100_000_000,
            attributes=_attributes(attrs),
        )
        for n, (span_id, (name, attrs)) in enumerate(zip(child_ids, children, strict=True))
    ]
    spans.append(
        Span(
            trace_id=trace_id,
            span_id=root_id,
            name=f"invoke_agent {AGENT}",
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start,
            end_time_unix_nano=start + 500_000_000,
            attributes=_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT,
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.input.messages": question,
                    "gen_ai.output.messages": answer,
                    **({"gen_ai.conversation.id": conversation} if conversation else {}),
                }
            ),
        )
    )
    user_event = LogRecord(
        time_unix_nano=start + 100_000_000,
        observed_time_unix_nano=start + 100_000_000,
        trace_id=trace_id,
        span_id=child_ids[0],
        event_name="gen_ai.user.message",
        body=AnyValue(string_value=f"Weather in {city}?"),
    )
    return AgentTrace(trace_id.hex(), root_id.hex(), spans, [user_event])


def _resource_and_scope() -> tuple[Resource, InstrumentationScope]:
    return (
        Resource(attributes=_attributes({"service.name": SERVICE})),
        InstrumentationScope(name="tracescore-scale-test", version="1"),
    )


def export_request(spans: Sequence[Span]) -> bytes:
    """One OTLP/HTTP protobuf body for ``/v1/traces``, as an SDK's exporter would send it."""
    resource, scope = _resource_and_scope()
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=list(spans))]
            )
        ]
    )
    return request.SerializeToString()


def export_logs_request(records: Sequence[LogRecord]) -> bytes:
    """One OTLP/HTTP protobuf body for ``/v1/logs``."""
    resource, scope = _resource_and_scope()
    request = ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                resource=resource, scope_logs=[ScopeLogs(scope=scope, log_records=list(records))]
            )
        ]
    )
    return request.SerializeToString()


def scatter(
    traces: Sequence[AgentTrace], targets: int, rng: random.Random
) -> list[tuple[int, bytes]]:
    """(target index, body) pairs sending each span to a random target, roots in a last round."""
    rounds: list[list[Span]] = [
        [span for trace in traces for span in trace.spans[:-1]],
        [trace.spans[-1] for trace in traces],
    ]
    requests = []
    for spans in rounds:
        by_target: dict[int, list[Span]] = defaultdict(list)
        for span in spans:
            by_target[rng.randrange(targets)].append(span)
        requests += [(target, export_request(group)) for target, group in sorted(by_target.items())]
    return requests


def by_trace(traces: Sequence[AgentTrace], targets: int) -> list[tuple[int, bytes]]:
    """(target index, body) pairs keeping each trace on one target, as the gateway routes."""
    by_target: dict[int, list[Span]] = defaultdict(list)
    for trace in traces:
        by_target[int(trace.trace_id, 16) % targets].extend(trace.spans)
    return [(target, export_request(group)) for target, group in sorted(by_target.items())]
