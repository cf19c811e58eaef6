"""CrewAI traced by openinference-instrumentation-crewai (span-formats.md, "CrewAI").

The spans are OpenInference spans, read by :mod:`tracescore.extract.openinference`; this module
claims them first (by instrumentation scope) for what CrewAI puts where no other OpenInference
instrumentor does:

* **Default settings** (scope ``openinference.instrumentation.crewai``): no LLM span at all. The
  AGENT span (``<role>._execute_core`` for a task, ``<role>.kickoff`` for ``Agent.kickoff``)
  records the agent's configuration as ``input.value`` and CrewAI's ``TaskOutput`` /
  ``LiteAgentOutput`` as ``output.value``: ``raw`` (the answer) and ``messages``, the whole
  OpenAI transcript of the invocation. The run is rebuilt from that transcript: the system
  message is the system prompt, the messages up to the last user message the input (history
  before it), the rest the agent's steps, ``raw`` the answer. The TOOL spans below record no
  call id: each is joined to the transcript's call it ran (same name, same arguments, in order)
  and takes that call's place, so no call is counted twice. Usage is the ``LiteAgentOutput``'s
  ``usage_metrics``, or the crew's ``token_usage`` on the root CHAIN when the crew ran one task
  (a crew's total over several tasks cannot be split per task: a warning says so).
* **``use_event_listener=True``** (scope ``…crewai._event_listener``): LLM spans exist, but a
  step that only calls tools records its output as a bare list of OpenAI tool calls, the tool
  names sent back to the model are quoted (``'get_weather'``), and the offered tools are one
  JSON list in ``llm.tools`` whose parameter schemas are Python reprs. Those are repaired here.

In both modes CrewAI hands the model a tool's result as ``str(result)``: a returned dict reaches
the transcript as a Python repr (``{'city': 'Paris'}``), read back here as the value it was.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tracescore.extract import openinference
from tracescore.extract.base import as_str, first_str, load_json, new_info, timestamp, usage_from
from tracescore.extract.genai_messages import parse_message, parse_messages, parse_tool_definitions
from tracescore.extract.messages import build_message, split_system, text_message
from tracescore.extract.model import Message, SpanInfo, TokenUsage, ToolDefinition
from tracescore.spans import LogRecord, Span

NAME = "openinference-crewai"
SCOPE = "openinference.instrumentation.crewai"
"""The instrumentor's scope with default settings; ``use_event_listener=True`` adds
``._event_listener``."""

_KIND = "openinference.span.kind"
_MAX_LITERAL_CHARS = 100_000  # a Python repr longer than this stays text
_TOOL_REPR = re.compile(
    r"""^name=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*") description=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
)
_TOOL_DESCRIPTION = "Tool Description: "


def in_scope(scope: str) -> bool:
    return scope == SCOPE or scope.startswith(SCOPE + ".")


def detect(span: Span) -> bool:
    return in_scope(span.scope.name) and _KIND in span.attributes


def read(span: Span, logs: list[LogRecord]) -> SpanInfo:
    kind = as_str(span.attributes.get(_KIND))
    if kind == "AGENT" and span.scope.name == SCOPE:
        output = _json_output(span, ("messages",))
        if isinstance(output, dict) and isinstance(output.get("messages"), list):
            return _transcript_agent(span, output)
        return _untranscribed_agent(span)
    if kind == "CHAIN":
        return _crew(span)
    info = openinference.read(span, logs)
    info.convention = NAME
    if info.kind == "llm":
        _repair_llm(span, info)
    elif info.kind == "tool" and info.tool_call is not None:
        info.tool_call.result = python_literal(info.tool_call.result)
    return info


