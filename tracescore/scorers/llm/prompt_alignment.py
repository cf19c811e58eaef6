"""Prompt alignment: how well the answer follows the user's request and the system prompt
(Mastra's ``prompt-alignment-scorer``), or an explicit list of instructions (Mastra's older
prompt-alignment metric)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic.alias_generators import to_camel

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    is_yes,
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
    system_prompt,
    user_text,
)
from tracescore.scorers.llm.typical_answers import judged, sentences, typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import get_conversation_history, round_to_two_decimals

EvaluationMode = Literal["user", "system", "both"]

VERSION = "4"
"""4 (issue 32, request budget): every request fits the judge's input budget: when it would not, the
longest values from the run (answer, user message, system prompt, tool arguments and results,
ground truth) are cut to fair shares, each ending in a marker saying which characters were cut;
tool results in the trajectory are no longer cut at 4,000 characters when they fit.

3 (issue 32): run text in the prompts is neutralised data and the system prompt says so; the verdict count is checked (one repair, then an error); a failed reason keeps the score; implicit requirements, secondary intents, alignment rather than quality.

2: the judge is asked for Mastra's answer shape (booleans for format and tone alignment,
requirement items with ``isFulfilled``), with an example; runs that failed before answering are
not scorable."""

INSTRUCTIONS = judge_instructions(
    "You judge whether an AI agent did what it was asked: the user's request and the rules of "
    "its system prompt. You check intent, explicit requirements, completeness, format and tone, "
    "and score each from 0 to 1."
)

# Weights of intent, requirements, completeness and appropriateness.
USER_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SYSTEM_WEIGHTS = (0.35, 0.35, 0.15, 0.15)
BOTH_SHARES = (0.7, 0.3)  # user, system


class _Camel(Wire):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )


class IntentAlignment(_Camel):
    score: float
    primary_intent: str = ""
    is_addressed: bool
    reasoning: str = ""


class RequirementCheck(_Camel):
    requirement: str
    is_fulfilled: bool = Field(
        validation_alias=AliasChoices("isFulfilled", "fulfilled", "is_fulfilled")
    )
    """Mastra's key is ``isFulfilled``; a judge writing ``fulfilled`` means the same."""
    reasoning: str = ""


class RequirementsFulfillment(_Camel):
    requirements: list[RequirementCheck] = Field(default_factory=list)
    overall_score: float


class Completeness(_Camel):
    score: float
    missing_elements: list[str] = Field(default_factory=list)
    reasoning: str = ""


# Mastra's answer has ``formatAlignment`` / ``toneAlignment`` as booleans (what the prompt asks
# for, and the schema shows); tracescore's first prompts asked for a sentence each, and judges
# may still write one: both are read, neither changes the score (``score`` does). A comment, not
# a docstring: a model's docstring goes into the JSON schema the judge is shown.
_Alignment = Annotated[bool | str, WithJsonSchema({"type": "boolean"})]


class ResponseAppropriateness(_Camel):
    score: float
    format_alignment: _Alignment = False
    tone_alignment: _Alignment = False
    reasoning: str = ""


class AlignmentAnalysis(_Camel):
    intent_alignment: IntentAlignment
    requirements_fulfillment: RequirementsFulfillment
    completeness: Completeness
    response_appropriateness: ResponseAppropriateness
    overall_assessment: str = ""


class BothAlignmentAnalysis(_Camel):
    user_alignment: AlignmentAnalysis | None = None
    system_alignment: AlignmentAnalysis | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_evaluation(cls, value: Any) -> Any:
        """Mastra's ``both`` mode asks for ONE evaluation and scores it with the user weights; a
        judge answering that shape is read as the user evaluation, which gives Mastra's score."""
        if isinstance(value, Mapping) and "intentAlignment" in value:
            return {"userAlignment": value}
        return value


class InstructionVerdict(Wire):
    instruction: str = ""
    verdict: str
    reason: str = ""


class InstructionVerdicts(Wire):
    verdicts: list[InstructionVerdict] = Field(default_factory=list)


def weighted(analysis: AlignmentAnalysis, weights: tuple[float, float, float, float]) -> float:
    """Weighted dimension scores, each clamped to [0, 1] (Mastra lets a judge's 1.5 through)."""
    scores = (
        analysis.intent_alignment.score,
        analysis.requirements_fulfillment.overall_score,
        analysis.completeness.score,
        analysis.response_appropriateness.score,
    )
    return sum(w * min(1.0, max(0.0, s)) for w, s in zip(weights, scores, strict=True))


