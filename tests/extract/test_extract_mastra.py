"""Mastra: 1.x AI tracing captures (``@mastra/otel-exporter``) and 0.x legacy telemetry."""

from __future__ import annotations

import orjson
import pytest

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
    parts,
    reasoning,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.extract import SpanInfo, extract_runs, primary_runs, read_spans
from tracescore.ingest.files import load_traces

LIBRARY = "mastra"
CONVENTION = "mastra"
EXPORTER = "@mastra/otel-exporter"


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


@pytest.mark.parametrize("scenario", ["tool_call", "tool_call_http_json", "tool_call_stream"])
def test_agent_with_tool_call_is_one_run(scenario: str) -> None:
    runs = capture_runs(LIBRARY, scenario)
    (agent,) = only(runs, "agent")
    assert primary_runs(runs) == [agent]
    assert agent.convention == CONVENTION
    assert (agent.agent_name, agent.model) == ("WeatherBot", "gpt-4o-mini")
    assert agent.provider == "openai"  # ``openai.chat`` names the API flavour too
    assert system_text(agent) == [WEATHER_SYSTEM]
    assert user_text(agent) == [WEATHER_USER]
    (call,) = tool_calls(agent)
    assert call.tool_name == "get_weather" and call.tool_call_id.startswith("call_")
    assert (call.args, call.result, call.state) == ({"city": "Paris"}, WEATHER_RESULT, "result")
    # One text part, said once: streamed chunks and the step/generation copies are not added.
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    (text,) = parts(agent, "text")
    assert text.text.startswith(WEATHER_ANSWER) and text.text.count(WEATHER_ANSWER) == 1
    assert final_answer(agent) == text.text
    # Usage sits on the two chat spans only (125+209, 33+33).
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (334, 66)
    assert [t.name for t in agent.tools] == ["get_weather"]  # Mastra records names only
    # Every span of the tree belongs to the one run (chunks and steps included).
    assert set(agent.span_ids) == {s.span_id for s in read_spans_of(scenario)}
    # The only warning says the step input's tool messages were elided by Mastra itself.
    assert len(agent.warnings) == 1 and "elided by Mastra" in agent.warnings[0]


def read_spans_of(scenario: str) -> list[SpanInfo]:
    (loaded,) = load_traces([CAPTURES / LIBRARY / scenario])
    return read_spans(loaded)


def test_chat_spans_get_their_step_input_and_tool_calls() -> None:
    runs = capture_runs(LIBRARY, "tool_call")
    first, second = only(runs, "llm")
    assert system_text(first) == [WEATHER_SYSTEM] and user_text(first) == [WEATHER_USER]
    (call,) = tool_calls(first)  # the chat span's own output shows no tool call
    assert (call.tool_name, call.args, call.state) == ("get_weather", {"city": "Paris"}, "call")
    assert (first.usage.input_tokens, first.usage.output_tokens) == (125, 33)
    # Mastra elides tool messages in later steps' input to markers: dropped, never read as text
    # the model wrote or as the tool's result (the tool span has it).
    assert user_text(second) == [WEATHER_USER] and parts(second, "tool-invocation") == []
    (agent,) = only(runs, "agent")
    assert any("2 tool message(s) elided by Mastra; dropped" in w for w in agent.warnings)
    assert final_answer(second).startswith(WEATHER_ANSWER)
    (tool,) = only(runs, "tool")
    assert tool_calls(tool)[0].result == WEATHER_RESULT and tool.agent_name == "WeatherBot"


def test_kinds_chunks_and_steps_stay_out_of_the_runs() -> None:
    kinds = {(i.name.split(" ")[0], i.kind) for i in read_spans_of("tool_call_stream")}
    assert kinds == {
        ("invoke_agent", "agent"),
        ("model_generation", "other"),
        ("agent_step", "other"),
        ("chat", "llm"),
        ("model_chunk", "other"),
        ("execute_tool", "tool"),
    }


def test_plain_chat() -> None:
    runs = capture_runs(LIBRARY, "plain_chat")
    (agent,) = only(runs, "agent")
    assert agent.agent_name == "Greeter"
    assert system_text(agent) == [CHAT_SYSTEM] and user_text(agent) == [CHAT_USER]
    assert final_answer(agent) == CHAT_ANSWER
    assert [p.type for p in agent.output[0].content.parts] == ["text"]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (36, 17)
    assert agent.warnings == []


