"""The ``conventions:`` section: span conventions taught in configuration instead of code.

A library tracescore has no module for is usually a mapping: its spans say what they are in an
attribute or their name, and keep the prompt, the messages and the usage in attributes of their
own, often as JSON. Each entry names those places; :mod:`tracescore.extract.declared` compiles
it into a convention asked before the built-in ones. Patterns and paths are checked here, so a
bad one is refused at start with the key that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator, model_validator

from tracescore.extract.json_path import parse_path
from tracescore.extract.model import SpanKindName
from tracescore.settings import Problem, Section, compile_pattern


class Source(Section):
    """Where one fact is: an attribute (and a path into its JSON value when the attribute holds
    a JSON document), or the span's name. A bare string is short for ``{attribute: <string>}``."""

    attribute: str | None = Field(default=None, min_length=1)
    """The span attribute, by its full key (``acme.request``)."""
    span_name: bool = False
    """Read the span's name instead of an attribute (with ``pattern``, a part of it)."""
    path: str | None = None
    """Where inside the attribute's JSON value: keys separated by ``.``, ``[N]`` for a list
    index (``[-1]`` is the last), ``["a.b"]`` for a key holding dots:
    ``choices[0].message.content``. JSON strings met on the way are decoded."""
    pattern: str | None = None
    r"""A regular expression the text found must match whole; its first group (else the whole
    match) is the value kept: ``(.+)\.__call__`` reads ``get_weather`` out of
    ``get_weather.__call__``. A value it does not match is kept as it is."""

    @model_validator(mode="before")
    @classmethod
    def _bare_attribute(cls, data: object) -> object:
        return {"attribute": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_place(self) -> Source:
        if (self.attribute is None) == (not self.span_name):
            raise ValueError("give either attribute or span_name: true")
        if self.span_name and self.path is not None:
            raise ValueError("path reads inside an attribute's JSON value, not the span's name")
        return self

    @field_validator("path")
    @classmethod
    def _valid_path(cls, path: str | None) -> str | None:
        if path is not None:
            parse_path(path)
        return path

    @field_validator("pattern")
    @classmethod
    def _valid_regex(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from None
        return pattern


OwnFacts = Literal["fallback", "first"]
"""Which wins on an agent span with model calls below it: the calls' system prompt, input and
answer (``fallback``: the span's own are used only where the calls have none) or the span's
(``first``)."""

Fact = Literal[
    "agent_name",
    "system",
    "messages",
    "input",
    "output",
    "tool_name",
    "tool_call_id",
    "arguments",
    "result",
    "documents",
    "tools",
    "model",
    "provider",
    "error",
    "input_tokens",
    "output_tokens",
    "total_tokens",
]
"""A fact a convention says where to find: the keys of ``read``."""


class SpanMatch(Section):
    """Which spans: every condition given must hold. Patterns are exact, a glob (``acme.*``) or
    ``re:<regex>`` (full match), as in ``scorers[].filter``."""

    scope: str | None = None
    """Pattern on the instrumentation scope's name."""
    name: str | None = None
    """Pattern on the span's name."""
    has: list[str] = Field(default_factory=list)
    """Attributes the span must have (any value)."""
    lacks: list[str] = Field(default_factory=list)
    """Attributes the span must not have (a library that writes an agent's attributes on its
    inner spans too tells them apart by what they lack)."""
    root: bool | None = None
    """``true``: only a span without a parent (the trace's root, e.g. the graph run that holds
    the user's question); ``false``: only a span with one."""
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
    read: dict[Fact, Source] = Field(default_factory=dict)
    """Where this kind's facts are, by fact as in the convention's ``read``; a fact given here
    replaces the convention's place for it."""
    own_facts: OwnFacts | None = None
    """As the convention's ``own_facts``, for this kind of span."""


class ConventionConfig(Section):
    """A span convention: the spans of one library and where their facts are. A span is claimed
    when it satisfies ``match`` and one of ``spans``, the first that fits giving its kind."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    """The convention's name, shown on its runs (``convention``)."""
    match: SpanMatch = Field(default_factory=SpanMatch)
    """Conditions every span of the library meets (typically its ``scope``)."""
    read: dict[Fact, Source] = Field(default_factory=dict)
    """Where the span's facts are, by fact, each an attribute (or an attribute and a path
    into its JSON value): ``agent_name`` (an agent span without one is named after the span);
    ``system``, the system prompt (text, texts, or ``{type: text, text}`` parts); ``messages``,
    everything the model or agent was sent, as an OpenAI or Anthropic message array or a request
    body holding ``messages`` (and ``system``): system messages become the system prompt, the last
    user turn the input, the rest history; ``input``, the user's input when there is no
    ``messages`` (text, a message, or as ``messages``); ``output``, the answer: text, an assistant
    message, a chat completion (``choices``) or an Anthropic message (``content`` blocks), whose tool
    calls join the tool spans by id; on tool spans ``tool_name`` (default: the span's name),
    ``tool_call_id`` (joins the model's call), ``arguments`` and ``result``; on retrieval spans
    ``documents`` (texts, or objects with ``content``, ``text`` or ``page_content``); ``tools``, the
    tools the model or agent was offered (OpenAI, Anthropic or GenAI tool definitions, or
    names); ``model``,
    ``provider``; ``error`` (when present, the span failed); ``input_tokens``, ``output_tokens``,
    ``total_tokens`` (input + output when not given). Shared by every kind of span of ``spans``."""
    own_facts: OwnFacts = "fallback"
    """Whose system prompt, input and answer an agent run takes when its span has model calls
    below it. ``fallback`` (the default, as for every built-in convention): the calls', which
    record what the model was really sent and said; the agent span's own ``system``, ``input``
    / ``messages`` and ``output`` only where the calls have none. ``first``: the agent span's
    own wherever it has them (a span holding the user's question while its calls hold a
    framework's whole prompt). Tool calls and usage always come from the calls."""
    spans: list[SpanRule] = Field(min_length=1)
    """The kinds of span, most specific first."""


def convention_problems(conventions: Sequence[ConventionConfig]) -> list[Problem]:
    """A name given to more than one convention (``conventions`` names them on the runs)."""
    found: list[Problem] = []
    names: set[str] = set()
    for index, convention in enumerate(conventions):
        if convention.name in names:
            found.append(
                (
                    ("conventions", str(index), "name"),
                    f"duplicate convention name {convention.name!r}",
                )
            )
        names.add(convention.name)
    return found