def alignment_score(
    analysis: AlignmentAnalysis | BothAlignmentAnalysis, mode: EvaluationMode, scale: float
) -> float:
    if isinstance(analysis, BothAlignmentAnalysis):
        user, system = analysis.user_alignment, analysis.system_alignment
        if user is not None and system is not None:
            value = BOTH_SHARES[0] * weighted(user, USER_WEIGHTS) + BOTH_SHARES[1] * weighted(
                system, SYSTEM_WEIGHTS
            )
        elif user is not None:
            value = weighted(user, USER_WEIGHTS)
        elif system is not None:
            value = weighted(system, SYSTEM_WEIGHTS)
        else:
            raise ValueError("the judge evaluated neither the user request nor the system prompt")
    else:
        value = weighted(analysis, SYSTEM_WEIGHTS if mode == "system" else USER_WEIGHTS)
    return round_to_two_decimals(value * scale)


def instruction_score(verdicts: Sequence[InstructionVerdict], scale: float) -> float:
    """Followed / applicable instructions × scale; ``n/a`` verdicts are not applicable.

    With no applicable instruction nothing was disobeyed: the score is ``scale``.
    """
    applicable = [v for v in verdicts if v.verdict.strip().lower() not in ("n/a", "na")]
    if not applicable:
        return round_to_two_decimals(scale)
    return round_to_two_decimals(
        sum(is_yes(v.verdict) for v in applicable) / len(applicable) * scale
    )


def history_messages(option: bool | int | Mapping[str, Any]) -> int:
    """How many remembered messages to show: ``True`` 10, a number that many, Mastra's
    ``{maxMessages: n}`` (or ``max_messages``) n, and 10 for an object without it."""
    if isinstance(option, Mapping):
        unknown = set(option) - {"maxMessages", "max_messages"}
        if unknown:
            raise ValueError(f"include_conversation_history: unknown keys {sorted(unknown)}")
        return int(option.get("maxMessages", option.get("max_messages", 10)))
    if option is True:
        return 10
    return int(option) if option else 0


def alignment_sketch(request: str) -> AlignmentAnalysis:
    """A typical evaluation against ``request``: every sentence of it taken for an explicit
    requirement, each dimension reasoned in one sentence."""
    return AlignmentAnalysis(
        intent_alignment=IntentAlignment(
            score=1.0,
            primary_intent=typical_text(0.5),
            is_addressed=True,
            reasoning=typical_text(),
        ),
        requirements_fulfillment=RequirementsFulfillment(
            requirements=judged(
                sentences(request),
                lambda requirement, reason: RequirementCheck(
                    requirement=requirement, is_fulfilled=True, reasoning=reason
                ),
            ),
            overall_score=1.0,
        ),
        completeness=Completeness(score=1.0, reasoning=typical_text()),
        response_appropriateness=ResponseAppropriateness(
            score=1.0,
            format_alignment=True,
            tone_alignment=True,
            reasoning=typical_text(),
        ),
        overall_assessment=typical_text(1.5),
    )


_DIMENSIONS = """For each evaluation give:
- "intentAlignment": the "primaryIntent", whether it "isAddressed" (true or false), a "score" and
  "reasoning";
- "requirementsFulfillment": "requirements", a list with every explicit requirement as
  {"requirement", "isFulfilled" (true or false), "reasoning"}, and an "overallScore";
- "completeness": a "score", the "missingElements" (a list) and "reasoning";
- "responseAppropriateness": a "score", "formatAlignment" (true when the format is the one asked
  for or fitting), "toneAlignment" (true when the tone fits) and "reasoning";
- "overallAssessment": one or two sentences.
Every score is a number from 0 (not at all) to 1 (fully).
- Requirements include implicit ones a reader would take for granted: a question asked in
  French expects an answer in French, "compare X and Y" expects both X and Y covered.
- A request may carry secondary intents besides its primary one ("and also tell me..."): the
  primary intent scores intentAlignment, and every secondary intent is a requirement too.
- You judge alignment, not quality: whether the answer does what was asked, in the way it was
  asked, not how well written, clever or correct it is.

Example. Request: "Give me three tips for better sleep, as a bulleted list."
Answer: two bullet points, "Keep a regular bedtime" and "Avoid screens an hour before bed".
Evaluation: intent addressed (score 0.9); requirements "three tips" not fulfilled and "bulleted
list" fulfilled (overallScore 0.5); completeness 0.67 (one tip missing); responseAppropriateness
score 1 with formatAlignment true and toneAlignment true."""

_TASKS: dict[str, str] = {
    "user": "Evaluate how well the agent's final answer fulfils the user's request.",
    "system": (
        "Evaluate how well the agent's final answer follows its system prompt: the role, rules, "
        "constraints, format and tone it sets (the user's request is context only)."
    ),
    "both": (
        'Evaluate the final answer twice: against the user\'s request as "userAlignment", and '
        'against the system prompt\'s role, rules, format and tone as "systemAlignment". Set '
        '"systemAlignment" to null when there is no system prompt, and "userAlignment" to null '
        "when there is no user message."
    ),
}


