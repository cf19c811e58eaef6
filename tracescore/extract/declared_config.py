"""The ``conventions:`` section: span conventions taught in configuration instead of code.

A library tracescore has no module for is usually a mapping: its spans say what they are in an
attribute or their name, and keep the prompt, the messages and the usage in attributes of their
own, often as JSON. Each entry names those places; :mod:`tracescore.extract.declared` compiles
it into a convention asked before the built-in ones. Patterns and paths are checked here, so a
bad one is refused at start with the key that holds it.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from tracescore.extract.json_path import parse_path
from tracescore.extract.model import SpanKindName
from tracescore.settings import Section, compile_pattern


class Source(Section):
    """Where one fact is: an attribute, and a path into its JSON value when the attribute holds
    a JSON document. A bare string is short for ``{attribute: <string>}``."""

    attribute: str = Field(min_length=1)
    """The span attribute, by its full key (``acme.request``)."""
    path: str | None = None
    """Where inside the attribute's JSON value: keys separated by ``.``, ``[N]`` for a list
    index (``[-1]`` is the last), ``["a.b"]`` for a key holding dots:
    ``choices[0].message.content``. JSON strings met on the way are decoded."""

    @model_validator(mode="before")
    @classmethod
    def _bare_attribute(cls, data: object) -> object:
        return {"attribute": data} if isinstance(data, str) else data

    @field_validator("path")
    @classmethod
    def _valid_path(cls, path: str | None) -> str | None:
        if path is not None:
            parse_path(path)
        return path


class UsageSources(Section):
    """Where the token counts are; the total is input + output when not given."""

    input_tokens: Source | None = None
    output_tokens: Source | None = None
    total_tokens: Source | None = None


class ReadConfig(Section):
    """Where a span's facts are. Each is a :class:`Source`: an attribute, or an attribute and a
    path into its JSON value."""

    agent_name: Source | None = None
    """The agent's name (an agent span without one is named after the span)."""
    system: Source | None = None
    """The system prompt: text, a list of texts, or a list of ``{type: text, text}`` parts."""
    messages: Source | None = None
    """Everything the model or agent was sent: an OpenAI or Anthropic message array (or a request
    body holding ``messages`` and, for Anthropic, ``system``). System messages become the system
    prompt, the last user turn the input, the rest history."""
    input: Source | None = None
    """The user's input when there is no ``messages``: text, a message, a message array or a
    request body."""
    output: Source | None = None
    """The answer: text, an assistant message, a chat completion (``choices``) or an Anthropic
    message (``content`` blocks); their tool calls join the tool spans by id."""
    tool_name: Source | None = None
    """On a tool span: the tool's name (default: the span's name)."""
    tool_call_id: Source | None = None
    """On a tool span: the id of the call it answers, which joins it to the model's call."""
    arguments: Source | None = None
    """On a tool span: the arguments (an object, or JSON text)."""
    result: Source | None = None
    """On a tool span: what the tool returned."""
    documents: Source | None = None
    """On a retrieval span: a list of texts, or of objects with ``content``, ``text`` or
    ``page_content`` (and optionally ``id``, ``score``)."""
    model: Source | None = None
    provider: Source | None = None
    error: Source | None = None
    """An error message; when present the span counts as failed."""
    usage: UsageSources | None = None


class SpanMatch(Section):
    """Which spans: every condition given must hold. Patterns are exact, a glob (``acme.*``) or
    ``re:<regex>`` (full match), as in ``scorers[].filter``."""

    scope: str | None = None
    """Pattern on the instrumentation scope's name."""
    name: str | None = None
    """Pattern on the span's name."""
    has: list[str] = Field(default_factory=list)
    """Attributes the span must have (any value)."""
    equals: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Attributes the span must have with exactly this value (a string attribute also matches
    the value written as text: ``1`` matches ``"1"``, ``true`` matches ``"true"``)."""

    @field_validator("scope", "name")
    @classmethod
    def _valid_pattern(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                compile_pattern(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from None
        return pattern


class SpanRule(SpanMatch):
    """One kind of span of the library: the conditions that pick it out and where its facts are."""

    kind: SpanKindName
    """``agent``, ``llm``, ``tool``, ``retrieval``, or ``other`` (claimed, kept in the tree,
    no run: the library's internal spans)."""
    read: ReadConfig = Field(default_factory=ReadConfig)
    """Where this kind's facts are; keys given here replace the convention's ``read``."""


class ConventionConfig(Section):
    """A span convention: the spans of one library and where their facts are. A span is claimed
    when it satisfies ``match`` and one of ``spans``, the first that fits giving its kind."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    """The convention's name, shown on its runs (``convention``)."""
    match: SpanMatch = Field(default_factory=SpanMatch)
    """Conditions every span of the library meets (typically its ``scope``)."""
    read: ReadConfig = Field(default_factory=ReadConfig)
    """Where the facts are on every kind of span (each rule's ``read`` overrides keys)."""
    spans: list[SpanRule] = Field(min_length=1)
    """The kinds of span, most specific first."""

