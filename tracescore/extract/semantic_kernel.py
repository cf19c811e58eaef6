"""Semantic Kernel's built-in GenAI telemetry (scopes ``semantic_kernel.*``), an OTel GenAI
dialect.

With ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true`` the chat spans
carry no content: it travels as log records (the event name in the ``event.name`` attribute,
the message as a JSON-string body), which :mod:`genai_events` reads. The ``invoke_agent`` span
sends ``gen_ai.input.messages`` empty and ``gen_ai.output.messages`` as ``{role, content,
name}``; the run takes its input from its first chat call, as for any agent span without one.

What is Semantic Kernel's own: a kernel function's return value is recorded, and sent to the
model, as ``str()`` of it, so a tool returning a dict reads ``{'city': 'Paris', …}``, a Python
literal rather than JSON. Such results are decoded here, so judges and context see the value.
"""

from __future__ import annotations

from tracescore.extract import genai
from tracescore.extract.base import python_literal
from tracescore.extract.model import Message, SpanInfo, ToolInvocation
from tracescore.spans import LogRecord, Span

NAME = "semantic-kernel"

SCOPE_PREFIX = "semantic_kernel."


def in_scope(scope: str) -> bool:
    return scope.startswith(SCOPE_PREFIX)


def detect(span: Span) -> bool:
    return span.scope.name.startswith(SCOPE_PREFIX) and genai.detect(span)


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = genai.read(span, logs)
    info.convention = NAME
    if info.tool_call is not None:
        _decode_result(info.tool_call)
    for message in (*info.input_messages, *info.output_messages):
        _decode_results(message)
    return info


def _decode_results(message: Message) -> None:
    for part in message.content.parts:
        if part.tool_invocation is not None:
            _decode_result(part.tool_invocation)


def _decode_result(call: ToolInvocation) -> None:
    call.result = python_literal(call.result)
