"""MLflow Tracing, native format (``mlflow`` / ``mlflow-tracing`` 3.x exporting over OTLP).

MLflow writes its own attributes, every value JSON-encoded (a string arrives as ``"\\"AGENT\\""``):

* ``mlflow.spanType``: ``AGENT``, ``CHAT_MODEL`` / ``LLM``, ``TOOL``, ``RETRIEVER``, or a
  structural type (``CHAIN``, ``UNKNOWN``, …) that only keeps the tree together;
* ``mlflow.spanInputs`` / ``mlflow.spanOutputs``: what the span's function was given and
  returned. An autologged chat call records the provider's request kwargs and response (for
  OpenAI: ``{model, messages, tools}`` and the ``ChatCompletion``); a ``@mlflow.trace``
  function its keyword arguments and return value;
* ``mlflow.chat.tokenUsage`` (``{input_tokens, output_tokens, total_tokens, …}``),
  ``mlflow.llm.model``, ``mlflow.llm.provider`` and ``mlflow.chat.tools`` on chat spans.

With ``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true`` MLflow drops these keys and writes GenAI
attributes instead: such spans carry no ``mlflow.spanType`` and are left to the GenAI module.
MLflow's session and user metadata (``mlflow.trace.session``) stay in its tracking store and
do not reach OTLP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.extract.base import (
    as_str,
    json_text,
    load_json,
    new_info,
    timestamp,
    usage_from,
)
from tracescore.extract.chat_bodies import body_messages
from tracescore.extract.genai_messages import decode_result, parse_tool_definitions
from tracescore.extract.messages import executed_call, split_system, text_message
from tracescore.extract.model import (
    ContextDocument,
    Message,
    SpanInfo,
    SpanKindName,
    ToolInvocation,
)
from tracescore.spans import LogRecord, Span

NAME = "mlflow"

SPAN_TYPE = "mlflow.spanType"
INPUTS = "mlflow.spanInputs"
OUTPUTS = "mlflow.spanOutputs"
_KINDS: dict[str, SpanKindName] = {
    "AGENT": "agent",
    "CHAT_MODEL": "llm",
    "LLM": "llm",
    "TOOL": "tool",
    "RETRIEVER": "retrieval",
}
_MATCH_WINDOW = 64
CHUNK_EVENT = "mlflow.chunk.item."
CHUNK_VALUE = "mlflow.chunk.value"
_MAX_CHUNKS = 20_000
# A ``@mlflow.trace`` agent's argument or result that is its user's text or its answer.
_TEXT_KEYS = ("input", "question", "query", "prompt", "message", "output", "answer", "content")


def detect(span: Span) -> bool:
    return SPAN_TYPE in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    info = new_info(span, NAME)
    attributes = span.attributes
    warnings = info.warnings
    span_type = _value(attributes, SPAN_TYPE, warnings)
    info.kind = _KINDS.get(span_type, "other") if isinstance(span_type, str) else "other"
    info.model = as_str(_value(attributes, "mlflow.llm.model", warnings))
    info.provider = as_str(_value(attributes, "mlflow.llm.provider", warnings))
    usage = _value(attributes, "mlflow.chat.tokenUsage", warnings)
    if isinstance(usage, Mapping):
        info.usage = usage_from(
            usage,
            input_tokens=("input_tokens",),
            output_tokens=("output_tokens",),
            total_tokens=("total_tokens",),
            cached_input_tokens=("cache_read_input_tokens",),
        )
    if "mlflow.chat.tools" in attributes:
        info.tools = parse_tool_definitions(
            attributes["mlflow.chat.tools"], warnings, "mlflow.chat.tools"
        )
    if info.kind == "llm":
        _read_chat(span, info)
    elif info.kind == "agent":
        info.agent_name = span.name
        _read_agent(span, info)
    elif info.kind == "tool":
        _read_tool(span, info)
    elif info.kind == "retrieval":
        info.documents = _documents(_value(attributes, OUTPUTS, warnings), span.name)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Give each TOOL span the id of the model's call it ran.

    MLflow's tool spans record the function's arguments, not the call id; the chat span
    before it holds the call. A tool span takes, among the earliest calls of its name not yet
    taken that the model made before it, the first with the same arguments, else the first:
    a tool run names the call it answers as other conventions' do. Only the first
    ``_MATCH_WINDOW`` open calls of a name are compared, so a huge trace stays linear.
    """
    open_calls: dict[str, list[tuple[int, ToolInvocation]]] = {}
    for span, info in sorted(read, key=lambda item: item[0].start_time_ns):
        if info.kind != "llm":
            continue
        for message in info.output_messages:
            for part in message.content.parts:
                call = part.tool_invocation
                if call is not None and call.tool_call_id:
                    open_calls.setdefault(call.tool_name, []).append((span.start_time_ns, call))
    for span, info in sorted(read, key=lambda item: item[0].start_time_ns):
        tool = info.tool_call
        if info.kind != "tool" or tool is None or tool.tool_call_id:
            continue
        queue = open_calls.get(tool.tool_name, [])
        earlier = [
            i
            for i, (started, _) in enumerate(queue[:_MATCH_WINDOW])
            if started <= span.start_time_ns
        ]
        if not earlier:
            continue
        index = next((i for i in earlier if queue[i][1].args == tool.args), earlier[0])
        tool.tool_call_id = queue.pop(index)[1].tool_call_id


def _value(attributes: Mapping[str, Any], key: str, warnings: list[str]) -> Any:
    """An MLflow attribute, JSON-decoded (MLflow encodes every value, strings included)."""
    return load_json(attributes.get(key), warnings, key)


