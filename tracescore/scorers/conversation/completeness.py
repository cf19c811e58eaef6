"""Conversation completeness: the share of the user's intentions the conversation satisfied.

DeepEval's ``ConversationCompletenessMetric``
(https://deepeval.com/docs/metrics-conversation-completeness): the judge lists the distinct
intentions the user expressed across the turns, then decides for each whether the assistant
satisfied it; the score is satisfied intentions over intentions.
"""

from __future__ import annotations

from tracescore.scorers.base import Scorer, create_scorer
from tracescore.scorers.conversation.common import (
    conversation_of,
    is_no,
    share_not_no,
    strictly,
    transcript,
)
from tracescore.scorers.llm.common import (
    JudgeSpec,
    Wire,
    judge_instructions,
    judge_prompt,
    one_per_item,
    reason_step,
    reason_task,
)
from tracescore.scorers.llm.run_text import numbered, section
from tracescore.scorers.llm.typical_answers import judged, typical_text
from tracescore.scorers.steps import PromptStep, StepContext

VERSION = "3"
"""3 (issue 32, request budget): messages are shown whole unless the request would not fit the
judge's budget (no longer cut at 2,000 characters); then the longest are cut to fair shares,
each ending in a marker saying which characters were cut.

2 (issue 32): sections hold neutralised data; an intention without a verdict is asked for
again once; ``strict``."""

INSTRUCTIONS = judge_instructions(
    "You judge whether an AI assistant met its user's needs over a whole conversation of "
    "several turns. You read every turn: a need stated early can be met later, and an answer "
    "that only promises to help, or asks the user to wait, does not meet it."
)

INTENTIONS_TASK = """List the distinct intentions the user expressed across the whole
conversation: what the user wanted to get done or find out.
- Give the overall intention of a request, not its details: "wants to book a table for four on
  Friday", not one intention per detail.
- A user who asks for several separate things has several intentions: list each separately,
  never merge them into one.
- An intention the user withdrew or replaced later is not listed; list the replacement.
- Greetings, thanks and small talk are not intentions. A conversation without any request
  gives an empty list.

Example. Turns: user "Hi!"; user "Can you reset my password and update my billing address?";
user "Actually, forget the address." Intentions: ["reset the user's password"]"""

VERDICTS_TASK = """For each intention, in order, decide whether the assistant satisfied it by
the end of the conversation: "yes" when the conversation delivers what the user wanted, "no"
when it does not, with a one-sentence reason naming the turn that decided it.
- Judge what the assistant delivered: an answer given, a task reported as done, the information
  asked for. Acknowledging a request, promising to do it or asking the user to wait is not
  satisfying it ("no").
- A clarifying question is not satisfaction, unless the user's later answer lets the assistant
  deliver in a later turn.
- Correctness is not judged here, completion is: a delivered answer counts even if you doubt it.
- Give exactly one verdict per intention, in the order the intentions are listed; with no
  intentions listed, give an empty list.

Example. Intention: "reset the user's password". Assistant: "I'll look into it." -> no (only a
promise); assistant: "Done: a reset link was sent to your e-mail." -> yes"""


class UserIntentions(Wire):
    intentions: list[str]


class IntentionVerdict(Wire):
    verdict: str
    reason: str = ""


class IntentionVerdicts(Wire):
    verdicts: list[IntentionVerdict]


intention_count = one_per_item(
    lambda ctx: ctx.results["preprocess_step_result"].intentions,
    lambda answer: answer.verdicts,
    "intention",
)


def create_conversation_completeness_scorer(
    *, model: JudgeSpec, scale: float = 1.0, strict: bool = False
) -> Scorer:
    """Satisfied intentions / intentions × ``scale`` (a verdict other than "no" counts as
    satisfied, as in DeepEval); a conversation without any intention scores ``scale``, as in
    DeepEval: nothing was asked, nothing was left undone."""

    def intentions_prompt(ctx: StepContext) -> str:
        return judge_prompt(INTENTIONS_TASK, transcript(conversation_of(ctx)))

    def verdicts_prompt(ctx: StepContext) -> str:
        intentions = ctx.results["preprocess_step_result"].intentions
        return judge_prompt(
            VERDICTS_TASK,
            transcript(conversation_of(ctx)),
            section("intentions", numbered(intentions), cut=False),
        )

    def score(ctx: StepContext) -> float:
        intentions = ctx.results["preprocess_step_result"].intentions
        verdicts = [v.verdict for v in ctx.results["analyze_step_result"].verdicts]
        if not intentions:
            return scale
        if len(verdicts) != len(intentions):
            raise ValueError(
                f"the judge gave {len(verdicts)} verdicts for {len(intentions)} intentions"
            )
        return share_not_no(verdicts, scale)

    def reason_prompt(ctx: StepContext) -> str:
        intentions = ctx.results["preprocess_step_result"].intentions
        verdicts = ctx.results["analyze_step_result"].verdicts
        return judge_prompt(
            reason_task(
                ctx.score,
                f"""The conversation scored {ctx.score} for completeness on a 0 to {scale:g}
scale (the share of the user's intentions the assistant satisfied). Name the intentions left
unsatisfied, if any; when the user expressed no intention, say so.""",
            ),
            section(
                "intentions",
                numbered(
                    [
                        f"{intention} -> {'not satisfied' if is_no(v.verdict) else 'satisfied'}: {v.reason}"
                        for intention, v in zip(intentions, verdicts, strict=False)
                    ]
                ),
            ),
        )

    return (
        create_scorer(
            id="conversation-completeness-scorer",
            description="Share of the user's intentions the conversation satisfied",
            judge=model,
            instructions=INSTRUCTIONS,
            version=VERSION,
        )
        .preprocess(
            PromptStep(
                "List the user's intentions across the conversation",
                intentions_prompt,
                UserIntentions,
                sketch=lambda ctx: UserIntentions(intentions=[typical_text(0.5)]),
            )
        )
        .analyze(
            PromptStep(
                "Judge whether each intention was satisfied",
                verdicts_prompt,
                IntentionVerdicts,
                check=lambda ctx, answer: (
                    intention_count(ctx, answer)
                    if ctx.results["preprocess_step_result"].intentions
                    else None  # nothing asked: the score is scale, whatever is answered
                ),
                sketch=lambda ctx: IntentionVerdicts(
                    verdicts=judged(
                        ctx.results["preprocess_step_result"].intentions,
                        lambda intention, reason: IntentionVerdict(verdict="yes", reason=reason),
                    )
                ),
            )
        )
        .generate_score(strictly(score, scale, strict))
        .generate_reason(reason_step(reason_prompt, 2.5))
    )
