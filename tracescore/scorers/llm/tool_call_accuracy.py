"""Tool-call accuracy judged by an LLM: were the right tools called for the request?
(Mastra's ``llm-tool-call-accuracy-scorer``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from tracescore.extract.model import ToolDefinition
from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    judge_instructions,
    judge_prompt,
    one_per_item,
    reason_step,
    reason_task,
)
from tracescore.scorers.llm.run_text import (
    describe_run,
    numbered,
    response_text,
    section,
    user_text,
)
from tracescore.scorers.llm.typical_answers import typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import failed_without_answer, not_scorable, without_content
from tracescore.scorers.utils import extract_tool_calls, round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score.

2: the prompts carry every decision rule of Mastra's (only what the user explicitly asked
for is appropriate; when a clarifying question is right and when it is a delay), with examples;
a run that failed before calling a tool or answering is not scorable."""

INSTRUCTIONS = judge_instructions(
    "You review an AI agent's tool use against what its user explicitly asked for: whether each "
    "call it made was appropriate, and whether it failed to call a tool the request needed."
)

EVALUATIONS_TASK = """Review the agent's tool calls against the user's explicit request. For each
call, in order, give "toolCalled" (its name), "wasAppropriate" and one sentence of "reasoning".
Under "missingTools" list the available tools the agent should have called but did not (an
empty list when none).
- A call is appropriate when the user's request explicitly asks for what the tool does and its
  arguments fit the request.
- A call that is merely helpful, but that the user did not ask for, is NOT appropriate.
When the agent called no tool at all:
- asking a clarifying question about a vague or ambiguous request is appropriate: no tool is
  missing;
- giving a generic answer to a specific request that an available tool could have served is not:
  name that tool under "missingTools";
- delaying a clear, specific request with questions is not either: name the tool it needed under
  "missingTools".

Examples (available tools: weather, calendar, email).
- "What's the weather in Oslo tomorrow?"; calls weather(Oslo) -> appropriate.
- Same request; calls weather(Oslo) and calendar -> weather appropriate, calendar not (helpful
  perhaps, but not asked for).
- "Can you help me with my trip?"; no call, the agent asks where and when -> no evaluations, no
  missing tools.
- "What's the weather in Oslo tomorrow?"; no call, the agent says "Oslo is often cold in
  winter" -> missingTools ["weather"].
- "Email Ana that I am late."; no call, the agent asks "Are you sure you want to email her?" ->
  missingTools ["email"]."""


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
        calls = extract_tool_calls(output)
        if not calls["tools"] and (reason := failed_without_answer(ctx.run)):
            not_scorable(reason)  # it failed before calling anything: there is no choice to judge
        if reason := without_content(ctx.run):
            not_scorable(reason)
        if not user_text(ctx.run) or not output:
            not_scorable("tool-call accuracy needs the user's message and the agent's output")
        return {
            "actualTools": calls["tools"],
            "hasToolCalls": bool(calls["tools"]),
            "toolCallInfos": calls["toolCallInfos"],
        }

    def evaluations_prompt(ctx: StepContext) -> str:
        tools = list(available_tools) if available_tools is not None else list(ctx.run.tools)
        called = ctx.results["preprocess_step_result"]["actualTools"]
        return judge_prompt(
            EVALUATIONS_TASK,
            section("available_tools", "\n".join(tool_line(t) for t in tools) or "(not known)"),
            section("tools_called", ", ".join(called) or "None"),
            describe_run(ctx.run),
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis: ToolEvaluations = ctx.results["analyze_step_result"]
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The agent's tool use scored {ctx.score} on a 0 to 1 scale (the share of
appropriate calls; with no call, 1 unless a needed tool was missing).""",
                sentences="one",
            ),
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
            version=VERSION,
        )
        .preprocess(preprocess)
        .analyze(
            PromptStep(
                "Judge each tool call",
                evaluations_prompt,
                ToolEvaluations,
                check=one_per_item(
                    lambda ctx: ctx.results["preprocess_step_result"]["actualTools"],
                    lambda answer: answer.evaluations,
                    "tool call",
                    "evaluation",
                ),
                sketch=lambda ctx: ToolEvaluations(
                    evaluations=[
                        ToolEvaluation(
                            tool_called=tool, was_appropriate=True, reasoning=typical_text()
                        )
                        for tool in ctx.results["preprocess_step_result"]["actualTools"]
                    ]
                ),
            )
        )
        .generate_score(lambda ctx: accuracy(ctx.results["analyze_step_result"]))
        .generate_reason(reason_step(reason_prompt, 1))
    )
