"""Vercel AI SDK: ai@6 captures (``ai.*`` spans), older ``ai.*`` keys, and ai@7's GenAI form."""

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
from tracescore.extract import extract_runs, primary_runs, read_spans

LIBRARY = "vercel-ai-sdk-v6"
CONVENTION = "vercel-ai-sdk"
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


def _assert_weather_run(runs: list, function_id: str) -> None:
    (agent,) = only(runs, "agent")  # ONE run for the whole tool loop, no agent span needed
    assert primary_runs(runs) == [agent]
    assert agent.convention == CONVENTION
    assert agent.agent_name == function_id
    assert (agent.model, agent.provider) == ("gpt-4o-mini", "openai")
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    (call,) = tool_calls(agent)
    assert call.tool_name == "get_weather" and call.tool_call_id.startswith("call_")
    assert call.args == {"city": "Paris"}  # was a JSON string inside JSON
    assert call.result == WEATHER_RESULT and call.state == "result"
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    # The two doGenerate calls only (125+209, 33+33), not ai.generateText's own sum on top.
    usage = agent.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (334, 66, 400)
    (tool,) = agent.tools
    assert tool.name == "get_weather" and tool.parameters["required"] == ["city"]
    assert len(agent.span_ids) == 4 and agent.warnings == []
    assert [r.agent_name for r in only(runs, "llm")] == [function_id, function_id]
    (tool_run,) = only(runs, "tool")
    assert tool_calls(tool_run)[0].result == WEATHER_RESULT


def test_generate_text_tool_loop() -> None:
    _assert_weather_run(capture_runs(LIBRARY, "tool_call"), "weather-agent")


def test_tool_loop_agent_is_one_run() -> None:
    _assert_weather_run(capture_runs(LIBRARY, "agent"), "weather-tool-loop-agent")


def test_second_llm_call_sees_the_tool_result() -> None:
    runs = capture_runs(LIBRARY, "tool_call")
    first, second = only(runs, "llm")
    assert tool_calls(first)[0].state == "call"
    assert final_answer(second).startswith(WEATHER_ANSWER)
    assert user_text(second) == [WEATHER_USER]  # the call and its result are no user turn:
    (call,) = tool_calls(second)  # they open the trajectory, joined
    assert (call.tool_name, call.state, call.result) == ("get_weather", "result", WEATHER_RESULT)
    assert orjson.loads(second.context[0].content) == WEATHER_RESULT
    assert (second.usage.input_tokens, second.usage.output_tokens) == (209, 33)


def test_plain_chat_generate_and_stream() -> None:
    for scenario, name in (("plain_chat", "greeter"), ("plain_chat_stream", "greeter-stream")):
        runs = capture_runs(LIBRARY, scenario)
        (agent,) = only(runs, "agent")
        assert agent.agent_name == name
        assert system_text(agent) == [CHAT_SYSTEM]
        assert user_text(agent) == [CHAT_USER]
        assert final_answer(agent) == CHAT_ANSWER
        assert [p.type for p in agent.output[0].content.parts] == ["text"]
        assert (agent.usage.input_tokens, agent.usage.output_tokens) == (36, 17)
        assert len(only(runs, "llm")) == 1


def test_reasoning() -> None:
    runs = capture_runs(LIBRARY, "reasoning")
    (agent,) = only(runs, "agent")
    assert (agent.agent_name, agent.model) == ("thinker", "o4-mini")
    assert user_text(agent) == [REASONING_USER]
    assert reasoning(agent) == [REASONING_TEXT]
    assert [p.type for p in agent.output[0].content.parts] == ["reasoning", "text"]
    assert final_answer(agent).startswith(REASONING_ANSWER)
    assert (agent.usage.output_tokens, agent.usage.reasoning_tokens) == (138, 32)


# --- other majors, hand-made from the SDK's documented keys --------------------------------------


