"""Conversation relevancy: the share of the assistant's answers relevant to the recent turns.

DeepEval's ``ConversationRelevancyMetric`` (https://deepeval.com/docs/metrics-conversation-relevancy,
now ``TurnRelevancyMetric``): each assistant answer is judged against a sliding window of the
turns up to and including its own (``window_size`` turns: 3 in ``ConversationRelevancyMetric``,
10 in ``TurnRelevancyMetric``); the score is the answers not judged irrelevant over all
answers. DeepEval asks the judge once per window; here one request names each answer's window,
so a conversation costs one judge call instead of one per turn.
"""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.conversation.common import (
    answered_turns,
    by_turn,
    conversation_of,
    one_per_turn,
    share_not_no,
    strictly,
    transcript,
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

VERSION = "3"
"""3 (issue 32, request budget): messages are shown whole unless the request would not fit the
judge's budget (no longer cut at 2,000 characters); then the longest are cut to fair shares,
each ending in a marker saying which characters were cut.

2 (issue 32): turns are neutralised data, a missing verdict gets one repair request, ``strict``."""

DEFAULT_WINDOW_SIZE = 3

INSTRUCTIONS = judge_instructions(
    "You judge whether each answer an AI assistant gave in a conversation is relevant to what "
    "was being discussed in the turns just before it. You judge relevance, not correctness."
)

VERDICTS_TASK = """For each turn listed under <windows>, decide whether the assistant's answer in
that turn is relevant to the conversation within its window: the turns named there, which end
with the answer's own turn. Give one verdict per listed turn, with the turn number and, for a
"no", a one-sentence reason.
- "yes": the answer addresses the user's last message in the light of the window's earlier
  turns, even partly, even wrongly.
- "no": only when the answer is completely irrelevant to the window: it ignores the user's
  message and changes the subject, or answers a different question.
- Vague answers to vague messages, such as greetings, are relevant ("yes").
- Use the turns outside the window only to understand the words in it, never to excuse an
  answer that ignores the window.

Example. Window: turns 3-4. Turn 3 user: "I've a sore throat, what should I take?" Turn 4 user:
"It's worse at night." Turn 4 answer: "Isn't it a nice day today?" -> no (ignores the sore
throat entirely)."""


class TurnRelevancyVerdict(Wire):
    turn: int
    verdict: str
    reason: str = ""


class TurnRelevancyVerdicts(Wire):
    verdicts: list[TurnRelevancyVerdict]


def windows(answered: list[int], window_size: int) -> list[tuple[int, int]]:
    """``(first turn, turn)`` of each answer's window: the turn and the ``window_size − 1``
    turns before it (DeepEval's ``get_turns_in_sliding_window``)."""
    return [(max(1, turn - window_size + 1), turn) for turn in answered]


def create_conversation_relevancy_scorer(
    *,
    model: JudgeSpec,
    window_size: int = DEFAULT_WINDOW_SIZE,
    scale: float = 1.0,
    strict: bool = False,
) -> Scorer:
    """Answers not judged irrelevant / answers × ``scale`` (every verdict but "no" counts as
    relevant, as in DeepEval), each answer judged against its last ``window_size`` turns."""
    if window_size < 1:
        raise ValueError(f"window_size must be at least 1, not {window_size}")

    def answered(ctx: StepContext) -> list[int]:
        turns = answered_turns(conversation_of(ctx))
        if not turns:
            not_scorable("the conversation has no answer to judge")
        return turns

    def verdicts_prompt(ctx: StepContext) -> str:
        spans = windows(answered(ctx), window_size)
        return judge_prompt(
            VERDICTS_TASK,
            transcript(conversation_of(ctx)),
            section(
                "windows",
                "\n".join(
                    f"turn {turn}: window turns {first}-{turn}"
                    if first < turn
                    else f"turn {turn}: window turn {turn}"
                    for first, turn in spans
                ),
                cut=False,
            ),
        )

    def score(ctx: StepContext) -> float:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return share_not_no(by_turn([(v.turn, v.verdict) for v in verdicts], answered(ctx)), scale)

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The conversation scored {ctx.score} for relevancy on a 0 to {scale:g} scale
(the share of the assistant's answers relevant to their last {window_size} turns). Name the
turns whose answers went off topic, if any. Relevance is explained, not correctness.""",
                sentences="one or two",
            ),
            section(
                "verdicts", numbered([f"turn {v.turn}: {v.verdict}: {v.reason}" for v in verdicts])
            ),
        )

    return (
        create_scorer(
            id="conversation-relevancy-scorer",
            description="Share of the assistant's answers relevant to the recent turns",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
        )
        .analyze(
            PromptStep(
                "Judge each answer's relevance to its window of recent turns",
                verdicts_prompt,
                TurnRelevancyVerdicts,
                check=one_per_turn(answered),
                sketch=lambda ctx: TurnRelevancyVerdicts(
                    verdicts=[
                        TurnRelevancyVerdict(turn=turn, verdict="yes", reason=typical_text())
                        for turn in answered(ctx)
                    ]
                ),
            )
        )
        .generate_score(strictly(score, scale, strict))
        .generate_reason(reason_step(reason_prompt, 1.5))
    )
