"""Ratio sampling: Mastra's decisions, the rate, nesting and agreement across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.conftest import FIXTURES
from tracescore.pipeline.sampling import is_sampled, unit_hash

CASES = [
    case
    for line in (FIXTURES / "parity" / "sample.jsonl").read_text().splitlines()
    if (case := json.loads(line))["scorer"] == "sampling"
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_matches_mastra_decision_and_hash(case: dict) -> None:
    key = case["traceId"] or case["runId"]
    assert unit_hash(key) == pytest.approx(case["expected"]["extra"]["unitHash"], abs=1e-15)
    rate = case["options"]["sampling"]["rate"]
    assert is_sampled(key, rate) == bool(case["expected"]["score"])


def test_rate_is_kept_within_one_percent_over_ten_thousand_traces() -> None:
    ids = [uuid.uuid4().hex for _ in range(10_000)]
    share = sum(is_sampled(t, 0.1) for t in ids) / len(ids)
    assert 0.09 <= share <= 0.11


def test_rates_nest() -> None:
    ids = [uuid.uuid4().hex for _ in range(5_000)]
    at_10 = {t for t in ids if is_sampled(t, 0.1)}
    at_20 = {t for t in ids if is_sampled(t, 0.2)}
    assert at_10 and at_10 < at_20


def test_decisions_are_identical_in_another_process() -> None:
    ids = [uuid.uuid4().hex for _ in range(2_000)]
    here = [is_sampled(t, 0.3) for t in ids]
    script = (
        "import json,sys; from tracescore.pipeline.sampling import is_sampled;"
        "print(json.dumps([is_sampled(t, 0.3) for t in json.load(sys.stdin)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(ids), capture_output=True, text=True,
        check=True, env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert json.loads(out.stdout) == here
