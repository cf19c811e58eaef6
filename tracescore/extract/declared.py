"""Conventions declared in configuration (``conventions:``), compiled into convention objects.

Each :class:`~tracescore.extract.declared_config.ConventionConfig` becomes one
:class:`DeclaredConvention`, an object with the module protocol of every convention (``NAME``,
``detect``, ``read``). Patterns and paths are compiled once, here, so ``detect`` stays a few
dict lookups and precompiled matches per span. The facts found are read with the parsers the
built-in conventions use (:mod:`tracescore.extract.genai_messages`,
:mod:`tracescore.extract.chat_bodies`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracescore.extract.base import (
    Convention,
    as_int,
    json_text,
    load_json,
    new_info,
    timestamp,
)
from tracescore.extract.chat_bodies import read_request, response_messages
from tracescore.extract.declared_config import (
    ConventionConfig,
    Fact,
    OwnFacts,
    Source,
    SpanMatch,
)
from tracescore.extract.genai_messages import (
    decode_arguments,
    decode_result,
    parse_system_instructions,
    parse_tool_definitions,
)
from tracescore.extract.json_path import Step, follow, parse_path
from tracescore.extract.messages import executed_call
from tracescore.extract.model import ContextDocument, SpanInfo, SpanKindName, TokenUsage
from tracescore.extract.registry import CONVENTIONS
from tracescore.settings import Matcher, compile_pattern
from tracescore.spans import LogRecord, Span

_USAGE_FACTS: tuple[Fact, ...] = ("input_tokens", "output_tokens", "total_tokens")


def claim_order(configs: Sequence[ConventionConfig]) -> list[Convention]:
    """The conventions asked to claim a span: the declared ones (in the order written), then
    the built-in ones, so a declaration can take a library's spans from a generic module."""
    return [*(DeclaredConvention(config) for config in configs), *CONVENTIONS]


class _Match:
    """A compiled :class:`SpanMatch`: cheapest tests first."""

    def __init__(self, config: SpanMatch) -> None:
        self.has = tuple(config.has)
        self.lacks = tuple(config.lacks)
        self.root = config.root
        self.equals = tuple((key, value, _as_text(value)) for key, value in config.equals.items())
        self.scope: Matcher | None = compile_pattern(config.scope) if config.scope else None
        self.name: Matcher | None = compile_pattern(config.name) if config.name else None

    def __call__(self, span: Span) -> bool:
        attributes = span.attributes
        for key in self.has:
            if key not in attributes:
                return False
        for key in self.lacks:
            if key in attributes:
                return False
        if self.root is not None and self.root == bool(span.parent_span_id):
            return False
        for key, value, text in self.equals:
            found = attributes.get(key)
            if found != value and found != text:
                return False
        if self.scope is not None and not self.scope(span.scope.name):
            return False
        return self.name is None or bool(self.name(span.name))


def _as_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class _Place:
    """A compiled :class:`Source`: an attribute (``None``: the span's name), a path, a pattern."""

    attribute: str | None
    steps: tuple[Step, ...]
    what: str
    pattern: re.Pattern[str] | None = None

    @classmethod
    def of(cls, source: Source) -> _Place:
        steps = parse_path(source.path) if source.path else ()
        what = source.attribute or "span name"
        if source.path:
            what = f"{what}:{source.path}"
        pattern = re.compile(source.pattern) if source.pattern else None
        return cls(source.attribute, steps, what, pattern)

    def get(self, span: Span, warnings: list[str]) -> Any:
        """The value at this place; JSON text is decoded (quietly: a text fact that merely
        opens with a bracket or a quote is still text), so ``"AGENT"`` sent JSON-quoted reads
        as ``AGENT`` and a request body as an object."""
        if self.attribute is None:
            value: Any = span.name
        else:
            value = span.attributes.get(self.attribute)
            if value is None:
                return None
            if self.steps:
                value = follow(value, self.steps, warnings, self.what)
            else:
                value = load_json(value, [], self.what)
        if self.pattern is not None and isinstance(value, str):
            found = self.pattern.fullmatch(value)
            if found is not None:
                value = found.group(1) if found.re.groups else found.group(0)
        return value


