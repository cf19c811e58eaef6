"""``Model.built`` (extraction's own values, not validated) makes the instance validation
makes, and ``copied`` the copy ``model_copy`` makes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tracescore.extract.model import (
    AgentRun,
    Message,
    MessageContent,
    MessagePart,
    TokenUsage,
    ToolInvocation,
    _Model,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CASES: list[tuple[type[_Model], dict[str, Any]]] = [
    (MessagePart, {"type": "text", "text": "hi"}),
    (ToolInvocation, {"tool_call_id": "c1", "tool_name": "t", "args": {"q": 1}, "state": "call"}),
    (Message, {"id": "m", "role": "user", "created_at": NOW, "content": MessageContent()}),
    (AgentRun, {"trace_id": "t" * 32, "span_id": "s" * 16, "kind": "llm", "start_time": NOW}),
    (TokenUsage, {"input_tokens": 3}),
]


def _state(model: _Model) -> tuple[object, ...]:
    return (
        list(model.__dict__.items()),
        model.__pydantic_fields_set__,
        model.__pydantic_extra__,
        model.__pydantic_private__,
        model.model_dump_json(by_alias=True),
    )


@pytest.mark.parametrize(("model", "values"), CASES, ids=[m.__name__ for m, _ in CASES])
def test_built_is_the_validated_instance(model: type[_Model], values: dict[str, Any]) -> None:
    validated, built = model(**values), model.built(**values)
    assert built == validated
    assert _state(built) == _state(validated)
    assert _state(validated.copied()) == _state(validated.model_copy())


def test_built_fills_each_default_factory_afresh() -> None:
    first, second = (
        AgentRun.built(trace_id="t", span_id="a"),
        AgentRun.built(trace_id="t", span_id="b"),
    )
    first.warnings.append("only mine")
    assert second.warnings == [] and first.usage is not second.usage


def test_built_refuses_unknown_and_missing_fields() -> None:
    with pytest.raises(TypeError, match=r"unknown fields \['typ'\], missing \['type'\]"):
        MessagePart.built(typ="text")
    with pytest.raises(TypeError, match=r"unknown fields \['toolName'\]"):
        ToolInvocation.built(tool_call_id="c", tool_name="t", toolName="t")
