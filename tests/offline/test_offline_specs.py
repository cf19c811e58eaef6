"""``--scorer`` / ``--judge`` / ``--fail-under`` values, and ``--since`` windows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from tracescore.cli import app
from tracescore.offline.rescore import parse_since
from tracescore.offline.specs import (
    SpecError,
    bindings_from_specs,
    parse_options,
    parse_scorer_spec,
    parse_thresholds,
    resolve_bindings,
)
from tracescore.pipeline.config import ScorerBinding


def test_option_values_are_yaml_scalars_and_lists() -> None:
    assert parse_options("expected_tool=get_weather,strict_mode=true") == {
        "expected_tool": "get_weather",
        "strict_mode": True,
    }
    assert parse_options("expected_tool_order=[search, fetch, answer], strict-mode=no") == {
        "expected_tool_order": ["search", "fetch", "answer"],
        "strict_mode": False,
    }
    assert parse_options("scale=2,reference_tone='Great, thanks!'") == {
        "scale": 2,
        "reference_tone": "Great, thanks!",
    }
    for bad in ("expected_tool", "=x", "a=[unclosed"):
        with pytest.raises(SpecError):
            parse_options(bad)


def test_prebuilt_and_custom_scorer_specs() -> None:
    assert parse_scorer_spec("tone") == ("tone", "tone", {})
    assert parse_scorer_spec("tone:reference_tone=calm") == (
        "tone",
        "tone",
        {"reference_tone": "calm"},
    )
    assert parse_scorer_spec("tests.support.custom_scorers:length_at_least:minimum=20") == (
        "length_at_least",
        "tests.support.custom_scorers:length_at_least",
        {"minimum": 20},
    )
    with pytest.raises(SpecError, match="unknown scorer 'tonee'"):
        parse_scorer_spec("tonee")
    names = [
        b.name for b in bindings_from_specs(["tone", "tone:reference_tone=calm", "completeness"])
    ]
    assert names == ["tone", "tone-2", "completeness"]


def test_judge_flags_become_the_default_judge_of_every_binding() -> None:
    configured = [ScorerBinding(name="kept", scorer="tone")]
    bindings, judges = resolve_bindings(configured, {}, [], None, None)
    assert bindings == configured and judges == {}
    bindings, judges = resolve_bindings(
        configured,
        {},
        ["faithfulness", "tests.support.custom_scorers:length_at_least"],
        "openai/gpt-4o-mini",
        "http://127.0.0.1:9/v1",
    )
    assert [b.name for b in bindings] == ["faithfulness", "length_at_least"]
    assert judges["default"].api_base == "http://127.0.0.1:9/v1"
    assert bindings[1].judge == "default"  # custom scorers get the judge only when named
    with pytest.raises(SpecError, match="--api-base needs --judge"):
        resolve_bindings(configured, {}, [], None, "http://127.0.0.1:9/v1")


def test_thresholds_and_since() -> None:
    assert parse_thresholds(["faithfulness=0.7", " tone = 1 "]) == {
        "faithfulness": 0.7,
        "tone": 1.0,
    }
    for bad in (["faithfulness"], ["=0.7"], ["faithfulness=high"]):
        with pytest.raises(SpecError):
            parse_thresholds(bad)
    assert parse_since("7d", now=1_000_000.0) == 1_000_000.0 - 7 * 86400
    assert parse_since("90s", now=100.0) == 10.0
    assert parse_since("1.5h", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("2026-01-01T00:00:00+00:00") == 1767225600.0
    with pytest.raises(ValueError, match="duration"):
        parse_since("last week")


def test_custom_scorer_bound_on_the_command_line() -> None:
    result = CliRunner().invoke(
        app,
        [
            "score",
            str(FIXTURES / "runs" / "mastra_runs.jsonl"),
            "--format",
            "json",
            "--scorer",
            "tests.support.custom_scorers:answer_present",
            "--scorer",
            "tests.support.custom_scorers:length_at_least:minimum=100",
        ],
    )
    assert result.exit_code == 0, result.stderr
    summaries = {s["binding"]: s for s in json.loads(result.stdout)}
    assert summaries["answer_present"]["mean"] == 1.0
    # 4 of the 8 fixture answers are at least 100 characters long (109, 158, 166, 288).
    assert summaries["length_at_least"]["mean"] == 4 / 8
