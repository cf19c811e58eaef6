"""End to end with real parts: an OTel-instrumented app → tracescore serve → stored scores →
evaluation spans and log records at a real OTLP receiver."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.otlp_receiver import otlp_receiver
from tests.support.paths import REPO
from tests.support.score_rows import wait_for_scores
from tests.support.server_process import free_port, start_server
from tracescore.spans import EVALUATION_EVENT


def _send_agent_trace(endpoint: str) -> tuple[str, str]:
    """What a GenAI-instrumented agent emits: invoke_agent → chat, execute_tool, chat."""
    provider = TracerProvider(resource=Resource.create({"service.name": "checkout"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"))
    )
    tracer = provider.get_tracer("e2e-app")
    system = [{"type": "text", "content": "You are WeatherBot."}]
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {
        "type": "tool_call",
        "id": "call_1",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    with tracer.start_as_current_span("invoke_agent WeatherBot") as agent:
        agent.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "WeatherBot",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.system_instructions": json.dumps(system),
                "gen_ai.input.messages": json.dumps([user]),
            }
        )
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.input.messages": json.dumps([user]),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                }
            )
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_1",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "gen_ai.tool.call.result": '{"forecast": "sunny"}',
                }
            )
        answer = {"role": "assistant", "parts": [{"type": "text", "content": "Sunny in Paris."}]}
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.output.messages": json.dumps([answer]),
                }
            )
        agent.set_attribute("gen_ai.output.messages", json.dumps([answer]))
        ids = (
            format(agent.get_span_context().trace_id, "032x"),
            format(agent.get_span_context().span_id, "016x"),
        )
    provider.shutdown()
    return ids


def test_agent_trace_is_scored_stored_and_re_emitted(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        config = {
            "scorers": [
                {
                    "name": "answer-present",
                    "scorer": "tests.support.custom_scorers:answer_present",
                    "threshold": 0.5,
                }
            ],
            "export": {"otlp_endpoint": receiver.endpoint},
            "workers": {"poll_interval": 0.05},
        }
        with start_server(tmp_path, config=config, env={"PYTHONPATH": str(REPO)}) as server:
            trace_id, agent_span_id = _send_agent_trace(server.base_url)
            (row,) = wait_for_scores(server.db_url, 1)
            receiver.wait_for(spans=1, logs=1, timeout=15)

    assert (row.trace_id, row.span_id, row.binding) == (trace_id, agent_span_id, "answer-present")
    assert (row.status, row.score, row.label, row.agent, row.service) == (
        "ok",
        1.0,
        "pass",
        "WeatherBot",
        "checkout",
    )
    (span,) = receiver.spans
    assert (span.trace_id, span.parent_span_id, span.name) == (
        trace_id,
        agent_span_id,
        "answer-present",
    )
    assert span.events[0].name == EVALUATION_EVENT
    assert span.events[0].attributes["gen_ai.evaluation.score.value"] == 1.0
    (record,) = receiver.logs
    assert (record.trace_id, record.span_id, record.event_name) == (
        trace_id,
        agent_span_id,
        EVALUATION_EVENT,
    )


def test_scores_exported_back_to_the_same_collector_do_not_loop(tmp_path: Path) -> None:
    """An OpenTelemetry Collector that fans tracescore's evaluations out to every backend,
    tracescore included, sends them back here: they are acknowledged and dropped, so the scored
    trace is not reopened and its score is not emitted again and again."""
    port = free_port()
    config = {
        "scorers": [
            {"name": "answer-present", "scorer": "tests.support.custom_scorers:answer_present"}
        ],
        "export": {"otlp_endpoint": f"http://127.0.0.1:{port}", "batch_delay": 0.1},
        "workers": {"poll_interval": 0.05},
    }
    with start_server(
        tmp_path, config=config, env={"PYTHONPATH": str(REPO)}, http_port=port
    ) as server:
        trace_id, _ = _send_agent_trace(server.base_url)
        wait_for_scores(server.db_url, 1)
        time.sleep(2.0)  # the evaluation came back (0.1 s batches) and idle timeouts (0.3 s) passed
        summary = httpx.get(f"{server.base_url}/api/traces", timeout=10).json()
        trace = httpx.get(f"{server.base_url}/api/traces/{trace_id}", timeout=10).json()
        metrics = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    (listed,) = [item for item in summary["traces"] if item["trace_id"] == trace_id]
    assert (listed["state"], listed["generation"], listed["span_count"]) == (
        "scored",
        1,
        len(trace["spans"]),
    )
    assert all(span["name"] != "answer-present" for span in trace["spans"])
    # They did come back: the evaluation's log record was acknowledged (and its span too).
    assert (
        'tracescore_export_requests_total{outcome="ok",signal="logs",transport="http"} 1.0'
        in metrics
    )
