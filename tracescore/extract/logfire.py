"""Logfire's own spans (scope ``logfire``): ``logfire.span`` blocks and ``@logfire.instrument``
functions.

Logfire's LLM integrations (``logfire.instrument_openai()`` …) write GenAI attributes under
scopes of their own (``logfire.openai``), which the GenAI module reads. The spans of scope
``logfire`` are the application's: a ``logfire.span("…")`` block is a plain span around
whatever it runs (a hand-written agent loop), and an ``@logfire.instrument`` function is a span
whose template is ``Calling <module>.<function>``, named in ``code.function``, its arguments as
attributes (the keys ``logfire.json_schema`` lists) and, with ``record_return=True``, what it
returned as ``return``. In an agent loop such a function is how a tool is traced, so it is read
as a tool span: the run assembly joins it to the model's call of that name. A raised exception
fails the span (its status, and an ``exception`` event).
"""

from __future__ import annotations

from typing import Any

from tracescore.extract.base import as_str, load_json, new_info
from tracescore.extract.genai_messages import decode_result
from tracescore.extract.messages import executed_call
from tracescore.extract.model import SpanInfo
from tracescore.spans import LogRecord, Span

NAME = "logfire"

SCOPE = "logfire"
_INSTRUMENTED = "Calling "
"""How the message template of an ``@logfire.instrument`` span starts (its default)."""
_RETURN = "return"


def in_scope(scope: str) -> bool:
    return scope == SCOPE


def detect(span: Span) -> bool:
    return span.scope.name == SCOPE


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    template = as_str(attributes.get("logfire.msg_template")) or ""
    function = as_str(attributes.get("code.function"))
    if not template.startswith(_INSTRUMENTED) or function is None:
        return info  # a logfire.span block: structure only
    info.kind = "tool"
    schema = load_json(attributes.get("logfire.json_schema"), info.warnings, "logfire.json_schema")
    fields = schema.get("properties") if isinstance(schema, dict) else None
    names = [key for key in fields if key != _RETURN] if isinstance(fields, dict) else []
    args = {name: _value(attributes.get(name)) for name in names if name in attributes}
    returned = attributes.get(_RETURN)
    result, failed = decode_result(returned)
    info.tool_call = executed_call(
        "",
        function,
        args,
        result if returned is not None else info.error,
        failed=failed or info.status == "error",
        error=info.error,
        answered=returned is not None or info.status == "error",
    )
    return info


def _value(raw: Any) -> Any:
    """An argument as the function got it: Logfire sends objects and lists as JSON text."""
    if isinstance(raw, str) and raw[:1] in ("{", "["):
        return load_json(raw, [], "logfire argument")
    return raw
