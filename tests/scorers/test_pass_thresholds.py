"""Scores whose colour means something (issue 50): every prebuilt scorer states what a good run
scores or says it cannot, a binding's ``threshold`` overrides it, the docs' table is the
registry's, and every code score carries a one-line reason from its steps (keyword-coverage's
0.000 had none)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
import yaml

from tests.support.paths import REPO
from tracescore.config import DEFAULT_SCORERS, parse_config
from tracescore.pipeline.bindings import compile_bindings, pass_threshold
from tracescore.pipeline.config import ScorerBinding
from tracescore.scorers import registry
from tracescore.scorers.utils import make_agent_run, make_test_message

ECHO_SCORERS = {"completeness", "content-similarity", "keyword-coverage", "textual-difference"}
"""What they measure is how much of the question the answer repeats: no pass or fail alone."""


def _binding(text: str) -> ScorerBinding:
    return ScorerBinding.model_validate(yaml.safe_load(text))


def test_every_scorer_states_a_threshold_unless_its_score_means_none() -> None:
    for entry in registry.entries():
        if entry.name in ECHO_SCORERS:
            assert entry.passes_at is None, entry.name
        else:
            assert entry.passes_at is not None and 0 <= entry.passes_at <= 1, entry.name


def test_a_bindings_threshold_overrides_its_scorers() -> None:
    assert pass_threshold(_binding("{name: c, scorer: consistency}")) == 1.0
    assert pass_threshold(_binding("{name: c, scorer: consistency, threshold: 0.8}")) == 0.8
    assert pass_threshold(_binding("{name: k, scorer: keyword-coverage}")) is None
    assert pass_threshold(_binding("{name: k, scorer: keyword-coverage, threshold: 0.3}")) == 0.3
    scaled = "{name: f, scorer: faithfulness, options: {scale: 10}}"
    assert pass_threshold(_binding(scaled)) == 8.0
    custom = "{name: x, scorer: 'tests.support.custom_scorers:answer_present'}"
    assert pass_threshold(_binding(custom)) is None


def test_labels_follow_the_threshold_in_the_scorers_direction() -> None:
    config = parse_config(
        "judges: {default: {model: openai/gpt-4o-mini}}\n"
        "scorers:\n  - {name: tone, scorer: tone}\n  - {name: toxic, scorer: toxicity}\n"
        "  - {name: kw, scorer: keyword-coverage}\n"
    )
    tone, toxic, keywords = compile_bindings(config.scorers, config.judges, None)
    assert (tone.label(0.6), tone.label(0.4)) == ("pass", "fail")
    assert (toxic.label(0.0), toxic.label(0.3)) == ("pass", "fail")  # higher is worse
    assert keywords.label(0.0) is None  # no meaning of its own: no label, a grey badge


def test_the_docs_table_is_the_registrys() -> None:
    text = (REPO / "docs" / "scorers.md").read_text(encoding="utf-8")
    section = text.split("## What a good run scores", 1)[1].split("\n## ", 1)[0]
    stated: dict[str, float | None] = {}
    for names, value in re.findall(r"^\| ([a-z, -]+) \| ([^|]+) \|", section, re.M):
        number = re.search(r"[0-9.]+", value)
        for name in names.split(", "):
            stated[name] = float(number.group()) if number and value.strip() != "none" else None
    stated.pop("scorer", None)  # the header
    assert stated == {entry.name: entry.passes_at for entry in registry.entries()}


def test_the_default_bindings_mean_something_without_ground_truth() -> None:
    assert "consistency" in DEFAULT_SCORERS
    assert not {"content-similarity", "textual-difference", "completeness"} & set(DEFAULT_SCORERS)


RUN = make_agent_run(
    input_messages=[make_test_message("What is the weather in Paris tomorrow?", "user")],
    output=[make_test_message("Sorry, I cannot help with that.", "assistant")],
)


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("completeness", {}),
        ("consistency", {}),
        ("content-similarity", {}),
        ("keyword-coverage", {}),
        ("textual-difference", {}),
        ("tone", {}),
        ("tone", {"reference_tone": "I am happy"}),
        ("tool-call-accuracy-code", {"expected_tool": "get_weather"}),
    ],
)
def test_every_code_score_has_a_one_line_reason(name: str, options: dict[str, Any]) -> None:
    result = asyncio.run(registry.get(name).factory(**options).run(RUN))
    assert result.score is not None
    assert result.reason and "\n" not in result.reason and len(result.reason) < 300, result.reason


def test_keyword_coverages_zero_says_what_is_missing() -> None:
    result = asyncio.run(registry.get("keyword-coverage").factory().run(RUN))
    assert result.score == 0.0
    assert result.reason == (
        "0 of 3 keywords of the question in the answer; missing: weather, paris, tomorrow"
    )
