"""Mastra's scorer utils (``@mastra/evals/scorers/utils``) over Mastra-shaped dicts.

Every helper reproduces the JavaScript original's exact choices — which text part wins, which
roles count, what an empty string becomes — because the scorers built on them must give
Mastra's scores. JavaScript ``undefined`` is ``None`` here; "truthy" follows JavaScript
(``''``, ``0``, ``None`` are falsy). The inputs are what ``AgentRun.mastra_input()`` /
``mastra_output()`` return, or the same JSON read from Mastra.

One job, over 400 lines: this is the port of one Mastra module (its readers and its test-run
builders ``createTestMessage``/``createAgentTestRun``), kept whole and in the original's order so
it can be checked against Mastra's file side by side when Mastra changes it.
"""

from __future__ import annotations

import math
import sys
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict, TypeGuard

Message = Mapping[str, Any]

__all__ = [
    "ToolCallInfo",
    "ToolResultInfo",
    "extract_agent_response_messages",
    "extract_input_messages",
    "extract_tool_calls",
    "extract_tool_results",
    "get_assistant_message",
    "get_combined_system_prompt",
    "get_conversation_history",
    "get_reasoning",
    "get_system_messages",
    "get_text_content",
    "get_user_message",
    "is_agent_run_input",
    "is_agent_run_output",
    "make_agent_run",
    "make_test_message",
    "make_tool_invocation",
    "merge_tool_invocations",
    "round_to_two_decimals",
    "run_input_text",
    "run_output_text",
]


def _is_record(value: object) -> TypeGuard[Mapping[str, Any]]:
    """A JavaScript object: what the JSON Mastra reads can hold where a record is expected (a
    plain dict, nearly always, told before the ABC check that costs several times more)."""
    return type(value) is dict or isinstance(value, Mapping)


def _last_text_part(parts: Sequence[Any]) -> str:
    texts = [p for p in parts if _is_record(p) and p.get("type") == "text"]
    return (texts[-1].get("text") or "") if texts else ""


def get_text_content(message: Message) -> str:
    """The text of a message (``getTextContentFromMastraDBMessage``); never ``None``.

    ``content.content`` wins over the parts, and of several text parts only the last counts.
    """
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _last_text_part(content)
    if not _is_record(content):
        return ""
    if isinstance(inner := content.get("content"), str) and inner != "":
        return inner
    if isinstance(text := content.get("text"), str) and text != "":
        return text
    if isinstance(content.get("parts"), list):
        return _last_text_part(content["parts"])
    return ""


def _text_from_value(value: Any) -> str | None:
    """Mastra's internal ``getTextFromValue``: looser than ``get_text_content``."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        texts = [
            p["text"]
            for p in value
            if _is_record(p) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return texts[-1] if texts else None
    if not _is_record(value):
        return None
    for candidate in (
        _text_from_value(value.get("content")),
        value.get("text") if isinstance(value.get("text"), str) and value["text"] else None,
        value.get("body") if isinstance(value.get("body"), str) and value["body"] else None,
        _text_from_value(value["parts"]) if isinstance(value.get("parts"), list) else None,
    ):
        if candidate is not None:
            return candidate
    return None


def effective_role(message: Message) -> str | None:
    """A message's role; for ``signal`` messages the role they stand for."""
    role = message.get("role")
    if role != "signal":
        return role if isinstance(role, str) else None
    content = message.get("content")
    metadata = content.get("metadata") if _is_record(content) else None
    signal = metadata.get("signal") if _is_record(metadata) else None
    for candidate in (
        signal.get("tagName") if _is_record(signal) else None,
        signal.get("type") if _is_record(signal) else None,
        message.get("type"),
    ):
        if isinstance(candidate, str):
            return candidate
    return None


def _text_of_first(messages: Any, role: str) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in messages:
        if _is_record(message) and effective_role(message) == role:
            return _text_from_value(message)
    return None


def _first_defined(*values: str | None) -> str | None:
    return next((v for v in values if v is not None), None)


