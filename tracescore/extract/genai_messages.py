"""Parse OTel-GenAI-style messages into the run model, whichever library wrote them.

The GenAI layout ``[{role, parts: [{type, ...}]}]`` is shared by OTel GenAI, OpenLLMetry 0.55+,
Pydantic AI, ai@7, Mastra and OpenInference's GenAI mirror, but each drifts from the spec
(SPAN_FORMATS §9.3): tool results under ``response`` or ``result``, reasoning as ``reasoning``
or ``thinking`` (sometimes a JSON-encoded summary list), arguments as objects or JSON strings,
tool results sent with role ``tool`` or ``user``. Raw bodies and framework objects bring
other dialects: OpenAI messages (``{role, content, tool_calls}``), Anthropic blocks
(``tool_use``/``tool_result``), Bedrock Converse blocks (``{"toolUse": …}``, Strands), Gemini
parts (``{"functionCall": …}``) and LangChain messages (serialized ``{"lc": 1, "kwargs": …}`` or
``{"type": "human", …}``). Everything here accepts all of these, so each convention module only
has to find the attribute.

The output is Mastra-shaped: a tool call is a ``tool-invocation`` part in state ``call``, a tool
result is a ``tool-invocation`` part in state ``result`` (or ``output-error``) carried by the
message that brought it (built with :mod:`tracescore.extract.messages`). The assembler joins the
two by tool-call id.

One job, over 400 lines: every dialect goes through one part parser and one message parser, so
the quirks of each stay next to the code they bend rather than in a module per dialect.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tracescore.extract.base import as_str, json_text, load_json
from tracescore.extract.messages import (
    build_message,
    message_text,
    reasoning_part,
    text_message,
    text_part,
    tool_call_part,
    tool_result_part,
)
from tracescore.extract.model import (
    Message,
    MessagePart,
    ToolDefinition,
)
from tracescore.extract.object_reprs import pydantic_fields

TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
REASONING_TYPES = frozenset({"reasoning", "thinking", "reasoning_text", "summary_text"})
TOOL_CALL_TYPES = frozenset(
    {"tool_call", "tool-call", "function_call", "server_tool_call", "tool_use", "server_tool_use"}
)
TOOL_RESULT_TYPES = frozenset(
    {
        "tool_call_response",
        "tool-result",
        "function_call_output",
        "server_tool_call_response",
        "tool_result",
    }
)
FILE_TYPES = frozenset({"blob", "uri", "file", "image", "image_url"})
# Tool results in the AI SDK's ``{type, value}`` output envelope.
_ERROR_OUTPUTS = frozenset({"error-text", "error-json", "execution-denied"})
_OUTPUT_ENVELOPES = frozenset({"json", "text", "content"}) | _ERROR_OUTPUTS
_MCP_RESULT_KEYS = frozenset({"content", "isError", "structuredContent", "_meta"})
# Blocks that name their kind by their single key (Bedrock Converse, Gemini).
_KEYED_BLOCKS = {
    "toolUse": "tool_call",
    "functionCall": "tool_call",
    "function_call": "tool_call",
    "toolResult": "tool_call_response",
    "functionResponse": "tool_call_response",
    "function_response": "tool_call_response",
    "reasoningContent": "reasoning",
}
_LANGCHAIN_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "AIMessageChunk": "assistant",
}
# Provider role names for the same four roles (Gemini ``model``, Llama ``ipython``…).
_ROLE_ALIASES = {
    "model": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "human": "user",
    "function": "tool",
    "ipython": "tool",
    "tool_result": "tool",
}
_LANGCHAIN_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "AIMessageChunk": "ai",
    "FunctionMessage": "function",
}


def _reasoning_text(value: Any) -> str:
    """Reasoning text from a string, a (JSON-encoded) summary list, or a list of strings.

    Decoding is quiet: reasoning that merely starts with ``[`` is text, not broken JSON.
    """
    value = load_json(value, [], "reasoning") if isinstance(value, str) else value
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _reasoning_text(value.get("text") or value.get("content") or value.get("summary"))
    if isinstance(value, list):
        return "\n".join(t for t in (_reasoning_text(v) for v in value) if t)
    return "" if value is None else str(value)


def find_reasoning(value: Any, limit: int = 10_000) -> list[str]:
    """Reasoning texts anywhere in a raw provider/framework body, visiting at most ``limit`` nodes.

    Several instrumentations drop reasoning from their structured attributes but keep the raw
    response body (OpenInference ``output.value``): Chat Completions ``reasoning_content``,
    Responses ``{"type": "reasoning", "summary": [...]}`` items, LangChain content blocks.
    """
    found: list[str] = []
    stack = [value]
    while stack and limit > 0:
        limit -= 1
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            text = node.get("reasoning_content")
            if as_str(node.get("type")) in REASONING_TYPES - {"summary_text"}:
                text = _reasoning_text(
                    first_present(node, "summary", "content", "text", "reasoning")
                )
            if isinstance(text, str) and text:
                if text not in found:  # bodies often hold the same block twice
                    found.append(text)
                continue
            stack.extend(reversed(list(node.values())))
    return found


def decode_arguments(value: Any, warnings: list[str], what: str) -> Any:
    """Tool-call arguments: objects as they are, JSON strings decoded, other text kept."""
    if value is None:
        return {}
    return load_json(value, warnings, f"{what} arguments")


def langchain_tool_message(value: Any) -> dict[str, Any] | None:
    """The fields of a LangChain ``ToolMessage`` a tool result is wrapped in, else None.

    LangChain tools return a ``ToolMessage``, and instrumentations record that object, not what
    the tool returned: ``messages_to_dict`` form ``{"type": "tool", "data": {content,
    tool_call_id, status, …}}`` (OpenInference ``output.value``), ``dumpd`` form ``{"lc": 1,
    "kwargs": {…}}``, or the flat ``model_dump``. Judges must read the content, not the envelope.
    """
    if not isinstance(value, dict):
        return None
    fields: dict[str, Any] = value
    if isinstance(kwargs := value.get("kwargs"), dict) and "lc" in value:
        fields = kwargs
    elif value.get("type") == "tool" and isinstance(data := value.get("data"), dict):
        fields = data
    if "content" in fields and ("tool_call_id" in fields or fields.get("type") == "tool"):
        return fields
    return None


def decode_result(value: Any) -> tuple[Any, bool]:
    """A tool result and whether it is an error: JSON strings decoded, envelopes unwrapped
    (the AI SDK's ``{type, value}`` outputs, LangChain's ``ToolMessage``, an MCP
    ``CallToolResult``, result blocks: a list, or one block as the OpenAI Agents SDK records an
    MCP tool's text output)."""
    if isinstance(value, (str, bytes)):
        value = load_json(value, [], "tool result")  # plain-text results are not a problem
    if isinstance(value, str) and value.startswith("content="):
        value = pydantic_fields(value) or value  # a ToolMessage's str() (OpenLIT's LangChain)
    if _callback_envelope(value):  # LangChain's ``on_tool_end(output, **kwargs)``, recorded whole
        value = value["output"]
    message = langchain_tool_message(value)
    if message is not None:
        content, is_error = decode_result(message.get("content"))
        return content, is_error or message.get("status") == "error"
    if _is_mcp_result(value):  # its text blocks (a JSON text is parsed), not the wrapper
        return decode_result(value["content"])[0], value.get("isError") is True
    if isinstance(value, dict) and set(value) <= {"type", "value"} and "value" in value:
        kind = as_str(value.get("type"))
        if kind in _OUTPUT_ENVELOPES:  # a ``content`` output holds blocks: unwrapped too
            return decode_result(value["value"])[0], kind in _ERROR_OUTPUTS
    if isinstance(value, dict) and "type" in value and (payload := _block_value(value)) is not None:
        return decode_result(payload)[0], False  # a typed block, not a tool's own {"text": …}
    if isinstance(value, list) and value and all(_block_value(v) is not None for v in value):
        # Anthropic / Bedrock results are block lists: [{"type": "text", "text": …}], [{"json": …}]
        values = [_block_value(v) for v in value]
        if len(values) == 1:
            return decode_result(values[0])[0], False
        if all(isinstance(v, str) for v in values):
            return "".join(values), False
    return value, False


def _callback_envelope(value: Any) -> bool:
    """``{"output": …, "kwargs": {…}}``: a LangChain tool callback's arguments as OpenLLMetry's
    LangChain instrumentation records them (``traceloop.entity.output``); only the output is the
    tool's. A tool's own ``{"output": …}`` has no ``kwargs`` mapping beside it."""
    return (
        isinstance(value, dict)
        and len(value) == 2
        and "output" in value
        and isinstance(value.get("kwargs"), dict)
    )


def _is_mcp_result(value: Any) -> bool:
    """An MCP ``CallToolResult`` (``{content: [blocks], isError, structuredContent?}``), as the
    AI SDK's MCP tools (and Mastra's) return it."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("content"), list)
        and ("isError" in value or "structuredContent" in value)
        and set(value) <= _MCP_RESULT_KEYS
    )


def _block_value(block: Any) -> Any:
    """The payload of a ``{"text": …}`` / ``{"json": …}`` result block, or of a GenAI text part
    ``{"type": "text", "content": …}`` (LiteLLM's tool messages), else None (MCP's unset
    ``annotations`` / ``_meta`` may come along as nulls)."""
    if not isinstance(block, dict) or block.get("type", "text") not in ("text", "json"):
        return None
    rest = {k: v for k, v in block.items() if k != "type" and v is not None}
    if len(rest) != 1 or not set(rest) <= _BLOCK_PAYLOADS:
        return None
    return None if "content" in rest and "type" not in block else next(iter(rest.values()))


_BLOCK_PAYLOADS = frozenset({"text", "json", "content"})


def parse_part(raw: Any, warnings: list[str], what: str) -> MessagePart | None:
    """One GenAI part (or OpenAI content block) as a message part; None when it is empty."""
    if isinstance(raw, str):
        return text_part(raw) if raw else None
    if not isinstance(raw, dict):
        return None if raw is None else text_part(json_text(raw))
    raw = _unwrap_keyed_block(raw)
    kind = str(raw.get("type") or ("text" if "content" in raw or "text" in raw else ""))
    if raw.get("thought") is True and kind == "text":
        kind = "reasoning"  # Gemini marks thought summaries on text parts
    if kind in TEXT_TYPES:
        text = raw.get("content", raw.get("text"))
        return text_part(json_text(text)) if text not in (None, "") else None
    if kind in REASONING_TYPES:
        text = _reasoning_text(
            first_present(
                raw, "content", "text", "reasoning", "thinking", "summary", "reasoningText"
            )
        )
        return reasoning_part(text) if text else None
    if kind in TOOL_CALL_TYPES:
        call_id, name = _call_reference(raw)
        args = first_present(raw, "arguments", "args", "input")
        return tool_call_part(call_id, name, decode_arguments(args, warnings, what))
    if kind in TOOL_RESULT_TYPES:
        call_id, name = _call_reference(raw)
        result, is_error = decode_result(
            first_present(raw, "response", "result", "output", "content")
        )
        failed = is_error or bool(raw.get("isError") or raw.get("is_error"))
        failed = failed or raw.get("status") == "error"
        return tool_result_part(call_id, name, result, is_error=failed)
    if kind in FILE_TYPES:
        return _file_part(raw)
    return MessagePart(type=kind or "unknown", **_other_part_fields(raw))


_STRING_FIELDS = ("text", "reasoning", "mime_type", "data", "url")
_BUILT_FIELDS = ("type", "details", "tool_invocation")  # only the typed parsers above make these


def _other_part_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """A part of a type we do not know, kept as sent, except that the fields our model types
    hold text (a list where ``text`` belongs is sent, too) and those it builds are not taken."""
    fields = {key: value for key, value in raw.items() if key not in _BUILT_FIELDS}
    for key in _STRING_FIELDS:
        if fields.get(key) is not None and not isinstance(fields[key], str):
            fields[key] = json_text(fields[key])
    return fields


def first_present(raw: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if raw.get(key) is not None:
            return raw[key]
    return None


def _unwrap_keyed_block(raw: dict[str, Any]) -> dict[str, Any]:
    """``{"toolUse": {…}}`` (Bedrock) or ``{"functionCall": {…}}`` (Gemini) as a typed part."""
    if "type" in raw:
        return raw
    for key, kind in _KEYED_BLOCKS.items():
        if isinstance(raw.get(key), dict):
            return {"type": kind, **raw[key]}
    return raw


def is_message(value: Any) -> bool:
    """Whether ``value`` is one message in any dialect :func:`parse_message` reads: a ``role``,
    GenAI ``parts``, a ``content`` alone, or a LangChain message (serialized, or with its
    ``type``)."""
    if not isinstance(value, dict):
        return False
    if "role" in value or "parts" in value or "content" in value:
        return True
    if "lc" in value and isinstance(value.get("kwargs"), dict):
        return True
    kind = value.get("type")
    return isinstance(kind, str) and kind in _LANGCHAIN_TYPES


def _langchain_message(raw: dict[str, Any]) -> dict[str, Any]:
    """A LangChain message (serialized ``{"lc": 1, "kwargs": …}`` or ``.dict()`` with ``type``)
    as an OpenAI-style dict; other messages are returned unchanged."""
    if "role" in raw and "lc" not in raw:
        return raw  # the common case, answered without the lookups below
    if isinstance(raw.get("kwargs"), dict) and "lc" in raw:
        path = raw.get("id")
        name = path[-1] if isinstance(path, list) and path else ""
        raw = {"type": _LANGCHAIN_CLASSES.get(str(name)), **raw["kwargs"]}
    kind = as_str(raw.get("type"))  # any JSON value: a list or an object is not hashable
    if "role" not in raw and kind in _LANGCHAIN_TYPES:
        return {**raw, "role": _LANGCHAIN_TYPES[kind]}
    return raw


def _call_reference(raw: dict[str, Any]) -> tuple[str, str]:
    """(tool-call id, tool name) under the key names GenAI, the AI SDK and OpenAI use.

    ``call_id`` comes before ``id``: in OpenAI Responses items ``id`` names the item and
    ``call_id`` the call that the result answers.
    """
    call_id = first_present(
        raw, "toolCallId", "tool_call_id", "call_id", "toolUseId", "tool_use_id", "id"
    )
    name = first_present(raw, "name", "toolName", "tool_name")
    return json_text(call_id or ""), json_text(name or "")


def _file_part(raw: dict[str, Any]) -> MessagePart:
    """``blob``/``uri``/``file`` parts (and OpenAI ``image_url``) as a Mastra ``file`` part."""
    image_url = raw.get("image_url")
    url = (
        raw.get("uri")
        or raw.get("url")
        or (image_url.get("url") if isinstance(image_url, dict) else image_url)
    )
    data = raw.get("content") if raw.get("type") == "blob" else raw.get("data")
    extra = {k: v for k, v in raw.items() if k in ("file_id", "modality", "filename", "file_name")}
    return MessagePart(
        type="file",
        mime_type=raw.get("mime_type") or raw.get("mimeType") or raw.get("mediaType"),
        data=json_text(data) if data is not None else None,
        url=json_text(url) if url else None,
        **extra,
    )


def parse_message(
    raw: Any,
    message_id: str,
    warnings: list[str],
    what: str,
    *,
    default_role: str = "user",
    created_at: datetime | None = None,
) -> Message | None:
    """One message in GenAI (``parts``) or OpenAI (``content``/``tool_calls``) shape."""
    if isinstance(raw, str):
        return text_message(message_id, default_role, raw, created_at) if raw else None
    if isinstance(raw, list) and len(raw) == 2 and all(isinstance(v, str) for v in raw):
        raw = {"type": raw[0], "content": raw[1]}  # LangChain ("user", "text") tuples
        raw["role"] = _LANGCHAIN_TYPES.get(raw["type"], raw["type"])
    if not isinstance(raw, dict):
        return None
    raw = _langchain_message(raw)
    role = str(raw.get("role") or default_role)
    role = _ROLE_ALIASES.get(role, role)
    parts: list[MessagePart] = []
    # OpenAI-compatible servers (DeepSeek, vLLM, OpenRouter) return reasoning beside the content.
    # OpenLLMetry ≤0.54 sends a Responses summary list (JSON-encoded) under ``reasoning``.
    reasoning = raw.get("reasoning_content") or raw.get("reasoning")
    if isinstance(reasoning, (str, list)) and reasoning:
        text = _reasoning_text(reasoning)
        if text:
            parts.append(reasoning_part(text))
    body = raw.get("parts")
    if body is None:
        body = raw.get("content")
    if isinstance(body, str) and role == "tool":
        parts.append(_tool_message_result(raw, body))
    elif isinstance(body, list):
        read = [p for p in (parse_part(item, warnings, what) for item in body) if p]
        if role == "tool" and read and not any(p.tool_invocation for p in read):
            # OpenAI allows a tool message's content as a list of text parts (the OpenAI
            # Agents SDK sends an MCP tool's output so): the result, not something said.
            parts.append(_tool_message_result(raw, body))
        else:
            parts.extend(read)
    elif body is not None:
        part = parse_part(body, warnings, what)
        if role == "tool" and (part is None or part.tool_invocation is None):
            # A tool message's content as a structured value (a log event's body): the result.
            parts.append(_tool_message_result(raw, body))
        elif part:
            parts.append(part)
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            function = named if isinstance(named := call.get("function"), dict) else call
            arguments = first_present(function, "arguments", "args")  # LangChain: ``args``
            parts.append(
                tool_call_part(
                    json_text(call.get("id") or ""),
                    json_text(function.get("name") or ""),
                    decode_arguments(arguments, warnings, what),
                )
            )
    metadata = {"finish_reason": raw["finish_reason"]} if raw.get("finish_reason") else None
    return build_message(message_id, role, parts, created_at, metadata)


def _tool_message_result(raw: dict[str, Any], content: Any) -> MessagePart:
    """An OpenAI-style ``tool`` message's content as the result of the call it names."""
    call_id = json_text(raw.get("tool_call_id") or raw.get("id") or "")
    result, is_error = decode_result(content)
    return tool_result_part(
        call_id,
        json_text(raw.get("name") or ""),
        result,
        is_error=is_error or raw.get("status") == "error",
    )


def parse_messages(
    value: Any,
    id_prefix: str,
    warnings: list[str],
    what: str,
    *,
    default_role: str = "user",
    created_at: datetime | None = None,
) -> list[Message]:
    """A message list from a JSON string or a structured value.

    Text that is not JSON (or JSON that was cut) becomes one message of ``default_role``, so a
    truncated prompt still reaches the scorers as text.
    """
    value = load_json(value, warnings, what)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        value = [value]
    messages: list[Message] = []
    for raw in value:
        message = parse_message(
            raw,
            f"{id_prefix}-{len(messages)}",
            warnings,
            what,
            default_role=default_role,
            created_at=created_at,
        )
        if message is not None:
            messages.append(message)
    return messages


def parse_system_instructions(value: Any, warnings: list[str], what: str) -> list[str]:
    """System instructions as texts: a plain string, a JSON part list, or a list of strings."""
    value = load_json(value, warnings, what)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    items = value if isinstance(value, list) else [value]
    texts: list[str] = []
    for item in items:
        if isinstance(item, dict) and ("parts" in item or "role" in item):
            message = parse_message(item, "system", warnings, what, default_role="system")
            text = message_text(message) if message else ""
        elif _plain_text_part(item):
            text = item["content"]  # its text, without building the part to read it
        else:
            part = parse_part(item, warnings, what)
            text = (part.text or part.reasoning or "") if part else ""
        if text:
            texts.append(text)
    return texts


def _plain_text_part(item: Any) -> bool:
    """A GenAI text part with text (no Gemini ``thought`` mark): what ``parse_part`` would
    read as a text part of exactly that text."""
    return (
        isinstance(item, dict)
        and item.get("type") == "text"
        and "thought" not in item
        and isinstance(item.get("content"), str)
        and bool(item["content"])
    )


def parse_tool_definition(raw: Any, warnings: list[str], what: str) -> ToolDefinition | None:
    """One tool definition: GenAI, OpenAI ``{type: function, function: {…}}``, or a bare name."""
    raw = load_json(raw, warnings, what)
    if isinstance(raw, str):  # a bare name (Mastra), unless it is JSON that did not parse
        return ToolDefinition(name=raw) if raw and raw.lstrip()[:1] not in ("{", "[") else None
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("function"), dict):
        raw = raw["function"]
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return None
    schema = first_present(
        raw, "parameters", "inputSchema", "input_schema", "json_schema", "parameters_json_schema"
    )
    schema = load_json(schema, warnings, f"{what} {name} parameters")
    return ToolDefinition(
        name=name,
        description=raw.get("description") if isinstance(raw.get("description"), str) else None,
        parameters=schema if isinstance(schema, dict) else None,
    )


def parse_tool_definitions(value: Any, warnings: list[str], what: str) -> list[ToolDefinition]:
    value = load_json(value, warnings, what)
    items = value if isinstance(value, list) else [value]
    return [d for d in (parse_tool_definition(i, warnings, what) for i in items) if d]
