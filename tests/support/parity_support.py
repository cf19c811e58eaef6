"""Shared by the parity tests: reading recorded Mastra cases and scoring them like the harness.

Cases use the reference harness's format (``/work/shared/mastra-harness/harness.mjs``): ``scorer``,
``options`` (absent = factory called without argument), ``input``, ``output`` and, under
``expected``, what Mastra's ``@mastra/evals`` 1.10.2 returned.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tests.support.paths import FIXTURES
from tracescore.scorers import registry, utils
from tracescore.scorers.results import ScoreResult

PARITY = FIXTURES / "parity"
REGISTRY_NAME = {"tool-call-accuracy": "tool-call-accuracy-code"}


def load_cases(name: str) -> list[dict[str, Any]]:
    text = (PARITY / name).read_text("utf-8")
    return [
        json.loads(line) for line in text.split("\n") if line.strip()
    ]  # not splitlines: U+0085 etc. occur in cases


def mastra_run(case: dict[str, Any]) -> dict[str, Any]:
    """The run the harness builds: an object input gets Mastra's empty defaults for missing keys."""
    run_input = case.get("input")
    if isinstance(run_input, dict):
        run_input = {
            "rememberedMessages": [],
            "systemMessages": [],
            "taggedSystemMessages": {},
            **run_input,
            "inputMessages": run_input.get("inputMessages", []),
        }
    run = {"input": run_input, "output": case.get("output"), "runId": f"run-{case['id']}"}
    if "groundTruth" in case:
        run["groundTruth"] = case["groundTruth"]
    return run


def mastra_options(case: dict[str, Any]) -> dict[str, Any]:
    """The case's options as tracescore takes them.

    Mastra's content-similarity applies its defaults only when called with no argument at all;
    a given object leaves the missing flags off. tracescore defaults each flag on its own, so the
    flags Mastra leaves off are spelt out.
    """
    options = dict(case.get("options") or {})
    if case["scorer"] == "content-similarity" and "options" in case:
        options.setdefault("ignoreCase", False)
        options.setdefault("ignoreWhitespace", False)
    return options


def score_case(case: dict[str, Any]) -> tuple[ScoreResult | None, str | None]:
    """(result, None), or (None, message) when building the scorer itself failed."""
    entry = registry.get(REGISTRY_NAME.get(case["scorer"], case["scorer"]))
    try:
        scorer = entry.factory(**mastra_options(case))
    except ValueError as exc:
        return None, str(exc)
    return scorer.run_sync(mastra_run(case)), None


def defined(value: Any) -> Any:
    """JSON as Mastra's harness writes it: keys whose value is undefined (None here) dropped."""
    if isinstance(value, dict):
        return {k: defined(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [defined(v) for v in value]
    return value


def assert_same(mine: Any, theirs: Any) -> None:
    mine, theirs = defined(mine), defined(theirs)
    if isinstance(theirs, float) or isinstance(mine, float):
        assert math.isclose(mine, theirs, rel_tol=0, abs_tol=1e-9), (mine, theirs)
    elif isinstance(theirs, dict):
        assert isinstance(mine, dict) and mine.keys() == theirs.keys(), (mine, theirs)
        for key in theirs:
            assert_same(mine[key], theirs[key])
    elif isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), (mine, theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert_same(a, b)
    else:
        assert mine == theirs


UTILS = {
    "getUserMessageFromRunInput": lambda run: utils.get_user_message(run["input"]),
    "getAssistantMessageFromRunOutput": lambda run: utils.get_assistant_message(run["output"]),
    "getReasoningFromRunOutput": lambda run: utils.get_reasoning(run["output"]),
    "getSystemMessagesFromRunInput": lambda run: utils.get_system_messages(run["input"]),
    "getCombinedSystemPrompt": lambda run: utils.get_combined_system_prompt(run["input"]),
    "getConversationHistoryFromRunInput": lambda run: utils.get_conversation_history(run["input"]),
    "extractToolCalls": lambda run: utils.extract_tool_calls(run["output"]),
    "extractToolResults": lambda run: utils.extract_tool_results(run["output"]),
    "extractInputMessages": lambda run: utils.extract_input_messages(run["input"]),
    "extractAgentResponseMessages": lambda run: utils.extract_agent_response_messages(
        run["output"]
    ),
    "textOfEachOutputMessage": lambda run: [utils.get_text_content(m) for m in run["output"] or []],
    "isScorerRunInputForAgent": lambda run: utils.is_agent_run_input(run["input"]),
    "isScorerRunOutputForAgent": lambda run: utils.is_agent_run_output(run["output"]),
}


def assert_exact_case(case: dict[str, Any]) -> None:
    """The case's score, error and step results are Mastra's, to 1e-9."""
    expected = case["expected"]
    result, build_error = score_case(case)
    if "error" in expected:
        message = build_error if result is None else result.error
        assert message == expected["error"]
        assert result is None or (result.status == "error" and result.score is None)
        return
    assert build_error is None and result is not None
    assert result.status == "ok", result.error
    assert_same(result.score, expected["score"])
    for key, attribute in (
        ("preprocessStepResult", "preprocess_step_result"),
        ("analyzeStepResult", "analyze_step_result"),
    ):
        if key in expected["extra"]:
            assert_same(getattr(result, attribute), expected["extra"][key])
        else:
            assert getattr(result, attribute) is None


def mean_delta(cases: list[dict[str, Any]], scorer: str) -> tuple[float, int]:
    """Mean |score - Mastra's score| over the cases of ``scorer``, and how many there were."""
    deltas = []
    for case in cases:
        if case["scorer"] == scorer:
            result, _ = score_case(case)
            assert result is not None and result.status == "ok", result
            deltas.append(abs(result.score - case["expected"]["score"]))
    return sum(deltas) / len(deltas), len(deltas)
