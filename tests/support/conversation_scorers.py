"""A custom conversation scorer that tests bind with ``module:attr`` and ``target: conversation``,
as a user would bind their own: it reads the typed turns."""

from __future__ import annotations

import asyncio

from tracescore.scorers.base import create_scorer, scorer
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.steps import StepContext

SCORED: list[str] = []
"""The conversations ``turn_order`` scored, in order (tests of exactly-once read it)."""


@scorer(
    id="turn-order",
    description="the number of turns; the reason lists what the user said, in order",
)
def turn_order(run: ScorerRun) -> tuple[float, str]:
    conversation = run.conversation
    if conversation is None:
        return 0.0, "not a conversation"
    SCORED.append(conversation.id)
    said = " | ".join(turn.user for turn in conversation.turns)
    rebuilt = sum(turn.run is not None for turn in conversation.turns)
    earlier = f" [{conversation.earlier_summary}]" if conversation.earlier_summary else ""
    return float(len(conversation.turns)), f"{said} ({rebuilt} rebuilt){earlier}"


async def _slow_for_mastra(ctx: StepContext) -> float:
    conversation = ctx.run.conversation
    if conversation is not None and conversation.id == "thread-mastra-ada":
        await asyncio.sleep(30.0)
    return 1.0


slow_for_mastra = create_scorer(
    id="slow-for-mastra",
    description="takes 30 s on the Mastra capture's conversation, no time on others",
).generate_score(_slow_for_mastra)