def refine(read: list[tuple[Span, SpanInfo]]) -> None:
    """Join each agent's TOOL spans to the model's calls they ran, and put a crew's usage on
    its only task."""
    children: dict[str, list[tuple[Span, SpanInfo]]] = {}
    for span, info in read:
        children.setdefault(span.parent_span_id or "", []).append((span, info))
    for span, info in read:
        below = children.get(span.span_id, [])
        tools = [(s, i) for s, i in below if i.kind == "tool"]
        if info.kind == "agent" and tools:
            steps = [i for _, i in below if i.kind == "llm"]
            _join_agent_tools(info, steps, [i for _, i in tools])
            _upgrade_tools(info, [s for s, _ in tools])
        elif info.kind == "other" and info.usage is not None:
            agents = [i for _, i in below if i.kind == "agent"]
            if len(agents) == 1 and agents[0].usage is None:
                agents[0].usage = info.usage
            elif len(agents) > 1:
                for agent in agents:
                    agent.warnings.append(
                        f"usage: the crew's {info.usage.total_tokens} tokens are a total over "
                        f"{len(agents)} tasks, not recorded per task; not counted on this run"
                    )


def _join_agent_tools(agent: SpanInfo, steps: list[SpanInfo], tools: list[SpanInfo]) -> None:
    """The TOOL spans get the ids of the calls they ran: the LLM steps' calls (event listener),
    or the transcript's (default settings), where each TOOL span then takes the place of its
    call: the call and its result message leave the agent's steps, which the assembler would
    otherwise count a second time."""
    if steps:
        asked = [m for step in steps for m in step.output_messages]
        sent = [m for step in steps for m in step.input_messages]
    else:
        asked = sent = agent.output_messages
    joined = _join_tool_spans(asked, sent, tools)
    if joined and not steps:
        agent.output_messages = _without_calls(agent.output_messages, joined)


# --- default settings: the transcript on the AGENT span -----------------------------------------


def _json_output(span: Span, keys: tuple[str, ...]) -> Any:
    """``output.value`` decoded, when it is JSON that names one of ``keys`` (checked on the
    text first: most outputs are not decoded at all)."""
    value = span.attributes.get("output.value")
    if not isinstance(value, str) or not any(f'"{key}"' in value for key in keys):
        return None
    return load_json(value, [], "output.value")


def _transcript_agent(span: Span, output: dict[str, Any]) -> SpanInfo:
    """An AGENT span whose ``output.value`` holds the invocation's transcript."""
    info = new_info(span, NAME)
    info.kind = "agent"
    attributes = span.attributes
    info.agent_name = (
        first_str(attributes, "agent.name", "graph.node.id")
        or as_str(output.get("agent_role"))
        or as_str(output.get("agent"))
        or span.name
    )
    messages = parse_messages(
        output["messages"],
        f"{span.span_id}-t",
        info.warnings,
        "output.value.messages",
        created_at=timestamp(span.start_time_ns),
    )
    info.system, conversation = split_system(messages)
    last_user = max((i for i, m in enumerate(conversation) if m.role == "user"), default=-1)
    info.input_messages = conversation[: last_user + 1]
    steps = [_literal_results(m) for m in conversation[last_user + 1 :]]
    answer = as_str(output.get("raw"))
    if answer and _last_assistant_text(steps) != answer:
        steps.append(
            text_message(f"{span.span_id}-answer", "assistant", answer, timestamp(span.end_time_ns))
        )
    info.output_messages = steps
    usage = output.get("usage_metrics")
    if isinstance(usage, Mapping):
        info.usage = _crewai_usage(usage)
    info.tools = _offered_tools(attributes)
    return info


