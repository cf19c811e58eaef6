"""Conversations offline: runs grouped by conversation id, dataset items read as conversations,
and the score rows of the bindings that judge them.

Files are scored as the live pipeline scores them: a conversation's turns are its traces'
primary runs, oldest first, and a judge is shown the most recent ``max_turns`` of them with one
line standing for the rest, so a CI gate and production judge the same conversation alike.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from tracescore.conversations.turns import earlier_summary, turn_of
from tracescore.extract.content import awaits_tool_results
from tracescore.extract.conversation import Conversation, Turn
from tracescore.extract.model import AgentRun, RunInput, SystemMessage
from tracescore.pipeline.bindings import CompiledBinding, select_target
from tracescore.pipeline.config import WorkersConfig
from tracescore.pipeline.conversations import label_conversation_score
from tracescore.pipeline.scoring import Scoring
from tracescore.store.scores import StoredScore


def judges_conversations(binding: CompiledBinding) -> bool:
    """Whether a binding scores conversations (``--scorer`` gives conversation scorers that
    target, and a config file must)."""
    return binding.config.target == "conversation"


def by_conversation(runs: Iterable[AgentRun], max_turns: int) -> list[Conversation]:
    """The conversations the runs are turns of, in order of first appearance: one turn per trace
    (its outermost primary run), ordered by start time, cut to the most recent ``max_turns``.
    Runs of traces that name no conversation are left out, and so are a hand-written loop's
    steps that arrived as traces of their own
    (:func:`~tracescore.extract.content.awaits_tool_results`)."""
    traces: dict[str, list[AgentRun]] = {}
    for run in runs:
        if run.conversation_id:
            traces.setdefault(run.trace_id, []).append(run)
    turns: dict[str, list[Turn]] = {}
    for trace_runs in traces.values():
        for run in select_target(trace_runs, "trace"):
            if not awaits_tool_results(run):  # a loop's step: the trace that answers is the turn
                turns.setdefault(str(run.conversation_id), []).append(turn_of(run))
    return [
        recent_turns(conversation_id, found, max_turns) for conversation_id, found in turns.items()
    ]


def recent_turns(conversation_id: str, turns: Sequence[Turn], max_turns: int) -> Conversation:
    """A conversation of ``turns`` put in time order, keeping the last ``max_turns``."""
    ordered = sorted(
        turns, key=lambda turn: (turn.start_time is None, turn.start_time or datetime.min)
    )
    kept, earlier = ordered[-max_turns:], ordered[:-max_turns]
    last_run = kept[-1].run
    return Conversation(
        id=conversation_id,
        agent_name=last_run.agent_name if last_run else None,
        service_name=last_run.service_name if last_run else None,
        turns=kept,
        earlier_summary=earlier_summary(earlier),
        earlier_turns=len(earlier),
    )


def as_conversation(item: Any, *, index: int = 0) -> Conversation | None:
    """A dataset item read as a conversation, or None when it is not one.

    A conversation is a ``Conversation``, or a list of turns: ``Turn`` objects, ``{user,
    answer}`` dicts, or chat messages (``{role, content}``; each user message starts a turn, a
    system message gives every turn the agent's system prompt). Ids derive from the content, so
    the same item always gets the same ids.
    """
    if isinstance(item, Conversation):
        return item
    if not isinstance(item, list) or not item:
        return None
    digest = hashlib.sha256(orjson.dumps([index, item], default=str)).hexdigest()
    if all(isinstance(turn, Turn) for turn in item):
        return Conversation(id=digest[:32], turns=list(item))
    if not all(isinstance(entry, Mapping) for entry in item):
        return None
    if all("role" in entry for entry in item):
        exchanges, system = _exchanges(item)
    elif all("user" in entry or "answer" in entry for entry in item):
        exchanges, system = (
            [(str(e.get("user") or ""), str(e.get("answer") or "")) for e in item],
            None,
        )
    else:
        return None
    return Conversation(
        id=digest[:32],
        turns=[
            _turn(digest, number, user, answer, system)
            for number, (user, answer) in enumerate(exchanges)
        ],
    )


def _exchanges(messages: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[str, str]], str | None]:
    """``(user, answer)`` pairs of a chat message list, and its system prompt."""
    exchanges: list[tuple[str, str]] = []
    system = [str(m.get("content") or "") for m in messages if m["role"] == "system"]
    for message in messages:
        text = str(message.get("content") or "")
        if message["role"] == "user":
            exchanges.append((text, ""))
        elif message["role"] == "assistant" and exchanges:
            user, answer = exchanges[-1]
            exchanges[-1] = (user, f"{answer}\n{text}" if answer else text)
    return exchanges, "\n".join(system) or None


def _turn(digest: str, number: int, user: str, answer: str, system: str | None) -> Turn:
    trace_id, span_id = f"{digest[:28]}{number:04x}", f"{digest[32:44]}{number:04x}"
    run = AgentRun(
        trace_id=trace_id,
        span_id=span_id,
        primary=True,
        input=RunInput(system_messages=[SystemMessage(content=system)] if system else []),
    )
    return Turn(trace_id=trace_id, span_id=span_id, user=user, answer=answer, run=run)


def last_turn_run(conversation: Conversation) -> AgentRun:
    """The run a conversation's score hangs on, as the service's: its last turn's, or one
    standing for it (offline turns given without a run)."""
    last = conversation.turns[-1]
    return last.run or AgentRun(
        trace_id=last.trace_id,
        span_id=last.span_id,
        agent_name=conversation.agent_name,
        service_name=conversation.service_name,
        conversation_id=conversation.id,
        primary=True,
    )


async def score_conversation(
    conversation: Conversation, bindings: Sequence[CompiledBinding], scoring: Scoring
) -> list[StoredScore]:
    """The rows of every binding whose filter the conversation's last turn passes, scored by
    ``scoring`` and identified as the service identifies them (by conversation, binding and turn count)."""
    if not conversation.turns:
        return []
    anchor = last_turn_run(conversation)
    chosen = [binding for binding in bindings if binding.matches(anchor)]
    rows = await asyncio.gather(*(scoring.score(b, anchor, subject=conversation) for b in chosen))
    for binding, row in zip(chosen, rows, strict=True):
        label_conversation_score(row, conversation, binding)
    return list(rows)


async def score_conversations(
    conversations: Sequence[Conversation],
    bindings: Sequence[CompiledBinding],
    *,
    concurrency: int = 8,
    on_conversation: Callable[[int, list[StoredScore]], None] | None = None,
) -> list[list[StoredScore]]:
    """Score each conversation with the bindings, ``concurrency`` conversations at once; the
    rows per conversation, in order. ``on_conversation(index, rows)`` as each finishes."""
    slots = asyncio.Semaphore(concurrency)
    scoring = Scoring(bindings, WorkersConfig(concurrency=concurrency), timed=False)

    async def one(index: int, conversation: Conversation) -> list[StoredScore]:
        async with slots:
            rows = await score_conversation(conversation, bindings, scoring)
        if on_conversation is not None:
            on_conversation(index, rows)
        return rows

    return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(conversations))))
