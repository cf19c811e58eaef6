"""Regressions found by running the real libraries live (issue 19), on their captured payloads.

Each capture in ``tests/fixtures/captures`` named here was made for the issue with the real
library against a local fake OpenAI server (``captures/_make``); each test failed on the
extraction as it was before the fix it guards.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.support.extract_support import (
    LONDON_RESULT,
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    capture_runs,
    final_answer,
    only,
    system_text,
    tool_calls,
    user_text,
)
from tests.support.paths import CAPTURES
from tracescore.cli import app
from tracescore.extract import AgentRun, extract_runs
from tracescore.extract.model import Message, ToolInvocation
from tracescore.ingest.files import load_traces


def test_langchain_tool_results_are_what_the_tool_returned_not_the_tool_message() -> None:
    """OpenInference records LangChain's ``ToolMessage`` (``{"type": "tool", "data": …}``) as
    the TOOL span's output; judges must read the content, and ``status: error`` is a failure."""
    runs = capture_runs("openinference-langchain", "tool_error_multistep")
    (agent,) = only(runs, "agent")
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.state, atlantis.is_error, atlantis.result) == (
        "output-error",
        True,
        "Unknown city: Atlantis",
    )
    assert atlantis.error_text == "Unknown city: Atlantis"
    assert (paris.state, paris.result) == ("result", WEATHER_RESULT)
    assert (london.state, london.result) == ("result", LONDON_RESULT)
    assert [c.tool_call_id for c in (atlantis, paris, london)] == [
        "call_010",
        "call_020",
        "call_030",
    ]
    # Context is the tool results (a failure grounds nothing), never the envelope.
    assert [doc.content for doc in agent.context] == [
        '{"city":"Paris","forecast":"sunny","temperature_c":21}',
        '{"city":"London","forecast":"rainy","temperature_c":14}',
    ]
    tools = only(runs, "tool")
    assert [t.output[0].content.tool_invocations[0].result for t in tools] == [
        "Unknown city: Atlantis",
        WEATHER_RESULT,
        LONDON_RESULT,
    ]
    assert [t.output[0].content.tool_invocations[0].tool_call_id for t in tools] == [
        "call_010",
        "call_020",
        "call_030",
    ]
    assert final_answer(agent).startswith("I could not find Atlantis.")
    # The last LLM call was sent the three results; the flattened tool message drops LangChain's
    # status, the tool span has it: the failed call is a failure there too, and no grounding.
    last = only(runs, "llm")[-1]
    assert [(c.tool_call_id, c.state) for c in tool_calls(last)] == [
        ("call_010", "output-error"),
        ("call_020", "result"),
        ("call_030", "result"),
    ]
    assert [doc.content for doc in last.context] == [doc.content for doc in agent.context]


def test_openai_agents_workflow_wrapper_is_no_primary_run() -> None:
    """``Agent workflow`` (AGENT, no model) only runs the real agent: it stays in the tree but
    is not scored as a second agent whose only "tool call" is the agent itself."""
    runs = capture_runs("openinference-openai-agents", "tool_call")
    wrapper, agent = only(runs, "agent")
    assert (wrapper.agent_name, wrapper.primary) == ("Agent workflow", False)
    assert [r.agent_name for r in runs if r.primary] == ["WeatherBot"]
    (call,) = tool_calls(agent)
    assert (call.tool_name, call.args, call.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    handoff = capture_runs("openinference-openai-agents", "handoff_parallel_tools")
    assert [(r.agent_name, r.primary) for r in only(handoff, "agent")] == [
        ("Agent workflow", False),
        ("Triage", True),
        ("WeatherBot", True),
    ]


def test_ci_gate_on_the_expected_tool_passes_for_openai_agents() -> None:
    """The gate of the issue: every call was right, so tool-call accuracy is 1, not 0.33."""
    result = CliRunner().invoke(
        app,
        [
            "score",
            str(CAPTURES / "openinference-openai-agents" / "tool_call"),
            "--format",
            "json",
            "--scorer",
            "tool-call-accuracy-code:expected_tool=get_weather",
        ],
    )
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)
    assert (summary["n"], summary["mean"]) == (1, 1.0)