def _untranscribed_agent(span: Span) -> SpanInfo:
    """An AGENT span of the default settings whose transcript cannot be read (``output.value``
    cut by an attribute length limit, or an instrumentor that records none): its
    ``input.value`` is still no user input, only ``Agent.kickoff``'s ``messages`` are."""
    info = new_info(span, NAME)
    info.kind = "agent"
    info.agent_name = first_str(span.attributes, "agent.name", "graph.node.id") or span.name
    info.tools = _offered_tools(span.attributes)
    arguments = load_json(span.attributes.get("input.value"), info.warnings, "input.value")
    if isinstance(arguments, dict) and "messages" in arguments:
        info.system, info.input_messages = split_system(
            parse_messages(
                arguments["messages"],
                f"{span.span_id}-in",
                info.warnings,
                "input.value.messages",
                created_at=timestamp(span.start_time_ns),
            )
        )
    info.warnings.append(
        "CrewAI: output.value holds no readable transcript (cut by an attribute length "
        "limit?): no steps or answer to read"
    )
    return info


def _crew(span: Span) -> SpanInfo:
    """A crew's CHAIN span: a wrapper, read for the crew's usage only."""
    info = new_info(span, NAME)
    output = _json_output(span, ("token_usage",))
    usage = output.get("token_usage") if isinstance(output, dict) else None
    if isinstance(usage, Mapping):
        info.usage = _crewai_usage(usage)
    return info


def _crewai_usage(usage: Mapping[str, Any]) -> TokenUsage | None:
    """CrewAI's ``UsageMetrics`` (``prompt_tokens``, ``completion_tokens``, …)."""
    return usage_from(
        usage,
        input_tokens=("prompt_tokens",),
        output_tokens=("completion_tokens",),
        total_tokens=("total_tokens",),
        reasoning_tokens=("reasoning_tokens",),
        cached_input_tokens=("cached_prompt_tokens",),
    )


def _last_assistant_text(messages: list[Message]) -> str | None:
    texts = [m.content.content for m in messages if m.role == "assistant" and m.content.content]
    return texts[-1] if texts else None


def _offered_tools(attributes: Mapping[str, Any]) -> list[ToolDefinition]:
    """The agent's tools: ``agent.tools`` names (``Agent.kickoff``), or the name and description
    of each tool repr in a task's ``input.value.tools``."""
    names = load_json(attributes.get("agent.tools"), [], "agent.tools")
    if isinstance(names, list):
        return [ToolDefinition(name=n) for n in names if isinstance(n, str) and n]
    config = load_json(attributes.get("input.value"), [], "input.value")
    tools = config.get("tools") if isinstance(config, dict) else None
    found = []
    for text in tools if isinstance(tools, list) else []:
        match = _TOOL_REPR.match(text) if isinstance(text, str) else None
        if match is not None:
            name, description = (_string_literal(g) for g in match.groups())
            if name:
                found.append(ToolDefinition(name=name, description=description or None))
    return found


def _join_tool_spans(asked: list[Message], sent: list[Message], tools: list[SpanInfo]) -> set[str]:
    """Each TOOL span's call gets the id of the first call ``asked`` of the same tool (same
    arguments preferred) not yet joined, and the result the model was ``sent`` for it when the
    span recorded none (a failure's error text). Returns the ids joined."""
    calls = [
        p.tool_invocation
        for m in asked
        for p in m.content.parts
        if p.tool_invocation is not None and p.tool_invocation.state == "call"
    ]
    results = {
        p.tool_invocation.tool_call_id: p.tool_invocation
        for m in sent
        for p in m.content.parts
        if p.tool_invocation is not None and p.tool_invocation.state != "call"
    }
    joined: set[str] = set()
    for tool in sorted(tools, key=lambda t: t.start_time_ns):
        ran = tool.tool_call
        if ran is None or ran.tool_call_id:
            continue
        candidates = [
            c
            for c in calls
            if c.tool_call_id and c.tool_call_id not in joined and c.tool_name == ran.tool_name
        ]
        call = next((c for c in candidates if c.args == ran.args), None) or next(
            iter(candidates), None
        )
        if call is None:
            continue
        joined.add(call.tool_call_id)
        ran.tool_call_id = call.tool_call_id
        answer = results.get(call.tool_call_id)
        if ran.result is None and answer is not None:
            ran.result = answer.result
    return joined