class _Reader:
    """The compiled places of one rule's facts (its own, else its convention's)."""

    def __init__(self, places: Mapping[Fact, Source], own_facts: OwnFacts = "fallback") -> None:
        self.places = {fact: _Place.of(source) for fact, source in places.items()}
        self.own_facts_first = own_facts == "first"
        self.usage = [(fact, self.places[fact]) for fact in _USAGE_FACTS if fact in self.places]

    def value(self, fact: Fact, span: Span, warnings: list[str]) -> Any:
        place = self.places.get(fact)
        return None if place is None else place.get(span, warnings)

    def text(self, fact: Fact, span: Span, warnings: list[str]) -> str | None:
        value = self.value(fact, span, warnings)
        return json_text(value) if value not in (None, "") else None

    def read_usage(self, span: Span, warnings: list[str]) -> TokenUsage | None:
        counts = {
            fact: count
            for fact, place in self.usage
            if (count := as_int(place.get(span, warnings))) is not None
        }
        if not counts:
            return None
        counts.setdefault(
            "total_tokens", counts.get("input_tokens", 0) + counts.get("output_tokens", 0)
        )
        return TokenUsage(**counts)


class DeclaredConvention:
    """A convention compiled from configuration; satisfies :class:`~tracescore.extract.base.Convention`."""

    def __init__(self, config: ConventionConfig) -> None:
        self.NAME = config.name
        self._match = _Match(config.match)
        self._rules: list[tuple[_Match, SpanKindName, _Reader]] = [
            (
                _Match(rule),
                rule.kind,
                _Reader({**config.read, **rule.read}, (rule.own_facts or config.own_facts)),
            )
            for rule in config.spans
        ]

    def __repr__(self) -> str:
        return f"<declared convention {self.NAME!r}>"

    def _rule(self, span: Span) -> tuple[SpanKindName, _Reader] | None:
        if not self._match(span):
            return None
        return next(((kind, reader) for match, kind, reader in self._rules if match(span)), None)

    def detect(self, span: Span) -> bool:
        return self._rule(span) is not None

    def read(self, span: Span, logs: list[LogRecord]) -> SpanInfo:
        info = new_info(span, self.NAME)
        rule = self._rule(span)
        if rule is None:
            return info
        info.kind, reader = rule
        _read_facts(span, info, reader)
        return info


def _read_facts(span: Span, info: SpanInfo, reader: _Reader) -> None:
    warnings = info.warnings
    info.model = reader.text("model", span, warnings)
    info.provider = reader.text("provider", span, warnings)
    info.usage = reader.read_usage(span, warnings)
    error = reader.value("error", span, warnings)
    if error not in (None, "", False):  # ``error: false`` on a span that went well
        info.status, info.error = "error", json_text(error)
    if info.kind == "agent":
        info.agent_name = reader.text("agent_name", span, warnings) or span.name
        info.own_facts_first = reader.own_facts_first
    else:
        info.agent_name = reader.text("agent_name", span, warnings)
    sent = reader.value("messages", span, warnings)
    if sent is None:
        sent = reader.value("input", span, warnings)
    if sent is not None:
        read_request(
            sent,
            info,
            f"{span.span_id}-in",
            _what(reader, "messages", "input"),
            timestamp(span.start_time_ns),
        )
    if (system := reader.value("system", span, warnings)) is not None:
        texts = parse_system_instructions(system, warnings, reader.places["system"].what)
        info.system[:0] = [text for text in texts if text not in info.system]  # sent twice
    if (answer := reader.value("output", span, warnings)) is not None:
        info.output_messages = response_messages(
            answer,
            info,
            f"{span.span_id}-out",
            reader.places["output"].what,
            timestamp(span.end_time_ns),
        )
    if info.kind == "tool":
        arguments = decode_arguments(
            reader.value("arguments", span, warnings), warnings, "arguments"
        )
        result, is_error = decode_result(reader.value("result", span, warnings))
        info.tool_call = executed_call(
            reader.text("tool_call_id", span, warnings) or "",
            reader.text("tool_name", span, warnings) or span.name,
            arguments,
            result,
            failed=is_error or info.status == "error",
            error=info.error,
        )
    if (offered := reader.value("tools", span, warnings)) is not None:
        info.tools = parse_tool_definitions(offered, warnings, reader.places["tools"].what)
    if info.kind == "retrieval":
        info.documents = _documents(reader.value("documents", span, warnings), span.name)


def _what(reader: _Reader, *facts: Fact) -> str:
    return next(reader.places[f].what for f in facts if f in reader.places)


def _documents(value: Any, source: str) -> list[ContextDocument]:
    """Retrieved documents: texts, or objects with ``content`` / ``text`` / ``page_content``."""
    documents = []
    for item in value if isinstance(value, list) else []:
        raw = item if isinstance(item, dict) else {"content": item}
        content = next((raw[k] for k in ("content", "text", "page_content") if raw.get(k)), None)
        if content is None:
            continue
        score = raw.get("score")
        documents.append(
            ContextDocument(
                content=json_text(content),
                source=json_text(raw["id"]) if raw.get("id") is not None else source,
                score=float(score) if isinstance(score, (int, float)) else None,
            )
        )
    return documents
