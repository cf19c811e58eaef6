"""The run model: what scorers judge, rebuilt from spans by the extractors.

The shapes mirror Mastra's scorer run (``ScorerRunInputForAgent`` and ``MastraDBMessage``) so
that a scorer ported from Mastra reads the same fields, and so that Mastra-shaped JSON runs
validate straight into these models. Python attribute names are snake_case; the JSON aliases are
Mastra's camelCase, and ``AgentRun.mastra_input()`` / ``mastra_output()`` dump exactly the dicts
Mastra's scorer utils walk.

Each shape is defined once, as a pydantic model, validated where runs come in (Mastra-shaped
JSON runs, offline inputs, APIs: ``Model(...)``, ``model_validate``). Extraction builds each run
(``AgentRun.built``) and the copies a trajectory makes (``copied``) without the validator, from
values it made itself: the same instances, serialised alike (``mastra_input()``,
``model_dump``; ``tests/extract/test_extract_golden.py`` holds extraction to it byte for byte).
A run has twenty fields, most of them defaults: validating one took 13 µs, building it 8–10
(measured on a loaded machine). The small models (a part, a message) are still validated there:
pydantic's validator runs in Rust and is as fast as any Python-level construction of a pydantic
instance, which needs four slots set (measured), so only a lighter class than a pydantic model
would make them cheaper (see docs/benchmarks.md, Pipeline).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined

ToolState = Literal[
    "partial-call",
    "call",
    "result",
    "output-error",
    "output-denied",
    "approval-requested",
    "approval-responded",
]
RunKind = Literal["agent", "llm", "tool"]
SpanStatus = Literal["unset", "ok", "error"]
SpanKindName = Literal["agent", "llm", "tool", "retrieval", "other"]
"""The neutral kind every convention maps its spans to (the OTel span kind is another thing)."""


_new, _set_attribute = object.__new__, object.__setattr__


@dataclass(frozen=True, slots=True)
class _Blank:
    """A model's fields in declaration order with their defaults (``None`` holding the place
    of a factory's), its factories and required fields: what :meth:`_Model.built` starts
    each instance from."""

    defaults: dict[str, Any]
    factories: tuple[tuple[str, Callable[..., Any]], ...]
    """Each called with no argument: no factory of these models takes the validated data."""
    required: frozenset[str]


class _Model(BaseModel):
    """camelCase JSON aliases (Mastra's field names), snake_case attributes, unknown keys kept."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", ser_json_bytes="base64"
    )
    __blank__: ClassVar[_Blank]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.model_fields
        cls.__blank__ = _Blank(
            defaults={
                name: None if info.default_factory is not None else info.default
                for name, info in fields.items()
            },
            factories=tuple(
                (name, info.default_factory)
                for name, info in fields.items()
                if info.default_factory is not None
            ),
            required=frozenset(
                name
                for name, info in fields.items()
                if info.default is PydanticUndefined and info.default_factory is None
            ),
        )

    @classmethod
    def built(cls, **values: Any) -> Self:
        """The instance ``cls(**values)`` validates to, for values extraction made itself:
        field names (not aliases), each value already of its field's type, and no list or dict
        that its maker changes afterwards (validation would have copied it). Not for data from
        outside: that is validated, at the edge where it comes in.

        The same ``__dict__`` (in declaration order), fields set, empty extra and private state
        as validation leaves; it pays for a model with many defaulted fields (a run: two thirds
        of the time), not for one of a few, which pydantic's validator builds as fast. A
        missing required field or a name that is no field raises ``TypeError``.
        """
        blank = cls.__blank__
        state = blank.defaults | values  # declaration order, then any unknown name
        if len(state) != len(blank.defaults) or not blank.required <= values.keys():
            unknown = sorted(values.keys() - blank.defaults.keys())
            missing = sorted(blank.required - values.keys())
            raise TypeError(f"{cls.__name__}: unknown fields {unknown}, missing {missing}")
        for name, factory in blank.factories:
            if name not in values:
                state[name] = factory()
        instance = _new(cls)
        _set_attribute(instance, "__dict__", state)
        _set_attribute(instance, "__pydantic_fields_set__", set(values))
        _set_attribute(instance, "__pydantic_extra__", {})
        _set_attribute(instance, "__pydantic_private__", None)
        return instance

    def copied(self) -> Self:
        """``model_copy()`` (a shallow copy: fields, fields set and extra), built directly, for
        the calls a trajectory copies by the hundred."""
        instance = _new(type(self))
        extra = self.__pydantic_extra__
        _set_attribute(instance, "__dict__", self.__dict__.copy())
        _set_attribute(instance, "__pydantic_fields_set__", self.__pydantic_fields_set__.copy())
        _set_attribute(instance, "__pydantic_extra__", None if extra is None else extra.copy())
        _set_attribute(instance, "__pydantic_private__", self.__pydantic_private__)
        return instance


class ToolInvocation(_Model):
    """One tool call of the run, with its result once the tool answered."""

    tool_call_id: str
    tool_name: str
    args: Any = Field(default_factory=dict)
    result: Any = None
    state: ToolState = "result"
    is_error: bool | None = None
    error_text: str | None = None


class MessagePart(_Model):
    """A part of a message: ``text``, ``reasoning``, ``tool-invocation``, ``file``, ``source``…"""

    type: str
    text: str | None = None
    reasoning: str | None = None
    details: list[dict[str, Any]] | None = None
    tool_invocation: ToolInvocation | None = None
    mime_type: str | None = None
    data: str | None = None
    url: str | None = None