def is_agent_run_input(value: Any) -> bool:
    """``isScorerRunInputForAgent``: the full four-key agent input."""
    return (
        _is_record(value)
        and isinstance(value.get("inputMessages"), list)
        and isinstance(value.get("rememberedMessages"), list)
        and isinstance(value.get("systemMessages"), list)
        and _is_record(value.get("taggedSystemMessages"))
    )


def is_agent_run_output(value: Any) -> bool:
    """``isScorerRunOutputForAgent``: a list of message-like dicts."""
    return isinstance(value, list) and all(
        _is_record(m)
        and isinstance(m.get("id"), str)
        and isinstance(m.get("role"), str)
        and "content" in m
        and "createdAt" in m
        for m in value
    )


def get_user_message(run_input: Any) -> str | None:
    """The first user message's text (``getUserMessageFromRunInput``)."""
    if isinstance(run_input, str):
        return run_input
    if not _is_record(run_input):
        return None
    prompt, text = run_input.get("prompt"), run_input.get("text")
    return _first_defined(
        _text_of_first(run_input.get("inputMessages"), "user"),
        _text_of_first(run_input.get("messages"), "user"),
        prompt if isinstance(prompt, str) else None,
        text if isinstance(text, str) else None,
        _text_from_value(run_input.get("content")),
        _text_from_value(run_input.get("input")),
        _text_from_value(run_input.get("user")),
    )


def get_assistant_message(run_output: Any) -> str | None:
    """The LAST assistant message that has text (``getAssistantMessageFromRunOutput``)."""
    if isinstance(run_output, str):
        return run_output
    if isinstance(run_output, list):
        assistant = [m for m in run_output if _is_record(m) and effective_role(m) == "assistant"]
        for message in reversed(assistant):
            if text := _text_from_value(message):
                return text
        return None
    if not _is_record(run_output):
        return None
    role = run_output.get("role")
    is_assistant = role is None or role == "assistant"
    content = run_output.get("content")
    if is_assistant and isinstance(text := run_output.get("text"), str):
        return text
    if is_assistant and isinstance(content, str):
        return content
    if is_assistant and (_is_record(content) or isinstance(content, list)):
        return (
            get_text_content(run_output)
            or (get_text_content(content) if _is_record(content) else "")
            or None
        )
    if role == "assistant":
        return get_text_content(run_output) or None
    return None


def get_reasoning(run_output: Any) -> str | None:
    """Reasoning of the FIRST assistant message (``getReasoningFromRunOutput``)."""
    if not run_output:
        return None
    message = next((m for m in run_output if m.get("role") == "assistant"), None)
    if message is None:
        return None
    content = message.get("content") or {}
    if isinstance(reasoning := content.get("reasoning"), str) and reasoning:
        return reasoning
    parts = [p for p in content.get("parts") or [] if p.get("type") == "reasoning"]
    if not parts:
        return None
    texts = []
    for part in parts:
        details = part.get("details")
        if isinstance(details, list):
            texts.append("".join(str(d.get("text")) for d in details if d.get("type") == "text"))
        else:
            texts.append(part.get("reasoning") or "")
    texts = [t for t in texts if t]
    return "\n".join(texts) if texts else None


def get_system_messages(run_input: Any) -> list[str]:
    """Every system prompt of the run (``getSystemMessagesFromRunInput``), in Mastra's order."""
    found: list[str] = []
    if not _is_record(run_input):
        return found
    system_messages = run_input.get("systemMessages")
    for message in system_messages if isinstance(system_messages, list) else []:
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = " ".join(p.get("text") or "" for p in content if p.get("type") == "text")
        else:
            text = ""
        if text:
            found.append(text)
    for key in ("inputMessages", "messages"):
        messages = run_input.get(key)
        if isinstance(messages, list):
            for message in messages:
                if (
                    _is_record(message)
                    and message.get("role") == "system"
                    and (prompt := _text_from_value(message))
                ):
                    found.append(prompt)
    tagged = run_input.get("taggedSystemMessages")
    if _is_record(tagged):
        for messages in tagged.values():
            if isinstance(messages, list):
                found.extend(prompt for m in messages if (prompt := _text_from_value(m)))
    return found


