"""The Google GenAI SDK's OpenTelemetry instrumentation (``opentelemetry-instrumentation-google-genai``,
scope ``opentelemetry.instrumentation.google_genai``), an OTel GenAI dialect.

The GenAI module reads its spans (and its ``…operation.details`` log records) as they are. What
it does its own way, both in the function responses it records from the SDK's requests:

* a response does not carry the id of the call it answers: the instrumentation names it
  ``<tool name>_<index>`` (``get_weather_0``), so it is joined to the calls of the message
  before it by order, and given that call's id;
* the SDK's automatic function calling wraps what the function returned as ``{"result": …}``
  and what it raised as ``{"error": "…"}`` (the Gemini API's function-response convention):
  the result is unwrapped, the error marked failed.

Content is captured only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` set to
``SPAN_ONLY``, ``EVENT_ONLY`` or ``SPAN_AND_EVENT``; the instrumentation (through
opentelemetry-util-genai) warns and captures nothing for any other value, ``true`` included.
"""

from __future__ import annotations

from typing import Any

from tracescore.extract import genai
from tracescore.extract.base import json_text
from tracescore.extract.model import Message, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "google-genai"

SCOPE = "opentelemetry.instrumentation.google_genai"


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = genai.read(span, logs)
    info.convention = NAME
    _join_function_responses(info.input_messages)
    return info


def _join_function_responses(messages: list[Message]) -> None:
    """Each function response onto the call it answers: the calls of the latest message that
    made any, in order (a response already naming one of them keeps its own)."""
    calls: list[ToolInvocation] = []
    for message in messages:
        invocations = [p.tool_invocation for p in message.content.parts if p.tool_invocation]
        made = [call for call in invocations if call.state == "call"]
        answers = [call for call in invocations if call.state != "call"]
        if made:
            calls = made
        known = {call.tool_call_id for call in calls}
        for answer, call in zip(
            (a for a in answers if a.tool_call_id not in known), calls, strict=False
        ):
            answer.tool_call_id = call.tool_call_id
            answer.tool_name = answer.tool_name or call.tool_name
        for answer in answers:
            _unwrap(answer)


def _unwrap(answer: ToolInvocation) -> None:
    """``{"result": value}`` as the value; ``{"error": text}`` as a failed call."""
    result: Any = answer.result
    if not isinstance(result, dict) or len(result) != 1:
        return
    if "result" in result:
        answer.result = result["result"]
    elif "error" in result:
        answer.result = result["error"]
        answer.is_error = True
        answer.state = "output-error"
        answer.error_text = json_text(result["error"])
