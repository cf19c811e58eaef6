"""What a scorer judges: any run it is given, read once into Mastra's run shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from tracescore.extract.content import has_content
from tracescore.extract.conversation import Conversation
from tracescore.extract.model import AgentRun, ToolDefinition
from tracescore.extract.runs.answered import failure
from tracescore.scorers.lazy import lazy
from tracescore.scorers.utils import make_test_message


@dataclass
class ScorerRun:
    """What a scorer judges, in Mastra's run shape plus the typed run when there is one.

    ``input`` / ``output`` are the plain dicts Mastra's utils walk (``ScorerRunInputForAgent`` and
    a ``MastraDBMessage`` list), so every ported algorithm reads exactly what Mastra reads;
    ``agent_run`` keeps the typed model for scorers that want more (timings, usage, spans).
    """

    input: Any = None
    output: Any = None
    ground_truth: Any = None
    agent_run: AgentRun | None = None
    conversation: Conversation | None = None
    """The typed turns when a conversation is scored; ``input`` / ``output`` then hold its user
    messages and its answers, one per turn, so run scorers read a conversation as one long run."""
    context: list[str] = field(default_factory=list)
    tools: list[ToolDefinition] = field(default_factory=list)
    run_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    error: str | None = None
    """Why the run itself failed (its agent span ended in error), or None when it did not.

    Kept apart from the output because a failed run's output is often empty or partial: scorers
    that read the answer must not mistake "no answer" for a poor one (see :attr:`Scorer.needs_answer`).
    """

    @lazy
    def empty(self) -> bool:
        """A rebuilt run that carries no content at all (see :func:`without_content`); worked
        out once, as every binding scoring the run asks."""
        return self.agent_run is not None and not has_content(self.agent_run)

    @classmethod
    def of(cls, run: Scorable) -> ScorerRun:
        """Accept an extracted ``AgentRun``, a ``Conversation``, a Mastra-shaped run dict, or a
        ``ScorerRun``.

        A dict run uses Mastra's keys (``input``, ``output``, ``groundTruth``, ``runId``,
        ``traceId``, ``spanId``) or their snake_case forms, plus optional ``context`` (strings),
        ``tools`` (tool definitions) and ``error`` (why the run failed, when it did).
        """
        if isinstance(run, ScorerRun):
            return run
        if isinstance(run, Conversation):
            return _conversation_run(cls, run)
        if isinstance(run, AgentRun):
            return cls(
                input=run.mastra_input(),
                output=run.mastra_output(),
                ground_truth=run.ground_truth,
                agent_run=run,
                context=[doc.content for doc in run.context],
                tools=list(run.tools),
                run_id=run.span_id,
                trace_id=run.trace_id,
                span_id=run.span_id,
                error=failure(run.status, run.error),
            )
        if isinstance(run, Mapping):
            context, tools = run.get("context"), run.get("tools")
            return cls(
                input=run.get("input"),
                output=run.get("output"),
                ground_truth=run["groundTruth"]
                if "groundTruth" in run
                else run.get("ground_truth"),
                context=[str(text) for text in context] if context else [],
                tools=[
                    tool
                    if isinstance(tool, ToolDefinition)
                    else ToolDefinition.model_validate(tool)
                    for tool in tools
                ]
                if tools
                else [],
                run_id=run["runId"] if "runId" in run else run.get("run_id"),
                trace_id=run["traceId"] if "traceId" in run else run.get("trace_id"),
                span_id=run["spanId"] if "spanId" in run else run.get("span_id"),
                error=str(run["error"]) if run.get("error") else None,
            )
        raise TypeError(
            f"cannot score a {type(run).__name__}: expected AgentRun, Conversation, dict or ScorerRun"
        )


Scorable: TypeAlias = "AgentRun | Conversation | Mapping[str, Any] | ScorerRun"
"""What ``Scorer.run`` accepts."""


def _conversation_run(cls: type[ScorerRun], conversation: Conversation) -> ScorerRun:
    """A conversation in Mastra's run shape: every turn's user message as input, every answer as
    output (what Mastra's code scorers would compare for a whole thread), the system prompt of
    the latest turn that had one, and the last turn's ids: a conversation's score belongs to
    where it ended."""
    turns = conversation.turns
    user = [make_test_message(t.user, "user", id=f"{t.span_id}-user") for t in turns if t.user]
    answers = [
        make_test_message(t.answer, "assistant", id=f"{t.span_id}-answer")
        for t in turns
        if t.answer
    ]
    system = next(
        (
            t.run.input.system_messages
            for t in reversed(turns)
            if t.run and t.run.input.system_messages
        ),
        [],
    )
    last = conversation.last_turn
    return cls(
        input={
            "inputMessages": user,
            "rememberedMessages": [],
            "systemMessages": [m.model_dump(mode="json", by_alias=True) for m in system],
            "taggedSystemMessages": {},
        },
        output=answers,
        conversation=conversation,
        run_id=conversation.id,
        trace_id=last.trace_id if last else None,
        span_id=last.span_id if last else None,
    )