def get_combined_system_prompt(run_input: Any) -> str:
    """All system prompts joined by a blank line (``getCombinedSystemPrompt``)."""
    return "\n\n".join(get_system_messages(run_input))


def get_conversation_history(run_input: Any, max_messages: int = 10) -> str | None:
    """The last ``max_messages`` remembered messages as ``role: text`` lines, or ``None``."""
    if not is_agent_run_input(run_input) or max_messages <= 0:
        return None
    lines = []
    for message in run_input["rememberedMessages"][-max_messages:]:
        if not _is_record(message):
            continue
        role, text = effective_role(message), get_text_content(message).strip()
        if role and text:
            lines.append(f"{role}: {text}")
    return "\n".join(lines) if lines else None


def merge_tool_invocations(message: Message | None) -> list[dict[str, Any]]:
    """A message's tool invocations from its parts and the legacy list, parts winning.

    Neither place is complete (thrown calls live only in parts, old messages only in the legacy
    list); legacy-only calls are kept in front of the next call both places share, so order
    survives.
    """
    content = message.get("content") if _is_record(message) else None
    if not _is_record(content):
        return []
    legacy = content.get("toolInvocations") or []
    from_parts = [
        p["toolInvocation"]
        for p in content.get("parts") or []
        if p.get("type") == "tool-invocation" and p.get("toolInvocation")
    ]
    part_ids = {inv.get("toolCallId") for inv in from_parts if inv.get("toolCallId")}
    positions: dict[Any, int] = {}
    for index, inv in enumerate(legacy):
        positions[inv.get("toolCallId") if _is_record(inv) else None] = index
    merged: list[dict[str, Any]] = []
    cursor = 0
    for inv in from_parts:
        shared = positions.get(inv.get("toolCallId")) if inv.get("toolCallId") else None
        if shared is not None and shared >= cursor:
            merged.extend(
                p for p in legacy[cursor:shared] if p and p.get("toolCallId") not in part_ids
            )
            cursor = shared + 1
        merged.append(inv)
    merged.extend(p for p in legacy[cursor:] if p and p.get("toolCallId") not in part_ids)
    return merged


class ToolCallInfo(TypedDict):
    toolName: str
    toolCallId: str
    messageIndex: int
    invocationIndex: int


class ToolCalls(TypedDict):
    tools: list[str]
    toolCallInfos: list[ToolCallInfo]


class ToolResultInfo(TypedDict):
    toolName: str | None
    """``None`` where the invocation names no tool: Mastra passes its ``undefined`` on."""
    toolCallId: str
    args: Any
    result: Any


_CALLED_STATES = frozenset({"result", "call", "output-error"})


def extract_tool_calls(run_output: Sequence[Message]) -> ToolCalls:
    """Tools actually called (``extractToolCalls``): states result, call and output-error."""
    tools: list[str] = []
    infos: list[ToolCallInfo] = []
    for mi, message in enumerate(run_output):
        for ii, inv in enumerate(merge_tool_invocations(message)):
            if inv and inv.get("toolName") and inv.get("state") in _CALLED_STATES:
                tools.append(inv["toolName"])
                infos.append(
                    ToolCallInfo(
                        toolName=inv["toolName"],
                        toolCallId=inv.get("toolCallId") or f"{mi}-{ii}",
                        messageIndex=mi,
                        invocationIndex=ii,
                    )
                )
    return ToolCalls(tools=tools, toolCallInfos=infos)