PARIS_GROUNDING = '{"city":"Paris","forecast":"sunny","temperature_c":21}'


def _mcp_weather_read_as_returned(runs: list[AgentRun]) -> tuple[ToolInvocation, AgentRun]:
    """The MCP get_weather scenario: the primary agent's call, the tool run and the second LLM
    call's context hold the weather itself; returns the call and that second LLM run."""
    (agent,) = only(runs, "agent", primary=True)
    (call,) = tool_calls(agent)
    assert (call.tool_name, call.state, call.result) == ("get_weather", "result", WEATHER_RESULT)
    assert [doc.content for doc in agent.context] == [PARIS_GROUNDING]
    (tool,) = only(runs, "tool")
    assert tool.output[0].content.tool_invocations[0].result == WEATHER_RESULT
    _, second = only(runs, "llm")
    assert [doc.content for doc in second.context] == [PARIS_GROUNDING]
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    return call, second


def test_openai_agents_mcp_tool_result_is_what_the_tool_returned() -> None:
    """The OpenAI Agents SDK records an MCP tool's output as a text block
    (``{"type": "text", "text": …}``) on the TOOL span, and sends it back to the model as a
    ``tool`` message whose content is a list of such blocks (sweep: envelopes, on a capture of
    an MCP server over stdio): judges and context read the tool's JSON, and the next LLM call
    was sent that result, not a line of text."""
    runs = capture_runs("openinference-openai-agents", "mcp_tool")
    assert [r.agent_name for r in runs if r.primary] == ["WeatherBot"]
    call, second = _mcp_weather_read_as_returned(runs)
    (sent,) = tool_calls(second)
    assert (sent.tool_call_id, sent.result) == (call.tool_call_id, WEATHER_RESULT)


def test_vercel_mcp_tool_result_is_what_the_tool_returned() -> None:
    """The AI SDK's MCP tools return the MCP ``CallToolResult`` (``{content: [blocks],
    isError}``): that is ``ai.toolCall.result``, and the next step was sent it as a ``content``
    output of the same blocks (sweep: envelopes, on captures with @ai-sdk/mcp over stdio)."""
    _mcp_weather_read_as_returned(capture_runs("vercel-ai-sdk-v6", "mcp_tool"))
    # A call the MCP server failed (isError: true) is a failure, and grounds nothing.
    failing = capture_runs("vercel-ai-sdk-v6", "mcp_tool_error")
    (agent,) = only(failing, "agent")
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.state, atlantis.is_error, atlantis.error_text) == (
        "output-error",
        True,
        "Error executing tool get_weather",
    )
    assert [(c.state, c.result) for c in (paris, london)] == [
        ("result", WEATHER_RESULT),
        ("result", LONDON_RESULT),
    ]
    assert [doc.content for doc in agent.context] == [
        PARIS_GROUNDING,
        '{"city":"London","forecast":"rainy","temperature_c":14}',
    ]


def _second_call(library: str) -> AgentRun:
    first, second = [r for r in capture_runs(library, "tool_call") if r.kind == "llm"]
    assert first.primary and second.primary  # no agent span: each call stands for the agent
    return second


def test_raw_client_second_call_reads_like_the_agent_turn() -> None:
    """Without an agent span the second call was sent [user, assistant(call), tool(result)]:
    its input is the user's turn only, and the tool step opens its trajectory, joined."""
    for library in (
        "openinference-openai",
        "otel-genai-openai-v2-latest",
        "otel-genai-openai-v2-legacy",
    ):
        second = _second_call(library)
        assert user_text(second) == [WEATHER_USER], library
        assert second.input.remembered_messages == [], library
        assert system_text(second) == [WEATHER_SYSTEM], library
        (call,) = tool_calls(second)
        assert (call.tool_name, call.args, call.state, call.result) == (
            "get_weather",
            {"city": "Paris"},
            "result",
            WEATHER_RESULT,
        ), library
        assert [p.type for p in second.output[0].content.parts] == ["tool-invocation", "text"]
        assert final_answer(second).startswith(WEATHER_ANSWER), library


