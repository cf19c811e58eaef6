"""Mastra's scorer utils in Python.

``fixtures/parity/utils_extra.jsonl`` holds extra edge cases (text-part precedence, reasoning
details, system/tagged prompts, history window, tool-invocation merging and state filters,
signal roles, non-agent shapes) with the values Mastra's own utils returned for them, recorded
with the reference harness (``node harness.mjs``, ``@mastra/evals`` 1.10.2), like ``sample.jsonl``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.parity_support import UTILS, load_cases, mastra_run
from tracescore.scorers import utils

EXTRA_CASES = load_cases("utils_extra.jsonl")


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in EXTRA_CASES])
@pytest.mark.parametrize("helper", list(UTILS))
def test_util_matches_mastra(case: dict[str, Any], helper: str) -> None:
    want = case["expected"]["extra"][helper]
    run = mastra_run(case)
    if "error" in want:
        with pytest.raises((AttributeError, TypeError)):
            UTILS[helper](run)
    elif want.get("undefined"):
        assert UTILS[helper](run) is None
    else:
        assert UTILS[helper](run) == want["value"]


@pytest.mark.parametrize(
    ("value", "rounded"),
    [
        (0.825, 0.83),
        (1.005, 1.01),
        (0.1 + 0.2, 0.3),
        (0.8333, 0.83),
        (0.125, 0.13),
        (-0.125, -0.12),
        (2.675, 2.68),
        (0.0, 0.0),
        (1.0, 1.0),
        (0.49999999999999994, 0.5),
    ],
)
def test_round_to_two_decimals_rounds_half_up_like_js(value: float, rounded: float) -> None:
    # JS: Math.round((x + Number.EPSILON) * 100) / 100; Math.round goes half up toward +infinity.
    assert utils.round_to_two_decimals(value) == rounded


def test_conversation_history_window() -> None:
    remembered = [
        utils.make_test_message(f"turn {i}", "user" if i % 2 == 0 else "assistant", id=f"r{i}")
        for i in range(5)
    ]
    run = utils.make_agent_run(output=[], remembered_messages=remembered)
    assert (
        utils.get_conversation_history(run["input"], max_messages=2)
        == "assistant: turn 3\nuser: turn 4"
    )
    assert utils.get_conversation_history(run["input"], max_messages=0) is None
    assert utils.get_conversation_history({"inputMessages": []}) is None  # not a full agent input


def test_builders_make_mastra_shapes() -> None:
    invocation = utils.make_tool_invocation(
        tool_call_id="c1", tool_name="weather", args={"city": "Paris"}, result={"t": 21}
    )
    message = utils.make_test_message("Sunny.", "assistant", id="a1", tool_invocations=[invocation])
    assert message["content"]["parts"] == [{"type": "text", "text": "Sunny."}]
    assert message["content"]["content"] == "Sunny."
    assert message["content"]["toolInvocations"] == [
        {
            "toolCallId": "c1",
            "toolName": "weather",
            "args": {"city": "Paris"},
            "result": {"t": 21},
            "state": "result",
        }
    ]
    thrown = utils.make_tool_invocation(
        tool_call_id="c2", tool_name="save", state="output-error", error_text="boom"
    )
    assert thrown == {
        "toolCallId": "c2",
        "toolName": "save",
        "state": "output-error",
        "errorText": "boom",
    }
    run = utils.make_agent_run(
        input_messages=[utils.make_test_message("Weather?", "user")], output=[message]
    )
    assert utils.is_agent_run_input(run["input"]) and utils.is_agent_run_output(run["output"])
    assert utils.extract_tool_calls(run["output"])["tools"] == ["weather"]
    assert run["runId"]


def test_code_scorer_texts_join_every_message_with_comma_space() -> None:
    output = [
        utils.make_test_message("Hi", "user"),
        {"id": "a", "role": "assistant", "createdAt": "x", "content": {"format": 2, "parts": []}},
        utils.make_test_message("Bye", "assistant"),
    ]
    assert utils.run_output_text(output) == "Hi, , Bye"
    assert utils.run_input_text({"inputMessages": output[:1]}) == "Hi"
    assert utils.run_input_text({}) == ""
    assert utils.run_output_text("raw") == "raw"