def extract_tool_results(run_output: Sequence[Message]) -> list[ToolResultInfo]:
    """Finished tool calls with their results (``extractToolResults``)."""
    return [
        ToolResultInfo(
            toolName=inv.get("toolName"),
            toolCallId=inv.get("toolCallId") or "",
            args=inv.get("args") or {},
            result=inv["result"],
        )
        for message in run_output
        for inv in merge_tool_invocations(message)
        if inv.get("state") == "result" and "result" in inv
    ]


def extract_input_messages(run_input: Any) -> list[str]:
    """The text of each input message (``extractInputMessages``)."""
    messages = run_input.get("inputMessages") if _is_record(run_input) else None
    return [get_text_content(m) for m in messages] if messages else []


def extract_agent_response_messages(run_output: Sequence[Message]) -> list[str]:
    """The text of each ``assistant`` message; tool-only messages give ``''``."""
    return [get_text_content(m) for m in run_output if m.get("role") == "assistant"]


def run_input_text(run_input: Any) -> str:
    """The input text every code scorer compares: input messages' texts joined with ``", "``."""
    if isinstance(run_input, str):
        return run_input
    return ", ".join(extract_input_messages(run_input))


def run_output_text(run_output: Any) -> str:
    """The output text every code scorer compares: ALL output messages (any role), ``", "``-joined."""
    if isinstance(run_output, str):
        return run_output
    return ", ".join(get_text_content(m) for m in run_output or [])


def round_to_two_decimals(value: float) -> float:
    """``Math.round((x + Number.EPSILON) * 100) / 100``: half up toward +infinity, like JS."""
    scaled = (value + sys.float_info.epsilon) * 100
    whole = math.floor(scaled)
    return (whole + (1 if scaled - whole >= 0.5 else 0)) / 100


def make_tool_invocation(
    *,
    tool_call_id: str,
    tool_name: str,
    args: Any = None,
    result: Any = None,
    state: str = "result",
    error_text: str | None = None,
    is_error: bool | None = None,
) -> dict[str, Any]:
    """A tool invocation dict (``createToolInvocation``); ``None`` leaves a key out, like JS."""
    invocation: dict[str, Any] = {"toolCallId": tool_call_id, "toolName": tool_name, "state": state}
    if args is not None:
        invocation["args"] = args
    if result is not None:
        invocation["result"] = result
    if error_text is not None:
        invocation["errorText"] = error_text
    if is_error is not None:
        invocation["isError"] = is_error
    return invocation


def make_test_message(
    content: str,
    role: str = "user",
    *,
    id: str = "test-message",
    tool_invocations: Sequence[Mapping[str, Any]] = (),
    parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``MastraDBMessage`` dict (``createTestMessage``): text in parts AND ``content.content``."""
    body: dict[str, Any] = {
        "format": 2,
        "parts": parts if parts is not None else [{"type": "text", "text": content}],
        "content": content,
    }
    if tool_invocations:
        body["toolInvocations"] = [
            {k: ti[k] for k in ("toolCallId", "toolName", "args", "result", "state") if k in ti}
            for ti in tool_invocations
        ]
    return {
        "id": id,
        "role": role,
        "content": body,
        "createdAt": datetime.now(UTC).isoformat(),
    }


def make_agent_run(
    *,
    output: Any,
    input_messages: Sequence[Mapping[str, Any]] = (),
    remembered_messages: Sequence[Mapping[str, Any]] = (),
    system_messages: Sequence[Mapping[str, Any]] = (),
    tagged_system_messages: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    run_id: str | None = None,
    ground_truth: Any = None,
) -> dict[str, Any]:
    """A complete Mastra-shaped run dict (``createAgentTestRun``) for ``Scorer.run``."""
    run: dict[str, Any] = {
        "input": {
            "inputMessages": list(input_messages),
            "rememberedMessages": list(remembered_messages),
            "systemMessages": list(system_messages),
            "taggedSystemMessages": {k: list(v) for k, v in (tagged_system_messages or {}).items()},
        },
        "output": output,
        "runId": run_id or str(uuid.uuid4()),
    }
    if ground_truth is not None:
        run["groundTruth"] = ground_truth
    return run
