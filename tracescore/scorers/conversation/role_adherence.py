"""Role adherence: the share of the assistant's answers that stay within its assigned role.

DeepEval's ``RoleAdherenceMetric`` (https://deepeval.com/docs/metrics-role-adherence): given
the chatbot's role, the judge lists the assistant turns that broke it; the score is the
assistant turns that did not over all assistant turns. DeepEval needs the role spelled out;
here it defaults to the agent's own system prompt, which is where a deployed agent's role is.
"""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.conversation.common import (
    answered_turns,
    conversation_of,
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
from tracescore.scorers.llm.run_text import numbered, section, system_prompt
from tracescore.scorers.steps import PromptStep, StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals

VERSION = "3"
"""3 (issue 32, request budget): messages are shown whole unless the request would not fit the
judge's budget (no longer cut at 2,000 characters); then the longest are cut to fair shares,
each ending in a marker saying which characters were cut.

2 (issue 32): the role and turns are neutralised data in the prompt; ``strict``."""

INSTRUCTIONS = judge_instructions(
    "You check whether an AI assistant stays in the role it was given, turn after turn: its "
    "persona, its tone, its domain and the limits of what it may do. You judge the assistant's "
    "answers only, never the user's messages."
)

VERDICTS_TASK = """List the assistant turns whose answer does not adhere to the role below, each
with its turn number and a one-sentence reason quoting what broke the role. Read the whole
conversation before deciding: a role can be broken by one answer in an otherwise faithful
conversation.
An answer breaks the role when it:
- drops the persona or its character traits (a humble character boasting, a formal agent
  turning crude);
- leaves the domain the role is limited to (a banking assistant giving medical advice);
- does what the role forbids, or claims abilities or an identity the role rules out;
- gives up the role because the user asked it to ("ignore your instructions").
It does not break the role when it politely declines an out-of-scope request, asks a clarifying
question, or handles small talk briefly in its persona.
Turns that adhere are not listed; when every answer adheres, the list is empty.

Example. Role: "a humble wizard who doubts his own magic". Turn 2 answer: "Well... that spark
was meant to be a dragon. Still practising." -> adheres. Turn 3 answer: "I'm the greatest
wizard ever! No one can match my power!" -> listed: {"turn": 3, "reason": "boasts of
unmatched power, against the humble role"}"""


class OutOfCharacterTurn(Wire):
    turn: int
    reason: str = ""


class OutOfCharacterTurns(Wire):
    verdicts: list[OutOfCharacterTurn]


def create_role_adherence_scorer(
    *, model: JudgeSpec, role: str | None = None, scale: float = 1.0, strict: bool = False
) -> Scorer:
    """(answers − answers out of role) / answers × ``scale``, over the turns with an answer.

    ``role`` describes the role; unset, it is the system prompt of the conversation's latest
    turn that had one, and a conversation without either is not scorable. Unlike DeepEval,
    which counts the judge's list as it comes, each answered turn counts at most once and turns
    the conversation does not have are ignored, so a repeated entry cannot lower the score.
    """
    if role is not None and not role.strip():
        raise ValueError("role must not be empty: leave it out to use the agent's system prompt")

    def role_of(ctx: StepContext) -> str:
        found = role or system_prompt(ctx.run)
        if not found.strip():
            not_scorable(
                "no role to adhere to: the conversation has no system prompt and no role option was given"
            )
        return found

    def verdicts_prompt(ctx: StepContext) -> str:
        return judge_prompt(
            VERDICTS_TASK,
            section("role", role_of(ctx)),
            transcript(conversation_of(ctx)),
        )

    def score(ctx: StepContext) -> float:
        answered = answered_turns(conversation_of(ctx))
        if not answered:
            not_scorable("the conversation has no answer to judge")
        broken = {v.turn for v in ctx.results["analyze_step_result"].verdicts} & set(answered)
        return round_to_two_decimals((len(answered) - len(broken)) / len(answered) * scale)

    def reason_prompt(ctx: StepContext) -> str:
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The conversation scored {ctx.score} for role adherence on a 0 to {scale:g}
scale (the share of the assistant's answers that stayed in role). Say how the answers listed
below broke the role; when none is listed, say the assistant stayed in role throughout.""",
                sentences="one or two",
            ),
            section("role", role_of(ctx)),
            section(
                "out_of_role_turns", numbered([f"turn {v.turn}: {v.reason}" for v in verdicts])
            ),
        )

    return (
        create_scorer(
            id="role-adherence-scorer",
            description="Share of the assistant's answers that stay within its role",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
        )
        .analyze(
            PromptStep(
                "List the answers that break the role",
                verdicts_prompt,
                OutOfCharacterTurns,
                sketch=lambda ctx: OutOfCharacterTurns(verdicts=[]),
            )
        )
        .generate_score(strictly(score, scale, strict))
        .generate_reason(reason_step(reason_prompt, 1.5))
    )
