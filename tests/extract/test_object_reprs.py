"""Objects recorded as their ``str()`` (:mod:`tracescore.extract.object_reprs`): a pydantic
model's fields read back without evaluating anything, and text that is no such thing left as
it is."""

from __future__ import annotations

import pytest

from tracescore.extract.object_reprs import MAX_REPR_CHARS, pydantic_fields


def test_a_typed_message_with_nested_models_reads_as_its_fields() -> None:
    text = (
        "role='assistant' content=None tool_calls=[ToolCall(function=FunctionCall("
        "name='get_weather', arguments='{\"city\": \"Paris\"}'), id='call_1', type='function', "
        "index=0)] prefix=False"
    )
    assert pydantic_fields(text) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "__class__": "ToolCall",
                "function": {
                    "__class__": "FunctionCall",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris"}',
                },
                "id": "call_1",
                "type": "function",
                "index": 0,
            }
        ],
        "prefix": False,
    }


def test_quotes_spaces_and_unset_fields() -> None:
    """Spaces and ``name=`` inside a string are no field boundary; ``Unset()`` is left out."""
    text = "content=\"It's x=1 y='2' here\" role='tool' tool_call_id='c' name=Unset()"
    assert pydantic_fields(text) == {
        "content": "It's x=1 y='2' here",
        "role": "tool",
        "tool_call_id": "c",
    }


@pytest.mark.parametrize(
    "text",
    [
        "Hello there",
        "a=b=c",
        "content='unterminated",
        "content='" + "a" * MAX_REPR_CHARS + "'",
    ],
)
def test_other_text_is_no_model(text: str) -> None:
    assert pydantic_fields(text) is None


def test_an_expression_is_parsed_never_run() -> None:
    """A call of anything but a plain name is no value: nothing is evaluated."""
    assert pydantic_fields("x=__import__('os').system('false') y=1") == {"x": None, "y": 1}
