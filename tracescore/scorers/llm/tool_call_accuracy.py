"""Tool-call accuracy judged by an LLM: were the right tools called for the request?
(Mastra's ``llm-tool-call-accuracy-scorer``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from tracescore.extract.model import ToolDefinition
from tracescore.scorers.base import (
    PromptStep,
    Scorer,
    StepContext,
    create_scorer,
    not_scorable,
)
from tracescore.scorers.llm.common import JudgeSpec, Wire, judge_prompt, reason_step
from tracescore.scorers.llm.sketch import typical_text
from tracescore.scorers.llm.view import (
    describe_run,
    numbered,
    response_text,
    section,
    user_text,
)
from tracescore.scorers.utils import extract_tool_calls, round_to_two_decimals

INSTRUCTIONS = (
    "You review an AI agent's tool use: given the user's request and the tools it could call, "
    "you judge whether each call it made was appropriate and whether it failed to call a tool it "
    "needed."
)


class ToolEvaluation(Wire):
    tool_called: str = Field(alias="toolCalled")
    was_appropriate: bool = Field(alias="wasAppropriate")
    reasoning: str = ""


class ToolEvaluations(Wire):
    evaluations: list[ToolEvaluation] = Field(default_factory=list)
    missing_tools: list[str] = Field(default_factory=list, alias="missingTools")


def tool_line(tool: ToolDefinition | Mapping[str, Any]) -> str:
    """``name: description`` (Mastra prints ``tool.id``, which is undefined for its documented
    ``{name, description}`` tools; ``id`` is still accepted)."""
    if isinstance(tool, ToolDefinition):
        name, description = tool.name, tool.description
    else:
        name, description = (
            tool.get("name") or tool.get("id") or "(unnamed)",
            tool.get("description"),
        )
    return f"{name}: {description}" if description else name


def accuracy(analysis: ToolEvaluations) -> float:
    """Share of calls judged appropriate; without calls, 1 unless a tool was missing."""
    if not analysis.evaluations:
        return 0.0 if analysis.missing_tools else 1.0
    appropriate = sum(e.was_appropriate for e in analysis.evaluations)
    return round_to_two_decimals(appropriate / len(analysis.evaluations))


def create_tool_call_accuracy_scorer_llm(
    *,
    model: JudgeSpec,
    available_tools: Sequence[ToolDefinition | Mapping[str, Any]] | None = None,
) -> Scorer:
    """Share of tool calls the judge finds appropriate, in [0, 1] (no ``scale``, as in Mastra).

    ``available_tools`` defaults to the tools the run's model was offered. The judge sees every
    call with its arguments and result, not only the tool names.
    """

    def preprocess(ctx: StepContext) -> dict[str, Any]:
        output = ctx.run.output if isinstance(ctx.run.output, list) else []
        if not user_text(ctx.run) or not output:
            not_scorable("tool-call accuracy needs the user's message and the agent's output")
        calls = extract_tool_calls(output)
        return {
            "actualTools": calls["tools"],
            "hasToolCalls": bool(calls["tools"]),
            "toolCallInfos": calls["toolCallInfos"],
        }

    def evaluations_prompt(ctx: StepContext) -> str:
        tools = list(available_tools) if available_tools is not None else list(ctx.run.tools)
        called = ctx.results["preprocess_step_result"]["actualTools"]
        return judge_prompt(
            """Review the agent's tool calls. For each call, in order, give "toolCalled" (its name),
"wasAppropriate" (true when the request needed it and its arguments fit) and one sentence of
"reasoning". Under "missingTools" list available tools the agent should have called but did not
(empty when none).""",
            section("available_tools", "\n".join(tool_line(t) for t in tools) or "(not known)"),
            section("tools_called", ", ".join(called) or "None"),
            describe_run(ctx.run),
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis: ToolEvaluations = ctx.results["analyze_step_result"]
        return judge_prompt(
            f"""The agent's tool use scored {ctx.score} on a 0 to 1 scale (the share of
appropriate calls). Explain the score in one sentence.""",
            section("user", user_text(ctx.run)),
            section(
                "evaluations",
                numbered(
                    [
                        f"{e.tool_called}: {'appropriate' if e.was_appropriate else 'inappropriate'} — {e.reasoning}"
                        for e in analysis.evaluations
                    ]
                ),
            ),
            section("missing_tools", numbered(analysis.missing_tools)),
            section("final_answer", response_text(ctx.run)),
        )

    return (
        create_scorer(
            id="llm-tool-call-accuracy-scorer",
            description="Whether the agent called the right tools for the request, judged by an LLM",
            judge=model,
            instructions=INSTRUCTIONS,
        )
        .preprocess(preprocess)
        .analyze(
            PromptStep(
                "Judge each tool call",
                evaluations_prompt,
                ToolEvaluations,
                sketch=lambda ctx: ToolEvaluations(evaluations=[
                    ToolEvaluation(tool_called=tool, was_appropriate=True,
                                   reasoning=typical_text())
                    for tool in ctx.results["preprocess_step_result"]["actualTools"]
                ]),  # fmt: skip
            )
        )
        .generate_score(lambda ctx: accuracy(ctx.results["analyze_step_result"]))
        .generate_reason(reason_step(reason_prompt, 1))
    )
