"""Knowledge retention: the share of the assistant's answers that keep what the user told it.

DeepEval's ``KnowledgeRetentionMetric`` (https://deepeval.com/docs/metrics-knowledge-retention):
the judge extracts the facts each user message gives, then decides for each assistant answer
given after a fact whether it forgets or contradicts the facts known by then (an "attrition");
the score is answers without attrition over answers judged.
"""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.conversation.common import (
    answered_turns,
    by_turn,
    conversation_of,
    is_no,
    one_per_turn,
    strictly,
    transcript,
    turn_list,
)
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    judge_instructions,
    judge_prompt,
    reason_step,
    reason_task,
)
from tracescore.scorers.llm.run_text import numbered, section
from tracescore.scorers.llm.typical_answers import typical_text
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "3"
"""3 (issue 32, request budget): messages are shown whole unless the request would not fit the
judge's budget (no longer cut at 2,000 characters); then the longest are cut to fair shares,
each ending in a marker saying which characters were cut.

2 (issue 32): the transcript is neutralised data; a judged turn left without a verdict is
asked for again once; ``strict``."""

INSTRUCTIONS = judge_instructions(
    "You check whether an AI assistant remembers what its user told it earlier in a "
    "conversation: names, numbers, preferences, constraints and circumstances. Forgetting a "
    "fact, contradicting it or asking for it again are failures; asking to confirm or correct "
    "it is not."
)

FACTS_TASK = """List the facts the user gave in each turn: facts about themselves, their
situation, their request's constraints and preferences (names, dates, numbers, places,
allergies, budgets, what they already tried).
- One fact per item, with the number of the turn whose user message gave it.
- Only what the user stated: not what the assistant said, not what you infer.
- Questions are not facts, but the facts inside them are ("Is Lyon nice in May? I'm going then"
  gives "the user is going to Lyon in May").
- A fact the user corrected later: list the correction under the later turn.
- A conversation in which the user gave no facts gives an empty list.

Example. Turn 1 user: "I'm vegetarian and I'm cooking for 6 on Saturday." Facts: [{"turn": 1,
"fact": "the user is vegetarian"}, {"turn": 1, "fact": "the user is cooking for 6 people"},
{"turn": 1, "fact": "the meal is on Saturday"}]"""

VERDICTS_TASK = """For each of turns {turns}, decide whether the assistant's answer in that turn
forgets or contradicts the facts the user had given up to and including that turn (the facts
listed with a turn number no higher than it). Give one verdict per turn, with the turn number
and a one-sentence reason.
- "yes" (attrition): the answer contradicts a known fact, ignores a constraint the user set
  (suggests meat to a vegetarian), gets a fact wrong, or asks for information the user already
  gave ("Where do you live?" after the user said where).
- "no": the answer is consistent with every known fact, does not need them, or asks the user to
  confirm, clarify or correct a fact ("Is 555-1029 still your number?").
- Use only the facts listed; do not assume facts the user did not give.

Example. Facts: turn 1 "the user is allergic to peanuts". Turn 3 answer: "Try the satay, it's
made with peanut sauce." -> yes (ignores the allergy). Turn 4 answer: "Are you allergic to
anything?" -> yes (asks again). Turn 5 answer: "Just to confirm, it's peanuts you avoid?" -> no"""


class UserFact(Wire):
    turn: int
    fact: str


class UserFacts(Wire):
    facts: list[UserFact]


class RetentionVerdict(Wire):
    turn: int
    verdict: str
    reason: str = ""


class RetentionVerdicts(Wire):
    verdicts: list[RetentionVerdict]


def judged_turns(ctx: StepContext) -> list[int]:
    """The answered turns at or after the first turn that gave a fact (DeepEval judges an answer
    only once some knowledge precedes it); not scorable when the user gave no facts."""
    conversation = conversation_of(ctx)
    given = [f.turn for f in ctx.results["preprocess_step_result"].facts]
    given = [turn for turn in given if 1 <= turn <= len(conversation.turns)]
    judged = [number for number in answered_turns(conversation) if given and number >= min(given)]
    if not judged:
        not_scorable("the user gave no facts before an answer: there was nothing to retain")
    return judged


def create_knowledge_retention_scorer(
    *, model: JudgeSpec, scale: float = 1.0, strict: bool = False
) -> Scorer:
    """Answers without attrition / answers judged × ``scale`` (a verdict of "no" attrition
    counts as retained, as in DeepEval). A conversation in which the user gave no facts is not
    scorable, where DeepEval scores it 0, the worst score, for forgetting nothing."""

    def facts_prompt(ctx: StepContext) -> str:
        return judge_prompt(FACTS_TASK, transcript(conversation_of(ctx)))

    def verdicts_prompt(ctx: StepContext) -> str:
        facts = ctx.results["preprocess_step_result"].facts
        return judge_prompt(
            VERDICTS_TASK.format(turns=turn_list(judged_turns(ctx))),
            transcript(conversation_of(ctx)),
            section("facts", numbered([f"turn {f.turn}: {f.fact}" for f in facts])),
        )

    def verdicts_of(ctx: StepContext) -> list[str]:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return by_turn([(v.turn, v.verdict) for v in verdicts], judged_turns(ctx))

    def score(ctx: StepContext) -> float:
        verdicts = verdicts_of(ctx)
        return round_to_two_decimals(sum(map(is_no, verdicts)) / len(verdicts) * scale)

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The conversation scored {ctx.score} for knowledge retention on a 0 to
{scale:g} scale (the share of the assistant's answers that kept the facts the user gave; a
"yes" verdict is an answer that forgot or contradicted one). Name the facts that were lost and
in which turns.""",
            ),
            section(
                "verdicts", numbered([f"turn {v.turn}: {v.verdict}: {v.reason}" for v in verdicts])
            ),
        )

    return (
        create_scorer(
            id="knowledge-retention-scorer",
            description="Share of the assistant's answers that keep the facts the user gave",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
        )
        .preprocess(
            PromptStep(
                "List the facts the user gave, turn by turn",
                facts_prompt,
                UserFacts,
                sketch=lambda ctx: UserFacts(
                    facts=[
                        UserFact(turn=number, fact=typical_text(0.5))
                        for number in range(1, len(conversation_of(ctx).turns) + 1)
                    ]
                ),
            )
        )
        .analyze(
            PromptStep(
                "Judge each later answer for forgotten or contradicted facts",
                verdicts_prompt,
                RetentionVerdicts,
                check=one_per_turn(judged_turns),
                sketch=lambda ctx: RetentionVerdicts(
                    verdicts=[
                        RetentionVerdict(turn=number, verdict="no", reason=typical_text())
                        for number in judged_turns(ctx)
                    ]
                ),
            )
        )
        .generate_score(strictly(score, scale, strict))
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
