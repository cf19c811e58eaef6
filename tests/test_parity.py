"""Parity with Mastra: every corpus case's score and step results against Mastra's own output.

``tests/fixtures/parity/sample.jsonl`` holds cases in the harness format with what Mastra's
``@mastra/evals`` 1.10.2 returned for each under ``expected``. Exact scorers must agree to 1e-9;
completeness (a different NLP library) and tone (VADER instead of AFINN) on average.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.parity_support import (
    UTILS,
    assert_exact_case,
    load_cases,
    mastra_run,
    mean_delta,
    score_case,
)

CASES = load_cases("sample.jsonl")
EXACT = ("content-similarity", "keyword-coverage", "textual-difference", "tool-call-accuracy")
COMPLETENESS_MAX_MEAN_DELTA = 0.02
TONE_MAX_MEAN_DELTA = 0.04  # measured 0.031 (VADER vs AFINN), see docs/mastra.md


def cases_of(*scorers: str) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in CASES if case["scorer"] in scorers]


@pytest.mark.parametrize("case", cases_of(*EXACT))
def test_exact_scorers_match_mastra(case: dict[str, Any]) -> None:
    assert_exact_case(case)


def test_completeness_is_close_to_mastra_on_average() -> None:
    delta, count = mean_delta(CASES, "completeness")
    assert count >= 10
    assert delta <= COMPLETENESS_MAX_MEAN_DELTA, delta


def test_tone_is_close_to_mastra_on_average() -> None:
    delta, count = mean_delta(CASES, "tone")
    assert count >= 10
    assert delta <= TONE_MAX_MEAN_DELTA, delta


@pytest.mark.parametrize("case", cases_of("tone"))
def test_tone_keeps_mastra_extras_and_direction(case: dict[str, Any]) -> None:
    """Same mode and keys as Mastra; neutral texts stay near 1, mismatched tones below 0.5."""
    expected = case["expected"]
    result, _ = score_case(case)
    assert result is not None and result.status == "ok"
    assert result.preprocess_step_result.keys() == expected["extra"]["preprocessStepResult"].keys()
    if expected["score"] == 1:
        assert result.score > 0.9
    if expected["score"] < 0.5:
        assert result.score < 0.5


@pytest.mark.parametrize("case", cases_of("utils"))
def test_utils_match_mastra(case: dict[str, Any]) -> None:
    run = mastra_run(case)
    expected = case["expected"]["extra"]
    assert expected.keys() == UTILS.keys()
    for name, helper in UTILS.items():
        want = expected[name]
        if "error" in want:
            with pytest.raises((AttributeError, TypeError)):
                helper(run)
        elif want.get("undefined"):
            assert helper(run) is None, name
        else:
            assert helper(run) == want["value"], name