def _read_chat(span: Span, info: SpanInfo) -> None:
    """A chat call: the request's messages in, the response's message out (OpenAI bodies;
    other providers' bodies are read as far as the shared parser knows their shape)."""
    attributes = span.attributes
    inputs: list[Message | None] = []
    outputs: list[Message | None] = []
    if INPUTS in attributes:
        inputs = body_messages(
            attributes[INPUTS], INPUTS, span.span_id, "in", info, timestamp(span.start_time_ns)
        )
    if OUTPUTS in attributes:
        outputs = body_messages(
            attributes[OUTPUTS], OUTPUTS, span.span_id, "out", info, timestamp(span.end_time_ns)
        )
    system, info.input_messages = split_system(m for m in inputs if m is not None)
    info.system.extend(system)
    info.output_messages = [m for m in outputs if m is not None and m.content.parts]
    if not info.output_messages and (streamed := _streamed_response(span, info.warnings)):
        info.output_messages = [
            m
            for m in body_messages(
                streamed, CHUNK_VALUE, span.span_id, "out", info, timestamp(span.end_time_ns)
            )
            if m is not None
        ]


def _streamed_response(span: Span, warnings: list[str]) -> dict[str, Any] | None:
    """A streamed call's response put back together from its ``mlflow.chunk.item.N`` events.

    MLflow 3.17 records a streamed OpenAI call's output as an empty message (its own assembly
    drops tool calls); the chunks, one span event each, hold the deltas: text appended, tool
    calls assembled by index. At most ``_MAX_CHUNKS`` are read.
    """
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: Any = None
    chunks = [e for e in span.events if e.name.startswith(CHUNK_EVENT)][:_MAX_CHUNKS]
    for event in chunks:
        chunk = load_json(event.attributes.get(CHUNK_VALUE), warnings, CHUNK_VALUE)
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            finish = choice.get("finish_reason") or finish
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for part in delta.get("tool_calls") or []:
                if isinstance(part, dict) and isinstance(part.get("index"), int):
                    _add_call_delta(calls.setdefault(part["index"], {}), part)
    if not text and not calls:
        return None
    message = {
        "role": "assistant",
        "content": "".join(text) or None,
        "tool_calls": [calls[i] for i in sorted(calls)],
    }
    return {"choices": [{"message": message, "finish_reason": finish}]}


def _add_call_delta(call: dict[str, Any], delta: dict[str, Any]) -> None:
    """One streamed tool-call delta onto the call being assembled (id and name once, the
    arguments' JSON in pieces)."""
    function: dict[str, Any] = delta["function"] if isinstance(delta.get("function"), dict) else {}
    built = call.setdefault("function", {"name": "", "arguments": ""})
    call["id"] = call.get("id") or delta.get("id") or ""
    call["type"] = "function"
    if isinstance(function.get("name"), str):
        built["name"] += function["name"]
    if isinstance(function.get("arguments"), str):
        built["arguments"] += function["arguments"]


def _read_agent(span: Span, info: SpanInfo) -> None:
    """A ``@mlflow.trace(span_type="AGENT")`` function: its arguments and return value.

    An agent handed a message list (or a request body) is read as that conversation; one
    handed a single text argument as the user's message. The chat calls below it, when there
    are any, are what the run is built from; this is the fallback for an agent whose model
    calls were not traced.
    """
    attributes = span.attributes
    started, ended = timestamp(span.start_time_ns), timestamp(span.end_time_ns)
    inputs = _value(attributes, INPUTS, info.warnings)
    if isinstance(inputs, Mapping) and "messages" not in inputs:
        inputs = _single_text(inputs)
    if inputs is not None:
        messages = body_messages(inputs, INPUTS, span.span_id, "in", info, started)
        system, info.input_messages = split_system(m for m in messages if m is not None)
        info.system.extend(system)
    outputs = _value(attributes, OUTPUTS, info.warnings)
    if isinstance(outputs, Mapping) and "choices" not in outputs:
        outputs = _single_text(outputs)
    if isinstance(outputs, str) and outputs:
        info.output_messages = [text_message(f"{span.span_id}-out-0", "assistant", outputs, ended)]
    elif outputs is not None:
        info.output_messages = [
            m for m in body_messages(outputs, OUTPUTS, span.span_id, "out", info, ended) if m
        ]


def _single_text(arguments: Mapping[str, Any]) -> Any:
    """The one text a function's arguments (or result dict) hold: the value itself when it is
    the only one, else the value of a conventional key; the whole mapping as JSON text
    otherwise, so nothing the agent was given is lost."""
    texts = [v for v in arguments.values() if isinstance(v, str) and v]
    if len(arguments) == 1 and len(texts) == 1:
        return texts[0]
    for key in _TEXT_KEYS:
        if isinstance(arguments.get(key), str) and arguments[key]:
            return arguments[key]
    return json_text(arguments) if arguments else None


def _read_tool(span: Span, info: SpanInfo) -> None:
    """A ``span_type="TOOL"`` function: its keyword arguments and return value (no call id:
    the assembler joins it to the model's call by name and order)."""
    attributes = span.attributes
    args = _value(attributes, INPUTS, info.warnings)
    result, is_error = decode_result(_value(attributes, OUTPUTS, info.warnings))
    info.tool_call = executed_call(
        "",
        span.name,
        args,
        result,
        failed=is_error or info.status == "error",
        error=info.error,
    )


def _documents(value: Any, source: str) -> list[ContextDocument]:
    """A retriever's returned documents (LangChain-style ``{page_content, metadata, id}``)."""
    documents = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, Mapping):
            continue
        content = item.get("page_content") or item.get("content")
        if not isinstance(content, str) or not content:
            continue
        metadata = item.get("metadata")
        documents.append(
            ContextDocument(
                content=content,
                source=as_str(item.get("id")) or source,
                kind="retrieval",
                metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
            )
        )
    return documents