def test_ai4_keys_and_error_tool() -> None:
    """ai@3/4 keys (``ai.result.*``, ``args``/``result``, ``promptTokens``); a tool that threw."""
    root = span(
        "ai.generateText",
        {
            "ai.operationId": "ai.generateText",
            "ai.telemetry.functionId": "legacy-agent",
            "ai.prompt": _json(
                {
                    "system": "Be brief.",
                    "messages": [{"role": "user", "content": "Weather in Oslo?"}],
                }
            ),
            "ai.result.text": "I could not get the weather for Oslo.",
        },
        scope="ai",
    )
    step1 = span(
        "ai.generateText.doGenerate",
        {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.model.id": "gpt-4o",
            "ai.model.provider": "openai.chat",
            "ai.prompt.messages": _json(
                [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
                ]
            ),
            "ai.result.toolCalls": _json(
                [
                    {
                        "toolCallType": "function",
                        "toolCallId": "c1",
                        "toolName": "get_weather",
                        "args": '{"city":"Oslo"}',
                    }
                ]
            ),
            "ai.usage.promptTokens": 50,
            "ai.usage.completionTokens": 10,
        },
        parent=root.span_id,
        scope="ai",
    )
    tool = span(
        "ai.toolCall",
        {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "get_weather",
            "ai.toolCall.id": "c1",
            "ai.toolCall.args": '{"city":"Oslo"}',
        },
        parent=root.span_id,
        scope="ai",
        status=2,
        status_message="weather service down",
    )
    step2 = span(
        "ai.generateText.doGenerate",
        {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.model.id": "gpt-4o",
            "ai.prompt.messages": _json(
                [
                    {"role": "user", "content": "Weather in Oslo?"},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool-call",
                                "toolCallId": "c1",
                                "toolName": "get_weather",
                                "args": {"city": "Oslo"},
                            }
                        ],
                    },
                    {
                        "role": "tool",
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": "c1",
                                "toolName": "get_weather",
                                "result": "error",
                                "isError": True,
                            }
                        ],
                    },
                ]
            ),
            "ai.result.text": "I could not get the weather for Oslo.",
            "ai.usage.promptTokens": 80,
            "ai.usage.completionTokens": 12,
        },
        parent=root.span_id,
        scope="ai",
    )
    runs = extract_runs(trace(root, step1, tool, step2))
    (agent,) = only(runs, "agent")
    assert agent.agent_name == "legacy-agent" and agent.model == "gpt-4o"
    assert system_text(agent) == ["Be brief."] and user_text(agent) == ["Weather in Oslo?"]
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.args, call.state) == ("c1", {"city": "Oslo"}, "output-error")
    assert call.is_error and call.error_text == "weather service down"
    assert final_answer(agent) == "I could not get the weather for Oslo."
    assert (agent.usage.input_tokens, agent.usage.output_tokens, agent.usage.total_tokens) == (
        130,
        22,
        152,
    )
    (tool_run,) = only(runs, "tool")
    assert tool_run.status == "error" and tool_run.error == "weather service down"


def test_ai7_legacy_class_input_output_keys() -> None:
    tool = span(
        "ai.toolCall",
        {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "lookup",
            "ai.toolCall.id": "t9",
            "ai.toolCall.input": '{"q":"x"}',
            "ai.toolCall.output": '{"type":"json","value":{"hits":3}}',
        },
        scope="ai",
    )
    (run,) = extract_runs(trace(tool))
    (call,) = tool_calls(run)
    assert (call.args, call.result, call.state) == ({"q": "x"}, {"hits": 3}, "result")


