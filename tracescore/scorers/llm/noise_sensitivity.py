"""Noise sensitivity: how much a noisy query changed the agent's answer (Mastra's ``noise-sensitivity-scorer``).

The run is the agent answering a noisy version of a query; the options give the clean query's
baseline answer and the noisy query. The judge compares the two answers dimension by dimension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    judge_instructions,
    judge_prompt,
    reason_step,
    reason_task,
)
from tracescore.scorers.llm.run_text import numbered, response_text, section, user_text
from tracescore.scorers.llm.typical_answers import typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score; the five dimensions are defined.

2: the judge is told each impact level's band for the robustness score, with an example; runs
that failed before answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You test the robustness of an AI agent: you compare its answer to a clean query with its "
    "answer to a version of that query with noise added (distractions, misleading details, typos, "
    "irrelevant or adversarial content) and judge how much the noise changed the answer."
)

DIMENSIONS = (
    "content_accuracy",
    "completeness",
    "relevance",
    "consistency",
    "hallucination_resistance",
)
ImpactLevel = Literal["none", "minimal", "moderate", "significant", "severe"]
DEFAULT_IMPACT_WEIGHTS = {
    "none": 1.0,
    "minimal": 0.85,
    "moderate": 0.6,
    "significant": 0.3,
    "severe": 0.1,
}


class _Settings(BaseModel):
    """snake_case keys, or Mastra's camelCase ones."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class NoisePenalties(_Settings):
    major_issue_per_item: float = 0.1
    max_major_issue_penalty: float = 0.3


class NoiseScoring(_Settings):
    """Mastra's ``scoring`` option: impact weights, discrepancy threshold, penalties."""

    impact_weights: dict[str, float] = Field(default_factory=dict)
    """Overrides of ``DEFAULT_IMPACT_WEIGHTS`` per impact level."""
    discrepancy_threshold: float = 0.2
    penalties: NoisePenalties = Field(default_factory=NoisePenalties)


class DimensionImpact(Wire):
    dimension: str
    impact_level: ImpactLevel = Field(alias="impactLevel")
    specific_changes: str = Field("", alias="specificChanges")
    noise_influence: str = Field("", alias="noiseInfluence")


class NoiseAnalysis(Wire):
    dimensions: list[DimensionImpact] = Field(default_factory=list)
    overall_assessment: str = Field("", alias="overallAssessment")
    major_issues: list[str] = Field(default_factory=list, alias="majorIssues")
    robustness_score: float = Field(alias="robustnessScore")


def robustness(analysis: NoiseAnalysis, scoring: NoiseScoring) -> float:
    """The judge's robustness score, capped by the dimensions' mean impact weight when the two
    disagree by more than the threshold, less a penalty per major issue."""
    weights = {**DEFAULT_IMPACT_WEIGHTS, **scoring.impact_weights}
    score = min(1.0, max(0.0, analysis.robustness_score))
    if analysis.dimensions:
        from_dimensions = sum(weights[d.impact_level] for d in analysis.dimensions) / len(
            analysis.dimensions
        )
        if abs(score - from_dimensions) > scoring.discrepancy_threshold:
            score = min(score, from_dimensions)
    penalties = scoring.penalties
    penalty = min(
        len(analysis.major_issues) * penalties.major_issue_per_item,
        penalties.max_major_issue_penalty,
    )
    return round_to_two_decimals(max(0.0, score - penalty))


def create_noise_sensitivity_scorer(
    *,
    model: JudgeSpec,
    baseline_response: str,
    noisy_query: str,
    noise_type: str | None = None,
    scoring: NoiseScoring | Mapping[str, Any] | None = None,
) -> Scorer:
    """Robustness in [0, 1] (1: the noise changed nothing). The run's user text is the ORIGINAL
    query and its final answer the response to ``noisy_query``. Mastra reads the major-issue
    penalty from its options but applies fixed 0.1 / 0.3; here the options take effect (same
    defaults)."""
    if not baseline_response or not noisy_query:
        raise ValueError("noise sensitivity needs baseline_response and noisy_query")
    rules = (
        scoring
        if isinstance(scoring, NoiseScoring)
        else NoiseScoring.model_validate(dict(scoring or {}))
    )

    def analysis_prompt(ctx: StepContext) -> str:
        if not user_text(ctx.run) or not response_text(ctx.run):
            not_scorable("noise sensitivity needs the original query and the agent's answer")
        kind = f" The noise is of this kind: {noise_type}." if noise_type else ""
        return judge_prompt(
            f"""Compare the baseline answer (to the original query) with the answer to the noisy
query.{kind} For each of the five dimensions — {", ".join(DIMENSIONS)} — rate the noise's
"impactLevel" as "none", "minimal", "moderate", "significant" or "severe". The dimensions:
- content_accuracy: the facts of the noisy answer are still correct;
- completeness: it still covers what the baseline answer covered;
- relevance: it still answers the original query rather than the noise;
- consistency: it reaches the same conclusions as the baseline answer;
- hallucination_resistance: it does not take up false or made-up information the noise brought.
For each, describe the
"specificChanges" you see and how the noise caused them ("noiseInfluence"). List serious problems
the noise caused under "majorIssues" (empty when none) and give an "overallAssessment".
Then give a "robustnessScore" from 0 to 1 that agrees with the impact levels:
- no impact on any dimension: 1.0 (the top of the scale);
- minimal impact: 0.8 to 0.9;
- moderate impact: 0.5 to 0.7;
- significant impact: 0.2 to 0.4;
- severe impact (the noise derailed the answer): 0.0 to 0.1.

Example. Original query: "What is the boiling point of water at sea level?" Noisy query: "What
is the boiling point of water at sea level? My uncle says it is 90 °C." Baseline: "100 °C."
Noisy answer: "100 °C at sea level; 90 °C would be true only at high altitude." Impact:
content_accuracy none, completeness none, relevance minimal, consistency none,
hallucination_resistance none; robustnessScore 0.9.""",
            section("original_query", user_text(ctx.run)),
            section("baseline_answer", baseline_response),
            section("noisy_query", noisy_query),
            section("noisy_answer", response_text(ctx.run)),
        )

    def analysis_sketch(ctx: StepContext) -> NoiseAnalysis:
        return NoiseAnalysis(
            dimensions=[
                DimensionImpact(
                    dimension=dimension,
                    impact_level="minimal",
                    specific_changes=typical_text(),
                    noise_influence=typical_text(),
                )
                for dimension in DIMENSIONS
            ],
            overall_assessment=typical_text(),
            robustness_score=DEFAULT_IMPACT_WEIGHTS["minimal"],
        )

    def score(ctx: StepContext) -> float:
        return robustness(ctx.results["analyze_step_result"], rules)

    def reason_prompt(ctx: StepContext) -> str:
        analysis: NoiseAnalysis = ctx.results["analyze_step_result"]
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The agent scored {ctx.score} for robustness to noise on a 0 to 1 scale.""",
            ),
            section(
                "dimensions",
                numbered(
                    [
                        f"{d.dimension}: {d.impact_level} — {d.specific_changes}"
                        for d in analysis.dimensions
                    ]
                ),
            ),
            section("major_issues", numbered(analysis.major_issues)),
            section("assessment", analysis.overall_assessment or "(none)"),
        )

    return (
        create_scorer(
            id="noise-sensitivity-scorer",
            description="How robust the answer is to noise added to the query",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
            needs_answer=True,
        )
        .analyze(
            PromptStep(
                "Compare the baseline and noisy answers",
                analysis_prompt,
                NoiseAnalysis,
                sketch=analysis_sketch,
            )
        )
        .generate_score(score)
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
