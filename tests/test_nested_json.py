"""JSON text parsed to a bounded depth (tracescore/nested_json.py): a property test against the
standard library's parser on generated documents, and the cuts made exactly at the limit."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracescore import nested_json
from tracescore.extract.base import MAX_COUNT, as_int

TEXT = st.text(alphabet='ab"\\[]{}: \u00e9\n', max_size=8).filter(lambda text: text[:1] not in "[{")
"""Strings with brackets and escapes inside, none opening like a container (a cut one does)."""
DOCUMENTS = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(DOCUMENTS)
def test_depth_is_measured_past_brackets_and_escapes_inside_strings(document: Any) -> None:
    text = json.dumps(document, ensure_ascii=False)
    assert nested_json.depth(text) == _depth(document)
    assert nested_json.loads(text, max_depth=64) == document


@given(DOCUMENTS, st.integers(1, 4))
def test_what_lies_deeper_than_the_limit_is_kept_as_its_text(document: Any, limit: int) -> None:
    text = json.dumps(document, ensure_ascii=False)
    parsed = nested_json.loads(text, max_depth=limit)
    assert _depth(parsed) <= limit
    assert _restored(parsed, limit) == document


def _restored(value: Any, levels: int) -> Any:
    """``value`` with the texts standing for containers at level ``levels + 1`` parsed back."""
    if levels == 0:
        return json.loads(value) if isinstance(value, str) and value[:1] in ("[", "{") else value
    if isinstance(value, dict):
        return {key: _restored(item, levels - 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_restored(item, levels - 1) for item in value]
    return value


@pytest.mark.parametrize("depth", [250, 260, 1000, 100_000])
def test_a_document_nested_past_every_parser_reads_to_the_limit(depth: int) -> None:
    text = '{"a":' * depth + "1" + "}" * depth
    parsed = nested_json.loads(text)
    inner = parsed
    for _ in range(nested_json.MAX_DEPTH - 1):
        inner = inner["a"]
    assert inner["a"] == '{"a":' * (depth - nested_json.MAX_DEPTH) + "1" + "}" * (
        depth - nested_json.MAX_DEPTH
    )
    orjson.dumps(parsed)  # every later writer can write it


@pytest.mark.parametrize("text", ["[" * 100, '{"a": [1, 2}' + "]" * 80, '"' + "[" * 80])
def test_text_that_is_not_json_is_refused_as_before(text: str) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        nested_json.loads(text)


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        ("12", 12),
        (12.9, 12),
        ("1e3", 1000),
        (MAX_COUNT, MAX_COUNT),
        ("1e26", None),
        (10**26, None),
        (float("inf"), None),
        ("-inf", None),
        ("nan", None),
        (True, None),
        ("many", None),
    ],
)
def test_a_count_is_an_integer_no_column_or_writer_refuses(value: object, count: int) -> None:
    assert as_int(value) == count