class MessageContent(_Model):
    format: int = 2
    parts: list[MessagePart] = Field(default_factory=list)
    content: str | None = None
    tool_invocations: list[ToolInvocation] | None = None
    reasoning: str | None = None
    metadata: dict[str, Any] | None = None


class Message(_Model):
    """A ``MastraDBMessage``: role ``user``, ``assistant``, ``system``, ``tool`` or ``signal``."""

    id: str
    role: str
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    content: MessageContent = Field(default_factory=MessageContent)


class SystemMessage(_Model):
    """A ``CoreSystemMessage``: content is a string or a list of ``{type, text}`` parts."""

    role: Literal["system"] = "system"
    content: str | list[dict[str, Any]] = ""


class RunInput(_Model):
    """``ScorerRunInputForAgent``."""

    input_messages: list[Message] = Field(default_factory=list)
    remembered_messages: list[Message] = Field(default_factory=list)
    system_messages: list[SystemMessage] = Field(default_factory=list)
    tagged_system_messages: dict[str, list[SystemMessage]] = Field(default_factory=dict)


class ToolDefinition(_Model):
    """A tool the model was offered (what LLM tool-call accuracy judges choices against)."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ContextDocument(_Model):
    """Grounding the run had: a retrieved document or a tool result."""

    content: str
    source: str | None = None  # retriever or tool name
    kind: Literal["retrieval", "tool_result", "provided"] = "retrieval"
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0

    @classmethod
    def total_of(cls, usages: Sequence[TokenUsage]) -> TokenUsage:
        """The usages summed field by field, built once (not one model per addition: summing
        an agent's steps pairwise was a tenth of an agent run's extraction)."""
        return cls(
            input_tokens=sum(u.input_tokens for u in usages),
            output_tokens=sum(u.output_tokens for u in usages),
            total_tokens=sum(u.total_tokens for u in usages),
            reasoning_tokens=sum(u.reasoning_tokens for u in usages),
            cached_input_tokens=sum(u.cached_input_tokens for u in usages),
        )


class AgentRun(_Model):
    """One scorable run: an agent invocation, an LLM call or a tool call, with its trajectory.

    For an agent run, ``output`` holds ONE assistant message whose parts are, in order, the
    reasoning, tool invocations (with results) and text of every step, and whose
    ``content.content`` is the final answer: Mastra's own persisted shape for an agent turn.
    """

    trace_id: str
    span_id: str
    kind: RunKind = "agent"
    # True for the runs that stand for "the agent" of a trace: every agent run except a wrapper
    # that only runs other agents (no LLM call or tool of its own), and LLM runs with no agent
    # or LLM span above them (raw client instrumentations have no agent span).
    primary: bool = False
    convention: str = "unknown"
    agent_name: str | None = None
    service_name: str | None = None
    conversation_id: str | None = None
    """The conversation (chat session, thread) this run is a turn of, when its trace names one
    (:mod:`tracescore.extract.conversation_id`)."""
    model: str | None = None
    provider: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    status: SpanStatus = "unset"
    error: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    input: RunInput = Field(default_factory=RunInput)
    output: list[Message] = Field(default_factory=list)
    context: list[ContextDocument] = Field(default_factory=list)
    tools: list[ToolDefinition] = Field(default_factory=list)
    ground_truth: Any = None
    span_ids: list[str] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)
    resource_attributes: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    trace_cut: str | None = None
    """Set when the run was rebuilt from part of its trace and the cut may have shortened it
    (a read's limit left out spans that started before the run ended,
    :mod:`tracescore.store.trace_cut`): what was read, and which key reads more. Scorers
    leave such a run unscored (``not_scorable``) rather than judge a part of it."""

    def mastra_input(self) -> dict[str, Any]:
        """The run input as the JSON dict Mastra's scorer utils read."""
        return self.input.model_dump(mode="json", by_alias=True, exclude_none=True)

    def mastra_output(self) -> list[dict[str, Any]]:
        """The run output as the JSON list of ``MastraDBMessage`` dicts."""
        return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in self.output]


@dataclass(slots=True, kw_only=True)
class SpanInfo:
    """What one convention module read off ONE span: the convention-neutral facts.

    Convention modules (``tracescore.extract.<convention>``) produce these; the run assembler
    turns a trace's tree of ``SpanInfo`` into ``AgentRun``s without ever looking at a
    convention-specific attribute. A plain dataclass, not a model: it never leaves extraction,
    and is written field by field several times per span, which a pydantic model's
    ``__setattr__`` made a fifth of extraction's cost.
    """

    span_id: str
    parent_span_id: str | None = None
    convention: str
    kind: SpanKindName = "other"
    name: str = ""
    agent_name: str | None = None
    model: str | None = None
    provider: str | None = None
    # Everything the LLM or agent was sent: system prompts separately, then the conversation
    # (user / assistant / tool messages, in order, history included).
    system: list[str] = field(default_factory=list)
    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    tool_call: ToolInvocation | None = None
    more_tool_calls: tuple[ToolInvocation, ...] = ()
    """On a tool span that ran several calls at once (Haystack 2.x's ``ToolInvoker``): the
    calls after ``tool_call``, each joined to its own call like it. A tuple: most spans have
    none, and an empty one costs nothing per span."""
    tools: list[ToolDefinition] = field(default_factory=list)
    documents: list[ContextDocument] = field(default_factory=list)
    usage: TokenUsage | None = None
    start_time_ns: int = 0
    end_time_ns: int = 0
    status: SpanStatus = "unset"
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    own_facts_first: bool = False
    """On an agent span: its own system prompt, input and answer outrank its model calls'
    (by default they are used only where the calls have none: the calls record what the model
    was really sent). Declared conventions set it (``own_facts: first``)."""
