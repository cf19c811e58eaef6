"""tool-call-accuracy (code): did the run call the expected tool, or tools in the expected order?

A port of Mastra's ``createToolCallAccuracyScorerCode``; scores are 0 or 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.code.reasons import some
from tracescore.scorers.steps import StepContext
from tracescore.scorers.unscorable import (
    failed_without_answer,
    intermediate_step,
    not_scorable,
    without_content,
)
from tracescore.scorers.utils import extract_tool_calls

ID = "code-tool-call-accuracy-scorer"
VERSION = "2"  # 2: runs that failed before calling a tool or answering are not scorable


def tools_in_order(actual: Sequence[str], expected: Sequence[str], strict: bool) -> bool:
    """Strict: exactly ``expected``. Lenient: first occurrences of ``expected`` strictly increase."""
    if strict:
        return list(actual) == list(expected)
    positions = []
    for name in expected:
        if name not in actual:
            return False
        positions.append(actual.index(name))
    return all(later > earlier for earlier, later in itertools.pairwise(positions))


def _called_expected_tool(actual: Sequence[str], expected_tool: str | None, strict: bool) -> bool:
    if not expected_tool:
        return False
    if strict:
        return len(actual) == 1 and actual[0] == expected_tool
    return expected_tool in actual


def create_tool_call_accuracy_scorer_code(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
) -> Scorer:
    """1 when the expected tool was called (or the tools in the expected order), else 0.

    An ``expected_tool_order`` (non-empty) takes precedence over ``expected_tool``. Strict mode
    means "only that single call" / "exactly that sequence".
    """
    if not expected_tool and expected_tool_order is None:
        raise ValueError("Either expectedTool or expectedToolOrder must be provided")
    order = list(expected_tool_order) if expected_tool_order is not None else None

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        run_input, run_output = ctx.run.input, ctx.run.output
        if (reason := failed_without_answer(ctx.run)) and not (
            run_output and extract_tool_calls(run_output)["tools"]
        ):
            not_scorable(reason)  # it failed before calling anything: there is no choice to judge
        if reason := without_content(ctx.run):
            not_scorable(reason)  # no user message to judge the choice against
        input_messages = run_input.get("inputMessages") if isinstance(run_input, dict) else None
        if not input_messages or not run_output:
            if reason := intermediate_step(ctx.run):
                # A loop's step sent only tool outputs (OpenAI Responses' previous_response_id),
                # or whose calls the instrumentation did not record: no choice to judge here.
                not_scorable(reason)
            raise ValueError("Input and output messages cannot be null or empty")
        calls = extract_tool_calls(run_output)
        actual = calls["tools"]
        return {
            "expectedTool": expected_tool,
            "actualTools": actual,
            "strictMode": strict_mode,
            "expectedToolOrder": order,
            "hasToolCalls": bool(actual),
            "correctToolCalled": _called_expected_tool(actual, expected_tool, strict_mode),
            "toolCallInfos": calls["toolCallInfos"],
            "correctOrderCalled": tools_in_order(actual, order, strict_mode)
            if order is not None
            else None,
        }

    def generate_score(ctx: StepContext) -> float:
        facts = ctx.results["preprocess_step_result"]
        actual = facts["actualTools"]
        if not actual:
            return 0.0
        if order:
            return 1.0 if tools_in_order(actual, order, strict_mode) else 0.0
        return 1.0 if _called_expected_tool(actual, expected_tool, strict_mode) else 0.0

    def generate_reason(ctx: StepContext) -> str:
        actual = ctx.results["preprocess_step_result"]["actualTools"]
        called = f"called {some(actual)}" if actual else "called no tool"
        wanted = f"the order {', '.join(order)}" if order is not None else expected_tool
        return f"{called}; expected {wanted}"

    description = (
        f"Whether the run called tools in the order [{', '.join(order)}]"
        if order is not None
        else f"Whether the run called the expected tool ({expected_tool})"
    )
    return (
        create_scorer(
            id=ID, name="Tool Call Accuracy Scorer", description=description, version=VERSION
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
