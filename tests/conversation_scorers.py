"""A custom conversation scorer that tests bind with ``module:attr`` and ``target: conversation``,
as a user would bind their own: it reads the typed turns."""

from __future__ import annotations

from tracescore.scorers.base import ScorerRun, scorer


@scorer(id="turn-order", description="the number of turns; the reason lists what the user said, in order")
def turn_order(run: ScorerRun) -> tuple[float, str]:
    conversation = run.conversation
    if conversation is None:
        return 0.0, "not a conversation"
    said = " | ".join(turn.user for turn in conversation.turns)
    rebuilt = sum(turn.run is not None for turn in conversation.turns)
    earlier = f" [{conversation.earlier_summary}]" if conversation.earlier_summary else ""
    return float(len(conversation.turns)), f"{said} ({rebuilt} rebuilt){earlier}"
