"""OpenInference: indexed attributes, TOOL spans without ids, raw bodies, the GenAI mirror."""

from __future__ import annotations

import orjson

from tests.support.extract_support import (
    CHAT_ANSWER,
    CHAT_SYSTEM,
    CHAT_USER,
    REASONING_ANSWER,
    REASONING_TEXT,
    REASONING_USER,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    assert_weather_agent,
    capture_runs,
    final_answer,
    only,
    reasoning,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tracescore.extract import extract_runs, read_spans
from tracescore.extract.model import TokenUsage

LIB = "openinference-openai"


def test_agent_with_tool_span_without_id() -> None:
    runs = capture_runs(LIB, "tool_call_agent")
    (agent,) = only(runs, "agent")
    assert_weather_agent(agent, convention="openinference")
    assert agent.provider == "openai"
    # The TOOL span has no call id: its run still gets the name, arguments and result.
    (tool,) = only(runs, "tool")
    (call,) = tool_calls(tool)
    assert (call.tool_call_id, call.tool_name, call.args) == ("", "get_weather", {"city": "Paris"})
    assert call.result == WEATHER_RESULT


def test_genai_mirror_is_read_once() -> None:
    runs = capture_runs(LIB, "tool_call_agent_genai_semconv")
    (agent,) = only(runs, "agent")
    assert_weather_agent(agent, convention="openinference")
    # The mirror's TOOL-span bug (schema as arguments) does not leak into the call.
    (tool,) = only(runs, "tool")
    assert tool_calls(tool)[0].args == {"city": "Paris"}
    assert all(r.convention == "openinference" for r in runs)
    # One set of messages per span, not the OpenInference and GenAI copies side by side.
    first_llm = only(runs, "llm")[0]
    assert user_text(first_llm) == [WEATHER_USER]
    assert len(first_llm.tools) == 1


def test_plain_chat_and_stream() -> None:
    for scenario in ("plain_chat", "plain_chat_stream"):
        (run,) = capture_runs(LIB, scenario)
        assert (run.kind, run.primary, run.convention) == ("llm", True, "openinference")
        assert (system_text(run), user_text(run)) == ([CHAT_SYSTEM], [CHAT_USER])
        assert final_answer(run) == CHAT_ANSWER
        assert run.usage == TokenUsage(input_tokens=36, output_tokens=17, total_tokens=53)


def test_reasoning_recovered_from_raw_response_body() -> None:
    # Chat Completions reasoning_content is not flattened (§3) but output.value keeps it.
    (run,) = capture_runs(LIB, "reasoning")
    assert system_text(run) == [CHAT_SYSTEM]  # a `developer` message
    assert user_text(run) == [REASONING_USER]
    assert reasoning(run) == [REASONING_TEXT]
    assert final_answer(run).startswith(REASONING_ANSWER)
    assert run.usage.reasoning_tokens == 32


def test_responses_reasoning_message_and_answer_become_one_message() -> None:
    (run,) = capture_runs(LIB, "responses")
    assert system_text(run) == [CHAT_SYSTEM]
    assert [p.type for p in run.output[0].content.parts] == ["reasoning", "text"]
    assert reasoning(run) == [REASONING_TEXT]
    assert final_answer(run).startswith(REASONING_ANSWER)


def test_raw_tool_loop() -> None:
    first, second = capture_runs(LIB, "tool_call")
    (call,) = tool_calls(first)
    assert (call.tool_name, call.args, call.state) == ("get_weather", {"city": "Paris"}, "call")
    assert first.tools[0].parameters["required"] == ["city"]
    assert system_text(second) == [WEATHER_SYSTEM]
    assert final_answer(second).startswith(WEATHER_ANSWER)
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT


def test_index_gaps_are_closed_and_reported() -> None:
    llm = span(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "one",
            "llm.input_messages.2.message.role": "user",
            "llm.input_messages.2.message.content": "three",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.1.message_content.type": "text",
            "llm.output_messages.0.message.contents.1.message_content.text": "answer",
        },
    )
    (run,) = extract_runs(trace(llm))
    assert user_text(run) == ["one", "three"]
    assert final_answer(run) == "answer"
    assert any("llm.input_messages.N: index 1 missing" in w for w in run.warnings)
    assert any("message.contents.N: index 0 missing" in w for w in run.warnings)


def test_langchain_shapes_chain_agent_and_tool_message() -> None:
    """LangChain: a root CHAIN named after the agent; the call id only in the ToolMessage."""
    root = span(
        "WeatherBot",
        {
            "openinference.span.kind": "CHAIN",
            "metadata": '{"lc_agent_name": "WeatherBot"}',
            "input.value": '{"messages": [{"role": "user", "content": "Hi?"}]}',
        },
    )
    model = span(
        "model",
        {"openinference.span.kind": "CHAIN", "metadata": '{"lc_agent_name": "WeatherBot"}'},
        parent=root.span_id,
    )
    llm = span(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
        },
        parent=model.span_id,
    )
    tool_message = {
        "lc": 1,
        "type": "constructor",
        "kwargs": {
            "content": '{"forecast": "sunny"}',
            "tool_call_id": "call_9",
            "status": "success",
        },
    }
    tool = span(
        "get_weather",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": "Paris",
            "output.value": orjson.dumps(tool_message).decode(),
        },
        parent=root.span_id,
    )
    runs = extract_runs(trace(root, model, llm, tool))
    (agent,) = only(runs, "agent")
    assert agent.agent_name == "WeatherBot"
    assert user_text(agent) == ["Hi?"]
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.args, call.result) == (
        "call_9",
        {"city": "Paris"},
        {"forecast": "sunny"},
    )


