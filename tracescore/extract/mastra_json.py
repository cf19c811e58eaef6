"""Runs given directly in Mastra's scorer shape, for scoring without traces.

Mastra's own scorer tests and datasets describe an agent run as
``{input: ScorerRunInputForAgent, output: MastraDBMessage[], groundTruth?}``. The run model
uses the same field names, so such objects validate straight into an ``AgentRun``; this module
only fills what a trace would have given (ids, the tool results as context) and reports shape
errors by path.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from pydantic import ValidationError

from tracescore.extract.base import json_text
from tracescore.extract.model import AgentRun, ContextDocument, Message, RunInput, ToolInvocation

CONVENTION = "mastra-json"


class MastraRunError(ValueError):
    """A Mastra-shaped run that does not validate; the message names the offending path."""


def run_from_mastra(data: Any, *, index: int = 0) -> AgentRun:
    """One ``{input, output, groundTruth?}`` object as an agent run.

    ``input: null`` and missing input keys are accepted as empty (as Mastra's
    ``createAgentTestRun`` does). Without ``traceId``/``spanId``/``runId`` the ids are derived
    from the content, so the same run always gets the same ids.
    """
    if not isinstance(data, dict):
        raise MastraRunError(f"run {index}: expected an object, got {type(data).__name__}")
    digest = hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS, default=str))
    fingerprint = digest.hexdigest()
    try:
        run_input = RunInput.model_validate(data.get("input") or {})
    except ValidationError as exc:
        raise MastraRunError(f"run {index}: input.{_describe(exc)}") from exc
    output = []
    warnings: list[str] = []
    for position, message in enumerate(_list(data.get("output"), index, "output")):
        try:
            output.append(Message.model_validate(_content_object(message, position, warnings)))
        except ValidationError as exc:
            raise MastraRunError(f"run {index}: output.{position}.{_describe(exc)}") from exc
    run = AgentRun(
        trace_id=str(data.get("traceId") or fingerprint[:32]),
        span_id=str(data.get("spanId") or data.get("runId") or fingerprint[32:48]),
        kind="agent",
        primary=True,
        convention=CONVENTION,
        agent_name=data.get("agentName"),
        input=run_input,
        output=output,
        ground_truth=data.get("groundTruth"),
        warnings=warnings,
    )
    run.context = [
        ContextDocument(
            content=result if isinstance(result, str) else json_text(result),
            source=invocation.tool_name,
            kind="tool_result",
        )
        for message in output
        for invocation in _invocations(message)
        if invocation.state == "result" and (result := invocation.result) is not None
    ]
    return run


def runs_from_mastra_json(text: str | bytes) -> list[AgentRun]:
    """A JSON document holding one run object or a list of them (or JSON Lines of runs)."""
    return [run_from_mastra(item, index=i) for i, item in enumerate(json_items(text))]


def json_items(text: str | bytes) -> list[Any]:
    """The items of a JSON list, a single JSON value as one item, or the lines of JSON Lines."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        lines = (text.decode() if isinstance(text, bytes) else text).splitlines()
        try:
            value = [orjson.loads(line) for line in lines if line.strip()]
        except orjson.JSONDecodeError as exc:
            raise MastraRunError(f"not JSON or JSON Lines: {exc}") from exc
    return value if isinstance(value, list) else [value]


def is_mastra_json(body: bytes) -> bool:
    """Whether a JSON file holds Mastra-shaped runs rather than an OTLP export."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    item = value[0] if isinstance(value, list) and value else value
    return isinstance(item, dict) and "output" in item and "resourceSpans" not in item


def _list(value: Any, index: int, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MastraRunError(f"run {index}: {what} must be a list of messages")
    return value


def _content_object(message: Any, position: int, warnings: list[str]) -> Any:
    """A message whose ``content`` is a bare string or part list (AI SDK ``CoreMessage`` style),
    rewritten to the ``{format: 2, parts}`` object the run model holds."""
    if not isinstance(message, dict) or isinstance(message.get("content"), dict | None):
        return message
    content = message["content"]
    warnings.append(
        f"output.{position}.content: a {type(content).__name__}, not a MastraDBMessage content "
        "object; read as parts"
    )
    if isinstance(content, str):
        content = {"format": 2, "parts": [{"type": "text", "text": content}], "content": content}
    elif isinstance(content, list):
        content = {"format": 2, "parts": content}
    return {**message, "content": content}


def _invocations(message: Message) -> list[ToolInvocation]:
    """Tool invocations from the parts, else from the legacy ``content.toolInvocations``."""
    from_parts = [p.tool_invocation for p in message.content.parts if p.tool_invocation]
    return from_parts or list(message.content.tool_invocations or [])


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
    )
