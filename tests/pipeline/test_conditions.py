"""``when:`` conditions on runs extracted from real captures (issue 37, item 1).

Each predicate is checked both ways on the run a library really emitted: Pydantic AI's
weather agent (one ``get_weather`` call, 316 input and 68 output tokens, 0.11 s) and Langfuse's
tool-error scenario (three calls, the first failed). Configuration errors are checked through
``parse_config``, the path a service's start takes, for the key they name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.support.extract_support import WEATHER_USER
from tests.support.paths import CAPTURES
from tracescore.config import ConfigError, parse_config
from tracescore.extract import extract_runs
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.pipeline.conditions import Subject, compile_condition
from tracescore.pipeline.config import Condition
from tracescore.spans import STATUS_ERROR, Trace


def _trace(library: str, scenario: str) -> Trace:
    (trace,) = load_traces([CAPTURES / library / scenario])
    return trace


def _agent(trace: Trace) -> AgentRun:
    (run,) = [run for run in extract_runs(trace) if run.primary]
    return run


WEATHER = _trace("pydantic-ai", "tool_call")
TOOL_ERROR = _trace("langfuse", "tool_error")


def holds(when: dict[str, Any], trace: Trace = WEATHER, *, with_spans: bool = True) -> bool:
    predicate = compile_condition(Condition.model_validate(when))
    return predicate(Subject(_agent(trace), trace.spans if with_spans else ()))


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("get_weather", True),
        ("get_*", True),
        ("re:get_(weather|time)", True),
        (["search_web", "get_weather"], True),
        ("search_web", False),
        ("get", False),
    ],
)
def test_tool_called_matches_names_exactly_by_glob_or_regex(pattern: Any, expected: bool) -> None:
    assert holds({"tool_called": pattern}) is expected


def test_tool_call_count_bounds() -> None:
    assert holds({"tool_calls": {"min": 3}}, TOOL_ERROR)
    assert not holds({"tool_calls": {"min": 3}})
    assert holds({"tool_calls": {"max": 1}})
    assert holds({"tool_calls": {"min": 3, "max": 3}}, TOOL_ERROR)


def test_tool_failed_is_true_only_where_a_call_failed() -> None:
    assert holds({"tool_failed": True}, TOOL_ERROR)
    assert not holds({"tool_failed": True})
    assert holds({"tool_failed": False})


def test_failed_follows_the_run_status() -> None:
    """The same capture with its agent span ended in error: the run failed."""
    root = next(span for span in WEATHER.spans if span.parent_span_id is None)
    failed = Trace(
        WEATHER.trace_id,
        [
            dataclasses.replace(span, status_code=STATUS_ERROR, status_message="boom")
            if span is root
            else span
            for span in WEATHER.spans
        ],
        WEATHER.logs,
    )
    assert holds({"failed": True}, failed)
    assert not holds({"failed": False}, failed)
    assert not holds({"failed": True})
    assert holds({"failed": False})


def test_duration_bounds_take_durations() -> None:
    assert holds({"duration": {"max": "1s"}})  # the capture's run took 0.11 s
    assert not holds({"duration": {"min": "20s"}})
    assert holds({"duration": {"min": 0.1, "max": 0.2}})


def test_token_bounds() -> None:
    assert holds({"input_tokens": {"min": 316, "max": 316}})
    assert holds({"output_tokens": {"min": 68, "max": 68}})
    assert holds({"tokens": {"min": 384, "max": 384}})
    assert not holds({"tokens": {"min": 4000}})


def test_cost_is_priced_from_the_model_and_unknown_passes_no_bound() -> None:
    """gpt-4o-mini at $0.15 and $0.60 per million tokens: 316 and 68 tokens cost $0.0000882."""
    assert holds({"cost_usd": {"min": 0.00008, "max": 0.00009}})
    assert not holds({"cost_usd": {"min": 0.05}})
    unpriced = Trace(
        WEATHER.trace_id,
        [
            dataclasses.replace(
                span,
                attributes={
                    **span.attributes,
                    "gen_ai.request.model": "our-own-model",
                    "model_name": "our-own-model",
                },
            )
            for span in WEATHER.spans
        ],
        WEATHER.logs,
    )
    assert _agent(unpriced).model == "our-own-model"
    assert not holds({"cost_usd": {"max": 1.0}}, unpriced)
    assert not holds({"cost_usd": {"min": 0.0}}, unpriced)


def test_message_lengths() -> None:
    run = _agent(WEATHER)
    answer = sum(len(m.content.content or "") for m in run.output)
    assert answer > 0
    assert holds({"input_chars": {"min": len(WEATHER_USER), "max": len(WEATHER_USER)}})
    assert not holds({"input_chars": {"min": 2000}})
    assert holds({"output_chars": {"min": answer, "max": answer}})


def test_span_attributes_of_any_span_of_the_trace() -> None:
    # gen_ai.tool.name is only on the tool span, not on the agent run's own span.
    assert holds({"span": {"attribute": "gen_ai.tool.name", "equals": "get_weather"}})
    assert not holds({"span": {"attribute": "gen_ai.tool.name", "equals": "search_web"}})
    assert holds({"span": {"attribute": "gen_ai.tool.name"}})
    assert not holds({"span": {"attribute": "gen_ai.tool.name", "exists": False}})
    assert holds({"span": {"attribute": "http.status_code", "exists": False}})
    assert holds({"span": {"attribute": "gen_ai.request.model", "matches": "gpt-4o*"}})
    assert holds({"span": {"attribute": "gen_ai.usage.input_tokens", "min": 200}})
    assert not holds({"span": {"attribute": "gen_ai.usage.input_tokens", "min": 300}})
    assert not holds({"span": {"attribute": "gen_ai.tool.name", "min": 1}})  # not a number
    assert holds({"span": {"attribute": "service.name", "equals": "pydantic-ai-demo"}})
    assert holds({"span": {"name": "execute_tool *", "attribute": "gen_ai.tool.name"}})
    assert not holds({"span": {"name": "chat *", "attribute": "gen_ai.tool.name"}})


def test_span_conditions_read_the_run_itself_without_its_trace() -> None:
    """A run read from a file has no spans: its own attributes stand for its trace's."""
    assert holds({"span": {"attribute": "agent_name", "equals": "WeatherBot"}}, with_spans=False)
    assert not holds({"span": {"attribute": "gen_ai.tool.name"}}, with_spans=False)