def test_ai7_genai_semconv_form() -> None:
    """``@ai-sdk/otel`` ``OpenTelemetry``: invoke_agent → step N → chat / execute_tool (§5b)."""
    system = _json([{"type": "text", "content": WEATHER_SYSTEM}])
    user = {"role": "user", "parts": [{"type": "text", "content": WEATHER_USER}]}
    call = {
        "type": "tool_call",
        "id": "call_7",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    response = {"type": "tool_call_response", "id": "call_7", "response": WEATHER_RESULT}
    answer = {"type": "text", "content": WEATHER_ANSWER + "."}
    thought = {"type": "reasoning", "content": "The user wants the weather: call the tool."}
    common = {
        "gen_ai.system_instructions": system,
        "gen_ai.provider.name": "openai.chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.tool.definitions": _json([WEATHER_TOOL]),
    }
    agent = span(
        "invoke_agent gpt-4o-mini",
        {
            **common,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather-agent",
            "gen_ai.input.messages": _json([user]),
            "gen_ai.output.messages": _json(
                [
                    {
                        "role": "assistant",
                        "parts": [thought, call, response, answer],
                        "finish_reason": "stop",
                    }
                ]
            ),
            "gen_ai.usage.input_tokens": 334,
            "gen_ai.usage.output_tokens": 66,
        },
        scope="gen_ai",
    )
    step1 = span(
        "step 1", {"gen_ai.operation.name": "agent_step"}, parent=agent.span_id, scope="gen_ai"
    )
    chat1 = span(
        "chat gpt-4o-mini",
        {
            **common,
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": _json([user]),
            "gen_ai.output.messages": _json(
                [{"role": "assistant", "parts": [thought, call], "finish_reason": "tool_call"}]
            ),
            "gen_ai.response.finish_reasons": ["tool-calls"],
            "gen_ai.usage.input_tokens": 125,
            "gen_ai.usage.output_tokens": 33,
        },
        parent=step1.span_id,
        scope="gen_ai",
    )
    tool = span(
        "execute_tool get_weather",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_7",
            "gen_ai.tool.call.arguments": '{"city":"Paris"}',
            "gen_ai.tool.call.result": _json(WEATHER_RESULT),
            "gen_ai.execute_tool.duration": 0.2,
        },
        parent=step1.span_id,
        scope="gen_ai",
    )
    step2 = span(
        "step 2", {"gen_ai.operation.name": "agent_step"}, parent=agent.span_id, scope="gen_ai"
    )
    chat2 = span(
        "chat gpt-4o-mini",
        {
            **common,
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": _json(
                [
                    user,
                    {"role": "assistant", "parts": [call]},
                    {"role": "tool", "parts": [response]},
                ]
            ),
            "gen_ai.output.messages": _json(
                [{"role": "assistant", "parts": [answer], "finish_reason": "stop"}]
            ),
            "gen_ai.usage.input_tokens": 209,
            "gen_ai.usage.output_tokens": 33,
        },
        parent=step2.span_id,
        scope="gen_ai",
    )
    spans = (agent, step1, chat1, tool, step2, chat2)
    assert {i.convention for i in read_spans(trace(*spans))} == {CONVENTION}
    assert [i.kind for i in read_spans(trace(*spans))] == [
        "agent",
        "other",
        "llm",
        "tool",
        "other",
        "llm",
    ]
    runs = extract_runs(trace(*spans))
    (run,) = only(runs, "agent")
    assert run.agent_name == "weather-agent" and run.provider == "openai"
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    assert [p.type for p in run.output[0].content.parts] == ["reasoning", "tool-invocation", "text"]
    (invocation,) = tool_calls(run)
    assert (invocation.args, invocation.result) == ({"city": "Paris"}, WEATHER_RESULT)
    assert final_answer(run) == WEATHER_ANSWER + "."
    assert (run.usage.input_tokens, run.usage.output_tokens) == (334, 66)  # chats only
    (definition,) = run.tools
    assert definition.parameters == WEATHER_TOOL["inputSchema"]  # ``inputSchema``, not parameters
    assert run.warnings == []


def test_truncated_and_missing_attributes_never_raise() -> None:
    root = span(
        "ai.streamText",
        {
            "ai.operationId": "ai.streamText",
            "ai.prompt": '{"system":"Be kind.","prompt":"Tell me ab',
        },
        scope="ai",
    )
    step = span(
        "ai.streamText.doStream",
        {
            "ai.operationId": "ai.streamText.doStream",
            "ai.prompt.messages": '[{"role":"user","content":[{"type":"text","text":"Tell',
            "ai.response.toolCalls": '[{"toolCallId":"c1","toolName":"x","input":"{\\"a',
            "ai.prompt.tools": ['{"type":"function","name":"x","inputSchema":{"type":'],
            "ai.response.text": "partial answer",
        },
        parent=root.span_id,
        scope="ai",
    )
    bare = span("ai.toolCall", {"ai.operationId": "ai.toolCall"}, parent=root.span_id, scope="ai")
    embed = span("ai.embed", {"ai.operationId": "ai.embed", "ai.value": "hello"}, scope="ai")
    runs = extract_runs(trace(root, step, bare, embed))
    (agent,) = only(runs, "agent")
    assert agent.agent_name == "ai.streamText"  # no functionId: named after the span
    assert user_text(agent) == ['[{"role":"user","content":[{"type":"text","text":"Tell']
    assert final_answer(agent) == "partial answer"
    text = "\n".join(agent.warnings)
    for key in (
        "ai.prompt: invalid JSON",
        "ai.prompt.messages: invalid JSON",
        "ai.response.toolCalls: invalid JSON",
        "ai.prompt.tools: invalid JSON",
        "ai.toolCall: no result recorded",
    ):
        assert text.count(key) == 1, key
    (tool_run,) = only(runs, "tool")
    assert tool_calls(tool_run)[0].state == "call"
    assert [i.kind for i in read_spans(trace(embed))] == ["other"]