def _shape(messages: list[Message]) -> list[tuple]:
    return [(m.role, m.content.content, m.content.tool_invocations) for m in messages]


def test_history_keeps_tool_results_on_their_calls() -> None:
    """A second turn's history (Pydantic AI sends results with role ``user``) is joined the way
    Mastra keeps memory: no result-only message that reads as something the user said."""
    for library in ("pydantic-ai", "vercel-ai-sdk-v6"):
        runs = capture_runs(library, "stream_history")
        (agent,) = only(runs, "agent")
        assert user_text(agent) == ["Is it warmer than yesterday?"], library
        history = agent.input.remembered_messages
        assert history[0].content.content == WEATHER_USER
        assert [m.role for m in history[1:]] == ["assistant"] * (len(history) - 1), library
        for run in only(runs, "llm"):
            assert _shape(run.input.remembered_messages) == _shape(history), library
    pydantic_history = only(capture_runs("pydantic-ai", "stream_history"), "agent")[0]
    (earlier,) = [
        c
        for m in pydantic_history.input.remembered_messages
        for c in m.content.tool_invocations or []
    ]
    assert (earlier.tool_name, earlier.state, earlier.result) == (
        "get_weather",
        "result",
        WEATHER_RESULT,
    )


def test_mastra_legacy_two_step_loop_is_two_llm_calls_in_order() -> None:
    """Mastra 0.x ``telemetry``: ``mastra.stream`` records one step only. Each traced loop step
    (``….step.llm-execution``) is the LLM call, with its own usage and the system prompt its
    request body held; the agent's usage is their sum, as ``agent.stream.result.usage`` says."""
    runs = capture_runs("mastra-legacy-telemetry", "tool_call_stream")
    (agent,) = only(runs, "agent")
    assert agent.primary and agent.agent_name == "WeatherBot" and agent.model == "gpt-4o-mini"
    result_usage = json.loads(agent.attributes["agent.stream.result"])["usage"]
    assert (result_usage["inputTokens"], result_usage["outputTokens"]) == (258, 46)
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (258, 46)
    assert system_text(agent) == [WEATHER_SYSTEM] and user_text(agent) == [WEATHER_USER]
    assert [p.type for p in agent.output[0].content.parts] == ["tool-invocation", "text"]
    (call,) = tool_calls(agent)
    assert (call.tool_name, call.args, call.result) == (
        "get_weather",
        {"city": "Paris"},
        WEATHER_RESULT,
    )
    assert final_answer(agent).startswith(WEATHER_ANSWER)
    first, second = only(runs, "llm")
    assert [(r.usage.input_tokens, r.usage.output_tokens) for r in (first, second)] == [
        (116, 23),
        (142, 23),
    ]
    assert system_text(first) == system_text(second) == [WEATHER_SYSTEM]
    assert [t.name for t in first.tools] == ["get_weather"]
    assert [(c.tool_name, c.state) for c in tool_calls(first)] == [("get_weather", "call")]
    # The second step was sent the call (cut to "[MaxDepth]" by Mastra) and its result.
    assert [(c.tool_name, c.args, c.state) for c in tool_calls(second)] == [
        ("get_weather", {"city": "Paris"}, "result")
    ]
    assert final_answer(second).startswith(WEATHER_ANSWER)


