"""A token count no column or writer can hold, read through a declared convention (issue 46,
item 3): 1e26 made the runs API answer 500 (orjson writes 64-bit integers at most). It is left
out of the run's usage, with a warning saying why, and the run still writes as JSON."""

from __future__ import annotations

import orjson
import pytest

from tests.support.extract_support import span, trace
from tracescore.config import parse_config
from tracescore.extract import extract_runs, select_runs
from tracescore.extract.declared import claim_order

CONVENTION = """
conventions:
  - name: counted
    spans:
      - kind: llm
        equals: {x.kind: llm}
        read: {model: x.model, input_tokens: x.in, output_tokens: x.out}
"""


@pytest.mark.parametrize("count", ["1e26", 1e26, "inf", "nan", "-1e30"])
def test_a_count_past_any_column_is_left_out_with_a_reason(count: object) -> None:
    config = parse_config(CONVENTION)
    (run,) = extract_runs(
        trace(span("call", {"x.kind": "llm", "x.model": "m", "x.in": count, "x.out": 7})),
        claim_order(config.conventions),
    )
    assert (run.usage.input_tokens, run.usage.output_tokens) == (0, 7)
    assert any("input_tokens: " in warning for warning in run.warnings), run.warnings
    orjson.dumps(select_runs([run]))  # what the runs API writes
