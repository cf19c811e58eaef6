"""A held-out set of agent runs for the ``consistency`` scorer (issue 47), written by hand apart
from the tuning stream (``consistency_stream``): other agents (flight status, stock quotes,
banking, restaurant bookings, HR, parcel tracking, IT tickets, subscriptions, hotels), other
tool fields and other wordings, some in Spanish, French and German. Not for tuning: the checks
are measured on it, never adjusted to one of its runs.

Each run in ``tests/fixtures/consistency/heldout_runs.json`` has its ``kind`` (a bad kind of
``consistency_stream.BAD_KINDS`` or a good one of ``GOOD_KINDS``), the question, the system
prompt, its tool calls (``result``, or ``error`` for a failed call), the answer and optionally
the model's ``finish_reason``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.support.consistency_stream import BAD_KINDS
from tracescore.scorers.base import Scorer
from tracescore.scorers.utils import make_agent_run, make_test_message, make_tool_invocation

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "consistency" / "heldout_runs.json"


def mastra_run(
    question: str,
    answer: str,
    tools: Sequence[Any] = (),
    *,
    system: str = "",
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A Mastra-shaped run: the question, its tool calls (``{"name", "args", "result"}`` or with
    ``"error"`` for a failed call) and the answer."""
    invocations = [
        make_tool_invocation(
            tool_call_id=f"call-{number}",
            tool_name=call["name"],
            args=call["args"],
            result=call.get("result", call.get("error")),
            state="output-error" if "error" in call else "result",
            is_error=True if "error" in call else None,
        )
        for number, call in enumerate(tools)
    ]
    parts: list[dict[str, Any]] = [
        {"type": "tool-invocation", "toolInvocation": invocation} for invocation in invocations
    ]
    parts.append({"type": "text", "text": answer})
    message = make_test_message(answer, "assistant", id="answer", parts=parts)
    if finish_reason:
        message["content"]["metadata"] = {"finish_reason": finish_reason}
    return make_agent_run(
        input_messages=[make_test_message(question)],
        system_messages=[{"role": "system", "content": system}] if system else [],
        output=[message],
    )


@dataclass(frozen=True)
class HeldOutRun:
    id: str
    kind: str
    run: dict[str, Any]

    @property
    def bad(self) -> bool:
        return self.kind in BAD_KINDS


def runs() -> list[HeldOutRun]:
    """The held-out runs, in the fixture's order."""
    return [
        HeldOutRun(
            entry["id"],
            entry["kind"],
            mastra_run(
                entry["question"],
                entry["answer"],
                entry["tools"],
                system=entry["system"],
                finish_reason=entry.get("finish_reason"),
            ),
        )
        for entry in orjson.loads(FIXTURE.read_bytes())
    ]


@dataclass
class Tally:
    """How many runs of each kind there were and how many the scorer flagged (score below 1)."""

    seen: Counter[str]
    flagged: Counter[str]
    missed: list[str]
    """Ids of the bad runs not flagged and of the good runs flagged."""

    @property
    def recall(self) -> float:
        bad = sum(self.seen[kind] for kind in BAD_KINDS)
        return sum(self.flagged[kind] for kind in BAD_KINDS) / bad

    @property
    def good_flagged(self) -> float:
        good = sum(count for kind, count in self.seen.items() if kind not in BAD_KINDS)
        flagged = sum(count for kind, count in self.flagged.items() if kind not in BAD_KINDS)
        return flagged / good

    @property
    def precision(self) -> float:
        flagged = sum(self.flagged.values())
        return sum(self.flagged[kind] for kind in BAD_KINDS) / flagged if flagged else 1.0


def tally(scorer: Scorer, held: Sequence[HeldOutRun]) -> Tally:
    """``scorer``'s flags on ``held``, per kind."""
    result = Tally(Counter(), Counter(), [])
    for entry in held:
        score = scorer.run_sync(entry.run)
        flagged = score.score is not None and score.score < 1
        result.seen[entry.kind] += 1
        result.flagged[entry.kind] += flagged
        if flagged != entry.bad:
            result.missed.append(f"{entry.id} {entry.kind}: {score.label} {score.reason}")
    return result