def test_reasoning_from_the_generation_span() -> None:
    """Mastra records reasoning only on ``model_generation`` (and in an unmarked chunk)."""
    runs = capture_runs(LIBRARY, "reasoning")
    (agent,) = only(runs, "agent")
    assert (agent.agent_name, agent.model) == ("Thinker", "o4-mini")
    assert user_text(agent) == [REASONING_USER]
    assert reasoning(agent) == [REASONING_TEXT]
    assert [p.type for p in agent.output[0].content.parts] == ["reasoning", "text"]
    assert final_answer(agent).startswith(REASONING_ANSWER)
    assert REASONING_TEXT not in final_answer(agent)  # the reasoning chunk is not answer text
    assert (agent.usage.output_tokens, agent.usage.reasoning_tokens) == (138, 32)
    (llm,) = only(runs, "llm")
    assert reasoning(llm) == [REASONING_TEXT]


# --- hand-made edge cases -----------------------------------------------------------------------


def _mastra_tree(
    tool_status: int = 0, agent_output: str | None = None, step_input: str | None = None
) -> list:
    agent = span(
        "invoke_agent Helper",
        {
            "mastra.span.type": "agent_run",
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Helper",
            "gen_ai.system_instructions": "[IMPORTANT] Be brief.",
            "mastra.agent_run.input": _json([{"role": "user", "content": "Look up x."}]),
            **({"mastra.agent_run.output": agent_output} if agent_output is not None else {}),
        },
        scope=EXPORTER,
    )
    generation = span(
        "model_generation m",
        {"mastra.span.type": "model_generation"},
        parent=agent.span_id,
        scope=EXPORTER,
    )
    step = span(
        "agent_step Helper",
        {
            "mastra.span.type": "model_step",
            "mastra.model_step.input": step_input
            or _json(
                [
                    {"role": "system", "content": "[IMPORTANT] Be brief."},
                    {"role": "user", "content": "Look up x."},
                ]
            ),
            "mastra.model_step.output": _json(
                {
                    "text": "",
                    "toolCalls": [{"toolCallId": "t1", "toolName": "lookup", "args": {"q": "x"}}],
                }
            ),
        },
        parent=generation.span_id,
        scope=EXPORTER,
    )
    chat = span(
        "chat m",
        {
            "mastra.span.type": "model_inference",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 5,
            "gen_ai.usage.output_tokens": 2,
            "gen_ai.output.messages": _json(
                [{"role": "assistant", "parts": [{"type": "text", "content": ""}]}]
            ),
        },
        parent=step.span_id,
        scope=EXPORTER,
    )
    tool = span(
        "execute_tool lookup",
        {
            "mastra.span.type": "tool_call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "t1",
            "gen_ai.tool.call.arguments": '{"q":"x"}',
        },
        parent=step.span_id,
        scope=EXPORTER,
        status=tool_status,
        status_message="lookup failed: no index" if tool_status == 2 else "",
    )
    step2 = span(
        "agent_step Helper",
        {"mastra.span.type": "model_step"},
        parent=generation.span_id,
        scope=EXPORTER,
    )
    chat2 = span(
        "chat m",
        {
            "mastra.span.type": "model_inference",
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 9,
            "gen_ai.usage.output_tokens": 3,
            "gen_ai.output.messages": _json(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "Sorry, the lookup failed."}],
                    }
                ]
            ),
        },
        parent=step2.span_id,
        scope=EXPORTER,
    )
    return [agent, generation, step, chat, tool, step2, chat2]


def test_tool_error_and_unserializable_agent_output() -> None:
    runs = extract_runs(trace(*_mastra_tree(tool_status=2, agent_output="[Not Serializable]")))
    (agent,) = only(runs, "agent")
    assert system_text(agent) == ["[IMPORTANT] Be brief."]  # a plain string, not JSON
    assert user_text(agent) == ["Look up x."]
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.args, call.state) == ("t1", {"q": "x"}, "output-error")
    assert call.is_error and call.error_text == "lookup failed: no index"
    assert final_answer(agent) == "Sorry, the lookup failed."
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (14, 5)
    (warning,) = agent.warnings
    assert "mastra.agent_run.output: Mastra recorded '[Not Serializable]'; skipped" in warning


