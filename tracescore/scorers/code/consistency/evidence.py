"""What a run's answer can be checked against: the request, the history, the system prompt, the
tool calls with their arguments and results, the context, and the answer with how it ended.

Read from the run's Mastra-shaped dicts (what every scorer reads), so a run rebuilt from spans
and a Mastra-shaped JSON run are checked alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeGuard

import orjson

from tracescore.scorers.lazy import lazy
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.scorers.utils import (
    effective_role,
    get_assistant_message,
    get_combined_system_prompt,
    get_text_content,
    merge_tool_invocations,
)

_LETTERS = re.compile(r"[^\W\d_]+")
_FAILED_RESULT_KEYS = frozenset({"error", "errors", "error_message", "errormessage", "exception"})
"""A tool result object with one of these keys (and a value) reports a failure."""


class ToolCall(NamedTuple):
    """One tool call: what it was asked, what it answered, whether it failed (a tuple: built for
    every call of every run, and a frozen dataclass takes three times as long to build)."""

    name: str
    args: Any
    result: Any
    failed: bool
    error: str | None
    arg_fields: list[tuple[str, Any]]
    """``(field, value)`` of every scalar of the arguments (:func:`leaves`), read once: the
    value checks go over them several times."""
    fields: list[tuple[str, Any]]
    """The same of the result (of the error text, for a failed call)."""

    @property
    def args_text(self) -> str:
        return _as_text(self.args)

    @property
    def result_text(self) -> str:
        return _as_text(self.result) if not self.failed else (self.error or _as_text(self.result))


@dataclass
class Evidence:
    """One run's answer and everything it may rely on."""

    answer: str
    question: str
    """The user's last message: what the answer answers."""
    user_texts: list[str] = field(default_factory=list)
    """Every message of the request and its history (the user's own numbers are evidence)."""
    system: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    finish_reason: str | None = None

    @lazy
    def failed_calls(self) -> list[ToolCall]:
        """Failed calls no later call of the same tool made good (a retry that worked)."""
        failed = []
        for position, call in enumerate(self.calls):
            if call.failed and not any(
                later.name == call.name and not later.failed for later in self.calls[position + 1 :]
            ):
                failed.append(call)
        return failed

    @lazy
    def served(self) -> bool:
        """Some tool answered with a result: the run had what it needed to answer."""
        return any(not call.failed and call.result not in (None, "", [], {}) for call in self.calls)

    @lazy
    def answer_lower(self) -> str:
        """The answer lowercased, for the patterns that read it case-insensitively (cheaper
        than asking the pattern to ignore case)."""
        return self.answer.lower()

    @lazy
    def answer_words(self) -> frozenset[str]:
        """The answer's words, lowercased: looked up by several checks before they run a
        pattern over the answer (most answers hold no word that pattern needs)."""
        return frozenset(_LETTERS.findall(self.answer_lower))

    @lazy
    def request_text(self) -> str:
        return "\n".join(self.user_texts)

    @lazy
    def tool_text(self) -> str:
        """Every tool call's arguments and result, as text."""
        return "\n".join(f"{call.name} {call.args_text} {call.result_text}" for call in self.calls)

    def texts(self) -> Iterator[str]:
        """Every piece of evidence, system prompt last (often long, and shared by many runs)."""
        yield from self.user_texts
        yield self.tool_text
        yield from self.context
        yield self.system


def evidence_of(run: ScorerRun) -> Evidence:
    """The run's answer and evidence, from its Mastra-shaped input and output."""
    run_input = run.input if _is_mapping(run.input) else {}
    output = run.output if isinstance(run.output, list) else []
    messages = [
        message
        for key in ("rememberedMessages", "inputMessages")
        for message in run_input.get(key) or []
        if _is_mapping(message)
    ]
    texts = [get_text_content(message) for message in messages]  # each read once
    user_texts = [text for text in texts if text]
    question = next(
        (
            text
            for message, text in zip(reversed(messages), reversed(texts), strict=True)
            if text and effective_role(message) == "user"
        ),
        "",
    )
    if not messages and isinstance(run.input, str):
        question, user_texts = run.input, [run.input]
    calls = [
        _tool_call(invocation)
        for message in [*messages, *output]
        for invocation in merge_tool_invocations(message)
        if _is_mapping(invocation)
    ]
    return Evidence(
        answer=get_assistant_message(run.output) or "",
        question=question,
        user_texts=user_texts,
        system=get_combined_system_prompt(run_input),
        calls=calls,
        context=_context(run),
        finish_reason=_finish_reason(output),
    )


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, a plain dict told without the ABC check."""
    return type(value) is dict or isinstance(value, Mapping)


def _context(run: ScorerRun) -> list[str]:
    """The retrieved and provided documents (tool results are read from the calls themselves,
    where what each call was asked is known)."""
    if run.agent_run is None:
        return list(run.context)
    return [doc.content for doc in run.agent_run.context if doc.kind != "tool_result"]


def _tool_call(invocation: Mapping[str, Any]) -> ToolCall:
    get = invocation.get
    result = get("result")
    # A result sent as JSON text is parsed once, for the failure test and for its fields.
    parsed = _parsed(result) if isinstance(result, str) else result
    error = get("errorText")
    failed = bool(
        get("isError")
        or get("state") in ("output-error", "output-denied")
        or _reports_failure(parsed)
    )
    if failed and not error:
        error = _as_text(result) or "the call failed"
    args = get("args")
    error = str(error) if error else None
    return ToolCall(
        str(get("toolName") or "tool"),
        args,
        result,
        failed,
        error,
        leaves(args),
        leaves(error) if failed else leaves(parsed),
    )


def _reports_failure(result: Any) -> bool:
    """Whether a (parsed) tool result says it failed."""
    if not _is_mapping(result):
        return False
    if result.get("ok") is False or result.get("success") is False:
        return True
    status = result.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure", "timeout"):
        return True
    for key, value in result.items():  # a loop: no generator frame, a str key not copied
        if (key if type(key) is str else str(key)).lower() in _FAILED_RESULT_KEYS and value:
            return True
    return False


def _parsed(text: str) -> Any:
    if not text.startswith(("{", "[")):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _finish_reason(output: list[Any]) -> str | None:
    for message in reversed(output):
        content = message.get("content") if _is_mapping(message) else None
        metadata = content.get("metadata") if _is_mapping(content) else None
        if _is_mapping(metadata):
            reason = metadata.get("finish_reason") or metadata.get("finishReason")
            if reason:
                return str(reason)
    return None


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


def leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """``(field, value)`` of every scalar in a tool result, nested fields named by their last key."""
    found: list[tuple[str, Any]] = []
    _add_leaves(value, key, found)
    return found


_SCALARS = frozenset({int, float, bool})


def _add_leaves(value: Any, key: str, found: list[tuple[str, Any]]) -> None:
    """:func:`leaves` into ``found``: one list filled by recursion (nested generators cost a
    frame per level and per value), the common types told by ``type`` before any ABC check."""
    kind = type(value)
    if kind is str:
        if not value.startswith(("{", "[")):
            found.append((key, value))
            return
        value = _parsed(value)
        kind = type(value)
    if kind in _SCALARS:
        found.append((key, value))
    elif kind is dict or isinstance(value, Mapping):
        for name, inner in value.items():
            _add_leaves(inner, name if type(name) is str else str(name), found)
    elif kind is list or isinstance(value, list):
        for inner in value:
            _add_leaves(inner, key, found)
    elif isinstance(value, str):  # a subclass of str: read as the text it is
        _add_leaves(str(value), key, found)
    elif value is not None:
        found.append((key, value))
