"""Answer similarity: how closely the answer matches the ground truth (Mastra's ``answer-similarity-scorer``)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

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
from tracescore.scorers.llm.run_text import numbered, response_text, section, user_text
from tracescore.scorers.llm.typical_answers import sentences, typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score.

2: the prompts carry every decision rule of Mastra's (minor wording differences are still
"exact"; a factually wrong unit is "missing" AND a contradiction), with examples; runs that failed
before answering are not scorable."""

INSTRUCTIONS = judge_instructions(
    "You compare an AI agent's answer with a reference answer (the ground truth), unit of "
    "meaning by unit of meaning: what matches, what is missing, what is extra and what "
    "contradicts the reference. A wrong fact is never a match."
)

UNITS_TASK = """Split both texts into semantic units: self-contained pieces of meaning — a fact,
an entity, a relationship between entities, a quantity together with its unit. Do not over-split:
"the bridge is 1,149 m long" is one unit, not three. List the agent's answer's units as
"outputUnits" and the ground truth's as "groundTruthUnits", each in order.

Example. Text: "Marie Curie won two Nobel Prizes, in physics (1903) and chemistry (1911)."
Units: ["Marie Curie won two Nobel Prizes", "Marie Curie won the Nobel Prize in physics in 1903",
"Marie Curie won the Nobel Prize in chemistry in 1911"]"""

MATCHES_TASK = """Match every ground-truth unit with the answer's units. For each ground-truth unit
give the matching "outputUnit" (null when none), a short "explanation" and a "matchType":
- "exact": the same information; minor wording differences (articles, word order, synonyms of
  one word, number formatting) are still exact;
- "semantic": the same fact said in other words;
- "partial": the answer overlaps with the unit but misses important details of it;
- "missing": the answer does not contain it.
A factually wrong answer unit — a wrong name, a wrong number, the opposite claim — does not
match: the ground-truth unit is "missing", AND the pair is listed under "contradictions" with
"outputUnit", "groundTruthUnit" and "explanation".
List the answer units with no counterpart in the ground truth under "extraInOutput".

Example. Ground truth units: ["The meeting is on Tuesday", "The meeting starts at 10:00",
"The meeting is in room 4"]. Answer units: ["The meeting takes place on Tuesday", "It starts at
11:00", "Coffee is provided"].
- "The meeting is on Tuesday" -> exact ("takes place on" is a wording difference)
- "The meeting starts at 10:00" -> missing, and a contradiction with "It starts at 11:00"
- "The meeting is in room 4" -> missing
- extraInOutput: ["Coffee is provided"]"""


class SemanticUnits(Wire):
    output_units: list[str] = Field(alias="outputUnits")
    ground_truth_units: list[str] = Field(alias="groundTruthUnits")


class UnitMatch(Wire):
    ground_truth_unit: str = Field(alias="groundTruthUnit")
    output_unit: str | None = Field(None, alias="outputUnit")
    match_type: Literal["exact", "semantic", "partial", "missing"] = Field(alias="matchType")
    explanation: str = ""


class Contradiction(Wire):
    output_unit: str = Field(alias="outputUnit")
    ground_truth_unit: str = Field(alias="groundTruthUnit")
    explanation: str = ""


class SimilarityAnalysis(Wire):
    matches: list[UnitMatch] = Field(default_factory=list)
    extra_in_output: list[str] = Field(default_factory=list, alias="extraInOutput")
    contradictions: list[Contradiction] = Field(default_factory=list)