def test_tool_span_without_id_matched_by_name_and_order() -> None:
    agent = span("Bot", {"openinference.span.kind": "AGENT", "input.value": "Weather in A and B?"})
    calls = {"openinference.span.kind": "LLM"}
    for k, city in enumerate(("A", "B")):
        prefix = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
        calls[f"{prefix}.id"] = f"call_{city}"
        calls[f"{prefix}.function.name"] = "get_weather"
        calls[f"{prefix}.function.arguments"] = orjson.dumps({"city": city}).decode()
    llm = span("ChatCompletion", calls, parent=agent.span_id)
    tools = [
        span(
            "get_weather",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": orjson.dumps({"city": city}).decode(),
                "output.value": f"sunny in {city}",
            },
            parent=agent.span_id,
        )
        for city in ("A", "B")
    ]
    broken = span(
        "search",
        {"openinference.span.kind": "TOOL", "tool.name": "search", "input.value": '{"q": 1}'},
        parent=agent.span_id,
        status=2,
        status_message="HTTP 500",
    )
    (run,) = only(extract_runs(trace(agent, llm, *tools, broken)), "agent")
    first, second, failed = tool_calls(run)
    assert (first.tool_call_id, first.result) == ("call_A", "sunny in A")
    assert (second.tool_call_id, second.result) == ("call_B", "sunny in B")
    # A tool no LLM output showed still appears, with its failure.
    assert (failed.tool_name, failed.state, failed.error_text) == (
        "search",
        "output-error",
        "HTTP 500",
    )
    assert user_text(run) == ["Weather in A and B?"]


def test_retriever_documents_are_context() -> None:
    agent = span("RAG", {"openinference.span.kind": "AGENT", "input.value": "q"})
    retriever = span(
        "retrieve",
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.id": "doc-1",
            "retrieval.documents.0.document.content": "Paris is the capital of France.",
            "retrieval.documents.0.document.score": 0.9,
            "retrieval.documents.0.document.metadata": '{"source": "wiki"}',
            "retrieval.documents.1.document.id": "doc-2",
        },
        parent=agent.span_id,
    )
    (run,) = extract_runs(trace(agent, retriever))
    (doc,) = run.context
    assert (doc.kind, doc.source, doc.score, doc.content) == (
        "retrieval",
        "doc-1",
        0.9,
        "Paris is the capital of France.",
    )
    assert doc.metadata == {"source": "wiki"}


def test_llm_span_with_only_raw_bodies() -> None:
    request = {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
    }
    response = {
        "choices": [{"message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}]
    }
    llm = span(
        "ChatCompletion",
        {
            "openinference.span.kind": "LLM",
            "input.value": orjson.dumps(request).decode(),
            "output.value": orjson.dumps(response).decode(),
        },
    )
    (run,) = extract_runs(trace(llm))
    assert (system_text(run), user_text(run), final_answer(run)) == (["S"], ["Q"], "A")
    responses_api = span(
        "Response",
        {
            "openinference.span.kind": "LLM",
            "input.value": '{"instructions": "S", "input": "Q"}',
            "output.value": orjson.dumps(
                {
                    "output": [
                        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "R"}]},
                        {
                            "type": "function_call",
                            "id": "fc_1",
                            "call_id": "call_1",
                            "name": "f",
                            "arguments": "{}",
                        },
                        {
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "A"}],
                        },
                    ]
                }
            ).decode(),
        },
    )
    (run,) = extract_runs(trace(responses_api))
    assert (system_text(run), user_text(run), final_answer(run)) == (["S"], ["Q"], "A")
    assert reasoning(run) == ["R"]
    assert tool_calls(run)[0].tool_call_id == "call_1"


def test_truncated_and_huge_values() -> None:
    llm = span(
        "ChatCompletion",
        {
            "openinference.span.kind": "LLM",
            "llm.tools.0.tool.json_schema": '{"type": "function", "function": {"name": "f", "descr',
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "y" * 5_000_000,
            "output.value": '{"choices": [{"message": {"reasoning_content": "cut',
        },
    )
    (info,) = read_spans(trace(llm))
    assert info.tools == []
    assert any("llm.tools.N.tool.json_schema: invalid JSON" in w for w in info.warnings)
    (run,) = extract_runs(trace(llm))
    assert len(final_answer(run)) == 5_000_000  # plain text attributes are not cut