def test_openai_agents_handoff_answers_the_call_that_made_it() -> None:
    """A handoff TOOL span (``handoff to WeatherBot``, no ``tool.name``) is the result of the
    LLM's ``transfer_to_weatherbot`` call, not a second call nobody made; WeatherBot then
    calls get_weather for two cities in parallel, each joined to its own result."""
    runs = capture_runs("openinference-openai-agents", "handoff_parallel_tools")
    _, triage, weather = only(runs, "agent")
    (handoff,) = tool_calls(triage)
    assert (
        handoff.tool_name,
        handoff.tool_call_id,
        handoff.args,
        handoff.state,
        handoff.result,
    ) == ("transfer_to_weatherbot", "call_070", {}, "result", "WeatherBot")
    paris, london = tool_calls(weather)
    assert [(c.tool_call_id, c.args, c.result) for c in (paris, london)] == [
        ("call_080", {"city": "Paris"}, WEATHER_RESULT),
        ("call_081", {"city": "London"}, LONDON_RESULT),
    ]
    assert user_text(weather) == ["What's the weather in Paris and London today?"]
    assert (weather.usage.input_tokens, weather.usage.output_tokens) == (323, 51)
    # WeatherBot's own LLM calls were sent Triage's handoff too: history to them, as to their
    # agent, not a step of their own.
    for llm in only(runs, "llm")[1:]:
        (earlier,) = llm.input.remembered_messages
        assert [c.tool_name for c in earlier.content.tool_invocations or []] == [
            "transfer_to_weatherbot"
        ]
        assert {c.tool_name for c in tool_calls(llm)} == {"get_weather"}


def test_mastra_legacy_loop_without_traced_steps_counts_every_step() -> None:
    """The same real payload without its ``….step.llm-execution`` spans (as from a 0.x release
    that does not trace loop steps; not checked against one): ``mastra.stream`` holds the last
    step's usage, so the agent result's total (258/46) stands for the loop."""
    (loaded,) = [
        t
        for t in load_traces([CAPTURES / "mastra-legacy-telemetry" / "tool_call_stream"])
        if len(t.spans) > 2
    ]
    loaded.spans = [s for s in loaded.spans if not s.name.endswith(".step.llm-execution")]
    runs = extract_runs(loaded)
    (agent,) = only(runs, "agent")
    (loop,) = only(runs, "llm")
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (258, 46)
    assert (loop.usage.input_tokens, loop.usage.output_tokens) == (258, 46)
    assert any("usage of the last step only" in w for w in loop.warnings)


def test_mastra_legacy_thread_title_is_no_step_of_the_agent() -> None:
    """Mastra 0.x memory titles a new thread with a model loop of its own, traced under the
    agent span after the answer (sweep, found on the issue-23 capture): read as steps, the
    title was the agent's final answer and its tokens doubled the turn's usage."""
    (first,) = [
        t
        for t in load_traces([CAPTURES / "mastra-legacy-telemetry" / "conversation"])
        if any(s.name == "agent.genTitle" for s in t.spans)
    ]
    (title_step,) = [
        s
        for s in first.spans
        if s.name.endswith(".step.llm-execution") and "generate a short title" in str(s.attributes)
    ]
    key = f"{title_step.name}.result"
    # The fake server answered the title call with the turn's answer; a real model gives a title.
    title_step.attributes[key] = str(title_step.attributes[key]).replace(
        "Nice to meet you, Ada! How can I help you today?", "Ada from Lyon says hello"
    )
    runs = extract_runs(first)
    (agent,) = only(runs, "agent")
    stream_result = json.loads(
        next(s for s in first.spans if s.name == "agent.stream").attributes["agent.stream.result"]
    )
    assert stream_result["usage"]["inputTokens"] == 116
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (116, 23)
    assert final_answer(agent) == "Nice to meet you, Ada! How can I help you today?"
    assert [p.type for p in agent.output[0].content.parts] == ["text"]
    (llm,) = only(runs, "llm")
    assert system_text(llm) == ["You are Concierge, a helpful city guide."]
    assert any("thread title" in w for w in agent.warnings)
