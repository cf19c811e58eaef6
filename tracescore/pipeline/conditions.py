"""``when:`` conditions compiled into plain callables over a run and its trace.

A binding's :class:`~tracescore.pipeline.config.Condition` is compiled once, when the service
starts, into nested closures: patterns compiled, bounds bound, combinators reduced to
``all``/``any`` over their parts. Evaluating one is then a few attribute reads per key for every
run of every trace (see ``benchmarks/conditions.py``). What several keys read of a run (its tool
calls) is read once per run and evaluation, on the :class:`Subject`, and only when a key asks.

A figure the run lacks (a model litellm has no price for, no timestamps) passes no bound, so a
``when: {cost_usd: {min: 0.05}}`` never spends a judge on a run whose cost is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracescore.extract.messages import message_text
from tracescore.extract.model import AgentRun, ToolInvocation
from tracescore.judge.prices import token_prices
from tracescore.pipeline.config import Bounds, Condition, SpanCondition
from tracescore.settings import Matcher, compile_pattern
from tracescore.spans import Span

_FAILED_STATES = frozenset({"output-error", "output-denied"})


class Subject:
    """One run under evaluation, with the spans of its trace (none for a run read from a file:
    span conditions then read the run's own attributes)."""

    __slots__ = ("_tool_calls", "run", "spans")

    def __init__(self, run: AgentRun, spans: Sequence[Span] = ()) -> None:
        self.run = run
        self.spans = spans
        self._tool_calls: list[ToolInvocation] | None = None

    @property
    def tool_calls(self) -> list[ToolInvocation]:
        """The run's tool calls: its output's tool-invocation parts, then those only its
        messages' legacy lists hold."""
        if self._tool_calls is None:
            calls: list[ToolInvocation] = []
            for message in self.run.output:
                content = message.content
                seen = set()
                for part in content.parts:
                    if (invocation := part.tool_invocation) is not None:
                        calls.append(invocation)
                        seen.add(invocation.tool_call_id)
                for invocation in content.tool_invocations or ():
                    if invocation.tool_call_id not in seen:
                        calls.append(invocation)
            self._tool_calls = calls
        return self._tool_calls


Predicate = Callable[[Subject], bool]
Figure = Callable[[AgentRun], float | None]


def compile_condition(condition: Condition) -> Predicate:
    """The condition as one callable: true when every key given holds."""
    parts = tuple(compile_key(name, value) for name, value in condition if value is not None)
    return parts[0] if len(parts) == 1 else _every(parts)


def _every(parts: Sequence[Predicate]) -> Predicate:
    """True when every part holds, stopping at the first that does not."""
    return lambda subject: all(part(subject) for part in parts)


def _some(parts: Sequence[Predicate]) -> Predicate:
    """True when a part holds, stopping at the first that does."""
    return lambda subject: any(part(subject) for part in parts)


def compile_key(name: str, value: Any) -> Predicate:
    """One key of a condition; the keys are :class:`Condition`'s fields."""
    if name in _FIGURES:
        return _within(_FIGURES[name], value)
    if name == "tool_called":
        return _tool_called(value if isinstance(value, list) else [value])
    if name == "tool_calls":
        return _count_within(value)
    if name == "failed":
        return lambda subject: _run_failed(subject.run) is value
    if name == "tool_failed":
        return lambda subject: any(map(_call_failed, subject.tool_calls)) is value
    if name == "span":
        return _span(value)
    if name == "not_":
        inner = compile_condition(value)
        return lambda subject: not inner(subject)
    members = tuple(compile_condition(member) for member in value)
    return _every(members) if name == "all" else _some(members)


def _duration(run: AgentRun) -> float | None:
    if run.start_time is None or run.end_time is None:
        return None
    return (run.end_time - run.start_time).total_seconds()


def _tokens(run: AgentRun) -> float | None:
    usage = run.usage
    total = usage.total_tokens or usage.input_tokens + usage.output_tokens
    return float(total) if total else None


def _cost(run: AgentRun) -> float | None:
    usage = run.usage
    if run.model is None or not (usage.input_tokens or usage.output_tokens):
        return None
    prices = token_prices(run.model)
    if prices is None:
        return None
    return usage.input_tokens * prices[0] + usage.output_tokens * prices[1]


def _input_chars(run: AgentRun) -> float:
    return float(sum(len(message_text(m)) for m in run.input.input_messages if m.role == "user"))


def _output_chars(run: AgentRun) -> float:
    return float(sum(len(message_text(m)) for m in run.output))


_FIGURES: dict[str, Figure] = {
    "duration": _duration,
    "input_tokens": lambda run: float(run.usage.input_tokens) if run.usage.input_tokens else None,
    "output_tokens": lambda run: (
        float(run.usage.output_tokens) if run.usage.output_tokens else None
    ),
    "tokens": _tokens,
    "cost_usd": _cost,
    "input_chars": _input_chars,
    "output_chars": _output_chars,
}
"""The keys bounding one number of the run, and how each is read."""


def _bounded(bounds: Bounds) -> Callable[[float | None], bool]:
    low = float("-inf") if bounds.min is None else bounds.min
    high = float("inf") if bounds.max is None else bounds.max
    return lambda value: value is not None and low <= value <= high


def _within(figure: Figure, bounds: Bounds) -> Predicate:
    test = _bounded(bounds)
    return lambda subject: test(figure(subject.run))


def _count_within(bounds: Bounds) -> Predicate:
    test = _bounded(bounds)
    return lambda subject: test(len(subject.tool_calls))


def _run_failed(run: AgentRun) -> bool:
    return run.status == "error" or run.error is not None


def _call_failed(call: ToolInvocation) -> bool:
    return call.state in _FAILED_STATES or bool(call.is_error) or call.error_text is not None


def _any_pattern(patterns: Sequence[str]) -> Matcher:
    matchers = [compile_pattern(pattern) for pattern in patterns]
    if len(matchers) == 1:
        return matchers[0]
    return lambda text: any(matcher(text) for matcher in matchers)


def _tool_called(patterns: Sequence[str]) -> Predicate:
    matcher = _any_pattern(patterns)
    return lambda subject: any(matcher(call.tool_name) for call in subject.tool_calls)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _value_test(condition: SpanCondition) -> Callable[[Any], bool]:
    """What one attribute value must pass: every test given, none given means it exists."""
    tests: list[Callable[[Any], bool]] = []
    if condition.equals is not None:
        expected = _as_text(condition.equals)
        tests.append(lambda value: _as_text(value) == expected)
    if condition.matches is not None:
        matcher = compile_pattern(condition.matches)
        tests.append(lambda value: bool(matcher(_as_text(value))))
    if condition.min is not None or condition.max is not None:
        number = _bounded(Bounds(min=condition.min, max=condition.max))
        tests.append(lambda value: number(_as_number(value)))
    return lambda value: all(test(value) for test in tests)


def _span(condition: SpanCondition) -> Predicate:
    key = condition.attribute
    named = compile_pattern(condition.name) if condition.name is not None else None
    passes = _value_test(condition)
    missing = object()

    def found(attributes: dict[str, Any], resource: dict[str, Any]) -> bool:
        value = attributes.get(key, missing)
        if value is missing:
            value = resource.get(key, missing)
        return value is not missing and passes(value)

    def holds(subject: Subject) -> bool:
        if not subject.spans:
            run = subject.run
            return named is None and found(run.attributes, run.resource_attributes)
        return any(
            (named is None or named(span.name)) and found(span.attributes, span.resource.attributes)
            for span in subject.spans
        )

    if condition.exists is False:
        return lambda subject: not holds(subject)
    return holds
