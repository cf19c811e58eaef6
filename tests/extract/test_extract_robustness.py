"""Extraction never raises, whatever the attribute values: a property test over all conventions.

``safe_read`` would turn a crash into a warning, so the test also asserts that no convention
module needed it: every module must handle wrong types, cut JSON and odd shapes itself.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.extract_support import span, trace
from tracescore.extract import extract_runs, read_spans
from tracescore.spans import SpanEvent

# Keys each convention reads, so generated spans reach deep into every reader.
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
    "gen_ai.tool.name",
    "gen_ai.agent.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.request.model",
    "gen_ai.retrieval.documents",
    "openinference.span.kind",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.contents.0.message_content.type",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "llm.tools.0.tool.json_schema",
    "input.value",
    "output.value",
    "metadata",
    "retrieval.documents.0.document.content",
    "retrieval.documents.0.document.score",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.reasoning",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "llm.request.functions.0.parameters",
    "llm.request.type",
    "error.type",
]
OPERATIONS = [
    "chat",
    "invoke_agent",
    "execute_tool",
    "retrieval",
    "embeddings",
    "AGENT",
    "LLM",
    "TOOL",
    "CHAIN",
    "RETRIEVER",
    "agent",
    "tool",
    "workflow",
]

json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "parts",
                    "type",
                    "content",
                    "id",
                    "name",
                    "arguments",
                    "response",
                    "result",
                    "tool_calls",
                    "function",
                    "text",
                    "summary",
                    "kwargs",
                    "lc",
                    "messages",
                    "choices",
                    "message",
                    "output",
                    "input",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
values = (
    st.sampled_from(OPERATIONS)
    | st.text(max_size=30)
    | json_like.map(lambda v: __import__("orjson").dumps(v, option=4).decode()[:50])  # cut JSON
    | json_like
    | st.binary(max_size=10)
    | st.integers(-(2**62), 2**62)
)
attributes = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(attributes, st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=6)
)
def test_random_spans_never_raise(spec: list[tuple[dict, int, int]]) -> None:
    spans = []
    for attrs, parent, status in spec:
        parent_id = spans[parent % len(spans)].span_id if spans and parent else None
        made = span("s", attrs, parent=parent_id, status=status)
        made.events = [SpanEvent("gen_ai.choice", 1, {"message": attrs.get("input.value")})]
        spans.append(made)
    built = trace(*spans)
    for info in read_spans(built):
        assert not any("could not read" in w for w in info.warnings), info.warnings
    for run in extract_runs(built):
        run.model_dump_json()  # every run serializes


@pytest.mark.parametrize(
    "attributes",
    [
        # Found by the property test: a message whose "type" is a list (LangChain's role map).
        {"gen_ai.input.messages": '{"type":[]}'},
        {"gen_ai.input.messages": '[{"type":{"human":1},"content":"hi"}]'},
        # A "type" that is a list where reasoning blocks and tool-result envelopes are told apart.
        {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "hi",
            "output.value": '[{"type":["reasoning"]}]',
        },
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.result": '{"type":["json"],"value":1}',
        },
    ],
)
def test_unhashable_type_fields_are_read_without_a_crash(attributes: dict[str, str]) -> None:
    built = trace(span("s", attributes))
    for info in read_spans(built):
        assert not any("could not read" in w for w in info.warnings), info.warnings
    for run in extract_runs(built):
        run.model_dump_json()