def test_combinators_and_several_keys() -> None:
    assert holds({"any": [{"tool_called": "search_web"}, {"tool_calls": {"min": 1}}]})
    assert not holds({"all": [{"tool_called": "get_weather"}, {"tool_failed": True}]})
    assert holds({"all": [{"tool_called": "get_weather"}, {"tool_failed": True}]}, TOOL_ERROR)
    assert holds({"not": {"tool_called": "search_web"}})
    assert not holds({"not": {"any": [{"failed": True}, {"tool_called": "get_*"}]}})
    assert holds({"tool_called": "get_weather", "tokens": {"max": 1000}})
    assert not holds({"tool_called": "get_weather", "tokens": {"min": 1000}})


def _problem(when: str) -> str:
    text = f"scorers:\n- name: picky\n  scorer: completeness\n  when:\n{when}"
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("when", "named", "says"),
    [
        ("    tool_name: search_web\n", "scorers.0.when.tool_name (line 5)", "tool_called"),
        ("    any:\n    - tool_calls: {mn: 3}\n", "scorers.0.when.any.0.tool_calls.mn", "'min'"),
        ("    not: {}\n", "scorers.0.when.not (line 5)", "give at least one key"),
        ("    failed: null\n", "scorers.0.when (line 4)", "give at least one key"),
        ("    all: []\n", "scorers.0.when (line 4)", "all: an empty list"),
        ("    tokens: {}\n", "scorers.0.when.tokens", "give min, max or both"),
        ("    tool_calls: {min: 4, max: 2}\n", "scorers.0.when.tool_calls", "above max"),
        ("    duration: {min: 20 seconds}\n", "scorers.0.when.duration.min", "a duration is"),
        ("    tool_called: [x, 're:((']\n", "scorers.0.when.tool_called", "invalid regex"),
        ("    span: {equals: 3}\n", "scorers.0.when.span.attribute", "Field required"),
        (
            "    span: {attribute: k, exists: false, equals: 3}\n",
            "scorers.0.when.span",
            "exists: false takes no other test",
        ),
        ("    span: {attribute: k, matches: 're:['}\n", "scorers.0.when.span.matches", "regex"),
    ],
)
def test_a_bad_condition_fails_at_start_naming_its_key(when: str, named: str, says: str) -> None:
    problem = _problem(when)
    assert named in problem
    assert says in problem