def create_prompt_alignment_scorer(
    *,
    model: JudgeSpec,
    evaluation_mode: EvaluationMode = "both",
    instructions: Sequence[str] | None = None,
    include_conversation_history: bool | int | Mapping[str, Any] = False,
    scale: float = 1.0,
) -> Scorer:
    """Alignment with the prompts, from 0 to ``scale``.

    Multi-dimensional form (default): intent, requirements, completeness and appropriateness,
    weighted 0.4/0.3/0.2/0.1 against the user's request (``user``), 0.35/0.35/0.15/0.15 against
    the system prompt (``system``), and for ``both`` 70 % the first and 30 % the second (Mastra's
    ``both`` silently equals the user score). ``include_conversation_history`` adds the last 10
    remembered messages (or that many: a number, or Mastra's ``{maxMessages: n}``).

    Instruction-list form (``instructions=[...]``): each instruction gets yes / no / n/a, and the
    score is followed / applicable × ``scale``.
    """
    if instructions is not None and not instructions:
        raise ValueError(
            "instructions must not be empty: leave it out for the multi-dimensional form"
        )
    history_size = history_messages(include_conversation_history)

    def run_blocks(ctx: StepContext) -> list[str]:
        blocks: list[str] = [describe_run(ctx.run)]
        if history_size and (history := get_conversation_history(ctx.run.input, history_size)):
            blocks.insert(0, section("conversation_history", history))
        return blocks

    def analysis_prompt(ctx: StepContext) -> str:
        has_user, has_system = bool(user_text(ctx.run)), bool(system_prompt(ctx.run))
        if evaluation_mode == "user" and not has_user:
            not_scorable("prompt alignment (user mode) needs a user message")
        if evaluation_mode == "system" and not has_system:
            not_scorable("prompt alignment (system mode) needs a system prompt")
        if evaluation_mode == "both" and not (has_user or has_system):
            not_scorable("prompt alignment needs a user message or a system prompt")
        if not response_text(ctx.run):
            not_scorable("prompt alignment needs the agent's answer")
        return judge_prompt(f"{_TASKS[evaluation_mode]}\n{_DIMENSIONS}", *run_blocks(ctx))

    def instructions_prompt(ctx: StepContext) -> str:
        return judge_prompt(
            """For each instruction, in order, decide whether the agent's final answer follows it:
"yes" when it does, "no" when it does not, "n/a" only when the instruction concerns a different
kind of task or domain than this answer. If the final answer is empty, instructions about format
or content count as not followed ("no"). Repeat the instruction and give a one-sentence reason.""",
            section("instructions", numbered(list(instructions or [])), cut=False),
            *run_blocks(ctx),
        )

    def analysis_sketch(ctx: StepContext) -> AlignmentAnalysis | BothAlignmentAnalysis:
        user, system = user_text(ctx.run), system_prompt(ctx.run)
        if evaluation_mode != "both":
            return alignment_sketch(user if evaluation_mode == "user" else system)
        return BothAlignmentAnalysis(
            user_alignment=alignment_sketch(user) if user else None,
            system_alignment=alignment_sketch(system) if system else None,
        )

    def instructions_sketch(ctx: StepContext) -> InstructionVerdicts:
        return InstructionVerdicts(
            verdicts=judged(
                list(instructions or []),
                lambda instruction, reason: InstructionVerdict(
                    instruction=instruction, verdict="yes", reason=reason
                ),
            )
        )

    def reason_prompt(ctx: StepContext) -> str:
        analysis = ctx.results["analyze_step_result"]
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The agent's answer scored {ctx.score} for prompt alignment on a 0 to {scale:g}
scale. Say what was followed and what was not, naming the misalignments that weighed most.""",
            ),
            section("evaluation", analysis.model_dump_json(by_alias=True)),
        )

    base = create_scorer(
        id="prompt-alignment-scorer",
        description="How well the answer follows the user's request and the system prompt",
        judge=model,
        instructions=INSTRUCTIONS,
        version=VERSION,
        needs_answer=True,
    )
    if instructions is not None:
        scorer = base.analyze(
            PromptStep(
                "Judge each instruction",
                instructions_prompt,
                InstructionVerdicts,
                sketch=instructions_sketch,
                check=one_per_item(
                    lambda ctx: list(instructions or []),
                    lambda answer: answer.verdicts,
                    "instruction",
                ),
            )
        ).generate_score(
            lambda ctx: instruction_score(ctx.results["analyze_step_result"].verdicts, scale)
        )
    else:
        schema = BothAlignmentAnalysis if evaluation_mode == "both" else AlignmentAnalysis
        scorer = base.analyze(
            PromptStep(
                "Evaluate alignment with the prompts",
                analysis_prompt,
                schema,
                sketch=analysis_sketch,
            )
        ).generate_score(
            lambda ctx: alignment_score(ctx.results["analyze_step_result"], evaluation_mode, scale)
        )
    return scorer.generate_reason(reason_step(reason_prompt, 2.5))