def test_truncated_step_input_is_text_with_a_warning() -> None:
    cut = '[{"role":"system","content":"Be brief."},{"role":"user","content":"Look u'
    runs = extract_runs(trace(*_mastra_tree(step_input=cut)))
    (agent,) = only(runs, "agent")
    first_llm = only(runs, "llm")[0]
    assert user_text(first_llm) == [cut]
    assert user_text(agent) == [cut]  # the first step's input is what the model was sent
    assert any("mastra.model_step.input: invalid JSON" in w for w in agent.warnings)
    assert tool_calls(agent)[0].state == "call"  # no result recorded, not an error


def _legacy_trace(result: str) -> list:
    """Mastra 0.x ``telemetry`` spans as SPAN_FORMATS §6b describes them (no capture in-tree)."""
    base = {"componentName": "WeatherBot", "runId": "run-1"}
    outer = span(
        "agent.generate",
        {
            **base,
            "agent.generate.argument.0": _json(WEATHER_USER),
            "agent.generate.argument.1": _json({"maxSteps": 5}),
            "agent.generate.result": result,
        },
        scope="mastra-demo",
    )
    noise = span(
        "mastra.generateId",
        {**base, "mastra.generateId.result": '"abc"'},
        parent=outer.span_id,
        scope="mastra-demo",
    )
    delegate = span(
        "agent.generateVNext",
        {
            **base,
            "agent.generateVNext.argument.0": _json(WEATHER_USER),
            "agent.generateVNext.result": "[Not Serializable]",
        },
        parent=outer.span_id,
        scope="mastra-demo",
    )
    loop = span(
        "mastra.stream",
        {
            **base,
            "mastra.operationId": "mastra.stream",
            "aisdk.model.id": "gpt-4o-mini",
            "aisdk.model.provider": "openai.chat",
            "stream.prompt.messages": _json(
                [{"role": "user", "content": [{"type": "text", "text": WEATHER_USER}]}]
            ),
            "stream.response.toolCalls": _json(
                [{"toolCallId": "call_1", "toolName": "get_weather", "args": {"city": "Paris"}}]
            ),
            "stream.response.text": WEATHER_ANSWER + ".",
            "stream.usage.inputTokens": 334,
            "stream.usage.outputTokens": 66,
            "stream.usage.totalTokens": 400,
        },
        parent=delegate.span_id,
        scope="mastra-demo",
    )
    provider_call = span(
        "mastra.stream.aisdk.doStream",
        {
            **base,
            "mastra.operationId": "mastra.stream.aisdk.doStream",
            "stream.prompt.tools": [
                _json(
                    {
                        "type": "function",
                        "name": "get_weather",
                        "description": "Get the current weather for a city.",
                        "inputSchema": {"type": "object"},
                    }
                )
            ],
        },
        parent=delegate.span_id,
        scope="mastra-demo",
    )
    tool = span(
        "mastra.stream.toolCall",
        {
            **base,
            "mastra.operationId": "mastra.stream.toolCall",
            "stream.toolCall.toolName": "get_weather",
            "stream.toolCall.toolCallId": "call_1",
            "stream.toolCall.args": '{"city":"Paris"}',
            "stream.toolCall.result": _json(WEATHER_RESULT),
        },
        parent=loop.span_id,
        scope="mastra-demo",
    )
    return [outer, noise, delegate, loop, provider_call, tool]


