"""When a scorer cannot judge a run: a step declares it (:func:`not_scorable`), or the run failed
before answering, carries no content or is a loop's intermediate step, found before any step
runs.
"""

from __future__ import annotations

from typing import NoReturn

from tracescore.extract.content import NO_CONTENT_REASON, awaits_tool_results
from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.utils import get_assistant_message


class NotScorable(Exception):
    """Raised by a step (via :func:`not_scorable`) when the run cannot be judged by this scorer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def not_scorable(reason: str) -> NoReturn:
    """Stop the scorer: the run is not scorable (Mastra's ``notScorable(reason)``)."""
    raise NotScorable(reason)


def failed_without_answer(run: ScorerRun) -> str | None:
    """The not-scorable reason for a run that failed before giving an answer, else None.

    A run whose agent ended in error with no final answer has nothing an answer-reading scorer
    could judge: scoring its empty output would feed quality charts with numbers that describe
    nothing (tone 1.0, coverage 0). A failed run that still answered is judged as usual.
    """
    if run.error is None or (get_assistant_message(run.output) or "").strip():
        return None
    return f"{FAILED_RUN_REASON}{run.error}"


def without_content(run: ScorerRun) -> str | None:
    """The not-scorable reason for a rebuilt run that carries no content at all, else None.

    A run whose spans held only names and ids (content capture off) has no input, answer or
    tool arguments to judge: every code scorer would compare two empty texts and give 1.0, a
    judge would be paid to read nothing. Only rebuilt runs are checked: a run given as a dict
    (Mastra's shape, a dataset row) is scored as given, empty strings included.
    """
    return NO_CONTENT_REASON if run.empty else None


INTERMEDIATE_STEP_REASON = (
    "the run is an intermediate step of an agent loop: the model answered only with tool calls, "
    "whose results it was sent in a later call, so there is no answer to judge (the loop's calls "
    "arrived as separate traces; its last call holds the answer)"
)


def intermediate_step(run: ScorerRun) -> str | None:
    """The not-scorable reason for a rebuilt run whose output is only tool calls still waiting
    for their results, else None.

    A hand-written loop whose calls arrive as separate traces (a client instrumentation that
    starts a trace per request) gives a run per call; a call that only asked for tools is a
    step, not an answer. Scored as one it read as a blank answer: completeness and similarity
    0, tone 1, dragging every average. A run that answered in text, or whose calls all have
    results (a whole agent run), is judged as usual.
    """
    rebuilt = run.agent_run
    return (
        INTERMEDIATE_STEP_REASON if rebuilt is not None and awaits_tool_results(rebuilt) else None
    )


def read_in_part(run: ScorerRun) -> str | None:
    """The not-scorable reason for a rebuilt run that a read's limit may have shortened
    (``AgentRun.trace_cut``), else None.

    Its later steps, tool results or answer may be among the spans left out: scored, a
    grounded answer would read as invented and a complete one as cut short. Every scorer
    leaves it, saying what was read and which key reads more."""
    rebuilt = run.agent_run
    if rebuilt is None or rebuilt.trace_cut is None:
        return None
    return f"the run was rebuilt from part of its trace: {rebuilt.trace_cut}"


def unscorable_reason(run: ScorerRun) -> str | None:
    """Why an answer-reading scorer cannot judge the run before any step runs: it failed
    before answering (:func:`failed_without_answer`), carries no content
    (:func:`without_content`) or is a loop's intermediate step (:func:`intermediate_step`);
    None when it can be judged."""
    if run.error is not None and (reason := failed_without_answer(run)):
        return reason
    return without_content(run) or intermediate_step(run)
