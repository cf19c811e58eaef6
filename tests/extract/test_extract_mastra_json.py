"""Mastra-shaped JSON runs, and the ``tracescore extract`` command."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from tests.support.paths import CAPTURES, FIXTURES
from tracescore.cli import app
from tracescore.extract.mastra_json import MastraRunError, run_from_mastra, runs_from_mastra_json

SAMPLE = FIXTURES / "parity" / "sample.jsonl"


def _cases() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def test_every_parity_case_validates_and_dumps_back_unchanged() -> None:
    cases = _cases()
    runs = runs_from_mastra_json(SAMPLE.read_bytes())
    assert len(runs) == len(cases)
    for case, run in zip(cases, runs, strict=True):
        assert run.kind == "agent" and run.primary and run.convention == "mastra-json"
        if run.warnings:  # the one case whose content is a bare part list
            continue
        dumped = run.mastra_output()
        for original, back in zip(case.get("output") or [], dumped, strict=True):
            assert back["content"]["parts"] == original["content"]["parts"]
            assert back["role"] == original["role"] and back["id"] == original["id"]
        inputs = case.get("input") or {}
        assert len(run.mastra_input()["inputMessages"]) == len(inputs.get("inputMessages", []))


def test_tool_results_become_context_and_ids_are_stable() -> None:
    tool_cases = [c for c in _cases() if c["scorer"] == "tool-call-accuracy"]
    runs = [run_from_mastra(c) for c in tool_cases]
    with_results = [r for r in runs if r.context]
    assert with_results, "the parity sample has tool results"
    for run in with_results:
        assert {d.kind for d in run.context} == {"tool_result"}
    again = run_from_mastra(tool_cases[0])
    assert (again.trace_id, again.span_id) == (runs[0].trace_id, runs[0].span_id)
    assert len(runs[0].trace_id) == 32


def test_array_content_is_read_as_parts_with_a_warning() -> None:
    (case,) = [c for c in _cases() if c["id"] == "keyw-struct-array-content"]
    run = run_from_mastra(case)
    assert run.output[0].content.parts[1].text == "Array content: Jupiter."
    assert "output.0.content: a list" in run.warnings[0]


def test_null_input_ground_truth_and_errors_by_path() -> None:
    run = run_from_mastra(
        {"input": None, "output": [], "groundTruth": {"answer": 42}, "runId": "run-7"}
    )
    assert run.input.input_messages == [] and run.ground_truth == {"answer": 42}
    assert run.span_id == "run-7"
    with pytest.raises(MastraRunError, match=r"run 0: output\.1\.role"):
        run_from_mastra({"output": [{"id": "a", "role": "assistant"}, {"id": "b"}]})
    with pytest.raises(MastraRunError, match="output must be a list"):
        run_from_mastra({"output": "text"})
    with pytest.raises(MastraRunError, match="not JSON"):
        runs_from_mastra_json(b"{nope")


def test_cli_extract_capture_directory() -> None:
    directory = CAPTURES / "openllmetry-openai" / "tool_call_agent"  # 4 requests + metrics
    result = CliRunner().invoke(app, ["extract", str(directory)])
    assert result.exit_code == 0, result.output
    runs = orjson.loads(result.stdout)
    assert [r["kind"] for r in runs] == ["agent", "llm", "llm", "tool"]
    agent = runs[0]
    assert agent["agentName"] == "WeatherBot" and agent["primary"] is True
    parts = agent["output"][0]["content"]["parts"]
    assert parts[0]["toolInvocation"]["result"] == {
        "city": "Paris",
        "forecast": "sunny",
        "temperature_c": 21,
    }


def test_cli_extract_filters_mixes_formats_and_reports_bad_files(tmp_path: Path) -> None:
    legacy = CAPTURES / "otel-genai-openai-v2-legacy" / "tool_call"
    files = [str(legacy / "0001.pb"), str(legacy / "0002.logs.pb"), str(SAMPLE)]
    result = CliRunner().invoke(app, ["extract", *files, "--primary", "--kind", "llm"])
    assert result.exit_code == 0, result.output
    runs = orjson.loads(result.stdout)
    # the loop's two chat calls are linked into one agent run (the Mastra runs are agent runs
    # too): the call that only asked for the tool stays an LLM run of its own, a step
    step = runs[0]["output"][0]["content"]
    assert len(runs) == 1 and not step.get("content") and step["toolInvocations"]
    assert runs[0]["input"]["inputMessages"][0]["content"]["content"] == (
        "What's the weather like in Paris today?"
    )  # content from the protobuf log records
    result = CliRunner().invoke(app, ["extract", *files, "--primary", "--kind", "agent"])
    loop = [r for r in orjson.loads(result.stdout) if "Paris today" in str(r["input"])]
    assert len(loop) == 1 and "get_weather" in str(loop[0]["output"])
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [')
    result = CliRunner().invoke(app, ["extract", str(bad)])
    assert result.exit_code == 2 and "cannot read" in result.output
    result = CliRunner().invoke(app, ["extract", str(SAMPLE), "--kind", "agents"])
    assert result.exit_code == 2 and "--kind must be agent, llm or tool" in result.output