def test_legacy_telemetry_agent_call() -> None:
    result = _json({"text": WEATHER_ANSWER + ".", "usage": {"totalTokens": 400}})
    runs = extract_runs(trace(*_legacy_trace(result)))
    (agent,) = only(runs, "agent")  # generate → generateVNext delegation is one run
    assert agent.convention == CONVENTION and agent.agent_name == "WeatherBot"
    assert (agent.model, agent.provider) == ("gpt-4o-mini", "openai")
    assert system_text(agent) == []  # 0.x never records the system prompt
    assert user_text(agent) == [WEATHER_USER]
    (call,) = tool_calls(agent)
    assert (call.tool_call_id, call.args, call.result) == (
        "call_1",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    assert final_answer(agent) == WEATHER_ANSWER + "."
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (334, 66)
    assert [(t.name, t.description) for t in agent.tools] == [
        ("get_weather", "Get the current weather for a city.")
    ]
    assert len(agent.span_ids) == 6
    (warning,) = agent.warnings  # the delegate's unserializable result, named
    assert "agent.generateVNext.result: Mastra recorded '[Not Serializable]'" in warning


def test_legacy_unserializable_and_truncated_results() -> None:
    for result, expected in (
        ("[Not Serializable]", "Mastra recorded '[Not Serializable]'"),
        ('{"text":"It is sunny in Par', "invalid JSON"),
    ):
        runs = extract_runs(trace(*_legacy_trace(result)))
        (agent,) = only(runs, "agent")
        assert final_answer(agent) == WEATHER_ANSWER + "."  # from the model call instead
        assert any(f"agent.generate.result: {expected}" in w for w in agent.warnings)


def test_generation_without_chat_spans_is_the_llm_call() -> None:
    """Mastra AI tracing before ``model_step``/``model_inference``: the generation is the call."""
    agent = span(
        "invoke_agent Helper",
        {
            "mastra.span.type": "agent_run",
            "gen_ai.agent.name": "Helper",
            "mastra.agent_run.input": "Look up x.",
        },
        scope=EXPORTER,
    )
    generation = span(
        "llm_generation m",
        {
            "mastra.span.type": "llm_generation",
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 11,
            "gen_ai.usage.output_tokens": 7,
            "mastra.llm_generation.input": _json(
                {
                    "messages": [
                        {"role": "system", "content": "Be brief."},
                        {"role": "user", "content": "Look up x."},
                    ]
                }
            ),
            "mastra.llm_generation.output": _json(
                {
                    "text": "x is 42.",
                    "toolCalls": [{"toolCallId": "t1", "toolName": "lookup", "args": {"q": "x"}}],
                }
            ),
        },
        parent=agent.span_id,
        scope=EXPORTER,
    )
    tool = span(
        "tool_call lookup",
        {
            "mastra.span.type": "tool_call",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "t1",
            "gen_ai.tool.call.result": '{"x":42}',
        },
        parent=generation.span_id,
        scope=EXPORTER,
    )
    runs = extract_runs(trace(agent, generation, tool))
    (run,) = only(runs, "agent")
    assert system_text(run) == ["Be brief."] and user_text(run) == ["Look up x."]
    (call,) = tool_calls(run)
    assert (call.tool_call_id, call.args, call.result) == ("t1", {"q": "x"}, {"x": 42})
    assert final_answer(run) == "x is 42." and run.model == "m"
    assert (run.usage.input_tokens, run.usage.output_tokens) == (11, 7)
    assert len(only(runs, "llm")) == 1


def test_spans_with_nothing_but_their_type() -> None:
    agent = span("invoke_agent", {"mastra.span.type": "agent_run"}, scope=EXPORTER)
    generation = span(
        "model_generation",
        {"mastra.span.type": "model_generation"},
        parent=agent.span_id,
        scope=EXPORTER,
    )
    step = span(
        "agent_step", {"mastra.span.type": "model_step"}, parent=generation.span_id, scope=EXPORTER
    )
    chat = span(
        "chat", {"mastra.span.type": "model_inference"}, parent=step.span_id, scope=EXPORTER
    )
    chunk = span(
        "model_chunk", {"mastra.span.type": "model_chunk"}, parent=chat.span_id, scope=EXPORTER
    )
    tool = span(
        "execute_tool", {"mastra.span.type": "tool_call"}, parent=step.span_id, scope=EXPORTER
    )
    runs = extract_runs(trace(agent, generation, step, chat, chunk, tool))
    assert [r.kind for r in runs] == ["agent", "llm", "tool"]
    (run,) = only(runs, "agent")
    assert user_text(run) == [] and final_answer(run) == "" and run.warnings == []
    assert tool_calls(run)[0].state == "call"  # a tool that ran, with nothing recorded
