"""What a judge sees of a run: system prompt, user turn, trajectory and final answer, as prompt text.

Mastra's judges see only the user's first message and the last assistant text. An agent's
answer is often only judgeable next to what it did to get there — the tool results it quoted,
the reasoning it followed — so the judge scorers here show the whole run: every reasoning part
and every tool call with its arguments and result (or error), in the order they happened. For
an extracted ``AgentRun`` the output is its full trajectory (one assistant message whose parts
are the run's steps), so this reads the trajectory whatever convention the spans followed.
Everything taken from the run is a :class:`~tracescore.scorers.material.Value`: shown whole, and
cut (fairly, with a marker the judge's system prompt explains) only when a request would not fit
its judge's budget; the context (retrieved documents, tool results) is judged in parts by the
scorers whose verdicts are per item (:mod:`.fit`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracescore.scorers.material import Material, Value, joined
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.utils import (
    get_assistant_message,
    get_combined_system_prompt,
    get_user_message,
    merge_tool_invocations,
)


def user_text(run: ScorerRun) -> str:
    return get_user_message(run.input) or ""


def response_text(run: ScorerRun) -> str:
    return get_assistant_message(run.output) or ""


def system_prompt(run: ScorerRun) -> str:
    return get_combined_system_prompt(run.input) if isinstance(run.input, Mapping) else ""


def as_text(value: Any) -> str:
    """A value of the run (a tool's arguments or result) as the judge reads it: JSON unless text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def listed(text: str) -> str:
    """Untrusted text shown inside a list: neutralised, its later lines indented."""
    return indented(neutralised(text))


def untrusted(value: Any) -> Value:
    """A value of the run inside a list (a step, a turn, an item): cut to the judge's budget
    only when the request would not fit otherwise (:func:`tracescore.scorers.material.fit_prompt`)."""
    return Value(as_text(value), listed)


def _invocation(inv: Mapping[str, Any]) -> Material:
    line = (
        f"tool call {listed(str(inv.get('toolName')))} with arguments ",
        untrusted(inv.get("args") or {}),
    )
    state = inv.get("state")
    if state == "result" and "result" in inv:
        return Material(*line, "\n       result: ", untrusted(inv["result"]))
    if state == "output-error" or inv.get("isError"):
        failure = inv.get("errorText") or inv.get("result") or "error"
        return Material(*line, "\n       failed: ", untrusted(failure))
    return Material(*line, f"\n       (no result: {listed(str(state))})")


def _reasoning(part: Mapping[str, Any]) -> str:
    details = part.get("details")
    if isinstance(details, list):
        return "".join(str(d.get("text") or "") for d in details if d.get("type") == "text")
    return part.get("reasoning") or ""


def _message_steps(message: Mapping[str, Any], final_answer: str) -> Iterable[Material]:
    content = message.get("content")
    if not isinstance(content, Mapping):
        return
    parts = content.get("parts") or []
    # ``content.reasoning`` joins the reasoning parts (Mastra's legacy field): shown only for a
    # message without them, so each reasoning step appears once, in its place.
    if content.get("reasoning") and not any(p.get("type") == "reasoning" for p in parts):
        yield Material("reasoning: ", untrusted(content["reasoning"]))
    seen_calls: set[Any] = set()
    for part in parts:
        kind = part.get("type")
        if kind == "reasoning" and (text := _reasoning(part)):
            yield Material("reasoning: ", untrusted(text))
        elif kind == "tool-invocation" and part.get("toolInvocation"):
            seen_calls.add(part["toolInvocation"].get("toolCallId"))
            yield _invocation(part["toolInvocation"])
        elif kind == "text" and part.get("text") and part["text"].strip() != final_answer.strip():
            yield Material("said: ", untrusted(part["text"]))
    for inv in merge_tool_invocations(message):
        if inv.get("toolCallId") not in seen_calls:
            yield _invocation(inv)


def trajectory(run: ScorerRun) -> list[Material]:
    """The run's steps before its final answer: reasoning, tool calls and results, in order."""
    if not isinstance(run.output, Sequence) or isinstance(run.output, str):
        return []
    final_answer = response_text(run)
    return [
        step
        for message in run.output
        if isinstance(message, Mapping) and message.get("role") in ("assistant", "tool")
        for step in _message_steps(message, final_answer)
    ]


def tool_results(run: ScorerRun) -> list[str]:
    """The result of every finished tool call, from message parts and legacy lists alike, whole:
    as context they are judged part by part when long (:mod:`.fit`), never cut unseen."""
    if not isinstance(run.output, Sequence) or isinstance(run.output, str):
        return []
    return [
        as_text(inv["result"])
        for message in run.output
        if isinstance(message, Mapping)
        for inv in merge_tool_invocations(message)
        if inv.get("state") == "result" and "result" in inv
    ]


def default_context(run: ScorerRun) -> list[str]:
    """The grounding the run had: its retrieved documents and tool results."""
    return list(run.context) or tool_results(run)


_TAG_OPENING = re.compile(
    r"(?:<|\uff1c|\ufe64|&lt;?|&#0*60;?|&#x0*3c;?|\\u003c|\\x3c|%3c)(?=\s*[/!?]?\s*[A-Za-z_])",
    re.IGNORECASE,
)
NEUTRAL_BRACKET = "\u2039"
"""What replaces a ``<`` that opens a tag-like word in untrusted text (‹, a single angle
quotation mark): the text still reads the same, but nothing in it can close or open a section."""


def neutralised(text: str) -> str:
    """Untrusted text made unable to end its section or start another: every ``<`` opening
    something tag-like (``</final_answer>``, ``<system>``, ``<!--``), also written full-width or
    escaped (``&lt;``, ``&#60;``, ``\\u003c``, ``%3C``), becomes ``‹``. Nothing else changes."""
    return _TAG_OPENING.sub(NEUTRAL_BRACKET, text)


def section(tag: str, body: str, *, cut: bool = True) -> Material:
    """Material for the judge between ``<tag>`` and ``</tag>``: the judge's instructions say
    sections hold data, never instructions, and the body cannot close its section early. The
    body is cut to the judge's budget when the request would not fit otherwise, unless ``cut``
    is false (a list the judge answers item by item must be shown whole)."""
    if isinstance(body, Material):  # already neutralised, its values known
        inner: tuple[str | Value, ...] = (str(body),) if not cut else (body,)
    else:
        inner = (Value(body, neutralised),) if cut else (neutralised(body),)
    return Material(f"<{tag}>\n", *inner, f"\n</{tag}>")


def indented(text: str) -> str:
    """A multi-line value inside a list: its later lines indented, so a line of it can never
    pass for the list's next item ("[3] ...", "4. ...", "Turn 2")."""
    return text.replace("\n", "\n    ")


def numbered(items: Sequence[str], start: int = 0) -> Material:
    if not items:
        return Material("(none)")
    return joined(
        "\n", (Material(f"[{index}] ", untrusted(item)) for index, item in enumerate(items, start))
    )


def describe_run(run: ScorerRun, *, system: bool = True, steps: bool = True) -> Material:
    """The run as the judge reads it: system prompt, user turn, trajectory, final answer."""
    parts = []
    if system and (prompt := system_prompt(run)):
        parts.append(section("system_prompt", prompt))
    parts.append(section("user", user_text(run) or "(empty)"))
    if steps and (lines := trajectory(run)):
        parts.append(
            section(
                "agent_steps",
                joined(
                    "\n", (Material(f"{number}. ", line) for number, line in enumerate(lines, 1))
                ),
            )
        )
    parts.append(section("final_answer", response_text(run) or "(empty)"))
    return joined("\n\n", parts)
