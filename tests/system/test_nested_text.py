"""Span text of any nesting is scored and read (issue 46, item 3), on SQLite and PostgreSQL,
through a real ``tracescore serve``: a tool argument of ``{"a":`` ×260 ended its trace ``failed``
after five attempts ("Maximum serialization depth exceeded"), at 250 levels the runs API answered
500, at 1,000 the runs API and the trace page did (RecursionError); a token count of 1e26 made
the runs API answer 500. Parsed JSON now nests at most :data:`~tracescore.nested_json.MAX_DEPTH`
levels, the rest kept as its text, and a count no column can hold is left out."""

from __future__ import annotations

import random
import time
from pathlib import Path

import httpx
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.server_process import start_server
from tracescore.nested_json import MAX_DEPTH

DEPTHS = (250, 260, 1000)


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _hostile(trace: AgentTrace, depth: int) -> AgentTrace:
    """The trace with its tool's arguments nested ``depth`` levels and a chat's input tokens
    at 1e26."""
    for span in trace.spans:
        for attribute in span.attributes:
            if attribute.key == "gen_ai.tool.call.arguments":
                attribute.value.string_value = _nested(depth)
        if span.name.startswith("chat"):
            span.attributes.append(
                KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(string_value="1e26"))
            )
    return trace


def _depth(value: object) -> int:
    """How deep a parsed document nests (iteratively: the documents read are the subject)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                deepest = max(deepest, level)
                pending.append((child, level + 1))
    return deepest


def test_deeply_nested_span_text_scores_and_reads(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(46)
    traces = {depth: _hostile(agent_trace(rng), depth) for depth in DEPTHS}
    with start_server(tmp_path / "server", db_url=db_url) as server:
        client = httpx.Client(base_url=server.base_url, timeout=30)
        for trace in traces.values():
            response = client.post(
                "/v1/traces",
                content=export_request(trace.spans),
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 200
        wanted = {trace.trace_id for trace in traces.values()}
        deadline = time.monotonic() + 90
        while True:
            summaries = {
                trace_id: client.get(f"/api/v1/traces/{trace_id}").json()["summary"]
                for trace_id in wanted
            }
            if all(s and s["state"] in ("scored", "failed") for s in summaries.values()):
                break
            assert time.monotonic() < deadline, server.output()[-3000:]
            time.sleep(0.3)
        for depth, trace in traces.items():
            summary = summaries[trace.trace_id]
            assert summary["state"] == "scored", (depth, summary["last_error"])
            scores = client.get("/api/v1/scores", params={"trace_id": trace.trace_id}).json()
            assert scores["items"] and all(s["status"] == "ok" for s in scores["items"]), depth
            runs = client.get(f"/api/v1/traces/{trace.trace_id}/runs")
            assert runs.status_code == 200, (depth, runs.text[:300])
            # The parsed arguments nest at most MAX_DEPTH levels; the levels past it are kept
            # as text (quotes escaped), not dropped.
            assert _depth(runs.json()) <= MAX_DEPTH + 8, depth
            assert runs.text.count('\\"a\\"') >= depth - MAX_DEPTH, depth
            usages = [run["usage"] for run in runs.json()["items"]]
            assert all(count < 10**12 for usage in usages for count in usage.values()), usages
            page = client.get(f"/ui/traces/{trace.trace_id}")
            assert page.status_code == 200, (depth, page.text[:300])
