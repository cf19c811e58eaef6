"""LiteLLM's ``otel`` callback (scope ``litellm``): one ``litellm_request`` span per call.

The span mixes two layouts: the GenAI attributes (``gen_ai.input.messages`` …, read as
OpenLLMetry 0.55+ reads them) and OpenLLMetry's older indexed ones (``llm.request.functions.N``,
``gen_ai.completion.N.function_call.*``). A call whose answer is only a tool call sends
``gen_ai.output.messages`` with no parts at all: the call is only in
``gen_ai.completion.0.function_call.{name,arguments}``, so it is taken from there. Tool results
come back in the next call's input as a ``tool`` message of GenAI text parts
(``[{"type": "text", "content": …}]``), which the message parser unwraps. The
``raw_gen_ai_request`` child holds the provider's raw request and response as Python reprs
(``llm.openai.messages`` …), the same call again: it is no run of its own.

Message content is sent unless ``litellm.turn_off_message_logging`` is set; LiteLLM maps
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` to event-only capture (no content on
the spans), so ``SPAN_AND_EVENT`` (or leaving it unset) is what puts content on them.
"""

from __future__ import annotations

from tracescore.extract import openllmetry
from tracescore.extract.base import new_info
from tracescore.extract.messages import build_message
from tracescore.extract.model import SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "litellm"

SCOPE = "litellm"
_CALL_SPAN = "litellm_request"


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    if span.name != _CALL_SPAN:
        return new_info(span, NAME)  # the raw provider request: the same call again
    info = openllmetry.read(span, logs)
    info.convention = NAME
    if any(p.tool_invocation for m in info.output_messages for p in m.content.parts):
        return info
    legacy = openllmetry.indexed_completions(span, info)
    calls = [p for m in legacy for p in m.content.parts if p.tool_invocation is not None]
    if calls:
        said = [p for m in info.output_messages for p in m.content.parts]
        first = (info.output_messages or legacy)[0]
        metadata = first.content.metadata
        info.output_messages = [
            build_message(first.id, "assistant", [*said, *calls], first.created_at, metadata)
        ]
    return info