def _without_calls(messages: Iterable[Message], call_ids: set[str]) -> list[Message]:
    kept = []
    for message in messages:
        parts = [
            p
            for p in message.content.parts
            if p.tool_invocation is None or p.tool_invocation.tool_call_id not in call_ids
        ]
        if parts:
            kept.append(
                build_message(
                    message.id, message.role, parts, message.created_at, message.content.metadata
                )
            )
    return kept


def _upgrade_tools(agent: SpanInfo, tool_spans: list[Span]) -> None:
    """Offered tools completed from the TOOL spans that ran them (schema, description)."""
    by_name = {t.name: t for t in agent.tools}
    for span in tool_spans:
        name = first_str(span.attributes, "tool.name")
        definition = by_name.get(name or "")
        if definition is None or definition.parameters is not None:
            continue
        schema = load_json(span.attributes.get("tool.parameters"), [], "tool.parameters")
        if isinstance(schema, dict):
            definition.parameters = schema
        described = as_str(span.attributes.get("tool.description")) or ""
        if definition.description is None and _TOOL_DESCRIPTION in described:
            definition.description = described.rsplit(_TOOL_DESCRIPTION, 1)[1].strip() or None


# --- use_event_listener=True: LLM spans ----------------------------------------------------------


def _repair_llm(span: Span, info: SpanInfo) -> None:
    attributes = span.attributes
    if "llm.output_messages.0.message.role" not in attributes:
        calls = load_json(attributes.get("output.value"), [], "output.value")
        if (
            isinstance(calls, list)
            and calls
            and all(isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls)
        ):
            message = parse_message(
                {"role": "assistant", "tool_calls": calls},
                f"{span.span_id}-out-0",
                info.warnings,
                "output.value",
                created_at=timestamp(span.end_time_ns),
            )
            info.output_messages = [message] if message is not None else []
    info.input_messages = [_literal_results(m) for m in info.input_messages]
    for message in info.input_messages:
        for part in message.content.parts:
            if part.tool_invocation is not None:
                part.tool_invocation.tool_name = _unquoted(part.tool_invocation.tool_name)
    if not info.tools and "llm.tools" in attributes:
        info.tools = [
            _repaired_schema(t)
            for t in parse_tool_definitions(attributes["llm.tools"], info.warnings, "llm.tools")
        ]


def _unquoted(name: str) -> str:
    """``'get_weather'`` → ``get_weather`` (the listener records the name's repr)."""
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        return name[1:-1]
    return name


def _repaired_schema(tool: ToolDefinition) -> ToolDefinition:
    """Parameters whose property schemas are Python reprs and whose ``required`` names are
    quoted, as the listener records them, made JSON Schema again."""
    schema = tool.parameters
    if not schema:
        return tool
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = {k: python_literal(v) for k, v in properties.items()}
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [_unquoted(r) if isinstance(r, str) else r for r in required]
    return tool


# --- shared ----------------------------------------------------------------------------------


def _literal_results(message: Message) -> Message:
    """A message whose tool results (``str(result)`` of a dict or list) are values again."""
    for part in message.content.parts:
        invocation = part.tool_invocation
        if invocation is not None and invocation.state != "call":
            invocation.result = python_literal(invocation.result)
    return message


def python_literal(value: Any) -> Any:
    """A Python repr of a dict or list (what ``str()`` makes of one) as that value; anything
    else, or a repr too long or not a literal, unchanged."""
    if not isinstance(value, str) or len(value) > _MAX_LITERAL_CHARS:
        return value
    text = value.strip()
    if not text or text[0] not in "{[":
        return value
    decoded = _literal(text)
    return decoded if isinstance(decoded, (dict, list)) else value


def _string_literal(text: str) -> str:
    """A quoted Python string literal's value ('' when it is none)."""
    decoded = _literal(text)
    return decoded if isinstance(decoded, str) else ""


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