def ground_truth_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def create_answer_similarity_scorer(
    *,
    model: JudgeSpec,
    require_ground_truth: bool = True,
    semantic_threshold: float = 0.8,
    exact_match_bonus: float = 0.2,
    missing_penalty: float = 0.15,
    contradiction_penalty: float = 1.0,
    extra_info_penalty: float = 0.05,
    scale: float = 1.0,
) -> Scorer:
    """Unit-by-unit match with the run's ground truth (exact 1.2, semantic 0.8, partial 0.4,
    missing −0.15, normalised), minus contradiction and extra-information penalties.

    A run without ground truth is not scorable (Mastra throws) unless
    ``require_ground_truth=False``, in which case it scores 0.
    """
    weights = {
        "exact": 1 + exact_match_bonus,
        "semantic": semantic_threshold,
        "partial": 0.5 * semantic_threshold,
        "missing": -missing_penalty,
    }

    def units_prompt(ctx: StepContext) -> str:
        truth = ground_truth_text(ctx.run.ground_truth)
        if not truth and require_ground_truth:
            not_scorable("answer similarity needs the run's ground truth")
        return judge_prompt(
            UNITS_TASK,
            section("final_answer", response_text(ctx.run)),
            section("ground_truth", truth or "(none)"),
        )

    def analysis_prompt(ctx: StepContext) -> str:
        units: SemanticUnits = ctx.results["preprocess_step_result"]
        return judge_prompt(
            MATCHES_TASK,
            section("user", user_text(ctx.run)),
            section("ground_truth_units", numbered(units.ground_truth_units), cut=False),
            section("output_units", numbered(units.output_units), cut=False),
        )

    def units_sketch(ctx: StepContext) -> SemanticUnits:
        return SemanticUnits(
            output_units=sentences(response_text(ctx.run)),
            ground_truth_units=sentences(ground_truth_text(ctx.run.ground_truth)),
        )

    def analysis_sketch(ctx: StepContext) -> SimilarityAnalysis:
        """Each ground-truth unit matched in order; answer units left over are extra."""
        units: SemanticUnits = ctx.results["preprocess_step_result"]
        truth, answer = units.ground_truth_units, units.output_units
        counterparts = answer[: len(truth)] + [None] * (len(truth) - len(answer))
        return SimilarityAnalysis(
            matches=[
                UnitMatch(
                    ground_truth_unit=unit,
                    output_unit=found,
                    explanation=typical_text(),
                    match_type="semantic" if found is not None else "missing",
                )
                for unit, found in zip(truth, counterparts, strict=True)
            ],
            extra_in_output=answer[len(truth) :],
        )

    def score(ctx: StepContext) -> float:
        analysis: SimilarityAnalysis = ctx.results["analyze_step_result"]
        if not ground_truth_text(ctx.run.ground_truth) or not analysis.matches:
            return 0.0
        total = sum(weights[m.match_type] for m in analysis.matches)
        total /= len(analysis.matches) * (1 + exact_match_bonus)
        total -= len(analysis.contradictions) * contradiction_penalty
        total -= min(len(analysis.extra_in_output) * extra_info_penalty, 0.2)
        return round_to_two_decimals(min(1.0, max(0.0, total)) * scale)

    def reason_prompt(ctx: StepContext) -> str:
        if not ground_truth_text(ctx.run.ground_truth):
            return "Say in one sentence that the score is 0 because the run has no ground truth to compare with."
        analysis: SimilarityAnalysis = ctx.results["analyze_step_result"]
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The agent's answer scored {ctx.score} for similarity to the ground truth on a
0 to {scale:g} scale. Say what matched, and what was missing, extra or contradictory.""",
            ),
            section(
                "matches",
                numbered([f"{m.match_type}: {m.ground_truth_unit}" for m in analysis.matches]),
            ),
            section("extra", numbered(analysis.extra_in_output)),
            section(
                "contradictions",
                numbered([c.explanation or c.output_unit for c in analysis.contradictions]),
            ),
        )

    return (
        create_scorer(
            id="answer-similarity-scorer",
            description="How closely the answer matches the ground truth, unit by unit",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
            needs_answer=True,
        )
        .preprocess(
            PromptStep(
                "Split answer and ground truth into semantic units",
                units_prompt,
                SemanticUnits,
                sketch=units_sketch,
            )
        )
        .analyze(
            PromptStep(
                "Match the units",
                analysis_prompt,
                SimilarityAnalysis,
                sketch=analysis_sketch,
                check=one_per_item(
                    lambda ctx: ctx.results["preprocess_step_result"].ground_truth_units,
                    lambda answer: answer.matches,
                    "ground-truth unit",
                    "match",
                ),
            )
        )
        .generate_score(score)
        .generate_reason(
            reason_step(
                reason_prompt, lambda ctx: 2.5 if ground_truth_text(ctx.run.ground_truth) else 1
            )
        )
    )
