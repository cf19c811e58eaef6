"""What every conversation scorer shares: the conversation to judge, its transcript, its scores."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tracescore.extract.conversation import Conversation, Turn
from tracescore.scorers.llm.run_text import section, untrusted
from tracescore.scorers.material import Material, joined
from tracescore.scorers.steps import StepContext
from tracescore.scorers.unscorable import not_scorable
from tracescore.scorers.utils import round_to_two_decimals


def conversation_of(ctx: StepContext) -> Conversation:
    """The conversation being scored; a lone run is not scorable by a conversation scorer."""
    conversation = ctx.run.conversation
    if conversation is None:
        not_scorable(
            "a conversation scorer needs a conversation: bind it with target: conversation"
        )
    if not conversation.turns:
        not_scorable("the conversation has no turns")
    return conversation


def answered_turns(conversation: Conversation) -> list[int]:
    """The numbers (from 1) of the turns with an answer: the assistant turns there are to judge."""
    return [number for number, turn in enumerate(conversation.turns, 1) if turn.answer.strip()]


def transcript(conversation: Conversation) -> Material:
    """The conversation as the judge reads it: the summary of cut turns, then each turn numbered.
    Every message is shown whole unless the request would not fit the judge's budget; then the
    longest are cut to fair shares, each cut marked (:mod:`tracescore.scorers.material`)."""
    blocks = []
    if conversation.earlier_summary:
        blocks.append(section("earlier_turns_summary", conversation.earlier_summary))
    blocks.append(
        section(
            "conversation",
            joined(
                "\n\n",
                (_turn_text(number, turn) for number, turn in enumerate(conversation.turns, 1)),
            ),
        )
    )
    return joined("\n\n", blocks)


def _turn_text(number: int, turn: Turn) -> Material:
    user = untrusted(turn.user) if turn.user.strip() else "(no message)"
    answer = untrusted(turn.answer) if turn.answer.strip() else "(no answer)"
    return Material(f"Turn {number}\nuser: ", user, "\nassistant: ", answer)


def turn_list(numbers: Iterable[int]) -> str:
    return ", ".join(str(number) for number in numbers)


def is_no(verdict: str) -> bool:
    return verdict.strip().lower() == "no"


def share_not_no(verdicts: Sequence[str], scale: float) -> float:
    """``round2(verdicts other than "no" / verdicts × scale)``: DeepEval counts every verdict but
    an explicit "no" as a pass (completeness, relevancy), so only a stated failure costs."""
    return round_to_two_decimals(sum(not is_no(v) for v in verdicts) / len(verdicts) * scale)


def one_per_turn(
    expected: Callable[[StepContext], Sequence[int]],
) -> Callable[[StepContext, Any], str | None]:
    """A step check: the answer's ``verdicts`` name every turn it was asked about (the judge is
    told which are missing once, before :func:`by_turn` would fail the score)."""

    def check(ctx: StepContext, output: Any) -> str | None:
        asked = expected(ctx)
        given = {verdict.turn for verdict in output.verdicts}
        missing = [number for number in asked if number not in given]
        if not missing:
            return None
        return (
            f"it gives no verdict for turn {turn_list(missing)}: give one verdict for each of "
            f"turns {turn_list(asked)}"
        )

    return check


def strictly(
    score: Callable[[StepContext], float], scale: float, strict: bool
) -> Callable[[StepContext], float]:
    """DeepEval's ``strict_mode``: ``scale`` for a perfect conversation, 0 for any other (its
    threshold becomes 1), so one forgotten fact or off-topic answer fails the conversation."""
    if not strict:
        return score
    return lambda ctx: scale if score(ctx) >= scale else 0.0


def by_turn(verdicts: Sequence[tuple[int, str]], expected: Sequence[int]) -> list[str]:
    """The verdict for each expected turn, in order, from ``(turn, verdict)`` pairs.

    A judge answering for other turns, or twice for one, is held to the turns it was asked
    about (first answer wins); a turn left without a verdict is an error, since scoring the
    rest would silently change the denominator.
    """
    found: dict[int, str] = {}
    for turn, verdict in verdicts:
        found.setdefault(turn, verdict)
    missing = [number for number in expected if number not in found]
    if missing:
        raise ValueError(f"the judge gave no verdict for turn {turn_list(missing)}")
    return [found[number] for number in expected]
