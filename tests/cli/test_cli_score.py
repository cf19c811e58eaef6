"""``tracescore score`` and ``tracescore scorers`` on the captured traces and on Mastra-shaped runs."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from tests.support.judge_server import JudgeServer, json_reply
from tests.support.paths import CAPTURES, FIXTURES
from tracescore.cli import app
from tracescore.config import DEFAULT_SCORERS
from tracescore.extract import extract_runs
from tracescore.extract.content import awaits_tool_results, has_content
from tracescore.ingest.files import load_traces
from tracescore.offline.inputs import read_runs
from tracescore.scorers import registry

MASTRA_RUNS = FIXTURES / "runs" / "mastra_runs.jsonl"
runner = CliRunner()


def _score(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["score", *args])
    return result.exit_code, result.stdout, result.stderr


def test_captures_scored_with_the_default_code_scorers_as_json() -> None:
    code, out, _ = _score(str(CAPTURES), "--format", "json")
    assert code == 0
    summaries = {s["binding"]: s for s in json.loads(out)}
    assert list(summaries) == list(DEFAULT_SCORERS)
    primary = sum(run.primary for run in read_runs([CAPTURES]))  # linked, as the service reads
    for summary in summaries.values():
        assert summary["n"] + summary["errors"] + summary["not_scorable"] == primary
        assert 0.0 <= summary["min"] <= summary["mean"] <= summary["max"] <= 1.0


def test_protobuf_export_scores_like_its_json_twin() -> None:
    capture = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call"
    _, from_json, _ = _score(str(capture / "0001.json"), "--format", "json")
    _, from_pb, _ = _score(str(capture / "0001.pb"), "--format", "json")
    assert json.loads(from_json) == json.loads(from_pb)
    primary = [
        run
        for trace in load_traces([capture / "0001.pb"])
        for run in extract_runs(trace)
        if run.primary
    ]
    # The loop's first call only asked for the tool (its own trace): a step, not an answer.
    steps = sum(awaits_tool_results(run) for run in primary)
    first = json.loads(from_pb)[0]
    assert steps == 1 and (first["n"], first["not_scorable"]) == (len(primary) - steps, steps)


def test_mastra_runs_with_scorer_options_parsed_as_yaml() -> None:
    code, out, _ = _score(
        str(MASTRA_RUNS),
        "--format",
        "csv",
        "--scorer",
        "tool-call-accuracy-code:expected_tool=weatherTool",
        "--scorer",
        "tool-call-accuracy-code:expected_tool_order=[weatherTool, weatherTool],strict_mode=true",
        "--scorer",
        "completeness",
    )
    assert code == 0, out
    rows = {row["binding"]: row for row in csv.DictReader(io.StringIO(out))}
    assert list(rows) == ["tool-call-accuracy-code", "tool-call-accuracy-code-2", "completeness"]
    # 3 of the 8 runs call weatherTool (one of them twice); only that one has the exact order.
    assert float(rows["tool-call-accuracy-code"]["mean"]) == 3 / 8
    assert float(rows["tool-call-accuracy-code-2"]["mean"]) == 1 / 8
    assert all(int(row["n"]) == 8 for row in rows.values())


def test_table_output_names_every_binding(tmp_path: Path) -> None:
    out_rows = tmp_path / "rows.jsonl"
    code, out, _ = _score(
        str(MASTRA_RUNS), "--scorer", "completeness", "--scorer", "tone", "--output", str(out_rows)
    )
    assert code == 0
    assert "completeness" in out and "tone" in out and "(8 traces)" in out
    rows = [json.loads(line) for line in out_rows.read_text().splitlines()]
    assert len(rows) == 16 and {r["binding"] for r in rows} == {"completeness", "tone"}


def test_fail_under_passes_and_fails_with_exit_codes() -> None:
    # Measured mean keyword coverage of the fixture runs, to set thresholds either side of it.
    _, out, _ = _score(str(MASTRA_RUNS), "--scorer", "keyword-coverage", "--format", "json")
    mean = json.loads(out)[0]["mean"]
    assert 0.2 < mean < 0.95
    code, _, err = _score(
        str(MASTRA_RUNS),
        "--scorer",
        "keyword-coverage",
        "--fail-under",
        f"keyword-coverage={mean - 0.05:.3f}",
    )
    assert code == 0 and "quality gate failed" not in err
    code, _, err = _score(
        str(MASTRA_RUNS),
        "--scorer",
        "keyword-coverage",
        "--fail-under",
        f"keyword-coverage={mean + 0.05:.3f}",
    )
    assert code == 1
    assert "keyword-coverage: mean score" in err and "is below" in err
    # --fail-over bounds the mean from above (for scorers where lower is better), by scorer id too.
    code, _, err = _score(
        str(MASTRA_RUNS),
        "--scorer",
        "keyword-coverage",
        "--fail-over",
        f"keyword-coverage-scorer={mean - 0.05:.3f}",
    )
    assert code == 1 and "is above" in err
    code, _, err = _score(
        str(MASTRA_RUNS),
        "--scorer",
        "keyword-coverage",
        "--fail-over",
        f"keyword-coverage-scorer={mean + 0.05:.3f}",
        "--fail-under",
        f"keyword-coverage={mean - 0.05:.3f}",
    )
    assert code == 0, err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    for args, message in [
        (["--scorer", "no-such-scorer"], "unknown scorer"),
        (["--scorer", "tool-call-accuracy-code:expected_tol=x"], "expected_tol"),
        (["--scorer", "completeness", "--fail-under", "completeness"], "BINDING=NUMBER"),
        (["--scorer", "completeness", "--fail-under", "faithfulness=0.7"], "name no binding"),
        (["--scorer", "completeness", "--fail-over", "completeness=x"], "--fail-over"),
        (["--format", "xml"], "--format"),
    ]:
        code, _, err = _score(str(MASTRA_RUNS), *args)
        assert code == 2, args
        assert message in err, (args, err)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": {}, "output": "not a list"}\n')
    code, _, err = _score(str(broken))
    assert code == 2 and "output must be a list" in err


def test_llm_scorer_without_judge_is_a_usage_error() -> None:
    code, _, err = _score(str(MASTRA_RUNS), "--scorer", "faithfulness")
    assert code == 2 and "needs a judge" in err


def test_llm_scorer_with_judge_flags_or_config_gates_ci(tmp_path: Path) -> None:
    """Faithfulness through the scripted judge: 1 of 2 claims supported on every run."""
    with JudgeServer() as server:
        server.script(
            "FaithfulnessClaims", json_reply({"claims": ["It is 21 degrees.", "It is sunny."]})
        )
        server.script(
            "FaithfulnessVerdicts",
            json_reply(
                {
                    "verdicts": [
                        {"verdict": "yes", "reason": "The tool result says 21 degrees."},
                        {"verdict": "no", "reason": "The tool result says cloudy."},
                    ]
                }
            ),
        )
        flags = [
            "--scorer",
            "faithfulness",
            "--judge",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
        ]
        code, out, err = _score(
            str(MASTRA_RUNS), *flags, "--format", "json", "--fail-under", "faithfulness=0.6"
        )
        assert code == 1 and "faithfulness: mean score 0.5000 is below 0.6 (8 runs)" in err
        summary = json.loads(out)[0]
        assert (summary["n"], summary["mean"], summary["errors"]) == (8, 0.5, 0)
        assert summary["cost_usd"] > 0 and server.count >= 8 * 2
        config = tmp_path / "tracescore.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "judges": {
                        "strict": {"model": "openai/gpt-4o-mini", "api_base": server.base_url}
                    },
                    "scorers": [
                        {
                            "name": "faith",
                            "scorer": "faithfulness",
                            "judge": "strict",
                            "threshold": 0.7,
                        }
                    ],
                }
            )
        )
        code, out, err = _score(
            str(MASTRA_RUNS),
            "--config",
            str(config),
            "--format",
            "json",
            "--fail-under",
            "faith=0.5",
        )
        assert code == 0, err
        assert json.loads(out)[0]["failed"] == 8  # every 0.5 is labelled fail at threshold 0.7


def test_scorers_lists_every_registered_scorer_with_options() -> None:
    result = runner.invoke(app, ["scorers", "--format", "json"])
    assert result.exit_code == 0
    listed = {s["name"]: s for s in json.loads(result.stdout)}
    assert list(listed) == registry.names()
    options = {o["name"] for o in listed["tool-call-accuracy-code"]["options"]}
    assert options == {"expected_tool", "strict_mode", "expected_tool_order"}
    table = runner.invoke(app, ["scorers"])
    assert table.exit_code == 0
    for name in registry.names():
        assert name in table.stdout


def test_config_bindings_score_every_run_whatever_their_sampling(tmp_path: Path) -> None:
    config = tmp_path / "tracescore.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "scorers": [
                    {
                        "name": "weather-only",
                        "scorer": "completeness",
                        "sampling": {"rate": 0.0},
                        "filter": {"agent": ["weather*"]},
                    },
                ]
            }
        )
    )
    code, out, err = _score(str(MASTRA_RUNS), "--config", str(config), "--format", "json")
    assert code == 0, err
    # The filter still applies (4 weatherAgent runs of 8); the sampling rate does not.
    assert json.loads(out)[0]["n"] == 4


def _run_with_stderr(command: list[str], stderr_tty: bool) -> tuple[int, str, str]:
    """Run ``command`` with stdout piped and stderr a pseudo-terminal (or a pipe)."""
    if not stderr_tty:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    stdout = process.stdout.read()
    process.wait(timeout=120)
    os.close(master)
    return process.returncode, stdout, b"".join(chunks).decode(errors="replace")


def test_real_process_exit_codes_and_progress_bar_on_a_terminal_only() -> None:
    command = [
        sys.executable,
        "-m",
        "tracescore.cli",
        "score",
        str(CAPTURES),
        "--format",
        "json",
        "--scorer",
        "tool-call-accuracy-code:expected_tool=get_weather",
    ]
    code, out, err = _run_with_stderr(
        [*command, "--fail-under", "tool-call-accuracy-code=0.99"], True
    )
    summary = json.loads(out)[0]  # stdout stays clean JSON; the bar and the verdict go to stderr
    # The captures read as the service reads them: calls of one loop sent as traces of their own
    # joined (an OpenAI Responses answer sent only tool outputs is read with the steps it
    # continues), a request traced twice read once.
    primary = [run for run in read_runs([CAPTURES]) if run.primary]
    assert summary["n"] + summary["not_scorable"] + summary["errors"] == len(primary)
    # Every answer has the user's message to judge the tool choice against, but one: OpenLLMetry's
    # Mistral instrumentation records no prompt given as dict messages (nothing to link it by).
    unasked = [
        run
        for run in primary
        if has_content(run) and not run.input.input_messages and not awaits_tool_results(run)
    ]
    assert summary["errors"] == len(unasked) == 1
    assert unasked[0].attributes.get("gen_ai.system") == "MistralAI"
    # Runs without content (capture off) and loop steps with nothing to judge are not scorable.
    assert summary["not_scorable"] >= sum(not has_content(run) for run in primary)
    assert 0 < summary["mean"] < 0.99
    assert code == 1 and "tool-call-accuracy-code: mean score" in err
    # The bar counted every trace with runs (Mastra 0.x also starts run-less root traces; a
    # request's twin read in another trace has none).
    assert "scoring" in err and f"/{len({run.trace_id for run in primary})}" in err
    code, out, err = _run_with_stderr(
        [*command, "--fail-under", "tool-call-accuracy-code=0.1"], False
    )
    assert code == 0, err
    assert json.loads(out)[0] == summary and "scoring" not in err


def test_runs_printed_by_extract_score_like_their_traces(tmp_path: Path) -> None:
    traces = CAPTURES / "otel-genai-openai-v2-latest"
    extracted = runner.invoke(app, ["extract", str(traces)])
    assert extracted.exit_code == 0
    runs = tmp_path / "runs.json"
    runs.write_text(extracted.stdout)
    _, from_traces, _ = _score(str(traces), "--format", "json")
    _, from_runs, _ = _score(str(runs), "--format", "json")
    assert json.loads(from_runs) == json.loads(from_traces)
    assert json.loads(from_runs)[0]["n"] > 0


def test_directories_expand_to_exports_and_json_lines(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "runs.jsonl").write_bytes(MASTRA_RUNS.read_bytes())
    capture = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call" / "0001.json"
    (tmp_path / "trace.json").write_bytes(capture.read_bytes())
    code, out, _ = _score(str(tmp_path), "--scorer", "completeness", "--format", "json")
    _, only_trace, _ = _score(str(capture), "--scorer", "completeness", "--format", "json")
    assert code == 0
    assert json.loads(out)[0]["n"] == 8 + json.loads(only_trace)[0]["n"]