def test_langchain_graph_with_metadata_only_below_the_root() -> None:
    """The root CHAIN carries no metadata; its nodes say ``lc_agent_name``; reasoning survives
    only in the LLM span's serialized output (§3)."""
    meta = '{"lc_agent_name": "WeatherBot", "langgraph_node": "model"}'
    human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "HumanMessage"],
        "kwargs": {"content": "Is 17 prime?", "type": "human"},
    }
    root = span(
        "WeatherBot",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": orjson.dumps({"messages": [human]}).decode(),
        },
    )
    node = span(
        "model", {"openinference.span.kind": "CHAIN", "metadata": meta}, parent=root.span_id
    )
    generation = {
        "generations": [
            [
                {
                    "message": {
                        "lc": 1,
                        "kwargs": {
                            "content": [
                                {
                                    "type": "reasoning",
                                    "summary": [{"type": "summary_text", "text": "17 is odd"}],
                                },
                                {"type": "text", "text": "Yes."},
                            ]
                        },
                    }
                }
            ]
        ]
    }
    llm = span(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "metadata": meta,
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Is 17 prime?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.1.message_content.type": "text",
            "llm.output_messages.0.message.contents.1.message_content.text": "Yes.",
            "output.value": orjson.dumps(generation).decode(),
        },
        parent=node.span_id,
    )
    runs = extract_runs(trace(root, node, llm))
    (agent,) = only(runs, "agent")
    assert (agent.span_id, agent.agent_name) == (root.span_id, "WeatherBot")
    assert user_text(agent) == ["Is 17 prime?"]
    assert reasoning(agent) == ["17 is odd"] and final_answer(agent) == "Yes."
    assert any("contents.N: index 0 missing" in w for w in agent.warnings)


def test_unnamed_langgraph_root_is_the_agent() -> None:
    root = span("LangGraph", {"openinference.span.kind": "CHAIN"})
    llm = span(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "metadata": '{"langgraph_node": "agent", "langgraph_step": 1}',
        },
        parent=root.span_id,
    )
    (agent,) = only(extract_runs(trace(root, llm)), "agent")
    assert agent.span_id == root.span_id and agent.agent_name == "LangGraph"


def test_openai_agents_handoff() -> None:
    """openai-agents: workflow AGENT → per-agent AGENT spans; a handoff is a TOOL span, and the
    receiving agent's first call repeats the triage conversation, which is history to it."""
    workflow = span(
        "Agent workflow", {"openinference.span.kind": "AGENT", "input.value": WEATHER_USER}
    )
    triage = span(
        "Triage",
        {"openinference.span.kind": "AGENT", "agent.name": "Triage"},
        parent=workflow.span_id,
    )
    triage_llm = span(
        "response",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": WEATHER_USER,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_h",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "transfer_to_weatherbot",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
            "llm.token_count.prompt": 10,
        },
        parent=triage.span_id,
    )
    handoff = span(
        "handoff to WeatherBot",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "transfer_to_weatherbot",
            "input.value": "Triage",
            "output.value": "WeatherBot",
        },
        parent=triage.span_id,
    )
    weather = span(
        "WeatherBot",
        {
            "openinference.span.kind": "AGENT",
            "graph.node.id": "WeatherBot",
            "graph.node.parent_id": "Triage",
        },
        parent=workflow.span_id,
    )
    weather_llm = span(
        "response",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": WEATHER_SYSTEM,
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": WEATHER_USER,
            "llm.input_messages.2.message.role": "assistant",
            "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_h",
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "transfer_to_weatherbot",
            "llm.input_messages.3.message.role": "tool",
            "llm.input_messages.3.message.tool_call_id": "call_h",
            "llm.input_messages.3.message.content": '{"assistant": "WeatherBot"}',
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Sunny.",
            "llm.token_count.prompt": 20,
        },
        parent=weather.span_id,
    )
    runs = extract_runs(trace(workflow, triage, triage_llm, handoff, weather, weather_llm))
    top, first, second = only(runs, "agent")
    assert (top.agent_name, first.agent_name, second.agent_name) == (
        "Agent workflow",
        "Triage",
        "WeatherBot",
    )
    assert top.usage.input_tokens == 30 and first.usage.input_tokens == 10
    (call,) = tool_calls(first)
    assert (call.tool_name, call.state, call.result) == (
        "transfer_to_weatherbot",
        "result",
        "WeatherBot",
    )
    assert user_text(second) == [WEATHER_USER]
    (handoff,) = second.input.remembered_messages  # the handoff, its result on its call
    (call,) = handoff.content.tool_invocations or []
    assert (call.tool_name, call.state, call.result) == (
        "transfer_to_weatherbot",
        "result",
        {"assistant": "WeatherBot"},
    )
    assert system_text(second) == [WEATHER_SYSTEM] and final_answer(second) == "Sunny."
    # The workflow agent only delegates: its trajectory is its agents, its answer the last one's.
    assert user_text(top) == [WEATHER_USER]
    assert [(c.tool_name, c.args, c.state) for c in tool_calls(top)] == [
        ("Triage", WEATHER_USER, "call"),
        ("WeatherBot", WEATHER_USER, "result"),
    ]
    assert final_answer(top) == "Sunny."
    assert top.span_ids[-2:] == [triage.span_id, weather.span_id]
