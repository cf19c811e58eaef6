"""Regressions found by running the real libraries live (issue 19), on their captured payloads.

Each capture in ``tests/fixtures/captures`` named here was made for the issue with the real
library against a local fake OpenAI server (``captures/_make``); each test failed on the
extraction as it was before the fix it guards.
"""

from __future__ import annotations

from tests.extract_support import (
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

LONDON_RESULT = {"city": "London", "forecast": "rainy", "temperature_c": 14}


def test_langchain_tool_results_are_what_the_tool_returned_not_the_tool_message() -> None:
    """OpenInference records LangChain's ``ToolMessage`` (``{"type": "tool", "data": …}``) as
    the TOOL span's output; judges must read the content, and ``status: error`` is a failure."""
    runs = capture_runs("openinference-langchain", "tool_error_multistep")
    (agent,) = only(runs, "agent")
    atlantis, paris, london = tool_calls(agent)
    assert (atlantis.state, atlantis.is_error, atlantis.result) == (
        "output-error", True, "Unknown city: Atlantis")
    assert atlantis.error_text == "Unknown city: Atlantis"
    assert (paris.state, paris.result) == ("result", WEATHER_RESULT)
    assert (london.state, london.result) == ("result", LONDON_RESULT)
    assert [c.tool_call_id for c in (atlantis, paris, london)] == ["call_010", "call_020",
                                                                   "call_030"]
    # Context is the tool results (a failure grounds nothing), never the envelope.
    assert [doc.content for doc in agent.context] == [
        '{"city":"Paris","forecast":"sunny","temperature_c":21}',
        '{"city":"London","forecast":"rainy","temperature_c":14}',
    ]
    tools = only(runs, "tool")
    assert [t.output[0].content.tool_invocations[0].result for t in tools] == [
        "Unknown city: Atlantis", WEATHER_RESULT, LONDON_RESULT]
    assert [t.output[0].content.tool_invocations[0].tool_call_id for t in tools] == [
        "call_010", "call_020", "call_030"]
    assert final_answer(agent).startswith("I could not find Atlantis.")
